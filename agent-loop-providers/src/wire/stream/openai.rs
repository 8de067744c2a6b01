//! OpenAI Chat Completions streams: `chat.completion.chunk` payloads
//! assembled into the response [`openai::parse_response`] reads.
//!
//! A stream (`"stream": true`, with `"stream_options": {"include_usage":
//! true}` for usage) is a run of SSE `data:` payloads, each a chunk
//! `{"object": "chat.completion.chunk", "choices": [{"index", "delta",
//! "finish_reason"}], "usage"?}`, then the literal `[DONE]`. Each delta
//! carries pieces of the message: `role`, `content`, `reasoning_content`
//! (DeepSeek, vLLM), `refusal`, `tool_calls` (by `index`: the first piece of
//! a call has its `id`, `type` and `function.name`, later ones append
//! `function.arguments` text), and fields this crate does not model.
//!
//! ```
//! use agent_loop_core::conversation::FinishReason;
//! use agent_loop_providers::wire::stream::{StreamDelta, openai::ChunkAssembler};
//!
//! let mut stream = ChunkAssembler::new();
//! let mut deltas = Vec::new();
//! for data in [
//!     r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "}}]}"#,
//!     r#"{"choices":[{"index":0,"delta":{"content":"check."}}]}"#,
//!     r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}"#,
//!     r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}"#,
//!     r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}}]}"#,
//!     r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
//!     r#"{"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62}}"#,
//!     "[DONE]",
//! ] {
//!     deltas.extend(stream.push(data)?);
//! }
//! assert_eq!(deltas[0], StreamDelta::Text("Let me ".into()));
//! assert_eq!(
//!     deltas[2],
//!     StreamDelta::ToolCallStarted { index: 0, id: "call_1".into(), name: "get_weather".into() }
//! );
//! let response = stream.finish()?;
//! assert_eq!(response.message.text(), "Let me check.");
//! assert_eq!(response.message.tool_calls().next().map(|call| call.arguments.as_str()), Some(r#"{"city":"Oslo"}"#));
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.input_tokens, 50);
//! # Ok::<_, agent_loop_providers::wire::WireError>(())
//! ```

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::super::decode::{decode, read_text};
use super::super::error::{WireError, WireErrorKind};
use super::super::openai::{self, CompletionUsage};
use super::{StreamDelta, append_text, merge_field, parse_data, provider_error};
use agent_loop_core::conversation::{ModelResponse, WireFormat};

const FORMAT: WireFormat = WireFormat::OpenAiChat;

/// Assembles the `data:` payloads of one Chat Completions stream into a
/// [`ModelResponse`].
///
/// Feed every payload to [`push`](Self::push), in order, then call
/// [`finish`](Self::finish). The response is exactly what
/// [`openai::parse_response`] returns for the unstreamed body with the same
/// content: the assembler builds that body from the pieces and parses it.
///
/// # What is assembled
///
/// Only the choice of `index` 0 is read (the tool loop asks for one);
/// other choices are skipped.
///
/// - `content`: string pieces concatenated. A piece that is an array of
///   parts (`text`, or another `type` kept verbatim) turns the content into
///   an array, consecutive text joined into one `text` part.
/// - `reasoning_content`: pieces concatenated; present when some piece
///   had it, `""` included (as the unstreamed body's `""` is kept: DeepSeek
///   wants it back); a `null` piece is none.
/// - `refusal`: pieces concatenated; present only when some piece is not
///   empty (servers send `""` in every chunk).
/// - `tool_calls`: by `index`. A new `index` must be the next one (`0`,
///   then `1`, …); a lower one continues that index's latest call, in any
///   order (interleaved pieces of parallel calls), except for a piece that
///   is plainly another call, which starts one: once the call's arguments
///   are a whole JSON value, a piece with an `id` other than the call's,
///   or with a name and arguments (Ollama's `/v1` sends every call whole
///   at `index: 0`). A piece at a new `index` with neither `id` nor name
///   continues the last call (SGLang sends a call's arguments so), so no
///   nameless call appears. Without
///   `index` (Gemini once omitted it), a piece with an id other than the
///   last call's, or with a name when the last call already has a
///   different name or some arguments, starts a new call; any other
///   continues the last call. The first non-empty `id` is kept (servers
///   send it late, or `""`). A `name` piece equal to the name so far is a
///   repeat and ignored, one that starts with it replaces it, any other is
///   appended. `function.arguments` pieces are concatenated (a piece that
///   is a JSON object, not text, adds its compact JSON text), except that a
///   piece holding all the text so far and more replaces it, and one equal
///   to a whole JSON text so far is a repeat: DeepSeek-style servers resend
///   the arguments so far in every piece. The last
///   `type` wins. Other fields of a call (Gemini's `extra_content`) are
///   kept.
/// - Other fields of the delta (OpenRouter's `reasoning`, say) and of a
///   call: a string piece is appended, an array's elements are appended, an
///   object is merged key by key by the same rule, `null` is skipped, any
///   other value replaces the one before; they become extras as
///   `parse_response` makes them. A string field whose every piece, two
///   or more, is the same text is a label sent again with each chunk
///   (Groq's `"channel": "analysis"`), not text in pieces: it keeps that
///   text once.
/// - `role`: the last non-empty one; `assistant` when none.
/// - `finish_reason`: the last non-`null` one.
/// - `usage`: the last non-`null` one, usually in the last chunk, whose
///   `choices` may be empty. Servers that send cumulative usage in every
///   chunk work too.
///
/// A blank payload (a keep-alive) is skipped. Fields of the chunk itself
/// (`id`, `model`, `created`, `system_fingerprint`, …) are not read.
#[derive(Debug, Default)]
pub struct ChunkAssembler {
    /// Payloads pushed so far, the next one's position.
    chunks: usize,
    /// `[DONE]` seen.
    done: bool,
    /// The error returned, returned again.
    failed: Option<WireError>,
    /// A choice of index 0 seen.
    choice_seen: bool,
    role: Option<String>,
    content: Content,
    reasoning: String,
    /// Some piece had `reasoning_content`, `""` too.
    has_reasoning: bool,
    refusal: String,
    calls: Vec<CallState>,
    /// For each tool call `index` the server used, the position in
    /// `calls` of its latest call.
    latest: Vec<usize>,
    extras: Map<String, Value>,
    /// For each other string field of the delta, the piece it started
    /// with and whether every later piece repeated it.
    labels: HashMap<String, Label>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

/// The message `content` so far.
#[derive(Debug, Default)]
enum Content {
    /// No piece yet.
    #[default]
    None,
    /// String pieces.
    Text(String),
    /// Parts, once a piece was an array.
    Parts(Vec<Value>),
}

/// A string field of the delta this crate does not model, watched for
/// being a label rather than text: Groq sends `"channel": "analysis"` in
/// every chunk, which appended would read `"analysisanalysis…"`.
#[derive(Debug)]
struct Label {
    /// The first piece.
    piece: String,
    /// More than one piece came, each equal to the first.
    repeated: bool,
    /// Every piece so far equals the first.
    constant: bool,
}

/// Notes one string `piece` of the delta field `key` (see [`Label`]).
fn note_label(labels: &mut HashMap<String, Label>, key: &str, piece: &str) {
    match labels.get_mut(key) {
        Some(label) => {
            label.constant &= label.piece == piece;
            label.repeated = label.constant;
        }
        None => {
            labels.insert(
                key.to_owned(),
                Label {
                    piece: piece.to_owned(),
                    repeated: false,
                    constant: true,
                },
            );
        }
    }
}

/// One tool call so far.
#[derive(Debug, Default)]
struct CallState {
    id: Option<String>,
    kind: Option<String>,
    /// A `function` object seen.
    function: bool,
    name: String,
    arguments: String,
    extras: Map<String, Value>,
    /// [`StreamDelta::ToolCallStarted`] returned.
    started: bool,
}

#[derive(Deserialize, Debug)]
#[serde(expecting = "a chat.completion.chunk object")]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    /// Decoded to check its shape; kept as JSON.
    #[serde(default)]
    usage: Option<CompletionUsage>,
}

#[derive(Deserialize, Debug)]
#[serde(expecting = "a choice object")]
struct ChunkChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Default, Deserialize, Debug)]
#[serde(expecting = "a delta object")]
struct Delta {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize, Debug)]
#[serde(expecting = "a tool call object")]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

#[derive(Deserialize, Debug)]
#[serde(expecting = "a function object")]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

impl ChunkAssembler {
    /// An assembler for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads one SSE `data:` payload: a `chat.completion.chunk` JSON object,
    /// or `[DONE]`, which ends the stream. Returns the pieces a live UI
    /// shows, in order: [`StreamDelta::Reasoning`], [`StreamDelta::Text`]
    /// and [`StreamDelta::Refusal`] for each non-empty piece,
    /// [`StreamDelta::ToolCallStarted`] once per function call (`type`
    /// `function` or none so far: a call of another type is not one
    /// [`openai::parse_response`] makes a tool call), when it first has a
    /// name (with the id known by then). A blank payload returns nothing.
    ///
    /// # Errors
    ///
    /// A [`WireError`] at `chunks[i]` (`i` counts payloads from 0) or below:
    ///
    /// - [`WireErrorKind::NotJson`]: the payload is neither JSON nor
    ///   `[DONE]`;
    /// - [`WireErrorKind::Provider`]: the chunk has a non-`null` `error`
    ///   (`{"error": {"type", "message", "code"}}`, as vLLM, llama.cpp and
    ///   OpenRouter send mid-stream), with its type (else its code) and
    ///   message;
    /// - [`WireErrorKind::UnexpectedIndex`]: a tool call `index` past the
    ///   next new one, e.g. `2` when only call `0` was seen;
    /// - [`WireErrorKind::UnexpectedEvent`]: a payload after `[DONE]`;
    /// - [`WireErrorKind::WrongType`] (and the other kinds of a shape
    ///   error): a field of the wrong JSON type, e.g. at
    ///   `chunks[3].choices[0].delta.tool_calls[0].function.name`, or a
    ///   `content` that is neither text nor an array.
    ///
    /// After an error, every later call returns the same error.
    pub fn push(&mut self, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        self.push_event("message", data)
    }

    /// Like [`push`](Self::push), for a payload that came with the SSE
    /// event name `event` (`"message"` when the server named none).
    ///
    /// An `error` event is the provider's error whatever its data holds:
    /// `{"error": {"type", "message", "code"}}`, the error object itself
    /// (`{"message", "type"}`), or plain text. It is a
    /// [`WireErrorKind::Provider`] at `chunks[i]`, and it sticks: a
    /// `[DONE]` after it does not make the stream whole. Other event names
    /// are read as plain `data:` payloads.
    ///
    /// ```
    /// use agent_loop_providers::wire::WireErrorKind;
    /// use agent_loop_providers::wire::stream::openai::ChunkAssembler;
    ///
    /// let mut stream = ChunkAssembler::new();
    /// stream.push(r#"{"choices":[{"index":0,"delta":{"content":"The answer is"}}]}"#)?;
    /// let error = stream
    ///     .push_event("error", r#"{"message":"upstream connection reset","type":"server_error"}"#)
    ///     .unwrap_err();
    /// assert_eq!(
    ///     error.kind,
    ///     WireErrorKind::Provider {
    ///         error_type: "server_error".into(),
    ///         message: "upstream connection reset".into(),
    ///     }
    /// );
    /// assert!(stream.push("[DONE]").is_err());
    /// assert_eq!(stream.finish(), Err(error));
    /// # Ok::<_, agent_loop_providers::wire::WireError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Those of [`push`](Self::push), and the `error` event's.
    pub fn push_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let path = format!("chunks[{}]", self.chunks);
        self.chunks += 1;
        let result = if event == "error" {
            Err(error_event(&path, data))
        } else {
            self.read(&path, data)
        };
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    fn read(&mut self, path: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if self.done {
            let event = if data == "[DONE]" { "[DONE]" } else { "chunk" };
            return Err(WireError::new(
                FORMAT,
                path,
                WireErrorKind::UnexpectedEvent {
                    event: event.to_owned(),
                },
            ));
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let (chunk, usage) = read_chunk(path, data)?;
        if chunk.usage.is_some() {
            self.usage = usage;
        }
        let mut deltas = Vec::new();
        for (position, choice) in chunk.choices.unwrap_or_default().into_iter().enumerate() {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            self.choice_seen = true;
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
            let delta = choice.delta.unwrap_or_default();
            let delta_path = format!("{path}.choices[{position}].delta");
            self.read_delta(&delta_path, delta, &mut deltas)?;
        }
        Ok(deltas)
    }

    fn read_delta(
        &mut self,
        path: &str,
        delta: Delta,
        deltas: &mut Vec<StreamDelta>,
    ) -> Result<(), WireError> {
        if let Some(role) = delta.role
            && !role.is_empty()
        {
            self.role = Some(role);
        }
        if let Some(reasoning) = delta.reasoning_content {
            // Present, even as `""`: the message has reasoning, as the
            // unstreamed body's `"reasoning_content": ""` says (DeepSeek
            // wants it back so).
            self.has_reasoning = true;
            if !reasoning.is_empty() {
                self.reasoning.push_str(&reasoning);
                deltas.push(StreamDelta::Reasoning(reasoning));
            }
        }
        match delta.content {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) if !text.is_empty() => {
                self.push_text(&text);
                deltas.push(StreamDelta::Text(text));
            }
            Some(Value::String(_)) => {}
            Some(Value::Array(parts)) => {
                for part in parts {
                    if let Some(text) = self.push_part(part) {
                        deltas.push(StreamDelta::Text(text));
                    }
                }
            }
            Some(other) => {
                return Err(WireError::new(
                    FORMAT,
                    format!("{path}.content"),
                    WireErrorKind::WrongType {
                        field: "content".to_owned(),
                        expected: "a string or an array".to_owned(),
                        found: agent_loop_core::support::json::type_name(&other).to_owned(),
                    },
                ));
            }
        }
        if let Some(refusal) = delta.refusal
            && !refusal.is_empty()
        {
            self.refusal.push_str(&refusal);
            deltas.push(StreamDelta::Refusal(refusal));
        }
        for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            let call_path = format!("{path}.tool_calls[{position}]");
            if let Some(started) = self.read_call(&call_path, call)? {
                deltas.push(started);
            }
        }
        for (key, value) in delta.rest {
            if let Value::String(piece) = &value {
                note_label(&mut self.labels, &key, piece);
            }
            merge_field(&mut self.extras, key, value);
        }
        Ok(())
    }

    /// Appends text to the content.
    fn push_text(&mut self, piece: &str) {
        match &mut self.content {
            Content::None => self.content = Content::Text(piece.to_owned()),
            Content::Text(text) => text.push_str(piece),
            Content::Parts(parts) => push_text_part(parts, piece),
        }
    }

    /// Appends one content part; returns its text when it is a `text` part.
    fn push_part(&mut self, part: Value) -> Option<String> {
        if !matches!(self.content, Content::Parts(_)) {
            let mut parts = Vec::new();
            if let Content::Text(text) = std::mem::take(&mut self.content)
                && !text.is_empty()
            {
                parts.push(json!({ "type": "text", "text": text }));
            }
            self.content = Content::Parts(parts);
        }
        let Content::Parts(parts) = &mut self.content else {
            return None;
        };
        let text = (part.get("type").and_then(Value::as_str) == Some("text"))
            .then(|| part.get("text").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        match &text {
            Some(text) if is_plain_text(&part) => push_text_part(parts, text),
            _ => parts.push(part),
        }
        text.filter(|text| !text.is_empty())
    }

    /// Reads one tool call piece; returns the call's start when it has just
    /// got its name.
    fn read_call(
        &mut self,
        path: &str,
        call: ToolCallDelta,
    ) -> Result<Option<StreamDelta>, WireError> {
        let name = call
            .function
            .as_ref()
            .and_then(|function| function.name.as_deref())
            .unwrap_or("");
        let id = call.id.as_deref().unwrap_or("");
        // Neither an id nor a name: a piece of arguments only.
        let anonymous = id.is_empty() && name.is_empty();
        let has_arguments = call
            .function
            .as_ref()
            .and_then(|function| function.arguments.as_ref())
            .is_some_and(|arguments| match arguments {
                Value::String(text) => !text.trim().is_empty(),
                other => !other.is_null(),
            });
        let next = self.latest.len();
        let at = match call.index {
            // A known index: its latest call, unless the piece is plainly
            // another call (Ollama labels every call `index: 0`).
            Some(index) if index < next as u64 => {
                let at = self.latest[index as usize];
                if reuses_index(&self.calls[at], id, name, has_arguments) {
                    self.new_call(Some(index))
                } else {
                    at
                }
            }
            // A new index with arguments only continues the last call
            // (SGLang sends a call's arguments at the next index, without
            // its id and name), so no nameless call appears.
            Some(_) if anonymous && !self.calls.is_empty() => self.calls.len() - 1,
            Some(index) if index == next as u64 => self.new_call(Some(index)),
            Some(index) => {
                return Err(WireError::new(
                    FORMAT,
                    format!("{path}.index"),
                    WireErrorKind::UnexpectedIndex {
                        index,
                        next: next as u64,
                    },
                ));
            }
            None => match self.calls.last() {
                Some(last) if !starts_new_call(last, id, name) => self.calls.len() - 1,
                _ => self.new_call(None),
            },
        };
        let Some(state) = self.calls.get_mut(at) else {
            return Ok(None);
        };
        if let Some(id) = call.id
            && state.id.as_deref().is_none_or(str::is_empty)
        {
            state.id = Some(id);
        }
        if let Some(kind) = call.kind {
            state.kind = Some(kind);
        }
        if let Some(function) = call.function {
            state.function = true;
            if let Some(name) = function.name {
                if state.name.is_empty() || name.starts_with(state.name.as_str()) {
                    state.name = name;
                } else if name != state.name {
                    state.name.push_str(&name);
                }
            }
            match function.arguments {
                None | Some(Value::Null) => {}
                Some(Value::String(piece)) => push_arguments(&mut state.arguments, piece),
                // `Display` of a JSON value is its compact text, as the
                // unstreamed parser reads such arguments.
                Some(other) => state.arguments.push_str(&other.to_string()),
            }
        }
        for (key, value) in call.rest {
            merge_field(&mut state.extras, key, value);
        }
        let function = state.kind.as_deref().is_none_or(|kind| kind == "function");
        if state.started || state.name.is_empty() || !function {
            return Ok(None);
        }
        state.started = true;
        Ok(Some(StreamDelta::ToolCallStarted {
            index: at,
            id: state.id.clone().unwrap_or_default(),
            name: state.name.clone(),
        }))
    }

    /// `true` once a chunk gave the `finish_reason` and no error came:
    /// [`finish`](Self::finish) then returns the whole answer even if
    /// `[DONE]` never comes (servers that hold the stream open after the
    /// answer). Usage, if the server sends it, may still follow.
    pub fn is_whole(&self) -> bool {
        self.failed.is_none() && self.finish_reason.is_some()
    }

    /// Starts a call, for the server's `index` when it gave one; returns
    /// its position.
    fn new_call(&mut self, index: Option<u64>) -> usize {
        let at = self.calls.len();
        self.calls.push(CallState::default());
        match index.map(|index| index as usize) {
            Some(index) if index < self.latest.len() => self.latest[index] = at,
            Some(_) => self.latest.push(at),
            None => {}
        }
        at
    }

    /// The assembled response: what [`openai::parse_response`] returns for
    /// the unstreamed body with the same content (see the type's docs for
    /// how pieces assemble).
    ///
    /// # Errors
    ///
    /// - The error a [`push`](Self::push) returned, again.
    /// - [`WireErrorKind::Incomplete`] at `chunks` when the stream had
    ///   neither `[DONE]` nor a `finish_reason`: it was cut off, and a
    ///   response built from it would look whole.
    /// - The errors of [`openai::parse_response`] for the assembled body,
    ///   at `response…`: [`WireErrorKind::NoChoices`] when no chunk had a
    ///   choice of index 0, [`WireErrorKind::UnknownRole`] for a `role`
    ///   other than `assistant`, [`WireErrorKind::MissingField`] for a tool
    ///   call that never got a `function`.
    pub fn finish(self) -> Result<ModelResponse, WireError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        if !self.done && self.finish_reason.is_none() {
            return Err(WireError::new(FORMAT, "chunks", WireErrorKind::Incomplete));
        }
        openai::parse_response(&self.body())
    }

    /// The unstreamed response body with the assembled content.
    fn body(self) -> Value {
        let mut body = Map::new();
        let mut choices = Vec::new();
        if self.choice_seen {
            let mut message = self.extras;
            for (key, label) in self.labels {
                if label.repeated {
                    message.insert(key, Value::String(label.piece));
                }
            }
            message.insert(
                "role".to_owned(),
                Value::String(self.role.unwrap_or_else(|| "assistant".to_owned())),
            );
            message.insert(
                "content".to_owned(),
                match self.content {
                    Content::None => Value::Null,
                    Content::Text(text) => Value::String(text),
                    Content::Parts(parts) => Value::Array(parts),
                },
            );
            if self.has_reasoning {
                message.insert(
                    "reasoning_content".to_owned(),
                    Value::String(self.reasoning),
                );
            }
            if !self.refusal.is_empty() {
                message.insert("refusal".to_owned(), Value::String(self.refusal));
            }
            if !self.calls.is_empty() {
                let calls = self.calls.into_iter().map(CallState::body).collect();
                message.insert("tool_calls".to_owned(), Value::Array(calls));
            }
            choices.push(json!({
                "index": 0,
                "message": message,
                "finish_reason": self.finish_reason,
            }));
        }
        body.insert("choices".to_owned(), Value::Array(choices));
        if let Some(usage) = self.usage {
            body.insert("usage".to_owned(), usage);
        }
        Value::Object(body)
    }
}

/// A chunk read from its payload, and its `usage` as JSON: straight from
/// the text when it is a chunk without an `error`, else as a `Value`
/// first, which reports what is wrong with it (see
/// [`read_text`](crate::wire::decode::read_text)).
fn read_chunk(path: &str, data: &str) -> Result<(Chunk, Option<Value>), WireError> {
    if let Some(mut read) = read_text::<Chunk>(data.as_bytes(), &["error", "usage"])
        && read.kept.get("error").is_none_or(Value::is_null)
    {
        return Ok((read.value, read.kept.remove("usage")));
    }
    parse_chunk(path, data)
}

/// [`read_chunk`] through a `Value`.
fn parse_chunk(path: &str, data: &str) -> Result<(Chunk, Option<Value>), WireError> {
    let value = parse_data(FORMAT, path, data)?;
    if let Some(error) = value.get("error").filter(|error| !error.is_null()) {
        return Err(WireError::new(
            FORMAT,
            format!("{path}.error"),
            provider_error(error),
        ));
    }
    let chunk: Chunk = decode(FORMAT, path, &value)?;
    Ok((chunk, value.get("usage").cloned()))
}

/// The provider's error an SSE `error` event carries, whatever the shape
/// of its data: wrapped in `{"error": ...}`, the error object itself, or
/// text.
fn error_event(path: &str, data: &str) -> WireError {
    let data = data.trim();
    let kind = match serde_json::from_str::<Value>(data) {
        Ok(value) => match value.get("error").filter(|error| !error.is_null()) {
            Some(error) => provider_error(error),
            None => provider_error(&value),
        },
        Err(_) => WireErrorKind::Provider {
            error_type: "error".to_owned(),
            message: if data.is_empty() {
                "the server sent an error event without data".to_owned()
            } else {
                data.to_owned()
            },
        },
    };
    WireError::new(FORMAT, path, kind)
}

impl CallState {
    /// The call as an unstreamed message has it.
    fn body(self) -> Value {
        let mut call = self.extras;
        if let Some(id) = self.id {
            call.insert("id".to_owned(), Value::String(id));
        }
        if let Some(kind) = self.kind {
            call.insert("type".to_owned(), Value::String(kind));
        }
        if self.function {
            call.insert(
                "function".to_owned(),
                json!({ "name": self.name, "arguments": self.arguments }),
            );
        }
        Value::Object(call)
    }
}

/// `true` for a call piece without `index` that starts a new call after
/// `last`: it has an id other than `last`'s, or a name when `last` already
/// has another name or some arguments.
fn starts_new_call(last: &CallState, id: &str, name: &str) -> bool {
    let other_id = !id.is_empty() && last.id.as_deref().is_some_and(|known| known != id);
    let other_name = !name.is_empty()
        && (!last.name.is_empty() && last.name != name || !last.arguments.is_empty());
    other_id || other_name
}

/// `true` when a piece at the index of `call` is another call: the call's
/// arguments are already a whole JSON value, and the piece has an id other
/// than the call's, or a name and arguments (Ollama's `/v1` sends each
/// call whole, every one at `index: 0`). While the call is being written,
/// any piece at its index is its own: a server that changes the id
/// mid-call keeps its first one, and a repeated name is a repeat.
fn reuses_index(call: &CallState, id: &str, name: &str, has_arguments: bool) -> bool {
    let other_id = !id.is_empty() && call.id.as_deref().is_some_and(|known| known != id);
    let another = other_id || (!name.is_empty() && has_arguments);
    another
        && !call.arguments.trim().is_empty()
        && serde_json::from_str::<serde::de::IgnoredAny>(&call.arguments).is_ok()
}

/// Adds an arguments piece. A piece that starts with all the text so far
/// (and is longer) replaces it, and one equal to a whole JSON text so far
/// is a repeat: some servers resend the whole arguments so far in every
/// piece, which appended would never parse. Appending such a piece could
/// give valid JSON only inside a string that repeats the text before it,
/// which no model writes piece by piece.
fn push_arguments(arguments: &mut String, piece: String) {
    if !arguments.is_empty()
        && piece.len() >= arguments.len()
        && piece.starts_with(arguments.as_str())
    {
        let repeat = piece.len() == arguments.len();
        if !repeat || serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_ok() {
            *arguments = piece;
            return;
        }
    }
    arguments.push_str(&piece);
}

/// `true` for `{"type": "text", "text": "…"}` with no other field.
fn is_plain_text(part: &Value) -> bool {
    part.as_object().is_some_and(|fields| {
        fields.len() == 2
            && fields.get("type").and_then(Value::as_str) == Some("text")
            && fields.get("text").is_some_and(Value::is_string)
    })
}

/// Appends text to the last part when it is a plain `text` part, else adds
/// one.
fn push_text_part(parts: &mut Vec<Value>, piece: &str) {
    if let Some(last) = parts.last_mut()
        && is_plain_text(last)
        && let Value::Object(fields) = last
    {
        append_text(fields, "text", piece);
        return;
    }
    parts.push(json!({ "type": "text", "text": piece }));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::test_support::{fixture, pieces, splits};
    use super::*;
    use agent_loop_core::conversation::{ContentPart, FinishReason};

    /// The `data:` payloads of every recorded Chat Completions stream.
    fn recorded_payloads() -> Vec<String> {
        let folder = format!(
            "{}/../tests/fixtures/wire-real/openai-stream",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut payloads = Vec::new();
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|extension| extension == "sse") {
                let text = std::fs::read_to_string(&path).unwrap();
                payloads.extend(
                    text.lines()
                        .filter_map(|line| line.strip_prefix("data:"))
                        .map(|data| data.trim().to_owned()),
                );
            }
        }
        payloads
    }

    #[test]
    fn chunks_read_straight_as_through_a_value() {
        let same = |data: &str| {
            assert_eq!(
                format!("{:?}", read_chunk("chunks[0]", data)),
                format!("{:?}", parse_chunk("chunks[0]", data)),
                "{data}"
            );
        };
        let payloads = recorded_payloads();
        assert!(payloads.len() > 100);
        let mut straight = 0;
        for data in payloads.iter().filter(|data| *data != "[DONE]") {
            same(data);
            straight += usize::from(read_text::<Chunk>(data.as_bytes(), &[]).is_some());
            let Ok(Value::Object(chunk)) = serde_json::from_str::<Value>(data) else {
                continue;
            };
            let inner = &data[1..];
            for members in [
                r#""error":{"message":"m","code":429},"#,
                r#""error":null,"#,
                r#""error":{"message":"m"},"error":null,"#,
                r#""error":null,"error":"boom","#,
                r#""usage":{"prompt_tokens":1},"usage":null,"#,
                r#""usage":null,"#,
                r#""usage":"none","#,
                r#""ignored":"\ud800","#,
                r#""choices":7,"#,
            ] {
                same(&format!("{{{members}{inner}"));
            }
            // Each member, and each member of the first choice's delta,
            // of every JSON type.
            let delta = chunk
                .get("choices")
                .and_then(|choices| choices.get(0))
                .and_then(|choice| choice.get("delta"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            for replacement in [
                json!(null),
                json!(3),
                json!(-1),
                json!("x"),
                json!([{}]),
                json!({}),
                json!(false),
            ] {
                for key in chunk.keys() {
                    let mut changed = chunk.clone();
                    changed.insert(key.clone(), replacement.clone());
                    same(&Value::Object(changed).to_string());
                }
                for key in delta.keys() {
                    let mut changed = Value::Object(chunk.clone());
                    changed["choices"][0]["delta"][key] = replacement.clone();
                    same(&changed.to_string());
                }
            }
        }
        assert_eq!(
            straight,
            payloads.iter().filter(|data| *data != "[DONE]").count()
        );
    }

    /// The chunks a server streams for an unstreamed body: the message's
    /// other fields and role first, then reasoning, text and refusal in
    /// pieces, each call's head then its arguments as `arguments(i, text)`
    /// cuts them, the finish reason, usage in a last chunk without
    /// choices, `[DONE]`.
    fn chunks_of(body: &Value, arguments: impl Fn(usize, &str) -> Vec<String>) -> Vec<String> {
        let choice = &body["choices"][0];
        let message = choice["message"].as_object().cloned().unwrap_or_default();
        let chunk = |delta: Value| {
            json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta }] })
                .to_string()
        };
        let mut out = Vec::new();
        let mut head = message.clone();
        for key in ["content", "reasoning_content", "refusal", "tool_calls"] {
            head.remove(key);
        }
        out.push(chunk(Value::Object(head)));
        for key in ["reasoning_content", "content", "refusal"] {
            if let Some(text) = message.get(key).and_then(Value::as_str) {
                for piece in pieces(text, 7) {
                    out.push(chunk(json!({ key: piece })));
                }
            }
        }
        let calls = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (index, call) in calls.iter().enumerate() {
            let mut head = call.as_object().cloned().unwrap_or_default();
            head.insert("index".into(), json!(index));
            head.insert(
                "function".into(),
                json!({ "name": call["function"]["name"], "arguments": "" }),
            );
            out.push(chunk(json!({ "tool_calls": [head] })));
            let text = call["function"]["arguments"].as_str().unwrap_or("");
            for piece in arguments(index, text) {
                out.push(chunk(
                    json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                ));
            }
        }
        out.push(
            json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": choice["finish_reason"] }] })
                .to_string(),
        );
        if let Some(usage) = body.get("usage") {
            out.push(json!({ "choices": [], "usage": usage }).to_string());
        }
        out.push("[DONE]".to_owned());
        out
    }

    fn assemble<S: AsRef<str>>(
        chunks: &[S],
    ) -> (Vec<StreamDelta>, Result<ModelResponse, WireError>) {
        let mut stream = ChunkAssembler::new();
        let mut deltas = Vec::new();
        for data in chunks {
            match stream.push(data.as_ref()) {
                Ok(more) => deltas.extend(more),
                Err(error) => return (deltas, Err(error)),
            }
        }
        (deltas, stream.finish())
    }

    fn assert_streams_like(body: &Value) {
        let expected = openai::parse_response(body).expect("the body parses");
        let (_, assembled) = assemble(&chunks_of(body, |_, text| pieces(text, 3)));
        assert_eq!(assembled.expect("the stream assembles"), expected);
    }

    /// Groq repeats `"channel": "analysis"` in every chunk: a label, kept
    /// once; a field whose pieces differ is text and appended, and one
    /// piece alone is kept as it came.
    #[test]
    fn a_field_repeated_unchanged_in_every_chunk_is_a_label_kept_once() {
        let chunk = |delta: Value| {
            json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta }] })
                .to_string()
        };
        let chunks = [
            chunk(
                json!({ "role": "assistant", "channel": "analysis", "reasoning": "ha", "tier": "x" }),
            ),
            chunk(json!({ "channel": "analysis", "reasoning": "ha" })),
            chunk(json!({ "channel": "analysis", "reasoning": "!", "content": "Hi" })),
            json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] })
                .to_string(),
            "[DONE]".to_owned(),
        ];
        let (_, response) = assemble(&chunks);
        let response = response.unwrap();
        let message = &response.message;
        let fields = message.extras.fields();
        assert_eq!(fields["channel"], "analysis");
        assert_eq!(fields["reasoning"], "haha!");
        assert_eq!(fields["tier"], "x");
    }

    /// DeepSeek opens a stream with `"reasoning_content": ""` and sends
    /// `null` after it: the empty reasoning is kept, as the unstreamed
    /// body's `""` is, so it goes back to DeepSeek alike; a stream that
    /// never had it (only `null`) has no reasoning.
    #[test]
    fn an_empty_reasoning_content_is_kept_as_the_unstreamed_body_keeps_it() {
        let chunk = |delta: Value| {
            json!({ "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta }] })
                .to_string()
        };
        let end = json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] })
            .to_string();
        let chunks = [
            chunk(json!({ "role": "assistant", "content": null, "reasoning_content": "" })),
            chunk(json!({ "content": "Hi", "reasoning_content": null })),
            end.clone(),
        ];
        let body = json!({ "object": "chat.completion", "choices": [{ "index": 0, "finish_reason": "stop",
            "message": { "role": "assistant", "content": "Hi", "reasoning_content": "" } }] });
        let (deltas, response) = assemble(&chunks);
        let response = response.unwrap();
        assert_eq!(response, openai::parse_response(&body).unwrap());
        assert!(
            matches!(response.message.content.first(), Some(ContentPart::Reasoning(part)) if part.text.is_empty()),
            "{:?}",
            response.message.content
        );
        assert_eq!(deltas, [StreamDelta::Text("Hi".into())], "no empty delta");

        let chunks = [
            chunk(json!({ "role": "assistant", "content": "Hi", "reasoning_content": null })),
            end,
        ];
        let (_, response) = assemble(&chunks);
        let response = response.unwrap();
        assert_eq!(
            response.message.content.len(),
            1,
            "{:?}",
            response.message.content
        );
        assert_eq!(response.message.text(), "Hi");
    }

    /// The recorded Groq stream assembles to its one `channel`.
    #[test]
    fn groqs_recorded_channel_is_kept_once() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/wire-real/openai-stream/groq_retry_tool.sse"
        );
        let sse = std::fs::read_to_string(path).unwrap();
        let chunks: Vec<String> = sse
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(str::to_owned)
            .collect();
        let (_, response) = assemble(&chunks);
        let response = response.unwrap();
        let message = &response.message;
        assert_eq!(message.extras.fields()["channel"], "analysis");
    }

    #[test]
    fn deepseek_reasoning_text_and_two_calls_equal_the_unstreamed_response() {
        let body = fixture("openai/oai_deepseek_thinking.response.json");
        assert_streams_like(&body);
        let (deltas, response) = assemble(&chunks_of(&body, |_, text| pieces(text, 3)));
        let response = response.expect("assembles");
        assert!(matches!(
            response.message.content[0],
            ContentPart::Reasoning(_)
        ));
        assert_eq!(response.message.tool_calls().count(), 2);
        assert_eq!(response.usage.output_tokens, 79);
        assert_eq!(response.usage.reasoning_tokens, 26);
        let text: String = deltas
            .iter()
            .filter_map(|delta| match delta {
                StreamDelta::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Let me get your name and roll the die!");
        let started: Vec<_> = deltas
            .iter()
            .filter(|delta| matches!(delta, StreamDelta::ToolCallStarted { .. }))
            .collect();
        assert_eq!(
            started,
            [
                &StreamDelta::ToolCallStarted {
                    index: 0,
                    id: "call_00_6edlnw3Z1MgeMfey687g8451".into(),
                    name: "get_player_name".into()
                },
                &StreamDelta::ToolCallStarted {
                    index: 1,
                    id: "call_01_km02sac7sHxNDPATKLZy7705".into(),
                    name: "roll_dice".into()
                }
            ]
        );
    }

    #[test]
    fn recorded_gpt4o_responses_equal_the_unstreamed_ones() {
        for path in [
            "openai/oai_hitl_parallel.response.json",
            "openai/oai_py_parallel.response.json",
            "openai/oai_tool_output.response.json",
        ] {
            assert_streams_like(&fixture(path));
        }
    }

    /// Text, reasoning, two parallel calls with non-ASCII arguments, one
    /// with Gemini's `extra_content`, a message extra.
    fn rich_body() -> Value {
        json!({
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "reasoning_content": "Two cities; two lookups.",
                    "content": "Checking both…",
                    "reasoning": "OpenRouter's copy",
                    "tool_calls": [
                        {
                            "id": "call_a", "type": "function",
                            "function": { "name": "get_weather", "arguments": "{\"city\": \"Zürich ☃\"}" },
                            "extra_content": { "google": { "thought_signature": "c2ln" } }
                        },
                        {
                            "id": "call_b", "type": "function",
                            "function": { "name": "get_weather", "arguments": "{\"city\":\"Oslo\",\"days\":[1,2]}" }
                        }
                    ]
                }
            }],
            "usage": {
                "prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140,
                "prompt_tokens_details": { "cached_tokens": 64 },
                "completion_tokens_details": { "reasoning_tokens": 12 }
            }
        })
    }

    #[test]
    fn extras_of_the_message_and_calls_equal_the_unstreamed_response() {
        let body = rich_body();
        assert_streams_like(&body);
        let (_, response) = assemble(&chunks_of(&body, |_, text| pieces(text, 1)));
        let response = response.expect("assembles");
        let first = response
            .message
            .tool_calls()
            .next()
            .cloned()
            .expect("a call");
        assert!(first.extras.fields().contains_key("extra_content"));
        assert_eq!(response.usage.cache_read_tokens, 64);
    }

    #[test]
    fn arguments_split_at_every_char_boundary_assemble_to_the_same_calls() {
        let body = rich_body();
        let expected = openai::parse_response(&body).expect("parses");
        let calls = body["choices"][0]["message"]["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (target, call) in calls.iter().enumerate() {
            let text = call["function"]["arguments"].as_str().unwrap_or("");
            for (before, after) in splits(text) {
                let chunks = chunks_of(&body, |index, whole| {
                    if index == target {
                        vec![before.clone(), after.clone()]
                    } else {
                        vec![whole.to_owned()]
                    }
                });
                let (_, assembled) = assemble(&chunks);
                assert_eq!(
                    assembled.as_ref(),
                    Ok(&expected),
                    "call {target} split after {before:?}"
                );
            }
        }
    }

    #[test]
    fn refusal_pieces_make_a_refusal() {
        let body = json!({ "choices": [{ "index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": null, "refusal": "I can't help with that."
        } }] });
        assert_streams_like(&body);
        let (deltas, response) = assemble(&chunks_of(&body, |_, text| vec![text.to_owned()]));
        assert_eq!(
            response.map(|response| response.finish_reason),
            Ok(FinishReason::Refusal)
        );
        assert!(deltas.contains(&StreamDelta::Refusal("I can't".into())));
    }

    #[test]
    fn usage_comes_from_the_last_chunk_without_choices() {
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}"#,
            "[DONE]",
        ];
        let (deltas, response) = assemble(&chunks);
        let response = response.expect("assembles");
        assert_eq!(deltas, [StreamDelta::Text("Hi".into())]);
        assert_eq!(
            (response.usage.input_tokens, response.usage.output_tokens),
            (9, 1)
        );
        assert_eq!(response.finish_reason, FinishReason::Stop);
        assert_eq!(response.message.text(), "Hi");
    }

    #[test]
    fn done_ends_the_stream() {
        let (_, after) = assemble(&["[DONE]", r#"{"choices":[]}"#]);
        let error = after.expect_err("data after [DONE]");
        assert_eq!(error.path, "chunks[1]");
        assert_eq!(
            error.kind,
            WireErrorKind::UnexpectedEvent {
                event: "chunk".into()
            }
        );

        // `[DONE]` alone: no choice, as an unstreamed body with none.
        let (_, empty) = assemble(&["[DONE]"]);
        assert_eq!(
            empty.map_err(|error| error.kind),
            Err(WireErrorKind::NoChoices)
        );

        // A finish reason without `[DONE]` is an end too; neither is not.
        let (_, ended) = assemble(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        ]);
        assert!(ended.is_ok());
        let (_, cut) = assemble(&[r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#]);
        assert_eq!(
            cut.map_err(|error| error.kind),
            Err(WireErrorKind::Incomplete)
        );

        // Blank payloads are keep-alives.
        let (_, blank) = assemble(&[
            "",
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            " ",
            "[DONE]",
        ]);
        assert_eq!(
            blank.map(|response| response.message.text()),
            Ok("Hi".into())
        );
    }

    /// (id, name, arguments) of each assembled call.
    fn calls_of(chunks: &[&str]) -> Vec<(String, String, String)> {
        let (_, response) = assemble(chunks);
        response
            .expect("the stream assembles")
            .message
            .tool_calls()
            .map(|call| (call.id.clone(), call.name.clone(), call.arguments.clone()))
            .collect()
    }

    fn call_piece(index: u64, id: Option<&str>, name: Option<&str>, arguments: &str) -> String {
        let mut call = json!({ "index": index, "function": { "arguments": arguments } });
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        json!({ "choices": [{ "index": 0, "delta": { "tool_calls": [call] } }] }).to_string()
    }

    const FINISH: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#;

    fn owned(calls: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
        calls
            .iter()
            .map(|(id, name, arguments)| (id.to_string(), name.to_string(), arguments.to_string()))
            .collect()
    }

    /// Ollama's `/v1` sends each call whole, every one at `index: 0`, with
    /// its own id: they stay two calls (they merged into one, `{..}{..}`).
    #[test]
    fn whole_calls_at_one_index_with_their_own_ids_stay_apart() {
        let first = call_piece(0, Some("call_a"), Some("get_weather"), r#"{"city":"Oslo"}"#);
        let second = call_piece(0, Some("call_b"), Some("get_time"), r#"{"zone":"CET"}"#);
        let (deltas, _) = assemble(&[first.as_str(), second.as_str(), FINISH, "[DONE]"]);
        assert_eq!(
            deltas,
            [
                StreamDelta::ToolCallStarted {
                    index: 0,
                    id: "call_a".into(),
                    name: "get_weather".into()
                },
                StreamDelta::ToolCallStarted {
                    index: 1,
                    id: "call_b".into(),
                    name: "get_time".into()
                },
            ]
        );
        assert_eq!(
            calls_of(&[&first, &second, FINISH, "[DONE]"]),
            owned(&[
                ("call_a", "get_weather", r#"{"city":"Oslo"}"#),
                ("call_b", "get_time", r#"{"zone":"CET"}"#),
            ])
        );
        // Without ids, a name with arguments after a whole call is another
        // call too.
        let first = call_piece(0, None, Some("get_weather"), r#"{"city":"Oslo"}"#);
        let second = call_piece(0, None, Some("get_weather"), r#"{"city":"Rome"}"#);
        assert_eq!(
            calls_of(&[&first, &second, FINISH]),
            owned(&[
                ("", "get_weather", r#"{"city":"Oslo"}"#),
                ("", "get_weather", r#"{"city":"Rome"}"#),
            ])
        );
    }

    /// SGLang sends a call's arguments at the next index, with neither id
    /// nor name: they belong to the call before (it ran with `{}`, and a
    /// nameless call appeared).
    #[test]
    fn arguments_at_a_new_index_without_id_or_name_continue_the_last_call() {
        let head = call_piece(0, Some("call_1"), Some("get_weather"), "");
        let body = call_piece(1, None, None, r#"{"city":"#);
        let tail = call_piece(1, None, None, r#""Oslo"}"#);
        assert_eq!(
            calls_of(&[&head, &body, &tail, FINISH, "[DONE]"]),
            owned(&[("call_1", "get_weather", r#"{"city":"Oslo"}"#)])
        );
    }

    /// DeepSeek-style servers resend the whole arguments so far in every
    /// piece (appended, they never parsed); a last piece repeating the
    /// whole text is a repeat.
    #[test]
    fn arguments_resent_whole_in_every_piece_are_the_last_piece() {
        let mut chunks = vec![call_piece(0, Some("call_1"), Some("get_weather"), "")];
        for so_far in [
            r#"{""#,
            r#"{"city": "#,
            r#"{"city": "Oslo"}"#,
            r#"{"city": "Oslo"}"#,
        ] {
            chunks.push(call_piece(0, None, None, so_far));
        }
        chunks.push(FINISH.to_owned());
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        assert_eq!(
            calls_of(&chunks),
            owned(&[("call_1", "get_weather", r#"{"city": "Oslo"}"#)])
        );
    }

    /// What worked before still does: pieces of two calls interleaved,
    /// routed by their index, a repeated name on a call being written.
    #[test]
    fn interleaved_pieces_of_two_calls_are_routed_by_index() {
        let chunks = [
            call_piece(0, Some("call_a"), Some("f"), ""),
            call_piece(1, Some("call_b"), Some("g"), ""),
            call_piece(0, None, None, r#"{"x":"#),
            call_piece(1, None, None, r#"{"y":"#),
            call_piece(0, None, Some("f"), "1}"),
            call_piece(1, None, None, "2}"),
            FINISH.to_owned(),
        ];
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        assert_eq!(
            calls_of(&chunks),
            owned(&[("call_a", "f", r#"{"x":1}"#), ("call_b", "g", r#"{"y":2}"#)])
        );
    }

    #[test]
    fn malformed_payloads_and_indexes_are_typed_errors() {
        let (_, not_json) = assemble(&[r#"{"choices":[]}"#, "{\"choices\": [", "[DONE]"]);
        let error = not_json.expect_err("not JSON");
        assert_eq!(error.path, "chunks[1]");
        assert!(
            matches!(error.kind, WireErrorKind::NotJson { .. }),
            "{error}"
        );

        let skip = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"b","type":"function","function":{"name":"g","arguments":""}}]}}]}"#,
        ];
        let error = assemble(&skip).1.expect_err("index 2 after 0");
        assert_eq!(error.path, "chunks[1].choices[0].delta.tool_calls[0].index");
        assert_eq!(
            error.kind,
            WireErrorKind::UnexpectedIndex { index: 2, next: 1 }
        );

        let first = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
        ];
        let error = assemble(&first).1.expect_err("index 1 first");
        assert_eq!(
            error.kind,
            WireErrorKind::UnexpectedIndex { index: 1, next: 0 }
        );

        let wrong = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":7}}]}}]}"#,
        ];
        let error = assemble(&wrong).1.expect_err("a number as name");
        assert!(
            error
                .path
                .starts_with("chunks[0].choices[0].delta.tool_calls"),
            "{}",
            error.path
        );
        assert!(
            matches!(error.kind, WireErrorKind::WrongType { .. }),
            "{error}"
        );

        let content = [r#"{"choices":[{"index":0,"delta":{"content":{"a":1}}}]}"#];
        let error = assemble(&content).1.expect_err("content an object");
        assert_eq!(error.path, "chunks[0].choices[0].delta.content");

        let array = ["[1, 2]"];
        assert!(assemble(&array).1.is_err());
    }

    #[test]
    fn an_error_chunk_is_a_provider_error_and_sticks() {
        let mut stream = ChunkAssembler::new();
        assert!(
            stream
                .push(r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#)
                .is_ok()
        );
        let error = stream
            .push(r#"{"error":{"object":"error","message":"CUDA out of memory","type":"InternalServerError","param":null,"code":500}}"#)
            .expect_err("an error chunk");
        assert_eq!(error.path, "chunks[1].error");
        assert_eq!(
            error.kind,
            WireErrorKind::Provider {
                error_type: "InternalServerError".into(),
                message: "CUDA out of memory".into()
            }
        );
        assert_eq!(stream.push("[DONE]"), Err(error.clone()));
        assert_eq!(stream.finish(), Err(error));
    }

    #[test]
    fn an_error_event_is_a_provider_error_whatever_its_data_and_done_does_not_end_it() {
        let text = r#"{"choices":[{"index":0,"delta":{"content":"The answer is 4"}}]}"#;
        for (data, error_type, message) in [
            (
                r#"{"message":"upstream connection reset","type":"server_error"}"#,
                "server_error",
                "upstream connection reset",
            ),
            (
                r#"{"error":{"message":"CUDA out of memory","code":500}}"#,
                "500",
                "CUDA out of memory",
            ),
            ("upstream timed out", "error", "upstream timed out"),
            ("", "error", "the server sent an error event without data"),
        ] {
            let mut stream = ChunkAssembler::new();
            assert!(stream.push(text).is_ok());
            let error = stream.push_event("error", data).expect_err(data);
            assert_eq!(error.path, "chunks[1]");
            assert_eq!(
                error.kind,
                WireErrorKind::Provider {
                    error_type: error_type.into(),
                    message: message.into()
                },
                "{data}"
            );
            assert_eq!(stream.push("[DONE]"), Err(error.clone()));
            assert_eq!(stream.finish(), Err(error));
        }
        // Other event names are plain payloads; `[DONE]` alone still ends.
        let mut stream = ChunkAssembler::new();
        assert!(stream.push_event("message", text).is_ok());
        assert!(stream.push_event("message", "[DONE]").is_ok());
        assert_eq!(
            stream.finish().map(|response| response.message.text()),
            Ok("The answer is 4".into())
        );
    }

    /// Found by the `stream` fuzz target: a call of another `type` was
    /// announced as started, and the response never held it as a call.
    #[test]
    fn a_call_of_another_type_does_not_start() {
        let chunks = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"f*unction","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ];
        let (deltas, response) = assemble(&chunks);
        let response = response.expect("assembles");
        assert_eq!(
            deltas,
            [StreamDelta::ToolCallStarted {
                index: 0,
                id: "a".into(),
                name: "f".into()
            }]
        );
        let names: Vec<&str> = response
            .message
            .tool_calls()
            .map(|call| call.name.as_str())
            .collect();
        assert_eq!(names, ["f"]);
    }

    #[test]
    fn late_ids_repeated_names_missing_indexes_and_object_arguments_are_tolerated() {
        let chunks = [
            // The name first, the id late; the name repeated; object arguments.
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"type":"function","function":{"name":"get_weather"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_late","function":{"name":"get_weather","arguments":"{\"city\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_other","function":{"name":"get_weather","arguments":"\"Oslo\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"add","arguments":{"a":1}}}]}}]}"#,
            // Interleaved: back to call 0 (nothing to add).
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ];
        let (deltas, response) = assemble(&chunks);
        let calls: Vec<_> = response
            .expect("assembles")
            .message
            .tool_calls()
            .cloned()
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("call_late", "get_weather")
        );
        assert_eq!(calls[0].arguments, r#"{"city":"Oslo"}"#);
        assert_eq!(calls[1].arguments, r#"{"a":1}"#);
        // Started once each, when the name came, with the id known then.
        assert_eq!(
            deltas,
            [
                StreamDelta::ToolCallStarted {
                    index: 0,
                    id: String::new(),
                    name: "get_weather".into()
                },
                StreamDelta::ToolCallStarted {
                    index: 1,
                    id: "call_2".into(),
                    name: "add".into()
                },
            ]
        );

        // Gemini-style: whole calls without `index`, `""` ids.
        let gemini = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},"extra_content":{"google":{"thought_signature":"c2ln"}}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Bergen\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ];
        let calls: Vec<_> = assemble(&gemini)
            .1
            .expect("assembles")
            .message
            .tool_calls()
            .cloned()
            .collect();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, r#"{"city":"Bergen"}"#);
        assert!(calls[0].extras.fields().contains_key("extra_content"));

        // A name in pieces.
        let split_name = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"get_","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"weather","arguments":"{}"}}]}}]}"#,
            "[DONE]",
        ];
        let calls: Vec<_> = assemble(&split_name)
            .1
            .expect("assembles")
            .message
            .tool_calls()
            .cloned()
            .collect();
        assert_eq!(calls[0].name, "get_weather");
    }

    #[test]
    fn other_choices_are_skipped_and_content_parts_are_joined() {
        let chunks = [
            r#"{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"A"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"B"},{"type":"thinking","thinking":[{"type":"text","text":"hm"}]}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"C"}}]}"#,
            "[DONE]",
        ];
        let (deltas, response) = assemble(&chunks);
        let expected = openai::parse_response(&json!({ "choices": [{ "index": 0, "message": {
            "role": "assistant",
            "content": [
                { "type": "text", "text": "AB" },
                { "type": "thinking", "thinking": [{ "type": "text", "text": "hm" }] },
                { "type": "text", "text": "C" }
            ]
        } }] }));
        assert_eq!(response, expected);
        assert_eq!(
            deltas,
            [
                StreamDelta::Text("A".into()),
                StreamDelta::Text("B".into()),
                StreamDelta::Text("C".into())
            ]
        );
    }
}
