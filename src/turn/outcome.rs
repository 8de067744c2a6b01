//! What a turn returns: [`TurnOutcome`] with its [`TurnStats`].

use std::time::Duration;

use crate::bind::ToolCallErrorKind;
use crate::conversation::{FinishReason, Message, Usage};

/// How a turn ended without error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TurnStatus {
    /// The model gave a final answer.
    Completed {
        /// The model's final answer (also appended to the conversation).
        answer: String,
    },
    /// The turn's cancellation token fired. In-flight tool calls were
    /// dropped, queued ones never started, and the interrupted batch was
    /// not added to the conversation.
    Interrupted,
}

/// A turn that ended: with a final answer or interrupted.
#[derive(Clone, Debug)]
pub struct TurnOutcome {
    /// How it ended.
    pub status: TurnStatus,
    /// The messages this turn appended to the conversation, in order:
    /// assistant tool-call messages, their tool results, the final answer.
    pub messages: Vec<Message>,
    /// Counts, timings and token usage.
    pub stats: TurnStats,
    /// Why the model stopped in its last response: `Some` when the turn
    /// completed ([`FinishReason::Length`] for an answer the output limit
    /// cut off), `None` when it was interrupted.
    pub finish_reason: Option<FinishReason>,
    /// The ids of calls the conversation handed in left without a result
    /// (the process died mid-tool, say), each answered before the first
    /// request with an error result saying it was interrupted.
    pub repaired: Vec<String>,
}

impl TurnOutcome {
    /// The final answer, when the turn completed.
    pub fn answer(&self) -> Option<&str> {
        match &self.status {
            TurnStatus::Completed { answer } => Some(answer),
            TurnStatus::Interrupted => None,
        }
    }
}

/// Per-turn statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnStats {
    /// One entry per executed batch, in order. An interrupted batch is not
    /// counted.
    pub iterations: Vec<IterationStats>,
    /// Wall time of the whole turn, model requests included.
    pub duration: Duration,
    /// Tokens used by every model request of the turn, the final answer's
    /// included, added up.
    pub usage: Usage,
}

impl TurnStats {
    /// Iterations executed (batches run).
    pub fn iteration_count(&self) -> u32 {
        self.iterations.len() as u32
    }

    /// Tool calls executed, all batches together (refused ones included:
    /// an unknown tool still counts against `calls`).
    pub fn call_count(&self) -> u32 {
        self.iterations.iter().map(|i| i.calls.len() as u32).sum()
    }
}

/// One executed batch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IterationStats {
    /// Wall time of the model request that asked for this batch.
    pub model_duration: Duration,
    /// Wall time of running the batch, from the first call to the last
    /// result.
    pub batch_duration: Duration,
    /// One entry per tool call, in call order.
    pub calls: Vec<CallStats>,
    /// Why the model stopped in the response that asked for this batch
    /// ([`FinishReason::Length`]: its calls were cut off and none ran).
    pub finish_reason: FinishReason,
    /// Tokens used by the model request that asked for this batch.
    pub usage: Usage,
}

/// One tool call of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallStats {
    /// The provider's tool call id.
    pub tool_call_id: String,
    /// The tool name the model asked for.
    pub tool_name: String,
    /// Wall time of the call through the middleware chain, from the start
    /// (after waiting for a `parallel` slot) to the end; zero for calls
    /// refused before running (unknown tool, bad arguments).
    pub duration: Duration,
    /// `None` for a successful call, the kind of failure otherwise.
    pub error: Option<ToolCallErrorKind>,
    /// Bytes of the full result text, before `result_bytes` cut it.
    pub result_bytes: usize,
    /// `true` when `result_bytes` cut the result the model sees.
    pub truncated: bool,
}
