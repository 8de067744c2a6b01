//! Agents as tools (`tool::Definition::agent`): an agent's turn runs inside
//! the call, under the calling turn's cancellation, token budgets and
//! `calls`; its usage and calls are the calling turn's too, its events
//! arrive under the call's id, and a pause of the agent pauses the caller
//! until a resume reaches the agent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::turn_common::*;
use agent_loop::conversation::{Message, ModelResponse, Usage};
use agent_loop::gate::{ApprovalKey, GateCall, GateDecision};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::{
    Agent, Budget, BudgetPolicy, CallDecision, ExceededLimit, Output, PausePolicy, PausedTurn,
    Resume, ResumeErrorKind, ScriptedModel, TurnError, TurnEvent, TurnEvents, TurnOptions,
    TurnStatus,
};
use agent_loop::{Definition, ToolLimits, Validated};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A definition named `name` with `tools` and base `limits`.
fn definition(
    name: &str,
    tools: impl IntoIterator<Item = tool::Definition>,
    limits: ToolLimits,
) -> Definition<Validated> {
    Definition::builder()
        .name(name)
        .tools(tools)
        .tool_limits(limits)
        .build()
        .validate()
        .expect("valid")
}

/// The tool `research`, running an agent of `tools` on `model`.
fn research(
    model: Arc<ScriptedModel>,
    tools: Vec<tool::Definition>,
    limits: ToolLimits,
) -> tool::Definition {
    tool::Definition::agent(
        "research",
        "Researches a question.",
        Agent::new(definition("researcher", tools, limits), model),
    )
}

fn task(id: &str, text: &str) -> ModelResponse {
    batch([call(id, "research", &json!({ "task": text }).to_string())])
}

fn drain(receiver: &mut tokio::sync::mpsc::UnboundedReceiver<TurnEvent>) -> Vec<TurnEvent> {
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    events
}

#[tokio::test]
async fn the_agents_answer_is_the_calls_result_and_its_usage_the_callers() {
    let reads = Arc::new(AtomicUsize::new(0));
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "read", "{}")]).with_usage(Usage::new(100, 10)),
        answer("Found it.").with_usage(Usage::new(150, 20)),
    ]));
    let session = bind_tools(
        [research(
            Arc::clone(&child),
            vec![counting_tool("read", Arc::clone(&reads))],
            ToolLimits::new(),
        )],
        ToolLimits::new(),
    )
    .await;
    let model = ScriptedModel::new([
        task("call_1", "Find the file.").with_usage(Usage::new(50, 5)),
        answer("Done.").with_usage(Usage::new(70, 7)),
    ]);
    let mut conversation = user_says("Go.");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(result_for(&conversation, "call_1").text(), "Found it.");
    assert!(!result_for(&conversation, "call_1").is_error);
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    // The agent saw the task alone, as a user message.
    let asked = child.requests();
    assert_eq!(asked[0].conversation, vec![Message::user("Find the file.")]);
    assert_eq!(asked[0].tool_names, ["read"]);
    // Its 250 + 30 tokens are the caller's, beside the caller's 120 + 12.
    assert_eq!(
        outcome.stats.usage,
        Usage::new(50 + 100 + 150 + 70, 5 + 10 + 20 + 7)
    );
}

#[tokio::test]
async fn an_agents_calls_count_against_the_callers_calls() {
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "read", "{}")]),
        batch([call("c2", "read", "{}"), call("c3", "read", "{}")]),
        answer("never"),
    ]));
    let reads = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [
            research(
                Arc::clone(&child),
                vec![counting_tool("read", Arc::clone(&reads))],
                ToolLimits::new(),
            ),
            counting_tool("read", Arc::new(AtomicUsize::new(0))),
        ],
        ToolLimits::new().calls(3),
    )
    .await;
    let model = ScriptedModel::new([
        task("call_1", "Read twice."),
        batch([call("call_2", "read", "{}"), call("call_3", "read", "{}")]),
    ]);
    let mut conversation = user_says("Go.");
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("the caller's calls run out");
    // The caller's call (1) and the agent's first (1) fit its 3; the
    // agent's batch of 2 would make 4: the agent's turn fails, and its
    // call's result says so.
    assert_eq!(reads.load(Ordering::SeqCst), 1);
    let result = result_for(&conversation, "call_1");
    assert!(result.is_error);
    assert!(
        result.text().contains("tool limit exceeded (calls)"),
        "{}",
        result.text()
    );
    // Then the caller has 2 calls; its batch of 2 would make 4.
    let TurnError::ToolLimit(limit) = error else {
        panic!("not a tool limit: {error:?}");
    };
    assert_eq!(
        (limit.kind, limit.calls, limit.batch_calls),
        (ExceededLimit::Calls, 4, 2)
    );
}

#[tokio::test]
async fn the_callers_token_budget_binds_the_agent() {
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "read", "{}")]).with_usage(Usage::new(50, 10)),
        batch([call("c2", "read", "{}")]).with_usage(Usage::new(30, 5)),
        answer("never sent"),
    ]));
    let session = bind_tools(
        [research(
            Arc::clone(&child),
            vec![counting_tool("read", Arc::new(AtomicUsize::new(0)))],
            ToolLimits::new(),
        )],
        ToolLimits::new().total_tokens(100),
    )
    .await;
    let model = ScriptedModel::new([
        task("call_1", "Go on.").with_usage(Usage::new(10, 0)),
        answer("never"),
    ]);
    let mut conversation = user_says("Go.");
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect_err("the budget is reached");
    // 10 (caller) + 60 + 35 (agent) = 105: the agent's third request is
    // not sent, nor the caller's next.
    assert_eq!(child.remaining(), 1);
    assert!(
        result_for(&conversation, "call_1")
            .text()
            .contains("budget reached (total_tokens): the turn used 105 of at most 100"),
        "{}",
        result_for(&conversation, "call_1").text()
    );
    let TurnError::Budget(budget) = error else {
        panic!("not a budget: {error:?}");
    };
    assert_eq!((budget.budget, budget.used), (Budget::TotalTokens, 105));
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn the_agents_events_arrive_under_the_calls_id() {
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "read", "{}")]),
        answer("Found it."),
    ]));
    let session = bind_tools(
        [research(
            Arc::clone(&child),
            vec![counting_tool("read", Arc::new(AtomicUsize::new(0)))],
            ToolLimits::new(),
        )],
        ToolLimits::new(),
    )
    .await;
    let model = ScriptedModel::new([task("call_1", "Find."), answer("Done.")]);
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = user_says("Go.");
    session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .expect("completes");
    let nested: Vec<TurnEvent> = drain(&mut received)
        .into_iter()
        .filter_map(|event| match event {
            TurnEvent::Nested {
                tool_call_id,
                tool_name,
                event,
            } => {
                assert_eq!(
                    (tool_call_id.as_str(), tool_name.as_str()),
                    ("call_1", "research")
                );
                Some(*event)
            }
            _ => None,
        })
        .collect();
    let kinds: Vec<String> = nested
        .iter()
        .map(|event| match event {
            TurnEvent::ModelRequestStarted { iteration } => format!("request {iteration}"),
            TurnEvent::ModelResponded { .. } => "responded".into(),
            TurnEvent::ToolCallStarted { tool_call_id, .. } => format!("started {tool_call_id}"),
            TurnEvent::ToolCallFinished { tool_call_id, .. } => format!("finished {tool_call_id}"),
            TurnEvent::BatchFinished { iteration, .. } => format!("batch {iteration}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "request 1",
            "responded",
            "started c1",
            "finished c1",
            "batch 1",
            "request 2",
            "responded"
        ]
    );
}

#[tokio::test]
async fn cancelling_the_caller_stops_the_agents_tools() {
    let dropped = Arc::new(AtomicBool::new(false));
    let started = Arc::new(tokio::sync::Notify::new());
    let (dropped_in, started_in) = (Arc::clone(&dropped), Arc::clone(&started));
    let slow = tool::Definition::from_fn(
        ToolInfo::without_parameters("slow", "Never ends."),
        move |_arguments: Value, _context| {
            let dropped = Arc::clone(&dropped_in);
            let started = Arc::clone(&started_in);
            async move {
                struct OnDrop(Arc<AtomicBool>);
                impl Drop for OnDrop {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _guard = OnDrop(dropped);
                started.notify_one();
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok::<_, BoxError>(json!("late"))
            }
        },
    );
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "slow", "{}")]).with_usage(Usage::new(40, 4)),
        answer("never"),
    ]));
    let session = bind_tools(
        [research(Arc::clone(&child), vec![slow], ToolLimits::new())],
        ToolLimits::new(),
    )
    .await;
    let model = ScriptedModel::new([task("call_1", "Wait."), answer("never")]);
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            started.notified().await;
            cancel.cancel();
        })
    };
    let mut conversation = user_says("Go.");
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        session.run_turn(&model, &mut conversation, &cancel),
    )
    .await
    .expect("the turn returns promptly")
    .expect("interrupted, not failed");
    canceller.await.expect("the canceller ran");
    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the agent's tool was stopped"
    );
    // What the agent spent before the token fired is the caller's.
    assert_eq!(outcome.stats.usage, Usage::new(40, 4));
    // The batch was not committed: the caller's conversation is the user's.
    assert_eq!(conversation, user_says("Go."));
}

#[tokio::test]
async fn an_agents_structured_output_is_the_calls_result() {
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Verdict {
        ok: bool,
    }
    let child = Arc::new(ScriptedModel::new([batch([call(
        "c1",
        "structured_output",
        r#"{"ok": true}"#,
    )])]));
    let agent = Agent::new(
        definition("judge", [], ToolLimits::new()),
        Arc::clone(&child),
    )
    .output(Output::typed::<Verdict>().expect("an output"));
    let session = bind_tools(
        [tool::Definition::agent("judge", "Judges.", agent)],
        ToolLimits::new(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([call("call_1", "judge", r#"{"task": "Is it ok?"}"#)]),
        answer("It is."),
    ]);
    let mut conversation = user_says("Go.");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("completes");
    assert_eq!(result_for(&conversation, "call_1").text(), r#"{"ok":true}"#);
}

/// The agent `researcher`, whose `write_file` calls a gate asks about;
/// with `key`, its pending calls are signed.
fn gated_researcher(writes: Arc<AtomicUsize>, key: Option<&str>) -> Definition<Validated> {
    let mut builder = Definition::builder()
        .name("researcher")
        .tool(counting_tool("write_file", writes))
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
    builder.build().validate().expect("valid")
}

/// `research`, running [`gated_researcher`] on `child`.
fn gated_research(child: Arc<ScriptedModel>, writes: Arc<AtomicUsize>) -> tool::Definition {
    tool::Definition::agent(
        "research",
        "Researches.",
        Agent::new(gated_researcher(writes, None), child),
    )
}

fn paused(status: &TurnStatus) -> PausedTurn {
    match status {
        TurnStatus::Paused(paused) => (**paused).clone(),
        other => panic!("not paused: {other:?}"),
    }
}

#[tokio::test]
async fn an_agent_that_waits_for_a_decision_pauses_the_caller_and_the_resume_reaches_it() {
    let writes = Arc::new(AtomicUsize::new(0));
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "write_file", "{}")]).with_usage(Usage::new(10, 1)),
        answer("Wrote it.").with_usage(Usage::new(20, 2)),
    ]));
    let session = bind_tools(
        [gated_research(Arc::clone(&child), Arc::clone(&writes))],
        ToolLimits::new(),
    )
    .await;
    let model = ScriptedModel::new([
        task("call_1", "Write it.").with_usage(Usage::new(5, 0)),
        answer("All done.").with_usage(Usage::new(7, 0)),
    ]);
    let mut conversation = user_says("Go.");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("pauses");
    let paused = paused(&outcome.status);
    assert_eq!(paused.pending.len(), 1);
    let pending = &paused.pending[0];
    assert_eq!(
        (pending.tool_call_id.as_str(), pending.tool_name.as_str()),
        ("call_1", "research")
    );
    let agent = pending.agent.as_ref().expect("the agent's pause");
    assert_eq!(agent.paused.pending[0].tool_call_id, "c1");
    assert_eq!(agent.paused.pending[0].reason, "writes a file");
    assert_eq!(
        agent.conversation.len(),
        2,
        "the task and the agent's batch"
    );
    // The caller's call has no result yet, nor the agent's.
    assert_eq!(tool_results(&conversation).len(), 0);
    assert_eq!(writes.load(Ordering::SeqCst), 0);
    assert_eq!(paused.usage, Usage::new(15, 1));
    // The paused turn is JSON, the agent's with it.
    let stored: PausedTurn =
        serde_json::from_str(&serde_json::to_string(&paused).expect("serialises"))
            .expect("reads back");
    assert_eq!(stored, paused);

    // An approval of the agent's call is refused: its agent's calls are
    // the ones to decide; so is a missing decision for them.
    for (decision, kind, id) in [
        (
            CallDecision::approve("call_1"),
            ResumeErrorKind::WrongDecision,
            "call_1",
        ),
        (
            CallDecision::agent("call_1", []),
            ResumeErrorKind::MissingDecision,
            "c1",
        ),
        (
            CallDecision::agent(
                "call_1",
                [CallDecision::approve("c1"), CallDecision::approve("c9")],
            ),
            ResumeErrorKind::UnknownCall,
            "c9",
        ),
    ] {
        let resume = Resume::new(stored.clone(), [decision]);
        let mut copy = conversation.clone();
        let error = session
            .run_turn(
                &model,
                &mut copy,
                TurnOptions::builder().resume(&resume).build(),
            )
            .await
            .expect_err("refused");
        let TurnError::Resume(error) = error else {
            panic!("not a resume error: {error:?}");
        };
        assert_eq!(
            (error.kind, error.tool_call_id.as_deref()),
            (kind, Some(id))
        );
        assert_eq!(copy, conversation, "nothing changed");
    }
    assert_eq!(writes.load(Ordering::SeqCst), 0);

    let resume = Resume::new(
        stored,
        [CallDecision::agent("call_1", [CallDecision::approve("c1")])],
    );
    let (events, mut received) = TurnEvents::channel();
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&resume)
                .events(&events)
                .build(),
        )
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("All done."));
    assert_eq!(
        writes.load(Ordering::SeqCst),
        1,
        "the approved call ran once"
    );
    assert_eq!(result_for(&conversation, "call_1").text(), "Wrote it.");
    assert_every_call_answered(&conversation);
    // The resumed agent's events are under the call, its usage the caller's.
    assert!(drain(&mut received).iter().any(|event| matches!(
        event,
        TurnEvent::Nested { tool_call_id, event, .. }
            if tool_call_id == "call_1" && matches!(**event, TurnEvent::TurnResumed { decisions: 1 })
    )));
    assert_eq!(outcome.stats.usage, Usage::new(5 + 10 + 20 + 7, 1 + 2));
}

#[tokio::test]
async fn a_denied_agent_call_is_answered_without_resuming_the_agent() {
    let writes = Arc::new(AtomicUsize::new(0));
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "write_file", "{}")]),
        answer("never"),
    ]));
    let session = bind_tools(
        [gated_research(Arc::clone(&child), Arc::clone(&writes))],
        ToolLimits::new(),
    )
    .await;
    let model = ScriptedModel::new([task("call_1", "Write it."), answer("Fine.")]);
    let mut conversation = user_says("Go.");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("pauses");
    let resume = Resume::new(
        paused(&outcome.status),
        [CallDecision::deny("call_1", "not now")],
    );
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().resume(&resume).build(),
        )
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("Fine."));
    assert_eq!(writes.load(Ordering::SeqCst), 0);
    assert_eq!(child.remaining(), 1, "the agent was not asked again");
    assert!(
        result_for(&conversation, "call_1")
            .text()
            .contains("not now")
    );
}

#[tokio::test]
async fn a_direct_call_runs_the_agent_and_refuses_its_pause() {
    let child = Arc::new(ScriptedModel::new([answer("Direct.")]));
    let session = bind_tools(
        [research(Arc::clone(&child), Vec::new(), ToolLimits::new())],
        ToolLimits::new(),
    )
    .await;
    let output = session
        .invoke("research", json!({ "task": "Hi." }))
        .await
        .expect("runs");
    assert_eq!(output, tool::ToolOutput::from(json!("Direct.")));

    let writes = Arc::new(AtomicUsize::new(0));
    let child = Arc::new(ScriptedModel::new([batch([call(
        "c1",
        "write_file",
        "{}",
    )])]));
    let session = bind_tools(
        [gated_research(child, Arc::clone(&writes))],
        ToolLimits::new(),
    )
    .await;
    let error = session
        .invoke("research", json!({ "task": "Write." }))
        .await
        .expect_err("a direct call cannot wait");
    assert!(error.message.contains("cannot wait"), "{}", error.message);
    assert_eq!(writes.load(Ordering::SeqCst), 0);
}

/// The lead offers `research` (an agent whose `write_file` a gate asks
/// about, its pending calls signed with its own key) and `deploy` (a gate
/// asks).
fn keyed_lead(
    child: Arc<ScriptedModel>,
    writes: Arc<AtomicUsize>,
    deploys: Arc<AtomicUsize>,
) -> Definition<Validated> {
    let researcher = gated_researcher(writes, Some("the agent's key"));
    Definition::builder()
        .name("lead")
        .tool(tool::Definition::agent(
            "research",
            "Researches.",
            Agent::new(researcher, child),
        ))
        .tool(counting_tool("deploy", deploys))
        .gate(|call: &GateCall<'_>| {
            if call.tool.name == "deploy" {
                GateDecision::ask("deploys")
            } else {
                GateDecision::Allow
            }
        })
        .build()
        .validate()
        .expect("valid")
}

#[tokio::test]
async fn an_agents_decisions_are_checked_by_its_binding_before_anything_runs() {
    let (writes, deploys) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "write_file", "{}")]),
        answer("Wrote it."),
    ]));
    let session = bind(&keyed_lead(
        Arc::clone(&child),
        Arc::clone(&writes),
        Arc::clone(&deploys),
    ))
    .await;
    let model = ScriptedModel::new([
        batch([
            call("call_1", "research", r#"{"task": "Write it."}"#),
            call("call_2", "deploy", "{}"),
        ]),
        answer("Deployed."),
    ]);
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = user_says("Go.");
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
    let paused = paused(&outcome.status);
    assert_eq!(
        paused
            .pending
            .iter()
            .map(|pending| pending.tool_call_id.as_str())
            .collect::<Vec<_>>(),
        ["call_1", "call_2"]
    );
    // The agent's call is pending, not finished: no `ToolCallFinished`.
    let for_call_1: Vec<&'static str> = drain(&mut received)
        .iter()
        .filter_map(|event| match event {
            TurnEvent::ToolCallStarted { tool_call_id, .. } if tool_call_id == "call_1" => {
                Some("started")
            }
            TurnEvent::ToolCallFinished { tool_call_id, .. } if tool_call_id == "call_1" => {
                Some("finished")
            }
            TurnEvent::ToolCallPending { tool_call_id, .. } if tool_call_id == "call_1" => {
                Some("pending")
            }
            _ => None,
        })
        .collect();
    assert_eq!(for_call_1, ["started", "pending"]);
    let agent_mac = paused.pending[0]
        .agent
        .as_ref()
        .expect("the agent's pause")
        .paused
        .pending[0]
        .mac
        .clone()
        .expect("signed with the agent's key");

    // Without the agent's MAC the resume is refused whole: `deploy` does
    // not run either, and the paused turn stays good.
    let resume = Resume::new(
        paused.clone(),
        [
            CallDecision::agent("call_1", [CallDecision::approve("c1")]),
            CallDecision::approve("call_2"),
        ],
    );
    let before = conversation.clone();
    let error = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().resume(&resume).build(),
        )
        .await
        .expect_err("refused");
    let TurnError::Resume(error) = error else {
        panic!("not a resume error: {error:?}");
    };
    assert_eq!(
        (error.kind, error.tool_call_id.as_deref()),
        (ResumeErrorKind::BadMac, Some("c1"))
    );
    assert_eq!(conversation, before);
    assert_eq!(
        (
            writes.load(Ordering::SeqCst),
            deploys.load(Ordering::SeqCst)
        ),
        (0, 0)
    );

    let resume = Resume::new(
        paused,
        [
            CallDecision::agent("call_1", [CallDecision::approve("c1").with_mac(agent_mac)]),
            CallDecision::approve("call_2"),
        ],
    );
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().resume(&resume).build(),
        )
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("Deployed."));
    assert_eq!(
        (
            writes.load(Ordering::SeqCst),
            deploys.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
    assert_eq!(result_for(&conversation, "call_1").text(), "Wrote it.");
}

#[tokio::test]
async fn a_budget_of_the_caller_reached_in_the_agent_pauses_both_under_the_pause_policy() {
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "read", "{}")]).with_usage(Usage::new(90, 10)),
        answer("Read it.").with_usage(Usage::new(5, 1)),
    ]));
    let reads = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [research(
            Arc::clone(&child),
            vec![counting_tool("read", Arc::clone(&reads))],
            ToolLimits::new(),
        )],
        ToolLimits::new().total_tokens(100),
    )
    .await;
    let model = ScriptedModel::new([task("call_1", "Read."), answer("Done.")]);
    let mut conversation = user_says("Go.");
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .budget_policy(BudgetPolicy::Pause)
                .build(),
        )
        .await
        .expect("pauses");
    let paused = paused(&outcome.status);
    let agent = paused.pending[0].agent.as_ref().expect("the agent paused");
    assert_eq!(agent.paused.budget, Some(Budget::TotalTokens));
    assert!(agent.paused.pending.is_empty());
    assert_eq!(
        paused.pending[0].reason,
        "the agent `research` paused: the budget `total_tokens` of its turn or of a turn above it was reached"
    );
    assert_eq!(reads.load(Ordering::SeqCst), 1);

    // Raised on the caller, the budget lets the agent go on.
    let resume = Resume::new(paused, [CallDecision::agent("call_1", [])])
        .with_limits(ToolLimits::new().total_tokens(1_000));
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .budget_policy(BudgetPolicy::Pause)
                .resume(&resume)
                .build(),
        )
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(result_for(&conversation, "call_1").text(), "Read it.");
    assert_eq!(outcome.stats.usage, Usage::new(95, 11));
}

#[tokio::test]
async fn an_agents_agent_counts_and_reports_two_levels_up() {
    let grandchild = Arc::new(ScriptedModel::new([
        answer("Deep answer.").with_usage(Usage::new(3, 1))
    ]));
    let deep = tool::Definition::agent(
        "deep",
        "Looks deeper.",
        Agent::new(
            definition("deep", [], ToolLimits::new()),
            Arc::clone(&grandchild),
        ),
    );
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "deep", r#"{"task": "Deeper."}"#)]).with_usage(Usage::new(20, 2)),
        answer("Middle answer.").with_usage(Usage::new(30, 3)),
    ]));
    let session = bind_tools(
        [research(Arc::clone(&child), vec![deep], ToolLimits::new())],
        ToolLimits::new().calls(2),
    )
    .await;
    let model = ScriptedModel::new([
        task("call_1", "Look.").with_usage(Usage::new(100, 10)),
        answer("Top answer.").with_usage(Usage::new(200, 20)),
    ]);
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = user_says("Go.");
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .expect("completes: 1 call of the lead and 1 of the agent make 2");
    assert_eq!(outcome.answer(), Some("Top answer."));
    assert_eq!(result_for(&conversation, "call_1").text(), "Middle answer.");
    assert_eq!(
        outcome.stats.usage,
        Usage::new(100 + 20 + 3 + 30 + 200, 10 + 2 + 1 + 3 + 20)
    );
    // The deepest agent's first request, nested under both calls.
    assert!(drain(&mut received).iter().any(|event| matches!(
        event,
        TurnEvent::Nested { tool_call_id, event, .. } if tool_call_id == "call_1"
            && matches!(&**event, TurnEvent::Nested { tool_call_id, event, .. } if tool_call_id == "c1"
                && matches!(**event, TurnEvent::ModelRequestStarted { iteration: 1 }))
    )));
}

/// A lead with its own key offering `research` ([`gated_researcher`], no
/// key of its own) and nothing else.
fn lead_with_key(child: Arc<ScriptedModel>, writes: Arc<AtomicUsize>) -> Definition<Validated> {
    Definition::builder()
        .name("lead")
        .tool(tool::Definition::agent(
            "research",
            "Researches.",
            Agent::new(gated_researcher(writes, None), child),
        ))
        .approval_key(ApprovalKey::new("the lead's key"))
        .build()
        .validate()
        .expect("valid")
}

#[tokio::test]
async fn the_callers_mac_covers_the_agents_pause_and_an_older_pause_is_stale() {
    let writes = Arc::new(AtomicUsize::new(0));
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "write_file", "{}")]),
        batch([call("c2", "write_file", "{}")]),
        answer("Wrote both."),
    ]));
    let session = bind(&lead_with_key(Arc::clone(&child), Arc::clone(&writes))).await;
    let model = ScriptedModel::new([task("call_1", "Write twice."), answer("Done.")]);
    let mut conversation = user_says("Go.");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("pauses");
    let first = paused(&outcome.status);
    let mac = first.pending[0].mac.clone().expect("signed");
    let decide = |paused: &PausedTurn, id: &str, mac: &str| {
        Resume::new(
            paused.clone(),
            [CallDecision::agent("call_1", [CallDecision::approve(id)]).with_mac(mac)],
        )
    };

    // A client that rewrites the agent's pending call is refused: the
    // lead's MAC covers the agent's whole pause.
    let mut forged = first.clone();
    let agent = forged.pending[0].agent.as_mut().expect("the agent's pause");
    agent.paused.pending[0].tool_name = "delete_all".into();
    let error = session
        .run_turn(
            &model,
            &mut conversation.clone(),
            TurnOptions::builder()
                .resume(&decide(&forged, "c1", &mac))
                .build(),
        )
        .await
        .expect_err("refused");
    assert!(
        matches!(error, TurnError::Resume(ref error) if error.kind == ResumeErrorKind::BadMac),
        "{error:?}"
    );
    assert_eq!(writes.load(Ordering::SeqCst), 0);

    // The agent runs c1, then pauses again at c2: the lead pauses again.
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&decide(&first, "c1", &mac))
                .build(),
        )
        .await
        .expect("pauses again");
    let second = paused(&outcome.status);
    assert_eq!(writes.load(Ordering::SeqCst), 1);
    assert_eq!(
        second.pending[0]
            .agent
            .as_ref()
            .expect("paused")
            .paused
            .pending[0]
            .tool_call_id,
        "c2"
    );
    // A retry of the first pause would run c1 again: it is stale.
    let error = session
        .run_turn(
            &model,
            &mut conversation.clone(),
            TurnOptions::builder()
                .resume(&decide(&first, "c1", &mac))
                .build(),
        )
        .await
        .expect_err("stale");
    assert!(
        matches!(error, TurnError::Resume(ref error) if error.kind == ResumeErrorKind::Stale
            && error.tool_call_id.as_deref() == Some("call_1")),
        "{error:?}"
    );
    assert_eq!(writes.load(Ordering::SeqCst), 1);
    let mac = second.pending[0].mac.clone().expect("signed");
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .resume(&decide(&second, "c2", &mac))
                .build(),
        )
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(writes.load(Ordering::SeqCst), 2);
    assert_eq!(result_for(&conversation, "call_1").text(), "Wrote both.");
}

#[tokio::test]
async fn an_agent_paused_by_its_own_budget_goes_on_with_limits_the_server_gives() {
    let child = Arc::new(ScriptedModel::new([
        batch([call("c1", "read", "{}")]).with_usage(Usage::new(90, 10)),
        answer("Read it."),
    ]));
    let session = bind_tools(
        [research(
            Arc::clone(&child),
            vec![counting_tool("read", Arc::new(AtomicUsize::new(0)))],
            ToolLimits::new().total_tokens(100),
        )],
        ToolLimits::new(),
    )
    .await;
    let model = ScriptedModel::new([task("call_1", "Read."), answer("Done.")]);
    let options = || TurnOptions::builder().budget_policy(BudgetPolicy::Pause);
    let mut conversation = user_says("Go.");
    let outcome = session
        .run_turn(&model, &mut conversation, options().build())
        .await
        .expect("pauses");
    let paused = paused(&outcome.status);
    assert_eq!(
        paused.pending[0]
            .agent
            .as_ref()
            .expect("paused")
            .paused
            .budget,
        Some(Budget::TotalTokens)
    );
    // Without new limits it would pause again; with them it goes on.
    let resume = Resume::new(
        paused,
        [CallDecision::agent_with_limits(
            "call_1",
            [],
            ToolLimits::new().total_tokens(1_000),
        )],
    );
    let outcome = session
        .run_turn(&model, &mut conversation, options().resume(&resume).build())
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("Done."));
    assert_eq!(result_for(&conversation, "call_1").text(), "Read it.");
}

/// `Agent::tool` is `tool::Definition::agent`: the lead's call of it runs
/// the agent's turn and reads its answer.
#[tokio::test]
async fn agent_tool_offers_the_agent_as_a_tool_like_definition_agent() {
    use agent_loop::turn::{Agent, ScriptedModel};
    let researcher = agent_loop::Definition::builder()
        .name("researcher")
        .build()
        .validate()
        .expect("valid");
    let research = Agent::new(
        researcher,
        ScriptedModel::new([agent_loop::conversation::ModelResponse::answer("Paris.")]),
    )
    .tool("research", "Researches a question and answers it.");
    assert_eq!(research.name(), "research");
    let lead = agent_loop::Definition::builder()
        .name("lead")
        .tool(research)
        .build()
        .validate()
        .expect("valid");
    let session = crate::turn_common::bind(&lead).await;
    let model = ScriptedModel::new([
        crate::turn_common::batch([crate::turn_common::call(
            "call_1",
            "research",
            r#"{"task": "Capital of France?"}"#,
        )]),
        crate::turn_common::answer("It is Paris."),
    ]);
    let mut conversation = crate::turn_common::user_says("Capital of France?");
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("It is Paris."));
    assert_eq!(conversation[2].text(), "Paris.");
}

/// A scripted model that knows its prices, as the HTTP models do.
struct Priced(Arc<ScriptedModel>, agent_loop::conversation::Prices);

#[async_trait::async_trait]
impl agent_loop::turn::Model for Priced {
    async fn respond(
        &self,
        request: agent_loop::turn::ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        self.0.respond(request).await
    }

    fn prices(&self) -> Option<agent_loop::conversation::Prices> {
        Some(self.1)
    }
}

/// The tool `research`, running an agent without tools on `model`.
fn priced_research(model: impl agent_loop::turn::Model + 'static) -> tool::Definition {
    tool::Definition::agent(
        "research",
        "Researches a question.",
        Agent::new(definition("researcher", vec![], ToolLimits::new()), model),
    )
}

/// A model answering once, with 1,000 input tokens.
fn one_answer() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new([
        answer("Found it.").with_usage(Usage::new(1_000, 0))
    ]))
}

/// A lead at `prices` that calls `research` once, then answers, each
/// response with 1,000 input tokens.
fn priced_lead(prices: agent_loop::conversation::Prices) -> Priced {
    Priced(
        Arc::new(ScriptedModel::new([
            task("call_1", "find it").with_usage(Usage::new(1_000, 0)),
            answer("Done.").with_usage(Usage::new(1_000, 0)),
        ])),
        prices,
    )
}

/// An agent's tokens cost what its own model charges: the lead's cost is
/// its own tokens at its prices plus the agent's at the agent's, and the
/// lead's cost budget counts them so. An agent without prices under a
/// lead with a cost budget cannot count toward it and does not run.
#[tokio::test]
async fn an_agents_tokens_cost_its_own_models_prices_in_the_leads_cost_and_budget() {
    use agent_loop::conversation::{Cost, Prices};
    // The agent's model is ten times the lead's.
    let (lead_prices, agent_prices) = (Prices::new(1.0, 1.0), Prices::new(10.0, 10.0));
    let run = |limits: ToolLimits, child: Arc<ScriptedModel>, priced: bool| async move {
        let research = if priced {
            priced_research(Priced(child, agent_prices))
        } else {
            priced_research(child)
        };
        let session = bind_tools([research], limits).await;
        let mut conversation = user_says("Research it.");
        let result = session
            .run_turn(
                &priced_lead(lead_prices),
                &mut conversation,
                &CancellationToken::new(),
            )
            .await;
        (result, conversation)
    };
    let (outcome, _) = run(ToolLimits::new(), one_answer(), true).await;
    let outcome = outcome.expect("completes");
    // 2,000 lead tokens at $1 and 1,000 agent tokens at $10, per million.
    assert_eq!(outcome.stats.usage, Usage::new(3_000, 0));
    assert_eq!(
        outcome.stats.cost,
        Some(Cost::from_picodollars(12_000_000_000))
    );

    // The lead's budget of $0.011 is passed by the agent's $0.010 on top
    // of the lead's $0.001 (at the lead's prices alone it would be $0.002):
    // the request after the batch is not sent.
    let (error, _) = run(
        ToolLimits::new().cost_microdollars(11_000),
        one_answer(),
        true,
    )
    .await;
    let Err(TurnError::Budget(reached)) = error else {
        panic!("{error:?}")
    };
    assert_eq!(reached.used, 11_000);

    // An agent without prices under that budget: its call fails, typed,
    // and nothing of it was sent.
    let unpriced_child = one_answer();
    let (outcome, conversation) = run(
        ToolLimits::new().cost_microdollars(1_000_000),
        Arc::clone(&unpriced_child),
        false,
    )
    .await;
    outcome.expect("the lead goes on");
    assert!(
        unpriced_child.requests().is_empty(),
        "the agent sent nothing"
    );
    let result = conversation[2].as_tool_result().expect("the call's result");
    assert!(result.is_error, "{}", result.text());
    assert!(result.text().contains("prices"), "{}", result.text());
}
