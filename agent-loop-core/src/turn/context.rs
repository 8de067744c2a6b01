//! What a turn works in, fixed for the turn: the binding and its mode,
//! the session's ids, the approval key, the turn's options, its events,
//! its token and its share with the agents its calls run. The turn's
//! state ([`TurnState`](crate::turn::TurnState)) changes; this does not,
//! but for the binding's tools, taken again before each request.

use std::sync::{Arc, LazyLock};

use tokio_util::sync::CancellationToken;

use crate::bind::call::CallTable;
use crate::bind::tool_set::{ListChange, ToolSet};
use crate::bind::{Binding, Bound};
use crate::context::{Compactor, ElideToolResults};
use crate::conversation::{Cost, Prices, Usage};
use crate::definition::Definition;
use crate::gate::{ApprovalKey, PauseClaims};
use crate::limits::ResolvedToolLimits;
use crate::session::{LoopId, SessionId};
use crate::support::cancel::until_cancelled;
use crate::tool::{CallEvents, TurnLink};
use crate::turn::nesting::{Nested, TurnShare};
use crate::turn::output::OutputProtocol;
use crate::turn::{
    BudgetPolicy, CallStats, PausePolicy, TurnEvent, TurnEvents, TurnOptions, TurnStats,
};

/// The compactor of a turn with a context budget and none of its own.
static ELIDE: ElideToolResults = ElideToolResults::new();

/// The token of a turn given none: nobody cancels it.
static NEVER: LazyLock<CancellationToken> = LazyLock::new(CancellationToken::new);

/// The events of a turn given none: nobody watches them.
static UNWATCHED: TurnEvents = TurnEvents::NOWHERE;

/// What one turn works in.
pub(super) struct TurnContext<'a> {
    pub(super) binding: &'a Binding,
    /// The binding's tools for the current iteration: taken again before
    /// each model request, so a changing definition's new list reaches
    /// the next request and never a running batch.
    pub(super) set: Arc<ToolSet>,
    /// The turn's mode: fixed for the turn.
    pub(super) mode: usize,
    /// The scope of the tool call ids this turn mints: the session's id.
    pub(super) id_scope: uuid::Uuid,
    /// The session's and loop's ids, which a pending call's MAC covers.
    pub(super) ids: (SessionId, LoopId),
    pub(super) approval_key: Option<&'a ApprovalKey>,
    pub(super) budget_policy: BudgetPolicy,
    /// What the turn's tokens cost: the options' prices (which `run_turn`
    /// fills from the model's).
    pub(super) prices: Option<Prices>,
    /// The input tokens one request may hold, as the options (or the
    /// model) say: the turn's context budget is at most this.
    pub(super) context_window: Option<u32>,
    /// What the other calls of a batch with a waiting call do.
    pub(super) pause_policy: PausePolicy,
    /// The turn's own compactor, if any (see [`TurnContext::compactor`]).
    pub(super) compactor: Option<&'a dyn Compactor>,
    /// Where a resume claims its pause.
    pub(super) claims: &'a dyn PauseClaims,
    /// This turn's share with the agents its calls run (and with the turn
    /// whose call runs it, as an agent).
    pub(super) share: Arc<TurnShare>,
    pub(super) cancellation: &'a CancellationToken,
    pub(super) events: &'a TurnEvents,
    pub(super) output: OutputProtocol<'a>,
}

impl<'a> TurnContext<'a> {
    /// The context of a turn of `session` with `options`, cancelled by
    /// `cancellation` and watched through `events` (the options' own, or
    /// stand-ins the caller keeps for options without them).
    pub(super) fn with(
        session: &'a Definition<Bound>,
        options: &'a TurnOptions<'a>,
        cancellation: &'a CancellationToken,
        events: &'a TurnEvents,
    ) -> Self {
        let binding = session.binding();
        TurnContext {
            binding,
            set: binding.tools.current(),
            mode: binding.current,
            id_scope: session.session_id().as_uuid(),
            ids: (session.session_id(), session.loop_id()),
            approval_key: binding.layout.approval_key.as_ref(),
            budget_policy: options.budget_policy,
            prices: options.prices,
            context_window: options.context_window,
            pause_policy: options.pause_policy,
            compactor: options.compactor,
            claims: options.claims.unwrap_or(&binding.claims),
            share: Arc::new(TurnShare::new(
                binding.mode(binding.current).tool_limits,
                options.parent.clone(),
                events.clone(),
                options.budget_policy,
                0,
                Usage::default(),
                Cost::ZERO,
            )),
            cancellation,
            events,
            output: OutputProtocol::new(options),
        }
    }

    /// The context of a turn of `session` with `options`, whose token and
    /// events stand in for those the options leave out: a token nobody
    /// cancels, events nobody watches.
    pub(super) fn new(session: &'a Definition<Bound>, options: &'a TurnOptions<'a>) -> Self {
        let cancellation = options.cancellation.unwrap_or(&NEVER);
        let events = options.events.unwrap_or(&UNWATCHED);
        Self::with(session, options, cancellation, events)
    }

    /// Gives the turn the share of a turn that already spent `calls`,
    /// `usage` and `cost` under `limits` (a resumed or rebuilt turn).
    pub(super) fn reshare(
        &mut self,
        limits: ResolvedToolLimits,
        calls: u32,
        usage: Usage,
        cost: Cost,
    ) {
        self.share = Arc::new(TurnShare::new(
            limits,
            self.share.parent.clone(),
            self.events.clone(),
            self.budget_policy,
            calls,
            usage,
            cost,
        ));
    }

    /// The turn spent `usage` on a model request (an answer, a summary):
    /// counted in `stats` with its cost at the turn's prices, and in the
    /// share of every turn above.
    pub(super) fn spend_tokens(&self, stats: &mut TurnStats, usage: Usage) {
        stats.usage += usage;
        let cost = self.prices.map(|prices| prices.cost(&usage));
        if let Some(cost) = cost {
            *stats.cost.get_or_insert(Cost::ZERO) += cost;
        }
        self.share.spend(Nested {
            usage,
            cost: cost.unwrap_or(Cost::ZERO),
            ..Nested::default()
        });
    }
}

impl TurnContext<'_> {
    /// Where this iteration's calls are looked up: the turn's mode's tools
    /// and its control tool.
    pub(super) fn table(&self) -> CallTable<'_> {
        CallTable::new(self.binding, &self.set, self.mode, self.output.control())
    }

    /// This turn's share with the agents its calls run.
    pub(super) fn share(&self) -> &TurnShare {
        &self.share
    }

    /// The compactor of this turn: its own, or [`ElideToolResults`] when its
    /// mode has a context budget.
    pub(super) fn compactor(&self, limits: &ResolvedToolLimits) -> Option<&dyn Compactor> {
        self.compactor.or_else(|| {
            limits
                .context_tokens
                .get()
                .map(|_| &ELIDE as &dyn Compactor)
        })
    }

    /// Takes the binding's tools as they are now, when a changing
    /// definition's list changed without a new listing.
    pub(super) fn take_changed_tools(&mut self) {
        if self.binding.tools.changes() {
            self.set = self.binding.tools.current();
        }
    }

    /// Lists again the changing definitions whose tools changed, and takes
    /// the binding's tools as they are now; each change is an event.
    pub(super) async fn refresh_tools(&mut self) {
        let tools = &self.binding.tools;
        if !tools.moved() {
            self.take_changed_tools();
            return;
        }
        // A cancelled turn does not wait for a server's list: the request
        // that follows sees the token and ends the turn.
        let Some(changes) =
            until_cancelled(self.cancellation, tools.refresh(&self.binding.layout)).await
        else {
            return;
        };
        for change in changes {
            self.events.emit(|| match change {
                ListChange::Changed { definition, tools } => {
                    TurnEvent::ToolListChanged { definition, tools }
                }
                ListChange::Refused {
                    definition,
                    kind,
                    message,
                } => TurnEvent::ToolListRefused {
                    definition,
                    kind,
                    message,
                },
            });
        }
        self.take_changed_tools();
    }

    /// What every call of a batch shares with the turn: its token, its
    /// events and its share with the agents the calls run.
    pub(super) fn turn_link(&self) -> Arc<TurnLink> {
        Arc::new(TurnLink {
            cancellation: self.cancellation.clone(),
            events: self
                .events
                .is_watched()
                .then(|| Arc::new(self.events.clone()) as Arc<dyn CallEvents>),
            share: Some(Arc::clone(&self.share) as Arc<dyn std::any::Any + Send + Sync>),
        })
    }

    /// Tells the watchers a call finished.
    pub(super) fn finished(&self, stats: &CallStats) {
        self.events.call_finished(stats);
    }
}
