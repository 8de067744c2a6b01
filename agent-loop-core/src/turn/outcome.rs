//! What a turn returns: [`TurnOutcome`] with its [`TurnStats`].

use std::ops::Range;
use std::time::Duration;

use crate::bind::CallStats;
use crate::context::Compaction;
use crate::conversation::{Cost, FinishReason, Message, Usage};
use crate::turn::PausedTurn;

/// How a turn ended without error.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnStatus {
    /// The model gave a final answer.
    Completed {
        /// The model's final answer (also appended to the conversation).
        answer: String,
    },
    /// The model called [`STRUCTURED_OUTPUT_TOOL_NAME`](crate::STRUCTURED_OUTPUT_TOOL_NAME)
    /// with arguments that pass the turn's [`Output`](crate::turn::Output)
    /// schema (a turn run with
    /// [`TurnOptionsBuilder::output`](crate::turn::TurnOptionsBuilder::output)). The call
    /// and its ok result are the last messages of the turn.
    Output {
        /// The output, unwrapped when the schema was wrapped.
        value: serde_json::Value,
    },
    /// The turn's cancellation token fired. In-flight tool calls were
    /// dropped, queued ones never started, and the interrupted batch was
    /// not added to the conversation.
    Interrupted,
    /// An approval gate asked about calls of the last batch: its other
    /// calls ran, and the assistant message and their results are in the
    /// conversation; the pending calls wait there, unanswered, for a
    /// resume ([`pause`](crate::turn::pause)). Store the paused turn (it
    /// is JSON) with the conversation.
    Paused(Box<PausedTurn>),
}

/// A turn that ended: with a final answer, its structured output,
/// interrupted, or paused.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TurnOutcome {
    /// How it ended.
    pub status: TurnStatus,
    /// Where the messages this turn appended are in the conversation it
    /// ran on (`conversation[outcome.appended.clone()]`, or
    /// [`messages`](Self::messages)): not a copy, since the conversation
    /// holds them already. For a resumed turn it starts after the paused
    /// assistant message (see [`pause`](crate::turn::pause)). After a
    /// compaction it refers to the compacted conversation; messages of
    /// this turn a compaction replaced are not in it, their replacement
    /// is.
    pub appended: Range<usize>,
    /// Counts, timings and token usage.
    pub stats: TurnStats,
    /// Why the model stopped in its last response: `Some` when the turn
    /// completed, paused or ended in its output ([`FinishReason::Length`] for an answer the output limit
    /// cut off), `None` when it was interrupted.
    pub finish_reason: Option<FinishReason>,
    /// The ids of calls the conversation handed in left without a result
    /// (the process died mid-tool, say), each answered before the first
    /// request with an error result saying it was interrupted.
    pub repaired: Vec<String>,
    /// The compactions made before the turn's requests, in order (see
    /// [`context`](crate::context)): each with the messages it replaced,
    /// which the conversation no longer holds, and its ranges (each in the
    /// conversation as it was then).
    pub compactions: Vec<Compaction>,
}

impl TurnOutcome {
    /// The messages this turn appended to `conversation`, the one it ran
    /// on, in order: assistant tool-call messages, their tool results, the
    /// final answer. Empty when `conversation` no longer holds them.
    ///
    /// ```
    /// use agent_loop_core::conversation::{Message, ModelResponse};
    /// use agent_loop_core::turn::ScriptedModel;
    /// use agent_loop_core::{Bindings, Definition, LoopId, SessionId};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let session = Definition::builder().name("echo").build().validate()?
    ///     .bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
    /// let model = ScriptedModel::new([ModelResponse::answer("hello")]);
    /// let mut conversation = vec![Message::user("hi")];
    /// let outcome = session.run_turn(&model, &mut conversation, &CancellationToken::new()).await?;
    /// assert_eq!(outcome.messages(&conversation), [Message::assistant("hello")]);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn messages<'c>(&self, conversation: &'c [Message]) -> &'c [Message] {
        conversation.get(self.appended.clone()).unwrap_or_default()
    }

    /// The final answer, when the turn completed.
    pub fn answer(&self) -> Option<&str> {
        match &self.status {
            TurnStatus::Completed { answer } => Some(answer),
            _ => None,
        }
    }

    /// The structured output, when the turn ended in one.
    pub fn output(&self) -> Option<&serde_json::Value> {
        match &self.status {
            TurnStatus::Output { value } => Some(value),
            _ => None,
        }
    }

    /// The structured output read as `T` (the type given to
    /// [`Output::typed`](crate::turn::Output::typed)); `None` when the turn
    /// did not end in an output. `Err` only when `T` cannot read a value
    /// its own schema accepted, or a middleware changed the value.
    pub fn output_as<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Option<Result<T, serde_json::Error>> {
        self.output().map(|value| T::deserialize(value))
    }
}

/// Per-turn statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct TurnStats {
    /// One entry per batch the turn answered, in order: a batch that ran,
    /// or a batch of a cut-off response, whose calls were answered with
    /// errors without running. A batch interrupted by cancellation, or
    /// refused by a limit, has no entry.
    pub iterations: Vec<IterationStats>,
    /// Wall time of the whole turn, model requests included.
    pub duration: Duration,
    /// Tokens used by every model request of the turn, the final answer's
    /// included, added up.
    pub usage: Usage,
    /// What [`usage`](Self::usage) cost: each request's tokens at the
    /// turn's prices ([`TurnOptions::prices`](crate::turn::TurnOptions)
    /// when given, else the model's own,
    /// [`Model::prices`](crate::turn::Model::prices)), a compaction's
    /// summary at them too, and the tokens of the agents its calls ran at
    /// each agent's own prices (an agent whose prices are unknown adds
    /// nothing). `None` when the turn's prices are unknown. A resumed
    /// turn counts what it spent before its pause at its prices. A driver
    /// of your own gives the model's prices with
    /// [`TurnOptions::for_model`](crate::turn::TurnOptions::for_model), as
    /// [`run_turn`](crate::Definition::run_turn) does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

impl TurnStats {
    /// The number of entries in [`iterations`](Self::iterations): batches
    /// the turn answered, cut-off ones included. This is what the turn
    /// counted against the `iterations` limit. Saturates at `u32::MAX`.
    pub fn iteration_count(&self) -> u32 {
        saturating_sum([self.iterations.len()])
    }

    /// The tool calls the model asked for in the batches of
    /// [`iterations`](Self::iterations), all batches together: calls that
    /// ran (and succeeded or failed), calls refused before running (unknown
    /// tool, bad arguments) and calls of a cut-off response. This is what
    /// the turn counted against the `calls` limit, not the number of tool
    /// executions: count the entries of [`CallStats`] whose `error` is
    /// `None` for successful calls. Saturates at `u32::MAX`.
    pub fn call_count(&self) -> u32 {
        saturating_sum(self.iterations.iter().map(|i| i.calls.len()))
    }
}

/// `counts` added up, at most `u32::MAX`: a count never wraps to a small
/// number, whatever a turn without limits runs.
fn saturating_sum(counts: impl IntoIterator<Item = usize>) -> u32 {
    counts.into_iter().fold(0, |sum: u32, count| {
        sum.saturating_add(u32::try_from(count).unwrap_or(u32::MAX))
    })
}

/// One batch the turn answered (see [`TurnStats::iterations`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct IterationStats {
    /// Wall time of the model request that asked for this batch.
    pub model_duration: Duration,
    /// Wall time of running the batch, from the first call to the last
    /// result (about zero for a cut-off batch, which runs nothing).
    pub batch_duration: Duration,
    /// One entry per tool call the model asked for, in call order, refused
    /// and cut-off ones included.
    pub calls: Vec<CallStats>,
    /// Why the model stopped in the response that asked for this batch
    /// ([`FinishReason::Length`]: its calls were cut off and none ran).
    pub finish_reason: FinishReason,
    /// Tokens used by the model request that asked for this batch.
    pub usage: Usage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_saturate_instead_of_wrapping() {
        assert_eq!(saturating_sum([]), 0);
        assert_eq!(saturating_sum([2, 3]), 5);
        let max = u32::MAX as usize;
        assert_eq!(saturating_sum([max, 1]), u32::MAX);
        assert_eq!(saturating_sum([max - 1, 1]), u32::MAX);
        assert_eq!(saturating_sum([usize::MAX]), u32::MAX);
        assert_eq!(saturating_sum([max + 1, 0]), u32::MAX, "`as u32` gave 0");
    }

    #[test]
    fn stats_count_iterations_and_calls() {
        let call = CallStats {
            tool_call_id: "c".into(),
            tool_name: "t".into(),
            duration: Duration::ZERO,
            error: None,
            result_bytes: 0,
            truncated: false,
        };
        let batch = |calls: usize| IterationStats {
            calls: vec![call.clone(); calls],
            ..IterationStats::default()
        };
        let stats = TurnStats {
            iterations: vec![batch(2), batch(0), batch(3)],
            ..TurnStats::default()
        };
        assert_eq!((stats.iteration_count(), stats.call_count()), (3, 5));
    }
}
