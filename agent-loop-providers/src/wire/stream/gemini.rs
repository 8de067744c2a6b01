//! Gemini `streamGenerateContent` chunks assembled into the response
//! [`gemini::parse_response`] gives
//! for the same answer unstreamed.
//!
//! Each chunk is a whole `GenerateContentResponse` holding the parts that
//! arrived since the last one: with `?alt=sse` each `data:` line is one;
//! without, the body is one JSON array of them (feed its elements to
//! [`ChunkAssembler::push_chunk`]). The assembler merges them into one
//! response:
//!
//! - a text part continues the text part before it when both are thoughts
//!   or both are not, and the one before carries no `thoughtSignature` yet:
//!   Gemini sends a part's signature with its **last** piece (or alone, on
//!   an empty text), so the merged part carries it, as unstreamed;
//! - every other part (`functionCall`, which arrives whole, `inlineData`,
//!   …) is a part of its own, its `thoughtSignature` with it;
//! - `finishReason`, `usageMetadata` and every other field are those of the
//!   last chunk that has them.
//!
//! [`ChunkAssembler::finish`] parses the merged response
//! ([`ChunkAssembler::merged`]) with `parse_response`, so the two cannot
//! drift apart. A chunk `{"error": {"code", "message", "status"}}` is the
//! provider's error, [`WireErrorKind::Provider`] with its `status` as the
//! type; a stream that ends before any chunk had a `finishReason` (or a
//! `promptFeedback.blockReason`) is [`WireErrorKind::Incomplete`].
//!
//! ```
//! use agent_loop_providers::wire::stream::{StreamDelta, gemini::ChunkAssembler};
//!
//! let mut stream = ChunkAssembler::new();
//! let deltas = stream.push(r#"{"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}"#)?;
//! assert_eq!(deltas, [StreamDelta::Text("Hel".into())]);
//! stream.push(r#"{"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}]}, "finishReason": "STOP"}]}"#)?;
//! let response = stream.finish()?;
//! assert_eq!(response.message.text(), "Hello");
//! # Ok::<_, agent_loop_providers::wire::WireError>(())
//! ```

use serde_json::{Map, Value};

use super::{StreamDelta, parse_data};
use crate::wire::decode::check_depth;
use crate::wire::error::{WireError, WireErrorKind};
use crate::wire::gemini;
use agent_loop_core::conversation::{ModelResponse, WireFormat};

const FORMAT: WireFormat = WireFormat::Gemini;

/// The part fields that hold data (everything else is metadata).
const DATA_FIELDS: &[&str] = &[
    "text",
    "inlineData",
    "inline_data",
    "fileData",
    "file_data",
    "functionCall",
    "function_call",
    "functionResponse",
    "function_response",
    "executableCode",
    "executable_code",
    "codeExecutionResult",
    "code_execution_result",
];

/// Assembles the chunks of one streamed `generateContent` answer.
#[derive(Debug, Default)]
pub struct ChunkAssembler {
    /// The merged parts of the first candidate.
    parts: Vec<Map<String, Value>>,
    /// The candidate's other fields (`finishReason`, `finishMessage`,
    /// `safetyRatings`, …), from the last chunk that had them.
    candidate: Map<String, Value>,
    /// The content's `role`, once seen.
    role: Option<Value>,
    /// Whether any chunk had a candidate.
    has_candidate: bool,
    /// The response's other fields (`usageMetadata`, `promptFeedback`,
    /// `modelVersion`, `responseId`), from the last chunk that had them.
    top: Map<String, Value>,
    /// Function calls so far, for [`StreamDelta::ToolCallStarted`].
    calls: usize,
    chunks: usize,
    /// A `finishReason` or a `blockReason` arrived.
    finished: bool,
    failed: Option<WireError>,
}

fn signature(part: &Map<String, Value>) -> Option<&Value> {
    part.get("thoughtSignature")
        .or_else(|| part.get("thought_signature"))
        .filter(|signature| !signature.is_null())
}

fn is_thought(part: &Map<String, Value>) -> bool {
    part.get("thought")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// A text part: one with `text`, which `parse_response` reads first.
fn is_text(part: &Map<String, Value>) -> bool {
    part.contains_key("text")
}

/// A function call as `parse_response` reads it: no `text` or
/// `inlineData` before it.
fn call(part: &Map<String, Value>) -> Option<&Value> {
    if is_text(part) || part.contains_key("inlineData") || part.contains_key("inline_data") {
        return None;
    }
    part.get("functionCall")
        .or_else(|| part.get("function_call"))
}

/// A part with no data at all (a `thoughtSignature` sent alone).
fn is_bare(part: &Map<String, Value>) -> bool {
    DATA_FIELDS.iter().all(|field| !part.contains_key(*field))
}

impl ChunkAssembler {
    /// An assembler for one stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads one SSE `data:` payload (one `GenerateContentResponse`
    /// chunk); blank data is nothing.
    ///
    /// # Errors
    ///
    /// [`WireErrorKind::NotJson`] for data that is not JSON; otherwise as
    /// [`push_chunk`](Self::push_chunk).
    pub fn push(&mut self, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let path = format!("chunks[{}]", self.chunks);
        match parse_data(FORMAT, &path, data) {
            Ok(chunk) => self.push_chunk(&chunk),
            Err(error) => Err(self.fail(error)),
        }
    }

    fn fail(&mut self, error: WireError) -> WireError {
        self.failed = Some(error.clone());
        error
    }

    /// Reads one chunk: its text and thought pieces, and the calls it
    /// starts, as [`StreamDelta`]s.
    ///
    /// # Errors
    ///
    /// [`WireErrorKind::Provider`] for an error chunk; `WrongType` for a
    /// chunk, candidate, content or part that is not an object, or
    /// `candidates`/`parts` that is not an array; [`WireErrorKind::TooDeep`]
    /// for a chunk nested deeper than 128 levels. Paths are rooted at
    /// `chunks[i]`. After an error, every later call returns it again.
    pub fn push_chunk(&mut self, chunk: &Value) -> Result<Vec<StreamDelta>, WireError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let path = format!("chunks[{}]", self.chunks);
        self.chunks += 1;
        self.read_chunk(&path, chunk)
            .map_err(|error| self.fail(error))
    }

    fn read_chunk(&mut self, path: &str, chunk: &Value) -> Result<Vec<StreamDelta>, WireError> {
        check_depth(FORMAT, path, chunk)?;
        let wrong = |path: &str, field: &str, expected: &str, found: &Value| {
            WireError::new(
                FORMAT,
                path,
                WireErrorKind::WrongType {
                    field: field.to_owned(),
                    expected: expected.to_owned(),
                    found: agent_loop_core::support::json::type_name(found).to_owned(),
                },
            )
        };
        let Value::Object(chunk) = chunk else {
            return Err(wrong(path, "chunk", "an object", chunk));
        };
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            return Err(WireError::new(
                FORMAT,
                format!("{path}.error"),
                gemini::provider_error(error),
            ));
        }
        let mut deltas = Vec::new();
        for (key, value) in chunk {
            if key != "candidates" {
                if key == "promptFeedback" || key == "prompt_feedback" {
                    let blocked = value
                        .get("blockReason")
                        .or_else(|| value.get("block_reason"))
                        .is_some_and(|reason| !reason.is_null());
                    self.finished |= blocked;
                }
                self.top.insert(key.clone(), value.clone());
            }
        }
        let candidates = match chunk.get("candidates") {
            None | Some(Value::Null) => return Ok(deltas),
            Some(Value::Array(candidates)) => candidates,
            Some(other) => return Err(wrong(path, "candidates", "an array", other)),
        };
        // The first candidate only, as `parse_response` reads it.
        let Some((position, candidate)) = candidates.iter().enumerate().find(|(_, candidate)| {
            candidate.get("index").and_then(Value::as_u64).unwrap_or(0) == 0
        }) else {
            return Ok(deltas);
        };
        let path = format!("{path}.candidates[{position}]");
        let Value::Object(candidate) = candidate else {
            return Err(wrong(&path, &position.to_string(), "an object", candidate));
        };
        self.has_candidate = true;
        for (key, value) in candidate {
            match key.as_str() {
                "content" => {}
                "finishReason" | "finish_reason" => {
                    self.finished |= !value.is_null();
                    self.candidate.insert(key.clone(), value.clone());
                }
                _ => {
                    self.candidate.insert(key.clone(), value.clone());
                }
            }
        }
        let Some(content) = candidate.get("content").filter(|c| !c.is_null()) else {
            return Ok(deltas);
        };
        let content_path = format!("{path}.content");
        let Value::Object(content) = content else {
            return Err(wrong(&path, "content", "an object", content));
        };
        if let Some(role) = content.get("role") {
            self.role = Some(role.clone());
        }
        let parts = match content.get("parts") {
            None | Some(Value::Null) => return Ok(deltas),
            Some(Value::Array(parts)) => parts,
            Some(other) => return Err(wrong(&content_path, "parts", "an array", other)),
        };
        for (index, part) in parts.iter().enumerate() {
            let Value::Object(part) = part else {
                return Err(wrong(
                    &format!("{content_path}.parts[{index}]"),
                    &index.to_string(),
                    "an object",
                    part,
                ));
            };
            self.merge_part(part, &mut deltas);
        }
        Ok(deltas)
    }

    fn merge_part(&mut self, part: &Map<String, Value>, deltas: &mut Vec<StreamDelta>) {
        let thought = is_thought(part);
        if is_text(part) {
            let piece = part.get("text").and_then(Value::as_str).unwrap_or_default();
            if !piece.is_empty() {
                deltas.push(if thought {
                    StreamDelta::Reasoning(piece.to_owned())
                } else {
                    StreamDelta::Text(piece.to_owned())
                });
            }
        }
        let continues = |last: &Map<String, Value>| {
            is_text(last)
                && signature(last).is_none()
                && (is_bare(part) || is_text(part) && is_thought(last) == thought)
        };
        if (is_text(part) || is_bare(part))
            && let Some(last) = self.parts.last_mut()
            && continues(last)
        {
            for (key, value) in part {
                match (key.as_str(), last.get_mut(key)) {
                    ("text", Some(Value::String(text))) => {
                        text.push_str(value.as_str().unwrap_or_default());
                    }
                    ("thought", _) if is_bare(part) => {}
                    _ => {
                        last.insert(key.clone(), value.clone());
                    }
                }
            }
            return;
        }
        if let Some(call) = call(part) {
            let text = |key: &str| {
                call.get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            deltas.push(StreamDelta::ToolCallStarted {
                index: self.calls,
                id: text("id"),
                name: text("name"),
            });
            self.calls += 1;
        }
        self.parts.push(part.clone());
    }

    /// The merged `GenerateContentResponse` so far: the first candidate
    /// with its merged `content.parts` and its other fields from the last
    /// chunk that had them, and the response's other fields likewise.
    pub fn merged(&self) -> Value {
        let mut response = self.top.clone();
        if self.has_candidate {
            let mut content = Map::new();
            content.insert(
                "role".into(),
                self.role.clone().unwrap_or_else(|| Value::from("model")),
            );
            content.insert(
                "parts".into(),
                Value::Array(self.parts.iter().cloned().map(Value::Object).collect()),
            );
            let mut candidate = self.candidate.clone();
            candidate.insert("content".into(), Value::Object(content));
            response.insert(
                "candidates".into(),
                Value::Array(vec![Value::Object(candidate)]),
            );
        }
        Value::Object(response)
    }

    /// `true` once a chunk gave a `finishReason` (or the prompt's
    /// `blockReason`) and no error came: [`finish`](Self::finish) then
    /// returns the whole answer even if the server holds the stream open.
    /// The usage of a later chunk may still follow.
    pub fn is_whole(&self) -> bool {
        self.failed.is_none() && self.finished
    }

    /// The assembled response: [`merged`](Self::merged) parsed with
    /// [`gemini::parse_response`].
    ///
    /// # Errors
    ///
    /// The stream's error if it had one; [`WireErrorKind::Incomplete`] when
    /// no chunk had a `finishReason` or `blockReason` (the connection was
    /// most likely cut); otherwise `parse_response`'s errors.
    pub fn finish(self) -> Result<ModelResponse, WireError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        if !self.finished {
            return Err(WireError::new(FORMAT, "chunks", WireErrorKind::Incomplete));
        }
        gemini::parse_response(&self.merged())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::stream::test_support::fixture;
    use agent_loop_core::conversation::{ContentPart, FinishReason};

    fn sse_data(name: &str) -> Vec<String> {
        let path = format!(
            "{}/../tests/fixtures/wire-real/gemini/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| data.trim().to_owned())
            .collect()
    }

    #[test]
    fn the_sse_recording_assembles_with_its_signature_on_the_call() {
        let mut stream = ChunkAssembler::new();
        let mut deltas = Vec::new();
        for data in sse_data("gem_sse_sig.sse") {
            deltas.extend(stream.push(&data).unwrap());
        }
        assert!(
            matches!(&deltas[..], [StreamDelta::ToolCallStarted { index: 0, name, .. }] if name == "get_country")
        );
        let merged = stream.merged();
        let response = stream.finish().unwrap();
        assert_eq!(response, gemini::parse_response(&merged).unwrap());
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        let call = response.message.tool_calls().next().unwrap();
        assert!(call.extras.fields_for(FORMAT).unwrap()["thoughtSignature"].is_string());
        assert_eq!(response.usage.output_tokens, 10 + 202);
    }

    #[test]
    fn the_array_recording_assembles_chunk_by_chunk() {
        let chunks = fixture("gemini/gem_stream_array.stream.json");
        let mut stream = ChunkAssembler::new();
        let mut deltas = Vec::new();
        for chunk in chunks.as_array().unwrap() {
            deltas.extend(stream.push_chunk(chunk).unwrap());
        }
        assert!(
            matches!(&deltas[0], StreamDelta::Reasoning(text) if text.starts_with("**Generating"))
        );
        let response = stream.finish().unwrap();
        assert!(matches!(
            &response.message.content[0],
            ContentPart::Reasoning(_)
        ));
        assert!(matches!(
            &response.message.content[1],
            ContentPart::ToolCall(_)
        ));
    }

    #[test]
    fn text_pieces_join_and_a_late_signature_lands_on_their_part() {
        let mut stream = ChunkAssembler::new();
        for part in [
            json!({ "text": "Think", "thought": true }),
            json!({ "text": "ing", "thought": true }),
            json!({ "text": "Hel" }),
            json!({ "text": "lo" }),
            json!({ "text": "", "thoughtSignature": "c2ln" }),
            json!({ "text": " again" }),
        ] {
            let chunk =
                json!({ "candidates": [{ "content": { "role": "model", "parts": [part] } }] });
            stream.push_chunk(&chunk).unwrap();
        }
        stream
            .push_chunk(&json!({ "candidates": [{ "finishReason": "STOP" }], "usageMetadata": { "promptTokenCount": 3 } }))
            .unwrap();
        assert_eq!(
            stream.merged()["candidates"][0]["content"]["parts"],
            json!([
                { "text": "Thinking", "thought": true },
                { "text": "Hello", "thoughtSignature": "c2ln" },
                { "text": " again" }
            ])
        );
        let response = stream.finish().unwrap();
        assert_eq!(response.usage.input_tokens, 3);
    }

    #[test]
    fn errors_and_cut_streams_are_typed() {
        let mut stream = ChunkAssembler::new();
        let error = stream
            .push(r#"{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}"#)
            .unwrap_err();
        assert_eq!(
            error.kind,
            WireErrorKind::Provider {
                error_type: "UNAVAILABLE".into(),
                message: "overloaded".into()
            }
        );
        assert_eq!(stream.push("{}").unwrap_err(), error);
        assert_eq!(stream.finish().unwrap_err(), error);
        let mut cut = ChunkAssembler::new();
        cut.push(r#"{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}"#)
            .unwrap();
        assert_eq!(cut.finish().unwrap_err().kind, WireErrorKind::Incomplete);
        let mut bad = ChunkAssembler::new();
        assert!(matches!(
            bad.push("nope").unwrap_err().kind,
            WireErrorKind::NotJson { .. }
        ));
    }
}
