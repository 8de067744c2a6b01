//! `iterations` and `calls` (DESIGN.md sections 4 and 8.2): exactly N
//! batches run, the batch that would exceed a limit fails the turn without
//! running and without entering the conversation, and a final answer is
//! never blocked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::conversation::Message;
use agent_loop::turn::{ExceededLimit, ScriptedModel, ToolLimitError, TurnError, TurnStatus};
use agent_loop::{ResolvedToolLimits, ToolLimits};
use tokio_util::sync::CancellationToken;

/// A script of `batches` batches of `size` calls to `ping`, ids
/// `call_{batch}_{index}` (1-based batches), then an answer.
fn ping_script(batches: usize, size: usize) -> ScriptedModel {
    let mut script: Vec<_> = (1..=batches)
        .map(|b| batch((0..size).map(|i| call(format!("call_{b}_{i}"), "ping", "{}"))))
        .collect();
    script.push(answer("done"));
    ScriptedModel::new(script)
}

#[tokio::test]
async fn iterations_three_runs_exactly_three_batches_and_refuses_the_fourth() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().iterations(3),
    )
    .await;
    let model = ping_script(10, 1);
    let mut conversation = user_says("keep pinging");

    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("the fourth batch exceeds iterations = 3");

    assert!(
        matches!(
            error,
            TurnError::ToolLimit(ToolLimitError {
                kind: ExceededLimit::Iterations,
                iterations: 4,
                max_iterations,
                calls: 4,
                batch_calls: 1,
                ..
            }) if max_iterations.get() == Some(3)
        ),
        "{error:?}"
    );
    assert_eq!(
        invocations.load(Ordering::SeqCst),
        3,
        "exactly 3 batches ran"
    );
    assert_eq!(model.requests().len(), 4, "the 4th request was made");
    // user, then 3 × (assistant tool calls, result); nothing of batch 4.
    assert_eq!(conversation.len(), 7);
    assert_eq!(result_for(&conversation, "call_3_0").text(), "ok");
    assert!(
        matches!(conversation.last(), Some(Message::Tool(r)) if r.tool_call_id == "call_3_0"),
        "the conversation ends with the 3rd batch's result: {:?}",
        conversation.last()
    );
    assert!(tool_calls(&conversation).iter().all(|c| c.id != "call_4_0"));
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn calls_five_with_batches_of_two_refuses_the_third_batch_without_running_it() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().calls(5),
    )
    .await;
    let model = ping_script(3, 2);
    let mut conversation = user_says("ping twice, three times");

    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("batch 3 would make 6 calls");

    let TurnError::ToolLimit(limit) = error else {
        panic!("expected a tool limit error, got {error:?}");
    };
    assert_eq!(limit.kind, ExceededLimit::Calls);
    assert_eq!((limit.calls, limit.max_calls.get()), (6, Some(5)));
    assert_eq!((limit.iterations, limit.batch_calls), (3, 2));
    assert_eq!(
        limit.max_iterations,
        ResolvedToolLimits::default().iterations
    );
    assert_eq!(
        invocations.load(Ordering::SeqCst),
        4,
        "batches 1 and 2 ran, no call of batch 3"
    );
    assert_eq!(conversation.len(), 1 + 2 * 3);
    assert_eq!(tool_calls(&conversation).len(), 4);
    assert!(matches!(conversation.last(), Some(Message::Tool(r)) if r.tool_call_id == "call_2_1"));
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn batches_that_reach_the_limits_exactly_run() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().iterations(2).calls(4),
    )
    .await;
    let model = ping_script(2, 2);
    let mut conversation = user_says("ping");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("2 batches of 2 fit iterations = 2 and calls = 4");

    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(outcome.stats.iteration_count(), 2);
    assert_eq!(outcome.stats.call_count(), 4);
    assert_eq!(invocations.load(Ordering::SeqCst), 4);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_final_answer_is_never_blocked_when_the_limits_are_used_up() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().iterations(1).calls(1),
    )
    .await;
    let model = ping_script(1, 1);
    let mut conversation = user_says("ping once");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the answer after the last allowed batch is accepted");

    assert_eq!(
        outcome.status,
        TurnStatus::Completed {
            answer: "done".into()
        }
    );
    assert_eq!(conversation.last(), Some(&Message::assistant("done")));
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_batch_larger_than_the_whole_call_limit_fails_on_calls_not_iterations() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().calls(3),
    )
    .await;
    let model = ping_script(1, 4);
    let mut conversation = user_says("ping four times at once");

    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("4 calls exceed calls = 3");

    assert!(
        matches!(
            error,
            TurnError::ToolLimit(ToolLimitError {
                kind: ExceededLimit::Calls,
                iterations: 1,
                calls: 4,
                max_calls,
                batch_calls: 4,
                ..
            }) if max_calls.get() == Some(3)
        ),
        "{error:?}"
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 0);
    assert_eq!(conversation, user_says("ping four times at once"));
}

#[tokio::test]
async fn the_outcome_lists_the_messages_the_turn_appended() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    let mut conversation = user_says("earlier");
    conversation.push(Message::assistant("earlier answer"));
    conversation.push(Message::user("ping twice"));
    let before = conversation.len();

    let outcome = session
        .run_turn(
            &ping_script(2, 1),
            &mut conversation,
            &CancellationToken::new(),
        )
        .await
        .expect("the turn completes");

    assert_eq!(outcome.messages(&conversation), &conversation[before..]);
    assert_eq!(outcome.messages(&conversation).len(), 2 * 2 + 1);
    assert_every_call_answered(&conversation);
}
