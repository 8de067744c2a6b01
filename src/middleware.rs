//! Tool middlewares: wrappers around every tool execution.
//!
//! The shape follows `reqwest-middleware`: a [`ToolMiddleware`] receives the
//! [`ToolInvocation`] and a [`Next`] that runs the rest of the chain. It may
//! rewrite the arguments, short-circuit (return without calling `next`), or
//! post-process the output. The first middleware registered is the
//! outermost: with `[outer, inner]` a call runs outer-before, inner-before,
//! the tool, inner-after, outer-after.
//!
//! Panics are contained: a tool that panics reaches the middlewares as an
//! `Err` holding a [`ToolPanicked`], and a middleware that panics becomes an
//! error result for that call; neither ends the turn.
//!
//! ```
//! use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
//! use agent_loop::tool::BoxError;
//! use serde_json::Value;
//!
//! /// Logs every call with its tool call id.
//! struct Log;
//!
//! #[async_trait::async_trait]
//! impl ToolMiddleware for Log {
//!     async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<Value, BoxError> {
//!         let (name, id) = (call.context.tool_name.clone(), call.context.tool_call_id.clone());
//!         let output = next.run(call).await;
//!         println!("{name} ({id}): {}", if output.is_ok() { "ok" } else { "error" });
//!         output
//!     }
//! }
//! ```

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt;
use serde_json::Value;

use crate::panic::panic_message;
use crate::tool::{BoxError, CallContext, Tool};

/// A wrapper around every tool execution of a bound definition.
#[async_trait]
pub trait ToolMiddleware: Send + Sync + 'static {
    /// Handles one call: usually does something, calls `next.run(call)`,
    /// and does something with the output.
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<Value, BoxError>;

    /// A name for logs and for [`middlewares()`](crate::Definition::middlewares);
    /// the type name by default.
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }
}

/// One tool execution as a middleware sees it.
#[derive(Clone, Debug)]
pub struct ToolInvocation {
    /// The arguments: a JSON object that passed the tool's schema. A
    /// middleware may rewrite them; the tool receives what reaches it.
    pub arguments: Value,
    /// Who is calling: session, loop, mode, tool name, tool call id and the
    /// turn's cancellation token.
    pub context: CallContext,
}

/// The rest of the middleware chain, ending in the tool.
pub struct Next<'a> {
    tool: &'a dyn Tool,
    middlewares: &'a [Arc<dyn ToolMiddleware>],
}

impl<'a> Next<'a> {
    pub(crate) fn new(tool: &'a dyn Tool, middlewares: &'a [Arc<dyn ToolMiddleware>]) -> Self {
        Self { tool, middlewares }
    }

    /// Runs the rest of the chain and the tool. A panic in the tool comes
    /// back as an `Err` holding a [`ToolPanicked`].
    pub async fn run(self, call: ToolInvocation) -> Result<Value, BoxError> {
        match self.middlewares.split_first() {
            Some((first, rest)) => {
                first
                    .handle(
                        call,
                        Next {
                            tool: self.tool,
                            middlewares: rest,
                        },
                    )
                    .await
            }
            None => {
                // `invoke` is called inside the polled block, so a tool that
                // panics while creating its future is a tool panic, not a
                // middleware one.
                let tool = self.tool;
                let invoked =
                    AssertUnwindSafe(
                        async move { tool.invoke(call.arguments, &call.context).await },
                    )
                    .catch_unwind()
                    .await;
                match invoked {
                    Ok(output) => output,
                    Err(panic) => Err(Box::new(ToolPanicked {
                        message: panic_message(panic.as_ref()),
                    })),
                }
            }
        }
    }
}

/// The error a middleware sees when the tool below it panicked.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the tool panicked: {message}")]
pub struct ToolPanicked {
    /// The panic's message, when it was a string.
    pub message: String,
}

/// How one run of the chain ended, before it becomes a tool result.
pub(crate) enum ChainOutcome {
    /// The chain returned a value.
    Output(Value),
    /// The chain returned an error (from the tool or a middleware).
    Failed(BoxError),
    /// A middleware panicked (a tool panic comes back as `Failed`).
    MiddlewarePanicked(String),
}

/// Runs `call` through `middlewares` to `tool`, containing every panic.
pub(crate) async fn run_chain(
    tool: &dyn Tool,
    middlewares: &[Arc<dyn ToolMiddleware>],
    call: ToolInvocation,
) -> ChainOutcome {
    match AssertUnwindSafe(Next::new(tool, middlewares).run(call))
        .catch_unwind()
        .await
    {
        Ok(Ok(output)) => ChainOutcome::Output(output),
        Ok(Err(error)) => ChainOutcome::Failed(error),
        Err(panic) => ChainOutcome::MiddlewarePanicked(panic_message(panic.as_ref())),
    }
}
