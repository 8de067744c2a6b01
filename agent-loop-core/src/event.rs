//! [`TurnEvent`]s: what a running turn does, as it does it, for progress
//! bars and live UIs.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::bind::{BindErrorKind, CallStats, ToolCallErrorKind};
use crate::conversation::{FinishReason, Usage};
use crate::tool::{CallEvents, ToolProgress};

/// One thing that happened in a running turn, in the order it happened
/// (events of calls running at once interleave).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TurnEvent {
    /// A model request is being sent; `iteration` is the number of the
    /// batch it may ask for (1 for the turn's first request).
    ModelRequestStarted {
        /// Batches run so far in this turn, plus one.
        iteration: u32,
    },
    /// Text of the response being streamed, as it arrives (sent by models
    /// that stream).
    TextDelta {
        /// The new piece of text.
        text: String,
    },
    /// Reasoning of the response being streamed, as it arrives.
    ReasoningDelta {
        /// The new piece of reasoning text.
        text: String,
    },
    /// The model answered.
    ModelResponded {
        /// Why it stopped.
        finish_reason: FinishReason,
        /// Tokens this request used.
        usage: Usage,
        /// Wall time of the request.
        duration: Duration,
    },
    /// A tool call started running (after waiting for a `parallel` slot).
    ToolCallStarted {
        /// The call's id.
        tool_call_id: String,
        /// The tool name the model asked for.
        tool_name: String,
    },
    /// A running tool call reported how far it is
    /// ([`CallContext::report_progress`](crate::tool::CallContext::report_progress);
    /// an MCP server's `notifications/progress` for the call).
    ToolCallProgress {
        /// The call's id.
        tool_call_id: String,
        /// The tool name the model asked for.
        tool_name: String,
        /// What the tool reported.
        progress: ToolProgress,
    },
    /// The server behind a running call's tool stopped and was started
    /// again (an MCP server whose process exited or whose connection
    /// closed; see `mcp::McpServer::restart_policy`).
    ToolServerRestarted {
        /// The call's id.
        tool_call_id: String,
        /// The tool name the model asked for.
        tool_name: String,
        /// The server's name (the MCP server definition's).
        server: String,
    },
    /// A [changing](crate::tool::Definition::changing) definition's tools
    /// were listed again (an MCP server announced
    /// `notifications/tools/list_changed`, or was restarted), and passed
    /// the checks of bind: from the model request that follows, the
    /// binding offers `tools` for it. Sent before that request.
    ToolListChanged {
        /// The definition's name (an MCP server's).
        definition: String,
        /// Its model-facing tool names now, in order.
        tools: Vec<String>,
    },
    /// A changing definition's new tool list failed the checks of bind (or
    /// could not be read): the binding keeps offering the tools it had.
    /// Sent before the model request that follows.
    ToolListRefused {
        /// The definition's name (an MCP server's).
        definition: String,
        /// What failed, as at bind: `InvalidToolInfo` (a name or a
        /// schema), `DuplicateToolName` (a name another definition of the
        /// binding produces), `FactoryFailed` (the list could not be read),
        /// `FactoryPanicked` (reading it panicked).
        kind: BindErrorKind,
        /// The error's text, with its causes.
        message: String,
    },
    /// The conversation was compacted before a model request (see
    /// [`context`](crate::context)); the turn's outcome holds the replaced
    /// messages ([`TurnOutcome::compactions`](crate::turn::TurnOutcome::compactions)).
    Compacted {
        /// The compactor's name.
        compactor: String,
        /// The request's estimated input tokens before.
        tokens_before: u64,
        /// And after.
        tokens_after: u64,
        /// Where the replaced messages were, in the conversation before.
        replaced: std::ops::Range<usize>,
        /// Where their replacement is now.
        replacement: std::ops::Range<usize>,
        /// The replaced messages, as they were (also in the outcome's
        /// [`Compaction::removed`](crate::context::Compaction::removed);
        /// here too for a turn that fails after compacting, whose
        /// outcome never comes). Copied only when someone watches.
        removed: Vec<crate::conversation::Message>,
    },
    /// A compaction was refused while the request was still under
    /// `context_tokens`: the history is kept as it was and the turn goes
    /// on. (Over it, the turn fails with
    /// [`TurnError::Compaction`](crate::turn::TurnError::Compaction).)
    CompactionRefused {
        /// The compactor's name.
        compactor: String,
        /// The rule its replacement broke, or `Failed`/`Panicked`.
        kind: crate::context::CompactionErrorKind,
        /// The error's text, with its causes.
        message: String,
    },
    /// An event of the turn of an agent that a call runs
    /// ([`tool::Definition::agent`](crate::tool::Definition::agent)), under
    /// that call: an agent's agent's events are nested twice.
    Nested {
        /// The id of the call that runs the agent.
        tool_call_id: String,
        /// The agent's tool name.
        tool_name: String,
        /// What happened in the agent's turn.
        event: Box<TurnEvent>,
    },
    /// A tool call finished; its result is the next to reach the
    /// conversation when its batch is done. Calls refused before running
    /// (unknown tool, bad arguments, cut off) finish without starting.
    ToolCallFinished {
        /// The call's id.
        tool_call_id: String,
        /// The tool name the model asked for.
        tool_name: String,
        /// Wall time of the call; zero for a call refused before running.
        duration: Duration,
        /// `None` for success, the kind of failure otherwise.
        error: Option<ToolCallErrorKind>,
    },
    /// An approval gate asks about a call: it waits for a decision, and the
    /// turn pauses once its batch's other calls ran.
    ToolCallPending {
        /// The call's id.
        tool_call_id: String,
        /// The tool name the model asked for.
        tool_name: String,
        /// Why the gate asks.
        reason: String,
    },
    /// The turn paused with this many calls pending.
    TurnPaused {
        /// Calls waiting for a decision.
        pending: u32,
    },
    /// A paused turn resumed: its decisions passed their checks.
    TurnResumed {
        /// Decisions taken.
        decisions: u32,
    },
    /// A batch finished: its assistant message and every result are in the
    /// conversation (but those of calls left pending by a pause).
    BatchFinished {
        /// The batch's number in the turn (1 for the first).
        iteration: u32,
        /// Tool calls in the batch.
        calls: u32,
    },
}

/// Where a turn sends its [`TurnEvent`]s: an unbounded channel, so sending
/// never blocks the turn (a slow reader only lets events queue). The
/// default sends nowhere, and then no event is even built.
///
/// ```
/// use agent_loop_core::turn::{TurnEvent, TurnEvents};
///
/// let (events, mut receiver) = TurnEvents::channel();
/// events.emit(|| TurnEvent::ModelRequestStarted { iteration: 1 });
/// assert_eq!(receiver.try_recv().ok(), Some(TurnEvent::ModelRequestStarted { iteration: 1 }));
///
/// // Nobody watching: the closure never runs.
/// TurnEvents::default().emit(|| unreachable!());
/// ```
#[derive(Clone, Debug, Default)]
pub struct TurnEvents {
    sender: Option<Sink>,
}

/// Where a turn's events go.
#[derive(Clone, Debug)]
enum Sink {
    /// A channel.
    Channel(UnboundedSender<TurnEvent>),
    /// The events of an agent's turn, sent as [`TurnEvent::Nested`] under
    /// the call that runs it.
    Nested(Arc<Nest>),
}

#[derive(Debug)]
struct Nest {
    parent: TurnEvents,
    tool_call_id: String,
    tool_name: String,
}

impl TurnEvents {
    /// Events sent nowhere, as a constant.
    pub(crate) const NOWHERE: Self = Self { sender: None };

    /// Tells the watchers the call `tool_call_id` of `tool_name` started.
    pub(crate) fn call_started(&self, tool_call_id: &str, tool_name: &str) {
        self.emit(|| TurnEvent::ToolCallStarted {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
        });
    }

    /// Tells the watchers the call of `stats` finished.
    pub(crate) fn call_finished(&self, stats: &CallStats) {
        self.emit(|| TurnEvent::ToolCallFinished {
            tool_call_id: stats.tool_call_id.clone(),
            tool_name: stats.tool_name.clone(),
            duration: stats.duration,
            error: stats.error,
        });
    }

    /// The events of an agent's turn run by the call `tool_call_id` of
    /// `tool_name` in the turn whose events are `parent`: each is sent
    /// there as a [`TurnEvent::Nested`].
    pub(crate) fn nested(parent: &TurnEvents, tool_call_id: &str, tool_name: &str) -> Self {
        if !parent.is_watched() {
            return Self::default();
        }
        Self {
            sender: Some(Sink::Nested(Arc::new(Nest {
                parent: parent.clone(),
                tool_call_id: tool_call_id.to_owned(),
                tool_name: tool_name.to_owned(),
            }))),
        }
    }

    /// Events sent to a new channel, and its receiving end. Events sent
    /// after the receiver is dropped are discarded.
    pub fn channel() -> (Self, UnboundedReceiver<TurnEvent>) {
        let (sender, receiver) = unbounded_channel();
        (
            Self {
                sender: Some(Sink::Channel(sender)),
            },
            receiver,
        )
    }

    /// Events sent to `sender`.
    pub fn to(sender: UnboundedSender<TurnEvent>) -> Self {
        Self {
            sender: Some(Sink::Channel(sender)),
        }
    }

    /// `true` when someone may be reading (a model can skip building
    /// deltas otherwise).
    pub fn is_watched(&self) -> bool {
        match &self.sender {
            None => false,
            Some(Sink::Channel(sender)) => !sender.is_closed(),
            Some(Sink::Nested(nest)) => nest.parent.is_watched(),
        }
    }

    /// Sends the event `event` builds; `event` runs only when someone may
    /// be reading. Never blocks and never fails.
    pub fn emit(&self, event: impl FnOnce() -> TurnEvent) {
        if self.is_watched() {
            self.send(event());
        }
    }

    fn send(&self, event: TurnEvent) {
        match &self.sender {
            None => {}
            // A receiver dropped in between only means nobody reads.
            Some(Sink::Channel(sender)) => drop(sender.send(event)),
            Some(Sink::Nested(nest)) => nest.parent.send(TurnEvent::Nested {
                tool_call_id: nest.tool_call_id.clone(),
                tool_name: nest.tool_name.clone(),
                event: Box::new(event),
            }),
        }
    }
}

impl CallEvents for TurnEvents {
    fn progress(&self, tool_call_id: &str, tool_name: &str, progress: ToolProgress) {
        self.emit(|| TurnEvent::ToolCallProgress {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            progress,
        });
    }

    fn restarted(&self, tool_call_id: &str, tool_name: &str, server: &str) {
        self.emit(|| TurnEvent::ToolServerRestarted {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            server: server.to_owned(),
        });
    }
}
