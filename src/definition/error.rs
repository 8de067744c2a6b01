//! [`DefinitionError`]: why [`validate`](crate::Definition::validate) refused
//! a definition.

use std::fmt;

use crate::limits::InvalidLimit;

/// What kind of rule a definition broke (DESIGN.md section 5).
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
    /// A base limit cannot be valid (a count of `0`, `result_bytes` from 1
    /// to 255); the [`InvalidLimit`] is the error's source.
    InvalidToolLimits,
    /// A mode has a blank name, a name with surrounding white space or
    /// control characters, or a limit that cannot be valid (then the
    /// [`InvalidLimit`] is the error's source).
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
/// [`validate`](crate::Definition::validate).
///
/// `field` is a path into the definition (`tools[2].tool_names[0]`,
/// `modes[1].tool_limits.parallel`, `initial_mode`); `value` is the
/// offending value as text (Rust debug form for strings, so blank and
/// space-padded names are visible).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefinitionError {
    /// The rule broken.
    pub kind: DefinitionErrorKind,
    /// Where: a path into the definition.
    pub field: String,
    /// What: the offending value.
    pub value: String,
    /// Why, when the kind alone does not say (e.g. the name rule broken).
    pub reason: Option<String>,
    /// The invalid limit, for [`InvalidToolLimits`](DefinitionErrorKind::InvalidToolLimits)
    /// and a mode's limits. Boxed to keep the error small.
    source: Option<Box<InvalidLimit>>,
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

    /// A limit error under `field` (`tool_limits`, `modes[1].tool_limits`):
    /// the field path gets the limit's name, and `limit` becomes the source.
    pub(crate) fn limit(kind: DefinitionErrorKind, field: &str, limit: InvalidLimit) -> Self {
        let mut error = Self::new(
            kind,
            format!("{field}.{}", limit.field),
            limit.value.clone(),
        );
        error.source = Some(Box::new(limit));
        error
    }

    pub(crate) fn because(mut self, reason: impl fmt::Display) -> Self {
        self.reason = Some(reason.to_string());
        self
    }
}

impl fmt::Display for DefinitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "validate: {} at `{}` (value {})",
            self.kind.describe(),
            self.field,
            self.value
        )?;
        if let Some(reason) = &self.reason {
            write!(f, ": {reason}")?;
        }
        Ok(())
    }
}

/// The source is the [`InvalidLimit`] itself (not its box), so
/// `source().downcast_ref::<InvalidLimit>()` finds it.
impl std::error::Error for DefinitionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|limit| limit as &(dyn std::error::Error + 'static))
    }
}
