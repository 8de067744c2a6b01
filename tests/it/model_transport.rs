//! The HTTP transport of both models, on a loopback server: retries on
//! 429 (honouring `Retry-After`) and 503, the attempt cap, typed errors
//! with the provider's message and never the key, the timeout, a refused
//! connection, and cancellation of a request in flight.

use std::time::{Duration, Instant};

use agent_loop::model::{AnthropicModel, ModelErrorKind, OpenAiModel};
use agent_loop::turn::TurnOptions;
use agent_loop::turn::{TurnError, TurnStatus};
use agent_loop::wire::WireError;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

fn answer() -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": "Done." },
            "finish_reason": "stop"
        }]
    })
}

/// An OpenAI model at `server` with a short backoff, so only a server's
/// `Retry-After` can make it wait long.
fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("m")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
        .backoff(Duration::from_millis(10), Duration::from_millis(40))
}

async fn respond_once(server: &MockServer, response: ResponseTemplate, times: u64) {
    Mock::given(method("POST"))
        .respond_with(response)
        .up_to_n_times(times)
        .mount(server)
        .await;
}

async fn succeed(server: &MockServer) {
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer()))
        .mount(server)
        .await;
}

/// Runs a turn with `model` and returns its `ModelError`.
async fn failing_turn(model: &(impl agent_loop::turn::Model + 'static)) -> (TurnError, String) {
    let session = session_for(&agent_loop::wire::openai::parse_response(&answer()).unwrap()).await;
    let error = session
        .run_turn(model, &mut start(), &CancellationToken::new())
        .await
        .expect_err("the turn fails");
    let text = all_output(&error);
    (error, text)
}

async fn run(model: &OpenAiModel) -> agent_loop::turn::TurnOutcome {
    let session = session_for(&agent_loop::wire::openai::parse_response(&answer()).unwrap()).await;
    session
        .run_turn(model, &mut start(), &CancellationToken::new())
        .await
        .expect("the turn completes")
}

#[tokio::test]
async fn a_429_with_retry_after_waits_that_long_then_succeeds() {
    let server = MockServer::start().await;
    respond_once(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "1")
            .set_body_json(json!({ "error": { "message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded" } })),
        1,
    )
    .await;
    succeed(&server).await;
    let model = model(&server);
    let turn = tokio::spawn(async move { run(&model).await });
    // Our own backoff is 10–40 ms: still one request after 500 ms means
    // the server's second is honoured.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    let outcome = turn.await.expect("no panic");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_503_twice_then_success_is_retried() {
    let server = MockServer::start().await;
    respond_once(&server, ResponseTemplate::new(503), 2).await;
    succeed(&server).await;
    let outcome = run(&model(&server)).await;
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn retries_stop_at_the_cap_with_the_last_status_and_the_attempts() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529)
                .insert_header("request-id", "req_overloaded")
                .set_body_json(json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } })),
        )
        .mount(&server)
        .await;
    let model = AnthropicModel::new("claude")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .max_retries(2)
        .backoff(Duration::from_millis(5), Duration::from_millis(10));
    let (error, _) = failing_turn(&model).await;
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Http { status: 529 });
    assert_eq!(error.attempts, 3);
    assert!(error.was_retried());
    assert_eq!(error.error_type.as_deref(), Some("overloaded_error"));
    assert_eq!(error.request_id.as_deref(), Some("req_overloaded"));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_401_is_a_typed_error_with_the_providers_message_and_no_key_anywhere() {
    // OpenAI.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("x-request-id", "req_abc123")
                .set_body_json(json!({ "error": {
                    "message": "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
                    "type": "invalid_request_error",
                    "param": null,
                    "code": "invalid_api_key"
                } })),
        )
        .mount(&server)
        .await;
    let openai = model(&server);
    let (turn_error, text) = failing_turn(&openai).await;
    let error = model_error(&turn_error);
    assert_eq!(error.kind, ModelErrorKind::Http { status: 401 });
    assert_eq!(error.status(), Some(401));
    assert_eq!(error.attempts, 1, "401 is not retried");
    assert_eq!(error.error_type.as_deref(), Some("invalid_request_error"));
    assert_eq!(error.code.as_deref(), Some("invalid_api_key"));
    assert!(
        error
            .message
            .as_deref()
            .unwrap()
            .starts_with("Incorrect API key provided")
    );
    assert_eq!(error.request_id.as_deref(), Some("req_abc123"));
    assert_eq!(
        error.to_string(),
        "OpenAI Chat Completions: HTTP 401 after 1 attempt: invalid_request_error: Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys. (request id req_abc123)"
    );
    for output in [text, format!("{openai:?}"), format!("{openai:#?}")] {
        assert!(!output.contains(FAKE_KEY), "the key leaked: {output}");
        assert!(
            !output.contains("FAKE-KEY"),
            "part of the key leaked: {output}"
        );
    }

    // Anthropic.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("request-id", "req_ant")
                .set_body_json(json!({ "type": "error", "error": { "type": "authentication_error", "message": "invalid x-api-key" } })),
        )
        .mount(&server)
        .await;
    let anthropic = AnthropicModel::new("claude")
        .base_url(server.uri())
        .api_key(FAKE_KEY);
    let (turn_error, text) = failing_turn(&anthropic).await;
    let error = model_error(&turn_error);
    assert_eq!(error.kind, ModelErrorKind::Http { status: 401 });
    assert_eq!(error.error_type.as_deref(), Some("authentication_error"));
    assert_eq!(error.message.as_deref(), Some("invalid x-api-key"));
    assert_eq!(error.request_id.as_deref(), Some("req_ant"));
    for output in [text, format!("{anthropic:?}"), format!("{anthropic:#?}")] {
        assert!(!output.contains("FAKE-KEY"), "the key leaked: {output}");
    }
}

#[tokio::test]
async fn a_server_that_never_answers_is_retried_after_each_timeout_then_a_timeout_error() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(answer())
                .set_delay(Duration::from_secs(30)),
        )
        .mount(&server)
        .await;
    let model = model(&server)
        .timeout(Duration::from_millis(200))
        .max_retries(1);
    let (error, text) = failing_turn(&model).await;
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Timeout, "{text}");
    assert_eq!(error.attempts, 2);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_timed_out_attempt_is_retried_like_a_connection_error() {
    // The official SDKs retry a timeout too: one slow attempt (a cold
    // replica) must not fail the turn.
    let server = MockServer::start().await;
    respond_once(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(answer())
            .set_delay(Duration::from_secs(5)),
        1,
    )
    .await;
    succeed(&server).await;
    let outcome = run(&model(&server).timeout(Duration::from_millis(200))).await;
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_stream_that_stalls_after_its_first_events_is_a_timeout_and_not_retried() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&connections);
    let server = tokio::spawn(async move {
        let mut open = Vec::new();
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut buffer = vec![0u8; 65536];
            let _ = socket.read(&mut buffer).await;
            let event =
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The answer\"}}]}\n\n";
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
            let chunk = format!("{head}{:x}\r\n{event}\r\n", event.len());
            socket.write_all(chunk.as_bytes()).await.unwrap();
            // Then nothing: the stream stalls with the socket open.
            open.push(socket);
        }
    });
    let model = OpenAiModel::new("m")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .stream(true)
        .timeout(Duration::from_millis(300))
        .backoff(Duration::from_millis(5), Duration::from_millis(10));
    let session = session_for(&agent_loop::wire::openai::parse_response(&answer()).unwrap()).await;
    let (events, mut receiver) = agent_loop::turn::TurnEvents::channel();
    let error = session
        .run_turn(
            &model,
            &mut start(),
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .expect_err("the stalled stream fails");
    server.abort();
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Timeout, "{error}");
    assert_eq!(error.attempts, 1);
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1);
    drop(events);
    let mut text = String::new();
    while let Ok(event) = receiver.try_recv() {
        if let agent_loop::turn::TurnEvent::TextDelta { text: piece } = event {
            text.push_str(&piece);
        }
    }
    assert_eq!(text, "The answer", "the first events reached the turn");
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_a_connect_error() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiModel::new("m")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .max_retries(1)
        .backoff(Duration::from_millis(5), Duration::from_millis(10));
    let (error, text) = failing_turn(&model).await;
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Connect, "{text}");
    assert_eq!(error.attempts, 2);
}

#[tokio::test]
async fn a_body_that_is_not_the_providers_response_is_an_invalid_response() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "choices": [] })))
        .mount(&server)
        .await;
    let (error, _) = failing_turn(&model(&server)).await;
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    let source = std::error::Error::source(error).expect("a source");
    assert!(source.downcast_ref::<WireError>().is_some(), "{source:?}");
}

#[tokio::test]
async fn cancelling_the_turn_aborts_the_request_in_flight() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(answer())
                .set_delay(Duration::from_secs(10)),
        )
        .mount(&server)
        .await;
    let model = model(&server);
    let session = session_for(&agent_loop::wire::openai::parse_response(&answer()).unwrap()).await;
    let cancellation = CancellationToken::new();
    let canceller = cancellation.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        canceller.cancel();
    });
    let started = Instant::now();
    let outcome = session
        .run_turn(&model, &mut start(), &cancellation)
        .await
        .expect("an interrupted turn is not an error");
    assert_eq!(outcome.status, TurnStatus::Interrupted);
    // A behaviour check with a generous bound: well before the server's
    // 10 s delay, so the request did not run to its end.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// Every field of every tracing event and span, as text.
#[derive(Clone, Default)]
struct FieldText(std::sync::Arc<std::sync::Mutex<String>>);

struct Visitor<'a>(&'a mut String);

impl tracing::field::Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?}\n", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for FieldText {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        event.record(&mut Visitor(&mut self.0.lock().unwrap()));
    }

    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        attributes.record(&mut Visitor(&mut self.0.lock().unwrap()));
    }
}

#[tokio::test]
async fn the_key_is_in_no_tracing_field() {
    use tracing_subscriber::layer::SubscriberExt;
    let recorded = FieldText::default();
    let subscriber = tracing_subscriber::registry().with(recorded.clone());
    // The test runs on one thread, so the subscriber sees every await.
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = MockServer::start().await;
    respond_once(&server, ResponseTemplate::new(503), 1).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({ "error": { "message": "bad key", "type": "invalid_request_error" } }),
        ))
        .mount(&server)
        .await;
    let (_, text) = failing_turn(&model(&server)).await;
    let fields = recorded.0.lock().unwrap().clone();
    assert!(
        fields.contains("attempt=2"),
        "the requests were traced: {fields}"
    );
    assert!(
        fields.contains("retrying"),
        "the retry was traced: {fields}"
    );
    assert!(!fields.contains("FAKE-KEY"), "the key leaked: {fields}");
    assert!(!text.contains("FAKE-KEY"));
}

#[tokio::test]
async fn credentials_in_the_base_url_reach_no_tracing_field_nor_debug_nor_error() {
    use tracing_subscriber::layer::SubscriberExt;
    let recorded = FieldText::default();
    let subscriber = tracing_subscriber::registry().with(recorded.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    // A basic-auth proxy, and a key in the query.
    let base = server
        .uri()
        .replace("http://", "http://proxyuser:PROXY-SECRET@");
    let model = OpenAiModel::new("m")
        .base_url(format!("{base}/v1?key=QUERY-SECRET"))
        .max_retries(1)
        .backoff(Duration::from_millis(5), Duration::from_millis(10));
    let (_, text) = failing_turn(&model).await;
    let fields = recorded.0.lock().unwrap().clone();
    assert!(
        fields.contains(&format!("url=\"{}/v1", server.uri())),
        "the URL is traced without credentials: {fields}"
    );
    let anthropic = AnthropicModel::new("claude").base_url(format!("{base}?key=QUERY-SECRET"));
    for (what, output) in [
        ("tracing", fields),
        ("the error", text),
        ("Debug", format!("{model:?} {model:#?}")),
        ("Anthropic Debug", format!("{anthropic:?} {anthropic:#?}")),
    ] {
        assert!(
            !output.contains("PROXY-SECRET") && !output.contains("QUERY-SECRET"),
            "{what} leaked a credential: {output}"
        );
    }
    assert!(format!("{anthropic:?}").contains(&server.uri().replace("http://", "")));
}
