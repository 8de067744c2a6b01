//! `GeminiModel` against a loopback server replaying recorded real
//! responses: whole turns with echo tools, streamed and not; every body
//! passes Gemini's rules, carries the instructions as `systemInstruction`
//! and the key only in the `x-goog-api-key` header; every
//! `thoughtSignature` goes back on its part across tool rounds; retries and
//! typed errors.

use agent_loop::conversation::Message;
use agent_loop::model::{GeminiModel, ModelErrorKind, ThinkingLevel, ToolChoice};
use agent_loop::turn::{ModelRequest, TurnEvent, TurnEvents, TurnOptions};
use agent_loop::wire::gemini;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

const GENERATE: &str = "/v1beta/models/gemini-test:generateContent";
const STREAM: &str = "/v1beta/models/gemini-test:streamGenerateContent";

fn final_answer() -> Value {
    json!({
        "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Done." }] }, "finishReason": "STOP", "index": 0 }],
        "usageMetadata": { "promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12 }
    })
}

fn model(server: &MockServer) -> GeminiModel {
    GeminiModel::new("gemini-test")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .backoff(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(5),
        )
}

/// The SSE body of `chunks` (`data:` lines, as `alt=sse` sends them).
fn sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\r\n\r\n"))
        .collect()
}

fn streamed(text: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(text, "text/event-stream")
}

/// Every request's body checked: the rules, the instructions, the tools,
/// and the key nowhere but its header.
async fn check_requests(name: &str, server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.expect("recording on");
    for request in &requests {
        assert!(
            !request.url.as_str().contains(FAKE_KEY),
            "{name}: key in the URL"
        );
        assert!(request.url.query().is_none_or(|query| query == "alt=sse"));
        assert_eq!(
            request
                .headers
                .get("x-goog-api-key")
                .map(|v| v.to_str().unwrap()),
            Some(FAKE_KEY)
        );
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert!(
            !body.to_string().contains(FAKE_KEY),
            "{name}: key in the body"
        );
        let violations = crate::wire_rules::gemini_violations(&body["contents"]);
        assert!(violations.is_empty(), "{name}: {violations:#?}\n{body:#}");
        let violations = crate::wire_rules::gemini_tool_violations(&body["tools"]);
        assert!(violations.is_empty(), "{name}: {violations:#?}");
        assert_eq!(
            body["systemInstruction"]["parts"][0]["text"], INSTRUCTIONS,
            "{name}"
        );
    }
    bodies(server).await
}

#[tokio::test]
async fn recorded_responses_drive_whole_turns_and_every_request_passes_the_rules() {
    for (name, recorded) in responses("gemini") {
        let response = gemini::parse_response(&recorded).expect("the fixture parses");
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(GENERATE))
            .and(header("x-goog-api-key", FAKE_KEY))
            .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(GENERATE))
            .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
            .mount(&server)
            .await;
        let session = session_for(&response).await;
        let mut conversation = start();
        let outcome = session
            .run_turn(
                &model(&server),
                &mut conversation,
                &CancellationToken::new(),
            )
            .await
            .unwrap_or_else(|error| panic!("{name}: {error:#}"));
        let calls = response.message.tool_calls().count();
        let bodies = check_requests(&name, &server).await;
        if calls == 0 {
            assert_eq!(bodies.len(), 1, "{name}");
            continue;
        }
        assert_eq!(outcome.answer(), Some("Done."), "{name}");
        assert_eq!(bodies.len(), 2, "{name}");
        let contents = bodies[1]["contents"].as_array().unwrap();
        let results = contents.last().unwrap()["parts"].as_array().unwrap();
        assert_eq!(results.len(), calls, "{name}");
    }
}

/// The `thoughtSignature`s of the model turns of `body`, by (turn, part).
fn signatures(body: &Value) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    for (turn, content) in body["contents"].as_array().unwrap().iter().enumerate() {
        for (position, part) in content["parts"].as_array().unwrap().iter().enumerate() {
            if let Some(signature) = part["thoughtSignature"].as_str() {
                found.push((turn, position, signature.to_owned()));
            }
        }
    }
    found
}

/// The signatures of a recorded response, by part.
fn recorded_signatures(recorded: &Value) -> Vec<(usize, String)> {
    recorded["candidates"][0]["content"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter_map(|(index, part)| Some((index, part["thoughtSignature"].as_str()?.to_owned())))
        .collect()
}

#[tokio::test]
async fn every_thought_signature_stays_on_its_part_across_two_tool_rounds() {
    let parallel = read_fixture("gemini/gem_parallel_sig.response.json");
    let single = read_fixture("gemini/gem_retry_error.response.json");
    let server = MockServer::start().await;
    for round in [&parallel, &single] {
        Mock::given(method("POST"))
            .and(path(GENERATE))
            .respond_with(ResponseTemplate::new(200).set_body_json(round))
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    Mock::given(method("POST"))
        .and(path(GENERATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let mut response = gemini::parse_response(&parallel).unwrap();
    response
        .message
        .content
        .extend(gemini::parse_response(&single).unwrap().message.content);
    let session = session_for(&response).await;
    let outcome = session
        .run_turn(&model(&server), &mut start(), &CancellationToken::new())
        .await
        .expect("the turn runs");
    assert_eq!(outcome.answer(), Some("Done."));
    let bodies = check_requests("two rounds", &server).await;
    assert_eq!(bodies.len(), 3);
    // contents: user, model (round 1), user (results), model (round 2), user.
    let first = recorded_signatures(&parallel);
    let second = recorded_signatures(&single);
    assert_eq!(first.len(), 1);
    let expected_second_body: Vec<(usize, usize, String)> = first
        .iter()
        .map(|(part, sig)| (1, *part, sig.clone()))
        .collect();
    assert_eq!(signatures(&bodies[1]), expected_second_body);
    let mut expected_third_body = expected_second_body.clone();
    expected_third_body.extend(second.iter().map(|(part, sig)| (3, *part, sig.clone())));
    assert_eq!(signatures(&bodies[2]), expected_third_body);
    // The signed call is the one the model signed, not another.
    let model_turn = &bodies[2]["contents"][1]["parts"];
    assert!(model_turn[0]["functionCall"]["name"] == "generate_topic");
    assert!(model_turn[1].get("thoughtSignature").is_none());
    // Results carry the call's name and the id the runner minted.
    let results = bodies[2]["contents"][2]["parts"].as_array().unwrap();
    for (call, result) in model_turn.as_array().unwrap().iter().zip(results) {
        assert_eq!(
            result["functionResponse"]["name"],
            call["functionCall"]["name"]
        );
        assert_eq!(result["functionResponse"]["id"], call["functionCall"]["id"]);
    }
}

fn read_fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[tokio::test]
async fn streamed_turns_append_what_unstreamed_turns_append() {
    for (name, recorded) in responses("gemini") {
        let response = gemini::parse_response(&recorded).unwrap();
        let session = session_for(&response).await;

        let plain = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(GENERATE))
            .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
            .up_to_n_times(1)
            .mount(&plain)
            .await;
        Mock::given(method("POST"))
            .and(path(GENERATE))
            .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
            .mount(&plain)
            .await;
        let mut unstreamed = start();
        session
            .run_turn(&model(&plain), &mut unstreamed, &CancellationToken::new())
            .await
            .unwrap_or_else(|error| panic!("{name}: {error:#}"));

        // The recorded response cut into one chunk per part, the finish
        // reason and usage on the last.
        let mut chunks: Vec<Value> = recorded["candidates"][0]["content"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| json!({ "candidates": [{ "content": { "role": "model", "parts": [part] }, "index": 0 }] }))
            .collect();
        let mut last = recorded.clone();
        last["candidates"][0]["content"]["parts"] = json!([]);
        chunks.push(last);
        let live = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(STREAM))
            .respond_with(streamed(sse(&chunks)))
            .up_to_n_times(1)
            .mount(&live)
            .await;
        Mock::given(method("POST"))
            .and(path(STREAM))
            .respond_with(streamed(sse(&[final_answer()])))
            .mount(&live)
            .await;
        let (events, mut receiver) = TurnEvents::channel();
        let mut live_conversation = start();
        session
            .run_turn(
                &model(&live).stream(true),
                &mut live_conversation,
                TurnOptions::builder().events(&events).build(),
            )
            .await
            .unwrap_or_else(|error| panic!("{name}: {error:#}"));
        drop(events);
        let mut text = String::new();
        while let Ok(event) = receiver.try_recv() {
            if let TurnEvent::TextDelta { text: piece } = event {
                text.push_str(&piece);
            }
        }
        let expected = if response.message.has_tool_calls() {
            format!("{}Done.", response.message.text())
        } else {
            response.message.text()
        };
        assert_eq!(text, expected, "{name}");
        // Tool call ids are minted per turn, and each server is a provider
        // of its own (`127.0.0.1:PORT`, recorded as the origin of what is
        // Gemini's): compare without them.
        let strip = |conversation: &[Message], server: &MockServer| -> Value {
            let mut value = serde_json::to_value(conversation).unwrap();
            strip_ids(&mut value, &server.address().to_string());
            value
        };
        assert_eq!(
            strip(&live_conversation, &live),
            strip(&unstreamed, &plain),
            "{name}"
        );
        let requests = live.received_requests().await.unwrap();
        assert!(requests.iter().all(|r| r.url.query() == Some("alt=sse")));
        check_requests(&name, &live).await;
    }
}

/// `value` without ids, and with `provider` as an origin's provider
/// written as `"the server"`.
fn strip_ids(value: &mut Value, provider: &str) {
    match value {
        Value::Object(fields) => {
            fields.remove("id");
            fields.remove("tool_call_id");
            if fields.get("provider").and_then(Value::as_str) == Some(provider) {
                fields.insert("provider".into(), json!("the server"));
            }
            fields
                .values_mut()
                .for_each(|field| strip_ids(field, provider));
        }
        Value::Array(items) => items.iter_mut().for_each(|item| strip_ids(item, provider)),
        _ => {}
    }
}

#[tokio::test]
async fn retryable_statuses_are_retried_and_errors_are_typed_without_the_key() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_json(
            json!({ "error": { "code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE" } }),
        ))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let session = session_for(&gemini::parse_response(&final_answer()).unwrap()).await;
    let outcome = session
        .run_turn(&model(&server), &mut start(), &CancellationToken::new())
        .await
        .expect("the retry succeeds");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    let limited = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({ "error": { "code": 400, "message": "Function call is missing a thought_signature in functionCall parts.", "status": "INVALID_ARGUMENT" } }),
        ))
        .mount(&limited)
        .await;
    let error = session
        .run_turn(&model(&limited), &mut start(), &CancellationToken::new())
        .await
        .expect_err("400 is an error");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Http { status: 400 });
    assert_eq!(error.error_type.as_deref(), Some("INVALID_ARGUMENT"));
    assert!(
        error
            .message
            .as_deref()
            .unwrap()
            .contains("thought_signature")
    );
    assert_eq!(error.attempts, 1);
    assert!(!all_output(error).contains(FAKE_KEY));
    assert!(!format!("{:?}", model(&limited)).contains(FAKE_KEY));
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_a_stream_error_with_the_providers_message() {
    let server = MockServer::start().await;
    let body = sse(&[
        json!({ "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Par" }] } }] }),
        json!({ "error": { "code": 500, "message": "Internal error encountered.", "status": "INTERNAL" } }),
    ]);
    Mock::given(method("POST"))
        .respond_with(streamed(body))
        .mount(&server)
        .await;
    let session = session_for(&gemini::parse_response(&final_answer()).unwrap()).await;
    let error = session
        .run_turn(
            &model(&server).stream(true),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect_err("the stream failed");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Stream, "{error}");
    assert_eq!(error.error_type.as_deref(), Some("INTERNAL"));
    assert_eq!(
        error.message.as_deref(),
        Some("Internal error encountered.")
    );

    let cut = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(streamed(sse(&[
            json!({ "candidates": [{ "content": { "parts": [{ "text": "Par" }] } }] }),
        ])))
        .mount(&cut)
        .await;
    let error = session
        .run_turn(
            &model(&cut).stream(true),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect_err("a cut stream");
    assert_eq!(model_error(&error).kind, ModelErrorKind::Stream);
}

#[test]
fn settings_reach_the_body() {
    let model = GeminiModel::new("gemini-test")
        .temperature(0.0)
        .max_tokens(512)
        .thinking_budget(0)
        .thinking_level(ThinkingLevel::High)
        .include_thoughts(true)
        .tool_choice(ToolChoice::Tool("echo".into()))
        .extra("safetySettings", json!([]));
    let conversation = start();
    let tools = [agent_loop::ToolInfo::without_parameters("echo", "Echoes.")];
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation)
        .instructions("Be brief.")
        .tools(&tools)
        .events(&events);
    let body = model.request_body(&request);
    assert_eq!(
        body["systemInstruction"],
        json!({ "parts": [{ "text": "Be brief." }] })
    );
    assert_eq!(
        body["toolConfig"],
        json!({ "functionCallingConfig": { "mode": "ANY", "allowedFunctionNames": ["echo"] } })
    );
    assert_eq!(
        body["generationConfig"],
        json!({
            "temperature": 0.0,
            "maxOutputTokens": 512,
            "thinkingConfig": { "thinkingBudget": 0, "thinkingLevel": "HIGH", "includeThoughts": true }
        })
    );
    assert_eq!(body["tools"][0]["functionDeclarations"][0]["name"], "echo");
    assert_eq!(body["safetySettings"], json!([]));
    for (choice, mode) in [
        (ToolChoice::Auto, "AUTO"),
        (ToolChoice::None, "NONE"),
        (ToolChoice::Required, "ANY"),
    ] {
        let body = GeminiModel::new("g")
            .tool_choice(choice)
            .request_body(&request);
        assert_eq!(
            body["toolConfig"]["functionCallingConfig"],
            json!({ "mode": mode })
        );
    }
    assert!(
        GeminiModel::new("g")
            .request_body(&request)
            .get("generationConfig")
            .is_none()
    );
}

#[tokio::test]
async fn native_output_sends_response_json_schema_and_the_json_text_is_the_value() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(GENERATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "candidates": [{ "content": { "role": "model", "parts": [{ "text": INVOICE_JSON }] }, "finishReason": "STOP" }]
        })))
        .mount(&server)
        .await;
    let invoice = native_invoice_turn(&model(&server)).await;
    assert_eq!(
        invoice,
        Invoice {
            number: "A-17".into(),
            total_cents: 4200
        }
    );
    let bodies = bodies(&server).await;
    let generation = &bodies[0]["generationConfig"];
    assert_eq!(generation["responseMimeType"], "application/json");
    assert_eq!(
        generation["responseJsonSchema"]["required"],
        json!(["number", "total_cents"])
    );
    assert_no_control_tool(&bodies[0]);
}

/// Gemini's "model is overloaded" as the stream's first chunk, before any
/// content, is retried like the same error as HTTP 503.
#[tokio::test]
async fn an_unavailable_chunk_before_any_content_is_retried() {
    let server = MockServer::start().await;
    let overloaded = sse(&[json!({ "error": {
        "code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE" } })]);
    Mock::given(method("POST"))
        .respond_with(streamed(overloaded))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let answer = sse(&[final_answer()]);
    Mock::given(method("POST"))
        .respond_with(streamed(answer))
        .mount(&server)
        .await;
    let session = session_for(&gemini::parse_response(&final_answer()).unwrap()).await;
    let outcome = session
        .run_turn(
            &model(&server).stream(true),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect("the retry answers");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// The model records its endpoint and model as the origin of a turn's
/// thought signatures: the next request to the same endpoint sends the
/// recorded signature back on its call; the same history to another
/// endpoint sends the documented stand-in instead and reports the
/// signature left out; both bodies pass Gemini's rules.
#[tokio::test]
async fn thought_signatures_go_back_to_their_endpoint_only() {
    let recorded = fixture("gemini/gem_parallel_sig.response.json");
    let signature = recorded["candidates"][0]["content"]["parts"][0]["thoughtSignature"].clone();
    assert!(signature.is_string(), "the recording is signed");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(GENERATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(GENERATE))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let session = session_for(&gemini::parse_response(&recorded).unwrap()).await;
    let mut conversation = start();
    let same = model(&server);
    session
        .run_turn(&same, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn ends");
    conversation.push(Message::user("And again."));
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation).events(&events);
    let first_call_signature = |body: &Value| -> Value {
        body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|content| content["parts"].as_array().unwrap())
            .find(|part| part.get("functionCall").is_some())
            .map(|part| part["thoughtSignature"].clone())
            .unwrap_or(Value::Null)
    };
    let to_same = same.request_body(&request);
    assert_eq!(first_call_signature(&to_same), signature);
    let elsewhere = GeminiModel::new("gemini-test").base_url("https://gemini.example.net");
    let to_elsewhere = elsewhere.request_body(&request);
    assert_eq!(
        first_call_signature(&to_elsewhere),
        "skip_thought_signature_validator"
    );
    for body in [&to_same, &to_elsewhere] {
        let violations = crate::wire_rules::gemini_violations(&body["contents"]);
        assert!(violations.is_empty(), "{violations:#?}");
    }
    let dropped = gemini::export_contents_for(
        &conversation,
        &agent_loop::wire::Target::new().provider("gemini.example.net"),
    )
    .dropped;
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(
        dropped[0].kind,
        agent_loop::wire::DroppedKind::Extras {
            format: agent_loop::conversation::WireFormat::Gemini
        }
    );
}
