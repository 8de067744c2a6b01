//! Every recorded provider payload under `tests/fixtures/wire-real/`, data
//! driven: adding a recorded payload is adding a file.
//!
//! Files are `<format>/<name>.<role>.json` with format `openai` or
//! `anthropic` and role `request`, `response` or `followup_request`, and
//! `mcp/<name>.json` for MCP `tools/list` results. By format and role each
//! file must:
//!
//! - **request**: parse (conversation and tools); its function tools bind;
//!   its conversation and its tool declarations round-trip (below); its
//!   conversation exports within both providers' rules.
//! - **response**: parse; round-trip as an assistant message (below); drive
//!   a turn whose conversation exports within both providers' rules. With a
//!   `followup_request` of the same name, the turn starts from the
//!   follow-up's history, and the assistant message it appends equals the
//!   one the real client sent back, with the results under the same ids
//!   (but where the provider sent an empty id: there the turn minted one
//!   and the client its own, so theirs is renamed to ours).
//!
//! **The round-trip property**, which holds for every recording of these
//! kinds, not only the files here. Parsing keeps what the provider sent
//! (an empty id stays `""`, missing arguments stay `""`; the turn runner
//! mints ids, deterministically per session); an export writes only what
//! the target format accepts. So parse → export → parse gives the parsed
//! value back except exactly where the export must normalise: a call id the
//! format does not accept ([`id_is_valid`]: Gemini's OpenAI endpoint sends
//! `""`) comes back as one it does, unique in the export, in the call and
//! the results that answer it; blank arguments (OpenRouter sends none) come
//! back as `{}`, as they ran (and where a format sends arguments as an
//! object, Anthropic's and Gemini's, an object comes back as its compact
//! JSON text). And a second round changes nothing: what an export wrote is
//! a fixpoint of parse → export.
//! - **MCP**: bind under the MCP name rules, and under the default rules
//!   after sanitising the names; round-trip.
//!
//! Sources and licenses: `tests/fixtures/wire-real/SOURCES.md`.

use std::collections::BTreeSet;

use agent_loop::cassette::{Cassette, Recorder, Replayer, Strictness};
use std::path::{Path, PathBuf};

use crate::arbitrary_json::sse_events;
use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::tool::{self, BoxError, NameRules, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::wire::{ToolDeclaration, gemini, id_is_valid, mcp, stream};
use agent_loop::{Bindings, LoopId, SessionId};
use agent_loop::{Bound, Definition};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::properties::wire::Format;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wire-real");

fn files(format: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(FIXTURES).join(format))
        .unwrap_or_else(|error| panic!("{FIXTURES}/{format}: {error}"))
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no payloads under {format}");
    files
}

fn read(path: &Path) -> Value {
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

fn check_rules(what: &str, conversation: &[Message]) {
    let violations = crate::wire_rules::export_violations(conversation);
    assert!(violations.is_empty(), "{what}: {violations:#?}");
}

async fn check_request(format: Format, path: &Path) {
    let what = path.display().to_string();
    let body = read(path);
    let parsed = format
        .parse_request(&body)
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    let tools = functions(&parsed.tools);
    if !tools.is_empty() {
        bind(tools, NameRules::default())
            .await
            .unwrap_or_else(|error| panic!("{what}: the function tools do not bind: {error}"));
    }
    let exported = format
        .export_request(&parsed.conversation, &parsed.tools)
        .expect("its own tools export");
    let again = format
        .parse_request(&exported)
        .unwrap_or_else(|error| panic!("{what}: the export does not parse: {error}"));
    let mut expected = parsed.clone();
    expected.conversation = as_exported(format, &parsed.conversation, &again.conversation, &what);
    assert_eq!(again, expected, "{what}: parse → export → parse changed it");
    let twice = format
        .export_request(&again.conversation, &again.tools)
        .expect("its own tools export");
    assert_eq!(
        twice, exported,
        "{what}: a second export differs from the first"
    );
    // A request chained with `previous_response_id` (Responses) holds only
    // what follows the stored response: its history is on the server.
    if !body
        .get("previous_response_id")
        .is_some_and(Value::is_string)
    {
        check_rules(&what, &parsed.conversation);
    }
}

/// A message round-tripped through a messages array of its format:
/// parse(export([message])).
fn round_trip_message(format: Format, message: &Message) -> Message {
    let exported = format
        .export_request(std::slice::from_ref(message), &[])
        .expect("no tools to export");
    let parsed = format
        .parse_request(&exported)
        .expect("an exported assistant message parses");
    parsed
        .conversation
        .into_iter()
        .next()
        .expect("the exported message is there")
}

fn call_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(|assistant| assistant.tool_calls())
        .map(|call| call.id.clone())
        .collect()
}

/// `original` as an export must change it (the module's round-trip
/// property), given what came `back` from parse → export → parse: each
/// call id `format` does not accept replaced by the one the export gave it
/// (which must be valid, and unique in `back`), in the call and in the
/// result that answers it; blank arguments as `{}`; for the formats that
/// send arguments as an object, an object as its compact text.
fn as_exported(format: Format, original: &[Message], back: &[Message], what: &str) -> Vec<Message> {
    let back_ids = call_ids(back);
    let unique: BTreeSet<&String> = back_ids.iter().collect();
    assert_eq!(
        unique.len(),
        back_ids.len(),
        "{what}: the export repeats a call id: {back_ids:?}"
    );
    for id in &back_ids {
        assert!(
            id_is_valid(format.wire_format(), id),
            "{what}: the export sent the id {id:?}"
        );
    }
    let mut back_ids = back_ids.into_iter();
    // (the id sent, the id exported) of calls renamed and not yet answered.
    let mut renamed: Vec<(String, String)> = Vec::new();
    let mut expected = original.to_vec();
    for (index, message) in expected.iter_mut().enumerate() {
        if format == Format::Responses
            && let (Message::Assistant(assistant), Some(Message::Assistant(sent))) =
                (&mut *message, back.get(index))
        {
            as_input_message(assistant, sent);
        }
        match message {
            Message::Assistant(assistant) => {
                for call in assistant.tool_calls_mut() {
                    let Some(id) = back_ids.next() else { break };
                    if !id_is_valid(format.wire_format(), &call.id) {
                        renamed.push((std::mem::replace(&mut call.id, id.clone()), id));
                    }
                    blank_as_object(call);
                    // Anthropic and Gemini carry arguments as a JSON object,
                    // not as text: an object comes back as its compact text.
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

/// The Responses export's rule for an assistant message it sends without
/// its item `id`: an input message whose content is one string (the
/// published schema requires `id` and `status` of an output message), so
/// its text parts come back with their text and the item's `type` only.
/// `sent` is the message as it came back.
fn as_input_message(
    assistant: &mut agent_loop::conversation::AssistantMessage,
    sent: &agent_loop::conversation::AssistantMessage,
) {
    use agent_loop::conversation::{ContentPart, Extras, WireFormat};
    let item = |part: &ContentPart| match part {
        ContentPart::Text(text) => text
            .extras
            .fields_for(WireFormat::OpenAiResponses)
            .and_then(|fields| fields.get("item"))
            .cloned(),
        _ => None,
    };
    // Decided from the original, not from what came back: a message goes
    // without its `id` when no reasoning of its goes before it.
    let reasons = assistant
        .content
        .iter()
        .any(|part| matches!(part, ContentPart::Reasoning(_)));
    let texts = sent.content.iter().filter_map(item).count();
    if reasons || texts == 0 {
        return;
    }
    for part in &mut assistant.content {
        let kind = item(part).and_then(|item| item.get("type").cloned());
        if let ContentPart::Text(text) = part {
            let mut fields = serde_json::Map::new();
            if let Some(kind) = kind {
                fields.insert("item".into(), serde_json::json!({ "type": kind }));
            }
            text.extras = Extras::new(WireFormat::OpenAiResponses, fields);
        }
    }
}

/// The round-trip property (module docs) of one parsed assistant message.
fn check_round_trip(format: Format, what: &str, message: &Message) {
    let back = round_trip_message(format, message);
    let expected = as_exported(
        format,
        std::slice::from_ref(message),
        std::slice::from_ref(&back),
        what,
    );
    assert_eq!(
        back, expected[0],
        "{what}: parse → export → parse changed the message"
    );
    assert_eq!(
        round_trip_message(format, &back),
        back,
        "{what}: a second round changed what the export wrote"
    );
}

/// Blank or `null` arguments as `{}`, as they ran and as an export sends
/// them.
fn blank_as_object(call: &mut agent_loop::conversation::ToolCall) {
    if agent_loop_core::support::json::no_arguments(&call.arguments) {
        call.arguments = "{}".to_owned();
    }
}

/// [`blank_as_object`] on every call of `messages`.
fn blank_arguments_as_object(messages: &mut [Message]) {
    for message in messages {
        if let Message::Assistant(assistant) = message {
            assistant.tool_calls_mut().for_each(blank_as_object);
        }
    }
}

/// A recorded follow-up (`theirs`, from the assistant message on) with
/// the ids the client minted, where the provider sent an empty one,
/// renamed to the ones the turn minted (`ours`), in the calls and the
/// results; and blank arguments as `{}` on both sides.
fn adopt_minted_ids(provider: &Message, ours: &mut [Message], theirs: &mut [Message]) {
    let minted: Vec<usize> = provider
        .as_assistant()
        .into_iter()
        .flat_map(|assistant| assistant.tool_calls())
        .enumerate()
        .filter(|(_, call)| call.id.is_empty())
        .map(|(position, _)| position)
        .collect();
    let our_ids = call_ids(&ours[..1]);
    let mut renamed: Vec<(String, String)> = Vec::new();
    if let Some(Message::Assistant(assistant)) = theirs.first_mut() {
        for (position, call) in assistant.tool_calls_mut().enumerate() {
            if minted.contains(&position)
                && let Some(id) = our_ids.get(position)
            {
                renamed.push((std::mem::replace(&mut call.id, id.clone()), id.clone()));
            }
        }
    }
    for message in theirs.iter_mut().skip(1) {
        if let Message::Tool(result) = message
            && let Some(position) = renamed
                .iter()
                .position(|(sent, _)| *sent == result.tool_call_id)
        {
            result.tool_call_id = renamed.remove(position).1;
        }
    }
    blank_arguments_as_object(ours);
    blank_arguments_as_object(theirs);
}

/// Runs the turn of `model` on `conversation` through a [`Recorder`],
/// checks it within the providers' rules, then that its cassette survives
/// the file unchanged and that a [`Replayer`] under `Exact` makes the same
/// conversation from the same history, offline.
async fn run_recorded(
    what: &str,
    session: &Definition<Bound>,
    model: ScriptedModel,
    conversation: &mut Vec<Message>,
) {
    let cassette =
        std::env::temp_dir().join(format!("agent-loop-wire-real-{}.json", SessionId::new()));
    let recorder = Recorder::new(model, &cassette);
    let history = conversation.clone();
    session
        .run_turn(&recorder, conversation, &CancellationToken::new())
        .await
        .unwrap_or_else(|error| panic!("{what}: the turn failed: {error}"));
    check_rules(what, conversation);
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
    assert_eq!(&replayed, conversation, "{what}: the replay differs");
}

async fn check_response(format: Format, path: &Path) {
    check_response_body(format, path, &read(path)).await;
}

/// [`check_response`] on `body`, with the siblings of `path`.
async fn check_response_body(format: Format, path: &Path, body: &Value) {
    let what = path.display().to_string();
    let (name, _) = name_and_role(path);
    let response = format
        .parse_response(body)
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    check_round_trip(format, &what, &Message::Assistant(response.message.clone()));

    let sibling = |role: &str| path.with_file_name(format!("{name}.{role}.json"));
    let followup = sibling("followup_request");
    let followup = followup.exists().then(|| {
        format
            .parse_request(&read(&followup))
            .expect("the follow-up parses")
    });
    let request = sibling("request");
    let request = request.exists().then(|| {
        format
            .parse_request(&read(&request))
            .expect("the request parses")
    });

    // The history the response answers: the follow-up's up to its last
    // assistant message, else the request's, else one user message.
    let (mut conversation, expected) = match &followup {
        Some(followup) => {
            let last = followup
                .conversation
                .iter()
                .rposition(|m| matches!(m, Message::Assistant(_)))
                .expect("a follow-up holds the assistant message");
            (
                followup.conversation[..last].to_vec(),
                Some(&followup.conversation[last..]),
            )
        }
        None => (
            request
                .as_ref()
                .map(|r| r.conversation.clone())
                .unwrap_or_else(|| vec![Message::user("Go on.")]),
            None,
        ),
    };

    // The tools the client offered, or echo tools named after the calls.
    let offered: Vec<ToolInfo> = followup
        .as_ref()
        .or(request.as_ref())
        .map(|r| functions(&r.tools))
        .unwrap_or_default();
    let mut called: BTreeSet<String> = response
        .message
        .tool_calls()
        .map(|c| c.name.clone())
        .collect();
    for info in &offered {
        called.remove(&info.name);
    }
    let tools: Vec<ToolInfo> = offered
        .into_iter()
        .chain(
            called
                .into_iter()
                .filter(|name| NameRules::default().check(name).is_ok())
                .map(|name| ToolInfo::new(name, "", json!({ "type": "object" }))),
        )
        .collect();
    let session = bind(tools, NameRules::default())
        .await
        .unwrap_or_else(|error| panic!("{what}: {error}"));

    let start = conversation.len();
    let model = ScriptedModel::new([response.clone(), ModelResponse::answer("Done.")]);
    run_recorded(&what, &session, model, &mut conversation).await;

    if let Some(expected) = expected {
        let results_end = conversation.len() - 1; // the final answer
        let mut theirs = expected.to_vec();
        let mut ours = conversation[start..results_end].to_vec();
        adopt_minted_ids(
            &Message::Assistant(response.message.clone()),
            &mut ours,
            &mut theirs,
        );
        // The assistant message goes back as the real client sent it:
        // reasoning first and signed, ids and names unchanged.
        assert_eq!(ours[0], theirs[0], "{what}: the assistant message differs");
        let ids = |messages: &[Message]| -> Vec<String> {
            messages
                .iter()
                .filter_map(Message::as_tool_result)
                .map(|result| result.tool_call_id.clone())
                .collect()
        };
        assert_eq!(
            ids(&ours[1..]),
            ids(&theirs[1..]),
            "{what}: the results answer other ids"
        );
        // And the request it makes now exports as the real one did.
        let history = &conversation[..start];
        let ours = format
            .export_request(&[history, &ours].concat(), &[])
            .expect("no tools to export");
        let theirs = format
            .export_request(&[history, &theirs].concat(), &[])
            .expect("no tools to export");
        let last_assistant = |body: &Value| -> Value {
            body["messages"]
                .as_array()
                .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "assistant"))
                .cloned()
                .unwrap_or(Value::Null)
        };
        assert_eq!(
            last_assistant(&ours),
            last_assistant(&theirs),
            "{what}: the exported assistant message differs"
        );
    }
}

#[tokio::test]
async fn every_openai_payload_parses_binds_runs_and_round_trips() {
    for path in files("openai") {
        match name_and_role(&path).1.as_str() {
            "request" | "followup_request" => check_request(Format::OpenAi, &path).await,
            "response" => check_response(Format::OpenAi, &path).await,
            role => panic!("{}: unknown role {role:?}", path.display()),
        }
    }
}

/// The two shapes the round-trip property names, which no recording here
/// has: every call id `""` (Gemini's OpenAI-compatible endpoint) and a
/// call without `arguments` (OpenRouter). Made from a real response by
/// changing only those fields.
#[tokio::test]
async fn empty_ids_and_missing_arguments_keep_the_round_trip_property() {
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
    // The export sends valid, distinct ids and `{}`; a second round is still.
    let back = round_trip_message(
        Format::OpenAi,
        &Message::Assistant(response.message.clone()),
    );
    let ids = call_ids(std::slice::from_ref(&back));
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());
    assert!(ids.iter().all(|id| !id.is_empty()));
    assert_eq!(
        back.as_assistant()
            .and_then(|a| a.tool_calls().next())
            .map(|c| c.arguments.as_str()),
        Some("{}")
    );
    for format in Format::ALL {
        check_round_trip(
            format,
            &format!("{format:?}: derived"),
            &Message::Assistant(response.message.clone()),
        );
    }
    // And the whole data-driven check: a turn runs it, minting ids.
    check_response_body(
        Format::OpenAi,
        &recorded.with_file_name("derived.response.json"),
        &body,
    )
    .await;
}

#[tokio::test]
async fn every_anthropic_payload_parses_binds_runs_and_round_trips() {
    for path in files("anthropic") {
        match name_and_role(&path).1.as_str() {
            "request" | "followup_request" => check_request(Format::Anthropic, &path).await,
            "response" => check_response(Format::Anthropic, &path).await,
            role => panic!("{}: unknown role {role:?}", path.display()),
        }
    }
}

#[tokio::test]
async fn every_mcp_tool_list_binds_under_mcp_and_sanitised_default_rules() {
    for path in files("mcp") {
        let what = path.display().to_string();
        let body = read(&path);
        let listed = mcp::parse_list_tools_result(&body).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(!listed.tools.is_empty(), "{what}: no tools");
        bind(listed.tools.clone(), NameRules::Mcp)
            .await
            .unwrap_or_else(|error| panic!("{what}: MCP rules: {error}"));
        let sanitised: Vec<ToolInfo> = listed
            .tools
            .iter()
            .map(|info| {
                let mut sanitized = info.clone();
                sanitized.name = NameRules::default().sanitize(&info.name);
                sanitized
            })
            .collect();
        bind(sanitised, NameRules::default())
            .await
            .unwrap_or_else(|error| panic!("{what}: default rules: {error}"));
        let exported = serde_json::to_value(mcp::export_list_tools_result(
            &listed.tools,
            listed.next_cursor.clone(),
        ))
        .expect("serialises");
        let again = mcp::parse_list_tools_result(&exported).expect("the export parses");
        assert_eq!(again, listed, "{what}: parse → export → parse changed it");
    }
}

// ------------------------------------------------------ OpenAI Responses

/// A Responses `input` as the follow-up comparison sees it: application
/// instructions (`system`/`developer` messages, which the recording
/// clients sent as `instructions`) and blank assistant messages left out,
/// `status` and the `id` of calls and messages (which clients send or not,
/// see `wire_rules`) removed, a one-part `input_text` content as its text,
/// a missing reasoning `summary` as `[]`, arguments as JSON values, and
/// call ids renamed `c0`, `c1`, … in order of appearance.
fn comparable(input: &[Value]) -> Vec<Value> {
    let mut ids: Vec<String> = Vec::new();
    input
        .iter()
        .filter(|item| !matches!(item["role"].as_str(), Some("system" | "developer")))
        .filter(|item| {
            !(item["role"] == "assistant"
                && item["content"]
                    .as_str()
                    .is_some_and(|t| t.trim().is_empty()))
        })
        .map(|item| {
            let mut item = item.as_object().cloned().unwrap_or_default();
            item.remove("status");
            if matches!(
                item.get("type").and_then(Value::as_str),
                Some("function_call")
            ) || item.get("role").is_some()
            {
                item.remove("id");
            }
            if item.get("type").and_then(Value::as_str) == Some("reasoning") {
                item.entry("summary").or_insert_with(|| json!([]));
            }
            if let Some(Value::Array(parts)) = item.get("content")
                && let [part] = parts.as_slice()
                && part["type"] == "input_text"
                && part.as_object().is_some_and(|p| p.len() == 2)
            {
                let text = part["text"].clone();
                item.insert("content".into(), text);
            }
            if let Some(Value::String(arguments)) = item.get("arguments") {
                let parsed = serde_json::from_str(arguments).unwrap_or(Value::Null);
                item.insert("arguments".into(), parsed);
            }
            if let Some(Value::String(id)) = item.get("call_id") {
                let position = ids.iter().position(|seen| seen == id).unwrap_or_else(|| {
                    ids.push(id.clone());
                    ids.len() - 1
                });
                item.insert("call_id".into(), json!(format!("c{position}")));
            }
            Value::Object(item)
        })
        .collect()
}

/// Drives a turn on a recorded Responses answer from the recorded
/// request's history; when a follow-up was recorded, the request the turn
/// makes next (with the recorded tool outputs) equals it, up to the
/// renaming of ids and the differences [`comparable`] removes; with
/// `previous_response_id`, only the items after the answer are compared.
async fn check_responses_turn(what: &str, dir: &Path, name: &str, response: &ModelResponse) {
    let format = Format::Responses;
    let sibling = |role: &str| dir.join(format!("{name}.{role}.json"));
    let request = sibling("request");
    let request = request.exists().then(|| read(&request));
    let followup = sibling("followup_request");
    let followup = followup.exists().then(|| read(&followup));
    let mut conversation = match &request {
        Some(body) => {
            format
                .parse_request(body)
                .unwrap_or_else(|error| panic!("{what}: the request: {error}"))
                .conversation
        }
        None => vec![Message::user("Go on.")],
    };
    let offered: Vec<ToolInfo> = request
        .as_ref()
        .and_then(|body| format.parse_request(body).ok())
        .map(|parsed| functions(&parsed.tools))
        .unwrap_or_default();
    let mut names: BTreeSet<String> = response
        .message
        .tool_calls()
        .map(|c| c.name.clone())
        .filter(|name| NameRules::default().check(name).is_ok())
        .collect();
    for info in &offered {
        names.remove(&info.name);
    }
    let tools: Vec<ToolInfo> = offered
        .into_iter()
        .chain(
            names
                .into_iter()
                .map(|n| ToolInfo::new(n, "", json!({ "type": "object" }))),
        )
        .collect();
    let session = bind(tools, NameRules::default())
        .await
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    let start = conversation.len();
    let model = ScriptedModel::new([response.clone(), ModelResponse::answer("Done.")]);
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_or_else(|error| panic!("{what}: the turn failed: {error}"));
    check_rules(what, &conversation);
    let Some(followup) = followup else {
        return;
    };
    let theirs = followup["input"].as_array().cloned().unwrap_or_default();
    let theirs_parsed = agent_loop::wire::responses::parse_messages(&Value::Array(theirs.clone()))
        .unwrap_or_else(|error| panic!("{what}: the follow-up: {error}"));
    let mut recorded_outputs = theirs_parsed.iter().filter_map(Message::as_tool_result);
    // Our next request: the turn's messages up to its results, each result
    // holding the output the recording sent.
    let results_end = conversation.len() - 1;
    let mut ours_conversation = conversation[..results_end].to_vec();
    for message in &mut ours_conversation[start..] {
        if let Message::Tool(result) = message {
            let recorded = recorded_outputs
                .next()
                .unwrap_or_else(|| panic!("{what}: fewer outputs recorded than calls run"));
            result.content = recorded.content.clone();
            result.is_error = false;
        }
    }
    let chained = followup
        .get("previous_response_id")
        .is_some_and(Value::is_string);
    let ours_conversation = if chained {
        ours_conversation[start + 1..].to_vec()
    } else {
        ours_conversation
    };
    let ours = agent_loop::wire::responses::export_messages(&ours_conversation);
    let violations = crate::wire_rules::responses_violations(&Value::Array(ours.input.clone()));
    if !chained {
        assert!(violations.is_empty(), "{what}: {violations:#?}");
    }
    assert_eq!(
        comparable(&ours.input),
        comparable(&theirs),
        "{what}: the follow-up differs from the recorded one"
    );
}

#[tokio::test]
async fn every_openai_responses_payload_parses_binds_runs_and_round_trips() {
    let dir = Path::new(FIXTURES).join("openai-responses");
    for path in files("openai-responses") {
        let what = path.display().to_string();
        let (name, role) = name_and_role(&path);
        match role.as_str() {
            "request" | "followup_request" => {
                check_request(Format::Responses, &path).await;
                let body = read(&path);
                if let Some(tools) = body.get("tools") {
                    let parsed = Format::Responses.parse_tools(tools).expect("tools parse");
                    let exported = Format::Responses.export_tools(&parsed).expect("export");
                    let violations = crate::wire_rules::responses_tool_violations(&exported);
                    assert!(violations.is_empty(), "{what}: {violations:#?}");
                }
            }
            "response" => {
                let response = Format::Responses
                    .parse_response(&read(&path))
                    .unwrap_or_else(|error| panic!("{what}: {error}"));
                let conversation = [
                    Message::user("q"),
                    Message::Assistant(response.message.clone()),
                ];
                let exported = Format::Responses
                    .export_request(&conversation, &[])
                    .unwrap();
                let again = Format::Responses.parse_request(&exported).unwrap();
                let mut expected = response.message.clone();
                expected.extras = Default::default(); // the response id is no item field
                let expected = as_exported(
                    Format::Responses,
                    &[Message::Assistant(expected)],
                    &again.conversation[1..],
                    &what,
                );
                assert_eq!(again.conversation[1], expected[0], "{what}");
                check_responses_turn(&what, &dir, &name, &response).await;
            }
            role => panic!("{what}: unknown role {role:?}"),
        }
    }
}

#[tokio::test]
async fn every_openai_responses_stream_assembles_to_its_final_response_or_its_error() {
    use agent_loop::wire::stream::responses::EventAssembler;
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
        let mut stream = EventAssembler::new();
        let mut failed = None;
        for (event, data) in &events {
            if let Err(error) = stream.push(event, data) {
                failed = Some(error);
                break;
            }
        }
        let last = events.iter().rev().find_map(|(_, data)| {
            let value: Value = serde_json::from_str(data).ok()?;
            matches!(
                value["type"].as_str(),
                Some("response.completed" | "response.incomplete")
            )
            .then(|| value["response"].clone())
        });
        let error_event = events.iter().find_map(|(_, data)| {
            let value: Value = serde_json::from_str(data).ok()?;
            (value["type"] == "error" || value["type"] == "response.failed").then_some(value)
        });
        match (last, error_event) {
            (Some(last), None) => {
                assert!(failed.is_none(), "{what}: {failed:?}");
                let response = stream.finish().unwrap_or_else(|e| panic!("{what}: {e}"));
                let expected = Format::Responses.parse_response(&last).unwrap();
                assert_eq!(response, expected, "{what}");
                check_responses_turn(&what, &dir, &name, &response).await;
            }
            (_, Some(event)) => {
                let error = stream.finish().expect_err("the stream carries an error");
                let agent_loop::wire::WireErrorKind::Provider { message, .. } = &error.kind else {
                    panic!("{what}: {error:?}");
                };
                let sent = event["error"]["message"]
                    .as_str()
                    .or(event["message"].as_str())
                    .or(event["response"]["error"]["message"].as_str())
                    .unwrap_or_default();
                assert_eq!(message, sent, "{what}: the provider's message");
            }
            (None, None) => panic!("{what}: a stream without an end"),
        }
    }
}

/// The Gemini recordings: `<name>.request.json`, `.response.json`,
/// `.followup_request.json`, `.sse` (`streamGenerateContent?alt=sse`) and
/// `.stream.json` (the JSON array `streamGenerateContent` sends without
/// `alt=sse`). Requests as for the other formats; a response (or a stream,
/// assembled) parses, round-trips, drives a turn from its request's
/// history, and with a follow-up reproduces it: the contents our turn
/// exports, with the tool results taken from the recording, equal the
/// recorded ones up to a one-to-one mapping of ids (the recording clients
/// minted their own), with keys in either case, signatures compared by
/// their decoded bytes (pydantic re-encodes them URL-safe), blank text and
/// unsigned thought summaries left aside (the recording clients send a
/// blank `{"text": ""}`, and some do not replay thought summaries).
#[tokio::test]
async fn every_gemini_payload_parses_binds_runs_and_reproduces_its_follow_up() {
    let dir = Path::new(FIXTURES).join("gemini");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the gemini fixtures")
        .map(|entry| entry.expect("entry").path())
        .collect();
    paths.sort();
    let mut streams = 0;
    for path in paths {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(name) = file.strip_suffix(".sse") {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut assembler = stream::gemini::ChunkAssembler::new();
            for line in text.lines() {
                if let Some(data) = line.strip_prefix("data:") {
                    assembler
                        .push(data.trim())
                        .unwrap_or_else(|e| panic!("{file}: {e}"));
                }
            }
            check_gemini_stream(&dir, name, assembler).await;
            streams += 1;
        } else if let Some(name) = file.strip_suffix(".stream.json") {
            let chunks = read(&path);
            let mut assembler = stream::gemini::ChunkAssembler::new();
            for chunk in chunks.as_array().expect("an array of chunks") {
                assembler
                    .push_chunk(chunk)
                    .unwrap_or_else(|e| panic!("{file}: {e}"));
            }
            check_gemini_stream(&dir, name, assembler).await;
            streams += 1;
        } else if file.ends_with(".json") {
            let (name, role) = name_and_role(&path);
            match role.as_str() {
                "request" | "followup_request" => check_request(Format::Gemini, &path).await,
                "response" => {
                    let response = gemini::parse_response(&read(&path))
                        .unwrap_or_else(|error| panic!("{file}: {error}"));
                    check_gemini_response(&dir, &name, response).await;
                }
                role => panic!("{file}: unknown role {role:?}"),
            }
        }
    }
    assert!(streams > 0, "no Gemini streams");
}

async fn check_gemini_stream(dir: &Path, name: &str, assembler: stream::gemini::ChunkAssembler) {
    let merged = assembler.merged();
    let response = assembler.finish().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        Ok(response.clone()),
        gemini::parse_response(&merged),
        "{name}: the stream is not its merged chunks"
    );
    check_gemini_response(dir, name, response).await;
}

async fn check_gemini_response(dir: &Path, name: &str, response: ModelResponse) {
    let what = format!("gemini/{name}");
    // Calls without id (Gemini's API sends none) come back with minted ones.
    check_round_trip(
        Format::Gemini,
        &what,
        &Message::Assistant(response.message.clone()),
    );
    let sibling = |role: &str| dir.join(format!("{name}.{role}.json"));
    let request = sibling("request");
    let request = request
        .exists()
        .then(|| gemini::parse_request(&read(&request)).expect("the request parses"));
    let followup_path = sibling("followup_request");
    let followup_body = followup_path.exists().then(|| read(&followup_path));
    let mut conversation = request
        .as_ref()
        .map(|r| r.conversation.clone())
        .unwrap_or_else(|| vec![Message::user("Go on.")]);
    let offered = request
        .as_ref()
        .map(|r| functions(&r.tools))
        .unwrap_or_default();
    let mut tools = offered.clone();
    for call in response.message.tool_calls() {
        if !tools.iter().any(|info| info.name == call.name) {
            tools.push(ToolInfo::new(
                call.name.clone(),
                "",
                json!({ "type": "object" }),
            ));
        }
    }
    let session = bind(tools, NameRules::default())
        .await
        .unwrap_or_else(|error| panic!("{what}: {error}"));
    let start = conversation.len();
    let model = ScriptedModel::new([response.clone(), ModelResponse::answer("Done.")]);
    run_recorded(&what, &session, model, &mut conversation).await;
    let Some(followup_body) = followup_body else {
        return;
    };
    let followup = gemini::parse_request(&followup_body).expect("the follow-up parses");
    let last = followup
        .conversation
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
        .expect("a follow-up holds the model turn");
    // Our history and model turn, then the recording's results (under our
    // call ids, in order) and whatever it sent after them.
    let mut ours: Vec<Message> = conversation[..=start].to_vec();
    let mut call_ids = conversation[start]
        .as_assistant()
        .expect("the model turn")
        .tool_calls()
        .map(|call| call.id.clone())
        .collect::<Vec<_>>()
        .into_iter();
    for message in &followup.conversation[last + 1..] {
        let mut message = message.clone();
        if let Message::Tool(result) = &mut message {
            result.tool_call_id = call_ids.next().expect("a call for each recorded result");
        }
        ours.push(message);
    }
    let exported = gemini::export_contents(&ours);
    let mut ours = normalise_gemini(&Value::Array(exported.contents));
    let theirs = normalise_gemini(&followup_body["contents"]);
    map_ids(&mut ours, &theirs, &what);
    assert_eq!(ours, theirs, "{what}: the follow-up differs");
}

/// `contents` as compared: camelCase keys, signatures in standard base64,
/// without blank text parts, unsigned thought summaries, or contents left
/// empty by that.
fn normalise_gemini(contents: &Value) -> Value {
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
                            // The stand-in an export writes for a call the
                            // model did not sign: no signature at all.
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

/// Replaces the call ids of `ours` with those of `theirs`, checking the
/// mapping is one-to-one.
fn map_ids(ours: &mut Value, theirs: &Value, what: &str) {
    fn collect(value: &Value, ids: &mut Vec<String>) {
        match value {
            Value::Object(fields) => {
                for (key, value) in fields {
                    if (key == "functionCall" || key == "functionResponse")
                        && let Some(id) = value["id"].as_str()
                    {
                        ids.push(id.to_owned());
                    }
                    collect(value, ids);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, ids)),
            _ => {}
        }
    }
    fn replace(value: &mut Value, map: &std::collections::HashMap<String, String>) {
        match value {
            Value::Object(fields) => {
                for (key, value) in fields.iter_mut() {
                    if (key == "functionCall" || key == "functionResponse")
                        && let Some(id) = value["id"].as_str().and_then(|id| map.get(id))
                    {
                        value["id"] = Value::String(id.clone());
                    }
                    replace(value, map);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| replace(v, map)),
            _ => {}
        }
    }
    let (mut mine, mut recorded) = (Vec::new(), Vec::new());
    collect(ours, &mut mine);
    collect(theirs, &mut recorded);
    assert_eq!(
        mine.len(),
        recorded.len(),
        "{what}: ids {mine:?} vs {recorded:?}"
    );
    let mut map = std::collections::HashMap::new();
    let mut back = std::collections::HashMap::new();
    for (a, b) in mine.iter().zip(&recorded) {
        assert_eq!(
            map.insert(a.clone(), b.clone()).unwrap_or(b.clone()),
            *b,
            "{what}: ids"
        );
        assert_eq!(
            back.insert(b.clone(), a.clone()).unwrap_or(a.clone()),
            *a,
            "{what}: ids"
        );
    }
    replace(ours, &map);
}
