//! The properties the fuzz targets check on arbitrary input, and the
//! `*_arbitrary_*` proptest modules of this binary check on generated input
//! on stable, every run: one function per property, the same code for both.
//!
//! A property returns `Err` saying what broke. A panic inside the crate is
//! a failure too: libFuzzer reports it as a crash, proptest as a failing
//! case.
//!
//! The fuzz crate's targets and the stable test binary (`tests/it`) call
//! the same functions from here.

pub mod bind;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod stream;
pub mod truncation;
pub mod turn;
pub mod wire;

use std::future::Future;

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Bindings, Bound, Defined, Definition, LoopId, SessionId};
use tokio_util::sync::CancellationToken;

thread_local! {
    /// One runtime per thread, built once: a fuzz target runs millions of
    /// inputs, and building a runtime for each would be most of the work.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread Tokio runtime builds");
}

/// Runs `future` to completion on this thread's runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    RUNTIME.with(|runtime| runtime.block_on(future))
}

/// `Err(message)` unless `condition` holds.
pub fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// Runs one turn on `session` in which the model asks for `calls` in one
/// batch, then answers; returns the conversation.
pub async fn run_one_batch(
    session: &Definition<Bound>,
    calls: Vec<ToolCall>,
) -> Result<Vec<Message>, String> {
    let model = ScriptedModel::new([
        ModelResponse::tool_calls(calls),
        ModelResponse::answer("Done."),
    ]);
    let mut conversation = vec![Message::user("Go.")];
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .map_err(|error| format!("the turn failed: {error}"))?;
    Ok(conversation)
}

/// Validates `definition` and binds it to a fresh session: a case's own
/// definition, which must do both.
pub async fn bind(definition: Definition<Defined>) -> Result<Definition<Bound>, String> {
    definition
        .validate()
        .map_err(|error| format!("the case's definition is refused: {error}"))?
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .map_err(|error| format!("the case's definition does not bind: {error}"))
}
