//! What the workspace's tests, benches, examples and fuzz targets share,
//! as `tower-test` is tower's: one crate instead of files included with
//! `#[path]`.
//!
//! | module | what it holds | who uses it |
//! | --- | --- | --- |
//! | [`turn_common`] | binding a definition, tool calls and small tools, the conversation invariant | `tests/it`, the soak, the properties |
//! | [`wire_rules`] | the providers' documented rules for a request, as checks on exported JSON | `tests/it`, the properties |
//! | [`properties`] | the properties the fuzz targets and the `*_arbitrary_*` tests both check | `tests/it`, `fuzz` |
//! | [`counting_allocator`] | the system allocator, counting live and peak bytes | the memory bench, the soak, the journal bench |
//! | [`compare`] | a benchmark against a baseline measured back to back, and its report | the timing benches |
//! | [`soak`] | many sessions with every injected fault, and the counts that must be zero | `examples/soak`, `tests/soak.rs` |
//! | `restate_server` | the pinned Restate server and service processes (feature `restate-server`) | `agent-loop-restate`'s tests and bench |
//!
//! Its features forward `agent-loop`'s (`openai`, `anthropic`, `gemini`,
//! `mcp`) to the helpers that need them; `arbitrary` derives the property
//! cases for the fuzz targets.

pub mod compare;
pub mod counting_allocator;
pub mod properties;
#[cfg(feature = "restate-server")]
pub mod restate_server;
pub mod soak;
pub mod turn_common;
pub mod wire_rules;
