//! A request's `systemInstruction` and `contents`: a conversation
//! exported, and parsed back.

use serde::Serialize;
use serde_json::{Map, Value};

use super::FORMAT;
use super::parts::{
    CallPart, PART_DATA_FIELDS, Part, ResponsePart, SKIP_SIGNATURE, array, file_data, get,
    image_url_mime, inline_data, object, own_extras, parse_part,
};
use crate::wire::arguments::{arguments_object, raw_arguments};
use crate::wire::blank_text::{is_blank, join_blank_text};
use crate::wire::decode::check_depth;
use crate::wire::dropped::{Dropped, Place, report};
use crate::wire::error::{WireError, WireErrorKind};
use crate::wire::ids::ExportIds;
use crate::wire::outgoing::Outgoing;
use crate::wire::target::{Target, for_target};
use agent_loop_core::conversation::{
    AssistantMessage, ContentPart, Extras, ImagePart, ImageSource, Message, ProviderPart,
    ReasoningPart, SystemMessage, TextPart, ToolCall, ToolResult, UserMessage,
};
use agent_loop_core::support::mint_missing_ids;

/// What [`export_contents`] builds: the request's `systemInstruction` and
/// its `contents`, as the Gemini API reference documents them
/// (`GenerateContentRequest` in
/// <https://ai.google.dev/api/generate-content>), and what the export left
/// out. Serialises as `{"systemInstruction"?, "contents"}` (without
/// `dropped`), ready to merge into a request body (`tools`,
/// `generationConfig`, … are the caller's).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ExportedContents {
    /// The system prompt, for the request's `systemInstruction`: a
    /// `Content` `{"parts": [{"text", …}]}`, one text part per system
    /// message. `None` (omitted) when the conversation has no non-blank
    /// system message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Value>,
    /// The request's `contents`: each one `{"role": "user" | "model",
    /// "parts": [...]}` with at least one part.
    pub contents: Vec<Value>,
    /// What the export left out: reasoning, provider parts and extras of
    /// another format, and images given by URL (Gemini reads an image
    /// inline, or from a file it hosts: a web URL is not a `fileData` it
    /// can read).
    #[serde(skip)]
    pub dropped: Vec<Dropped>,
}

/// One `Content` as written.
struct Content {
    role: &'static str,
    parts: Vec<Value>,
}

/// The request's `systemInstruction` and `contents` for a conversation.
///
/// - Every [`Message::System`] becomes a text part of
///   [`ExportedContents::system_instruction`], in order (its Gemini extras
///   kept on the part).
/// - A [`Message::User`] becomes a `user` content of `text`, `inlineData`
///   (base64 images) and Gemini provider parts.
/// - A [`Message::Assistant`] becomes a `model` content of its parts in
///   order: Gemini reasoning as `{"text", "thought": true,
///   "thoughtSignature"?}`, non-blank text, `functionCall` for each call
///   (`args` the arguments object; `id` only when the call has one), base64
///   images as `inlineData`, Gemini provider parts verbatim. Each part's
///   Gemini extras (its `thoughtSignature` first of all) go back on it. It
///   is left out when nothing remains.
/// - Each [`Message::Tool`] becomes a `functionResponse` part `{"id"?,
///   "name", "response": {"output" | "error": text}, "parts"?}`: the
///   `name` of the call it answers, the `id` only when the call has one,
///   its images as `parts`. Consecutive results, and a user message right
///   after them, share one `user` content, results first: Gemini wants one
///   `functionResponse` per `functionCall` of the model turn, in the next
///   turn.
///
/// Never fails: see the module docs for arguments that are not a JSON
/// object.
pub fn export_contents(conversation: &[Message]) -> ExportedContents {
    export_contents_for(conversation, &Target::new())
}

/// [`export_contents`] for a request to `target`: reasoning, provider
/// parts and extras (a part's `thoughtSignature` among them) that its
/// [`Target`] rule refuses are left out too and reported; a call whose
/// signature is left out gets the documented stand-in
/// `skip_thought_signature_validator` when it is the first of its model
/// content, as any call without one. The Gemini model exports with the
/// host of its base URL as the provider and its model name.
pub fn export_contents_for(conversation: &[Message], target: &Target) -> ExportedContents {
    export_outgoing(Outgoing::whole(conversation), target)
}

/// [`export_contents_for`] of a model's request: its own system message,
/// then the conversation, neither copied; `dropped` counts messages from
/// the first of `outgoing.rest`.
pub(crate) fn export_outgoing(outgoing: Outgoing<'_>, target: &Target) -> ExportedContents {
    let kept = for_target(outgoing.rest, FORMAT, target);
    ExportedContents {
        dropped: report(outgoing.rest, FORMAT, target, takes),
        ..export_kept(Outgoing {
            lead: outgoing.lead,
            rest: &kept,
        })
    }
}

/// The export of messages the target takes whole; `dropped` is filled in
/// by the caller, which reports on the original.
fn export_kept(outgoing: Outgoing<'_>) -> ExportedContents {
    let mut ids = ExportIds::new(FORMAT, outgoing.rest);
    let mut contents: Vec<Content> = Vec::new();
    // `true` while the last content holds function responses only, so a
    // result or a user message that follows joins it.
    let mut open_results = false;
    // The calls of the last model turn not yet answered: (original id,
    // exported name).
    let mut open_calls: Vec<(String, String)> = Vec::new();
    for message in outgoing.iter() {
        match message {
            Message::System(_) => {}
            Message::User(user) => {
                let parts = export_user_parts(&user.content);
                if parts.is_empty() {
                    continue;
                }
                match contents.last_mut() {
                    Some(last) if open_results => last.parts.extend(parts),
                    _ => contents.push(Content {
                        role: "user",
                        parts,
                    }),
                }
                open_results = false;
            }
            Message::Tool(result) => {
                let part = export_result(result, &mut ids, &mut open_calls);
                match contents.last_mut() {
                    Some(last) if open_results => last.parts.push(part),
                    _ => contents.push(Content {
                        role: "user",
                        parts: vec![part],
                    }),
                }
                open_results = true;
            }
            Message::Assistant(assistant) => {
                open_calls.clear();
                let parts = export_model(assistant, &mut ids, &mut open_calls);
                if !parts.is_empty() {
                    contents.push(Content {
                        role: "model",
                        parts,
                    });
                }
                open_results = false;
            }
        }
    }
    ExportedContents {
        system_instruction: export_system(outgoing),
        contents: contents
            .into_iter()
            .map(|content| {
                let mut object = Map::new();
                object.insert("role".into(), Value::String(content.role.to_owned()));
                object.insert("parts".into(), Value::Array(content.parts));
                Value::Object(object)
            })
            .collect(),
        dropped: Vec::new(),
    }
}

/// Gemini's own rule on what it takes where: an image inline, or at a web
/// URL whose type it can tell ([`image_url_mime`]) in a message, not in a
/// tool result (`FunctionResponsePart.file_data` is "not supported in
/// Gemini API", googleapis/python-genai `types.py`). Everything else of
/// this format, or of none, goes out.
fn takes(place: Place, part: &ContentPart) -> bool {
    match part {
        ContentPart::Image(ImagePart {
            source: ImageSource::Url { url },
            ..
        }) => !matches!(place, Place::ToolResult { .. }) && image_url_mime(url).is_some(),
        _ => true,
    }
}

fn export_system(outgoing: Outgoing<'_>) -> Option<Value> {
    let parts: Vec<Value> = outgoing
        .iter()
        .filter_map(|message| match message {
            Message::System(system) if !is_blank(&system.text) => Some(text_part(
                &system.text,
                own_extras(&system.extras, PART_DATA_FIELDS),
            )),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    let mut content = Map::new();
    content.insert("parts".into(), Value::Array(parts));
    Some(Value::Object(content))
}

fn text_part(text: &str, extras: Map<String, Value>) -> Value {
    let mut part = Map::new();
    part.insert("text".into(), Value::String(text.to_owned()));
    part.extend(extras);
    Value::Object(part)
}

fn export_text(text: &TextPart) -> Option<Value> {
    (!is_blank(&text.text))
        .then(|| text_part(&text.text, own_extras(&text.extras, PART_DATA_FIELDS)))
}

fn export_image(image: &ImagePart) -> Option<Value> {
    match &image.source {
        ImageSource::Base64 { media_type, data } => Some(inline_data(
            media_type,
            data,
            own_extras(&image.extras, PART_DATA_FIELDS),
        )),
        ImageSource::Url { url } => image_url_mime(url)
            .map(|mime| file_data(mime, url, own_extras(&image.extras, PART_DATA_FIELDS))),
        // A source this format has no part for: left out.
        _ => None,
    }
}

fn export_provider(part: &ProviderPart) -> Option<Value> {
    (part.origin.format == FORMAT).then(|| part.value.clone())
}

fn export_user_parts(parts: &[ContentPart]) -> Vec<Value> {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => export_text(text),
            ContentPart::Image(image) => export_image(image),
            ContentPart::Provider(provider) => export_provider(provider),
            ContentPart::Reasoning(_) | ContentPart::ToolCall(_) => None,
            // A kind of part this format does not know: left out, like a
            // part a user turn cannot carry.
            _ => None,
        })
        .collect()
}

/// The fields of a Gemini object kept under `key` in `extras` (a call's or
/// a response's own unmodelled fields), without those `modelled` names.
fn inner_extras(extras: &Extras, key: &str, modelled: &[&str]) -> Map<String, Value> {
    extras
        .fields_for(FORMAT)
        .and_then(|fields| fields.get(key))
        .and_then(Value::as_object)
        .map(|inner| {
            inner
                .iter()
                .filter(|(field, _)| !modelled.contains(&field.as_str()))
                .map(|(field, value)| (field.clone(), value.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn export_model<'a>(
    assistant: &'a AssistantMessage,
    ids: &mut ExportIds<'a>,
    open_calls: &mut Vec<(String, String)>,
) -> Vec<Value> {
    let mut parts: Vec<Value> = assistant
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => export_text(text),
            ContentPart::Reasoning(reasoning) => export_reasoning(reasoning),
            ContentPart::ToolCall(call) => Some(export_call(call, ids, open_calls)),
            ContentPart::Image(image) => export_image(image),
            ContentPart::Provider(provider) => export_provider(provider),
            // A kind of part this format does not know: left out, as
            // another format's provider part is.
            _ => None,
        })
        .collect();
    // The first call of a model turn carries a signature (Gemini signs
    // only the first of parallel calls); one without (from another
    // provider, or Gemini 2.x) gets the documented stand-in.
    if let Some(Value::Object(first)) = parts
        .iter_mut()
        .find(|part| part.get("functionCall").is_some())
        && !first.contains_key("thoughtSignature")
    {
        first.insert(
            "thoughtSignature".into(),
            Value::String(SKIP_SIGNATURE.to_owned()),
        );
    }
    parts
}

const REASONING_FIELDS: &[&str] = &[
    "text",
    "thought",
    "thoughtSignature",
    "thought_signature",
    "inlineData",
    "inline_data",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
];

fn export_reasoning(reasoning: &ReasoningPart) -> Option<Value> {
    if reasoning.origin.format != FORMAT
        || (is_blank(&reasoning.text) && reasoning.signature.is_none())
    {
        return None;
    }
    let mut part = Map::new();
    part.insert("text".into(), Value::String(reasoning.text.clone()));
    part.insert("thought".into(), Value::Bool(true));
    if let Some(signature) = &reasoning.signature {
        part.insert("thoughtSignature".into(), Value::String(signature.clone()));
    }
    part.extend(own_extras(&reasoning.extras, REASONING_FIELDS));
    Some(Value::Object(part))
}

fn export_call<'a>(
    call: &'a ToolCall,
    ids: &mut ExportIds<'a>,
    open_calls: &mut Vec<(String, String)>,
) -> Value {
    let name = ids.name(&call.name).into_owned();
    let mut inner = Map::new();
    if !call.id.is_empty() {
        inner.insert("id".into(), Value::String(ids.call(&call.id).into_owned()));
    }
    inner.insert("name".into(), Value::String(name.clone()));
    inner.insert(
        "args".into(),
        Value::Object(arguments_object(&call.arguments)),
    );
    inner.extend(inner_extras(
        &call.extras,
        "functionCall",
        &["id", "name", "args"],
    ));
    open_calls.push((call.id.clone(), name));
    let mut part = Map::new();
    part.insert("functionCall".into(), Value::Object(inner));
    part.extend(own_extras(&call.extras, PART_DATA_FIELDS));
    Value::Object(part)
}

fn export_result<'a>(
    result: &'a ToolResult,
    ids: &mut ExportIds<'a>,
    open_calls: &mut Vec<(String, String)>,
) -> Value {
    let answered = open_calls
        .iter()
        .position(|(id, _)| *id == result.tool_call_id)
        .map(|position| open_calls.remove(position).1);
    let text: String = result
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    let mut response = Map::new();
    let key = if result.is_error { "error" } else { "output" };
    response.insert(key.into(), Value::String(text));
    let parts: Vec<Value> = result
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Image(image) => export_image(image),
            ContentPart::Provider(provider) => export_provider(provider),
            _ => None,
        })
        .collect();
    let mut inner = Map::new();
    if !result.tool_call_id.is_empty() {
        inner.insert(
            "id".into(),
            Value::String(ids.result(&result.tool_call_id).into_owned()),
        );
    }
    // The call's name (Gemini matches a response to its call by name); a
    // result that answers no call keeps the name it was parsed with (among
    // its extras), if any.
    let answers_a_call = answered.is_some();
    inner.insert("name".into(), Value::String(answered.unwrap_or_default()));
    inner.insert("response".into(), Value::Object(response));
    if !parts.is_empty() {
        inner.insert("parts".into(), Value::Array(parts));
    }
    // Kept fields (`willContinue`, a `response` that is neither `output`
    // nor `error`) win; a kept name only for a result that answers no
    // call, since a name other than its call's breaks the request.
    let modelled: &[&str] = if answers_a_call {
        &["id", "parts", "name"]
    } else {
        &["id", "parts"]
    };
    inner.extend(inner_extras(&result.extras, "functionResponse", modelled));
    let mut part = Map::new();
    part.insert("functionResponse".into(), Value::Object(inner));
    part.extend(own_extras(&result.extras, PART_DATA_FIELDS));
    Value::Object(part)
}

/// The arguments text for an `args` object; `restore_raw` undoes
/// [`arguments_object`]'s wrapper (only for history, not for what the
/// model returns).
fn args_to_arguments(args: Map<String, Value>, restore_raw: bool) -> String {
    match restore_raw.then(|| raw_arguments(&args)).flatten() {
        Some(raw) => raw.to_owned(),
        // `Display` of a JSON value is its compact serialisation.
        None => Value::Object(args).to_string(),
    }
}

fn with_signature(mut extras: Map<String, Value>, signature: Option<String>) -> Extras {
    if let Some(signature) = signature {
        extras.insert("thoughtSignature".into(), Value::String(signature));
    }
    Extras::new(FORMAT, extras)
}

fn provider(value: Value) -> ContentPart {
    ContentPart::Provider(ProviderPart::new(FORMAT, value))
}

fn image(source: ImageSource, extras: Map<String, Value>) -> ContentPart {
    let mut part = ImagePart::url("");
    part.source = source;
    part.extras = Extras::new(FORMAT, extras);
    ContentPart::Image(part)
}

/// A text part, its `thoughtSignature` kept in its extras.
fn signed_text(text: String, signature: Option<String>, extras: Map<String, Value>) -> ContentPart {
    let mut part = TextPart::new(text);
    part.extras = with_signature(extras, signature);
    ContentPart::Text(part)
}

/// A model content's parts as an assistant message, in order; blank text
/// joined to its neighbours, blank unsigned thoughts dropped. Returns the
/// message and its calls' (id, name).
pub(super) fn model_message(parts: Vec<(Part, Value)>, restore_raw: bool) -> AssistantMessage {
    let content = parts
        .into_iter()
        .filter_map(|(part, value)| {
            Some(match part {
                Part::Text {
                    text,
                    thought: true,
                    signature,
                    extras,
                } => {
                    if is_blank(&text) && signature.is_none() {
                        return None;
                    }
                    let mut part = ReasoningPart::new(text, FORMAT);
                    part.signature = signature;
                    part.extras = Extras::new(FORMAT, extras);
                    ContentPart::Reasoning(part)
                }
                Part::Text {
                    text,
                    signature,
                    extras,
                    ..
                } => signed_text(text, signature, extras),
                Part::Image { source, extras } => image(source, extras),
                Part::Call(CallPart {
                    id,
                    name,
                    args,
                    extras,
                }) => {
                    let mut call = ToolCall::new(id, name, args_to_arguments(args, restore_raw));
                    call.extras = Extras::new(FORMAT, extras);
                    ContentPart::ToolCall(call)
                }
                Part::Response(_) | Part::Other => provider(value),
            })
        })
        .collect();
    AssistantMessage::new(join_blank_text(content))
}

/// A `functionResponse` as a [`Message::Tool`]; `call_name` is the name of
/// the call it answers, when one was found.
fn result_message(part: ResponsePart, call_name: Option<&str>) -> Message {
    let ResponsePart {
        id,
        name,
        response,
        parts,
        part_extras,
        mut inner_extras,
    } = part;
    let single = |key: &str| match (response.len(), response.get(key)) {
        (1, Some(Value::String(text))) => Some(text.clone()),
        _ => None,
    };
    let (text, is_error) = if let Some(output) = single("output") {
        (output, false)
    } else if let Some(error) = single("error") {
        (error, true)
    } else {
        // "If "output" and "error" keys are not specified, then whole
        // "response" is treated as function output" (types.py
        // FunctionResponse.response): its JSON text is the result, and the
        // object itself is kept to go back as it was.
        let is_error = response.contains_key("error");
        let text = if response.is_empty() {
            String::new()
        } else {
            Value::Object(response.clone()).to_string()
        };
        inner_extras.insert("response".into(), Value::Object(response));
        (text, is_error)
    };
    if call_name != Some(name.as_str()) {
        inner_extras.insert("name".into(), Value::String(name));
    }
    let mut content = vec![ContentPart::Text(TextPart::new(text))];
    for value in parts {
        content.push(response_part(value));
    }
    let mut extras = part_extras;
    if !inner_extras.is_empty() {
        extras.insert("functionResponse".into(), Value::Object(inner_extras));
    }
    let mut result = ToolResult::with_content(id, join_blank_text(content), is_error);
    result.extras = Extras::new(FORMAT, extras);
    Message::Tool(result)
}

/// One `functionResponse.parts` element: an inline image, or kept verbatim.
fn response_part(value: Value) -> ContentPart {
    match parse_part("", &value) {
        Ok(Part::Image { source, extras }) => image(source, extras),
        _ => provider(value),
    }
}

/// A user content's parts: a [`Message::Tool`] per `functionResponse` and
/// a [`Message::User`] per run of other parts, in order.
fn push_user(
    conversation: &mut Vec<Message>,
    parts: Vec<(Part, Value)>,
    open_calls: &mut Vec<(String, String)>,
) {
    fn flush(conversation: &mut Vec<Message>, run: &mut Vec<ContentPart>) {
        let parts = join_blank_text(std::mem::take(run));
        if !parts.is_empty() {
            conversation.push(Message::User(UserMessage::new(parts)));
        }
    }
    let mut run: Vec<ContentPart> = Vec::new();
    for (part, value) in parts {
        match part {
            Part::Response(response) => {
                flush(conversation, &mut run);
                let answered = open_calls
                    .iter()
                    .position(|(id, _)| !response.id.is_empty() && *id == response.id)
                    .or_else(|| {
                        open_calls
                            .iter()
                            .position(|(_, name)| *name == response.name)
                    })
                    .map(|position| open_calls.remove(position).1);
                conversation.push(result_message(response, answered.as_deref()));
            }
            Part::Text {
                text,
                signature,
                extras,
                ..
            } => run.push(signed_text(text, signature, extras)),
            Part::Image { source, extras } => run.push(image(source, extras)),
            Part::Call(_) | Part::Other => run.push(provider(value)),
        }
    }
    flush(conversation, &mut run);
}

/// Parses a request's `contents` array into a conversation.
///
/// A `user` content (or one without a role, or the older `function` role)
/// becomes a [`Message::User`] per run of `text`, `inlineData` image and
/// other parts (other parts, such as `fileData`, kept verbatim as
/// [`ContentPart::Provider`]s), and a [`Message::Tool`] per
/// `functionResponse`: `{"output": text}` is a result, `{"error": text}` a
/// failed one, any other `response` object is a result whose text is the
/// object's JSON, the object kept to go back as it was (Gemini reads a
/// `response` without those keys as the output); images in its `parts`
/// are image parts.
///
/// A `model` content becomes one [`Message::Assistant`] of its parts in
/// order: `text` → [`ContentPart::Text`], `text` with `"thought": true` →
/// [`ContentPart::Reasoning`] (its `thoughtSignature` as the signature),
/// `functionCall` → [`ContentPart::ToolCall`] (`args` as compact JSON
/// text, `{"_raw_arguments": "<text>"}` back to the text; no `id` → `""`,
/// then minted), `inlineData` images → [`ContentPart::Image`], anything
/// else verbatim as a [`ContentPart::Provider`]. A part's
/// `thoughtSignature` stays among the extras of the part it came with.
///
/// Either key case is read (`functionCall` or `function_call`,
/// `thoughtSignature` or `thought_signature`, …): the API reads both.
/// Blank text is joined to its neighbours (see the module docs); a content
/// left with nothing is dropped. Empty or repeated tool call ids get a
/// fresh id, shared with their result.
///
/// # Errors
///
/// [`WireErrorKind::UnknownRole`] for a role other than `user`, `model`
/// and `function`; [`WireErrorKind::WrongType`] for a content or part that
/// is not an object, `parts` that is not an array, or a modelled field of
/// the wrong JSON type (`text` or a call's, image's or result's
/// `thoughtSignature` not a string, `thought` not a boolean, `args` or
/// `response` not an object; other parts go back verbatim, as provider
/// parts); [`WireErrorKind::MissingField`] for a `functionCall` or
/// `functionResponse` without `name`. The path names the content and part,
/// e.g. `contents[3].parts[1].functionCall`.
pub fn parse_contents(contents: &Value) -> Result<Vec<Message>, WireError> {
    check_depth(FORMAT, "contents", contents)?;
    let mut conversation = parse_contents_unminted("contents", contents)?;
    mint_missing_ids(&mut conversation);
    Ok(conversation)
}

/// The parts of one content, each with its JSON.
fn read_parts(path: &str, content: &Map<String, Value>) -> Result<Vec<(Part, Value)>, WireError> {
    let parts = match content.get("parts") {
        None => &[][..],
        Some(parts) => array(path, "parts", parts)?,
    };
    parts
        .iter()
        .enumerate()
        .map(|(index, value)| {
            parse_part(&format!("{path}.parts[{index}]"), value).map(|part| (part, value.clone()))
        })
        .collect()
}

/// [`parse_contents`] without minting ids, with error paths rooted at
/// `root`.
pub(super) fn parse_contents_unminted(
    root: &str,
    contents: &Value,
) -> Result<Vec<Message>, WireError> {
    let items = match contents {
        Value::Array(items) => items,
        other => return Err(super::parts::wrong_type(root, root, "an array", other)),
    };
    let mut conversation = Vec::new();
    let mut open_calls: Vec<(String, String)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let path = format!("{root}[{index}]");
        let content = object(&path, "content", item)?;
        let role = match content.get("role") {
            None | Some(Value::Null) => "user",
            Some(Value::String(role)) if role.is_empty() => "user",
            Some(Value::String(role)) => role.as_str(),
            Some(other) => return Err(super::parts::wrong_type(&path, "role", "a string", other)),
        };
        let parts = read_parts(&path, content)?;
        match role {
            "user" | "function" => push_user(&mut conversation, parts, &mut open_calls),
            "model" => {
                let assistant = model_message(parts, true);
                open_calls = assistant
                    .tool_calls()
                    .map(|call| (call.id.clone(), call.name.clone()))
                    .collect();
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

/// Parses a request's `systemInstruction` (a `Content` of text parts; a
/// plain string is read as one) into [`Message::System`]s, one per
/// non-blank text part, its other fields kept as extras. Error paths are
/// rooted at `root`.
pub(super) fn parse_system(root: &str, system: &Value) -> Result<Vec<Message>, WireError> {
    let parts = match system {
        Value::String(text) => vec![(
            Part::Text {
                text: text.clone(),
                thought: false,
                signature: None,
                extras: Map::new(),
            },
            system.clone(),
        )],
        other => read_parts(root, object(root, "systemInstruction", other)?)?,
    };
    let mut messages = Vec::new();
    for (index, (part, value)) in parts.into_iter().enumerate() {
        match part {
            Part::Text {
                text,
                signature,
                extras,
                ..
            } => {
                if is_blank(&text) {
                    continue;
                }
                let mut system = SystemMessage::new(text);
                system.extras = with_signature(extras, signature);
                messages.push(Message::System(system));
            }
            _ => {
                let found = value
                    .as_object()
                    .and_then(|part| part.keys().next().cloned())
                    .unwrap_or_default();
                return Err(WireError::new(
                    FORMAT,
                    format!("{root}.parts[{index}]"),
                    WireErrorKind::UnknownType { found },
                ));
            }
        }
    }
    Ok(messages)
}

/// `{"role"?, "parts"}` read for the response's `content`: its parts.
pub(super) fn parse_response_content(
    path: &str,
    content: &Value,
) -> Result<Vec<(Part, Value)>, WireError> {
    let content = object(path, "content", content)?;
    if let Some(role) = get(content, "role", "role").and_then(Value::as_str)
        && role != "model"
        && !role.is_empty()
    {
        return Err(WireError::new(
            FORMAT,
            path,
            WireErrorKind::UnknownRole {
                role: role.to_owned(),
            },
        ));
    }
    read_parts(path, content)
}
