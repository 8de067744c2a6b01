//! [`Replayer`]: a [`Model`] that serves a cassette's exchanges in order,
//! each only to the request it answered, under a [`Strictness`].

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;

use crate::cassette::difference::{first_difference, without_volatile};
use crate::cassette::{Cassette, DeltaPiece, Difference, ExchangeRequest, Recorder};
use agent_loop_core::conversation::{Message, ModelResponse};
use agent_loop_core::turn::{
    Model, ModelDescription, ModelError, ModelErrorKind, ModelRequest, TurnEvent,
};

/// How closely a request must match the recorded one to get its answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Strictness {
    /// Equal in every field: the conversation, the instructions, the
    /// tools, the mode and the output.
    #[default]
    Exact,
    /// Equal once every UUID in a string (hyphenated, or 32 hex digits) is
    /// replaced by its ordinal, counted in order of first appearance, and
    /// every RFC 3339 date-time by one placeholder: the tool call ids a
    /// turn mints from its session, which another session mints otherwise,
    /// and the times a tool writes may differ; where each id is used may
    /// not.
    IgnoreVolatile,
    /// Only the text of the last user message must be equal.
    LastUserMessage,
}

/// Why a request got no recorded answer: the error a [`Replayer`]
/// returns, as the source of a [`ModelError`] of kind
/// [`Request`](ModelErrorKind::Request).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayMismatch {
    /// The request differs from the recorded one at `exchange` (counted
    /// from 0).
    #[error("request {exchange} differs from the recorded one: {difference}")]
    Differs {
        /// Which exchange.
        exchange: usize,
        /// The first difference.
        difference: Difference,
    },
    /// Every recorded exchange was served; this request is one more.
    #[error("the cassette has {recorded} exchanges and all were served")]
    Exhausted {
        /// How many the cassette holds.
        recorded: usize,
    },
}

/// Serves a cassette offline: the `n`-th request gets the `n`-th recorded
/// response if it matches the recorded request under the [`Strictness`];
/// a streamed response's deltas reach the turn's events first, in order
/// (at their recorded times with [`at_recorded_speed`](Self::at_recorded_speed)).
/// A request that does not match gets an error naming the first
/// difference, and does not use up the exchange.
pub struct Replayer {
    cassette: Cassette,
    strictness: Strictness,
    paced: bool,
    /// The next exchange to serve.
    next: Mutex<usize>,
    /// The real model that answers past the cassette's end, recording.
    new_episodes: Option<Recorder<Box<dyn Model>>>,
}

impl Replayer {
    /// A replayer of `cassette` under `strictness`.
    pub fn new(cassette: Cassette, strictness: Strictness) -> Self {
        Self {
            cassette,
            strictness,
            paced: false,
            next: Mutex::new(0),
            new_episodes: None,
        }
    }

    /// Past the cassette's last exchange, asks `model` for real and
    /// records the exchange: appended to the cassette and saved at `path`
    /// (VCR's "new episodes"). A request that differs from a recorded one
    /// is still refused: only what is missing is recorded.
    pub fn new_episodes(mut self, model: impl Model + 'static, path: impl AsRef<Path>) -> Self {
        let model: Box<dyn Model> = Box::new(model);
        self.new_episodes = Some(Recorder::appending(model, path, self.cassette.clone()));
        self
    }

    /// Sends each delta at the time it was recorded, after the request
    /// began (a stream that took 2 s takes 2 s again).
    pub fn at_recorded_speed(mut self) -> Self {
        self.paced = true;
        self
    }

    /// How many recorded exchanges are left to serve.
    pub fn remaining(&self) -> usize {
        let next = *self.next.lock().unwrap_or_else(PoisonError::into_inner);
        self.cassette.exchanges.len().saturating_sub(next)
    }

    /// The first difference of `sent` from `recorded` under this
    /// replayer's strictness.
    fn difference(&self, recorded: &ExchangeRequest, sent: &ExchangeRequest) -> Option<Difference> {
        let value =
            |request: &ExchangeRequest| serde_json::to_value(request).unwrap_or(Value::Null);
        match self.strictness {
            Strictness::Exact => first_difference(&value(recorded), &value(sent)),
            Strictness::IgnoreVolatile => first_difference(
                &without_volatile(&value(recorded)),
                &without_volatile(&value(sent)),
            ),
            Strictness::LastUserMessage => {
                let last = |request: &ExchangeRequest| {
                    request
                        .conversation
                        .iter()
                        .rev()
                        .find_map(|message| match message {
                            Message::User(_) => Some(Value::String(message.text())),
                            _ => None,
                        })
                        .unwrap_or(Value::Null)
                };
                let (a, b) = (last(recorded), last(sent));
                (a != b).then(|| Difference {
                    path: "last user message".to_owned(),
                    recorded: a.to_string(),
                    sent: b.to_string(),
                })
            }
        }
    }
}

#[async_trait]
impl Model for Replayer {
    /// Errors: [`ModelErrorKind::Request`] with a [`ReplayMismatch`]
    /// source when the request does not match the next recorded one, or
    /// every exchange was served (without [`new_episodes`](Self::new_episodes));
    /// past the end with it, the real model's errors, and the recorder's.
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let sent = ExchangeRequest::of(&request);
        let exchange = {
            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
            let mismatch = match self.cassette.exchanges.get(*next) {
                None if self.new_episodes.is_some() => None,
                None => Some(ReplayMismatch::Exhausted {
                    recorded: self.cassette.exchanges.len(),
                }),
                Some(exchange) => self.difference(&exchange.request, &sent).map(|difference| {
                    ReplayMismatch::Differs {
                        exchange: *next,
                        difference,
                    }
                }),
            };
            if let Some(mismatch) = mismatch {
                return Err(ModelError::new(ModelErrorKind::Request)
                    .with_message(mismatch.to_string())
                    .with_source(mismatch));
            }
            *next += 1;
            self.cassette.exchanges.get(*next - 1)
        };
        let Some(exchange) = exchange else {
            // A new episode: the lock is not held while the model answers.
            return match &self.new_episodes {
                Some(recorder) => recorder.respond(request).await,
                None => Err(ModelError::new(ModelErrorKind::Request)),
            };
        };
        let started = Instant::now();
        for delta in &exchange.deltas {
            if self.paced {
                let at = Duration::from_millis(delta.after_ms);
                tokio::time::sleep(at.saturating_sub(started.elapsed())).await;
            }
            request.events.emit(|| match &delta.piece {
                DeltaPiece::Text { text } => TurnEvent::TextDelta { text: text.clone() },
                DeltaPiece::Reasoning { text } => TurnEvent::ReasoningDelta { text: text.clone() },
            });
        }
        Ok(exchange.response.clone())
    }

    /// The recorded model's, from the cassette's first exchange.
    fn description(&self) -> ModelDescription {
        self.cassette
            .exchanges
            .first()
            .map(|exchange| exchange.model.clone())
            .unwrap_or_default()
    }
}
