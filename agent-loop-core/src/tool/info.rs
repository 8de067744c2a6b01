//! [`ToolInfo`]: what the model sees of a tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::{Extras, WireFormat};

/// What the model sees of one tool: its model-facing name, a description and
/// the JSON Schema of its arguments.
///
/// This is the provider-neutral shape behind OpenAI's `function`
/// (`name`, `description`, `parameters`), Anthropic's tool
/// (`name`, `description`, `input_schema`) and MCP's tool
/// (`name`, `description`, `inputSchema`); the `wire` module
/// converts it to each.
///
/// A `ToolInfo` is checked when a definition is bound
/// ([`BindErrorKind::InvalidToolInfo`](crate::bind::BindErrorKind::InvalidToolInfo)):
/// the name must satisfy the definition's [`NameRules`](crate::tool::NameRules)
/// and must not be [`STRUCTURED_OUTPUT_TOOL_NAME`](crate::tool::STRUCTURED_OUTPUT_TOOL_NAME),
/// `parameters` and the values of `extras` must nest objects and arrays at
/// most 128 levels deep (only code builds deeper ones, and checking,
/// copying or sending them would recurse once per level), and
/// `parameters` must be a valid JSON Schema whose top level is
/// `"type": "object"`. A blank description is allowed (OpenAI and Anthropic
/// both accept it, and real tool lists use it): bind logs a `tracing`
/// warning, since a model calls an undescribed tool less reliably.
///
/// ```
/// use agent_loop_core::tool::ToolInfo;
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
#[non_exhaustive]
pub struct ToolInfo {
    /// Model-facing tool name, e.g. `get_weather`. By default it must match
    /// `^[a-zA-Z0-9_-]{1,64}$`, the OpenAI and Anthropic function name
    /// pattern (see [`NameRules`](crate::tool::NameRules) for the others).
    pub name: String,
    /// What the tool does, for the model. May be empty.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments object; its top level must be
    /// `"type": "object"`.
    pub parameters: Value,
    /// Strict mode: the provider constrains the model's arguments to the
    /// schema (OpenAI `function.strict`, Anthropic `strict`). `None` leaves
    /// the field out, so the provider's default applies. OpenAI's strict
    /// mode has schema rules of its own (every property required,
    /// `additionalProperties: false`) that the provider checks, not bind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Other provider fields of the declaration, written back to their own
    /// format only (Anthropic `cache_control`, `defer_loading`,
    /// `allowed_callers`; MCP `title`, `outputSchema`, `annotations`).
    #[serde(default, skip_serializing_if = "Extras::is_empty")]
    pub extras: Extras,
}

impl ToolInfo {
    /// A `ToolInfo` from its three parts, with no `strict` and no extras. Nothing is checked here: the
    /// checks run at bind, where a failure is a typed
    /// [`BindError`](crate::bind::BindError).
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            strict: None,
            extras: Extras::default(),
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

impl ToolInfo {
    /// `true` when its `parameters` or a value of its extras nest deeper
    /// than [`TooDeep::LIMIT`](crate::TooDeep::LIMIT) (128) levels. Such an
    /// info is refused where it enters a binding
    /// ([`BindErrorKind::InvalidToolInfo`](crate::BindErrorKind::InvalidToolInfo)),
    /// and a model client should refuse to send it (the HTTP models of
    /// `agent-loop-providers` do, unsent): serialising it would recurse once per level.
    pub fn too_deep(&self) -> bool {
        super::schema::info_too_deep(self)
    }
}

impl ToolInfo {
    /// The MCP annotations of a tool listed by an MCP server (its `title`
    /// and `annotations` fields, kept in [`extras`](Self::extras)): hints a
    /// middleware may use, e.g. to refuse every tool that is not
    /// read-only in a review mode. All unset for any other tool.
    ///
    /// They are hints, as the MCP specification says: a server may get
    /// them wrong, so a policy should treat an untrusted server's
    /// `readOnlyHint` as a claim, not a guarantee.
    ///
    /// ```
    /// use agent_loop_core::ToolInfo;
    /// use agent_loop_core::conversation::{Extras, WireFormat};
    /// use serde_json::json;
    ///
    /// // What `agent_loop::wire::mcp::parse_list_tools_result` keeps of a
    /// // listed tool's `title` and `annotations`.
    /// let mut info = ToolInfo::new("read_file", "Reads a file.", json!({"type": "object"}));
    /// let listed = json!({
    ///     "title": "Read File",
    ///     "annotations": {"readOnlyHint": true, "destructiveHint": false}
    /// });
    /// info.extras = Extras::new(WireFormat::McpToolsList, listed.as_object().cloned().unwrap_or_default());
    /// let annotations = info.annotations();
    /// assert_eq!(annotations.title.as_deref(), Some("Read File"));
    /// assert_eq!(annotations.read_only_hint, Some(true));
    /// assert_eq!(annotations.destructive_hint, Some(false));
    /// assert_eq!(annotations.idempotent_hint, None);
    /// ```
    pub fn annotations(&self) -> ToolAnnotations {
        let Some(fields) = self.extras.fields_for(WireFormat::McpToolsList) else {
            return ToolAnnotations::default();
        };
        let annotations = fields.get("annotations");
        let hint = |name: &str| {
            annotations
                .and_then(|a| a.get(name))
                .and_then(Value::as_bool)
        };
        ToolAnnotations {
            title: fields
                .get("title")
                .or_else(|| annotations.and_then(|a| a.get("title")))
                .and_then(Value::as_str)
                .map(str::to_owned),
            read_only_hint: hint("readOnlyHint"),
            destructive_hint: hint("destructiveHint"),
            idempotent_hint: hint("idempotentHint"),
            open_world_hint: hint("openWorldHint"),
        }
    }
}

/// An MCP tool's title and behaviour hints (MCP specification, "Tools" /
/// "Tool Annotations"), read by [`ToolInfo::annotations`]. `None` is a
/// hint the server did not give; the specification's defaults for a
/// missing hint are: not read-only, destructive, not idempotent, open
/// world.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title (the tool's `title`, else
    /// `annotations.title`).
    pub title: Option<String>,
    /// `readOnlyHint`: the tool does not modify its environment.
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`: the tool may destroy data (meaningful when not
    /// read-only).
    pub destructive_hint: Option<bool>,
    /// `idempotentHint`: calling it again with the same arguments has no
    /// further effect.
    pub idempotent_hint: Option<bool>,
    /// `openWorldHint`: the tool reaches outside entities (the web).
    pub open_world_hint: Option<bool>,
}
