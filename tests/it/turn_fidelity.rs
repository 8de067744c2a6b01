//! The turn loop on what real providers send: cut-off responses, usage,
//! reasoning kept, provider ids that are empty or reused, and conversations
//! handed in with an unanswered call.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::{answer, bind_tools, user_says, weather_tool};
use agent_loop::ToolLimits;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::{
    AssistantMessage, ContentPart, ConversationError, ConversationErrorKind, FinishReason, Message,
    ModelResponse, ReasoningPart, ToolCall, ToolResult, Usage, WireFormat,
};
use agent_loop::turn::{ExceededLimit, ScriptedModel, TurnError};
use tokio_util::sync::CancellationToken;

fn results(conversation: &[Message]) -> Vec<&ToolResult> {
    conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .collect()
}

fn call_ids(conversation: &[Message]) -> Vec<String> {
    conversation
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(AssistantMessage::tool_calls)
        .map(|call| call.id.clone())
        .collect()
}

#[tokio::test]
async fn a_response_cut_off_by_the_output_limit_runs_none_of_its_calls() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [weather_tool(Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    // The last call's arguments were cut mid-object: `{"city": "Par`.
    let cut = ModelResponse::tool_calls([
        ToolCall::new("call_1", "get_weather", r#"{"city": "Paris"}"#),
        ToolCall::new("call_2", "get_weather", r#"{"city": "Par"#),
    ])
    .with_finish_reason(FinishReason::Length);
    let model = ScriptedModel::new([cut, answer("Sorry, let me retry later.")]);
    let mut conversation = user_says("Weather in Paris?");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    assert_eq!(invocations.load(Ordering::SeqCst), 0);
    let results = results(&conversation);
    assert_eq!(results.len(), 2);
    for (result, id) in results.iter().zip(["call_1", "call_2"]) {
        assert_eq!(result.tool_call_id, id);
        assert!(result.is_error);
        assert!(
            result.text().contains("cut off by the output token limit"),
            "{}",
            result.text()
        );
    }
    let iteration = &outcome.stats.iterations[0];
    assert_eq!(iteration.finish_reason, FinishReason::Length);
    assert!(
        iteration
            .calls
            .iter()
            .all(|call| call.error == Some(ToolCallErrorKind::CutOff))
    );
    assert_eq!(outcome.stats.call_count(), 2, "cut-off calls count too");
    assert_eq!(
        outcome.stats.iteration_count(),
        1,
        "a cut-off batch counts one iteration"
    );
    assert_eq!(outcome.finish_reason, Some(FinishReason::Stop));
}

#[tokio::test]
async fn cut_off_calls_count_against_the_call_limit() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [weather_tool(Arc::clone(&invocations))],
        ToolLimits::new().calls(2),
    )
    .await;
    let cut = ModelResponse::tool_calls([
        ToolCall::new("call_1", "get_weather", r#"{"city": "Paris"}"#),
        ToolCall::new("call_2", "get_weather", r#"{"city""#),
    ])
    .with_finish_reason(FinishReason::Length);
    let retry = ModelResponse::tool_calls([ToolCall::new(
        "call_3",
        "get_weather",
        r#"{"city": "Paris"}"#,
    )]);
    let model = ScriptedModel::new([cut, retry]);
    let mut conversation = user_says("Weather in Paris?");
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    let TurnError::ToolLimit(limit) = error else {
        panic!("expected a tool limit error, got {error:?}");
    };
    assert_eq!(limit.kind, ExceededLimit::Calls);
    assert_eq!((limit.calls, limit.max_calls.get()), (3, Some(2)));
    assert_eq!(invocations.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn usage_is_added_up_per_iteration_and_per_turn() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools([weather_tool(invocations)], ToolLimits::default()).await;
    let first = {
        let mut usage = Usage::new(398, 155);
        usage.cache_read_tokens = 10;
        usage.cache_write_tokens = 3;
        usage.reasoning_tokens = 26;
        usage
    };
    let second = Usage::new(600, 40);
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new(
            "call_1",
            "get_weather",
            r#"{"city": "Oslo"}"#,
        )])
        .with_usage(first),
        answer("Sunny in Oslo.").with_usage(second),
    ]);
    let mut conversation = user_says("Weather in Oslo?");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.stats.iterations[0].usage, first);
    assert_eq!(outcome.stats.usage, {
        let mut usage = Usage::new(998, 195);
        usage.cache_read_tokens = 10;
        usage.cache_write_tokens = 3;
        usage.reasoning_tokens = 26;
        usage
    });
}

#[tokio::test]
async fn reasoning_and_text_before_calls_stay_in_the_conversation_in_order() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools([weather_tool(invocations)], ToolLimits::default()).await;
    let thinking = ContentPart::Reasoning(
        ReasoningPart::new("I need the weather first.", WireFormat::AnthropicMessages)
            .signed("EqEECkYICxgCKkAo3UA4"),
    );
    let message = AssistantMessage::new(vec![
        thinking.clone(),
        ContentPart::text("Let me check."),
        ContentPart::ToolCall(ToolCall::new(
            "toolu_1",
            "get_weather",
            r#"{"city":"Rome"}"#,
        )),
    ]);
    let model = ScriptedModel::new([ModelResponse::new(message.clone()), answer("Sunny.")]);
    let mut conversation = user_says("Weather in Rome?");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(conversation[1], Message::Assistant(message));
    // The next request carried the signed block back, first.
    let second_request = &model.requests()[1].conversation;
    let Message::Assistant(sent) = &second_request[1] else {
        panic!("expected the assistant message");
    };
    assert_eq!(sent.content[0], thinking);
}

#[tokio::test]
async fn empty_provider_ids_in_one_batch_run_both_calls_with_fresh_ids() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [weather_tool(Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    // Gemini's OpenAI-compatible endpoint sends `"id": ""` for every call.
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([
            ToolCall::new("", "get_weather", r#"{"city": "Paris"}"#),
            ToolCall::new("", "get_weather", r#"{"city": "Rome"}"#),
        ]),
        answer("Sunny in both."),
    ]);
    let mut conversation = user_says("Weather in Paris and Rome?");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    let calls = call_ids(&conversation);
    let answered: Vec<String> = results(&conversation)
        .iter()
        .map(|result| result.tool_call_id.clone())
        .collect();
    assert_eq!(calls, answered);
    assert_eq!(calls.iter().collect::<HashSet<_>>().len(), 2);
    assert!(
        calls
            .iter()
            .all(|id| id.starts_with("call_") && id.len() == 37)
    );
    let texts: Vec<String> = results(&conversation).iter().map(|r| r.text()).collect();
    assert_eq!(texts, ["sunny in Paris", "sunny in Rome"]);
}

/// Kind 13 of the "providers as they behave" issue: minting is
/// deterministic per session, so a replayed or resumed turn names its
/// calls as the first run did.
#[tokio::test]
async fn minted_ids_are_the_sessions_uuid_of_the_calls_place_and_repeat_on_a_rerun() {
    let session = bind_tools([weather_tool(Arc::default())], ToolLimits::default()).await;
    let script = || {
        ScriptedModel::new([
            ModelResponse::tool_calls([
                ToolCall::new("", "get_weather", r#"{"city": "Paris"}"#),
                ToolCall::new("", "get_weather", r#"{"city": "Rome"}"#),
            ]),
            answer("Sunny in both."),
        ])
    };
    let mut first = user_says("Weather in Paris and Rome?");
    let mut second = first.clone();
    session
        .run_turn(&script(), &mut first, &CancellationToken::new())
        .await
        .unwrap();
    session
        .run_turn(&script(), &mut second, &CancellationToken::new())
        .await
        .unwrap();
    // The assistant message is appended at index 1; its calls are 0 and 1.
    let scope = session.session_id().as_uuid();
    let expected: Vec<String> = ["1.0", "1.1"]
        .iter()
        .map(|place| {
            format!(
                "call_{}",
                uuid::Uuid::new_v5(&scope, place.as_bytes()).simple()
            )
        })
        .collect();
    assert_eq!(call_ids(&first), expected);
    assert_eq!(first, second);

    let other = bind_tools([weather_tool(Arc::default())], ToolLimits::default()).await;
    let mut elsewhere = user_says("Weather in Paris and Rome?");
    other
        .run_turn(&script(), &mut elsewhere, &CancellationToken::new())
        .await
        .unwrap();
    let theirs = call_ids(&elsewhere);
    assert!(theirs.iter().all(|id| !expected.contains(id)), "{theirs:?}");
}

#[tokio::test]
async fn an_id_reused_from_an_earlier_turn_gets_a_fresh_id() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [weather_tool(Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    // Some local servers number calls from `call_0` in every response.
    let mut conversation = vec![
        Message::user("Weather in Paris?"),
        Message::tool_calls(
            None,
            vec![ToolCall::new(
                "call_0",
                "get_weather",
                r#"{"city":"Paris"}"#,
            )],
        ),
        Message::Tool(ToolResult::ok("call_0", "sunny in Paris")),
        Message::assistant("Sunny."),
        Message::user("And Rome?"),
    ];
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new("call_0", "get_weather", r#"{"city":"Rome"}"#)]),
        answer("Sunny too."),
    ]);
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let calls = call_ids(&conversation);
    assert_eq!(calls[0], "call_0");
    assert_ne!(calls[1], "call_0");
    assert_eq!(results(&conversation)[1].tool_call_id, calls[1]);
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unanswered_call_is_repaired_before_the_first_request() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [weather_tool(Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    // The process was killed while `call_b` ran: its result was never stored.
    let mut conversation = vec![
        Message::user("Weather in Paris and Rome?"),
        Message::tool_calls(
            None,
            vec![
                ToolCall::new("call_a", "get_weather", r#"{"city":"Paris"}"#),
                ToolCall::new("call_b", "get_weather", r#"{"city":"Rome"}"#),
            ],
        ),
        Message::Tool(ToolResult::ok("call_a", "sunny in Paris")),
        Message::user("Still there?"),
    ];
    let model = ScriptedModel::new([answer("Yes.")]);
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.repaired, ["call_b"]);
    let Message::Tool(repaired) = &conversation[3] else {
        panic!(
            "expected the repaired result right after call_a's, got {:?}",
            conversation[3]
        );
    };
    assert_eq!(repaired.tool_call_id, "call_b");
    assert!(repaired.is_error);
    assert!(repaired.text().contains("interrupted"));
    assert_eq!(conversation[4], Message::user("Still there?"));
    // The very first request already had it.
    assert_eq!(model.requests()[0].conversation[3], conversation[3]);
    assert_eq!(invocations.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_unanswered_call_at_the_end_is_answered_at_the_end() {
    let session = bind_tools([weather_tool(Arc::default())], ToolLimits::default()).await;
    let mut conversation = vec![
        Message::user("Weather?"),
        Message::tool_calls(None, vec![ToolCall::new("call_x", "get_weather", "{}")]),
    ];
    let model = ScriptedModel::new([answer("Done.")]);
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.repaired, ["call_x"]);
    assert_eq!(
        conversation[2]
            .as_tool_result()
            .map(|r| r.tool_call_id.as_str()),
        Some("call_x")
    );
    assert_eq!(conversation.len(), 4);
}

#[tokio::test]
async fn a_result_without_a_call_is_refused_before_any_request() {
    let session = bind_tools([weather_tool(Arc::default())], ToolLimits::default()).await;
    let mut conversation = vec![
        Message::user("Weather?"),
        Message::Tool(ToolResult::ok("call_ghost", "sunny")),
    ];
    let before = conversation.clone();
    let model = ScriptedModel::new([answer("Done.")]);
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, TurnError::Conversation(ConversationError { kind: ConversationErrorKind::ResultWithoutCall, tool_call_id, index: 1, .. }) if tool_call_id == "call_ghost"),
        "{error:?}"
    );
    assert!(model.requests().is_empty());
    assert_eq!(conversation, before);
}

#[tokio::test]
async fn a_second_result_for_one_call_is_refused_and_nothing_changes() {
    let session = bind_tools([weather_tool(Arc::default())], ToolLimits::default()).await;
    // An empty id is minted first; the conversation must come back untouched.
    let mut conversation = vec![
        Message::user("Weather?"),
        Message::tool_calls(
            None,
            vec![
                ToolCall::new("call_1", "get_weather", "{}"),
                ToolCall::new("", "get_weather", "{}"),
            ],
        ),
        Message::Tool(ToolResult::ok("call_1", "a")),
        Message::Tool(ToolResult::ok("call_1", "b")),
    ];
    let before = conversation.clone();
    let model = ScriptedModel::new([answer("Done.")]);
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, TurnError::Conversation(ConversationError { kind: ConversationErrorKind::DuplicateResult, tool_call_id, index: 3, .. }) if tool_call_id == "call_1"),
        "{error:?}"
    );
    assert!(model.requests().is_empty());
    assert_eq!(conversation, before);
}

#[tokio::test]
async fn a_failed_turn_still_reports_the_tokens_it_used() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools([weather_tool(invocations)], ToolLimits::new().iterations(1)).await;
    let spent = Usage::new(120, 30);
    let call = |id: &str| ToolCall::new(id, "get_weather", r#"{"city": "Oslo"}"#);
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([call("call_1")]).with_usage(spent),
        ModelResponse::tool_calls([call("call_2")]).with_usage(spent),
    ]);
    let mut conversation = user_says("Weather in Oslo, twice?");
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, TurnError::ToolLimit(_)), "{error:?}");
    assert_eq!(error.usage(), spent + spent);

    // A model that fails after one batch: the first request's tokens.
    let model = ScriptedModel::new([ModelResponse::tool_calls([call("call_3")]).with_usage(spent)]);
    let mut conversation = user_says("Weather in Oslo?");
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, TurnError::Model { .. }), "{error:?}");
    assert_eq!(error.usage(), spent);
}

#[test]
fn a_stored_conversation_is_repaired_before_export_without_a_turn() {
    use agent_loop::conversation::repair;
    use agent_loop::wire::{anthropic, openai};
    let mut stored = vec![
        Message::user("Deploy it."),
        Message::tool_calls(None, vec![ToolCall::new("toolu_01", "deploy", "{}")]),
    ];
    // Exported as stored, the call has no result: both providers refuse it.
    let before = serde_json::to_value(openai::export_messages(&stored).messages).unwrap();
    assert_eq!(before.as_array().map(Vec::len), Some(2));
    assert_eq!(repair(&mut stored).unwrap(), ["toolu_01"]);
    let exported = serde_json::to_value(anthropic::export_messages(&stored).messages).unwrap();
    assert_eq!(exported[2]["content"][0]["tool_use_id"], "toolu_01");
    assert_eq!(exported[2]["content"][0]["is_error"], true);
    // Repairing again changes nothing.
    let again = stored.clone();
    assert!(repair(&mut stored).unwrap().is_empty());
    assert_eq!(stored, again);
}
