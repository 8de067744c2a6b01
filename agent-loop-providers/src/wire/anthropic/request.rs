//! A whole request body: its `system`, `messages` and `tools`.

use serde::Deserialize;
use serde_json::Value;

use super::FORMAT;
use super::messages::{parse_messages_unminted, parse_system};
use super::tools::parse_tools_at;
use crate::wire::declaration::ParsedRequest;
use crate::wire::decode::{check_depth, decode};
use crate::wire::error::WireError;
use agent_loop_core::support::mint_missing_ids;

#[derive(Deserialize)]
#[serde(expecting = "a request object")]
struct RawRequest {
    #[serde(default)]
    system: Option<Value>,
    messages: Value,
    #[serde(default)]
    tools: Option<Value>,
}

/// Parses a whole request body: its top-level `system` (a string → one
/// [`Message::System`](agent_loop_core::conversation::Message::System); text blocks → one each, with their extras such as
/// `cache_control`) first, then its `messages` as [`parse_messages`](super::parse_messages) does,
/// and its `tools` as [`parse_tools`](super::parse_tools) does (absent or `null` → none). Other
/// fields (`model`, `max_tokens`, `thinking`, `tool_choice`, …) are not
/// read.
///
/// # Errors
///
/// As [`parse_messages`](super::parse_messages) and [`parse_tools`](super::parse_tools), with paths rooted at
/// `request` (`request.messages[0].content[1]`, `request.tools[2]`);
/// [`WireErrorKind::MissingField`](crate::wire::WireErrorKind::MissingField) at `request` without `messages`;
/// [`WireErrorKind::UnknownType`](crate::wire::WireErrorKind::UnknownType) at `request.system[i]` for a system block
/// that is not text, [`WireErrorKind::WrongType`](crate::wire::WireErrorKind::WrongType) at `request.system` for a
/// `system` that is neither a string nor an array.
pub fn parse_request(body: &Value) -> Result<ParsedRequest, WireError> {
    check_depth(FORMAT, "request", body)?;
    let raw: RawRequest = decode(FORMAT, "request", body)?;
    let mut conversation = match &raw.system {
        Some(system) if !system.is_null() => parse_system("request.system", system)?,
        _ => Vec::new(),
    };
    conversation.extend(parse_messages_unminted("request.messages", &raw.messages)?);
    mint_missing_ids(&mut conversation);
    let tools = match &raw.tools {
        Some(tools) if !tools.is_null() => parse_tools_at("request.tools", tools)?,
        _ => Vec::new(),
    };
    Ok(ParsedRequest {
        conversation,
        tools,
    })
}
