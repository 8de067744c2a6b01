//! Memory a binding holds beyond its tools, counted by a counting global
//! allocator, against what a user holds by hand in the same run.
//!
//! For a definition of 20 tools (`from_fn` tools, and tools a factory
//! builds with their own `ToolInfo` per session), with no mode and with 5
//! modes that each list all 20 tools:
//!
//! - **per binding, beyond the tools**: bytes live per binding held, less
//!   the bytes of the same tools built by calling their factories by hand;
//! - **10,000 bindings held at once**: bytes live and the allocator's peak,
//!   against 10,000 hand-written registries (`HashMap` from name to tool);
//!   with the process's resident set size (Linux);
//! - **a 1,000-message conversation** (`common::long_conversation`, about
//!   2 MB of JSON): the bytes its `Vec<Message>` holds, against the bytes of
//!   its JSON text.
//!
//! `cargo bench --bench memory` prints a table, then each ratio as a line
//! `ratio <name> <value>` and each byte count as `value <name> <bytes>`,
//! for scripts. Under `cargo test --all-targets` it runs with 200 bindings
//! instead, as a smoke test, and prints no such line.

mod common;
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;

use agent_loop::tool::{self, BoxError, CallContext, Tool, ToolInfo, ToolOutput};
use agent_loop::{Bindings, Bound, Definition, LoopId, Mode, Session, SessionId, Validated};
use agent_loop_test::counting_allocator::{Counting, live, peak, reset_peak};
use async_trait::async_trait;
use common::parameters;
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak resident set size of this process in bytes (Linux `VmHWM`).
fn peak_rss() -> Option<isize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: isize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Set in a child process: measure one side alone, so its peak resident
/// set is its own.
const CHILD: &str = "AGENT_LOOP_MEMORY_BENCH_CHILD";

const TOOLS: usize = 20;

async fn forecast(arguments: Value) -> Result<Value, BoxError> {
    Ok(arguments)
}

/// A tool a factory builds per session, with its own info.
struct Forecast {
    info: ToolInfo,
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
        forecast(arguments).await.map(Into::into)
    }
}

fn build_forecast(i: usize) -> Forecast {
    Forecast {
        info: ToolInfo::new(format!("tool_{i}"), "Weather forecast.", parameters()),
    }
}

/// What `from_fn` builds per binding, by hand: the shared info and handler.
struct Shared {
    info: Arc<ToolInfo>,
    handler: Arc<dyn Fn() + Send + Sync>,
}

#[async_trait]
impl Tool for Shared {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn invoke(
        &self,
        arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        (self.handler)();
        forecast(arguments).await.map(Into::into)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    FromFn,
    Factory,
}

struct Case {
    definition: Definition<Validated>,
    /// Builds one session's tools by hand, as the definition's factories do.
    by_hand: ByHand,
}

/// Builds one session's tools without the library.
type ByHand = Box<dyn Fn() -> Vec<Arc<dyn Tool>>>;

/// A hand-written registry: name to tool and its compiled schema.
type Registry = HashMap<String, (Arc<dyn Tool>, Arc<jsonschema::Validator>)>;

fn case(kind: Kind, modes: usize) -> Case {
    let (definitions, by_hand): (Vec<tool::Definition>, ByHand) = match kind {
        Kind::FromFn => {
            let infos: Vec<Arc<ToolInfo>> = (0..TOOLS)
                .map(|i| {
                    Arc::new(ToolInfo::new(
                        format!("tool_{i}"),
                        "Weather forecast.",
                        parameters(),
                    ))
                })
                .collect();
            let handler: Arc<dyn Fn() + Send + Sync> = Arc::new(|| {});
            let definitions = infos
                .iter()
                .map(|info| {
                    tool::Definition::from_fn(
                        ToolInfo::clone(info),
                        |arguments: Value, _context| forecast(arguments),
                    )
                })
                .collect();
            let by_hand = Box::new(move || {
                infos
                    .iter()
                    .map(|info| {
                        Arc::new(Shared {
                            info: Arc::clone(info),
                            handler: Arc::clone(&handler),
                        }) as Arc<dyn Tool>
                    })
                    .collect()
            });
            (definitions, by_hand)
        }
        Kind::Factory => {
            let definitions = (0..TOOLS)
                .map(|i| {
                    tool::Definition::bundle(
                        format!("tool_{i}"),
                        [format!("tool_{i}")],
                        move |_session: Session| async move {
                            Ok::<_, BoxError>(vec![Arc::new(build_forecast(i)) as Arc<dyn Tool>])
                        },
                    )
                })
                .collect();
            let by_hand = Box::new(|| {
                (0..TOOLS)
                    .map(|i| Arc::new(build_forecast(i)) as Arc<dyn Tool>)
                    .collect()
            });
            (definitions, by_hand)
        }
    };
    let mut builder = Definition::builder().name("memory").tools(&definitions);
    for m in 0..modes {
        builder = builder.mode(Mode::new(format!("mode_{m}")).tools(&definitions));
    }
    let definition = if modes > 0 {
        builder.initial_mode("mode_0").build()
    } else {
        builder.build()
    }
    .validate()
    .expect("valid");
    Case {
        definition,
        by_hand,
    }
}

fn bind_many(runtime: &tokio::runtime::Runtime, case: &Case, n: usize) -> Vec<Definition<Bound>> {
    runtime.block_on(async {
        let mut bound = Vec::with_capacity(n);
        for _ in 0..n {
            bound.push(
                case.definition
                    .bind(Bindings::new(SessionId::new(), LoopId::new()))
                    .await
                    .expect("binds"),
            );
        }
        bound
    })
}

/// Bytes live per binding beyond the tools, measured over `n` bindings.
fn beyond_the_tools(runtime: &tokio::runtime::Runtime, case: &Case, n: usize) -> f64 {
    // A first binding compiles what every later one shares.
    drop(bind_many(runtime, case, 1));
    let before = live();
    let tools: Vec<Vec<Arc<dyn Tool>>> = (0..n).map(|_| (case.by_hand)()).collect();
    let tools_bytes = live() - before;
    drop(black_box(tools));
    let before = live();
    let bound = bind_many(runtime, case, n);
    let bound_bytes = live() - before;
    drop(black_box(bound));
    (bound_bytes - tools_bytes) as f64 / n as f64
}

/// `n` sessions held at once, hand-written registries or bindings: bytes
/// live and the allocator's peak.
fn held_at_once(
    runtime: &tokio::runtime::Runtime,
    case: &Case,
    n: usize,
    bindings: bool,
) -> (isize, isize) {
    let before = live();
    reset_peak();
    let held: Box<dyn std::any::Any> = if bindings {
        Box::new(bind_many(runtime, case, n))
    } else {
        let validators: Vec<Arc<jsonschema::Validator>> = (0..TOOLS)
            .map(|_| Arc::new(jsonschema::validator_for(&parameters()).expect("compiles")))
            .collect();
        let registries: Vec<Registry> = (0..n)
            .map(|_| {
                (case.by_hand)()
                    .into_iter()
                    .zip(&validators)
                    .map(|(tool, validator)| {
                        (tool.info().name.clone(), (tool, Arc::clone(validator)))
                    })
                    .collect()
            })
            .collect();
        Box::new(registries)
    };
    let measured = (live() - before, peak() - before);
    drop(black_box(held));
    measured
}

/// Runs one side of `held_at_once` in a child process: (live, peak, peak
/// resident set).
fn child(kind: Kind, modes: usize, n: usize, bindings: bool) -> Option<(isize, isize, isize)> {
    let output = std::process::Command::new(std::env::current_exe().ok()?)
        .env(CHILD, format!("{kind:?} {modes} {n} {bindings}"))
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let mut numbers = text.split_whitespace().map(|n| n.parse::<isize>().ok());
    Some((numbers.next()??, numbers.next()??, numbers.next()??))
}

fn run_child(spec: &str) {
    let parts: Vec<&str> = spec.split(' ').collect();
    let kind = if parts[0] == "FromFn" {
        Kind::FromFn
    } else {
        Kind::Factory
    };
    let modes: usize = parts[1].parse().expect("modes");
    let n: usize = parts[2].parse().expect("n");
    let bindings = parts[3] == "true";
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let case = case(kind, modes);
    let (live, peak) = held_at_once(&runtime, &case, n, bindings);
    println!("{live} {peak} {}", peak_rss().unwrap_or(0));
}

/// The bytes a long conversation holds, and the bytes of its JSON text.
fn conversation_bytes() -> (isize, usize) {
    let before = live();
    let conversation = common::long_conversation();
    let held = live() - before;
    let json = serde_json::to_vec(&conversation).expect("serialises").len();
    drop(black_box(conversation));
    (held, json)
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        return run_child(&spec);
    }
    let benchmarking = std::env::args().any(|argument| argument == "--bench");
    let (per_binding, held) = if benchmarking {
        (1_000, 10_000)
    } else {
        (20, 200)
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    // What a script reads: `ratio <name> <value>` and `value <name> <bytes>`.
    let mut lines: Vec<String> = Vec::new();
    println!("memory: {TOOLS}-tool definitions; bytes from a counting allocator");
    println!(
        "{:<8} {:>5} {:>15} {:>30} {:>30} {:>7} {:>7}",
        "tools",
        "modes",
        "per binding",
        "registries live/peak/peak RSS",
        "bindings live/peak/peak RSS",
        "peak",
        "RSS"
    );
    for kind in [Kind::FromFn, Kind::Factory] {
        for modes in [0, 5] {
            let case = case(kind, modes);
            let beyond = beyond_the_tools(&runtime, &case, per_binding);
            let (Some(registries), Some(bindings)) = (
                child(kind, modes, held, false),
                child(kind, modes, held, true),
            ) else {
                println!("{kind:?} {modes}: a child process failed");
                continue;
            };
            let show = |(live, peak, rss): (isize, isize, isize)| {
                format!("{}/{}/{}", mib(live), mib(peak), mib(rss))
            };
            let row = format!(
                "{}_{modes}modes",
                match kind {
                    Kind::FromFn => "from_fn",
                    Kind::Factory => "factory",
                }
            );
            lines.push(format!("value binding_beyond_tools_{row} {beyond:.0}"));
            for (side, (live, peak, rss)) in [("registries", registries), ("bindings", bindings)] {
                lines.push(format!("value {side}_{held}_{row}_live {live}"));
                lines.push(format!("value {side}_{held}_{row}_peak {peak}"));
                lines.push(format!("value {side}_{held}_{row}_peak_rss {rss}"));
            }
            lines.push(format!(
                "ratio bindings_{held}_{row}_peak {:.2}",
                bindings.1 as f64 / registries.1 as f64
            ));
            lines.push(format!(
                "ratio bindings_{held}_{row}_peak_rss {:.2}",
                bindings.2 as f64 / registries.2 as f64
            ));
            println!(
                "{:<8} {:>5} {:>9.0} bytes {:>30} {:>30} {:>6.2}x {:>6.2}x",
                format!("{kind:?}"),
                modes,
                beyond,
                show(registries),
                show(bindings),
                bindings.1 as f64 / registries.1 as f64,
                bindings.2 as f64 / registries.2 as f64,
            );
        }
    }
    println!(
        "({held} sessions held at once, each side in its own process; MiB; ratios: bindings / registries)"
    );
    let (conversation, json) = conversation_bytes();
    let conversation_ratio = conversation as f64 / json as f64;
    println!(
        "1,000-message conversation: {} MiB held, {} MiB of JSON, {conversation_ratio:.2}x",
        mib(conversation),
        mib(json as isize),
    );
    lines.push(format!("ratio conversation_memory {conversation_ratio:.2}"));
    lines.push(format!("value conversation_memory_held {conversation}"));
    lines.push(format!("value conversation_memory_json {json}"));
    if benchmarking {
        println!();
        for line in lines {
            println!("{line}");
        }
    }
}

fn mib(bytes: isize) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}
