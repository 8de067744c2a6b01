//! Limits resolution (DESIGN.md section 4) as a bound mode exposes it.

mod common;

use agent_loop::{Definition, Mode, ToolLimits};
use common::bindings;

#[test]
fn default_limits_resolve_to_25_100_8() {
    let resolved = ToolLimits::default().resolve();
    assert_eq!(
        (resolved.iterations, resolved.calls, resolved.parallel),
        (25, 100, 8)
    );
    assert_eq!(
        resolved.max_result_bytes(),
        None,
        "results are not cut by default"
    );
}

#[test]
fn default_is_all_unset_so_a_mode_overrides_nothing_by_default() {
    assert_eq!(
        ToolLimits::default(),
        ToolLimits {
            iterations: 0,
            calls: 0,
            parallel: 0,
            result_bytes: 0
        }
    );
}

#[tokio::test]
async fn unset_base_binds_to_the_defaults() {
    let bound = Definition::builder()
        .name("agent")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let limits = bound.base_mode().tool_limits;
    assert_eq!(
        (limits.iterations, limits.calls, limits.parallel),
        (25, 100, 8)
    );
    assert!(limits.is_resolved());
}

#[tokio::test]
async fn mode_setting_calls_inherits_base_iterations_and_parallel() {
    let bound = Definition::builder()
        .name("agent")
        .tool_limits(ToolLimits {
            iterations: 3,
            parallel: 2,
            ..Default::default()
        })
        .mode(Mode::new("x").tool_limits(ToolLimits {
            calls: 7,
            ..Default::default()
        }))
        .initial_mode("x")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let mode = bound.mode("x").expect("mode x is bound").tool_limits;
    assert_eq!((mode.iterations, mode.calls, mode.parallel), (3, 7, 2));
    assert!(mode.is_resolved(), "no zero left in a bound mode's limits");
    let base = bound.base_mode().tool_limits;
    assert_eq!((base.iterations, base.calls, base.parallel), (3, 100, 2));
    assert_eq!(bound.current_mode().tool_limits, mode);
}

#[tokio::test]
async fn mode_without_limits_inherits_the_resolved_base() {
    let bound = Definition::builder()
        .name("agent")
        .tool_limits(ToolLimits {
            result_bytes: 1024,
            ..Default::default()
        })
        .mode(Mode::new("plain"))
        .initial_mode("plain")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let mode = bound.mode("plain").unwrap().tool_limits;
    assert_eq!(mode, bound.base_mode().tool_limits);
    assert_eq!(mode.max_result_bytes(), Some(1024));
}
