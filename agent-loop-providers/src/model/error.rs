//! What the HTTP models add to [`ModelError`]: reading a provider's error
//! body and a broken stream's error, and [`EnvError`]: a model that cannot
//! be configured from the environment.

use agent_loop_core::conversation::WireFormat;
use agent_loop_core::support::text::{ERROR_TEXT_BYTES, clean_error_text};
use agent_loop_core::turn::{ModelError, ModelErrorKind};

use crate::wire::error_field;

/// The top-level members of a body that [`ModelError::from_error_body`]
/// reads: a body holding neither is no error body, and the error of one
/// that does is read from them alone.
pub(crate) const ERROR_BODY_KEYS: [&str; 2] = ["error", "type"];

/// What the HTTP models add to [`ModelError`] (a trait of this crate's
/// own: the type is the core's).
pub(crate) trait HttpModelError: Sized {
    /// An error of `kind` from the HTTP model of `format`.
    fn of_format(format: WireFormat, kind: ModelErrorKind) -> Self;

    /// With the request id the server sent.
    fn with_request_id(self, request_id: Option<String>) -> Self;

    /// A stream that broke: the provider's error type and message when it
    /// reported one mid-stream (then the error has no source: the wire
    /// error would say the same again), else the wire error as the source.
    fn stream(format: WireFormat, error: crate::wire::WireError) -> Self;

    /// With the `code` and `failed_generation` of the provider's error in
    /// a stream's event `data` (`{"error": {...}}` or the error object),
    /// when it is JSON and has them: Groq reports a failed tool call inside
    /// a 200 stream (`event: error`, `code: "tool_use_failed"`).
    fn with_error_event_fields(self, data: &str) -> Self;

    /// Replaces every occurrence of `secret` in the texts the error keeps
    /// (message, type, code, failed generation, request id) with
    /// `<redacted>`.
    fn scrub(&mut self, secret: &str);

    /// Fills `error_type`, `message` and `code` from a provider error body
    /// (`{"error": {...}}` or `{"type": "error", "error": {...}}`); a body
    /// that is not one leaves them as they are, except that a short plain
    /// text body becomes the message.
    fn read_error_body(&mut self, body: &[u8]);

    /// The error a 2xx body holds instead of a response, told by the
    /// body's top-level members [`ERROR_BODY_KEYS`] alone: `{"error": {...}}`
    /// (OpenAI-compatible servers such as OpenRouter) or `{"type": "error",
    /// "error": {...}}` (Anthropic), as an
    /// [`InvalidResponse`](ModelErrorKind::InvalidResponse) with the
    /// provider's type, message and code. `None` for any other body.
    fn from_error_body(format: WireFormat, value: &serde_json::Value) -> Option<Self>;

    /// Like [`read_error_body`](Self::read_error_body), on a parsed body.
    fn read_error_value(&mut self, value: &serde_json::Value);
}

impl HttpModelError for ModelError {
    fn of_format(format: WireFormat, kind: ModelErrorKind) -> Self {
        let mut error = Self::new(kind);
        error.format = Some(format);
        error
    }

    fn with_request_id(mut self, request_id: Option<String>) -> Self {
        self.request_id = request_id;
        self
    }

    fn stream(format: WireFormat, error: crate::wire::WireError) -> Self {
        // The wire error read as every wire error is (a provider's own
        // error as the type and message), as a broken stream of `format`.
        let mut this = Self::from(error);
        this.format = Some(format);
        this.kind = ModelErrorKind::Stream;
        this
    }

    fn with_error_event_fields(mut self, data: &str) -> Self {
        if !matches!(self.kind, ModelErrorKind::Stream) {
            return self;
        }
        let Ok(value) = serde_json::from_str::<serde_json::Value>(data) else {
            return self;
        };
        let error = match value.get("error") {
            Some(error) if error.is_object() => error,
            _ => &value,
        };
        if self.code.is_none() {
            self.code = error_field(error, "code");
        }
        if let Some(generation) = error_field(error, "failed_generation") {
            self.failed_generation = Some(clean_error_text(&generation, ERROR_TEXT_BYTES));
        }
        self
    }

    fn scrub(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        for text in [
            &mut self.message,
            &mut self.error_type,
            &mut self.code,
            &mut self.failed_generation,
            &mut self.request_id,
        ]
        .into_iter()
        .flatten()
        {
            if text.contains(secret) {
                *text = text.replace(secret, "<redacted>");
            }
        }
    }

    fn read_error_body(&mut self, body: &[u8]) {
        match serde_json::from_slice::<serde_json::Value>(body) {
            Ok(value) => self.read_error_value(&value),
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let text = text.trim();
                if !text.is_empty() {
                    self.message =
                        Some(agent_loop_core::support::text::clean_error_text(text, 1024));
                }
            }
        }
    }

    fn from_error_body(format: WireFormat, value: &serde_json::Value) -> Option<Self> {
        let has_error = value.get("error").is_some_and(|error| !error.is_null());
        let typed_error = value.get("type").and_then(serde_json::Value::as_str) == Some("error");
        if !has_error && !typed_error {
            return None;
        }
        let mut this = Self::of_format(format, ModelErrorKind::InvalidResponse);
        this.read_error_value(value);
        if this.message.is_none() {
            this.message = Some("the server answered 2xx with an error body".to_owned());
        }
        Some(this)
    }

    fn read_error_value(&mut self, value: &serde_json::Value) {
        let error = &value["error"];
        let string = |field: &str| match &error[field] {
            serde_json::Value::String(text) => Some(text.clone()),
            serde_json::Value::Number(number) => Some(number.to_string()),
            _ => None,
        };
        if error.is_object() {
            // Gemini names its error by `status` (`RESOURCE_EXHAUSTED`).
            self.error_type = string("type").or_else(|| string("status"));
            self.message = string("message");
            self.code = string("code");
            // Groq quotes the model's output it could not read as a tool
            // call (`code: "tool_use_failed"`): the turn shows it to the
            // model, bounded as an error text is.
            self.failed_generation =
                string("failed_generation").map(|text| clean_error_text(&text, ERROR_TEXT_BYTES));
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
    /// The environment variables to set, e.g. `OPENAI_MODEL`.
    pub variables: Vec<String>,
}
