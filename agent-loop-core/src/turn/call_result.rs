//! One call of a batch as a driver that journals each call keeps it
//! ([`CallResult`]), and the compact form it is journaled in: a durable
//! engine writes one per tool call, so the form holds the tool result and
//! the call's duration and leaves out what the turn knows anyway.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bind::call::{self, Finished};
use crate::bind::{CallStats, ToolCallErrorKind};
use crate::conversation::{ContentPart, Cost, Extras, ToolResult, Usage};
use crate::turn::AgentPause;
use crate::turn::nesting::Nested;

/// One call of a batch run on its own
/// ([`TurnSteps::run_call`](crate::turn::TurnSteps::run_call)), for a
/// driver that journals each call: its result (`None` while it waits for
/// a decision), whether the turn was cancelled while it ran, and what its
/// agents did. [`TurnSteps::batch_results`](crate::turn::TurnSteps::batch_results)
/// makes the batch's [`BatchResults`](crate::turn::BatchResults) of them.
///
/// Serialisable, in a compact JSON form a journal keeps one of per call:
/// the [`ToolResult`]'s own fields (`tool_call_id`, `content`; `is_error`
/// only when `true`) and `duration_ns`, the call's wall time in
/// nanoseconds. What the turn knows anyway is left out and filled in
/// again by `batch_results`: the tool name (from the batch's call at the
/// same index) and the result's bytes (the length of its text, written as
/// `result_bytes` only when `result_bytes` cut it). A call that waits for
/// a decision is `{}`.
///
/// ```
/// use agent_loop_core::turn::CallResult;
///
/// let waiting: CallResult = serde_json::from_str("{}")?;
/// assert_eq!(serde_json::to_string(&waiting)?, "{}");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "CallJournal", into = "CallJournal")]
pub struct CallResult {
    pub(super) finished: Option<Finished>,
    pub(super) cancelled: bool,
    pub(super) parked: Vec<(String, AgentPause)>,
    /// What the call's agent spent: calls, tokens, their cost.
    pub(super) nested: Nested,
}

impl CallResult {
    /// How long the call ran (through the middleware chain), as it
    /// measured; zero for a call that did not run.
    pub fn duration(&self) -> Duration {
        self.finished
            .as_ref()
            .map_or(Duration::ZERO, |finished| finished.stats.duration)
    }

    /// Gives the call's statistics the tool name the model asked for,
    /// which the journal form leaves out.
    pub(super) fn name(&mut self, tool_name: &str) {
        if let Some(finished) = &mut self.finished
            && finished.stats.tool_name.is_empty()
        {
            finished.stats.tool_name = tool_name.to_owned();
        }
    }
}

/// [`CallResult`] as its JSON has it: what is usually so is left out. A
/// field it does not know is refused, not dropped: a result in another
/// form is never read as a call that waits.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallJournal {
    /// Present exactly when the call has a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    content: Vec<ContentPart>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
    #[serde(default, skip_serializing_if = "Extras::skip")]
    extras: Extras,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ToolCallErrorKind>,
    /// Only when `result_bytes` cut the text (the length before the cut);
    /// otherwise the length of the result's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result_bytes: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    cancelled: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    parked: Vec<(String, AgentPause)>,
    #[serde(default, skip_serializing_if = "is_zero")]
    nested_calls: u32,
    #[serde(default, skip_serializing_if = "is_unused")]
    nested_usage: Usage,
    #[serde(default, skip_serializing_if = "Cost::is_zero")]
    nested_cost: Cost,
}

impl From<CallResult> for CallJournal {
    fn from(call: CallResult) -> Self {
        let mut journal = CallJournal {
            cancelled: call.cancelled,
            parked: call.parked,
            nested_calls: call.nested.calls,
            nested_usage: call.nested.usage,
            nested_cost: call.nested.cost,
            ..CallJournal::default()
        };
        if let Some(Finished {
            result,
            stats,
            output,
        }) = call.finished
        {
            journal.tool_call_id = Some(result.tool_call_id);
            journal.content = result.content;
            journal.is_error = result.is_error;
            journal.extras = result.extras;
            // Nanoseconds fit a u64 for 584 years.
            journal.duration_ns =
                Some(u64::try_from(stats.duration.as_nanos()).unwrap_or(u64::MAX));
            journal.error = stats.error;
            journal.result_bytes = stats.truncated.then_some(stats.result_bytes);
            journal.output = output;
        }
        journal
    }
}

impl From<CallJournal> for CallResult {
    fn from(journal: CallJournal) -> Self {
        let finished = journal.tool_call_id.map(|tool_call_id| {
            let mut result =
                ToolResult::with_content(tool_call_id.clone(), journal.content, journal.is_error);
            result.extras = journal.extras;
            // Uncut, the statistic is the text's length, as the call
            // pipeline counts it.
            let text_bytes = call::text_bytes(&result.content);
            Finished {
                stats: CallStats {
                    tool_call_id,
                    tool_name: String::new(),
                    duration: Duration::from_nanos(journal.duration_ns.unwrap_or(0)),
                    error: journal.error,
                    result_bytes: journal.result_bytes.unwrap_or(text_bytes),
                    truncated: journal.result_bytes.is_some(),
                },
                result,
                output: journal.output,
            }
        });
        CallResult {
            finished,
            cancelled: journal.cancelled,
            parked: journal.parked,
            nested: Nested {
                calls: journal.nested_calls,
                usage: journal.nested_usage,
                cost: journal.nested_cost,
            },
        }
    }
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

fn is_unused(usage: &Usage) -> bool {
    *usage == Usage::default()
}
