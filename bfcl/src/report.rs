//! The replay's [`Report`]: counts, failures with their reasons, timings,
//! and its text rendering (`--json` serialises the same struct).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::normalize::{Language, Rewrites};

/// Why a task failed; the report counts failures by this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The line is not a JSON object with a string `id`, or a field of its
    /// shape is of the wrong kind (`function` not an array, `question` not
    /// a list of turns, `missed_function` naming no function).
    MalformedLine,
    /// A JSON task of no shape the replay knows: neither a `function`
    /// array (single-turn) nor `involved_classes` (multi-turn).
    UnknownShape,
    /// A multi-turn task's class is not in BFCL's class table, or its
    /// function-doc file is missing or unreadable.
    NoFunctionDocs,
    /// A declaration is not `{name, description?, parameters?}`.
    MalformedDeclaration,
    /// Two declarations share a model-facing name after sanitising.
    NameCollision,
    /// `validate` refused the loop definition.
    DefinitionInvalid,
    /// `bind` refused (the report also counts bind errors by kind).
    BindFailed,
    /// The answers file has no line for this task id.
    NoGroundTruth,
    /// The ground truth is not a list of `{tool: {param: [values]}}` (a
    /// list of call-string lists per turn, for multi-turn), or calls a tool
    /// the task does not declare, or has more positional arguments than
    /// the function has parameters.
    MalformedGroundTruth,
    /// A multi-turn call string is not a Python call with literal
    /// arguments.
    UnparseableCallString,
    /// An agentic task (`memory`, `web_search`): its ground truth is the
    /// final answer, and the calls that lead there depend on live
    /// backends, so there are no calls to replay. Or a relevance task
    /// without answers (`live_relevance`): any call is right, and none is
    /// given.
    NotReplayable,
    /// The turn failed (model error, tool limit).
    TurnFailed,
    /// At least one call failed the tool's JSON Schema.
    CallRefusedBySchema,
    /// At least one call failed otherwise (unknown tool, tool error).
    CallFailed,
    /// A call did not reach its tool, or reached it with other arguments.
    ArgumentsDiffer,
    /// The turn ended with another answer than the model's.
    AnswerDiffers,
}

impl Reason {
    /// The reason as the report prints it.
    pub fn label(self) -> &'static str {
        match self {
            Reason::MalformedLine => "malformed task line",
            Reason::UnknownShape => "unknown task shape",
            Reason::NoFunctionDocs => "no function docs",
            Reason::MalformedDeclaration => "malformed declaration",
            Reason::NameCollision => "name collision after sanitising",
            Reason::DefinitionInvalid => "definition invalid",
            Reason::BindFailed => "bind failed",
            Reason::NoGroundTruth => "no ground truth",
            Reason::MalformedGroundTruth => "malformed ground truth",
            Reason::UnparseableCallString => "unparseable call string",
            Reason::NotReplayable => "not replayable",
            Reason::TurnFailed => "turn failed",
            Reason::CallRefusedBySchema => "call refused by schema validation",
            Reason::CallFailed => "call failed",
            Reason::ArgumentsDiffer => "arguments differ",
            Reason::AnswerDiffers => "answer differs",
        }
    }
}

/// The shape of a task line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Shape {
    /// A `function` array, declared for this language.
    SingleTurn(Language),
    /// `involved_classes`, with function docs.
    MultiTurn,
    /// `involved_classes` in an agentic category (`memory`, `web_search`):
    /// the ground truth is the final answer, not calls.
    Agentic,
    /// Not a JSON task object of a known shape.
    Unknown,
}

impl Shape {
    /// The shape as the report prints it (`single-turn Java`).
    pub fn label(self) -> &'static str {
        match self {
            Shape::SingleTurn(Language::Python) => "single-turn Python",
            Shape::SingleTurn(Language::Java) => "single-turn Java",
            Shape::SingleTurn(Language::JavaScript) => "single-turn JavaScript",
            Shape::MultiTurn => "multi-turn",
            Shape::Agentic => "agentic",
            Shape::Unknown => "unknown or malformed",
        }
    }
}

impl Serialize for Shape {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

/// One category file: its shape and its counts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CategoryReport {
    /// The category's name (`simple_java`).
    pub name: String,
    /// Whether it has answers; without, every task must call no tool (a
    /// relevance category's tasks are not replayable).
    pub answers: bool,
    /// Tasks by shape (`{"multi-turn": 200}`): a file has one shape, and
    /// lines of no known shape are counted as `unknown or malformed`.
    #[serde(serialize_with = "shapes_by_label")]
    pub shapes: BTreeMap<Shape, usize>,
    /// Tasks read.
    pub tasks: usize,
    /// Tasks whose every check held.
    pub passed: usize,
    /// Tasks that failed.
    pub failed: usize,
}

impl CategoryReport {
    /// `single-turn Java`, or every shape seen with its count.
    pub fn shape_label(&self) -> String {
        match self.shapes.keys().collect::<Vec<_>>().as_slice() {
            [] => "empty".into(),
            [only] => only.label().into(),
            _ => join_counts(self.shapes.iter().map(|(shape, n)| (shape.label(), *n))),
        }
    }
}

fn shapes_by_label<S: serde::Serializer>(
    shapes: &BTreeMap<Shape, usize>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(shapes.iter().map(|(shape, count)| (shape.label(), count)))
}

/// One failed task.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    /// The task id (`parallel_29`), or `<category> line <n>` when the line
    /// has none.
    pub id: String,
    /// Why, for counting.
    pub reason: Reason,
    /// Why, for a person: the first problem found.
    pub detail: String,
}

/// Validate + bind time per task, in microseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timing {
    /// Median (nearest rank).
    pub median_us: u64,
    /// 99th percentile (nearest rank).
    pub p99_us: u64,
}

/// What a replay found. `--json` prints exactly this.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The categories replayed, in order, with their shape and counts.
    pub categories: Vec<CategoryReport>,
    /// Tasks read (one per non-blank line).
    pub tasks: usize,
    /// Tasks whose every check held.
    pub tasks_passed: usize,
    /// Tasks listed in `failures`.
    pub tasks_failed: usize,
    /// Failures counted by reason.
    pub failures_by_reason: BTreeMap<Reason, usize>,
    /// Every failed task, in input order.
    pub failures: Vec<Failure>,
    /// Answer lines that are not `{id, ground_truth}` JSON (their tasks then
    /// fail with `no_ground_truth`).
    pub malformed_answer_lines: usize,
    /// Tool declarations read, in tasks whose line parsed.
    pub declarations: usize,
    /// Declaration names `NameRules::OpenAi.sanitize` changed, in tasks
    /// whose declarations all became tools.
    pub names_sanitised: usize,
    /// Schema rewrites applied, by rule.
    pub schema_rewrites: Rewrites,
    /// `bind` errors by `BindErrorKind` (its `Debug` name).
    pub bind_errors: BTreeMap<String, usize>,
    /// Tool calls the ground truth asks for, in turns that ran.
    pub calls_expected: usize,
    /// Tool calls the turn runner executed (refused ones included).
    pub calls_executed: usize,
    /// Calls that reached their tool.
    pub calls_succeeded: usize,
    /// Calls refused by schema validation.
    pub calls_refused_by_schema: usize,
    /// The first refusal reasons, `task id: model-facing message`.
    pub first_refusals: Vec<String>,
    /// Validate + bind time per task that got that far.
    pub validate_bind: Timing,
    /// Calls executed per second of time spent inside `run_turn`.
    pub calls_per_second: f64,
    /// Wall time of the whole replay, in milliseconds.
    pub elapsed_ms: u64,
}

/// Nearest-rank median and p99 of `samples`.
pub(super) fn timing(samples: &mut [Duration]) -> Timing {
    samples.sort_unstable();
    let rank = |percent: usize| -> u64 {
        if samples.is_empty() {
            return 0;
        }
        let index = (samples.len() * percent).div_ceil(100).saturating_sub(1);
        let sample = samples[index.min(samples.len() - 1)];
        u64::try_from(sample.as_micros()).unwrap_or(u64::MAX)
    };
    Timing {
        median_us: rank(50),
        p99_us: rank(99),
    }
}

/// The report as text, one fact per line: every failed task first (one
/// line each), then the counts, and a one-line summary last, so the last
/// line of a run says how it went.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    if !report.failures.is_empty() {
        line("failed tasks:".into());
        for failure in &report.failures {
            line(format!(
                "  {}: {}: {}",
                one_line(&failure.id),
                failure.reason.label(),
                one_line(&failure.detail)
            ));
        }
    }
    line("categories:".into());
    let width = report
        .categories
        .iter()
        .map(|category| category.name.len())
        .max()
        .unwrap_or(0);
    for category in &report.categories {
        line(format!(
            "  {:width$}  {:22}  {} of {} passed{}",
            category.name,
            category.shape_label(),
            category.passed,
            category.tasks,
            if category.answers {
                ""
            } else if super::is_relevance(&category.name) {
                " (no answers: any call is right)"
            } else {
                " (no answers: no tool call expected)"
            }
        ));
    }
    line(format!("declarations              {}", report.declarations));
    line(format!(
        "names sanitised           {}",
        report.names_sanitised
    ));
    line(format!(
        "schema rewrites           {}",
        join_counts(report.schema_rewrites.iter().map(|(k, v)| (*k, *v)))
    ));
    line(format!(
        "bind errors               {}",
        join_counts(report.bind_errors.iter().map(|(k, v)| (k.as_str(), *v)))
    ));
    if report.malformed_answer_lines > 0 {
        line(format!(
            "malformed answer lines    {}",
            report.malformed_answer_lines
        ));
    }
    line(format!(
        "calls                     {} expected, {} executed, {} reached their tool, {} refused by schema validation",
        report.calls_expected,
        report.calls_executed,
        report.calls_succeeded,
        report.calls_refused_by_schema
    ));
    line(format!(
        "validate+bind per task    median {} µs, p99 {} µs",
        report.validate_bind.median_us, report.validate_bind.p99_us
    ));
    line(format!(
        "calls per second          {:.0} (in run_turn)",
        report.calls_per_second
    ));
    if !report.failures.is_empty() {
        line(format!(
            "failures by reason        {}",
            join_counts(
                report
                    .failures_by_reason
                    .iter()
                    .map(|(reason, count)| (reason.label(), *count))
            )
        ));
    }
    line(format!(
        "BFCL replay: {} tasks in {} {}, {} passed, {} failed{}, {} ms",
        report.tasks,
        report.categories.len(),
        if report.categories.len() == 1 {
            "category"
        } else {
            "categories"
        },
        report.tasks_passed,
        report.tasks_failed,
        if report.tasks_failed > 0 {
            " (listed above)"
        } else {
            ""
        },
        report.elapsed_ms
    ));
    out
}

/// `text` with its control characters escaped (`\n`, `\u{7}`): ids and
/// details quote the data (a call string, a task id), which may hold line
/// breaks, and each failed task must stay one line.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `a 3, b 1`, or `none`.
fn join_counts<'a>(counts: impl Iterator<Item = (&'a str, usize)>) -> String {
    let parts: Vec<String> = counts
        .map(|(name, count)| format!("{name} {count}"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}
