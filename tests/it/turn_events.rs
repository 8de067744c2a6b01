//! Turn events: what a watcher of a running turn sees, in order, and that a
//! turn nobody watches behaves the same.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use crate::turn_common::{answer, bind_tools, call, user_says, weather_tool};
use agent_loop::ToolLimits;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::{FinishReason, ModelResponse, Usage};
use agent_loop::turn::TurnOptions;
use agent_loop::turn::{ScriptedModel, TurnEvent, TurnEvents};
use tokio_util::sync::CancellationToken;

fn drain(receiver: &mut tokio::sync::mpsc::UnboundedReceiver<TurnEvent>) -> Vec<TurnEvent> {
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    events
}

/// The events with durations set to zero, so they compare exactly.
fn without_durations(events: Vec<TurnEvent>) -> Vec<TurnEvent> {
    events
        .into_iter()
        .map(|event| match event {
            TurnEvent::ModelResponded {
                finish_reason,
                usage,
                ..
            } => TurnEvent::ModelResponded {
                finish_reason,
                usage,
                duration: Duration::ZERO,
            },
            TurnEvent::ToolCallFinished {
                tool_call_id,
                tool_name,
                error,
                ..
            } => TurnEvent::ToolCallFinished {
                tool_call_id,
                tool_name,
                duration: Duration::ZERO,
                error,
            },
            other => other,
        })
        .collect()
}

#[tokio::test]
async fn a_watched_turn_reports_requests_calls_and_batches_in_order() {
    let session = bind_tools(
        [weather_tool(Arc::new(AtomicUsize::new(0)))],
        ToolLimits::new().parallel(1),
    )
    .await;
    let usage = Usage::new(10, 5);
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([
            call("call_1", "get_weather", r#"{"city": "Oslo"}"#),
            call("call_2", "no_such_tool", "{}"),
        ])
        .with_usage(usage),
        answer("Sunny."),
    ]);
    let (events, mut receiver) = TurnEvents::channel();
    let mut conversation = user_says("Weather?");
    session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .unwrap();
    let finished = |id: &str, name: &str, error| TurnEvent::ToolCallFinished {
        tool_call_id: id.into(),
        tool_name: name.into(),
        duration: Duration::ZERO,
        error,
    };
    assert_eq!(
        without_durations(drain(&mut receiver)),
        vec![
            TurnEvent::ModelRequestStarted { iteration: 1 },
            TurnEvent::ModelResponded {
                finish_reason: FinishReason::ToolCalls,
                usage,
                duration: Duration::ZERO,
            },
            // Refused before running: finished, never started.
            finished(
                "call_2",
                "no_such_tool",
                Some(ToolCallErrorKind::UnknownTool)
            ),
            TurnEvent::ToolCallStarted {
                tool_call_id: "call_1".into(),
                tool_name: "get_weather".into(),
            },
            finished("call_1", "get_weather", None),
            TurnEvent::BatchFinished {
                iteration: 1,
                calls: 2,
            },
            TurnEvent::ModelRequestStarted { iteration: 2 },
            TurnEvent::ModelResponded {
                finish_reason: FinishReason::Stop,
                usage: Usage::default(),
                duration: Duration::ZERO,
            },
        ]
    );
}

#[tokio::test]
async fn cut_off_calls_finish_without_starting() {
    let session = bind_tools([weather_tool(Arc::default())], ToolLimits::new()).await;
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([call("call_1", "get_weather", r#"{"city": "Os"#)])
            .with_finish_reason(FinishReason::Length),
        answer("Retry later."),
    ]);
    let (events, mut receiver) = TurnEvents::channel();
    let mut conversation = user_says("Weather?");
    session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .unwrap();
    let events = drain(&mut receiver);
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, TurnEvent::ToolCallStarted { .. }))
    );
    assert!(events.iter().any(|event| matches!(
        event,
        TurnEvent::ToolCallFinished {
            error: Some(ToolCallErrorKind::CutOff),
            ..
        }
    )));
}

#[tokio::test]
async fn a_dropped_receiver_or_no_watcher_changes_nothing() {
    let session = bind_tools([weather_tool(Arc::default())], ToolLimits::new()).await;
    let script = || {
        ScriptedModel::new([
            ModelResponse::tool_calls([call("call_1", "get_weather", r#"{"city": "Rome"}"#)]),
            answer("Sunny."),
        ])
    };
    let mut watched = user_says("Weather?");
    let (events, receiver) = TurnEvents::channel();
    drop(receiver);
    assert!(!events.is_watched());
    session
        .run_turn(
            &script(),
            &mut watched,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .unwrap();
    let mut unwatched = user_says("Weather?");
    session
        .run_turn(&script(), &mut unwatched, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(watched, unwatched);
}
