//! The turn runner: ask the model, enforce the limits,
//! run each batch with at most `parallel` calls at once, turn every per-call
//! problem into a model-facing error result, and keep the conversation valid
//! whatever happens.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, info_span};

use crate::bind::{Binding, Bound};
use crate::bind::{ToolCallError, call};
use crate::conversation::ids::{IdSet, fresh_tool_call_id};
use crate::conversation::{
    AssistantMessage, ContentPart, Conversation, FinishReason, Message, ModelResponse, ToolCall,
    ToolResult, Usage, repair, text_of,
};
use crate::definition::Definition;
use crate::definition::layout::ModeLayout;
use crate::json;
use crate::limits::ResolvedToolLimits;
use crate::panic::panic_message;
use crate::text::{ERROR_TEXT_BYTES, clean_error_text, truncate_middle};
use crate::tool::checked::CheckedInfo;
use crate::tool::{BoxError, CallContext, STRUCTURED_OUTPUT_TOOL_NAME, Tool, ToolInfo, ToolOutput};
use crate::turn::{
    CallStats, ExceededLimit, IterationStats, MixedBatch, Model, ModelRequest,
    NATIVE_OUTPUT_INSTRUCTION, OUTPUT_INSTRUCTION, Output, OutputMode, ToolLimitError, TurnError,
    TurnEvent, TurnEvents, TurnOptions, TurnOutcome, TurnStats, TurnStatus,
};

impl Definition<Bound> {
    /// Runs one turn: asks `model` and runs the tool calls it asks for, in
    /// the current mode, until it gives a final answer.
    ///
    /// Appends to `conversation` the assistant messages, every tool result
    /// and the final answer. Each batch counts one iteration and
    /// `batch.len()` calls against the mode's [`ResolvedToolLimits`]; a
    /// batch that would exceed `iterations` or `calls` is not run and not
    /// appended, and the turn fails with [`TurnError::ToolLimit`]. A final
    /// answer is never blocked. Within a batch at most `parallel` calls run
    /// at once, each on its own Tokio task (truly parallel on a multi-thread
    /// runtime), each through the middleware chain; results are appended in
    /// call order.
    ///
    /// Per-call problems (unknown tool, arguments that are not a JSON object
    /// or fail the schema, a tool error, a tool or middleware panic) become
    /// error results (`is_error: true`) the model can read, and the turn
    /// goes on. A result whose text is longer than `result_bytes` has its
    /// text cut to head + marker + tail; images pass whole.
    ///
    /// When `cancellation` fires, the turn returns promptly with
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
    /// In every case, each tool call id in `conversation` has exactly one
    /// result afterwards. Before the first request the conversation goes
    /// through [`conversation::repair`](crate::conversation::repair): a
    /// call without a result (the process died mid-tool) gets an error
    /// result saying it was interrupted, and its id is listed in
    /// [`TurnOutcome::repaired`]; every provider refuses a conversation with
    /// an unanswered call. A call whose id is empty or already used (in
    /// the conversation or in the response) gets a fresh unique id, shared
    /// by its result.
    ///
    /// Each response's [`Usage`] is added up in
    /// [`TurnStats::usage`], and per batch in [`IterationStats::usage`].
    ///
    /// Must run inside a Tokio runtime. With unlimited iterations or calls,
    /// bound the turn yourself (a timeout, or cancelling the token).
    ///
    /// Errors: [`TurnError::ToolLimit`] as above; [`TurnError::Model`] when
    /// the model request fails or panics;
    /// [`TurnError::Conversation`] when the conversation handed in has a
    /// result that answers no call of the assistant message before it, or a
    /// second result for one call (nothing is sent and `conversation` is
    /// unchanged).
    pub async fn run_turn<M: Model + ?Sized>(
        &self,
        model: &M,
        conversation: &mut Conversation,
        cancellation: &CancellationToken,
    ) -> Result<TurnOutcome, TurnError> {
        self.run_turn_with_events(model, conversation, cancellation, &TurnEvents::default())
            .await
    }

    /// [`run_turn`](Self::run_turn), sending [`TurnEvent`]s to `events` as
    /// the turn runs: each model request started and answered, streamed
    /// text and reasoning (from models that stream), each tool call started
    /// and finished, each batch finished. Sending never blocks the turn.
    ///
    /// ```
    /// use agent_loop::conversation::{Message, ModelResponse, ToolCall};
    /// use agent_loop::tool::{self, BoxError, ToolInfo};
    /// use agent_loop::turn::{ScriptedModel, TurnEvent, TurnEvents};
    /// use agent_loop::{Bindings, Definition, LoopId, SessionId};
    /// use tokio_util::sync::CancellationToken;
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
    ///     ModelResponse::answer("It is noon."),
    /// ]);
    /// let (events, mut received) = TurnEvents::channel();
    /// let mut conversation = vec![Message::user("Time?")];
    /// session.run_turn_with_events(&model, &mut conversation, &CancellationToken::new(), &events).await?;
    ///
    /// let mut seen = Vec::new();
    /// while let Ok(event) = received.try_recv() {
    ///     seen.push(event);
    /// }
    /// assert!(matches!(&seen[2], TurnEvent::ToolCallStarted { tool_name, .. } if tool_name == "now"));
    /// assert!(matches!(seen.last(), Some(TurnEvent::ModelResponded { .. })));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// Errors: as [`run_turn`](Self::run_turn).
    pub async fn run_turn_with_events<M: Model + ?Sized>(
        &self,
        model: &M,
        conversation: &mut Conversation,
        cancellation: &CancellationToken,
        events: &TurnEvents,
    ) -> Result<TurnOutcome, TurnError> {
        self.run_turn_with(
            model,
            conversation,
            cancellation,
            TurnOptions::new().events(events),
        )
        .await
    }

    /// [`run_turn`](Self::run_turn) with [`TurnOptions`]: where events go
    /// (as [`run_turn_with_events`](Self::run_turn_with_events)) and the
    /// structured output the turn must end in.
    ///
    /// With an [`Output`], the model is offered one more tool, named
    /// [`STRUCTURED_OUTPUT_TOOL_NAME`],
    /// after the mode's tools. A call to it whose arguments pass the
    /// output's schema ends the turn with [`TurnStatus::Output`]; it gets an
    /// ok result, so the conversation stays valid. Arguments that fail the
    /// schema get an error result naming the failing path, and the turn
    /// goes on. The other calls of that batch are answered "not run" and
    /// never run ([`MixedBatch::EndEarly`], the default) or run first
    /// ([`MixedBatch::RunAll`]); of two valid output calls, the first wins
    /// and the other is answered "not run". A text answer is answered with
    /// [`OUTPUT_INSTRUCTION`] (a user message, counted as an iteration) up
    /// to [`TurnOptions::output_retries`] times; one more fails the turn
    /// with [`TurnError::NoOutput`].
    ///
    /// The output call is a call like any other: it counts against `calls`,
    /// runs through the middleware chain (which may refuse it, or change
    /// the value: what the chain returns is the output, not checked again),
    /// sends its events and has its `execute_tool` span.
    ///
    /// With [`OutputMode::Native`] ([`TurnOptions::output_mode`]), no
    /// control tool is offered: the output goes to the model in
    /// [`ModelRequest::output`] (the HTTP models send it as the provider's
    /// structured-output setting), and a final answer whose text is JSON
    /// that passes the output's schema (a wrapped schema's `{"value":
    /// ...}`, unwrapped) ends the turn with [`TurnStatus::Output`]. Any
    /// other answer is answered with [`NATIVE_OUTPUT_INSTRUCTION`], counted
    /// and capped as above. Tool calls run as in any turn.
    ///
    /// ```
    /// use agent_loop::conversation::{Message, ModelResponse, ToolCall};
    /// use agent_loop::turn::{Output, ScriptedModel, TurnOptions};
    /// use agent_loop::{Bindings, Definition, LoopId, SessionId};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// #[derive(schemars::JsonSchema, serde::Deserialize, Debug, PartialEq)]
    /// struct Verdict { spam: bool }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let session = Definition::builder().name("triage").build().validate()?
    ///     .bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
    /// let model = ScriptedModel::new([ModelResponse::tool_calls([
    ///     ToolCall::new("call_1", "structured_output", r#"{"spam": true}"#),
    /// ])]);
    /// let mut conversation = vec![Message::user("WIN A FREE CRUISE")];
    /// let options = TurnOptions::new().output(Output::typed::<Verdict>()?);
    /// let outcome = session
    ///     .run_turn_with(&model, &mut conversation, &CancellationToken::new(), options)
    ///     .await?;
    /// assert_eq!(outcome.output_as::<Verdict>().transpose()?, Some(Verdict { spam: true }));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// Errors: as [`run_turn`](Self::run_turn), and
    /// [`TurnError::NoOutput`] as above.
    pub async fn run_turn_with<M: Model + ?Sized>(
        &self,
        model: &M,
        conversation: &mut Conversation,
        cancellation: &CancellationToken,
        options: TurnOptions<'_>,
    ) -> Result<TurnOutcome, TurnError> {
        let unwatched = TurnEvents::default();
        let binding: &Binding = self.binding();
        let mode = binding.current;
        let span = info_span!(
            "invoke_agent",
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = %self.recipe.name,
            "gen_ai.conversation.id" = %binding.session_id,
            mode = binding.mode(mode).name.as_deref().unwrap_or(""),
        );
        let native = options.output_mode == OutputMode::Native;
        let output_tool = options.output.as_ref().filter(|_| !native).map(|output| {
            let info = Arc::new(output.info().clone());
            let tool = Arc::new(OutputTool {
                info: Arc::clone(&info),
            }) as Arc<dyn Tool>;
            let checked = CheckedInfo {
                info,
                name: Arc::from(STRUCTURED_OUTPUT_TOOL_NAME),
                validator: Arc::clone(output.validator()),
            };
            (tool, Arc::new(checked))
        });
        Turn {
            binding,
            mode,
            model,
            cancellation,
            events: options.events.unwrap_or(&unwatched),
            output: options.output.as_ref(),
            output_tool,
            output_retries: options.output_retries,
            mixed_batch: options.mixed_batch,
            native,
        }
        .run(conversation)
        .instrument(span)
        .await
    }
}

/// The control tool's handler: its output is its (checked) arguments.
struct OutputTool {
    info: Arc<ToolInfo>,
}

#[async_trait::async_trait]
impl Tool for OutputTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn invoke(
        &self,
        arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Ok(arguments.into())
    }
}

/// The structured-output control tool and its checked info, made once per
/// turn.
type ControlTool = (Arc<dyn Tool>, Arc<CheckedInfo>);

/// A call ready to run: the tool, its checked info (shared with the call's
/// context) and the checked arguments.
type Prepared = (Arc<dyn Tool>, Arc<CheckedInfo>, Value);

/// What the runner does with one call of a batch.
enum Step {
    /// Look the tool up, check the arguments and run it.
    Run,
    /// Run the output call, with its checked arguments.
    Output(Value),
    /// Do not run it: answer with this.
    Answer(ToolCallError),
}

/// The result text of the output call that ends the turn.
const OUTPUT_RECEIVED: &str = "output received; the turn is over";

/// One running turn.
struct Turn<'a, M: ?Sized> {
    binding: &'a Binding,
    /// Index of the mode, fixed for the whole turn.
    mode: usize,
    model: &'a M,
    cancellation: &'a CancellationToken,
    events: &'a TurnEvents,
    /// The output the turn must end in, if any.
    output: Option<&'a Output>,
    /// The control tool and its name, when `output` is set.
    output_tool: Option<ControlTool>,
    output_retries: u32,
    mixed_batch: MixedBatch,
    /// [`OutputMode::Native`]: no control tool; the answer's text is the
    /// output.
    native: bool,
}

impl<M: Model + ?Sized> Turn<'_, M> {
    fn mode(&self) -> &ModeLayout {
        self.binding.mode(self.mode)
    }

    /// The model-facing tool list of the turn's mode.
    fn infos(&self) -> &[ToolInfo] {
        &self.binding.infos[self.mode]
    }

    /// The output asked for through the control tool, if any.
    fn tool_output(&self) -> Option<&Output> {
        self.output.filter(|_| !self.native)
    }

    /// The output asked for natively, if any.
    fn native_output(&self) -> Option<&Output> {
        self.output.filter(|_| self.native)
    }

    async fn run(&self, conversation: &mut Conversation) -> Result<TurnOutcome, TurnError> {
        let started = Instant::now();
        // Models copy and serialise the conversation, recursing once per
        // level of every value it holds.
        if let Some(index) = conversation
            .iter()
            .position(|message| message.json_values().any(json::too_deep))
        {
            return Err(TurnError::TooDeep { index });
        }
        let repaired = repair(conversation)?;
        let first_new = conversation.len();
        let limits = self.mode().tool_limits;
        let mut stats = TurnStats::default();
        let mut calls: u32 = 0;
        let mut text_answers: u32 = 0;
        let tools: Cow<'_, [ToolInfo]> = match self.tool_output() {
            Some(output) => {
                let mut tools = self.infos().to_vec();
                tools.push(output.info().clone());
                Cow::Owned(tools)
            }
            None => Cow::Borrowed(self.infos()),
        };
        // Every tool call id the conversation holds, so a reused one gets a
        // fresh id before its batch runs.
        let mut call_ids: IdSet = conversation
            .iter()
            .filter_map(Message::as_assistant)
            .flat_map(|assistant| assistant.tool_calls())
            .map(|call| call.id.clone())
            .collect();
        let end = |status, finish_reason, conversation: &Conversation, mut stats: TurnStats| {
            stats.duration = started.elapsed();
            TurnOutcome {
                status,
                appended: first_new..conversation.len(),
                stats,
                finish_reason,
                repaired: repaired.clone(),
            }
        };
        loop {
            let model_started = Instant::now();
            let iteration = stats.iteration_count().saturating_add(1);
            self.events
                .emit(|| TurnEvent::ModelRequestStarted { iteration });
            let asked =
                self.ask(conversation, &tools)
                    .await
                    .map_err(|source| TurnError::Model {
                        source,
                        usage: stats.usage,
                    })?;
            let Some(response) = asked else {
                return Ok(end(TurnStatus::Interrupted, None, conversation, stats));
            };
            let model_duration = model_started.elapsed();
            let ModelResponse {
                mut message,
                finish_reason,
                usage,
            } = response;
            stats.usage += usage;
            if message.json_values().any(json::too_deep) {
                // A `Model` built it in code; the next request would copy it.
                drop_json_values(message);
                return Err(TurnError::Model {
                    source: format!(
                        "the model's response holds a JSON value nested deeper than {} levels",
                        json::MAX_DEPTH
                    )
                    .into(),
                    usage: stats.usage,
                });
            }
            self.events.emit(|| TurnEvent::ModelResponded {
                finish_reason: finish_reason.clone(),
                usage,
                duration: model_duration,
            });
            if !message.has_tool_calls() {
                // A final answer: nothing to run, never blocked by limits.
                let answer = message.text();
                conversation.push(Message::Assistant(message));
                if let Some(output) = self.native_output()
                    && let Some(value) = native_value(output, &answer)
                {
                    stats.iterations.push(IterationStats {
                        model_duration,
                        batch_duration: Duration::ZERO,
                        calls: Vec::new(),
                        finish_reason: finish_reason.clone(),
                        usage,
                    });
                    return Ok(end(
                        TurnStatus::Output { value },
                        Some(finish_reason),
                        conversation,
                        stats,
                    ));
                }
                if self.output.is_some() {
                    // Output is required: tell the model how to give it.
                    if text_answers >= self.output_retries {
                        return Err(TurnError::NoOutput {
                            text: answer,
                            usage: stats.usage,
                        });
                    }
                    check_limits(&limits, iteration, calls, 0, stats.usage)?;
                    text_answers = text_answers.saturating_add(1);
                    conversation.push(Message::user(if self.native {
                        NATIVE_OUTPUT_INSTRUCTION
                    } else {
                        OUTPUT_INSTRUCTION
                    }));
                    self.events.emit(|| TurnEvent::BatchFinished {
                        iteration,
                        calls: 0,
                    });
                    stats.iterations.push(IterationStats {
                        model_duration,
                        batch_duration: Duration::ZERO,
                        calls: Vec::new(),
                        finish_reason,
                        usage,
                    });
                    continue;
                }
                return Ok(end(
                    TurnStatus::Completed { answer },
                    Some(finish_reason),
                    conversation,
                    stats,
                ));
            }
            let batch_calls = u32::try_from(message.tool_calls().count()).unwrap_or(u32::MAX);
            let would_be = calls.saturating_add(batch_calls);
            check_limits(&limits, iteration, would_be, batch_calls, stats.usage)?;
            // Empty or reused provider ids get fresh ones, so every call
            // keeps exactly one result.
            for call in message.tool_calls_mut() {
                if call.id.is_empty() || call_ids.contains(&call.id) {
                    call.id = fresh_tool_call_id(&call_ids);
                }
                call_ids.insert(call.id.clone());
            }
            // Borrowed, not copied: the message is appended once the batch ran.
            let batch: Vec<&ToolCall> = message.tool_calls().collect();

            let batch_started = Instant::now();
            let (results, output) = if finish_reason == FinishReason::Length {
                let cut = batch
                    .iter()
                    .map(|call| {
                        let cut = cut_off(call, &limits);
                        self.finished(&cut.1);
                        cut
                    })
                    .collect();
                (cut, None)
            } else {
                let span = info_span!("iteration", iteration, calls = batch_calls);
                let steps = self.plan(&batch);
                let Some(ran) = self
                    .run_batch(&batch, steps, &limits)
                    .instrument(span)
                    .await
                else {
                    return Ok(end(TurnStatus::Interrupted, None, conversation, stats));
                };
                ran
            };
            calls = would_be;
            let (results, call_stats): (Vec<ToolResult>, Vec<CallStats>) =
                results.into_iter().unzip();
            conversation.push(Message::Assistant(message));
            conversation.extend(results.into_iter().map(Message::Tool));
            self.events.emit(|| TurnEvent::BatchFinished {
                iteration,
                calls: batch_calls,
            });
            stats.iterations.push(IterationStats {
                model_duration,
                batch_duration: batch_started.elapsed(),
                calls: call_stats,
                finish_reason: finish_reason.clone(),
                usage,
            });
            if let (Some(value), Some(declared)) = (output, self.output) {
                return Ok(end(
                    TurnStatus::Output {
                        value: declared.unwrap_value(value),
                    },
                    Some(finish_reason),
                    conversation,
                    stats,
                ));
            }
        }
    }

    /// What to do with each call of a batch: without an output, run them
    /// all; with one, check every output call, keep the first valid one,
    /// and answer the rest as the turn's [`MixedBatch`] says.
    fn plan(&self, batch: &[&ToolCall]) -> Vec<Step> {
        let Some(output) = self.tool_output() else {
            return batch.iter().map(|_| Step::Run).collect();
        };
        let mut has_output = false;
        let mut steps: Vec<Step> = batch
            .iter()
            .map(|call| {
                if call.name != STRUCTURED_OUTPUT_TOOL_NAME {
                    return Step::Run;
                }
                let checked = call::parse_arguments(&call.name, &call.arguments).and_then(
                    |arguments| {
                        call::check_against(&call.name, output.validator(), &arguments)
                            .map(|()| arguments)
                    },
                );
                match checked {
                    Err(error) => Step::Answer(error),
                    Ok(_) if has_output => Step::Answer(not_run(
                        call,
                        "not run: the turn already has its output from an earlier `structured_output` call",
                    )),
                    Ok(arguments) => {
                        has_output = true;
                        Step::Output(arguments)
                    }
                }
            })
            .collect();
        if has_output && self.mixed_batch == MixedBatch::EndEarly {
            for (step, call) in steps.iter_mut().zip(batch) {
                if matches!(step, Step::Run) {
                    *step = Step::Answer(not_run(call, "not run: the turn has its output"));
                }
            }
        }
        steps
    }

    /// One model request; `None` when cancelled first. A panicking model
    /// fails the turn like a failing one.
    async fn ask(
        &self,
        conversation: &Conversation,
        tools: &[ToolInfo],
    ) -> Result<Option<ModelResponse>, BoxError> {
        let mode = self.mode();
        let request = ModelRequest {
            conversation,
            instructions: mode.instructions.as_deref(),
            tools,
            mode: mode.name.as_deref(),
            output: self.native_output(),
            events: self.events,
        };
        // `respond` is called inside the polled block, so a model that
        // panics while creating its future is caught too.
        let respond =
            AssertUnwindSafe(async move { self.model.respond(request).await }).catch_unwind();
        tokio::select! {
            biased;
            () = self.cancellation.cancelled() => Ok(None),
            response = respond => match response {
                Ok(Ok(response)) => Ok(Some(response)),
                Ok(Err(error)) => Err(error),
                Err(panic) => Err(
                    format!("the model panicked: {}", panic_message(panic.as_ref())).into(),
                ),
            },
        }
    }

    /// Runs one batch as `steps` say; `None` when cancelled (every task is
    /// then aborted and awaited, so no tool of this batch runs after this
    /// returns). With the results, the output the output call returned, if
    /// it succeeded.
    #[allow(clippy::type_complexity)]
    async fn run_batch(
        &self,
        batch: &[&ToolCall],
        steps: Vec<Step>,
        limits: &ResolvedToolLimits,
    ) -> Option<(Vec<(ToolResult, CallStats)>, Option<Value>)> {
        let is_output: Vec<bool> = steps
            .iter()
            .map(|step| matches!(step, Step::Output(_)))
            .collect();
        let mut output = None;
        let permits =
            (limits.parallel.get() as usize).clamp(1, batch.len().clamp(1, Semaphore::MAX_PERMITS));
        let semaphore = Arc::new(Semaphore::new(permits));
        let mut slots: Vec<Option<(ToolResult, CallStats)>> = vec![None; batch.len()];
        let mut tasks = JoinSet::new();
        // Gates the queued calls. Declared after `tasks`, so when this future
        // is dropped mid-batch the guard cancels it *before* the JoinSet
        // aborts its tasks: a queued call woken by the slot a dying call
        // releases sees the gate closed and never starts.
        // Shared behind an `Arc`: cloning a token takes its lock, an `Arc`
        // does not.
        let gate = Arc::new(self.cancellation.child_token());
        let _close_gate_on_drop = CancellationToken::clone(&gate).drop_guard();
        // Every call's context shares the turn's token (one lock here, an
        // `Arc` per call).
        let turn_token = Arc::new(self.cancellation.clone());
        for ((index, call), step) in batch.iter().enumerate().zip(steps) {
            let prepared = match step {
                Step::Run => self.prepare(call),
                Step::Output(arguments) => match &self.output_tool {
                    Some((tool, checked)) => Ok((Arc::clone(tool), Arc::clone(checked), arguments)),
                    None => self.prepare(call),
                },
                Step::Answer(error) => Err(error),
            };
            let (tool, checked, arguments) = match prepared {
                Ok(prepared) => prepared,
                Err(error) => {
                    let refused = finish(call, Err(error), Duration::ZERO, limits);
                    self.finished(&refused.1);
                    slots[index] = Some(refused);
                    continue;
                }
            };
            let context = self.binding.context(
                self.mode,
                Arc::clone(&checked),
                call.id.clone(),
                Some(Arc::clone(&turn_token)),
            );
            let middlewares = Arc::clone(&self.binding.layout.middlewares);
            let semaphore = Arc::clone(&semaphore);
            let gate = Arc::clone(&gate);
            let events = self.events.clone();
            let span = info_span!(
                "execute_tool",
                "gen_ai.operation.name" = "execute_tool",
                "gen_ai.tool.name" = %call.name,
                "gen_ai.tool.call.id" = %call.id,
            );
            tasks.spawn(
                async move {
                    // A free slot is taken at once; waiting for one ends at
                    // cancellation. Either way a call never starts after
                    // the turn is cancelled.
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
                    events.emit(|| TurnEvent::ToolCallStarted {
                        tool_call_id: context.tool_call_id().to_owned(),
                        tool_name: context.tool_name().to_owned(),
                    });
                    let started = Instant::now();
                    let name = &checked.name;
                    let output =
                        call::execute(tool.as_ref(), name, &middlewares, arguments, context).await;
                    Some((index, output, started.elapsed()))
                }
                .instrument(span),
            );
        }
        let finished = tokio::select! {
            biased;
            () = self.cancellation.cancelled() => false,
            () = async {
                while let Some(joined) = tasks.join_next().await {
                    if let Ok(Some((index, result, duration))) = joined {
                        let result = match result {
                            // What the chain returned is the output; a
                            // middleware that made it content parts made
                            // it their text.
                            Ok(value) if is_output[index] => {
                                output = Some(value.into_json());
                                Ok(ToolOutput::from(OUTPUT_RECEIVED))
                            }
                            // Made text for the model below: a value
                            // built too deep in code is refused first.
                            Ok(output) => call::refuse_deep_output(&batch[index].name, output),
                            Err(error) => Err(error),
                        };
                        let done = finish(batch[index], result, duration, limits);
                        self.finished(&done.1);
                        slots[index] = Some(done);
                    }
                }
            } => true,
        };
        if !finished {
            tasks.shutdown().await;
            return None;
        }
        // A slot can only be empty if its task died outside the contained
        // tool/middleware code; the call still gets its one result.
        let results = slots
            .into_iter()
            .zip(batch)
            .map(|(slot, call)| {
                slot.unwrap_or_else(|| {
                    let error = ToolCallError::new(
                        crate::bind::ToolCallErrorKind::ToolPanicked,
                        &call.name,
                        format!("the call to `{}` was aborted", call.name),
                    );
                    let aborted = finish(call, Err(error), Duration::ZERO, limits);
                    // Its task may have sent `ToolCallStarted`: every
                    // started call gets its finished event.
                    self.finished(&aborted.1);
                    aborted
                })
            })
            .collect();
        Some((results, output))
    }

    /// Tells the watchers a call finished.
    fn finished(&self, stats: &CallStats) {
        self.events.emit(|| TurnEvent::ToolCallFinished {
            tool_call_id: stats.tool_call_id.clone(),
            tool_name: stats.tool_name.clone(),
            duration: stats.duration,
            error: stats.error,
        });
    }

    /// Finds the tool in the turn's mode and reads and checks the arguments.
    fn prepare(&self, call: &ToolCall) -> Result<Prepared, ToolCallError> {
        let tool = &self.binding.tools[call::lookup(self.binding, self.mode, &call.name)?];
        let arguments = call::parse_arguments(&call.name, &call.arguments)?;
        call::check_arguments(tool, &arguments)?;
        Ok((Arc::clone(&tool.tool), Arc::clone(&tool.checked), arguments))
    }
}

fn check_limits(
    limits: &ResolvedToolLimits,
    iterations: u32,
    calls: u32,
    batch_calls: u32,
    usage: Usage,
) -> Result<(), ToolLimitError> {
    let exceeded = if !limits.iterations.allows(iterations) {
        ExceededLimit::Iterations
    } else if !limits.calls.allows(calls) {
        ExceededLimit::Calls
    } else {
        return Ok(());
    };
    Err(ToolLimitError {
        kind: exceeded,
        iterations,
        max_iterations: limits.iterations,
        calls,
        max_calls: limits.calls,
        batch_calls,
        usage,
    })
}

/// The output a native-mode answer holds: its text (trimmed, a surrounding
/// code fence removed) parsed as JSON and passing the output's schema,
/// unwrapped; `None` when it is not valid output.
fn native_value(output: &Output, text: &str) -> Option<Value> {
    let mut text = text.trim();
    if let Some(fenced) = text.strip_prefix("```").and_then(|t| t.strip_suffix("```")) {
        // The fence's first line is its language tag (`json`), if any.
        text = fenced
            .split_once('\n')
            .map_or(fenced, |(_, body)| body)
            .trim();
    }
    let value: Value = serde_json::from_str(text).ok()?;
    output
        .validator()
        .is_valid(&value)
        .then(|| output.unwrap_value(value))
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

/// The error result of a call not run because the turn has its output.
fn not_run(call: &ToolCall, message: &str) -> ToolCallError {
    ToolCallError::new(
        crate::bind::ToolCallErrorKind::NotRun,
        &call.name,
        message.to_owned(),
    )
}

/// The error result of a call whose response the output limit cut off.
fn cut_off(call: &ToolCall, limits: &ResolvedToolLimits) -> (ToolResult, CallStats) {
    let error = ToolCallError::new(
        crate::bind::ToolCallErrorKind::CutOff,
        &call.name,
        format!(
            "the call to `{}` was cut off by the output token limit and did not run; send it again with shorter arguments, or split the work into smaller calls",
            call.name
        ),
    );
    finish(call, Err(error), Duration::ZERO, limits)
}

/// The tool result the model sees, and the call's statistics.
fn finish(
    call: &ToolCall,
    output: Result<ToolOutput, ToolCallError>,
    duration: Duration,
    limits: &ResolvedToolLimits,
) -> (ToolResult, CallStats) {
    let (content, error) = match output {
        Ok(ToolOutput::Content(parts)) if !parts.is_empty() => (parts, None),
        Ok(output) => (vec![ContentPart::text(output.text())], None),
        // Bounded here to `result_bytes` too, with the error text's own
        // one-line marker: the result cut below would break the line.
        Err(error) => (
            vec![ContentPart::text(clean_error_text(
                &error.message,
                limits.result_bytes.map_or(ERROR_TEXT_BYTES, |limit| {
                    ERROR_TEXT_BYTES.min(limit.get() as usize)
                }),
            ))],
            Some(error.kind),
        ),
    };
    let (content, result_bytes, truncated) = bound_text(content, limits);
    let result = ToolResult::with_content(call.id.clone(), content, error.is_some());
    let stats = CallStats {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        duration,
        error,
        result_bytes,
        truncated,
    };
    (result, stats)
}

/// Applies `result_bytes` to the text of a result's parts: when the text
/// parts together are longer than the limit, they become one text part, cut
/// head + marker + tail, where the first one was; other parts (images) stay
/// as they are. Returns the parts, the text bytes before the cut and
/// whether it cut.
fn bound_text(
    content: Vec<ContentPart>,
    limits: &ResolvedToolLimits,
) -> (Vec<ContentPart>, usize, bool) {
    let is_text = |part: &ContentPart| matches!(part, ContentPart::Text(_));
    let text_bytes: usize = content
        .iter()
        .map(|part| match part {
            ContentPart::Text(text) => text.text.len(),
            _ => 0,
        })
        .sum();
    let Some(limit) = limits.result_bytes.map(|limit| limit.get() as usize) else {
        return (content, text_bytes, false);
    };
    if text_bytes <= limit {
        return (content, text_bytes, false);
    }
    let text = text_of(&content);
    let shown = ContentPart::text(truncate_middle(&text, limit).into_owned());
    let first_text = content.iter().position(is_text).unwrap_or(0);
    let mut parts: Vec<ContentPart> = content.into_iter().filter(|part| !is_text(part)).collect();
    parts.insert(first_text.min(parts.len()), shown);
    (parts, text_bytes, true)
}
