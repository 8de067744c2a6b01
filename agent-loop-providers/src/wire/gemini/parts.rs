//! One `Part` of a `Content`, read tolerantly (either key case) into what
//! the conversation models, and the helpers the other files share.
//!
//! A `Part` is an object with one data field (`text`, `inlineData`,
//! `fileData`, `functionCall`, `functionResponse`, `executableCode`,
//! `codeExecutionResult`) and metadata fields (`thought`,
//! `thoughtSignature`, `videoMetadata`, `partMetadata`, …), as
//! `google/genai/types.py` `Part` documents it. The API takes its proto
//! JSON in either key case (`thoughtSignature` or `thought_signature`);
//! this module reads both and writes camelCase.

use serde_json::{Map, Value};

use super::FORMAT;
use crate::wire::error::{WireError, WireErrorKind};
use agent_loop_core::conversation::{Extras, ImageSource};
use agent_loop_core::support::json::type_name;

/// The part fields this crate models whatever the part, in both key
/// cases: an extras map written back never repeats them. A part's
/// `thoughtSignature` is not among them: kept among the extras of a text
/// part, an image or a tool call, it goes back on the part it came with.
pub(super) const PART_DATA_FIELDS: &[&str] = &[
    "text",
    "thought",
    "thought_signature",
    "inlineData",
    "inline_data",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
];

/// A part as read.
#[derive(Debug)]
pub(super) enum Part {
    /// `{"text", "thought"?, "thoughtSignature"?, …}` with non-blank text,
    /// or blank text without a signature (joined to its neighbours later).
    Text {
        text: String,
        thought: bool,
        signature: Option<String>,
        /// Other part fields, verbatim (`thoughtSignature` is not among
        /// them: it is `signature`).
        extras: Map<String, Value>,
    },
    /// `{"inlineData": {"mimeType": "image/…", "data"}, …}` (a
    /// [`Base64`](ImageSource::Base64) source), or `{"fileData":
    /// {"mimeType", "fileUri"}, …}` of a web image (a
    /// [`Url`](ImageSource::Url) source; see [`image_url_mime`]).
    Image {
        source: ImageSource,
        /// Other part fields (a `thoughtSignature` under its camelCase
        /// key), verbatim.
        extras: Map<String, Value>,
    },
    /// `{"functionCall": {"name", "args"?, "id"?}, "thoughtSignature"?, …}`.
    Call(CallPart),
    /// `{"functionResponse": {"name", "response", "id"?, "parts"?}, …}`.
    Response(ResponsePart),
    /// Anything else (`fileData` of another kind, `executableCode`,
    /// `inlineData` that is not an image, a blank text part that carries a
    /// signature), verbatim.
    Other,
}

#[derive(Debug)]
pub(super) struct CallPart {
    /// `""` when the call has none.
    pub(super) id: String,
    pub(super) name: String,
    pub(super) args: Map<String, Value>,
    /// The ToolCall's extras: the part's other fields (`thoughtSignature`
    /// under its camelCase key) and, under `functionCall`, the call's own
    /// unmodelled fields.
    pub(super) extras: Map<String, Value>,
}

#[derive(Debug)]
pub(super) struct ResponsePart {
    /// `""` when the response has none.
    pub(super) id: String,
    pub(super) name: String,
    pub(super) response: Map<String, Value>,
    /// `functionResponse.parts`, each still JSON.
    pub(super) parts: Vec<Value>,
    /// The part's other fields, verbatim.
    pub(super) part_extras: Map<String, Value>,
    /// The `functionResponse`'s own other fields (`willContinue`,
    /// `scheduling`), verbatim.
    pub(super) inner_extras: Map<String, Value>,
}

/// Removes and returns the field spelled `camel` or `snake` (camelCase
/// first; the other spelling is dropped when both are present).
pub(super) fn take(fields: &mut Map<String, Value>, camel: &str, snake: &str) -> Option<Value> {
    let camel_value = fields.remove(camel);
    let snake_value = if snake == camel {
        None
    } else {
        fields.remove(snake)
    };
    camel_value.or(snake_value)
}

/// The field spelled `camel` or `snake`, read in place.
pub(super) fn get<'v>(
    fields: &'v Map<String, Value>,
    camel: &str,
    snake: &str,
) -> Option<&'v Value> {
    fields.get(camel).or_else(|| fields.get(snake))
}

pub(super) fn wrong_type(path: &str, field: &str, expected: &str, found: &Value) -> WireError {
    WireError::new(
        FORMAT,
        path,
        WireErrorKind::WrongType {
            field: field.to_owned(),
            expected: expected.to_owned(),
            found: type_name(found).to_owned(),
        },
    )
}

pub(super) fn missing(path: &str, field: &str) -> WireError {
    WireError::new(
        FORMAT,
        path,
        WireErrorKind::MissingField {
            field: field.to_owned(),
        },
    )
}

/// `value` as an object, or a `WrongType` error naming `field` at `path`.
pub(super) fn object<'v>(
    path: &str,
    field: &str,
    value: &'v Value,
) -> Result<&'v Map<String, Value>, WireError> {
    value
        .as_object()
        .ok_or_else(|| wrong_type(path, field, "an object", value))
}

/// `value` as an array (`null` as none), or a `WrongType` error.
pub(super) fn array<'v>(
    path: &str,
    field: &str,
    value: &'v Value,
) -> Result<&'v [Value], WireError> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(&[]),
        other => Err(wrong_type(path, field, "an array", other)),
    }
}

/// An optional string field (`null` as absent).
fn string(path: &str, field: &str, value: Option<Value>) -> Result<Option<String>, WireError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(wrong_type(path, field, "a string", &other)),
    }
}

/// An optional object field (`null` as absent).
fn object_field(
    path: &str,
    field: &str,
    value: Option<Value>,
) -> Result<Option<Map<String, Value>>, WireError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(object)) => Ok(Some(object)),
        Some(other) => Err(wrong_type(path, field, "an object", &other)),
    }
}

/// Reads the part at `path`.
///
/// # Errors
///
/// `WrongType` for a part that is not an object, or a modelled field of the
/// wrong JSON type (`text` or `thoughtSignature` not a string, `thought`
/// not a boolean, `args` or `response` not an object); `MissingField` for a `functionCall` or
/// `functionResponse` without `name`.
pub(super) fn parse_part(path: &str, value: &Value) -> Result<Part, WireError> {
    let mut fields = object(path, "part", value)?.clone();
    if let Some(text) = get(&fields, "text", "text") {
        let Value::String(_) = text else {
            return Err(wrong_type(path, "text", "a string", text));
        };
        let text = string(path, "text", fields.remove("text"))?.unwrap_or_default();
        let thought = match fields.remove("thought") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(thought)) => thought,
            Some(other) => return Err(wrong_type(path, "thought", "a boolean", &other)),
        };
        let signature = string(
            path,
            "thoughtSignature",
            take(&mut fields, "thoughtSignature", "thought_signature"),
        )?;
        if text.trim().is_empty() && !thought && (signature.is_some() || !fields.is_empty()) {
            // A blank answer part that carries something (Gemini 3 signs
            // an empty part at the end of a streamed answer): kept whole,
            // since blank text is joined away.
            return Ok(Part::Other);
        }
        return Ok(Part::Text {
            text,
            thought,
            signature,
            extras: fields,
        });
    }
    if let Some(inline) = get(&fields, "inlineData", "inline_data") {
        let inline = object(path, "inlineData", inline)?;
        let mime = get(inline, "mimeType", "mime_type").and_then(Value::as_str);
        let data = inline.get("data").and_then(Value::as_str);
        let only_modelled = inline
            .keys()
            .all(|key| matches!(key.as_str(), "mimeType" | "mime_type" | "data"));
        if let (Some(mime), Some(data), true) = (mime, data, only_modelled)
            && mime.starts_with("image/")
        {
            let source = ImageSource::Base64 {
                media_type: mime.to_owned(),
                data: data.to_owned(),
            };
            take(&mut fields, "inlineData", "inline_data");
            normalise_signature(path, &mut fields)?;
            return Ok(Part::Image {
                source,
                extras: fields,
            });
        }
        return Ok(Part::Other);
    }
    if let Some(file) = get(&fields, "fileData", "file_data") {
        let file = object(path, "fileData", file)?;
        let mime = get(file, "mimeType", "mime_type").and_then(Value::as_str);
        let uri = get(file, "fileUri", "file_uri").and_then(Value::as_str);
        let only_modelled = file.keys().all(|key| {
            matches!(
                key.as_str(),
                "mimeType" | "mime_type" | "fileUri" | "file_uri"
            )
        });
        // A web image as an export writes it, and no other file: what
        // an export would write for the image again.
        if let (Some(mime), Some(uri), true) = (mime, uri, only_modelled)
            && image_url_mime(uri) == Some(mime)
        {
            let source = ImageSource::Url {
                url: uri.to_owned(),
            };
            take(&mut fields, "fileData", "file_data");
            normalise_signature(path, &mut fields)?;
            return Ok(Part::Image {
                source,
                extras: fields,
            });
        }
        return Ok(Part::Other);
    }
    if let Some(call) = take(&mut fields, "functionCall", "function_call") {
        let call_path = format!("{path}.functionCall");
        let mut call = object_field(path, "functionCall", Some(call))?.unwrap_or_default();
        let name = string(&call_path, "name", call.remove("name"))?
            .ok_or_else(|| missing(&call_path, "name"))?;
        let id = string(&call_path, "id", call.remove("id"))?.unwrap_or_default();
        let args = object_field(&call_path, "args", call.remove("args"))?.unwrap_or_default();
        normalise_signature(path, &mut fields)?;
        // The stand-in an export writes is no signature of the model's.
        if fields.get("thoughtSignature").and_then(Value::as_str) == Some(SKIP_SIGNATURE) {
            fields.remove("thoughtSignature");
        }
        if !call.is_empty() {
            fields.insert("functionCall".to_owned(), Value::Object(call));
        }
        return Ok(Part::Call(CallPart {
            id,
            name,
            args,
            extras: fields,
        }));
    }
    if let Some(response) = take(&mut fields, "functionResponse", "function_response") {
        let response_path = format!("{path}.functionResponse");
        let mut inner = object_field(path, "functionResponse", Some(response))?.unwrap_or_default();
        let name = string(&response_path, "name", inner.remove("name"))?
            .ok_or_else(|| missing(&response_path, "name"))?;
        let id = string(&response_path, "id", inner.remove("id"))?.unwrap_or_default();
        let response =
            object_field(&response_path, "response", inner.remove("response"))?.unwrap_or_default();
        let parts = match inner.remove("parts") {
            None => Vec::new(),
            Some(parts) => array(&response_path, "parts", &parts)?.to_vec(),
        };
        normalise_signature(path, &mut fields)?;
        return Ok(Part::Response(ResponsePart {
            id,
            name,
            response,
            parts,
            part_extras: fields,
            inner_extras: inner,
        }));
    }
    Ok(Part::Other)
}

/// The `thoughtSignature` Gemini documents for a function call that has
/// none of its own (a history from another model or provider): Gemini 3
/// answers 400 "Function call is missing a thought_signature" to the first
/// call of a model turn without one, and skips the check for this value
/// (the Gemini API's thought-signature guide). An export writes it; a parse
/// drops it, so that it never reads as the model's.
pub(super) const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// A `thought_signature` kept among extras is written back as
/// `thoughtSignature`: the API's JSON reads either, and exports write
/// camelCase. `null` is no signature; any other value that is not a string
/// is refused (`Part.thought_signature` is bytes, base64 in JSON), since
/// written back it would be sent to a model that refuses it.
fn normalise_signature(path: &str, fields: &mut Map<String, Value>) -> Result<(), WireError> {
    let signature = take(fields, "thoughtSignature", "thought_signature");
    if let Some(signature) = string(path, "thoughtSignature", signature)? {
        fields.insert("thoughtSignature".to_owned(), Value::String(signature));
    }
    Ok(())
}

/// The extras of this format, without the fields `modelled` names (a
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

/// The MIME type of the image at `url`, by the extension of its path, as
/// the Gemini SDK guesses it for `Part.from_uri` (googleapis/python-genai,
/// `types.py`): Gemini reads a web image as `fileData`, whose `mimeType`
/// is required (`FileData.mime_type`), from a public or signed HTTPS URL
/// (Gemini API docs, "File input methods"). `None` for a URL that is not
/// HTTPS, or whose path names no image type Gemini reads (PNG, JPEG,
/// WEBP, HEIC, HEIF); such an image is left out and reported, as before.
pub(super) fn image_url_mime(url: &str) -> Option<&'static str> {
    let scheme_end = url.find("://")?;
    if !url[..scheme_end].eq_ignore_ascii_case("https") {
        return None;
    }
    let rest = &url[scheme_end + 3..];
    let path = rest.split(['?', '#']).next().unwrap_or_default();
    let (_, file) = path.rsplit_once('/')?;
    let (_, extension) = file.rsplit_once('.')?;
    match extension.to_ascii_lowercase().as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "webp" => Some("image/webp"),
        "heic" => Some("image/heic"),
        "heif" => Some("image/heif"),
        _ => None,
    }
}

/// A web image as a `fileData` part: `{"fileData": {"mimeType",
/// "fileUri"}, …extras}`.
pub(super) fn file_data(mime_type: &str, url: &str, extras: Map<String, Value>) -> Value {
    let mut part = Map::new();
    let mut file = Map::new();
    file.insert("mimeType".into(), Value::String(mime_type.to_owned()));
    file.insert("fileUri".into(), Value::String(url.to_owned()));
    part.insert("fileData".into(), Value::Object(file));
    part.extend(extras);
    Value::Object(part)
}

/// `{"inlineData": {"mimeType", "data"}}` plus `extras`.
pub(super) fn inline_data(mime_type: &str, data: &str, extras: Map<String, Value>) -> Value {
    let mut part = Map::new();
    let mut inline = Map::new();
    inline.insert("mimeType".into(), Value::String(mime_type.to_owned()));
    inline.insert("data".into(), Value::String(data.to_owned()));
    part.insert("inlineData".into(), Value::Object(inline));
    part.extend(extras);
    Value::Object(part)
}
