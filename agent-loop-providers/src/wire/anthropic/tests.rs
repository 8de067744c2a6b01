use serde_json::json;

use super::messages::arguments_to_input;
use super::*;
use crate::wire::{RAW_ARGUMENTS_KEY, ToolDeclaration, WireErrorKind};
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, Extras, FinishReason, ImagePart, Message, Origin, ProviderPart,
    ReasoningPart, ToolCall, ToolResult, Usage,
};
use agent_loop_core::tool::ToolInfo;
use serde_json::{Map, Value};

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn exported(conversation: &[Message]) -> Value {
    serde_json::to_value(export_messages(conversation)).unwrap()
}

#[test]
fn object_arguments_become_the_input_object() {
    assert_eq!(
        Value::Object(arguments_to_input(r#"{"city": "Paris"}"#)),
        json!({ "city": "Paris" })
    );
}

#[test]
fn blank_arguments_become_an_empty_object() {
    // Blank, and `null` as Groq sends it: no arguments.
    for blank in ["", "  \n", "null", " null "] {
        assert_eq!(arguments_to_input(blank), Map::new());
    }
    let conversation = [Message::tool_calls(
        None,
        vec![ToolCall::new("toolu_1", "f", " ")],
    )];
    assert_eq!(
        exported(&conversation)["messages"][0]["content"][0]["input"],
        json!({})
    );
}

#[test]
fn non_object_arguments_are_wrapped_and_restored_from_history_only() {
    for raw in [r#"{"city": "Par"#, "[1, 2]", "42"] {
        let conversation = [Message::tool_calls(
            None,
            vec![ToolCall::new("toolu_1", "f", raw)],
        )];
        let messages = &exported(&conversation)["messages"];
        assert_eq!(
            messages[0]["content"][0]["input"],
            json!({ RAW_ARGUMENTS_KEY: raw })
        );
        let parsed = parse_messages(messages).unwrap();
        assert_eq!(
            parsed[0]
                .as_assistant()
                .unwrap()
                .tool_calls()
                .next()
                .unwrap()
                .arguments,
            raw
        );
    }
    let response = parse_response(&json!({
        "role": "assistant",
        "content": [{ "type": "tool_use", "id": "t", "name": "f", "input": { RAW_ARGUMENTS_KEY: "x" } }]
    }))
    .unwrap();
    assert_eq!(
        response.message.tool_calls().next().unwrap().arguments,
        r#"{"_raw_arguments":"x"}"#
    );
}

#[test]
fn thinking_is_kept_with_its_signature_and_exported_first() {
    let response = parse_response(&json!({
        "type": "message", "role": "assistant",
        "content": [
            { "type": "thinking", "thinking": "Let me think.", "signature": "sig" },
            { "type": "text", "text": "Done." }
        ],
        "stop_reason": "end_turn"
    }))
    .unwrap();
    assert_eq!(
        response.message.content[0],
        ContentPart::Reasoning(
            ReasoningPart::new("Let me think.", Origin::new(FORMAT)).signed("sig")
        )
    );
    // Built out of order: the thinking goes first on export.
    let mut content = response.message.content.clone();
    content.reverse();
    let conversation = [Message::Assistant(AssistantMessage::new(content))];
    assert_eq!(
        exported(&conversation)["messages"][0]["content"],
        json!([
            { "type": "thinking", "thinking": "Let me think.", "signature": "sig" },
            { "type": "text", "text": "Done." }
        ])
    );
}

#[test]
fn interleaved_thinking_keeps_its_order() {
    let blocks = json!([
        { "type": "thinking", "thinking": "a", "signature": "s1" },
        { "type": "tool_use", "id": "toolu_1", "name": "f", "input": {} },
        { "type": "thinking", "thinking": "b", "signature": "s2" },
        { "type": "text", "text": "ok" }
    ]);
    let messages = json!([{ "role": "assistant", "content": blocks }]);
    let parsed = parse_messages(&messages).unwrap();
    assert_eq!(exported(&parsed)["messages"], messages);
}

#[test]
fn unsigned_thinking_and_other_formats_reasoning_are_not_exported() {
    let reasoning = |format, signature: Option<&str>| {
        let mut part = ReasoningPart::new("hmm", Origin::new(format));
        part.signature = signature.map(str::to_owned);
        ContentPart::Reasoning(part)
    };
    let conversation = [Message::Assistant(AssistantMessage::new(vec![
        reasoning(FORMAT, None),
        reasoning(WireFormat::OpenAiChat, Some("x")),
        ContentPart::text("answer"),
    ]))];
    assert_eq!(
        exported(&conversation)["messages"][0]["content"],
        json!([{ "type": "text", "text": "answer" }])
    );
}

#[test]
fn redacted_thinking_round_trips() {
    let messages = json!([{ "role": "assistant", "content": [
        { "type": "redacted_thinking", "data": "ENCRYPTED" },
        { "type": "text", "text": "Hi." }
    ] }]);
    let parsed = parse_messages(&messages).unwrap();
    let ContentPart::Reasoning(reasoning) = &parsed[0].as_assistant().unwrap().content[0] else {
        panic!("not reasoning: {parsed:?}");
    };
    assert_eq!(reasoning.text, "");
    assert_eq!(reasoning.redacted.as_deref(), Some("ENCRYPTED"));
    assert_eq!(exported(&parsed)["messages"], messages);
}

#[test]
fn server_tool_blocks_are_provider_parts_exported_verbatim_to_anthropic_only() {
    let server_use = json!({
        "type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
        "input": { "query": "weather" }
    });
    let search_result = json!({
        "type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
        "content": [{ "type": "web_search_result", "url": "https://example.com", "title": "x", "encrypted_content": "E" }]
    });
    let response = parse_response(&json!({
        "type": "message", "role": "assistant",
        "content": [
            server_use,
            search_result,
            { "type": "text", "text": "Sunny.", "citations": [{ "type": "web_search_result_location", "url": "https://example.com" }] }
        ],
        "stop_reason": "end_turn"
    }))
    .unwrap();
    let content = &response.message.content;
    assert_eq!(
        content[0],
        ContentPart::Provider(ProviderPart::new(Origin::new(FORMAT), server_use.clone()))
    );
    let ContentPart::Text(text) = &content[2] else {
        panic!("not text");
    };
    assert!(
        text.extras
            .fields_for(FORMAT)
            .unwrap()
            .contains_key("citations")
    );
    let conversation = [Message::Assistant(response.message.clone())];
    let blocks = &exported(&conversation)["messages"][0]["content"];
    assert_eq!(blocks[0], server_use);
    assert_eq!(blocks[1], search_result);
    assert!(blocks[2].get("citations").is_some());

    // The same parts from another format are left out.
    let foreign: Vec<ContentPart> = content
        .iter()
        .map(|part| match part {
            ContentPart::Provider(provider) => ContentPart::Provider(ProviderPart::new(
                Origin::new(WireFormat::OpenAiChat),
                provider.value.clone(),
            )),
            part => part.clone(),
        })
        .collect();
    let conversation = [Message::Assistant(AssistantMessage::new(foreign))];
    let blocks = &exported(&conversation)["messages"][0]["content"];
    assert_eq!(blocks.as_array().unwrap().len(), 1);
    assert_eq!(blocks[0]["type"], "text");
}

#[test]
fn provider_defined_tools_are_kept_and_refused_by_other_formats() {
    let tools = json!([
        { "name": "memory", "type": "memory_20250818" },
        {
            "name": "search", "description": "Search.", "input_schema": { "type": "object" },
            "strict": true, "cache_control": { "type": "ephemeral" }, "defer_loading": true
        },
        { "type": "custom", "name": "c", "input_schema": { "type": "object" } }
    ]);
    let declarations = parse_tools(&tools).unwrap();
    let ToolDeclaration::Provider(memory) = &declarations[0] else {
        panic!("not a provider tool");
    };
    assert_eq!(
        (memory.name.as_str(), memory.tool_type.as_str()),
        ("memory", "memory_20250818")
    );
    let search = declarations[1].as_function().unwrap();
    assert_eq!(search.strict, Some(true));
    let extras = search.extras.fields_for(FORMAT).unwrap();
    assert!(extras.contains_key("cache_control") && extras.contains_key("defer_loading"));
    assert_eq!(declarations[2].as_function().unwrap().description, "");

    let mut again = export_declarations(&declarations).unwrap();
    again[2].as_object_mut().unwrap().remove("description");
    assert_eq!(Value::Array(again), tools);

    let mut foreign = memory.clone();
    foreign.format = WireFormat::OpenAiChat;
    let error = export_declarations(&[declarations[1].clone(), ToolDeclaration::Provider(foreign)])
        .unwrap_err();
    assert_eq!(error.path, "tools[1]");
    assert_eq!(
        &error.kind,
        &WireErrorKind::ProviderTool {
            name: "memory".into(),
            tool_type: "memory_20250818".into(),
            format: WireFormat::OpenAiChat,
        }
    );
}

#[test]
fn tool_extras_go_only_to_anthropic_and_strict_only_when_set() {
    let mut info = ToolInfo::without_parameters("f", "d");
    info.extras = Extras::new(WireFormat::McpToolsList, object(json!({ "title": "F" })));
    let tool = serde_json::to_value(&export_tools(&[info])[0]).unwrap();
    assert_eq!(
        tool,
        json!({ "name": "f", "description": "d", "input_schema": { "type": "object", "properties": {} } })
    );
}

#[test]
fn a_tool_without_input_schema_is_missing_a_field() {
    let error = parse_tools(&json!([{ "name": "f" }])).unwrap_err();
    assert_eq!(error.path, "tools[0]");
    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "input_schema".into()
        }
    );
}

#[test]
fn caller_is_kept_on_tool_use() {
    let messages = json!([{ "role": "assistant", "content": [{
        "type": "tool_use", "id": "toolu_1", "name": "f", "input": { "a": 1 },
        "caller": { "type": "code_execution_20250825", "tool_id": "srvtoolu_2" }
    }] }]);
    let parsed = parse_messages(&messages).unwrap();
    let call = parsed[0]
        .as_assistant()
        .unwrap()
        .tool_calls()
        .next()
        .unwrap()
        .clone();
    assert!(
        call.extras
            .fields_for(FORMAT)
            .unwrap()
            .contains_key("caller")
    );
    assert_eq!(exported(&parsed)["messages"], messages);
}

#[test]
fn empty_assistant_messages_and_blank_text_are_not_exported() {
    let conversation = [
        Message::user("  "),
        Message::user("hi"),
        Message::assistant(""),
        Message::Assistant(AssistantMessage::new(vec![
            ContentPart::text(" \n"),
            ContentPart::text("answer"),
        ])),
        Message::Assistant(AssistantMessage::default()),
    ];
    assert_eq!(
        exported(&conversation)["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "hi" }] },
            { "role": "assistant", "content": [{ "type": "text", "text": "answer" }] }
        ])
    );
    let parsed = parse_messages(&json!([
        { "role": "user", "content": " " },
        { "role": "assistant", "content": [{ "type": "text", "text": "" }] },
        { "role": "assistant", "content": [] }
    ]))
    .unwrap();
    assert!(parsed.is_empty());
}

#[test]
fn whitespace_text_blocks_are_joined_to_their_neighbours() {
    let cited = |text: &str| json!({ "type": "text", "text": text, "citations": [{ "type": "char_location", "cited_text": text }] });
    let text = |text: &str| json!({ "type": "text", "text": text });
    let response = parse_response(&json!({
        "role": "assistant",
        "content": [cited("A"), text("\n\n"), cited("B")],
        "stop_reason": "end_turn"
    }))
    .unwrap();
    assert_eq!(response.message.text(), "A\n\nB");
    let ContentPart::Text(first) = &response.message.content[0] else {
        panic!("not text")
    };
    assert_eq!(first.text, "A\n\n");
    assert!(
        first
            .extras
            .fields_for(FORMAT)
            .unwrap()
            .contains_key("citations")
    );
    assert_eq!(response.message.content.len(), 2);

    let image =
        json!({ "type": "image", "source": { "type": "url", "url": "https://example.com/a.png" } });
    let messages = json!([
        { "role": "user", "content": [text(" "), image, text("\n"), text("B")] },
        { "role": "assistant", "content": [
            { "type": "tool_use", "id": "toolu_1", "name": "f", "input": {} }, text("\n")
        ] },
        { "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "toolu_1", "content": [text("r"), text("\n")] },
            text("\n"), image
        ] },
        { "role": "assistant", "content": [text("A"), text("\n\n"), text("B")] }
    ]);
    let parsed = parse_messages(&messages).unwrap();
    let Message::User(user) = &parsed[0] else {
        panic!("not user")
    };
    // No text part before: prepended to the next one.
    assert_eq!(user.content.len(), 2);
    assert_eq!(user.content[1], ContentPart::text(" \nB"));
    assert_eq!(
        parsed[1].as_assistant().unwrap().content.len(),
        1,
        "no text to join: dropped"
    );
    assert_eq!(parsed[2].text(), "r\n");
    assert!(matches!(&parsed[3], Message::User(user) if user.content.len() == 1));
    assert_eq!(
        parsed[4].as_assistant().unwrap().content,
        [ContentPart::text("A\n\n"), ContentPart::text("B")]
    );
    // No blank block is exported, and parse → export → parse is the identity.
    let out = exported(&parsed);
    assert_eq!(
        out["messages"][3]["content"],
        json!([text("A\n\n"), text("B")])
    );
    assert_eq!(parse_messages(&out["messages"]).unwrap(), parsed);
    let again = exported(&[Message::Assistant(response.message.clone())]);
    assert_eq!(
        parse_messages(&again["messages"]).unwrap(),
        [Message::Assistant(response.message)]
    );
}

#[test]
fn kimi_ids_are_mapped_the_same_for_the_call_and_its_result() {
    let id = "functions.write_todos:0";
    let conversation = [
        Message::tool_calls(
            Some("Writing.".into()),
            vec![ToolCall::new(id, "multi_tool_use.parallel", "{}")],
        ),
        Message::Tool(ToolResult::ok(id, "done")),
    ];
    let messages = &exported(&conversation)["messages"];
    let call = &messages[0]["content"][1];
    let result = &messages[1]["content"][0];
    assert_eq!(call["id"], "functions_write_todos_0");
    assert_eq!(result["tool_use_id"], call["id"]);
    assert_eq!(call["name"], "multi_tool_use_parallel");
    assert_eq!(messages[0]["content"][0]["text"], "Writing.");
}

#[test]
fn an_empty_error_result_gets_a_text() {
    for content in [vec![], vec![ContentPart::text(" \n")]] {
        let conversation = [
            Message::tool_calls(None, vec![ToolCall::new("toolu_1", "f", "{}")]),
            Message::Tool(ToolResult::with_content("toolu_1", content.clone(), true)),
            Message::Tool(ToolResult::with_content("toolu_2", content, false)),
        ];
        assert_eq!(
            exported(&conversation)["messages"][1]["content"],
            json!([
                { "type": "tool_result", "tool_use_id": "toolu_1",
                  "content": "The tool call failed.", "is_error": true },
                { "type": "tool_result", "tool_use_id": "toolu_2" }
            ])
        );
    }
}

#[test]
fn an_error_result_exports_its_text_only() {
    let screenshot = ContentPart::Image(ImagePart::base64("image/png", "iVBORw0K"));
    let document = ContentPart::Provider(ProviderPart::new(
        Origin::new(FORMAT),
        json!({ "type": "document", "source": { "type": "text", "data": "d" } }),
    ));
    let conversation = [
        Message::tool_calls(
            None,
            vec![
                ToolCall::new("toolu_1", "click", "{}"),
                ToolCall::new("toolu_2", "click", "{}"),
                ToolCall::new("toolu_3", "click", "{}"),
            ],
        ),
        Message::Tool(ToolResult::with_content(
            "toolu_1",
            vec![
                ContentPart::text("No button there."),
                screenshot.clone(),
                document,
            ],
            true,
        )),
        Message::Tool(ToolResult::with_content(
            "toolu_2",
            vec![screenshot.clone()],
            true,
        )),
        Message::Tool(ToolResult::with_content("toolu_3", vec![screenshot], false)),
    ];
    let results = &exported(&conversation)["messages"][1]["content"];
    assert_eq!(
        results[0],
        json!({ "type": "tool_result", "tool_use_id": "toolu_1",
                "content": "No button there.", "is_error": true })
    );
    assert_eq!(
        results[1],
        json!({ "type": "tool_result", "tool_use_id": "toolu_2",
                "content": "The tool call failed.", "is_error": true })
    );
    assert_eq!(
        results[2]["content"],
        json!([{ "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0K" } }])
    );
}

#[test]
fn tool_results_and_the_next_user_message_share_one_user_message() {
    let conversation = [
        Message::user("hi"),
        Message::Tool(ToolResult::ok("toolu_1", "done")),
        Message::Tool(ToolResult::error("toolu_2", "failed")),
        Message::user("thanks"),
        Message::user("again"),
    ];
    assert_eq!(
        exported(&conversation)["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "hi" }] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1", "content": "done" },
                { "type": "tool_result", "tool_use_id": "toolu_2", "content": "failed", "is_error": true },
                { "type": "text", "text": "thanks" }
            ] },
            { "role": "user", "content": [{ "type": "text", "text": "again" }] }
        ])
    );
}

#[test]
fn usage_and_stop_reasons_are_mapped() {
    let body = |stop_reason: Value| {
        json!({
            "type": "message", "role": "assistant",
            "content": [{ "type": "text", "text": "x" }],
            "stop_reason": stop_reason,
            "usage": {
                "input_tokens": 10, "output_tokens": 5,
                "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20,
                "cache_creation": { "ephemeral_5m_input_tokens": 20 }
            }
        })
    };
    let response = parse_response(&body(json!("end_turn"))).unwrap();
    let mut usage = Usage::new(130, 5);
    usage.cache_read_tokens = 100;
    usage.cache_write_tokens = 20;
    usage.reasoning_tokens = 0;
    assert_eq!(response.usage, usage);
    for (raw, reason) in [
        (json!("end_turn"), FinishReason::Stop),
        (json!("stop_sequence"), FinishReason::Stop),
        (json!("tool_use"), FinishReason::ToolCalls),
        (json!("max_tokens"), FinishReason::Length),
        (
            json!("model_context_window_exceeded"),
            FinishReason::ContextWindowExceeded,
        ),
        (json!("refusal"), FinishReason::Refusal),
        (json!("pause_turn"), FinishReason::Paused),
        (
            json!("compaction"),
            FinishReason::Other("compaction".into()),
        ),
        (Value::Null, FinishReason::Stop),
    ] {
        assert_eq!(parse_response(&body(raw)).unwrap().finish_reason, reason);
    }
    let calls = parse_response(&json!({
        "role": "assistant",
        "content": [{ "type": "tool_use", "id": "t", "name": "f", "input": {} }]
    }))
    .unwrap();
    assert_eq!(calls.finish_reason, FinishReason::ToolCalls);
    assert_eq!(calls.usage, Usage::default());
}

#[test]
fn bad_responses_are_typed_errors() {
    let error = parse_response(&json!({ "type": "error", "error": {} })).unwrap_err();
    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownType {
            found: "error".into()
        }
    );
    let error = parse_response(&json!({ "role": "user", "content": [] })).unwrap_err();
    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownRole {
            role: "user".into()
        }
    );
    let error = parse_response(&json!({
        "role": "assistant",
        "content": [{ "type": "text", "text": "x" }, { "type": "tool_use", "id": "t", "name": "f", "input": "{}" }]
    }))
    .unwrap_err();
    assert_eq!(error.path, "response.content[1].input");
    assert_eq!(
        &error.kind,
        &WireErrorKind::WrongType {
            field: "input".into(),
            expected: "an object".into(),
            found: "a string".into(),
        }
    );
    let error = parse_messages(&json!([{ "role": "system", "content": "x" }])).unwrap_err();
    assert_eq!(error.path, "messages[0]");
    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownRole {
            role: "system".into()
        }
    );
    let error =
        parse_messages(&json!([{ "role": "user", "content": [{ "text": "x" }] }])).unwrap_err();
    assert_eq!(error.path, "messages[0].content[0]");
    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "type".into()
        }
    );
}

#[test]
fn request_errors_are_rooted_at_request() {
    let error = parse_request(&json!({
        "messages": [{ "role": "user", "content": [{ "text": "x" }] }]
    }))
    .unwrap_err();
    assert_eq!(error.path, "request.messages[0].content[0]");
    let error =
        parse_request(&json!({ "messages": [{ "role": "system", "content": "x" }] })).unwrap_err();
    assert_eq!(error.path, "request.messages[0]");
    let error = parse_request(&json!({ "messages": {} })).unwrap_err();
    assert_eq!(error.path, "request.messages");
    let error = parse_request(&json!({
        "system": [{ "type": "text", "text": "a" }, { "type": "image", "source": { "type": "url", "url": "u" } }],
        "messages": []
    }))
    .unwrap_err();
    assert_eq!(error.path, "request.system[1]");
    assert_eq!(
        &error.kind,
        &WireErrorKind::UnknownType {
            found: "image".into()
        }
    );
    let error = parse_request(&json!({ "system": 7, "messages": [] })).unwrap_err();
    assert_eq!(error.path, "request.system");
    let error = parse_request(&json!({ "messages": [], "tools": [{ "name": "f" }] })).unwrap_err();
    assert_eq!(error.path, "request.tools[0]");
    let error = parse_request(&json!({ "messages": [], "tools": {} })).unwrap_err();
    assert_eq!(error.path, "request.tools");
    // The standalone parsers keep their own roots.
    let error =
        parse_messages(&json!([{ "role": "user", "content": [{ "text": "x" }] }])).unwrap_err();
    assert_eq!(error.path, "messages[0].content[0]");
    assert_eq!(
        parse_tools(&json!([{ "name": "f" }])).unwrap_err().path,
        "tools[0]"
    );
}

#[test]
fn system_prompt_is_a_string_or_blocks_with_their_extras() {
    let request = json!({
        "model": "claude",
        "system": [
            { "type": "text", "text": "Rules." },
            { "type": "text", "text": "Long context.", "cache_control": { "type": "ephemeral" } }
        ],
        "messages": [{ "role": "user", "content": "hi" }]
    });
    let parsed = parse_request(&request).unwrap();
    assert_eq!(parsed.conversation.len(), 3);
    assert!(parsed.tools.is_empty());
    let exported = exported(&parsed.conversation);
    assert_eq!(exported["system"], request["system"]);
    let single = export_messages(&[Message::system("Rules."), Message::user("hi")]);
    assert_eq!(single.system, Some(json!("Rules.")));
}

#[test]
fn rich_conversation_parse_export_parse_is_the_identity() {
    let request = json!({
        "system": "Be brief.",
        "messages": [
            { "role": "user", "content": [
                { "type": "text", "text": "What is on this?" },
                { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo=" } },
                { "type": "image", "source": { "type": "url", "url": "https://example.com/a.png" }, "cache_control": { "type": "ephemeral" } },
                { "type": "document", "source": { "type": "text", "media_type": "text/plain", "data": "doc" } }
            ] },
            { "role": "assistant", "content": [
                { "type": "thinking", "thinking": "Look closer.", "signature": "c2ln" },
                { "type": "text", "text": "Let me zoom." },
                { "type": "tool_use", "id": "toolu_1", "name": "zoom", "input": { "factor": 2 } },
                { "type": "tool_use", "id": "toolu_2", "name": "ocr", "input": {} }
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    { "type": "text", "text": "Zoomed:" },
                    { "type": "image", "source": { "type": "base64", "media_type": "image/jpeg", "data": "/9j/" } }
                ] },
                { "type": "tool_result", "tool_use_id": "toolu_2", "content": "no text", "is_error": true, "cache_control": { "type": "ephemeral" } },
                { "type": "text", "text": "Well?" }
            ] },
            { "role": "assistant", "content": [{ "type": "text", "text": "A cat." }] }
        ],
        "tools": [{ "name": "zoom", "description": "Zoom.", "input_schema": { "type": "object" } }]
    });
    let parsed = parse_request(&request).unwrap();
    assert!(matches!(parsed.conversation[0], Message::System(_)));
    assert!(matches!(parsed.conversation[3], Message::Tool(_)));
    let again = serde_json::to_value(export_messages(&parsed.conversation)).unwrap();
    assert_eq!(again["system"], request["system"]);
    assert_eq!(again["messages"], request["messages"]);
    let reparsed = parse_request(&json!({
        "system": again["system"],
        "messages": again["messages"],
        "tools": export_declarations(&parsed.tools).unwrap()
    }))
    .unwrap();
    assert_eq!(reparsed, parsed);
}

mod decoding {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::super::types::{
        ImageBlock, RedactedThinkingBlock, ResponseUsage, TextBlock, ThinkingBlock, Tool,
        ToolUseBlock,
    };
    use crate::wire::decode::testing::{json_tree, same_kind, same_members};
    use crate::wire::string_or_array::StringOrArray;

    const WORDS: &[&str] = &[
        "type",
        "name",
        "description",
        "input_schema",
        "strict",
        "text",
        "image",
        "source",
        "base64",
        "url",
        "media_type",
        "data",
        "id",
        "input",
        "thinking",
        "signature",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "citations",
        "cache_control",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// This format's types fail with the kind and path the crate gave
        /// when it read serde_json's error messages.
        #[test]
        fn types_fail_with_the_kind_and_path_of_before(value in json_tree(WORDS)) {
            same_kind::<Tool>(&value);
            same_kind::<TextBlock>(&value);
            same_kind::<ImageBlock>(&value);
            same_kind::<ToolUseBlock>(&value);
            same_kind::<ThinkingBlock>(&value);
            same_kind::<RedactedThinkingBlock>(&value);
            same_kind::<ResponseUsage>(&value);
            same_kind::<StringOrArray<Value>>(&value);
        }

        /// A block struct built from an object's members, as an answer
        /// read straight is, is the one `decode` gives.
        #[test]
        fn blocks_built_from_members_are_the_decoded_ones(value in json_tree(WORDS)) {
            same_members::<TextBlock>(&value);
            same_members::<ImageBlock>(&value);
            same_members::<ToolUseBlock>(&value);
            same_members::<ThinkingBlock>(&value);
            same_members::<RedactedThinkingBlock>(&value);
        }

        /// The blocks of an answer are built from members whenever they
        /// decode (the objects here always hold the fields they need).
        #[test]
        fn blocks_that_decode_are_built_from_members(
            text in "[a-z]{0,3}",
            extras in json_tree(WORDS),
            signature in proptest::option::of("[a-z]{0,3}"),
        ) {
            use serde_json::json;
            let mut members = match extras {
                Value::Object(members) => members,
                _ => serde_json::Map::new(),
            };
            for key in ["text", "id", "name", "input", "thinking", "signature", "data"] {
                members.remove(key);
            }
            let with = |fields: Value| {
                let mut value = Value::Object(members.clone());
                for (key, field) in fields.as_object().into_iter().flatten() {
                    value[key] = field.clone();
                }
                value
            };
            let built = same_members::<TextBlock>(&with(json!({ "text": text })));
            prop_assert!(built, "TextBlock 1 not built");
            let built = same_members::<ToolUseBlock>(&with(
                json!({ "id": "t", "name": text, "input": { "a": [1] } })
            ));
            prop_assert!(built, "ToolUseBlock 2 not built");
            let built = same_members::<ThinkingBlock>(&with(
                json!({ "thinking": text, "signature": signature })
            ));
            prop_assert!(built, "ThinkingBlock 3 not built");
            let built = same_members::<RedactedThinkingBlock>(&with(json!({ "data": text })));
            prop_assert!(built, "RedactedThinkingBlock 4 not built");
        }
    }
}
