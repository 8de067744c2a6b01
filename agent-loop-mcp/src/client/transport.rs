//! How a server is reached: the settings of each transport, a
//! [`StdioCommand`] to run, an [`HttpEndpoint`] to post to, or any
//! [`McpStream`].

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncWrite};

use agent_loop_core::support::redact::redact_url;

/// A program to run as a stdio MCP server: the program, its arguments, the
/// environment it gets and its working directory.
///
/// The server gets a small environment, not the caller's: `HOME`,
/// `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`, `TMPDIR`, `LANG` and
/// `LC_ALL` when set, plus what [`env`](Self::env) adds, so an API key in
/// the caller's environment does not reach a third-party server (the MCP
/// TypeScript SDK's stdio client does the same).
/// [`inherit_env`](Self::inherit_env) passes everything instead.
///
/// ```
/// use agent_loop_mcp::client::StdioCommand;
///
/// let command = StdioCommand::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/srv/project"])
///     .env("NODE_OPTIONS", "--max-old-space-size=256")
///     .current_dir("/srv/project");
/// assert_eq!(command.program(), "npx");
/// ```
///
/// `Debug` shows the names of the variables set with [`env`](Self::env),
/// never their values, which are often credentials (`GITHUB_TOKEN`).
#[derive(Clone, PartialEq, Eq)]
pub struct StdioCommand {
    program: OsString,
    arguments: Vec<OsString>,
    environment: Vec<(OsString, OsString)>,
    inherit_env: bool,
    working_directory: Option<PathBuf>,
}

impl StdioCommand {
    /// Runs `program` (a path, or a name looked up in `PATH`).
    pub fn new(program: impl Into<OsString>) -> Self {
        Self {
            program: program.into(),
            arguments: Vec::new(),
            environment: Vec::new(),
            inherit_env: false,
            working_directory: None,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, argument: impl Into<OsString>) -> Self {
        self.arguments.push(argument.into());
        self
    }

    /// Adds arguments, in order.
    pub fn args(mut self, arguments: impl IntoIterator<Item = impl Into<OsString>>) -> Self {
        self.arguments.extend(arguments.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable of the server.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.environment.push((name.into(), value.into()));
        self
    }

    /// Passes the caller's whole environment to the server, not only the
    /// safe variables (see the type's docs).
    pub fn inherit_env(mut self) -> Self {
        self.inherit_env = true;
        self
    }

    /// Runs the server in `directory`.
    pub fn current_dir(mut self, directory: impl Into<PathBuf>) -> Self {
        self.working_directory = Some(directory.into());
        self
    }

    /// The program.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// The arguments.
    pub fn arguments(&self) -> &[OsString] {
        &self.arguments
    }

    /// The environment variables set with [`env`](Self::env).
    pub fn environment(&self) -> &[(OsString, OsString)] {
        &self.environment
    }

    /// `true` when the server gets the caller's whole environment.
    pub fn inherits_env(&self) -> bool {
        self.inherit_env
    }

    /// The working directory, if set (otherwise the caller's).
    pub fn working_directory(&self) -> Option<&Path> {
        self.working_directory.as_deref()
    }
}

impl fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("arguments", &self.arguments)
            .field(
                "environment",
                &self
                    .environment
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field("inherit_env", &self.inherit_env)
            .field("working_directory", &self.working_directory)
            .finish()
    }
}

/// A streamable HTTP MCP endpoint: its URL and the headers every request
/// carries (an `Authorization` header, a tenant id).
///
/// Header values are marked sensitive and never appear in errors or
/// `Debug`. Neither does the URL's userinfo, query or fragment (a token
/// in `?token=…`): `Debug` and the errors of a bind or a call show the
/// URL as `scheme://host/path` only. The MCP SDK's own `tracing` events
/// (target `rmcp`) may still quote the request URL whole when a request
/// fails: a server that takes its token in a header rather than the URL
/// keeps it out of every log.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpEndpoint {
    url: String,
    headers: Vec<(String, String)>,
}

impl HttpEndpoint {
    /// The endpoint at `url` (`http://127.0.0.1:3001/mcp`).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header to every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn headers(&self) -> &[(String, String)] {
        &self.headers
    }
}

impl fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A hosted server's URL may carry a token (`?token=…`).
        f.debug_struct("HttpEndpoint")
            .field("url", &redact_url(&self.url))
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A byte stream to a server: what [`McpServer::stream_with`](super::McpServer::stream_with) opens.
pub trait McpStream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}

impl<S: AsyncRead + AsyncWrite + Send + Unpin + 'static> McpStream for S {}
