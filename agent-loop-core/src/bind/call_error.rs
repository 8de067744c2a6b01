//! [`ToolCallError`]: why one tool call produced no output.

use std::borrow::Cow;

use crate::tool::BoxError;

/// Why a tool call produced no output. In a turn each becomes a
/// model-facing error result and the turn goes on; the call's
/// [`CallStats::error`](crate::turn::CallStats::error) holds the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolCallErrorKind {
    /// No tool of that name in the current mode (a tool of another mode is
    /// unknown too).
    UnknownTool,
    /// The tool was offered earlier in this binding, and the latest list
    /// of its [changing](crate::tool::Definition::changing) definition
    /// (an MCP server's, after `notifications/tools/list_changed`) no
    /// longer has it. The tool did not run.
    NoLongerOffered,
    /// The arguments text is not JSON (e.g. truncated).
    ArgumentsNotJson,
    /// The arguments are JSON but not an object (`null`, `[1]`, `"x"`).
    ArgumentsNotObject,
    /// The arguments fail the tool's JSON Schema.
    InvalidArguments,
    /// The arguments, a value built in code and handed to
    /// [`ToolHandle::invoke`](crate::bind::ToolHandle::invoke) or
    /// [`Definition::invoke`](crate::Definition::invoke), nest objects and
    /// arrays deeper than 128 levels (serde_json parses no JSON text that
    /// deep, so arguments a model sends never do), or as a middleware
    /// rewrote them. Refused before anything walks them; the tool did not
    /// run. The source is a [`TooDeep`](crate::TooDeep).
    ArgumentsTooDeep,
    /// The tool returned an error; the source is the tool's own error.
    ToolFailed,
    /// The tool panicked.
    ToolPanicked,
    /// What the tool (and the middleware chain) returned holds a JSON
    /// value nested deeper than 128 levels (a `Json` output, or a value in
    /// the extras or provider blocks of content parts), which only code can
    /// build. The tool ran; its output was dropped without recursion,
    /// before anything turned it into text or handed it back. The source
    /// is a [`TooDeep`](crate::TooDeep).
    OutputTooDeep,
    /// A middleware refused the call with a
    /// [`Refusal`](crate::middleware::Refusal), found anywhere in the
    /// error's source chain (an outer middleware may wrap it). A middleware
    /// that refuses before calling `next` keeps the tool from running; one
    /// that refuses after it (an output policy) discards what the tool
    /// returned, but the tool ran, side effects included.
    Refused,
    /// A middleware returned an error of its own (anything but a
    /// [`Refusal`](crate::middleware::Refusal) or the
    /// [`ToolFailed`](crate::middleware::ToolFailed) /
    /// [`ToolPanicked`](crate::middleware::ToolPanicked) it got from
    /// below); the source is that error.
    MiddlewareFailed,
    /// A middleware panicked.
    MiddlewarePanicked,
    /// The response that asked for the call was cut off by the output token
    /// limit (finish reason `length` / `max_tokens`), so the call did not
    /// run: its arguments may be incomplete.
    CutOff,
    /// The call did not run because the turn already had its structured
    /// output: another call of an early-ending batch, or a second
    /// `structured_output` call.
    NotRun,
    /// An approval [`Gate`](crate::gate::Gate) denied the call; it did not
    /// run. The message holds the gate's reason.
    Denied,
    /// An approval gate panicked; the call did not run (a gate fails
    /// closed).
    GatePanicked,
    /// The call ran past its timeout (the tool's own,
    /// [`tool::Definition::timeout`](crate::tool::Definition::timeout), or
    /// the mode's [`call_timeout_ms`](crate::ToolLimits::call_timeout_ms))
    /// and was stopped: its future was dropped, which cancels it. What it
    /// did before may have happened.
    TimedOut,
    /// An approval gate asks for a decision, and the call came outside a
    /// turn ([`Definition::run_tool_call`](crate::Definition::run_tool_call)),
    /// which cannot pause: it did not run.
    NeedsApproval,
}

/// A tool call that produced no output: returned by
/// [`Definition::invoke`](crate::Definition::invoke) and
/// [`ToolHandle::invoke`](crate::bind::ToolHandle::invoke); in a turn, the
/// runner shows it to the model as an error result.
///
/// `message` is the short sentence the model is shown (the turn runner
/// cleans it of control and format characters and bounds it), e.g.
/// ``the call to `delete_file` was refused: deleting is not allowed in
/// review mode``. Display is the same sentence without its cause when the
/// cause is `source()`: the tool's own error for `ToolFailed` (``the tool
/// `search` failed``), the [`Refusal`](crate::middleware::Refusal) for
/// `Refused`, the middleware's error for `MiddlewareFailed`, a
/// [`TooDeep`](crate::TooDeep) for `ArgumentsTooDeep` (``the arguments of
/// `echo` were refused``) and `OutputTooDeep`; an error
/// reporter (anyhow's `{:#}`, eyre) prints the chain once.
#[derive(Debug, thiserror::Error)]
#[error("{}", operator_line(*.kind, .tool_name, .message))]
#[non_exhaustive]
pub struct ToolCallError {
    /// What went wrong.
    pub kind: ToolCallErrorKind,
    /// The tool name the call asked for.
    pub tool_name: String,
    /// The model-facing sentence.
    pub message: String,
    source: Option<BoxError>,
}

impl ToolCallError {
    pub(crate) fn new(kind: ToolCallErrorKind, tool_name: &str, message: String) -> Self {
        Self {
            kind,
            tool_name: tool_name.to_owned(),
            message,
            source: None,
        }
    }

    pub(crate) fn caused_by(mut self, source: BoxError) -> Self {
        self.source = Some(source);
        self
    }
}

/// The operator's line of a call error: the model's sentence, less the
/// cause where `source()` holds it.
fn operator_line<'m>(kind: ToolCallErrorKind, tool_name: &str, message: &'m str) -> Cow<'m, str> {
    match kind {
        ToolCallErrorKind::ToolFailed => format!("the tool `{tool_name}` failed").into(),
        ToolCallErrorKind::Refused => format!("the call to `{tool_name}` was refused").into(),
        ToolCallErrorKind::MiddlewareFailed => {
            format!("the call to `{tool_name}` failed in a middleware").into()
        }
        ToolCallErrorKind::ArgumentsTooDeep => {
            format!("the arguments of `{tool_name}` were refused").into()
        }
        ToolCallErrorKind::OutputTooDeep => {
            format!("the output of `{tool_name}` cannot be shown").into()
        }
        _ => Cow::Borrowed(message),
    }
}
