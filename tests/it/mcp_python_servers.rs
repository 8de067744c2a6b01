//! Real MCP servers from PyPI, at the versions pinned with hashes in
//! `tests/mcp-servers/requirements.txt` (scripts/test installs them into
//! the virtual environment `tests/mcp-servers/.venv`): the reference
//! servers `mcp-server-time` and `mcp-server-git`, and
//! `tests/mcp-servers/probe_server.py`, written with the official Python SDK
//! for what the pinned npm servers do not show (an image, structured
//! content under an `outputSchema`, progress, silence, a tool error, a
//! process that is killed or exits mid-call). Each is a child process of
//! its binding, run by the environment's Python.
//!
//! Without them these tests fail and say how to install them; a developer
//! without Python sets `AGENT_LOOP_SKIP_PYTHON_MCP=1` to skip only these.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::mcp_in_process::bind;
use crate::mcp_real_servers::{assert_no_process_left, results};
use crate::mcp_session_life::turn_calling;
use agent_loop::conversation::{ContentPart, ImagePart, Message, ModelResponse, ToolCall};
use agent_loop::mcp::{McpCallError, McpServer, StdioCommand};
use agent_loop::tool::ToolProgress;
use agent_loop::turn::{ScriptedModel, TurnEvent};
use agent_loop::{Bound, Definition, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The image the probe's `image` tool answers (its `RED_PIXEL_PNG`).
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

fn servers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers")
}

/// The Python of the servers' virtual environment, installed from the
/// pinned requirements file, or `None` when the developer chose to skip
/// these tests.
pub(crate) fn venv_python() -> Option<PathBuf> {
    let servers = servers_dir();
    let python = servers.join(".venv/bin/python");
    // scripts/test writes this copy once the install succeeded.
    let installed = std::fs::read(servers.join(".venv/.installed-requirements.txt")).ok();
    let pinned = std::fs::read(servers.join("requirements.txt")).unwrap();
    if python.is_file() && installed.as_deref() == Some(pinned.as_slice()) {
        return Some(python);
    }
    if std::env::var_os("AGENT_LOOP_SKIP_PYTHON_MCP").is_some() {
        eprintln!(
            "skipped: the Python MCP servers are not installed and AGENT_LOOP_SKIP_PYTHON_MCP is set"
        );
        return None;
    }
    panic!(
        "the Python MCP test servers are not installed, or were installed from another \
         requirements file: run scripts/test, or `python3.11 -m venv tests/mcp-servers/.venv && \
         tests/mcp-servers/.venv/bin/pip install --require-hashes --only-binary :all: \
         -r tests/mcp-servers/requirements.txt && cp tests/mcp-servers/requirements.txt \
         tests/mcp-servers/.venv/.installed-requirements.txt`, or set \
         AGENT_LOOP_SKIP_PYTHON_MCP=1 to skip the tests that need them"
    );
}

/// A command running `python` with `arguments`, and the marker its command
/// line carries: CPython keeps a `-X` option it does not know in
/// `sys._xoptions` and otherwise ignores it, so every server, even one
/// that refuses unknown arguments, can be found by this test alone.
fn python_server(
    python: &Path,
    arguments: impl IntoIterator<Item = impl Into<OsString>>,
) -> (StdioCommand, String) {
    let marker = format!("agent_loop_test={}", SessionId::new());
    let command = StdioCommand::new(python)
        .args(["-X", &marker])
        .args(arguments);
    (command, marker)
}

/// The probe server, and its marker.
fn probe(python: &Path) -> (McpServer, String) {
    let (command, marker) = python_server(python, [servers_dir().join("probe_server.py")]);
    (McpServer::stdio("probe", command), marker)
}

/// Days since 1970-01-01 of a date of the proleptic Gregorian calendar
/// (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The English name of the weekday of a day counted from 1970-01-01 (a
/// Thursday), as Python's `%A` writes it.
fn weekday(days: i64) -> &'static str {
    const NAMES: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    NAMES[days.rem_euclid(7) as usize]
}

/// Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS±HH:MM`, the form
/// Python's `isoformat(timespec="seconds")` writes.
fn unix_seconds(datetime: &str) -> i64 {
    assert_eq!(
        datetime.len(),
        25,
        "not YYYY-MM-DDTHH:MM:SS±HH:MM: {datetime}"
    );
    let number = |from: usize, to: usize| -> i64 {
        datetime[from..to]
            .parse()
            .unwrap_or_else(|_| panic!("not YYYY-MM-DDTHH:MM:SS±HH:MM: {datetime}"))
    };
    let sign = if &datetime[19..20] == "-" { -1 } else { 1 };
    let offset = sign * (number(20, 22) * 3600 + number(23, 25) * 60);
    days_from_civil(number(0, 4), number(5, 7), number(8, 10)) * 86_400
        + number(11, 13) * 3600
        + number(14, 16) * 60
        + number(17, 19)
        - offset
}

fn now_unix_seconds() -> i64 {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap();
    i64::try_from(now.as_secs()).unwrap()
}

/// The JSON of a tool's text output (the time server writes its result as
/// indented JSON text beside `structuredContent`; the text is what the
/// model reads).
async fn json_answer(session: &Definition<Bound>, tool: &str, arguments: Value) -> Value {
    let output = session.invoke(tool, arguments).await.unwrap();
    serde_json::from_str(&output.text()).unwrap_or_else(|error| panic!("{error}: {output:?}"))
}

#[tokio::test]
async fn time_server_tells_the_utc_time_and_converts_tokyo_noon_to_kolkata_exactly() {
    let Some(python) = venv_python() else {
        return;
    };
    let (command, marker) = python_server(
        &python,
        ["-m", "mcp_server_time", "--local-timezone", "UTC"],
    );
    let session = bind(McpServer::stdio("time", command)).await;
    // No tool handle outlives its statement: a handle holds the tools it
    // was taken from, and so the server, after the session is dropped.
    let names: Vec<String> = session
        .tools()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    assert_eq!(names, ["get_current_time", "convert_time"]);
    let read_only = session
        .tool("get_current_time")
        .unwrap()
        .info()
        .annotations()
        .read_only_hint;
    assert_eq!(read_only, Some(true));

    let answer = json_answer(&session, "get_current_time", json!({"timezone": "UTC"})).await;
    let datetime = answer["datetime"].as_str().expect("a datetime").to_owned();
    assert!(datetime.ends_with("+00:00"), "{answer}");
    let seconds = unix_seconds(&datetime);
    let now = now_unix_seconds();
    assert!(
        (now - seconds).abs() <= 60,
        "{datetime} is not within a minute of now"
    );
    let day = seconds.div_euclid(86_400);
    assert_eq!(
        answer,
        json!({
            "timezone": "UTC",
            "datetime": datetime,
            "day_of_week": weekday(day),
            "is_dst": false,
        })
    );

    // Neither zone has daylight saving time: noon in Tokyo (UTC+9) is
    // 08:30 in Kolkata (UTC+5:30), on the same day, every day of the year.
    // The server converts on today's date in Tokyo: the day before the
    // call, or after it, should midnight pass meanwhile.
    let tokyo_day = || (now_unix_seconds() + 9 * 3600).div_euclid(86_400);
    let before = tokyo_day();
    let answer = json_answer(
        &session,
        "convert_time",
        json!({"source_timezone": "Asia/Tokyo", "time": "12:00", "target_timezone": "Asia/Kolkata"}),
    )
    .await;
    let after = tokyo_day();
    let source = answer["source"]["datetime"].as_str().expect("a datetime");
    let date = source.get(..10).expect("a date").to_owned();
    let day = unix_seconds(source).div_euclid(86_400);
    assert!(
        day == before || day == after,
        "{date} is not today in Tokyo"
    );
    assert_eq!(
        answer,
        json!({
            "source": {
                "timezone": "Asia/Tokyo",
                "datetime": format!("{date}T12:00:00+09:00"),
                "day_of_week": weekday(day),
                "is_dst": false,
            },
            "target": {
                "timezone": "Asia/Kolkata",
                "datetime": format!("{date}T08:30:00+05:30"),
                "day_of_week": weekday(day),
                "is_dst": false,
            },
            "time_difference": "-3.5h",
        })
    );

    drop(session);
    assert_no_process_left(&marker).await;
}

/// A fresh Git repository with one commit, removed when dropped.
struct Repository {
    path: PathBuf,
    head: String,
}

impl Repository {
    const AUTHOR: &str = "Ada Lovelace";
    const DATE: &str = "2024-01-15T14:30:25+00:00";
    const MESSAGE: &str = "Add the notes";

    fn new() -> Self {
        let path = std::env::temp_dir().join(format!("agent-loop-git-{}", SessionId::new()));
        std::fs::create_dir_all(&path).unwrap();
        // The server resolves symbolic links; the test compares paths with
        // what it sees.
        let path = path.canonicalize().unwrap();
        std::fs::write(path.join("notes.txt"), "one note\n").unwrap();
        let git = |arguments: &[&str]| {
            // No user or system configuration, here or in the server: the
            // repository and the server's answers do not depend on the
            // machine's settings.
            let output = std::process::Command::new("git")
                .args(arguments)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .current_dir(&path)
                .env("GIT_AUTHOR_NAME", Self::AUTHOR)
                .env("GIT_AUTHOR_EMAIL", "ada@example.com")
                .env("GIT_AUTHOR_DATE", Self::DATE)
                .env("GIT_COMMITTER_NAME", Self::AUTHOR)
                .env("GIT_COMMITTER_EMAIL", "ada@example.com")
                .env("GIT_COMMITTER_DATE", Self::DATE)
                .output()
                .expect("git runs");
            assert!(output.status.success(), "git {arguments:?}: {output:?}");
            String::from_utf8(output.stdout).unwrap()
        };
        git(&["init", "--quiet", "--initial-branch=main"]);
        git(&["add", "notes.txt"]);
        git(&["commit", "--quiet", "--message", Self::MESSAGE]);
        let head = git(&["rev-parse", "HEAD"]).trim().to_owned();
        Self { path, head }
    }
}

impl Drop for Repository {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[tokio::test]
async fn git_server_on_a_fresh_repository_shows_its_commit_in_status_and_log() {
    let Some(python) = venv_python() else {
        return;
    };
    let repository = Repository::new();
    let (command, marker) = python_server(
        &python,
        [
            OsString::from("-m"),
            "mcp_server_git".into(),
            "--repository".into(),
            repository.path.clone().into(),
        ],
    );
    let command = command
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1");
    let session = bind(McpServer::stdio("git", command).allow(["git_status", "git_log"])).await;
    let path = repository.path.to_string_lossy().into_owned();

    let status = session
        .invoke("git_status", json!({"repo_path": path}))
        .await
        .unwrap();
    assert_eq!(
        status.text(),
        "Repository status:\nOn branch main\nnothing to commit, working tree clean"
    );
    let log = session
        .invoke("git_log", json!({"repo_path": path}))
        .await
        .unwrap();
    assert_eq!(
        log.text(),
        format!(
            "Commit history:\nCommit: {}\nAuthor: {}\nDate: 2024-01-15 14:30:25+00:00\nMessage: {}\n\n",
            repository.head,
            Repository::AUTHOR,
            Repository::MESSAGE,
        )
    );
    // The server is confined to its repository: its refusal is the call's
    // error result, and the server goes on.
    let outside = session
        .invoke("git_status", json!({"repo_path": "/"}))
        .await
        .unwrap_err();
    assert_eq!(
        outside.message,
        format!(
            "the tool `git_status` failed: Error executing tool git_status: Repository path '/' \
             is outside the allowed repository '{path}'"
        )
    );
    let again = session
        .invoke("git_status", json!({"repo_path": path}))
        .await
        .unwrap();
    assert_eq!(again.text(), status.text());

    drop(session);
    assert_no_process_left(&marker).await;
}

#[tokio::test]
async fn probe_image_and_structured_results_reach_the_turn_exactly() {
    let Some(python) = venv_python() else {
        return;
    };
    let (server, marker) = probe(&python);
    let session = bind(server).await;
    let output_schema = session.tool("add").unwrap().info().extras.fields()["outputSchema"].clone();
    assert_eq!(
        output_schema,
        json!({
            "type": "object",
            "title": "Sum",
            "properties": {
                "a": {"title": "A", "type": "integer"},
                "b": {"title": "B", "type": "integer"},
                "sum": {"title": "Sum", "type": "integer"},
            },
            "required": ["a", "b", "sum"],
        })
    );

    let model = ScriptedModel::new([
        ModelResponse::tool_calls([
            ToolCall::new("picture", "image", "{}"),
            ToolCall::new("sum", "add", r#"{"a": 2, "b": 3}"#),
        ]),
        ModelResponse::answer("done"),
    ]);
    let mut conversation = vec![Message::user("go")];
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let results = results(&conversation);
    assert!(!results[0].is_error);
    assert_eq!(
        results[0].content,
        [ContentPart::Image(ImagePart::base64(
            "image/png",
            RED_PIXEL_PNG
        ))]
    );
    // No text block: the structured content is the result.
    assert!(!results[1].is_error);
    assert_eq!(results[1].text(), r#"{"a":2,"b":3,"sum":5}"#);
    let output = session
        .invoke("add", json!({"a": 40, "b": 2}))
        .await
        .unwrap();
    assert_eq!(output, json!({"a": 40, "b": 2, "sum": 42}));

    drop(session);
    assert_no_process_left(&marker).await;
}

#[tokio::test]
async fn probe_exception_is_an_error_result_naming_its_message() {
    let Some(python) = venv_python() else {
        return;
    };
    let (server, marker) = probe(&python);
    let session = bind(server).await;
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new(
            "failing",
            "fail",
            r#"{"message": "the disk is full"}"#,
        )]),
        ModelResponse::answer("done"),
    ]);
    let mut conversation = vec![Message::user("go")];
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let results = results(&conversation);
    assert!(results[0].is_error);
    assert_eq!(
        results[0].text(),
        "the tool `fail` failed: Error executing tool fail: the disk is full"
    );
    let error = session
        .invoke("fail", json!({"message": "again"}))
        .await
        .unwrap_err();
    let source = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<McpCallError>())
        .expect("the typed call error");
    assert!(
        matches!(source, McpCallError::Tool { text } if text == "Error executing tool fail: again"),
        "{source:?}"
    );

    drop(session);
    assert_no_process_left(&marker).await;
}

#[tokio::test]
async fn probe_progress_every_300_ms_for_3_s_outlasts_a_1_s_call_timeout_and_reaches_the_events() {
    let Some(python) = venv_python() else {
        return;
    };
    let (server, marker) = probe(&python);
    let session = bind(server.call_timeout(Duration::from_secs(1))).await;
    let (result, events) = turn_calling(
        &session,
        "progress",
        json!({"steps": 10, "interval_s": 0.3}),
    )
    .await;
    assert_eq!(result, "done after 10 steps");
    let progress: Vec<ToolProgress> = events
        .into_iter()
        .filter_map(|event| match event {
            TurnEvent::ToolCallProgress {
                tool_call_id,
                tool_name,
                progress,
            } => {
                assert_eq!(
                    (tool_call_id.as_str(), tool_name.as_str()),
                    ("call_1", "progress")
                );
                Some(progress)
            }
            _ => None,
        })
        .collect();
    let expected: Vec<ToolProgress> = (1..=10)
        .map(|step| {
            ToolProgress::new(f64::from(step))
                .total(10.0)
                .message(format!("step {step}"))
        })
        .collect();
    assert_eq!(progress, expected);

    drop(session);
    assert_no_process_left(&marker).await;
}

#[tokio::test]
async fn probe_sleeping_3_s_is_cut_by_a_1_s_call_timeout_and_the_server_goes_on() {
    let Some(python) = venv_python() else {
        return;
    };
    let (server, marker) = probe(&python);
    let session = bind(server.call_timeout(Duration::from_secs(1))).await;
    let pid = session.invoke("pid", json!({})).await.unwrap().text();
    let started = Instant::now();
    let error = session
        .invoke("sleep", json!({"seconds": 3}))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(
        error.message,
        "the tool `sleep` failed: the MCP server did not answer within 1 s"
    );
    let source = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<McpCallError>())
        .expect("the typed call error");
    assert!(
        matches!(source, McpCallError::Timeout { timeout } if *timeout == Duration::from_secs(1)),
        "{source:?}"
    );
    assert!(
        elapsed < Duration::from_millis(2500),
        "cut after {elapsed:?}"
    );
    // The same server answers the next call: a timeout is no restart.
    let again = session.invoke("pid", json!({})).await.unwrap().text();
    assert_eq!(again, pid);

    drop(session);
    assert_no_process_left(&marker).await;
}

/// Waits up to 10 s for the process `pid` to have exited: a zombie until
/// its parent reaps it, or gone. Its main thread shows as a zombie as soon
/// as it exits, while the other threads (the SDK's workers) may still run
/// and hold the process's pipes open: the process has exited once that
/// thread is its only one left.
async fn wait_for_exit(pid: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).map(Iterator::count);
        match std::fs::read_to_string(format!("/proc/{pid}/status")) {
            Err(_) => return,
            Ok(status) if status.contains("State:\tZ") && matches!(threads, Ok(1) | Err(_)) => {
                return;
            }
            Ok(_) => {}
        }
        assert!(Instant::now() < deadline, "process {pid} still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn restarted(events: &[TurnEvent], tool_name: &str) -> bool {
    events.contains(&TurnEvent::ToolServerRestarted {
        tool_call_id: "call_1".into(),
        tool_name: tool_name.into(),
        server: "probe".into(),
    })
}

/// A server killed between two calls is found gone before the second is
/// sent: it is started again and the call goes to the new process.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn probe_killed_between_two_calls_is_restarted_and_answers_with_a_new_pid() {
    let Some(python) = venv_python() else {
        return;
    };
    let (server, marker) = probe(&python);
    let session = bind(server).await;
    let first = session.invoke("pid", json!({})).await.unwrap().text();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_for_exit(&first).await;

    let (second, events) = turn_calling(&session, "pid", json!({})).await;
    assert!(second.parse::<u32>().is_ok(), "{second}");
    assert_ne!(second, first);
    assert!(restarted(&events, "pid"), "{events:?}");
    // The binding keeps the new server.
    let third = session.invoke("pid", json!({})).await.unwrap().text();
    assert_eq!(third, second);

    drop(session);
    assert_no_process_left(&marker).await;
}

/// A server that exits in the middle of a call may have done the call's
/// work: the call is not sent again (the tool is not idempotent), its
/// result says so, and the next call reaches the restarted server.
#[tokio::test]
async fn probe_exiting_mid_call_is_restarted_and_the_call_says_so() {
    let Some(python) = venv_python() else {
        return;
    };
    let (server, marker) = probe(&python);
    let session = bind(server).await;
    let first = session.invoke("pid", json!({})).await.unwrap().text();
    let (result, events) = turn_calling(&session, "crash", json!({})).await;
    assert_eq!(
        result,
        "the tool `crash` failed: the MCP server stopped during the call and was restarted; \
         the call was not sent again, as the tool is not marked idempotent, so it may or may \
         not have taken effect"
    );
    assert!(restarted(&events, "crash"), "{events:?}");
    let second = session.invoke("pid", json!({})).await.unwrap().text();
    assert!(second.parse::<u32>().is_ok(), "{second}");
    assert_ne!(second, first);

    drop(session);
    assert_no_process_left(&marker).await;
}

/// The probe adds a tool and says so (`notifications/tools/list_changed`
/// from the Python SDK), then removes it: the next requests of the turn
/// offer it, then not, and a call of it after its removal answers that it
/// is no longer offered.
#[tokio::test]
async fn probe_tools_added_and_removed_at_run_time_reach_the_next_requests() {
    let Some(python) = venv_python() else {
        return;
    };
    let (server, marker) = probe(&python);
    let session = bind(server).await;
    let call =
        |id: &str, name: &str, arguments: Value| ToolCall::new(id, name, arguments.to_string());
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([call("call_1", "add_tool", json!({"name": "late"}))]),
        ModelResponse::tool_calls([call("call_2", "late", json!({}))]),
        ModelResponse::tool_calls([call("call_3", "remove_tool", json!({"name": "late"}))]),
        ModelResponse::tool_calls([call("call_4", "late", json!({}))]),
        ModelResponse::answer("done"),
    ]);
    let mut conversation = vec![Message::user("go")];
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let offers_late: Vec<bool> = model
        .requests()
        .iter()
        .map(|request| request.tool_names.iter().any(|name| name == "late"))
        .collect();
    // The SDK writes the notification before the call's answer, and the
    // client counts it before the turn goes on.
    assert_eq!(offers_late, [false, true, true, false, false]);
    let texts: Vec<(String, bool)> = results(&conversation)
        .iter()
        .map(|result| (result.text(), result.is_error))
        .collect();
    assert_eq!(
        texts,
        [
            ("added late".to_owned(), false),
            ("I am late".to_owned(), false),
            ("removed late".to_owned(), false),
            (
                "tool `late` is no longer offered: `probe` changed its tools; available tools: "
                    .to_owned()
                    + &model.requests()[4].tool_names.join(", "),
                true
            ),
        ]
    );
    drop(session);
    assert_no_process_left(&marker).await;
}
