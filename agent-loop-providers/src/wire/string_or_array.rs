//! [`StringOrArray`]: a field that is either a string or an array, as a
//! message's `content` is in both providers' formats (and Anthropic's
//! `system` and a `tool_result`'s `content`).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A string, or an array of `T`.
///
/// Serialises as the string or the array; reads either and nothing else,
/// with one visitor, so that another JSON type (`null` included) is a
/// [`WireErrorKind::WrongType`](crate::wire::WireErrorKind::WrongType)
/// naming the field.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum StringOrArray<T> {
    /// `"…"`.
    Text(String),
    /// `[…]`.
    Array(Vec<T>),
}

impl StringOrArray<Value> {
    /// What decoding `value` as a `StringOrArray<Value>` gives, without
    /// copying it: the string or the array moved out. Any other value is
    /// given back (decoding it is the wrong-type error naming the field).
    pub(crate) fn moved_from(value: Value) -> Result<Self, Value> {
        match value {
            Value::String(text) => Ok(Self::Text(text)),
            Value::Array(items) => Ok(Self::Array(items)),
            other => Err(other),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for StringOrArray<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StringOrArrayVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for StringOrArrayVisitor<T> {
            type Value = StringOrArray<T>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string or an array")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(StringOrArray::Text(text.to_owned()))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(StringOrArray::Text(text))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // The hint comes from the payload: bounded, so a claimed
                // length allocates nothing much.
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(StringOrArray::Array(items))
            }
        }

        deserializer.deserialize_any(StringOrArrayVisitor(PhantomData))
    }
}
