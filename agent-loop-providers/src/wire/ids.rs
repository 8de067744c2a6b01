//! Tool call ids and tool names as each format accepts them on export.
//!
//! A conversation can hold ids and names another provider produced (Kimi's
//! `functions.write_todos:0`, OpenAI Responses' 53-character `fc_…` ids) or
//! a model hallucinated (`multi_tool_use.parallel`). Sent back verbatim
//! they get HTTP 400, so an export maps each one that breaks the target
//! format's rule to one that keeps it: deterministically (the same
//! conversation exports the same way every time), without collisions, and
//! the same for a call and its result.

use std::borrow::Cow;

use agent_loop_core::conversation::{Message, WireFormat};
use agent_loop_core::support::hash::fnv1a_64;
use agent_loop_core::tool::NameRules;

use crate::wire::target::Target;

/// A set of ids a model or a provider chose: foldhash's `quality` hasher
/// with a random seed per set (as the core keeps its own).
type IdSet<T> = std::collections::HashSet<T, foldhash::quality::RandomState>;

/// The longest tool call id OpenAI accepts, in characters ("string too
/// long. Expected a string with maximum length 40").
pub const OPENAI_MAX_ID_LEN: usize = 40;

/// The longest `call_id` OpenAI Responses accepts, in characters (`maxLength`
/// of `FunctionCallOutputItemParam.call_id`).
pub const RESPONSES_MAX_ID_LEN: usize = 64;

/// `true` when `id` is a tool call id `format` accepts: for OpenAI Chat
/// Completions 1 to [`OPENAI_MAX_ID_LEN`] characters; for OpenAI Responses
/// 1 to [`RESPONSES_MAX_ID_LEN`] (`FunctionCallOutputItemParam.call_id` in
/// the OpenAPI description); for Anthropic `^[a-zA-Z0-9_-]+$` (the
/// pattern of `tool_use.id` in the Messages API reference); for Gemini any
/// non-empty id (`FunctionCall.id` documents no pattern; a call without
/// one is written without `id`).
pub fn id_is_valid(format: WireFormat, id: &str) -> bool {
    match format {
        WireFormat::OpenAiResponses => (1..=RESPONSES_MAX_ID_LEN).contains(&id.chars().count()),
        WireFormat::Gemini => !id.is_empty(),
        WireFormat::AnthropicMessages => {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
        }
        _ => (1..=OPENAI_MAX_ID_LEN).contains(&id.chars().count()),
    }
}

/// The length of the tool call ids Mistral accepts, in characters, all of
/// `[a-zA-Z0-9]`: its API, and vLLM serving its models with their
/// tokenizer, refuse any other id ("Tool call id was … but must be a-z,
/// A-Z, 0-9, with a length of 9"; the check is `mistral_common`'s, the
/// Mistral tokenizer library, `ToolCall.id` validation), among them the ids
/// the runner mints and every other provider's (langchain-ai/langchain PR
/// #24668, jackmpcollins/magentic #276).
pub const MISTRAL_ID_LEN: usize = 9;

/// Whose rule the tool call ids of an export keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdRule {
    /// The format's ([`id_is_valid`]).
    Format(WireFormat),
    /// Mistral's: exactly [`MISTRAL_ID_LEN`] of `[a-zA-Z0-9]`.
    Mistral,
}

impl IdRule {
    /// The rule of `format` going to `target`: Mistral's for Mistral's API
    /// (`api.mistral.ai`) or a Mistral model elsewhere (its name holds
    /// `mistral`, or starts with `magistral`, `devstral`, `codestral`,
    /// `ministral`, `pixtral` or `mixtral`), in Chat Completions. A model
    /// served under another name gets the format's rule; a false match
    /// costs nothing, since such an id is valid everywhere.
    fn of(format: WireFormat, target: &Target) -> Self {
        let mistral_host = target.host() == Some("api.mistral.ai");
        let mistral_model = target.model.as_deref().is_some_and(|model| {
            let model = model.to_ascii_lowercase();
            let name = model.rsplit('/').next().unwrap_or(&model);
            name.contains("mistral")
                || [
                    "magistral",
                    "devstral",
                    "codestral",
                    "ministral",
                    "pixtral",
                    "mixtral",
                ]
                .iter()
                .any(|family| name.starts_with(family))
        });
        if format == WireFormat::OpenAiChat && (mistral_host || mistral_model) {
            IdRule::Mistral
        } else {
            IdRule::Format(format)
        }
    }

    fn accepts(self, id: &str) -> bool {
        match self {
            IdRule::Format(format) => id_is_valid(format, id),
            IdRule::Mistral => {
                id.len() == MISTRAL_ID_LEN && id.bytes().all(|byte| byte.is_ascii_alphanumeric())
            }
        }
    }

    /// A valid id derived from `id`, the `attempt`th (from 0) when earlier
    /// ones were taken.
    fn derive(self, id: &str, attempt: u32) -> String {
        match self {
            IdRule::Format(_) => {
                let base = valid_id(id);
                if attempt == 0 {
                    return base;
                }
                let suffix = format!("_{}", attempt + 1);
                let mut prefix = base;
                prefix.truncate(OPENAI_MAX_ID_LEN - suffix.len());
                prefix + &suffix
            }
            IdRule::Mistral => {
                // Nine base-62 digits of a hash of the id (and the
                // attempt): deterministic, and 62^9 > 10^16 apart.
                const DIGITS: &[u8] =
                    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
                let mut seed = id.as_bytes().to_vec();
                seed.extend_from_slice(&attempt.to_le_bytes());
                let mut hash = fnv1a_64(&seed);
                (0..MISTRAL_ID_LEN)
                    .map(|_| {
                        let digit = DIGITS[(hash % 62) as usize];
                        hash /= 62;
                        char::from(digit)
                    })
                    .collect()
            }
        }
    }
}

/// `true` when `name` is a tool name `format` accepts in a tool call:
/// `^[a-zA-Z0-9_-]{1,64}$` for OpenAI and Anthropic; for Gemini
/// `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$` ("Must start with a letter or an
/// underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots, colons
/// and dashes, with a maximum length of 128", `FunctionDeclaration.name`).
pub fn name_is_valid(format: WireFormat, name: &str) -> bool {
    match format {
        WireFormat::Gemini => {
            name.len() <= 128
                && name
                    .bytes()
                    .next()
                    .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
                && name.bytes().all(|byte| {
                    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b':' | b'-')
                })
        }
        _ => NameRules::OpenAi.check(name).is_ok(),
    }
}

/// The export mapping of one conversation's tool call ids and tool names to
/// one format. Used in conversation order: [`call`](Self::call) for each
/// call as it is exported, [`result`](Self::result) for each result.
///
/// Every call gets an id no other call of the export has, even where the
/// conversation repeats one (a local server's `call_0` in every response,
/// two `""` ids): Anthropic refuses a request whose `tool_use` ids repeat. A
/// result gets the id of the earliest call with its original id that no
/// result has answered yet.
///
/// It borrows the conversation's ids: an id the format accepts (nearly
/// all of them) is exported as it is, without a copy, on every request of
/// a long session.
pub(crate) struct ExportIds<'a> {
    format: WireFormat,
    rule: IdRule,
    /// Every exported call id so far, and the valid ids reserved for the
    /// first call that carries them.
    taken: IdSet<Cow<'a, str>>,
    /// Valid original ids whose first call has been exported.
    kept: IdSet<&'a str>,
    /// (original, exported) of calls no result has answered yet, in order.
    open: Vec<(&'a str, Cow<'a, str>)>,
}

impl<'a> ExportIds<'a> {
    /// The mapping for `conversation`: the first call with an id `format`
    /// accepts keeps it; every other call gets a valid id no call uses.
    pub(crate) fn new(format: WireFormat, conversation: &'a [Message]) -> Self {
        Self::for_target(format, &Target::new(), conversation)
    }

    /// The mapping for `conversation` going to `target`, whose ids may
    /// have a rule of their own (Mistral's, [`MISTRAL_ID_LEN`]).
    pub(crate) fn for_target(
        format: WireFormat,
        target: &Target,
        conversation: &'a [Message],
    ) -> Self {
        let rule = IdRule::of(format, target);
        let taken = conversation
            .iter()
            .filter_map(Message::as_assistant)
            .flat_map(|assistant| assistant.tool_calls())
            .filter(|call| rule.accepts(&call.id))
            .map(|call| Cow::Borrowed(call.id.as_str()))
            .collect();
        Self {
            format,
            rule,
            taken,
            kept: IdSet::default(),
            open: Vec::new(),
        }
    }

    /// The exported id of the next call, whose original id is `id`.
    pub(crate) fn call(&mut self, id: &'a str) -> Cow<'a, str> {
        let exported = if self.rule.accepts(id) && self.kept.insert(id) {
            Cow::Borrowed(id)
        } else {
            Cow::Owned(self.fresh(id))
        };
        self.open.push((id, exported.clone()));
        exported
    }

    /// The exported id of the next result, whose original id is `id`.
    pub(crate) fn result(&mut self, id: &'a str) -> Cow<'a, str> {
        match self.open.iter().position(|(original, _)| *original == id) {
            Some(position) => self.open.remove(position).1,
            // A result that answers no call: mapped like one, so it is
            // valid at least.
            None if self.rule.accepts(id) => Cow::Borrowed(id),
            None => Cow::Owned(self.rule.derive(id, 0)),
        }
    }

    /// A valid id derived from `id` that no exported call has.
    fn fresh(&mut self, id: &str) -> String {
        let mut attempt = 0;
        let mut candidate = self.rule.derive(id, attempt);
        while self.taken.contains(candidate.as_str()) {
            attempt += 1;
            candidate = self.rule.derive(id, attempt);
        }
        self.taken.insert(Cow::Owned(candidate.clone()));
        candidate
    }

    /// The exported tool name of a call: the name itself when the format
    /// accepts it, otherwise [`NameRules::sanitize`]'s valid form (the
    /// model's text is not changed, only the name field).
    pub(crate) fn name(&self, name: &'a str) -> Cow<'a, str> {
        if name_is_valid(self.format, name) {
            Cow::Borrowed(name)
        } else {
            Cow::Owned(NameRules::OpenAi.sanitize(name))
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
    use agent_loop_core::conversation::ToolCall;

    fn conversation(ids: &[&str]) -> Vec<Message> {
        let calls = ids.iter().map(|id| ToolCall::new(*id, "f", "{}")).collect();
        vec![Message::tool_calls(None, calls)]
    }

    #[test]
    fn valid_ids_are_kept() {
        let calls = conversation(&["toolu_1"]);
        let mut ids = ExportIds::new(WireFormat::AnthropicMessages, &calls);
        assert_eq!(ids.call("toolu_1"), "toolu_1");
        assert_eq!(ids.result("toolu_1"), "toolu_1");
    }

    #[test]
    fn kimi_ids_are_mapped_for_anthropic_but_kept_for_openai() {
        let id = "functions.write_todos:0";
        let anthropic_calls = conversation(&[id]);
        let mut anthropic = ExportIds::new(WireFormat::AnthropicMessages, &anthropic_calls);
        assert_eq!(anthropic.call(id), "functions_write_todos_0");
        assert_eq!(anthropic.result(id), "functions_write_todos_0");
        let openai_calls = conversation(&[id]);
        let mut openai = ExportIds::new(WireFormat::OpenAiChat, &openai_calls);
        assert_eq!(openai.call(id), id);
    }

    #[test]
    fn long_ids_are_cut_with_a_hash_and_stay_distinct() {
        let a = format!("fc_{}", "a".repeat(50));
        let b = format!("fc_{}b", "a".repeat(49));
        let calls = conversation(&[&a, &b]);
        let mut ids = ExportIds::new(WireFormat::OpenAiChat, &calls);
        let (ma, mb) = (ids.call(&a), ids.call(&b));
        assert_eq!(ma.chars().count(), OPENAI_MAX_ID_LEN);
        assert!(id_is_valid(WireFormat::OpenAiChat, &mb));
        assert_ne!(ma, mb);
        assert_eq!(ids.result(&b), mb);
        assert_eq!(ids.result(&a), ma);
    }

    #[test]
    fn a_mapped_id_never_takes_a_valid_one() {
        // `a.b` maps to `a_b`, which a later call already uses.
        let calls = conversation(&["a.b", "a_b"]);
        let mut ids = ExportIds::new(WireFormat::AnthropicMessages, &calls);
        assert_eq!(ids.call("a.b"), "a_b_2");
        assert_eq!(ids.call("a_b"), "a_b");
    }

    #[test]
    fn a_repeated_id_gets_a_new_one_and_results_follow_their_calls() {
        let calls = conversation(&["call_0", "call_0", "", ""]);
        let mut ids = ExportIds::new(WireFormat::AnthropicMessages, &calls);
        let first = ids.call("call_0");
        assert_eq!(ids.result("call_0"), first);
        let second = ids.call("call_0");
        assert_ne!(second, first);
        assert_eq!(ids.result("call_0"), second);
        let (empty_a, empty_b) = (ids.call(""), ids.call(""));
        assert_ne!(empty_a, empty_b);
        assert!(id_is_valid(WireFormat::AnthropicMessages, &empty_a));
        assert_eq!((ids.result(""), ids.result("")), (empty_a, empty_b));
    }

    /// Going to Mistral (its API, or a Mistral model elsewhere), every id
    /// is nine characters of `[a-zA-Z0-9]`: the runner's minted ids and
    /// other providers' are mapped, the same for a call and its result,
    /// the same on every export, and distinct; a Mistral id is kept.
    #[test]
    fn ids_going_to_mistral_are_nine_alphanumeric_characters() {
        let minted = "call_6f1c0e2a9b7d4c3e8f5a1b2c3d4e5f60";
        let calls = conversation(&[minted, "D681PevKs", "toolu_01A", "call_0", "call_0"]);
        for target in [
            Target::new().provider("api.mistral.ai"),
            Target::new()
                .provider("openrouter.ai")
                .model("mistralai/mistral-large-2411"),
            Target::new()
                .provider("localhost:8000")
                .model("Devstral-Small-2507"),
        ] {
            let mut ids = ExportIds::for_target(WireFormat::OpenAiChat, &target, &calls);
            let exported: Vec<String> = [minted, "D681PevKs", "toolu_01A", "call_0", "call_0"]
                .iter()
                .map(|id| {
                    let call = ids.call(id).into_owned();
                    assert_eq!(ids.result(id), call);
                    call
                })
                .collect();
            assert_eq!(exported[1], "D681PevKs", "{target:?}");
            for id in &exported {
                assert!(IdRule::Mistral.accepts(id), "{id}");
            }
            let distinct: std::collections::BTreeSet<&String> = exported.iter().collect();
            assert_eq!(distinct.len(), exported.len(), "{exported:?}");
            let mut again = ExportIds::for_target(WireFormat::OpenAiChat, &target, &calls);
            assert_eq!(again.call(minted), exported[0], "deterministic");
        }
        // Another provider, or another format, keeps its own rule.
        let mut openai = ExportIds::for_target(
            WireFormat::OpenAiChat,
            &Target::new().provider("api.openai.com"),
            &calls,
        );
        assert_eq!(openai.call(minted), minted);
        let mut anthropic = ExportIds::for_target(
            WireFormat::AnthropicMessages,
            &Target::new().model("mistral-large"),
            &calls,
        );
        assert_eq!(anthropic.call("toolu_01A"), "toolu_01A");
    }
}
