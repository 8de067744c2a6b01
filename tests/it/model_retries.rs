//! Retries that listen to the server, on a loopback server counting the
//! attempts: `x-should-retry` before the status, an exhausted quota is no
//! rate limit, a `Retry-After` longer than the models wait is reported and
//! not cut short, an error event before any content is retried, and a slow
//! model gets a growing time budget.

use std::time::Duration;

use agent_loop::model::{AnthropicModel, ModelErrorKind, OpenAiModel};
use agent_loop::turn::{TurnEvent, TurnEvents, TurnOptions};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

fn answer() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Done." }, "finish_reason": "stop" }]
    })
}

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("m")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
        .backoff(Duration::from_millis(5), Duration::from_millis(10))
}

async fn mount(server: &MockServer, response: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST")).respond_with(response);
    match times {
        Some(times) => mock.up_to_n_times(times).mount(server).await,
        None => mock.mount(server).await,
    }
}

async fn attempts(server: &MockServer) -> usize {
    server.received_requests().await.expect("recording").len()
}

async fn turn(
    model: &(impl agent_loop::turn::Model + 'static),
) -> Result<agent_loop::turn::TurnOutcome, agent_loop::turn::TurnError> {
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    session
        .run_turn(model, &mut start(), &CancellationToken::new())
        .await
}

#[tokio::test]
async fn x_should_retry_is_obeyed_before_the_status() {
    // `false` on a 503: not retried.
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(503).insert_header("x-should-retry", "false"),
        None,
    )
    .await;
    let error = turn(&model(&server)).await.expect_err("refused");
    assert_eq!(
        model_error(&error).kind,
        ModelErrorKind::Http { status: 503 }
    );
    assert_eq!(model_error(&error).attempts, 1);
    assert_eq!(attempts(&server).await, 1);

    // `true` on a 400: retried, and the second attempt answers.
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(400).insert_header("x-should-retry", "true"),
        Some(1),
    )
    .await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(answer()),
        None,
    )
    .await;
    let outcome = turn(&model(&server)).await.expect("the retry answers");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(attempts(&server).await, 2);
}

#[tokio::test]
async fn a_429_for_an_exhausted_quota_is_not_retried() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(429).set_body_json(json!({ "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota", "param": null, "code": "insufficient_quota" } })),
        None,
    )
    .await;
    let error = turn(&model(&server)).await.expect_err("no quota");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Http { status: 429 });
    assert_eq!(error.code.as_deref(), Some("insufficient_quota"));
    assert_eq!(error.attempts, 1);
    assert_eq!(attempts(&server).await, 1);

    // A rate limit is still retried.
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after-ms", "5")
            .set_body_json(json!({ "error": { "message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded" } })),
        Some(1),
    )
    .await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(answer()),
        None,
    )
    .await;
    turn(&model(&server)).await.expect("retried");
    assert_eq!(attempts(&server).await, 2);
}

#[tokio::test]
async fn a_retry_after_beyond_a_minute_is_reported_as_said_and_not_retried() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(429).insert_header("retry-after", "600"),
        None,
    )
    .await;
    let error = turn(&model(&server))
        .await
        .expect_err("asked to wait 10 min");
    let error = model_error(&error);
    assert_eq!(error.retry_after, Some(Duration::from_secs(600)));
    assert_eq!(error.attempts, 1);
    assert_eq!(attempts(&server).await, 1);
}

#[tokio::test]
async fn a_slow_model_gets_twice_the_time_on_its_next_attempt() {
    // Every answer takes 450 ms; the timeout is 300 ms. The first attempt
    // times out, the second may take 600 ms and answers. (With the same
    // budget every time, every attempt timed out.)
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(answer())
            .set_delay(Duration::from_millis(450)),
        None,
    )
    .await;
    let model = model(&server)
        .timeout(Duration::from_millis(300))
        .max_retries(1);
    let outcome = turn(&model).await.expect("the second attempt answers");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(attempts(&server).await, 2);
}

fn sse(events: &[(&str, Value)]) -> ResponseTemplate {
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn claude_stream(text: &str) -> ResponseTemplate {
    sse(&[
        (
            "message_start",
            json!({ "type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 5, "output_tokens": 1 } } }),
        ),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": text } }),
        ),
        (
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": 0 }),
        ),
        (
            "message_delta",
            json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn", "stop_sequence": null }, "usage": { "output_tokens": 2 } }),
        ),
        ("message_stop", json!({ "type": "message_stop" })),
    ])
}

fn overloaded_event() -> (&'static str, Value) {
    (
        "error",
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
    )
}

fn claude(server: &MockServer) -> AnthropicModel {
    AnthropicModel::new("claude")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .stream(true)
        .max_retries(2)
        .backoff(Duration::from_millis(5), Duration::from_millis(10))
}

/// The text the turn's events showed, and the outcome.
async fn streamed_turn(
    model: &AnthropicModel,
) -> (
    String,
    Result<agent_loop::turn::TurnOutcome, agent_loop::turn::TurnError>,
) {
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    let (events, mut received) = TurnEvents::channel();
    let outcome = session
        .run_turn(
            model,
            &mut start(),
            TurnOptions::builder().events(&events).build(),
        )
        .await;
    drop(events);
    let mut text = String::new();
    while let Some(event) = received.recv().await {
        if let TurnEvent::TextDelta { text: piece } = event {
            text.push_str(&piece);
        }
    }
    (text, outcome)
}

#[tokio::test]
async fn an_error_event_before_any_content_is_retried() {
    let server = MockServer::start().await;
    mount(&server, sse(&[overloaded_event()]), Some(1)).await;
    mount(&server, claude_stream("Hello."), None).await;
    let (shown, outcome) = streamed_turn(&claude(&server)).await;
    assert_eq!(outcome.expect("the retry answers").answer(), Some("Hello."));
    assert_eq!(shown, "Hello.", "nothing shown twice");
    assert_eq!(attempts(&server).await, 2);
}

#[tokio::test]
async fn an_error_event_after_content_is_not_retried() {
    let server = MockServer::start().await;
    let mut events = vec![
        (
            "message_start",
            json!({ "type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 5, "output_tokens": 1 } } }),
        ),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": "Half" } }),
        ),
    ];
    events.push(overloaded_event());
    mount(&server, sse(&events), None).await;
    let (shown, outcome) = streamed_turn(&claude(&server)).await;
    let error = outcome.expect_err("not retried");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Stream);
    assert_eq!(error.error_type.as_deref(), Some("overloaded_error"));
    assert_eq!(error.attempts, 1);
    assert_eq!(shown, "Half");
    assert_eq!(attempts(&server).await, 1);
}

#[tokio::test]
async fn error_events_before_content_stop_at_the_retry_cap_and_count_every_attempt() {
    let server = MockServer::start().await;
    mount(&server, sse(&[overloaded_event()]), None).await;
    let (_, outcome) = streamed_turn(&claude(&server)).await;
    let error = outcome.expect_err("overloaded every time");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Stream);
    assert_eq!(error.attempts, 3, "{error}");
    assert_eq!(attempts(&server).await, 3);

    // A refused request is not retried, even before content.
    let server = MockServer::start().await;
    mount(
        &server,
        sse(&[(
            "error",
            json!({ "type": "error", "error": { "type": "invalid_request_error", "message": "bad" } }),
        )]),
        None,
    )
    .await;
    let (_, outcome) = streamed_turn(&claude(&server)).await;
    assert_eq!(model_error(&outcome.expect_err("refused")).attempts, 1);
    assert_eq!(attempts(&server).await, 1);
}
