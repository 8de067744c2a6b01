//! OpenAI Responses streams: server-sent events assembled into the
//! response [`responses::parse_response`] reads.
//!
//! A stream (`"stream": true`) is a run of events, each with a name and a
//! JSON `data` payload whose `type` repeats the name (the Responses
//! streaming reference, <https://platform.openai.com/docs/api-reference/responses-streaming>;
//! `ResponseStreamEvent` in the OpenAPI description):
//!
//! 1. `response.created`, `response.in_progress`: the response so far,
//!    its `output` empty;
//! 2. per output item, by `output_index`: `response.output_item.added`
//!    (the item, its text and arguments empty), the pieces of its content
//!    (`response.content_part.added`, `response.output_text.delta`,
//!    `response.refusal.delta`, `response.function_call_arguments.delta`,
//!    `response.reasoning_summary_part.added`,
//!    `response.reasoning_summary_text.delta`,
//!    `response.reasoning_text.delta`, and their `.done` events), then
//!    `response.output_item.done` with the whole item;
//! 3. the end: `response.completed`, or `response.incomplete` (the output
//!    limit or the content filter cut it), each with the whole response;
//!    or `response.failed` with its `error`. An `error` event
//!    (`{"type": "error", "code", "message"}`) reports a failure after the
//!    HTTP 200.
//!
//! Events of built-in tools (`response.code_interpreter_call.*`,
//! `response.web_search_call.*`, `response.file_search_call.*`, …) and
//! any other event this crate does not know are skipped: their items
//! arrive whole in `response.output_item.done`.
//!
//! ```
//! use agent_loop_core::conversation::FinishReason;
//! use agent_loop_providers::wire::stream::{StreamDelta, responses::EventAssembler};
//!
//! let mut stream = EventAssembler::new();
//! let mut deltas = Vec::new();
//! for (event, data) in [
//!     ("response.created", r#"{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}"#),
//!     ("response.output_item.added", r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}}"#),
//!     ("response.function_call_arguments.delta", r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1","delta":"{\"city\":"}"#),
//!     ("response.function_call_arguments.delta", r#"{"type":"response.function_call_arguments.delta","output_index":0,"item_id":"fc_1","delta":"\"Oslo\"}"}"#),
//!     ("response.completed", r#"{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":50,"output_tokens":12}}}"#),
//! ] {
//!     deltas.extend(stream.push(event, data)?);
//! }
//! assert_eq!(
//!     deltas,
//!     [StreamDelta::ToolCallStarted { index: 0, id: "call_1".into(), name: "get_weather".into() }]
//! );
//! let response = stream.finish()?;
//! let call = response.message.tool_calls().next().cloned();
//! assert_eq!(call.map(|call| call.arguments), Some(r#"{"city":"Oslo"}"#.to_owned()));
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.input_tokens, 50);
//! # Ok::<_, agent_loop_providers::wire::WireError>(())
//! ```

use serde::Deserialize;
use serde_json::{Map, Value};

use super::super::decode::decode;
use super::super::error::{WireError, WireErrorKind};
use super::super::responses::{self, provider_error};
use super::{StreamDelta, append_text, parse_data};
use agent_loop_core::conversation::{ModelResponse, WireFormat};

const FORMAT: WireFormat = WireFormat::OpenAiResponses;

/// Assembles the events of one Responses stream into a [`ModelResponse`].
///
/// Feed every event to [`push`](Self::push), in order, then call
/// [`finish`](Self::finish). The response is exactly what
/// [`responses::parse_response`] returns for the response of the stream's
/// last event (`response.completed` or `response.incomplete`): that event
/// carries the whole response, and the assembler parses it. When its
/// `output` is missing or empty, the items assembled from the stream take
/// its place:
///
/// - each item of `response.output_item.added`, in the order they came,
///   known by its `output_index` (the latest item added at an index when
///   a server repeats one; SGLang counts from 1), replaced whole by its
///   `response.output_item.done`;
/// - until then changed by its deltas: `response.content_part.added` adds
///   a part to its `content`, `response.output_text.delta` and
///   `response.refusal.delta` append to a part's `text` / `refusal`,
///   `response.function_call_arguments.delta` to its `arguments`, which
///   `response.function_call_arguments.done` sets whole (a server may send
///   a call's arguments only there),
///   `response.reasoning_summary_part.added` adds a `summary` part,
///   `response.reasoning_summary_text.delta` and
///   `response.reasoning_text.delta` append to a summary or content part's
///   `text`.
///
/// An event's name is its SSE `event:` field; when that is empty or
/// `message` (the SSE default), the payload's `type` is used instead.
#[derive(Debug, Default)]
pub struct EventAssembler {
    /// Events pushed so far, the next one's position.
    events: usize,
    /// The error returned, returned again.
    failed: Option<WireError>,
    /// The output items so far, in the order they were added.
    items: Vec<Map<String, Value>>,
    /// The `output_index` each item was added at, by position in `items`.
    indices: Vec<u64>,
    /// An event for an item that was never added: skipped, and the
    /// stream's error at [`finish`](Self::finish) unless the last event's
    /// response carries the whole output.
    unplaced: Option<WireError>,
    /// `function_call` items started so far.
    calls: usize,
    /// The response of the last event, once it came.
    done: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(expecting = "an event with a response")]
struct WithResponse {
    response: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "an output item event")]
struct ItemEvent {
    output_index: u64,
    item: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "a delta event")]
struct DeltaEvent {
    output_index: u64,
    #[serde(default)]
    content_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    part: Option<Map<String, Value>>,
    /// The whole arguments, in `response.function_call_arguments.done`.
    #[serde(default)]
    arguments: Option<String>,
}

/// Whether the assembler reads an event of this name.
fn is_read(event: &str) -> bool {
    matches!(
        event,
        "error"
            | "response.failed"
            | "response.completed"
            | "response.incomplete"
            | "response.output_item.added"
            | "response.output_item.done"
            | "response.content_part.added"
            | "response.output_text.delta"
            | "response.refusal.delta"
            | "response.function_call_arguments.delta"
            | "response.function_call_arguments.done"
            | "response.reasoning_summary_part.added"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta"
    )
}

impl EventAssembler {
    /// An assembler for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// `true` once the stream's last event (`response.completed`,
    /// `response.incomplete`) came.
    pub fn is_done(&self) -> bool {
        self.done.is_some()
    }

    /// Reads one event: its SSE name and its `data` payload. Returns the
    /// pieces a live UI shows: [`StreamDelta::Text`] for each non-empty
    /// `response.output_text.delta`, [`StreamDelta::Refusal`] for each
    /// `response.refusal.delta`, [`StreamDelta::Reasoning`] for each
    /// `response.reasoning_summary_text.delta` and
    /// `response.reasoning_text.delta` (and `"\n\n"` before each summary
    /// part after the first, as [`responses::parse_response`] joins them),
    /// [`StreamDelta::ToolCallStarted`] for each `function_call` item at
    /// its `response.output_item.added`.
    ///
    /// # Errors
    ///
    /// A [`WireError`] at `events[i]` (`i` counts events from 0) or below:
    ///
    /// - [`WireErrorKind::Provider`]: an `error` event (its `code`, else
    ///   `type`, and `message`; at the top level or under `error`), or a
    ///   `response.failed` (its response's `error`);
    /// - [`WireErrorKind::NotJson`]: a payload that is not JSON (events
    ///   this crate skips are not read);
    /// - [`WireErrorKind::UnexpectedIndex`]: a content or summary index
    ///   that skips ahead (a delta or `done` for an item that was never
    ///   added is skipped, and is [`finish`](Self::finish)'s error only when
    ///   the last event's response does not carry the whole output);
    /// - [`WireErrorKind::UnexpectedEvent`]: an event after the last one
    ///   (a `data: [DONE]`, which compatible servers send after it, is
    ///   read as nothing, anywhere);
    /// - [`WireErrorKind::MissingField`], [`WireErrorKind::WrongType`]: a
    ///   payload without the documented shape.
    ///
    /// After an error, every later call returns the same error.
    pub fn push(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let path = format!("events[{}]", self.events);
        self.events += 1;
        let result = self.read(&path, event, data);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    fn read(&mut self, path: &str, event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        let event = event.trim();
        let named = !(event.is_empty() || event == "message");
        if named && !is_read(event) {
            return Ok(Vec::new());
        }
        // Compatible servers (vLLM, LiteLLM) end the stream with Chat
        // Completions' `data: [DONE]` after `response.completed`: it says
        // nothing the events did not.
        if data.trim().is_empty() || data.trim() == "[DONE]" {
            return Ok(Vec::new());
        }
        let value = parse_data(FORMAT, path, data)?;
        let event = if named {
            event
        } else {
            value.get("type").and_then(Value::as_str).unwrap_or("")
        };
        match event {
            "error" => {
                let (at, error) = match value.get("error") {
                    Some(error) if error.is_object() => (format!("{path}.error"), error),
                    _ => (path.to_owned(), &value),
                };
                return Err(WireError::new(FORMAT, at, provider_error(error)));
            }
            "response.failed" => {
                let error = value
                    .get("response")
                    .and_then(|response| response.get("error"))
                    .filter(|error| !error.is_null())
                    .cloned()
                    .unwrap_or_else(|| Value::String("the response failed".into()));
                return Err(WireError::new(
                    FORMAT,
                    format!("{path}.response.error"),
                    provider_error(&error),
                ));
            }
            _ if !is_read(event) => return Ok(Vec::new()),
            _ => {}
        }
        if self.done.is_some() {
            return Err(WireError::new(
                FORMAT,
                path,
                WireErrorKind::UnexpectedEvent {
                    event: event.to_owned(),
                },
            ));
        }
        match event {
            "response.completed" | "response.incomplete" => {
                let WithResponse { response } = decode(FORMAT, path, &value)?;
                self.done = Some(response);
                Ok(Vec::new())
            }
            "response.output_item.added" => {
                let added: ItemEvent = decode(FORMAT, path, &value)?;
                let mut deltas = Vec::new();
                if added.item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let text = |key: &str| {
                        added
                            .item
                            .get(key)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    deltas.push(StreamDelta::ToolCallStarted {
                        index: self.calls,
                        id: text("call_id"),
                        name: text("name"),
                    });
                    self.calls += 1;
                }
                self.items.push(added.item);
                self.indices.push(added.output_index);
                Ok(deltas)
            }
            "response.output_item.done" => {
                let done: ItemEvent = decode(FORMAT, path, &value)?;
                if let Some(at) = self.item_at(path, done.output_index) {
                    self.items[at] = done.item;
                }
                Ok(Vec::new())
            }
            _ => self.read_delta(path, event, &value),
        }
    }

    /// The position of the latest item added at `output_index`; `None`
    /// (the event is skipped, and remembered) for an index no item was
    /// added at.
    fn item_at(&mut self, path: &str, output_index: u64) -> Option<usize> {
        let at = self
            .indices
            .iter()
            .rposition(|&index| index == output_index);
        if at.is_none() && self.unplaced.is_none() {
            let next = self.indices.last().map_or(0, |last| last.saturating_add(1));
            self.unplaced = Some(index_error(
                &format!("{path}.output_index"),
                output_index,
                next,
            ));
        }
        at
    }

    fn read_delta(
        &mut self,
        path: &str,
        event: &str,
        value: &Value,
    ) -> Result<Vec<StreamDelta>, WireError> {
        let delta: DeltaEvent = decode(FORMAT, path, value)?;
        let Some(at) = self.item_at(path, delta.output_index) else {
            return Ok(Vec::new());
        };
        let item = &mut self.items[at];
        let piece = delta.delta.unwrap_or_default();
        let mut deltas = Vec::new();
        match event {
            "response.function_call_arguments.delta" => {
                append_text(item, "arguments", &piece);
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = delta.arguments {
                    item.insert("arguments".into(), Value::String(arguments));
                }
            }
            "response.content_part.added" | "response.reasoning_summary_part.added" => {
                let (key, index) = if event == "response.content_part.added" {
                    ("content", delta.content_index)
                } else {
                    ("summary", delta.summary_index)
                };
                let parts = array_at(item, key);
                let index = index.unwrap_or(parts.len() as u64);
                if index != parts.len() as u64 {
                    return Err(index_error(path, index, parts.len() as u64));
                }
                parts.push(Value::Object(delta.part.unwrap_or_default()));
                if key == "summary" && index > 0 {
                    deltas.push(StreamDelta::Reasoning("\n\n".to_owned()));
                }
            }
            _ => {
                let (key, index, field) = match event {
                    "response.output_text.delta" => ("content", delta.content_index, "text"),
                    "response.refusal.delta" => ("content", delta.content_index, "refusal"),
                    "response.reasoning_summary_text.delta" => {
                        ("summary", delta.summary_index, "text")
                    }
                    // `response.reasoning_text.delta`.
                    _ => ("content", delta.content_index, "text"),
                };
                let parts = array_at(item, key);
                let index = index.unwrap_or(0);
                let len = parts.len() as u64;
                if index > len {
                    return Err(index_error(path, index, len));
                }
                if index == len {
                    // A delta without its `part.added` (older streams).
                    let kind = match event {
                        "response.output_text.delta" => "output_text",
                        "response.refusal.delta" => "refusal",
                        "response.reasoning_summary_text.delta" => "summary_text",
                        _ => "reasoning_text",
                    };
                    let mut part = Map::new();
                    part.insert("type".into(), Value::String(kind.into()));
                    parts.push(Value::Object(part));
                }
                // Within bounds: checked above.
                if let Some(Value::Object(part)) = parts.get_mut(index as usize) {
                    append_text(part, field, &piece);
                }
                if !piece.is_empty() {
                    deltas.push(match event {
                        "response.output_text.delta" => StreamDelta::Text(piece),
                        "response.refusal.delta" => StreamDelta::Refusal(piece),
                        _ => StreamDelta::Reasoning(piece),
                    });
                }
            }
        }
        Ok(deltas)
    }

    /// The assembled response.
    ///
    /// # Errors
    ///
    /// The error a [`push`](Self::push) returned; [`WireErrorKind::Incomplete`]
    /// at `events` when no `response.completed` or `response.incomplete`
    /// came (the connection was most likely cut);
    /// [`WireErrorKind::UnexpectedIndex`] when that response has no output
    /// and an event named an item that was never added; otherwise the
    /// errors of [`responses::parse_response`] for the final response.
    pub fn finish(self) -> Result<ModelResponse, WireError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let Some(mut response) = self.done else {
            return Err(WireError::new(FORMAT, "events", WireErrorKind::Incomplete));
        };
        let has_output = response
            .get("output")
            .and_then(Value::as_array)
            .is_some_and(|output| !output.is_empty());
        if !has_output {
            // The items are the output: one event that found no item
            // makes them unreliable.
            if let Some(error) = self.unplaced {
                return Err(error);
            }
            response.insert(
                "output".into(),
                Value::Array(self.items.into_iter().map(Value::Object).collect()),
            );
        }
        responses::parse_response(&Value::Object(response))
    }
}

fn index_error(path: &str, index: u64, next: u64) -> WireError {
    WireError::new(FORMAT, path, WireErrorKind::UnexpectedIndex { index, next })
}

/// The array at `key` of `item`, made one when it is missing or not an
/// array.
fn array_at<'a>(item: &'a mut Map<String, Value>, key: &str) -> &'a mut Vec<Value> {
    let slot = item.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    match slot {
        Value::Array(parts) => parts,
        // Made an array just above.
        _ => unreachable!("the slot is an array"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::stream::test_support::fixture;

    /// The (event, data) pairs of a recorded `.sse` body.
    pub(crate) fn sse_events(text: &str) -> Vec<(String, String)> {
        let mut events = Vec::new();
        let (mut name, mut data) = (String::new(), Vec::<String>::new());
        for line in text.split('\n').map(|line| line.trim_end_matches('\r')) {
            if line.is_empty() {
                if !data.is_empty() {
                    events.push((std::mem::take(&mut name), data.join("\n")));
                    data.clear();
                }
                name.clear();
            } else if let Some(value) = line.strip_prefix("event:") {
                name = value.trim().to_owned();
            } else if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
        }
        if !data.is_empty() {
            events.push((name, data.join("\n")));
        }
        events
    }

    fn recorded_sse(name: &str) -> Vec<(String, String)> {
        let path = format!(
            "{}/../tests/fixtures/wire-real/openai-responses/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        sse_events(&std::fs::read_to_string(path).unwrap())
    }

    fn assemble(
        events: &[(String, String)],
    ) -> (Vec<StreamDelta>, Result<ModelResponse, WireError>) {
        let mut stream = EventAssembler::new();
        let mut deltas = Vec::new();
        for (event, data) in events {
            match stream.push(event, data) {
                Ok(more) => deltas.extend(more),
                Err(_) => break,
            }
        }
        (deltas, stream.finish())
    }

    /// The last event's response, unstreamed.
    fn last_response(events: &[(String, String)]) -> Value {
        let (_, data) = events
            .iter()
            .rev()
            .find(|(event, _)| event == "response.completed" || event == "response.incomplete")
            .unwrap();
        serde_json::from_str::<Value>(data).unwrap()["response"].clone()
    }

    #[test]
    fn recorded_streams_assemble_to_their_final_response_with_or_without_its_output() {
        for name in [
            "resp_stream_fn.sse",
            "resp_stream_store_false.sse",
            "resp_stream_reasoning_summary.sse",
            "resp_stream_incomplete_tool.sse",
        ] {
            let events = recorded_sse(name);
            let expected = responses::parse_response(&last_response(&events)).unwrap();
            let (deltas, assembled) = assemble(&events);
            assert_eq!(assembled.unwrap(), expected, "{name}");
            // Without the final `output`, the streamed items stand in.
            let stripped: Vec<(String, String)> = events
                .iter()
                .map(|(event, data)| {
                    let mut value: Value = serde_json::from_str(data).unwrap();
                    if event == "response.completed" || event == "response.incomplete" {
                        value["response"]["output"] = Value::Array(Vec::new());
                    }
                    (event.clone(), value.to_string())
                })
                .collect();
            // The server encrypts reasoning anew for `response.completed`:
            // the bytes differ from the item's `output_item.done`.
            let without_encrypted = |mut response: ModelResponse| {
                for part in &mut response.message.content {
                    if let agent_loop_core::conversation::ContentPart::Reasoning(reasoning) = part {
                        reasoning.redacted = reasoning.redacted.as_ref().map(|_| String::new());
                    }
                }
                response
            };
            assert_eq!(
                without_encrypted(assemble(&stripped).1.unwrap()),
                without_encrypted(expected.clone()),
                "{name} (no output)"
            );
            let text: String = deltas
                .iter()
                .filter_map(|delta| match delta {
                    StreamDelta::Text(text) => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(text, expected.message.text(), "{name}");
        }
    }

    #[test]
    fn reasoning_summary_deltas_read_as_the_parsed_reasoning() {
        let events = recorded_sse("resp_stream_reasoning_summary.sse");
        let (deltas, assembled) = assemble(&events);
        let reasoning: String = deltas
            .iter()
            .filter_map(|delta| match delta {
                StreamDelta::Reasoning(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let parsed: String = assembled
            .unwrap()
            .message
            .content
            .iter()
            .filter_map(|part| match part {
                agent_loop_core::conversation::ContentPart::Reasoning(reasoning) => {
                    Some(reasoning.text.clone())
                }
                _ => None,
            })
            .collect();
        assert!(!reasoning.is_empty());
        assert_eq!(reasoning, parsed);
    }

    #[test]
    fn the_quota_error_is_the_providers_error_with_its_code() {
        let (_, assembled) = assemble(&recorded_sse("resp_stream_quota_error.sse"));
        let error = assembled.unwrap_err();
        assert_eq!(error.path, "events[2].error");
        let WireErrorKind::Provider {
            error_type,
            message,
        } = error.kind
        else {
            panic!("{error:?}")
        };
        assert_eq!(error_type, "insufficient_quota");
        assert!(message.starts_with("You exceeded your current quota"));
    }

    #[test]
    fn a_stream_cut_short_is_incomplete_and_indexes_are_checked() {
        let events = recorded_sse("resp_stream_fn.sse");
        let cut = &events[..events.len() - 1];
        assert_eq!(assemble(cut).1.unwrap_err().kind, WireErrorKind::Incomplete);
        // A delta for an item never added is skipped; it is the error
        // only when the last event's response lacks the output.
        let orphan = r#"{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}"#;
        let mut stream = EventAssembler::new();
        assert_eq!(
            stream.push("response.output_text.delta", orphan).unwrap(),
            []
        );
        stream
            .push(
                "response.completed",
                r#"{"type":"response.completed","response":{"status":"completed","output":[]}}"#,
            )
            .unwrap();
        let error = stream.finish().unwrap_err();
        assert_eq!(
            (error.kind, error.path.as_str()),
            (
                WireErrorKind::UnexpectedIndex { index: 0, next: 0 },
                "events[0].output_index"
            )
        );
        let mut stream = EventAssembler::new();
        assert!(
            stream
                .push("response.output_item.added", "not json")
                .is_err()
        );
        // Unknown events are skipped unread.
        let mut stream = EventAssembler::new();
        assert_eq!(
            stream
                .push("response.code_interpreter_call_code.delta", "{")
                .unwrap(),
            []
        );
    }

    #[test]
    fn a_failed_response_event_is_the_providers_error() {
        let mut stream = EventAssembler::new();
        let error = stream
            .push(
                "",
                r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
            )
            .unwrap_err();
        assert_eq!(error.path, "events[0].response.error");
        assert_eq!(
            error.kind,
            WireErrorKind::Provider {
                error_type: "server_error".into(),
                message: "boom".into()
            }
        );
        let _ = fixture;
    }

    /// A compatible server's trailing `data: [DONE]` (vLLM, LiteLLM) after
    /// `response.completed` is read as nothing: the stream assembles as
    /// without it, where it was an error.
    #[test]
    fn a_trailing_done_after_the_last_event_is_read_as_nothing() {
        let events = recorded_sse("resp_stream_fn.sse");
        let mut plain = EventAssembler::new();
        let mut with_done = EventAssembler::new();
        for (event, data) in &events {
            plain.push(event, data).unwrap();
            with_done.push(event, data).unwrap();
        }
        assert!(with_done.is_done());
        assert_eq!(with_done.push("", "[DONE]").unwrap(), Vec::new());
        assert_eq!(with_done.push("", " [DONE]\n").unwrap(), Vec::new());
        assert_eq!(with_done.finish().unwrap(), plain.finish().unwrap());
    }

    /// `events` with every `output_index` moved by `by`.
    fn renumbered(events: &[(String, String)], by: u64) -> Vec<(String, String)> {
        events
            .iter()
            .map(|(event, data)| {
                let mut value: Value = serde_json::from_str(data).unwrap();
                if let Some(index) = value.get("output_index").and_then(Value::as_u64) {
                    value["output_index"] = Value::from(index + by);
                }
                (event.clone(), value.to_string())
            })
            .collect()
    }

    /// `events` whose last event's response has no output, so the items
    /// the stream assembled are the answer.
    fn without_final_output(events: &[(String, String)]) -> Vec<(String, String)> {
        let mut events = events.to_vec();
        if let Some((_, data)) = events.last_mut() {
            let mut value: Value = serde_json::from_str(data).unwrap();
            value["response"]["output"] = Value::Array(Vec::new());
            *data = value.to_string();
        }
        events
    }

    /// A stream numbered another way (SGLang's router counts
    /// `output_index` from 1) assembles to the same answer as the recording,
    /// from the final response and from the items alike.
    #[test]
    fn a_stream_numbered_from_one_assembles_alike() {
        let events = recorded_sse("resp_stream_fn.sse");
        let expected = assemble(&events).1.unwrap();
        for shifted in [
            renumbered(&events, 1),
            without_final_output(&renumbered(&events, 1)),
        ] {
            let (_, assembled) = assemble(&shifted);
            assert_eq!(assembled.unwrap(), expected);
        }
    }

    /// A call's arguments sent only in `response.function_call_arguments.done`,
    /// with no `response.output_item.done` after it (open-responses-server,
    /// LiteLLM), are the call's arguments, not `{}`.
    #[test]
    fn arguments_only_in_their_done_event_are_the_calls() {
        let events = recorded_sse("resp_stream_fn.sse");
        let expected = assemble(&events).1.unwrap();
        let sparse: Vec<(String, String)> = without_final_output(&events)
            .into_iter()
            .filter(|(event, _)| {
                event != "response.function_call_arguments.delta"
                    && event != "response.output_item.done"
            })
            .collect();
        let (_, assembled) = assemble(&sparse);
        let assembled = assembled.unwrap();
        let calls: Vec<_> = assembled.message.tool_calls().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments, r#"{"country":"France"}"#);
        assert_eq!(
            calls[0].arguments,
            expected.message.tool_calls().next().unwrap().arguments
        );
    }

    /// A proxy that repeats an `output_index` for a new item: the events
    /// after it go to the latest item added there.
    #[test]
    fn a_repeated_index_names_the_latest_item_added_there() {
        let mut stream = EventAssembler::new();
        for (event, data) in [
            (
                "response.output_item.added",
                r#"{"output_index":0,"item":{"type":"message","role":"assistant","content":[]}}"#,
            ),
            (
                "response.output_text.delta",
                r#"{"output_index":0,"content_index":0,"delta":"first"}"#,
            ),
            (
                "response.output_item.added",
                r#"{"output_index":0,"item":{"type":"message","role":"assistant","content":[]}}"#,
            ),
            (
                "response.output_text.delta",
                r#"{"output_index":0,"content_index":0,"delta":"second"}"#,
            ),
            (
                "response.completed",
                r#"{"response":{"status":"completed","output":[]}}"#,
            ),
        ] {
            stream.push(event, data).unwrap();
        }
        let response = stream.finish().unwrap();
        assert_eq!(response.message.text(), "firstsecond");
    }
}
