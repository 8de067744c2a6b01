//! A request body as the HTTP models write it ([`Body`]: fields, and the
//! views of the request written straight into the bytes sent), and the
//! interface of a format's stream assembler as the send path drives it
//! ([`StreamAssembler`]).

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::wire::encode::to_value;
use crate::wire::stream::StreamDelta;
use crate::wire::{Dropped, WireError};
use agent_loop_core::conversation::ModelResponse;

/// A request body, and what the export of its conversation left out (see
/// [`Dropped`]), with message indices into the request's conversation.
///
/// The body's fields are a map, as when the whole body was one `Value`,
/// except those written from views (the conversation, the tools): each
/// holds `null` in the map and is written from its view in its place, so
/// it is serialised once, straight into the bytes sent, without a `Value`
/// copy of it. A vendor field set with `extra` still wins: it replaces
/// the placeholder (a `null` one removes the field), and the view is then
/// not written.
pub(crate) struct Body<V> {
    fields: Map<String, Value>,
    views: Vec<(&'static str, V)>,
    pub(crate) dropped: Vec<Dropped>,
}

/// What a field written from a view holds in a [`Body`]'s fields until
/// the body is written: `null`, which no vendor field leaves behind (a
/// `null` one removes its field).
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) const PLACEHOLDER: Value = Value::Null;

impl<V: Serialize> Body<V> {
    /// The body of `fields`, each field of `views` written from its view
    /// where `fields` holds [`PLACEHOLDER`] (with no views, every field is
    /// in `fields`); `dropped` is what the export of the conversation left
    /// out, with message indices counted from `first`, the index in the
    /// request's conversation of the first message exported (after those
    /// `previous_response_id` stands for, or those merged into the
    /// model's own system message, which has nothing to drop).
    pub(crate) fn new(
        fields: Map<String, Value>,
        views: Vec<(&'static str, V)>,
        mut dropped: Vec<Dropped>,
        first: usize,
    ) -> Self {
        for item in &mut dropped {
            item.message += first;
        }
        Self {
            fields,
            views,
            dropped,
        }
    }

    /// The view of the field `key`, when the field still holds the
    /// placeholder.
    fn view_at(&self, key: &str, value: &Value) -> Option<&V> {
        if !value.is_null() {
            return None;
        }
        self.views
            .iter()
            .find_map(|(field, view)| (*field == key).then_some(view))
    }

    /// The body as one JSON value, written by the same serialisation as
    /// the bytes sent: what `request_body` shows.
    pub(crate) fn value(&self) -> Value {
        to_value(self)
    }
}

/// A field of a [`Body`] written from a view of the request: the
/// conversation as the model's format writes it (messages, or input
/// items), or the tools it offers.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) enum FieldView<C, T> {
    Conversation(C),
    Tools(T),
}

#[cfg(any(feature = "openai", feature = "anthropic"))]
impl<C: Serialize, T: Serialize> Serialize for FieldView<C, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Conversation(conversation) => conversation.serialize(serializer),
            Self::Tools(tools) => tools.serialize(serializer),
        }
    }
}

impl<V: Serialize> Serialize for Body<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, value) in &self.fields {
            match self.view_at(key, value) {
                Some(view) => map.serialize_entry(key, view)?,
                None => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// A format's stream assembler, as the send path drives it.
pub(crate) trait StreamAssembler: Default {
    /// Reads one server-sent event (its name and data): the pieces to send
    /// as turn events, and whether the stream ends with it.
    fn read_event(
        &mut self,
        event: &str,
        data: &str,
    ) -> Result<(Vec<StreamDelta>, bool), WireError>;

    /// The assembled response, once the stream ended.
    fn finish(self) -> Result<ModelResponse, WireError>;

    /// `true` once the stream has said why the model stopped, so that
    /// [`finish`](Self::finish) returns the whole answer even if the
    /// terminal event never comes; `false` unless the format can tell.
    fn is_whole(&self) -> bool {
        false
    }
}
