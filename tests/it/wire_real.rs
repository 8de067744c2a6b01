//! Every recorded provider payload under `tests/fixtures/wire-real/`, data
//! driven: adding a recorded payload is adding a file, and a real
//! recording of a known kind passes, or fails on a rule that says why.
//!
//! Files are `<kind>/<name>.<role>.json`, kinds `openai`, `anthropic`,
//! `anthropic-adaptive`, `openai-responses`, `gemini`, `openai-stream` and
//! `anthropic-stream`, roles `request`, `response` and `followup_request`
//! (the next request the same client sent); streams `<name>.sse` and
//! `<name>.stream.json` (Gemini's JSON array); and `mcp/<name>.json` for
//! MCP `tools/list` results. Sources and licenses:
//! `tests/fixtures/wire-real/SOURCES.md`.
//!
//! # The rules
//!
//! Each rule is a function of `wire_real_rules` that returns its
//! violations (the [`Rule`], a path, what is wrong); `wire_real_mutations`
//! alters real recordings, or the crate's output, to break each one and
//! shows that it fails there. A rule states what the providers' and the
//! crate's documentation say, never one recording client's habits.
//!
//! 1. **Parses** (`Parses`): a recording parses by its format's shape.
//! 2. **Tools bind** (`ToolsBind`): its function tools bind under the
//!    default name rules (MCP lists: under the MCP rules, and sanitised
//!    under the default ones).
//! 3. **Every call answered once** (`CallsAnsweredOnce`): each tool call is
//!    answered by exactly one result, by id, right after its assistant
//!    message; no result answers anything else; no two calls share an id.
//!    Held by every request (but one chained with `previous_response_id`,
//!    whose history is on the server) and by the conversation a turn
//!    leaves.
//! 4. **Provider rules** (`ProviderRules`): that conversation, exported to
//!    every format, keeps each provider's documented request rules
//!    (`wire_rules`).
//! 5. **Ids kept or minted** (`IdsKeptOrMinted`): an id the provider or the
//!    client sent is kept where it is not empty and not taken; an empty or
//!    taken one becomes a minted `call_` id no other call has (a history's
//!    parser; the turn runner, for a response's calls).
//! 6. **Ids deterministic** (`IdsDeterministic`): one history parsed
//!    twice, one turn run twice in one session (replayed from its
//!    cassette), name every call alike.
//! 7. **Round trip** (`RoundTrip`): parse → export → parse gives the parsed
//!    value back but where the docs say an export normalises: ids the
//!    format refuses (mapped, valid, unique, the same in call and result),
//!    blank arguments as `{}`, an argument object as its compact text
//!    (Anthropic, Gemini), what the export rightly leaves out (blank text
//!    and a message left with nothing, unsigned thinking, Responses
//!    reasoning without its id or its following item: an export may be
//!    rightly empty), a Responses assistant message that goes without its
//!    item `id` as one string; tool declarations come back equal.
//! 8. **Export fixpoint** (`ExportFixpoint`): what an export wrote exports
//!    again unchanged (but the ids Gemini calls without one come back
//!    with).
//! 9. **Follow-up** (`FollowUp`): the request the turn builds after a
//!    recorded response (from the recorded follow-up's history, with the
//!    client's tool results) is the recorded follow-up, up to the names of
//!    the calls (a request pairs a result with its call by id only, so a
//!    client may name them its own way, one-to-one; a request chained to
//!    the stored response must use the provider's, but for ids the turn
//!    minted) and the fields the format's clients send or omit alike
//!    (`client_habits`: `status`, an item `id` without its reasoning,
//!    `is_error: false`, content as a string or parts, blank text, …).
//! 10. **Turn runs** (`TurnRuns`): the turn runs a recorded response to its
//!     end, or fails as the runner documents (an empty answer the output
//!     limit, a content filter or a refusal cut; a full context window).
//! 11. **Stream carries** (`StreamCarries`): a stream assembles to what its
//!     events carry, read by the provider's streaming reference (the last
//!     whole response, or the stream's items when that has no output; a
//!     payload named by its `type` where the event has no name; `[DONE]` or
//!     not), or to its error, or fails when cut before its end.
//!
//! # What each file is held to
//!
//! - **request**, **followup_request**: rules 1 to 8 (5 and 6 on the ids
//!   the parser keeps and mints).
//! - **response**, and a stream as it assembles: rule 11 (streams); rules
//!   7 and 8 as the assistant message after a user message; then a turn
//!   runs it from the follow-up's history (else the request's, else one
//!   user message): rules 2 to 6 and 10 on the turn, and with a follow-up
//!   rule 9, unless the runner does not keep the answer (no text, call or
//!   image: an empty answer, which it leaves out and asks again).
//! - **MCP**: rules 1, 2 and 7.
//!
//! [`Rule`]: crate::wire_real_rules::Rule

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use agent_loop::cassette::{Cassette, Recorder, Replayer, Strictness};
use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::tool::{self, BoxError, NameRules, ToolInfo};
use agent_loop::turn::{ScriptedModel, TurnError};
use agent_loop::wire::{ToolDeclaration, gemini, mcp, stream};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::arbitrary_json::sse_events;
use crate::properties::wire::Format;
use crate::wire_real_rules::{self as rules, Rule, Violation, assert_holds, violation};

pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wire-real");

/// The JSON files of `kind`, sorted.
fn files(kind: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(FIXTURES).join(kind))
        .unwrap_or_else(|error| panic!("{FIXTURES}/{kind}: {error}"))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no payloads under {kind}");
    files
}

pub(crate) fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(name, role)` of `ant_thinking.followup_request.json`.
fn name_and_role(path: &Path) -> (String, String) {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    match stem.rsplit_once('.') {
        Some((name, role)) => (name.to_owned(), role.to_owned()),
        None => (stem.to_owned(), String::new()),
    }
}

/// A tool that accepts any object and answers with its name and arguments.
fn echo(info: ToolInfo) -> tool::Definition {
    let name = info.name.clone();
    tool::Definition::from_fn(info, move |arguments: Value, _context| {
        let name = name.clone();
        async move { Ok::<_, BoxError>(json!({ "tool": name, "arguments": arguments })) }
    })
}

async fn bind(infos: Vec<ToolInfo>, rules: NameRules) -> Result<Definition<Bound>, String> {
    let definition = Definition::builder()
        .name("wire-real")
        .tools(infos.into_iter().map(echo))
        .name_rules(rules)
        .build()
        .validate()
        .map_err(|error| format!("validate: {error}"))?;
    definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .map_err(|error| format!("{error:#}"))
}

fn functions(tools: &[ToolDeclaration]) -> Vec<ToolInfo> {
    tools
        .iter()
        .filter_map(ToolDeclaration::as_function)
        .cloned()
        .collect()
}

/// The messages array of a request body of `format`.
pub(crate) fn messages_key(format: Format) -> &'static str {
    match format {
        Format::Responses => "input",
        Format::Gemini => "contents",
        Format::OpenAi | Format::Anthropic => "messages",
    }
}

/// A request chained with `previous_response_id` (Responses) holds only
/// what follows the stored response: its history is on the server.
fn chained(body: &Value) -> bool {
    body.get("previous_response_id")
        .is_some_and(Value::is_string)
}

// --------------------------------------------------------------- requests

/// The ids of the tool calls of a request body, as the client sent them
/// (`""` for a call sent without one), in order: OpenAI `tool_calls` of
/// type `function`, Anthropic `tool_use` blocks, Responses `function_call`
/// items, Gemini `functionCall` parts.
pub(crate) fn sent_call_ids(format: Format, body: &Value) -> Vec<String> {
    let id = |value: &Value, key: &str| value[key].as_str().unwrap_or_default().to_owned();
    let messages = body[messages_key(format)]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut ids = Vec::new();
    for message in &messages {
        match format {
            Format::OpenAi => ids.extend(
                message["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|call| call["type"].as_str().is_none_or(|t| t == "function"))
                    .map(|call| id(call, "id")),
            ),
            Format::Anthropic => ids.extend(
                message["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|block| block["type"] == "tool_use")
                    .map(|block| id(block, "id")),
            ),
            Format::Responses => {
                if message["type"] == "function_call" {
                    ids.push(id(message, "call_id"));
                }
            }
            Format::Gemini => ids.extend(
                message["parts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part.get("functionCall").or(part.get("function_call")))
                    .map(|call| id(call, "id")),
            ),
        }
    }
    ids
}

/// Every violation of a request body of `format` (module docs, "What each
/// file is held to").
pub(crate) async fn request_violations(format: Format, body: &Value) -> Vec<Violation> {
    let parsed = match format.parse_request(body) {
        Ok(parsed) => parsed,
        Err(error) => return vec![violation(Rule::Parses, "request", error.to_string())],
    };
    let mut out = Vec::new();
    let tools = functions(&parsed.tools);
    if !tools.is_empty()
        && let Err(error) = bind(tools, NameRules::default()).await
    {
        out.push(violation(Rule::ToolsBind, "tools", error));
    }
    // The parser keeps the ids sent and mints the rest, the same each time.
    out.extend(rules::ids_kept_or_minted(
        "calls",
        &sent_call_ids(format, body),
        &rules::call_ids(&parsed.conversation),
        &BTreeSet::new(),
    ));
    if let Ok(again) = format.parse_request(body) {
        out.extend(rules::ids_deterministic(
            &parsed.conversation,
            &again.conversation,
        ));
    }
    if !chained(body) {
        out.extend(rules::calls_answered_once(&parsed.conversation));
        out.extend(rules::within_provider_rules(&parsed.conversation));
    }
    if format == Format::Responses
        && let Ok(exported) = format.export_tools(&parsed.tools)
    {
        out.extend(
            crate::wire_rules::responses_tool_violations(&exported)
                .into_iter()
                .map(|detail| violation(Rule::ProviderRules, "tools", detail)),
        );
    }
    out.extend(round_trip_violations(
        format,
        &parsed.conversation,
        &parsed.tools,
    ));
    out
}

/// Rules 7 and 8 on a parsed conversation and its tools: parse → export →
/// parse, and a second export.
pub(crate) fn round_trip_violations(
    format: Format,
    conversation: &[Message],
    tools: &[ToolDeclaration],
) -> Vec<Violation> {
    let exported = match format.export_request(conversation, tools) {
        Ok(exported) => exported,
        Err(error) => {
            return vec![violation(
                Rule::RoundTrip,
                "export",
                format!("its own tools do not export: {error}"),
            )];
        }
    };
    let back = match format.parse_request(&exported) {
        Ok(back) => back,
        Err(error) => {
            return vec![violation(
                Rule::RoundTrip,
                "export",
                format!("the export does not parse: {error}"),
            )];
        }
    };
    let mut out = rules::round_trip(format, conversation, &back.conversation);
    for (index, (tool, again)) in tools.iter().zip(&back.tools).enumerate() {
        if tool != again {
            out.push(violation(
                Rule::RoundTrip,
                format!("tools[{index}]"),
                format!("{tool:?} came back as {again:?}"),
            ));
        }
    }
    if tools.len() != back.tools.len() {
        out.push(violation(
            Rule::RoundTrip,
            "tools",
            format!("{} tools came back as {}", tools.len(), back.tools.len()),
        ));
    }
    match format.export_request(&back.conversation, &back.tools) {
        Ok(twice) => out.extend(rules::export_fixpoint(format, &exported, &twice)),
        Err(error) => out.push(violation(Rule::ExportFixpoint, "export", error.to_string())),
    }
    out
}

// -------------------------------------------------------------- responses

/// The recordings beside a response, by role.
#[derive(Clone, Debug, Default)]
pub(crate) struct Siblings {
    pub request: Option<Value>,
    pub followup: Option<Value>,
}

impl Siblings {
    /// `<name>.request.json` and `<name>.followup_request.json` of `dir`,
    /// where they are.
    pub(crate) fn of(dir: &Path, name: &str) -> Self {
        let body = |role: &str| {
            let path = dir.join(format!("{name}.{role}.json"));
            path.exists().then(|| read(&path))
        };
        Self {
            request: body("request"),
            followup: body("followup_request"),
        }
    }
}

/// The conversation a turn of `response` runs on: the follow-up's history
/// up to its last assistant message (the response, as the client sent it
/// back), else the request's, else one user message.
fn history(format: Format, siblings: &Siblings) -> Result<Vec<Message>, Violation> {
    let parse = |role: &str, body: &Value| {
        format
            .parse_request(body)
            .map(|parsed| parsed.conversation)
            .map_err(|error| violation(Rule::Parses, role, error.to_string()))
    };
    if let Some(followup) = &siblings.followup {
        let conversation = parse("followup_request", followup)?;
        if let Some(last) = conversation
            .iter()
            .rposition(|message| matches!(message, Message::Assistant(_)))
        {
            return Ok(conversation[..last].to_vec());
        }
    }
    match &siblings.request {
        Some(request) => parse("request", request),
        None => Ok(vec![Message::user("Go on.")]),
    }
}

/// The tools a turn of `response` binds: the function tools the client
/// offered, and an echo tool for each other tool the response calls whose
/// name the default rules accept (a call of another name gets the
/// runner's error result).
fn turn_tools(format: Format, siblings: &Siblings, response: &ModelResponse) -> Vec<ToolInfo> {
    let offered: Vec<ToolInfo> = [&siblings.followup, &siblings.request]
        .into_iter()
        .flatten()
        .find_map(|body| format.parse_request(body).ok())
        .map(|parsed| functions(&parsed.tools))
        .unwrap_or_default();
    let called: BTreeSet<String> = response
        .message
        .tool_calls()
        .map(|call| call.name.clone())
        .filter(|name| NameRules::default().check(name).is_ok())
        .filter(|name| !offered.iter().any(|info| info.name == *name))
        .collect();
    offered
        .into_iter()
        .chain(
            called
                .into_iter()
                .map(|name| ToolInfo::new(name, "", json!({ "type": "object" }))),
        )
        .collect()
}

/// Every violation of a parsed response of `format` and its `siblings`
/// (module docs, "What each file is held to").
pub(crate) async fn response_violations(
    format: Format,
    what: &str,
    response: &ModelResponse,
    siblings: &Siblings,
) -> Vec<Violation> {
    // As the assistant message of a request, after a user message.
    let mut out = round_trip_violations(
        format,
        &[
            Message::user("q"),
            Message::Assistant(response.message.clone()),
        ],
        &[],
    );
    let mut conversation = match history(format, siblings) {
        Ok(history) => history,
        Err(violation) => {
            out.push(violation);
            return out;
        }
    };
    let session = match bind(turn_tools(format, siblings, response), NameRules::default()).await {
        Ok(session) => session,
        Err(error) => {
            out.push(violation(Rule::ToolsBind, "tools", error));
            return out;
        }
    };
    let start = conversation.len();
    let taken: BTreeSet<String> = rules::call_ids(&conversation).into_iter().collect();
    let model = ScriptedModel::new([response.clone(), ModelResponse::answer("Done.")]);
    match run_recorded(what, &session, model, &mut conversation).await {
        Ok(violations) => out.extend(violations),
        Err(error) => {
            out.extend(rules::turn_ends_as_documented(response, &error));
            return out;
        }
    }
    let sent: Vec<String> = response
        .message
        .tool_calls()
        .map(|call| call.id.clone())
        .collect();
    let kept = rules::call_ids(conversation.get(start..=start).unwrap_or_default());
    out.extend(rules::ids_kept_or_minted(
        &format!("conversation[{start}].calls"),
        &sent,
        &kept,
        &taken,
    ));
    if let Some(followup) = &siblings.followup
        && !rules::is_empty_answer(response)
    {
        out.extend(follow_up_violations(
            format,
            &conversation[..start],
            &conversation[start..],
            &sent,
            followup,
        ));
    }
    out
}

/// Runs the turn of `model` on `conversation` through a [`Recorder`] and
/// returns the violations of rules 3, 4 and 6 (a [`Replayer`] under
/// `Exact` makes the same conversation from the same history, in the same
/// session, offline; the cassette must survive the file unchanged), or the
/// error the turn failed with.
async fn run_recorded(
    what: &str,
    session: &Definition<Bound>,
    model: ScriptedModel,
    conversation: &mut Vec<Message>,
) -> Result<Vec<Violation>, TurnError> {
    let cassette =
        std::env::temp_dir().join(format!("agent-loop-wire-real-{}.json", SessionId::new()));
    let recorder = Recorder::new(model, &cassette);
    let history = conversation.clone();
    let ran = session
        .run_turn(&recorder, conversation, &CancellationToken::new())
        .await;
    if let Err(error) = ran {
        let _ = std::fs::remove_file(&cassette);
        return Err(error);
    }
    let mut out = rules::calls_answered_once(conversation);
    out.extend(rules::within_provider_rules(conversation));
    let loaded = Cassette::load(&cassette).unwrap_or_else(|error| panic!("{what}: {error}"));
    let _ = std::fs::remove_file(&cassette);
    assert_eq!(
        loaded,
        recorder.cassette(),
        "{what}: the cassette lost data"
    );
    let mut replayed = history;
    session
        .run_turn(
            &Replayer::new(loaded, Strictness::Exact),
            &mut replayed,
            &CancellationToken::new(),
        )
        .await
        .unwrap_or_else(|error| panic!("{what}: the replay failed: {error}"));
    out.extend(rules::ids_deterministic(conversation, &replayed));
    if out.is_empty() {
        assert_eq!(&replayed, conversation, "{what}: the replay differs");
    }
    Ok(out)
}

/// The parts of a follow-up request the rule compares: ours, the request
/// the turn builds next (its `history`, the assistant message and results
/// it appended, each result holding what the recording client answered
/// for the same call, since our echo tools are not its tools, and what the
/// client sent after its results), and theirs, the recorded body's messages
/// array; and the ids of our calls the client may name its own way. A
/// follow-up chained with `previous_response_id` holds only what follows
/// the response: so does ours.
pub(crate) struct FollowUp {
    pub ours: Value,
    pub theirs: Value,
    pub renamable: BTreeSet<String>,
}

/// [`FollowUp`] of a turn that appended `turn` to `history`, for a
/// response whose calls the provider sent with the ids `sent`.
pub(crate) fn follow_up_of(
    format: Format,
    history: &[Message],
    turn: &[Message],
    sent: &[String],
    followup: &Value,
) -> Result<FollowUp, Violation> {
    let recorded = format
        .parse_request(followup)
        .map_err(|error| violation(Rule::Parses, "followup_request", error.to_string()))?
        .conversation;
    let is_chained = chained(followup);
    // The client's assistant message, its results, and what follows them.
    let (their_calls, rest): (Vec<String>, &[Message]) = if is_chained {
        (Vec::new(), &recorded[..])
    } else {
        let last = recorded
            .iter()
            .rposition(|message| matches!(message, Message::Assistant(_)))
            .ok_or_else(|| {
                violation(
                    Rule::FollowUp,
                    "followup_request",
                    "no assistant message: the response is not in it",
                )
            })?;
        (
            rules::call_ids(&recorded[last..=last]),
            &recorded[last + 1..],
        )
    };
    let answered = rest
        .iter()
        .take_while(|message| matches!(message, Message::Tool(_)))
        .count();
    let (their_results, after) = rest.split_at(answered);
    // The turn's assistant message and the results right after it.
    let Some(Message::Assistant(assistant)) = turn.first() else {
        return Err(violation(
            Rule::FollowUp,
            "turn",
            "the turn appended no assistant message",
        ));
    };
    let our_results = turn[1..]
        .iter()
        .take_while(|message| matches!(message, Message::Tool(_)));
    let our_ids: Vec<String> = assistant.tool_calls().map(|call| call.id.clone()).collect();
    let mut ours: Vec<Message> = if is_chained {
        Vec::new()
    } else {
        [history, &turn[..1]].concat()
    };
    for (position, result) in our_results.enumerate() {
        let Message::Tool(result) = result else {
            continue;
        };
        // The client's answer to the same call (else ours stays, and the
        // comparison shows what the client left unanswered).
        let theirs = their_calls.get(position).or(our_ids.get(position));
        let mut answer = their_results
            .iter()
            .filter_map(Message::as_tool_result)
            .find(|answer| Some(&answer.tool_call_id) == theirs)
            .unwrap_or(result)
            .clone();
        answer.tool_call_id.clone_from(&result.tool_call_id);
        ours.push(Message::Tool(answer));
    }
    ours.extend_from_slice(after);
    let exported = format
        .export_request(&ours, &[])
        .map_err(|error| violation(Rule::FollowUp, "export", error.to_string()))?;
    // A request pairs a result with its call by id only: where it sends
    // the history whole, the client may name every call its own way; a
    // chained one answers the stored calls, by the provider's ids, and
    // may rename only those the turn minted.
    let renamable = our_ids
        .iter()
        .enumerate()
        .filter(|(position, id)| !is_chained || sent.get(*position) != Some(id))
        .map(|(_, id)| id.clone())
        .collect();
    let mut theirs = followup[messages_key(format)].clone();
    // Responses: the system prompt as `instructions` is the system message
    // that parsing reads it as, first in `input`.
    if format == Format::Responses
        && !is_chained
        && let Value::Array(input) = &mut theirs
    {
        match &followup["instructions"] {
            Value::String(text) if !text.trim().is_empty() => {
                input.insert(0, json!({ "role": "system", "content": text }));
            }
            Value::Array(items) => {
                input.splice(0..0, items.iter().cloned());
            }
            _ => {}
        }
    }
    Ok(FollowUp {
        ours: exported[messages_key(format)].clone(),
        theirs,
        renamable,
    })
}

/// Rule 9 for a turn that appended `turn` to `history`.
fn follow_up_violations(
    format: Format,
    history: &[Message],
    turn: &[Message],
    sent: &[String],
    followup: &Value,
) -> Vec<Violation> {
    match follow_up_of(format, history, turn, sent, followup) {
        Ok(compared) => rules::follow_up(
            format,
            &compared.ours,
            &compared.theirs,
            &compared.renamable,
        ),
        Err(violation) => vec![violation],
    }
}

/// Every `<name>.<role>.json` of `kind`, by role, in `format`.
async fn check_kind(format: Format, kind: &str) {
    let dir = Path::new(FIXTURES).join(kind);
    for path in files(kind) {
        let what = path.display().to_string();
        let (name, role) = name_and_role(&path);
        let violations = match role.as_str() {
            "request" | "followup_request" => request_violations(format, &read(&path)).await,
            "response" => match format.parse_response(&read(&path)) {
                Ok(response) => {
                    response_violations(format, &what, &response, &Siblings::of(&dir, &name)).await
                }
                Err(error) => vec![violation(Rule::Parses, "response", error.to_string())],
            },
            role => panic!("{what}: unknown role {role:?}"),
        };
        assert_holds(&what, &violations);
    }
}

#[tokio::test]
async fn every_openai_payload_keeps_the_rules() {
    check_kind(Format::OpenAi, "openai").await;
}

#[tokio::test]
async fn every_anthropic_payload_keeps_the_rules() {
    check_kind(Format::Anthropic, "anthropic").await;
    check_kind(Format::Anthropic, "anthropic-adaptive").await;
}

#[tokio::test]
async fn every_openai_responses_payload_keeps_the_rules() {
    check_kind(Format::Responses, "openai-responses").await;
}

/// The two shapes of the round trip rule no recording here has: every
/// call id `""` (Gemini's OpenAI-compatible endpoint) and a call without
/// `arguments` (OpenRouter). Made from a real response by changing only
/// those fields: every rule holds, in every format.
#[tokio::test]
async fn empty_ids_and_missing_arguments_keep_the_rules() {
    let recorded = Path::new(FIXTURES).join("openai/oai_py_parallel.response.json");
    let mut body = read(&recorded);
    let calls = body["choices"][0]["message"]["tool_calls"]
        .as_array_mut()
        .expect("the recording has calls");
    assert!(calls.len() >= 2, "parallel calls");
    for call in calls.iter_mut() {
        call["id"] = json!("");
    }
    calls[0]["function"]
        .as_object_mut()
        .expect("a function")
        .remove("arguments");
    // Parsing keeps what the provider sent.
    let response = Format::OpenAi.parse_response(&body).expect("parses");
    let parsed: Vec<(&str, &str)> = response
        .message
        .tool_calls()
        .map(|call| (call.id.as_str(), call.arguments.as_str()))
        .collect();
    assert_eq!(parsed[0], ("", ""));
    assert!(parsed.iter().all(|(id, _)| id.is_empty()));
    for format in Format::ALL {
        let violations = round_trip_violations(
            format,
            &[
                Message::user("q"),
                Message::Assistant(response.message.clone()),
            ],
            &[],
        );
        assert_holds(&format!("{format:?}: derived"), &violations);
    }
    // And the whole data-driven check: a turn runs it, minting ids.
    let violations =
        response_violations(Format::OpenAi, "derived", &response, &Siblings::default()).await;
    assert_holds("derived", &violations);
}

#[tokio::test]
async fn every_mcp_tool_list_binds_under_mcp_and_sanitised_default_rules() {
    for path in files("mcp") {
        let what = path.display().to_string();
        let violations = mcp_violations(&read(&path)).await;
        assert_holds(&what, &violations);
    }
}

/// Rules 1, 2 and 7 on an MCP `tools/list` result.
pub(crate) async fn mcp_violations(body: &Value) -> Vec<Violation> {
    let listed = match mcp::parse_list_tools_result(body) {
        Ok(listed) if !listed.tools.is_empty() => listed,
        Ok(_) => return vec![violation(Rule::Parses, "tools", "no tools")],
        Err(error) => return vec![violation(Rule::Parses, "result", error.to_string())],
    };
    let mut out = Vec::new();
    if let Err(error) = bind(listed.tools.clone(), NameRules::Mcp).await {
        out.push(violation(
            Rule::ToolsBind,
            "tools",
            format!("MCP rules: {error}"),
        ));
    }
    let sanitised: Vec<ToolInfo> = listed
        .tools
        .iter()
        .map(|info| {
            let mut sanitised = info.clone();
            sanitised.name = NameRules::default().sanitize(&info.name);
            sanitised
        })
        .collect();
    if let Err(error) = bind(sanitised, NameRules::default()).await {
        out.push(violation(
            Rule::ToolsBind,
            "tools",
            format!("default rules: {error}"),
        ));
    }
    let exported = serde_json::to_value(mcp::export_list_tools_result(
        &listed.tools,
        listed.next_cursor.clone(),
    ))
    .expect("serialises");
    match mcp::parse_list_tools_result(&exported) {
        Ok(again) if again.tools != listed.tools => {
            let (listed, again) = (
                serde_json::to_value(&listed.tools).expect("serialises"),
                serde_json::to_value(&again.tools).expect("serialises"),
            );
            out.extend(rules::differences(
                Rule::RoundTrip,
                "tools",
                &listed,
                &again,
            ));
        }
        Ok(again) if again.next_cursor != listed.next_cursor => out.push(violation(
            Rule::RoundTrip,
            "nextCursor",
            format!(
                "{:?} came back as {:?}",
                listed.next_cursor, again.next_cursor
            ),
        )),
        Ok(_) => {}
        Err(error) => out.push(violation(
            Rule::RoundTrip,
            "export",
            format!("the export does not parse: {error}"),
        )),
    }
    out
}

// ---------------------------------------------------------------- streams

/// The provider's message of a failed assembly, or the error's text.
fn provider_message(error: &agent_loop::wire::WireError) -> String {
    match &error.kind {
        agent_loop::wire::WireErrorKind::Provider { message, .. } => message.clone(),
        _ => error.to_string(),
    }
}

/// What a Responses stream carries, read from its events by the Responses
/// streaming reference: the response of its last `response.completed` or
/// `response.incomplete` event, whole; when that response's `output` is
/// missing or empty (compatible servers), the items of the stream, each
/// the last `response.output_item.done` (else `.added`) item at its
/// `output_index`, in the order the indexes came (the
/// `stream::responses` docs); or the provider's error of an `error` or
/// `response.failed` event. An event is named by its SSE `event:` field,
/// or, without one, by its payload's `type`; a payload that is not JSON
/// (the `[DONE]` some compatible servers end with) says nothing.
pub(crate) fn responses_carried(events: &[(String, String)]) -> Result<Value, Option<String>> {
    let mut last: Option<Value> = None;
    let mut items: Vec<(u64, Value)> = Vec::new();
    for (event, data) in events {
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        let name = match event.trim() {
            "" | "message" => value["type"].as_str().unwrap_or_default(),
            named => named,
        };
        let message = |error: &Value| {
            error["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string())
        };
        match name {
            "error" => {
                let error = value.get("error").unwrap_or(&value);
                return Err(Some(message(error)));
            }
            "response.failed" => return Err(Some(message(&value["response"]["error"]))),
            "response.completed" | "response.incomplete" => {
                last = Some(value["response"].clone());
            }
            "response.output_item.added" | "response.output_item.done" => {
                let index = value["output_index"].as_u64().unwrap_or(items.len() as u64);
                match items.iter_mut().find(|(at, _)| *at == index) {
                    Some((_, item)) => *item = value["item"].clone(),
                    None => items.push((index, value["item"].clone())),
                }
            }
            _ => {}
        }
    }
    let mut response = last.ok_or(None)?;
    if response["output"].as_array().is_none_or(Vec::is_empty) {
        response["output"] = Value::Array(items.into_iter().map(|(_, item)| item).collect());
    }
    Ok(response)
}

/// Every violation of a recorded Responses stream (`events`) and its
/// siblings in `dir`: rule 10, then those of the response it assembles to.
pub(crate) async fn responses_stream_violations(
    what: &str,
    dir: &Path,
    name: &str,
    events: &[(String, String)],
) -> Vec<Violation> {
    use agent_loop::wire::stream::responses::EventAssembler;
    let mut stream = EventAssembler::new();
    let mut failed = None;
    for (event, data) in events {
        if let Err(error) = stream.push(event, data) {
            failed = Some(error);
            break;
        }
    }
    let got = match failed {
        Some(error) => Err(error),
        None => stream.finish(),
    };
    let carried = match responses_carried(events) {
        Ok(body) => match Format::Responses.parse_response(&body) {
            Ok(response) => rules::Carried::Response(response),
            Err(error) => return vec![violation(Rule::Parses, "response", error.to_string())],
        },
        Err(Some(message)) => rules::Carried::Error(message),
        Err(None) => rules::Carried::Nothing,
    };
    let got = got.map_err(|error| provider_message(&error));
    let mut out = rules::stream_carries(&carried, &got);
    if let (Ok(response), rules::Carried::Response(_)) = (&got, &carried) {
        out.extend(
            response_violations(Format::Responses, what, response, &Siblings::of(dir, name)).await,
        );
    }
    out
}

#[tokio::test]
async fn every_openai_responses_stream_keeps_the_rules() {
    let dir = Path::new(FIXTURES).join("openai-responses");
    let mut streams: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
        .collect();
    streams.sort();
    assert!(!streams.is_empty());
    for path in streams {
        let what = path.display().to_string();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let events = sse_events(&std::fs::read_to_string(&path).unwrap());
        let violations = responses_stream_violations(&what, &dir, &name, &events).await;
        assert_holds(&what, &violations);
    }
}

/// The Chat Completions and Messages stream kinds (`openai-stream`,
/// `anthropic-stream`): each request and follow-up held to the rules of a
/// request; each stream assembled by the crate's assembler, and what it
/// answers held to the rules of a response, with its siblings (rule 10,
/// served over HTTP, is `wire_real_streams`'). A stream that carries the
/// provider's error has no turn to run.
#[tokio::test]
async fn every_chat_and_messages_stream_recording_keeps_the_rules() {
    for (format, kind) in [
        (Format::OpenAi, "openai-stream"),
        (Format::Anthropic, "anthropic-stream"),
    ] {
        let dir = Path::new(FIXTURES).join(kind);
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|error| panic!("{kind}: {error}"))
            .map(|entry| entry.expect("entry").path())
            .collect();
        paths.sort();
        for path in paths {
            let what = path.display().to_string();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let violations = if let Some(name) = file.strip_suffix(".sse") {
                let events = sse_events(&std::fs::read_to_string(&path).unwrap());
                match assemble(format, &events) {
                    Ok(response) => {
                        let siblings = Siblings::of(&dir, name);
                        response_violations(format, &what, &response, &siblings).await
                    }
                    Err(_) => continue, // the provider's error
                }
            } else if file.ends_with("request.json") {
                request_violations(format, &read(&path)).await
            } else {
                continue; // an error body (`wire_real_streams`)
            };
            assert_holds(&what, &violations);
        }
    }
}

/// The crate's assembly of a Chat Completions or Messages stream.
fn assemble(
    format: Format,
    events: &[(String, String)],
) -> Result<ModelResponse, agent_loop::wire::WireError> {
    if format == Format::OpenAi {
        let mut stream = stream::openai::ChunkAssembler::new();
        for (event, data) in events {
            stream.push_event(event, data)?;
        }
        stream.finish()
    } else {
        let mut stream = stream::anthropic::EventAssembler::new();
        for (event, data) in events {
            stream.push(event, data)?;
        }
        stream.finish()
    }
}

// ----------------------------------------------------------------- Gemini

/// The Gemini recordings: `<name>.request.json`, `.response.json`,
/// `.followup_request.json`, `.sse` (`streamGenerateContent?alt=sse`) and
/// `.stream.json` (the JSON array `streamGenerateContent` sends without
/// `alt=sse`), each held to its rules (module docs); a stream assembles to
/// its merged chunks.
#[tokio::test]
async fn every_gemini_payload_keeps_the_rules() {
    let dir = Path::new(FIXTURES).join("gemini");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the gemini fixtures")
        .map(|entry| entry.expect("entry").path())
        .collect();
    paths.sort();
    let mut streams = 0;
    for path in paths {
        let what = path.display().to_string();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let violations = if let Some(name) = file.strip_suffix(".sse") {
            streams += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let mut assembler = stream::gemini::ChunkAssembler::new();
            let pushed = text
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .try_for_each(|data| assembler.push(data.trim()).map(drop));
            match pushed {
                Ok(()) => gemini_stream_violations(&what, &dir, name, assembler).await,
                Err(error) => vec![violation(Rule::StreamCarries, "events", error.to_string())],
            }
        } else if let Some(name) = file.strip_suffix(".stream.json") {
            streams += 1;
            let chunks = read(&path);
            let mut assembler = stream::gemini::ChunkAssembler::new();
            let pushed = chunks
                .as_array()
                .into_iter()
                .flatten()
                .try_for_each(|chunk| assembler.push_chunk(chunk).map(drop));
            match pushed {
                Ok(()) => gemini_stream_violations(&what, &dir, name, assembler).await,
                Err(error) => vec![violation(Rule::StreamCarries, "chunks", error.to_string())],
            }
        } else if file.ends_with(".json") {
            let (name, role) = name_and_role(&path);
            match role.as_str() {
                "request" | "followup_request" => {
                    request_violations(Format::Gemini, &read(&path)).await
                }
                "response" => match gemini::parse_response(&read(&path)) {
                    Ok(response) => {
                        let siblings = Siblings::of(&dir, &name);
                        response_violations(Format::Gemini, &what, &response, &siblings).await
                    }
                    Err(error) => vec![violation(Rule::Parses, "response", error.to_string())],
                },
                role => panic!("{what}: unknown role {role:?}"),
            }
        } else {
            continue;
        };
        assert_holds(&what, &violations);
    }
    assert!(streams > 0, "no Gemini streams");
}

/// Rule 10 for a Gemini stream (it assembles to what its chunks merged
/// parse to), then the rules of the response it assembles to.
async fn gemini_stream_violations(
    what: &str,
    dir: &Path,
    name: &str,
    assembler: stream::gemini::ChunkAssembler,
) -> Vec<Violation> {
    let merged = assembler.merged();
    let got = assembler.finish().map_err(|error| provider_message(&error));
    let carried = match gemini::parse_response(&merged) {
        Ok(response) => rules::Carried::Response(response),
        Err(error) => rules::Carried::Error(provider_message(&error)),
    };
    let mut out = rules::stream_carries(&carried, &got);
    if let Ok(response) = &got {
        out.extend(
            response_violations(Format::Gemini, what, response, &Siblings::of(dir, name)).await,
        );
    }
    out
}
