//! The BFCL replay: every task of a category through the whole library
//! (declarations → `ToolInfo` → validate → bind → one turn driven by an
//! OpenAI-format model → checked tool calls), into a [`Report`].
//!
//! Shared by `examples/bfcl/main.rs` and `tests/bfcl_replay.rs`, which
//! includes this file with `#[path]`. Nothing here panics on input: a line
//! that is not a task, a declaration that cannot be a tool, an answer that
//! does not fit its task are task failures with their reason.

// Loaded with `#[path]` by both crates, so `normalize.rs` resolves beside
// this file.
mod normalize;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_loop::bind::{Bindings, LoopId, SessionId, ToolCallErrorKind};
use agent_loop::tool::{self, BoxError, CallContext, NameRules};
use agent_loop::turn::{Message, Model, ModelRequest, ModelResponse, TurnStatus};
use agent_loop::wire::openai;
use agent_loop::{Definition, ToolLimits};
use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

pub use normalize::Rewrites;

/// The final answer the model gives after its batch (or at once for tasks
/// without ground truth).
const FINAL_ANSWER: &str = "Done: every requested call was made.";

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

/// Why a task failed; the report counts failures by this.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The line is not a JSON task object with an `id` and a `function` array.
    MalformedLine,
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
    /// The ground truth is not a list of `{tool: {param: [values]}}`, or
    /// calls a tool the task does not declare.
    MalformedGroundTruth,
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
            Reason::MalformedDeclaration => "malformed declaration",
            Reason::NameCollision => "name collision after sanitising",
            Reason::DefinitionInvalid => "definition invalid",
            Reason::BindFailed => "bind failed",
            Reason::NoGroundTruth => "no ground truth",
            Reason::MalformedGroundTruth => "malformed ground truth",
            Reason::TurnFailed => "turn failed",
            Reason::CallRefusedBySchema => "call refused by schema validation",
            Reason::CallFailed => "call failed",
            Reason::ArgumentsDiffer => "arguments differ",
            Reason::AnswerDiffers => "answer differs",
        }
    }
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
    /// The categories replayed, in order.
    pub categories: Vec<String>,
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
    /// Tool calls the ground truth asks for, in tasks that reached a turn.
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

/// Ground truth by task id. A malformed line is counted and skipped: its
/// task then fails with [`Reason::NoGroundTruth`].
fn read_answers(text: &str, malformed: &mut usize) -> HashMap<String, Value> {
    let mut answers = HashMap::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let parsed: Option<(String, Value)> =
            serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|mut value| {
                    let id = value.get("id")?.as_str()?.to_owned();
                    Some((id, value.get_mut("ground_truth")?.take()))
                });
        match parsed {
            Some((id, ground_truth)) => {
                answers.insert(id, ground_truth);
            }
            None => *malformed += 1,
        }
    }
    answers
}

/// Nearest-rank median and p99 of `samples`.
fn timing(samples: &mut [Duration]) -> Timing {
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

type TaskResult = Result<(), (Reason, String)>;

/// One call the ground truth asks for.
#[derive(Debug)]
struct ExpectedCall {
    /// Model-facing (sanitised) tool name.
    tool_name: String,
    /// The first accepted value of each parameter that may not be omitted.
    arguments: Map<String, Value>,
}

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
            .tool_limits(ToolLimits {
                iterations: 1,
                calls: batch,
                parallel: batch,
                ..Default::default()
            })
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
        stats: &agent_loop::turn::TurnStats,
        expected: &[ExpectedCall],
        received: &Received,
    ) -> TaskResult {
        let results: HashMap<&str, &str> = messages
            .iter()
            .filter_map(|message| match message {
                Message::Tool(result) => {
                    Some((result.tool_call_id.as_str(), result.content.as_str()))
                }
                _ => None,
            })
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
                .copied()
                .unwrap_or("");
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
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

/// The calls of a ground truth, with model-facing names and the first
/// accepted value of each parameter ([`first_accepted`]). A parameter whose accepted values
/// include `""` may be omitted, so it is (the call then also shows that
/// omission is accepted by the schema). A parameter with no accepted value
/// at all (`[]`, a data bug seen in `live_simple`) is left out too.
fn expected_calls(
    ground_truth: &Value,
    model_names: &HashMap<String, String>,
) -> Result<Vec<ExpectedCall>, String> {
    let calls = ground_truth
        .as_array()
        .ok_or("`ground_truth` is not a list")?;
    let mut expected = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let call = call
            .as_object()
            .filter(|call| call.len() == 1)
            .ok_or_else(|| format!("call {index} is not `{{tool: {{param: [values]}}}}`"))?;
        let Some((original, parameters)) = call.iter().next() else {
            continue;
        };
        let tool_name = model_names.get(original).ok_or_else(|| {
            format!("call {index} is to `{original}`, which the task does not declare")
        })?;
        let parameters = parameters
            .as_object()
            .ok_or_else(|| format!("call {index}: parameters of `{original}` are not an object"))?;
        if let Some((name, _)) = parameters.iter().find(|(_, accepted)| !accepted.is_array()) {
            return Err(format!(
                "call {index}: accepted values of `{original}.{name}` are not a list"
            ));
        }
        let arguments = first_accepted_of_each(parameters);
        expected.push(ExpectedCall {
            tool_name: tool_name.clone(),
            arguments,
        });
    }
    Ok(expected)
}

/// `{param: [accepted values]}` → `{param: first accepted value}`, leaving
/// out parameters whose accepted values include `""` or are empty.
fn first_accepted_of_each(parameters: &Map<String, Value>) -> Map<String, Value> {
    let mut arguments = Map::new();
    for (name, accepted) in parameters {
        let Some(accepted) = accepted.as_array() else {
            continue;
        };
        if accepted.iter().any(|value| value == "") {
            continue;
        }
        if let Some(first) = accepted.first() {
            arguments.insert(name.clone(), first_accepted(first));
        }
    }
    arguments
}

/// One accepted value, with the accepted values nested in it resolved.
///
/// BFCL writes a dict-typed value the way it writes a call's parameters:
/// `{"email": ["a@b.c"], "name": ["John"]}`, each field a list of accepted
/// values, at any depth and inside lists (`[[{"field": ["age"]}]]`). Taken
/// literally, the tool would get lists where the schema wants strings (and
/// 9 embedded tasks failed so). So an object whose values are all lists is
/// such a map and gets the first accepted value of each field; any other
/// object is a literal (one answer in `live_multiple` writes
/// `{"lateral": 10.5, "longitudinal": 50}` so).
fn first_accepted(value: &Value) -> Value {
    match value {
        Value::Object(map) if !map.is_empty() && map.values().all(Value::is_array) => {
            Value::Object(first_accepted_of_each(map))
        }
        Value::Array(items) => Value::Array(items.iter().map(first_accepted).collect()),
        other => other.clone(),
    }
}

/// The tool call id of the `index`-th call of the batch.
fn call_id(index: usize) -> String {
    format!("call_bfcl_{index}")
}

/// JSON equality where numbers compare by value: `5` equals `5.0`.
///
/// JSON itself does not tell `5` from `5.0`, and a provider's model may
/// write either; serde_json keeps them apart (`Value::from(5) !=
/// Value::from(5.0)`). The replay sends the ground truth's own text, so
/// strict equality would hold today; comparing by value keeps the check
/// about *arguments*, not number formatting, should the arguments ever be
/// re-encoded on the way (a middleware, another wire format).
pub fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => {
            match (left.as_i64(), right.as_i64(), left.as_u64(), right.as_u64()) {
                (Some(left), Some(right), _, _) => left == right,
                (_, _, Some(left), Some(right)) => left == right,
                _ => left.as_f64() == right.as_f64(),
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len() && left.iter().zip(right).all(|(l, r)| json_equal(l, r))
        }
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .all(|(key, l)| right.get(key).is_some_and(|r| json_equal(l, r)))
        }
        (left, right) => left == right,
    }
}

/// A model that answers in the OpenAI Chat Completions wire format: it
/// holds real `chat.completion` response bodies (the ground truth as one
/// batch of `tool_calls`, then a final answer) and hands each to
/// [`openai::parse_response`], as a client of the API would.
pub struct OpenAiReplayModel {
    bodies: Mutex<VecDeque<Value>>,
}

impl OpenAiReplayModel {
    fn new(task_id: &str, expected: &[ExpectedCall]) -> Self {
        let mut bodies = VecDeque::with_capacity(2);
        if !expected.is_empty() {
            let tool_calls: Vec<Value> = expected
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    json!({
                        "id": call_id(index),
                        "type": "function",
                        "function": {
                            "name": call.tool_name,
                            // A JSON *string*, as the API sends it.
                            "arguments": Value::Object(call.arguments.clone()).to_string(),
                        }
                    })
                })
                .collect();
            bodies.push_back(completion(
                task_id,
                1,
                json!({ "role": "assistant", "content": null, "tool_calls": tool_calls }),
                "tool_calls",
            ));
        }
        bodies.push_back(completion(
            task_id,
            2,
            json!({ "role": "assistant", "content": FINAL_ANSWER }),
            "stop",
        ));
        Self {
            bodies: Mutex::new(bodies),
        }
    }
}

/// A `chat.completion` body as the API reference shows it. The timestamp
/// and token counts are fixed: the replay must be deterministic.
fn completion(task_id: &str, turn: u32, message: Value, finish_reason: &str) -> Value {
    json!({
        "id": format!("chatcmpl-{task_id}-{turn}"),
        "object": "chat.completion",
        "created": 1_741_570_283,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": { "prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160 },
        "system_fingerprint": "fp_bfcl_replay",
    })
}

#[async_trait]
impl Model for OpenAiReplayModel {
    async fn respond(&self, _request: ModelRequest<'_>) -> Result<ModelResponse, BoxError> {
        let body = lock(&self.bodies)
            .pop_front()
            .ok_or("the replay model has no response left")?;
        let message = openai::parse_response(&body)?;
        ModelResponse::from_message(message)
            .ok_or_else(|| "the response is not an assistant message".into())
    }
}

/// The report as text, one fact per line; every failed task is listed.
pub fn render_text(report: &Report) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("BFCL replay: {}", report.categories.join(", ")));
    line(format!(
        "tasks                     {} ({} passed, {} failed)",
        report.tasks, report.tasks_passed, report.tasks_failed
    ));
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
    line(format!(
        "elapsed                   {} ms",
        report.elapsed_ms
    ));
    if !report.first_refusals.is_empty() {
        line("first schema refusals:".into());
        for refusal in &report.first_refusals {
            line(format!("  {refusal}"));
        }
    }
    if !report.failures.is_empty() {
        line(format!(
            "failures by reason:       {}",
            join_counts(
                report
                    .failures_by_reason
                    .iter()
                    .map(|(reason, count)| (reason.label(), *count))
            )
        ));
        line("failed tasks:".into());
        for failure in &report.failures {
            let mut text = String::new();
            let _ = write!(
                text,
                "  {}: {}: {}",
                failure.id,
                failure.reason.label(),
                failure.detail
            );
            line(text);
        }
    }
    out
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
