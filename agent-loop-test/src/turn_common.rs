//! Helpers shared by the `turn_*` integration tests: binding a definition,
//! building tool calls and small tools, and the conversation invariant of
//! DESIGN.md section 8.7.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use agent_loop::conversation::{Message, ModelResponse, ToolCall, ToolResult};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, ToolLimits, Validated, tool};
use serde_json::{Value, json};

/// Binds `definition` to a fresh session and loop.
pub async fn bind(definition: &Definition<Validated>) -> Definition<Bound> {
    definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .expect("the test definition binds")
}

/// Validates and binds a definition with `tools` and base `limits`.
pub async fn bind_tools(
    tools: impl IntoIterator<Item = tool::Definition>,
    limits: ToolLimits,
) -> Definition<Bound> {
    let definition = Definition::builder()
        .name("turn-test")
        .tools(tools)
        .tool_limits(limits)
        .build()
        .validate()
        .expect("the test definition is valid");
    bind(&definition).await
}

/// A tool call.
pub fn call(id: impl Into<String>, name: &str, arguments: &str) -> ToolCall {
    ToolCall::new(id, name, arguments)
}

/// A model response asking for `calls`.
pub fn batch(calls: impl IntoIterator<Item = ToolCall>) -> ModelResponse {
    ModelResponse::tool_calls(calls)
}

/// A final answer.
pub fn answer(text: &str) -> ModelResponse {
    ModelResponse::answer(text)
}

/// A conversation holding one user message.
pub fn user_says(text: &str) -> Vec<Message> {
    vec![Message::user(text)]
}

/// A tool without parameters that counts its invocations and answers
/// `"ok"`.
pub fn counting_tool(name: &str, invocations: Arc<AtomicUsize>) -> tool::Definition {
    tool::Definition::from_fn(
        tool::ToolInfo::without_parameters(name, "Counts its calls."),
        move |_arguments: Value, _context| {
            let invocations = Arc::clone(&invocations);
            async move {
                invocations.fetch_add(1, Ordering::SeqCst);
                Ok::<_, tool::BoxError>(json!("ok"))
            }
        },
    )
}

/// A tool without parameters that returns its arguments unchanged.
pub fn echo_tool(name: &str) -> tool::Definition {
    tool::Definition::from_fn(
        tool::ToolInfo::new(
            name,
            "Returns its arguments.",
            json!({ "type": "object", "properties": { "text": { "type": "string" } } }),
        ),
        |arguments: Value, _context| async move { Ok::<_, tool::BoxError>(arguments) },
    )
}

/// `get_weather(city: string, days?: integer)`: answers `sunny in {city}`
/// and counts its invocations.
pub fn weather_tool(invocations: Arc<AtomicUsize>) -> tool::Definition {
    let info = tool::ToolInfo::new(
        "get_weather",
        "Current weather for a city.",
        json!({
            "type": "object",
            "properties": {
                "city": { "type": "string" },
                "days": { "type": "integer", "minimum": 1 }
            },
            "required": ["city"]
        }),
    );
    tool::Definition::from_fn(info, move |arguments: Value, _context| {
        let invocations = Arc::clone(&invocations);
        async move {
            invocations.fetch_add(1, Ordering::SeqCst);
            let city = arguments["city"].as_str().unwrap_or("?").to_owned();
            Ok::<_, tool::BoxError>(json!(format!("sunny in {city}")))
        }
    })
}

/// A tool without parameters that panics with `message`.
pub fn panicking_tool(name: &str, message: &'static str) -> tool::Definition {
    tool::Definition::from_fn(
        tool::ToolInfo::without_parameters(name, "Always panics."),
        move |_arguments: Value, _context| async move { explode(message) },
    )
}

/// Panics with `message`; typed as a tool's output so closures need no
/// unreachable code after it.
pub fn explode(message: &str) -> Result<tool::ToolOutput, tool::BoxError> {
    panic!("{message}")
}

/// The tool calls of every assistant message, in order.
pub fn tool_calls(conversation: &[Message]) -> Vec<&ToolCall> {
    conversation
        .iter()
        .filter_map(Message::as_assistant)
        .flat_map(|assistant| assistant.tool_calls())
        .collect()
}

/// Every tool result, in order.
pub fn tool_results(conversation: &[Message]) -> Vec<&ToolResult> {
    conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .collect()
}

/// The result answering `tool_call_id`; panics unless there is exactly one.
pub fn result_for<'c>(conversation: &'c [Message], tool_call_id: &str) -> &'c ToolResult {
    let matching: Vec<_> = tool_results(conversation)
        .into_iter()
        .filter(|result| result.tool_call_id == tool_call_id)
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "expected exactly one result for {tool_call_id}"
    );
    matching[0]
}

/// DESIGN.md section 8.7: every tool call id in `conversation` has exactly
/// one result, every result answers a call made before it, and the results
/// of a batch directly follow its assistant message in call order (the
/// shape OpenAI and Anthropic require).
pub fn assert_every_call_answered(conversation: &[Message]) {
    if let Err(problem) = check_every_call_answered(conversation) {
        panic!("{problem}\nconversation: {conversation:#?}");
    }
}

/// [`assert_every_call_answered`] as a `Result`, for property tests.
pub fn check_every_call_answered(conversation: &[Message]) -> Result<(), String> {
    check_calls_answered(conversation, true)
}

/// [`check_every_call_answered`], with the results of a batch in call
/// order or, unless `in_call_order`, in any order (what
/// `conversation::repair` leaves: the result it adds for an unanswered
/// call comes after its batch's other results).
pub fn check_calls_answered(conversation: &[Message], in_call_order: bool) -> Result<(), String> {
    // foldhash: the soak checks every turn's whole conversation, and with
    // SipHash this check cost more than the turns it checked.
    let mut calls: foldhash::HashMap<&str, usize> = foldhash::HashMap::default();
    for call in tool_calls(conversation) {
        *calls.entry(call.id.as_str()).or_default() += 1;
    }
    if let Some((id, count)) = calls.iter().find(|(_, count)| **count != 1) {
        return Err(format!("tool call id {id} is used by {count} calls"));
    }
    let mut results: foldhash::HashMap<&str, usize> = foldhash::HashMap::default();
    for result in tool_results(conversation) {
        *results.entry(result.tool_call_id.as_str()).or_default() += 1;
    }
    for id in calls.keys() {
        match results.get(id) {
            Some(1) => {}
            Some(count) => return Err(format!("tool call {id} has {count} results")),
            None => return Err(format!("tool call {id} has no result")),
        }
    }
    if let Some(id) = results.keys().find(|id| !calls.contains_key(*id)) {
        return Err(format!("result for {id} answers no tool call"));
    }
    // Shape: each assistant batch is followed by its results, in call order
    // when asked.
    let mut index = 0;
    while index < conversation.len() {
        if let Message::Assistant(assistant) = &conversation[index] {
            let batch_len = assistant.tool_calls().count();
            let answers = |result: &ToolResult, call: &ToolCall| {
                if in_call_order {
                    result.tool_call_id == call.id
                } else {
                    assistant
                        .tool_calls()
                        .any(|call| call.id == result.tool_call_id)
                }
            };
            for (offset, call) in assistant.tool_calls().enumerate() {
                match conversation.get(index + 1 + offset) {
                    Some(Message::Tool(result)) if answers(result, call) => {}
                    other => {
                        return Err(format!(
                            "call {} (#{offset} of the batch at message {index}) is not answered \
                             in place; found {other:?}",
                            call.id
                        ));
                    }
                }
            }
            index += 1 + batch_len;
        } else if let Message::Tool(result) = &conversation[index] {
            return Err(format!(
                "result for {} at message {index} does not follow its batch",
                result.tool_call_id
            ));
        } else {
            index += 1;
        }
    }
    Ok(())
}

/// `true` when `text` contains no control character.
pub fn has_no_control_characters(text: &str) -> bool {
    !text.chars().any(char::is_control)
}

/// The start of the message of every panic a test provokes on purpose (a
/// tool that panics, to check that the panic is contained).
pub const EXPECTED_PANIC: &str = "expected panic: ";

/// Keeps the panics a test provokes (their message starts with
/// [`EXPECTED_PANIC`]) out of the output; every other panic (a failing
/// assertion) still goes to the hook that was in place, the default one or
/// libFuzzer's, which reports a crash. In a fuzz target, call it in the
/// target's body, after libFuzzer installed its hook.
pub fn quiet_expected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or_default();
            if !message.starts_with(EXPECTED_PANIC) {
                previous(info);
            }
        }));
    });
}

/// What one scripted turn did: see [`run_batches`].
pub struct Ran {
    pub outcome: agent_loop::turn::TurnOutcome,
    pub conversation: Vec<Message>,
    /// Each request's offered tool names, in order.
    pub offered: Vec<Vec<String>>,
    /// Each tool result's text and error flag, in order.
    pub results: Vec<(String, bool)>,
    pub events: Vec<agent_loop::turn::TurnEvent>,
}

/// One turn of `session` whose model calls, batch by batch, the tools
/// named in `batches` (with `{}`; ids `call_I_P` by iteration and
/// position), then answers "done"; with events watched.
pub async fn run_batches(session: &Definition<Bound>, batches: &[&[&str]]) -> Ran {
    use agent_loop::turn::{ScriptedModel, TurnEvents, TurnOptions};
    let mut responses: Vec<ModelResponse> =
        batches
            .iter()
            .enumerate()
            .map(|(iteration, names)| {
                batch(names.iter().enumerate().map(|(position, name)| {
                    call(format!("call_{iteration}_{position}"), name, "{}")
                }))
            })
            .collect();
    responses.push(answer("done"));
    let model = ScriptedModel::new(responses);
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = user_says("go");
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .expect("the turn ends");
    let mut all = Vec::new();
    while let Ok(event) = received.try_recv() {
        all.push(event);
    }
    Ran {
        outcome,
        offered: model.requests().into_iter().map(|r| r.tool_names).collect(),
        results: tool_results(&conversation)
            .iter()
            .map(|result| (result.text(), result.is_error))
            .collect(),
        conversation,
        events: all,
    }
}
