//! The BFCL replay: every task of a category through the whole library
//! (declarations → `ToolInfo` → validate → bind → one turn per user turn,
//! driven by an OpenAI-format model → checked tool calls), into a
//! [`Report`].
//!
//! Two task shapes: single-turn (a `function` array; Python, Java or
//! JavaScript declarations, by the category's name) and multi-turn
//! (`involved_classes`, whose declarations come from function-doc files;
//! see `multi_turn.rs`). A line of neither shape is reported as such.
//!
//! The library of the `bfcl` binary (`src/main.rs`) and its test
//! (`tests/replay.rs`). Nothing here panics on input: a line
//! that is not a task, a declaration that cannot be a tool, an answer that
//! does not fit its task are task failures with their reason.

mod answers;
// Public to `main.rs` and the test: a category file read from disk.
pub mod category_file;
// Public to the test, which checks the parser on hand-made strings.
pub mod call_string;
// Public to `main.rs`, which reads the files of BFCL's class table.
pub mod func_doc;
mod literal;
mod model;
mod multi_turn;
mod normalize;
mod report;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_loop::bind::{Bindings, ToolCallErrorKind};
use agent_loop::conversation::Message;
use agent_loop::session::{LoopId, SessionId};
use agent_loop::tool::{self, BoxError, CallContext, NameRules};
use agent_loop::turn::{TurnStats, TurnStatus};
use agent_loop::{Bound, Definition, ToolInfo, ToolLimits, Validated};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use answers::json_equal;
pub use normalize::Language;
pub use report::{CategoryReport, Failure, Reason, Report, Shape, render_text};

use answers::{ExpectedCall, expected_calls, read_answers};
use model::{Batching, OpenAiReplayModel};
use report::timing;

/// The final answer the model gives after its batch (or at once for tasks
/// without ground truth).
pub const FINAL_ANSWER: &str = "Done: every requested call was made.";

/// How many refusal reasons the report quotes.
const QUOTED_REFUSALS: usize = 5;

/// One BFCL category: its tasks and, when it has one, its answers, both as
/// JSON Lines text.
#[derive(Clone, Debug)]
pub struct Category<'a> {
    /// A label for the report, e.g. `parallel`.
    pub name: String,
    /// The category file's text: one task per line.
    pub tasks: &'a str,
    /// The `possible_answer` file's text. `None` (as for `irrelevance`):
    /// the right behaviour is to call no tool, so the model answers at once.
    pub answers: Option<&'a str>,
    /// Multi-turn function docs: file name (`posting_api.json`, see
    /// [`func_doc::CLASS_FILES`]) → its JSON Lines text. Empty for single-turn files.
    pub func_docs: BTreeMap<String, &'a str>,
    /// The folder `func_docs` were read from, as a task whose class file
    /// is not among them names it (`None`: embedded or hand-built).
    pub func_doc_dir: Option<String>,
}

impl<'a> Category<'a> {
    /// A category without function docs.
    pub fn new(name: impl Into<String>, tasks: &'a str, answers: Option<&'a str>) -> Self {
        Self {
            name: name.into(),
            tasks,
            answers,
            func_docs: BTreeMap::new(),
            func_doc_dir: None,
        }
    }
}

/// The embedded default: the categories copied under
/// `bfcl/fixtures/`, with their answers and, for the multi-turn
/// ones, the function docs of their classes.
pub fn embedded() -> Vec<Category<'static>> {
    macro_rules! category {
        ($name:literal) => {
            Category::new(
                $name,
                include_str!(concat!("../fixtures/BFCL_v4_", $name, ".json")),
                Some(include_str!(concat!(
                    "../fixtures/possible_answer/BFCL_v4_",
                    $name,
                    ".json"
                ))),
            )
        };
    }
    macro_rules! func_docs {
        ($($file:literal),*) => {
            BTreeMap::from([$((
                $file.to_owned(),
                include_str!(concat!("../fixtures/multi_turn_func_doc/", $file)),
            )),*])
        };
    }
    let func_docs = func_docs!(
        "gorilla_file_system.json",
        "math_api.json",
        "message_api.json",
        "posting_api.json",
        "ticket_api.json",
        "trading_bot.json",
        "travel_booking.json",
        "vehicle_control.json"
    );
    vec![
        category!("parallel"),
        category!("parallel_multiple"),
        category!("multiple"),
        category!("simple_python"),
        category!("simple_java"),
        category!("simple_javascript"),
        Category {
            func_docs: func_docs.clone(),
            ..category!("multi_turn_base")
        },
        Category {
            func_docs,
            ..category!("multi_turn_miss_func")
        },
    ]
}

/// Replays every task of `categories`, one after another (so timings are
/// not skewed by tasks competing for the runtime).
pub async fn replay(categories: &[Category<'_>]) -> Report {
    let started = Instant::now();
    let mut report = Report::default();
    let mut bind_times = Vec::new();
    let mut turn_time = Duration::ZERO;
    for category in categories {
        let mut summary = CategoryReport {
            name: category.name.clone(),
            answers: category.answers.is_some(),
            ..CategoryReport::default()
        };
        let language = Language::of_category(&category.name);
        let answers = category
            .answers
            .map(|text| read_answers(text, &mut report.malformed_answer_lines));
        let library = func_doc::library(&category.func_docs, category.func_doc_dir.clone());
        for (line_number, line) in category.tasks.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            report.tasks += 1;
            summary.tasks += 1;
            let fallback_id = format!("{} line {}", category.name, line_number + 1);
            let mut task = TaskRun {
                id: fallback_id,
                report: &mut report,
                shape: None,
                bind_time: None,
                turn_time: Duration::ZERO,
            };
            let result = task
                .run(line, &category.name, language, answers.as_ref(), &library)
                .await;
            let (id, shape) = (task.id, task.shape);
            bind_times.extend(task.bind_time);
            turn_time += task.turn_time;
            *summary
                .shapes
                .entry(shape.unwrap_or(Shape::Unknown))
                .or_default() += 1;
            match result {
                Ok(()) => {
                    report.tasks_passed += 1;
                    summary.passed += 1;
                }
                Err((reason, detail)) => {
                    report.tasks_failed += 1;
                    summary.failed += 1;
                    *report.failures_by_reason.entry(reason).or_default() += 1;
                    report.failures.push(Failure { id, reason, detail });
                }
            }
        }
        report.categories.push(summary);
    }
    report.validate_bind = timing(&mut bind_times);
    report.calls_per_second = if turn_time.is_zero() {
        0.0
    } else {
        report.calls_executed as f64 / turn_time.as_secs_f64()
    };
    report.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    report
}

type TaskResult = Result<(), (Reason, String)>;

/// One task being replayed; counts go straight into the report.
struct TaskRun<'r> {
    id: String,
    report: &'r mut Report,
    /// Known once the line is read.
    shape: Option<Shape>,
    bind_time: Option<Duration>,
    turn_time: Duration,
}

impl TaskRun<'_> {
    async fn run(
        &mut self,
        line: &str,
        category: &str,
        language: Language,
        answers: Option<&HashMap<String, Value>>,
        library: &func_doc::Library,
    ) -> TaskResult {
        let task: Value = serde_json::from_str(line)
            .map_err(|error| (Reason::MalformedLine, format!("not JSON: {error}")))?;
        if let Some(id) = task.get("id").and_then(Value::as_str) {
            self.id = id.to_owned();
        } else {
            return Err((Reason::MalformedLine, "no string `id`".into()));
        }
        let ground_truth = |id: &str| match answers {
            None => Ok(None),
            Some(answers) => answers.get(id).map(Some).ok_or_else(|| {
                (
                    Reason::NoGroundTruth,
                    "the answers file has no line for this id".to_owned(),
                )
            }),
        };
        match (task.get("function"), task.get("involved_classes")) {
            (Some(Value::Array(functions)), _) => {
                self.shape = Some(Shape::SingleTurn(language));
                let ground_truth = ground_truth(&self.id)?;
                if ground_truth.is_none() && is_relevance(category) {
                    return Err((
                        Reason::NotReplayable,
                        "relevance task: BFCL counts any call to a declared function as \
                         right and gives no ground-truth call to replay"
                            .into(),
                    ));
                }
                self.single_turn(&task, functions, language, ground_truth)
                    .await
            }
            (Some(_), _) => Err((Reason::MalformedLine, "`function` is not an array".into())),
            (None, Some(_)) if is_agentic(category) => {
                self.shape = Some(Shape::Agentic);
                let answer = ground_truth(&self.id)?
                    .and_then(|answers| answers.get(0))
                    .map(|answer| format!(" (`{answer}`)"))
                    .unwrap_or_default();
                Err((
                    Reason::NotReplayable,
                    format!(
                        "agentic task: the ground truth is the final answer{answer}, not \
                         tool calls, and the calls depend on a live backend"
                    ),
                ))
            }
            (None, Some(classes)) => {
                self.shape = Some(Shape::MultiTurn);
                let ground_truth = ground_truth(&self.id)?;
                self.multi_turn(&task, classes, ground_truth, library).await
            }
            (None, None) => {
                let keys: Vec<&str> = task
                    .as_object()
                    .map(|task| task.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                Err((
                    Reason::UnknownShape,
                    format!(
                        "neither a `function` array (single-turn) nor `involved_classes` \
                         (multi-turn); keys: {}",
                        keys.join(", ")
                    ),
                ))
            }
        }
    }

    /// A `function` array and one batch of calls.
    async fn single_turn(
        &mut self,
        task: &Value,
        functions: &[Value],
        language: Language,
        ground_truth: Option<&Value>,
    ) -> TaskResult {
        self.report.declarations += functions.len();
        let declared = self.declare(functions, language)?;

        // Read the answer before binding: a task whose answer is unusable
        // is the data's fault, whatever bind says.
        let expected = match ground_truth {
            None => Vec::new(),
            Some(ground_truth) => expected_calls(ground_truth, &declared, language)
                .map_err(|detail| (Reason::MalformedGroundTruth, detail))?,
        };

        let received: Received = Arc::default();
        let tools = echo_tools(declared.infos, &received);
        // The whole ground truth is one batch: exactly one iteration, as many
        // calls as it has, all of them at once.
        let batch = u32::try_from(expected.len()).unwrap_or(u32::MAX).max(1);
        let validate_started = Instant::now();
        let definition = Definition::builder()
            .name(format!("bfcl-{}", self.id))
            .tools(tools)
            .tool_limits(ToolLimits::new().iterations(1).calls(batch).parallel(batch))
            .build()
            .validate();
        let session = self.bind(validate_started, definition).await?;

        let model = OpenAiReplayModel::new(&self.id, &expected, Batching::OneBatch);
        let mut conversation = vec![Message::user(question(task))];
        let turn_started = Instant::now();
        let outcome = session
            .run_turn(&model, &mut conversation, &CancellationToken::new())
            .await;
        self.turn_time = turn_started.elapsed();
        let outcome = outcome.map_err(|error| (Reason::TurnFailed, error_chain(&error)))?;

        self.report.calls_expected += expected.len();
        self.check_calls(
            outcome.messages(&conversation),
            &outcome.stats,
            &expected,
            &received,
        )?;
        match &outcome.status {
            TurnStatus::Completed { answer } if answer == FINAL_ANSWER => Ok(()),
            status => Err((Reason::AnswerDiffers, format!("turn ended with {status:?}"))),
        }
    }

    /// Declarations → `ToolInfo`s, counted into the report.
    fn declare(
        &mut self,
        functions: &[Value],
        language: Language,
    ) -> Result<normalize::Declarations, (Reason, String)> {
        let declared = normalize::declarations(
            functions,
            language,
            NameRules::OpenAi,
            &mut self.report.schema_rewrites,
        )
        .map_err(|error| match error {
            normalize::DeclarationError::Malformed(detail) => {
                (Reason::MalformedDeclaration, detail)
            }
            normalize::DeclarationError::NameCollision(detail) => (Reason::NameCollision, detail),
        })?;
        self.report.names_sanitised += declared.names_sanitised;
        Ok(declared)
    }

    /// Binds a validated definition to a fresh session, counting bind
    /// errors by kind; validate + bind time runs from `validate_started`.
    async fn bind(
        &mut self,
        validate_started: Instant,
        definition: Result<Definition<Validated>, agent_loop::DefinitionError>,
    ) -> Result<Definition<Bound>, (Reason, String)> {
        let definition =
            definition.map_err(|error| (Reason::DefinitionInvalid, error.to_string()))?;
        match definition
            .bind(Bindings::new(SessionId::new(), LoopId::new()))
            .await
        {
            Ok(session) => {
                self.bind_time = Some(validate_started.elapsed());
                Ok(session)
            }
            Err(error) => {
                *self
                    .report
                    .bind_errors
                    .entry(format!("{:?}", error.kind))
                    .or_default() += 1;
                Err((Reason::BindFailed, error_chain(&error)))
            }
        }
    }

    /// Every expected call ran, passed the schema and reached its tool with
    /// the ground-truth arguments. Counts calls into the report; the first
    /// problem (refusals first) is the task's reason.
    fn check_calls(
        &mut self,
        messages: &[Message],
        stats: &TurnStats,
        expected: &[ExpectedCall],
        received: &Received,
    ) -> TaskResult {
        let results: HashMap<&str, String> = messages
            .iter()
            .filter_map(Message::as_tool_result)
            .map(|result| (result.tool_call_id.as_str(), result.text()))
            .collect();
        let calls: Vec<_> = stats.iterations.iter().flat_map(|i| &i.calls).collect();
        self.report.calls_executed += calls.len();
        let mut first_problem: Option<(Reason, String)> = None;
        let mut note = |problem: (Reason, String)| {
            if first_problem.as_ref().is_none_or(|(reason, _)| {
                problem.0 == Reason::CallRefusedBySchema && *reason != Reason::CallRefusedBySchema
            }) {
                first_problem = Some(problem);
            }
        };
        for call in &calls {
            let message = results
                .get(call.tool_call_id.as_str())
                .map_or("", String::as_str);
            match call.error {
                None => self.report.calls_succeeded += 1,
                Some(ToolCallErrorKind::InvalidArguments) => {
                    self.report.calls_refused_by_schema += 1;
                    if self.report.first_refusals.len() < QUOTED_REFUSALS {
                        self.report
                            .first_refusals
                            .push(format!("{}: {message}", self.id));
                    }
                    note((Reason::CallRefusedBySchema, message.to_owned()));
                }
                Some(kind) => note((Reason::CallFailed, format!("{kind:?}: {message}"))),
            }
        }
        if calls.len() != expected.len() {
            note((
                Reason::ArgumentsDiffer,
                format!(
                    "{} calls expected, {} executed",
                    expected.len(),
                    calls.len()
                ),
            ));
        }
        let received = lock(received);
        for call in expected {
            let id = &call.id;
            let expected_arguments = Value::Object(call.arguments.clone());
            match received.get(id) {
                // Refused calls are reported above; nothing reached the tool.
                None if calls
                    .iter()
                    .any(|c| c.tool_call_id == *id && c.error.is_some()) => {}
                None => note((
                    Reason::ArgumentsDiffer,
                    format!("call {id} to `{}` never reached a tool", call.tool_name),
                )),
                Some((name, _)) if *name != call.tool_name => note((
                    Reason::ArgumentsDiffer,
                    format!("call {id} reached `{name}`, not `{}`", call.tool_name),
                )),
                Some((_, arguments)) if !json_equal(arguments, &expected_arguments) => note((
                    Reason::ArgumentsDiffer,
                    format!(
                        "call {id}: tool got {arguments}, ground truth is {expected_arguments}"
                    ),
                )),
                Some(_) => {}
            }
        }
        first_problem.map_or(Ok(()), Err)
    }
}

/// Whether `category` is a relevance one, as BFCL tells
/// (`is_relevance_or_irrelevance`, then `irrelevance` first): its tasks
/// are right when the model makes at least one call, whatever it is, the
/// opposite of `irrelevance`, where no call is right.
pub fn is_relevance(category: &str) -> bool {
    category.contains("relevance") && !category.contains("irrelevance")
}

/// Whether `category` is agentic, as BFCL tells (`is_agentic`: `memory`
/// or `web_search` in the name).
fn is_agentic(category: &str) -> bool {
    category.contains("memory") || category.contains("web_search")
}

/// Arguments that reached the tools, by tool call id: (tool name, arguments).
type Received = Arc<Mutex<HashMap<String, (String, Value)>>>;

/// One echo tool per declaration; each records what reached it in
/// `received` and returns its arguments.
fn echo_tools(infos: Vec<ToolInfo>, received: &Received) -> Vec<tool::Definition> {
    infos
        .into_iter()
        .map(|info| {
            let received = Arc::clone(received);
            tool::Definition::from_fn(info, move |arguments: Value, context: CallContext| {
                lock(&received).insert(
                    context.tool_call_id().to_owned(),
                    (context.tool_name().to_owned(), arguments.clone()),
                );
                async move { Ok::<_, BoxError>(arguments) }
            })
        })
        .collect()
}

/// Locks `mutex` even if a tool panicked while holding it: the map stays
/// consistent (one insert per call).
pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `error` and its sources, `: `-separated, for a failure detail.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(next) = source {
        text.push_str(": ");
        text.push_str(&next.to_string());
        source = next.source();
    }
    text
}

/// The user's words: the user messages of the task's first turn. A task
/// without them still replays (the question does not change what is
/// checked).
fn question(task: &Value) -> String {
    let text: Vec<&str> = task
        .get("question")
        .and_then(|turns| turns.get(0))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|message| message.get("role").and_then(Value::as_str) == Some("user"))
        .filter_map(|message| message.get("content").and_then(Value::as_str))
        .collect();
    if text.is_empty() {
        "(no user message)".to_owned()
    } else {
        text.join("\n")
    }
}
