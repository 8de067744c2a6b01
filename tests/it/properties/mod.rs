//! The properties the fuzz targets check on arbitrary input, and the
//! `*_arbitrary_*` proptest modules of this binary check on generated input
//! on stable, every run: one function per property, the same code for both.
//!
//! A property returns `Err` saying what broke. A panic inside the crate is
//! a failure too: libFuzzer reports it as a crash, proptest as a failing
//! case.
//!
//! The fuzz crate's library (`fuzz/src/lib.rs`) includes this module with
//! `#[path]`, and `turn_common` and `wire_rules` at its root, so
//! `crate::turn_common` and `crate::wire_rules` name the same files there
//! as here.
#![allow(dead_code)] // the fuzz crate and this binary each use a subset

pub mod bind;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod stream;
pub mod truncation;
pub mod turn;
pub mod wire;

use std::future::Future;
use std::sync::Once;

thread_local! {
    /// One runtime per thread, built once: a fuzz target runs millions of
    /// inputs, and building a runtime for each would be most of the work.
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread Tokio runtime builds");
}

/// Runs `future` to completion on this thread's runtime.
pub fn block_on<F: Future>(future: F) -> F::Output {
    RUNTIME.with(|runtime| runtime.block_on(future))
}

/// `Err(message)` unless `condition` holds.
pub fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(message()) }
}

/// The start of the message of every panic a property provokes on purpose
/// (a tool that panics, to check that the panic is contained).
pub const EXPECTED_PANIC: &str = "expected panic: ";

/// Keeps the panics a property provokes out of the output and out of
/// libFuzzer's crash reports: the hook that was in place (the default one,
/// or libFuzzer's, which aborts the process) still sees every other panic.
/// Call it after libFuzzer installed its hook, i.e. in the target's body.
pub fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or_default();
            if !message.starts_with(EXPECTED_PANIC) {
                previous(info);
            }
        }));
    });
}
