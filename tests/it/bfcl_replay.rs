//! The BFCL replay on its embedded default (4 categories, 1,000 real tasks)
//! gives exactly the counts measured when it was written, and bad input is
//! reported per task, never a panic.
//!
//! The counts are exact on purpose: a change in name sanitising, schema
//! checking, the OpenAI wire parser or the turn runner moves one of them.
//! If a number changes, find out why before updating it.

#[path = "../../examples/bfcl/replay.rs"]
mod replay;

use std::collections::BTreeMap;

use replay::{Category, Reason, Report};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_default_gives_the_measured_counts() {
    let report = replay::replay(&replay::embedded()).await;

    assert_eq!(
        report.categories,
        ["parallel", "parallel_multiple", "multiple", "simple_python"]
    );
    assert_eq!(report.tasks, 1000);
    assert_eq!(report.tasks_passed, 993);
    assert_eq!(report.tasks_failed, 7);
    assert_eq!(report.declarations, 1677);
    assert_eq!(report.names_sanitised, 880);
    assert_eq!(report.malformed_answer_lines, 0);
    assert!(report.bind_errors.is_empty(), "{:?}", report.bind_errors);
    assert_eq!(report.calls_expected, 1747);
    assert_eq!(report.calls_executed, 1747);
    assert_eq!(report.calls_succeeded, 1740);
    assert_eq!(report.calls_refused_by_schema, 7);

    let rewrites: Vec<(&str, usize)> = report
        .schema_rewrites
        .iter()
        .map(|(rule, count)| (*rule, *count))
        .collect();
    assert_eq!(
        rewrites,
        [
            ("any → no type", 4),
            ("dict → object", 1708),
            ("float → number", 502),
            ("optional removed", 43),
            ("required without property (kept)", 1),
            ("tuple → array", 8),
        ]
    );

    // Every failure is a ground truth its own schema refuses: "" accepted
    // for a required parameter (5), a string for an array, strings for
    // integers.
    assert_eq!(
        report.failures_by_reason,
        BTreeMap::from([(Reason::CallRefusedBySchema, 7)])
    );
    let failed: Vec<&str> = report.failures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        failed,
        [
            "parallel_88",
            "parallel_multiple_21",
            "parallel_multiple_87",
            "parallel_multiple_94",
            "parallel_multiple_119",
            "simple_python_17",
            "simple_python_200",
        ]
    );
    assert!(
        report.failures[0]
            .detail
            .contains("\"initial_velocity\" is a required property"),
        "{}",
        report.failures[0].detail
    );
    assert_eq!(report.first_refusals.len(), 5);

    // The text report lists every failed task; the JSON one is the same data.
    let text = replay::render_text(&report);
    assert!(text.contains("tasks                     1000 (993 passed, 7 failed)"));
    assert!(failed.iter().all(|id| text.contains(&format!("  {id}: "))));
    let as_json = serde_json::to_value(&report).unwrap();
    assert_eq!(as_json["tasks_passed"], 993);
    assert_eq!(as_json["failures_by_reason"]["call_refused_by_schema"], 7);
}

/// A category file and its answers with one problem per line.
const BAD_TASKS: &str = r#"{"id": "good", "question": [[{"role": "user", "content": "Add 2 and 3"}]], "function": [{"name": "math.add", "description": "Adds.", "parameters": {"type": "dict", "properties": {"a": {"type": "integer"}, "b": {"type": "float"}}, "required": ["a", "b"]}}]}
this line is not JSON
{"id": "no_function", "question": []}
["an", "array"]
{"id": "name_not_string", "function": [{"name": 7, "description": "x", "parameters": {"type": "dict", "properties": {}}}]}
{"id": "collision", "function": [{"name": "a.b", "description": "x", "parameters": {"type": "dict", "properties": {}}}, {"name": "a_b", "description": "y", "parameters": {"type": "dict", "properties": {}}}]}
{"id": "blank_description", "function": [{"name": "f", "description": "  ", "parameters": {"type": "dict", "properties": {}}}]}
{"id": "unknown_type", "function": [{"name": "f", "description": "x", "parameters": {"type": "dict", "properties": {"n": {"type": "integr"}}}}]}
{"id": "no_answer", "function": [{"name": "f", "description": "x", "parameters": {"type": "dict", "properties": {}}}]}
{"id": "undeclared_call", "function": [{"name": "f", "description": "x", "parameters": {"type": "dict", "properties": {}}}]}
{"id": "wrong_type", "function": [{"name": "f", "description": "x", "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]}
"#;

const BAD_ANSWERS: &str = r#"{"id": "good", "ground_truth": [{"math.add": {"a": [2], "b": [3.0, 3]}}, {"math.add": {"a": [5], "b": [1]}}]}
{"id": "name_not_string", "ground_truth": []}
{"id": "collision", "ground_truth": []}
{"id": "blank_description", "ground_truth": []}
{"id": "unknown_type", "ground_truth": []}
{"id": "undeclared_call", "ground_truth": [{"g": {}}]}
{"id": "wrong_type", "ground_truth": [{"f": {"n": ["three"]}}]}
not an answer
"#;

#[tokio::test]
async fn malformed_input_is_reported_per_task_never_a_panic() {
    let report: Report = replay::replay(&[Category {
        name: "bad".into(),
        tasks: BAD_TASKS,
        answers: Some(BAD_ANSWERS),
    }])
    .await;

    let failures: Vec<(&str, Reason)> = report
        .failures
        .iter()
        .map(|failure| (failure.id.as_str(), failure.reason))
        .collect();
    assert_eq!(
        failures,
        [
            ("bad line 2", Reason::MalformedLine),
            ("no_function", Reason::MalformedLine),
            ("bad line 4", Reason::MalformedLine),
            ("name_not_string", Reason::MalformedDeclaration),
            ("collision", Reason::NameCollision),
            ("unknown_type", Reason::BindFailed),
            ("no_answer", Reason::NoGroundTruth),
            ("undeclared_call", Reason::MalformedGroundTruth),
            ("wrong_type", Reason::CallRefusedBySchema),
        ]
    );
    // `good`, and `blank_description`: a blank description binds (OpenAI
    // and Anthropic accept it), and its empty ground truth is met.
    assert_eq!((report.tasks, report.tasks_passed), (11, 2));
    assert_eq!(report.malformed_answer_lines, 1);
    // `unknown_type` only.
    assert_eq!(
        report.bind_errors,
        BTreeMap::from([("InvalidToolInfo".to_owned(), 1)])
    );
    // `good`: two calls, `b` given as 3.0 reaches the tool as 3.0; `wrong_type`: one refused.
    assert_eq!(
        (
            report.calls_executed,
            report.calls_succeeded,
            report.calls_refused_by_schema
        ),
        (3, 2, 1)
    );
    // `math.add`; `a.b` is not counted: its task's declarations never became tools.
    assert_eq!(report.names_sanitised, 1);
    assert!(
        report.failures[4]
            .detail
            .contains("`a.b` and `a_b` both become `a_b`")
    );
}

#[tokio::test]
async fn tasks_without_answers_must_call_no_tool() {
    let report = replay::replay(&[Category {
        name: "irrelevance".into(),
        tasks: BAD_TASKS.lines().next().unwrap(),
        answers: None,
    }])
    .await;
    assert_eq!((report.tasks, report.tasks_passed), (1, 1));
    assert_eq!(report.calls_executed, 0);
}

#[test]
fn numbers_compare_by_value() {
    assert!(replay::json_equal(&json!({"a": [5]}), &json!({"a": [5.0]})));
    assert!(!replay::json_equal(&json!({"a": 5}), &json!({"a": 5.5})));
    assert!(!replay::json_equal(&json!({"a": 5}), &json!({"a": "5"})));
    assert!(!replay::json_equal(
        &json!({"a": 5}),
        &json!({"a": 5, "b": 1})
    ));
}
