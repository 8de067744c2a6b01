//! `AnthropicModel` against a loopback server replaying recorded real
//! responses: whole turns run with echo tools, and every request body it
//! sends passes Anthropic's rules and carries the mode's instructions (as
//! `system`), the tools and `max_tokens`.

use agent_loop::conversation::Message;
use agent_loop::model::{AnthropicModel, Effort, ModelError, ModelErrorKind, ToolChoice};
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

// ------------------------------------------- Claude 5 and Opus 4.7 shapes

/// The one request of `model` (at the loopback server) for the start of a
/// conversation with instructions and one tool: the body the server got.
async fn one_body(model: AnthropicModel) -> Value {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let model = model.base_url(server.uri()).api_key(FAKE_KEY);
    let conversation = start();
    let tools = [agent_loop::ToolInfo::without_parameters("echo", "Echoes.")];
    let events = TurnEvents::default();
    model
        .respond(
            ModelRequest::new(&conversation)
                .instructions("Be brief.")
                .tools(&tools)
                .events(&events),
        )
        .await
        .expect("sent");
    let mut bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 1);
    bodies.remove(0)
}

/// [`one_body`]'s body without its settings: what every model sends.
fn plain_body(model: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [
            { "role": "user", "content": [{ "type": "text", "text": "Please use the tools." }] }
        ],
        "tools": [{
            "name": "echo",
            "description": "Echoes.",
            "input_schema": { "type": "object", "properties": {} }
        }]
    })
}

/// Every thinking and effort rule, and the rules of the messages.
fn assert_within_the_rules(body: &Value) {
    let violations = crate::wire_rules::anthropic_thinking_violations(body);
    assert!(violations.is_empty(), "{violations:#?}");
    let violations = crate::wire_rules::anthropic_violations(&body["messages"]);
    assert!(violations.is_empty(), "{violations:#?}");
}

/// Claude 5 and Opus 4.7 take only adaptive thinking: effort goes as
/// `thinking: {"type": "adaptive"}` and `output_config.effort`, with no
/// `budget_tokens`.
#[tokio::test]
async fn effort_on_opus_4_7_and_claude_5_sends_adaptive_thinking_without_a_budget() {
    for name in ["claude-opus-4-7", "claude-sonnet-5", "claude-fable-5-1"] {
        let body = one_body(AnthropicModel::new(name).effort(Effort::High)).await;
        let mut expected = plain_body(name);
        expected["thinking"] = json!({ "type": "adaptive" });
        expected["output_config"] = json!({ "effort": "high" });
        assert_eq!(body, expected, "{name}");
        assert!(!body.to_string().contains("budget_tokens"), "{name}");
        assert_within_the_rules(&body);
    }
    // Every level, spelled as the API spells it.
    for (effort, spelled) in [
        (Effort::Low, "low"),
        (Effort::Medium, "medium"),
        (Effort::High, "high"),
        (Effort::XHigh, "xhigh"),
        (Effort::Max, "max"),
    ] {
        let body = one_body(AnthropicModel::new("claude-opus-5").effort(effort)).await;
        assert_eq!(body["output_config"], json!({ "effort": spelled }));
        assert_eq!(effort.as_str(), spelled);
        assert_within_the_rules(&body);
    }
}

/// 4.5 and older take only the budget form: effort goes as the documented
/// share of `max_tokens`, and no `output_config`.
#[tokio::test]
async fn effort_on_claude_sonnet_4_5_sends_the_documented_budget() {
    let body = one_body(AnthropicModel::new("claude-sonnet-4-5").effort(Effort::High)).await;
    let mut expected = plain_body("claude-sonnet-4-5");
    expected["thinking"] = json!({ "type": "enabled", "budget_tokens": 3072 });
    assert_eq!(body, expected);
    assert_within_the_rules(&body);

    for (effort, budget) in [
        (Effort::Low, 4000),
        (Effort::Medium, 8000),
        (Effort::High, 12000),
        (Effort::XHigh, 14000),
        (Effort::Max, 15000),
    ] {
        let body = one_body(
            AnthropicModel::new("claude-sonnet-4-5-20250929")
                .max_tokens(16_000)
                .effort(effort),
        )
        .await;
        assert_eq!(
            body["thinking"],
            json!({ "type": "enabled", "budget_tokens": budget }),
            "{effort:?}"
        );
        assert_eq!(body.get("output_config"), None);
        assert_within_the_rules(&body);
    }
    // The smallest max_tokens a budget fits under.
    let body = one_body(
        AnthropicModel::new("claude-haiku-4-5")
            .max_tokens(1025)
            .effort(Effort::Max),
    )
    .await;
    assert_eq!(
        body["thinking"],
        json!({ "type": "enabled", "budget_tokens": 1024 })
    );
    assert_within_the_rules(&body);
}

#[tokio::test]
async fn temperature_on_opus_4_7_and_claude_5_is_refused_before_sending() {
    for name in [
        "claude-opus-4-7",
        "claude-opus-4-8",
        "claude-sonnet-5",
        "claude-mythos-5",
    ] {
        for model in [
            AnthropicModel::new(name).temperature(0.2),
            AnthropicModel::new(name)
                .temperature(0.2)
                .effort(Effort::High),
        ] {
            let error = refused(model).await;
            assert_eq!(error.kind, ModelErrorKind::Request, "{error}");
            assert_eq!(error.attempts, 0);
            let message = error.message.as_deref().unwrap_or("");
            assert!(
                message.starts_with(&format!(
                    "{name} takes no sampling setting but the default, not temperature 0.2"
                )),
                "{message}"
            );
            assert!(
                message.contains("leave temperature unset (or 1.0)") && message.contains("effort"),
                "{message}"
            );
        }
    }
    // The default is no sampling setting: it is sent.
    let body = one_body(AnthropicModel::new("claude-opus-4-7").temperature(1.0)).await;
    assert_eq!(body["temperature"], 1.0);
    // A model that takes sampling settings, and one the table does not
    // name, are sent theirs.
    for name in [
        "claude-sonnet-4-5",
        "claude-opus-4-6",
        "claude-mythos-preview",
    ] {
        let body = one_body(AnthropicModel::new(name).temperature(0.2)).await;
        assert_eq!(body["temperature"], 0.2, "{name}");
    }
}

#[tokio::test]
async fn thinking_budget_on_claude_5_and_opus_4_7_is_refused_before_sending() {
    for name in [
        "claude-opus-5",
        "claude-sonnet-5",
        "claude-fable-5",
        "claude-opus-4-7",
    ] {
        // Even after an effort: the last thinking setting decides.
        for model in [
            AnthropicModel::new(name).thinking_budget(2048),
            AnthropicModel::new(name)
                .effort(Effort::High)
                .thinking_budget(2048),
        ] {
            let error = refused(model).await;
            assert_eq!(error.kind, ModelErrorKind::Request, "{error}");
            assert_eq!(error.attempts, 0);
            let message = error.message.as_deref().unwrap_or("");
            assert!(
                message.starts_with(&format!(
                    "{name} takes adaptive thinking only, not thinking_budget 2048"
                )),
                "{message}"
            );
            assert!(
                message.contains("set effort(Effort::…) instead"),
                "{message}"
            );
        }
    }
    // Opus and Sonnet 4.6 take both forms, an unknown model is refused
    // nothing: the budget is sent.
    for name in [
        "claude-opus-4-6",
        "claude-sonnet-4-6",
        "claude-mythos-preview",
    ] {
        let body = one_body(AnthropicModel::new(name).thinking_budget(2048)).await;
        assert_eq!(
            body["thinking"],
            json!({ "type": "enabled", "budget_tokens": 2048 }),
            "{name}"
        );
    }
}

#[tokio::test]
async fn effort_requests_that_break_the_apis_rules_are_refused_before_sending() {
    let cases = [
        (
            AnthropicModel::new("claude-opus-4-6")
                .effort(Effort::High)
                .temperature(0.5),
            "temperature 0.5 is not allowed with adaptive thinking (effort(Effort::High))",
        ),
        (
            AnthropicModel::new("claude-sonnet-4-5")
                .max_tokens(1024)
                .effort(Effort::Low),
            "effort(Effort::Low) goes to claude-sonnet-4-5 as a thinking budget, at least 1024 \
             tokens and less than max_tokens 1024: set max_tokens above 1024",
        ),
        (
            AnthropicModel::new("claude-sonnet-4-5")
                .effort(Effort::High)
                .temperature(0.5),
            "temperature 0.5 is not allowed with extended thinking",
        ),
        (
            AnthropicModel::new("claude-opus-4-5")
                .effort(Effort::High)
                .tool_choice(ToolChoice::Required),
            "forced tool use",
        ),
    ];
    for (model, rule) in cases {
        let error = refused(model).await;
        assert_eq!(error.kind, ModelErrorKind::Request, "{error}");
        let message = error.message.as_deref().unwrap_or("");
        assert!(message.contains(rule), "{rule}: {message}");
    }
}

/// `(role, blocks)` of each message, each block by what the API reads of
/// it: a `thinking` block whole, a `tool_use` by id, name and input, a
/// `tool_result` by the call it answers, text by its type.
fn shape(messages: &Value) -> Vec<Value> {
    let block = |block: &Value| match block["type"].as_str() {
        Some("thinking") => block.clone(),
        Some("tool_use") => json!({
            "type": "tool_use", "id": block["id"], "name": block["name"], "input": block["input"]
        }),
        Some("tool_result") => {
            json!({ "type": "tool_result", "tool_use_id": block["tool_use_id"] })
        }
        _ => json!({ "type": block["type"] }),
    };
    messages
        .as_array()
        .expect("messages")
        .iter()
        .map(|message| {
            let blocks: Vec<Value> = message["content"]
                .as_array()
                .expect("content blocks")
                .iter()
                .map(block)
                .collect();
            json!({ "role": message["role"], "content": blocks })
        })
        .collect()
}

/// The recorded Opus 4.7 round trip: adaptive thinking, an answer whose
/// thinking block has empty text (Opus 4.7 omits it by default) and a
/// signature, then `tool_use`; the follow-up sends that block back first,
/// text empty and signature unchanged, as the recorded follow-up did.
#[tokio::test]
async fn the_recorded_opus_4_7_adaptive_round_trip_replays_its_empty_signed_thinking() {
    let request = fixture("anthropic-adaptive/ant_opus47_adaptive_tool.request.json");
    let recorded = fixture("anthropic-adaptive/ant_opus47_adaptive_tool.response.json");
    let followup = fixture("anthropic-adaptive/ant_opus47_adaptive_tool.followup_request.json");
    assert_eq!(
        recorded["content"][0]["thinking"], "",
        "the recording's thinking is empty"
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let session = session_for(&anthropic::parse_response(&recorded).unwrap()).await;
    let model = AnthropicModel::new("claude-opus-4-7")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .max_tokens(16384)
        .effort(Effort::High);
    let user = request["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    let mut conversation = vec![Message::user(user)];
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn ends");
    assert_eq!(outcome.answer(), Some("Done."));
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2, "two iterations: the call, then the answer");
    for body in &bodies {
        assert_eq!(body["model"], "claude-opus-4-7");
        assert_eq!(body["max_tokens"], request["max_tokens"]);
        assert_eq!(body["thinking"], request["thinking"]);
        assert_eq!(body["output_config"], json!({ "effort": "high" }));
        assert_within_the_rules(body);
    }
    assert_eq!(bodies[0]["messages"], request["messages"]);
    assert_eq!(shape(&bodies[1]["messages"]), shape(&followup["messages"]));
    let replayed = &bodies[1]["messages"][1]["content"][0];
    assert_eq!(
        replayed,
        &json!({ "type": "thinking", "thinking": "", "signature": "signature_REDACTED_1" })
    );
}

/// The recorded Opus 4.6 requests are what `effort(High)` sends (with the
/// effort, which is the API's default, written out): adaptive thinking,
/// and with tools forced tool use, which adaptive thinking allows (the
/// recorded request was answered). The answer, a `tool_use` without
/// thinking, goes back with thinking still on.
#[tokio::test]
async fn the_recorded_opus_4_6_adaptive_requests_are_what_effort_sends() {
    // Without tools: the first recording, whole.
    let request = fixture("anthropic-adaptive/ant_opus46_adaptive.request.json");
    let recorded = fixture("anthropic-adaptive/ant_opus46_adaptive.response.json");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
        .mount(&server)
        .await;
    let model = AnthropicModel::new("claude-opus-4-6")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .effort(Effort::High);
    let conversation = [Message::user("What is 2+2?")];
    let events = TurnEvents::default();
    let response = model
        .respond(ModelRequest::new(&conversation).events(&events))
        .await
        .expect("answered");
    assert!(response.message.text().contains("2 + 2 = **4**"));
    let mut expected = request.clone();
    expected.as_object_mut().unwrap().remove("stream");
    expected["output_config"] = json!({ "effort": "high" });
    let sent = bodies(&server).await.remove(0);
    assert_eq!(sent, expected);
    assert_within_the_rules(&sent);

    // Forced tool use: the second recording's thinking and tool choice.
    let request = fixture("anthropic-adaptive/ant_opus46_effort_tool.request.json");
    let recorded = fixture("anthropic-adaptive/ant_opus46_effort_tool.response.json");
    assert!(
        recorded["content"]
            .as_array()
            .unwrap()
            .iter()
            .all(|block| block["type"] == "tool_use"),
        "the recording calls its tool without thinking"
    );
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
    let model = AnthropicModel::new("claude-opus-4-6")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .effort(Effort::High)
        .tool_choice(ToolChoice::Required);
    // The second request is forced too; the server answers it with text.
    let outcome = session
        .run_turn(&model, &mut start(), &CancellationToken::new())
        .await
        .expect("the turn ends");
    assert_eq!(outcome.answer(), Some("Done."));
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        for field in ["thinking", "output_config", "tool_choice"] {
            assert_eq!(body[field], request[field], "{field}");
        }
        assert_within_the_rules(body);
    }
    let last = &bodies[1]["messages"][1]["content"];
    assert_eq!(last[0]["type"], "tool_use", "no thinking block was made up");
}

/// The body rules the tests above check: the recorded adaptive requests
/// pass them, and each break of them is caught.
#[test]
fn the_adaptive_body_rules_pass_the_recordings_and_catch_their_breaks() {
    for name in [
        "ant_opus46_adaptive.request.json",
        "ant_opus46_effort_tool.request.json",
        "ant_opus47_adaptive_tool.request.json",
        "ant_opus47_adaptive_tool.followup_request.json",
    ] {
        let body = fixture(&format!("anthropic-adaptive/{name}"));
        assert_eq!(body["thinking"]["type"], "adaptive", "{name}");
        let violations = crate::wire_rules::anthropic_thinking_violations(&body);
        assert!(violations.is_empty(), "{name}: {violations:#?}");
    }
    let body = fixture("anthropic-adaptive/ant_opus46_effort_tool.request.json");
    let broken = |change: &dyn Fn(&mut Value)| {
        let mut body = body.clone();
        change(&mut body);
        crate::wire_rules::anthropic_thinking_violations(&body)
    };
    assert_eq!(
        broken(&|body| body["thinking"]["budget_tokens"] = json!(2048)),
        ["thinking: adaptive with budget_tokens"]
    );
    assert_eq!(
        broken(&|body| body["output_config"]["effort"] = json!("extreme")),
        ["output_config.effort \"extreme\" is no effort level"]
    );
    assert_eq!(
        broken(&|body| body["temperature"] = json!(0.5)),
        ["thinking: temperature 0.5 in adaptive mode"]
    );
    assert_eq!(
        broken(&|body| body["thinking"]["type"] = json!("auto")),
        ["thinking: type \"auto\" is no thinking type"]
    );
    assert_eq!(
        broken(&|body| body["thinking"] = json!({ "type": "enabled", "budget_tokens": 2048 })),
        ["thinking: forced tool use"]
    );
}

/// Claude 3 models before Sonnet 3.7 take no extended thinking: an effort
/// or a thinking budget for them is refused before any request, where
/// the API would answer 400; Sonnet 3.7 takes the budget form.
#[tokio::test]
async fn thinking_on_claude_3_before_sonnet_3_7_is_refused_before_sending() {
    for name in ["claude-3-5-haiku-latest", "claude-3-opus-20240229"] {
        for model in [
            AnthropicModel::new(name).effort(Effort::High),
            AnthropicModel::new(name).thinking_budget(2048),
        ] {
            let error = refused(model).await;
            assert_eq!(error.kind, ModelErrorKind::Request, "{error}");
            assert_eq!(error.attempts, 0);
            let message = error.message.as_deref().unwrap_or("");
            assert!(
                message.starts_with(&format!("{name} takes no extended thinking")),
                "{message}"
            );
        }
    }
    let body = one_body(AnthropicModel::new("claude-3-7-sonnet-latest").effort(Effort::High)).await;
    assert_eq!(body["thinking"]["type"], "enabled");
    assert_eq!(body["thinking"]["budget_tokens"], 3072);
}
