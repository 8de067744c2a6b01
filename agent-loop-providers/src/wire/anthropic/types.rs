//! The serde types that mirror the Messages API reference: tools,
//! messages and their content blocks, the system prompt and the response.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::FORMAT;
use crate::wire::string_or_array::StringOrArray;
use agent_loop_core::conversation::Extras;

/// One custom tool of a request's `tools` array:
/// `{"name", "description", "input_schema", "strict"?, …}`.
///
/// Anthropic-defined tools (`{"type": "memory_20250818", "name": "memory"}`)
/// are not this shape; [`parse_tools`](super::parse_tools) keeps them as [`ProviderTool`](crate::wire::ProviderTool)s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tool {
    /// The model-facing tool name.
    pub(crate) name: String,
    /// What the tool does, for the model; optional in the API, `""` when
    /// absent.
    #[serde(default)]
    pub(crate) description: String,
    /// JSON Schema of the `input` object.
    pub(crate) input_schema: Value,
    /// Strict tool use: the API constrains `input` to the schema. Omitted
    /// when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) strict: Option<bool>,
    /// Every other field of the declaration (`cache_control`,
    /// `defer_loading`, `allowed_callers`, `input_examples`, a `type` of
    /// `custom`), verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// Who wrote a [`MessageParam`]: Anthropic has only these two roles (the
/// system prompt is the request's top-level `system`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Role {
    /// `"user"`: user content and tool results.
    User,
    /// `"assistant"`: the model's thinking, text and tool calls.
    Assistant,
}

/// One element of a request's `messages` array:
/// `{"role", "content": [blocks]}`. Only written: parsing reads each
/// message's role and blocks on their own, for error paths that name the
/// block.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct MessageParam {
    /// Who wrote it.
    pub(crate) role: Role,
    /// Its content blocks, in order; never empty when exported.
    pub(crate) content: Vec<ContentBlock>,
}

/// A content block, tagged by `type`.
///
/// Blocks this crate does not model (`document`, `search_result`,
/// `server_tool_use`, `web_search_tool_result`, `mcp_tool_use`, an `image`
/// whose source is a `file`, …) are [`Other`](Self::Other), verbatim.
/// Only written: `parse_block` reads a block into one of these.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentBlock {
    /// `{"type": "text", "text", …}`.
    Text(TextBlock),
    /// `{"type": "image", "source": {…}, …}` with a `base64` or `url`
    /// source.
    Image(ImageBlock),
    /// `{"type": "tool_use", "id", "name", "input", …}`: a tool call.
    ToolUse(ToolUseBlock),
    /// `{"type": "tool_result", "tool_use_id", "content"?, "is_error"?, …}`.
    ToolResult(ToolResultBlock),
    /// `{"type": "thinking", "thinking", "signature"}`: extended thinking.
    Thinking(ThinkingBlock),
    /// `{"type": "redacted_thinking", "data"}`: thinking the API encrypted.
    RedactedThinking(RedactedThinkingBlock),
    /// Any other block, verbatim (its `type` included).
    #[serde(untagged)]
    Other(Value),
}

impl ContentBlock {
    /// The block's `type` as it is written: a verbatim block's own, when
    /// it has one.
    pub(crate) fn kind(&self) -> Option<&str> {
        match self {
            Self::Text(_) => Some("text"),
            Self::Image(_) => Some("image"),
            Self::ToolUse(_) => Some("tool_use"),
            Self::ToolResult(_) => Some("tool_result"),
            Self::Thinking(_) => Some("thinking"),
            Self::RedactedThinking(_) => Some("redacted_thinking"),
            Self::Other(value) => value.get("type").and_then(Value::as_str),
        }
    }
}

/// A text block: `{"type": "text", "text", …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct TextBlock {
    /// The text; the API refuses an empty one.
    pub(crate) text: String,
    /// Other fields (`citations`, `cache_control`), verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// An image block: `{"type": "image", "source", …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ImageBlock {
    /// Where the image is.
    pub(crate) source: ImageSourceParam,
    /// Other fields (`cache_control`), verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// An image block's `source`, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ImageSourceParam {
    /// `{"type": "base64", "media_type", "data"}`.
    Base64 {
        /// `image/jpeg`, `image/png`, `image/gif` or `image/webp`.
        media_type: String,
        /// The image bytes, base64-encoded.
        data: String,
    },
    /// `{"type": "url", "url"}`.
    Url {
        /// The image's URL.
        url: String,
    },
}

/// A tool call: `{"type": "tool_use", "id", "name", "input", …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolUseBlock {
    /// The tool call id, e.g. `toolu_01A09q90qw90lq917835lq9`; it matches
    /// `^[a-zA-Z0-9_-]+$`.
    pub(crate) id: String,
    /// The tool name the model asked for.
    pub(crate) name: String,
    /// The arguments object.
    #[serde(deserialize_with = "object")]
    pub(crate) input: Map<String, Value>,
    /// Other fields (`caller`, `cache_control`), verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// A tool result:
/// `{"type": "tool_result", "tool_use_id", "content"?, "is_error"?, …}`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ToolResultBlock {
    /// The id of the `tool_use` this answers.
    pub(crate) tool_use_id: String,
    /// The result; omitted when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<StringOrArray<ContentBlock>>,
    /// `true` when the call failed; omitted when `false` (the API's
    /// default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) is_error: bool,
    /// Other fields (`cache_control`), verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// Extended thinking: `{"type": "thinking", "thinking", "signature"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThinkingBlock {
    /// The model's reasoning (a summary of it on Claude 4 models).
    pub(crate) thinking: String,
    /// The API's signature over the block, required when it is sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) signature: Option<String>,
    /// Other fields, verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// Thinking the API encrypted: `{"type": "redacted_thinking", "data"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RedactedThinkingBlock {
    /// The encrypted reasoning, to send back unchanged.
    pub(crate) data: String,
    /// Other fields, verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// One block of a request's top-level `system`: only text blocks are
/// allowed there.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum SystemBlock {
    /// `{"type": "text", "text", …}`.
    Text(TextBlock),
}

/// A response's `usage`. `input_tokens` counts only the input after the
/// last cache breakpoint: the whole input is the sum of the three input
/// counts.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub(crate) struct ResponseUsage {
    /// Input tokens not read from or written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_tokens: Option<u64>,
    /// Output tokens, thinking included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_creation_input_tokens: Option<u64>,
    /// Other fields (`cache_creation`, `server_tool_use`, `service_tier`),
    /// verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// The extras of this format, without the fields the block models (a
/// hand-built [`Extras`] could repeat them).
pub(super) fn own_extras(extras: &Extras, modelled: &[&str]) -> Map<String, Value> {
    extras
        .fields_for(FORMAT)
        .map(|fields| {
            fields
                .iter()
                .filter(|(key, _)| !modelled.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// A JSON object, named "an object" in a wrong-type error (serde says "a
/// map").
pub(super) fn object<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Map<String, Value>, D::Error> {
    struct ObjectVisitor;

    impl<'de> Visitor<'de> for ObjectVisitor {
        type Value = Map<String, Value>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Map::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }

    deserializer.deserialize_any(ObjectVisitor)
}
