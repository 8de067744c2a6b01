//! The recorded streams of `tests/fixtures/wire-real/openai-stream/`,
//! `anthropic-stream/` and the `.sse` files of `openai-responses/` and
//! `gemini/` (with the feature `gemini`), data driven (adding a recording
//! is adding a file), through the real transport: each body is served byte
//! for byte by a loopback server to the HTTP model of its format
//! (`OpenAiModel`, `AnthropicModel`, `OpenAiResponsesModel`, `GeminiModel`,
//! streaming on, no retries), as recorded and held open without its end
//! markers (`data: [DONE]`, `message_stop`), which some servers and proxies
//! never send.
//!
//! Each file is held to rules of `wire_real` (a function of
//! `wire_real_rules`, or of this module, returning violations;
//! `wire_real_mutations` breaks them):
//!
//! - `<name>.sse`, **stream carries** ([`served_as_carried`]): what the
//!   model returns is what the stream carries, read independently of the
//!   crate's stream assemblers: a fold over the recorded events (the
//!   providers' documented accumulation: OpenAI's `delta.content`
//!   concatenated, tool call pieces routed by `index` and `id`, `[DONE]` or
//!   not; Anthropic's content blocks by `index`, deltas of types it does
//!   not know skipped, as its streaming docs ask, `message_delta`'s stop
//!   reason and usage; the Responses API's last `response.completed` or
//!   `response.incomplete`, which carries the whole response, or the
//!   stream's items when that has no output, events named by their
//!   payload's `type` when the SSE event has none; Gemini's chunks, their
//!   parts in order with the text of one part split across chunks joined,
//!   the last `finishReason` and `usageMetadata`) builds the equivalent
//!   unstreamed body, whose parse gives the text, tool calls, finish
//!   reason, usage and parts the streamed answer must have; the text
//!   deltas the turn's events received are that text. A recording holding
//!   the provider's error (an `event: error`, an Anthropic `error` event,
//!   a chunk with a top-level `error`, `response.failed`) gives instead a
//!   typed [`Stream`](ModelErrorKind::Stream) error with the provider's
//!   message (and type, when it sent one); one cut before the events that
//!   make it whole (each stream module's `finish` docs), an error.
//! - `<name>.response.json` beside the streams: an error body the server
//!   answered a streamed request with (Anthropic's `{"type": "error"}`),
//!   served with the HTTP status Anthropic documents for its error type;
//!   the model returns that status, type and message.
//! - `<name>.request.json`, **provider rules**
//!   ([`request_body_violations`]): the request is the recording's (its
//!   conversation and function tools), and the body our model sends for it
//!   keeps the providers' rules of `wire_rules`, says `stream: true`, and
//!   offers the recorded function tools in order.
//!
//! Sources and licenses: `tests/fixtures/wire-real/SOURCES.md`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::model::{AnthropicModel, HttpModel, OpenAiModel, OpenAiResponsesModel, Provider};
use agent_loop::tool::ToolInfo;
use agent_loop::turn::{Model, ModelError, ModelErrorKind, ModelRequest, TurnEvent, TurnEvents};
use agent_loop::wire::ToolDeclaration;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::arbitrary_json::sse_events;
use crate::properties::wire::Format;
use crate::wire_real_rules::{Rule, Violation, assert_holds, differences, violation};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wire-real");

/// The files of `folder` ending in `suffix`, sorted.
fn files(folder: &str, suffix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(Path::new(FIXTURES).join(folder))
        .unwrap_or_else(|error| panic!("{FIXTURES}/{folder}: {error}"))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    found.sort();
    found
}

/// `deepseek_reasoner_stream` of `.../deepseek_reasoner_stream.sse`.
fn name_of(path: &Path, suffix: &str) -> String {
    let file = path.file_name().unwrap_or_default().to_string_lossy();
    file.strip_suffix(suffix).unwrap_or(&file).to_owned()
}

// ------------------------------------------------------------- the server

/// What the loopback server answers every request with.
#[derive(Clone)]
struct Answer {
    status: u16,
    content_type: &'static str,
    body: Arc<Vec<u8>>,
    /// The body is chunked and never ends: after it, a keep-alive
    /// comment every 50 ms, for good (a proxy holding a finished
    /// stream open).
    held_open: bool,
}

/// A raw TCP server on a loopback port: it reads each request whole
/// (head and `content-length` body), keeps its body, and answers with
/// `answer`'s bytes exactly, written in pieces of 61 bytes (so events and
/// characters are split across reads, as a real network splits them),
/// then closes the connection.
struct Server {
    base: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(answer: Answer) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("bound").port();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&bodies);
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let answer = answer.clone();
            let kept = Arc::clone(&kept);
            tokio::spawn(async move {
                let Some(body) = read_request(&mut socket).await else {
                    return;
                };
                kept.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                let length = if answer.held_open {
                    "transfer-encoding: chunked".to_owned()
                } else {
                    format!("content-length: {}\r\nconnection: close", answer.body.len())
                };
                let head = format!(
                    "HTTP/1.1 {} X\r\ncontent-type: {}\r\n{length}\r\n\r\n",
                    answer.status, answer.content_type,
                );
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let frame = |piece: &[u8]| {
                    if !answer.held_open {
                        return piece.to_vec();
                    }
                    let mut frame = format!("{:x}\r\n", piece.len()).into_bytes();
                    frame.extend_from_slice(piece);
                    frame.extend_from_slice(b"\r\n");
                    frame
                };
                for piece in answer.body.chunks(61) {
                    if socket.write_all(&frame(piece)).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                    tokio::task::yield_now().await;
                }
                if answer.held_open {
                    loop {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        if socket.write_all(&frame(b": keep-alive\n\n")).await.is_err() {
                            return;
                        }
                    }
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    Server {
        base: format!("http://127.0.0.1:{port}"),
        bodies,
        task,
    }
}

/// The body of one HTTP/1.1 request (by its `content-length`).
async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Vec<u8>> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let read = socket.read(&mut piece).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&piece[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        let read = socket.read(&mut piece).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&piece[..read]);
    }
    Some(buffer[head_end..head_end + length].to_vec())
}

// ------------------------------------------------- the recording's events

/// What a recording carries, read from its events.
#[derive(Clone, Debug)]
pub(crate) enum Carried {
    /// The equivalent unstreamed body.
    Response(Value),
    /// The provider's error: its message and type (when it sent one).
    Error {
        message: String,
        error_type: Option<String>,
    },
    /// Neither: the stream was cut before the events that make it whole
    /// (Chat Completions: `[DONE]` or a `finish_reason`; Messages:
    /// `message_start`, and `message_stop` or a `stop_reason`; Responses:
    /// its last whole response), so an answer built from it would look
    /// whole.
    Cut,
}

/// The provider's error of `value` (`{"error": {...}}`, `{"error": "..."}`
/// or `{"type": "error", "error": {...}}`).
fn provider_error(value: &Value) -> Carried {
    let error = &value["error"];
    let message = error["message"]
        .as_str()
        .or(error.as_str())
        .unwrap_or_default()
        .to_owned();
    let error_type = error["type"].as_str().map(str::to_owned);
    Carried::Error {
        message,
        error_type,
    }
}

/// OpenAI Chat Completions: the chunks folded into one `chat.completion`
/// body. Text is `delta.content` concatenated; `delta.reasoning_content`
/// likewise; a tool call piece belongs to the call at its `index`, unless
/// it carries an `id` other than that call's (a new call: servers that
/// label every call `index: 0`); a piece with neither a call at its index
/// nor a name continues the last call. The last `finish_reason` and the
/// last `usage` object win. A chunk with a top-level `error`, or an event
/// named `error`, is the provider's error.
fn fold_openai(events: &[(String, String)]) -> Carried {
    let mut text: Option<String> = None;
    let mut reasoning: Option<String> = None;
    // (index, call object)
    let mut calls: Vec<(u64, Map<String, Value>)> = Vec::new();
    let mut finish_reason = Value::Null;
    let mut usage = Value::Null;
    let mut done = false;
    for (event, data) in events {
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Value = serde_json::from_str(data)
            .unwrap_or_else(|error| panic!("a recorded chunk is not JSON: {error}: {data}"));
        if event == "error" || chunk.get("error").is_some_and(|e| !e.is_null()) {
            return provider_error(&chunk);
        }
        if chunk["usage"].is_object() {
            usage = chunk["usage"].clone();
        }
        let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) else {
            continue;
        };
        if !choice["finish_reason"].is_null() {
            finish_reason = choice["finish_reason"].clone();
        }
        let delta = &choice["delta"];
        if let Some(piece) = delta["content"].as_str() {
            text.get_or_insert_default().push_str(piece);
        }
        if let Some(piece) = delta["reasoning_content"].as_str() {
            reasoning.get_or_insert_default().push_str(piece);
        }
        for piece in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = piece["index"].as_u64().unwrap_or(0);
            let id = piece["id"].as_str().filter(|id| !id.is_empty());
            let name = piece["function"]["name"].as_str();
            let at = calls.iter().rposition(|(i, _)| *i == index);
            let target = match at {
                Some(at) if id.is_none_or(|id| calls[at].1["id"] == id) => at,
                None if id.is_none() && name.is_none() && !calls.is_empty() => calls.len() - 1,
                _ => {
                    calls.push((
                        index,
                        json!({ "id": "", "type": "function",
                                "function": { "name": "", "arguments": "" } })
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                    ));
                    calls.len() - 1
                }
            };
            let call = &mut calls[target].1;
            if let Some(id) = id {
                call.insert("id".into(), json!(id));
            }
            let function = call
                .get_mut("function")
                .and_then(Value::as_object_mut)
                .expect("a function object");
            if let Some(name) = name {
                let known = function["name"].as_str().unwrap_or_default().to_owned();
                function.insert("name".into(), json!(known + name));
            }
            if let Some(arguments) = piece["function"]["arguments"].as_str() {
                let known = function["arguments"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                function.insert("arguments".into(), json!(known + arguments));
            }
        }
    }
    if !done && finish_reason.is_null() {
        return Carried::Cut;
    }
    let mut message = json!({ "role": "assistant", "content": text });
    if let Some(reasoning) = reasoning {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(
            calls
                .into_iter()
                .map(|(_, call)| Value::Object(call))
                .collect(),
        );
    }
    let mut body = json!({
        "object": "chat.completion",
        "choices": [{ "index": 0, "message": message, "finish_reason": finish_reason }],
    });
    if !usage.is_null() {
        body["usage"] = usage;
    }
    Carried::Response(body)
}

/// Anthropic Messages: the events folded into one `message` body, as the
/// Messages streaming documentation accumulates them: `message_start`'s
/// message, each `content_block_start` block at its `index`, its deltas
/// (`text_delta` text, `input_json_delta` partial JSON parsed at the
/// block's stop, `""` as `{}`, `thinking_delta`, `signature_delta`,
/// `citations_delta` appended to `citations`; a delta of another type
/// skipped, as the streaming docs ask), `message_delta`'s
/// `stop_reason` and usage counts (a count of 0 does not replace a
/// reported one: SGLang sends `input_tokens: 0` there). An `error` event is
/// the provider's error.
fn fold_anthropic(events: &[(String, String)]) -> Carried {
    let mut message = Value::Null;
    let mut stopped = false;
    let mut blocks: Vec<(u64, Value, String)> = Vec::new();
    for (event, data) in events {
        let value: Value = serde_json::from_str(data)
            .unwrap_or_else(|error| panic!("a recorded event is not JSON: {error}: {data}"));
        let kind = value["type"].as_str().unwrap_or(event);
        let index = value["index"].as_u64().unwrap_or(0);
        let block = blocks.iter_mut().find(|(i, _, _)| *i == index);
        match kind {
            "error" => return provider_error(&value),
            "message_start" => message = value["message"].clone(),
            "content_block_start" => {
                blocks.push((index, value["content_block"].clone(), String::new()));
            }
            "content_block_delta" => {
                let (_, block, json) = block.expect("a delta of a started block");
                let delta = &value["delta"];
                let append = |block: &mut Value, field: &str, piece: &Value| {
                    let known = block[field].as_str().unwrap_or_default().to_owned();
                    block[field] = json!(known + piece.as_str().unwrap_or_default());
                };
                match delta["type"].as_str() {
                    Some("text_delta") => append(block, "text", &delta["text"]),
                    Some("thinking_delta") => append(block, "thinking", &delta["thinking"]),
                    Some("signature_delta") => append(block, "signature", &delta["signature"]),
                    Some("input_json_delta") => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                    }
                    Some("citations_delta") => {
                        let citations = block
                            .as_object_mut()
                            .expect("a block object")
                            .entry("citations")
                            .or_insert_with(|| json!([]));
                        if !citations.is_array() {
                            *citations = json!([]);
                        }
                        citations
                            .as_array_mut()
                            .expect("an array")
                            .push(delta["citation"].clone());
                    }
                    // Anthropic may add delta types, and asks clients to
                    // ignore those they do not know (the streaming docs).
                    _ => {}
                }
            }
            "content_block_stop" => {
                let (_, block, json) = block.expect("a stop of a started block");
                if block.get("input").is_some() {
                    block["input"] = if json.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(json).expect("the input's JSON")
                    };
                }
            }
            "message_delta" => {
                if let Some(reason) = value["delta"].get("stop_reason") {
                    message["stop_reason"] = reason.clone();
                }
                for (field, count) in value["usage"].as_object().into_iter().flatten() {
                    let reported = message["usage"][field].as_u64().unwrap_or(0);
                    if count.as_u64().unwrap_or(0) > 0 || reported == 0 {
                        message["usage"][field] = count.clone();
                    }
                }
            }
            "message_stop" => stopped = true,
            _ => {} // ping, events of other names
        }
    }
    let stop_reason = !message["stop_reason"].is_null();
    if message.is_null() || !(stopped || stop_reason) {
        return Carried::Cut;
    }
    message["content"] = Value::Array(blocks.into_iter().map(|(_, block, _)| block).collect());
    Carried::Response(message)
}

// ---------------------------------------------------------------- the run

/// The recorded request's conversation and function tools, or one user
/// message and no tools.
fn recorded_request(format: Format, dir: &Path, name: &str) -> (Vec<Message>, Vec<ToolInfo>) {
    let path = dir.join(format!("{name}.request.json"));
    if !path.exists() {
        return (vec![Message::user("Go on.")], Vec::new());
    }
    let body: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("readable"))
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let parsed = format
        .parse_request(&body)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let tools = parsed
        .tools
        .iter()
        .filter_map(ToolDeclaration::as_function)
        .cloned()
        .collect();
    (parsed.conversation, tools)
}

/// The Responses API: what the stream carries, read as
/// [`wire_real::responses_carried`](crate::wire_real::responses_carried)
/// reads it (the response its last `response.completed` or
/// `response.incomplete` event carries whole, or the stream's items when
/// that has no `output`; an event named by its payload's `type` when the
/// SSE event has no name; `[DONE]` or not), or the provider's error of an
/// `error` or `response.failed` event.
fn fold_responses(events: &[(String, String)]) -> Carried {
    for (event, data) in events {
        let value: Value = serde_json::from_str(data).unwrap_or(Value::Null);
        let name = match event.trim() {
            "" | "message" => value["type"].as_str().unwrap_or_default(),
            named => named,
        };
        if name == "error" {
            return provider_error(&value);
        }
        if name == "response.failed" {
            return provider_error(&value["response"]);
        }
    }
    match crate::wire_real::responses_carried(events) {
        Ok(response) => Carried::Response(response),
        Err(_) => Carried::Cut,
    }
}

/// Gemini: the chunks (each a `GenerateContentResponse`) folded into one.
/// Parts keep their order; a text part that continues the one before it
/// (both text, the same `thought` flag, the earlier one not yet signed)
/// is joined to it, its `thoughtSignature` going with the joined part;
/// the last `finishReason`, `usageMetadata`, `modelVersion` and
/// `responseId` win. A chunk with a top-level `error` is the provider's
/// error.
fn fold_gemini(events: &[(String, String)]) -> Carried {
    let mut parts: Vec<Value> = Vec::new();
    let mut last = Map::new();
    let mut finish = None;
    for (_, data) in events {
        let chunk: Value = serde_json::from_str(data).unwrap_or(Value::Null);
        if chunk.get("error").is_some() {
            return provider_error(&chunk);
        }
        for key in ["usageMetadata", "modelVersion", "responseId"] {
            if let Some(value) = chunk.get(key) {
                last.insert(key.to_owned(), value.clone());
            }
        }
        let candidate = &chunk["candidates"][0];
        if let Some(reason) = candidate.get("finishReason") {
            finish = Some(reason.clone());
        }
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let continues = parts.last().is_some_and(|previous| {
                previous.get("text").is_some()
                    && part.get("text").is_some()
                    && previous.get("thought") == part.get("thought")
                    && previous.get("thoughtSignature").is_none()
            });
            match parts.last_mut() {
                Some(previous) if continues => {
                    let joined = format!(
                        "{}{}",
                        previous["text"].as_str().unwrap_or_default(),
                        part["text"].as_str().unwrap_or_default()
                    );
                    previous["text"] = Value::String(joined);
                    if let Some(signature) = part.get("thoughtSignature") {
                        previous["thoughtSignature"] = signature.clone();
                    }
                }
                _ => parts.push(part.clone()),
            }
        }
    }
    let mut candidate = json!({ "content": { "role": "model", "parts": parts }, "index": 0 });
    if let Some(reason) = finish {
        candidate["finishReason"] = reason;
    }
    let mut body = last;
    body.insert("candidates".into(), json!([candidate]));
    Carried::Response(Value::Object(body))
}

/// `events` written back as an SSE body, without the events that only
/// mark its end (`data: [DONE]`, `message_stop`).
fn without_end_markers(events: &[(String, String)]) -> Vec<u8> {
    let mut body = String::new();
    for (name, data) in events {
        if data == "[DONE]" || name == "message_stop" {
            continue;
        }
        if !name.is_empty() {
            body.push_str(&format!("event: {name}\n"));
        }
        for line in data.split('\n') {
            body.push_str(&format!("data: {line}\n"));
        }
        body.push('\n');
    }
    body.into_bytes()
}

/// The model of `format` on `base`, streaming, one attempt, `timeout`
/// between bytes.
fn model(format: Format, base: &str, timeout: Duration) -> Box<dyn Model> {
    /// Any provider's model as every recording is served to it.
    fn streaming<P: Provider>(model: HttpModel<P>, timeout: Duration) -> Box<dyn Model> {
        Box::new(
            model
                .api_key("sk-test")
                .stream(true)
                .max_retries(0)
                .timeout(timeout),
        )
    }
    match format {
        Format::OpenAi => streaming(
            OpenAiModel::new("m").base_url(format!("{base}/v1")),
            timeout,
        ),
        Format::Anthropic => streaming(AnthropicModel::new("claude").base_url(base), timeout),
        Format::Responses => streaming(
            OpenAiResponsesModel::new("m").base_url(format!("{base}/v1")),
            timeout,
        ),
        #[cfg(feature = "gemini")]
        Format::Gemini => streaming(
            agent_loop::model::GeminiModel::new("m").base_url(base),
            timeout,
        ),
        // Without the feature, Gemini has no model to serve to.
        #[cfg(not(feature = "gemini"))]
        other => panic!("no model for {other:?} without its feature"),
    }
}

/// What the model returned for a recording, with the text deltas its
/// events received and the request body the server got.
pub(crate) struct Run {
    pub result: Result<ModelResponse, ModelError>,
    pub text_deltas: String,
    pub body: Value,
    /// The provider the model records as the origin of what it returns:
    /// the loopback server's `host:port`.
    pub provider: String,
}

async fn run(format: Format, dir: &Path, name: &str, answer: Answer) -> Run {
    let answer_held_open = answer.held_open;
    let server = serve(answer).await;
    let (conversation, tools) = recorded_request(format, dir, name);
    // Held open, the keep-alives come every 50 ms: a short timeout between
    // bytes makes the grace after a whole answer short too.
    let timeout = if answer_held_open {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(10)
    };
    let model = model(format, &server.base, timeout);
    let (events, mut receiver) = TurnEvents::channel();
    let result = model
        .respond(
            ModelRequest::new(&conversation)
                .tools(&tools[..])
                .events(&events),
        )
        .await;
    drop(events);
    let mut text_deltas = String::new();
    while let Ok(event) = receiver.try_recv() {
        if let TurnEvent::TextDelta { text } = event {
            text_deltas.push_str(&text);
        }
    }
    let bodies = server.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1, "{name}: one request, no retry");
    let body = bodies.into_iter().next().unwrap_or(Value::Null);
    Run {
        result,
        text_deltas,
        body,
        provider: server
            .base
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned(),
    }
}

/// The rules of the body our model sent for a recorded request
/// (`<name>.request.json`): the providers' rules of `wire_rules`, `stream:
/// true` (Gemini streams by its URL, `:streamGenerateContent`, not a
/// field), and the recorded function tools offered, in order.
pub(crate) fn request_body_violations(
    format: Format,
    dir: &Path,
    name: &str,
    body: &Value,
) -> Vec<Violation> {
    if !dir.join(format!("{name}.request.json")).exists() {
        return Vec::new();
    }
    let violations = match format {
        Format::OpenAi => crate::wire_rules::openai_violations(&body["messages"]),
        Format::Responses => crate::wire_rules::responses_violations(&body["input"]),
        Format::Gemini => crate::wire_rules::gemini_violations(&body["contents"]),
        Format::Anthropic => crate::wire_rules::anthropic_violations(&body["messages"]),
    };
    let mut out: Vec<Violation> = violations
        .into_iter()
        .map(|detail| violation(Rule::ProviderRules, "request", detail))
        .collect();
    if format != Format::Gemini && body["stream"] != true {
        out.push(violation(
            Rule::ProviderRules,
            "request.stream",
            format!("a streamed request says {}", body["stream"]),
        ));
    }
    let (_, tools) = recorded_request(format, dir, name);
    // Gemini declares its functions inside one `functionDeclarations`.
    let declared = |tool: &Value| -> Vec<Value> {
        match tool.get("functionDeclarations").and_then(Value::as_array) {
            Some(declarations) => declarations.clone(),
            None => vec![tool.clone()],
        }
    };
    let flat: Vec<Value> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(declared)
        .collect();
    let sent: Vec<&str> = flat
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str().or(tool["name"].as_str()))
        .collect();
    let recorded: Vec<&str> = tools.iter().map(|info| info.name.as_str()).collect();
    if sent != recorded {
        out.push(violation(
            Rule::ProviderRules,
            "request.tools",
            format!("sent {sent:?}, the recording offers {recorded:?}"),
        ));
    }
    out
}

/// **Stream carries**, served (module docs): what the model returned for
/// a recorded stream is what the stream `carried`. For an answer, the
/// folded body's parse, its origin this server and the model asked: its
/// text, calls, finish reason and usage, and every part (reasoning and its
/// signature, text with its citations, calls, provider blocks; not the
/// message's own provider fields, which a stream's unknown delta fields add
/// as the assembler reads them, which no fold can say better); and the
/// text deltas its events sent are its text. For the provider's error, a
/// [`Stream`](ModelErrorKind::Stream) error with its message (and type,
/// when it sent one). For a stream cut before its end, an error.
pub(crate) fn served_as_carried(format: Format, carried: &Carried, run: &Run) -> Vec<Violation> {
    let rule = Rule::StreamCarries;
    match carried {
        Carried::Response(body) => {
            let mut expected = match format.parse_response(body) {
                Ok(expected) => expected,
                Err(error) => {
                    return vec![violation(
                        Rule::Parses,
                        "folded",
                        format!("the folded body: {error}: {body}"),
                    )];
                }
            };
            // The model records where its answer came from: this server,
            // and the model it asked for.
            let asked = match format {
                Format::OpenAi | Format::Responses | Format::Gemini => "m",
                Format::Anthropic => "claude",
            };
            expected
                .message
                .record_origin(Some(&run.provider), Some(asked));
            let got = match &run.result {
                Ok(got) => got,
                Err(error) => {
                    return vec![violation(
                        rule,
                        "response",
                        format!("the events carry an answer, the model failed: {error}"),
                    )];
                }
            };
            let mut out = differences(rule, "response", &essentials(&expected), &essentials(got));
            out.extend(differences(
                rule,
                "response.content",
                &json!(expected.message.content),
                &json!(got.message.content),
            ));
            if run.text_deltas != expected.message.text() {
                out.push(violation(
                    rule,
                    "deltas",
                    format!(
                        "the text deltas say {:?}, the text is {:?}",
                        run.text_deltas,
                        expected.message.text()
                    ),
                ));
            }
            out
        }
        Carried::Cut => match &run.result {
            Ok(_) => vec![violation(
                rule,
                "response",
                "the stream was cut before its end, yet the model answered",
            )],
            Err(_) => Vec::new(),
        },
        Carried::Error {
            message,
            error_type,
        } => {
            let Err(error) = &run.result else {
                return vec![violation(
                    rule,
                    "error",
                    format!("the events carry the error {message:?}, the model answered"),
                )];
            };
            let mut out = Vec::new();
            if error.kind != ModelErrorKind::Stream {
                out.push(violation(
                    rule,
                    "error.kind",
                    format!("{:?}: {error}", error.kind),
                ));
            }
            if error.message.as_deref() != Some(message.as_str()) {
                out.push(violation(
                    rule,
                    "error.message",
                    format!(
                        "the provider said {message:?}, the error says {:?}",
                        error.message
                    ),
                ));
            }
            if error_type.is_some() && error.error_type != *error_type {
                out.push(violation(
                    rule,
                    "error.error_type",
                    format!(
                        "the provider said {error_type:?}, the error says {:?}",
                        error.error_type
                    ),
                ));
            }
            out
        }
    }
}

/// What a streamed answer is compared by: its text, calls, finish reason
/// and usage.
fn essentials(response: &ModelResponse) -> Value {
    json!({
        "text": response.message.text(),
        "calls": response.message.tool_calls().collect::<Vec<&ToolCall>>(),
        "finish_reason": response.finish_reason,
        "usage": response.usage,
    })
}

/// Every `.sse` of `folder` served to the model of `format`: the answer
/// the stream carries, or its error. Returns the answers by name.
async fn check_streams(
    format: Format,
    folder: &str,
) -> Vec<(String, Result<ModelResponse, ModelError>)> {
    check_streams_served(format, folder, false).await
}

/// [`check_streams`], each body `held_open` or closed after it. A body
/// held open loses its end markers (`data: [DONE]`, Anthropic's
/// `message_stop`), which some servers and proxies never send: the answer
/// must be read from the events that carry it.
async fn check_streams_served(
    format: Format,
    folder: &str,
    held_open: bool,
) -> Vec<(String, Result<ModelResponse, ModelError>)> {
    let dir = Path::new(FIXTURES).join(folder);
    let streams = files(folder, ".sse");
    assert!(!streams.is_empty(), "no streams under {folder}");
    let mut answers = Vec::new();
    for path in streams {
        let name = name_of(&path, ".sse");
        let bytes = std::fs::read(&path).expect("readable");
        let (carried, run) = served(format, &dir, &name, bytes, held_open).await;
        let mut violations = request_body_violations(format, &dir, &name, &run.body);
        violations.extend(served_as_carried(format, &carried, &run));
        assert_holds(&name, &violations);
        answers.push((name, run.result));
    }
    answers
}

/// What the stream `bytes` of the recording `name` in `dir` carries
/// (folded from its events), and what the model of `format` returned when
/// a loopback server served it, `held_open` (without its end markers,
/// then keep-alives) or closed after it.
pub(crate) async fn served(
    format: Format,
    dir: &Path,
    name: &str,
    bytes: Vec<u8>,
    held_open: bool,
) -> (Carried, Run) {
    let events = sse_events(&String::from_utf8_lossy(&bytes));
    let carried = match format {
        Format::OpenAi => fold_openai(&events),
        Format::Responses => fold_responses(&events),
        Format::Gemini => fold_gemini(&events),
        Format::Anthropic => fold_anthropic(&events),
    };
    let body = if held_open {
        without_end_markers(&events)
    } else {
        bytes
    };
    let answer = Answer {
        status: 200,
        content_type: "text/event-stream",
        body: Arc::new(body),
        held_open,
    };
    // The model's timeout is between bytes, which the keep-alives reset: a
    // stream not known to be whole would never end.
    let run = tokio::time::timeout(Duration::from_secs(20), run(format, dir, name, answer))
        .await
        .unwrap_or_else(|_| panic!("{name}: held open, the answer never came"));
    (carried, run)
}

/// The HTTP status Anthropic answers with for each error `type`
/// (docs.anthropic.com, "Errors": HTTP errors).
fn anthropic_status(error_type: &str) -> u16 {
    match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        other => panic!("an Anthropic error type without a documented status: {other}"),
    }
}

/// Every `.response.json` of `folder`: an error body answered to a
/// streamed request, served with its documented status.
async fn check_error_answers(format: Format, folder: &str) -> usize {
    let dir = Path::new(FIXTURES).join(folder);
    let mut seen = 0;
    for path in files(folder, ".response.json") {
        let name = name_of(&path, ".response.json");
        let bytes = std::fs::read(&path).expect("readable");
        let value: Value = serde_json::from_slice(&bytes).expect("a JSON body");
        let Carried::Error {
            message,
            error_type,
        } = provider_error(&value)
        else {
            unreachable!()
        };
        let error_type = error_type.expect("an error type");
        let status = anthropic_status(&error_type);
        let answer = Answer {
            status,
            content_type: "application/json",
            body: Arc::new(bytes),
            held_open: false,
        };
        let run = run(format, &dir, &name, answer).await;
        assert_holds(
            &name,
            &request_body_violations(format, &dir, &name, &run.body),
        );
        let error = run.result.expect_err("an error answer");
        assert_eq!(
            error.kind,
            ModelErrorKind::Http { status },
            "{name}: {error}"
        );
        assert_eq!(
            error.error_type.as_deref(),
            Some(error_type.as_str()),
            "{name}"
        );
        assert_eq!(error.message.as_deref(), Some(message.as_str()), "{name}");
        seen += 1;
    }
    seen
}

fn answer_of<'a>(
    answers: &'a [(String, Result<ModelResponse, ModelError>)],
    name: &str,
) -> &'a Result<ModelResponse, ModelError> {
    &answers
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no recording {name}"))
        .1
}

#[tokio::test]
async fn every_openai_stream_served_to_the_model_gives_what_it_carries() {
    use agent_loop::conversation::{FinishReason, Usage};
    let answers = check_streams(Format::OpenAi, "openai-stream").await;

    // Spot checks, read by hand from the recordings.
    let ok = |name: &str| {
        answer_of(&answers, name)
            .as_ref()
            .unwrap_or_else(|error| panic!("{name}: {error}"))
    };
    let calls = |response: &ModelResponse| -> Vec<(String, String, String)> {
        response
            .message
            .tool_calls()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect()
    };
    let usage = |input, output, reasoning| {
        let mut usage = Usage::new(input, output);
        usage.reasoning_tokens = reasoning;
        usage
    };
    let openai = ok("oai_py_parallel_usage");
    assert_eq!(
        calls(openai),
        [
            (
                "call_JMW1whyEaYG438VE1OIflxA2".to_owned(),
                "GetWeatherArgs".to_owned(),
                r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#.to_owned()
            ),
            (
                "call_DNYTawLBoN8fj3KN6qU9N1Ou".to_owned(),
                "get_stock_price".to_owned(),
                r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#.to_owned()
            ),
        ]
    );
    assert_eq!(openai.finish_reason, FinishReason::ToolCalls);
    assert_eq!(openai.usage, usage(149, 60, 0));
    // Both calls in one chunk with the finish reason and usage (Mistral),
    // and split `{` + `}` by index (llama.cpp): the same two calls.
    for name in [
        "mistral_parallel",
        "llamacpp_two_calls",
        "openrouter_parallel",
    ] {
        let names: Vec<(String, String, String)> = calls(ok(name));
        assert_eq!(
            names,
            [
                (
                    "call_REDACTED_1".into(),
                    "lookup_harbor_label".into(),
                    "{}".into()
                ),
                (
                    "call_REDACTED_2".into(),
                    "lookup_orchard_label".into(),
                    "{}".into()
                ),
            ],
            "{name}"
        );
    }
    assert_eq!(ok("mistral_parallel").usage, usage(213, 16, 0));
    let groq = ok("groq_retry_tool");
    assert_eq!(
        calls(groq),
        [(
            "fc_bfb39741-3748-4def-9886-a93fc9c64a90".to_owned(),
            "get_something_by_name".to_owned(),
            r#"{"name":"example"}"#.to_owned()
        )]
    );
    assert_eq!(groq.usage, usage(304, 49, 23));
    let deepseek = ok("deepseek_reasoner_stream");
    assert_eq!(
        deepseek.message.text(),
        "Hello there! \u{1f60a} How can I help you today?"
    );
    assert_eq!(deepseek.finish_reason, FinishReason::Stop);
    assert_eq!(deepseek.usage, usage(6, 212, 198));

    let error = |name: &str| {
        answer_of(&answers, name)
            .as_ref()
            .err()
            .unwrap_or_else(|| panic!("{name}: an answer, not its error"))
    };
    // A top-level `error` after the finish reason, then [DONE].
    let openrouter = error("openrouter_stream_error");
    assert_eq!(openrouter.kind, ModelErrorKind::Stream);
    assert_eq!(openrouter.message.as_deref(), Some("Token limit reached"));
    // `event: error` inside a 200 stream, after reasoning, no [DONE].
    let failed = error("groq_tool_use_failed");
    assert_eq!(failed.kind, ModelErrorKind::Stream);
    assert_eq!(failed.error_type.as_deref(), Some("invalid_request_error"));
    assert!(
        failed
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("Tool call validation failed")),
        "{failed}"
    );
    // The code and the quoted output come with it: the turn hands the
    // failed call back to the model.
    assert_eq!(failed.code.as_deref(), Some("tool_use_failed"));
    assert!(failed.is_failed_tool_call(), "{failed}");
    assert_eq!(
        failed.failed_generation.as_deref(),
        Some(r#"{"name": "get_something_by_name", "arguments": { "invalid_param": "value" }}"#)
    );
}

#[tokio::test]
async fn every_anthropic_stream_served_to_the_model_gives_what_it_carries() {
    use agent_loop::conversation::{ContentPart, FinishReason, Usage};
    let answers = check_streams(Format::Anthropic, "anthropic-stream").await;
    assert_eq!(
        check_error_answers(Format::Anthropic, "anthropic-stream").await,
        1,
        "ant_stream_rate_limited"
    );

    let ok = |name: &str| {
        answer_of(&answers, name)
            .as_ref()
            .unwrap_or_else(|error| panic!("{name}: {error}"))
    };
    let parallel = ok("ant_parallel_tool_use");
    let calls: Vec<(&str, &str, &str)> = parallel
        .message
        .tool_calls()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "toolu_01LtHJmixrs9NcWQkK8hu8hj",
                "pelican_name_generator",
                "{}"
            ),
            (
                "toolu_01N8a4jWyf116qKTMqKKmjyt",
                "pelican_name_generator",
                "{}"
            ),
        ]
    );
    assert_eq!(parallel.finish_reason, FinishReason::ToolCalls);
    assert_eq!(parallel.usage, Usage::new(542, 62));
    let thinking = ok("ant_thinking_tool");
    assert!(
        matches!(
            thinking.message.content.first(),
            Some(ContentPart::Reasoning(reasoning)) if reasoning.signature.is_some()
        ),
        "{:?}",
        thinking.message.content
    );
    assert_eq!(thinking.usage, Usage::new(598, 92));
    let search = ok("ant_web_search_citations");
    assert!(
        search.message.text().starts_with(
            "Based on the search results, here's the current weather in San Francisco"
        ),
        "{}",
        search.message.text()
    );
    assert_eq!(search.finish_reason, FinishReason::Stop);
    assert_eq!(search.usage, Usage::new(10423, 341));
}

#[tokio::test]
async fn every_responses_stream_served_to_the_model_gives_what_it_carries() {
    use agent_loop::conversation::FinishReason;
    let streams: Vec<_> = files("openai-responses", ".sse");
    let answers = check_streams(Format::Responses, "openai-responses").await;
    assert_eq!(answers.len(), streams.len());

    // Spot checks, read by hand from the recordings.
    let ok = |name: &str| {
        answer_of(&answers, name)
            .as_ref()
            .unwrap_or_else(|error| panic!("{name}: {error}"))
    };
    let call = ok("resp_stream_fn");
    assert_eq!(call.finish_reason, FinishReason::ToolCalls);
    assert_eq!(call.message.tool_calls().count(), 1);
    let cut = ok("resp_stream_incomplete_tool");
    assert_eq!(cut.finish_reason, FinishReason::Length);
    let quota = answer_of(&answers, "resp_stream_quota_error")
        .as_ref()
        .expect_err("the recording carries an error");
    assert!(
        quota
            .message
            .as_deref()
            .is_some_and(|message| message.starts_with("You exceeded your current quota")),
        "{quota}"
    );
}

#[cfg(feature = "gemini")]
#[tokio::test]
async fn every_gemini_stream_served_to_the_model_gives_what_it_carries() {
    use agent_loop::conversation::FinishReason;
    let streams: Vec<_> = files("gemini", ".sse");
    let answers = check_streams(Format::Gemini, "gemini").await;
    assert_eq!(answers.len(), streams.len());

    // Spot checks, read by hand from the recording: one call, signed.
    let signed = answer_of(&answers, "gem_sse_sig")
        .as_ref()
        .unwrap_or_else(|error| panic!("gem_sse_sig: {error}"));
    let calls: Vec<&str> = signed
        .message
        .tool_calls()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(calls, ["get_country"]);
    assert_eq!(signed.finish_reason, FinishReason::ToolCalls);
}

/// Every provider's recorded streams from one table, each held open after
/// its last event, its end markers dropped: each gives what it carries
/// (answer or error) as soon as its events carry it, not a timeout.
#[tokio::test]
async fn every_recorded_stream_held_open_after_its_answer_gives_what_it_carries() {
    let mut formats = vec![
        (Format::OpenAi, "openai-stream"),
        (Format::Anthropic, "anthropic-stream"),
        (Format::Responses, "openai-responses"),
    ];
    if cfg!(feature = "gemini") {
        formats.push((Format::Gemini, "gemini"));
    }
    for (format, folder) in formats {
        let answers = check_streams_served(format, folder, true).await;
        assert_eq!(answers.len(), files(folder, ".sse").len(), "{folder}");
    }
}
