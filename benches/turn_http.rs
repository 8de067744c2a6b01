//! What a whole turn over HTTP costs with agent-loop's models, against the
//! loop a user writes by hand with `reqwest` and `serde_json`, as ratios
//! measured in the same run:
//!
//! | benchmark | agent-loop | baseline |
//! | --- | --- | --- |
//! | `turn_http_openai` | a turn of two requests with `OpenAiModel` (unstreamed): 4 parallel calls, then the answer | a hand-written `reqwest` + `serde_json` loop sending the same bodies and running the same tools through a `HashMap` registry with a `jsonschema` check |
//! | `turn_http_openai_stream` | the same with `OpenAiModel::stream(true)` | the same loop reading the SSE with `eventsource-stream` (the crate the library uses) and assembling the calls by hand |
//! | `turn_http_anthropic` | the same with `AnthropicModel` | the same loop in Anthropic's Messages format |
//! | `turn_http_responses` | the same with `OpenAiResponsesModel` | the same loop in OpenAI's Responses format |
//!
//! Each row has its own loopback HTTP server (hyper, HTTP/1.1 with
//! keep-alive, `127.0.0.1` on a free port) that answers at once with a
//! recorded body: the calls to a request that holds no tool result yet,
//! the final answer to one that does. The server is stateless, and both
//! sides reach it with one client each that they keep (the model value
//! holds its `reqwest` client; the baseline holds one `reqwest::Client`),
//! so both reuse their connection alike.
//!
//! The recorded bodies come from `tests/fixtures/wire-real/` (see its
//! `SOURCES.md` for where each was recorded); each case below names its
//! recordings and says what was changed. The tools are declared as the
//! recorded request declared them (names, descriptions, schemas, `strict`)
//! and answer what the recorded follow-up request sent back as their
//! results.
//!
//! The baseline keeps the conversation as the provider's JSON messages,
//! serialises each request from borrowed parts with a small `Serialize`
//! struct, parses each answer into a `serde_json::Value`, runs each call
//! through its registry (arguments parsed, schema-checked, tool run) one
//! after the other (the tools answer at once, so running them in parallel
//! would only add a scheduler's cost), appends the calls and results as
//! the next request sends them, and asks again. Before any timing, both
//! sides run each case once and the bench checks that they sent the same
//! request bodies, got the recorded answer, and hold the 4 recorded tool
//! results.
//!
//! `cargo bench --bench turn_http` prints the medians and ratios at the
//! end, then each ratio (the median of the per-sample ratios) as a line
//! `ratio <name> <value>` for scripts; under `cargo test --all-targets`
//! the checks run and each benchmark runs once, as a smoke test, and no
//! ratio is printed. With `AGENT_LOOP_BENCH_PROFILE` set (see [`PROFILE`])
//! it runs one side of one row for a profiler instead.

use agent_loop_test::compare;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_loop::conversation::{ContentPart, Message};
use agent_loop::model::{AnthropicModel, OpenAiModel, OpenAiResponsesModel};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::Model;
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId};
use bytes::Bytes;
use compare::{Row, runtime};
use criterion::{Criterion, criterion_group};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A recorded body of `tests/fixtures/wire-real/`.
macro_rules! recording {
    ($path:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/wire-real/",
            $path
        ))
    };
}

/// The key both sides send; the server does not look at it.
const API_KEY: &str = "sk-bench";

/// Anthropic's API version header, as `AnthropicModel` sends it.
const ANTHROPIC_VERSION: &str = "2023-06-01";

// ---------------------------------------------------------------------
// The loopback server
// ---------------------------------------------------------------------

/// What a row's server answers, and what it saw while recording.
struct Canned {
    /// The answer to a request without tool results: the calls.
    calls: Bytes,
    /// The answer to a request with tool results: the final answer.
    answer: Bytes,
    content_type: &'static str,
    /// Bytes that only a request carrying tool results holds, as both
    /// sides serialise it (`serde_json`'s compact form).
    results_marker: &'static [u8],
    /// While set, every request body is kept in `seen` (the checks only).
    recording: AtomicBool,
    seen: Mutex<Vec<Bytes>>,
}

impl Canned {
    async fn answer(
        &self,
        request: hyper::Request<Incoming>,
    ) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
        let body = match request.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => Bytes::new(),
        };
        let has_results = body
            .windows(self.results_marker.len())
            .any(|window| window == self.results_marker);
        if self.recording.load(Ordering::Relaxed) {
            self.seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(body);
        }
        let answer = if has_results {
            self.answer.clone()
        } else {
            self.calls.clone()
        };
        Ok(hyper::Response::builder()
            .header(hyper::header::CONTENT_TYPE, self.content_type)
            .body(Full::new(answer))
            .expect("a response"))
    }
}

/// Starts a server answering `canned` on a free loopback port.
async fn serve(canned: Arc<Canned>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let address = listener.local_addr().expect("an address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let canned = Arc::clone(&canned);
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let canned = Arc::clone(&canned);
                    async move { canned.answer(request).await }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    address
}

// ---------------------------------------------------------------------
// The tools
// ---------------------------------------------------------------------

/// What a tool answers for its arguments: the result the recorded
/// follow-up request sent back for them.
type Answers = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// The parts of a recorded tool declaration, where its format keeps them.
struct Declared<'a> {
    name: &'a Value,
    description: &'a Value,
    parameters: &'a Value,
    strict: Option<bool>,
}

/// A tool as the recorded request declared it, answering as recorded.
#[derive(Clone)]
struct RecordedTool {
    info: ToolInfo,
    answers: Answers,
}

impl RecordedTool {
    /// The tool of a recorded declaration: its name, description,
    /// parameters and `strict`, read by `declaration` from the format's
    /// JSON.
    fn new(
        declaration: &Value,
        read: fn(&Value) -> Declared<'_>,
        answers: impl Fn(&Value) -> String + Send + Sync + 'static,
    ) -> Self {
        let Declared {
            name,
            description,
            parameters,
            strict,
        } = read(declaration);
        let mut info = ToolInfo::new(
            name.as_str().expect("a name"),
            description.as_str().unwrap_or(""),
            parameters.clone(),
        );
        info.strict = strict;
        Self {
            info,
            answers: Arc::new(answers),
        }
    }

    fn definition(&self) -> tool::Definition {
        let answers = Arc::clone(&self.answers);
        tool::Definition::from_fn(self.info.clone(), move |arguments: Value, _context| {
            let output = answers(&arguments);
            async move { Ok::<_, BoxError>(Value::String(output)) }
        })
    }
}

/// An answer table: the recorded result for the value of the argument
/// `key` (for every call when `key` is `None`).
fn by_argument(key: Option<&'static str>, table: &[(&str, &str)]) -> Answers {
    let table: HashMap<String, String> = table
        .iter()
        .map(|(argument, output)| ((*argument).to_owned(), (*output).to_owned()))
        .collect();
    Arc::new(move |arguments: &Value| {
        let argument = key
            .and_then(|key| arguments.get(key))
            .and_then(Value::as_str)
            .unwrap_or("");
        table.get(argument).cloned().unwrap_or_default()
    })
}

type Handler = Box<
    dyn Fn(Value) -> Pin<Box<dyn Future<Output = Result<Value, BoxError>> + Send>> + Send + Sync,
>;

/// What a user writes without the library: a map from name to a compiled
/// schema and a handler (as `Registry` in `overhead.rs`).
struct Registry {
    tools: HashMap<String, (jsonschema::Validator, Handler)>,
}

impl Registry {
    fn new(tools: &[RecordedTool]) -> Self {
        let tools = tools
            .iter()
            .map(|tool| {
                let validator =
                    jsonschema::validator_for(&tool.info.parameters).expect("the schema compiles");
                let answers = Arc::clone(&tool.answers);
                let handler: Handler = Box::new(move |arguments| {
                    let output = answers(&arguments);
                    Box::pin(async move { Ok(Value::String(output)) })
                });
                (tool.info.name.clone(), (validator, handler))
            })
            .collect();
        Self { tools }
    }

    /// Checks `arguments` against the tool's schema and runs it.
    async fn call(&self, name: &str, arguments: Value) -> Result<Value, BoxError> {
        let (validator, handler) = self.tools.get(name).ok_or("unknown tool")?;
        if !validator.is_valid(&arguments) {
            return Err("invalid arguments".into());
        }
        handler(arguments).await
    }

    /// The model-facing text of a call's result, and whether it failed.
    async fn result(&self, call: &Call) -> (String, bool) {
        let arguments = match &call.arguments {
            Arguments::Text(text) => serde_json::from_str(text),
            Arguments::Json(value) => Ok(value.clone()),
        };
        let output = match arguments {
            Ok(arguments) => self.call(&call.name, arguments).await,
            Err(error) => Err(error.into()),
        };
        match output {
            Ok(Value::String(text)) => (text, false),
            Ok(other) => (other.to_string(), false),
            Err(error) => (error.to_string(), true),
        }
    }
}

// ---------------------------------------------------------------------
// The hand-written loop
// ---------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Format {
    Chat,
    ChatStream,
    Anthropic,
    Responses,
}

/// A call as the model sent it.
struct Call {
    id: String,
    name: String,
    arguments: Arguments,
}

/// A call's arguments: JSON text (Chat Completions, Responses) or a JSON
/// object (Anthropic's `input`).
enum Arguments {
    Text(String),
    Json(Value),
}

/// What one answer of the model holds.
#[derive(Default)]
struct Reply {
    text: String,
    reasoning: String,
    calls: Vec<Call>,
    /// Responses: the output items to send back as they came (a stateless
    /// request sends no item ids).
    items: Vec<Value>,
}

/// A Chat Completions request, serialised from borrowed parts.
#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [Value],
    tools: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
}

/// An Anthropic Messages request.
#[derive(Serialize)]
struct AnthropicRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a str>,
    messages: &'a [Value],
    tools: &'a [Value],
}

/// A Responses request (stateless: `store: false`, the whole input).
#[derive(Serialize)]
struct ResponsesRequest<'a> {
    model: &'a str,
    input: &'a [Value],
    store: bool,
    tools: &'a [Value],
}

/// The hand-written client of one format: one `reqwest::Client`, the
/// tools' declarations built once, and the registry.
struct HandWritten {
    format: Format,
    client: reqwest::Client,
    url: String,
    model: &'static str,
    /// Anthropic's `system`, sent beside the messages.
    system: Option<String>,
    max_tokens: u32,
    declarations: Vec<Value>,
    registry: Registry,
}

/// How a turn ended: the answer, the reasoning that came with it, and
/// the conversation.
struct Finished<C> {
    answer: String,
    reasoning: String,
    conversation: Vec<C>,
}

impl HandWritten {
    /// Asks, runs the calls, appends, and asks again until the model
    /// answers without calls.
    async fn turn(&self, mut conversation: Vec<Value>) -> Finished<Value> {
        loop {
            let reply = self.ask(&conversation).await;
            if reply.calls.is_empty() {
                return Finished {
                    answer: reply.text,
                    reasoning: reply.reasoning,
                    conversation,
                };
            }
            let mut results = Vec::with_capacity(reply.calls.len());
            for call in &reply.calls {
                results.push(self.registry.result(call).await);
            }
            self.append(&mut conversation, reply, results);
        }
    }

    async fn ask(&self, conversation: &[Value]) -> Reply {
        let body = match self.format {
            Format::Chat | Format::ChatStream => {
                let stream = self.format == Format::ChatStream;
                serde_json::to_vec(&ChatRequest {
                    model: self.model,
                    messages: conversation,
                    tools: &self.declarations,
                    stream: stream.then_some(true),
                    stream_options: stream.then(|| json!({ "include_usage": true })),
                })
            }
            Format::Anthropic => serde_json::to_vec(&AnthropicRequest {
                model: self.model,
                max_tokens: self.max_tokens,
                system: self.system.as_deref(),
                messages: conversation,
                tools: &self.declarations,
            }),
            Format::Responses => serde_json::to_vec(&ResponsesRequest {
                model: self.model,
                input: conversation,
                store: false,
                tools: &self.declarations,
            }),
        }
        .expect("serialises");
        let request = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        let request = match self.format {
            Format::Anthropic => request
                .header("x-api-key", API_KEY)
                .header("anthropic-version", ANTHROPIC_VERSION),
            Format::ChatStream => request
                .bearer_auth(API_KEY)
                .header(reqwest::header::ACCEPT, "text/event-stream"),
            _ => request.bearer_auth(API_KEY),
        };
        let response = request.body(body).send().await.expect("sent");
        assert!(response.status().is_success(), "{}", response.status());
        if self.format == Format::ChatStream {
            return chat_stream(response).await;
        }
        let bytes = response.bytes().await.expect("a body");
        let answer: Value = serde_json::from_slice(&bytes).expect("JSON");
        match self.format {
            Format::Chat | Format::ChatStream => chat_reply(&answer),
            Format::Anthropic => anthropic_reply(&answer),
            Format::Responses => responses_reply(&answer),
        }
    }

    /// Appends the model's calls and their results as the next request
    /// sends them.
    fn append(&self, conversation: &mut Vec<Value>, reply: Reply, results: Vec<(String, bool)>) {
        match self.format {
            Format::Chat | Format::ChatStream => {
                let calls: Vec<Value> = reply
                    .calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": { "name": call.name, "arguments": text_of(&call.arguments) },
                        })
                    })
                    .collect();
                let content = if reply.text.is_empty() {
                    Value::Null
                } else {
                    Value::String(reply.text)
                };
                conversation
                    .push(json!({ "role": "assistant", "content": content, "tool_calls": calls }));
                for (call, (output, _)) in reply.calls.iter().zip(results) {
                    conversation.push(
                        json!({ "role": "tool", "tool_call_id": call.id, "content": output }),
                    );
                }
            }
            Format::Anthropic => {
                let mut content = Vec::with_capacity(reply.calls.len() + 1);
                if !reply.text.is_empty() {
                    content.push(json!({ "type": "text", "text": reply.text }));
                }
                for call in &reply.calls {
                    let input = match &call.arguments {
                        Arguments::Json(value) => value.clone(),
                        Arguments::Text(text) => serde_json::from_str(text).expect("JSON"),
                    };
                    content.push(json!({
                        "type": "tool_use", "id": call.id, "name": call.name, "input": input,
                    }));
                }
                conversation.push(json!({ "role": "assistant", "content": content }));
                let results: Vec<Value> = reply
                    .calls
                    .iter()
                    .zip(results)
                    .map(|(call, (output, is_error))| {
                        let mut result = json!({
                            "type": "tool_result", "tool_use_id": call.id, "content": output,
                        });
                        if is_error {
                            result["is_error"] = json!(true);
                        }
                        result
                    })
                    .collect();
                conversation.push(json!({ "role": "user", "content": results }));
            }
            Format::Responses => {
                conversation.extend(reply.items);
                for (call, (output, _)) in reply.calls.iter().zip(results) {
                    conversation.push(json!({
                        "type": "function_call_output", "call_id": call.id, "output": output,
                    }));
                }
            }
        }
    }
}

fn text_of(arguments: &Arguments) -> String {
    match arguments {
        Arguments::Text(text) => text.clone(),
        Arguments::Json(value) => value.to_string(),
    }
}

fn string(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// A Chat Completions answer: the first choice's message.
fn chat_reply(answer: &Value) -> Reply {
    let message = &answer["choices"][0]["message"];
    let calls = message["tool_calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .map(|call| Call {
                    id: string(&call["id"]),
                    name: string(&call["function"]["name"]),
                    arguments: Arguments::Text(string(&call["function"]["arguments"])),
                })
                .collect()
        })
        .unwrap_or_default();
    Reply {
        text: string(&message["content"]),
        reasoning: string(&message["reasoning_content"]),
        calls,
        items: Vec::new(),
    }
}

/// A streamed Chat Completions answer, assembled from its chunks: the
/// text and reasoning deltas appended, each call's pieces gathered by its
/// `index`.
async fn chat_stream(response: reqwest::Response) -> Reply {
    let mut events = response.bytes_stream().eventsource();
    let mut reply = Reply::default();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.expect("an event");
        if event.data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(&event.data).expect("a JSON chunk");
        let delta = &chunk["choices"][0]["delta"];
        if let Some(text) = delta["content"].as_str() {
            reply.text.push_str(text);
        }
        if let Some(text) = delta["reasoning_content"].as_str() {
            reply.reasoning.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap_or(0) as usize;
            if calls.len() <= index {
                calls.resize_with(index + 1, Default::default);
            }
            let (id, name, arguments) = &mut calls[index];
            if let Some(piece) = call["id"].as_str() {
                *id = piece.to_owned();
            }
            if let Some(piece) = call["function"]["name"].as_str() {
                name.push_str(piece);
            }
            if let Some(piece) = call["function"]["arguments"].as_str() {
                arguments.push_str(piece);
            }
        }
    }
    reply.calls = calls
        .into_iter()
        .map(|(id, name, arguments)| Call {
            id,
            name,
            arguments: Arguments::Text(arguments),
        })
        .collect();
    reply
}

/// An Anthropic answer: its text blocks and `tool_use` blocks.
fn anthropic_reply(answer: &Value) -> Reply {
    let mut reply = Reply::default();
    for block in answer["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => reply.text.push_str(block["text"].as_str().unwrap_or("")),
            Some("thinking") => reply
                .reasoning
                .push_str(block["thinking"].as_str().unwrap_or("")),
            Some("tool_use") => reply.calls.push(Call {
                id: string(&block["id"]),
                name: string(&block["name"]),
                arguments: Arguments::Json(block["input"].clone()),
            }),
            _ => {}
        }
    }
    reply
}

/// A Responses answer: its `function_call` items and the text of its
/// messages.
fn responses_reply(answer: &Value) -> Reply {
    let mut reply = Reply::default();
    for item in answer["output"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => {
                reply.calls.push(Call {
                    id: string(&item["call_id"]),
                    name: string(&item["name"]),
                    arguments: Arguments::Text(string(&item["arguments"])),
                });
                let mut item = item.clone();
                if let Some(fields) = item.as_object_mut() {
                    fields.remove("id");
                }
                reply.items.push(item);
            }
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    if part["type"] == "output_text" {
                        reply.text.push_str(part["text"].as_str().unwrap_or(""));
                    }
                }
            }
            _ => {}
        }
    }
    reply
}

// ---------------------------------------------------------------------
// The cases, from the recordings
// ---------------------------------------------------------------------

/// One row: its recorded bodies, tools and conversation.
struct Case {
    name: &'static str,
    format: Format,
    model: &'static str,
    /// The conversation before the turn, as agent-loop holds it.
    conversation: Vec<Message>,
    /// The same, as the hand-written loop holds it (provider JSON).
    wire_conversation: Vec<Value>,
    /// Anthropic's `system`, for the hand-written loop.
    system: Option<String>,
    tools: Vec<RecordedTool>,
    /// The tools as the recorded request declared them, which the
    /// hand-written loop sends as they are.
    declarations: Vec<Value>,
    /// The tool results the turn must produce, in call order.
    results: Vec<String>,
    /// The final answer's text.
    answer: String,
    canned: Arc<Canned>,
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).expect("a recorded JSON body")
}

fn canned(
    calls: String,
    answer: String,
    content_type: &'static str,
    marker: &'static str,
) -> Arc<Canned> {
    Arc::new(Canned {
        calls: Bytes::from(calls),
        answer: Bytes::from(answer),
        content_type,
        results_marker: marker.as_bytes(),
        recording: AtomicBool::new(false),
        seen: Mutex::new(Vec::new()),
    })
}

/// A Chat Completions declaration: `{type, function: {name, description,
/// parameters, strict}}`.
fn chat_declaration(declaration: &Value) -> Declared<'_> {
    let function = &declaration["function"];
    Declared {
        name: &function["name"],
        description: &function["description"],
        parameters: &function["parameters"],
        strict: function["strict"].as_bool(),
    }
}

/// An Anthropic declaration: `{name, description, input_schema}`.
fn anthropic_declaration(declaration: &Value) -> Declared<'_> {
    Declared {
        name: &declaration["name"],
        description: &declaration["description"],
        parameters: &declaration["input_schema"],
        strict: declaration["strict"].as_bool(),
    }
}

/// A Responses declaration: `{type, name, description, parameters,
/// strict}`.
fn responses_declaration(declaration: &Value) -> Declared<'_> {
    Declared {
        name: &declaration["name"],
        description: &declaration["description"],
        parameters: &declaration["parameters"],
        strict: declaration["strict"].as_bool(),
    }
}

/// The tools a recorded Chat Completions request declared, each answering
/// its one recorded result (`answers`: tool name, result).
fn chat_tools(request: &Value, answers: &[(&str, &str)]) -> Vec<RecordedTool> {
    request["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|declaration| {
            let name = declaration["function"]["name"].as_str().expect("a name");
            let (_, output) = answers
                .iter()
                .find(|(tool, _)| *tool == name)
                .expect("a recorded result");
            let output = (*output).to_owned();
            RecordedTool::new(declaration, chat_declaration, move |_| output.clone())
        })
        .collect()
}

/// The conversation of a recorded Chat Completions request: its system
/// and user messages.
fn chat_conversation(request: &Value) -> (Vec<Message>, Vec<Value>) {
    let mut conversation = Vec::new();
    let mut wire = Vec::new();
    for message in request["messages"].as_array().expect("messages") {
        let text = match &message["content"] {
            Value::String(text) => text.clone(),
            // OpenRouter's system message: one text part.
            Value::Array(parts) => string(&parts[0]["text"]),
            _ => panic!("a text message"),
        };
        match message["role"].as_str() {
            Some("system") => conversation.push(Message::system(text.clone())),
            Some("user") => conversation.push(Message::user(text.clone())),
            role => panic!("a recorded {role:?} message"),
        }
        wire.push(json!({ "role": message["role"], "content": text }));
    }
    (conversation, wire)
}

/// `turn_http_openai`: OpenAI's gpt-4o deleting and creating a file.
///
/// - calls: `openai/oai_hitl_parallel.response.json` (2 parallel calls,
///   the most of any unstreamed Chat Completions recording), its call list
///   extended to 4 by repeating its own 2 calls with ids of their own
///   (`…_2`);
/// - answer: no unstreamed Chat Completions recording ends in a text
///   answer, so the same recorded response with its message's `content`
///   replaced by a short text, its `tool_calls` removed and
///   `finish_reason` `stop`;
/// - tools, conversation: `openai/oai_hitl_parallel.request.json`; the
///   tools' results: `openai/oai_hitl_parallel.followup_request.json`
///   (`true`, `Success`).
fn openai_case() -> Case {
    let request = parse(recording!("openai/oai_hitl_parallel.request.json"));
    let mut calls = parse(recording!("openai/oai_hitl_parallel.response.json"));
    let mut answer = calls.clone();
    let recorded = calls["choices"][0]["message"]["tool_calls"]
        .as_array()
        .expect("calls")
        .clone();
    let list = calls["choices"][0]["message"]["tool_calls"]
        .as_array_mut()
        .expect("calls");
    for call in recorded {
        let mut repeated = call.clone();
        repeated["id"] = json!(format!("{}_2", string(&call["id"])));
        list.push(repeated);
    }
    let text = "I deleted `.env` and created `test.txt`.";
    let message = &mut answer["choices"][0]["message"];
    message["content"] = json!(text);
    message
        .as_object_mut()
        .expect("a message")
        .remove("tool_calls");
    answer["choices"][0]["finish_reason"] = json!("stop");
    let answers: [(&str, &str); 2] = [("delete_file", "true"), ("create_file", "Success")];
    let tools = chat_tools(&request, &answers);
    let (conversation, wire_conversation) = chat_conversation(&request);
    Case {
        name: "turn_http_openai",
        format: Format::Chat,
        model: "gpt-4o",
        conversation,
        wire_conversation,
        system: None,
        declarations: request["tools"].as_array().expect("tools").clone(),
        tools,
        results: ["true", "Success", "true", "Success"]
            .map(String::from)
            .to_vec(),
        answer: text.to_owned(),
        canned: canned(
            calls.to_string(),
            answer.to_string(),
            "application/json",
            r#""role":"tool""#,
        ),
    }
}

/// The events of a recorded SSE body: blank-line separated blocks, kept as
/// they are.
fn sse_events(body: &str) -> Vec<String> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| format!("{block}\n\n"))
        .collect()
}

/// `turn_http_openai_stream`: gpt-4o through OpenRouter, streamed.
///
/// - calls: `openai-stream/openrouter_parallel.sse` (2 parallel calls, the
///   most of any streamed Chat Completions recording with its request
///   recorded), its calls extended to 4: the chunks of its own 2 calls
///   repeated with `index` 2 and 3 and ids `call_REDACTED_3` and `_4` (in
///   the scrubbed ids' own pattern), after the recorded ones;
/// - answer: `openai-stream/deepseek_reasoner_stream.sse`, the one
///   recorded streamed Chat Completions text answer (DeepSeek's reasoner:
///   212 chunks of reasoning, then the text);
/// - tools, conversation: `openai-stream/openrouter_parallel.request.json`;
///   the tools' results: `openai-stream/mistral_parallel.followup_request.json`,
///   the same test recorded against Mistral with the same tools
///   (`crimson-harbor`, `silver-orchard`).
fn openai_stream_case() -> Case {
    let request = parse(recording!("openai-stream/openrouter_parallel.request.json"));
    let events = sse_events(recording!("openai-stream/openrouter_parallel.sse"));
    let chunk_of = |event: &str| -> Option<Value> {
        let data = event.lines().find_map(|line| line.strip_prefix("data: "))?;
        serde_json::from_str(data).ok()
    };
    let has_calls = |event: &String| {
        chunk_of(event).is_some_and(|chunk| chunk["choices"][0]["delta"]["tool_calls"].is_array())
    };
    let last_call = events.iter().rposition(has_calls).expect("call chunks");
    let repeated: Vec<String> = events
        .iter()
        .filter(|event| has_calls(event))
        .map(|event| {
            let mut chunk = chunk_of(event).expect("a chunk");
            for call in chunk["choices"][0]["delta"]["tool_calls"]
                .as_array_mut()
                .expect("calls")
            {
                let index = call["index"].as_u64().expect("an index") + 2;
                call["index"] = json!(index);
                if call.get("id").is_some() {
                    call["id"] = json!(format!("call_REDACTED_{}", index + 1));
                }
            }
            format!("data: {chunk}\n\n")
        })
        .collect();
    let mut calls = events;
    calls.splice(last_call + 1..last_call + 1, repeated);
    let answer = recording!("openai-stream/deepseek_reasoner_stream.sse");
    let mut text = String::new();
    for event in sse_events(answer) {
        if let Some(chunk) = chunk_of(&event) {
            text.push_str(
                chunk["choices"][0]["delta"]["content"]
                    .as_str()
                    .unwrap_or(""),
            );
        }
    }
    let answers: [(&str, &str); 2] = [
        ("lookup_harbor_label", "crimson-harbor"),
        ("lookup_orchard_label", "silver-orchard"),
    ];
    let tools = chat_tools(&request, &answers);
    let (conversation, wire_conversation) = chat_conversation(&request);
    Case {
        name: "turn_http_openai_stream",
        format: Format::ChatStream,
        model: "openai/gpt-4o",
        conversation,
        wire_conversation,
        system: None,
        declarations: request["tools"].as_array().expect("tools").clone(),
        tools,
        results: [
            "crimson-harbor",
            "silver-orchard",
            "crimson-harbor",
            "silver-orchard",
        ]
        .map(String::from)
        .to_vec(),
        answer: text,
        canned: canned(
            calls.concat(),
            answer.to_owned(),
            "text/event-stream",
            r#""role":"tool""#,
        ),
    }
}

/// `turn_http_anthropic`: Claude Haiku 4.5 asking after 4 people at once.
///
/// - calls: `anthropic/ant_parallel.response.json` (a text block and 4
///   parallel `tool_use` blocks), unchanged;
/// - answer: `anthropic/ant_web_search.response.json`, the one recorded
///   unstreamed Anthropic answer that ends the turn (`end_turn`: thinking,
///   a server-side web search and its results, then text blocks with
///   citations), unchanged;
/// - tools, system, conversation: `anthropic/ant_parallel.request.json`;
///   the tools' results: `anthropic/ant_parallel.followup_request.json`.
fn anthropic_case() -> Case {
    let request = parse(recording!("anthropic/ant_parallel.request.json"));
    let answer = recording!("anthropic/ant_web_search.response.json");
    let text = anthropic_reply(&parse(answer)).text;
    let answers = by_argument(
        Some("name"),
        &[
            ("Alice", "alice is bob's wife"),
            ("Bob", "bob is alice's husband"),
            ("Charlie", "charlie is alice's son"),
            (
                "Daisy",
                "daisy is bob's daughter and charlie's younger sister",
            ),
        ],
    );
    let tools = request["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|declaration| {
            let answers = Arc::clone(&answers);
            RecordedTool::new(declaration, anthropic_declaration, move |arguments| {
                answers(arguments)
            })
        })
        .collect();
    let system = string(&request["system"]);
    let user = string(&request["messages"][0]["content"][0]["text"]);
    Case {
        name: "turn_http_anthropic",
        format: Format::Anthropic,
        model: "claude-haiku-4-5",
        conversation: vec![Message::system(system.clone()), Message::user(user.clone())],
        wire_conversation: request["messages"].as_array().expect("messages").clone(),
        system: Some(system),
        declarations: request["tools"].as_array().expect("tools").clone(),
        tools,
        results: [
            "alice is bob's wife",
            "bob is alice's husband",
            "charlie is alice's son",
            "daisy is bob's daughter and charlie's younger sister",
        ]
        .map(String::from)
        .to_vec(),
        answer: text,
        canned: canned(
            recording!("anthropic/ant_parallel.response.json").to_owned(),
            answer.to_owned(),
            "application/json",
            r#""tool_result""#,
        ),
    }
}

/// `turn_http_responses`: gpt-4o locating two places, Responses API.
///
/// - calls: `openai-responses/resp_parallel_retry.response.json` (2
///   parallel `function_call` items, the most of any unstreamed Responses
///   recording), its output extended to 4 by repeating its own 2 items
///   with `call_id` and `id` of their own (`…_2`);
/// - answer: `openai-responses/resp_web_search_annotations.response.json`,
///   the one recorded unstreamed Responses answer that completes with a
///   message (after a server-side `web_search_call`; its text carries
///   `url_citation` annotations), unchanged;
/// - tools, conversation: `openai-responses/resp_parallel_retry.request.json`;
///   the tools' results: `openai-responses/resp_parallel_retry.followup_request.json`
///   (pydantic-ai's retry prompt for `Londos`, the location for `London`).
fn responses_case() -> Case {
    let request = parse(recording!(
        "openai-responses/resp_parallel_retry.request.json"
    ));
    let mut calls = parse(recording!(
        "openai-responses/resp_parallel_retry.response.json"
    ));
    let recorded = calls["output"].as_array().expect("output").clone();
    let output = calls["output"].as_array_mut().expect("output");
    for item in recorded {
        let mut repeated = item.clone();
        repeated["call_id"] = json!(format!("{}_2", string(&item["call_id"])));
        repeated["id"] = json!(format!("{}_2", string(&item["id"])));
        output.push(repeated);
    }
    let answer = recording!("openai-responses/resp_web_search_annotations.response.json");
    let text = responses_reply(&parse(answer)).text;
    let londos = "Wrong location, I only know about \"London\".\n\nFix the errors and try again.";
    let london = r#"{"lat": 51, "lng": 0}"#;
    let answers = by_argument(Some("loc_name"), &[("Londos", londos), ("London", london)]);
    let tools = request["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|declaration| {
            let answers = Arc::clone(&answers);
            RecordedTool::new(declaration, responses_declaration, move |arguments| {
                answers(arguments)
            })
        })
        .collect();
    let user = string(&request["input"][0]["content"]);
    Case {
        name: "turn_http_responses",
        format: Format::Responses,
        model: "gpt-4o",
        conversation: vec![Message::user(user.clone())],
        wire_conversation: vec![json!({ "role": "user", "content": user })],
        system: None,
        declarations: request["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|declaration| {
                // agent-loop leaves an empty description out of a
                // Responses declaration; so does the baseline, so that
                // both send the same bodies.
                let mut declaration = declaration.clone();
                if declaration["description"] == "" {
                    declaration
                        .as_object_mut()
                        .expect("a declaration")
                        .remove("description");
                }
                declaration
            })
            .collect(),
        tools,
        results: [londos, london, londos, london].map(String::from).to_vec(),
        answer: text,
        canned: canned(
            calls.to_string(),
            answer.to_owned(),
            "application/json",
            r#""function_call_output""#,
        ),
    }
}

// ---------------------------------------------------------------------
// The two sides of a case
// ---------------------------------------------------------------------

/// A case's two sides, ready: agent-loop's binding and model, and the
/// hand-written client, both pointed at the case's server.
struct Sides {
    case: Case,
    bound: Definition<Bound>,
    model: Box<dyn Model>,
    hand_written: HandWritten,
}

async fn sides(case: Case) -> Sides {
    let address = serve(Arc::clone(&case.canned)).await;
    let base = format!("http://{address}");
    let model: Box<dyn Model> = match case.format {
        Format::Chat => Box::new(
            OpenAiModel::new(case.model)
                .base_url(format!("{base}/v1"))
                .api_key(API_KEY),
        ),
        Format::ChatStream => Box::new(
            OpenAiModel::new(case.model)
                .base_url(format!("{base}/v1"))
                .api_key(API_KEY)
                .stream(true),
        ),
        Format::Anthropic => Box::new(
            AnthropicModel::new(case.model)
                .base_url(base.clone())
                .api_key(API_KEY),
        ),
        Format::Responses => Box::new(
            OpenAiResponsesModel::new(case.model)
                .base_url(format!("{base}/v1"))
                .api_key(API_KEY),
        ),
    };
    let bound = Definition::builder()
        .name(case.name)
        .tools(case.tools.iter().map(RecordedTool::definition))
        .build()
        .validate()
        .expect("valid")
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .expect("binds");
    let url = match case.format {
        Format::Chat | Format::ChatStream => format!("{base}/v1/chat/completions"),
        Format::Anthropic => format!("{base}/v1/messages"),
        Format::Responses => format!("{base}/v1/responses"),
    };
    let hand_written = HandWritten {
        format: case.format,
        client: reqwest::Client::new(),
        url,
        model: case.model,
        system: case.system.clone(),
        max_tokens: 4096,
        declarations: case.declarations.clone(),
        registry: Registry::new(&case.tools),
    };
    Sides {
        case,
        bound,
        model,
        hand_written,
    }
}

impl Sides {
    /// agent-loop's turn on a fresh copy of the case's conversation.
    async fn library_turn(&self, cancellation: &CancellationToken) -> Finished<Message> {
        let mut conversation = self.case.conversation.clone();
        let outcome = self
            .bound
            .run_turn(&*self.model, &mut conversation, cancellation)
            .await
            .unwrap_or_else(|error| panic!("{}: {error:#}", self.case.name));
        let answer = outcome.answer().expect("a completed turn").to_owned();
        let reasoning = match conversation.last() {
            Some(Message::Assistant(message)) => message
                .content
                .iter()
                .filter_map(|part| match part {
                    ContentPart::Reasoning(reasoning) => Some(reasoning.text.as_str()),
                    _ => None,
                })
                .collect(),
            _ => String::new(),
        };
        Finished {
            answer,
            reasoning,
            conversation,
        }
    }

    async fn hand_written_turn(&self) -> Finished<Value> {
        self.hand_written
            .turn(self.case.wire_conversation.clone())
            .await
    }

    /// Runs both sides once and checks that they did the whole turn alike:
    /// the same request bodies, the recorded answer, the 4 recorded tool
    /// results in each conversation.
    async fn check(&self) {
        let name = self.case.name;
        let canned = &self.case.canned;
        canned.recording.store(true, Ordering::Relaxed);
        let library = self.library_turn(&CancellationToken::new()).await;
        let library_bodies = std::mem::take(&mut *canned.seen.lock().expect("seen"));
        let hand = self.hand_written_turn().await;
        let hand_bodies = std::mem::take(&mut *canned.seen.lock().expect("seen"));
        canned.recording.store(false, Ordering::Relaxed);
        let (library_answer, conversation) = (library.answer, library.conversation);
        let (hand_answer, wire) = (hand.answer, hand.conversation);
        assert_eq!(
            library.reasoning, hand.reasoning,
            "{name}: the reasoning that came with the answer"
        );

        assert_eq!(
            library_answer, self.case.answer,
            "{name}: agent-loop's answer"
        );
        assert_eq!(
            hand_answer, self.case.answer,
            "{name}: the baseline's answer"
        );
        let results: Vec<String> = conversation
            .iter()
            .filter_map(Message::as_tool_result)
            .map(|result| {
                assert!(!result.is_error, "{name}: {}", result.text());
                result.text()
            })
            .collect();
        assert_eq!(results, self.case.results, "{name}: agent-loop's results");
        assert_eq!(
            wire_results(self.case.format, &wire),
            self.case.results,
            "{name}: the baseline's results"
        );
        assert_eq!(library_bodies.len(), 2, "{name}: agent-loop's requests");
        assert_eq!(hand_bodies.len(), 2, "{name}: the baseline's requests");
        for (index, (library, hand)) in library_bodies.iter().zip(&hand_bodies).enumerate() {
            let library: Value = serde_json::from_slice(library).expect("JSON");
            let hand: Value = serde_json::from_slice(hand).expect("JSON");
            assert_eq!(
                library, hand,
                "{name}: request {index} differs:\nagent-loop {library:#}\nbaseline {hand:#}"
            );
        }
    }
}

/// The tool results of the hand-written loop's conversation, in order.
fn wire_results(format: Format, conversation: &[Value]) -> Vec<String> {
    let mut results = Vec::new();
    for message in conversation {
        match format {
            Format::Chat | Format::ChatStream if message["role"] == "tool" => {
                results.push(string(&message["content"]));
            }
            Format::Anthropic => {
                for block in message["content"].as_array().into_iter().flatten() {
                    if block["type"] == "tool_result" {
                        results.push(string(&block["content"]));
                    }
                }
            }
            Format::Responses if message["type"] == "function_call_output" => {
                results.push(string(&message["output"]));
            }
            _ => {}
        }
    }
    results
}

/// Every case, its two sides ready and checked.
async fn checked_cases() -> Vec<Sides> {
    let mut all = Vec::new();
    for case in [
        openai_case(),
        openai_stream_case(),
        anthropic_case(),
        responses_case(),
    ] {
        let sides = sides(case).await;
        sides.check().await;
        all.push(sides);
    }
    all
}

fn turns(c: &mut Criterion) {
    let runtime = runtime();
    let cases = runtime.block_on(checked_cases());
    let mut group = c.benchmark_group("turn_http");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));
    let cancellation = CancellationToken::new();
    let cancellation = &cancellation;
    for sides in &cases {
        macro_rules! row {
            ($name:literal) => {{
                compare!(
                    group,
                    runtime,
                    $name,
                    || (),
                    |_unit| sides.hand_written_turn(),
                    |_unit| sides.library_turn(cancellation)
                );
            }};
        }
        match sides.case.name {
            "turn_http_openai" => row!("turn_http_openai"),
            "turn_http_openai_stream" => row!("turn_http_openai_stream"),
            "turn_http_anthropic" => row!("turn_http_anthropic"),
            "turn_http_responses" => row!("turn_http_responses"),
            other => unreachable!("{other}"),
        }
    }
    group.finish();
}

criterion_group!(benches, turns);

const COMPARISONS: &[Row] = &[
    Row {
        benchmark: "turn_http_openai",
        ratio: "turn_http_openai",
        measured: "turn over HTTP, OpenAiModel, 4 calls + answer",
        baseline: "reqwest + serde_json loop + registry",
    },
    Row {
        benchmark: "turn_http_openai_stream",
        ratio: "turn_http_openai_stream",
        measured: "the same, streamed (SSE)",
        baseline: "the same loop + eventsource-stream",
    },
    Row {
        benchmark: "turn_http_anthropic",
        ratio: "turn_http_anthropic",
        measured: "the same, AnthropicModel",
        baseline: "the same loop, Anthropic's format",
    },
    Row {
        benchmark: "turn_http_responses",
        ratio: "turn_http_responses",
        measured: "the same, OpenAiResponsesModel",
        baseline: "the same loop, Responses format",
    },
];

/// Set to `<row> <side> <turns>` (say `turn_http_openai library 200`;
/// the side `library` or `baseline`): the bench runs that side of that row
/// so many times after the setup and the checks, and nothing else, for a
/// profiler (`valgrind --tool=callgrind`: the counts of 0 turns are the
/// setup's, to subtract).
const PROFILE: &str = "AGENT_LOOP_BENCH_PROFILE";

fn profile(spec: &str) {
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let [row, side, turns] = parts[..] else {
        panic!("{PROFILE}: `<row> <library|baseline> <turns>`, not {spec:?}");
    };
    let turns: usize = turns.parse().expect("a count of turns");
    let runtime = runtime();
    runtime.block_on(async {
        let cases = checked_cases().await;
        let sides = cases
            .iter()
            .find(|sides| sides.case.name == row)
            .unwrap_or_else(|| panic!("{PROFILE}: no row {row:?}"));
        let cancellation = CancellationToken::new();
        for _ in 0..turns {
            match side {
                "library" => drop(std::hint::black_box(
                    sides.library_turn(&cancellation).await,
                )),
                "baseline" => drop(std::hint::black_box(sides.hand_written_turn().await)),
                other => panic!("{PROFILE}: no side {other:?}"),
            }
        }
    });
}

fn main() {
    if let Ok(spec) = std::env::var(PROFILE) {
        return profile(&spec);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    compare::report(COMPARISONS);
}
