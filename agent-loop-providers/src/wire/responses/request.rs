//! A whole request body: its `instructions`, `input` and `tools`.

use serde::Deserialize;
use serde_json::Value;

use super::FORMAT;
use super::messages::parse_input_unminted;
use super::tools::parse_tools_at;
use crate::wire::declaration::ParsedRequest;
use crate::wire::decode::{check_depth, decode};
use crate::wire::error::WireError;
use crate::wire::string_or_array::StringOrArray;
use agent_loop_core::conversation::Message;
use agent_loop_core::support::mint_missing_ids;

#[derive(Deserialize)]
#[serde(expecting = "a request object")]
struct RawRequest {
    #[serde(default)]
    instructions: Option<Value>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    tools: Option<Value>,
}

/// Parses a whole request body: its `instructions` (a string → one
/// [`Message::System`] first, unless blank; input items, as a response
/// echoes them → parsed as `input`), then its `input` as
/// [`parse_messages`](super::parse_messages) does (absent → none), and its
/// `tools` as [`parse_tools`](super::parse_tools) does. Other fields
/// (`model`, `reasoning`, `text`, `store`, `previous_response_id`, …) are
/// not read.
///
/// # Errors
///
/// As [`parse_messages`](super::parse_messages) and
/// [`parse_tools`](super::parse_tools), with paths rooted at `request`
/// (`request.input[2]`, `request.tools[0]`).
pub fn parse_request(body: &Value) -> Result<ParsedRequest, WireError> {
    check_depth(FORMAT, "request", body)?;
    let raw: RawRequest = decode(FORMAT, "request", body)?;
    let mut conversation = Vec::new();
    match &raw.instructions {
        None | Some(Value::Null) => {}
        Some(instructions) => {
            match decode::<StringOrArray<Value>>(FORMAT, "request.instructions", instructions)? {
                StringOrArray::Text(text) => {
                    if !text.trim().is_empty() {
                        conversation.push(Message::system(text));
                    }
                }
                StringOrArray::Array(_) => {
                    conversation.extend(parse_input_unminted("request.instructions", instructions)?)
                }
            }
        }
    }
    if let Some(input) = raw.input.as_ref().filter(|input| !input.is_null()) {
        conversation.extend(parse_input_unminted("request.input", input)?);
    }
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
