//! The loop [`Definition`]: an immutable recipe for one agent loop (name,
//! tools, middlewares, limits, modes) whose lifecycle state is a type
//! parameter:
//!
//! ```text
//! Definition::builder() ... .build()   -> Definition<Defined>    nothing checked beyond types
//! Definition<Defined>::validate()      -> Result<Definition<Validated>, DefinitionError>
//! Definition<Validated>::bind(b).await -> Result<Definition<Bound>, BindError>
//! ```
//!
//! Only `Definition<Bound>` has tools, modes, middlewares and turns; asking
//! an unbound definition for them does not compile.
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/tools-and-binding.md")]

pub mod builder;
mod error;
pub(crate) mod layout;
mod state;
pub(crate) mod validate;

use std::fmt;
use std::sync::Arc;

pub use builder::DefinitionBuilder;
pub(crate) use builder::Recipe;
pub use error::{DefinitionError, DefinitionErrorKind};
pub(crate) use state::sealed;
pub use state::{Defined, State, Validated};

/// A loop definition in lifecycle state `S` ([`Defined`], [`Validated`] or
/// [`Bound`](crate::bind::Bound)).
///
/// ```
/// use agent_loop_core::{Definition, Mode, ToolLimits};
/// use agent_loop_core::{Bindings, LoopId, SessionId};
/// use agent_loop_core::tool;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let clock = tool::Definition::typed_fn(
///     "now",
///     "The current Unix time in seconds.",
///     |_: serde_json::Map<String, serde_json::Value>, _context| async move {
///         Ok::<_, tool::BoxError>(1_700_000_000)
///     },
/// );
/// let definition = Definition::builder()
///     .name("assistant")
///     .tool(&clock)
///     .tool_limits(ToolLimits::new().parallel(4))
///     .mode(Mode::new("quick").tool_limits(ToolLimits::new().iterations(2)))
///     .initial_mode("quick")
///     .build()
///     .validate()?;
///
/// let bound = definition.bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
/// let limits = bound.current_mode().tool_limits;
/// assert_eq!(limits.iterations.get(), Some(2)); // the mode's own
/// assert_eq!(limits.calls.get(), Some(100)); // the default
/// assert_eq!(limits.parallel.get(), 4); // the base's
/// assert_eq!(bound.invoke("now", serde_json::json!({})).await?, serde_json::json!(1_700_000_000));
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct Definition<S: State = Defined> {
    pub(crate) recipe: Arc<Recipe>,
    pub(crate) state: S,
}

impl Definition<Defined> {
    /// Starts a definition. `.name(..)` is required (leaving it out does not
    /// compile); everything else is optional. See [`DefinitionBuilder`].
    pub fn builder() -> DefinitionBuilder {
        DefinitionBuilder::new()
    }

    pub(crate) fn from_recipe(recipe: Recipe) -> Self {
        Self {
            recipe: Arc::new(recipe),
            state: Defined::STATE,
        }
    }

    /// Checks the definition, first failure wins: the name is not blank; the
    /// base limits are valid; every tool definition (base and modes) has a
    /// non-blank name and declares tool names that are not
    /// [`STRUCTURED_OUTPUT_TOOL_NAME`](crate::tool::STRUCTURED_OUTPUT_TOOL_NAME)
    /// and pass the definition's [`NameRules`](crate::tool::NameRules) (by
    /// default the OpenAI and Anthropic function name pattern
    /// `^[a-zA-Z0-9_-]{1,64}$`, which both providers enforce with HTTP 400);
    /// modes have non-blank, unique names and valid limits; an initial mode
    /// is set when modes exist and names one of them. No factory runs.
    ///
    /// What it checks it keeps: the validated definition holds each mode's
    /// resolved limits, its tools and where every tool goes, which every
    /// [`bind`](crate::Definition::bind) uses as they are.
    ///
    /// Errors: [`DefinitionError`] with the kind, the field path and the
    /// offending value.
    pub fn validate(self) -> Result<Definition<Validated>, DefinitionError> {
        let layout = self.recipe.validate()?;
        Ok(Definition {
            recipe: self.recipe,
            state: Validated {
                layout: Arc::new(layout),
            },
        })
    }
}

impl<S: State> Definition<S> {
    /// The loop definition's name.
    pub fn name(&self) -> &str {
        &self.recipe.name
    }
}

/// Cheap: the recipe and the validated layout are shared. A bound
/// definition is one session's and is not `Clone`.
impl<S: State + Clone> Clone for Definition<S> {
    fn clone(&self) -> Self {
        Self {
            recipe: Arc::clone(&self.recipe),
            state: self.state.clone(),
        }
    }
}

/// Prints as `Definition<Validated> { name: .., tools: [..], modes: [..], .. }`:
/// the state in the name, so it never reads as a
/// [`tool::Definition`](crate::tool::Definition), which prints as
/// `tool::Definition { .. }`.
impl<S: State> fmt::Debug for Definition<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = std::any::type_name::<S>().rsplit("::").next().unwrap_or("");
        f.debug_struct(&format!("Definition<{state}>"))
            .field("name", &self.recipe.name)
            .field("tools", &self.recipe.tools)
            .field(
                "modes",
                &self
                    .recipe
                    .modes
                    .iter()
                    .map(|m| &m.name)
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

// The lifecycle's promises, checked when the library itself
// compiles: a validated definition is shared across sessions and tasks; a
// bound one is one session's and cannot be duplicated.
static_assertions::assert_impl_all!(Definition<Validated>: Send, Sync, Clone);
static_assertions::assert_impl_all!(crate::tool::Definition: Send, Sync, Clone);
