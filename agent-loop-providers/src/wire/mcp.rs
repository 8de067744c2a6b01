//! MCP `tools/list`: the result a Model Context Protocol server returns when
//! a client lists its tools.
//!
//! Shape per the MCP specification, "Tools" / "Listing Tools"
//! (<https://modelcontextprotocol.io/specification/2025-06-18/server/tools>):
//! `{"tools": [{"name", "title"?, "description"?, "inputSchema",
//! "outputSchema"?, "annotations"?, "_meta"?}], "nextCursor"?}`. This is the
//! JSON-RPC `result` member, not the whole response envelope.
//!
//! Parsing is lossless: every tool field other than `name`, `description`
//! and `inputSchema` (`title`, `outputSchema`, `annotations`, `_meta`,
//! `icons`, and fields of later spec versions) is kept in the
//! [`ToolInfo::extras`], tagged [`WireFormat::McpToolsList`], and written
//! back by [`export_list_tools_result`]. Other formats never see them.
//!
//! MCP's `description` is optional: a missing one parses to `""` and an
//! empty one is not exported, so a round trip keeps it. MCP has no
//! `strict`: [`ToolInfo::strict`] is not exported, and parses to `None`.
//! Other top-level members of the result (`_meta`) are allowed and not
//! read.
//!
//! ```
//! use agent_loop_providers::wire::mcp;
//! use serde_json::json;
//!
//! let result = json!({
//!     "tools": [{
//!         "name": "read_file",
//!         "title": "Read File",
//!         "description": "Read a file as text.",
//!         "inputSchema": {
//!             "type": "object",
//!             "properties": { "path": { "type": "string" } },
//!             "required": ["path"]
//!         },
//!         "annotations": { "readOnlyHint": true }
//!     }],
//!     "nextCursor": "page-2"
//! });
//! let listed = mcp::parse_list_tools_result(&result)?;
//! assert_eq!(listed.tools[0].name, "read_file");
//! assert_eq!(listed.next_cursor.as_deref(), Some("page-2"));
//!
//! // `title` and `annotations` were kept and go back out.
//! let exported = mcp::export_list_tools_result(&listed.tools, listed.next_cursor);
//! assert_eq!(exported, result);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::decode::{check_depth, decode};
use super::encode::to_value;
use super::error::WireError;
use agent_loop_core::conversation::Extras;
use agent_loop_core::conversation::WireFormat;
use agent_loop_core::tool::ToolInfo;

const FORMAT: WireFormat = WireFormat::McpToolsList;

/// One element of the result's `tools` array.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Tool {
    /// The tool name.
    name: String,
    /// What the tool does; optional in MCP, omitted when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// JSON Schema of the arguments (`"type": "object"` per the spec).
    #[serde(rename = "inputSchema")]
    input_schema: Value,
    /// Every other field (`title`, `outputSchema`, `annotations`, `_meta`,
    /// `icons`, …), verbatim.
    #[serde(flatten)]
    extras: Map<String, Value>,
}

impl From<&ToolInfo> for Tool {
    /// The tool's name, schema and non-empty description, plus its extras
    /// when they came from MCP.
    fn from(info: &ToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            description: Some(info.description.clone()).filter(|text| !text.is_empty()),
            input_schema: info.parameters.clone(),
            extras: info
                .extras
                .fields_for(FORMAT)
                .map(|fields| {
                    fields
                        .iter()
                        .filter(|(key, _)| {
                            !matches!(key.as_str(), "name" | "description" | "inputSchema")
                        })
                        .map(|(key, value)| (key.clone(), value.clone()))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

impl Tool {
    /// `inputSchema` as the parameters, a missing description as `""`, the
    /// other fields as MCP extras; no `strict`.
    fn into_info(self) -> ToolInfo {
        let mut info = ToolInfo::new(
            self.name,
            self.description.unwrap_or_default(),
            self.input_schema,
        );
        info.extras = Extras::new(FORMAT, self.extras);
        info
    }
}

/// A `tools/list` result: `{"tools": [...], "nextCursor"?}`. Other members
/// are ignored when deserialising.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ListToolsResult {
    /// The tools of this page.
    tools: Vec<Tool>,
    /// The opaque cursor for the next page; absent on the last page.
    #[serde(
        rename = "nextCursor",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    next_cursor: Option<String>,
}

/// A parsed `tools/list` result: the tools and the pagination cursor.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ListedTools {
    /// The tools of this page, in order.
    pub tools: Vec<ToolInfo>,
    /// The cursor to pass as `params.cursor` to fetch the next page; `None`
    /// on the last page.
    pub next_cursor: Option<String>,
}

/// A `tools/list` result for these tools, with the cursor of the next page
/// if there is one: `{"tools": [{"name", "description"?, "inputSchema",
/// …}], "nextCursor"?}`, the JSON-RPC `result` member the MCP
/// specification documents (see the module docs). An empty description is
/// left out; extras are written only when they came from MCP
/// ([`Extras::fields_for`]), as further fields of the tool;
/// [`ToolInfo::strict`] has no MCP field and is left out.
pub fn export_list_tools_result<'t>(
    tools: impl IntoIterator<Item = &'t ToolInfo>,
    next_cursor: Option<String>,
) -> Value {
    to_value(&ListToolsResult {
        tools: tools.into_iter().map(Tool::from).collect(),
        next_cursor,
    })
}

/// Parses a `tools/list` result (the JSON-RPC `result` member).
///
/// Each tool becomes a [`ToolInfo`]: `inputSchema` as its parameters, a
/// missing or `null` description as `""`, every other field in its extras
/// (format [`WireFormat::McpToolsList`]). Other members of the result are
/// ignored.
///
/// # Errors
///
/// [`WireErrorKind::MissingField`](super::WireErrorKind::MissingField)
/// without `tools`, a tool's `name` or its `inputSchema` (path `result` or
/// `result.tools[i]`);
/// [`WireErrorKind::WrongType`](super::WireErrorKind::WrongType) when a
/// field has the wrong JSON type (`tools` not an array, a `name` or
/// `nextCursor` not a string).
pub fn parse_list_tools_result(result: &Value) -> Result<ListedTools, WireError> {
    check_depth(FORMAT, "result", result)?;
    let result: ListToolsResult = decode(FORMAT, "result", result)?;
    Ok(ListedTools {
        tools: result.tools.into_iter().map(Tool::into_info).collect(),
        next_cursor: result.next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::wire::WireErrorKind;

    #[test]
    fn every_other_tool_field_round_trips() {
        let result = json!({
            "tools": [{
                "name": "get_me",
                "title": "Me",
                "description": "Who am I.",
                "inputSchema": { "type": "object", "properties": {} },
                "outputSchema": { "type": "object", "properties": { "login": { "type": "string" } } },
                "annotations": { "readOnlyHint": true, "title": "Me" },
                "_meta": { "x": 1 },
                "icons": [{ "src": "data:image/png;base64,AA==" }],
                "execution": { "taskSupport": "forbidden" }
            }],
            "nextCursor": "c2"
        });
        let listed = parse_list_tools_result(&result).unwrap();
        let extras = listed.tools[0].extras.fields_for(FORMAT).unwrap();
        assert_eq!(extras["title"], "Me");
        assert!(extras.contains_key("outputSchema"));
        assert!(listed.tools[0].strict.is_none());
        let exported =
            serde_json::to_value(export_list_tools_result(&listed.tools, listed.next_cursor))
                .unwrap();
        assert_eq!(exported, result);
    }

    #[test]
    fn missing_description_parses_empty_and_is_not_exported() {
        let result = json!({ "tools": [{ "name": "f", "inputSchema": { "type": "object" } }] });
        let listed = parse_list_tools_result(&result).unwrap();
        assert_eq!(listed.tools[0].description, "");
        assert!(listed.tools[0].extras.is_empty());
        let exported = serde_json::to_value(export_list_tools_result(&listed.tools, None)).unwrap();
        assert_eq!(exported, result);
    }

    #[test]
    fn other_result_members_are_ignored() {
        let result = json!({ "_meta": { "a": 1 }, "tools": [] });
        let listed = parse_list_tools_result(&result).unwrap();
        assert!(listed.tools.is_empty());
        assert!(listed.next_cursor.is_none());
    }

    #[test]
    fn other_formats_extras_are_not_exported() {
        let mut info = ToolInfo::without_parameters("f", "");
        info.extras = Extras::new(
            WireFormat::AnthropicMessages,
            json!({ "cache_control": { "type": "ephemeral" } })
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        info.strict = Some(true);
        let exported = serde_json::to_value(export_list_tools_result(&[info], None)).unwrap();
        assert_eq!(
            exported,
            json!({ "tools": [{ "name": "f", "inputSchema": { "type": "object", "properties": {} } }] })
        );
    }

    #[test]
    fn a_tool_without_input_schema_is_an_error_with_its_path() {
        let result = json!({ "tools": [{ "name": "ok", "inputSchema": {} }, { "name": "bad" }] });
        let error = parse_list_tools_result(&result).unwrap_err();
        assert_eq!(error.path, "result.tools[1]");
        assert_eq!(
            &error.kind,
            &WireErrorKind::MissingField {
                field: "inputSchema".into()
            }
        );
    }

    #[test]
    fn wrong_types_are_reported() {
        let error = parse_list_tools_result(&json!({ "tools": {} })).unwrap_err();
        assert!(matches!(&error.kind, WireErrorKind::WrongType { .. }));
        let error = parse_list_tools_result(&json!({ "tools": [], "nextCursor": 3 })).unwrap_err();
        assert_eq!(error.path, "result.nextCursor");
        let error = parse_list_tools_result(&json!({})).unwrap_err();
        assert_eq!(
            &error.kind,
            &WireErrorKind::MissingField {
                field: "tools".into()
            }
        );
    }
}
