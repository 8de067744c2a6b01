//! A `message` response body, parsed into a [`ModelResponse`].

use serde::Deserialize;
use serde_json::Value;

use super::FORMAT;
use super::messages::{assistant_message, parse_content};
use super::types::ResponseUsage;
use crate::wire::decode::{Checked, Reading, check_depth, decode};
use crate::wire::error::{WireError, WireErrorKind};
use agent_loop_core::conversation::{FinishReason, ModelResponse, Usage};

/// A response's [`Usage`]: `input_tokens` is the sum of the three input
/// counts; a missing count is `0`.
fn read_usage(usage: &ResponseUsage) -> Usage {
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    let write = usage.cache_creation_input_tokens.unwrap_or(0);
    let input = usage
        .input_tokens
        .unwrap_or(0)
        .saturating_add(read)
        .saturating_add(write);
    let mut parsed = Usage::new(input, usage.output_tokens.unwrap_or(0));
    parsed.cache_read_tokens = read;
    parsed.cache_write_tokens = write;
    parsed
}

/// A response body as [`parse_response`] reads it first: its `content`
/// blocks are read on their own, for error paths that name them.
#[derive(Deserialize)]
#[serde(expecting = "a response object")]
pub(crate) struct RawResponse {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<ResponseUsage>,
}

/// Parses a response body (`"type": "message"`) into a [`ModelResponse`].
///
/// The message's blocks become parts as in [`parse_messages`](super::parse_messages), except that
/// a `{"_raw_arguments": …}` input is kept as the model sent it and an
/// empty message is kept (empty).
///
/// `stop_reason`: `end_turn` and `stop_sequence` →
/// [`FinishReason::Stop`]; `tool_use` → [`FinishReason::ToolCalls`];
/// `max_tokens` → [`FinishReason::Length`];
/// `model_context_window_exceeded` →
/// [`FinishReason::ContextWindowExceeded`]; `refusal` → [`FinishReason::Refusal`]; `null`
/// or missing → `ToolCalls` when the message has tool calls, `Stop`
/// otherwise; `pause_turn` → [`FinishReason::Paused`]; anything else →
/// [`FinishReason::Other`].
///
/// [`Usage`]: `input_tokens` is the sum of `input_tokens`,
/// `cache_read_input_tokens` and `cache_creation_input_tokens`;
/// `cache_read_tokens` and `cache_write_tokens` are the two cache counts,
/// `output_tokens` as given; a missing count is `0`.
///
/// # Errors
///
/// [`WireErrorKind::UnknownType`] when the body's `type` is not `message`
/// (an `error` body, say); [`WireErrorKind::UnknownRole`] when `role` is not
/// `assistant`; [`WireErrorKind::MissingField`] without `role` or
/// `content`; otherwise the block errors of [`parse_messages`](super::parse_messages), at
/// `response.content[i]`.
pub fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
    check_depth(FORMAT, "response", body)?;
    read_response(Checked, decode(FORMAT, "response", body)?)
}

/// What [`parse_response`] makes of a body once it is read into its
/// serde type, by [`decode`] or straight from its text, its blocks read
/// by `reading`.
pub(crate) fn read_response<R: Reading>(
    reading: R,
    raw: RawResponse,
) -> Result<ModelResponse, R::Error> {
    if let Some(kind) = raw.kind
        && kind != "message"
    {
        return Err(WireError::new(
            FORMAT,
            "response",
            WireErrorKind::UnknownType { found: kind },
        )
        .into());
    }
    let missing = |field: &str| {
        WireError::new(
            FORMAT,
            "response",
            WireErrorKind::MissingField {
                field: field.to_owned(),
            },
        )
    };
    let role = raw.role.ok_or_else(|| missing("role"))?;
    if role != "assistant" {
        return Err(WireError::new(FORMAT, "response", WireErrorKind::UnknownRole { role }).into());
    }
    let content = raw.content.ok_or_else(|| missing("content"))?;
    let message = assistant_message(parse_content(reading, &"response.content", content)?, false);
    let finish_reason = match raw.stop_reason.as_deref() {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some("model_context_window_exceeded") => FinishReason::ContextWindowExceeded,
        Some("refusal") => FinishReason::Refusal,
        Some("pause_turn") => FinishReason::Paused,
        Some(other) => FinishReason::Other(other.to_owned()),
        None if message.has_tool_calls() => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let usage = raw.usage.as_ref().map(read_usage).unwrap_or_default();
    Ok(ModelResponse::new(message)
        .with_finish_reason(finish_reason)
        .with_usage(usage))
}
