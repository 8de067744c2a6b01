//! [`Mode`]: a named variant of the loop with its own tools, limit overrides
//! and instructions.
//!
//! The unnamed base mode always exists. A mode that never sets its tools
//! inherits the base tools; [`Mode::no_tools`] gives it an explicitly empty
//! set (only the binding's extra tools remain). Its [`ToolLimits`] override
//! the base field by field: a field it does not set inherits the base.
//!
//! A `Mode` is a plain value (kept in a `Vec`, handed to
//! [`DefinitionBuilder::modes`](crate::definition::DefinitionBuilder::modes)),
//! so it has one type whatever was set on it, and its setters replace an
//! earlier value: the last call wins.

use crate::gate::{Gate, Gates};
use crate::limits::ToolLimits;
use crate::tool;

/// A named mode of a loop definition.
///
/// ```
/// use agent_loop_core::{Mode, ToolLimits};
///
/// let review = Mode::new("review")
///     .tool_limits(ToolLimits::new().iterations(5))
///     .instructions("Read, never write.");
/// assert_eq!(review.name(), "review");
/// ```
#[derive(Clone, Debug)]
pub struct Mode {
    pub(crate) name: String,
    /// `None`: inherit the base tools. `Some(empty)`: no tools of its own.
    pub(crate) tools: Option<Vec<tool::Definition>>,
    pub(crate) tool_limits: ToolLimits,
    pub(crate) instructions: Option<String>,
    /// `None`: the base gates.
    pub(crate) gates: Option<Gates>,
    /// Gates of single tools in this mode, by tool name.
    pub(crate) tool_gates: Gates,
}

impl Mode {
    /// A mode named `name` that inherits the base tools and limits.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tools: None,
            tool_limits: ToolLimits::default(),
            instructions: None,
            gates: None,
            tool_gates: Gates::default(),
        }
    }

    /// Appends one tool definition. The first call replaces the inherited
    /// base tools with the mode's own set.
    #[must_use]
    pub fn tool(self, definition: impl Into<tool::Definition>) -> Self {
        self.tools([definition])
    }

    /// Appends tool definitions, in order (copied: the caller's collection
    /// stays theirs). The first call replaces the inherited base tools with
    /// the mode's own set, even when `definitions` is empty.
    #[must_use]
    pub fn tools<D: Into<tool::Definition>>(
        mut self,
        definitions: impl IntoIterator<Item = D>,
    ) -> Self {
        self.tools
            .get_or_insert_with(Vec::new)
            .extend(definitions.into_iter().map(Into::into));
        self
    }

    /// Gives the mode an explicitly empty tool set: the model can call only
    /// the binding's extra tools in it.
    #[must_use]
    pub fn no_tools(mut self) -> Self {
        self.tools = Some(Vec::new());
        self
    }

    /// Sets the limit overrides; a field they leave unset inherits the base
    /// limits. Replaces overrides set earlier (the last call wins; the
    /// overrides are not merged). Invalid values are refused by
    /// [`Definition::validate`](crate::Definition::validate) as
    /// [`DefinitionErrorKind::InvalidMode`](crate::DefinitionErrorKind::InvalidMode)
    /// with the field path `modes[<index>].tool_limits.<field>`.
    #[must_use]
    pub fn tool_limits(mut self, tool_limits: ToolLimits) -> Self {
        self.tool_limits = tool_limits;
        self
    }

    /// Sets the instructions the model receives in this mode. Replaces
    /// instructions set earlier (the last call wins).
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Appends an approval gate of this mode (see
    /// [`gate`](crate::gate)). The first call replaces the base gates
    /// with the mode's own (a mode that sets none asks the base's).
    #[must_use]
    pub fn gate(mut self, gate: impl Gate) -> Self {
        self.gates
            .get_or_insert_with(Gates::default)
            .0
            .push(std::sync::Arc::new(gate));
        self
    }

    /// Appends a gate of the tool named `tool_name` alone, in this mode:
    /// its calls are asked this mode's gates of that tool instead of any
    /// other (the base's for the tool, and the mode's for every tool).
    #[must_use]
    pub fn tool_gate(mut self, tool_name: impl Into<String>, gate: impl Gate) -> Self {
        self.tool_gates
            .1
            .push((tool_name.into(), std::sync::Arc::new(gate)));
        self
    }

    /// Lets every call of this mode run: no gate, whatever the base's
    /// (but the gates of single tools, the base's or this mode's).
    #[must_use]
    pub fn no_gates(mut self) -> Self {
        self.gates = Some(Gates::default());
        self
    }

    /// The mode's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
