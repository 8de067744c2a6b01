//! `OpenAiResponsesModel` against a loopback server replaying recorded
//! real Responses answers: whole turns with tools, streamed and not, every
//! request body checked against the Responses rules; stateless by default
//! (`store: false`, encrypted reasoning sent back right before its call);
//! chained with `previous_response_id` on request; retries and typed
//! errors.

use std::time::Duration;

use agent_loop::model::{
    ModelErrorKind, OpenAiResponsesModel, ReasoningEffort, ReasoningSummary, ToolChoice,
};
use agent_loop::turn::{ModelRequest, TurnEvent, TurnEvents, TurnOptions};
use agent_loop::wire::responses;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

fn recorded(name: &str) -> Value {
    fixture(&format!("openai-responses/{name}"))
}

fn recorded_text(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/openai-responses/{name}")).expect("fixture")
}

/// A final answer in Responses form.
fn final_answer() -> Value {
    json!({
        "id": "resp_final", "object": "response", "status": "completed",
        "output": [{
            "type": "message", "id": "msg_final", "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": "Done.", "annotations": [] }]
        }],
        "usage": { "input_tokens": 10, "output_tokens": 2 }
    })
}

/// `final_answer` as a stream.
fn final_answer_stream() -> String {
    let completed = json!({ "type": "response.completed", "response": final_answer() });
    let delta = json!({
        "type": "response.output_text.delta", "output_index": 0, "content_index": 0,
        "item_id": "msg_final", "delta": "Done."
    });
    let added = json!({
        "type": "response.output_item.added", "output_index": 0,
        "item": { "type": "message", "id": "msg_final", "role": "assistant", "status": "in_progress", "content": [] }
    });
    [
        ("response.output_item.added", added),
        ("response.output_text.delta", delta),
        ("response.completed", completed),
    ]
    .iter()
    .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
    .collect()
}

fn sse(text: impl Into<String>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(text.into(), "text/event-stream")
}

fn model(server: &MockServer, name: &str) -> OpenAiResponsesModel {
    OpenAiResponsesModel::new(name)
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
        .backoff(Duration::from_millis(5), Duration::from_millis(20))
}

/// A server answering `first` once, then `rest`.
async fn server_with(first: ResponseTemplate, rest: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(header(
            "authorization",
            format!("Bearer {FAKE_KEY}").as_str(),
        ))
        .respond_with(first)
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(rest)
        .mount(&server)
        .await;
    server
}

fn check_body(body: &Value) {
    let violations = crate::wire_rules::responses_violations(&body["input"]);
    assert!(violations.is_empty(), "{violations:#?}\n{body:#}");
    if body["store"] == false {
        let violations = crate::wire_rules::responses_stateless_violations(&body["input"]);
        assert!(violations.is_empty(), "{violations:#?}\n{body:#}");
    }
    let violations = crate::wire_rules::responses_tool_violations(&body["tools"]);
    assert!(violations.is_empty(), "{violations:#?}");
    assert_eq!(body["instructions"], INSTRUCTIONS);
}

/// The Done-when exchange: a reasoning model's tool turn, stateless.
#[tokio::test]
async fn a_tool_turn_sends_store_false_and_the_encrypted_reasoning_back_right_before_its_call() {
    for name in [
        "resp_store_false.response.json",
        "resp_reasoning_plan.response.json",
    ] {
        let recorded = recorded(name);
        let response = responses::parse_response(&recorded).unwrap();
        let server = server_with(
            ResponseTemplate::new(200).set_body_json(&recorded),
            ResponseTemplate::new(200).set_body_json(final_answer()),
        )
        .await;
        let session = session_for(&response).await;
        let outcome = session
            .run_turn(
                &model(&server, "gpt-5"),
                &mut start(),
                &CancellationToken::new(),
            )
            .await
            .unwrap_or_else(|error| panic!("{name}: {error:#}"));
        assert_eq!(outcome.answer(), Some("Done."), "{name}");
        let bodies = bodies(&server).await;
        assert_eq!(bodies.len(), 2, "{name}");
        for body in &bodies {
            check_body(body);
            assert_eq!(body["store"], false, "{name}");
            assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
            assert!(body.get("previous_response_id").is_none());
        }
        let encrypted = recorded["output"][0]["encrypted_content"].as_str().unwrap();
        let call_id = recorded["output"][1]["call_id"].as_str().unwrap();
        let input = bodies[1]["input"].as_array().unwrap();
        let at = input
            .iter()
            .position(|item| item["type"] == "reasoning")
            .unwrap_or_else(|| panic!("{name}: no reasoning sent back"));
        assert_eq!(input[at]["encrypted_content"], encrypted, "{name}");
        assert_eq!(input[at]["id"], recorded["output"][0]["id"], "{name}");
        assert_eq!(input[at + 1]["type"], "function_call", "{name}");
        assert_eq!(input[at + 1]["call_id"], call_id, "{name}");
        assert_eq!(
            input[at + 1]["id"],
            recorded["output"][1]["id"],
            "{name}: fc id with its reasoning"
        );
        assert_eq!(input[at + 2]["type"], "function_call_output", "{name}");
        assert_eq!(input[at + 2]["call_id"], call_id, "{name}");
    }
}

#[tokio::test]
async fn a_model_without_reasoning_gets_no_include_and_its_call_no_item_id() {
    let recorded = recorded("resp_json_schema.response.json");
    let response = responses::parse_response(&recorded).unwrap();
    let server = server_with(
        ResponseTemplate::new(200).set_body_json(&recorded),
        ResponseTemplate::new(200).set_body_json(final_answer()),
    )
    .await;
    let session = session_for(&response).await;
    session
        .run_turn(
            &model(&server, "gpt-4o"),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect("the turn completes");
    let bodies = bodies(&server).await;
    for body in &bodies {
        check_body(body);
        assert!(body.get("include").is_none(), "gpt-4o answers 400 to it");
    }
    let call = bodies[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call")
        .unwrap();
    assert!(call.get("id").is_none(), "{call}");
}

#[tokio::test]
async fn a_streamed_tool_turn_sends_text_as_events_and_ends_like_the_unstreamed_one() {
    let server = server_with(
        sse(recorded_text("resp_stream_store_false.sse")),
        sse(final_answer_stream()),
    )
    .await;
    let response = responses::parse_response(&json!({ "output": [
        { "type": "function_call", "call_id": "c", "name": "multiply", "arguments": "{}" }
    ] }))
    .unwrap();
    let session = session_for(&response).await;
    let (events, mut receiver) = TurnEvents::channel();
    let outcome = session
        .run_turn(
            &model(&server, "gpt-5.5").stream(true),
            &mut start(),
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .expect("the streamed turn completes");
    drop(events);
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(outcome.stats.call_count(), 1);
    let mut text = String::new();
    while let Ok(event) = receiver.try_recv() {
        if let TurnEvent::TextDelta { text: piece } = event {
            text.push_str(&piece);
        }
    }
    assert_eq!(text, "Done.");
    let bodies = bodies(&server).await;
    for body in &bodies {
        check_body(body);
        assert_eq!(body["stream"], true);
    }
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].headers["accept"], "text/event-stream");
}

#[tokio::test]
async fn a_stream_that_reports_an_error_is_a_typed_stream_error_with_the_providers_code() {
    let server = server_with(
        sse(recorded_text("resp_stream_quota_error.sse")),
        sse(final_answer_stream()),
    )
    .await;
    let session = session_for(&responses::parse_response(&final_answer()).unwrap()).await;
    let error = session
        .run_turn(
            &model(&server, "gpt-5").stream(true),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect_err("the stream failed");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Stream, "{error}");
    assert_eq!(error.error_type.as_deref(), Some("insufficient_quota"));
    assert!(
        error
            .message
            .as_deref()
            .unwrap()
            .starts_with("You exceeded your current quota")
    );
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "not retried"
    );
}

#[tokio::test]
async fn a_429_is_retried_and_a_400_is_a_typed_error_with_no_key_anywhere() {
    let server = server_with(
        ResponseTemplate::new(429).set_body_json(json!({
            "error": { "message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded" }
        })),
        ResponseTemplate::new(200).set_body_json(final_answer()),
    )
    .await;
    let session = session_for(&responses::parse_response(&final_answer()).unwrap()).await;
    let outcome = session
        .run_turn(
            &model(&server, "gpt-5"),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect("retried");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    let server = server_with(
        ResponseTemplate::new(400).set_body_json(json!({ "error": {
            "message": "Encrypted content is not supported with this model.",
            "type": "invalid_request_error", "param": "include", "code": "unsupported_parameter"
        } })),
        ResponseTemplate::new(200).set_body_json(final_answer()),
    )
    .await;
    let error = session
        .run_turn(
            &model(&server, "gpt-4o").include_encrypted_reasoning(true),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect_err("a 400 is no answer");
    let text = all_output(&error);
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Http { status: 400 });
    assert_eq!(error.code.as_deref(), Some("unsupported_parameter"));
    assert_eq!(error.attempts, 1, "400 is not retried");
    assert!(!text.contains(FAKE_KEY), "{text}");
}

#[tokio::test]
async fn chaining_sends_the_previous_response_id_and_only_what_follows_it() {
    let recorded = recorded("resp_prev_id_chain.response.json");
    let response = responses::parse_response(&recorded).unwrap();
    let server = server_with(
        ResponseTemplate::new(200).set_body_json(&recorded),
        ResponseTemplate::new(200).set_body_json(final_answer()),
    )
    .await;
    let session = session_for(&response).await;
    session
        .run_turn(
            &model(&server, "gpt-4.1").previous_response_id(true),
            &mut start(),
            &CancellationToken::new(),
        )
        .await
        .expect("the turn completes");
    let bodies = bodies(&server).await;
    assert_eq!(bodies[0]["store"], true);
    assert!(
        bodies[0].get("previous_response_id").is_none(),
        "nothing to chain to yet"
    );
    assert_eq!(bodies[1]["store"], true);
    assert_eq!(bodies[1]["previous_response_id"], recorded["id"]);
    let input = bodies[1]["input"].as_array().unwrap();
    assert_eq!(input.len(), 1, "{input:?}");
    assert_eq!(input[0]["type"], "function_call_output");
    assert_eq!(input[0]["call_id"], recorded["output"][0]["call_id"]);
}

#[test]
fn settings_reach_the_body_and_extra_fields_are_written_last() {
    let model = OpenAiResponsesModel::new("o4-mini")
        .temperature(0.5)
        .max_output_tokens(300)
        .reasoning_effort(ReasoningEffort::Low)
        .reasoning_summary(ReasoningSummary::Detailed)
        .tool_choice(ToolChoice::Tool("echo".into()))
        .parallel_tool_calls(false)
        .extra("service_tier", json!("flex"))
        .extra("temperature", json!(0.25));
    let conversation = start();
    let tools = [agent_loop::ToolInfo::without_parameters("echo", "Echoes.")];
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation)
        .tools(&tools)
        .events(&events);
    let body = model.request_body(&request);
    assert_eq!(body["max_output_tokens"], 300);
    assert_eq!(
        body["reasoning"],
        json!({ "effort": "low", "summary": "detailed" })
    );
    assert_eq!(
        body["tool_choice"],
        json!({ "type": "function", "name": "echo" })
    );
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["tools"][0]["strict"], false);
    assert_eq!(body["service_tier"], "flex");
    assert_eq!(body["temperature"], 0.25, "extra fields are written last");
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["input"],
        json!([{ "role": "user", "content": "Please use the tools." }])
    );
    assert!(body.get("instructions").is_none());
    let bare = model.request_body(&request.tools(agent_loop::turn::ToolList::default()));
    for field in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(bare.get(field).is_none(), "{field} without tools");
    }
}

#[tokio::test]
async fn native_output_sends_text_format_json_schema_and_the_text_is_the_value() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "resp_native", "object": "response", "status": "completed",
            "output": [{ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                         "content": [{ "type": "output_text", "text": INVOICE_JSON, "annotations": [] }] }]
        })))
        .mount(&server)
        .await;
    let invoice = native_invoice_turn(&model(&server, "gpt-4o")).await;
    assert_eq!(
        invoice,
        Invoice {
            number: "A-17".into(),
            total_cents: 4200
        }
    );
    let bodies = bodies(&server).await;
    let format = &bodies[0]["text"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["name"], "Invoice");
    assert_eq!(format["strict"], false, "strict is opt-in");
    assert_eq!(format["schema"]["type"], "object");
    assert_no_control_tool(&bodies[0]);
}

/// A reasoning item without its encrypted content (a history from a
/// `store: true` chain, or the include turned off) refers to nothing
/// stored: a stateless request leaves it out, sends its call without the
/// `fc_` id, and reports it.
#[tokio::test]
async fn a_stateless_request_sends_no_reasoning_it_cannot_carry() {
    use agent_loop::conversation::{ContentPart, Message, ReasoningPart, ToolCall, WireFormat};
    let mut reasoning = ReasoningPart::new("Plan: look it up.", WireFormat::OpenAiResponses);
    reasoning.extras = agent_loop::conversation::Extras::new(
        WireFormat::OpenAiResponses,
        json!({ "id": "rs_1" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let mut call = ToolCall::new("call_1", "echo", "{}");
    call.extras = agent_loop::conversation::Extras::new(
        WireFormat::OpenAiResponses,
        json!({ "id": "fc_1" })
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let mut assistant =
        agent_loop::conversation::AssistantMessage::with_tool_calls(None, vec![call]);
    assistant
        .content
        .insert(0, ContentPart::Reasoning(reasoning));
    let conversation = vec![
        Message::user("Go."),
        Message::Assistant(assistant),
        Message::tool_result(agent_loop::conversation::ToolResult::ok("call_1", "found")),
    ];

    let stateless = agent_loop::wire::responses::export_messages_stateless(&conversation);
    assert!(
        stateless
            .input
            .iter()
            .all(|item| item["type"] != "reasoning")
    );
    assert!(!json!(stateless.input).to_string().contains("fc_1"));
    assert_eq!(stateless.dropped.len(), 1);
    assert_eq!(
        (stateless.dropped[0].message, stateless.dropped[0].part),
        (1, Some(0))
    );
    let violations = crate::wire_rules::responses_stateless_violations(&json!(stateless.input));
    assert!(violations.is_empty(), "{violations:#?}");
    // With the response stored, the id is what the server reads.
    let stored = agent_loop::wire::responses::export_messages(&conversation);
    assert!(stored.input.iter().any(|item| item["type"] == "reasoning"));
    assert!(stored.dropped.is_empty());
    let violations = crate::wire_rules::responses_stateless_violations(&json!(stored.input));
    assert_eq!(violations.len(), 1, "the rule sees the bare id");
}

/// The model records its endpoint and model as the origin of a turn's
/// reasoning: the next request to the same endpoint sends the encrypted
/// reasoning back; the same history to another endpoint of the format
/// (another host) leaves it out and reports it; both bodies pass the
/// stateless rules.
#[tokio::test]
async fn encrypted_reasoning_goes_back_to_its_endpoint_only() {
    let recorded = recorded("resp_store_false.response.json");
    let encrypted = recorded["output"][0]["encrypted_content"].clone();
    assert!(
        encrypted.is_string(),
        "the recording holds encrypted reasoning"
    );
    let server = server_with(
        ResponseTemplate::new(200).set_body_json(&recorded),
        ResponseTemplate::new(200).set_body_json(final_answer()),
    )
    .await;
    let session = session_for(&responses::parse_response(&recorded).unwrap()).await;
    let mut conversation = start();
    let same = model(&server, "gpt-5");
    session
        .run_turn(&same, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn ends");
    let reasoning = conversation
        .iter()
        .filter_map(|message| match message {
            agent_loop::conversation::Message::Assistant(assistant) => Some(assistant),
            _ => None,
        })
        .flat_map(|assistant| &assistant.content)
        .find_map(|part| match part {
            agent_loop::conversation::ContentPart::Reasoning(reasoning) => Some(reasoning),
            _ => None,
        })
        .expect("the turn kept its reasoning");
    assert_eq!(
        reasoning.origin.provider.as_deref(),
        Some(server.address().to_string().as_str())
    );
    assert_eq!(reasoning.origin.model.as_deref(), Some("gpt-5"));

    conversation.push(agent_loop::conversation::Message::user("And again."));
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation).events(&events);
    let encrypted_of = |body: &Value| -> Vec<Value> {
        body["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["type"] == "reasoning")
            .map(|item| item["encrypted_content"].clone())
            .collect()
    };
    let to_same = same.request_body(&request);
    assert_eq!(encrypted_of(&to_same), [encrypted]);
    let elsewhere = OpenAiResponsesModel::new("gpt-5").base_url("https://responses.example.net/v1");
    let to_elsewhere = elsewhere.request_body(&request);
    assert!(encrypted_of(&to_elsewhere).is_empty(), "{to_elsewhere:#}");
    for body in [&to_same, &to_elsewhere] {
        let violations = crate::wire_rules::responses_stateless_violations(&body["input"]);
        assert!(violations.is_empty(), "{violations:#?}");
    }
    // Reported: the reasoning, and the extras (response and item ids,
    // statuses) that name things only that endpoint knows.
    let dropped = responses::export_messages_stateless_for(
        &conversation,
        &agent_loop::wire::Target::new().provider("responses.example.net"),
    )
    .dropped;
    let format = agent_loop::conversation::WireFormat::OpenAiResponses;
    let reasoning_dropped = dropped
        .iter()
        .filter(|dropped| dropped.kind == agent_loop::wire::DroppedKind::Reasoning { format })
        .count();
    assert_eq!(reasoning_dropped, 1, "{dropped:?}");
    assert!(
        dropped.iter().all(|dropped| {
            dropped
                .origin
                .as_ref()
                .and_then(|origin| origin.provider.clone())
                == Some(server.address().to_string())
        }),
        "{dropped:?}"
    );
}

/// With `previous_response_id`, a response id goes back to the endpoint
/// that made it only: another endpoint of the format gets the whole
/// history instead of an id its server never stored.
#[tokio::test]
async fn a_previous_response_id_goes_back_to_its_endpoint_only() {
    let recorded = recorded("resp_store_false.response.json");
    let server = server_with(
        ResponseTemplate::new(200).set_body_json(&recorded),
        ResponseTemplate::new(200).set_body_json(final_answer()),
    )
    .await;
    let session = session_for(&responses::parse_response(&recorded).unwrap()).await;
    let mut conversation = start();
    let same = model(&server, "gpt-5").previous_response_id(true);
    session
        .run_turn(&same, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn ends");
    conversation.push(agent_loop::conversation::Message::user("And again."));
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation).events(&events);

    let to_same = same.request_body(&request);
    assert_eq!(to_same["previous_response_id"], "resp_final");
    assert_eq!(
        to_same["input"],
        json!([{ "role": "user", "content": "And again." }])
    );
    let elsewhere = OpenAiResponsesModel::new("gpt-5")
        .base_url("https://responses.example.net/v1")
        .previous_response_id(true);
    let to_elsewhere = elsewhere.request_body(&request);
    assert_eq!(to_elsewhere.get("previous_response_id"), None);
    let input = to_elsewhere["input"].as_array().unwrap();
    assert_eq!(
        input.first(),
        Some(&json!({ "role": "user", "content": "Please use the tools." }))
    );
    assert_eq!(
        input.last(),
        Some(&json!({ "role": "user", "content": "And again." }))
    );
    let violations = crate::wire_rules::responses_violations(&to_elsewhere["input"]);
    assert!(violations.is_empty(), "{violations:#?}");
}
