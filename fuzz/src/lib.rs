//! The properties the fuzz targets check: the very functions the stable
//! test suite checks them with (`agent_loop_test::properties`, run by the
//! `*_arbitrary_*` modules of `tests/it`).
//!
//! Each target turns libFuzzer's bytes into a property's input (JSON, SSE
//! text, or an `arbitrary` case) and panics with the property's message
//! when it fails, which libFuzzer reports as a crash.

pub use agent_loop_test::properties;

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
