//! The soak: many sessions of one definition, bound at once, each running
//! turns against a model that asks for every kind of call that goes wrong,
//! while turns are cancelled at random points; then the counts that must
//! be zero.
//!
//! The example (`examples/soak`) runs it from the command line with a
//! counting allocator; `tests/soak.rs` runs it small.
//!
//! Each call of a scripted batch is one of [`CallKind`]: a valid call, an
//! unknown tool, arguments that are not JSON or fail the schema, a tool
//! that fails, panics, or stalls past the call timeout (a middleware cuts
//! it off, as a deployment would), or a reused id. A turn is cancelled
//! with probability [`CANCEL_PERCENT`] at a random moment within its first
//! [`CANCEL_WITHIN`]; the model takes a little time per request so that
//! the moment falls in a model request as well as in a batch.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{self, BoxError, CallContext, ToolInfo, ToolOutput};
use agent_loop::turn::{Model, ModelRequest, ScriptedModel, TurnError, TurnStatus};
use agent_loop::{Bindings, Definition, LoopId, SessionId, ToolLimits, Validated};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::turn_common;

/// The same sessions through the HTTP models and a faulty loopback server.
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
pub mod http;

/// How long a call may run before the timeout middleware ends it.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(20);
/// How long the `stall` tool would run: far past the timeout.
const STALL: Duration = Duration::from_secs(3600);
/// The chance, in percent, that a turn is cancelled.
pub const CANCEL_PERCENT: u32 = 15;
/// A cancelled turn is cancelled at a random moment within this time.
pub const CANCEL_WITHIN: Duration = Duration::from_millis(25);
/// The longest a model request takes (a random time up to it).
const MODEL_LATENCY: Duration = Duration::from_millis(2);
/// The `panic` tool's message: its start keeps these panics quiet.
const PANIC_MESSAGE: &str = "expected panic: the soak's panic tool";

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Sessions bound at once.
    pub sessions: usize,
    /// Turns each session runs, one after the other, on one conversation.
    pub turns: usize,
    /// The seed of every random choice: the same seed gives the same
    /// scripts and cancellation moments (which calls a cancellation finds
    /// running still depends on timing).
    pub seed: u64,
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct Report {
    pub turns: usize,
    /// Wall time from the first bind to the last turn's end.
    pub elapsed: Duration,
    pub turns_per_second: f64,
    /// Median and 99th percentile of one `run_turn`.
    pub p50: Duration,
    pub p99: Duration,
    /// How the turns ended.
    pub completed: usize,
    pub interrupted: usize,
    pub limit_reached: usize,
    pub failed: usize,
    /// Calls run, and how many of them were answered with an error result.
    pub calls: usize,
    pub error_results: usize,
    /// Conversations after a turn in which a call id has not exactly one
    /// result right after its batch, plus turns that refused their own
    /// conversation. Must be 0.
    pub violations: usize,
    /// Tokio tasks alive once every binding is dropped (the crate's tool
    /// tasks included). Must be 0.
    pub alive_tasks: usize,
    /// Tool futures not dropped once every binding is dropped. Must be 0.
    pub alive_tool_futures: usize,
    /// Bytes live (all allocations of the process) before binding and after
    /// every binding is dropped.
    pub live_before: isize,
    pub live_after: isize,
}

/// One call of a scripted batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CallKind {
    Valid,
    UnknownTool,
    BadJson,
    SchemaFailure,
    ToolFails,
    ToolPanics,
    ToolStalls,
    /// A valid call with the id `call_0`, which the runner gives a fresh
    /// one when the conversation already has it.
    ReusedId,
}

impl CallKind {
    const ALL: [CallKind; 8] = [
        CallKind::Valid,
        CallKind::UnknownTool,
        CallKind::BadJson,
        CallKind::SchemaFailure,
        CallKind::ToolFails,
        CallKind::ToolPanics,
        CallKind::ToolStalls,
        CallKind::ReusedId,
    ];

    /// Tool name and arguments.
    fn call(self) -> (&'static str, &'static str) {
        match self {
            CallKind::Valid | CallKind::ReusedId => ("lookup", r#"{"key": "a"}"#),
            CallKind::UnknownTool => ("lookup_v2", r#"{"key": "a"}"#),
            CallKind::BadJson => ("lookup", r#"{"key": "a"#),
            CallKind::SchemaFailure => ("lookup", r#"{"key": 7}"#),
            CallKind::ToolFails => ("fail", "{}"),
            CallKind::ToolPanics => ("panic", "{}"),
            CallKind::ToolStalls => ("stall", "{}"),
        }
    }
}

/// Counts the tool futures alive: each holds one while it exists.
static TOOL_FUTURES: AtomicUsize = AtomicUsize::new(0);

struct Alive;

impl Alive {
    fn new() -> Self {
        TOOL_FUTURES.fetch_add(1, Ordering::SeqCst);
        Alive
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        TOOL_FUTURES.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Ends a call that runs longer than [`CALL_TIMEOUT`] with an error: the
/// tool's future is dropped there.
struct CallTimeout;

#[async_trait]
impl ToolMiddleware for CallTimeout {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        tokio::time::timeout(CALL_TIMEOUT, next.run(call))
            .await
            .map_err(|_| format!("no answer within {} ms", CALL_TIMEOUT.as_millis()))?
    }
}

/// A model that replays a script, each request taking a little time.
///
/// Not the crate's [`ScriptedModel`]: that one records a copy of the whole
/// conversation at every request, for assertions, which over 20 turns is
/// most of what a soak would measure.
struct SlowScriptedModel {
    script: Mutex<VecDeque<ModelResponse>>,
    latency: Duration,
}

#[async_trait]
impl Model for SlowScriptedModel {
    async fn respond(
        &self,
        _request: ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        tokio::time::sleep(self.latency).await;
        let next = self
            .script
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop_front();
        next.ok_or_else(|| "the script has no response left".into())
    }
}

/// The tools of the soak's definition, each future counted by [`Alive`].
fn tools() -> Vec<tool::Definition> {
    let lookup = ToolInfo::new(
        "lookup",
        "Looks a key up.",
        json!({
            "type": "object",
            "properties": { "key": { "type": "string" } },
            "required": ["key"]
        }),
    );
    vec![
        tool::Definition::from_fn(lookup, |arguments: Value, _context| async move {
            let _alive = Alive::new();
            tokio::task::yield_now().await;
            Ok::<_, BoxError>(json!({ "key": arguments["key"], "value": 42 }))
        }),
        tool::Definition::from_fn(
            ToolInfo::without_parameters("fail", "Always fails."),
            |_arguments: Value, _context| async move {
                let _alive = Alive::new();
                Err::<Value, BoxError>("the backend said no".into())
            },
        ),
        tool::Definition::from_fn(
            ToolInfo::without_parameters("panic", "Always panics."),
            |_arguments: Value, _context| async move {
                let _alive = Alive::new();
                if true {
                    panic!("{PANIC_MESSAGE}");
                }
                Ok::<_, BoxError>(Value::Null)
            },
        ),
        tool::Definition::from_fn(
            ToolInfo::without_parameters("stall", "Takes an hour."),
            |_arguments: Value, _context: CallContext| async move {
                let _alive = Alive::new();
                tokio::time::sleep(STALL).await;
                Ok::<_, BoxError>(json!("finally"))
            },
        ),
    ]
}

/// The soak's definition: the tools, the call timeout, room for the
/// longest script.
pub fn definition() -> Definition<Validated> {
    Definition::builder()
        .name("soak")
        .tools(tools())
        .middleware(CallTimeout)
        .tool_limits(ToolLimits::new().iterations(8).calls(64).parallel(4))
        .build()
        .validate()
        .expect("the soak's definition is valid")
}

/// One turn's script: up to 3 batches of 1 to 4 calls, then an answer.
fn script(random: &mut fastrand::Rng, turn: usize) -> Vec<ModelResponse> {
    let mut script: Vec<ModelResponse> = (0..random.usize(0..=3))
        .map(|batch| {
            ModelResponse::tool_calls((0..random.usize(1..=4)).map(|i| {
                let kind = CallKind::ALL[random.usize(..CallKind::ALL.len())];
                let (name, arguments) = kind.call();
                let id = match kind {
                    CallKind::ReusedId => "call_0".to_owned(),
                    _ => format!("call_{turn}_{batch}_{i}"),
                };
                ToolCall::new(id, name, arguments)
            }))
        })
        .collect();
    script.push(ModelResponse::answer("Done."));
    script
}

/// What one session saw.
#[derive(Default)]
struct SessionReport {
    durations: Vec<Duration>,
    completed: usize,
    interrupted: usize,
    limit_reached: usize,
    failed: usize,
    calls: usize,
    error_results: usize,
    violations: usize,
}

/// Binds one session and runs its turns.
async fn session(
    definition: Arc<Definition<Validated>>,
    settings: Settings,
    index: usize,
) -> SessionReport {
    let mut random = fastrand::Rng::with_seed(
        settings.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    let mut report = SessionReport::default();
    let bound = match definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
    {
        Ok(bound) => bound,
        Err(error) => {
            eprintln!("soak: session {index} did not bind: {error}");
            report.failed = settings.turns;
            return report;
        }
    };
    let mut conversation = vec![Message::system("You are a soak test.")];
    for turn in 0..settings.turns {
        conversation.push(Message::user(format!("Turn {turn}.")));
        let model = SlowScriptedModel {
            script: Mutex::new(script(&mut random, turn).into()),
            latency: MODEL_LATENCY.mul_f64(random.f64()),
        };
        let cancellation = CancellationToken::new();
        let canceller = (random.u32(..100) < CANCEL_PERCENT).then(|| {
            let cancellation = cancellation.clone();
            let after = CANCEL_WITHIN.mul_f64(random.f64());
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                cancellation.cancel();
            })
        });
        let started = Instant::now();
        let result = bound
            .run_turn(&model, &mut conversation, &cancellation)
            .await;
        report.durations.push(started.elapsed());
        if let Some(canceller) = canceller {
            canceller.abort();
            // Awaited, so that it is gone when the tasks are counted.
            let _ = canceller.await;
        }
        match result {
            Ok(outcome) => {
                match outcome.status {
                    TurnStatus::Interrupted => report.interrupted += 1,
                    _ => report.completed += 1,
                }
                for iteration in &outcome.stats.iterations {
                    report.calls += iteration.calls.len();
                    report.error_results += iteration
                        .calls
                        .iter()
                        .filter(|call| call.error.is_some())
                        .count();
                }
            }
            Err(TurnError::ToolLimit(_)) => report.limit_reached += 1,
            // The turn refused its own conversation: the invariant broke in
            // an earlier turn.
            Err(TurnError::Conversation(_)) => report.violations += 1,
            Err(error) => {
                eprintln!("soak: session {index} turn {turn} failed: {error}");
                report.failed += 1;
            }
        }
        if let Err(problem) = turn_common::check_every_call_answered(&conversation) {
            eprintln!("soak: session {index} turn {turn}: {problem}");
            report.violations += 1;
        }
    }
    report
}

/// One session of two turns: one batch of every kind of call, then a turn
/// cancelled in its batch.
async fn warm_up(definition: &Definition<Validated>) {
    let bound = definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .expect("the soak's definition binds");
    let every_kind = CallKind::ALL.iter().enumerate().map(|(i, kind)| {
        let (name, arguments) = kind.call();
        ToolCall::new(format!("warm_{i}"), name, arguments)
    });
    let stalled = [ToolCall::new("warm_stall", "stall", "{}")];
    let mut conversation = vec![Message::user("Warm up.")];
    for (batch, cancel) in [
        (ModelResponse::tool_calls(every_kind), false),
        (ModelResponse::tool_calls(stalled), true),
    ] {
        let model = ScriptedModel::new([batch, ModelResponse::answer("Done.")]);
        let cancellation = CancellationToken::new();
        if cancel {
            let cancellation = cancellation.clone();
            tokio::spawn(async move { cancellation.cancel() });
        }
        let _ = bound
            .run_turn(&model, &mut conversation, &cancellation)
            .await;
    }
}

/// The runtime's count of alive tasks once it settles: a task that just
/// finished is counted until its worker releases it, a moment later, so
/// the count is read until it is 0 or a second has passed.
async fn settled_task_count() -> usize {
    let metrics = tokio::runtime::Handle::current().metrics();
    let deadline = Instant::now() + Duration::from_secs(1);
    while metrics.num_alive_tasks() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    metrics.num_alive_tasks()
}

/// The duration at `percent` of the sorted `durations` (nearest rank).
fn percentile(sorted: &[Duration], percent: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// Runs the soak on a multi-thread runtime of its own; `live_bytes` reads
/// the process's live heap bytes (a counting global allocator's count).
pub fn run(settings: Settings, live_bytes: fn() -> isize) -> Report {
    turn_common::quiet_expected_panics();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime builds");
    let definition = Arc::new(definition());
    // What the first turns allocate once and keep (the definition's
    // checked schemas, shared by every later binding; the runtime's and
    // `tracing`'s statics) is not growth: a warm-up session pays it first.
    runtime.block_on(warm_up(&definition));
    let live_before = live_bytes();

    let started = Instant::now();
    let sessions: Vec<SessionReport> = runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for index in 0..settings.sessions {
            tasks.spawn(session(Arc::clone(&definition), settings, index));
        }
        let mut sessions = Vec::with_capacity(settings.sessions);
        while let Some(joined) = tasks.join_next().await {
            sessions.push(joined.expect("a session task neither panics nor is aborted"));
        }
        sessions
    });
    let elapsed = started.elapsed();

    // Every binding is dropped by now (each lived in its session's task).
    let alive_tasks = runtime.block_on(settled_task_count());
    let alive_tool_futures = TOOL_FUTURES.load(Ordering::SeqCst);

    let mut report = Report {
        turns: 0,
        elapsed,
        turns_per_second: 0.0,
        p50: Duration::ZERO,
        p99: Duration::ZERO,
        completed: 0,
        interrupted: 0,
        limit_reached: 0,
        failed: 0,
        calls: 0,
        error_results: 0,
        violations: 0,
        alive_tasks,
        alive_tool_futures,
        live_before,
        live_after: 0,
    };
    let mut durations = Vec::new();
    for session in sessions {
        durations.extend(session.durations);
        report.completed += session.completed;
        report.interrupted += session.interrupted;
        report.limit_reached += session.limit_reached;
        report.failed += session.failed;
        report.calls += session.calls;
        report.error_results += session.error_results;
        report.violations += session.violations;
    }
    durations.sort_unstable();
    report.turns = durations.len();
    report.turns_per_second = report.turns as f64 / elapsed.as_secs_f64();
    report.p50 = percentile(&durations, 50);
    report.p99 = percentile(&durations, 99);
    drop(durations);
    report.live_after = live_bytes();
    drop(runtime);
    report
}
