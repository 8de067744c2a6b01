//! Provider wire formats: [`ToolInfo`](agent_loop_core::tool::ToolInfo) and the
//! [`Message`](agent_loop_core::conversation::Message) conversation to and from the
//! JSON that OpenAI Chat Completions ([`openai`]), OpenAI Responses
//! ([`responses`]), Anthropic Messages ([`anthropic`]), Gemini's native
//! API ([`gemini`]) and MCP `tools/list` ([`mcp`]) use.
//!
//! Each format module reads and writes the provider's JSON through serde
//! types of its own that mirror the provider's API reference: its
//! `parse_*` functions read a `serde_json::Value` with them (one parser per
//! format), and its `export_*` functions return the `Value`s they write,
//! ready to go into a request body. The mirror types themselves are not
//! public, so a provider's new field is not a breaking change of this
//! crate: what is public is the conversation, the tool declarations, and
//! the JSON.
//! [`output_schema`] turns a native structured output's JSON Schema into
//! the subset each provider's structured outputs accept.
//! [`stream`] assembles a streamed response (Chat Completions chunks,
//! Messages events, Gemini `GenerateContentResponse` chunks) into the
//! [`ModelResponse`](agent_loop_core::conversation::ModelResponse)
//! the format's `parse_response` gives for the same response unstreamed.
//!
//! **Parsing is tolerant** of what real servers send: arguments given as a
//! JSON object (llama.cpp, mlx-lm) or left out (OpenRouter); missing, empty
//! or repeated tool call ids (see *Where ids are minted* below); content
//! blocks this crate does not model (kept verbatim as
//! [`ProviderPart`](agent_loop_core::conversation::ProviderPart)s), provider fields on
//! messages, calls and tool declarations (kept as
//! [`Extras`](agent_loop_core::conversation::Extras)). A payload that does not have
//! the documented shape fails with a [`WireError`] whose
//! [`kind`](WireError::kind) can be matched and whose
//! [`path`](WireError::path) names the culprit
//! (`response.choices[0].message.tool_calls[1]`). Nothing here panics on
//! input. A value nested deeper than 128 levels (built in code: serde_json
//! parses no JSON text that deep) is refused with
//! [`WireErrorKind::TooDeep`] at its root before anything reads it, since
//! reading it would recurse once per level.
//!
//! **Exporting is strict**: what leaves the crate passes the target
//! provider's documented rules. Tool call ids that break them (Anthropic
//! `^[a-zA-Z0-9_-]+$`; OpenAI Chat Completions at most 40 characters,
//! Responses at most 64; Gemini non-empty) and recorded tool names that
//! break `^[a-zA-Z0-9_-]{1,64}$` (Gemini:
//! `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`) are mapped to valid ones,
//! deterministically and the same for a call and its result; empty and
//! whitespace-only text is left out, and so is an assistant message left
//! with nothing to say; blank arguments go out as `{}`, as they ran;
//! reasoning, provider parts and extras go back only to the format they
//! came from.
//!
//! **Where ids are minted, and what a round trip keeps.** A response's
//! `parse_response` (and the stream assemblers) keep what the provider
//! sent: an empty id stays `""`, missing arguments stay `""`. The turn
//! runner mints the ids it needs, deterministically per session (see
//! [`run_turn`](agent_loop_core::Definition::run_turn)). A history's `parse_request`
//! or `parse_messages` must pair each result with its call, so it mints an
//! id for an empty or repeated one there, shared by the call and its
//! result: `call_` and the version 5 UUID of the message's index and the
//! call's position, the same every time the history is parsed. So for
//! everything these parsers accept, parse → export → parse gives the
//! parsed value back except exactly where the export must normalise: a
//! call id the target does not accept ([`id_is_valid`]) comes back as one it
//! does, and blank arguments come back as `{}`; and what an export wrote is
//! a fixpoint (export → parse → export writes it again). The data-driven
//! test over recorded traffic (`tests/it/wire_real.rs`) checks this
//! property on every recording.
//!
//! Two things an export takes as given, because fixing them silently would
//! change what the conversation means:
//!
//! - **Each call's results follow its assistant message**, one per call,
//!   as every provider requires. [`run_turn`](agent_loop_core::Definition::run_turn)
//!   keeps that; for a conversation you stored or built by hand, call
//!   [`conversation::repair`](agent_loop_core::conversation::repair) first: it answers
//!   unanswered calls and refuses (with a typed error) a result out of
//!   place.
//! - **Tool names in `tools` are sent as declared**: the model calls them by
//!   that name, so a mapped name would reach no tool. Bind with
//!   [`NameRules::OpenAi`](agent_loop_core::tool::NameRules::OpenAi) (the default) or
//!   [`NameRules::Portable`](agent_loop_core::tool::NameRules::Portable) for these
//!   formats; [`NameRules::Mcp`](agent_loop_core::tool::NameRules::Mcp) allows dots,
//!   which both refuse.
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/providers.md")]

pub mod anthropic;
mod arguments;
mod blank_text;
mod declaration;
pub(crate) mod decode;
mod dropped;
pub(crate) mod encode;
mod error;
pub mod gemini;
mod ids;
pub mod mcp;
pub mod openai;
pub(crate) mod outgoing;
pub mod output_schema;
pub mod responses;
pub mod stream;
mod string_or_array;
mod target;
pub mod tool_schema;

pub use arguments::RAW_ARGUMENTS_KEY;
pub use declaration::{ParsedRequest, ProviderTool, ToolDeclaration};
pub use dropped::{Dropped, DroppedKind};
// The HTTP models read a streamed error's fields the way the formats do.
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
pub(crate) use error::error_field;
pub use error::{WireError, WireErrorKind};
pub use ids::{
    MISTRAL_ID_LEN, OPENAI_MAX_ID_LEN, RESPONSES_MAX_ID_LEN, id_is_valid, name_is_valid,
};
pub use target::Target;
