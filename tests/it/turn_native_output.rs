//! Structured output in native mode: no control tool; the final answer's
//! text is the output, checked against the schema.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::conversation::Message;
use agent_loop::turn::{
    NATIVE_OUTPUT_INSTRUCTION, Output, OutputMode, ScriptedModel, TurnError, TurnOptions,
    TurnOutcome, TurnStatus,
};
use agent_loop::{Bound, Definition, STRUCTURED_OUTPUT_TOOL_NAME, ToolLimits};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::turn_common::{
    answer, assert_every_call_answered, batch, bind_tools, call, counting_tool, user_says,
};

/// An invoice, the typed output.
#[derive(Clone, Debug, PartialEq, JsonSchema, Deserialize)]
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

async fn session() -> (Definition<Bound>, Arc<AtomicUsize>) {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [counting_tool("count", Arc::clone(&invocations))],
        ToolLimits::new(),
    )
    .await;
    (session, invocations)
}

fn native() -> TurnOptions<'static> {
    TurnOptions::builder()
        .output(invoice_output())
        .output_mode(OutputMode::Native)
        .build()
}

fn invoice_output() -> Output {
    Output::typed::<Invoice>().expect("the invoice schema is valid")
}

async fn run(
    session: &Definition<Bound>,
    model: &ScriptedModel,
    conversation: &mut Vec<Message>,
    options: TurnOptions<'_>,
) -> Result<TurnOutcome, TurnError> {
    session.run_turn(model, conversation, options).await
}

fn instructions(conversation: &[Message]) -> usize {
    conversation
        .iter()
        .filter(|message| **message == Message::user(NATIVE_OUTPUT_INSTRUCTION))
        .count()
}

#[tokio::test]
async fn a_valid_json_answer_ends_the_turn_and_no_control_tool_is_offered() {
    let (session, _) = session().await;
    let model = ScriptedModel::new([answer(INVOICE)]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, native())
        .await
        .unwrap();
    assert_eq!(
        outcome.output_as::<Invoice>().transpose().unwrap(),
        Some(invoice())
    );
    assert!(matches!(outcome.status, TurnStatus::Output { .. }));
    assert_eq!(outcome.stats.iteration_count(), 1);
    let requests = model.requests();
    assert_eq!(requests[0].tool_names, ["count"], "no control tool");
    assert_eq!(requests[0].native_output.as_deref(), Some("Invoice"));
    // The answer stays in the conversation as the assistant's text.
    assert_eq!(conversation.len(), 2);
    assert_eq!(
        conversation[1].as_assistant().map(|a| a.text()),
        Some(INVOICE.to_owned())
    );
}

#[tokio::test]
async fn tool_mode_sends_no_native_output() {
    let (session, _) = session().await;
    let model = ScriptedModel::new([batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)])]);
    let mut conversation = user_says("Read the invoice.");
    let options = TurnOptions::builder()
        .output(invoice_output())
        .output_mode(OutputMode::Tool)
        .build();
    run(&session, &model, &mut conversation, options)
        .await
        .unwrap();
    let requests = model.requests();
    assert_eq!(requests[0].native_output, None);
    assert_eq!(
        requests[0].tool_names,
        ["count", STRUCTURED_OUTPUT_TOOL_NAME]
    );
}

#[tokio::test]
async fn invalid_json_gets_the_instruction_then_valid_json_wins() {
    let (session, _) = session().await;
    let model = ScriptedModel::new([answer("It is invoice A-17."), answer(INVOICE)]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, native())
        .await
        .unwrap();
    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    assert_eq!(instructions(&conversation), 1);
    assert_eq!(
        outcome.stats.iteration_count(),
        2,
        "the retry is an iteration"
    );
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn a_schema_failure_gets_the_instruction_then_valid_json_wins() {
    let (session, _) = session().await;
    let model = ScriptedModel::new([
        answer(r#"{"number": "A-17", "total_cents": "lots"}"#),
        answer(&format!("```json\n{INVOICE}\n```")),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, native())
        .await
        .unwrap();
    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    assert_eq!(instructions(&conversation), 1);
}

#[tokio::test]
async fn invalid_answers_past_the_retry_cap_are_no_output() {
    let (session, _) = session().await;
    let model = ScriptedModel::new([answer("one"), answer("{}"), answer("[3]")]);
    let mut conversation = user_says("Read the invoice.");
    let error = run(&session, &model, &mut conversation, native())
        .await
        .unwrap_err();
    match error {
        TurnError::NoOutput { text, .. } => assert_eq!(text, "[3]"),
        other => panic!("expected NoOutput, got {other:?}"),
    }
    assert_eq!(instructions(&conversation), 2);

    let model = ScriptedModel::new([answer("nope")]);
    let mut conversation = user_says("Read the invoice.");
    let error = run(
        &session,
        &model,
        &mut conversation,
        TurnOptions::builder()
            .output(invoice_output())
            .output_mode(OutputMode::Native)
            .output_retries(0)
            .build(),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, TurnError::NoOutput { ref text, .. } if text == "nope"));
}

#[tokio::test]
async fn a_wrapped_schema_answer_is_unwrapped() {
    let (session, _) = session().await;
    let output = Output::from_schema(
        "labels",
        "The labels.",
        json!({"type": "array", "items": {"type": "string"}}),
    )
    .unwrap();
    let model = ScriptedModel::new([answer(r#"["bug"]"#), answer(r#"{"value": ["bug", "ui"]}"#)]);
    let mut conversation = user_says("Label the ticket.");
    let options = TurnOptions::builder()
        .output(output)
        .output_mode(OutputMode::Native)
        .build();
    let outcome = run(&session, &model, &mut conversation, options)
        .await
        .unwrap();
    assert_eq!(outcome.output(), Some(&json!(["bug", "ui"])));
    assert_eq!(
        instructions(&conversation),
        1,
        "a bare array is not the wrapper"
    );
}

#[tokio::test]
async fn tool_calls_run_before_the_json_answer() {
    let (session, invocations) = session().await;
    let model = ScriptedModel::new([
        batch([call("c1", "count", "{}"), call("c2", "count", "{}")]),
        answer(INVOICE),
    ]);
    let mut conversation = user_says("Count, then read the invoice.");
    let outcome = run(&session, &model, &mut conversation, native())
        .await
        .unwrap();
    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
    assert_eq!(outcome.stats.iteration_count(), 2);
    assert_every_call_answered(&conversation);
    let violations = crate::wire_rules::export_violations(&conversation);
    assert!(violations.is_empty(), "{violations:#?}");
}

#[tokio::test]
async fn the_reserved_name_is_an_unknown_tool_in_native_mode() {
    let (session, _) = session().await;
    let model = ScriptedModel::new([
        batch([call("c1", STRUCTURED_OUTPUT_TOOL_NAME, INVOICE)]),
        answer(INVOICE),
    ]);
    let mut conversation = user_says("Read the invoice.");
    let outcome = run(&session, &model, &mut conversation, native())
        .await
        .unwrap();
    assert!(crate::turn_common::result_for(&conversation, "c1").is_error);
    assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
}

/// Reasoning models served without a reasoning parser put their thinking
/// before the JSON; others write prose around one fenced block. Both are
/// the output, in one iteration, with no instruction.
#[tokio::test]
async fn an_answer_after_a_think_block_or_around_one_fenced_block_is_the_output() {
    let (session, _) = session().await;
    for text in [
        format!("<think>\nThe invoice says A-17 and $42: 4200 cents.\n</think>\n\n{INVOICE}"),
        format!("Okay, the total is 4200 cents.\n</think>\n{INVOICE}"),
        format!("Here is the invoice:\n\n```json\n{INVOICE}\n```\n\nAnything else?"),
        format!("<think>Read it.</think>\nSure:\n```\n{INVOICE}\n```"),
    ] {
        let model = ScriptedModel::new([answer(&text)]);
        let mut conversation = user_says("Read the invoice.");
        let outcome = run(&session, &model, &mut conversation, native())
            .await
            .unwrap();
        assert_eq!(
            outcome.output_as::<Invoice>().transpose().unwrap(),
            Some(invoice()),
            "{text:?}"
        );
        assert_eq!(instructions(&conversation), 0, "{text:?}");
    }
}

/// Two fenced blocks (which one?), an unclosed think block, and a block in
/// another language are not the output: the model is asked again.
#[tokio::test]
async fn ambiguous_or_unfinished_answers_get_the_instruction() {
    let (session, _) = session().await;
    for text in [
        format!("Either\n```json\n{INVOICE}\n```\nor\n```json\n{INVOICE}\n```"),
        format!("<think>I will answer {INVOICE}"),
        format!("In Python:\n```python\n{INVOICE}\n```"),
    ] {
        let model = ScriptedModel::new([answer(&text), answer(INVOICE)]);
        let mut conversation = user_says("Read the invoice.");
        let outcome = run(&session, &model, &mut conversation, native())
            .await
            .unwrap();
        assert_eq!(outcome.output_as::<Invoice>().unwrap().unwrap(), invoice());
        assert_eq!(instructions(&conversation), 1, "{text:?}");
    }
}
