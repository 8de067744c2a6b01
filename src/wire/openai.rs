//! OpenAI Chat Completions: the request's `tools` and `messages`, and the
//! `chat.completion` response body.
//!
//! Shapes follow the Chat Completions API reference
//! (<https://platform.openai.com/docs/api-reference/chat>), as every server
//! that speaks the format sends it: OpenAI, DeepSeek, Gemini's
//! OpenAI-compatible endpoint, OpenRouter, vLLM, llama.cpp, Ollama.
//!
//! | conversation | Chat Completions |
//! | --- | --- |
//! | [`Message::System`] | `{"role": "system" \| "developer", "content"}` |
//! | [`Message::User`] | `{"role": "user", "content": string \| [text, image_url, ...]}` |
//! | [`Message::Assistant`] | `{"role": "assistant", "content", "reasoning_content"?, "tool_calls"?}` |
//! | [`Message::Tool`] | `{"role": "tool", "tool_call_id", "content"}` |
//! | [`ContentPart::Reasoning`] | DeepSeek's and vLLM's `reasoning_content` |
//! | [`ContentPart::ToolCall`] | `{"id", "type": "function", "function": {"name", "arguments"}}` |
//! | [`ContentPart::Provider`] | a user part such as `input_audio` or `file`; a tool call of another `type` such as `custom` |
//! | [`Extras`] | any other field of a message, a tool call, a text part, an `image_url` or a tool's `function` |
//!
//! A tool call's `arguments` is the JSON **text** the model wrote; it is
//! kept verbatim in [`ToolCall::arguments`], valid JSON or not (the turn
//! runner answers a bad call with an error result; this module never
//! rejects one).
//!
//! # Parsing is tolerant
//!
//! [`parse_messages`], [`parse_request`], [`parse_response`] and
//! [`parse_tools`] read what real servers send: `arguments` given as a JSON
//! object (llama.cpp, mlx-lm) or missing (OpenRouter), a tool call without
//! `id` or `type`, `content` as a string or an array of parts, empty or
//! repeated call ids (fresh ids are minted, shared by a call and its
//! result). Fields this crate does not model are kept as [`Extras`] and
//! written back. A payload that does not have the documented shape fails
//! with a [`WireError`] whose path names the culprit, e.g.
//! `response.choices[0].message.tool_calls[1]`.
//!
//! # Exporting is strict
//!
//! [`export_messages`] and [`export_tools`] build what OpenAI accepts: call
//! ids of at most 40 characters and tool names matching
//! `^[a-zA-Z0-9_-]{1,64}$` (ids and names that break these rules are mapped
//! to valid ones, the same for a call and its result), blank arguments
//! written as `{}`, no blank text, no empty message.
//!
//! # What a round trip loses
//!
//! Parsing then exporting keeps the conversation, and exporting then
//! parsing gives it back, except for what the format cannot say:
//!
//! - [`ToolResult::is_error`]: OpenAI has no field for it. It is not
//!   exported (the runner writes a failure as an error sentence the model
//!   reads); parsing sets it to `false`.
//! - Images in a tool result: a `tool` message holds text only, so they
//!   move to one `user` message after the run of tool messages, each
//!   result's images after the text `Images returned by tool call <id>:`.
//!   Parsed back, that is a [`Message::User`].
//! - Text parts of system, assistant and tool messages are concatenated
//!   into one string, and their own extras are dropped (user text parts
//!   keep theirs). Empty and whitespace-only text parts are dropped, and so
//!   is a message left with nothing: a blank system message, a user message
//!   without parts, an assistant message without text and tool calls.
//! - Reasoning, provider parts and extras of another [`WireFormat`] are
//!   left out; only the format they came from can read them.
//! - Invalid call ids and names are replaced (see above); blank arguments
//!   become `{}`.
//! - Dropped when parsing: a tool call's `index` (a streaming position the
//!   order already keeps), `null`-valued message and call fields, and the
//!   response-only `annotations`.
//!
//! To store a conversation without loss, serialise [`Message`] itself.
//!
//! # Example
//!
//! ```
//! use agent_loop::conversation::{FinishReason, Message};
//! use agent_loop::wire::openai;
//! use serde_json::json;
//!
//! let response = json!({
//!     "object": "chat.completion",
//!     "choices": [{
//!         "index": 0,
//!         "finish_reason": "tool_calls",
//!         "message": {
//!             "role": "assistant",
//!             "content": null,
//!             "tool_calls": [{
//!                 "id": "call_1",
//!                 "type": "function",
//!                 "function": { "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}" }
//!             }]
//!         }
//!     }],
//!     "usage": { "prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62 }
//! });
//! let response = openai::parse_response(&response)?;
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.input_tokens, 50);
//!
//! let mut conversation = vec![Message::user("Weather in Oslo?")];
//! conversation.push(Message::Assistant(response.message));
//! let body = json!({ "messages": openai::export_messages(&conversation) });
//! assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["name"], "get_weather");
//! assert_eq!(openai::parse_messages(&body["messages"])?, conversation);
//! # Ok::<_, agent_loop::wire::WireError>(())
//! ```

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::declaration::{ParsedRequest, ProviderTool, ToolDeclaration};
use super::decode::decode;
use super::error::{WireError, WireErrorKind, WireFormat};
use super::ids::ExportIds;
use crate::conversation::{
    AssistantMessage, ContentPart, Extras, FinishReason, ImagePart, ImageSource, Message,
    ModelResponse, ProviderPart, ReasoningPart, SystemMessage, SystemRole, TextPart, ToolCall,
    ToolResult, Usage, UserMessage,
};
use crate::tool::ToolInfo;

const FORMAT: WireFormat = WireFormat::OpenAiChat;

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

/// The `type` of a function tool and of a function tool call: always
/// `"function"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionType {
    /// `"function"`.
    #[default]
    Function,
}

/// One function tool of a request's `tools` array:
/// `{"type": "function", "function": {...}}`
/// ([reference](https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools)).
///
/// A missing `type` reads as `"function"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a tool object")]
pub struct Tool {
    /// Always [`FunctionType::Function`].
    #[serde(rename = "type", default)]
    pub kind: FunctionType,
    /// The function the model may call.
    pub function: FunctionDefinition,
}

/// The `function` of a [`Tool`]:
/// `{"name", "description", "parameters", "strict"?, ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a function object")]
pub struct FunctionDefinition {
    /// The model-facing tool name.
    pub name: String,
    /// What the tool does, for the model; a missing or `null` description
    /// reads as `""`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    /// JSON Schema of the arguments object; missing or `null` reads as the
    /// empty object schema `{"type": "object", "properties": {}}`.
    #[serde(default = "empty_schema", deserialize_with = "schema_or_empty")]
    pub parameters: Value,
    /// Strict mode (structured outputs for the arguments); left out when
    /// `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Any other field of `function`, kept verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

impl From<&ToolInfo> for Tool {
    /// The tool for `info`: its name, description, parameters, `strict`
    /// when set, and its extras when they came from this format.
    fn from(info: &ToolInfo) -> Self {
        Self {
            kind: FunctionType::Function,
            function: FunctionDefinition {
                name: info.name.clone(),
                description: info.description.clone(),
                parameters: info.parameters.clone(),
                strict: info.strict,
                extras: fields_for(&info.extras),
            },
        }
    }
}

/// The request's `tools` array for these tools, in order (see
/// [`Tool`]'s `From<&ToolInfo>`). Serialise it with `serde_json`.
///
/// ```
/// use agent_loop::{tool::ToolInfo, wire::openai};
///
/// let mut info = ToolInfo::without_parameters("now", "The current time.");
/// info.strict = Some(true);
/// let json = serde_json::to_value(openai::export_tools(&[info]))?;
/// assert_eq!(json[0]["type"], "function");
/// assert_eq!(json[0]["function"]["name"], "now");
/// assert_eq!(json[0]["function"]["strict"], true);
/// # Ok::<_, serde_json::Error>(())
/// ```
pub fn export_tools(tools: &[ToolInfo]) -> Vec<Tool> {
    tools.iter().map(Tool::from).collect()
}

/// Parses a request's `tools` array.
///
/// A `"type": "function"` tool (or one without `type`) becomes a
/// [`ToolDeclaration::Function`]: a missing `description` reads as `""`, a
/// missing or `null` `parameters` as the empty object schema, `strict` is
/// read, and any other field of `function` is kept in
/// [`ToolInfo::extras`]. A tool of any other `type` (OpenAI's `custom`
/// tools) becomes a [`ToolDeclaration::Provider`] kept verbatim, named by
/// the `name` of its nested object (`{"type": "custom", "custom": {"name"}}`),
/// else by a top-level `name`, else `""`.
///
/// # Errors
///
/// A [`WireError`] at `tools` or `tools[i]…`: [`WireErrorKind::WrongType`]
/// when `tools` is not an array of objects or a field has the wrong JSON
/// type; [`WireErrorKind::MissingField`] for a function tool without
/// `function` or `function.name`.
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    parse_tools_at("tools", tools)
}

/// Exports parsed [`ToolDeclaration`]s as a `tools` array: function tools
/// as [`export_tools`] does, provider tools of this format verbatim.
///
/// # Errors
///
/// [`WireErrorKind::ProviderTool`] at `tools[i]` for a provider tool of
/// another format (an Anthropic `memory_20250818`, say): only its own
/// provider knows what it is.
pub fn export_declarations(tools: &[ToolDeclaration]) -> Result<Vec<Value>, WireError> {
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let path = format!("tools[{index}]");
            match tool {
                ToolDeclaration::Function(info) => {
                    serde_json::to_value(Tool::from(info)).map_err(|error| {
                        WireError::new(
                            FORMAT,
                            path,
                            WireErrorKind::Invalid {
                                message: error.to_string(),
                            },
                        )
                    })
                }
                ToolDeclaration::Provider(tool) if tool.format == FORMAT => Ok(tool.value.clone()),
                ToolDeclaration::Provider(tool) => Err(WireError::new(
                    FORMAT,
                    path,
                    WireErrorKind::ProviderTool {
                        name: tool.name.clone(),
                        tool_type: tool.tool_type.clone(),
                        format: tool.format,
                    },
                )),
            }
        })
        .collect()
}

fn parse_tools_at(root: &str, tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, tools)?;
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let path = format!("{root}[{index}]");
            let tag: TypeTag = decode(FORMAT, &path, item)?;
            match tag.kind.as_deref() {
                None | Some("function") => {
                    let tool: Tool = decode(FORMAT, &path, item)?;
                    let function = tool.function;
                    Ok(ToolDeclaration::Function(ToolInfo {
                        name: function.name,
                        description: function.description,
                        parameters: function.parameters,
                        strict: function.strict,
                        extras: Extras::new(FORMAT, function.extras),
                    }))
                }
                Some(kind) => {
                    let name = item
                        .get(kind)
                        .and_then(|nested| nested.get("name"))
                        .or_else(|| item.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    Ok(ToolDeclaration::Provider(ProviderTool {
                        format: FORMAT,
                        name: name.to_owned(),
                        tool_type: kind.to_owned(),
                        value: item.clone(),
                    }))
                }
            }
        })
        .collect()
}

/// The `type` of an object, read before its shape is chosen.
#[derive(Deserialize)]
#[serde(expecting = "an object")]
struct TypeTag {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// The `role` of a message, read before its shape is chosen.
#[derive(Deserialize)]
#[serde(expecting = "a message object")]
struct RoleTag {
    role: String,
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/// One element of a request's `messages` array, tagged by `role`
/// ([reference](https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages)).
///
/// Serialise it with `serde_json`. Its derived `Deserialize` reads one
/// message of a known role; [`parse_messages`] reads a whole array with
/// better error paths and converts it to a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// `{"role": "system", "content"}`.
    System(SystemChatMessage),
    /// `{"role": "developer", "content"}`: OpenAI's name for the system
    /// message since its reasoning models.
    Developer(SystemChatMessage),
    /// `{"role": "user", "content"}`.
    User(UserChatMessage),
    /// `{"role": "assistant", "content", "reasoning_content"?, "tool_calls"?}`.
    Assistant(AssistantChatMessage),
    /// `{"role": "tool", "tool_call_id", "content"}`.
    Tool(ToolChatMessage),
}

/// A `system` or `developer` message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a system message object")]
pub struct SystemChatMessage {
    /// The instructions: a string or an array of text parts.
    pub content: MessageContent<ChatTextPart>,
    /// Any other field (`name`), kept verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// A `user` message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a user message object")]
pub struct UserChatMessage {
    /// A string, or an array of text, image and other parts.
    pub content: MessageContent<UserContentPart>,
    /// Any other field (`name`), kept verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// An `assistant` message, as a request sends it back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "an assistant message object")]
pub struct AssistantChatMessage {
    /// The model's text; `null` (written as such) when it only called
    /// tools. Read as a string or an array of `text` and `refusal` parts.
    #[serde(default)]
    pub content: Option<MessageContent<AssistantContentPart>>,
    /// The model's reasoning, as DeepSeek and vLLM send it and DeepSeek
    /// requires it back across tool calls; left out when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The model's refusal message; left out when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The tool calls, in order; left out when empty, as the API expects.
    /// `null` reads as empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tool_calls: Vec<AssistantToolCall>,
    /// Any other field (`name`, Gemini's `extra_content`), kept verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// A `tool` message: the result of one tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a tool message object")]
pub struct ToolChatMessage {
    /// The id of the tool call this answers.
    pub tool_call_id: String,
    /// The result: a string or an array of text parts.
    pub content: MessageContent<ChatTextPart>,
    /// Any other field, kept verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// A message's `content`: a string, or an array of parts `P`.
///
/// Serialises as the string or the array; reads either, and nothing else
/// (`null` is a [`WireErrorKind::WrongType`] where content is required).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MessageContent<P> {
    /// `"content": "..."`.
    Text(String),
    /// `"content": [...]`.
    Parts(Vec<P>),
}

impl<'de, P: Deserialize<'de>> Deserialize<'de> for MessageContent<P> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<P>(PhantomData<P>);

        impl<'de, P: Deserialize<'de>> Visitor<'de> for ContentVisitor<P> {
            type Value = MessageContent<P>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string or an array of content parts")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(text.to_owned()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(text))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(MessageContent::Parts(parts))
            }
        }

        deserializer.deserialize_any(ContentVisitor(PhantomData))
    }
}

/// The `type` of a [`ChatTextPart`]: always `"text"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextType {
    /// `"text"`.
    #[default]
    Text,
}

/// A text part: `{"type": "text", "text"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a text part object")]
pub struct ChatTextPart {
    /// Always [`TextType::Text`].
    #[serde(rename = "type")]
    pub kind: TextType,
    /// The text.
    pub text: String,
    /// Any other field (OpenRouter's `cache_control`), kept verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

impl ChatTextPart {
    /// A text part without extras.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            kind: TextType::Text,
            text: text.into(),
            extras: Map::new(),
        }
    }
}

/// The `type` of an [`ImageUrlPart`]: always `"image_url"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageUrlType {
    /// `"image_url"`.
    #[default]
    ImageUrl,
}

/// An image part of a user message: `{"type": "image_url", "image_url": {"url", "detail"?}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "an image part object")]
pub struct ImageUrlPart {
    /// Always [`ImageUrlType::ImageUrl`].
    #[serde(rename = "type")]
    pub kind: ImageUrlType,
    /// Where the image is.
    pub image_url: ImageUrl,
}

/// The `image_url` of an [`ImageUrlPart`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "an image_url object")]
pub struct ImageUrl {
    /// An `http(s)` URL, or a `data:<media type>;base64,<data>` URL.
    pub url: String,
    /// Any other field (`detail`: `auto`, `low`, `high`), kept verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// One part of a user message's content array.
///
/// Reads `text` and `image_url` parts into their types and any other part
/// (`input_audio`, `file`) verbatim; serialises each as it is.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContentPart {
    /// `{"type": "text", "text"}`.
    Text(ChatTextPart),
    /// `{"type": "image_url", "image_url": {...}}`.
    ImageUrl(ImageUrlPart),
    /// Any other part, verbatim.
    Other(Value),
}

/// Every field a user content part may have; read in one pass so error
/// paths reach inside the part.
#[derive(Deserialize)]
#[serde(expecting = "a content part object")]
struct AnyUserPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    image_url: Option<ImageUrl>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for UserContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let part = AnyUserPart::deserialize(deserializer)?;
        match part.kind.as_str() {
            "text" => Ok(Self::Text(ChatTextPart {
                kind: TextType::Text,
                text: part.text.ok_or_else(|| de::Error::missing_field("text"))?,
                extras: without_nulls(part.rest),
            })),
            // Fields beside `image_url` have no place in an image part;
            // they are dropped.
            "image_url" => Ok(Self::ImageUrl(ImageUrlPart {
                kind: ImageUrlType::ImageUrl,
                image_url: part
                    .image_url
                    .ok_or_else(|| de::Error::missing_field("image_url"))?,
            })),
            _ => {
                let mut value = part.rest;
                value.insert("type".to_owned(), Value::String(part.kind));
                if let Some(text) = part.text {
                    value.insert("text".to_owned(), Value::String(text));
                }
                if let Some(image_url) = part.image_url {
                    value.insert("image_url".to_owned(), image_url_value(image_url));
                }
                Ok(Self::Other(Value::Object(value)))
            }
        }
    }
}

/// The `type` of a [`RefusalPart`]: always `"refusal"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalType {
    /// `"refusal"`.
    #[default]
    Refusal,
}

/// A refusal part of an assistant message's content array:
/// `{"type": "refusal", "refusal"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RefusalPart {
    /// Always [`RefusalType::Refusal`].
    #[serde(rename = "type")]
    pub kind: RefusalType,
    /// The refusal message.
    pub refusal: String,
}

/// One part of an assistant message's content array: text or a refusal.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AssistantContentPart {
    /// `{"type": "text", "text"}`.
    Text(ChatTextPart),
    /// `{"type": "refusal", "refusal"}`.
    Refusal(RefusalPart),
}

#[derive(Deserialize)]
#[serde(expecting = "a content part object")]
struct AnyAssistantPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for AssistantContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let part = AnyAssistantPart::deserialize(deserializer)?;
        match part.kind.as_str() {
            "text" => Ok(Self::Text(ChatTextPart {
                kind: TextType::Text,
                text: part.text.ok_or_else(|| de::Error::missing_field("text"))?,
                extras: without_nulls(part.rest),
            })),
            "refusal" => Ok(Self::Refusal(RefusalPart {
                kind: RefusalType::Refusal,
                refusal: part
                    .refusal
                    .ok_or_else(|| de::Error::missing_field("refusal"))?,
            })),
            other => Err(de::Error::unknown_variant(other, &["text", "refusal"])),
        }
    }
}

/// One element of an assistant message's `tool_calls`.
///
/// Reads a call of `type` `function` (or without `type`) into a
/// [`MessageToolCall`] and a call of any other `type` (`custom`) verbatim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AssistantToolCall {
    /// A function tool call.
    Function(MessageToolCall),
    /// A call of another `type`, verbatim.
    Other(Value),
}

/// A function tool call:
/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a tool call object")]
pub struct MessageToolCall {
    /// The tool call id, e.g. `call_abc123`. Missing or `null` reads as
    /// `""` (Gemini sends `""`; the conversation parser mints a fresh one).
    #[serde(default, deserialize_with = "null_as_default")]
    pub id: String,
    /// Always [`FunctionType::Function`]; a missing `type` reads as it.
    #[serde(rename = "type", default)]
    pub kind: FunctionType,
    /// The called function and its arguments.
    pub function: FunctionCall,
    /// Any other field (Gemini's `extra_content`, which holds the
    /// `thought_signature` Gemini needs back; a streamed `index`), kept
    /// verbatim.
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// The `function` of a [`MessageToolCall`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a function call object")]
pub struct FunctionCall {
    /// The tool name the model asked for.
    pub name: String,
    /// The arguments as the JSON text the model wrote. Read from a string
    /// verbatim, from a JSON object or array (llama.cpp, mlx-lm) as its
    /// compact JSON text, and as `""` when missing or `null` (OpenRouter,
    /// for a tool whose parameters are all optional).
    #[serde(default, deserialize_with = "arguments_text")]
    pub arguments: String,
}

#[derive(Deserialize)]
#[serde(expecting = "a tool call object")]
struct AnyToolCall {
    #[serde(default, deserialize_with = "present")]
    id: Option<Option<String>>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    function: Option<FunctionCall>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl<'de> Deserialize<'de> for AssistantToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let call = AnyToolCall::deserialize(deserializer)?;
        match call.kind.as_deref() {
            None | Some("function") => Ok(Self::Function(MessageToolCall {
                id: call.id.flatten().unwrap_or_default(),
                kind: FunctionType::Function,
                function: call
                    .function
                    .ok_or_else(|| de::Error::missing_field("function"))?,
                extras: call.rest,
            })),
            Some(kind) => {
                let mut value = call.rest;
                if let Some(id) = call.id {
                    value.insert("id".to_owned(), id.map_or(Value::Null, Value::String));
                }
                value.insert("type".to_owned(), Value::String(kind.to_owned()));
                if let Some(function) = call.function {
                    value.insert(
                        "function".to_owned(),
                        serde_json::json!({ "name": function.name, "arguments": function.arguments }),
                    );
                }
                Ok(Self::Other(Value::Object(value)))
            }
        }
    }
}

/// The request's `messages` array for a conversation, in order.
///
/// - [`Message::System`] → `{"role": "system" | "developer", "content": text}`.
/// - [`Message::User`] → `content` a string when it is one text part
///   without extras, else an array of `text` parts, `image_url` parts (an
///   inline image as a `data:` URL) and this format's provider parts.
/// - [`Message::Assistant`] → `content`: its text, or `null`;
///   `reasoning_content`: this format's reasoning, when it has some;
///   `tool_calls`: its calls in order (this format's provider calls
///   verbatim in their place), blank arguments written as `{}`.
/// - [`Message::Tool`] → `{"role": "tool", "tool_call_id", "content": text}`;
///   its images go to one `user` message after the run of tool messages.
///
/// Call ids longer than 40 characters and names that break
/// `^[a-zA-Z0-9_-]{1,64}$` are mapped to valid ones, the same for a call
/// and its result. Blank text is left out, and so is a message left with
/// nothing (a blank system message, a user message without parts, an
/// assistant message without text and tool calls); a tool message is always
/// written, so every call keeps its result. Extras, reasoning and provider
/// parts of another format are left out. See the module docs for what a
/// round trip loses.
pub fn export_messages(conversation: &[Message]) -> Vec<ChatMessage> {
    let ids = ExportIds::new(FORMAT, conversation);
    let mut messages = Vec::with_capacity(conversation.len());
    // Images of the current run of tool results, for one user message.
    let mut tool_images: Vec<UserContentPart> = Vec::new();
    for message in conversation {
        if !matches!(message, Message::Tool(_)) && !tool_images.is_empty() {
            messages.push(images_message(std::mem::take(&mut tool_images)));
        }
        match message {
            Message::System(system) => {
                if is_blank(&system.text) {
                    continue;
                }
                let content = MessageContent::Text(system.text.clone());
                let system_message = SystemChatMessage {
                    content,
                    extras: fields_for(&system.extras),
                };
                messages.push(match system.system_role {
                    SystemRole::System => ChatMessage::System(system_message),
                    SystemRole::Developer => ChatMessage::Developer(system_message),
                });
            }
            Message::User(user) => {
                if let Some(user) = export_user(user) {
                    messages.push(ChatMessage::User(user));
                }
            }
            Message::Assistant(assistant) => {
                if let Some(assistant) = export_assistant(assistant, &ids) {
                    messages.push(ChatMessage::Assistant(assistant));
                }
            }
            Message::Tool(result) => {
                let id = ids.id(&result.tool_call_id);
                let images: Vec<UserContentPart> = result
                    .content
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::Image(image) => Some(export_image(image)),
                        _ => None,
                    })
                    .collect();
                if !images.is_empty() {
                    tool_images.push(UserContentPart::Text(ChatTextPart::new(format!(
                        "Images returned by tool call {id}:"
                    ))));
                    tool_images.extend(images);
                }
                messages.push(ChatMessage::Tool(ToolChatMessage {
                    tool_call_id: id,
                    content: MessageContent::Text(non_blank_text(&result.content)),
                    extras: fields_for(&result.extras),
                }));
            }
        }
    }
    if !tool_images.is_empty() {
        messages.push(images_message(tool_images));
    }
    messages
}

fn images_message(parts: Vec<UserContentPart>) -> ChatMessage {
    ChatMessage::User(UserChatMessage {
        content: MessageContent::Parts(parts),
        extras: Map::new(),
    })
}

fn export_user(user: &UserMessage) -> Option<UserChatMessage> {
    let parts: Vec<UserContentPart> = user
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) if !is_blank(&text.text) => {
                Some(UserContentPart::Text(ChatTextPart {
                    kind: TextType::Text,
                    text: text.text.clone(),
                    extras: fields_for(&text.extras),
                }))
            }
            ContentPart::Image(image) => Some(export_image(image)),
            ContentPart::Provider(provider) if provider.format == FORMAT => {
                Some(UserContentPart::Other(provider.value.clone()))
            }
            _ => None,
        })
        .collect();
    let content = match <[UserContentPart; 1]>::try_from(parts) {
        Ok([UserContentPart::Text(text)]) if text.extras.is_empty() => {
            MessageContent::Text(text.text)
        }
        Ok([part]) => MessageContent::Parts(vec![part]),
        Err(parts) if parts.is_empty() => return None,
        Err(parts) => MessageContent::Parts(parts),
    };
    Some(UserChatMessage {
        content,
        extras: fields_for(&user.extras),
    })
}

fn export_image(image: &ImagePart) -> UserContentPart {
    let url = match &image.source {
        ImageSource::Url { url } => url.clone(),
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
    };
    UserContentPart::ImageUrl(ImageUrlPart {
        kind: ImageUrlType::ImageUrl,
        image_url: ImageUrl {
            url,
            extras: fields_for(&image.extras),
        },
    })
}

fn export_assistant(assistant: &AssistantMessage, ids: &ExportIds) -> Option<AssistantChatMessage> {
    let text = non_blank_text(&assistant.content);
    let mut reasoning: Option<String> = None;
    let mut tool_calls = Vec::new();
    for part in &assistant.content {
        match part {
            ContentPart::Reasoning(part) if part.format == FORMAT => {
                reasoning.get_or_insert_default().push_str(&part.text);
            }
            ContentPart::ToolCall(call) => {
                let arguments = if is_blank(&call.arguments) {
                    "{}".to_owned()
                } else {
                    call.arguments.clone()
                };
                tool_calls.push(AssistantToolCall::Function(MessageToolCall {
                    id: ids.id(&call.id),
                    kind: FunctionType::Function,
                    function: FunctionCall {
                        name: ids.name(&call.name),
                        arguments,
                    },
                    extras: fields_for(&call.extras),
                }));
            }
            ContentPart::Provider(provider) if provider.format == FORMAT => {
                tool_calls.push(AssistantToolCall::Other(provider.value.clone()));
            }
            _ => {}
        }
    }
    if text.is_empty() && tool_calls.is_empty() {
        return None;
    }
    let mut extras = fields_for(&assistant.extras);
    let refusal = match extras.remove("refusal") {
        Some(Value::String(refusal)) => Some(refusal),
        Some(other) => {
            extras.insert("refusal".to_owned(), other);
            None
        }
        None => None,
    };
    Some(AssistantChatMessage {
        content: (!text.is_empty()).then_some(MessageContent::Text(text)),
        reasoning_content: reasoning,
        refusal,
        tool_calls,
        extras,
    })
}

/// Parses a request's `messages` array into a conversation.
///
/// - `system` and `developer`: `content` a string or an array of text
///   parts (concatenated, no separator) → [`Message::System`] with its
///   [`SystemRole`].
/// - `user`: a string → one text part; an array: `text` → text,
///   `image_url` → an image (a `data:<type>;base64,` URL as inline data;
///   `detail` and other `image_url` fields in its extras), any other part
///   (`input_audio`, `file`) → a [`ContentPart::Provider`] verbatim.
/// - `assistant`: `reasoning_content` (even `""`) → a
///   [`ContentPart::Reasoning`] first; then the text (`content` a string,
///   an array of text parts, `null` or absent); then the tool calls in
///   order. A call's `arguments` is kept as text (see [`FunctionCall`]);
///   a missing or `null` `id` reads as `""`; a call of another `type` is a
///   [`ContentPart::Provider`] in its place. A non-null `refusal` (and
///   `refusal` content parts) is kept in the message extras.
/// - `tool`: `tool_call_id` and `content` (a string or an array of text
///   parts) → a [`ToolResult`] with `is_error: false`: the format has no
///   such field.
///
/// Unknown fields of a message, a call, a user text part or an `image_url`
/// are kept as [`Extras`], except `null`-valued ones, `annotations` and a
/// call's `index`. Empty and whitespace-only text is dropped, and so is a
/// message left with nothing (see [`export_messages`]), so that parsing
/// what [`export_messages`] wrote gives the same conversation. Finally
/// every call whose id is empty or repeats an earlier call's gets a fresh
/// id, which its result (the next one carrying the old id) shares.
///
/// # Errors
///
/// A [`WireError`] at `messages` or below: [`WireErrorKind::UnknownRole`]
/// for a role other than the five above (`function`, say);
/// [`WireErrorKind::MissingField`] for a missing `role`, `content` (system,
/// user, tool), `tool_call_id`, a function call's `function` or `name`;
/// [`WireErrorKind::WrongType`] for a field of the wrong JSON type;
/// [`WireErrorKind::Invalid`] for a system, assistant or tool content part
/// that is not text.
pub fn parse_messages(messages: &Value) -> Result<Vec<Message>, WireError> {
    parse_messages_at("messages", messages)
}

fn parse_messages_at(root: &str, messages: &Value) -> Result<Vec<Message>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, messages)?;
    let mut conversation = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let path = format!("{root}[{index}]");
        if let Some(message) = parse_message(&path, item)? {
            conversation.push(message);
        }
    }
    crate::conversation::ids::mint_missing_ids(&mut conversation);
    Ok(conversation)
}

/// One message; `None` when it carries nothing [`export_messages`] would
/// write.
fn parse_message(path: &str, value: &Value) -> Result<Option<Message>, WireError> {
    let RoleTag { role } = decode(FORMAT, path, value)?;
    Ok(match role.as_str() {
        "system" | "developer" => {
            let message: SystemChatMessage = decode(FORMAT, path, value)?;
            let text = match message.content {
                MessageContent::Text(text) => text,
                MessageContent::Parts(parts) => parts.into_iter().map(|part| part.text).collect(),
            };
            (!is_blank(&text)).then(|| {
                Message::System(SystemMessage {
                    text,
                    system_role: if role == "developer" {
                        SystemRole::Developer
                    } else {
                        SystemRole::System
                    },
                    extras: message_extras(message.extras),
                })
            })
        }
        "user" => {
            let message: UserChatMessage = decode(FORMAT, path, value)?;
            let content: Vec<ContentPart> = match message.content {
                MessageContent::Text(text) => vec![ContentPart::text(text)],
                MessageContent::Parts(parts) => parts.into_iter().map(user_part).collect(),
            }
            .into_iter()
            .filter(|part| !matches!(part, ContentPart::Text(text) if is_blank(&text.text)))
            .collect();
            (!content.is_empty()).then(|| {
                Message::User(UserMessage {
                    content,
                    extras: message_extras(message.extras),
                })
            })
        }
        "assistant" => {
            let message: AssistantChatMessage = decode(FORMAT, path, value)?;
            let assistant = assistant_message(message);
            let keep = assistant.content.iter().any(|part| {
                matches!(
                    part,
                    ContentPart::Text(_) | ContentPart::ToolCall(_) | ContentPart::Provider(_)
                )
            });
            keep.then_some(Message::Assistant(assistant))
        }
        "tool" => {
            let message: ToolChatMessage = decode(FORMAT, path, value)?;
            let text = match message.content {
                MessageContent::Text(text) => text,
                MessageContent::Parts(parts) => parts.into_iter().map(|part| part.text).collect(),
            };
            let content = if is_blank(&text) {
                Vec::new()
            } else {
                vec![ContentPart::text(text)]
            };
            Some(Message::Tool(ToolResult {
                tool_call_id: message.tool_call_id,
                content,
                is_error: false,
                extras: message_extras(message.extras),
            }))
        }
        _ => {
            return Err(WireError::new(
                FORMAT,
                path,
                WireErrorKind::UnknownRole { role },
            ));
        }
    })
}

fn user_part(part: UserContentPart) -> ContentPart {
    match part {
        UserContentPart::Text(text) => ContentPart::Text(TextPart {
            text: text.text,
            extras: Extras::new(FORMAT, text.extras),
        }),
        UserContentPart::ImageUrl(image) => {
            let ImageUrl { url, extras } = image.image_url;
            let source = match data_url(&url) {
                Some((media_type, data)) => ImageSource::Base64 {
                    media_type: media_type.to_owned(),
                    data: data.to_owned(),
                },
                None => ImageSource::Url { url },
            };
            ContentPart::Image(ImagePart {
                source,
                extras: Extras::new(FORMAT, without_nulls(extras)),
            })
        }
        UserContentPart::Other(value) => ContentPart::Provider(ProviderPart {
            format: FORMAT,
            value,
        }),
    }
}

/// `data:<media type>;base64,<data>` → its media type and data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (media_type, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    (!media_type.is_empty() && !media_type.contains(',')).then_some((media_type, data))
}

/// The conversation's assistant message for a Chat Completions one: its
/// reasoning, its text, its tool calls; the refusal in its extras.
fn assistant_message(message: AssistantChatMessage) -> AssistantMessage {
    let mut content = Vec::new();
    if let Some(reasoning) = message.reasoning_content {
        content.push(ContentPart::Reasoning(ReasoningPart {
            text: reasoning,
            signature: None,
            redacted: None,
            format: FORMAT,
            extras: Extras::default(),
        }));
    }
    let mut refusal = message.refusal;
    let text = match message.content {
        None => String::new(),
        Some(MessageContent::Text(text)) => text,
        Some(MessageContent::Parts(parts)) => {
            let mut text = String::new();
            for part in parts {
                match part {
                    AssistantContentPart::Text(part) => text.push_str(&part.text),
                    AssistantContentPart::Refusal(part) => {
                        refusal.get_or_insert_default().push_str(&part.refusal);
                    }
                }
            }
            text
        }
    };
    if !is_blank(&text) {
        content.push(ContentPart::text(text));
    }
    for call in message.tool_calls {
        content.push(match call {
            AssistantToolCall::Function(call) => {
                let mut extras = without_nulls(call.extras);
                extras.remove("index");
                ContentPart::ToolCall(ToolCall {
                    id: call.id,
                    name: call.function.name,
                    arguments: call.function.arguments,
                    extras: Extras::new(FORMAT, extras),
                })
            }
            AssistantToolCall::Other(value) => ContentPart::Provider(ProviderPart {
                format: FORMAT,
                value,
            }),
        });
    }
    let mut extras = message.extras;
    if let Some(refusal) = refusal {
        extras.insert("refusal".to_owned(), Value::String(refusal));
    }
    AssistantMessage {
        content,
        extras: message_extras(extras),
    }
}

/// Parses a whole request body: its `messages` (as [`parse_messages`]
/// does) and its `tools` (as [`parse_tools`] does; absent or `null` gives
/// none). Other fields (`model`, `tool_choice`, ...) are not read.
///
/// # Errors
///
/// As [`parse_messages`] and [`parse_tools`], with paths rooted at
/// `request` (`request.messages[2].tool_calls[0]`);
/// [`WireErrorKind::MissingField`] without `messages`.
pub fn parse_request(body: &Value) -> Result<ParsedRequest, WireError> {
    #[derive(Deserialize)]
    #[serde(expecting = "a request object")]
    struct RequestBody {
        messages: Value,
        #[serde(default)]
        tools: Value,
    }
    let RequestBody { messages, tools } = decode(FORMAT, "request", body)?;
    Ok(ParsedRequest {
        conversation: parse_messages_at("request.messages", &messages)?,
        tools: if tools.is_null() {
            Vec::new()
        } else {
            parse_tools_at("request.tools", &tools)?
        },
    })
}

// ---------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------

/// A `chat.completion` response body
/// ([reference](https://platform.openai.com/docs/api-reference/chat/object)).
/// Fields other than `choices` and `usage` (`id`, `model`, `created`, ...)
/// are not read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a chat.completion object")]
pub struct ChatCompletion {
    /// The completions; one unless the request asked for `n > 1`.
    pub choices: Vec<Choice>,
    /// Tokens used; absent from some servers' responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CompletionUsage>,
}

/// One element of [`ChatCompletion::choices`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a choice object")]
pub struct Choice {
    /// The choice's position.
    #[serde(default)]
    pub index: u64,
    /// The message the model wrote.
    pub message: ChatCompletionMessage,
    /// `stop`, `length`, `tool_calls`, `content_filter`, `function_call`;
    /// other servers send other values, or `null`.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// The `message` of a [`Choice`]: an assistant message with its `role`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a message object")]
pub struct ChatCompletionMessage {
    /// `assistant`.
    pub role: String,
    /// The model's text; `null` when it only called tools or refused.
    #[serde(default)]
    pub content: Option<MessageContent<AssistantContentPart>>,
    /// The model's reasoning (DeepSeek, vLLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// The model's refusal message, when it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The tool calls, in order.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tool_calls: Vec<AssistantToolCall>,
    /// Any other field (`annotations`, `audio`, Gemini's `extra_content`).
    #[serde(flatten)]
    pub extras: Map<String, Value>,
}

/// The `usage` of a [`ChatCompletion`]. Every count reads as `0` when
/// missing or `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a usage object")]
pub struct CompletionUsage {
    /// Input tokens, cached ones included.
    #[serde(default, deserialize_with = "null_as_default")]
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default, deserialize_with = "null_as_default")]
    pub completion_tokens: u64,
    /// Both.
    #[serde(default, deserialize_with = "null_as_default")]
    pub total_tokens: u64,
    /// The input tokens' breakdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// The output tokens' breakdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    /// DeepSeek's count of input tokens read from its cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_hit_tokens: Option<u64>,
}

/// [`CompletionUsage::prompt_tokens_details`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptTokensDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// [`CompletionUsage::completion_tokens_details`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionTokensDetails {
    /// Output tokens spent reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl From<&CompletionUsage> for Usage {
    /// `prompt_tokens` → `input_tokens`, `completion_tokens` →
    /// `output_tokens`, `prompt_tokens_details.cached_tokens` (else
    /// DeepSeek's `prompt_cache_hit_tokens`) → `cache_read_tokens`,
    /// `completion_tokens_details.reasoning_tokens` → `reasoning_tokens`.
    fn from(usage: &CompletionUsage) -> Self {
        Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            cache_read_tokens: usage
                .prompt_tokens_details
                .as_ref()
                .and_then(|details| details.cached_tokens)
                .or(usage.prompt_cache_hit_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: usage
                .completion_tokens_details
                .as_ref()
                .and_then(|details| details.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

/// Parses a `chat.completion` response body into a [`ModelResponse`].
///
/// Only the first choice is read (a request with `n > 1` asks for several;
/// the tool loop uses one). The message is read as in [`parse_messages`]
/// (reasoning first, then text, then tool calls; `annotations` and `null`
/// fields dropped; other fields in extras), except that it is returned even
/// when empty, and that a `refusal` also becomes the message's text when
/// it has none, so the model's words reach the conversation. Call ids are
/// kept as sent, even empty: the turn runner mints missing ones.
///
/// `finish_reason`: `stop` → [`FinishReason::Stop`], `tool_calls` and
/// `function_call` → [`FinishReason::ToolCalls`], `length` →
/// [`FinishReason::Length`], `content_filter` →
/// [`FinishReason::ContentFilter`], `null` or absent →
/// [`ToolCalls`](FinishReason::ToolCalls) when the message has tool calls,
/// else [`Stop`](FinishReason::Stop), anything else →
/// [`FinishReason::Other`]; a `refusal` makes it
/// [`FinishReason::Refusal`]. `usage` is read as [`CompletionUsage`]'s
/// `From` says; without it, [`Usage::default`].
///
/// # Errors
///
/// A [`WireError`] at `response` or below: [`WireErrorKind::NoChoices`] when
/// `choices` is empty; [`WireErrorKind::UnknownRole`] when the message's
/// role is not `assistant`; [`WireErrorKind::MissingField`] for a missing
/// `choices` (an `error` body, say), `message`, `role`, or a tool call's
/// `function` or `name`; [`WireErrorKind::WrongType`] for a field of the
/// wrong JSON type, e.g. at `response.choices[0].message.tool_calls[1].function.name`.
pub fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
    let completion: ChatCompletion = decode(FORMAT, "response", body)?;
    let usage = completion
        .usage
        .as_ref()
        .map(Usage::from)
        .unwrap_or_default();
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(WireError::new(
            FORMAT,
            "response.choices",
            WireErrorKind::NoChoices,
        ));
    };
    let message = choice.message;
    if message.role != "assistant" {
        return Err(WireError::new(
            FORMAT,
            "response.choices[0].message",
            WireErrorKind::UnknownRole { role: message.role },
        ));
    }
    let refusal = message.refusal.clone();
    let mut assistant = assistant_message(AssistantChatMessage {
        content: message.content,
        reasoning_content: message.reasoning_content,
        refusal: message.refusal,
        tool_calls: message.tool_calls,
        extras: message.extras,
    });
    if let Some(refusal) = &refusal
        && !assistant
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::Text(_)))
        && !is_blank(refusal)
    {
        // After the reasoning, before the calls.
        let at = assistant
            .content
            .iter()
            .take_while(|part| matches!(part, ContentPart::Reasoning(_)))
            .count();
        assistant
            .content
            .insert(at, ContentPart::text(refusal.clone()));
    }
    let finish_reason = if refusal.is_some() {
        FinishReason::Refusal
    } else {
        match choice.finish_reason.as_deref() {
            Some("stop") => FinishReason::Stop,
            Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
            Some("length") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None if assistant.has_tool_calls() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        }
    };
    Ok(ModelResponse {
        message: assistant,
        finish_reason,
        usage,
    })
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// The non-blank text parts of `parts`, concatenated with no separator.
fn non_blank_text(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) if !is_blank(&text.text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

/// `extras`' fields when they came from this format, else none.
fn fields_for(extras: &Extras) -> Map<String, Value> {
    extras.fields_for(FORMAT).cloned().unwrap_or_default()
}

fn without_nulls(mut fields: Map<String, Value>) -> Map<String, Value> {
    fields.retain(|_, value| !value.is_null());
    fields
}

/// A message's unknown fields as extras: without its `role` (read as the
/// tag), `null` fields and the response-only `annotations`.
fn message_extras(mut fields: Map<String, Value>) -> Extras {
    fields.remove("role");
    fields.remove("annotations");
    Extras::new(FORMAT, without_nulls(fields))
}

fn image_url_value(image_url: ImageUrl) -> Value {
    let mut value = image_url.extras;
    value.insert("url".to_owned(), Value::String(image_url.url));
    Value::Object(value)
}

fn empty_schema() -> Value {
    serde_json::json!({ "type": "object", "properties": {} })
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn schema_or_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
    Ok(Option::<Value>::deserialize(deserializer)?.unwrap_or_else(empty_schema))
}

/// A field that is present, `null` included (`Some(None)`), as opposed to
/// absent (`None`, through `#[serde(default)]`).
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// `arguments` as text: a string verbatim, `null` as `""`, any other JSON
/// value as its compact text.
fn arguments_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => text,
        Value::Null => String::new(),
        other => other.to_string(),
    })
}
