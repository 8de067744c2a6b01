//! A reused tool call id would leave one id with two results, which
//! providers refuse (DESIGN.md section 8.7): the batch is refused before it
//! runs, with a typed error, and the conversation stays valid.

mod turn_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::ToolLimits;
use agent_loop::turn::{ScriptedModel, TurnError};
use tokio_util::sync::CancellationToken;
use turn_common::*;

#[tokio::test]
async fn an_id_repeated_within_a_batch_refuses_the_batch_before_any_call_runs() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let bound = bind_tools(
        [counting_tool("ping", invocations.clone())],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("call_1", "ping", "{}"), call("call_1", "ping", "{}")]),
        answer("unreachable"),
    ]);
    let mut conversation = user_says("ping twice");
    let error = bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, TurnError::DuplicateToolCallId { id } if id == "call_1"),
        "{error:?}"
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 0);
    assert_eq!(conversation, user_says("ping twice"));
}

#[tokio::test]
async fn an_id_reused_from_an_earlier_iteration_is_refused_and_earlier_batches_stay() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let bound = bind_tools(
        [counting_tool("ping", invocations.clone())],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("call_0", "ping", "{}")]),
        batch([call("call_1", "ping", "{}"), call("call_0", "ping", "{}")]),
        answer("unreachable"),
    ]);
    let mut conversation = user_says("ping");
    let error = bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, TurnError::DuplicateToolCallId { id } if id == "call_0"),
        "{error:?}"
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
    assert_eq!(conversation.len(), 3, "user, the first batch, its result");
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn an_id_already_in_the_conversation_before_the_turn_is_refused() {
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
    let error = bound
        .run_turn(&second, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, TurnError::DuplicateToolCallId { .. }),
        "{error:?}"
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
    assert_eq!(conversation, before);
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
    assert_every_call_answered(&conversation);
}
