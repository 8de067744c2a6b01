//! [`Session`]: a session's identity and the caller's data, as tool
//! factories see it.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::session::{LoopId, SessionId};

/// One session as a tool factory sees it: its ids, and typed data the
/// caller supplied (a workspace root, a client, credentials) with
/// [`Bindings::with`](crate::bind::Bindings::with).
///
/// Cloning is cheap: the data is shared.
///
/// ```
/// use agent_loop_core::bind::Bindings;
/// use agent_loop_core::session::{LoopId, SessionId};
///
/// struct Workspace(&'static str);
///
/// let bindings = Bindings::new(SessionId::new(), LoopId::new()).with(Workspace("/srv/repo"));
/// let session = bindings.session();
/// assert_eq!(session.get::<Workspace>()?.0, "/srv/repo");
/// assert!(session.get::<String>().is_err());
/// # Ok::<_, agent_loop_core::session::MissingBinding>(())
/// ```
#[derive(Clone)]
pub struct Session {
    session_id: SessionId,
    loop_id: LoopId,
    data: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Session {
    /// A session with these ids and no data.
    pub fn new(session_id: SessionId, loop_id: LoopId) -> Self {
        Self {
            session_id,
            loop_id,
            data: Arc::default(),
        }
    }

    /// Adds `value`, replacing an earlier value of the same type.
    pub(crate) fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        Arc::make_mut(&mut self.data).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T` the caller supplied.
    ///
    /// Errors: [`MissingBinding`] (naming the type) when none was supplied;
    /// a factory can return it with `?`.
    pub fn get<T: Any + Send + Sync>(&self) -> Result<&T, MissingBinding> {
        self.data
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
            .ok_or(MissingBinding {
                type_name: type_name::<T>(),
            })
    }

    /// The same session and data, for the loop `loop_id` (an agent's
    /// binding inside this one).
    pub(crate) fn for_loop(&self, loop_id: LoopId) -> Self {
        Self {
            session_id: self.session_id,
            loop_id,
            data: Arc::clone(&self.data),
        }
    }

    /// The session's id.
    pub fn session_id(&self) -> SessionId {
        self.session_id
    }

    /// The loop's id.
    pub fn loop_id(&self) -> LoopId {
        self.loop_id
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("session_id", &self.session_id)
            .field("loop_id", &self.loop_id)
            .field("data", &self.data.len())
            .finish()
    }
}

/// The data a factory asked for was not supplied: returned by
/// [`Session::get`]; returned from a factory with `?`, it becomes the
/// source of a [`BindError`](crate::BindError) of kind
/// [`FactoryFailed`](crate::BindErrorKind::FactoryFailed).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no binding data of type `{type_name}`: supply it with `Bindings::with`")]
#[non_exhaustive]
pub struct MissingBinding {
    /// The Rust type asked for.
    pub type_name: &'static str,
}
