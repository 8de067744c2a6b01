//! Helpers the satellite crates (`agent-loop-providers`, `agent-loop-mcp`)
//! share with the core, one concern a file: JSON type names and nesting
//! depth ([`json`]), panic messages ([`panic`](mod@panic)), model-facing text bounded
//! and cleaned ([`text`]), credentials kept out of URLs shown in errors
//! ([`redact`]), a fixed hash ([`hash`]), and the tool call ids minted
//! where a provider sent none ([`mint_missing_ids`]). They are public so that those crates need no copy
//! of them, and documented as the rest; an application has no need of
//! them. Nothing here knows a tool, a binding or a turn.
//!
//! The module also holds the core's own helpers (a future run until a
//! cancellation token fires, a mutex locked through poisoning), which stay
//! private.

pub(crate) mod cancel;
pub mod hash;
pub mod json;
pub(crate) mod lock;
pub mod panic;
pub mod redact;
pub mod text;

pub use crate::conversation::ids::mint_missing_ids;
