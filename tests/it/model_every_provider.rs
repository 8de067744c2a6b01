//! The transport every HTTP model shares, over all four providers from one
//! table, on a loopback server: each posts to its own path with its key
//! header, retries a 503 and then reads its answer, reports a 401 with the
//! provider's own error body as a typed error that never holds the key,
//! calls a 200 body that is not its response an invalid response, and is
//! recorded to a cassette that holds neither its key nor its endpoint and
//! replays offline to the same answer.
//! Written once over `HttpModel<P>` (`P: Provider`), as the models are.

use std::time::Duration;

use agent_loop::cassette::{Cassette, Recorder, Replayer, Strictness};
use agent_loop::conversation::{ModelResponse, WireFormat};
use agent_loop::model::{
    AnthropicModel, GeminiModel, HttpModel, ModelErrorKind, OpenAiModel, OpenAiResponsesModel,
    Provider,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

/// One provider: its model at a server, the path it posts to, the key
/// header it sends, an answer saying "Done.", and an error body for a 401
/// with the message a user should read.
struct Case<P> {
    model: fn(&MockServer) -> HttpModel<P>,
    path: &'static str,
    key_header: &'static str,
    format: WireFormat,
    answer: Value,
    unauthorized: Value,
    message: &'static str,
}

fn fast<P: Provider>(model: HttpModel<P>) -> HttpModel<P> {
    model
        .api_key(FAKE_KEY)
        .backoff(Duration::from_millis(5), Duration::from_millis(10))
}

async fn run_turn(
    model: &(impl agent_loop::turn::Model + 'static),
) -> Result<agent_loop::turn::TurnOutcome, agent_loop::turn::TurnError> {
    let session = session_for(&ModelResponse::answer("Done.")).await;
    session
        .run_turn(model, &mut start(), &CancellationToken::new())
        .await
}

async fn check<P: Provider>(case: Case<P>) {
    // A 503 twice, then the answer: three attempts at the provider's
    // path, each with the key in its header.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(case.path))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(case.path))
        .respond_with(ResponseTemplate::new(200).set_body_json(&case.answer))
        .mount(&server)
        .await;
    let model = (case.model)(&server);
    let outcome = run_turn(&model).await.expect("the turn completes");
    assert_eq!(outcome.answer(), Some("Done."), "{model:?}");
    let received = server.received_requests().await.expect("recorded");
    assert_eq!(received.len(), 3, "{model:?}");
    for request in &received {
        let key = request
            .headers
            .get(case.key_header)
            .and_then(|value| value.to_str().ok());
        assert!(
            key.is_some_and(|key| key.ends_with(FAKE_KEY)),
            "{model:?}: {key:?}"
        );
    }

    // A 401 with the provider's error body: typed, its message read, the
    // key nowhere in what the error shows.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_json(&case.unauthorized))
        .mount(&server)
        .await;
    let model = (case.model)(&server);
    let error = run_turn(&model).await.expect_err("unauthorized");
    let shown = all_output(&error);
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Http { status: 401 }, "{shown}");
    assert_eq!(error.attempts, 1, "a 401 is not retried: {shown}");
    assert_eq!(error.message.as_deref(), Some(case.message), "{shown}");
    assert!(!shown.contains(FAKE_KEY), "{shown}");

    // A 200 body that is not the provider's response.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "unexpected": [] })))
        .mount(&server)
        .await;
    let model = (case.model)(&server);
    let error = run_turn(&model).await.expect_err("not a response");
    assert_eq!(
        model_error(&error).kind,
        ModelErrorKind::InvalidResponse,
        "{}",
        all_output(&error)
    );

    // Recorded to a cassette, which holds the model's name and format but
    // not its key, key header or endpoint, and replays offline.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(case.path))
        .respond_with(ResponseTemplate::new(200).set_body_json(&case.answer))
        .mount(&server)
        .await;
    let file = std::env::temp_dir().join(format!(
        "agent-loop-every-provider-{}.json",
        agent_loop::SessionId::new()
    ));
    let recorder = Recorder::new((case.model)(&server), &file);
    let recorded = run_turn(&recorder).await.expect("recorded");
    let text = std::fs::read_to_string(&file).expect("the cassette was saved");
    let _ = std::fs::remove_file(&file);
    for secret in [FAKE_KEY, case.key_header, server.uri().as_str()] {
        assert!(
            !text.contains(secret),
            "{secret:?} reached the cassette:\n{text}"
        );
    }
    let cassette: Cassette = serde_json::from_str(&text).expect("a cassette");
    assert_eq!(cassette.exchanges[0].model.format, Some(case.format));
    drop(server);
    let replayer = Replayer::new(cassette, Strictness::Exact);
    let replayed = run_turn(&replayer).await.expect("replayed offline");
    assert_eq!(replayed.answer(), recorded.answer());
    assert_eq!(replayed.answer(), Some("Done."));
}

#[tokio::test]
async fn openai_chat_completions() {
    check(Case {
        model: |server| fast(OpenAiModel::new("m").base_url(format!("{}/v1", server.uri()))),
        path: "/v1/chat/completions",
        key_header: "authorization",
        format: WireFormat::OpenAiChat,
        answer: json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Done." }, "finish_reason": "stop" }]
        }),
        unauthorized: json!({ "error": { "message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key" } }),
        message: "Incorrect API key provided.",
    })
    .await;
}

#[tokio::test]
async fn openai_responses() {
    check(Case {
        model: |server| {
            fast(OpenAiResponsesModel::new("m").base_url(format!("{}/v1", server.uri())))
        },
        path: "/v1/responses",
        key_header: "authorization",
        format: WireFormat::OpenAiResponses,
        answer: json!({
            "id": "resp_1", "object": "response", "status": "completed", "model": "m",
            "output": [{
                "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{ "type": "output_text", "text": "Done.", "annotations": [] }]
            }]
        }),
        unauthorized: json!({ "error": { "message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key" } }),
        message: "Incorrect API key provided.",
    })
    .await;
}

#[tokio::test]
async fn anthropic_messages() {
    check(Case {
        model: |server| fast(AnthropicModel::new("m").base_url(server.uri())),
        path: "/v1/messages",
        key_header: "x-api-key",
        format: WireFormat::AnthropicMessages,
        answer: json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{ "type": "text", "text": "Done." }],
            "stop_reason": "end_turn", "usage": { "input_tokens": 3, "output_tokens": 1 }
        }),
        unauthorized: json!({ "type": "error", "error": { "type": "authentication_error", "message": "invalid x-api-key" } }),
        message: "invalid x-api-key",
    })
    .await;
}

#[tokio::test]
async fn gemini() {
    check(Case {
        model: |server| fast(GeminiModel::new("m").base_url(server.uri())),
        path: "/v1beta/models/m:generateContent",
        key_header: "x-goog-api-key",
        format: WireFormat::Gemini,
        answer: json!({
            "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Done." }] }, "finishReason": "STOP" }]
        }),
        unauthorized: json!({ "error": { "code": 401, "message": "API key not valid. Please pass a valid API key.", "status": "UNAUTHENTICATED" } }),
        message: "API key not valid. Please pass a valid API key.",
    })
    .await;
}
