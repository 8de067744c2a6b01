//! [`WireError`]: a provider payload that does not have the documented shape.

use std::fmt;

/// The wire format a [`WireError`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI Chat Completions (`tools`, `messages`, `chat.completion`).
    OpenAiChat,
    /// Anthropic Messages (`tools`, `messages`, `message`).
    AnthropicMessages,
    /// MCP `tools/list` result.
    McpToolsList,
}

impl fmt::Display for WireFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenAiChat => "OpenAI Chat Completions",
            Self::AnthropicMessages => "Anthropic Messages",
            Self::McpToolsList => "MCP tools/list",
        })
    }
}

/// What is wrong with a payload; see [`WireError::kind`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireErrorKind {
    /// A field the format requires is absent, e.g. a tool call without `id`.
    #[error("missing field `{field}`")]
    MissingField {
        /// The missing field's name as the format spells it.
        field: &'static str,
    },
    /// A field has the wrong JSON type, e.g. OpenAI `arguments` given as an
    /// object instead of a string, or Anthropic `input` that is not an object.
    #[error("`{field}` is {found}, expected {expected}")]
    WrongType {
        /// The field's name as the format spells it (for an array element,
        /// the array's name).
        field: &'static str,
        /// The JSON type the format requires, e.g. `"a string"`.
        expected: &'static str,
        /// The JSON type found, e.g. `"an object"`.
        found: &'static str,
    },
    /// A message `role` this crate does not know, e.g. `"function"`.
    #[error("unknown role `{role}`")]
    UnknownRole {
        /// The role as found.
        role: String,
    },
    /// A `system` or `developer` message: the provider-neutral
    /// [`Message`](crate::turn::Message) has no place for it, so the caller
    /// keeps the system prompt apart and leaves it out of what it parses.
    #[error("role `{role}` has no place in a conversation: keep the system prompt apart")]
    SystemRole {
        /// `"system"` or `"developer"`.
        role: String,
    },
    /// A `type` value this crate does not convert: a content block other
    /// than text and tool use/result (images, server tools, ...), a tool or
    /// tool call whose type is not `"function"`, a response that is not a
    /// message.
    #[error("unsupported `type` `{found}`")]
    UnknownType {
        /// The `type` as found.
        found: String,
    },
    /// An OpenAI response whose `choices` array is empty.
    #[error("`choices` is empty")]
    NoChoices,
}

/// A provider payload that does not have the shape its public API reference
/// documents.
///
/// [`kind`](Self::kind) says what is wrong, [`path`](Self::path) says where:
/// a JSON path rooted at the name of what was parsed, e.g.
/// `response.choices[0].message.tool_calls[1]` or `messages[3]`. Display is
/// one line: `OpenAI Chat Completions: at response.choices[0].message.tool_calls[1]: missing field `id``.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{format}: at {path}: {kind}")]
pub struct WireError {
    format: WireFormat,
    path: String,
    kind: WireErrorKind,
}

impl WireError {
    pub(crate) fn new(format: WireFormat, path: String, kind: WireErrorKind) -> Self {
        Self { format, path, kind }
    }

    /// What is wrong.
    pub fn kind(&self) -> &WireErrorKind {
        &self.kind
    }

    /// The format being parsed.
    pub fn format(&self) -> WireFormat {
        self.format
    }

    /// Where in the payload: a JSON path such as `messages[3].content[0]`.
    pub fn path(&self) -> &str {
        &self.path
    }
}
