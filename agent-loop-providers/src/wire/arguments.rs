//! Tool call arguments as a JSON object, for formats and servers that need
//! one.
//!
//! Anthropic's `tool_use.input` must be an object, and vLLM and llama.cpp
//! parse every earlier call's OpenAI `arguments` as JSON and answer HTTP
//! 400 when it is not an object. Blank arguments and `null` mean "no
//! arguments" and go out as `{}`, as they ran. Arguments that are not an
//! object (cut off by the output limit, an array: possible when the
//! conversation came from another provider) were already answered by the turn runner with an error
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

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use agent_loop_core::support::json::no_arguments;

use crate::wire::decode::read_whole;

/// The key under which an export puts tool call arguments that are not a
/// JSON object: `{"_raw_arguments": "<the raw text>"}`.
pub const RAW_ARGUMENTS_KEY: &str = "_raw_arguments";

/// The arguments as a JSON object: blank (empty or white space) or `null`
/// is `{}`, as it ran ([`no_arguments`]); an object is itself, unless it has the wrapper's shape (see
/// [`raw_arguments`]); anything else is wrapped under [`RAW_ARGUMENTS_KEY`].
pub(crate) fn arguments_object(arguments: &str) -> Map<String, Value> {
    if no_arguments(arguments) {
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

/// The `arguments` text the OpenAI formats send for a call's raw
/// arguments (a string field, unlike Anthropic's `input` object): the text
/// itself when it is a JSON object, as the model wrote it, unless parsing
/// would take it for the wrapper; else the JSON text of its
/// [`arguments_object`]: `{}` when blank, the wrapper otherwise. Borrowed
/// in the first case, which is nearly every call.
pub(crate) fn arguments_text(arguments: &str) -> Cow<'_, str> {
    if is_plain_object(arguments) {
        Cow::Borrowed(arguments)
    } else {
        // `Display` of a JSON value is its compact serialisation.
        Cow::Owned(Value::Object(arguments_object(arguments)).to_string())
    }
}

/// `true` when `arguments` is the JSON text of an object that
/// [`arguments_object`] returns as it is (not of the wrapper's shape), so
/// an export may send the text itself. Checked without building the
/// object: an export checks every call of the conversation on every
/// request. Read by [`read_whole`], it accepts exactly the texts
/// `serde_json` parses into a `Value` object (numbers out of range and
/// lone surrogates fail the same way), and judges the wrapper's shape as
/// [`raw_arguments`] judges the parsed object, where a repeated key keeps
/// its last value.
fn is_plain_object(arguments: &str) -> bool {
    matches!(
        read_whole::<Shape>(arguments.as_bytes()),
        Some(Shape { wrapper: false })
    )
}

/// What [`is_plain_object`] reads of a JSON object: `wrapper` when its
/// only key is [`RAW_ARGUMENTS_KEY`] and that key's (last) value is a
/// string.
struct Shape {
    wrapper: bool,
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ShapeVisitor;

        impl<'de> Visitor<'de> for ShapeVisitor {
            type Value = Shape;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
                let mut other_key = false;
                let mut raw_is_string = false;
                while let Some(RawKey(raw)) = map.next_key()? {
                    if raw {
                        // Rare: the wrapper's key, whose value is read
                        // as it is to tell a string.
                        raw_is_string = map.next_value::<Value>()?.is_string();
                    } else {
                        other_key = true;
                        // Parsed whole all the same (`read_whole` reads an
                        // ignored value as a `Value` parse would).
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Shape {
                    wrapper: raw_is_string && !other_key,
                })
            }
        }

        deserializer.deserialize_map(ShapeVisitor)
    }
}

/// A key of the object [`Shape`] reads: whether it is
/// [`RAW_ARGUMENTS_KEY`].
struct RawKey(bool);

impl<'de> Deserialize<'de> for RawKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RawKeyVisitor;

        impl Visitor<'_> for RawKeyVisitor {
            type Value = RawKey;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a key")
            }

            fn visit_str<E>(self, key: &str) -> Result<RawKey, E> {
                Ok(RawKey(key == RAW_ARGUMENTS_KEY))
            }
        }

        deserializer.deserialize_str(RawKeyVisitor)
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
        assert!(
            arguments_object("null").is_empty(),
            "no arguments, as Groq says it"
        );
        assert_eq!(
            Value::Object(arguments_object(r#"{"a": 1}"#)),
            json!({ "a": 1 })
        );
        for raw in [r#"{"city": "Par"#, "[1, 2]", "42"] {
            let wrapped = arguments_object(raw);
            assert_eq!(
                Value::Object(wrapped.clone()),
                json!({ RAW_ARGUMENTS_KEY: raw })
            );
            assert_eq!(raw_arguments(&wrapped), Some(raw));
        }
    }

    #[test]
    fn a_plain_object_is_what_arguments_object_keeps_as_parsed() {
        for raw in [
            r#"{"a": 1}"#,
            r#"{}"#,
            r#" {"a": [1, {"b": null}], "c": "\u00e9"} "#,
            r#"{"_raw_arguments": "y"}"#,
            r#"{"_raw_arguments": 7}"#,
            r#"{"_raw_arguments": "y", "b": 1}"#,
            // A repeated key keeps its last value, as in a parsed object.
            r#"{"_raw_arguments": 1, "_raw_arguments": "y"}"#,
            r#"{"_raw_arguments": "y", "_raw_arguments": 1}"#,
            // Out of range and broken text fail to parse either way.
            r#"{"a": 1e999}"#,
            r#"{"a": "\ud800"}"#,
            r#"{"a": 1} x"#,
            r#"{"city": "Par"#,
            "[1, 2]",
            "null",
            "42",
            "\"text\"",
            " \n",
            "",
        ] {
            let kept = serde_json::from_str::<Value>(raw)
                .ok()
                .and_then(|value| value.as_object().cloned())
                .filter(|object| raw_arguments(object).is_none());
            assert_eq!(is_plain_object(raw), kept.is_some(), "{raw}");
            if let Some(kept) = kept {
                assert_eq!(arguments_object(raw), kept, "{raw}");
            }
        }
        // Nested past serde_json's recursion limit: no `Value` either.
        let deep = format!(r#"{{"a": {}{}}}"#, "[".repeat(200), "]".repeat(200));
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(!is_plain_object(&deep));
    }
}
