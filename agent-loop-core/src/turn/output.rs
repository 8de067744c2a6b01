//! A turn's structured output: the [`TurnOptions`] that ask for it, the
//! instructions a text answer gets, and what becomes of each final answer
//! (the [`Output`] itself is the `output` module's).

use tokio_util::sync::CancellationToken;
use typed_builder::TypedBuilder;

use crate::bind::BoundTool;
use crate::context::Compactor;
use crate::output::Output;
use crate::turn::{BudgetPolicy, PausePolicy, Resume, TurnEvents};
use serde_json::Value;

#[cfg(doc)]
use crate::tool::STRUCTURED_OUTPUT_TOOL_NAME;

/// How many plain-text answers (in [`OutputMode::Native`], answers that are
/// not valid output) a turn that asks for output answers with an
/// instruction before it fails with
/// [`TurnError::NoOutput`](crate::turn::TurnError::NoOutput).
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// The instruction a plain-text answer gets while the turn asks for output.
pub const OUTPUT_INSTRUCTION: &str = "Do not answer in text: call the `structured_output` tool with your final answer as its arguments.";

/// The instruction a final answer gets in [`OutputMode::Native`] when its
/// text is not JSON that passes the output's schema.
pub const NATIVE_OUTPUT_INSTRUCTION: &str =
    "Answer with only the JSON value the output schema asks for: no other text, no code fence.";

/// A turn's side of its structured output: the control tool it offers (in
/// tool mode), the output it asks the provider for (native mode), and what
/// becomes of each final answer in text.
pub(crate) struct OutputProtocol<'a> {
    output: Option<&'a Output>,
    native: bool,
    retries: u32,
    mixed_batch: MixedBatch,
}

/// What a turn does with a final answer in text.
pub(crate) enum AnswerStep {
    /// No output asked for: the turn completed.
    Completed,
    /// A native answer that is the output (unwrapped).
    Output(Value),
    /// Not the output: ask again with this user message.
    Instruct(&'static str),
    /// Not the output, and no retry is left.
    NoOutput,
}

impl<'a> OutputProtocol<'a> {
    pub(crate) fn new(options: &'a TurnOptions<'_>) -> Self {
        Self {
            output: options.output.as_ref(),
            native: options.output_mode == OutputMode::Native,
            retries: options.output_retries,
            mixed_batch: options.mixed_batch,
        }
    }

    /// The control tool the model is offered, in tool mode.
    pub(crate) fn control(&self) -> Option<&'a BoundTool> {
        self.output
            .filter(|_| !self.native)
            .map(|output| &output.control)
    }

    /// `true` when the turn asks for structured output (its protocol then
    /// handles every text answer).
    pub(crate) fn asked(&self) -> bool {
        self.output.is_some()
    }

    /// The output asked for natively.
    pub(crate) fn native(&self) -> Option<&'a Output> {
        self.output.filter(|_| self.native)
    }

    /// `true` when a batch with the output runs none of its other calls.
    pub(crate) fn ends_batch(&self) -> bool {
        self.mixed_batch == MixedBatch::EndEarly
    }

    /// The turn's value from what the control call returned.
    pub(crate) fn value(&self, returned: Value) -> Value {
        match self.output {
            Some(output) => output.unwrap_value(returned),
            None => returned,
        }
    }

    /// What becomes of the final answer `text`: without an output, the
    /// turn completes; a native answer may be the output; any other
    /// answer is instructed to give it, at most `retries` times
    /// (`instructed`: the turn's answers instructed so far, counted here).
    pub(crate) fn answer(&self, text: &str, instructed: &mut u32) -> AnswerStep {
        let Some(output) = self.output else {
            return AnswerStep::Completed;
        };
        if self.native
            && let Some(value) = output.value_in_answer(text)
        {
            return AnswerStep::Output(value);
        }
        if *instructed >= self.retries {
            return AnswerStep::NoOutput;
        }
        *instructed = instructed.saturating_add(1);
        AnswerStep::Instruct(if self.native {
            NATIVE_OUTPUT_INSTRUCTION
        } else {
            OUTPUT_INSTRUCTION
        })
    }
}

/// What to do with the other calls of a batch holding a valid
/// [`STRUCTURED_OUTPUT_TOOL_NAME`] call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MixedBatch {
    /// End the turn at once: the other calls never run and are answered
    /// "not run: the turn has its output". The default.
    #[default]
    EndEarly,
    /// Run every other call of the batch first, then end the turn.
    RunAll,
}

/// How a turn asks the model for its [`Output`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputMode {
    /// Through the control tool [`STRUCTURED_OUTPUT_TOOL_NAME`]: works with
    /// every model that calls tools. The default.
    #[default]
    Tool,
    /// Through the provider's own structured-output setting: the control
    /// tool is not offered, the output is passed to the model in
    /// [`ModelRequest::output`](crate::turn::ModelRequest::output), and the
    /// final answer's text is the output (JSON that passes the schema; a
    /// wrapped schema's answer is `{"value": ...}`). A model that cannot do
    /// native output may ignore it: its answers are then checked the same
    /// way.
    Native,
}

/// Options of one turn, for [`run_turn`](crate::Definition::run_turn):
/// its cancellation token, where its events go, and the structured output
/// it must end in. Every option is set at most once (a second call of a
/// setter does not compile: "Repeated field"), and each left out has its
/// default: never cancelled, no events, no output.
///
/// A `&CancellationToken` converts into options with only that token, so
/// `run_turn(&model, &mut conversation, &token)` is the short form.
///
/// ```
/// use agent_loop_core::turn::{MixedBatch, Output, TurnEvents, TurnOptions};
/// use tokio_util::sync::CancellationToken;
///
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Verdict { spam: bool }
///
/// let (events, _receiver) = TurnEvents::channel();
/// let cancellation = CancellationToken::new();
/// let options = TurnOptions::builder()
///     .cancellation(&cancellation)
///     .events(&events)
///     .output(Output::typed::<Verdict>()?)
///     .output_retries(1)
///     .mixed_batch(MixedBatch::RunAll)
///     .build();
/// # let _ = options;
/// # Ok::<_, agent_loop_core::turn::OutputError>(())
/// ```
#[derive(Clone, Debug, TypedBuilder)]
#[builder(
    doc,
    builder_method(doc = "Options set one by one; `.build()` makes them."),
    build_method(doc = "The options, each one left out at its default.")
)]
#[non_exhaustive]
pub struct TurnOptions<'a> {
    #[builder(
        default,
        setter(
            strip_option,
            doc = "The turn's cancellation token: when it fires, the turn returns promptly with [`TurnStatus::Interrupted`](crate::turn::TurnStatus::Interrupted). Never cancelled unless set."
        )
    )]
    pub(crate) cancellation: Option<&'a CancellationToken>,
    #[builder(
        default,
        setter(
            strip_option,
            doc = "Sends the turn's [`TurnEvent`](crate::turn::TurnEvent)s to `events` as the turn runs; sending never blocks the turn. Nowhere unless set."
        )
    )]
    pub(crate) events: Option<&'a TurnEvents>,
    #[builder(
        default,
        setter(
            strip_option,
            doc = "The turn must end in `output` ([`TurnStatus::Output`](crate::turn::TurnStatus::Output)). No output unless set."
        )
    )]
    pub(crate) output: Option<Output>,
    #[builder(
        default = DEFAULT_OUTPUT_RETRIES,
        setter(
            doc = "How many plain-text answers get an instruction to call [`STRUCTURED_OUTPUT_TOOL_NAME`] (in [`OutputMode::Native`]: answers that are not valid output get [`NATIVE_OUTPUT_INSTRUCTION`]) before the turn fails with [`TurnError::NoOutput`](crate::turn::TurnError::NoOutput): [`DEFAULT_OUTPUT_RETRIES`] unless set; `0` fails at the first."
        )
    )]
    pub(crate) output_retries: u32,
    #[builder(
        default,
        setter(
            doc = "What to do with the other calls of a batch that holds the output: [`MixedBatch::EndEarly`] unless set."
        )
    )]
    pub(crate) mixed_batch: MixedBatch,
    #[builder(
        default,
        setter(doc = "How the model is asked for the output: [`OutputMode::Tool`] unless set.")
    )]
    pub(crate) output_mode: OutputMode,
    #[builder(
        default,
        setter(
            strip_option,
            doc = "Resumes a turn that paused ([`TurnStatus::Paused`](crate::turn::TurnStatus::Paused)) with one decision per pending call, on the same session and conversation: see [`pause`](crate::turn::pause). A fresh turn unless set."
        )
    )]
    pub(crate) resume: Option<&'a Resume>,
    #[builder(
        default,
        setter(
            doc = "What the turn does when a budget of its limits is reached before a model request: fail with [`TurnError::Budget`](crate::turn::TurnError::Budget) ([`BudgetPolicy::Fail`], unless set) or pause ([`BudgetPolicy::Pause`])."
        )
    )]
    pub(crate) budget_policy: BudgetPolicy,
    #[builder(
        default,
        setter(
            doc = "What the turn does with the other calls of a batch in which a call waits for a decision: hold them too ([`PausePolicy::HoldBatch`], unless set) or run them first ([`PausePolicy::RunOthers`])."
        )
    )]
    pub(crate) pause_policy: PausePolicy,
    #[builder(
        default,
        setter(
            strip_option,
            doc = "Compacts the conversation with `compactor` when a request reaches the mode's `compact_at` share of `context_tokens`, or when the provider says the context window is full (see [`context`](crate::context)). [`ElideToolResults`](crate::context::ElideToolResults) when `context_tokens` is set; without it and without `context_tokens`, the turn never compacts."
        )
    )]
    pub(crate) compactor: Option<&'a dyn Compactor>,
    #[builder(
        default,
        setter(
            strip_option,
            doc = "Where a resume claims its pause before anything runs, so that a stored pause goes on at most once ([`PauseClaims`](crate::gate::PauseClaims)): give every process or binding that may resume the same pause one store. The binding's own [`InMemoryPauseClaims`](crate::gate::InMemoryPauseClaims) unless set."
        )
    )]
    pub(crate) claims: Option<&'a dyn crate::gate::PauseClaims>,
    #[builder(
        default,
        setter(
            strip_option,
            doc = "The prices [`TurnStats::cost`](crate::turn::TurnStats::cost) is computed at, in place of the model's own ([`Model::prices`](crate::turn::Model::prices)): for a model of your own, or your negotiated prices. The model's unless set."
        )
    )]
    pub(crate) prices: Option<crate::conversation::Prices>,
    #[builder(
        default,
        setter(
            strip_option,
            doc = "The input tokens one request may hold, in place of the model's own ([`Model::context_window`](crate::turn::Model::context_window)): the turn keeps to the smaller of this and the mode's `context_tokens`. The model's unless set."
        )
    )]
    pub(crate) context_window: Option<u32>,
    /// The share of the turn whose call runs this turn's agent: set by
    /// [`tool::Definition::agent`](crate::tool::Definition::agent)'s tool.
    #[builder(default, setter(skip))]
    pub(crate) parent: Option<crate::turn::nesting::Parent>,
}

impl TurnOptions<'_> {
    /// These options with what `model` says of itself where they say
    /// nothing: its prices ([`Model::prices`](crate::turn::Model::prices))
    /// and its context window
    /// ([`Model::context_window`](crate::turn::Model::context_window)).
    /// [`run_turn`](crate::Definition::run_turn) does this; a driver of
    /// your own does it too, so that the turn's cost is counted, its cost
    /// budget kept and its window respected.
    #[must_use]
    pub fn for_model<M: crate::turn::Model + ?Sized>(mut self, model: &M) -> Self {
        self.prices = self.prices.or_else(|| model.prices());
        self.context_window = self.context_window.or_else(|| model.context_window());
        self
    }
}

impl Default for TurnOptions<'_> {
    /// Every option at its default: never cancelled, no events, no output.
    fn default() -> Self {
        Self::builder().build()
    }
}

impl<'a> From<&'a CancellationToken> for TurnOptions<'a> {
    /// Options with only the cancellation token set.
    fn from(cancellation: &'a CancellationToken) -> Self {
        Self::builder().cancellation(cancellation).build()
    }
}
