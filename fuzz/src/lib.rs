//! The properties the fuzz targets check: the very files the stable test
//! suite checks them with (`tests/it/properties/`, run by the
//! `*_arbitrary_*` modules of `tests/it`), included as they are, with the
//! two helpers they use at the root, where they stand in `tests/it` too.
//!
//! Each target turns libFuzzer's bytes into a property's input (JSON, SSE
//! text, or an `arbitrary` case) and panics with the property's message
//! when it fails, which libFuzzer reports as a crash.

#[path = "../../tests/it/turn_common.rs"]
mod turn_common;
#[path = "../../tests/it/wire_rules.rs"]
mod wire_rules;

#[path = "../../tests/it/properties/mod.rs"]
pub mod properties;

/// Panics with `problem` when a property failed: libFuzzer's crash.
pub fn check(result: Result<(), String>) {
    if let Err(problem) = result {
        panic!("property failed: {problem}");
    }
}

/// The JSON value of `data`, if it is JSON text.
pub fn json(data: &[u8]) -> Option<serde_json::Value> {
    serde_json::from_slice(data).ok()
}
