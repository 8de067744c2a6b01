use serde_json::{Map, Value, json};

use super::*;
use crate::wire::stream::test_support::fixture;
use crate::wire::{DroppedKind, RAW_ARGUMENTS_KEY, ToolDeclaration, WireErrorKind};
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, FinishReason, ImagePart, Message, ReasoningPart, ToolCall,
    ToolResult, WireFormat,
};
use agent_loop_core::tool::ToolInfo;

const FOLDER: &str = "openai-responses";

fn recorded(name: &str) -> Value {
    fixture(&format!("{FOLDER}/{name}"))
}

/// Every recorded JSON file of the folder whose name ends with `suffix`.
fn recordings(suffix: &str) -> Vec<(String, Value)> {
    let dir = format!(
        "{}/../tests/fixtures/wire-real/{FOLDER}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(suffix))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let value = recorded(&name);
            (name, value)
        })
        .collect()
}

fn input(conversation: &[Message]) -> Value {
    Value::Array(export_messages(conversation).input)
}

fn assistant(response: &agent_loop_core::conversation::ModelResponse) -> &AssistantMessage {
    &response.message
}

#[test]
fn a_reasoning_response_is_one_message_reasoning_first_with_its_ids() {
    let response = parse_response(&recorded("resp_reasoning_plan.response.json")).unwrap();
    let message = assistant(&response);
    let [
        ContentPart::Reasoning(reasoning),
        ContentPart::ToolCall(call),
    ] = message.content.as_slice()
    else {
        panic!("{message:?}");
    };
    assert_eq!(reasoning.origin.format, WireFormat::OpenAiResponses);
    assert!(reasoning.text.starts_with("**Creating a structured poem**"));
    assert_eq!(
        reasoning.text.matches("\n\n**").count(),
        4,
        "five parts joined"
    );
    assert!(reasoning.redacted.as_deref().unwrap().starts_with("gAAAA"));
    let extras = reasoning.extras.fields();
    assert!(extras["id"].as_str().unwrap().starts_with("rs_"));
    assert_eq!(extras["summary"].as_array().unwrap().len(), 5);
    assert!(call.id.starts_with("call_"));
    assert_eq!(call.name, "update_plan");
    assert!(
        call.extras.fields()["id"]
            .as_str()
            .unwrap()
            .starts_with("fc_")
    );
    assert_eq!(call.extras.fields()["status"], "completed");
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage.reasoning_tokens, 1792);
    assert_eq!(response.usage.output_tokens, 1926);
    assert!(
        message.extras.fields()[RESPONSE_ID_KEY]
            .as_str()
            .unwrap()
            .starts_with("resp_")
    );
}

#[test]
fn encrypted_reasoning_goes_back_right_before_its_call() {
    let request = recorded("resp_store_false.request.json");
    let response = parse_response(&recorded("resp_store_false.response.json")).unwrap();
    let mut conversation = parse_request(&request).unwrap().conversation;
    let call_id = response.message.tool_calls().next().unwrap().id.clone();
    conversation.push(Message::Assistant(response.message));
    conversation.push(Message::tool_result(ToolResult::ok(&call_id, "123124")));
    let exported = export_messages(&conversation);
    assert!(exported.dropped.is_empty(), "{:?}", exported.dropped);
    let items = &exported.input;
    assert_eq!(items[1]["type"], "reasoning");
    assert!(
        items[1]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAA")
    );
    assert_eq!(items[1]["summary"], json!([]));
    assert_eq!(items[2]["type"], "function_call");
    assert_eq!(items[2]["call_id"], call_id.as_str());
    assert!(items[2]["id"].as_str().unwrap().starts_with("fc_"));
    assert_eq!(items[3]["type"], "function_call_output");
    assert_eq!(items[3]["call_id"], call_id.as_str());
    assert_eq!(items[3]["output"], "123124");
}

#[test]
fn item_ids_are_kept_only_with_reasoning() {
    // gpt-4o: no reasoning, so the `fc_` id is not kept.
    let response = parse_response(&recorded("resp_json_schema.response.json")).unwrap();
    let call = response.message.tool_calls().next().unwrap();
    assert!(call.extras.fields().get("id").is_none(), "{call:?}");
    // A message whose reasoning cannot go (no id) goes without item ids.
    let mut reasoning = ReasoningPart::new("plan", WireFormat::OpenAiResponses);
    reasoning.redacted = Some("gAAA".into());
    let mut call = ToolCall::new("call_1", "f", "{}");
    call.extras = agent_loop_core::conversation::Extras::new(
        WireFormat::OpenAiResponses,
        Map::from_iter([("id".to_owned(), json!("fc_1"))]),
    );
    let message = AssistantMessage::new(vec![
        ContentPart::Reasoning(reasoning),
        ContentPart::ToolCall(call),
    ]);
    let conversation = [
        Message::Assistant(message),
        Message::tool_result(ToolResult::ok("call_1", "ok")),
    ];
    let exported = export_messages(&conversation);
    assert_eq!(
        Value::Array(exported.input),
        json!([
            { "type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}" },
            { "type": "function_call_output", "call_id": "call_1", "output": "ok" }
        ])
    );
    assert_eq!(
        exported.dropped[0].kind,
        DroppedKind::Reasoning {
            format: WireFormat::OpenAiResponses
        }
    );
}

#[test]
fn trailing_reasoning_is_left_out_and_reported() {
    let response = parse_response(&json!({
        "object": "response",
        "status": "incomplete",
        "incomplete_details": { "reason": "max_output_tokens" },
        "output": [{ "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e" }]
    }))
    .unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    let conversation = [Message::user("hi"), Message::Assistant(response.message)];
    let exported = export_messages(&conversation);
    assert_eq!(exported.input.len(), 1);
    assert_eq!(
        (exported.dropped[0].message, exported.dropped[0].part),
        (1, Some(0))
    );
}

/// OpenAI sometimes answers two reasoning items in a row, and refuses them
/// sent back so ("Item 'rs_…' of type 'reasoning' was provided without
/// its required following item"): the last of the run goes, right before
/// its item, and the earlier one is left out and reported.
#[test]
fn of_two_reasoning_items_in_a_row_the_last_goes_back() {
    let response = parse_response(&json!({
        "object": "response",
        "status": "completed",
        "output": [
            { "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e1" },
            { "type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "e2" },
            { "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}" }
        ]
    }))
    .unwrap();
    let conversation = [
        Message::user("hi"),
        Message::Assistant(response.message),
        Message::tool_result(ToolResult::ok("call_1", "ok")),
    ];
    let exported = export_messages(&conversation);
    let kinds: Vec<(&str, &str)> = exported
        .input
        .iter()
        .map(|item| {
            (
                item["type"].as_str().unwrap_or("message"),
                item["id"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("message", ""),
            ("reasoning", "rs_2"),
            ("function_call", "fc_1"),
            ("function_call_output", "")
        ]
    );
    assert_eq!(exported.dropped.len(), 1);
    assert_eq!(
        (exported.dropped[0].message, exported.dropped[0].part),
        (1, Some(0))
    );
}

#[test]
fn statuses_map_to_finish_reasons() {
    let reason = |status: &str, details: Value| {
        parse_response(&json!({
            "object": "response", "status": status, "incomplete_details": details,
            "output": [{ "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "x", "annotations": [] }] }]
        }))
        .unwrap()
        .finish_reason
    };
    assert_eq!(reason("completed", Value::Null), FinishReason::Stop);
    assert_eq!(
        reason("incomplete", json!({ "reason": "max_output_tokens" })),
        FinishReason::Length
    );
    assert_eq!(
        reason("incomplete", json!({ "reason": "content_filter" })),
        FinishReason::ContentFilter
    );
    assert_eq!(
        reason("cancelled", Value::Null),
        FinishReason::Other("cancelled".into())
    );
    let refused = parse_response(&json!({
        "object": "response", "status": "completed",
        "output": [{ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{ "type": "refusal", "refusal": "No." }] }]
    }))
    .unwrap();
    assert_eq!(refused.finish_reason, FinishReason::Refusal);
    assert!(matches!(
        refused.message.content[0],
        ContentPart::Provider(_)
    ));
}

#[test]
fn recorded_incomplete_text_is_length_with_its_usage() {
    let response = parse_response(&recorded("resp_incomplete_text.response.json")).unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert!(response.message.text().starts_with("### The Maple Tree"));
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (17, 16)
    );
}

#[test]
fn web_search_items_are_kept_and_annotations_stay_on_their_text() {
    let response = parse_response(&recorded("resp_web_search_annotations.response.json")).unwrap();
    let [ContentPart::Provider(search), ContentPart::Text(text)] =
        response.message.content.as_slice()
    else {
        panic!("{:?}", response.message);
    };
    assert_eq!(search.value["type"], "web_search_call");
    assert_eq!(
        text.extras.fields()["annotations"][0]["type"],
        "url_citation"
    );
    // No reasoning in the output: the message id is not kept.
    assert!(text.extras.fields()["item"].get("id").is_none());
    assert_eq!(response.finish_reason, FinishReason::Stop);
}

#[test]
fn a_failed_response_is_the_providers_error() {
    let error = parse_response(&json!({
        "object": "response", "status": "failed", "output": [],
        "error": { "code": "server_error", "message": "boom" }
    }))
    .unwrap_err();
    assert_eq!(error.path, "response.error");
    assert_eq!(
        error.kind,
        WireErrorKind::Provider {
            error_type: "server_error".into(),
            message: "boom".into()
        }
    );
    let error = parse_response(&json!({ "object": "chat.completion", "output": [] })).unwrap_err();
    assert!(matches!(error.kind, WireErrorKind::UnknownType { .. }));
    let error = parse_response(&json!({ "object": "response" })).unwrap_err();
    assert_eq!(
        error.kind,
        WireErrorKind::MissingField {
            field: "output".into()
        }
    );
}

#[test]
fn bad_items_name_their_path() {
    let error = parse_messages(&json!([
        { "role": "user", "content": "hi" },
        { "type": "function_call", "call_id": "c", "arguments": "{}" }
    ]))
    .unwrap_err();
    assert_eq!(error.path, "input[1]");
    assert_eq!(
        error.kind,
        WireErrorKind::MissingField {
            field: "name".into()
        }
    );
    let error = parse_messages(&json!([{ "role": "tool", "content": "x" }])).unwrap_err();
    assert_eq!(
        error.kind,
        WireErrorKind::UnknownRole {
            role: "tool".into()
        }
    );
    let error = parse_messages(&json!([{ "role": "user", "content": [{ "type": "input_text" }] }]))
        .unwrap_err();
    assert_eq!(error.path, "input[0].content[0]");
    let error =
        parse_response(&json!({ "output": [{ "type": "reasoning", "summary": 3 }] })).unwrap_err();
    assert_eq!(error.path, "response.output[0].summary");
}

#[test]
fn too_deep_values_are_refused_at_the_root() {
    let mut deep = json!("x");
    for _ in 0..200 {
        deep = json!([deep]);
    }
    for (error, root) in [
        (parse_messages(&deep).unwrap_err(), "input"),
        (parse_response(&deep).unwrap_err(), "response"),
        (parse_tools(&deep).unwrap_err(), "tools"),
        (parse_request(&deep).unwrap_err(), "request"),
    ] {
        assert_eq!(
            (error.kind, error.path.as_str()),
            (WireErrorKind::TooDeep, root)
        );
    }
}

/// parse → export → parse is the identity, export → parse → export the
/// same JSON, for every recorded request and follow-up.
#[test]
fn recorded_inputs_round_trip() {
    let mut seen = 0;
    for suffix in [".request.json", ".followup_request.json"] {
        for (name, body) in recordings(suffix) {
            let Some(items) = body.get("input") else {
                continue;
            };
            let parsed = parse_messages(items).unwrap_or_else(|e| panic!("{name}: {e}"));
            let exported = input(&parsed);
            let again = parse_messages(&exported).unwrap();
            assert_eq!(again, parsed, "{name}");
            assert_eq!(input(&again), exported, "{name}");
            seen += 1;
        }
    }
    assert!(seen >= 10, "{seen}");
}

#[test]
fn recorded_responses_round_trip_through_input() {
    for (name, body) in recordings(".response.json") {
        let response = parse_response(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
        let conversation = vec![Message::user("q"), Message::Assistant(response.message)];
        let exported = input(&conversation);
        let parsed = parse_messages(&exported).unwrap();
        let Message::Assistant(original) = &conversation[1] else {
            unreachable!()
        };
        let Message::Assistant(back) = &parsed[1] else {
            panic!("{name}: {parsed:?}")
        };
        // Without reasoning, a message goes without its `id`, as an input
        // message whose text is one string: the text comes back, its part
        // fields (annotations, logprobs) and the item's `status` do not.
        let reasons = original
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::Reasoning(_)));
        if !reasons {
            assert_eq!(
                texts_and_calls(&back.content),
                texts_and_calls(&original.content),
                "{name}"
            );
        } else {
            assert_eq!(back.content, original.content, "{name}");
        }
        assert_eq!(input(&parsed), exported, "{name}");
    }
}

/// The text of each text part and each call, in order.
fn texts_and_calls(content: &[ContentPart]) -> Vec<String> {
    content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => Some(text.text.clone()),
            ContentPart::ToolCall(call) => Some(format!("{}({})", call.name, call.arguments)),
            _ => None,
        })
        .collect()
}

/// An assistant message sent without its `id` is an input message whose
/// content is one string, with no `status`: the published schema requires
/// `id` and `status` of an output message (`OutputMessage`), and a
/// spec-validating server (vLLM; openai/codex #12669) refuses one without.
/// One sent with its `id` (after its reasoning) keeps its parts.
#[test]
fn an_assistant_message_without_its_id_goes_as_one_string() {
    let body = fixture("openai-responses/resp_incomplete_text.response.json");
    let response = parse_response(&body).unwrap();
    let conversation = vec![
        Message::user("q"),
        Message::Assistant(response.message),
        Message::user("go on"),
    ];
    let exported = input(&conversation);
    let assistant = &exported[1];
    assert_eq!(assistant["role"], "assistant");
    assert!(
        assistant.get("id").is_none() && assistant.get("status").is_none(),
        "{assistant}"
    );
    assert_eq!(
        assistant["content"], body["output"][0]["content"][0]["text"],
        "{assistant}"
    );
    let violations = parts_without_their_id(&exported);
    assert!(violations.is_empty(), "{violations:?}");

    // After its reasoning, a message goes with its `id` and its parts.
    let response = parse_response(&json!({
        "object": "response",
        "status": "completed",
        "output": [
            { "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e" },
            { "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
              "content": [{ "type": "output_text", "text": "Hi.", "annotations": [] }] }
        ]
    }))
    .unwrap();
    let exported = input(&[Message::user("q"), Message::Assistant(response.message)]);
    assert_eq!(exported[2]["id"], "msg_1", "{exported}");
    assert_eq!(exported[2]["status"], "completed");
    assert_eq!(
        exported[2]["content"],
        json!([{ "type": "output_text", "text": "Hi.", "annotations": [] }])
    );
}

/// The rule of `agent-loop-test`'s `responses_violations` this test is
/// about, restated here (the providers crate does not depend on it).
fn parts_without_their_id(input: &Value) -> Vec<String> {
    input
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, item)| item["role"] == "assistant" && item["content"].is_array())
        .filter(|(_, item)| !item["id"].is_string() || !item["status"].is_string())
        .map(|(index, _)| format!("input[{index}]: parts without id and status"))
        .collect()
}

#[test]
fn recorded_tools_bind_and_round_trip() {
    for (name, body) in recordings(".request.json") {
        let Some(tools) = body.get("tools") else {
            continue;
        };
        let parsed = parse_tools(tools).unwrap_or_else(|e| panic!("{name}: {e}"));
        let exported = export_declarations(&parsed).unwrap();
        for tool in &exported {
            if tool["type"] == "function" {
                assert!(tool["strict"].is_boolean(), "{name}: {tool}");
            }
        }
        assert_eq!(
            parse_tools(&Value::Array(exported)).unwrap(),
            parsed,
            "{name}"
        );
    }
}

#[test]
fn strict_is_always_written_and_missing_means_true() {
    let parsed = parse_tools(&json!([
        { "type": "function", "name": "a", "parameters": { "type": "object" } },
        { "type": "function", "name": "b", "parameters": { "type": "object" }, "strict": false, "description": null },
        { "type": "web_search", "search_context_size": "medium" },
        { "type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp" }
    ]))
    .unwrap();
    assert_eq!(parsed[0].as_function().unwrap().strict, Some(true));
    assert_eq!(parsed[1].as_function().unwrap().strict, Some(false));
    let ToolDeclaration::Provider(search) = &parsed[2] else {
        panic!()
    };
    assert_eq!(search.tool_type, "web_search");
    assert_eq!(parsed[3].name(), "deepwiki");
    let unset = ToolInfo::new("c", "", json!({ "type": "object" }));
    assert_eq!(
        export_tools(&[unset])[0],
        // With the empty `properties` OpenAI requires (`wire::tool_schema`).
        json!({ "type": "function", "name": "c", "parameters": { "type": "object", "properties": {} }, "strict": false })
    );
    // Another format's provider tool cannot be sent.
    let anthropic = crate::wire::anthropic::parse_tools(
        &json!([{ "type": "memory_20250818", "name": "memory" }]),
    )
    .unwrap();
    assert!(matches!(
        export_declarations(&anthropic).unwrap_err().kind,
        WireErrorKind::ProviderTool { .. }
    ));
}

#[test]
fn user_images_and_tool_outputs_with_images() {
    let conversation = vec![
        Message::User(agent_loop_core::conversation::UserMessage::new(vec![
            ContentPart::text("What is this?"),
            ContentPart::Image(ImagePart::base64("image/png", "iVBO")),
        ])),
        Message::tool_calls(None, vec![ToolCall::new("call_1", "shot", "")]),
        Message::tool_result(ToolResult::with_content(
            "call_1",
            vec![
                ContentPart::text("screen"),
                ContentPart::Image(ImagePart::url("https://x/y.png")),
            ],
            false,
        )),
    ];
    let exported = input(&conversation);
    assert_eq!(
        exported,
        json!([
            { "role": "user", "content": [
                { "type": "input_text", "text": "What is this?" },
                { "type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "auto" }
            ] },
            { "type": "function_call", "call_id": "call_1", "name": "shot", "arguments": "{}" },
            { "type": "function_call_output", "call_id": "call_1", "output": [
                { "type": "input_text", "text": "screen" },
                { "type": "input_image", "image_url": "https://x/y.png", "detail": "auto" }
            ] }
        ])
    );
    let mut back = parse_messages(&exported).unwrap();
    // Blank arguments went out as `{}`, as they ran.
    if let Message::Assistant(message) = &mut back[1] {
        message
            .tool_calls_mut()
            .for_each(|call| call.arguments = String::new());
    }
    assert_eq!(back, conversation);
}

#[test]
fn non_object_arguments_are_wrapped_and_restored_from_history() {
    for raw in [r#"{"x":48151"#, "[1]"] {
        let conversation = [Message::tool_calls(
            None,
            vec![ToolCall::new("c", "f", raw)],
        )];
        let exported = input(&conversation);
        let text = exported[0]["arguments"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(text).unwrap(),
            json!({ RAW_ARGUMENTS_KEY: raw })
        );
        let back = parse_messages(&exported).unwrap();
        assert_eq!(
            back[0]
                .as_assistant()
                .unwrap()
                .tool_calls()
                .next()
                .unwrap()
                .arguments,
            raw
        );
    }
}

#[test]
fn a_thinking_conversation_from_anthropic_reports_its_signed_thinking() {
    let response =
        crate::wire::anthropic::parse_response(&fixture("anthropic/ant_thinking.response.json"))
            .unwrap();
    let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
    let mut conversation = vec![Message::user("go"), Message::Assistant(response.message)];
    for call in &calls {
        conversation.push(Message::tool_result(ToolResult::ok(&call.id, "done")));
    }
    let exported = export_messages(&conversation);
    assert!(exported.dropped.iter().any(|d| d.kind
        == DroppedKind::Reasoning {
            format: WireFormat::AnthropicMessages
        }));
    assert!(
        exported
            .input
            .iter()
            .all(|item| item["type"] != "reasoning")
    );
    let ids: Vec<&str> = exported
        .input
        .iter()
        .filter(|item| item["type"] == "function_call")
        .map(|item| item["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), calls.len());
}

#[test]
fn system_messages_and_instructions() {
    let parsed = parse_request(&json!({
        "instructions": "Be brief.",
        "input": [
            { "role": "developer", "content": "Use tools." },
            { "type": "message", "role": "user", "content": [{ "type": "input_text", "text": "hi" }] }
        ]
    }))
    .unwrap();
    assert_eq!(parsed.conversation[0], Message::system("Be brief."));
    let Message::System(developer) = &parsed.conversation[1] else {
        panic!()
    };
    assert_eq!(
        developer.system_role,
        agent_loop_core::conversation::SystemRole::Developer
    );
    assert_eq!(parsed.conversation[2].text(), "hi");
    assert_eq!(
        input(&parsed.conversation[1..]),
        json!([
            { "role": "developer", "content": "Use tools." },
            { "type": "message", "role": "user", "content": "hi" }
        ])
    );
}

/// A system message's parts: `input_text` only → its text; other input
/// content rides along as the export writes it; a part of a type input
/// content does not have (Chat Completions' `text`, found in a recorded
/// request) is refused, not sent back to a model that refuses it.
#[test]
fn system_message_parts() {
    let parsed = parse_messages(&json!([{
        "role": "system",
        "content": [
            { "type": "input_text", "text": "Be " },
            { "type": "input_text", "text": "brief." }
        ]
    }]))
    .unwrap();
    assert_eq!(parsed, vec![Message::system("Be brief.")]);

    let with_image = json!([{
        "role": "system",
        "content": [
            { "type": "input_text", "text": "Match this logo." },
            { "type": "input_text", "text": " " },
            { "type": "input_image", "image_url": "https://example.com/logo.png" }
        ]
    }]);
    let parsed = parse_messages(&with_image).unwrap();
    assert_eq!(parsed[0].text(), "Match this logo. ");
    assert_eq!(
        input(&parsed),
        json!([{
            "role": "system",
            "content": [
                { "type": "input_text", "text": "Match this logo. " },
                { "type": "input_image", "image_url": "https://example.com/logo.png", "detail": "auto" }
            ]
        }])
    );

    for (part, kind) in [
        (
            json!({ "type": "text", "text": "Be brief." }),
            "unsupported `type` `text`",
        ),
        (json!(null), "is null, expected an object"),
    ] {
        let error = parse_messages(&json!([{ "role": "system", "content": [part] }])).unwrap_err();
        assert_eq!(error.path, "input[0].content[0]", "{error}");
        assert!(error.to_string().contains(kind), "{error}");
    }
}
