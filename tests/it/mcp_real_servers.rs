//! Real MCP servers from the npm registry, at the versions pinned in
//! `tests/mcp-servers/package-lock.json` (`.ci/run` runs `npm ci` there):
//! `@modelcontextprotocol/server-filesystem` and
//! `@modelcontextprotocol/server-everything`, each a child process of its
//! binding, started with `node`.
//!
//! Without them these tests fail and say how to install them; a developer
//! without node sets `AGENT_LOOP_SKIP_NODE_MCP=1` to skip only these.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::mcp_in_process::{bind, bind_error, cause, mcp_error};
use agent_loop::conversation::{Message, ModelResponse, ToolCall, ToolResult};
use agent_loop::mcp::{McpServer, StdioCommand};
use agent_loop::turn::{ScriptedModel, TurnStatus};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, Validated};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The entry point of an installed server package, or `None` when the
/// developer chose to skip these tests.
fn server_script(package: &str) -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-servers/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    if script.is_file() {
        return Some(script);
    }
    if std::env::var_os("AGENT_LOOP_SKIP_NODE_MCP").is_some() {
        eprintln!("skipped: {package} is not installed and AGENT_LOOP_SKIP_NODE_MCP is set");
        return None;
    }
    panic!(
        "the MCP test servers are not installed: run `npm ci --prefix tests/mcp-servers` \
         (node 20 or newer), or set AGENT_LOOP_SKIP_NODE_MCP=1 to skip the tests that need them"
    );
}

/// A fresh directory of one session, removed when dropped (the test holds
/// it; the binding gets its [`Root`]).
struct Workspace(PathBuf);

/// The binding data the filesystem server's command reads.
struct Root(PathBuf);

impl Workspace {
    fn new(files: &[(&str, &str)]) -> Self {
        let root = std::env::temp_dir().join(format!("agent-loop-mcp-{}", SessionId::new()));
        std::fs::create_dir_all(&root).unwrap();
        // The server resolves symbolic links (macOS's /tmp is one); the
        // test compares paths with what it sees.
        let root = root.canonicalize().unwrap();
        for (name, text) in files {
            std::fs::write(root.join(name), text).unwrap();
        }
        Self(root)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The filesystem server over the binding's own `Workspace`.
fn filesystem_definition(script: PathBuf) -> Definition<Validated> {
    let files = McpServer::stdio_with("files", move |session| {
        let root = session.get::<Root>()?;
        Ok(StdioCommand::new("node").arg(&script).arg(&root.0))
    })
    .allow(["list_directory", "read_text_file", "write_file"])
    .deny(["write_file"]);
    Definition::builder()
        .name("files-agent")
        .tool(files)
        .build()
        .validate()
        .unwrap()
}

async fn bind_workspace(
    definition: &Definition<Validated>,
    workspace: &Workspace,
) -> Definition<Bound> {
    definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()).with(Root(workspace.0.clone())))
        .await
        .unwrap()
}

/// The ids of the live processes whose command line mentions `marker`
/// (zombies included: a zombie is a process left behind too).
fn processes_mentioning(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new(); // not Linux: nothing to look at
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            // A zombie has no command line any more; its parent is us.
            let zombie_child = status.contains("State:\tZ")
                && status.contains(&format!("PPid:\t{}\n", std::process::id()));
            String::from_utf8_lossy(&cmdline).contains(marker) || zombie_child
        })
        .collect()
}

/// Waits up to 10 s for no process to mention `marker`.
pub(crate) async fn assert_no_process_left(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_mentioning(marker);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "server processes left for {marker}: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The tool results of a conversation, in order.
pub(crate) fn results(conversation: &[Message]) -> Vec<&ToolResult> {
    conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .collect()
}

#[tokio::test]
async fn two_sessions_each_see_only_their_own_directory_and_no_server_is_left() {
    let Some(script) = server_script("server-filesystem") else {
        return;
    };
    let definition = filesystem_definition(script);
    let alice = Workspace::new(&[("notes.txt", "alice's notes"), ("todo.txt", "buy milk")]);
    let bob = Workspace::new(&[("report.txt", "bob's report")]);
    let (alice_dir, bob_dir) = (alice.0.clone(), bob.0.clone());
    let (alice_listing, alice_file, bob_file) = (
        alice.0.to_string_lossy().into_owned(),
        alice.path("notes.txt"),
        bob.path("report.txt"),
    );
    let bob_listing = bob.0.to_string_lossy().into_owned();
    let (alice_session, bob_session) = tokio::join!(
        bind_workspace(&definition, &alice),
        bind_workspace(&definition, &bob)
    );
    let tools = alice_session.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["read_text_file", "list_directory"]);
    let read = alice_session.tool("read_text_file").unwrap();
    assert_eq!(read.info().annotations().read_only_hint, Some(true));

    let turn = |listing: String, own: String, other: String| {
        ScriptedModel::new([
            ModelResponse::tool_calls([
                ToolCall::new(
                    "list",
                    "list_directory",
                    json!({"path": listing}).to_string(),
                ),
                ToolCall::new("read", "read_text_file", json!({"path": own}).to_string()),
                ToolCall::new(
                    "other",
                    "read_text_file",
                    json!({"path": other}).to_string(),
                ),
            ]),
            ModelResponse::answer("done"),
        ])
    };
    let alice_model = turn(alice_listing, alice_file, bob_file.clone());
    let bob_model = turn(
        bob_listing,
        bob_file,
        alice_dir.join("notes.txt").to_string_lossy().into_owned(),
    );
    let (mut alice_conversation, mut bob_conversation) =
        (vec![Message::user("look")], vec![Message::user("look")]);
    let cancel = CancellationToken::new();
    let (alice_outcome, bob_outcome) = tokio::join!(
        alice_session.run_turn(&alice_model, &mut alice_conversation, &cancel),
        bob_session.run_turn(&bob_model, &mut bob_conversation, &cancel)
    );
    alice_outcome.unwrap();
    bob_outcome.unwrap();

    let alice_results = results(&alice_conversation);
    assert!(!alice_results[0].is_error, "{}", alice_results[0].text());
    assert!(alice_results[0].text().contains("[FILE] notes.txt"));
    assert!(alice_results[0].text().contains("[FILE] todo.txt"));
    assert!(!alice_results[0].text().contains("report.txt"));
    assert_eq!(alice_results[1].text(), "alice's notes");
    assert!(alice_results[2].is_error, "outside its directory");
    assert!(
        alice_results[2].text().contains("Access denied"),
        "{}",
        alice_results[2].text()
    );

    let bob_results = results(&bob_conversation);
    assert_eq!(bob_results[0].text().trim(), "[FILE] report.txt");
    assert_eq!(bob_results[1].text(), "bob's report");
    assert!(bob_results[2].is_error);

    drop(alice_session);
    drop(bob_session);
    assert_no_process_left(&alice_dir.to_string_lossy()).await;
    assert_no_process_left(&bob_dir.to_string_lossy()).await;
}

#[tokio::test]
async fn everything_server_tools_bind_answer_and_a_long_call_is_cancelled() {
    let Some(script) = server_script("server-everything") else {
        return;
    };
    let marker = script.to_string_lossy().into_owned();
    let everything = McpServer::stdio("everything", StdioCommand::new("node").arg(&script))
        .prefix("every.thing");
    let session = Definition::builder()
        .name("everything-agent")
        .tool(everything)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    // Every listed tool bound, its prefix sanitised (`.` is not allowed).
    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert!(names.len() >= 10, "{names:?}");
    assert!(
        names.iter().all(|name| name.starts_with("every_thing_")),
        "{names:?}"
    );
    // It can only run as an MCP task, which this client does not do.
    assert!(
        !names.contains(&"every_thing_simulate-research-query"),
        "{names:?}"
    );
    for expected in [
        "every_thing_echo",
        "every_thing_get-sum",
        "every_thing_get-tiny-image",
        "every_thing_trigger-long-running-operation",
    ] {
        assert!(names.contains(&expected), "{expected} in {names:?}");
    }

    let echo = session
        .invoke("every_thing_echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: hello");
    let sum = session
        .invoke("every_thing_get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(sum.text().contains('5'), "{}", sum.text());
    let image = session
        .invoke("every_thing_get-tiny-image", json!({}))
        .await
        .unwrap();
    assert_eq!(image.images().count(), 1, "{image:?}");
    // Bad arguments never reach the server: the turn checks the listed
    // `inputSchema`.
    let error = session
        .invoke("every_thing_get-sum", json!({"a": "two"}))
        .await
        .unwrap_err();
    assert_eq!(
        error.kind,
        agent_loop::bind::ToolCallErrorKind::InvalidArguments
    );

    // A 30-second operation, cancelled once it runs.
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new(
            "long",
            "every_thing_trigger-long-running-operation",
            r#"{"duration": 30, "steps": 30}"#,
        )]),
        ModelResponse::answer("never"),
    ]);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let mut conversation = vec![Message::user("run it")];
    let outcome = session
        .run_turn(&model, &mut conversation, &cancel)
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert!(started.elapsed() < Duration::from_secs(10));
    // The server goes on serving the session.
    let echo = session
        .invoke("every_thing_echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: still here");

    drop(session);
    assert_no_process_left(&marker).await;
}

#[tokio::test]
async fn a_server_that_exits_at_start_is_a_bind_error_with_its_stderr() {
    let Some(script) = server_script("server-filesystem") else {
        return;
    };
    let missing = std::env::temp_dir().join(format!("agent-loop-missing-{}", SessionId::new()));
    let files = McpServer::stdio(
        "files",
        StdioCommand::new("node").arg(&script).arg(&missing),
    );
    let error = bind_error(files).await;
    assert_eq!(error.kind, agent_loop::BindErrorKind::FactoryFailed);
    assert_eq!(error.name.as_deref(), Some("files"));
    let source = mcp_error(&error);
    assert_eq!(source.kind, agent_loop::mcp::McpErrorKind::Initialize);
    let stderr = source.stderr.as_deref().unwrap_or_default();
    assert!(stderr.contains(&*missing.to_string_lossy()), "{stderr:?}");
    assert_no_process_left(&missing.to_string_lossy()).await;
}

#[tokio::test]
async fn a_missing_program_is_a_start_bind_error() {
    let files = McpServer::stdio("files", StdioCommand::new("/nonexistent/mcp-server"));
    let error = bind_error(files).await;
    let source = mcp_error(&error);
    assert_eq!(source.kind, agent_loop::mcp::McpErrorKind::Start);
    assert_eq!(
        source.to_string(),
        "MCP server `files`: could not start `/nonexistent/mcp-server`"
    );
}

/// Binds 20 sessions at once, each with its own filesystem server; prints
/// the bind time per session (`cargo test --features mcp -- --nocapture
/// twenty`). No timing is asserted: speed targets live in benchmarks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_binds_against_the_filesystem_server_all_succeed() {
    let Some(script) = server_script("server-filesystem") else {
        return;
    };
    let definition = filesystem_definition(script);
    let workspaces: Vec<Workspace> = (0..20)
        .map(|i| Workspace::new(&[("id.txt", &i.to_string())]))
        .collect();
    let markers: Vec<String> = workspaces
        .iter()
        .map(|w| w.0.to_string_lossy().into_owned())
        .collect();
    let paths: Vec<String> = workspaces.iter().map(|w| w.path("id.txt")).collect();
    let started = Instant::now();
    let bound = futures::future::join_all(workspaces.iter().map(|workspace| {
        let definition = &definition;
        async move {
            let started = Instant::now();
            let session = bind_workspace(definition, workspace).await;
            (session, started.elapsed())
        }
    }))
    .await;
    let total = started.elapsed();
    let mut times: Vec<Duration> = bound.iter().map(|(_, time)| *time).collect();
    times.sort();
    eprintln!(
        "20 concurrent binds: total {total:?}; per session min {:?}, median {:?}, max {:?}",
        times[0], times[10], times[19]
    );
    for (index, ((session, _), path)) in bound.iter().zip(&paths).enumerate() {
        let output = session
            .invoke("read_text_file", json!({"path": path}))
            .await
            .unwrap();
        assert_eq!(output.text(), index.to_string());
    }
    drop(bound);
    for marker in &markers {
        assert_no_process_left(marker).await;
    }
}

#[test]
fn dropping_a_binding_outside_a_runtime_still_reaps_the_server() {
    let Some(script) = server_script("server-filesystem") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let workspace = Workspace::new(&[]);
    let marker = workspace.0.to_string_lossy().into_owned();
    let session = runtime
        .block_on(async { bind_workspace(&filesystem_definition(script), &workspace).await });
    // The server's own pid: `processes_mentioning` also counts any zombie
    // child of this process, which another test may have for a moment.
    let server: Vec<u32> = processes_mentioning(&marker)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(&marker)
        })
        .collect();
    assert_eq!(server.len(), 1, "one server runs: {server:?}");
    drop(runtime);
    drop(session); // no runtime here: killed and reaped at once
    let status = format!("/proc/{}/status", server[0]);
    assert!(
        !Path::new(&status).exists(),
        "{:?}",
        std::fs::read_to_string(&status)
    );
}

/// A server that never answers `initialize` and has a child of its own (as
/// `npx` has): the bind fails with a timeout, and neither process is left.
#[cfg(unix)]
#[tokio::test]
async fn a_silent_server_times_out_and_its_whole_process_group_is_stopped() {
    let marker = format!("agent-loop-silent-{}", SessionId::new());
    let server = McpServer::stdio(
        "silent",
        StdioCommand::new("sh").args([
            "-c",
            r#"sh -c "sleep 30; true" "$0-child" & wait"#,
            &marker,
        ]),
    )
    .connect_timeout(Duration::from_millis(500));
    let error = bind_error(server).await;
    assert_eq!(error.name.as_deref(), Some("silent"));
    assert_eq!(
        mcp_error(&error).kind,
        agent_loop::mcp::McpErrorKind::Timeout
    );
    assert_no_process_left(&marker).await;
}

/// A server that writes bytes that are not UTF-8 to its standard error (a
/// Latin-1 message), then 200 KB more: the client keeps reading it, so the
/// server is not killed by a closed pipe and binds and answers.
#[cfg(unix)]
#[tokio::test]
async fn a_server_writing_latin1_and_a_flood_to_stderr_still_binds_and_answers() {
    let Some(script) = server_script("server-filesystem") else {
        return;
    };
    let workspace = Workspace::new(&[("note.txt", "still here")]);
    let shell = r#"printf 'caf\351\n' >&2; head -c 200000 /dev/zero | tr '\0' a >&2; echo >&2; exec node "$0" "$1""#;
    let server = McpServer::stdio(
        "files",
        StdioCommand::new("sh").args([
            "-c".as_ref(),
            shell.as_ref(),
            script.as_os_str(),
            workspace.0.as_os_str(),
        ]),
    )
    .connect_timeout(Duration::from_secs(10));
    let session = bind(server).await;
    let output = session
        .invoke(
            "read_text_file",
            json!({"path": workspace.path("note.txt")}),
        )
        .await
        .unwrap();
    assert_eq!(output.text(), "still here");
    drop(session);
    assert_no_process_left(&workspace.0.to_string_lossy()).await;
}

/// The stderr kept in the bind error shows bytes that are not UTF-8 as
/// U+FFFD, instead of ending there, and keeps the last 4 KiB of a line with
/// no end.
#[cfg(unix)]
#[tokio::test]
async fn the_stderr_of_a_failed_bind_keeps_text_that_is_not_utf8_and_bounds_a_long_line() {
    let server = McpServer::stdio(
        "broken",
        StdioCommand::new("sh").args([
            "-c",
            r#"printf 'caf\351: no config\n' >&2; head -c 100000 /dev/zero | tr '\0' a >&2; printf '\nbye\n' >&2; exit 3"#,
        ]),
    );
    let error = bind_error(server).await;
    let source = mcp_error(&error);
    assert_eq!(source.kind, agent_loop::mcp::McpErrorKind::Initialize);
    let stderr = source.stderr.as_deref().unwrap_or_default();
    assert!(stderr.len() <= 4096, "{} bytes kept", stderr.len());
    assert!(
        stderr.ends_with(&format!("{}\nbye\n", "a".repeat(100))),
        "{stderr:?}"
    );

    let short = McpServer::stdio(
        "broken",
        StdioCommand::new("sh").args(["-c", r#"printf 'caf\351: no config\n' >&2; exit 3"#]),
    );
    let error = bind_error(short).await;
    assert_eq!(
        mcp_error(&error).stderr.as_deref(),
        Some("caf\u{FFFD}: no config\n")
    );
}

/// A server (node) that answers `initialize`, then, as its first argument
/// says, refuses `tools/list` (`refuse`) or gives a next cursor for ever
/// (`loop`: `page-2`, then `page-2` again); it runs on after its input
/// closes.
const BAD_TOOLS_LIST: &str = r#"
const mode = process.argv[1];
const lines = require('readline').createInterface({ input: process.stdin });
const send = (message) => console.log(JSON.stringify({ jsonrpc: '2.0', ...message }));
const tool = { name: 'echo', inputSchema: { type: 'object' } };
lines.on('line', (line) => {
  const request = JSON.parse(line);
  if (request.method === 'initialize') send({ id: request.id, result: {
    protocolVersion: request.params.protocolVersion, capabilities: { tools: {} },
    serverInfo: { name: 'bad-tools-list', version: '1.0.0' } } });
  if (request.method === 'tools/list' && mode === 'refuse')
    send({ id: request.id, error: { code: -32603, message: 'the tool registry is down' } });
  if (request.method === 'tools/list' && mode === 'loop')
    send({ id: request.id, result: { tools: [tool], nextCursor: 'page-2' } });
});
setInterval(() => {}, 1000);
"#;

/// A server that initialises but fails `tools/list` is a `ListTools` bind
/// error carrying the server's JSON-RPC error, and its process is stopped
/// (it ignores its input closing, so this takes the `SIGTERM`).
#[tokio::test]
async fn a_server_failing_tools_list_is_a_bind_error_and_is_stopped() {
    if std::env::var_os("AGENT_LOOP_SKIP_NODE_MCP").is_some() {
        return;
    }
    let marker = format!("agent-loop-list-fails-{}", SessionId::new());
    let server = McpServer::stdio(
        "registry",
        StdioCommand::new("node").args(["-e", BAD_TOOLS_LIST, "refuse", &marker]),
    );
    let error = bind_error(server).await;
    assert_eq!(error.name.as_deref(), Some("registry"));
    let source = mcp_error(&error);
    assert_eq!(source.kind, agent_loop::mcp::McpErrorKind::ListTools);
    assert_eq!(
        source.to_string(),
        "MCP server `registry`: `tools/list` failed"
    );
    assert_eq!(
        cause(source),
        "Mcp error: -32603: the tool registry is down"
    );
    assert_no_process_left(&marker).await;
}

/// When another definition fails the bind, a server already started for
/// that binding is stopped too: nothing of the binding is left.
#[tokio::test]
async fn a_bind_failing_on_another_definition_stops_the_server_it_started() {
    let Some(script) = server_script("server-filesystem") else {
        return;
    };
    let workspace = Workspace::new(&[]);
    let marker = workspace.0.to_string_lossy().into_owned();
    let files = McpServer::stdio("files", StdioCommand::new("node").arg(&script).arg(&marker));
    // Fails after the filesystem server is up: it lists no tool `gone`.
    let other = McpServer::stdio("other", StdioCommand::new("node").arg(&script).arg(&marker))
        .prefix("other")
        .allow(["gone"]);
    let error = Definition::builder()
        .name("files-agent")
        .tool(files)
        .tool(other)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap_err();
    assert_eq!(error.name.as_deref(), Some("other"));
    assert_eq!(
        mcp_error(&error).kind,
        agent_loop::mcp::McpErrorKind::UnknownAllowedTool
    );
    assert_no_process_left(&marker).await;
}

/// A result larger than the SDK's 16 MiB message limit is dropped by the
/// client's reader, so the call ends at the call timeout (as documented on
/// `McpServer::call_timeout`), and the server goes on answering.
#[tokio::test]
async fn a_result_over_16_mib_ends_at_the_call_timeout() {
    let Some(script) = server_script("server-filesystem") else {
        return;
    };
    let workspace = Workspace::new(&[("small.txt", "small")]);
    std::fs::write(workspace.0.join("big.txt"), "x".repeat(17 << 20)).unwrap();
    let files = McpServer::stdio(
        "files",
        StdioCommand::new("node").arg(&script).arg(&workspace.0),
    )
    .call_timeout(Duration::from_secs(3));
    let session = bind(files).await;
    let error = session
        .invoke("read_text_file", json!({"path": workspace.path("big.txt")}))
        .await
        .unwrap_err();
    assert_eq!(
        error.message,
        "the tool `read_text_file` failed: the MCP server did not answer within 3 s"
    );
    let output = session
        .invoke(
            "read_text_file",
            json!({"path": workspace.path("small.txt")}),
        )
        .await
        .unwrap();
    assert_eq!(output.text(), "small");
}

/// A server whose `tools/list` pages loop fails the bind at once, naming
/// the cursor, not at the connect timeout with the list growing meanwhile.
#[tokio::test]
async fn a_server_whose_tools_list_pages_loop_fails_the_bind_at_once() {
    if std::env::var_os("AGENT_LOOP_SKIP_NODE_MCP").is_some() {
        return;
    }
    let marker = format!("agent-loop-list-loops-{}", SessionId::new());
    let server = McpServer::stdio(
        "looping",
        StdioCommand::new("node").args(["-e", BAD_TOOLS_LIST, "loop", &marker]),
    )
    .connect_timeout(Duration::from_secs(60));
    let error = bind_error(server).await;
    let source = mcp_error(&error);
    // Not `Timeout`: the loop is seen at its first repeated cursor.
    assert_eq!(source.kind, agent_loop::mcp::McpErrorKind::ListTools);
    assert_eq!(
        source.to_string(),
        "MCP server `looping`: `tools/list` gave the cursor `page-2` twice: its pages loop"
    );
    assert_no_process_left(&marker).await;
}

/// Every warning event: its target and its fields, formatted.
#[derive(Clone, Default)]
struct Warnings(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if *event.metadata().level() == tracing::Level::WARN {
            let mut fields = Fields(format!("{}: ", event.metadata().target()));
            event.record(&mut fields);
            self.0.lock().unwrap().push(fields.0);
        }
    }
}

/// server-everything lists `simulate-research-query` with
/// `execution.taskSupport: "required"` (it answers a plain `tools/call`
/// with an error): it is left out of the binding, and one warning names
/// the server and the tool. The SDK's own `Tool` type drops `execution`;
/// the server's listing is read beside it.
#[test]
fn a_tool_that_only_runs_as_a_task_is_left_out_with_a_warning_naming_server_and_tool() {
    let Some(script) = server_script("server-everything") else {
        return;
    };
    let warnings = Warnings::default();
    let names = crate::common::with_tracing_layer(warnings.clone(), async {
        let session = bind(McpServer::stdio(
            "everything",
            StdioCommand::new("node").arg(&script),
        ))
        .await;
        let names: Vec<String> = session
            .tools()
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
        // The kept tools keep their listed `execution` in their extras.
        let echo = session.tool("echo").unwrap();
        assert_eq!(
            echo.info().extras.fields()["execution"],
            json!({"taskSupport": "forbidden"})
        );
        names
    });
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"simulate-research-query".to_owned()),
        "{names:?}"
    );
    let warnings = warnings.0.lock().unwrap().clone();
    let left_out: Vec<&String> = warnings
        .iter()
        .filter(|warning| warning.contains("tool left out"))
        .collect();
    // One per listing that left it out: the server registers tools after
    // `initialize` (as the TypeScript SDK's `McpServer` does) and says so
    // with `notifications/tools/list_changed`, so the binding may list
    // twice before its first request.
    let expected = "agent_loop_mcp::client: message=tool left out: it can only run as an MCP task (`execution.taskSupport` is \"required\"), which this client does not support server=everything tool=simulate-research-query ";
    assert!(
        (1..=2).contains(&left_out.len()) && left_out.iter().all(|warning| *warning == expected),
        "{warnings:?}"
    );
}

/// Asking for such a tool by name fails the bind: the binding cannot have
/// it.
#[tokio::test]
async fn allowing_a_tool_that_only_runs_as_a_task_fails_the_bind() {
    let Some(script) = server_script("server-everything") else {
        return;
    };
    let error = bind_error(
        McpServer::stdio("everything", StdioCommand::new("node").arg(&script))
            .allow(["echo", "simulate-research-query"]),
    )
    .await;
    let source = mcp_error(&error);
    assert_eq!(source.kind, agent_loop::mcp::McpErrorKind::ToolNeedsTasks);
    assert_eq!(
        source.to_string(),
        "MCP server `everything`: the allowed tool `simulate-research-query` can only run as an MCP task (`execution.taskSupport` is \"required\"), which this client does not support"
    );
}

/// The same over streamable HTTP: server-everything in its
/// `streamableHttp` mode on a loopback port answers `tools/list` with an
/// SSE stream, whose data the binding's HTTP client reads beside the SDK;
/// the task-only tool is left out there too, and the others answer.
#[tokio::test]
async fn over_streamable_http_a_tool_that_only_runs_as_a_task_is_left_out_too() {
    use tokio::io::AsyncBufReadExt;

    let Some(script) = server_script("server-everything") else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = stderr.next_line().await.unwrap() {
            if line.contains("listening on port") {
                return;
            }
        }
        panic!("the server exited before listening");
    })
    .await
    .expect("the server listens within 20 s");
    // Keep reading its standard error, so that it never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });

    let session = bind(McpServer::http(
        "everything",
        agent_loop::mcp::HttpEndpoint::new(format!("http://127.0.0.1:{port}/mcp")),
    ))
    .await;
    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(!names.contains(&"simulate-research-query"), "{names:?}");
    let echo = session
        .invoke("echo", json!({"message": "over HTTP"}))
        .await
        .unwrap();
    assert_eq!(echo.text(), "Echo: over HTTP");
    drop(session);
    let _ = child.kill().await;
}
