//! The send path every HTTP model shares: check the request, build the
//! body, post it, and read the answer whole or assemble its stream,
//! mapping every failure to a [`ModelError`]. What differs between the
//! providers is their [`ProviderApi`](super::http_model::ProviderApi):
//! its format, endpoint, headers, body, checks, parser and stream
//! assembler.

use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::error::HttpModelError;
use super::http::Flow;
use super::http_model::{HttpModel, Provider};
use crate::wire::encode::to_value;
use crate::wire::stream::StreamDelta;
use crate::wire::{Dropped, WireError};
use agent_loop_core::conversation::ModelResponse;
use agent_loop_core::turn::{ModelError, ModelErrorKind};
use agent_loop_core::turn::{ModelRequest, TurnEvent, TurnEvents};

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

/// Sends `request` to `model` and reads its answer: unstreamed, the whole
/// body parsed; streamed, each event's text and reasoning sent as turn
/// events as it arrives, and the assembled response returned.
///
/// Every error it returns is scrubbed of the model's secrets (the
/// sensitive header values, the API key alone included): a provider or
/// proxy error body that echoes the key does not put it into the error's
/// `Display`.
pub(crate) async fn send<P: Provider>(
    model: &HttpModel<P>,
    request: ModelRequest<'_>,
) -> Result<ModelResponse, ModelError> {
    send_unscrubbed(model, request).await.map_err(|mut error| {
        if let Ok(headers) = model.headers() {
            for secret in secrets(&headers) {
                error.scrub(&secret);
            }
        }
        error
    })
}

/// The secrets of `headers`: each sensitive value, and its last word (the
/// key of `Bearer <key>`), when long enough to be a key.
fn secrets(headers: &HeaderMap) -> Vec<String> {
    let mut secrets = Vec::new();
    for value in headers.values().filter(|value| value.is_sensitive()) {
        let Ok(value) = value.to_str() else { continue };
        for secret in [value, value.rsplit(' ').next().unwrap_or(value)] {
            if secret.len() >= 8 && !secrets.iter().any(|known| known == secret) {
                secrets.push(secret.to_owned());
            }
        }
    }
    secrets
}

/// The bytes `model` posts for `request`: the request checked (the
/// model's own checks, values nested too deeply, what its export leaves
/// out), its body built and serialised in one pass; or the error that
/// refuses it unsent.
pub(crate) fn body_bytes<P: Provider>(
    model: &HttpModel<P>,
    request: &ModelRequest<'_>,
) -> Result<Vec<u8>, ModelError> {
    P::check(model, request)?;
    let settings = &model.settings;
    settings.check_depth(P::FORMAT, request)?;
    let body = model.body(request);
    settings.check_dropped(P::FORMAT, &body.dropped)?;
    serde_json::to_vec(&body)
        .map_err(|e| ModelError::of_format(P::FORMAT, ModelErrorKind::Request).with_source(e))
}

async fn send_unscrubbed<P: Provider>(
    model: &HttpModel<P>,
    request: ModelRequest<'_>,
) -> Result<ModelResponse, ModelError> {
    let body = body_bytes(model, &request)?;
    let settings = &model.settings;
    let url = model.url();
    let mut headers = model.headers()?;
    let transport = &model.transport;
    if !settings.stream {
        return transport
            .post_response(&url, &headers, body, P::read_response, P::parse_response)
            .await;
    }
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    // An error event before anything reached the turn's events (Anthropic's
    // `overloaded_error` right after HTTP 200, an OpenRouter rate limit) is
    // retried like the same error as an HTTP status: nothing was shown, so
    // nothing is shown twice. Once text or reasoning went out, it is not.
    let mut delays = transport.backoff();
    let mut earlier_attempts = 0;
    loop {
        let retries = transport.max_retries.saturating_sub(earlier_attempts);
        let answer = transport
            .post_streaming(&url, &headers, body.clone(), retries)
            .await;
        let answer = answer.map_err(|mut error| {
            error.attempts += earlier_attempts;
            error
        })?;
        let attempts = answer.attempts;
        let mut stream = P::Stream::default();
        let mut shown = false;
        let read = transport
            .read_events(answer, |event, data| {
                let (deltas, done) = stream
                    .read_event(event, data)
                    .map_err(|error| ModelError::stream(P::FORMAT, error))?;
                shown |= emit(request.events, deltas);
                Ok(if done {
                    Flow::Done
                } else if stream.is_whole() {
                    Flow::Whole
                } else {
                    Flow::More
                })
            })
            .await;
        let finished = read.and_then(|answer| {
            stream
                .finish()
                .map_err(|error| answer.failed(ModelError::stream(P::FORMAT, error)))
        });
        match finished {
            Err(mut error) => {
                error.attempts += earlier_attempts;
                // One budget of retries for the whole request: those of
                // its HTTP exchanges and those of its streams.
                let retries_left = transport.max_retries > error.attempts.saturating_sub(1);
                let delay = (!shown && retries_left && retryable_stream_error(&error))
                    .then(|| delays.next())
                    .flatten();
                let Some(delay) = delay else {
                    return Err(error);
                };
                tracing::warn!(
                    format = %P::FORMAT,
                    kind = %error.kind,
                    wait_ms = delay.as_millis() as u64,
                    "the stream failed before any content; retrying"
                );
                earlier_attempts += attempts;
                tokio::time::sleep(delay).await;
            }
            ok => return ok,
        }
    }
}

/// An error a stream reported before any content that another attempt may
/// not meet: the provider's overload, rate limit or server error (by its
/// type, or an HTTP-status code such as OpenRouter's `429`), never a
/// refused request (`invalid_request_error`, Groq's `tool_use_failed`) or
/// an exhausted quota.
fn retryable_stream_error(error: &ModelError) -> bool {
    if error.kind != ModelErrorKind::Stream {
        return false;
    }
    let retryable = |name: &str| {
        matches!(
            name,
            "overloaded_error"
                | "rate_limit_error"
                | "rate_limit_exceeded"
                | "api_error"
                | "server_error"
                | "internal_server_error"
                | "service_unavailable"
                | "timeout_error"
                // Gemini's statuses (google.rpc.Code names).
                | "UNAVAILABLE"
                | "INTERNAL"
                | "DEADLINE_EXCEEDED"
                | "RESOURCE_EXHAUSTED"
        ) || name
            .parse::<u16>()
            .is_ok_and(|status| status == 429 || (500..600).contains(&status))
    };
    [&error.error_type, &error.code]
        .into_iter()
        .flatten()
        .any(|name| retryable(name))
}

/// Sends streamed pieces as turn events: text (and a refusal, which is
/// the model's words too) as `TextDelta`, reasoning as `ReasoningDelta`.
/// Returns whether any was sent.
fn emit(events: &TurnEvents, deltas: Vec<StreamDelta>) -> bool {
    let mut sent = false;
    for delta in deltas {
        match delta {
            StreamDelta::Text(text) | StreamDelta::Refusal(text) => {
                events.emit(|| TurnEvent::TextDelta { text });
                sent = true;
            }
            StreamDelta::Reasoning(text) => {
                events.emit(|| TurnEvent::ReasoningDelta { text });
                sent = true;
            }
            _ => {}
        }
    }
    sent
}
