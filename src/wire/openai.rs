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
//! | [`ContentPart::Provider`] | a user part such as `input_audio` or `file`; an assistant content part of another `type` such as Mistral's `thinking`; a tool call of another `type` such as `custom` |
//! | [`Extras`] | any other field of a message, a tool call, a text part, an `image_url` or a tool's `function` |
//!
//! A tool call's `arguments` is the JSON **text** the model wrote; it is
//! kept verbatim in [`ToolCall::arguments`], valid JSON or not (the turn
//! runner answers a bad call with an error result; this module never
//! rejects one).
//!
//! Arguments that are not a JSON object (cut off by the output limit like
//! `{"city": "Par`, or `null`, `[1]`, `42`) are **exported** as the JSON
//! text of `{"_raw_arguments": "<the text>"}`
//! ([`RAW_ARGUMENTS_KEY`], the wrapper
//! the Anthropic export uses too): vLLM and llama.cpp parse every earlier
//! call's arguments and answer every later request with HTTP 400 when one
//! is not an object (vllm#43995, vllm#48922). [`parse_messages`] turns
//! exactly that one-key object back into the raw text, so parse → export →
//! parse stays the identity; [`parse_response`] does not (what the model
//! sends is kept as sent). An object that has exactly the wrapper's shape
//! (one `_raw_arguments` key with a string) is wrapped too, so it cannot be
//! taken for a wrapper: it comes back as the object it was.
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
//! written as `{}`, arguments that are not a JSON object wrapped (see
//! above), no blank text, no empty message.
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
//!   keep theirs). An assistant message holding a content part of another
//!   `type` (kept as a [`ContentPart::Provider`] in its place) is written
//!   with a `content` array instead: each run of text between such parts
//!   as one `{"type": "text", "text"}` part, the provider parts verbatim.
//! - Provider parts of this format go back where they came from by their
//!   shape (the part alone tells nothing else): one whose `type` is
//!   `function` or `custom`, or that has an `id` and an object member named
//!   by its `type`, is a tool call and goes into `tool_calls`; any other is
//!   an assistant content part and goes into `content`. A tool call of an
//!   unknown `type` without `id`, or a content part shaped like a call,
//!   comes back on the other side.
//! - Blank text is never exported, and a message left with nothing is not
//!   written: a blank system message, a user message without parts, an
//!   assistant message without text and tool calls. When parsing, a
//!   whitespace-only user text part is joined to the nearest text part
//!   before it in the message, else prepended to the nearest one after it,
//!   else dropped (its extras with it), so `"A"`, `"\n\n"`, `"B"` reads
//!   `"A\n\n"`, `"B"`, not `"AB"`; the text parts of an assistant message
//!   are joined whole, whitespace included, and a whitespace-only run
//!   between two provider parts is joined the same way. No blank part
//!   remains, so parse → export → parse stays the identity.
//! - Reasoning, provider parts and extras of another [`WireFormat`] are
//!   left out; only the format they came from can read them.
//! - Invalid call ids and names are replaced (see above); blank arguments
//!   become `{}`; arguments that are a JSON object go out as written, others
//!   wrapped and read back unwrapped (a model that itself sent the exact
//!   one-key wrapper object reads back as its inner text).
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

use super::arguments::{RAW_ARGUMENTS_KEY, arguments_object, raw_arguments};
use super::blank_text::{is_blank, join_blank_text};
use super::declaration::{ParsedRequest, ProviderTool, ToolDeclaration};
use super::decode::{check_depth, decode};
use super::error::{WireError, WireErrorKind};
use super::ids::ExportIds;
use crate::conversation::WireFormat;
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
pub fn export_tools<'t>(tools: impl IntoIterator<Item = &'t ToolInfo>) -> Vec<Tool> {
    tools.into_iter().map(Tool::from).collect()
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
    check_depth(FORMAT, "tools", tools)?;
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
    /// tools. Read as a string or an array of `text`, `refusal` and other
    /// parts (kept verbatim); written as an array when the message holds
    /// such another part.
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

/// One part of an assistant message's content array: text, a refusal, or
/// a part of another `type` (Mistral's `{"type": "thinking", "thinking":
/// [...]}`) kept verbatim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AssistantContentPart {
    /// `{"type": "text", "text"}`.
    Text(ChatTextPart),
    /// `{"type": "refusal", "refusal"}`.
    Refusal(RefusalPart),
    /// Any other part, verbatim.
    Other(Value),
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
            _ => {
                let mut value = part.rest;
                value.insert("type".to_owned(), Value::String(part.kind));
                if let Some(text) = part.text {
                    value.insert("text".to_owned(), Value::String(text));
                }
                if let Some(refusal) = part.refusal {
                    value.insert("refusal".to_owned(), Value::String(refusal));
                }
                Ok(Self::Other(Value::Object(value)))
            }
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
/// - [`Message::Assistant`] → `content`: its text, or `null`; an array of
///   text parts and its provider content parts in order when it has such a
///   part (see the module docs for which provider parts are calls);
///   `reasoning_content`: this format's reasoning, when it has some;
///   `tool_calls`: its calls in order (this format's provider calls
///   verbatim in their place), blank arguments written as `{}`, arguments
///   that are not a JSON object as `{"_raw_arguments": "<the text>"}` (see
///   the module docs).
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
    let mut ids = ExportIds::new(FORMAT, conversation);
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
                if let Some(assistant) = export_assistant(assistant, &mut ids) {
                    messages.push(ChatMessage::Assistant(assistant));
                }
            }
            Message::Tool(result) => {
                let id = ids.result(&result.tool_call_id);
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

fn export_assistant(
    assistant: &AssistantMessage,
    ids: &mut ExportIds,
) -> Option<AssistantChatMessage> {
    let text = non_blank_text(&assistant.content);
    let mut reasoning: Option<String> = None;
    let mut tool_calls = Vec::new();
    // Text and this format's provider content parts, in order, for a
    // `content` array; used only when such a provider part is present.
    let mut parts: Vec<AssistantContentPart> = Vec::new();
    let mut has_provider_content = false;
    for part in &assistant.content {
        match part {
            ContentPart::Text(text) if !is_blank(&text.text) => {
                parts.push(AssistantContentPart::Text(ChatTextPart::new(
                    text.text.clone(),
                )));
            }
            ContentPart::Reasoning(part) if part.format == FORMAT => {
                reasoning.get_or_insert_default().push_str(&part.text);
            }
            ContentPart::ToolCall(call) => {
                let arguments = export_arguments(&call.arguments);
                tool_calls.push(AssistantToolCall::Function(MessageToolCall {
                    id: ids.call(&call.id),
                    kind: FunctionType::Function,
                    function: FunctionCall {
                        name: ids.name(&call.name),
                        arguments,
                    },
                    extras: fields_for(&call.extras),
                }));
            }
            ContentPart::Provider(provider)
                if provider.format == FORMAT && is_provider_call(&provider.value) =>
            {
                tool_calls.push(AssistantToolCall::Other(provider.value.clone()));
            }
            ContentPart::Provider(provider) if provider.format == FORMAT => {
                parts.push(AssistantContentPart::Other(provider.value.clone()));
                has_provider_content = true;
            }
            _ => {}
        }
    }
    if text.is_empty() && tool_calls.is_empty() && !has_provider_content {
        return None;
    }
    let content = if has_provider_content {
        Some(MessageContent::Parts(parts))
    } else {
        (!text.is_empty()).then_some(MessageContent::Text(text))
    };
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
        content,
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
///   an array of text parts, `null` or absent), where a content part of
///   another `type` (Mistral's `thinking`) is a [`ContentPart::Provider`]
///   in its place, splitting the text around it; then the tool calls in
///   order. A call's `arguments` is kept as text (see [`FunctionCall`]),
///   except that exactly `{"_raw_arguments": "<text>"}` (one key, a string)
///   reads as the text it wraps (see the module docs);
///   a missing or `null` `id` reads as `""`; a call of another `type` is a
///   [`ContentPart::Provider`] in its place. A non-null `refusal` (and
///   `refusal` content parts) is kept in the message extras.
/// - `tool`: `tool_call_id` and `content` (a string or an array of text
///   parts) → a [`ToolResult`] with `is_error: false`: the format has no
///   such field.
///
/// Unknown fields of a message, a call, a user text part or an `image_url`
/// are kept as [`Extras`], except `null`-valued ones, `annotations` and a
/// call's `index`. A whitespace-only text part of a user or assistant
/// message is joined to the nearest text part before it, else after it,
/// else dropped (see the module docs); a blank system or tool text is
/// dropped, and so is a message left with nothing (see
/// [`export_messages`]), so that parsing what [`export_messages`] wrote
/// gives the same conversation. Finally
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
/// [`WireErrorKind::Invalid`] for a system or tool content part that is not
/// `text` (an assistant one of another `type` is kept, see above).
pub fn parse_messages(messages: &Value) -> Result<Vec<Message>, WireError> {
    check_depth(FORMAT, "messages", messages)?;
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
            let content = join_blank_text(match message.content {
                MessageContent::Text(text) => vec![ContentPart::text(text)],
                MessageContent::Parts(parts) => parts.into_iter().map(user_part).collect(),
            });
            (!content.is_empty()).then(|| {
                Message::User(UserMessage {
                    content,
                    extras: message_extras(message.extras),
                })
            })
        }
        "assistant" => {
            let message: AssistantChatMessage = decode(FORMAT, path, value)?;
            let assistant = assistant_message(message, true);
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
/// `restore_raw` undoes [`export_arguments`]' wrapper (only for history,
/// not for what the model returns).
fn assistant_message(message: AssistantChatMessage, restore_raw: bool) -> AssistantMessage {
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
    // The text of each run of text parts, with the parts of other types
    // (kept as provider parts) between them, in order.
    let mut text = String::new();
    match message.content {
        None => {}
        Some(MessageContent::Text(whole)) => text = whole,
        Some(MessageContent::Parts(parts)) => {
            for part in parts {
                match part {
                    AssistantContentPart::Text(part) => text.push_str(&part.text),
                    AssistantContentPart::Refusal(part) => {
                        refusal.get_or_insert_default().push_str(&part.refusal);
                    }
                    AssistantContentPart::Other(value) => {
                        if !text.is_empty() {
                            content.push(ContentPart::text(std::mem::take(&mut text)));
                        }
                        content.push(ContentPart::Provider(ProviderPart {
                            format: FORMAT,
                            value,
                        }));
                    }
                }
            }
        }
    }
    if !text.is_empty() {
        content.push(ContentPart::text(text));
    }
    for call in message.tool_calls {
        content.push(match call {
            AssistantToolCall::Function(call) => {
                let mut extras = without_nulls(call.extras);
                extras.remove("index");
                let arguments = if restore_raw {
                    restore_arguments(call.function.arguments)
                } else {
                    call.function.arguments
                };
                ContentPart::ToolCall(ToolCall {
                    id: call.id,
                    name: call.function.name,
                    arguments,
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
        content: join_blank_text(content),
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
    check_depth(FORMAT, "request", body)?;
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
    /// The model's text; `null` when it only called tools or refused. A
    /// string, or an array of `text`, `refusal` and other parts.
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
    check_depth(FORMAT, "response", body)?;
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
    let mut assistant = assistant_message(
        AssistantChatMessage {
            content: message.content,
            reasoning_content: message.reasoning_content,
            refusal: message.refusal,
            tool_calls: message.tool_calls,
            extras: message.extras,
        },
        false,
    );
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

/// The `arguments` text to send for a call's raw arguments: `{}` when
/// blank, the text itself when it is a JSON object (but not one of the
/// wrapper's own shape), otherwise the JSON text of
/// `{"_raw_arguments": "<the text>"}` (see the module docs).
fn export_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        // An object goes out as the model wrote it, unless parsing would
        // take it for the wrapper.
        Ok(Value::Object(object)) if raw_arguments(&object).is_none() => arguments.to_owned(),
        // `Display` of a JSON value is its compact serialisation.
        _ => Value::Object(arguments_object(arguments)).to_string(),
    }
}

/// Undoes [`export_arguments`]' wrapper: exactly a one-key
/// `{"_raw_arguments": "<text>"}` object gives `<text>`; anything else is
/// returned unchanged.
fn restore_arguments(arguments: String) -> String {
    if !arguments.contains(RAW_ARGUMENTS_KEY) {
        return arguments;
    }
    match serde_json::from_str::<Value>(&arguments) {
        Ok(Value::Object(object)) => {
            raw_arguments(&object).map_or(arguments.clone(), str::to_owned)
        }
        _ => arguments,
    }
}

/// `true` when a provider part of this format is a tool call (it goes back
/// into `tool_calls`), `false` when it is an assistant content part (it goes
/// back into the `content` array). The part itself is all there is to
/// tell, so the rule is the shape of a Chat Completions tool call: its
/// `type` is `function` or `custom`, or it has an `id` and an object member
/// named by its `type` (`{"id", "type": "custom", "custom": {...}}`).
fn is_provider_call(value: &Value) -> bool {
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return false;
    };
    matches!(kind, "function" | "custom")
        || (value.get("id").is_some() && value.get(kind).is_some_and(Value::is_object))
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::OPENAI_MAX_ID_LEN;

    fn exported(conversation: &[Message]) -> Value {
        serde_json::to_value(export_messages(conversation)).unwrap()
    }

    fn calls(message: &Message) -> Vec<&ToolCall> {
        message.as_assistant().unwrap().tool_calls().collect()
    }

    fn response_with(message: Value) -> Value {
        json!({ "object": "chat.completion", "choices": [{ "index": 0, "message": message }] })
    }

    // --- Recorded payloads (mirrors of /work/shared/data/wire-real/openai) ---

    #[test]
    fn deepseek_thinking_response_keeps_reasoning_text_calls_and_usage() {
        // oai_deepseek_thinking.response.json
        let body = json!({
            "choices": [{
                "finish_reason": "tool_calls", "index": 0, "logprobs": null,
                "message": {
                    "content": "Let me get your name and roll the die!",
                    "reasoning_content": "Now I have the dice roll tool.",
                    "role": "assistant",
                    "tool_calls": [
                        { "function": { "arguments": "{}", "name": "get_player_name" },
                          "id": "call_00_6edlnw3Z1MgeMfey687g8451", "index": 0, "type": "function" },
                        { "function": { "arguments": "{}", "name": "roll_dice" },
                          "id": "call_01_km02sac7sHxNDPATKLZy7705", "index": 1, "type": "function" }
                    ]
                }
            }],
            "object": "chat.completion",
            "usage": {
                "completion_tokens": 79, "completion_tokens_details": { "reasoning_tokens": 26 },
                "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": 875,
                "prompt_tokens": 875, "prompt_tokens_details": { "cached_tokens": 0 },
                "total_tokens": 954
            }
        });
        let response = parse_response(&body).unwrap();
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        let content = &response.message.content;
        assert!(matches!(&content[0], ContentPart::Reasoning(r)
            if r.text == "Now I have the dice roll tool." && r.format == FORMAT && r.signature.is_none()));
        assert_eq!(
            response.message.text(),
            "Let me get your name and roll the die!"
        );
        let calls: Vec<&ToolCall> = response.message.tool_calls().collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].name, "roll_dice");
        assert!(
            calls.iter().all(|call| call.extras.is_empty()),
            "index is dropped"
        );
        assert!(response.message.extras.is_empty());
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 875,
                output_tokens: 79,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                reasoning_tokens: 26
            }
        );
    }

    #[test]
    fn deepseek_thinking_request_round_trips_exactly() {
        // oai_deepseek_thinking.request.json, shortened.
        let body = json!({
            "messages": [
                { "content": "You're a dice game.", "role": "system" },
                { "content": "Deferred: DICE_ROLL", "role": "system" },
                { "content": "My guess is 4", "role": "user" },
                { "content": "Let me load the dice rolling capability!",
                  "reasoning_content": "I need to load it first.", "role": "assistant",
                  "tool_calls": [{ "function": { "arguments": "{\"id\": \"DICE_ROLL\"}", "name": "load_capability" },
                                   "id": "call_00_sXqYgMESDht75NCLLZtt9804", "type": "function" }] },
                { "content": "{}", "role": "tool", "tool_call_id": "call_00_sXqYgMESDht75NCLLZtt9804" },
                { "content": null, "reasoning_content": "", "role": "assistant",
                  "tool_calls": [{ "function": { "arguments": "{\"queries\":[\"DICE_ROLL\"]}", "name": "search_tools" },
                                   "id": "auto_load_eb5fc31bb581b4e7", "type": "function" }] },
                { "content": "{\"discovered_tools\":[]}", "role": "tool", "tool_call_id": "auto_load_eb5fc31bb581b4e7" }
            ],
            "model": "deepseek-reasoner",
            "tools": [
                { "function": { "description": "Load a capability.", "name": "load_capability",
                                "parameters": { "additionalProperties": false, "properties": { "id": { "type": "string" } },
                                                "required": ["id"], "type": "object" },
                                "strict": true },
                  "type": "function" },
                { "function": { "description": "Roll a die.", "name": "roll_dice",
                                "parameters": { "additionalProperties": false, "properties": {}, "type": "object" } },
                  "type": "function" }
            ]
        });
        let request = parse_request(&body).unwrap();
        assert_eq!(request.conversation.len(), 7);
        let empty_reasoning = request.conversation[5].as_assistant().unwrap();
        assert!(
            matches!(&empty_reasoning.content[0], ContentPart::Reasoning(r) if r.text.is_empty())
        );
        assert_eq!(request.tools[0].as_function().unwrap().strict, Some(true));
        assert_eq!(request.tools[1].as_function().unwrap().strict, None);
        assert_eq!(exported(&request.conversation), body["messages"]);
        assert_eq!(
            Value::Array(export_declarations(&request.tools).unwrap()),
            body["tools"]
        );
    }

    #[test]
    fn gpt4o_response_drops_annotations_and_null_refusal() {
        // oai_hitl_parallel.response.json / oai_tool_output.response.json
        let body = json!({
            "choices": [{ "finish_reason": "tool_calls", "index": 0, "logprobs": null, "message": {
                "annotations": [], "content": null, "refusal": null, "role": "assistant",
                "tool_calls": [
                    { "function": { "arguments": "{\"path\": \".env\"}", "name": "delete_file" },
                      "id": "call_jYdIdRZHxZTn5bWCq5jlMrJi", "type": "function" },
                    { "function": { "arguments": "{\"path\": \"test.txt\"}", "name": "create_file" },
                      "id": "call_TmlTVWQbzrXCZ4jNsCVNbNqu", "type": "function" }
                ]
            }}],
            "service_tier": "default",
            "usage": { "completion_tokens": 46, "prompt_tokens": 71, "total_tokens": 117,
                       "completion_tokens_details": { "reasoning_tokens": 0, "audio_tokens": 0 },
                       "prompt_tokens_details": { "audio_tokens": 0, "cached_tokens": 0 } }
        });
        let response = parse_response(&body).unwrap();
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert!(response.message.extras.is_empty());
        assert_eq!(response.message.content.len(), 2);
        assert_eq!(response.usage.input_tokens, 71);
    }

    #[test]
    fn usage_without_details_and_deepseek_cache_hits() {
        // oai_py_parallel.response.json has no prompt_tokens_details.
        let mut body = response_with(json!({ "role": "assistant", "content": "hi" }));
        body["usage"] = json!({ "prompt_tokens": 149, "completion_tokens": 60, "total_tokens": 209,
                                "completion_tokens_details": { "reasoning_tokens": 0 } });
        let usage = parse_response(&body).unwrap().usage;
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens
            ),
            (149, 60, 0)
        );
        body["usage"] =
            json!({ "prompt_tokens": 10, "completion_tokens": 1, "prompt_cache_hit_tokens": 7 });
        assert_eq!(parse_response(&body).unwrap().usage.cache_read_tokens, 7);
        body["usage"]["prompt_tokens_details"] = json!({ "cached_tokens": 3 });
        assert_eq!(parse_response(&body).unwrap().usage.cache_read_tokens, 3);
        body.as_object_mut().unwrap().remove("usage");
        assert_eq!(parse_response(&body).unwrap().usage, Usage::default());
    }

    #[test]
    fn tools_with_empty_description_parse() {
        // oai_tool_output.request.json
        let tools = json!([
            { "function": { "description": "", "name": "get_user_country",
                            "parameters": { "additionalProperties": false, "properties": {}, "type": "object" } },
              "type": "function" },
            { "function": { "name": "now" }, "type": "function" },
            { "function": { "name": "later", "parameters": null, "x-extra": 1 } }
        ]);
        let parsed = parse_tools(&tools).unwrap();
        assert_eq!(parsed[0].as_function().unwrap().description, "");
        assert_eq!(
            parsed[1],
            ToolDeclaration::Function(ToolInfo::without_parameters("now", ""))
        );
        let later = parsed[2].as_function().unwrap();
        assert_eq!(later.parameters, empty_schema());
        assert_eq!(later.extras.fields_for(FORMAT).unwrap()["x-extra"], 1);
        let back = export_declarations(&parsed).unwrap();
        assert_eq!(back[0], tools[0]);
        assert_eq!(back[2]["function"]["x-extra"], 1);
    }

    // --- Tools ---

    #[test]
    fn export_tools_writes_strict_only_when_set_and_only_own_extras() {
        let mut info = ToolInfo::without_parameters("now", "The time.");
        let json = serde_json::to_value(export_tools(std::slice::from_ref(&info))).unwrap();
        assert!(json[0]["function"].get("strict").is_none());
        info.strict = Some(false);
        info.extras = Extras::new(
            WireFormat::AnthropicMessages,
            json!({ "cache_control": {} }).as_object().cloned().unwrap(),
        );
        let json = serde_json::to_value(export_tools(&[info])).unwrap();
        assert_eq!(json[0]["function"]["strict"], false);
        assert!(json[0]["function"].get("cache_control").is_none());
    }

    #[test]
    fn custom_tools_are_provider_tools_and_foreign_ones_are_refused() {
        let tools = json!([{ "type": "custom", "custom": { "name": "grammar", "format": { "type": "text" } } }]);
        let parsed = parse_tools(&tools).unwrap();
        let ToolDeclaration::Provider(tool) = &parsed[0] else {
            panic!("{parsed:?}")
        };
        assert_eq!(
            (tool.name.as_str(), tool.tool_type.as_str()),
            ("grammar", "custom")
        );
        assert_eq!(
            export_declarations(&parsed).unwrap(),
            vec![tools[0].clone()]
        );

        let memory = ToolDeclaration::Provider(ProviderTool {
            format: WireFormat::AnthropicMessages,
            name: "memory".into(),
            tool_type: "memory_20250818".into(),
            value: json!({ "type": "memory_20250818", "name": "memory" }),
        });
        let error = export_declarations(&[parsed[0].clone(), memory]).unwrap_err();
        assert_eq!(error.path, "tools[1]");
        assert!(
            matches!(&error.kind, WireErrorKind::ProviderTool { name, .. } if name == "memory")
        );
    }

    // --- Parsing messages ---

    #[test]
    fn arguments_as_object_null_or_missing() {
        let messages = json!([{ "role": "assistant", "content": null, "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "f", "arguments": { "x": [1, 2] } } },
            { "id": "b", "type": "function", "function": { "name": "f", "arguments": null } },
            { "id": "c", "function": { "name": "f" } }
        ]}]);
        let conversation = parse_messages(&messages).unwrap();
        let arguments: Vec<&str> = calls(&conversation[0])
            .iter()
            .map(|call| call.arguments.as_str())
            .collect();
        assert_eq!(arguments, [r#"{"x":[1,2]}"#, "", ""]);
        // Blank arguments go out as `{}`, as they ran.
        let out = exported(&conversation);
        assert_eq!(out[0]["tool_calls"][1]["function"]["arguments"], "{}");
        assert_eq!(out[0]["tool_calls"][2]["function"]["arguments"], "{}");
        assert_eq!(out[0]["tool_calls"][2]["type"], "function");
    }

    #[test]
    fn non_object_arguments_are_wrapped_and_restored_from_history_only() {
        for raw in [r#"{"city": "Par"#, "null", "[1]", "42"] {
            let conversation = [
                Message::tool_calls(None, vec![ToolCall::new("call_1", "f", raw)]),
                Message::Tool(ToolResult::ok("call_1", "bad arguments")),
            ];
            let out = exported(&conversation);
            let sent = out[0]["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(sent).unwrap(),
                json!({ RAW_ARGUMENTS_KEY: raw })
            );
            let parsed = parse_messages(&out).unwrap();
            assert_eq!(parsed, conversation);
            assert_eq!(exported(&parsed), out);
        }
        // Objects go out as written, blank arguments as `{}`.
        let out = exported(&[Message::tool_calls(
            None,
            vec![
                ToolCall::new("a", "f", r#"{ "x": 1 }"#),
                ToolCall::new("b", "f", " "),
            ],
        )]);
        assert_eq!(
            out[0]["tool_calls"][0]["function"]["arguments"],
            r#"{ "x": 1 }"#
        );
        assert_eq!(out[0]["tool_calls"][1]["function"]["arguments"], "{}");
        // What the model returns is kept as sent.
        let wrapped = r#"{"_raw_arguments":"x"}"#;
        let body = response_with(json!({ "role": "assistant", "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "f", "arguments": wrapped } }
        ]}));
        let response = parse_response(&body).unwrap();
        assert_eq!(
            response.message.tool_calls().next().unwrap().arguments,
            wrapped
        );
        // Only the exact one-key wrapper is undone.
        let history = json!([{ "role": "assistant", "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "f",
              "arguments": r#"{"_raw_arguments":"x","y":1}"# } },
            { "id": "b", "type": "function", "function": { "name": "f",
              "arguments": r#"{"_raw_arguments":7}"# } }
        ]}]);
        let parsed = parse_messages(&history).unwrap();
        let arguments: Vec<&str> = calls(&parsed[0])
            .iter()
            .map(|call| call.arguments.as_str())
            .collect();
        assert_eq!(
            arguments,
            [r#"{"_raw_arguments":"x","y":1}"#, r#"{"_raw_arguments":7}"#]
        );
    }

    #[test]
    fn empty_ids_twice_are_minted_and_paired() {
        let messages = json!([
            { "role": "user", "content": "go" },
            { "role": "assistant", "tool_calls": [
                { "id": "", "type": "function", "function": { "name": "a", "arguments": "{}" } },
                { "id": "", "type": "function", "function": { "name": "b", "arguments": "{}" } }
            ]},
            { "role": "tool", "tool_call_id": "", "content": "ra" },
            { "role": "tool", "tool_call_id": "", "content": "rb" }
        ]);
        let conversation = parse_messages(&messages).unwrap();
        let ids: Vec<String> = calls(&conversation[1])
            .iter()
            .map(|c| c.id.clone())
            .collect();
        assert!(ids.iter().all(|id| !id.is_empty()));
        assert_ne!(ids[0], ids[1]);
        assert_eq!(
            conversation[2].as_tool_result().unwrap().tool_call_id,
            ids[0]
        );
        assert_eq!(
            conversation[3].as_tool_result().unwrap().tool_call_id,
            ids[1]
        );
        assert_eq!(conversation[3].text(), "rb");
    }

    #[test]
    fn refusal_is_text_and_finish_reason_in_a_response_and_kept_in_extras() {
        let body = response_with(json!({
            "role": "assistant", "content": null, "refusal": "I can't help with that."
        }));
        let response = parse_response(&body).unwrap();
        assert_eq!(response.finish_reason, FinishReason::Refusal);
        assert_eq!(response.message.text(), "I can't help with that.");
        let extras = response.message.extras.fields_for(FORMAT).unwrap();
        assert_eq!(extras["refusal"], "I can't help with that.");
        let out = exported(&[Message::Assistant(response.message)]);
        assert_eq!(out[0]["refusal"], "I can't help with that.");
        assert_eq!(out[0]["content"], "I can't help with that.");
        // In a request, the refusal stays in extras only.
        let parsed =
            parse_messages(&json!([{ "role": "assistant", "content": "No.", "refusal": "No." }]))
                .unwrap();
        assert_eq!(parsed[0].text(), "No.");
        assert_eq!(
            parsed[0].as_assistant().unwrap().extras.fields()["refusal"],
            "No."
        );
    }

    #[test]
    fn finish_reasons() {
        let cases = [
            (json!("stop"), FinishReason::Stop),
            (json!("length"), FinishReason::Length),
            (json!("function_call"), FinishReason::ToolCalls),
            (json!("content_filter"), FinishReason::ContentFilter),
            (json!("eos"), FinishReason::Other("eos".into())),
            (Value::Null, FinishReason::Stop),
        ];
        for (raw, expected) in cases {
            let mut body = response_with(json!({ "role": "assistant", "content": "x" }));
            body["choices"][0]["finish_reason"] = raw;
            assert_eq!(parse_response(&body).unwrap().finish_reason, expected);
        }
        let body = response_with(json!({ "role": "assistant", "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "f", "arguments": "{}" } }
        ]}));
        assert_eq!(
            parse_response(&body).unwrap().finish_reason,
            FinishReason::ToolCalls
        );
    }

    #[test]
    fn response_errors_have_kinds_and_paths() {
        let empty = json!({ "choices": [] });
        assert_eq!(
            parse_response(&empty).unwrap_err().kind,
            WireErrorKind::NoChoices
        );
        let user = response_with(json!({ "role": "user", "content": "x" }));
        let error = parse_response(&user).unwrap_err();
        assert_eq!(error.path, "response.choices[0].message");
        assert!(matches!(&error.kind, WireErrorKind::UnknownRole { role } if role == "user"));
        let bad = response_with(json!({ "role": "assistant", "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "f", "arguments": "{}" } },
            { "id": "b", "type": "function" }
        ]}));
        let error = parse_response(&bad).unwrap_err();
        assert_eq!(error.path, "response.choices[0].message.tool_calls[1]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::MissingField {
                field: "function".into()
            }
        );
        let error_body = json!({ "error": { "message": "bad key" } });
        assert!(matches!(parse_response(&error_body).unwrap_err().kind,
            WireErrorKind::MissingField { field } if field == "choices"));
    }

    #[test]
    fn message_errors_have_kinds_and_paths() {
        let error =
            parse_messages(&json!([{ "role": "user", "content": "x" }, { "role": "function" }]))
                .unwrap_err();
        assert_eq!(error.path, "messages[1]");
        assert!(matches!(&error.kind, WireErrorKind::UnknownRole { role } if role == "function"));
        let error = parse_messages(&json!([{ "role": "user", "content": 3 }])).unwrap_err();
        assert_eq!(error.path, "messages[0].content");
        assert!(matches!(&error.kind, WireErrorKind::WrongType { .. }));
        let error = parse_request(&json!({ "messages": [{ "role": "tool", "content": "x" }] }))
            .unwrap_err();
        assert_eq!(error.path, "request.messages[0]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::MissingField {
                field: "tool_call_id".into()
            }
        );
    }

    #[test]
    fn gemini_extra_content_is_kept_on_the_call_and_exported_back() {
        let signature = json!({ "google": { "thought_signature": "c2lnbmF0dXJl" } });
        let body = response_with(json!({ "role": "assistant", "tool_calls": [{
            "id": "", "type": "function", "extra_content": signature,
            "function": { "name": "f", "arguments": "{}" }
        }]}));
        let response = parse_response(&body).unwrap();
        let call = response.message.tool_calls().next().unwrap().clone();
        assert_eq!(call.id, "", "parse_response leaves minting to the runner");
        assert_eq!(
            call.extras.fields_for(FORMAT).unwrap()["extra_content"],
            signature
        );
        let mut message = response.message;
        message
            .tool_calls_mut()
            .for_each(|call| call.id = "call_1".into());
        let out = exported(&[
            Message::Assistant(message),
            Message::Tool(ToolResult::ok("call_1", "r")),
        ]);
        assert_eq!(out[0]["tool_calls"][0]["extra_content"], signature);
        // Another format never sees them: no Gemini fields reach Anthropic.
        assert_eq!(call.extras.fields_for(WireFormat::AnthropicMessages), None);
    }

    #[test]
    fn custom_calls_are_provider_parts_exported_in_place() {
        let messages = json!([{ "role": "assistant", "content": null, "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "f", "arguments": "{}" } },
            { "id": "b", "type": "custom", "custom": { "name": "grammar", "input": "x" } }
        ]}, { "role": "tool", "tool_call_id": "a", "content": "r" },
            { "role": "tool", "tool_call_id": "b", "content": "r" }]);
        let conversation = parse_messages(&messages).unwrap();
        let assistant = conversation[0].as_assistant().unwrap();
        assert!(
            matches!(&assistant.content[1], ContentPart::Provider(p) if p.value == messages[0]["tool_calls"][1])
        );
        assert_eq!(exported(&conversation), messages);
    }

    #[test]
    fn unknown_assistant_content_parts_are_kept_in_place_and_exported_back() {
        // Mistral's magistral models answer with a `thinking` part.
        let thinking =
            json!({ "type": "thinking", "thinking": [{ "type": "text", "text": "Sum it." }] });
        let body = response_with(json!({ "role": "assistant", "content": [
            thinking, { "type": "text", "text": "It is 4." }
        ]}));
        let response = parse_response(&body).unwrap();
        assert_eq!(
            response.message.content,
            [
                ContentPart::Provider(ProviderPart {
                    format: FORMAT,
                    value: thinking.clone()
                }),
                ContentPart::text("It is 4."),
            ]
        );
        assert_eq!(response.message.text(), "It is 4.");
        let out = exported(&[Message::Assistant(response.message.clone())]);
        assert_eq!(
            out,
            json!([{ "role": "assistant", "content": [
                thinking, { "type": "text", "text": "It is 4." }
            ]}])
        );
        assert_eq!(
            parse_messages(&out).unwrap(),
            [Message::Assistant(response.message)]
        );
        // Without such a part, `content` stays a string; another format's
        // part is left out.
        let foreign = Message::Assistant(AssistantMessage::new(vec![
            ContentPart::Provider(ProviderPart {
                format: WireFormat::AnthropicMessages,
                value: thinking,
            }),
            ContentPart::text("x"),
        ]));
        assert_eq!(
            exported(&[foreign]),
            json!([{ "role": "assistant", "content": "x" }])
        );
    }

    #[test]
    fn provider_content_parts_and_provider_calls_go_back_to_their_own_place() {
        let messages = json!([
            { "role": "assistant",
              "content": [
                  { "type": "text", "text": "A" },
                  { "type": "thinking", "thinking": [] },
                  { "type": "text", "text": "B" },
                  { "type": "text", "text": "C" },
                  { "type": "refusal", "refusal": "No." }
              ],
              "tool_calls": [
                  { "id": "ct_1", "type": "custom", "custom": { "name": "sql", "input": "select 1" } },
                  { "id": "a", "type": "function", "function": { "name": "f", "arguments": "{}" } },
                  { "id": "mcp_1", "type": "mcp", "mcp": { "server": "s" } }
              ] },
            { "role": "tool", "tool_call_id": "ct_1", "content": "1" },
            { "role": "tool", "tool_call_id": "a", "content": "r" },
            { "role": "tool", "tool_call_id": "mcp_1", "content": "m" }
        ]);
        let conversation = parse_messages(&messages).unwrap();
        let assistant = conversation[0].as_assistant().unwrap();
        let provider = |value: &Value| {
            ContentPart::Provider(ProviderPart {
                format: FORMAT,
                value: value.clone(),
            })
        };
        assert_eq!(
            assistant.content[..4],
            [
                ContentPart::text("A"),
                provider(&messages[0]["content"][1]),
                ContentPart::text("BC"),
                provider(&messages[0]["tool_calls"][0]),
            ]
        );
        assert_eq!(
            assistant.extras.fields_for(FORMAT).unwrap()["refusal"],
            "No."
        );
        let out = exported(&conversation);
        let mut expected = messages.clone();
        expected[0]["content"] = json!([
            { "type": "text", "text": "A" },
            { "type": "thinking", "thinking": [] },
            { "type": "text", "text": "BC" }
        ]);
        expected[0]["refusal"] = json!("No.");
        assert_eq!(out, expected);
        assert_eq!(parse_messages(&out).unwrap(), conversation);

        // The rule, on hand-built parts.
        assert!(is_provider_call(&json!({ "type": "custom" })));
        assert!(is_provider_call(&json!({ "type": "function" })));
        assert!(is_provider_call(
            &json!({ "id": "x", "type": "mcp", "mcp": {} })
        ));
        assert!(!is_provider_call(
            &json!({ "type": "thinking", "thinking": [] })
        ));
        assert!(!is_provider_call(
            &json!({ "id": "rs_1", "type": "reasoning", "summary": [] })
        ));
        assert!(!is_provider_call(&json!({ "type": "mcp", "mcp": {} })));
    }

    #[test]
    fn user_parts_images_and_provider_parts() {
        let messages = json!([{ "role": "user", "name": "ann", "content": [
            { "type": "text", "text": "What is this?" },
            { "type": "text", "text": "  " },
            { "type": "image_url", "image_url": { "url": "data:image/png;base64,iVBORw0K", "detail": "low" } },
            { "type": "image_url", "image_url": { "url": "https://example.com/a.jpg" } },
            { "type": "input_audio", "input_audio": { "data": "UklGR", "format": "wav" } }
        ]}]);
        let conversation = parse_messages(&messages).unwrap();
        let Message::User(user) = &conversation[0] else {
            panic!()
        };
        assert_eq!(user.content.len(), 4, "the blank text part is joined");
        assert_eq!(user.content[0], ContentPart::text("What is this?  "));
        let ContentPart::Image(image) = &user.content[1] else {
            panic!()
        };
        assert_eq!(
            image.source,
            ImageSource::Base64 {
                media_type: "image/png".into(),
                data: "iVBORw0K".into()
            }
        );
        assert_eq!(image.extras.fields_for(FORMAT).unwrap()["detail"], "low");
        assert!(
            matches!(&user.content[2], ContentPart::Image(i) if i.source == ImageSource::Url { url: "https://example.com/a.jpg".into() })
        );
        assert!(
            matches!(&user.content[3], ContentPart::Provider(p) if p.value == messages[0]["content"][4])
        );
        assert_eq!(user.extras.fields_for(FORMAT).unwrap()["name"], "ann");
        let out = exported(&conversation);
        let mut expected = messages.clone();
        expected[0]["content"].as_array_mut().unwrap().remove(1);
        expected[0]["content"][0]["text"] = json!("What is this?  ");
        assert_eq!(out, expected);
    }

    #[test]
    fn whitespace_text_parts_are_joined_to_their_neighbours() {
        let text = |text: &str| json!({ "type": "text", "text": text });
        let image =
            json!({ "type": "image_url", "image_url": { "url": "https://example.com/a.png" } });
        let messages = json!([
            { "role": "user", "content": [text("A"), text("\n\n"), text("B")] },
            { "role": "user", "content": [text(" "), image, text("\n"), text("B")] },
            { "role": "user", "content": [image, text("\n"), image] },
            { "role": "assistant", "content": [text("A"), text("\n\n"), text("B")] },
            { "role": "assistant", "content": [
                text("A"), { "type": "thinking", "thinking": [] }, text("\n\n"),
                { "type": "thinking", "thinking": [] }, text("B")
            ]}
        ]);
        let conversation = parse_messages(&messages).unwrap();
        let Message::User(first) = &conversation[0] else {
            panic!()
        };
        assert_eq!(
            first.content,
            [ContentPart::text("A\n\n"), ContentPart::text("B")]
        );
        assert_eq!(conversation[0].text(), "A\n\nB");
        let Message::User(second) = &conversation[1] else {
            panic!()
        };
        // No text part before: prepended to the next one.
        assert_eq!(second.content[1], ContentPart::text(" \nB"));
        assert_eq!(second.content.len(), 2);
        let Message::User(third) = &conversation[2] else {
            panic!()
        };
        assert_eq!(third.content.len(), 2, "no text to join: dropped");
        // The assistant's text parts are joined whole, whitespace included.
        assert_eq!(conversation[3], Message::assistant("A\n\nB"));
        let fifth = conversation[4].as_assistant().unwrap();
        assert_eq!(fifth.content[0], ContentPart::text("A\n\n"));
        assert_eq!(fifth.text(), "A\n\nB");
        // A response reads the same.
        let body = response_with(
            json!({ "role": "assistant", "content": [text("A"), text("\n\n"), text("B")] }),
        );
        assert_eq!(parse_response(&body).unwrap().message.text(), "A\n\nB");
        // No blank part is exported, and parse → export → parse is the identity.
        let out = exported(&conversation);
        assert_eq!(out[0]["content"], json!([text("A\n\n"), text("B")]));
        assert_eq!(parse_messages(&out).unwrap(), conversation);
        assert_eq!(exported(&parse_messages(&out).unwrap()), out);
    }

    #[test]
    fn content_as_text_part_arrays() {
        let messages = json!([
            { "role": "developer", "content": [{ "type": "text", "text": "Be " }, { "type": "text", "text": "brief." }] },
            { "role": "user", "content": [{ "type": "text", "text": "hi" }] },
            { "role": "assistant", "content": [{ "type": "text", "text": "a" }, { "type": "text", "text": "b" }] },
            { "role": "tool", "tool_call_id": "x", "content": [{ "type": "text", "text": "ok" }] }
        ]);
        let conversation = parse_messages(&messages).unwrap();
        assert!(matches!(&conversation[0], Message::System(s)
            if s.text == "Be brief." && s.system_role == SystemRole::Developer));
        assert_eq!(conversation[1], Message::user("hi"));
        assert_eq!(conversation[2], Message::assistant("ab"));
        assert_eq!(conversation[3], Message::Tool(ToolResult::ok("x", "ok")));
        let out = exported(&conversation);
        assert_eq!(
            out[0],
            json!({ "role": "developer", "content": "Be brief." })
        );
        assert_eq!(out[1]["content"], "hi");
    }

    // --- Exporting ---

    #[test]
    fn a_53_character_id_is_cut_to_40_for_the_call_and_its_result() {
        let id = format!("fc_{}", "0123456789".repeat(5));
        assert_eq!(id.chars().count(), 53);
        let out = exported(&[
            Message::tool_calls(None, vec![ToolCall::new(id.as_str(), "f", "{}")]),
            Message::Tool(ToolResult::ok(id.as_str(), "r")),
        ]);
        let call_id = out[0]["tool_calls"][0]["id"].as_str().unwrap();
        assert!(call_id.chars().count() <= OPENAI_MAX_ID_LEN);
        assert_eq!(out[1]["tool_call_id"], call_id);
    }

    #[test]
    fn an_invalid_tool_name_is_exported_valid_and_the_text_is_kept() {
        let out = exported(&[
            Message::tool_calls(
                Some("Calling multi_tool_use.parallel".into()),
                vec![
                    ToolCall::new("c1", "multi_tool_use.parallel", "{}"),
                    ToolCall::new("c2", "talk to human", "{}"),
                ],
            ),
            Message::Tool(ToolResult::error("c1", "unknown tool")),
            Message::Tool(ToolResult::error("c2", "unknown tool")),
        ]);
        for index in 0..2 {
            let name = out[0]["tool_calls"][index]["function"]["name"]
                .as_str()
                .unwrap();
            assert!(crate::wire::name_is_valid(FORMAT, name), "{name}");
        }
        assert_eq!(out[0]["content"], "Calling multi_tool_use.parallel");
        assert!(out[1].get("is_error").is_none(), "is_error has no field");
    }

    #[test]
    fn whitespace_text_and_empty_messages_are_not_exported() {
        let out = exported(&[
            Message::system("  "),
            Message::user(" \n"),
            Message::Assistant(AssistantMessage::new(vec![
                ContentPart::text("\t"),
                ContentPart::Reasoning(ReasoningPart {
                    text: "thinking".into(),
                    signature: None,
                    redacted: None,
                    format: FORMAT,
                    extras: Extras::default(),
                }),
            ])),
            Message::Assistant(AssistantMessage::default()),
            Message::Assistant(AssistantMessage::new(vec![
                ContentPart::text(" "),
                ContentPart::text("Done."),
            ])),
            Message::tool_calls(Some("   ".into()), vec![ToolCall::new("c", "f", " ")]),
            Message::Tool(ToolResult::ok("c", "")),
        ]);
        assert_eq!(
            out,
            json!([
                { "role": "assistant", "content": "Done." },
                { "role": "assistant", "content": null, "tool_calls": [
                    { "id": "c", "type": "function", "function": { "name": "f", "arguments": "{}" } }
                ]},
                { "role": "tool", "tool_call_id": "c", "content": "" }
            ])
        );
    }

    #[test]
    fn reasoning_is_exported_to_its_own_format_only() {
        let reasoning = |format| {
            ContentPart::Reasoning(ReasoningPart {
                text: "hmm".into(),
                signature: Some("sig".into()),
                redacted: None,
                format,
                extras: Extras::default(),
            })
        };
        let own = Message::Assistant(AssistantMessage::new(vec![
            reasoning(FORMAT),
            ContentPart::text("A"),
        ]));
        let foreign = Message::Assistant(AssistantMessage::new(vec![
            reasoning(WireFormat::AnthropicMessages),
            ContentPart::Provider(ProviderPart {
                format: WireFormat::AnthropicMessages,
                value: json!({ "type": "server_tool_use" }),
            }),
            ContentPart::text("B"),
        ]));
        let out = exported(&[own, foreign]);
        assert_eq!(out[0]["reasoning_content"], "hmm");
        assert_eq!(out[1], json!({ "role": "assistant", "content": "B" }));
    }

    #[test]
    fn tool_result_images_move_to_one_user_message_after_the_run() {
        let image = ContentPart::Image(ImagePart::base64("image/png", "AAAA"));
        let out = exported(&[
            Message::tool_calls(
                None,
                vec![
                    ToolCall::new("a", "shot", "{}"),
                    ToolCall::new("b", "shot", "{}"),
                ],
            ),
            Message::Tool(ToolResult::with_content(
                "a",
                vec![ContentPart::text("shot 1"), image.clone()],
                false,
            )),
            Message::Tool(ToolResult::with_content("b", vec![image], true)),
            Message::user("thanks"),
        ]);
        assert_eq!(
            out[1],
            json!({ "role": "tool", "tool_call_id": "a", "content": "shot 1" })
        );
        assert_eq!(
            out[2],
            json!({ "role": "tool", "tool_call_id": "b", "content": "" })
        );
        let png =
            json!({ "type": "image_url", "image_url": { "url": "data:image/png;base64,AAAA" } });
        assert_eq!(
            out[3],
            json!({ "role": "user", "content": [
                { "type": "text", "text": "Images returned by tool call a:" }, png,
                { "type": "text", "text": "Images returned by tool call b:" }, png
            ]})
        );
        assert_eq!(out[4], json!({ "role": "user", "content": "thanks" }));
    }

    #[test]
    fn parse_export_parse_is_the_identity_on_a_rich_conversation() {
        let messages = json!([
            { "role": "system", "content": "You are terse." },
            { "role": "developer", "content": "Use tools.", "name": "ops" },
            { "role": "user", "content": [
                { "type": "text", "text": "Look:", "cache_control": { "type": "ephemeral" } },
                { "type": "image_url", "image_url": { "url": "https://example.com/x.png", "detail": "high" } },
                { "type": "file", "file": { "file_id": "file-1" } }
            ]},
            { "role": "assistant", "content": "Checking.", "reasoning_content": "Need the weather.",
              "annotations": [], "audio": null, "tool_calls": [
                { "id": "", "type": "function", "index": 0,
                  "extra_content": { "google": { "thought_signature": "c2ln" } },
                  "function": { "name": "get_weather", "arguments": { "city": "Oslo" } } },
                { "id": "functions.write_todos:0", "function": { "name": "write_todos", "arguments": "{}" } },
                { "id": "ct_1", "type": "custom", "custom": { "name": "sql", "input": "select 1" } }
            ]},
            { "role": "tool", "tool_call_id": "", "content": "Sunny" },
            { "role": "tool", "tool_call_id": "functions.write_todos:0", "content": [{ "type": "text", "text": "ok" }] },
            { "role": "tool", "tool_call_id": "ct_1", "content": "1" },
            { "role": "assistant", "content": null, "refusal": "No more." },
            { "role": "assistant", "content": "Sunny in Oslo.", "name": "bot" },
            { "role": "user", "content": "  " }
        ]);
        let first = parse_messages(&messages).unwrap();
        assert_eq!(
            first.len(),
            8,
            "the blank user message and the text-less refusal are dropped"
        );
        let out = serde_json::to_value(export_messages(&first)).unwrap();
        let second = parse_messages(&out).unwrap();
        assert_eq!(second, first);
        assert_eq!(serde_json::to_value(export_messages(&second)).unwrap(), out);
        // A real id: the minted one is kept and shared with its result.
        assert_eq!(out[3]["tool_calls"][0]["id"], out[4]["tool_call_id"]);
        assert!(!out[3]["tool_calls"][0]["id"].as_str().unwrap().is_empty());
        assert_eq!(
            out[3]["tool_calls"][0]["function"]["arguments"],
            r#"{"city":"Oslo"}"#
        );
        assert_eq!(out[3]["tool_calls"][1]["id"], "functions.write_todos:0");
        assert!(out[3].get("annotations").is_none() && out[3].get("audio").is_none());
        assert!(out[3]["tool_calls"][0].get("index").is_none());
    }
}
