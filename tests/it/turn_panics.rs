//! A panicking tool or middleware becomes an error result for its call; the
//! process and the turn survive (DESIGN.md section 8.4).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::ToolResult;
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::turn::ScriptedModel;
use agent_loop::turn::{TurnOptions, TurnStatus};
use agent_loop::{Bound, Definition, ToolLimits, tool};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_is_an_error_result_and_the_turn_completes() {
    let session = bind_tools(
        [
            panicking_tool("boom", "the tool blew up"),
            echo_tool("echo"),
        ],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "boom", "{}"),
            call("c2", "echo", r#"{"text":"still here"}"#),
        ]),
        batch([call("c3", "boom", "")]),
        answer("recovered"),
    ]);
    let mut conversation = user_says("go");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a tool panic does not fail the turn");

    assert_eq!(outcome.answer(), Some("recovered"));
    let boom = result_for(&conversation, "c1");
    assert!(boom.is_error);
    assert!(boom.text().contains("panicked"), "{}", boom.text());
    assert!(boom.text().contains("the tool blew up"), "{}", boom.text());
    assert!(result_for(&conversation, "c3").is_error);
    assert_eq!(
        *result_for(&conversation, "c2"),
        ToolResult::ok("c2", r#"{"text":"still here"}"#)
    );
    assert_eq!(
        outcome.stats.iterations[0].calls[0].error,
        Some(ToolCallErrorKind::ToolPanicked)
    );
    assert_eq!(model.requests().len(), 3, "the model saw both panics");
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_tool_panic_with_a_non_string_payload_is_still_an_error_result() {
    let odd = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("odd", "Panics with a number."),
        |_arguments: Value, _context| async move { panic_with_a_number() },
    );
    let session = bind_tools([odd], ToolLimits::default()).await;
    let model = ScriptedModel::new([batch([call("c1", "odd", "{}")]), answer("ok")]);
    let mut conversation = user_says("go");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    let odd = result_for(&conversation, "c1");
    assert!(odd.is_error && odd.text().contains("panicked"), "{odd:?}");
    assert_eq!(outcome.answer(), Some("ok"));
    assert_every_call_answered(&conversation);
}

fn panic_with_a_number() -> Result<tool::ToolOutput, tool::BoxError> {
    std::panic::panic_any(42_u32)
}

/// Panics on calls to `fragile`, passes every other call through.
struct PanicOnFragile;

#[async_trait::async_trait]
impl ToolMiddleware for PanicOnFragile {
    async fn handle(
        &self,
        call: ToolInvocation,
        next: Next<'_>,
    ) -> Result<tool::ToolOutput, tool::BoxError> {
        if call.context.tool_name() == "fragile" {
            panic!(
                "the middleware tripped over {}",
                call.context.tool_call_id()
            );
        }
        next.run(call).await
    }
}

/// Counts the outputs it sees come back from the tool (ok or error).
struct CountOutputs(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl ToolMiddleware for CountOutputs {
    async fn handle(
        &self,
        call: ToolInvocation,
        next: Next<'_>,
    ) -> Result<tool::ToolOutput, tool::BoxError> {
        let output = next.run(call).await;
        self.0.fetch_add(1, Ordering::SeqCst);
        output
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_middleware_is_an_error_result_and_the_turn_completes() {
    let fragile_ran = Arc::new(AtomicUsize::new(0));
    let outer_saw = Arc::new(AtomicUsize::new(0));
    let definition = Definition::builder()
        .name("panicky-middleware")
        .tool(counting_tool("fragile", Arc::clone(&fragile_ran)))
        .tool(echo_tool("echo"))
        .middleware(CountOutputs(Arc::clone(&outer_saw)))
        .middleware(PanicOnFragile)
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "fragile", "{}"),
            call("c2", "echo", r#"{"text":"fine"}"#),
        ]),
        answer("done anyway"),
    ]);
    let mut conversation = user_says("go");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a middleware panic does not fail the turn");

    assert_eq!(outcome.answer(), Some("done anyway"));
    let fragile = result_for(&conversation, "c1");
    assert!(fragile.is_error);
    assert!(
        fragile.text().contains("middleware panicked"),
        "{}",
        fragile.text()
    );
    assert!(
        fragile.text().contains("the middleware tripped over c1"),
        "{}",
        fragile.text()
    );
    assert_eq!(fragile_ran.load(Ordering::SeqCst), 0, "the tool never ran");
    assert_eq!(
        *result_for(&conversation, "c2"),
        ToolResult::ok("c2", r#"{"text":"fine"}"#)
    );
    assert_eq!(
        outcome.stats.iterations[0].calls[0].error,
        Some(ToolCallErrorKind::MiddlewarePanicked)
    );
    // The outer middleware's frame unwound with the panic for c1 and
    // returned normally for c2.
    assert_eq!(outer_saw.load(Ordering::SeqCst), 1);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_middleware_sees_a_tool_panic_as_an_error() {
    /// Records whether the output it saw was an error.
    struct SeeErrors(Arc<AtomicUsize>);

    #[async_trait::async_trait]
    impl ToolMiddleware for SeeErrors {
        async fn handle(
            &self,
            call: ToolInvocation,
            next: Next<'_>,
        ) -> Result<tool::ToolOutput, tool::BoxError> {
            let output = next.run(call).await;
            if let Err(error) = &output {
                assert!(
                    error
                        .downcast_ref::<agent_loop::middleware::ToolPanicked>()
                        .is_some()
                );
                self.0.fetch_add(1, Ordering::SeqCst);
            }
            output
        }
    }

    let errors_seen = Arc::new(AtomicUsize::new(0));
    let definition = Definition::builder()
        .name("see-panics")
        .tool(panicking_tool("boom", "kaboom"))
        .middleware(SeeErrors(Arc::clone(&errors_seen)))
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = ScriptedModel::new([batch([call("c1", "boom", "{}")]), answer("ok")]);
    let mut conversation = user_says("go");

    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    assert_eq!(errors_seen.load(Ordering::SeqCst), 1);
    let boom = result_for(&conversation, "c1");
    assert!(boom.is_error && boom.text().contains("kaboom"), "{boom:?}");
    assert_every_call_answered(&conversation);
}

/// A `Model` written by hand (not with `#[async_trait]`) that panics while
/// creating its future.
struct PanicsBeforeItsResponse;

impl agent_loop::turn::Model for PanicsBeforeItsResponse {
    fn respond<'a, 'r, 'f>(
        &'a self,
        _request: agent_loop::turn::ModelRequest<'r>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<
                        agent_loop::conversation::ModelResponse,
                        agent_loop::turn::ModelError,
                    >,
                > + Send
                + 'f,
        >,
    >
    where
        'a: 'f,
        'r: 'f,
        Self: 'f,
    {
        panic!("the provider client is broken")
    }
}

#[tokio::test]
async fn a_model_panicking_before_its_future_fails_the_turn_as_a_model_error() {
    let session = bind_tools([echo_tool("echo")], ToolLimits::default()).await;
    let mut conversation = user_says("go");
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(session.run_turn(
        &PanicsBeforeItsResponse,
        &mut conversation,
        &CancellationToken::new(),
    )))
    .await
    .expect("the model's panic must not escape run_turn");
    match outcome {
        Err(agent_loop::turn::TurnError::Model { source: error, .. }) => {
            assert_eq!(error.kind, agent_loop::turn::ModelErrorKind::Panicked);
            assert!(
                error.to_string().contains("the provider client is broken"),
                "{error}"
            );
        }
        other => panic!("expected a model error, got {:?}", other.map(|o| o.status)),
    }
}

/// The future a hand-written tool's `invoke` or middleware's `handle`
/// returns.
type OutputFuture<'f> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<tool::ToolOutput, tool::BoxError>> + Send + 'f>,
>;

/// One that borrows nothing.
type ToolFuture = OutputFuture<'static>;

/// A `Tool` written by hand (not with `#[async_trait]`): `invoke` returns
/// what `future` makes, so it may panic before any future exists.
struct HandWritten {
    info: tool::ToolInfo,
    future: fn() -> ToolFuture,
}

impl tool::Tool for HandWritten {
    fn info(&self) -> &tool::ToolInfo {
        &self.info
    }

    fn invoke<'a, 'c, 'f>(
        &'a self,
        _arguments: Value,
        _context: &'c tool::CallContext,
    ) -> OutputFuture<'f>
    where
        'a: 'f,
        'c: 'f,
        Self: 'f,
    {
        (self.future)()
    }
}

fn no_future() -> ToolFuture {
    panic!("no future at all")
}

/// Ready with `{}` at the first poll; panics in `drop`.
struct ReadyThenPanicsOnDrop;

impl std::future::Future for ReadyThenPanicsOnDrop {
    type Output = Result<tool::ToolOutput, tool::BoxError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::task::Poll::Ready(Ok(serde_json::json!({}).into()))
    }
}

impl Drop for ReadyThenPanicsOnDrop {
    fn drop(&mut self) {
        panic!("the future panicked while dropped");
    }
}

fn ready_then_panics_on_drop() -> ToolFuture {
    Box::pin(ReadyThenPanicsOnDrop)
}

/// The definition `name` of a [`HandWritten`] tool, without parameters.
fn hand_written(name: &'static str, future: fn() -> ToolFuture) -> tool::Definition {
    crate::common::tool_factory(name, move |_session| async move {
        Ok::<_, tool::BoxError>(HandWritten {
            info: tool::ToolInfo::without_parameters(name, "Written by hand."),
            future,
        })
    })
}

/// `tool` bound without middlewares and with one that passes calls on.
async fn alone_and_behind_a_middleware(tool: tool::Definition) -> [Definition<Bound>; 2] {
    let with = |middleware: bool| {
        let builder = Definition::builder()
            .name("hand-written")
            .tool(tool.clone());
        let builder = if middleware {
            builder.middleware(CountOutputs(Arc::new(AtomicUsize::new(0))))
        } else {
            builder
        };
        builder.build().validate().expect("valid")
    };
    [bind(&with(false)).await, bind(&with(true)).await]
}

/// Runs a turn in which the model calls `name` once (`c1`) and then
/// answers: the turn must complete with that answer. The call's result
/// and its error kind.
async fn one_call_turn(
    bound: &Definition<Bound>,
    name: &str,
) -> (ToolResult, Option<ToolCallErrorKind>) {
    let model = ScriptedModel::new([batch([call("c1", name, "{}")]), answer("done")]);
    let mut conversation = user_says("go");
    let outcome = bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a panic does not fail the turn");
    assert_eq!(outcome.answer(), Some("done"));
    let kinds: Vec<_> = outcome
        .stats
        .iterations
        .iter()
        .flat_map(|iteration| iteration.calls.iter().map(|call| call.error))
        .collect();
    assert_eq!(kinds.len(), 1, "{kinds:?}");
    (result_for(&conversation, "c1").clone(), kinds[0])
}

/// A panic while the tool makes its future or while its future is dropped
/// is the tool's panic on every path: invoked directly, with and without
/// a middleware, and in a turn.
#[tokio::test]
async fn a_tool_panicking_outside_its_polls_is_tool_panicked_on_every_path() {
    let tools = [
        hand_written("early", no_future),
        hand_written("late", ready_then_panics_on_drop),
    ];
    for tool in tools {
        let name = tool.name().to_owned();
        for bound in alone_and_behind_a_middleware(tool).await {
            let error = bound
                .invoke(&name, serde_json::json!({}))
                .await
                .expect_err("a panic is an error");
            assert_eq!(error.kind, ToolCallErrorKind::ToolPanicked, "{name}");
            assert!(
                error
                    .message
                    .contains(&format!("the tool `{name}` panicked")),
                "{}",
                error.message
            );
            let handle = bound.tool(&name).expect("bound");
            let error = handle.invoke(serde_json::json!({})).await.unwrap_err();
            assert_eq!(error.kind, ToolCallErrorKind::ToolPanicked, "{name}");

            let (result, kind) = one_call_turn(&bound, &name).await;
            assert!(
                result.is_error
                    && result
                        .text()
                        .contains(&format!("the tool `{name}` panicked")),
                "{}",
                result.text()
            );
            assert_eq!(kind, Some(ToolCallErrorKind::ToolPanicked), "{name}");
        }
    }
}

/// A middleware written by hand whose future answers `{}` at once, without
/// calling the tool, and panics when it is dropped.
struct MiddlewareFuturePanicsOnDrop;

impl ToolMiddleware for MiddlewareFuturePanicsOnDrop {
    fn handle<'s, 'n, 'f>(&'s self, _call: ToolInvocation, _next: Next<'n>) -> OutputFuture<'f>
    where
        's: 'f,
        'n: 'f,
        Self: 'f,
    {
        ready_then_panics_on_drop()
    }
}

/// A middleware whose future panics while dropped is a middleware panic,
/// outermost (dropped by the chain) or inside another (dropped by it), on
/// a direct call and in a turn.
#[tokio::test]
async fn a_middleware_future_panicking_when_dropped_is_middleware_panicked() {
    for outermost in [true, false] {
        let builder = Definition::builder().name("drop").tool(echo_tool("echo"));
        let builder = if outermost {
            builder.middleware(MiddlewareFuturePanicsOnDrop)
        } else {
            builder
                .middleware(CountOutputs(Arc::new(AtomicUsize::new(0))))
                .middleware(MiddlewareFuturePanicsOnDrop)
        };
        let bound = bind(&builder.build().validate().expect("valid")).await;
        let error = bound
            .invoke("echo", serde_json::json!({}))
            .await
            .expect_err("a panic is an error");
        assert_eq!(
            error.kind,
            ToolCallErrorKind::MiddlewarePanicked,
            "{outermost}"
        );

        let (_, kind) = one_call_turn(&bound, "echo").await;
        assert_eq!(
            kind,
            Some(ToolCallErrorKind::MiddlewarePanicked),
            "{outermost}"
        );
    }
}

/// A panic payload whose drop panics again, `.0` times: with 2 it escapes
/// both `catch_unwind`s of the chain (each one drops the payload it
/// caught), so the call's task itself dies.
struct PanicsOnDrop(u8);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        if self.0 > 0 {
            std::panic::panic_any(PanicsOnDrop(self.0 - 1));
        }
    }
}

fn panic_through_every_catch() -> Result<tool::ToolOutput, tool::BoxError> {
    std::panic::panic_any(PanicsOnDrop(2))
}

#[tokio::test]
async fn a_call_whose_task_died_gets_an_error_result_and_a_finished_event() {
    let dies = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("dies", "Its task dies."),
        |_arguments: Value, _context| async move { panic_through_every_catch() },
    );
    let session = bind_tools([dies, echo_tool("echo")], ToolLimits::default()).await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "dies", "{}"),
            call("c2", "echo", r#"{"text":"hi"}"#),
        ]),
        answer("ok"),
    ]);
    let mut conversation = user_says("go");
    let (events, mut receiver) = agent_loop::turn::TurnEvents::channel();

    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .expect("the turn completes");

    assert_eq!(outcome.answer(), Some("ok"));
    let died = result_for(&conversation, "c1");
    assert!(
        died.is_error && died.text().contains("was aborted"),
        "{died:?}"
    );
    assert_every_call_answered(&conversation);
    drop(events);
    let (mut started, mut finished) = started_and_finished(&mut receiver);
    started.sort();
    assert_eq!(started, ["c1", "c2"]);
    finished.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        finished,
        [
            ("c1".to_owned(), Some(ToolCallErrorKind::ToolPanicked)),
            ("c2".to_owned(), None)
        ],
        "every started call finished once"
    );
}

/// The ids of the calls a turn's events say started, and of those they
/// say finished with the finish's error kind, in the order received.
fn started_and_finished(
    receiver: &mut tokio::sync::mpsc::UnboundedReceiver<agent_loop::turn::TurnEvent>,
) -> (Vec<String>, Vec<(String, Option<ToolCallErrorKind>)>) {
    let mut started = Vec::new();
    let mut finished = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        match event {
            agent_loop::turn::TurnEvent::ToolCallStarted { tool_call_id, .. } => {
                started.push(tool_call_id);
            }
            agent_loop::turn::TurnEvent::ToolCallFinished {
                tool_call_id,
                error,
                ..
            } => finished.push((tool_call_id, error)),
            _ => {}
        }
    }
    (started, finished)
}

/// Set when a [`PendingThenPanicsOnDrop`] is first polled.
static PENDING_POLLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Never ready (it sets `polled` when first polled); panics in `drop`
/// with `panic`: a tool's or a middleware's future that only cancelling
/// ends.
struct PendingThenPanicsOnDrop {
    polled: &'static std::sync::atomic::AtomicBool,
    panic: fn(),
}

impl std::future::Future for PendingThenPanicsOnDrop {
    type Output = Result<tool::ToolOutput, tool::BoxError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        self.polled.store(true, Ordering::SeqCst);
        std::task::Poll::Pending
    }
}

impl Drop for PendingThenPanicsOnDrop {
    fn drop(&mut self) {
        (self.panic)();
    }
}

fn pending_then_panics_on_drop() -> ToolFuture {
    Box::pin(PendingThenPanicsOnDrop {
        polled: &PENDING_POLLED,
        panic: || panic!("the future panicked while dropped mid-flight"),
    })
}

/// Runs a turn whose one batch calls `tool` once or twice (`calls`),
/// cancels it once `polled` is set (the call's future is running), and
/// checks that no panic escaped `run_turn`, that the turn is interrupted
/// and that the batch was not committed.
async fn cancel_mid_flight(
    bound: &Definition<Bound>,
    tool: &str,
    calls: usize,
    polled: &'static std::sync::atomic::AtomicBool,
) {
    polled.store(false, Ordering::SeqCst);
    let ids = ["c1", "c2"];
    let model = ScriptedModel::new([batch(ids[..calls].iter().map(|&id| call(id, tool, "{}")))]);
    let mut conversation = user_says("go");
    let cancellation = CancellationToken::new();
    let canceller = cancellation.clone();
    tokio::spawn(async move {
        while !polled.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        canceller.cancel();
    });
    let turn = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(bound.run_turn(
        &model,
        &mut conversation,
        &cancellation,
    )))
    .await;
    let Ok(turn) = turn else {
        panic!("{tool}, {calls} calls: a panic escaped run_turn");
    };
    let outcome = turn.expect("cancelling is no error");
    assert_eq!(
        outcome.status,
        TurnStatus::Interrupted,
        "{tool}, {calls} calls"
    );
    // The interrupted batch is not committed.
    assert_eq!(conversation.len(), 1, "{tool}, {calls} calls");
}

/// A cancelled call drops its tool's future mid-flight: a panic there is
/// contained, alone or behind a middleware, whether the batch's one call
/// runs on the turn's own task or calls run on tasks of their own, and a
/// direct call's future dropped mid-flight contains it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_future_panicking_when_dropped_mid_flight_is_contained() {
    let tool = hand_written("stuck", pending_then_panics_on_drop);
    for bound in alone_and_behind_a_middleware(tool).await {
        for calls in [1, 2] {
            cancel_mid_flight(&bound, "stuck", calls, &PENDING_POLLED).await;
        }
        let direct = bound.invoke("stuck", serde_json::json!({}));
        let timed_out = tokio::time::timeout(std::time::Duration::from_millis(20), direct).await;
        assert!(timed_out.is_err(), "the call never ends by itself");
    }
}

/// The one-call batch of [`a_call_whose_task_died_gets_an_error_result_and_a_finished_event`]:
/// the call runs on the turn's own task, and a panic that escapes every
/// boundary of the call is caught there, as a task would catch it.
#[tokio::test]
async fn a_one_call_batch_whose_call_died_gets_an_error_result_and_a_finished_event() {
    let dies = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("dies", "Its call dies."),
        |_arguments: Value, _context| async move { panic_through_every_catch() },
    );
    let session = bind_tools([dies], ToolLimits::default()).await;
    let model = ScriptedModel::new([batch([call("c1", "dies", "{}")]), answer("ok")]);
    let mut conversation = user_says("go");
    let (events, mut receiver) = agent_loop::turn::TurnEvents::channel();

    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(session.run_turn(
        &model,
        &mut conversation,
        TurnOptions::builder().events(&events).build(),
    )))
    .await
    .expect("the call's panic must not escape run_turn")
    .expect("the turn completes");

    assert_eq!(outcome.answer(), Some("ok"));
    let died = result_for(&conversation, "c1");
    assert!(
        died.is_error && died.text().contains("was aborted"),
        "{died:?}"
    );
    assert_every_call_answered(&conversation);
    drop(events);
    let (started, finished) = started_and_finished(&mut receiver);
    assert_eq!(started, ["c1"]);
    assert_eq!(
        finished,
        [("c1".to_owned(), Some(ToolCallErrorKind::ToolPanicked))],
        "the started call finished once"
    );
}

/// Set when [`pending_then_panics_twice_on_drop`]'s future is first polled.
static TWICE_POLLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Never ready; panics in `drop` with a payload whose own drop panics
/// once more ([`PanicsOnDrop`]`(1)`): the payload a boundary catches must
/// be dropped under a boundary too.
fn pending_then_panics_twice_on_drop() -> ToolFuture {
    Box::pin(PendingThenPanicsOnDrop {
        polled: &TWICE_POLLED,
        panic: || std::panic::panic_any(PanicsOnDrop(1)),
    })
}

/// A tool future dropped mid-flight whose panic's payload panics again
/// when dropped: the batch's calls on tasks of their own contain it (the
/// task catches the second panic), so the one call run on the turn's own
/// task must too; `run_turn` returns `Interrupted` either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_future_whose_drop_panics_twice_mid_flight_is_contained() {
    let tool = hand_written("stuck_twice", pending_then_panics_twice_on_drop);
    for bound in alone_and_behind_a_middleware(tool).await {
        for calls in [2, 1] {
            cancel_mid_flight(&bound, "stuck_twice", calls, &TWICE_POLLED).await;
        }
    }
}

/// A middleware written by hand whose future never ends (it does not call
/// the tool) and panics when dropped: a [`PendingThenPanicsOnDrop`]
/// setting `.0`.
struct StuckMiddleware(&'static std::sync::atomic::AtomicBool);

impl ToolMiddleware for StuckMiddleware {
    fn handle<'s, 'n, 'f>(&'s self, _call: ToolInvocation, _next: Next<'n>) -> OutputFuture<'f>
    where
        's: 'f,
        'n: 'f,
        Self: 'f,
    {
        Box::pin(PendingThenPanicsOnDrop {
            polled: self.0,
            panic: || panic!("the middleware's future panicked while dropped mid-flight"),
        })
    }
}

/// Set when the turn's [`StuckMiddleware`] is first polled.
static MIDDLEWARE_POLLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A cancelled call drops its middleware's future mid-flight: a panic
/// there is contained whether the batch's calls run on tasks of their own
/// or its one call on the turn's own task (a middleware panic is one the
/// turn survives, as a tool's is).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_middleware_future_panicking_when_dropped_mid_flight_is_contained_in_a_turn() {
    let definition = Definition::builder()
        .name("stuck-middleware")
        .tool(echo_tool("echo"))
        .middleware(StuckMiddleware(&MIDDLEWARE_POLLED))
        .build()
        .validate()
        .expect("valid");
    let bound = bind(&definition).await;
    for calls in [2, 1] {
        cancel_mid_flight(&bound, "echo", calls, &MIDDLEWARE_POLLED).await;
    }
}

/// A direct call's future dropped mid-flight contains its middleware's
/// panic there, as it contains its tool's
/// ([`a_tool_future_panicking_when_dropped_mid_flight_is_contained`]).
#[tokio::test]
async fn a_middleware_future_panicking_when_a_direct_call_is_dropped_is_contained() {
    static POLLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let definition = Definition::builder()
        .name("stuck-middleware-direct")
        .tool(echo_tool("echo"))
        .middleware(StuckMiddleware(&POLLED))
        .build()
        .validate()
        .expect("valid");
    let bound = bind(&definition).await;
    // Polled once (pending), then dropped mid-flight.
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        futures::FutureExt::now_or_never(bound.invoke("echo", serde_json::json!({})))
    }));
    assert!(POLLED.load(Ordering::SeqCst), "the middleware ran");
    assert!(
        matches!(dropped, Ok(None)),
        "the middleware's panic escaped the dropped direct call"
    );
}
