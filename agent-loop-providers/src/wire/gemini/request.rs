//! A whole request body: its `systemInstruction`, `contents` and `tools`.

use serde_json::Value;

use super::FORMAT;
use super::contents::{parse_contents_unminted, parse_system};
use super::parts::{get, missing, object};
use super::tools::parse_tools_at;
use crate::wire::declaration::ParsedRequest;
use crate::wire::decode::check_depth;
use crate::wire::error::WireError;
use agent_loop_core::support::mint_missing_ids;

/// Parses a whole `generateContent` request body: its `systemInstruction`
/// (or `system_instruction`; each non-blank text part → one
/// [`Message::System`](agent_loop_core::conversation::Message::System)) first, then
/// its `contents` as [`parse_contents`](super::parse_contents) does, and its
/// `tools` as [`parse_tools`](super::parse_tools) does (absent or `null` →
/// none). Other fields (`generationConfig`, `toolConfig`,
/// `safetySettings`, `cachedContent`, …) are not read.
///
/// # Errors
///
/// As [`parse_contents`](super::parse_contents) and
/// [`parse_tools`](super::parse_tools), with paths rooted at `request`
/// (`request.contents[0].parts[1]`, `request.tools[2]`);
/// [`WireErrorKind::MissingField`](crate::wire::WireErrorKind::MissingField)
/// at `request` without `contents`;
/// [`WireErrorKind::UnknownType`](crate::wire::WireErrorKind::UnknownType)
/// at `request.systemInstruction.parts[i]` for a system part that is not
/// text.
pub fn parse_request(body: &Value) -> Result<ParsedRequest, WireError> {
    check_depth(FORMAT, "request", body)?;
    let request = object("request", "request", body)?;
    let mut conversation = match get(request, "systemInstruction", "system_instruction") {
        Some(system) if !system.is_null() => parse_system("request.systemInstruction", system)?,
        _ => Vec::new(),
    };
    let contents = request
        .get("contents")
        .ok_or_else(|| missing("request", "contents"))?;
    conversation.extend(parse_contents_unminted("request.contents", contents)?);
    mint_missing_ids(&mut conversation);
    let tools = match request.get("tools") {
        Some(tools) if !tools.is_null() => parse_tools_at("request.tools", tools)?,
        _ => Vec::new(),
    };
    Ok(ParsedRequest {
        conversation,
        tools,
    })
}
