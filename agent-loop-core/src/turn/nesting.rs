//! What a turn shares with the agents its calls run
//! ([`tool::Definition::agent`](crate::tool::Definition::agent)): its
//! limits and what it and its agents spent, so an agent's calls and tokens
//! count against every turn above it.

use std::sync::{Arc, Mutex};

use crate::conversation::Message;
use crate::conversation::{Cost, Usage};
use crate::limits::ResolvedToolLimits;
use crate::support::lock::lock;
use crate::turn::checks::{check_budgets, check_limits};
use crate::turn::{AgentPause, BudgetError, BudgetPolicy, Resume, ToolLimitError, TurnEvents};

/// One turn's share: reached through a call's context by an agent the
/// call runs.
pub(crate) struct TurnShare {
    /// The turn's limits.
    limits: ResolvedToolLimits,
    /// The turn whose call runs this turn's agent, if any.
    pub(super) parent: Option<Parent>,
    /// The turn's events, under which an agent's events are nested.
    pub(super) events: TurnEvents,
    /// What the turn does when a budget is reached: its agents do the same.
    pub(super) budget_policy: BudgetPolicy,
    /// The root turn's is held while a batch's calls are checked against,
    /// and counted in, every turn of the tree: one lock for the whole tree
    /// of turns (see [`TurnShare::reserve_calls`]).
    tree: Mutex<()>,
    spent: Mutex<Spent>,
    /// Agents of this turn's calls that paused, by call id: the calls
    /// wait for a resume.
    parked: Mutex<Vec<(String, AgentPause)>>,
    /// Agents a resume of this turn goes on with, by call id: each with its
    /// conversation.
    resuming: Mutex<Vec<(String, Vec<Message>, Resume)>>,
}

impl std::fmt::Debug for TurnShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnShare")
            .field("nested", &self.parent.is_some())
            .finish_non_exhaustive()
    }
}

/// The turn above an agent's turn: its share, and its call that runs the
/// agent.
#[derive(Clone, Debug)]
pub(crate) struct Parent {
    pub(crate) share: Arc<TurnShare>,
    pub(crate) call: String,
}

/// What agents spent: their tool calls, their tokens and what those cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Nested {
    pub(crate) calls: u32,
    pub(crate) usage: Usage,
    pub(crate) cost: Cost,
}

impl Nested {
    fn add(&mut self, other: Nested) {
        self.calls = self.calls.saturating_add(other.calls);
        self.usage += other.usage;
        self.cost += other.cost;
    }
}

#[derive(Clone, Default)]
struct Spent {
    /// Counted by the turn itself.
    calls: u32,
    usage: Usage,
    /// What `usage` cost: each turn's tokens at its own prices (an agent
    /// whose prices are unknown adds nothing).
    cost: Cost,
    /// Spent by its agents since the turn last took it in.
    nested_calls: u32,
    nested_usage: Usage,
    nested_cost: Cost,
    /// The same, by the turn's call whose agent spent it: a call's share
    /// is taken with the call (a driver that journals each call), so calls
    /// that run at once never take each other's.
    by_call: Vec<(String, Nested)>,
}

impl TurnShare {
    /// The share of a turn with `limits`, which already spent `calls`,
    /// `usage` and `cost` (a resumed turn's paused counts).
    pub(super) fn new(
        limits: ResolvedToolLimits,
        parent: Option<Parent>,
        events: TurnEvents,
        budget_policy: BudgetPolicy,
        calls: u32,
        usage: Usage,
        cost: Cost,
    ) -> Self {
        Self {
            limits,
            parent,
            events,
            budget_policy,
            tree: Mutex::default(),
            spent: Mutex::new(Spent {
                calls,
                usage,
                cost,
                ..Spent::default()
            }),
            parked: Mutex::default(),
            resuming: Mutex::default(),
        }
    }

    /// The agent of the call `tool_call_id` paused: the call waits (a
    /// second pause of one call, a middleware's retry, replaces the first).
    pub(super) fn park(&self, tool_call_id: &str, pause: AgentPause) {
        let mut parked = lock(&self.parked);
        parked.retain(|(id, _)| id != tool_call_id);
        parked.push((tool_call_id.to_owned(), pause));
    }

    /// `true` when the call `tool_call_id`'s agent paused.
    pub(super) fn is_parked(&self, tool_call_id: &str) -> bool {
        lock(&self.parked).iter().any(|(id, _)| id == tool_call_id)
    }

    /// The calls whose agents paused since the last time.
    pub(super) fn take_parked(&self) -> Vec<(String, AgentPause)> {
        std::mem::take(&mut *lock(&self.parked))
    }

    /// The pause of the agent of the call `tool_call_id`, if it paused.
    pub(super) fn take_parked_of(&self, tool_call_id: &str) -> Vec<(String, AgentPause)> {
        let mut parked = lock(&self.parked);
        let (taken, kept) = std::mem::take(&mut *parked)
            .into_iter()
            .partition(|(id, _)| id == tool_call_id);
        *parked = kept;
        taken
    }

    /// The call `tool_call_id` is to resume its agent on `conversation`
    /// with `resume`.
    pub(super) fn resume_agent(
        &self,
        tool_call_id: &str,
        conversation: Vec<Message>,
        resume: Resume,
    ) {
        lock(&self.resuming).push((tool_call_id.to_owned(), conversation, resume));
    }

    /// What the call `tool_call_id` resumes, if it does.
    pub(super) fn take_resuming(&self, tool_call_id: &str) -> Option<(Vec<Message>, Resume)> {
        let mut resuming = lock(&self.resuming);
        let at = resuming.iter().position(|(id, _, _)| id == tool_call_id)?;
        let (_, conversation, resume) = resuming.swap_remove(at);
        Some((conversation, resume))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spent> {
        lock(&self.spent)
    }

    /// The turn spent `spending` itself (tool calls, tokens and their
    /// cost): counted here and in every turn above.
    pub(super) fn spend(&self, spending: Nested) {
        {
            let mut spent = self.lock();
            spent.calls = spent.calls.saturating_add(spending.calls);
            spent.usage += spending.usage;
            spent.cost += spending.cost;
        }
        if let Some(parent) = &self.parent {
            parent.share.spend_nested(&parent.call, spending);
        }
    }

    /// The agent of the call `call` spent `spending`.
    fn spend_nested(&self, call: &str, spending: Nested) {
        {
            let mut spent = self.lock();
            spent.nested_calls = spent.nested_calls.saturating_add(spending.calls);
            spent.nested_usage += spending.usage;
            spent.nested_cost += spending.cost;
            match spent.by_call.iter_mut().find(|(id, _)| id == call) {
                Some((_, by_call)) => by_call.add(spending),
                None => spent.by_call.push((call.to_owned(), spending)),
            }
        }
        if let Some(parent) = &self.parent {
            parent.share.spend_nested(&parent.call, spending);
        }
    }

    /// What the turn's agents spent since the last time, for the batch's
    /// results (still counted as nested until [`absorb`](Self::absorb)).
    pub(super) fn take_nested(&self) -> Nested {
        let mut spent = self.lock();
        spent.by_call.clear();
        Nested {
            calls: spent.nested_calls,
            usage: spent.nested_usage,
            cost: spent.nested_cost,
        }
    }

    /// What the agent of the call `tool_call_id` spent since the last
    /// time, for that call's result (still counted as nested until
    /// [`absorb`](Self::absorb)).
    pub(super) fn take_nested_of(&self, tool_call_id: &str) -> Nested {
        let mut spent = self.lock();
        let at = spent.by_call.iter().position(|(id, _)| id == tool_call_id);
        match at {
            Some(at) => spent.by_call.swap_remove(at).1,
            None => Nested::default(),
        }
    }

    /// A committed batch's agents spent `nested`: now the turn's own.
    /// Spent live, it moves from what its agents spent; read back from a
    /// journal (never spent in this process), it is added.
    pub(super) fn absorb(&self, nested: Nested) {
        let mut spent = self.lock();
        spent.calls = spent.calls.saturating_add(nested.calls);
        spent.usage += nested.usage;
        spent.cost += nested.cost;
        spent.nested_calls = spent.nested_calls.saturating_sub(nested.calls);
        spent.nested_usage = less(spent.nested_usage, nested.usage);
        spent.nested_cost = Cost::from_picodollars(
            spent
                .nested_cost
                .picodollars()
                .saturating_sub(nested.cost.picodollars()),
        );
    }

    /// What the turn and its agents spent: calls, tokens and their cost.
    fn used(&self) -> (u32, Usage, Cost) {
        let spent = self.lock();
        (
            spent.calls.saturating_add(spent.nested_calls),
            spent.usage + spent.nested_usage,
            spent.cost + spent.nested_cost,
        )
    }

    /// `true` when a turn above has a cost budget: an agent's turn without
    /// prices could not count toward it.
    pub(super) fn ancestor_has_cost_budget(&self) -> bool {
        self.ancestors()
            .any(|ancestor| ancestor.limits.cost_microdollars != crate::limits::Limit::Unlimited)
    }

    fn ancestors(&self) -> impl Iterator<Item = &TurnShare> {
        std::iter::successors(self.parent.as_ref().map(|parent| &*parent.share), |share| {
            share.parent.as_ref().map(|parent| &*parent.share)
        })
    }

    /// `Err` when a token budget of a turn above is reached by what it and
    /// its agents spent.
    pub(super) fn check_ancestor_budgets(&self) -> Result<(), BudgetError> {
        self.ancestors().try_for_each(|ancestor| {
            let (_, usage, cost) = ancestor.used();
            // Requests are each turn's own: only tokens and their cost
            // (each turn's at its own prices) are shared.
            check_budgets(&ancestor.limits, 0, usage, cost)
        })
    }

    /// Counts a batch of `batch_calls` as this turn's, or refuses it
    /// (counting nothing) when it would take a turn above past its `calls`
    /// limit; checked and counted under the tree's lock.
    pub(super) fn reserve_calls(&self, batch_calls: u32) -> Result<(), ToolLimitError> {
        let root = self.ancestors().last().unwrap_or(self);
        let _tree = lock(&root.tree);
        self.check_ancestor_calls(batch_calls)?;
        self.spend(Nested {
            calls: batch_calls,
            ..Nested::default()
        });
        Ok(())
    }

    fn check_ancestor_calls(&self, batch_calls: u32) -> Result<(), ToolLimitError> {
        self.ancestors().try_for_each(|ancestor| {
            let (calls, usage, _) = ancestor.used();
            // Iterations are each turn's own: only calls are shared.
            check_limits(
                &ancestor.limits,
                0,
                calls.saturating_add(batch_calls),
                batch_calls,
                usage,
            )
        })
    }
}

/// `usage` less `taken`, field by field, never below zero.
fn less(usage: Usage, taken: Usage) -> Usage {
    let mut left = usage;
    left.input_tokens = usage.input_tokens.saturating_sub(taken.input_tokens);
    left.output_tokens = usage.output_tokens.saturating_sub(taken.output_tokens);
    left.cache_read_tokens = usage
        .cache_read_tokens
        .saturating_sub(taken.cache_read_tokens);
    left.cache_write_tokens = usage
        .cache_write_tokens
        .saturating_sub(taken.cache_write_tokens);
    left.reasoning_tokens = usage
        .reasoning_tokens
        .saturating_sub(taken.reasoning_tokens);
    left
}
