//! A request's `tools`: [`ToolInfo`]s exported, declarations parsed.

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::FORMAT;
use super::export::Object;
use super::types::{FunctionType, Tool, TypeTag};
use crate::wire::declaration::{self, ProviderTool, ToolDeclaration};
use crate::wire::decode::{check_depth, decode};
use crate::wire::encode::to_value;
use crate::wire::error::WireError;
use crate::wire::tool_schema;
use agent_loop_core::conversation::Extras;
use agent_loop_core::tool::ToolInfo;

/// The request's `tools` array for these tools, in order: each one
/// `{"type": "function", "function": {"name", "description", "parameters",
/// "strict"?, ...}}`, as the Chat Completions reference documents a
/// function tool
/// (<https://platform.openai.com/docs/api-reference/chat/create#chat-create-tools>).
/// `strict` is written only when set; the tool's extras only when they came
/// from this format ([`Extras::fields_for`]), as further fields of
/// `function`.
///
/// ```
/// use agent_loop_core::tool::ToolInfo;
/// use agent_loop_providers::wire::openai;
///
/// let mut info = ToolInfo::without_parameters("now", "The current time.");
/// info.strict = Some(true);
/// let tools = openai::export_tools(&[info]);
/// assert_eq!(tools[0]["type"], "function");
/// assert_eq!(tools[0]["function"]["name"], "now");
/// assert_eq!(tools[0]["function"]["strict"], true);
/// ```
pub fn export_tools<'t>(tools: impl IntoIterator<Item = &'t ToolInfo>) -> Vec<Value> {
    tools.into_iter().map(export_tool).collect()
}

/// One function tool as [`export_tools`] writes it.
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

/// One function tool: `{"type": "function", "function": {"name",
/// "description", "parameters", "strict"?, ...extras}}`, the extras
/// those of this format.
struct ToolView<'a>(&'a ToolInfo);

impl Serialize for ToolView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut object = Object::begin(serializer, None)?;
        object.field("type", &FunctionType::Function)?;
        object.field("function", &DefinitionView(self.0))?;
        object.end()
    }
}

/// The `function` of a [`ToolView`].
struct DefinitionView<'a>(&'a ToolInfo);

impl Serialize for DefinitionView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let info = self.0;
        let mut object = Object::begin(serializer, info.extras.fields_for(FORMAT))?;
        object.field("name", &info.name)?;
        object.field("description", &info.description)?;
        // As OpenAI accepts them (`wire::tool_schema::openai`).
        object.field("parameters", &*tool_schema::openai(&info.parameters))?;
        if let Some(strict) = info.strict {
            object.field("strict", &strict)?;
        }
        object.end()
    }
}

/// Parses a request's `tools` array.
///
/// A `"type": "function"` tool (or one without `type`) becomes a
/// [`ToolDeclaration::Function`]: a missing `description` reads as `""`, a
/// missing or `null` `parameters` as the empty object schema, `strict` is
/// read, and any other field of `function` is kept in
/// [`ToolInfo::extras`]. A tool of any other `type` (OpenAI's `custom`
/// tools) becomes a [`ToolDeclaration::Provider`] kept verbatim, named by
/// the `name` of its nested object (`{"type": "custom", "custom": {"name"}}`),
/// else by a top-level `name`, else `""`.
///
/// # Errors
///
/// A [`WireError`] at `tools` or `tools[i]…`: [`WireErrorKind::WrongType`](crate::wire::WireErrorKind::WrongType)
/// when `tools` is not an array of objects or a field has the wrong JSON
/// type; [`WireErrorKind::MissingField`](crate::wire::WireErrorKind::MissingField) for a function tool without
/// `function` or `function.name`.
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    check_depth(FORMAT, "tools", tools)?;
    parse_tools_at("tools", tools)
}

/// Exports parsed [`ToolDeclaration`]s as a `tools` array: function tools
/// as [`export_tools`] does, provider tools of this format verbatim.
///
/// # Errors
///
/// [`WireErrorKind::ProviderTool`](crate::wire::WireErrorKind::ProviderTool) at `tools[i]` for a provider tool of
/// another format (an Anthropic `memory_20250818`, say): only its own
/// provider knows what it is.
pub fn export_declarations(tools: &[ToolDeclaration]) -> Result<Vec<Value>, WireError> {
    declaration::export(FORMAT, tools, export_tool)
}

pub(super) fn parse_tools_at(root: &str, tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    let items: Vec<Value> = decode(FORMAT, root, tools)?;
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let path = format!("{root}[{index}]");
            let tag: TypeTag = decode(FORMAT, &path, item)?;
            match tag.kind.as_deref() {
                None | Some("function") => {
                    let tool: Tool = decode(FORMAT, &path, item)?;
                    let function = tool.function;
                    let mut info =
                        ToolInfo::new(function.name, function.description, function.parameters);
                    info.strict = function.strict;
                    info.extras = Extras::new(FORMAT, function.extras);
                    Ok(ToolDeclaration::Function(info))
                }
                Some(kind) => {
                    let name = item
                        .get(kind)
                        .and_then(|nested| nested.get("name"))
                        .or_else(|| item.get("name"))
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    Ok(ToolDeclaration::Provider(ProviderTool {
                        format: FORMAT,
                        name: name.to_owned(),
                        tool_type: kind.to_owned(),
                        value: item.clone(),
                    }))
                }
            }
        })
        .collect()
}
