//! [`Message`] and the message of each role.

use serde::{Deserialize, Serialize};

use crate::conversation::{ContentPart, Extras, ToolCall, text_of};

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions from the application (OpenAI `system`/`developer`,
    /// Anthropic's top-level `system`).
    System(SystemMessage),
    /// What the user said.
    User(UserMessage),
    /// What the model said: text, reasoning, tool calls, in its order.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolResult),
}

impl Message {
    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::System(SystemMessage::new(text))
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User(UserMessage::from_text(text))
    }

    /// An assistant message with one text part (a final answer).
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant(AssistantMessage::from_text(text))
    }

    /// An assistant message that asks for a batch of tool calls, after an
    /// optional text.
    pub fn tool_calls(text: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::Assistant(AssistantMessage::with_tool_calls(text, tool_calls))
    }

    /// A tool result message.
    pub fn tool_result(result: ToolResult) -> Self {
        Self::Tool(result)
    }

    /// The message's text parts concatenated (a system message's text).
    pub fn text(&self) -> String {
        match self {
            Self::System(system) => system.text.clone(),
            Self::User(user) => text_of(&user.content),
            Self::Assistant(assistant) => assistant.text(),
            Self::Tool(result) => result.text(),
        }
    }

    /// The assistant message, when this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Self::Assistant(assistant) => Some(assistant),
            _ => None,
        }
    }

    /// The tool result, when this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResult> {
        match self {
            Self::Tool(result) => Some(result),
            _ => None,
        }
    }

    /// Every JSON value the message holds, the values an export copies and
    /// a model client serialises: its extras' values and those of its
    /// parts (and those of each part).
    pub fn json_values(&self) -> impl Iterator<Item = &serde_json::Value> {
        let (extras, parts): (&Extras, &[ContentPart]) = match self {
            Self::System(system) => (&system.extras, &[]),
            Self::User(user) => (&user.extras, &user.content),
            Self::Assistant(assistant) => (&assistant.extras, &assistant.content),
            Self::Tool(result) => (&result.extras, &result.content),
        };
        json_values(extras, parts)
    }

    /// The message's own extras and its parts (none for a system message).
    pub fn extras_and_content(&self) -> (&Extras, &[ContentPart]) {
        match self {
            Self::System(system) => (&system.extras, &[]),
            Self::User(user) => (&user.extras, &user.content),
            Self::Assistant(assistant) => (&assistant.extras, &assistant.content),
            Self::Tool(result) => (&result.extras, &result.content),
        }
    }

    /// [`extras_and_content`](Self::extras_and_content), to change in
    /// place; `None` for a system message's parts.
    pub fn extras_and_content_mut(&mut self) -> (&mut Extras, Option<&mut Vec<ContentPart>>) {
        match self {
            Self::System(system) => (&mut system.extras, None),
            Self::User(user) => (&mut user.extras, Some(&mut user.content)),
            Self::Assistant(assistant) => (&mut assistant.extras, Some(&mut assistant.content)),
            Self::Tool(result) => (&mut result.extras, Some(&mut result.content)),
        }
    }
}

/// Who sends a [`SystemMessage`] in OpenAI Chat Completions, which has two
/// roles for it; Anthropic has one top-level `system`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemRole {
    /// `"system"`.
    #[default]
    System,
    /// `"developer"` (OpenAI's name for it since its reasoning models).
    Developer,
}

/// Instructions from the application.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SystemMessage {
    /// The instructions.
    pub text: String,
    /// `system` or `developer` in OpenAI's format.
    #[serde(default, skip_serializing_if = "is_system")]
    pub system_role: SystemRole,
    /// Provider fields of the message or block (Anthropic `cache_control`).
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

fn is_system(role: &SystemRole) -> bool {
    *role == SystemRole::System
}

impl SystemMessage {
    /// A `system` message.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            system_role: SystemRole::System,
            extras: Extras::default(),
        }
    }
}

/// What the user said: text, images, provider blocks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserMessage {
    /// The parts, in order.
    pub content: Vec<ContentPart>,
    /// Provider fields of the message (OpenAI `name`).
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

impl UserMessage {
    /// A user message of these parts.
    pub fn new(content: Vec<ContentPart>) -> Self {
        Self {
            content,
            extras: Extras::default(),
        }
    }

    /// A user message with one text part.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentPart::text(text)])
    }

    /// The text parts concatenated.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

/// What the model said, in its order: text, reasoning, tool calls and
/// provider blocks (Anthropic interleaves them; OpenAI's reasoning comes
/// first, then the text, then the calls).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AssistantMessage {
    /// The parts, in order.
    pub content: Vec<ContentPart>,
    /// Provider fields of the message.
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

/// The values of `extras` and of every part's extras and provider block.
fn json_values<'a>(
    extras: &'a Extras,
    parts: &'a [ContentPart],
) -> impl Iterator<Item = &'a serde_json::Value> {
    extras
        .fields()
        .values()
        .chain(parts.iter().flat_map(ContentPart::json_values))
}

impl AssistantMessage {
    /// Every JSON value the message holds (see [`Message::json_values`]).
    pub(crate) fn json_values(&self) -> impl Iterator<Item = &serde_json::Value> {
        json_values(&self.extras, &self.content)
    }

    /// An assistant message of these parts.
    pub fn new(content: Vec<ContentPart>) -> Self {
        Self {
            content,
            extras: Extras::default(),
        }
    }

    /// An assistant message with one text part.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentPart::text(text)])
    }

    /// An assistant message with an optional text, then the calls.
    pub fn with_tool_calls(text: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self::new(
            text.map(ContentPart::text)
                .into_iter()
                .chain(tool_calls.into_iter().map(ContentPart::ToolCall))
                .collect(),
        )
    }

    /// The text parts concatenated (empty when there are none).
    pub fn text(&self) -> String {
        text_of(&self.content)
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|part| match part {
            ContentPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The tool calls, in order, to change in place (the turn runner
    /// replaces empty and repeated ids).
    pub fn tool_calls_mut(&mut self) -> impl Iterator<Item = &mut ToolCall> {
        self.content.iter_mut().filter_map(|part| match part {
            ContentPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// `true` when the message asks for at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls().next().is_some()
    }

    /// Records the `provider` and `model` that wrote the message on the
    /// [`Origin`](crate::conversation::Origin) of every provider-specific
    /// piece of it (its reasoning, provider parts and extras, the
    /// message's own and its parts'), where they are unknown. The HTTP
    /// models do it for every answer; a caller with its own HTTP client
    /// does it after `wire`'s `parse_response`, so exports
    /// to another provider or model leave out what only this one reads.
    pub fn record_origin(&mut self, provider: Option<&str>, model: Option<&str>) {
        if let Some(origin) = self.extras.origin_mut() {
            origin.record(provider, model);
        }
        for part in &mut self.content {
            let extras = match part {
                ContentPart::Reasoning(reasoning) => {
                    reasoning.origin.record(provider, model);
                    &mut reasoning.extras
                }
                ContentPart::Provider(provider_part) => {
                    provider_part.origin.record(provider, model);
                    continue;
                }
                ContentPart::Text(text) => &mut text.extras,
                ContentPart::Image(image) => &mut image.extras,
                ContentPart::ToolCall(call) => &mut call.extras,
            };
            if let Some(origin) = extras.origin_mut() {
                origin.record(provider, model);
            }
        }
    }
}

/// The result of one tool call, as the model will see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The [`ToolCall::id`] this result answers.
    pub tool_call_id: String,
    /// The model-visible content: text and images (a screenshot tool, an MCP
    /// tool returning an image). The turn runner writes one text part for a
    /// JSON output or an error sentence, and a content output's parts as
    /// they are; their text is at most the mode's `result_bytes` bytes when
    /// that limit is set.
    pub content: Vec<ContentPart>,
    /// `true` when the call failed (Anthropic's `is_error`): unknown tool,
    /// bad arguments, a tool error or a panic, a call cut off by the output
    /// limit or interrupted.
    #[serde(default)]
    pub is_error: bool,
    /// Provider fields of the result (Anthropic `cache_control`).
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

impl ToolResult {
    /// A successful result with one text part.
    pub fn ok(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::with_content(tool_call_id, vec![ContentPart::text(text)], false)
    }

    /// A failed result: `text` is the model-facing error sentence.
    pub fn error(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::with_content(tool_call_id, vec![ContentPart::text(text)], true)
    }

    /// A result of these parts.
    pub fn with_content(
        tool_call_id: impl Into<String>,
        content: Vec<ContentPart>,
        is_error: bool,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            content,
            is_error,
            extras: Extras::default(),
        }
    }

    /// The text parts concatenated.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}
