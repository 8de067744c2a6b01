//! A definition's bindings served as an MCP server (feature `mcp-server`):
//! another agent (an IDE, another framework, this crate's own
//! `mcp::McpServer`) lists and calls the tools of one binding per
//! MCP session, each call through the same pipeline as a turn's.
//!
//! [`McpService`] holds a validated definition and how to make each
//! session's [`Bindings`]. Each MCP session (one stdio connection, or one
//! `Mcp-Session-Id` of streamable HTTP) gets its own binding, made when the
//! client sends `initialize` and dropped when the session ends (its tools'
//! own MCP servers with it). Then:
//!
//! - A served tool name over what a known client takes (64 characters
//!   for Claude's, 60 for Cursor's with the server's name, which it
//!   drops silently) is warned about when a session binds (`tracing`,
//!   target `agent_loop_mcp::server`); rename it with a definition's
//!   `NameRules` or a shorter name.
//! - `tools/list` answers the tools of the served mode (the binding's
//!   initial mode, or the one set with [`McpService::mode`]), as
//!   [`wire::mcp::export_list_tools_result`](agent_loop_providers::wire::mcp::export_list_tools_result)
//!   writes them: `name`, `description`, `inputSchema`, and the MCP fields
//!   a tool's info came with.
//! - `tools/call` runs exactly as
//!   [`Definition::run_tool_call`](agent_loop_core::Definition::run_tool_call) runs a
//!   model's call: the lookup, the arguments against the tool's schema,
//!   the mode's approval gates, the middlewares, the tool, the output check
//!   and the mode's `result_bytes`. Every failure is a result with
//!   `isError: true` and the text a model would read (an unknown tool,
//!   arguments that fail the schema, a denial, a tool error or panic). A
//!   call a gate would ask a person about is an `isError` result saying it
//!   needs approval: an MCP client cannot be paused and resumed. The tool
//!   call id is `mcp-` and the JSON-RPC request id. A client's
//!   `notifications/cancelled` drops the running call.
//! - Results: text parts are `text` content, inline images `image` content
//!   (`data`, `mimeType`), an image by URL a `resource_link` (MCP
//!   specification 2025-06-18, "Tools" / "Tool Result").
//!
//! Protocol versions: the revisions with an `initialize` handshake, from
//! 2024-11-05 to 2025-11-25 (a client asking for a later one is answered
//! with 2025-11-25, as the MCP lifecycle negotiates). Revision 2026-07-28
//! has no sessions: the SDK would make a binding per request, and state a
//! session's tools keep (a workspace, a connection) would not last from one
//! call to the next.
//!
//! Over streamable HTTP the SDK's transport checks the `Host` header
//! against loopback names (DNS rebinding protection); serve on
//! `127.0.0.1` as [`McpService::serve_http`] expects.
//!
//! ```no_run
//! use agent_loop_mcp::server::McpService;
//! use agent_loop_core::tool::{self, BoxError, ToolInfo};
//! use agent_loop_core::Definition;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let now = tool::Definition::from_fn(
//!     ToolInfo::without_parameters("now", "The time."),
//!     |_arguments: serde_json::Value, _context| async { Ok::<_, BoxError>("12:00") },
//! );
//! let definition = Definition::builder().name("clock").tool(now).build().validate()?;
//! // One session over this process's stdin and stdout.
//! McpService::new(definition).serve_stdio().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/mcp-server.md")]

mod session;

use std::fmt;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use agent_loop_core::bind::Bindings;
use agent_loop_core::definition::{Definition, Validated};
use agent_loop_core::session::{LoopId, SessionId};
use session::ServedSession;

/// Serves the bindings of one validated definition as an MCP server: one
/// binding per MCP session (see the [module docs](self)).
///
/// Cloning is cheap: clones serve the same definition.
#[derive(Clone)]
pub struct McpService {
    pub(crate) definition: Definition<Validated>,
    pub(crate) bindings: Arc<dyn Fn() -> Bindings + Send + Sync>,
    /// The mode whose tools are served; `None`: the binding's initial one.
    pub(crate) mode: Option<String>,
    /// `serverInfo` of `initialize`.
    pub(crate) name: String,
    pub(crate) version: String,
}

impl fmt::Debug for McpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpService")
            .field("definition", &self.definition.name())
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// Why one session did not start. What goes wrong in one call or one
/// session's binding goes to that client, as an `isError` result or a
/// JSON-RPC error, and is no `ServeError`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The session did not start: the client's `initialize` failed or the
    /// transport closed first (stdio, or [`McpService::serve`]). The
    /// source is the SDK's error.
    #[error("serve: the MCP session did not start")]
    Initialize(#[source] agent_loop_core::tool::BoxError),
}

impl McpService {
    /// A service of `definition`: each session's binding gets a fresh
    /// [`SessionId`] and [`LoopId`] and no data; `serverInfo` names the
    /// definition and this crate's version.
    pub fn new(definition: Definition<Validated>) -> Self {
        Self {
            name: definition.name().to_owned(),
            definition,
            bindings: Arc::new(|| Bindings::new(SessionId::new(), LoopId::new())),
            mode: None,
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// How each session's [`Bindings`] are made (its ids, its data, its
    /// extra tools): called once per MCP session, when it initialises.
    pub fn bindings(mut self, bindings: impl Fn() -> Bindings + Send + Sync + 'static) -> Self {
        self.bindings = Arc::new(bindings);
        self
    }

    /// Serves the tools of the named mode instead of the binding's initial
    /// mode. A name the definition does not declare fails each session's
    /// `initialize` with a JSON-RPC error naming the declared modes.
    pub fn mode(mut self, name: impl Into<String>) -> Self {
        self.mode = Some(name.into());
        self
    }

    /// The `serverInfo` `initialize` answers (by default the definition's
    /// name and this crate's version).
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Serves one MCP session over `reader` and `writer` (newline-delimited
    /// JSON-RPC, the stdio transport's framing), until the client closes
    /// its end; the session's binding is dropped then.
    ///
    /// Errors: [`ServeError::Initialize`] when the session never started
    /// (the client's `initialize` failed, or it closed first).
    pub async fn serve<R, W>(&self, reader: R, writer: W) -> Result<(), ServeError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = ServedSession::new(Arc::new(self.clone()))
            .serve((reader, writer))
            .await
            .map_err(|error| ServeError::Initialize(Box::new(error)))?;
        // The session ends when the client closes its end (or the task is
        // cancelled); how it ended changes nothing for the server.
        let _ = running.waiting().await;
        Ok(())
    }

    /// Serves one MCP session over this process's stdin and stdout, as
    /// [`serve`](Self::serve) does. Write logs to stderr: stdout carries
    /// the protocol.
    ///
    /// Errors: as [`serve`](Self::serve).
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve(stdin, stdout).await
    }

    /// Serves streamable HTTP (MCP specification 2025-06-18, "Transports")
    /// at any path of `listener`'s address, one binding per
    /// `Mcp-Session-Id`, until `shutdown` is cancelled; the sessions'
    /// bindings are dropped then. Bind the listener to a loopback address
    /// (`127.0.0.1:PORT`): the SDK accepts only loopback `Host` headers. A
    /// connection that fails to be accepted is logged (`tracing`, target
    /// `agent_loop_mcp::server`) and serving goes on; what fails in a session
    /// is that client's.
    pub async fn serve_http(&self, listener: TcpListener, shutdown: CancellationToken) {
        let shared = Arc::new(self.clone());
        let service = Arc::new(StreamableHttpService::new(
            move || Ok(ServedSession::new(Arc::clone(&shared))),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default().with_cancellation_token(shutdown.child_token()),
        ));
        let connections = tokio_util::task::TaskTracker::new();
        loop {
            let (stream, _) = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // A client that went before it was accepted, or no
                        // file descriptor free for now: the server goes on,
                        // a moment later.
                        tracing::warn!(
                            target: "agent_loop_mcp::server",
                            "accepting a connection failed: {error}"
                        );
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let service = Arc::clone(&service);
            let shutdown = shutdown.clone();
            connections.spawn(async move {
                let handler = hyper::service::service_fn(move |request| {
                    let service = Arc::clone(&service);
                    async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), handler);
                tokio::select! {
                    // A connection error is that client's: nothing to do.
                    _ = connection => {}
                    () = shutdown.cancelled() => {}
                }
            });
        }
        connections.close();
        connections.wait().await;
    }
}
