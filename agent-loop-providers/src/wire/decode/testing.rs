//! What the decode tests share: a strategy for JSON trees, and the check
//! that [`decode`](super::decode) fails with the kind and path the crate
//! gave when it read serde_json's error messages.

use std::fmt::{self, Debug};

use proptest::prelude::*;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::Value;

use super::FromMembers;

use crate::wire::WireErrorKind;
use agent_loop_core::conversation::WireFormat;

/// A JSON tree at most 4 levels deep, its keys and strings mostly from
/// `words` (so that it reaches past a type's first field).
pub(crate) fn json_tree(words: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let word = prop_oneof![
        4 => proptest::sample::select(words).prop_map(str::to_owned),
        1 => "[a-z]{0,3}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![Just(0_i64), Just(-1), Just(255), Just(256), any::<i64>()]
            .prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e3..1e3_f64).prop_map(Value::from),
        word.clone().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((word.clone(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// The kind the crate decided before this deserializer, by reading
/// serde_json's error message (`missing field `x``, `invalid type: …,
/// expected …`, `unknown variant `x``): the oracle the properties hold
/// [`decode`](super::decode) to.
fn kind_from_message(message: &str, field: String) -> WireErrorKind {
    if let Some(rest) = message.strip_prefix("missing field `")
        && let Some(name) = rest.strip_suffix('`')
    {
        return WireErrorKind::MissingField {
            field: name.to_owned(),
        };
    }
    if let Some(rest) = message.strip_prefix("invalid type: ")
        && let Some((found, _expected)) = rest.split_once(", expected ")
    {
        let found = match found.split([' ', '`']).next().unwrap_or(found) {
            "map" => "an object",
            "sequence" => "an array",
            "string" | "char" => "a string",
            "boolean" => "a boolean",
            "integer" | "floating" => "a number",
            "null" | "unit" => "null",
            _ => found,
        };
        return WireErrorKind::WrongType {
            field,
            expected: String::new(),
            found: found.to_owned(),
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

/// `value` decoded as `T`, and as serde_json's deserializer with the
/// old reading of its message: the same path and the same kind (for a
/// wrong type, the same field and found type; for another error, the
/// same kind only, since a message may word its expectation another
/// way).
pub(crate) fn same_kind<T: DeserializeOwned>(value: &Value) {
    let ours = super::decode::<T>(WireFormat::OpenAiChat, "root", value);
    let theirs = serde_path_to_error::deserialize::<_, T>(value);
    match (ours, theirs) {
        (Ok(_), Ok(_)) => {}
        (Err(ours), Err(theirs)) => {
            let path = super::join("root", &theirs.path().to_string());
            assert_eq!(ours.path, path, "{value}");
            let field = path
                .rsplit(['.', '['])
                .next()
                .unwrap_or(&path)
                .trim_end_matches(']');
            let old = kind_from_message(&theirs.inner().to_string(), field.to_owned());
            match (&ours.kind, &old) {
                // The two differences `decode` makes on purpose, both in
                // enum variants with content, which no format type has:
                // serde_json reads a string naming such a variant, and an
                // empty array as a tuple variant's content, as a unit
                // (read back as "null"); `decode` says what the payload
                // holds: a string where a one-member object is needed,
                // and an array of the wrong length.
                (
                    WireErrorKind::WrongType {
                        expected, found, ..
                    },
                    WireErrorKind::WrongType {
                        found: old_found, ..
                    },
                ) if expected == "an object of one member"
                    && found == "a string"
                    && old_found == "null" => {}
                (WireErrorKind::Invalid { message }, WireErrorKind::WrongType { found, .. })
                    if found == "null" && message.starts_with("invalid length 0") => {}
                (
                    WireErrorKind::WrongType { field, found, .. },
                    WireErrorKind::WrongType {
                        field: old_field,
                        found: old_found,
                        ..
                    },
                ) => assert_eq!((field, found), (old_field, old_found), "{value}"),
                (WireErrorKind::Invalid { .. }, WireErrorKind::Invalid { .. }) => {}
                (ours, old) => assert_eq!(ours, old, "{value}"),
            }
        }
        (ours, theirs) => panic!(
            "{value}: decode gave {:?}, serde_json {:?}",
            ours.err(),
            theirs.err().map(|error| error.to_string())
        ),
    }
}

/// `value` built by [`FromMembers`] is what [`decode`](super::decode)
/// gives for it, whenever it is built; returns whether it was.
pub(crate) fn same_members<T: FromMembers + PartialEq + Debug>(value: &Value) -> bool {
    let Value::Object(members) = value else {
        return false;
    };
    let Some(built) = T::from_members(members.clone()) else {
        return false;
    };
    let decoded = super::decode::<T>(WireFormat::OpenAiChat, "root", value);
    assert_eq!(Ok(&built), decoded.as_ref(), "{value}");
    true
}

/// The first key an object of the JSON text `bytes` holds twice (a
/// `Value` would keep the last; a server may refuse the body or read
/// another); `None` when none does.
pub(crate) fn repeated_key(bytes: &[u8]) -> Option<String> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    match Keys.deserialize(&mut deserializer) {
        Ok(()) => None,
        Err(error) => Some(error.to_string()),
    }
}

/// Walks a value, failing at the first object with a repeated key.
struct Keys;

impl<'de> DeserializeSeed<'de> for Keys {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Keys {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("JSON")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Keys)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(key));
            }
            map.next_value_seed(Keys)?;
        }
        Ok(())
    }
}

#[test]
fn a_repeated_key_is_found_at_any_depth() {
    assert_eq!(repeated_key(br#"{"a":[{"b":1,"c":{"d":2}}],"e":3}"#), None);
    assert!(
        repeated_key(br#"{"a":[{"b":1,"c":{"d":2,"d":3}}]}"#)
            .is_some_and(|key| key.starts_with('d'))
    );
}
