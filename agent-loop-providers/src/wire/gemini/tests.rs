use serde_json::{Value, json};

use super::*;
use crate::wire::stream::test_support::fixture;
use crate::wire::{DroppedKind, ToolDeclaration, WireErrorKind};
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, FinishReason, ImagePart, Message, ReasoningPart, ToolCall,
    ToolResult, WireFormat,
};
use agent_loop_core::tool::ToolInfo;

fn round_trip(conversation: &[Message]) {
    let exported = export_contents(conversation);
    let contents = Value::Array(exported.contents.clone());
    let parsed = parse_contents(&contents).unwrap();
    let again = export_contents(&parsed);
    assert_eq!(again.contents, exported.contents);
}

#[test]
fn a_call_without_id_parses_with_an_empty_id_and_its_signature_in_the_extras() {
    let response = parse_response(&fixture("gemini/gem_parallel_sig.response.json")).unwrap();
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    let calls: Vec<&ToolCall> = response.message.tool_calls().collect();
    assert_eq!(calls.len(), 3);
    assert!(calls.iter().all(|call| call.id.is_empty()));
    assert_eq!(calls[0].arguments, "{}");
    let signature = calls[0]
        .extras
        .fields_for(WireFormat::Gemini)
        .and_then(|fields| fields.get("thoughtSignature"))
        .and_then(Value::as_str)
        .unwrap();
    assert!(signature.starts_with("Es8FCswF"));
    assert!(calls[1].extras.is_empty() && calls[2].extras.is_empty());
    assert_eq!(response.usage.input_tokens, 83);
    assert_eq!(response.usage.output_tokens, 30 + 190);
    assert_eq!(response.usage.reasoning_tokens, 190);
}

#[test]
fn signatures_go_back_on_their_part_and_results_carry_the_call_name() {
    let response = parse_response(&fixture("gemini/gem_parallel_sig.response.json")).unwrap();
    let mut message = response.message;
    for (index, call) in message.tool_calls_mut().enumerate() {
        call.id = format!("call_{index}");
    }
    let conversation = vec![
        Message::user("go"),
        Message::Assistant(message),
        Message::Tool(ToolResult::ok("call_0", "cars")),
        Message::Tool(ToolResult::error("call_1", "no")),
        Message::Tool(ToolResult::ok("call_2", "penguins")),
    ];
    let exported = export_contents(&conversation);
    assert_eq!(exported.contents.len(), 3);
    let model = &exported.contents[1];
    assert_eq!(model["role"], "model");
    assert!(model["parts"][0]["thoughtSignature"].is_string());
    assert!(model["parts"][1].get("thoughtSignature").is_none());
    assert_eq!(model["parts"][0]["functionCall"]["id"], "call_0");
    let results = &exported.contents[2]["parts"];
    assert_eq!(results.as_array().unwrap().len(), 3);
    assert_eq!(
        results[1],
        json!({ "functionResponse": { "id": "call_1", "name": "generate_topic", "response": { "error": "no" } } })
    );
    round_trip(&conversation);
}

#[test]
fn a_call_without_id_is_answered_without_id() {
    let call = ToolCall::new("", "f", r#"{"a":1}"#);
    let conversation = vec![
        Message::user("go"),
        Message::tool_calls(None, vec![call]),
        Message::Tool(ToolResult::ok("", "done")),
    ];
    let exported = export_contents(&conversation);
    assert_eq!(
        exported.contents[1]["parts"][0],
        json!({
            "functionCall": { "name": "f", "args": { "a": 1 } },
            // Unsigned, the first call of the turn gets the stand-in.
            "thoughtSignature": "skip_thought_signature_validator"
        })
    );
    assert_eq!(
        exported.contents[2]["parts"][0],
        json!({ "functionResponse": { "name": "f", "response": { "output": "done" } } })
    );
}

#[test]
fn thought_parts_are_reasoning_and_text_signatures_stay_on_the_text() {
    let response = parse_response(&fixture("gemini/gem_thinking_parts.response.json")).unwrap();
    let content = &response.message.content;
    assert_eq!(content.len(), 2);
    let ContentPart::Reasoning(reasoning) = &content[0] else {
        panic!("{content:?}")
    };
    assert_eq!(reasoning.origin.format, WireFormat::Gemini);
    assert!(reasoning.signature.is_none());
    let ContentPart::Text(text) = &content[1] else {
        panic!("{content:?}")
    };
    assert!(text.extras.fields_for(WireFormat::Gemini).unwrap()["thoughtSignature"].is_string());
    assert_eq!(response.finish_reason, FinishReason::Stop);
    let exported = export_contents(&[Message::user("q"), Message::Assistant(response.message)]);
    assert_eq!(exported.contents[1]["parts"][0]["thought"], true);
    assert!(exported.contents[1]["parts"][1]["thoughtSignature"].is_string());
}

#[test]
fn snake_case_keys_are_read() {
    let contents = json!([
        { "role": "user", "parts": [{ "text": "hi" }] },
        { "role": "model", "parts": [{
            "function_call": { "name": "f", "args": {}, "id": "c1" },
            "thought_signature": "c2ln"
        }] },
        { "role": "user", "parts": [{
            "function_response": { "name": "f", "response": { "output": "x" }, "id": "c1" }
        }] },
        { "role": "user", "parts": [{ "inline_data": { "mime_type": "image/png", "data": "AAAA" } }] }
    ]);
    let conversation = parse_contents(&contents).unwrap();
    assert_eq!(conversation.len(), 4);
    let call = conversation[1]
        .as_assistant()
        .unwrap()
        .tool_calls()
        .next()
        .unwrap();
    assert_eq!(call.id, "c1");
    assert_eq!(
        call.extras.fields_for(WireFormat::Gemini).unwrap()["thoughtSignature"],
        "c2ln"
    );
    assert_eq!(conversation[2].as_tool_result().unwrap().text(), "x");
    let Message::User(user) = &conversation[3] else {
        panic!()
    };
    assert!(matches!(user.content[0], ContentPart::Image(_)));
    let exported = export_contents(&conversation);
    assert_eq!(exported.contents[1]["parts"][0]["thoughtSignature"], "c2ln");
    // The image joins the results' content, after them.
    assert!(exported.contents[2]["parts"][1]["inlineData"]["mimeType"].is_string());
}

#[test]
fn other_response_objects_are_kept_and_error_keys_fail() {
    let contents = json!([
        { "role": "model", "parts": [
            { "functionCall": { "name": "f", "args": {}, "id": "a" } },
            { "functionCall": { "name": "g", "args": {}, "id": "b" } }
        ] },
        { "role": "user", "parts": [
            { "functionResponse": { "name": "f", "id": "a", "response": { "return_value": "cars" } } },
            { "functionResponse": { "name": "g", "id": "b", "response": { "error": { "code": 1 } }, "willContinue": false } }
        ] }
    ]);
    let conversation = parse_contents(&contents).unwrap();
    let first = conversation[1].as_tool_result().unwrap();
    assert_eq!(first.text(), r#"{"return_value":"cars"}"#);
    assert!(!first.is_error);
    let second = conversation[2].as_tool_result().unwrap();
    assert!(second.is_error);
    let exported = export_contents(&conversation);
    // As parsed, but the first (unsigned) call carries the stand-in.
    let mut expected = contents.as_array().unwrap().clone();
    expected[0]["parts"][0]["thoughtSignature"] = json!("skip_thought_signature_validator");
    assert_eq!(exported.contents, expected);
    // Which parsing drops again.
    assert_eq!(
        parse_contents(&json!(exported.contents)).unwrap(),
        conversation
    );
}

/// Gemini 3 answers 400 "Function call is missing a thought_signature"
/// to the first call of a model turn without one: a call from another
/// provider gets the documented stand-in, a signed call keeps its own,
/// and a later parallel call gets none.
#[test]
fn the_first_unsigned_call_of_a_turn_gets_the_documented_stand_in() {
    let calls = vec![
        ToolCall::new("toolu_1", "f", "{}"),
        ToolCall::new("toolu_2", "g", "{}"),
    ];
    let conversation = vec![
        Message::user("go"),
        Message::tool_calls(Some("Calling.".into()), calls),
    ];
    let exported = export_contents(&conversation);
    let parts = &exported.contents[1]["parts"];
    assert_eq!(
        parts[1]["thoughtSignature"],
        "skip_thought_signature_validator"
    );
    assert!(parts[2].get("thoughtSignature").is_none(), "{parts}");
    assert!(
        parts[0].get("thoughtSignature").is_none(),
        "text stays as it was"
    );

    let signed = json!([{ "role": "model", "parts": [
        { "functionCall": { "name": "f", "args": {} }, "thoughtSignature": "c2ln" }
    ] }]);
    let exported = export_contents(&parse_contents(&signed).unwrap());
    assert_eq!(exported.contents[0]["parts"][0]["thoughtSignature"], "c2ln");
}

#[test]
fn blank_text_is_joined_and_blank_contents_left_out() {
    let contents = json!([
        { "role": "user", "parts": [{ "text": "" }] },
        { "role": "model", "parts": [{ "text": "A" }, { "text": "\n\n" }, { "text": "B" }] }
    ]);
    let conversation = parse_contents(&contents).unwrap();
    assert_eq!(conversation.len(), 1);
    assert_eq!(conversation[0].text(), "A\n\nB");
    assert!(export_contents(&[Message::user(" ")]).contents.is_empty());
}

#[test]
fn a_signed_blank_part_is_kept_whole() {
    let part = json!({ "text": "", "thoughtSignature": "c2ln" });
    let contents = json!([{ "role": "model", "parts": [{ "text": "A" }, part.clone()] }]);
    let conversation = parse_contents(&contents).unwrap();
    let content = &conversation[0].as_assistant().unwrap().content;
    assert!(matches!(&content[1], ContentPart::Provider(p) if p.value == part));
    assert_eq!(
        export_contents(&conversation).contents,
        contents.as_array().unwrap().clone()
    );
}

#[test]
fn other_formats_and_url_images_of_no_known_type_are_dropped_and_reported() {
    let mut assistant = AssistantMessage::with_tool_calls(
        Some("ok".into()),
        vec![ToolCall::new("toolu_1", "f", "{}")],
    );
    assistant.content.insert(
        0,
        ContentPart::Reasoning(
            ReasoningPart::new("plan", WireFormat::AnthropicMessages).signed("sig"),
        ),
    );
    let mut user = agent_loop_core::conversation::UserMessage::from_text("see");
    user.content
        .push(ContentPart::Image(ImagePart::url("https://x/y")));
    let conversation = vec![
        Message::User(user),
        Message::Assistant(assistant),
        Message::Tool(ToolResult::ok("toolu_1", "r")),
    ];
    let exported = export_contents(&conversation);
    let kinds: Vec<DroppedKind> = exported.dropped.iter().map(|d| d.kind).collect();
    assert_eq!(
        kinds,
        [
            DroppedKind::Image,
            DroppedKind::Reasoning {
                format: WireFormat::AnthropicMessages
            }
        ]
    );
    assert_eq!(exported.contents[0]["parts"].as_array().unwrap().len(), 1);
    assert_eq!(exported.contents[1]["parts"].as_array().unwrap().len(), 2);
}

#[test]
fn system_instruction_and_tools_parse_from_a_request() {
    let parsed = parse_request(&fixture("gemini/gem_retry_error.request.json")).unwrap();
    assert_eq!(
        parsed.conversation[0],
        Message::system("You are a helpful chatbot.")
    );
    let ToolDeclaration::Function(info) = &parsed.tools[0] else {
        panic!()
    };
    assert_eq!(info.name, "get_capital");
    assert_eq!(info.parameters["required"], json!(["country"]));
    let exported = export_contents(&parsed.conversation);
    assert_eq!(
        exported.system_instruction,
        Some(json!({ "parts": [{ "text": "You are a helpful chatbot." }] }))
    );
}

#[test]
fn openapi_parameters_are_lowered_and_other_tools_kept() {
    let tools = json!([
        { "functionDeclarations": [{ "name": "f", "description": null,
            "parameters": { "type": "OBJECT", "properties": { "a": { "type": "STRING" } } } }],
          "googleSearch": {} },
        { "codeExecution": {} }
    ]);
    let parsed = parse_tools(&tools).unwrap();
    assert_eq!(parsed.len(), 3);
    let info = parsed[0].as_function().unwrap();
    assert_eq!(info.description, "");
    assert_eq!(
        info.parameters,
        json!({ "type": "object", "properties": { "a": { "type": "string" } } })
    );
    assert_eq!(parsed[1].name(), "googleSearch");
    let exported = export_declarations(&parsed).unwrap();
    assert_eq!(
        exported,
        vec![
            json!({ "functionDeclarations": [{ "name": "f", "parametersJsonSchema": info.parameters }] }),
            json!({ "googleSearch": {} }),
            json!({ "codeExecution": {} }),
        ]
    );
    assert_eq!(parse_tools(&Value::Array(exported)).unwrap(), parsed);
    assert!(export_tools(&[] as &[ToolInfo]).is_empty());
}

/// Built-in tools before, between and after function tools come back in
/// their places: a request given back as it came.
#[test]
fn built_in_tools_keep_their_places_among_function_tools() {
    let declaration = |name: &str| json!({ "name": name, "parametersJsonSchema": { "type": "object", "properties": {} } });
    let tools = json!([
        { "googleSearch": {} },
        { "functionDeclarations": [declaration("a"), declaration("b")] },
        { "codeExecution": {} },
        { "functionDeclarations": [declaration("c")] },
        { "urlContext": {} }
    ]);
    let parsed = parse_tools(&tools).unwrap();
    let names: Vec<&str> = parsed.iter().map(ToolDeclaration::name).collect();
    assert_eq!(
        names,
        ["googleSearch", "a", "b", "codeExecution", "c", "urlContext"]
    );
    let exported = export_declarations(&parsed).unwrap();
    assert_eq!(Value::Array(exported.clone()), tools);
    assert_eq!(parse_tools(&Value::Array(exported)).unwrap(), parsed);
}

#[test]
fn finish_reasons_and_blocked_prompts() {
    let body = |reason: &str| json!({ "candidates": [{ "content": { "role": "model", "parts": [{ "text": "x" }] }, "finishReason": reason }] });
    let cases = [
        ("STOP", FinishReason::Stop),
        ("MAX_TOKENS", FinishReason::Length),
        ("SAFETY", FinishReason::ContentFilter),
        ("RECITATION", FinishReason::ContentFilter),
        (
            "MALFORMED_FUNCTION_CALL",
            FinishReason::Other("MALFORMED_FUNCTION_CALL".into()),
        ),
    ];
    for (reason, expected) in cases {
        assert_eq!(
            parse_response(&body(reason)).unwrap().finish_reason,
            expected
        );
    }
    let blocked =
        parse_response(&json!({ "promptFeedback": { "blockReason": "SAFETY" } })).unwrap();
    assert_eq!(blocked.finish_reason, FinishReason::ContentFilter);
    assert!(blocked.message.content.is_empty());
    let cut = parse_response(&fixture("gemini/gem_max_tokens.response.json")).unwrap();
    assert_eq!(cut.finish_reason, FinishReason::Length);
    let cached = parse_response(&fixture("gemini/gem_cached.response.json")).unwrap();
    assert_eq!(cached.usage.cache_read_tokens, 3512);
    assert_eq!(cached.usage.input_tokens, 3520);
    assert_eq!(cached.usage.output_tokens, 2 + 42);
}

#[test]
fn errors_are_typed_with_paths() {
    let error = parse_response(&json!({ "error": { "code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED" } })).unwrap_err();
    assert_eq!(
        error.kind,
        WireErrorKind::Provider {
            error_type: "RESOURCE_EXHAUSTED".into(),
            message: "slow down".into()
        }
    );
    let error = parse_response(&json!({})).unwrap_err();
    assert!(matches!(error.kind, WireErrorKind::MissingField { .. }));
    let error = parse_contents(
        &json!([{ "role": "model", "parts": [{ "functionCall": { "args": {} } }] }]),
    )
    .unwrap_err();
    assert_eq!(error.path, "contents[0].parts[0].functionCall");
    let error = parse_contents(&json!([{ "role": "system", "parts": [] }])).unwrap_err();
    assert!(matches!(error.kind, WireErrorKind::UnknownRole { .. }));
    let error = parse_contents(
        &json!([{ "role": "model", "parts": [{ "functionCall": { "name": "f", "args": [1] } }] }]),
    )
    .unwrap_err();
    assert!(
        matches!(error.kind, WireErrorKind::WrongType { .. }),
        "{error}"
    );
    let error = parse_request(&json!({ "tools": [] })).unwrap_err();
    assert_eq!(error.path, "request");
}

#[test]
fn deep_values_are_refused_at_the_root() {
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let error = parse_contents(&deep).unwrap_err();
    assert_eq!(
        (error.path.as_str(), &error.kind),
        ("contents", &WireErrorKind::TooDeep)
    );
}

#[test]
fn raw_arguments_go_out_wrapped_and_come_back() {
    let conversation = vec![
        Message::user("go"),
        Message::tool_calls(None, vec![ToolCall::new("c", "f", "{not json")]),
        Message::Tool(ToolResult::error("c", "bad arguments")),
    ];
    let exported = export_contents(&conversation);
    assert_eq!(
        exported.contents[1]["parts"][0]["functionCall"]["args"],
        json!({ "_raw_arguments": "{not json" })
    );
    let parsed = parse_contents(&Value::Array(exported.contents)).unwrap();
    assert_eq!(parsed, conversation);
}

#[test]
fn images_in_results_go_as_function_response_parts() {
    let result = ToolResult::with_content(
        "c",
        vec![
            ContentPart::text("a chart"),
            ContentPart::Image(ImagePart::base64("image/png", "AAAA")),
        ],
        false,
    );
    let conversation = vec![
        Message::user("go"),
        Message::tool_calls(None, vec![ToolCall::new("c", "chart", "{}")]),
        Message::Tool(result),
    ];
    let exported = export_contents(&conversation);
    assert_eq!(
        exported.contents[2]["parts"][0]["functionResponse"]["parts"],
        json!([{ "inlineData": { "mimeType": "image/png", "data": "AAAA" } }])
    );
    let parsed = parse_contents(&Value::Array(exported.contents)).unwrap();
    assert_eq!(parsed, conversation);
}

#[test]
fn recorded_requests_round_trip() {
    for name in [
        "gem_parallel_sig.followup_request",
        "gem_thinking_parts.followup_request",
        "gem_retry_error.followup_request",
        "gem_stream_array.followup_request",
        "gem_sse_sig.followup_request",
    ] {
        let parsed = parse_request(&fixture(&format!("gemini/{name}.json"))).unwrap();
        round_trip(&parsed.conversation);
        let exported = export_contents(&parsed.conversation);
        let again = parse_contents(&Value::Array(exported.contents)).unwrap();
        let system: Vec<Message> = parsed
            .conversation
            .iter()
            .filter(|m| matches!(m, Message::System(_)))
            .cloned()
            .collect();
        let rest: Vec<Message> = parsed
            .conversation
            .into_iter()
            .filter(|m| !matches!(m, Message::System(_)))
            .collect();
        assert_eq!(again, rest, "{name}");
        let _ = system;
    }
}

/// A signature is bytes (base64 text in JSON): a call's `thoughtSignature`
/// of another JSON type is refused with its path, `null` is none, and
/// the snake_case spelling is read as the camelCase one.
#[test]
fn a_call_signature_that_is_no_string_is_refused() {
    let contents = |signature: Value| {
        json!([{ "role": "model", "parts": [
            { "functionCall": { "name": "f", "args": {} }, "thought_signature": signature }
        ] }])
    };
    let error = parse_contents(&contents(json!(7))).unwrap_err();
    assert_eq!(error.path, "contents[0].parts[0]");
    assert_eq!(
        error.kind,
        WireErrorKind::WrongType {
            field: "thoughtSignature".into(),
            expected: "a string".into(),
            found: "a number".into(),
        }
    );
    let parsed = parse_contents(&contents(json!(null))).unwrap();
    let Message::Assistant(model) = &parsed[0] else {
        panic!("{parsed:?}")
    };
    let call = model.tool_calls().next().unwrap();
    assert!(call.extras.is_empty(), "{:?}", call.extras);
    let parsed = parse_contents(&contents(json!("c2ln"))).unwrap();
    let Message::Assistant(model) = &parsed[0] else {
        panic!("{parsed:?}")
    };
    let call = model.tool_calls().next().unwrap();
    assert_eq!(
        call.extras.fields_for(WireFormat::Gemini).unwrap()["thoughtSignature"],
        "c2ln"
    );
}

/// A web image goes out as `fileData`, its required `mimeType` told by its
/// path's extension as the Gemini SDK tells it (the query of a signed URL
/// aside), and comes back as the same image; a URL whose type cannot be
/// told, or that is not HTTP(S), is left out and reported; a `fileData`
/// of another kind stays a provider part.
#[test]
fn web_images_go_out_as_file_data_and_come_back() {
    let signed = "https://bucket.s3.amazonaws.com/cats/Tabby.JPG?X-Amz-Signature=ab%2Fc#top";
    let mut user = agent_loop_core::conversation::UserMessage::from_text("see");
    for url in [
        signed,
        "https://x/y.webp",
        "https://x/y.gif",
        "ftp://x/y.png",
        "https://x/png",
    ] {
        user.content.push(ContentPart::Image(ImagePart::url(url)));
    }
    let conversation = vec![Message::User(user)];
    let exported = export_contents(&conversation);
    assert_eq!(
        exported.contents[0]["parts"],
        json!([
            { "text": "see" },
            { "fileData": { "mimeType": "image/jpeg", "fileUri": signed } },
            { "fileData": { "mimeType": "image/webp", "fileUri": "https://x/y.webp" } },
        ])
    );
    let kinds: Vec<DroppedKind> = exported.dropped.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, [DroppedKind::Image; 3]);

    let parsed = parse_contents(&Value::Array(exported.contents.clone())).unwrap();
    let Message::User(back) = &parsed[0] else {
        panic!("{parsed:?}");
    };
    assert_eq!(
        back.content[1..],
        [
            ContentPart::Image(ImagePart::url(signed)),
            ContentPart::Image(ImagePart::url("https://x/y.webp")),
        ]
    );
    assert_eq!(export_contents(&parsed).contents, exported.contents);

    // A video, a `gs://` file, a type its path does not say: kept whole.
    for file in [
        json!({ "mimeType": "video/mp4", "fileUri": "https://x/v.mp4" }),
        json!({ "mimeType": "image/png", "fileUri": "gs://bucket/y.png" }),
        json!({ "mimeType": "image/png", "fileUri": "https://x/y.jpg" }),
    ] {
        let contents = json!([{ "role": "user", "parts": [{ "fileData": file }] }]);
        let parsed = parse_contents(&contents).unwrap();
        let Message::User(user) = &parsed[0] else {
            panic!("{parsed:?}");
        };
        assert!(
            matches!(user.content[0], ContentPart::Provider(_)),
            "{file}"
        );
    }
}
