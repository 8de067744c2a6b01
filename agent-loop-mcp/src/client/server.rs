//! [`McpServer`]: the declaration of an MCP server as a tool definition,
//! and how each binding reaches it.

use std::collections::HashSet;
use std::fmt;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use crate::client::McpErrorKind;
use crate::client::client_handler::ClientState;
use crate::client::connection::{self, Connection};
use crate::client::elicitation::{ElicitationAnswer, ElicitationHandler, ElicitationRequest};
use crate::client::error::McpError;
use crate::client::link::{Link, RestartPolicy};
use crate::client::listing;
use crate::client::tool::{CallTimeouts, McpTool};
use crate::client::transport::{HttpEndpoint, McpStream, StdioCommand};
use agent_loop_core::conversation::WireFormat;
use agent_loop_core::limits::{self, IntoLimit, InvalidLimit, ResultBytes};
use agent_loop_core::session::Session;
use agent_loop_core::tool::{
    self, BoxError, ListingFactory, NameRules, Tool, ToolInfo, ToolListing,
};
use agent_loop_providers::wire;

/// How long a server gets to start, initialise and list its tools, by
/// default: a cold `npx` start downloads the package first.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one tool call may take, by default: the MCP TypeScript SDK's
/// default request timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long one tool call may take in all, by default, however often it
/// reports progress: 10 minutes.
pub const DEFAULT_MAX_TOTAL_TIMEOUT: Duration = Duration::from_secs(600);

/// The bytes of one MCP tool result's text the model sees, by default:
/// 100 000, about the 25 000 tokens Claude Code lets one MCP tool result
/// have by default (its `MAX_MCP_OUTPUT_TOKENS`), at about four bytes a
/// token. A server's result size is the server's choice, and without a
/// bound one 5 MB result goes into the next request whole, and every one
/// after it. Longer text is cut the way
/// [`result_bytes`](agent_loop_core::ToolLimits::result_bytes) cuts (head, a marker
/// counting the omitted bytes, tail; images pass whole), and the smaller of
/// this bound and the mode's `result_bytes` applies. Set another with
/// [`McpServer::result_bytes`].
pub const DEFAULT_RESULT_BYTES: ResultBytes = match ResultBytes::new(100_000) {
    Some(bytes) => bytes,
    None => panic!("100 000 is a valid result bound"),
};

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
/// [`tool::Definition`](agent_loop_core::tool::Definition) with
/// [`into_definition`](Self::into_definition) (or `.into()`): a
/// [`discovering`](agent_loop_core::tool::Definition::discovering) definition named
/// like the server, whose tools are known once the server listed them.
/// Convert once, and give clones of that definition to the base and the
/// modes: a binding then starts the server once. (Two conversions are two
/// definitions with one name, which bind refuses as
/// `DuplicateDefinitionName`.)
///
/// At bind, in order, within [`connect_timeout`](Self::connect_timeout):
/// the command or endpoint is computed from the binding's
/// [`Session`](agent_loop_core::Session); the server is started (or connected to);
/// the MCP `initialize` handshake runs; `tools/list` is called, following
/// `nextCursor` to the last page (a cursor given twice fails the bind: the
/// server's pages loop). The allow and deny lists are applied to
/// the server's tool names; each remaining tool's model-facing name is the
/// [`prefix`](Self::prefix), `_`, and the server's name, made valid with
/// [`name_rules`](Self::name_rules) (`NameRules::sanitize`). Any failure is
/// a [`BindError`](agent_loop_core::BindError) of kind `FactoryFailed` naming this
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
/// arguments as the turn checked them; see [`McpCallError`](crate::client::McpCallError)
/// for how failures become error results.
///
/// ```no_run
/// use agent_loop_mcp::client::{McpServer, StdioCommand};
/// use agent_loop_core::{Bindings, Definition, LoopId, SessionId};
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
    max_total_timeout: Duration,
    pub(crate) restart: RestartPolicy,
    elicitation: Option<ElicitationHandler>,
    /// The tools' own result bound; an invalid value set is refused at
    /// bind.
    result_bytes: Result<Option<ResultBytes>, InvalidLimit>,
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
            max_total_timeout: DEFAULT_MAX_TOTAL_TIMEOUT,
            restart: RestartPolicy::default(),
            elicitation: None,
            result_bytes: Ok(Some(DEFAULT_RESULT_BYTES)),
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

    /// The time one tool call may go without an answer (default
    /// [`DEFAULT_CALL_TIMEOUT`]); then the call is an error result
    /// ([`McpCallError::Timeout`](crate::client::McpCallError::Timeout)) and
    /// the server gets `notifications/cancelled`.
    ///
    /// Every call carries a `progressToken` (MCP specification 2025-11-25,
    /// "Utilities" / "Progress"), and each `notifications/progress` the
    /// server sends for it starts this timeout again, up to
    /// [`max_total_timeout`](Self::max_total_timeout) in all: a long job
    /// that reports progress is not cut, one that goes silent is. The
    /// timeout also waits while an elicitation of the server is being
    /// answered ([`on_elicitation`](Self::on_elicitation)). The progress
    /// reaches the turn's events as
    /// [`TurnEvent::ToolCallProgress`](agent_loop_core::turn::TurnEvent::ToolCallProgress).
    ///
    /// It is also how long a call over stdio waits for a result bigger
    /// than one message may be: the `rmcp` client drops a stdio message
    /// over 16 MiB (its `DEFAULT_MAX_LINE_LENGTH`) without knowing which
    /// request it answered, so that call ends as a timeout. Over
    /// streamable HTTP the answer is tied to its request, and such a call
    /// fails at once with
    /// [`McpCallError::ResultTooLarge`](crate::client::McpCallError::ResultTooLarge).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// The most one tool call may take, however often it reports progress
    /// (default [`DEFAULT_MAX_TOTAL_TIMEOUT`]; the MCP TypeScript SDK's
    /// `maxTotalTimeout`); then the call is an error result
    /// ([`McpCallError::TotalTimeout`](crate::client::McpCallError::TotalTimeout))
    /// and the server gets `notifications/cancelled`. A value below the
    /// [`call_timeout`](Self::call_timeout) counts as the call timeout.
    pub fn max_total_timeout(mut self, timeout: Duration) -> Self {
        self.max_total_timeout = timeout;
        self
    }

    /// How a server that is gone is started again (default
    /// [`RestartPolicy::default`]: 3 tries); see [`RestartPolicy`].
    pub fn restart_policy(mut self, policy: RestartPolicy) -> Self {
        self.restart = policy;
        self
    }

    /// Answers the server's elicitations: when the server asks the user for
    /// input in the middle of a call (MCP `elicitation/create`,
    /// specification 2025-11-25, "Client Features" / "Elicitation"),
    /// `handler` gets the [`ElicitationRequest`] and its
    /// [`ElicitationAnswer`] goes back to the server, while the call waits
    /// (its timeout waits too). The client then declares the `elicitation`
    /// capability (form mode) in `initialize`.
    ///
    /// The handler answers in this process, while the call runs: a request
    /// in flight cannot outlive the turn, so a handler that must wait for
    /// a person waits in place (a channel to a UI), or answers
    /// [`Decline`](ElicitationAnswer::Decline). A handler that panics
    /// answers [`Cancel`](ElicitationAnswer::Cancel) (logged). Without a
    /// handler no capability is declared, and a server that asks anyway
    /// is told the user declined.
    ///
    /// ```
    /// use agent_loop_mcp::client::{ElicitationAnswer, ElicitationMode, McpServer, StdioCommand};
    ///
    /// let server = McpServer::stdio("deploy", StdioCommand::new("deploy-server")).on_elicitation(
    ///     |request| async move {
    ///         match request.mode {
    ///             ElicitationMode::Form { .. } if request.message.contains("environment") => {
    ///                 let mut content = serde_json::Map::new();
    ///                 content.insert("environment".into(), "staging".into());
    ///                 ElicitationAnswer::Accept(content)
    ///             }
    ///             _ => ElicitationAnswer::Decline,
    ///         }
    ///     },
    /// );
    /// # let _ = server;
    /// ```
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitationRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ElicitationAnswer> + Send + 'static,
    {
        self.elicitation = Some(ElicitationHandler::new(handler));
        self
    }

    /// The bytes of one result's text the model sees, for every tool of
    /// this server (default [`DEFAULT_RESULT_BYTES`]): a count of at least
    /// 256, or [`Limit::Unlimited`](agent_loop_core::limits::Limit::Unlimited) to
    /// leave the bound to the mode's
    /// [`result_bytes`](agent_loop_core::ToolLimits::result_bytes) alone. The
    /// smaller of this and the mode's `result_bytes` applies, with one cut
    /// (see [`tool::Definition::result_bytes`]). A count from 0 to 255 fails the bind
    /// with an [`McpError`] of kind
    /// [`Configuration`](McpErrorKind::Configuration), whose source is the
    /// [`InvalidLimit`].
    ///
    /// ```
    /// use agent_loop_core::limits::Limit;
    /// use agent_loop_mcp::client::{McpServer, StdioCommand};
    ///
    /// let logs = McpServer::stdio("logs", StdioCommand::new("log-server")).result_bytes(20_000);
    /// let files = McpServer::stdio("files", StdioCommand::new("fs-server")).result_bytes(Limit::Unlimited);
    /// # let _ = (logs, files);
    /// ```
    pub fn result_bytes(mut self, limit: impl IntoLimit) -> Self {
        self.result_bytes = limits::checked_result_bytes(limit);
        self
    }

    /// The definition's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool definition: a changing definition named like the server,
    /// whose tools' defaults the server fills in
    /// ([`tool::Definition::fills_defaults`]: it parses each call with
    /// its own schema, and Zod, for the TypeScript SDK's servers, marks a
    /// defaulted property `required`), with the server's result bound
    /// ([`tool::Definition::result_bytes`]).
    pub fn into_definition(self) -> tool::Definition {
        let result_bytes = self
            .result_bytes
            .as_ref()
            .ok()
            .copied()
            .flatten()
            .and_then(|bytes| NonZeroU32::new(bytes.get()));
        let definition = tool::Definition::changing(self.name.clone(), Factory(Arc::new(self)))
            .fills_defaults(true);
        match result_bytes {
            Some(bytes) => definition.result_bytes(bytes),
            None => definition,
        }
    }

    /// The model-facing name of the server's tool `mcp_name`.
    fn model_name(&self, mcp_name: &str) -> String {
        let name = match &self.prefix {
            Some(prefix) => format!("{prefix}_{mcp_name}"),
            None => mcp_name.to_owned(),
        };
        self.name_rules.sanitize(&name)
    }

    /// Starts, initialises and lists, within the connect timeout; `state`
    /// answers what the server asks of the client.
    pub(crate) async fn connect(
        &self,
        session: &Session,
        state: &Arc<ClientState>,
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
                connection::connect_stdio(&self.name, &command, self.connect_timeout, state).await?
            }
            Transport::Http(endpoint) => {
                let endpoint = endpoint(session).map_err(configuration)?;
                connection::connect_http(&self.name, &endpoint, self.connect_timeout, state).await?
            }
            Transport::Stream(open) => {
                let stream = open(session).map_err(configuration)?;
                connection::connect_stream(&self.name, stream, self.connect_timeout, state).await?
            }
        };
        let left = self.connect_timeout.saturating_sub(started.elapsed());
        let infos = self.list(&connection, left).await?;
        Ok((Arc::new(connection), infos))
    }

    /// Every page of the server's `tools/list` over `connection`, read
    /// within `timeout`.
    pub(crate) async fn list(
        &self,
        connection: &Connection,
        timeout: std::time::Duration,
    ) -> Result<Vec<ToolInfo>, McpError> {
        // The server's own listing of these pages, for the fields the SDK
        // drops.
        connection.start_listing();
        let listed = tokio::time::timeout(timeout, connection.list_all_tools(&self.name))
            .await
            .map_err(|_| connection::timed_out(&self.name, self.connect_timeout))??;
        // The wire module reads MCP tools losslessly (title, annotations and
        // other fields kept in the extras), the same as a recorded list,
        // with the fields the SDK's `Tool` dropped (`execution`) put back
        // from the server's own listing.
        let raw = connection.finish_listing();
        let infos = listing::listed_tools_json(listed, raw)
            .map_err(BoxError::from)
            .and_then(|tools| {
                // Moved into the result, not copied as `json!` would.
                let result = serde_json::Map::from_iter([(
                    "tools".to_owned(),
                    serde_json::Value::Array(tools),
                )]);
                wire::mcp::parse_list_tools_result(&serde_json::Value::Object(result))
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
        Ok(infos)
    }

    /// The listed tools that the allow and deny lists keep, in the server's
    /// order, without the tools that can only run as tasks.
    ///
    /// A tool whose `execution.taskSupport` is `"required"` (MCP
    /// specification 2025-11-25, "Tools" / "Tool" and "Tasks" / "Tool-Level
    /// Negotiation": clients MUST invoke such a tool as a task, and the
    /// server answers a plain `tools/call` with an error) can never succeed
    /// for this client, which does not implement tasks and does not
    /// declare the `tasks` capability. Offering it would only teach the
    /// model a tool whose every call fails, so it is left out of the
    /// binding, and a `tracing` warning (target `agent_loop_mcp::client`, fields
    /// `server` and `tool`) says so. The official TypeScript SDK's client
    /// refuses a plain call of such a tool the same way (`Client.callTool`,
    /// "requires task-based execution"). `"forbidden"`, `"optional"`, a
    /// missing `execution` and a value of a later specification are kept:
    /// such a tool answers a plain call. A tool named in the
    /// [`allow`](Self::allow) list that needs tasks fails the bind
    /// ([`ToolNeedsTasks`](McpErrorKind::ToolNeedsTasks)): the caller asked
    /// for a tool the binding cannot have.
    pub(crate) fn select(&self, infos: Vec<ToolInfo>) -> Result<Vec<ToolInfo>, McpError> {
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
        let selected = infos.into_iter().filter(|info| {
            self.allow
                .as_ref()
                .is_none_or(|allow| allow.contains(&info.name))
                && !self.deny.contains(&info.name)
        });
        let mut kept = Vec::new();
        for info in selected {
            if !needs_tasks(&info) {
                kept.push(info);
                continue;
            }
            if self.allow.is_some() {
                return Err(McpError::new(
                    McpErrorKind::ToolNeedsTasks,
                    &self.name,
                    format!(
                        "the allowed tool `{}` can only run as an MCP task (`execution.taskSupport` is \"required\"), which this client does not support",
                        info.name
                    ),
                ));
            }
            tracing::warn!(
                target: "agent_loop_mcp::client",
                server = %self.name,
                tool = %info.name,
                "tool left out: it can only run as an MCP task (`execution.taskSupport` is \"required\"), which this client does not support"
            );
        }
        Ok(kept)
    }
}

/// `true` when the listed tool must be called as a task: its
/// `execution.taskSupport` is `"required"` (MCP specification 2025-11-25,
/// "Tools" / "Tool": `"forbidden"` (the default), `"optional"` or
/// `"required"`).
fn needs_tasks(info: &ToolInfo) -> bool {
    info.extras
        .fields_for(WireFormat::McpToolsList)
        .and_then(|fields| fields.get("execution"))
        .and_then(|execution| execution.get("taskSupport"))
        .and_then(serde_json::Value::as_str)
        == Some("required")
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
            .field("max_total_timeout", &self.max_total_timeout)
            .field("restart_policy", &self.restart)
            .field("elicitation", &self.elicitation.is_some())
            .field("result_bytes", &self.result_bytes)
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
impl ListingFactory for Factory {
    async fn build(&self, session: &Session) -> Result<Arc<dyn ToolListing>, BoxError> {
        let server = &self.0;
        // The bound itself is declared on the definition
        // (`into_definition`); an invalid one fails here, at bind.
        server.result_bytes.clone().map_err(|invalid| {
            McpError::new(
                McpErrorKind::Configuration,
                &server.name,
                "the result bound set with `result_bytes` is not a valid bound",
            )
            .source(invalid)
        })?;
        let state = ClientState::new(&server.name, server.elicitation.clone());
        // Before the list: a change announced while it is read makes the
        // binding's first `list` read it again.
        let version = state.list_changes();
        let (connection, infos) = server.connect(session, &state).await?;
        let infos = server.select(infos)?;
        let link = Arc::new(Link::new(
            Arc::clone(server),
            session.clone(),
            state,
            connection,
            &infos,
        ));
        Ok(Arc::new(Listing {
            link,
            timeouts: CallTimeouts {
                idle: server.call_timeout,
                total: server.max_total_timeout.max(server.call_timeout),
            },
            first: Mutex::new(Some((version, infos))),
        }))
    }
}

/// One binding's tools of one server: listed at connect, and again over
/// the current connection after `notifications/tools/list_changed` or a
/// restart.
struct Listing {
    link: Arc<Link>,
    timeouts: CallTimeouts,
    /// The list read at connect, with the version before it, which the
    /// binding's first `list` takes unless the version moved since.
    first: Mutex<Option<(u64, Vec<ToolInfo>)>>,
}

#[async_trait]
impl ToolListing for Listing {
    fn version(&self) -> u64 {
        self.link.state.list_changes()
    }

    async fn list(&self) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
        let first = self
            .first
            .lock()
            .ok()
            .and_then(|mut first| first.take())
            .filter(|(version, _)| *version == self.version())
            .map(|(_, infos)| infos);
        let infos = match first {
            Some(infos) => infos,
            None => {
                let server = self.link.server();
                let connection = self.link.connection();
                let listed = server.list(&connection, server.connect_timeout).await?;
                let kept = server.select(listed)?;
                // The server's latest list, whatever the binding's checks
                // make of it: a call a restart cut checks its tool here.
                self.link.offer(&kept);
                kept
            }
        };
        Ok(self.tools(infos)?)
    }
}

impl Drop for Listing {
    /// The binding is gone: so is its server, even while a stray tool
    /// handle or a detached call still holds one of its tools.
    fn drop(&mut self) {
        self.link.close();
    }
}

impl Listing {
    /// A tool per listed info, under its model-facing name.
    ///
    /// Errors: [`McpErrorKind::NameCollision`] when two of the server's
    /// tools get one model-facing name.
    fn tools(&self, infos: Vec<ToolInfo>) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let server = self.link.server();
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
                ));
            }
            model_names.push((mcp_name.clone(), info.name.clone()));
            tools.push(Arc::new(McpTool::new(
                info,
                mcp_name,
                Arc::clone(&self.link),
                self.timeouts,
            )));
        }
        Ok(tools)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded tool lists: server-filesystem marks each of its 14
    /// tools `"forbidden"`, the others have no `execution`; none needs
    /// tasks, so every recorded tool binds. The same tool marked
    /// `"required"` does.
    #[test]
    fn only_a_required_task_support_makes_a_recorded_tool_need_tasks() {
        let folder = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/wire-real/mcp"
        );
        let mut forbidden = 0;
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let listed: serde_json::Value = serde_json::from_str(&text).unwrap();
            for info in wire::mcp::parse_list_tools_result(&listed).unwrap().tools {
                assert!(!needs_tasks(&info), "{} in {path:?}", info.name);
                forbidden += usize::from(info.extras.fields().contains_key("execution"));
            }
        }
        assert_eq!(forbidden, 14);
        for (support, needs) in [
            ("required", true),
            ("optional", false),
            ("forbidden", false),
        ] {
            let listed = serde_json::json!({"tools": [{
                "name": "research", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": support}
            }]});
            let info = &wire::mcp::parse_list_tools_result(&listed).unwrap().tools[0];
            assert_eq!(needs_tasks(info), needs, "{support}");
        }
    }
}
