//! Tool middlewares: wrappers around every tool execution.
//!
//! The shape follows `reqwest-middleware`: a [`ToolMiddleware`] receives the
//! [`ToolInvocation`] and a [`Next`] that runs the rest of the chain. It may
//! rewrite the arguments, short-circuit (return without calling `next`), or
//! post-process the [`ToolOutput`] (JSON, or
//! content parts such as images, passed through unchanged by a middleware
//! that does not look at it). The first middleware registered is the
//! outermost: with `[outer, inner]` a call runs outer-before, inner-before,
//! the tool, inner-after, outer-after.
//!
//! What comes back from `next.run(call)` says who failed: a tool that
//! returns an error reaches the middlewares as an `Err` holding a
//! [`ToolFailed`] (whose `source()` is the tool's own error), and a tool
//! that panics as one holding a [`ToolPanicked`]. Passed up unchanged, they
//! make the call's [`ToolCallErrorKind`](crate::bind::ToolCallErrorKind) `ToolFailed` or `ToolPanicked`.
//!
//! A middleware that returns an error of its own is not reported as the
//! tool's failure:
//!
//! - a [`Refusal`] (`Err(Refusal::new("reason").into())`) refuses the call:
//!   the model reads ``the call to `x` was refused: reason``, and the kind
//!   is [`Refused`](crate::bind::ToolCallErrorKind::Refused). Refuse for policy, so the
//!   model does not take it for a broken tool and retry;
//! - any other error (one wrapping a [`ToolFailed`] included) is
//!   [`MiddlewareFailed`](crate::bind::ToolCallErrorKind::MiddlewareFailed): ``the call
//!   to `x` failed in a middleware: …``;
//! - a panic is [`MiddlewarePanicked`](crate::bind::ToolCallErrorKind::MiddlewarePanicked).
//!
//! A value too deep to cross a hop ([`Next::run`]: arguments a middleware
//! rewrote, a tool's output, nested deeper than 128 levels) comes back as
//! an error whose source is a [`TooDeep`]; passed up unchanged it makes the
//! call `ArgumentsTooDeep` or `OutputTooDeep`.
//!
//! None of them ends the turn: each becomes that call's error result.
//!
//! ```
//! use agent_loop_core::middleware::{Next, Refusal, ToolInvocation, ToolMiddleware};
//! use agent_loop_core::tool::{BoxError, ToolOutput};
//!
//! /// Logs every call with its tool call id.
//! struct Log;
//!
//! #[async_trait::async_trait]
//! impl ToolMiddleware for Log {
//!     async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
//!         let (name, id) = (call.context.tool_name().to_owned(), call.context.tool_call_id().to_owned());
//!         let output = next.run(call).await;
//!         println!("{name} ({id}): {}", if output.is_ok() { "ok" } else { "error" });
//!         output
//!     }
//! }
//!
//! /// Refuses every tool whose name starts with `delete_`.
//! struct NoDeletes;
//!
//! #[async_trait::async_trait]
//! impl ToolMiddleware for NoDeletes {
//!     async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
//!         if call.context.tool_name().starts_with("delete_") {
//!             return Err(Refusal::new("deleting is not allowed in this session").into());
//!         }
//!         next.run(call).await
//!     }
//! }
//! ```
//!
//! # Decisions
//!
#![doc = include_str!("../docs/tool-calls.md")]

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::support::json::{self, TooDeep};
use crate::support::panic::{Contained, Panic, drop_payload, panic_message};
use crate::tool::{BoxError, CallContext, Handler, ToolOutput};

/// A wrapper around every tool execution of a bound definition.
#[async_trait]
pub trait ToolMiddleware: Send + Sync + 'static {
    /// Handles one call: usually does something, calls `next.run(call)`,
    /// and does something with the output.
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError>;

    /// A name for logs and for [`middlewares()`](crate::Definition::middlewares);
    /// the type name by default.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }
}

/// One tool execution as a middleware sees it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ToolInvocation {
    /// The arguments: a JSON object that passed the tool's schema. A
    /// middleware may rewrite them; the tool receives what reaches it
    /// (anything nested at most 128 levels: see [`Next::run`]).
    pub arguments: Value,
    /// Who is calling: session, loop, mode, tool name, tool call id and the
    /// turn's cancellation token.
    pub context: CallContext,
}

/// The rest of the middleware chain, ending in the tool.
pub struct Next<'a> {
    tool: &'a dyn Handler,
    middlewares: &'a [Arc<dyn ToolMiddleware>],
}

impl<'a> Next<'a> {
    pub(crate) fn new(tool: &'a dyn Handler, middlewares: &'a [Arc<dyn ToolMiddleware>]) -> Self {
        Self { tool, middlewares }
    }

    /// Runs the rest of the chain and the tool. An error the tool returns
    /// comes back as an `Err` holding a [`ToolFailed`] (its `source()` is
    /// the tool's error), a panic in the tool as one holding a
    /// [`ToolPanicked`].
    ///
    /// What crosses a hop is checked for depth: arguments a middleware
    /// rewrote to nest deeper than 128 levels reach neither the next
    /// middleware nor the tool, and a tool's output that deep reaches no
    /// middleware; each is dropped without recursion and the `Err` has a
    /// [`TooDeep`] as its `source()`. Returned unchanged, it makes the call
    /// an [`ArgumentsTooDeep`](crate::bind::ToolCallErrorKind::ArgumentsTooDeep)
    /// or [`OutputTooDeep`](crate::bind::ToolCallErrorKind::OutputTooDeep)
    /// one.
    pub fn run(
        self,
        call: ToolInvocation,
    ) -> impl Future<Output = Result<ToolOutput, BoxError>> + Send + 'a {
        self.hop(call, true)
    }

    /// The next middleware, or at the chain's end the tool, at the first
    /// poll (as an `async fn` would: a middleware that panics making its
    /// future panics inside the poll of the one before it). `check`: the
    /// arguments are checked for depth first (the first hop's were checked
    /// where the call started; every later hop's may have been rewritten).
    /// One `async fn` for the hop: the next middleware's future is awaited
    /// in it, not in a future around a future.
    async fn hop(self, call: ToolInvocation, check: bool) -> Result<ToolOutput, BoxError> {
        let ToolInvocation { arguments, context } = call;
        let arguments = if check {
            match json::within_depth(arguments) {
                Some(arguments) => arguments,
                None => return Err(Box::new(DepthRefusal::Arguments(TooDeep::new()))),
            }
        } else {
            arguments
        };
        let call = ToolInvocation { arguments, context };
        match self.middlewares.split_first() {
            Some((first, rest)) => {
                let next = Next {
                    tool: self.tool,
                    middlewares: rest,
                };
                first.handle(call, next).await
            }
            None => end_of_chain(self.tool, call).await,
        }
    }
}

/// The chain's end: the tool, its error wrapped in [`ToolFailed`], its
/// panic in [`ToolPanicked`], its output checked for depth.
async fn end_of_chain(tool: &dyn Handler, call: ToolInvocation) -> Result<ToolOutput, BoxError> {
    let ToolInvocation { arguments, context } = call;
    let outcome = match run_tool(tool, arguments, &context) {
        Ok(running) => running.await,
        Err(panic) => Err(panic),
    };
    match outcome {
        Ok(Ok(output)) => output
            .within_depth()
            .ok_or_else(|| Box::new(DepthRefusal::Output(TooDeep::new())) as BoxError),
        Ok(Err(error)) => Err(Box::new(ToolFailed {
            tool_name: context.tool_name().to_owned(),
            source: error,
        })),
        Err(panic) => Err(Box::new(ToolPanicked {
            message: panic_message(panic.as_ref()),
        })),
    }
}

/// What a hop of the chain refused for its depth: the error a middleware
/// gets from [`Next::run`], whose source is the [`TooDeep`] rule. The call
/// pipeline labels it `ArgumentsTooDeep` or `OutputTooDeep`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DepthRefusal {
    /// Arguments a middleware handed on.
    #[error("the arguments handed to the tool were refused")]
    Arguments(#[source] TooDeep),
    /// The tool's output.
    #[error("the tool's output was refused")]
    Output(#[source] TooDeep),
}

/// Runs `tool` under panic boundaries that also hold while `invoke` makes
/// its future and while that future is dropped (see [`Contained`]): a
/// tool that panics there panicked all the same. `Err` when `invoke`
/// panicked making its future.
///
/// The future `invoke` returns is polled as it is, with no wrapping
/// `async` block, so a call holds the tool's own boxed future and little
/// more.
pub(crate) fn run_tool<'a>(
    tool: &'a dyn Handler,
    arguments: Value,
    context: &'a CallContext,
) -> Result<Contained<ToolFuture<'a>>, Panic> {
    let running = std::panic::catch_unwind(AssertUnwindSafe(|| tool.invoke(arguments, context)))?;
    Ok(Contained::new(running))
}

/// The future `Handler::invoke` returns.
type ToolFuture<'a> =
    std::pin::Pin<Box<dyn Future<Output = Result<ToolOutput, BoxError>> + Send + 'a>>;

/// The error a middleware gets from [`Next::run`] when the tool returned
/// an error. Its `source()` is the tool's own error; a middleware that
/// returns it unchanged leaves the call a
/// [`ToolFailed`](crate::bind::ToolCallErrorKind::ToolFailed) one, whose source is the
/// tool's error again.
#[derive(Debug, thiserror::Error)]
#[error("the tool `{tool_name}` failed")]
#[non_exhaustive]
pub struct ToolFailed {
    /// The tool's name.
    pub tool_name: String,
    source: BoxError,
}

impl ToolFailed {
    /// The tool's own error, to map or inspect by value.
    pub fn into_source(self) -> BoxError {
        self.source
    }
}

/// The error a middleware gets from [`Next::run`] when the tool below it
/// panicked. Returned unchanged, it makes the call a
/// [`ToolPanicked`](crate::bind::ToolCallErrorKind::ToolPanicked) one.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the tool panicked: {message}")]
#[non_exhaustive]
pub struct ToolPanicked {
    /// The panic's message, when it was a string.
    pub message: String,
}

/// A middleware's refusal to run a call, for a policy reason: return it as
/// `Err(Refusal::new("reason").into())` instead of calling `next`.
///
/// The model reads ``the call to `x` was refused: reason`` (not that the
/// tool failed), and the call's kind is
/// [`Refused`](crate::bind::ToolCallErrorKind::Refused). Write the reason for the
/// model: say why, and what it may do instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("refused: {reason}")]
#[non_exhaustive]
pub struct Refusal {
    /// Why the call was refused.
    pub reason: String,
}

impl Refusal {
    /// A refusal for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// How one run of the chain ended, before it becomes a tool result.
pub(crate) enum ChainOutcome {
    /// The chain returned an output.
    Output(ToolOutput),
    /// The chain returned an error: a [`ToolFailed`] or [`ToolPanicked`]
    /// from its end, or a middleware's own.
    Failed(BoxError),
    /// A middleware panicked (a tool panic comes back as `Failed`).
    MiddlewarePanicked(String),
}

/// Runs `call` through `middlewares` to `tool`, containing every panic.
///
/// Two boundaries, whatever the number of middlewares: the chain's end
/// contains the tool's panic, so the middlewares see it as a
/// [`ToolPanicked`], and this one ([`Contained`]) contains a middleware's:
/// while the chain runs (each middleware makes its future inside the poll
/// of the one before it) and while it is dropped, once it ended or
/// mid-flight (each middleware's future is dropped inside the one before
/// it). A panic raised while dropping a panic's payload is contained too.
/// On the path without a panic they cost nothing measurable.
pub(crate) async fn run_chain(
    tool: &dyn Handler,
    middlewares: &[Arc<dyn ToolMiddleware>],
    call: ToolInvocation,
) -> ChainOutcome {
    // The call pipeline checked the arguments: the first hop skips that.
    match Contained::new(Next::new(tool, middlewares).hop(call, false)).await {
        Ok(Ok(output)) => ChainOutcome::Output(output),
        Ok(Err(error)) => ChainOutcome::Failed(error),
        Err(panic) => middleware_panicked(panic),
    }
}

/// A middleware panicked with `panic`: its message; the payload is dropped
/// under a boundary of its own.
fn middleware_panicked(panic: Panic) -> ChainOutcome {
    let message = panic_message(panic.as_ref());
    drop_payload(Some(panic));
    ChainOutcome::MiddlewarePanicked(message)
}
