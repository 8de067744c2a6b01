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
//! error. The same seed gives the same scripts. See `agent_loop_test::soak`.
//!
//! `--http FORMAT|all` (features `openai,anthropic,gemini`) runs the
//! sessions through the HTTP models instead, against a loopback server
//! that serves recorded bodies with seeded faults (`agent_loop_test::soak`,
//! whose `http` module it is), and
//! prints requests, retries, faults and typed failures by kind; its
//! must-be-zero counts: invariant violations, turns past their deadline,
//! client tasks and server connections alive at the end, and retries of
//! an attempt that had already sent text.

use std::process::ExitCode;

use agent_loop_test::counting_allocator::{Counting, live};
use agent_loop_test::soak;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const USAGE: &str = "usage: soak [--sessions N] [--turns M] [--seed S] [--http FORMAT|all]";

fn main() -> ExitCode {
    let mut settings = soak::Settings {
        sessions: 100,
        turns: 10,
        seed: 1,
    };
    let mut arguments = std::env::args().skip(1);
    let mut http: Option<String> = None;
    while let Some(flag) = arguments.next() {
        if matches!(flag.as_str(), "-h" | "--help") {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        if flag == "--http" {
            http = arguments.next();
            if http.is_none() {
                eprintln!("`--http` needs a format or `all`\n{USAGE}");
                return ExitCode::from(2);
            }
            continue;
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

    if let Some(formats) = http {
        return http_main(settings, &formats);
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

#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
fn http_main(settings: soak::Settings, formats: &str) -> ExitCode {
    use soak::http::{Format, run, turn_deadline};
    let formats: Vec<Format> = if formats == "all" {
        Format::ALL.to_vec()
    } else {
        match formats
            .split(',')
            .map(Format::parse)
            .collect::<Option<Vec<_>>>()
        {
            Some(formats) => formats,
            None => {
                let names: Vec<_> = Format::ALL.iter().map(|format| format.name()).collect();
                eprintln!("`--http` takes `all` or some of {}", names.join(","));
                return ExitCode::from(2);
            }
        }
    };
    let mut failed = false;
    for format in formats {
        let report = run(settings, format);
        println!(
            "soak --http {}: {} sessions x {} turns, seed {}, turn deadline {:.2} s",
            format.name(),
            settings.sessions,
            settings.turns,
            settings.seed,
            turn_deadline().as_secs_f64()
        );
        println!(
            "turns: {} in {:.2} s, {:.0} turns/s; {} answered, {} interrupted; {} calls, {} error results",
            report.turns,
            report.elapsed.as_secs_f64(),
            report.turns as f64 / report.elapsed.as_secs_f64(),
            report.answered,
            report.interrupted,
            report.calls,
            report.error_results,
        );
        println!("requests: {}, retries: {}", report.requests, report.retries);
        println!("faults injected: {:?}", report.faults);
        println!("turns failed typed, by kind: {:?}", report.errors);
        println!(
            "must be zero: {} invariant violations, {} turns past their deadline, {} tasks and {} connections alive, {} retries after content",
            report.violations,
            report.overdue,
            report.alive_tasks,
            report.open_connections,
            report.retried_after_content,
        );
        failed |= report.must_be_zero() > 0;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(not(all(feature = "openai", feature = "anthropic", feature = "gemini")))]
fn http_main(_settings: soak::Settings, _formats: &str) -> ExitCode {
    eprintln!("`--http` needs the features openai,anthropic,gemini");
    ExitCode::from(2)
}
