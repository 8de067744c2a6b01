//! Streamed responses assembled into the [`ModelResponse`] the same request
//! would have returned unstreamed.
//!
//! The transport reads the server-sent events (SSE) and hands each one's
//! event name and `data` text to an assembler:
//!
//! | format | assembler | fed with |
//! | --- | --- | --- |
//! | OpenAI Chat Completions | [`openai::ChunkAssembler`] | each `data:` payload (`chat.completion.chunk` JSON, then `[DONE]`), with its event name when it has one (an `error` event is the provider's error) |
//! | Anthropic Messages | [`anthropic::EventAssembler`] | each event's name and `data:` payload |
//! | OpenAI Responses | [`responses::EventAssembler`] | each event's name and `data:` payload |
//! | Gemini | [`gemini::ChunkAssembler`] | each `data:` payload of `streamGenerateContent?alt=sse` (a `GenerateContentResponse` chunk), or each element of the JSON array the endpoint sends without `alt=sse` |
//!
//! `push` returns the [`StreamDelta`]s a live UI shows as they arrive (text,
//! reasoning, a tool call starting); `finish` returns the whole response.
//! The assembled response is **exactly** what the format's
//! `parse_response` returns for the equivalent unstreamed body (same parts
//! in the same order, same extras, finish reason and usage): each
//! assembler rebuilds that body from the stream and parses it with
//! `parse_response`, so the two cannot drift apart.
//!
//! Nothing here does I/O, and nothing panics on input: a payload that is
//! not JSON, an index out of order, an event out of place and an error the
//! provider reports mid-stream are typed [`WireError`]s, with a path rooted
//! at the payload's position in the stream (`chunks[3].choices[0].delta`,
//! `events[7].delta`, `chunks[2].candidates[0].content`). After an error, an assembler returns that same error
//! from every later `push` and from `finish`.
//!
//! [`ModelResponse`]: agent_loop_core::conversation::ModelResponse

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod responses;

use serde_json::{Map, Value};

use super::error::{WireError, WireErrorKind, provider_error_kind};
use agent_loop_core::conversation::WireFormat;

/// A piece of a streamed response, as it arrives: what a live UI shows
/// before the whole [`ModelResponse`](agent_loop_core::conversation::ModelResponse)
/// is assembled.
///
/// The pieces of one response, concatenated per variant, are its text and
/// reasoning as sent (whitespace included: the assembled response joins
/// and drops blank text as `parse_response` does). More variants may come.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamDelta {
    /// Text the model is writing: an OpenAI `delta.content` piece (or a
    /// `text` part's text), an Anthropic `text_delta` (or the initial text
    /// of a `text` block).
    Text(String),
    /// Reasoning the model is writing: an OpenAI-compatible
    /// `delta.reasoning_content` piece (DeepSeek, vLLM), an Anthropic
    /// `thinking_delta` (or the initial text of a `thinking` block).
    /// Signatures and redacted thinking are not pieces: they are in the
    /// assembled response only.
    Reasoning(String),
    /// A refusal the model is writing: an OpenAI `delta.refusal` piece.
    Refusal(String),
    /// A tool call began. Its arguments arrive afterwards and are in the
    /// assembled response only.
    ToolCallStarted {
        /// The call's position among the response's tool calls, from 0
        /// (OpenAI's tool call `index`; for Anthropic, the count of
        /// `tool_use` blocks before it, not its content block index).
        index: usize,
        /// The call id, as known when the call started: `""` when the
        /// server sends it later or never (Gemini sends `""`; the turn
        /// runner mints one).
        id: String,
        /// The tool name the model asked for.
        name: String,
    },
}

/// Parses one SSE `data` payload; `path` names it in an error.
fn parse_data(format: WireFormat, path: &str, data: &str) -> Result<Value, WireError> {
    serde_json::from_str(data).map_err(|error| {
        WireError::new(
            format,
            path,
            WireErrorKind::NotJson {
                message: error.to_string(),
            },
        )
    })
}

/// The error a provider reported in a stream: `{"type", "message", "code"}`
/// (or a bare string) as a [`WireErrorKind::Provider`].
fn provider_error(error: &Value) -> WireErrorKind {
    provider_error_kind(error, &["type", "code"])
}

/// Adds one streamed field to `fields`: `null` is nothing; a string is
/// appended to the string there, an array's elements to the array there,
/// an object merged key by key by this same rule; anything else (or a
/// value of another type than the one there) replaces it.
fn merge_field(fields: &mut Map<String, Value>, key: String, piece: Value) {
    if piece.is_null() {
        return;
    }
    match fields.get_mut(&key) {
        Some(slot) => merge_value(slot, piece),
        None => {
            fields.insert(key, piece);
        }
    }
}

fn merge_value(slot: &mut Value, piece: Value) {
    match (slot, piece) {
        (_, Value::Null) => {}
        (Value::String(text), Value::String(more)) => text.push_str(&more),
        (Value::Array(items), Value::Array(more)) => items.extend(more),
        (Value::Object(fields), Value::Object(more)) => {
            for (key, value) in more {
                merge_field(fields, key, value);
            }
        }
        (slot, piece) => *slot = piece,
    }
}

/// Appends `piece` to the string at `key` (a missing or non-string value
/// becomes the piece).
fn append_text(fields: &mut Map<String, Value>, key: &str, piece: &str) {
    match fields.get_mut(key) {
        Some(Value::String(text)) => text.push_str(piece),
        _ => {
            fields.insert(key.to_owned(), Value::String(piece.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_appends_strings_and_arrays_and_merges_objects() {
        let mut fields = Map::new();
        merge_field(&mut fields, "a".into(), json!("x"));
        merge_field(&mut fields, "a".into(), json!("y"));
        merge_field(&mut fields, "a".into(), Value::Null);
        merge_field(&mut fields, "b".into(), json!([1]));
        merge_field(&mut fields, "b".into(), json!([2]));
        merge_field(&mut fields, "c".into(), json!({ "d": "p", "e": 1 }));
        merge_field(&mut fields, "c".into(), json!({ "d": "q", "e": 2 }));
        assert_eq!(
            Value::Object(fields),
            json!({ "a": "xy", "b": [1, 2], "c": { "d": "pq", "e": 2 } })
        );
    }

    #[test]
    fn provider_errors_read_type_code_and_message() {
        assert_eq!(
            provider_error(&json!({ "type": "overloaded_error", "message": "Overloaded" })),
            WireErrorKind::Provider {
                error_type: "overloaded_error".into(),
                message: "Overloaded".into()
            }
        );
        assert_eq!(
            provider_error(&json!({ "code": 500, "message": "boom" })),
            WireErrorKind::Provider {
                error_type: "500".into(),
                message: "boom".into()
            }
        );
        assert_eq!(
            provider_error(&json!("bad")),
            WireErrorKind::Provider {
                error_type: "error".into(),
                message: "bad".into()
            }
        );
        assert_eq!(
            provider_error(&json!({ "detail": 1 })),
            WireErrorKind::Provider {
                error_type: "error".into(),
                message: r#"{"detail":1}"#.into()
            }
        );
    }
}

/// Test helpers shared by the format modules.
#[cfg(test)]
pub(crate) mod test_support {
    use serde_json::Value;

    /// A recorded payload of `tests/fixtures/wire-real/`.
    pub(crate) fn fixture(path: &str) -> Value {
        let full = format!(
            "{}/../tests/fixtures/wire-real/{path}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("{full}: {error}"));
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{full}: {error}"))
    }

    /// `text` cut into pieces of at most `size` characters (none for `""`).
    pub(crate) fn pieces(text: &str, size: usize) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(size)
            .map(|piece| piece.iter().collect())
            .collect()
    }

    /// Every split of `text` into two pieces at a char boundary, the empty
    /// ends included.
    pub(crate) fn splits(text: &str) -> Vec<(String, String)> {
        (0..=text.len())
            .filter(|&at| text.is_char_boundary(at))
            .map(|at| (text[..at].to_owned(), text[at..].to_owned()))
            .collect()
    }
}
