//! [`ToolDeclaration`]: one element of a request's `tools` array, as parsed.

use serde_json::Value;

use super::error::{WireError, WireErrorKind};
use agent_loop_core::conversation::WireFormat;
use agent_loop_core::tool::ToolInfo;

/// One element of a request's `tools` array.
///
/// Function tools (OpenAI `"type": "function"`, Anthropic custom tools with
/// an `input_schema`, every MCP tool) become a [`ToolInfo`] that a binding
/// can check and run. Tools the provider defines and runs or specifies
/// itself (Anthropic's `memory_20250818`, `web_search_20250305`,
/// `bash_20250124`; OpenAI's `custom` tools) are kept verbatim as a
/// [`ProviderTool`]: they are sent back to their own format only.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolDeclaration {
    /// A function tool.
    Function(ToolInfo),
    /// A provider-defined tool, kept verbatim.
    Provider(ProviderTool),
}

/// A tool the provider defines (a `type` other than `function` or
/// `custom`), kept verbatim.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProviderTool {
    /// The format it was declared in, the only one it can be sent to.
    pub format: WireFormat,
    /// Its `name` (empty when it has none).
    pub name: String,
    /// Its `type`, e.g. `memory_20250818`.
    pub tool_type: String,
    /// The declaration as it was given.
    pub value: Value,
}

impl ToolDeclaration {
    /// The function tool, if this is one.
    pub fn as_function(&self) -> Option<&ToolInfo> {
        match self {
            Self::Function(info) => Some(info),
            Self::Provider(_) => None,
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        match self {
            Self::Function(info) => &info.name,
            Self::Provider(tool) => &tool.name,
        }
    }
}

/// A whole request body as parsed: its conversation (system prompt first)
/// and its tools. For reading recorded traffic and stored requests.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ParsedRequest {
    /// The messages, oldest first; the system prompt comes first as
    /// [`Message::System`](agent_loop_core::conversation::Message::System) messages.
    pub conversation: Vec<agent_loop_core::conversation::Message>,
    /// The `tools` array, in order; empty when the request has none.
    pub tools: Vec<ToolDeclaration>,
}

/// A `tools` array of `format` for parsed declarations, in order: function
/// tools as `export_function` writes them, provider tools of `format`
/// verbatim. A provider tool of another format is
/// [`WireErrorKind::ProviderTool`] at `tools[i]`: only its own provider
/// knows what it is.
pub(crate) fn export(
    format: WireFormat,
    tools: &[ToolDeclaration],
    export_function: impl Fn(&ToolInfo) -> Value,
) -> Result<Vec<Value>, WireError> {
    tools
        .iter()
        .enumerate()
        .map(|(index, tool)| match tool {
            ToolDeclaration::Function(info) => Ok(export_function(info)),
            ToolDeclaration::Provider(tool) if tool.format == format => Ok(tool.value.clone()),
            ToolDeclaration::Provider(tool) => Err(WireError::new(
                format,
                format!("tools[{index}]"),
                WireErrorKind::ProviderTool {
                    name: tool.name.clone(),
                    tool_type: tool.tool_type.clone(),
                    format: tool.format,
                },
            )),
        })
        .collect()
}
