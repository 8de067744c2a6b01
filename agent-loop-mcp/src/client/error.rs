//! Errors of MCP servers: [`McpError`] when a server cannot be bound,
//! [`McpCallError`] when one call fails.

use std::time::Duration;

use agent_loop_core::support::redact::RedactedError;
use agent_loop_core::tool::BoxError;

/// Why an MCP server could not be bound, in the order bind meets them; see
/// [`McpError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpErrorKind {
    /// The command or endpoint function returned an error (missing binding
    /// data, say); the source is that error.
    Configuration,
    /// The command could not be started (not found, not executable, a bad
    /// working directory); the source is the `std::io::Error`.
    Start,
    /// The server did not complete the MCP `initialize` handshake: it
    /// exited, wrote something that is not MCP, or refused; the source is
    /// the SDK's error, as text with the credentials of any URL in it
    /// removed (userinfo, query, fragment).
    Initialize,
    /// `tools/list` failed (the source is the SDK's error, as text), or its pages
    /// loop: a `nextCursor` the server already gave (no source).
    ListTools,
    /// Starting, initialising and listing took longer than
    /// [`McpServer::connect_timeout`](crate::client::McpServer::connect_timeout).
    Timeout,
    /// A name of the allow list is not one of the server's tools (a typo
    /// would otherwise silently bind fewer tools).
    UnknownAllowedTool,
    /// A tool named in the allow list can only run as an MCP task
    /// (`execution.taskSupport` is `"required"`), which this client does
    /// not support; without an allow list such a tool is left out, with a
    /// `tracing` warning.
    ToolNeedsTasks,
    /// Two of the server's tools get one model-facing name after the
    /// prefix and sanitising (`a.b` and `a_b` both become `a_b`).
    NameCollision,
}

/// An MCP server that could not be bound: the source of the
/// [`BindError`](agent_loop_core::BindError) of kind
/// [`FactoryFailed`](agent_loop_core::BindErrorKind::FactoryFailed) whose `name` is the
/// server's definition name. Nothing of the binding exists then, and the
/// server's process has been stopped.
///
/// `Display` is one line naming the server and what failed; the cause is
/// `source()`. `stderr` holds the last lines the server wrote to its
/// standard error before failing (a stdio server usually says there why it
/// exited), kept out of `Display` since it is the server's text.
#[derive(Debug, thiserror::Error)]
#[error("MCP server `{server}`: {detail}")]
#[non_exhaustive]
pub struct McpError {
    /// What failed.
    pub kind: McpErrorKind,
    /// The server's definition name.
    pub server: String,
    /// The rest of the one-line message.
    pub detail: String,
    /// The last lines (at most 4 KiB) of the server's standard error, for
    /// a stdio server that wrote any.
    pub stderr: Option<String>,
    source: Option<BoxError>,
}

impl McpError {
    pub(crate) fn new(kind: McpErrorKind, server: &str, detail: impl Into<String>) -> Self {
        Self {
            kind,
            server: server.to_owned(),
            detail: detail.into(),
            stderr: None,
            source: None,
        }
    }

    pub(crate) fn source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Keeps the MCP SDK's error as the source, flattened with every URL in
    /// it redacted: its transport errors quote the request URL whole, and
    /// a hosted server's URL may carry a token (`?token=…`).
    pub(crate) fn sdk_source(self, source: impl Into<BoxError>) -> Self {
        let source: BoxError = source.into();
        self.source(RedactedError::new(source.as_ref()))
    }

    pub(crate) fn stderr(mut self, stderr: Option<String>) -> Self {
        self.stderr = stderr.filter(|text| !text.trim().is_empty());
        self
    }
}

/// Why one call of an MCP tool failed: the tool's error, which becomes that
/// call's error result (the turn goes on). Its `Display` is what the model
/// reads after ``the tool `x` failed: ``.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpCallError {
    /// The server answered with `isError: true`: the tool ran and failed.
    /// The text is the server's (its text content, joined).
    #[error("{text}")]
    Tool {
        /// The server's error text.
        text: String,
    },
    /// The server answered the request with a JSON-RPC error (unknown tool,
    /// invalid parameters, an internal error).
    #[error("the MCP server refused the call: {message}")]
    Protocol {
        /// The JSON-RPC error's message.
        message: String,
    },
    /// The server is gone (its process exited, the connection closed)
    /// before answering, and it is not restarted: the server's
    /// [`RestartPolicy`](crate::client::RestartPolicy) is
    /// [`never`](crate::client::RestartPolicy::never), or it went away again
    /// during the call sent after a restart (the next call restarts it).
    #[error("the MCP server is not running (its connection closed)")]
    Closed,
    /// The server stopped during the call and was restarted; the call was
    /// not sent again, since it may have run and its tool does not say it
    /// is idempotent (`annotations.idempotentHint`). The next call goes to
    /// the new server.
    #[error(
        "the MCP server stopped during the call and was restarted; the call was not sent again, as the tool is not marked idempotent, so it may or may not have taken effect"
    )]
    Restarted,
    /// The server was gone and every try of its
    /// [`RestartPolicy`](crate::client::RestartPolicy) to start it again
    /// failed; the message is the last try's error. The next call tries
    /// again.
    #[error("the MCP server stopped and could not be restarted: {message}")]
    RestartFailed {
        /// The last try's error.
        message: String,
    },
    /// The server no longer lists this tool (after a restart): the call
    /// was not sent.
    #[error("the MCP server no longer offers this tool")]
    NoLongerOffered,
    /// The server lists this tool with another `inputSchema` than the one
    /// the call was checked against (after a restart): the call was not
    /// sent.
    #[error(
        "the MCP server changed this tool's input schema since the call was checked; the call was not sent"
    )]
    SchemaChanged,
    /// The server answered, over streamable HTTP, with a message larger
    /// than the client reads (the SDK's limit, 16 MiB for one SSE event or
    /// one JSON body): the result was not read. The server is still
    /// running and the next call goes through; ask for less (a page, a
    /// range, a filter).
    ///
    /// Over stdio the SDK drops such a message without knowing which
    /// request it answered, so there the call ends as a
    /// [`Timeout`](Self::Timeout).
    #[error(
        "the MCP server's result was over the client's limit of {limit_bytes} bytes per message and was not read (the server is still running): ask for less"
    )]
    ResultTooLarge {
        /// The limit, in bytes.
        limit_bytes: usize,
    },
    /// No answer and no progress notification within the per-call
    /// timeout ([`McpServer::call_timeout`](crate::client::McpServer::call_timeout));
    /// the server was sent `notifications/cancelled` for the request.
    #[error("the MCP server did not answer within {} s", .timeout.as_secs_f64())]
    Timeout {
        /// The per-call timeout.
        timeout: Duration,
    },
    /// The call reported progress but did not finish within the ceiling of
    /// one call ([`McpServer::max_total_timeout`](crate::client::McpServer::max_total_timeout));
    /// the server was sent `notifications/cancelled` for the request.
    #[error(
        "the MCP server did not finish within {} s in all (its progress extends the call timeout up to that)",
        .timeout.as_secs_f64()
    )]
    TotalTimeout {
        /// The ceiling.
        timeout: Duration,
    },
    /// The turn was cancelled while the call ran; the server was sent
    /// `notifications/cancelled` for the request.
    #[error("the call was cancelled")]
    Cancelled,
    /// Another failure of the MCP client (an answer of the wrong type, a
    /// transport error). Any URL in the message is shown without userinfo,
    /// query or fragment, where a token may be.
    #[error("the call to the MCP server failed: {message}")]
    Client {
        /// The client's error message.
        message: String,
    },
}
