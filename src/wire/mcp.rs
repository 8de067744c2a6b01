//! MCP `tools/list`: the result a Model Context Protocol server returns when
//! a client lists its tools.
//!
//! Shape per the MCP specification, "Tools" / "Listing Tools"
//! (<https://modelcontextprotocol.io/specification/2025-06-18/server/tools>):
//! `{"tools": [{"name", "title"?, "description"?, "inputSchema",
//! "outputSchema"?, "annotations"?}], "nextCursor"?}`. This is the JSON-RPC
//! `result` member, not the whole response envelope.
//!
//! MCP's `description` is optional: a missing one parses to `""` and an
//! empty one is not exported, so a round trip keeps it. `title`,
//! `outputSchema`, `annotations`, `_meta` and any other field have no place
//! in [`ToolInfo`] and are ignored when parsing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{WireError, WireFormat};
use super::json::Node;
use crate::tool::ToolInfo;

const FORMAT: WireFormat = WireFormat::McpToolsList;

/// One element of the result's `tools` array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool name.
    pub name: String,
    /// What the tool does; optional in MCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (`"type": "object"` per the spec).
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

impl From<&ToolInfo> for Tool {
    fn from(info: &ToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            description: Some(info.description.clone()).filter(|text| !text.is_empty()),
            input_schema: info.parameters.clone(),
        }
    }
}

/// A `tools/list` result: `{"tools": [...], "nextCursor"?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListToolsResult {
    /// The tools of this page.
    pub tools: Vec<Tool>,
    /// The opaque cursor for the next page; absent on the last page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
}

/// A parsed `tools/list` result: the tools and the pagination cursor.
#[derive(Clone, Debug, PartialEq)]
pub struct ListedTools {
    /// The tools of this page, in order.
    pub tools: Vec<ToolInfo>,
    /// The cursor to pass as `params.cursor` to fetch the next page; `None`
    /// on the last page.
    pub next_cursor: Option<String>,
}

/// A `tools/list` result for these tools, with the cursor of the next page
/// if there is one.
pub fn export_list_tools_result(
    tools: &[ToolInfo],
    next_cursor: Option<String>,
) -> ListToolsResult {
    ListToolsResult {
        tools: tools.iter().map(Tool::from).collect(),
        next_cursor,
    }
}

/// Parses a `tools/list` result (the JSON-RPC `result` member).
///
/// # Errors
///
/// [`WireErrorKind::MissingField`](super::WireErrorKind::MissingField)
/// without `tools`, a tool's `name` or its `inputSchema`;
/// [`WireErrorKind::WrongType`](super::WireErrorKind::WrongType) when a
/// field has the wrong JSON type (e.g. `tools` not an array, `nextCursor`
/// not a string).
pub fn parse_list_tools_result(result: &Value) -> Result<ListedTools, WireError> {
    let root = Node::root(FORMAT, "result", result);
    let tools = root
        .field("tools")?
        .items()?
        .iter()
        .map(|tool| tool.tool_info("inputSchema"))
        .collect::<Result<_, WireError>>()?;
    let next_cursor = match root.optional_field("nextCursor")? {
        Some(cursor) => Some(cursor.str()?.to_owned()),
        None => None,
    };
    Ok(ListedTools { tools, next_cursor })
}
