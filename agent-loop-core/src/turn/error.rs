//! Why a turn failed: [`TurnError`], [`ToolLimitError`] and
//! [`BudgetError`].

use crate::context::CompactionError;
use crate::conversation::{ConversationError, Cost, Usage};
use crate::limits::Limit;
use crate::support::json::TooDeep;
use crate::turn::{ModelError, ResumeError};

/// A turn that could not finish: returned by
/// [`run_turn`](crate::Definition::run_turn). The conversation keeps every
/// batch that was committed before the failure, each tool call with its
/// result.
///
/// Its causes carry different data, so the error is an enum whose variants
/// are its kind; each keeps its cause as `source()` (for `ToolLimit`, the
/// [`ToolLimitError`] itself, whose Display it shows).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The model asked for a batch that would exceed `iterations` or
    /// `calls`; the batch was not run and not added to the conversation.
    #[error(transparent)]
    ToolLimit(#[from] ToolLimitError),
    /// A budget of the turn (`requests`, `input_tokens`, `output_tokens`,
    /// `total_tokens` in [`ToolLimits`](crate::ToolLimits)) was reached
    /// before a model request: that request was not sent. The conversation
    /// holds every batch that ran before, each call with its result.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// A resume was refused before anything ran (see
    /// [`pause`](crate::turn::pause)); the conversation is unchanged.
    #[error(transparent)]
    Resume(#[from] ResumeError),
    /// The model request failed or panicked.
    #[error("turn: the model request failed")]
    Model {
        /// The model's error ([`ModelErrorKind::Panicked`](crate::turn::ModelErrorKind::Panicked)
        /// for a panic).
        #[source]
        source: ModelError,
        /// Tokens used by the turn's earlier requests, added up.
        usage: Usage,
    },
    /// The turn asks for structured output, and the model answered in text
    /// once more than `output_retries` ([`TurnOptionsBuilder::output_retries`](crate::turn::TurnOptionsBuilder::output_retries))
    /// allows. The last text answer is the last message of the conversation.
    #[error("turn: the model answered in text instead of calling `structured_output`")]
    NoOutput {
        /// The model's last text answer.
        text: String,
        /// Tokens used by the turn's requests, added up.
        usage: Usage,
    },
    /// The turn asks for structured output, and the model refused
    /// ([`FinishReason::Refusal`](crate::conversation::FinishReason::Refusal):
    /// OpenAI's `refusal`, Anthropic's `refusal` stop reason). Asking again
    /// for the value would be refused again, so the turn ends at the first
    /// refusal. The refusal is the last message of the conversation.
    #[error("turn: the model refused to give the structured output")]
    Refused {
        /// What the model said instead.
        text: String,
        /// Tokens used by the turn's requests, added up.
        usage: Usage,
    },
    /// The model answered with nothing (no text, no tool call, no image),
    /// as real providers sometimes do: Gemini's `STOP` with no parts right
    /// after tool results, its `MALFORMED_FUNCTION_CALL` and
    /// `UNEXPECTED_TOOL_CALL` without content, a Responses answer of
    /// reasoning alone, a 200 stream without text from a server whose
    /// context is full (google/adk-js #344, BerriAI/litellm #24442). The
    /// turn told the model and asked again once; this is the second empty
    /// answer in a row, or the first when the output limit
    /// ([`FinishReason::Length`](crate::conversation::FinishReason::Length))
    /// cut it, or a content filter or a refusal emptied it, where asking
    /// again would end the same way. An empty answer is never a completed
    /// turn. Not for a turn that asks for structured output, whose
    /// protocol answers every text answer.
    #[error("turn: the model answered with nothing ({finish_reason:?})")]
    EmptyAnswer {
        /// The empty answer's finish reason.
        finish_reason: crate::conversation::FinishReason,
        /// Tokens used by the turn's requests, added up.
        usage: Usage,
    },
    /// The model wrote its tool call as text (`<tool_call>{…}</tool_call>`,
    /// the Hermes format a server's parser did not read: Qwen behind
    /// vLLM), and did again after being told, as many times in a row as a
    /// failed tool call may be
    /// ([`ModelError::is_failed_tool_call`](crate::turn::ModelError::is_failed_tool_call)).
    /// The last such answer is the last message of the conversation.
    #[error("turn: the model wrote its tool calls as text")]
    ToolCallAsText {
        /// Tokens used by the turn's requests, added up.
        usage: Usage,
    },
    /// The model stopped because the conversation filled its context
    /// window ([`FinishReason::ContextWindowExceeded`](crate::conversation::FinishReason::ContextWindowExceeded),
    /// or, in a turn that compacts, a model error that
    /// [`exceeds_context_window`](ModelError::exceeds_context_window)):
    /// asking again would send the same full context. A turn with a
    /// compactor or a `context_tokens` budget compacted once and asked
    /// again before failing (see [`context`](crate::context)). The response
    /// was not added (its calls, if any, did not run), so the conversation
    /// holds what it held before that request; shorten or compact it and
    /// run a turn again.
    #[error("turn: the conversation no longer fits the model's context window")]
    ContextWindowExceeded {
        /// Tokens used by the turn's requests, added up.
        usage: Usage,
    },
    /// A compaction the turn needed was refused (see
    /// [`context`](crate::context)): its replacement broke a rule, or the
    /// compactor failed, while the request was over `context_tokens` or the
    /// provider had said the window is full. The conversation holds what
    /// it held before that compaction.
    #[error("turn: the conversation could not be compacted")]
    Compaction {
        /// Why the compaction was refused.
        #[source]
        source: CompactionError,
        /// Tokens used by the turn's requests, added up.
        usage: Usage,
    },
    /// The conversation handed to the turn pairs its tool results wrongly
    /// (see [`conversation::repair`](crate::conversation::repair)). Nothing
    /// was sent and the conversation is unchanged.
    #[error("turn: the conversation cannot be sent")]
    Conversation(#[from] ConversationError),
    /// A message of the conversation handed to the turn holds a JSON value
    /// (in its extras or a provider block) that nests objects and arrays
    /// deeper than 128 levels. JSON text cannot nest that deep, so only
    /// code builds one, and a model copying and serialising it would
    /// recurse once per level. Nothing was sent and the conversation is
    /// unchanged.
    #[error("turn: messages[{index}] cannot be sent")]
    TooDeep {
        /// The message's position in the conversation.
        index: usize,
        /// The depth rule it breaks.
        source: TooDeep,
    },
    /// The mode has a cost budget
    /// ([`ToolLimits::cost_microdollars`](crate::ToolLimits::cost_microdollars))
    /// but the turn has no prices to count it by: none given with
    /// [`TurnOptions::prices`](crate::turn::TurnOptions), and none known of
    /// the model ([`Model::prices`](crate::turn::Model::prices)). Checked
    /// as the turn starts, a resume's or a restored turn's too: nothing
    /// ran and nothing was sent, and the conversation is as it was handed
    /// in.
    #[error(
        "turn: the mode has a cost budget, but the turn's prices are unknown; give TurnOptions::prices, or use a model whose prices are known"
    )]
    Unpriced,
}

impl TurnError {
    /// Tokens the turn used before it failed, added up: what the provider
    /// bills for a failed turn. Zero when no request was sent.
    pub fn usage(&self) -> Usage {
        match self {
            Self::ToolLimit(error) => error.usage,
            Self::Budget(error) => error.usage,
            Self::Model { usage, .. }
            | Self::NoOutput { usage, .. }
            | Self::Refused { usage, .. }
            | Self::EmptyAnswer { usage, .. }
            | Self::ToolCallAsText { usage }
            | Self::ContextWindowExceeded { usage }
            | Self::Compaction { usage, .. } => *usage,
            Self::Conversation(_) | Self::TooDeep { .. } | Self::Resume(_) | Self::Unpriced => {
                Usage::default()
            }
        }
    }
}

/// Which limit a refused batch would have exceeded: the
/// [`kind`](ToolLimitError::kind) of a [`ToolLimitError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExceededLimit {
    /// `iterations`: one batch too many.
    Iterations,
    /// `calls`: the batch would take the turn's call count past the limit.
    Calls,
}

impl std::fmt::Display for ExceededLimit {
    /// The limit's field name: `iterations` or `calls`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Iterations => "iterations",
            Self::Calls => "calls",
        })
    }
}

/// A batch refused because it would exceed the turn's limits: inside
/// [`TurnError::ToolLimit`]. The counts are those the turn *would* have
/// reached with the refused batch; the maxima are the mode's resolved
/// limits. A limit that triggers is never [`Limit::Unlimited`], but the
/// other maximum may be.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "turn: tool limit exceeded ({kind}): the batch of {batch_calls} calls would make {iterations} iterations (max {max_iterations}) and {calls} calls (max {max_calls}); it was not run"
)]
#[non_exhaustive]
pub struct ToolLimitError {
    /// Which limit the batch would exceed (iterations first when both).
    pub kind: ExceededLimit,
    /// Iterations of the turn, the refused batch included.
    pub iterations: u32,
    /// The mode's iteration limit (iterations per turn).
    pub max_iterations: Limit,
    /// Tool calls of the turn, the refused batch included.
    pub calls: u32,
    /// The mode's call limit (tool calls per turn).
    pub max_calls: Limit,
    /// Tool calls in the refused batch.
    pub batch_calls: u32,
    /// Tokens used by the turn's requests, the one that asked for the
    /// refused batch included, added up.
    pub usage: Usage,
}

/// Which budget a turn reached: the [`budget`](BudgetError::budget) of a
/// [`BudgetError`]. Each is a field of [`ToolLimits`](crate::ToolLimits)
/// of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Budget {
    /// `requests`: model requests per turn.
    Requests,
    /// `input_tokens`: [`Usage::input_tokens`] of the turn.
    InputTokens,
    /// `output_tokens`: [`Usage::output_tokens`] of the turn.
    OutputTokens,
    /// `total_tokens`: [`Usage::total_tokens`] of the turn.
    TotalTokens,
    /// `cost_microdollars`: what the turn's usage cost, in millionths of a
    /// US dollar ([`Prices::cost`](crate::conversation::Prices::cost)).
    CostMicrodollars,
    /// `context_tokens`: the estimated input tokens of the next request,
    /// after compacting (see [`context`](crate::context)). Reached when
    /// over it, not at it.
    ContextTokens,
}

impl std::fmt::Display for Budget {
    /// The budget's field name: `requests`, `input_tokens`,
    /// `output_tokens`, `total_tokens`, `cost_microdollars` or
    /// `context_tokens`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Requests => "requests",
            Self::InputTokens => "input_tokens",
            Self::OutputTokens => "output_tokens",
            Self::TotalTokens => "total_tokens",
            Self::CostMicrodollars => "cost_microdollars",
            Self::ContextTokens => "context_tokens",
        })
    }
}

/// A model request not sent because a budget of the turn was reached:
/// inside [`TurnError::Budget`]. A budget is reached when what the turn
/// used so far is at or over it; budgets are checked in the order
/// requests, input, output, total tokens, cost, then the context budget
/// (over it, after compacting).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.line())]
#[non_exhaustive]
pub struct BudgetError {
    /// The budget reached.
    pub budget: Budget,
    /// What the turn used of it: requests sent, tokens reported, or for
    /// [`Budget::CostMicrodollars`] their cost in millionths of a dollar
    /// (rounded down); for [`Budget::ContextTokens`], the next request's
    /// estimated tokens.
    pub used: u64,
    /// The mode's budget (never [`Limit::Unlimited`]).
    pub max: Limit,
    /// Model requests the turn sent.
    pub requests: u32,
    /// Tokens used by the turn's requests, added up.
    pub usage: Usage,
}

impl BudgetError {
    fn line(&self) -> String {
        let Self {
            budget,
            used,
            max,
            requests,
            ..
        } = self;
        match budget {
            Budget::CostMicrodollars => {
                // Shown as dollars, as a `Cost` shows itself.
                let dollars =
                    |micros: u64| Cost::from_picodollars(micros.saturating_mul(1_000_000));
                format!(
                    "turn: budget reached ({budget}): the turn's tokens cost {} of at most {} after {requests} model requests; the next request was not sent",
                    dollars(*used),
                    dollars(u64::from(max.get().unwrap_or(u32::MAX)))
                )
            }
            Budget::ContextTokens => format!(
                "turn: budget reached ({budget}): the next request would hold an estimated {used} input tokens, over at most {max}, after compacting; it was not sent"
            ),
            _ => format!(
                "turn: budget reached ({budget}): the turn used {used} of at most {max} after {requests} model requests; the next request was not sent"
            ),
        }
    }
}
