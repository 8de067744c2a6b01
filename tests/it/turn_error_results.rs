//! Per-call problems become model-facing error results and the turn goes on
//! (DESIGN.md section 8.4): unknown tool, arguments that are not JSON or not
//! an object, arguments that fail the schema, a tool error, a middleware's
//! refusal or error. Siblings in the batch still run and the model gets the
//! next iteration.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::ToolResult;
use agent_loop::middleware::{Next, Refusal, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{BoxError, ToolOutput};
use agent_loop::turn::ERROR_TEXT_BYTES;
use agent_loop::turn::{ScriptedModel, TurnOutcome};
use agent_loop::{Definition, ToolLimits, tool};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What one batch of `[bad, sibling]` produced.
struct Ran {
    bad: ToolResult,
    sibling: ToolResult,
    outcome: TurnOutcome,
    model: ScriptedModel,
    weather_invocations: usize,
}

/// Runs a batch of the call `name(arguments)` (id `bad`) followed by a
/// valid `get_weather` call (id `sibling`), then an answer.
async fn run_with_sibling(name: &str, arguments: &str) -> Ran {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [weather_tool(Arc::clone(&invocations)), echo_tool("echo")],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([
            call("bad", name, arguments),
            call("sibling", "get_weather", r#"{"city": "Paris"}"#),
        ]),
        answer("sorry about that"),
    ]);
    let mut conversation = user_says("weather?");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("per-call problems do not fail the turn");
    assert_every_call_answered(&conversation);
    Ran {
        bad: result_for(&conversation, "bad").clone(),
        sibling: result_for(&conversation, "sibling").clone(),
        outcome,
        model,
        weather_invocations: invocations.load(Ordering::SeqCst),
    }
}

/// The checks every bad call shares: an error result for its id, the
/// sibling ran, the model saw both results and answered, and the error kind
/// is in the statistics.
fn assert_refused_and_turn_went_on(ran: &Ran, kind: ToolCallErrorKind) {
    assert!(ran.bad.is_error, "{:?}", ran.bad);
    assert!(has_no_control_characters(&ran.bad.text()));
    assert!(ran.bad.text().len() <= ERROR_TEXT_BYTES);
    assert_eq!(ran.sibling, ToolResult::ok("sibling", "sunny in Paris"));
    assert_eq!(ran.outcome.answer(), Some("sorry about that"));
    let requests = ran.model.requests();
    assert_eq!(requests.len(), 2, "the model got the next iteration");
    assert_eq!(
        tool_results(&requests[1].conversation),
        [&ran.bad, &ran.sibling],
        "the model saw both results"
    );
    let calls = &ran.outcome.stats.iterations[0].calls;
    assert_eq!(calls[0].error, Some(kind));
    assert_eq!(calls[1].error, None);
}

#[tokio::test]
async fn unknown_tool_is_an_error_result_listing_the_available_tools() {
    let ran = run_with_sibling("get_wether", r#"{"city": "Paris"}"#).await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::UnknownTool);
    let text = &ran.bad.text();
    assert!(text.contains("unknown tool"), "{text}");
    assert!(text.contains("get_wether"), "{text}");
    assert!(
        text.contains("get_weather") && text.contains("echo"),
        "{text}"
    );
    assert_eq!(ran.weather_invocations, 1, "only the sibling ran");
}

#[tokio::test]
async fn bidi_controls_and_zero_width_characters_never_reach_the_model() {
    // A name that shows as `get_wetherexe.pdf` (a right-to-left override
    // reverses `fdp.exe`), with a zero-width space, a byte-order mark and a
    // right-to-left mark hidden in it.
    let ran = run_with_sibling(
        "\u{FEFF}get_\u{200B}wether\u{202E}fdp.exe\u{200F}",
        r#"{"city": "Paris"}"#,
    )
    .await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::UnknownTool);
    assert_eq!(
        ran.bad.text(),
        "unknown tool `get_wetherfdp.exe`; available tools: get_weather, echo"
    );

    // A tool's error text is cleaned the same way.
    let failing = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("flaky", "Always fails."),
        |_arguments: Value, _context| async move {
            Err::<Value, _>("file \u{2066}secret.txt\u{2069} is \u{200D}locked\u{AD}")
        },
    );
    let session = bind_tools([failing], ToolLimits::default()).await;
    let model = ScriptedModel::new([batch([call("bad", "flaky", "{}")]), answer("ok")]);
    let mut conversation = user_says("open it");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        result_for(&conversation, "bad").text(),
        "the tool `flaky` failed: file secret.txt is locked"
    );
}

#[tokio::test]
async fn truncated_json_arguments_are_an_error_result() {
    let ran = run_with_sibling("get_weather", r#"{"city": "San Fra"#).await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::ArgumentsNotJson);
    assert!(
        ran.bad.text().contains("not valid JSON"),
        "{}",
        ran.bad.text()
    );
    assert!(ran.bad.text().contains("get_weather"), "{}", ran.bad.text());
    assert_eq!(ran.weather_invocations, 1);
}

/// `null` means no arguments (Groq and other OpenAI-compatible servers
/// send it for a tool without parameters): read as `{}`, which this tool's
/// schema refuses for its missing `city`, not for the arguments' type.
#[tokio::test]
async fn null_arguments_are_no_arguments_and_the_schema_decides() {
    let ran = run_with_sibling("get_weather", "null").await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::InvalidArguments);
    assert!(ran.bad.text().contains("city"), "{}", ran.bad.text());
    assert!(
        !ran.bad.text().contains("must be a JSON object"),
        "{}",
        ran.bad.text()
    );
    assert_eq!(ran.weather_invocations, 1);
}

#[tokio::test]
async fn array_arguments_are_an_error_result() {
    let ran = run_with_sibling("get_weather", "[1]").await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::ArgumentsNotObject);
    assert!(
        ran.bad
            .text()
            .contains("must be a JSON object, got an array"),
        "{}",
        ran.bad.text()
    );
    assert_eq!(ran.weather_invocations, 1);
}

#[tokio::test]
async fn a_missing_required_field_is_an_error_result_naming_the_field() {
    let ran = run_with_sibling("get_weather", r#"{"days": 2}"#).await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::InvalidArguments);
    let text = &ran.bad.text();
    assert!(text.contains("\"city\""), "names the field: {text}");
    assert!(text.contains("required"), "says why: {text}");
    assert_eq!(ran.weather_invocations, 1);
}

#[tokio::test]
async fn a_wrong_type_is_an_error_result_naming_the_field_and_the_type() {
    let ran = run_with_sibling("get_weather", r#"{"city": 42}"#).await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::InvalidArguments);
    let text = &ran.bad.text();
    assert!(text.contains("/city"), "names the field: {text}");
    assert!(text.contains("string"), "says the expected type: {text}");
    assert_eq!(ran.weather_invocations, 1);
}

#[tokio::test]
async fn a_schema_constraint_violation_names_the_field() {
    let ran = run_with_sibling("get_weather", r#"{"city": "Oslo", "days": 0}"#).await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::InvalidArguments);
    assert!(ran.bad.text().contains("/days"), "{}", ran.bad.text());
    assert_eq!(ran.weather_invocations, 1);
}

#[tokio::test]
async fn empty_arguments_count_as_an_empty_object() {
    let ran = run_with_sibling("echo", "").await;
    assert_eq!(ran.bad, ToolResult::ok("bad", "{}"));
    assert_eq!(ran.sibling, ToolResult::ok("sibling", "sunny in Paris"));
    assert_eq!(ran.outcome.stats.iterations[0].calls[0].error, None);
}

#[tokio::test]
async fn empty_arguments_still_have_to_pass_the_schema() {
    // `""` is `{}`, which lacks the required `city`.
    let ran = run_with_sibling("get_weather", "").await;
    assert_refused_and_turn_went_on(&ran, ToolCallErrorKind::InvalidArguments);
    assert!(ran.bad.text().contains("\"city\""), "{}", ran.bad.text());
    assert_eq!(ran.weather_invocations, 1);
}

#[tokio::test]
async fn a_tool_error_is_an_error_result_with_clean_bounded_text() {
    let failing = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("flaky", "Always fails."),
        |_arguments: Value, _context| async move {
            let long_tail = "x".repeat(5_000);
            Err::<Value, _>(format!("disk full\n\tat /var/db\x1b[31m{long_tail}"))
        },
    );
    let session = bind_tools([failing, echo_tool("echo")], ToolLimits::default()).await;
    let model = ScriptedModel::new([
        batch([
            call("bad", "flaky", "{}"),
            call("sibling", "echo", r#"{"text":"hi"}"#),
        ]),
        answer("the disk is full"),
    ]);
    let mut conversation = user_says("write it");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a tool error does not fail the turn");

    let bad = result_for(&conversation, "bad");
    assert!(bad.is_error);
    assert!(
        bad.text().contains("disk full at /var/db"),
        "{}",
        bad.text()
    );
    assert!(has_no_control_characters(&bad.text()), "{:?}", bad.text());
    assert!(bad.text().len() <= ERROR_TEXT_BYTES, "{}", bad.text().len());
    assert_eq!(
        *result_for(&conversation, "sibling"),
        ToolResult::ok("sibling", r#"{"text":"hi"}"#)
    );
    assert_eq!(
        outcome.stats.iterations[0].calls[0].error,
        Some(ToolCallErrorKind::ToolFailed)
    );
    assert_eq!(outcome.answer(), Some("the disk is full"));
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn every_bad_call_in_one_batch_gets_its_own_error_result() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [weather_tool(Arc::clone(&invocations)), echo_tool("echo")],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "nope", "{}"),
            call("c2", "get_weather", r#"{"city": "San Fra"#),
            call("c3", "get_weather", "null"),
            call("c4", "get_weather", "[1]"),
            call("c5", "get_weather", "{}"),
            call("c6", "get_weather", r#"{"city": true}"#),
            call("c7", "get_weather", r#"{"city": "Lima"}"#),
            call("c8", "echo", ""),
        ]),
        batch([call("c9", "get_weather", r#"{"city": "Quito"}"#)]),
        answer("done"),
    ]);
    let mut conversation = user_says("all at once");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");

    let errors: Vec<(&str, bool)> = tool_results(&conversation)
        .iter()
        .map(|r| (r.tool_call_id.as_str(), r.is_error))
        .collect();
    assert_eq!(
        errors,
        [
            ("c1", true),
            ("c2", true),
            ("c3", true),
            ("c4", true),
            ("c5", true),
            ("c6", true),
            ("c7", false),
            ("c8", false),
            ("c9", false),
        ]
    );
    assert_eq!(result_for(&conversation, "c7").text(), "sunny in Lima");
    assert_eq!(result_for(&conversation, "c9").text(), "sunny in Quito");
    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    assert_eq!(outcome.stats.iteration_count(), 2);
    assert_eq!(outcome.stats.call_count(), 9, "refused calls count too");
    assert_eq!(model.requests().len(), 3);
    assert_every_call_answered(&conversation);
}

/// Refuses every call without running the tool.
struct RefuseWrites;

#[async_trait::async_trait]
impl ToolMiddleware for RefuseWrites {
    async fn handle(&self, _call: ToolInvocation, _next: Next<'_>) -> Result<ToolOutput, BoxError> {
        Err(Refusal::new("writes are disabled in this session").into())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the audit log is unreachable")]
struct AuditLogDown;

/// Fails every call with an error of its own, without running the tool.
struct Audit;

#[async_trait::async_trait]
impl ToolMiddleware for Audit {
    async fn handle(&self, _call: ToolInvocation, _next: Next<'_>) -> Result<ToolOutput, BoxError> {
        Err(AuditLogDown.into())
    }
}

/// Passes every call and every error through unchanged.
struct PassThrough;

#[async_trait::async_trait]
impl ToolMiddleware for PassThrough {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        next.run(call).await
    }
}

/// Runs one call `call_1` of the tool `name` through `middleware`; returns
/// its result and the kind in its statistics.
async fn run_one_through(
    middleware: impl ToolMiddleware,
    tool: tool::Definition,
    name: &str,
) -> (ToolResult, Option<ToolCallErrorKind>) {
    let session = bind(
        &Definition::builder()
            .name("turn-test")
            .tool(&tool)
            .middleware(middleware)
            .build()
            .validate()
            .expect("the test definition is valid"),
    )
    .await;
    let model = ScriptedModel::new([batch([call("call_1", name, "{}")]), answer("done")]);
    let mut conversation = user_says("go");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("a middleware's error does not fail the turn");
    assert_every_call_answered(&conversation);
    assert_eq!(outcome.answer(), Some("done"));
    (
        result_for(&conversation, "call_1").clone(),
        outcome.stats.iterations[0].calls[0].error,
    )
}

#[tokio::test]
async fn a_refusing_middleware_reads_as_refused_with_its_reason_and_the_tool_never_runs() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let (result, kind) = run_one_through(
        RefuseWrites,
        counting_tool("write_file", Arc::clone(&invocations)),
        "write_file",
    )
    .await;
    assert_eq!(
        result,
        ToolResult::error(
            "call_1",
            "the call to `write_file` was refused: writes are disabled in this session"
        )
    );
    assert_eq!(kind, Some(ToolCallErrorKind::Refused));
    assert_eq!(invocations.load(Ordering::SeqCst), 0, "the tool never ran");
}

#[tokio::test]
async fn a_failing_middleware_is_middleware_failed_not_a_tool_failure() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let (result, kind) = run_one_through(
        Audit,
        counting_tool("write_file", Arc::clone(&invocations)),
        "write_file",
    )
    .await;
    assert_eq!(
        result,
        ToolResult::error(
            "call_1",
            "the call to `write_file` failed in a middleware: the audit log is unreachable"
        )
    );
    assert_eq!(kind, Some(ToolCallErrorKind::MiddlewareFailed));
    assert_eq!(invocations.load(Ordering::SeqCst), 0);
}

#[derive(Debug, thiserror::Error)]
#[error("disk full")]
struct DiskFull;

#[tokio::test]
async fn a_tool_error_through_a_pass_through_middleware_stays_tool_failed() {
    let failing = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("save", "Saves."),
        |_arguments: Value, _context| async { Err::<Value, _>(DiskFull) },
    );
    let (result, kind) = run_one_through(PassThrough, failing, "save").await;
    assert_eq!(
        result,
        ToolResult::error("call_1", "the tool `save` failed: disk full")
    );
    assert_eq!(kind, Some(ToolCallErrorKind::ToolFailed));
}
