//! A `response` body, parsed into a [`ModelResponse`].

use serde::Deserialize;
use serde_json::{Map, Value};

use super::FORMAT;
use super::messages::{RESPONSE_ID_KEY, assistant_parts};
use crate::wire::decode::{At, Checked, Reading, check_depth, decode};
use crate::wire::error::{WireError, WireErrorKind, provider_error_kind};
use agent_loop_core::conversation::{AssistantMessage, Extras, FinishReason, ModelResponse, Usage};

/// A response body as [`parse_response`] reads it first: the items of its
/// `output` are read on their own, for error paths that name them.
#[derive(Deserialize)]
#[serde(expecting = "a response object")]
pub(crate) struct RawResponse {
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    output: Option<Vec<Value>>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
#[serde(expecting = "an incomplete_details object")]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

/// A response's `usage` (`ResponseUsage`): `input_tokens` counts cached
/// tokens too, `output_tokens` reasoning tokens too.
#[derive(Default, Deserialize)]
#[serde(expecting = "a usage object")]
pub(crate) struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Default, Deserialize)]
#[serde(expecting = "an input_tokens_details object")]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(expecting = "an output_tokens_details object")]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

fn read_usage(usage: &RawUsage) -> Usage {
    let input = usage.input_tokens_details.as_ref();
    let output = usage.output_tokens_details.as_ref();
    let mut parsed = Usage::new(
        usage.input_tokens.unwrap_or(0),
        usage.output_tokens.unwrap_or(0),
    );
    parsed.cache_read_tokens = input.and_then(|d| d.cached_tokens).unwrap_or(0);
    parsed.cache_write_tokens = input.and_then(|d| d.cache_write_tokens).unwrap_or(0);
    parsed.reasoning_tokens = output.and_then(|d| d.reasoning_tokens).unwrap_or(0);
    parsed
}

/// The provider's error `{"code", "message"}` (or `{"type", …}`) as a
/// [`WireErrorKind::Provider`].
pub(crate) fn provider_error(error: &Value) -> WireErrorKind {
    provider_error_kind(error, &["code", "type"])
}

/// Parses a response body (`"object": "response"`) into a
/// [`ModelResponse`].
///
/// Its `output` items become **one** assistant message, parts in item
/// order:
///
/// - `reasoning` → [`ContentPart::Reasoning`](agent_loop_core::conversation::ContentPart::Reasoning):
///   `text` the `summary_text` parts joined by a blank line (else the
///   `reasoning_text` parts of `content`), `redacted` the
///   `encrypted_content`, the item `id` (`rs_…`), `status`, `content`, and
///   a `summary` that one text cannot stand for (several parts) in its
///   extras;
/// - `function_call` → [`ContentPart::ToolCall`](agent_loop_core::conversation::ContentPart::ToolCall):
///   `call_id` as its id, `name`, `arguments` (text, as sent), the item
///   `id` (`fc_…`) and `status` in its extras;
/// - an assistant `message` → one text part per `output_text`, its
///   `annotations` and `logprobs` in the part's extras, the item's own
///   fields (`id` `msg_…`, `status`, `type`, `phase`) in the first part's
///   extras under `"item"`; a message holding another part (a `refusal`)
///   is kept whole as a [`ContentPart::Provider`](agent_loop_core::conversation::ContentPart::Provider);
/// - any other item (`web_search_call`, `file_search_call`,
///   `code_interpreter_call`, `mcp_call`, …) → a
///   [`ContentPart::Provider`](agent_loop_core::conversation::ContentPart::Provider), verbatim.
///
/// The item ids of `function_call` and `message` items are kept only when
/// the output has a reasoning item (see the module docs). The response's
/// `id` (`resp_…`) is kept in the message's extras under
/// [`RESPONSE_ID_KEY`](super::RESPONSE_ID_KEY), for `previous_response_id`.
///
/// `status`: `completed` (or none) → [`FinishReason::ToolCalls`] when
/// there are calls, [`FinishReason::Refusal`] when a message refused,
/// [`FinishReason::Stop`] otherwise; `incomplete` →
/// `incomplete_details.reason`: `max_output_tokens` is
/// [`FinishReason::Length`], `content_filter` is
/// [`FinishReason::ContentFilter`], another is [`FinishReason::Other`]
/// (`incomplete` without a reason); any other status (`cancelled`,
/// `in_progress`) is [`FinishReason::Other`].
///
/// [`Usage`]: `input_tokens` (cached included), `output_tokens` (reasoning
/// included), `input_tokens_details.cached_tokens` and `cache_write_tokens`,
/// `output_tokens_details.reasoning_tokens`; a missing count is `0`.
///
/// # Errors
///
/// [`WireErrorKind::Provider`] at `response.error` for a `failed` response
/// or one with an `error`, with the error's `code` and `message`;
/// [`WireErrorKind::UnknownType`] when `object` is not `response`;
/// [`WireErrorKind::MissingField`] without `output`; the item errors of
/// [`parse_messages`](super::parse_messages) at `response.output[i]`.
pub fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
    check_depth(FORMAT, "response", body)?;
    read_response(Checked, decode(FORMAT, "response", body)?)
}

/// What [`parse_response`] makes of a body once it is read into its
/// serde type, by [`decode`] or straight from its text, its items read
/// by `reading`.
pub(crate) fn read_response<R: Reading>(
    reading: R,
    raw: RawResponse,
) -> Result<ModelResponse, R::Error> {
    if let Some(object) = raw.object
        && object != "response"
    {
        return Err(WireError::new(
            FORMAT,
            "response",
            WireErrorKind::UnknownType { found: object },
        )
        .into());
    }
    let error = raw.error.filter(|error| !error.is_null());
    if error.is_some() || raw.status.as_deref() == Some("failed") {
        let error = error.unwrap_or(Value::String("the response failed".into()));
        return Err(WireError::new(FORMAT, "response.error", provider_error(&error)).into());
    }
    let output = raw.output.ok_or_else(|| {
        WireError::new(
            FORMAT,
            "response",
            WireErrorKind::MissingField {
                field: "output".into(),
            },
        )
    })?;
    let refused = output.iter().any(|item| {
        item.get("content")
            .and_then(Value::as_array)
            .is_some_and(|parts| {
                parts
                    .iter()
                    .any(|part| part.get("type").and_then(Value::as_str) == Some("refusal"))
            })
    });
    let run = output
        .into_iter()
        .enumerate()
        .map(|(index, item)| (At::Index(&"response.output", index), item))
        .collect();
    let parts = assistant_parts(reading, run, false)?;
    let mut message = AssistantMessage::new(parts);
    if let Some(id) = raw.id {
        message.extras = Extras::new(
            FORMAT,
            Map::from_iter([(RESPONSE_ID_KEY.to_owned(), Value::String(id))]),
        );
    }
    let finish_reason = match raw.status.as_deref() {
        None | Some("completed") if message.has_tool_calls() => FinishReason::ToolCalls,
        None | Some("completed") if refused => FinishReason::Refusal,
        None | Some("completed") => FinishReason::Stop,
        Some("incomplete") => match raw.incomplete_details.and_then(|d| d.reason).as_deref() {
            Some("max_output_tokens") => FinishReason::Length,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
            None => FinishReason::Other("incomplete".to_owned()),
        },
        Some(other) => FinishReason::Other(other.to_owned()),
    };
    let usage = raw.usage.as_ref().map(read_usage).unwrap_or_default();
    Ok(ModelResponse::new(message)
        .with_finish_reason(finish_reason)
        .with_usage(usage))
}
