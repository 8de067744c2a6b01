//! OpenAI Chat Completions: `tools`, request `messages` and the
//! `chat.completion` response.
//!
//! Shapes follow the Chat Completions API reference
//! (<https://platform.openai.com/docs/api-reference/chat>):
//!
//! - a tool is `{"type": "function", "function": {"name", "description", "parameters"}}`;
//! - an assistant tool call is
//!   `{"id", "type": "function", "function": {"name", "arguments"}}`, where
//!   `arguments` is a JSON **string** the model wrote. It is kept verbatim in
//!   [`ToolCall::arguments`], valid JSON or not: the turn loop answers a bad
//!   call with an error result, the wire layer never rejects it;
//! - a tool result is `{"role": "tool", "tool_call_id", "content"}`.
//!
//! # What a round trip loses
//!
//! OpenAI has no field for a failed tool result, and the API refuses
//! unknown message fields, so [`ToolResult::is_error`] is **not exported**:
//! the model reads the failure from the result's text, which the runner
//! writes as an error sentence. [`parse_messages`] sets `is_error` to
//! `false`. Everything else survives [`export_messages`] then
//! [`parse_messages`] unchanged. To store a conversation without loss, serialise
//! [`Message`] itself.
//!
//! # System messages
//!
//! [`Message`] has no system role: the system prompt is the caller's, sent
//! ahead of the conversation. [`parse_messages`] fails on a `system` or
//! `developer` message with [`WireErrorKind::SystemRole`] rather than drop it
//! silently; strip it before parsing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{WireError, WireErrorKind, WireFormat};
use super::json::Node;
use crate::tool::ToolInfo;
use crate::turn::{Message, ToolCall, ToolResult};

const FORMAT: WireFormat = WireFormat::OpenAiChat;

/// The `type` of an OpenAI tool and of a tool call: always `"function"` for
/// the function tools this crate exports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionType {
    /// `"function"`.
    #[default]
    Function,
}

/// One element of a request's `tools` array:
/// `{"type": "function", "function": {...}}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Always [`FunctionType::Function`].
    #[serde(rename = "type")]
    pub kind: FunctionType,
    /// The function the model may call.
    pub function: FunctionDefinition,
}

/// The `function` of a [`Tool`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// The model-facing tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl From<&ToolInfo> for Tool {
    fn from(info: &ToolInfo) -> Self {
        Self {
            kind: FunctionType::Function,
            function: FunctionDefinition {
                name: info.name.clone(),
                description: info.description.clone(),
                parameters: info.parameters.clone(),
            },
        }
    }
}

/// One element of a request's `messages` array, tagged by `role`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// `{"role": "user", "content"}`.
    User {
        /// The user's text.
        content: String,
    },
    /// `{"role": "assistant", "content": string | null, "tool_calls"?}`.
    Assistant {
        /// The model's text; `null` when it only called tools.
        content: Option<String>,
        /// The tool calls; omitted when empty, as the API expects.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<MessageToolCall>,
    },
    /// `{"role": "tool", "tool_call_id", "content"}`.
    Tool {
        /// The id of the tool call this answers.
        tool_call_id: String,
        /// The result text.
        content: String,
    },
}

/// One element of an assistant message's `tool_calls`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageToolCall {
    /// The tool call id, e.g. `call_abc123`.
    pub id: String,
    /// Always [`FunctionType::Function`].
    #[serde(rename = "type")]
    pub kind: FunctionType,
    /// The called function and its arguments.
    pub function: FunctionCall,
}

/// The `function` of a [`MessageToolCall`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool name the model asked for.
    pub name: String,
    /// The arguments as the JSON text the model wrote (a string, not an
    /// object).
    pub arguments: String,
}

impl From<&ToolCall> for MessageToolCall {
    fn from(call: &ToolCall) -> Self {
        Self {
            id: call.id.clone(),
            kind: FunctionType::Function,
            function: FunctionCall {
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            },
        }
    }
}

/// Drops [`ToolResult::is_error`]: OpenAI has no field for it (see the
/// module docs).
impl From<&Message> for ChatMessage {
    fn from(message: &Message) -> Self {
        match message {
            Message::User { content } => Self::User {
                content: content.clone(),
            },
            Message::Assistant {
                content,
                tool_calls,
            } => Self::Assistant {
                content: content.clone(),
                tool_calls: tool_calls.iter().map(MessageToolCall::from).collect(),
            },
            Message::Tool(result) => Self::Tool {
                tool_call_id: result.tool_call_id.clone(),
                content: result.content.clone(),
            },
        }
    }
}

/// The request's `tools` array for these tools, in order.
///
/// ```
/// use agent_loop::{tool::ToolInfo, wire::openai};
///
/// let tools = openai::export_tools(&[ToolInfo::without_parameters("now", "The current time.")]);
/// let json = serde_json::to_value(&tools).unwrap();
/// assert_eq!(json[0]["type"], "function");
/// assert_eq!(json[0]["function"]["name"], "now");
/// ```
pub fn export_tools(tools: &[ToolInfo]) -> Vec<Tool> {
    tools.iter().map(Tool::from).collect()
}

/// Parses a `tools` array back into [`ToolInfo`]s.
///
/// A missing `description` becomes `""` and missing `parameters` the empty
/// object schema (the API reference makes both optional; no parameters means
/// a function without arguments).
///
/// # Errors
///
/// [`WireErrorKind::WrongType`] when `tools` is not an array of objects or a
/// field has the wrong type, [`WireErrorKind::MissingField`] without
/// `function` or `function.name`, [`WireErrorKind::UnknownType`] for a tool
/// whose `type` is not `"function"` (e.g. `"custom"`).
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolInfo>, WireError> {
    Node::root(FORMAT, "tools", tools)
        .items()?
        .iter()
        .map(parse_tool)
        .collect()
}

fn parse_tool(tool: &Node<'_>) -> Result<ToolInfo, WireError> {
    tool.expect_type("function")?;
    let function = tool.field("function")?;
    let name = function.str_field("name")?;
    let description = function.str_field_or_empty("description")?;
    Ok(match function.optional_field("parameters")? {
        Some(parameters) => ToolInfo::new(name, description, parameters.value().clone()),
        None => ToolInfo::without_parameters(name, description),
    })
}

/// The request's `messages` array for a conversation, in order: one
/// [`ChatMessage`] per [`Message`]. [`ToolResult::is_error`] is not exported
/// (see the module docs).
pub fn export_messages(conversation: &[Message]) -> Vec<ChatMessage> {
    conversation.iter().map(ChatMessage::from).collect()
}

/// Parses a request's `messages` array back into a conversation.
///
/// Roles `user`, `assistant` and `tool` are accepted. `content` may be a
/// string or an array of text parts (concatenated with no separator); an
/// assistant's `content` may be `null`. Tool results come back with
/// `is_error: false`, since the format has no such field. Unknown fields are
/// ignored.
///
/// # Errors
///
/// [`WireErrorKind::SystemRole`] for a `system` or `developer` message,
/// [`WireErrorKind::UnknownRole`] for any other unknown role,
/// [`WireErrorKind::MissingField`] for a missing `role`, `content` (user,
/// tool), `tool_call_id`, tool call `id`, `function`, `name` or `arguments`,
/// [`WireErrorKind::WrongType`] for a field of the wrong JSON type (notably
/// `arguments` that is not a string), [`WireErrorKind::UnknownType`] for a
/// non-text content part or a tool call whose `type` is not `"function"`.
pub fn parse_messages(messages: &Value) -> Result<Vec<Message>, WireError> {
    Node::root(FORMAT, "messages", messages)
        .items()?
        .iter()
        .map(parse_message)
        .collect()
}

fn parse_message(message: &Node<'_>) -> Result<Message, WireError> {
    match message.str_field("role")? {
        "user" => Ok(Message::User {
            content: message.field("content")?.text()?,
        }),
        "assistant" => parse_assistant(message),
        "tool" => Ok(Message::Tool(ToolResult {
            tool_call_id: message.str_field("tool_call_id")?.to_owned(),
            content: message.field("content")?.text()?,
            is_error: false,
        })),
        role @ ("system" | "developer") => Err(message.error(WireErrorKind::SystemRole {
            role: role.to_owned(),
        })),
        role => Err(message.error(WireErrorKind::UnknownRole {
            role: role.to_owned(),
        })),
    }
}

/// Parses a whole `chat.completion` response body into the assistant's
/// [`Message::Assistant`]: its text and its tool calls in order.
///
/// Only the first choice is read (a request with `n > 1` asks for several;
/// the tool loop uses one). `content: null` with a `refusal` string yields the
/// refusal as the content, so the model's words are not lost. Each call's
/// `arguments` string is kept verbatim, even when it is not valid JSON.
/// Unknown fields (`usage`, `logprobs`, ...) are ignored.
///
/// # Errors
///
/// [`WireErrorKind::NoChoices`] when `choices` is empty,
/// [`WireErrorKind::UnknownRole`] when the message's role is not
/// `assistant`, [`WireErrorKind::MissingField`] for a missing `choices`,
/// `message`, `role`, tool call `id`, `function`, `name` or `arguments`,
/// [`WireErrorKind::WrongType`] for a field of the wrong JSON type (notably
/// `arguments` that is not a string), [`WireErrorKind::UnknownType`] for a
/// tool call whose `type` is not `"function"`.
pub fn parse_response(body: &Value) -> Result<Message, WireError> {
    let root = Node::root(FORMAT, "response", body);
    let choices = root.field("choices")?;
    let choice = choices
        .items()?
        .into_iter()
        .next()
        .ok_or_else(|| choices.error(WireErrorKind::NoChoices))?;
    let message = choice.field("message")?;
    match message.str_field("role")? {
        "assistant" => parse_assistant(&message),
        role => Err(message.error(WireErrorKind::UnknownRole {
            role: role.to_owned(),
        })),
    }
}

fn parse_assistant(message: &Node<'_>) -> Result<Message, WireError> {
    let mut content = match message.optional_field("content")? {
        Some(content) => Some(content.text()?),
        None => None,
    };
    if content.is_none()
        && let Some(refusal) = message.optional_field("refusal")?
    {
        content = Some(refusal.str()?.to_owned());
    }
    let tool_calls = match message.optional_field("tool_calls")? {
        Some(calls) => calls
            .items()?
            .iter()
            .map(parse_tool_call)
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    Ok(Message::Assistant {
        content,
        tool_calls,
    })
}

fn parse_tool_call(call: &Node<'_>) -> Result<ToolCall, WireError> {
    let id = call.str_field("id")?;
    // `type` is required by the reference but some compatible servers omit
    // it; only a type other than `function` is an error.
    if let Some(kind) = call.optional_field("type")? {
        let kind = kind.str()?;
        if kind != "function" {
            return Err(call.unknown_type(kind));
        }
    }
    let function = call.field("function")?;
    Ok(ToolCall::new(
        id,
        function.str_field("name")?,
        function.str_field("arguments")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assistant_without_text_exports_null_content_and_no_empty_tool_calls() {
        let exported = serde_json::to_value(export_messages(&[Message::Assistant {
            content: None,
            tool_calls: Vec::new(),
        }]))
        .unwrap();
        assert_eq!(exported, json!([{ "role": "assistant", "content": null }]));
    }

    #[test]
    fn refusal_becomes_content() {
        let body = json!({
            "choices": [{ "index": 0, "message": {
                "role": "assistant", "content": null, "refusal": "I can't help with that."
            }, "finish_reason": "stop" }]
        });
        assert_eq!(
            parse_response(&body).unwrap(),
            Message::assistant("I can't help with that.")
        );
    }

    #[test]
    fn tool_without_parameters_parses_to_empty_object_schema() {
        let tools = json!([{ "type": "function", "function": { "name": "now" } }]);
        assert_eq!(
            parse_tools(&tools).unwrap(),
            vec![ToolInfo::without_parameters("now", "")]
        );
    }
}
