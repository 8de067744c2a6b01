//! Fresh tool call ids, for calls whose provider id is empty or already
//! used: Gemini's OpenAI-compatible endpoint sends `""` for every call, and
//! some local servers send `call_0` in every response.

use std::collections::HashSet;

use crate::conversation::Message;

/// A set of tool call ids. foldhash, not SipHash: a turn, `repair` and an
/// export each collect every id of the conversation, thousands in a long
/// one, and foldhash hashes a short id several times faster. Its
/// `quality` variant (not the `fast` one of the tool name lookup, whose
/// keys the user declares), with a random seed per set: these ids are
/// chosen by a model or a provider.
pub(crate) type IdSet<T = String> = HashSet<T, foldhash::quality::RandomState>;

/// A new tool call id: `call_` and 32 hex digits of a random UUID (37
/// characters, valid for OpenAI's 40-character limit and Anthropic's
/// `^[a-zA-Z0-9_-]+$`), not in `used`.
pub(crate) fn fresh_tool_call_id(used: &IdSet) -> String {
    loop {
        let id = format!("call_{}", uuid::Uuid::new_v4().simple());
        if !used.contains(&id) {
            return id;
        }
    }
}

/// Gives every call of `conversation` whose id is empty or used by an
/// earlier call a fresh id, and the result that answers it the same id.
///
/// A result answers a call of the assistant message right before it (the
/// providers' rule, and [`repair`](crate::conversation::repair)'s): among
/// that message's calls not yet answered and sent with the result's id, a
/// call that kept its id first, else the first one given a fresh id. A
/// result that answers no such call keeps its id, for `repair` to refuse.
pub(crate) fn mint_missing_ids(conversation: &mut [Message]) {
    let mut used = IdSet::default();
    for message in conversation.iter() {
        if let Message::Assistant(assistant) = message {
            used.extend(assistant.tool_calls().map(|call| call.id.clone()));
        }
    }
    let mut seen = IdSet::default();
    // The calls of the assistant message before the current results, not
    // yet answered: (the id it was sent with, its id now), in call order.
    let mut unanswered: Vec<(String, String)> = Vec::new();
    for message in conversation.iter_mut() {
        match message {
            Message::Assistant(assistant) => {
                unanswered.clear();
                for call in assistant.tool_calls_mut() {
                    let sent = call.id.clone();
                    if call.id.is_empty() || seen.contains(&call.id) {
                        let fresh = fresh_tool_call_id(&used);
                        used.insert(fresh.clone());
                        call.id = fresh;
                    } else {
                        seen.insert(call.id.clone());
                    }
                    unanswered.push((sent, call.id.clone()));
                }
            }
            Message::Tool(result) => {
                let id = result.tool_call_id.as_str();
                let answered = unanswered
                    .iter()
                    .position(|(sent, now)| sent == id && now == id)
                    .or_else(|| unanswered.iter().position(|(sent, _)| sent == id));
                if let Some(position) = answered {
                    result.tool_call_id = unanswered.remove(position).1;
                }
            }
            // Results after any other message answer no call.
            _ => unanswered.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ToolCall, ToolResult};

    #[test]
    fn empty_and_repeated_ids_get_fresh_ones_shared_with_their_results() {
        let mut conversation = vec![
            Message::tool_calls(
                None,
                vec![ToolCall::new("", "a", "{}"), ToolCall::new("", "b", "{}")],
            ),
            Message::Tool(ToolResult::ok("", "ra")),
            Message::Tool(ToolResult::ok("", "rb")),
            Message::tool_calls(None, vec![ToolCall::new("call_0", "c", "{}")]),
            Message::Tool(ToolResult::ok("call_0", "rc")),
            Message::tool_calls(None, vec![ToolCall::new("call_0", "d", "{}")]),
            Message::Tool(ToolResult::ok("call_0", "rd")),
        ];
        mint_missing_ids(&mut conversation);
        let calls: Vec<String> = conversation
            .iter()
            .flat_map(|m| m.as_assistant().into_iter().flat_map(|a| a.tool_calls()))
            .map(|c| c.id.clone())
            .collect();
        let results: Vec<String> = conversation
            .iter()
            .filter_map(|m| m.as_tool_result())
            .map(|r| r.tool_call_id.clone())
            .collect();
        assert_eq!(calls, results);
        assert_eq!(calls[2], "call_0");
        let unique: HashSet<&String> = calls.iter().collect();
        assert_eq!(unique.len(), 4);
        assert!(calls.iter().all(|id| !id.is_empty()));
    }

    /// Found by the turn property: the result of a reused id answered the
    /// earlier, unanswered call of that id instead of the call right
    /// before it, and `repair` then refused the conversation.
    #[test]
    fn a_result_answers_the_call_right_before_it_not_an_earlier_one() {
        let mut conversation = vec![
            Message::tool_calls(None, vec![ToolCall::new("call_0", "a", "{}")]),
            Message::tool_calls(None, vec![ToolCall::new("call_0", "b", "{}")]),
            Message::Tool(ToolResult::ok("call_0", "rb")),
        ];
        mint_missing_ids(&mut conversation);
        let second = conversation[1]
            .as_assistant()
            .and_then(|assistant| assistant.tool_calls().next())
            .map(|call| call.id.clone())
            .expect("a call");
        assert_ne!(second, "call_0");
        assert_eq!(
            conversation[2]
                .as_tool_result()
                .map(|r| r.tool_call_id.as_str()),
            Some(second.as_str())
        );
    }

    #[test]
    fn a_result_after_another_message_keeps_its_id() {
        let mut conversation = vec![
            Message::tool_calls(None, vec![ToolCall::new("", "a", "{}")]),
            Message::user("meanwhile"),
            Message::Tool(ToolResult::ok("", "ra")),
        ];
        mint_missing_ids(&mut conversation);
        assert_eq!(
            conversation[2]
                .as_tool_result()
                .map(|r| r.tool_call_id.as_str()),
            Some("")
        );
    }
}
