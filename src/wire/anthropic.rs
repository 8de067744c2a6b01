//! Anthropic Messages: `tools`, request `messages` and the `message`
//! response.
//!
//! Shapes follow the Messages API reference
//! (<https://docs.anthropic.com/en/api/messages>) and its tool-use guide:
//!
//! - a tool is `{"name", "description", "input_schema"}`;
//! - the model calls tools with `tool_use` content blocks
//!   `{"type": "tool_use", "id", "name", "input": {...}}` whose `input` is a
//!   JSON **object**, not text;
//! - results go back in the next **user** message as `tool_result` blocks
//!   `{"type": "tool_result", "tool_use_id", "content", "is_error"}`. All the
//!   results of one assistant turn must sit in that one user message, so
//!   [`export_messages`] merges consecutive [`Message::Tool`]s (and a user
//!   text that follows them) into one user message.
//!
//! # Decisions
//!
//! - **Text blocks** of an assistant message are concatenated with no
//!   separator into [`Message::Assistant`]'s `content`: Anthropic splits one
//!   text into several blocks around citations, so a separator would change
//!   the text. No text block gives `content: None`.
//! - **`input` to arguments**: the object is written as compact JSON text
//!   (serde_json's key order) into [`ToolCall::arguments`].
//! - **Arguments to `input`**: `""` is exported as `{}` (the crate's rule for
//!   empty arguments). Arguments that are not a JSON object (invalid JSON,
//!   an array, `null`: possible when the conversation came from another
//!   provider) cannot be an `input`, yet the runner has already answered
//!   such a call with an error result and the conversation must go on, so
//!   export does not fail: they become `{"_raw_arguments": "<the text>"}`
//!   ([`RAW_ARGUMENTS_KEY`]), which shows the model what it sent next to the
//!   error it got, and [`parse_messages`] turns that object back into the
//!   raw text.
//! - **Thinking blocks** (`thinking`, `redacted_thinking`) have no place in
//!   [`Message`] and are skipped when parsing; other block types (images,
//!   server tools, ...) are [`WireErrorKind::UnknownType`] errors.
//!
//! # What a round trip loses
//!
//! [`export_messages`] then [`parse_messages`] gives back the conversation
//! except: arguments JSON is re-serialised compactly (whitespace and key
//! order may change), `""` arguments come back as `"{}"`, and an empty
//! assistant text (`Some("")`) comes back as `None` (the API refuses empty
//! text blocks, so none is exported). `is_error` survives.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::{WireError, WireErrorKind, WireFormat};
use super::json::Node;
use crate::tool::ToolInfo;
use crate::turn::{Message, ToolCall, ToolResult};

const FORMAT: WireFormat = WireFormat::AnthropicMessages;

/// The key under which [`export_messages`] puts tool call arguments that are
/// not a JSON object: `{"_raw_arguments": "<the raw text>"}`.
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// One element of a request's `tools` array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The model-facing tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the `input` object.
    pub input_schema: Value,
}

impl From<&ToolInfo> for Tool {
    fn from(info: &ToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            description: info.description.clone(),
            input_schema: info.parameters.clone(),
        }
    }
}

/// Who wrote a [`MessageParam`]: Anthropic has only these two roles (the
/// system prompt is a separate request field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// `"user"`: user text and tool results.
    User,
    /// `"assistant"`: the model's text and tool calls.
    Assistant,
}

/// One element of a request's `messages` array:
/// `{"role", "content": [blocks]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageParam {
    /// Who wrote it.
    pub role: Role,
    /// Its content blocks, in order.
    pub content: Vec<ContentBlock>,
}

/// A content block, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `{"type": "text", "text"}`.
    Text {
        /// The text; the API refuses an empty one.
        text: String,
    },
    /// `{"type": "tool_use", "id", "name", "input"}`: a tool call.
    ToolUse {
        /// The tool call id, e.g. `toolu_01A09q90qw90lq917835lq9`.
        id: String,
        /// The tool name the model asked for.
        name: String,
        /// The arguments object.
        input: Value,
    },
    /// `{"type": "tool_result", "tool_use_id", "content", "is_error"?}`.
    ToolResult {
        /// The id of the `tool_use` this answers.
        tool_use_id: String,
        /// The result text.
        content: String,
        /// `true` when the call failed; omitted when `false` (the API's
        /// default).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// The request's `tools` array for these tools, in order.
pub fn export_tools(tools: &[ToolInfo]) -> Vec<Tool> {
    tools.iter().map(Tool::from).collect()
}

/// Parses a `tools` array back into [`ToolInfo`]s. A missing `description`
/// (optional in the API) becomes `""`; unknown fields (`cache_control`,
/// `type`, ...) are ignored.
///
/// # Errors
///
/// [`WireErrorKind::MissingField`] without `name` or `input_schema`,
/// [`WireErrorKind::WrongType`] when `tools` is not an array of objects or a
/// field has the wrong type.
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolInfo>, WireError> {
    Node::root(FORMAT, "tools", tools)
        .items()?
        .iter()
        .map(|tool| tool.tool_info("input_schema"))
        .collect()
}

/// The request's `messages` array for a conversation.
///
/// An assistant message becomes one `assistant` message: a text block when
/// it has non-empty text, then one `tool_use` block per call. User texts and
/// tool results become `user` messages, consecutive ones merged into one (a
/// new user message starts only where a tool result would follow user text,
/// since the API wants `tool_result` blocks first). Never fails: see the
/// module docs for arguments that are not a JSON object.
pub fn export_messages(conversation: &[Message]) -> Vec<MessageParam> {
    let mut exported: Vec<MessageParam> = Vec::new();
    for message in conversation {
        match message {
            Message::User { content } => push_user_block(
                &mut exported,
                ContentBlock::Text {
                    text: content.clone(),
                },
            ),
            Message::Tool(result) => push_user_block(
                &mut exported,
                ContentBlock::ToolResult {
                    tool_use_id: result.tool_call_id.clone(),
                    content: result.content.clone(),
                    is_error: result.is_error,
                },
            ),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let text = content
                    .iter()
                    .filter(|text| !text.is_empty())
                    .map(|text| ContentBlock::Text { text: text.clone() });
                let calls = tool_calls.iter().map(|call| ContentBlock::ToolUse {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: arguments_to_input(&call.arguments),
                });
                exported.push(MessageParam {
                    role: Role::Assistant,
                    content: text.chain(calls).collect(),
                });
            }
        }
    }
    exported
}

fn push_user_block(exported: &mut Vec<MessageParam>, block: ContentBlock) {
    if let Some(last) = exported.last_mut()
        && last.role == Role::User
    {
        let result_after_text = matches!(block, ContentBlock::ToolResult { .. })
            && last
                .content
                .iter()
                .any(|existing| matches!(existing, ContentBlock::Text { .. }));
        if !result_after_text {
            last.content.push(block);
            return;
        }
    }
    exported.push(MessageParam {
        role: Role::User,
        content: vec![block],
    });
}

/// The `input` object for raw arguments text; see the module docs.
fn arguments_to_input(arguments: &str) -> Value {
    if arguments.is_empty() {
        return Value::Object(Map::new());
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => {
            let mut wrapper = Map::new();
            wrapper.insert(
                RAW_ARGUMENTS_KEY.to_owned(),
                Value::String(arguments.to_owned()),
            );
            Value::Object(wrapper)
        }
    }
}

/// The arguments text for an `input` object; `restore_raw` undoes
/// [`arguments_to_input`]'s wrapper (only for our own exported history, not
/// for what the model returns).
fn input_to_arguments(input: &Map<String, Value>, restore_raw: bool) -> String {
    if restore_raw
        && input.len() == 1
        && let Some(Value::String(raw)) = input.get(RAW_ARGUMENTS_KEY)
    {
        return raw.clone();
    }
    // `Display` of a JSON value is its compact serialisation and cannot fail.
    Value::Object(input.clone()).to_string()
}

/// Parses a request's `messages` array back into a conversation.
///
/// A `user` message's `content` may be a string (one [`Message::User`]) or
/// blocks: each `text` block becomes one [`Message::User`] and each
/// `tool_result` one [`Message::Tool`], in order (`content` missing means
/// `""`, `is_error` missing means `false`). An `assistant` message becomes
/// one [`Message::Assistant`] as in [`parse_response`], except that an
/// `input` of the form `{"_raw_arguments": "<text>"}` is turned back into
/// the raw text. Unknown fields are ignored.
///
/// # Errors
///
/// [`WireErrorKind::UnknownRole`] for a role other than `user` and
/// `assistant`, [`WireErrorKind::UnknownType`] for a block type that is not
/// text, tool use, tool result or thinking (or a tool use in a user message,
/// a tool result in an assistant one), [`WireErrorKind::MissingField`] for a
/// missing `role`, `content`, block `type`, `text`, `id`, `name`, `input` or
/// `tool_use_id`, [`WireErrorKind::WrongType`] for a field of the wrong JSON
/// type (notably an `input` that is not an object).
pub fn parse_messages(messages: &Value) -> Result<Vec<Message>, WireError> {
    let mut conversation = Vec::new();
    for message in Node::root(FORMAT, "messages", messages).items()? {
        match message.str_field("role")? {
            "user" => parse_user(&message, &mut conversation)?,
            "assistant" => conversation.push(parse_assistant(&message, true)?),
            role => {
                return Err(message.error(WireErrorKind::UnknownRole {
                    role: role.to_owned(),
                }));
            }
        }
    }
    Ok(conversation)
}

fn parse_user(message: &Node<'_>, conversation: &mut Vec<Message>) -> Result<(), WireError> {
    let content = message.field("content")?;
    if let Some(text) = content.value().as_str() {
        conversation.push(Message::user(text));
        return Ok(());
    }
    for block in content.items()? {
        match block.str_field("type")? {
            "text" => conversation.push(Message::user(block.str_field("text")?)),
            "tool_result" => {
                let content = match block.optional_field("content")? {
                    Some(content) => content.text()?,
                    None => String::new(),
                };
                let is_error = match block.optional_field("is_error")? {
                    Some(is_error) => is_error.bool()?,
                    None => false,
                };
                conversation.push(Message::Tool(ToolResult {
                    tool_call_id: block.str_field("tool_use_id")?.to_owned(),
                    content,
                    is_error,
                }));
            }
            other => return Err(block.unknown_type(other)),
        }
    }
    Ok(())
}

/// Parses a Messages API response body (`"type": "message"`) into the
/// assistant's [`Message::Assistant`]: its text blocks concatenated and its
/// `tool_use` blocks as [`ToolCall`]s in order, each `input` written as
/// compact JSON text. Thinking blocks are skipped; unknown fields
/// (`stop_reason`, `usage`, ...) are ignored.
///
/// # Errors
///
/// [`WireErrorKind::UnknownType`] when the body's `type` is not `message`
/// (e.g. an `error` body) or a block type is not supported,
/// [`WireErrorKind::UnknownRole`] when `role` is not `assistant`,
/// [`WireErrorKind::MissingField`] for a missing `role`, `content`, block
/// `type`, `text`, `id`, `name` or `input`, [`WireErrorKind::WrongType`] for
/// a field of the wrong JSON type (notably an `input` that is not an
/// object).
pub fn parse_response(body: &Value) -> Result<Message, WireError> {
    let root = Node::root(FORMAT, "response", body);
    if let Some(kind) = root.optional_field("type")? {
        let kind = kind.str()?;
        if kind != "message" {
            return Err(root.unknown_type(kind));
        }
    }
    match root.str_field("role")? {
        "assistant" => parse_assistant(&root, false),
        role => Err(root.error(WireErrorKind::UnknownRole {
            role: role.to_owned(),
        })),
    }
}

fn parse_assistant(message: &Node<'_>, restore_raw: bool) -> Result<Message, WireError> {
    let content = message.field("content")?;
    if let Some(text) = content.value().as_str() {
        return Ok(Message::assistant(text));
    }
    let mut text: Option<String> = None;
    let mut tool_calls = Vec::new();
    for block in content.items()? {
        match block.str_field("type")? {
            "text" => text
                .get_or_insert_with(String::new)
                .push_str(block.str_field("text")?),
            "tool_use" => {
                let input = block.field("input")?.object()?;
                tool_calls.push(ToolCall::new(
                    block.str_field("id")?,
                    block.str_field("name")?,
                    input_to_arguments(input, restore_raw),
                ));
            }
            // Extended thinking: no place in `Message`.
            "thinking" | "redacted_thinking" => {}
            other => return Err(block.unknown_type(other)),
        }
    }
    Ok(Message::Assistant {
        content: text,
        tool_calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_arguments_become_the_input_object() {
        assert_eq!(
            arguments_to_input(r#"{"city": "Paris"}"#),
            json!({ "city": "Paris" })
        );
    }

    #[test]
    fn empty_arguments_become_an_empty_object() {
        assert_eq!(arguments_to_input(""), json!({}));
    }

    #[test]
    fn non_object_arguments_are_wrapped_and_restored() {
        for raw in [r#"{"city": "Par"#, "[1, 2]", "null", "42"] {
            let input = arguments_to_input(raw);
            assert_eq!(input, json!({ RAW_ARGUMENTS_KEY: raw }));
            let Value::Object(object) = input else {
                panic!("not an object")
            };
            assert_eq!(input_to_arguments(&object, true), raw);
        }
    }

    #[test]
    fn model_input_is_never_unwrapped() {
        let input = json!({ RAW_ARGUMENTS_KEY: "x" });
        let Value::Object(object) = input else {
            panic!("not an object")
        };
        assert_eq!(
            input_to_arguments(&object, false),
            r#"{"_raw_arguments":"x"}"#
        );
    }

    #[test]
    fn tool_result_after_user_text_starts_a_new_user_message() {
        let exported = export_messages(&[
            Message::user("hi"),
            Message::Tool(ToolResult::ok("toolu_1", "done")),
        ]);
        assert_eq!(exported.len(), 2);
    }

    #[test]
    fn user_text_after_tool_results_joins_their_message() {
        let exported = export_messages(&[
            Message::Tool(ToolResult::ok("toolu_1", "done")),
            Message::Tool(ToolResult::error("toolu_2", "failed")),
            Message::user("thanks"),
        ]);
        assert_eq!(exported.len(), 1);
        assert_eq!(exported[0].content.len(), 3);
    }

    #[test]
    fn thinking_blocks_are_skipped() {
        let body = json!({
            "type": "message", "role": "assistant",
            "content": [
                { "type": "thinking", "thinking": "Let me think.", "signature": "sig" },
                { "type": "text", "text": "Done." }
            ]
        });
        assert_eq!(parse_response(&body).unwrap(), Message::assistant("Done."));
    }
}
