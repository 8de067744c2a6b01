//! The serde types that mirror the Chat Completions API reference: the
//! request's `tools` and `messages`, and the `chat.completion` response.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::wire::string_or_array::StringOrArray;

/// The `type` of a function tool and of a function tool call: always
/// `"function"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FunctionType {
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
pub(crate) struct Tool {
    /// Always [`FunctionType::Function`].
    #[serde(rename = "type", default)]
    pub(crate) kind: FunctionType,
    /// The function the model may call.
    pub(crate) function: FunctionDefinition,
}

/// The `function` of a [`Tool`]:
/// `{"name", "description", "parameters", "strict"?, ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a function object")]
pub(crate) struct FunctionDefinition {
    /// The model-facing tool name.
    pub(crate) name: String,
    /// What the tool does, for the model; a missing or `null` description
    /// reads as `""`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) description: String,
    /// JSON Schema of the arguments object; missing or `null` reads as the
    /// empty object schema `{"type": "object", "properties": {}}`.
    #[serde(default = "empty_schema", deserialize_with = "schema_or_empty")]
    pub(crate) parameters: Value,
    /// Strict mode (structured outputs for the arguments); left out when
    /// `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) strict: Option<bool>,
    /// Any other field of `function`, kept verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// The `type` of an object, read before its shape is chosen.
#[derive(Deserialize)]
#[serde(expecting = "an object")]
pub(super) struct TypeTag {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<String>,
}

/// The `role` of a message, read before its shape is chosen.
#[derive(Deserialize)]
#[serde(expecting = "a message object")]
pub(super) struct RoleTag {
    pub(super) role: String,
}

/// A `system` or `developer` message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a system message object")]
pub(crate) struct SystemChatMessage {
    /// The instructions: a string or an array of text parts.
    pub(crate) content: StringOrArray<ChatTextPart>,
    /// Any other field (`name`), kept verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// A `user` message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a user message object")]
pub(crate) struct UserChatMessage {
    /// A string, or an array of text, image and other parts.
    pub(crate) content: StringOrArray<UserContentPart>,
    /// Any other field (`name`), kept verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// An `assistant` message, as a request sends it back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "an assistant message object")]
pub(crate) struct AssistantChatMessage {
    /// The model's text; `null` (written as such) when it only called
    /// tools. Read as a string or an array of `text`, `refusal` and other
    /// parts (kept verbatim); written as an array when the message holds
    /// such another part.
    #[serde(default)]
    pub(crate) content: Option<StringOrArray<AssistantContentPart>>,
    /// The model's reasoning, as DeepSeek and vLLM send it and DeepSeek
    /// requires it back across tool calls; left out when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<String>,
    /// The model's refusal message; left out when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refusal: Option<String>,
    /// The tool calls, in order; left out when empty, as the API expects.
    /// `null` reads as empty.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub(crate) tool_calls: Vec<AssistantToolCall>,
    /// Any other field (`name`, Gemini's `extra_content`), kept verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// A `tool` message: the result of one tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a tool message object")]
pub(crate) struct ToolChatMessage {
    /// The id of the tool call this answers.
    pub(crate) tool_call_id: String,
    /// The result: a string or an array of text parts.
    pub(crate) content: StringOrArray<ChatTextPart>,
    /// Any other field, kept verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// The `type` of a [`ChatTextPart`]: always `"text"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TextType {
    /// `"text"`.
    #[default]
    Text,
}

/// A text part: `{"type": "text", "text"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a text part object")]
pub(crate) struct ChatTextPart {
    /// Always [`TextType::Text`].
    #[serde(rename = "type")]
    pub(crate) kind: TextType,
    /// The text.
    pub(crate) text: String,
    /// Any other field (OpenRouter's `cache_control`), kept verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

impl ChatTextPart {
    /// A `text` content part read whole: its `text`, required, and its
    /// other fields but the `null` ones.
    fn read<E: de::Error>(text: Option<String>, rest: Map<String, Value>) -> Result<Self, E> {
        Ok(Self {
            kind: TextType::Text,
            text: text.ok_or_else(|| E::missing_field("text"))?,
            extras: without_nulls(rest),
        })
    }
}

/// The `type` of an [`ImageUrlPart`]: always `"image_url"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ImageUrlType {
    /// `"image_url"`.
    #[default]
    ImageUrl,
}

/// An image part of a user message: `{"type": "image_url", "image_url": {"url", "detail"?}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "an image part object")]
pub(crate) struct ImageUrlPart {
    /// Always [`ImageUrlType::ImageUrl`].
    #[serde(rename = "type")]
    pub(crate) kind: ImageUrlType,
    /// Where the image is.
    pub(crate) image_url: ImageUrl,
}

/// The `image_url` of an [`ImageUrlPart`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "an image_url object")]
pub(crate) struct ImageUrl {
    /// An `http(s)` URL, or a `data:<media type>;base64,<data>` URL.
    pub(crate) url: String,
    /// Any other field (`detail`: `auto`, `low`, `high`), kept verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// One part of a user message's content array.
///
/// Reads `text` and `image_url` parts into their types and any other part
/// (`input_audio`, `file`) verbatim; serialises each as it is.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum UserContentPart {
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
            "text" => ChatTextPart::read(part.text, part.rest).map(Self::Text),
            // Fields beside `image_url` have no place in an image part;
            // they are dropped.
            "image_url" => Ok(Self::ImageUrl(ImageUrlPart {
                kind: ImageUrlType::ImageUrl,
                image_url: part
                    .image_url
                    .ok_or_else(|| de::Error::missing_field("image_url"))?,
            })),
            _ => Ok(Self::Other(verbatim(
                part.kind,
                [
                    ("text", part.text.map(Value::String)),
                    ("image_url", part.image_url.map(image_url_value)),
                ],
                part.rest,
            ))),
        }
    }
}

/// The `type` of a [`RefusalPart`]: always `"refusal"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RefusalType {
    /// `"refusal"`.
    #[default]
    Refusal,
}

/// A refusal part of an assistant message's content array:
/// `{"type": "refusal", "refusal"}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RefusalPart {
    /// Always [`RefusalType::Refusal`].
    #[serde(rename = "type")]
    pub(crate) kind: RefusalType,
    /// The refusal message.
    pub(crate) refusal: String,
}

/// One part of an assistant message's content array: text, a refusal, or
/// a part of another `type` (Mistral's `{"type": "thinking", "thinking":
/// [...]}`) kept verbatim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum AssistantContentPart {
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
            "text" => ChatTextPart::read(part.text, part.rest).map(Self::Text),
            "refusal" => Ok(Self::Refusal(RefusalPart {
                kind: RefusalType::Refusal,
                refusal: part
                    .refusal
                    .ok_or_else(|| de::Error::missing_field("refusal"))?,
            })),
            _ => Ok(Self::Other(verbatim(
                part.kind,
                [
                    ("text", part.text.map(Value::String)),
                    ("refusal", part.refusal.map(Value::String)),
                ],
                part.rest,
            ))),
        }
    }
}

/// A content part of a `type` this crate does not model, put back
/// together as it came: its `type`, the fields read on the way (when
/// present) and its other fields.
fn verbatim<const N: usize>(
    kind: String,
    read: [(&str, Option<Value>); N],
    mut rest: Map<String, Value>,
) -> Value {
    rest.insert("type".to_owned(), Value::String(kind));
    for (name, value) in read {
        if let Some(value) = value {
            rest.insert(name.to_owned(), value);
        }
    }
    Value::Object(rest)
}

/// One element of an assistant message's `tool_calls`.
///
/// Reads a call of `type` `function` (or without `type`) into a
/// [`MessageToolCall`] and a call of any other `type` (`custom`) verbatim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum AssistantToolCall {
    /// A function tool call.
    Function(MessageToolCall),
    /// A call of another `type`, verbatim.
    Other(Value),
}

/// A function tool call:
/// `{"id", "type": "function", "function": {"name", "arguments"}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a tool call object")]
pub(crate) struct MessageToolCall {
    /// The tool call id, e.g. `call_abc123`. Missing or `null` reads as
    /// `""` (Gemini sends `""`; the conversation parser mints a fresh one).
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) id: String,
    /// Always [`FunctionType::Function`]; a missing `type` reads as it.
    #[serde(rename = "type", default)]
    pub(crate) kind: FunctionType,
    /// The called function and its arguments.
    pub(crate) function: FunctionCall,
    /// Any other field (Gemini's `extra_content`, which holds the
    /// `thought_signature` Gemini needs back; a streamed `index`), kept
    /// verbatim.
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// The `function` of a [`MessageToolCall`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a function call object")]
pub(crate) struct FunctionCall {
    /// The tool name the model asked for.
    pub(crate) name: String,
    /// The arguments as the JSON text the model wrote. Read from a string
    /// verbatim, from a JSON object or array (llama.cpp, mlx-lm) as its
    /// compact JSON text, and as `""` when missing or `null` (OpenRouter,
    /// for a tool whose parameters are all optional).
    #[serde(default, deserialize_with = "arguments_text")]
    pub(crate) arguments: String,
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

/// A `chat.completion` response body
/// ([reference](https://platform.openai.com/docs/api-reference/chat/object)).
/// Fields other than `choices` and `usage` (`id`, `model`, `created`, ...)
/// are not read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a chat.completion object")]
pub(crate) struct ChatCompletion {
    /// The completions; one unless the request asked for `n > 1`.
    pub(crate) choices: Vec<Choice>,
    /// Tokens used; absent from some servers' responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<CompletionUsage>,
}

/// One element of [`ChatCompletion::choices`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a choice object")]
pub(crate) struct Choice {
    /// The choice's position.
    #[serde(default)]
    pub(crate) index: u64,
    /// The message the model wrote.
    pub(crate) message: ChatCompletionMessage,
    /// `stop`, `length`, `tool_calls`, `content_filter`, `function_call`;
    /// other servers send other values, or `null`.
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// The `message` of a [`Choice`]: an assistant message with its `role`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a message object")]
pub(crate) struct ChatCompletionMessage {
    /// `assistant`.
    pub(crate) role: String,
    /// The model's text; `null` when it only called tools or refused. A
    /// string, or an array of `text`, `refusal` and other parts.
    #[serde(default)]
    pub(crate) content: Option<StringOrArray<AssistantContentPart>>,
    /// The model's reasoning (DeepSeek, vLLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_content: Option<String>,
    /// The model's refusal message, when it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refusal: Option<String>,
    /// The tool calls, in order.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub(crate) tool_calls: Vec<AssistantToolCall>,
    /// Any other field (`annotations`, `audio`, Gemini's `extra_content`).
    #[serde(flatten)]
    pub(crate) extras: Map<String, Value>,
}

/// The `usage` of a [`ChatCompletion`]. Every count reads as `0` when
/// missing or `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "a usage object")]
pub(crate) struct CompletionUsage {
    /// Input tokens, cached ones included.
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) prompt_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) completion_tokens: u64,
    /// Both.
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) total_tokens: u64,
    /// The input tokens' breakdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_tokens_details: Option<PromptTokensDetails>,
    /// The output tokens' breakdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) completion_tokens_details: Option<CompletionTokensDetails>,
    /// DeepSeek's count of input tokens read from its cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) prompt_cache_hit_tokens: Option<u64>,
}

/// [`CompletionUsage::prompt_tokens_details`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct PromptTokensDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cached_tokens: Option<u64>,
}

/// [`CompletionUsage::completion_tokens_details`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompletionTokensDetails {
    /// Output tokens spent reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_tokens: Option<u64>,
}

pub(super) fn without_nulls(mut fields: Map<String, Value>) -> Map<String, Value> {
    fields.retain(|_, value| !value.is_null());
    fields
}

fn image_url_value(image_url: ImageUrl) -> Value {
    let mut value = image_url.extras;
    value.insert("url".to_owned(), Value::String(image_url.url));
    Value::Object(value)
}

pub(super) fn empty_schema() -> Value {
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
pub(super) fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
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
