//! Minted tool call ids, for calls whose provider id is empty or already
//! used: Gemini's OpenAI-compatible endpoint sends `""` for every call, and
//! some local servers send `call_0` in every response.
//!
//! Minting is deterministic: the id is a name-based (version 5) UUID of the
//! call's place in the conversation, in a scope (the session, for the turn
//! runner). The same conversation minted twice gets the same ids, so a
//! paused turn resumed elsewhere, a replayed recording or a retried parse
//! names its calls as the first run did.

use std::collections::HashSet;

use uuid::Uuid;

use crate::conversation::Message;

/// A set of tool call ids. foldhash, not SipHash: a turn, `repair` and an
/// export each collect every id of the conversation, thousands in a long
/// one, and foldhash hashes a short id several times faster. Its
/// `quality` variant (not the `fast` one of the tool name lookup, whose
/// keys the user declares), with a random seed per set: these ids are
/// chosen by a model or a provider.
pub(crate) type IdSet<T = String> = HashSet<T, foldhash::quality::RandomState>;

/// The scope of ids minted outside a session: while parsing a history and
/// in [`repair`](crate::conversation::repair): the version 5 UUID of
/// `https://docs.rs/agent-loop` in the URL namespace (a test checks it).
pub(crate) const UNSCOPED: Uuid = Uuid::from_u128(0xf3ee_ac0d_5b81_52c7_8aec_812e_b33c_450a);

/// The id minted for call `call` (0-based) of the message at index
/// `message` of a conversation, in `scope`: `call_` and the 32 hex digits
/// of the version 5 UUID of `"<message>.<call>"` in `scope` (37
/// characters, valid for OpenAI's 40-character limit and Anthropic's
/// `^[a-zA-Z0-9_-]+$`). When `used` holds it already (a provider id that
/// happens to look minted), `"<message>.<call>.<n>"` for n = 1, 2, … until
/// one is free.
pub(crate) fn minted_tool_call_id(
    scope: Uuid,
    message: usize,
    call: usize,
    used: &IdSet,
) -> String {
    let place = format!("{message}.{call}");
    let mut name = place.clone();
    let mut attempt: u64 = 0;
    loop {
        let id = format!("call_{}", Uuid::new_v5(&scope, name.as_bytes()).simple());
        if !used.contains(&id) {
            return id;
        }
        attempt = attempt.saturating_add(1);
        name = format!("{place}.{attempt}");
    }
}

/// Gives every call of `conversation` whose id is empty or used by an
/// earlier call a minted id, and the result that answers it the same id:
/// `call_` and the version 5 UUID of its place in `conversation` (the index
/// of its message and its position among the message's calls), the same
/// every time the conversation is read. The formats' history parsers call
/// it (it serves `agent-loop-providers`); a turn mints per session instead.
///
/// A result answers a call of the assistant message right before it (the
/// providers' rule, and [`repair`](crate::conversation::repair)'s): among
/// that message's calls not yet answered and sent with the result's id, a
/// call that kept its id first, else the first one given a fresh id. A
/// result that answers no such call keeps its id, for `repair` to refuse.
pub fn mint_missing_ids(conversation: &mut [Message]) {
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
    for (index, message) in conversation.iter_mut().enumerate() {
        match message {
            Message::Assistant(assistant) => {
                unanswered.clear();
                for (position, call) in assistant.tool_calls_mut().enumerate() {
                    let sent = call.id.clone();
                    if call.id.is_empty() || seen.contains(&call.id) {
                        let fresh = minted_tool_call_id(UNSCOPED, index, position, &used);
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
    fn the_unscoped_namespace_is_the_crates_url_uuid() {
        assert_eq!(
            UNSCOPED,
            Uuid::new_v5(&Uuid::NAMESPACE_URL, b"https://docs.rs/agent-loop")
        );
    }

    #[test]
    fn minting_is_deterministic_by_place_and_scope() {
        let used = IdSet::default();
        let scope = Uuid::from_u128(7);
        let id = minted_tool_call_id(scope, 3, 1, &used);
        assert_eq!(
            id,
            format!("call_{}", Uuid::new_v5(&scope, b"3.1").simple())
        );
        assert_eq!(id.len(), 37);
        assert_eq!(minted_tool_call_id(scope, 3, 1, &used), id);
        assert_ne!(minted_tool_call_id(scope, 3, 0, &used), id);
        assert_ne!(
            minted_tool_call_id(scope, 31, 0, &used),
            minted_tool_call_id(scope, 3, 10, &used)
        );
        assert_ne!(minted_tool_call_id(Uuid::from_u128(8), 3, 1, &used), id);
        // Taken already: the next name of the same place.
        let taken = IdSet::from_iter([id.clone()]);
        assert_eq!(
            minted_tool_call_id(scope, 3, 1, &taken),
            format!("call_{}", Uuid::new_v5(&scope, b"3.1.1").simple())
        );
    }

    #[test]
    fn a_conversation_minted_twice_gets_the_same_ids() {
        let conversation = vec![
            Message::tool_calls(
                None,
                vec![ToolCall::new("", "a", "{}"), ToolCall::new("", "b", "{}")],
            ),
            Message::Tool(ToolResult::ok("", "ra")),
            Message::Tool(ToolResult::ok("", "rb")),
        ];
        let mut first = conversation.clone();
        let mut second = conversation;
        mint_missing_ids(&mut first);
        mint_missing_ids(&mut second);
        assert_eq!(first, second);
        let ids: Vec<&str> = first[0]
            .as_assistant()
            .into_iter()
            .flat_map(|a| a.tool_calls())
            .map(|c| c.id.as_str())
            .collect();
        let expected = [
            format!("call_{}", Uuid::new_v5(&UNSCOPED, b"0.0").simple()),
            format!("call_{}", Uuid::new_v5(&UNSCOPED, b"0.1").simple()),
        ];
        assert_eq!(ids, expected);
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
