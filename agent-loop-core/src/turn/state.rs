//! The turn's state between two steps: every count, statistic and
//! decision a turn carries from one step to the next, as one value that a
//! driver may store ([`TurnState`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::context::Compaction;
use crate::conversation::{AssistantMessage, FinishReason, Usage};
use crate::limits::ToolLimits;
use crate::session::{LoopId, SessionId};
use crate::turn::compacting::ContextMeter;
use crate::turn::{PendingCall, Resume, TurnStats};

/// The format version of [`TurnState`] this release writes. It reads
/// every version from [`TURN_STATE_OLDEST_VERSION`] to this one: a later
/// release of the same major version reads what this one wrote, and a
/// state written by a later release is refused, typed
/// ([`ResumeErrorKind::UnsupportedVersion`](crate::turn::ResumeErrorKind::UnsupportedVersion)).
///
/// 2: a state may hold what version 1's readers do not know (a raised
/// `cost_microdollars` or `call_timeout_ms`, a call's `timed_out` error,
/// the turn's cost), so a reader of version 1 refuses it typed rather than
/// failing on a field.
pub const TURN_STATE_VERSION: u32 = 2;

/// The oldest format version of [`TurnState`] this release reads.
pub const TURN_STATE_OLDEST_VERSION: u32 = 1;

/// A turn between two steps ([`TurnSteps`](crate::turn::TurnSteps)):
/// its counts (iterations, calls, requests), its statistics and usage, the
/// context meter and compactions, the output retries it used, where its
/// messages begin in the conversation, and what it waits for (a model's
/// answer, a batch's results, a resume's batch).
///
/// With the conversation as it stood at the same step, it is all a driver
/// needs to rebuild the turn after a crash
/// ([`Definition::restore_turn`](crate::Definition::restore_turn)); its
/// JSON form (`serde`) is versioned ([`TURN_STATE_VERSION`]) and pinned by
/// a snapshot test. The tools, the model and the options are not in it:
/// a rebuilt turn takes them from the binding and the options it is given.
///
/// It holds no secret, but it does hold the limits a resume raised: store
/// it where only the server reads and writes it, never take one from a
/// client.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnState {
    /// [`TURN_STATE_VERSION`] when written.
    pub(super) version: u32,
    /// The session the turn runs in.
    pub(super) session_id: SessionId,
    /// The loop of that session.
    pub(super) loop_id: LoopId,
    /// The mode the turn runs in; `None` for the base mode.
    pub(super) mode: Option<String>,
    /// Limits a resume set over the mode's, until the turn ends or pauses.
    pub(super) raised: Option<ToolLimits>,
    /// Iterations of the turn before it paused, for a resumed turn.
    pub(super) prior_iterations: u32,
    /// Calls counted against `calls`, the batch out included.
    pub(super) calls: u32,
    /// Model requests sent (or being sent).
    pub(super) requests: u32,
    /// Batches answered and tokens used (its `duration` is the sum of the
    /// durations the driver reported).
    pub(super) stats: TurnStats,
    /// Where the turn's messages begin in the conversation.
    pub(super) first_new: usize,
    /// The turn's compactions so far.
    pub(super) compactions: Vec<Compaction>,
    /// The tool call ids answered "interrupted" before the first request.
    pub(super) repaired: Vec<String>,
    /// What the turn knows of its requests' size.
    pub(super) meter: ContextMeter,
    /// The provider said the context window is full: compact before asking
    /// again.
    pub(super) window_full: bool,
    /// Text answers answered with an output instruction so far.
    pub(super) instructed: u32,
    /// The provider's refusals of the model's output as a tool call in a
    /// row, each answered with an instruction
    /// ([`ModelError::is_failed_tool_call`](crate::turn::ModelError::is_failed_tool_call)).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) failed_tool_calls: u32,
    /// Empty answers in a row, each answered with an instruction
    /// ([`TurnError::EmptyAnswer`](crate::turn::TurnError::EmptyAnswer)).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) empty_answers: u32,
    /// The id of the pause this turn was resumed from; empty for a new
    /// turn (see [`PausedTurn::pause_id`](crate::turn::PausedTurn::pause_id)).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) resumed_from: String,
    /// What the turn does next.
    pub(super) phase: Phase,
}

/// Where a turn stands between two steps.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub(super) enum Phase {
    /// A resume, before its decisions are checked (`refreshed`: the
    /// binding's tools were listed again).
    Resume {
        resume: Box<Resume>,
        refreshed: bool,
        /// Its pause id was claimed (or it has none).
        #[serde(default)]
        claimed: bool,
    },
    /// A resume's batch is out.
    Resuming {
        /// The paused turn's assistant message.
        message_index: usize,
        /// The resume, from which its batch is made again on a rebuild.
        resume: Box<Resume>,
    },
    /// Before a request: the tools (listed again unless `refreshed`), the
    /// budgets, the compaction.
    Ask { refreshed: bool },
    /// The compaction before the request is to run.
    Compact,
    /// The budgets allow the request: it is to be sent.
    Request,
    /// The request of iteration `iteration` is out.
    Asking { iteration: u32 },
    /// A batch is out. Boxed: a phase is moved and replaced at every step,
    /// and a large one costs a copy each time (measured: more than the
    /// allocation).
    Running(Box<Running>),
    /// The turn ended.
    Ended,
}

/// A batch the model asked for, out to run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Running {
    /// The response's message, its calls' ids minted where needed:
    /// appended once the batch ran.
    pub(super) message: AssistantMessage,
    pub(super) finish_reason: FinishReason,
    pub(super) usage: Usage,
    pub(super) model_duration: Duration,
    pub(super) iteration: u32,
    /// The batch's calls.
    pub(super) batch_calls: u32,
    /// The turn's calls once the batch is counted.
    pub(super) would_be: u32,
    /// The batch's calls that wait for a decision, in call order.
    pub(super) pending: Vec<PendingCall>,
}

/// For `skip_serializing_if`: a count that is zero is left out, so a state
/// that never used it is written as before.
fn is_zero(count: &u32) -> bool {
    *count == 0
}
