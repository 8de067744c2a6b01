//! The turn as a state machine a driver steps: [`TurnSteps`] says what
//! the turn needs next ([`Step`]) and takes what the driver brings back.
//! Its transitions ([`next`](TurnSteps::next),
//! [`respond`](TurnSteps::respond), [`commit`](TurnSteps::commit)) send no
//! request, run no tool and read no clock: the same answers and batch
//! results give the same steps, so a driver can journal those two and
//! rebuild the turn from the journal. The effects are the driver's, each
//! a step of its own: the model request, the batch
//! ([`run_batch`](TurnSteps::run_batch) runs it in this process, or
//! [`run_call`](TurnSteps::run_call) each of its calls, for a driver that
//! journals each call), the claim of a resumed pause
//! ([`claim`](TurnSteps::claim), whose answer a replaying driver hands
//! back with [`claimed`](TurnSteps::claimed)), and two
//! that are not journaled values: listing changing tools again
//! ([`refresh`](TurnSteps::refresh), which asks their servers) and a
//! compaction ([`compact`](TurnSteps::compact), whose compactor may ask a
//! model; what it changed is in the state and the conversation, so a
//! turn restored after it does not compact again, but a turn replayed
//! from its journal does). [`run_turn`](crate::Definition::run_turn) is
//! the in-process driver.

// A turn's error is its end, made once per turn, never on a hot path: it
// is not boxed, so callers match it as `run_turn` returns it.
#![allow(clippy::result_large_err)]

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::bind::Bound;
use crate::bind::call::{Finished, Pending, Prepared};
use crate::bind::{ToolCallError, ToolCallErrorKind};
use crate::conversation::ids::{IdSet, minted_tool_call_id};
use crate::conversation::{
    AssistantMessage, ContentPart, Conversation, Cost, FinishReason, Message, ModelResponse,
    ToolCall, Usage, WireFormat, repair,
};
use crate::definition::Definition;
use crate::limits::{Limit, ResolvedToolLimits, ToolLimits};
use crate::support::json::{self, TooDeep};
use crate::turn::call_result::CallResult;
use crate::turn::checks::{check_budgets, check_limits};
use crate::turn::compacting::{Compacted, Fit};
use crate::turn::context::TurnContext;
use crate::turn::nesting::Nested;
use crate::turn::output::AnswerStep;
use crate::turn::resume::{Prior, ResumePlan};
use crate::turn::state::{
    Phase, Running, TURN_STATE_OLDEST_VERSION, TURN_STATE_VERSION, TurnState,
};
use crate::turn::{
    AgentPause, BudgetError, BudgetPolicy, IterationStats, ModelError, ModelErrorKind,
    ModelRequest, PausePolicy, ResumeError, ResumeErrorKind, TurnError, TurnEvent, TurnOptions,
    TurnOutcome, TurnStats, TurnStatus,
};

/// How many times in a row a turn tells the model that the provider could
/// not read its output as a tool call and asks again
/// ([`ModelError::is_failed_tool_call`]) before the next such refusal
/// fails the turn.
const FAILED_TOOL_CALLS: u32 = 2;

/// How many empty answers in a row a turn answers with an instruction
/// before the next one fails it ([`TurnError::EmptyAnswer`]).
const EMPTY_ANSWERS: u32 = 1;

/// What the model is told after an empty answer.
const EMPTY_ANSWER_INSTRUCTION: &str =
    "Your last reply was empty. Answer the user, or call a tool if you need one.";

/// What the model is told after a tool call written as text.
const TOOL_CALL_AS_TEXT_INSTRUCTION: &str = "Your last reply wrote a tool call as text (`<tool_call>…</tool_call>`), which was not read as a call. Call the tool through the tools you were given, with its arguments as one JSON object, or answer in text.";

/// `true` when `message` holds something besides text for the user: an
/// image. A provider's block is not (Gemini keeps a blank signed part of
/// an empty answer as one, a Responses refusal is one): without text it
/// leaves the answer empty.
fn has_content(message: &AssistantMessage) -> bool {
    message
        .content
        .iter()
        .any(|part| matches!(part, ContentPart::Image(_)))
}

/// `true` when `answer` holds a tool call written in the Hermes format
/// (`<tool_call>` … `</tool_call>`) that a server's parser did not turn
/// into a call (vllm-project/vllm #20611, NousResearch/hermes-agent PR
/// #2070).
fn wrote_a_tool_call(answer: &str) -> bool {
    // The answer is the call: it starts with the tag, and what the tag
    // holds is a JSON object naming a tool. An answer that quotes one
    // (explaining the format) is an answer.
    let Some(rest) = answer.trim_start().strip_prefix("<tool_call>") else {
        return false;
    };
    let Some((inner, _)) = rest.split_once("</tool_call>") else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(inner.trim())
        .is_ok_and(|call| call.get("name").is_some_and(serde_json::Value::is_string))
}

/// The message that tells the model its output could not be read as a
/// tool call: the provider's words and what the model wrote, so it can
/// mend it.
fn failed_tool_call_instruction(error: &ModelError) -> String {
    let said = error
        .message
        .as_deref()
        .unwrap_or("it could not be read as a tool call");
    let mut text = format!("Your last reply was refused by the provider as a tool call: {said}");
    if let Some(generation) = &error.failed_generation {
        text.push_str("\nWhat you wrote: ");
        text.push_str(generation);
    }
    text.push_str(
        "\nCall the tool again by its exact name, with its arguments as one JSON object that matches its schema, or answer in text.",
    );
    text
}

/// What a turn needs next from its driver ([`TurnSteps::next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Step {
    /// List the binding's changing tools again: call
    /// [`TurnSteps::refresh`] (it asks the tools' servers; nothing of it is
    /// the turn's state).
    Refresh,
    /// Claim the resumed pause: call [`TurnSteps::claim`] (it asks the
    /// turn's [`PauseClaims`](crate::gate::PauseClaims) store). An effect:
    /// a driver that replays a journal and shares a store between its
    /// runs journals the claim's answer and hands it back with
    /// [`TurnSteps::claimed`], or its replay is refused by its own claim.
    Claim,
    /// Fit the conversation into the context budget: call
    /// [`TurnSteps::compact`] (its compactor may ask a model).
    Compact,
    /// Ask the model [`TurnSteps::request`], then hand its answer to
    /// [`TurnSteps::respond`] (or [`TurnSteps::interrupt`] when cancelled).
    Request,
    /// Run the batch of prepared calls: [`TurnSteps::run_batch`], then
    /// hand its [`BatchResults`] to [`TurnSteps::commit`].
    Batch,
    /// The turn is over: [`TurnSteps::finish`] gives its outcome.
    Done,
}

/// What running a batch gave, as a driver brings it back to
/// [`TurnSteps::commit`]: each call's result (or that the turn was
/// cancelled while they ran), the agents that paused, what the calls'
/// agents spent, and how long the batch took. Serialisable, so a driver
/// can journal it and hand the same value to a rebuilt turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchResults {
    /// One per call of the batch, in call order (`None`: the call waits
    /// for a resume); `None` when the turn was cancelled while calls ran.
    finished: Option<Vec<Option<Finished>>>,
    /// The calls whose agents paused, by call id.
    parked: Vec<(String, AgentPause)>,
    /// Calls and usage of the agents the batch ran.
    nested_calls: u32,
    nested_usage: Usage,
    /// What the agents' tokens cost, each at its own prices (absent in
    /// results of a release before costs were kept).
    #[serde(default, skip_serializing_if = "Cost::is_zero")]
    nested_cost: Cost,
    /// Wall time of the batch, as the driver measured it.
    duration: Duration,
}

/// One turn as a state machine, made by
/// [`Definition::turn_steps`](crate::Definition::turn_steps) (or rebuilt
/// by [`Definition::restore_turn`](crate::Definition::restore_turn)).
///
/// A driver loops on [`next`](Self::next) and does what each [`Step`]
/// says. Two steps have effects a durable driver journals: the model's
/// answer to [`request`](Self::request) and the [`BatchResults`] of
/// [`run_batch`](Self::run_batch). A driver that rebuilds a turn hands the
/// journaled values back in the same order (the turn asks for the same
/// things again), or restores the [`state`](Self::state) it stored after
/// a step with the conversation of that step. Durations are the driver's:
/// the turn reads no clock, and its [`TurnStats::duration`] is the sum of
/// those it was given.
///
/// Each call of a batch runs once per `run_batch`: a driver that crashed
/// after running a batch and before journaling its results runs it again,
/// so tools whose effects must happen once key them by the call's session
/// id, loop id and tool call id (all in its
/// [`CallContext`](crate::tool::CallContext)).
///
/// ```
/// use std::time::{Duration, Instant};
/// use agent_loop_core::conversation::{Message, ModelResponse, ToolCall};
/// use agent_loop_core::tool::{self, BoxError, ToolInfo};
/// use agent_loop_core::turn::{Model, ScriptedModel, Step, TurnOptions};
/// use agent_loop_core::{Bindings, Definition, LoopId, SessionId};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let clock = tool::Definition::from_fn(
///     ToolInfo::without_parameters("now", "The time."),
///     |_arguments: serde_json::Value, _context| async { Ok::<_, BoxError>("12:00") },
/// );
/// let session = Definition::builder().name("clock").tool(clock).build().validate()?
///     .bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
/// let model = ScriptedModel::new([
///     ModelResponse::tool_calls([ToolCall::new("call_1", "now", "{}")]),
///     ModelResponse::answer("It is 12:00."),
/// ]);
///
/// let options = TurnOptions::default();
/// let mut conversation = vec![Message::user("Time?")];
/// let mut steps = session.turn_steps(&mut conversation, &options);
/// let mut journal = Vec::new();
/// loop {
///     match steps.next() {
///         Step::Refresh => steps.refresh().await,
///         Step::Compact => steps.compact(model.description().format).await,
///         Step::Request => {
///             let asked = Instant::now();
///             let answer = model.respond(steps.request()).await;
///             // A durable driver stores the answer before handing it on.
///             journal.push(format!("{:?}", answer.as_ref().map(|r| &r.finish_reason)));
///             steps.respond(answer, asked.elapsed());
///         }
///         Step::Batch => {
///             let results = steps.run_batch().await;
///             journal.push(serde_json::to_string(&results)?);
///             steps.commit(results);
///         }
///         Step::Done => break,
///         _ => unreachable!("a step this driver does not know"),
///     }
/// }
/// let outcome = steps.finish()?;
/// assert_eq!(outcome.answer(), Some("It is 12:00."));
/// assert_eq!(journal.len(), 3); // two answers and one batch
/// assert_eq!(conversation.len(), 4);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct TurnSteps<'t> {
    context: TurnContext<'t>,
    conversation: &'t mut Conversation,
    limits: ResolvedToolLimits,
    /// Whether this turn compacts: its limits and compactor are fixed.
    compacts: bool,
    state: TurnState,
    /// Every tool call id the conversation holds, so a reused one gets a
    /// minted id before its batch runs.
    call_ids: IdSet,
    /// The prepared calls of the batch out.
    prepared: Vec<Prepared<'static>>,
    /// The resume whose batch is out.
    resuming: Option<ResumePlan>,
    /// How the turn ended, once it has: its status and finish reason (the
    /// rest of its outcome is in the state until [`finish`](Self::finish)),
    /// or its error.
    ended: Option<Result<(TurnStatus, Option<FinishReason>), TurnError>>,
}

impl std::fmt::Debug for TurnSteps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnSteps")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl Definition<Bound> {
    /// A turn of this binding on `conversation` with `options`, as a state
    /// machine a driver steps: what [`run_turn`](Self::run_turn) runs, for
    /// a driver of your own (one that journals each step, say). The same
    /// rules hold as for `run_turn`; a turn given no cancellation token is
    /// never cancelled, and one given no events sends none.
    ///
    /// Errors come as the turn's end ([`Step::Done`], then
    /// [`TurnSteps::finish`]): those `run_turn` returns before anything
    /// ran, and a refused resume.
    pub fn turn_steps<'t>(
        &'t self,
        conversation: &'t mut Conversation,
        options: &'t TurnOptions<'t>,
    ) -> TurnSteps<'t> {
        TurnSteps::start(TurnContext::new(self, options), conversation, options)
    }

    /// The turn whose `state` a driver stored at a step boundary, rebuilt
    /// on `conversation` as it stood at that step, with the options the
    /// turn had: it goes on from that step, asking again for what it had
    /// asked for and had not been given. A batch that was out is prepared
    /// again (its gates are asked again; its pending calls are those it
    /// had).
    ///
    /// A batch run again runs each of its calls again: the driver's journal
    /// holds the results of a batch that ended.
    ///
    /// Errors ([`TurnError::Resume`], nothing changed):
    /// [`UnsupportedVersion`](ResumeErrorKind::UnsupportedVersion) for a
    /// state of another format version,
    /// [`OtherSession`](ResumeErrorKind::OtherSession) or
    /// [`OtherMode`](ResumeErrorKind::OtherMode) for a state of another
    /// session, loop or mode, and [`Stale`](ResumeErrorKind::Stale) for
    /// the state of a turn that ended, a conversation that already holds
    /// a call of the batch that was out, a resume's batch whose
    /// conversation no longer matches its pause, or a conversation that
    /// holds a JSON value nested deeper than 128 levels.
    pub fn restore_turn<'t>(
        &'t self,
        state: TurnState,
        conversation: &'t mut Conversation,
        options: &'t TurnOptions<'t>,
    ) -> Result<TurnSteps<'t>, TurnError> {
        TurnSteps::restore(TurnContext::new(self, options), state, conversation)
    }
}

impl<'t> TurnSteps<'t> {
    /// A new turn (or a resume, with the options' resume).
    pub(super) fn start(
        mut context: TurnContext<'t>,
        conversation: &'t mut Conversation,
        options: &TurnOptions<'_>,
    ) -> Self {
        let raised = options.resume.and_then(|resume| resume.limits);
        let limits = resolved_limits(&context, raised);
        let (prior, phase) = match options.resume {
            Some(resume) => {
                let paused = &resume.paused;
                // A resumed turn goes on from its paused counts, under the
                // limits the resume set.
                // Its cost so far at its prices (an agent's tokens as if
                // at them: a pause keeps its usage, not its cost).
                let cost = context
                    .prices
                    .map_or(Cost::ZERO, |prices| prices.cost(&paused.usage));
                context.reshare(limits, paused.calls, paused.usage, cost);
                let prior = Prior {
                    iterations: paused.iterations,
                    calls: paused.calls,
                    requests: paused.requests,
                    usage: paused.usage,
                };
                let phase = Phase::Resume {
                    resume: Box::new(resume.clone()),
                    refreshed: false,
                    // An agent's turn resumes only through the resume of
                    // the turn above it, which claimed its own pause.
                    claimed: resume.paused.pause_id.is_empty() || options.parent.is_some(),
                };
                (prior, phase)
            }
            None => (Prior::default(), Phase::Ask { refreshed: false }),
        };
        let state = TurnState {
            version: TURN_STATE_VERSION,
            session_id: context.ids.0,
            loop_id: context.ids.1,
            mode: context.table().site().mode_name().map(str::to_owned),
            raised,
            prior_iterations: prior.iterations,
            calls: prior.calls,
            requests: prior.requests,
            stats: TurnStats {
                usage: prior.usage,
                cost: context.prices.map(|prices| prices.cost(&prior.usage)),
                ..TurnStats::default()
            },
            first_new: conversation.len(),
            compactions: Vec::new(),
            repaired: Vec::new(),
            meter: Default::default(),
            window_full: false,
            instructed: 0,
            failed_tool_calls: 0,
            empty_answers: 0,
            resumed_from: options
                .resume
                .map(|resume| resume.paused.pause_id.clone())
                .unwrap_or_default(),
            phase,
        };
        let unpriced = is_unpriced(&limits, &context);
        let mut steps = Self::assemble(context, conversation, limits, state, IdSet::default());
        // Models copy and serialise the conversation, recursing once per
        // level of every value it holds.
        if unpriced {
            // Before anything runs: a resume's approved calls too.
            steps.fail(TurnError::Unpriced);
        } else if let Some(index) = steps
            .conversation
            .iter()
            .position(|message| message.json_values().any(json::too_deep))
        {
            steps.fail(TurnError::TooDeep {
                index,
                source: TooDeep::new(),
            });
        } else if options.resume.is_none() {
            steps.begin(steps.conversation.len());
        }
        steps
    }

    /// The turn of `state`, on `conversation` as it stood at that step.
    fn restore(
        mut context: TurnContext<'t>,
        state: TurnState,
        conversation: &'t mut Conversation,
    ) -> Result<Self, TurnError> {
        if !(TURN_STATE_OLDEST_VERSION..=TURN_STATE_VERSION).contains(&state.version) {
            return Err(ResumeError::new(ResumeErrorKind::UnsupportedVersion {
                version: state.version,
            })
            .into());
        }
        if (state.session_id, state.loop_id) != context.ids {
            return Err(ResumeError::new(ResumeErrorKind::OtherSession).into());
        }
        if state.mode.as_deref() != context.table().site().mode_name() {
            return Err(ResumeError::new(ResumeErrorKind::OtherMode).into());
        }
        if conversation
            .iter()
            .any(|message| message.json_values().any(json::too_deep))
        {
            return Err(ResumeError::new(ResumeErrorKind::Stale).into());
        }
        let limits = resolved_limits(&context, state.raised);
        if is_unpriced(&limits, &context) {
            return Err(TurnError::Unpriced);
        }
        // A batch out was counted in its turn's share when it went out.
        let reserved = match &state.phase {
            Phase::Running(running) => running.would_be,
            _ => state.calls,
        };
        let cost = state.stats.cost.unwrap_or(Cost::ZERO);
        context.reshare(limits, reserved, state.stats.usage, cost);
        // The ids the turn saw: those of the conversation and of the
        // messages its compactions removed.
        let out = match &state.phase {
            Phase::Running(running) => Some(&running.message),
            _ => None,
        };
        let mut call_ids: IdSet = conversation
            .iter()
            .chain(state.compactions.iter().flat_map(|c| c.removed.iter()))
            .filter_map(Message::as_assistant)
            .flat_map(AssistantMessage::tool_calls)
            .map(|call| call.id.clone())
            .collect();
        if let Some(message) = out {
            // The batch out is not in the conversation yet: a conversation
            // that holds one of its calls is of a later step.
            for call in message.tool_calls() {
                if !call_ids.insert(call.id.clone()) {
                    return Err(ResumeError::new(ResumeErrorKind::Stale).into());
                }
            }
        }
        let mut steps = Self::assemble(context, conversation, limits, state, call_ids);
        match &steps.state.phase {
            Phase::Running(_) => steps.prepare_again(),
            Phase::Resuming { resume, .. } => {
                let resume = resume.clone();
                match steps.context.plan_resume(steps.conversation, &resume)? {
                    Some(mut plan) => {
                        steps.prepared = std::mem::take(&mut plan.prepared);
                        steps.resuming = Some(plan);
                    }
                    None => return Err(ResumeError::new(ResumeErrorKind::Stale).into()),
                }
            }
            Phase::Ended => return Err(ResumeError::new(ResumeErrorKind::Stale).into()),
            _ => {}
        }
        Ok(steps)
    }

    /// The steps of a turn in `context` on `conversation`, under `limits`,
    /// at `state`, knowing `call_ids`; no batch out, not ended.
    fn assemble(
        context: TurnContext<'t>,
        conversation: &'t mut Conversation,
        limits: ResolvedToolLimits,
        state: TurnState,
        call_ids: IdSet,
    ) -> Self {
        // Whether this turn compacts: its limits and compactor are fixed.
        let compacts = context.compactor(&limits).is_some();
        TurnSteps {
            context,
            conversation,
            limits,
            compacts,
            state,
            call_ids,
            prepared: Vec::new(),
            resuming: None,
            ended: None,
        }
    }

    /// The turn's state now: with the conversation, what a driver stores
    /// to rebuild the turn ([`Definition::restore_turn`]).
    pub fn state(&self) -> &TurnState {
        &self.state
    }

    /// The conversation as the turn left it so far.
    pub fn conversation(&self) -> &Conversation {
        self.conversation
    }

    /// The limits the turn runs under: its mode's, with what a resume
    /// raised. A driver that runs a batch's calls itself
    /// ([`call`](Self::call)) runs at most `parallel` of them at once
    /// (`run_batch` takes `parallel` from the mode alone, which a resume
    /// rarely raises).
    pub fn limits(&self) -> &ResolvedToolLimits {
        &self.limits
    }

    /// What the turn needs next. Asking again without doing it asks for
    /// the same thing; [`Step::Done`] once the turn is over.
    #[allow(clippy::should_implement_trait)] // not an iterator: it never ends with `None`
    pub fn next(&mut self) -> Step {
        loop {
            match &self.state.phase {
                Phase::Ended => return Step::Done,
                Phase::Resume { refreshed, .. } | Phase::Ask { refreshed } => {
                    if !refreshed && self.context.binding.tools.moved() {
                        return Step::Refresh;
                    }
                    self.context.take_changed_tools();
                    if matches!(self.state.phase, Phase::Resume { .. }) {
                        if let Some(step) = self.resume() {
                            return step;
                        }
                    } else {
                        self.before_request();
                    }
                }
                Phase::Compact => return Step::Compact,
                Phase::Request => self.send_request(),
                Phase::Asking { .. } => return Step::Request,
                Phase::Running(_) | Phase::Resuming { .. } => return Step::Batch,
            }
        }
    }

    /// Lists the binding's changing tools again and takes them as they are
    /// now (each change is a [`TurnEvent`]); when cancelled first, the
    /// request that follows sees the token.
    pub async fn refresh(&mut self) {
        self.context.refresh_tools().await;
        match &mut self.state.phase {
            Phase::Resume { refreshed, .. } | Phase::Ask { refreshed } => *refreshed = true,
            _ => {}
        }
    }

    /// Before a request: the budgets, then (in a turn that compacts) the
    /// compaction, else the request.
    fn before_request(&mut self) {
        match self.budgets() {
            Err(reached) => self.reached(reached),
            // Only a turn that compacts estimates its requests.
            Ok(()) if self.compacts => self.state.phase = Phase::Compact,
            Ok(()) => self.send_request(),
        }
    }

    /// The budgets of this turn and of every turn above it.
    fn budgets(&self) -> Result<(), BudgetError> {
        check_budgets(
            &self.limits,
            self.state.requests,
            self.state.stats.usage,
            self.state.stats.cost.unwrap_or(Cost::ZERO),
        )
        .and_then(|()| self.context.share().check_ancestor_budgets())
    }

    /// Estimates the next request and, when it reaches the budget's
    /// `compact_at` share (or the provider said the window is full),
    /// compacts the conversation. `format` is the model's
    /// ([`ModelDescription::format`](crate::turn::ModelDescription::format)),
    /// in whose tokens the estimate counts. Does nothing unless the turn
    /// asked for it ([`Step::Compact`]).
    pub async fn compact(&mut self, format: Option<WireFormat>) {
        if !matches!(self.state.phase, Phase::Compact) {
            return;
        }
        let state = &mut self.state;
        let spent_before = state.stats.usage;
        let fit = self
            .context
            .fit_context(
                self.conversation,
                &self.limits,
                &mut state.meter,
                state.window_full,
                &mut state.stats,
                Compacted {
                    first_new: &mut state.first_new,
                    compactions: &mut state.compactions,
                },
                state.requests,
                format,
            )
            .await;
        self.state.window_full = false;
        match fit {
            Err(error) => self.fail(error),
            Ok(Fit::Interrupted) => self.end_with(TurnStatus::Interrupted, None),
            Ok(Fit::Over(reached)) => self.reached(reached),
            // A summarising compaction spent tokens: the budgets are
            // checked again before the request.
            Ok(Fit::Fits) if self.state.stats.usage != spent_before => match self.budgets() {
                Err(reached) => self.reached(reached),
                Ok(()) => self.state.phase = Phase::Request,
            },
            Ok(Fit::Fits) => self.state.phase = Phase::Request,
        }
    }

    /// A budget is reached before a request: the turn fails or pauses, as
    /// its policy says.
    fn reached(&mut self, reached: BudgetError) {
        self.state.window_full = false;
        if self.context.budget_policy != BudgetPolicy::Pause {
            return self.fail(reached.into());
        }
        let counts = self.counts(self.iterations_so_far());
        let paused = self.context.paused(
            self.conversation.len(),
            Vec::new(),
            counts,
            Some(reached.budget),
            &self.state.resumed_from,
        );
        self.end_with(paused, None);
    }

    /// The request is sent: counted and announced.
    fn send_request(&mut self) {
        self.state.requests = self.state.requests.saturating_add(1);
        let iteration = self.iterations_so_far().saturating_add(1);
        self.context
            .events
            .emit(|| TurnEvent::ModelRequestStarted { iteration });
        self.state.phase = Phase::Asking { iteration };
    }

    /// The request to send the model ([`Step::Request`]).
    pub fn request(&self) -> ModelRequest<'_> {
        let table = self.context.table();
        let site = table.site();
        ModelRequest {
            conversation: self.conversation,
            instructions: site.instructions(),
            tools: table.offered(),
            mode: site.mode_name(),
            output: self.context.output.native(),
            events: self.context.events,
        }
    }

    /// The request was cancelled before the model answered: the turn ends
    /// [`Interrupted`](TurnStatus::Interrupted). Ignored unless the turn
    /// asked.
    pub fn interrupt(&mut self) {
        if matches!(self.state.phase, Phase::Asking { .. }) {
            self.end_with(TurnStatus::Interrupted, None);
        }
    }

    /// The model's answer to [`request`](Self::request) (`took`: how long
    /// it took, as the driver measured it). Ignored unless the turn asked.
    pub fn respond(&mut self, answer: Result<ModelResponse, ModelError>, took: Duration) {
        let Phase::Asking { iteration } = self.state.phase else {
            return;
        };
        self.state.stats.duration = self.state.stats.duration.saturating_add(took);
        if let Err(error) = self.answered(answer, took, iteration) {
            self.fail(error);
        }
    }

    /// What the turn does with the model's answer: ask again (a full
    /// window, a paused server-tool turn, an answer that is not the
    /// output), end, or send a batch out.
    fn answered(
        &mut self,
        answer: Result<ModelResponse, ModelError>,
        model_duration: Duration,
        iteration: u32,
    ) -> Result<(), TurnError> {
        let usage_so_far = self.state.stats.usage;
        let response = match answer {
            Err(source)
                if source.exceeds_context_window()
                    && (self.state.meter.retried || self.compacts) =>
            {
                return self.window_full(usage_so_far);
            }
            Err(source) if source.is_failed_tool_call() => {
                return self.failed_tool_call(source, model_duration, iteration);
            }
            Err(source) => {
                return Err(TurnError::Model {
                    source,
                    usage: usage_so_far,
                });
            }
            Ok(response) => response,
        };
        let ModelResponse {
            message,
            finish_reason,
            usage,
        } = response;
        self.context.spend_tokens(&mut self.state.stats, usage);
        self.state.meter.answered(usage);
        if message.json_values().any(json::too_deep) {
            // A `Model` built it in code; the next request would copy it.
            drop_json_values(message);
            return Err(TurnError::Model {
                source: ModelError::new(ModelErrorKind::InvalidResponse)
                    .with_message("the model's response cannot be kept")
                    .with_source(TooDeep::new()),
                usage: self.state.stats.usage,
            });
        }
        self.context.events.emit(|| TurnEvent::ModelResponded {
            finish_reason: finish_reason.clone(),
            usage,
            duration: model_duration,
        });
        if finish_reason == FinishReason::ContextWindowExceeded {
            // Asking again would resend the same full context; the cut
            // response is not kept, so nothing is left half-done.
            return self.window_full(self.state.stats.usage);
        }
        self.state.meter.retried = false;
        let answered = IterationStats {
            model_duration,
            batch_duration: Duration::ZERO,
            calls: Vec::new(),
            finish_reason,
            usage,
        };
        if message.has_tool_calls() {
            self.send_batch(message, answered, iteration)
        } else {
            self.final_answer(message, answered, iteration)
        }
    }

    /// The provider could not read the model's output as a tool call
    /// ([`ModelError::is_failed_tool_call`]): the model is told, with what
    /// it wrote, and asked again within the limits (an iteration without
    /// calls), at most [`FAILED_TOOL_CALLS`] times in a row; once more
    /// fails the turn with the error.
    fn failed_tool_call(
        &mut self,
        source: ModelError,
        model_duration: Duration,
        iteration: u32,
    ) -> Result<(), TurnError> {
        if self.state.failed_tool_calls >= FAILED_TOOL_CALLS {
            return Err(TurnError::Model {
                source,
                usage: self.state.stats.usage,
            });
        }
        self.check_iteration(iteration)?;
        self.state.failed_tool_calls += 1;
        // The request fitted the window: a later full window compacts.
        self.state.meter.retried = false;
        self.conversation
            .push(Message::user(failed_tool_call_instruction(&source)));
        let finish_reason = FinishReason::Other(
            source
                .code
                .clone()
                .unwrap_or_else(|| "tool_use_failed".to_owned()),
        );
        // Watchers see the model answered, as for any answer: with no
        // usage (a refusal reports none) and this finish reason.
        self.context.events.emit(|| TurnEvent::ModelResponded {
            finish_reason: finish_reason.clone(),
            usage: Usage::default(),
            duration: model_duration,
        });
        let answered = IterationStats {
            model_duration,
            batch_duration: Duration::ZERO,
            calls: Vec::new(),
            finish_reason,
            usage: Usage::default(),
        };
        self.iteration_without_calls(answered, iteration);
        Ok(())
    }

    /// An answer with nothing in it: no text, no call, no image
    /// ([`TurnError::EmptyAnswer`] says where real providers send one). Cut
    /// by the output limit, asking again would end the same way: the turn
    /// fails. Otherwise the model is told and asked again, within the
    /// limits, at most [`EMPTY_ANSWERS`] times in a row; once more fails
    /// the turn. The empty message is not kept (providers refuse empty
    /// content).
    fn empty_answer(
        &mut self,
        finish_reason: FinishReason,
        answered: IterationStats,
        iteration: u32,
    ) -> Result<(), TurnError> {
        let retry = !matches!(
            finish_reason,
            FinishReason::Length | FinishReason::ContentFilter | FinishReason::Refusal
        );
        if !retry || self.state.empty_answers >= EMPTY_ANSWERS {
            return Err(TurnError::EmptyAnswer {
                finish_reason,
                usage: self.state.stats.usage,
            });
        }
        self.ask_again(EMPTY_ANSWER_INSTRUCTION, answered, iteration)?;
        self.state.empty_answers += 1;
        Ok(())
    }

    /// An answer whose text holds a tool call (`<tool_call>{…}</tool_call>`,
    /// the Hermes format a server failed to parse): handled as a failed
    /// tool call, the model told and asked again within the limits, at
    /// most [`FAILED_TOOL_CALLS`] times in a row.
    fn tool_call_as_text(
        &mut self,
        answered: IterationStats,
        iteration: u32,
    ) -> Result<(), TurnError> {
        if self.state.failed_tool_calls >= FAILED_TOOL_CALLS {
            return Err(TurnError::ToolCallAsText {
                usage: self.state.stats.usage,
            });
        }
        self.ask_again(TOOL_CALL_AS_TEXT_INSTRUCTION, answered, iteration)?;
        self.state.failed_tool_calls += 1;
        Ok(())
    }

    /// The provider said the context window is full: a turn that compacts
    /// compacts once and asks again; otherwise the turn fails.
    fn window_full(&mut self, usage: Usage) -> Result<(), TurnError> {
        if self.compacts && !self.state.meter.retried {
            self.state.meter.retried = true;
            self.state.window_full = true;
            self.state.phase = Phase::Ask { refreshed: false };
            return Ok(());
        }
        Err(TurnError::ContextWindowExceeded { usage })
    }

    /// A response without calls: the turn's answer, never blocked by the
    /// limits, unless the output protocol asks again (or the provider
    /// paused a server-tool turn).
    fn final_answer(
        &mut self,
        message: AssistantMessage,
        answered: IterationStats,
        iteration: u32,
    ) -> Result<(), TurnError> {
        let finish_reason = answered.finish_reason.clone();
        if finish_reason == FinishReason::Paused {
            // Anthropic paused a long server-tool turn: the message goes
            // back as it is and the model goes on. Asking again is an
            // iteration with no calls.
            self.check_iteration(iteration)?;
            self.conversation.push(Message::Assistant(message));
            self.iteration_without_calls(answered, iteration);
            return Ok(());
        }
        let answer = message.text();
        if !self.context.output.asked() {
            if answer.trim().is_empty() && !has_content(&message) {
                return self.empty_answer(finish_reason, answered, iteration);
            }
            if wrote_a_tool_call(&answer) {
                // Qwen behind vLLM's hermes parser: the call came as text.
                // The text stays, so the model sees what it wrote.
                self.conversation.push(Message::Assistant(message));
                return self.tool_call_as_text(answered, iteration);
            }
        }
        // An answer: the counts of mistakes in a row start again.
        self.state.empty_answers = 0;
        self.state.failed_tool_calls = 0;
        self.conversation.push(Message::Assistant(message));
        let step = self
            .context
            .output
            .answer(&answer, &mut self.state.instructed);
        // A refusal is no malformed output: asking again for the value
        // would only be refused again.
        if finish_reason == FinishReason::Refusal
            && matches!(step, AnswerStep::Instruct(_) | AnswerStep::NoOutput)
        {
            return Err(TurnError::Refused {
                text: answer,
                usage: self.state.stats.usage,
            });
        }
        match step {
            AnswerStep::Completed => {
                self.end_with(TurnStatus::Completed { answer }, Some(finish_reason));
            }
            AnswerStep::Output(value) => {
                self.state.stats.iterations.push(answered);
                self.end_with(TurnStatus::Output { value }, Some(finish_reason));
            }
            AnswerStep::NoOutput => {
                return Err(TurnError::NoOutput {
                    text: answer,
                    usage: self.state.stats.usage,
                });
            }
            AnswerStep::Instruct(instruction) => {
                self.ask_again(instruction, answered, iteration)?;
            }
        }
        Ok(())
    }

    /// `Err` when asking again with no calls would take the turn past its
    /// `iterations` limit.
    fn check_iteration(&self, iteration: u32) -> Result<(), TurnError> {
        check_limits(
            &self.limits,
            iteration,
            self.state.calls,
            0,
            self.state.stats.usage,
        )?;
        Ok(())
    }

    /// Asks again, within the limits, with `instruction` as the next user
    /// message: an iteration without calls. `Err` (nothing added) when the
    /// limits allow no other iteration.
    fn ask_again(
        &mut self,
        instruction: &str,
        answered: IterationStats,
        iteration: u32,
    ) -> Result<(), TurnError> {
        self.check_iteration(iteration)?;
        self.conversation.push(Message::user(instruction));
        self.iteration_without_calls(answered, iteration);
        Ok(())
    }

    /// An iteration that asks again with no calls: counted as one.
    fn iteration_without_calls(&mut self, answered: IterationStats, iteration: u32) {
        self.context.events.emit(|| TurnEvent::BatchFinished {
            iteration,
            calls: 0,
        });
        self.state.stats.iterations.push(answered);
        self.state.phase = Phase::Ask { refreshed: false };
    }

    /// A response with calls: the limits, the ids, each call prepared
    /// (looked up, its arguments checked, its gates asked); the batch is
    /// out.
    fn send_batch(
        &mut self,
        mut message: AssistantMessage,
        answered: IterationStats,
        iteration: u32,
    ) -> Result<(), TurnError> {
        // Calls: the counts of mistakes in a row start again.
        self.state.empty_answers = 0;
        self.state.failed_tool_calls = 0;
        let batch_calls = u32::try_from(message.tool_calls().count()).unwrap_or(u32::MAX);
        let would_be = self.state.calls.saturating_add(batch_calls);
        check_limits(
            &self.limits,
            iteration,
            would_be,
            batch_calls,
            self.state.stats.usage,
        )?;
        // Checked and counted at once for every turn above, so parallel
        // agents of one batch cannot both take the last calls.
        self.context.share().reserve_calls(batch_calls)?;
        // Empty or reused provider ids get minted ones, so every call
        // keeps exactly one result. Minted from the session and the
        // message's place (it is appended at `conversation.len()`), so the
        // same turn run again names its calls the same way.
        let place = self.conversation.len();
        for (position, call) in message.tool_calls_mut().enumerate() {
            if call.id.is_empty() || self.call_ids.contains(&call.id) {
                call.id =
                    minted_tool_call_id(self.context.id_scope, place, position, &self.call_ids);
            }
            self.call_ids.insert(call.id.clone());
        }
        let batch: Vec<&ToolCall> = message.tool_calls().collect();
        let cut_off = answered.finish_reason == FinishReason::Length;
        let mut prepared = self.context.prepare_batch(&batch, cut_off);
        // A batch with a call that waits runs none of its calls by
        // default: the person decides seeing the whole batch (DESIGN.md
        // section 12; BuilderIO/agent-native PR #3510).
        let waits = prepared
            .iter()
            .any(|prepared| matches!(prepared, Prepared::Pending(_)));
        if waits && self.context.pause_policy == PausePolicy::HoldBatch {
            prepared = prepared
                .into_iter()
                .map(|prepared| match prepared {
                    Prepared::Ready(ready) => ready.hold(),
                    other => other,
                })
                .collect();
        }
        let pending = self.context.pending(&batch, &prepared);
        self.prepared = prepared.into_iter().map(Prepared::into_owned).collect();
        self.state.phase = Phase::Running(Box::new(Running {
            message,
            finish_reason: answered.finish_reason,
            usage: answered.usage,
            model_duration: answered.model_duration,
            iteration,
            batch_calls,
            would_be,
            pending,
        }));
        Ok(())
    }

    /// Prepares the batch out again (a rebuilt turn, or a batch whose run
    /// was dropped): its calls are looked up and checked again, and its
    /// gates asked again, but the calls that wait for a decision are those
    /// the turn's state says, and no other: a call a gate asks about now
    /// and did not then is answered that it needs approval, so each call
    /// still gets exactly one result or waits.
    fn prepare_again(&mut self) {
        let Phase::Running(running) = &self.state.phase else {
            return;
        };
        let batch: Vec<&ToolCall> = running.message.tool_calls().collect();
        let cut_off = running.finish_reason == FinishReason::Length;
        let prepared = self.context.prepare_batch(&batch, cut_off);
        self.prepared = prepared
            .into_iter()
            .zip(&batch)
            .map(|(prepared, call)| {
                let waits = running
                    .pending
                    .iter()
                    .find(|pending| pending.tool_call_id == call.id);
                match (waits, prepared) {
                    (Some(pending), _) => Prepared::Pending(Pending {
                        arguments: pending.arguments.clone(),
                        reason: pending.reason.clone(),
                        external: pending.external,
                        held: pending.held,
                    }),
                    (None, Prepared::Pending(pending)) => Prepared::Answered(ToolCallError::new(
                        ToolCallErrorKind::NeedsApproval,
                        &call.name,
                        pending.reason,
                    )),
                    (None, prepared) => prepared.into_owned(),
                }
            })
            .collect();
    }

    /// Runs the batch out ([`Step::Batch`]) in this process: at most
    /// `parallel` calls at once, each through the binding's call pipeline,
    /// until they all end or the turn's token fires. Must run inside a
    /// Tokio runtime. Its results go to [`commit`](Self::commit).
    pub async fn run_batch(&mut self) -> BatchResults {
        self.run_batch_from(Instant::now()).await.0
    }

    /// [`run_batch`](Self::run_batch), timed from `started`; with the
    /// instant it ended, for a driver that times its next step from it.
    pub(super) async fn run_batch_from(&mut self, started: Instant) -> (BatchResults, Instant) {
        if self.prepared.is_empty() && matches!(self.state.phase, Phase::Running(_)) {
            // Its first run was dropped before it ended.
            self.prepare_again();
        }
        let prepared = std::mem::take(&mut self.prepared);
        let finished = match (&self.state.phase, &self.resuming) {
            (Phase::Running(running), _) => {
                let batch: Vec<&ToolCall> = running.message.tool_calls().collect();
                let cut_off = running.finish_reason == FinishReason::Length;
                // A cut-off batch runs nothing: it has no iteration span.
                let span = if cut_off {
                    tracing::Span::none()
                } else {
                    tracing::info_span!(
                        "iteration",
                        iteration = running.iteration,
                        calls = running.batch_calls
                    )
                };
                let run = self.context.run_batch(&batch, prepared, cut_off);
                tracing::Instrument::instrument(run, span).await
            }
            (Phase::Resuming { .. }, Some(plan)) => {
                for (id, conversation, resume) in &plan.agents {
                    self.context
                        .share()
                        .resume_agent(id, conversation.clone(), resume.clone());
                }
                let batch: Vec<&ToolCall> = plan.calls.iter().collect();
                // Boxed: a resume's batch would otherwise double the size
                // of every turn's future.
                Box::pin(self.context.run_batch(&batch, prepared, false)).await
            }
            _ => None,
        };
        let share = self.context.share();
        let parked = share.take_parked();
        let nested = share.take_nested();
        let ended = Instant::now();
        let results = BatchResults {
            finished,
            parked,
            nested_calls: nested.calls,
            nested_usage: nested.usage,
            nested_cost: nested.cost,
            duration: ended.saturating_duration_since(started),
        };
        (results, ended)
    }

    /// The tool calls of the batch out ([`Step::Batch`]), in call order:
    /// what [`run_call`](Self::run_call) runs one by one. Empty when no
    /// batch is out.
    pub fn batch_calls(&self) -> Vec<&ToolCall> {
        match (&self.state.phase, &self.resuming) {
            (Phase::Running(running), _) => running.message.tool_calls().collect(),
            (Phase::Resuming { .. }, Some(plan)) => plan.calls.iter().collect(),
            _ => Vec::new(),
        }
    }

    /// Runs call `index` of the batch out ([`batch_calls`](Self::batch_calls))
    /// on its own, through the binding's call pipeline, until it ends or
    /// the turn's token fires: for a driver that journals each call, so a
    /// call whose result is journaled never runs again. A call that is not
    /// to run (refused before running, cut off) is answered without
    /// running; one that waits for a decision gives no result. Run each
    /// index once; [`batch_results`](Self::batch_results) gathers them.
    /// Must run inside a Tokio runtime.
    pub async fn run_call(&mut self, index: usize) -> CallResult {
        self.call(index).await
    }

    /// [`run_call`](Self::run_call) as a future that borrows nothing of
    /// the turn (it holds its own share of the tool, the binding's call
    /// site, the turn's token and events): for an engine whose journaled
    /// step must own what it runs, such as a closure that outlives the
    /// turn's borrows. Dropped unpolled, it runs nothing.
    pub fn call(&mut self, index: usize) -> impl Future<Output = CallResult> + Send + 'static {
        if self.prepared.is_empty() && matches!(self.state.phase, Phase::Running(_)) {
            self.prepare_again();
        }
        // A call taken waits: a second run of one index runs nothing.
        let taken = Prepared::Pending(Pending {
            arguments: serde_json::Value::Null,
            reason: String::new(),
            external: false,
            held: false,
        });
        let prepared = match self.prepared.get_mut(index) {
            Some(slot) => std::mem::replace(slot, taken),
            None => taken,
        };
        let batch = self.batch_calls();
        let call = batch.get(index).copied();
        // What this call's agents spent and whether they paused is taken
        // by its id: calls that run at once never take each other's.
        let tool_call_id = call.map(|call| call.id.clone()).unwrap_or_default();
        let run = call.map(|call| {
            // A resumed call whose agent paused goes on with that agent.
            if let (Phase::Resuming { .. }, Some(plan)) = (&self.state.phase, &self.resuming)
                && let Some((id, conversation, resume)) =
                    plan.agents.iter().find(|(id, _, _)| *id == call.id)
            {
                self.context
                    .share()
                    .resume_agent(id, conversation.clone(), resume.clone());
            }
            self.context.owned_call(call, prepared)
        });
        let share = std::sync::Arc::clone(&self.context.share);
        async move {
            let finished = match run {
                Some(run) => run.await,
                None => Some(None),
            };
            let nested = share.take_nested_of(&tool_call_id);
            CallResult {
                cancelled: finished.is_none(),
                finished: finished.flatten(),
                parked: share.take_parked_of(&tool_call_id),
                nested,
            }
        }
    }

    /// The [`BatchResults`] of the batch out from the results of its calls
    /// run one by one (`calls`, one per call in call order), which took
    /// `duration` in all: cancelled when any of them was.
    pub fn batch_results(&self, calls: Vec<CallResult>, duration: Duration) -> BatchResults {
        // A list that is not one result per call of the batch out cannot
        // be committed as it is: the batch is taken as cut by the turn's
        // token, and nothing of it is appended.
        let cancelled =
            calls.iter().any(|call| call.cancelled) || calls.len() != self.batch_calls().len();
        let mut results = BatchResults {
            finished: None,
            parked: Vec::new(),
            nested_calls: 0,
            nested_usage: Usage::default(),
            nested_cost: Cost::ZERO,
            duration,
        };
        let mut finished = Vec::with_capacity(calls.len());
        let batch = self.batch_calls();
        for (index, mut call) in calls.into_iter().enumerate() {
            // The journal form leaves the name out: it is the call's.
            if let Some(asked) = batch.get(index) {
                call.name(&asked.name);
            }
            results.parked.extend(call.parked);
            results.nested_calls = results.nested_calls.saturating_add(call.nested.calls);
            results.nested_usage += call.nested.usage;
            results.nested_cost += call.nested.cost;
            finished.push(call.finished);
        }
        if !cancelled {
            results.finished = Some(finished);
        }
        results
    }

    /// Takes the results of the batch out: appends the assistant message
    /// and the results in call order, then pauses, ends in the output, or
    /// goes on to the next request. Ignored unless a batch is out. The
    /// results must be those [`run_batch`](Self::run_batch) gave for this
    /// batch (or a journal's copy of them): they are taken as given.
    pub fn commit(&mut self, results: BatchResults) {
        match std::mem::replace(&mut self.state.phase, Phase::Ended) {
            Phase::Running(running) => self.commit_batch(*running, results),
            Phase::Resuming { message_index, .. } => self.commit_resume(message_index, results),
            other => self.state.phase = other,
        }
    }

    /// What a batch's agents spent becomes the turn's own: their tokens
    /// in its usage, their cost (at their prices) in its cost, counted in
    /// its share.
    fn absorb_nested(&mut self, nested: Nested) {
        let stats = &mut self.state.stats;
        stats.usage += nested.usage;
        if let Some(cost) = &mut stats.cost {
            *cost += nested.cost;
        }
        self.context.share().absorb(nested);
    }

    fn commit_batch(&mut self, running: Running, results: BatchResults) {
        let Running {
            message,
            finish_reason,
            usage,
            model_duration,
            iteration,
            batch_calls,
            would_be,
            mut pending,
        } = running;
        self.prepared.clear();
        self.state.stats.duration = self.state.stats.duration.saturating_add(results.duration);
        // What the batch's agents spent is the turn's too.
        self.absorb_nested(Nested {
            calls: results.nested_calls,
            usage: results.nested_usage,
            cost: results.nested_cost,
        });
        let Some(mut finished) = results.finished else {
            return self.end_with(TurnStatus::Interrupted, None);
        };
        // Calls whose agents paused wait, like the gate's, in call order.
        if !results.parked.is_empty() {
            let batch: Vec<&ToolCall> = message.tool_calls().collect();
            let agents = self
                .context
                .take_paused_agents(&batch, &mut finished, results.parked);
            if !agents.is_empty() {
                pending.extend(agents);
                pending.sort_by_key(|pending| {
                    batch
                        .iter()
                        .position(|call| call.id == pending.tool_call_id)
                        .unwrap_or(usize::MAX)
                });
            }
        }
        self.state.calls = would_be.saturating_add(results.nested_calls);
        let message_index = self.conversation.len();
        self.conversation.reserve(1 + finished.len());
        self.conversation.push(Message::Assistant(message));
        let mut output = None;
        let mut calls = Vec::with_capacity(finished.len());
        for finished in finished.into_iter().flatten() {
            output = output.or(finished.output);
            self.conversation.push(Message::Tool(finished.result));
            calls.push(finished.stats);
        }
        self.context.events.emit(|| TurnEvent::BatchFinished {
            iteration,
            calls: batch_calls,
        });
        self.state.stats.iterations.push(IterationStats {
            model_duration,
            batch_duration: results.duration,
            calls,
            finish_reason: finish_reason.clone(),
            usage,
        });
        if !pending.is_empty() {
            let counts = self.counts(iteration);
            let paused = self.context.paused(
                message_index,
                pending,
                counts,
                None,
                &self.state.resumed_from,
            );
            return self.end_with(paused, Some(finish_reason));
        }
        if let Some(value) = output {
            let value = self.context.output.value(value);
            return self.end_with(TurnStatus::Output { value }, Some(finish_reason));
        }
        self.state.phase = Phase::Ask { refreshed: false };
    }

    /// A resume: its decisions checked, then its batch out (or, for a
    /// budget's pause, the request it paused before).
    fn resume(&mut self) -> Option<Step> {
        let Phase::Resume {
            resume, claimed, ..
        } = &self.state.phase
        else {
            return None;
        };
        let (resume, claimed) = (resume.clone(), *claimed);
        let message_index = resume.paused.message_index;
        match self.context.plan_resume(self.conversation, &resume) {
            Err(error) => self.fail(error),
            // Checked: claimed before anything runs.
            Ok(_) if !claimed => return Some(Step::Claim),
            Ok(None) => {
                self.context
                    .events
                    .emit(|| TurnEvent::TurnResumed { decisions: 0 });
                // Where the unsent request's answer goes.
                self.begin(message_index);
            }
            Ok(Some(mut plan)) => {
                let decisions = u32::try_from(plan.decided.len()).unwrap_or(u32::MAX);
                self.context
                    .events
                    .emit(|| TurnEvent::TurnResumed { decisions });
                self.prepared = std::mem::take(&mut plan.prepared);
                self.resuming = Some(plan);
                self.state.phase = Phase::Resuming {
                    message_index,
                    resume,
                };
            }
        }
        None
    }

    /// The answer of a claim the driver made or journaled ([`Step::Claim`]):
    /// `true`, the pause is this resume's, and it goes on; `false`, the
    /// turn ends with [`ResumeErrorKind::Claimed`] and nothing runs.
    /// Ignored unless the turn asked.
    pub fn claimed(&mut self, first: bool) {
        let Phase::Resume { claimed, .. } = &mut self.state.phase else {
            return;
        };
        if first {
            *claimed = true;
        } else {
            self.fail(ResumeError::new(ResumeErrorKind::Claimed).into());
        }
    }

    /// Claims the resumed pause's id ([`Step::Claim`]): the first claim
    /// goes on; any other ends the turn with
    /// [`ResumeErrorKind::Claimed`] (or
    /// [`ClaimFailed`](ResumeErrorKind::ClaimFailed) when the store
    /// failed), and nothing runs. Does nothing unless the turn asked.
    pub async fn claim(&mut self) {
        let Phase::Resume {
            resume, claimed, ..
        } = &self.state.phase
        else {
            return;
        };
        if *claimed {
            return;
        }
        let pause_id = resume.paused.pause_id.clone();
        match self.context.claims.claim(&pause_id).await {
            Ok(first) => self.claimed(first),
            Err(error) => self.fail(
                ResumeError::new(ResumeErrorKind::ClaimFailed {
                    message: crate::support::text::with_causes(&*error),
                })
                .into(),
            ),
        }
    }

    fn commit_resume(&mut self, message_index: usize, results: BatchResults) {
        self.prepared.clear();
        let Some(plan) = self.resuming.take() else {
            return;
        };
        let Some(mut finished) = results.finished else {
            // The paused turn goes stale: nothing else is added.
            self.context
                .abort_resumed(self.conversation, message_index, &plan.decided);
            let at = self.conversation.len();
            self.state.stats = TurnStats {
                duration: self.state.stats.duration.saturating_add(results.duration),
                ..TurnStats::default()
            };
            self.state.first_new = at;
            return self.end_with(TurnStatus::Interrupted, None);
        };
        self.state.stats.duration = self.state.stats.duration.saturating_add(results.duration);
        // What the approved calls' agents spent is the turn's too.
        self.state.calls = self.state.calls.saturating_add(results.nested_calls);
        self.absorb_nested(Nested {
            calls: results.nested_calls,
            usage: results.nested_usage,
            cost: results.nested_cost,
        });
        let batch: Vec<&ToolCall> = plan.calls.iter().collect();
        // An agent that paused again pauses the turn again.
        let repaused = self
            .context
            .take_paused_agents(&batch, &mut finished, results.parked);
        TurnContext::place_resumed(self.conversation, message_index, plan.answered, finished);
        if !repaused.is_empty() {
            let counts = self.counts(self.state.prior_iterations);
            let paused = self.context.paused(
                message_index,
                repaused,
                counts,
                None,
                &self.state.resumed_from,
            );
            self.state.first_new = message_index.saturating_add(1);
            return self.end_with(paused, None);
        }
        // After the paused batch's message.
        self.begin(message_index.saturating_add(1));
    }

    /// The turn's first request is next; its messages begin at
    /// `first_new`. A conversation with an unanswered call is repaired
    /// first.
    fn begin(&mut self, first_new: usize) {
        match repair(self.conversation) {
            Err(error) => return self.fail(error.into()),
            Ok(repaired) => self.state.repaired = repaired,
        }
        self.call_ids = self
            .conversation
            .iter()
            .filter_map(Message::as_assistant)
            .flat_map(AssistantMessage::tool_calls)
            .map(|call| call.id.clone())
            .collect();
        self.state.first_new = first_new;
        self.state.phase = Phase::Ask { refreshed: false };
    }

    /// Iterations of the turn so far, a paused turn's included.
    fn iterations_so_far(&self) -> u32 {
        self.state
            .prior_iterations
            .saturating_add(self.state.stats.iteration_count())
    }

    /// The turn's counts at `iterations`, for a pause.
    fn counts(&self, iterations: u32) -> Prior {
        Prior {
            iterations,
            calls: self.state.calls,
            requests: self.state.requests,
            usage: self.state.stats.usage,
        }
    }

    /// The turn ends with `status`.
    fn end_with(&mut self, status: TurnStatus, finish_reason: Option<FinishReason>) {
        self.state.phase = Phase::Ended;
        self.ended = Some(Ok((status, finish_reason)));
    }

    /// The turn fails with `error`.
    fn fail(&mut self, error: TurnError) {
        self.state.phase = Phase::Ended;
        self.ended = Some(Err(error));
    }

    /// How the turn ended ([`Step::Done`]). Before then, an error saying
    /// the turn is not over.
    pub fn finish(mut self) -> Result<TurnOutcome, TurnError> {
        let (status, finish_reason) = match self.ended.take() {
            Some(ended) => ended?,
            None => {
                return Err(TurnError::Model {
                    source: ModelError::other("the turn is not over: finish it after Step::Done"),
                    usage: self.state.stats.usage,
                });
            }
        };
        let len = self.conversation.len();
        Ok(TurnOutcome {
            status,
            appended: self.state.first_new.min(len)..len,
            stats: std::mem::take(&mut self.state.stats),
            finish_reason,
            repaired: std::mem::take(&mut self.state.repaired),
            compactions: std::mem::take(&mut self.state.compactions),
        })
    }
}

/// `true` when `limits` hold a cost budget the turn has no prices to keep
/// (see [`TurnError::Unpriced`]).
fn is_unpriced(limits: &ResolvedToolLimits, context: &TurnContext<'_>) -> bool {
    context.prices.is_none()
        && (limits.cost_microdollars != Limit::Unlimited
            || context.share().ancestor_has_cost_budget())
}

/// The limits a turn in `context` runs under: its mode's, with the fields a
/// resume `raised` set over them (checked by the resume, so one that does
/// not resolve keeps the mode's), and a context budget no larger than the
/// model's window.
fn resolved_limits(context: &TurnContext<'_>, raised: Option<ToolLimits>) -> ResolvedToolLimits {
    let site_limits = *context.table().site().limits();
    let mut limits = raised
        .and_then(|over| over.inherit(site_limits).ok())
        .unwrap_or(site_limits);
    // No budget is larger than what the model can take.
    if let Some(window) = context.context_window.and_then(Limit::at_most) {
        limits.context_tokens = match limits.context_tokens {
            Limit::AtMost(own) if own.get() <= window.get().unwrap_or(u32::MAX) => {
                limits.context_tokens
            }
            _ => window,
        };
    }
    limits
}

/// Drops the JSON values of a refused message without recursion (see
/// [`json::drop_deep`]).
fn drop_json_values(message: AssistantMessage) {
    let AssistantMessage {
        content, extras, ..
    } = message;
    content
        .into_iter()
        .flat_map(ContentPart::into_json_values)
        .chain(extras.into_values())
        .for_each(json::drop_deep);
}
