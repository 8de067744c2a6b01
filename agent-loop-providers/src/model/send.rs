//! The send path every HTTP model shares: check the request, build the
//! body, post it, and read the answer whole or assemble its stream,
//! mapping every failure to a [`ModelError`]. What differs between the
//! providers is their [`ProviderApi`](super::http_model::ProviderApi):
//! its format, endpoint, headers, body, checks, parser and stream
//! assembler. The two ways in are here too: the [`Model`] impl of
//! [`HttpModel`], and its `request_body_bytes`.

use async_trait::async_trait;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};

use super::body::StreamAssembler;
use super::error::HttpModelError;
use super::http::Flow;
use super::http_model::{HttpModel, Provider};
use crate::wire::stream::StreamDelta;
use agent_loop_core::conversation::ModelResponse;
use agent_loop_core::turn::{Model, ModelDescription, ModelRequest, TurnEvent, TurnEvents};
use agent_loop_core::turn::{ModelError, ModelErrorKind};

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
/// model's own checks, its output limit against the catalog's facts,
/// values nested too deeply, what its export leaves out), its body built and serialised in one pass; or the error that
/// refuses it unsent.
pub(crate) fn body_bytes<P: Provider>(
    model: &HttpModel<P>,
    request: &ModelRequest<'_>,
) -> Result<Vec<u8>, ModelError> {
    P::check(model, request)?;
    // The catalog is read only for a request that sets an output limit.
    if let Some((setting, max_tokens)) = model.provider.max_output_tokens()
        && let Some(facts) = model.catalog_facts()
    {
        super::catalog_checks::check_output_limit(P::FORMAT, facts, setting, max_tokens)?;
    }
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
                let (deltas, done) = stream.read_event(event, data).map_err(|error| {
                    // The event's own fields the wire error does not keep
                    // (Groq's `code` and `failed_generation`).
                    let error = ModelError::stream(P::FORMAT, error);
                    if event == "error" || data.contains("\"error\"") {
                        error.with_error_event_fields(data)
                    } else {
                        error
                    }
                })?;
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

impl<P: Provider> HttpModel<P> {
    /// The bytes this model posts as the body of `request`: what
    /// [`request_body`](Self::request_body) shows, serialised (its keys
    /// maybe in another order), checked as a request is before it is sent;
    /// for logging a request, or checking it in a test, as it goes out.
    ///
    /// The conversation is written straight from the request into the
    /// bytes, without a copy of it (Gemini's body is built as a JSON value
    /// first).
    ///
    /// # Errors
    ///
    /// The [`ModelError`] of kind
    /// [`Request`](agent_loop_core::turn::ModelErrorKind::Request) the
    /// request would fail with, unsent: for every model, a value nested
    /// deeper than 128 levels, or, with
    /// [`refuse_dropped`](Self::refuse_dropped), a conversation holding
    /// what this format cannot carry (without it, that is logged as a
    /// request logs it); and what each provider refuses:
    ///
    /// | model | also refused |
    /// | --- | --- |
    /// | `OpenAiModel`, `OpenAiResponsesModel` | a native output strict mode cannot express (see their `strict_output`) |
    /// | `AnthropicModel` | a native output Anthropic's structured outputs cannot express; a thinking setting or a temperature the API refuses for this model or in this request (see its `thinking_budget`, `effort` and "Thinking and sampling by model") |
    /// | `GeminiModel` | nothing more |
    ///
    /// ```
    /// use agent_loop_core::conversation::Message;
    /// use agent_loop_core::turn::ModelRequest;
    /// use agent_loop_providers::model::{HttpModel, Provider};
    ///
    /// /// The bytes `model` posts for one question, read back.
    /// fn sent<P: Provider>(model: &HttpModel<P>) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    ///     let conversation = [Message::user("Weather in Oslo?")];
    ///     let request = ModelRequest::new(&conversation).instructions("Be brief.");
    ///     let sent: serde_json::Value = serde_json::from_slice(&model.request_body_bytes(&request)?)?;
    ///     assert_eq!(sent, model.request_body(&request));
    ///     Ok(sent)
    /// }
    ///
    /// #[cfg(feature = "openai")]
    /// {
    ///     use agent_loop_providers::model::{OpenAiModel, OpenAiResponsesModel};
    ///     assert_eq!(sent(&OpenAiModel::new("gpt-4.1"))?["messages"][0]["content"], "Be brief.");
    ///     assert_eq!(sent(&OpenAiResponsesModel::new("gpt-5"))?["instructions"], "Be brief.");
    /// }
    /// #[cfg(feature = "anthropic")]
    /// assert_eq!(
    ///     sent(&agent_loop_providers::model::AnthropicModel::new("claude-sonnet-4-5"))?["system"],
    ///     "Be brief."
    /// );
    /// #[cfg(feature = "gemini")]
    /// assert_eq!(
    ///     sent(&agent_loop_providers::model::GeminiModel::new("gemini-2.5-flash"))?["systemInstruction"]["parts"][0]["text"],
    ///     "Be brief."
    /// );
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn request_body_bytes(&self, request: &ModelRequest<'_>) -> Result<Vec<u8>, ModelError> {
        body_bytes(self, request)
    }
}

#[async_trait]
impl<P: Provider> Model for HttpModel<P> {
    /// The model's name and its provider's format:
    /// [`OpenAiChat`](agent_loop_core::conversation::WireFormat::OpenAiChat) (`OpenAiModel`),
    /// [`OpenAiResponses`](agent_loop_core::conversation::WireFormat::OpenAiResponses)
    /// (`OpenAiResponsesModel`),
    /// [`AnthropicMessages`](agent_loop_core::conversation::WireFormat::AnthropicMessages)
    /// (`AnthropicModel`) or [`Gemini`](agent_loop_core::conversation::WireFormat::Gemini)
    /// (`GeminiModel`).
    fn description(&self) -> ModelDescription {
        ModelDescription::new(self.endpoint.model.clone(), P::FORMAT)
    }

    /// The prices of [`catalog_facts`](HttpModel::catalog_facts): the
    /// model catalog's for the model at its provider's own endpoint, or
    /// those given with [`facts`](HttpModel::facts).
    fn prices(&self) -> Option<agent_loop_core::conversation::Prices> {
        self.catalog_facts()?.prices
    }

    /// The input tokens a request may hold, from the facts
    /// [`prices`](Self::prices) finds: the catalog's largest prompt of the
    /// model ([`max_input_tokens`](crate::catalog::ModelFacts::max_input_tokens))
    /// when it has one, else its context window less the output the
    /// request asks room for (`max_tokens`, `max_output_tokens`): Anthropic,
    /// and OpenAI's Chat Completions with `max_tokens`, refuse a prompt
    /// that leaves the answer no room in the window.
    fn context_window(&self) -> Option<u32> {
        let facts = self.catalog_facts()?;
        if let Some(largest) = facts.max_input_tokens {
            return Some(largest);
        }
        let answer = self
            .provider
            .max_output_tokens()
            .map_or(0, |(_, tokens)| tokens);
        facts
            .context_window?
            .checked_sub(answer)
            .filter(|room| *room > 0)
    }

    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let mut response = send(self, request).await?;
        // Every provider-specific piece of the answer records where it
        // came from, so that it goes back only there.
        let target = &self.endpoint.target;
        response
            .message
            .record_origin(target.provider.as_deref(), target.model.as_deref());
        Ok(response)
    }
}
