//! Per-tool timeouts: a call still running at its timeout (the tool's
//! own, else the mode's `call_timeout_ms`) is stopped and answered with an
//! error the model reads, and the turn goes on. Under tokio's paused
//! clock: the sleeps are virtual, the timeouts exact.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::turn_common::*;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::limits::Limit;
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Definition, ToolLimits};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A tool that sleeps `took`, then answers; `finished` says it got there.
fn sleeping(name: &str, took: Duration, finished: Arc<AtomicBool>) -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::without_parameters(name, "Takes its time."),
        move |_: Value, _| {
            let finished = Arc::clone(&finished);
            async move {
                tokio::time::sleep(took).await;
                finished.store(true, Ordering::SeqCst);
                Ok::<_, BoxError>("done at last")
            }
        },
    )
}

#[tokio::test(start_paused = true)]
async fn a_call_past_the_modes_timeout_is_answered_at_it_and_the_turn_goes_on() {
    let finished = Arc::new(AtomicBool::new(false));
    let session = bind_tools(
        [sleeping(
            "slow",
            Duration::from_secs(60),
            Arc::clone(&finished),
        )],
        ToolLimits::new().call_timeout_ms(5_000),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("call_1", "slow", "{}")]),
        answer("It was slow."),
    ]);
    let mut conversation = user_says("Run the slow one.");
    let started = tokio::time::Instant::now();
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn goes on");
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(5),
        "answered at its timeout"
    );
    assert_eq!(outcome.answer(), Some("It was slow."));
    assert!(!finished.load(Ordering::SeqCst), "the call was stopped");
    let result = conversation[2].as_tool_result().expect("a result");
    assert!(result.is_error);
    assert_eq!(result.text(), "the call to `slow` timed out after 5 s");
    let stats = &outcome.stats.iterations[0].calls[0];
    assert_eq!(stats.error, Some(ToolCallErrorKind::TimedOut));
    // The model saw the error and answered: two requests.
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_tools_own_timeout_wins_over_the_modes_either_way() {
    let quick = Arc::new(AtomicBool::new(false));
    let patient = Arc::new(AtomicBool::new(false));
    let definition = Definition::builder()
        .name("timeouts")
        .tools([
            // Its own 250 ms is shorter than the mode's 30 s.
            sleeping("quick", Duration::from_secs(1), Arc::clone(&quick))
                .timeout(Duration::from_millis(250)),
            // Its own 10 minutes is longer than the mode's 30 s.
            sleeping("patient", Duration::from_secs(120), Arc::clone(&patient))
                .timeout(Duration::from_secs(600)),
        ])
        .tool_limits(ToolLimits::new().call_timeout_ms(30_000))
        .build()
        .validate()
        .expect("valid");
    let session = bind(&definition).await;
    let model = ScriptedModel::new([
        batch([
            call("call_1", "quick", "{}"),
            call("call_2", "patient", "{}"),
        ]),
        answer("Done."),
    ]);
    let mut conversation = user_says("Run both.");
    let started = tokio::time::Instant::now();
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("completes");
    // The batch ran at once: it took as long as the patient call.
    assert_eq!(started.elapsed(), Duration::from_secs(120));
    let calls = &outcome.stats.iterations[0].calls;
    assert_eq!(calls[0].error, Some(ToolCallErrorKind::TimedOut));
    assert_eq!(calls[1].error, None);
    assert!(!quick.load(Ordering::SeqCst));
    assert!(patient.load(Ordering::SeqCst));
    assert_eq!(
        conversation[2]
            .as_tool_result()
            .map(|result| result.text())
            .as_deref(),
        Some("the call to `quick` timed out after 250 ms")
    );
}

#[tokio::test(start_paused = true)]
async fn a_direct_invocation_times_out_too_and_unlimited_waits() {
    let finished = Arc::new(AtomicBool::new(false));
    let session = bind_tools(
        [sleeping(
            "slow",
            Duration::from_secs(60),
            Arc::clone(&finished),
        )],
        ToolLimits::new().call_timeout_ms(1_000),
    )
    .await;
    let error = session
        .invoke("slow", serde_json::json!({}))
        .await
        .expect_err("timed out");
    assert_eq!(error.kind, ToolCallErrorKind::TimedOut);
    assert_eq!(error.message, "the call to `slow` timed out after 1 s");

    let session = bind_tools(
        [sleeping(
            "slow",
            Duration::from_secs(60),
            Arc::clone(&finished),
        )],
        ToolLimits::new().call_timeout_ms(Limit::Unlimited),
    )
    .await;
    session
        .invoke("slow", serde_json::json!({}))
        .await
        .expect("no timeout: it finishes");
    assert!(finished.load(Ordering::SeqCst));
}
