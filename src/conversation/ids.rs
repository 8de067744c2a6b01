//! Fresh tool call ids, for calls whose provider id is empty or already
//! used: Gemini's OpenAI-compatible endpoint sends `""` for every call, and
//! some local servers send `call_0` in every response.

use std::collections::{HashMap, HashSet};

use crate::conversation::Message;

/// A new tool call id: `call_` and 32 hex digits of a random UUID (37
/// characters, valid for OpenAI's 40-character limit and Anthropic's
/// `^[a-zA-Z0-9_-]+$`), not in `used`.
pub(crate) fn fresh_tool_call_id(used: &HashSet<String>) -> String {
    loop {
        let id = format!("call_{}", uuid::Uuid::new_v4().simple());
        if !used.contains(&id) {
            return id;
        }
    }
}

/// Gives every call of `conversation` whose id is empty or used by an
/// earlier call a fresh id, and the result that answers it the same id: the
/// first later result carrying the old id that no other call has claimed.
pub(crate) fn mint_missing_ids(conversation: &mut [Message]) {
    let mut used: HashSet<String> = HashSet::new();
    for message in conversation.iter() {
        if let Message::Assistant(assistant) = message {
            used.extend(assistant.tool_calls().map(|call| call.id.clone()));
        }
    }
    let mut seen: HashSet<String> = HashSet::new();
    // Old id → fresh ids waiting for their result, in call order.
    let mut pending: HashMap<String, Vec<String>> = HashMap::new();
    // Results of a valid call answer that call before any minted one.
    let mut valid_pending: HashMap<String, usize> = HashMap::new();
    for message in conversation.iter_mut() {
        match message {
            Message::Assistant(assistant) => {
                for call in assistant.tool_calls_mut() {
                    if call.id.is_empty() || seen.contains(&call.id) {
                        let fresh = fresh_tool_call_id(&used);
                        used.insert(fresh.clone());
                        pending
                            .entry(std::mem::replace(&mut call.id, fresh.clone()))
                            .or_default()
                            .push(fresh);
                    } else {
                        seen.insert(call.id.clone());
                        *valid_pending.entry(call.id.clone()).or_default() += 1;
                    }
                }
            }
            Message::Tool(result) => {
                if let Some(count) = valid_pending.get_mut(&result.tool_call_id)
                    && *count > 0
                {
                    *count -= 1;
                    continue;
                }
                if let Some(waiting) = pending.get_mut(&result.tool_call_id)
                    && !waiting.is_empty()
                {
                    result.tool_call_id = waiting.remove(0);
                }
            }
            _ => {}
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
}
