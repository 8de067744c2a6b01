//! A request's `tools`: [`ToolInfo`]s exported, declarations parsed.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::FORMAT;
use crate::wire::declaration::{self, ProviderTool, ToolDeclaration};
use crate::wire::decode::{check_depth, decode};
use crate::wire::encode::to_value;
use crate::wire::error::WireError;
use crate::wire::tool_schema;
use agent_loop_core::conversation::Extras;
use agent_loop_core::tool::ToolInfo;

/// The request's `tools` array for these tools, in order: each one a
/// function tool `{"type": "function", "name", "description"?,
/// "parameters", "strict"}` as the Responses reference documents
/// `FunctionTool` (<https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools>).
///
/// `strict` is **always** written, [`ToolInfo::strict`] or `false` when
/// unset: Responses takes a missing `strict` as `true` (the API echoes such
/// a tool back with `"strict": true` and `"additionalProperties": false`
/// added to its schema), which refuses a schema with optional properties
/// and changes what it means. `description` is left out when empty. Extras
/// are written only when they came from this format, as further fields of
/// the tool (`defer_loading`, `output_schema`, …).
///
/// ```
/// use agent_loop_core::tool::ToolInfo;
/// use agent_loop_providers::wire::responses;
///
/// let tools = responses::export_tools(&[ToolInfo::without_parameters("now", "The time.")]);
/// assert_eq!(tools[0]["type"], "function");
/// assert_eq!(tools[0]["name"], "now");
/// assert_eq!(tools[0]["strict"], false);
/// ```
pub fn export_tools<'t>(tools: impl IntoIterator<Item = &'t ToolInfo>) -> Vec<Value> {
    tools.into_iter().map(export_tool).collect()
}

fn export_tool(info: &ToolInfo) -> Value {
    to_value(&ToolView(info))
}

/// A request's `tools` as [`export_tools`] writes them, written straight
/// from the tools into the bytes a request posts.
#[cfg(feature = "openai")]
pub(crate) struct ToolsView<I>(pub(crate) I);

#[cfg(feature = "openai")]
impl<'a, I> Serialize for ToolsView<I>
where
    I: IntoIterator<Item = &'a ToolInfo> + Copy,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.into_iter().map(ToolView))
    }
}

/// The fields a function tool writes itself; its extras repeating one
/// are not written.
const TOOL_FIELDS: [&str; 5] = ["type", "name", "description", "parameters", "strict"];

/// One function tool, as [`export_tools`] documents it.
struct ToolView<'a>(&'a ToolInfo);

impl Serialize for ToolView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let info = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", "function")?;
        map.serialize_entry("name", &info.name)?;
        if !info.description.is_empty() {
            map.serialize_entry("description", &info.description)?;
        }
        // As OpenAI accepts them (`wire::tool_schema::openai`).
        map.serialize_entry("parameters", &*tool_schema::openai(&info.parameters))?;
        map.serialize_entry("strict", &info.strict.unwrap_or(false))?;
        let extras = info.extras.fields_for(FORMAT).into_iter().flatten();
        for (key, value) in extras.filter(|(key, _)| !TOOL_FIELDS.contains(&key.as_str())) {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Parses a request's `tools` array.
///
/// A tool of `"type": "function"` (or without `type`) is a
/// [`ToolDeclaration::Function`]: `parameters` become
/// [`ToolInfo::parameters`] (`null` or missing: `null`), a missing or
/// `null` `description` becomes `""`, a missing or `null` `strict` is
/// `Some(true)` (what the API applies), and every other field goes to the
/// [`ToolInfo::extras`]. A tool of any other `type` (`web_search`,
/// `file_search`, `computer_use_preview`, `mcp`, `code_interpreter`,
/// `image_generation`, `custom`, …) is defined by OpenAI and kept verbatim
/// as a [`ToolDeclaration::Provider`], named by its `name` or an MCP
/// tool's `server_label`.
///
/// # Errors
///
/// [`WireErrorKind::WrongType`](crate::wire::WireErrorKind::WrongType) when
/// `tools` is not an array of objects or a field has the wrong type;
/// [`WireErrorKind::MissingField`](crate::wire::WireErrorKind::MissingField)
/// when a function tool has no `name`. The path is `tools[i]`.
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    check_depth(FORMAT, "tools", tools)?;
    parse_tools_at("tools", tools)
}

#[derive(Deserialize)]
#[serde(expecting = "a tool object")]
struct ToolHead {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(expecting = "a function tool")]
struct FunctionTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    strict: Option<bool>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// [`parse_tools`] with error paths rooted at `root`.
pub(super) fn parse_tools_at(root: &str, tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, tools)?;
    items
        .iter()
        .enumerate()
        .map(|(index, tool)| {
            let path = format!("{root}[{index}]");
            let head: ToolHead = decode(FORMAT, &path, tool)?;
            match head.kind.as_deref() {
                None | Some("function") => {
                    let raw: FunctionTool = decode(FORMAT, &path, tool)?;
                    let mut rest = raw.rest;
                    rest.remove("type");
                    let mut info = ToolInfo::new(
                        raw.name,
                        raw.description.unwrap_or_default(),
                        raw.parameters.unwrap_or(Value::Null),
                    );
                    info.strict = Some(raw.strict.unwrap_or(true));
                    info.extras = Extras::new(FORMAT, rest);
                    Ok(ToolDeclaration::Function(info))
                }
                Some(kind) => {
                    let name = ["name", "server_label"]
                        .iter()
                        .find_map(|key| tool.get(*key).and_then(Value::as_str))
                        .unwrap_or_default();
                    Ok(ToolDeclaration::Provider(ProviderTool {
                        format: FORMAT,
                        name: name.to_owned(),
                        tool_type: kind.to_owned(),
                        value: tool.clone(),
                    }))
                }
            }
        })
        .collect()
}

/// The request's `tools` array for parsed declarations, in order: a
/// [`ToolDeclaration::Function`] as [`export_tools`] writes it, a
/// Responses [`ToolDeclaration::Provider`] verbatim.
///
/// # Errors
///
/// [`WireErrorKind::ProviderTool`](crate::wire::WireErrorKind::ProviderTool)
/// at `tools[i]` for a provider tool of another format (an Anthropic
/// `memory_20250818`): only its own provider knows what it is.
pub fn export_declarations(tools: &[ToolDeclaration]) -> Result<Vec<Value>, WireError> {
    declaration::export(FORMAT, tools, export_tool)
}
