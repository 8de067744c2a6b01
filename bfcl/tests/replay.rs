//! The BFCL replay on its embedded default (8 categories, 1,550 real tasks:
//! Python, Java and JavaScript single-turn, and multi-turn) gives exactly
//! the counts measured when it was written, the hand-made files of each
//! shape replay as they should, and bad input is reported per task, never
//! a panic.
//!
//! The counts are exact on purpose: a change in name sanitising, schema
//! checking, the OpenAI wire parser or the turn runner moves one of them.
//! If a number changes, find out why before updating it.

use bfcl as replay;

use std::collections::BTreeMap;

use replay::{Category, Reason, Report};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_categories_give_the_measured_counts() {
    let embedded = replay::embedded();
    let report = replay::replay(&embedded[..4]).await;

    assert_eq!(
        per_category(&report),
        [
            "parallel: single-turn Python, 199 of 200 passed",
            "parallel_multiple: single-turn Python, 196 of 200 passed",
            "multiple: single-turn Python, 200 of 200 passed",
            "simple_python: single-turn Python, 398 of 400 passed",
        ]
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

    assert_eq!(
        rewrites(&report),
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

    // The text report lists every failed task first and ends with a
    // one-line summary; the JSON one is the same data.
    let text = replay::render_text(&report);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "failed tasks:");
    assert!(
        failed
            .iter()
            .zip(&lines[1..])
            .all(|(id, line)| line.starts_with(&format!("  {id}: ")))
    );
    let summary = lines.last().unwrap();
    assert!(
        summary.starts_with(
            "BFCL replay: 1000 tasks in 4 categories, 993 passed, 7 failed (listed above), "
        ),
        "{summary}"
    );
    let as_json = serde_json::to_value(&report).unwrap();
    assert_eq!(as_json["tasks_passed"], 993);
    assert_eq!(as_json["failures_by_reason"]["call_refused_by_schema"], 7);
}

/// Each failed task's id and reason, in order.
fn failures(report: &Report) -> Vec<(&str, Reason)> {
    report
        .failures
        .iter()
        .map(|failure| (failure.id.as_str(), failure.reason))
        .collect()
}

/// Each failed task's id, reason and detail, in order.
fn failure_details(report: &Report) -> Vec<(&str, Reason, &str)> {
    report
        .failures
        .iter()
        .map(|failure| (failure.id.as_str(), failure.reason, failure.detail.as_str()))
        .collect()
}

/// Each schema rewrite with its count, by rule.
fn rewrites(report: &Report) -> Vec<(&'static str, usize)> {
    report
        .schema_rewrites
        .iter()
        .map(|(rule, count)| (*rule, *count))
        .collect()
}

/// `name: shape, passed of tasks passed` for each category.
fn per_category(report: &Report) -> Vec<String> {
    report
        .categories
        .iter()
        .map(|c| {
            assert_eq!(c.passed + c.failed, c.tasks, "{}", c.name);
            format!(
                "{}: {}, {} of {} passed",
                c.name,
                c.shape_label(),
                c.passed,
                c.tasks
            )
        })
        .collect()
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
    let report: Report =
        replay::replay(&[Category::new("bad", BAD_TASKS, Some(BAD_ANSWERS))]).await;

    assert_eq!(
        failures(&report),
        [
            ("bad line 2", Reason::MalformedLine),
            ("no_function", Reason::UnknownShape),
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
    let report = replay::replay(&[Category::new(
        "irrelevance",
        BAD_TASKS.lines().next().unwrap(),
        None,
    )])
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_javascript_and_multi_turn_categories_give_the_measured_counts() {
    let embedded = replay::embedded();
    let report = replay::replay(&embedded[4..]).await;

    assert_eq!(
        per_category(&report),
        [
            "simple_java: single-turn Java, 100 of 100 passed",
            "simple_javascript: single-turn JavaScript, 50 of 50 passed",
            "multi_turn_base: multi-turn, 199 of 200 passed",
            "multi_turn_miss_func: multi-turn, 198 of 200 passed",
        ]
    );
    assert!(report.bind_errors.is_empty(), "{:?}", report.bind_errors);
    assert_eq!(report.malformed_answer_lines, 0);
    // Each multi-turn task declares every function of its classes.
    assert_eq!(report.declarations, 100 + 50 + 5532 + 5532);
    assert_eq!(
        (
            report.calls_expected,
            report.calls_executed,
            report.calls_succeeded,
            report.calls_refused_by_schema
        ),
        (2430, 2430, 2427, 2)
    );
    assert_eq!(
        rewrites(&report),
        [
            ("Java parameter → string literal", 258),
            ("JavaScript parameter → string literal", 135),
            ("dict → object", 100 + 50 + 5563 + 5563),
            ("float → number", 1450 + 1450),
        ]
    );

    // The three failures are the data's: a ticket id the ground truth gives
    // as a string to an integer parameter (the same task in both files),
    // and a call to `tail` one turn before the turn that adds it.
    assert_eq!(
        failures(&report),
        [
            ("multi_turn_base_173", Reason::CallRefusedBySchema),
            ("multi_turn_miss_func_49", Reason::CallFailed),
            ("multi_turn_miss_func_173", Reason::CallRefusedBySchema),
        ]
    );
    assert!(report.failures[0].detail.starts_with(
        "turn 3: invalid arguments for `close_ticket`: `/ticket_id`: \"ticket_001\" is not of type \"integer\""
    ));
    assert!(
        report.failures[1]
            .detail
            .starts_with("turn 1: UnknownTool: unknown tool `tail`"),
        "{}",
        report.failures[1].detail
    );
}

#[tokio::test]
async fn embedded_default_is_every_category_with_one_summary_line_last() {
    let report = replay::replay(&replay::embedded()).await;
    assert_eq!((report.tasks, report.tasks_passed), (1550, 1540));
    let text = replay::render_text(&report);
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with(
            "BFCL replay: 1550 tasks in 8 categories, 1540 passed, 10 failed (listed above), "
        ),
        "{last}"
    );
    // `--json` prints this one object.
    let as_json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        as_json["categories"][4]["shapes"],
        json!({ "single-turn Java": 100 })
    );
    assert_eq!(as_json["categories"][7]["passed"], 198);
}

/// A hand-made category file of `bfcl/fixtures/hand_made/`, with its
/// answers.
macro_rules! hand_made {
    ($name:literal) => {
        Category::new(
            $name,
            include_str!(concat!("../fixtures/hand_made/BFCL_v4_", $name, ".json")),
            Some(include_str!(concat!(
                "../fixtures/hand_made/possible_answer/BFCL_v4_",
                $name,
                ".json"
            ))),
        )
    };
}

/// Replays hand-built multi-turn tasks, each a (task line, answer line)
/// pair, against the hand-made function docs.
async fn replay_multi_turn(tasks: &[(Value, Value)]) -> Report {
    let lines = |pick: fn(&(Value, Value)) -> &Value| {
        tasks
            .iter()
            .map(|task| pick(task).to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (task_lines, answer_lines) = (lines(|task| &task.0), lines(|task| &task.1));
    replay::replay(&[Category {
        func_docs: hand_made_func_docs(),
        ..Category::new("multi_turn_built", &task_lines, Some(&answer_lines))
    }])
    .await
}

/// The function docs of `bfcl/fixtures/hand_made/multi_turn_func_doc/`.
fn hand_made_func_docs() -> BTreeMap<String, &'static str> {
    BTreeMap::from([
        (
            "gorilla_file_system.json".to_owned(),
            include_str!("../fixtures/hand_made/multi_turn_func_doc/gorilla_file_system.json"),
        ),
        (
            "ticket_api.json".to_owned(),
            include_str!("../fixtures/hand_made/multi_turn_func_doc/ticket_api.json"),
        ),
    ])
}

#[tokio::test]
async fn java_and_javascript_tasks_bind_and_get_their_literals() {
    let report =
        replay::replay(&[hand_made!("simple_java"), hand_made!("simple_javascript")]).await;
    assert_eq!(
        per_category(&report),
        [
            "simple_java: single-turn Java, 1 of 1 passed",
            "simple_javascript: single-turn JavaScript, 1 of 1 passed",
        ]
    );
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    // Every parameter is a string holding a literal: 8 Java, 6 JavaScript.
    assert_eq!(report.schema_rewrites["Java parameter → string literal"], 8);
    assert_eq!(
        report.schema_rewrites["JavaScript parameter → string literal"],
        6
    );
    assert_eq!(
        (report.calls_succeeded, report.calls_refused_by_schema),
        (2, 0)
    );

    // The same Java task read as Python: `long`, `ArrayList`, `HashMap`,
    // `String`, `double` map to JSON Schema types and the typed ground
    // truth passes them (the `any` parameter holds a string).
    let as_python = hand_made!("simple_java");
    let report =
        replay::replay(&[Category::new("typed", as_python.tasks, as_python.answers)]).await;
    assert_eq!(
        (report.tasks_passed, report.tasks_failed),
        (1, 0),
        "{:?}",
        report.failures
    );
    assert_eq!(report.schema_rewrites["long → integer"], 2);
    assert_eq!(report.schema_rewrites["ArrayList → array"], 1);
    assert_eq!(report.schema_rewrites["HashMap → object"], 1);
}

#[tokio::test]
async fn multi_turn_tasks_add_withheld_functions_per_turn_and_report_bad_call_strings() {
    let category = Category {
        func_docs: hand_made_func_docs(),
        ..hand_made!("multi_turn_hand_made")
    };
    let report = replay::replay(&[category]).await;

    assert_eq!(
        failure_details(&report),
        [
            (
                "unparseable",
                Reason::UnparseableCallString,
                "turn 0, call 0 `cd(folder=current_dir)`: at byte 10: `current_dir` is not a literal (a name or an expression)"
            ),
            // `sort` is not offered before turn 1: the mode adds it there.
            (
                "too_early",
                Reason::CallFailed,
                "turn 0: UnknownTool: unknown tool `sort`; available tools: cd, ls"
            ),
            (
                "excluded",
                Reason::MalformedGroundTruth,
                "turn 0, call 0: `ls` is not among the task's functions (those of its classes, less `excluded_function`)"
            ),
            (
                "unknown_class",
                Reason::NoFunctionDocs,
                "class `NoSuchAPI` is not in BFCL's class table"
            ),
            (
                "no_doc",
                Reason::NoFunctionDocs,
                "no `posting_api.json` (class `TwitterAPI`) among the function docs"
            ),
        ]
    );
    // `withheld`: two turns, `cd` and `ls` then the positional `sort`;
    // `nested`: one call whose nested lists and dicts passed the schema.
    assert_eq!(
        per_category(&report),
        ["multi_turn_hand_made: multi-turn, 2 of 7 passed"]
    );
    assert_eq!(
        (
            report.calls_expected,
            report.calls_executed,
            report.calls_succeeded
        ),
        (5, 5, 4)
    );
}

#[test]
fn call_strings_with_nested_literals_parse_and_bad_ones_say_where() {
    let call = replay::call_string::parse(
        "edit_ticket(7, updates={'tags': ['urgent', ['billing', \"q3\"]], 'meta': {'owner': None, 'ratio': -0.5, 'pair': (1, 2)}})",
    )
    .unwrap();
    let arguments = call
        .arguments(&["ticket_id".to_owned(), "updates".to_owned()])
        .unwrap();
    assert_eq!(
        Value::Object(arguments),
        json!({
            "ticket_id": 7,
            "updates": {
                "tags": ["urgent", ["billing", "q3"]],
                "meta": { "owner": null, "ratio": -0.5, "pair": [1, 2] }
            }
        })
    );
    let error = replay::call_string::parse("mv(source='a.txt', destination=)").unwrap_err();
    assert_eq!(error.to_string(), "at byte 31: `)` cannot start a value");
}

#[tokio::test]
async fn a_line_of_no_known_shape_says_so() {
    let report = replay::replay(&[Category::new(
        "other",
        r#"{"id": "x", "prompt": "hi", "tools": []}"#,
        None,
    )])
    .await;
    assert_eq!(report.failures[0].reason, Reason::UnknownShape);
    assert_eq!(
        report.failures[0].detail,
        "neither a `function` array (single-turn) nor `involved_classes` (multi-turn); keys: id, prompt, tools"
    );
    assert_eq!(report.categories[0].shape_label(), "unknown or malformed");
}

#[tokio::test]
async fn the_deepest_call_string_the_parser_accepts_replays() {
    use replay::call_string::MAX_DEPTH;
    // `updates` is one level (a dict), `tags` the rest: `depth` in all.
    let call = |depth: usize| {
        let lists = depth - 1;
        format!(
            "edit_ticket(1, updates={{'tags': {}{}}})",
            "[".repeat(lists),
            "]".repeat(lists)
        )
    };
    let task = |id: &str, depth: usize| {
        (
            json!({
                "id": id,
                "question": [[{"role": "user", "content": "Tag it."}]],
                "involved_classes": ["TicketAPI"]
            }),
            json!({"id": id, "ground_truth": [[call(depth)]]}),
        )
    };
    let report =
        replay_multi_turn(&[task("deepest", MAX_DEPTH), task("too_deep", MAX_DEPTH + 1)]).await;
    // The deepest accepted value reaches its tool (its arguments object
    // within serde_json's recursion limit); one level more is refused by
    // the parser, with the byte where the limit is passed.
    assert_eq!(
        failures(&report),
        [("too_deep", Reason::UnparseableCallString)]
    );
    assert!(
        report.failures[0]
            .detail
            // `edit_ticket(1, updates={'tags': ` is 32 bytes; the list
            // 126 levels down (the dict is one) opens 125 bytes later.
            .ends_with("at byte 157: nested deeper than 126 levels"),
        "{}",
        report.failures[0].detail
    );
    assert_eq!((report.calls_executed, report.calls_succeeded), (1, 1));
}

#[tokio::test]
async fn a_failed_task_stays_one_line_and_a_huge_call_string_is_quoted_around_its_problem() {
    let huge = format!("cd(folder={}{})", "[".repeat(100_000), "]".repeat(100_000));
    let task = |id: &str, call: &str| {
        (
            json!({
                "id": id,
                "question": [[{"role": "user", "content": "Go."}]],
                "involved_classes": ["GorillaFileSystem"]
            }),
            json!({"id": id, "ground_truth": [[call]]}),
        )
    };
    let report = replay_multi_turn(&[
        task("line\nbreak", "cd(folder='a\nb')"),
        task("huge", &huge),
    ])
    .await;

    // The 200,011-byte string is quoted 120 bytes either side of byte 136,
    // where the nesting passes 126 levels.
    assert_eq!(
        report.failures[1].detail,
        format!(
            "turn 0, call 0 `…{}… (200011 bytes)`: at byte 136: nested deeper than 126 levels",
            "[".repeat(240)
        )
    );
    // The data keeps its line break; the text report escapes it.
    assert_eq!(
        report.failures[0].detail,
        "turn 0, call 0 `cd(folder='a\nb')`: at byte 10: string is not closed"
    );
    let text = replay::render_text(&report);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "failed tasks:",
            r"  line\nbreak: unparseable call string: turn 0, call 0 `cd(folder='a\nb')`: at byte 10: string is not closed",
        ]
    );
    assert!(lines[2].starts_with("  huge: unparseable call string: turn 0, call 0 `…[[["));
    assert_eq!(lines[3], "categories:");
}

#[tokio::test]
async fn a_function_withheld_twice_or_excluded_is_a_malformed_task_and_the_last_turn_can_add_one() {
    let task = |id: &str, extra: Value, ground_truth: Value| {
        let turns = ground_truth.as_array().map_or(0, Vec::len);
        let mut task = json!({
            "id": id,
            "question": (0..turns).map(|turn| if turn + 1 == turns {
                json!([])
            } else {
                json!([{"role": "user", "content": "Go on."}])
            }).collect::<Vec<_>>(),
            "involved_classes": ["GorillaFileSystem"]
        });
        if let (Some(task), Value::Object(extra)) = (task.as_object_mut(), extra) {
            task.extend(extra);
        }
        (task, json!({"id": id, "ground_truth": ground_truth}))
    };
    let report = replay_multi_turn(&[
        task(
            "last",
            json!({"missed_function": {"2": ["sort"]}}),
            json!([["cd(folder='docs')"], ["ls()"], ["sort('a.txt')"]]),
        ),
        task(
            "twice",
            json!({"missed_function": {"1": ["sort"], "2": ["sort"]}}),
            json!([[], ["sort('a.txt')"], []]),
        ),
        task(
            "excluded",
            json!({"excluded_function": ["sort"], "missed_function": {"1": ["sort"]}}),
            json!([[], ["sort('a.txt')"]]),
        ),
    ])
    .await;

    assert_eq!(
        failure_details(&report),
        [
            (
                "twice",
                Reason::MalformedLine,
                "`missed_function` adds `sort` at turn 1 and again at turn 2"
            ),
            (
                "excluded",
                Reason::MalformedLine,
                "`missed_function` of turn 1 names `sort`, not among the task's functions \
                 (those of its classes, less `excluded_function`)"
            ),
        ]
    );
    // `last`: `cd`, `ls`, then `sort` in the turn that adds it.
    assert_eq!((report.calls_executed, report.calls_succeeded), (3, 3));
}

/// A fresh empty folder under the system's temporary one, for files the
/// test writes (removed by the caller).
fn scratch_folder(name: &str) -> std::path::PathBuf {
    let folder = std::env::temp_dir().join(format!("bfcl-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

#[tokio::test]
async fn a_category_file_from_disk_finds_its_function_docs_or_says_where_it_looked() {
    use replay::category_file::replay_file;
    use std::path::Path;

    let hand_made = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/hand_made"));
    let file = hand_made.join("BFCL_v4_multi_turn_hand_made.json");
    // Beside the file: the folder the test above embeds.
    let report = replay_file(&file, None).await.unwrap();
    assert_eq!(
        per_category(&report),
        ["multi_turn_hand_made: multi-turn, 2 of 7 passed"]
    );
    let no_doc = report.failures.iter().find(|f| f.id == "no_doc").unwrap();
    assert_eq!(
        no_doc.detail,
        format!(
            "no `posting_api.json` (class `TwitterAPI`) in {}",
            hand_made.join("multi_turn_func_doc").display()
        )
    );

    // A folder given by hand that is not there is a usage error.
    let missing = hand_made.join("no_such_folder");
    assert_eq!(
        replay_file(&file, Some(&missing)).await.unwrap_err(),
        format!("--func-doc {}: not a directory", missing.display())
    );

    // No function docs beside a copy: each task says where it looked.
    let folder = scratch_folder("no-func-doc");
    let copy = folder.join("BFCL_v4_multi_turn_copy.json");
    std::fs::copy(&file, &copy).unwrap();
    let empty = folder.join("BFCL_v4_empty.json");
    std::fs::write(&empty, "").unwrap();
    let report = replay_file(&copy, None).await;
    let empty_report = replay_file(&empty, None).await;
    std::fs::remove_dir_all(&folder).unwrap();

    let report = report.unwrap();
    assert_eq!(report.tasks_passed, 0);
    assert_eq!(
        report.failures[0].detail,
        format!(
            "no `gorilla_file_system.json` (class `GorillaFileSystem`) in {}, which does not exist",
            folder.join("multi_turn_func_doc").display()
        )
    );
    // An empty file has no task of a known shape: not a category file.
    assert_eq!(
        empty_report.unwrap_err(),
        format!(
            "{}: not a BFCL category file: no line is a task with a `function` array \
             (single-turn) or `involved_classes` (multi-turn)",
            empty.display()
        )
    );
}

#[tokio::test]
async fn a_relevance_task_is_not_replayable_while_an_irrelevance_one_calls_no_tool() {
    // BFCL's relevance tasks are right when the model makes any call, the
    // opposite of irrelevance; neither has answers.
    let line = BAD_TASKS.lines().next().unwrap();
    let report = replay::replay(&[
        Category::new("live_relevance", line, None),
        Category::new("live_irrelevance", line, None),
    ])
    .await;
    assert_eq!(failures(&report), [("good", Reason::NotReplayable)]);
    assert_eq!(report.categories[1].passed, 1);
    let text = replay::render_text(&report);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "failed tasks:",
            "  good: not replayable: relevance task: BFCL counts any call to a declared function as right and gives no ground-truth call to replay",
            "categories:",
            "  live_relevance    single-turn Python      0 of 1 passed (no answers: any call is right)",
        ]
    );
    assert_eq!(
        lines[4],
        "  live_irrelevance  single-turn Python      1 of 1 passed (no answers: no tool call expected)"
    );
}
