//! Pausing a turn for a person's decision and resuming it
//! (`agent_loop::turn::pause`): a gate that asks pauses the turn after the
//! batch's other calls ran; a resume checks every decision before anything
//! runs, runs the approved calls once, puts each result in call order and
//! goes on with the turn's counts.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::turn_common::*;
use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::gate::{ApprovalKey, GateCall, GateDecision};
use agent_loop::limits::Limit;
use agent_loop::tool::{self, ToolInfo};
use agent_loop::turn::{
    CallDecision, Decision, ExceededLimit, PausePolicy, PausedTurn, PendingCall, Resume,
    ResumeErrorKind, ScriptedModel, TurnError, TurnEvent, TurnEvents, TurnOptions, TurnOutcome,
    TurnStatus,
};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, ToolLimits, Validated};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

struct Tools {
    reads: Arc<AtomicUsize>,
    writes: Arc<Mutex<Vec<Value>>>,
}

/// `read` (no parameters) and `write_file` (`{"path": string}`), whose
/// writes a gate asks about; with `key`, pending calls are signed.
fn definition(key: Option<&str>, limits: ToolLimits) -> (Definition<Validated>, Tools) {
    let tools = Tools {
        reads: Arc::new(AtomicUsize::new(0)),
        writes: Arc::default(),
    };
    let writes = Arc::clone(&tools.writes);
    let write = tool::Definition::from_fn(
        ToolInfo::new(
            "write_file",
            "Writes a file.",
            json!({
                "type": "object",
                "properties": { "path": { "type": "string" } },
                "required": ["path"]
            }),
        ),
        move |arguments: Value, _context| {
            let writes = Arc::clone(&writes);
            async move {
                writes.lock().unwrap().push(arguments.clone());
                Ok::<_, tool::BoxError>(json!(format!("wrote {}", arguments["path"])))
            }
        },
    );
    let mut builder = Definition::builder()
        .name("writer")
        .tool(counting_tool("read", Arc::clone(&tools.reads)))
        .tool(write)
        .tool_limits(limits)
        .gate(|call: &GateCall<'_>| {
            if call.tool.name == "write_file" {
                GateDecision::ask("writes a file")
            } else {
                GateDecision::Allow
            }
        });
    if let Some(key) = key {
        builder = builder.approval_key(ApprovalKey::new(key));
    }
    (builder.build().validate().expect("valid"), tools)
}

const SESSION: Uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
const LOOP: Uuid = Uuid::from_u128(0xfedc_ba98_7654_3210_fedc_ba98_7654_3210);

async fn bind_to(definition: &Definition<Validated>, session: Uuid) -> Definition<Bound> {
    definition
        .bind(Bindings::new(
            SessionId::from_uuid(session),
            LoopId::from_uuid(LOOP),
        ))
        .await
        .expect("binds")
}

/// A batch of `read`, a write of `a.txt`, `read`; then `rest`.
fn script(rest: impl IntoIterator<Item = ModelResponse>) -> ScriptedModel {
    let mut responses = vec![batch([
        call("call_1", "read", "{}"),
        call("call_2", "write_file", r#"{"path": "a.txt"}"#),
        call("call_3", "read", "{}"),
    ])];
    responses.extend(rest);
    ScriptedModel::new(responses)
}

fn paused(outcome: &TurnOutcome) -> PausedTurn {
    match &outcome.status {
        TurnStatus::Paused(paused) => (**paused).clone(),
        other => panic!("not paused: {other:?}"),
    }
}

/// `session` run on "write" with `model` until it pauses: the
/// conversation and the paused turn.
/// The calls the gates allow run before the pause
/// ([`PausePolicy::RunOthers`]): what these tests of the pause's
/// mechanics were written for; the default, holding the whole batch, has
/// tests of its own (`turn_pause_batch`).
async fn pause(session: &Definition<Bound>, model: &ScriptedModel) -> (Vec<Message>, PausedTurn) {
    let mut conversation = user_says("write");
    let outcome = session
        .run_turn(model, &mut conversation, run_others())
        .await
        .expect("the turn pauses");
    (conversation, paused(&outcome))
}

/// A turn that runs the allowed calls of a batch before it pauses.
fn run_others() -> TurnOptions<'static> {
    TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .build()
}

async fn resume(
    session: &Definition<Bound>,
    model: &ScriptedModel,
    conversation: &mut Vec<Message>,
    paused: &PausedTurn,
    decisions: impl IntoIterator<Item = CallDecision>,
) -> Result<TurnOutcome, TurnError> {
    let resume = Resume::new(paused.clone(), decisions);
    session
        .run_turn(
            model,
            conversation,
            TurnOptions::builder().resume(&resume).build(),
        )
        .await
}

/// The kind of the refusal of a resume of `paused` that approves
/// `call_2`; panics when it is not refused.
async fn refusal_of_approving(
    session: &Definition<Bound>,
    model: &ScriptedModel,
    conversation: &mut Vec<Message>,
    paused: &PausedTurn,
) -> ResumeErrorKind {
    match resume(
        session,
        model,
        conversation,
        paused,
        [CallDecision::approve("call_2")],
    )
    .await
    {
        Err(TurnError::Resume(error)) => error.kind,
        other => panic!("not refused: {other:?}"),
    }
}

fn result_ids(conversation: &[Message]) -> Vec<&str> {
    tool_results(conversation)
        .iter()
        .map(|result| result.tool_call_id.as_str())
        .collect()
}

#[tokio::test]
async fn one_gated_call_of_three_pauses_the_turn_and_an_approval_runs_it_once_in_call_order() {
    let (definition, tools) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let mut conversation = user_says("read, write, read");
    let (events, mut received) = TurnEvents::channel();
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .events(&events)
                .pause_policy(PausePolicy::RunOthers)
                .build(),
        )
        .await
        .expect("pauses");
    let paused = paused(&outcome);
    assert_eq!(
        paused.pending,
        [serde_json::from_value::<PendingCall>(json!({
            "tool_call_id": "call_2",
            "tool_name": "write_file",
            "arguments": { "path": "a.txt" },
            "reason": "writes a file"
        }))
        .unwrap()]
    );
    assert_eq!(
        (
            paused.message_index,
            paused.iterations,
            paused.calls,
            paused.requests
        ),
        (1, 1, 3, 1)
    );
    assert_eq!(tools.reads.load(Ordering::SeqCst), 2);
    assert!(
        tools.writes.lock().unwrap().is_empty(),
        "nothing written yet"
    );
    assert_eq!(conversation.len(), 4);
    assert_eq!(result_ids(&conversation), ["call_1", "call_3"]);
    drop(events);
    let mut seen = Vec::new();
    while let Ok(event) = received.try_recv() {
        seen.push(event);
    }
    assert!(seen.contains(&TurnEvent::ToolCallPending {
        tool_call_id: "call_2".into(),
        tool_name: "write_file".into(),
        reason: "writes a file".into(),
    }));
    assert_eq!(seen.last(), Some(&TurnEvent::TurnPaused { pending: 1 }));

    let outcome = resume(
        &session,
        &model,
        &mut conversation,
        &paused,
        [CallDecision::approve("call_2")],
    )
    .await
    .expect("resumes");
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(*tools.writes.lock().unwrap(), [json!({ "path": "a.txt" })]);
    assert_eq!(
        tools.reads.load(Ordering::SeqCst),
        2,
        "what ran is not run again"
    );
    assert_eq!(result_ids(&conversation), ["call_1", "call_2", "call_3"]);
    assert_eq!(
        result_for(&conversation, "call_2").text(),
        "wrote \"a.txt\""
    );
    assert_eq!(conversation.len(), 6);
    assert_eq!(model.requests().len(), 2);
    assert_every_call_answered(&conversation);

    // The same paused turn again: its call has a result now.
    assert_eq!(
        refusal_of_approving(&session, &model, &mut conversation, &paused).await,
        ResumeErrorKind::Stale
    );
    assert_eq!(tools.writes.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_denial_edited_arguments_and_an_external_result_answer_the_call() {
    let cases = [
        (
            CallDecision::deny("call_2", "not today"),
            "the call to `write_file` was denied: not today",
            0,
        ),
        (
            CallDecision::approve_with("call_2", json!({ "path": "b.txt" })),
            "wrote \"b.txt\"",
            1,
        ),
        (
            CallDecision::result("call_2", "written by the browser"),
            "written by the browser",
            0,
        ),
    ];
    for (decision, text, writes) in cases {
        let (definition, tools) = definition(None, ToolLimits::new());
        let session = bind_to(&definition, SESSION).await;
        let model = script([answer("done")]);
        let (mut conversation, paused) = pause(&session, &model).await;
        resume(&session, &model, &mut conversation, &paused, [decision])
            .await
            .expect("resumes");
        assert_eq!(result_for(&conversation, "call_2").text(), text);
        assert_eq!(tools.writes.lock().unwrap().len(), writes, "{text}");
        assert!(
            model.requests()[1]
                .conversation
                .iter()
                .any(|message| matches!(message, Message::Tool(_)) && message.text() == text),
            "the model reads it"
        );
        assert_eq!(result_ids(&conversation), ["call_1", "call_2", "call_3"]);
    }
}

#[tokio::test]
async fn refused_resumes_run_nothing_and_leave_the_conversation_unchanged() {
    let (definition, tools) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let (mut conversation, paused) = pause(&session, &model).await;
    let before = conversation.clone();
    let mut wrong_version = paused.clone();
    // A later release's version.
    wrong_version.version = agent_loop::turn::PAUSED_TURN_VERSION + 1;
    let mut too_old = paused.clone();
    too_old.version = 0;
    let cases: Vec<(PausedTurn, Vec<CallDecision>, ResumeErrorKind, Option<&str>)> = vec![
        (paused.clone(), vec![], ResumeErrorKind::MissingDecision, Some("call_2")),
        (
            paused.clone(),
            vec![CallDecision::approve("call_2"), CallDecision::approve("call_9")],
            ResumeErrorKind::UnknownCall,
            Some("call_9"),
        ),
        (
            paused.clone(),
            vec![CallDecision::approve("call_2"), CallDecision::deny("call_2", "no")],
            ResumeErrorKind::DuplicateDecision,
            Some("call_2"),
        ),
        (
            paused.clone(),
            vec![CallDecision::approve_with("call_2", json!({ "path": 5 }))],
            ResumeErrorKind::InvalidArguments {
                message: "the arguments of `write_file` fail its schema: at /path: 5 is not of type \"string\"".into(),
            },
            Some("call_2"),
        ),
        (
            wrong_version,
            vec![CallDecision::approve("call_2")],
            ResumeErrorKind::UnsupportedVersion {
                version: agent_loop::turn::PAUSED_TURN_VERSION + 1,
            },
            None,
        ),
        (
            too_old,
            vec![CallDecision::approve("call_2")],
            ResumeErrorKind::UnsupportedVersion { version: 0 },
            None,
        ),
    ];
    for (paused, decisions, kind, call) in cases {
        let error = resume(&session, &model, &mut conversation, &paused, decisions)
            .await
            .expect_err("refused");
        let TurnError::Resume(error) = error else {
            panic!("{error:?}")
        };
        if let ResumeErrorKind::InvalidArguments { .. } = kind {
            assert!(
                matches!(error.kind, ResumeErrorKind::InvalidArguments { .. }),
                "{error}"
            );
        } else {
            assert_eq!(error.kind, kind, "{error}");
        }
        // A newer pause and an older one say which they are.
        match error.kind {
            ResumeErrorKind::UnsupportedVersion { version: 3 } => assert_eq!(
                error.to_string(),
                "turn: resume refused: paused turn format version 3 was written by a later release; this one reads versions 1 to 2"
            ),
            ResumeErrorKind::UnsupportedVersion { .. } => assert_eq!(
                error.to_string(),
                "turn: resume refused: paused turn format version 0 is older than this release reads (versions 1 to 2)"
            ),
            _ => {}
        }
        assert_eq!(error.tool_call_id.as_deref(), call, "{error}");
        assert_eq!(conversation, before, "{error}");
    }
    assert!(tools.writes.lock().unwrap().is_empty());
    assert_eq!(model.requests().len(), 1, "no request was sent");

    // Another session of the same definition.
    let other = bind_to(&definition, Uuid::from_u128(7)).await;
    assert_eq!(
        refusal_of_approving(&other, &model, &mut conversation, &paused).await,
        ResumeErrorKind::OtherSession
    );

    // A plain turn answers the pending call "interrupted": the paused turn
    // is stale then.
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a plain turn");
    assert!(result_for(&conversation, "call_2").is_error);
    assert_eq!(
        refusal_of_approving(&session, &model, &mut conversation, &paused).await,
        ResumeErrorKind::Stale
    );
    assert!(tools.writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn with_a_key_only_the_pending_calls_own_mac_approves_it() {
    let (definition, tools) =
        definition(Some("a server-side secret of 32 bytes"), ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let (mut conversation, paused) = pause(&session, &model).await;
    let mac = paused.pending[0].mac.clone().expect("signed");
    assert_eq!(mac.len(), 64);
    assert!(
        mac.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );

    // The same call of another session (same key, same call) has another MAC.
    let other = bind_to(&definition, Uuid::from_u128(7)).await;
    let mut other_conversation = user_says("write");
    let other_paused = paused_of(
        other
            .run_turn(
                &script([]),
                &mut other_conversation,
                &CancellationToken::new(),
            )
            .await
            .unwrap(),
    );
    let other_mac = other_paused.pending[0].mac.clone().unwrap();
    assert_ne!(other_mac, mac);

    let mut forged_arguments = paused.clone();
    forged_arguments.pending[0].arguments = json!({ "path": "/etc/passwd" });
    let refusals = [
        (paused.clone(), CallDecision::approve("call_2")),
        (
            paused.clone(),
            CallDecision::approve("call_2").with_mac("00".repeat(32)),
        ),
        (
            paused.clone(),
            CallDecision::approve("call_2").with_mac("not hex"),
        ),
        (
            paused.clone(),
            CallDecision::approve("call_2").with_mac(other_mac),
        ),
    ];
    for (paused, decision) in refusals {
        let error = resume(&session, &model, &mut conversation, &paused, [decision])
            .await
            .expect_err("refused");
        assert!(
            matches!(&error, TurnError::Resume(e) if e.kind == ResumeErrorKind::BadMac),
            "{error:?}"
        );
    }
    // Other arguments in both the paused turn and the conversation (a
    // client that holds both): the MAC covers the arguments.
    let mut forged_conversation = conversation.clone();
    let Message::Assistant(assistant) = &mut forged_conversation[1] else {
        panic!("the batch's message")
    };
    assistant.content.iter_mut().for_each(|part| {
        if let agent_loop::conversation::ContentPart::ToolCall(call) = part
            && call.id == "call_2"
        {
            call.arguments = r#"{"path": "/etc/passwd"}"#.into();
        }
    });
    let error = resume(
        &session,
        &model,
        &mut forged_conversation,
        &forged_arguments,
        [CallDecision::approve("call_2").with_mac(mac.clone())],
    )
    .await
    .expect_err("forged arguments");
    assert!(
        matches!(&error, TurnError::Resume(e) if e.kind == ResumeErrorKind::BadMac),
        "{error:?}"
    );
    // Edited in the stored pause alone, the conversation as it was: a
    // forged decision, named so (it was refused as a stale pause).
    let error = resume(
        &session,
        &model,
        &mut conversation,
        &forged_arguments,
        [CallDecision::approve("call_2").with_mac(mac.clone())],
    )
    .await
    .expect_err("an edited pause");
    assert!(
        matches!(&error, TurnError::Resume(e) if e.kind == ResumeErrorKind::BadMac
            && e.tool_call_id.as_deref() == Some("call_2")),
        "{error:?}"
    );
    assert!(tools.writes.lock().unwrap().is_empty());
    resume(
        &session,
        &model,
        &mut conversation,
        &paused,
        [CallDecision::approve("call_2").with_mac(mac)],
    )
    .await
    .expect("its own MAC");
    assert_eq!(*tools.writes.lock().unwrap(), [json!({ "path": "a.txt" })]);
}

fn paused_of(outcome: TurnOutcome) -> PausedTurn {
    paused(&outcome)
}

#[tokio::test]
async fn a_paused_turn_read_back_from_json_resumes_in_a_fresh_binding_to_the_same_conversation() {
    // The reference: the same turn with the decision given at once.
    let (definition, _) = definition(None, ToolLimits::new());
    let first = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let mut conversation = user_says("write");
    let outcome = first
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let json = serde_json::to_string(&paused(&outcome)).unwrap();
    let stored = serde_json::to_string(&conversation).unwrap();
    drop(first);

    // Another process: the same definition, bound again to the same ids.
    let (again, tools) = self::definition(None, ToolLimits::new());
    let fresh = bind_to(&again, SESSION).await;
    let paused: PausedTurn = serde_json::from_str(&json).unwrap();
    let mut conversation: Vec<Message> = serde_json::from_str(&stored).unwrap();
    let model = ScriptedModel::new([answer("done")]);
    let outcome = resume(
        &fresh,
        &model,
        &mut conversation,
        &paused,
        [serde_json::from_value::<CallDecision>(json!({
            "tool_call_id": "call_2",
            "decision": { "type": "approve" }
        }))
        .unwrap()],
    )
    .await
    .expect("resumes");
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(tools.writes.lock().unwrap().len(), 1);
    assert_eq!(result_ids(&conversation), ["call_1", "call_2", "call_3"]);
    assert_eq!(conversation.last(), Some(&Message::assistant("done")));
}

#[test]
fn the_paused_turn_format_is_pinned() {
    let paused: PausedTurn = serde_json::from_value(json!({
        "version": 1,
        "session_id": "01234567-89ab-cdef-0123-456789abcdef",
        "loop_id": "fedcba98-7654-3210-fedc-ba9876543210",
        "mode": null,
        "message_index": 1,
        "pending": [{
            "tool_call_id": "call_2",
            "tool_name": "write_file",
            "arguments": { "path": "a.txt" },
            "reason": "writes a file",
            "mac": "ab"
        }],
        "iterations": 1,
        "calls": 3,
        "requests": 1,
        "usage": {
            "input_tokens": 5, "output_tokens": 2, "cache_read_tokens": 0,
            "cache_write_tokens": 0, "reasoning_tokens": 0
        }
    }))
    .expect("the version 1 form reads");
    assert_eq!(paused.session_id, SessionId::from_uuid(SESSION));
    assert_eq!(
        serde_json::to_string(&paused).unwrap(),
        r#"{"version":1,"session_id":"01234567-89ab-cdef-0123-456789abcdef","loop_id":"fedcba98-7654-3210-fedc-ba9876543210","mode":null,"message_index":1,"pending":[{"tool_call_id":"call_2","tool_name":"write_file","arguments":{"path":"a.txt"},"reason":"writes a file","mac":"ab"}],"iterations":1,"calls":3,"requests":1,"usage":{"input_tokens":5,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0}}"#
    );
    let decisions: Vec<CallDecision> = serde_json::from_value(json!([
        { "tool_call_id": "a", "decision": { "type": "approve" } },
        { "tool_call_id": "b", "mac": "ff", "decision": { "type": "approve_with", "arguments": { "path": "b" } } },
        { "tool_call_id": "c", "decision": { "type": "deny", "reason": "no" } },
        { "tool_call_id": "d", "decision": { "type": "result", "text": "ok" } }
    ]))
    .unwrap();
    assert_eq!(
        decisions,
        [
            CallDecision::approve("a"),
            CallDecision::approve_with("b", json!({ "path": "b" })).with_mac("ff"),
            CallDecision::deny("c", "no"),
            CallDecision::new(
                "d",
                Decision::Result {
                    text: "ok".into(),
                    is_error: false
                }
            ),
        ]
    );
}

#[tokio::test]
async fn limits_count_across_the_pause() {
    // Two iterations in all: the paused batch is the first.
    let (definition, _) = definition(None, ToolLimits::new().iterations(2));
    let session = bind_to(&definition, SESSION).await;
    let model = script([
        batch([call("call_4", "read", "{}")]),
        batch([call("call_5", "read", "{}")]),
        answer("done"),
    ]);
    let mut conversation = user_says("write");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let paused = paused(&outcome);
    let error = resume(
        &session,
        &model,
        &mut conversation,
        &paused,
        [CallDecision::approve("call_2")],
    )
    .await
    .expect_err("the third batch exceeds 2 iterations");
    let TurnError::ToolLimit(limit) = error else {
        panic!("{error:?}")
    };
    assert_eq!(
        (
            limit.kind,
            limit.iterations,
            limit.calls,
            limit.max_iterations
        ),
        (ExceededLimit::Iterations, 3, 5, Limit::at_most(2).unwrap())
    );
    assert_eq!(
        result_ids(&conversation),
        ["call_1", "call_2", "call_3", "call_4"]
    );
}

#[tokio::test]
async fn two_pending_calls_decided_out_of_order_are_answered_in_call_order() {
    let (definition, tools) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let model = ScriptedModel::new([
        batch([
            call("call_1", "write_file", r#"{"path": "one"}"#),
            call("call_2", "read", "{}"),
            call("call_3", "write_file", r#"{"path": "three"}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("write twice");
    let outcome = session
        .run_turn(&model, &mut conversation, run_others())
        .await
        .unwrap();
    let paused = paused(&outcome);
    let pending: Vec<&str> = paused
        .pending
        .iter()
        .map(|pending| pending.tool_call_id.as_str())
        .collect();
    assert_eq!(pending, ["call_1", "call_3"]);
    resume(
        &session,
        &model,
        &mut conversation,
        &paused,
        [
            CallDecision::approve("call_3"),
            CallDecision::deny("call_1", "not that one"),
        ],
    )
    .await
    .expect("resumes");
    assert_eq!(result_ids(&conversation), ["call_1", "call_2", "call_3"]);
    assert_eq!(*tools.writes.lock().unwrap(), [json!({ "path": "three" })]);
    assert!(result_for(&conversation, "call_1").is_error);
}

#[tokio::test]
async fn a_paused_turn_that_does_not_match_its_conversation_is_stale_and_runs_nothing() {
    let (definition, tools) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let (conversation, paused) = pause(&session, &model).await;

    let mut other_arguments = paused.clone();
    other_arguments.pending[0].arguments = json!({ "path": "/etc/passwd" });
    let mut twice = paused.clone();
    twice.pending.push(twice.pending[0].clone());
    let mut foreign_result = conversation.clone();
    foreign_result.push(Message::Tool(agent_loop::conversation::ToolResult::ok(
        "call_9", "made up",
    )));
    let cases = [
        ("other arguments", other_arguments, conversation.clone()),
        ("a call pending twice", twice, conversation.clone()),
        ("a result of no call", paused.clone(), foreign_result),
    ];
    for (what, paused, mut conversation) in cases {
        let before = conversation.clone();
        let error = resume(
            &session,
            &model,
            &mut conversation,
            &paused,
            [CallDecision::approve("call_2")],
        )
        .await
        .expect_err(what);
        assert!(
            matches!(&error, TurnError::Resume(e) if e.kind == ResumeErrorKind::Stale),
            "{what}: {error:?}"
        );
        assert_eq!(conversation, before, "{what}");
    }
    assert!(tools.writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_resume_cancelled_while_its_calls_run_answers_them_interrupted_and_goes_stale() {
    let (definition, _) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let (mut conversation, paused) = pause(&session, &model).await;
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let resumed = Resume::new(paused.clone(), [CallDecision::approve("call_2")]);
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&resumed)
                .cancellation(&cancelled)
                .build(),
        )
        .await
        .expect("interrupted");
    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert_eq!(result_ids(&conversation), ["call_1", "call_2", "call_3"]);
    let interrupted = result_for(&conversation, "call_2");
    assert!(interrupted.is_error);
    assert_eq!(interrupted.text(), "the call to `write_file` was aborted");
    assert_eq!(
        model.requests().len(),
        1,
        "no request after a cancelled resume"
    );
    assert_every_call_answered(&conversation);
    assert_eq!(
        refusal_of_approving(&session, &model, &mut conversation, &paused).await,
        ResumeErrorKind::Stale
    );
}

#[tokio::test]
async fn an_asking_gate_outside_a_turn_answers_the_call_as_not_run() {
    let (definition, tools) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let outcome = session
        .run_tool_call(&call("call_1", "write_file", r#"{"path": "a"}"#))
        .await;
    assert!(outcome.result.is_error);
    assert_eq!(
        outcome.result.text(),
        "the call to `write_file` was not run: it needs approval (writes a file)"
    );
    assert_eq!(
        outcome.stats.error,
        Some(agent_loop::bind::ToolCallErrorKind::NeedsApproval)
    );
    assert!(tools.writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_external_tools_call_pauses_without_a_gate_and_its_result_comes_with_the_resume() {
    let reads = Arc::new(AtomicUsize::new(0));
    let definition = Definition::builder()
        .name("browser")
        .tool(counting_tool("read", Arc::clone(&reads)))
        .tool(tool::Definition::external(ToolInfo::new(
            "pick_file",
            "Lets the user pick a file.",
            json!({ "type": "object", "properties": { "kind": { "type": "string" } } }),
        )))
        .build()
        .validate()
        .expect("valid");
    let session = bind_to(&definition, SESSION).await;
    let model = ScriptedModel::new([
        batch([
            call("call_1", "read", "{}"),
            call("call_2", "pick_file", r#"{"kind": "image"}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("pick an image");
    let outcome = session
        .run_turn(&model, &mut conversation, run_others())
        .await
        .unwrap();
    let paused = paused(&outcome);
    assert_eq!(
        serde_json::to_value(&paused.pending).unwrap(),
        json!([{
            "tool_call_id": "call_2",
            "tool_name": "pick_file",
            "arguments": { "kind": "image" },
            "reason": "an external tool: its result comes from outside this process",
            "external": true
        }])
    );
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    resume(
        &session,
        &model,
        &mut conversation,
        &paused,
        [CallDecision::result("call_2", "cat.png")],
    )
    .await
    .expect("resumes");
    assert_eq!(result_for(&conversation, "call_2").text(), "cat.png");
    assert_eq!(result_ids(&conversation), ["call_1", "call_2"]);

    let error = session
        .invoke("pick_file", json!({}))
        .await
        .expect_err("it does not run here");
    assert_eq!(error.kind, agent_loop::bind::ToolCallErrorKind::ToolFailed);
}

#[tokio::test]
async fn a_resume_in_another_mode_is_refused_and_an_external_error_result_reads_as_one() {
    let (definition, _) = self::definition(None, ToolLimits::new());
    let mut session = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let (mut conversation, paused) = pause(&session, &model).await;
    let mut other_mode = paused.clone();
    other_mode.mode = Some("review".into());
    assert_eq!(
        refusal_of_approving(&session, &model, &mut conversation, &other_mode).await,
        ResumeErrorKind::OtherMode
    );
    assert!(
        session.set_current_mode(Some("review")).is_err(),
        "no such mode here"
    );

    let (events, mut received) = TurnEvents::channel();
    let resumed = Resume::new(
        paused,
        [CallDecision::new(
            "call_2",
            Decision::Result {
                text: "the disk is full".into(),
                is_error: true,
            },
        )],
    );
    session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&resumed)
                .events(&events)
                .build(),
        )
        .await
        .expect("resumes");
    let result = result_for(&conversation, "call_2");
    assert!(result.is_error);
    assert!(
        result.text().contains("the disk is full"),
        "{}",
        result.text()
    );
    drop(events);
    let mut seen = Vec::new();
    while let Ok(event) = received.try_recv() {
        seen.push(event);
    }
    assert_eq!(seen.first(), Some(&TurnEvent::TurnResumed { decisions: 1 }));
}

/// A store shared by two replicas, as a database table would be.
#[derive(Default)]
struct SharedClaims(agent_loop::gate::InMemoryPauseClaims);

#[async_trait::async_trait]
impl agent_loop::gate::PauseClaims for SharedClaims {
    async fn claim(&self, pause_id: &str) -> Result<bool, tool::BoxError> {
        // Both replicas reach the store before either writes: the store
        // alone decides.
        tokio::task::yield_now().await;
        self.0.claim(pause_id).await
    }
}

/// Two replicas load one stored pause (each its own binding of the session
/// and its own copy of the conversation) and resume it at once with one
/// claim store: the approved call runs once, and the other resume is
/// refused typed before anything runs.
#[tokio::test]
async fn two_replicas_resuming_one_stored_pause_with_one_claim_store_run_the_call_once() {
    let (definition, tools) = definition(None, ToolLimits::new());
    let (first, second) = (
        bind_to(&definition, SESSION).await,
        bind_to(&definition, SESSION).await,
    );
    let (stored_conversation, paused) = pause(&first, &script([answer("done")])).await;
    assert!(
        paused.pause_id.starts_with("pause_") && paused.pause_id.len() == 38,
        "{}",
        paused.pause_id
    );
    // The same turn on another binding of the session pauses with the same id.
    let (_, again) = pause(&second, &script([])).await;
    assert_eq!(again.pause_id, paused.pause_id);
    let reads_before = tools.reads.load(Ordering::SeqCst);

    let claims = SharedClaims::default();
    let resume = Resume::new(paused.clone(), [CallDecision::approve("call_2")]);
    let (mut one, mut two) = (stored_conversation.clone(), stored_conversation.clone());
    let (model_one, model_two) = (
        ScriptedModel::new([answer("done")]),
        ScriptedModel::new([answer("done")]),
    );
    let options = || {
        TurnOptions::builder()
            .resume(&resume)
            .claims(&claims)
            .build()
    };
    let (a, b) = tokio::join!(
        first.run_turn(&model_one, &mut one, options()),
        second.run_turn(&model_two, &mut two, options()),
    );
    let (done, refused, untouched) = match (&a, &b) {
        (Ok(_), Err(error)) => (&one, error, &two),
        (Err(error), Ok(_)) => (&two, error, &one),
        other => panic!("not one of each: {other:?}"),
    };
    assert!(
        matches!(refused, TurnError::Resume(error) if error.kind == ResumeErrorKind::Claimed),
        "{refused}"
    );
    assert_eq!(
        *untouched, stored_conversation,
        "the refused resume changed nothing"
    );
    assert_eq!(*tools.writes.lock().unwrap(), [json!({ "path": "a.txt" })]);
    assert_eq!(tools.reads.load(Ordering::SeqCst), reads_before);
    assert_every_call_answered(done);
    assert_eq!(model_one.requests().len() + model_two.requests().len(), 1);
}

/// Without a store of its own, a binding claims in its memory: one binding
/// resumes one pause once, even from two copies of the conversation; and
/// a store that fails refuses the resume, which runs nothing.
#[tokio::test]
async fn a_binding_resumes_a_pause_once_and_a_failing_claim_store_refuses_the_resume() {
    struct Down;
    #[async_trait::async_trait]
    impl agent_loop::gate::PauseClaims for Down {
        async fn claim(&self, _pause_id: &str) -> Result<bool, tool::BoxError> {
            Err("the claims database is unreachable".into())
        }
    }
    let (definition, tools) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let (stored, paused) = pause(&session, &script([answer("done")])).await;
    let model = ScriptedModel::new([answer("done"), answer("done")]);

    let mut copy = stored.clone();
    let down = resume_with(&session, &model, &mut copy, &paused, Some(&Down)).await;
    assert!(
        matches!(&down, Err(TurnError::Resume(error)) if matches!(&error.kind, ResumeErrorKind::ClaimFailed { message } if message.contains("unreachable"))),
        "{down:?}"
    );
    assert_eq!(copy, stored);
    assert!(tools.writes.lock().unwrap().is_empty());

    let mut one = stored.clone();
    resume_with(&session, &model, &mut one, &paused, None)
        .await
        .expect("resumes");
    let mut two = stored.clone();
    let again = resume_with(&session, &model, &mut two, &paused, None).await;
    assert!(
        matches!(&again, Err(TurnError::Resume(error)) if error.kind == ResumeErrorKind::Claimed),
        "{again:?}"
    );
    assert_eq!(two, stored);
    assert_eq!(tools.writes.lock().unwrap().len(), 1);
}

async fn resume_with(
    session: &Definition<Bound>,
    model: &ScriptedModel,
    conversation: &mut Vec<Message>,
    paused: &PausedTurn,
    claims: Option<&dyn agent_loop::gate::PauseClaims>,
) -> Result<TurnOutcome, TurnError> {
    let resume = Resume::new(paused.clone(), [CallDecision::approve("call_2")]);
    let options = match claims {
        Some(claims) => TurnOptions::builder()
            .resume(&resume)
            .claims(claims)
            .build(),
        None => TurnOptions::builder().resume(&resume).build(),
    };
    session.run_turn(model, conversation, options).await
}

/// By default a batch with a call that asks runs none of its calls: the
/// allowed ones wait too, held, so the person decides seeing the whole
/// batch (DESIGN.md section 12). A resume that decides only the asking
/// call runs the held ones with it, in call order; a held call may be
/// denied like any.
#[tokio::test]
async fn a_batch_with_a_call_that_asks_runs_none_of_its_calls_until_decided() {
    let (definition, tools) = definition(None, ToolLimits::new());
    let session = bind_to(&definition, SESSION).await;
    let model = script([answer("done")]);
    let mut conversation = user_says("read, write, read");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("pauses");
    let paused = paused(&outcome);
    let held = |id: &str| {
        serde_json::from_value::<PendingCall>(json!({
            "tool_call_id": id,
            "tool_name": "read",
            "arguments": {},
            "reason": "held with its batch: its gates allowed it, and it runs once the batch's other calls are decided",
            "held": true
        }))
        .unwrap()
    };
    let asked = serde_json::from_value::<PendingCall>(json!({
        "tool_call_id": "call_2",
        "tool_name": "write_file",
        "arguments": { "path": "a.txt" },
        "reason": "writes a file"
    }))
    .unwrap();
    assert_eq!(paused.pending, [held("call_1"), asked, held("call_3")]);
    assert_eq!(tools.reads.load(Ordering::SeqCst), 0, "nothing ran");
    assert!(tools.writes.lock().unwrap().is_empty());
    assert_eq!(conversation.len(), 2, "no result yet");

    // Deciding the asking call alone runs the whole batch.
    let mut approved = conversation.clone();
    let outcome = resume(
        &session,
        &model,
        &mut approved,
        &paused,
        [CallDecision::approve("call_2")],
    )
    .await
    .expect("resumes");
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(tools.reads.load(Ordering::SeqCst), 2);
    assert_eq!(*tools.writes.lock().unwrap(), [json!({ "path": "a.txt" })]);
    assert_eq!(result_ids(&approved), ["call_1", "call_2", "call_3"]);
    assert_every_call_answered(&approved);

    // A held call denied is answered so, and does not run.
    let session = bind_to(&definition, SESSION).await;
    let outcome = resume(
        &session,
        &ScriptedModel::new([answer("done")]),
        &mut conversation,
        &paused,
        [
            CallDecision::approve("call_2"),
            CallDecision::deny("call_3", "not that one"),
        ],
    )
    .await
    .expect("resumes");
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(tools.reads.load(Ordering::SeqCst), 3, "call_1 only");
    assert!(result_for(&conversation, "call_3").is_error);
    assert_eq!(
        result_for(&conversation, "call_3").text(),
        "the call to `read` was denied: not that one"
    );
}
