//! The soak of `examples/soak`, small: 50 sessions of 5 turns with every
//! injected fault (unknown tools, bad JSON, schema failures, tools that
//! fail, panic or stall past the call timeout, turns cancelled at random
//! points). A test binary of its own: it counts the process's live bytes
//! with a counting global allocator, which other tests running beside it
//! would disturb.

use agent_loop_test::counting_allocator::{Counting, live};
use agent_loop_test::soak;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes a run may leave live beyond what was live before it, after the
/// warm-up session: the runtime keeps about 1 KB of its own (80 to 976
/// bytes measured, for 10 to 1,000 sessions alike), while one session's
/// binding or conversation left behind is kilobytes, fifty of them far
/// more than this.
const GROWTH_BOUND: isize = 16 * 1024;

/// The HTTP soak allocates beside the measured one otherwise: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn fifty_sessions_of_five_turns_break_no_invariant_and_leave_nothing_behind() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let settings = soak::Settings {
        sessions: 50,
        turns: 5,
        seed: 14,
    };

    let report = soak::run(settings, live);

    assert_eq!(report.turns, 250);
    assert_eq!(report.failed, 0, "{report:?}");
    assert_eq!(
        report.completed + report.interrupted + report.limit_reached,
        250
    );
    // The faults were there: most calls of the scripts fail on purpose.
    assert!(report.error_results > 0, "{report:?}");
    assert_eq!(report.violations, 0, "{report:?}");
    assert_eq!(report.alive_tasks, 0, "{report:?}");
    assert_eq!(report.alive_tool_futures, 0, "{report:?}");
    let growth = report.live_after - report.live_before;
    assert!(
        growth < GROWTH_BOUND,
        "{growth} bytes more live: {report:?}"
    );
}

/// Each format through its HTTP model against the faulty loopback server:
/// 20 sessions of 3 turns, the must-be-zero counts at zero, and the faults
/// and retries were there.
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[test]
fn http_sessions_through_faults_break_no_invariant_and_leave_nothing_behind() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let settings = soak::Settings {
        sessions: 20,
        turns: 3,
        seed: 5,
    };
    for format in soak::http::Format::ALL {
        let report = soak::http::run(settings, format);
        assert_eq!(report.turns, 60, "{format:?}: {report:?}");
        assert_eq!(report.violations, 0, "{format:?}: {report:?}");
        assert_eq!(report.overdue, 0, "{format:?}: {report:?}");
        assert_eq!(report.alive_tasks, 0, "{format:?}: {report:?}");
        assert_eq!(report.open_connections, 0, "{format:?}: {report:?}");
        assert_eq!(report.retried_after_content, 0, "{format:?}: {report:?}");
        assert!(!report.faults.is_empty(), "{format:?}: {report:?}");
        assert!(report.retries > 0, "{format:?}: {report:?}");
        assert!(report.answered > 0, "{format:?}: {report:?}");
    }
}
