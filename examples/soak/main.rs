//! A soak with injected faults: N sessions of one definition, bound at
//! once, each running M turns against a scripted model that mixes valid
//! calls, unknown tools, bad JSON, schema failures, tools that fail, panic
//! or stall past the call timeout, and turns cancelled at random points.
//!
//! ```text
//! cargo run --release --example soak -- --sessions 1000 --turns 20 [--seed 7]
//! ```
//!
//! It prints turns per second, the median and 99th percentile turn time,
//! and the counts that must be zero: invariant violations (a call id
//! without exactly one result right after its batch), Tokio tasks and tool
//! futures still alive once every binding is dropped; and the bytes live
//! before binding and after (a counting allocator's count: no growth).
//! The exit status is 1 when a must-be-zero count is not, 2 for a usage
//! error. The same seed gives the same scripts. See `soak.rs`.

#[path = "../../benches/common/counting_allocator.rs"]
mod counting_allocator;
// `#[path]` makes `soak.rs` a directory owner, as when the test includes
// it, so its own `#[path]` resolves the same way in both crates.
#[path = "soak.rs"]
mod soak;

use std::process::ExitCode;

use counting_allocator::{Counting, live};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const USAGE: &str = "usage: soak [--sessions N] [--turns M] [--seed S]";

fn main() -> ExitCode {
    let mut settings = soak::Settings {
        sessions: 100,
        turns: 10,
        seed: 1,
    };
    let mut arguments = std::env::args().skip(1);
    while let Some(flag) = arguments.next() {
        if matches!(flag.as_str(), "-h" | "--help") {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        let value = arguments.next().and_then(|value| value.parse::<u64>().ok());
        match (flag.as_str(), value) {
            ("--sessions", Some(n)) if n > 0 => settings.sessions = n as usize,
            ("--turns", Some(m)) if m > 0 => settings.turns = m as usize,
            ("--seed", Some(seed)) => settings.seed = seed,
            _ => {
                eprintln!("`{flag}` needs a positive number, or is not an option\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }

    let report = soak::run(settings, live);

    let mib = |bytes: isize| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "soak: {} sessions x {} turns, seed {}",
        settings.sessions, settings.turns, settings.seed
    );
    println!(
        "turns: {} in {:.2} s, {:.0} turns/s; turn time p50 {:.2} ms, p99 {:.2} ms",
        report.turns,
        report.elapsed.as_secs_f64(),
        report.turns_per_second,
        report.p50.as_secs_f64() * 1e3,
        report.p99.as_secs_f64() * 1e3,
    );
    println!(
        "ended: {} completed, {} interrupted, {} at a limit, {} failed; {} calls, {} error results",
        report.completed,
        report.interrupted,
        report.limit_reached,
        report.failed,
        report.calls,
        report.error_results,
    );
    println!("invariant violations: {}", report.violations);
    println!(
        "alive after every binding is dropped: {} tasks, {} tool futures",
        report.alive_tasks, report.alive_tool_futures
    );
    println!(
        "memory live: {:.2} MiB before, {:.2} MiB after ({:+} bytes)",
        mib(report.live_before),
        mib(report.live_after),
        report.live_after - report.live_before,
    );
    if report.violations + report.alive_tasks + report.alive_tool_futures + report.failed > 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
