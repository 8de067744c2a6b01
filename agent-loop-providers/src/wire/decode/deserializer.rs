//! [`ValueDeserializer`]: a serde `Deserializer` over a borrowed
//! `serde_json::Value`, generic over its error type.
//!
//! serde_json's own `Value` deserializer returns `serde_json::Error`, which
//! keeps no more than the message serde's constructors wrote. This one
//! returns any `E: serde::de::Error`, so the error's own constructors
//! (`missing_field`, `invalid_type`, `unknown_variant`, …) are what every
//! `Deserialize` implementation calls, derived or hand-written, down to
//! serde's internal buffering for `#[serde(flatten)]` and internally
//! tagged enums (which is generic over the same `E`). It reads what
//! serde_json's reads, the same way: a struct from an object (or an array
//! of its fields, in order), an enum from a string (a unit variant) or a
//! one-key object, `null` as `None` or `()`.
//!
//! Where the target says what JSON type it needs (`deserialize_str`,
//! `deserialize_seq`, `deserialize_struct`, …) a value of another type is
//! refused here, before the target's visitor runs, with
//! [`ExpectedJson`] naming both types; a target that takes several
//! (`deserialize_any`) reports through `invalid_type` itself.
//!
//! Why not a crate: `serde-value`'s `ValueDeserializer<E>` is generic over
//! the error too, but reads its own `Value` type (every payload would be
//! copied into it first) and leaves every type check to the target's
//! visitor; serde's `de::value` deserializers are generic over `E` but
//! read Rust values, not JSON. They do walk arrays and objects here
//! ([`SeqDeserializer`], [`MapDeserializer`]).

use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeSeed, EnumAccess, IntoDeserializer, VariantAccess, Visitor};
use serde_json::{Map, Value};

/// The error type of a [`ValueDeserializer`]: serde's constructors, plus
/// one for a value of the wrong JSON type where the target named the type
/// it needs.
pub(crate) trait ExpectedJson: de::Error {
    /// `found` (`"a string"`, `"null"`, …) where the target needs
    /// `expected` (`"an array"`, `"an integer"`, …).
    fn wrong_type(expected: &'static str, found: &'static str) -> Self;
}

/// A `Deserializer` over `value`, with errors of type `E`.
pub(crate) struct ValueDeserializer<'de, E> {
    value: &'de Value,
    error: PhantomData<E>,
}

impl<'de, E> ValueDeserializer<'de, E> {
    pub(crate) fn new(value: &'de Value) -> Self {
        Self {
            value,
            error: PhantomData,
        }
    }
}

impl<'de, E: ExpectedJson> ValueDeserializer<'de, E> {
    /// Refuses a value that is not `expected` (`is` says which are), else
    /// reads it as it is.
    fn of_type<V: Visitor<'de>>(
        self,
        expected: &'static str,
        is: fn(&Value) -> bool,
        visitor: V,
    ) -> Result<V::Value, E> {
        if is(self.value) {
            de::Deserializer::deserialize_any(self, visitor)
        } else {
            Err(E::wrong_type(
                expected,
                agent_loop_core::support::json::type_name(self.value),
            ))
        }
    }

    fn any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        de::Deserializer::deserialize_any(self, visitor)
    }

    fn boolean<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.of_type("a boolean", Value::is_boolean, visitor)
    }

    fn number<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.of_type("a number", Value::is_number, visitor)
    }

    fn string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.of_type("a string", Value::is_string, visitor)
    }

    fn null<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.of_type("null", Value::is_null, visitor)
    }

    fn array<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.of_type("an array", Value::is_array, visitor)
    }

    fn object<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        self.of_type("an object", Value::is_object, visitor)
    }

    /// A non-negative integer as a `u64`; a negative one as an `i64`, for
    /// the target's visitor to refuse as a value out of its range, as
    /// serde_json does.
    fn unsigned<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match (self.value.as_u64(), self.value.as_i64()) {
            (Some(number), _) => visitor.visit_u64(number),
            (None, Some(number)) => visitor.visit_i64(number),
            (None, None) => Err(self.not_an_integer()),
        }
    }

    /// An integer as an `i64`, or as a `u64` above `i64::MAX` (an `i128`
    /// takes it, an `i64` visitor refuses it as out of range).
    fn signed<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match (self.value.as_i64(), self.value.as_u64()) {
            (Some(number), _) => visitor.visit_i64(number),
            (None, Some(number)) => visitor.visit_u64(number),
            (None, None) => Err(self.not_an_integer()),
        }
    }

    /// A fraction where an integer is needed, or a value that is not a
    /// number at all.
    fn not_an_integer(&self) -> E {
        let expected = if self.value.is_number() {
            "an integer"
        } else {
            "a number"
        };
        E::wrong_type(
            expected,
            agent_loop_core::support::json::type_name(self.value),
        )
    }
}

impl<'de, E> IntoDeserializer<'de, E> for ValueDeserializer<'de, E>
where
    E: ExpectedJson,
{
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

/// The elements of an array, each as a [`ValueDeserializer`].
fn elements<'de, E>(
    array: &'de [Value],
) -> SeqDeserializer<impl Iterator<Item = ValueDeserializer<'de, E>>, E>
where
    E: ExpectedJson,
{
    SeqDeserializer::new(array.iter().map(ValueDeserializer::new))
}

/// The members of an object: each key as a borrowed string, each value as
/// a [`ValueDeserializer`].
fn members<'de, E>(
    object: &'de Map<String, Value>,
) -> MapDeserializer<
    'de,
    impl Iterator<Item = (BorrowedStrDeserializer<'de, E>, ValueDeserializer<'de, E>)>,
    E,
>
where
    E: ExpectedJson,
{
    MapDeserializer::new(object.iter().map(|(key, value)| {
        (
            BorrowedStrDeserializer::new(key.as_str()),
            ValueDeserializer::new(value),
        )
    }))
}

/// `deserialize_*` methods that read the value as the helper named does.
macro_rules! read_as {
    ($($(#[$doc:meta])* $method:ident => $helper:ident,)*) => {
        $(
            $(#[$doc])*
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
                self.$helper(visitor)
            }
        )*
    };
}

impl<'de, E: ExpectedJson> de::Deserializer<'de> for ValueDeserializer<'de, E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(value) => visitor.visit_bool(*value),
            Value::Number(number) => {
                if let Some(number) = number.as_u64() {
                    visitor.visit_u64(number)
                } else if let Some(number) = number.as_i64() {
                    visitor.visit_i64(number)
                } else {
                    // Without serde_json's `arbitrary_precision` (not
                    // enabled), a number that is neither is a finite f64.
                    visitor.visit_f64(number.as_f64().unwrap_or_default())
                }
            }
            Value::String(text) => visitor.visit_borrowed_str(text),
            Value::Array(array) => {
                let mut elements = elements(array);
                let value = visitor.visit_seq(&mut elements)?;
                elements.end()?;
                Ok(value)
            }
            Value::Object(object) => {
                let mut members = members(object);
                let value = visitor.visit_map(&mut members)?;
                members.end()?;
                Ok(value)
            }
        }
    }

    read_as! {
        deserialize_bool => boolean,
        deserialize_u8 => unsigned,
        deserialize_u16 => unsigned,
        deserialize_u32 => unsigned,
        deserialize_u64 => unsigned,
        deserialize_u128 => unsigned,
        deserialize_i8 => signed,
        deserialize_i16 => signed,
        deserialize_i32 => signed,
        deserialize_i64 => signed,
        deserialize_i128 => signed,
        deserialize_f32 => number,
        deserialize_f64 => number,
        deserialize_char => string,
        deserialize_str => string,
        deserialize_string => string,
        deserialize_identifier => string,
        // A string, or an array of bytes, as serde_json reads bytes.
        deserialize_bytes => any,
        deserialize_byte_buf => any,
        deserialize_unit => null,
        deserialize_seq => array,
        deserialize_map => object,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        self.null(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, E> {
        self.array(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, E> {
        self.array(visitor)
    }

    /// An object, or an array of the fields in order, as serde_json reads
    /// a struct.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        self.of_type(
            "an object",
            |value| value.is_object() || value.is_array(),
            visitor,
        )
    }

    /// A unit variant as its name (`"function"`), any variant as an object
    /// of one member, its name and its content (`{"Base64": {...}}`).
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.value {
            Value::String(variant) => visitor.visit_enum(Variant::<E> {
                name: variant,
                content: None,
                error: PhantomData,
            }),
            Value::Object(object) => {
                let mut members = object.iter();
                match (members.next(), members.next()) {
                    (Some((variant, content)), None) => visitor.visit_enum(Variant::<E> {
                        name: variant,
                        content: Some(content),
                        error: PhantomData,
                    }),
                    _ => Err(de::Error::invalid_value(
                        de::Unexpected::Map,
                        &"an object with a single key",
                    )),
                }
            }
            other => Err(E::wrong_type(
                "a string or an object",
                agent_loop_core::support::json::type_name(other),
            )),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_unit()
    }
}

/// A variant with content named by a string alone (`"newtype"` for
/// `{"newtype": 1}`): serde_json says "unit variant"; what the payload
/// holds is a string where the one-member object was needed.
fn name_only<E: ExpectedJson>() -> E {
    E::wrong_type("an object of one member", "a string")
}

/// One enum variant: its name, and its content when it has one.
struct Variant<'de, E> {
    name: &'de str,
    content: Option<&'de Value>,
    error: PhantomData<E>,
}

impl<'de, E: ExpectedJson> EnumAccess<'de> for Variant<'de, E> {
    type Error = E;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), E> {
        let name = seed.deserialize(BorrowedStrDeserializer::<E>::new(self.name))?;
        Ok((name, self))
    }
}

impl<'de, E: ExpectedJson> VariantAccess<'de> for Variant<'de, E> {
    type Error = E;

    fn unit_variant(self) -> Result<(), E> {
        match self.content {
            None | Some(Value::Null) => Ok(()),
            Some(other) => Err(E::wrong_type(
                "null",
                agent_loop_core::support::json::type_name(other),
            )),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, E> {
        match self.content {
            Some(content) => seed.deserialize(ValueDeserializer::new(content)),
            None => Err(name_only()),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, E> {
        match self.content {
            Some(content) => {
                de::Deserializer::deserialize_seq(ValueDeserializer::<E>::new(content), visitor)
            }
            None => Err(name_only()),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.content {
            Some(content) => {
                de::Deserializer::deserialize_map(ValueDeserializer::<E>::new(content), visitor)
            }
            None => Err(name_only()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fmt::Debug;

    use proptest::prelude::*;
    use serde::Deserialize;
    use serde::de::DeserializeOwned;
    use serde_json::{Map, Value, json};

    use super::super::Reason;
    use super::super::testing::{json_tree, same_kind};
    use super::*;

    /// `value` read by this deserializer and by serde_json's, owned and
    /// borrowed (`decode` reads it borrowed first): all succeed with the
    /// same result, or all fail. Returns this one's result.
    fn same<T: DeserializeOwned + PartialEq + Debug>(value: &Value) -> Result<T, Reason> {
        let ours = T::deserialize(ValueDeserializer::<Reason>::new(value));
        let theirs = serde_json::from_value::<T>(value.clone());
        let borrowed = T::deserialize(value);
        match (&ours, &theirs, &borrowed) {
            (Ok(ours), Ok(theirs), Ok(borrowed)) => {
                assert_eq!(ours, theirs, "{value}");
                assert_eq!(ours, borrowed, "{value}");
            }
            (Err(_), Err(_), Err(_)) => {}
            _ => panic!(
                "{value}: this deserializer gave {ours:?}, serde_json {theirs:?}, borrowed {borrowed:?}"
            ),
        }
        ours
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Scalars {
        null: (),
        boolean: bool,
        unsigned: u64,
        small: u8,
        signed: i32,
        wide: i128,
        float: f64,
        text: String,
        character: char,
        list: Vec<u8>,
        pair: (String, bool),
        map: BTreeMap<String, i64>,
        value: Value,
        option: Option<String>,
        #[serde(default)]
        absent: Option<u8>,
        wrapper: Wrapper,
        unit: UnitStruct,
        #[serde(with = "serde_bytes_as_seq")]
        bytes: Vec<u8>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Wrapper(String);

    #[derive(Debug, PartialEq, Deserialize)]
    struct UnitStruct;

    /// `deserialize_bytes` into a byte vector, as a `[u8]` field with
    /// `serde_bytes` would read it.
    mod serde_bytes_as_seq {
        use serde::de::{Deserializer, SeqAccess, Visitor};

        pub(super) fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Vec<u8>, D::Error> {
            struct Bytes;

            impl<'de> Visitor<'de> for Bytes {
                type Value = Vec<u8>;

                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("bytes")
                }

                fn visit_str<E>(self, text: &str) -> Result<Vec<u8>, E> {
                    Ok(text.as_bytes().to_vec())
                }

                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
                    let mut bytes = Vec::new();
                    while let Some(byte) = seq.next_element()? {
                        bytes.push(byte);
                    }
                    Ok(bytes)
                }
            }

            deserializer.deserialize_bytes(Bytes)
        }
    }

    fn scalars() -> Value {
        json!({
            "null": null, "boolean": true, "unsigned": 18446744073709551615_u64, "small": 255,
            "signed": -7, "wide": 18446744073709551615_u64, "float": 1.5, "text": "t",
            "character": "c", "list": [1, 2], "pair": ["a", false], "map": { "k": -1 },
            "value": { "any": [null, 1.5, "x"] }, "option": null, "wrapper": "w", "unit": null,
            "bytes": [104, 105], "unknown": { "ignored": true }
        })
    }

    #[test]
    fn every_json_value_kind_reads_as_serde_json_reads_it() {
        let read = same::<Scalars>(&scalars()).unwrap();
        assert_eq!(read.absent, None);
        assert_eq!(read.wide, i128::from(u64::MAX));
        let mut some = scalars();
        some["option"] = json!("x");
        some["bytes"] = json!("hi");
        some["float"] = json!(-3);
        assert_eq!(same::<Scalars>(&some).unwrap().option.as_deref(), Some("x"));
        // A struct reads from an array of its fields, as serde_json reads it.
        assert_eq!(
            same::<(u8, Wrapper)>(&json!([1, "w"])).unwrap(),
            (1, Wrapper("w".into()))
        );
        // A newtype struct is its content, as in serde_json.
        assert!(same::<Wrapper>(&json!(["w"])).is_err());
    }

    #[test]
    fn a_value_of_the_wrong_type_names_both_json_types() {
        let cases = [
            ("boolean", json!("yes"), "a boolean", "a string"),
            ("unsigned", json!(-1.5), "an integer", "a number"),
            ("signed", json!("1"), "a number", "a string"),
            ("float", json!(null), "a number", "null"),
            ("text", json!(7), "a string", "a number"),
            ("list", json!({}), "an array", "an object"),
            ("map", json!([]), "an object", "an array"),
            ("null", json!(false), "null", "a boolean"),
            ("wrapper", json!([1]), "a string", "an array"),
        ];
        for (field, bad, expected, found) in cases {
            let mut value = scalars();
            value[field] = bad;
            match same::<Scalars>(&value) {
                Err(Reason::WrongType {
                    expected: e,
                    found: f,
                }) => assert_eq!((e.as_str(), f.as_str()), (expected, found), "{field}"),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn out_of_range_numbers_are_the_visitors_invalid_value() {
        for (field, bad) in [
            ("small", json!(256)),
            ("unsigned", json!(-1)),
            ("signed", json!(u64::MAX)),
        ] {
            let mut value = scalars();
            value[field] = bad;
            assert!(
                matches!(same::<Scalars>(&value), Err(Reason::Other(message)) if message.starts_with("invalid value")),
                "{field}"
            );
        }
    }

    #[test]
    fn missing_fields_and_extra_elements() {
        let mut value = scalars();
        value.as_object_mut().unwrap().remove("text");
        assert!(matches!(
            same::<Scalars>(&value),
            Err(Reason::MissingField("text"))
        ));
        assert!(matches!(
            same::<(u8, u8)>(&json!([1, 2, 3])),
            Err(Reason::Other(message)) if message.starts_with("invalid length 3")
        ));
        assert!(same::<(u8, u8)>(&json!([1])).is_err());
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum External {
        Unit,
        Newtype(u8),
        Tuple(u8, String),
        Struct { field: bool },
    }

    #[test]
    fn externally_tagged_enums() {
        assert_eq!(same::<External>(&json!("unit")).unwrap(), External::Unit);
        assert_eq!(
            same::<External>(&json!({ "unit": null })).unwrap(),
            External::Unit
        );
        assert_eq!(
            same::<External>(&json!({ "newtype": 3 })).unwrap(),
            External::Newtype(3)
        );
        assert_eq!(
            same::<External>(&json!({ "tuple": [1, "x"] })).unwrap(),
            External::Tuple(1, "x".into())
        );
        assert_eq!(
            same::<External>(&json!({ "struct": { "field": true } })).unwrap(),
            External::Struct { field: true }
        );
        assert!(matches!(
            same::<External>(&json!("other")),
            Err(Reason::UnknownVariant(variant)) if variant == "other"
        ));
        for bad in [
            json!("newtype"),
            json!({ "unit": 1 }),
            json!({ "unit": null, "newtype": 1 }),
            json!({}),
            json!(7),
            json!({ "struct": [true, false] }),
        ] {
            assert!(same::<External>(&bad).is_err(), "{bad}");
        }
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Internal {
        Text {
            text: String,
        },
        Image(Wrapped),
        #[serde(other)]
        Other,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Wrapped {
        source: String,
        #[serde(default)]
        detail: Option<String>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Untagged {
        Number(u64),
        Text(String),
        Flags(Vec<bool>),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "kind", content = "body")]
    enum Adjacent {
        One(u8),
        Two { a: String },
    }

    #[test]
    fn internally_untagged_and_adjacently_tagged_enums() {
        assert_eq!(
            same::<Internal>(&json!({ "type": "text", "text": "hi" })).unwrap(),
            Internal::Text { text: "hi".into() }
        );
        assert_eq!(
            same::<Internal>(&json!({ "type": "image", "source": "s", "detail": null })).unwrap(),
            Internal::Image(Wrapped {
                source: "s".into(),
                detail: None
            })
        );
        assert_eq!(
            same::<Internal>(&json!({ "type": "video" })).unwrap(),
            Internal::Other
        );
        assert!(matches!(
            same::<Internal>(&json!({ "text": "hi" })),
            Err(Reason::MissingField("type"))
        ));
        // Read through serde's buffering: the error is the visitor's own.
        assert!(matches!(
            same::<Internal>(&json!({ "type": "text", "text": 7 })),
            Err(Reason::WrongType { expected, found }) if expected == "a string" && found == "a number"
        ));
        assert!(matches!(
            same::<Internal>(&json!({ "type": "image" })),
            Err(Reason::MissingField("source"))
        ));
        for (value, expected) in [
            (json!(7), Untagged::Number(7)),
            (json!("x"), Untagged::Text("x".into())),
            (json!([true]), Untagged::Flags(vec![true])),
        ] {
            assert_eq!(same::<Untagged>(&value).unwrap(), expected);
        }
        assert!(same::<Untagged>(&json!({})).is_err());
        assert_eq!(
            same::<Adjacent>(&json!({ "kind": "One", "body": 1 })).unwrap(),
            Adjacent::One(1)
        );
        assert_eq!(
            same::<Adjacent>(&json!({ "kind": "Two", "body": { "a": "x" } })).unwrap(),
            Adjacent::Two { a: "x".into() }
        );
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Flattened {
        name: String,
        #[serde(default)]
        count: Option<u64>,
        #[serde(flatten)]
        rest: Map<String, Value>,
    }

    #[test]
    fn flatten_keeps_the_other_members_and_types_the_known_ones() {
        let read = same::<Flattened>(&json!({ "name": "n", "x": [1], "y": null })).unwrap();
        assert_eq!(
            read.rest,
            json!({ "x": [1], "y": null }).as_object().cloned().unwrap()
        );
        // A known field of a struct with flattened members is read directly,
        // with the JSON type it needs.
        assert!(matches!(
            same::<Flattened>(&json!({ "name": 1 })),
            Err(Reason::WrongType { expected, .. }) if expected == "a string"
        ));
        assert!(matches!(
            same::<Flattened>(&json!({ "count": 1 })),
            Err(Reason::MissingField("name"))
        ));
    }

    /// The keys and strings the test types read.
    const WORDS: &[&str] = &[
        "null",
        "boolean",
        "unsigned",
        "small",
        "signed",
        "wide",
        "float",
        "text",
        "character",
        "list",
        "pair",
        "map",
        "value",
        "option",
        "wrapper",
        "unit",
        "bytes",
        "type",
        "image",
        "source",
        "detail",
        "kind",
        "body",
        "One",
        "Two",
        "a",
        "name",
        "count",
        "newtype",
        "tuple",
        "struct",
        "field",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// On any value, every test type reads as serde_json reads it.
        #[test]
        fn any_value_reads_as_serde_json_reads_it(value in json_tree(WORDS)) {
            let _ = same::<Scalars>(&value);
            let _ = same::<External>(&value);
            let _ = same::<Internal>(&value);
            let _ = same::<Untagged>(&value);
            let _ = same::<Adjacent>(&value);
            let _ = same::<Flattened>(&value);
            let _ = same::<Vec<Option<Wrapped>>>(&value);
            let _ = same::<BTreeMap<String, (u8, bool)>>(&value);
        }

        /// On any value, every test type fails with the kind and path the
        /// crate gave before, when it read serde_json's messages.
        #[test]
        fn any_value_fails_with_the_kind_and_path_of_before(value in json_tree(WORDS)) {
            same_kind::<Scalars>(&value);
            same_kind::<External>(&value);
            same_kind::<Internal>(&value);
            same_kind::<Untagged>(&value);
            same_kind::<Adjacent>(&value);
            same_kind::<Flattened>(&value);
            same_kind::<Vec<Option<Wrapped>>>(&value);
            same_kind::<BTreeMap<String, (u8, bool)>>(&value);
        }
    }
}
