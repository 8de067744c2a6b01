//! The transport every HTTP model shares: one `reqwest` client, a per-attempt
//! timeout, retries with exponential backoff and jitter (`backon`) that
//! honour the server's `retry-after-ms` and `Retry-After`, error bodies
//! read into a [`ModelError`], and server-sent events read with
//! `eventsource-stream`.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use backon::{ExponentialBuilder, Retryable};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::{ERROR_BODY_KEYS, HttpModelError};
use super::event_body::{BodyError, WHOLE_GRACE, event_body};
use super::headers::{MAX_RETRY_AFTER, request_id, retry_after, should_retry};
use agent_loop_core::turn::{ModelError, ModelErrorKind};

use crate::wire::WireError;
use crate::wire::decode::{Unread, read_text};
use agent_loop_core::conversation::{ModelResponse, WireFormat};
use agent_loop_core::support::redact::redact_url;
use agent_loop_core::tool::BoxError;

/// Statuses worth another attempt: timeouts, conflicts, rate limits,
/// server errors and Anthropic's `529 overloaded`.
const RETRYABLE_STATUSES: [u16; 8] = [408, 409, 429, 500, 502, 503, 504, 529];

/// An API key: sent in a header marked sensitive, and printed as
/// `<redacted>` by `Debug` and `Display`, so it never reaches a log, an
/// error or a tracing field.
///
/// ```
/// use agent_loop_providers::model::ApiKey;
///
/// let key = ApiKey::new("sk-secret");
/// assert_eq!(format!("{key} {key:?}"), "<redacted> <redacted>");
/// assert_eq!(key.expose_secret(), "sk-secret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for code that must send it elsewhere.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        Self(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        Self(key.to_owned())
    }
}

/// A header value holding a secret: marked sensitive, so `reqwest` and
/// `http` print it redacted.
pub(crate) fn secret_header(
    format: WireFormat,
    key: &ApiKey,
    prefix: &str,
) -> Result<HeaderValue, ModelError> {
    let mut value = HeaderValue::from_str(&format!("{prefix}{}", key.0)).map_err(|_| {
        // `InvalidHeaderValue` quotes nothing, but say nothing of the key either.
        ModelError::of_format(format, ModelErrorKind::Request)
            .with_message("the API key is not a valid HTTP header value")
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The shared HTTP settings and client of one model.
#[derive(Clone)]
pub(crate) struct Transport {
    format: WireFormat,
    /// Built on first use: building can fail (no TLS roots), and a model's
    /// constructor does not.
    client: Arc<OnceLock<Result<reqwest::Client, String>>>,
    /// Per attempt: until the whole body is read (unstreamed), or until
    /// the headers and then between two events (streamed).
    pub(crate) timeout: Duration,
    pub(crate) max_retries: u32,
    pub(crate) min_backoff: Duration,
    pub(crate) max_backoff: Duration,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("min_backoff", &self.min_backoff)
            .field("max_backoff", &self.max_backoff)
            .finish_non_exhaustive()
    }
}

/// What a successful request gave: the whole body, or the response whose
/// body is an event stream.
pub(crate) struct Answer<T> {
    pub(crate) body: T,
    pub(crate) attempts: u32,
    pub(crate) request_id: Option<String>,
}

impl<T> Answer<T> {
    /// `error`, found in this answer: with the attempts the request took
    /// and the request id the server gave.
    pub(crate) fn failed(&self, mut error: ModelError) -> ModelError {
        error.attempts = self.attempts;
        error.request_id.clone_from(&self.request_id);
        error
    }
}

impl Transport {
    pub(crate) fn new(format: WireFormat) -> Self {
        Self {
            format,
            client: Arc::default(),
            timeout: Duration::from_secs(120),
            max_retries: 3,
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
        }
    }

    /// The retry waits: exponential from `min_backoff`, at most
    /// `max_backoff`, with jitter, `max_retries` of them.
    fn backoff_builder(&self) -> ExponentialBuilder {
        ExponentialBuilder::default()
            .with_min_delay(self.min_backoff)
            .with_max_delay(self.max_backoff)
            .with_factor(2.0)
            .with_jitter()
            .with_max_times(self.max_retries as usize)
    }

    /// The waits of [`backoff_builder`](Self::backoff_builder), for
    /// retries outside one HTTP exchange (a stream that failed before its
    /// content).
    pub(crate) fn backoff(&self) -> impl Iterator<Item = Duration> + Send + use<> {
        backon::BackoffBuilder::build(self.backoff_builder())
    }

    fn error(&self, kind: ModelErrorKind) -> ModelError {
        ModelError::of_format(self.format, kind)
    }

    fn client(&self) -> Result<&reqwest::Client, ModelError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .connect_timeout(Duration::from_secs(30))
                    .build()
                    .map_err(|error| error.without_url().to_string())
            })
            .as_ref()
            .map_err(|message| {
                self.error(ModelErrorKind::Request)
                    .with_message(format!("the HTTP client could not be built: {message}"))
            })
    }

    /// POSTs `body`, retrying as configured, and reads the answer with
    /// `parse` (a format's `parse_response`). A body that is the provider's
    /// error (some servers answer 200 with one) is that error; a body that
    /// is not a response is [`ModelErrorKind::InvalidResponse`].
    ///
    /// The answer's bytes are read straight into `R` and handed to `read`,
    /// the rest of `parse`, when they are such a body and not an error
    /// body; any other answer is parsed into a `Value` first, as `parse`
    /// reads it, so that its failure is reported as it always was.
    pub(crate) async fn post_response<R: DeserializeOwned>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Vec<u8>,
        read: fn(R) -> Result<ModelResponse, Unread>,
        parse: fn(&Value) -> Result<ModelResponse, WireError>,
    ) -> Result<ModelResponse, ModelError> {
        let answer = self
            .retrying(
                url,
                headers,
                body,
                self.max_retries,
                |response| async move {
                    let content_type = content_type(&response);
                    response.bytes().await.map(|body| (content_type, body))
                },
            )
            .await?;
        let (content_type, bytes) = &answer.body;
        self.read_answer(content_type, bytes, read, parse)
            .map_err(|error| answer.failed(error))
    }

    /// Reads an unstreamed answer's bytes: straight into `R`, handed to
    /// `read` (the rest of `parse`), when they are such a body and not an
    /// error body; else as [`parse_answer`](Self::parse_answer) reads
    /// them, which reports a failure with its path. Both give the same
    /// for any body.
    fn read_answer<R: DeserializeOwned>(
        &self,
        content_type: &str,
        bytes: &[u8],
        read: fn(R) -> Result<ModelResponse, Unread>,
        parse: fn(&Value) -> Result<ModelResponse, WireError>,
    ) -> Result<ModelResponse, ModelError> {
        let Some(direct) = read_text::<R>(bytes, &ERROR_BODY_KEYS) else {
            return self.parse_answer(content_type, bytes, parse);
        };
        // The members an error body is told by: its error is the one the
        // whole body gives.
        if let Some(error) = ModelError::from_error_body(self.format, &Value::Object(direct.kept)) {
            return Err(error);
        }
        match read(direct.value) {
            Ok(response) => Ok(response),
            Err(Unread::Wire(error)) => Err(self.invalid_response(error)),
            Err(Unread::Again) => self.parse_answer(content_type, bytes, parse),
        }
    }

    /// Reads an unstreamed answer's bytes as a `Value`, then with `parse`:
    /// a page that is not the API, JSON that is the provider's error
    /// (some servers answer 200 with one) and a body that is no response
    /// are each told apart.
    fn parse_answer(
        &self,
        content_type: &str,
        bytes: &[u8],
        parse: fn(&Value) -> Result<ModelResponse, WireError>,
    ) -> Result<ModelResponse, ModelError> {
        let value: Value = match serde_json::from_slice(bytes) {
            Ok(value) => value,
            Err(error) => {
                return Err(self.not_the_api(content_type, bytes).unwrap_or_else(|| {
                    self.error(ModelErrorKind::InvalidResponse)
                        .with_source(error)
                }));
            }
        };
        if let Some(error) = ModelError::from_error_body(self.format, &value) {
            return Err(error);
        }
        parse(&value).map_err(|error| self.invalid_response(error))
    }

    fn invalid_response(&self, error: WireError) -> ModelError {
        // What the wire error says (a provider's own error as the type and
        // message), as this model's format.
        let mut error = ModelError::from(error);
        error.format = Some(self.format);
        error
    }

    /// The error for an answer that is a web page, not the API (a base
    /// URL without its `/v1`, a proxy's login page): it names the content
    /// type and says where to look. `None` for anything else.
    fn not_the_api(&self, content_type: &str, body: &[u8]) -> Option<ModelError> {
        let start = String::from_utf8_lossy(&body[..body.len().min(64)]);
        let page = content_type.to_ascii_lowercase().contains("html")
            || start.trim_start().starts_with('<');
        page.then(|| {
            self.error(ModelErrorKind::InvalidResponse)
                .with_message(format!(
                    "the server answered a web page (Content-Type {content_type:?}), not the {} API: check the model's base URL ({})",
                    self.format,
                    base_url_hint(self.format),
                ))
        })
    }

    /// POSTs `body` and returns the response once its headers say success
    /// (retrying as configured); its body is read with [`read_events`](Self::read_events).
    /// At most `retries` retries (a request's stream retries use up its
    /// budget too).
    pub(crate) async fn post_streaming(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Vec<u8>,
        retries: u32,
    ) -> Result<Answer<reqwest::Response>, ModelError> {
        self.retrying(url, headers, body, retries, |response| async move {
            Ok(response)
        })
        .await
    }

    async fn retrying<T, F, Fut>(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: Vec<u8>,
        retries: u32,
        read: F,
    ) -> Result<Answer<T>, ModelError>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: Future<Output = Result<T, reqwest::Error>>,
    {
        let client = self.client()?;
        let attempts = AtomicU32::new(0);
        let attempt = || async {
            let number = attempts.fetch_add(1, Ordering::Relaxed) + 1;
            // Logged without userinfo or query: a proxy's password or a key
            // in `?key=` must not reach a tracing field. (A field's value is
            // made only when its event is enabled.)
            tracing::debug!(format = %self.format, url = redact_url(url).as_str(), attempt = number, "model request");
            let request = client
                .post(url)
                .headers(headers.clone())
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
            // A growing budget: each attempt after the first may take
            // twice as long as the one before (at most 8 times the
            // timeout), so a slow model is not sent the same request again
            // and again, each one generated and billed, only to be cut at
            // the same point.
            let budget = self.timeout.saturating_mul(1 << (number - 1).min(3));
            match tokio::time::timeout(budget, self.once(request, &read)).await {
                Ok(result) => result,
                Err(_) => Err(self.error(ModelErrorKind::Timeout)),
            }
        };
        let result = attempt
            .retry(self.backoff_builder().with_max_times(retries as usize))
            .sleep(tokio::time::sleep)
            .when(retryable)
            .adjust(|error: &ModelError, planned| {
                // The server's wait, when it said, instead of ours (and no
                // retry at all once ours are used up, or when it asks for
                // longer than we wait: the error then says how long).
                match error.retry_after {
                    Some(wait) if wait > MAX_RETRY_AFTER => None,
                    Some(wait) => planned.map(|_| wait),
                    None => planned,
                }
            })
            .notify(|error: &ModelError, wait| {
                tracing::warn!(
                    format = %self.format,
                    url = redact_url(url).as_str(),
                    kind = %error.kind,
                    wait_ms = wait.as_millis() as u64,
                    "model request failed; retrying"
                );
            })
            .await;
        let attempts = attempts.load(Ordering::Relaxed);
        match result {
            Ok((body, request_id)) => Ok(Answer {
                body,
                attempts,
                request_id,
            }),
            Err(mut error) => {
                error.attempts = attempts;
                Err(error)
            }
        }
    }

    /// One attempt: send, then read a success with `read` or an error body
    /// into a [`ModelError`].
    async fn once<T, F, Fut>(
        &self,
        request: reqwest::RequestBuilder,
        read: &F,
    ) -> Result<(T, Option<String>), ModelError>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: Future<Output = Result<T, reqwest::Error>>,
    {
        let response = request.send().await.map_err(|e| self.reqwest_error(e))?;
        let request_id = request_id(response.headers());
        let status = response.status();
        if status.is_success() {
            let body = read(response)
                .await
                .map_err(|e| self.reqwest_error(e).with_request_id(request_id.clone()))?;
            return Ok((body, request_id));
        }
        let retry_after = retry_after(response.headers(), SystemTime::now());
        let mut error = self
            .error(ModelErrorKind::Http {
                status: status.as_u16(),
            })
            .with_request_id(request_id);
        error.retry_after = retry_after;
        error.should_retry = should_retry(response.headers());
        // The error body is best effort: a broken one leaves the status.
        if let Ok(body) = response.bytes().await {
            error.read_error_body(&body);
        }
        Err(error)
    }

    fn reqwest_error(&self, error: reqwest::Error) -> ModelError {
        let kind = if error.is_timeout() {
            ModelErrorKind::Timeout
        } else if error.is_builder() {
            ModelErrorKind::Request
        } else {
            // Refused, reset, closed before the answer: the connection.
            ModelErrorKind::Connect
        };
        // The URL is the base URL the caller gave; leave it out anyway, in
        // case a key was put in its query.
        self.error(kind).with_source(error.without_url())
    }

    /// Reads the server-sent events of `answer` until `on_event` says the
    /// stream is done or the body ends, handing it each event's name and
    /// data. Some bytes (an event, a keep-alive comment) must arrive within
    /// the timeout of the previous ones; once `on_event` has said the
    /// answer is whole ([`Flow::Whole`]), no event for
    /// [`WHOLE_GRACE`] (or the timeout, if shorter) ends the stream as if
    /// its terminal event had come. The body is decoded as UTF-8
    /// lossily, as the SSE specification says. Returns the attempts and
    /// request id, for errors found afterwards.
    pub(crate) async fn read_events(
        &self,
        answer: Answer<reqwest::Response>,
        mut on_event: impl FnMut(&str, &str) -> Result<Flow, ModelError>,
    ) -> Result<Answer<()>, ModelError> {
        let Answer {
            body: response,
            attempts,
            request_id,
        } = answer;
        let answer = Answer {
            body: (),
            attempts,
            request_id,
        };
        let fail = |error: ModelError| answer.failed(error);
        // A body that is not an event stream is read whole: JSON is an
        // answer that is not a stream (the provider's error, which some
        // servers send with 200); anything else is read as events, for a
        // server that labels its stream wrongly.
        let content_type = content_type(&response);
        let body = if content_type
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            futures::future::Either::Left(response.bytes_stream())
        } else {
            let bytes = tokio::time::timeout(self.timeout, response.bytes())
                .await
                .map_err(|_| fail(self.error(ModelErrorKind::Timeout)))?
                .map_err(|error| fail(self.reqwest_error(error)))?;
            if let Some(error) = self.not_the_api(&content_type, &bytes) {
                return Err(fail(error));
            }
            if let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) {
                let error = ModelError::from_error_body(self.format, &value).unwrap_or_else(|| {
                    self.error(ModelErrorKind::InvalidResponse).with_message(format!(
                        "a streamed request was answered with JSON (Content-Type {content_type:?}), not an event stream"
                    ))
                });
                return Err(fail(error));
            }
            futures::future::Either::Right(futures::stream::once(std::future::ready(Ok(bytes))))
        };
        let mut events = event_body(body, self.timeout).eventsource();
        let mut whole = false;
        loop {
            let next = if whole {
                // Comments do not count here: only an event shows the
                // stream is still going somewhere.
                match tokio::time::timeout(self.timeout.min(WHOLE_GRACE), events.next()).await {
                    Ok(next) => next,
                    Err(_) => break,
                }
            } else {
                events.next().await
            };
            let Some(event) = next else { break };
            let event = event.map_err(|error| {
                let error = match error {
                    eventsource_stream::EventStreamError::Transport(BodyError::Idle) => {
                        self.error(ModelErrorKind::Timeout)
                    }
                    eventsource_stream::EventStreamError::Transport(BodyError::Transport(
                        error,
                    )) => self
                        .error(ModelErrorKind::Connect)
                        .with_source(error.without_url()),
                    other => self
                        .error(ModelErrorKind::Stream)
                        .with_source(BoxError::from(other.to_string())),
                };
                fail(error)
            })?;
            match on_event(&event.event, &event.data).map_err(fail)? {
                Flow::Done => break,
                Flow::Whole => whole = true,
                Flow::More => {}
            }
        }
        Ok(answer)
    }
}

/// The `Content-Type` of `response`, `""` when it has none.
fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

/// Where a format's base URL usually ends, for an error that points at it.
fn base_url_hint(format: WireFormat) -> &'static str {
    match format {
        WireFormat::OpenAiChat | WireFormat::OpenAiResponses => {
            "an OpenAI-compatible server's usually ends in `/v1`"
        }
        WireFormat::AnthropicMessages => {
            "Anthropic's is `https://api.anthropic.com`, without `/v1`"
        }
        WireFormat::Gemini => {
            "Gemini's is `https://generativelanguage.googleapis.com`, without a version"
        }
        _ => "is it the API's?",
    }
}

/// What one event told [`Transport::read_events`] about the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Read on.
    More,
    /// The answer is whole (the model said why it stopped); its terminal
    /// event may still come, or the server may hold the stream open.
    Whole,
    /// The stream's terminal event: stop reading.
    Done,
}

/// Whether another attempt may help: what the server said first
/// (`x-should-retry`), then what the error is. An exhausted quota
/// (`insufficient_quota`, sent with 429) is no rate limit: another attempt
/// is billed the whole prompt again, to no end.
fn retryable(error: &ModelError) -> bool {
    if let Some(should) = error.should_retry {
        return should;
    }
    let quota = |field: &Option<String>| field.as_deref() == Some("insufficient_quota");
    if quota(&error.code) || quota(&error.error_type) {
        return false;
    }
    match error.kind {
        ModelErrorKind::Http { status } => RETRYABLE_STATUSES.contains(&status),
        // A timeout here came before any response: connecting, waiting for
        // the headers, or reading a whole unstreamed answer. Nothing reached
        // the turn yet, so another attempt is as safe as after a refused
        // connection (the official SDKs retry timeouts too). A streamed
        // body that stalls times out in `read_events`, which is not retried.
        ModelErrorKind::Connect | ModelErrorKind::Timeout => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    #[cfg(any(feature = "openai", feature = "anthropic"))]
    use crate::wire::decode::Moving;

    type Read<R> = fn(R) -> Result<ModelResponse, Unread>;
    type Parse = fn(&Value) -> Result<ModelResponse, WireError>;

    /// `text` read straight ([`Transport::read_answer`]) and as a `Value`
    /// ([`Transport::parse_answer`]): the same response, or the same error.
    fn same_reading<R: DeserializeOwned>(
        format: WireFormat,
        read: Read<R>,
        parse: Parse,
        text: &[u8],
    ) {
        let transport = Transport::new(format);
        let direct = transport.read_answer("application/json", text, read, parse);
        let parsed = transport.parse_answer("application/json", text, parse);
        assert_eq!(
            format!("{direct:?}"),
            format!("{parsed:?}"),
            "{}",
            String::from_utf8_lossy(text)
        );
    }

    /// Every object member and array element of `value`, as the path of
    /// keys and indices that reaches it.
    fn paths(value: &Value, path: &mut Vec<Value>, found: &mut Vec<Vec<Value>>) {
        let children: Vec<(Value, &Value)> = match value {
            Value::Object(map) => map.iter().map(|(k, v)| (json!(k), v)).collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (json!(i), v))
                .collect(),
            _ => return,
        };
        for (step, child) in children {
            path.push(step);
            found.push(path.clone());
            paths(child, path, found);
            path.pop();
        }
    }

    fn at<'v>(value: &'v mut Value, path: &[Value]) -> &'v mut Value {
        path.iter().fold(value, |value, step| match step {
            Value::String(key) => &mut value[key.as_str()],
            _ => &mut value[step.as_u64().unwrap_or_default() as usize],
        })
    }

    /// The recorded answers of `folder`, each read both ways as recorded,
    /// with each of a sample of its values replaced by values of every
    /// JSON type, and with what only the text can hold (repeated keys,
    /// values a `Value` cannot be parsed from where the type reads
    /// nothing, an error body's members).
    fn answers_read_alike<R: DeserializeOwned>(
        format: WireFormat,
        folder: &str,
        read: Read<R>,
        parse: Parse,
    ) {
        let folder = format!(
            "{}/../tests/fixtures/wire-real/{folder}",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut recorded = 0;
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".response.json") {
                continue;
            }
            recorded += 1;
            let text = std::fs::read(&path).unwrap();
            let value: Value = serde_json::from_slice(&text).unwrap();
            let check = |text: &[u8]| same_reading(format, read, parse, text);
            check(&text);
            if value.get("error").is_none() {
                let direct =
                    read_text::<R>(&text, &ERROR_BODY_KEYS).map(|direct| read(direct.value));
                assert!(
                    matches!(direct, Some(Ok(_) | Err(Unread::Wire(_)))),
                    "{path:?} is not read straight"
                );
            }
            let mut found = Vec::new();
            paths(&value, &mut Vec::new(), &mut found);
            let stride = found.len() / 40 + 1;
            for path in found.iter().step_by(stride) {
                for replacement in [
                    json!(null),
                    json!(7),
                    json!(-1),
                    json!(1.5),
                    json!("x"),
                    json!([]),
                    json!({}),
                    json!(true),
                ] {
                    let mut changed = value.clone();
                    *at(&mut changed, path) = replacement;
                    check(changed.to_string().as_bytes());
                }
            }
            let body = value.to_string();
            let inner = &body[1..];
            let deep = format!("{}{}", "[".repeat(130), "]".repeat(130));
            for members in [
                r#""error":{"type":"overloaded_error","message":"Overloaded"},"#.to_owned(),
                r#""error":null,"#.to_owned(),
                r#""error":"busy","#.to_owned(),
                r#""type":"error","#.to_owned(),
                r#""error":{"message":"m"},"error":null,"#.to_owned(),
                r#""error":null,"error":{"message":"m"},"#.to_owned(),
                format!(r#""zz_ignored":{deep},"#),
                r#""zz_ignored":"\ud800","#.to_owned(),
                r#""zz_ignored":1e400,"#.to_owned(),
                r#""zz_ignored":[1,{"a":"\u00e9\n"}],"#.to_owned(),
            ] {
                check(format!("{{{members}{inner}").as_bytes());
            }
            // A key repeated: the last one is what a `Value` holds.
            if let Some(first) = value.as_object().and_then(|map| map.keys().next()) {
                check(format!(r#"{{"{first}":null,{inner}"#).as_bytes());
                check(
                    format!(
                        "{{{inner},\"{first}\":null}}",
                        inner = &body[1..body.len() - 1]
                    )
                    .as_bytes(),
                );
            }
            let mut bad_utf8 = b"{\"zz_ignored\":\"\xff\",".to_vec();
            bad_utf8.extend_from_slice(inner.as_bytes());
            check(&bad_utf8);
            for broken in [
                &body[..body.len() / 2],
                "[]",
                "\"text\"",
                "",
                "<html></html>",
                "{}",
            ] {
                check(broken.as_bytes());
            }
            check(format!("{body} trailing").as_bytes());
        }
        assert!(recorded > 0, "no recorded answers in {folder}");
    }

    #[cfg(feature = "openai")]
    #[test]
    fn chat_completions_answers_read_straight_as_through_a_value() {
        answers_read_alike(
            WireFormat::OpenAiChat,
            "openai",
            |response| crate::wire::openai::read_response(response).map_err(Unread::Wire),
            crate::wire::openai::parse_response,
        );
    }

    #[cfg(feature = "openai")]
    #[test]
    fn responses_answers_read_straight_as_through_a_value() {
        answers_read_alike(
            WireFormat::OpenAiResponses,
            "openai-responses",
            |response| crate::wire::responses::read_response(Moving, response),
            crate::wire::responses::parse_response,
        );
    }

    #[cfg(feature = "anthropic")]
    #[test]
    fn anthropic_answers_read_straight_as_through_a_value() {
        for folder in ["anthropic", "anthropic-stream"] {
            answers_read_alike(
                WireFormat::AnthropicMessages,
                folder,
                |response| crate::wire::anthropic::read_response(Moving, response),
                crate::wire::anthropic::parse_response,
            );
        }
    }

    #[cfg(feature = "gemini")]
    #[test]
    fn gemini_answers_read_straight_as_through_a_value() {
        answers_read_alike(
            WireFormat::Gemini,
            "gemini",
            |body: Value| crate::wire::gemini::parse_response(&body).map_err(Unread::Wire),
            crate::wire::gemini::parse_response,
        );
    }
}
