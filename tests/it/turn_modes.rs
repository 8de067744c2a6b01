//! Switching the current mode between turns (DESIGN.md section 7): the next
//! turn uses the new mode's tools, limits and instructions; a tool of
//! another mode is unknown.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::turn::{ScriptedModel, TurnError};
use agent_loop::{Bound, Definition, Mode, ToolLimits};
use tokio_util::sync::CancellationToken;

/// Base tools `read`; mode `review` inherits them; mode `strict` has only
/// `write` and one iteration. Starts in `review`.
async fn session(reads: &Arc<AtomicUsize>, writes: &Arc<AtomicUsize>) -> Definition<Bound> {
    let read = counting_tool("read", Arc::clone(reads));
    let write = counting_tool("write", Arc::clone(writes));
    let definition = Definition::builder()
        .name("modes")
        .tool(read)
        .instructions("base instructions")
        .mode(Mode::new("review").instructions("review only"))
        .mode(
            Mode::new("strict")
                .tool(write)
                .tool_limits(ToolLimits::new().iterations(1))
                .instructions("one step"),
        )
        .initial_mode("review")
        .build()
        .validate()
        .unwrap();
    bind(&definition).await
}

fn two_batches_of(tool: &str) -> ScriptedModel {
    ScriptedModel::new([
        batch([call("c1", tool, "{}")]),
        batch([call("c2", tool, "{}")]),
        answer("done"),
    ])
}

#[tokio::test]
async fn the_next_turn_uses_the_new_modes_tools() {
    let (reads, writes) = (Arc::default(), Arc::default());
    let mut session = session(&reads, &writes).await;
    let cancel = CancellationToken::new();

    let review_model = ScriptedModel::new([batch([call("c1", "read", "{}")]), answer("read")]);
    let mut conversation = user_says("review");
    session
        .run_turn(&review_model, &mut conversation, &cancel)
        .await
        .unwrap();
    let review_request = &review_model.requests()[0];
    assert_eq!(review_request.tool_names, ["read"]);
    assert_eq!(review_request.mode.as_deref(), Some("review"));
    assert_eq!(review_request.instructions.as_deref(), Some("review only"));
    assert_eq!(reads.load(Ordering::SeqCst), 1);

    session.set_current_mode(Some("strict")).unwrap();
    let strict_model = ScriptedModel::new([
        batch([call("c2", "write", "{}"), call("c3", "read", "{}")]),
        answer("wrote"),
    ]);
    conversation.push(agent_loop::conversation::Message::user("now write"));
    let outcome = session
        .run_turn(&strict_model, &mut conversation, &cancel)
        .await
        .unwrap();

    let strict_request = &strict_model.requests()[0];
    assert_eq!(strict_request.tool_names, ["write"]);
    assert_eq!(strict_request.mode.as_deref(), Some("strict"));
    assert_eq!(strict_request.instructions.as_deref(), Some("one step"));
    assert_eq!(writes.load(Ordering::SeqCst), 1);
    // `read` belongs to another mode: unknown here, and the text lists
    // this mode's tools.
    let read = result_for(&conversation, "c3");
    assert!(read.is_error);
    assert!(
        read.text().contains("unknown tool `read`"),
        "{}",
        read.text()
    );
    assert!(read.text().contains("write"), "{}", read.text());
    assert_eq!(
        reads.load(Ordering::SeqCst),
        1,
        "read did not run in strict"
    );
    assert_eq!(
        outcome.stats.iterations[0].calls[1].error,
        Some(ToolCallErrorKind::UnknownTool)
    );
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn the_next_turn_uses_the_new_modes_limits() {
    let (reads, writes) = (Arc::default(), Arc::default());
    let mut session = session(&reads, &writes).await;
    let cancel = CancellationToken::new();

    // review inherits the base limits: two batches are fine.
    let mut conversation = user_says("read twice");
    let outcome = session
        .run_turn(&two_batches_of("read"), &mut conversation, &cancel)
        .await
        .expect("review allows 25 iterations");
    assert_eq!(outcome.stats.iteration_count(), 2);

    session.set_current_mode(Some("strict")).unwrap();
    let mut conversation = user_says("write twice");
    let error = session
        .run_turn(&two_batches_of("write"), &mut conversation, &cancel)
        .await
        .expect_err("strict allows one iteration");
    let TurnError::ToolLimit(limit) = error else {
        panic!("expected a tool limit error, got {error:?}");
    };
    assert_eq!((limit.iterations, limit.max_iterations.get()), (2, Some(1)));
    assert_eq!(writes.load(Ordering::SeqCst), 1);
    assert_every_call_answered(&conversation);

    // And back: the same script passes again.
    session.set_current_mode(Some("review")).unwrap();
    let mut conversation = user_says("read twice again");
    session
        .run_turn(&two_batches_of("read"), &mut conversation, &cancel)
        .await
        .expect("review again");
    assert_eq!(reads.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn switching_to_the_base_mode_uses_the_base_tools_and_instructions() {
    let (reads, writes) = (Arc::default(), Arc::default());
    let mut session = session(&reads, &writes).await;
    session.set_current_mode(None).unwrap();
    let model = ScriptedModel::new([answer("hi")]);

    session
        .run_turn(&model, &mut user_says("hi"), &CancellationToken::new())
        .await
        .unwrap();

    let request = &model.requests()[0];
    assert_eq!(request.mode, None);
    assert_eq!(request.tool_names, ["read"]);
    assert_eq!(request.instructions.as_deref(), Some("base instructions"));
}

#[tokio::test]
async fn switching_to_an_unknown_mode_fails_and_keeps_the_current_one() {
    let (reads, writes) = (Arc::default(), Arc::default());
    let mut session = session(&reads, &writes).await;

    let error = session.set_current_mode(Some("stirct")).unwrap_err();
    assert_eq!(error.name, "stirct");
    assert!(error.available.contains("strict"), "{error}");

    let model = ScriptedModel::new([answer("hi")]);
    session
        .run_turn(&model, &mut user_says("hi"), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(model.requests()[0].mode.as_deref(), Some("review"));
}
