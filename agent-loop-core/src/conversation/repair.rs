//! [`repair`]: a stored conversation made valid for the next request.

use crate::conversation::ids::{IdSet, mint_missing_ids};
use crate::conversation::{Conversation, Message, ToolResult};

/// Why a tool result cannot be paired with its call: the
/// [`kind`](ConversationError::kind) of a [`ConversationError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConversationErrorKind {
    /// A tool result answers no call of the assistant message right before
    /// it (every provider requires a call's results right after it).
    ResultWithoutCall,
    /// A second result for one tool call.
    DuplicateResult,
}

impl ConversationErrorKind {
    fn describe(self) -> &'static str {
        match self {
            Self::ResultWithoutCall => "answers no call of the assistant message before it",
            Self::DuplicateResult => "is a second result for its call",
        }
    }
}

/// A conversation whose tool results cannot be paired with their calls:
/// what [`repair`] refuses to guess about, returned by [`repair`] and (as
/// the source of [`TurnError::Conversation`](crate::turn::TurnError::Conversation))
/// by [`Definition::run_turn`](crate::Definition::run_turn).
///
/// Display is one line, e.g. `the tool result at messages[3] is a second
/// result for its call (tool call id "call_1")`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the tool result at messages[{index}] {} (tool call id {tool_call_id:?})",
    .kind.describe()
)]
#[non_exhaustive]
pub struct ConversationError {
    /// What is wrong.
    pub kind: ConversationErrorKind,
    /// The result's tool call id.
    pub tool_call_id: String,
    /// The result's position in the conversation.
    pub index: usize,
}

/// Makes a stored conversation one every provider accepts back: every tool
/// call answered by exactly one result, right after its assistant message.
///
/// - A call without a result (the process died while the tool ran) gets an
///   error result saying it was interrupted, placed after its assistant
///   message's other results. Its id is in the returned list, in
///   conversation order.
/// - A call whose id is empty or used by an earlier call gets a fresh
///   unique id (`call_` and 32 hex digits), and its result the same one.
///
/// [`Definition::run_turn`](crate::Definition::run_turn) calls it before
/// its first model request; call it yourself before exporting a
/// conversation you stored or built by hand, since every provider answers
/// HTTP 400 to a call without a result.
///
/// # Errors
///
/// [`ConversationError`] of kind
/// [`ResultWithoutCall`](ConversationErrorKind::ResultWithoutCall) for a
/// result that answers no call of the assistant message right before it (a
/// result must follow its call), of kind
/// [`DuplicateResult`](ConversationErrorKind::DuplicateResult) for a second result
/// for one call. Nothing changes when it fails.
///
/// ```
/// use agent_loop_core::conversation::{self, Message, ToolCall, ToolResult};
///
/// let mut stored = vec![
///     Message::user("Weather in Paris and Rome?"),
///     Message::tool_calls(None, vec![
///         ToolCall::new("call_a", "get_weather", r#"{"city":"Paris"}"#),
///         ToolCall::new("call_b", "get_weather", r#"{"city":"Rome"}"#),
///     ]),
///     Message::Tool(ToolResult::ok("call_a", "sunny")),
/// ];
/// let repaired = conversation::repair(&mut stored)?;
/// assert_eq!(repaired, ["call_b"]);
/// assert!(stored[3].as_tool_result().is_some_and(|result| result.is_error));
/// # Ok::<_, conversation::ConversationError>(())
/// ```
pub fn repair(conversation: &mut Conversation) -> Result<Vec<String>, ConversationError> {
    let needs_ids = {
        let mut seen = IdSet::<&str>::default();
        conversation
            .iter()
            .filter_map(Message::as_assistant)
            .flat_map(|assistant| assistant.tool_calls())
            .any(|call| call.id.is_empty() || !seen.insert(call.id.as_str()))
    };
    let minted = needs_ids.then(|| {
        let mut minted = conversation.clone();
        mint_missing_ids(&mut minted);
        minted
    });
    let checked: &Conversation = minted.as_ref().unwrap_or(conversation);
    // The assistant message whose results are being read: its position
    // and its calls, each with whether a result answered it.
    let mut open: Option<(usize, Vec<(&str, bool)>)> = None;
    // (insert position, ids) for each assistant message with unanswered calls.
    let mut insertions: Vec<(usize, Vec<String>)> = Vec::new();
    let close = |open: &mut Option<(usize, Vec<(&str, bool)>)>,
                 at: usize,
                 insertions: &mut Vec<(usize, Vec<String>)>| {
        if let Some((_, calls)) = open.take() {
            let missing: Vec<String> = calls
                .into_iter()
                .filter(|(_, answered)| !answered)
                .map(|(id, _)| id.to_owned())
                .collect();
            if !missing.is_empty() {
                insertions.push((at, missing));
            }
        }
    };
    for (index, message) in checked.iter().enumerate() {
        if let Message::Tool(result) = message {
            let id = result.tool_call_id.as_str();
            let call = open
                .as_mut()
                .and_then(|(_, calls)| calls.iter_mut().find(|(call, _)| *call == id));
            match call {
                Some((_, answered @ false)) => *answered = true,
                Some((_, true)) => {
                    return Err(ConversationError {
                        kind: ConversationErrorKind::DuplicateResult,
                        tool_call_id: id.to_owned(),
                        index,
                    });
                }
                None => {
                    return Err(ConversationError {
                        kind: ConversationErrorKind::ResultWithoutCall,
                        tool_call_id: id.to_owned(),
                        index,
                    });
                }
            }
            continue;
        }
        close(&mut open, index, &mut insertions);
        if let Message::Assistant(assistant) = message
            && assistant.has_tool_calls()
        {
            let calls = assistant
                .tool_calls()
                .map(|call| (call.id.as_str(), false))
                .collect();
            open = Some((index, calls));
        }
    }
    close(&mut open, checked.len(), &mut insertions);
    let insertions: Vec<(usize, Vec<String>)> = insertions;
    if let Some(minted) = minted {
        *conversation = minted;
    }
    let mut repaired = Vec::new();
    // From the back, so earlier insert positions stay right.
    for (at, ids) in insertions.into_iter().rev() {
        let results = ids.iter().map(|id| {
            Message::Tool(ToolResult::error(
                id.clone(),
                "this call was interrupted before it returned a result; call the tool again if you still need it",
            ))
        });
        conversation.splice(at..at, results);
        repaired.splice(0..0, ids);
    }
    Ok(repaired)
}
