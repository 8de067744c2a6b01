//! The turn: one user request handled to a final answer, made of
//! iterations (a model request that asks for tools, plus running that
//! batch). See [`Definition::run_turn`](crate::Definition::run_turn).
//!
//! The turn is a state machine that a driver steps ([`TurnSteps`], from
//! [`Definition::turn_steps`](crate::Definition::turn_steps)): it says
//! what it needs next ([`Step`]: a model request, a batch of prepared
//! calls to run, or its end, a pause among them) and takes what the driver
//! brings back; its transitions do no I/O and read no clock, so the same
//! answers and batch results always give the same steps. Its state between two steps is one
//! serialisable value ([`TurnState`]). `run_turn` is the in-process
//! driver; a durable one journals each step's effect and rebuilds a
//! crashed turn from the journal
//! ([`Definition::restore_turn`](crate::Definition::restore_turn)).
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/turn.md")]
#![doc = include_str!("../../docs/structured-output.md")]
#![doc = include_str!("../../docs/errors.md")]

mod agent;
mod batch;
mod batch_rules;
mod call_result;
mod checks;
mod compacting;
mod context;
mod error;
mod nesting;
mod outcome;
mod output;
pub mod pause;
mod resume;
mod runner;
mod state;
mod steps;

pub use crate::bind::{CallStats, ToolList, ToolListIter};
pub use crate::event::{TurnEvent, TurnEvents};
pub use crate::model_api::{Model, ModelDescription, ModelError, ModelErrorKind, ModelRequest};
pub use crate::output::{Output, OutputError, OutputErrorKind};
pub use crate::summarize::{
    SUMMARY_HEADING, SUMMARY_INSTRUCTIONS, SUMMARY_REQUEST, Summarize, summary_transcript,
};
pub use crate::support::text::ERROR_TEXT_BYTES;
pub use crate::testing::{RecordedRequest, ScriptExhausted, ScriptedModel};
pub use agent::Agent;
pub use call_result::CallResult;
pub use error::{Budget, BudgetError, ExceededLimit, ToolLimitError, TurnError};
pub use outcome::{IterationStats, TurnOutcome, TurnStats, TurnStatus};
pub use output::{
    DEFAULT_OUTPUT_RETRIES, MixedBatch, NATIVE_OUTPUT_INSTRUCTION, OUTPUT_INSTRUCTION, OutputMode,
    TurnOptions, TurnOptionsBuilder,
};
pub use pause::{
    AgentPause, BudgetPolicy, CallDecision, Decision, PAUSED_TURN_OLDEST_VERSION,
    PAUSED_TURN_VERSION, PausePolicy, PausedTurn, PendingCall, Resume, ResumeError,
    ResumeErrorKind,
};
pub use state::{TURN_STATE_OLDEST_VERSION, TURN_STATE_VERSION, TurnState};
pub use steps::{BatchResults, Step, TurnSteps};
