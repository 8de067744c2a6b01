//! A request's `tools`: [`ToolInfo`]s exported, declarations parsed.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::FORMAT;
use super::types::Tool;
use crate::wire::declaration::{self, ProviderTool, ToolDeclaration};
use crate::wire::decode::{check_depth, decode};
use crate::wire::encode::to_value;
use crate::wire::error::WireError;
use agent_loop_core::conversation::Extras;
use agent_loop_core::tool::ToolInfo;

/// The request's `tools` array for these tools, in order: each one a
/// custom tool `{"name", "description", "input_schema", "strict"?, …}`, as
/// the Messages API reference documents it
/// (<https://docs.anthropic.com/en/api/messages#body-tools>). Extras are
/// written only when they came from Anthropic ([`Extras::fields_for`]), as
/// further fields of the tool; `strict` only when set.
///
/// ```
/// use agent_loop_core::tool::ToolInfo;
/// use agent_loop_providers::wire::anthropic;
///
/// let tools = anthropic::export_tools(&[ToolInfo::without_parameters("now", "The time.")]);
/// assert_eq!(tools[0]["name"], "now");
/// assert_eq!(tools[0]["input_schema"]["type"], "object");
/// ```
pub fn export_tools<'t>(tools: impl IntoIterator<Item = &'t ToolInfo>) -> Vec<Value> {
    tools.into_iter().map(export_tool).collect()
}

/// One custom tool as [`export_tools`] writes it.
fn export_tool(info: &ToolInfo) -> Value {
    to_value(&ToolView(info))
}

/// A request's `tools` as [`export_tools`] writes them, written straight
/// from the tools into the bytes a request posts.
#[cfg(feature = "anthropic")]
pub(crate) struct ToolsView<I>(pub(crate) I);

#[cfg(feature = "anthropic")]
impl<'a, I> Serialize for ToolsView<I>
where
    I: IntoIterator<Item = &'a ToolInfo> + Copy,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.into_iter().map(ToolView))
    }
}

/// The fields a custom tool writes itself; its extras repeating one are
/// not written.
const TOOL_FIELDS: [&str; 4] = ["name", "description", "input_schema", "strict"];

/// One custom tool: `{"name", "description", "input_schema", "strict"?,
/// ...extras}`, the extras those of this format.
struct ToolView<'a>(&'a ToolInfo);

impl Serialize for ToolView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let info = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &info.name)?;
        map.serialize_entry("description", &info.description)?;
        map.serialize_entry("input_schema", &info.parameters)?;
        if let Some(strict) = info.strict {
            map.serialize_entry("strict", &strict)?;
        }
        let extras = info.extras.fields_for(FORMAT).into_iter().flatten();
        for (key, value) in extras.filter(|(key, _)| !TOOL_FIELDS.contains(&key.as_str())) {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Parses a request's `tools` array.
///
/// A tool without `type`, or with `"type": "custom"`, is a
/// [`ToolDeclaration::Function`]: `input_schema` becomes
/// [`ToolInfo::parameters`], a missing `description` becomes `""`,
/// `strict` is kept, and every other field (`cache_control`,
/// `defer_loading`, the `type` itself) goes to the [`ToolInfo::extras`].
/// A tool of any other `type` (`memory_20250818`, `web_search_20250305`,
/// `bash_20250124`, …) is defined by Anthropic and kept verbatim as a
/// [`ToolDeclaration::Provider`].
///
/// # Errors
///
/// [`WireErrorKind::WrongType`](crate::wire::WireErrorKind::WrongType) when `tools` is not an array of objects or
/// a field has the wrong type; [`WireErrorKind::MissingField`](crate::wire::WireErrorKind::MissingField) when a
/// custom tool has no `name` or `input_schema`. The path is `tools[i]`.
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    check_depth(FORMAT, "tools", tools)?;
    parse_tools_at("tools", tools)
}

/// [`parse_tools`] with error paths rooted at `root`.
pub(super) fn parse_tools_at(root: &str, tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, tools)?;
    items
        .iter()
        .enumerate()
        .map(|(index, tool)| parse_tool(&format!("{root}[{index}]"), tool))
        .collect()
}

#[derive(Deserialize)]
#[serde(expecting = "a tool object")]
struct ToolHead {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

fn parse_tool(path: &str, value: &Value) -> Result<ToolDeclaration, WireError> {
    let head: ToolHead = decode(FORMAT, path, value)?;
    match head.kind.as_deref() {
        None | Some("custom") => {
            let tool: Tool = decode(FORMAT, path, value)?;
            let mut info = ToolInfo::new(tool.name, tool.description, tool.input_schema);
            info.strict = tool.strict;
            info.extras = Extras::new(FORMAT, tool.extras);
            Ok(ToolDeclaration::Function(info))
        }
        Some(kind) => Ok(ToolDeclaration::Provider(ProviderTool {
            format: FORMAT,
            name: head.name.unwrap_or_default(),
            tool_type: kind.to_owned(),
            value: value.clone(),
        })),
    }
}

/// The request's `tools` array for parsed declarations, in order: a
/// [`ToolDeclaration::Function`] as [`export_tools`] writes it, an
/// Anthropic [`ToolDeclaration::Provider`] verbatim.
///
/// # Errors
///
/// [`WireErrorKind::ProviderTool`](crate::wire::WireErrorKind::ProviderTool) at `tools[i]` for a provider tool of
/// another format (an OpenAI `custom` tool): only its own provider knows
/// what it is.
pub fn export_declarations(tools: &[ToolDeclaration]) -> Result<Vec<Value>, WireError> {
    declaration::export(FORMAT, tools, export_tool)
}
