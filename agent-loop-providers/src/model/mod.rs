//! Real models over HTTP: [`OpenAiModel`] (OpenAI Chat Completions and
//! every OpenAI-compatible server) and [`OpenAiResponsesModel`] (the
//! OpenAI Responses API, for OpenAI's own models) behind the `openai`
//! feature, [`AnthropicModel`] (Anthropic Messages) behind the `anthropic`
//! feature, and [`GeminiModel`] (Gemini's native API) behind the `gemini`
//! feature. The default build has none of them, and no HTTP stack.
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

mod error;
mod event_body;
mod headers;
mod http;
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
pub use anthropic::AnthropicModel;
#[cfg(feature = "gemini")]
#[cfg_attr(docsrs, doc(cfg(feature = "gemini")))]
pub use gemini::{GeminiModel, ThinkingLevel};
pub use http::ApiKey;
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use openai::{MaxTokensField, OpenAiModel, ReasoningEffort};
#[cfg(feature = "openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "openai")))]
pub use responses::{OpenAiResponsesModel, ReasoningSummary};

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

/// How much a model thinks before it answers, and how many tokens it
/// spends on the answer: the levels of Anthropic's `output_config.effort`,
/// named as the API spells them (`OutputConfigParam.effort` of
/// anthropics/anthropic-sdk-python, `src/anthropic/types/output_config_param.py`:
/// `"low"`, `"medium"`, `"high"`, `"xhigh"`, `"max"`). The API's default is
/// `High`. Which levels a model takes is the provider's to say (Anthropic's
/// "Effort" guide, <https://platform.claude.com/docs/en/build-with-claude/effort>:
/// `Max` came with Opus 4.6, `XHigh` with Opus 4.7); a level a model does
/// not take is answered by the provider, not refused here.
#[cfg_attr(
    feature = "anthropic",
    doc = "\nSent by [`AnthropicModel::effort`], in the form each Claude model takes."
)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Effort {
    /// `"low"`: the fewest tokens; simple questions may get no thinking.
    Low,
    /// `"medium"`.
    Medium,
    /// `"high"`: the API's default.
    High,
    /// `"xhigh"`: between `High` and `Max`.
    XHigh,
    /// `"max"`: no limit on thinking depth.
    Max,
}

impl Effort {
    /// The level as the API spells it: `"low"`, `"medium"`, `"high"`,
    /// `"xhigh"` or `"max"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::XHigh => "xhigh",
            Self::Max => "max",
        }
    }
}

/// What both models send: the settings a user sets every day, and vendor
/// fields merged into the body last.
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

/// What a model's `from_env` reads: the model name, and a key or a base
/// URL (a local server needs no key; the official endpoint needs no URL).
struct EnvEndpoint {
    model: String,
    api_key: Option<ApiKey>,
    base_url: Option<String>,
}

impl EnvEndpoint {
    /// Reads `{PREFIX}_MODEL`, `{PREFIX}_API_KEY` and `{PREFIX}_BASE_URL`
    /// through `lookup` (blank counts as unset); `key_hint` is how the
    /// error names the missing key.
    fn read(
        lookup: impl Fn(&str) -> Option<String>,
        prefix: &str,
        key_hint: &str,
    ) -> Result<Self, EnvError> {
        let model = lookup(&format!("{prefix}_MODEL"));
        let api_key = lookup(&format!("{prefix}_API_KEY"));
        let base_url = lookup(&format!("{prefix}_BASE_URL"));
        let mut variables = Vec::new();
        if model.is_none() {
            variables.push(format!("{prefix}_MODEL"));
        }
        if api_key.is_none() && base_url.is_none() {
            variables.push(key_hint.to_owned());
        }
        match model {
            Some(model) if variables.is_empty() => Ok(Self {
                model,
                api_key: api_key.map(ApiKey::new),
                base_url,
            }),
            _ => Err(EnvError { variables }),
        }
    }
}

#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
/// The export target of a model at `base_url` named `model`: the
/// provider is the URL's host, with its port when the URL gives one
/// (`api.deepseek.com`, `127.0.0.1:8080`), lower-case; unknown when the URL
/// does not parse (the request then fails on it anyway).
fn endpoint_target(base_url: &str, model: &str) -> crate::wire::Target {
    let provider = reqwest::Url::parse(base_url).ok().and_then(|url| {
        let host = url.host_str()?.to_ascii_lowercase();
        Some(match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        })
    });
    let mut target = crate::wire::Target::new().model(model);
    target.provider = provider;
    target
}

#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
/// `response` with `target` recorded as the origin of every
/// provider-specific piece of it: what each HTTP model hands back.
fn from_target(
    mut response: agent_loop_core::conversation::ModelResponse,
    target: &crate::wire::Target,
) -> agent_loop_core::conversation::ModelResponse {
    response
        .message
        .record_origin(target.provider.as_deref(), target.model.as_deref());
    response
}

/// An environment variable, `None` when unset or blank.
fn env_var(variable: &str) -> Option<String> {
    std::env::var(variable)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Generates the setters both models share, on `$model` (which has
/// `settings: Settings` and `transport: http::Transport` fields).
macro_rules! shared_setters {
    ($model:ty) => {
        impl $model {
            /// The sampling temperature (`temperature`).
            pub fn temperature(mut self, temperature: f64) -> Self {
                self.settings.temperature = Some(temperature);
                self
            }

            /// Which tool the model must call (`tool_choice`); sent only
            /// when the mode has tools.
            pub fn tool_choice(mut self, choice: $crate::model::ToolChoice) -> Self {
                self.settings.tool_choice = Some(choice);
                self
            }

            /// Whether the model may ask for several calls at once (OpenAI
            /// `parallel_tool_calls`, Anthropic
            /// `tool_choice.disable_parallel_tool_use`); sent only when the
            /// mode has tools. Unset: the provider's default (allowed).
            pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
                self.settings.parallel_tool_calls = Some(parallel);
                self
            }

            /// A top-level body field for anything vendor-specific
            /// (`top_p`, `seed`, `metadata`, `service_tier`, …), written
            /// last: it replaces a field this model sets itself, and
            /// `serde_json::Value::Null` removes one (Mistral answers 422
            /// and xAI 400 to the `stream_options` a streamed Chat
            /// Completions request carries: `.extra("stream_options",
            /// Value::Null)`). Repeat for several fields.
            ///
            /// A `value` nested deeper than 128 levels (only code builds
            /// one) is dropped here, without recursion, and every request
            /// of the model then fails with
            /// [`ModelErrorKind::Request`](crate::model::ModelErrorKind::Request)
            /// naming the field, unsent.
            pub fn extra(mut self, field: impl Into<String>, value: serde_json::Value) -> Self {
                self.settings.set_extra(field.into(), value);
                self
            }

            /// Stream the response (server-sent events): its text and
            /// reasoning go out as
            /// [`TurnEvent::TextDelta`](agent_loop_core::turn::TurnEvent::TextDelta)
            /// and [`ReasoningDelta`](agent_loop_core::turn::TurnEvent::ReasoningDelta)
            /// as they arrive, and the assembled response is what the
            /// unstreamed request returns. Off by default.
            pub fn stream(mut self, stream: bool) -> Self {
                self.settings.stream = stream;
                self
            }

            /// Refuse a request whose conversation holds what this model's
            /// format cannot carry (see [`wire::Dropped`](crate::wire::Dropped):
            /// reasoning, provider parts and extras of another provider's
            /// format, images where the format takes none), with
            /// [`ModelErrorKind::Request`](crate::model::ModelErrorKind::Request)
            /// naming each, unsent. Off by default: the request goes out
            /// without them and one `tracing` warning per request names
            /// what was left out (kinds and places, never content).
            pub fn refuse_dropped(mut self, refuse: bool) -> Self {
                self.settings.refuse_dropped = refuse;
                self
            }

            /// The timeout of each attempt (120 s by default): unstreamed,
            /// until the whole answer is read; streamed, until the headers
            /// and then between two pieces of the body (an event, or a
            /// keep-alive comment such as OpenRouter's `: OPENROUTER
            /// PROCESSING`, so a long-thinking stream is not cut). Once
            /// the stream has said why the model stopped, 2 s without an
            /// event (or this timeout, if shorter) end it with the whole
            /// answer: servers that never send `[DONE]` or `message_stop`
            /// and hold the connection open cost neither the timeout nor
            /// the answer. A timeout before any response
            /// arrived (connecting, the headers, a whole unstreamed
            /// answer) is retried like a connection error, and the retry
            /// has twice the time (at most 8 times this timeout); a stream
            /// that stalls once its events began is not retried.
            pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
                self.transport.timeout = timeout;
                self
            }

            /// Retries after a retryable failure (3 by default; 0 sends
            /// once), a stream's error before its content included: a
            /// request makes at most this many attempts plus one.
            pub fn max_retries(mut self, retries: u32) -> Self {
                self.transport.max_retries = retries;
                self
            }

            /// The backoff between retries: from `min` (500 ms by default),
            /// doubling, at most `max` (8 s by default), with jitter. A
            /// server's `Retry-After` replaces it.
            pub fn backoff(mut self, min: std::time::Duration, max: std::time::Duration) -> Self {
                self.transport.min_backoff = min;
                self.transport.max_backoff = max.max(min);
                self
            }
        }
    };
}

use shared_setters;
