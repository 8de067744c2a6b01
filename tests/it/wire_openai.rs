//! OpenAI Chat Completions wire format: tools, responses and conversations,
//! on payloads shaped like the API reference's examples.

use agent_loop::conversation::WireFormat;
use agent_loop::conversation::{
    AssistantMessage, ContentPart, FinishReason, Message, ModelResponse, ProviderPart,
    SystemMessage, SystemRole, ToolCall, ToolResult, Usage, UserMessage,
};
use agent_loop::tool::ToolInfo;
use agent_loop::wire::{ToolDeclaration, WireErrorKind, anthropic, openai};
use serde_json::{Value, json};

fn weather_tool() -> ToolInfo {
    ToolInfo::new(
        "get_weather",
        "Get the current weather in a given city.",
        json!({
            "type": "object",
            "properties": {
                "city": { "type": "string", "description": "City name, e.g. Paris" },
                "unit": { "type": "string", "enum": ["celsius", "fahrenheit"] }
            },
            "required": ["city"],
            "additionalProperties": false
        }),
    )
}

fn response_with_message(message: Value) -> Value {
    json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion",
        "created": 1741570283,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": { "prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99 },
        "system_fingerprint": "fp_ad98c18a04"
    })
}

/// The `usage` of [`response_with_message`].
fn usage() -> Usage {
    Usage::new(82, 17)
}

/// A conversation with every kind of message: a system prompt, a user
/// question, a batch of two tool calls, one successful and one failed
/// result, a final answer.
fn full_conversation() -> Vec<Message> {
    vec![
        Message::system("You are a weather assistant."),
        Message::user("What's the weather in Paris and in Atlantis?"),
        Message::tool_calls(
            Some("Let me check both cities.".into()),
            vec![
                ToolCall::new("call_paris", "get_weather", r#"{"city":"Paris"}"#),
                ToolCall::new("call_atlantis", "get_weather", r#"{"city": "Atlantis", "#),
            ],
        ),
        Message::Tool(ToolResult::ok("call_paris", "18°C, light rain")),
        Message::Tool(ToolResult::error(
            "call_atlantis",
            "The arguments are not valid JSON: EOF while parsing an object.",
        )),
        Message::assistant("Paris: 18°C with light rain. I could not look up Atlantis."),
    ]
}

#[test]
fn two_parallel_tool_calls_keep_their_raw_arguments() {
    let body = response_with_message(json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {
                "id": "call_now",
                "type": "function",
                "function": { "name": "current_time", "arguments": "{}" }
            },
            {
                "id": "call_weather",
                "type": "function",
                "function": { "name": "get_weather", "arguments": "{\"city\": \"Par" }
            }
        ],
        "refusal": null,
        "annotations": []
    }));

    let response = openai::parse_response(&body).unwrap();

    // `refusal: null` and `annotations` leave no extras behind.
    assert_eq!(
        response,
        ModelResponse::tool_calls([
            ToolCall::new("call_now", "current_time", "{}"),
            ToolCall::new("call_weather", "get_weather", "{\"city\": \"Par"),
        ])
        .with_usage(usage())
    );
}

#[test]
fn final_answer_response_has_text_and_no_tool_calls() {
    let mut body = response_with_message(json!({
        "role": "assistant",
        "content": "It is 18°C in Paris."
    }));
    body["choices"][0]["finish_reason"] = json!("stop");

    let response = openai::parse_response(&body).unwrap();

    assert_eq!(
        response,
        ModelResponse::answer("It is 18°C in Paris.").with_usage(usage())
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[test]
fn text_and_tool_calls_in_one_response_are_both_kept() {
    let body = response_with_message(json!({
        "role": "assistant",
        "content": "Checking the weather.",
        "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": { "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}" }
        }]
    }));

    assert_eq!(
        openai::parse_response(&body).unwrap(),
        ModelResponse::new(AssistantMessage::with_tool_calls(
            Some("Checking the weather.".into()),
            vec![ToolCall::new(
                "call_1",
                "get_weather",
                "{\"city\":\"Oslo\"}"
            )],
        ))
        .with_usage(usage())
    );
}

#[test]
fn tools_export_to_function_tools_and_parse_back_equal() {
    let tools = vec![
        weather_tool(),
        ToolInfo::without_parameters("current_time", "The current UTC time."),
    ];

    let exported = serde_json::to_value(openai::export_tools(&tools)).unwrap();

    assert_eq!(
        exported[0],
        json!({
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the current weather in a given city.",
                "parameters": tools[0].parameters
            }
        })
    );
    let parsed = openai::parse_tools(&exported).unwrap();
    assert_eq!(
        parsed,
        tools
            .iter()
            .cloned()
            .map(ToolDeclaration::Function)
            .collect::<Vec<_>>()
    );
}

#[test]
fn conversation_exports_to_messages_and_parses_back_with_is_error_lost() {
    let conversation = full_conversation();

    let exported = serde_json::to_value(openai::export_messages(&conversation).messages).unwrap();

    assert_eq!(
        exported,
        json!([
            { "role": "system", "content": "You are a weather assistant." },
            { "role": "user", "content": "What's the weather in Paris and in Atlantis?" },
            {
                "role": "assistant",
                "content": "Let me check both cities.",
                "tool_calls": [
                    { "id": "call_paris", "type": "function",
                      "function": { "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" } },
                    // Not a JSON object: wrapped, or vLLM and llama.cpp
                    // refuse every later request.
                    { "id": "call_atlantis", "type": "function",
                      "function": { "name": "get_weather",
                                    "arguments": "{\"_raw_arguments\":\"{\\\"city\\\": \\\"Atlantis\\\", \"}" } }
                ]
            },
            { "role": "tool", "tool_call_id": "call_paris", "content": "18°C, light rain" },
            { "role": "tool", "tool_call_id": "call_atlantis",
              "content": "The arguments are not valid JSON: EOF while parsing an object." },
            { "role": "assistant",
              "content": "Paris: 18°C with light rain. I could not look up Atlantis." }
        ])
    );

    // OpenAI has no `is_error`: the only difference after a round trip
    // (the wrapped arguments read back as the text the model wrote).
    let mut expected = conversation;
    for message in &mut expected {
        if let Message::Tool(result) = message {
            result.is_error = false;
        }
    }
    assert_eq!(openai::parse_messages(&exported).unwrap(), expected);
}

#[test]
fn content_parts_and_null_assistant_content_are_accepted() {
    let messages = json!([
        { "role": "user", "content": [
            { "type": "text", "text": "Weather in " },
            { "type": "text", "text": "Paris?" }
        ] },
        { "role": "assistant", "content": null, "tool_calls": [
            { "id": "call_1", "type": "function",
              "function": { "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" } }
        ] },
        { "role": "tool", "tool_call_id": "call_1",
          "content": [{ "type": "text", "text": "18°C" }] }
    ]);

    let parsed = openai::parse_messages(&messages).unwrap();

    // User text parts stay parts; a tool message's parts become one text.
    assert_eq!(
        parsed,
        vec![
            Message::User(UserMessage::new(vec![
                ContentPart::text("Weather in "),
                ContentPart::text("Paris?"),
            ])),
            Message::tool_calls(
                None,
                vec![ToolCall::new(
                    "call_1",
                    "get_weather",
                    "{\"city\":\"Paris\"}"
                )]
            ),
            Message::Tool(ToolResult::ok("call_1", "18°C")),
        ]
    );
    assert_eq!(parsed[0].text(), "Weather in Paris?");
    // Two text parts go back out as two text parts.
    let exported = serde_json::to_value(openai::export_messages(&parsed).messages).unwrap();
    assert_eq!(exported[0], messages[0]);
}

fn response_error(message: Value) -> agent_loop::wire::WireError {
    openai::parse_response(&response_with_message(message)).unwrap_err()
}

#[test]
fn tool_call_without_function_is_a_missing_field() {
    let error = response_error(json!({
        "role": "assistant", "content": null,
        "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": "a", "arguments": "{}" } },
            { "id": "call_2", "type": "function" }
        ]
    }));

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "function".into()
        }
    );
    assert_eq!(error.path, "response.choices[0].message.tool_calls[1]");
    assert_eq!(error.format, WireFormat::OpenAiChat);
    assert_eq!(
        error.to_string(),
        "OpenAI Chat Completions: at response.choices[0].message.tool_calls[1]: missing field `function`"
    );
}

#[test]
fn tool_call_without_id_gets_a_fresh_id_shared_with_its_result() {
    // A response keeps the id as sent (absent reads as empty): the turn
    // runner mints one before the call runs.
    let response = openai::parse_response(&response_with_message(json!({
        "role": "assistant", "content": null,
        "tool_calls": [{ "type": "function", "function": { "name": "now", "arguments": "{}" } }]
    })))
    .unwrap();
    assert_eq!(
        response
            .message
            .tool_calls()
            .next()
            .map(|call| call.id.as_str()),
        Some("")
    );

    // A stored history gets a fresh id, which the result answering the
    // empty id shares.
    let parsed = openai::parse_messages(&json!([
        { "role": "assistant", "content": null,
          "tool_calls": [{ "type": "function", "function": { "name": "now", "arguments": "{}" } }] },
        { "role": "tool", "tool_call_id": "", "content": "12:00" }
    ]))
    .unwrap();
    let id = &parsed[0]
        .as_assistant()
        .unwrap()
        .tool_calls()
        .next()
        .unwrap()
        .id;
    assert!(id.starts_with("call_") && id.len() <= 40, "{id}");
    assert_eq!(
        parsed[1],
        Message::Tool(ToolResult::ok(id.clone(), "12:00"))
    );
}

#[test]
fn arguments_given_as_an_object_in_history_are_kept_as_compact_text() {
    // llama.cpp and mlx-lm send the arguments object itself.
    let parsed = openai::parse_messages(&json!([
        { "role": "assistant", "content": null,
          "tool_calls": [{ "id": "call_1", "type": "function",
                           "function": { "name": "get_weather", "arguments": { "city": "Paris" } } }] },
        { "role": "tool", "tool_call_id": "call_1", "content": "18°C" }
    ]))
    .unwrap();

    assert_eq!(
        parsed[0],
        Message::tool_calls(
            None,
            vec![ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"city":"Paris"}"#
            )]
        )
    );
    // And it goes back out as the text the API documents.
    let exported = serde_json::to_value(openai::export_messages(&parsed).messages).unwrap();
    assert_eq!(
        exported[0]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Paris"}"#
    );
}

#[test]
fn name_of_the_wrong_type_is_a_wrong_type() {
    let error = response_error(json!({
        "role": "assistant", "content": null,
        "tool_calls": [{ "id": "call_1", "type": "function",
                         "function": { "name": 7, "arguments": "{}" } }]
    }));

    assert_eq!(
        &error.kind,
        &WireErrorKind::WrongType {
            field: "name".into(),
            expected: "a string".into(),
            found: "a number".into()
        }
    );
    assert_eq!(
        error.path,
        "response.choices[0].message.tool_calls[0].function.name"
    );
}

#[test]
fn missing_arguments_parse_as_blank_and_go_back_out_as_an_empty_object() {
    let history = json!([
        { "role": "assistant", "content": null,
          "tool_calls": [{ "id": "call_1", "type": "function", "function": { "name": "now" } }] },
        { "role": "tool", "tool_call_id": "call_1", "content": "12:00" }
    ]);

    let parsed = openai::parse_messages(&history).unwrap();
    assert_eq!(
        parsed[0],
        Message::tool_calls(None, vec![ToolCall::new("call_1", "now", "")])
    );

    let exported = serde_json::to_value(openai::export_messages(&parsed).messages).unwrap();
    assert_eq!(exported[0]["tool_calls"][0]["function"]["arguments"], "{}");
}

#[test]
fn response_from_a_non_assistant_role_is_an_unknown_role() {
    let error = response_error(json!({ "role": "user", "content": "hi" }));

    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownRole {
            role: "user".into()
        }
    );
    assert_eq!(error.path, "response.choices[0].message");
}

#[test]
fn custom_tool_call_is_kept_verbatim_and_sent_back_to_openai_only() {
    let custom = json!({ "id": "call_1", "type": "custom",
                         "custom": { "name": "grammar", "input": "x" } });
    let response = openai::parse_response(&response_with_message(json!({
        "role": "assistant", "content": null, "tool_calls": [custom]
    })))
    .unwrap();

    assert_eq!(
        response.message.content,
        vec![ContentPart::Provider(ProviderPart::new(
            WireFormat::OpenAiChat,
            custom.clone()
        ))]
    );
    assert!(!response.message.has_tool_calls());
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);

    let conversation = vec![
        Message::user("Parse x."),
        Message::Assistant(response.message),
    ];
    let exported = serde_json::to_value(openai::export_messages(&conversation).messages).unwrap();
    assert_eq!(exported[1]["tool_calls"], json!([custom]));
    // Anthropic cannot read it: the message has nothing else, so it is left out.
    let anthropic = serde_json::to_value(anthropic::export_messages(&conversation)).unwrap();
    assert_eq!(anthropic["messages"].as_array().map(Vec::len), Some(1));
}

#[test]
fn empty_choices_is_reported() {
    let error = openai::parse_response(&json!({ "id": "chatcmpl-1", "choices": [] })).unwrap_err();

    assert_eq!(&error.kind, &WireErrorKind::NoChoices);
    assert_eq!(error.path, "response.choices");
}

#[test]
fn unknown_role_in_messages_names_the_message_index() {
    let error = openai::parse_messages(&json!([
        { "role": "user", "content": "hi" },
        { "role": "function", "name": "get_weather", "content": "18°C" }
    ]))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownRole {
            role: "function".into()
        }
    );
    assert_eq!(error.path, "messages[1]");
}

#[test]
fn system_and_developer_messages_parse_to_system_messages_with_their_role() {
    for (role, system_role) in [
        ("system", SystemRole::System),
        ("developer", SystemRole::Developer),
    ] {
        let messages = json!([
            { "role": role, "content": "You are a helpful assistant." },
            { "role": "user", "content": "hi" }
        ]);

        let parsed = openai::parse_messages(&messages).unwrap();

        assert_eq!(
            parsed,
            vec![
                Message::System({
                    let mut system = SystemMessage::new("You are a helpful assistant.");
                    system.system_role = system_role;
                    system
                }),
                Message::user("hi"),
            ]
        );
        // Exported under the role it came with.
        assert_eq!(
            serde_json::to_value(openai::export_messages(&parsed).messages).unwrap(),
            messages
        );
    }
}

#[test]
fn tool_message_without_tool_call_id_is_a_missing_field() {
    let error =
        openai::parse_messages(&json!([{ "role": "tool", "content": "18°C" }])).unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "tool_call_id".into()
        }
    );
    assert_eq!(error.path, "messages[0]");
}

#[test]
fn tools_that_are_not_an_array_are_a_wrong_type() {
    let error = openai::parse_tools(&json!({ "type": "function" })).unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::WrongType {
            field: "tools".into(),
            expected: "an array".into(),
            found: "an object".into()
        }
    );
    assert_eq!(error.path, "tools");
}

#[test]
fn payloads_of_the_wrong_shape_never_panic() {
    for payload in [
        json!(null),
        json!(42),
        json!("chat.completion"),
        json!([]),
        json!({ "choices": {} }),
        json!({ "choices": [null] }),
        json!({ "choices": [{ "message": [] }] }),
        json!({ "choices": [{ "message": { "role": 1 } }] }),
        json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": "x" } }] }),
        json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [7] } }] }),
    ] {
        assert!(openai::parse_response(&payload).is_err(), "{payload}");
        assert!(openai::parse_messages(&payload).is_err() || payload == json!([]));
        assert!(openai::parse_tools(&payload).is_err() || payload == json!([]));
        assert!(openai::parse_request(&payload).is_err(), "{payload}");
    }
}

#[tokio::test]
async fn a_parsed_parallel_response_runs_the_empty_arguments_call_and_refuses_the_broken_one() {
    // The two parallel calls of `two_parallel_tool_calls_keep_their_raw_arguments`,
    // driven through a turn: `"{}"` reaches its tool, the invalid JSON
    // becomes an error result for its own id, and the model answers next.
    use agent_loop::turn::{ScriptedModel, TurnStatus};
    use agent_loop::{Bindings, Definition, LoopId, SessionId, tool};
    use tokio_util::sync::CancellationToken;

    let body = response_with_message(json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            { "id": "call_now", "type": "function",
              "function": { "name": "current_time", "arguments": "{}" } },
            { "id": "call_weather", "type": "function",
              "function": { "name": "get_weather", "arguments": "{\"city\": \"Par" } }
        ]
    }));
    let response = openai::parse_response(&body).unwrap();
    let model = ScriptedModel::new([response, ModelResponse::answer("noon")]);

    let now = tool::Definition::from_fn(
        ToolInfo::without_parameters("current_time", "The current UTC time."),
        |arguments: Value, _context| async move {
            assert_eq!(arguments, json!({}));
            Ok::<_, tool::BoxError>(json!("12:00"))
        },
    );
    let weather = tool::Definition::from_fn(weather_tool(), |_arguments: Value, _context| async {
        Ok::<_, tool::BoxError>(json!("never reached"))
    });
    let session = Definition::builder()
        .name("wire")
        .tools([now, weather])
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    let mut conversation = vec![Message::user("Time, and weather in Paris?")];

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a broken call does not fail the turn");

    assert_eq!(
        outcome.status,
        TurnStatus::Completed {
            answer: "noon".into()
        }
    );
    let results: Vec<&ToolResult> = conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(*results[0], ToolResult::ok("call_now", "12:00"));
    assert_eq!(results[1].tool_call_id, "call_weather");
    assert!(results[1].is_error, "{:?}", results[1]);
    assert!(
        results[1].text().contains("not valid JSON"),
        "{}",
        results[1].text()
    );
    // And the whole conversation goes back out as valid OpenAI messages.
    let exported = serde_json::to_value(openai::export_messages(&conversation).messages).unwrap();
    assert_eq!(exported[2]["role"], "tool");
    assert_eq!(exported[3]["tool_call_id"], "call_weather");
}
