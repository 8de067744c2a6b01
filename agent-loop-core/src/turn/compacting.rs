//! Keeping a turn's requests inside its context budget: the estimate of
//! each request, corrected by what the provider reported, and the
//! compaction before a request (see [`context`](crate::context)).

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::context::{self, Compaction, CompactionError, TokenEstimator};
use crate::conversation::{Conversation, Message, Usage, WireFormat};
use crate::limits::ResolvedToolLimits;
use crate::turn::context::TurnContext;
use crate::turn::{Budget, BudgetError, TurnError, TurnEvent, TurnStats};

/// What a turn knows of its requests' size: part of its state, so a turn
/// rebuilt from its state corrects its estimates as the first did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct ContextMeter {
    /// Made when the turn first estimates a request: a turn that never
    /// compacts never needs one. Made again after a rebuild.
    #[serde(skip)]
    estimator: Option<TokenEstimator>,
    /// Reported minus estimated input tokens of the last answered request:
    /// what the estimator misses (the chat template, its tokenizer).
    correction: i64,
    /// The estimate of the request last sent, before the correction.
    sent: u64,
    /// Compacted once since the provider last said the window is full.
    pub(super) retried: bool,
    /// Each message's estimate, for the conversation's first messages: a
    /// turn only appends (but for a compaction, which truncates this), so
    /// each message is counted once, not once per request. Counted again
    /// after a rebuild.
    #[serde(skip)]
    counted: Vec<u64>,
}

/// How fitting the next request went.
pub(super) enum Fit {
    /// Send it.
    Fits,
    /// Cancelled while compacting; nothing changed.
    Interrupted,
    /// Over `context_tokens` after compacting: not sent.
    Over(BudgetError),
}

/// Where a turn's appended messages begin, and its compactions so far.
pub(super) struct Compacted<'s> {
    pub(super) first_new: &'s mut usize,
    pub(super) compactions: &'s mut Vec<Compaction>,
}

impl Compacted<'_> {
    /// Records `compaction`: the turn's first message moves with it (to
    /// the replacement's start when it was replaced).
    fn record(&mut self, compaction: Compaction) {
        *self.first_new = compaction
            .moved(*self.first_new)
            .unwrap_or(compaction.replacement.start);
        self.compactions.push(compaction);
    }
}

impl ContextMeter {
    /// The estimate of `conversation`'s messages, counting only those not
    /// counted before.
    fn messages(&mut self, estimator: &TokenEstimator, conversation: &[Message]) -> u64 {
        self.counted.truncate(conversation.len());
        let counted = self.counted.len();
        for message in &conversation[counted..] {
            self.counted.push(estimator.message(message));
        }
        self.counted.iter().sum()
    }

    /// The provider answered the request last sent, reporting `usage`.
    pub(super) fn answered(&mut self, usage: Usage) {
        if usage.input_tokens > 0 {
            let reported = i64::try_from(usage.input_tokens).unwrap_or(i64::MAX);
            let sent = i64::try_from(self.sent).unwrap_or(i64::MAX);
            self.correction = reported.saturating_sub(sent);
        }
    }

    fn corrected(&self, raw: u64) -> u64 {
        raw.saturating_add_signed(self.correction)
    }
}

impl TurnContext<'_> {
    /// Before a request: estimates it and, when it reaches `compact_at` of
    /// `context_tokens` (or always, when `forced`: the provider said the
    /// window is full), compacts the conversation.
    /// `format` is the model's, which the estimate counts in.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn fit_context(
        &self,
        conversation: &mut Conversation,
        limits: &ResolvedToolLimits,
        meter: &mut ContextMeter,
        forced: bool,
        stats: &mut TurnStats,
        mut compacted: Compacted<'_>,
        requests: u32,
        format: Option<WireFormat>,
    ) -> Result<Fit, TurnError> {
        let window = limits.context_tokens.get().map(u64::from);
        let Some(compactor) = self.compactor(limits) else {
            return Ok(Fit::Fits);
        };
        // Estimated for every request of a turn that may compact, a context
        // budget or not: the provider's answer corrects this estimate, and
        // a compaction when the window is full starts from the corrected one.
        let site = self.table().site();
        let estimator = meter
            .estimator
            .get_or_insert_with(|| TokenEstimator::for_format(format))
            .clone();
        let overhead = estimator.request(&[], site.instructions(), self.table().offered());
        let raw = meter.messages(&estimator, conversation);
        let estimate = meter.corrected(raw.saturating_add(overhead));
        meter.sent = raw.saturating_add(overhead);
        if window.is_none() && !forced {
            return Ok(Fit::Fits);
        }
        let Some(target) = compaction_target(limits, window, estimate, forced) else {
            // Under the threshold: nothing to do.
            return Ok(Fit::Fits);
        };
        // The target in the conversation's own terms: less the instructions,
        // the tools and the correction.
        let conversation_target = target
            .saturating_sub(overhead)
            .saturating_add_signed(meter.correction.saturating_neg());
        let editable = turn_editable(conversation);
        let compacting = context::compact_within(
            conversation,
            compactor,
            &estimator,
            conversation_target,
            raw,
            editable,
        );
        let compacted_now = tokio::select! {
            biased;
            () = self.cancellation.cancelled() => return Ok(Fit::Interrupted),
            compacted = compacting => compacted,
        };
        let after = match compacted_now {
            Ok(Some(mut compaction)) => {
                compaction.tokens_before = estimate;
                compaction.tokens_after =
                    meter.corrected(compaction.tokens_after.saturating_add(overhead));
                self.spend_tokens(stats, compaction.usage);
                let after = compaction.tokens_after;
                self.compacted(&compaction);
                meter.counted.truncate(compaction.replaced.start);
                meter.sent = meter
                    .messages(&estimator, conversation)
                    .saturating_add(overhead);
                compacted.record(compaction);
                after
            }
            Ok(None) if forced => {
                return Err(TurnError::ContextWindowExceeded { usage: stats.usage });
            }
            Ok(None) => estimate,
            Err(error) => {
                if forced || window.is_some_and(|window| estimate > window) {
                    return Err(TurnError::Compaction {
                        source: error,
                        usage: stats.usage,
                    });
                }
                self.refused(&error);
                estimate
            }
        };
        // Over the budget after compacting, even when the window was full:
        // the request is not sent.
        match window {
            Some(window) if after > window => Ok(Fit::Over(BudgetError {
                budget: Budget::ContextTokens,
                used: after,
                max: limits.context_tokens,
                requests,
                usage: stats.usage,
            })),
            _ => Ok(Fit::Fits),
        }
    }

    /// Tells the watchers that `compaction` replaced messages.
    fn compacted(&self, compaction: &Compaction) {
        self.events.emit(|| TurnEvent::Compacted {
            compactor: compaction.compactor.clone(),
            tokens_before: compaction.tokens_before,
            tokens_after: compaction.tokens_after,
            replaced: compaction.replaced.clone(),
            replacement: compaction.replacement.clone(),
            removed: compaction.removed.clone(),
        });
    }

    /// Tells the watchers, and the traces, that a compaction was refused.
    fn refused(&self, error: &CompactionError) {
        warn!(compactor = %error.compactor, error = %error, "compaction refused; the history is kept");
        self.events.emit(|| TurnEvent::CompactionRefused {
            compactor: error.compactor.clone(),
            kind: error.kind,
            message: crate::support::text::with_causes(error),
        });
    }
}

/// The estimate a compaction is to reach, or `None` when the request
/// needs none: half the estimate when the provider said the window is
/// full (`forced`); at a `context_tokens` window, once the estimate reaches
/// its `compact_at` share, that share (at most half the window).
fn compaction_target(
    limits: &ResolvedToolLimits,
    window: Option<u64>,
    estimate: u64,
    forced: bool,
) -> Option<u64> {
    match window {
        _ if forced => Some(estimate / 2),
        Some(window) if estimate >= limits.compact_at.of(window) => {
            Some(limits.compact_at.of(window).min(window / 2))
        }
        Some(_) | None => None,
    }
}

/// The messages a turn's compaction may replace: those of
/// [`context::editable`], less a trailing assistant message, which in a
/// turn is one the model goes on from (Anthropic's `pause_turn`).
fn turn_editable(conversation: &[Message]) -> std::ops::Range<usize> {
    let mut editable = context::editable(conversation);
    if let Some(Message::Assistant(_)) = conversation.last() {
        editable.end = editable.end.min(conversation.len() - 1).max(editable.start);
    }
    editable
}
