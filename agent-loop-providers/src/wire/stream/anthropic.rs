//! Anthropic Messages streams: server-sent events assembled into the
//! response [`anthropic::parse_response`] reads.
//!
//! A stream (`"stream": true`) is a run of events, each with a name and a
//! JSON `data` payload whose `type` repeats the name
//! ([reference](https://docs.anthropic.com/en/docs/build-with-claude/streaming)):
//!
//! 1. `message_start`: the message, its `content` empty, its `usage` so far;
//! 2. per content block, in order: `content_block_start` (`index`, the
//!    block with empty text, thinking or `input: {}`),
//!    `content_block_delta`s (`text_delta`, `thinking_delta`,
//!    `signature_delta`, `input_json_delta`, `citations_delta`),
//!    `content_block_stop`;
//! 3. `message_delta`: `stop_reason`, `stop_sequence`, and the cumulative
//!    `usage`;
//! 4. `message_stop`.
//!
//! `ping` events may come anywhere; an `error` event
//! (`{"type": "error", "error": {"type": "overloaded_error", "message"}}`)
//! ends a stream that failed after its HTTP 200.
//!
//! ```
//! use agent_loop_core::conversation::FinishReason;
//! use agent_loop_providers::wire::stream::{StreamDelta, anthropic::EventAssembler};
//!
//! let mut stream = EventAssembler::new();
//! let mut deltas = Vec::new();
//! for (event, data) in [
//!     ("message_start", r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":20,"output_tokens":1}}}"#),
//!     ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}"#),
//!     ("ping", r#"{"type":"ping"}"#),
//!     ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}"#),
//!     ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}"#),
//!     ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
//!     ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}}"#),
//!     ("message_stop", r#"{"type":"message_stop"}"#),
//! ] {
//!     deltas.extend(stream.push(event, data)?);
//! }
//! assert_eq!(
//!     deltas,
//!     [StreamDelta::ToolCallStarted { index: 0, id: "toolu_01".into(), name: "get_weather".into() }]
//! );
//! let response = stream.finish()?;
//! let call = response.message.tool_calls().next().cloned();
//! assert_eq!(call.map(|call| call.arguments), Some(r#"{"city":"Paris"}"#.to_owned()));
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!((response.usage.input_tokens, response.usage.output_tokens), (20, 12));
//! # Ok::<_, agent_loop_providers::wire::WireError>(())
//! ```

use serde::Deserialize;
use serde_json::{Map, Value};

use super::super::anthropic;
use super::super::decode::decode;
use super::super::error::{WireError, WireErrorKind};
use super::{StreamDelta, append_text, parse_data, provider_error};
use agent_loop_core::conversation::{ModelResponse, WireFormat};

const FORMAT: WireFormat = WireFormat::AnthropicMessages;

/// Assembles the events of one Messages stream into a [`ModelResponse`].
///
/// Feed every event to [`push`](Self::push), in order, then call
/// [`finish`](Self::finish). The response is exactly what
/// [`anthropic::parse_response`] returns for the unstreamed message with
/// the same content: the assembler builds that message from the events and
/// parses it.
///
/// # What is assembled
///
/// - The message of `message_start`, its fields kept; `content` blocks it
///   already has (none, from Anthropic) come first.
/// - Each block of `content_block_start` at its `index`, which must be the
///   next one, kept verbatim as started (`redacted_thinking`,
///   `web_search_tool_result` and any block of another `type` arrive
///   whole), then changed by its deltas:
///   - `text_delta`: `text` appended (a `text` block only);
///   - `thinking_delta`, `signature_delta`: `thinking`, `signature`
///     appended (a `thinking` block only);
///   - `citations_delta`: `citation` appended to the block's `citations`
///     array (a `text` block only);
///   - `input_json_delta`: `partial_json` pieces concatenated and parsed
///     at `content_block_stop` into the block's `input` (any block but
///     `text`, `thinking` and `redacted_thinking`: `tool_use`,
///     `server_tool_use`, `mcp_tool_use`, …). Blank in total means `{}`.
///     A `tool_use` whose text is not a JSON object (cut off by
///     `max_tokens`, say) keeps that text verbatim as its call's
///     [`arguments`](agent_loop_core::conversation::ToolCall::arguments), as the
///     crate keeps what the model sent; the turn runner answers it with an
///     error result;
///   - a delta of another `type` is skipped: Anthropic may add delta and
///     event types, and asks clients to ignore those they do not know.
/// - `message_delta`: each non-`null` field of its `delta` (`stop_reason`,
///   `stop_sequence`, …) set on the message, each non-`null` field of its
///   `usage` (`output_tokens`, and the input and cache counts when sent:
///   they are cumulative) set on the message's `usage`, but for a `0`
///   input or cache count where `message_start` gave one (SGLang sends
///   `input_tokens: 0` there).
/// - `ping` and events of names this crate does not know are skipped.
///
/// An event's name is its SSE `event:` field; when that is empty or
/// `message` (the SSE default), the payload's `type` is used instead.
#[derive(Debug, Default)]
pub struct EventAssembler {
    /// Events pushed so far, the next one's position.
    events: usize,
    /// The error returned, returned again.
    failed: Option<WireError>,
    /// The message of `message_start`, without `content`.
    message: Option<Map<String, Value>>,
    blocks: Vec<Block>,
    /// `tool_use` blocks so far.
    tool_calls: usize,
    /// `message_stop` seen.
    stopped: bool,
    /// Arguments of `tool_use` blocks whose JSON text is not an object, by
    /// the call's position among the tool calls.
    raw_arguments: Vec<(usize, String)>,
}

/// One content block so far.
#[derive(Debug)]
struct Block {
    value: Map<String, Value>,
    /// Between `content_block_start` and `content_block_stop`.
    open: bool,
    /// The `partial_json` pieces, once one came.
    json: Option<String>,
    /// For a `tool_use` block, the call's position among the tool calls.
    call: Option<usize>,
}

impl Block {
    fn kind(&self) -> &str {
        self.value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

#[derive(Deserialize)]
#[serde(expecting = "a message_start event")]
struct MessageStart {
    message: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "a content_block_start event")]
struct BlockStart {
    index: u64,
    content_block: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(expecting = "a content block object")]
struct BlockHead {
    #[serde(rename = "type")]
    #[allow(dead_code)] // Read to check that it is there and a string.
    kind: String,
}

#[derive(Deserialize)]
#[serde(expecting = "a content_block_delta event")]
struct BlockDeltaEvent {
    index: u64,
    delta: Value,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", expecting = "a delta object")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    CitationsDelta {
        citation: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(expecting = "a content_block_stop event")]
struct BlockStop {
    index: u64,
}

#[derive(Deserialize)]
#[serde(expecting = "a message_delta event")]
struct MessageDelta {
    #[serde(default)]
    delta: Option<Map<String, Value>>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
}

impl EventAssembler {
    /// An assembler for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads one event: its SSE name (`message_start`, `content_block_delta`,
    /// …) and its `data` payload. Returns the pieces a live UI shows:
    /// [`StreamDelta::Text`] for each non-empty `text_delta` (and a `text`
    /// block's initial text), [`StreamDelta::Reasoning`] for each non-empty
    /// `thinking_delta` (and a `thinking` block's initial text),
    /// [`StreamDelta::ToolCallStarted`] for each `tool_use` block at its
    /// start (server tools such as `server_tool_use` are not calls this
    /// crate runs, and start none).
    ///
    /// # Errors
    ///
    /// A [`WireError`] at `events[i]` (`i` counts events from 0) or below:
    ///
    /// - [`WireErrorKind::Provider`]: an `error` event, with the error's
    ///   `type` (`overloaded_error`, `api_error`, …) and `message`;
    /// - [`WireErrorKind::NotJson`]: a payload that is not JSON (`ping`
    ///   and unknown events are not read);
    /// - [`WireErrorKind::UnexpectedIndex`]: a `content_block_start` whose
    ///   `index` is not the next block's, a `content_block_delta` or
    ///   `content_block_stop` for a block that is not open;
    /// - [`WireErrorKind::UnexpectedEvent`]: an event other than `ping` and
    ///   `error` before `message_start` or after `message_stop`, a second
    ///   `message_start`, a delta for a block of another type (a
    ///   `text_delta` for a `tool_use` block);
    /// - [`WireErrorKind::NotJson`] at `events[i]` for a non-`tool_use`
    ///   block whose `partial_json` pieces are not JSON in total;
    /// - [`WireErrorKind::MissingField`], [`WireErrorKind::WrongType`]: a
    ///   payload without the documented shape, e.g. a `text_delta` without
    ///   `text` at `events[4].delta`.
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
        let value = parse_data(FORMAT, path, data)?;
        let event = if named {
            event
        } else {
            value.get("type").and_then(Value::as_str).unwrap_or("")
        };
        let unexpected = || {
            Err(WireError::new(
                FORMAT,
                path,
                WireErrorKind::UnexpectedEvent {
                    event: event.to_owned(),
                },
            ))
        };
        if event == "error" {
            let error = value.get("error").unwrap_or(&value);
            return Err(WireError::new(
                FORMAT,
                format!("{path}.error"),
                provider_error(error),
            ));
        }
        if !is_read(event) {
            return Ok(Vec::new());
        }
        if event == "message_start" {
            if self.message.is_some() {
                return unexpected();
            }
            return self.start_message(path, &value);
        }
        if self.message.is_none() || self.stopped {
            return unexpected();
        }
        match event {
            "content_block_start" => self.start_block(path, &value),
            "content_block_delta" => self.read_block_delta(path, &value),
            "content_block_stop" => {
                let stop: BlockStop = decode(FORMAT, path, &value)?;
                let at = self.open_block(path, stop.index)?;
                self.close_block(path, at)?;
                Ok(Vec::new())
            }
            "message_delta" => {
                let delta: MessageDelta = decode(FORMAT, path, &value)?;
                let message = self.message.get_or_insert_default();
                for (key, value) in delta.delta.unwrap_or_default() {
                    if !value.is_null() {
                        message.insert(key, value);
                    }
                }
                if let Some(usage) = delta.usage {
                    let slot = message
                        .entry("usage")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if !slot.is_object() {
                        *slot = Value::Object(Map::new());
                    }
                    if let Value::Object(counts) = slot {
                        for (key, value) in usage {
                            // The counts are cumulative, but a zero input
                            // count is no count: SGLang sends
                            // `input_tokens: 0` here, after the real one
                            // in `message_start`.
                            let zero_input = key.contains("input") && value.as_u64() == Some(0);
                            let known = counts.get(&key).and_then(Value::as_u64).unwrap_or(0) > 0;
                            let keeps_known = zero_input && known;
                            if !value.is_null() && !keeps_known {
                                counts.insert(key, value);
                            }
                        }
                    }
                }
                Ok(Vec::new())
            }
            // `message_stop`.
            _ => {
                self.stopped = true;
                Ok(Vec::new())
            }
        }
    }

    fn start_message(&mut self, path: &str, value: &Value) -> Result<Vec<StreamDelta>, WireError> {
        let MessageStart { mut message } = decode(FORMAT, path, value)?;
        let mut deltas = Vec::new();
        if let Some(Value::Array(blocks)) = message.remove("content") {
            for (index, block) in blocks.into_iter().enumerate() {
                let block_path = format!("{path}.message.content[{index}]");
                let Value::Object(block) = block else {
                    // parse_response names it.
                    return Err(WireError::new(
                        FORMAT,
                        block_path,
                        WireErrorKind::WrongType {
                            field: index.to_string(),
                            expected: "an object".to_owned(),
                            found: agent_loop_core::support::json::type_name(&block).to_owned(),
                        },
                    ));
                };
                deltas.extend(self.add_block(&block_path, block, false)?);
            }
        }
        self.message = Some(message);
        Ok(deltas)
    }

    fn start_block(&mut self, path: &str, value: &Value) -> Result<Vec<StreamDelta>, WireError> {
        let start: BlockStart = decode(FORMAT, path, value)?;
        let next = self.blocks.len() as u64;
        if start.index != next {
            return Err(WireError::new(
                FORMAT,
                format!("{path}.index"),
                WireErrorKind::UnexpectedIndex {
                    index: start.index,
                    next,
                },
            ));
        }
        self.add_block(&format!("{path}.content_block"), start.content_block, true)
    }

    /// Adds a block as started; returns what a UI shows of it.
    fn add_block(
        &mut self,
        path: &str,
        value: Map<String, Value>,
        open: bool,
    ) -> Result<Vec<StreamDelta>, WireError> {
        let _: BlockHead = decode(FORMAT, path, &Value::Object(value.clone()))?;
        let mut block = Block {
            value,
            open,
            json: None,
            call: None,
        };
        let text = |key: &str| {
            block
                .value
                .get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
                .map(str::to_owned)
        };
        let delta = match block.kind() {
            "text" => text("text").map(StreamDelta::Text),
            "thinking" => text("thinking").map(StreamDelta::Reasoning),
            "tool_use" => {
                let index = self.tool_calls;
                self.tool_calls += 1;
                let delta = StreamDelta::ToolCallStarted {
                    index,
                    id: text("id").unwrap_or_default(),
                    name: text("name").unwrap_or_default(),
                };
                block.call = Some(index);
                Some(delta)
            }
            _ => None,
        };
        self.blocks.push(block);
        Ok(delta.into_iter().collect())
    }

    /// The position of the open block at `index`.
    fn open_block(&self, path: &str, index: u64) -> Result<usize, WireError> {
        usize::try_from(index)
            .ok()
            .filter(|&at| self.blocks.get(at).is_some_and(|block| block.open))
            .ok_or_else(|| {
                WireError::new(
                    FORMAT,
                    format!("{path}.index"),
                    WireErrorKind::UnexpectedIndex {
                        index,
                        next: self.blocks.len() as u64,
                    },
                )
            })
    }

    fn read_block_delta(
        &mut self,
        path: &str,
        value: &Value,
    ) -> Result<Vec<StreamDelta>, WireError> {
        let event: BlockDeltaEvent = decode(FORMAT, path, value)?;
        let at = self.open_block(path, event.index)?;
        let delta_path = format!("{path}.delta");
        let delta: BlockDelta = decode(FORMAT, &delta_path, &event.delta)?;
        let Some(block) = self.blocks.get_mut(at) else {
            return Ok(Vec::new());
        };
        let fits = match &delta {
            BlockDelta::TextDelta { .. } | BlockDelta::CitationsDelta { .. } => {
                block.kind() == "text"
            }
            BlockDelta::ThinkingDelta { .. } | BlockDelta::SignatureDelta { .. } => {
                block.kind() == "thinking"
            }
            BlockDelta::InputJsonDelta { .. } => {
                !matches!(block.kind(), "text" | "thinking" | "redacted_thinking")
            }
            BlockDelta::Other => true,
        };
        if !fits {
            let kind = event
                .delta
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("delta");
            return Err(WireError::new(
                FORMAT,
                delta_path,
                WireErrorKind::UnexpectedEvent {
                    event: kind.to_owned(),
                },
            ));
        }
        Ok(match delta {
            BlockDelta::TextDelta { text } => {
                append_text(&mut block.value, "text", &text);
                nonempty(text, StreamDelta::Text)
            }
            BlockDelta::ThinkingDelta { thinking } => {
                append_text(&mut block.value, "thinking", &thinking);
                nonempty(thinking, StreamDelta::Reasoning)
            }
            BlockDelta::SignatureDelta { signature } => {
                append_text(&mut block.value, "signature", &signature);
                Vec::new()
            }
            BlockDelta::InputJsonDelta { partial_json } => {
                block.json.get_or_insert_default().push_str(&partial_json);
                Vec::new()
            }
            BlockDelta::CitationsDelta { citation } => {
                match block.value.get_mut("citations") {
                    Some(Value::Array(citations)) => citations.push(citation),
                    _ => {
                        block
                            .value
                            .insert("citations".to_owned(), Value::Array(vec![citation]));
                    }
                }
                Vec::new()
            }
            BlockDelta::Other => Vec::new(),
        })
    }

    /// Closes the block at `at`: its `partial_json` becomes its `input`.
    fn close_block(&mut self, path: &str, at: usize) -> Result<(), WireError> {
        let Some(block) = self.blocks.get_mut(at) else {
            return Ok(());
        };
        block.open = false;
        let Some(json) = block.json.take() else {
            return Ok(());
        };
        let input = if json.trim().is_empty() {
            Ok(Value::Object(Map::new()))
        } else {
            serde_json::from_str::<Value>(&json)
        };
        match (input, block.call) {
            (Ok(input @ Value::Object(_)), _) => {
                block.value.insert("input".to_owned(), input);
            }
            (_, Some(call)) => {
                // A call's arguments are kept as the model wrote them; the
                // message parser needs an object meanwhile.
                block
                    .value
                    .insert("input".to_owned(), Value::Object(Map::new()));
                self.raw_arguments.push((call, json));
            }
            (Ok(input), None) => {
                block.value.insert("input".to_owned(), input);
            }
            (Err(error), None) => {
                return Err(WireError::new(
                    FORMAT,
                    path,
                    WireErrorKind::NotJson {
                        message: format!("`partial_json` of block {at}: {error}"),
                    },
                ));
            }
        }
        Ok(())
    }

    /// `true` once the message has its `stop_reason` (from
    /// `message_delta`) or `message_stop` came, and no error: [`finish`](Self::finish)
    /// then returns the whole answer even if `message_stop` never comes.
    pub fn is_whole(&self) -> bool {
        self.failed.is_none()
            && self.message.is_some()
            && (self.stopped
                || self
                    .message
                    .as_ref()
                    .and_then(|message| message.get("stop_reason"))
                    .is_some_and(|reason| !reason.is_null()))
    }

    /// The assembled response: what [`anthropic::parse_response`] returns
    /// for the unstreamed message with the same content (see the type's
    /// docs for how events assemble). Blocks still open are closed first.
    ///
    /// # Errors
    ///
    /// - The error a [`push`](Self::push) returned, again.
    /// - [`WireErrorKind::Incomplete`] at `events` without `message_start`,
    ///   or without both `message_stop` and a `stop_reason`: the stream was
    ///   cut off, and a response built from it would look whole.
    /// - [`WireErrorKind::NotJson`] at `events` for a block still open
    ///   whose `partial_json` is not JSON (as for `content_block_stop`).
    /// - The errors of [`anthropic::parse_response`] for the assembled
    ///   message, at `response…`: a `role` other than `assistant`, a block
    ///   of a modelled type without its shape (a `tool_use` without `id`),
    ///   e.g. at `response.content[2]`.
    pub fn finish(mut self) -> Result<ModelResponse, WireError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let has_stop_reason = self
            .message
            .as_ref()
            .and_then(|message| message.get("stop_reason"))
            .is_some_and(|reason| !reason.is_null());
        if self.message.is_none() || !(self.stopped || has_stop_reason) {
            return Err(WireError::new(FORMAT, "events", WireErrorKind::Incomplete));
        }
        for at in 0..self.blocks.len() {
            if self.blocks.get(at).is_some_and(|block| block.open) {
                self.close_block("events", at)?;
            }
        }
        let mut message = self.message.unwrap_or_default();
        message.insert(
            "content".to_owned(),
            Value::Array(
                self.blocks
                    .into_iter()
                    .map(|block| Value::Object(block.value))
                    .collect(),
            ),
        );
        let mut response = anthropic::parse_response(&Value::Object(message))?;
        for (position, call) in response.message.tool_calls_mut().enumerate() {
            if let Some((_, raw)) = self
                .raw_arguments
                .iter()
                .find(|(index, _)| *index == position)
            {
                call.arguments.clone_from(raw);
            }
        }
        Ok(response)
    }
}

/// The events this assembler reads (`ping` and unknown events are
/// skipped).
fn is_read(event: &str) -> bool {
    matches!(
        event,
        "message_start"
            | "content_block_start"
            | "content_block_delta"
            | "content_block_stop"
            | "message_delta"
            | "message_stop"
            | "error"
    )
}

fn nonempty(text: String, delta: fn(String) -> StreamDelta) -> Vec<StreamDelta> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![delta(text)]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::{fixture, pieces, splits};
    use super::*;
    use agent_loop_core::conversation::{ContentPart, FinishReason};

    type Event = (String, String);

    fn event(name: &str, data: Value) -> Event {
        (name.to_owned(), data.to_string())
    }

    /// The events Anthropic streams for an unstreamed message: its head,
    /// each block started empty and filled by deltas (`input` as
    /// `input(i, json)` cuts the `i`th block's compact JSON), pings between,
    /// the stop reason and whole usage, the end.
    fn events_of(body: &Value, input: impl Fn(usize, &str) -> Vec<String>) -> Vec<Event> {
        let mut head = body.as_object().cloned().unwrap_or_default();
        let blocks = head
            .remove("content")
            .and_then(|content| content.as_array().cloned())
            .unwrap_or_default();
        let usage = head.remove("usage").unwrap_or(json!({}));
        head.insert("content".into(), json!([]));
        head.insert("stop_reason".into(), Value::Null);
        head.insert("stop_sequence".into(), Value::Null);
        head.insert(
            "usage".into(),
            json!({ "input_tokens": usage["input_tokens"], "output_tokens": 1 }),
        );
        let mut out = vec![event(
            "message_start",
            json!({ "type": "message_start", "message": head }),
        )];
        out.push(event("ping", json!({ "type": "ping" })));
        for (index, block) in blocks.iter().enumerate() {
            let delta = |delta: Value| {
                event(
                    "content_block_delta",
                    json!({ "type": "content_block_delta", "index": index, "delta": delta }),
                )
            };
            let mut start = block.as_object().cloned().unwrap_or_default();
            let mut deltas = Vec::new();
            match block["type"].as_str() {
                Some("text") => {
                    start.insert("text".into(), json!(""));
                    if let Some(citations) = block.get("citations").and_then(Value::as_array) {
                        start.insert("citations".into(), json!([]));
                        for citation in citations {
                            deltas.push(delta(
                                json!({ "type": "citations_delta", "citation": citation }),
                            ));
                        }
                    }
                    for piece in pieces(block["text"].as_str().unwrap_or(""), 5) {
                        deltas.push(delta(json!({ "type": "text_delta", "text": piece })));
                    }
                }
                Some("thinking") => {
                    start.insert("thinking".into(), json!(""));
                    start.remove("signature");
                    for piece in pieces(block["thinking"].as_str().unwrap_or(""), 9) {
                        deltas.push(delta(
                            json!({ "type": "thinking_delta", "thinking": piece }),
                        ));
                    }
                    if let Some(signature) = block.get("signature") {
                        deltas.push(delta(
                            json!({ "type": "signature_delta", "signature": signature }),
                        ));
                    }
                }
                Some("tool_use" | "server_tool_use") => {
                    start.insert("input".into(), json!({}));
                    for piece in input(index, &block["input"].to_string()) {
                        deltas.push(delta(
                            json!({ "type": "input_json_delta", "partial_json": piece }),
                        ));
                    }
                }
                _ => {}
            }
            out.push(event(
                "content_block_start",
                json!({ "type": "content_block_start", "index": index, "content_block": start }),
            ));
            out.extend(deltas);
            out.push(event(
                "content_block_stop",
                json!({ "type": "content_block_stop", "index": index }),
            ));
            out.push(event("ping", json!({ "type": "ping" })));
        }
        out.push(event(
            "message_delta",
            json!({ "type": "message_delta",
                    "delta": { "stop_reason": body["stop_reason"], "stop_sequence": body["stop_sequence"] },
                    "usage": usage }),
        ));
        out.push(event("message_stop", json!({ "type": "message_stop" })));
        out
    }

    fn assemble(events: &[Event]) -> (Vec<StreamDelta>, Result<ModelResponse, WireError>) {
        let mut stream = EventAssembler::new();
        let mut deltas = Vec::new();
        for (name, data) in events {
            match stream.push(name, data) {
                Ok(more) => deltas.extend(more),
                Err(error) => return (deltas, Err(error)),
            }
        }
        (deltas, stream.finish())
    }

    fn by_pieces(_: usize, json: &str) -> Vec<String> {
        pieces(json, 4)
    }

    fn assert_streams_like(body: &Value) {
        let expected = anthropic::parse_response(body).expect("the body parses");
        let (_, assembled) = assemble(&events_of(body, by_pieces));
        assert_eq!(assembled.expect("the stream assembles"), expected);
    }

    #[test]
    fn recorded_messages_equal_the_unstreamed_responses() {
        for path in [
            "anthropic/ant_thinking.response.json",
            "anthropic/ant_parallel.response.json",
            "anthropic/ant_mixed_strict.response.json",
            "anthropic/ant_web_search.response.json",
        ] {
            assert_streams_like(&fixture(path));
        }
    }

    #[test]
    fn thinking_text_and_tool_use_give_deltas_and_a_signed_reasoning_part() {
        let body = fixture("anthropic/ant_thinking.response.json");
        let (deltas, response) = assemble(&events_of(&body, by_pieces));
        let response = response.expect("assembles");
        let ContentPart::Reasoning(reasoning) = &response.message.content[0] else {
            panic!("reasoning first: {:?}", response.message.content);
        };
        assert!(
            reasoning
                .signature
                .as_deref()
                .is_some_and(|signature| signature.starts_with("EqEE"))
        );
        let reasoning: String = deltas
            .iter()
            .filter_map(|delta| match delta {
                StreamDelta::Reasoning(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            reasoning,
            body["content"][0]["thinking"].as_str().unwrap_or_default()
        );
        assert_eq!(
            deltas.last(),
            Some(&StreamDelta::ToolCallStarted {
                index: 0,
                id: "toolu_01YGzqpRE16Vricda3Aqcejo".into(),
                name: "get_user_country".into()
            })
        );
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(
            (response.usage.input_tokens, response.usage.output_tokens),
            (398, 155)
        );
    }

    #[test]
    fn web_search_keeps_server_blocks_and_citations() {
        let body = fixture("anthropic/ant_web_search.response.json");
        let (deltas, response) = assemble(&events_of(&body, by_pieces));
        let response = response.expect("assembles");
        let providers = response
            .message
            .content
            .iter()
            .filter(|part| matches!(part, ContentPart::Provider(_)))
            .count();
        assert_eq!(providers, 2);
        // Server tools are not calls this crate runs.
        assert!(
            !deltas
                .iter()
                .any(|delta| matches!(delta, StreamDelta::ToolCallStarted { .. }))
        );
    }

    #[test]
    fn inputs_split_at_every_char_boundary_assemble_to_the_same_calls() {
        let mut body = fixture("anthropic/ant_parallel.response.json");
        // A non-ASCII input too.
        if let Some(Value::Object(call)) = body["content"]
            .as_array_mut()
            .and_then(|blocks| blocks.last_mut())
        {
            call.insert(
                "input".into(),
                json!({ "city": "Zürich ☃", "days": [1, 2] }),
            );
        }
        let expected = anthropic::parse_response(&body).expect("parses");
        let blocks = body["content"].as_array().cloned().unwrap_or_default();
        let mut checked = 0;
        for (target, block) in blocks.iter().enumerate() {
            if block["type"] != "tool_use" {
                continue;
            }
            for (before, after) in splits(&block["input"].to_string()) {
                let events = events_of(&body, |index, json| {
                    if index == target {
                        vec![before.clone(), after.clone()]
                    } else {
                        vec![json.to_owned()]
                    }
                });
                assert_eq!(
                    assemble(&events).1.as_ref(),
                    Ok(&expected),
                    "block {target} split after {before:?}"
                );
                checked += 1;
            }
        }
        assert!(checked > 40);
    }

    fn start() -> Event {
        event(
            "message_start",
            json!({ "type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "content": [],
                "model": "claude", "stop_reason": null, "usage": { "input_tokens": 5, "output_tokens": 1 }
            } }),
        )
    }

    fn tool_start(index: usize) -> Event {
        event(
            "content_block_start",
            json!({ "type": "content_block_start", "index": index,
                    "content_block": { "type": "tool_use", "id": format!("toolu_{index}"), "name": "f", "input": {} } }),
        )
    }

    fn json_delta(index: usize, partial: &str) -> Event {
        event(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": index,
                    "delta": { "type": "input_json_delta", "partial_json": partial } }),
        )
    }

    fn stop(index: usize) -> Event {
        event(
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }),
        )
    }

    fn end(reason: &str) -> [Event; 2] {
        [
            event(
                "message_delta",
                json!({ "type": "message_delta", "delta": { "stop_reason": reason }, "usage": { "output_tokens": 9 } }),
            ),
            event("message_stop", json!({ "type": "message_stop" })),
        ]
    }

    #[test]
    fn blank_input_is_an_empty_object_and_a_cut_one_is_kept_as_text() {
        let mut events = vec![
            start(),
            tool_start(0),
            json_delta(0, ""),
            stop(0),
            tool_start(1),
        ];
        events.extend([json_delta(1, "{\"city\": \"Pa"), stop(1)]);
        events.extend(end("max_tokens"));
        let response = assemble(&events).1.expect("assembles");
        let calls: Vec<_> = response
            .message
            .tool_calls()
            .map(|call| call.arguments.clone())
            .collect();
        assert_eq!(calls, ["{}", "{\"city\": \"Pa"]);
        assert_eq!(response.finish_reason, FinishReason::Length);
        assert_eq!(response.usage.output_tokens, 9);
    }

    #[test]
    fn a_mid_stream_error_event_is_a_provider_error_and_sticks() {
        let mut stream = EventAssembler::new();
        let (name, data) = start();
        assert!(stream.push(&name, &data).is_ok());
        let error = stream
            .push(
                "error",
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            )
            .expect_err("an error event");
        assert_eq!(error.path, "events[1].error");
        assert_eq!(
            error.kind,
            WireErrorKind::Provider {
                error_type: "overloaded_error".into(),
                message: "Overloaded".into()
            }
        );
        assert_eq!(
            error.to_string(),
            "Anthropic Messages: at events[1].error: the provider reported `overloaded_error`: Overloaded"
        );
        assert_eq!(stream.push("message_stop", "{}"), Err(error.clone()));
        assert_eq!(stream.finish(), Err(error));
    }

    #[test]
    fn out_of_place_events_and_indexes_are_typed_errors() {
        let kind = |events: &[Event]| assemble(events).1.map_err(|error| (error.path, error.kind));

        assert_eq!(
            kind(&[start(), tool_start(1)]),
            Err((
                "events[1].index".into(),
                WireErrorKind::UnexpectedIndex { index: 1, next: 0 }
            ))
        );
        assert_eq!(
            kind(&[start(), tool_start(0), json_delta(3, "{}")]),
            Err((
                "events[2].index".into(),
                WireErrorKind::UnexpectedIndex { index: 3, next: 1 }
            ))
        );
        assert_eq!(
            kind(&[start(), tool_start(0), stop(0), json_delta(0, "{}")]),
            Err((
                "events[3].index".into(),
                WireErrorKind::UnexpectedIndex { index: 0, next: 1 }
            ))
        );
        assert_eq!(
            kind(&[tool_start(0)]),
            Err((
                "events[0]".into(),
                WireErrorKind::UnexpectedEvent {
                    event: "content_block_start".into()
                }
            ))
        );
        assert_eq!(
            kind(&[start(), start()]),
            Err((
                "events[1]".into(),
                WireErrorKind::UnexpectedEvent {
                    event: "message_start".into()
                }
            ))
        );
        let text_on_tool = event(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": "x" } }),
        );
        assert_eq!(
            kind(&[start(), tool_start(0), text_on_tool]),
            Err((
                "events[2].delta".into(),
                WireErrorKind::UnexpectedEvent {
                    event: "text_delta".into()
                }
            ))
        );
        let mut after_stop = vec![start()];
        after_stop.extend(end("end_turn"));
        after_stop.push(tool_start(0));
        assert!(matches!(
            kind(&after_stop),
            Err((_, WireErrorKind::UnexpectedEvent { .. }))
        ));

        let not_json = (
            "content_block_delta".to_owned(),
            "{\"index\": 0,".to_owned(),
        );
        let error = kind(&[start(), not_json]).expect_err("not JSON");
        assert_eq!(error.0, "events[1]");
        assert!(matches!(error.1, WireErrorKind::NotJson { .. }));

        let no_text = event(
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta" } }),
        );
        let text_start = event(
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "" } }),
        );
        assert_eq!(
            kind(&[start(), text_start, no_text]),
            Err((
                "events[2].delta".into(),
                WireErrorKind::MissingField {
                    field: "text".into()
                }
            ))
        );

        // Cut off: no end.
        assert_eq!(
            kind(&[start(), tool_start(0)]),
            Err(("events".into(), WireErrorKind::Incomplete))
        );
        assert_eq!(kind(&[]), Err(("events".into(), WireErrorKind::Incomplete)));
    }

    #[test]
    fn pings_unknown_events_and_deltas_are_skipped_and_nameless_events_read_their_type() {
        let mut events = vec![
            ("".to_owned(), start().1),
            event("ping", json!({ "type": "ping" })),
            ("ping".to_owned(), "not even JSON".to_owned()),
            event("future_event", json!({ "type": "future_event" })),
            event(
                "content_block_start",
                json!({ "type": "content_block_start", "index": 0, "content_block": { "type": "text", "text": "Hi" } }),
            ),
            event(
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "future_delta", "x": 1 } }),
            ),
            ("message".to_owned(), json!({ "type": "content_block_delta", "index": 0, "delta": { "type": "text_delta", "text": " there" } }).to_string()),
            stop(0),
            event(
                "content_block_start",
                json!({ "type": "content_block_start", "index": 1, "content_block": { "type": "redacted_thinking", "data": "ZW5j" } }),
            ),
            stop(1),
        ];
        events.extend(end("end_turn"));
        let (deltas, response) = assemble(&events);
        let response = response.expect("assembles");
        assert_eq!(
            deltas,
            [
                StreamDelta::Text("Hi".into()),
                StreamDelta::Text(" there".into())
            ]
        );
        assert_eq!(response.message.text(), "Hi there");
        assert!(matches!(
            &response.message.content[1],
            ContentPart::Reasoning(reasoning) if reasoning.redacted.as_deref() == Some("ZW5j")
        ));
        assert_eq!(response.finish_reason, FinishReason::Stop);
    }

    #[test]
    fn cumulative_usage_of_message_delta_replaces_the_start_counts() {
        let mut events = vec![start()];
        events.push(event(
            "message_delta",
            json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" },
                    "usage": { "input_tokens": 7, "cache_read_input_tokens": 100, "output_tokens": 3, "server_tool_use": null } }),
        ));
        // No `message_stop`: the stop reason is enough.
        let response = assemble(&events).1.expect("assembles");
        assert_eq!(response.usage.input_tokens, 107);
        assert_eq!(response.usage.cache_read_tokens, 100);
        assert_eq!(response.usage.output_tokens, 3);
    }

    /// SGLang's Anthropic endpoint sends `input_tokens: 0` in
    /// `message_delta`: it overwrote the real count of `message_start`.
    #[test]
    fn a_zero_input_count_in_message_delta_keeps_the_start_count() {
        let mut events = vec![start()];
        events.push(event(
            "message_delta",
            json!({ "type": "message_delta", "delta": { "stop_reason": "end_turn" },
                    "usage": { "input_tokens": 0, "output_tokens": 3 } }),
        ));
        let response = assemble(&events).1.expect("assembles");
        assert_eq!(response.usage.input_tokens, 5);
        assert_eq!(response.usage.output_tokens, 3);
    }
}
