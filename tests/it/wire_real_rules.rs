//! The rules the tests over recorded traffic (`wire_real`,
//! `wire_real_streams`) hold every recording, and the crate's handling of
//! it, to. Each rule is a function that returns its [`Violation`]s, empty
//! when it holds; each violation names its [`Rule`], where it is (a path
//! into the value the rule read) and what is wrong. A rule states what
//! the providers' documentation and the crate's module docs say, not what
//! one recording client happened to send: a real recording of a known kind
//! passes, or fails on a rule that names why. `wire_real_mutations` alters
//! real recordings (and the crate's output) to break each rule, and shows
//! that it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use agent_loop::conversation::{
    AssistantMessage, ContentPart, Extras, FinishReason, Message, ModelResponse, TextPart,
    ToolCall, WireFormat,
};
use agent_loop::turn::TurnError;
use agent_loop::wire::id_is_valid;
use agent_loop::wire::responses::RESPONSE_ID_KEY;
use serde_json::{Map, Value, json};

use crate::properties::wire::Format;

/// The rules, by name (see the module docs of `wire_real`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// A recording parses by its format's documented shape.
    Parses,
    /// The function tools a recording declares bind under the default name
    /// rules (MCP tool lists: under the MCP rules, and sanitised under the
    /// default ones).
    ToolsBind,
    /// Every tool call is answered by exactly one result, by id, right
    /// after its assistant message; no result answers no call; no two calls
    /// share an id.
    CallsAnsweredOnce,
    /// An export keeps the providers' documented request rules
    /// (`wire_rules`).
    ProviderRules,
    /// An id the provider or client sent is kept where it is valid and
    /// free; an empty or taken one is replaced by a minted one.
    IdsKeptOrMinted,
    /// The same history parsed twice, or the same turn run twice in one
    /// session, names every call the same.
    IdsDeterministic,
    /// Parse → export → parse keeps what the docs say is kept and
    /// normalises exactly what they say is normalised.
    RoundTrip,
    /// What an export wrote exports again unchanged.
    ExportFixpoint,
    /// The follow-up request the turn builds is the recorded one, up to the
    /// documented differences.
    FollowUp,
    /// A turn runs a recorded response to its end, or fails as the runner
    /// documents.
    TurnRuns,
    /// A stream gives what its events carry, with or without its end
    /// marker.
    StreamCarries,
}

/// One way a recording, or the crate's handling of it, breaks a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    pub rule: Rule,
    /// Where: a path into the value the rule read (`conversation[2].calls[1]`,
    /// `messages[1].content[0].text`).
    pub at: String,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} at {}: {}", self.rule, self.at, self.detail)
    }
}

pub(crate) fn violation(rule: Rule, at: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        rule,
        at: at.into(),
        detail: detail.into(),
    }
}

/// Panics with every violation of `what`, when there is one.
#[track_caller]
pub(crate) fn assert_holds(what: &str, violations: &[Violation]) {
    if !violations.is_empty() {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!("{what}: {} violation(s):\n{}", list.len(), list.join("\n"));
    }
}

/// `true` when `violations` hold one of `rule` at `at` (exactly).
pub(crate) fn reports(violations: &[Violation], rule: Rule, at: &str) -> bool {
    violations.iter().any(|v| v.rule == rule && v.at == at)
}

// ------------------------------------------------------------ differences

/// At most this many characters of a value in a violation.
const SHOWN: usize = 160;

fn shown(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// Every place where `actual` differs from `expected`, as violations of
/// `rule` at JSON paths under `at` (`at[1].content[0].text`).
pub(crate) fn differences(
    rule: Rule,
    at: &str,
    expected: &Value,
    actual: &Value,
) -> Vec<Violation> {
    let mut out = Vec::new();
    differ(rule, at, expected, actual, &mut out);
    out
}

fn differ(rule: Rule, at: &str, expected: &Value, actual: &Value, out: &mut Vec<Violation>) {
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => {
            let keys: BTreeSet<&String> = expected.keys().chain(actual.keys()).collect();
            for key in keys {
                let at = format!("{at}.{key}");
                match (expected.get(key), actual.get(key)) {
                    (Some(e), Some(a)) => differ(rule, &at, e, a, out),
                    (Some(e), None) => {
                        out.push(violation(rule, at, format!("missing {}", shown(e))))
                    }
                    (None, Some(a)) => {
                        out.push(violation(rule, at, format!("unexpected {}", shown(a))));
                    }
                    (None, None) => {}
                }
            }
        }
        (Value::Array(expected), Value::Array(actual)) => {
            for index in 0..expected.len().max(actual.len()) {
                let at = format!("{at}[{index}]");
                match (expected.get(index), actual.get(index)) {
                    (Some(e), Some(a)) => differ(rule, &at, e, a, out),
                    (Some(e), None) => {
                        out.push(violation(rule, at, format!("missing {}", shown(e))))
                    }
                    (None, Some(a)) => {
                        out.push(violation(rule, at, format!("unexpected {}", shown(a))));
                    }
                    (None, None) => {}
                }
            }
        }
        (e, a) if e != a => out.push(violation(
            rule,
            at,
            format!("expected {}, found {}", shown(e), shown(a)),
        )),
        _ => {}
    }
}

fn to_json(messages: &[Message]) -> Value {
    serde_json::to_value(messages).expect("a conversation serialises")
}

// ------------------------------------------------------ calls answered once

/// **Every call answered once**: each tool call of an assistant message
/// is answered by exactly one of the tool results right after it, by id;
/// no result answers anything else; no two calls of the conversation share
/// an id. What every provider requires of a request (OpenAI: "An assistant
/// message with 'tool_calls' must be followed by tool messages responding
/// to each 'tool_call_id'"; Anthropic: "Each `tool_use` block must have a
/// corresponding `tool_result` block in the next message"; the Responses
/// and Gemini rules of `wire_rules`), and what the turn runner keeps.
pub(crate) fn calls_answered_once(conversation: &[Message]) -> Vec<Violation> {
    /// A call of the assistant message before the current results: where,
    /// its id, and how many results answered it.
    struct Open<'a> {
        at: String,
        id: &'a str,
        answered: usize,
    }
    fn close(open: &mut Vec<Open<'_>>, out: &mut Vec<Violation>) {
        for call in open.drain(..) {
            if call.answered == 0 {
                out.push(violation(
                    Rule::CallsAnsweredOnce,
                    call.at,
                    format!("the call {:?} has no result", call.id),
                ));
            }
        }
    }
    let mut out = Vec::new();
    let mut earlier: BTreeSet<&str> = BTreeSet::new();
    let mut open: Vec<Open<'_>> = Vec::new();
    for (index, message) in conversation.iter().enumerate() {
        match message {
            Message::Assistant(assistant) => {
                close(&mut open, &mut out);
                for (position, call) in assistant.tool_calls().enumerate() {
                    let at = format!("conversation[{index}].calls[{position}]");
                    if !earlier.insert(&call.id) {
                        out.push(violation(
                            Rule::CallsAnsweredOnce,
                            at.clone(),
                            format!("the id {:?} names an earlier call too", call.id),
                        ));
                    }
                    open.push(Open {
                        at,
                        id: &call.id,
                        answered: 0,
                    });
                }
            }
            Message::Tool(result) => {
                let at = format!("conversation[{index}]");
                match open.iter_mut().find(|call| call.id == result.tool_call_id) {
                    Some(call) => {
                        call.answered += 1;
                        if call.answered > 1 {
                            out.push(violation(
                                Rule::CallsAnsweredOnce,
                                at,
                                format!("answers the call {:?} a second time", call.id),
                            ));
                        }
                    }
                    None => out.push(violation(
                        Rule::CallsAnsweredOnce,
                        at,
                        format!(
                            "answers {:?}, no call of the assistant message before it",
                            result.tool_call_id
                        ),
                    )),
                }
            }
            _ => close(&mut open, &mut out),
        }
    }
    close(&mut open, &mut out);
    out
}

// --------------------------------------------------------- provider rules

/// **Within the providers' rules**: `conversation` exported to every
/// format keeps that provider's documented request rules (`wire_rules`:
/// id and name patterns, no blank text, results after their calls, …).
pub(crate) fn within_provider_rules(conversation: &[Message]) -> Vec<Violation> {
    crate::wire_rules::export_violations(conversation)
        .into_iter()
        .map(|detail| {
            let (at, detail) = detail.split_once(": ").unwrap_or(("export", &detail));
            violation(Rule::ProviderRules, at, detail)
        })
        .collect()
}

// -------------------------------------------------------------------- ids

/// A minted tool call id: `call_` and 32 lowercase hex digits (the
/// version 5 UUID of the call's place, `agent_loop::wire` module docs,
/// "Where ids are minted").
pub(crate) fn is_minted(id: &str) -> bool {
    id.strip_prefix("call_").is_some_and(|hex| {
        hex.len() == 32
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// **Ids kept or minted**: `kept` are the ids the crate holds for calls
/// sent with the ids `sent` (in order; `""` for a call sent without one),
/// after the calls whose ids are `taken`. A sent id that is not empty and
/// not taken (by `taken` or an earlier call of `sent`) is kept as sent;
/// an empty or taken one is replaced by a minted id ([`is_minted`]) that
/// no other call has. What the turn runner does to a response's calls
/// ([`run_turn`](agent_loop::Definition::run_turn)) and a history's parser
/// to the calls of a request (`agent_loop::wire` module docs).
pub(crate) fn ids_kept_or_minted(
    at: &str,
    sent: &[String],
    kept: &[String],
    taken: &BTreeSet<String>,
) -> Vec<Violation> {
    if sent.len() != kept.len() {
        return vec![violation(
            Rule::IdsKeptOrMinted,
            at,
            format!("{} calls sent, {} kept", sent.len(), kept.len()),
        )];
    }
    let mut out = Vec::new();
    let mut used = taken.clone();
    let every_kept: Vec<&String> = kept.iter().collect();
    for (position, (sent, kept)) in sent.iter().zip(kept).enumerate() {
        let at = format!("{at}[{position}]");
        if !sent.is_empty() && !used.contains(sent) {
            if kept != sent {
                out.push(violation(
                    Rule::IdsKeptOrMinted,
                    at,
                    format!("the id {sent:?} was sent, and {kept:?} kept"),
                ));
            }
        } else if !is_minted(kept) {
            let why = if sent.is_empty() { "empty" } else { "taken" };
            out.push(violation(
                Rule::IdsKeptOrMinted,
                at,
                format!("the id {sent:?} is {why}: a minted one was due, not {kept:?}"),
            ));
        } else if used.contains(kept) || every_kept.iter().filter(|id| **id == kept).count() > 1 {
            out.push(violation(
                Rule::IdsKeptOrMinted,
                at,
                format!("the minted id {kept:?} names another call too"),
            ));
        }
        used.insert(kept.clone());
    }
    out
}

/// The ids of the tool calls of `messages`, in order.
pub(crate) fn call_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(AssistantMessage::tool_calls)
        .map(|call| call.id.clone())
        .collect()
}

/// **Ids deterministic**: `first` and `again`, one history parsed twice
/// or one turn run twice in one session (minting is by the session and
/// the call's place: `agent_loop::wire` module docs, "Where ids are
/// minted"), name every call and every result the same.
pub(crate) fn ids_deterministic(first: &[Message], again: &[Message]) -> Vec<Violation> {
    let ids = |messages: &[Message]| -> Vec<(String, String)> {
        messages
            .iter()
            .enumerate()
            .flat_map(|(index, message)| match message {
                Message::Assistant(assistant) => assistant
                    .tool_calls()
                    .enumerate()
                    .map(|(position, call)| {
                        (
                            format!("conversation[{index}].calls[{position}]"),
                            call.id.clone(),
                        )
                    })
                    .collect(),
                Message::Tool(result) => {
                    vec![(
                        format!("conversation[{index}]"),
                        result.tool_call_id.clone(),
                    )]
                }
                _ => Vec::new(),
            })
            .collect()
    };
    let (first, again) = (ids(first), ids(again));
    let mut out: Vec<Violation> = first
        .iter()
        .zip(&again)
        .filter(|((_, a), (_, b))| a != b)
        .map(|((at, a), (_, b))| {
            violation(
                Rule::IdsDeterministic,
                at,
                format!("named {a:?}, then {b:?}"),
            )
        })
        .collect();
    if first.len() != again.len() {
        out.push(violation(
            Rule::IdsDeterministic,
            "conversation",
            format!("{} ids, then {}", first.len(), again.len()),
        ));
    }
    out
}

// -------------------------------------------------------------- the turn

/// `true` for an answer the turn runner does not keep: no call, no text
/// but blank, no image, not paused by the provider (provider parts alone:
/// a Responses client-side `tool_search_call`, say). It tells the model
/// and asks again (`run_turn`, "empty answers"), so no follow-up of it is
/// the turn's.
pub(crate) fn is_empty_answer(response: &ModelResponse) -> bool {
    !response.message.has_tool_calls()
        && response.message.text().trim().is_empty()
        && !response
            .message
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::Image(_)))
        && response.finish_reason != FinishReason::Paused
}

/// **Turn runs**: a turn on a recorded `response` that failed with `error`
/// failed as [`TurnError`] documents it for that answer: an empty answer
/// ([`is_empty_answer`]) that the output limit, a content filter or a
/// refusal cut (asking again would end the same way), or an answer that
/// says the context window is full. Any other failure is a violation.
pub(crate) fn turn_ends_as_documented(
    response: &ModelResponse,
    error: &TurnError,
) -> Vec<Violation> {
    let documented = match error {
        TurnError::EmptyAnswer { finish_reason, .. } => {
            is_empty_answer(response)
                && *finish_reason == response.finish_reason
                && matches!(
                    finish_reason,
                    FinishReason::Length | FinishReason::ContentFilter | FinishReason::Refusal
                )
        }
        TurnError::ContextWindowExceeded { .. } => {
            response.finish_reason == FinishReason::ContextWindowExceeded
        }
        _ => false,
    };
    if documented {
        Vec::new()
    } else {
        vec![violation(
            Rule::TurnRuns,
            "turn",
            format!(
                "the turn failed on a {:?} answer: {error}",
                response.finish_reason
            ),
        )]
    }
}

// ------------------------------------------------------------- round trip

/// **Round trip**: `back`, what parse → export → parse gave for the parsed
/// `original`, is [`as_exported`] of it: every field kept but where the
/// docs say the export normalises. The ids an export had to map must be
/// valid for `format` and unique.
pub(crate) fn round_trip(format: Format, original: &[Message], back: &[Message]) -> Vec<Violation> {
    let mut out = Vec::new();
    let ids = call_ids(back);
    let mut seen = BTreeSet::new();
    for (position, id) in ids.iter().enumerate() {
        if !id_is_valid(format.wire_format(), id) {
            out.push(violation(
                Rule::RoundTrip,
                format!("calls[{position}]"),
                format!("the export sent the id {id:?}, which {format:?} refuses"),
            ));
        }
        if !seen.insert(id) {
            out.push(violation(
                Rule::RoundTrip,
                format!("calls[{position}]"),
                format!("the export sent the id {id:?} twice"),
            ));
        }
    }
    let expected = as_exported(format, original, back);
    out.extend(differences(
        Rule::RoundTrip,
        "conversation",
        &to_json(&expected),
        &to_json(back),
    ));
    out
}

/// `original` as parse → export → parse must give it back (the module
/// docs of `agent_loop::wire` and, under "What a round trip loses", of
/// each format), given what came `back` for the ids an export maps:
///
/// - each call id `format` does not accept ([`id_is_valid`]: Gemini's
///   OpenAI endpoint sends `""`) comes back as the one the export gave it,
///   in the call and the result that answers it;
/// - blank arguments come back as `{}`, as they ran; where a format sends
///   arguments as an object (Anthropic, Gemini), an object comes back as
///   its compact JSON text;
/// - blank text is left out, and a message left with nothing: a blank
///   system message, a user message without parts, an assistant message
///   without anything the format takes;
/// - Anthropic: a `thinking` part without a signature is left out; thinking
///   goes first in its message;
/// - Gemini: a blank thought without a signature is left out;
/// - Responses: the response id of an assistant message is no item field;
///   a reasoning item without its `id`, with no item after it in its
///   message, or followed by another reasoning item is left out; and when
///   none of a message's reasoning goes out, its `function_call` and
///   `message` items go without their `id`, and each `message` item as an
///   input message whose content is one string, without `status` (the
///   published schema requires `id` and `status` of an output message): its
///   text parts come back as one, keeping the item's other fields and
///   none of the parts' own.
pub(crate) fn as_exported(format: Format, original: &[Message], back: &[Message]) -> Vec<Message> {
    let mut expected: Vec<Message> = original
        .iter()
        .filter_map(|message| left_in(format, message.clone()))
        .collect();
    let mut back_ids = call_ids(back).into_iter();
    // (the id sent, the id exported) of calls renamed and not yet answered.
    let mut renamed: Vec<(String, String)> = Vec::new();
    for message in &mut expected {
        match message {
            Message::Assistant(assistant) => {
                for call in assistant.tool_calls_mut() {
                    let id = back_ids.next();
                    if !id_is_valid(format.wire_format(), &call.id)
                        && let Some(id) = id
                    {
                        renamed.push((std::mem::replace(&mut call.id, id.clone()), id));
                    }
                    blank_as_object(call);
                    if matches!(format, Format::Anthropic | Format::Gemini)
                        && let Ok(object @ Value::Object(_)) =
                            serde_json::from_str::<Value>(&call.arguments)
                    {
                        call.arguments = object.to_string();
                    }
                }
            }
            Message::Tool(result) => {
                if let Some(position) = renamed
                    .iter()
                    .position(|(sent, _)| *sent == result.tool_call_id)
                {
                    result.tool_call_id = renamed.remove(position).1;
                }
            }
            _ => {}
        }
    }
    expected
}

/// Blank or `null` arguments as `{}`, as they ran and as an export sends
/// them.
pub(crate) fn blank_as_object(call: &mut ToolCall) {
    if agent_loop_core::support::json::no_arguments(&call.arguments) {
        call.arguments = "{}".to_owned();
    }
}

/// `message` as an export of `format` leaves it (see [`as_exported`]);
/// `None` when it leaves it out.
fn left_in(format: Format, message: Message) -> Option<Message> {
    let mut assistant = match message {
        Message::Assistant(assistant) => assistant,
        Message::System(system) if system.text.trim().is_empty() => return None,
        Message::User(user) if user.content.is_empty() => return None,
        message => return Some(message),
    };
    assistant
        .content
        .retain(|part| !matches!(part, ContentPart::Text(text) if text.text.trim().is_empty()));
    match format {
        Format::Anthropic => {
            assistant.content.retain(|part| {
                !matches!(part, ContentPart::Reasoning(reasoning)
                    if reasoning.origin.format == WireFormat::AnthropicMessages
                        && reasoning.signature.is_none()
                        && reasoning.redacted.is_none())
            });
            let thinks = |part: &ContentPart| matches!(part, ContentPart::Reasoning(_));
            if assistant.content.iter().any(thinks)
                && !assistant.content.first().is_some_and(thinks)
            {
                let (mut first, rest): (Vec<_>, Vec<_>) =
                    assistant.content.into_iter().partition(thinks);
                first.extend(rest);
                assistant.content = first;
            }
        }
        Format::Gemini => assistant.content.retain(|part| {
            !matches!(part, ContentPart::Reasoning(reasoning)
                if reasoning.text.trim().is_empty()
                    && reasoning.signature.is_none()
                    && reasoning.redacted.is_none())
        }),
        Format::Responses => as_responses_items(&mut assistant),
        Format::OpenAi => {}
    }
    (!assistant.content.is_empty()).then_some(Message::Assistant(assistant))
}

/// How an item of a Responses assistant message goes out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Item {
    Reasoning,
    Other,
}

/// The Responses rules of [`as_exported`] on one assistant message.
fn as_responses_items(assistant: &mut AssistantMessage) {
    const FORMAT: WireFormat = WireFormat::OpenAiResponses;
    let fields = |extras: &Extras| extras.fields_for(FORMAT).cloned().unwrap_or_default();
    let mut message_fields = fields(&assistant.extras);
    message_fields.remove(RESPONSE_ID_KEY);
    assistant.extras = match assistant.extras.origin() {
        Some(origin) => Extras::new(origin.clone(), message_fields),
        None => Extras::default(),
    };
    // The item each part goes out as, if any.
    let items: Vec<Option<Item>> = assistant
        .content
        .iter()
        .map(|part| match part {
            ContentPart::Text(_) | ContentPart::ToolCall(_) => Some(Item::Other),
            ContentPart::Reasoning(reasoning) => (reasoning.origin.format == FORMAT
                && fields(&reasoning.extras)
                    .get("id")
                    .is_some_and(Value::is_string))
            .then_some(Item::Reasoning),
            ContentPart::Provider(provider) if provider.origin.format == FORMAT => {
                match provider.value.get("type").and_then(Value::as_str) {
                    Some("reasoning") => Some(Item::Reasoning),
                    Some("function_call_output" | "function_call") => None,
                    Some(_) => Some(Item::Other),
                    None => (provider.value.get("role") == Some(&json!("assistant")))
                        .then_some(Item::Other),
                }
            }
            _ => None,
        })
        .collect();
    // Reasoning needs an item after it, and not another reasoning item.
    let mut kept: Vec<(usize, Item)> = items
        .iter()
        .enumerate()
        .filter_map(|(index, item)| item.map(|item| (index, item)))
        .collect();
    while kept
        .last()
        .is_some_and(|(_, item)| *item == Item::Reasoning)
    {
        kept.pop();
    }
    let kept: Vec<(usize, Item)> = kept
        .iter()
        .enumerate()
        .filter(|(at, (_, item))| {
            !(*item == Item::Reasoning
                && kept
                    .get(at + 1)
                    .is_some_and(|(_, next)| *next == Item::Reasoning))
        })
        .map(|(_, kept)| *kept)
        .collect();
    let with_reasoning = kept.iter().any(|(_, item)| *item == Item::Reasoning);
    let kept: BTreeSet<usize> = kept.into_iter().map(|(index, _)| index).collect();
    let parts = std::mem::take(&mut assistant.content);
    if with_reasoning {
        assistant.content = parts
            .into_iter()
            .enumerate()
            .filter(|(index, _)| kept.contains(index))
            .map(|(_, part)| part)
            .collect();
        return;
    }
    // No reasoning goes out: no item ids, and each message item as one
    // string, its parts' own fields gone.
    let without = |mut item: Map<String, Value>| {
        item.remove("id");
        item.remove("status");
        item
    };
    let mut open = false;
    for (index, part) in parts.into_iter().enumerate() {
        if !kept.contains(&index) {
            continue;
        }
        match part {
            ContentPart::Text(text) => {
                let opens = fields(&text.extras).get("item").cloned();
                match (opens, assistant.content.last_mut()) {
                    (None, Some(ContentPart::Text(joined))) if open => {
                        joined.text.push_str(&text.text);
                    }
                    (opens, _) => {
                        let item = match opens {
                            Some(Value::Object(item)) => without(item),
                            _ => Map::new(),
                        };
                        let mut joined = TextPart::new(text.text);
                        joined.extras = Extras::new(
                            FORMAT,
                            Map::from_iter([("item".into(), Value::Object(item))]),
                        );
                        assistant.content.push(ContentPart::Text(joined));
                        open = true;
                    }
                }
            }
            ContentPart::ToolCall(mut call) => {
                let mut call_fields = fields(&call.extras);
                call_fields.remove("id");
                call.extras = Extras::new(FORMAT, call_fields);
                assistant.content.push(ContentPart::ToolCall(call));
                open = false;
            }
            ContentPart::Provider(provider) if refusal_text(&provider.value).is_some() => {
                // A refusing message without its id goes as the text it
                // said: an input message of one string.
                let text = refusal_text(&provider.value).unwrap_or_default();
                let mut item = provider.value.as_object().cloned().unwrap_or_default();
                item.remove("role");
                item.remove("content");
                let mut joined = TextPart::new(text);
                joined.extras = Extras::new(
                    FORMAT,
                    Map::from_iter([("item".into(), Value::Object(without(item)))]),
                );
                assistant.content.push(ContentPart::Text(joined));
                open = false;
            }
            part => {
                assistant.content.push(part);
                open = false;
            }
        }
    }
}

/// The text of an assistant `message` item whose parts are `output_text`
/// and `refusal` (a refusing message, kept as a provider part), joined.
fn refusal_text(value: &Value) -> Option<String> {
    let is_message = matches!(
        value.get("type").and_then(Value::as_str),
        None | Some("message")
    );
    if !is_message || value.get("role") != Some(&json!("assistant")) || value.get("id").is_some() {
        return None;
    }
    let mut text = String::new();
    for part in value.get("content")?.as_array()? {
        let field = match part.get("type").and_then(Value::as_str) {
            Some("output_text") => "text",
            Some("refusal") => "refusal",
            _ => return None,
        };
        text.push_str(part.get(field)?.as_str()?);
    }
    Some(text)
}

/// **Export fixpoint**: what an export wrote (`first`), parsed and
/// exported again (`again`), is written the same (every format's module
/// docs: "Parsing what this module exports and exporting it again gives
/// the same JSON"), but for what parsing must add: a Gemini call written
/// without an `id` (it had none) comes back with a minted one, in the call
/// and its result (the `gemini` module docs, "What a round trip loses").
pub(crate) fn export_fixpoint(format: Format, first: &Value, again: &Value) -> Vec<Violation> {
    let mut again = again.clone();
    if format == Format::Gemini {
        let (written, back) = (
            id_slots(format, &first["contents"]),
            id_slots(format, &again["contents"]),
        );
        for ((at, id), (same_at, minted)) in written.iter().zip(&back) {
            if id.is_none() && at == same_at && minted.as_deref().is_some_and(is_minted) {
                let (parent, key) = at.rsplit_once('/').expect("a pointer to a field");
                if let Some(Value::Object(fields)) = again["contents"].pointer_mut(parent) {
                    fields.remove(key);
                }
            }
        }
    }
    differences(Rule::ExportFixpoint, "export", first, &again)
}

// --------------------------------------------------------------- follow-up

/// **Follow-up**: `ours`, the messages array (`messages`, `input`,
/// `contents`) of the request the turn builds after a recorded response,
/// equals `theirs`, the one the recording client sent, up to what the
/// documentation lets differ:
///
/// - the names of the calls in `renamable`: a request pairs a result with
///   its call by id only (every provider's reference), so a client may
///   name a call its own way, one-to-one in the call and its results (or,
///   in Gemini, where `FunctionCall.id` is optional, not at all); every
///   other id is compared as it is;
/// - what the format's clients send or omit alike ([`client_habits`]).
pub(crate) fn follow_up(
    format: Format,
    ours: &Value,
    theirs: &Value,
    renamable: &BTreeSet<String>,
) -> Vec<Violation> {
    let root = match format {
        Format::Responses => "input",
        Format::Gemini => "contents",
        Format::OpenAi | Format::Anthropic => "messages",
    };
    let mut ours = client_habits(format, ours);
    let theirs = client_habits(format, theirs);
    let mut out = Vec::new();
    let (our_slots, their_slots) = (id_slots(format, &ours), id_slots(format, &theirs));
    if our_slots.len() != their_slots.len() {
        out.push(violation(
            Rule::FollowUp,
            root,
            format!(
                "{} call and result ids, the recording {}",
                our_slots.len(),
                their_slots.len()
            ),
        ));
    }
    // Our id → the client's, one-to-one.
    let mut names: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut named_by: BTreeMap<String, String> = BTreeMap::new();
    for ((at, ours), (_, theirs)) in our_slots.iter().zip(&their_slots) {
        let Some(ours) = ours.as_ref().filter(|id| renamable.contains(*id)) else {
            continue;
        };
        if theirs.is_none() && format != Format::Gemini {
            continue; // compared as it is: the client sent no id
        }
        let before = names.insert(ours.clone(), theirs.clone());
        let other = theirs
            .as_ref()
            .and_then(|theirs| named_by.insert(theirs.clone(), ours.clone()));
        if before.is_some_and(|before| before != *theirs)
            || other.is_some_and(|other| other != *ours)
        {
            out.push(violation(
                Rule::FollowUp,
                path_of(root, at),
                format!("the call {ours:?} is not named {theirs:?} one-to-one"),
            ));
        }
    }
    for (at, id) in &our_slots {
        let Some(theirs) = id.as_ref().and_then(|id| names.get(id)) else {
            continue;
        };
        let (parent, key) = at.rsplit_once('/').expect("a pointer to a field");
        if let Some(Value::Object(fields)) = ours.pointer_mut(parent) {
            match theirs {
                Some(id) => fields.insert(key.to_owned(), json!(id)),
                None => fields.remove(key),
            };
        }
    }
    out.extend(differences(Rule::FollowUp, root, &theirs, &ours));
    out
}

/// The path (`messages[4].tool_call_id`) of a JSON `pointer`
/// (`/4/tool_call_id`) into the array `root`.
fn path_of(root: &str, pointer: &str) -> String {
    let mut path = root.to_owned();
    for segment in pointer.split('/').skip(1) {
        if segment.bytes().all(|b| b.is_ascii_digit()) {
            path.push_str(&format!("[{segment}]"));
        } else {
            path.push('.');
            path.push_str(segment);
        }
    }
    path
}

/// The call and result ids of a messages array, in order: (a JSON pointer
/// to the id's field, the id when there is one).
fn id_slots(format: Format, messages: &Value) -> Vec<(String, Option<String>)> {
    let mut slots = Vec::new();
    let id = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    for (index, message) in messages.as_array().into_iter().flatten().enumerate() {
        match format {
            Format::OpenAi => {
                for (position, call) in message["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    slots.push((format!("/{index}/tool_calls/{position}/id"), id(call, "id")));
                }
                if message["role"] == "tool" {
                    slots.push((
                        format!("/{index}/tool_call_id"),
                        id(message, "tool_call_id"),
                    ));
                }
            }
            Format::Anthropic => {
                for (position, block) in message["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let key = match block["type"].as_str() {
                        Some("tool_use") => "id",
                        Some("tool_result") => "tool_use_id",
                        _ => continue,
                    };
                    slots.push((format!("/{index}/content/{position}/{key}"), id(block, key)));
                }
            }
            Format::Responses => {
                if matches!(
                    message["type"].as_str(),
                    Some("function_call" | "function_call_output")
                ) {
                    slots.push((format!("/{index}/call_id"), id(message, "call_id")));
                }
            }
            Format::Gemini => {
                for (position, part) in message["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    for key in ["functionCall", "functionResponse"] {
                        if let Some(call) = part.get(key) {
                            slots.push((
                                format!("/{index}/parts/{position}/{key}/id"),
                                id(call, "id"),
                            ));
                        }
                    }
                }
            }
        }
    }
    slots
}

/// A messages array of `format` with what clients send or omit alike made
/// one way (both sides of [`follow_up`] go through it):
///
/// - every format: arguments and a call's `input` compared as JSON values
///   (whitespace and key order are the serialiser's);
/// - OpenAI Chat Completions: an assistant `content` that is `null`, `""`
///   or missing (the API reference: required unless `tool_calls`), text
///   content as one string or as `text` parts, Mistral's `prefix: false`
///   (its default), a call's `index` (its position in a stream, which
///   DeepSeek leaves on an unstreamed call: no request field);
/// - Anthropic: `content` as a string or one `text` block, in a message and
///   in a `tool_result`; a blank `text` block (the crate never sends one:
///   the API refuses empty text); `is_error: false` (the default); a
///   call's `caller` `{"type": "direct"}` (the model's own call, the
///   default of the tool-use block); `cache_control` (the client's own
///   prompt-caching breakpoints);
/// - Responses: `status` and the `id` of calls and messages (an `id` goes
///   only with its reasoning: `responses` module docs), `"type":
///   "message"` on a message (optional in `EasyInputMessage`), a blank
///   assistant message, a content of one `input_text` part or its string,
///   a reasoning `summary` missing or `[]`, an `output_text` part's
///   `annotations` and `logprobs` missing or `[]`; the items of a tool the server
///   executed (`"execution": "server"`: a `tool_search_call` and its
///   output), which the crate sends back verbatim and a client may echo
///   its own way or not at all (the server ran them);
/// - Gemini: keys in snake_case or camelCase (the API takes both),
///   signatures in standard or URL-safe base64, the documented stand-in
///   `skip_thought_signature_validator` or no signature, blank text parts
///   and thought summaries without a signature (the recording clients
///   send `{"text": ""}`, and some do not replay thought summaries), and
///   contents left empty by that.
pub(crate) fn client_habits(format: Format, messages: &Value) -> Value {
    let items = messages.as_array().cloned().unwrap_or_default();
    let items: Vec<Value> = match format {
        Format::OpenAi => items.into_iter().map(openai_habits).collect(),
        Format::Anthropic => items.into_iter().map(anthropic_habits).collect(),
        Format::Responses => items.into_iter().filter_map(responses_habits).collect(),
        Format::Gemini => return gemini_habits(messages),
    };
    Value::Array(items)
}

/// A JSON text as the value it holds (kept as text when it holds none).
fn as_value(text: &Value) -> Value {
    text.as_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_else(|| text.clone())
}

fn openai_habits(mut message: Value) -> Value {
    let Some(fields) = message.as_object_mut() else {
        return message;
    };
    if let Some(Value::Array(parts)) = fields.get("content")
        && parts.iter().all(|part| part["type"] == "text")
    {
        let text: String = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        fields.insert("content".into(), json!(text));
    }
    let blank = fields
        .get("content")
        .is_none_or(|content| content.is_null() || content.as_str().is_some_and(|t| t.is_empty()));
    if blank && fields.get("role") == Some(&json!("assistant")) {
        fields.remove("content");
    }
    if fields.get("prefix") == Some(&json!(false)) {
        fields.remove("prefix");
    }
    for call in fields
        .get_mut("tool_calls")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let arguments = as_value(&call["function"]["arguments"]);
        call["function"]["arguments"] = arguments;
        if let Some(call) = call.as_object_mut() {
            call.remove("index");
        }
    }
    message
}

fn anthropic_habits(mut message: Value) -> Value {
    /// A string content as one `text` block; no blank `text` block.
    fn as_blocks(content: &mut Value) {
        if let Value::String(text) = content {
            *content = json!([{ "type": "text", "text": text }]);
        }
        if let Value::Array(blocks) = content {
            blocks.retain(|block| {
                !(block["type"] == "text"
                    && block["text"].as_str().is_some_and(|t| t.trim().is_empty()))
            });
        }
    }
    let Some(content) = message.get_mut("content") else {
        return message;
    };
    as_blocks(content);
    for block in content.as_array_mut().into_iter().flatten() {
        let Some(fields) = block.as_object_mut() else {
            continue;
        };
        if fields.get("caller") == Some(&json!({ "type": "direct" })) {
            fields.remove("caller");
        }
        fields.remove("cache_control");
        if fields.get("type") == Some(&json!("tool_result")) {
            if fields.get("is_error") == Some(&json!(false)) {
                fields.remove("is_error");
            }
            if let Some(inner) = fields.get_mut("content") {
                as_blocks(inner);
            }
        }
    }
    message
}

fn responses_habits(item: Value) -> Option<Value> {
    let mut item = item.as_object().cloned().unwrap_or_default();
    let is_message = item.contains_key("role");
    if is_message
        && item.get("role") == Some(&json!("assistant"))
        && item
            .get("content")
            .and_then(Value::as_str)
            .is_some_and(|text| text.trim().is_empty())
    {
        return None;
    }
    if item.get("execution") == Some(&json!("server")) {
        return None;
    }
    item.remove("status");
    if is_message || item.get("type") == Some(&json!("function_call")) {
        item.remove("id");
    }
    if is_message && item.get("type") == Some(&json!("message")) {
        item.remove("type");
    }
    if item.get("type") == Some(&json!("reasoning")) {
        item.entry("summary").or_insert_with(|| json!([]));
    }
    if let Some(Value::Array(parts)) = item.get_mut("content") {
        for part in parts.iter_mut().filter_map(Value::as_object_mut) {
            for key in ["annotations", "logprobs"] {
                if part.get(key) == Some(&json!([])) {
                    part.remove(key);
                }
            }
        }
    }
    if let Some(Value::Array(parts)) = item.get("content")
        && let [part] = parts.as_slice()
        && part["type"] == "input_text"
        && part.as_object().is_some_and(|p| p.len() == 2)
    {
        let text = part["text"].clone();
        item.insert("content".into(), text);
    }
    if let Some(arguments) = item.get("arguments") {
        let arguments = as_value(arguments);
        item.insert("arguments".into(), arguments);
    }
    Some(Value::Object(item))
}

fn gemini_habits(contents: &Value) -> Value {
    fn camel(key: &str) -> String {
        let mut out = String::new();
        let mut upper = false;
        for c in key.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.extend(c.to_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    }
    fn keys(value: &Value, in_args: bool) -> Value {
        match value {
            // Arguments and responses are the tool's own keys: kept.
            Value::Object(fields) => Value::Object(
                fields
                    .iter()
                    .filter_map(|(key, value)| {
                        let key = if in_args { key.clone() } else { camel(key) };
                        let inner = in_args || key == "args" || key == "response";
                        let value = match (key.as_str(), value) {
                            ("thoughtSignature", Value::String(sig))
                                if sig == "skip_thought_signature_validator" =>
                            {
                                return None;
                            }
                            ("thoughtSignature", Value::String(sig)) => {
                                Value::String(sig.replace('-', "+").replace('_', "/"))
                            }
                            _ => keys(value, inner),
                        };
                        Some((key, value))
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| keys(v, in_args)).collect()),
            other => other.clone(),
        }
    }
    let contents = keys(contents, false);
    let kept: Vec<Value> = contents
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|mut content| {
            let parts: Vec<Value> = content["parts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|part| {
                    let signed = part.get("thoughtSignature").is_some();
                    let blank = part["text"].as_str().is_some_and(|t| t.trim().is_empty());
                    let thought = part["thought"] == true;
                    signed || !(blank || thought)
                })
                .collect();
            if parts.is_empty() {
                return None;
            }
            content["parts"] = Value::Array(parts);
            Some(content)
        })
        .collect();
    Value::Array(kept)
}

// ---------------------------------------------------------------- streams

/// What a stream carries, read from its events independently of the
/// crate's assemblers.
#[derive(Clone, Debug)]
pub(crate) enum Carried {
    /// A whole response: the parse of the unstreamed body it amounts to.
    Response(ModelResponse),
    /// The provider's error, by its message.
    Error(String),
    /// Neither: the stream was cut before its end.
    Nothing,
}

/// **Stream carries**: what the crate assembled from a stream (`got`: the
/// response, or the provider's message of its error) is what the stream
/// `carried`: the same response, the same provider error, or, for a stream
/// cut before its end, an error.
pub(crate) fn stream_carries(
    carried: &Carried,
    got: &Result<ModelResponse, String>,
) -> Vec<Violation> {
    let rule = Rule::StreamCarries;
    match (carried, got) {
        (Carried::Response(expected), Ok(got)) => differences(
            rule,
            "response",
            &serde_json::to_value(expected).expect("a response serialises"),
            &serde_json::to_value(got).expect("a response serialises"),
        ),
        (Carried::Error(expected), Err(got)) if expected == got => Vec::new(),
        (Carried::Error(expected), Err(got)) => vec![violation(
            rule,
            "error",
            format!("the provider said {expected:?}, the error says {got:?}"),
        )],
        (Carried::Nothing, Err(_)) => Vec::new(),
        (Carried::Response(_), Err(got)) => vec![violation(
            rule,
            "response",
            format!("the events carry a response, the stream failed: {got}"),
        )],
        (Carried::Error(expected), Ok(_)) => vec![violation(
            rule,
            "error",
            format!("the events carry the error {expected:?}, the stream gave an answer"),
        )],
        (Carried::Nothing, Ok(_)) => vec![violation(
            rule,
            "response",
            "the stream was cut before its end, yet gave an answer",
        )],
    }
}
