//! Long sessions, the compacting side: `context::compact` with the built-in
//! compactors on a realistic 500-message session, a property over random
//! conversations and random (often broken) replacements, each refusal by
//! kind and index, the summarising compactor exactly, and compaction
//! inside a turn: before a request that reaches `compact_at`, over
//! `context_tokens`, when the provider says the window is full (scripted
//! and over HTTP), and corrected by the usage the provider reported.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_loop::context::{
    self, Compaction, CompactionError, CompactionErrorKind, CompactionRequest, Compactor,
    ELIDED_MARKER, ElideToolResults, Replacement, TokenEstimator,
};
use agent_loop::conversation::{
    AssistantMessage, ContentPart, FinishReason, ImagePart, Message, ModelResponse, Origin,
    ProviderPart, ReasoningPart, ToolCall, ToolResult, Usage, UserMessage, WireFormat,
};
use agent_loop::limits::Limit;
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::{
    Budget, BudgetPolicy, Model, ModelError, ModelErrorKind, ModelRequest, SUMMARY_HEADING,
    SUMMARY_INSTRUCTIONS, SUMMARY_REQUEST, ScriptedModel, Summarize, TurnError, TurnEvent,
    TurnEvents, TurnOptions, TurnOutcome, TurnStatus, summary_transcript,
};
use agent_loop::{Bound, Definition, ToolLimits};
use async_trait::async_trait;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::turn_common::{
    EXPECTED_PANIC, assert_every_call_answered, bind_tools, quiet_expected_panics,
};
use crate::wire_rules::export_violations;

// ---------------------------------------------------------------------
// Building conversations.

/// A deterministic stream of choices (xorshift64*), so a generated session
/// is the same on every run.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
}

/// Signed Anthropic thinking, as a streamed `thinking` block leaves it.
fn thinking(text: impl Into<String>, n: usize) -> ContentPart {
    ContentPart::Reasoning(
        ReasoningPart::new(text, Origin::new(WireFormat::AnthropicMessages))
            .signed(format!("EqQBCkYIBxgCKkB{n:06}{}", "Zm9vYmFy".repeat(24))),
    )
}

/// `lines` lines of a Rust file, as `read_file` answers.
fn file_text(module: u64, lines: u64) -> String {
    (1..=lines)
        .map(|line| format!("{line:4}: let value_{line} = module_{module}::compute({line});\n"))
        .collect()
}

/// A coding agent's long session: user requests, each answered after up
/// to three batches of one to three parallel calls, each batch after
/// signed thinking; long results, errors and screenshots; final answers.
struct Session {
    conversation: Vec<Message>,
    dice: Dice,
    calls: usize,
}

impl Session {
    fn new(seed: u64) -> Self {
        Self {
            conversation: vec![Message::system(
                "You are a coding agent working in a Rust repository. Read before you edit.",
            )],
            dice: Dice(seed),
            calls: 0,
        }
    }

    fn user(&mut self) {
        let module = self.dice.below(60);
        self.conversation.push(Message::user(format!(
            "The test `module_{module}::computes` fails since this morning. Find out why and fix it; keep the public API."
        )));
    }

    /// One batch of `size` calls and their results.
    fn batch(&mut self, size: usize) {
        let mut parts = vec![thinking(
            format!(
                "I need to look at {size} things before I change anything: the module, its test and the last run."
            ),
            self.calls,
        )];
        if self.dice.below(2) == 0 {
            parts.push(ContentPart::text("Let me look at the code first."));
        }
        let mut results = Vec::new();
        for _ in 0..size {
            self.calls += 1;
            let id = format!("toolu_{:04}", self.calls);
            let module = self.dice.below(60);
            let (name, arguments, result) = match self.dice.below(10) {
                0..=6 => (
                    "read_file",
                    json!({ "path": format!("src/module_{module}.rs") }),
                    ToolResult::ok(&id, file_text(module, 30 + self.dice.below(90))),
                ),
                7 => (
                    "read_file",
                    json!({ "path": format!("src/missing_{module}.rs") }),
                    ToolResult::error(
                        &id,
                        format!("error: src/missing_{module}.rs: No such file or directory (os error 2)"),
                    ),
                ),
                8 => (
                    "run_tests",
                    json!({ "filter": format!("module_{module}") }),
                    ToolResult::error(
                        &id,
                        format!(
                            "test module_{module}::computes ... FAILED\n{}",
                            "thread 'computes' panicked at src/lib.rs:42:5:\nassertion `left == right` failed\n".repeat(12)
                        ),
                    ),
                ),
                _ => (
                    "screenshot",
                    json!({ "url": "http://localhost:8080/report" }),
                    ToolResult::with_content(
                        &id,
                        vec![
                            ContentPart::text("Screenshot of the test report."),
                            ContentPart::Image(ImagePart::base64(
                                "image/png",
                                "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
                            )),
                        ],
                        false,
                    ),
                ),
            };
            parts.push(ContentPart::ToolCall(ToolCall::new(
                &id,
                name,
                arguments.to_string(),
            )));
            results.push(Message::Tool(result));
        }
        self.conversation
            .push(Message::Assistant(AssistantMessage::new(parts)));
        self.conversation.extend(results);
    }

    fn answer(&mut self) {
        let mut parts = Vec::new();
        if self.dice.below(2) == 0 {
            parts.push(thinking("The fix is in; summarise it.", self.calls));
        }
        parts.push(ContentPart::text(
            "Fixed: the rounding in `compute` was off by one; the test passes again.",
        ));
        self.conversation
            .push(Message::Assistant(AssistantMessage::new(parts)));
    }

    /// A request, 0 to 3 batches, the answer.
    fn exchange(&mut self) {
        self.user();
        for _ in 0..self.dice.below(4) {
            let size = 1 + self.dice.below(3) as usize;
            self.batch(size);
        }
        self.answer();
    }
}

/// A session of exactly `messages` messages (at least 40), ending with a
/// user message the model has not answered.
fn long_session(messages: usize) -> Vec<Message> {
    let mut session = Session::new(0x5eed_cafe);
    // An exchange adds at most 1 + 3 × 4 + 1 messages.
    while session.conversation.len() + 14 + 6 < messages - 1 {
        session.exchange();
    }
    let mut left = messages - 1 - session.conversation.len();
    if left % 2 == 1 {
        // A request, a batch of two calls and their results, the answer.
        session.user();
        session.batch(2);
        session.answer();
        left -= 5;
    }
    for _ in 0..left / 2 {
        session.user();
        session.answer();
    }
    session.conversation.push(Message::user(
        "Now tell me, in a few lines, everything you changed today.",
    ));
    session.conversation
}

/// A short history: two exchanges with tool calls, then a question.
///
/// ```text
/// 0 system
/// 1 user        "Look at both logs."
/// 2 assistant   thinking, text, call_a, call_b
/// 3 tool        call_a (3,300 bytes)
/// 4 tool        call_b (3,300 bytes)
/// 5 assistant   "Both logs are clean."
/// 6 user        "And the config?"
/// 7 assistant   thinking, call_c
/// 8 tool        call_c (3,600 bytes)
/// 9 assistant   "The config is fine."
/// 10 user       "Thanks. Anything else?"   (not answered: protected)
/// ```
fn small_history() -> Vec<Message> {
    vec![
        Message::system("You are a careful agent."),
        Message::user("Look at both logs."),
        Message::Assistant(AssistantMessage::new(vec![
            thinking("Both logs, in parallel.", 1),
            ContentPart::text("Reading both."),
            ContentPart::ToolCall(ToolCall::new("call_a", "read_file", r#"{"path":"a.log"}"#)),
            ContentPart::ToolCall(ToolCall::new("call_b", "read_file", r#"{"path":"b.log"}"#)),
        ])),
        Message::Tool(ToolResult::ok("call_a", "a.log line\n".repeat(300))),
        Message::Tool(ToolResult::ok("call_b", "b.log line\n".repeat(300))),
        Message::assistant("Both logs are clean."),
        Message::user("And the config?"),
        Message::Assistant(AssistantMessage::new(vec![
            thinking("Read the config.", 2),
            ContentPart::ToolCall(ToolCall::new(
                "call_c",
                "read_file",
                r#"{"path":"config.toml"}"#,
            )),
        ])),
        Message::Tool(ToolResult::ok("call_c", "key = value\n".repeat(300))),
        Message::assistant("The config is fine."),
        Message::user("Thanks. Anything else?"),
    ]
}

/// What `ElideToolResults::new()` makes of a result: the marker alone.
fn elided(result: &ToolResult) -> ToolResult {
    let images = result
        .content
        .iter()
        .filter(|part| !matches!(part, ContentPart::Text(_)))
        .count();
    let images = match images {
        0 => String::new(),
        1 => " and 1 image".to_owned(),
        n => format!(" and {n} images"),
    };
    let mut shortened = result.clone();
    shortened.content = vec![ContentPart::text(format!(
        "{ELIDED_MARKER} {} bytes{images} removed]",
        result.text().len()
    ))];
    shortened
}

fn assert_exports(conversation: &[Message]) {
    let violations = export_violations(conversation);
    assert!(violations.is_empty(), "{violations:#?}");
}

/// A scripted summariser a test shares with a `Summarize`, to read what it
/// was asked.
fn summarizer_of(responses: impl IntoIterator<Item = ModelResponse>) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(responses))
}

fn estimate(messages: &[Message]) -> u64 {
    TokenEstimator::new().messages(messages)
}

// ---------------------------------------------------------------------
// Models and compactors of the tests.

/// A scripted model that also records, for each request, the estimate
/// (`TokenEstimator::new()`) of what it was sent beside the conversation:
/// the instructions and the tools offered. `refusals` errors come first,
/// answered with `refusal()` (the script is not used for them).
struct Measured {
    script: ScriptedModel,
    overheads: Mutex<Vec<u64>>,
    refusals: AtomicUsize,
    refusal: fn() -> ModelError,
    refused: Mutex<Vec<Vec<Message>>>,
}

impl Measured {
    fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self {
            script: ScriptedModel::new(responses),
            overheads: Mutex::default(),
            refusals: AtomicUsize::new(0),
            refusal: || ModelError::new(ModelErrorKind::Other),
            refused: Mutex::default(),
        }
    }

    /// The first `count` requests fail with `refusal()`.
    fn refusing(mut self, count: usize, refusal: fn() -> ModelError) -> Self {
        self.refusals = AtomicUsize::new(count);
        self.refusal = refusal;
        self
    }

    fn overhead(&self) -> u64 {
        let overheads = self.overheads.lock().unwrap();
        let first = overheads[0];
        assert!(overheads.iter().all(|o| *o == first), "{overheads:?}");
        first
    }

    /// The conversations of the requests answered from the script.
    fn conversations(&self) -> Vec<Vec<Message>> {
        self.script
            .requests()
            .into_iter()
            .map(|request| request.conversation)
            .collect()
    }
}

#[async_trait]
impl Model for Measured {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        self.overheads
            .lock()
            .unwrap()
            .push(TokenEstimator::new().request(&[], request.instructions, request.tools.iter()));
        if self
            .refusals
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(1)
            })
            .is_ok()
        {
            self.refused
                .lock()
                .unwrap()
                .push(request.conversation.to_vec());
            return Err((self.refusal)());
        }
        self.script.respond(request).await
    }
}

type Make = dyn Fn(&CompactionRequest<'_>) -> Result<Option<Replacement>, BoxError> + Send + Sync;

/// A compactor that returns what `make` builds: named `broken`, since the
/// tests give it broken replacements.
struct Fixed(Box<Make>);

impl Fixed {
    fn new(
        make: impl Fn(&CompactionRequest<'_>) -> Result<Option<Replacement>, BoxError>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self(Box::new(make))
    }

    /// Always `messages` in place of `range`.
    fn replacing(range: Range<usize>, messages: Vec<Message>) -> Self {
        Self::new(move |_| Ok(Some(Replacement::new(range.clone(), messages.clone()))))
    }
}

#[async_trait]
impl Compactor for Fixed {
    fn name(&self) -> &str {
        "broken"
    }

    async fn compact(
        &self,
        request: CompactionRequest<'_>,
    ) -> Result<Option<Replacement>, BoxError> {
        (self.0)(&request)
    }
}

fn drain(receiver: &mut tokio::sync::mpsc::UnboundedReceiver<TurnEvent>) -> Vec<TurnEvent> {
    let mut events = Vec::new();
    while let Ok(event) = receiver.try_recv() {
        events.push(event);
    }
    events
}

/// What the compaction tests read of a turn's events.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    /// `TurnEvent::ModelRequestStarted`.
    Request(u32),
    /// `TurnEvent::Compacted`: compactor, tokens before and after, the
    /// replaced range and the replacement's.
    Compacted(String, u64, u64, Range<usize>, Range<usize>),
    /// `TurnEvent::CompactionRefused`: compactor, kind, message.
    Refused(String, CompactionErrorKind, String),
}

/// The compaction events, and where each request started.
fn compaction_events(events: &[TurnEvent]) -> Vec<Seen> {
    events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::ModelRequestStarted { iteration, .. } => Some(Seen::Request(*iteration)),
            TurnEvent::Compacted {
                compactor,
                tokens_before,
                tokens_after,
                replaced,
                replacement,
                ..
            } => Some(Seen::Compacted(
                compactor.clone(),
                *tokens_before,
                *tokens_after,
                replaced.clone(),
                replacement.clone(),
            )),
            TurnEvent::CompactionRefused {
                compactor,
                kind,
                message,
                ..
            } => Some(Seen::Refused(compactor.clone(), *kind, message.clone())),
            _ => None,
        })
        .collect()
}

fn compacted_event(compaction: &Compaction) -> Seen {
    Seen::Compacted(
        compaction.compactor.clone(),
        compaction.tokens_before,
        compaction.tokens_after,
        compaction.replaced.clone(),
        compaction.replacement.clone(),
    )
}

/// Runs a turn of `session` on `conversation`, watched, with `compactor`
/// (if any) and `policy`.
async fn watched_turn<M: Model>(
    session: &Definition<Bound>,
    model: &M,
    conversation: &mut Vec<Message>,
    compactor: Option<&dyn Compactor>,
    policy: BudgetPolicy,
) -> (Result<TurnOutcome, TurnError>, Vec<TurnEvent>) {
    let (events, mut receiver) = TurnEvents::channel();
    let result = match compactor {
        Some(compactor) => {
            session
                .run_turn(
                    model,
                    conversation,
                    TurnOptions::builder()
                        .events(&events)
                        .compactor(compactor)
                        .budget_policy(policy)
                        .build(),
                )
                .await
        }
        None => {
            session
                .run_turn(
                    model,
                    conversation,
                    TurnOptions::builder()
                        .events(&events)
                        .budget_policy(policy)
                        .build(),
                )
                .await
        }
    };
    (result, drain(&mut receiver))
}

/// `read_page(page)`: page `n` is `n` × 2,000 bytes (125 lines of 16).
fn read_page() -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::new(
            "read_page",
            "Reads a page of the log.",
            json!({ "type": "object", "properties": { "page": { "type": "integer" } } }),
        ),
        |arguments: Value, _context| async move {
            let page = arguments["page"].as_u64().unwrap_or(1) as usize;
            Ok::<_, BoxError>(json!("log line of app\n".repeat(125 * page)))
        },
    )
}

/// Batches reading pages `pages` (call ids `call_{page}`), then an answer.
fn page_script(pages: std::ops::RangeInclusive<usize>) -> Vec<ModelResponse> {
    let mut script: Vec<ModelResponse> = pages
        .map(|page| {
            ModelResponse::tool_calls([ToolCall::new(
                format!("call_{page}"),
                "read_page",
                json!({ "page": page }).to_string(),
            )])
        })
        .collect();
    script.push(ModelResponse::answer("All pages read."));
    script
}

async fn no_tools(limits: ToolLimits) -> Definition<Bound> {
    bind_tools(Vec::<tool::Definition>::new(), limits).await
}

// ---------------------------------------------------------------------
// 1. A 500-message session, compacted by each built-in.

#[tokio::test]
async fn a_500_message_session_over_its_budget_is_elided_to_under_it_oldest_results_first() {
    let original = long_session(500);
    assert_eq!(original.len(), 500);
    assert_exports(&original);
    let results = original
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count();
    let images = original
        .iter()
        .filter_map(Message::as_tool_result)
        .filter(|r| r.content.iter().any(|p| matches!(p, ContentPart::Image(_))))
        .count();
    let errors = original
        .iter()
        .filter_map(Message::as_tool_result)
        .filter(|r| r.is_error)
        .count();
    assert!(
        results > 150 && images > 10 && errors > 20,
        "{results} {images} {errors}"
    );

    let estimator = TokenEstimator::new();
    let tokens = estimator.messages(&original);
    let target = tokens / 4;
    let editable = context::editable(&original);
    assert_eq!(
        editable,
        1..499,
        "after the system message, before the question"
    );

    // What the compactor is documented to do: oldest results first, each
    // to the marker alone, until the estimate reaches the target.
    let mut expected = original.clone();
    let mut left = tokens;
    for message in expected[editable.clone()].iter_mut() {
        if left <= target {
            break;
        }
        let Message::Tool(result) = message else {
            continue;
        };
        let short = Message::Tool(elided(result));
        let before = estimator.message(message);
        left = left - before + estimator.message(&short);
        *message = short;
    }
    assert!(left <= target, "the target is reachable: {left} > {target}");

    let mut conversation = original.clone();
    let compaction = context::compact(
        &mut conversation,
        &ElideToolResults::new(),
        &estimator,
        target,
    )
    .await
    .expect("a valid replacement")
    .expect("over the target");
    assert_eq!(conversation, expected);
    assert_eq!(compaction.compactor, "elide_tool_results");
    assert_eq!(compaction.tokens_before, tokens);
    assert_eq!(compaction.tokens_after, left);
    assert_eq!(estimator.messages(&conversation), left);
    assert!(compaction.tokens_after <= target);
    // From the first result to the last one elided, the same length.
    let first_result = original
        .iter()
        .position(|m| matches!(m, Message::Tool(_)))
        .unwrap();
    let last_elided = (0..500)
        .rev()
        .find(|&i| conversation[i] != original[i])
        .unwrap();
    assert_eq!(compaction.replaced, first_result..last_elided + 1);
    assert_eq!(compaction.replacement, compaction.replaced);
    assert_eq!(compaction.removed, original[compaction.replaced.clone()]);
    assert_eq!(compaction.usage, Usage::default());
    // Some results stay whole: it stopped at the target.
    assert!(
        conversation
            .iter()
            .filter_map(Message::as_tool_result)
            .any(|r| !r.text().starts_with(ELIDED_MARKER))
    );
    assert_every_call_answered(&conversation);
    assert_exports(&conversation);

    // Compacting again to the same target has nothing to do.
    assert!(
        context::compact(
            &mut conversation,
            &ElideToolResults::new(),
            &estimator,
            target
        )
        .await
        .unwrap()
        .is_none()
    );
    // To a lower one it goes on where it stopped, and never elides a
    // result twice.
    let again = context::compact(
        &mut conversation,
        &ElideToolResults::new(),
        &estimator,
        target / 2,
    )
    .await
    .unwrap()
    .expect("more to elide");
    assert!(again.replaced.start > last_elided, "{again:?}");
    assert_exports(&conversation);
}

#[tokio::test]
async fn a_500_message_session_is_summarised_to_under_its_budget_at_a_unit_boundary() {
    let original = long_session(500);
    let estimator = TokenEstimator::new();
    let tokens = estimator.messages(&original);
    let target = tokens / 2;
    let editable = context::editable(&original);
    // The documented choice: the fewest oldest whole units (a batch is
    // one: no cut before a result) whose replacement, counting 1,000
    // tokens for the summary, reaches the target.
    let cut = (editable.start + 1..=editable.end)
        .filter(|&cut| !matches!(original[cut], Message::Tool(_)))
        .find(|&cut| tokens - estimator.messages(&original[editable.start..cut]) + 1_000 <= target)
        .expect("a cut reaches the target");

    let summary = "The user asked for failing tests to be fixed, one module at a time; \
                   the agent read each module and its test, fixed the rounding in `compute` \
                   and ran the tests again. Missing files: several `src/missing_*.rs`.";
    let summarizer = summarizer_of([
        ModelResponse::answer(format!("\n{summary}\n")).with_usage(Usage::new(61_000, 120))
    ]);
    let mut conversation = original.clone();
    let compaction = context::compact(
        &mut conversation,
        &Summarize::new(Arc::clone(&summarizer)),
        &estimator,
        target,
    )
    .await
    .expect("a valid replacement")
    .expect("over the target");

    assert_eq!(compaction.compactor, "summarize");
    assert_eq!(compaction.replaced, 1..cut);
    assert_eq!(compaction.replacement, 1..2);
    assert_eq!(compaction.removed, original[1..cut]);
    assert_eq!(compaction.usage, Usage::new(61_000, 120));
    let summary_message = Message::user(format!("{SUMMARY_HEADING}\n\n{summary}"));
    let mut expected = vec![original[0].clone(), summary_message];
    expected.extend_from_slice(&original[cut..]);
    assert_eq!(conversation, expected);
    assert_eq!(compaction.tokens_after, estimator.messages(&conversation));
    assert!(compaction.tokens_after <= target);
    assert_every_call_answered(&conversation);
    assert_exports(&conversation);

    // The summariser was sent the messages before the cut, then the
    // request, with the instructions and no tools.
    let requests = summarizer.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].conversation, summary_request(&original[..cut]));
    assert_eq!(
        requests[0].instructions.as_deref(),
        Some(SUMMARY_INSTRUCTIONS)
    );
    assert!(requests[0].tool_names.is_empty());
    assert_eq!(requests[0].mode, None);
}

// ---------------------------------------------------------------------
// 2. The property: what `compact` accepts exports; what it refuses
// changes nothing.

/// A result in a generated conversation.
#[derive(Clone, Debug)]
enum Out {
    Text(usize),
    Error,
    Image,
}

#[derive(Clone, Debug)]
enum Unit {
    User(usize),
    Answer {
        thinking: bool,
    },
    Batch {
        results: Vec<Out>,
        thinking: bool,
        text: bool,
    },
}

#[derive(Clone, Debug)]
enum Tail {
    /// A question the model has not answered.
    User,
    /// A batch and its results the model has not seen.
    Batch(Vec<Out>),
    /// A paused turn's batch: `answered` of its calls have a result.
    Pending { calls: usize, answered: usize },
    /// The model's answer.
    Answer,
}

fn out() -> impl Strategy<Value = Out> {
    prop_oneof![
        4 => (1usize..3_000).prop_map(Out::Text),
        1 => Just(Out::Error),
        1 => Just(Out::Image),
    ]
}

fn unit() -> impl Strategy<Value = Unit> {
    prop_oneof![
        2 => (1usize..400).prop_map(Unit::User),
        2 => any::<bool>().prop_map(|thinking| Unit::Answer { thinking }),
        4 => (proptest::collection::vec(out(), 1..4), any::<bool>(), any::<bool>())
            .prop_map(|(results, thinking, text)| Unit::Batch { results, thinking, text }),
    ]
}

fn tail() -> impl Strategy<Value = Tail> {
    prop_oneof![
        Just(Tail::User),
        proptest::collection::vec(out(), 1..3).prop_map(Tail::Batch),
        (1usize..3, 0usize..3).prop_map(|(calls, answered)| Tail::Pending {
            calls,
            answered: answered.min(calls - 1),
        }),
        Just(Tail::Answer),
    ]
}

struct Builder {
    conversation: Vec<Message>,
    calls: usize,
}

impl Builder {
    fn result(&mut self, id: &str, out: &Out) -> Message {
        Message::Tool(match out {
            Out::Text(bytes) => ToolResult::ok(id, "r".repeat(*bytes)),
            Out::Error => ToolResult::error(id, "error: permission denied"),
            Out::Image => ToolResult::with_content(
                id,
                vec![
                    ContentPart::text("A screenshot."),
                    ContentPart::Image(ImagePart::base64("image/png", "iVBORw0KGgo=")),
                ],
                false,
            ),
        })
    }

    fn batch(&mut self, calls: usize, thinking_on: bool, text: bool) -> Vec<String> {
        let mut parts = Vec::new();
        if thinking_on {
            parts.push(thinking("Think before calling.", self.calls));
        }
        if text {
            parts.push(ContentPart::text("Calling tools."));
        }
        let mut ids = Vec::new();
        for _ in 0..calls {
            self.calls += 1;
            let id = format!("call_{}", self.calls);
            parts.push(ContentPart::ToolCall(ToolCall::new(
                &id,
                "read_file",
                r#"{"path":"a.rs"}"#,
            )));
            ids.push(id);
        }
        self.conversation
            .push(Message::Assistant(AssistantMessage::new(parts)));
        ids
    }

    fn unit(&mut self, unit: &Unit) {
        match unit {
            Unit::User(bytes) => self
                .conversation
                .push(Message::user(format!("Please {}", "u".repeat(*bytes)))),
            Unit::Answer { thinking: on } => {
                let mut parts = Vec::new();
                if *on {
                    parts.push(thinking("Answer now.", self.calls));
                }
                parts.push(ContentPart::text("Here is the answer."));
                self.conversation
                    .push(Message::Assistant(AssistantMessage::new(parts)));
            }
            Unit::Batch {
                results,
                thinking,
                text,
            } => {
                let ids = self.batch(results.len(), *thinking, *text);
                for (id, out) in ids.iter().zip(results) {
                    let result = self.result(id, out);
                    self.conversation.push(result);
                }
            }
        }
    }
}

fn build(system: bool, units: &[Unit], tail: &Tail) -> Vec<Message> {
    let mut builder = Builder {
        conversation: Vec::new(),
        calls: 0,
    };
    if system {
        builder.conversation.push(Message::system("Be careful."));
    }
    builder.unit(&Unit::User(10));
    for unit in units {
        builder.unit(unit);
    }
    match tail {
        Tail::User => builder.unit(&Unit::User(20)),
        Tail::Batch(results) => builder.unit(&Unit::Batch {
            results: results.clone(),
            thinking: true,
            text: false,
        }),
        Tail::Pending { calls, answered } => {
            let ids = builder.batch(*calls, true, false);
            for id in ids.iter().take(*answered) {
                let result = builder.result(id, &Out::Text(100));
                builder.conversation.push(result);
            }
        }
        Tail::Answer => builder.unit(&Unit::Answer { thinking: false }),
    }
    builder.conversation
}

/// The conversation as a resume would send it: the pending calls of a
/// paused turn answered at its end.
fn resumed(conversation: &[Message]) -> Vec<Message> {
    let mut resumed = conversation.to_vec();
    let answered: HashSet<String> = conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .map(|result| result.tool_call_id.clone())
        .collect();
    if let Some(last) = conversation
        .iter()
        .rev()
        .find(|message| !matches!(message, Message::Tool(_)))
        .and_then(Message::as_assistant)
    {
        for call in last.tool_calls() {
            if !answered.contains(&call.id) {
                resumed.push(Message::Tool(ToolResult::ok(&call.id, "resumed")));
            }
        }
    }
    resumed
}

/// Which messages a random replacement covers.
#[derive(Clone, Debug)]
enum Pick {
    /// All the editable messages.
    Editable,
    /// Two points inside the editable range, in order.
    Within(usize, usize),
    /// Any two points, in any order, up to past the end.
    Anywhere(usize, usize),
}

/// What a random compactor does to the messages it covers.
#[derive(Clone, Debug)]
enum Edit {
    /// Each result to one short text: a valid compaction.
    ShortenResults,
    DropResult,
    DropCall,
    SplitBatch,
    StripThinking,
    ChangeThinking,
    InsertEmpty,
    InsertBlankUser,
    InsertSystem,
    Duplicate,
    SwapResults,
    ForeignCall,
    RenameCall,
    TextBeforeThinking,
    /// A batch replaced by its thinking alone, its results dropped.
    ThinkingOnly,
    /// A result moved after the message that follows it.
    MoveResultLater,
}

#[derive(Clone, Debug)]
enum Op {
    Elide(usize),
    Summarize,
    Summary(Pick),
    Delete(Pick),
    Keep(Pick, Edit, usize),
}

fn pick() -> impl Strategy<Value = Pick> {
    prop_oneof![
        2 => Just(Pick::Editable),
        3 => (0usize..64, 0usize..64).prop_map(|(a, b)| Pick::Within(a, b)),
        1 => (0usize..64, 0usize..64).prop_map(|(a, b)| Pick::Anywhere(a, b)),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => Just(Edit::ShortenResults),
        1 => Just(Edit::DropResult),
        1 => Just(Edit::DropCall),
        1 => Just(Edit::SplitBatch),
        1 => Just(Edit::StripThinking),
        1 => Just(Edit::ChangeThinking),
        1 => Just(Edit::InsertEmpty),
        1 => Just(Edit::InsertBlankUser),
        1 => Just(Edit::InsertSystem),
        1 => Just(Edit::Duplicate),
        1 => Just(Edit::SwapResults),
        1 => Just(Edit::ForeignCall),
        1 => Just(Edit::RenameCall),
        1 => Just(Edit::TextBeforeThinking),
        1 => Just(Edit::ThinkingOnly),
        1 => Just(Edit::MoveResultLater),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0usize..50).prop_map(Op::Elide),
        1 => Just(Op::Summarize),
        2 => pick().prop_map(Op::Summary),
        2 => pick().prop_map(Op::Delete),
        6 => (pick(), edit(), 0usize..64).prop_map(|(pick, edit, at)| Op::Keep(pick, edit, at)),
    ]
}

fn range_of(pick: &Pick, len: usize, editable: &Range<usize>) -> Range<usize> {
    match *pick {
        Pick::Editable => editable.clone(),
        Pick::Within(a, b) => {
            let span = editable.len() + 1;
            let (a, b) = (editable.start + a % span, editable.start + b % span);
            a.min(b)..a.max(b)
        }
        Pick::Anywhere(a, b) => a % (len + 2)..b % (len + 2),
    }
}

/// The first message at or after `at` (wrapping) that `matches`.
fn find(messages: &[Message], at: usize, matches: impl Fn(&Message) -> bool) -> Option<usize> {
    let len = messages.len();
    (0..len)
        .map(|i| (at + i) % len)
        .find(|&i| matches(&messages[i]))
}

fn is_batch(message: &Message) -> bool {
    message
        .as_assistant()
        .is_some_and(AssistantMessage::has_tool_calls)
}

fn parts_mut(message: &mut Message) -> Option<&mut Vec<ContentPart>> {
    match message {
        Message::Assistant(assistant) => Some(&mut assistant.content),
        _ => None,
    }
}

fn apply(edit: &Edit, messages: &mut Vec<Message>, at: usize) {
    let len = messages.len();
    let result_at = |messages: &[Message]| find(messages, at, |m| matches!(m, Message::Tool(_)));
    let batch_at = |messages: &[Message]| find(messages, at, is_batch);
    match edit {
        Edit::ShortenResults => {
            for message in messages.iter_mut() {
                if let Message::Tool(result) = message {
                    result.content = vec![ContentPart::text("short")];
                }
            }
        }
        Edit::DropResult => {
            if let Some(i) = result_at(messages) {
                messages.remove(i);
            }
        }
        Edit::DropCall => {
            if let Some(i) = batch_at(messages) {
                let parts = parts_mut(&mut messages[i]).unwrap();
                let call = parts
                    .iter()
                    .position(|p| matches!(p, ContentPart::ToolCall(_)))
                    .unwrap();
                parts.remove(call);
            }
        }
        Edit::SplitBatch => {
            if let Some(i) = batch_at(messages) {
                let parts = parts_mut(&mut messages[i]).unwrap();
                let last_call = parts
                    .iter()
                    .rposition(|p| matches!(p, ContentPart::ToolCall(_)))
                    .unwrap();
                let first_call = parts
                    .iter()
                    .position(|p| matches!(p, ContentPart::ToolCall(_)))
                    .unwrap();
                if last_call > first_call {
                    let rest = parts.split_off(last_call);
                    messages.insert(i + 1, Message::Assistant(AssistantMessage::new(rest)));
                }
            }
        }
        Edit::StripThinking => {
            if let Some(i) = batch_at(messages) {
                parts_mut(&mut messages[i])
                    .unwrap()
                    .retain(|p| !matches!(p, ContentPart::Reasoning(_)));
            }
        }
        Edit::ChangeThinking => {
            if let Some(i) = batch_at(messages) {
                for part in parts_mut(&mut messages[i]).unwrap() {
                    if let ContentPart::Reasoning(reasoning) = part {
                        reasoning.text.push_str(" (edited)");
                    }
                }
            }
        }
        Edit::InsertEmpty => messages.insert(
            at % (len + 1),
            Message::Assistant(AssistantMessage::new(Vec::new())),
        ),
        Edit::InsertBlankUser => messages.insert(at % (len + 1), Message::user(" \n")),
        Edit::InsertSystem => messages.insert(at % (len + 1), Message::system("Be brief.")),
        Edit::Duplicate => {
            if len > 0 {
                let copy = messages[at % len].clone();
                messages.insert(at % len, copy);
            }
        }
        Edit::SwapResults => {
            if let Some(i) = result_at(messages)
                && i + 1 < len
                && matches!(messages[i + 1], Message::Tool(_))
            {
                messages.swap(i, i + 1);
            }
        }
        Edit::ForeignCall => {
            if let Some(i) = batch_at(messages) {
                parts_mut(&mut messages[i])
                    .unwrap()
                    .push(ContentPart::ToolCall(ToolCall::new(
                        "call_new",
                        "read_file",
                        "{}",
                    )));
                messages.insert(i + 1, Message::Tool(ToolResult::ok("call_new", "new")));
            }
        }
        Edit::RenameCall => {
            if let Some(i) = batch_at(messages)
                && let Message::Assistant(assistant) = &mut messages[i]
                && let Some(call) = assistant.tool_calls_mut().next()
            {
                call.name = "renamed_tool".to_owned();
                call.arguments = "not json".to_owned();
            }
        }
        Edit::TextBeforeThinking => {
            if let Some(i) = batch_at(messages) {
                parts_mut(&mut messages[i])
                    .unwrap()
                    .insert(0, ContentPart::text("First, some text."));
            }
        }
        Edit::ThinkingOnly => {
            if let Some(i) = batch_at(messages) {
                let parts = parts_mut(&mut messages[i]).unwrap();
                parts.retain(|p| matches!(p, ContentPart::Reasoning(_)));
                while i + 1 < messages.len() && matches!(messages[i + 1], Message::Tool(_)) {
                    messages.remove(i + 1);
                }
            }
        }
        Edit::MoveResultLater => {
            if let Some(i) = result_at(messages)
                && i + 1 < len
            {
                let result = messages.remove(i);
                messages.insert(i + 1, result);
            }
        }
    }
}

/// A compactor that applies `op`.
struct Random(Op);

#[async_trait]
impl Compactor for Random {
    fn name(&self) -> &str {
        "random"
    }

    async fn compact(
        &self,
        request: CompactionRequest<'_>,
    ) -> Result<Option<Replacement>, BoxError> {
        let conversation = request.conversation;
        let len = conversation.len();
        let slice = |range: &Range<usize>| {
            if range.start <= range.end && range.end <= len {
                conversation[range.clone()].to_vec()
            } else {
                Vec::new()
            }
        };
        Ok(match &self.0 {
            Op::Elide(keep) => {
                return ElideToolResults::new()
                    .keep_bytes(*keep)
                    .compact(request)
                    .await;
            }
            Op::Summarize => {
                let model = ScriptedModel::new([ModelResponse::answer("Summary of the work.")]);
                return Summarize::new(model).compact(request).await;
            }
            Op::Summary(pick) => Some(Replacement::new(
                range_of(pick, len, &request.editable),
                vec![Message::user("Summary of the work so far.")],
            )),
            Op::Delete(pick) => Some(Replacement::new(
                range_of(pick, len, &request.editable),
                Vec::new(),
            )),
            Op::Keep(pick, edit, at) => {
                let range = range_of(pick, len, &request.editable);
                let mut messages = slice(&range);
                apply(edit, &mut messages, *at);
                // Smaller, so that a refusal is for the edit.
                apply(&Edit::ShortenResults, &mut messages, 0);
                Some(Replacement::new(range, messages))
            }
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn what_compact_accepts_exports_and_what_it_refuses_changes_nothing(
        system in any::<bool>(),
        units in proptest::collection::vec(unit(), 0..10),
        tail in tail(),
        op in op(),
    ) {
        let original = build(system, &units, &tail);
        let before = export_violations(&resumed(&original));
        prop_assert!(before.is_empty(), "the generated conversation: {before:#?}");
        let editable = context::editable(&original);
        let estimator = TokenEstimator::new();
        let mut conversation = original.clone();
        let compactor = Random(op.clone());
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        let compacted = runtime.block_on(context::compact(&mut conversation, &compactor, &estimator, 0));
        match compacted {
            Ok(Some(compaction)) => {
                // The conversation is the original with the replacement in.
                let mut expected = original.clone();
                let removed: Vec<Message> = expected
                    .splice(compaction.replaced.clone(), conversation[compaction.replacement.clone()].iter().cloned())
                    .collect();
                prop_assert_eq!(&expected, &conversation);
                prop_assert_eq!(&removed, &compaction.removed);
                prop_assert!(compaction.replaced.start >= editable.start && compaction.replaced.end <= editable.end);
                prop_assert!(compaction.tokens_after < compaction.tokens_before);
                prop_assert_eq!(compaction.tokens_after, estimator.messages(&conversation));
                let violations = export_violations(&resumed(&conversation));
                prop_assert!(violations.is_empty(), "{op:?} was accepted: {violations:#?}\n{conversation:#?}");
            }
            Ok(None) => prop_assert_eq!(&conversation, &original),
            Err(error) => {
                prop_assert_eq!(&conversation, &original, "{}", error);
                // A range outside the conversation, or over what must stay,
                // is refused for that before anything else.
                if let Op::Summary(pick) | Op::Delete(pick) | Op::Keep(pick, _, _) = &op {
                    let range = range_of(pick, original.len(), &editable);
                    if range.start > range.end || range.end > original.len() {
                        prop_assert_eq!(error.kind, CompactionErrorKind::InvalidRange);
                    } else if range.start < editable.start || range.end > editable.end {
                        prop_assert_eq!(error.kind, CompactionErrorKind::Protected);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// 3. Broken replacements, refused by kind and index.

async fn refusal(compactor: &dyn Compactor) -> CompactionError {
    let original = small_history();
    let mut conversation = original.clone();
    let error = context::compact(&mut conversation, compactor, &TokenEstimator::new(), 0)
        .await
        .expect_err("refused");
    assert_eq!(conversation, original, "a refusal changes nothing");
    error
}

fn without_thinking(message: &Message) -> Message {
    let mut message = message.clone();
    if let Message::Assistant(assistant) = &mut message {
        assistant
            .content
            .retain(|part| !matches!(part, ContentPart::Reasoning(_)));
    }
    message
}

/// `levels` nested arrays.
fn nested(levels: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..levels {
        value = Value::Array(vec![value]);
    }
    value
}

#[tokio::test]
async fn each_broken_replacement_is_refused_by_kind_and_index_and_the_history_is_kept() {
    let h = small_history();
    assert_eq!(context::editable(&h), 1..10);
    let reversed = {
        let end = 5;
        (end + 1)..end
    };
    let split = vec![
        Message::Assistant(AssistantMessage::new(
            h[2].as_assistant().unwrap().content[..3].to_vec(),
        )),
        h[3].clone(),
        Message::Assistant(AssistantMessage::new(
            h[2].as_assistant().unwrap().content[3..].to_vec(),
        )),
        h[4].clone(),
    ];
    let mut changed_thinking = h[2].clone();
    if let Message::Assistant(assistant) = &mut changed_thinking
        && let ContentPart::Reasoning(reasoning) = &mut assistant.content[0]
    {
        reasoning.text = "Something else entirely.".into();
    }
    let mut reordered = h[2].clone();
    if let Message::Assistant(assistant) = &mut reordered {
        assistant.content.swap(2, 3);
    }
    let deep = Message::Assistant(AssistantMessage::new(vec![
        ContentPart::text("Deep."),
        ContentPart::Provider(ProviderPart::new(
            WireFormat::AnthropicMessages,
            nested(200),
        )),
    ]));
    let cases: Vec<(&str, Fixed, CompactionErrorKind, Option<usize>)> = vec![
        (
            "past the end",
            Fixed::replacing(5..12, vec![]),
            CompactionErrorKind::InvalidRange,
            None,
        ),
        (
            "reversed",
            Fixed::replacing(reversed, vec![]),
            CompactionErrorKind::InvalidRange,
            None,
        ),
        (
            "the system message",
            Fixed::replacing(0..2, vec![]),
            CompactionErrorKind::Protected,
            None,
        ),
        (
            "the question",
            Fixed::replacing(9..11, vec![Message::user("Short.")]),
            CompactionErrorKind::Protected,
            None,
        ),
        (
            "after the question",
            Fixed::replacing(11..11, vec![Message::user("More.")]),
            CompactionErrorKind::Protected,
            None,
        ),
        (
            "a system message",
            Fixed::replacing(5..6, vec![Message::system("Summary.")]),
            CompactionErrorKind::SystemMessage,
            Some(5),
        ),
        (
            "a blank answer",
            Fixed::replacing(5..6, vec![Message::assistant(" \n")]),
            CompactionErrorKind::EmptyMessage,
            Some(5),
        ),
        (
            "an empty user message second",
            Fixed::replacing(
                5..6,
                vec![
                    Message::assistant("Clean."),
                    Message::User(UserMessage::new(vec![])),
                ],
            ),
            CompactionErrorKind::EmptyMessage,
            Some(6),
        ),
        (
            "a call of its own",
            Fixed::replacing(
                5..6,
                vec![
                    Message::tool_calls(None, vec![ToolCall::new("call_zz", "read_file", "{}")]),
                    Message::Tool(ToolResult::ok("call_zz", "made up")),
                ],
            ),
            CompactionErrorKind::UnknownToolCall,
            Some(5),
        ),
        (
            "thinking stripped off the calls",
            Fixed::replacing(
                2..5,
                vec![without_thinking(&h[2]), h[3].clone(), h[4].clone()],
            ),
            CompactionErrorKind::ChangedBatch,
            Some(2),
        ),
        (
            "thinking changed",
            Fixed::replacing(2..5, vec![changed_thinking, h[3].clone(), h[4].clone()]),
            CompactionErrorKind::ChangedBatch,
            Some(2),
        ),
        (
            "the calls reordered",
            Fixed::replacing(2..5, vec![reordered, h[3].clone(), h[4].clone()]),
            CompactionErrorKind::ChangedBatch,
            Some(2),
        ),
        (
            "a batch split in two",
            Fixed::replacing(2..5, split),
            CompactionErrorKind::ChangedBatch,
            Some(2),
        ),
        // The index is the assistant message whose call lost its result.
        (
            "a result dropped",
            Fixed::replacing(2..5, vec![h[2].clone(), h[3].clone()]),
            CompactionErrorKind::UnpairedToolCall,
            Some(2),
        ),
        (
            "a result moved past the answer",
            Fixed::replacing(
                2..6,
                vec![h[2].clone(), h[3].clone(), h[5].clone(), h[4].clone()],
            ),
            CompactionErrorKind::UnpairedToolCall,
            Some(2),
        ),
        (
            "a result twice",
            Fixed::replacing(
                2..5,
                vec![h[2].clone(), h[3].clone(), h[3].clone(), h[4].clone()],
            ),
            CompactionErrorKind::UnpairedToolCall,
            Some(4),
        ),
        (
            "a call dropped, its result kept",
            Fixed::replacing(7..9, vec![h[8].clone()]),
            CompactionErrorKind::UnpairedToolCall,
            Some(7),
        ),
        (
            "the calls' message dropped",
            Fixed::replacing(2..3, vec![]),
            CompactionErrorKind::UnpairedToolCall,
            Some(2),
        ),
        (
            "a batch twice",
            Fixed::replacing(
                7..9,
                vec![h[7].clone(), h[8].clone(), h[7].clone(), h[8].clone()],
            ),
            // Each replaced batch is kept once.
            CompactionErrorKind::ChangedBatch,
            Some(9),
        ),
        (
            "a value nested too deep",
            Fixed::replacing(5..6, vec![deep]),
            CompactionErrorKind::TooDeep,
            Some(5),
        ),
        (
            "longer than before",
            Fixed::replacing(
                5..6,
                vec![Message::assistant(
                    "Both logs are clean; here is every line. ".repeat(20),
                )],
            ),
            CompactionErrorKind::NotSmaller,
            None,
        ),
        (
            "the same",
            Fixed::replacing(1..10, h[1..10].to_vec()),
            CompactionErrorKind::NotSmaller,
            None,
        ),
    ];
    for (name, compactor, kind, index) in cases {
        let error = refusal(&compactor).await;
        assert_eq!((error.kind, error.index), (kind, index), "{name}: {error}");
        assert_eq!(error.compactor, "broken");
    }
    // Display names the rule and the place.
    let error = refusal(&Fixed::replacing(2..5, vec![h[2].clone(), h[3].clone()])).await;
    assert_eq!(
        error.to_string(),
        "compaction refused (broken): a tool call is not answered exactly once right after its message (at messages[2])"
    );
}

#[tokio::test]
async fn a_compactor_that_fails_or_panics_is_refused_with_its_cause() {
    quiet_expected_panics();
    let failing = Fixed::new(|_| Err("the summariser is down".into()));
    let error = refusal(&failing).await;
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::Failed, None)
    );
    assert_eq!(
        std::error::Error::source(&error).unwrap().to_string(),
        "the summariser is down"
    );
    assert_eq!(
        error.to_string(),
        "compaction refused (broken): the compactor failed"
    );
    let panicking = Fixed::new(|_| panic!("{EXPECTED_PANIC}compactor"));
    let error = refusal(&panicking).await;
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::Panicked, None)
    );
    assert!(
        std::error::Error::source(&error)
            .unwrap()
            .to_string()
            .contains("compactor"),
        "{error:?}"
    );
}

#[tokio::test]
async fn valid_replacements_are_applied_as_given() {
    let h = small_history();
    let estimator = TokenEstimator::new();
    // A whole exchange dropped.
    let mut conversation = h.clone();
    let compaction = context::compact(
        &mut conversation,
        &Fixed::replacing(1..6, vec![]),
        &estimator,
        0,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!((compaction.replaced, compaction.replacement), (1..6, 1..1));
    let mut expected = vec![h[0].clone()];
    expected.extend_from_slice(&h[6..]);
    assert_eq!(conversation, expected);
    assert_exports(&conversation);
    // A batch kept whole with new text beside its calls, its results
    // shortened, in another order.
    let mut kept = h[2].clone();
    if let Message::Assistant(assistant) = &mut kept {
        assistant.content[1] = ContentPart::text("Reading both logs.");
    }
    let replacement = vec![
        kept,
        Message::Tool(ToolResult::ok("call_b", "b: clean")),
        Message::Tool(ToolResult::ok("call_a", "a: clean")),
    ];
    let mut conversation = h.clone();
    context::compact(
        &mut conversation,
        &Fixed::replacing(2..5, replacement.clone()),
        &estimator,
        0,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(conversation[2..5], replacement[..]);
    assert_exports(&conversation);
    // Under the target already: the compactor is not asked.
    let mut conversation = h.clone();
    let never = Fixed::new(|_| panic!("not asked"));
    assert!(
        context::compact(&mut conversation, &never, &estimator, estimate(&h))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_blank_message_the_history_already_held_does_not_stop_a_compaction() {
    // A model once answered with nothing; exports leave such a message
    // out, and a compactor that copies it along changes nothing there.
    let mut history = small_history();
    history[5] = Message::assistant("");
    assert_exports(&history);
    let mut conversation = history.clone();
    let compaction = context::compact(
        &mut conversation,
        &ElideToolResults::new(),
        &TokenEstimator::new(),
        0,
    )
    .await
    .expect("the blank answer was there before")
    .expect("results to elide");
    assert_eq!(compaction.replaced, 3..9);
    assert_eq!(conversation[5], history[5]);
    assert_exports(&conversation);
    // A blank message a compactor adds is still refused.
    let error = context::compact(
        &mut conversation.clone(),
        &Fixed::replacing(6..7, vec![Message::user("")]),
        &TokenEstimator::new(),
        0,
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::EmptyMessage, Some(6))
    );
}

#[tokio::test]
async fn a_result_that_eliding_would_not_make_smaller_is_left_alone() {
    // 55 bytes elide to a marker of 54: 14 tokens either way.
    let text = "x".repeat(55);
    let marker = format!("{ELIDED_MARKER} 55 bytes removed]");
    assert_eq!(marker.len(), 54);
    let estimator = TokenEstimator::new();
    assert_eq!(estimator.text(&text), estimator.text(&marker));
    let history = vec![
        Message::user("Read it."),
        Message::tool_calls(None, vec![ToolCall::new("call_1", "read_file", "{}")]),
        Message::Tool(ToolResult::ok("call_1", text)),
        Message::assistant("Done."),
        Message::user("Next?"),
    ];
    let mut conversation = history.clone();
    // Nothing to shorten: no replacement, rather than one refused as not
    // smaller.
    let compacted =
        context::compact(&mut conversation, &ElideToolResults::new(), &estimator, 0).await;
    assert!(matches!(compacted, Ok(None)), "{compacted:?}");
    assert_eq!(conversation, history);
}

#[tokio::test]
async fn elide_keeps_the_first_bytes_and_the_recent_batches_when_asked() {
    let h = small_history();
    let estimator = TokenEstimator::new();
    let mut conversation = h.clone();
    let compaction = context::compact(
        &mut conversation,
        &ElideToolResults::new().keep_bytes(15).keep_recent(1),
        &estimator,
        0,
    )
    .await
    .unwrap()
    .unwrap();
    // The last batch before the question (call_c) stays whole.
    assert_eq!(compaction.replaced, 3..5);
    assert_eq!(conversation[8], h[8]);
    assert_eq!(
        conversation[3].text(),
        format!("{ELIDED_MARKER} 3285 bytes removed]\na.log line\na.lo")
    );
    assert_eq!(
        conversation[4].text(),
        format!("{ELIDED_MARKER} 3285 bytes removed]\nb.log line\nb.lo")
    );
    assert_exports(&conversation);
}

// ---------------------------------------------------------------------
// 4. The summarising compactor, exactly.

/// A request, a batch of three long results, the answer, a question.
fn three_results() -> Vec<Message> {
    vec![
        Message::user("Plan the migration."),
        Message::Assistant(AssistantMessage::new(vec![
            thinking("Read the three schemas.", 1),
            ContentPart::ToolCall(ToolCall::new("call_1", "read_file", r#"{"path":"a.sql"}"#)),
            ContentPart::ToolCall(ToolCall::new("call_2", "read_file", r#"{"path":"b.sql"}"#)),
            ContentPart::ToolCall(ToolCall::new("call_3", "read_file", r#"{"path":"c.sql"}"#)),
        ])),
        Message::Tool(ToolResult::ok(
            "call_1",
            "CREATE TABLE a (id INT);\n".repeat(160),
        )),
        Message::Tool(ToolResult::ok(
            "call_2",
            "CREATE TABLE b (id INT);\n".repeat(160),
        )),
        Message::Tool(ToolResult::ok(
            "call_3",
            "CREATE TABLE c (id INT);\n".repeat(160),
        )),
        Message::assistant("The plan: migrate a, then b, then c."),
        Message::user("Start with step one."),
    ]
}

#[tokio::test]
async fn summarize_replaces_whole_units_never_half_of_a_batch() {
    let original = three_results();
    let estimator = TokenEstimator::new();
    let tokens = estimator.messages(&original);
    assert_eq!(context::editable(&original), 0..6);
    // Replacing through the second result would reach this target; a cut
    // there would split the batch, so the cut is after its last result.
    let target = tokens - estimator.messages(&original[0..4]) + 1_000;
    let summarizer = summarizer_of([ModelResponse::answer(
        "  The user wants a migration plan for a, b and c.  ",
    )
    .with_usage(Usage::new(3_000, 40))]);
    let mut conversation = original.clone();
    let compaction = context::compact(
        &mut conversation,
        &Summarize::new(Arc::clone(&summarizer)).instructions("Be terse."),
        &estimator,
        target,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(compaction.replaced, 0..5);
    assert_eq!(compaction.replacement, 0..1);
    assert_eq!(compaction.removed, original[0..5]);
    assert_eq!(compaction.usage, Usage::new(3_000, 40));
    assert_eq!(
        conversation,
        vec![
            Message::user(format!(
                "{SUMMARY_HEADING}\n\nThe user wants a migration plan for a, b and c."
            )),
            original[5].clone(),
            original[6].clone(),
        ]
    );
    let requests = summarizer.requests();
    assert_eq!(requests[0].conversation, summary_request(&original[..5]));
    assert_eq!(requests[0].instructions.as_deref(), Some("Be terse."));
    assert_exports(&conversation);

    // With a long first request, a target that replacing it reaches: the
    // fewest oldest units, that request alone.
    let mut long_request = original.clone();
    long_request[0] = Message::user(format!("Plan the migration. {}", "Context. ".repeat(1_000)));
    let tokens = estimator.messages(&long_request);
    let target = tokens - estimator.messages(&long_request[0..1]) + 1_000;
    assert!(target < tokens);
    let summarizer = summarizer_of([ModelResponse::answer("A migration, with context.")]);
    let mut conversation = long_request.clone();
    let compaction = context::compact(
        &mut conversation,
        &Summarize::new(Arc::clone(&summarizer)),
        &estimator,
        target,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!((compaction.replaced, compaction.replacement), (0..1, 0..1));
    assert_eq!(
        summarizer.requests()[0].conversation,
        summary_request(&long_request[..1])
    );
    assert_eq!(conversation[1..], long_request[1..]);
    assert_exports(&conversation);
}

#[tokio::test]
async fn an_empty_summary_or_a_failed_summariser_fails_the_compaction() {
    let original = three_results();
    let estimator = TokenEstimator::new();
    let mut conversation = original.clone();
    let blank = Summarize::new(ScriptedModel::new([ModelResponse::answer(" \n ")]));
    let error = context::compact(&mut conversation, &blank, &estimator, 0)
        .await
        .unwrap_err();
    assert_eq!(error.kind, CompactionErrorKind::Failed);
    assert_eq!(
        std::error::Error::source(&error).unwrap().to_string(),
        "the summarising model answered with no text"
    );
    let exhausted = Summarize::new(ScriptedModel::new([]));
    let error = context::compact(&mut conversation, &exhausted, &estimator, 0)
        .await
        .unwrap_err();
    assert_eq!(error.kind, CompactionErrorKind::Failed);
    assert_eq!(error.compactor, "summarize");
    assert_eq!(conversation, original);
}

#[tokio::test]
async fn in_a_turn_a_summary_replaces_the_earlier_exchange_its_usage_is_the_turns_and_appended_moves()
 {
    let history = vec![
        Message::user(format!("Plan a trip to Rome. {}", "Details. ".repeat(400))),
        Message::assistant(format!("Here is the plan. {}", "Day by day. ".repeat(300))),
        Message::user("Now read the tickets."),
    ];
    let session = bind_tools([read_page()], ToolLimits::new().context_tokens(1_800)).await;
    let turn_usage = Usage::new(100, 10);
    let model = Measured::new(vec![
        ModelResponse::tool_calls([ToolCall::new("call_1", "read_page", r#"{"page":1}"#)])
            .with_usage(turn_usage),
        ModelResponse::answer("The tickets are for May.").with_usage(turn_usage),
    ]);
    let summarizer =
        summarizer_of([
            ModelResponse::answer("A trip to Rome was planned day by day.")
                .with_usage(Usage::new(1_500, 60)),
        ]);
    let summarize = Summarize::new(Arc::clone(&summarizer));
    let mut conversation = history.clone();
    let (outcome, events) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&summarize),
        BudgetPolicy::Fail,
    )
    .await;
    let outcome = outcome.expect("the turn completes");
    let overhead = model.overhead();
    let tokens_before = estimate(&history) + overhead;
    assert!(tokens_before >= 1_440, "{tokens_before}: at 80% of 1,800");

    let summary = Message::user(format!(
        "{SUMMARY_HEADING}\n\nA trip to Rome was planned day by day."
    ));
    assert_eq!(outcome.compactions.len(), 1);
    let compaction = &outcome.compactions[0];
    assert_eq!(compaction.compactor, "summarize");
    // Nothing reaches 900 tokens with a summary counted at 1,000: every
    // editable unit goes.
    assert_eq!(
        (compaction.replaced.clone(), compaction.replacement.clone()),
        (0..2, 0..1)
    );
    assert_eq!(compaction.removed, history[0..2]);
    assert_eq!(compaction.tokens_before, tokens_before);
    assert_eq!(
        compaction.tokens_after,
        estimate(&[summary.clone(), history[2].clone()]) + overhead
    );
    assert_eq!(compaction.usage, Usage::new(1_500, 60));
    // The turn's usage holds the summary's.
    let mut usage = turn_usage;
    usage += turn_usage;
    usage += Usage::new(1_500, 60);
    assert_eq!(outcome.stats.usage, usage);
    assert_eq!(
        compaction_events(&events),
        vec![
            compacted_event(compaction),
            Seen::Request(1),
            Seen::Request(2),
        ]
    );
    // The model saw the compacted conversation from its first request.
    let seen = model.conversations();
    assert_eq!(seen[0], vec![summary.clone(), history[2].clone()]);
    // The turn's messages begin after the question, now at index 1.
    assert_eq!(outcome.appended, 2..5);
    assert_eq!(conversation[..2], [summary, history[2].clone()]);
    assert!(conversation[2].as_assistant().unwrap().has_tool_calls());
    assert_eq!(conversation[4].text(), "The tickets are for May.");
    assert_eq!(outcome.messages(&conversation).len(), 3);
    // The summariser saw the history before the cut.
    assert_eq!(
        summarizer.requests()[0].conversation,
        summary_request(&history[..2])
    );
}

// ---------------------------------------------------------------------
// 5. Compacting before a request that reaches `compact_at`; over
// `context_tokens`.

#[tokio::test]
async fn a_tool_loop_whose_results_grow_compacts_before_the_request_that_reaches_compact_at() {
    let session = bind_tools([read_page()], ToolLimits::new().context_tokens(10_000)).await;
    let model = Measured::new(page_script(1..=6));
    let mut conversation = vec![Message::user("Read the log, page by page.")];
    let (outcome, events) = watched_turn(
        &session,
        &model,
        &mut conversation,
        None,
        BudgetPolicy::Fail,
    )
    .await;
    let outcome = outcome.expect("the turn completes");
    assert_eq!(outcome.answer(), Some("All pages read."));
    let overhead = model.overhead();
    let seen = model.conversations();
    assert_eq!(seen.len(), 7);
    assert_eq!(conversation.len(), 14);

    // Request 6 (five pages, 7,500 tokens of results) stays under 80% of
    // 10,000; request 7 (six pages) reaches it.
    let sixth = estimate(&seen[5]) + overhead;
    assert!(sixth < 8_000, "{sixth}");
    assert_eq!(outcome.compactions.len(), 1);
    let compaction = &outcome.compactions[0];
    let mut before = conversation[..13].to_vec();
    before.splice(compaction.replacement.clone(), compaction.removed.clone());
    assert_eq!(
        before[..11],
        seen[5][..],
        "what request 6 saw, then batch 6"
    );
    let tokens_before = estimate(&before) + overhead;
    assert!(tokens_before >= 8_000, "{tokens_before}");
    // Oldest first to half of the budget (5,000): pages 1 to 5, all but
    // the batch the model has not seen.
    assert_eq!(compaction.compactor, "elide_tool_results");
    assert_eq!(compaction.replaced, 2..11);
    assert_eq!(compaction.replacement, 2..11);
    assert_eq!(compaction.removed, before[2..11]);
    for page in 1..=5usize {
        let index = 2 * page;
        assert_eq!(
            conversation[index].text(),
            format!("{ELIDED_MARKER} {} bytes removed]", 2_000 * page),
            "page {page}"
        );
        assert_eq!(before[index].text().len(), 2_000 * page);
    }
    assert_eq!(conversation[12].text().len(), 12_000, "page 6 stays whole");
    assert_eq!(compaction.tokens_before, tokens_before);
    assert_eq!(compaction.tokens_after, estimate(&seen[6]) + overhead);
    assert!(compaction.tokens_after <= 5_000);
    // Request 7 saw the compacted conversation.
    assert_eq!(seen[6][..], conversation[..13]);
    assert_eq!(
        compaction_events(&events),
        (1..=6)
            .map(Seen::Request)
            .chain([compacted_event(compaction), Seen::Request(7),])
            .collect::<Vec<_>>()
    );
    assert_eq!(outcome.appended, 1..14);
    assert_every_call_answered(&conversation);
    assert_exports(&conversation);
}

/// A request, then one batch reading page 4 (8,000 bytes) under a budget
/// of 1,000 tokens: nothing before that batch can be compacted.
async fn over_the_context_budget(
    policy: BudgetPolicy,
) -> (Result<TurnOutcome, TurnError>, Vec<Message>, Measured) {
    let session = bind_tools([read_page()], ToolLimits::new().context_tokens(1_000)).await;
    let model = Measured::new(vec![
        ModelResponse::tool_calls([ToolCall::new("call_1", "read_page", r#"{"page":4}"#)])
            .with_usage(Usage::new(30, 5)),
        ModelResponse::answer("Unreachable."),
    ]);
    let mut conversation = vec![Message::user("Read page 4.")];
    let (result, _) = watched_turn(&session, &model, &mut conversation, None, policy).await;
    (result, conversation, model)
}

#[tokio::test]
async fn a_request_still_over_context_tokens_after_compacting_is_not_sent() {
    let (result, conversation, model) = over_the_context_budget(BudgetPolicy::Fail).await;
    let error = result.expect_err("over the context budget");
    let TurnError::Budget(error) = error else {
        panic!("{error:?}")
    };
    // The reported 30 input tokens correct the estimate of the first
    // request; the second is that plus the batch and its result.
    let first = estimate(&model.conversations()[0]) + model.overhead();
    let used = 30 + estimate(&conversation) + model.overhead() - first;
    assert_eq!(
        (
            error.budget,
            error.used,
            error.max,
            error.requests,
            error.usage
        ),
        (
            Budget::ContextTokens,
            used,
            Limit::at_most(1_000).unwrap(),
            1,
            Usage::new(30, 5)
        )
    );
    assert_eq!(
        error.to_string(),
        format!(
            "turn: budget reached (context_tokens): the next request would hold an estimated {used} input tokens, over at most 1000, after compacting; it was not sent"
        )
    );
    assert_eq!(model.conversations().len(), 1);
    assert_eq!(conversation.len(), 3, "the batch ran and is answered");
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_request_over_context_tokens_pauses_the_turn_with_the_pause_policy() {
    let (result, conversation, model) = over_the_context_budget(BudgetPolicy::Pause).await;
    let outcome = result.expect("paused");
    let TurnStatus::Paused(paused) = &outcome.status else {
        panic!("{:?}", outcome.status)
    };
    assert_eq!(paused.budget, Some(Budget::ContextTokens));
    assert!(paused.pending.is_empty());
    assert_eq!((paused.requests, paused.usage), (1, Usage::new(30, 5)));
    assert_eq!(paused.message_index, 3);
    assert_eq!(outcome.appended, 1..3);
    assert!(outcome.compactions.is_empty());
    assert_eq!(model.conversations().len(), 1);
    assert_eq!(conversation.len(), 3);
}

// ---------------------------------------------------------------------
// 3, in a turn: a refused compaction.

/// The small history's estimate is 90% of the budget: over `compact_at`,
/// under `context_tokens`.
#[tokio::test]
async fn a_refused_compaction_under_the_window_is_reported_and_the_turn_goes_on() {
    let history = small_history();
    let tokens = estimate(&history);
    let window = u32::try_from(tokens * 10 / 9).unwrap();
    let session = no_tools(ToolLimits::new().context_tokens(window)).await;
    let broken = Fixed::replacing(2..5, vec![history[2].clone(), history[3].clone()]);
    let model = Measured::new([ModelResponse::answer("Nothing else.")]);
    let mut conversation = history.clone();
    let (outcome, events) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&broken),
        BudgetPolicy::Fail,
    )
    .await;
    let outcome = outcome.expect("the turn goes on");
    assert_eq!(model.overhead(), 0, "no tools, no instructions");
    assert_eq!(
        compaction_events(&events),
        vec![
            Seen::Refused(
                "broken".into(),
                CompactionErrorKind::UnpairedToolCall,
                "compaction refused (broken): a tool call is not answered exactly once right after its message (at messages[2])".into(),
            ),
            Seen::Request(1),
        ]
    );
    assert!(outcome.compactions.is_empty());
    assert_eq!(model.conversations()[0], history);
    assert_eq!(conversation[..11], history[..]);
    assert_eq!(conversation.len(), 12);
    assert_eq!(outcome.appended, 11..12);
}

#[tokio::test]
async fn a_refused_compaction_over_the_window_fails_the_turn_and_keeps_the_history() {
    let history = small_history();
    let tokens = estimate(&history);
    let session =
        no_tools(ToolLimits::new().context_tokens(u32::try_from(tokens - 1).unwrap())).await;
    for (compactor, kind, index) in [
        (
            Fixed::replacing(2..5, vec![history[2].clone(), history[3].clone()]),
            CompactionErrorKind::UnpairedToolCall,
            Some(2),
        ),
        (
            Fixed::replacing(5..6, vec![Message::system("Summary.")]),
            CompactionErrorKind::SystemMessage,
            Some(5),
        ),
        (
            Fixed::new(|_| Err("down".into())),
            CompactionErrorKind::Failed,
            None,
        ),
    ] {
        let model = Measured::new([ModelResponse::answer("Unreachable.")]);
        let mut conversation = history.clone();
        let (result, events) = watched_turn(
            &session,
            &model,
            &mut conversation,
            Some(&compactor),
            BudgetPolicy::Fail,
        )
        .await;
        let error = result.expect_err("the compaction was needed");
        assert_eq!(
            error.to_string(),
            "turn: the conversation could not be compacted"
        );
        let TurnError::Compaction { source, usage } = error else {
            panic!("{error:?}")
        };
        assert_eq!((source.kind, source.index), (kind, index));
        assert_eq!(usage, Usage::default());
        assert_eq!(conversation, history);
        assert!(model.conversations().is_empty(), "nothing was sent");
        assert!(compaction_events(&events).is_empty(), "{events:?}");
    }
}

// ---------------------------------------------------------------------
// 6. The provider says the window is full.

/// A request, a call whose result is 8,000 bytes, the answer, a question.
fn one_long_result() -> Vec<Message> {
    vec![
        Message::user("Read the log."),
        Message::tool_calls(
            None,
            vec![ToolCall::new(
                "call_1",
                "read_file",
                r#"{"path":"app.log"}"#,
            )],
        ),
        Message::Tool(ToolResult::ok("call_1", "log line of app\n".repeat(500))),
        Message::assistant("The log is fine."),
        Message::user("Anything else?"),
    ]
}

fn full() -> ModelResponse {
    ModelResponse::answer("").with_finish_reason(FinishReason::ContextWindowExceeded)
}

fn elided_history() -> Vec<Message> {
    let mut history = one_long_result();
    let Message::Tool(result) = &history[2] else {
        unreachable!()
    };
    history[2] = Message::Tool(elided(result));
    history
}

#[tokio::test]
async fn a_full_window_compacts_once_and_asks_again() {
    let history = one_long_result();
    let elide = ElideToolResults::new();
    // With a compactor of its own, or a context budget (and then the
    // default compactor).
    for (limits, compactor) in [
        (ToolLimits::new(), Some(&elide as &dyn Compactor)),
        (ToolLimits::new().context_tokens(1_000_000), None),
    ] {
        let session = no_tools(limits).await;
        let model = Measured::new([full(), ModelResponse::answer("Nothing else.")]);
        let mut conversation = history.clone();
        let (outcome, events) = watched_turn(
            &session,
            &model,
            &mut conversation,
            compactor,
            BudgetPolicy::Fail,
        )
        .await;
        let outcome = outcome.expect("the second request is answered");
        assert_eq!(outcome.answer(), Some("Nothing else."));
        let seen = model.conversations();
        assert_eq!(seen, vec![history.clone(), elided_history()]);
        assert_eq!(outcome.compactions.len(), 1);
        let compaction = &outcome.compactions[0];
        assert_eq!(compaction.replaced, 2..3);
        assert_eq!(compaction.removed, history[2..3]);
        assert_eq!(compaction.tokens_before, estimate(&history));
        assert_eq!(compaction.tokens_after, estimate(&elided_history()));
        assert_eq!(
            compaction_events(&events),
            vec![
                Seen::Request(1),
                compacted_event(compaction),
                // Asked again: the same iteration.
                Seen::Request(1),
            ]
        );
        assert_eq!(conversation[..5], elided_history()[..]);
        assert_eq!(outcome.appended, 5..6);
    }
}

#[tokio::test]
async fn a_window_full_twice_in_a_row_fails_the_turn() {
    let history = one_long_result();
    let session = no_tools(ToolLimits::new()).await;
    let model = Measured::new([full(), full(), ModelResponse::answer("Unreachable.")]);
    let mut conversation = history.clone();
    let (result, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&ElideToolResults::new()),
        BudgetPolicy::Fail,
    )
    .await;
    assert!(
        matches!(result, Err(TurnError::ContextWindowExceeded { .. })),
        "{result:?}"
    );
    assert_eq!(model.conversations().len(), 2);
    // The one compaction stays: the history is valid, and shorter.
    assert_eq!(conversation, elided_history());
    assert_exports(&conversation);
}

#[tokio::test]
async fn without_a_compactor_or_a_context_budget_a_full_window_fails_at_once() {
    let history = one_long_result();
    let session = no_tools(ToolLimits::new()).await;
    let model = Measured::new([full(), ModelResponse::answer("Unreachable.")]);
    let mut conversation = history.clone();
    let (result, events) = watched_turn(
        &session,
        &model,
        &mut conversation,
        None,
        BudgetPolicy::Fail,
    )
    .await;
    assert!(
        matches!(result, Err(TurnError::ContextWindowExceeded { .. })),
        "{result:?}"
    );
    assert_eq!(model.conversations().len(), 1);
    assert_eq!(conversation, history);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, TurnEvent::Compacted { .. }))
    );
}

#[tokio::test]
async fn a_full_window_with_nothing_to_compact_or_a_broken_compactor_fails_the_turn() {
    let history = one_long_result();
    let session = no_tools(ToolLimits::new()).await;
    // Nothing to compact: the result is elided already.
    let model = Measured::new([full(), ModelResponse::answer("Unreachable.")]);
    let mut conversation = elided_history();
    let (result, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&ElideToolResults::new()),
        BudgetPolicy::Fail,
    )
    .await;
    assert!(
        matches!(result, Err(TurnError::ContextWindowExceeded { .. })),
        "{result:?}"
    );
    assert_eq!(conversation, elided_history());
    // A broken replacement: refused, the history kept.
    let model = Measured::new([full(), ModelResponse::answer("Unreachable.")]);
    let mut conversation = history.clone();
    let broken = Fixed::replacing(1..3, vec![history[2].clone()]);
    let (result, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&broken),
        BudgetPolicy::Fail,
    )
    .await;
    let Err(TurnError::Compaction { source, .. }) = result else {
        panic!("{result:?}")
    };
    assert_eq!(
        (source.kind, source.index),
        (CompactionErrorKind::UnpairedToolCall, Some(1))
    );
    assert_eq!(conversation, history);
}

fn prompt_too_long() -> ModelError {
    let mut error = ModelError::new(ModelErrorKind::Http { status: 400 });
    error.error_type = Some("invalid_request_error".into());
    error.message = Some("prompt is too long: 208310 tokens > 200000 maximum".into());
    error
}

#[tokio::test]
async fn a_context_window_error_compacts_once_and_asks_again() {
    let history = one_long_result();
    let session = no_tools(ToolLimits::new()).await;
    let model =
        Measured::new([ModelResponse::answer("Nothing else.")]).refusing(1, prompt_too_long);
    let mut conversation = history.clone();
    let (outcome, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&ElideToolResults::new()),
        BudgetPolicy::Fail,
    )
    .await;
    let outcome = outcome.expect("answered after compacting");
    assert_eq!(*model.refused.lock().unwrap(), vec![history.clone()]);
    assert_eq!(model.conversations(), vec![elided_history()]);
    assert_eq!(outcome.compactions.len(), 1);
    assert_eq!(outcome.answer(), Some("Nothing else."));

    // Twice: the turn fails.
    let model = Measured::new([ModelResponse::answer("Unreachable.")]).refusing(2, prompt_too_long);
    let mut conversation = history.clone();
    let (result, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&ElideToolResults::new()),
        BudgetPolicy::Fail,
    )
    .await;
    assert!(
        matches!(result, Err(TurnError::ContextWindowExceeded { .. })),
        "{result:?}"
    );
    assert_eq!(model.refused.lock().unwrap().len(), 2);

    // Without a compactor: the model's error, as before.
    let model = Measured::new([ModelResponse::answer("Unreachable.")]).refusing(1, prompt_too_long);
    let mut conversation = history.clone();
    let (result, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        None,
        BudgetPolicy::Fail,
    )
    .await;
    let Err(TurnError::Model { source, .. }) = result else {
        panic!("{result:?}")
    };
    assert!(source.exceeds_context_window());
    assert_eq!(conversation, history);
}

/// Several long results before the question, so that half of the
/// estimate keeps some of them.
fn four_long_results() -> Vec<Message> {
    let mut history = Vec::new();
    for page in 1..=4 {
        history.push(Message::user(format!("Read page {page}.")));
        history.push(Message::tool_calls(
            None,
            vec![ToolCall::new(format!("call_{page}"), "read_page", "{}")],
        ));
        history.push(Message::Tool(ToolResult::ok(
            format!("call_{page}"),
            "log line of app\n".repeat(250),
        )));
        history.push(Message::assistant(format!("Page {page} is fine.")));
    }
    history.push(Message::user("Now the fifth."));
    history
}

#[tokio::test]
async fn a_full_window_after_an_answered_request_compacts_to_half_of_the_corrected_estimate() {
    let session = bind_tools([read_page()], ToolLimits::new()).await;
    let script = |usage| {
        vec![
            ModelResponse::tool_calls([ToolCall::new("call_5", "read_page", r#"{"page":1}"#)])
                .with_usage(usage),
            full(),
            ModelResponse::answer("Done."),
        ]
    };
    // A first run learns the estimate of the first request; the second
    // reports exactly that, so the estimator is right and the correction 0.
    let dry = Measured::new(script(Usage::new(1, 1)));
    let mut conversation = four_long_results();
    let _ = watched_turn(
        &session,
        &dry,
        &mut conversation,
        Some(&ElideToolResults::new()),
        BudgetPolicy::Fail,
    )
    .await;
    let first = estimate(&dry.conversations()[0]) + dry.overhead();

    let model = Measured::new(script(Usage::new(first, 5)));
    let mut conversation = four_long_results();
    let (outcome, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&ElideToolResults::new()),
        BudgetPolicy::Fail,
    )
    .await;
    let outcome = outcome.expect("answered after compacting");
    let seen = model.conversations();
    assert_eq!(seen.len(), 3);
    let full_request = estimate(&seen[1]) + model.overhead();
    let compaction = &outcome.compactions[0];
    assert_eq!(
        compaction.tokens_before, full_request,
        "the request the provider refused"
    );
    // Half of it (about 2,350 of 4,700): the three oldest pages of about
    // 1,000 tokens each; the fourth stays.
    assert!(compaction.tokens_after <= full_request / 2);
    assert_eq!(compaction.replaced, 2..11);
    for index in [2, 6, 10] {
        assert!(seen[2][index].text().starts_with(ELIDED_MARKER), "{index}");
    }
    assert_eq!(seen[2][14], four_long_results()[14]);
}

// ---------------------------------------------------------------------
// 8, in a turn: the estimate corrected by the reported usage.

#[tokio::test]
async fn reported_input_tokens_far_above_the_estimate_make_the_turn_compact_earlier() {
    let run = |usage: Usage| async move {
        let session = bind_tools([read_page()], ToolLimits::new().context_tokens(10_000)).await;
        let mut script = page_script(1..=3);
        script[0] = script[0].clone().with_usage(usage);
        let model = Measured::new(script);
        let mut conversation = vec![Message::user("Read the log, page by page.")];
        let (outcome, events) = watched_turn(
            &session,
            &model,
            &mut conversation,
            None,
            BudgetPolicy::Fail,
        )
        .await;
        (
            outcome.expect("the turn completes"),
            events,
            model,
            conversation,
        )
    };
    // As estimated: three pages (3,000 tokens) never reach 8,000.
    let (outcome, _, _, _) = run(Usage::default()).await;
    assert!(outcome.compactions.is_empty());

    // The provider says the first request held 6,000 tokens.
    let (outcome, events, model, conversation) = run(Usage::new(6_000, 10)).await;
    let seen = model.conversations();
    let overhead = model.overhead();
    let correction = 6_000 - (estimate(&seen[0]) + overhead);
    assert_eq!(outcome.compactions.len(), 1);
    let compaction = &outcome.compactions[0];
    let mut before = conversation[..7].to_vec();
    before.splice(compaction.replacement.clone(), compaction.removed.clone());
    // Before the fourth request: 3,000 tokens of pages and the 5,900 the
    // estimator missed.
    assert_eq!(
        compaction.tokens_before,
        estimate(&before) + overhead + correction
    );
    assert!(compaction.tokens_before >= 8_000);
    let third = estimate(&seen[2]) + overhead + correction;
    assert!(third < 8_000, "{third}");
    assert_eq!(
        compaction.replaced,
        2..5,
        "pages 1 and 2, not the unseen third"
    );
    assert_eq!(
        compaction.tokens_after,
        estimate(&seen[3]) + overhead + correction
    );
    assert_eq!(seen[3][..], conversation[..7]);
    assert_eq!(
        compaction_events(&events)[3..],
        [compacted_event(compaction), Seen::Request(4)]
    );
}

// ---------------------------------------------------------------------
// 6, over HTTP: OpenAI's 400 for a full window.

#[cfg(feature = "openai")]
#[tokio::test]
async fn an_openai_400_for_a_full_window_compacts_and_the_next_request_holds_the_compacted_messages()
 {
    use agent_loop::model::OpenAiModel;
    use agent_loop::wire::openai;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({ "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded"
        } })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Nothing else." }, "finish_reason": "stop" }],
            "usage": { "prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43 }
        })))
        .mount(&server)
        .await;
    let model = OpenAiModel::new("gpt-4o")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(crate::model_common::FAKE_KEY);
    let session = no_tools(ToolLimits::new()).await;
    let history = one_long_result();
    let mut conversation = history.clone();
    let (outcome, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        Some(&ElideToolResults::new()),
        BudgetPolicy::Fail,
    )
    .await;
    let outcome = outcome.expect("answered after compacting");
    assert_eq!(outcome.answer(), Some("Nothing else."));
    assert_eq!(outcome.compactions.len(), 1);
    assert_eq!(outcome.stats.usage, Usage::new(40, 3));
    let bodies = crate::model_common::bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let exported = |conversation: &[Message]| {
        serde_json::to_value(openai::export_messages(conversation).messages).unwrap()
    };
    assert_eq!(bodies[0]["messages"], exported(&history));
    assert_eq!(bodies[1]["messages"], exported(&elided_history()));
    assert_eq!(
        bodies[1]["messages"][2]["content"],
        json!(format!("{ELIDED_MARKER} 8000 bytes removed]"))
    );
    assert_eq!(conversation[..5], elided_history()[..]);
}

#[tokio::test]
async fn over_context_tokens_after_a_full_window_compaction_the_request_is_not_sent() {
    // The provider reports that the refused request held 10,000 tokens, far
    // above the estimate: after eliding, the corrected estimate is still
    // over the budget of 3,000.
    let history = one_long_result();
    let session = no_tools(ToolLimits::new().context_tokens(3_000)).await;
    let model = Measured::new([
        full().with_usage(Usage::new(10_000, 0)),
        ModelResponse::answer("Unreachable."),
    ]);
    let mut conversation = history.clone();
    let (result, _) = watched_turn(
        &session,
        &model,
        &mut conversation,
        None,
        BudgetPolicy::Fail,
    )
    .await;
    let Err(TurnError::Budget(error)) = result else {
        panic!("{result:?}")
    };
    let used = estimate(&elided_history()) + 10_000 - estimate(&history);
    assert_eq!(
        (error.budget, error.used, error.max, error.requests),
        (
            Budget::ContextTokens,
            used,
            Limit::at_most(3_000).unwrap(),
            1
        )
    );
    assert_eq!(model.conversations().len(), 1);
    assert_eq!(conversation, elided_history());
}

/// Cancels the turn, then never answers.
struct Stalling(tokio_util::sync::CancellationToken);

#[async_trait]
impl Compactor for Stalling {
    fn name(&self) -> &str {
        "stalling"
    }

    async fn compact(
        &self,
        _request: CompactionRequest<'_>,
    ) -> Result<Option<Replacement>, BoxError> {
        self.0.cancel();
        futures::future::pending::<()>().await;
        Ok(None)
    }
}

#[tokio::test]
async fn a_turn_cancelled_while_compacting_is_interrupted_with_its_history_unchanged() {
    let history = small_history();
    let session = no_tools(ToolLimits::new().context_tokens(100)).await;
    let token = tokio_util::sync::CancellationToken::new();
    let stalling = Stalling(token.clone());
    let model = Measured::new([ModelResponse::answer("Unreachable.")]);
    let mut conversation = history.clone();
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder()
                .cancellation(&token)
                .compactor(&stalling)
                .build(),
        )
        .await
        .expect("interrupted, not failed");
    assert_eq!(outcome.status, TurnStatus::Interrupted);
    assert!(outcome.compactions.is_empty());
    assert_eq!(conversation, history);
    assert!(model.conversations().is_empty());
}

#[tokio::test]
async fn an_elided_result_says_what_it_held_besides_text() {
    let block = ProviderPart::new(
        WireFormat::AnthropicMessages,
        json!({ "type": "search_result", "source": "https://example.com", "title": "T", "content": [] }),
    );
    let history = vec![
        Message::user("Search."),
        Message::tool_calls(None, vec![ToolCall::new("call_1", "search", "{}")]),
        Message::Tool(ToolResult::with_content(
            "call_1",
            vec![
                ContentPart::text("see"),
                ContentPart::Provider(block),
                ContentPart::Image(ImagePart::url("https://example.com/a.png")),
            ],
            false,
        )),
        Message::assistant("Found it."),
        Message::user("More?"),
    ];
    let mut conversation = history.clone();
    context::compact(
        &mut conversation,
        &ElideToolResults::new(),
        &TokenEstimator::new(),
        0,
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        conversation[2].text(),
        format!("{ELIDED_MARKER} 3 bytes and 1 image and 1 other part removed]")
    );
    assert_exports(&conversation);
}

/// `compact` with `compactor` on `conversation` (a target of 1 token, so
/// any smaller replacement is taken): the error, the conversation kept.
async fn refused_on(conversation: &[Message], compactor: &dyn Compactor) -> CompactionError {
    let mut compacted = conversation.to_vec();
    let error = context::compact(&mut compacted, compactor, &TokenEstimator::new(), 1)
        .await
        .expect_err("refused");
    assert_eq!(compacted, conversation, "the history is kept");
    error
}

fn long_result(id: &str) -> Message {
    Message::Tool(ToolResult::ok(id, "line\n".repeat(500)))
}

#[tokio::test]
async fn system_messages_inside_the_range_come_back_unchanged_or_the_compaction_is_refused() {
    let conversation = vec![
        Message::system("Be brief."),
        Message::user("Read both."),
        Message::tool_calls(None, vec![ToolCall::new("call_1", "read", "{}")]),
        long_result("call_1"),
        Message::system("From now on, answer in French."),
        Message::tool_calls(None, vec![ToolCall::new("call_2", "read", "{}")]),
        long_result("call_2"),
        Message::assistant("Both read."),
        Message::user("And now?"),
    ];
    // The default compactor copies the system message it passes over.
    let mut elided = conversation.clone();
    let compaction = context::compact(
        &mut elided,
        &ElideToolResults::new(),
        &TokenEstimator::new(),
        1,
    )
    .await
    .expect("accepted")
    .expect("compacted");
    assert_eq!(compaction.replaced, 3..7);
    assert_eq!(elided[4], conversation[4]);
    assert_eq!(export_violations(&elided), Vec::<String>::new());

    // Dropping it, or changing it, is refused at its place.
    let dropped = Fixed::replacing(1..8, vec![Message::user("Summary: both logs read.")]);
    let error = refused_on(&conversation, &dropped).await;
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::SystemMessage, None)
    );
    let changed = Fixed::replacing(
        4..7,
        vec![
            Message::system("Answer in English."),
            conversation[5].clone(),
            long_result("call_2"),
        ],
    );
    let error = refused_on(&conversation, &changed).await;
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::SystemMessage, Some(4))
    );

    // `Summarize` keeps it, before its summary.
    let summarize = Summarize::new(ScriptedModel::new([ModelResponse::answer(
        "Both logs read.",
    )]));
    let mut summarized = conversation.clone();
    let compaction = context::compact(&mut summarized, &summarize, &TokenEstimator::new(), 1)
        .await
        .expect("accepted")
        .expect("compacted");
    assert_eq!(compaction.replaced, 1..8);
    assert_eq!(summarized[1], conversation[4]);
    assert_eq!(
        summarized[2].text(),
        format!("{SUMMARY_HEADING}\n\nBoth logs read.")
    );
    assert_eq!(summarized[3].text(), "And now?");
}

#[tokio::test]
async fn a_server_tools_use_stays_with_its_result_and_a_kept_call_is_unchanged() {
    let server = |value: Value| {
        ContentPart::Provider(ProviderPart::new(WireFormat::AnthropicMessages, value))
    };
    let searched = Message::Assistant(AssistantMessage::new(vec![
        server(
            json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "rust"}}),
        ),
        server(
            json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [{"type": "web_search_result", "url": "https://www.rust-lang.org", "title": "Rust", "encrypted_content": "x".repeat(4_000)}]}),
        ),
        ContentPart::text("Rust is a language."),
    ]));
    let conversation = vec![
        Message::user("What is Rust?"),
        searched.clone(),
        Message::user("Read the file."),
        Message::tool_calls(
            None,
            vec![ToolCall::new("call_1", "read", r#"{"path": "a.txt"}"#)],
        ),
        long_result("call_1"),
        Message::assistant("Read."),
        Message::user("Thanks."),
    ];
    let Message::Assistant(mut orphaned) = searched else {
        unreachable!()
    };
    orphaned.content.remove(1);
    let error = refused_on(
        &conversation,
        &Fixed::replacing(1..2, vec![Message::Assistant(orphaned)]),
    )
    .await;
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::ChangedBatch, Some(1))
    );
    // Dropped whole, the search goes: that is allowed.
    let mut compacted = conversation.clone();
    context::compact(
        &mut compacted,
        &Fixed::replacing(1..2, vec![Message::assistant("Rust is a language.")]),
        &TokenEstimator::new(),
        1,
    )
    .await
    .expect("accepted");
    assert_eq!(export_violations(&compacted), Vec::<String>::new());

    for (name, call) in [
        (
            "renamed",
            ToolCall::new("call_1", "write", r#"{"path": "a.txt"}"#),
        ),
        (
            "new arguments",
            ToolCall::new("call_1", "read", r#"{"path": "b.txt"}"#),
        ),
    ] {
        let error = refused_on(
            &conversation,
            &Fixed::replacing(
                3..5,
                vec![
                    Message::tool_calls(None, vec![call]),
                    Message::Tool(ToolResult::ok("call_1", "short")),
                ],
            ),
        )
        .await;
        assert_eq!(
            (error.kind, error.index),
            (CompactionErrorKind::ChangedBatch, Some(3)),
            "{name}"
        );
    }
}

#[test]
fn what_the_model_has_not_seen_is_not_editable() {
    let call = |id: &str| Message::tool_calls(None, vec![ToolCall::new(id, "read", "{}")]);
    let result = |id: &str| Message::Tool(ToolResult::ok(id, "ok"));
    // Two user messages the model has not answered, and the batch before
    // them whose results it never saw.
    let conversation = vec![
        Message::system("Be brief."),
        Message::user("One."),
        call("call_1"),
        result("call_1"),
        Message::assistant("Done."),
        call("call_2"),
        result("call_2"),
        Message::user("Two."),
        Message::user("Three."),
    ];
    assert_eq!(context::editable(&conversation), 1..5);
    // A trailing answer may go; a trailing batch may not.
    assert_eq!(context::editable(&conversation[..5]), 1..5);
    assert_eq!(context::editable(&conversation[..7]), 1..5);
    assert_eq!(context::editable(&conversation[..6]), 1..5);
}

#[tokio::test]
async fn a_summary_cut_off_by_the_output_limit_is_refused() {
    let conversation = vec![
        Message::user("Plan a trip. ".repeat(100)),
        Message::assistant("A plan. ".repeat(100)),
        Message::user("And now?"),
    ];
    let summarize = Summarize::new(ScriptedModel::new([ModelResponse::answer(
        "The user wants a tr",
    )
    .with_finish_reason(FinishReason::Length)]));
    let error = refused_on(&conversation, &summarize).await;
    assert_eq!(error.kind, CompactionErrorKind::Failed);
    assert!(
        std::error::Error::source(&error)
            .is_some_and(|cause| cause.to_string().contains("cut off")),
        "{error}"
    );
}

#[tokio::test]
async fn a_pause_follows_a_compaction_made_before_its_resume() {
    use agent_loop::gate::{GateCall, GateDecision};
    use agent_loop::turn::{CallDecision, Resume, ResumeErrorKind};
    let writes = Arc::new(AtomicUsize::new(0));
    let session = Definition::builder()
        .name("writer")
        .tool(crate::turn_common::counting_tool(
            "write_file",
            Arc::clone(&writes),
        ))
        .gate(|_call: &GateCall<'_>| GateDecision::ask("writes"))
        .build()
        .validate()
        .expect("valid");
    let session = crate::turn_common::bind(&session).await;
    let mut conversation = vec![
        Message::user("Plan it. ".repeat(200)),
        Message::assistant("The plan. ".repeat(200)),
        Message::user("Write it."),
    ];
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new("call_1", "write_file", "{}")]),
        ModelResponse::answer("Written."),
    ]);
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("pauses");
    let TurnStatus::Paused(mut paused) = outcome.status else {
        panic!("not paused");
    };
    assert_eq!(paused.message_index, 3);
    // Between the pause and its resume, the old exchange is summarised.
    let summarize = Summarize::new(ScriptedModel::new([ModelResponse::answer(
        "A plan was made.",
    )]));
    let compaction = context::compact(&mut conversation, &summarize, &TokenEstimator::new(), 1)
        .await
        .expect("accepted")
        .expect("compacted");
    // Up to the paused message, which stays with its pending call.
    assert_eq!(compaction.replaced, 0..3);

    let stale = Resume::new((*paused).clone(), [CallDecision::approve("call_1")]);
    let error = session
        .run_turn(
            &model,
            &mut conversation.clone(),
            TurnOptions::builder().resume(&stale).build(),
        )
        .await
        .expect_err("the index moved");
    assert!(matches!(error, TurnError::Resume(ref error) if error.kind == ResumeErrorKind::Stale));

    assert!(paused.follow(&compaction));
    assert_eq!(paused.message_index, 1);
    let resume = Resume::new(*paused, [CallDecision::approve("call_1")]);
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().resume(&resume).build(),
        )
        .await
        .expect("completes");
    assert_eq!(outcome.answer(), Some("Written."));
    assert_eq!(writes.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn each_compaction_of_a_long_turn_starts_from_the_conversation_as_it_is() {
    // Ten 4 KB pages read one by one under a 3,000-token window: the turn
    // compacts several times, and each estimate counts the conversation
    // as it is then (messages counted once, recounted after a compaction).
    let read = tool::Definition::from_fn(
        ToolInfo::without_parameters("read_page", "Reads the next page."),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("page text\n".repeat(400)) },
    );
    let session = bind_tools([read], ToolLimits::new().context_tokens(3_000)).await;
    let mut script: Vec<ModelResponse> = (0..10)
        .map(|page| {
            ModelResponse::tool_calls([ToolCall::new(format!("call_{page}"), "read_page", "{}")])
        })
        .collect();
    script.push(ModelResponse::answer("Read them all."));
    let model = ScriptedModel::new(script);
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = vec![Message::user("Read every page.")];
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .expect("completes");
    assert!(
        outcome.compactions.len() >= 2,
        "{}",
        outcome.compactions.len()
    );
    let estimator = TokenEstimator::new();
    let infos: Vec<ToolInfo> = session
        .tools()
        .iter()
        .map(|tool| tool.info().clone())
        .collect();
    let overhead = estimator.request(&[], None, &infos);
    let requests = model.requests();
    let mut compactions = outcome.compactions.iter();
    // Requests sent so far: a compaction comes before the next one.
    let mut sent_so_far = 0;
    let mut seen = 0;
    while let Ok(event) = received.try_recv() {
        let (tokens_before, tokens_after, replaced, replacement) = match event {
            TurnEvent::ModelRequestStarted { .. } => {
                sent_so_far += 1;
                continue;
            }
            TurnEvent::Compacted {
                tokens_before,
                tokens_after,
                replaced,
                replacement,
                ..
            } => (tokens_before, tokens_after, replaced, replacement),
            _ => continue,
        };
        let compaction = compactions.next().expect("one compaction per event");
        assert_eq!(
            (&compaction.replaced, &compaction.replacement),
            (&replaced, &replacement)
        );
        // The next request was sent the compacted conversation; with the
        // replacement put back, it is the conversation before.
        let sent = &requests[sent_so_far].conversation;
        let mut before = sent.clone();
        before.splice(replacement.clone(), compaction.removed.iter().cloned());
        assert_eq!(tokens_before, estimator.messages(&before) + overhead);
        assert_eq!(tokens_after, estimator.messages(sent) + overhead);
        seen += 1;
    }
    assert_eq!(seen, outcome.compactions.len());
}

#[tokio::test]
async fn a_replacement_that_leaves_a_model_turn_out_of_order_is_refused() {
    let conversation = vec![
        Message::user("Read it."),
        Message::tool_calls(None, vec![ToolCall::new("call_1", "read", "{}")]),
        long_result("call_1"),
        Message::assistant("Read."),
        Message::user("And the other one."),
        Message::tool_calls(None, vec![ToolCall::new("call_2", "read", "{}")]),
        long_result("call_2"),
        Message::assistant("Read too."),
        Message::user("Thanks."),
    ];
    // Without the first user message, the conversation would start with
    // a model turn (Gemini refuses that).
    let error = refused_on(&conversation, &Fixed::replacing(0..1, Vec::new())).await;
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::MessageOrder, Some(0))
    );
    // Without the user message between an answer and the next batch, a
    // model turn with calls would follow a model turn.
    let error = refused_on(&conversation, &Fixed::replacing(4..5, Vec::new())).await;
    assert_eq!(
        (error.kind, error.index),
        (CompactionErrorKind::MessageOrder, Some(4))
    );
    // Replacing them with a user summary keeps the order.
    let mut compacted = conversation.clone();
    context::compact(
        &mut compacted,
        &Fixed::replacing(
            0..5,
            vec![Message::user("Summary: the first file was read.")],
        ),
        &TokenEstimator::new(),
        1,
    )
    .await
    .expect("accepted");
    assert_eq!(export_violations(&compacted), Vec::<String>::new());
}

/// What `Summarize` sends for `replaced`: one user message, the request
/// and the transcript.
fn summary_request(replaced: &[Message]) -> Vec<Message> {
    vec![Message::user(format!(
        "{SUMMARY_REQUEST}\n\n{}",
        summary_transcript(replaced)
    ))]
}

#[test]
fn the_summary_transcript_names_every_message_and_call_and_sends_no_tool_block() {
    let image = ContentPart::Image(ImagePart::url("https://example.com/a.png"));
    let messages = vec![
        Message::system("Be brief."),
        Message::User(UserMessage::new(vec![ContentPart::text("Look: "), image])),
        Message::tool_calls(
            Some("Reading.".into()),
            vec![
                ToolCall::new("call_1", "read", r#"{"path":"a"}"#),
                ToolCall::new("call_2", "read", "{}"),
            ],
        ),
        Message::Tool(ToolResult::ok("call_1", "text of a")),
        Message::Tool(ToolResult::error("call_2", "no path")),
    ];
    assert_eq!(
        summary_transcript(&messages),
        "System: Be brief.\n\nUser: Look: [an image]\n\nAssistant: Reading.\n\n\
         Assistant called `read` (call_1) with {\"path\":\"a\"}\n\n\
         Assistant called `read` (call_2) with {}\n\n\
         Result of `read` (call_1): text of a\n\n\
         Result of `read` (call_2), an error: no path"
    );
}
