//! One live connection to an MCP server: started and initialised at bind,
//! shut down when the last tool of its binding is dropped.

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, RoleClient, RunningService};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::client::McpErrorKind;
use crate::client::client_handler::{Client, ClientState};
use crate::client::error::McpError;
use crate::client::http_client::{self, LimitAwareClient};
use crate::client::listing::{ListingTap, TapReader};
use crate::client::transport::{HttpEndpoint, McpStream, StdioCommand};

/// How long a server gets to exit by itself once its input is closed, and
/// then after `SIGTERM`, before it is killed: the stdio shutdown sequence
/// of the MCP specification ("Lifecycle", "Shutdown").
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// How many bytes of a server's standard error are kept for errors.
const STDERR_TAIL_BYTES: usize = 4096;

/// The environment variables a stdio server inherits unless told to
/// inherit everything: what a program needs to run, and nothing that may
/// hold a secret (the MCP TypeScript SDK's stdio client does the same).
const SAFE_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG", "LC_ALL",
];

/// A started, initialised server.
pub(crate) struct Connection {
    service: RunningService<RoleClient, Client>,
    /// The child process of a stdio server; `None` over HTTP.
    child: Mutex<Option<ChildGuard>>,
    /// The raw `tools/list` results, read while listing.
    listing: Option<Arc<ListingTap>>,
    /// Over HTTP, the token of the errors its client makes for an answer
    /// over the SDK's limit ([`http_client::over_limit_bytes`]).
    over_limit_token: Option<Arc<str>>,
}

impl Connection {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// The connection's number among its binding's connections
    /// ([`ClientState::client`](crate::client::client_handler::ClientState::client)).
    pub(crate) fn number(&self) -> u64 {
        self.service.service().connection
    }

    /// `true` once the server is gone: the client's task ended (the
    /// transport closed: a stdio server's output ended, an HTTP session
    /// could not go on), or a stdio server's process exited, which the
    /// client's task may not have seen yet.
    pub(crate) fn is_gone(&self) -> bool {
        if self.peer().is_transport_closed() {
            return true;
        }
        self.child
            .lock()
            .ok()
            .and_then(|mut child| child.as_mut().map(ChildGuard::has_exited))
            .unwrap_or(false)
    }

    /// A stdio server's process id, for what tracing says of a restart.
    pub(crate) fn pid(&self) -> Option<u32> {
        let child = self.child.lock().ok()?;
        child.as_ref().map(|guard| guard.child.id())
    }

    /// The limit named by `data`, when it is the error this connection's
    /// HTTP client made for an answer over the SDK's message limit.
    pub(crate) fn over_limit_bytes(&self, data: Option<&serde_json::Value>) -> Option<usize> {
        http_client::over_limit_bytes(data, self.over_limit_token.as_deref()?)
    }

    /// Starts reading the server's own listing, before a `tools/list`
    /// (see [`ListingTap`]).
    pub(crate) fn start_listing(&self) {
        if let Some(tap) = &self.listing {
            tap.start();
        }
    }

    /// The listed tools as the server wrote them, by name, read while
    /// listing (see [`ListingTap`]); reading stops here.
    pub(crate) fn finish_listing(
        &self,
    ) -> HashMap<String, serde_json::Map<String, serde_json::Value>> {
        self.listing
            .as_ref()
            .map(|tap| tap.finish())
            .unwrap_or_default()
    }

    /// Every page of `tools/list`, following `nextCursor` to the last page.
    /// A cursor the server already gave means its pages loop (a server
    /// bug): that fails at once, instead of listing the same tools again
    /// and again, the list growing, until the connect timeout.
    pub(crate) async fn list_all_tools(&self, server: &str) -> Result<Vec<Tool>, McpError> {
        let mut tools = Vec::new();
        let mut cursors = HashSet::new();
        let mut cursor = None;
        loop {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = self
                .peer()
                .list_tools(Some(params))
                .await
                .map_err(|error| {
                    McpError::new(McpErrorKind::ListTools, server, "`tools/list` failed")
                        .sdk_source(error)
                })?;
            tools.extend(page.tools);
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) if cursors.contains(&next) => {
                    let shown: String = next.chars().take(64).collect();
                    return Err(McpError::new(
                        McpErrorKind::ListTools,
                        server,
                        format!("`tools/list` gave the cursor `{shown}` twice: its pages loop"),
                    ));
                }
                Some(next) => {
                    cursors.insert(next.clone());
                    cursor = Some(next);
                }
            }
        }
    }
}

impl Connection {
    /// Stops the server: ends the client's task, which drops the
    /// transport (a stdio server's input closes, the first step of its
    /// shutdown), and stops a stdio server's process group. Calls over it
    /// from now on find it gone.
    pub(crate) fn close(&self) {
        self.service.cancellation_token().cancel();
        let child = match self.child.lock() {
            Ok(mut child) => child.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(child) = child {
            child.stop();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close();
    }
}

/// Starts `command` and initialises it within `timeout`; `state` answers
/// what the server asks of the client.
pub(crate) async fn connect_stdio(
    server: &str,
    command: &StdioCommand,
    timeout: Duration,
    state: &Arc<ClientState>,
) -> Result<Connection, McpError> {
    let mut child = command.to_std().spawn().map_err(|error| {
        McpError::new(
            McpErrorKind::Start,
            server,
            format!("could not start `{}`", command.program().to_string_lossy()),
        )
        .source(error)
    })?;
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // From here the guard stops the child on every path out.
    let mut guard = ChildGuard { child };
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return Err(McpError::new(
            McpErrorKind::Start,
            server,
            "the server's standard streams could not be opened",
        ));
    };
    let pipes = tokio::process::ChildStdin::from_std(stdin).and_then(|stdin| {
        Ok((
            stdin,
            tokio::process::ChildStdout::from_std(stdout)?,
            tokio::process::ChildStderr::from_std(stderr)?,
        ))
    });
    let (stdin, stdout, stderr) = pipes.map_err(|error| {
        McpError::new(
            McpErrorKind::Start,
            server,
            "the server's standard streams could not be registered with Tokio",
        )
        .source(error)
    })?;
    let listing = ListingTap::new();
    let stdout = TapReader::new(stdout, Arc::clone(&listing));
    let stderr_tail = Arc::new(Mutex::new(String::new()));
    let stderr_task = tokio::spawn(forward_stderr(
        server.to_owned(),
        stderr,
        Arc::clone(&stderr_tail),
    ));
    let client = state.client();
    match tokio::time::timeout(timeout, client.serve((stdout, stdin))).await {
        Ok(Ok(service)) => Ok(Connection {
            service,
            child: Mutex::new(Some(guard)),
            listing: Some(listing),
            over_limit_token: None,
        }),
        Ok(Err(error)) => {
            // The server usually said why on its standard error before it
            // exited; give the reader a moment to get it.
            if guard.exited_within(EXIT_GRACE).await {
                let _ = tokio::time::timeout(EXIT_GRACE, stderr_task).await;
            }
            drop(guard);
            Err(initialize_failed(server, error).stderr(tail(&stderr_tail)))
        }
        Err(_) => Err(timed_out(server, timeout).stderr(tail(&stderr_tail))),
    }
}

/// Connects to a streamable HTTP endpoint and initialises it within
/// `timeout`.
pub(crate) async fn connect_http(
    server: &str,
    endpoint: &HttpEndpoint,
    timeout: Duration,
    state: &Arc<ClientState>,
) -> Result<Connection, McpError> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let mut headers = HashMap::new();
    for (name, value) in endpoint.headers() {
        // The value may be a credential: the error names the header only.
        let parsed = http::HeaderName::try_from(name.as_str())
            .ok()
            .zip(http::HeaderValue::try_from(value.as_str()).ok());
        let Some((name, mut value)) = parsed else {
            return Err(McpError::new(
                McpErrorKind::Configuration,
                server,
                format!("the HTTP header `{name}` is not a valid header name and value"),
            ));
        };
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    // reqwest's rustls needs a process-wide crypto provider; ring is the
    // one this crate builds. A provider installed earlier is kept.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config =
        StreamableHttpClientTransportConfig::with_uri(endpoint.url()).custom_headers(headers);
    // A token no server can guess marks the errors the client makes for an
    // answer over the SDK's limit.
    let token: Arc<str> = uuid::Uuid::new_v4().to_string().into();
    let listing = ListingTap::new();
    let client =
        LimitAwareClient::new(Arc::clone(&token), Arc::clone(&listing)).map_err(|error| {
            McpError::new(
                McpErrorKind::Start,
                server,
                "the HTTP client could not be built",
            )
            .sdk_source(error)
        })?;
    let mut connection = initialize(
        server,
        StreamableHttpClientTransport::with_client(client, config),
        timeout,
        Some(listing),
        state,
    )
    .await?;
    connection.over_limit_token = Some(token);
    Ok(connection)
}

/// Initialises a server over an opened byte stream within `timeout`.
pub(crate) async fn connect_stream(
    server: &str,
    stream: Box<dyn McpStream>,
    timeout: Duration,
    state: &Arc<ClientState>,
) -> Result<Connection, McpError> {
    let listing = ListingTap::new();
    let (read, write) = tokio::io::split(stream);
    let read = TapReader::new(read, Arc::clone(&listing));
    initialize(server, (read, write), timeout, Some(listing), state).await
}

/// Runs the `initialize` handshake over a transport that needs no process.
async fn initialize<T, E, A>(
    server: &str,
    transport: T,
    timeout: Duration,
    listing: Option<Arc<ListingTap>>,
    state: &Arc<ClientState>,
) -> Result<Connection, McpError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = state.client();
    match tokio::time::timeout(timeout, client.serve(transport)).await {
        Ok(Ok(service)) => Ok(Connection {
            service,
            child: Mutex::new(None),
            listing,
            over_limit_token: None,
        }),
        Ok(Err(error)) => Err(initialize_failed(server, error)),
        Err(_) => Err(timed_out(server, timeout)),
    }
}

fn initialize_failed(server: &str, error: impl Into<agent_loop_core::tool::BoxError>) -> McpError {
    McpError::new(
        McpErrorKind::Initialize,
        server,
        "the server did not complete `initialize`",
    )
    .sdk_source(error)
}

pub(crate) fn timed_out(server: &str, timeout: Duration) -> McpError {
    McpError::new(
        McpErrorKind::Timeout,
        server,
        format!(
            "not started, initialised and listed within {} s",
            timeout.as_secs_f64()
        ),
    )
}

fn tail(buffer: &Mutex<String>) -> Option<String> {
    buffer.lock().ok().map(|text| text.clone())
}

/// Logs each line of a server's standard error (`tracing` debug, target
/// `agent_loop_mcp::client`) and keeps the last [`STDERR_TAIL_BYTES`] for errors.
///
/// It reads until the server closes its standard error, whatever it
/// writes: bytes that are not UTF-8 are shown as U+FFFD, and a line longer
/// than [`STDERR_TAIL_BYTES`] is taken in pieces of that size. Stopping
/// early would close the pipe, and the server's next write to its standard
/// error would kill it (`SIGPIPE`, or an `EPIPE` error in node).
async fn forward_stderr(
    server: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<String>>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        // `take` bounds the line, so a server that never writes a newline
        // cannot make this buffer grow without end.
        let limit = STDERR_TAIL_BYTES as u64;
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        tracing::debug!(server = %server, "stderr: {text}");
        if let Ok(mut tail) = tail.lock() {
            tail.push_str(text);
            tail.push('\n');
            if tail.len() > STDERR_TAIL_BYTES {
                let mut cut = tail.len() - STDERR_TAIL_BYTES;
                while !tail.is_char_boundary(cut) {
                    cut += 1;
                }
                tail.drain(..cut);
            }
        }
    }
}

/// A stdio server's process, stopped and reaped when dropped.
struct ChildGuard {
    child: std::process::Child,
}

impl ChildGuard {
    /// Stops the server the way the MCP specification describes (its input
    /// is already closed: wait, `SIGTERM`, wait, `SIGKILL`), in a task when
    /// a Tokio runtime is there, so dropping a binding never blocks; without
    /// one, or if that task is dropped with its runtime, it is killed and
    /// reaped at once.
    fn stop(self) {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(self.exit_gracefully());
            }
            Err(_) => drop(self),
        }
    }

    async fn exit_gracefully(mut self) {
        if !self.exited_within(EXIT_GRACE).await {
            self.signal_group(Signal::Terminate);
            self.exited_within(EXIT_GRACE).await;
        }
        // Dropping kills what is left of the group (`npx` runs the server
        // as its child, which may outlive it) and reaps the child.
        drop(self);
    }

    /// Waits up to `grace` for the child to exit, without reaping it: while
    /// it is a zombie its process group id cannot be reused, so the group
    /// can still be signalled safely.
    async fn exited_within(&mut self, grace: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            if self.has_exited() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[cfg(unix)]
    fn has_exited(&mut self) -> bool {
        let pid: libc::id_t = self.child.id();
        // SAFETY: `siginfo_t` is plain data that `waitid` fills in; with
        // WNOHANG and no exited child it stays zeroed.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let status = libc::waitid(
                libc::P_PID,
                pid,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            status != 0 || info.si_pid() != 0
        }
    }

    #[cfg(not(unix))]
    fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)) | Err(_))
    }

    /// Signals the server's process group (it was started as its leader).
    /// Only called while the child is not reaped.
    fn signal_group(&self, signal: Signal) {
        #[cfg(unix)]
        {
            let number = match signal {
                Signal::Terminate => libc::SIGTERM,
                Signal::Kill => libc::SIGKILL,
            };
            if let Ok(group) = libc::pid_t::try_from(self.child.id()) {
                // SAFETY: `kill` has no memory effects; a group that no
                // longer exists makes it fail with ESRCH, which is fine.
                unsafe {
                    libc::kill(-group, number);
                }
            }
        }
        #[cfg(not(unix))]
        let _ = signal;
    }
}

#[derive(Clone, Copy)]
enum Signal {
    Terminate,
    Kill,
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.signal_group(Signal::Kill);
        let _ = self.child.kill();
        // After SIGKILL the wait is short; it reaps the child, so no zombie
        // is left.
        let _ = self.child.wait();
    }
}

impl StdioCommand {
    /// The `std` command: piped standard streams, the safe environment
    /// plus the command's own, and (on Unix) its own process group, so the
    /// whole server can be stopped and a terminal's Ctrl-C reaches only
    /// the caller.
    fn to_std(&self) -> std::process::Command {
        let mut command = std::process::Command::new(self.program());
        command
            .args(self.arguments())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !self.inherits_env() {
            command.env_clear();
            for name in SAFE_ENV {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        command.envs(self.environment().iter().map(|(k, v)| (k, v)));
        if let Some(directory) = self.working_directory() {
            command.current_dir(directory);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        command
    }
}
