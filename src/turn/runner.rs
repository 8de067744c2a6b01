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
// Named in `run_turn`'s docs.
#[cfg(doc)]
use crate::conversation::{FinishReason, Usage};
#[cfg(doc)]
use crate::turn::{IterationStats, TurnStats, TurnStatus};
use crate::turn::{
    Model, ModelError, ModelRequest, Step, TurnError, TurnEvents, TurnOptions, TurnOutcome,
    TurnSteps,
};

impl Definition<Bound> {
    /// Runs one turn: asks `model` and runs the tool calls it asks for, in
    /// the current mode, until it gives a final answer. `options` are a
    /// `&CancellationToken` (the short form) or [`TurnOptions`]: the
    /// token, where events go, and the structured output the turn must end
    /// in.
    ///
    /// Appends to `conversation` the assistant messages, every tool result
    /// and the final answer. Each batch counts one iteration and
    /// `batch.len()` calls against the mode's [`ResolvedToolLimits`](crate::ResolvedToolLimits); a
    /// batch that would exceed `iterations` or `calls` is not run and not
    /// appended, and the turn fails with [`TurnError::ToolLimit`]. A final
    /// answer is never blocked. Within a batch at most `parallel` calls run
    /// at once, each on its own Tokio task (truly parallel on a multi-thread
    /// runtime), each through the middleware chain; results are appended in
    /// call order. A batch with a single call to run runs it on the turn's
    /// own task: nothing runs beside it, and a task of its own would cost
    /// more than many tools do.
    ///
    /// Per-call problems (unknown tool, arguments that are not a JSON object
    /// or fail the schema, a tool error, a tool or middleware panic) become
    /// error results (`is_error: true`) the model can read, and the turn
    /// goes on. A result whose text is longer than `result_bytes` has its
    /// text cut to head + marker + tail; images pass whole.
    ///
    /// When the cancellation token fires, the turn returns promptly with
    /// [`TurnStatus::Interrupted`]: in-flight tool futures are dropped (their
    /// drop code has run when this returns), queued calls never start, and
    /// the interrupted batch is not appended. Committed batches stay.
    ///
    /// A response whose [`FinishReason`] is
    /// [`Length`](FinishReason::Length) was cut off by the output limit, so
    /// its last call's arguments may be incomplete: none of its calls run;
    /// each gets an error result asking the model to send it again smaller,
    /// and counts against `calls` like any call.
    ///
    /// **Gates and pausing**: each call first passes the mode's approval
    /// gates ([`gate`](crate::gate)): a denied call is answered with the
    /// gate's reason and does not run. When a gate asks, the batch's other
    /// calls run and the turn ends with [`TurnStatus::Paused`]: the asked
    /// calls stay unanswered until a resume
    /// ([`TurnOptionsBuilder::resume`](crate::turn::TurnOptionsBuilder::resume),
    /// see [`pause`](crate::turn::pause)).
    ///
    /// In every case but a pause, each tool call id in `conversation` has
    /// exactly one result afterwards. Before the first request the conversation goes
    /// through [`conversation::repair`](crate::conversation::repair): a
    /// call without a result (the process died mid-tool) gets an error
    /// result saying it was interrupted, and its id is listed in
    /// [`TurnOutcome::repaired`]; every provider refuses a conversation with
    /// an unanswered call. A call whose id is empty or already used (in
    /// the conversation or in the response) gets a minted one, shared by its
    /// result: `call_` and 32 hex digits (37 characters, valid for every
    /// provider), the name-based (version 5) UUID of the message's index
    /// and the call's position in it, in the session id's namespace. So
    /// the same turn over the same conversation on the same session mints
    /// the same ids (a replayed recording or a resumed turn matches the
    /// first run); another session mints other ids. Any other id is kept
    /// exactly as the provider sent it.
    ///
    /// Each response's [`Usage`] is added up in
    /// [`TurnStats::usage`], and per batch in [`IterationStats::usage`].
    /// Before each model request the mode's budgets (`requests`,
    /// `input_tokens`, `output_tokens`, `total_tokens`; unlimited unless
    /// set) are checked against what the turn used so far: one that is
    /// reached fails the turn with [`TurnError::Budget`] and the request is
    /// not sent.
    ///
    /// **Events** ([`TurnOptions::builder`]`().events(..)`): each model
    /// request started and answered, streamed text and reasoning (from
    /// models that stream), each tool call started and finished, each batch
    /// finished. Sending never blocks the turn.
    ///
    /// **Structured output** ([`TurnOptions::builder`]`().output(..)`): the
    /// model is offered one more tool, named
    /// [`STRUCTURED_OUTPUT_TOOL_NAME`](crate::STRUCTURED_OUTPUT_TOOL_NAME),
    /// after the mode's tools. A call to it whose arguments pass the
    /// output's schema ends the turn with [`TurnStatus::Output`]; it gets an
    /// ok result, so the conversation stays valid. Arguments that fail the
    /// schema get an error result naming the failing path, and the turn
    /// goes on. The other calls of that batch are answered "not run" and
    /// never run ([`MixedBatch::EndEarly`](crate::turn::MixedBatch::EndEarly),
    /// the default) or run first
    /// ([`MixedBatch::RunAll`](crate::turn::MixedBatch::RunAll)); of two
    /// valid output calls, the first wins and the other is answered "not
    /// run". A text answer is answered with
    /// [`OUTPUT_INSTRUCTION`](crate::turn::OUTPUT_INSTRUCTION) (a user
    /// message, counted as an iteration) up to `output_retries` times; one
    /// more fails the turn with [`TurnError::NoOutput`]. The output call is
    /// a call like any other: it counts against `calls`, runs through the
    /// middleware chain (which may refuse it, or change the value: what the
    /// chain returns is the output, not checked again), sends its events
    /// and has its `execute_tool` span.
    ///
    /// With [`OutputMode::Native`](crate::turn::OutputMode::Native), no
    /// control tool is offered: the output goes to the model in
    /// [`ModelRequest::output`] (the HTTP models send it as the provider's
    /// structured-output setting), and a final answer whose text is JSON
    /// that passes the output's schema (a wrapped schema's `{"value":
    /// ...}`, unwrapped) ends the turn with [`TurnStatus::Output`]. Any
    /// other answer is answered with
    /// [`NATIVE_OUTPUT_INSTRUCTION`](crate::turn::NATIVE_OUTPUT_INSTRUCTION),
    /// counted and capped as above. Tool calls run as in any turn.
    ///
    /// Must run inside a Tokio runtime. With unlimited iterations or calls,
    /// bound the turn yourself (a timeout, or cancelling the token).
    ///
    /// ```
    /// use agent_loop::conversation::{Message, ModelResponse, ToolCall};
    /// use agent_loop::tool::{self, BoxError, ToolInfo};
    /// use agent_loop::turn::{Output, ScriptedModel, TurnEvent, TurnEvents, TurnOptions};
    /// use agent_loop::{Bindings, Definition, LoopId, SessionId};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// #[derive(schemars::JsonSchema, serde::Deserialize, Debug, PartialEq)]
    /// struct Time { hour: u8 }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let clock = tool::Definition::from_fn(
    ///     ToolInfo::without_parameters("now", "The time."),
    ///     |_arguments: serde_json::Value, _context| async { Ok::<_, BoxError>("12:00") },
    /// );
    /// let session = Definition::builder().name("clock").tool(clock).build().validate()?
    ///     .bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
    ///
    /// // The short form: a cancellation token.
    /// let model = ScriptedModel::new([ModelResponse::answer("Hello.")]);
    /// let mut conversation = vec![Message::user("Hi")];
    /// session.run_turn(&model, &mut conversation, &CancellationToken::new()).await?;
    ///
    /// // Events and a structured output.
    /// let model = ScriptedModel::new([
    ///     ModelResponse::tool_calls([ToolCall::new("call_1", "now", "{}")]),
    ///     ModelResponse::tool_calls([ToolCall::new("call_2", "structured_output", r#"{"hour": 12}"#)]),
    /// ]);
    /// let (events, mut received) = TurnEvents::channel();
    /// let options = TurnOptions::builder().events(&events).output(Output::typed::<Time>()?).build();
    /// let mut conversation = vec![Message::user("Time?")];
    /// let outcome = session.run_turn(&model, &mut conversation, options).await?;
    /// assert_eq!(outcome.output_as::<Time>().transpose()?, Some(Time { hour: 12 }));
    ///
    /// let mut seen = Vec::new();
    /// while let Ok(event) = received.try_recv() {
    ///     seen.push(event);
    /// }
    /// assert!(matches!(&seen[2], TurnEvent::ToolCallStarted { tool_name, .. } if tool_name == "now"));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// Errors: [`TurnError::ToolLimit`] as above; [`TurnError::Budget`] as
    /// above; [`TurnError::Resume`] for a resume refused before anything
    /// ran; [`TurnError::Model`] when
    /// the model request fails or panics; [`TurnError::NoOutput`] as above;
    /// [`TurnError::Conversation`] when the conversation handed in has a
    /// result that answers no call of the assistant message before it, or a
    /// second result for one call, and [`TurnError::TooDeep`] when it holds
    /// a JSON value nested deeper than 128 levels (nothing is sent and
    /// `conversation` is unchanged).
    pub async fn run_turn<'o, M: Model + ?Sized>(
        &self,
        model: &M,
        conversation: &mut Conversation,
        options: impl Into<TurnOptions<'o>>,
    ) -> Result<TurnOutcome, TurnError> {
        let options = options.into();
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
