//! What a durable turn costs Restate's journal, and what a suspended turn
//! holds in the service process, against a hand-written Restate handler
//! that makes the same `ctx.run` calls for the same turn.
//!
//! ```sh
//! cargo bench -p agent-loop-restate --bench journal
//! ```
//!
//! Both sides run in this process, served on one endpoint to the pinned
//! Restate server (`agent_loop_test::restate_server`): `AgentSession` (this crate) and
//! `HandWritten`, a virtual object that keeps the conversation in its
//! state and journals each model answer (`ModelResponse`) and each tool
//! result (`ToolResult`) with `ctx.run`, the least a durable tool loop can
//! journal. The turn: a batch of two calls, a batch of one, an answer.
//! Per step kind (a model request, a tool call) the bench prints the
//! journal entries and bytes of each side, read from the server's
//! `sys_journal` table, as `value <name> <number>` and their ratio as
//! `ratio <name> <value>`; the median wall time of each side's turn (20
//! rounds after one that warms up); and the bytes
//! the service process holds for each more suspended turn (a paused turn's
//! invocation, once Restate suspended it), counted by the allocator as it
//! grows from one wave of paused turns to two (`JOURNAL_BENCH_PAUSED` a
//! wave, 100 unless set).
//! Under `cargo test --all-targets` it runs two rounds with the same
//! checks and prints no ratio.

use agent_loop_test::counting_allocator;
use agent_loop_test::restate_server as support;

use std::time::{Duration, Instant};

use agent_loop::conversation::{Message, ModelResponse, ToolCall, ToolResult};
use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::{Model, ModelError, ModelRequest};
use agent_loop::{Definition, Validated};
use agent_loop_restate::{DurableAgent, TurnRequest};
use async_trait::async_trait;
use restate_sdk::prelude::*;
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: counting_allocator::Counting = counting_allocator::Counting;

/// Answers from the conversation since the last user message alone: two
/// `note` calls, then one, then an answer (or, for a session whose message
/// is `pause`, one `guarded` call that waits for a decision).
struct Script;

#[async_trait]
impl Model for Script {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        Ok(script(request.conversation))
    }
}

fn script(conversation: &[Message]) -> ModelResponse {
    let start = conversation
        .iter()
        .rposition(|message| matches!(message, Message::User(_)))
        .unwrap_or(0);
    let text = conversation
        .get(start)
        .map(Message::text)
        .unwrap_or_default();
    let asked = conversation[start..]
        .iter()
        .filter(|message| matches!(message, Message::Assistant(_)))
        .count();
    let call = |id: &str, name: &str| {
        ToolCall::new(
            id,
            name,
            json!({ "text": format!("{text} {id}") }).to_string(),
        )
    };
    match (text.as_str(), asked) {
        ("pause", 0) => ModelResponse::tool_calls([call("call_p", "guarded")]),
        (_, 0) => ModelResponse::tool_calls([call("call_1", "note"), call("call_2", "note")]),
        (_, 1) => ModelResponse::tool_calls([call("call_3", "note")]),
        _ => ModelResponse::answer(format!("Done: {text}")),
    }
}

/// What the `note` tool answers: its text, back.
fn note(arguments: &Value) -> String {
    arguments["text"].as_str().unwrap_or_default().to_owned()
}

fn definition() -> Definition<Validated> {
    let schema = json!({
        "type": "object",
        "properties": { "text": { "type": "string" } },
        "required": ["text"]
    });
    let tool_of = |name: &str| {
        tool::Definition::from_fn(
            ToolInfo::new(name, "Notes a text.", schema.clone()),
            |arguments: Value, _context| async move { Ok::<_, BoxError>(json!(note(&arguments))) },
        )
    };
    Definition::builder()
        .name("journal-bench")
        .tool(tool_of("note"))
        .tool(tool_of("guarded"))
        .gate(|call: &GateCall<'_>| {
            if call.tool.name == "guarded" {
                GateDecision::ask("waits for a person")
            } else {
                GateDecision::Allow
            }
        })
        .build()
        .validate()
        .expect("the bench's definition is valid")
}

/// The hand-written baseline: the same turn, journaling each model answer
/// and each tool result with `ctx.run`.
struct HandWritten;

#[restate_sdk::object(name = "HandWritten")]
impl HandWritten {
    #[handler]
    async fn turn(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<TurnRequest>,
    ) -> Result<Json<String>, HandlerError> {
        let mut conversation: Vec<Message> = ctx
            .get::<Json<Vec<Message>>>("conversation")
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        conversation.push(Message::user(request.into_inner().message));
        let answer = loop {
            let sent = conversation.clone();
            let Json(response) = ctx
                .run(move || async move { Ok(Json(script(&sent))) })
                .name("model request")
                .await?;
            let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
            let text = response.message.text();
            conversation.push(Message::Assistant(response.message));
            if calls.is_empty() {
                break text;
            }
            for call in calls {
                let id = call.id.clone();
                let Json(result) = ctx
                    .run(move || async move {
                        let arguments: Value = serde_json::from_str(&call.arguments)?;
                        Ok(Json(ToolResult::ok(call.id.clone(), note(&arguments))))
                    })
                    .name(format!("tool call {id}"))
                    .await?;
                conversation.push(Message::Tool(result));
            }
        };
        ctx.set("conversation", Json(conversation));
        Ok(Json(answer))
    }
}

/// One journal entry of an invocation.
struct Entry {
    kind: String,
    name: String,
    bytes: u64,
}

/// The journal of the invocation whose target is `target`.
async fn journal(server: &support::RestateServer, target: &str) -> Vec<Entry> {
    let rows = server
        .query(&format!(
            "select id from sys_invocation where target = '{target}'"
        ))
        .await;
    let id = rows
        .first()
        .and_then(|row| row["id"].as_str())
        .unwrap_or_default()
        .to_owned();
    server
        .query(&format!(
            "select entry_type, name, raw_length from sys_journal where id = '{id}' order by index"
        ))
        .await
        .into_iter()
        .map(|row| Entry {
            kind: row["entry_type"].as_str().unwrap_or_default().to_owned(),
            name: row["name"].as_str().unwrap_or_default().to_owned(),
            bytes: row["raw_length"].as_u64().unwrap_or(0),
        })
        .collect()
}

/// Steps and journal bytes of the `ctx.run` calls whose name starts with
/// `prefix`: each `Run` command with the completion that follows it (the
/// journaled value).
fn runs(journal: &[Entry], prefix: &str) -> (usize, u64) {
    let mut steps = 0;
    let mut bytes = 0;
    for (index, entry) in journal.iter().enumerate() {
        if entry.kind == "Command: Run" && entry.name.starts_with(prefix) {
            steps += 1;
            bytes += entry.bytes;
            if let Some(done) = journal
                .get(index + 1)
                .filter(|next| next.kind == "Notification: Run")
            {
                bytes += done.bytes;
            }
        }
    }
    (steps, bytes)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

#[tokio::main]
async fn main() {
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let Some(server) = support::RestateServer::start().await else {
        return;
    };
    let port = support::free_port();
    let endpoint = Endpoint::builder().bind(HandWritten).build();
    let agent = DurableAgent::new(definition(), Script);
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let agent_listener = agent_loop_restate::listen(address).expect("the agent's port is free");
    tokio::spawn(HttpServer::new(agent.endpoint()).serve(agent_listener));
    let baseline_port = support::free_port();
    let baseline_address = std::net::SocketAddr::from(([127, 0, 0, 1], baseline_port));
    // The same listener on both sides.
    let baseline_listener =
        agent_loop_restate::listen(baseline_address).expect("the baseline's port is free");
    tokio::spawn(HttpServer::new(endpoint).serve(baseline_listener));
    tokio::time::sleep(Duration::from_millis(200)).await;
    server
        .register(&format!("http://127.0.0.1:{port}/"))
        .await
        .expect("the agent registers");
    server
        .register(&format!("http://127.0.0.1:{baseline_port}/"))
        .await
        .expect("the baseline registers");
    let client = support::http_client();
    let ingress = server.ingress_url();
    let turn = |object: &'static str, key: String| {
        let client = client.clone();
        let url = format!("{ingress}/{object}/{key}/turn");
        async move {
            let started = Instant::now();
            let response = client
                .post(url)
                .json(&json!({ "message": "bench" }))
                .send()
                .await
                .expect("the ingress answers");
            assert!(
                response.status().is_success(),
                "{}",
                response.text().await.unwrap_or_default()
            );
            started.elapsed()
        }
    };

    // The journal of one turn on each side.
    // Round 0 warms each side up (its first connection, its first
    // session): its journal is read, its time is not. The median of the
    // others is each side's turn time.
    let mut times = (Vec::new(), Vec::new());
    let rounds = if measuring { 21 } else { 2 };
    for round in 0..rounds {
        let agent = turn("AgentSession", format!("a{round}")).await;
        let baseline = turn("HandWritten", format!("h{round}")).await;
        if round > 0 {
            times.0.push(agent);
            times.1.push(baseline);
        }
    }
    let times = (median(times.0), median(times.1));
    let agent = journal(&server, "AgentSession/a0/turn").await;
    let baseline = journal(&server, "HandWritten/h0/turn").await;
    if std::env::var_os("JOURNAL_BENCH_ENTRIES").is_some() {
        for (side, entries) in [("agent", &agent), ("baseline", &baseline)] {
            for entry in entries {
                println!("{side}: {} {:?} {}", entry.kind, entry.name, entry.bytes);
            }
        }
    }
    let mut rows = Vec::new();
    for (step, prefix) in [
        ("model_request", "model request"),
        ("tool_call", "tool call"),
    ] {
        let (agent_entries, agent_bytes) = runs(&agent, prefix);
        let (baseline_entries, baseline_bytes) = runs(&baseline, prefix);
        assert_eq!(
            agent_entries, baseline_entries,
            "{step}: the same ctx.run entries on both sides"
        );
        assert!(agent_entries > 0, "{step}: journaled");
        rows.push((
            step,
            agent_entries,
            agent_bytes,
            baseline_entries,
            baseline_bytes,
        ));
    }

    // A suspended turn: what the service process holds for it, as the
    // growth between a first and a second wave of paused turns (what the
    // process's connections and buffers cost once is not a turn's).
    let wave: u64 = std::env::var("JOURNAL_BENCH_PAUSED")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(if measuring { 100 } else { 5 });
    let mut live = Vec::new();
    let mut suspended = 0;
    for round in 0..2 {
        for session in 0..wave {
            let response = client
                .post(format!(
                    "{ingress}/AgentSession/p{round}-{session}/turn/send"
                ))
                .json(&json!({ "message": "pause" }))
                .send()
                .await
                .expect("the ingress answers");
            assert!(response.status().is_success());
        }
        // Restate suspends an invocation that waits (after the inactivity
        // timeout the harness gives the server).
        for _ in 0..300 {
            let rows = server
                .query("select count(*) as n from sys_invocation where target_service_name = 'AgentSession' and status = 'suspended'")
                .await;
            suspended = rows.first().and_then(|row| row["n"].as_u64()).unwrap_or(0);
            if suspended >= wave * (round + 1) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // The connections' buffers settle.
        tokio::time::sleep(Duration::from_millis(500)).await;
        live.push(counting_allocator::live());
    }
    let paused = wave * 2;
    let held = (live[1] - live[0]) / wave.max(1) as isize;

    println!("suspended turns: {suspended} of {paused}");
    for (step, agent_entries, agent_bytes, baseline_entries, baseline_bytes) in &rows {
        println!("value journal_{step}_entries {agent_entries} (baseline {baseline_entries})");
        println!("value journal_{step}_bytes {agent_bytes} (baseline {baseline_bytes})");
        if measuring {
            println!(
                "ratio journal_{step}_bytes {:.2}",
                *agent_bytes as f64 / (*baseline_bytes).max(1) as f64
            );
        }
    }
    println!(
        "value turn_time_ms {:.1} (baseline {:.1})",
        times.0.as_secs_f64() * 1000.0,
        times.1.as_secs_f64() * 1000.0
    );
    if measuring {
        println!(
            "ratio turn_time {:.2}",
            times.0.as_secs_f64() / times.1.as_secs_f64().max(f64::EPSILON)
        );
    }
    println!("value suspended_turn_bytes {held}");
}
