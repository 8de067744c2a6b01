//! [`Bindings`]: what one `bind` call receives.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::bind::{LoopId, SessionId};
use crate::tool;

/// What one binding is made of: a session id, a loop id, optional extra tool
/// definitions, and any data the caller supplies for the factories (a
/// workspace root, a database pool, a user's credentials), looked up by type.
///
/// Cloning is cheap (the data is shared); factories receive a clone.
///
/// ```
/// use agent_loop::bind::{Bindings, LoopId, SessionId};
///
/// struct Workspace(std::path::PathBuf);
///
/// let bindings = Bindings::new(SessionId::new(), LoopId::new()).with(Workspace("./repo".into()));
/// assert_eq!(bindings.get::<Workspace>().unwrap().0, std::path::Path::new("./repo"));
/// assert!(bindings.get::<String>().is_err());
/// ```
#[derive(Clone)]
pub struct Bindings {
    session_id: SessionId,
    loop_id: LoopId,
    data: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    tools: Vec<tool::Definition>,
}

impl Bindings {
    /// Bindings for one session and loop, with no data and no extra tools.
    pub fn new(session_id: SessionId, loop_id: LoopId) -> Self {
        Self {
            session_id,
            loop_id,
            data: Arc::default(),
            tools: Vec::new(),
        }
    }

    /// Adds data for the factories, keyed by its type; a second value of the
    /// same type replaces the first.
    #[must_use]
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.data).insert(TypeId::of::<T>(), Arc::new(value));
        self
    }

    /// Appends an extra tool definition, available in the base mode and in
    /// every mode of this binding. It gets the same checks as the
    /// definition's own tools, before any factory runs.
    #[must_use]
    pub fn tool(mut self, definition: impl Into<tool::Definition>) -> Self {
        self.tools.push(definition.into());
        self
    }

    /// Appends extra tool definitions, in order (copied).
    #[must_use]
    pub fn tools<D: Into<tool::Definition>>(
        mut self,
        definitions: impl IntoIterator<Item = D>,
    ) -> Self {
        self.tools.extend(definitions.into_iter().map(Into::into));
        self
    }

    /// The data of type `T`.
    ///
    /// Errors: [`MissingBinding`] when no value of that type was supplied;
    /// inside a factory, `?` turns it into a factory failure.
    pub fn get<T: Any + Send + Sync>(&self) -> Result<&T, MissingBinding> {
        self.data
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
            .ok_or(MissingBinding {
                type_name: type_name::<T>(),
            })
    }

    /// The session id.
    pub fn session_id(&self) -> SessionId {
        self.session_id
    }

    /// The loop id.
    pub fn loop_id(&self) -> LoopId {
        self.loop_id
    }

    /// The extra tool definitions, in order.
    pub fn extra_tools(&self) -> &[tool::Definition] {
        &self.tools
    }
}

impl fmt::Debug for Bindings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bindings")
            .field("session_id", &self.session_id)
            .field("loop_id", &self.loop_id)
            .field("data", &self.data.len())
            .field("tools", &self.tools)
            .finish()
    }
}

/// [`Bindings::get`] found no value of the type asked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no binding data of type `{type_name}`: supply it with `Bindings::with`")]
pub struct MissingBinding {
    /// The type asked for.
    pub type_name: &'static str,
}
