//! Tool call arguments as a JSON object, for formats and servers that need
//! one.
//!
//! Anthropic's `tool_use.input` must be an object, and vLLM and llama.cpp
//! parse every earlier call's OpenAI `arguments` as JSON and answer HTTP
//! 400 when it is not an object. Arguments that are not one (cut off by the
//! output limit, `null`, an array: possible when the conversation came from
//! another provider) were already answered by the turn runner with an error
//! result, and the conversation must go on, so they are exported wrapped:
//! `{"_raw_arguments": "<the text>"}`, which shows the model what it sent
//! next to the error it got, and which parsing a history turns back into
//! the text.
//!
//! A real call may send an object of that very shape (a tool with a
//! `_raw_arguments` string parameter, or a model echoing the wrapper). Sent
//! as it is, parsing would take it for a wrapper and give back the inner
//! text, not the object. So an object of exactly the wrapper's shape is
//! wrapped too: `{"_raw_arguments": "{\"_raw_arguments\": \"y\"}"}`, which
//! parses back to the object's own text. Parsing removes exactly one
//! wrapper, and exporting adds one exactly when parsing would remove one,
//! so export → parse gives every arguments text back.

use serde_json::{Map, Value};

/// The key under which an export puts tool call arguments that are not a
/// JSON object: `{"_raw_arguments": "<the raw text>"}`.
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// The arguments as a JSON object: blank (empty or white space) is `{}`, as
/// it ran; an object is itself, unless it has the wrapper's shape (see
/// [`raw_arguments`]); anything else is wrapped under [`RAW_ARGUMENTS_KEY`].
pub(crate) fn arguments_object(arguments: &str) -> Map<String, Value> {
    if arguments.trim().is_empty() {
        return Map::new();
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) if raw_arguments(&object).is_none() => object,
        _ => Map::from_iter([(
            RAW_ARGUMENTS_KEY.to_owned(),
            Value::String(arguments.to_owned()),
        )]),
    }
}

/// The raw text an [`arguments_object`] wrapper holds: exactly one key,
/// [`RAW_ARGUMENTS_KEY`], with a string value.
pub(crate) fn raw_arguments(object: &Map<String, Value>) -> Option<&str> {
    match object.get(RAW_ARGUMENTS_KEY) {
        Some(Value::String(raw)) if object.len() == 1 => Some(raw),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_shaped_like_the_wrapper_is_wrapped_and_restored_as_sent() {
        for raw in [
            r#"{"_raw_arguments": "y"}"#,
            r#"{"_raw_arguments":"{\"_raw_arguments\":\"y\"}"}"#,
        ] {
            let wrapped = arguments_object(raw);
            assert_eq!(
                Value::Object(wrapped.clone()),
                json!({ RAW_ARGUMENTS_KEY: raw })
            );
            assert_eq!(raw_arguments(&wrapped), Some(raw));
        }
        // Any other object with the key is not the wrapper's shape.
        for raw in [
            r#"{"_raw_arguments": 7}"#,
            r#"{"_raw_arguments": "y", "b": 1}"#,
        ] {
            let object = arguments_object(raw);
            assert_eq!(raw_arguments(&object), None);
            assert_eq!(
                Value::Object(object),
                serde_json::from_str::<Value>(raw).unwrap()
            );
        }
    }

    #[test]
    fn blank_is_empty_objects_stay_and_the_rest_is_wrapped_and_restored() {
        assert!(arguments_object(" \n").is_empty());
        assert_eq!(
            Value::Object(arguments_object(r#"{"a": 1}"#)),
            json!({ "a": 1 })
        );
        for raw in [r#"{"city": "Par"#, "[1, 2]", "null", "42"] {
            let wrapped = arguments_object(raw);
            assert_eq!(
                Value::Object(wrapped.clone()),
                json!({ RAW_ARGUMENTS_KEY: raw })
            );
            assert_eq!(raw_arguments(&wrapped), Some(raw));
        }
    }
}
