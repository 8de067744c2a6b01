//! The builder of a loop definition: [`Definition::builder`](crate::Definition::builder).
//!
//! [`DefinitionBuilder`] records in its type which set-once options were
//! given, so the compiler enforces them: `.build()` without `.name(..)`
//! fails with "the definition has no name", and a second `.name(..)`,
//! `.tool_limits(..)`, `.initial_mode(..)`, `.instructions(..)` or
//! `.name_rules(..)` fails with "… is already set". Each type parameter is
//! [`Unset`] or [`Set`]; the traits below only name those rules in the
//! compiler's messages. Tools, middlewares and modes **append** in call
//! order and are copied in.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::definition::{Defined, Definition};
use crate::gate::{ApprovalKey, Gate, Gates};
use crate::limits::ToolLimits;
use crate::middleware::ToolMiddleware;
use crate::mode::Mode;
use crate::tool::{self, NameRules};

/// The recipe of a loop definition, shared by every state of it.
pub(crate) struct Recipe {
    /// The loop definition's name, e.g. `support-agent`; must not be blank
    /// (checked by `validate`).
    pub(crate) name: String,
    /// The base tool definitions, in order.
    pub(crate) tools: Vec<tool::Definition>,
    /// Middlewares around every tool execution; the first is the outermost.
    pub(crate) middlewares: Vec<Arc<dyn ToolMiddleware>>,
    /// The base mode's gates, in the order they are asked.
    pub(crate) gates: Gates,
    /// Signs the calls a paused turn waits on.
    pub(crate) approval_key: Option<ApprovalKey>,
    /// Limit overrides of the base mode; unset fields take the defaults.
    pub(crate) tool_limits: ToolLimits,
    /// Named modes, in order.
    pub(crate) modes: Vec<Mode>,
    /// The mode a new binding starts in. Required when modes exist.
    pub(crate) initial_mode: Option<String>,
    /// Instructions the model receives in the base mode.
    pub(crate) instructions: Option<String>,
    /// Which tool names are valid; [`NameRules::OpenAi`] by default.
    pub(crate) name_rules: NameRules,
}

/// A set-once option not given yet. Zero-sized, used only as a type
/// parameter of [`DefinitionBuilder`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Unset;

/// A set-once option already given. Zero-sized, used only as a type
/// parameter of [`DefinitionBuilder`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Set;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Unset {}
    impl Sealed for super::Set {}
}

/// `.build()` needs a name: implemented for [`Set`] only.
#[diagnostic::on_unimplemented(
    message = "the definition has no name: call `.name(..)` before `.build()`",
    label = "`.name(..)` is required"
)]
pub trait NameIsSet: sealed::Sealed {}
impl NameIsSet for Set {}

/// `.name(..)` is called once: implemented for [`Unset`] only.
#[diagnostic::on_unimplemented(
    message = "the definition's name is already set: call `.name(..)` once",
    label = "second `.name(..)`"
)]
pub trait NameIsUnset: sealed::Sealed {}
impl NameIsUnset for Unset {}

/// `.tool_limits(..)` is called once: implemented for [`Unset`] only.
#[diagnostic::on_unimplemented(
    message = "the base tool limits are already set: call `.tool_limits(..)` once, with every field you need",
    label = "second `.tool_limits(..)`"
)]
pub trait ToolLimitsAreUnset: sealed::Sealed {}
impl ToolLimitsAreUnset for Unset {}

/// `.initial_mode(..)` is called once: implemented for [`Unset`] only.
#[diagnostic::on_unimplemented(
    message = "the initial mode is already set: call `.initial_mode(..)` once",
    label = "second `.initial_mode(..)`"
)]
pub trait InitialModeIsUnset: sealed::Sealed {}
impl InitialModeIsUnset for Unset {}

/// `.instructions(..)` is called once: implemented for [`Unset`] only.
#[diagnostic::on_unimplemented(
    message = "the base instructions are already set: call `.instructions(..)` once",
    label = "second `.instructions(..)`"
)]
pub trait InstructionsAreUnset: sealed::Sealed {}
impl InstructionsAreUnset for Unset {}

/// `.name_rules(..)` is called once: implemented for [`Unset`] only.
#[diagnostic::on_unimplemented(
    message = "the name rules are already set: call `.name_rules(..)` once",
    label = "second `.name_rules(..)`"
)]
pub trait NameRulesAreUnset: sealed::Sealed {}
impl NameRulesAreUnset for Unset {}

/// Builds a [`Definition<Defined>`](crate::Definition), from
/// [`Definition::builder`](crate::Definition::builder).
///
/// `.name(..)` is required. `tool_limits`, `initial_mode`, `instructions`
/// and `name_rules` are optional and set at most once; each type parameter
/// says whether its option was given ([`Set`]) or not ([`Unset`]).
/// `tool`/`tools`, `middleware`/`middlewares` and `mode`/`modes` append in
/// call order, any number of times. Nothing is checked beyond the types
/// until [`Definition::validate`](crate::Definition::validate).
///
/// ```
/// use agent_loop_core::{Definition, Mode, ToolLimits};
///
/// let definition = Definition::builder()
///     .name("assistant")
///     .tool_limits(ToolLimits::new().iterations(10))
///     .modes([Mode::new("plan"), Mode::new("act")])
///     .initial_mode("plan")
///     .build();
/// assert_eq!(definition.name(), "assistant");
/// ```
#[must_use = "a builder does nothing until `.build()`"]
pub struct DefinitionBuilder<
    Name = Unset,
    Limits = Unset,
    InitialMode = Unset,
    Instructions = Unset,
    Rules = Unset,
> {
    recipe: Recipe,
    state: PhantomData<States<Name, Limits, InitialMode, Instructions, Rules>>,
}

/// The option states as a function's output: zero-sized, and `Send`,
/// `Sync` and covariant whatever the markers are.
type States<Name, Limits, InitialMode, Instructions, Rules> =
    fn() -> (Name, Limits, InitialMode, Instructions, Rules);

impl DefinitionBuilder {
    pub(crate) fn new() -> Self {
        Self {
            recipe: Recipe {
                name: String::new(),
                tools: Vec::new(),
                middlewares: Vec::new(),
                gates: Gates::default(),
                approval_key: None,
                tool_limits: ToolLimits::new(),
                modes: Vec::new(),
                initial_mode: None,
                instructions: None,
                name_rules: NameRules::default(),
            },
            state: PhantomData,
        }
    }
}

impl<Name, Limits, InitialMode, Instructions, Rules>
    DefinitionBuilder<Name, Limits, InitialMode, Instructions, Rules>
{
    fn into_state<N, L, I, X, R>(self) -> DefinitionBuilder<N, L, I, X, R> {
        DefinitionBuilder {
            recipe: self.recipe,
            state: PhantomData,
        }
    }

    /// Sets the loop definition's name, e.g. `support-agent`. Required,
    /// once. A blank name or one with control characters is refused by
    /// [`Definition::validate`](crate::Definition::validate).
    pub fn name(
        mut self,
        name: impl Into<String>,
    ) -> DefinitionBuilder<Set, Limits, InitialMode, Instructions, Rules>
    where
        Name: NameIsUnset,
    {
        self.recipe.name = name.into();
        self.into_state()
    }

    /// Appends one tool definition to the base tools. Accepts an owned
    /// definition or a reference (cloned, which is cheap).
    pub fn tool(mut self, definition: impl Into<tool::Definition>) -> Self {
        self.recipe.tools.push(definition.into());
        self
    }

    /// Appends tool definitions to the base tools, in order. Accepts owned
    /// definitions or references (cloned: the caller's collection stays
    /// theirs).
    pub fn tools<D: Into<tool::Definition>>(
        mut self,
        definitions: impl IntoIterator<Item = D>,
    ) -> Self {
        self.recipe
            .tools
            .extend(definitions.into_iter().map(Into::into));
        self
    }

    /// Appends one middleware; the first registered is the outermost.
    pub fn middleware(mut self, middleware: impl ToolMiddleware) -> Self {
        self.recipe.middlewares.push(Arc::new(middleware));
        self
    }

    /// Appends an approval gate of the base mode (and of every mode that
    /// sets none of its own): it sees each call a model makes after its
    /// arguments passed the schema, before the middlewares, and allows it,
    /// denies it, or asks (the turn pauses). Gates are asked in the order they were added; the first
    /// that does not allow decides. See [`gate`](crate::gate).
    pub fn gate(mut self, gate: impl Gate) -> Self {
        self.recipe.gates.0.push(Arc::new(gate));
        self
    }

    /// Appends a gate of the tool named `tool_name` alone: its calls are
    /// asked this tool's gates instead of the mode's (in every mode that
    /// sets none of its own for the tool). A name no tool has is never
    /// asked about.
    pub fn tool_gate(mut self, tool_name: impl Into<String>, gate: impl Gate) -> Self {
        self.recipe.gates.1.push((tool_name.into(), Arc::new(gate)));
        self
    }

    /// Signs every call a paused turn waits on with `key` (HMAC-SHA256
    /// over the session and loop ids, the call id, the tool name and the
    /// arguments); a resume then takes a decision only with its call's
    /// MAC. Without a key, pending calls carry none and decisions need
    /// none: keep the paused turn on the server then. A second call
    /// replaces the key.
    pub fn approval_key(mut self, key: ApprovalKey) -> Self {
        self.recipe.approval_key = Some(key);
        self
    }

    /// Appends shared middlewares, in order; the first registered is the
    /// outermost.
    pub fn middlewares(
        mut self,
        middlewares: impl IntoIterator<Item = Arc<dyn ToolMiddleware>>,
    ) -> Self {
        self.recipe.middlewares.extend(middlewares);
        self
    }

    /// Sets the limit overrides of the base mode, once; fields they leave
    /// unset take the defaults (25 iterations and 100 tool calls per turn,
    /// 8 calls at once per batch, results not cut). Invalid values are
    /// refused by [`Definition::validate`](crate::Definition::validate) as
    /// [`DefinitionErrorKind::InvalidToolLimits`](crate::DefinitionErrorKind::InvalidToolLimits).
    pub fn tool_limits(
        mut self,
        tool_limits: ToolLimits,
    ) -> DefinitionBuilder<Name, Set, InitialMode, Instructions, Rules>
    where
        Limits: ToolLimitsAreUnset,
    {
        self.recipe.tool_limits = tool_limits;
        self.into_state()
    }

    /// Appends one mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.recipe.modes.push(mode);
        self
    }

    /// Appends modes, in order.
    pub fn modes(mut self, modes: impl IntoIterator<Item = Mode>) -> Self {
        self.recipe.modes.extend(modes);
        self
    }

    /// Sets the mode a new binding starts in, once. Required when modes
    /// exist; it must name one of them (checked by
    /// [`Definition::validate`](crate::Definition::validate)).
    pub fn initial_mode(
        mut self,
        mode: impl Into<String>,
    ) -> DefinitionBuilder<Name, Limits, Set, Instructions, Rules>
    where
        InitialMode: InitialModeIsUnset,
    {
        self.recipe.initial_mode = Some(mode.into());
        self.into_state()
    }

    /// Sets the instructions the model receives in the base mode, once.
    pub fn instructions(
        mut self,
        instructions: impl Into<String>,
    ) -> DefinitionBuilder<Name, Limits, InitialMode, Set, Rules>
    where
        Instructions: InstructionsAreUnset,
    {
        self.recipe.instructions = Some(instructions.into());
        self.into_state()
    }

    /// Sets which tool names are valid, once; [`NameRules::OpenAi`] when
    /// not set.
    pub fn name_rules(
        mut self,
        name_rules: NameRules,
    ) -> DefinitionBuilder<Name, Limits, InitialMode, Instructions, Set>
    where
        Rules: NameRulesAreUnset,
    {
        self.recipe.name_rules = name_rules;
        self.into_state()
    }

    /// Finishes the definition. Needs `.name(..)`; nothing else is checked
    /// until [`Definition::validate`](crate::Definition::validate).
    pub fn build(self) -> Definition<Defined>
    where
        Name: NameIsSet,
    {
        Definition::from_recipe(self.recipe)
    }
}
