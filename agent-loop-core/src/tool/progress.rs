//! [`ToolProgress`]: how far a running call is, as its tool reports it, and
//! where a turn sends it.

/// How far a running call is: what a tool reports with
/// [`CallContext::report_progress`](crate::tool::CallContext::report_progress),
/// and what a turn's watchers get as
/// [`TurnEvent::ToolCallProgress`](crate::turn::TurnEvent::ToolCallProgress).
///
/// The shape is MCP's `notifications/progress` (specification 2025-11-25,
/// "Utilities" / "Progress"): `progress` grows with each report, `total`
/// is the value it reaches when done, if known, and `message` says what
/// is happening. Both numbers are in the tool's own units (steps, bytes,
/// files); they may be fractional. An MCP server's progress reaches the
/// turn in this shape as the server sent it.
///
/// ```
/// use agent_loop_core::tool::ToolProgress;
///
/// let progress = ToolProgress::new(3.0).total(10.0).message("indexing");
/// assert_eq!((progress.progress, progress.total), (3.0, Some(10.0)));
/// assert_eq!(progress.message.as_deref(), Some("indexing"));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolProgress {
    /// The progress so far.
    pub progress: f64,
    /// The progress when done, if known.
    pub total: Option<f64>,
    /// What is happening, for people.
    pub message: Option<String>,
}

impl ToolProgress {
    /// `progress` so far, with no total and no message.
    pub fn new(progress: f64) -> Self {
        Self {
            progress,
            total: None,
            message: None,
        }
    }

    /// The progress when done.
    pub fn total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// What is happening.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Where what a turn's calls report goes (the turn's events): the tool
/// layer names it, the turn implements it.
pub(crate) trait CallEvents: Send + Sync {
    /// The call `tool_call_id` of the tool `tool_name` reported `progress`.
    fn progress(&self, tool_call_id: &str, tool_name: &str, progress: ToolProgress);

    /// The server behind the call's tool, `server`, stopped and was
    /// started again.
    fn restarted(&self, tool_call_id: &str, tool_name: &str, server: &str);
}
