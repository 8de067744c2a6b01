//! [`BindError`]: why [`bind`](crate::Definition::bind) refused to bind.

use crate::tool::BoxError;

/// What went wrong while binding, in the order bind checks; see
/// [`BindError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BindErrorKind {
    /// The session id is the nil UUID. Checked before anything else.
    InvalidSessionId,
    /// The loop id is the nil UUID. Checked before anything else.
    InvalidLoopId,
    /// An extra tool definition from the [`Bindings`](crate::bind::Bindings)
    /// breaks a definition rule; the source is the
    /// [`DefinitionError`](crate::DefinitionError). No factory ran.
    InvalidDefinition,
    /// Two different tool definitions (not clones of one another) share a
    /// definition name, anywhere in the binding; checked before tool names,
    /// so two `from_fn("search", ..)` are this kind. Every such name is in
    /// [`BindError::duplicates`]. No factory ran.
    DuplicateDefinitionName,
    /// Two different tool definitions produce the same model-facing tool
    /// name, anywhere in the binding (base, any mode, extra tools): the
    /// model could not tell them apart. Every such pair is in
    /// [`BindError::duplicates`]. For declared names no factory ran; names
    /// a [`discovering`](crate::tool::Definition::discovering) definition
    /// (an MCP server) builds are checked once every factory ran, and the
    /// built tools are dropped.
    DuplicateToolName,
    /// A built tool's [`ToolInfo`](crate::tool::ToolInfo) is unusable: no
    /// tool built, names other than the declared ones, two tools of one
    /// discovering definition with one name, a name that breaks the rules
    /// or is reserved, or parameters that are not a valid JSON Schema of
    /// `"type": "object"`. (A blank description is allowed.)
    InvalidToolInfo,
    /// A factory returned an error; the source is that error.
    FactoryFailed,
    /// A factory panicked; the source holds the panic message.
    FactoryPanicked,
}

/// A binding that could not be made: returned by
/// [`bind`](crate::Definition::bind). Nothing of it exists: binding is all
/// or nothing.
///
/// - `name`: the tool or definition concerned (for a duplicate tool name,
///   the tool name; when several names collide, the first).
/// - `duplicates`: for the two duplicate kinds, every colliding name with
///   both of its owners, one entry per pair (three definitions named alike
///   are three pairs).
/// - `index`: a position where that helps: the extra tool's index in
///   [`Bindings::extra_tools`](crate::bind::Bindings::extra_tools) for
///   `InvalidDefinition`, the tool's index in what its factory returned for
///   `InvalidToolInfo`.
/// - `source()`: the factory's error, the [`FactoryPanic`], the
///   [`DefinitionError`](crate::DefinitionError) or the schema error.
///
/// Display is one line a user can act on, e.g.
/// ``bind: duplicate tool name `search` (definitions `web` and `docs`)``,
/// and leaves the cause to `source()`: an error reporter (anyhow, eyre)
/// prints the chain, e.g. ``bind: the factory of tool definition `read`
/// failed`` caused by ``no binding data of type `Workspace`: supply it with
/// `Bindings::with` ``.
#[derive(Debug, thiserror::Error)]
#[error("bind: {detail}")]
#[non_exhaustive]
pub struct BindError {
    /// What went wrong.
    pub kind: BindErrorKind,
    /// The tool or definition concerned.
    pub name: Option<String>,
    /// Its position, where that helps.
    pub index: Option<usize>,
    /// Every duplicate name, for
    /// [`DuplicateDefinitionName`](BindErrorKind::DuplicateDefinitionName) and
    /// [`DuplicateToolName`](BindErrorKind::DuplicateToolName) (`name` is the
    /// first's); empty for the other kinds.
    pub duplicates: Vec<Duplicate>,
    /// The rest of the one-line message.
    pub detail: String,
    source: Option<BoxError>,
}

impl BindError {
    pub(crate) fn new(kind: BindErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            name: None,
            index: None,
            duplicates: Vec::new(),
            detail: detail.into(),
            source: None,
        }
    }

    pub(crate) fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    pub(crate) fn index(mut self, index: usize) -> Self {
        self.index = Some(index);
        self
    }

    pub(crate) fn with_duplicates(mut self, duplicates: Vec<Duplicate>) -> Self {
        self.duplicates = duplicates;
        self
    }

    pub(crate) fn source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }
}

/// The panic of a factory: the source of a [`BindError`] of kind
/// [`FactoryPanicked`](BindErrorKind::FactoryPanicked).
#[derive(Clone, Debug, thiserror::Error)]
#[error("panicked: {message}")]
#[non_exhaustive]
pub struct FactoryPanic {
    /// The panic's message, when it was a string.
    pub message: String,
}

/// One name that two different tool definitions of a binding both claim,
/// listed in [`BindError::duplicates`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Duplicate {
    /// The shared name: a definition name for
    /// [`DuplicateDefinitionName`](BindErrorKind::DuplicateDefinitionName), a
    /// model-facing tool name for
    /// [`DuplicateToolName`](BindErrorKind::DuplicateToolName).
    pub name: String,
    /// The names of the two definitions, in the order bind meets them (the
    /// base's tools, the extra tools, then each mode's tools).
    pub definitions: [String; 2],
    /// The tool names each of the two declares (for a
    /// [`discovering`](crate::tool::Definition::discovering) definition,
    /// the names it built), in the same order.
    pub tool_names: [Vec<String>; 2],
}
