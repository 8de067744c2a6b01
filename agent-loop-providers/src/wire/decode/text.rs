//! [`read_text`]: JSON text read straight into a format's serde types, in
//! one pass, for what every request reads (an answer, each streamed
//! chunk); [`read_whole`], the same reading for a check of a text's shape
//! (every call's arguments, on every request's export).
//!
//! [`decode`](super::decode) reads a `Value` parsed beforehand, which
//! costs the parse, a tree of allocations and a second walk. Reading the
//! text directly gives the same result whenever both succeed, provided
//! nothing is read more leniently than the `Value` parse reads it, and
//! serde_json's text deserializer is more lenient in two places:
//!
//! - a value a type ignores (an unknown field) is skipped, not parsed: it
//!   is not held to the nesting limit, its strings are not checked for
//!   UTF-8 or lone surrogates, its numbers not for range;
//! - a byte buffer is read from a string's raw bytes.
//!
//! [`Whole`] wraps the text deserializer at every level so that neither
//! happens: an ignored value is parsed whole and dropped, and bytes are
//! read as [`ValueDeserializer`](super::deserializer::ValueDeserializer)
//! reads them (a string or an array). Any failure is `None`: the caller
//! then takes the `Value` path, which finds the failure again and reports
//! it with its path and kind.

use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde_json::{Map, Value};

/// What [`read_text`] read: the value, and the members of the top-level
/// object it was asked to keep.
pub(crate) struct Read<T> {
    pub(crate) value: T,
    /// The kept members present, as JSON; a repeated one as its last
    /// occurrence, as in a parsed `Value`.
    pub(crate) kept: Map<String, Value>,
}

/// Reads `text`, a JSON object, as `T`: what [`decode`](super::decode)
/// gives for the `Value` parsed from the same text, when both succeed;
/// `None` when this reading fails (the text is not JSON, not an object,
/// or not a `T`). The members of the top-level object named in `keep`
/// are kept as `Value`s besides (still read by `T` too), for what a
/// caller checks before decoding (a provider's error body).
pub(crate) fn read_text<T: DeserializeOwned>(text: &[u8], keep: &[&str]) -> Option<Read<T>> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let read = Root {
        keep,
        target: std::marker::PhantomData,
    }
    .deserialize(Whole(&mut deserializer))
    .ok()?;
    deserializer.end().ok()?;
    Some(read)
}

/// Reads `text`, any JSON, as `T`, as strictly as a `Value` parse reads
/// it (see the module docs); `None` when that fails or `T` does not take
/// it. For a `T` that reads a text without keeping it (a check of its
/// shape), where [`read_text`]'s kept members are not wanted.
pub(crate) fn read_whole<T: DeserializeOwned>(text: &[u8]) -> Option<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let value = T::deserialize(Whole(&mut deserializer)).ok()?;
    deserializer.end().ok()?;
    Some(value)
}

/// The top-level object, read as `T` with the members of `keep` kept.
struct Root<'k, T> {
    keep: &'k [&'k str],
    target: std::marker::PhantomData<T>,
}

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for Root<'_, T> {
    type Value = Read<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Read<T>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for Root<'_, T> {
    type Value = Read<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Read<T>, A::Error> {
        let mut kept = Map::new();
        let value = T::deserialize(de::value::MapAccessDeserializer::new(Keeping {
            map,
            keep: self.keep,
            kept: &mut kept,
            current: None,
        }))?;
        Ok(Read { value, kept })
    }
}

/// The top-level object's members, as `T` reads them, the kept ones
/// copied into `kept` on the way.
struct Keeping<'k, A> {
    map: A,
    keep: &'k [&'k str],
    kept: &'k mut Map<String, Value>,
    /// The key just read, when it is one to keep.
    current: Option<String>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Keeping<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let Some(key) = self.map.next_key_seed(KeyName)? else {
            return Ok(None);
        };
        let read = match key {
            KeyText::Borrowed(key) => {
                self.note(key);
                seed.deserialize(BorrowedStrDeserializer::new(key))
            }
            KeyText::Owned(key) => {
                self.note(&key);
                seed.deserialize(StringDeserializer::new(key))
            }
        };
        read.map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        let Some(key) = self.current.take() else {
            return self.map.next_value_seed(seed);
        };
        let value: Value = self.map.next_value()?;
        self.kept.insert(key, value.clone());
        seed.deserialize(value).map_err(de::Error::custom)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

impl<A> Keeping<'_, A> {
    fn note(&mut self, key: &str) {
        self.current = self.keep.contains(&key).then(|| key.to_owned());
    }
}

/// A key's text: borrowed from the input when it has no escapes.
enum KeyText<'de> {
    Borrowed(&'de str),
    Owned(String),
}

/// Reads a key as its [`KeyText`].
struct KeyName;

impl<'de> DeserializeSeed<'de> for KeyName {
    type Value = KeyText<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<KeyText<'de>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyName {
    type Value = KeyText<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a key")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<KeyText<'de>, E> {
        Ok(KeyText::Borrowed(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<KeyText<'de>, E> {
        Ok(KeyText::Owned(key.to_owned()))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<KeyText<'de>, E> {
        Ok(KeyText::Owned(key))
    }
}

/// A deserializer that reads every value as a `Value` parse reads it (see
/// the module docs): an ignored value parsed whole, bytes read as a
/// string or an array; everything else as the wrapped one reads it, each
/// nested value wrapped again.
struct Whole<D>(D);

/// `deserialize_*` methods handed on with the visitor wrapped.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*),)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* Wrap(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Whole<D> {
    type Error = D::Error;

    forward! {
        deserialize_any(),
        deserialize_bool(),
        deserialize_i8(),
        deserialize_i16(),
        deserialize_i32(),
        deserialize_i64(),
        deserialize_i128(),
        deserialize_u8(),
        deserialize_u16(),
        deserialize_u32(),
        deserialize_u64(),
        deserialize_u128(),
        deserialize_f32(),
        deserialize_f64(),
        deserialize_char(),
        deserialize_str(),
        deserialize_string(),
        deserialize_option(),
        deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_newtype_struct(name: &'static str),
        deserialize_seq(),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_identifier(),
    }

    /// As [`ValueDeserializer`](super::deserializer::ValueDeserializer)
    /// reads bytes: whatever the value is.
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(Wrap(visitor))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(Wrap(visitor))
    }

    /// The value parsed whole and dropped, then `()`, as
    /// `ValueDeserializer` gives it.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(Wrap(Discard))?;
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// A visitor whose compound values (maps, arrays, options, enums) are
/// read through [`Whole`] too.
struct Wrap<V>(V);

/// `visit_*` methods of a scalar, handed on.
macro_rules! scalars {
    ($($method:ident($ty:ty),)*) => {
        $(
            fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
                self.0.$method(value)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    scalars! {
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Whole(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Whole(deserializer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Whole(deserializer))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Wrap(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.0.next_value_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Wrap(seed))?;
        Ok((value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.0.newtype_variant_seed(Wrap(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap(visitor))
    }
}

/// Takes any value and keeps nothing; what it is handed is read through
/// [`Whole`], so every part of the value is parsed.
struct Discard;

impl<'de> DeserializeSeed<'de> for Discard {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Discard {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Discard)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Discard)?.is_some() {
            map.next_value_seed(Discard)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Deserialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Map, Value, json};

    use super::read_text;
    use crate::wire::decode::decode;
    use crate::wire::decode::testing::json_tree;
    use agent_loop_core::conversation::WireFormat;

    /// Reads some fields and ignores the others.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Known {
        name: String,
        #[serde(default)]
        count: Option<u64>,
        #[serde(default)]
        value: Option<Value>,
        #[serde(default)]
        parts: Vec<Part>,
        #[serde(default)]
        either: Option<Either>,
    }

    /// Keeps the fields it does not read.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Open {
        name: String,
        #[serde(default)]
        kind: Option<Kind>,
        #[serde(flatten)]
        rest: Map<String, Value>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Part {
        Text {
            text: String,
        },
        Count(Counted),
        #[serde(other)]
        Other,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Counted {
        count: u8,
        #[serde(default)]
        name: Option<String>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(u64),
        Text(String),
        Flags(Vec<bool>),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Plain,
        Sized(u8),
        Pair { a: bool },
    }

    /// `text` read straight gives what `decode` gives for its `Value`,
    /// whenever it reads at all; it reads whatever `decode` reads from
    /// text that a `Value` was written to (no repeated keys).
    fn alike<T: DeserializeOwned + PartialEq + std::fmt::Debug>(value: &Value) {
        let text = value.to_string();
        let direct = read_text::<T>(text.as_bytes(), &[]).map(|read| read.value);
        let decoded = decode::<T>(WireFormat::OpenAiChat, "root", value).ok();
        if value.is_object() {
            assert_eq!(direct, decoded, "{text}");
        } else {
            assert_eq!(direct, None, "{text}");
        }
    }

    const WORDS: &[&str] = &[
        "name", "count", "value", "parts", "either", "kind", "type", "text", "plain", "sized",
        "pair", "a",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn any_object_reads_straight_as_decode_reads_its_value(value in json_tree(WORDS)) {
            alike::<Known>(&value);
            alike::<Open>(&value);
            alike::<Value>(&value);
            alike::<Map<String, Value>>(&value);
        }

        #[test]
        fn any_object_with_a_name_reads_straight_as_decode_reads_its_value(
            mut value in json_tree(WORDS),
            name in "[a-z]{0,3}",
        ) {
            if let Value::Object(map) = &mut value {
                map.insert("name".into(), Value::String(name));
            }
            alike::<Known>(&value);
            alike::<Open>(&value);
        }
    }

    #[test]
    fn a_value_no_value_can_hold_is_refused_where_a_type_ignores_it() {
        let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
        let cases: Vec<Vec<u8>> = vec![
            format!(r#"{{"name":"n","junk":{deep}}}"#).into_bytes(),
            br#"{"name":"n","junk":"\ud800"}"#.to_vec(),
            br#"{"name":"n","junk":{"a":"\udc00x"}}"#.to_vec(),
            br#"{"name":"n","junk":1e400}"#.to_vec(),
            br#"{"name":"n","junk":[-1e999]}"#.to_vec(),
            b"{\"name\":\"n\",\"junk\":\"\xff\xfe\"}".to_vec(),
        ];
        for text in cases {
            let shown = String::from_utf8_lossy(&text);
            // serde_json skips such a value unread, which is why the text is
            // read through `Whole`.
            assert!(serde_json::from_slice::<Known>(&text).is_ok(), "{shown}");
            assert!(serde_json::from_slice::<Value>(&text).is_err(), "{shown}");
            assert!(read_text::<Known>(&text, &[]).is_none(), "{shown}");
        }
        // Within the limit, an ignored value is read and dropped.
        let nested = format!("{}{}", "[".repeat(120), "]".repeat(120));
        let text = format!(r#"{{"name":"n","junk":{nested},"count":3}}"#);
        let read = read_text::<Known>(text.as_bytes(), &[]).map(|read| read.value);
        assert_eq!(read.and_then(|known| known.count), Some(3));
    }

    #[test]
    fn kept_members_are_their_last_occurrence_and_still_read() {
        let text = br#"{"error":{"message":"m"},"name":"n","error":null,"type":"error"}"#;
        let read = read_text::<Open>(text, &["error", "type"]).unwrap();
        assert_eq!(
            Value::Object(read.kept),
            json!({ "error": null, "type": "error" })
        );
        assert_eq!(
            read.value.rest,
            json!({ "error": null, "type": "error" })
                .as_object()
                .cloned()
                .unwrap()
        );
        let escaped = br#"{"na\u006de":"n","\u0065rror":7}"#;
        let read = read_text::<Known>(escaped, &["error"]).unwrap();
        assert_eq!(
            (read.value.name.as_str(), Value::Object(read.kept)),
            ("n", json!({ "error": 7 }))
        );
    }

    #[test]
    fn a_repeated_field_is_left_to_the_value_path() {
        // A `Value` holds the last one; serde's derive refuses the repeat.
        let text = br#"{"name":"a","name":"b"}"#;
        assert!(read_text::<Known>(text, &[]).is_none());
        let value: Value = serde_json::from_slice(text).unwrap();
        let decoded: Known = decode(WireFormat::OpenAiChat, "root", &value).unwrap();
        assert_eq!(decoded.name, "b");
        // Repeated members a map keeps: the last, as in the `Value`.
        let text = br#"{"name":"a","x":1,"x":2}"#;
        let read = read_text::<Open>(text, &[]).unwrap();
        assert_eq!(read.value.rest["x"], 2);
    }

    #[test]
    fn only_a_whole_object_reads() {
        for text in [
            &b"[]"[..],
            b"\"x\"",
            b"",
            b"{\"name\":\"n\"",
            b"{\"name\":\"n\"} x",
            b"null",
        ] {
            assert!(
                read_text::<Known>(text, &[]).is_none(),
                "{}",
                String::from_utf8_lossy(text)
            );
        }
        let read = read_text::<Known>(b" {\"name\":\"n\"}\n ", &[]).unwrap();
        assert_eq!(read.value.name, "n");
    }
}
