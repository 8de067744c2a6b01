//! The [`Tool`] trait: a live tool, built for one binding, that can be invoked.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::session::{LoopId, SessionId};
use crate::tool::{ToolInfo, ToolOutput};

/// The error type of tools, factories and middlewares: any error, boxed.
/// `?` converts any `std::error::Error + Send + Sync` into it, and so does
/// `.into()` on a `&str` or `String`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A live tool, built by a [`tool::Definition`](crate::tool::Definition)'s
/// factory for one binding.
///
/// A tool is reached only through a bound definition
/// ([`Definition<Bound>`](crate::Definition)), which validates the arguments
/// against [`ToolInfo::parameters`] and runs the middleware chain before
/// `invoke` is called.
///
/// ```
/// use agent_loop::tool::{BoxError, CallContext, Tool, ToolInfo, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Echo(ToolInfo);
///
/// #[async_trait::async_trait]
/// impl Tool for Echo {
///     fn info(&self) -> &ToolInfo {
///         &self.0
///     }
///     async fn invoke(&self, arguments: Value, _context: &CallContext) -> Result<ToolOutput, BoxError> {
///         Ok(arguments.into())
///     }
/// }
/// ```
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// What the model sees of this tool. Checked once, at bind.
    fn info(&self) -> &ToolInfo;

    /// Runs the tool. `arguments` is a JSON object that passed the schema in
    /// [`ToolInfo::parameters`] (a middleware may have rewritten it since).
    ///
    /// The output becomes the tool result: JSON (`Ok(value.into())`; a
    /// string is shown to the model as its text, any other value as compact
    /// JSON) or content parts such as images (see [`ToolOutput`]). An `Err` becomes
    /// an error result whose text is the error's `Display`, cleaned of
    /// control characters and bounded; the turn goes on. A panic is caught
    /// and reported the same way.
    ///
    /// Long tools should watch [`CallContext::cancellation`] and stop when it
    /// fires; the runner drops the future on cancellation in any case.
    async fn invoke(&self, arguments: Value, context: &CallContext)
    -> Result<ToolOutput, BoxError>;
}

/// What a tool and its middlewares know about the call they serve.
#[derive(Clone, Debug)]
pub struct CallContext {
    /// The session the binding belongs to.
    pub session_id: SessionId,
    /// The loop the binding belongs to.
    pub loop_id: LoopId,
    /// The mode the call runs in; `None` for the base mode.
    pub mode: Option<Arc<str>>,
    /// The model-facing name of the tool called.
    pub tool_name: Arc<str>,
    /// What the model sees of the tool called, shared with the binding:
    /// a middleware reads a policy from it, e.g. an MCP tool's
    /// [`annotations`](ToolInfo::annotations) (`readOnlyHint`).
    pub tool_info: Arc<ToolInfo>,
    /// The provider's tool call id (empty when the tool is invoked directly
    /// rather than by a model).
    pub tool_call_id: Arc<str>,
    /// The turn's cancellation token: fires when the turn is cancelled.
    pub cancellation: CancellationToken,
}
