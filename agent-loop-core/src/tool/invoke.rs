//! The [`Tool`] trait: a live tool, built for one binding, that can be invoked.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::session::{LoopId, SessionId};
use crate::tool::checked::CheckedInfo;
use crate::tool::{CallEvents, ToolInfo, ToolOutput, ToolProgress};

/// The error type of tools, factories and middlewares: any error, boxed.
/// `?` converts any `std::error::Error + Send + Sync` into it, and so does
/// `.into()` on a `&str` or `String`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A live tool, built by a [`tool::Definition`](crate::tool::Definition)'s
/// factory for one binding.
///
/// A tool is reached only through a bound definition
/// ([`Definition<Bound>`](crate::Definition)), which validates the arguments
/// against [`ToolInfo::parameters`] and runs the middleware chain before
/// `invoke` is called.
///
/// ```
/// use agent_loop_core::tool::{BoxError, CallContext, Tool, ToolInfo, ToolOutput};
/// use serde_json::{json, Value};
///
/// struct Echo(ToolInfo);
///
/// #[async_trait::async_trait]
/// impl Tool for Echo {
///     fn info(&self) -> &ToolInfo {
///         &self.0
///     }
///     async fn invoke(&self, arguments: Value, _context: &CallContext) -> Result<ToolOutput, BoxError> {
///         Ok(arguments.into())
///     }
/// }
/// ```
///
/// A tool is what it says and what it does, nothing more: how the binding
/// runs it (whether what runs it fills defaults in, its own bound on a
/// result's size, whether its calls run elsewhere) is declared on its
/// [`tool::Definition`](crate::tool::Definition) and read at bind.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// What the model sees of this tool, checked at bind (a one-tool
    /// definition's tool reports the info it declared, checked then).
    fn info(&self) -> &ToolInfo;

    /// Runs the tool. `arguments` is a JSON object that passed the schema in
    /// [`ToolInfo::parameters`] (a middleware may have rewritten it since).
    ///
    /// The output becomes the tool result: JSON (`Ok(value.into())`; a
    /// string is shown to the model as its text, any other value as compact
    /// JSON) or content parts such as images (see [`ToolOutput`]). An `Err` becomes
    /// an error result whose text is the error's `Display`, cleaned of
    /// control and format characters and bounded; the turn goes on. A panic is caught
    /// and reported the same way.
    ///
    /// Long tools should watch [`CallContext::cancellation`] and stop when it
    /// fires; the runner drops the future on cancellation in any case.
    async fn invoke(&self, arguments: Value, context: &CallContext)
    -> Result<ToolOutput, BoxError>;
}

/// What a tool and its middlewares know about the call they serve: read
/// through its methods.
///
/// One pointer wide and shared: cloning it (a
/// [`from_fn`](crate::tool::Definition::from_fn) handler receives its own
/// clone) or moving it through the middleware chain copies no field and
/// takes no lock.
#[derive(Clone)]
pub struct CallContext {
    call: Arc<CallData>,
}

/// What a [`CallContext`] shares: one allocation per call. The tool's name
/// and info come with its checked info, shared by every binding, so a
/// direct call's context allocates once and touches one reference count;
/// a turn's call also copies its tool call id and shares the turn's
/// [`TurnLink`] (and a named mode's name).
struct CallData {
    session_id: SessionId,
    loop_id: LoopId,
    mode: Option<Arc<str>>,
    tool: Arc<CheckedInfo>,
    /// Empty for a direct invocation.
    tool_call_id: String,
    /// What the turn shares with its calls.
    turn: Option<Arc<TurnLink>>,
    /// A direct invocation's own token, made when first asked for.
    own: OnceLock<CancellationToken>,
}

/// What a turn shares with every call it runs: its cancellation token, and
/// where the calls' reports (progress, restarts) go.
pub(crate) struct TurnLink {
    pub(crate) cancellation: CancellationToken,
    /// `None` when nobody watches the turn's events.
    pub(crate) events: Option<Arc<dyn CallEvents>>,
    /// What the turn shares with an agent a call runs (its limits, its
    /// counts, its events), opaque here: the turn layer defines it.
    pub(crate) share: Option<Arc<dyn Any + Send + Sync>>,
}

impl CallContext {
    /// A call's context; `turn` is what the turn shares with the batch's
    /// calls (`None`: a direct invocation, whose token never fires and
    /// whose progress goes nowhere).
    pub(crate) fn new(
        (session_id, loop_id): (SessionId, LoopId),
        mode: Option<Arc<str>>,
        tool: Arc<CheckedInfo>,
        tool_call_id: String,
        turn: Option<Arc<TurnLink>>,
    ) -> Self {
        Self {
            call: Arc::new(CallData {
                session_id,
                loop_id,
                mode,
                tool,
                tool_call_id,
                turn,
                own: OnceLock::new(),
            }),
        }
    }

    /// The session the binding belongs to.
    pub fn session_id(&self) -> SessionId {
        self.call.session_id
    }

    /// The loop the binding belongs to.
    pub fn loop_id(&self) -> LoopId {
        self.call.loop_id
    }

    /// The mode the call runs in; `None` for the base mode.
    pub fn mode(&self) -> Option<&str> {
        self.call.mode.as_deref()
    }

    /// The model-facing name of the tool called.
    pub fn tool_name(&self) -> &str {
        &self.call.tool.name
    }

    /// What the model sees of the tool called, shared with the binding: a
    /// middleware reads a policy from it, e.g. an MCP tool's
    /// [`annotations`](ToolInfo::annotations) (`readOnlyHint`).
    pub fn tool_info(&self) -> &ToolInfo {
        &self.call.tool.info
    }

    /// The provider's tool call id (empty when the tool is invoked directly
    /// rather than by a model).
    pub fn tool_call_id(&self) -> &str {
        &self.call.tool_call_id
    }

    /// The turn's cancellation token: fires when the turn is cancelled.
    /// For a direct invocation ([`ToolHandle::invoke`](crate::bind::ToolHandle::invoke))
    /// the call's own token, which nothing else fires (made on first use:
    /// most tools never ask). Clone it to keep it beyond the call.
    pub fn cancellation(&self) -> &CancellationToken {
        match &self.call.turn {
            Some(turn) => &turn.cancellation,
            None => self.call.own.get_or_init(CancellationToken::new),
        }
    }

    /// Reports how far the call is: in a turn, its watchers get a
    /// [`TurnEvent::ToolCallProgress`](crate::turn::TurnEvent::ToolCallProgress)
    /// with this call's id and tool name. Nothing happens when nobody
    /// watches, or for a direct invocation. Never blocks and never fails;
    /// it does not change the call's limits (an MCP server's progress
    /// re-arms its call timeout in the client, see `mcp::McpServer`).
    pub fn report_progress(&self, progress: ToolProgress) {
        if let Some(events) = self.events() {
            events.progress(&self.call.tool_call_id, &self.call.tool.name, progress);
        }
    }

    /// Tells the turn's watchers that `server`, behind this call's tool,
    /// stopped and was started again during the call
    /// ([`TurnEvent::ToolServerRestarted`](crate::turn::TurnEvent::ToolServerRestarted)):
    /// for a tool that runs on a process or connection of its own (an MCP
    /// server does). Nothing happens for a call nobody watches.
    pub fn report_restart(&self, server: &str) {
        if let Some(events) = self.events() {
            events.restarted(&self.call.tool_call_id, &self.call.tool.name, server);
        }
    }

    /// What the call's turn shares with an agent the call runs; `None` for
    /// a direct invocation.
    pub(crate) fn turn_share(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.call.turn.as_ref()?.share.clone()
    }

    /// Where this call's reports go: the turn's watchers, if any.
    fn events(&self) -> Option<&dyn CallEvents> {
        self.call.turn.as_ref()?.events.as_deref()
    }
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("session_id", &self.call.session_id)
            .field("loop_id", &self.call.loop_id)
            .field("mode", &self.call.mode)
            .field("tool_name", &self.call.tool.name)
            .field("tool_call_id", &self.call.tool_call_id)
            .field("cancelled", &self.cancellation().is_cancelled())
            .finish_non_exhaustive()
    }
}
