//! A `chat.completion` response body, parsed into a [`ModelResponse`].

use serde_json::Value;

use super::FORMAT;
use super::messages::assistant_message;
use super::types::{AssistantChatMessage, ChatCompletion, CompletionUsage};
use crate::wire::blank_text::is_blank;
use crate::wire::decode::{check_depth, decode};
use crate::wire::error::{WireError, WireErrorKind};
use agent_loop_core::conversation::{ContentPart, FinishReason, ModelResponse, Usage};

/// A response's [`Usage`]: `prompt_tokens` → `input_tokens`,
/// `completion_tokens` → `output_tokens`,
/// `prompt_tokens_details.cached_tokens` (else DeepSeek's
/// `prompt_cache_hit_tokens`) → `cache_read_tokens`,
/// `completion_tokens_details.reasoning_tokens` → `reasoning_tokens`.
///
/// OpenAI counts reasoning inside `completion_tokens`; xAI counts it
/// beside them ("reasoning token consumption will be counted separately
/// from completion_tokens, but will be counted in the total_tokens", xAI's
/// consumption guide; vercel/ai PR #12425). Where `total_tokens` is
/// `prompt_tokens + completion_tokens + reasoning_tokens`, the reasoning is
/// added to `output_tokens`, so that every server's output counts it.
fn read_usage(usage: &CompletionUsage) -> Usage {
    let reasoning = usage
        .completion_tokens_details
        .as_ref()
        .and_then(|details| details.reasoning_tokens)
        .unwrap_or(0);
    let beside = reasoning > 0
        && usage.total_tokens
            == usage
                .prompt_tokens
                .saturating_add(usage.completion_tokens)
                .saturating_add(reasoning);
    let output = if beside {
        usage.completion_tokens.saturating_add(reasoning)
    } else {
        usage.completion_tokens
    };
    let mut parsed = Usage::new(usage.prompt_tokens, output);
    parsed.cache_read_tokens = usage
        .prompt_tokens_details
        .as_ref()
        .and_then(|details| details.cached_tokens)
        .or(usage.prompt_cache_hit_tokens)
        .unwrap_or(0);
    parsed.reasoning_tokens = reasoning;
    parsed
}

/// Parses a `chat.completion` response body into a [`ModelResponse`].
///
/// Only the first choice is read (a request with `n > 1` asks for several;
/// the tool loop uses one). The message is read as in [`parse_messages`](super::parse_messages)
/// (reasoning first, then text, then tool calls; `annotations` and `null`
/// fields dropped; other fields in extras), except that it is returned even
/// when empty, and that a `refusal` also becomes the message's text when
/// it has none, so the model's words reach the conversation. Call ids are
/// kept as sent, even empty: the turn runner mints missing ones.
///
/// `finish_reason`: `stop` → [`FinishReason::Stop`], `tool_calls` and
/// `function_call` → [`FinishReason::ToolCalls`], `length` →
/// [`FinishReason::Length`], `content_filter` →
/// [`FinishReason::ContentFilter`], `null` or absent →
/// [`ToolCalls`](FinishReason::ToolCalls) when the message has tool calls,
/// else [`Stop`](FinishReason::Stop), anything else →
/// [`FinishReason::Other`]; a `refusal` makes it
/// [`FinishReason::Refusal`]. `usage`: `prompt_tokens` → `input_tokens`,
/// `completion_tokens` → `output_tokens`,
/// `prompt_tokens_details.cached_tokens` (else DeepSeek's
/// `prompt_cache_hit_tokens`) → `cache_read_tokens`,
/// `completion_tokens_details.reasoning_tokens` → `reasoning_tokens`
/// (and added to `output_tokens` where the server counts it beside
/// `completion_tokens`, as xAI does: see the usage's total); without it,
/// [`Usage::default`].
///
/// # Errors
///
/// A [`WireError`] at `response` or below: [`WireErrorKind::NoChoices`] when
/// `choices` is empty; [`WireErrorKind::UnknownRole`] when the message's
/// role is not `assistant`; [`WireErrorKind::MissingField`] for a missing
/// `choices` (an `error` body, say), `message`, `role`, or a tool call's
/// `function` or `name`; [`WireErrorKind::WrongType`] for a field of the
/// wrong JSON type, e.g. at `response.choices[0].message.tool_calls[1].function.name`.
pub fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
    check_depth(FORMAT, "response", body)?;
    read_response(decode(FORMAT, "response", body)?)
}

/// What [`parse_response`] makes of a body once it is read into its
/// serde type, by [`decode`] or straight from its text.
pub(crate) fn read_response(completion: ChatCompletion) -> Result<ModelResponse, WireError> {
    let usage = completion
        .usage
        .as_ref()
        .map(read_usage)
        .unwrap_or_default();
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(WireError::new(
            FORMAT,
            "response.choices",
            WireErrorKind::NoChoices,
        ));
    };
    let message = choice.message;
    if message.role != "assistant" {
        return Err(WireError::new(
            FORMAT,
            "response.choices[0].message",
            WireErrorKind::UnknownRole { role: message.role },
        ));
    }
    let refusal = message.refusal.clone();
    let mut assistant = assistant_message(
        AssistantChatMessage {
            content: message.content,
            reasoning_content: message.reasoning_content,
            refusal: message.refusal,
            tool_calls: message.tool_calls,
            extras: message.extras,
        },
        false,
    );
    if let Some(refusal) = &refusal
        && !assistant
            .content
            .iter()
            .any(|part| matches!(part, ContentPart::Text(_)))
        && !is_blank(refusal)
    {
        // After the reasoning, before the calls.
        let at = assistant
            .content
            .iter()
            .take_while(|part| matches!(part, ContentPart::Reasoning(_)))
            .count();
        assistant
            .content
            .insert(at, ContentPart::text(refusal.clone()));
    }
    let finish_reason = if refusal.is_some() {
        FinishReason::Refusal
    } else {
        match choice.finish_reason.as_deref() {
            Some("stop") => FinishReason::Stop,
            Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
            Some("length") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None if assistant.has_tool_calls() => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        }
    };
    Ok(ModelResponse::new(assistant)
        .with_finish_reason(finish_reason)
        .with_usage(usage))
}
