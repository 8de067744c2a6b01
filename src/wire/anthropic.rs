//! Anthropic Messages: `tools`, request `system` and `messages`, and the
//! `message` response.
//!
//! Shapes follow the Messages API reference
//! (<https://docs.anthropic.com/en/api/messages>) and its tool-use and
//! extended-thinking guides:
//!
//! - a custom tool is `{"name", "description"?, "input_schema", "strict"?}`
//!   plus fields this crate keeps as [`Extras`] (`cache_control`,
//!   `defer_loading`, `allowed_callers`, …); a tool with another `type`
//!   (`memory_20250818`, `web_search_20250305`, `bash_20250124`) is defined
//!   by Anthropic and kept verbatim as a [`ProviderTool`];
//! - the system prompt is the request's top-level `system`, a string or text
//!   blocks, never a message;
//! - the model calls tools with `tool_use` blocks
//!   `{"type": "tool_use", "id", "name", "input": {...}}` whose `input` is a
//!   JSON **object**, not text;
//! - results go back in the next **user** message as `tool_result` blocks
//!   `{"type": "tool_result", "tool_use_id", "content"?, "is_error"?}`,
//!   before any other block of that message;
//! - extended thinking comes as `thinking` blocks (with a `signature` the
//!   API checks when they are sent back) and `redacted_thinking` blocks,
//!   which must come first in the assistant message.
//!
//! | conversation | Anthropic |
//! | --- | --- |
//! | [`Message::System`] | the top-level `system` ([`ExportedMessages::system`]) |
//! | [`Message::User`] | a `user` message of `text`, `image` and provider blocks |
//! | [`Message::Assistant`] | an `assistant` message of `thinking`, `text`, `tool_use` and provider blocks, in order |
//! | [`Message::Tool`] | a `tool_result` block of the next `user` message |
//! | [`ContentPart::Reasoning`] | `thinking` / `redacted_thinking` |
//! | [`ContentPart::Provider`] | any other block (`server_tool_use`, `web_search_tool_result`, `document`, …), verbatim |
//!
//! ```
//! use agent_loop::conversation::{FinishReason, Message};
//! use agent_loop::wire::anthropic;
//! use serde_json::json;
//!
//! let response = anthropic::parse_response(&json!({
//!     "type": "message",
//!     "role": "assistant",
//!     "content": [
//!         { "type": "thinking", "thinking": "Weather needs a lookup.", "signature": "c2ln" },
//!         { "type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": { "city": "Paris" } }
//!     ],
//!     "stop_reason": "tool_use",
//!     "usage": { "input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 12 }
//! }))?;
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.input_tokens, 120);
//!
//! let conversation = vec![
//!     Message::system("Be brief."),
//!     Message::user("Weather in Paris?"),
//!     Message::Assistant(response.message),
//! ];
//! let exported = anthropic::export_messages(&conversation);
//! assert_eq!(
//!     serde_json::to_value(&exported)?,
//!     json!({
//!         "system": "Be brief.",
//!         "messages": [
//!             { "role": "user", "content": [{ "type": "text", "text": "Weather in Paris?" }] },
//!             { "role": "assistant", "content": [
//!                 { "type": "thinking", "thinking": "Weather needs a lookup.", "signature": "c2ln" },
//!                 { "type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": { "city": "Paris" } }
//!             ] }
//!         ]
//!     })
//! );
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Decisions
//!
//! - **`input` to arguments**: the object is written as compact JSON text
//!   (serde_json's key order) into [`ToolCall::arguments`].
//! - **Arguments to `input`**: blank arguments (empty or whitespace) are
//!   exported as `{}`, as they ran. Arguments that are not a JSON object
//!   (invalid JSON, an array, `null`: possible when the conversation came
//!   from another provider or the output was cut off) cannot be an `input`,
//!   yet the runner has already answered such a call with an error result
//!   and the conversation must go on, so export does not fail: they become
//!   `{"_raw_arguments": "<the text>"}` ([`RAW_ARGUMENTS_KEY`](super::RAW_ARGUMENTS_KEY)), which shows
//!   the model what it sent next to the error it got, and
//!   [`parse_messages`] turns exactly that one-key object back into the raw
//!   text ([`parse_response`] does not: what the model sends is kept as
//!   sent). A real input of exactly that shape (one `_raw_arguments` key
//!   with a string: a tool may have such a parameter) is wrapped as well,
//!   `{"_raw_arguments": "{\"_raw_arguments\":\"y\"}"}`, so it comes back as
//!   the object it was, not as the string inside it.
//! - **Ids and names**: exported `tool_use` ids and `tool_result`
//!   `tool_use_id`s that break Anthropic's `^[a-zA-Z0-9_-]+$` (Kimi's
//!   `functions.write_todos:0`) are mapped to valid ones, the same for a
//!   call and its result; a recorded tool name that breaks
//!   `^[a-zA-Z0-9_-]{1,64}$` (a hallucinated `multi_tool_use.parallel`) is
//!   exported in a valid form. The model's text is never changed.
//! - **Blank text** (empty or whitespace-only) is never exported: the API
//!   refuses empty text blocks. When parsing a user or assistant message (or
//!   a `tool_result`), a whitespace-only text block is not dropped but
//!   joined to its neighbours, so that a cited answer the API splits into
//!   `"A"`, `"\n\n"`, `"B"` reads `"A\n\nB"`, not `"AB"`: it is appended
//!   to the nearest text part before it in the same message (`"A\n\n"`,
//!   `"B"`), else prepended to the nearest one after it, else dropped (its
//!   own extras are dropped). No blank part remains, so parse → export →
//!   parse stays the identity. A message left with nothing (an assistant
//!   message of blank text only, say) is dropped.
//! - **Thinking first**: the API wants an assistant message's thinking
//!   blocks before its other blocks. When a message has thinking blocks but
//!   does not start with one (it was built by hand, or came through another
//!   format), they are moved to the front in their order; a message that
//!   starts with one keeps its order (interleaved thinking). A `thinking`
//!   part without a signature is not exported (the API would refuse it).
//! - **Error results are text**: an error `tool_result` (`is_error:
//!   true`) is exported with its text parts only; its images and provider
//!   blocks (a failed MCP tool's screenshot, say) are **lost**, since the
//!   API answers 400 "all content must be type 'text' if 'is_error' is
//!   true". One left with no content once blank text is dropped is
//!   exported with the text `The tool call failed.`: the API answers 400
//!   "content cannot be empty if `is_error` is true". A result that did
//!   not fail keeps its images and may go out without content.
//! - **Tool results** of consecutive [`Message::Tool`]s go into one `user`
//!   message, and a [`Message::User`] right after them joins that message
//!   after the `tool_result` blocks. A tool result after user text starts a
//!   new `user` message, since `tool_result` blocks must come first.
//!
//! - **Error paths** name the culprit from the value each parser reads:
//!   `messages[3].content[1]` for [`parse_messages`], `tools[2]` for
//!   [`parse_tools`], `response.content[0]` for [`parse_response`]; for
//!   [`parse_request`] they are rooted at `request`
//!   (`request.messages[3].content[1]`, `request.system[0]`,
//!   `request.tools[2]`), as the OpenAI module's are.
//!
//! # What a round trip loses
//!
//! [`export_messages`] then [`parse_messages`] gives back the conversation
//! except: arguments JSON is re-serialised compactly (whitespace and key
//! order may change) and blank arguments come back as `{}`; blank text,
//! unsigned thinking, images in assistant messages and other formats'
//! reasoning, provider parts and extras are not exported; a system
//! message's [`SystemRole`] is not kept (Anthropic has one kind of system
//! prompt); an error result loses its images and provider blocks, and one
//! without content comes back with the text `The tool call failed.`; ids and names that break Anthropic's rules come
//! back mapped. Parsing what this module exports
//! and exporting it again gives the same JSON.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::arguments::{arguments_object, raw_arguments};
use super::blank_text::{is_blank, join_blank_text};
use super::declaration::{ParsedRequest, ProviderTool, ToolDeclaration};
use super::decode::{check_depth, decode};
use super::error::{WireError, WireErrorKind};
use super::ids::ExportIds;
use crate::conversation::WireFormat;
use crate::conversation::ids::mint_missing_ids;
use crate::conversation::{
    AssistantMessage, ContentPart, Extras, FinishReason, ImagePart, ImageSource, Message,
    ModelResponse, ProviderPart, ReasoningPart, SystemMessage, SystemRole, TextPart, ToolCall,
    ToolResult, Usage, UserMessage,
};
use crate::tool::ToolInfo;

const FORMAT: WireFormat = WireFormat::AnthropicMessages;

// ---------------------------------------------------------------------------
// Serde types
// ---------------------------------------------------------------------------

/// One custom tool of a request's `tools` array:
/// `{"name", "description", "input_schema", "strict"?, …}`.
///
/// Anthropic-defined tools (`{"type": "memory_20250818", "name": "memory"}`)
/// are not this shape; [`parse_tools`] keeps them as [`ProviderTool`]s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The model-facing tool name.
    pub name: String,
    /// What the tool does, for the model; optional in the API, `""` when
    /// absent.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the `input` object.
    pub input_schema: Value,
    /// Strict tool use: the API constrains `input` to the schema. Omitted
    /// when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Every other field of the declaration (`cache_control`,
    /// `defer_loading`, `allowed_callers`, `input_examples`, a `type` of
    /// `custom`), verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// Who wrote a [`MessageParam`]: Anthropic has only these two roles (the
/// system prompt is the request's top-level `system`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// `"user"`: user content and tool results.
    User,
    /// `"assistant"`: the model's thinking, text and tool calls.
    Assistant,
}

/// One element of a request's `messages` array:
/// `{"role", "content": [blocks]}`.
///
/// Deserialising accepts a string `content` too (the API's shorthand for
/// one text block).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageParam {
    /// Who wrote it.
    pub role: Role,
    /// Its content blocks, in order; never empty when exported.
    #[serde(deserialize_with = "blocks_or_text")]
    pub content: Vec<ContentBlock>,
}

/// A content block, tagged by `type`.
///
/// Blocks this crate does not model (`document`, `search_result`,
/// `server_tool_use`, `web_search_tool_result`, `mcp_tool_use`, an `image`
/// whose source is a `file`, …) are [`Other`](Self::Other), verbatim.
/// Deserialising fails on a block of a modelled type with the wrong shape
/// (a `tool_use` without `id`, say), as [`parse_messages`] does.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
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

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        parse_block("content", &value).map_err(|error| de::Error::custom(&error.kind))
    }
}

/// A text block: `{"type": "text", "text", …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text; the API refuses an empty one.
    pub text: String,
    /// Other fields (`citations`, `cache_control`), verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// An image block: `{"type": "image", "source", …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageBlock {
    /// Where the image is.
    pub source: ImageSourceParam,
    /// Other fields (`cache_control`), verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// An image block's `source`, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSourceParam {
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
pub struct ToolUseBlock {
    /// The tool call id, e.g. `toolu_01A09q90qw90lq917835lq9`; it matches
    /// `^[a-zA-Z0-9_-]+$`.
    pub id: String,
    /// The tool name the model asked for.
    pub name: String,
    /// The arguments object.
    #[serde(deserialize_with = "object")]
    pub input: Map<String, Value>,
    /// Other fields (`caller`, `cache_control`), verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// A tool result:
/// `{"type": "tool_result", "tool_use_id", "content"?, "is_error"?, …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The id of the `tool_use` this answers.
    pub tool_use_id: String,
    /// The result; omitted when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ToolResultContent>,
    /// `true` when the call failed; omitted when `false` (the API's
    /// default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Other fields (`cache_control`), verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// A `tool_result`'s `content`: a string, or blocks (`text`, `image`,
/// `search_result`, `document`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// One text.
    Text(String),
    /// Blocks, in order.
    Blocks(Vec<ContentBlock>),
}

impl<'de> Deserialize<'de> for ToolResultContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match StringOrArray::<ContentBlock>::deserialize(deserializer)? {
                StringOrArray::Text(text) => Self::Text(text),
                StringOrArray::Array(blocks) => Self::Blocks(blocks),
            },
        )
    }
}

/// Extended thinking: `{"type": "thinking", "thinking", "signature"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The model's reasoning (a summary of it on Claude 4 models).
    pub thinking: String,
    /// The API's signature over the block, required when it is sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Other fields, verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// Thinking the API encrypted: `{"type": "redacted_thinking", "data"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedactedThinkingBlock {
    /// The encrypted reasoning, to send back unchanged.
    pub data: String,
    /// Other fields, verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// A request's top-level `system`: a string, or text blocks (which can
/// carry `cache_control`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SystemPrompt {
    /// `"system": "…"`.
    Text(String),
    /// `"system": [{"type": "text", "text", …}, …]`.
    Blocks(Vec<SystemBlock>),
}

impl<'de> Deserialize<'de> for SystemPrompt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(
            match StringOrArray::<SystemBlock>::deserialize(deserializer)? {
                StringOrArray::Text(text) => Self::Text(text),
                StringOrArray::Array(blocks) => Self::Blocks(blocks),
            },
        )
    }
}

/// One block of a [`SystemPrompt`]: only text blocks are allowed there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SystemBlock {
    /// `{"type": "text", "text", …}`.
    Text(TextBlock),
}

/// A response body: `{"type": "message", "id", "role": "assistant",
/// "content", "model", "stop_reason", "stop_sequence", "usage", …}`.
///
/// [`parse_response`] reads one into a [`ModelResponse`]; this type is for
/// code that wants the body itself (a test server, say).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageResponse {
    /// The message id, e.g. `msg_01…`.
    #[serde(default)]
    pub id: String,
    /// Always `"message"`.
    #[serde(rename = "type", default = "message_type")]
    pub kind: String,
    /// Always [`Role::Assistant`].
    pub role: Role,
    /// The content blocks, in order.
    pub content: Vec<ContentBlock>,
    /// The model that answered.
    #[serde(default)]
    pub model: String,
    /// `end_turn`, `max_tokens`, `stop_sequence`, `tool_use`, `pause_turn`,
    /// `refusal`, `model_context_window_exceeded`; `null` while streaming.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// The stop sequence that ended generation, if one did.
    #[serde(default)]
    pub stop_sequence: Option<String>,
    /// Token counts.
    #[serde(default)]
    pub usage: ResponseUsage,
    /// Other fields (`container`, …), verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

fn message_type() -> String {
    "message".to_owned()
}

/// A response's `usage`. `input_tokens` counts only the input after the
/// last cache breakpoint: the whole input is the sum of the three input
/// counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponseUsage {
    /// Input tokens not read from or written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens, thinking included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Other fields (`cache_creation`, `server_tool_use`, `service_tier`),
    /// verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

impl From<&ResponseUsage> for Usage {
    /// `input_tokens` is the sum of the three input counts; a missing count
    /// is `0`.
    fn from(usage: &ResponseUsage) -> Self {
        let read = usage.cache_read_input_tokens.unwrap_or(0);
        let write = usage.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: usage
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read)
                .saturating_add(write),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cache_read_tokens: read,
            cache_write_tokens: write,
            reasoning_tokens: 0,
        }
    }
}

/// What [`export_messages`] builds: the request's top-level `system` and
/// its `messages`. Serialises as `{"system"?, "messages"}`, ready to merge
/// into a request body (`model`, `max_tokens`, `tools`, … are the caller's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExportedMessages {
    /// The system prompt, for the request's top-level `system` field (the
    /// Messages API has no `system` role); `None` (omitted) when the
    /// conversation has no non-blank system message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemPrompt>,
    /// The request's `messages` array.
    pub messages: Vec<MessageParam>,
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

impl From<&ToolInfo> for Tool {
    /// The tool's name, description, schema and `strict`, plus its extras
    /// when they came from this format.
    fn from(info: &ToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            description: info.description.clone(),
            input_schema: info.parameters.clone(),
            strict: info.strict,
            extras: own_extras(
                &info.extras,
                &["name", "description", "input_schema", "strict"],
            ),
        }
    }
}

/// The request's `tools` array for these tools, in order. Extras are
/// written only when they came from Anthropic
/// ([`Extras::fields_for`]); `strict` only when set.
pub fn export_tools<'t>(tools: impl IntoIterator<Item = &'t ToolInfo>) -> Vec<Tool> {
    tools.into_iter().map(Tool::from).collect()
}

/// Parses a request's `tools` array.
///
/// A tool without `type`, or with `"type": "custom"`, is a
/// [`ToolDeclaration::Function`]: `input_schema` becomes
/// [`ToolInfo::parameters`], a missing `description` becomes `""`,
/// `strict` is kept, and every other field (`cache_control`,
/// `defer_loading`, the `type` itself) goes to the [`ToolInfo::extras`].
/// A tool of any other `type` (`memory_20250818`, `web_search_20250305`,
/// `bash_20250124`, …) is defined by Anthropic and kept verbatim as a
/// [`ToolDeclaration::Provider`].
///
/// # Errors
///
/// [`WireErrorKind::WrongType`] when `tools` is not an array of objects or
/// a field has the wrong type; [`WireErrorKind::MissingField`] when a
/// custom tool has no `name` or `input_schema`. The path is `tools[i]`.
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    check_depth(FORMAT, "tools", tools)?;
    parse_tools_at("tools", tools)
}

/// [`parse_tools`] with error paths rooted at `root`.
fn parse_tools_at(root: &str, tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, tools)?;
    items
        .iter()
        .enumerate()
        .map(|(index, tool)| parse_tool(&format!("{root}[{index}]"), tool))
        .collect()
}

#[derive(Deserialize)]
#[serde(expecting = "a tool object")]
struct ToolHead {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

fn parse_tool(path: &str, value: &Value) -> Result<ToolDeclaration, WireError> {
    let head: ToolHead = decode(FORMAT, path, value)?;
    match head.kind.as_deref() {
        None | Some("custom") => {
            let tool: Tool = decode(FORMAT, path, value)?;
            Ok(ToolDeclaration::Function(ToolInfo {
                name: tool.name,
                description: tool.description,
                parameters: tool.input_schema,
                strict: tool.strict,
                extras: Extras::new(FORMAT, tool.extras),
            }))
        }
        Some(kind) => Ok(ToolDeclaration::Provider(ProviderTool {
            format: FORMAT,
            name: head.name.unwrap_or_default(),
            tool_type: kind.to_owned(),
            value: value.clone(),
        })),
    }
}

/// The request's `tools` array for parsed declarations, in order: a
/// [`ToolDeclaration::Function`] as [`export_tools`] writes it, an
/// Anthropic [`ToolDeclaration::Provider`] verbatim.
///
/// # Errors
///
/// [`WireErrorKind::ProviderTool`] at `tools[i]` for a provider tool of
/// another format (an OpenAI `custom` tool): only its own provider knows
/// what it is.
pub fn export_declarations(tools: &[ToolDeclaration]) -> Result<Vec<Value>, WireError> {
    tools
        .iter()
        .enumerate()
        .map(|(index, declaration)| match declaration {
            ToolDeclaration::Function(info) => {
                serde_json::to_value(Tool::from(info)).map_err(|error| {
                    WireError::new(
                        FORMAT,
                        format!("tools[{index}]"),
                        WireErrorKind::Invalid {
                            message: error.to_string(),
                        },
                    )
                })
            }
            ToolDeclaration::Provider(tool) if tool.format == FORMAT => Ok(tool.value.clone()),
            ToolDeclaration::Provider(tool) => Err(WireError::new(
                FORMAT,
                format!("tools[{index}]"),
                WireErrorKind::ProviderTool {
                    name: tool.name.clone(),
                    tool_type: tool.tool_type.clone(),
                    format: tool.format,
                },
            )),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Export
// ---------------------------------------------------------------------------

/// The request's top-level `system` and `messages` for a conversation.
///
/// - Every [`Message::System`] goes to [`ExportedMessages::system`]: a
///   string when there is exactly one and it has no Anthropic extras, text
///   blocks (with their `cache_control`) otherwise.
/// - A [`Message::Assistant`] becomes an `assistant` message of blocks in
///   its order: Anthropic reasoning as `thinking` (when signed) or
///   `redacted_thinking`, moved first when the message does not start with
///   one; non-blank text; `tool_use` for each call (ids and names made
///   valid, see the module docs); Anthropic provider parts verbatim. It is
///   left out when nothing remains.
/// - A [`Message::User`] becomes a `user` message of `text`, `image` and
///   Anthropic provider blocks; each [`Message::Tool`] a `tool_result`
///   block (an error result keeps its text only, and one left without
///   content gets the text `The tool call failed.`). Consecutive results, and a user message right after
///   them, share one `user` message, results first. A `user` message left
///   empty is left out.
///
/// Never fails: see the module docs for arguments that are not a JSON
/// object.
pub fn export_messages(conversation: &[Message]) -> ExportedMessages {
    let mut ids = ExportIds::new(FORMAT, conversation);
    let system = export_system(conversation);
    let mut messages: Vec<MessageParam> = Vec::new();
    // `true` while the last exported message holds tool results only, so a
    // result or a user message that follows joins it.
    let mut open_results = false;
    for message in conversation {
        match message {
            Message::System(_) => {}
            Message::User(user) => {
                let blocks = export_user_parts(&user.content);
                if blocks.is_empty() {
                    continue;
                }
                match messages.last_mut() {
                    Some(last) if open_results => last.content.extend(blocks),
                    _ => messages.push(MessageParam {
                        role: Role::User,
                        content: blocks,
                    }),
                }
                open_results = false;
            }
            Message::Tool(result) => {
                let block = ContentBlock::ToolResult(export_tool_result(result, &mut ids));
                match messages.last_mut() {
                    Some(last) if open_results => last.content.push(block),
                    _ => messages.push(MessageParam {
                        role: Role::User,
                        content: vec![block],
                    }),
                }
                open_results = true;
            }
            Message::Assistant(assistant) => {
                let blocks = export_assistant(assistant, &mut ids);
                if !blocks.is_empty() {
                    messages.push(MessageParam {
                        role: Role::Assistant,
                        content: blocks,
                    });
                }
                open_results = false;
            }
        }
    }
    ExportedMessages { system, messages }
}

fn export_system(conversation: &[Message]) -> Option<SystemPrompt> {
    let systems: Vec<&SystemMessage> = conversation
        .iter()
        .filter_map(|message| match message {
            Message::System(system) if !is_blank(&system.text) => Some(system),
            _ => None,
        })
        .collect();
    match systems.as_slice() {
        [] => None,
        [only] if only.extras.fields_for(FORMAT).is_none() => {
            Some(SystemPrompt::Text(only.text.clone()))
        }
        systems => Some(SystemPrompt::Blocks(
            systems
                .iter()
                .map(|system| {
                    SystemBlock::Text(TextBlock {
                        text: system.text.clone(),
                        extras: own_extras(&system.extras, TEXT_FIELDS),
                    })
                })
                .collect(),
        )),
    }
}

const TEXT_FIELDS: &[&str] = &["type", "text"];
const IMAGE_FIELDS: &[&str] = &["type", "source"];
const TOOL_USE_FIELDS: &[&str] = &["type", "id", "name", "input"];
const TOOL_RESULT_FIELDS: &[&str] = &["type", "tool_use_id", "content", "is_error"];
const THINKING_FIELDS: &[&str] = &["type", "thinking", "signature"];
const REDACTED_FIELDS: &[&str] = &["type", "data"];

/// The extras of this format, without the fields the block models (a
/// hand-built [`Extras`] could repeat them).
fn own_extras(extras: &Extras, modelled: &[&str]) -> Map<String, Value> {
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

fn export_text(text: &TextPart) -> Option<ContentBlock> {
    (!is_blank(&text.text)).then(|| {
        ContentBlock::Text(TextBlock {
            text: text.text.clone(),
            extras: own_extras(&text.extras, TEXT_FIELDS),
        })
    })
}

fn export_image(image: &ImagePart) -> ContentBlock {
    ContentBlock::Image(ImageBlock {
        source: match &image.source {
            ImageSource::Base64 { media_type, data } => ImageSourceParam::Base64 {
                media_type: media_type.clone(),
                data: data.clone(),
            },
            ImageSource::Url { url } => ImageSourceParam::Url { url: url.clone() },
        },
        extras: own_extras(&image.extras, IMAGE_FIELDS),
    })
}

fn export_provider(part: &ProviderPart) -> Option<ContentBlock> {
    (part.format == FORMAT).then(|| ContentBlock::Other(part.value.clone()))
}

/// Text, images and this format's provider parts: what a user message and
/// a tool result can hold.
fn export_user_parts(parts: &[ContentPart]) -> Vec<ContentBlock> {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => export_text(text),
            ContentPart::Image(image) => Some(export_image(image)),
            ContentPart::Provider(provider) => export_provider(provider),
            ContentPart::Reasoning(_) | ContentPart::ToolCall(_) => None,
        })
        .collect()
}

/// The text of an error `tool_result` that would have no content: the API
/// refuses an empty one ("content cannot be empty if `is_error` is true").
const EMPTY_ERROR_TEXT: &str = "The tool call failed.";

fn export_tool_result(result: &ToolResult, ids: &mut ExportIds) -> ToolResultBlock {
    let mut blocks = export_user_parts(&result.content);
    if result.is_error {
        // "all content must be type 'text' if 'is_error' is true".
        blocks.retain(|block| matches!(block, ContentBlock::Text(_)));
    }
    if result.is_error && blocks.is_empty() {
        blocks.push(ContentBlock::Text(TextBlock {
            text: EMPTY_ERROR_TEXT.to_owned(),
            extras: Map::new(),
        }));
    }
    let content = match blocks.as_mut_slice() {
        [] => None,
        [ContentBlock::Text(text)] if text.extras.is_empty() => {
            Some(ToolResultContent::Text(std::mem::take(&mut text.text)))
        }
        _ => Some(ToolResultContent::Blocks(blocks)),
    };
    ToolResultBlock {
        tool_use_id: ids.result(&result.tool_call_id),
        content,
        is_error: result.is_error,
        extras: own_extras(&result.extras, TOOL_RESULT_FIELDS),
    }
}

fn export_assistant(assistant: &AssistantMessage, ids: &mut ExportIds) -> Vec<ContentBlock> {
    let mut blocks: Vec<ContentBlock> = assistant
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => export_text(text),
            ContentPart::Reasoning(reasoning) => export_reasoning(reasoning),
            ContentPart::ToolCall(call) => Some(ContentBlock::ToolUse(ToolUseBlock {
                id: ids.call(&call.id),
                name: ids.name(&call.name),
                input: arguments_to_input(&call.arguments),
                extras: own_extras(&call.extras, TOOL_USE_FIELDS),
            })),
            ContentPart::Provider(provider) => export_provider(provider),
            ContentPart::Image(_) => None,
        })
        .collect();
    let has_thinking = blocks.iter().any(is_thinking);
    if has_thinking && !blocks.first().is_some_and(is_thinking) {
        // Stable: thinking blocks first, in their order, then the rest.
        let (mut thinking, rest): (Vec<_>, Vec<_>) = blocks.into_iter().partition(is_thinking);
        thinking.extend(rest);
        blocks = thinking;
    }
    blocks
}

fn is_thinking(block: &ContentBlock) -> bool {
    matches!(
        block,
        ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_)
    )
}

fn export_reasoning(reasoning: &ReasoningPart) -> Option<ContentBlock> {
    if reasoning.format != FORMAT {
        return None;
    }
    if let Some(data) = &reasoning.redacted {
        return Some(ContentBlock::RedactedThinking(RedactedThinkingBlock {
            data: data.clone(),
            extras: own_extras(&reasoning.extras, REDACTED_FIELDS),
        }));
    }
    reasoning.signature.as_ref().map(|signature| {
        ContentBlock::Thinking(ThinkingBlock {
            thinking: reasoning.text.clone(),
            signature: Some(signature.clone()),
            extras: own_extras(&reasoning.extras, THINKING_FIELDS),
        })
    })
}

/// The `input` object for raw arguments text; see the module docs.
fn arguments_to_input(arguments: &str) -> Map<String, Value> {
    arguments_object(arguments)
}

/// The arguments text for an `input` object; `restore_raw` undoes
/// [`arguments_to_input`]'s wrapper (only for history, not for what the
/// model returns).
fn input_to_arguments(input: &Map<String, Value>, restore_raw: bool) -> String {
    match restore_raw.then(|| raw_arguments(input)).flatten() {
        Some(raw) => raw.to_owned(),
        // `Display` of a JSON value is its compact serialisation and cannot fail.
        None => Value::Object(input.clone()).to_string(),
    }
}

// ---------------------------------------------------------------------------
// Parse
// ---------------------------------------------------------------------------

/// A string or an array: the two shapes of `content`, a `tool_result`'s
/// `content` and `system`. One visitor, so a wrong shape is a
/// [`WireErrorKind::WrongType`] naming the field.
enum StringOrArray<T> {
    Text(String),
    Array(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for StringOrArray<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StringOrArrayVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for StringOrArrayVisitor<T> {
            type Value = StringOrArray<T>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string or an array of blocks")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(StringOrArray::Text(text.to_owned()))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(StringOrArray::Array(items))
            }
        }

        deserializer.deserialize_any(StringOrArrayVisitor(PhantomData))
    }
}

/// A JSON object, named "an object" in a wrong-type error (serde says "a
/// map").
fn object<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Map<String, Value>, D::Error> {
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

fn blocks_or_text<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ContentBlock>, D::Error> {
    Ok(
        match StringOrArray::<ContentBlock>::deserialize(deserializer)? {
            StringOrArray::Text(text) => vec![ContentBlock::Text(TextBlock {
                text,
                extras: Map::new(),
            })],
            StringOrArray::Array(blocks) => blocks,
        },
    )
}

#[derive(Deserialize)]
#[serde(expecting = "a content block object")]
struct BlockHead {
    #[serde(rename = "type")]
    kind: String,
}

/// A `tool_result` as read, its content blocks still JSON so each one is
/// parsed with its own path.
#[derive(Deserialize)]
struct RawToolResult {
    tool_use_id: String,
    #[serde(default)]
    content: Option<StringOrArray<Value>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(flatten)]
    extras: Map<String, Value>,
}

/// A block struct with flattened extras.
trait BlockExtras {
    fn extras_mut(&mut self) -> &mut Map<String, Value>;
}

macro_rules! block_extras {
    ($($block:ty),*) => {
        $(impl BlockExtras for $block {
            fn extras_mut(&mut self) -> &mut Map<String, Value> {
                &mut self.extras
            }
        })*
    };
}

block_extras!(
    TextBlock,
    ImageBlock,
    ToolUseBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    RawToolResult
);

/// Decodes a block struct at `path`. Read directly (not through
/// [`ContentBlock`]'s tag), its `type` lands in the extras: removed.
fn decode_block<T: DeserializeOwned + BlockExtras>(
    path: &str,
    value: &Value,
) -> Result<T, WireError> {
    let mut block: T = decode(FORMAT, path, value)?;
    block.extras_mut().remove("type");
    Ok(block)
}

/// Reads one block at `path`: a modelled `type` must have its documented
/// shape; any other `type` is kept verbatim.
fn parse_block(path: &str, value: &Value) -> Result<ContentBlock, WireError> {
    let head: BlockHead = decode(FORMAT, path, value)?;
    Ok(match head.kind.as_str() {
        "text" => ContentBlock::Text(decode_block(path, value)?),
        "image"
            if matches!(
                value
                    .get("source")
                    .and_then(|source| source.get("type"))
                    .and_then(Value::as_str),
                Some("base64" | "url") | None
            ) =>
        {
            ContentBlock::Image(decode_block(path, value)?)
        }
        "tool_use" => ContentBlock::ToolUse(decode_block(path, value)?),
        "thinking" => ContentBlock::Thinking(decode_block(path, value)?),
        "redacted_thinking" => ContentBlock::RedactedThinking(decode_block(path, value)?),
        "tool_result" => {
            let raw: RawToolResult = decode_block(path, value)?;
            let content = match raw.content {
                None => None,
                Some(StringOrArray::Text(text)) => Some(ToolResultContent::Text(text)),
                Some(StringOrArray::Array(items)) => Some(ToolResultContent::Blocks(
                    items
                        .iter()
                        .enumerate()
                        .map(|(index, item)| parse_block(&format!("{path}.content[{index}]"), item))
                        .collect::<Result<_, _>>()?,
                )),
            };
            ContentBlock::ToolResult(ToolResultBlock {
                tool_use_id: raw.tool_use_id,
                content,
                is_error: raw.is_error.unwrap_or(false),
                extras: raw.extras,
            })
        }
        _ => ContentBlock::Other(value.clone()),
    })
}

/// Reads a `content` (string or blocks) at `path`.
fn parse_content(path: &str, value: &Value) -> Result<Vec<ContentBlock>, WireError> {
    match decode::<StringOrArray<Value>>(FORMAT, path, value)? {
        StringOrArray::Text(text) => Ok(vec![ContentBlock::Text(TextBlock {
            text,
            extras: Map::new(),
        })]),
        StringOrArray::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| parse_block(&format!("{path}[{index}]"), item))
            .collect(),
    }
}

fn text_part(block: TextBlock) -> ContentPart {
    ContentPart::Text(TextPart {
        text: block.text,
        extras: Extras::new(FORMAT, block.extras),
    })
}

fn image_part(block: ImageBlock) -> ContentPart {
    ContentPart::Image(ImagePart {
        source: match block.source {
            ImageSourceParam::Base64 { media_type, data } => {
                ImageSource::Base64 { media_type, data }
            }
            ImageSourceParam::Url { url } => ImageSource::Url { url },
        },
        extras: Extras::new(FORMAT, block.extras),
    })
}

/// A block kept verbatim as a provider part. Re-serialising a parsed block
/// gives back its JSON (its `type` included).
fn provider_part(block: ContentBlock) -> ContentPart {
    let value = match block {
        ContentBlock::Other(value) => value,
        block => serde_json::to_value(&block).unwrap_or(Value::Null),
    };
    ContentPart::Provider(ProviderPart {
        format: FORMAT,
        value,
    })
}

/// Text, images and anything else as provider parts: a user message's or a
/// tool result's content.
fn user_part(block: ContentBlock) -> ContentPart {
    match block {
        ContentBlock::Text(text) => text_part(text),
        ContentBlock::Image(image) => image_part(image),
        block => provider_part(block),
    }
}

fn tool_result_message(block: ToolResultBlock) -> Message {
    let content = match block.content {
        None => Vec::new(),
        Some(ToolResultContent::Text(text)) => join_blank_text(vec![text_part(TextBlock {
            text,
            extras: Map::new(),
        })]),
        Some(ToolResultContent::Blocks(blocks)) => {
            join_blank_text(blocks.into_iter().map(user_part).collect())
        }
    };
    Message::Tool(ToolResult {
        tool_call_id: block.tool_use_id,
        content,
        is_error: block.is_error,
        extras: Extras::new(FORMAT, block.extras),
    })
}

/// A user message's blocks: a [`Message::Tool`] per `tool_result` and a
/// [`Message::User`] per run of other blocks left non-empty once blank text
/// is joined ([`join_blank_text`]), in order.
fn push_user(conversation: &mut Vec<Message>, blocks: Vec<ContentBlock>) {
    fn flush(conversation: &mut Vec<Message>, run: &mut Vec<ContentPart>) {
        let parts = join_blank_text(std::mem::take(run));
        if !parts.is_empty() {
            conversation.push(Message::User(UserMessage::new(parts)));
        }
    }
    let mut run: Vec<ContentPart> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult(result) => {
                flush(conversation, &mut run);
                conversation.push(tool_result_message(result));
            }
            block => run.push(user_part(block)),
        }
    }
    flush(conversation, &mut run);
}

/// An assistant message's blocks as parts, in order, blank text joined to
/// its neighbours ([`join_blank_text`]).
fn assistant_message(blocks: Vec<ContentBlock>, restore_raw: bool) -> AssistantMessage {
    let content = blocks
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text_part(text),
            ContentBlock::Thinking(thinking) => ContentPart::Reasoning(ReasoningPart {
                text: thinking.thinking,
                signature: thinking.signature,
                redacted: None,
                format: FORMAT,
                extras: Extras::new(FORMAT, thinking.extras),
            }),
            ContentBlock::RedactedThinking(redacted) => ContentPart::Reasoning(ReasoningPart {
                text: String::new(),
                signature: None,
                redacted: Some(redacted.data),
                format: FORMAT,
                extras: Extras::new(FORMAT, redacted.extras),
            }),
            ContentBlock::ToolUse(call) => ContentPart::ToolCall(ToolCall {
                arguments: input_to_arguments(&call.input, restore_raw),
                id: call.id,
                name: call.name,
                extras: Extras::new(FORMAT, call.extras),
            }),
            block => provider_part(block),
        })
        .collect();
    AssistantMessage::new(join_blank_text(content))
}

#[derive(Deserialize)]
#[serde(expecting = "a message object")]
struct RawMessage {
    role: String,
    content: Value,
}

/// Parses a request's `messages` array into a conversation.
///
/// A `user` message's `content` may be a string (one text part) or blocks:
/// `text` → [`ContentPart::Text`] (`citations`, `cache_control` in its
/// extras), `image` with a `base64` or `url` source →
/// [`ContentPart::Image`], `tool_result` → a [`Message::Tool`] of its own
/// (a string content → one text part; blocks → text, image and provider
/// parts; `is_error` missing → `false`), any other block (`document`,
/// `search_result`, …) → a [`ContentPart::Provider`], verbatim. The blocks
/// become, in order, a [`Message::Tool`] per `tool_result` and a
/// [`Message::User`] per run of other blocks.
///
/// An `assistant` message becomes one [`Message::Assistant`] of its blocks
/// in order: `text`, `thinking` and `redacted_thinking` →
/// [`ContentPart::Reasoning`], `tool_use` → [`ContentPart::ToolCall`]
/// (`input` as compact JSON text, `{"_raw_arguments": "<text>"}` back to the
/// text, other fields such as `caller` in its extras), anything else
/// (`server_tool_use`, `web_search_tool_result`, `mcp_tool_use`, …) → a
/// [`ContentPart::Provider`] in place.
///
/// A whitespace-only text block is joined to the nearest text part before
/// it in the same message, else to the one after it, else dropped (see the
/// module docs); a message left with no parts is dropped. Empty or
/// repeated tool call ids get a fresh id, shared with their result.
///
/// # Errors
///
/// [`WireErrorKind::UnknownRole`] for a role other than `user` and
/// `assistant`; [`WireErrorKind::MissingField`] for a missing `role`,
/// `content`, block `type`, or a field a modelled block requires (`text`,
/// `id`, `name`, `input`, `tool_use_id`, `thinking`, `data`, `source`);
/// [`WireErrorKind::WrongType`] for a field of the wrong JSON type (notably
/// an `input` that is not an object). The path names the message and block,
/// e.g. `messages[3].content[1]`.
pub fn parse_messages(messages: &Value) -> Result<Vec<Message>, WireError> {
    check_depth(FORMAT, "messages", messages)?;
    let mut conversation = parse_messages_unminted("messages", messages)?;
    mint_missing_ids(&mut conversation);
    Ok(conversation)
}

/// [`parse_messages`] without minting ids, with error paths rooted at
/// `root`.
fn parse_messages_unminted(root: &str, messages: &Value) -> Result<Vec<Message>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, messages)?;
    let mut conversation = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let path = format!("{root}[{index}]");
        let raw: RawMessage = decode(FORMAT, &path, item)?;
        let blocks = parse_content(&format!("{path}.content"), &raw.content)?;
        match raw.role.as_str() {
            "user" => push_user(&mut conversation, blocks),
            "assistant" => {
                let assistant = assistant_message(blocks, true);
                if !assistant.content.is_empty() {
                    conversation.push(Message::Assistant(assistant));
                }
            }
            role => {
                return Err(WireError::new(
                    FORMAT,
                    path,
                    WireErrorKind::UnknownRole {
                        role: role.to_owned(),
                    },
                ));
            }
        }
    }
    Ok(conversation)
}

/// Parses a request's top-level `system` (a string, or text blocks) into
/// [`Message::System`]s: one for a string, one per text block (its extras,
/// such as `cache_control`, kept). Blank text is dropped. Error paths are
/// rooted at `root`.
fn parse_system(root: &str, system: &Value) -> Result<Vec<Message>, WireError> {
    let blocks = match decode::<StringOrArray<Value>>(FORMAT, root, system)? {
        StringOrArray::Text(text) => vec![TextBlock {
            text,
            extras: Map::new(),
        }],
        StringOrArray::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let path = format!("{root}[{index}]");
                match parse_block(&path, item)? {
                    ContentBlock::Text(text) => Ok(text),
                    _ => Err(WireError::new(
                        FORMAT,
                        path,
                        WireErrorKind::UnknownType {
                            found: item
                                .get("type")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                        },
                    )),
                }
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(blocks
        .into_iter()
        .filter(|block| !is_blank(&block.text))
        .map(|block| {
            Message::System(SystemMessage {
                text: block.text,
                system_role: SystemRole::System,
                extras: Extras::new(FORMAT, block.extras),
            })
        })
        .collect())
}

#[derive(Deserialize)]
#[serde(expecting = "a request object")]
struct RawRequest {
    #[serde(default)]
    system: Option<Value>,
    messages: Value,
    #[serde(default)]
    tools: Option<Value>,
}

/// Parses a whole request body: its top-level `system` (a string → one
/// [`Message::System`]; text blocks → one each, with their extras such as
/// `cache_control`) first, then its `messages` as [`parse_messages`] does,
/// and its `tools` as [`parse_tools`] does (absent or `null` → none). Other
/// fields (`model`, `max_tokens`, `thinking`, `tool_choice`, …) are not
/// read.
///
/// # Errors
///
/// As [`parse_messages`] and [`parse_tools`], with paths rooted at
/// `request` (`request.messages[0].content[1]`, `request.tools[2]`);
/// [`WireErrorKind::MissingField`] at `request` without `messages`;
/// [`WireErrorKind::UnknownType`] at `request.system[i]` for a system block
/// that is not text, [`WireErrorKind::WrongType`] at `request.system` for a
/// `system` that is neither a string nor an array.
pub fn parse_request(body: &Value) -> Result<ParsedRequest, WireError> {
    check_depth(FORMAT, "request", body)?;
    let raw: RawRequest = decode(FORMAT, "request", body)?;
    let mut conversation = match &raw.system {
        Some(system) if !system.is_null() => parse_system("request.system", system)?,
        _ => Vec::new(),
    };
    conversation.extend(parse_messages_unminted("request.messages", &raw.messages)?);
    mint_missing_ids(&mut conversation);
    let tools = match &raw.tools {
        Some(tools) if !tools.is_null() => parse_tools_at("request.tools", tools)?,
        _ => Vec::new(),
    };
    Ok(ParsedRequest {
        conversation,
        tools,
    })
}

#[derive(Deserialize)]
#[serde(expecting = "a response object")]
struct RawResponse {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<ResponseUsage>,
}

/// Parses a response body (`"type": "message"`) into a [`ModelResponse`].
///
/// The message's blocks become parts as in [`parse_messages`], except that
/// a `{"_raw_arguments": …}` input is kept as the model sent it and an
/// empty message is kept (empty).
///
/// `stop_reason`: `end_turn` and `stop_sequence` →
/// [`FinishReason::Stop`]; `tool_use` → [`FinishReason::ToolCalls`];
/// `max_tokens` and `model_context_window_exceeded` →
/// [`FinishReason::Length`]; `refusal` → [`FinishReason::Refusal`]; `null`
/// or missing → `ToolCalls` when the message has tool calls, `Stop`
/// otherwise; anything else (`pause_turn`) → [`FinishReason::Other`].
///
/// [`Usage`]: `input_tokens` is the sum of `input_tokens`,
/// `cache_read_input_tokens` and `cache_creation_input_tokens`;
/// `cache_read_tokens` and `cache_write_tokens` are the two cache counts,
/// `output_tokens` as given; a missing count is `0`.
///
/// # Errors
///
/// [`WireErrorKind::UnknownType`] when the body's `type` is not `message`
/// (an `error` body, say); [`WireErrorKind::UnknownRole`] when `role` is not
/// `assistant`; [`WireErrorKind::MissingField`] without `role` or
/// `content`; otherwise the block errors of [`parse_messages`], at
/// `response.content[i]`.
pub fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
    check_depth(FORMAT, "response", body)?;
    let raw: RawResponse = decode(FORMAT, "response", body)?;
    if let Some(kind) = raw.kind
        && kind != "message"
    {
        return Err(WireError::new(
            FORMAT,
            "response",
            WireErrorKind::UnknownType { found: kind },
        ));
    }
    let missing = |field: &str| {
        WireError::new(
            FORMAT,
            "response",
            WireErrorKind::MissingField {
                field: field.to_owned(),
            },
        )
    };
    let role = raw.role.ok_or_else(|| missing("role"))?;
    if role != "assistant" {
        return Err(WireError::new(
            FORMAT,
            "response",
            WireErrorKind::UnknownRole { role },
        ));
    }
    let content = raw.content.ok_or_else(|| missing("content"))?;
    let message = assistant_message(parse_content("response.content", &content)?, false);
    let finish_reason = match raw.stop_reason.as_deref() {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::Refusal,
        Some(other) => FinishReason::Other(other.to_owned()),
        None if message.has_tool_calls() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let usage = raw.usage.as_ref().map(Usage::from).unwrap_or_default();
    Ok(ModelResponse {
        message,
        finish_reason,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::RAW_ARGUMENTS_KEY;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    fn exported(conversation: &[Message]) -> Value {
        serde_json::to_value(export_messages(conversation)).unwrap()
    }

    #[test]
    fn object_arguments_become_the_input_object() {
        assert_eq!(
            Value::Object(arguments_to_input(r#"{"city": "Paris"}"#)),
            json!({ "city": "Paris" })
        );
    }

    #[test]
    fn blank_arguments_become_an_empty_object() {
        for blank in ["", "  \n"] {
            assert_eq!(arguments_to_input(blank), Map::new());
        }
        let conversation = [Message::tool_calls(
            None,
            vec![ToolCall::new("toolu_1", "f", " ")],
        )];
        assert_eq!(
            exported(&conversation)["messages"][0]["content"][0]["input"],
            json!({})
        );
    }

    #[test]
    fn non_object_arguments_are_wrapped_and_restored_from_history_only() {
        for raw in [r#"{"city": "Par"#, "[1, 2]", "null", "42"] {
            let conversation = [Message::tool_calls(
                None,
                vec![ToolCall::new("toolu_1", "f", raw)],
            )];
            let messages = &exported(&conversation)["messages"];
            assert_eq!(
                messages[0]["content"][0]["input"],
                json!({ RAW_ARGUMENTS_KEY: raw })
            );
            let parsed = parse_messages(messages).unwrap();
            assert_eq!(
                parsed[0]
                    .as_assistant()
                    .unwrap()
                    .tool_calls()
                    .next()
                    .unwrap()
                    .arguments,
                raw
            );
        }
        let response = parse_response(&json!({
            "role": "assistant",
            "content": [{ "type": "tool_use", "id": "t", "name": "f", "input": { RAW_ARGUMENTS_KEY: "x" } }]
        }))
        .unwrap();
        assert_eq!(
            response.message.tool_calls().next().unwrap().arguments,
            r#"{"_raw_arguments":"x"}"#
        );
    }

    #[test]
    fn thinking_is_kept_with_its_signature_and_exported_first() {
        let response = parse_response(&json!({
            "type": "message", "role": "assistant",
            "content": [
                { "type": "thinking", "thinking": "Let me think.", "signature": "sig" },
                { "type": "text", "text": "Done." }
            ],
            "stop_reason": "end_turn"
        }))
        .unwrap();
        assert_eq!(
            response.message.content[0],
            ContentPart::Reasoning(ReasoningPart {
                text: "Let me think.".into(),
                signature: Some("sig".into()),
                redacted: None,
                format: FORMAT,
                extras: Extras::default(),
            })
        );
        // Built out of order: the thinking goes first on export.
        let mut content = response.message.content.clone();
        content.reverse();
        let conversation = [Message::Assistant(AssistantMessage::new(content))];
        assert_eq!(
            exported(&conversation)["messages"][0]["content"],
            json!([
                { "type": "thinking", "thinking": "Let me think.", "signature": "sig" },
                { "type": "text", "text": "Done." }
            ])
        );
    }

    #[test]
    fn interleaved_thinking_keeps_its_order() {
        let blocks = json!([
            { "type": "thinking", "thinking": "a", "signature": "s1" },
            { "type": "tool_use", "id": "toolu_1", "name": "f", "input": {} },
            { "type": "thinking", "thinking": "b", "signature": "s2" },
            { "type": "text", "text": "ok" }
        ]);
        let messages = json!([{ "role": "assistant", "content": blocks }]);
        let parsed = parse_messages(&messages).unwrap();
        assert_eq!(exported(&parsed)["messages"], messages);
    }

    #[test]
    fn unsigned_thinking_and_other_formats_reasoning_are_not_exported() {
        let reasoning = |format, signature: Option<&str>| {
            ContentPart::Reasoning(ReasoningPart {
                text: "hmm".into(),
                signature: signature.map(str::to_owned),
                redacted: None,
                format,
                extras: Extras::default(),
            })
        };
        let conversation = [Message::Assistant(AssistantMessage::new(vec![
            reasoning(FORMAT, None),
            reasoning(WireFormat::OpenAiChat, Some("x")),
            ContentPart::text("answer"),
        ]))];
        assert_eq!(
            exported(&conversation)["messages"][0]["content"],
            json!([{ "type": "text", "text": "answer" }])
        );
    }

    #[test]
    fn redacted_thinking_round_trips() {
        let messages = json!([{ "role": "assistant", "content": [
            { "type": "redacted_thinking", "data": "ENCRYPTED" },
            { "type": "text", "text": "Hi." }
        ] }]);
        let parsed = parse_messages(&messages).unwrap();
        let ContentPart::Reasoning(reasoning) = &parsed[0].as_assistant().unwrap().content[0]
        else {
            panic!("not reasoning: {parsed:?}");
        };
        assert_eq!(reasoning.text, "");
        assert_eq!(reasoning.redacted.as_deref(), Some("ENCRYPTED"));
        assert_eq!(exported(&parsed)["messages"], messages);
    }

    #[test]
    fn server_tool_blocks_are_provider_parts_exported_verbatim_to_anthropic_only() {
        let server_use = json!({
            "type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
            "input": { "query": "weather" }
        });
        let search_result = json!({
            "type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
            "content": [{ "type": "web_search_result", "url": "https://example.com", "title": "x", "encrypted_content": "E" }]
        });
        let response = parse_response(&json!({
            "type": "message", "role": "assistant",
            "content": [
                server_use,
                search_result,
                { "type": "text", "text": "Sunny.", "citations": [{ "type": "web_search_result_location", "url": "https://example.com" }] }
            ],
            "stop_reason": "end_turn"
        }))
        .unwrap();
        let content = &response.message.content;
        assert_eq!(
            content[0],
            ContentPart::Provider(ProviderPart {
                format: FORMAT,
                value: server_use.clone()
            })
        );
        let ContentPart::Text(text) = &content[2] else {
            panic!("not text");
        };
        assert!(
            text.extras
                .fields_for(FORMAT)
                .unwrap()
                .contains_key("citations")
        );
        let conversation = [Message::Assistant(response.message.clone())];
        let blocks = &exported(&conversation)["messages"][0]["content"];
        assert_eq!(blocks[0], server_use);
        assert_eq!(blocks[1], search_result);
        assert!(blocks[2].get("citations").is_some());

        // The same parts from another format are left out.
        let foreign: Vec<ContentPart> = content
            .iter()
            .map(|part| match part {
                ContentPart::Provider(provider) => ContentPart::Provider(ProviderPart {
                    format: WireFormat::OpenAiChat,
                    value: provider.value.clone(),
                }),
                part => part.clone(),
            })
            .collect();
        let conversation = [Message::Assistant(AssistantMessage::new(foreign))];
        let blocks = &exported(&conversation)["messages"][0]["content"];
        assert_eq!(blocks.as_array().unwrap().len(), 1);
        assert_eq!(blocks[0]["type"], "text");
    }

    #[test]
    fn provider_defined_tools_are_kept_and_refused_by_other_formats() {
        let tools = json!([
            { "name": "memory", "type": "memory_20250818" },
            {
                "name": "search", "description": "Search.", "input_schema": { "type": "object" },
                "strict": true, "cache_control": { "type": "ephemeral" }, "defer_loading": true
            },
            { "type": "custom", "name": "c", "input_schema": { "type": "object" } }
        ]);
        let declarations = parse_tools(&tools).unwrap();
        let ToolDeclaration::Provider(memory) = &declarations[0] else {
            panic!("not a provider tool");
        };
        assert_eq!(
            (memory.name.as_str(), memory.tool_type.as_str()),
            ("memory", "memory_20250818")
        );
        let search = declarations[1].as_function().unwrap();
        assert_eq!(search.strict, Some(true));
        let extras = search.extras.fields_for(FORMAT).unwrap();
        assert!(extras.contains_key("cache_control") && extras.contains_key("defer_loading"));
        assert_eq!(declarations[2].as_function().unwrap().description, "");

        let mut again = export_declarations(&declarations).unwrap();
        again[2].as_object_mut().unwrap().remove("description");
        assert_eq!(Value::Array(again), tools);

        let mut foreign = memory.clone();
        foreign.format = WireFormat::OpenAiChat;
        let error =
            export_declarations(&[declarations[1].clone(), ToolDeclaration::Provider(foreign)])
                .unwrap_err();
        assert_eq!(error.path, "tools[1]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::ProviderTool {
                name: "memory".into(),
                tool_type: "memory_20250818".into(),
                format: WireFormat::OpenAiChat,
            }
        );
    }

    #[test]
    fn tool_extras_go_only_to_anthropic_and_strict_only_when_set() {
        let mut info = ToolInfo::without_parameters("f", "d");
        info.extras = Extras::new(WireFormat::McpToolsList, object(json!({ "title": "F" })));
        let tool = serde_json::to_value(&export_tools(&[info])[0]).unwrap();
        assert_eq!(
            tool,
            json!({ "name": "f", "description": "d", "input_schema": { "type": "object", "properties": {} } })
        );
    }

    #[test]
    fn a_tool_without_input_schema_is_missing_a_field() {
        let error = parse_tools(&json!([{ "name": "f" }])).unwrap_err();
        assert_eq!(error.path, "tools[0]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::MissingField {
                field: "input_schema".into()
            }
        );
    }

    #[test]
    fn caller_is_kept_on_tool_use() {
        let messages = json!([{ "role": "assistant", "content": [{
            "type": "tool_use", "id": "toolu_1", "name": "f", "input": { "a": 1 },
            "caller": { "type": "code_execution_20250825", "tool_id": "srvtoolu_2" }
        }] }]);
        let parsed = parse_messages(&messages).unwrap();
        let call = parsed[0]
            .as_assistant()
            .unwrap()
            .tool_calls()
            .next()
            .unwrap()
            .clone();
        assert!(
            call.extras
                .fields_for(FORMAT)
                .unwrap()
                .contains_key("caller")
        );
        assert_eq!(exported(&parsed)["messages"], messages);
    }

    #[test]
    fn empty_assistant_messages_and_blank_text_are_not_exported() {
        let conversation = [
            Message::user("  "),
            Message::user("hi"),
            Message::assistant(""),
            Message::Assistant(AssistantMessage::new(vec![
                ContentPart::text(" \n"),
                ContentPart::text("answer"),
            ])),
            Message::Assistant(AssistantMessage::default()),
        ];
        assert_eq!(
            exported(&conversation)["messages"],
            json!([
                { "role": "user", "content": [{ "type": "text", "text": "hi" }] },
                { "role": "assistant", "content": [{ "type": "text", "text": "answer" }] }
            ])
        );
        let parsed = parse_messages(&json!([
            { "role": "user", "content": " " },
            { "role": "assistant", "content": [{ "type": "text", "text": "" }] },
            { "role": "assistant", "content": [] }
        ]))
        .unwrap();
        assert!(parsed.is_empty());
    }

    #[test]
    fn whitespace_text_blocks_are_joined_to_their_neighbours() {
        let cited = |text: &str| json!({ "type": "text", "text": text, "citations": [{ "type": "char_location", "cited_text": text }] });
        let text = |text: &str| json!({ "type": "text", "text": text });
        let response = parse_response(&json!({
            "role": "assistant",
            "content": [cited("A"), text("\n\n"), cited("B")],
            "stop_reason": "end_turn"
        }))
        .unwrap();
        assert_eq!(response.message.text(), "A\n\nB");
        let ContentPart::Text(first) = &response.message.content[0] else {
            panic!("not text")
        };
        assert_eq!(first.text, "A\n\n");
        assert!(
            first
                .extras
                .fields_for(FORMAT)
                .unwrap()
                .contains_key("citations")
        );
        assert_eq!(response.message.content.len(), 2);

        let image = json!({ "type": "image", "source": { "type": "url", "url": "https://example.com/a.png" } });
        let messages = json!([
            { "role": "user", "content": [text(" "), image, text("\n"), text("B")] },
            { "role": "assistant", "content": [
                { "type": "tool_use", "id": "toolu_1", "name": "f", "input": {} }, text("\n")
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1", "content": [text("r"), text("\n")] },
                text("\n"), image
            ] },
            { "role": "assistant", "content": [text("A"), text("\n\n"), text("B")] }
        ]);
        let parsed = parse_messages(&messages).unwrap();
        let Message::User(user) = &parsed[0] else {
            panic!("not user")
        };
        // No text part before: prepended to the next one.
        assert_eq!(user.content.len(), 2);
        assert_eq!(user.content[1], ContentPart::text(" \nB"));
        assert_eq!(
            parsed[1].as_assistant().unwrap().content.len(),
            1,
            "no text to join: dropped"
        );
        assert_eq!(parsed[2].text(), "r\n");
        assert!(matches!(&parsed[3], Message::User(user) if user.content.len() == 1));
        assert_eq!(
            parsed[4].as_assistant().unwrap().content,
            [ContentPart::text("A\n\n"), ContentPart::text("B")]
        );
        // No blank block is exported, and parse → export → parse is the identity.
        let out = exported(&parsed);
        assert_eq!(
            out["messages"][3]["content"],
            json!([text("A\n\n"), text("B")])
        );
        assert_eq!(parse_messages(&out["messages"]).unwrap(), parsed);
        let again = exported(&[Message::Assistant(response.message.clone())]);
        assert_eq!(
            parse_messages(&again["messages"]).unwrap(),
            [Message::Assistant(response.message)]
        );
    }

    #[test]
    fn kimi_ids_are_mapped_the_same_for_the_call_and_its_result() {
        let id = "functions.write_todos:0";
        let conversation = [
            Message::tool_calls(
                Some("Writing.".into()),
                vec![ToolCall::new(id, "multi_tool_use.parallel", "{}")],
            ),
            Message::Tool(ToolResult::ok(id, "done")),
        ];
        let messages = &exported(&conversation)["messages"];
        let call = &messages[0]["content"][1];
        let result = &messages[1]["content"][0];
        assert_eq!(call["id"], "functions_write_todos_0");
        assert_eq!(result["tool_use_id"], call["id"]);
        assert_eq!(call["name"], "multi_tool_use_parallel");
        assert_eq!(messages[0]["content"][0]["text"], "Writing.");
    }

    #[test]
    fn an_empty_error_result_gets_a_text() {
        for content in [vec![], vec![ContentPart::text(" \n")]] {
            let conversation = [
                Message::tool_calls(None, vec![ToolCall::new("toolu_1", "f", "{}")]),
                Message::Tool(ToolResult::with_content("toolu_1", content.clone(), true)),
                Message::Tool(ToolResult::with_content("toolu_2", content, false)),
            ];
            assert_eq!(
                exported(&conversation)["messages"][1]["content"],
                json!([
                    { "type": "tool_result", "tool_use_id": "toolu_1",
                      "content": "The tool call failed.", "is_error": true },
                    { "type": "tool_result", "tool_use_id": "toolu_2" }
                ])
            );
        }
    }

    #[test]
    fn an_error_result_exports_its_text_only() {
        let screenshot = ContentPart::Image(ImagePart::base64("image/png", "iVBORw0K"));
        let document = ContentPart::Provider(ProviderPart {
            format: FORMAT,
            value: json!({ "type": "document", "source": { "type": "text", "data": "d" } }),
        });
        let conversation = [
            Message::tool_calls(
                None,
                vec![
                    ToolCall::new("toolu_1", "click", "{}"),
                    ToolCall::new("toolu_2", "click", "{}"),
                    ToolCall::new("toolu_3", "click", "{}"),
                ],
            ),
            Message::Tool(ToolResult::with_content(
                "toolu_1",
                vec![
                    ContentPart::text("No button there."),
                    screenshot.clone(),
                    document,
                ],
                true,
            )),
            Message::Tool(ToolResult::with_content(
                "toolu_2",
                vec![screenshot.clone()],
                true,
            )),
            Message::Tool(ToolResult::with_content("toolu_3", vec![screenshot], false)),
        ];
        let results = &exported(&conversation)["messages"][1]["content"];
        assert_eq!(
            results[0],
            json!({ "type": "tool_result", "tool_use_id": "toolu_1",
                    "content": "No button there.", "is_error": true })
        );
        assert_eq!(
            results[1],
            json!({ "type": "tool_result", "tool_use_id": "toolu_2",
                    "content": "The tool call failed.", "is_error": true })
        );
        assert_eq!(
            results[2]["content"],
            json!([{ "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0K" } }])
        );
    }

    #[test]
    fn tool_results_and_the_next_user_message_share_one_user_message() {
        let conversation = [
            Message::user("hi"),
            Message::Tool(ToolResult::ok("toolu_1", "done")),
            Message::Tool(ToolResult::error("toolu_2", "failed")),
            Message::user("thanks"),
            Message::user("again"),
        ];
        assert_eq!(
            exported(&conversation)["messages"],
            json!([
                { "role": "user", "content": [{ "type": "text", "text": "hi" }] },
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "toolu_1", "content": "done" },
                    { "type": "tool_result", "tool_use_id": "toolu_2", "content": "failed", "is_error": true },
                    { "type": "text", "text": "thanks" }
                ] },
                { "role": "user", "content": [{ "type": "text", "text": "again" }] }
            ])
        );
    }

    #[test]
    fn usage_and_stop_reasons_are_mapped() {
        let body = |stop_reason: Value| {
            json!({
                "type": "message", "role": "assistant",
                "content": [{ "type": "text", "text": "x" }],
                "stop_reason": stop_reason,
                "usage": {
                    "input_tokens": 10, "output_tokens": 5,
                    "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20,
                    "cache_creation": { "ephemeral_5m_input_tokens": 20 }
                }
            })
        };
        let response = parse_response(&body(json!("end_turn"))).unwrap();
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 130,
                output_tokens: 5,
                cache_read_tokens: 100,
                cache_write_tokens: 20,
                reasoning_tokens: 0,
            }
        );
        for (raw, reason) in [
            (json!("end_turn"), FinishReason::Stop),
            (json!("stop_sequence"), FinishReason::Stop),
            (json!("tool_use"), FinishReason::ToolCalls),
            (json!("max_tokens"), FinishReason::Length),
            (json!("model_context_window_exceeded"), FinishReason::Length),
            (json!("refusal"), FinishReason::Refusal),
            (
                json!("pause_turn"),
                FinishReason::Other("pause_turn".into()),
            ),
            (Value::Null, FinishReason::Stop),
        ] {
            assert_eq!(parse_response(&body(raw)).unwrap().finish_reason, reason);
        }
        let calls = parse_response(&json!({
            "role": "assistant",
            "content": [{ "type": "tool_use", "id": "t", "name": "f", "input": {} }]
        }))
        .unwrap();
        assert_eq!(calls.finish_reason, FinishReason::ToolCalls);
        assert_eq!(calls.usage, Usage::default());
    }

    #[test]
    fn bad_responses_are_typed_errors() {
        let error = parse_response(&json!({ "type": "error", "error": {} })).unwrap_err();
        assert_eq!(
            &error.kind,
            &WireErrorKind::UnknownType {
                found: "error".into()
            }
        );
        let error = parse_response(&json!({ "role": "user", "content": [] })).unwrap_err();
        assert_eq!(
            &error.kind,
            &WireErrorKind::UnknownRole {
                role: "user".into()
            }
        );
        let error = parse_response(&json!({
            "role": "assistant",
            "content": [{ "type": "text", "text": "x" }, { "type": "tool_use", "id": "t", "name": "f", "input": "{}" }]
        }))
        .unwrap_err();
        assert_eq!(error.path, "response.content[1].input");
        assert_eq!(
            &error.kind,
            &WireErrorKind::WrongType {
                field: "input".into(),
                expected: "an object".into(),
                found: "a string".into(),
            }
        );
        let error = parse_messages(&json!([{ "role": "system", "content": "x" }])).unwrap_err();
        assert_eq!(error.path, "messages[0]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::UnknownRole {
                role: "system".into()
            }
        );
        let error =
            parse_messages(&json!([{ "role": "user", "content": [{ "text": "x" }] }])).unwrap_err();
        assert_eq!(error.path, "messages[0].content[0]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::MissingField {
                field: "type".into()
            }
        );
    }

    #[test]
    fn request_errors_are_rooted_at_request() {
        let error = parse_request(&json!({
            "messages": [{ "role": "user", "content": [{ "text": "x" }] }]
        }))
        .unwrap_err();
        assert_eq!(error.path, "request.messages[0].content[0]");
        let error = parse_request(&json!({ "messages": [{ "role": "system", "content": "x" }] }))
            .unwrap_err();
        assert_eq!(error.path, "request.messages[0]");
        let error = parse_request(&json!({ "messages": {} })).unwrap_err();
        assert_eq!(error.path, "request.messages");
        let error = parse_request(&json!({
            "system": [{ "type": "text", "text": "a" }, { "type": "image", "source": { "type": "url", "url": "u" } }],
            "messages": []
        }))
        .unwrap_err();
        assert_eq!(error.path, "request.system[1]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::UnknownType {
                found: "image".into()
            }
        );
        let error = parse_request(&json!({ "system": 7, "messages": [] })).unwrap_err();
        assert_eq!(error.path, "request.system");
        let error =
            parse_request(&json!({ "messages": [], "tools": [{ "name": "f" }] })).unwrap_err();
        assert_eq!(error.path, "request.tools[0]");
        let error = parse_request(&json!({ "messages": [], "tools": {} })).unwrap_err();
        assert_eq!(error.path, "request.tools");
        // The standalone parsers keep their own roots.
        let error =
            parse_messages(&json!([{ "role": "user", "content": [{ "text": "x" }] }])).unwrap_err();
        assert_eq!(error.path, "messages[0].content[0]");
        assert_eq!(
            parse_tools(&json!([{ "name": "f" }])).unwrap_err().path,
            "tools[0]"
        );
    }

    #[test]
    fn system_prompt_is_a_string_or_blocks_with_their_extras() {
        let request = json!({
            "model": "claude",
            "system": [
                { "type": "text", "text": "Rules." },
                { "type": "text", "text": "Long context.", "cache_control": { "type": "ephemeral" } }
            ],
            "messages": [{ "role": "user", "content": "hi" }]
        });
        let parsed = parse_request(&request).unwrap();
        assert_eq!(parsed.conversation.len(), 3);
        assert!(parsed.tools.is_empty());
        let exported = exported(&parsed.conversation);
        assert_eq!(exported["system"], request["system"]);
        let single = export_messages(&[Message::system("Rules."), Message::user("hi")]);
        assert_eq!(single.system, Some(SystemPrompt::Text("Rules.".into())));
    }

    #[test]
    fn rich_conversation_parse_export_parse_is_the_identity() {
        let request = json!({
            "system": "Be brief.",
            "messages": [
                { "role": "user", "content": [
                    { "type": "text", "text": "What is on this?" },
                    { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo=" } },
                    { "type": "image", "source": { "type": "url", "url": "https://example.com/a.png" }, "cache_control": { "type": "ephemeral" } },
                    { "type": "document", "source": { "type": "text", "media_type": "text/plain", "data": "doc" } }
                ] },
                { "role": "assistant", "content": [
                    { "type": "thinking", "thinking": "Look closer.", "signature": "c2ln" },
                    { "type": "text", "text": "Let me zoom." },
                    { "type": "tool_use", "id": "toolu_1", "name": "zoom", "input": { "factor": 2 } },
                    { "type": "tool_use", "id": "toolu_2", "name": "ocr", "input": {} }
                ] },
                { "role": "user", "content": [
                    { "type": "tool_result", "tool_use_id": "toolu_1", "content": [
                        { "type": "text", "text": "Zoomed:" },
                        { "type": "image", "source": { "type": "base64", "media_type": "image/jpeg", "data": "/9j/" } }
                    ] },
                    { "type": "tool_result", "tool_use_id": "toolu_2", "content": "no text", "is_error": true, "cache_control": { "type": "ephemeral" } },
                    { "type": "text", "text": "Well?" }
                ] },
                { "role": "assistant", "content": [{ "type": "text", "text": "A cat." }] }
            ],
            "tools": [{ "name": "zoom", "description": "Zoom.", "input_schema": { "type": "object" } }]
        });
        let parsed = parse_request(&request).unwrap();
        assert!(matches!(parsed.conversation[0], Message::System(_)));
        assert!(matches!(parsed.conversation[3], Message::Tool(_)));
        let again = serde_json::to_value(export_messages(&parsed.conversation)).unwrap();
        assert_eq!(again["system"], request["system"]);
        assert_eq!(again["messages"], request["messages"]);
        let reparsed = parse_request(&json!({
            "system": again["system"],
            "messages": again["messages"],
            "tools": export_declarations(&parsed.tools).unwrap()
        }))
        .unwrap();
        assert_eq!(reparsed, parsed);
    }

    #[test]
    fn response_bodies_deserialise_and_serialise_back() {
        let body = json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [
                { "type": "thinking", "thinking": "t", "signature": "s" },
                { "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {} },
                { "type": "tool_use", "id": "toolu_1", "name": "f", "input": { "a": 1 } }
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": { "input_tokens": 1, "output_tokens": 2, "service_tier": "standard" },
            "container": null
        });
        let response: MessageResponse = serde_json::from_value(body.clone()).unwrap();
        assert!(matches!(response.content[1], ContentBlock::Other(_)));
        assert_eq!(serde_json::to_value(&response).unwrap(), body);
    }

    #[test]
    fn content_blocks_deserialise_as_parse_reads_them() {
        let param: MessageParam = serde_json::from_value(json!({
            "role": "assistant",
            "content": [{ "type": "mcp_tool_use", "id": "x" }, { "type": "text", "text": "t", "citations": [] }]
        }))
        .unwrap();
        assert!(
            matches!(&param.content[0], ContentBlock::Other(value) if value["type"] == "mcp_tool_use")
        );
        assert!(
            matches!(&param.content[1], ContentBlock::Text(text) if text.extras.contains_key("citations") && !text.extras.contains_key("type"))
        );
        let string: MessageParam =
            serde_json::from_value(json!({ "role": "user", "content": "hi" })).unwrap();
        assert_eq!(
            serde_json::to_value(string).unwrap()["content"][0]["type"],
            "text"
        );
        let bad = serde_json::from_value::<ContentBlock>(json!({ "type": "tool_use", "id": "x" }));
        assert!(bad.is_err());
    }
}
