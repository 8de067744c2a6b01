//! [`Handler`]: the runtime trait of a tool, what a binding runs for each
//! of its calls, as `Service` is tower's. A one-tool factory builds one;
//! a [`Tool`] is one with its info.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::tool::{BoxError, CallContext, Tool, ToolOutput};

/// The behaviour of one tool for one binding: what the binding runs for
/// each call, after the argument check and inside the middleware chain.
/// Every tool comes down to one: the factory of a
/// [`tool::Definition::new`](crate::tool::Definition::new) builds it, and
/// a [`Tool`] (a [`ToolInfo`](crate::tool::ToolInfo) and an `invoke`, as a
/// bundle or a listing reports it) is run through its `invoke` once bind
/// read its info. The info, and how the tool is run
/// ([`fills_defaults`](crate::tool::Definition::fills_defaults),
/// [`result_bytes`](crate::tool::Definition::result_bytes), external), are
/// the definition's declaration, not the handler's.
///
/// ```
/// use agent_loop_core::tool::{BoxError, CallContext, Handler, ToolOutput};
/// use serde_json::Value;
///
/// /// Reads files under one session's workspace.
/// struct ReadFile {
///     root: std::path::PathBuf,
/// }
///
/// #[async_trait::async_trait]
/// impl Handler for ReadFile {
///     async fn invoke(&self, arguments: Value, _context: &CallContext) -> Result<ToolOutput, BoxError> {
///         let path = arguments["path"].as_str().ok_or("`path` must be a string")?;
///         Ok(std::fs::read_to_string(self.root.join(path))?.into())
///     }
/// }
/// ```
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Runs the tool, as [`Tool::invoke`] does: `arguments` passed the
    /// declared schema (a middleware may have rewritten them since); an
    /// `Err` or a panic becomes an error result the model reads.
    async fn invoke(&self, arguments: Value, context: &CallContext)
    -> Result<ToolOutput, BoxError>;
}

/// A [`Tool`] as the binding runs it: its handler half. Its info was read
/// and checked at bind; the binding keeps the checked form.
pub(crate) struct OfTool(pub(crate) Arc<dyn Tool>);

// Written out rather than with `#[async_trait]`, which would box a future
// around the tool's own boxed one: the tool's future is returned as it
// is, one allocation per call.
impl Handler for OfTool {
    fn invoke<'handler, 'context, 'future>(
        &'handler self,
        arguments: Value,
        context: &'context CallContext,
    ) -> Pin<Box<dyn Future<Output = Result<ToolOutput, BoxError>> + Send + 'future>>
    where
        'handler: 'future,
        'context: 'future,
        Self: 'future,
    {
        self.0.invoke(arguments, context)
    }
}
