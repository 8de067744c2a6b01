//! Refusals that mean something other than "the request failed", as the
//! providers send them (issue: "Refusals that mean 'window full' or 'the
//! model made a mistake' are not recognised"): xAI's and LM Studio's
//! full-window messages are read as a full window, and Groq's
//! `tool_use_failed` (HTTP 400, the model's unreadable output quoted in
//! `failed_generation`) is handed to the model, which tries again within
//! the turn's limits, at most twice in a row. On a loopback server, with
//! every request body held to OpenAI's rules.

use agent_loop::conversation::{FinishReason, Message};
use agent_loop::model::{ModelErrorKind, OpenAiModel};
use agent_loop::turn::{ModelError, TurnError};
use agent_loop::{Definition, ToolLimits};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

/// Groq's refusal of a tool call it could not parse, as its API answers
/// (pydantic/pydantic-ai PR #2774, huggingface/smolagents #1119).
const GENERATION: &str = "<function=get_weather{\"city\": \"Paris\"</function>";

fn groq_refusal() -> Value {
    json!({ "error": {
        "message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
        "type": "invalid_request_error",
        "code": "tool_use_failed",
        "failed_generation": GENERATION
    } })
}

fn tool_call() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "llama-3.3-70b-versatile",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{ "id": "call_w", "type": "function",
                "function": { "name": "get_weather", "arguments": "{\"city\": \"Paris\"}" } }]
        } }],
        "usage": { "prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29 }
    })
}

fn answer() -> Value {
    json!({
        "id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "llama-3.3-70b-versatile",
        "choices": [{ "index": 0, "finish_reason": "stop",
            "message": { "role": "assistant", "content": "Sunny in Paris." } }],
        "usage": { "prompt_tokens": 40, "completion_tokens": 4, "total_tokens": 44 }
    })
}

/// A server answering `answers` in order, the last one for good.
async fn serve(answers: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    let last = answers.len() - 1;
    for (index, answer) in answers.into_iter().enumerate() {
        let mock = Mock::given(method("POST")).respond_with(answer);
        let mock = if index == last {
            mock
        } else {
            mock.up_to_n_times(1)
        };
        mock.mount(&server).await;
    }
    server
}

fn groq(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("llama-3.3-70b-versatile")
        .base_url(format!("{}/openai/v1", server.uri()))
        .api_key(FAKE_KEY)
        .max_retries(0)
}

async fn weather(limits: ToolLimits) -> Definition<agent_loop::Bound> {
    Definition::builder()
        .name("weather")
        .tool(echo("get_weather"))
        .tool_limits(limits)
        .build()
        .validate()
        .expect("valid")
        .bind(agent_loop::Bindings::new(
            agent_loop::SessionId::new(),
            agent_loop::LoopId::new(),
        ))
        .await
        .expect("binds")
}

/// The texts of the user messages a request body carries.
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|message| message["role"] == "user")
        .filter_map(|message| message["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_failed_tool_call_is_shown_to_the_model_which_calls_again() {
    let server = serve(vec![
        ResponseTemplate::new(400).set_body_json(groq_refusal()),
        ResponseTemplate::new(200).set_body_json(tool_call()),
        ResponseTemplate::new(200).set_body_json(answer()),
    ])
    .await;
    let session = weather(ToolLimits::default()).await;
    let mut conversation = vec![Message::user("Weather in Paris?")];
    let outcome = session
        .run_turn(&groq(&server), &mut conversation, &CancellationToken::new())
        .await
        .expect("the model mends its call");
    assert_eq!(outcome.answer(), Some("Sunny in Paris."));

    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        let violations = crate::wire_rules::openai_violations(&body["messages"]);
        assert!(violations.is_empty(), "{violations:?}");
    }
    // The second request tells the model what was refused, quoting it.
    let told = user_texts(&bodies[1]);
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(told[0], "Weather in Paris?");
    assert_eq!(
        told[1],
        format!(
            "Your last reply was refused by the provider as a tool call: Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.\nWhat you wrote: {GENERATION}\nCall the tool again by its exact name, with its arguments as one JSON object that matches its schema, or answer in text."
        )
    );
    // The refusal is an iteration without calls; the call then runs (the
    // answer's request is no iteration of its own).
    let iterations = &outcome.stats.iterations;
    assert_eq!(iterations.len(), 2);
    assert_eq!(
        iterations[0].finish_reason,
        FinishReason::Other("tool_use_failed".into())
    );
    assert!(iterations[0].calls.is_empty());
    assert_eq!(iterations[1].calls.len(), 1);
    assert_eq!(outcome.stats.usage.input_tokens, 60);
    // The instruction stays in the conversation, between the question and
    // the mended call.
    assert_eq!(conversation.len(), 5);
    assert_eq!(conversation[1].text(), told[1]);
}

#[tokio::test]
async fn a_third_failed_tool_call_in_a_row_fails_the_turn_with_it() {
    let server = serve(vec![
        ResponseTemplate::new(400).set_body_json(groq_refusal()),
    ])
    .await;
    let session = weather(ToolLimits::default()).await;
    let mut conversation = vec![Message::user("Weather in Paris?")];
    let error = session
        .run_turn(&groq(&server), &mut conversation, &CancellationToken::new())
        .await
        .expect_err("three refusals in a row");
    let TurnError::Model { source, .. } = &error else {
        panic!("{error}");
    };
    assert!(source.is_failed_tool_call(), "{source}");
    assert_eq!(source.kind, ModelErrorKind::Http { status: 400 });
    assert_eq!(source.failed_generation.as_deref(), Some(GENERATION));
    assert_eq!(bodies(&server).await.len(), 3, "the first and two more");
    // Two instructions were added; nothing half-done.
    assert_eq!(conversation.len(), 3);
}

/// Asking again counts against the iterations as an output instruction
/// does: with `iterations(1)`, the first refusal is answered (iteration
/// 1), and the second, at iteration 2, fails on the limit.
#[tokio::test]
async fn a_failed_tool_call_past_the_iterations_limit_fails_on_the_limit() {
    let server = serve(vec![
        ResponseTemplate::new(400).set_body_json(groq_refusal()),
    ])
    .await;
    let session = weather(ToolLimits::new().iterations(1)).await;
    let mut conversation = vec![Message::user("Weather in Paris?")];
    let error = session
        .run_turn(&groq(&server), &mut conversation, &CancellationToken::new())
        .await
        .expect_err("no iteration left to try again");
    assert!(matches!(error, TurnError::ToolLimit(_)), "{error}");
    assert_eq!(bodies(&server).await.len(), 2);
    assert_eq!(conversation.len(), 2, "one instruction, for the first");
}

/// Twice in a row is the bound, and an answer in between starts the count
/// again: refused, refused, a call, refused, refused, the answer completes.
#[tokio::test]
async fn the_bound_counts_refusals_in_a_row() {
    let refused = || ResponseTemplate::new(400).set_body_json(groq_refusal());
    let server = serve(vec![
        refused(),
        refused(),
        ResponseTemplate::new(200).set_body_json(tool_call()),
        refused(),
        refused(),
        ResponseTemplate::new(200).set_body_json(answer()),
    ])
    .await;
    let session = weather(ToolLimits::default()).await;
    let mut conversation = vec![Message::user("Weather in Paris?")];
    let outcome = session
        .run_turn(&groq(&server), &mut conversation, &CancellationToken::new())
        .await
        .expect("never three in a row");
    assert_eq!(outcome.answer(), Some("Sunny in Paris."));
    assert_eq!(bodies(&server).await.len(), 6);
}

/// Streamed, Groq reports the refusal as an `error` event inside a 200
/// stream (a real recording): read as the same failed tool call, with its
/// code and quoted output, and handed to the model.
#[tokio::test]
async fn a_streamed_failed_tool_call_is_handed_to_the_model_too() {
    let recorded = std::fs::read(format!("{FIXTURES}/openai-stream/groq_tool_use_failed.sse"))
        .expect("the recording");
    let answer = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Done.\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let server = serve(vec![
        ResponseTemplate::new(200).set_body_raw(recorded, "text/event-stream"),
        ResponseTemplate::new(200).set_body_raw(answer, "text/event-stream"),
    ])
    .await;
    let session = weather(ToolLimits::default()).await;
    let mut conversation = vec![Message::user("Look it up.")];
    let outcome = session
        .run_turn(
            &groq(&server).stream(true),
            &mut conversation,
            &CancellationToken::new(),
        )
        .await
        .expect("the model is told and answers");
    assert_eq!(outcome.answer(), Some("Done."));
    let told = user_texts(&bodies(&server).await[1]);
    assert_eq!(told.len(), 2, "{told:?}");
    assert!(
        told[1].contains(
            r#"What you wrote: {"name": "get_something_by_name", "arguments": { "invalid_param": "value" }}"#
        ),
        "{}",
        told[1]
    );
}

/// A refusal of another kind is not a failed tool call, and a failed tool
/// call is not a full window.
#[test]
fn only_groqs_code_is_a_failed_tool_call() {
    let refused = |code: &str| {
        let mut error = ModelError::new(ModelErrorKind::Http { status: 400 });
        error.code = Some(code.to_owned());
        error
    };
    assert!(refused("tool_use_failed").is_failed_tool_call());
    assert!(!refused("tool_use_failed").exceeds_context_window());
    assert!(!refused("invalid_api_key").is_failed_tool_call());
    assert!(!refused("context_length_exceeded").is_failed_tool_call());
}

/// xAI's and LM Studio's full-window messages, as their users reported
/// them (cline/cline #3120; lmstudio-ai/lmstudio-bug-tracker #546, #2205;
/// anomalyco/opencode #11141), parsed from each server's error body by
/// the Chat Completions model.
#[tokio::test]
async fn xai_and_lm_studio_full_windows_are_read_as_full_windows() {
    let messages = [
        "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
        "Trying to keep the first 111490 tokens when context the overflows. However, the model is loaded with context length of only 32768 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input",
        "The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 10247 >= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter prompt.",
        "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)",
    ];
    for message in messages {
        // LM Studio sends `{"error": "<text>"}`; xAI the OpenAI shape.
        for body in [
            json!({ "error": message }),
            json!({ "error": { "message": message, "type": "invalid_request_error" } }),
        ] {
            let server = serve(vec![ResponseTemplate::new(400).set_body_json(&body)]).await;
            let conversation = [Message::user("A very long question.")];
            let error = agent_loop::turn::Model::respond(
                &groq(&server),
                agent_loop::turn::ModelRequest::new(&conversation),
            )
            .await
            .expect_err("refused");
            assert!(error.exceeds_context_window(), "{body}: {error}");
            assert!(!error.is_failed_tool_call(), "{body}");
        }
    }
    // The same words in a rate limit's 429 are not a full window.
    let mut limited = ModelError::new(ModelErrorKind::Http { status: 429 });
    limited.message = Some(messages[0].to_owned());
    assert!(!limited.exceeds_context_window());
}
