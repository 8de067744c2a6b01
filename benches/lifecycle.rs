//! Speed of the two hot paths: binding a validated definition to a new
//! session, and running a turn.
//!
//! `cargo bench --bench lifecycle`. Under `cargo test --all-targets` each
//! benchmark runs once, as a smoke test.

use std::hint::black_box;

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Bindings, LoopId, SessionId};
use agent_loop::{Definition, Limit, Mode, ToolLimits, Validated};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A definition with `tools` echo tools, each with a small object schema,
/// and two modes sharing them.
fn definition(tools: usize) -> Definition<Validated> {
    let definitions: Vec<tool::Definition> = (0..tools)
        .map(|i| {
            tool::Definition::from_fn(
                ToolInfo::new(
                    format!("tool_{i}"),
                    "Echoes its arguments.",
                    json!({
                        "type": "object",
                        "properties": {
                            "city": { "type": "string" },
                            "days": { "type": "integer", "minimum": 1 }
                        },
                        "required": ["city"]
                    }),
                ),
                |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
            )
        })
        .collect();
    Definition::builder()
        .name("bench")
        .tools(&definitions)
        .mode(Mode::new("a").tools(&definitions[..tools / 2]))
        .mode(Mode::new("b"))
        .initial_mode("b")
        .tool_limits(ToolLimits::new().calls(Limit::Unlimited))
        .build()
        .validate()
        .expect("the bench definition is valid")
}

fn bind(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let mut group = c.benchmark_group("bind");
    for tools in [1, 10, 50] {
        let definition = definition(tools);
        group.bench_with_input(BenchmarkId::from_parameter(tools), &tools, |b, _| {
            b.to_async(&runtime).iter(|| async {
                let bound = definition
                    .bind(Bindings::new(SessionId::new(), LoopId::new()))
                    .await
                    .expect("binds");
                black_box(bound)
            });
        });
    }
    group.finish();
}

fn turn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let definition = definition(10);
    let bound = runtime
        .block_on(definition.bind(Bindings::new(SessionId::new(), LoopId::new())))
        .expect("binds");
    let mut group = c.benchmark_group("turn");
    for batch in [1, 8, 64] {
        group.bench_with_input(BenchmarkId::new("batch", batch), &batch, |b, &batch| {
            b.to_async(&runtime).iter(|| async {
                let calls = (0..batch).map(|i| {
                    ToolCall::new(
                        format!("call_{i}"),
                        format!("tool_{}", i % 10),
                        r#"{"city": "Paris", "days": 3}"#,
                    )
                });
                let model = ScriptedModel::new([
                    ModelResponse::tool_calls(calls),
                    ModelResponse::answer("done"),
                ]);
                let mut conversation = vec![Message::user("go")];
                let outcome = bound
                    .run_turn(&model, &mut conversation, &CancellationToken::new())
                    .await
                    .expect("the turn completes");
                black_box(outcome)
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bind, turn);
criterion_main!(benches);
