//! Real models over HTTP: [`OpenAiModel`] (OpenAI Chat Completions and
//! every OpenAI-compatible server) and [`OpenAiResponsesModel`] (the
//! OpenAI Responses API, for OpenAI's own models) behind the `openai`
//! feature, [`AnthropicModel`] (Anthropic Messages) behind the `anthropic`
//! feature, and [`GeminiModel`] (Gemini's native API) behind the `gemini`
//! feature. The default build has none of them, and no HTTP stack.
//!
//! Each is an [`HttpModel`] over its provider type (`OpenAiChat`,
//! `OpenAiResponses`, `Anthropic`, `Gemini`): the constructors, the
//! server, the key, the settings every provider takes and the transport
//! are the same methods on all four, and each adds its own settings.
//!
//! Each implements [`Model`](agent_loop_core::turn::Model): the mode's instructions
//! go out as the system prompt, ahead of the conversation's own system
//! messages; the mode's tools as the request's `tools` (left out when there
//! are none); the body is built with the [`wire`](crate::wire) module's
//! exports and the answer parsed with its `parse_response`.
//!
//! **Transport.** One `reqwest` client (rustls) per model value, shared by
//! its clones. What the server says about retrying comes first: an
//! `x-should-retry: true` or `false` header (which the official OpenAI and
//! Anthropic SDKs obey) decides; else an attempt that answers 408, 409,
//! 429, 500, 502, 503, 504 or 529, cannot connect, or times out before any
//! response arrived is retried (3 times by default), but never a 429 for
//! an exhausted quota (`insufficient_quota`: another attempt bills the
//! prompt again, to no end). The wait is an exponential backoff with
//! jitter, or the one the server asks for in `retry-after-ms` or
//! `Retry-After` (seconds or an HTTP date); a server that asks for more
//! than a minute is not retried, and the error's `retry_after` says what
//! it asked for, so the caller can schedule. Each attempt has a timeout
//! (120 s by default) that doubles on each retry (at most 8 times), so a
//! slow model is not sent the same request again only to be cut at the
//! same point. A streamed request whose stream reports a provider error
//! (overloaded, rate limited, a server error) before any text or
//! reasoning reached the turn's events is retried the same way, while the
//! request's attempts stay within `max_retries + 1`; a stream that breaks
//! after its text began is not: that text already reached the turn's
//! events. Dropping the `respond` future (what the turn runner does when
//! the turn's `CancellationToken` fires) drops the connection: nothing runs
//! on in the background.
//!
//! **Errors** are [`ModelError`]s: the kind (HTTP status, timeout,
//! connection, invalid response, broken stream), the provider's error type,
//! message and code, the request id and the number of attempts. The API
//! key ([`ApiKey`]) prints as `<redacted>` everywhere.
//!
// A model whose feature is off is no link target: its name then links to
// this module, whose first lines say which feature brings it.
#![cfg_attr(feature = "openai", doc = "[`OpenAiModel`]: OpenAiModel")]
#![cfg_attr(not(feature = "openai"), doc = "[`OpenAiModel`]: self")]
#![cfg_attr(
    feature = "openai",
    doc = "[`OpenAiResponsesModel`]: OpenAiResponsesModel"
)]
#![cfg_attr(not(feature = "openai"), doc = "[`OpenAiResponsesModel`]: self")]
#![cfg_attr(feature = "anthropic", doc = "[`AnthropicModel`]: AnthropicModel")]
#![cfg_attr(not(feature = "anthropic"), doc = "[`AnthropicModel`]: self")]
#![cfg_attr(feature = "gemini", doc = "[`GeminiModel`]: GeminiModel")]
#![cfg_attr(not(feature = "gemini"), doc = "[`GeminiModel`]: self")]
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/http-models.md")]
// A `ModelError` is large (the provider's type, message, code and request
// id), but it is returned once per failed network request: boxing it
// inside the module would buy nothing.
#![allow(clippy::result_large_err)]

mod body;
mod catalog_checks;
mod error;
mod event_body;
mod headers;
mod http;
mod http_model;
mod send;

#[cfg(feature = "anthropic")]
mod anthropic;
#[cfg(feature = "gemini")]
mod gemini;
#[cfg(feature = "openai")]
mod openai;
#[cfg(feature = "openai")]
mod responses;

pub use agent_loop_core::turn::{ModelError, ModelErrorKind};
pub use error::EnvError;
use error::HttpModelError;

#[cfg(feature = "anthropic")]
#[cfg_attr(docsrs, doc(cfg(feature = "anthropic")))]
pub use anthropic::{Anthropic, AnthropicModel};
#[cfg(feature = "gemini")]
#[cfg_attr(docsrs, doc(cfg(feature = "gemini")))]
pub use gemini::{Gemini, GeminiModel, ThinkingLevel};
pub use http::ApiKey;
pub use http_model::{HttpModel, Provider};
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use openai::{MaxTokensField, OpenAiChat, OpenAiModel, ReasoningEffort};
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use responses::{OpenAiResponses, OpenAiResponsesModel, ReasoningSummary};

/// Which tool the model must call, if any: a request's `tool_choice`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the providers' default when tools are given).
    Auto,
    /// No tool call: OpenAI `"none"`, Anthropic `{"type": "none"}`, Gemini
    /// `NONE`.
    None,
    /// At least one tool call: OpenAI `"required"`, Anthropic
    /// `{"type": "any"}`, Gemini `ANY`.
    Required,
    /// A call of this tool.
    Tool(String),
}

/// How much a model reasons before it answers: the one reasoning setting
/// of every HTTP model ([`HttpModel::effort`]), named as the providers
/// name their levels (`ReasoningEffort` of OpenAI's OpenAPI description,
/// `"none"` to `"max"`; `OutputConfigParam.effort` of
/// anthropics/anthropic-sdk-python, `"low"` to `"max"`; `ThinkingLevel`
/// of googleapis/python-genai, `MINIMAL` to `HIGH`).
///
/// Each model sends it in the form its provider takes, or refuses it,
/// typed and before any request, where the provider has no such level
/// (see [`HttpModel::effort`] for the table). Which levels one model of a
/// provider takes (OpenAI's `minimal` on gpt-5 only, Anthropic's `max`
/// since Opus 4.6) is the provider's to answer: a level the provider
/// names is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Effort {
    /// `"none"`: no reasoning (OpenAI's default on gpt-5.1 to gpt-5.5;
    /// gpt-5.6 and gpt-6 reason unless told `"none"`; Anthropic's thinking
    /// turned off; a Gemini 2.5 budget of 0).
    None,
    /// `"minimal"`: the least reasoning short of none (OpenAI's gpt-5,
    /// Gemini 3's `MINIMAL`).
    Minimal,
    /// `"low"`.
    Low,
    /// `"medium"`.
    Medium,
    /// `"high"`: Anthropic's default.
    High,
    /// `"xhigh"`: between `High` and `Max` (OpenAI's gpt-5.2 and later,
    /// Anthropic's Opus 4.7 and later).
    XHigh,
    /// `"max"`: no limit on reasoning depth (in OpenAI's `ReasoningEffort`;
    /// Anthropic's Opus 4.6 and later).
    Max,
}

impl Effort {
    /// The level as OpenAI and Anthropic spell it: `"none"`, `"minimal"`,
    /// `"low"`, `"medium"`, `"high"`, `"xhigh"` or `"max"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
            Self::Max => "max",
        }
    }
}

/// What every HTTP model sends: the settings a user sets every day, and
/// vendor fields merged into the body last.
#[derive(Clone, Debug, Default)]
struct Settings {
    temperature: Option<f64>,
    tool_choice: Option<ToolChoice>,
    parallel_tool_calls: Option<bool>,
    extra: serde_json::Map<String, serde_json::Value>,
    /// The first vendor field whose value nested too deeply; the value was
    /// dropped when set (see [`Settings::set_extra`]).
    too_deep_extra: Option<String>,
    stream: bool,
    /// Refuse, unsent, a request whose export leaves something out.
    refuse_dropped: bool,
    /// The model's facts as given in code, in place of the catalog's.
    facts: Option<Box<crate::catalog::ModelFacts>>,
}

#[cfg(any(feature = "openai", feature = "anthropic"))]
/// The typed refusal of a native-output request whose schema the
/// provider cannot express (see
/// [`wire::output_schema`](crate::wire::output_schema)): sending it would
/// be answered 400, or (closing an open object) constrain the answer to
/// `{}`.
fn inexpressible_output(
    format: agent_loop_core::conversation::WireFormat,
    problem: &crate::wire::output_schema::Inexpressible,
    instead: &str,
) -> ModelError {
    ModelError::of_format(format, ModelErrorKind::Request)
        .with_message(format!(
            "native output: {problem}; the request was not sent ({instead})"
        ))
        .with_source(problem.clone())
}

impl Settings {
    /// Refuses a request that holds a JSON value nested deeper than 128
    /// levels (serde_json parses no JSON text that deep, so only a value
    /// built in code can): building and serialising the body would recurse
    /// once per level. Looks at every value the body copies: the vendor
    /// fields set with `extra`, the conversation's extras and provider
    /// blocks, and the tools' parameters and extras when the caller listed
    /// them (a binding's tools were checked when they were bound, and an
    /// output's schema when it was made: a request checks no schema's depth again).
    fn check_depth(
        &self,
        format: agent_loop_core::conversation::WireFormat,
        request: &agent_loop_core::turn::ModelRequest<'_>,
    ) -> Result<(), ModelError> {
        use agent_loop_core::support::json;

        if let Some(field) = &self.too_deep_extra {
            return Err(ModelError::of_format(format, ModelErrorKind::Request)
                .with_message(format!(
                    "the vendor field `{field}` cannot be sent: the request was not sent"
                ))
                .with_source(json::TooDeep::new()));
        }
        let too_deep = request
            .conversation
            .iter()
            .flat_map(agent_loop_core::conversation::Message::json_values)
            .any(json::too_deep)
            || (!request.tools.is_checked()
                && request
                    .tools
                    .iter()
                    .any(agent_loop_core::ToolInfo::too_deep));
        if too_deep {
            return Err(ModelError::of_format(format, ModelErrorKind::Request)
                .with_message(
                    "a value in the conversation or a tool cannot be sent: the request was not sent",
                )
                .with_source(json::TooDeep::new()));
        }
        Ok(())
    }

    /// What to do when the export of a request's conversation left
    /// something out (a conversation begun on another provider): refuse
    /// the request, unsent, when [`refuse_dropped`](Self::refuse_dropped)
    /// is set; else send it and log one warning naming what was left out
    /// (kinds and places only: no content reaches the log).
    fn check_dropped(
        &self,
        format: agent_loop_core::conversation::WireFormat,
        dropped: &[crate::wire::Dropped],
    ) -> Result<(), ModelError> {
        if dropped.is_empty() {
            return Ok(());
        }
        const SHOWN: usize = 8;
        let mut list = dropped
            .iter()
            .take(SHOWN)
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        if dropped.len() > SHOWN {
            list.push_str(&format!("; and {} more", dropped.len() - SHOWN));
        }
        if self.refuse_dropped {
            return Err(
                ModelError::of_format(format, ModelErrorKind::Request).with_message(format!(
                    "{format} cannot carry {list}: the request was not sent"
                )),
            );
        }
        tracing::warn!(
            format = %format,
            count = dropped.len(),
            dropped = %list,
            "the request leaves out what its format cannot carry"
        );
        Ok(())
    }

    /// Keeps a vendor field; one nested too deeply to copy into a body is
    /// dropped at once, without recursion (the model owns it, and
    /// serde_json's drop of it could overflow the stack), and remembered so
    /// that every request is refused.
    fn set_extra(&mut self, field: String, value: serde_json::Value) {
        match agent_loop_core::support::json::within_depth(value) {
            Some(value) => {
                self.extra.insert(field, value);
            }
            None => {
                self.too_deep_extra.get_or_insert(field);
            }
        }
    }

    /// Merges the vendor fields into `body`, replacing what is there; a
    /// `null` one removes the field.
    fn merge_extra(&self, body: &mut serde_json::Map<String, serde_json::Value>) {
        for (key, value) in &self.extra {
            if value.is_null() {
                body.remove(key);
            } else {
                body.insert(key.clone(), value.clone());
            }
        }
    }
}

/// An environment variable, `None` when unset or blank.
fn env_var(variable: &str) -> Option<String> {
    std::env::var(variable)
        .ok()
        .filter(|value| !value.trim().is_empty())
}
