//! The bound loop: a binding's live tools, its modes and the current mode,
//! reached through [`Definition<Bound>`](crate::Definition).
//!
//! Everything handed out borrows from the binding: a [`ToolHandle`] cannot
//! outlive the `Definition<Bound>` it came from (the compiler refuses it),
//! and collections are fresh copies, so changing them changes nothing.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use crate::bind::call::{self, Arguments, CallTable, Prepared};
use crate::bind::tool_set::{ToolSet, Tools};
use crate::bind::{CallOutcome, ToolCallError};
use crate::conversation::ToolCall;
use crate::definition::layout::{Layout, ModeLayout};
use crate::definition::{Definition, State, sealed};
use crate::limits::ResolvedToolLimits;
use crate::middleware::ToolMiddleware;
use crate::session::{LoopId, SessionId};
use crate::tool::checked::CheckedInfo;
use crate::tool::definition::Facts;
use crate::tool::{Handler, ToolInfo, ToolOutput};

/// The lifecycle state of a definition bound to one session by
/// [`bind`](crate::Definition::bind): it holds that session's live tools.
/// Not `Clone`: a binding is one session's.
pub struct Bound {
    pub(crate) binding: Binding,
}

impl sealed::Sealed for Bound {}
impl State for Bound {}

impl fmt::Debug for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.binding.fmt(f)
    }
}

// A bound definition is one session's: shared across tasks, never
// duplicated.
static_assertions::assert_impl_all!(Definition<Bound>: Send, Sync);
static_assertions::assert_not_impl_any!(Definition<Bound>: Clone);

/// The live state of one binding: its own tools, and the layout every
/// binding of its definition shares.
pub(crate) struct Binding {
    pub(crate) session_id: SessionId,
    pub(crate) loop_id: LoopId,
    /// Modes, names, limits and middlewares, shared.
    pub(crate) layout: Arc<Layout>,
    /// Its tools and where they go: as bound, or as a changing
    /// definition's latest list left them.
    pub(crate) tools: Tools,
    /// Index into the layout's modes of the current mode.
    pub(crate) current: usize,
    /// The pauses resumed in this binding, unless a turn's options give
    /// another store.
    pub(crate) claims: crate::gate::InMemoryPauseClaims,
}

impl fmt::Debug for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = self.tools.current();
        f.debug_struct("Binding")
            .field("session_id", &self.session_id)
            .field("loop_id", &self.loop_id)
            .field(
                "tools",
                &set.tools
                    .iter()
                    .map(|t| &*t.checked.name)
                    .collect::<Vec<_>>(),
            )
            .field("current_mode", &self.mode(self.current).name)
            .finish_non_exhaustive()
    }
}

/// One built tool with its checked info (shared with every binding that
/// reported the same info) and its compiled argument schema, and what its
/// definition declared about running it.
#[derive(Clone)]
pub(crate) struct BoundTool {
    pub(crate) checked: Arc<CheckedInfo>,
    /// What runs its calls: the runtime trait every tool comes down to.
    pub(crate) handler: Arc<dyn Handler>,
    /// Its definition's [`Facts`], read at bind.
    pub(crate) facts: Facts,
    /// What the crate keeps beside a tool it made itself: an agent's
    /// handler (see [`BuiltTool`](crate::tool::definition::BuiltTool)).
    pub(crate) nested: Option<Arc<dyn Any + Send + Sync>>,
}

impl BoundTool {
    /// `handler` with its checked info, run as a tool of this process.
    pub(crate) fn new(handler: Arc<dyn Handler>, checked: Arc<CheckedInfo>) -> Self {
        Self {
            checked,
            handler,
            facts: Facts::default(),
            nested: None,
        }
    }

    /// What the model sees of it.
    pub(crate) fn info(&self) -> &ToolInfo {
        &self.checked.info
    }

    /// Its compiled argument schema.
    pub(crate) fn validator(&self) -> &jsonschema::Validator {
        &self.checked.validator
    }
}

/// A mode of a bound definition, as a fresh copy: changing it changes
/// nothing in the binding.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BoundMode<'a> {
    /// The mode's name; `None` for the base mode.
    pub name: Option<String>,
    /// The tools the model can call in this mode, extra tools included, in
    /// order: the mode's own (or the base's, when it sets none), then the
    /// binding's extra tools.
    pub tools: Vec<ToolHandle<'a>>,
    /// The mode's limits, resolved: its own overrides, then the base's,
    /// then the defaults.
    pub tool_limits: ResolvedToolLimits,
    /// The instructions the model receives in this mode.
    pub instructions: Option<String>,
}

/// A live tool of a binding, in the mode it was taken from. It borrows the
/// binding, so it cannot outlive it or travel to another session; invoking
/// it goes through the middleware chain like a model's call.
///
/// It holds the binding's tools as they were when it was taken: after a
/// [changing](crate::tool::Definition::changing) definition's tools are
/// listed again, it still reaches the tool it was taken for.
#[derive(Clone)]
pub struct ToolHandle<'a> {
    binding: &'a Binding,
    /// The binding's tools when the handle was taken.
    set: Arc<ToolSet>,
    /// Index into `set.tools`.
    index: usize,
    /// Index into the layout's modes of the mode the handle was taken from.
    mode: usize,
}

impl<'a> ToolHandle<'a> {
    fn tool(&self) -> &BoundTool {
        &self.set.tools[self.index]
    }

    /// What the model sees of this tool.
    pub fn info(&self) -> &ToolInfo {
        &self.tool().checked.info
    }

    /// The model-facing tool name.
    pub fn name(&self) -> &str {
        &self.tool().checked.name
    }

    /// The name of the tool definition that built it.
    pub fn definition_name(&self) -> &'a str {
        self.binding.layout.definitions[self.set.table.tool_definition[self.index]].name()
    }

    /// `true` when both handles reach the same live instance (a definition
    /// shared by the base and modes is built once per binding).
    pub fn same_instance(&self, other: &ToolHandle<'_>) -> bool {
        Arc::ptr_eq(&self.tool().handler, &other.tool().handler)
    }

    /// Invokes the tool with JSON `arguments`, through the middleware chain,
    /// in the mode the handle was taken from (its
    /// [`CallContext::mode`](crate::tool::CallContext::mode): a handle from
    /// `bound.mode("review")` runs in `review` whatever the current mode),
    /// with an empty tool call id and a cancellation token that never fires.
    /// The [`ToolOutput`] is what the chain returned, before any
    /// `result_bytes` cut (a turn applies that).
    ///
    /// The future borrows the bound definition, not the handle: it may
    /// outlive a handle taken for the call. It is `Send`, and does nothing
    /// until polled.
    ///
    /// Errors: [`ToolCallError`] when the arguments nest objects and arrays
    /// deeper than 128 levels (`ArgumentsTooDeep`: refused before anything
    /// walks them, and dropped without recursion), are not an object or
    /// fail the tool's schema, when the tool fails or panics, when what it
    /// returned nests deeper than 128 levels (`OutputTooDeep`), or when a
    /// middleware refuses the call, fails or panics; its
    /// [`kind`](ToolCallError::kind) says which, as in a turn.
    pub fn invoke(
        &self,
        arguments: Value,
    ) -> impl Future<Output = Result<ToolOutput, ToolCallError>> + Send + use<'a> {
        let (set, index) = (Arc::clone(&self.set), self.index);
        call::invoke_in(self.binding, set, self.mode, move |table| {
            table.prepare_at(index, Arguments::Value(arguments))
        })
    }
}

impl fmt::Debug for ToolHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolHandle")
            .field("name", &self.name())
            .field("definition", &self.definition_name())
            .finish()
    }
}

impl Binding {
    /// Mode `index` of the layout.
    pub(crate) fn mode(&self, index: usize) -> &ModeLayout {
        &self.layout.modes[index]
    }

    fn mode_view(&self, index: usize) -> BoundMode<'_> {
        let mode = self.mode(index);
        let set = self.tools.current();
        BoundMode {
            name: mode.name.as_deref().map(str::to_owned),
            tools: set
                .mode_tools(index)
                .tools
                .iter()
                .map(|&i| self.handle(&set, i, index))
                .collect(),
            tool_limits: mode.tool_limits,
            instructions: mode.instructions.clone(),
        }
    }

    /// A handle on tool `index` of `set` in mode `mode`.
    fn handle(&self, set: &Arc<ToolSet>, index: usize, mode: usize) -> ToolHandle<'_> {
        ToolHandle {
            binding: self,
            set: Arc::clone(set),
            index,
            mode,
        }
    }

    pub(crate) fn mode_index(&self, name: &str) -> Option<usize> {
        self.layout
            .modes
            .iter()
            .position(|mode| mode.name.as_deref() == Some(name))
    }
}

/// The mode asked for does not exist in this binding: returned by
/// [`set_current_mode`](crate::Definition::set_current_mode).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no mode named `{name}`; modes: {available}")]
#[non_exhaustive]
pub struct UnknownMode {
    /// The name asked for.
    pub name: String,
    /// The declared mode names, comma-separated.
    pub available: String,
}

/// The bound loop: these methods exist on `Definition<Bound>` only.
impl Definition<Bound> {
    pub(crate) fn binding(&self) -> &Binding {
        &self.state.binding
    }

    /// The session this binding belongs to.
    pub fn session_id(&self) -> SessionId {
        self.binding().session_id
    }

    /// The loop this binding belongs to.
    pub fn loop_id(&self) -> LoopId {
        self.binding().loop_id
    }

    /// The tools of the current mode, in order (a fresh collection).
    pub fn tools(&self) -> Vec<ToolHandle<'_>> {
        self.current_mode().tools
    }

    /// The tool named `name` in the current mode, if there is one.
    pub fn tool(&self, name: &str) -> Option<ToolHandle<'_>> {
        let binding = self.binding();
        let set = binding.tools.current();
        set.mode_tools(binding.current)
            .by_name
            .get(name)
            .map(|&index| binding.handle(&set, index, binding.current))
    }

    /// Every mode: the base mode first (named `None`), then the named modes
    /// in declared order (a fresh collection).
    pub fn modes(&self) -> Vec<BoundMode<'_>> {
        let binding = self.binding();
        (0..binding.layout.modes.len())
            .map(|i| binding.mode_view(i))
            .collect()
    }

    /// The named mode `name`, if declared.
    pub fn mode(&self, name: &str) -> Option<BoundMode<'_>> {
        let binding = self.binding();
        binding.mode_index(name).map(|i| binding.mode_view(i))
    }

    /// The base mode: the definition's own tools and limits.
    pub fn base_mode(&self) -> BoundMode<'_> {
        self.binding().mode_view(0)
    }

    /// The current mode: the initial mode after `bind`, then whatever
    /// [`set_current_mode`](Self::set_current_mode) chose.
    pub fn current_mode(&self) -> BoundMode<'_> {
        let binding = self.binding();
        binding.mode_view(binding.current)
    }

    /// Switches the current mode: `Some(name)` for a named mode, `None` for
    /// the base mode. Takes `&mut self`, so it cannot happen while a turn
    /// runs or a handle is alive; the next turn uses the new mode's tools
    /// and limits.
    ///
    /// Errors: [`UnknownMode`] when no mode has that name; the current mode
    /// is then unchanged.
    pub fn set_current_mode(&mut self, name: Option<&str>) -> Result<(), UnknownMode> {
        let binding: &mut Binding = &mut self.state.binding;
        binding.current = match name {
            None => 0,
            Some(name) => binding.mode_index(name).ok_or_else(|| UnknownMode {
                name: name.to_owned(),
                available: binding
                    .layout
                    .modes
                    .iter()
                    .filter_map(|mode| mode.name.as_deref())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?,
        };
        Ok(())
    }

    /// Lists again the [changing](crate::tool::Definition::changing)
    /// definitions whose listing's version moved, as a turn does before
    /// each model request (the changes are traced, and no events sent):
    /// for a caller that runs calls without a turn, such as an MCP server
    /// of the binding before it answers `tools/list`. A new list that
    /// fails bind's checks is refused and the old one kept, as in a turn;
    /// nothing is returned, and nothing changes when no listing moved.
    pub async fn refresh_tools(&self) {
        let binding = self.binding();
        binding.tools.refresh(&binding.layout).await;
    }

    /// The middlewares, first = outermost (a fresh collection of shared
    /// instances).
    pub fn middlewares(&self) -> Vec<Arc<dyn ToolMiddleware>> {
        self.binding().layout.middlewares.to_vec()
    }

    /// Invokes the tool named `name` of the current mode with JSON
    /// `arguments`, through the middleware chain (first registered =
    /// outermost), as [`ToolHandle::invoke`] does. The future borrows
    /// `self` and `name`, is `Send` (spawn it with an
    /// `Arc<Definition<Bound>>` moved in), and does nothing until polled.
    ///
    /// Errors: [`ToolCallError`] of kind `UnknownTool` when the current mode
    /// has no such tool (a tool of another mode is unknown too), and the
    /// errors of [`ToolHandle::invoke`].
    pub fn invoke(
        &self,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Result<ToolOutput, ToolCallError>> + Send {
        let binding = self.binding();
        call::invoke(binding, binding.current, move |table| {
            table.prepare(name, Arguments::Value(arguments))
        })
    }

    /// Runs one tool call a model asked for in the current mode, outside a
    /// turn, exactly as a turn runs it: the same checks of the name and
    /// the arguments text (blank or `null` counts as `{}`), the middleware chain, and
    /// the same model-facing result (error text cleaned and bounded, text
    /// cut to the mode's `result_bytes`). For a loop of your own that
    /// appends `outcome.result` to its conversation.
    ///
    /// The tool call id is used as given; the call's context has a
    /// cancellation token that never fires. Nothing fails: every problem is
    /// an error result, its kind in [`CallStats::error`](crate::bind::CallStats::error).
    ///
    /// ```
    /// use agent_loop_core::conversation::ToolCall;
    /// use agent_loop_core::tool::{self, BoxError, ToolInfo};
    /// use agent_loop_core::{Bindings, Definition, LoopId, SessionId};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let now = tool::Definition::from_fn(
    ///     ToolInfo::without_parameters("now", "The time."),
    ///     |_arguments: serde_json::Value, _context| async { Ok::<_, BoxError>("12:00") },
    /// );
    /// let session = Definition::builder().name("clock").tool(now).build().validate()?
    ///     .bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
    ///
    /// let outcome = session.run_tool_call(&ToolCall::new("call_1", "now", "")).await;
    /// assert_eq!((outcome.result.text(), outcome.result.is_error), ("12:00".to_owned(), false));
    /// let outcome = session.run_tool_call(&ToolCall::new("call_2", "later", "{}")).await;
    /// assert!(outcome.result.is_error);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn run_tool_call<'a>(
        &'a self,
        call: &'a ToolCall,
    ) -> impl Future<Output = CallOutcome> + Send + 'a {
        let binding = self.binding();
        async move {
            let set = binding.tools.current();
            let table = CallTable::new(binding, &set, binding.current, None);
            let site = table.site();
            let prepared = table.prepare(&call.name, Arguments::Text(&call.arguments));
            let finished = match table.gate(call, prepared) {
                Prepared::Ready(ready) => {
                    ready
                        .call(site, call.id.clone(), call.name.clone(), None, |_, _| {})
                        .await
                }
                Prepared::Answered(error) => call::unrun(site, call, error),
                // No turn to pause: answered as not run.
                Prepared::Pending(pending) => {
                    let name = &call.name;
                    let error = ToolCallError::new(
                        crate::bind::ToolCallErrorKind::NeedsApproval,
                        name,
                        format!(
                            "the call to `{name}` was not run: it needs approval ({})",
                            pending.reason
                        ),
                    );
                    call::unrun(site, call, error)
                }
            };
            CallOutcome {
                result: finished.result,
                stats: finished.stats,
            }
        }
    }
}
