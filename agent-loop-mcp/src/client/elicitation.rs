//! Elicitation: an MCP server asking the user for input in the middle of a
//! tool call, and the answer a handler set on the [`McpServer`] gives.
//!
//! [`McpServer`]: crate::client::McpServer

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// A server's request for input from the user (MCP `elicitation/create`,
/// specification 2025-11-25, "Client Features" / "Elicitation"), as the
/// handler set with [`McpServer::on_elicitation`](crate::client::McpServer::on_elicitation)
/// receives it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// The name of the [`McpServer`](crate::client::McpServer) that asks.
    pub server: String,
    /// What the server asks, for people.
    pub message: String,
    /// How the user answers.
    pub mode: ElicitationMode,
}

/// How the user answers an [`ElicitationRequest`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationMode {
    /// A form: the answer is an object of the `requested_schema`, a flat
    /// JSON Schema object whose properties are strings, numbers, booleans
    /// or enums (the specification's "Requested Schema").
    Form {
        /// The schema the accepted content must satisfy.
        requested_schema: Value,
    },
    /// Out of band: the user opens `url` (a sign-in, a payment) and the
    /// server learns the outcome itself; an accept carries no content.
    /// This client declares the form mode only, so a server should not
    /// ask this way, but one may.
    Url {
        /// The page to open.
        url: String,
        /// The server's id of this elicitation (empty when it gave none).
        elicitation_id: String,
    },
}

/// The user's answer to an [`ElicitationRequest`]: the specification's
/// three actions.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ElicitationAnswer {
    /// The user answered: for a form, the content (it should satisfy the
    /// requested schema; the server checks it); for a URL, an empty map.
    Accept(Map<String, Value>),
    /// The user said no; the server's call goes on without the input.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

/// The handler of a server's elicitations, shared by every binding.
#[derive(Clone)]
pub(crate) struct ElicitationHandler(
    Arc<dyn Fn(ElicitationRequest) -> BoxFuture<'static, ElicitationAnswer> + Send + Sync>,
);

impl ElicitationHandler {
    pub(crate) fn new<F, Fut>(handler: F) -> Self
    where
        F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitationAnswer> + Send + 'static,
    {
        Self(Arc::new(move |request| Box::pin(handler(request))))
    }

    /// The answer to `request`; a handler that panics answers
    /// [`Cancel`](ElicitationAnswer::Cancel), and the panic is logged.
    pub(crate) async fn answer(&self, request: ElicitationRequest) -> ElicitationAnswer {
        use futures::FutureExt as _;

        let server = request.server.clone();
        let answered = std::panic::AssertUnwindSafe(async { (self.0)(request).await })
            .catch_unwind()
            .await;
        answered.unwrap_or_else(|panic| {
            tracing::warn!(
                target: "agent_loop_mcp::client",
                server = %server,
                "the elicitation handler panicked: {}; the server is told the user cancelled",
                agent_loop_core::support::panic::panic_message(panic.as_ref())
            );
            ElicitationAnswer::Cancel
        })
    }
}

impl fmt::Debug for ElicitationHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ElicitationHandler")
    }
}
