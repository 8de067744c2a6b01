//! A whole request body: its `messages` and its `tools`.

use serde::Deserialize;
use serde_json::Value;

use super::FORMAT;
use super::messages::parse_messages_at;
use super::tools::parse_tools_at;
use crate::wire::declaration::ParsedRequest;
use crate::wire::decode::{check_depth, decode};
use crate::wire::error::WireError;

/// Parses a whole request body: its `messages` (as [`parse_messages`](super::parse_messages)
/// does) and its `tools` (as [`parse_tools`](super::parse_tools) does; absent or `null` gives
/// none). Other fields (`model`, `tool_choice`, ...) are not read.
///
/// # Errors
///
/// As [`parse_messages`](super::parse_messages) and [`parse_tools`](super::parse_tools), with paths rooted at
/// `request` (`request.messages[2].tool_calls[0]`);
/// [`WireErrorKind::MissingField`](crate::wire::WireErrorKind::MissingField) without `messages`.
pub fn parse_request(body: &Value) -> Result<ParsedRequest, WireError> {
    check_depth(FORMAT, "request", body)?;
    #[derive(Deserialize)]
    #[serde(expecting = "a request object")]
    struct RequestBody {
        messages: Value,
        #[serde(default)]
        tools: Value,
    }
    let RequestBody { messages, tools } = decode(FORMAT, "request", body)?;
    Ok(ParsedRequest {
        conversation: parse_messages_at("request.messages", &messages)?,
        tools: if tools.is_null() {
            Vec::new()
        } else {
            parse_tools_at("request.tools", &tools)?
        },
    })
}
