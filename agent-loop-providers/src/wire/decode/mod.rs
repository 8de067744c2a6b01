//! Reading a payload into a format's serde types, with the path of a bad
//! field and a typed [`WireErrorKind`]: serde derives do the parsing,
//! `serde_path_to_error` tracks where they are, and [`ValueDeserializer`]
//! reads the value with [`Reason`] as its error type, so that each of
//! serde's error constructors records its kind as it is called
//! (`missing_field`, `invalid_type`, `unknown_variant`; the others keep
//! serde's description), and no error message is ever read back.
//!
//! Tracking the path costs as much as the reading itself, and almost
//! every payload reads: [`decode`] first reads the value with serde_json's
//! own `Value` deserializer, which reads what `ValueDeserializer` reads,
//! and reads it again for the error only when that fails. What every
//! request reads (an answer, each streamed chunk) need not be a `Value`
//! at all: [`read_text`] reads its text straight into the types, with the
//! `Value` path left for its failures.

mod deserializer;
#[cfg(test)]
pub(crate) mod testing;
mod text;

pub(crate) use text::{read_text, read_whole};

use std::fmt;

use serde::de::{self, DeserializeOwned, Expected, Unexpected};
use serde_json::{Map, Value};

use self::deserializer::{ExpectedJson, ValueDeserializer};
use super::error::{WireError, WireErrorKind};
use agent_loop_core::conversation::WireFormat;
use agent_loop_core::support::json;

/// Refuses a payload that nests deeper than [`json::MAX_DEPTH`] levels,
/// with [`WireErrorKind::TooDeep`] at `root`: every public parser calls it
/// first, since deserialising walks the value recursively. JSON text never
/// nests deeper, so only a value built in code is refused.
pub(crate) fn check_depth(format: WireFormat, root: &str, value: &Value) -> Result<(), WireError> {
    if json::too_deep(value) {
        return Err(WireError::new(format, root, WireErrorKind::TooDeep));
    }
    Ok(())
}

/// Deserialises `value` into `T`; an error's path starts with `root`
/// (`response`, `messages`, `tools`, `result`, or a longer path for a
/// value found inside one, written only when an error names it: see
/// [`At`]).
pub(crate) fn decode<T: DeserializeOwned>(
    format: WireFormat,
    root: impl fmt::Display,
    value: &Value,
) -> Result<T, WireError> {
    // Without the path: what succeeds here is what the tracked reading
    // gives (the tests of `ValueDeserializer` hold the two to it).
    if let Ok(decoded) = T::deserialize(value) {
        return Ok(decoded);
    }
    serde_path_to_error::deserialize(ValueDeserializer::<Reason>::new(value)).map_err(|error| {
        let path = join(root, &error.path().to_string());
        let kind = error.into_inner().into_kind(|| last_segment(&path));
        WireError::new(format, path, kind)
    })
}

/// How the parts of a payload, held as owned JSON, are read into their
/// serde types: [`Checked`] or [`Moving`].
pub(crate) trait Reading: Copy {
    /// What stops the reading: a [`WireError`], or more.
    type Error: From<WireError>;

    /// `value`, found at `path`, as a `T`.
    fn read<T: DeserializeOwned>(
        self,
        format: WireFormat,
        path: &dyn fmt::Display,
        value: Value,
    ) -> Result<T, Self::Error>;

    /// [`read`](Self::read), for a struct of fields and flattened extras
    /// that [`FromMembers`] builds.
    fn read_members<T: FromMembers>(
        self,
        format: WireFormat,
        path: &dyn fmt::Display,
        value: Value,
    ) -> Result<T, Self::Error> {
        self.read(format, path, value)
    }
}

/// The path of a value inside another, `parent[index]` or
/// `parent.field`, written only when an error names it: most values
/// read, and a path made for each would cost more than the reading.
#[derive(Clone, Copy)]
pub(crate) enum At<'a> {
    Index(&'a dyn fmt::Display, usize),
    Field(&'a dyn fmt::Display, &'static str),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Index(parent, index) => write!(f, "{parent}[{index}]"),
            Self::Field(parent, field) => write!(f, "{parent}.{field}"),
        }
    }
}

/// A struct of fields and `#[serde(flatten)]` extras, built from an
/// object's members by moving them out: what its derived `Deserialize`
/// gives for the same object whenever that succeeds (the tests hold each
/// to it), without serde's buffering of every member that `flatten`
/// costs. [`Moving`] reads such a struct so.
pub(crate) trait FromMembers: DeserializeOwned {
    /// The struct, or `None` where the derived reading fails (or might);
    /// by default, the derived reading itself, of the owned object.
    // Only `Moving` builds, which only the OpenAI and Anthropic models use.
    #[cfg_attr(
        not(any(feature = "openai", feature = "anthropic", test)),
        expect(dead_code)
    )]
    fn from_members(members: Map<String, Value>) -> Option<Self> {
        Self::deserialize(Value::Object(members)).ok()
    }
}

/// The helpers of a [`FromMembers`] implementation: each takes one
/// member, as the derived reading reads its field.
pub(crate) mod members {
    use serde_json::{Map, Value};

    /// A required string.
    pub(crate) fn string(members: &mut Map<String, Value>, key: &str) -> Option<String> {
        match members.remove(key)? {
            Value::String(text) => Some(text),
            _ => None,
        }
    }

    /// An `Option<String>` with `#[serde(default)]`: absent or `null` is
    /// `None`.
    pub(crate) fn optional_string(
        members: &mut Map<String, Value>,
        key: &str,
    ) -> Option<Option<String>> {
        match members.remove(key) {
            None | Some(Value::Null) => Some(None),
            Some(Value::String(text)) => Some(Some(text)),
            Some(_) => None,
        }
    }

    /// An `Option<Value>` with `#[serde(default)]`: absent or `null` is
    /// `None`.
    pub(crate) fn optional_value(members: &mut Map<String, Value>, key: &str) -> Option<Value> {
        members.remove(key).filter(|value| !value.is_null())
    }

    /// An `Option<Vec<Value>>` with `#[serde(default)]`: absent or `null`
    /// is `None`.
    pub(crate) fn optional_array(
        members: &mut Map<String, Value>,
        key: &str,
    ) -> Option<Option<Vec<Value>>> {
        match members.remove(key) {
            None | Some(Value::Null) => Some(None),
            Some(Value::Array(items)) => Some(Some(items)),
            Some(_) => None,
        }
    }
}

/// Reading with [`decode`]: a failure is its error, with its path and
/// kind.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Checked;

impl Reading for Checked {
    type Error = WireError;

    fn read<T: DeserializeOwned>(
        self,
        format: WireFormat,
        path: &dyn fmt::Display,
        value: Value,
    ) -> Result<T, WireError> {
        decode(format, path, &value)
    }
}

/// Reading by moving what the value holds into the `T`, nothing copied
/// (serde_json's own reading of an owned `Value`, which reads what
/// `decode` reads): for an answer read straight from its text (see
/// [`read_text`]). A failure is [`Unread::Again`]: the caller reads the
/// answer again, [`Checked`], to report it.
#[cfg(any(feature = "openai", feature = "anthropic"))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moving;

#[cfg(any(feature = "openai", feature = "anthropic"))]
impl Reading for Moving {
    type Error = Unread;

    fn read<T: DeserializeOwned>(
        self,
        _format: WireFormat,
        _path: &dyn fmt::Display,
        value: Value,
    ) -> Result<T, Unread> {
        T::deserialize(value).map_err(|_| Unread::Again)
    }

    fn read_members<T: FromMembers>(
        self,
        _format: WireFormat,
        _path: &dyn fmt::Display,
        value: Value,
    ) -> Result<T, Unread> {
        match value {
            Value::Object(members) => T::from_members(members).ok_or(Unread::Again),
            _ => Err(Unread::Again),
        }
    }
}

/// Why an answer read [`Moving`] was not read: the [`WireError`] the
/// [`Checked`] reading gives too, or a part that did not read, which only
/// the [`Checked`] reading reports.
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[derive(Debug)]
pub(crate) enum Unread {
    Wire(WireError),
    // Made by `Moving`, which a build with the Gemini model alone does not
    // use (its answers are read as a `Value`).
    #[cfg_attr(not(any(feature = "openai", feature = "anthropic")), expect(dead_code))]
    Again,
}

#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
impl From<WireError> for Unread {
    fn from(error: WireError) -> Self {
        Self::Wire(error)
    }
}

/// Why a value did not deserialise, as serde's constructors said it; the
/// path is added by [`decode`].
#[derive(Debug, thiserror::Error)]
enum Reason {
    /// `missing_field`: a required field is absent.
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    /// `invalid_type`, or the deserializer's own check of the JSON type a
    /// target needs: what was found, and what the target needs.
    #[error("{found}, expected {expected}")]
    WrongType { expected: String, found: String },
    /// `unknown_variant`: a `type` (or other tag) this crate cannot read.
    #[error("unknown variant `{0}`")]
    UnknownVariant(String),
    /// Any other constructor (`custom`, `invalid_value`, `invalid_length`,
    /// `duplicate_field`), with serde's description.
    #[error("{0}")]
    Other(String),
}

impl Reason {
    /// The kind of a [`WireError`]; `field` names the culprit of a
    /// [`WireErrorKind::WrongType`] (the last segment of the path).
    fn into_kind(self, field: impl FnOnce() -> String) -> WireErrorKind {
        match self {
            Self::MissingField(name) => WireErrorKind::MissingField {
                field: name.to_owned(),
            },
            Self::WrongType { expected, found } => WireErrorKind::WrongType {
                field: field(),
                expected,
                found,
            },
            Self::UnknownVariant(found) => WireErrorKind::UnknownType { found },
            Self::Other(message) => WireErrorKind::Invalid { message },
        }
    }
}

impl de::Error for Reason {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Self::Other(message.to_string())
    }

    fn invalid_type(found: Unexpected<'_>, expected: &dyn Expected) -> Self {
        // The target's own words for what it takes (`an object`, `a string
        // or an array of content parts`): only a target that takes several
        // JSON types, or one read through serde's buffering, gets here;
        // the others were refused by the deserializer with the JSON type
        // they need.
        Self::WrongType {
            expected: expected.to_string(),
            found: found_type(found),
        }
    }

    fn unknown_variant(variant: &str, _expected: &'static [&'static str]) -> Self {
        Self::UnknownVariant(variant.to_owned())
    }

    fn missing_field(field: &'static str) -> Self {
        Self::MissingField(field)
    }
}

impl ExpectedJson for Reason {
    fn wrong_type(expected: &'static str, found: &'static str) -> Self {
        Self::WrongType {
            expected: expected.to_owned(),
            found: found.to_owned(),
        }
    }
}

/// What serde found, as the JSON type a reader of the payload knows. The
/// value itself is left out: it may be long, or something the payload
/// should not have carried (a key).
fn found_type(found: Unexpected<'_>) -> String {
    match found {
        Unexpected::Bool(_) => "a boolean",
        Unexpected::Unsigned(_) | Unexpected::Signed(_) | Unexpected::Float(_) => "a number",
        Unexpected::Char(_) | Unexpected::Str(_) | Unexpected::Bytes(_) => "a string",
        Unexpected::Unit => "null",
        Unexpected::Seq => "an array",
        Unexpected::Map => "an object",
        // Not a JSON value: serde's own words (`unit variant`, ...).
        other => return other.to_string(),
    }
    .to_owned()
}

/// `root` followed by serde_path_to_error's path (`.` when empty,
/// `choices[0].message` otherwise).
pub(crate) fn join(root: impl fmt::Display, path: &str) -> String {
    match path {
        "" | "." => root.to_string(),
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
