//! [`Replayer`]: a [`Model`] that serves a cassette's exchanges, each only
//! to a request that matches the one it answered under a [`Strictness`],
//! first in, first out among equal requests.

use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;

use crate::cassette::difference::{first_difference, without_volatile};
use crate::cassette::{Answer, Cassette, DeltaPiece, Difference, ExchangeRequest, Recorder};
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
    /// Only the text of the last user message must be equal (a difference
    /// is named by the path `last_user_message`).
    LastUserMessage,
}

/// Why a request got no recorded answer: the error a [`Replayer`]
/// returns, as the source of a [`ModelError`] of kind
/// [`Request`](ModelErrorKind::Request).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayMismatch {
    /// The request matches no recorded exchange left; shown is how it
    /// differs from the earliest one not yet served, `exchange` (counted
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

/// Serves a cassette offline: each request gets the response (or the
/// error) of the first recorded exchange not yet served whose request
/// matches it under the [`Strictness`] (first in, first out among equal
/// requests); a streamed response's deltas reach the turn's events first,
/// in order (at their recorded times with
/// [`at_recorded_speed`](Self::at_recorded_speed)).
///
/// Matching by content, not position, is what lets a replay of agents
/// that asked their models at once pass: their requests reach the
/// replayer in another order than the recorder, and each still gets its
/// own answer. A sequential turn is served in its recorded order.
///
/// A request that matches no exchange left gets an error naming its first
/// difference from the earliest exchange not yet served, and uses none up.
/// [`remaining`](Self::remaining) tells how many were not served, so a
/// test can check a replay used them all.
pub struct Replayer {
    cassette: Cassette,
    strictness: Strictness,
    paced: bool,
    normalize: Option<Normalize>,
    /// The recorded requests as compared, made at the first request (once
    /// the normaliser is set).
    keys: OnceLock<Vec<Value>>,
    /// Which exchanges were served.
    served: Mutex<Vec<bool>>,
    /// The real model that answers past the cassette's end, recording.
    new_episodes: Option<Recorder<Box<dyn Model>>>,
}

/// A user's normaliser of requests before they are compared.
type Normalize = Box<dyn Fn(&mut ExchangeRequest) + Send + Sync>;

impl Replayer {
    /// A replayer of `cassette` under `strictness`.
    pub fn new(cassette: Cassette, strictness: Strictness) -> Self {
        let served = Mutex::new(vec![false; cassette.exchanges.len()]);
        Self {
            cassette,
            strictness,
            paced: false,
            normalize: None,
            keys: OnceLock::new(),
            served,
            new_episodes: None,
        }
    }

    /// Past the cassette's last exchange, asks `model` for real and
    /// records the exchange: appended to the cassette and saved at `path`
    /// (VCR's "new episodes"). A request that differs from every recorded
    /// one not yet served is still refused: only what is missing once all
    /// were served is recorded. So with agents asking at once, whether a
    /// new request is recorded or refused depends on whether the others
    /// have used up theirs: record such a run afresh with a [`Recorder`].
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

    /// Runs `normalize` on both the recorded and the sent request before
    /// they are compared (and before the [`Strictness`] applies): what a
    /// tool returns that differs from run to run (an id it minted at
    /// random, the live state it read) made alike, which
    /// [`Strictness::IgnoreVolatile`] cannot know. The cassette and the
    /// request the turn sent are left as they are.
    ///
    /// ```
    /// use agent_loop_providers::cassette::{Cassette, Replayer, Strictness};
    /// use agent_loop_core::conversation::{ContentPart, Message};
    ///
    /// // Every tool result's text that starts "order " is one order.
    /// let replayer = Replayer::new(Cassette::new(), Strictness::Exact).normalizing(|request| {
    ///     for message in &mut request.conversation {
    ///         if let Message::Tool(result) = message {
    ///             for part in &mut result.content {
    ///                 if let ContentPart::Text(text) = part
    ///                     && text.text.starts_with("order ")
    ///                 {
    ///                     text.text = "order (any)".to_owned();
    ///                 }
    ///             }
    ///         }
    ///     }
    /// });
    /// # drop(replayer);
    /// ```
    pub fn normalizing(
        mut self,
        normalize: impl Fn(&mut ExchangeRequest) + Send + Sync + 'static,
    ) -> Self {
        self.normalize = Some(Box::new(normalize));
        // The recorded side is compared as normalised from now on.
        self.keys = OnceLock::new();
        self
    }

    /// How many recorded exchanges are left to serve.
    pub fn remaining(&self) -> usize {
        let served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        served.iter().filter(|served| !**served).count()
    }

    /// `request` as this replayer compares it: normalised, then under its
    /// strictness, as JSON.
    fn key(&self, request: &ExchangeRequest) -> Value {
        let normalized;
        let request = match &self.normalize {
            Some(normalize) => {
                let mut copy = request.clone();
                normalize(&mut copy);
                normalized = copy;
                &normalized
            }
            None => request,
        };
        match self.strictness {
            Strictness::Exact => serde_json::to_value(request).unwrap_or(Value::Null),
            Strictness::IgnoreVolatile => {
                without_volatile(&serde_json::to_value(request).unwrap_or(Value::Null))
            }
            Strictness::LastUserMessage => {
                let last = request
                    .conversation
                    .iter()
                    .rev()
                    .find_map(|message| match message {
                        Message::User(_) => Some(Value::String(message.text())),
                        _ => None,
                    })
                    .unwrap_or(Value::Null);
                serde_json::json!({ "last_user_message": last })
            }
        }
    }

    /// The index of the exchange that answers `sent`, now marked served:
    /// `Ok(None)` past the end with new episodes on.
    fn serve(&self, sent: &ExchangeRequest) -> Result<Option<usize>, ReplayMismatch> {
        let keys = self.keys.get_or_init(|| {
            self.cassette
                .exchanges
                .iter()
                .map(|exchange| self.key(&exchange.request))
                .collect()
        });
        let sent = self.key(sent);
        let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        let mut unserved = (0..keys.len()).filter(|&index| !served[index]).peekable();
        let Some(&earliest) = unserved.peek() else {
            return match self.new_episodes {
                Some(_) => Ok(None),
                None => Err(ReplayMismatch::Exhausted {
                    recorded: keys.len(),
                }),
            };
        };
        match unserved.find(|&index| keys[index] == sent) {
            Some(index) => {
                served[index] = true;
                Ok(Some(index))
            }
            None => Err(ReplayMismatch::Differs {
                exchange: earliest,
                // Unequal keys always differ somewhere; the fallback is the
                // whole request.
                difference: first_difference(&keys[earliest], &sent).unwrap_or_else(|| {
                    Difference {
                        path: "(top)".to_owned(),
                        recorded: String::new(),
                        sent: String::new(),
                    }
                }),
            }),
        }
    }
}

#[async_trait]
impl Model for Replayer {
    /// Errors: a recorded error, as it was recorded
    /// ([`RecordedFailure::to_error`](crate::cassette::RecordedFailure::to_error));
    /// [`ModelErrorKind::Request`] with a [`ReplayMismatch`] source when the
    /// request matches no recorded one left, or every exchange was served (without [`new_episodes`](Self::new_episodes));
    /// past the end with it, the real model's errors, and the recorder's.
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let served = self
            .serve(&ExchangeRequest::of(&request))
            .map_err(|mismatch| {
                ModelError::new(ModelErrorKind::Request)
                    .with_message(mismatch.to_string())
                    .with_source(mismatch)
            })?;
        let Some(exchange) = served.and_then(|index| self.cassette.exchanges.get(index)) else {
            // A new episode: no lock is held while the model answers.
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
        match &exchange.answer {
            Answer::Response(response) => Ok(response.clone()),
            Answer::Error(error) => Err(error.to_error()),
        }
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
