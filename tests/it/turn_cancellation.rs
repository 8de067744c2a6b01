//! Cancellation (DESIGN.md section 8.6): the turn returns interrupted
//! promptly, in-flight tool futures are dropped (their drop code runs),
//! queued calls never start, and the interrupted batch is not committed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::turn_common::*;
use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::tool::BoxError;
use agent_loop::turn::{Model, ModelRequest, ScriptedModel, TurnStatus};
use agent_loop::{ToolLimits, tool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Counts how many `sleepy` calls started and how many of their futures
/// were dropped.
#[derive(Default)]
struct Counters {
    started: AtomicUsize,
    dropped: AtomicUsize,
}

/// Increments `dropped` when the tool's future is dropped, finished or not.
struct DropGuard(Arc<Counters>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// `sleepy`: sleeps 10 s without watching the cancellation token, so only
/// dropping its future can stop it.
fn sleepy_tool(counters: Arc<Counters>) -> tool::Definition {
    tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("sleepy", "Sleeps ten seconds."),
        move |_arguments: Value, _context| {
            let counters = Arc::clone(&counters);
            async move {
                let _guard = DropGuard(Arc::clone(&counters));
                counters.started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(10)).await;
                Ok::<_, BoxError>(json!("woke up"))
            }
        },
    )
}

/// Cancels `token` once `count` calls have started (or after 5 s, so a
/// broken runner fails the test instead of hanging it).
fn cancel_when_started(counters: Arc<Counters>, count: usize, token: CancellationToken) {
    tokio::spawn(async move {
        let deadline = Instant::now() + Duration::from_secs(5);
        while counters.started.load(Ordering::SeqCst) < count && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        token.cancel();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_during_a_batch_interrupts_promptly_and_drops_the_running_calls() {
    let counters = Arc::new(Counters::default());
    let pings = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [
            sleepy_tool(Arc::clone(&counters)),
            counting_tool("ping", Arc::clone(&pings)),
        ],
        ToolLimits::new().parallel(2),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("p1", "ping", "{}")]),
        batch((0..6).map(|i| call(format!("s{i}"), "sleepy", "{}"))),
        answer("never reached"),
    ]);
    let mut conversation = user_says("sleep on it");
    let cancellation = CancellationToken::new();
    cancel_when_started(Arc::clone(&counters), 2, cancellation.clone());

    let started = Instant::now();
    let outcome = session
        .run_turn(&model, &mut conversation, &cancellation)
        .await
        .expect("cancellation is not an error");
    let elapsed = started.elapsed();

    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert_eq!(outcome.answer(), None);
    assert!(
        elapsed < Duration::from_secs(2),
        "returned after {elapsed:?}, not after the tools' 10 s"
    );
    assert_eq!(counters.started.load(Ordering::SeqCst), 2, "parallel = 2");
    assert_eq!(
        counters.dropped.load(Ordering::SeqCst),
        2,
        "both running futures were dropped before run_turn returned"
    );
    // Queued calls never start, even later.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(counters.started.load(Ordering::SeqCst), 2);
    assert_eq!(counters.dropped.load(Ordering::SeqCst), 2);

    // The first batch stays committed; the interrupted one is not there.
    assert_eq!(pings.load(Ordering::SeqCst), 1);
    assert_eq!(conversation.len(), 3, "{conversation:#?}");
    assert_eq!(result_for(&conversation, "p1").text(), "ok");
    assert!(tool_calls(&conversation).iter().all(|c| c.name != "sleepy"));
    assert_eq!(outcome.messages(&conversation), &conversation[1..]);
    assert_eq!(
        outcome.stats.iteration_count(),
        1,
        "the interrupted batch is not counted"
    );
    assert_eq!(model.remaining(), 1, "the model was not asked again");
    assert_every_call_answered(&conversation);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_sees_the_turn_cancellation_in_its_context() {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let started = Arc::new(Counters::default());
    let watcher = {
        let saw_cancel = Arc::clone(&saw_cancel);
        let started = Arc::clone(&started);
        tool::Definition::from_fn(
            tool::ToolInfo::without_parameters("watcher", "Waits for cancellation."),
            move |_arguments: Value, context: tool::CallContext| {
                let saw_cancel = Arc::clone(&saw_cancel);
                let started = Arc::clone(&started);
                async move {
                    // A detached task outlives the dropped tool future and
                    // reports whether the context's token fired.
                    let token = context.cancellation().clone();
                    tokio::spawn(async move {
                        token.cancelled().await;
                        saw_cancel.store(true, Ordering::SeqCst);
                    });
                    started.started.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    Ok::<_, BoxError>(Value::Null)
                }
            },
        )
    };
    let session = bind_tools([watcher], ToolLimits::default()).await;
    let model = ScriptedModel::new([batch([call("w1", "watcher", "{}")]), answer("no")]);
    let mut conversation = user_says("watch");
    let cancellation = CancellationToken::new();
    cancel_when_started(Arc::clone(&started), 1, cancellation.clone());

    let outcome = session
        .run_turn(&model, &mut conversation, &cancellation)
        .await
        .unwrap();

    assert_eq!(outcome.status, TurnStatus::Interrupted);
    let deadline = Instant::now() + Duration::from_secs(5);
    while !saw_cancel.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        saw_cancel.load(Ordering::SeqCst),
        "the context carries the turn's token"
    );
    assert_eq!(conversation, user_says("watch"));
}

/// A model that takes 10 s to answer.
struct SlowModel;

#[async_trait::async_trait]
impl Model for SlowModel {
    async fn respond(
        &self,
        _request: ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(ModelResponse::answer("too late"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_while_the_model_thinks_interrupts_promptly() {
    let session = bind_tools([echo_tool("echo")], ToolLimits::default()).await;
    let mut conversation = user_says("think hard");
    let cancellation = CancellationToken::new();
    let canceller = cancellation.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceller.cancel();
    });

    let started = Instant::now();
    let outcome = session
        .run_turn(&SlowModel, &mut conversation, &cancellation)
        .await
        .unwrap();

    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(conversation, user_says("think hard"));
    assert!(outcome.messages(&conversation).is_empty());
}

#[tokio::test]
async fn a_turn_started_with_a_cancelled_token_runs_nothing() {
    let pings = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("ping", Arc::clone(&pings))],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([batch([call("p1", "ping", "{}")]), answer("done")]);
    let mut conversation = user_says("too late");
    let cancellation = CancellationToken::new();
    cancellation.cancel();

    let outcome = session
        .run_turn(&model, &mut conversation, &cancellation)
        .await
        .unwrap();

    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert_eq!(pings.load(Ordering::SeqCst), 0);
    assert_eq!(conversation, vec![Message::user("too late")]);
    assert_eq!(outcome.stats.iteration_count(), 0);
}

/// Waits until `count` calls have started (at most 5 s).
async fn started(counters: &Counters, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while counters.started.load(Ordering::SeqCst) < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_turn_mid_batch_stops_the_running_calls_and_starts_no_queued_one() {
    // Dropping the future (a timeout, a `select!`, a closed connection) is
    // the other way a turn ends early. The queued calls must not start when
    // the running ones release their slots on the way out. Several rounds,
    // because the window is a race between worker threads.
    for round in 0..20 {
        let counters = Arc::new(Counters::default());
        let session = bind_tools(
            [sleepy_tool(Arc::clone(&counters))],
            ToolLimits::new().parallel(1),
        )
        .await;
        let model = ScriptedModel::new([
            batch((0..16).map(|i| call(format!("s{i}"), "sleepy", "{}"))),
            answer("never"),
        ]);
        let mut conversation = user_says("sleep");
        let cancellation = CancellationToken::new();
        tokio::select! {
            _ = session.run_turn(&model, &mut conversation, &cancellation) => {
                panic!("round {round}: the turn cannot finish before its tools");
            }
            () = started(&counters, 1) => {}
        }
        // The turn future is dropped here, which closes the queued calls'
        // gate and then aborts every task. The running call gives its slot
        // back only when its future is dropped, so once that drop is seen,
        // any queued call that takes the slot finds the gate closed: a
        // started count still at 1 then stays 1.
        let deadline = Instant::now() + Duration::from_secs(5);
        while counters.dropped.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(counters.dropped.load(Ordering::SeqCst), 1, "round {round}");
        assert_eq!(
            counters.started.load(Ordering::SeqCst),
            1,
            "round {round}: a queued call started after the turn was dropped"
        );
    }
}

/// Cancels the turn's token, then answers with calls of tools that do not
/// exist: a batch that runs nothing.
struct CancelsThenAsks(CancellationToken);

#[async_trait::async_trait]
impl Model for CancelsThenAsks {
    async fn respond(
        &self,
        _request: ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        self.0.cancel();
        Ok(batch([call("call_1", "no_such_tool", "{}")]))
    }
}

#[tokio::test]
async fn a_batch_of_refused_calls_is_not_committed_once_the_turn_is_cancelled() {
    let session = bind_tools([echo_tool("echo")], ToolLimits::default()).await;
    let cancellation = CancellationToken::new();
    let mut conversation = user_says("go");
    let outcome = session
        .run_turn(
            &CancelsThenAsks(cancellation.clone()),
            &mut conversation,
            &cancellation,
        )
        .await
        .unwrap();
    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert_eq!(conversation, user_says("go"), "the batch was not appended");
    assert!(outcome.stats.iterations.is_empty());
}

/// A batch with one call runs it on the turn's own task: cancelling drops
/// its future before `run_turn` returns, promptly, and the batch is not
/// committed, as for a batch whose calls run on tasks of their own
/// ([`cancelling_during_a_batch_interrupts_promptly_and_drops_the_running_calls`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_one_call_batch_drops_its_call_before_returning() {
    let counters = Arc::new(Counters::default());
    let session = bind_tools([sleepy_tool(Arc::clone(&counters))], ToolLimits::default()).await;
    let model = ScriptedModel::new([batch([call("s0", "sleepy", "{}")]), answer("never")]);
    let mut conversation = user_says("sleep on it");
    let cancellation = CancellationToken::new();
    cancel_when_started(Arc::clone(&counters), 1, cancellation.clone());

    let started = Instant::now();
    let outcome = session
        .run_turn(&model, &mut conversation, &cancellation)
        .await
        .expect("cancellation is not an error");

    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(counters.started.load(Ordering::SeqCst), 1);
    assert_eq!(
        counters.dropped.load(Ordering::SeqCst),
        1,
        "the running future was dropped before run_turn returned"
    );
    assert_eq!(conversation, user_says("sleep on it"), "not committed");
    assert!(outcome.stats.iterations.is_empty());
    assert_eq!(model.remaining(), 1, "the model was not asked again");
}

/// `stopper`: waits for the turn's token, then answers: a tool that stops
/// cooperatively. It ends because the token fired, so the turn is
/// interrupted all the same, whether the batch's one call runs on the
/// turn's own task or its calls on tasks of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_tool_ends_when_the_token_fires_is_not_committed() {
    for calls in [1, 2] {
        let counters = Arc::new(Counters::default());
        let stopper = {
            let counters = Arc::clone(&counters);
            tool::Definition::from_fn(
                tool::ToolInfo::without_parameters("stopper", "Stops when cancelled."),
                move |_arguments: Value, context: tool::CallContext| {
                    let counters = Arc::clone(&counters);
                    async move {
                        counters.started.fetch_add(1, Ordering::SeqCst);
                        context.cancellation().cancelled().await;
                        Ok::<_, BoxError>(json!("stopped"))
                    }
                },
            )
        };
        let session = bind_tools([stopper], ToolLimits::default()).await;
        let ids = ["t1", "t2"];
        let model = ScriptedModel::new([
            batch(ids[..calls].iter().map(|&id| call(id, "stopper", "{}"))),
            answer("never"),
        ]);
        let mut conversation = user_says("stop");
        let cancellation = CancellationToken::new();
        cancel_when_started(Arc::clone(&counters), calls, cancellation.clone());

        let outcome = session
            .run_turn(&model, &mut conversation, &cancellation)
            .await
            .expect("cancellation is not an error");

        assert_eq!(outcome.status, TurnStatus::Interrupted, "{calls} calls");
        assert_eq!(
            conversation,
            user_says("stop"),
            "{calls} calls: not committed"
        );
        assert_eq!(model.remaining(), 1, "{calls} calls");
    }
}

/// `quit`: cancels its turn through its context's token and answers at
/// once (a "stop the session" tool). The token fired while the batch ran,
/// so the batch is interrupted and not committed, whether its one call
/// runs on the turn's own task or its calls on tasks of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_whose_tool_cancels_the_turn_is_not_committed() {
    for calls in [2, 1] {
        let quit = tool::Definition::from_fn(
            tool::ToolInfo::without_parameters("quit", "Ends the session."),
            |_arguments: Value, context: tool::CallContext| async move {
                context.cancellation().cancel();
                Ok::<_, BoxError>(json!("quitting"))
            },
        );
        let session = bind_tools([quit], ToolLimits::default()).await;
        let ids = ["q1", "q2"];
        let model = ScriptedModel::new([
            batch(ids[..calls].iter().map(|&id| call(id, "quit", "{}"))),
            answer("never"),
        ]);
        let mut conversation = user_says("quit");
        let cancellation = CancellationToken::new();

        let outcome = session
            .run_turn(&model, &mut conversation, &cancellation)
            .await
            .expect("cancellation is not an error");

        assert_eq!(outcome.status, TurnStatus::Interrupted, "{calls} calls");
        assert_eq!(
            conversation,
            user_says("quit"),
            "{calls} calls: the interrupted batch was committed"
        );
        assert!(outcome.stats.iterations.is_empty(), "{calls} calls");
    }
}
