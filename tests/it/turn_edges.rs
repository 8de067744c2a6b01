//! Edges of the turn loop: one iteration, unlimited limits, a final answer
//! first, an empty batch, a failing model.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::conversation::{AssistantMessage, Message, ModelResponse};
use agent_loop::turn::{
    ExceededLimit, ModelErrorKind, ScriptExhausted, ScriptedModel, TurnError, TurnStatus,
};
use agent_loop::{Limit, ToolLimits};
use tokio_util::sync::CancellationToken;

fn pings(batches: usize) -> Vec<ModelResponse> {
    (0..batches)
        .map(|b| batch([call(format!("call_{b}"), "ping", "{}")]))
        .collect()
}

#[tokio::test]
async fn iterations_one_runs_one_batch_then_accepts_the_answer() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().iterations(1),
    )
    .await;
    let mut script = pings(1);
    script.push(answer("pong"));
    let model = ScriptedModel::new(script);
    let mut conversation = user_says("ping");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("one batch fits iterations = 1");

    assert_eq!(outcome.answer(), Some("pong"));
    assert_eq!(outcome.stats.iteration_count(), 1);
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn iterations_one_refuses_a_second_batch() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new().iterations(1),
    )
    .await;
    let model = ScriptedModel::new(pings(2));
    let mut conversation = user_says("ping twice");

    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("a second batch exceeds iterations = 1");

    let TurnError::ToolLimit(limit) = error else {
        panic!("expected a tool limit error, got {error:?}");
    };
    assert_eq!(limit.kind, ExceededLimit::Iterations);
    assert_eq!((limit.iterations, limit.max_iterations.get()), (2, Some(1)));
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn unlimited_iterations_and_calls_run_until_the_model_answers() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new()
            .iterations(Limit::Unlimited)
            .calls(Limit::Unlimited),
    )
    .await;
    let mut script = pings(300);
    script.push(answer("finally"));
    let model = ScriptedModel::new(script);
    let mut conversation = user_says("ping a lot");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("no limit stops 300 batches");

    assert_eq!(outcome.answer(), Some("finally"));
    assert_eq!(outcome.stats.iteration_count(), 300);
    assert_eq!(outcome.stats.call_count(), 300);
    assert_eq!(invocations.load(Ordering::SeqCst), 300);
    assert_eq!(conversation.len(), 1 + 2 * 300 + 1);
    assert_eq!(model.remaining(), 0);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn the_default_limits_stop_what_unlimited_allows() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new(pings(300));
    let mut conversation = user_says("ping a lot");

    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("the default allows 25 iterations");

    let TurnError::ToolLimit(limit) = error else {
        panic!("expected a tool limit error, got {error:?}");
    };
    assert_eq!(
        (limit.iterations, limit.max_iterations.get()),
        (26, Some(25))
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 25);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_final_answer_first_runs_no_tool_and_counts_no_iteration() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([answer("hello")]);
    let mut conversation = user_says("hi");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    assert_eq!(
        outcome.status,
        TurnStatus::Completed {
            answer: "hello".into()
        }
    );
    assert_eq!(outcome.stats.iteration_count(), 0);
    assert_eq!(outcome.stats.call_count(), 0);
    assert_eq!(invocations.load(Ordering::SeqCst), 0);
    assert_eq!(
        outcome.messages(&conversation),
        [Message::assistant("hello")]
    );
    assert_eq!(
        conversation,
        [Message::user("hi"), Message::assistant("hello")]
    );
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn an_empty_batch_ends_the_turn_as_an_answer_without_an_iteration() {
    let session = bind_tools([echo_tool("echo")], ToolLimits::default()).await;
    let model = ScriptedModel::new([ModelResponse::new(AssistantMessage::with_tool_calls(
        Some("nothing to do".into()),
        Vec::new(),
    ))]);
    let mut conversation = user_says("hi");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    assert_eq!(outcome.answer(), Some("nothing to do"));
    assert_eq!(outcome.stats.iteration_count(), 0);
    assert_eq!(
        conversation.last(),
        Some(&Message::assistant("nothing to do"))
    );
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_failing_model_fails_the_turn_and_keeps_the_committed_batches() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    // Two batches, then the script runs out: the third request fails.
    let model = ScriptedModel::new(pings(2));
    let mut conversation = user_says("ping");

    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("the model request fails");

    let TurnError::Model { source, .. } = error else {
        panic!("expected a model error, got {error:?}");
    };
    assert_eq!(source.kind, ModelErrorKind::Other);
    assert!(
        std::error::Error::source(&source)
            .is_some_and(|cause| cause.downcast_ref::<ScriptExhausted>().is_some()),
        "{source}"
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    assert_eq!(conversation.len(), 1 + 2 * 2);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn assistant_text_alongside_tool_calls_is_kept() {
    let session = bind_tools([echo_tool("echo")], ToolLimits::default()).await;
    let model = ScriptedModel::new([
        ModelResponse::new(AssistantMessage::with_tool_calls(
            Some("Let me check.".into()),
            vec![call("c1", "echo", "{}")],
        )),
        answer("checked"),
    ]);
    let mut conversation = user_says("check");

    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    assert_eq!(
        conversation[1],
        Message::tool_calls(Some("Let me check.".into()), vec![call("c1", "echo", "{}")])
    );
    assert_every_call_answered(&conversation);
}

/// A response cut because the conversation filled the context window
/// (Anthropic's `model_context_window_exceeded`) was mapped to the output
/// limit, so the model was asked again and again to resend into a full
/// context: the turn ends at once with a typed error, its calls not run
/// and the response not kept.
#[tokio::test]
async fn a_full_context_window_ends_the_turn_with_a_typed_error() {
    use agent_loop::conversation::{FinishReason, Usage};
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&invocations))],
        ToolLimits::new(),
    )
    .await;
    let mut first = pings(1);
    first.push(
        batch([call("call_full", "ping", r#"{"par"#)])
            .with_finish_reason(FinishReason::ContextWindowExceeded)
            .with_usage(Usage::new(199_000, 12)),
    );
    first.push(answer("never asked"));
    let model = ScriptedModel::new(first);
    let mut conversation = user_says("ping");

    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("the context is full");
    let TurnError::ContextWindowExceeded { usage } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(usage.input_tokens, 199_000);
    assert_eq!(error.usage(), *usage);
    assert_eq!(
        invocations.load(Ordering::SeqCst),
        1,
        "only the first batch ran"
    );
    // The user message, the first batch and its result: the cut response
    // is not there, and every call kept its one result.
    assert_eq!(conversation.len(), 3, "{conversation:#?}");
    assert!(
        conversation
            .iter()
            .all(|m| !m.text().contains("never asked"))
    );
    assert_eq!(model.remaining(), 1, "not asked again");
}

/// Anthropic's `pause_turn` (a long server-tool turn) ended the turn with
/// an empty answer: the paused message goes back as it is and the model
/// goes on, each pause an iteration within the limit.
#[tokio::test]
async fn a_paused_turn_goes_on_within_the_iteration_limit() {
    use agent_loop::conversation::{ContentPart, FinishReason, ProviderPart, WireFormat};
    let session = bind_tools(
        [counting_tool("ping", Arc::new(AtomicUsize::new(0)))],
        ToolLimits::new().iterations(2),
    )
    .await;
    let paused = || {
        let mut message = AssistantMessage::from_text("Searching.");
        message.content.push(ContentPart::Provider(ProviderPart::new(
            WireFormat::AnthropicMessages,
            serde_json::json!({ "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {} }),
        )));
        ModelResponse::new(message).with_finish_reason(FinishReason::Paused)
    };
    let model = ScriptedModel::new([paused(), answer("Found it.")]);
    let mut conversation = user_says("Search.");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the paused turn goes on");
    assert_eq!(outcome.answer(), Some("Found it."));
    // The pause is an iteration (the final answer is none, as always).
    assert_eq!(outcome.stats.iteration_count(), 1);
    // The second request carries the paused message as it was.
    let second = &model.requests()[1].conversation;
    assert_eq!(second.last(), Some(&Message::Assistant(paused().message)));

    // Pauses past the iteration limit are a limit error, typed.
    let model = ScriptedModel::new([paused(), paused(), paused(), answer("late")]);
    let error = session
        .run_turn(&model, &mut user_says("Search."), &CancellationToken::new())
        .await
        .expect_err("three pauses, two iterations");
    assert!(
        matches!(&error, TurnError::ToolLimit(limit) if limit.kind == ExceededLimit::Iterations),
        "{error:?}"
    );
}
