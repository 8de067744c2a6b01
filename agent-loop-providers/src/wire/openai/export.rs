//! A request's `messages`: a conversation exported, written from views of
//! what it borrows.
//!
//! Every request of a turn sends the whole conversation again, so the
//! export copies nothing it can borrow: each message is a [`MessageView`]
//! of the conversation's own texts and values, and the only strings it
//! owns are the few the format makes up (a mapped call id, text joined
//! from several parts, wrapped arguments). serde writes the views into
//! either sink: straight into the bytes of the OpenAI model's request body
//! ([`RequestMessages`]), or into the `serde_json::Value`s
//! [`export_messages`] returns. Both go through the one export, so they
//! write the same JSON.

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::FORMAT;
use crate::wire::arguments::arguments_text;
use crate::wire::blank_text::is_blank;
use crate::wire::dropped::{self, Dropped, Place};
use crate::wire::encode::to_value;
use crate::wire::ids::ExportIds;
use crate::wire::outgoing::Outgoing;
use crate::wire::target::{Piece, Target};
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, Extras, ImagePart, ImageSource, Message, ProviderPart,
    ReasoningPart, SystemRole, UserMessage,
};

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
///   `reasoning_content`: this format's reasoning, when it has some (to
///   DeepSeek's API, on every assistant message, `""` when it has none:
///   see [`Target`]);
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
    let outgoing = Outgoing::whole(conversation);
    let mut messages = Vec::with_capacity(outgoing.len());
    let written = write_messages::<Infallible>(outgoing, target, |message| {
        messages.push(to_value(&message));
        Ok(())
    });
    let Ok(()) = written;
    ExportedMessages {
        messages,
        dropped: report(conversation, target),
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

/// The `messages` of the OpenAI model's request: its own system message
/// first, then the conversation from `rest` on, borrowed. Written when
/// serialised, straight into the body's bytes (or into the `Value` of
/// `OpenAiModel::request_body`), as [`export_messages_for`] writes them.
#[cfg(feature = "openai")]
pub(crate) struct RequestMessages<'a> {
    lead: Option<Message>,
    rest: &'a [Message],
    target: &'a Target,
}

#[cfg(feature = "openai")]
impl<'a> RequestMessages<'a> {
    /// `lead` (a system message without extras), then `rest`, for
    /// `target`.
    pub(crate) fn new(lead: Option<Message>, rest: &'a [Message], target: &'a Target) -> Self {
        Self { lead, rest, target }
    }

    /// What the export leaves out, with message indices into `rest` (the
    /// lead has nothing to leave out).
    pub(crate) fn dropped(&self) -> Vec<Dropped> {
        report(self.rest, self.target)
    }
}

#[cfg(feature = "openai")]
impl Serialize for RequestMessages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;

        let outgoing = Outgoing {
            lead: self.lead.as_ref(),
            rest: self.rest,
        };
        // No length: messages left with nothing are not written, and the
        // images of a run of tool results get one of their own.
        let mut seq = serializer.serialize_seq(None)?;
        write_messages(outgoing, self.target, |message| {
            seq.serialize_element(&message)
        })?;
        seq.end()
    }
}

/// What the export of `conversation` to `target` leaves out.
fn report(conversation: &[Message], target: &Target) -> Vec<Dropped> {
    dropped::report(conversation, FORMAT, target, |place, part| match place {
        Place::User => true,
        Place::Assistant => !matches!(part, ContentPart::Image(_)),
        Place::ToolResult { .. } => !matches!(part, ContentPart::Provider(_)),
    })
}

/// Gives each message `outgoing` sends to `target` to `emit`, in order, as
/// the view that writes it; stops at `emit`'s first error.
fn write_messages<'a, E>(
    outgoing: Outgoing<'a>,
    target: &Target,
    mut emit: impl FnMut(MessageView<'a>) -> Result<(), E>,
) -> Result<(), E> {
    let takes = Takes {
        target,
        reasoning_everywhere: target.wants_reasoning_on_every_assistant_message(),
    };
    let mut ids = ExportIds::for_target(FORMAT, target, outgoing.rest);
    // Images of the current run of tool results, for one user message.
    let mut tool_images: Vec<UserPartView<'a>> = Vec::new();
    for message in outgoing.iter() {
        if !matches!(message, Message::Tool(_)) && !tool_images.is_empty() {
            emit(images_message(std::mem::take(&mut tool_images)))?;
        }
        let view = match message {
            Message::System(system) => {
                if is_blank(&system.text) {
                    continue;
                }
                MessageView::System {
                    developer: system.system_role == SystemRole::Developer,
                    content: &system.text,
                    extras: takes.fields(&system.extras),
                }
            }
            Message::User(user) => match user_view(user, &takes) {
                Some(view) => view,
                None => continue,
            },
            Message::Assistant(assistant) => match assistant_view(assistant, &takes, &mut ids) {
                Some(view) => view,
                None => continue,
            },
            Message::Tool(result) => {
                let id = ids.result(&result.tool_call_id);
                let mut images = result
                    .content
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::Image(image) => image_view(image, &takes),
                        _ => None,
                    })
                    .peekable();
                if images.peek().is_some() {
                    tool_images.push(UserPartView::Text {
                        text: Cow::Owned(format!("Images returned by tool call {id}:")),
                        extras: None,
                    });
                    tool_images.extend(images);
                }
                MessageView::Tool {
                    tool_call_id: id,
                    content: non_blank_text(&result.content),
                    extras: takes.fields(&result.extras),
                }
            }
        };
        emit(view)?;
    }
    if !tool_images.is_empty() {
        emit(images_message(tool_images))?;
    }
    Ok(())
}

/// What goes to the target of the provider-specific content of a message:
/// this format's, where the [`Target`] rule takes it. The rest is left
/// out here, and listed by [`report`].
struct Takes<'t> {
    target: &'t Target,
    /// Every assistant message carries `reasoning_content`, `""` when it
    /// has none of this target's: DeepSeek's rule
    /// ([`Target::wants_reasoning_on_every_assistant_message`]).
    reasoning_everywhere: bool,
}

impl Takes<'_> {
    /// The fields of `extras` to write on their object, if any.
    fn fields<'a>(&self, extras: &'a Extras) -> Fields<'a> {
        extras
            .fields_for(FORMAT)
            .filter(|_| self.target.takes_extras(FORMAT, extras))
    }

    fn reasoning(&self, reasoning: &ReasoningPart) -> bool {
        self.target.takes_reasoning(FORMAT, reasoning)
    }

    fn provider(&self, provider: &ProviderPart) -> bool {
        self.target.takes(FORMAT, &provider.origin, Piece::Other)
    }
}

fn images_message(parts: Vec<UserPartView<'_>>) -> MessageView<'_> {
    MessageView::User {
        content: UserContent::Parts(parts),
        extras: None,
    }
}

fn user_view<'a>(user: &'a UserMessage, takes: &Takes<'_>) -> Option<MessageView<'a>> {
    let mut parts = user.content.iter().filter_map(|part| match part {
        ContentPart::Text(text) if !is_blank(&text.text) => Some(UserPartView::Text {
            text: Cow::Borrowed(&text.text),
            extras: takes.fields(&text.extras),
        }),
        ContentPart::Image(image) => image_view(image, takes),
        ContentPart::Provider(provider) if takes.provider(provider) => {
            Some(UserPartView::Other(&provider.value))
        }
        _ => None,
    });
    let first = parts.next()?;
    let content = match (first, parts.next()) {
        // One text part without extras goes as a string.
        (
            UserPartView::Text {
                text: Cow::Borrowed(text),
                extras: None,
            },
            None,
        ) => UserContent::Text(text),
        (first, None) => UserContent::Parts(vec![first]),
        (first, Some(second)) => {
            let mut all = vec![first, second];
            all.extend(parts);
            UserContent::Parts(all)
        }
    };
    Some(MessageView::User {
        content,
        extras: takes.fields(&user.extras),
    })
}

/// `None` for a source this format has no `image_url` for: the image is
/// left out, as a part a message cannot carry here is.
fn image_view<'a>(image: &'a ImagePart, takes: &Takes<'_>) -> Option<UserPartView<'a>> {
    let url = match &image.source {
        ImageSource::Url { url } => ImageUrl::Url(url),
        ImageSource::Base64 { media_type, data } => ImageUrl::Data { media_type, data },
        _ => return None,
    };
    Some(UserPartView::Image {
        url,
        extras: takes.fields(&image.extras),
    })
}

fn assistant_view<'a>(
    assistant: &'a AssistantMessage,
    takes: &Takes<'_>,
    ids: &mut ExportIds<'a>,
) -> Option<MessageView<'a>> {
    let text = non_blank_text(&assistant.content);
    // With a provider content part, `content` is an array of the text
    // parts and such parts in order; without one (nearly always), it is
    // the text alone and no array is built.
    let has_provider_content = assistant.content.iter().any(|part| {
        matches!(part, ContentPart::Provider(provider)
            if takes.provider(provider) && !is_provider_call(&provider.value))
    });
    let mut parts: Vec<AssistantPartView<'a>> = Vec::new();
    let mut reasoning: Option<Cow<'a, str>> = None;
    let mut tool_calls = Vec::new();
    for part in &assistant.content {
        match part {
            ContentPart::Text(text) if has_provider_content && !is_blank(&text.text) => {
                parts.push(AssistantPartView::Text(&text.text));
            }
            ContentPart::Reasoning(part) if takes.reasoning(part) => match &mut reasoning {
                None => reasoning = Some(Cow::Borrowed(&part.text)),
                Some(joined) => joined.to_mut().push_str(&part.text),
            },
            ContentPart::ToolCall(call) => tool_calls.push(ToolCallView::Function {
                id: ids.call(&call.id),
                name: ids.name(&call.name),
                arguments: arguments_text(&call.arguments),
                extras: takes.fields(&call.extras),
            }),
            ContentPart::Provider(provider) if takes.provider(provider) => {
                if is_provider_call(&provider.value) {
                    tool_calls.push(ToolCallView::Other(&provider.value));
                } else {
                    parts.push(AssistantPartView::Other(&provider.value));
                }
            }
            _ => {}
        }
    }
    if text.is_empty() && tool_calls.is_empty() && !has_provider_content {
        return None;
    }
    if takes.reasoning_everywhere && reasoning.is_none() {
        reasoning = Some(Cow::Borrowed(""));
    }
    let content = if has_provider_content {
        Some(AssistantContent::Parts(parts))
    } else {
        (!text.is_empty()).then_some(AssistantContent::Text(text))
    };
    // A `refusal` (kept in the extras when parsed) goes back from there,
    // under its own name.
    Some(MessageView::Assistant {
        content,
        reasoning_content: reasoning,
        tool_calls,
        extras: takes.fields(&assistant.extras),
    })
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

/// The non-blank text parts of `parts`, concatenated with no separator:
/// borrowed when there is at most one.
fn non_blank_text(parts: &[ContentPart]) -> Cow<'_, str> {
    let mut texts = parts.iter().filter_map(|part| match part {
        ContentPart::Text(text) if !is_blank(&text.text) => Some(text.text.as_str()),
        _ => None,
    });
    let Some(first) = texts.next() else {
        return Cow::Borrowed("");
    };
    match texts.next() {
        None => Cow::Borrowed(first),
        Some(second) => {
            let mut joined = String::from(first);
            joined.push_str(second);
            joined.extend(texts);
            Cow::Owned(joined)
        }
    }
}

/// The provider fields written on an object, after its own.
pub(super) type Fields<'a> = Option<&'a Map<String, Value>>;

/// One element of a request's `messages` array, tagged by `role`
/// ([reference](https://platform.openai.com/docs/api-reference/chat/create#chat-create-messages)),
/// as the conversation's view.
enum MessageView<'a> {
    /// `{"role": "system" | "developer", "content"}`.
    System {
        /// `developer`: OpenAI's name for the system message since its
        /// reasoning models.
        developer: bool,
        content: &'a str,
        extras: Fields<'a>,
    },
    /// `{"role": "user", "content"}`.
    User {
        content: UserContent<'a>,
        extras: Fields<'a>,
    },
    /// `{"role": "assistant", "content", "reasoning_content"?,
    /// "tool_calls"?}`: `content` written as `null` when `None`,
    /// `reasoning_content` left out when `None` and `tool_calls` when
    /// empty, as the API expects.
    Assistant {
        content: Option<AssistantContent<'a>>,
        reasoning_content: Option<Cow<'a, str>>,
        tool_calls: Vec<ToolCallView<'a>>,
        extras: Fields<'a>,
    },
    /// `{"role": "tool", "tool_call_id", "content"}`.
    Tool {
        tool_call_id: Cow<'a, str>,
        content: Cow<'a, str>,
        extras: Fields<'a>,
    },
}

/// A user message's `content`: a string, or an array of parts.
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<UserPartView<'a>>),
}

/// One part of a user message's content array.
enum UserPartView<'a> {
    /// `{"type": "text", "text"}`.
    Text {
        text: Cow<'a, str>,
        extras: Fields<'a>,
    },
    /// `{"type": "image_url", "image_url": {"url", ...}}`, the extras in
    /// `image_url` (`detail`).
    Image {
        url: ImageUrl<'a>,
        extras: Fields<'a>,
    },
    /// A provider part (`input_audio`, `file`), verbatim.
    Other(&'a Value),
}

/// An image's `url`: a web URL, or a `data:` URL of inline data, written
/// in pieces (an image is often the largest piece of a conversation).
enum ImageUrl<'a> {
    Url(&'a str),
    Data { media_type: &'a str, data: &'a str },
}

/// An assistant message's `content`: its text, or an array of text parts
/// and provider content parts.
enum AssistantContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<AssistantPartView<'a>>),
}

/// One part of an assistant message's content array.
enum AssistantPartView<'a> {
    /// `{"type": "text", "text"}` (a text part's extras are not written).
    Text(&'a str),
    /// A provider content part (Mistral's `thinking`), verbatim.
    Other(&'a Value),
}

/// One element of an assistant message's `tool_calls`.
enum ToolCallView<'a> {
    /// `{"id", "type": "function", "function": {"name", "arguments"}}`.
    Function {
        id: Cow<'a, str>,
        name: Cow<'a, str>,
        arguments: Cow<'a, str>,
        extras: Fields<'a>,
    },
    /// A provider call (`custom`), verbatim.
    Other(&'a Value),
}

/// Writes one JSON object: its own fields, then its extras. An own field
/// the extras hold too is left to them: the typed structs this export
/// replaced wrote their extras last (serde's `flatten`) into a `Value`
/// map, where the later key wins, and a request must not carry a key
/// twice.
pub(super) struct Object<'e, M> {
    map: M,
    extras: Fields<'e>,
}

impl<'e, M: SerializeMap> Object<'e, M> {
    pub(super) fn begin<S>(serializer: S, extras: Fields<'e>) -> Result<Self, S::Error>
    where
        S: Serializer<SerializeMap = M, Error = M::Error>,
    {
        Ok(Self {
            map: serializer.serialize_map(None)?,
            extras,
        })
    }

    pub(super) fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        if self.extras.is_some_and(|extras| extras.contains_key(key)) {
            return Ok(());
        }
        self.map.serialize_entry(key, value)
    }

    pub(super) fn end(mut self) -> Result<M::Ok, M::Error> {
        for (key, value) in self.extras.into_iter().flatten() {
            self.map.serialize_entry(key, value)?;
        }
        self.map.end()
    }
}

impl Serialize for MessageView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::System {
                developer,
                content,
                extras,
            } => {
                let mut object = Object::begin(serializer, *extras)?;
                object.field("role", if *developer { "developer" } else { "system" })?;
                object.field("content", content)?;
                object.end()
            }
            Self::User { content, extras } => {
                let mut object = Object::begin(serializer, *extras)?;
                object.field("role", "user")?;
                object.field("content", content)?;
                object.end()
            }
            Self::Assistant {
                content,
                reasoning_content,
                tool_calls,
                extras,
            } => {
                let mut object = Object::begin(serializer, *extras)?;
                object.field("role", "assistant")?;
                object.field("content", content)?;
                if let Some(reasoning) = reasoning_content {
                    object.field("reasoning_content", reasoning)?;
                }
                if !tool_calls.is_empty() {
                    object.field("tool_calls", tool_calls)?;
                }
                object.end()
            }
            Self::Tool {
                tool_call_id,
                content,
                extras,
            } => {
                let mut object = Object::begin(serializer, *extras)?;
                object.field("role", "tool")?;
                object.field("tool_call_id", tool_call_id)?;
                object.field("content", content)?;
                object.end()
            }
        }
    }
}

impl Serialize for UserContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Parts(parts) => serializer.collect_seq(parts),
        }
    }
}

impl Serialize for UserPartView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text { text, extras } => text_part(serializer, text, *extras),
            Self::Image { url, extras } => {
                let mut object = Object::begin(serializer, None)?;
                object.field("type", "image_url")?;
                object.field(
                    "image_url",
                    &ImageUrlObject {
                        url,
                        extras: *extras,
                    },
                )?;
                object.end()
            }
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

/// The `image_url` object of an image part: `{"url", ...extras}`.
struct ImageUrlObject<'v, 'a> {
    url: &'v ImageUrl<'a>,
    extras: Fields<'a>,
}

impl Serialize for ImageUrlObject<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = Object::begin(serializer, self.extras)?;
        object.field("url", self.url)?;
        object.end()
    }
}

impl Serialize for ImageUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Url(url) => serializer.serialize_str(url),
            Self::Data { media_type, data } => {
                serializer.collect_str(&DataUrl { media_type, data })
            }
        }
    }
}

/// `data:<media type>;base64,<data>`, written without building the string.
struct DataUrl<'a> {
    media_type: &'a str,
    data: &'a str,
}

impl fmt::Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "data:{};base64,{}", self.media_type, self.data)
    }
}

impl Serialize for AssistantContent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => serializer.serialize_str(text),
            Self::Parts(parts) => serializer.collect_seq(parts),
        }
    }
}

impl Serialize for AssistantPartView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text(text) => text_part(serializer, text, None),
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

/// `{"type": "text", "text", ...extras}`.
fn text_part<S: Serializer>(
    serializer: S,
    text: &str,
    extras: Fields<'_>,
) -> Result<S::Ok, S::Error> {
    let mut object = Object::begin(serializer, extras)?;
    object.field("type", "text")?;
    object.field("text", text)?;
    object.end()
}

impl Serialize for ToolCallView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Function {
                id,
                name,
                arguments,
                extras,
            } => {
                let mut object = Object::begin(serializer, *extras)?;
                object.field("id", id)?;
                object.field("type", "function")?;
                object.field("function", &FunctionView { name, arguments })?;
                object.end()
            }
            Self::Other(value) => value.serialize(serializer),
        }
    }
}

/// The `function` of a tool call: `{"name", "arguments"}`.
#[derive(Serialize)]
struct FunctionView<'v> {
    name: &'v str,
    arguments: &'v str,
}
