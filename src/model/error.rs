//! [`ModelError`]: a request to a provider that failed, and [`EnvError`]:
//! a model that cannot be configured from the environment.

use std::fmt;
use std::time::Duration;

use crate::conversation::WireFormat;
use crate::tool::BoxError;

/// What went wrong with a model request: the [`kind`](ModelError::kind) of
/// a [`ModelError`].
#[derive(Clone, Debug, PartialEq, Eq)]
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
    /// documented shape (a [`WireError`](crate::wire::WireError) source),
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
        }
    }
}

/// A model request that failed, as [`OpenAiModel`] and [`AnthropicModel`]
/// return it (boxed, so it is the source of
/// [`TurnError::Model`](crate::turn::TurnError::Model); downcast to read
/// it).
///
/// [`kind`](Self::kind) says what failed; the provider's own `type`,
/// `message` and `code` are parsed from its error body when it sent one
/// (OpenAI `{"error": {"message", "type", "code"}}`, Anthropic
/// `{"type": "error", "error": {"type", "message"}}`), with the request id
/// header (`x-request-id`, `request-id`) to quote to support. Display is
/// one line: `OpenAI Chat Completions: HTTP 401 after 1 attempt:
/// invalid_request_error: Incorrect API key provided (request id req_1)`.
/// The API key is never part of it.
///
// A model whose feature is off is no link target: its name then links to
// this module, which says which feature brings it.
#[cfg_attr(feature = "openai", doc = "[`OpenAiModel`]: super::OpenAiModel")]
#[cfg_attr(not(feature = "openai"), doc = "[`OpenAiModel`]: super")]
#[cfg_attr(
    feature = "anthropic",
    doc = "[`AnthropicModel`]: super::AnthropicModel"
)]
#[cfg_attr(not(feature = "anthropic"), doc = "[`AnthropicModel`]: super")]
#[derive(Debug)]
#[non_exhaustive]
pub struct ModelError {
    /// The provider's format.
    pub format: WireFormat,
    /// What failed.
    pub kind: ModelErrorKind,
    /// The provider's error `type`, e.g. `invalid_request_error`,
    /// `overloaded_error`.
    pub error_type: Option<String>,
    /// The provider's error message.
    pub message: Option<String>,
    /// The provider's error `code` (OpenAI), e.g. `invalid_api_key`.
    pub code: Option<String>,
    /// The request id the server sent (`x-request-id` for OpenAI,
    /// `request-id` for Anthropic).
    pub request_id: Option<String>,
    /// HTTP requests made, retries included (`1`: not retried; `0`: none
    /// could be sent).
    pub attempts: u32,
    /// How long the server asked to wait (`retry-after-ms`, `Retry-After`)
    /// on the last answer, when it said.
    pub retry_after: Option<Duration>,
    source: Option<BoxError>,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.format, self.kind)?;
        let plural = if self.attempts == 1 { "" } else { "s" };
        write!(f, " after {} attempt{plural}", self.attempts)?;
        match (&self.error_type, &self.message) {
            (Some(error_type), Some(message)) => write!(f, ": {error_type}: {message}")?,
            (None, Some(message)) => write!(f, ": {message}")?,
            (Some(error_type), None) => write!(f, ": {error_type}")?,
            (None, None) => {}
        }
        if let Some(request_id) = &self.request_id {
            write!(f, " (request id {request_id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}

impl ModelError {
    pub(crate) fn new(format: WireFormat, kind: ModelErrorKind) -> Self {
        Self {
            format,
            kind,
            error_type: None,
            message: None,
            code: None,
            request_id: None,
            attempts: 0,
            retry_after: None,
            source: None,
        }
    }

    pub(crate) fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    pub(crate) fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    pub(crate) fn with_request_id(mut self, request_id: Option<String>) -> Self {
        self.request_id = request_id;
        self
    }

    /// A stream that broke: the provider's error type and message when it
    /// reported one mid-stream.
    pub(crate) fn stream(format: WireFormat, error: crate::wire::WireError) -> Self {
        let mut this = Self::new(format, ModelErrorKind::Stream);
        if let crate::wire::WireErrorKind::Provider {
            error_type,
            message,
        } = &error.kind
        {
            this.error_type = Some(error_type.clone());
            this.message = Some(message.clone());
        }
        this.with_source(error)
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

    /// Fills `error_type`, `message` and `code` from a provider error body
    /// (`{"error": {...}}` or `{"type": "error", "error": {...}}`); a body
    /// that is not one leaves them as they are, except that a short plain
    /// text body becomes the message.
    pub(crate) fn read_error_body(&mut self, body: &[u8]) {
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => self.read_error_value(&value),
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                if !text.is_empty() {
                    self.message = Some(crate::text::clean_error_text(text, 1024));
                }
            }
        }
    }

    /// The error a 2xx body holds instead of a response: `{"error": {...}}`
    /// (OpenAI-compatible servers such as OpenRouter) or `{"type": "error",
    /// "error": {...}}` (Anthropic), as an
    /// [`InvalidResponse`](ModelErrorKind::InvalidResponse) with the
    /// provider's type, message and code. `None` for any other body.
    pub(crate) fn from_error_body(format: WireFormat, value: &serde_json::Value) -> Option<Self> {
        let has_error = value.get("error").is_some_and(|error| !error.is_null());
        let typed_error = value.get("type").and_then(serde_json::Value::as_str) == Some("error");
        if !has_error && !typed_error {
            return None;
        }
        let mut this = Self::new(format, ModelErrorKind::InvalidResponse);
        this.read_error_value(value);
        if this.message.is_none() {
            this.message = Some("the server answered 2xx with an error body".to_owned());
        }
        Some(this)
    }

    /// Like [`read_error_body`](Self::read_error_body), on a parsed body.
    pub(crate) fn read_error_value(&mut self, value: &serde_json::Value) {
        let error = &value["error"];
        let string = |field: &str| match &error[field] {
            serde_json::Value::String(text) => Some(text.clone()),
            serde_json::Value::Number(number) => Some(number.to_string()),
            _ => None,
        };
        if error.is_object() {
            self.error_type = string("type");
            self.message = string("message");
            self.code = string("code");
        } else if let Some(message) = error.as_str() {
            // Some compatible servers send `{"error": "..."}`.
            self.message = Some(message.to_owned());
        }
    }
}

/// A model could not be configured from the environment: the variables
/// that must be set. Display names them, e.g. `set OPENAI_MODEL`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("set {}", .variables.join(" and "))]
#[non_exhaustive]
pub struct EnvError {
    /// What to set, e.g. `OPENAI_MODEL`, `OPENAI_API_KEY or OPENAI_BASE_URL`.
    pub variables: Vec<String>,
}
