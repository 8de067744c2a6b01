//! [`ToolInfo`]: what the model sees of a tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the model sees of one tool: its model-facing name, a description and
/// the JSON Schema of its arguments.
///
/// This is the provider-neutral shape behind OpenAI's `function`
/// (`name`, `description`, `parameters`), Anthropic's tool
/// (`name`, `description`, `input_schema`) and MCP's tool
/// (`name`, `description`, `inputSchema`); the [`wire`](crate::wire) module
/// converts it to each.
///
/// A `ToolInfo` is checked when a definition is bound
/// ([`BindErrorKind::InvalidToolInfo`](crate::bind::BindErrorKind::InvalidToolInfo)):
/// the name must satisfy the definition's [`NameRules`](crate::tool::NameRules)
/// and must not be [`STRUCTURED_OUTPUT_TOOL_NAME`](crate::tool::STRUCTURED_OUTPUT_TOOL_NAME),
/// the description must not be blank, and `parameters` must be a valid JSON
/// Schema whose top level is `"type": "object"`.
///
/// ```
/// use agent_loop::tool::ToolInfo;
/// use serde_json::json;
///
/// let info = ToolInfo::new(
///     "get_weather",
///     "Current weather for a city.",
///     json!({
///         "type": "object",
///         "properties": { "city": { "type": "string" } },
///         "required": ["city"]
///     }),
/// );
/// assert_eq!(info.name, "get_weather");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Model-facing tool name, e.g. `get_weather`. By default it must match
    /// `^[a-zA-Z0-9_-]{1,64}$` (see [`NameRules`](crate::tool::NameRules)).
    pub name: String,
    /// What the tool does, for the model. Must not be blank.
    pub description: String,
    /// JSON Schema of the arguments object; its top level must be
    /// `"type": "object"`.
    pub parameters: Value,
}

impl ToolInfo {
    /// A `ToolInfo` from its three parts. Nothing is checked here: the
    /// checks run at bind, where a failure is a typed
    /// [`BindError`](crate::bind::BindError).
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// A `ToolInfo` whose parameters are the empty object schema
    /// `{"type": "object", "properties": {}}`: a tool that takes no arguments.
    pub fn without_parameters(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(
            name,
            description,
            serde_json::json!({ "type": "object", "properties": {} }),
        )
    }
}
