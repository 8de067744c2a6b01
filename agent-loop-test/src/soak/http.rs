//! The soak through the real transport: sessions run on the HTTP models
//! against a loopback server on its own thread and runtime, which answers
//! with recorded bodies (`tests/fixtures/wire-real`) and injects seeded
//! faults. Each fault is chosen from a hash of the request body and the
//! attempt count of that body, so the same seed gives the same faults.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_loop::conversation::Message;
use agent_loop::model::{AnthropicModel, GeminiModel, OpenAiModel, OpenAiResponsesModel};
use agent_loop::turn::{Model, TurnError};
use agent_loop::{Bindings, LoopId, SessionId};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::turn_common;

/// The timeout of each attempt.
pub const TIMEOUT: Duration = Duration::from_millis(300);
/// Retries per request.
pub const RETRIES: u32 = 2;
/// The longest backoff, and the longest `retry-after-ms` the server sends.
pub const BACKOFF: Duration = Duration::from_millis(50);
/// The chance, in percent, that a request gets a fault.
const FAULT_PERCENT: u32 = 35;
// The workspace root's recorded traffic.
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/wire-real/");

/// A format served: which model, streamed or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenAi,
    OpenAiStream,
    Responses,
    ResponsesStream,
    Anthropic,
    AnthropicStream,
    Gemini,
    GeminiStream,
}

impl Format {
    pub const ALL: [Format; 8] = [
        Format::OpenAi,
        Format::OpenAiStream,
        Format::Responses,
        Format::ResponsesStream,
        Format::Anthropic,
        Format::AnthropicStream,
        Format::Gemini,
        Format::GeminiStream,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::OpenAiStream => "openai-stream",
            Format::Responses => "responses",
            Format::ResponsesStream => "responses-stream",
            Format::Anthropic => "anthropic",
            Format::AnthropicStream => "anthropic-stream",
            Format::Gemini => "gemini",
            Format::GeminiStream => "gemini-stream",
        }
    }

    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|format| format.name() == name)
    }

    fn streamed(self) -> bool {
        matches!(
            self,
            Format::OpenAiStream
                | Format::ResponsesStream
                | Format::AnthropicStream
                | Format::GeminiStream
        )
    }

    /// (answers with calls, answers in text only): recorded files.
    fn recordings(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            // No text-only unstreamed Chat Completions recording: the text
            // answer is the recorded text stream's.
            Format::OpenAi => (
                &[
                    "openai/oai_hitl_parallel.response.json",
                    "openai/oai_py_parallel.response.json",
                ],
                &[],
            ),
            Format::OpenAiStream => (
                &[
                    "openai-stream/llamacpp_two_calls.sse",
                    "openai-stream/mistral_parallel.sse",
                    "openai-stream/openrouter_parallel.sse",
                    "openai-stream/oai_py_parallel_usage.sse",
                ],
                &["openai-stream/deepseek_reasoner_stream.sse"],
            ),
            Format::Responses => (
                &[
                    "openai-responses/resp_parallel_retry.response.json",
                    "openai-responses/resp_store_false.response.json",
                ],
                &["openai-responses/resp_web_search_annotations.response.json"],
            ),
            Format::ResponsesStream => (
                &[
                    "openai-responses/resp_stream_fn.sse",
                    "openai-responses/resp_stream_store_false.sse",
                ],
                &["openai-responses/resp_stream_reasoning_summary.sse"],
            ),
            Format::Anthropic => (
                &[
                    "anthropic/ant_parallel.response.json",
                    "anthropic/ant_thinking.response.json",
                ],
                &["anthropic/ant_web_search.response.json"],
            ),
            Format::AnthropicStream => (
                &["anthropic-stream/ant_parallel_tool_use.sse"],
                &["anthropic-stream/ant_thinking_text.sse"],
            ),
            Format::Gemini | Format::GeminiStream => (
                &["gemini/gem_parallel_sig.response.json"],
                &[
                    "gemini/gem_cached.response.json",
                    "gemini/gem_thinking_parts.response.json",
                ],
            ),
        }
    }

    /// An `error` event of this format (an overload).
    fn error_event(self) -> &'static str {
        match self {
            Format::Anthropic | Format::AnthropicStream => {
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
            }
            // The shape of `resp_stream_quota_error.sse`, with a retryable type.
            Format::Responses | Format::ResponsesStream => {
                "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"type\":\"server_error\",\"code\":\"server_error\",\"message\":\"The server is overloaded.\",\"param\":null}}\n\n"
            }
            Format::Gemini | Format::GeminiStream => {
                "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n"
            }
            _ => {
                "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\",\"code\":\"overloaded\"}}\n\n"
            }
        }
    }

    /// Whether an event puts text or reasoning into the turn's events (the
    /// pieces of a call are not shown, so a retry after them is allowed).
    fn is_content(self, event: &str) -> bool {
        match self {
            Format::Anthropic | Format::AnthropicStream => {
                event.contains("\"text_delta\"") || event.contains("\"thinking_delta\"")
            }
            Format::Responses | Format::ResponsesStream => {
                event.contains("\"response.output_text.delta\"")
                    || event.contains("\"response.reasoning_summary_text.delta\"")
                    || event.contains("\"response.reasoning_text.delta\"")
            }
            Format::Gemini | Format::GeminiStream => event.contains("\"text\""),
            _ => event.match_indices("content\":\"").any(|(at, pattern)| {
                event[at + pattern.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c != '"')
            }),
        }
    }
}

/// A fault the server injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    TooMany,
    Unavailable,
    Overloaded,
    Reset,
    Stall,
    NotJson,
    KeepAlive,
    ErrorBeforeContent,
    ErrorAfterContent,
    ResetAfterContent,
    StallAfterContent,
    Cut,
    CutAfterContent,
}

const UNSTREAMED_FAULTS: [Fault; 6] = [
    Fault::TooMany,
    Fault::Unavailable,
    Fault::Overloaded,
    Fault::Reset,
    Fault::Stall,
    Fault::NotJson,
];
const STREAMED_FAULTS: [Fault; 13] = [
    Fault::TooMany,
    Fault::Unavailable,
    Fault::Overloaded,
    Fault::Reset,
    Fault::Stall,
    Fault::NotJson,
    Fault::KeepAlive,
    Fault::ErrorBeforeContent,
    Fault::ErrorAfterContent,
    Fault::ResetAfterContent,
    Fault::StallAfterContent,
    Fault::Cut,
    Fault::CutAfterContent,
];

/// What the server counted.
#[derive(Default, Debug)]
struct ServerState {
    /// Per body hash: attempts, and whether content was sent.
    bodies: HashMap<u64, (u32, bool, Option<Fault>)>,
    requests: usize,
    retries: usize,
    faults: BTreeMap<String, usize>,
    /// Requests whose body an earlier attempt had already sent content for.
    retried_after_content: usize,
}

struct Server {
    format: Format,
    seed: u64,
    state: Mutex<ServerState>,
    open_connections: AtomicUsize,
    /// Recorded bodies: calls, text.
    calls: Vec<String>,
    text: Vec<String>,
}

struct Open<'a>(&'a AtomicUsize);
impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn read_recording(path: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}{path}"))
        .unwrap_or_else(|error| panic!("the recording {path} reads: {error}"))
}

impl Server {
    fn new(format: Format, seed: u64) -> Server {
        let (calls, text) = format.recordings();
        let mut text: Vec<String> = text.iter().map(|path| read_recording(path)).collect();
        if text.is_empty() {
            // Chat Completions unstreamed: the text of the recorded stream,
            // as one message.
            text.push(
                serde_json::json!({
                    "id": "chatcmpl-soak", "object": "chat.completion", "model": "deepseek-reasoner",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "Done."}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
                })
                .to_string(),
            );
        }
        Server {
            format,
            seed,
            state: Mutex::new(ServerState::default()),
            open_connections: AtomicUsize::new(0),
            calls: calls.iter().map(|path| read_recording(path)).collect(),
            text,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ServerState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Serves one connection: requests one after the other (keep-alive).
    async fn connection(self: Arc<Self>, mut socket: TcpStream) {
        self.open_connections.fetch_add(1, Ordering::SeqCst);
        let _open = Open(&self.open_connections);
        let mut buffer = Vec::new();
        loop {
            let Some(body) = read_request(&mut socket, &mut buffer).await else {
                return;
            };
            if !self.respond(&mut socket, &body).await {
                return;
            }
        }
    }

    /// Answers one request; false when the connection is to be closed.
    async fn respond(&self, socket: &mut TcpStream, body: &[u8]) -> bool {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut hasher);
        let hash = hasher.finish();
        let attempt = {
            let mut state = self.state();
            state.requests += 1;
            let entry = state.bodies.entry(hash).or_default();
            let (attempt, content_sent, last_fault) = *entry;
            entry.0 += 1;
            if content_sent {
                eprintln!(
                    "soak: a retry after text was sent; the attempt before had {last_fault:?}"
                );
            }
            if attempt > 0 {
                state.retries += 1;
            }
            if content_sent {
                state.retried_after_content += 1;
            }
            attempt
        };
        let mut random = fastrand::Rng::with_seed(
            self.seed ^ hash ^ u64::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        let request: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let last = ["messages", "contents", "input"]
            .iter()
            .find_map(|key| request[key].as_array().and_then(|list| list.last()))
            .map(|last| last.to_string())
            .unwrap_or_default();
        let after_tool = [
            "\"role\":\"tool\"",
            "tool_result",
            "functionResponse",
            "function_call_output",
        ]
        .iter()
        .any(|marker| last.contains(marker));
        let recordings = if after_tool || random.bool() {
            &self.text
        } else {
            &self.calls
        };
        let recording = &recordings[random.usize(..recordings.len())];
        let fault = (random.u32(..100) < FAULT_PERCENT).then(|| {
            let faults: &[Fault] = if self.format.streamed() {
                &STREAMED_FAULTS
            } else {
                &UNSTREAMED_FAULTS
            };
            faults[random.usize(..faults.len())]
        });
        self.state().bodies.entry(hash).or_default().2 = fault;
        if let Some(fault) = fault {
            *self.state().faults.entry(format!("{fault:?}")).or_default() += 1;
        }
        let status = |code: &str, extra: &str| {
            let body = format!(
                "{{\"error\":{{\"message\":\"soak {code}\",\"type\":\"overloaded_error\"}}}}"
            );
            format!(
                "HTTP/1.1 {code}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
                body.len()
            )
        };
        match fault {
            Some(Fault::TooMany) => {
                let wait = random.u64(1..=BACKOFF.as_millis() as u64);
                let head = status(
                    "429 Too Many Requests",
                    &format!("retry-after-ms: {wait}\r\nretry-after: 0\r\n"),
                );
                return socket.write_all(head.as_bytes()).await.is_ok();
            }
            Some(Fault::Unavailable) => {
                return socket
                    .write_all(status("503 Service Unavailable", "").as_bytes())
                    .await
                    .is_ok();
            }
            Some(Fault::Overloaded) => {
                return socket
                    .write_all(status("529 Overloaded", "").as_bytes())
                    .await
                    .is_ok();
            }
            Some(Fault::Stall) => {
                wait_for_close(socket).await;
                return false;
            }
            _ => {}
        }
        if !self.format.streamed() {
            let body = if fault == Some(Fault::NotJson) {
                "<html><body>Not Found</body></html>".to_owned()
            } else {
                recording.clone()
            };
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            if fault == Some(Fault::Reset) {
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body.as_bytes()[..body.len() / 2]).await;
                let _ = socket.flush().await;
                reset(socket);
                return false;
            }
            return socket
                .write_all(format!("{head}{body}").as_bytes())
                .await
                .is_ok();
        }
        // Streamed: the recording's events (Gemini's JSON framed as one).
        let events: Vec<String> = match self.format {
            Format::GeminiStream => {
                let value: serde_json::Value = serde_json::from_str(recording).unwrap_or_default();
                vec![format!("data: {value}\n\n")]
            }
            _ => recording
                .split("\n\n")
                .filter(|event| !event.trim().is_empty())
                .map(|event| format!("{event}\n\n"))
                .collect(),
        };
        let first_content = events
            .iter()
            .position(|event| self.format.is_content(event))
            .unwrap_or(events.len());
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if socket.write_all(head.as_bytes()).await.is_err() {
            return false;
        }
        let before = &events[..first_content];
        let mut sent_content = false;
        macro_rules! write {
            ($bytes:expr) => {
                if write_chunk(socket, $bytes.as_bytes()).await.is_err() {
                    return false;
                }
            };
        }
        match fault {
            Some(Fault::NotJson) => {
                write!("data: <html>not json</html>\n\n");
                return end_chunks(socket).await;
            }
            Some(Fault::ErrorBeforeContent) => {
                for event in before {
                    write!(event);
                }
                write!(self.format.error_event());
                return end_chunks(socket).await;
            }
            Some(Fault::Reset) | Some(Fault::Cut) => {
                for event in &before[..before.len() / 2] {
                    write!(event);
                }
                if fault == Some(Fault::Cut) {
                    return end_chunks(socket).await;
                }
                reset(socket);
                return false;
            }
            _ => {}
        }
        for (index, event) in events.iter().enumerate() {
            if fault == Some(Fault::KeepAlive) {
                write!(": keep-alive\n\n");
                tokio::time::sleep(Duration::from_millis(random.u64(0..=5))).await;
            }
            write!(event);
            if index >= first_content && !sent_content {
                sent_content = true;
                self.state().bodies.entry(hash).or_default().1 = true;
                if matches!(
                    fault,
                    Some(
                        Fault::ErrorAfterContent
                            | Fault::ResetAfterContent
                            | Fault::StallAfterContent
                            | Fault::CutAfterContent
                    )
                ) {
                    let _ = socket.flush().await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    match fault {
                        Some(Fault::ErrorAfterContent) => {
                            write!(self.format.error_event());
                            return end_chunks(socket).await;
                        }
                        Some(Fault::ResetAfterContent) => {
                            reset(socket);
                            return false;
                        }
                        Some(Fault::StallAfterContent) => {
                            wait_for_close(socket).await;
                            return false;
                        }
                        _ => return end_chunks(socket).await,
                    }
                }
            }
        }
        end_chunks(socket).await
    }
}

async fn write_chunk(socket: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
    frame.extend_from_slice(bytes);
    frame.extend_from_slice(b"\r\n");
    socket.write_all(&frame).await
}

async fn end_chunks(socket: &mut TcpStream) -> bool {
    socket.write_all(b"0\r\n\r\n").await.is_ok()
}

/// Closes with a TCP reset (linger 0), not an orderly end.
fn reset(socket: &TcpStream) {
    #[allow(deprecated)] // the reset is what is wanted here, not a blocking close
    let _ = socket.set_linger(Some(Duration::ZERO));
}

/// Waits until the client closes the connection (or 30 s).
async fn wait_for_close(socket: &mut TcpStream) {
    let mut scratch = [0u8; 1024];
    let _ = tokio::time::timeout(Duration::from_secs(30), async {
        while matches!(socket.read(&mut scratch).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// Reads one request (head and `content-length` body); `None` at the end of
/// the connection.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut scratch = [0u8; 16384];
    loop {
        if let Some(end) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0);
            let total = end + 4 + length;
            while buffer.len() < total {
                let n = socket.read(&mut scratch).await.ok().filter(|n| *n > 0)?;
                buffer.extend_from_slice(&scratch[..n]);
            }
            let body = buffer[end + 4..total].to_vec();
            buffer.drain(..total);
            return Some(body);
        }
        let n = socket.read(&mut scratch).await.ok().filter(|n| *n > 0)?;
        buffer.extend_from_slice(&scratch[..n]);
    }
}

/// What one format's run measured.
#[derive(Debug, Default)]
pub struct HttpReport {
    pub turns: usize,
    pub elapsed: Duration,
    pub answered: usize,
    pub interrupted: usize,
    /// Turns that failed with a typed model error, by kind.
    pub errors: BTreeMap<String, usize>,
    pub calls: usize,
    pub error_results: usize,
    pub requests: usize,
    pub retries: usize,
    pub faults: BTreeMap<String, usize>,
    /// Must be 0: a call id without exactly one result.
    pub violations: usize,
    /// Must be 0: turns that neither answered nor failed within the deadline.
    pub overdue: usize,
    /// Must be 0: client tasks and server connections alive at the end.
    pub alive_tasks: usize,
    pub open_connections: usize,
    /// Must be 0: a retry of an attempt that had already sent content.
    pub retried_after_content: usize,
}

impl HttpReport {
    pub fn must_be_zero(&self) -> usize {
        self.violations
            + self.overdue
            + self.alive_tasks
            + self.open_connections
            + self.retried_after_content
    }
}

/// The longest a turn may take: two requests (calls, then the answer to
/// their results), each of `RETRIES + 1` attempts whose timeout doubles per
/// retry up to 8 times, plus the backoff, plus 1 s.
pub fn turn_deadline() -> Duration {
    let request: Duration = (0..=RETRIES)
        .map(|retry| TIMEOUT * 2u32.pow(retry).min(8) + BACKOFF)
        .sum();
    request * 2 + Duration::from_secs(1)
}

fn model(format: Format, base_url: &str) -> Box<dyn Model> {
    match format {
        Format::OpenAi | Format::OpenAiStream => Box::new(
            OpenAiModel::new("soak")
                .base_url(format!("{base_url}/v1"))
                .api_key("sk-soak")
                .stream(format.streamed())
                .timeout(TIMEOUT)
                .max_retries(RETRIES)
                .backoff(Duration::from_millis(5), BACKOFF),
        ),
        Format::Responses | Format::ResponsesStream => Box::new(
            OpenAiResponsesModel::new("soak")
                .base_url(format!("{base_url}/v1"))
                .api_key("sk-soak")
                .stream(format.streamed())
                .timeout(TIMEOUT)
                .max_retries(RETRIES)
                .backoff(Duration::from_millis(5), BACKOFF),
        ),
        Format::Anthropic | Format::AnthropicStream => Box::new(
            AnthropicModel::new("soak")
                .base_url(base_url)
                .api_key("sk-ant-soak")
                .stream(format.streamed())
                .timeout(TIMEOUT)
                .max_retries(RETRIES)
                .backoff(Duration::from_millis(5), BACKOFF),
        ),
        Format::Gemini | Format::GeminiStream => Box::new(
            GeminiModel::new("soak")
                .base_url(base_url)
                .api_key("AIza-soak")
                .stream(format.streamed())
                .timeout(TIMEOUT)
                .max_retries(RETRIES)
                .backoff(Duration::from_millis(5), BACKOFF),
        ),
    }
}

async fn session(
    definition: Arc<agent_loop::Definition<agent_loop::Validated>>,
    format: Format,
    base_url: Arc<String>,
    settings: super::Settings,
    index: usize,
    report: Arc<Mutex<HttpReport>>,
) {
    let mut random = fastrand::Rng::with_seed(
        settings.seed ^ (index as u64).wrapping_mul(0x2545_F491_4F6C_DD1D),
    );
    let model = model(format, &base_url);
    let Ok(bound) = definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
    else {
        report.lock().unwrap_or_else(|p| p.into_inner()).violations += 1;
        return;
    };
    let mut conversation = vec![Message::system(format!("You are soak session {index}."))];
    for turn in 0..settings.turns {
        conversation.push(Message::user(format!("Turn {turn}.")));
        let cancellation = CancellationToken::new();
        let canceller = (random.u32(..100) < super::CANCEL_PERCENT).then(|| {
            let cancellation = cancellation.clone();
            let after = TIMEOUT.mul_f64(random.f64());
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                cancellation.cancel();
            })
        });
        let result = tokio::time::timeout(
            turn_deadline(),
            bound.run_turn(model.as_ref(), &mut conversation, &cancellation),
        )
        .await;
        if let Some(canceller) = canceller {
            canceller.abort();
            let _ = canceller.await;
        }
        let mut report = report.lock().unwrap_or_else(|p| p.into_inner());
        report.turns += 1;
        match result {
            Err(_) => {
                eprintln!(
                    "soak: {} session {index} turn {turn} overdue",
                    format.name()
                );
                report.overdue += 1;
            }
            Ok(Ok(outcome)) => {
                match outcome.status {
                    agent_loop::turn::TurnStatus::Interrupted => report.interrupted += 1,
                    _ => report.answered += 1,
                }
                for iteration in &outcome.stats.iterations {
                    report.calls += iteration.calls.len();
                    report.error_results +=
                        iteration.calls.iter().filter(|c| c.error.is_some()).count();
                }
            }
            Ok(Err(TurnError::Model { source, .. })) => {
                *report
                    .errors
                    .entry(format!("{:?}", source.kind))
                    .or_default() += 1;
            }
            Ok(Err(TurnError::Conversation(_))) => report.violations += 1,
            Ok(Err(error)) => {
                *report.errors.entry(format!("turn: {error}")).or_default() += 1;
            }
        }
        if let Err(problem) = turn_common::check_every_call_answered(&conversation) {
            eprintln!(
                "soak: {} session {index} turn {turn}: {problem}",
                format.name()
            );
            report.violations += 1;
        }
    }
}

/// Runs `settings.sessions` sessions of `format` against a server of its own.
pub fn run(settings: super::Settings, format: Format) -> HttpReport {
    let server = Arc::new(Server::new(format, settings.seed));
    let (address_sender, address) = std::sync::mpsc::channel();
    let stop = CancellationToken::new();
    let server_thread = {
        let server = Arc::clone(&server);
        let stop = stop.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the server's runtime builds");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("a loopback port");
                let _ = address_sender.send(listener.local_addr().expect("bound"));
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        accepted = listener.accept() => if let Ok((socket, _)) = accepted {
                            tokio::spawn(Arc::clone(&server).connection(socket));
                        },
                    }
                }
            });
        })
    };
    let address = address.recv().expect("the server starts");
    let base_url = Arc::new(format!("http://{address}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime builds");
    let definition = Arc::new(super::definition());
    let report = Arc::new(Mutex::new(HttpReport::default()));
    let started = Instant::now();
    runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for index in 0..settings.sessions {
            tasks.spawn(session(
                Arc::clone(&definition),
                format,
                Arc::clone(&base_url),
                settings,
                index,
                Arc::clone(&report),
            ));
        }
        while let Some(joined) = tasks.join_next().await {
            joined.expect("a session task neither panics nor is aborted");
        }
    });
    let elapsed = started.elapsed();
    let alive_tasks = runtime.block_on(super::settled_task_count());
    // Every model and binding is dropped: the server sees every connection end.
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.open_connections.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let open_connections = server.open_connections.load(Ordering::SeqCst);
    stop.cancel();
    let _ = server_thread.join();
    drop(runtime);
    let mut report = std::mem::take(&mut *report.lock().unwrap_or_else(|p| p.into_inner()));
    let state = server.state();
    report.elapsed = elapsed;
    report.alive_tasks = alive_tasks;
    report.open_connections = open_connections;
    report.requests = state.requests;
    report.retries = state.retries;
    report.faults = state.faults.clone();
    report.retried_after_content = state.retried_after_content;
    report
}
