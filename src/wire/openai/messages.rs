//! A request's `messages`: a conversation exported, and parsed back.

use serde_json::{Map, Value};

use super::FORMAT;
use super::types::{
    AssistantChatMessage, AssistantContentPart, AssistantToolCall, ChatMessage, ChatTextPart,
    FunctionCall, FunctionType, ImageUrl, ImageUrlPart, ImageUrlType, MessageToolCall, RoleTag,
    SystemChatMessage, TextType, ToolChatMessage, UserChatMessage, UserContentPart, fields_for,
    without_nulls,
};
use crate::conversation::{
    AssistantMessage, ContentPart, Extras, ImagePart, ImageSource, Message, Origin, ProviderPart,
    ReasoningPart, SystemMessage, SystemRole, TextPart, ToolCall, ToolResult, UserMessage,
};
use crate::wire::arguments::{RAW_ARGUMENTS_KEY, arguments_text, raw_arguments};
use crate::wire::blank_text::{is_blank, join_blank_text};
use crate::wire::decode::{check_depth, decode};
use crate::wire::dropped::{self, Dropped, Place};
use crate::wire::encode::to_value;
use crate::wire::error::{WireError, WireErrorKind};
use crate::wire::ids::ExportIds;
use crate::wire::string_or_array::StringOrArray;
use crate::wire::target::{Target, for_target};

/// The request's `messages` array for a conversation, in order: each
/// element a message object of the Chat Completions reference
/// (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages>),
/// ready to be the body's `messages`.
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
/// parts of another format are left out, and so are images in assistant
/// messages and provider parts in tool results (a `tool` message holds
/// text): [`ExportedMessages::dropped`] lists each. See the module docs for
/// what a round trip loses.
pub fn export_messages(conversation: &[Message]) -> ExportedMessages {
    export_messages_for(conversation, &Target::new())
}

/// [`export_messages`] for a request to `target`: reasoning, provider
/// parts and extras its [`Target`] rule refuses are left out too and
/// reported (DeepSeek's `reasoning_content` goes back to DeepSeek only,
/// when both the part's origin and the target name a provider). The
/// OpenAI model exports with the host of its base URL as the provider.
pub fn export_messages_for(conversation: &[Message], target: &Target) -> ExportedMessages {
    let kept = for_target(conversation, FORMAT, target);
    ExportedMessages {
        messages: export_message_values(&kept),
        dropped: dropped::report(conversation, FORMAT, target, |place, part| match place {
            Place::User => true,
            Place::Assistant => !matches!(part, ContentPart::Image(_)),
            Place::ToolResult { .. } => !matches!(part, ContentPart::Provider(_)),
        }),
    }
}

/// What [`export_messages`] builds: the request's `messages`, and what it
/// left out.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ExportedMessages {
    /// The request's `messages` array, in order: message objects of the
    /// Chat Completions reference, ready to be the body's `messages`.
    pub messages: Vec<Value>,
    /// What the export could not carry (reasoning, provider parts and
    /// extras of another format; images in assistant messages; provider
    /// parts of tool results), in conversation order; empty when nothing
    /// was left out but blank text.
    pub dropped: Vec<Dropped>,
}

fn export_message_values(conversation: &[Message]) -> Vec<Value> {
    let mut ids = ExportIds::new(FORMAT, conversation);
    let mut messages = Vec::with_capacity(conversation.len());
    // Images of the current run of tool results, for one user message.
    let mut tool_images: Vec<UserContentPart> = Vec::new();
    for message in conversation {
        if !matches!(message, Message::Tool(_)) && !tool_images.is_empty() {
            messages.push(to_value(&images_message(std::mem::take(&mut tool_images))));
        }
        match message {
            Message::System(system) => {
                if is_blank(&system.text) {
                    continue;
                }
                let content = StringOrArray::Text(system.text.clone());
                let system_message = SystemChatMessage {
                    content,
                    extras: fields_for(&system.extras),
                };
                messages.push(to_value(&match system.system_role {
                    SystemRole::System => ChatMessage::System(system_message),
                    SystemRole::Developer => ChatMessage::Developer(system_message),
                }));
            }
            Message::User(user) => {
                if let Some(user) = export_user(user) {
                    messages.push(to_value(&ChatMessage::User(user)));
                }
            }
            Message::Assistant(assistant) => {
                if let Some(assistant) = export_assistant(assistant, &mut ids) {
                    messages.push(to_value(&ChatMessage::Assistant(assistant)));
                }
            }
            Message::Tool(result) => {
                let id = ids.result(&result.tool_call_id).into_owned();
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
                messages.push(to_value(&ChatMessage::Tool(ToolChatMessage {
                    tool_call_id: id,
                    content: StringOrArray::Text(non_blank_text(&result.content)),
                    extras: fields_for(&result.extras),
                })));
            }
        }
    }
    if !tool_images.is_empty() {
        messages.push(to_value(&images_message(tool_images)));
    }
    messages
}

fn images_message(parts: Vec<UserContentPart>) -> ChatMessage {
    ChatMessage::User(UserChatMessage {
        content: StringOrArray::Array(parts),
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
            ContentPart::Provider(provider) if provider.origin.format == FORMAT => {
                Some(UserContentPart::Other(provider.value.clone()))
            }
            _ => None,
        })
        .collect();
    let content = match <[UserContentPart; 1]>::try_from(parts) {
        Ok([UserContentPart::Text(text)]) if text.extras.is_empty() => {
            StringOrArray::Text(text.text)
        }
        Ok([part]) => StringOrArray::Array(vec![part]),
        Err(parts) if parts.is_empty() => return None,
        Err(parts) => StringOrArray::Array(parts),
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

fn export_assistant<'a>(
    assistant: &'a AssistantMessage,
    ids: &mut ExportIds<'a>,
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
            ContentPart::Reasoning(part) if part.origin.format == FORMAT => {
                reasoning.get_or_insert_default().push_str(&part.text);
            }
            ContentPart::ToolCall(call) => {
                let arguments = arguments_text(&call.arguments).into_owned();
                tool_calls.push(AssistantToolCall::Function(MessageToolCall {
                    id: ids.call(&call.id).into_owned(),
                    kind: FunctionType::Function,
                    function: FunctionCall {
                        name: ids.name(&call.name).into_owned(),
                        arguments,
                    },
                    extras: fields_for(&call.extras),
                }));
            }
            ContentPart::Provider(provider)
                if provider.origin.format == FORMAT && is_provider_call(&provider.value) =>
            {
                tool_calls.push(AssistantToolCall::Other(provider.value.clone()));
            }
            ContentPart::Provider(provider) if provider.origin.format == FORMAT => {
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
        Some(StringOrArray::Array(parts))
    } else {
        (!text.is_empty()).then_some(StringOrArray::Text(text))
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

pub(super) fn parse_messages_at(root: &str, messages: &Value) -> Result<Vec<Message>, WireError> {
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
                StringOrArray::Text(text) => text,
                StringOrArray::Array(parts) => parts.into_iter().map(|part| part.text).collect(),
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
                StringOrArray::Text(text) => vec![ContentPart::text(text)],
                StringOrArray::Array(parts) => parts.into_iter().map(user_part).collect(),
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
                StringOrArray::Text(text) => text,
                StringOrArray::Array(parts) => parts.into_iter().map(|part| part.text).collect(),
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
            origin: Origin::new(FORMAT),
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
/// `restore_raw` undoes [`arguments_text`]' wrapper (only for history,
/// not for what the model returns).
pub(super) fn assistant_message(
    message: AssistantChatMessage,
    restore_raw: bool,
) -> AssistantMessage {
    let mut content = Vec::new();
    if let Some(reasoning) = message.reasoning_content {
        content.push(ContentPart::Reasoning(ReasoningPart {
            text: reasoning,
            signature: None,
            redacted: None,
            origin: Origin::new(FORMAT),
            extras: Extras::default(),
        }));
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
                        content.push(ContentPart::Provider(ProviderPart {
                            origin: Origin::new(FORMAT),
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
                origin: Origin::new(FORMAT),
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

/// Undoes the wrapper of [`arguments_text`]: exactly a one-key
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
pub(super) fn is_provider_call(value: &Value) -> bool {
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

/// A message's unknown fields as extras: without its `role` (read as the
/// tag), `null` fields and the response-only `annotations`.
fn message_extras(mut fields: Map<String, Value>) -> Extras {
    fields.remove("role");
    fields.remove("annotations");
    Extras::new(FORMAT, without_nulls(fields))
}
