//! One tool call against a binding, from its lookup to the result the
//! model reads: the one pipeline a turn's calls and direct calls
//! ([`Definition::invoke`](crate::Definition::invoke),
//! [`ToolHandle::invoke`](crate::bind::ToolHandle::invoke),
//! [`Definition::run_tool_call`](crate::Definition::run_tool_call)) go
//! through, so all of them refuse the same things the same way.
//!
//! In order:
//!
//! 1. **lookup** of the tool in the call's [`CallTable`]: the mode's tools,
//!    and in a turn that asks for structured output the control tool;
//! 2. **arguments**: read (text from a model: blank is `{}`; a value from
//!    code: at most 128 levels deep), an object, and passing the tool's
//!    schema;
//!
//!    then, for a call a model made, the **gate**
//!    ([`CallTable::gate`]): the mode's approval gates allow it or deny it
//!    (the call is answered without running);
//! 3. the **context** of the call (session, mode, tool, tool call id, the
//!    turn's token);
//! 4. the **middleware chain** down to the tool and back, every panic
//!    contained;
//! 5. **error labelling**: who failed (the tool, a middleware refusing or
//!    failing, a panic);
//! 6. the **output check**: an output nested too deeply to become text is
//!    refused;
//! 7. the **model-facing finish**: error text cleaned and bounded, the
//!    result cut to `result_bytes` (or to its definition's own bound,
//!    [`tool::Definition::result_bytes`](crate::tool::Definition::result_bytes),
//!    when smaller), the call's [`CallStats`].
//!
//! Steps 1 and 2 are [`CallTable::prepare`]: a call they refuse is
//! answered without running ([`unrun`]). A turn prepares a whole batch
//! first, under its own rules (`turn::batch_rules`: a response cut off by
//! the output limit, and a batch holding the turn's structured output,
//! decide for every call in it), then hands each ready call to [`Ready::call`], steps
//! 3 to 7, when its scheduler lets it start; `run_tool_call` does the same
//! without waiting. A direct `invoke` ([`invoke`]) stops before the
//! finish ([`Ready::execute`]): its caller gets the raw output, not the
//! model's text.

use std::any::Any;
use std::borrow::Cow;
use std::fmt::Write as _;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::Either;
use serde_json::Value;
use tracing::{Instrument, info_span};

use crate::bind::tool_set::ToolSet;
use crate::bind::{Binding, BoundTool, CallStats, ToolCallError, ToolCallErrorKind, ToolList};
use crate::conversation::{ContentPart, ToolCall, ToolResult, text_of};
use crate::definition::layout::Layout;
use crate::gate::{self, GateCall, Stopped};
use crate::limits::{ResolvedToolLimits, ResultBytes};
use crate::middleware::{
    ChainOutcome, DepthRefusal, Refusal, ToolFailed, ToolInvocation, ToolPanicked, run_chain,
    run_tool,
};
use crate::session::{LoopId, SessionId};
use crate::support::json::{self, MAX_DEPTH, TooDeep};
use crate::support::panic::{Panic, drop_payload, panic_message};
use crate::support::text::{
    Bounded, ERROR_TEXT_BYTES, clean_error_text, json_excerpt, truncate_middle,
};
use crate::tool::{BoxError, CallContext, STRUCTURED_OUTPUT_TOOL_NAME, ToolOutput, TurnLink};

/// The result text of the structured-output call that ends a turn.
const OUTPUT_RECEIVED: &str = "output received; the turn is over";

/// The tools a call is looked up in: one mode of a binding, and in a turn
/// that asks for structured output through a tool, its control tool.
#[derive(Clone, Copy)]
pub(crate) struct CallTable<'a> {
    binding: &'a Binding,
    /// The binding's tools at the time: fixed for a batch.
    set: &'a ToolSet,
    mode: usize,
    /// The turn's structured-output control tool.
    output: Option<&'a BoundTool>,
}

/// The arguments of a call, as they came.
pub(crate) enum Arguments<'t> {
    /// A model's text.
    Text(&'t str),
    /// A value built in code (a direct invocation).
    Value(Value),
}

/// A call after its lookup and argument checks.
pub(crate) enum Prepared<'a> {
    /// Ready to run.
    Ready(Ready<'a>),
    /// Not to run: answered with this error.
    Answered(ToolCallError),
    /// A gate asks for a decision: it waits, unanswered, for a resume.
    Pending(Pending),
}

/// A call a gate asks about: its validated arguments and the gate's
/// reason.
pub(crate) struct Pending {
    pub(crate) arguments: Value,
    pub(crate) reason: String,
    /// The call of an external tool: its result comes from outside.
    pub(crate) external: bool,
    /// Allowed by the gates, held because another call of its batch
    /// waits: it runs with the batch once the decisions come.
    pub(crate) held: bool,
}

/// The reason of a call held with its batch.
const HELD: &str = "held with its batch: its gates allowed it, and it runs once the batch's other calls are decided";

/// The reason of an external tool's pending call.
const EXTERNAL: &str = "an external tool: its result comes from outside this process";

/// A call whose tool was found and whose arguments passed its schema. It
/// borrows the binding's tool; a call that runs on a task of its own takes
/// its own share ([`Ready::into_owned`]).
pub(crate) struct Ready<'a> {
    tool: Cow<'a, BoundTool>,
    arguments: Value,
    /// The turn's structured-output call: what the chain returns is the
    /// turn's output.
    is_output: bool,
}

/// What the calls of one mode share: who calls, through which
/// middlewares, under which limits.
#[derive(Clone, Copy)]
pub(crate) struct CallSite<'s> {
    layout: &'s Layout,
    mode: usize,
    ids: (SessionId, LoopId),
}

/// A [`CallSite`] that owns its share of the layout: what a call running
/// on a task of its own holds.
pub(crate) struct OwnedSite {
    layout: Arc<Layout>,
    mode: usize,
    ids: (SessionId, LoopId),
}

impl<'s> CallSite<'s> {
    /// What the calls of mode `mode` of `binding` share.
    pub(crate) fn new(binding: &'s Binding, mode: usize) -> Self {
        Self {
            layout: &binding.layout,
            mode,
            ids: (binding.session_id, binding.loop_id),
        }
    }
}

impl OwnedSite {
    pub(crate) fn site(&self) -> CallSite<'_> {
        CallSite {
            layout: &self.layout,
            mode: self.mode,
            ids: self.ids,
        }
    }
}

/// A call answered: the result the model reads, its statistics, and for
/// the turn's structured-output call that succeeded, the output. Stored
/// as it is in a driver's journal (see
/// [`BatchResults`](crate::turn::BatchResults)).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Finished {
    pub(crate) result: ToolResult,
    pub(crate) stats: CallStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) output: Option<Value>,
}

impl<'a> CallTable<'a> {
    /// The table of mode `mode` of `binding`, whose tools are `set` now,
    /// with the turn's control tool.
    pub(crate) fn new(
        binding: &'a Binding,
        set: &'a ToolSet,
        mode: usize,
        output: Option<&'a BoundTool>,
    ) -> Self {
        Self {
            binding,
            set,
            mode,
            output,
        }
    }

    /// What this table's calls share, for a task of its own.
    pub(crate) fn owned_site(&self) -> OwnedSite {
        OwnedSite {
            layout: Arc::clone(&self.binding.layout),
            mode: self.mode,
            ids: (self.binding.session_id, self.binding.loop_id),
        }
    }

    /// What this table's calls share.
    pub(crate) fn site(&self) -> CallSite<'a> {
        CallSite::new(self.binding, self.mode)
    }

    /// The tools the model is offered, in order: the mode's, then the
    /// control tool.
    pub(crate) fn offered(&self) -> ToolList<'a> {
        ToolList::bound(
            &self.set.tools,
            &self.set.mode_tools(self.mode).tools,
            self.output.map(BoundTool::info),
        )
    }

    /// Whether this table has the turn's control tool.
    pub(crate) fn has_control(&self) -> bool {
        self.output.is_some()
    }

    /// Steps 1 and 2 for the call of the tool named `name`.
    pub(crate) fn prepare(&self, name: &str, arguments: Arguments<'_>) -> Prepared<'a> {
        match self.lookup(name) {
            Ok((tool, is_output)) => prepare_tool(tool, arguments, is_output),
            Err(error) => {
                // Arguments code built for no tool are dropped without
                // recursion too: they may nest deeper than a drop survives.
                if let Arguments::Value(value) = arguments {
                    drop(json::within_depth(value));
                }
                Prepared::Answered(error)
            }
        }
    }

    /// Step 2 for the call of the binding's tool at `index` (a handle's).
    pub(crate) fn prepare_at(&self, index: usize, arguments: Arguments<'_>) -> Prepared<'a> {
        prepare_tool(&self.set.tools[index], arguments, false)
    }

    /// The gate step, after step 2: a ready call (not the turn's
    /// structured output) that a gate of the mode stops is answered
    /// instead. `call` is the model's call, for its id.
    pub(crate) fn gate(&self, call: &ToolCall, prepared: Prepared<'a>) -> Prepared<'a> {
        let Prepared::Ready(ready) = prepared else {
            return prepared;
        };
        if ready.tool.facts.external {
            // Its result comes from outside: it waits, whatever the gates.
            return Prepared::Pending(Pending {
                arguments: ready.arguments,
                reason: EXTERNAL.to_owned(),
                external: true,
                held: false,
            });
        }
        let mode = self.binding.mode(self.mode);
        let gates = mode.tool_gates.get(&call.name).unwrap_or(&mode.gates);
        if ready.is_output || gates.is_empty() {
            return Prepared::Ready(ready);
        }
        let asked = GateCall {
            tool: ready.tool.info(),
            tool_call_id: &call.id,
            arguments: &ready.arguments,
            session_id: self.binding.session_id,
            loop_id: self.binding.loop_id,
            mode: mode.name.as_deref(),
        };
        let name = &call.name;
        match gate::ask(gates, &asked) {
            Ok(()) => Prepared::Ready(ready),
            Err(Stopped::Denied(reason)) => Prepared::Answered(denied(name, &reason)),
            Err(Stopped::Asked(reason)) => Prepared::Pending(Pending {
                arguments: ready.arguments,
                reason,
                external: false,
                held: false,
            }),
            Err(Stopped::Panicked(message)) => Prepared::Answered(ToolCallError::new(
                ToolCallErrorKind::GatePanicked,
                name,
                format!("the call to `{name}` was denied: the approval gate panicked: {message}"),
            )),
        }
    }

    /// What the crate keeps beside the tool named `name` in this table's
    /// mode (an agent's handler), if it has that tool and kept anything.
    pub(crate) fn nested(&self, name: &str) -> Option<&'a (dyn Any + Send + Sync)> {
        let index = *self.set.mode_tools(self.mode).by_name.get(name)?;
        self.set.tools[index].nested.as_deref()
    }

    /// Step 1: the tool named `name`, and whether it is the control tool.
    fn lookup(&self, name: &str) -> Result<(&'a BoundTool, bool), ToolCallError> {
        if let Some(&index) = self.set.mode_tools(self.mode).by_name.get(name) {
            return Ok((&self.set.tools[index], false));
        }
        if let Some(output) = self.output.filter(|_| name == STRUCTURED_OUTPUT_TOOL_NAME) {
            return Ok((output, true));
        }
        let available: Vec<&str> = self
            .set
            .mode_tools(self.mode)
            .tools
            .iter()
            .map(|&index| &*self.set.tools[index].checked.name)
            .collect();
        let available = if available.is_empty() {
            "none".to_owned()
        } else {
            available.join(", ")
        };
        if let Some(definition) = self.set.withdrawn(name).filter(|definition| {
            self.binding
                .mode(self.mode)
                .definitions
                .contains(definition)
        }) {
            let definition = self.binding.layout.definitions[definition].name();
            return Err(ToolCallError::new(
                ToolCallErrorKind::NoLongerOffered,
                name,
                format!(
                    "tool `{name}` is no longer offered: `{definition}` changed its tools; available tools: {available}"
                ),
            ));
        }
        Err(ToolCallError::new(
            ToolCallErrorKind::UnknownTool,
            name,
            format!("unknown tool `{name}`; available tools: {available}"),
        ))
    }
}

/// Step 2 for a call of `tool`.
fn prepare_tool<'a>(
    tool: &'a BoundTool,
    arguments: Arguments<'_>,
    is_output: bool,
) -> Prepared<'a> {
    let name = &*tool.checked.name;
    let arguments = match arguments {
        Arguments::Text(text) => parse_arguments(name, text),
        Arguments::Value(value) => refuse_too_deep(name, value),
    };
    match arguments.and_then(|arguments| {
        check_against(name, &tool.checked.validator, &arguments).map(|()| arguments)
    }) {
        Ok(arguments) => Prepared::Ready(Ready {
            tool: Cow::Borrowed(tool),
            arguments,
            is_output,
        }),
        Err(error) => Prepared::Answered(error),
    }
}

impl Prepared<'_> {
    /// The same prepared call, holding its own share of its tool: what a
    /// turn keeps from its response until its batch runs.
    pub(crate) fn into_owned(self) -> Prepared<'static> {
        match self {
            Prepared::Ready(ready) => Prepared::Ready(ready.into_owned()),
            Prepared::Answered(error) => Prepared::Answered(error),
            Prepared::Pending(pending) => Prepared::Pending(pending),
        }
    }
}

impl<'a> Ready<'a> {
    /// This call held with its batch, which waits for decisions: pending,
    /// with its arguments. The turn's structured output is never held.
    pub(crate) fn hold(self) -> Prepared<'a> {
        if self.is_output {
            return Prepared::Ready(self);
        }
        Prepared::Pending(Pending {
            arguments: self.arguments,
            reason: HELD.to_owned(),
            external: false,
            held: true,
        })
    }

    /// The same call, holding its own share of the tool: for a task that
    /// may outlive the borrow.
    pub(crate) fn into_owned(self) -> Ready<'static> {
        Ready {
            tool: Cow::Owned(self.tool.into_owned()),
            arguments: self.arguments,
            is_output: self.is_output,
        }
    }

    /// Steps 3 to 7 for the call `name` with id `id`: once its scheduler
    /// lets it start (`started` runs first: the turn's event), its context
    /// (`turn` is what the turn shares with its calls; `None` for a direct
    /// call, whose token never fires), the middleware chain to the tool, who failed,
    /// the output check, and the model-facing finish, all in the call's
    /// `execute_tool` span.
    ///
    /// A plain `fn`: an `async fn` would hold its arguments beside the
    /// instrumented block that takes them, twice the size to move.
    pub(crate) fn call<'s, F: FnOnce(&str, &str)>(
        self,
        site: CallSite<'s>,
        id: String,
        name: String,
        turn: Option<Arc<TurnLink>>,
        started: F,
    ) -> tracing::instrument::Instrumented<impl Future<Output = Finished> + use<'a, 's, F>> {
        let span = info_span!(
            "execute_tool",
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = %name,
            "gen_ai.tool.call.id" = %id,
        );
        async move {
            started(&id, &name);
            let began = Instant::now();
            let is_output = self.is_output;
            let limits = with_tool_bound(site.limits(), self.tool.facts.result_bytes);
            let output = self.execute(site, id.clone(), turn).await;
            finish(&limits, output, is_output, id, name, began.elapsed())
        }
        .instrument(span)
    }

    /// Steps 3 to 6 (for a direct invocation: no tool call id, a token
    /// that never fires): what the chain returned, labelled and checked,
    /// without the model-facing finish. The context is made here, before
    /// the future: the future holds the chain's and what the chain takes,
    /// not this call's parts beside them.
    pub(crate) fn execute<'s>(
        self,
        site: CallSite<'s>,
        tool_call_id: String,
        turn: Option<Arc<TurnLink>>,
    ) -> impl Future<Output = Result<ToolOutput, ToolCallError>> + Send + use<'a, 's> {
        let Ready {
            tool,
            arguments,
            is_output,
        } = self;
        let context = CallContext::new(
            site.ids,
            site.layout.modes[site.mode].name.clone(),
            Arc::clone(&tool.checked),
            tool_call_id,
            turn,
        );
        let middlewares = &site.layout.middlewares[..];
        // The tool's own timeout, else the mode's.
        let timeout = tool.facts.timeout.or_else(|| {
            site.limits()
                .call_timeout_ms
                .get()
                .map(|ms| Duration::from_millis(u64::from(ms)))
        });
        // Only a call with a timeout holds the tool's info for its error.
        let timed = timeout.map(|timeout| (timeout, Arc::clone(&tool.checked)));
        let chain = async move {
            let name = &tool.checked.name;
            // Without middlewares the tool runs under its own panic
            // boundary only: no middleware can panic, so the chain's second
            // boundary, its `Next` and its wrapping of the tool's error in
            // `ToolFailed` would be work with nothing to show for it. The
            // resulting `ToolCallError` is the same either way.
            let output = if middlewares.is_empty() {
                let outcome = match run_tool(tool.handler.as_ref(), arguments, &context) {
                    Ok(running) => running.await,
                    Err(panic) => Err(panic),
                };
                tool_outcome(name, outcome)
            } else {
                // Boxed: each middleware boxes its own future anyway, and
                // the chain's future would otherwise make every call's
                // larger, with middlewares or without.
                let chain = run_chain(
                    tool.handler.as_ref(),
                    middlewares,
                    ToolInvocation { arguments, context },
                );
                chain_outcome(name, Box::pin(chain).await)
            };
            // The control call's output is the turn's value, not text for
            // the model, so it is not checked here.
            match output {
                Ok(output) if !is_output => refuse_deep_output(name, output),
                other => other,
            }
        };
        async move {
            let Some((timeout, checked)) = timed else {
                return chain.await;
            };
            match tokio::time::timeout(timeout, chain).await {
                Ok(output) => output,
                // The chain's future is dropped here: the tool is cancelled.
                Err(_) => {
                    let name = &checked.name;
                    Err(ToolCallError::new(
                        ToolCallErrorKind::TimedOut,
                        name,
                        format!(
                            "the call to `{name}` timed out after {}",
                            shown_duration(timeout)
                        ),
                    ))
                }
            }
        }
    }
}

/// `timeout` as a model reads it: whole seconds (`30 s`) when it is some,
/// else milliseconds (`250 ms`).
fn shown_duration(timeout: Duration) -> String {
    if timeout.as_millis().is_multiple_of(1000) && !timeout.is_zero() {
        format!("{} s", timeout.as_secs())
    } else {
        format!("{} ms", timeout.as_millis())
    }
}

/// A direct call of mode `mode` of `binding`: `prepare` (steps 1 and 2)
/// at the first poll, then [`Ready::execute`]. The tools of a binding
/// that never change are borrowed, so the call takes no share of them; a
/// changing binding's are the set current at the first poll, held by the
/// call.
pub(crate) async fn invoke<P>(
    binding: &Binding,
    mode: usize,
    prepare: P,
) -> Result<ToolOutput, ToolCallError>
where
    P: for<'s> FnOnce(CallTable<'s>) -> Prepared<'s> + Send,
{
    match binding.tools.fixed() {
        Some(set) => run_direct(binding, set, mode, prepare).await,
        None => {
            let set = binding.tools.current();
            run_direct(binding, &set, mode, prepare).await
        }
    }
}

/// [`invoke`] on the tools `set` (a handle's: the set its index is of).
pub(crate) async fn invoke_in<P>(
    binding: &Binding,
    set: Arc<ToolSet>,
    mode: usize,
    prepare: P,
) -> Result<ToolOutput, ToolCallError>
where
    P: for<'s> FnOnce(CallTable<'s>) -> Prepared<'s>,
{
    run_direct(binding, &set, mode, prepare).await
}

/// [`invoke`] on the tools `set`: steps 1 and 2 now, then the call's
/// future (a plain `fn`, so that the call is one future, not one inside
/// another).
fn run_direct<'s, P>(
    binding: &'s Binding,
    set: &'s ToolSet,
    mode: usize,
    prepare: P,
) -> Either<
    impl Future<Output = Result<ToolOutput, ToolCallError>> + Send + use<'s, P>,
    std::future::Ready<Result<ToolOutput, ToolCallError>>,
>
where
    P: for<'t> FnOnce(CallTable<'t>) -> Prepared<'t>,
{
    match prepare(CallTable::new(binding, set, mode, None)) {
        Prepared::Ready(ready) => {
            Either::Left(ready.execute(CallSite::new(binding, mode), String::new(), None))
        }
        Prepared::Answered(error) => Either::Right(std::future::ready(Err(error))),
        // A direct call is not gated, so never pending; answered as not
        // run all the same.
        Prepared::Pending(pending) => Either::Right(std::future::ready(Err(ToolCallError::new(
            ToolCallErrorKind::NeedsApproval,
            "",
            pending.reason,
        )))),
    }
}

/// Step 7 for a call answered without running (an unknown tool, bad
/// arguments, a batch's rules).
pub(crate) fn unrun(site: CallSite<'_>, call: &ToolCall, error: ToolCallError) -> Finished {
    finish(
        site.limits(),
        Err(error),
        false,
        call.id.clone(),
        call.name.clone(),
        Duration::ZERO,
    )
}

/// The answer to a call a gate or a person denied, for `reason`: what
/// the model reads is the same either way.
pub(crate) fn denied(tool_name: &str, reason: &str) -> ToolCallError {
    ToolCallError::new(
        ToolCallErrorKind::Denied,
        tool_name,
        format!("the call to `{tool_name}` was denied: {reason}"),
    )
}

/// Step 7 for a call run elsewhere (an external result a resume brings):
/// `text` is its result, an error one when `is_error`.
pub(crate) fn external(
    site: CallSite<'_>,
    call: &ToolCall,
    text: &str,
    is_error: bool,
) -> Finished {
    let output = if is_error {
        Err(ToolCallError::new(
            ToolCallErrorKind::ToolFailed,
            &call.name,
            text.to_owned(),
        ))
    } else {
        Ok(ToolOutput::Json(Value::String(text.to_owned())))
    };
    finish(
        site.limits(),
        output,
        false,
        call.id.clone(),
        call.name.clone(),
        Duration::ZERO,
    )
}

/// Step 7 for a call whose task died outside the contained tool and
/// middleware code: it still gets its one result.
pub(crate) fn aborted(site: CallSite<'_>, call: &ToolCall) -> Finished {
    let error = ToolCallError::new(
        ToolCallErrorKind::ToolPanicked,
        &call.name,
        format!("the call to `{}` was aborted", call.name),
    );
    unrun(site, call, error)
}

/// Step 7: the tool result the model reads for the call `tool_name` with
/// id `tool_call_id`, and the call's statistics (`duration` is its time
/// through the chain).
fn finish(
    limits: &ResolvedToolLimits,
    output: Result<ToolOutput, ToolCallError>,
    is_output: bool,
    tool_call_id: String,
    tool_name: String,
    duration: Duration,
) -> Finished {
    let mut value = None;
    let (content, error) = match output {
        // What the chain returned is the output; a middleware that made
        // it content parts made it their text.
        Ok(output) if is_output => {
            value = Some(output.into_json());
            (vec![ContentPart::text(OUTPUT_RECEIVED)], None)
        }
        Ok(ToolOutput::Content(parts)) if !parts.is_empty() => (parts, None),
        Ok(output) => (vec![ContentPart::text(output.text())], None),
        // Bounded here to `result_bytes` too, with the error text's own
        // one-line marker: the result cut below would break the line.
        Err(error) => (
            vec![ContentPart::text(clean_error_text(
                &error.message,
                limits.result_bytes.map_or(ERROR_TEXT_BYTES, |limit| {
                    ERROR_TEXT_BYTES.min(limit.get() as usize)
                }),
            ))],
            Some(error.kind),
        ),
    };
    let (content, result_bytes, truncated) = bound_text(content, limits);
    Finished {
        result: ToolResult::with_content(tool_call_id.clone(), content, error.is_some()),
        stats: CallStats {
            tool_call_id,
            tool_name,
            duration,
            error,
            result_bytes,
            truncated,
        },
        output: value,
    }
}

impl<'s> CallSite<'s> {
    /// The limits of the site's mode.
    pub(crate) fn limits(&self) -> &'s ResolvedToolLimits {
        &self.layout.modes[self.mode].tool_limits
    }

    /// The mode's name; `None` for the base mode.
    pub(crate) fn mode_name(&self) -> Option<&'s str> {
        self.layout.modes[self.mode].name.as_deref()
    }

    /// The mode's instructions.
    pub(crate) fn instructions(&self) -> Option<&'s str> {
        self.layout.modes[self.mode].instructions.as_deref()
    }
}

/// The mode's `limits` with the tool's own result bound
/// ([`tool::Definition::result_bytes`](crate::tool::Definition::result_bytes)) applied: the smaller of the two bounds the
/// result, and either alone when the other is off. One cut, the same as
/// for `result_bytes` alone.
fn with_tool_bound(limits: &ResolvedToolLimits, tool: Option<NonZeroU32>) -> ResolvedToolLimits {
    let tool = tool.map(|bytes| ResultBytes::new(bytes.get()).unwrap_or(ResultBytes::MIN));
    let mut limits = *limits;
    limits.result_bytes = match (limits.result_bytes, tool) {
        (Some(mode), Some(tool)) => Some(mode.min(tool)),
        (mode, tool) => mode.or(tool),
    };
    limits
}

/// Bytes of the text parts of `content` together (images count none):
/// what a call's `result_bytes` statistic counts before any cut.
pub(crate) fn text_bytes(content: &[ContentPart]) -> usize {
    content
        .iter()
        .map(|part| match part {
            ContentPart::Text(text) => text.text.len(),
            _ => 0,
        })
        .sum()
}

/// Applies `result_bytes` to the text of a result's parts: when the text
/// parts together are longer than the limit, they become one text part, cut
/// head + marker + tail, where the first one was; other parts (images) stay
/// as they are. Returns the parts, the text bytes before the cut and
/// whether it cut.
fn bound_text(
    content: Vec<ContentPart>,
    limits: &ResolvedToolLimits,
) -> (Vec<ContentPart>, usize, bool) {
    let is_text = |part: &ContentPart| matches!(part, ContentPart::Text(_));
    let text_bytes = text_bytes(&content);
    let Some(limit) = limits.result_bytes.map(|limit| limit.get() as usize) else {
        return (content, text_bytes, false);
    };
    if text_bytes <= limit {
        return (content, text_bytes, false);
    }
    let text = text_of(&content);
    let shown = ContentPart::text(truncate_middle(&text, limit).into_owned());
    let first_text = content.iter().position(is_text).unwrap_or(0);
    let mut parts: Vec<ContentPart> = content.into_iter().filter(|part| !is_text(part)).collect();
    parts.insert(first_text.min(parts.len()), shown);
    (parts, text_bytes, true)
}

/// The error of a call not run because the turn has its output.
pub(crate) fn not_run(tool_name: &str, message: &str) -> ToolCallError {
    ToolCallError::new(ToolCallErrorKind::NotRun, tool_name, message.to_owned())
}

/// The error of a call whose response the output limit cut off.
pub(crate) fn cut_off_error(tool_name: &str) -> ToolCallError {
    ToolCallError::new(
        ToolCallErrorKind::CutOff,
        tool_name,
        format!(
            "the call to `{tool_name}` was cut off by the output token limit and did not run; send it again with shorter arguments, or split the work into smaller calls"
        ),
    )
}

/// Reads the model's arguments text: blank or `null` counts as `{}`, as
/// providers send for tools without parameters ([`json::no_arguments`]);
/// anything else must be a JSON object.
fn parse_arguments(tool_name: &str, text: &str) -> Result<Value, ToolCallError> {
    if json::no_arguments(text) {
        return Ok(Value::Object(Default::default()));
    }
    let value: Value = serde_json::from_str(text).map_err(|error| {
        ToolCallError::new(
            ToolCallErrorKind::ArgumentsNotJson,
            tool_name,
            format!(
                "the arguments of `{tool_name}` are not valid JSON ({error}); send a JSON object"
            ),
        )
    })?;
    if !value.is_object() {
        return Err(not_object(tool_name, &value));
    }
    Ok(value)
}

fn not_object(tool_name: &str, value: &Value) -> ToolCallError {
    let got = json::type_name(value);
    ToolCallError::new(
        ToolCallErrorKind::ArgumentsNotObject,
        tool_name,
        format!("the arguments of `{tool_name}` must be a JSON object, got {got}"),
    )
}

/// `arguments` when they nest at most [`MAX_DEPTH`] levels; otherwise
/// [`ToolCallErrorKind::ArgumentsTooDeep`], and the arguments are dropped
/// without recursion. Arguments a model sends are parsed from JSON text,
/// which cannot nest deeper; a value built in code can, and the schema
/// check, the middlewares and the tool would all recurse into it.
fn refuse_too_deep(tool_name: &str, arguments: Value) -> Result<Value, ToolCallError> {
    json::within_depth(arguments).ok_or_else(|| arguments_too_deep(tool_name))
}

/// [`ToolCallErrorKind::ArgumentsTooDeep`] for the tool `tool_name`.
fn arguments_too_deep(tool_name: &str) -> ToolCallError {
    ToolCallError::new(
        ToolCallErrorKind::ArgumentsTooDeep,
        tool_name,
        format!("the arguments of `{tool_name}` nest deeper than {MAX_DEPTH} levels"),
    )
    .caused_by(Box::new(TooDeep::new()))
}

/// `output` when every JSON value it holds nests at most [`MAX_DEPTH`]
/// levels; otherwise [`ToolCallErrorKind::OutputTooDeep`], and the output
/// is dropped without recursion. Turning an output into the model's text
/// (and copying or exporting the result) walks every value it holds.
fn refuse_deep_output(tool_name: &str, output: ToolOutput) -> Result<ToolOutput, ToolCallError> {
    output
        .within_depth()
        .ok_or_else(|| output_too_deep(tool_name))
}

/// [`ToolCallErrorKind::OutputTooDeep`] for the tool `tool_name`.
fn output_too_deep(tool_name: &str) -> ToolCallError {
    ToolCallError::new(
        ToolCallErrorKind::OutputTooDeep,
        tool_name,
        format!(
            "the output of `{tool_name}` nests deeper than {MAX_DEPTH} levels and cannot be shown"
        ),
    )
    .caused_by(Box::new(TooDeep::new()))
}

/// How many schema violations one error message lists at most.
const MAX_LISTED_VIOLATIONS: usize = 3;

/// Checks `arguments` of the tool `name` against `validator`; the message
/// names each failing field (as a JSON pointer) and why.
fn check_against(
    name: &str,
    validator: &jsonschema::Validator,
    arguments: &Value,
) -> Result<(), ToolCallError> {
    if !arguments.is_object() {
        return Err(not_object(name, arguments));
    }
    // The quick yes/no first: most calls are valid, and only an invalid
    // one needs the walk that names every failing field.
    if validator.is_valid(arguments) {
        return Ok(());
    }
    let mut errors = validator.iter_errors(arguments);
    let violations: Vec<String> = errors
        .by_ref()
        .take(MAX_LISTED_VIOLATIONS)
        .map(|error| describe_violation(&error))
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    // Whether there are more, without describing them.
    let more = if errors.next().is_some() { "; ..." } else { "" };
    Err(ToolCallError::new(
        ToolCallErrorKind::InvalidArguments,
        name,
        format!(
            "invalid arguments for `{name}`: {}{more}",
            violations.join("; ")
        ),
    ))
}

/// Bytes of a violation's path (a JSON pointer into the arguments) that a
/// message quotes.
const PATH_BYTES: usize = 128;
/// Bytes of a violation's reason that a message quotes.
const REASON_BYTES: usize = 256;
/// Bytes of the failing value quoted inside the reason.
const VALUE_BYTES: usize = 48;

/// One violation as the model reads it: where (`arguments`, or the JSON
/// pointer of the failing field), then jsonschema's sentence for the
/// failing keyword with a short excerpt of the value in place of the
/// value (`` `/city`: 42 is not of type "string" ``).
///
/// Each piece is written into a bounded buffer that stops the writer once
/// full, so a 64 MB value, key or list of unexpected keys costs a few
/// hundred bytes here, not a copy of itself.
fn describe_violation(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let field = if path.is_empty() {
        "arguments".to_owned()
    } else {
        let mut field = Bounded::new(PATH_BYTES);
        let _ = field.write_str(path);
        format!("`{}`", field.finish())
    };
    let value = json_excerpt(error.instance(), VALUE_BYTES);
    let mut reason = Bounded::new(REASON_BYTES);
    // A full buffer stops the writer with an error: what fitted is kept.
    let _ = write!(reason, "{}", error.masked_with(value));
    format!("{field}: {}", reason.finish())
}

/// What the tool `name` run alone ([`run_tool`]) came to.
fn tool_outcome(
    name: &str,
    outcome: Result<Result<ToolOutput, BoxError>, Panic>,
) -> Result<ToolOutput, ToolCallError> {
    match outcome {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(source)) => Err(tool_failed(name, source)),
        Err(panic) => {
            let message = panic_message(panic.as_ref());
            // A payload whose `Drop` panics must not escape either: the
            // chain's outer boundary would have caught it.
            drop_payload(Some(panic));
            Err(ToolCallError::new(
                ToolCallErrorKind::ToolPanicked,
                name,
                format!("the tool `{name}` panicked: {message}"),
            ))
        }
    }
}

/// What the middleware chain to the tool `name` came to.
fn chain_outcome(name: &str, outcome: ChainOutcome) -> Result<ToolOutput, ToolCallError> {
    match outcome {
        ChainOutcome::Output(output) => Ok(output),
        ChainOutcome::Failed(error) => Err(failed(name, error)),
        ChainOutcome::MiddlewarePanicked(message) => Err(ToolCallError::new(
            ToolCallErrorKind::MiddlewarePanicked,
            name,
            format!("the call to `{name}` failed: a middleware panicked: {message}"),
        )),
    }
}

/// The tool `name` returned `source`.
fn tool_failed(name: &str, source: BoxError) -> ToolCallError {
    ToolCallError::new(
        ToolCallErrorKind::ToolFailed,
        name,
        format!("the tool `{name}` failed: {source}"),
    )
    .caused_by(source)
}

/// Labels the chain's error by who returned it: the tool (wrapped by the
/// chain's end in [`ToolFailed`] or [`ToolPanicked`]), a middleware
/// refusing the call ([`Refusal`]), or a middleware failing.
fn failed(name: &str, error: BoxError) -> ToolCallError {
    let error = match error.downcast::<ToolFailed>() {
        Ok(failed) => return tool_failed(name, failed.into_source()),
        Err(error) => error,
    };
    // A hop of the chain refused what crossed it for its depth.
    match error.downcast_ref::<DepthRefusal>() {
        Some(DepthRefusal::Arguments(_)) => return arguments_too_deep(name),
        Some(DepthRefusal::Output(_)) => return output_too_deep(name),
        None => {}
    }
    if let Some(panic) = error.downcast_ref::<ToolPanicked>() {
        return ToolCallError::new(
            ToolCallErrorKind::ToolPanicked,
            name,
            format!("the tool `{name}` panicked: {}", panic.message),
        );
    }
    // A refusal counts wherever it is in the chain: an outer middleware
    // may wrap an inner one's refusal in an error of its own.
    if let Some(reason) = refusal_reason(error.as_ref()) {
        return ToolCallError::new(
            ToolCallErrorKind::Refused,
            name,
            format!("the call to `{name}` was refused: {reason}"),
        )
        .caused_by(error);
    }
    ToolCallError::new(
        ToolCallErrorKind::MiddlewareFailed,
        name,
        format!("the call to `{name}` failed in a middleware: {error}"),
    )
    .caused_by(error)
}

/// The reason of the first [`Refusal`] in `error`'s source chain.
fn refusal_reason(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(refusal) = current.downcast_ref::<Refusal>() {
            return Some(refusal.reason.clone());
        }
        cause = current.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(schema: Value, arguments: Value) -> String {
        let validator = jsonschema::validator_for(&schema).unwrap();
        check_against("t", &validator, &arguments)
            .unwrap_err()
            .message
    }

    #[test]
    fn a_violation_names_the_path_the_keyword_and_a_short_value() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "integer"}}});
        assert_eq!(
            message(schema.clone(), json!({"text": "short"})),
            r#"invalid arguments for `t`: `/text`: "short" is not of type "integer""#
        );
        let long = "y".repeat(10_000);
        assert_eq!(
            message(schema, json!({ "text": long })),
            format!(
                r#"invalid arguments for `t`: `/text`: "{}... is not of type "integer""#,
                "y".repeat(VALUE_BYTES - 4)
            )
        );
    }

    #[test]
    fn long_paths_and_reasons_are_cut_where_they_are_written() {
        let key = "k".repeat(10_000);
        let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        let text = message(schema, json!({ key.clone(): "x" }));
        assert_eq!(
            text,
            format!(
                r#"invalid arguments for `t`: `/{}...`: "x" is not of type "integer""#,
                "k".repeat(PATH_BYTES - 4)
            )
        );
        let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let text = message(schema, json!({ key: 1 }));
        assert!(
            text.starts_with(
                "invalid arguments for `t`: arguments: Additional properties are not allowed ('kkk"
            ),
            "{text}"
        );
        assert!(text.ends_with("kkk..."), "{text}");
        assert_eq!(
            text.len(),
            "invalid arguments for `t`: arguments: ".len() + REASON_BYTES
        );
    }

    #[test]
    fn more_than_three_violations_end_with_an_ellipsis() {
        let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        let text = message(schema, json!({"a": "x", "b": "x", "c": "x", "d": "x"}));
        assert_eq!(text.matches("is not of type").count(), 3);
        assert!(text.ends_with("; ..."), "{text}");
    }
}
