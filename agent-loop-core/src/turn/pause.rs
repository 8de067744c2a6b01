//! A paused turn and its resume: [`PausedTurn`] (what a turn that stopped
//! for a person's decision hands back, storable as JSON), the
//! [`CallDecision`]s a resume takes, and [`ResumeError`] for a resume
//! refused before anything ran.
//!
//! A turn pauses when an approval [`Gate`](crate::gate::Gate) asks about
//! a call, or the model calls an external tool
//! ([`tool::Definition::external`](crate::tool::Definition::external)):
//! by default none of the batch runs: the calls the gates allowed wait
//! too, as [`PendingCall::held`] calls, so the person decides seeing the
//! whole batch, and they run with it at the resume
//! ([`PausePolicy::HoldBatch`]; [`PausePolicy::RunOthers`] runs them
//! first). The assistant message and the results of calls answered
//! without running (a denial, an unknown tool) go into the conversation,
//! and the waiting calls stay unanswered there.
//! With [`BudgetPolicy::Pause`] it also pauses, before a model request,
//! when a budget is reached ([`PausedTurn::budget`]; nothing pending; a
//! resume may raise the budget with [`Resume::with_limits`]). The turn
//! ends with [`TurnStatus::Paused`](crate::turn::TurnStatus::Paused).
//!
//! A resume ([`TurnOptionsBuilder::resume`](crate::turn::TurnOptionsBuilder::resume))
//! is a [`run_turn`](crate::Definition::run_turn) on the same session,
//! the same conversation and the paused turn, with one decision per
//! pending call. Each decision is checked before anything runs; then the
//! approved calls run (through the middlewares, not the gate again), each
//! pending call gets its one result, placed in call order, and the turn
//! goes on where it stopped: iterations, calls, requests and usage go on
//! from the paused values (limits are per turn, not per resume).
//!
//! Run a resume with the options the turn had (its structured output, its
//! events): the paused turn does not keep them. A resume cancelled while
//! its approved calls run adds nothing but an "interrupted" result for
//! each decided call (some may have run), so the paused turn is stale and
//! no call runs twice. Pending calls count in the turn's `calls` when the
//! batch pauses; the resumed calls' [`CallStats`](crate::turn::CallStats)
//! are not in the resumed turn's stats. The resumed turn's
//! [`appended`](crate::turn::TurnOutcome::appended) starts after the
//! paused assistant message: it holds that batch's results, all of them
//! in call order, then what the turn added.
//!
//! A resume is refused, typed and with nothing run or changed, when: the
//! paused turn is of another session or loop, of another mode, or of an
//! unknown [`version`](PausedTurn::version); the conversation no longer
//! holds the paused calls unanswered, with their arguments, and only
//! their batch's results after them (a second resume, or a plain
//! `run_turn` that answered them "interrupted": the paused turn is
//! stale); a result in the conversation answers no call (as `run_turn`
//! refuses it); a decision names no pending call, repeats one, or one is
//! missing; a MAC does not verify (with an
//! [`ApprovalKey`](crate::gate::ApprovalKey) on the definition); edited
//! arguments fail the tool's schema.
//!
//! # Agents that pause
//!
//! A call of an agent ([`tool::Definition::agent`](crate::tool::Definition::agent))
//! whose own turn pauses pauses the turn that called it: its pending call
//! carries the agent's paused turn and conversation
//! ([`PendingCall::agent`]), whose own pending calls are the ones to
//! decide. Answer it with [`CallDecision::agent`] (or
//! [`CallDecision::agent_with_limits`], for an agent paused by a budget
//! of its own): the agent's decisions are checked by the agent's own
//! binding before anything of the resume runs (each pending call decided
//! once, its MACs, edited arguments, and so on down its own agents), and
//! a refusal refuses the whole resume. The resume runs the agent's turn
//! on from its pause; its answer is the call's result. A denial (or a
//! result) answers the call without resuming the agent. An agent that
//! pauses again pauses the resumed turn again.
//!
//! With an [`ApprovalKey`](crate::gate::ApprovalKey) on the calling
//! definition, the call's MAC covers the agent's whole pause (its JSON), so
//! a client cannot rewrite what the agent goes on from; without any key,
//! the agent's pause is as much the client's as the rest of a paused turn.
//! A pause of a call older than its last one (a client's retry of a pause
//! that was resumed and paused again) is refused as
//! [`Stale`](ResumeErrorKind::Stale) while the binding lives, so no
//! approved call of the agent runs twice; a new binding (another process)
//! knows no earlier pause, so store paused turns where a client cannot
//! replay them.
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/pauses-and-agents.md")]

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::{Message, Usage};
use crate::limits::ToolLimits;
use crate::session::{LoopId, SessionId};
use crate::turn::Budget;

/// The format version of [`PausedTurn`] this release writes. It reads
/// every version from [`PAUSED_TURN_OLDEST_VERSION`] to this one: a later
/// release of the same major version reads what this one wrote, and a
/// pause written by a later release is refused, typed
/// ([`ResumeErrorKind::UnsupportedVersion`]).
///
/// 2: a pause may hold what version 1's readers do not know (the
/// `cost_microdollars` budget it paused on, raised limits of the new
/// fields), so a reader of version 1 refuses it typed rather than failing
/// on a field.
pub const PAUSED_TURN_VERSION: u32 = 2;

/// The oldest format version of [`PausedTurn`] this release reads.
pub const PAUSED_TURN_OLDEST_VERSION: u32 = 1;

/// A turn that stopped for decisions: see the [module docs](self). Holds
/// no secret (no key, no credential): the MACs it carries are safe to
/// show.
///
/// Its JSON form (`serde`) is pinned by a snapshot test:
///
/// ```json
/// {"version": 1, "session_id": "…", "loop_id": "…", "mode": null,
///  "message_index": 1,
///  "pending": [{"tool_call_id": "call_2", "tool_name": "write_file",
///               "arguments": {"path": "a.txt"}, "reason": "writes a file",
///               "mac": "…"}],
///  "iterations": 1, "calls": 3, "requests": 1,
///  "usage": {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
///            "cache_write_tokens": 0, "reasoning_tokens": 0}}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PausedTurn {
    /// [`PAUSED_TURN_VERSION`] when written.
    pub version: u32,
    /// The session the turn ran in.
    pub session_id: SessionId,
    /// The loop of that session.
    pub loop_id: LoopId,
    /// The mode the turn ran in; `None` for the base mode.
    pub mode: Option<String>,
    /// The index in the conversation of the assistant message that holds
    /// the pending calls; for a budget's pause, the conversation's length
    /// (where the unsent request's answer goes).
    pub message_index: usize,
    /// The calls waiting for a decision, in call order.
    pub pending: Vec<PendingCall>,
    /// Iterations of the turn so far, the paused batch included.
    pub iterations: u32,
    /// Tool calls of the turn so far, the paused batch's all included.
    pub calls: u32,
    /// Model requests of the turn so far.
    pub requests: u32,
    /// Tokens used by the turn's requests so far, added up.
    pub usage: Usage,
    /// Set when the turn paused because this budget was reached (with
    /// [`BudgetPolicy::Pause`]): then no call is pending, the pause came
    /// before a model request, and a resume takes no decision, only
    /// (usually) raised limits ([`Resume::with_limits`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// This pause's id: `pause_` and 32 hex digits, minted from the
    /// session like the crate's other ids (the name-based UUID of the loop,
    /// the paused message's place, the turn's counts and the pending
    /// calls), never random, so a turn run again pauses with the same id.
    /// A resume claims it ([`PauseClaims`](crate::gate::PauseClaims))
    /// before anything runs: a stored pause goes on at most once. Empty in
    /// a pause written before pause ids, which is then not claimed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pause_id: String,
}

impl PausedTurn {
    /// Follows `compaction` of the paused conversation (with
    /// [`context::compact`](crate::context::compact), between the pause
    /// and its resume): the paused message's index moves with it, so the
    /// resume finds its calls. `false`, and nothing changes, when the
    /// compaction replaced that message (`context::compact` never does: a
    /// paused turn's pending calls are not
    /// [`editable`](crate::context::editable)).
    ///
    /// Without it, a resume after a compaction that changed the
    /// conversation's length before the paused message is refused as
    /// [`Stale`](ResumeErrorKind::Stale).
    pub fn follow(&mut self, compaction: &crate::context::Compaction) -> bool {
        match compaction.moved(self.message_index) {
            Some(index) => {
                self.message_index = index;
                true
            }
            None => false,
        }
    }
}

/// What a turn does when one of its budgets (`requests`, `input_tokens`,
/// `output_tokens`, `total_tokens` of [`ToolLimits`]) is reached before a
/// model request: the turn option
/// [`TurnOptionsBuilder::budget_policy`](crate::turn::TurnOptionsBuilder::budget_policy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetPolicy {
    /// The turn fails with [`TurnError::Budget`](crate::turn::TurnError::Budget).
    #[default]
    Fail,
    /// The turn pauses ([`TurnStatus::Paused`](crate::turn::TurnStatus::Paused),
    /// [`PausedTurn::budget`] set, no call pending); a resume with raised
    /// limits goes on with the request that was not sent.
    Pause,
}

/// What a turn does with the other calls of a batch in which a call waits
/// for a decision (a gate asks, an external tool):
/// [`TurnOptionsBuilder::pause_policy`](crate::turn::TurnOptionsBuilder::pause_policy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PausePolicy {
    /// None of the batch runs until the decisions come: the calls the
    /// gates allowed wait too, as [`PendingCall::held`] calls, so the
    /// person decides seeing the whole batch, and they run with it at the
    /// resume (DESIGN.md section 12; BuilderIO/agent-native PR #3510,
    /// Agenta-AI/agenta PR #5089). The default.
    #[default]
    HoldBatch,
    /// The calls the gates allowed run first, then the turn pauses for the
    /// others.
    RunOthers,
}

/// A call waiting for a decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingCall {
    /// The call's tool call id.
    pub tool_call_id: String,
    /// The tool it calls.
    pub tool_name: String,
    /// Its arguments exactly as they passed the tool's schema.
    pub arguments: Value,
    /// Why the gate asks (for an external tool's call, that it is one).
    pub reason: String,
    /// `true` for a call of an external tool
    /// ([`tool::Definition::external`](crate::tool::Definition::external)):
    /// answer it with [`CallDecision::result`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
    /// `true` for a call its gates allowed, held because another call of
    /// its batch waits ([`PausePolicy::HoldBatch`],
    /// the default): shown so the person decides seeing the whole batch.
    /// A resume without a decision for it runs it as approved; a decision
    /// for it (a denial, edited arguments) applies as to any call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// With an [`ApprovalKey`](crate::gate::ApprovalKey) on the
    /// definition, the call's MAC (64 hex digits) over the session and
    /// loop ids, this id, the tool name and the arguments: a decision for
    /// this call carries it back. `None` without a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// For a call of an agent whose own turn paused: that turn and its
    /// conversation. Answer the call with [`CallDecision::agent`] and
    /// decisions for [`AgentPause::paused`]'s pending calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Box<AgentPause>>,
}

/// The paused turn of an agent a call ran
/// ([`tool::Definition::agent`](crate::tool::Definition::agent)), kept in
/// its call's [`PendingCall::agent`] until a resume. JSON like the rest of
/// a [`PausedTurn`]; it holds the agent's conversation, so store it as you
/// store conversations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgentPause {
    /// The agent's paused turn: its pending calls are the ones to decide.
    pub paused: PausedTurn,
    /// The agent's conversation, its pending calls unanswered at the end.
    pub conversation: Vec<Message>,
}

/// One decision of a resume, for the pending call
/// [`tool_call_id`](Self::tool_call_id) names. `serde` reads it from a
/// client as `{"tool_call_id", "mac"?, "decision": {...}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallDecision {
    /// The pending call decided on.
    pub tool_call_id: String,
    /// The pending call's [`mac`](PendingCall::mac), required when the
    /// definition has an approval key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// What becomes of the call.
    pub decision: Decision,
}

/// What becomes of a pending call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Decision {
    /// It runs with its arguments as they were (what the MAC covers).
    Approve,
    /// It runs with these arguments instead, checked against the tool's
    /// schema first. The conversation keeps the call as the model sent
    /// it; its result is what the edited call returned.
    ApproveWith {
        /// The arguments it runs with (a JSON object).
        arguments: Value,
    },
    /// It does not run: the model reads ``the call to `NAME` was denied:
    /// REASON`` as its error result.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// It does not run here: this is its result (a tool run elsewhere).
    Result {
        /// The result's text, as the model reads it.
        text: String,
        /// `true` for an error result.
        #[serde(default)]
        is_error: bool,
    },
    /// Resume the paused agent the call runs ([`PendingCall::agent`])
    /// with these decisions for its pending calls.
    Agent {
        /// One decision for each of the agent's pending calls.
        decisions: Vec<CallDecision>,
        /// Limits for the agent's resumed turn
        /// ([`CallDecision::agent_with_limits`]); not serialised.
        #[serde(skip)]
        limits: Option<ToolLimits>,
    },
}

impl CallDecision {
    /// Approves `tool_call_id` as it was.
    pub fn approve(tool_call_id: impl Into<String>) -> Self {
        Self::new(tool_call_id, Decision::Approve)
    }

    /// Approves `tool_call_id` with `arguments` instead.
    pub fn approve_with(tool_call_id: impl Into<String>, arguments: Value) -> Self {
        Self::new(tool_call_id, Decision::ApproveWith { arguments })
    }

    /// Denies `tool_call_id`, with `reason` for the model.
    pub fn deny(tool_call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::new(
            tool_call_id,
            Decision::Deny {
                reason: reason.into(),
            },
        )
    }

    /// Answers `tool_call_id` with `text`, its result from elsewhere.
    pub fn result(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(
            tool_call_id,
            Decision::Result {
                text: text.into(),
                is_error: false,
            },
        )
    }

    /// Resumes the paused agent of the call `tool_call_id` with
    /// `decisions`, one for each of its pending calls
    /// ([`PendingCall::agent`]).
    pub fn agent(
        tool_call_id: impl Into<String>,
        decisions: impl IntoIterator<Item = CallDecision>,
    ) -> Self {
        Self::new(
            tool_call_id,
            Decision::Agent {
                decisions: decisions.into_iter().collect(),
                limits: None,
            },
        )
    }

    /// As [`agent`](Self::agent), the agent's turn going on under `limits`
    /// (its own limits overridden, as [`Resume::with_limits`] does for a
    /// turn): for an agent paused by a budget of its own. Like
    /// `Resume::with_limits`, never read from JSON: set them on the server.
    pub fn agent_with_limits(
        tool_call_id: impl Into<String>,
        decisions: impl IntoIterator<Item = CallDecision>,
        limits: ToolLimits,
    ) -> Self {
        Self::new(
            tool_call_id,
            Decision::Agent {
                decisions: decisions.into_iter().collect(),
                limits: Some(limits),
            },
        )
    }

    /// `decision` for `tool_call_id`, without a MAC.
    pub fn new(tool_call_id: impl Into<String>, decision: Decision) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            mac: None,
            decision,
        }
    }

    /// The same decision carrying the pending call's `mac`.
    #[must_use]
    pub fn with_mac(mut self, mac: impl Into<String>) -> Self {
        self.mac = Some(mac.into());
        self
    }
}

/// What a resume takes: the paused turn and one decision per pending call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Resume {
    /// The turn that paused, as it was handed back (or read back).
    pub paused: PausedTurn,
    /// One per pending call, in any order.
    pub decisions: Vec<CallDecision>,
    /// Limit overrides over the mode's for this resumed run (a raised
    /// budget, say), until the turn ends or pauses again (give them again
    /// to a later resume): `iterations`, `calls` and the budgets; unset
    /// fields keep the mode's values. Set by the server
    /// ([`with_limits`](Self::with_limits)), never read from JSON, so a
    /// client that sends a resume cannot raise them.
    #[serde(skip)]
    pub limits: Option<ToolLimits>,
}

impl Resume {
    /// A resume of `paused` with `decisions`.
    pub fn new(paused: PausedTurn, decisions: impl IntoIterator<Item = CallDecision>) -> Self {
        Self {
            paused,
            decisions: decisions.into_iter().collect(),
            limits: None,
        }
    }

    /// The same resume with `limits` over the mode's (see
    /// [`limits`](Self::limits)); invalid ones refuse the resume
    /// ([`ResumeErrorKind::InvalidLimits`]).
    #[must_use]
    pub fn with_limits(mut self, limits: ToolLimits) -> Self {
        self.limits = Some(limits);
        self
    }
}

/// Why a resume was refused: the [`kind`](ResumeError::kind) of a
/// [`ResumeError`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResumeErrorKind {
    /// The paused turn's [`version`](PausedTurn::version) is not one this
    /// release reads.
    UnsupportedVersion {
        /// The version found.
        version: u32,
    },
    /// The paused turn belongs to another session or loop.
    OtherSession,
    /// The session is in another mode than the paused turn was.
    OtherMode,
    /// The conversation does not hold the paused calls unanswered at
    /// [`message_index`](PausedTurn::message_index): resumed already, or
    /// answered by a plain `run_turn`, or another conversation.
    Stale,
    /// A decision names no pending call.
    UnknownCall,
    /// Two decisions name the same call.
    DuplicateDecision,
    /// A pending call has no decision.
    MissingDecision,
    /// The decision's MAC is missing or does not verify.
    BadMac,
    /// The resume's [`limits`](Resume::limits) are not valid limits.
    InvalidLimits {
        /// What the check said.
        message: String,
    },
    /// The arguments fail the tool's schema (edited ones, or the pending
    /// ones under a schema that changed), or the mode no longer has the
    /// tool.
    InvalidArguments {
        /// What the check said, as the model would read it.
        message: String,
    },
    /// A decision of the wrong kind for its call: [`Decision::Agent`] for a
    /// call that runs no paused agent, or an approval (plain or with
    /// arguments) for one that does, whose agent's calls are the ones to
    /// decide.
    WrongDecision,
    /// The pause was claimed already ([`PausedTurn::pause_id`] through
    /// [`PauseClaims`](crate::gate::PauseClaims)): another resume of the
    /// same stored pause went on from it, so this one runs nothing.
    Claimed,
    /// The claim store failed, so the resume is not known to be the first
    /// of its pause and runs nothing.
    ClaimFailed {
        /// What the store said.
        message: String,
    },
}

/// A resume refused before anything ran: inside
/// [`TurnError::Resume`](crate::turn::TurnError::Resume). The
/// conversation is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("turn: resume refused: {}", describe(.kind, .tool_call_id.as_deref()))]
#[non_exhaustive]
pub struct ResumeError {
    /// Why.
    pub kind: ResumeErrorKind,
    /// The call concerned, when one is.
    pub tool_call_id: Option<String>,
}

impl ResumeError {
    pub(crate) fn new(kind: ResumeErrorKind) -> Self {
        Self {
            kind,
            tool_call_id: None,
        }
    }

    pub(crate) fn of_call(kind: ResumeErrorKind, tool_call_id: &str) -> Self {
        Self {
            kind,
            tool_call_id: Some(tool_call_id.to_owned()),
        }
    }
}

fn describe(kind: &ResumeErrorKind, call: Option<&str>) -> String {
    let call = call.unwrap_or("");
    match kind {
        ResumeErrorKind::UnsupportedVersion { version } if *version > PAUSED_TURN_VERSION => {
            format!(
                "paused turn format version {version} was written by a later release; this one reads versions {PAUSED_TURN_OLDEST_VERSION} to {PAUSED_TURN_VERSION}"
            )
        }
        ResumeErrorKind::UnsupportedVersion { version } => format!(
            "paused turn format version {version} is older than this release reads (versions {PAUSED_TURN_OLDEST_VERSION} to {PAUSED_TURN_VERSION})"
        ),
        ResumeErrorKind::OtherSession => "the paused turn is of another session or loop".into(),
        ResumeErrorKind::OtherMode => "the session is in another mode than the paused turn".into(),
        ResumeErrorKind::Stale => {
            "the conversation no longer holds the paused calls unanswered (the paused turn is stale)"
                .into()
        }
        ResumeErrorKind::UnknownCall => format!("`{call}` is no pending call"),
        ResumeErrorKind::DuplicateDecision => format!("two decisions for `{call}`"),
        ResumeErrorKind::MissingDecision => format!("no decision for `{call}`"),
        ResumeErrorKind::BadMac => format!("the MAC of the decision for `{call}` does not verify"),
        ResumeErrorKind::InvalidLimits { message } => {
            format!("the resume's limits are invalid: {message}")
        }
        ResumeErrorKind::InvalidArguments { message } => {
            format!("the arguments of `{call}` were refused: {message}")
        }
        ResumeErrorKind::Claimed => {
            "the pause was resumed already (its pause id is claimed)".into()
        }
        ResumeErrorKind::ClaimFailed { message } => {
            format!("the pause could not be claimed: {message}")
        }
        ResumeErrorKind::WrongDecision => format!(
            "the decision for `{call}` does not fit it (a paused agent's call takes the agent's decisions, any other call no agent decisions)"
        ),
    }
}

/// A paused agent's state as the MAC of its call covers it: its JSON
/// (serde's, the same for a value read back from it).
pub(crate) fn agent_state(pause: &AgentPause) -> String {
    serde_json::to_string(pause).unwrap_or_default()
}
