//! [`WireError`]: a provider payload that does not have the documented shape.

use agent_loop_core::conversation::WireFormat;
use agent_loop_core::support::json::TooDeep;
use agent_loop_core::turn::{ModelError, ModelErrorKind};

/// What is wrong with a payload: the [`kind`](WireError::kind) of a
/// [`WireError`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireErrorKind {
    /// A field the format requires is absent, e.g. a tool call without
    /// `function`.
    #[error("missing field `{field}`")]
    MissingField {
        /// The missing field's name as the format spells it.
        field: String,
    },
    /// A field has the wrong JSON type, e.g. Anthropic `input` that is not
    /// an object.
    #[error("`{field}` is {found}, expected {expected}")]
    WrongType {
        /// The field's name as the format spells it (for an array element,
        /// its index).
        field: String,
        /// What the format requires, e.g. `"a string"`.
        expected: String,
        /// What was found, e.g. `"an object"`.
        found: String,
    },
    /// A message `role` this format does not have, e.g. `"function"`.
    #[error("unknown role `{role}`")]
    UnknownRole {
        /// The role as found.
        role: String,
    },
    /// A `type` this crate cannot read where a specific one is required: a
    /// response body that is not a message (an `error` body, say).
    /// Unknown content block types are not errors: they are kept as
    /// [`ProviderPart`](agent_loop_core::conversation::ProviderPart)s, except in a
    /// Responses system or developer message, which holds text (and the
    /// input content types only).
    #[error("unsupported `type` `{found}`")]
    UnknownType {
        /// The `type` as found.
        found: String,
    },
    /// An OpenAI response whose `choices` array is empty.
    #[error("`choices` is empty")]
    NoChoices,
    /// A provider-defined tool (Anthropic's `memory_20250818`, say) asked to
    /// be exported to a format it does not belong to: only its own provider
    /// knows what it is.
    #[error(
        "tool `{name}` of type `{tool_type}` is defined by {format} and cannot be sent to another format"
    )]
    ProviderTool {
        /// The tool's name.
        name: String,
        /// The tool's `type`, e.g. `memory_20250818`.
        tool_type: String,
        /// The format that defines it.
        format: WireFormat,
    },
    /// A streamed payload (an SSE `data:` field) that is not JSON text.
    #[error("not JSON: {message}")]
    NotJson {
        /// serde_json's description, e.g. `expected value at line 1 column 1`.
        message: String,
    },
    /// The provider reported an error inside a stream: an OpenAI-compatible
    /// chunk `{"error": {...}}` or an Anthropic `error` event. The stream
    /// carries no HTTP status: this is what the provider said.
    #[error("the provider reported `{error_type}`: {message}")]
    Provider {
        /// The error's type as the provider spelled it (Anthropic
        /// `overloaded_error`; OpenAI-compatible `type`, else `code`), or
        /// `error` when it gave none.
        error_type: String,
        /// The provider's message (the error's JSON text when it has no
        /// `message`).
        message: String,
    },
    /// A streamed index that names nothing the stream started and is not
    /// the next new one: an OpenAI tool call `index` that skips ahead, an
    /// Anthropic `content_block_start` out of order, or a
    /// `content_block_delta`/`content_block_stop` for a block that is not
    /// open.
    #[error("index {index} is out of order (the next new index is {next})")]
    UnexpectedIndex {
        /// The index as found.
        index: u64,
        /// The index a new call or block would have had.
        next: u64,
    },
    /// A stream event or delta where the stream's grammar does not allow
    /// it: content before Anthropic's `message_start` or after its
    /// `message_stop`, a second `message_start`, a `text_delta` for a block
    /// that is not `text`, data after OpenAI's `[DONE]`.
    #[error("unexpected `{event}` here")]
    UnexpectedEvent {
        /// The event name or delta `type` as found (`[DONE]` data counts
        /// as the chunk it is).
        event: String,
    },
    /// A stream asked for its response before it ended: no `[DONE]` and no
    /// `finish_reason` (OpenAI), no `message_stop` and no `stop_reason`
    /// (Anthropic). The connection was most likely cut.
    #[error("the stream ended early")]
    Incomplete,
    /// The payload nests objects and arrays deeper than 128
    /// levels: serde_json refuses such JSON text, so only a value built in
    /// code can, and reading it would recurse once per level. Checked
    /// before anything else reads the value; the path is the value's root.
    /// The error's source is a [`TooDeep`].
    #[error("the payload cannot be read")]
    TooDeep,
    /// Any other departure from the format, as serde describes it.
    #[error("{message}")]
    Invalid {
        /// serde's description, e.g. `expected value at line 1 column 1`.
        message: String,
    },
}

/// A provider payload that does not have the shape its public API reference
/// documents.
///
/// Returned by the `parse_*` functions of [`wire`](crate::wire) and by
/// exports that meet what their format cannot carry.
/// [`kind`](Self::kind) says what is wrong, [`path`](Self::path) says where:
/// a JSON path rooted at the name of what was parsed, e.g.
/// `response.choices[0].message.tool_calls[1]` or `messages[3]`. Display is
/// one line: ``OpenAI Chat Completions: at response.choices[0].message.tool_calls[1]: missing field `function` ``.
/// Nothing in this crate panics on a payload.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{format}: at {path}: {kind}")]
#[non_exhaustive]
pub struct WireError {
    /// The format being parsed.
    pub format: WireFormat,
    /// Where in the payload: a JSON path such as `messages[3].content[0]`.
    pub path: String,
    /// What is wrong.
    pub kind: WireErrorKind,
    /// The depth rule, for [`WireErrorKind::TooDeep`].
    source: Option<TooDeep>,
}

impl WireError {
    pub(crate) fn new(format: WireFormat, path: impl Into<String>, kind: WireErrorKind) -> Self {
        let source = (kind == WireErrorKind::TooDeep).then(TooDeep::new);
        Self {
            format,
            path: path.into(),
            kind,
            source,
        }
    }
}

/// The field `key` of a provider's error object as text: a non-empty
/// string, or a number (some servers send `"code": 400`).
pub(crate) fn error_field(error: &serde_json::Value, key: &str) -> Option<String> {
    match error.get(key) {
        Some(serde_json::Value::String(text)) if !text.is_empty() => Some(text.clone()),
        Some(serde_json::Value::Number(number)) => Some(number.to_string()),
        _ => None,
    }
}

/// The error a provider reported in a body or a stream, as a
/// [`WireErrorKind::Provider`]: a bare string is the message; an object's
/// type is the first of `type_keys` it has as a non-empty string or a
/// number (`type`, `code`, or Gemini's `status`), else `error`, and its
/// message its `message`, else its compact JSON text.
pub(crate) fn provider_error_kind(error: &serde_json::Value, type_keys: &[&str]) -> WireErrorKind {
    use serde_json::Value;
    let text = |key: &str| error_field(error, key);
    match error {
        Value::String(message) => WireErrorKind::Provider {
            error_type: "error".to_owned(),
            message: message.clone(),
        },
        _ => WireErrorKind::Provider {
            error_type: type_keys
                .iter()
                .find_map(|key| text(key))
                .unwrap_or_else(|| "error".to_owned()),
            // `Display` of a JSON value is its compact text.
            message: text("message").unwrap_or_else(|| error.to_string()),
        },
    }
}

impl From<WireError> for ModelError {
    /// A body that is not the provider's response
    /// ([`ModelErrorKind::InvalidResponse`]), e.g. from a parser of this
    /// module. A provider's own error inside an answer
    /// ([`WireErrorKind::Provider`]: a Responses answer that failed) fills
    /// the model error's `error_type` and `message` instead of being its
    /// source, so [`ModelError::exceeds_context_window`] and the one-line
    /// display read it.
    fn from(error: WireError) -> Self {
        let mut model_error = ModelError::new(ModelErrorKind::InvalidResponse);
        model_error.format = Some(error.format);
        match error.kind {
            WireErrorKind::Provider {
                error_type,
                message,
            } => {
                model_error.error_type = Some(error_type);
                model_error.message = Some(message);
                model_error
            }
            _ => model_error.with_source(error),
        }
    }
}
