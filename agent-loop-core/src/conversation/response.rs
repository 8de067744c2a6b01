//! [`ModelResponse`]: what one model request returns, with its
//! [`FinishReason`] and [`Usage`].

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use crate::conversation::{AssistantMessage, ToolCall};

/// What the model answered to one request.
///
/// A message with tool calls is a batch: it counts one iteration and one
/// call per tool call. A message without tool calls is a final answer and
/// ends the turn.
///
/// ```
/// use agent_loop_core::conversation::{FinishReason, ModelResponse, ToolCall};
///
/// let batch = ModelResponse::tool_calls([ToolCall::new("call_1", "list_files", "{}")]);
/// assert_eq!(batch.finish_reason, FinishReason::ToolCalls);
/// let answer = ModelResponse::answer("There are 3 files.");
/// assert_eq!(answer.message.text(), "There are 3 files.");
/// assert_eq!(answer.finish_reason, FinishReason::Stop);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelResponse {
    /// The assistant message, appended to the conversation as it is (its
    /// reasoning and provider parts included), after the turn runner has
    /// replaced empty or repeated tool call ids.
    pub message: AssistantMessage,
    /// Why the model stopped. [`FinishReason::Length`] means the output
    /// limit cut it off: the turn runner then runs none of its tool calls.
    pub finish_reason: FinishReason,
    /// Tokens used by this request.
    pub usage: Usage,
}

impl ModelResponse {
    /// A response of `message`; the finish reason is
    /// [`ToolCalls`](FinishReason::ToolCalls) when it has tool calls,
    /// [`Stop`](FinishReason::Stop) otherwise; no usage.
    pub fn new(message: AssistantMessage) -> Self {
        let finish_reason = if message.has_tool_calls() {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        Self {
            message,
            finish_reason,
            usage: Usage::default(),
        }
    }

    /// A final answer with this text.
    pub fn answer(text: impl Into<String>) -> Self {
        Self::new(AssistantMessage::from_text(text))
    }

    /// A batch of tool calls without text.
    pub fn tool_calls(tool_calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self::new(AssistantMessage::with_tool_calls(
            None,
            tool_calls.into_iter().collect(),
        ))
    }

    /// The same response with another finish reason.
    pub fn with_finish_reason(mut self, finish_reason: FinishReason) -> Self {
        self.finish_reason = finish_reason;
        self
    }

    /// The same response with this usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

/// Why the model stopped generating.
///
/// | variant | OpenAI `finish_reason` | Anthropic `stop_reason` |
/// | --- | --- | --- |
/// | `Stop` | `stop` | `end_turn`, `stop_sequence` |
/// | `ToolCalls` | `tool_calls`, `function_call` | `tool_use` |
/// | `Length` | `length` | `max_tokens` |
/// | `ContextWindowExceeded` | – | `model_context_window_exceeded` |
/// | `ContentFilter` | `content_filter` | – |
/// | `Refusal` | a `refusal` message | `refusal` |
/// | `Paused` | – | `pause_turn` |
/// | `Other` | anything else | anything else |
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The model asked for tool calls.
    ToolCalls,
    /// The output token limit cut the response off: its last tool call's
    /// arguments may be incomplete.
    Length,
    /// The conversation filled the model's context window: no room was
    /// left to answer (Anthropic's `model_context_window_exceeded`).
    /// Asking again cannot help, so the turn runner ends the turn with
    /// [`TurnError::ContextWindowExceeded`](crate::turn::TurnError::ContextWindowExceeded).
    ContextWindowExceeded,
    /// The provider paused a long turn (Anthropic's `pause_turn`, while its
    /// server tools run): the message is to be sent back as it is, and the
    /// model goes on. The turn runner does so, counting an iteration.
    Paused,
    /// The provider's content filter withheld output.
    ContentFilter,
    /// The model refused to answer.
    Refusal,
    /// Any other reason, as the provider spelled it.
    Other(String),
}

/// Tokens used, as counts. A field the provider did not report is `0`.
///
/// Sums with `+` and `+=`: the turn's stats add up every request's usage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Every input token of the request, cached or not (OpenAI
    /// `prompt_tokens`; Anthropic `input_tokens` +
    /// `cache_read_input_tokens` + `cache_creation_input_tokens`).
    pub input_tokens: u64,
    /// Every output token, reasoning included (OpenAI `completion_tokens`;
    /// Anthropic `output_tokens`).
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache (OpenAI
    /// `prompt_tokens_details.cached_tokens`, DeepSeek
    /// `prompt_cache_hit_tokens`; Anthropic `cache_read_input_tokens`).
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache (Anthropic
    /// `cache_creation_input_tokens`).
    pub cache_write_tokens: u64,
    /// Output tokens spent reasoning (OpenAI
    /// `completion_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: u64,
}

impl Usage {
    /// `input_tokens` in and `output_tokens` out, nothing cached or spent
    /// reasoning.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            ..Self::default()
        }
    }

    /// `input_tokens + output_tokens`, saturating at `u64::MAX`: what the
    /// `total_tokens` budget of [`ToolLimits`](crate::ToolLimits) counts.
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl Add for Usage {
    type Output = Usage;

    /// Field by field, saturating at `u64::MAX`.
    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_add(other.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(other.cache_write_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(other.reasoning_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        *self = *self + other;
    }
}
