//! `parallel` (DESIGN.md section 8.3): at most `parallel` calls of a batch
//! in flight, results in call order whatever order they finish in, every
//! call through the middleware chain.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::turn_common::*;
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::turn::ScriptedModel;
use agent_loop::{ToolLimits, tool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What the `slow_index` tool observed, and its gate.
struct Observed {
    in_flight: AtomicUsize,
    high_water: AtomicUsize,
    finish_order: Mutex<Vec<u64>>,
    /// Calls wait on entry until this many were in flight at once (or the
    /// deadline passes), so reaching the expected high-water mark does not
    /// depend on how fast a loaded machine schedules the tasks. A limiter
    /// that lets fewer through makes the test slow (until the deadline) and
    /// then fail, never hang.
    gate: usize,
    deadline: Instant,
}

impl Observed {
    fn gated_at(gate: usize) -> Arc<Self> {
        Arc::new(Self {
            in_flight: AtomicUsize::new(0),
            high_water: AtomicUsize::new(0),
            finish_order: Mutex::default(),
            gate,
            deadline: Instant::now() + Duration::from_secs(5),
        })
    }

    async fn wait_for_gate(&self) {
        while self.high_water.load(Ordering::SeqCst) < self.gate && Instant::now() < self.deadline {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Decrements the in-flight count however the call ends.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `slow_index(index)`: sleeps `base_ms + step_ms * (63 - index)` ms (later
/// calls sleep less, so they finish first) and returns its index.
fn slow_index_tool(observed: Arc<Observed>, base_ms: u64, step_ms: u64) -> tool::Definition {
    let info = tool::ToolInfo::new(
        "slow_index",
        "Sleeps, then returns its index.",
        json!({
            "type": "object",
            "properties": { "index": { "type": "integer", "minimum": 0, "maximum": 63 } },
            "required": ["index"]
        }),
    );
    tool::Definition::from_fn(info, move |arguments: Value, _context| {
        let observed = Arc::clone(&observed);
        async move {
            let index = arguments["index"].as_u64().expect("the schema requires it");
            let now = observed.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            let _in_flight = InFlight(&observed.in_flight);
            observed.high_water.fetch_max(now, Ordering::SeqCst);
            observed.wait_for_gate().await;
            let sleep = base_ms + step_ms * (63 - index);
            tokio::time::sleep(Duration::from_millis(sleep)).await;
            observed.finish_order.lock().unwrap().push(index);
            Ok::<_, tool::BoxError>(json!(index))
        }
    })
}

/// Counts the calls that pass through it.
struct CountCalls(Arc<AtomicUsize>);

#[async_trait::async_trait]
impl ToolMiddleware for CountCalls {
    async fn handle(
        &self,
        call: ToolInvocation,
        next: Next<'_>,
    ) -> Result<tool::ToolOutput, tool::BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        next.run(call).await
    }
}

fn index_batch(count: u64) -> ScriptedModel {
    ScriptedModel::new([
        batch((0..count).map(|i| {
            call(
                format!("call_{i}"),
                "slow_index",
                &format!(r#"{{"index": {i}}}"#),
            )
        })),
        answer("done"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_calls_with_parallel_eight_keep_eight_in_flight_and_call_order() {
    let observed = Observed::gated_at(8);
    let through_middleware = Arc::new(AtomicUsize::new(0));
    let definition = agent_loop::Definition::builder()
        .name("parallel")
        .tool(slow_index_tool(Arc::clone(&observed), 20, 2))
        .middleware(CountCalls(Arc::clone(&through_middleware)))
        .tool_limits(ToolLimits::new().parallel(8))
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = index_batch(64);
    let mut conversation = user_says("index everything");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(
        observed.high_water.load(Ordering::SeqCst),
        8,
        "parallel = 8 is reached and never exceeded"
    );
    assert_eq!(observed.in_flight.load(Ordering::SeqCst), 0);
    assert_eq!(through_middleware.load(Ordering::SeqCst), 64);

    let finish_order = observed.finish_order.lock().unwrap().clone();
    let call_order: Vec<u64> = (0..64).collect();
    let mut finished_sorted = finish_order.clone();
    finished_sorted.sort_unstable();
    assert_eq!(finished_sorted, call_order, "every call ran once");
    assert_ne!(
        finish_order, call_order,
        "later calls sleep less and finish first"
    );

    let results = tool_results(&conversation);
    let ids: Vec<&str> = results.iter().map(|r| r.tool_call_id.as_str()).collect();
    let expected_ids: Vec<String> = (0..64).map(|i| format!("call_{i}")).collect();
    assert_eq!(ids, expected_ids, "results come back in call order");
    let contents: Vec<String> = results.iter().map(|r| r.text()).collect();
    let expected_contents: Vec<String> = (0..64).map(|i| i.to_string()).collect();
    assert_eq!(contents, expected_contents);
    assert!(results.iter().all(|r| !r.is_error));

    let stats = &outcome.stats.iterations[0].calls;
    let stat_ids: Vec<&str> = stats.iter().map(|s| s.tool_call_id.as_str()).collect();
    assert_eq!(
        stat_ids, expected_ids,
        "call statistics are in call order too"
    );
    // The model's next request saw the results in call order.
    let second = &model.requests()[1].conversation;
    assert_eq!(tool_results(second).len(), 64);
    assert_eq!(tool_results(second)[0].tool_call_id, "call_0");
    assert_every_call_answered(&conversation);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_one_runs_the_calls_of_a_batch_one_at_a_time() {
    let observed = Observed::gated_at(1);
    let session = bind_tools(
        [slow_index_tool(Arc::clone(&observed), 1, 1)],
        ToolLimits::new().parallel(1),
    )
    .await;
    let mut conversation = user_says("one by one");

    let outcome = session
        .run_turn(
            &index_batch(6),
            &mut conversation,
            &CancellationToken::new(),
        )
        .await
        .expect("the turn completes");

    assert_eq!(observed.high_water.load(Ordering::SeqCst), 1);
    assert_eq!(observed.finish_order.lock().unwrap().len(), 6);
    let contents: Vec<String> = tool_results(outcome.messages(&conversation))
        .iter()
        .map(|r| r.text())
        .collect();
    assert_eq!(contents, ["0", "1", "2", "3", "4", "5"]);
    assert_every_call_answered(&conversation);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_smaller_than_parallel_runs_all_its_calls_at_once() {
    let observed = Observed::gated_at(3);
    let session = bind_tools(
        [slow_index_tool(Arc::clone(&observed), 1, 0)],
        ToolLimits::new().parallel(8),
    )
    .await;
    let mut conversation = user_says("three at once");

    session
        .run_turn(
            &index_batch(3),
            &mut conversation,
            &CancellationToken::new(),
        )
        .await
        .expect("the turn completes");

    assert_eq!(observed.high_water.load(Ordering::SeqCst), 3);
    assert_every_call_answered(&conversation);
}

/// `blocking(index)`: blocks its thread (no `.await`) until `want` calls are
/// inside at once, or 5 s pass; answers whether they met, and on which
/// thread it ran.
fn blocking_tool(inside: Arc<AtomicUsize>, want: usize) -> tool::Definition {
    let info = tool::ToolInfo::new(
        "blocking",
        "Blocks its thread until its siblings are running too.",
        json!({
            "type": "object",
            "properties": { "index": { "type": "integer" } },
            "required": ["index"]
        }),
    );
    tool::Definition::from_fn(info, move |_arguments: Value, _context| {
        let inside = Arc::clone(&inside);
        async move {
            inside.fetch_add(1, Ordering::SeqCst);
            let deadline = Instant::now() + Duration::from_secs(5);
            // A busy tool never yields: only another thread can run a
            // sibling while this one is in here.
            while inside.load(Ordering::SeqCst) < want && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            let met = inside.load(Ordering::SeqCst) >= want;
            let thread = format!("{:?}", std::thread::current().id());
            Ok::<_, tool::BoxError>(json!({ "met": met, "thread": thread }))
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_a_batch_run_truly_in_parallel_on_a_multi_thread_runtime() {
    // Two calls that each block their thread until the other one is
    // running: they can only meet if the runner puts them on two threads.
    // Polled one after the other on one task they would never meet.
    let inside = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [blocking_tool(Arc::clone(&inside), 2)],
        ToolLimits::new().parallel(2),
    )
    .await;
    let model = ScriptedModel::new([
        batch([
            call("b0", "blocking", r#"{"index": 0}"#),
            call("b1", "blocking", r#"{"index": 1}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("block twice");

    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    let outputs: Vec<Value> = ["b0", "b1"]
        .iter()
        .map(|id| serde_json::from_str(&result_for(&conversation, id).text()).unwrap())
        .collect();
    assert!(
        outputs.iter().all(|o| o["met"] == json!(true)),
        "both calls were running at the same time: {outputs:?}"
    );
    assert_ne!(
        outputs[0]["thread"], outputs[1]["thread"],
        "on two different threads"
    );
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn call_statistics_report_the_wall_time_of_each_call() {
    let sleepy = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("nap", "Sleeps 50 ms."),
        |_arguments: Value, _context| async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<_, tool::BoxError>(json!("rested"))
        },
    );
    let session = bind_tools([sleepy, echo_tool("echo")], ToolLimits::default()).await;
    let model = ScriptedModel::new([
        batch([
            call("nap", "nap", "{}"),
            call("echo", "echo", "{}"),
            call("unknown", "no_such_tool", "{}"),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("nap");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    let iteration = &outcome.stats.iterations[0];
    let calls = &iteration.calls;
    assert_eq!(calls.len(), 3);
    assert_eq!(
        (calls[0].tool_call_id.as_str(), calls[0].tool_name.as_str()),
        ("nap", "nap")
    );
    assert!(
        calls[0].duration >= Duration::from_millis(50),
        "the call's wall time covers its 50 ms sleep: {:?}",
        calls[0].duration
    );
    assert!(
        calls[1].duration < calls[0].duration,
        "each call is timed on its own: {:?} vs {:?}",
        calls[1].duration,
        calls[0].duration
    );
    assert_eq!(
        calls[2].duration,
        Duration::ZERO,
        "a call refused before running took no time"
    );
    assert!(iteration.batch_duration >= calls[0].duration);
    assert!(outcome.stats.duration >= iteration.batch_duration);
    assert_every_call_answered(&conversation);
}
