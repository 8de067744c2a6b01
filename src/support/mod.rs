//! Crate-private helpers every layer may use, one concern a file: JSON
//! type names and nesting depth ([`json`]), a future run until a
//! cancellation token fires ([`cancel`]), a mutex locked through
//! poisoning ([`lock`]), panic messages ([`panic`]),
//! model-facing text bounded and cleaned ([`text`]), and credentials kept
//! out of URLs shown in errors ([`redact`], only with a feature that talks
//! to a server). Nothing here knows a tool, a binding or a turn.

pub(crate) mod cancel;
pub(crate) mod json;
pub(crate) mod lock;
pub(crate) mod panic;
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "mcp"
))]
pub(crate) mod redact;
pub(crate) mod text;
