//! [`Summarize`]: the built-in compactor that replaces the oldest
//! exchanges with a summary a model writes.

use async_trait::async_trait;

use crate::context::{CompactionRequest, Compactor, Replacement};
use crate::conversation::{ContentPart, FinishReason, Message};
use crate::model_api::{Model, ModelRequest};
use crate::tool::BoxError;

/// The instructions a [`Summarize`] request is sent with, unless set.
pub const SUMMARY_INSTRUCTIONS: &str = "You summarise a conversation between a user, an assistant and the tools it called, so that the assistant can go on from the summary alone. Keep the user's goals and requests, decisions taken, facts learned from tool results (names, paths, numbers, identifiers), work done and work left. Leave out pleasantries. Write plain prose or short lists, no preamble.";

/// How the one user message of a [`Summarize`] request begins; the
/// [`summary_transcript`] of the replaced messages follows it.
pub const SUMMARY_REQUEST: &str =
    "Summarise this conversation, as your instructions say. Answer with the summary only.";

/// How the summary begins in the conversation.
pub const SUMMARY_HEADING: &str = "[Summary of the earlier conversation]";

/// Tokens a summary is expected to take, when choosing how much to replace.
const SUMMARY_TOKENS: u64 = 1_000;

/// Replaces the oldest exchanges with a summary `model` writes: one user
/// message beginning with [`SUMMARY_HEADING`], after the system messages
/// the replaced exchanges held (kept as they were, in order). A summary
/// cut off by the output limit ([`FinishReason::Length`]) is refused.
///
/// It replaces whole units only, never half of one: a user message, an
/// assistant's answer, or a batch (an assistant message with tool calls and
/// all their results). It takes the fewest oldest units whose replacement
/// brings the conversation to the target (counting
/// 1,000 tokens for the summary), or every unit it may when none does;
/// the messages the turn must keep (see
/// [`context::editable`](crate::context::editable)) stay. The model is sent
/// one user message: [`SUMMARY_REQUEST`], then the
/// [`summary_transcript`] of the messages before the cut, with
/// [`SUMMARY_INSTRUCTIONS`] (or [`instructions`](Self::instructions)) and
/// no tools; its usage is the compaction's, added to the turn's. It may be
/// the turn's model or a cheaper one. A transcript rather than the
/// messages themselves, because providers refuse tool calls and results
/// in a request that declares no tools (Amazon Bedrock: "The toolConfig
/// field must be defined when using toolUse and toolResult content
/// blocks"), and signed reasoning from another model.
///
/// Its name is `summarize`. Errors: the model's error, or an empty
/// summary, fail the compaction ([`CompactionErrorKind::Failed`](crate::context::CompactionErrorKind::Failed)).
///
/// ```
/// use agent_loop_core::context::{self, TokenEstimator};
/// use agent_loop_core::conversation::{Message, ModelResponse};
/// use agent_loop_core::turn::{ScriptedModel, Summarize};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut conversation = vec![
///     Message::user("Plan a trip to Rome. ".repeat(50)),
///     Message::assistant("Here is a plan. ".repeat(50)),
///     Message::user("And now Paris?"),
/// ];
/// let summarize = Summarize::new(ScriptedModel::new([ModelResponse::answer("Rome was planned.")]));
/// let compaction = context::compact(&mut conversation, &summarize, &TokenEstimator::new(), 100)
///     .await?
///     .expect("compacted");
/// assert_eq!(compaction.replaced, 0..2);
/// assert!(conversation[0].text().ends_with("Rome was planned."));
/// assert_eq!(conversation[1].text(), "And now Paris?");
/// # Ok::<_, context::CompactionError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
pub struct Summarize<M> {
    model: M,
    instructions: String,
}

impl<M: Model> Summarize<M> {
    /// Summaries written by `model`, with [`SUMMARY_INSTRUCTIONS`].
    pub fn new(model: M) -> Self {
        Self {
            model,
            instructions: SUMMARY_INSTRUCTIONS.to_owned(),
        }
    }

    /// Sends `instructions` instead of [`SUMMARY_INSTRUCTIONS`].
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = instructions.into();
        self
    }
}

#[async_trait]
impl<M: Model> Compactor for Summarize<M> {
    fn name(&self) -> &str {
        "summarize"
    }

    async fn compact(
        &self,
        request: CompactionRequest<'_>,
    ) -> Result<Option<Replacement>, BoxError> {
        let CompactionRequest {
            conversation,
            editable,
            tokens,
            target_tokens,
            estimator,
        } = request;
        // Where a unit begins: any message but a result (a result belongs
        // to the batch of the assistant message before it).
        let cuts = (editable.start + 1..=editable.end).filter(|&cut| {
            cut == conversation.len() || !matches!(conversation[cut], Message::Tool(_))
        });
        let mut chosen = None;
        let mut replaced = 0;
        for cut in cuts {
            replaced += estimator.messages(&conversation[chosen.unwrap_or(editable.start)..cut]);
            chosen = Some(cut);
            if tokens.saturating_sub(replaced) + SUMMARY_TOKENS <= target_tokens {
                break;
            }
        }
        let Some(cut) = chosen else {
            return Ok(None);
        };
        let asked = [Message::user(format!(
            "{SUMMARY_REQUEST}\n\n{}",
            summary_transcript(&conversation[..cut])
        ))];
        let response = self
            .model
            .respond(ModelRequest::new(&asked).instructions(&self.instructions))
            .await?;
        let summary = response.message.text();
        if summary.trim().is_empty() {
            return Err("the summarising model answered with no text".into());
        }
        if response.finish_reason == FinishReason::Length {
            return Err("the summary was cut off by the model's output limit".into());
        }
        // The system messages of the replaced exchanges stay, in order,
        // before the summary: instructions are not summarised away.
        let mut messages: Vec<Message> = conversation[editable.start..cut]
            .iter()
            .filter(|message| matches!(message, Message::System(_)))
            .cloned()
            .collect();
        messages.push(Message::user(format!(
            "{SUMMARY_HEADING}\n\n{}",
            summary.trim()
        )));
        Ok(Some(
            Replacement::new(editable.start..cut, messages).with_usage(response.usage),
        ))
    }
}

/// `messages` as plain text for a summarising model, one paragraph each:
/// `System: …`, `User: …`, `Assistant: …`, ``Assistant called `name`
/// (id) with {arguments}`` for each tool call, ``Result of `name` (id): …``
/// (``…, an error: …`` for an error result). Images and provider blocks
/// are named (`[an image]`, `[a provider block]`), reasoning is left out.
///
/// ```
/// use agent_loop_core::conversation::{Message, ToolCall, ToolResult};
/// use agent_loop_core::turn::summary_transcript;
///
/// let messages = [
///     Message::user("Weather in Paris?"),
///     Message::tool_calls(None, vec![ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#)]),
///     Message::Tool(ToolResult::ok("call_1", "sunny")),
///     Message::assistant("It is sunny."),
/// ];
/// assert_eq!(
///     summary_transcript(&messages),
///     "User: Weather in Paris?\n\nAssistant called `get_weather` (call_1) with {\"city\":\"Paris\"}\n\n\
///      Result of `get_weather` (call_1): sunny\n\nAssistant: It is sunny."
/// );
/// ```
pub fn summary_transcript(messages: &[Message]) -> String {
    let mut names: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    let mut paragraphs: Vec<String> = Vec::new();
    let parts_text = |parts: &[ContentPart]| {
        let mut text = String::new();
        for part in parts {
            match part {
                ContentPart::Text(part) => text.push_str(&part.text),
                ContentPart::Image(_) => text.push_str("[an image]"),
                ContentPart::Provider(_) => text.push_str("[a provider block]"),
                _ => {}
            }
        }
        text
    };
    for message in messages {
        match message {
            Message::System(system) => paragraphs.push(format!("System: {}", system.text)),
            Message::User(user) => paragraphs.push(format!("User: {}", parts_text(&user.content))),
            Message::Assistant(assistant) => {
                let text = parts_text(&assistant.content);
                if !text.trim().is_empty() {
                    paragraphs.push(format!("Assistant: {text}"));
                }
                for call in assistant.tool_calls() {
                    names.insert(&call.id, &call.name);
                    paragraphs.push(format!(
                        "Assistant called `{}` ({}) with {}",
                        call.name, call.id, call.arguments
                    ));
                }
            }
            Message::Tool(result) => {
                let name = names
                    .get(result.tool_call_id.as_str())
                    .copied()
                    .unwrap_or("a tool");
                let error = if result.is_error { ", an error" } else { "" };
                paragraphs.push(format!(
                    "Result of `{name}` ({}){error}: {}",
                    result.tool_call_id,
                    parts_text(&result.content)
                ));
            }
        }
    }
    paragraphs.join("\n\n")
}
