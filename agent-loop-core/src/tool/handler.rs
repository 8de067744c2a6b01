//! [`Handler`]: what a one-tool factory builds for a session, the tool's
//! behaviour without its info, which is declared up front with
//! [`tool::Definition::new`](crate::tool::Definition::new).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::tool::{BoxError, CallContext, Tool, ToolInfo, ToolOutput};

/// The behaviour of one tool, built for one binding by the factory of a
/// [`tool::Definition::new`](crate::tool::Definition::new): what a
/// [`Tool`] is without its [`ToolInfo`], which the definition declares once
/// for every binding.
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

/// A shared handler is a handler: one built elsewhere and kept by its
/// builder too serves a binding as it is.
impl<H: Handler + ?Sized> Handler for Arc<H> {
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
        (**self).invoke(arguments, context)
    }
}

/// A [`Handler`] with its declared info: the tool a binding holds.
pub(crate) struct HandlerTool<H> {
    pub(crate) info: Arc<ToolInfo>,
    pub(crate) handler: H,
}

// Written out rather than with `#[async_trait]`, which would box a future
// around the handler's own boxed one: the handler's future is returned as
// it is, one allocation per call.
impl<H: Handler> Tool for HandlerTool<H> {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn invoke<'tool, 'context, 'future>(
        &'tool self,
        arguments: Value,
        context: &'context CallContext,
    ) -> Pin<Box<dyn Future<Output = Result<ToolOutput, BoxError>> + Send + 'future>>
    where
        'tool: 'future,
        'context: 'future,
        Self: 'future,
    {
        self.handler.invoke(arguments, context)
    }
}
