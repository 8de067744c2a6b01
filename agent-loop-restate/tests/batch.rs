//! The calls of a batch run concurrently in a durable turn, at most
//! `parallel` at once, and the turn's statistics read the same as
//! `run_turn`'s: each call's tool name and result bytes, the batch's time.
//! The agent is served in the test process on the pinned Restate server.

use agent_loop_test::restate_server as support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_loop::conversation::{ModelResponse, ToolCall};
use agent_loop::limits::ToolLimits;
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Definition, Validated};
use agent_loop_restate::{DurableAgent, TurnReport};
use serde_json::{Value, json};
use tokio::sync::Barrier;

/// How long a call waits for the other calls of its batch to be running
/// too: far above any scheduling delay, so "alone" means they ran one
/// after another.
const MEETING: Duration = Duration::from_secs(20);

/// Calls running now, and the most that ever ran at once.
#[derive(Default)]
struct Running {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// `meet` waits until `batch` calls are in the barrier (or [`MEETING`]
/// passed) and answers `met` or `alone`; `wait` runs 200 ms. Both count
/// the calls running at once in `running`.
fn definition(batch: usize, limits: ToolLimits, running: &Arc<Running>) -> Definition<Validated> {
    let barrier = Arc::new(Barrier::new(batch));
    let schema = json!({ "type": "object", "properties": {} });
    let counted = |name: &str, running: Arc<Running>, barrier: Option<Arc<Barrier>>| {
        tool::Definition::from_fn(
            ToolInfo::new(name, "Waits.", schema.clone()),
            move |_arguments: Value, _context| {
                let running = Arc::clone(&running);
                let barrier = barrier.clone();
                async move {
                    let now = running.now.fetch_add(1, Ordering::SeqCst) + 1;
                    running.most.fetch_max(now, Ordering::SeqCst);
                    let answer = match barrier {
                        Some(barrier) => {
                            match tokio::time::timeout(MEETING, barrier.wait()).await {
                                Ok(_) => "met",
                                Err(_) => "alone",
                            }
                        }
                        None => {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            "waited"
                        }
                    };
                    running.now.fetch_sub(1, Ordering::SeqCst);
                    Ok::<_, BoxError>(json!(answer))
                }
            },
        )
    };
    Definition::builder()
        .name("batch")
        .tool(counted("meet", Arc::clone(running), Some(barrier)))
        .tool(counted("wait", Arc::clone(running), None))
        .tool_limits(limits)
        .build()
        .validate()
        .expect("the test's definition is valid")
}

/// A model that asks for `count` calls of `tool` at once, then answers.
fn model(tool: &str, count: usize) -> ScriptedModel {
    let calls = (1..=count).map(|index| ToolCall::new(format!("call_{index}"), tool, "{}"));
    ScriptedModel::new([
        ModelResponse::tool_calls(calls),
        ModelResponse::answer("done"),
    ])
}

/// Serves `agent` on a free port of this process, registers it with a
/// fresh server and runs one turn of session `s1`: its report and the
/// session's conversation.
async fn one_turn(agent: DurableAgent) -> Option<(TurnReport, Value)> {
    let server = support::RestateServer::start().await?;
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], support::free_port()));
    let listener = agent_loop_restate::listen(address).expect("a free port");
    let endpoint = agent.endpoint();
    tokio::spawn(restate_sdk::prelude::HttpServer::new(endpoint).serve(listener));
    server
        .register(&format!("http://{address}/"))
        .await
        .expect("the agent registers");
    let client = support::http_client();
    let ingress = server.ingress_url();
    let response = client
        .post(format!("{ingress}/AgentSession/s1/turn"))
        .json(&json!({ "message": "go" }))
        .send()
        .await
        .expect("the ingress answers");
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap_or_default()
    );
    let report: TurnReport = response.json().await.expect("a turn report");
    let conversation: Value = client
        .post(format!("{ingress}/AgentSession/s1/conversation"))
        .send()
        .await
        .expect("the ingress answers")
        .json()
        .await
        .expect("the conversation as JSON");
    Some((report, conversation))
}

/// The tool results' texts of `conversation`, in order.
fn results(conversation: &Value) -> Vec<String> {
    conversation
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "tool")
        .map(|message| {
            message["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_calls_of_a_batch_run_at_once() {
    let running = Arc::new(Running::default());
    let agent = DurableAgent::new(definition(3, ToolLimits::new(), &running), model("meet", 3));
    let Some((report, conversation)) = one_turn(agent).await else {
        return;
    };
    assert_eq!(report.status, "completed", "{report:?}");
    // Each call met the other two: the three ran at once.
    assert_eq!(results(&conversation), vec!["met"; 3], "{conversation:#}");
    assert_eq!(running.most.load(Ordering::SeqCst), 3);
    // The statistics name each call's tool and bytes, as `run_turn`'s do,
    // though the journal keeps neither.
    let calls: Vec<_> = report
        .stats
        .iterations
        .iter()
        .flat_map(|iteration| &iteration.calls)
        .collect();
    assert_eq!(calls.len(), 3);
    for call in calls {
        assert_eq!(call.tool_name, "meet");
        assert_eq!(call.result_bytes, "met".len());
    }
}

#[tokio::test]
async fn a_batch_runs_at_most_parallel_calls_at_once() {
    let running = Arc::new(Running::default());
    let limits = ToolLimits::new().parallel(2);
    let agent = DurableAgent::new(definition(2, limits, &running), model("wait", 5));
    let Some((report, conversation)) = one_turn(agent).await else {
        return;
    };
    assert_eq!(report.status, "completed", "{report:?}");
    assert_eq!(results(&conversation), vec!["waited"; 5]);
    assert_eq!(running.most.load(Ordering::SeqCst), 2);
    // Five calls of 200 ms in two slots: three rounds, as the batch's time
    // reads from the journaled durations.
    let batch = &report.stats.iterations[0];
    assert!(
        batch.batch_duration >= Duration::from_millis(600),
        "{:?}",
        batch.batch_duration
    );
    assert!(
        batch.batch_duration < batch.calls.iter().map(|call| call.duration).sum(),
        "{:?}",
        batch.batch_duration
    );
}
