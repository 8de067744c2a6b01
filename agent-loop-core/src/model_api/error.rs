//! [`ModelError`]: why a [`Model`](crate::turn::Model) request failed, the
//! error of [`TurnError::Model`](crate::turn::TurnError::Model).

use std::fmt;
use std::time::Duration;

use crate::conversation::WireFormat;
use crate::model_api::refusals::{self, Meaning, Said};
use crate::tool::BoxError;

/// What went wrong with a model request: the [`kind`](ModelError::kind) of
/// a [`ModelError`].
///
/// As JSON (a cassette's recorded error), tagged by `kind` in snake case:
/// `{"kind": "http", "status": 400}`, `{"kind": "timeout"}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The server answered with an HTTP error status (after the retries
    /// allowed for a retryable one).
    Http {
        /// The status code, e.g. `401`.
        status: u16,
    },
    /// No answer within the configured timeout (see the models'
    /// `timeout` setter). Retried when no response had arrived yet
    /// (connecting, waiting for the headers, reading an unstreamed answer);
    /// not retried when a stream stalls after its events began.
    Timeout,
    /// The connection could not be made or broke before an answer (after
    /// the retries allowed).
    Connect,
    /// The server answered 2xx with a body that is not the provider's
    /// response: not JSON (a [`serde_json::Error`] source), not of the
    /// documented shape (the format's wire error as the source; a
    /// provider's own error inside the answer as `error_type` and
    /// `message`),
    /// or the provider's error body (`{"error": {...}}`, which OpenRouter
    /// and some OpenAI-compatible proxies answer with 200, or Anthropic's
    /// `{"type": "error", "error": {...}}`), whose type, message and code
    /// are then in [`ModelError::error_type`], [`ModelError::message`] and
    /// [`ModelError::code`]. A streamed request answered with a body that
    /// is not `text/event-stream` but JSON is one too. Not retried.
    InvalidResponse,
    /// A streamed response broke: a malformed server-sent event, an
    /// `error` event sent mid-stream (its type and message are in
    /// [`ModelError::error_type`] and [`ModelError::message`]), a stream
    /// cut before its end, or chunks that do not assemble.
    Stream,
    /// The request could not be sent for another reason (an invalid base
    /// URL, a body that does not serialise), or was not sent because the
    /// provider refuses its settings (Anthropic's rules for extended
    /// thinking, see `AnthropicModel::thinking_budget`): the message names
    /// the rule.
    Request,
    /// The model panicked; the message is the panic's.
    Panicked,
    /// A model of your own failed for its own reason: the source is its
    /// error ([`ModelError::other`], or `?` on a [`BoxError`]).
    Other,
}

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http { status } => write!(f, "HTTP {status}"),
            Self::Timeout => f.write_str("timed out"),
            Self::Connect => f.write_str("could not connect"),
            Self::InvalidResponse => f.write_str("invalid response"),
            Self::Stream => f.write_str("the stream broke"),
            Self::Request => f.write_str("the request could not be sent"),
            Self::Panicked => f.write_str("the model panicked"),
            Self::Other => f.write_str("failed"),
        }
    }
}

/// A model request that failed: what every [`Model`](crate::turn::Model)
/// returns, and the error of [`TurnError::Model`](crate::turn::TurnError::Model).
///
/// [`kind`](Self::kind) says what failed. The HTTP models
/// (`model::OpenAiModel`, `model::AnthropicModel`) fill the rest: the
/// provider's format, its own error `type`, `message` and `code` parsed from
/// its error body when it sent one (OpenAI `{"error": {"message", "type",
/// "code"}}`, Anthropic `{"type": "error", "error": {"type", "message"}}`),
/// the request id header (`x-request-id`, `request-id`) to quote to
/// support, the attempts made and the wait the server asked for. A model of
/// your own returns [`ModelError::other`] (or `?` on a [`BoxError`], or on
/// a wire error of the `agent-loop-providers` formats).
///
/// Display is one line and never holds the API key: `OpenAI Chat
/// Completions: HTTP 401 after 1 attempt: invalid_request_error: Incorrect
/// API key provided (request id req_1)`; for a model of your own, `model:
/// failed`, its cause in `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{}", Line(self))]
#[non_exhaustive]
pub struct ModelError {
    /// The provider's format, for the HTTP models; `None` for a model of
    /// your own.
    pub format: Option<WireFormat>,
    /// What failed.
    pub kind: ModelErrorKind,
    /// The provider's error `type`, e.g. `invalid_request_error`,
    /// `overloaded_error`.
    pub error_type: Option<String>,
    /// The provider's error message, or what the crate says of the
    /// failure.
    pub message: Option<String>,
    /// The provider's error `code` (OpenAI), e.g. `invalid_api_key`.
    pub code: Option<String>,
    /// The model's output the provider could not read as a tool call, as
    /// it quoted it (Groq's `failed_generation`, from an error body or a
    /// stream's `error` event), cleaned of control characters (a run of
    /// white space, line breaks too, becomes one space) and bounded to 1,024 bytes of UTF-8 as an
    /// error text is ([`ERROR_TEXT_BYTES`](crate::support::text::ERROR_TEXT_BYTES));
    /// see [`is_failed_tool_call`](Self::is_failed_tool_call).
    pub failed_generation: Option<String>,
    /// The request id the server sent (`x-request-id` for OpenAI,
    /// `request-id` for Anthropic).
    pub request_id: Option<String>,
    /// HTTP requests made, retries included (`1`: not retried; `0`: none
    /// could be sent, or not an HTTP model).
    pub attempts: u32,
    /// How long the server asked to wait (`retry-after-ms`, `Retry-After`)
    /// on the last answer, when it said: what it said, even when that was
    /// longer than the models wait (60 s), so a caller can schedule the
    /// next try.
    pub retry_after: Option<Duration>,
    /// The server's `x-should-retry` header, when it sent one: the official
    /// OpenAI and Anthropic SDKs obey it before the status, and so do the
    /// models.
    pub should_retry: Option<bool>,
    #[source]
    source: Option<BoxError>,
}

/// The one line a [`ModelError`] prints.
struct Line<'e>(&'e ModelError);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = self.0;
        match error.format {
            Some(format) => write!(f, "{format}: {}", error.kind)?,
            None => write!(f, "model: {}", error.kind)?,
        }
        if error.attempts > 0 {
            let plural = if error.attempts == 1 { "" } else { "s" };
            write!(f, " after {} attempt{plural}", error.attempts)?;
        }
        match (&error.error_type, &error.message) {
            (Some(error_type), Some(message)) => write!(f, ": {error_type}: {message}")?,
            (None, Some(message)) => write!(f, ": {message}")?,
            (Some(error_type), None) => write!(f, ": {error_type}")?,
            (None, None) => {}
        }
        if let Some(request_id) = &error.request_id {
            write!(f, " (request id {request_id})")?;
        }
        Ok(())
    }
}

impl ModelError {
    /// An error of `kind`, with nothing else known.
    pub fn new(kind: ModelErrorKind) -> Self {
        Self {
            format: None,
            kind,
            error_type: None,
            message: None,
            code: None,
            failed_generation: None,
            request_id: None,
            attempts: 0,
            retry_after: None,
            should_retry: None,
            source: None,
        }
    }

    /// A model of your own failed with `source`
    /// ([`ModelErrorKind::Other`]).
    pub fn other(source: impl Into<BoxError>) -> Self {
        Self::new(ModelErrorKind::Other).with_source(source)
    }

    /// The error of a model that panicked with `message`.
    pub(crate) fn panicked(message: String) -> Self {
        Self::new(ModelErrorKind::Panicked).with_message(message)
    }

    /// With `source` as its cause.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// With `message` saying what failed.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The HTTP status, for [`ModelErrorKind::Http`].
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            ModelErrorKind::Http { status } => Some(status),
            _ => None,
        }
    }

    /// `true` when the request was retried (more than one attempt).
    pub fn was_retried(&self) -> bool {
        self.attempts > 1
    }

    /// `true` when the provider refused the request because its input does
    /// not fit the model's context window, as each says it:
    ///
    /// | provider | what it answers |
    /// | --- | --- |
    /// | OpenAI (Chat Completions, Responses) | `code: "context_length_exceeded"` (HTTP 400, or a Responses answer or stream that failed: `status: "failed"`, `response.failed`) |
    /// | Anthropic | HTTP 400 `invalid_request_error`, `prompt is too long: 208310 tokens > 200000 maximum`, or `input length and max_tokens exceed context limit: …` |
    /// | Gemini | HTTP 400 `INVALID_ARGUMENT`, `The input token count (…) exceeds the maximum number of tokens allowed (…)` |
    /// | vLLM, DeepSeek and other compatible servers | HTTP 400, `This model's maximum context length is … tokens` |
    /// | llama.cpp's server | `type: "exceed_context_size_error"` |
    /// | xAI | HTTP 400, `This model's maximum prompt length is 131072 but the request contains 136973 tokens.` |
    /// | LM Studio | HTTP 400, `… the model is loaded with context length of only 32768 tokens, which is not enough …`, `The number of tokens to keep from the initial prompt is greater than the context length …`, or llama.cpp's `Cannot truncate prompt with n_keep (…) >= n_ctx (…)` |
    ///
    /// A message is read only on a refusal (HTTP 400, an error body
    /// answered with 200, a stream's error event): a rate limit's message
    /// that sounds alike is not a full window. The crate keeps these in one
    /// table, with the refusals that mean something else
    /// ([`is_failed_tool_call`](Self::is_failed_tool_call)).
    ///
    /// A turn that compacts (see [`context`](crate::context)) compacts and
    /// asks again once when this is `true`. Anthropic's finish reason
    /// `model_context_window_exceeded` is a response, not an error:
    /// [`FinishReason::ContextWindowExceeded`](crate::conversation::FinishReason::ContextWindowExceeded).
    pub fn exceeds_context_window(&self) -> bool {
        self.refusal() == Some(Meaning::ContextWindowFull)
    }

    /// What the refusals table says this error means.
    fn refusal(&self) -> Option<Meaning> {
        refusals::meaning(&Said {
            refused: matches!(
                self.kind,
                ModelErrorKind::Http { status: 400 }
                    | ModelErrorKind::InvalidResponse
                    | ModelErrorKind::Stream
            ),
            code: self.code.as_deref(),
            error_type: self.error_type.as_deref(),
            message: self.message.as_deref(),
        })
    }

    /// `true` when the provider refused the model's own output because it
    /// could not read it as a tool call: the model made a mistake it may
    /// mend if told, as Groq says it (HTTP 400, `code: "tool_use_failed"`,
    /// the output in [`failed_generation`](Self::failed_generation)).
    ///
    /// A turn tells the model what went wrong (a user message quoting the
    /// failed output) and asks again, within its limits, at most twice in
    /// a row; a third in a row fails the turn with this error. That is
    /// what the providers' own guidance and other agent loops do
    /// (pydantic/pydantic-ai PR #2774, huggingface/smolagents #1119).
    pub fn is_failed_tool_call(&self) -> bool {
        self.refusal() == Some(Meaning::FailedToolCall)
    }
}

impl From<BoxError> for ModelError {
    /// A model of your own failed ([`ModelErrorKind::Other`]); a boxed
    /// `ModelError` is taken out of its box as it is.
    fn from(source: BoxError) -> Self {
        match source.downcast::<ModelError>() {
            Ok(error) => *error,
            Err(source) => Self::other(source),
        }
    }
}

impl From<&str> for ModelError {
    /// A model of your own failed, for this reason
    /// ([`ModelErrorKind::Other`]).
    fn from(reason: &str) -> Self {
        Self::other(reason)
    }
}

impl From<String> for ModelError {
    /// A model of your own failed, for this reason
    /// ([`ModelErrorKind::Other`]).
    fn from(reason: String) -> Self {
        Self::other(reason)
    }
}
