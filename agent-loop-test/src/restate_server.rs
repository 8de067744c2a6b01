//! The real Restate server for the integration tests, and the service
//! processes it drives.
//!
//! The server is `@restatedev/restate-server` at the version pinned in
//! `agent-loop-restate/tests/restate-server/package-lock.json`; `npm ci` there installs its
//! static binary (the optional dependency
//! `@restatedev/restate-server-<os>-<arch>`). Each [`RestateServer`] is one
//! single-node cluster of its own: free loopback ports, TCP only (no Unix
//! sockets), its data in a temporary directory, telemetry off, every
//! inherited `RESTATE_*` variable removed. It needs no network: the one
//! call it makes on its own, a check for a newer release on GitHub, fails
//! offline and changes nothing (its log says `ERROR octocrab`).
//!
//! Without the server the tests fail and say how to install it; a
//! developer without node sets `AGENT_LOOP_SKIP_RESTATE=1` to skip them
//! (then [`RestateServer::start`] returns `None` and the test returns).
//!

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

/// Set (to anything) to skip the tests that need the Restate server when it
/// is not installed.
pub const SKIP_VAR: &str = "AGENT_LOOP_SKIP_RESTATE";

/// How long the server, or a service, may take to start answering.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server stopped with `SIGTERM` may take to exit before it is
/// killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// Between two looks at a starting process.
const POLL: Duration = Duration::from_millis(50);
/// The lines of a process's log a failure (or a panicking test) shows.
const LOG_TAIL_LINES: usize = 60;

/// The pinned server's executable, or `None` when it is not installed and
/// [`SKIP_VAR`] is set.
///
/// # Panics
///
/// When it is not installed and [`SKIP_VAR`] is not set: the message says
/// how to install it.
pub fn server_binary() -> Option<PathBuf> {
    let package = match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("restate-server-linux-x64"),
        ("linux", "aarch64") => Some("restate-server-linux-arm64"),
        ("macos", "x86_64") => Some("restate-server-darwin-x64"),
        ("macos", "aarch64") => Some("restate-server-darwin-arm64"),
        _ => None,
    };
    let binary = package.map(|package| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../agent-loop-restate/tests/restate-server/node_modules/@restatedev")
            .join(package)
            .join("bin/restate-server")
    });
    if let Some(binary) = binary.as_ref().filter(|binary| binary.is_file()) {
        return Some(binary.clone());
    }
    let missing = match &binary {
        Some(binary) => format!(
            "the pinned Restate server is not installed ({})",
            binary.display()
        ),
        None => format!(
            "the Restate server has no npm build for {}-{}",
            std::env::consts::OS,
            std::env::consts::ARCH
        ),
    };
    if std::env::var_os(SKIP_VAR).is_some() {
        eprintln!("skipped: {missing} and {SKIP_VAR} is set");
        return None;
    }
    panic!(
        "{missing}: run scripts/test (it installs the pinned Restate server) \
         or set {SKIP_VAR}=1"
    );
}

/// A port on 127.0.0.1 that was free a moment ago: the port of a listener
/// bound to port 0, closed again. Another process may take it before the
/// caller binds it (`RestateServer::start` retries with other ports).
///
/// # Panics
///
/// When the system has no free port.
pub fn free_port() -> u16 {
    free_ports::<1>()[0]
}

/// `N` distinct free ports: their listeners are all open at once.
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: [TcpListener; N] = std::array::from_fn(|_| {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a free loopback port")
    });
    listeners.map(|listener| {
        listener
            .local_addr()
            .expect("the address of a bound listener")
            .port()
    })
}

/// An HTTP client for loopback calls: no proxy (an `HTTP_PROXY` of the
/// environment must not see them), short timeouts.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(30))
        .build()
        .expect("build the HTTP client")
}

/// A running Restate server: one node, all roles, its own ports and data.
///
/// Dropping it kills the server's process group and removes its data.
pub struct RestateServer {
    binary: PathBuf,
    /// Holds `data/` (the server's base directory) and `server.log` (the
    /// output of every run, appended).
    dir: TempDir,
    ingress_port: u16,
    admin_port: u16,
    fabric_port: u16,
    child: Option<Child>,
    client: reqwest::Client,
}

impl RestateServer {
    /// Starts a fresh server and waits until its admin API and its ingress
    /// answer, or `None` when the server is not installed and
    /// [`SKIP_VAR`] is set (see [`server_binary`]).
    ///
    /// A first start whose port another process took meanwhile is retried
    /// on other ports, twice.
    ///
    /// # Panics
    ///
    /// When the server is not installed (and [`SKIP_VAR`] is not set), or
    /// does not become healthy within 60 s: the message holds the end of
    /// its log.
    pub async fn start() -> Option<Self> {
        let binary = server_binary()?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let [ingress_port, admin_port, fabric_port] = free_ports::<3>();
            let dir = tempfile::Builder::new()
                .prefix("agent-loop-restate-")
                .tempdir()
                .expect("create the server's temporary directory");
            let mut server = Self {
                binary: binary.clone(),
                dir,
                ingress_port,
                admin_port,
                fabric_port,
                child: None,
                client: http_client(),
            };
            match server.launch().await {
                Ok(()) => return Some(server),
                Err(failure) if failure.port_taken && attempt < 3 => {
                    eprintln!("a Restate server port was taken; retrying on other ports");
                }
                Err(failure) => panic!("{}", failure.message),
            }
        }
    }

    /// The ingress: `http://127.0.0.1:<port>` (no trailing slash), where
    /// `POST /<Object>/<key>/<handler>` calls a handler and
    /// `.../<handler>/send` sends to it.
    pub fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ingress_port)
    }

    /// The admin API: `http://127.0.0.1:<port>` (no trailing slash).
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin_port)
    }

    /// The rows the admin API's SQL `query` gives for `sql` (over the
    /// server's introspection tables: `sys_invocation`, `sys_journal`, ...);
    /// none when it answers with anything but rows.
    pub async fn query(&self, sql: &str) -> Vec<Value> {
        let answer = http_client()
            .post(format!("{}/query", self.admin_url()))
            .header("accept", "application/json")
            .json(&json!({ "query": sql }))
            .send()
            .await;
        let body: Value = match answer {
            Ok(response) => response.json().await.unwrap_or_default(),
            Err(_) => Value::Null,
        };
        body["rows"].as_array().cloned().unwrap_or_default()
    }

    /// The server's base directory (its data survives restarts).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The file that holds the output of every run of the server.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The output of every run of the server so far.
    pub fn log(&self) -> String {
        read_log(&self.log_path())
    }

    /// Stops the server gracefully (`SIGTERM`; killed after 30 s) and starts
    /// it again on the same ports and data: the registered deployments, the
    /// objects' state and the invocations in flight survive.
    ///
    /// # Panics
    ///
    /// When it does not become healthy again within 60 s.
    pub async fn restart(&mut self) {
        self.stop(libc::SIGTERM).await;
        self.relaunch().await;
    }

    /// Kills the server (`SIGKILL`, no shutdown) and starts it again on the
    /// same ports and data: a crash of the server itself.
    ///
    /// # Panics
    ///
    /// When it does not become healthy again within 60 s.
    pub async fn crash_and_restart(&mut self) {
        self.stop(libc::SIGKILL).await;
        self.relaunch().await;
    }

    /// Registers (or re-registers: `force`) the deployment at `service_url`,
    /// e.g. `http://127.0.0.1:9080/`. The server discovers its services
    /// there (HTTP/2 without TLS, which the SDK's `HttpServer` speaks), so
    /// the service must be up. Returns the server's answer: the
    /// deployment's `id` and its `services`.
    pub async fn register(&self, service_url: &str) -> Result<Value, String> {
        let url = format!("{}/deployments", self.admin_url());
        let response = self
            .client
            .post(&url)
            .json(&json!({ "uri": service_url, "force": true }))
            .send()
            .await
            .map_err(|error| format!("POST {url}: {error}"))?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|error| format!("POST {url}: reading the answer: {error}"))?;
        if !status.is_success() {
            return Err(format!(
                "POST {url} registering {service_url}: {status}: {body}"
            ));
        }
        serde_json::from_str(&body)
            .map_err(|error| format!("POST {url}: the answer is not JSON ({error}): {body}"))
    }

    /// Sends `signal` to the server and waits for it to exit; after
    /// [`STOP_TIMEOUT`] it is killed.
    async fn stop(&mut self, signal: libc::c_int) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        signal_process(&child, signal);
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => tokio::time::sleep(POLL).await,
                _ => {
                    kill_group(&mut child);
                    return;
                }
            }
        }
    }

    /// Starts the server again on its ports and data.
    async fn relaunch(&mut self) {
        if let Err(failure) = self.launch().await {
            panic!("{}", failure.message);
        }
    }

    /// Starts the server process and waits until it is healthy.
    async fn launch(&mut self) -> Result<(), LaunchFailure> {
        let log_path = self.log_path();
        let (stdout, stderr) = log_files(&log_path);
        let mut command = Command::new(&self.binary);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("RESTATE_") {
                command.env_remove(name);
            }
        }
        let fabric = format!("127.0.0.1:{}", self.fabric_port);
        command
            .arg("--no-logo")
            .current_dir(self.dir.path())
            .env("RESTATE_BASE_DIR", self.data_dir())
            .env("RESTATE_NODE_NAME", "agent-loop-test")
            .env("RESTATE_LISTEN_MODE", "tcp")
            .env(
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{}", self.ingress_port),
            )
            .env(
                "RESTATE_ADMIN__BIND_ADDRESS",
                format!("127.0.0.1:{}", self.admin_port),
            )
            .env("RESTATE_BIND_ADDRESS", &fabric)
            .env("RESTATE_ADVERTISED_ADDRESS", format!("http://{fabric}/"))
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("DO_NOT_TRACK", "1")
            .env("RESTATE_LOG_DISABLE_ANSI_CODES", "true")
            // Fewer partitions and a smaller RocksDB budget than the
            // defaults (24, 2 GiB): a test needs little, and starts faster.
            .env("RESTATE_DEFAULT_NUM_PARTITIONS", "4")
            .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", "256MiB")
            // An invocation that waits (a paused turn) is suspended after
            // 3 s, not a minute: the tests and the journal bench see
            // suspended turns, as a service that waits for days has. A
            // step must end sooner, or it is cut and run again.
            .env("RESTATE_WORKER__INVOKER__INACTIVITY_TIMEOUT", "3s")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0);
        let child = command.spawn().map_err(|error| LaunchFailure {
            message: format!("start {}: {error}", self.binary.display()),
            port_taken: false,
        })?;
        self.child = Some(child);

        let started = Instant::now();
        let health = format!("{}/health", self.admin_url());
        let ingress_health = format!("{}/restate/health", self.ingress_url());
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                let log = read_log(&log_path);
                return Err(LaunchFailure {
                    port_taken: log.contains("Address in use")
                        || log.contains("Address already in use"),
                    message: format!(
                        "the Restate server exited while starting ({status}); its log ends:\n{}",
                        tail(&log)
                    ),
                });
            }
            if self.answers_ok(&health).await && self.answers_ok(&ingress_health).await {
                return Ok(());
            }
            if started.elapsed() > START_TIMEOUT {
                if let Some(mut child) = self.child.take() {
                    kill_group(&mut child);
                }
                return Err(LaunchFailure {
                    port_taken: false,
                    message: format!(
                        "the Restate server was not healthy after {START_TIMEOUT:?}; its log ends:\n{}",
                        tail(&read_log(&log_path))
                    ),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Whether `GET url` answers 200.
    async fn answers_ok(&self, url: &str) -> bool {
        matches!(
            self.client.get(url).timeout(Duration::from_secs(2)).send().await,
            Ok(response) if response.status() == reqwest::StatusCode::OK
        )
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(&mut child);
        }
        if std::thread::panicking() {
            eprintln!(
                "the Restate server's log ({}) ends:\n{}",
                self.log_path().display(),
                tail(&self.log())
            );
        }
    }
}

/// Why the server did not start.
struct LaunchFailure {
    message: String,
    /// It exited because one of its ports was taken.
    port_taken: bool,
}

/// A service process (a Restate deployment: the crate's example, say) on a
/// loopback port, its output in a file.
///
/// Dropping it kills its process group.
pub struct ServiceProcess {
    program: PathBuf,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    port: u16,
    /// Holds `service.log`: the output of every run, appended.
    dir: TempDir,
    child: Option<Child>,
}

impl ServiceProcess {
    /// Starts `program` with `args` and `envs` (added to the inherited
    /// environment) and waits until `127.0.0.1:port` accepts connections.
    /// The program learns its port from `args` or `envs`: the caller puts
    /// it there.
    ///
    /// # Panics
    ///
    /// When the program cannot start, exits, or does not listen within
    /// 60 s: the message holds the end of its output.
    pub async fn start<A, K, V>(
        program: impl AsRef<Path>,
        args: impl IntoIterator<Item = A>,
        envs: impl IntoIterator<Item = (K, V)>,
        port: u16,
    ) -> Self
    where
        A: AsRef<OsStr>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        let mut service = Self {
            program: program.as_ref().to_path_buf(),
            args: args
                .into_iter()
                .map(|arg| arg.as_ref().to_owned())
                .collect(),
            envs: envs
                .into_iter()
                .map(|(key, value)| (key.as_ref().to_owned(), value.as_ref().to_owned()))
                .collect(),
            port,
            dir: tempfile::Builder::new()
                .prefix("agent-loop-restate-service-")
                .tempdir()
                .expect("create the service's temporary directory"),
            child: None,
        };
        service.launch().await;
        service
    }

    /// Its URL for [`RestateServer::register`]: `http://127.0.0.1:<port>/`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The file that holds the output of every run.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("service.log")
    }

    /// The output of every run so far.
    pub fn log(&self) -> String {
        read_log(&self.log_path())
    }

    /// Whether the process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills it (`SIGKILL`, to its process group) and waits for it: a crash.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(&mut child);
        }
    }

    /// Starts it again, the same program, arguments, environment and port
    /// (killing it first if it runs), and waits until it listens.
    ///
    /// # Panics
    ///
    /// As [`ServiceProcess::start`].
    pub async fn restart(&mut self) {
        self.kill9();
        self.launch().await;
    }

    async fn launch(&mut self) {
        let log_path = self.log_path();
        let (stdout, stderr) = log_files(&log_path);
        let child = Command::new(&self.program)
            .args(&self.args)
            .envs(self.envs.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|error| panic!("start {}: {error}", self.program.display()));
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                panic!(
                    "{} exited before listening on port {} ({status}); its output ends:\n{}",
                    self.program.display(),
                    self.port,
                    tail(&read_log(&log_path))
                );
            }
            if tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, self.port))
                .await
                .is_ok()
            {
                return;
            }
            if started.elapsed() > START_TIMEOUT {
                self.kill9();
                panic!(
                    "{} did not listen on port {} within {START_TIMEOUT:?}; its output ends:\n{}",
                    self.program.display(),
                    self.port,
                    tail(&read_log(&log_path))
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            eprintln!(
                "the output of {} ({}) ends:\n{}",
                self.program.display(),
                self.log_path().display(),
                tail(&self.log())
            );
        }
    }
}

/// The log file opened for appending, twice: stdout and stderr.
fn log_files(path: &Path) -> (File, File) {
    let stdout = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|error| panic!("open {}: {error}", path.display()));
    let stderr = stdout
        .try_clone()
        .unwrap_or_else(|error| panic!("open {}: {error}", path.display()));
    (stdout, stderr)
}

/// A log's text (lossy), or why it could not be read.
fn read_log(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => format!("(cannot read {}: {error})", path.display()),
    }
}

/// The last [`LOG_TAIL_LINES`] lines of `log`.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Sends `signal` to the child (only the child: `SIGTERM` asks it to shut
/// down gracefully).
fn signal_process(child: &Child, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: `kill` has no memory effects; the child is not reaped yet
        // (we hold it), so the pid is still its.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// Kills the child's process group (it leads one: `process_group(0)`) and
/// reaps the child.
fn kill_group(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: as in `signal_process`; a negative pid names the group.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
