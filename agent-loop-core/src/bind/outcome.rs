//! What one tool call gave: [`CallStats`], and [`CallOutcome`] for a call
//! run outside a turn.

use std::time::Duration;

use crate::bind::ToolCallErrorKind;
use crate::conversation::ToolResult;

/// One tool call, whether it ran or not: in a turn's
/// [`IterationStats::calls`](crate::turn::IterationStats::calls), and in the
/// [`CallOutcome`] of [`run_tool_call`](crate::Definition::run_tool_call).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct CallStats {
    /// The provider's tool call id.
    pub tool_call_id: String,
    /// The tool name the model asked for.
    pub tool_name: String,
    /// Wall time of the call through the middleware chain, from the start
    /// (after waiting for a `parallel` slot) to the end; zero for calls
    /// that did not run (unknown tool, bad arguments, cut off).
    pub duration: Duration,
    /// `None` for a successful call, the kind of failure otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolCallErrorKind>,
    /// Bytes of the result text (the tool's output, every text part of a
    /// content output together, or for an error the cleaned error sentence
    /// the model reads), before `result_bytes` cut it; images are not
    /// counted.
    pub result_bytes: usize,
    /// `true` when `result_bytes` cut the result the model sees.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A tool call run outside a turn by
/// [`run_tool_call`](crate::Definition::run_tool_call): the result the
/// model reads, as a turn would append it, and the call's statistics.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallOutcome {
    /// The result, for the conversation: its text is the tool's output, or
    /// the error sentence, cut to the mode's `result_bytes`.
    pub result: ToolResult,
    /// Its statistics.
    pub stats: CallStats,
}
