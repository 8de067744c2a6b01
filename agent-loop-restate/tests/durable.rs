//! Durable turns against the real Restate server (pinned, started on free
//! loopback ports by `agent_loop_test::restate_server`), served by the crate's `durable`
//! example as a child process that the tests kill with SIGKILL: a turn
//! that runs, pauses and goes on with a decision; a decision sent twice at
//! once; a crash during a tool call, during a model request and while
//! paused (with the server restarted too). Each time: every completed
//! tool call's side effect (a line in the file) happened exactly once,
//! every tool call id has exactly one result, and the final conversation
//! equals an uncrashed run's.

use agent_loop_test::restate_server as support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{RestateServer, ServiceProcess, free_port, http_client};

/// The example's program, built by `cargo build -p agent-loop-restate
/// --example durable` (scripts/test builds it before the tests: `cargo
/// test --all-targets` builds examples as test harnesses, not as the
/// programs they are).
fn example_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let binary = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .join("examples")
        .join("durable");
    assert!(
        binary.is_file(),
        "{} is missing: build it first (cargo build -p agent-loop-restate --example durable)",
        binary.display()
    );
    binary
}

/// The server, the example serving on a free port (registered), and the
/// file its tools write to.
struct World {
    server: RestateServer,
    service: ServiceProcess,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

/// The example serving on a free port, its tools writing to `file` and
/// each execution's session and tool call id to `file` + `.runs`.
async fn start_service(file: &Path, envs: &[(&str, &str)]) -> ServiceProcess {
    let port = free_port();
    let runs = runs_file(file).display().to_string();
    let envs = envs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .chain([("DURABLE_RUNS_FILE".to_owned(), runs)]);
    ServiceProcess::start(
        example_binary(),
        [
            "--port".to_owned(),
            port.to_string(),
            "--file".to_owned(),
            file.display().to_string(),
        ],
        envs,
        port,
    )
    .await
}

async fn world(envs: &[(&str, &str)]) -> Option<World> {
    let server = RestateServer::start().await?;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("notes.txt");
    let service = start_service(&file, envs).await;
    server
        .register(&service.url())
        .await
        .expect("the deployment registers");
    Some(World {
        server,
        service,
        file,
        _dir: dir,
    })
}

impl World {
    /// POSTs `body` to `path` on the ingress; no body for `Value::Null`
    /// (a handler that takes no input refuses one).
    async fn post(&self, path: &str, body: Value) -> (reqwest::StatusCode, Value) {
        let request = http_client().post(format!("{}/{path}", self.server.ingress_url()));
        let request = if body.is_null() {
            request
        } else {
            request.json(&body)
        };
        let response = request.send().await.expect("the ingress answers");
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Sends a turn of session `key` without waiting for it.
    async fn send_turn(&self, key: &str, message: &str) {
        let (status, body) = self
            .post(
                &format!("AgentSession/{key}/turn/send"),
                json!({ "message": message }),
            )
            .await;
        assert!(status.is_success(), "{status}: {body}");
    }

    /// The session's paused turn, once it waits (60 s at most).
    async fn pending(&self, key: &str) -> Value {
        self.poll(&format!("AgentSession/{key}/pending")).await
    }

    /// The session's last outcome, once its turn ended (60 s at most).
    async fn outcome(&self, key: &str) -> Value {
        self.poll(&format!("AgentSession/{key}/outcome")).await
    }

    async fn poll(&self, path: &str) -> Value {
        for _ in 0..600 {
            let (status, body) = self.post(path, Value::Null).await;
            if status.is_success() && !body.is_null() {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "{path} gave nothing in 60 s\nservice log:\n{}\nserver log:\n{}",
            self.service.log(),
            self.server.log()
        );
    }

    async fn conversation(&self, key: &str) -> Value {
        self.post(&format!("AgentSession/{key}/conversation"), Value::Null)
            .await
            .1
    }

    /// The `decide` path of the first pending call of the session's paused
    /// turn, and that call, once its decision object knows of it (10 s at
    /// most).
    async fn first_decision(&self, key: &str) -> (String, Value) {
        let pending = self.pending(key).await;
        let call = pending["paused"]["pending"][0].clone();
        let object = format!(
            "AgentDecision/{}",
            pending["decision_keys"][0].as_str().unwrap_or("")
        );
        for _ in 0..100 {
            let (_, waiting) = self.post(&format!("{object}/waiting"), Value::Null).await;
            if waiting == Value::Bool(true) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (format!("{object}/decide"), call)
    }

    /// Approves every pending call of the session's paused turn.
    async fn approve_all(&self, key: &str) {
        let pending = self.pending(key).await;
        let calls = pending["paused"]["pending"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let keys = pending["decision_keys"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(calls.len(), keys.len());
        for (call, decision_key) in calls.iter().zip(keys) {
            let decision = json!({
                "tool_call_id": call["tool_call_id"],
                "mac": call["mac"],
                "decision": { "type": "approve" }
            });
            let path = format!(
                "AgentDecision/{}/decide",
                decision_key.as_str().unwrap_or("")
            );
            // The decision object learns of the call with a one-way call:
            // a decision that comes first is answered 404, and sent again.
            let mut answered = None;
            for _ in 0..100 {
                let (status, body) = self.post(&path, decision.clone()).await;
                if status != reqwest::StatusCode::NOT_FOUND {
                    answered = Some((status, body));
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let (status, body) = answered.expect("the decision object learns of the call");
            assert!(status.is_success(), "{status}: {body}");
        }
    }

    /// Approves the session's paused turn and checks its end: completed,
    /// each line of `text` once, one result per call, the conversation
    /// `reference` (an uncrashed run's).
    async fn ends_as(&self, key: &str, text: &str, reference: &Value) {
        self.approve_all(key).await;
        let outcome = self.outcome(key).await;
        assert_eq!(outcome["status"], "completed", "{outcome}");
        assert_eq!(self.lines(), expected_lines(text));
        let conversation = self.conversation(key).await;
        assert_one_result_per_call(&conversation);
        assert_eq!(conversation, *reference);
    }

    /// How many times each call ran, by `session id/tool call id`, as the
    /// example's execution log counts them.
    fn runs(&self) -> std::collections::BTreeMap<String, usize> {
        let mut runs: std::collections::BTreeMap<String, usize> = Default::default();
        for id in std::fs::read_to_string(runs_file(&self.file))
            .unwrap_or_default()
            .lines()
        {
            *runs.entry(id.to_owned()).or_default() += 1;
        }
        runs
    }

    /// Every call ran exactly once, but those in `cut` (the crash cut them:
    /// once or twice).
    fn assert_each_call_ran_once_but(&self, cut: &[&str]) {
        let runs = self.runs();
        assert!(!runs.is_empty(), "no call ran");
        for (id, count) in &runs {
            if cut.iter().any(|cut| id.ends_with(&format!("/{cut}"))) {
                assert!(*count <= 2, "{id} ran {count} times: {runs:?}");
            } else {
                assert_eq!(*count, 1, "{id} ran {count} times: {runs:?}");
            }
        }
    }

    /// The lines the tools wrote, without their idempotency keys, sorted:
    /// the calls of a batch run at once and write in any order.
    fn lines(&self) -> Vec<String> {
        lines_of(&self.file)
    }

    /// Waits until a journal entry named `name` is written (30 s at most).
    async fn wait_for_journal_entry(&self, name: &str) {
        let sql = format!("select count(*) as n from sys_journal where name = '{name}'");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut rows = Vec::new();
        while std::time::Instant::now() < deadline {
            rows = self.server.query(&sql).await;
            if rows.first().and_then(|row| row["n"].as_u64()).unwrap_or(0) > 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "no journal entry `{name}` in 30 s (last answer {rows:?}):\n{}",
            self.service.log()
        );
    }

    /// Waits until the file holds `count` lines (30 s at most).
    async fn wait_for_lines(&self, count: usize) {
        for _ in 0..300 {
            if self.lines().len() >= count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the file never held {count} lines:\n{}", self.service.log());
    }
}

/// Where the example logs each execution of a call next to `file`.
fn runs_file(file: &Path) -> PathBuf {
    file.with_extension("runs")
}

/// The lines of `file` without their idempotency keys, sorted.
fn lines_of(file: &Path) -> Vec<String> {
    let mut lines: Vec<String> = std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|line| line.split(" [").next().unwrap_or(line).to_owned())
        .collect();
    lines.sort();
    lines
}

/// The lines the first batch of a turn on `text` writes, sorted.
fn appended_lines(text: &str) -> Vec<String> {
    vec![format!("first: {text}"), format!("second: {text}")]
}

/// The lines an uncrashed turn on `text` writes, sorted.
fn expected_lines(text: &str) -> Vec<String> {
    let mut lines = appended_lines(text);
    lines.push(format!("note: {text}"));
    lines.sort();
    lines
}

/// Every tool call id of `conversation` has exactly one result.
fn assert_one_result_per_call(conversation: &Value) {
    let messages = conversation.as_array().expect("a conversation");
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for message in messages {
        match message["role"].as_str() {
            Some("assistant") => {
                for part in message["content"].as_array().into_iter().flatten() {
                    if part["type"] == "tool_call" {
                        calls.push(part["id"].as_str().unwrap_or("").to_owned());
                    }
                }
            }
            Some("tool") => results.push(message["tool_call_id"].as_str().unwrap_or("").to_owned()),
            _ => {}
        }
    }
    calls.sort();
    results.sort();
    assert_eq!(calls, results, "{conversation:#}");
}

/// The conversation of an uncrashed turn on `text`, from a world of its
/// own.
async fn uncrashed_conversation(text: &str) -> Value {
    let Some(world) = world(&[]).await else {
        return Value::Null;
    };
    world.send_turn("reference", text).await;
    world.approve_all("reference").await;
    let outcome = world.outcome("reference").await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    world.conversation("reference").await
}

#[tokio::test]
async fn a_turn_runs_pauses_for_a_decision_and_ends_with_each_call_once() {
    let Some(world) = world(&[]).await else {
        return;
    };
    world.send_turn("alice", "buy milk").await;
    let pending = world.pending("alice").await;
    assert_eq!(pending["paused"]["pending"][0]["tool_name"], "write_note");
    assert!(
        pending["paused"]["pending"][0]["mac"].is_string(),
        "signed: {pending}"
    );
    // The two appends ran before the pause; the note waits.
    assert_eq!(world.lines(), appended_lines("buy milk"));
    // The README's walk-through decides this very call by its decision key
    // and MAC, written out: they must be this run's.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("the workspace README");
    for (what, value) in [
        ("decision key", &pending["decision_keys"][0]),
        ("MAC", &pending["paused"]["pending"][0]["mac"]),
    ] {
        let value = value.as_str().unwrap_or_default();
        assert!(
            !value.is_empty() && readme.contains(value),
            "the README's durable walk-through lacks this run's {what} {value}"
        );
    }
    world.approve_all("alice").await;
    let outcome = world.outcome("alice").await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(outcome["answer"], "Noted: buy milk");
    assert_eq!(world.lines(), expected_lines("buy milk"));
    world.assert_each_call_ran_once_but(&[]);
    let conversation = world.conversation("alice").await;
    assert_one_result_per_call(&conversation);
    assert_eq!(conversation.as_array().map(Vec::len), Some(7));
}

#[tokio::test]
async fn two_decisions_sent_at_once_for_one_call_take_effect_once() {
    let Some(world) = world(&[]).await else {
        return;
    };
    world.send_turn("bob", "call mum").await;
    let (path, call) = world.first_decision("bob").await;
    let decision = json!({
        "tool_call_id": call["tool_call_id"],
        "mac": call["mac"],
        "decision": { "type": "approve" }
    });
    let (one, two) = tokio::join!(
        world.post(&path, decision.clone()),
        world.post(&path, decision.clone())
    );
    let mut statuses = [one.0.as_u16(), two.0.as_u16()];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "{one:?} {two:?}");
    let outcome = world.outcome("bob").await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(world.lines(), expected_lines("call mum"));
    // The approved note ran once, whichever decision won.
    world.assert_each_call_ran_once_but(&[]);
}

#[tokio::test]
async fn a_crash_during_a_tool_call_runs_each_completed_call_once() {
    let reference = uncrashed_conversation("water plants").await;
    // One call at a time, so the crash comes right after the first call's
    // result was journaled, with the second one running: the second's
    // `ctx.run` is journaled only once the first one's result is.
    // Each call shorter than the server's inactivity timeout (3 s here): a
    // step that runs longer is cut by the server and run again (with a 1 s
    // timeout, a 1.5 s call ran three times).
    let envs = [("DURABLE_TOOL_DELAY_MS", "1500"), ("DURABLE_PARALLEL", "1")];
    let Some(mut world) = world(&envs).await else {
        return;
    };
    world.send_turn("carol", "water plants").await;
    // The first append is done and journaled; the second sleeps: kill it.
    world.wait_for_journal_entry("tool call call_1_2").await;
    world.service.kill9();
    assert_eq!(world.lines(), ["first: water plants"]);
    world.service.restart().await;
    world.ends_as("carol", "water plants", &reference).await;
    // The first call was journaled before the crash: it never ran again.
    world.assert_each_call_ran_once_but(&["call_1_2"]);
}

#[tokio::test]
async fn a_crash_during_a_model_request_asks_again_and_runs_each_call_once() {
    let reference = uncrashed_conversation("feed cat").await;
    let Some(mut world) = world(&[("DURABLE_MODEL_DELAY_MS", "1500")]).await else {
        return;
    };
    world.send_turn("dave", "feed cat").await;
    // The first request is out (nothing written yet): kill it.
    tokio::time::sleep(Duration::from_millis(700)).await;
    world.service.kill9();
    assert!(world.lines().is_empty());
    world.service.restart().await;
    world.ends_as("dave", "feed cat", &reference).await;
    world.assert_each_call_ran_once_but(&[]);
}

#[tokio::test]
async fn a_paused_turn_survives_a_restart_of_the_service_and_the_server() {
    let reference = uncrashed_conversation("pay rent").await;
    let Some(mut world) = world(&[]).await else {
        return;
    };
    world.send_turn("erin", "pay rent").await;
    let before = world.pending("erin").await;
    world.service.kill9();
    world.server.crash_and_restart().await;
    world.service.restart().await;
    let after = world.pending("erin").await;
    assert_eq!(after, before, "the pause is the same after both restarts");
    world.approve_all("erin").await;
    let outcome = world.outcome("erin").await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(world.lines(), expected_lines("pay rent"));
    world.assert_each_call_ran_once_but(&[]);
    assert_eq!(world.conversation("erin").await, reference);
}

/// A pause that waits across a deploy stays on the deployment that
/// started it: with a new version registered as a new deployment (a
/// second process, its own file), new turns go to the new one, and the
/// paused turn, decided after the deploy, ends on the old one, which is
/// kept until its invocations finish.
#[tokio::test]
async fn a_paused_turn_decided_after_a_deploy_ends_on_the_deployment_that_started_it() {
    let Some(world) = world(&[]).await else {
        return;
    };
    world.send_turn("frank", "old version").await;
    world.pending("frank").await;

    // The new version: another process, registered as a new deployment.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let new_file = dir.path().join("notes.txt");
    let new_version = start_service(&new_file, &[]).await;
    world
        .server
        .register(&new_version.url())
        .await
        .expect("the new version registers");

    world.send_turn("gina", "new version").await;
    world.pending("gina").await;
    world.approve_all("frank").await;
    let outcome = world.outcome("frank").await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    // The paused turn ended where it started; the new one runs on the new.
    assert_eq!(world.lines(), expected_lines("old version"));
    assert_eq!(lines_of(&new_file), appended_lines("new version"));
}

/// A loopback TCP proxy in front of service processes: each connection
/// goes to the next backend that accepts it, so one deployment URL serves
/// several processes, and a killed one's connections move to the others.
async fn proxy(backends: Vec<u16>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("its address").port();
    tokio::spawn(async move {
        let mut next = 0usize;
        while let Ok((mut inbound, _)) = listener.accept().await {
            let mut outbound = None;
            for attempt in 0..backends.len() {
                let backend = backends[(next + attempt) % backends.len()];
                if let Ok(stream) = tokio::net::TcpStream::connect(("127.0.0.1", backend)).await {
                    outbound = Some(stream);
                    next = (next + attempt + 1) % backends.len();
                    break;
                }
            }
            let Some(mut outbound) = outbound else {
                continue;
            };
            tokio::spawn(async move {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            });
        }
    });
    port
}

/// Two service processes behind one deployment, 100 sessions, one process
/// killed half-way: every turn finishes, and every line is written once (a
/// call the kill cut after its line was written runs again, and the tool
/// finds its line by the call's idempotency key).
#[tokio::test]
async fn a_hundred_sessions_on_two_processes_one_killed_half_way_all_finish_once() {
    let Some(server) = RestateServer::start().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("notes.txt");
    let mut services = Vec::new();
    for _ in 0..2 {
        services.push(start_service(&file, &[("DURABLE_TOOL_DELAY_MS", "50")]).await);
    }
    let front = proxy(services.iter().map(ServiceProcess::port).collect()).await;
    server
        .register(&format!("http://127.0.0.1:{front}/"))
        .await
        .expect("the deployment registers");
    let world = World {
        server,
        service: services.remove(0),
        file,
        _dir: dir,
    };
    let mut second = services.remove(0);
    let sessions: Vec<String> = (0..100).map(|n| format!("s{n}")).collect();
    for session in &sessions {
        world.send_turn(session, session).await;
    }
    // Half-way: about half the appends are done.
    world.wait_for_lines(100).await;
    second.kill9();
    for session in &sessions {
        world.approve_all(session).await;
    }
    for session in &sessions {
        let outcome = world.outcome(session).await;
        assert_eq!(outcome["status"], "completed", "{session}: {outcome}");
    }
    let lines = world.lines();
    let mut expected: Vec<String> = sessions
        .iter()
        .flat_map(|session| expected_lines(session))
        .collect();
    expected.sort();
    assert_eq!(lines, expected, "every line once");
    // Only a call the kill cut (running, or ended but not yet journaled)
    // ran twice; none more.
    let runs = world.runs();
    assert_eq!(runs.len(), 300, "three calls of each session ran");
    assert!(runs.values().all(|count| *count <= 2), "{runs:?}");
    let again = runs.values().filter(|count| **count == 2).count();
    println!("calls run again after the kill: {again} of {}", runs.len());
}

/// A model error is the turn's end, journaled (`failed`, its line in the
/// report), not a step retried for ever; and the session takes its next
/// turn.
#[tokio::test]
async fn a_model_error_fails_the_turn_typed_and_the_session_goes_on() {
    let Some(world) = world(&[]).await else {
        return;
    };
    world.send_turn("hana", "fail").await;
    let outcome = world.outcome("hana").await;
    assert_eq!(outcome["status"], "failed", "{outcome}");
    let error = outcome["error"].as_str().unwrap_or_default();
    assert!(error.contains("the stand-in model refuses"), "{error}");
    world.send_turn("hana", "next").await;
    world.approve_all("hana").await;
    for _ in 0..600 {
        let outcome = world.outcome("hana").await;
        if outcome["status"] == "completed" {
            assert_eq!(outcome["answer"], "Noted: next");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the session's next turn did not end");
}

/// A decision whose MAC is not the pending call's, or that names another
/// call, is refused (400) before it is taken: the call's one decision is
/// still there for the right one.
#[tokio::test]
async fn a_wrong_decision_is_refused_and_leaves_the_call_to_the_right_one() {
    let Some(world) = world(&[]).await else {
        return;
    };
    world.send_turn("ivan", "sign lease").await;
    let (path, call) = world.first_decision("ivan").await;
    for wrong in [
        json!({ "tool_call_id": call["tool_call_id"], "mac": "00", "decision": { "type": "approve" } }),
        json!({ "tool_call_id": "call_other", "mac": call["mac"], "decision": { "type": "approve" } }),
    ] {
        let (status, body) = world.post(&path, wrong).await;
        assert_eq!(status.as_u16(), 400, "{body}");
    }
    let right = json!({ "tool_call_id": call["tool_call_id"], "mac": call["mac"], "decision": { "type": "approve" } });
    let (status, body) = world.post(&path, right).await;
    assert!(status.is_success(), "{status}: {body}");
    let outcome = world.outcome("ivan").await;
    assert_eq!(outcome["status"], "completed", "{outcome}");
    assert_eq!(world.lines(), expected_lines("sign lease"));
    world.assert_each_call_ran_once_but(&[]);
}
