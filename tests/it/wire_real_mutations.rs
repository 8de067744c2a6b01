//! Each rule of `wire_real` (`wire_real_rules`) fails on a real recording
//! altered to break it, with the rule and the path it names; a rule that
//! checks the crate rather than the recording fails when the crate's
//! output is altered before the rule reads it. And the variations a real
//! recording of a known kind may have (other ids, a client that sends or
//! omits `status` and `id`, a stream with or without its end marker, an
//! export that is rightly empty) keep every rule.

use std::collections::BTreeSet;
use std::path::Path;

use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Bindings, Definition, LoopId, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::arbitrary_json::sse_events;
use crate::properties::wire::Format;
use crate::wire_real::{
    FIXTURES, Siblings, follow_up_of, mcp_violations, read, request_violations,
    response_violations, responses_stream_violations, round_trip_violations, sent_call_ids,
};
use crate::wire_real_rules::{self as rules, Rule, Violation, assert_holds, reports};

fn fixture(path: &str) -> Value {
    read(&Path::new(FIXTURES).join(path))
}

/// Asserts that `violations` hold one of `rule` at `at`, and only of `rule`.
#[track_caller]
fn assert_breaks(violations: &[Violation], rule: Rule, at: &str) {
    assert!(
        reports(violations, rule, at),
        "no {rule:?} at {at} in {violations:#?}"
    );
    assert!(
        violations.iter().all(|v| v.rule == rule),
        "other rules broken too: {violations:#?}"
    );
}

/// The recorded response `name` of `kind` with its siblings, parsed.
fn recorded_response(format: Format, kind: &str, name: &str) -> (ModelResponse, Siblings) {
    let dir = Path::new(FIXTURES).join(kind);
    let response = format
        .parse_response(&read(&dir.join(format!("{name}.response.json"))))
        .expect("the recording parses");
    (response, Siblings::of(&dir, name))
}

// ------------------------------------------------------------ the recording

#[tokio::test]
async fn a_body_of_another_shape_breaks_parses() {
    let mut body = fixture("openai/oai_hitl_parallel.followup_request.json");
    body["messages"] = json!("not a list");
    assert_breaks(
        &request_violations(Format::OpenAi, &body).await,
        Rule::Parses,
        "request",
    );
}

#[tokio::test]
async fn a_tool_named_with_a_space_breaks_tools_bind() {
    let mut body = fixture("openai/oai_hitl_parallel.request.json");
    body["tools"][0]["function"]["name"] = json!("delete file");
    assert_breaks(
        &request_violations(Format::OpenAi, &body).await,
        Rule::ToolsBind,
        "tools",
    );
    let mut listed = fixture("mcp/mcp_server_memory.json");
    listed["tools"][1]["name"] = listed["tools"][0]["name"].clone();
    assert_breaks(&mcp_violations(&listed).await, Rule::ToolsBind, "tools");
}

#[tokio::test]
async fn a_dropped_result_breaks_every_call_answered_once() {
    // system, user, assistant (2 calls), 2 results.
    let mut body = fixture("openai/oai_hitl_parallel.followup_request.json");
    body["messages"].as_array_mut().unwrap().pop();
    let violations = request_violations(Format::OpenAi, &body).await;
    assert!(
        reports(
            &violations,
            Rule::CallsAnsweredOnce,
            "conversation[2].calls[1]"
        ),
        "{violations:#?}"
    );
    // The exports break the providers' rules the same way.
    assert!(violations.iter().any(|v| v.rule == Rule::ProviderRules));
}

#[tokio::test]
async fn a_repeated_result_breaks_every_call_answered_once() {
    let mut body = fixture("anthropic/ant_parallel.followup_request.json");
    let results = body["messages"][2]["content"].as_array_mut().unwrap();
    results.push(results[0].clone());
    let violations = request_violations(Format::Anthropic, &body).await;
    assert!(
        reports(&violations, Rule::CallsAnsweredOnce, "conversation[7]"),
        "{violations:#?}"
    );
    // And in a conversation the crate holds, altered (system, user,
    // assistant with 4 calls, 4 results).
    let parsed = Format::Anthropic
        .parse_request(&fixture("anthropic/ant_parallel.followup_request.json"))
        .unwrap();
    let mut conversation = parsed.conversation;
    assert_holds("recorded", &rules::calls_answered_once(&conversation));
    conversation.remove(3);
    assert_breaks(
        &rules::calls_answered_once(&conversation),
        Rule::CallsAnsweredOnce,
        "conversation[2].calls[0]",
    );
}

#[tokio::test]
async fn a_result_before_its_call_breaks_the_provider_rules() {
    let parsed = Format::OpenAi
        .parse_request(&fixture("openai/oai_hitl_parallel.followup_request.json"))
        .unwrap();
    assert_holds(
        "recorded",
        &rules::within_provider_rules(&parsed.conversation),
    );
    let mut conversation = parsed.conversation;
    let result = conversation.remove(3);
    conversation.insert(1, result);
    let violations = rules::within_provider_rules(&conversation);
    assert!(
        violations
            .iter()
            .any(|v| v.rule == Rule::ProviderRules && v.at == "OpenAI"),
        "{violations:#?}"
    );
}

// ---------------------------------------------------------------------- ids

#[test]
fn a_changed_or_unminted_id_breaks_ids_kept_or_minted() {
    // The parser keeps the ids a client sent, and mints those it left out.
    let mut body = fixture("openai/oai_hitl_parallel.followup_request.json");
    let sent = sent_call_ids(Format::OpenAi, &body);
    let kept = rules::call_ids(&Format::OpenAi.parse_request(&body).unwrap().conversation);
    assert_holds(
        "recorded",
        &rules::ids_kept_or_minted("calls", &sent, &kept, &BTreeSet::new()),
    );
    let mut changed = kept.clone();
    changed[1] = "call_other".to_owned();
    assert_breaks(
        &rules::ids_kept_or_minted("calls", &sent, &changed, &BTreeSet::new()),
        Rule::IdsKeptOrMinted,
        "calls[1]",
    );
    // Sent without ids: minted.
    body["messages"][2]["tool_calls"][0]["id"] = json!("");
    body["messages"][3]["tool_call_id"] = json!("");
    let sent = sent_call_ids(Format::OpenAi, &body);
    let kept = rules::call_ids(&Format::OpenAi.parse_request(&body).unwrap().conversation);
    assert!(rules::is_minted(&kept[0]), "{kept:?}");
    assert_holds(
        "minted",
        &rules::ids_kept_or_minted("calls", &sent, &kept, &BTreeSet::new()),
    );
    let mut unminted = kept.clone();
    unminted[0] = "mine".to_owned();
    assert_breaks(
        &rules::ids_kept_or_minted("calls", &sent, &unminted, &BTreeSet::new()),
        Rule::IdsKeptOrMinted,
        "calls[0]",
    );
    // A minted id another call has.
    let mut taken = kept.clone();
    taken[0] = kept[1].clone();
    let violations = rules::ids_kept_or_minted("calls", &sent, &taken, &BTreeSet::new());
    assert!(!violations.is_empty(), "{taken:?}");
}

/// A real response with every call id `""`, as Gemini's OpenAI endpoint
/// sends them.
fn without_ids() -> ModelResponse {
    let mut body = fixture("openai/oai_py_parallel.response.json");
    for call in body["choices"][0]["message"]["tool_calls"]
        .as_array_mut()
        .unwrap()
    {
        call["id"] = json!("");
    }
    Format::OpenAi.parse_response(&body).unwrap()
}

#[tokio::test]
async fn a_minted_id_that_differs_between_two_runs_breaks_ids_deterministic() {
    let response = without_ids();
    let tools = response
        .message
        .tool_calls()
        .map(|call| {
            agent_loop::tool::Definition::from_fn(
                agent_loop::tool::ToolInfo::new(call.name.clone(), "", json!({"type": "object"})),
                |_: Value, _| async { Ok::<_, agent_loop::tool::BoxError>(json!("ok")) },
            )
        })
        .collect::<Vec<_>>();
    let session = Definition::builder()
        .name("mutations")
        .tools(tools)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    let run = || async {
        let model = ScriptedModel::new([response.clone(), ModelResponse::answer("Done.")]);
        let mut conversation = vec![Message::user("Go on.")];
        session
            .run_turn(&model, &mut conversation, &CancellationToken::new())
            .await
            .unwrap();
        conversation
    };
    let (first, mut again) = (run().await, run().await);
    assert_holds("one session", &rules::ids_deterministic(&first, &again));
    let sent: Vec<String> = response
        .message
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    assert_holds(
        "minted",
        &rules::ids_kept_or_minted(
            "conversation[1].calls",
            &sent,
            &rules::call_ids(&first[1..2]),
            &BTreeSet::new(),
        ),
    );
    if let Message::Assistant(assistant) = &mut again[1] {
        assistant.tool_calls_mut().next().unwrap().id = "call_0".to_owned();
    }
    assert_breaks(
        &rules::ids_deterministic(&first, &again),
        Rule::IdsDeterministic,
        "conversation[1].calls[0]",
    );
}

// ----------------------------------------------------------------- the turn

#[tokio::test]
async fn a_turn_failing_on_an_answer_it_documents_no_failure_for_breaks_turn_runs() {
    // A real reasoning answer cut by the output limit before its call:
    // an empty answer the limit cut, which fails the turn, as documented.
    let mut body = fixture("openai-responses/resp_reasoning_plan.response.json");
    body["output"].as_array_mut().unwrap().truncate(1);
    body["status"] = json!("incomplete");
    body["incomplete_details"] = json!({ "reason": "max_output_tokens" });
    let cut = Format::Responses.parse_response(&body).unwrap();
    assert!(rules::is_empty_answer(&cut));
    let violations =
        response_violations(Format::Responses, "cut", &cut, &Siblings::default()).await;
    assert_holds("cut", &violations);
    // The same failure for the answer as recorded: not documented.
    let session = Definition::builder()
        .name("mutations")
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    let model = ScriptedModel::new([cut]);
    let mut conversation = vec![Message::user("Go on.")];
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("an empty answer the limit cut");
    let (recorded, _) =
        recorded_response(Format::Responses, "openai-responses", "resp_reasoning_plan");
    assert_breaks(
        &rules::turn_ends_as_documented(&recorded, &error),
        Rule::TurnRuns,
        "turn",
    );
}

// --------------------------------------------------------------- round trip

/// parse → export (altered by `alter`) → parse of the recorded request
/// `path`, held to the round trip rule.
fn round_trip_altered(
    format: Format,
    path: &str,
    alter: impl FnOnce(&mut Value),
) -> Vec<Violation> {
    let parsed = format.parse_request(&fixture(path)).unwrap();
    let mut exported = format
        .export_request(&parsed.conversation, &parsed.tools)
        .unwrap();
    alter(&mut exported);
    let back = format.parse_request(&exported).unwrap();
    rules::round_trip(format, &parsed.conversation, &back.conversation)
}

#[test]
fn a_kept_field_changed_by_the_export_breaks_the_round_trip() {
    let path = "anthropic/ant_parallel.followup_request.json";
    assert_holds(
        "recorded",
        &round_trip_altered(Format::Anthropic, path, |_| {}),
    );
    let violations = round_trip_altered(Format::Anthropic, path, |exported| {
        exported["messages"][1]["content"][1]["input"]["name"] = json!("Eve");
    });
    assert_breaks(
        &violations,
        Rule::RoundTrip,
        "conversation[2].content[1].arguments",
    );
    // A call and its result no longer paired by the export.
    let violations = round_trip_altered(Format::Anthropic, path, |exported| {
        exported["messages"][2]["content"][0]["tool_use_id"] = json!("toolu_other");
    });
    assert_breaks(&violations, Rule::RoundTrip, "conversation[3].tool_call_id");
}

#[test]
fn an_id_less_responses_message_split_again_breaks_the_round_trip() {
    // The recorded client sent its assistant messages without item ids:
    // they go back as one string, and come back whole.
    let path = "openai-responses/resp_compaction.followup_request.json";
    assert_holds(
        "recorded",
        &round_trip_altered(Format::Responses, path, |_| {}),
    );
    let violations = round_trip_altered(Format::Responses, path, |exported| {
        let text = exported["input"][1]["content"].as_str().unwrap().to_owned();
        let (a, b) = text.split_at(10);
        exported["input"][1]["content"] = json!([
            { "type": "output_text", "text": a },
            { "type": "output_text", "text": b },
        ]);
    });
    assert!(
        reports(
            &violations,
            Rule::RoundTrip,
            "conversation[1].content[0].text"
        ),
        "{violations:#?}"
    );
    assert!(
        reports(&violations, Rule::RoundTrip, "conversation[1].content[1]"),
        "{violations:#?}"
    );
}

#[test]
fn a_second_export_that_differs_breaks_the_fixpoint() {
    let parsed = Format::Gemini
        .parse_request(&fixture("gemini/gem_parallel_sig.followup_request.json"))
        .unwrap();
    let first = Format::Gemini
        .export_request(&parsed.conversation, &parsed.tools)
        .unwrap();
    let back = Format::Gemini.parse_request(&first).unwrap();
    let mut again = Format::Gemini
        .export_request(&back.conversation, &back.tools)
        .unwrap();
    assert_holds(
        "recorded",
        &rules::export_fixpoint(Format::Gemini, &first, &again),
    );
    again["contents"][1]["parts"][0]["thoughtSignature"] = json!("c2ln");
    assert_breaks(
        &rules::export_fixpoint(Format::Gemini, &first, &again),
        Rule::ExportFixpoint,
        "export.contents[1].parts[0].thoughtSignature",
    );
}

// ---------------------------------------------------------------- follow-up

/// The follow-up rule on the recorded response `name` of `kind`, its
/// recorded follow-up altered by `alter`.
async fn follow_up_altered(
    format: Format,
    kind: &str,
    name: &str,
    alter: impl FnOnce(&mut Value),
) -> Vec<Violation> {
    let (response, mut siblings) = recorded_response(format, kind, name);
    alter(siblings.followup.as_mut().expect("a recorded follow-up"));
    response_violations(format, name, &response, &siblings).await
}

#[tokio::test]
async fn a_follow_up_with_other_text_or_a_lost_call_breaks_the_follow_up() {
    let (format, kind, name) = (Format::Anthropic, "anthropic", "ant_parallel");
    assert_holds(name, &follow_up_altered(format, kind, name, |_| {}).await);
    let violations = follow_up_altered(format, kind, name, |followup| {
        followup["messages"][1]["content"][0]["text"] = json!("Something else.");
    })
    .await;
    assert_breaks(&violations, Rule::FollowUp, "messages[1].content[0].text");
    // A call the client did not send back, and its result.
    let violations = follow_up_altered(format, kind, name, |followup| {
        followup["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .pop();
        followup["messages"][2]["content"]
            .as_array_mut()
            .unwrap()
            .pop();
    })
    .await;
    assert!(
        reports(&violations, Rule::FollowUp, "messages[1].content[4]"),
        "{violations:#?}"
    );
}

#[tokio::test]
async fn a_follow_up_that_pairs_ids_otherwise_breaks_the_follow_up() {
    let (format, kind, name) = (Format::OpenAi, "openai", "oai_hitl_parallel");
    // The client names both calls its own way, one-to-one: it may.
    let violations = follow_up_altered(format, kind, name, |followup| {
        for (call, result) in [(0, 3), (1, 4)] {
            let id = format!("mine_{call}");
            followup["messages"][2]["tool_calls"][call]["id"] = json!(id);
            followup["messages"][result]["tool_call_id"] = json!(id);
        }
    })
    .await;
    assert_holds("renamed", &violations);
    // One result answering the other call: not one-to-one.
    let violations = follow_up_altered(format, kind, name, |followup| {
        let other = followup["messages"][2]["tool_calls"][0]["id"].clone();
        followup["messages"][4]["tool_call_id"] = other;
    })
    .await;
    assert!(
        reports(&violations, Rule::FollowUp, "messages[4].tool_call_id"),
        "{violations:#?}"
    );
}

#[tokio::test]
async fn a_chained_follow_up_must_answer_the_providers_ids() {
    let (format, kind, name) = (Format::Responses, "openai-responses", "resp_prev_id_chain");
    assert_holds(name, &follow_up_altered(format, kind, name, |_| {}).await);
    let violations = follow_up_altered(format, kind, name, |followup| {
        followup["input"][0]["call_id"] = json!("call_mine");
    })
    .await;
    assert_breaks(&violations, Rule::FollowUp, "input[0].call_id");
}

#[tokio::test]
async fn a_client_that_sends_or_omits_status_and_ids_keeps_the_follow_up() {
    let (format, kind, name) = (Format::Responses, "openai-responses", "resp_reasoning_plan");
    let violations = follow_up_altered(format, kind, name, |followup| {
        let input = followup["input"].as_array_mut().unwrap();
        input[2]["status"] = json!("completed");
        input[2].as_object_mut().unwrap().remove("id");
        input[0]["type"] = json!("message");
    })
    .await;
    assert_holds("status and ids", &violations);
    // But not other arguments.
    let violations = follow_up_altered(format, kind, name, |followup| {
        followup["input"][2]["arguments"] = json!("{\"plan\":\"none\"}");
    })
    .await;
    assert_breaks(&violations, Rule::FollowUp, "input[3].arguments.plan");
}

#[tokio::test]
async fn the_follow_up_rule_reads_the_turn_the_crate_built() {
    // The crate's side altered: our request loses a result.
    let (response, siblings) = recorded_response(Format::Anthropic, "anthropic", "ant_thinking");
    let followup = siblings.followup.clone().unwrap();
    let recorded = Format::Anthropic
        .parse_request(&followup)
        .unwrap()
        .conversation;
    let last = recorded
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))
        .unwrap();
    let history = &recorded[..last];
    let sent: Vec<String> = response
        .message
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    let turn = recorded[last..].to_vec();
    let compared = follow_up_of(Format::Anthropic, history, &turn, &sent, &followup).unwrap();
    assert_holds(
        "as recorded",
        &rules::follow_up(
            Format::Anthropic,
            &compared.ours,
            &compared.theirs,
            &compared.renamable,
        ),
    );
    let compared = follow_up_of(Format::Anthropic, history, &turn[..1], &sent, &followup).unwrap();
    assert_breaks(
        &rules::follow_up(
            Format::Anthropic,
            &compared.ours,
            &compared.theirs,
            &compared.renamable,
        ),
        Rule::FollowUp,
        "messages[2]",
    );
}

// ------------------------------------------------------------------ streams

fn responses_events(name: &str) -> Vec<(String, String)> {
    let path = Path::new(FIXTURES).join(format!("openai-responses/{name}.sse"));
    sse_events(&std::fs::read_to_string(path).unwrap())
}

#[tokio::test]
async fn a_stream_without_event_names_or_with_done_keeps_stream_carries() {
    let dir = Path::new(FIXTURES).join("openai-responses");
    let events = responses_events("resp_stream_fn");
    // A compatible server: payloads named by their `type` only, `[DONE]`
    // after the last one, and a completed response without its output.
    let mut compatible: Vec<(String, String)> = events
        .iter()
        .map(|(_, data)| {
            let mut value: Value = serde_json::from_str(data).unwrap();
            if value["type"] == "response.completed" {
                value["response"]["output"] = json!([]);
            }
            (String::new(), value.to_string())
        })
        .collect();
    compatible.push((String::new(), "[DONE]".to_owned()));
    let violations =
        responses_stream_violations("compatible", &dir, "resp_stream_fn", &compatible).await;
    assert_holds("compatible", &violations);
}

#[tokio::test]
async fn a_stream_cut_before_its_end_or_assembled_otherwise_breaks_stream_carries() {
    let dir = Path::new(FIXTURES).join("openai-responses");
    let mut events = responses_events("resp_stream_fn");
    events.retain(|(event, _)| event != "response.completed");
    // Cut: the crate fails, as it must.
    let violations = responses_stream_violations("cut", &dir, "resp_stream_fn", &events).await;
    assert_holds("cut", &violations);
    // The crate's output altered: an answer from the cut stream, an answer
    // that differs from what the events carry.
    let (response, _) =
        recorded_response(Format::Responses, "openai-responses", "resp_json_schema");
    assert_breaks(
        &rules::stream_carries(&rules::Carried::Nothing, &Ok(response.clone())),
        Rule::StreamCarries,
        "response",
    );
    let mut other = response.clone();
    other.usage.output_tokens += 1;
    assert_breaks(
        &rules::stream_carries(&rules::Carried::Response(response), &Ok(other)),
        Rule::StreamCarries,
        "response.usage.output_tokens",
    );
    assert_breaks(
        &rules::stream_carries(
            &rules::Carried::Error("quota".into()),
            &Err("something else".into()),
        ),
        Rule::StreamCarries,
        "error",
    );
}

#[cfg(all(feature = "openai", feature = "anthropic"))]
#[tokio::test]
async fn a_served_stream_without_its_end_marker_keeps_stream_carries_and_an_altered_answer_breaks_it()
 {
    use crate::wire_real_streams::{request_body_violations, served, served_as_carried};
    use agent_loop::conversation::ContentPart;
    let dir = Path::new(FIXTURES).join("openai-stream");
    let bytes = std::fs::read(dir.join("mistral_parallel.sse")).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let without_done = text.replace("data: [DONE]", "").into_bytes();
    let (carried, mut run) = served(
        Format::OpenAi,
        &dir,
        "mistral_parallel",
        without_done,
        false,
    )
    .await;
    let mut violations =
        request_body_violations(Format::OpenAi, &dir, "mistral_parallel", &run.body);
    violations.extend(served_as_carried(Format::OpenAi, &carried, &run));
    assert_holds("without [DONE]", &violations);
    // The model's answer altered: a call's arguments.
    if let Ok(response) = &mut run.result
        && let Some(ContentPart::ToolCall(call)) = response
            .message
            .content
            .iter_mut()
            .find(|part| matches!(part, ContentPart::ToolCall(_)))
    {
        call.arguments = "{\"x\":1}".to_owned();
    }
    let violations = served_as_carried(Format::OpenAi, &carried, &run);
    assert!(
        reports(
            &violations,
            Rule::StreamCarries,
            "response.calls[0].arguments"
        ),
        "{violations:#?}"
    );
}

#[cfg(all(feature = "openai", feature = "anthropic"))]
#[tokio::test]
async fn a_served_stream_cut_before_its_end_must_fail_and_an_answer_from_it_breaks_stream_carries()
{
    use crate::wire_real_streams::{Carried, served, served_as_carried};
    let dir = Path::new(FIXTURES).join("openai-stream");
    let text = std::fs::read_to_string(dir.join("mistral_parallel.sse")).unwrap();
    // The events before the one with the finish reason, without `[DONE]`.
    let cut: String = text
        .split_inclusive("\n\n")
        .take_while(|event| !event.contains("\"finish_reason\":\"tool_calls\""))
        .collect();
    let (carried, mut run) = served(
        Format::OpenAi,
        &dir,
        "mistral_parallel",
        cut.into_bytes(),
        false,
    )
    .await;
    assert!(matches!(carried, Carried::Cut), "{carried:?}");
    assert!(run.result.is_err(), "{:?}", run.result);
    assert_holds("cut", &served_as_carried(Format::OpenAi, &carried, &run));
    // The model's output altered: an answer from the cut stream.
    run.result = Ok(ModelResponse::answer(""));
    assert_breaks(
        &served_as_carried(Format::OpenAi, &carried, &run),
        Rule::StreamCarries,
        "response",
    );
}

// --------------------------------------------------------------- variations

#[tokio::test]
async fn recordings_with_other_ids_keep_every_rule() {
    // Every id of a recorded exchange renamed, consistently.
    let rename = |value: &mut Value| {
        let text = value.to_string().replace("toolu_01", "toolu_XY");
        *value = serde_json::from_str(&text).unwrap();
    };
    let (format, kind, name) = (Format::Anthropic, "anthropic", "ant_parallel");
    let dir = Path::new(FIXTURES).join(kind);
    let mut body = read(&dir.join(format!("{name}.response.json")));
    rename(&mut body);
    let response = format.parse_response(&body).unwrap();
    assert!(
        response
            .message
            .tool_calls()
            .all(|c| c.id.starts_with("toolu_XY"))
    );
    let mut siblings = Siblings::of(&dir, name);
    for body in [&mut siblings.request, &mut siblings.followup]
        .into_iter()
        .flatten()
    {
        rename(body);
        assert_holds(name, &request_violations(format, body).await);
    }
    assert_holds(
        name,
        &response_violations(format, name, &response, &siblings).await,
    );
}

#[tokio::test]
async fn a_request_whose_only_message_the_export_leaves_out_keeps_every_rule() {
    // A real reasoning item, alone: no item follows it, so the export
    // rightly leaves it out, and with it the only message.
    let followup = fixture("openai-responses/resp_reasoning_plan.followup_request.json");
    let body = json!({ "input": [followup["input"][1].clone()] });
    let parsed = Format::Responses.parse_request(&body).unwrap();
    assert_eq!(parsed.conversation.len(), 1);
    let exported = Format::Responses
        .export_request(&parsed.conversation, &[])
        .unwrap();
    assert_eq!(exported["input"], json!([]));
    assert_holds(
        "alone",
        &round_trip_violations(Format::Responses, &parsed.conversation, &[]),
    );
    assert_holds("alone", &request_violations(Format::Responses, &body).await);
}

#[tokio::test]
async fn a_request_with_a_blank_system_prompt_keeps_every_rule() {
    for (format, path, system) in [
        (
            Format::OpenAi,
            "openai/oai_hitl_parallel.request.json",
            "/messages/0/content",
        ),
        (
            Format::Anthropic,
            "anthropic/ant_parallel.followup_request.json",
            "/system",
        ),
        (
            Format::Responses,
            "openai-responses/resp_reasoning_plan.request.json",
            "/instructions",
        ),
    ] {
        let mut body = fixture(path);
        *body.pointer_mut(system).expect("a system prompt") = json!("  ");
        assert_holds(path, &request_violations(format, &body).await);
    }
}
