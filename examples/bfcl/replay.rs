//! The BFCL replay: every task of a category through the whole library
//! (declarations → `ToolInfo` → validate → bind → one turn driven by an
//! OpenAI-format model → checked tool calls), into a [`Report`].
//!
//! Shared by `examples/bfcl/main.rs` and `tests/it/bfcl_replay.rs`, which
//! includes this file with `#[path]`. Nothing here panics on input: a line
//! that is not a task, a declaration that cannot be a tool, an answer that
//! does not fit its task are task failures with their reason.

// Loaded with `#[path]` by both crates, so `normalize.rs` resolves beside
// this file.
mod answers;
mod model;
mod normalize;
mod report;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_loop::bind::{Bindings, ToolCallErrorKind};
use agent_loop::conversation::Message;
use agent_loop::session::{LoopId, SessionId};
use agent_loop::tool::{self, BoxError, CallContext, NameRules};
use agent_loop::turn::{TurnStats, TurnStatus};
use agent_loop::{Definition, ToolLimits};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use answers::json_equal;
pub use report::{Failure, Reason, Report, render_text};

use answers::{ExpectedCall, call_id, expected_calls, read_answers};
use model::OpenAiReplayModel;
use report::timing;

/// The final answer the model gives after its batch (or at once for tasks
/// without ground truth).
pub(super) const FINAL_ANSWER: &str = "Done: every requested call was made.";

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
}

/// The embedded default: the four categories copied under
/// `tests/fixtures/bfcl/`, with their answers.
pub fn embedded() -> Vec<Category<'static>> {
    macro_rules! category {
        ($name:literal) => {
            Category {
                name: $name.into(),
                tasks: include_str!(concat!(
                    "../../tests/fixtures/bfcl/BFCL_v4_",
                    $name,
                    ".json"
                )),
                answers: Some(include_str!(concat!(
                    "../../tests/fixtures/bfcl/possible_answer/BFCL_v4_",
                    $name,
                    ".json"
                ))),
            }
        };
    }
    vec![
        category!("parallel"),
        category!("parallel_multiple"),
        category!("multiple"),
        category!("simple_python"),
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
        report.categories.push(match category.answers {
            Some(_) => category.name.clone(),
            None => format!("{} (no answers: no tool call expected)", category.name),
        });
        let answers = category
            .answers
            .map(|text| read_answers(text, &mut report.malformed_answer_lines));
        for (line_number, line) in category.tasks.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            report.tasks += 1;
            let fallback_id = format!("{} line {}", category.name, line_number + 1);
            let mut task = TaskRun {
                id: fallback_id,
                report: &mut report,
                bind_time: None,
                turn_time: Duration::ZERO,
            };
            let result = task.run(line, answers.as_ref()).await;
            let (id, bind_time, this_turn) = (task.id, task.bind_time, task.turn_time);
            bind_times.extend(bind_time);
            turn_time += this_turn;
            match result {
                Ok(()) => report.tasks_passed += 1,
                Err((reason, detail)) => {
                    report.tasks_failed += 1;
                    *report.failures_by_reason.entry(reason).or_default() += 1;
                    report.failures.push(Failure { id, reason, detail });
                }
            }
        }
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
    bind_time: Option<Duration>,
    turn_time: Duration,
}

impl TaskRun<'_> {
    async fn run(&mut self, line: &str, answers: Option<&HashMap<String, Value>>) -> TaskResult {
        let task: Value = serde_json::from_str(line)
            .map_err(|error| (Reason::MalformedLine, format!("not JSON: {error}")))?;
        if let Some(id) = task.get("id").and_then(Value::as_str) {
            self.id = id.to_owned();
        } else {
            return Err((Reason::MalformedLine, "no string `id`".into()));
        }
        let Some(functions) = task.get("function").and_then(Value::as_array) else {
            return Err((Reason::MalformedLine, "no `function` array".into()));
        };
        self.report.declarations += functions.len();

        let declared = normalize::declarations(
            functions,
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

        // Read the answer before binding: a task whose answer is unusable
        // is the data's fault, whatever bind says.
        let expected = match answers {
            None => Vec::new(),
            Some(answers) => {
                let ground_truth = answers.get(&self.id).ok_or_else(|| {
                    (
                        Reason::NoGroundTruth,
                        "the answers file has no line for this id".to_owned(),
                    )
                })?;
                expected_calls(ground_truth, &declared.model_names)
                    .map_err(|detail| (Reason::MalformedGroundTruth, detail))?
            }
        };

        // One echo tool per declaration; each records what reached it.
        let received: Received = Arc::default();
        let tools = declared.infos.into_iter().map(|info| {
            let received = Arc::clone(&received);
            tool::Definition::from_fn(info, move |arguments: Value, context: CallContext| {
                lock(&received).insert(
                    context.tool_call_id.to_string(),
                    (context.tool_name.to_string(), arguments.clone()),
                );
                async move { Ok::<_, BoxError>(arguments) }
            })
        });
        // The whole ground truth is one batch: exactly one iteration, as many
        // calls as it has, all of them at once.
        let batch = u32::try_from(expected.len()).unwrap_or(u32::MAX).max(1);
        let bind_started = Instant::now();
        let definition = Definition::builder()
            .name(format!("bfcl-{}", self.id))
            .tools(tools)
            .tool_limits(ToolLimits::new().iterations(1).calls(batch).parallel(batch))
            .build()
            .validate()
            .map_err(|error| (Reason::DefinitionInvalid, error.to_string()))?;
        let session = match definition
            .bind(Bindings::new(SessionId::new(), LoopId::new()))
            .await
        {
            Ok(session) => session,
            Err(error) => {
                *self
                    .report
                    .bind_errors
                    .entry(format!("{:?}", error.kind))
                    .or_default() += 1;
                return Err((Reason::BindFailed, error_chain(&error)));
            }
        };
        self.bind_time = Some(bind_started.elapsed());

        let model = OpenAiReplayModel::new(&self.id, &expected);
        let mut conversation = vec![Message::user(question(&task))];
        let turn_started = Instant::now();
        let outcome = session
            .run_turn(&model, &mut conversation, &CancellationToken::new())
            .await;
        self.turn_time = turn_started.elapsed();
        let outcome = outcome.map_err(|error| (Reason::TurnFailed, error_chain(&error)))?;

        self.report.calls_expected += expected.len();
        self.check_calls(&outcome.messages, &outcome.stats, &expected, &received)?;
        match &outcome.status {
            TurnStatus::Completed { answer } if answer == FINAL_ANSWER => Ok(()),
            status => Err((Reason::AnswerDiffers, format!("turn ended with {status:?}"))),
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
        for (index, call) in expected.iter().enumerate() {
            let id = call_id(index);
            let expected_arguments = Value::Object(call.arguments.clone());
            match received.get(&id) {
                // Refused calls are reported above; nothing reached the tool.
                None if calls
                    .iter()
                    .any(|c| c.tool_call_id == id && c.error.is_some()) => {}
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

/// Arguments that reached the tools, by tool call id: (tool name, arguments).
type Received = Arc<Mutex<HashMap<String, (String, Value)>>>;

/// Locks `mutex` even if a tool panicked while holding it: the map stays
/// consistent (one insert per call).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
