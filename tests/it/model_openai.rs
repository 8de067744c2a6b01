//! `OpenAiModel` against a loopback server replaying recorded real
//! responses: whole turns run with echo tools, and every request body it
//! sends passes OpenAI's rules and carries the mode's instructions and
//! tools.

use agent_loop::model::{MaxTokensField, ModelErrorKind, OpenAiModel, ReasoningEffort, ToolChoice};
use agent_loop::turn::{ModelRequest, ToolList, TurnEvents};
use agent_loop::wire::openai;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

/// A final answer in Chat Completions form.
fn final_answer() -> Value {
    json!({
        "id": "chatcmpl-final",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": "Done." },
            "finish_reason": "stop"
        }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12 }
    })
}

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("gpt-4o")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
}

#[tokio::test]
async fn recorded_responses_drive_whole_turns_and_every_request_passes_the_rules() {
    for (name, recorded) in responses("openai") {
        let response = openai::parse_response(&recorded).expect("the fixture parses");
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header(
                "authorization",
                format!("Bearer {FAKE_KEY}").as_str(),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(&recorded))
            .up_to_n_times(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
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
        let bodies = bodies(&server).await;
        if calls == 0 {
            assert_eq!(bodies.len(), 1, "{name}: a final answer needs one request");
        } else {
            assert_eq!(outcome.answer(), Some("Done."), "{name}");
            assert_eq!(bodies.len(), 2, "{name}");
            assert_eq!(outcome.stats.call_count() as usize, calls, "{name}");
        }
        for body in &bodies {
            let violations = crate::wire_rules::openai_violations(&body["messages"]);
            assert!(violations.is_empty(), "{name}: {violations:#?}");
            assert_eq!(body["model"], "gpt-4o");
            assert_eq!(
                body["messages"][0],
                json!({ "role": "system", "content": INSTRUCTIONS }),
                "{name}: the instructions go first"
            );
            assert_eq!(body["messages"][1]["role"], "user");
            let tools: Vec<&str> = body["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap())
                .collect();
            assert!(tools.contains(&"echo"), "{name}: {tools:?}");
            assert!(body.get("stream").is_none(), "{name}: not streamed");
        }
        if calls > 0 {
            // The follow-up carries the calls and one result per call.
            let messages = bodies[1]["messages"].as_array().unwrap();
            let results = messages.iter().filter(|m| m["role"] == "tool").count();
            assert_eq!(results, calls, "{name}");
        }
    }
}

#[test]
fn settings_and_extra_fields_reach_the_body_and_no_tools_means_no_tool_fields() {
    let model = OpenAiModel::new("o4-mini")
        .temperature(0.5)
        .max_tokens(300)
        .reasoning_effort(ReasoningEffort::Low)
        .tool_choice(ToolChoice::Tool("echo".into()))
        .parallel_tool_calls(false)
        .extra("seed", json!(7))
        .extra("temperature", json!(0.25));
    let conversation = start();
    let tools = [agent_loop::ToolInfo::without_parameters("echo", "Echoes.")];
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation)
        .tools(&tools)
        .events(&events);
    let body = model.request_body(&request);
    assert_eq!(body["max_completion_tokens"], 300);
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(
        body["tool_choice"],
        json!({ "type": "function", "function": { "name": "echo" } })
    );
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["temperature"], 0.25, "extra fields are written last");
    assert_eq!(
        body["messages"][0]["role"], "user",
        "no instructions, no system"
    );

    let bare = model.request_body(&request.tools(ToolList::default()));
    for field in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(bare.get(field).is_none(), "{field} without tools");
    }
}

#[tokio::test]
async fn a_local_server_gets_no_authorization_header() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(final_answer()))
        .mount(&server)
        .await;
    let model = OpenAiModel::new("local").base_url(format!("{}/v1/", server.uri()));
    let session = session_for(&openai::parse_response(&final_answer()).unwrap()).await;
    let outcome = session
        .run_turn(&model, &mut start(), &CancellationToken::new())
        .await
        .expect("answers");
    assert_eq!(outcome.answer(), Some("Done."));
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].url.path(), "/v1/chat/completions");
    assert!(!requests[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn a_200_with_a_json_error_body_is_an_error_with_the_providers_type_message_and_code() {
    // OpenRouter documents 200 answers whose body is `{"error": {...}}`.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({ "error": { "message": "upstream overloaded", "type": "server_error", "code": 502 } }),
        ))
        .mount(&server)
        .await;
    let session = session_for(&openai::parse_response(&final_answer()).unwrap()).await;
    let error = session
        .run_turn(&model(&server), &mut start(), &CancellationToken::new())
        .await
        .expect_err("an error body is no answer");
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{error}");
    assert_eq!(error.error_type.as_deref(), Some("server_error"));
    assert_eq!(error.message.as_deref(), Some("upstream overloaded"));
    assert_eq!(error.code.as_deref(), Some("502"));
    assert_eq!(error.attempts, 1);
    assert!(error.to_string().contains("upstream overloaded"), "{error}");
}

#[test]
fn the_output_cap_goes_as_max_completion_tokens_unless_the_server_reads_max_tokens() {
    let conversation = start();
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation).events(&events);
    let default = OpenAiModel::new("gpt-4.1")
        .max_tokens(300)
        .request_body(&request);
    assert_eq!(default["max_completion_tokens"], 300);
    assert!(default.get("max_tokens").is_none());

    let deepseek = OpenAiModel::new("deepseek-chat")
        .max_tokens(300)
        .max_tokens_field(MaxTokensField::MaxTokens)
        .request_body(&request);
    assert_eq!(deepseek["max_tokens"], 300);
    assert!(deepseek.get("max_completion_tokens").is_none());

    let unset = OpenAiModel::new("deepseek-chat")
        .max_tokens_field(MaxTokensField::MaxTokens)
        .request_body(&request);
    assert!(unset.get("max_tokens").is_none() && unset.get("max_completion_tokens").is_none());
}

#[tokio::test]
async fn native_output_sends_response_format_and_the_json_content_is_the_value() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-native",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o",
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": INVOICE_JSON, "refusal": null },
                "finish_reason": "stop"
            }],
            "usage": { "prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22 }
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
    let format = &bodies[0]["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "Invoice");
    assert_eq!(format["json_schema"]["strict"], false, "strict is opt-in");
    assert_eq!(format["json_schema"]["schema"]["type"], "object");
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["number", "total_cents"])
    );
    assert_no_control_tool(&bodies[0]);
}

#[test]
fn native_output_names_are_made_valid_and_strict_is_a_setting() {
    let conversation = start();
    let events = TurnEvents::default();
    let output =
        agent_loop::turn::Output::from_schema("my output: v2.0", "", json!({"type": "string"}))
            .unwrap();
    let request = ModelRequest::new(&conversation)
        .output(&output)
        .events(&events);
    let body = OpenAiModel::new("gpt-4o")
        .strict_output(true)
        .request_body(&request);
    let schema = &body["response_format"]["json_schema"];
    assert_eq!(schema["name"], "my_output__v2_0");
    assert_eq!(schema["strict"], true);
    assert_eq!(
        schema["schema"],
        agent_loop::wire::output_schema::openai_strict(output.schema()).unwrap(),
        "the wrapped schema, in strict form"
    );
    assert_eq!(schema["schema"]["additionalProperties"], false);
    assert_eq!(schema["schema"]["required"], json!(["value"]));

    let long =
        agent_loop::turn::Output::from_schema("x".repeat(100), "", json!({"type": "object"}))
            .unwrap();
    let body = OpenAiModel::new("gpt-4o").request_body(&request.output(&long));
    assert_eq!(
        body["response_format"]["json_schema"]["name"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    let mut plain = request;
    plain.output = None;
    let plain = OpenAiModel::new("gpt-4o").request_body(&plain);
    assert!(plain.get("response_format").is_none());
}

/// Chat templates of Qwen on vLLM and llama.cpp refuse any system message
/// but one at the start: the instructions and the conversation's leading
/// system messages go out as one; a later one stays where it is.
#[test]
fn instructions_and_leading_system_messages_go_out_as_one_system_message() {
    let model = OpenAiModel::new("qwen3");
    let conversation = vec![
        agent_loop::conversation::Message::system("Answer in French."),
        agent_loop::conversation::Message::system("  "),
        agent_loop::conversation::Message::system("Be brief."),
        agent_loop::conversation::Message::user("Hi"),
        agent_loop::conversation::Message::system("Later note."),
    ];
    let events = TurnEvents::default();
    let request = ModelRequest::new(&conversation)
        .instructions(INSTRUCTIONS)
        .events(&events);
    let body = model.request_body(&request);
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "system"]);
    assert_eq!(
        body["messages"][0]["content"],
        format!("{INSTRUCTIONS}\n\nAnswer in French.\n\nBe brief.")
    );
    assert_eq!(body["messages"][2]["content"], "Later note.");
}

/// `extra(field, null)` removes a field the model writes: Mistral answers
/// 422 and xAI 400 to `stream_options`.
#[test]
fn a_null_extra_removes_the_field() {
    let model = OpenAiModel::new("mistral-small-latest")
        .stream(true)
        .extra("stream_options", Value::Null)
        .extra("never_set", Value::Null);
    let conversation = start();
    let events = TurnEvents::default();
    let body = model.request_body(&ModelRequest::new(&conversation).events(&events));
    assert_eq!(body["stream"], true);
    assert!(body.get("stream_options").is_none(), "{body}");
    assert!(body.get("never_set").is_none(), "{body}");
}
