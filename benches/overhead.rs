//! What agent-loop costs over the code a user would write by hand, as
//! ratios measured in the same run:
//!
//! | benchmark (`ratio` line) | measured side | baseline |
//! | --- | --- | --- |
//! | `dispatch/registry` (`registry_vs_direct`) | a hand-written `HashMap` registry that checks the schema | the tool's async function called directly |
//! | `dispatch/bound` (`dispatch_vs_direct`) | `bound.invoke(name, arguments)`: lookup, schema check, context, tool | the direct call |
//! | `dispatch/bound_vs_registry` (`dispatch_vs_registry`) | `bound.invoke(name, arguments)` | the registry: the same work by hand |
//! | `dispatch/3_middlewares` (`middlewares3_vs_direct`) | the same through 3 pass-through middlewares | the direct call |
//! | `dispatch/3_middlewares_vs_chain` (`middlewares3_vs_chain`) | the same | the registry through 3 hand-written boxed async layers |
//! | `turn/turn_one_call` (`turn_one_call`) | a whole turn with a `ScriptedModel`: one call, then the answer | a hand-written loop asking the same model and calling through the registry |
//! | `request_build/request_build_long` (`request_build_long`) | the OpenAI Chat Completions body of the next request of a 1,000-message conversation (about 2 MB), as `OpenAiModel` builds and serialises it (feature `openai`) | `serde_json::to_vec` of that body held as a `Value` |
//! | `batch/batch_sleep` (`batch_sleep`) | a whole turn of 64 calls that each sleep 1 ms, 8 at once | a hand-written `Semaphore` + `JoinSet` runner |
//! | `batch/batch_instant` (`batch_instant`) | a whole turn of 64 instant calls, 8 at once | the same hand-written runner |
//! | `bind/factory` (`bind_factory`) | bind 100 factory-built tools used by the base and 5 modes | the 100 factories called into a `HashMap` |
//! | `bind/from_fn` (`bind_from_fn`) | the same with `tool::Definition::from_fn` tools | the same tools built into a `HashMap` |
//!
//! Every call starts from the model's arguments text, so each side parses
//! it. `cargo bench --bench overhead` prints the medians and ratios at the
//! end, then each ratio (the median of the per-sample ratios) as a line
//! `ratio <name> <value>` for scripts; under `cargo test --all-targets` each benchmark runs once, as a
//! smoke test, and no ratio is printed.

mod common;
use agent_loop_test::compare;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::hint::black_box;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_loop::conversation::{Message, ModelResponse, ToolCall, ToolResult};
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{self, BoxError, CallContext, Tool, ToolInfo, ToolOutput};
use agent_loop::turn::{Model, ModelRequest, ScriptedModel};
use agent_loop::{Bindings, Bound, Definition, Limit, LoopId, Mode, SessionId, ToolLimits};
use async_trait::async_trait;
use common::parameters;
use compare::{Row, runtime};
use criterion::{Criterion, criterion_group};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

const ARGUMENTS: &str = r#"{"city": "Paris", "days": 3}"#;

/// The tool's own work: what a direct call costs.
async fn forecast(arguments: Value) -> Result<Value, BoxError> {
    let days = arguments.get("days").and_then(Value::as_i64).unwrap_or(1);
    Ok(Value::from(days * 2))
}

/// `n` `from_fn` tools named `tool_{i}` running [`forecast`].
fn forecast_tools(n: usize) -> Vec<tool::Definition> {
    (0..n)
        .map(|i| {
            tool::Definition::from_fn(
                ToolInfo::new(format!("tool_{i}"), "Weather forecast.", parameters()),
                |arguments: Value, _context| forecast(arguments),
            )
        })
        .collect()
}

/// A middleware that only passes the call on.
struct PassThrough;

#[async_trait]
impl ToolMiddleware for PassThrough {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        next.run(call).await
    }
}

async fn bind_definition(definition: Definition<agent_loop::Validated>) -> Definition<Bound> {
    definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .expect("binds")
}

type Handler = Box<
    dyn Fn(Value) -> Pin<Box<dyn Future<Output = Result<Value, BoxError>> + Send>> + Send + Sync,
>;

/// What a user writes without the library: a map from name to a compiled
/// schema and a handler.
struct Registry {
    tools: HashMap<String, (jsonschema::Validator, Handler)>,
}

impl Registry {
    fn new(n: usize) -> Self {
        let validator = || jsonschema::validator_for(&parameters()).expect("compiles");
        let tools = (0..n)
            .map(|i| {
                let handler: Handler = Box::new(|arguments| Box::pin(forecast(arguments)));
                (format!("tool_{i}"), (validator(), handler))
            })
            .collect();
        Self { tools }
    }

    async fn call(&self, name: &str, arguments: &str) -> Result<Value, BoxError> {
        let (validator, handler) = self.tools.get(name).ok_or("unknown tool")?;
        let arguments: Value = serde_json::from_str(arguments)?;
        if !validator.is_valid(&arguments) {
            return Err("invalid arguments".into());
        }
        handler(arguments).await
    }
}

/// One hand-written middleware: the call, and the rest of the chain.
#[async_trait]
trait Layer: Send + Sync {
    async fn handle(
        &self,
        name: &str,
        arguments: Value,
        next: LayerNext<'_>,
    ) -> Result<Value, BoxError>;
}

/// The rest of a hand-written chain: the layers left, then the handler.
struct LayerNext<'a> {
    layers: &'a [Box<dyn Layer>],
    handler: &'a Handler,
}

impl LayerNext<'_> {
    async fn run(self, name: &str, arguments: Value) -> Result<Value, BoxError> {
        match self.layers.split_first() {
            Some((layer, layers)) => {
                let next = LayerNext {
                    layers,
                    handler: self.handler,
                };
                layer.handle(name, arguments, next).await
            }
            None => (self.handler)(arguments).await,
        }
    }
}

/// A hand-written layer that only passes the call on.
struct PassOn;

#[async_trait]
impl Layer for PassOn {
    async fn handle(
        &self,
        name: &str,
        arguments: Value,
        next: LayerNext<'_>,
    ) -> Result<Value, BoxError> {
        next.run(name, arguments).await
    }
}

/// The registry with a chain of boxed async layers between the schema
/// check and the handler, as a user writes middleware by hand.
struct Chain {
    registry: Registry,
    layers: Vec<Box<dyn Layer>>,
}

impl Chain {
    async fn call(&self, name: &str, arguments: &str) -> Result<Value, BoxError> {
        let (validator, handler) = self.registry.tools.get(name).ok_or("unknown tool")?;
        let arguments: Value = serde_json::from_str(arguments)?;
        if !validator.is_valid(&arguments) {
            return Err("invalid arguments".into());
        }
        let next = LayerNext {
            layers: &self.layers,
            handler,
        };
        next.run(name, arguments).await
    }
}

/// The hand-written turn of one call at a time: ask the model, call each
/// tool through the registry, append the results, ask again.
async fn hand_written_sequential_turn(
    registry: &Registry,
    model: &ScriptedModel,
    tools: &[ToolInfo],
    conversation: &mut Vec<Message>,
) -> String {
    loop {
        let request = ModelRequest::new(conversation).tools(tools);
        let response = model.respond(request).await.expect("scripted");
        let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
        if calls.is_empty() {
            let answer = response.message.text();
            conversation.push(Message::Assistant(response.message));
            return answer;
        }
        conversation.push(Message::Assistant(response.message));
        for call in calls {
            let result = match registry.call(&call.name, &call.arguments).await {
                Ok(Value::String(text)) => ToolResult::ok(call.id, text),
                Ok(other) => ToolResult::ok(call.id, other.to_string()),
                Err(error) => ToolResult::error(call.id, error.to_string()),
            };
            conversation.push(Message::Tool(result));
        }
    }
}

fn dispatch(c: &mut Criterion) {
    let runtime = runtime();
    let plain = runtime.block_on(bind_definition(
        Definition::builder()
            .name("dispatch")
            .tools(forecast_tools(10))
            .build()
            .validate()
            .expect("valid"),
    ));
    let layered = runtime.block_on(bind_definition(
        Definition::builder()
            .name("dispatch")
            .tools(forecast_tools(10))
            .middleware(PassThrough)
            .middleware(PassThrough)
            .middleware(PassThrough)
            .build()
            .validate()
            .expect("valid"),
    ));
    let registry = Registry::new(10);
    let chain = Chain {
        registry: Registry::new(10),
        layers: vec![Box::new(PassOn), Box::new(PassOn), Box::new(PassOn)],
    };
    let mut group = c.benchmark_group("dispatch");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let direct = |arguments: &str| {
        let arguments: Value = serde_json::from_str(black_box(arguments)).expect("json");
        forecast(arguments)
    };
    let bound = |bound: &'static Definition<Bound>| {
        move |arguments: &str| {
            let arguments: Value = serde_json::from_str(black_box(arguments)).expect("json");
            bound.invoke(black_box("tool_7"), arguments)
        }
    };
    let (plain, layered) = (
        bound(Box::leak(Box::new(plain))),
        bound(Box::leak(Box::new(layered))),
    );
    compare!(
        group,
        runtime,
        "dispatch/registry",
        || ARGUMENTS,
        |arguments| direct(arguments),
        |arguments| registry.call(black_box("tool_7"), arguments)
    );
    compare!(
        group,
        runtime,
        "dispatch/bound",
        || ARGUMENTS,
        |arguments| direct(arguments),
        |arguments| plain(arguments)
    );
    compare!(
        group,
        runtime,
        "dispatch/bound_vs_registry",
        || ARGUMENTS,
        |arguments| registry.call(black_box("tool_7"), arguments),
        |arguments| plain(arguments)
    );
    compare!(
        group,
        runtime,
        "dispatch/3_middlewares",
        || ARGUMENTS,
        |arguments| direct(arguments),
        |arguments| layered(arguments)
    );
    compare!(
        group,
        runtime,
        "dispatch/3_middlewares_vs_chain",
        || ARGUMENTS,
        |arguments| chain.call(black_box("tool_7"), arguments),
        |arguments| layered(arguments)
    );
    group.finish();
}

fn turn_one_call(c: &mut Criterion) {
    let runtime = runtime();
    let tools = forecast_tools(10);
    let infos: Vec<ToolInfo> = (0..10)
        .map(|i| ToolInfo::new(format!("tool_{i}"), "Weather forecast.", parameters()))
        .collect();
    let bound = runtime.block_on(bind_definition(
        Definition::builder()
            .name("turn")
            .tools(tools)
            .build()
            .validate()
            .expect("valid"),
    ));
    let registry = Registry::new(10);
    let mut group = c.benchmark_group("turn");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let (bound, registry, infos) = (&bound, &registry, &infos);
    let cancellation = CancellationToken::new();
    let one_call = || {
        ScriptedModel::new([
            ModelResponse::tool_calls([ToolCall::new("call_0", "tool_7", ARGUMENTS)]),
            ModelResponse::answer("done"),
        ])
    };
    let hand_written = |model: ScriptedModel| async move {
        let mut conversation = vec![Message::user("go")];
        hand_written_sequential_turn(registry, &model, infos, &mut conversation).await
    };
    let turn = |model: ScriptedModel| {
        let cancellation = &cancellation;
        async move {
            let mut conversation = vec![Message::user("go")];
            bound
                .run_turn(&model, &mut conversation, cancellation)
                .await
                .expect("completes")
        }
    };
    compare!(
        group,
        runtime,
        "turn_one_call",
        one_call,
        |model| hand_written(model),
        |model| turn(model)
    );
    group.finish();
}

/// `request_build_long`: the body of the next request of a long
/// conversation, as `OpenAiModel` builds it and serialises it into the
/// bytes it posts (`request_body_bytes`, what a request sends, its checks
/// included), against `serde_json::to_vec` of the same body held as a
/// `Value`. Needs the `openai` feature (`cargo bench --all-features`).
#[cfg(feature = "openai")]
fn request_build(c: &mut Criterion) {
    use agent_loop::model::OpenAiModel;

    let runtime = runtime();
    let conversation = common::long_conversation();
    let tools: Vec<ToolInfo> = (0..10)
        .map(|i| ToolInfo::new(format!("tool_{i}"), "Weather forecast.", parameters()))
        .collect();
    let model = OpenAiModel::new("gpt-4.1");
    let request = ModelRequest::new(&conversation).tools(&tools[..]);
    let body = |request: &ModelRequest<'_>| model.request_body_bytes(request).expect("a body");
    let held: Value = serde_json::from_slice(&body(&request)).expect("json");
    let mut group = c.benchmark_group("request_build");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    let (request, held, body) = (&request, &held, &body);
    compare!(
        group,
        runtime,
        "request_build_long",
        || (),
        |_unit| async move { serde_json::to_vec(held).expect("serialises") },
        |_unit| async move { body(request) }
    );
    group.finish();
}

/// Without the `openai` feature there is no `OpenAiModel` to measure.
#[cfg(not(feature = "openai"))]
fn request_build(_: &mut Criterion) {}

/// A model that replays responses and records nothing, so a turn costs
/// what the runner costs.
struct Replay(Mutex<VecDeque<ModelResponse>>);

#[async_trait]
impl Model for Replay {
    async fn respond(
        &self,
        _request: ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        let next = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        next.ok_or_else(|| "no response left".into())
    }
}

fn script(calls: usize) -> VecDeque<ModelResponse> {
    VecDeque::from([
        ModelResponse::tool_calls(
            (0..calls)
                .map(|i| ToolCall::new(format!("call_{i}"), format!("tool_{}", i % 10), ARGUMENTS)),
        ),
        ModelResponse::answer("done"),
    ])
}

type Work = Arc<dyn Fn(Value) -> Pin<Box<dyn Future<Output = Value> + Send>> + Send + Sync>;

/// The hand-written turn: ask, look each call up, check its arguments, run
/// at most `parallel` at once on a `JoinSet`, append the results in call
/// order, ask again.
async fn hand_written_turn(
    tools: &HashMap<String, (Arc<jsonschema::Validator>, Work)>,
    mut script: VecDeque<ModelResponse>,
    conversation: &mut Vec<Message>,
    parallel: usize,
) -> String {
    loop {
        let response = script.pop_front().expect("scripted");
        let calls: Vec<ToolCall> = response.message.tool_calls().cloned().collect();
        if calls.is_empty() {
            let answer = response.message.text();
            conversation.push(Message::Assistant(response.message));
            return answer;
        }
        let semaphore = Arc::new(Semaphore::new(parallel));
        let mut tasks = JoinSet::new();
        let mut results: Vec<Option<ToolResult>> = vec![None; calls.len()];
        for (index, call) in calls.iter().enumerate() {
            let prepared = tools.get(&call.name).and_then(|(validator, work)| {
                let arguments: Value = serde_json::from_str(&call.arguments).ok()?;
                validator
                    .is_valid(&arguments)
                    .then(|| (Arc::clone(work), arguments))
            });
            let Some((work, arguments)) = prepared else {
                results[index] = Some(ToolResult::error(call.id.clone(), "bad call"));
                continue;
            };
            let semaphore = Arc::clone(&semaphore);
            tasks.spawn(async move {
                let _permit = semaphore.acquire_owned().await.ok()?;
                Some((index, work(arguments).await))
            });
        }
        while let Some(Ok(Some((index, output)))) = tasks.join_next().await {
            let text = match output {
                Value::String(text) => text,
                other => other.to_string(),
            };
            results[index] = Some(ToolResult::ok(calls[index].id.clone(), text));
        }
        conversation.push(Message::Assistant(response.message));
        conversation.extend(results.into_iter().flatten().map(Message::Tool));
    }
}

fn batches(c: &mut Criterion) {
    let runtime = runtime();
    for sleep in [Some(Duration::from_millis(1)), None] {
        let work: Work = Arc::new(move |arguments: Value| {
            Box::pin(async move {
                if let Some(sleep) = sleep {
                    tokio::time::sleep(sleep).await;
                }
                forecast(arguments).await.expect("ok")
            })
        });
        let validator = Arc::new(jsonschema::validator_for(&parameters()).expect("compiles"));
        let hand_tools: HashMap<String, (Arc<jsonschema::Validator>, Work)> = (0..10)
            .map(|i| {
                (
                    format!("tool_{i}"),
                    (Arc::clone(&validator), Arc::clone(&work)),
                )
            })
            .collect();
        let definitions: Vec<tool::Definition> = (0..10)
            .map(|i| {
                let work = Arc::clone(&work);
                tool::Definition::from_fn(
                    ToolInfo::new(format!("tool_{i}"), "Weather forecast.", parameters()),
                    move |arguments: Value, _context| {
                        let done = work(arguments);
                        async move { Ok::<_, BoxError>(done.await) }
                    },
                )
            })
            .collect();
        let bound = runtime.block_on(bind_definition(
            Definition::builder()
                .name("batch")
                .tools(definitions)
                .tool_limits(ToolLimits::new().parallel(8).calls(Limit::Unlimited))
                .build()
                .validate()
                .expect("valid"),
        ));
        let mut group = c.benchmark_group("batch");
        group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(if sleep.is_some() { 4 } else { 2 }));
        let (tools, bound) = (&hand_tools, &bound);
        let cancellation = CancellationToken::new();
        let hand_written = |script| async move {
            let mut conversation = vec![Message::user("go")];
            hand_written_turn(tools, script, &mut conversation, 8).await
        };
        let turn = |model: Replay| {
            let cancellation = &cancellation;
            async move {
                let mut conversation = vec![Message::user("go")];
                bound
                    .run_turn(&model, &mut conversation, cancellation)
                    .await
                    .expect("completes")
            }
        };
        if sleep.is_some() {
            compare!(
                group,
                runtime,
                "batch_sleep",
                || script(64),
                |script| hand_written(script),
                |script| turn(Replay(Mutex::new(script)))
            );
        } else {
            compare!(
                group,
                runtime,
                "batch_instant",
                || script(64),
                |script| hand_written(script),
                |script| turn(Replay(Mutex::new(script)))
            );
        }
        group.finish();
    }
}

/// A tool a factory builds per session, with the info it reports.
struct Forecast {
    info: ToolInfo,
    session: String,
}

#[async_trait]
impl Tool for Forecast {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn invoke(
        &self,
        arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        black_box(&self.session);
        forecast(arguments).await.map(Into::into)
    }
}

/// The factory a user writes: a fresh tool, and its info, per session.
fn build_forecast(i: usize, session: &agent_loop::Session) -> Forecast {
    Forecast {
        info: ToolInfo::new(format!("tool_{i}"), "Weather forecast.", parameters()),
        session: session.session_id().to_string(),
    }
}

fn binds(c: &mut Criterion) {
    let runtime = runtime();
    const TOOLS: usize = 100;
    let factory_tools: Vec<tool::Definition> = (0..TOOLS)
        .map(|i| {
            // Each binding's tool reports an info of its own, checked at
            // bind: a factory of the user's, as an MCP server is.
            tool::Definition::bundle(
                format!("tool_{i}"),
                [format!("tool_{i}")],
                move |session| async move {
                    Ok::<_, BoxError>(vec![Arc::new(build_forecast(i, &session)) as Arc<dyn Tool>])
                },
            )
        })
        .collect();
    let with_modes = |tools: &[tool::Definition]| {
        let mut builder = Definition::builder().name("bind").tools(tools);
        for m in 0..5 {
            builder = builder.mode(Mode::new(format!("mode_{m}")).tools(tools));
        }
        builder
            .initial_mode("mode_0")
            .build()
            .validate()
            .expect("valid")
    };
    let factory_definition = with_modes(&factory_tools);
    let from_fn_definition = with_modes(&forecast_tools(TOOLS));
    let mut group = c.benchmark_group("bind");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    let factory_loop = || async {
        let session = agent_loop::Session::new(SessionId::new(), LoopId::new());
        let mut registry: HashMap<String, Arc<dyn Tool>> = HashMap::with_capacity(TOOLS);
        for i in 0..TOOLS {
            let tool = async { build_forecast(i, &session) }.await;
            registry.insert(tool.info.name.clone(), Arc::new(tool));
        }
        registry
    };
    compare!(
        group,
        runtime,
        "bind/factory",
        || (),
        |_unit| factory_loop(),
        |_unit| bind_definition(factory_definition.clone())
    );
    // What `from_fn` builds per binding, by hand: a tool holding the
    // shared info and handler.
    struct Shared {
        info: Arc<ToolInfo>,
        handler: Arc<Handler>,
    }
    #[async_trait]
    impl Tool for Shared {
        fn info(&self) -> &ToolInfo {
            &self.info
        }
        async fn invoke(&self, arguments: Value, _: &CallContext) -> Result<ToolOutput, BoxError> {
            (self.handler)(arguments).await.map(Into::into)
        }
    }
    let shared: Vec<(Arc<ToolInfo>, Arc<Handler>)> = (0..TOOLS)
        .map(|i| {
            let handler: Handler = Box::new(|arguments| Box::pin(forecast(arguments)));
            (
                Arc::new(ToolInfo::new(
                    format!("tool_{i}"),
                    "Weather forecast.",
                    parameters(),
                )),
                Arc::new(handler),
            )
        })
        .collect();
    let shared = &shared;
    let from_fn_loop = || async move {
        let mut registry: HashMap<String, Arc<dyn Tool>> = HashMap::with_capacity(TOOLS);
        for (info, handler) in shared {
            let tool = async {
                Shared {
                    info: Arc::clone(info),
                    handler: Arc::clone(handler),
                }
            }
            .await;
            registry.insert(tool.info.name.clone(), Arc::new(tool));
        }
        registry
    };
    compare!(
        group,
        runtime,
        "bind/from_fn",
        || (),
        |_unit| from_fn_loop(),
        |_unit| bind_definition(from_fn_definition.clone())
    );
    group.finish();
}

criterion_group!(
    benches,
    dispatch,
    turn_one_call,
    request_build,
    batches,
    binds
);

/// The comparisons, each against its baseline of the same run.
const COMPARISONS: &[Row] = &[
    Row {
        benchmark: "dispatch/registry",
        ratio: "registry_vs_direct",
        measured: "hand-written HashMap registry",
        baseline: "direct call",
    },
    Row {
        benchmark: "dispatch/bound",
        ratio: "dispatch_vs_direct",
        measured: "dispatch one call, schema-checked",
        baseline: "direct call",
    },
    Row {
        benchmark: "dispatch/bound_vs_registry",
        ratio: "dispatch_vs_registry",
        measured: "dispatch one call, schema-checked",
        baseline: "hand-written registry",
    },
    Row {
        benchmark: "dispatch/3_middlewares",
        ratio: "middlewares3_vs_direct",
        measured: "the same through 3 pass-through middlewares",
        baseline: "direct call",
    },
    Row {
        benchmark: "dispatch/3_middlewares_vs_chain",
        ratio: "middlewares3_vs_chain",
        measured: "the same through 3 pass-through middlewares",
        baseline: "registry + 3 boxed async layers",
    },
    Row {
        benchmark: "turn_one_call",
        ratio: "turn_one_call",
        measured: "whole turn, one call then the answer",
        baseline: "hand-written loop + registry",
    },
    Row {
        benchmark: "request_build_long",
        ratio: "request_build_long",
        measured: "OpenAI body of a 1,000-message conversation",
        baseline: "serde_json::to_vec of the Value",
    },
    Row {
        benchmark: "batch_sleep",
        ratio: "batch_sleep",
        measured: "64 calls sleeping 1 ms, 8 at once, whole turn",
        baseline: "Semaphore + JoinSet runner",
    },
    Row {
        benchmark: "batch_instant",
        ratio: "batch_instant",
        measured: "64 instant calls, 8 at once, whole turn",
        baseline: "Semaphore + JoinSet runner",
    },
    Row {
        benchmark: "bind/factory",
        ratio: "bind_factory",
        measured: "bind 100 factory tools, base + 5 modes",
        baseline: "factory loop into HashMap",
    },
    Row {
        benchmark: "bind/from_fn",
        ratio: "bind_from_fn",
        measured: "bind 100 from_fn tools, base + 5 modes",
        baseline: "the same tools into HashMap",
    },
];

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    compare::report(COMPARISONS);
}
