//! Both models with `stream(true)` against a loopback server that streams
//! the recorded real responses as server-sent events (built from each
//! body, arguments and text cut in pieces): the streamed turn appends
//! exactly what the unstreamed turn appends, text and reasoning arrive as
//! turn events, the body asks for a stream, and a payload that is not JSON,
//! an error event mid-stream and a stream cut short are typed errors.

use agent_loop::conversation::Message;
use agent_loop::model::{AnthropicModel, ModelErrorKind, OpenAiModel};
use agent_loop::turn::TurnOptions;
use agent_loop::turn::{Model, TurnError, TurnEvent, TurnEvents, TurnOutcome};
use agent_loop::wire::{anthropic, openai};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

/// `text` in pieces of at most `size` characters.
fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// The SSE text of OpenAI chunks for an unstreamed `chat.completion`.
fn openai_sse(body: &Value) -> String {
    let choice = &body["choices"][0];
    let message = choice["message"].as_object().cloned().unwrap_or_default();
    let chunk = |delta: Value| json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta }] });
    let mut chunks = Vec::new();
    let mut head = message.clone();
    for key in ["content", "reasoning_content", "refusal", "tool_calls"] {
        head.remove(key);
    }
    chunks.push(chunk(Value::Object(head)));
    for key in ["reasoning_content", "content", "refusal"] {
        if let Some(text) = message.get(key).and_then(Value::as_str) {
            for piece in pieces(text, 7) {
                chunks.push(chunk(json!({ key: piece })));
            }
        }
    }
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (index, call) in calls.iter().enumerate() {
        let mut head = call.as_object().cloned().unwrap_or_default();
        head.insert("index".into(), json!(index));
        head.insert(
            "function".into(),
            json!({ "name": call["function"]["name"], "arguments": "" }),
        );
        chunks.push(chunk(json!({ "tool_calls": [head] })));
        for piece in pieces(call["function"]["arguments"].as_str().unwrap_or(""), 3) {
            chunks.push(chunk(
                json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
            ));
        }
    }
    chunks.push(
        json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": choice["finish_reason"] }] }),
    );
    if let Some(usage) = body.get("usage") {
        chunks.push(json!({ "choices": [], "usage": usage }));
    }
    let mut sse: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    sse.push_str("data: [DONE]\n\n");
    sse
}

/// The SSE text of Anthropic events for an unstreamed message.
fn anthropic_sse(body: &Value) -> String {
    let mut events: Vec<(&str, Value)> = Vec::new();
    let mut head = body.as_object().cloned().unwrap_or_default();
    let blocks = head
        .remove("content")
        .and_then(|content| content.as_array().cloned())
        .unwrap_or_default();
    let usage = head.remove("usage").unwrap_or(json!({}));
    head.insert("content".into(), json!([]));
    head.insert("stop_reason".into(), Value::Null);
    head.insert("stop_sequence".into(), Value::Null);
    head.insert(
        "usage".into(),
        json!({ "input_tokens": usage["input_tokens"], "output_tokens": 1 }),
    );
    events.push((
        "message_start",
        json!({ "type": "message_start", "message": head }),
    ));
    events.push(("ping", json!({ "type": "ping" })));
    for (index, block) in blocks.iter().enumerate() {
        let delta = |delta: Value| {
            (
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            )
        };
        let mut start = block.as_object().cloned().unwrap_or_default();
        let mut deltas = Vec::new();
        match block["type"].as_str() {
            Some("text") => {
                start.insert("text".into(), json!(""));
                if let Some(citations) = block.get("citations").and_then(Value::as_array) {
                    start.insert("citations".into(), json!([]));
                    for citation in citations {
                        deltas.push(delta(
                            json!({ "type": "citations_delta", "citation": citation }),
                        ));
                    }
                }
                for piece in pieces(block["text"].as_str().unwrap_or(""), 5) {
                    deltas.push(delta(json!({ "type": "text_delta", "text": piece })));
                }
            }
            Some("thinking") => {
                start.insert("thinking".into(), json!(""));
                start.remove("signature");
                for piece in pieces(block["thinking"].as_str().unwrap_or(""), 9) {
                    deltas.push(delta(
                        json!({ "type": "thinking_delta", "thinking": piece }),
                    ));
                }
                if let Some(signature) = block.get("signature") {
                    deltas.push(delta(
                        json!({ "type": "signature_delta", "signature": signature }),
                    ));
                }
            }
            Some("tool_use" | "server_tool_use") => {
                start.insert("input".into(), json!({}));
                for piece in pieces(&block["input"].to_string(), 3) {
                    deltas.push(delta(
                        json!({ "type": "input_json_delta", "partial_json": piece }),
                    ));
                }
            }
            _ => {}
        }
        events.push((
            "content_block_start",
            json!({ "type": "content_block_start", "index": index, "content_block": start }),
        ));
        events.extend(deltas);
        events.push((
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        ));
    }
    events.push((
        "message_delta",
        json!({ "type": "message_delta",
                "delta": { "stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"] },
                "usage": usage }),
    ));
    events.push(("message_stop", json!({ "type": "message_stop" })));
    sse(&events)
}

fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

fn streamed(text: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(text, "text/event-stream")
}

/// Serves `first`, then `rest` for every later request.
async fn server(first: ResponseTemplate, rest: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(first)
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(rest)
        .mount(&server)
        .await;
    server
}

/// Runs a turn watched by a channel: the outcome and the events.
async fn watched_turn(
    model: &(impl Model + 'static),
    response: &agent_loop::conversation::ModelResponse,
    conversation: &mut Vec<Message>,
) -> (Result<TurnOutcome, TurnError>, Vec<TurnEvent>) {
    let session = session_for(response).await;
    let (events, mut receiver) = TurnEvents::channel();
    let outcome = session
        .run_turn(
            model,
            conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await;
    drop(events);
    let mut seen = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        seen.push(event);
    }
    (outcome, seen)
}

fn deltas(events: &[TurnEvent]) -> (String, String) {
    let mut text = String::new();
    let mut reasoning = String::new();
    for event in events {
        match event {
            TurnEvent::TextDelta { text: piece } => text.push_str(piece),
            TurnEvent::ReasoningDelta { text: piece } => reasoning.push_str(piece),
            _ => {}
        }
    }
    (text, reasoning)
}

fn openai_answer() -> Value {
    json!({
        "id": "chatcmpl-final", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Done." }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4 }
    })
}

fn anthropic_answer() -> Value {
    json!({
        "id": "msg_final", "type": "message", "role": "assistant", "model": "claude",
        "content": [{ "type": "text", "text": "Done." }],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": { "input_tokens": 3, "output_tokens": 1 }
    })
}

fn openai_model(server: &MockServer, stream: bool) -> OpenAiModel {
    OpenAiModel::new("m")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
        .stream(stream)
}

fn anthropic_model(server: &MockServer, stream: bool) -> AnthropicModel {
    AnthropicModel::new("claude")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .stream(stream)
}

#[tokio::test]
async fn streamed_openai_turns_append_what_unstreamed_turns_append() {
    for (name, recorded) in responses("openai") {
        let response = openai::parse_response(&recorded).unwrap();

        let plain = server(
            ResponseTemplate::new(200).set_body_json(&recorded),
            ResponseTemplate::new(200).set_body_json(openai_answer()),
        )
        .await;
        let mut unstreamed = start();
        let (expected, _) =
            watched_turn(&openai_model(&plain, false), &response, &mut unstreamed).await;
        let expected = expected.unwrap_or_else(|e| panic!("{name}: {e:#}"));

        let live = server(
            streamed(openai_sse(&recorded)),
            streamed(openai_sse(&openai_answer())),
        )
        .await;
        let mut streamed_conversation = start();
        let (outcome, events) = watched_turn(
            &openai_model(&live, true),
            &response,
            &mut streamed_conversation,
        )
        .await;
        let outcome = outcome.unwrap_or_else(|e| panic!("{name}: {e:#}"));
        // The two answers come from two loopback servers (two ports, so
        // two providers in the recorded origins): compared without them.
        assert_eq!(
            without_providers(outcome.messages(&streamed_conversation)),
            without_providers(expected.messages(&unstreamed)),
            "{name}"
        );
        assert_eq!(outcome.stats.usage, expected.stats.usage, "{name}");

        let (text, reasoning) = deltas(&events);
        let message = &recorded["choices"][0]["message"];
        let mut expected_text = message["content"].as_str().unwrap_or("").to_owned();
        if response.message.tool_calls().count() > 0 {
            expected_text.push_str("Done.");
        }
        assert_eq!(text, expected_text, "{name}");
        assert_eq!(
            reasoning,
            message["reasoning_content"].as_str().unwrap_or(""),
            "{name}"
        );
        for body in bodies(&live).await {
            assert_eq!(body["stream"], true);
            assert_eq!(body["stream_options"], json!({ "include_usage": true }));
            let violations = crate::wire_rules::openai_violations(&body["messages"]);
            assert!(violations.is_empty(), "{name}: {violations:#?}");
        }
    }
}

#[tokio::test]
async fn streamed_anthropic_turns_append_what_unstreamed_turns_append() {
    for (name, recorded) in responses("anthropic") {
        let response = anthropic::parse_response(&recorded).unwrap();

        let plain = server(
            ResponseTemplate::new(200).set_body_json(&recorded),
            ResponseTemplate::new(200).set_body_json(anthropic_answer()),
        )
        .await;
        let mut unstreamed = start();
        let (expected, _) =
            watched_turn(&anthropic_model(&plain, false), &response, &mut unstreamed).await;
        let expected = expected.unwrap_or_else(|e| panic!("{name}: {e:#}"));

        let live = server(
            streamed(anthropic_sse(&recorded)),
            streamed(anthropic_sse(&anthropic_answer())),
        )
        .await;
        let mut streamed_conversation = start();
        let (outcome, events) = watched_turn(
            &anthropic_model(&live, true),
            &response,
            &mut streamed_conversation,
        )
        .await;
        let outcome = outcome.unwrap_or_else(|e| panic!("{name}: {e:#}"));
        // The two answers come from two loopback servers (two ports, so
        // two providers in the recorded origins): compared without them.
        assert_eq!(
            without_providers(outcome.messages(&streamed_conversation)),
            without_providers(expected.messages(&unstreamed)),
            "{name}"
        );
        assert_eq!(outcome.stats.usage, expected.stats.usage, "{name}");

        let (_, reasoning) = deltas(&events);
        let thinking: String = recorded["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|block| block["thinking"].as_str())
            .collect();
        assert_eq!(reasoning, thinking, "{name}");
        for body in bodies(&live).await {
            assert_eq!(body["stream"], true);
            let violations = crate::wire_rules::anthropic_violations(&body["messages"]);
            assert!(violations.is_empty(), "{name}: {violations:#?}");
        }
    }
}

/// The `ModelError` of a streamed OpenAI turn served `sse`.
async fn openai_stream_error(sse: &str) -> (ModelErrorKind, Option<String>, Option<String>) {
    let server = server(streamed(sse.to_owned()), streamed(sse.to_owned())).await;
    let response = openai::parse_response(&openai_answer()).unwrap();
    let (outcome, _) = watched_turn(&openai_model(&server, true), &response, &mut start()).await;
    let error = outcome.expect_err("the stream fails");
    let text = all_output(&error);
    assert!(!text.contains("FAKE-KEY"), "{text}");
    let error = model_error(&error);
    assert_eq!(error.attempts, 1, "a broken stream is not retried");
    if let Some(message) = &error.message {
        // The provider's words are printed once, by the error and not by a
        // cause of it.
        let chain =
            std::iter::successors(Some(error as &(dyn std::error::Error + 'static)), |error| {
                error.source()
            })
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(": ");
        assert_eq!(chain.matches(message.as_str()).count(), 1, "{chain}");
    }
    (
        error.kind.clone(),
        error.error_type.clone(),
        error.message.clone(),
    )
}

#[tokio::test]
async fn a_payload_that_is_not_json_is_a_stream_error() {
    let sse = "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"Hi\"}}]}\n\ndata: {not json\n\n";
    let (kind, _, _) = openai_stream_error(sse).await;
    assert_eq!(kind, ModelErrorKind::Stream);
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_a_stream_error_with_the_providers_message() {
    let sse = concat!(
        "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"Hi\"}}]}\n\n",
        "data: {\"error\": {\"message\": \"The server had an error\", \"type\": \"server_error\"}}\n\n",
    );
    let (kind, error_type, message) = openai_stream_error(sse).await;
    assert_eq!(kind, ModelErrorKind::Stream);
    assert_eq!(error_type.as_deref(), Some("server_error"));
    assert_eq!(message.as_deref(), Some("The server had an error"));
}

#[tokio::test]
async fn an_error_event_is_a_stream_error_with_the_providers_message_whatever_its_data_shape() {
    // The data is the error object itself, not `{"error": ...}`: the SSE
    // event name says it is an error. The `[DONE]` after it does not make
    // the cut text a whole answer.
    let sse = concat!(
        "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"The answer is 4\"}}]}\n\n",
        "event: error\n",
        "data: {\"message\":\"upstream connection reset\",\"type\":\"server_error\"}\n\n",
        "data: [DONE]\n\n",
    );
    let (kind, error_type, message) = openai_stream_error(sse).await;
    assert_eq!(kind, ModelErrorKind::Stream);
    assert_eq!(error_type.as_deref(), Some("server_error"));
    assert_eq!(message.as_deref(), Some("upstream connection reset"));
}

#[tokio::test]
async fn done_without_a_finish_reason_still_ends_a_stream_without_an_error_event() {
    let sse = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done.\"}}]}\n\n",
        "data: [DONE]\n\n",
    );
    let server = server(streamed(sse.to_owned()), streamed(sse.to_owned())).await;
    let response = openai::parse_response(&openai_answer()).unwrap();
    let (outcome, _) = watched_turn(&openai_model(&server, true), &response, &mut start()).await;
    assert_eq!(outcome.expect("the turn completes").answer(), Some("Done."));
}

#[tokio::test]
async fn a_streamed_request_answered_200_with_a_json_error_body_keeps_the_providers_error() {
    let openai_error = ResponseTemplate::new(200).set_body_json(json!({ "error": {
        "message": "model 'm' not found", "type": "invalid_request_error", "code": 404
    } }));
    let live = server(openai_error.clone(), openai_error).await;
    let response = openai::parse_response(&openai_answer()).unwrap();
    let (outcome, _) = watched_turn(&openai_model(&live, true), &response, &mut start()).await;
    let error = outcome.expect_err("an error body is no stream");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{error}");
    assert_eq!(error.error_type.as_deref(), Some("invalid_request_error"));
    assert_eq!(error.message.as_deref(), Some("model 'm' not found"));
    assert_eq!(error.code.as_deref(), Some("404"));
    assert_eq!(error.attempts, 1);

    let anthropic_error = ResponseTemplate::new(200).set_body_json(json!({
        "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" }
    }));
    let live = server(anthropic_error.clone(), anthropic_error).await;
    let response = anthropic::parse_response(&anthropic_answer()).unwrap();
    let (outcome, _) = watched_turn(&anthropic_model(&live, true), &response, &mut start()).await;
    let error = outcome.expect_err("an error body is no stream");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{error}");
    assert_eq!(error.error_type.as_deref(), Some("overloaded_error"));
    assert_eq!(error.message.as_deref(), Some("Overloaded"));
}

#[tokio::test]
async fn a_stream_with_another_content_type_is_still_read_as_events() {
    let sse = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done.\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let mislabelled = ResponseTemplate::new(200).set_body_raw(sse, "text/plain");
    let server = server(mislabelled.clone(), mislabelled).await;
    let response = openai::parse_response(&openai_answer()).unwrap();
    let (outcome, _) = watched_turn(&openai_model(&server, true), &response, &mut start()).await;
    assert_eq!(outcome.expect("the turn completes").answer(), Some("Done."));
}

#[tokio::test]
async fn a_stream_cut_before_its_end_is_a_stream_error() {
    let sse = "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"Hi\"}}]}\n\n";
    let (kind, _, _) = openai_stream_error(sse).await;
    assert_eq!(kind, ModelErrorKind::Stream);
}

#[tokio::test]
async fn an_anthropic_error_event_mid_stream_is_a_stream_error() {
    let mut events = vec![(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 3, "output_tokens": 1 } } }),
    )];
    events.push((
        "error",
        json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
    ));
    let text = sse(&events);
    let server = server(streamed(text.clone()), streamed(text)).await;
    let response = anthropic::parse_response(&anthropic_answer()).unwrap();
    let (outcome, _) = watched_turn(&anthropic_model(&server, true), &response, &mut start()).await;
    let error = outcome.expect_err("the stream fails");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Stream);
    assert_eq!(error.error_type.as_deref(), Some("overloaded_error"));
    assert_eq!(error.message.as_deref(), Some("Overloaded"));
}

/// `messages` as JSON without the `provider` of their origins.
fn without_providers(messages: &[agent_loop::conversation::Message]) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.remove("provider");
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(messages).expect("messages serialise");
    strip(&mut value);
    value
}
