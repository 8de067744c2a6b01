//! A request's `input` items: a conversation exported, and parsed back.

use std::borrow::Cow;
use std::fmt;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value, json};

use super::FORMAT;
use crate::wire::arguments::{RAW_ARGUMENTS_KEY, arguments_text, raw_arguments};
use crate::wire::blank_text::{is_blank, join_blank_text};
use crate::wire::decode::{At, Checked, FromMembers, Reading, check_depth, decode, members};
use crate::wire::dropped::{Dropped, Place, report};
use crate::wire::encode::to_value;
use crate::wire::error::{WireError, WireErrorKind};
use crate::wire::ids::ExportIds;
use crate::wire::string_or_array::StringOrArray;
use crate::wire::target::{Target, for_target, refuses_part};
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, Extras, ImagePart, ImageSource, Message, ProviderPart,
    ReasoningPart, SystemMessage, SystemRole, TextPart, ToolCall, ToolResult, UserMessage,
};
use agent_loop_core::support::mint_missing_ids;

/// The key of a text part's [`Extras`] that holds the fields of the
/// `message` item the part opens (`id`, `status`, `type`, `phase`): the
/// first text part of each assistant `message` item carries it, so that
/// an export writes the items back as they were split.
pub(super) const ITEM_KEY: &str = "item";

/// The key of an [`AssistantMessage`]'s extras that holds the id of the
/// `response` it came from (`resp_…`), for `previous_response_id`.
pub const RESPONSE_ID_KEY: &str = "response_id";

/// What [`export_messages`] builds: the request's `input` items, and what
/// the export left out.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ExportedInput {
    /// The request's `input` array: `message` items (`{"role", "content"}`,
    /// roles `system`, `developer`, `user` and `assistant`), `reasoning`,
    /// `function_call` and `function_call_output` items, and this format's
    /// provider items verbatim, in conversation order.
    pub input: Vec<Value>,
    /// What the conversation holds that the export left out: reasoning,
    /// provider parts and extras of another format, images in assistant
    /// messages, reasoning that cannot be sent (no item `id`, or no item
    /// after it). Blank text is left out unreported.
    pub dropped: Vec<Dropped>,
}

/// The request's `input` items for a conversation.
///
/// - [`Message::System`] → `{"role": "system" | "developer", "content"}`:
///   its text, or the parts its extras keep (see [`parse_messages`]).
/// - [`Message::User`] → `{"role": "user", "content"}`: a string for one
///   text part without extras, else `input_text` and `input_image` parts
///   (an inline image as a `data:` URL, `detail` `"auto"` unless the part
///   says otherwise: the API requires it) and this format's provider parts.
/// - [`Message::Assistant`] → its items in part order: this format's
///   reasoning as a `reasoning` item (`id`, `summary`, `encrypted_content`),
///   each run of text as an assistant `message` item (split where the
///   parsed items were), each call as a `function_call` item (`call_id`,
///   `name`, `arguments`), this format's provider parts verbatim. A
///   reasoning item without an `id` (the API requires one) or with no item
///   after it in its message (the API answers 400 to a reasoning item
///   without its following item) is left out; when none of the message's
///   reasoning goes out, its `function_call` and `message` items go
///   without their `id` (the API answers 400 to an `fc_…` id sent without
///   its reasoning).
/// - [`Message::Tool`] → `{"type": "function_call_output", "call_id",
///   "output"}`: a string for text only, else `input_text` and
///   `input_image` parts.
///
/// Call ids longer than 64 characters (the `call_id` limit of
/// `function_call_output`) and names that break `^[a-zA-Z0-9_-]{1,64}$`
/// are mapped to valid ones, the same for a call and its result.
/// Arguments: blank as `{}`, text that is not a JSON object as
/// `{"_raw_arguments": "<the text>"}` (see the module docs). Blank text is
/// never written.
pub fn export_messages(conversation: &[Message]) -> ExportedInput {
    export(conversation, false, &Target::new())
}

/// [`export_messages`] for a request to `target`: reasoning (its
/// `encrypted_content` with it), provider items and extras (response and
/// item ids among them) that its [`Target`] rule refuses are left out too
/// and reported. `model::OpenAiResponsesModel` exports with the host of
/// its base URL and its model name, stateless by default (see
/// [`export_messages_stateless_for`]).
pub fn export_messages_for(conversation: &[Message], target: &Target) -> ExportedInput {
    export(conversation, false, target)
}

/// [`export_messages`] for a request with `store: false` (what
/// `model::OpenAiResponsesModel` (feature `openai`) sends by
/// default): a reasoning item without its `encrypted_content` is left out
/// too (and reported), and its message's items go without their `id`s.
/// Nothing is stored then, so OpenAI cannot look a bare `rs_…` id up, and
/// answers 400 "Item with id 'rs_…' not found. Items are not persisted
/// when `store` is set to false".
pub fn export_messages_stateless(conversation: &[Message]) -> ExportedInput {
    export(conversation, true, &Target::new())
}

/// [`export_messages_stateless`] for a request to `target`, by the rule of
/// [`export_messages_for`].
pub fn export_messages_stateless_for(conversation: &[Message], target: &Target) -> ExportedInput {
    export(conversation, true, target)
}

fn export(conversation: &[Message], stateless: bool, target: &Target) -> ExportedInput {
    let (input, dropped) = export_input(conversation, stateless, target);
    ExportedInput {
        input: input.iter().map(to_value).collect(),
        dropped,
    }
}

/// The `input` [`export`] writes, as the items a request serialises
/// straight into its body, and what it leaves out.
pub(crate) fn export_input<'c>(
    conversation: &'c [Message],
    stateless: bool,
    target: &Target,
) -> (Vec<InputItem<'c>>, Vec<Dropped>) {
    let kept = for_target(conversation, FORMAT, target);
    let (input, left_out) = match &kept {
        Cow::Borrowed(kept) => export_kept(kept, stateless),
        Cow::Owned(owned) => {
            // Views of a copy cannot outlive it: its items are written out.
            let (input, left_out) = export_kept(owned, stateless);
            let input = input
                .iter()
                .map(|item| match to_value(item) {
                    Value::Object(item) => InputItem::Json(item),
                    _ => InputItem::Json(Map::new()),
                })
                .collect();
            (input, originals(conversation, owned, target, &left_out))
        }
    };
    let dropped = report(conversation, FORMAT, target, |_, part| {
        !left_out.contains(&std::ptr::from_ref(part))
    });
    (input, dropped)
}

/// One item of a request's `input`: built as JSON, or, for the items
/// every turn of tool calls sends (a user's text, a function call, its
/// output), a view of the conversation written as that JSON would be.
pub(crate) enum InputItem<'a> {
    Json(Map<String, Value>),
    /// `{"role": "user", "content": "<text>"}`.
    User {
        content: &'a str,
        extras: Option<&'a Map<String, Value>>,
    },
    /// `{"type": "function_call", "call_id", "name", "arguments"}`; its
    /// item `id` (in the extras) written only when `id`.
    Call {
        call_id: Cow<'a, str>,
        name: Cow<'a, str>,
        arguments: Cow<'a, str>,
        extras: Option<&'a Map<String, Value>>,
        id: bool,
    },
    /// `{"type": "function_call_output", "call_id", "output": "<text>"}`.
    Output {
        call_id: Cow<'a, str>,
        output: &'a str,
        extras: Option<&'a Map<String, Value>>,
    },
}

const USER_FIELDS: &[&str] = &["role", "content"];
const CALL_FIELDS: &[&str] = &["type", "call_id", "name", "arguments"];
const OUTPUT_FIELDS: &[&str] = &["type", "call_id", "output"];

impl Serialize for InputItem<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // The item's own fields, then the extras that repeat none of them
        // (as `own_extras` keeps them).
        let extras = |map: &mut S::SerializeMap,
                      extras: Option<&Map<String, Value>>,
                      modelled: &[&str],
                      id: bool|
         -> Result<(), S::Error> {
            for (key, value) in extras.into_iter().flatten() {
                if !modelled.contains(&key.as_str()) && (id || key != "id") {
                    map.serialize_entry(key, value)?;
                }
            }
            Ok(())
        };
        match self {
            Self::Json(item) => item.serialize(serializer),
            Self::User {
                content,
                extras: fields,
            } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("role", "user")?;
                map.serialize_entry("content", content)?;
                extras(&mut map, *fields, USER_FIELDS, true)?;
                map.end()
            }
            Self::Call {
                call_id,
                name,
                arguments,
                extras: fields,
                id,
            } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("type", "function_call")?;
                map.serialize_entry("call_id", call_id)?;
                map.serialize_entry("name", name)?;
                map.serialize_entry("arguments", arguments)?;
                extras(&mut map, *fields, CALL_FIELDS, *id)?;
                map.end()
            }
            Self::Output {
                call_id,
                output,
                extras: fields,
            } => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("type", "function_call_output")?;
                map.serialize_entry("call_id", call_id)?;
                map.serialize_entry("output", output)?;
                extras(&mut map, *fields, OUTPUT_FIELDS, true)?;
                map.end()
            }
        }
    }
}

impl InputItem<'_> {
    /// `true` for an item the API pairs with the reasoning before it
    /// (see [`pairs_with_reasoning`]).
    fn pairs_with_reasoning(&self) -> bool {
        match self {
            Self::Json(item) => pairs_with_reasoning(item),
            Self::Call { .. } => true,
            Self::User { .. } | Self::Output { .. } => false,
        }
    }

    /// Leaves the item's `id` out.
    fn remove_id(&mut self) {
        match self {
            Self::Json(item) => {
                item.remove("id");
            }
            Self::Call { id, .. } => *id = false,
            Self::User { .. } | Self::Output { .. } => {}
        }
    }
}

/// The one text a user message or a function call's output is written
/// as, by [`content_value`]: its parts, blank text aside, are one text
/// part without extras of this format, and nothing else that is written.
/// `None` for content of any other shape (written as JSON).
fn plain_text(parts: &[ContentPart]) -> Option<&str> {
    let mut text = None;
    for part in parts {
        match part {
            ContentPart::Text(part) if is_blank(&part.text) => {}
            ContentPart::Text(part)
                if text.is_none() && own_fields_empty(&part.extras, TEXT_FIELDS) =>
            {
                text = Some(part.text.as_str());
            }
            part if written_user_part(part) => return None,
            _ => {}
        }
    }
    text
}

const TEXT_FIELDS: &[&str] = &["type", "text"];

/// `true` when [`own_extras`] of `extras` would be empty.
fn own_fields_empty(extras: &Extras, modelled: &[&str]) -> bool {
    extras
        .fields_for(FORMAT)
        .is_none_or(|fields| fields.keys().all(|key| modelled.contains(&key.as_str())))
}

/// `true` for a part [`export_user_parts`] writes (blank text aside).
fn written_user_part(part: &ContentPart) -> bool {
    match part {
        ContentPart::Text(_) | ContentPart::Image(_) => true,
        ContentPart::Provider(provider) => {
            provider.origin.format == FORMAT
                && provider.value.get("type").is_some_and(Value::is_string)
        }
        _ => false,
    }
}

/// Records the parts of `parts` that [`export_user_parts`] leaves out.
fn left_out_user_parts(parts: &[ContentPart], left_out: &mut Vec<*const ContentPart>) {
    for part in parts {
        if !written_user_part(part) {
            left_out.push(std::ptr::from_ref(part));
        }
    }
}

/// The parts of `conversation` whose copies in `kept` (what
/// [`for_target`] left of it) are `left_out`: `kept` holds the same
/// messages, each with the parts the target refuses removed, in order.
fn originals(
    conversation: &[Message],
    kept: &[Message],
    target: &Target,
    left_out: &[*const ContentPart],
) -> Vec<*const ContentPart> {
    let mut found = Vec::new();
    for (original, copy) in conversation.iter().zip(kept) {
        let taken = original
            .extras_and_content()
            .1
            .iter()
            .filter(|part| !refuses_part(target, FORMAT, part));
        for (part, copied) in taken.zip(copy.extras_and_content().1) {
            if left_out.contains(&std::ptr::from_ref(copied)) {
                found.push(std::ptr::from_ref(part));
            }
        }
    }
    found
}

/// The `input` of a conversation the target takes whole, and the parts
/// the format's own rules left out.
fn export_kept(
    conversation: &[Message],
    stateless: bool,
) -> (Vec<InputItem<'_>>, Vec<*const ContentPart>) {
    let mut ids = ExportIds::new(FORMAT, conversation);
    let mut left_out: Vec<*const ContentPart> = Vec::new();
    let mut input = Vec::new();
    for message in conversation {
        match message {
            Message::System(system) => {
                if let Some(Value::Object(item)) = export_system(system) {
                    input.push(InputItem::Json(item));
                }
            }
            Message::User(user) => {
                if let Some(content) = plain_text(&user.content) {
                    left_out_user_parts(&user.content, &mut left_out);
                    input.push(InputItem::User {
                        content,
                        extras: user.extras.fields_for(FORMAT),
                    });
                    continue;
                }
                let parts = export_user_parts(&user.content, Place::User, &mut left_out);
                if parts.is_empty() {
                    continue;
                }
                let mut item = own_extras(&user.extras, USER_FIELDS);
                item.insert("role".into(), json!("user"));
                item.insert("content".into(), content_value(parts));
                input.push(InputItem::Json(item));
            }
            Message::Assistant(assistant) => {
                input.extend(export_assistant(
                    assistant,
                    &mut ids,
                    &mut left_out,
                    stateless,
                ));
            }
            Message::Tool(result) => {
                let written = result.content.iter().any(|part| {
                    written_user_part(part)
                        && !matches!(part, ContentPart::Text(text) if is_blank(&text.text))
                });
                let plain = if written {
                    plain_text(&result.content)
                } else {
                    Some("")
                };
                if let Some(output) = plain {
                    left_out_user_parts(&result.content, &mut left_out);
                    input.push(InputItem::Output {
                        call_id: ids.result(&result.tool_call_id),
                        output,
                        extras: result.extras.fields_for(FORMAT),
                    });
                    continue;
                }
                let place = Place::ToolResult {
                    is_error: result.is_error,
                };
                let parts = export_user_parts(&result.content, place, &mut left_out);
                let mut item = own_extras(&result.extras, OUTPUT_FIELDS);
                item.insert("type".into(), json!("function_call_output"));
                item.insert("call_id".into(), json!(ids.result(&result.tool_call_id)));
                let output = if parts.is_empty() {
                    Value::String(String::new())
                } else {
                    content_value(parts)
                };
                item.insert("output".into(), output);
                input.push(InputItem::Json(item));
            }
        }
    }
    (input, left_out)
}

/// The extras of this format, without the fields the item models (a
/// hand-built [`Extras`] could repeat them).
pub(super) fn own_extras(extras: &Extras, modelled: &[&str]) -> Map<String, Value> {
    extras
        .fields_for(FORMAT)
        .map(|fields| {
            fields
                .iter()
                .filter(|(key, _)| !modelled.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn export_system(system: &SystemMessage) -> Option<Value> {
    let mut item = own_extras(&system.extras, &["role"]);
    // A `content` of parts that is not plain text rides in the extras, as
    // `parse_input_message` wrote it.
    if !item.contains_key("content") {
        if is_blank(&system.text) {
            return None;
        }
        item.insert("content".into(), json!(system.text));
    }
    let role = match system.system_role {
        SystemRole::System => "system",
        SystemRole::Developer => "developer",
    };
    item.insert("role".into(), json!(role));
    Some(Value::Object(item))
}

/// A `content` (or `output`) value: a string for one plain `input_text`,
/// else the parts.
fn content_value(mut parts: Vec<Value>) -> Value {
    if let [Value::Object(only)] = parts.as_mut_slice()
        && only.len() == 2
        && only.get("type").and_then(Value::as_str) == Some("input_text")
        && let Some(Value::String(text)) = only.remove("text")
    {
        return Value::String(text);
    }
    Value::Array(parts)
}

/// `input_text`, `input_image` and this format's provider parts: what a
/// user message and a function call's output hold. Parts left out are
/// recorded in `left_out` (blank text is not).
fn export_user_parts(
    parts: &[ContentPart],
    _place: Place,
    left_out: &mut Vec<*const ContentPart>,
) -> Vec<Value> {
    let mut exported = Vec::new();
    for part in parts {
        match part {
            ContentPart::Text(text) => {
                if !is_blank(&text.text) {
                    let mut fields = own_extras(&text.extras, &["type", "text"]);
                    fields.insert("type".into(), json!("input_text"));
                    fields.insert("text".into(), json!(text.text));
                    exported.push(Value::Object(fields));
                }
            }
            ContentPart::Image(image) => match export_image(image) {
                Some(image) => exported.push(image),
                None => left_out.push(std::ptr::from_ref(part)),
            },
            // A part of this format goes back as it came: an object with a
            // `type` (as parsing makes them).
            ContentPart::Provider(provider)
                if provider.origin.format == FORMAT
                    && provider.value.get("type").is_some_and(Value::is_string) =>
            {
                exported.push(provider.value.clone());
            }
            part => left_out.push(std::ptr::from_ref(part)),
        }
    }
    exported
}

/// `None` for a source this format has no `image_url` for: the image is
/// left out, as a part a message cannot carry here is.
fn export_image(image: &ImagePart) -> Option<Value> {
    let url = match &image.source {
        ImageSource::Url { url } => url.clone(),
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        _ => return None,
    };
    let mut fields = own_extras(&image.extras, &["type", "image_url"]);
    fields.insert("type".into(), json!("input_image"));
    fields.insert("image_url".into(), json!(url));
    // Required by `InputImageContent`; parsing reads `"auto"` as no extra.
    fields.entry("detail").or_insert_with(|| json!("auto"));
    Some(Value::Object(fields))
}

/// One item of an assistant message's export, before the reasoning rules
/// are applied.
struct Pending<'a> {
    item: InputItem<'a>,
    /// The part it came from (the first text part of a `message` item).
    part: *const ContentPart,
    reasoning: bool,
}

/// The assistant `message` item being written: its fields, the part that
/// opened it, its `output_text` parts.
type OpenMessage = (Map<String, Value>, *const ContentPart, Vec<Value>);

/// Closes the open `message` item: `content` a string for one plain
/// text, else its parts.
fn flush_message(items: &mut Vec<Pending<'_>>, message: &mut Option<OpenMessage>) {
    let Some((mut item, part, content)) = message.take() else {
        return;
    };
    let content = match <[Value; 1]>::try_from(content) {
        Ok([Value::Object(mut only)]) if only.len() == 2 => only.remove("text").unwrap_or_default(),
        Ok([only]) => Value::Array(vec![only]),
        Err(content) if content.is_empty() => return,
        Err(content) => Value::Array(content),
    };
    item.insert("role".into(), json!("assistant"));
    item.insert("content".into(), content);
    items.push(Pending {
        item: InputItem::Json(item),
        part,
        reasoning: false,
    });
}

fn export_assistant<'a>(
    assistant: &'a AssistantMessage,
    ids: &mut ExportIds<'a>,
    left_out: &mut Vec<*const ContentPart>,
    stateless: bool,
) -> Vec<InputItem<'a>> {
    let mut items: Vec<Pending<'a>> = Vec::new();
    let mut message: Option<OpenMessage> = None;
    for part in &assistant.content {
        let at = std::ptr::from_ref(part);
        if let ContentPart::Text(text) = part {
            if is_blank(&text.text) {
                continue;
            }
            let mut fields = own_extras(&text.extras, &["type", "text"]);
            let opens = fields.remove(ITEM_KEY);
            if opens.is_some() || message.is_none() {
                flush_message(&mut items, &mut message);
                let item = match opens {
                    Some(Value::Object(item)) => item,
                    _ => Map::new(),
                };
                message = Some((item, at, Vec::new()));
            }
            fields.insert("type".into(), json!("output_text"));
            fields.insert("text".into(), json!(text.text));
            if let Some((_, _, content)) = &mut message {
                content.push(Value::Object(fields));
            }
            continue;
        }
        flush_message(&mut items, &mut message);
        match part {
            ContentPart::Reasoning(reasoning) if reasoning.origin.format == FORMAT => {
                match export_reasoning(reasoning, stateless) {
                    Some(item) => items.push(Pending {
                        item: InputItem::Json(item),
                        part: at,
                        reasoning: true,
                    }),
                    None => left_out.push(at),
                }
            }
            ContentPart::ToolCall(call) => {
                items.push(Pending {
                    item: InputItem::Call {
                        call_id: ids.call(&call.id),
                        name: ids.name(&call.name),
                        arguments: arguments_text(&call.arguments),
                        extras: call.extras.fields_for(FORMAT),
                        id: true,
                    },
                    part: at,
                    reasoning: false,
                });
            }
            ContentPart::Provider(provider) if provider.origin.format == FORMAT => {
                if let Value::Object(item) = &provider.value
                    && is_model_item(item)
                {
                    items.push(Pending {
                        reasoning: item.get("type").and_then(Value::as_str) == Some("reasoning"),
                        item: InputItem::Json(item.clone()),
                        part: at,
                    });
                } else {
                    left_out.push(at);
                }
            }
            _ => left_out.push(at),
        }
    }
    flush_message(&mut items, &mut message);
    // A reasoning item must be followed by the item it preceded: trailing
    // reasoning has none.
    while items.last().is_some_and(|item| item.reasoning) {
        if let Some(item) = items.pop() {
            left_out.push(item.part);
        }
    }
    // Nor has one followed by another reasoning item: OpenAI sometimes
    // answers two in a row, and refuses them sent back so ("Item 'rs_…'
    // of type 'reasoning' was provided without its required following
    // item"). The last of a run stays, with its item (as
    // UKGovernmentBEIS/inspect_ai PR #1990 does).
    let mut kept = Vec::with_capacity(items.len());
    let mut items = items.into_iter().peekable();
    while let Some(item) = items.next() {
        if item.reasoning && items.peek().is_some_and(|next| next.reasoning) {
            left_out.push(item.part);
        } else {
            kept.push(item);
        }
    }
    let items = kept;
    let with_reasoning = items.iter().any(|item| item.reasoning);
    items
        .into_iter()
        .map(|Pending { mut item, .. }| {
            if !with_reasoning && item.pairs_with_reasoning() {
                item.remove_id();
            }
            if let InputItem::Json(fields) = &mut item {
                as_input_message(fields);
            }
            item
        })
        .collect()
}

/// An assistant `message` item without an `id` as an input message
/// (`EasyInputMessage`): its `output_text` parts one string, joined as
/// written, and no `status`. The published schema
/// (openai/openai-openapi, `OutputMessage`) requires `id` and `status` of
/// the output message whose `output_text` parts it carries, and servers
/// that check the input against it (vLLM; openai/codex #12669) refuse one
/// without; the parts of an input message are input parts, which OpenAI
/// refuses for the assistant. A string is what both accept: the texts of
/// its `output_text` and `refusal` parts, joined as written. Annotations
/// of the parts (citations) are not sent. An item with an `id`, and one
/// with parts of another kind, is left as it is.
fn as_input_message(item: &mut Map<String, Value>) {
    let is_message = matches!(
        item.get("type").and_then(Value::as_str),
        None | Some("message")
    );
    if !is_message
        || item.get("role").and_then(Value::as_str) != Some("assistant")
        || item.contains_key("id")
    {
        return;
    }
    if let Some(Value::Array(parts)) = item.get("content") {
        let mut text = String::new();
        for part in parts {
            // A refusal's text goes as the assistant's text: what the model
            // said, which the next turn should see.
            let field = match part.get("type").and_then(Value::as_str) {
                Some("output_text") => "text",
                Some("refusal") => "refusal",
                _ => return,
            };
            match part.get(field) {
                Some(Value::String(piece)) => text.push_str(piece),
                _ => return,
            }
        }
        item.insert("content".into(), Value::String(text));
    }
    item.remove("status");
}

/// An item a provider part of an assistant message can be: one that
/// parsing reads back into an assistant message as a provider part (a
/// server tool's item, a refusing assistant message), not an item of the
/// application's side.
fn is_model_item(item: &Map<String, Value>) -> bool {
    match (
        item.get("type").and_then(Value::as_str),
        item.get("role").and_then(Value::as_str),
    ) {
        (Some("function_call_output" | "reasoning" | "function_call"), _) => false,
        (None | Some("message"), Some(role)) => role == "assistant",
        (None, None) => false,
        (Some(_), _) => true,
    }
}

/// `function_call` and `message` items: the API pairs their `id` with the
/// reasoning item that came before them.
pub(super) fn pairs_with_reasoning(item: &Map<String, Value>) -> bool {
    matches!(
        item.get("type").and_then(Value::as_str),
        Some("function_call" | "message")
    ) || (item.get("type").is_none() && item.get("role").is_some())
}

/// A `reasoning` item for reasoning of this format; `None` without an item
/// `id` (required by `ReasoningItem`), or, `stateless`, without its
/// `encrypted_content` (a bare id refers to nothing stored).
fn export_reasoning(reasoning: &ReasoningPart, stateless: bool) -> Option<Map<String, Value>> {
    let mut item = own_extras(&reasoning.extras, &["type", "encrypted_content"]);
    if !item.get("id").is_some_and(Value::is_string) || (stateless && reasoning.redacted.is_none())
    {
        return None;
    }
    item.insert("type".into(), json!("reasoning"));
    item.entry("summary")
        .or_insert_with(|| summary_of(&reasoning.text));
    if let Some(encrypted) = &reasoning.redacted {
        item.insert("encrypted_content".into(), json!(encrypted));
    }
    Some(item)
}

/// The `summary` a reasoning text stands for: none for empty text, else
/// one `summary_text`.
pub(super) fn summary_of(text: &str) -> Value {
    if text.is_empty() {
        json!([])
    } else {
        json!([{ "type": "summary_text", "text": text }])
    }
}

/// Undoes the wrapper of [`arguments_text`].
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

// ---------------------------------------------------------------- parsing

#[derive(Deserialize)]
#[serde(expecting = "an input item object")]
struct ItemHead {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    role: Option<String>,
}

/// The part types of an input message's `content` (`InputContent` in
/// OpenAI's published OpenAPI document).
const INPUT_CONTENT_TYPES: [&str; 4] = ["input_text", "input_image", "input_file", "input_audio"];

#[derive(Deserialize)]
#[serde(expecting = "a content part object")]
struct PartHead {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
#[serde(expecting = "a text part")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct RawText {
    text: String,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "a reasoning item")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct RawReasoning {
    #[serde(default)]
    summary: Option<Vec<Value>>,
    #[serde(default)]
    encrypted_content: Option<String>,
    #[serde(default)]
    content: Option<Vec<Value>>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "a function_call item")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct RawCall {
    #[serde(default)]
    call_id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "a function_call_output item")]
struct RawOutput {
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    output: Option<StringOrArray<Value>>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "a message item")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct RawMessage {
    content: StringOrArray<Value>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

impl FromMembers for RawText {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        Some(Self {
            text: members::string(&mut members, "text")?,
            rest: members,
        })
    }
}

impl FromMembers for RawReasoning {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        Some(Self {
            summary: members::optional_array(&mut members, "summary")?,
            encrypted_content: members::optional_string(&mut members, "encrypted_content")?,
            content: members::optional_array(&mut members, "content")?,
            rest: members,
        })
    }
}

impl FromMembers for RawCall {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        Some(Self {
            call_id: members::optional_string(&mut members, "call_id")?,
            name: members::string(&mut members, "name")?,
            arguments: members::optional_value(&mut members, "arguments"),
            rest: members,
        })
    }
}

impl FromMembers for RawMessage {
    fn from_members(mut members: Map<String, Value>) -> Option<Self> {
        Some(Self {
            content: StringOrArray::moved_from(members.remove("content")?).ok()?,
            rest: members,
        })
    }
}

/// Parses a request's `input` into a conversation: a string is one user
/// message; an array holds items.
///
/// - a `message` item (with or without `"type": "message"`) of role
///   `user` → a [`Message::User`] (`content` a string → one text part;
///   `input_text` → [`ContentPart::Text`], `input_image` with an
///   `image_url` → [`ContentPart::Image`] (a `data:` URL as inline data,
///   `detail` other than `"auto"` in its extras), any other part
///   (`input_file`, `input_audio`, an `input_image` by `file_id`) → a
///   [`ContentPart::Provider`]); of role `system` or `developer` → a
///   [`Message::System`] of its text (parts other than plain `input_text`
///   are kept in its extras as the export writes a user message's parts);
/// - a run of `reasoning`, assistant `message`, `function_call` and items
///   of other types (`web_search_call`, `item_reference`, …) → one
///   [`Message::Assistant`], parts in item order (see
///   [`parse_response`](super::parse_response) for each item);
/// - a `function_call_output` → a [`Message::Tool`] (`output` a string →
///   one text part; parts as for a user message).
///
/// Fields not modelled (`id`, `status`, `phase`, `type`, annotations) are
/// kept as [`Extras`]. Whitespace-only text is joined to its neighbours;
/// a message left without parts is dropped. Empty or repeated call ids get
/// a fresh id, shared with their result.
///
/// # Errors
///
/// [`WireErrorKind::UnknownRole`] for a message role other than `user`,
/// `assistant`, `system` and `developer`; [`WireErrorKind::MissingField`]
/// for an item with neither `type` nor `role`, a `function_call` without
/// `name`, a text part without `text`; [`WireErrorKind::UnknownType`] for
/// a system or developer message's part of a type `InputContent` does not
/// list (`input_text`, `input_image`, `input_file`, `input_audio`, in
/// OpenAI's OpenAPI document); [`WireErrorKind::WrongType`] for a field
/// of the wrong type. The path names the item and part, e.g.
/// `input[3].content[1]`.
pub fn parse_messages(input: &Value) -> Result<Vec<Message>, WireError> {
    check_depth(FORMAT, "input", input)?;
    let mut conversation = parse_input_unminted("input", input)?;
    mint_missing_ids(&mut conversation);
    Ok(conversation)
}

/// [`parse_messages`] without minting, paths rooted at `root`.
pub(super) fn parse_input_unminted(root: &str, input: &Value) -> Result<Vec<Message>, WireError> {
    let items = match decode::<StringOrArray<Value>>(FORMAT, root, input)? {
        StringOrArray::Text(text) => {
            return Ok(if text.is_empty() {
                Vec::new()
            } else {
                vec![Message::user(text)]
            });
        }
        StringOrArray::Array(items) => items,
    };
    let mut conversation = Vec::new();
    let mut run: Vec<(String, Value)> = Vec::new();
    let flush = |conversation: &mut Vec<Message>,
                 run: &mut Vec<(String, Value)>|
     -> Result<(), WireError> {
        if run.is_empty() {
            return Ok(());
        }
        let parts = assistant_parts(Checked, std::mem::take(run), true)?;
        if !parts.is_empty() {
            conversation.push(Message::Assistant(AssistantMessage::new(parts)));
        }
        Ok(())
    };
    for (index, item) in items.into_iter().enumerate() {
        let path = format!("{root}[{index}]");
        let head: ItemHead = decode(FORMAT, &path, &item)?;
        match (head.kind.as_deref(), head.role.as_deref()) {
            (None | Some("message"), Some("assistant")) => run.push((path, item)),
            (None | Some("message"), Some(role)) => {
                flush(&mut conversation, &mut run)?;
                conversation.extend(parse_input_message(&path, role, &item)?);
            }
            (None, None) => {
                return Err(WireError::new(
                    FORMAT,
                    path,
                    WireErrorKind::MissingField {
                        field: "type".into(),
                    },
                ));
            }
            (Some("function_call_output"), _) => {
                flush(&mut conversation, &mut run)?;
                conversation.push(parse_output(&path, &item)?);
            }
            _ => run.push((path, item)),
        }
    }
    flush(&mut conversation, &mut run)?;
    Ok(conversation)
}

fn object_of(value: &Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// [`object_of`], moved out of the value.
fn into_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(fields) => fields,
        value => object_of(&value),
    }
}

/// The parts of one run of assistant-side items (a response's `output`,
/// or consecutive items of an `input`). `restore_raw` undoes the
/// arguments wrapper (history only, not what the model sent).
///
/// `function_call` and `message` items keep their `id` only when the run
/// has a reasoning item: the API needs it only to pair them with it.
///
/// The items are read by `reading`, and moved where they are kept whole.
pub(super) fn assistant_parts<R: Reading, P: fmt::Display>(
    reading: R,
    run: Vec<(P, Value)>,
    restore_raw: bool,
) -> Result<Vec<ContentPart>, R::Error> {
    let with_reasoning = run
        .iter()
        .any(|(_, item)| item.get("type").and_then(Value::as_str) == Some("reasoning"));
    let mut parts = Vec::new();
    for (path, item) in run {
        let path: &dyn fmt::Display = &path;
        let head: ItemHead = decode(FORMAT, path, &item)?;
        if head.kind.as_deref() == Some("reasoning") {
            parts.push(parse_reasoning(reading, path, item)?);
            continue;
        }
        let mut fields = into_object(item);
        if !with_reasoning && pairs_with_reasoning(&fields) {
            fields.remove("id");
        }
        match (head.kind.as_deref(), head.role.as_deref()) {
            (Some("function_call"), _) => {
                let raw: RawCall = reading.read_members(FORMAT, path, Value::Object(fields))?;
                let mut rest = raw.rest;
                rest.remove("type");
                let arguments = match raw.arguments {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(text)) if restore_raw => restore_arguments(text),
                    Some(Value::String(text)) => text,
                    // Tolerated: a server that sends an object.
                    Some(other) => other.to_string(),
                };
                let mut call = ToolCall::new(raw.call_id.unwrap_or_default(), raw.name, arguments);
                call.extras = Extras::new(FORMAT, rest);
                parts.push(ContentPart::ToolCall(call));
            }
            (None | Some("message"), Some("assistant")) => {
                parts.extend(parse_output_message(reading, path, fields)?);
            }
            (None | Some("message"), Some(role)) => {
                return Err(WireError::new(
                    FORMAT,
                    path.to_string(),
                    WireErrorKind::UnknownRole {
                        role: role.to_owned(),
                    },
                )
                .into());
            }
            (None, None) => {
                return Err(WireError::new(
                    FORMAT,
                    path.to_string(),
                    WireErrorKind::MissingField {
                        field: "type".into(),
                    },
                )
                .into());
            }
            (Some("function_call_output"), _) => {
                return Err(WireError::new(
                    FORMAT,
                    path.to_string(),
                    WireErrorKind::UnknownType {
                        found: "function_call_output".into(),
                    },
                )
                .into());
            }
            _ => parts.push(ContentPart::Provider(ProviderPart::new(
                FORMAT,
                Value::Object(fields),
            ))),
        }
    }
    Ok(join_blank_text(parts))
}

fn parse_reasoning<R: Reading>(
    reading: R,
    path: &dyn fmt::Display,
    item: Value,
) -> Result<ContentPart, R::Error> {
    let raw: RawReasoning = reading.read_members(FORMAT, path, item)?;
    let mut rest = raw.rest;
    rest.remove("type");
    let summary = raw.summary.unwrap_or_default();
    let texts = |parts: &[Value], kind: &str| -> Vec<String> {
        parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some(kind))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    };
    let mut text = texts(&summary, "summary_text").join("\n\n");
    if text.is_empty()
        && let Some(content) = &raw.content
    {
        text = texts(content, "reasoning_text").join("\n\n");
    }
    let summary = Value::Array(summary);
    if summary != summary_of(&text) {
        rest.insert("summary".into(), summary);
    }
    if let Some(content) = raw.content {
        rest.insert("content".into(), Value::Array(content));
    }
    let mut reasoning = ReasoningPart::new(text, FORMAT);
    reasoning.redacted = raw.encrypted_content;
    reasoning.extras = Extras::new(FORMAT, rest);
    Ok(ContentPart::Reasoning(reasoning))
}

/// An assistant `message` item: its `output_text` parts as text parts, the
/// first carrying the item's fields under [`ITEM_KEY`]; a message with any
/// other part (a `refusal`) is kept whole as one provider part.
fn parse_output_message<R: Reading>(
    reading: R,
    path: &dyn fmt::Display,
    fields: Map<String, Value>,
) -> Result<Vec<ContentPart>, R::Error> {
    let value = Value::Object(fields);
    let all_text = match value.get("content") {
        Some(Value::Array(parts)) => parts
            .iter()
            .all(|part| part.get("type").and_then(Value::as_str) == Some("output_text")),
        _ => true,
    };
    if !all_text {
        // Kept whole, once it reads as a message.
        decode::<RawMessage>(FORMAT, path, &value)?;
        return Ok(vec![ContentPart::Provider(ProviderPart::new(
            FORMAT, value,
        ))]);
    }
    let raw: RawMessage = reading.read_members(FORMAT, path, value)?;
    let mut item = raw.rest;
    item.remove("role");
    // The first part carries the item's fields.
    let mut item = Some(Value::Object(item));
    let mut text_part = |text: String, mut fields: Map<String, Value>| {
        if let Some(item) = item.take() {
            fields.insert(ITEM_KEY.into(), item);
        }
        let mut part = TextPart::new(text);
        part.extras = Extras::new(FORMAT, fields);
        part
    };
    let content = At::Field(path, "content");
    let texts = match raw.content {
        StringOrArray::Text(text) => vec![text_part(text, Map::new())],
        StringOrArray::Array(parts) => parts
            .into_iter()
            .enumerate()
            .map(|(index, part)| {
                let raw: RawText =
                    reading.read_members(FORMAT, &At::Index(&content, index), part)?;
                let mut rest = raw.rest;
                rest.remove("type");
                Ok(text_part(raw.text, rest))
            })
            .collect::<Result<Vec<_>, R::Error>>()?,
    };
    Ok(texts.into_iter().map(ContentPart::Text).collect())
}

fn parse_input_message(path: &str, role: &str, item: &Value) -> Result<Vec<Message>, WireError> {
    let raw: RawMessage = decode(FORMAT, path, item)?;
    let mut extras = raw.rest;
    extras.remove("role");
    match role {
        "user" => {
            let content = match raw.content {
                StringOrArray::Text(text) => vec![ContentPart::text(text)],
                StringOrArray::Array(parts) => input_parts(&format!("{path}.content"), &parts)?,
            };
            let content = join_blank_text(content);
            if content.is_empty() && extras.is_empty() {
                return Ok(Vec::new());
            }
            let mut user = UserMessage::new(content);
            user.extras = Extras::new(FORMAT, extras);
            Ok(vec![Message::User(user)])
        }
        "system" | "developer" => {
            let system_role = if role == "system" {
                SystemRole::System
            } else {
                SystemRole::Developer
            };
            let text = match raw.content {
                StringOrArray::Text(text) => text,
                StringOrArray::Array(parts) => {
                    let root = format!("{path}.content");
                    let parsed = input_parts(&root, &parts)?;
                    // A part of no type `InputContent` lists (a Chat
                    // Completions `text` part, say) is refused: kept, it
                    // would go back to a model that refuses it.
                    for (index, part) in parsed.iter().enumerate() {
                        if let ContentPart::Provider(provider) = part {
                            let kind = provider.value["type"].as_str().unwrap_or_default();
                            if !INPUT_CONTENT_TYPES.contains(&kind) {
                                return Err(WireError::new(
                                    FORMAT,
                                    format!("{root}[{index}]"),
                                    WireErrorKind::UnknownType {
                                        found: kind.to_owned(),
                                    },
                                ));
                            }
                        }
                    }
                    let parsed = join_blank_text(parsed);
                    let plain = parsed.iter().all(
                        |part| matches!(part, ContentPart::Text(text) if text.extras.is_empty()),
                    );
                    let text: String = parsed
                        .iter()
                        .filter_map(|part| match part {
                            ContentPart::Text(text) => Some(text.text.as_str()),
                            _ => None,
                        })
                        .collect();
                    if !plain {
                        // A system message is text only: parts of other
                        // kinds ride in the extras, written as a user
                        // message's parts are (blank text dropped, an
                        // image's `detail` filled in).
                        let written = export_user_parts(&parsed, Place::User, &mut Vec::new());
                        extras.insert("content".into(), Value::Array(written));
                    }
                    text
                }
            };
            if is_blank(&text) && !extras.contains_key("content") {
                return Ok(Vec::new());
            }
            let mut system = SystemMessage::new(text);
            system.system_role = system_role;
            system.extras = Extras::new(FORMAT, extras);
            Ok(vec![Message::System(system)])
        }
        role => Err(WireError::new(
            FORMAT,
            path,
            WireErrorKind::UnknownRole {
                role: role.to_owned(),
            },
        )),
    }
}

/// Parts of a user message or a function call's output.
fn input_parts(root: &str, parts: &[Value]) -> Result<Vec<ContentPart>, WireError> {
    parts
        .iter()
        .enumerate()
        .map(|(index, part)| {
            let path = format!("{root}[{index}]");
            let head: PartHead = decode(FORMAT, &path, part)?;
            Ok(match head.kind.as_str() {
                "input_text" => {
                    let raw: RawText = decode(FORMAT, &path, part)?;
                    let mut rest = raw.rest;
                    rest.remove("type");
                    let mut text = TextPart::new(raw.text);
                    text.extras = Extras::new(FORMAT, rest);
                    ContentPart::Text(text)
                }
                "input_image" if part.get("image_url").is_some_and(Value::is_string) => {
                    let mut rest = object_of(part);
                    rest.remove("type");
                    let url = match rest.remove("image_url") {
                        Some(Value::String(url)) => url,
                        _ => String::new(),
                    };
                    if rest.get("detail").and_then(Value::as_str) == Some("auto") {
                        rest.remove("detail");
                    }
                    let mut image = match data_url(&url) {
                        Some((media_type, data)) => ImagePart::base64(media_type, data),
                        None => ImagePart::url(url),
                    };
                    image.extras = Extras::new(FORMAT, rest);
                    ContentPart::Image(image)
                }
                _ => ContentPart::Provider(ProviderPart::new(FORMAT, part.clone())),
            })
        })
        .collect()
}

/// `data:<media type>;base64,<data>` → its media type and data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (media_type, data) = url.strip_prefix("data:")?.split_once(";base64,")?;
    (!media_type.is_empty() && !media_type.contains(',')).then_some((media_type, data))
}

fn parse_output(path: &str, item: &Value) -> Result<Message, WireError> {
    let raw: RawOutput = decode(FORMAT, path, item)?;
    let mut rest = raw.rest;
    rest.remove("type");
    let content = match raw.output {
        None => Vec::new(),
        Some(StringOrArray::Text(text)) => vec![ContentPart::text(text)],
        Some(StringOrArray::Array(parts)) => input_parts(&format!("{path}.output"), &parts)?,
    };
    let mut result = ToolResult::with_content(
        raw.call_id.unwrap_or_default(),
        join_blank_text(content),
        false,
    );
    result.extras = Extras::new(FORMAT, rest);
    Ok(Message::Tool(result))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::wire::decode::testing::{json_tree, same_members};
    use agent_loop_core::conversation::WireFormat;

    /// Extras of this format or another, their fields from `words`.
    fn extras() -> impl Strategy<Value = Extras> {
        let fields = proptest::collection::vec(
            (
                proptest::sample::select(
                    &[
                        "type",
                        "text",
                        "role",
                        "content",
                        "id",
                        "call_id",
                        "name",
                        "arguments",
                        "output",
                        "status",
                        "x",
                    ][..],
                ),
                prop_oneof![Just(json!(null)), Just(json!("v")), Just(json!({ "a": 1 }))],
            ),
            0..3,
        )
        .prop_map(|fields| {
            fields
                .into_iter()
                .map(|(key, value)| (key.to_owned(), value))
                .collect::<Map<String, Value>>()
        });
        (fields, any::<bool>()).prop_map(|(fields, ours)| {
            let format = if ours { FORMAT } else { WireFormat::OpenAiChat };
            Extras::new(format, fields)
        })
    }

    /// The parts a user message or a tool result may hold.
    fn part() -> impl Strategy<Value = ContentPart> {
        prop_oneof![
            3 => (prop_oneof![Just("x"), Just(" "), Just("")], extras()).prop_map(|(text, extras)| {
                let mut part = TextPart::new(text);
                part.extras = extras;
                ContentPart::Text(part)
            }),
            1 => Just(ContentPart::Image(ImagePart::url("https://x/y.png"))),
            1 => prop_oneof![
                Just(json!({ "type": "input_text", "text": "p" })),
                Just(json!({ "type": "input_text", "text": 5 })),
                Just(json!({ "type": "input_file", "file_id": "f" })),
                Just(json!({ "x": 1 })),
            ]
            .prop_map(|value| ContentPart::Provider(ProviderPart::new(FORMAT, value))),
            1 => Just(ContentPart::Provider(ProviderPart::new(
                WireFormat::AnthropicMessages,
                json!({ "type": "document" }),
            ))),
            1 => Just(ContentPart::Reasoning(ReasoningPart::new("r", FORMAT))),
        ]
    }

    /// What the export wrote for these items before some were written as
    /// views: each built as JSON.
    fn as_json(conversation: &[Message], stateless: bool) -> (Vec<Value>, Vec<*const ContentPart>) {
        let mut ids = ExportIds::new(FORMAT, conversation);
        let mut left_out = Vec::new();
        let mut input = Vec::new();
        for message in conversation {
            match message {
                Message::User(user) => {
                    let parts = export_user_parts(&user.content, Place::User, &mut left_out);
                    if parts.is_empty() {
                        continue;
                    }
                    let mut item = own_extras(&user.extras, &["role", "content"]);
                    item.insert("role".into(), json!("user"));
                    item.insert("content".into(), content_value(parts));
                    input.push(Value::Object(item));
                }
                Message::Tool(result) => {
                    let place = Place::ToolResult {
                        is_error: result.is_error,
                    };
                    let parts = export_user_parts(&result.content, place, &mut left_out);
                    let mut item = own_extras(&result.extras, &["type", "call_id", "output"]);
                    item.insert("type".into(), json!("function_call_output"));
                    item.insert("call_id".into(), json!(ids.result(&result.tool_call_id)));
                    let output = if parts.is_empty() {
                        Value::String(String::new())
                    } else {
                        content_value(parts)
                    };
                    item.insert("output".into(), output);
                    input.push(Value::Object(item));
                }
                Message::Assistant(assistant) => {
                    let with_reasoning = assistant.content.iter().any(|part| {
                        matches!(part, ContentPart::Reasoning(reasoning)
                            if export_reasoning(reasoning, stateless).is_some())
                    });
                    for part in &assistant.content {
                        match part {
                            ContentPart::ToolCall(call) => {
                                let mut item = own_extras(
                                    &call.extras,
                                    &["type", "call_id", "name", "arguments"],
                                );
                                item.insert("type".into(), json!("function_call"));
                                item.insert("call_id".into(), json!(ids.call(&call.id)));
                                item.insert("name".into(), json!(ids.name(&call.name)));
                                item.insert(
                                    "arguments".into(),
                                    json!(arguments_text(&call.arguments)),
                                );
                                if !with_reasoning {
                                    item.remove("id");
                                }
                                input.push(Value::Object(item));
                            }
                            ContentPart::Reasoning(reasoning) => {
                                match export_reasoning(reasoning, stateless) {
                                    Some(item) => input.push(Value::Object(item)),
                                    None => left_out.push(std::ptr::from_ref(part)),
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Message::System(_) => {}
            }
        }
        (input, left_out)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// The items written as views are the JSON they were built as.
        #[test]
        fn items_written_as_views_are_the_json_they_were(
            user in proptest::collection::vec(part(), 0..4),
            user_extras in extras(),
            result in proptest::collection::vec(part(), 0..4),
            result_extras in extras(),
            call_extras in extras(),
            reasoning_extras in extras(),
            reasoning in any::<bool>(),
            stateless in any::<bool>(),
        ) {
            let mut call = ToolCall::new("call_1", "f", r#"{"a":1}"#);
            call.extras = call_extras;
            let mut assistant = AssistantMessage::new(vec![ContentPart::ToolCall(call)]);
            if reasoning {
                let mut part = ReasoningPart::new("plan", FORMAT);
                part.redacted = Some("enc".into());
                part.extras = reasoning_extras;
                assistant.content.insert(0, ContentPart::Reasoning(part));
            }
            let mut user_message = UserMessage::new(user);
            user_message.extras = user_extras;
            let mut tool_result = ToolResult::with_content("call_1", result, false);
            tool_result.extras = result_extras;
            let conversation = vec![
                Message::User(user_message),
                Message::Assistant(assistant),
                Message::Tool(tool_result),
            ];
            let (items, left_out) = export_kept(&conversation, stateless);
            let written: Vec<Value> = items.iter().map(to_value).collect();
            let (json, json_left_out) = as_json(&conversation, stateless);
            prop_assert_eq!(written, json);
            prop_assert_eq!(left_out, json_left_out);
            let bytes = serde_json::to_vec(&items).unwrap();
            prop_assert_eq!(crate::wire::decode::testing::repeated_key(&bytes), None);
        }
    }

    const WORDS: &[&str] = &[
        "type",
        "id",
        "text",
        "annotations",
        "summary",
        "encrypted_content",
        "content",
        "call_id",
        "name",
        "arguments",
        "role",
        "status",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// An item struct built from an object's members, as an answer
        /// read straight is, is the one `decode` gives.
        #[test]
        fn items_built_from_members_are_the_decoded_ones(value in json_tree(WORDS)) {
            same_members::<RawText>(&value);
            same_members::<RawReasoning>(&value);
            same_members::<RawCall>(&value);
            same_members::<RawMessage>(&value);
        }

        /// The items of an answer are built from members whenever they
        /// decode (the objects here always hold the fields they need).
        #[test]
        fn items_that_decode_are_built_from_members(
            text in "[a-z]{0,3}",
            extras in json_tree(WORDS),
            optional in prop_oneof![Just(json!(null)), Just(json!("x")), Just(json!([{ "a": 1 }]))],
        ) {
            let mut members = match extras {
                Value::Object(members) => members,
                _ => serde_json::Map::new(),
            };
            for key in ["text", "summary", "encrypted_content", "content", "call_id", "name", "arguments"] {
                members.remove(key);
            }
            let with = |fields: Value| {
                let mut value = Value::Object(members.clone());
                for (key, field) in fields.as_object().into_iter().flatten() {
                    value[key] = field.clone();
                }
                value
            };
            let list = if optional.is_string() { json!(null) } else { optional.clone() };
            let string = if optional.is_array() { json!(null) } else { optional.clone() };
            let built = same_members::<RawText>(&with(json!({ "text": text })));
            prop_assert!(built, "RawText 1 not built");
            let built = same_members::<RawReasoning>(&with(
                json!({ "summary": list, "content": list, "encrypted_content": string })
            ));
            prop_assert!(built, "RawReasoning 2 not built");
            let built = same_members::<RawCall>(&with(
                json!({ "name": text, "call_id": string, "arguments": optional })
            ));
            prop_assert!(built, "RawCall 3 not built");
            let built = same_members::<RawMessage>(&with(json!({ "content": text })));
            prop_assert!(built, "RawMessage 4 not built");
            let built = same_members::<RawMessage>(&with(json!({ "content": [optional] })));
            prop_assert!(built, "RawMessage 5 not built");
        }
    }
}
