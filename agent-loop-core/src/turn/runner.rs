//! The in-process driver of a turn: [`run_turn`](Definition::run_turn)
//! steps the turn's state machine ([`TurnSteps`]), asking the model and
//! running each batch here, under the turn's token. The turn's rules are
//! the state machine's; this only does what each step asks.

use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span};

use crate::bind::Bound;
use crate::conversation::{Conversation, ModelResponse};
use crate::definition::Definition;
use crate::support::cancel::until_cancelled;
use crate::support::panic::{Contained, panic_message};
use crate::turn::context::TurnContext;
use crate::turn::{
    Model, ModelError, ModelRequest, Step, TurnError, TurnEvents, TurnOptions, TurnOutcome,
    TurnSteps,
};

impl Definition<Bound> {
    /// Runs one turn: asks `model` and runs the tool calls it asks for, in
    /// the current mode, until it gives a final answer.
    ///
    /// - `model`: the language model each request of the turn goes to.
    /// - `conversation`: the history the turn goes on from; the turn appends
    ///   the assistant messages, every tool result and the final answer to it.
    /// - `options`: a `&CancellationToken` (the short form) or
    ///   [`TurnOptions`]: the token, where events go, and the structured
    ///   output the turn must end in.
    ///
    /// Returns a [`TurnOutcome`]: how the turn ended (a final answer, the
    /// structured output, interrupted by the token, or paused for a decision
    /// from outside), its stats, and where its messages are in `conversation`.
    /// A call that fails (an unknown tool, invalid arguments, a tool error or
    /// panic) is no error of the turn: the model reads its error result, and
    /// the turn goes on.
    ///
    /// Errors: a [`TurnError`] when a batch would exceed `iterations` or
    /// `calls`, a budget is reached, a resume is refused, the model request
    /// fails, no structured output came, or the conversation handed in is
    /// malformed; each is described at the end.
    ///
    /// Must run inside a Tokio runtime. With unlimited iterations or calls,
    /// bound the turn yourself (a timeout, or cancelling the token).
    ///
    #[doc = include_str!("../../docs/run-turn.md")]
    pub async fn run_turn<'o, M: Model + ?Sized>(
        &self,
        model: &M,
        conversation: &mut Conversation,
        options: impl Into<TurnOptions<'o>>,
    ) -> Result<TurnOutcome, TurnError> {
        // The model's prices and window unless the options give their own.
        let options = options.into().for_model(model);
        // A token of its own only for a turn given none (a token is an
        // allocation).
        let never;
        let cancellation = match options.cancellation {
            Some(token) => token,
            None => {
                never = CancellationToken::new();
                &never
            }
        };
        let unwatched = TurnEvents::default();
        let events = options.events.unwrap_or(&unwatched);
        let binding = self.binding();
        let span = info_span!(
            "invoke_agent",
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = %self.name(),
            "gen_ai.conversation.id" = %self.session_id(),
            mode = binding.mode(binding.current).name.as_deref().unwrap_or(""),
        );
        let context = TurnContext::with(self, &options, cancellation, events);
        let steps = TurnSteps::start(context, conversation, &options);
        drive(steps, model, cancellation).instrument(span).await
    }
}

/// Steps `steps` to their end in this process: each request asks `model`
/// (contained, and dropped when `cancellation` fires), each batch runs
/// here. The outcome's duration is the wall time of the whole turn.
async fn drive<M: Model + ?Sized>(
    mut steps: TurnSteps<'_>,
    model: &M,
    cancellation: &CancellationToken,
) -> Result<TurnOutcome, TurnError> {
    let started = Instant::now();
    // When the last request or batch ended, unless something that may take
    // time ran since (a listing, a compaction): the next request is timed
    // from it, so a step costs one clock read, not two.
    let mut mark = Some(started);
    loop {
        match steps.next() {
            Step::Claim => steps.claim().await,
            Step::Refresh => {
                steps.refresh().await;
                mark = None;
            }
            // Boxed: only a turn that compacts has this future.
            Step::Compact => {
                Box::pin(steps.compact(model.description().format)).await;
                mark = None;
            }
            Step::Request => {
                let asked = mark.unwrap_or_else(Instant::now);
                let answer = ask(model, steps.request(), cancellation).await;
                let answered = Instant::now();
                match answer {
                    Some(answer) => steps.respond(answer, answered - asked),
                    None => steps.interrupt(),
                }
                mark = Some(answered);
            }
            Step::Batch => {
                let from = mark.unwrap_or_else(Instant::now);
                let (results, ended) = steps.run_batch_from(from).await;
                steps.commit(results);
                mark = Some(ended);
            }
            Step::Done => break,
        }
    }
    let mut outcome = steps.finish()?;
    let ended = mark.unwrap_or_else(Instant::now);
    outcome.stats.duration = ended.saturating_duration_since(started);
    Ok(outcome)
}

/// One model request; `None` when cancelled first. Contained: a model
/// that panics (also while its future is made or dropped) fails the turn
/// like a failing one, since `respond` is called inside the polled block.
async fn ask<M: Model + ?Sized>(
    model: &M,
    request: ModelRequest<'_>,
    cancellation: &CancellationToken,
) -> Option<Result<ModelResponse, ModelError>> {
    let respond = Contained::new(async move { model.respond(request).await });
    match until_cancelled(cancellation, respond).await? {
        Ok(answer) => Some(answer),
        Err(panic) => Some(Err(ModelError::panicked(panic_message(panic.as_ref())))),
    }
}
