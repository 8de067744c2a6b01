//! The rules a compacted conversation must keep, checked before it
//! replaces the history: [`CompactionError`].

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::conversation::{ContentPart, Message};
use crate::support::json;
use crate::tool::BoxError;

/// Why a compaction was refused: the [`kind`](CompactionError::kind) of a
/// [`CompactionError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompactionErrorKind {
    /// The compactor failed: its error is the `source()`.
    Failed,
    /// The compactor panicked; the panic's message is the `source()`.
    Panicked,
    /// The replacement's range is empty of meaning: it ends past the
    /// conversation, or begins after it ends.
    InvalidRange,
    /// The replacement touches what must stay: the leading system
    /// messages, or the protected tail (pending calls of a paused turn,
    /// the last batch the model has not seen, the message it has not
    /// answered).
    Protected,
    /// The replacement adds, drops or changes a system message: the system
    /// messages of the replaced range come back unchanged and in order,
    /// and no other (the leading ones are never in the range).
    SystemMessage,
    /// A message with no content, or blank text only: no provider accepts
    /// it ("all messages must have non-empty content").
    EmptyMessage,
    /// A tool call the replaced messages did not hold: a compactor keeps
    /// or drops calls, it does not make them.
    UnknownToolCall,
    /// An assistant message whose tool calls, reasoning and provider
    /// blocks are not exactly those of one replaced message (each kept
    /// once): a batch stays whole and unchanged, signed thinking stays
    /// with its calls (Anthropic refuses a tool use whose thinking
    /// changed), and a server tool's use stays with its result
    /// (`server_tool_use` and `web_search_tool_result`).
    ChangedBatch,
    /// A tool call without exactly one result right after its assistant
    /// message, or a result that answers no call of the message before it.
    UnpairedToolCall,
    /// A value nested deeper than 128 levels (see
    /// [`TooDeep`](crate::TooDeep)).
    TooDeep,
    /// The compacted conversation is not estimated smaller than before.
    NotSmaller,
    /// Messages in an order a provider refuses: the first message after
    /// the system messages is no longer a user message, or an assistant
    /// message with tool calls or reasoning now follows another assistant
    /// message (Gemini: "function call turn comes immediately after a
    /// user turn or after a function response turn"; Anthropic joins the
    /// two, and the joined message no longer starts with its thinking).
    /// An order the history already had is kept.
    MessageOrder,
}

impl CompactionErrorKind {
    fn describe(self) -> &'static str {
        match self {
            Self::Failed => "the compactor failed",
            Self::Panicked => "the compactor panicked",
            Self::InvalidRange => "its range is not in the conversation",
            Self::Protected => "it replaces the leading system messages or the protected tail",
            Self::SystemMessage => "it adds, drops or changes a system message",
            Self::EmptyMessage => "it holds a message without content",
            Self::UnknownToolCall => "it holds a tool call the replaced messages did not",
            Self::ChangedBatch => {
                "it splits, repeats or changes a batch of tool calls, or the reasoning or provider blocks beside them"
            }
            Self::UnpairedToolCall => {
                "a tool call is not answered exactly once right after its message"
            }
            Self::TooDeep => "it holds a JSON value nested too deep",
            Self::NotSmaller => "it is not estimated smaller than the history it replaces",
            Self::MessageOrder => {
                "it leaves messages in an order providers refuse (no user message first, or a model turn with calls or reasoning right after another)"
            }
        }
    }
}

/// A compaction refused: the compactor failed, or what it returned breaks a
/// rule every provider holds a conversation to. The conversation was not
/// changed.
///
/// Display is one line, e.g. `compaction refused (elide_tool_results): a
/// tool call is not answered exactly once right after its message (at
/// messages[4])`; the compactor's own error, when it failed, is the
/// `source()`.
#[derive(Debug, thiserror::Error)]
#[error(
    "compaction refused ({compactor}): {}{}",
    .kind.describe(),
    .index.map(|index| format!(" (at messages[{index}])")).unwrap_or_default()
)]
#[non_exhaustive]
pub struct CompactionError {
    /// The rule broken.
    pub kind: CompactionErrorKind,
    /// The compactor's [`name`](crate::context::Compactor::name).
    pub compactor: String,
    /// Where, in the compacted conversation, when one message is at fault.
    pub index: Option<usize>,
    #[source]
    source: Option<BoxError>,
}

impl CompactionError {
    pub(crate) fn new(kind: CompactionErrorKind, compactor: &str, index: Option<usize>) -> Self {
        Self {
            kind,
            compactor: compactor.to_owned(),
            index,
            source: None,
        }
    }

    pub(crate) fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }
}

/// Checks replacing `range` of `conversation` with `replacement`, where
/// `editable` is the part a compactor may touch. Returns the rule broken
/// first and where (an index into the compacted conversation).
pub(crate) fn check(
    conversation: &[Message],
    editable: &Range<usize>,
    range: &Range<usize>,
    replacement: &[Message],
) -> Result<(), (CompactionErrorKind, Option<usize>)> {
    if range.start > range.end || range.end > conversation.len() {
        return Err((CompactionErrorKind::InvalidRange, None));
    }
    if range.start < editable.start || range.end > editable.end {
        return Err((CompactionErrorKind::Protected, None));
    }
    let at = |offset: usize| Some(range.start + offset);
    let replaced = &conversation[range.clone()];
    // The system messages of the range come back unchanged and in order,
    // and no other: instructions are not the compactor's to change.
    let (before, after) = (systems(replaced), systems(replacement));
    if before.len() != after.len()
        || before
            .iter()
            .zip(&after)
            .any(|((_, before), (_, after))| before != after)
    {
        let offset = after
            .iter()
            .zip(&before)
            .find(|((_, after), (_, before))| after != before)
            .map_or(
                after.first().map(|(offset, _)| *offset),
                |((offset, _), _)| Some(*offset),
            );
        return Err((CompactionErrorKind::SystemMessage, offset.and_then(at)));
    }
    // What of each replaced assistant message must stay together: its
    // calls, reasoning and provider blocks (an Anthropic `server_tool_use`
    // and its result), each kept message one of them, whole and unchanged.
    let mut skeletons: Vec<Option<Vec<&ContentPart>>> = replaced
        .iter()
        .filter_map(Message::as_assistant)
        .map(|assistant| skeleton(&assistant.content))
        .filter(|skeleton| !skeleton.is_empty())
        .map(Some)
        .collect();
    let call_ids: HashSet<&str> = replaced
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(|assistant| assistant.tool_calls())
        .map(|call| call.id.as_str())
        .collect();
    for (offset, message) in replacement.iter().enumerate() {
        if message.json_values().any(json::too_deep) {
            return Err((CompactionErrorKind::TooDeep, at(offset)));
        }
        let content = match message {
            // Checked above.
            Message::System(_) => continue,
            Message::User(user) => &user.content,
            Message::Assistant(assistant) => &assistant.content,
            Message::Tool(_) => continue,
        };
        // A blank message the history held already (a model's empty
        // answer) may be kept as it was: the exports leave it out.
        if content.iter().all(is_blank) && !replaced.contains(message) {
            return Err((CompactionErrorKind::EmptyMessage, at(offset)));
        }
        let Message::Assistant(assistant) = message else {
            continue;
        };
        if assistant
            .tool_calls()
            .any(|call| !call_ids.contains(call.id.as_str()))
        {
            return Err((CompactionErrorKind::UnknownToolCall, at(offset)));
        }
        let kept = skeleton(&assistant.content);
        if kept.is_empty() {
            continue;
        }
        // Each original is kept at most once.
        match skeletons
            .iter_mut()
            .find(|original| original.as_ref() == Some(&kept))
        {
            Some(original) => *original = None,
            None => return Err((CompactionErrorKind::ChangedBatch, at(offset))),
        }
    }
    check_order(conversation, range, replacement)?;
    check_pairs(replacement, conversation, range)
}

/// The order rules of [`CompactionErrorKind::MessageOrder`], on the
/// messages around and in the replacement.
fn check_order(
    conversation: &[Message],
    range: &Range<usize>,
    replacement: &[Message],
) -> Result<(), (CompactionErrorKind, Option<usize>)> {
    let order = |index: usize| Err((CompactionErrorKind::MessageOrder, Some(index)));
    let not_system = |message: &&Message| !matches!(message, Message::System(_));
    let compacted = conversation[..range.start]
        .iter()
        .chain(replacement)
        .chain(&conversation[range.end..]);
    let first_was_user = matches!(conversation.iter().find(not_system), Some(Message::User(_)));
    if first_was_user
        && let Some((index, first)) = compacted
            .enumerate()
            .find(|(_, message)| not_system(message))
        && !matches!(first, Message::User(_))
    {
        return order(index);
    }
    // Each pair that touches the replacement.
    let start = range.start.saturating_sub(1);
    let window: Vec<&Message> = conversation[start..range.start]
        .iter()
        .chain(replacement)
        .chain(conversation.get(range.end))
        .collect();
    for (offset, pair) in window.windows(2).enumerate() {
        let (Message::Assistant(_), Message::Assistant(next)) = (pair[0], pair[1]) else {
            continue;
        };
        let model_turn = next
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::ToolCall(_) | ContentPart::Reasoning(_)));
        let had_it = conversation
            .windows(2)
            .any(|original| original[0] == *pair[0] && original[1] == *pair[1]);
        if model_turn && !had_it {
            return order(start + offset + 1);
        }
    }
    Ok(())
}

/// The system messages of `messages`, with their offsets.
fn systems(messages: &[Message]) -> Vec<(usize, &Message)> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, message)| matches!(message, Message::System(_)))
        .collect()
}

/// The parts of an assistant message that must stay together and
/// unchanged: its tool calls (id, name, arguments and extras: Gemini's
/// `thoughtSignature`), reasoning and provider blocks, in order. Text
/// beside them may change.
fn skeleton(parts: &[ContentPart]) -> Vec<&ContentPart> {
    parts
        .iter()
        .filter(|part| {
            matches!(
                part,
                ContentPart::Reasoning(_) | ContentPart::ToolCall(_) | ContentPart::Provider(_)
            )
        })
        .collect()
}

fn is_blank(part: &ContentPart) -> bool {
    matches!(part, ContentPart::Text(text) if text.text.trim().is_empty())
}

/// Every call of the compacted conversation answered once, right after its
/// assistant message, and every result answering a call of the message
/// before it: walked over the replacement and the messages around it.
fn check_pairs(
    replacement: &[Message],
    conversation: &[Message],
    range: &Range<usize>,
) -> Result<(), (CompactionErrorKind, Option<usize>)> {
    // From the last assistant message before the range (its results may
    // follow inside it) to the first message after it that is no result.
    let before = conversation[..range.start]
        .iter()
        .rposition(|message| !matches!(message, Message::Tool(_)))
        .unwrap_or(0);
    let after = conversation[range.end..]
        .iter()
        .position(|message| !matches!(message, Message::Tool(_)))
        .map_or(conversation.len(), |offset| range.end + offset);
    let walked = conversation[before..range.start]
        .iter()
        .chain(replacement)
        .chain(&conversation[range.end..after]);
    // The calls of the last assistant message walked, and where it is.
    let mut open: Vec<(&str, bool)> = Vec::new();
    let mut opened_at = before;
    let mut seen_ids: HashMap<&str, usize> = HashMap::new();
    let unpaired = |index: usize| Err((CompactionErrorKind::UnpairedToolCall, Some(index)));
    for (index, message) in (before..).zip(walked) {
        match message {
            Message::Tool(result) => {
                match open
                    .iter_mut()
                    .find(|(id, _)| *id == result.tool_call_id.as_str())
                {
                    Some((_, answered @ false)) => *answered = true,
                    _ => return unpaired(index),
                }
            }
            other => {
                // The message at fault is the one whose call has no result.
                if open.iter().any(|(_, answered)| !answered) {
                    return unpaired(opened_at);
                }
                open.clear();
                opened_at = index;
                if let Message::Assistant(assistant) = other {
                    for call in assistant.tool_calls() {
                        if seen_ids.insert(call.id.as_str(), index).is_some() {
                            return unpaired(index);
                        }
                        open.push((call.id.as_str(), false));
                    }
                }
            }
        }
    }
    // The walk ends at a message that is no result (or the end): a call
    // still open there is unanswered (pending calls of a paused turn are
    // after the editable range, never walked).
    if open.iter().any(|(_, answered)| !answered) {
        return unpaired(opened_at);
    }
    Ok(())
}
