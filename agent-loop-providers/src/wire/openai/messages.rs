//! A request's `messages` parsed back into a conversation.

use serde_json::{Map, Value};

use super::FORMAT;
use super::types::{
    AssistantChatMessage, AssistantContentPart, AssistantToolCall, ImageUrl, RoleTag,
    SystemChatMessage, ToolChatMessage, UserChatMessage, UserContentPart, without_nulls,
};
use crate::wire::arguments::{RAW_ARGUMENTS_KEY, raw_arguments};
use crate::wire::blank_text::{is_blank, join_blank_text};
use crate::wire::decode::{check_depth, decode};
use crate::wire::error::{WireError, WireErrorKind};
use crate::wire::string_or_array::StringOrArray;
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, Extras, ImagePart, Message, ProviderPart, ReasoningPart,
    SystemMessage, SystemRole, TextPart, ToolCall, ToolResult, UserMessage,
};

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
///   order. A call's `arguments` is kept as the text the model wrote: a
///   string verbatim, a JSON object or array (llama.cpp, mlx-lm) as its
///   compact JSON text, missing or `null` (OpenRouter) as `""`; except that exactly `{"_raw_arguments": "<text>"}` (one key, a string)
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
/// [`export_messages`](super::export_messages)), so that parsing what [`export_messages`](super::export_messages) wrote
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

pub(super) fn parse_messages_at(root: &str, messages: &Value) -> Result<Vec<Message>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, messages)?;
    let mut conversation = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let path = format!("{root}[{index}]");
        if let Some(message) = parse_message(&path, item)? {
            conversation.push(message);
        }
    }
    agent_loop_core::support::mint_missing_ids(&mut conversation);
    Ok(conversation)
}

/// One message; `None` when it carries nothing [`export_messages`](super::export_messages) would
/// write.
fn parse_message(path: &str, value: &Value) -> Result<Option<Message>, WireError> {
    let RoleTag { role } = decode(FORMAT, path, value)?;
    Ok(match role.as_str() {
        "system" | "developer" => {
            let message: SystemChatMessage = decode(FORMAT, path, value)?;
            let text = match message.content {
                StringOrArray::Text(text) => text,
                StringOrArray::Array(parts) => parts.into_iter().map(|part| part.text).collect(),
            };
            (!is_blank(&text)).then(|| {
                let mut system = SystemMessage::new(text);
                system.system_role = if role == "developer" {
                    SystemRole::Developer
                } else {
                    SystemRole::System
                };
                system.extras = message_extras(message.extras);
                Message::System(system)
            })
        }
        "user" => {
            let message: UserChatMessage = decode(FORMAT, path, value)?;
            let content = join_blank_text(match message.content {
                StringOrArray::Text(text) => vec![ContentPart::text(text)],
                StringOrArray::Array(parts) => parts.into_iter().map(user_part).collect(),
            });
            (!content.is_empty()).then(|| {
                let mut user = UserMessage::new(content);
                user.extras = message_extras(message.extras);
                Message::User(user)
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
                StringOrArray::Text(text) => text,
                StringOrArray::Array(parts) => parts.into_iter().map(|part| part.text).collect(),
            };
            let content = if is_blank(&text) {
                Vec::new()
            } else {
                vec![ContentPart::text(text)]
            };
            let mut result = ToolResult::with_content(message.tool_call_id, content, false);
            result.extras = message_extras(message.extras);
            Some(Message::Tool(result))
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
        UserContentPart::Text(text) => {
            let mut part = TextPart::new(text.text);
            part.extras = Extras::new(FORMAT, text.extras);
            ContentPart::Text(part)
        }
        UserContentPart::ImageUrl(image) => {
            let ImageUrl { url, extras } = image.image_url;
            let mut part = match data_url(&url) {
                Some((media_type, data)) => ImagePart::base64(media_type, data),
                None => ImagePart::url(url),
            };
            part.extras = Extras::new(FORMAT, without_nulls(extras));
            ContentPart::Image(part)
        }
        UserContentPart::Other(value) => ContentPart::Provider(ProviderPart::new(FORMAT, value)),
    }
}

/// `data:<media type>;base64,<data>` → its media type and data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (media_type, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    (!media_type.is_empty() && !media_type.contains(',')).then_some((media_type, data))
}

/// The conversation's assistant message for a Chat Completions one: its
/// reasoning, its text, its tool calls; the refusal in its extras.
/// `restore_raw` undoes the export's wrapper of arguments (only for history,
/// not for what the model returns).
pub(super) fn assistant_message(
    message: AssistantChatMessage,
    restore_raw: bool,
) -> AssistantMessage {
    let mut content = Vec::new();
    if let Some(reasoning) = message.reasoning_content {
        content.push(ContentPart::Reasoning(ReasoningPart::new(
            reasoning, FORMAT,
        )));
    }
    let mut refusal = message.refusal;
    // The text of each run of text parts, with the parts of other types
    // (kept as provider parts) between them, in order.
    let mut text = String::new();
    match message.content {
        None => {}
        Some(StringOrArray::Text(whole)) => text = whole,
        Some(StringOrArray::Array(parts)) => {
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
                        content.push(ContentPart::Provider(ProviderPart::new(FORMAT, value)));
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
                let mut part = ToolCall::new(call.id, call.function.name, arguments);
                part.extras = Extras::new(FORMAT, extras);
                ContentPart::ToolCall(part)
            }
            AssistantToolCall::Other(value) => {
                ContentPart::Provider(ProviderPart::new(FORMAT, value))
            }
        });
    }
    let mut extras = message.extras;
    if let Some(refusal) = refusal {
        extras.insert("refusal".to_owned(), Value::String(refusal));
    }
    let mut assistant = AssistantMessage::new(join_blank_text(content));
    assistant.extras = message_extras(extras);
    assistant
}

/// Undoes the export's wrapper of arguments that are not an object: exactly a one-key
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

/// A message's unknown fields as extras: without its `role` (read as the
/// tag), `null` fields and the response-only `annotations`.
fn message_extras(mut fields: Map<String, Value>) -> Extras {
    fields.remove("role");
    fields.remove("annotations");
    Extras::new(FORMAT, without_nulls(fields))
}
