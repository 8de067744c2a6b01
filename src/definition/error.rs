//! [`DefinitionError`]: why [`validate`](crate::Definition::validate) refused
//! a definition.

use std::fmt;

use crate::tool::NameError;

/// What kind of rule a definition broke at
/// [`validate`](crate::Definition::validate); see [`DefinitionError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DefinitionErrorKind {
    /// The loop definition's name is blank.
    MissingName,
    /// The loop definition's name holds control characters (a line break
    /// would split every one-line error and log line that names it).
    InvalidName,
    /// A tool definition has a blank name or one with control characters,
    /// declares no tool, or declares a
    /// tool name that breaks the definition's [`NameRules`](crate::tool::NameRules).
    InvalidTool,
    /// A tool definition declares [`STRUCTURED_OUTPUT_TOOL_NAME`](crate::tool::STRUCTURED_OUTPUT_TOOL_NAME).
    ReservedToolName,
    /// A base limit cannot be valid (negative in a config file, `parallel`
    /// unlimited, `result_bytes` from 1 to 255).
    InvalidToolLimits,
    /// A mode has a blank name, a name with surrounding white space or
    /// control characters, or a limit that cannot be valid.
    InvalidMode,
    /// Two modes share a name.
    DuplicateMode,
    /// Modes exist but no initial mode is set.
    MissingInitialMode,
    /// The initial mode names no declared mode.
    InvalidInitialMode,
}

impl DefinitionErrorKind {
    fn describe(self) -> &'static str {
        match self {
            Self::MissingName => "the definition's name is blank",
            Self::InvalidName => "the definition's name holds control characters",
            Self::InvalidTool => "invalid tool definition",
            Self::ReservedToolName => "reserved tool name",
            Self::InvalidToolLimits => "invalid tool limit",
            Self::InvalidMode => "invalid mode",
            Self::DuplicateMode => "duplicate mode name",
            Self::MissingInitialMode => "modes are declared but no initial mode is set",
            Self::InvalidInitialMode => "the initial mode names no declared mode",
        }
    }
}

/// A definition that breaks a rule: the first failure found by
/// [`validate`](crate::Definition::validate) (or by converting a
/// [`ToolLimitsConfig`](crate::ToolLimitsConfig)), and the source of a
/// [`BindError`](crate::BindError) of kind
/// [`InvalidDefinition`](crate::BindErrorKind::InvalidDefinition) for an
/// extra tool definition that breaks one.
///
/// `field` is a path into the definition (`tools[2].tool_names[0]`,
/// `modes[1].tool_limits.parallel`, `initial_mode`); `value` is the
/// offending value as text (Rust debug form for strings, so blank and
/// space-padded names are visible); `reason` says why when the kind alone
/// does not. For a tool name that breaks the definition's
/// [`NameRules`](crate::tool::NameRules), `source()` is the
/// [`NameError`] that says which rule.
///
/// Display is one line, e.g. ``validate: invalid mode at `modes[0].name`
/// (value ""): a mode name must not be blank``.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "validate: {} at `{field}` (value {value}){}",
    .kind.describe(),
    Reason(.reason)
)]
#[non_exhaustive]
pub struct DefinitionError {
    /// The rule broken.
    pub kind: DefinitionErrorKind,
    /// Where: a path into the definition.
    pub field: String,
    /// What: the offending value.
    pub value: String,
    /// Why, when the kind alone does not say.
    pub reason: Option<String>,
    source: Option<NameError>,
}

impl DefinitionError {
    pub(crate) fn new(
        kind: DefinitionErrorKind,
        field: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            value: value.into(),
            reason: None,
            source: None,
        }
    }

    pub(crate) fn because(mut self, reason: impl fmt::Display) -> Self {
        self.reason = Some(reason.to_string());
        self
    }

    /// The name rule broken, kept as `source()`.
    pub(crate) fn caused_by(mut self, source: NameError) -> Self {
        self.source = Some(source);
        self
    }
}

/// `": reason"` when there is one.
struct Reason<'a>(&'a Option<String>);

impl fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(reason) => write!(f, ": {reason}"),
            None => Ok(()),
        }
    }
}
