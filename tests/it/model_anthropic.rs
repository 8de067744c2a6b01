//! `AnthropicModel` against a loopback server replaying recorded real
//! responses: whole turns run with echo tools, and every request body it
//! sends passes Anthropic's rules and carries the mode's instructions (as
//! `system`), the tools and `max_tokens`.

use agent_loop::conversation::Message;
use agent_loop::model::{AnthropicModel, ModelError, ModelErrorKind, ToolChoice};
use agent_loop::turn::{Model, ModelRequest, ToolList, TurnEvents};
use agent_loop::wire::anthropic;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

fn final_answer() -> Value {
    json!({
        "id": "msg_final",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{ "type": "text", "text": "Done." }],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": { "input_tokens": 10, "output_tokens": 2 }
    })
}

fn model(server: &MockServer) -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-5")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
}

#[tokio::test]
async fn recorded_responses_drive_whole_turns_and_every_request_passes_the_rules() {
    for (name, recorded) in responses("anthropic") {
        let response = anthropic::parse_response(&recorded).expect("the fixture parses");
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .and(header("x-api-key", FAKE_KEY))
            .and(header("anthropic-version", "2023-06-01"))
            .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/messages"))
            .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
            .mount(&server)
            .await;

        let session = session_for(&response).await;
        let mut conversation = vec![Message::system("Answer in English."), start().remove(0)];
        let outcome = session
            .run_turn(
                &model(&server),
                &mut conversation,
                &CancellationToken::new(),
            )
            .await
            .unwrap_or_else(|error| panic!("{name}: {error:#}"));

        let calls = response.message.tool_calls().count();
        let bodies = bodies(&server).await;
        if calls == 0 {
            assert_eq!(bodies.len(), 1, "{name}: a final answer needs one request");
        } else {
            assert_eq!(outcome.answer(), Some("Done."), "{name}");
            assert_eq!(bodies.len(), 2, "{name}");
        }
        for body in &bodies {
            let violations = crate::wire_rules::anthropic_violations(&body["messages"]);
            assert!(violations.is_empty(), "{name}: {violations:#?}");
            assert_eq!(body["model"], "claude-sonnet-4-5");
            assert_eq!(body["max_tokens"], 4096);
            assert_eq!(
                body["system"],
                json!([
                    { "type": "text", "text": INSTRUCTIONS },
                    { "type": "text", "text": "Answer in English." }
                ]),
                "{name}: the instructions go first, joined with the conversation's"
            );
            let tools: Vec<&str> = body["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .map(|tool| tool["name"].as_str().unwrap())
                .collect();
            assert!(tools.contains(&"echo"), "{name}: {tools:?}");
            assert!(body.get("stream").is_none());
        }
        if calls > 0 {
            let last = bodies[1]["messages"].as_array().unwrap().last().unwrap();
            let results = last["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|block| block["type"] == "tool_result")
                .count();
            assert_eq!(results, calls, "{name}");
        }
    }
}

#[test]
fn settings_reach_the_body() {
    let model = AnthropicModel::new("claude")
        .max_tokens(8000)
        .thinking_budget(2048)
        .temperature(1.0)
        .parallel_tool_calls(false)
        .extra("metadata", json!({ "user_id": "u1" }));
    let conversation = start();
    let tools = [agent_loop::ToolInfo::without_parameters("echo", "Echoes.")];
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation)
        .instructions("Be brief.")
        .tools(&tools)
        .events(&events);
    let body = model.request_body(&request);
    assert_eq!(body["max_tokens"], 8000);
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(
        body["thinking"],
        json!({ "type": "enabled", "budget_tokens": 2048 })
    );
    assert_eq!(
        body["tool_choice"],
        json!({ "type": "auto", "disable_parallel_tool_use": true })
    );
    assert_eq!(body["metadata"]["user_id"], "u1");

    // Forced tool use, on a model without thinking (with thinking on, the
    // API refuses it, and so does the model: see below).
    let forced = AnthropicModel::new("claude")
        .parallel_tool_calls(false)
        .tool_choice(ToolChoice::Required)
        .request_body(&request);
    assert_eq!(
        forced["tool_choice"],
        json!({ "type": "any", "disable_parallel_tool_use": true })
    );
    let mut bare = request.tools(ToolList::default());
    bare.instructions = None;
    let bare = model.request_body(&bare);
    assert!(bare.get("tools").is_none() && bare.get("tool_choice").is_none());
    assert!(bare.get("system").is_none());
}

/// Sends `model` one request with a tool and returns its error; asserts
/// the server received nothing.
async fn refused(model: AnthropicModel) -> ModelError {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let model = model.base_url(server.uri()).api_key(FAKE_KEY);
    let conversation = start();
    let tools = [agent_loop::ToolInfo::without_parameters("echo", "Echoes.")];
    let events = TurnEvents::default();
    let error = model
        .respond(
            ModelRequest::new(&conversation)
                .instructions("Be brief.")
                .tools(&tools)
                .events(&events),
        )
        .await
        .expect_err("refused before sending");
    assert!(
        server.received_requests().await.unwrap().is_empty(),
        "nothing is sent"
    );
    error
}

#[tokio::test]
async fn thinking_requests_that_break_the_apis_rules_are_refused_before_sending() {
    let cases = [
        (
            AnthropicModel::new("claude").thinking_budget(100),
            "below the API's minimum of 1024",
        ),
        (
            // max_tokens is 4096 unless set.
            AnthropicModel::new("claude").thinking_budget(8192),
            "must be less than max_tokens 4096",
        ),
        (
            AnthropicModel::new("claude")
                .max_tokens(2048)
                .thinking_budget(2048),
            "must be less than max_tokens 2048",
        ),
        (
            AnthropicModel::new("claude")
                .thinking_budget(2048)
                .temperature(0.2),
            "temperature 0.2 is not allowed with extended thinking",
        ),
        (
            AnthropicModel::new("claude")
                .thinking_budget(2048)
                .tool_choice(ToolChoice::Required),
            "forced tool use",
        ),
        (
            AnthropicModel::new("claude")
                .thinking_budget(2048)
                .tool_choice(ToolChoice::Tool("echo".into())),
            "forced tool use",
        ),
    ];
    for (model, rule) in cases {
        let error = refused(model).await;
        assert_eq!(error.kind, ModelErrorKind::Request, "{error}");
        assert_eq!(error.attempts, 0);
        let message = error.message.as_deref().unwrap_or("");
        assert!(message.contains(rule), "{rule}: {message}");
    }
}

#[tokio::test]
async fn thinking_requests_within_the_rules_are_sent_unchanged() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let session = session_for(&anthropic::parse_response(&final_answer()).unwrap()).await;
    for model in [
        model(&server).thinking_budget(1024),
        model(&server)
            .max_tokens(8000)
            .thinking_budget(7999)
            .temperature(1.0)
            .tool_choice(ToolChoice::Auto),
        model(&server)
            .thinking_budget(2048)
            .tool_choice(ToolChoice::None),
    ] {
        let outcome = session
            .run_turn(&model, &mut start(), &CancellationToken::new())
            .await
            .expect("sent");
        assert_eq!(outcome.answer(), Some("Done."));
    }
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        let violations = crate::wire_rules::anthropic_thinking_violations(body);
        assert!(violations.is_empty(), "{violations:#?}");
    }
    assert_eq!(bodies[1]["thinking"]["budget_tokens"], 7999);
    assert_eq!(bodies[1]["temperature"], 1.0);
    assert_eq!(bodies[2]["tool_choice"], json!({ "type": "none" }));
}

#[tokio::test]
async fn a_200_with_an_error_body_is_an_error_with_the_providers_type_and_message() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } }),
        ))
        .mount(&server)
        .await;
    let session = session_for(&anthropic::parse_response(&final_answer()).unwrap()).await;
    let error = session
        .run_turn(&model(&server), &mut start(), &CancellationToken::new())
        .await
        .expect_err("an error body is no answer");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{error}");
    assert_eq!(error.error_type.as_deref(), Some("overloaded_error"));
    assert_eq!(error.message.as_deref(), Some("Overloaded"));
}

#[tokio::test]
async fn native_output_sends_output_config_and_the_json_text_is_the_value() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_native",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{ "type": "text", "text": INVOICE_JSON }],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": { "input_tokens": 10, "output_tokens": 12 }
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
    assert_eq!(bodies.len(), 1);
    let format = &bodies[0]["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["schema"]["type"], "object");
    assert_eq!(
        format["schema"]["required"],
        json!(["number", "total_cents"])
    );
    assert_no_control_tool(&bodies[0]);
}

/// A recorded thinking turn (a signed `thinking` block, then `tool_use`)
/// with thinking on: the follow-up sends the block back first, signature
/// unchanged, and both requests pass the thinking rules.
#[tokio::test]
async fn a_thinking_turn_sends_its_signed_thinking_back_within_the_rules() {
    let recorded = fixture("anthropic/ant_thinking.response.json");
    let signature = recorded["content"][0]["signature"].clone();
    assert!(signature.is_string(), "the recording is signed");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let session = session_for(&anthropic::parse_response(&recorded).unwrap()).await;
    let model = model(&server).max_tokens(8000).thinking_budget(2048);
    let outcome = session
        .run_turn(&model, &mut start(), &CancellationToken::new())
        .await
        .expect("the turn ends");
    assert_eq!(outcome.answer(), Some("Done."));
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        assert_eq!(
            body["thinking"],
            json!({ "type": "enabled", "budget_tokens": 2048 })
        );
        let violations = crate::wire_rules::anthropic_thinking_violations(body);
        assert!(violations.is_empty(), "{violations:#?}");
        let violations = crate::wire_rules::anthropic_violations(&body["messages"]);
        assert!(violations.is_empty(), "{violations:#?}");
    }
    let replayed = &bodies[1]["messages"][1]["content"][0];
    assert_eq!(replayed["type"], "thinking");
    assert_eq!(replayed["signature"], signature);
}

/// A history whose last tool use carries no thinking (it came from another
/// provider): the request goes without `thinking`, as the API advises,
/// since with it the body breaks the rule the check states.
#[tokio::test]
async fn a_tool_use_history_without_thinking_is_sent_without_thinking() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let conversation = vec![
        Message::user("Echo hi."),
        Message::tool_calls(
            None,
            vec![agent_loop::conversation::ToolCall::new(
                "call_abc",
                "echo",
                r#"{"text":"hi"}"#,
            )],
        ),
        Message::Tool(agent_loop::conversation::ToolResult::ok("call_abc", "hi")),
    ];
    let tools = [agent_loop::ToolInfo::without_parameters("echo", "Echoes.")];
    let events = TurnEvents::default();
    let model = model(&server).thinking_budget(2048);
    let response = model
        .respond(
            ModelRequest::new(&conversation)
                .tools(&tools)
                .events(&events),
        )
        .await
        .expect("sent");
    assert_eq!(response.message.text(), "Done.");
    let mut body = bodies(&server).await.remove(0);
    assert_eq!(body.get("thinking"), None, "{body:#}");
    assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    assert!(crate::wire_rules::anthropic_violations(&body["messages"]).is_empty());
    body["thinking"] = json!({ "type": "enabled", "budget_tokens": 2048 });
    assert_eq!(
        crate::wire_rules::anthropic_thinking_violations(&body),
        ["messages[1]: the final assistant message uses tools without starting with thinking"]
    );
}
