//! [`Extras`]: provider fields this crate does not model, kept with the
//! [`Origin`] they came from; and [`WireFormat`], the formats.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conversation::Origin;

/// A provider wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WireFormat {
    /// OpenAI Chat Completions (`tools`, `messages`, `chat.completion`), and
    /// every server that speaks it: DeepSeek, Gemini's OpenAI-compatible
    /// endpoint, OpenRouter, vLLM, llama.cpp, Ollama.
    OpenAiChat,
    /// Anthropic Messages (`tools`, `messages`, `message`).
    AnthropicMessages,
    /// OpenAI Responses (`tools`, `input` items, `response`): OpenAI's API
    /// for its reasoning models.
    OpenAiResponses,
    /// Gemini's native API (`tools`, `contents`, `GenerateContentResponse`),
    /// the format of the Gemini API and of Vertex AI.
    Gemini,
    /// MCP `tools/list` result.
    McpToolsList,
}

impl fmt::Display for WireFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenAiChat => "OpenAI Chat Completions",
            Self::AnthropicMessages => "Anthropic Messages",
            Self::OpenAiResponses => "OpenAI Responses",
            Self::Gemini => "Gemini",
            Self::McpToolsList => "MCP tools/list",
        })
    }
}

/// Fields of one provider object (a message, a content part, a tool call, a
/// tool declaration) that this crate does not model, kept verbatim with the
/// format they came from: Gemini's `extra_content` (which holds the
/// `thought_signature` Gemini requires back), Anthropic's `caller`,
/// `cache_control` and `citations`, OpenAI's `name`.
///
/// The `wire` exporters write them back to objects of the
/// same format only; another format never sees them. Empty by default.
///
/// ```
/// use agent_loop_core::conversation::{Extras, WireFormat};
/// use serde_json::json;
///
/// let extras = Extras::new(
///     WireFormat::OpenAiChat,
///     json!({ "extra_content": { "google": { "thought_signature": "c2ln" } } })
///         .as_object()
///         .cloned()
///         .unwrap_or_default(),
/// );
/// assert!(extras.fields_for(WireFormat::OpenAiChat).is_some());
/// assert!(extras.fields_for(WireFormat::AnthropicMessages).is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ExtrasRecord", into = "ExtrasRecord")]
pub struct Extras {
    origin: Option<Origin>,
    fields: Map<String, Value>,
}

/// How [`Extras`] are serialised: the origin's fields beside `fields`, as
/// version 0.1 wrote `format` beside them.
#[derive(Clone, Serialize, Deserialize)]
struct ExtrasRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format: Option<WireFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    fields: Map<String, Value>,
}

impl From<ExtrasRecord> for Extras {
    fn from(record: ExtrasRecord) -> Self {
        // Fields without a format (never written so) have no one to go
        // back to: kept, but no export writes them.
        let origin = record.format.map(|format| Origin {
            format,
            provider: record.provider,
            model: record.model,
        });
        if record.fields.is_empty() {
            return Self::default();
        }
        Self {
            origin,
            fields: record.fields,
        }
    }
}

impl From<Extras> for ExtrasRecord {
    fn from(extras: Extras) -> Self {
        let (format, provider, model) = match extras.origin {
            Some(origin) => (Some(origin.format), origin.provider, origin.model),
            None => (None, None, None),
        };
        Self {
            format,
            provider,
            model,
            fields: extras.fields,
        }
    }
}

impl Extras {
    /// Extras from `origin` (a [`WireFormat`] alone converts into one). An
    /// empty `fields` map gives empty extras.
    pub fn new(origin: impl Into<Origin>, fields: Map<String, Value>) -> Self {
        if fields.is_empty() {
            return Self::default();
        }
        Self {
            origin: Some(origin.into()),
            fields,
        }
    }

    /// `true` when there is nothing kept.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The format the fields came from; `None` when empty.
    pub fn format(&self) -> Option<WireFormat> {
        self.origin.as_ref().map(|origin| origin.format)
    }

    /// Where the fields came from; `None` when empty.
    pub fn origin(&self) -> Option<&Origin> {
        self.origin.as_ref()
    }

    /// The origin, to record a provider and model on it.
    pub(crate) fn origin_mut(&mut self) -> Option<&mut Origin> {
        self.origin.as_mut()
    }

    /// Every kept field, whatever its format.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The kept fields when they came from `format`, to write back to an
    /// object of that format; `None` for empty extras or another format.
    /// (Whether they also go to a given provider is the export's
    /// `Target`'s to say.)
    pub fn fields_for(&self, format: WireFormat) -> Option<&Map<String, Value>> {
        (self.format() == Some(format) && !self.fields.is_empty()).then_some(&self.fields)
    }

    /// Empties them (what an export does to extras its target does not
    /// take).
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// The kept fields' values, taken out.
    pub(crate) fn into_values(self) -> impl Iterator<Item = Value> {
        self.fields.into_iter().map(|(_, value)| value)
    }

    /// `true` for empty extras, so serde can leave them out.
    pub(crate) fn skip(extras: &Extras) -> bool {
        extras.is_empty()
    }
}
