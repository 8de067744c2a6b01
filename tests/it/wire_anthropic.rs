//! Anthropic Messages wire format: tools, responses and conversations, on
//! payloads shaped like the API reference's examples.

use agent_loop::conversation::WireFormat;
use agent_loop::conversation::{
    AssistantMessage, ContentPart, FinishReason, Message, ModelResponse, ProviderPart, ToolCall,
    ToolResult, Usage, UserMessage,
};
use agent_loop::tool::ToolInfo;
use agent_loop::wire::{ToolDeclaration, WireErrorKind, anthropic, openai};
use serde_json::{Value, json};

fn weather_tool() -> ToolInfo {
    ToolInfo::new(
        "get_weather",
        "Get the current weather in a given location.",
        json!({
            "type": "object",
            "properties": {
                "location": { "type": "string", "description": "The city and state, e.g. San Francisco, CA" },
                "unit": { "type": "string", "enum": ["celsius", "fahrenheit"] }
            },
            "required": ["location"]
        }),
    )
}

fn response_with_content(content: Value) -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": { "input_tokens": 472, "output_tokens": 91 }
    })
}

/// The `usage` of [`response_with_content`].
fn usage() -> Usage {
    Usage::new(472, 91)
}

/// A conversation with every kind of message: a user question, text and a
/// batch of two tool calls, one successful and one failed result, a final
/// answer. Arguments are compact JSON objects, which survive the round trip
/// byte for byte.
fn full_conversation() -> Vec<Message> {
    vec![
        Message::user("What's the weather in San Francisco and in Atlantis?"),
        Message::tool_calls(
            Some("I'll check both locations.".into()),
            vec![
                ToolCall::new(
                    "toolu_01A09q90qw90lq917835lq9",
                    "get_weather",
                    r#"{"location":"San Francisco, CA"}"#,
                ),
                ToolCall::new(
                    "toolu_01B7dXjLbrnJ2KcmEYH8Yq1T",
                    "get_weather",
                    r#"{"location":"Atlantis"}"#,
                ),
            ],
        ),
        Message::Tool(ToolResult::ok(
            "toolu_01A09q90qw90lq917835lq9",
            "15 degrees, foggy",
        )),
        Message::Tool(ToolResult::error(
            "toolu_01B7dXjLbrnJ2KcmEYH8Yq1T",
            "Location not found: Atlantis",
        )),
        Message::assistant("San Francisco is 15 degrees and foggy; Atlantis could not be found."),
    ]
}

#[test]
fn text_and_two_tool_use_blocks_become_one_assistant_message_in_order() {
    let body = response_with_content(json!([
        { "type": "text", "text": "I'll look up the weather " },
        { "type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
          "input": { "location": "San Francisco, CA", "unit": "celsius" } },
        { "type": "text", "text": "and the time." },
        { "type": "tool_use", "id": "toolu_01B7dXjLbrnJ2KcmEYH8Yq1T", "name": "get_time",
          "input": {} }
    ]));

    let response = anthropic::parse_response(&body).unwrap();

    // The blocks keep their interleaved order.
    assert_eq!(
        response,
        ModelResponse::new(AssistantMessage::new(vec![
            ContentPart::text("I'll look up the weather "),
            ContentPart::ToolCall(ToolCall::new(
                "toolu_01A09q90qw90lq917835lq9",
                "get_weather",
                r#"{"location":"San Francisco, CA","unit":"celsius"}"#,
            )),
            ContentPart::text("and the time."),
            ContentPart::ToolCall(ToolCall::new(
                "toolu_01B7dXjLbrnJ2KcmEYH8Yq1T",
                "get_time",
                "{}"
            )),
        ]))
        .with_usage(usage())
    );
    assert_eq!(
        response.message.text(),
        "I'll look up the weather and the time."
    );
    // And go back out in that order.
    let conversation = [Message::Assistant(response.message)];
    let exported = serde_json::to_value(anthropic::export_messages(&conversation)).unwrap();
    assert_eq!(exported["messages"][0]["content"], body["content"]);
}

#[test]
fn end_turn_response_is_a_final_answer() {
    let mut body = response_with_content(json!([
        { "type": "text", "text": "It is 15 degrees and foggy." }
    ]));
    body["stop_reason"] = json!("end_turn");

    let response = anthropic::parse_response(&body).unwrap();

    assert_eq!(
        response,
        ModelResponse::answer("It is 15 degrees and foggy.").with_usage(usage())
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[test]
fn tools_export_with_input_schema_and_parse_back_equal() {
    let tools = vec![
        weather_tool(),
        ToolInfo::without_parameters("get_time", "The current UTC time."),
    ];

    let exported = serde_json::to_value(anthropic::export_tools(&tools)).unwrap();

    assert_eq!(
        exported[0],
        json!({
            "name": "get_weather",
            "description": "Get the current weather in a given location.",
            "input_schema": tools[0].parameters
        })
    );
    assert_eq!(
        anthropic::parse_tools(&exported).unwrap(),
        tools
            .iter()
            .cloned()
            .map(ToolDeclaration::Function)
            .collect::<Vec<_>>()
    );
}

#[test]
fn conversation_exports_with_merged_tool_results_and_parses_back_equal() {
    let conversation = full_conversation();

    let exported = serde_json::to_value(anthropic::export_messages(&conversation)).unwrap();

    // No system message: no `system` field.
    assert_eq!(
        exported,
        json!({ "messages": [
            { "role": "user", "content": [
                { "type": "text", "text": "What's the weather in San Francisco and in Atlantis?" }
            ] },
            { "role": "assistant", "content": [
                { "type": "text", "text": "I'll check both locations." },
                { "type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
                  "input": { "location": "San Francisco, CA" } },
                { "type": "tool_use", "id": "toolu_01B7dXjLbrnJ2KcmEYH8Yq1T", "name": "get_weather",
                  "input": { "location": "Atlantis" } }
            ] },
            // Both results of the batch in ONE user message, as the API requires.
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                  "content": "15 degrees, foggy" },
                { "type": "tool_result", "tool_use_id": "toolu_01B7dXjLbrnJ2KcmEYH8Yq1T",
                  "content": "Location not found: Atlantis", "is_error": true }
            ] },
            { "role": "assistant", "content": [
                { "type": "text",
                  "text": "San Francisco is 15 degrees and foggy; Atlantis could not be found." }
            ] }
        ] })
    );
    // Nothing is lost, is_error included.
    assert_eq!(
        anthropic::parse_messages(&exported["messages"]).unwrap(),
        conversation
    );
}

#[test]
fn invalid_json_arguments_export_as_a_wrapped_object_and_come_back_raw() {
    let conversation = vec![
        Message::user("Weather in Paris?"),
        Message::tool_calls(
            None,
            vec![ToolCall::new(
                "call_1",
                "get_weather",
                r#"{"location": "Par"#,
            )],
        ),
        Message::Tool(ToolResult::error(
            "call_1",
            "The arguments are not valid JSON: EOF while parsing a string.",
        )),
    ];

    let exported =
        serde_json::to_value(anthropic::export_messages(&conversation).messages).unwrap();

    assert_eq!(
        exported[1]["content"][0]["input"],
        json!({ agent_loop::wire::RAW_ARGUMENTS_KEY: r#"{"location": "Par"# })
    );
    assert_eq!(anthropic::parse_messages(&exported).unwrap(), conversation);
}

#[test]
fn string_content_and_tool_result_blocks_are_accepted() {
    let messages = json!([
        { "role": "user", "content": "Weather in Paris?" },
        { "role": "assistant", "content": [
            { "type": "tool_use", "id": "toolu_1", "name": "get_weather",
              "input": { "location": "Paris" } }
        ] },
        { "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "toolu_1",
              "content": [{ "type": "text", "text": "18°C" }] },
            { "type": "text", "text": "And tomorrow?" }
        ] }
    ]);

    assert_eq!(
        anthropic::parse_messages(&messages).unwrap(),
        vec![
            Message::user("Weather in Paris?"),
            Message::tool_calls(
                None,
                vec![ToolCall::new(
                    "toolu_1",
                    "get_weather",
                    r#"{"location":"Paris"}"#
                )]
            ),
            Message::Tool(ToolResult::ok("toolu_1", "18°C")),
            Message::user("And tomorrow?"),
        ]
    );
}

#[test]
fn tool_use_without_id_is_a_missing_field() {
    let error = anthropic::parse_response(&response_with_content(json!([
        { "type": "text", "text": "Checking." },
        { "type": "tool_use", "name": "get_weather", "input": { "location": "Paris" } }
    ])))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField { field: "id".into() }
    );
    assert_eq!(error.path, "response.content[1]");
    assert_eq!(error.format, WireFormat::AnthropicMessages);
    assert_eq!(
        error.to_string(),
        "Anthropic Messages: at response.content[1]: missing field `id`"
    );
}

#[test]
fn non_object_input_is_a_wrong_type() {
    let error = anthropic::parse_response(&response_with_content(json!([
        { "type": "tool_use", "id": "toolu_1", "name": "get_weather",
          "input": "{\"location\": \"Paris\"}" }
    ])))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::WrongType {
            field: "input".into(),
            expected: "an object".into(),
            found: "a string".into()
        }
    );
    assert_eq!(error.path, "response.content[0].input");
}

#[test]
fn unknown_block_types_are_kept_verbatim_in_place() {
    let server_tool_use = json!({ "type": "server_tool_use", "id": "srvtoolu_1",
                                  "name": "web_search", "input": { "query": "weather Paris" } });
    let response = anthropic::parse_response(&response_with_content(json!([
        { "type": "text", "text": "Searching." },
        server_tool_use,
        { "type": "tool_use", "id": "toolu_1", "name": "get_weather",
          "input": { "location": "Paris" } }
    ])))
    .unwrap();

    assert_eq!(
        response.message.content,
        vec![
            ContentPart::text("Searching."),
            ContentPart::Provider(ProviderPart::new(
                WireFormat::AnthropicMessages,
                server_tool_use
            )),
            ContentPart::ToolCall(ToolCall::new(
                "toolu_1",
                "get_weather",
                r#"{"location":"Paris"}"#
            )),
        ]
    );

    // In a user message too (a `document`), and back out unchanged.
    let document = json!({ "type": "document",
                           "source": { "type": "text", "media_type": "text/plain", "data": "Hi." } });
    let messages = json!([
        { "role": "user", "content": [document, { "type": "text", "text": "Summarise it." }] }
    ]);
    let parsed = anthropic::parse_messages(&messages).unwrap();
    assert_eq!(
        parsed,
        vec![Message::User(UserMessage::new(vec![
            ContentPart::Provider(ProviderPart::new(WireFormat::AnthropicMessages, document)),
            ContentPart::text("Summarise it."),
        ]))]
    );
    assert_eq!(
        serde_json::to_value(anthropic::export_messages(&parsed).messages).unwrap(),
        messages
    );
    // OpenAI cannot read it: only the text goes there.
    assert_eq!(
        serde_json::to_value(openai::export_messages(&parsed).messages).unwrap(),
        json!([{ "role": "user", "content": "Summarise it." }])
    );
}

#[test]
fn error_body_is_an_unknown_type() {
    let error = anthropic::parse_response(&json!({
        "type": "error",
        "error": { "type": "overloaded_error", "message": "Overloaded" }
    }))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownType {
            found: "error".into()
        }
    );
    assert_eq!(error.path, "response");
}

#[test]
fn unknown_role_in_messages_names_the_message_index() {
    let error = anthropic::parse_messages(&json!([
        { "role": "user", "content": "hi" },
        { "role": "system", "content": "You are terse." }
    ]))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownRole {
            role: "system".into()
        }
    );
    assert_eq!(error.path, "messages[1]");
}

#[test]
fn tool_use_in_a_user_message_is_a_provider_block_not_a_call() {
    let tool_use = json!({ "type": "tool_use", "id": "toolu_1", "name": "x", "input": {} });

    let parsed =
        anthropic::parse_messages(&json!([{ "role": "user", "content": [tool_use] }])).unwrap();

    assert_eq!(
        parsed,
        vec![Message::User(UserMessage::new(vec![
            ContentPart::Provider(ProviderPart::new(WireFormat::AnthropicMessages, tool_use))
        ]))]
    );
}

#[test]
fn tool_use_in_a_user_message_still_needs_its_documented_shape() {
    let error = anthropic::parse_messages(&json!([
        { "role": "user", "content": [
            { "type": "text", "text": "hi" },
            { "type": "tool_use", "id": "toolu_1", "input": {} }
        ] }
    ]))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "name".into()
        }
    );
    assert_eq!(error.path, "messages[0].content[1]");
}

#[test]
fn is_error_that_is_not_a_boolean_is_a_wrong_type() {
    let error = anthropic::parse_messages(&json!([
        { "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "toolu_1", "content": "x", "is_error": "yes" }
        ] }
    ]))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::WrongType {
            field: "is_error".into(),
            expected: "a boolean".into(),
            found: "a string".into()
        }
    );
    assert_eq!(error.path, "messages[0].content[0].is_error");
}

#[test]
fn tool_without_input_schema_is_a_missing_field() {
    let error = anthropic::parse_tools(&json!([{ "name": "get_time", "description": "Time." }]))
        .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "input_schema".into()
        }
    );
    assert_eq!(error.path, "tools[0]");
}

#[test]
fn payloads_of_the_wrong_shape_never_panic() {
    for payload in [
        json!(null),
        json!(42),
        json!({ "role": "assistant" }),
        json!({ "role": "assistant", "content": 7 }),
        json!({ "role": "assistant", "content": [null] }),
        json!({ "role": "assistant", "content": [{ "type": 3 }] }),
        json!([{ "role": "user", "content": [{ "type": "tool_result" }] }]),
        json!([{ "role": "assistant", "content": [{ "type": "tool_use", "id": "x", "name": "y" }] }]),
    ] {
        assert!(anthropic::parse_response(&payload).is_err(), "{payload}");
        assert!(anthropic::parse_messages(&payload).is_err(), "{payload}");
        assert!(anthropic::parse_tools(&payload).is_err(), "{payload}");
        assert!(anthropic::parse_request(&payload).is_err(), "{payload}");
    }
}

/// System blocks with cache_control, an image and a document, interleaved
/// and redacted thinking, server tool blocks, citations, `caller`, a result
/// with an image: all of it goes back as it came.
#[test]
fn a_rich_request_exports_back_to_the_same_json_and_parses_to_the_same_conversation() {
    let body = json!({
        "system": [
            { "type": "text", "text": "You are terse." },
            { "type": "text", "text": "Cache me.", "cache_control": { "type": "ephemeral" } }
        ],
        "messages": [
            { "role": "user", "content": [
                { "type": "text", "text": "Look" },
                { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo=" } },
                { "type": "document", "source": { "type": "text", "media_type": "text/plain", "data": "doc" } }
            ] },
            { "role": "assistant", "content": [
                { "type": "thinking", "thinking": "a", "signature": "s1" },
                { "type": "redacted_thinking", "data": "ZW5j" },
                { "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": { "query": "q" } },
                { "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [] },
                { "type": "text", "text": "cited", "citations": [{ "type": "char_location", "cited_text": "c", "document_index": 0, "start_char_index": 0, "end_char_index": 1 }] },
                { "type": "tool_use", "id": "toolu_1", "name": "shot", "input": { "b": 1, "a": 2 }, "caller": { "type": "direct" } },
                { "type": "thinking", "thinking": "b", "signature": "s2" },
                { "type": "tool_use", "id": "toolu_2", "name": "shot", "input": {} }
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    { "type": "text", "text": "here" },
                    { "type": "image", "source": { "type": "url", "url": "https://x/y.png" } }
                ], "cache_control": { "type": "ephemeral" } },
                { "type": "tool_result", "tool_use_id": "toolu_2", "content": "done", "is_error": true },
                { "type": "text", "text": "continue" }
            ] }
        ]
    });
    let parsed = anthropic::parse_request(&body).unwrap();
    let exported = serde_json::to_value(anthropic::export_messages(&parsed.conversation)).unwrap();
    let mut expected = body.clone();
    // serde_json without preserve_order sorts `input` keys; same object.
    expected["messages"][1]["content"][5]["input"] = json!({ "a": 2, "b": 1 });
    assert_eq!(exported, expected);
    let reparsed = anthropic::parse_request(&exported).unwrap();
    assert_eq!(reparsed.conversation, parsed.conversation);
}
