//! Structured output: a turn that ends in a value through the reserved
//! `structured_output` control tool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::Message;
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{BoxError, ToolOutput};
use agent_loop::turn::{
    ExceededLimit, MixedBatch, OUTPUT_INSTRUCTION, Output, OutputErrorKind, ScriptedModel,
    TurnError, TurnEvent, TurnEvents, TurnOptions, TurnOutcome, TurnStatus,
};
use agent_loop::{Bound, Definition, STRUCTURED_OUTPUT_TOOL_NAME, ToolLimits};
use async_trait::async_trait;
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::turn_common::{
    answer, assert_every_call_answered, batch, bind, bind_tools, call, counting_tool, result_for,
    user_says,
};

/// An invoice, the typed output of most cases.
#[derive(Clone, Debug, PartialEq, JsonSchema, Serialize, Deserialize)]
struct Invoice {
    number: String,
    total_cents: u64,
}

const INVOICE: &str = r#"{"number": "A-17", "total_cents": 4200}"#;

fn invoice() -> Invoice {
    Invoice {
        number: "A-17".into(),
        total_cents: 4200,
    }
}

async fn session_with_counter(limits: ToolLimits) -> (Definition<Bound>, Arc<AtomicUsize>) {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools([counting_tool("count", Arc::clone(&invocations))], limits).await;
    (session, invocations)
}

async fn run(
    session: &Definition<Bound>,
    model: &ScriptedModel,
    conversation: &mut Vec<Message>,
    options: TurnOptions<'_>,
) -> Result<TurnOutcome, TurnError> {
    session.run_turn(model, conversation, options).await
}

fn typed() -> TurnOptions<'static> {
    TurnOptions::builder().output(invoice_output()).build()
}

fn invoice_output() -> Output {
    Output::typed::<Invoice>().expect("the invoice schema is valid")
}

/// Every call answered once, and the conversation exports cleanly.
fn assert_valid(conversation: &[Message]) {
    assert_every_call_answered(conversation);
    let violations = crate::wire_rules::export_violations(conversation);
    assert!(violations.is_empty(), "{violations:#?}");
}

#[tokio::test]
async fn a_valid_first_call_ends_the_turn_with_the_value() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)])]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();

    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    assert!(matches!(outcome.status, TurnStatus::Output { .. }));
    assert_eq!(outcome.answer(), None);
    assert_eq!(outcome.stats.call_count(), 1);
    let result = result_for(&conversation, "c1");
    assert!(!result.is_error);
    // The control tool is offered after the mode's tools.
    assert_eq!(
        model.requests()[0].tool_names,
        ["count", STRUCTURED_OUTPUT_TOOL_NAME]
    );
    assert_valid(&conversation);
}

#[tokio::test]
async fn the_plain_entry_points_do_not_offer_the_control_tool() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([answer("hi")]);
    let mut conversation = user_says("hello");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(model.requests()[0].tool_names, ["count"]);
}

#[tokio::test]
async fn invalid_arguments_get_an_error_naming_the_path_then_a_valid_call_wins() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([
        batch([call(
            "c1",
            STRUCTURED_OUTPUT_TOOL_NAME,
            r#"{"number": "A-17", "total_cents": "lots"}"#,
        )]),
        batch([call("c2", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)]),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();

    let rejected = result_for(&conversation, "c1");
    assert!(rejected.is_error);
    assert!(
        rejected.text().contains("/total_cents"),
        "{}",
        rejected.text()
    );
    assert_eq!(
        outcome.stats.iterations[0].calls[0].error,
        Some(ToolCallErrorKind::InvalidArguments)
    );
    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    assert_eq!(outcome.stats.iteration_count(), 2);
    assert_valid(&conversation);
}

#[tokio::test]
async fn prose_gets_an_instruction_then_the_call_ends_the_turn() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([
        answer("The invoice A-17 is for $42."),
        batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)]),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();

    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    // The instruction is a user message right after the prose, and the
    // retry counts as an iteration.
    let second = &model.requests()[1].conversation;
    assert_eq!(second.last(), Some(&Message::user(OUTPUT_INSTRUCTION)));
    assert_eq!(outcome.stats.iteration_count(), 2);
    assert!(outcome.stats.iterations[0].calls.is_empty());
    assert_valid(&conversation);
}

#[tokio::test]
async fn prose_past_the_retry_cap_is_a_typed_error_carrying_the_text() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([answer("one"), answer("two"), answer("three")]);
    let mut conversation = user_says("Read the invoice.");
    let error = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap_err();

    match error {
        TurnError::NoOutput { text, .. } => assert_eq!(text, "three"),
        other => panic!("expected NoOutput, got {other:?}"),
    }
    // Default: two instructions, then the error at the third text.
    assert_eq!(model.requests().len(), 3);
    let instructions = conversation
        .iter()
        .filter(|message| **message == Message::user(OUTPUT_INSTRUCTION))
        .count();
    assert_eq!(instructions, 2);
    assert_valid(&conversation);

    // A retry count of zero fails at the first text.
    let model = ScriptedModel::new([answer("one")]);
    let mut conversation = user_says("Read the invoice.");
    let error = run(
        &session,
        &model,
        &mut conversation,
        TurnOptions::builder()
            .output(invoice_output())
            .output_retries(0)
            .build(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, TurnError::NoOutput { ref text, .. } if text == "one"));
}

#[tokio::test]
async fn an_instruction_counts_as_an_iteration() {
    // Two iterations: the instruction, then the output call.
    let (session, _) = session_with_counter(ToolLimits::new().iterations(2)).await;
    let model = ScriptedModel::new([
        answer("one"),
        batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)]),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();
    assert!(outcome.output().is_some());
}

#[tokio::test]
async fn a_second_instruction_past_the_iteration_limit_fails_the_turn() {
    let (session, _) = session_with_counter(ToolLimits::new().iterations(1)).await;
    let model = ScriptedModel::new([answer("one"), answer("two")]);
    let mut conversation = user_says("Read the invoice.");
    let error = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, TurnError::ToolLimit(limit) if limit.kind == ExceededLimit::Iterations),
        "{error:?}"
    );
    assert_valid(&conversation);
}

#[tokio::test]
async fn a_mixed_batch_ends_early_by_default_and_never_runs_the_others() {
    let (session, invocations) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([batch([
        call("c1", "count", "{}"),
        call("c2", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE),
        call("c3", "count", "{}"),
    ])]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();

    assert_eq!(invocations.load(Ordering::SeqCst), 0);
    for id in ["c1", "c3"] {
        let result = result_for(&conversation, id);
        assert!(result.is_error);
        assert_eq!(result.text(), "not run: the turn has its output");
    }
    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    assert_eq!(outcome.stats.call_count(), 3);
    let kinds: Vec<_> = outcome.stats.iterations[0]
        .calls
        .iter()
        .map(|call| call.error)
        .collect();
    assert_eq!(
        kinds,
        [
            Some(ToolCallErrorKind::NotRun),
            None,
            Some(ToolCallErrorKind::NotRun)
        ]
    );
    assert_valid(&conversation);
}

#[tokio::test]
async fn a_mixed_batch_runs_every_call_first_when_asked() {
    let (session, invocations) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([batch([
        call("c1", "count", "{}"),
        call("c2", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE),
        call("c3", "count", "{}"),
    ])]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(
        &session,
        &model,
        &mut conversation,
        TurnOptions::builder()
            .output(invoice_output())
            .mixed_batch(MixedBatch::RunAll)
            .build(),
    )
    .await
    .unwrap();

    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    assert_eq!(result_for(&conversation, "c1").text(), "ok");
    assert_eq!(result_for(&conversation, "c3").text(), "ok");
    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    assert_eq!(model.remaining(), 0);
    assert_valid(&conversation);
}

#[tokio::test]
async fn an_invalid_output_call_in_a_mixed_batch_lets_the_others_run() {
    let (session, invocations) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "count", "{}"),
            call("c2", STRUCTURED_OUTPUT_TOOL_NAME, r#"{"number": 5}"#),
        ]),
        batch([call("c3", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)]),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();
    assert_eq!(invocations.load(Ordering::SeqCst), 1);
    assert!(result_for(&conversation, "c2").is_error);
    assert!(outcome.output().is_some());
    assert_valid(&conversation);
}

#[tokio::test]
async fn of_two_output_calls_the_first_valid_one_wins() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([batch([
        call("c1", STRUCTURED_OUTPUT_TOOL_NAME, r#"{"number": "bad"}"#),
        call("c2", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE),
        call(
            "c3",
            STRUCTURED_OUTPUT_TOOL_NAME,
            r#"{"number": "B-2", "total_cents": 1}"#,
        ),
    ])]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();

    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    let first = result_for(&conversation, "c1");
    assert!(first.is_error && first.text().contains("total_cents"));
    assert!(!result_for(&conversation, "c2").is_error);
    let third = result_for(&conversation, "c3");
    assert!(third.is_error && third.text().starts_with("not run"));
    assert_valid(&conversation);
}

#[tokio::test]
async fn a_non_object_schema_is_wrapped_and_unwrapped() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let output = Output::from_schema(
        "labels",
        "The labels.",
        json!({"type": "array", "items": {"type": "string"}}),
    )
    .unwrap();
    assert!(output.is_wrapped());
    assert_eq!(
        output.info().parameters["required"],
        json!(["value"]),
        "wrapped in one required property"
    );
    let model = ScriptedModel::new([
        batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, r#"["bug"]"#)]),
        batch([call(
            "c2",
            STRUCTURED_OUTPUT_TOOL_NAME,
            r#"{"value": ["bug", "ui"]}"#,
        )]),
    ]);
    let mut conversation = user_says("Label the ticket.");
    let outcome = run(
        &session,
        &model,
        &mut conversation,
        TurnOptions::builder().output(output).build(),
    )
    .await
    .unwrap();
    // The bare array is not an object: an error result, then the wrapped
    // call's value comes out unwrapped.
    assert!(result_for(&conversation, "c1").is_error);
    assert_eq!(outcome.output(), Some(&json!(["bug", "ui"])));
    let labels: Vec<String> = outcome.output_as().unwrap().unwrap();
    assert_eq!(labels, ["bug", "ui"]);
    assert_valid(&conversation);
}

#[tokio::test]
async fn an_object_schema_is_offered_as_it_is() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    let output = Output::from_schema("thing", "A thing.", schema.clone()).unwrap();
    assert!(!output.is_wrapped());
    assert_eq!(output.info().parameters, schema);
    assert_eq!(output.info().name, STRUCTURED_OUTPUT_TOOL_NAME);
}

#[test]
fn a_schema_error_does_not_echo_a_secret() {
    let secret = "sk-live-0123456789abcdef";
    let bad = [
        // Not a valid schema: `type` must be a string or an array.
        json!({"type": 17, "description": secret}),
        json!({"type": "object", "properties": {"a": {"type": secret}}}),
        json!({"type": "object", "properties": {"a": {"$ref": format!("#/$defs/{secret}")}}}),
        json!({"type": "string", "pattern": "(", "description": secret}),
    ];
    for schema in bad {
        let error = Output::from_schema("secret_output", "d", schema.clone())
            .expect_err(&format!("{schema} is refused"));
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(secret), "{shown}");
        assert!(shown.contains("secret_output"), "{shown}");
    }
    let error = Output::from_schema("x", "d", json!({"type": 17})).unwrap_err();
    assert_eq!(error.kind, OutputErrorKind::NotASchema);
}

/// Records the tool names the chain sees.
struct Record(Arc<Mutex<Vec<String>>>);

#[async_trait]
impl ToolMiddleware for Record {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        self.0
            .lock()
            .unwrap()
            .push(call.context.tool_name().to_owned());
        next.run(call).await
    }
}

#[tokio::test]
async fn the_control_call_goes_through_middlewares_and_sends_events() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let definition = Definition::builder()
        .name("extract")
        .middleware(Record(Arc::clone(&seen)))
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = ScriptedModel::new([batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)])]);
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = user_says("Read the invoice.");
    run(
        &session,
        &model,
        &mut conversation,
        TurnOptions::builder()
            .output(invoice_output())
            .events(&events)
            .build(),
    )
    .await
    .unwrap();
    assert_eq!(*seen.lock().unwrap(), [STRUCTURED_OUTPUT_TOOL_NAME]);
    let mut names = Vec::new();
    while let Ok(event) = received.try_recv() {
        match event {
            TurnEvent::ToolCallStarted { tool_name, .. } => names.push(("started", tool_name)),
            TurnEvent::ToolCallFinished {
                tool_name, error, ..
            } => {
                assert_eq!(error, None);
                names.push(("finished", tool_name));
            }
            _ => {}
        }
    }
    assert_eq!(
        names,
        [
            ("started", STRUCTURED_OUTPUT_TOOL_NAME.to_owned()),
            ("finished", STRUCTURED_OUTPUT_TOOL_NAME.to_owned())
        ]
    );
}

#[tokio::test]
async fn the_control_call_counts_against_calls() {
    let (session, invocations) = session_with_counter(ToolLimits::new().calls(1)).await;
    let model = ScriptedModel::new([batch([
        call("c1", "count", "{}"),
        call("c2", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE),
    ])]);
    let mut conversation = user_says("Read the invoice.");
    let error = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, TurnError::ToolLimit(limit) if limit.kind == ExceededLimit::Calls),
        "{error:?}"
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_output_the_reserved_name_is_an_unknown_tool() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let model = ScriptedModel::new([
        batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)]),
        answer("done"),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(outcome.answer(), Some("done"));
    assert_eq!(
        outcome.stats.iterations[0].calls[0].error,
        Some(ToolCallErrorKind::UnknownTool)
    );
}

#[tokio::test]
async fn a_response_cut_off_does_not_end_the_turn() {
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let cut = batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)])
        .with_finish_reason(agent_loop::conversation::FinishReason::Length);
    let model = ScriptedModel::new([
        cut,
        batch([call("c2", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)]),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap();
    assert!(result_for(&conversation, "c1").is_error);
    assert!(outcome.output().is_some());
    assert_valid(&conversation);
}

// Shapes for the round trip.

#[derive(Clone, Debug, PartialEq, JsonSchema, Serialize, Deserialize)]
struct Flat {
    name: String,
    count: u32,
    ratio: f64,
    tags: Vec<String>,
    note: Option<String>,
}

#[derive(Clone, Debug, PartialEq, JsonSchema, Serialize, Deserialize)]
struct Nested {
    inner: Flat,
    kind: Kind,
    items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq, JsonSchema, Serialize, Deserialize)]
struct Item {
    id: i64,
    done: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, JsonSchema, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Bug,
    Feature,
    Question,
}

#[derive(Clone, Debug, PartialEq, JsonSchema, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Shape {
    Circle { radius: f64 },
    Rect { width: f64, height: f64 },
    Point,
}

#[derive(Clone, Debug, PartialEq, JsonSchema, Serialize, Deserialize)]
enum External {
    Text(String),
    Pair(i32, i32),
    Empty,
}

fn flat() -> impl Strategy<Value = Flat> {
    (
        ".{0,12}",
        any::<u32>(),
        -1.0e6..1.0e6f64,
        prop::collection::vec("[a-z]{0,5}", 0..4),
        prop::option::of(".{0,8}"),
    )
        .prop_map(|(name, count, ratio, tags, note)| Flat {
            name,
            count,
            ratio,
            tags,
            note,
        })
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Bug), Just(Kind::Feature), Just(Kind::Question)]
}

fn nested() -> impl Strategy<Value = Nested> {
    (
        flat(),
        kind(),
        prop::collection::vec(
            (any::<i64>(), any::<bool>()).prop_map(|(id, done)| Item { id, done }),
            0..3,
        ),
    )
        .prop_map(|(inner, kind, items)| Nested { inner, kind, items })
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (0.0..1.0e3f64).prop_map(|radius| Shape::Circle { radius }),
        (0.0..1.0e3f64, 0.0..1.0e3f64).prop_map(|(width, height)| Shape::Rect { width, height }),
        Just(Shape::Point),
    ]
}

fn external() -> impl Strategy<Value = External> {
    prop_oneof![
        ".{0,8}".prop_map(External::Text),
        (any::<i32>(), any::<i32>()).prop_map(|(a, b)| External::Pair(a, b)),
        Just(External::Empty),
    ]
}

/// Runs a turn whose model calls the control tool with `value` (wrapped
/// when the output is) and returns the typed output.
fn round_trip<T>(value: &T) -> Result<T, TestCaseError>
where
    T: JsonSchema + Serialize + serde::de::DeserializeOwned,
{
    let output = Output::typed::<T>().map_err(|error| TestCaseError::fail(error.to_string()))?;
    let arguments = if output.is_wrapped() {
        json!({ "value": value })
    } else {
        serde_json::to_value(value).unwrap()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let (session, _) = session_with_counter(ToolLimits::new()).await;
        let model = ScriptedModel::new([batch([call(
            "c1",
            STRUCTURED_OUTPUT_TOOL_NAME,
            &arguments.to_string(),
        )])]);
        let mut conversation = user_says("Give it.");
        let outcome = run(
            &session,
            &model,
            &mut conversation,
            TurnOptions::builder()
                .output(output)
                .output_retries(0)
                .build(),
        )
        .await
        .map_err(|error| TestCaseError::fail(format!("{error}: {conversation:?}")))?;
        prop_assert!(crate::wire_rules::export_violations(&conversation).is_empty());
        outcome
            .output_as::<T>()
            .ok_or_else(|| TestCaseError::fail(format!("no output: {conversation:?}")))?
            .map_err(|error| TestCaseError::fail(error.to_string()))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn flat_structs_round_trip(value in flat()) {
        prop_assert_eq!(round_trip(&value)?, value);
    }

    #[test]
    fn nested_structs_round_trip(value in nested()) {
        prop_assert_eq!(round_trip(&value)?, value);
    }

    #[test]
    fn unit_enums_round_trip(value in kind()) {
        prop_assert_eq!(round_trip(&value)?, value);
    }

    #[test]
    fn tagged_enums_round_trip(value in shape()) {
        prop_assert_eq!(round_trip(&value)?, value);
    }

    #[test]
    fn external_enums_round_trip(value in external()) {
        prop_assert_eq!(round_trip(&value)?, value);
    }

    #[test]
    fn lists_round_trip(value in prop::collection::vec(kind(), 0..4)) {
        prop_assert_eq!(round_trip(&value)?, value);
    }
}

/// A refusal was retried as malformed output until the turn ended in
/// `NoOutput`: it ends at the first refusal, typed, and a plain turn still
/// takes a refusal as its answer.
#[tokio::test]
async fn a_refusal_ends_a_structured_output_turn_at_once() {
    use agent_loop::conversation::FinishReason;
    let (session, _) = session_with_counter(ToolLimits::new()).await;
    let refusal = || {
        answer("I can't help with reading that document.").with_finish_reason(FinishReason::Refusal)
    };
    let model = ScriptedModel::new([refusal(), answer("never asked")]);
    let mut conversation = user_says("Read the invoice.");
    let error = run(&session, &model, &mut conversation, typed())
        .await
        .unwrap_err();
    match &error {
        TurnError::Refused { text, .. } => {
            assert_eq!(text, "I can't help with reading that document.");
        }
        other => panic!("expected Refusal, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 1, "not asked again");
    assert_eq!(
        conversation.last().map(Message::text).as_deref(),
        Some("I can't help with reading that document.")
    );
    assert_valid(&conversation);

    let model = ScriptedModel::new([refusal()]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(
        &session,
        &model,
        &mut conversation,
        TurnOptions::builder().build(),
    )
    .await
    .expect("a plain turn answers with the refusal");
    assert_eq!(
        outcome.answer(),
        Some("I can't help with reading that document.")
    );
}
