//! A conversation begun on one provider and continued on another: the
//! second model's request leaves out what its format cannot carry, within
//! its provider's rules, and says what it left out; set to refuse, it
//! sends nothing.

use agent_loop::conversation::{ContentPart, Message, WireFormat};
use agent_loop::model::{
    AnthropicModel, GeminiModel, ModelErrorKind, OpenAiModel, OpenAiResponsesModel,
};
use agent_loop::wire::{Dropped, DroppedKind, anthropic, gemini, openai, responses};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

fn recorded(name: &str) -> Value {
    fixture(&format!("anthropic/{name}"))
}

fn anthropic_answer() -> Value {
    json!({
        "id": "msg_final", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{ "type": "text", "text": "Done." }],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": { "input_tokens": 10, "output_tokens": 2 }
    })
}

fn chat_answer() -> Value {
    json!({
        "id": "chatcmpl-final", "object": "chat.completion", "created": 0, "model": "gpt-4o",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": "Still done." },
            "finish_reason": "stop"
        }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12 }
    })
}

/// A conversation run on Anthropic with extended thinking: the recorded
/// response (a signed `thinking` block, text and a tool call), the tool's
/// result, and a final answer.
async fn thinking_conversation() -> Vec<Message> {
    let thinking = recorded("ant_thinking.response.json");
    let response = anthropic::parse_response(&thinking).expect("the recording parses");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(&thinking))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_answer()))
        .mount(&server)
        .await;
    let claude = AnthropicModel::new("claude-sonnet-4-5")
        .base_url(server.uri())
        .api_key(FAKE_KEY);
    let session = session_for(&response).await;
    let mut conversation = start();
    session
        .run_turn(&claude, &mut conversation, &CancellationToken::new())
        .await
        .expect("the Anthropic turn runs");
    conversation
}

/// Where the signed thinking blocks of `conversation` are: (message, part).
fn thinking_places(conversation: &[Message]) -> Vec<(usize, usize)> {
    let mut places = Vec::new();
    for (index, message) in conversation.iter().enumerate() {
        if let Message::Assistant(assistant) = message {
            for (position, part) in assistant.content.iter().enumerate() {
                if let ContentPart::Reasoning(reasoning) = part {
                    assert_eq!(reasoning.origin.format, WireFormat::AnthropicMessages);
                    assert!(reasoning.signature.is_some(), "signed: {reasoning:?}");
                    places.push((index, position));
                }
            }
        }
    }
    places
}

#[tokio::test]
async fn an_anthropic_conversation_continues_on_chat_completions_without_its_thinking() {
    let mut conversation = thinking_conversation().await;
    let thinking = thinking_places(&conversation);
    assert!(!thinking.is_empty(), "the recording has a thinking block");

    // The export reports each signed thinking block it leaves out, where
    // it was, and nothing else.
    let exported = openai::export_messages(&conversation);
    let reported: Vec<(usize, Option<usize>, DroppedKind)> = exported
        .dropped
        .iter()
        .map(|dropped| (dropped.message, dropped.part, dropped.kind))
        .collect();
    let expected: Vec<(usize, Option<usize>, DroppedKind)> = thinking
        .iter()
        .map(|&(message, part)| {
            (
                message,
                Some(part),
                DroppedKind::Reasoning {
                    format: WireFormat::AnthropicMessages,
                },
            )
        })
        .collect();
    assert_eq!(reported, expected);
    let violations = crate::wire_rules::openai_violations(&json!(exported.messages));
    assert!(violations.is_empty(), "{violations:#?}");

    // Continued on Chat Completions: the request goes out without the
    // thinking, and within OpenAI's rules.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(chat_answer()))
        .mount(&server)
        .await;
    let gpt = OpenAiModel::new("gpt-4o")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY);
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    conversation.push(Message::user("And now?"));
    session
        .run_turn(&gpt, &mut conversation, &CancellationToken::new())
        .await
        .expect("the Chat Completions turn runs");
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 1);
    let sent = bodies[0].to_string();
    assert!(!sent.contains("signature"), "no thinking goes out: {sent}");
    let violations = crate::wire_rules::openai_violations(&bodies[0]["messages"]);
    assert!(violations.is_empty(), "{violations:#?}");
    // The thinking stays in the conversation, for Anthropic to read later.
    assert_eq!(thinking_places(&conversation), thinking);
}

#[tokio::test]
async fn a_model_set_to_refuse_dropped_parts_sends_nothing_and_names_them() {
    let mut conversation = thinking_conversation().await;
    let before = conversation.clone();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(chat_answer()))
        .mount(&server)
        .await;
    let gpt = OpenAiModel::new("gpt-4o")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
        .refuse_dropped(true);
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    let error = session
        .run_turn(&gpt, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("the request is refused");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Request);
    let message = error.to_string();
    assert!(
        message.contains("reasoning of Anthropic Messages (from ")
            && message.contains(", model claude-sonnet-4-5) in message 1, part 0"),
        "{message}"
    );
    assert!(bodies(&server).await.is_empty(), "nothing was sent");
    assert_eq!(conversation, before, "the conversation is as it was");
}

/// The drop report of an export, as (message, part, kind).
fn reported(dropped: &[Dropped]) -> Vec<(usize, Option<usize>, DroppedKind)> {
    dropped
        .iter()
        .map(|dropped| (dropped.message, dropped.part, dropped.kind))
        .collect()
}

/// What every export of the conversation must report: each signed
/// thinking block, where it was.
fn thinking_dropped(conversation: &[Message]) -> Vec<(usize, Option<usize>, DroppedKind)> {
    thinking_places(conversation)
        .into_iter()
        .map(|(message, part)| {
            (
                message,
                Some(part),
                DroppedKind::Reasoning {
                    format: WireFormat::AnthropicMessages,
                },
            )
        })
        .collect()
}

/// The thinking texts of `conversation`, none of which may leave for
/// another provider.
fn thinking_texts(conversation: &[Message]) -> Vec<String> {
    conversation
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(|assistant| assistant.content.iter())
        .filter_map(|part| match part {
            ContentPart::Reasoning(reasoning) if !reasoning.text.trim().is_empty() => {
                Some(reasoning.text.clone())
            }
            _ => None,
        })
        .collect()
}

/// The signatures of the thinking blocks of `conversation`.
fn thinking_signatures(conversation: &[Message]) -> Vec<String> {
    conversation
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(|assistant| assistant.content.iter())
        .filter_map(|part| match part {
            ContentPart::Reasoning(reasoning) => reasoning.signature.clone(),
            _ => None,
        })
        .collect()
}

/// Continues `conversation` with one more user message on `model` (whose
/// server answers `answer` at `endpoint`) and returns the body it sent.
async fn continue_on<M: agent_loop::turn::Model + 'static>(
    conversation: &mut Vec<Message>,
    server: &MockServer,
    endpoint: &str,
    answer: Value,
    model: &M,
) -> Value {
    Mock::given(method("POST"))
        .and(path(endpoint))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(server)
        .await;
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    conversation.push(Message::user("And now?"));
    session
        .run_turn(model, conversation, &CancellationToken::new())
        .await
        .expect("the turn on the second provider runs");
    let mut bodies = bodies(server).await;
    assert_eq!(bodies.len(), 1);
    bodies.remove(0)
}

#[tokio::test]
async fn an_anthropic_thinking_conversation_continues_on_responses_and_on_gemini() {
    let original = thinking_conversation().await;
    let expected = thinking_dropped(&original);
    assert!(!expected.is_empty(), "the recording has a thinking block");
    let thoughts = thinking_texts(&original);

    // The exports report each signed thinking block they leave out, and
    // nothing else, and write within their provider's rules.
    let exported = responses::export_messages(&original);
    assert_eq!(reported(&exported.dropped), expected);
    let violations = crate::wire_rules::responses_violations(&json!(exported.input));
    assert!(violations.is_empty(), "Responses: {violations:#?}");
    let exported = gemini::export_contents(&original);
    assert_eq!(reported(&exported.dropped), expected);
    let violations = crate::wire_rules::gemini_violations(&json!(exported.contents));
    assert!(violations.is_empty(), "Gemini: {violations:#?}");

    // On OpenAI Responses: a turn's body holds no thinking, and its input
    // passes the rules.
    let server = MockServer::start().await;
    let gpt = OpenAiResponsesModel::new("gpt-5.4")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY);
    let answer = json!({
        "id": "resp_1", "object": "response", "status": "completed",
        "output": [{ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": "Still done.", "annotations": [] }] }],
        "usage": { "input_tokens": 10, "output_tokens": 2 }
    });
    let mut conversation = original.clone();
    let body = continue_on(&mut conversation, &server, "/v1/responses", answer, &gpt).await;
    let sent = body.to_string();
    for thought in &thoughts {
        assert!(
            !sent.contains(thought.as_str()),
            "thinking went out: {sent}"
        );
    }
    assert!(!sent.contains("signature"), "{sent}");
    for signature in thinking_signatures(&original) {
        assert!(
            !sent.contains(signature.as_str()),
            "a signature went out: {sent}"
        );
    }
    assert_eq!(body["store"], false);
    let violations = crate::wire_rules::responses_violations(&body["input"]);
    assert!(violations.is_empty(), "Responses: {violations:#?}");
    assert_eq!(
        thinking_dropped(&conversation),
        expected,
        "the conversation keeps it"
    );

    // On Gemini: the same.
    let server = MockServer::start().await;
    let gemini_model = GeminiModel::new("gemini-3-flash-preview")
        .base_url(server.uri())
        .api_key(FAKE_KEY);
    let answer = json!({
        "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Still done." }] },
            "finishReason": "STOP", "index": 0 }],
        "usageMetadata": { "promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12 }
    });
    let mut conversation = original.clone();
    let body = continue_on(
        &mut conversation,
        &server,
        "/v1beta/models/gemini-3-flash-preview:generateContent",
        answer,
        &gemini_model,
    )
    .await;
    let sent = body.to_string();
    for thought in &thoughts {
        assert!(
            !sent.contains(thought.as_str()),
            "thinking went out: {sent}"
        );
    }
    for signature in thinking_signatures(&original) {
        assert!(
            !sent.contains(signature.as_str()),
            "a signature went out: {sent}"
        );
    }
    // The call Anthropic made carries Gemini's documented stand-in, which
    // a mid-turn switch needs (Gemini 3 refuses an unsigned first call).
    let model_turn = body["contents"]
        .as_array()
        .and_then(|contents| contents.iter().find(|c| c["role"] == "model"))
        .cloned()
        .unwrap_or_default();
    let call = model_turn["parts"]
        .as_array()
        .and_then(|parts| parts.iter().find(|p| p.get("functionCall").is_some()))
        .cloned()
        .unwrap_or_default();
    assert_eq!(call["thoughtSignature"], "skip_thought_signature_validator");
    let violations = crate::wire_rules::gemini_violations(&body["contents"]);
    assert!(violations.is_empty(), "Gemini: {violations:#?}");
    assert_eq!(
        thinking_dropped(&conversation),
        expected,
        "the conversation keeps it"
    );
}
