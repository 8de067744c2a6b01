//! One test per provider quirk that broke real round trips, on recorded
//! payloads where one exists (`tests/fixtures/wire-real/`) and on the shapes
//! of public bug reports otherwise. Each export is checked against the
//! providers' documented rules (`wire_rules`).

use agent_loop::conversation::{
    AssistantMessage, ContentPart, FinishReason, ImagePart, Message, ModelResponse, ToolCall,
    ToolResult, UserMessage, WireFormat,
};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::wire::{ToolDeclaration, WireErrorKind, anthropic, openai};
use agent_loop::{Bindings, LoopId, SessionId};
use agent_loop::{Bound, Definition};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn fixture(path: &str) -> Value {
    let full = format!(
        "{}/tests/fixtures/wire-real/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{full}: {e}"))
}

async fn session(names: &[&str]) -> Definition<Bound> {
    let tools = names.iter().map(|name| {
        tool::Definition::from_fn(
            ToolInfo::new(*name, "", json!({ "type": "object" })),
            |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
        )
    });
    Definition::builder()
        .name("quirks")
        .tools(tools)
        .build()
        .validate()
        .expect("valid")
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .expect("binds")
}

async fn run(
    session: &Definition<Bound>,
    response: ModelResponse,
    conversation: &mut Vec<Message>,
) {
    let model = ScriptedModel::new([response, ModelResponse::answer("Done.")]);
    session
        .run_turn(&model, conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");
}

fn openai_messages(conversation: &[Message]) -> Value {
    serde_json::to_value(openai::export_messages(conversation).messages).expect("serialises")
}

fn anthropic_messages(conversation: &[Message]) -> Value {
    serde_json::to_value(anthropic::export_messages(conversation).messages).expect("serialises")
}

fn assert_rules(conversation: &[Message]) {
    let violations = crate::wire_rules::export_violations(conversation);
    assert!(violations.is_empty(), "{violations:#?}");
}

#[tokio::test]
async fn anthropic_thinking_follow_up_sends_the_signed_block_first() {
    let response =
        anthropic::parse_response(&fixture("anthropic/ant_thinking.response.json")).unwrap();
    let session = session(&["get_user_country"]).await;
    let mut conversation = vec![Message::user(
        "What is the largest city in the user country?",
    )];
    run(&session, response, &mut conversation).await;
    let exported = anthropic_messages(&conversation);
    let assistant = &exported[1];
    assert_eq!(assistant["content"][0]["type"], "thinking");
    let recorded = fixture("anthropic/ant_thinking.followup_request.json");
    assert_eq!(
        assistant["content"][0]["signature"],
        recorded["messages"][1]["content"][0]["signature"]
    );
    assert_eq!(
        assistant["content"][0]["thinking"],
        recorded["messages"][1]["content"][0]["thinking"]
    );
    // Not to OpenAI: a signature is meaningless there.
    assert!(
        openai_messages(&conversation)[1]
            .get("reasoning_content")
            .is_none()
    );
    assert_rules(&conversation);
}

#[tokio::test]
async fn deepseek_follow_up_carries_reasoning_content() {
    let body = fixture("openai/oai_deepseek_thinking.response.json");
    let response = openai::parse_response(&body).unwrap();
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage.reasoning_tokens, 26);
    let session = session(&["get_player_name", "roll_dice"]).await;
    let mut conversation = vec![Message::user("My guess is 4")];
    run(&session, response, &mut conversation).await;
    let exported = openai_messages(&conversation);
    assert_eq!(
        exported[1]["reasoning_content"],
        body["choices"][0]["message"]["reasoning_content"]
    );
    assert_eq!(
        exported[1]["content"],
        "Let me get your name and roll the die!"
    );
    assert_eq!(exported[1]["tool_calls"].as_array().map(Vec::len), Some(2));
    // Anthropic cannot take unsigned reasoning.
    assert!(
        !anthropic_messages(&conversation)[1]
            .to_string()
            .contains("reasoning")
    );
    assert_rules(&conversation);
}

#[tokio::test]
async fn a_max_tokens_response_runs_no_tool() {
    // `stop_reason: "max_tokens"` with a `tool_use` whose input was cut.
    let body = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            { "type": "text", "text": "I'll write the file." },
            { "type": "tool_use", "id": "toolu_01", "name": "write_file",
              "input": { "file_path": "/tmp/report.md" } }
        ],
        "stop_reason": "max_tokens", "stop_sequence": null,
        "usage": { "input_tokens": 100, "output_tokens": 4096 }
    });
    let response = anthropic::parse_response(&body).unwrap();
    assert_eq!(response.finish_reason, FinishReason::Length);
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&written);
    let write_file = tool::Definition::from_fn(
        ToolInfo::new("write_file", "Writes a file.", json!({ "type": "object" })),
        move |_arguments: Value, _context| {
            let counter = std::sync::Arc::clone(&counter);
            async move {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok::<_, BoxError>(json!("written"))
            }
        },
    );
    let session = Definition::builder()
        .name("cut")
        .tool(write_file)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    let mut conversation = vec![Message::user("Write the report.")];
    run(&session, response, &mut conversation).await;
    assert_eq!(written.load(std::sync::atomic::Ordering::SeqCst), 0);
    let result = conversation[2].as_tool_result().expect("a result");
    assert!(result.is_error);
    assert!(result.text().contains("cut off"));
    // OpenAI's spelling of the same thing.
    let body = json!({ "choices": [{ "index": 0, "finish_reason": "length", "message": {
        "role": "assistant", "content": null,
        "tool_calls": [{ "id": "call_1", "type": "function",
            "function": { "name": "write_file", "arguments": "{\"file_path\": \"/tmp/re" } }]
    }}]});
    assert_eq!(
        openai::parse_response(&body).unwrap().finish_reason,
        FinishReason::Length
    );
}

/// A history with every malformation of the bug reports: an empty assistant
/// message, whitespace-only text, a Kimi id, a 53-character Responses id,
/// hallucinated names, blank arguments.
fn malformed_history() -> Vec<Message> {
    let long_id = format!("fc_{}", "0123456789abcdef".repeat(4))[..53].to_owned();
    vec![
        Message::system("You are careful."),
        Message::user("Plan it."),
        Message::Assistant(AssistantMessage::new(vec![])),
        Message::Assistant(AssistantMessage::new(vec![
            ContentPart::text("\n\n"),
            ContentPart::ToolCall(ToolCall::new(
                "functions.write_todos:0",
                "write_todos",
                " \n",
            )),
            ContentPart::ToolCall(ToolCall::new(&long_id, "multi_tool_use.parallel", "{}")),
            ContentPart::ToolCall(ToolCall::new("call_3", "talk to human", r#"{"q": "ok?"}"#)),
        ])),
        Message::Tool(ToolResult::ok("functions.write_todos:0", "saved")),
        Message::Tool(ToolResult::error(
            &long_id,
            "unknown tool `multi_tool_use.parallel`",
        )),
        Message::Tool(ToolResult::error("call_3", "unknown tool `talk to human`")),
        Message::assistant("  "),
        Message::user("Go on."),
    ]
}

#[test]
fn malformed_histories_export_within_both_providers_rules() {
    let history = malformed_history();
    assert_rules(&history);

    let anthropic = anthropic_messages(&history);
    let calls = &anthropic[1]["content"];
    assert_eq!(
        calls.as_array().map(Vec::len),
        Some(3),
        "only the tool_use blocks: {calls}"
    );
    let kimi = calls[0]["id"].as_str().unwrap();
    assert_eq!(
        calls[0]["input"],
        json!({}),
        "blank arguments go out as they ran"
    );
    assert_eq!(anthropic[2]["content"][0]["tool_use_id"], kimi);
    assert_eq!(calls[1]["name"], "multi_tool_use_parallel");
    assert_eq!(calls[2]["name"], "talk_to_human");
    // The model's own words are not rewritten: the result text stays.
    assert_eq!(
        anthropic[2]["content"][1]["content"],
        "unknown tool `multi_tool_use.parallel`"
    );

    let openai = openai_messages(&history);
    let calls = &openai[2]["tool_calls"];
    assert_eq!(
        calls[0]["id"], "functions.write_todos:0",
        "valid for OpenAI, kept"
    );
    assert_eq!(calls[0]["function"]["arguments"], "{}");
    let long = calls[1]["id"].as_str().unwrap();
    assert!(long.chars().count() <= 40);
    assert_eq!(openai[4]["tool_call_id"], long);
    // Export is deterministic.
    assert_eq!(openai_messages(&history), openai);
}

#[test]
fn odd_arguments_and_ids_from_compatible_servers_parse() {
    let body = json!({ "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "",
        "tool_calls": [
            { "id": "", "type": "function", "function": { "name": "search", "arguments": { "q": "rust" } } },
            { "id": "", "type": "function", "function": { "name": "list", "arguments": null } },
            { "id": "call_0", "function": { "name": "list" } }
        ]
    }}]});
    let response = openai::parse_response(&body).unwrap();
    let calls: Vec<&ToolCall> = response.message.tool_calls().collect();
    assert_eq!(calls[0].arguments, r#"{"q":"rust"}"#);
    assert_eq!(calls[1].arguments, "");
    assert_eq!(calls[2].arguments, "");
    assert!(
        response
            .message
            .content
            .iter()
            .all(|part| !matches!(part, ContentPart::Text(_)))
    );
}

#[tokio::test]
async fn two_empty_ids_in_one_batch_run_both_calls() {
    let body = json!({ "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": null,
        "tool_calls": [
            { "id": "", "type": "function", "function": { "name": "search", "arguments": "{\"q\":\"a\"}" },
              "extra_content": { "google": { "thought_signature": "c2lnbmF0dXJl" } } },
            { "id": "", "type": "function", "function": { "name": "search", "arguments": "{\"q\":\"b\"}" } }
        ]
    }}]});
    let response = openai::parse_response(&body).unwrap();
    let session = session(&["search"]).await;
    let mut conversation = vec![Message::user("Search a and b.")];
    run(&session, response, &mut conversation).await;
    let results: Vec<&ToolResult> = conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].text(), r#"{"q":"a"}"#);
    assert_eq!(results[1].text(), r#"{"q":"b"}"#);
    assert_ne!(results[0].tool_call_id, results[1].tool_call_id);
    // Gemini's thought signature goes back on its call.
    let exported = openai_messages(&conversation);
    assert_eq!(
        exported[1]["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
        "c2lnbmF0dXJl"
    );
    assert_rules(&conversation);
}

#[tokio::test]
async fn server_tool_blocks_are_kept_and_sent_back_to_anthropic_only() {
    let body = fixture("anthropic/ant_web_search.response.json");
    let response = anthropic::parse_response(&body).unwrap();
    let kinds: Vec<&str> = response
        .message
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Provider(provider) => provider.value["type"].as_str(),
            _ => None,
        })
        .collect();
    assert!(kinds.contains(&"server_tool_use"), "{kinds:?}");
    assert!(kinds.contains(&"web_search_tool_result"), "{kinds:?}");
    let conversation = vec![
        Message::user("Weather in SF?"),
        Message::Assistant(response.message),
    ];
    let anthropic = anthropic_messages(&conversation).to_string();
    assert!(anthropic.contains("web_search_tool_result"));
    let openai = openai_messages(&conversation).to_string();
    assert!(!openai.contains("server_tool_use") && !openai.contains("web_search_tool_result"));
}

#[test]
fn provider_defined_tools_are_kept_and_refused_for_another_format() {
    let request = fixture("anthropic/ant_memory_tool.request.json");
    let tools = anthropic::parse_tools(&request["tools"]).unwrap();
    let ToolDeclaration::Provider(memory) = &tools[0] else {
        panic!("expected a provider tool, got {:?}", tools[0]);
    };
    assert_eq!(
        (memory.name.as_str(), memory.tool_type.as_str()),
        ("memory", "memory_20250818")
    );
    assert_eq!(
        anthropic::export_declarations(&tools).unwrap()[0],
        request["tools"][0]
    );
    let error = openai::export_declarations(&tools).unwrap_err();
    assert!(matches!(
        &error.kind,
        WireErrorKind::ProviderTool { name, tool_type, format: WireFormat::AnthropicMessages }
            if name == "memory" && tool_type == "memory_20250818"
    ));
    assert!(error.to_string().contains("memory_20250818"));
}

#[test]
fn strict_and_provider_fields_of_declarations_are_kept() {
    let request = fixture("anthropic/ant_mixed_strict.request.json");
    let tools = anthropic::parse_tools(&request["tools"]).unwrap();
    assert!(
        tools
            .iter()
            .filter_map(ToolDeclaration::as_function)
            .any(|info| info.strict == Some(true))
    );
    let exported = serde_json::to_value(anthropic::export_declarations(&tools).unwrap()).unwrap();
    assert_eq!(exported, request["tools"]);
    let declared = json!([{
        "name": "search", "description": "Search.", "input_schema": { "type": "object" },
        "cache_control": { "type": "ephemeral" }, "defer_loading": true,
        "allowed_callers": ["code_execution_20250825"]
    }]);
    let tools = anthropic::parse_tools(&declared).unwrap();
    assert_eq!(
        serde_json::to_value(anthropic::export_declarations(&tools).unwrap()).unwrap(),
        declared
    );
    // Another format's fields never leak.
    let info = tools[0].as_function().unwrap();
    let openai = serde_json::to_value(openai::export_tools(std::slice::from_ref(info))).unwrap();
    assert!(openai[0]["function"].get("cache_control").is_none());
}

#[tokio::test]
async fn real_tool_lists_with_blank_descriptions_bind() {
    for path in [
        "openai/oai_tool_output.request.json",
        "openai/oai_hitl_parallel.request.json",
        "anthropic/ant_mixed_strict.request.json",
    ] {
        let request = fixture(path);
        let tools = if path.starts_with("openai") {
            openai::parse_tools(&request["tools"]).unwrap()
        } else {
            anthropic::parse_tools(&request["tools"]).unwrap()
        };
        let infos: Vec<ToolInfo> = tools
            .iter()
            .filter_map(ToolDeclaration::as_function)
            .cloned()
            .collect();
        assert!(
            infos.iter().any(|info| info.description.is_empty()),
            "{path}"
        );
        let definitions = infos.into_iter().map(|info| {
            tool::Definition::from_fn(info, |arguments: Value, _context| async move {
                Ok::<_, BoxError>(arguments)
            })
        });
        Definition::builder()
            .name("blank")
            .tools(definitions)
            .build()
            .validate()
            .unwrap()
            .bind(Bindings::new(SessionId::new(), LoopId::new()))
            .await
            .unwrap_or_else(|error| panic!("{path}: {error:#}"));
    }
}

#[test]
fn images_system_messages_and_multi_part_results_cross_both_formats() {
    let conversation = vec![
        Message::system("Describe screenshots."),
        Message::User(UserMessage::new(vec![
            ContentPart::text("What is on this page?"),
            ContentPart::Image(ImagePart::base64("image/png", "iVBORw0KGgo=")),
        ])),
        Message::tool_calls(None, vec![ToolCall::new("call_1", "screenshot", "{}")]),
        Message::Tool(ToolResult::with_content(
            "call_1",
            vec![
                ContentPart::text("A login form."),
                ContentPart::Image(ImagePart::url("https://example.com/shot.png")),
            ],
            false,
        )),
    ];
    assert_rules(&conversation);
    let exported = anthropic::export_messages(&conversation);
    assert_eq!(
        serde_json::to_value(&exported.system).unwrap(),
        json!("Describe screenshots.")
    );
    let messages = serde_json::to_value(&exported.messages).unwrap();
    assert_eq!(messages[0]["content"][1]["source"]["type"], "base64");
    assert_eq!(messages[2]["content"][0]["content"][1]["type"], "image");
    let openai = openai_messages(&conversation);
    assert_eq!(openai[0]["role"], "system");
    assert_eq!(
        openai[1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
    assert_eq!(openai[3]["content"], "A login form.");
    // The image a tool message cannot hold follows in a user message.
    assert_eq!(openai[4]["role"], "user");
    assert!(
        openai[4]
            .to_string()
            .contains("https://example.com/shot.png")
    );
    // And Anthropic's export parses back to the same conversation.
    let body = json!({ "system": exported.system, "messages": messages });
    assert_eq!(
        anthropic::parse_request(&body).unwrap().conversation,
        conversation
    );
}
