//! Why a turn failed: [`TurnError`] and [`ToolLimitError`].

use crate::tool::BoxError;

/// A turn that could not finish. The conversation keeps every batch that was
/// committed before the failure, each tool call with its result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The model asked for a batch that would exceed `iterations` or
    /// `calls`; the batch was not run and not added to the conversation.
    #[error(transparent)]
    ToolLimit(#[from] ToolLimitError),
    /// The model request failed.
    #[error("turn: the model request failed")]
    Model(#[source] BoxError),
    /// The conversation handed to the turn has a tool result that answers
    /// no call of the assistant message right before it (its results must
    /// follow it, as every provider requires). Nothing was sent and the
    /// conversation is unchanged.
    #[error(
        "turn: the tool result at messages[{index}] answers no call of the assistant message before it (tool call id {tool_call_id:?})"
    )]
    ToolResultWithoutCall {
        /// The result's tool call id.
        tool_call_id: String,
        /// The result's position in the conversation.
        index: usize,
    },
    /// The conversation handed to the turn has a second result for one tool
    /// call. Nothing was sent and the conversation is unchanged.
    #[error(
        "turn: the tool result at messages[{index}] is a second result for tool call id {tool_call_id:?}"
    )]
    DuplicateToolResult {
        /// The call's id.
        tool_call_id: String,
        /// The second result's position in the conversation.
        index: usize,
    },
}

/// Which limit a refused batch would have exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExceededLimit {
    /// `iterations`: one batch too many.
    Iterations,
    /// `calls`: the batch would take the turn's call count past the limit.
    Calls,
}

/// A batch refused because it would exceed the turn's limits. The counts are those the turn *would* have reached with the
/// refused batch; the maxima are the mode's resolved limits
/// ([`ToolLimits::UNLIMITED`](crate::ToolLimits::UNLIMITED) when unlimited).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "turn: tool limit exceeded ({exceeded:?}): the batch of {batch_calls} calls would make {iterations} iterations (max {max_iterations}) and {calls} calls (max {max_calls}); it was not run"
)]
#[non_exhaustive]
pub struct ToolLimitError {
    /// Which limit the batch would exceed (iterations first when both).
    pub exceeded: ExceededLimit,
    /// Iterations including the refused batch.
    pub iterations: u32,
    /// The mode's iteration limit.
    pub max_iterations: u32,
    /// Calls including the refused batch.
    pub calls: u32,
    /// The mode's call limit.
    pub max_calls: u32,
    /// Tool calls in the refused batch.
    pub batch_calls: u32,
}
