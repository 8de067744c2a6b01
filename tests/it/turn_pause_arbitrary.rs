//! The pause property: for any batches of calls and any gate decisions, a
//! turn that pauses, is stored as JSON and resumed in a fresh binding of
//! the same definition (as often as it pauses) ends with the same
//! conversation, and the same outcome or limit error, as the same turn run
//! with a gate that gives the resume's decisions at once; every tool call
//! id is answered exactly once, and limits count across the pauses.

use std::collections::HashMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::turn_common::*;
use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::{
    CallDecision, PausePolicy, PausedTurn, Resume, ScriptedModel, TurnError, TurnOptions,
    TurnStatus,
};
use agent_loop::{Bindings, Definition, LoopId, SessionId, ToolLimits, Validated};

/// What becomes of one call.
#[derive(Clone, Copy, Debug)]
enum Fate {
    Allow,
    Deny,
    /// The gate asks; the person approves.
    AskApprove,
    /// The gate asks; the person denies.
    AskDeny,
}

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        Just(Fate::Allow),
        Just(Fate::Deny),
        Just(Fate::AskApprove),
        Just(Fate::AskDeny)
    ]
}

const REASON: &str = "the person said no";

/// `echo` tools `a` and `b`, gated by `fates` (by call id); `at_once`:
/// the gate gives the person's decision itself.
fn definition(
    fates: Arc<HashMap<String, Fate>>,
    at_once: bool,
    iterations: u32,
) -> Definition<Validated> {
    let echo = |name: &str| {
        let name = name.to_owned();
        tool::Definition::from_fn(
            ToolInfo::new(name.clone(), "Echoes.", json!({ "type": "object" })),
            move |arguments: Value, _context| {
                let name = name.clone();
                async move { Ok::<_, BoxError>(json!({ "tool": name, "arguments": arguments })) }
            },
        )
    };
    Definition::builder()
        .name("paused")
        .tool(echo("a"))
        .tool(echo("b"))
        .tool_limits(ToolLimits::new().iterations(iterations))
        .gate(
            move |call: &GateCall<'_>| match fates.get(call.tool_call_id) {
                Some(Fate::Deny) => GateDecision::deny(REASON),
                Some(Fate::AskApprove) if at_once => GateDecision::Allow,
                Some(Fate::AskDeny) if at_once => GateDecision::deny(REASON),
                Some(Fate::AskApprove | Fate::AskDeny) => GateDecision::ask("a person decides"),
                _ => GateDecision::Allow,
            },
        )
        .build()
        .validate()
        .expect("valid")
}

/// What a run ends in, comparable across the two ways.
#[derive(Debug, PartialEq)]
enum End {
    Answer(String),
    Limit { iterations: u32, calls: u32 },
}

async fn run(batches: &[Vec<(bool, Fate)>], iterations: u32, at_once: bool) -> (End, Vec<Message>) {
    let mut fates = HashMap::new();
    let mut script = Vec::new();
    for (b, batch_calls) in batches.iter().enumerate() {
        let calls: Vec<_> = batch_calls
            .iter()
            .enumerate()
            .map(|(c, (is_a, fate))| {
                let id = format!("call_{b}_{c}");
                fates.insert(id.clone(), *fate);
                call(
                    id,
                    if *is_a { "a" } else { "b" },
                    &format!(r#"{{"n": {c}}}"#),
                )
            })
            .collect();
        script.push(batch(calls));
    }
    script.push(ModelResponse::answer("done"));
    let fates = Arc::new(fates);
    let model = ScriptedModel::new(script);
    let (session_id, loop_id) = (SessionId::new(), LoopId::new());
    let mut session = definition(Arc::clone(&fates), at_once, iterations)
        .bind(Bindings::new(session_id, loop_id))
        .await
        .expect("binds");
    let mut conversation = user_says("go");
    // The allowed calls run before the pause, as when decided at once:
    // the property compares the two (holding the batch has tests of its
    // own, in `turn_pause`).
    let mut outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .pause_policy(PausePolicy::RunOthers)
                .build(),
        )
        .await;
    loop {
        let paused: PausedTurn = match &outcome {
            Ok(done) => match &done.status {
                TurnStatus::Paused(paused) => (**paused).clone(),
                TurnStatus::Completed { answer } => {
                    return (End::Answer(answer.clone()), conversation);
                }
                other => panic!("{other:?}"),
            },
            Err(TurnError::ToolLimit(limit)) => {
                let end = End::Limit {
                    iterations: limit.iterations,
                    calls: limit.calls,
                };
                return (end, conversation);
            }
            Err(error) => panic!("{error:?}"),
        };
        assert!(!at_once, "a gate that decides at once never pauses");
        // Stored and read back, then resumed in a fresh binding.
        let paused: PausedTurn =
            serde_json::from_str(&serde_json::to_string(&paused).unwrap()).unwrap();
        let stored: Vec<Message> =
            serde_json::from_str(&serde_json::to_string(&conversation).unwrap()).unwrap();
        conversation = stored;
        session = definition(Arc::clone(&fates), false, iterations)
            .bind(Bindings::new(session_id, loop_id))
            .await
            .expect("binds again");
        let decisions: Vec<CallDecision> = paused
            .pending
            .iter()
            .rev()
            .map(|pending| match fates[&pending.tool_call_id] {
                Fate::AskApprove => CallDecision::approve(&pending.tool_call_id),
                _ => CallDecision::deny(&pending.tool_call_id, REASON),
            })
            .collect();
        let resume = Resume::new(paused, decisions);
        outcome = session
            .run_turn(
                &model,
                &mut conversation,
                TurnOptions::builder()
                    .resume(&resume)
                    .pause_policy(PausePolicy::RunOthers)
                    .build(),
            )
            .await;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_paused_and_resumed_turn_ends_as_the_turn_decided_at_once(
        batches in prop::collection::vec(prop::collection::vec((any::<bool>(), fate()), 1..5), 1..4),
        iterations in 1_u32..5,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let (paused_end, paused_conversation) = runtime.block_on(run(&batches, iterations, false));
        let (direct_end, direct_conversation) = runtime.block_on(run(&batches, iterations, true));
        prop_assert_eq!(&paused_end, &direct_end);
        prop_assert_eq!(&paused_conversation, &direct_conversation);
        check_every_call_answered(&paused_conversation).map_err(TestCaseError::fail)?;
    }
}
