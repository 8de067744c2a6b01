//! [`Recorder`]: a [`Model`] that runs another and keeps each exchange in
//! a cassette file.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;

use crate::cassette::{
    Answer, Cassette, CassetteError, Delta, DeltaPiece, Exchange, ExchangeRequest, RecordedFailure,
};
use agent_loop_core::conversation::ModelResponse;
use agent_loop_core::turn::{
    Model, ModelDescription, ModelError, ModelErrorKind, ModelRequest, TurnEvent, TurnEvents,
};

/// Runs `model` for real and appends every exchange to the cassette at
/// `path`, saved (atomically, see [`Cassette::save`]) after each one, so a
/// crash loses at most the request in flight. A streamed response's text
/// and reasoning deltas are recorded with their times and passed on to the
/// turn's events as they arrive.
///
/// A failed request is recorded too, as its [`RecordedFailure`], and passed
/// on: a turn that recovered from it (compacted a full context window and
/// asked again, told the model its tool call could not be read) replays
/// the same way. The cassette starts empty: an existing file at `path` is
/// replaced at the first save.
///
/// What it writes is the provider-neutral request and response and the
/// model's [`description`](Model::description): no endpoint, header or
/// key, which the crate's models keep to themselves.
pub struct Recorder<M> {
    model: M,
    path: PathBuf,
    cassette: Mutex<Cassette>,
}

impl<M: Model> Recorder<M> {
    /// A recorder of `model` into the cassette at `path`.
    pub fn new(model: M, path: impl AsRef<Path>) -> Self {
        Self::appending(model, path, Cassette::new())
    }

    /// A recorder that appends to `cassette` (one loaded from `path`, say)
    /// and saves it whole at `path`.
    pub fn appending(model: M, path: impl AsRef<Path>, cassette: Cassette) -> Self {
        Self {
            model,
            path: path.as_ref().to_owned(),
            cassette: Mutex::new(cassette),
        }
    }

    /// The exchanges recorded so far.
    pub fn cassette(&self) -> Cassette {
        self.cassette
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Saves the cassette as recorded so far (each exchange already saved
    /// it; this writes it once more, e.g. an empty one before any request).
    ///
    /// Errors: [`CassetteError::Io`] as [`Cassette::save`].
    pub fn save(&self) -> Result<(), CassetteError> {
        self.cassette().save(&self.path)
    }
}

#[async_trait]
impl<M: Model> Model for Recorder<M> {
    /// Errors: the model's own (recorded); and [`ModelErrorKind::Other`]
    /// when the cassette could not be saved (the source is the
    /// [`CassetteError`]), the model's answer then not handed on: a
    /// recording that is not kept should not pass for one.
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let (events, mut received) = TurnEvents::channel();
        let mut inner = request;
        inner.events = &events;
        let started = Instant::now();
        let mut deltas = Vec::new();
        let keep = |event: TurnEvent, deltas: &mut Vec<Delta>| {
            let after_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let piece = match &event {
                TurnEvent::TextDelta { text } => Some(DeltaPiece::Text { text: text.clone() }),
                TurnEvent::ReasoningDelta { text } => {
                    Some(DeltaPiece::Reasoning { text: text.clone() })
                }
                _ => None,
            };
            if let Some(piece) = piece {
                deltas.push(Delta { after_ms, piece });
            }
            request.events.emit(|| event);
        };
        let respond = self.model.respond(inner);
        tokio::pin!(respond);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(event) = received.recv() => keep(event, &mut deltas),
                outcome = &mut respond => break outcome,
            }
        };
        while let Ok(event) = received.try_recv() {
            keep(event, &mut deltas);
        }
        let exchange = Exchange {
            model: self.model.description(),
            request: ExchangeRequest::of(&request),
            answer: match &outcome {
                Ok(response) => Answer::Response(response.clone()),
                Err(error) => Answer::Error(RecordedFailure::of(error)),
            },
            deltas,
        };
        // Held while the file is written, so that saves of exchanges that
        // end at once land in order; an exchange is kept only once saved.
        // (Blocking file I/O, short: a cassette is small.)
        let mut cassette = self.cassette.lock().unwrap_or_else(PoisonError::into_inner);
        cassette.exchanges.push(exchange);
        if let Err(error) = cassette.save(&self.path) {
            cassette.exchanges.pop();
            return Err(ModelError::new(ModelErrorKind::Other)
                .with_message("the exchange could not be recorded")
                .with_source(error));
        }
        outcome
    }

    fn description(&self) -> ModelDescription {
        self.model.description()
    }

    fn prices(&self) -> Option<agent_loop_core::conversation::Prices> {
        self.model.prices()
    }

    fn context_window(&self) -> Option<u32> {
        self.model.context_window()
    }
}
