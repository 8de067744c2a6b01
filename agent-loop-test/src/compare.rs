//! Comparisons of agent-loop against a baseline measured back to back in
//! one run: each criterion sample runs the baseline, then agent-loop, and
//! records both; the report gives each comparison's medians and the median
//! of its per-sample ratios, as a table and as lines `ratio <name> <value>`
//! for scripts. The timing benches use it with `use agent_loop_test::compare`
//! (the module and its macro).

use std::sync::Mutex;
use std::time::Duration;

/// Per sample of each comparison: nanoseconds per iteration of the
/// baseline and of agent-loop, measured back to back.
static SAMPLES: Mutex<Vec<(&'static str, f64, f64)>> = Mutex::new(Vec::new());

/// Records one sample of `name`: `iterations` of the baseline took
/// `baseline`, as many of agent-loop took `measured`.
pub fn record(name: &'static str, iterations: u64, baseline: Duration, measured: Duration) {
    let per = |elapsed: Duration| elapsed.as_nanos() as f64 / iterations.max(1) as f64;
    SAMPLES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push((name, per(baseline), per(measured)));
}

/// The medians of a comparison's samples: baseline, agent-loop, and the
/// ratio of each sample's pair (robust to the load changing between
/// samples, since both sides of a pair ran back to back).
pub fn medians(name: &str) -> Option<(f64, f64, f64)> {
    let samples = SAMPLES.lock().unwrap_or_else(|p| p.into_inner());
    let pairs: Vec<(f64, f64)> = samples
        .iter()
        .filter(|(n, ..)| *n == name)
        .map(|(_, b, m)| (*b, *m))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Some((
        median(pairs.iter().map(|p| p.0).collect()),
        median(pairs.iter().map(|p| p.1).collect()),
        median(pairs.iter().map(|p| p.1 / p.0).collect()),
    ))
}

/// Benchmarks `$name` in `$group`: each criterion sample runs the
/// baseline then agent-loop, `iterations` times each, on `$runtime`, on
/// inputs made by `$prepare` outside the timing; criterion reports
/// agent-loop's time, and the pair goes to [`record`].
#[macro_export]
macro_rules! compare {
    ($group:expr, $runtime:expr, $name:literal, $prepare:expr,
     |$b_in:ident| $baseline:expr, |$m_in:ident| $measured:expr $(,)?) => {
        $group.bench_function($name.rsplit('/').next().unwrap_or($name), |bencher| {
            bencher.iter_custom(|iterations| {
                $runtime.block_on(async {
                    let inputs: Vec<_> = (0..iterations).map(|_| $prepare()).collect();
                    let started = ::std::time::Instant::now();
                    for $b_in in inputs {
                        let _ = ::std::hint::black_box($baseline.await);
                    }
                    let baseline = started.elapsed();
                    let inputs: Vec<_> = (0..iterations).map(|_| $prepare()).collect();
                    let started = ::std::time::Instant::now();
                    for $m_in in inputs {
                        let _ = ::std::hint::black_box($measured.await);
                    }
                    let measured = started.elapsed();
                    $crate::compare::record(concat!($name), iterations, baseline, measured);
                    measured
                })
            });
        });
    };
}

/// The runtime every comparison runs on: two workers, as many as this
/// machine's cores.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// `true` under `cargo bench` (criterion gets `--bench`); `false` under
/// `cargo test`, where each benchmark runs once as a smoke test.
pub fn benchmarking() -> bool {
    std::env::args().any(|argument| argument == "--bench")
}

/// One comparison of the report: the benchmark's name in [`compare!`],
/// the name of its `ratio` line, and the labels of the table.
pub struct Row {
    pub benchmark: &'static str,
    pub ratio: &'static str,
    pub measured: &'static str,
    pub baseline: &'static str,
}

/// Under `cargo bench`, prints the medians of `rows` as a table, then
/// each ratio as a line `ratio <name> <value>`; under `cargo test`,
/// nothing.
pub fn report(rows: &[Row]) {
    if !benchmarking() {
        return;
    }
    let width = rows
        .iter()
        .map(|row| row.measured.chars().count())
        .max()
        .unwrap_or(0)
        .max(46);
    println!(
        "\n{:<width$} {:>11} {:>11} {:>7}  baseline",
        "measure (medians)", "agent-loop", "baseline", "ratio"
    );
    for row in rows {
        if let Some((baseline, measured, ratio)) = medians(row.benchmark) {
            println!(
                "{:<width$} {:>11} {:>11} {ratio:>6.2}x  {}",
                row.measured,
                human(measured),
                human(baseline),
                row.baseline,
            );
        }
    }
    println!();
    for row in rows {
        if let Some((_, _, ratio)) = medians(row.benchmark) {
            println!("ratio {} {ratio:.2}", row.ratio);
        }
    }
}

fn human(nanos: f64) -> String {
    if nanos >= 1e6 {
        format!("{:.2} ms", nanos / 1e6)
    } else if nanos >= 1e3 {
        format!("{:.1} µs", nanos / 1e3)
    } else {
        format!("{nanos:.0} ns")
    }
}
