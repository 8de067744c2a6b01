//! The step property: a driver of its own over the turn's step API
//! (`Definition::turn_steps`) journals every step's effect (the model's
//! answer, and the batch's results or each call's result, each through
//! JSON), crashes after step k,
//! and rebuilds the turn, either by replaying the journal from the start
//! or from the `TurnState` and conversation it stored at step k. For any
//! scripted batches, gates, limits and budgets, and every k, the rebuilt
//! turn reaches exactly the final conversation and outcome (or error) of
//! an uninterrupted `run_turn`, and each tool execution and each model
//! request happens exactly once across the crash and the rebuild.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::turn_common::*;
use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::{
    BatchResults, BudgetPolicy, CallResult, Model, PausePolicy, ScriptedModel, Step, TurnError,
    TurnOptions, TurnOutcome, TurnState, TurnSteps,
};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, ToolLimits};

/// The kind of one effect of a turn, as the journal keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Answer,
    Batch,
    Call,
}

/// One effect of a turn, as the journal keeps it: its kind and its JSON.
type Entry = (Kind, String);

/// What a scenario's session counts: tool executions.
struct Counted {
    session: Definition<Bound>,
    executions: Arc<AtomicUsize>,
}

/// `read` and `echo` (counted), `guarded` (counted; its gate asks when
/// `ask`, denies otherwise), under `limits`.
async fn session(limits: ToolLimits, ask: bool) -> Counted {
    let executions = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&executions);
    let echo = tool::Definition::from_fn(
        ToolInfo::new(
            "echo",
            "Echoes its text.",
            json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            }),
        ),
        move |arguments: Value, _context| {
            let counted = Arc::clone(&counted);
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                Ok::<_, BoxError>(arguments["text"].clone())
            }
        },
    );
    let session = Definition::builder()
        .name("journaled")
        .tool(counting_tool("read", Arc::clone(&executions)))
        .tool(echo)
        .tool(counting_tool("guarded", Arc::clone(&executions)))
        .tool_limits(limits)
        .gate(move |call: &GateCall<'_>| match call.tool.name.as_str() {
            "guarded" if ask => GateDecision::ask("guarded"),
            "guarded" => GateDecision::deny("not allowed"),
            _ => GateDecision::Allow,
        })
        .build()
        .validate()
        .expect("valid")
        // One session for every run: minted call ids come from it.
        .bind(Bindings::new(
            SessionId::from_uuid(uuid::Uuid::from_u128(7)),
            LoopId::from_uuid(uuid::Uuid::from_u128(11)),
        ))
        .await
        .expect("binds");
    Counted {
        session,
        executions,
    }
}

/// A step's effect: from the journal when it holds one at `cursor`, else
/// done now and journaled.
struct Driver<'j> {
    journal: &'j mut Vec<Entry>,
    cursor: usize,
    /// Each call of a batch is an entry of its own (`run_call`), not the
    /// batch (`run_batch`).
    per_call: bool,
}

impl Driver<'_> {
    /// The journal's entry at the cursor, read back (it must be of
    /// `kind`); past the journal's end, `live` run now and journaled. A
    /// `live` that is not run is dropped unpolled: it does nothing.
    async fn journaled<T: serde::Serialize + serde::de::DeserializeOwned>(
        &mut self,
        kind: Kind,
        live: impl std::future::Future<Output = T>,
    ) -> T {
        let value = match self.journal.get(self.cursor) {
            Some((journaled, json)) => {
                assert_eq!(*journaled, kind, "the journal is out of step");
                serde_json::from_str(json).expect("journaled")
            }
            None => {
                let value = live.await;
                let json = serde_json::to_string(&value).expect("serialises");
                self.journal.push((kind, json));
                value
            }
        };
        self.cursor += 1;
        value
    }

    /// Steps `steps` until they end (`true`) or until the journal holds
    /// `crash_after` entries (`false`: the process dies here). After each
    /// effect, `snapshots` gets the state and conversation.
    async fn drive(
        &mut self,
        steps: &mut TurnSteps<'_>,
        model: &ScriptedModel,
        crash_after: Option<usize>,
        snapshots: &mut Vec<(usize, String, Vec<Message>)>,
    ) -> bool {
        loop {
            let step = steps.next();
            if step == Step::Done {
                return true;
            }
            if crash_after == Some(self.cursor) {
                return false;
            }
            match step {
                Step::Refresh => steps.refresh().await,
                Step::Compact => steps.compact(None).await,
                Step::Request => {
                    let live = model.respond(steps.request());
                    let answer: ModelResponse = self
                        .journaled(Kind::Answer, async {
                            live.await.expect("the script answers every request")
                        })
                        .await;
                    steps.respond(Ok(answer), Duration::ZERO);
                }
                Step::Batch if self.per_call => {
                    let calls = steps.batch_calls().len();
                    let mut results = Vec::with_capacity(calls);
                    for index in 0..calls {
                        if crash_after == Some(self.cursor) {
                            return false;
                        }
                        let result: CallResult =
                            self.journaled(Kind::Call, steps.run_call(index)).await;
                        results.push(result);
                    }
                    let results = steps.batch_results(results, Duration::ZERO);
                    steps.commit(results);
                }
                Step::Batch => {
                    let results: BatchResults =
                        self.journaled(Kind::Batch, steps.run_batch()).await;
                    steps.commit(results);
                }
                other => panic!("a step this driver does not know: {other:?}"),
            }
            if matches!(step, Step::Request | Step::Batch) {
                // The effect is in: what a crash from here on rebuilds from.
                let state = serde_json::to_string(steps.state()).expect("the state serialises");
                snapshots.push((self.cursor, state, steps.conversation().clone()));
            }
        }
    }
}

/// What a turn ended with, durations zeroed (they are wall time).
fn ended(result: Result<TurnOutcome, TurnError>) -> String {
    match result {
        Ok(mut outcome) => {
            outcome.stats.duration = Duration::ZERO;
            for iteration in &mut outcome.stats.iterations {
                iteration.model_duration = Duration::ZERO;
                iteration.batch_duration = Duration::ZERO;
                for call in &mut iteration.calls {
                    call.duration = Duration::ZERO;
                }
            }
            format!("{outcome:?}")
        }
        Err(error) => format!("error: {error}"),
    }
}

/// The scenario's script: its batches, then an answer.
fn script(batches: &[Vec<(usize, bool)>]) -> Vec<ModelResponse> {
    let names = ["read", "echo", "guarded", "missing"];
    let mut responses: Vec<ModelResponse> = batches
        .iter()
        .enumerate()
        .map(|(i, calls)| {
            batch(calls.iter().enumerate().map(|(j, &(tool, good))| {
                let arguments = match (names[tool], good) {
                    ("echo", true) => r#"{"text": "hi"}"#,
                    ("echo", false) => r#"{"text": 3}"#,
                    (_, true) => "{}",
                    (_, false) => "{not json",
                };
                // Every third call has no id: the turn mints one.
                let id = if (i + j) % 3 == 2 {
                    String::new()
                } else {
                    format!("call_{i}_{j}")
                };
                call(id, names[tool], arguments)
            }))
        })
        .collect();
    responses.push(answer("done"));
    responses
}

#[derive(Clone, Debug)]
struct Scenario {
    batches: Vec<Vec<(usize, bool)>>,
    iterations: Option<u32>,
    requests: Option<u32>,
    parallel: u32,
    ask: bool,
    pause_on_budget: bool,
    per_call: bool,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop::collection::vec(
            prop::collection::vec((0usize..4, prop::bool::weighted(0.8)), 1..4),
            0..5,
        ),
        prop::option::of(1u32..5),
        prop::option::of(1u32..6),
        1u32..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(batches, iterations, requests, parallel, ask, pause_on_budget, per_call)| Scenario {
                batches,
                iterations,
                requests,
                parallel,
                ask,
                pause_on_budget,
                per_call,
            },
        )
}

impl Scenario {
    fn limits(&self) -> ToolLimits {
        let mut limits = ToolLimits::new().parallel(self.parallel);
        if let Some(iterations) = self.iterations {
            limits = limits.iterations(iterations);
        }
        if let Some(requests) = self.requests {
            limits = limits.requests(requests);
        }
        limits
    }

    fn policy(&self) -> BudgetPolicy {
        if self.pause_on_budget {
            BudgetPolicy::Pause
        } else {
            BudgetPolicy::Fail
        }
    }
}

/// The uninterrupted run: the conversation, the outcome, executions and
/// requests.
async fn uninterrupted(scenario: &Scenario) -> (Vec<Message>, String, usize, usize) {
    let counted = session(scenario.limits(), scenario.ask).await;
    let model = ScriptedModel::new(script(&scenario.batches));
    let mut conversation = user_says("go");
    let options = TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .budget_policy(scenario.policy())
        .build();
    let result = counted
        .session
        .run_turn(&model, &mut conversation, options)
        .await;
    (
        conversation,
        ended(result),
        counted.executions.load(Ordering::SeqCst),
        model.requests().len(),
    )
}

/// The run that crashes after `k` journaled effects and is rebuilt by
/// replaying its journal (`from_state`: from the state stored at the
/// crash instead); `None` when it ends before `k`.
async fn crashed(
    scenario: &Scenario,
    k: usize,
    from_state: bool,
) -> Option<(Vec<Message>, String, usize, usize)> {
    let counted = session(scenario.limits(), scenario.ask).await;
    let model = ScriptedModel::new(script(&scenario.batches));
    let options = TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .budget_policy(scenario.policy())
        .build();
    let mut journal = Vec::new();
    let mut snapshots = Vec::new();
    // The first process.
    {
        let mut conversation = user_says("go");
        let mut steps = counted.session.turn_steps(&mut conversation, &options);
        let mut driver = Driver {
            journal: &mut journal,
            cursor: 0,
            per_call: scenario.per_call,
        };
        if driver
            .drive(&mut steps, &model, Some(k), &mut snapshots)
            .await
        {
            return None;
        }
    }
    // The second: the journal (or the last stored state) is all it has.
    let mut driver = Driver {
        journal: &mut journal,
        cursor: 0,
        per_call: scenario.per_call,
    };
    let (mut conversation, restored): (Vec<Message>, Option<TurnState>) =
        match (from_state, snapshots.last()) {
            (true, Some((cursor, state, conversation))) => {
                // The journal's entries after the stored state (the calls
                // of a batch that was out) are replayed from there.
                driver.cursor = *cursor;
                (
                    conversation.clone(),
                    Some(serde_json::from_str(state).expect("the stored state reads")),
                )
            }
            _ => (user_says("go"), None),
        };
    let mut steps = match restored {
        Some(state) => counted
            .session
            .restore_turn(state, &mut conversation, &options)
            .expect("the stored state restores"),
        None => counted.session.turn_steps(&mut conversation, &options),
    };
    let mut ignored = Vec::new();
    assert!(driver.drive(&mut steps, &model, None, &mut ignored).await);
    let result = steps.finish();
    let outcome = ended(result);
    Some((
        conversation,
        outcome,
        counted.executions.load(Ordering::SeqCst),
        model.requests().len(),
    ))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_turn_rebuilt_from_its_journal_after_any_step_ends_as_an_uninterrupted_one(
        scenario in scenario()
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let expected = uninterrupted(&scenario).await;
            for k in 0.. {
                let mut ended_before = false;
                for from_state in [false, true] {
                    match crashed(&scenario, k, from_state).await {
                        None => ended_before = true,
                        Some(rebuilt) => {
                            assert_eq!(rebuilt.0, expected.0, "the conversation, k = {k}, from_state = {from_state}");
                            assert_eq!(rebuilt.1, expected.1, "the outcome, k = {k}, from_state = {from_state}");
                            assert_eq!(rebuilt.2, expected.2, "tool executions, k = {k}, from_state = {from_state}");
                            assert_eq!(rebuilt.3, expected.3, "model requests, k = {k}, from_state = {from_state}");
                        }
                    }
                }
                if ended_before {
                    break;
                }
            }
        });
    }
}

/// The JSON form of a turn's state with a batch out, pinned: a driver's
/// stored states must read in later releases of format version 1.
#[tokio::test]
async fn the_state_of_a_turn_with_a_batch_out_has_a_pinned_json_form() {
    let counted = session(ToolLimits::new(), true).await;
    let model = ScriptedModel::new([
        batch([
            call("call_1", "read", "{}"),
            call("call_2", "guarded", "{}"),
        ]),
        answer("done"),
    ]);
    let options = TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .build();
    let mut conversation = user_says("go");
    let mut steps = counted.session.turn_steps(&mut conversation, &options);
    assert_eq!(steps.next(), Step::Request);
    let answer = model.respond(steps.request()).await.expect("answers");
    steps.respond(Ok(answer), Duration::from_millis(5));
    assert_eq!(steps.next(), Step::Batch);
    let state = serde_json::to_value(steps.state()).expect("serialises");
    let expected = json!({
        "version": 2,
        "session_id": "00000000-0000-0000-0000-000000000007",
        "loop_id": "00000000-0000-0000-0000-00000000000b",
        "mode": null,
        "raised": null,
        "prior_iterations": 0,
        "calls": 0,
        "requests": 1,
        "stats": {
            "iterations": [],
            "duration": { "secs": 0, "nanos": 5_000_000 },
            "usage": {
                "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                "cache_write_tokens": 0, "reasoning_tokens": 0
            }
        },
        "first_new": 1,
        "compactions": [],
        "repaired": [],
        "meter": { "correction": 0, "sent": 0, "retried": false },
        "window_full": false,
        "instructed": 0,
        "phase": {
            "phase": "running",
            "message": {
                "content": [
                    { "type": "tool_call", "id": "call_1", "name": "read", "arguments": "{}" },
                    { "type": "tool_call", "id": "call_2", "name": "guarded", "arguments": "{}" }
                ]
            },
            "finish_reason": "tool_calls",
            "usage": {
                "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                "cache_write_tokens": 0, "reasoning_tokens": 0
            },
            "model_duration": { "secs": 0, "nanos": 5_000_000 },
            "iteration": 1,
            "batch_calls": 2,
            "would_be": 2,
            "pending": [{
                "tool_call_id": "call_2",
                "tool_name": "guarded",
                "arguments": {},
                "reason": "guarded"
            }]
        }
    });
    assert_eq!(state, expected);
    // Read back, it is the same state.
    let read: TurnState = serde_json::from_value(state.clone()).expect("reads");
    assert_eq!(serde_json::to_value(&read).expect("serialises"), state);
}

/// A turn restored with a batch out still knows that batch's call ids: a
/// later response that reuses one gets a minted id, as in a turn that
/// never stopped (two calls with one id are refused by every provider).
#[tokio::test]
async fn a_turn_restored_with_a_batch_out_mints_an_id_for_a_reused_one() {
    let script = || {
        [
            batch([call("call_0", "read", "{}")]),
            batch([call("call_0", "read", "{}")]),
            answer("done"),
        ]
    };
    let (expected, _, _, _) = uninterrupted_with(script().to_vec()).await;
    let counted = session(ToolLimits::new(), true).await;
    let model = ScriptedModel::new(script());
    let options = TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .build();
    let mut conversation = user_says("go");
    let state = {
        let mut steps = counted.session.turn_steps(&mut conversation, &options);
        assert_eq!(steps.next(), Step::Request);
        let answer = model.respond(steps.request()).await.expect("answers");
        steps.respond(Ok(answer), Duration::ZERO);
        assert_eq!(steps.next(), Step::Batch);
        serde_json::to_string(steps.state()).expect("serialises")
    };
    let state: TurnState = serde_json::from_str(&state).expect("reads");
    let mut steps = counted
        .session
        .restore_turn(state, &mut conversation, &options)
        .expect("restores");
    let mut journal = Vec::new();
    let mut driver = Driver {
        journal: &mut journal,
        cursor: 0,
        per_call: false,
    };
    assert!(
        driver
            .drive(&mut steps, &model, None, &mut Vec::new())
            .await
    );
    steps.finish().expect("completes");
    assert_eq!(conversation, expected);
    assert_every_call_answered(&conversation);
    assert_eq!(counted.executions.load(Ordering::SeqCst), 2);
}

/// `run_turn` on `responses`: the conversation, the outcome, executions
/// and requests.
async fn uninterrupted_with(responses: Vec<ModelResponse>) -> (Vec<Message>, String, usize, usize) {
    let counted = session(ToolLimits::new(), true).await;
    let model = ScriptedModel::new(responses);
    let mut conversation = user_says("go");
    let result = counted
        .session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .pause_policy(PausePolicy::RunOthers)
                .build(),
        )
        .await;
    (
        conversation,
        ended(result),
        counted.executions.load(Ordering::SeqCst),
        model.requests().len(),
    )
}

/// A call's journal form holds the result and the duration, and leaves out
/// what the turn knows (the tool name; the result's bytes unless cut):
/// read back and committed, the turn's statistics are those of the batch
/// run in one piece.
#[tokio::test]
async fn a_call_result_has_a_compact_json_form_that_loses_nothing() {
    let script = || {
        ScriptedModel::new([
            batch([
                call(
                    "call_1",
                    "echo",
                    &json!({ "text": "long ".repeat(100) }).to_string(),
                ),
                call("call_2", "missing", "{}"),
                call("call_3", "guarded", "{}"),
                call("call_4", "read", "{}"),
            ]),
            answer("done"),
        ])
    };
    let limits = || ToolLimits::new().result_bytes(256);
    let options = TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .build();
    // Step to the batch: the one request answered.
    async fn to_batch<'t>(
        session: &'t Definition<Bound>,
        conversation: &'t mut Vec<Message>,
        options: &'t TurnOptions<'t>,
        model: &ScriptedModel,
    ) -> TurnSteps<'t> {
        let mut steps = session.turn_steps(conversation, options);
        assert_eq!(steps.next(), Step::Request);
        let answer = model.respond(steps.request()).await.expect("answers");
        steps.respond(Ok(answer), Duration::ZERO);
        assert_eq!(steps.next(), Step::Batch);
        steps
    }

    // Run in one piece.
    let whole = session(limits(), true).await;
    let mut whole_conversation = user_says("go");
    let mut steps = to_batch(&whole.session, &mut whole_conversation, &options, &script()).await;
    let results = steps.run_batch().await;
    steps.commit(results);
    assert_eq!(steps.next(), Step::Done);
    let whole_paused = ended(steps.finish());

    // Call by call, each through its journal form.
    let parts = session(limits(), true).await;
    let mut conversation = user_says("go");
    let mut steps = to_batch(&parts.session, &mut conversation, &options, &script()).await;
    let mut journal = Vec::new();
    for index in 0..4 {
        let mut form = serde_json::to_value(steps.run_call(index).await).expect("serialises");
        // Wall time: zeroed, where there is one.
        if form.get("duration_ns").is_some() {
            form["duration_ns"] = json!(0);
        }
        journal.push(form);
    }
    let cut = "long ".repeat(100).len();
    assert_eq!(
        journal[0],
        json!({
            "tool_call_id": "call_1",
            "content": journal[0]["content"].clone(),
            "duration_ns": 0,
            "result_bytes": cut
        })
    );
    assert_eq!(journal[1]["tool_call_id"], "call_2");
    assert_eq!(journal[1]["is_error"], true);
    assert!(journal[1]["error"].is_string(), "{}", journal[1]);
    assert!(journal[1].get("tool_name").is_none() && journal[1].get("result_bytes").is_none());
    // The call that waits for a decision.
    assert_eq!(journal[2], json!({}));
    // A plain success: its result and its time, nothing else.
    assert_eq!(
        journal[3],
        json!({
            "tool_call_id": "call_4",
            "content": journal[3]["content"].clone(),
            "duration_ns": 0
        })
    );
    // A form this version does not write is refused, not read as a call
    // that waits.
    assert!(serde_json::from_value::<CallResult>(json!({ "finished": null })).is_err());
    let read: Vec<CallResult> = journal
        .into_iter()
        .map(|form| serde_json::from_value(form).expect("reads back"))
        .collect();
    let results = steps.batch_results(read, Duration::ZERO);
    steps.commit(results);
    assert_eq!(steps.next(), Step::Done);
    assert_eq!(ended(steps.finish()), whole_paused);
    assert_eq!(conversation, whole_conversation);
}

/// Answers as its script does, each answer after `delay`.
struct Slow {
    script: ScriptedModel,
    delay: Duration,
}

#[async_trait::async_trait]
impl Model for Slow {
    async fn respond(
        &self,
        request: agent_loop::turn::ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        tokio::time::sleep(self.delay).await;
        self.script.respond(request).await
    }
}

/// Calls run at once, each by its own future: what one call's agent spent
/// goes with that call's result, not with the call that ends first. The
/// agent `early` spends at once and then waits on a slow tool; `late`
/// spends later but ends first.
#[tokio::test]
async fn calls_run_at_once_each_take_only_their_own_agents_spend() {
    use agent_loop::conversation::Usage;
    use agent_loop::turn::Agent;

    let wait = tool::Definition::from_fn(
        ToolInfo::without_parameters("wait", "Waits."),
        |_arguments: Value, _context| async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok::<_, BoxError>(json!("waited"))
        },
    );
    let early_definition = Definition::builder()
        .name("early")
        .tool(wait)
        .build()
        .validate()
        .expect("valid");
    let early = Agent::new(
        early_definition,
        ScriptedModel::new([
            batch([call("call_w", "wait", "{}")]).with_usage(Usage::new(10, 1)),
            answer("early done"),
        ]),
    );
    let late_definition = Definition::builder()
        .name("late")
        .build()
        .validate()
        .expect("valid");
    let late = Agent::new(
        late_definition,
        Slow {
            script: ScriptedModel::new([answer("late done").with_usage(Usage::new(1000, 100))]),
            delay: Duration::from_millis(100),
        },
    );
    let session = bind(
        &Definition::builder()
            .name("lead")
            .tool(early.tool("early", "Starts early."))
            .tool(late.tool("late", "Ends early."))
            .build()
            .validate()
            .expect("valid"),
    )
    .await;
    let model = ScriptedModel::new([
        batch([
            call("call_1", "early", r#"{"task": "go"}"#),
            call("call_2", "late", r#"{"task": "go"}"#),
        ]),
        answer("done"),
    ]);
    let options = TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .build();
    let mut conversation = user_says("go");
    let mut steps = session.turn_steps(&mut conversation, &options);
    assert_eq!(steps.next(), Step::Request);
    let answer = model.respond(steps.request()).await.expect("answers");
    steps.respond(Ok(answer), Duration::ZERO);
    assert_eq!(steps.next(), Step::Batch);
    let (early_call, late_call) = (steps.call(0), steps.call(1));
    let (first, second) = tokio::join!(early_call, late_call);
    let spent = |result: &CallResult| {
        serde_json::to_value(result).expect("serialises")["nested_usage"].clone()
    };
    assert_eq!(spent(&first)["input_tokens"], 10, "{first:?}");
    assert_eq!(spent(&second)["input_tokens"], 1000, "{second:?}");
    let results = steps.batch_results(vec![first, second], Duration::ZERO);
    steps.commit(results);
    assert_eq!(steps.next(), Step::Request);
}

/// A turn whose lead calls the agent `helper` (two `read` calls, then an
/// answer) in each of two batches, under a limit of 5 calls for the whole
/// tree; the helper's model answers `agent_script`.
async fn lead_and_helper(agent_script: Vec<ModelResponse>) -> Definition<Bound> {
    use agent_loop::turn::Agent;
    let reads = Arc::new(AtomicUsize::new(0));
    let helper = Definition::builder()
        .name("helper")
        .tool(counting_tool("read", reads))
        .build()
        .validate()
        .expect("valid");
    let helper = Agent::new(helper, ScriptedModel::new(agent_script));
    bind(
        &Definition::builder()
            .name("lead")
            .tool(helper.tool("helper", "Reads twice."))
            .tool_limits(ToolLimits::new().calls(5))
            .build()
            .validate()
            .expect("valid"),
    )
    .await
}

/// Drives a turn of `session` call by call; a batch whose results
/// `journal` holds is read back from it, not run. Returns the conversation,
/// the outcome, and every batch's results as JSON.
async fn drive_calls(
    session: &Definition<Bound>,
    journal: &[Vec<Value>],
) -> (Vec<Message>, String, Vec<Vec<Value>>) {
    let model = ScriptedModel::new([
        batch([call("call_1", "helper", r#"{"task": "one"}"#)]),
        batch([call("call_2", "helper", r#"{"task": "two"}"#)]),
        answer("done"),
    ]);
    let options = TurnOptions::builder()
        .pause_policy(PausePolicy::RunOthers)
        .build();
    let mut conversation = user_says("go");
    let mut steps = session.turn_steps(&mut conversation, &options);
    let mut written = Vec::new();
    loop {
        match steps.next() {
            Step::Request => {
                let answer = model.respond(steps.request()).await.expect("answers");
                steps.respond(Ok(answer), Duration::ZERO);
            }
            Step::Batch => {
                let forms = match journal.get(written.len()) {
                    Some(forms) => forms.clone(),
                    None => {
                        let mut forms = Vec::new();
                        for index in 0..steps.batch_calls().len() {
                            let result = steps.run_call(index).await;
                            forms.push(serde_json::to_value(result).expect("serialises"));
                        }
                        forms
                    }
                };
                let results = forms
                    .iter()
                    .map(|form| serde_json::from_value(form.clone()).expect("reads back"))
                    .collect();
                let results = steps.batch_results(results, Duration::ZERO);
                steps.commit(results);
                written.push(forms);
            }
            Step::Done => break,
            other => panic!("a step this test does not drive: {other:?}"),
        }
    }
    let outcome = ended(steps.finish());
    (conversation, outcome, written)
}

/// What an agent of a journaled call spent counts in the turn rebuilt from
/// the journal as in the turn that ran it: the limit that stops the second
/// agent in one process stops it after a replay too.
#[tokio::test]
async fn a_replayed_calls_agent_spend_counts_against_later_agents() {
    let agent_batch = || batch([call("r1", "read", "{}"), call("r2", "read", "{}")]);
    let whole = lead_and_helper(vec![
        agent_batch(),
        answer("one read"),
        agent_batch(),
        answer("two read"),
    ])
    .await;
    let (conversation, outcome, journal) = drive_calls(&whole, &[]).await;
    // The second agent's reads would make 6 calls in the tree: refused.
    let second = conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .find(|result| result.tool_call_id == "call_2")
        .expect("the second call is answered");
    assert!(second.is_error, "{second:?}");

    // Rebuilt: the first batch read back from the journal, not run; the
    // second agent runs in this process.
    let replayed = lead_and_helper(vec![agent_batch(), answer("two read")]).await;
    let (replayed_conversation, replayed_outcome, _) = drive_calls(&replayed, &journal[..1]).await;
    assert_eq!(replayed_conversation, conversation);
    assert_eq!(replayed_outcome, outcome);
}
