//! Multi-turn tasks: one conversation, one `run_turn` per user turn.
//!
//! A task names its classes (`involved_classes`); their declarations come
//! from the function docs ([`super::func_doc`]), less `excluded_function`.
//! A function in `missed_function` (`{"<turn index>": ["name", ...]}`) is
//! withheld until that turn, whose user message is empty: BFCL's harness
//! then adds the function and says so to the model. Here that is modes:
//! the conversation starts in mode [`START`] (the base tools), and each
//! turn that adds functions has a mode holding the base tools plus every
//! function added so far; the replay switches to it before the turn, and
//! the model fails any request that offers a function before its turn.
//!
//! The ground truth is, per turn, a list of Python call strings
//! ([`super::call_string`]); the model asks for them one per response, in
//! order (they depend on each other: `cd` then `ls` there), then answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use agent_loop::conversation::Message;
use agent_loop::turn::TurnStatus;
use agent_loop::{Definition, Mode, ToolLimits};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::answers::{ExpectedCall, TurnCallError, turn_calls};
use super::func_doc::{self, FuncDoc};
use super::model::{Batching, OpenAiReplayModel};
use super::normalize::Language;
use super::{FINAL_ANSWER, Reason, Received, TaskResult, TaskRun, echo_tools, error_chain};

/// What BFCL's harness tells the model at a turn that adds functions
/// (`bfcl-eval`, `constants/default_prompts.py`,
/// `DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC`).
pub(super) const FUNCTIONS_ADDED: &str =
    "I have updated some more functions you can choose from. What about now?";

/// The initial mode: the base tools (a definition with modes starts in a
/// named one).
const START: &str = "start";

/// The mode that holds the functions added up to turn `turn`.
fn mode_name(turn: usize) -> String {
    format!("turn-{turn}")
}

impl TaskRun<'_> {
    pub(super) async fn multi_turn(
        &mut self,
        task: &Value,
        classes: &Value,
        ground_truth: Option<&Value>,
        library: &func_doc::Library,
    ) -> TaskResult {
        let malformed = |detail: String| (Reason::MalformedLine, detail);
        let docs = class_docs(classes, library)?;
        let excluded = names(task.get("excluded_function"))
            .ok_or_else(|| malformed("`excluded_function` is not a list of names".into()))?;
        let withheld = withheld(task.get("missed_function")).map_err(malformed)?;
        let turns = task
            .get("question")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("`question` is not a list of turns".into()))?;

        // Every function of the classes but the excluded ones; withheld
        // ones are declared with the rest, so names are checked together.
        let docs: Vec<&FuncDoc> = docs
            .into_iter()
            .filter(|doc| !excluded.contains(&doc.name))
            .collect();
        let mut added_at: HashMap<&str, usize> = HashMap::new();
        for (turn, names) in &withheld {
            if let Some(unknown) = names
                .iter()
                .find(|name| !docs.iter().any(|d| d.name == **name))
            {
                return Err(malformed(format!(
                    "`missed_function` of turn {turn} names `{unknown}`, not among the task's \
                     functions (those of its classes, less `excluded_function`)"
                )));
            }
            // A function joins once: added again later, it would be
            // offered before that turn too, and no turn could say when.
            for name in names {
                if let Some(first) = added_at.insert(name, *turn) {
                    return Err(malformed(format!(
                        "`missed_function` adds `{name}` at turn {first} and again at turn {turn}"
                    )));
                }
            }
            if *turn >= turns.len() {
                return Err(malformed(format!(
                    "`missed_function` names turn {turn}, but the task has {} turns",
                    turns.len()
                )));
            }
        }
        let declarations: Vec<Value> = docs.iter().map(|doc| doc.declaration.clone()).collect();
        self.report.declarations += declarations.len();
        let declared = self.declare(&declarations, Language::Python)?;
        let parameter_order: HashMap<String, Vec<String>> = docs
            .iter()
            .map(|doc| (doc.name.clone(), doc.parameter_order.clone()))
            .collect();

        // The ground truth before binding, as for single-turn tasks.
        let expected = match ground_truth {
            None => (0..turns.len()).map(|_| Vec::new()).collect(),
            Some(ground_truth) => expected_turns(
                ground_truth,
                turns.len(),
                &declared.model_names,
                &parameter_order,
            )?,
        };

        // Tools: the base set, and one mode per turn that adds functions.
        let received: Received = Arc::default();
        let model_name = |name: &String| declared.model_names.get(name).cloned();
        let withheld_tools: BTreeMap<usize, Vec<String>> = withheld
            .iter()
            .map(|(turn, names)| (*turn, names.iter().filter_map(model_name).collect()))
            .collect();
        let is_withheld = |name: &str| withheld_tools.values().flatten().any(|n| n == name);
        let tools = echo_tools(declared.infos, &received);
        let (held, base): (Vec<_>, Vec<_>) =
            tools.into_iter().partition(|tool| is_withheld(tool.name()));
        let mut modes = Vec::with_capacity(withheld_tools.len() + 1);
        modes.push(Mode::new(START));
        let mut offered = base.clone();
        for (turn, names) in &withheld_tools {
            offered.extend(
                held.iter()
                    .filter(|tool| names.iter().any(|n| n == tool.name()))
                    .cloned(),
            );
            modes.push(Mode::new(mode_name(*turn)).tools(offered.clone()));
        }
        let most_calls = expected.iter().map(Vec::len).max().unwrap_or(0);
        let most_calls = u32::try_from(most_calls).unwrap_or(u32::MAX).max(1);
        let validate_started = Instant::now();
        let definition = Definition::builder()
            .name(format!("bfcl-{}", self.id))
            .tools(base)
            .modes(modes)
            .initial_mode(START)
            // One call per iteration; the longest turn sets the limits.
            .tool_limits(
                ToolLimits::new()
                    .iterations(most_calls)
                    .calls(most_calls)
                    .parallel(1),
            )
            .build()
            .validate();
        let mut session = self.bind(validate_started, definition).await?;

        let mut conversation: Vec<Message> = Vec::new();
        for (turn, (messages, expected)) in turns.iter().zip(&expected).enumerate() {
            let at_turn = |detail: String| format!("turn {turn}: {detail}");
            if withheld_tools.contains_key(&turn) {
                session
                    .set_current_mode(Some(&mode_name(turn)))
                    .map_err(|error| (Reason::TurnFailed, at_turn(error.to_string())))?;
            }
            let before = conversation.len();
            conversation.extend(user_messages(messages));
            if conversation.len() == before {
                conversation.push(Message::user(if withheld_tools.contains_key(&turn) {
                    FUNCTIONS_ADDED
                } else {
                    "(no user message)"
                }));
            }
            let not_yet: Vec<String> = withheld_tools
                .range(turn + 1..)
                .flat_map(|(_, names)| names.iter().cloned())
                .collect();
            let model = OpenAiReplayModel::new(
                &format!("{}-t{turn}", self.id),
                expected,
                Batching::OneCallPerResponse,
            )
            .not_yet_offered(not_yet);
            let turn_started = Instant::now();
            let outcome = session
                .run_turn(&model, &mut conversation, &CancellationToken::new())
                .await;
            self.turn_time += turn_started.elapsed();
            let outcome =
                outcome.map_err(|error| (Reason::TurnFailed, at_turn(error_chain(&error))))?;
            self.report.calls_expected += expected.len();
            self.check_calls(
                outcome.messages(&conversation),
                &outcome.stats,
                expected,
                &received,
            )
            .map_err(|(reason, detail)| (reason, at_turn(detail)))?;
            match &outcome.status {
                TurnStatus::Completed { answer } if answer == FINAL_ANSWER => {}
                status => {
                    return Err((
                        Reason::AnswerDiffers,
                        at_turn(format!("ended with {status:?}")),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The function docs of `classes`, in order, through BFCL's class table.
fn class_docs<'l>(
    classes: &Value,
    library: &'l func_doc::Library,
) -> Result<Vec<&'l FuncDoc>, (Reason, String)> {
    let classes = names(Some(classes)).ok_or_else(|| {
        (
            Reason::MalformedLine,
            "`involved_classes` is not a list of class names".to_owned(),
        )
    })?;
    let mut docs = Vec::new();
    for class in &classes {
        let Some(file) = func_doc::file_of(class) else {
            return Err((
                Reason::NoFunctionDocs,
                format!("class `{class}` is not in BFCL's class table"),
            ));
        };
        match library.get(file) {
            None => {
                return Err((
                    Reason::NoFunctionDocs,
                    match &library.folder {
                        Some(folder) => format!("no `{file}` (class `{class}`) in {folder}"),
                        None => format!("no `{file}` (class `{class}`) among the function docs"),
                    },
                ));
            }
            Some(Err(error)) => {
                return Err((Reason::NoFunctionDocs, format!("`{file}`: {error}")));
            }
            Some(Ok(class_docs)) => docs.extend(class_docs),
        }
    }
    Ok(docs)
}

/// A list of strings; an absent key is an empty list.
fn names(value: Option<&Value>) -> Option<Vec<String>> {
    match value {
        None => Some(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect(),
        Some(_) => None,
    }
}

/// `missed_function`: turn index (a string key, as JSON writes it) →
/// the function names that turn adds.
fn withheld(value: Option<&Value>) -> Result<BTreeMap<usize, Vec<String>>, String> {
    let Some(value) = value else {
        return Ok(BTreeMap::new());
    };
    let map = value
        .as_object()
        .ok_or("`missed_function` is not an object")?;
    map.iter()
        .map(|(turn, functions)| {
            let turn = turn
                .parse::<usize>()
                .map_err(|_| format!("`missed_function` key `{turn}` is not a turn index"))?;
            let functions = names(Some(functions)).ok_or_else(|| {
                format!("`missed_function` of turn {turn} is not a list of names")
            })?;
            Ok((turn, functions))
        })
        .collect()
}

/// The ground truth's calls, turn by turn.
fn expected_turns(
    ground_truth: &Value,
    turns: usize,
    model_names: &HashMap<String, String>,
    parameter_order: &HashMap<String, Vec<String>>,
) -> Result<Vec<Vec<ExpectedCall>>, (Reason, String)> {
    let per_turn = ground_truth.as_array().ok_or_else(|| {
        (
            Reason::MalformedGroundTruth,
            "`ground_truth` is not a list of turns".to_owned(),
        )
    })?;
    if per_turn.len() != turns {
        return Err((
            Reason::MalformedGroundTruth,
            format!(
                "{} turns of ground truth for {turns} turns of question",
                per_turn.len()
            ),
        ));
    }
    per_turn
        .iter()
        .enumerate()
        .map(|(turn, calls)| {
            turn_calls(turn, calls, model_names, parameter_order).map_err(|error| match error {
                TurnCallError::Unparseable(detail) => (Reason::UnparseableCallString, detail),
                TurnCallError::DoesNotFit(detail) => (Reason::MalformedGroundTruth, detail),
            })
        })
        .collect()
}

/// The user and system messages of one turn, in order.
fn user_messages(messages: &Value) -> Vec<Message> {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|message| {
            let content = message.get("content").and_then(Value::as_str)?;
            match message.get("role").and_then(Value::as_str) {
                Some("user") => Some(Message::user(content)),
                Some("system") => Some(Message::system(content)),
                _ => None,
            }
        })
        .collect()
}
