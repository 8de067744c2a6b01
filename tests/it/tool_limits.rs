//! Limits resolution as a bound mode exposes it.

use crate::common::bindings;
use agent_loop::{Definition, Limit, Mode, ResolvedToolLimits, ToolLimits};

/// `(iterations, calls, parallel)`, `None` for unlimited.
fn counts(limits: ResolvedToolLimits) -> (Option<u32>, Option<u32>, u32) {
    (
        limits.iterations.get(),
        limits.calls.get(),
        limits.parallel.get(),
    )
}

#[test]
fn default_limits_resolve_to_25_100_8() {
    let resolved = ToolLimits::default().resolve().unwrap();
    assert_eq!(counts(resolved), (Some(25), Some(100), 8));
    assert_eq!(resolved, ResolvedToolLimits::default());
    assert_eq!(
        resolved.result_bytes, None,
        "results are not cut by default"
    );
}

#[tokio::test]
async fn a_mode_with_default_limits_inherits_every_base_field() {
    // The trap a `Default` of 25/100/8 would set: a mode given
    // `ToolLimits::default()` would then override every base field.
    let base = ToolLimits::new()
        .iterations(3)
        .calls(Limit::Unlimited)
        .parallel(2)
        .result_bytes(512);
    let bound = Definition::builder()
        .name("agent")
        .tool_limits(base)
        .mode(Mode::new("unset"))
        .mode(Mode::new("default").tool_limits(ToolLimits::default()))
        .initial_mode("unset")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let inherited = |name: &str| bound.mode(name).unwrap().tool_limits;
    let resolved = (inherited("default").iterations, inherited("default").calls);
    assert_eq!(resolved, (Limit::at_most(3).unwrap(), Limit::Unlimited));
    assert_eq!(inherited("default").parallel.get(), 2);
    assert_eq!(
        inherited("default").result_bytes.map(|bytes| bytes.get()),
        Some(512)
    );
    assert_eq!(inherited("default"), inherited("unset"));
    assert_eq!(inherited("default"), bound.base_mode().tool_limits);
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
    assert_eq!(counts(limits), (Some(25), Some(100), 8));
    assert_eq!(limits, ResolvedToolLimits::default());
}

#[tokio::test]
async fn mode_setting_calls_inherits_base_iterations_and_parallel() {
    let bound = Definition::builder()
        .name("agent")
        .tool_limits(ToolLimits::new().iterations(3).parallel(2))
        .mode(Mode::new("x").tool_limits(ToolLimits::new().calls(7)))
        .initial_mode("x")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let mode = bound.mode("x").expect("mode x is bound").tool_limits;
    assert_eq!(counts(mode), (Some(3), Some(7), 2));
    let base = bound.base_mode().tool_limits;
    assert_eq!(counts(base), (Some(3), Some(100), 2));
    assert_eq!(bound.current_mode().tool_limits, mode);
}

#[tokio::test]
async fn mode_without_limits_inherits_the_resolved_base() {
    let bound = Definition::builder()
        .name("agent")
        .tool_limits(ToolLimits::new().result_bytes(1024))
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
    assert_eq!(mode.result_bytes.map(|bytes| bytes.get()), Some(1024));
}

#[test]
fn config_reads_maps_only_never_positional_fields() {
    use serde::Deserialize;
    use serde::de::value::{Error, SeqDeserializer};

    const ARRAY: &str = "invalid type: sequence, expected a map of tool limits such as {\"iterations\": 25, \"calls\": \"unlimited\"}";
    // JSON text, `[3]` and all four fields in declaration order.
    for text in ["[3]", "[3, 4, 2, 4096]"] {
        let error = serde_json::from_str::<ToolLimits>(text).unwrap_err();
        assert_eq!(error.to_string(), format!("{ARRAY} at line 1 column 0"));
    }
    // A value already parsed (a section of a larger config).
    let error = ToolLimits::deserialize(serde_json::json!([3])).unwrap_err();
    assert_eq!(error.to_string(), ARRAY);
    // A format that hands a sequence over whatever it is asked for, where a
    // derived struct would read the elements as its fields in order.
    let error = ToolLimits::deserialize(SeqDeserializer::<_, Error>::new([3u32, 4, 2].into_iter()))
        .unwrap_err();
    assert_eq!(error.to_string(), ARRAY);
}
