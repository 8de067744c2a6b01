//! Property: whatever a model sends (empty, repeated, foreign or overlong
//! tool call ids, hallucinated names, blank or broken arguments,
//! whitespace-only text, reasoning and provider blocks of either format,
//! and a stored history with blank or image error results and an
//! unanswered call), the conversation the turn runner
//! returns exports to OpenAI and to Anthropic within their documented
//! rules (see `wire_rules`).

use agent_loop::conversation::{
    AssistantMessage, ContentPart, FinishReason, ImagePart, Message, ModelResponse, ProviderPart,
    ReasoningPart, ToolCall, ToolResult, WireFormat,
};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Bindings, LoopId, SessionId};
use agent_loop::{Definition, ToolLimits};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("call_0".to_owned()),
        Just("functions.write_todos:0".to_owned()),
        "fc_[a-f0-9]{50}",
        "[a-zA-Z0-9_.:-]{1,45}",
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("echo".to_owned()),
        Just("multi_tool_use.parallel".to_owned()),
        Just("talk to human".to_owned()),
        "[a-z .]{0,70}",
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(" \n".to_owned()),
        Just("{}".to_owned()),
        Just(r#"{"text": "hi"}"#.to_owned()),
        Just(r#"{"text": "h"#.to_owned()),
        Just("null".to_owned()),
        Just("[1, 2]".to_owned()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("\n\n".to_owned()),
        Just(" ".to_owned()),
        Just("Let me check.".to_owned()),
        "[a-z ]{0,12}",
    ]
}

fn format() -> impl Strategy<Value = WireFormat> {
    prop_oneof![
        Just(WireFormat::OpenAiChat),
        Just(WireFormat::AnthropicMessages)
    ]
}

fn part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        3 => text().prop_map(ContentPart::text),
        4 => (id(), name(), arguments())
            .prop_map(|(id, name, arguments)| ContentPart::ToolCall(ToolCall::new(id, name, arguments))),
        1 => (text(), proptest::option::of("[A-Za-z0-9+/]{8}"), format()).prop_map(
            |(text, signature, format)| {
                let mut part = ReasoningPart::new(text, format);
                part.signature = signature;
                ContentPart::Reasoning(part)
            }
        ),
        1 => Just(ContentPart::Provider(ProviderPart::new(WireFormat::AnthropicMessages, json!({
                "type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                "input": { "query": "weather" }
            })))),
    ]
}

fn response() -> impl Strategy<Value = ModelResponse> {
    (
        proptest::collection::vec(part(), 0..5),
        prop_oneof![4 => Just(FinishReason::ToolCalls), 1 => Just(FinishReason::Length)],
    )
        .prop_map(|(parts, finish_reason)| {
            ModelResponse::new(AssistantMessage::new(parts)).with_finish_reason(finish_reason)
        })
}

/// The content of a stored result: text, blank, an image, nothing.
fn result_content() -> impl Strategy<Value = Vec<ContentPart>> {
    prop_oneof![
        text().prop_map(|text| vec![ContentPart::text(text)]),
        Just(vec![]),
        Just(vec![ContentPart::Image(ImagePart::url(
            "https://example.com/shot.png"
        ))]),
        Just(vec![
            ContentPart::text("see"),
            ContentPart::Image(ImagePart::base64("image/png", "iVBORw0KGgo=")),
        ]),
    ]
}

/// A stored history: an earlier call answered by a result that may be an
/// error, blank or an image; then, drawn as a coin (so of the 128 cases,
/// all but 2^-128 of runs hold some), a second call that reuses the first
/// one's id under another name, with its own result (a function response
/// named unlike its call is what Gemini refuses, and a lookup by id alone
/// would name it after the first call); and maybe a call from a crashed
/// process whose result was never stored, whose id may repeat either.
fn history() -> impl Strategy<Value = Vec<Message>> {
    (
        id(),
        name(),
        arguments(),
        result_content(),
        proptest::bool::ANY,
        proptest::option::of(name()),
        proptest::option::of((id(), name())),
    )
        .prop_map(|(id, name, arguments, content, is_error, reused, orphan)| {
            let mut history = vec![
                Message::user("Start."),
                Message::tool_calls(
                    None,
                    vec![ToolCall::new(id.clone(), name.clone(), arguments)],
                ),
                Message::Tool(ToolResult::with_content(id.clone(), content, is_error)),
            ];
            if let Some(other) = reused {
                // Another name than the first call's, whatever was drawn.
                let other = if other == name {
                    format!("{other}_2")
                } else {
                    other
                };
                history.push(Message::tool_calls(
                    None,
                    vec![ToolCall::new(id.clone(), other, "{}")],
                ));
                history.push(Message::Tool(ToolResult::ok(id, "second")));
            }
            if let Some((id, name)) = orphan {
                history.push(Message::tool_calls(
                    None,
                    vec![ToolCall::new(id, name, "{}")],
                ));
                history.push(Message::user("Are you still there?"));
            }
            history
        })
}

fn echo() -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::new(
            "echo",
            "",
            json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
        ),
        |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn every_conversation_the_runner_returns_exports_within_both_providers_rules(
        mut conversation in history(),
        responses in proptest::collection::vec(response(), 0..4),
        last in text(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let definition = Definition::builder()
                .name("property")
                .tool(echo())
                .tool_limits(ToolLimits::new().iterations(10).calls(100))
                .build()
                .validate()
                .expect("valid");
            let session = definition
                .bind(Bindings::new(SessionId::new(), LoopId::new()))
                .await
                .expect("binds");
            let mut script: Vec<ModelResponse> = responses
                .into_iter()
                .filter(|response| response.message.has_tool_calls())
                .collect();
            // A blank last answer is told and asked again: the answer after
            // it completes the turn.
            let blank = last.trim().is_empty();
            script.push(ModelResponse::answer(last));
            if blank {
                script.push(ModelResponse::answer("Done."));
            }
            let model = ScriptedModel::new(script);
            session
                .run_turn(&model, &mut conversation, &CancellationToken::new())
                .await
                .expect("the turn completes");
            let violations = crate::wire_rules::export_violations(&conversation);
            prop_assert!(violations.is_empty(), "{violations:#?}\n{conversation:#?}");
            Ok(())
        })?;
    }
}
