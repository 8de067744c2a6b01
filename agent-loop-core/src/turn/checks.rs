//! The limits a turn checks before a request and before a batch, against
//! what it (and, for an agent, each turn above it) used so far.

use crate::conversation::{Cost, Usage};
use crate::limits::ResolvedToolLimits;
use crate::turn::{Budget, BudgetError, ExceededLimit, ToolLimitError};

/// `Err` when a budget is reached: what the turn used (`requests` sent,
/// `usage` reported, and what that `cost`) is at or over it. (A turn with
/// a cost budget and no prices does not start: its cost is known.)
pub(super) fn check_budgets(
    limits: &ResolvedToolLimits,
    requests: u32,
    usage: Usage,
    cost: Cost,
) -> Result<(), BudgetError> {
    // Millionths of a dollar, rounded down: a budget is reached only when
    // a whole one is.
    let cost = cost.picodollars() / 1_000_000;
    let budgets = [
        (Budget::Requests, limits.requests, u64::from(requests)),
        (Budget::InputTokens, limits.input_tokens, usage.input_tokens),
        (
            Budget::OutputTokens,
            limits.output_tokens,
            usage.output_tokens,
        ),
        (
            Budget::TotalTokens,
            limits.total_tokens,
            usage.total_tokens(),
        ),
        (Budget::CostMicrodollars, limits.cost_microdollars, cost),
    ];
    for (budget, max, used) in budgets {
        if let Some(at_most) = max.get()
            && used >= u64::from(at_most)
        {
            return Err(BudgetError {
                budget,
                used,
                max,
                requests,
                usage,
            });
        }
    }
    Ok(())
}

/// `Err` when a batch of `batch_calls` would take the turn to `iterations`
/// iterations or `calls` calls, past its limits.
pub(super) fn check_limits(
    limits: &ResolvedToolLimits,
    iterations: u32,
    calls: u32,
    batch_calls: u32,
    usage: Usage,
) -> Result<(), ToolLimitError> {
    let exceeded = if !limits.iterations.allows(iterations) {
        ExceededLimit::Iterations
    } else if !limits.calls.allows(calls) {
        ExceededLimit::Calls
    } else {
        return Ok(());
    };
    Err(ToolLimitError {
        kind: exceeded,
        iterations,
        max_iterations: limits.iterations,
        calls,
        max_calls: limits.calls,
        batch_calls,
        usage,
    })
}
