//! Tool call ids and tool names as each format accepts them on export.
//!
//! A conversation can hold ids and names another provider produced (Kimi's
//! `functions.write_todos:0`, OpenAI Responses' 53-character `fc_…` ids) or
//! a model hallucinated (`multi_tool_use.parallel`). Sent back verbatim
//! they get HTTP 400, so an export maps each one that breaks the target
//! format's rule to one that keeps it: deterministically (the same
//! conversation exports the same way every time), without collisions, and
//! the same for a call and its result.

use std::collections::{HashMap, HashSet};

use crate::conversation::{Message, WireFormat};
use crate::tool::NameRules;
use crate::tool::name::fnv1a_64;

/// The longest tool call id OpenAI accepts, in characters ("string too
/// long. Expected a string with maximum length 40").
pub const OPENAI_MAX_ID_LEN: usize = 40;

/// `true` when `id` is a tool call id `format` accepts: for OpenAI 1 to
/// [`OPENAI_MAX_ID_LEN`] characters; for Anthropic `^[a-zA-Z0-9_-]+$`
/// (the pattern of `tool_use.id` in the Messages API reference).
pub fn id_is_valid(format: WireFormat, id: &str) -> bool {
    match format {
        WireFormat::AnthropicMessages => {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
        }
        _ => (1..=OPENAI_MAX_ID_LEN).contains(&id.chars().count()),
    }
}

/// `true` when `name` is a tool name `format` accepts in a tool call:
/// `^[a-zA-Z0-9_-]{1,64}$` for both OpenAI and Anthropic.
pub fn name_is_valid(_format: WireFormat, name: &str) -> bool {
    NameRules::OpenAi.check(name).is_ok()
}

/// The export mapping of one conversation's tool call ids and tool names to
/// one format.
pub(crate) struct ExportIds {
    format: WireFormat,
    ids: HashMap<String, String>,
    used: HashSet<String>,
}

impl ExportIds {
    /// The mapping for `conversation`: every id that `format` accepts is
    /// kept; the others get a valid id that no other call uses.
    pub(crate) fn new(format: WireFormat, conversation: &[Message]) -> Self {
        let mut all: Vec<&str> = Vec::new();
        for message in conversation {
            match message {
                Message::Assistant(assistant) => {
                    all.extend(assistant.tool_calls().map(|call| call.id.as_str()))
                }
                Message::Tool(result) => all.push(&result.tool_call_id),
                _ => {}
            }
        }
        let mut mapping = Self {
            format,
            ids: HashMap::new(),
            // Valid ids are reserved first, so a mapped id never takes one.
            used: all
                .iter()
                .filter(|id| id_is_valid(format, id))
                .map(|id| (*id).to_owned())
                .collect(),
        };
        for id in all {
            mapping.map_new(id);
        }
        mapping
    }

    fn map_new(&mut self, id: &str) {
        if self.ids.contains_key(id) {
            return;
        }
        let mapped = if id_is_valid(self.format, id) {
            id.to_owned()
        } else {
            let base = valid_id(id);
            let mut candidate = base.clone();
            let mut counter = 2u32;
            while self.used.contains(&candidate) {
                let suffix = format!("_{counter}");
                let mut prefix = base.clone();
                prefix.truncate(OPENAI_MAX_ID_LEN - suffix.len());
                candidate = prefix + &suffix;
                counter += 1;
            }
            self.used.insert(candidate.clone());
            candidate
        };
        self.ids.insert(id.to_owned(), mapped);
    }

    /// The exported id of a call or result id of the conversation.
    pub(crate) fn id(&self, id: &str) -> String {
        self.ids.get(id).cloned().unwrap_or_else(|| valid_id(id))
    }

    /// The exported tool name of a call: the name itself when the format
    /// accepts it, otherwise [`NameRules::sanitize`]'s valid form (the
    /// model's text is not changed, only the name field).
    pub(crate) fn name(&self, name: &str) -> String {
        if name_is_valid(self.format, name) {
            name.to_owned()
        } else {
            NameRules::OpenAi.sanitize(name)
        }
    }
}

/// An id valid for every format: `[A-Za-z0-9_-]`, 1 to 40 characters. A
/// cut id ends in `_` and 8 hex digits of the original's FNV-1a hash.
fn valid_id(id: &str) -> String {
    let mut valid: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if valid.is_empty() {
        valid.push_str("call");
    }
    if valid.len() > OPENAI_MAX_ID_LEN {
        valid.truncate(OPENAI_MAX_ID_LEN - 9);
        valid.push_str(&format!("_{:08x}", fnv1a_64(id.as_bytes()) >> 32));
    }
    valid
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{ToolCall, ToolResult};

    fn conversation(ids: &[&str]) -> Vec<Message> {
        let calls = ids.iter().map(|id| ToolCall::new(*id, "f", "{}")).collect();
        let mut conversation = vec![Message::tool_calls(None, calls)];
        conversation.extend(ids.iter().map(|id| Message::Tool(ToolResult::ok(*id, "x"))));
        conversation
    }

    #[test]
    fn valid_ids_are_kept() {
        let ids = ExportIds::new(WireFormat::AnthropicMessages, &conversation(&["toolu_1"]));
        assert_eq!(ids.id("toolu_1"), "toolu_1");
    }

    #[test]
    fn kimi_ids_are_mapped_for_anthropic_but_kept_for_openai() {
        let convo = conversation(&["functions.write_todos:0"]);
        let anthropic = ExportIds::new(WireFormat::AnthropicMessages, &convo);
        assert_eq!(
            anthropic.id("functions.write_todos:0"),
            "functions_write_todos_0"
        );
        let openai = ExportIds::new(WireFormat::OpenAiChat, &convo);
        assert_eq!(
            openai.id("functions.write_todos:0"),
            "functions.write_todos:0"
        );
    }

    #[test]
    fn long_ids_are_cut_with_a_hash_and_stay_distinct() {
        let a = format!("fc_{}", "a".repeat(50));
        let b = format!("fc_{}b", "a".repeat(49));
        let ids = ExportIds::new(WireFormat::OpenAiChat, &conversation(&[&a, &b]));
        let (ma, mb) = (ids.id(&a), ids.id(&b));
        assert_eq!(ma.chars().count(), OPENAI_MAX_ID_LEN);
        assert!(id_is_valid(WireFormat::OpenAiChat, &mb));
        assert_ne!(ma, mb);
    }

    #[test]
    fn a_mapped_id_never_takes_a_valid_one() {
        // `a.b` maps to `a_b`, which the conversation already uses.
        let ids = ExportIds::new(
            WireFormat::AnthropicMessages,
            &conversation(&["a.b", "a_b"]),
        );
        assert_eq!(ids.id("a_b"), "a_b");
        assert_eq!(ids.id("a.b"), "a_b_2");
    }
}
