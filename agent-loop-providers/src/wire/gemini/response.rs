//! A `GenerateContentResponse` body, parsed into a [`ModelResponse`].

use serde_json::{Map, Value};

use super::FORMAT;
use super::contents::{model_message, parse_response_content};
use super::parts::{array, get, missing, object, wrong_type};
use crate::wire::decode::check_depth;
use crate::wire::error::{WireError, WireErrorKind, provider_error_kind};
use agent_loop_core::conversation::{AssistantMessage, FinishReason, ModelResponse, Usage};

/// A count of `usageMetadata` (either key case); a missing or unreadable
/// one is `0`.
fn count(usage: &Map<String, Value>, camel: &str, snake: &str) -> u64 {
    get(usage, camel, snake)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// A response's [`Usage`] from its `usageMetadata`.
fn read_usage(usage: Option<&Value>) -> Usage {
    let Some(usage) = usage.and_then(Value::as_object) else {
        return Usage::default();
    };
    let thoughts = count(usage, "thoughtsTokenCount", "thoughts_token_count");
    let input = count(usage, "promptTokenCount", "prompt_token_count").saturating_add(count(
        usage,
        "toolUsePromptTokenCount",
        "tool_use_prompt_token_count",
    ));
    let output =
        count(usage, "candidatesTokenCount", "candidates_token_count").saturating_add(thoughts);
    let mut parsed = Usage::new(input, output);
    parsed.cache_read_tokens = count(
        usage,
        "cachedContentTokenCount",
        "cached_content_token_count",
    );
    parsed.reasoning_tokens = thoughts;
    parsed
}

/// The [`FinishReason`] of a candidate's `finishReason`; `has_calls` when
/// its content holds function calls.
fn finish_reason(reason: Option<&str>, has_calls: bool) -> FinishReason {
    match reason {
        // Gemini ends a turn of function calls with `STOP` (its
        // `finishMessage` says "Model generated function call(s).").
        None | Some("STOP" | "FINISH_REASON_UNSPECIFIED") if has_calls => FinishReason::ToolCalls,
        None | Some("STOP" | "FINISH_REASON_UNSPECIFIED") => FinishReason::Stop,
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION",
        ) => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// Parses a `generateContent` response body (a `GenerateContentResponse`)
/// into a [`ModelResponse`].
///
/// The first candidate's `content.parts` become the message as in
/// [`parse_contents`](super::parse_contents) for a `model` content, except
/// that a `{"_raw_arguments": …}` `args` is kept as the model sent it, a
/// `functionCall` without `id` keeps the id `""` (the turn runner mints
/// one), and an empty message is kept (empty). A candidate without
/// `content` (a `SAFETY` stop) has an empty message.
///
/// `finishReason`: `STOP` → [`FinishReason::Stop`], or
/// [`FinishReason::ToolCalls`] when the message has tool calls (Gemini
/// stops a function-calling turn with `STOP`); `MAX_TOKENS` →
/// [`FinishReason::Length`]; `SAFETY`, `RECITATION`, `BLOCKLIST`,
/// `PROHIBITED_CONTENT`, `SPII` and the `IMAGE_` ones →
/// [`FinishReason::ContentFilter`]; anything else (`MALFORMED_FUNCTION_CALL`,
/// `UNEXPECTED_TOOL_CALL`, `LANGUAGE`, `OTHER`) → [`FinishReason::Other`]
/// as spelled; missing → as `STOP`. A response without candidates whose
/// `promptFeedback` has a `blockReason` (the prompt was blocked) is an
/// empty message with [`FinishReason::ContentFilter`].
///
/// [`Usage`] from `usageMetadata`: `input_tokens` is `promptTokenCount`
/// (which counts the cached content too) plus `toolUsePromptTokenCount`;
/// `output_tokens` is `candidatesTokenCount` plus `thoughtsTokenCount`:
/// Gemini counts the thinking apart from the candidates
/// (`totalTokenCount` is their sum with the prompt), and
/// [`Usage::output_tokens`] counts every output token, reasoning included;
/// `reasoning_tokens` is `thoughtsTokenCount`, `cache_read_tokens`
/// `cachedContentTokenCount`. A missing count is `0`.
///
/// # Errors
///
/// [`WireErrorKind::Provider`] for an error body `{"error": {"code",
/// "message", "status"}}`; [`WireErrorKind::MissingField`] (`candidates`)
/// for a body with no candidate and no `blockReason`; otherwise the part
/// errors of [`parse_contents`](super::parse_contents), at
/// `response.candidates[0].content.parts[i]`.
pub fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
    check_depth(FORMAT, "response", body)?;
    let response = object("response", "response", body)?;
    if let Some(error) = response.get("error").filter(|error| !error.is_null()) {
        return Err(WireError::new(
            FORMAT,
            "response.error",
            provider_error(error),
        ));
    }
    let usage = read_usage(get(response, "usageMetadata", "usage_metadata"));
    let candidates = match response.get("candidates") {
        None => &[][..],
        Some(candidates) => array("response", "candidates", candidates)?,
    };
    let Some(candidate) = candidates.first() else {
        let blocked = get(response, "promptFeedback", "prompt_feedback")
            .and_then(Value::as_object)
            .and_then(|feedback| get(feedback, "blockReason", "block_reason"))
            .is_some_and(|reason| !reason.is_null());
        if blocked {
            return Ok(ModelResponse::new(AssistantMessage::default())
                .with_finish_reason(FinishReason::ContentFilter)
                .with_usage(usage));
        }
        return Err(missing("response", "candidates"));
    };
    let path = "response.candidates[0]";
    let candidate = object(path, "0", candidate)?;
    let parts = match candidate.get("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(content) => parse_response_content(&format!("{path}.content"), content)?,
    };
    let message = model_message(parts, false);
    let reason = match get(candidate, "finishReason", "finish_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.as_str()),
        Some(other) => return Err(wrong_type(path, "finishReason", "a string", other)),
    };
    let finish_reason = finish_reason(reason, message.has_tool_calls());
    Ok(ModelResponse::new(message)
        .with_finish_reason(finish_reason)
        .with_usage(usage))
}

/// A Gemini error object `{"code", "message", "status"}` as a
/// [`WireErrorKind::Provider`]: its `status` (`RESOURCE_EXHAUSTED`), else
/// its `code`, as the type.
pub(crate) fn provider_error(error: &Value) -> WireErrorKind {
    provider_error_kind(error, &["status", "code"])
}
