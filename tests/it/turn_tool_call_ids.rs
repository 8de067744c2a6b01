//! A reused or empty tool call id would leave one id with two results (or a
//! result no provider can match), which providers refuse (DESIGN.md section
//! 8.7). Providers do send them (Gemini's OpenAI-compatible endpoint sends
//! `""` for every call, some local servers `call_0` in every response), so
//! the runner gives such a call a fresh unique id, shared with its result,
//! and the batch runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::ToolLimits;
use agent_loop::conversation::Message;
use agent_loop::turn::ScriptedModel;
use tokio_util::sync::CancellationToken;

/// `true` for an id the runner mints: `call_` and 32 lowercase hex digits.
fn is_fresh_id(id: &str) -> bool {
    id.strip_prefix("call_").is_some_and(|hex| {
        hex.len() == 32 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f'))
    })
}

/// The ids of every tool call in `conversation`, in order.
fn call_ids(conversation: &[Message]) -> Vec<String> {
    tool_calls(conversation)
        .into_iter()
        .map(|call| call.id.clone())
        .collect()
}

/// The ids every result answers, in order.
fn result_ids(conversation: &[Message]) -> Vec<String> {
    tool_results(conversation)
        .into_iter()
        .map(|result| result.tool_call_id.clone())
        .collect()
}

#[tokio::test]
async fn an_id_repeated_within_a_batch_gets_a_fresh_id_and_both_calls_run() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let bound = bind_tools(
        [counting_tool("ping", invocations.clone())],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("call_1", "ping", "{}"), call("call_1", "ping", "{}")]),
        answer("pong"),
    ]);
    let mut conversation = user_says("ping twice");
    let outcome = bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the batch runs");

    assert_eq!(outcome.answer(), Some("pong"));
    assert_eq!(invocations.load(Ordering::SeqCst), 2, "both calls ran");
    let ids = call_ids(&conversation);
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], "call_1", "the first call keeps its id");
    assert_ne!(ids[1], "call_1", "the second call gets a fresh id");
    assert!(is_fresh_id(&ids[1]), "{}", ids[1]);
    assert_eq!(
        result_ids(&conversation),
        ids,
        "one result per call, in order"
    );
    assert!(tool_results(&conversation).iter().all(|r| !r.is_error));
    assert_eq!(result_for(&conversation, &ids[0]).text(), "ok");
    assert_eq!(result_for(&conversation, &ids[1]).text(), "ok");
    let stat_ids: Vec<String> = outcome.stats.iterations[0]
        .calls
        .iter()
        .map(|call| call.tool_call_id.clone())
        .collect();
    assert_eq!(stat_ids, ids, "the stats carry the ids the model sees");
    // The model's next request saw the fresh id with its result.
    assert_eq!(call_ids(&model.requests()[1].conversation), ids);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn an_id_reused_from_an_earlier_iteration_gets_a_fresh_id_and_runs() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let bound = bind_tools(
        [counting_tool("ping", invocations.clone())],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("call_0", "ping", "{}")]),
        batch([call("call_1", "ping", "{}"), call("call_0", "ping", "{}")]),
        answer("done"),
    ]);
    let mut conversation = user_says("ping");
    let outcome = bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("both batches run");

    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(invocations.load(Ordering::SeqCst), 3);
    assert_eq!(outcome.stats.iteration_count(), 2);
    assert_eq!(
        conversation.len(),
        7,
        "user, batch 1, its result, batch 2, its two results, the answer"
    );
    let ids = call_ids(&conversation);
    assert_eq!(ids[..2], ["call_0", "call_1"]);
    assert_ne!(ids[2], "call_0");
    assert!(is_fresh_id(&ids[2]), "{}", ids[2]);
    assert_eq!(result_ids(&conversation), ids);
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 3);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn an_id_already_in_the_conversation_before_the_turn_gets_a_fresh_id() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let bound = bind_tools(
        [counting_tool("ping", invocations.clone())],
        ToolLimits::default(),
    )
    .await;
    let first = ScriptedModel::new([batch([call("call_0", "ping", "{}")]), answer("pong")]);
    let mut conversation = user_says("ping");
    bound
        .run_turn(&first, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let before = conversation.clone();

    let second = ScriptedModel::new([batch([call("call_0", "ping", "{}")]), answer("pong")]);
    let outcome = bound
        .run_turn(&second, &mut conversation, &CancellationToken::new())
        .await
        .expect("the reused id is replaced and the batch runs");

    assert_eq!(outcome.answer(), Some("pong"));
    assert!(outcome.repaired.is_empty());
    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    assert_eq!(
        conversation[..before.len()],
        before[..],
        "history unchanged"
    );
    let ids = call_ids(&conversation);
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], "call_0");
    assert_ne!(ids[1], "call_0");
    assert!(is_fresh_id(&ids[1]), "{}", ids[1]);
    assert_eq!(result_ids(&conversation), ids);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn empty_ids_get_distinct_fresh_ids() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let bound = bind_tools(
        [counting_tool("ping", invocations.clone())],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("", "ping", "{}"), call("", "ping", "{}")]),
        answer("done"),
    ]);
    let mut conversation = user_says("ping twice");
    bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the batch runs");

    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    let ids = call_ids(&conversation);
    assert_eq!(ids.len(), 2);
    assert!(ids.iter().all(|id| is_fresh_id(id)), "{ids:?}");
    assert_ne!(ids[0], ids[1]);
    assert_eq!(result_ids(&conversation), ids);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn distinct_ids_across_iterations_run() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let bound = bind_tools(
        [counting_tool("ping", invocations.clone())],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("call_0", "ping", "{}"), call("call_1", "ping", "{}")]),
        batch([call("call_2", "ping", "{}")]),
        answer("done"),
    ]);
    let mut conversation = user_says("ping");
    let outcome = bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(invocations.load(Ordering::SeqCst), 3);
    assert_eq!(call_ids(&conversation), ["call_0", "call_1", "call_2"]);
    assert_every_call_answered(&conversation);
}

/// Found by the turn property: a stored history whose first `call_0` went
/// unanswered and whose second `call_0` was answered made the turn fail
/// with a conversation error; the result answers the call right before it.
#[tokio::test]
async fn a_reused_id_answered_only_the_second_time_is_repaired_before_the_turn() {
    let bound = bind_tools([echo_tool("echo")], ToolLimits::default()).await;
    let mut conversation = vec![
        Message::user("go"),
        Message::tool_calls(None, vec![call("call_0", "echo", "{}")]),
        Message::tool_calls(None, vec![call("call_0", "echo", "{}")]),
        Message::Tool(agent_loop::conversation::ToolResult::ok("call_0", "second")),
    ];
    let model = ScriptedModel::new([answer("done")]);

    let outcome = bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the history is repaired");

    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(outcome.repaired, ["call_0"]);
    let ids = call_ids(&conversation);
    assert_eq!(ids[0], "call_0");
    assert!(is_fresh_id(&ids[1]), "{}", ids[1]);
    assert_every_call_answered(&conversation);
    let second = result_for(&conversation, &ids[1]);
    assert_eq!(second.text(), "second");
    assert!(result_for(&conversation, "call_0").is_error);
}
