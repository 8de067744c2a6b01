//! The approval gate (`agent_loop::gate`): after a call's arguments passed
//! the schema and before the middlewares, the mode's gates allow it or
//! deny it with a reason the model reads; a denied call never runs, the
//! others of its batch do, and the turn goes on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::turn_common::*;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::mode::Mode;
use agent_loop::turn::{ScriptedModel, TurnStatus};
use agent_loop::{Bound, Definition};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Denies every call to `delete`, with a reason.
fn no_deleting(call: &GateCall<'_>) -> GateDecision {
    if call.tool.name == "delete" {
        GateDecision::deny("deleting needs a person's yes")
    } else {
        GateDecision::Allow
    }
}

/// What a gate saw: tool name, tool call id, arguments, mode.
type Seen = (String, String, Value, Option<String>);

struct Counts {
    ping: Arc<AtomicUsize>,
    delete: Arc<AtomicUsize>,
}

type BoxedGate = Box<dyn Fn(&GateCall<'_>) -> GateDecision + Send + Sync>;

/// A session with `ping` and `delete`, the base `gates`, and `mode` as
/// its initial mode when given.
async fn session(gates: Vec<BoxedGate>, mode: Option<Mode>) -> (Definition<Bound>, Counts) {
    let counts = Counts {
        ping: Arc::new(AtomicUsize::new(0)),
        delete: Arc::new(AtomicUsize::new(0)),
    };
    let mut builder = Definition::builder()
        .name("gated")
        .tool(counting_tool("ping", Arc::clone(&counts.ping)))
        .tool(counting_tool("delete", Arc::clone(&counts.delete)));
    for gate in gates {
        builder = builder.gate(gate);
    }
    let definition = match mode {
        Some(mode) => {
            let name = mode.name().to_owned();
            builder.mode(mode).initial_mode(name).build().validate()
        }
        None => builder.build().validate(),
    }
    .expect("valid");
    (bind(&definition).await, counts)
}

#[tokio::test]
async fn a_denied_call_of_a_batch_of_three_never_runs_and_the_others_do() {
    let (session, counts) = session(vec![Box::new(no_deleting)], None).await;
    let model = ScriptedModel::new([
        batch([
            call("call_1", "ping", "{}"),
            call("call_2", "delete", "{}"),
            call("call_3", "ping", "{}"),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("clean up");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn goes on after a denial");
    assert!(matches!(outcome.status, TurnStatus::Completed { .. }));
    assert_eq!(counts.ping.load(Ordering::SeqCst), 2);
    assert_eq!(
        counts.delete.load(Ordering::SeqCst),
        0,
        "a denied call never runs"
    );
    let denied = result_for(&conversation, "call_2");
    assert!(denied.is_error);
    assert_eq!(
        denied.text(),
        "the call to `delete` was denied: deleting needs a person's yes"
    );
    assert_eq!(result_for(&conversation, "call_1").text(), "ok");
    let ids: Vec<&str> = tool_results(&conversation)
        .iter()
        .map(|result| result.tool_call_id.as_str())
        .collect();
    assert_eq!(ids, ["call_1", "call_2", "call_3"], "results in call order");
    let errors: Vec<_> = outcome.stats.iterations[0]
        .calls
        .iter()
        .map(|stats| stats.error)
        .collect();
    assert_eq!(errors, [None, Some(ToolCallErrorKind::Denied), None]);
    // The model read the denial in the next request.
    let second = &model.requests()[1];
    assert!(
        format!("{:?}", second.conversation).contains("deleting needs a person's yes"),
        "{second:?}"
    );
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn the_gate_sees_the_tool_the_id_the_validated_arguments_the_session_and_the_mode() {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let record = Arc::clone(&seen);
    let invocations = Arc::new(AtomicUsize::new(0));
    let definition = Definition::builder()
        .name("gated")
        .tool(weather_tool(Arc::clone(&invocations)))
        .mode(Mode::new("travel").gate(move |call: &GateCall<'_>| {
            record.lock().unwrap().push((
                call.tool.name.clone(),
                call.tool_call_id.to_owned(),
                call.arguments.clone(),
                call.mode.map(str::to_owned),
            ));
            GateDecision::Allow
        }))
        .initial_mode("travel")
        .build()
        .validate()
        .expect("valid");
    let session = bind(&definition).await;
    let model = ScriptedModel::new([
        batch([
            call("call_ok", "get_weather", r#"{"city": "Oslo"}"#),
            // Fails the schema: answered before the gate, which never sees it.
            call("call_bad", "get_weather", r#"{"days": 2}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("weather?");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("completes");
    assert_eq!(
        *seen.lock().unwrap(),
        [(
            "get_weather".to_owned(),
            "call_ok".to_owned(),
            json!({ "city": "Oslo" }),
            Some("travel".to_owned())
        )]
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_mode_replaces_the_base_gates_or_lifts_them() {
    let script = || ScriptedModel::new([batch([call("call_1", "delete", "{}")]), answer("done")]);
    for (mode, deletes) in [
        // Inherits the base gate: denied.
        (Mode::new("inherit"), 0),
        // Its own gate allows everything.
        (
            Mode::new("own").gate(|_: &GateCall<'_>| GateDecision::Allow),
            1,
        ),
        (Mode::new("open").no_gates(), 1),
    ] {
        let name = mode.name().to_owned();
        let (session, counts) = session(vec![Box::new(no_deleting)], Some(mode)).await;
        let mut conversation = user_says("delete it");
        session
            .run_turn(&script(), &mut conversation, &CancellationToken::new())
            .await
            .expect("completes");
        assert_eq!(counts.delete.load(Ordering::SeqCst), deletes, "{name}");
    }
}

#[tokio::test]
async fn gates_are_asked_in_order_and_the_first_that_does_not_allow_decides() {
    let asked = Arc::new(AtomicUsize::new(0));
    let third = Arc::clone(&asked);
    let (session, counts) = session(
        vec![
            Box::new(|_: &GateCall<'_>| GateDecision::Allow),
            Box::new(|_: &GateCall<'_>| GateDecision::deny("second says no")),
            Box::new(move |_: &GateCall<'_>| {
                third.fetch_add(1, Ordering::SeqCst);
                GateDecision::Allow
            }),
        ],
        None,
    )
    .await;
    let outcome = session.run_tool_call(&call("call_1", "ping", "{}")).await;
    assert_eq!(
        outcome.result.text(),
        "the call to `ping` was denied: second says no"
    );
    assert_eq!(outcome.stats.error, Some(ToolCallErrorKind::Denied));
    assert_eq!(
        asked.load(Ordering::SeqCst),
        0,
        "the third gate is not asked"
    );
    assert_eq!(counts.ping.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_panicking_gate_denies_the_call_and_the_turn_goes_on() {
    quiet_expected_panics();
    let (session, counts) = session(
        vec![Box::new(|_: &GateCall<'_>| -> GateDecision {
            panic!("policy store unreachable")
        })],
        None,
    )
    .await;
    let model = ScriptedModel::new([batch([call("call_1", "ping", "{}")]), answer("done")]);
    let mut conversation = user_says("ping");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a gate's panic is contained");
    assert_eq!(
        counts.ping.load(Ordering::SeqCst),
        0,
        "the gate fails closed"
    );
    let result = result_for(&conversation, "call_1");
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "the call to `ping` was denied: the approval gate panicked: policy store unreachable"
    );
    assert_eq!(
        outcome.stats.iterations[0].calls[0].error,
        Some(ToolCallErrorKind::GatePanicked)
    );
}

#[tokio::test]
async fn code_that_invokes_a_tool_itself_is_not_gated() {
    let (session, counts) = session(vec![Box::new(no_deleting)], None).await;
    session
        .invoke("delete", json!({}))
        .await
        .expect("a direct invoke is the code's own decision");
    assert_eq!(counts.delete.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_tools_own_gates_replace_the_modes_for_its_calls() {
    let ping = Arc::new(AtomicUsize::new(0));
    let delete = Arc::new(AtomicUsize::new(0));
    let definition = Definition::builder()
        .name("gated")
        .tool(counting_tool("ping", Arc::clone(&ping)))
        .tool(counting_tool("delete", Arc::clone(&delete)))
        .tool(counting_tool("other", Arc::new(AtomicUsize::new(0))))
        .gate(|_: &GateCall<'_>| GateDecision::deny("nothing runs"))
        .tool_gate("ping", |_: &GateCall<'_>| GateDecision::Allow)
        .mode(
            Mode::new("cleanup")
                .gate(|_: &GateCall<'_>| GateDecision::deny("the mode says no"))
                .tool_gate("delete", |_: &GateCall<'_>| GateDecision::Allow),
        )
        .initial_mode("cleanup")
        .build()
        .validate()
        .expect("valid");
    let session = bind(&definition).await;
    // In `cleanup`, which denies: its own gate of `delete`; `ping` keeps
    // the base's own.
    for (id, name) in [("call_1", "ping"), ("call_2", "delete")] {
        let outcome = session.run_tool_call(&call(id, name, "{}")).await;
        assert!(
            !outcome.result.is_error,
            "{name}: {}",
            outcome.result.text()
        );
    }
    assert_eq!(
        (ping.load(Ordering::SeqCst), delete.load(Ordering::SeqCst)),
        (1, 1)
    );
    // Any other tool gets the mode's gate.
    let other = session.run_tool_call(&call("call_3", "other", "{}")).await;
    assert_eq!(
        other.result.text(),
        "the call to `other` was denied: the mode says no"
    );
}

#[tokio::test]
async fn in_the_base_mode_a_tools_gate_replaces_the_base_gates_for_it_only() {
    let (session, counts) = session(vec![], None).await;
    drop(session);
    let definition = Definition::builder()
        .name("gated")
        .tool(counting_tool("ping", Arc::clone(&counts.ping)))
        .tool(counting_tool("delete", Arc::clone(&counts.delete)))
        .gate(|_: &GateCall<'_>| GateDecision::deny("nothing runs"))
        .tool_gate("ping", |_: &GateCall<'_>| GateDecision::Allow)
        .build()
        .validate()
        .expect("valid");
    let session = bind(&definition).await;
    let ran = session.run_tool_call(&call("call_1", "ping", "{}")).await;
    let denied = session.run_tool_call(&call("call_2", "delete", "{}")).await;
    assert!(!ran.result.is_error);
    assert_eq!(
        denied.result.text(),
        "the call to `delete` was denied: nothing runs"
    );
    assert_eq!(counts.ping.load(Ordering::SeqCst), 1);
    assert_eq!(counts.delete.load(Ordering::SeqCst), 0);
}
