//! A turn with arbitrary calls: whatever a model asks for (any id, empty or
//! reused, any name, any arguments text, calls cut off by the output limit,
//! structured-output calls mixed in), after any stored history (answered
//! and unanswered calls, reused ids), under any limits, the conversation
//! the runner leaves has every tool call id answered by exactly one result
//! right after its batch, exports within both providers' rules, and takes
//! the next turn.

use agent_loop::STRUCTURED_OUTPUT_TOOL_NAME;
use agent_loop::conversation::{
    AssistantMessage, ContentPart, FinishReason, Message, ModelResponse,
};
use agent_loop::conversation::{ImagePart, ToolCall, ToolResult};
use agent_loop::tool::{self, BoxError, CallContext, ToolInfo, ToolOutput};
use agent_loop::turn::TurnStatus;
use agent_loop::turn::{MixedBatch, Output, OutputMode, ScriptedModel, TurnError, TurnOptions};
use agent_loop::{Bound, Definition, Limit, ToolLimits};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{block_on, ensure};
use crate::turn_common::{EXPECTED_PANIC, quiet_expected_panics};

/// Most batches and calls per batch a case runs: more finds nothing new
/// and makes every fuzz input slower.
pub const MAX_BATCHES: usize = 6;
pub const MAX_CALLS: usize = 8;

/// One turn's script and setting.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TurnCase {
    /// A stored conversation before the turn: batches of calls, each call
    /// answered by an ok result or left unanswered.
    pub history: Vec<Vec<HistoryCall>>,
    /// The model's responses asking for tools, in order.
    pub responses: Vec<Response>,
    /// Whether the script then gives a final answer; if not, the next model
    /// request fails.
    pub ends_with_answer: bool,
    /// `0` is unlimited.
    pub iterations: u8,
    /// `0` is unlimited.
    pub calls: u8,
    /// At most 4 (`0` counts as 1).
    pub parallel: u8,
    /// The turn must end in a structured output.
    pub output: Option<OutputCase>,
}

/// A call of the stored history.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HistoryCall {
    pub id: Id,
    pub tool: Name,
    pub answered: bool,
}

/// One model response asking for tools.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Response {
    /// Text before the calls (blank text included).
    pub text: String,
    pub calls: Vec<Call>,
    /// Cut off by the output limit (`finish_reason` `length`).
    pub cut_off: bool,
}

#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Call {
    pub id: Id,
    pub tool: Name,
    pub arguments: Arguments,
}

/// A tool call id as models send them.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Id {
    /// `""` (Gemini's OpenAI-compatible endpoint).
    Empty,
    /// `call_0` to `call_3`: reused within and across batches (local
    /// servers count from 0 in every response).
    Counted(u8),
    Any(String),
}

/// The tool a call names.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Name {
    /// Returns its arguments.
    Echo,
    /// Fails with its `text` argument as the error.
    Fail,
    /// Panics.
    Panic,
    /// Cancels the turn and never finishes: the turn is interrupted there.
    Cancel,
    /// Returns its `text` and an image.
    Image,
    /// The structured-output tool.
    Output,
    /// Any name: usually no tool.
    Any(String),
}

/// A call's arguments text.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Arguments {
    /// `""`: no arguments, as they ran.
    Empty,
    /// `{"text": ...}`: valid for every tool here.
    Text(String),
    /// `{"answer": ...}`: a valid output.
    Answer(String),
    /// `{"text": 1}`: fails the schema.
    WrongType,
    /// Any text: usually not JSON.
    Any(String),
}

/// A turn that must end in a structured output.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct OutputCase {
    /// Run the batch's other calls before ending ([`MixedBatch::RunAll`]).
    pub run_all: bool,
    /// Ask for the output natively instead of through the tool.
    pub native: bool,
}

impl Id {
    fn text(&self) -> String {
        match self {
            Id::Empty => String::new(),
            Id::Counted(n) => format!("call_{}", n % 4),
            Id::Any(id) => id.clone(),
        }
    }
}

impl Name {
    fn text(&self) -> &str {
        match self {
            Name::Echo => "echo",
            Name::Fail => "fail",
            Name::Panic => "boom",
            Name::Cancel => "cancel",
            Name::Image => "image",
            Name::Output => STRUCTURED_OUTPUT_TOOL_NAME,
            Name::Any(name) => name,
        }
    }
}

impl Arguments {
    fn text(&self) -> String {
        match self {
            Arguments::Empty => String::new(),
            Arguments::Text(text) => json!({ "text": text }).to_string(),
            Arguments::Answer(answer) => json!({ "answer": answer }).to_string(),
            Arguments::WrongType => r#"{"text": 1}"#.to_owned(),
            Arguments::Any(text) => text.clone(),
        }
    }
}

/// The panic message of the `boom` tool.
const BOOM: &str = "properties::turn boom";

fn text_parameters() -> Value {
    json!({ "type": "object", "properties": { "text": { "type": "string" } } })
}

fn text_argument(arguments: &Value) -> String {
    arguments["text"].as_str().unwrap_or_default().to_owned()
}

/// The tools every case binds; see [`Name`].
fn tools() -> Vec<tool::Definition> {
    let info = |name: &str| ToolInfo::new(name, format!("The {name} tool."), text_parameters());
    vec![
        tool::Definition::from_fn(info("echo"), |arguments: Value, _context| async move {
            Ok::<_, BoxError>(arguments)
        }),
        tool::Definition::from_fn(info("fail"), |arguments: Value, _context| async move {
            Err::<Value, BoxError>(text_argument(&arguments).into())
        }),
        tool::Definition::from_fn(info("boom"), |_arguments: Value, _context| async move {
            if true {
                panic!("{EXPECTED_PANIC}{BOOM}");
            }
            Ok::<_, BoxError>(Value::Null)
        }),
        tool::Definition::from_fn(
            info("cancel"),
            |_arguments: Value, context: CallContext| async move {
                context.cancellation().cancel();
                std::future::pending::<Result<ToolOutput, BoxError>>().await
            },
        ),
        tool::Definition::from_fn(info("image"), |arguments: Value, _context| async move {
            Ok::<_, BoxError>(ToolOutput::Content(vec![
                ContentPart::text(text_argument(&arguments)),
                ContentPart::Image(ImagePart::base64("image/png", "iVBORw0KGgo=")),
            ]))
        }),
    ]
}

fn count(limit: u8) -> Limit {
    Limit::at_most(u32::from(limit)).unwrap_or(Limit::Unlimited)
}

async fn bind(case: &TurnCase) -> Result<Definition<Bound>, String> {
    let limits = ToolLimits::new()
        .iterations(count(case.iterations))
        .calls(count(case.calls))
        .parallel(u32::from(case.parallel.clamp(1, 4)));
    super::bind(
        Definition::builder()
            .name("properties-turn")
            .tools(tools())
            .tool_limits(limits)
            .build(),
    )
    .await
}

/// The stored conversation the turn starts from.
fn history(case: &TurnCase) -> Vec<Message> {
    let mut conversation = vec![Message::user("Go.")];
    for batch in case.history.iter().take(MAX_BATCHES) {
        let calls: Vec<&HistoryCall> = batch.iter().take(MAX_CALLS).collect();
        if calls.is_empty() {
            continue;
        }
        let ids: Vec<String> = calls.iter().map(|call| call.id.text()).collect();
        conversation.push(Message::tool_calls(
            None,
            calls
                .iter()
                .zip(&ids)
                .map(|(call, id)| ToolCall::new(id.clone(), call.tool.text(), "{}"))
                .collect(),
        ));
        for (call, id) in calls.iter().zip(&ids) {
            if call.answered {
                conversation.push(Message::Tool(ToolResult::ok(id.clone(), "done")));
            }
        }
    }
    conversation
}

/// The model's script.
fn script(case: &TurnCase) -> Vec<ModelResponse> {
    let mut script: Vec<ModelResponse> = case
        .responses
        .iter()
        .take(MAX_BATCHES)
        .map(|response| {
            let mut content = vec![ContentPart::text(response.text.clone())];
            content.extend(response.calls.iter().take(MAX_CALLS).map(|call| {
                ContentPart::ToolCall(ToolCall::new(
                    call.id.text(),
                    call.tool.text(),
                    call.arguments.text(),
                ))
            }));
            let finish = if response.cut_off {
                FinishReason::Length
            } else {
                FinishReason::ToolCalls
            };
            ModelResponse::new(AssistantMessage::new(content)).with_finish_reason(finish)
        })
        .collect();
    if case.ends_with_answer {
        script.push(ModelResponse::answer(r#"{"answer": "done"}"#));
    }
    script
}

fn options(case: &TurnCase) -> Result<TurnOptions<'static>, String> {
    let Some(output) = &case.output else {
        return Ok(TurnOptions::default());
    };
    let schema = json!({
        "type": "object",
        "properties": { "answer": { "type": "string" } },
        "required": ["answer"]
    });
    let required = Output::from_schema("answer", "The answer.", schema)
        .map_err(|error| format!("the case's output is refused: {error}"))?;
    Ok(TurnOptions::builder()
        .output(required)
        .mixed_batch(if output.run_all {
            MixedBatch::RunAll
        } else {
            MixedBatch::EndEarly
        })
        .output_mode(if output.native {
            OutputMode::Native
        } else {
            OutputMode::Tool
        })
        .build())
}

/// Runs the case's turn and checks the conversation it leaves.
pub fn check_turn(case: &TurnCase) -> Result<(), String> {
    quiet_expected_panics();
    block_on(async {
        let session = bind(case).await?;
        let mut conversation = history(case);
        // Where the turn's own messages start: after the history and the
        // result `repair` adds for each unanswered call.
        let unanswered = case
            .history
            .iter()
            .take(MAX_BATCHES)
            .flat_map(|batch| batch.iter().take(MAX_CALLS))
            .filter(|call| !call.answered)
            .count();
        let turn_start = conversation.len() + unanswered;
        let model = ScriptedModel::new(script(case));
        let result = session
            .run_turn(&model, &mut conversation, options(case)?)
            .await;
        match &result {
            Ok(outcome) => {
                ensure(outcome.appended.end == conversation.len(), || {
                    format!(
                        "the outcome says it appended {:?} of {} messages",
                        outcome.appended,
                        conversation.len()
                    )
                })?;
            }
            Err(
                TurnError::ToolLimit(_)
                | TurnError::Model { .. }
                | TurnError::NoOutput { .. }
                | TurnError::EmptyAnswer { .. }
                | TurnError::ToolCallAsText { .. },
            ) => {}
            Err(error) => return Err(format!("the turn failed: {error}")),
        }
        check_conversation(&conversation)?;
        // The results the turn appends are in call order.
        crate::turn_common::check_every_call_answered(
            conversation.get(turn_start..).unwrap_or(&[]),
        )?;

        // The conversation takes the next turn as it is.
        let next = ScriptedModel::new([ModelResponse::answer("Again.")]);
        let outcome = session
            .run_turn(&next, &mut conversation, &CancellationToken::new())
            .await
            .map_err(|error| format!("the next turn failed: {error}"))?;
        ensure(
            outcome.status
                == TurnStatus::Completed {
                    answer: "Again.".into(),
                },
            || format!("the next turn ended {:?}", outcome.status),
        )?;
        ensure(outcome.repaired.is_empty(), || {
            format!("the next turn had to repair {:?}", outcome.repaired)
        })
    })
}

/// What every conversation the runner returns must be: every call
/// answered once, right after its batch; within both providers' rules;
/// error texts on one line.
pub fn check_conversation(conversation: &[Message]) -> Result<(), String> {
    crate::turn_common::check_calls_answered(conversation, false)?;
    let violations = crate::wire_rules::export_violations(conversation);
    ensure(violations.is_empty(), || {
        format!("the conversation breaks the providers' rules: {violations:?}")
    })?;
    for result in crate::turn_common::tool_results(conversation) {
        ensure(
            !result.is_error || crate::turn_common::has_no_control_characters(&result.text()),
            || format!("error result {:?} has control characters", result.text()),
        )?;
    }
    Ok(())
}
