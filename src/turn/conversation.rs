//! The provider-neutral conversation: what the model and the tools said.
//!
//! A [`Conversation`] is a list of [`Message`]s. Tool calls carry a
//! [`ToolCall::id`] (OpenAI's `tool_call_id`, Anthropic's `tool_use.id`) and
//! every call must be answered by exactly one [`ToolResult`] with that id:
//! providers refuse the next request otherwise. The turn runner keeps that
//! invariant for every conversation it returns.

use serde::{Deserialize, Serialize};

/// A conversation: messages in order, oldest first.
pub type Conversation = Vec<Message>;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the user said.
    User {
        /// The user's text.
        content: String,
    },
    /// What the model said: text, tool calls, or both (a model may explain
    /// itself before calling tools).
    Assistant {
        /// The model's text, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// The tool calls of this response, in the order the model gave them
        /// (one batch). Empty for a final answer.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool(ToolResult),
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User {
            content: content.into(),
        }
    }

    /// An assistant message with text only (a final answer).
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    /// An assistant message that asks for a batch of tool calls.
    pub fn tool_calls(content: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant {
            content,
            tool_calls,
        }
    }
}

/// One tool call requested by the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool call id the provider gave (OpenAI `call_…`, Anthropic
    /// `toolu_…`); the result must carry the same id.
    pub id: String,
    /// The model-facing tool name the model asked for. It may name no tool
    /// at all: models hallucinate.
    pub name: String,
    /// The arguments exactly as the model sent them: JSON text that is meant
    /// to be an object, but may be truncated, `null`, an array or empty
    /// (`""` counts as `{}`). Kept as text so nothing the model sent is lost.
    pub arguments: String,
}

impl ToolCall {
    /// A tool call from its id, tool name and raw JSON arguments text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// The result of one tool call, as the model will see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this result answers.
    pub tool_call_id: String,
    /// The model-visible text: the tool's output, or a short error sentence.
    /// At most the mode's `result_bytes` bytes when that limit is set.
    pub content: String,
    /// `true` when the call failed (Anthropic's `is_error`): unknown tool,
    /// bad arguments, a tool error or a panic.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// A failed result: `content` is the model-facing error sentence.
    pub fn error(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
            is_error: true,
        }
    }
}
