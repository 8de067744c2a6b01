//! Reading a payload into a format's serde types, with the path of a bad
//! field: serde derives do the parsing, `serde_path_to_error` tracks where
//! they are, and this module turns serde's error into a typed
//! [`WireErrorKind`].

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::{WireError, WireErrorKind};
use crate::conversation::WireFormat;
use crate::json;

/// Refuses a payload that nests deeper than [`json::MAX_DEPTH`] levels,
/// with [`WireErrorKind::TooDeep`] at `root`: every public parser calls it
/// first, since deserialising walks the value recursively. JSON text never
/// nests deeper, so only a value built in code is refused.
pub(crate) fn check_depth(format: WireFormat, root: &str, value: &Value) -> Result<(), WireError> {
    if json::too_deep(value) {
        return Err(WireError::new(
            format,
            root,
            WireErrorKind::TooDeep {
                limit: json::MAX_DEPTH,
            },
        ));
    }
    Ok(())
}

/// Deserialises `value` into `T`; an error's path starts with `root`
/// (`response`, `messages`, `tools`, `result`, or a longer path for a
/// value found inside one).
pub(crate) fn decode<T: DeserializeOwned>(
    format: WireFormat,
    root: &str,
    value: &Value,
) -> Result<T, WireError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = join(root, &error.path().to_string());
        let field = last_segment(&path);
        WireError::new(format, path, classify(&error.inner().to_string(), field))
    })
}

/// `root` followed by serde_path_to_error's path (`.` when empty,
/// `choices[0].message` otherwise).
pub(crate) fn join(root: &str, path: &str) -> String {
    match path {
        "" | "." => root.to_owned(),
        path if path.starts_with('[') => format!("{root}{path}"),
        path => format!("{root}.{path}"),
    }
}

fn last_segment(path: &str) -> String {
    path.rsplit(['.', '['])
        .next()
        .unwrap_or(path)
        .trim_end_matches(']')
        .to_owned()
}

/// serde's error message as a typed kind. serde writes these messages in
/// fixed forms (`serde::de::Error::missing_field`, `invalid_type`,
/// `unknown_variant`, the last one for a `type` value a format type does
/// not list); anything else is [`WireErrorKind::Invalid`].
fn classify(message: &str, field: String) -> WireErrorKind {
    // serde_json appends " at line L column C" only when parsing text; a
    // `Value` carries no position, so the message is serde's alone.
    if let Some(rest) = message.strip_prefix("missing field `")
        && let Some(name) = rest.strip_suffix('`')
    {
        return WireErrorKind::MissingField {
            field: name.to_owned(),
        };
    }
    if let Some(rest) = message.strip_prefix("invalid type: ")
        && let Some((found, expected)) = rest.split_once(", expected ")
    {
        return WireErrorKind::WrongType {
            field,
            expected: json_type(expected).to_owned(),
            found: json_type(found).to_owned(),
        };
    }
    if let Some(rest) = message.strip_prefix("unknown variant `")
        && let Some((found, _)) = rest.split_once('`')
    {
        return WireErrorKind::UnknownType {
            found: found.to_owned(),
        };
    }
    WireErrorKind::Invalid {
        message: message.to_owned(),
    }
}

/// serde's name for a value or an expectation (`map`, `a sequence`,
/// ``integer `7` ``, `string "…"`, `struct Tool`, `u64`) as the JSON type
/// a reader of the payload knows. The value itself is left out: it may be
/// long, or something the payload should not have carried (a key).
fn json_type(serde_says: &str) -> &str {
    let word = serde_says
        .trim_start_matches("a ")
        .trim_start_matches("an ")
        .split([' ', '`'])
        .next()
        .unwrap_or(serde_says);
    match word {
        "map" | "struct" | "object" => "an object",
        "sequence" | "tuple" | "array" | "seq" => "an array",
        "string" | "str" | "char" => "a string",
        "boolean" | "bool" => "a boolean",
        "integer" | "floating" | "number" | "u8" | "u16" | "u32" | "u64" | "i8" | "i16" | "i32"
        | "i64" | "f32" | "f64" | "usize" => "a number",
        "null" | "unit" | "none" | "Option" => "null",
        _ => serde_says,
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Call {
        id: String,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Message {
        tool_calls: Vec<Call>,
    }

    #[test]
    fn wrong_type_names_the_field_and_its_path() {
        let value = json!([{ "tool_calls": [] }, { "tool_calls": [{ "id": 7 }] }]);
        let error = decode::<Vec<Message>>(WireFormat::OpenAiChat, "messages", &value).unwrap_err();
        assert_eq!(error.path, "messages[1].tool_calls[0].id");
        assert_eq!(
            &error.kind,
            &WireErrorKind::WrongType {
                field: "id".into(),
                expected: "a string".into(),
                found: "a number".into()
            }
        );
    }

    #[test]
    fn missing_field_is_reported_at_the_parent() {
        let value = json!({ "tool_calls": [{}] });
        let error = decode::<Message>(WireFormat::OpenAiChat, "message", &value).unwrap_err();
        assert_eq!(error.path, "message.tool_calls[0]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::MissingField { field: "id".into() }
        );
    }
}
