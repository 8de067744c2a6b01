//! agent-loop-providers: the providers of [agent-loop]'s tool loop. Each
//! provider is a format ([`wire`]: its JSON to and from the provider-neutral
//! conversation of `agent-loop-core`) and an HTTP model (`model`, one
//! feature per provider) that sends a turn's requests in that format; and
//! [`cassette`] records any model's traffic once and replays it offline.
//!
//! Most users depend on the `agent-loop` crate, which re-exports these
//! modules under the same names (`agent_loop_providers::wire`, `agent_loop_providers::model`,
//! `agent_loop_providers::cassette`).
//!
//! [agent-loop]: https://docs.rs/agent-loop
//!
//! | module | what | feature |
//! | --- | --- | --- |
//! | [`wire`] | OpenAI Chat Completions and Responses, Anthropic Messages, Gemini and MCP `tools/list` JSON, streams assembled, native-output schemas per provider | always |
//! | [`cassette`] | a model's traffic recorded once ([`Recorder`](cassette::Recorder)) and replayed offline ([`Replayer`](cassette::Replayer)), compared by meaning | always |
//! | [`catalog`] | each known model's context window, largest output, prices per million tokens and whether it reasons, calls tools and takes a temperature: a snapshot of models.dev, entries added or overridden in code | always |
//! | `model` | `OpenAiModel`, `OpenAiResponsesModel` (`openai`), `AnthropicModel` (`anthropic`), `GeminiModel` (`gemini`) over HTTP (reqwest, rustls): one `HttpModel` over each provider's type | `openai`, `anthropic`, `gemini` |
//!
//! Why the formats and the HTTP models are one crate: the models write a
//! request body straight from the borrowed conversation through the
//! formats' own serde types, which stay private so that a provider's new
//! field is never a breaking change (see `providers.md` on [`wire`]).
//!
//! Decisions: [`wire`] (`providers.md`), `model` (`http-models.md`).

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod cassette;
pub mod catalog;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "openai", feature = "anthropic", feature = "gemini")))
)]
pub mod model;
pub mod wire;
