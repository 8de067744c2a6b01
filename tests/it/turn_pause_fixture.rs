//! Paused turns written by an earlier release still resume: the fixtures
//! under `tests/fixtures/paused-turn-v1/` were serialised by the release
//! that wrote format version 1 (before the turn became a state machine a
//! driver steps), each with the conversation at the pause and the final
//! conversation that release reached after the resume. Today's release
//! must read them and reach exactly that final conversation.
//!
//! `AGENT_LOOP_WRITE_FIXTURES=1` writes them anew; only ever do that on
//! the release that defines the format, never to make this test pass.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use crate::turn_common::*;
use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::gate::{ApprovalKey, GateCall, GateDecision};
use agent_loop::tool::{self, ToolInfo};
use agent_loop::turn::{
    BudgetPolicy, CallDecision, PausedTurn, Resume, ScriptedModel, TurnError, TurnOptions,
    TurnOutcome, TurnStatus,
};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, ToolLimits};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

const SESSION: Uuid = Uuid::from_u128(0x1111_2222_3333_4444_5555_6666_7777_8888);
const LOOP: Uuid = Uuid::from_u128(0x8888_7777_6666_5555_4444_3333_2222_1111);
/// The approval key of the gated fixture: its pending call is signed.
const KEY: &str = "fixture-approval-key-not-a-secret";

/// One stored pause: what a user kept, and what resuming it gave.
#[derive(Serialize, Deserialize)]
struct Fixture {
    paused: PausedTurn,
    /// The conversation at the pause.
    conversation: Vec<Message>,
    /// The decisions the resume takes.
    decisions: Vec<CallDecision>,
    /// The limits the resume raises, if any.
    limits: Option<ToolLimits>,
    /// The conversation after the resumed turn ended.
    final_conversation: Vec<Message>,
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/paused-turn-v1")
        .join(format!("{name}.json"))
}

/// `read` (no parameters) and `write_file` (`{"path": string}`), whose
/// calls a signed gate asks about; base limits `limits`.
async fn session(limits: ToolLimits) -> Definition<Bound> {
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
        |arguments: Value, _context| async move {
            Ok::<_, tool::BoxError>(json!(format!("wrote {}", arguments["path"])))
        },
    );
    Definition::builder()
        .name("writer")
        .tool(counting_tool("read", Arc::new(AtomicUsize::new(0))))
        .tool(write)
        .tool_limits(limits)
        .approval_key(ApprovalKey::new(KEY))
        .gate(|call: &GateCall<'_>| {
            if call.tool.name == "write_file" {
                GateDecision::ask("writes a file")
            } else {
                GateDecision::Allow
            }
        })
        .build()
        .validate()
        .expect("valid")
        .bind(Bindings::new(
            SessionId::from_uuid(SESSION),
            LoopId::from_uuid(LOOP),
        ))
        .await
        .expect("binds")
}

/// The gated case: a batch of `read`, a write, `read`; the write is
/// approved; then two more iterations and an answer.
fn gated_responses() -> Vec<ModelResponse> {
    vec![
        batch([
            call("call_1", "read", "{}"),
            call("call_2", "write_file", r#"{"path": "a.txt"}"#),
            call("call_3", "read", "{}"),
        ]),
        batch([call("call_4", "read", "{}")]),
        // An empty id: the turn mints one, from the session.
        batch([call("", "read", "{}")]),
        answer("done"),
    ]
}

/// The budget case: one request allowed; the resume raises it to three.
fn budget_responses() -> Vec<ModelResponse> {
    vec![
        batch([call("call_1", "read", "{}")]),
        batch([call("call_2", "read", "{}")]),
        answer("done"),
    ]
}

/// A script of `responses` from the `asked`-th on: the stored turn asked
/// the first ones before it paused.
fn after(responses: Vec<ModelResponse>, asked: usize) -> ScriptedModel {
    ScriptedModel::new(responses.into_iter().skip(asked))
}

/// Runs `script` on a fresh session until it pauses, then resumes with
/// `decisions` (and `limits`): the fixture this release writes.
async fn record(
    limits: ToolLimits,
    policy: BudgetPolicy,
    script: ScriptedModel,
    decisions: Vec<CallDecision>,
    raised: Option<ToolLimits>,
) -> Fixture {
    let session = session(limits).await;
    let mut conversation = user_says("read, write, read");
    let outcome = session
        .run_turn(
            &script,
            &mut conversation,
            TurnOptions::builder().budget_policy(policy).build(),
        )
        .await
        .expect("pauses");
    let TurnStatus::Paused(paused) = outcome.status else {
        panic!("not paused: {:?}", outcome.status);
    };
    let at_pause = conversation.clone();
    let mut decisions = decisions;
    for decision in &mut decisions {
        if let Some(pending) = paused
            .pending
            .iter()
            .find(|pending| pending.tool_call_id == decision.tool_call_id)
        {
            decision.mac = pending.mac.clone();
        }
    }
    let resumed = resume_turn(
        &session,
        &script,
        &mut conversation,
        &paused,
        &decisions,
        raised,
        policy,
    )
    .await
    .expect("resumes");
    assert_eq!(resumed.answer(), Some("done"));
    Fixture {
        paused: *paused,
        conversation: at_pause,
        decisions,
        limits: raised,
        final_conversation: conversation,
    }
}

/// Resumes `paused` on `session` with `decisions` (and `raised` limits)
/// under `policy`, `script` answering the requests after the pause.
async fn resume_turn(
    session: &Definition<Bound>,
    script: &ScriptedModel,
    conversation: &mut Vec<Message>,
    paused: &PausedTurn,
    decisions: &[CallDecision],
    raised: Option<ToolLimits>,
    policy: BudgetPolicy,
) -> Result<TurnOutcome, TurnError> {
    let mut resume = Resume::new(paused.clone(), decisions.to_vec());
    if let Some(raised) = raised {
        resume = resume.with_limits(raised);
    }
    let options = TurnOptions::builder()
        .budget_policy(policy)
        .resume(&resume)
        .build();
    session.run_turn(script, conversation, options).await
}

/// Resumes the stored fixture `name` on a fresh session of today's
/// release, with `limits`, `policy` and a script that answers what the
/// requests after the pause asked.
async fn resume_stored(
    name: &str,
    limits: ToolLimits,
    policy: BudgetPolicy,
    script: ScriptedModel,
) {
    let text = std::fs::read_to_string(path(name)).expect("the fixture is committed");
    let fixture: Fixture = serde_json::from_str(&text).expect("a version 1 fixture reads");
    assert_eq!(fixture.paused.version, 1);
    let session = session(limits).await;
    let mut conversation = fixture.conversation.clone();
    let outcome = resume_turn(
        &session,
        &script,
        &mut conversation,
        &fixture.paused,
        &fixture.decisions,
        fixture.limits,
        policy,
    )
    .await
    .expect("a stored version 1 pause resumes");
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(conversation, fixture.final_conversation);
    assert_every_call_answered(&conversation);
}

fn write_fixture(name: &str, fixture: &Fixture) {
    let text = serde_json::to_string_pretty(fixture).expect("serialises");
    std::fs::write(path(name), text + "\n").expect("writes the fixture");
}

fn writing() -> bool {
    std::env::var_os("AGENT_LOOP_WRITE_FIXTURES").is_some()
}

#[tokio::test]
async fn a_gated_pause_stored_by_version_1_resumes_to_the_same_final_conversation() {
    if writing() {
        let fixture = record(
            ToolLimits::new(),
            BudgetPolicy::Fail,
            ScriptedModel::new(gated_responses()),
            vec![CallDecision::approve("call_2")],
            None,
        )
        .await;
        write_fixture("gated", &fixture);
    }
    resume_stored(
        "gated",
        ToolLimits::new(),
        BudgetPolicy::Fail,
        after(gated_responses(), 1),
    )
    .await;
}

#[tokio::test]
async fn a_budget_pause_stored_by_version_1_resumes_with_raised_limits_to_the_same_final_conversation()
 {
    let limits = ToolLimits::new().requests(1);
    if writing() {
        let fixture = record(
            limits,
            BudgetPolicy::Pause,
            ScriptedModel::new(budget_responses()),
            Vec::new(),
            Some(ToolLimits::new().requests(3)),
        )
        .await;
        write_fixture("budget", &fixture);
    }
    resume_stored(
        "budget",
        limits,
        BudgetPolicy::Pause,
        after(budget_responses(), 1),
    )
    .await;
}
