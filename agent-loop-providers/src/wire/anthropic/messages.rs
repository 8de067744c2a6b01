//! A request's `system` and `messages`: a conversation exported, and
//! parsed back.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::FORMAT;
use super::types::{
    ContentBlock, ImageBlock, ImageSourceParam, MessageParam, RedactedThinkingBlock, Role,
    SystemBlock, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, own_extras,
};
use crate::wire::arguments::{arguments_object, raw_arguments};
use crate::wire::blank_text::{is_blank, join_blank_text};
use crate::wire::decode::{At, Checked, FromMembers, Reading, check_depth, decode, members};
use crate::wire::dropped::{self, Dropped, Place};
use crate::wire::encode::{to_value, to_values};
use crate::wire::error::{WireError, WireErrorKind};
use crate::wire::ids::ExportIds;
use crate::wire::outgoing::Outgoing;
use crate::wire::string_or_array::StringOrArray;
use crate::wire::target::{Target, for_target};
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, Extras, ImagePart, ImageSource, Message, ProviderPart,
    ReasoningPart, SystemMessage, TextPart, ToolCall, ToolResult, UserMessage,
};
use agent_loop_core::support::mint_missing_ids;

/// What [`export_messages`] builds: the request's top-level `system` and
/// its `messages`, as the Messages API reference documents them
/// (<https://docs.anthropic.com/en/api/messages>). Serialises as
/// `{"system"?, "messages"}`, ready to merge into a request body (`model`,
/// `max_tokens`, `tools`, … are the caller's).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ExportedMessages {
    /// The system prompt, for the request's top-level `system` field (the
    /// Messages API has no `system` role): a string, or an array of text
    /// blocks `{"type": "text", "text", "cache_control"?, …}`. `None`
    /// (omitted) when the conversation has no non-blank system message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// The request's `messages` array: each one `{"role": "user" |
    /// "assistant", "content": [blocks]}`, its blocks `text`, `image`,
    /// `tool_use`, `tool_result`, `thinking`, `redacted_thinking` or a
    /// provider block of this format, verbatim.
    pub messages: Vec<Value>,
    /// What the export could not carry (reasoning, provider parts and
    /// extras of another format; images in assistant messages; `thinking`
    /// without a signature; images and provider blocks of an error
    /// result), in conversation order; empty when nothing was left out but
    /// blank text. Not serialised.
    #[serde(skip)]
    pub dropped: Vec<Dropped>,
}

/// The request's top-level `system` and `messages` for a conversation.
///
/// - Every [`Message::System`] goes to [`ExportedMessages::system`]: a
///   string when there is exactly one and it has no Anthropic extras, text
///   blocks (with their `cache_control`) otherwise.
/// - A [`Message::Assistant`] becomes an `assistant` message of blocks in
///   its order: Anthropic reasoning as `thinking` (when signed) or
///   `redacted_thinking`, moved first when the message does not start with
///   one; non-blank text; `tool_use` for each call (ids and names made
///   valid, see the module docs); Anthropic provider parts verbatim. It is
///   left out when nothing remains.
/// - A [`Message::User`] becomes a `user` message of `text`, `image` and
///   Anthropic provider blocks; each [`Message::Tool`] a `tool_result`
///   block (an error result keeps its text only, and one left without
///   content gets the text `The tool call failed.`). Consecutive results, and a user message right after
///   them, share one `user` message, results first. A `user` message left
///   empty is left out.
///
/// Never fails: see the module docs for arguments that are not a JSON
/// object.
pub fn export_messages(conversation: &[Message]) -> ExportedMessages {
    export_messages_for(conversation, &Target::new())
}

/// [`export_messages`] for a request to `target`: reasoning, provider
/// parts and extras its [`Target`] rule refuses are left out too and
/// reported; in particular a signed `thinking` or `redacted_thinking`
/// block goes only to the model that wrote it, when both its origin and
/// the target name a model (Anthropic refuses it on another: "Invalid
/// signature in thinking block"). The Anthropic model exports with its
/// base URL's host and its model name.
pub fn export_messages_for(conversation: &[Message], target: &Target) -> ExportedMessages {
    let exported = export_outgoing(Outgoing::whole(conversation), target);
    ExportedMessages {
        system: exported.system.as_ref().map(to_value),
        messages: to_values(&exported.messages),
        dropped: exported.dropped,
    }
}

/// What [`export_messages`] builds, as the typed blocks it serialises:
/// what a model writes straight into the bytes it posts.
pub(crate) struct TypedExport {
    pub(crate) system: Option<StringOrArray<SystemBlock>>,
    pub(crate) messages: Vec<MessageParam>,
    pub(crate) dropped: Vec<Dropped>,
}

/// [`export_messages_for`] of a model's request, typed: its own system
/// message, then the conversation, neither copied; `dropped` counts
/// messages from the first of `outgoing.rest`.
pub(crate) fn export_outgoing(outgoing: Outgoing<'_>, target: &Target) -> TypedExport {
    let kept = for_target(outgoing.rest, FORMAT, target);
    let mut exported = export_kept(Outgoing {
        lead: outgoing.lead,
        rest: &kept,
    });
    exported.dropped = dropped::report(outgoing.rest, FORMAT, target, takes);
    exported
}

/// The export of `outgoing`, whose content of this format the target
/// takes; without its report.
fn export_kept(outgoing: Outgoing<'_>) -> TypedExport {
    let mut ids = ExportIds::new(FORMAT, outgoing.rest);
    let system = export_system(outgoing);
    let mut messages: Vec<MessageParam> = Vec::new();
    // `true` while the last exported message holds tool results only, so a
    // result or a user message that follows joins it.
    let mut open_results = false;
    for message in outgoing.iter() {
        match message {
            Message::System(_) => {}
            Message::User(user) => {
                let blocks = export_user_parts(&user.content);
                if blocks.is_empty() {
                    continue;
                }
                match messages.last_mut() {
                    Some(last) if open_results => last.content.extend(blocks),
                    _ => messages.push(MessageParam {
                        role: Role::User,
                        content: blocks,
                    }),
                }
                open_results = false;
            }
            Message::Tool(result) => {
                let block = ContentBlock::ToolResult(export_tool_result(result, &mut ids));
                match messages.last_mut() {
                    Some(last) if open_results => last.content.push(block),
                    _ => messages.push(MessageParam {
                        role: Role::User,
                        content: vec![block],
                    }),
                }
                open_results = true;
            }
            Message::Assistant(assistant) => {
                let blocks = export_assistant(assistant, &mut ids);
                if !blocks.is_empty() {
                    messages.push(MessageParam {
                        role: Role::Assistant,
                        content: blocks,
                    });
                }
                open_results = false;
            }
        }
    }
    TypedExport {
        system,
        messages,
        dropped: Vec::new(),
    }
}

/// What this format's export keeps of a part of its own (or of none): no
/// image in an assistant message, no `thinking` without its signature,
/// text only in an error result.
fn takes(place: Place, part: &ContentPart) -> bool {
    match (place, part) {
        (Place::Assistant, ContentPart::Image(_)) => false,
        (Place::Assistant, ContentPart::Reasoning(reasoning)) => {
            reasoning.signature.is_some() || reasoning.redacted.is_some()
        }
        (
            Place::ToolResult { is_error: true },
            ContentPart::Image(_) | ContentPart::Provider(_),
        ) => false,
        _ => true,
    }
}

fn export_system(outgoing: Outgoing<'_>) -> Option<StringOrArray<SystemBlock>> {
    let systems: Vec<&SystemMessage> = outgoing
        .iter()
        .filter_map(|message| match message {
            Message::System(system) if !is_blank(&system.text) => Some(system),
            _ => None,
        })
        .collect();
    match systems.as_slice() {
        [] => None,
        [only] if only.extras.fields_for(FORMAT).is_none() => {
            Some(StringOrArray::Text(only.text.clone()))
        }
        systems => Some(StringOrArray::Array(
            systems
                .iter()
                .map(|system| {
                    SystemBlock::Text(TextBlock {
                        text: system.text.clone(),
                        extras: own_extras(&system.extras, TEXT_FIELDS),
                    })
                })
                .collect(),
        )),
    }
}

const TEXT_FIELDS: &[&str] = &["type", "text"];
const IMAGE_FIELDS: &[&str] = &["type", "source"];
const TOOL_USE_FIELDS: &[&str] = &["type", "id", "name", "input"];
const TOOL_RESULT_FIELDS: &[&str] = &["type", "tool_use_id", "content", "is_error"];
const THINKING_FIELDS: &[&str] = &["type", "thinking", "signature"];
const REDACTED_FIELDS: &[&str] = &["type", "data"];

fn export_text(text: &TextPart) -> Option<ContentBlock> {
    (!is_blank(&text.text)).then(|| {
        ContentBlock::Text(TextBlock {
            text: text.text.clone(),
            extras: own_extras(&text.extras, TEXT_FIELDS),
        })
    })
}

/// `None` for a source this format has no `source` type for: the image is
/// left out, as a part a message cannot carry here is.
fn export_image(image: &ImagePart) -> Option<ContentBlock> {
    let source = match &image.source {
        ImageSource::Base64 { media_type, data } => ImageSourceParam::Base64 {
            media_type: media_type.clone(),
            data: data.clone(),
        },
        ImageSource::Url { url } => ImageSourceParam::Url { url: url.clone() },
        _ => return None,
    };
    Some(ContentBlock::Image(ImageBlock {
        source,
        extras: own_extras(&image.extras, IMAGE_FIELDS),
    }))
}

fn export_provider(part: &ProviderPart) -> Option<ContentBlock> {
    (part.origin.format == FORMAT).then(|| ContentBlock::Other(part.value.clone()))
}

/// Text, images and this format's provider parts: what a user message and
/// a tool result can hold.
fn export_user_parts(parts: &[ContentPart]) -> Vec<ContentBlock> {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => export_text(text),
            ContentPart::Image(image) => export_image(image),
            ContentPart::Provider(provider) => export_provider(provider),
            ContentPart::Reasoning(_) | ContentPart::ToolCall(_) => None,
            // A kind of part this format does not know: left out, like a
            // part a user message cannot carry.
            _ => None,
        })
        .collect()
}

/// The text of an error `tool_result` that would have no content: the API
/// refuses an empty one ("content cannot be empty if `is_error` is true").
const EMPTY_ERROR_TEXT: &str = "The tool call failed.";

fn export_tool_result<'a>(result: &'a ToolResult, ids: &mut ExportIds<'a>) -> ToolResultBlock {
    let mut blocks = export_user_parts(&result.content);
    if result.is_error {
        // "all content must be type 'text' if 'is_error' is true".
        blocks.retain(|block| matches!(block, ContentBlock::Text(_)));
    }
    if result.is_error && blocks.is_empty() {
        blocks.push(ContentBlock::Text(TextBlock {
            text: EMPTY_ERROR_TEXT.to_owned(),
            extras: Map::new(),
        }));
    }
    let content = match blocks.as_mut_slice() {
        [] => None,
        [ContentBlock::Text(text)] if text.extras.is_empty() => {
            Some(StringOrArray::Text(std::mem::take(&mut text.text)))
        }
        _ => Some(StringOrArray::Array(blocks)),
    };
    ToolResultBlock {
        tool_use_id: ids.result(&result.tool_call_id).into_owned(),
        content,
        is_error: result.is_error,
        extras: own_extras(&result.extras, TOOL_RESULT_FIELDS),
    }
}

fn export_assistant<'a>(
    assistant: &'a AssistantMessage,
    ids: &mut ExportIds<'a>,
) -> Vec<ContentBlock> {
    let mut blocks: Vec<ContentBlock> = assistant
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => export_text(text),
            ContentPart::Reasoning(reasoning) => export_reasoning(reasoning),
            ContentPart::ToolCall(call) => Some(ContentBlock::ToolUse(ToolUseBlock {
                id: ids.call(&call.id).into_owned(),
                name: ids.name(&call.name).into_owned(),
                input: arguments_to_input(&call.arguments),
                extras: own_extras(&call.extras, TOOL_USE_FIELDS),
            })),
            ContentPart::Provider(provider) => export_provider(provider),
            ContentPart::Image(_) => None,
            // A kind of part this format does not know: left out, like an
            // image, which an assistant message cannot carry.
            _ => None,
        })
        .collect();
    let has_thinking = blocks.iter().any(is_thinking);
    if has_thinking && !blocks.first().is_some_and(is_thinking) {
        // Stable: thinking blocks first, in their order, then the rest.
        let (mut thinking, rest): (Vec<_>, Vec<_>) = blocks.into_iter().partition(is_thinking);
        thinking.extend(rest);
        blocks = thinking;
    }
    blocks
}

fn is_thinking(block: &ContentBlock) -> bool {
    matches!(
        block,
        ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_)
    )
}

fn export_reasoning(reasoning: &ReasoningPart) -> Option<ContentBlock> {
    if reasoning.origin.format != FORMAT {
        return None;
    }
    if let Some(data) = &reasoning.redacted {
        return Some(ContentBlock::RedactedThinking(RedactedThinkingBlock {
            data: data.clone(),
            extras: own_extras(&reasoning.extras, REDACTED_FIELDS),
        }));
    }
    reasoning.signature.as_ref().map(|signature| {
        ContentBlock::Thinking(ThinkingBlock {
            thinking: reasoning.text.clone(),
            signature: Some(signature.clone()),
            extras: own_extras(&reasoning.extras, THINKING_FIELDS),
        })
    })
}

/// The `input` object for raw arguments text; see the module docs.
pub(super) fn arguments_to_input(arguments: &str) -> Map<String, Value> {
    arguments_object(arguments)
}

/// The arguments text for an `input` object; `restore_raw` undoes
/// [`arguments_to_input`]'s wrapper (only for history, not for what the
/// model returns).
fn input_to_arguments(input: &Map<String, Value>, restore_raw: bool) -> String {
    match restore_raw.then(|| raw_arguments(input)).flatten() {
        Some(raw) => raw.to_owned(),
        // The object's compact serialisation (what `Display` of the JSON
        // value writes), without a copy of it; a map of JSON values always
        // serialises.
        None => serde_json::to_string(input).unwrap_or_default(),
    }
}

#[derive(Deserialize)]
#[serde(expecting = "a content block object")]
struct BlockHead {
    #[serde(rename = "type")]
    kind: String,
}

/// A `tool_result` as read, its content blocks still JSON so each one is
/// parsed with its own path.
#[derive(Deserialize)]
struct RawToolResult {
    tool_use_id: String,
    #[serde(default)]
    content: Option<StringOrArray<Value>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(flatten)]
    extras: Map<String, Value>,
}

/// A block struct with flattened extras.
trait BlockExtras {
    fn extras_mut(&mut self) -> &mut Map<String, Value>;
}

macro_rules! block_extras {
    ($($block:ty),*) => {
        $(impl BlockExtras for $block {
            fn extras_mut(&mut self) -> &mut Map<String, Value> {
                &mut self.extras
            }
        })*
    };
}

block_extras!(
    TextBlock,
    ImageBlock,
    ToolUseBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    RawToolResult
);

impl FromMembers for TextBlock {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        Some(Self {
            text: members::string(&mut members, "text")?,
            extras: members,
        })
    }
}

impl FromMembers for ToolUseBlock {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        let id = members::string(&mut members, "id")?;
        let name = members::string(&mut members, "name")?;
        let Value::Object(input) = members.remove("input")? else {
            return None;
        };
        Some(Self {
            id,
            name,
            input,
            extras: members,
        })
    }
}

impl FromMembers for ThinkingBlock {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        Some(Self {
            thinking: members::string(&mut members, "thinking")?,
            signature: members::optional_string(&mut members, "signature")?,
            extras: members,
        })
    }
}

impl FromMembers for RedactedThinkingBlock {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        Some(Self {
            data: members::string(&mut members, "data")?,
            extras: members,
        })
    }
}

impl FromMembers for ImageBlock {}

impl FromMembers for RawToolResult {}

/// Reads a block struct at `path`. Read directly (not through
/// [`ContentBlock`]'s tag), its `type` lands in the extras: removed.
fn read_block<R: Reading, T: FromMembers + BlockExtras>(
    reading: R,
    path: &dyn fmt::Display,
    value: Value,
) -> Result<T, R::Error> {
    let mut block: T = reading.read_members(FORMAT, path, value)?;
    block.extras_mut().remove("type");
    Ok(block)
}

/// Reads one block at `path`: a modelled `type` must have its documented
/// shape; any other `type` is kept verbatim.
pub(super) fn parse_block<R: Reading>(
    reading: R,
    path: &dyn fmt::Display,
    value: Value,
) -> Result<ContentBlock, R::Error> {
    let head: BlockHead = decode(FORMAT, path, &value)?;
    Ok(match head.kind.as_str() {
        "text" => ContentBlock::Text(read_block(reading, path, value)?),
        "image"
            if matches!(
                value
                    .get("source")
                    .and_then(|source| source.get("type"))
                    .and_then(Value::as_str),
                Some("base64" | "url") | None
            ) =>
        {
            ContentBlock::Image(read_block(reading, path, value)?)
        }
        "tool_use" => ContentBlock::ToolUse(read_block(reading, path, value)?),
        "thinking" => ContentBlock::Thinking(read_block(reading, path, value)?),
        "redacted_thinking" => ContentBlock::RedactedThinking(read_block(reading, path, value)?),
        "tool_result" => {
            let raw: RawToolResult = read_block(reading, path, value)?;
            let content = match raw.content {
                None => None,
                Some(StringOrArray::Text(text)) => Some(StringOrArray::Text(text)),
                Some(StringOrArray::Array(items)) => Some(StringOrArray::Array(
                    items
                        .into_iter()
                        .enumerate()
                        .map(|(index, item)| {
                            let content = At::Field(path, "content");
                            parse_block(reading, &At::Index(&content, index), item)
                        })
                        .collect::<Result<_, _>>()?,
                )),
            };
            ContentBlock::ToolResult(ToolResultBlock {
                tool_use_id: raw.tool_use_id,
                content,
                is_error: raw.is_error.unwrap_or(false),
                extras: raw.extras,
            })
        }
        _ => ContentBlock::Other(value),
    })
}

/// Reads a `content` (string or blocks) at `path`.
pub(super) fn parse_content<R: Reading>(
    reading: R,
    path: &dyn fmt::Display,
    value: Value,
) -> Result<Vec<ContentBlock>, R::Error> {
    let content = match StringOrArray::moved_from(value) {
        Ok(content) => content,
        Err(value) => decode::<StringOrArray<Value>>(FORMAT, path, &value)?,
    };
    match content {
        StringOrArray::Text(text) => Ok(vec![ContentBlock::Text(TextBlock {
            text,
            extras: Map::new(),
        })]),
        StringOrArray::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| parse_block(reading, &At::Index(path, index), item))
            .collect(),
    }
}

fn text_part(block: TextBlock) -> ContentPart {
    let mut part = TextPart::new(block.text);
    part.extras = Extras::new(FORMAT, block.extras);
    ContentPart::Text(part)
}

fn image_part(block: ImageBlock) -> ContentPart {
    let mut part = match block.source {
        ImageSourceParam::Base64 { media_type, data } => ImagePart::base64(media_type, data),
        ImageSourceParam::Url { url } => ImagePart::url(url),
    };
    part.extras = Extras::new(FORMAT, block.extras);
    ContentPart::Image(part)
}

/// A block kept verbatim as a provider part. Re-serialising a parsed block
/// gives back its JSON (its `type` included).
fn provider_part(block: ContentBlock) -> ContentPart {
    let value = match block {
        ContentBlock::Other(value) => value,
        block => to_value(&block),
    };
    ContentPart::Provider(ProviderPart::new(FORMAT, value))
}

/// Text, images and anything else as provider parts: a user message's or a
/// tool result's content.
fn user_part(block: ContentBlock) -> ContentPart {
    match block {
        ContentBlock::Text(text) => text_part(text),
        ContentBlock::Image(image) => image_part(image),
        block => provider_part(block),
    }
}

fn tool_result_message(block: ToolResultBlock) -> Message {
    let content = match block.content {
        None => Vec::new(),
        Some(StringOrArray::Text(text)) => join_blank_text(vec![text_part(TextBlock {
            text,
            extras: Map::new(),
        })]),
        Some(StringOrArray::Array(blocks)) => {
            join_blank_text(blocks.into_iter().map(user_part).collect())
        }
    };
    let mut result = ToolResult::with_content(block.tool_use_id, content, block.is_error);
    result.extras = Extras::new(FORMAT, block.extras);
    Message::Tool(result)
}

/// A user message's blocks: a [`Message::Tool`] per `tool_result` and a
/// [`Message::User`] per run of other blocks left non-empty once blank text
/// is joined ([`join_blank_text`]), in order.
fn push_user(conversation: &mut Vec<Message>, blocks: Vec<ContentBlock>) {
    fn flush(conversation: &mut Vec<Message>, run: &mut Vec<ContentPart>) {
        let parts = join_blank_text(std::mem::take(run));
        if !parts.is_empty() {
            conversation.push(Message::User(UserMessage::new(parts)));
        }
    }
    let mut run: Vec<ContentPart> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult(result) => {
                flush(conversation, &mut run);
                conversation.push(tool_result_message(result));
            }
            block => run.push(user_part(block)),
        }
    }
    flush(conversation, &mut run);
}

/// An assistant message's blocks as parts, in order, blank text joined to
/// its neighbours ([`join_blank_text`]).
pub(super) fn assistant_message(blocks: Vec<ContentBlock>, restore_raw: bool) -> AssistantMessage {
    let content = blocks
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text_part(text),
            ContentBlock::Thinking(thinking) => {
                let mut part = ReasoningPart::new(thinking.thinking, FORMAT);
                part.signature = thinking.signature;
                part.extras = Extras::new(FORMAT, thinking.extras);
                ContentPart::Reasoning(part)
            }
            ContentBlock::RedactedThinking(redacted) => {
                let mut part = ReasoningPart::new(String::new(), FORMAT);
                part.redacted = Some(redacted.data);
                part.extras = Extras::new(FORMAT, redacted.extras);
                ContentPart::Reasoning(part)
            }
            ContentBlock::ToolUse(call) => {
                let arguments = input_to_arguments(&call.input, restore_raw);
                let mut part = ToolCall::new(call.id, call.name, arguments);
                part.extras = Extras::new(FORMAT, call.extras);
                ContentPart::ToolCall(part)
            }
            block => provider_part(block),
        })
        .collect();
    AssistantMessage::new(join_blank_text(content))
}

#[derive(Deserialize)]
#[serde(expecting = "a message object")]
struct RawMessage {
    role: String,
    content: Value,
}

/// Parses a request's `messages` array into a conversation.
///
/// A `user` message's `content` may be a string (one text part) or blocks:
/// `text` → [`ContentPart::Text`] (`citations`, `cache_control` in its
/// extras), `image` with a `base64` or `url` source →
/// [`ContentPart::Image`], `tool_result` → a [`Message::Tool`] of its own
/// (a string content → one text part; blocks → text, image and provider
/// parts; `is_error` missing → `false`), any other block (`document`,
/// `search_result`, …) → a [`ContentPart::Provider`], verbatim. The blocks
/// become, in order, a [`Message::Tool`] per `tool_result` and a
/// [`Message::User`] per run of other blocks.
///
/// An `assistant` message becomes one [`Message::Assistant`] of its blocks
/// in order: `text`, `thinking` and `redacted_thinking` →
/// [`ContentPart::Reasoning`], `tool_use` → [`ContentPart::ToolCall`]
/// (`input` as compact JSON text, `{"_raw_arguments": "<text>"}` back to the
/// text, other fields such as `caller` in its extras), anything else
/// (`server_tool_use`, `web_search_tool_result`, `mcp_tool_use`, …) → a
/// [`ContentPart::Provider`] in place.
///
/// A whitespace-only text block is joined to the nearest text part before
/// it in the same message, else to the one after it, else dropped (see the
/// module docs); a message left with no parts is dropped. Empty or
/// repeated tool call ids get a fresh id, shared with their result.
///
/// # Errors
///
/// [`WireErrorKind::UnknownRole`] for a role other than `user` and
/// `assistant`; [`WireErrorKind::MissingField`] for a missing `role`,
/// `content`, block `type`, or a field a modelled block requires (`text`,
/// `id`, `name`, `input`, `tool_use_id`, `thinking`, `data`, `source`);
/// [`WireErrorKind::WrongType`] for a field of the wrong JSON type (notably
/// an `input` that is not an object). The path names the message and block,
/// e.g. `messages[3].content[1]`.
pub fn parse_messages(messages: &Value) -> Result<Vec<Message>, WireError> {
    check_depth(FORMAT, "messages", messages)?;
    let mut conversation = parse_messages_unminted("messages", messages)?;
    mint_missing_ids(&mut conversation);
    Ok(conversation)
}

/// [`parse_messages`] without minting ids, with error paths rooted at
/// `root`.
pub(super) fn parse_messages_unminted(
    root: &str,
    messages: &Value,
) -> Result<Vec<Message>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, messages)?;
    let mut conversation = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let path = format!("{root}[{index}]");
        let raw: RawMessage = decode(FORMAT, &path, item)?;
        let blocks = parse_content(Checked, &At::Field(&path, "content"), raw.content)?;
        match raw.role.as_str() {
            "user" => push_user(&mut conversation, blocks),
            "assistant" => {
                let assistant = assistant_message(blocks, true);
                if !assistant.content.is_empty() {
                    conversation.push(Message::Assistant(assistant));
                }
            }
            role => {
                return Err(WireError::new(
                    FORMAT,
                    path,
                    WireErrorKind::UnknownRole {
                        role: role.to_owned(),
                    },
                ));
            }
        }
    }
    Ok(conversation)
}

/// Parses a request's top-level `system` (a string, or text blocks) into
/// [`Message::System`]s: one for a string, one per text block (its extras,
/// such as `cache_control`, kept). Blank text is dropped. Error paths are
/// rooted at `root`.
pub(super) fn parse_system(root: &str, system: &Value) -> Result<Vec<Message>, WireError> {
    let blocks = match decode::<StringOrArray<Value>>(FORMAT, root, system)? {
        StringOrArray::Text(text) => vec![TextBlock {
            text,
            extras: Map::new(),
        }],
        StringOrArray::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(index, item)| {
                let path = format!("{root}[{index}]");
                match parse_block(Checked, &path, item)? {
                    ContentBlock::Text(text) => Ok(text),
                    block => Err(WireError::new(
                        FORMAT,
                        path,
                        WireErrorKind::UnknownType {
                            found: block.kind().unwrap_or_default().to_owned(),
                        },
                    )),
                }
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(blocks
        .into_iter()
        .filter(|block| !is_blank(&block.text))
        .map(|block| {
            let mut system = SystemMessage::new(block.text);
            system.extras = Extras::new(FORMAT, block.extras);
            Message::System(system)
        })
        .collect())
}
