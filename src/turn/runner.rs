//! The turn runner: ask the model, enforce the limits, run each batch with
//! at most `parallel` calls at once, and keep the conversation valid
//! whatever happens. Each call goes through the binding's call pipeline
//! ([`bind`](crate::bind)); the runner only schedules it (a `parallel`
//! slot, cancellation, the order of results, events) and loops.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span};

use crate::bind::call::{self, CallTable, Finished, Prepared, Ready};
use crate::bind::tool_set::{ListChange, ToolSet};
use crate::bind::{Binding, Bound};
use crate::context::Compactor;
use crate::conversation::ids::{IdSet, minted_tool_call_id};
use crate::conversation::{
    AssistantMessage, ContentPart, Conversation, FinishReason, Message, ModelResponse, ToolCall,
    Usage, repair,
};
use crate::definition::Definition;
use crate::gate::ApprovalKey;
use crate::session::{LoopId, SessionId};
use crate::support::cancel::until_cancelled;
use crate::support::json::{self, TooDeep};
use crate::support::panic::{Contained, drop_payload, panic_message};
use crate::tool::{CallEvents, TurnLink};
use crate::turn::checks::{check_budgets, check_limits};
use crate::turn::compacting::{Compacted, ContextMeter, Fit};
use crate::turn::nesting::TurnShare;
use crate::turn::output::{AnswerStep, OutputProtocol};
use crate::turn::resume::Prior;
use crate::turn::{
    BudgetPolicy, CallStats, IterationStats, Model, ModelError, ModelErrorKind, ModelRequest,
    Resume, TurnError, TurnEvent, TurnEvents, TurnOptions, TurnOutcome, TurnStats, TurnStatus,
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
        let binding = self.binding();
        let span = info_span!(
            "invoke_agent",
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = %self.name(),
            "gen_ai.conversation.id" = %self.session_id(),
            mode = binding.mode(binding.current).name.as_deref().unwrap_or(""),
        );
        self.turn(model, &options, cancellation, &unwatched)
            .run(conversation)
            .instrument(span)
            .await
    }

    /// A turn of this binding on `model` with `options`, cancelled by
    /// `cancellation` (the options' token, or one of the caller's when
    /// they have none; `unwatched` stands in for events they leave out).
    pub(super) fn turn<'t, M: ?Sized>(
        &'t self,
        model: &'t M,
        options: &'t TurnOptions<'t>,
        cancellation: &'t CancellationToken,
        unwatched: &'t TurnEvents,
    ) -> Turn<'t, M> {
        let binding = self.binding();
        Turn {
            binding,
            set: binding.tools.current(),
            mode: binding.current,
            id_scope: self.session_id().as_uuid(),
            ids: (self.session_id(), self.loop_id()),
            approval_key: self.binding().layout.approval_key.as_ref(),
            resume: options.resume,
            budget_policy: options.budget_policy,
            compactor: options.compactor,
            share: Arc::new(TurnShare::new(
                binding.mode(binding.current).tool_limits,
                options.parent.clone(),
                options.events.unwrap_or(unwatched).clone(),
                options.budget_policy,
                0,
                Usage::default(),
            )),
            model,
            cancellation,
            events: options.events.unwrap_or(unwatched),
            output: OutputProtocol::new(options),
        }
    }
}

/// One running turn.
pub(super) struct Turn<'a, M: ?Sized> {
    pub(super) binding: &'a Binding,
    /// The binding's tools for the current iteration: taken again before
    /// each model request, so a changing definition's new list reaches
    /// the next request and never a running batch.
    pub(super) set: Arc<ToolSet>,
    /// The turn's mode: fixed for the turn.
    pub(super) mode: usize,
    /// The scope of the tool call ids this turn mints: the session's id.
    pub(super) id_scope: uuid::Uuid,
    /// The session's and loop's ids, which a pending call's MAC covers.
    pub(super) ids: (SessionId, LoopId),
    pub(super) approval_key: Option<&'a ApprovalKey>,
    /// The paused turn this one goes on from, and its decisions.
    pub(super) resume: Option<&'a Resume>,
    pub(super) budget_policy: BudgetPolicy,
    /// The turn's own compactor, if any (see [`Turn::compactor`]).
    pub(super) compactor: Option<&'a dyn Compactor>,
    /// This turn's share with the agents its calls run (and with the turn
    /// whose call runs it, as an agent).
    pub(super) share: Arc<TurnShare>,
    pub(super) model: &'a M,
    pub(super) cancellation: &'a CancellationToken,
    pub(super) events: &'a TurnEvents,
    pub(super) output: OutputProtocol<'a>,
}

impl<M: Model + ?Sized> Turn<'_, M> {
    /// Where this iteration's calls are looked up: the turn's mode's tools
    /// and its control tool.
    pub(super) fn table(&self) -> CallTable<'_> {
        CallTable::new(self.binding, &self.set, self.mode, self.output.control())
    }

    /// Lists again the changing definitions whose tools changed, before a
    /// model request, and takes the binding's tools as they are now; each
    /// change is an event.
    async fn refresh_tools(&mut self) {
        let tools = &self.binding.tools;
        if !tools.moved() {
            if tools.changes() {
                self.set = tools.current();
            }
            return;
        }
        // A cancelled turn does not wait for a server's list: the request
        // that follows sees the token and ends the turn.
        let Some(changes) =
            until_cancelled(self.cancellation, tools.refresh(&self.binding.layout)).await
        else {
            return;
        };
        for change in changes {
            self.events.emit(|| match change {
                ListChange::Changed { definition, tools } => {
                    TurnEvent::ToolListChanged { definition, tools }
                }
                ListChange::Refused {
                    definition,
                    kind,
                    message,
                } => TurnEvent::ToolListRefused {
                    definition,
                    kind,
                    message,
                },
            });
        }
        if tools.changes() {
            self.set = tools.current();
        }
    }

    async fn run(mut self, conversation: &mut Conversation) -> Result<TurnOutcome, TurnError> {
        let started = Instant::now();
        // Models copy and serialise the conversation, recursing once per
        // level of every value it holds.
        if let Some(index) = conversation
            .iter()
            .position(|message| message.json_values().any(json::too_deep))
        {
            return Err(TurnError::TooDeep {
                index,
                source: TooDeep::new(),
            });
        }
        let limits = match self.resume.and_then(|resume| resume.limits) {
            // Checked by the resume.
            Some(over) => over
                .inherit(*self.table().site().limits())
                .unwrap_or(*self.table().site().limits()),
            None => *self.table().site().limits(),
        };
        if let Some(resume) = self.resume {
            // A resumed turn goes on from its paused counts, under the
            // limits the resume set.
            self.share = Arc::new(TurnShare::new(
                limits,
                self.share.parent.clone(),
                self.events.clone(),
                self.budget_policy,
                resume.paused.calls,
                resume.paused.usage,
            ));
        }
        // A resume answers the paused calls first (`repair` would answer
        // them "interrupted"), with the binding's tools as they are now.
        if self.resume.is_some() {
            self.refresh_tools().await;
        }
        let (prior, first_new) = match self.resume {
            // Boxed: a resume's future (it runs a batch of its own) would
            // otherwise double the size of every turn's.
            Some(resume) => match Box::pin(self.resume(conversation, resume)).await? {
                Some((prior, repaused)) if !repaused.is_empty() => {
                    // An agent the resume went on with paused again.
                    let at = resume.paused.message_index;
                    return Ok(TurnOutcome {
                        status: self.paused(at, repaused, prior, None),
                        appended: at.saturating_add(1).min(conversation.len())..conversation.len(),
                        stats: TurnStats {
                            usage: prior.usage,
                            duration: started.elapsed(),
                            ..TurnStats::default()
                        },
                        finish_reason: None,
                        repaired: Vec::new(),
                        compactions: Vec::new(),
                    });
                }
                Some((prior, _)) => {
                    // After the paused batch's message; where the unsent
                    // request's answer goes, for a budget's pause.
                    let after = usize::from(resume.paused.budget.is_none());
                    (prior, resume.paused.message_index.saturating_add(after))
                }
                None => return Ok(self.interrupted(conversation.len(), started)),
            },
            None => (Prior::default(), conversation.len()),
        };
        let repaired = repair(conversation)?;
        let mut stats = TurnStats {
            usage: prior.usage,
            ..TurnStats::default()
        };
        let mut calls: u32 = prior.calls;
        // Every tool call id the conversation holds, so a reused one gets a
        // minted id before its batch runs.
        let mut call_ids: IdSet = conversation
            .iter()
            .filter_map(Message::as_assistant)
            .flat_map(|assistant| assistant.tool_calls())
            .map(|call| call.id.clone())
            .collect();
        // Where the turn's messages begin, moved by each compaction.
        let compacted = Compacted::starting_at(first_new);
        let end_at = |at: Instant,
                      status,
                      finish_reason,
                      conversation: &Conversation,
                      mut stats: TurnStats| {
            stats.duration = at - started;
            TurnOutcome {
                status,
                appended: compacted.first_new().min(conversation.len())..conversation.len(),
                stats,
                finish_reason,
                repaired: repaired.clone(),
                compactions: compacted.take(),
            }
        };
        let end = |status, finish_reason, conversation: &Conversation, stats: TurnStats| {
            end_at(Instant::now(), status, finish_reason, conversation, stats)
        };
        let mut meter = ContextMeter::new();
        // Whether this turn compacts: its limits and compactor are fixed.
        let compacts = self.compactor(&limits).is_some();
        // When the last batch ended: the next request's start, if nothing
        // between takes time.
        let mut last_mark: Option<Instant> = None;
        // The provider said the window is full: compact before asking again.
        let mut window_full = false;
        let mut requests: u32 = prior.requests;
        loop {
            let listed = self.binding.tools.moved();
            self.refresh_tools().await;
            let spent_before = stats.usage;
            let reached = match check_budgets(&limits, requests, stats.usage)
                .and_then(|()| self.share().check_ancestor_budgets())
            {
                Err(reached) => Some(reached),
                // Boxed, and only in a turn that compacts: its future
                // would otherwise add to every turn's.
                Ok(()) if !compacts => None,
                Ok(()) => match Box::pin(self.fit_context(
                    conversation,
                    &limits,
                    &mut meter,
                    window_full,
                    &mut stats,
                    &compacted,
                    requests,
                ))
                .await?
                {
                    // A summarising compaction spent tokens: the budgets
                    // are checked again before the request.
                    Fit::Fits if stats.usage != spent_before => {
                        check_budgets(&limits, requests, stats.usage)
                            .and_then(|()| self.share().check_ancestor_budgets())
                            .err()
                    }
                    Fit::Fits => None,
                    Fit::Interrupted => {
                        return Ok(end(TurnStatus::Interrupted, None, conversation, stats));
                    }
                    Fit::Over(reached) => Some(reached),
                },
            };
            window_full = false;
            if let Some(reached) = reached {
                if self.budget_policy != BudgetPolicy::Pause {
                    return Err(reached.into());
                }
                let counts = Prior {
                    iterations: prior.iterations.saturating_add(stats.iteration_count()),
                    calls,
                    requests,
                    usage: stats.usage,
                };
                let paused =
                    self.paused(conversation.len(), Vec::new(), counts, Some(reached.budget));
                return Ok(end(paused, None, conversation, stats));
            }
            requests = requests.saturating_add(1);
            // The instant the last batch ended, unless something that may
            // take time ran since (the tools were listed again, a
            // compaction may have asked a model): a clock read is not free.
            let model_started = match last_mark.take() {
                Some(mark) if !listed && !compacts => mark,
                _ => Instant::now(),
            };
            let iteration = prior
                .iterations
                .saturating_add(stats.iteration_count())
                .saturating_add(1);
            self.events
                .emit(|| TurnEvent::ModelRequestStarted { iteration });
            let asked = match self.ask(conversation).await {
                Err(source) if source.exceeds_context_window() && compacts && !meter.retried => {
                    // Compacted once, then asked again.
                    meter.retried = true;
                    window_full = true;
                    continue;
                }
                Err(source) if source.exceeds_context_window() && meter.retried => {
                    return Err(TurnError::ContextWindowExceeded { usage: stats.usage });
                }
                asked => asked.map_err(|source| TurnError::Model {
                    source,
                    usage: stats.usage,
                })?,
            };
            let Some(response) = asked else {
                return Ok(end(TurnStatus::Interrupted, None, conversation, stats));
            };
            // Also when a final answer ends the turn: a clock read is not
            // free.
            let answered_at = Instant::now();
            let model_duration = answered_at - model_started;
            let ModelResponse {
                mut message,
                finish_reason,
                usage,
            } = response;
            stats.usage += usage;
            self.share().spend(0, usage);
            meter.answered(usage);
            if message.json_values().any(json::too_deep) {
                // A `Model` built it in code; the next request would copy it.
                drop_json_values(message);
                return Err(TurnError::Model {
                    source: ModelError::new(ModelErrorKind::InvalidResponse)
                        .with_message("the model's response cannot be kept")
                        .with_source(TooDeep::new()),
                    usage: stats.usage,
                });
            }
            self.events.emit(|| TurnEvent::ModelResponded {
                finish_reason: finish_reason.clone(),
                usage,
                duration: model_duration,
            });
            if finish_reason == FinishReason::ContextWindowExceeded {
                // Asking again would resend the same full context; the
                // cut response is not kept, so nothing is left half-done.
                // A turn that compacts compacts once and asks again.
                if compacts && !meter.retried {
                    meter.retried = true;
                    window_full = true;
                    continue;
                }
                return Err(TurnError::ContextWindowExceeded { usage: stats.usage });
            }
            meter.retried = false;
            let answered = |calls| IterationStats {
                model_duration,
                batch_duration: Duration::ZERO,
                calls,
                finish_reason: finish_reason.clone(),
                usage,
            };
            if !message.has_tool_calls() {
                // A final answer: nothing to run, never blocked by limits.
                if finish_reason == FinishReason::Paused {
                    // Anthropic paused a long server-tool turn: the message
                    // goes back as it is and the model goes on. Asking
                    // again is an iteration with no calls.
                    check_limits(&limits, iteration, calls, 0, stats.usage)?;
                    conversation.push(Message::Assistant(message));
                    self.events.emit(|| TurnEvent::BatchFinished {
                        iteration,
                        calls: 0,
                    });
                    stats.iterations.push(answered(Vec::new()));
                    continue;
                }
                let answer = message.text();
                conversation.push(Message::Assistant(message));
                let step = self.output.answer(&answer);
                // A refusal is no malformed output: asking again for the
                // value would only be refused again.
                if finish_reason == FinishReason::Refusal
                    && matches!(step, AnswerStep::Instruct(_) | AnswerStep::NoOutput)
                {
                    return Err(TurnError::Refused {
                        text: answer,
                        usage: stats.usage,
                    });
                }
                match step {
                    AnswerStep::Completed => {
                        return Ok(end_at(
                            answered_at,
                            TurnStatus::Completed { answer },
                            Some(finish_reason),
                            conversation,
                            stats,
                        ));
                    }
                    AnswerStep::Output(value) => {
                        stats.iterations.push(answered(Vec::new()));
                        return Ok(end(
                            TurnStatus::Output { value },
                            Some(finish_reason),
                            conversation,
                            stats,
                        ));
                    }
                    AnswerStep::NoOutput => {
                        return Err(TurnError::NoOutput {
                            text: answer,
                            usage: stats.usage,
                        });
                    }
                    AnswerStep::Instruct(instruction) => {
                        // Asking again is an iteration with no calls.
                        check_limits(&limits, iteration, calls, 0, stats.usage)?;
                        conversation.push(Message::user(instruction));
                        self.events.emit(|| TurnEvent::BatchFinished {
                            iteration,
                            calls: 0,
                        });
                        stats.iterations.push(answered(Vec::new()));
                        continue;
                    }
                }
            }
            let batch_calls = u32::try_from(message.tool_calls().count()).unwrap_or(u32::MAX);
            let would_be = calls.saturating_add(batch_calls);
            check_limits(&limits, iteration, would_be, batch_calls, stats.usage)?;
            // Checked and counted at once for every turn above, so parallel
            // agents of one batch cannot both take the last calls.
            self.share().reserve_calls(batch_calls)?;
            // Empty or reused provider ids get minted ones, so every call
            // keeps exactly one result. Minted from the session and the
            // message's place (it is appended at `conversation.len()`), so
            // the same turn run again names its calls the same way.
            let place = conversation.len();
            for (position, call) in message.tool_calls_mut().enumerate() {
                if call.id.is_empty() || call_ids.contains(&call.id) {
                    call.id = minted_tool_call_id(self.id_scope, place, position, &call_ids);
                }
                call_ids.insert(call.id.clone());
            }
            // Borrowed, not copied: the message is appended once the batch ran.
            let batch: Vec<&ToolCall> = message.tool_calls().collect();

            let batch_started = Instant::now();
            let cut_off = finish_reason == FinishReason::Length;
            let prepared = self
                .table()
                .prepare_batch(&batch, cut_off, self.output.ends_batch());
            let mut pending = self.pending(&batch, &prepared);
            // A cut-off batch runs nothing: it has no iteration span. (One
            // future either way: two would each take a place in the turn's.)
            let span = if cut_off {
                tracing::Span::none()
            } else {
                info_span!("iteration", iteration, calls = batch_calls)
            };
            let finished = self
                .run_batch(&batch, prepared, cut_off)
                .instrument(span)
                .await;
            let Some(mut finished) = finished else {
                // What the batch's agents spent before the token fired.
                stats.usage += self.share().take_nested().1;
                return Ok(end(TurnStatus::Interrupted, None, conversation, stats));
            };
            // Calls whose agents paused wait, like the gate's, in call order.
            let agents = self.take_paused_agents(&batch, &mut finished);
            if !agents.is_empty() {
                pending.extend(agents);
                pending.sort_by_key(|pending| {
                    batch
                        .iter()
                        .position(|call| call.id == pending.tool_call_id)
                        .unwrap_or(usize::MAX)
                });
            }
            calls = would_be;
            // What the batch's agents spent is the turn's too.
            let (nested_calls, nested_usage) = self.share().take_nested();
            calls = calls.saturating_add(nested_calls);
            stats.usage += nested_usage;
            let message_index = conversation.len();
            conversation.reserve(1 + finished.len());
            conversation.push(Message::Assistant(message));
            let mut output = None;
            let mut call_stats: Vec<CallStats> = Vec::with_capacity(finished.len());
            for finished in finished.into_iter().flatten() {
                output = output.or(finished.output);
                conversation.push(Message::Tool(finished.result));
                call_stats.push(finished.stats);
            }
            self.events.emit(|| TurnEvent::BatchFinished {
                iteration,
                calls: batch_calls,
            });
            let batch_ended = Instant::now();
            last_mark = Some(batch_ended);
            stats.iterations.push(IterationStats {
                batch_duration: batch_ended - batch_started,
                ..answered(call_stats)
            });
            if !pending.is_empty() {
                let counts = Prior {
                    iterations: iteration,
                    calls,
                    requests,
                    usage: stats.usage,
                };
                let paused = self.paused(message_index, pending, counts, None);
                return Ok(end(paused, Some(finish_reason), conversation, stats));
            }
            if let Some(value) = output {
                return Ok(end(
                    TurnStatus::Output {
                        value: self.output.value(value),
                    },
                    Some(finish_reason),
                    conversation,
                    stats,
                ));
            }
        }
    }

    /// One model request; `None` when cancelled first. A panicking model
    /// fails the turn like a failing one.
    async fn ask(&self, conversation: &Conversation) -> Result<Option<ModelResponse>, ModelError> {
        let site = self.table().site();
        let request = ModelRequest {
            conversation,
            instructions: site.instructions(),
            tools: self.table().offered(),
            mode: site.mode_name(),
            output: self.output.native(),
            events: self.events,
        };
        // `respond` is called inside the polled block, so a model that
        // panics while creating its future is caught too.
        // Contained (a model that panics, also while its future is made or
        // dropped, fails the turn like a failing one): `respond` is called
        // inside the polled block.
        let respond = Contained::new(async move { self.model.respond(request).await });
        match until_cancelled(self.cancellation, respond).await {
            None => Ok(None),
            Some(Ok(Ok(response))) => Ok(Some(response)),
            Some(Ok(Err(error))) => Err(error),
            Some(Err(panic)) => Err(ModelError::panicked(panic_message(panic.as_ref()))),
        }
    }

    /// Runs the ready calls of one batch and answers the others; `None`
    /// when cancelled while calls ran (every call is then dropped, so no
    /// tool of this batch runs after this returns).
    ///
    /// A batch with one call to run runs it on the turn's own task: there
    /// is nothing to run beside it, and handing it to another task (and on
    /// a multi-thread runtime, to another thread) would cost more than most
    /// tools do. More calls each get a task of their own, at most
    /// `parallel` at once.
    pub(super) async fn run_batch(
        &self,
        batch: &[&ToolCall],
        prepared: Vec<Prepared<'_>>,
        cut_off: bool,
    ) -> Option<Vec<Option<Finished>>> {
        let site = self.table().site();
        let mut ready = 0;
        let mut slots: Vec<Slot<'_>> = prepared
            .into_iter()
            .zip(batch)
            .map(|(prepared, call)| match prepared {
                Prepared::Ready(call) => {
                    ready += 1;
                    Slot::Ready(call)
                }
                Prepared::Answered(error) => {
                    let done = call::unrun(site, call, error);
                    self.finished(&done.stats);
                    Slot::Done(done)
                }
                // It waits for a resume: it gets no result here.
                Prepared::Pending(_) => Slot::Waiting,
            })
            .collect();
        // A cut-off batch runs nothing and is answered whatever happens
        // next; any other batch is not committed once the turn is
        // cancelled.
        let finished = (cut_off && ready == 0)
            || if ready == 1 {
                self.run_inline(batch, &mut slots).await
            } else {
                self.run_tasks(batch, &mut slots).await
            };
        if !finished {
            return None;
        }
        let results = slots
            .into_iter()
            .zip(batch)
            .map(|(slot, call)| match slot {
                Slot::Waiting => None,
                Slot::Done(done) => Some(done),
                // Its call died outside the contained tool and middleware
                // code; it still gets its one result.
                Slot::Ready(_) | Slot::Taken => {
                    let aborted = call::aborted(site, call);
                    // It may have sent `ToolCallStarted`: every started
                    // call gets its finished event.
                    self.finished(&aborted.stats);
                    Some(aborted)
                }
            })
            .collect();
        Some(results)
    }

    /// What every call of a batch shares with the turn: its token, its
    /// events and its share with the agents the calls run.
    fn turn_link(&self) -> Arc<TurnLink> {
        Arc::new(TurnLink {
            cancellation: self.cancellation.clone(),
            events: self
                .events
                .is_watched()
                .then(|| Arc::new(self.events.clone()) as Arc<dyn CallEvents>),
            share: Some(Arc::clone(&self.share) as Arc<dyn std::any::Any + Send + Sync>),
        })
    }

    /// Puts a call's answer in its slot, with its finished event (unless
    /// its agent paused: such a call is pending, not finished).
    fn settle(&self, slots: &mut [Slot<'_>], index: usize, done: Finished) {
        if !self.share().is_parked(&done.stats.tool_call_id) {
            self.finished(&done.stats);
        }
        slots[index] = Slot::Done(done);
    }

    /// Runs the batch's one ready call here, until it ends or the turn is
    /// cancelled (`false`: the call's future is dropped). A panic outside
    /// the call's contained tool and middleware code leaves its slot
    /// empty, as a task's would.
    async fn run_inline(&self, batch: &[&ToolCall], slots: &mut [Slot<'_>]) -> bool {
        let Some((index, ready)) = slots
            .iter_mut()
            .enumerate()
            .find_map(|(index, slot)| slot.take_ready().map(|ready| (index, ready)))
        else {
            return true;
        };
        let call = batch[index];
        let started = |id: &str, name: &str| {
            self.events.emit(|| TurnEvent::ToolCallStarted {
                tool_call_id: id.to_owned(),
                tool_name: name.to_owned(),
            });
        };
        // Contained as a task of its own is (a panic outside the tool's and
        // the middlewares' own boundaries, also while the call is dropped
        // mid-flight, leaves its slot empty).
        let run = Contained::new(ready.call(
            self.table().site(),
            call.id.clone(),
            call.name.clone(),
            Some(self.turn_link()),
            started,
        ));
        match until_cancelled(self.cancellation, run).await {
            None => false,
            // The token fired as the call ended (a tool that stops the
            // turn): the batch is not committed, as with calls on tasks.
            Some(_) if self.cancellation.is_cancelled() => false,
            Some(Ok(done)) => {
                self.settle(slots, index, done);
                true
            }
            Some(Err(panic)) => {
                drop_payload(Some(panic));
                true
            }
        }
    }

    /// Runs the batch's ready calls on tasks of their own, at most
    /// `parallel` at once, until they all end or the turn is cancelled
    /// (`false`: every task is aborted and awaited).
    async fn run_tasks(&self, batch: &[&ToolCall], slots: &mut [Slot<'_>]) -> bool {
        let limits = self.table().site().limits();
        let permits =
            (limits.parallel.get() as usize).clamp(1, batch.len().clamp(1, Semaphore::MAX_PERMITS));
        let semaphore = Arc::new(Semaphore::new(permits));
        let mut tasks = JoinSet::new();
        // Gates the queued calls. Declared after `tasks`, so when this future
        // is dropped mid-batch the guard cancels it *before* the JoinSet
        // aborts its tasks: a queued call woken by the slot a dying call
        // releases sees the gate closed and never starts.
        // Shared behind an `Arc`: cloning a token takes its lock, an `Arc`
        // does not.
        let gate = Arc::new(self.cancellation.child_token());
        let _close_gate_on_drop = CancellationToken::clone(&gate).drop_guard();
        // Every call's context shares the turn's token and events (one lock
        // here, an `Arc` per call).
        let turn_link = self.turn_link();
        let ready = slots
            .iter_mut()
            .enumerate()
            .filter_map(|(index, slot)| slot.take_ready().map(|ready| (index, ready)));
        for (index, ready) in ready {
            let call = batch[index];
            // Its own share of the tool: the task may outlive the borrow
            // (it is aborted, not awaited, when cancelled).
            let ready = ready.into_owned();
            let owned = self.table().owned_site();
            let semaphore = Arc::clone(&semaphore);
            let gate = Arc::clone(&gate);
            let link = Arc::clone(&turn_link);
            let events = self.events.clone();
            let (tool_call_id, tool_name) = (call.id.clone(), call.name.clone());
            tasks.spawn(
                async move {
                    // A free slot is taken at once; waiting for one ends at
                    // cancellation. Either way a call never starts after the
                    // turn is cancelled.
                    let _permit = match Arc::clone(&semaphore).try_acquire_owned() {
                        Ok(permit) => permit,
                        Err(_) => tokio::select! {
                            biased;
                            () = gate.cancelled() => return None,
                            permit = semaphore.acquire_owned() => permit.ok()?,
                        },
                    };
                    if gate.is_cancelled() {
                        return None;
                    }
                    let started = |id: &str, name: &str| {
                        events.emit(|| TurnEvent::ToolCallStarted {
                            tool_call_id: id.to_owned(),
                            tool_name: name.to_owned(),
                        });
                    };
                    let done = ready
                        .call(owned.site(), tool_call_id, tool_name, Some(link), started)
                        .await;
                    Some((index, done))
                }
                // Under the iteration's span: the call's own span is its child.
                .in_current_span(),
            );
        }
        let finished = tokio::select! {
            biased;
            () = self.cancellation.cancelled() => false,
            () = async {
                while let Some(joined) = tasks.join_next().await {
                    if let Ok(Some((index, done))) = joined {
                        self.settle(slots, index, done);
                    }
                }
            } => true,
        };
        if !finished {
            tasks.shutdown().await;
        }
        finished
    }

    /// This turn's share with the agents its calls run.
    pub(super) fn share(&self) -> &TurnShare {
        &self.share
    }

    /// Tells the watchers a call finished.
    pub(super) fn finished(&self, stats: &CallStats) {
        self.events.emit(|| TurnEvent::ToolCallFinished {
            tool_call_id: stats.tool_call_id.clone(),
            tool_name: stats.tool_name.clone(),
            duration: stats.duration,
            error: stats.error,
        });
    }
}

/// Where one call of a batch stands while the batch runs.
pub(super) enum Slot<'a> {
    /// Waiting for a resume: no result here.
    Waiting,
    /// To run.
    Ready(Ready<'a>),
    /// Handed to its run; it puts its answer back, unless it died outside
    /// the contained tool and middleware code.
    Taken,
    /// Answered.
    Done(Finished),
}

impl<'a> Slot<'a> {
    /// The call to run, if this slot holds one; the slot is then
    /// [`Slot::Taken`].
    fn take_ready(&mut self) -> Option<Ready<'a>> {
        match std::mem::replace(self, Slot::Taken) {
            Slot::Ready(ready) => Some(ready),
            other => {
                *self = other;
                None
            }
        }
    }
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
