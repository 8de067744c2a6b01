//! [`McpServer`]: the declaration of an MCP server as a tool definition,
//! and how each binding reaches it.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::mcp::McpErrorKind;
use crate::mcp::connection::{self, Connection};
use crate::mcp::error::McpError;
use crate::mcp::tool::McpTool;
use crate::mcp::transport::{HttpEndpoint, McpStream, StdioCommand};
use crate::session::Session;
use crate::tool::{self, BoxError, NameRules, Tool, ToolFactory, ToolInfo};
use crate::wire;

/// How long a server gets to start, initialise and list its tools, by
/// default: a cold `npx` start downloads the package first.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one tool call may take, by default: the MCP TypeScript SDK's
/// default request timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

type Computed<T> = Arc<dyn Fn(&Session) -> Result<T, BoxError> + Send + Sync>;

/// How the server is reached, computed per binding.
#[derive(Clone)]
enum Transport {
    Stdio(Computed<StdioCommand>),
    Http(Computed<HttpEndpoint>),
    Stream(Computed<Box<dyn McpStream>>),
}

/// An MCP server as a tool definition: each binding starts its own
/// connection to the server (a child process over stdio, or a streamable
/// HTTP session), lists its tools and offers them to the model; dropping
/// the binding shuts it down.
///
/// Build one, set what it needs, and turn it into a
/// [`tool::Definition`](crate::tool::Definition) with
/// [`into_definition`](Self::into_definition) (or `.into()`): a
/// [`discovering`](crate::tool::Definition::discovering) definition named
/// like the server, whose tools are known once the server listed them.
/// Convert once, and give clones of that definition to the base and the
/// modes: a binding then starts the server once. (Two conversions are two
/// definitions with one name, which bind refuses as
/// `DuplicateDefinitionName`.)
///
/// At bind, in order, within [`connect_timeout`](Self::connect_timeout):
/// the command or endpoint is computed from the binding's
/// [`Session`](crate::Session); the server is started (or connected to);
/// the MCP `initialize` handshake runs; `tools/list` is called, following
/// `nextCursor` to the last page (a cursor given twice fails the bind: the
/// server's pages loop). The allow and deny lists are applied to
/// the server's tool names; each remaining tool's model-facing name is the
/// [`prefix`](Self::prefix), `_`, and the server's name, made valid with
/// [`name_rules`](Self::name_rules) (`NameRules::sanitize`). Any failure is
/// a [`BindError`](crate::BindError) of kind `FactoryFailed` naming this
/// definition, with an [`McpError`] as its source, and the server is
/// stopped. Two servers (or a server and another definition) producing
/// one model-facing name are the usual `DuplicateToolName`, every
/// collision listed.
///
/// Each tool's [`ToolInfo`] carries the server's `inputSchema` as its
/// parameters, and its `title`, `annotations` and other fields in its
/// extras ([`ToolInfo::annotations`] reads them), for middlewares.
///
/// A call sends `tools/call` with the server's own tool name and the
/// arguments as the turn checked them; see [`McpCallError`](crate::mcp::McpCallError)
/// for how failures become error results.
///
/// ```no_run
/// use agent_loop::mcp::{McpServer, StdioCommand};
/// use agent_loop::{Bindings, Definition, LoopId, SessionId};
///
/// /// The directory of one session.
/// struct Workspace(std::path::PathBuf);
///
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let files = McpServer::stdio_with("files", |session| {
///     let workspace = session.get::<Workspace>()?;
///     Ok(StdioCommand::new("npx")
///         .args(["-y", "@modelcontextprotocol/server-filesystem"])
///         .arg(&workspace.0))
/// })
/// .prefix("fs")
/// .deny(["write_file", "edit_file", "move_file"]);
///
/// let definition = Definition::builder()
///     .name("assistant")
///     .tool(files.into_definition())
///     .build()
///     .validate()?;
/// let bindings = Bindings::new(SessionId::new(), LoopId::new())
///     .with(Workspace("/srv/sessions/42".into()));
/// let session = definition.bind(bindings).await?; // starts the server
/// assert!(session.tool("fs_read_text_file").is_some());
/// drop(session); // stops it
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    name: String,
    transport: Transport,
    prefix: Option<String>,
    allow: Option<Vec<String>>,
    deny: Vec<String>,
    name_rules: NameRules,
    connect_timeout: Duration,
    call_timeout: Duration,
}

impl McpServer {
    fn with_transport(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            prefix: None,
            allow: None,
            deny: Vec::new(),
            name_rules: NameRules::default(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// A stdio server started with `command` for every binding. `name` is
    /// the definition's name (unique in a binding).
    pub fn stdio(name: impl Into<String>, command: StdioCommand) -> Self {
        Self::with_transport(
            name,
            Transport::Stdio(Arc::new(move |_| Ok(command.clone()))),
        )
    }

    /// A stdio server whose command is computed from each binding's
    /// [`Session`] (a per-session directory, credentials). An error of
    /// `command` is an [`McpError`] of kind
    /// [`Configuration`](McpErrorKind::Configuration).
    pub fn stdio_with<F>(name: impl Into<String>, command: F) -> Self
    where
        F: Fn(&Session) -> Result<StdioCommand, BoxError> + Send + Sync + 'static,
    {
        Self::with_transport(name, Transport::Stdio(Arc::new(command)))
    }

    /// A streamable HTTP server at `endpoint`, one MCP session per binding.
    pub fn http(name: impl Into<String>, endpoint: HttpEndpoint) -> Self {
        Self::with_transport(
            name,
            Transport::Http(Arc::new(move |_| Ok(endpoint.clone()))),
        )
    }

    /// A streamable HTTP server whose endpoint (URL, headers) is computed
    /// from each binding's [`Session`].
    pub fn http_with<F>(name: impl Into<String>, endpoint: F) -> Self
    where
        F: Fn(&Session) -> Result<HttpEndpoint, BoxError> + Send + Sync + 'static,
    {
        Self::with_transport(name, Transport::Http(Arc::new(endpoint)))
    }

    /// A server reached over a byte stream opened for each binding, which
    /// carries MCP's newline-delimited JSON-RPC messages like stdio does:
    /// a server running in the same process over
    /// [`tokio::io::duplex`], a Unix socket. Dropping the binding closes
    /// the stream.
    pub fn stream_with<F, S>(name: impl Into<String>, open: F) -> Self
    where
        F: Fn(&Session) -> Result<S, BoxError> + Send + Sync + 'static,
        S: McpStream,
    {
        Self::with_transport(
            name,
            Transport::Stream(Arc::new(move |session| {
                open(session).map(|stream| Box::new(stream) as Box<dyn McpStream>)
            })),
        )
    }

    /// Prefixes every model-facing name with `prefix` and `_`
    /// (`fs_read_file`), so servers with tools named alike can share a
    /// binding. Replaces an earlier prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Binds only these tools (the server's names). A name the server does
    /// not list fails the bind ([`UnknownAllowedTool`](McpErrorKind::UnknownAllowedTool)).
    /// Replaces an earlier allow list.
    pub fn allow(mut self, tool_names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allow = Some(tool_names.into_iter().map(Into::into).collect());
        self
    }

    /// Never binds these tools (the server's names); a name it does not
    /// list is ignored. Applied after [`allow`](Self::allow). Replaces an
    /// earlier deny list.
    pub fn deny(mut self, tool_names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.deny = tool_names.into_iter().map(Into::into).collect();
        self
    }

    /// The rules the model-facing names are made to satisfy: set it to the
    /// loop definition's [`NameRules`] (default: the OpenAI and Anthropic
    /// pattern `^[a-zA-Z0-9_-]{1,64}$`). Names that already satisfy them
    /// are kept as they are.
    pub fn name_rules(mut self, rules: NameRules) -> Self {
        self.name_rules = rules;
        self
    }

    /// The time to start, initialise and list the tools, together
    /// (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The time one tool call may take (default
    /// [`DEFAULT_CALL_TIMEOUT`]); then the call is an error result and the
    /// server gets `notifications/cancelled`.
    ///
    /// It is also how long a call waits for a result bigger than one
    /// message may be: the `rmcp` client drops a stdio message over 16 MiB
    /// (its `DEFAULT_MAX_LINE_LENGTH`, the size its HTTP client allows for
    /// one event) without knowing which request it answered, so that call
    /// ends as a timeout.
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// The definition's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool definition: a discovering definition named like the server.
    pub fn into_definition(self) -> tool::Definition {
        tool::Definition::discovering(self.name.clone(), Factory(Arc::new(self)))
    }

    /// The model-facing name of the server's tool `mcp_name`.
    fn model_name(&self, mcp_name: &str) -> String {
        let name = match &self.prefix {
            Some(prefix) => format!("{prefix}_{mcp_name}"),
            None => mcp_name.to_owned(),
        };
        self.name_rules.sanitize(&name)
    }

    /// Starts, initialises and lists, within the connect timeout.
    async fn connect(
        &self,
        session: &Session,
    ) -> Result<(Arc<Connection>, Vec<ToolInfo>), McpError> {
        let configuration = |error: BoxError| {
            McpError::new(
                McpErrorKind::Configuration,
                &self.name,
                "the server's command or endpoint could not be computed for this binding",
            )
            .source(error)
        };
        let started = tokio::time::Instant::now();
        let connection = match &self.transport {
            Transport::Stdio(command) => {
                let command = command(session).map_err(configuration)?;
                connection::connect_stdio(&self.name, &command, self.connect_timeout).await?
            }
            Transport::Http(endpoint) => {
                let endpoint = endpoint(session).map_err(configuration)?;
                connection::connect_http(&self.name, &endpoint, self.connect_timeout).await?
            }
            Transport::Stream(open) => {
                let stream = open(session).map_err(configuration)?;
                connection::connect_stream(&self.name, stream, self.connect_timeout).await?
            }
        };
        let left = self.connect_timeout.saturating_sub(started.elapsed());
        let listed = tokio::time::timeout(left, connection.list_all_tools(&self.name))
            .await
            .map_err(|_| connection::timed_out(&self.name, self.connect_timeout))??;
        // The wire module reads MCP tools losslessly (title, annotations and
        // other fields kept in the extras), the same as a recorded list.
        let infos = serde_json::to_value(&listed)
            .map_err(BoxError::from)
            .and_then(|tools| {
                wire::mcp::parse_list_tools_result(&serde_json::json!({ "tools": tools }))
                    .map_err(BoxError::from)
            })
            .map_err(|error| {
                McpError::new(
                    McpErrorKind::ListTools,
                    &self.name,
                    "the `tools/list` result could not be read",
                )
                .source(error)
            })?
            .tools;
        Ok((Arc::new(connection), infos))
    }

    /// The listed tools that the allow and deny lists keep, in the server's
    /// order.
    fn select(&self, infos: Vec<ToolInfo>) -> Result<Vec<ToolInfo>, McpError> {
        if let Some(allow) = &self.allow {
            let listed: HashSet<&str> = infos.iter().map(|info| info.name.as_str()).collect();
            let unknown: Vec<&str> = allow
                .iter()
                .map(String::as_str)
                .filter(|name| !listed.contains(name))
                .collect();
            if !unknown.is_empty() {
                let mut available: Vec<&str> = listed.into_iter().collect();
                available.sort_unstable();
                return Err(McpError::new(
                    McpErrorKind::UnknownAllowedTool,
                    &self.name,
                    format!(
                        "the allow list names tools the server does not list: {}; it lists: {}",
                        unknown.join(", "),
                        available.join(", ")
                    ),
                ));
            }
        }
        Ok(infos
            .into_iter()
            .filter(|info| {
                self.allow
                    .as_ref()
                    .is_none_or(|allow| allow.contains(&info.name))
                    && !self.deny.contains(&info.name)
            })
            .collect())
    }
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field(
                "transport",
                &match self.transport {
                    Transport::Stdio(_) => "stdio",
                    Transport::Http(_) => "streamable HTTP",
                    Transport::Stream(_) => "stream",
                },
            )
            .field("prefix", &self.prefix)
            .field("allow", &self.allow)
            .field("deny", &self.deny)
            .field("name_rules", &self.name_rules)
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .finish()
    }
}

impl From<McpServer> for tool::Definition {
    fn from(server: McpServer) -> Self {
        server.into_definition()
    }
}

/// The factory: one connection per binding, one tool per selected server
/// tool, all sharing the connection.
struct Factory(Arc<McpServer>);

#[async_trait]
impl ToolFactory for Factory {
    async fn build(&self, session: &Session) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
        let server = &self.0;
        let (connection, infos) = server.connect(session).await?;
        let infos = server.select(infos)?;
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(infos.len());
        let mut model_names: Vec<(String, String)> = Vec::with_capacity(infos.len());
        for mut info in infos {
            let mcp_name = std::mem::take(&mut info.name);
            info.name = server.model_name(&mcp_name);
            if let Some((other, _)) = model_names.iter().find(|(_, name)| *name == info.name) {
                return Err(McpError::new(
                    McpErrorKind::NameCollision,
                    &server.name,
                    format!(
                        "the server's tools `{other}` and `{mcp_name}` both become `{}`; deny one of them",
                        info.name
                    ),
                )
                .into());
            }
            model_names.push((mcp_name.clone(), info.name.clone()));
            tools.push(Arc::new(McpTool::new(
                info,
                mcp_name,
                Arc::clone(&connection),
                server.call_timeout,
            )));
        }
        Ok(tools)
    }
}
