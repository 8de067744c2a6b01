//! [`Compactor`]: what makes a long conversation shorter, and [`compact`],
//! which runs one and checks what it returns before the history changes.

use std::ops::Range;
use std::panic::AssertUnwindSafe;

use async_trait::async_trait;
use futures::FutureExt;

use crate::context::TokenEstimator;
use crate::context::check::{self, CompactionError, CompactionErrorKind};
use crate::conversation::{Conversation, Message, Usage};
use crate::support::panic::panic_message;
use crate::tool::BoxError;

/// What a [`Compactor`] is asked: the conversation, the part of it it may
/// change, and how small the conversation should become.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CompactionRequest<'a> {
    /// The whole conversation, oldest first.
    pub conversation: &'a [Message],
    /// The messages a replacement may cover: after the leading system
    /// messages, and before the protected tail (a paused turn's pending
    /// calls and everything after them; the last batch of calls and its
    /// results, which the model has not seen yet; a last message the
    /// model has not answered).
    pub editable: Range<usize>,
    /// The conversation's estimated tokens now.
    pub tokens: u64,
    /// The estimate to reach: at or below it, the compaction did enough.
    pub target_tokens: u64,
    /// How tokens are counted.
    pub estimator: &'a TokenEstimator,
}

impl<'a> CompactionRequest<'a> {
    /// A request to bring `conversation` (estimated `tokens`) to
    /// `target_tokens`, changing only `editable` messages: what
    /// [`compact`] asks, for a test of a compactor of your own.
    pub fn new(
        conversation: &'a [Message],
        editable: Range<usize>,
        tokens: u64,
        target_tokens: u64,
        estimator: &'a TokenEstimator,
    ) -> Self {
        Self {
            conversation,
            editable,
            tokens,
            target_tokens,
            estimator,
        }
    }
}

/// What a [`Compactor`] returns: `messages` replace the messages in
/// `range` of the conversation.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Replacement {
    /// The messages replaced, within [`CompactionRequest::editable`].
    pub range: Range<usize>,
    /// What replaces them.
    pub messages: Vec<Message>,
    /// Tokens the compactor spent (a summarising model request), added to
    /// the turn's usage and budgets.
    pub usage: Usage,
}

impl Replacement {
    /// `messages` in place of `range`, at no token cost.
    pub fn new(range: Range<usize>, messages: Vec<Message>) -> Self {
        Self {
            range,
            messages,
            usage: Usage::default(),
        }
    }

    /// Spent `usage` to make it.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

/// Makes a conversation shorter: given a [`CompactionRequest`], it returns
/// a [`Replacement`] for a range of it, or `None` when it has nothing to
/// shorten.
///
/// A compactor need not know the providers' rules: [`compact`] checks what
/// it returns and refuses a replacement that breaks one (typed, see
/// [`CompactionErrorKind`]) before anything changes. The built-ins are
/// [`ElideToolResults`](crate::context::ElideToolResults) and
/// [`Summarize`](crate::turn::Summarize).
#[async_trait]
pub trait Compactor: Send + Sync {
    /// Its name, for errors, events and traces.
    fn name(&self) -> &str;

    /// A replacement that brings the conversation toward
    /// `request.target_tokens`, or `None`. An `Err` is reported as
    /// [`CompactionErrorKind::Failed`] with it as the source.
    async fn compact(
        &self,
        request: CompactionRequest<'_>,
    ) -> Result<Option<Replacement>, BoxError>;
}

/// A compactor is shown by its name.
impl std::fmt::Debug for dyn Compactor + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Compactor").field(&self.name()).finish()
    }
}

/// A compaction that took place: what [`compact`] returns, and what a turn
/// reports in [`TurnOutcome::compactions`](crate::turn::TurnOutcome::compactions).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Compaction {
    /// The compactor's name.
    pub compactor: String,
    /// Where the replaced messages were, in the conversation before.
    pub replaced: Range<usize>,
    /// Where their replacement is, in the compacted conversation.
    pub replacement: Range<usize>,
    /// The replaced messages, as they were: kept nowhere else.
    pub removed: Vec<Message>,
    /// The estimated tokens before (of the request, in a turn).
    pub tokens_before: u64,
    /// The estimated tokens after.
    pub tokens_after: u64,
    /// What the compactor spent.
    pub usage: Usage,
}

impl Compaction {
    /// Where a message that stood at `index` before stands now; `None` for
    /// a replaced one.
    pub fn moved(&self, index: usize) -> Option<usize> {
        if index < self.replaced.start {
            Some(index)
        } else if index < self.replaced.end {
            None
        } else {
            Some(index - self.replaced.len() + self.replacement.len())
        }
    }
}

/// The messages of `conversation` a compactor may replace: after the
/// leading system messages, and before what the model has not seen or
/// answered: the trailing user messages (all of them), a batch whose
/// results end the conversation or come right before those user messages
/// (its assistant message and results), a trailing assistant message with
/// calls, and the first assistant message with a call that has no result
/// (a paused turn's pending calls) and all after it. A trailing answer the
/// model gave may go.
pub fn editable(conversation: &[Message]) -> Range<usize> {
    let start = conversation
        .iter()
        .position(|message| !matches!(message, Message::System(_)))
        .unwrap_or(conversation.len());
    // The trailing user messages.
    let mut end = conversation
        .iter()
        .rposition(|message| !matches!(message, Message::User(_)))
        .map_or(0, |last| last + 1);
    // The batch before them, or at the end, whose results the model has
    // not answered.
    match end.checked_sub(1).map(|last| &conversation[last]) {
        Some(Message::Tool(_)) => {
            end = conversation[..end]
                .iter()
                .rposition(|message| !matches!(message, Message::Tool(_)))
                .unwrap_or(0);
        }
        Some(Message::Assistant(assistant)) if assistant.has_tool_calls() => end -= 1,
        _ => {}
    }
    // A call without a result: pending, as in a paused turn.
    let mut answered = std::collections::HashSet::new();
    for message in conversation {
        if let Message::Tool(result) = message {
            answered.insert(result.tool_call_id.as_str());
        }
    }
    if let Some(pending) = conversation.iter().position(|message| {
        message.as_assistant().is_some_and(|assistant| {
            assistant
                .tool_calls()
                .any(|call| !answered.contains(call.id.as_str()))
        })
    }) {
        end = end.min(pending);
    }
    start..end.max(start)
}

/// Asks `compactor` to bring `conversation` to `target_tokens` (as
/// `estimator` counts), checks its replacement, and applies it.
///
/// Returns `Ok(None)`, the conversation unchanged, when the conversation
/// is at or under the target already or the compactor had nothing to
/// shorten. The replacement must keep the rules every export keeps: it
/// covers only [`editable`] messages (the leading system messages, a
/// paused turn's pending calls and the messages the model has not seen
/// stay); it holds no system message and no message without content; its
/// tool calls are whole batches of the replaced messages, each with its
/// reasoning unchanged (signed thinking stays with its calls); every call
/// of the result is answered exactly once right after its message; and
/// the result is estimated smaller.
///
/// # Errors
///
/// [`CompactionError`] when the compactor fails or panics, or its
/// replacement breaks a rule (its [`kind`](CompactionError::kind) says
/// which, its `index` where); the conversation is then unchanged.
///
/// ```
/// use agent_loop_core::context::{self, ElideToolResults, TokenEstimator};
/// use agent_loop_core::conversation::{Message, ToolCall, ToolResult};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut conversation = vec![
///     Message::user("Read the log."),
///     Message::tool_calls(None, vec![ToolCall::new("call_1", "read", "{}")]),
///     Message::Tool(ToolResult::ok("call_1", "line\n".repeat(2_000))),
///     Message::assistant("The log is fine."),
///     Message::user("Thanks. Anything else?"),
/// ];
/// let estimator = TokenEstimator::new();
/// let compaction = context::compact(&mut conversation, &ElideToolResults::new(), &estimator, 500)
///     .await?
///     .expect("the long result is elided");
/// assert!(compaction.tokens_after <= 500);
/// assert_eq!(compaction.removed.len(), 1); // the result, as it was
/// assert!(conversation[2].text().contains("elided"));
/// # Ok::<_, context::CompactionError>(())
/// # }).unwrap();
/// ```
pub async fn compact(
    conversation: &mut Conversation,
    compactor: &dyn Compactor,
    estimator: &TokenEstimator,
    target_tokens: u64,
) -> Result<Option<Compaction>, CompactionError> {
    let tokens = estimator.messages(conversation);
    if tokens <= target_tokens {
        return Ok(None);
    }
    let editable = editable(conversation);
    compact_within(
        conversation,
        compactor,
        estimator,
        target_tokens,
        tokens,
        editable,
    )
    .await
}

/// [`compact`] with the estimate and the editable range known.
pub(crate) async fn compact_within(
    conversation: &mut Conversation,
    compactor: &dyn Compactor,
    estimator: &TokenEstimator,
    target_tokens: u64,
    tokens: u64,
    editable: Range<usize>,
) -> Result<Option<Compaction>, CompactionError> {
    let name = compactor.name();
    let request = CompactionRequest {
        conversation,
        editable: editable.clone(),
        tokens,
        target_tokens,
        estimator,
    };
    let asked = AssertUnwindSafe(compactor.compact(request))
        .catch_unwind()
        .await;
    let replacement = match asked {
        Ok(Ok(Some(replacement))) => replacement,
        Ok(Ok(None)) => return Ok(None),
        Ok(Err(error)) => {
            return Err(
                CompactionError::new(CompactionErrorKind::Failed, name, None).with_source(error),
            );
        }
        Err(panic) => {
            return Err(
                CompactionError::new(CompactionErrorKind::Panicked, name, None)
                    .with_source(panic_message(panic.as_ref())),
            );
        }
    };
    let Replacement {
        range,
        messages,
        usage,
    } = replacement;
    check::check(conversation, &editable, &range, &messages)
        .map_err(|(kind, index)| CompactionError::new(kind, name, index))?;
    let after = tokens - estimator.messages(&conversation[range.clone()]).min(tokens)
        + estimator.messages(&messages);
    if after >= tokens {
        return Err(CompactionError::new(
            CompactionErrorKind::NotSmaller,
            name,
            None,
        ));
    }
    let replacement = range.start..range.start + messages.len();
    let removed: Vec<Message> = conversation.splice(range.clone(), messages).collect();
    Ok(Some(Compaction {
        compactor: name.to_owned(),
        replaced: range,
        replacement,
        removed,
        tokens_before: tokens,
        tokens_after: after,
        usage,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ToolCall, ToolResult};

    fn batch(ids: &[&str]) -> Message {
        Message::tool_calls(
            None,
            ids.iter()
                .map(|id| ToolCall::new(*id, "read", "{}"))
                .collect(),
        )
    }

    fn result(id: &str) -> Message {
        Message::Tool(ToolResult::ok(id, "text"))
    }

    #[test]
    fn editable_leaves_out_the_system_messages_and_the_unit_the_model_has_not_seen() {
        let system = Message::system("Be brief.");
        // A question the model has not answered.
        let asked = [
            system.clone(),
            Message::user("a"),
            Message::assistant("b"),
            Message::user("c"),
        ];
        assert_eq!(editable(&asked), 1..3);
        // An answer the model gave may go.
        assert_eq!(editable(&asked[..3]), 1..3);
        // A batch and its results the model has not seen.
        let unseen = [
            system.clone(),
            Message::user("a"),
            batch(&["1"]),
            result("1"),
            batch(&["2", "3"]),
            result("2"),
            result("3"),
        ];
        assert_eq!(editable(&unseen), 1..4);
        // A paused turn's pending call, one of its batch answered.
        let paused = [
            Message::user("a"),
            batch(&["1"]),
            result("1"),
            Message::assistant("b"),
            Message::user("c"),
            batch(&["2", "3"]),
            result("2"),
        ];
        assert_eq!(editable(&paused), 0..5);
        // A pending call followed by a user message: everything from it stays.
        let waiting = [
            Message::user("a"),
            Message::assistant("b"),
            batch(&["1"]),
            Message::user("still there?"),
        ];
        assert_eq!(editable(&waiting), 0..2);
        // An assistant message with calls last, nothing answered yet.
        assert_eq!(editable(&waiting[..3]), 0..2);
        // Nothing but system messages, or nothing at all.
        assert_eq!(editable(&[system.clone(), system]), 2..2);
        assert_eq!(editable(&[]), 0..0);
        assert_eq!(editable(&[Message::user("a")]), 0..0);
    }

    #[test]
    fn moved_maps_an_index_of_before_to_the_compacted_conversation() {
        let compaction = Compaction {
            compactor: "c".into(),
            replaced: 2..6,
            replacement: 2..3,
            removed: Vec::new(),
            tokens_before: 10,
            tokens_after: 5,
            usage: Usage::default(),
        };
        assert_eq!(compaction.moved(0), Some(0));
        assert_eq!(compaction.moved(1), Some(1));
        assert_eq!(compaction.moved(2), None);
        assert_eq!(compaction.moved(5), None);
        assert_eq!(compaction.moved(6), Some(3));
        assert_eq!(compaction.moved(10), Some(7));
    }
}
