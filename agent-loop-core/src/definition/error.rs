//! [`DefinitionError`]: why [`validate`](crate::Definition::validate) refused
//! a definition.

use std::fmt;

use crate::limits::InvalidLimit;
use std::sync::Arc;

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

impl fmt::Display for DefinitionErrorKind {
    /// What the kind means, in a few words: `invalid mode`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::MissingName => "the definition's name is blank",
            Self::InvalidName => "the definition's name holds control characters",
            Self::InvalidTool => "invalid tool definition",
            Self::ReservedToolName => "reserved tool name",
            Self::InvalidToolLimits => "invalid tool limit",
            Self::InvalidMode => "invalid mode",
            Self::DuplicateMode => "duplicate mode name",
            Self::MissingInitialMode => "modes are declared but no initial mode is set",
            Self::InvalidInitialMode => "the initial mode names no declared mode",
        })
    }
}

/// A definition that breaks a rule: the first failure found by
/// [`validate`](crate::Definition::validate), and the source of a
/// [`BindError`](crate::BindError) of kind
/// [`InvalidDefinition`](crate::BindErrorKind::InvalidDefinition) for an
/// extra tool definition that breaks one.
///
/// `field` is a path into the definition (`tools[2].tool_names[0]`,
/// `modes[1].tool_limits.parallel`, `initial_mode`); `value` is the
/// offending value as text (Rust debug form for strings, so blank and
/// space-padded names are visible); `reason` says why when the kind alone
/// does not. `source()` is the rule's own error where there is one: the
/// [`NameError`] for a tool name that breaks the definition's
/// [`NameRules`](crate::tool::NameRules), the [`InvalidLimit`] for a limit.
///
/// Display is one line, e.g. ``validate: invalid mode at `modes[0].name`
/// (value ""): a mode name must not be blank``.
#[derive(Clone, Debug, thiserror::Error)]
#[error("validate: {kind} at `{field}` (value {value}){}", Reason(.reason))]
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
    #[source]
    source: Option<SharedSource>,
}

/// A rule's own error, shared so that a [`DefinitionError`] stays `Clone`.
/// Not an error itself: it dereferences to the rule's error, so the
/// derived `source()` hands that one out, and it downcasts to its own type
/// (a source typed `Arc<dyn Error>` would downcast only to the `Arc`).
#[derive(Clone, Debug)]
struct SharedSource(Arc<dyn std::error::Error + Send + Sync>);

impl std::ops::Deref for SharedSource {
    type Target = dyn std::error::Error + Send + Sync;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
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
        error.source = Some(SharedSource(Arc::new(limit)));
        error
    }

    pub(crate) fn because(mut self, reason: impl fmt::Display) -> Self {
        self.reason = Some(reason.to_string());
        self
    }

    /// The name rule broken, kept as `source()`.
    pub(crate) fn caused_by(mut self, source: NameError) -> Self {
        self.source = Some(SharedSource(Arc::new(source)));
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
