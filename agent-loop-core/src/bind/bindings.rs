//! [`Bindings`]: what one `bind` call receives.

use std::any::Any;
use std::fmt;

use crate::session::{LoopId, Session, SessionId};
use crate::tool;

/// What one binding is made of: the [`Session`] (a session id, a loop id
/// and any data the caller supplies for the factories: a workspace root, a
/// database pool, a user's credentials, looked up by type), and optional
/// extra tool definitions for this binding only.
///
/// ```
/// use agent_loop_core::bind::Bindings;
/// use agent_loop_core::session::{LoopId, SessionId};
///
/// struct Workspace(std::path::PathBuf);
///
/// let bindings = Bindings::new(SessionId::new(), LoopId::new()).with(Workspace("./repo".into()));
/// assert_eq!(bindings.session().get::<Workspace>()?.0, std::path::Path::new("./repo"));
/// assert!(bindings.extra_tools().is_empty());
/// # Ok::<_, agent_loop_core::session::MissingBinding>(())
/// ```
#[derive(Clone)]
pub struct Bindings {
    session: Session,
    tools: Vec<tool::Definition>,
}

impl Bindings {
    /// Bindings for one session and loop, with no data and no extra tools.
    pub fn new(session_id: SessionId, loop_id: LoopId) -> Self {
        Self {
            session: Session::new(session_id, loop_id),
            tools: Vec::new(),
        }
    }

    /// A binding for `session`: its ids and its data.
    pub(crate) fn for_session(session: Session) -> Self {
        Self {
            session,
            tools: Vec::new(),
        }
    }

    /// Adds data for the factories, found by its type with
    /// [`Session::get`]; a second value of one type replaces the first.
    #[must_use]
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.session.insert(value);
        self
    }

    /// Adds an extra tool definition for this binding only, checked like the
    /// definition's own and offered in every mode.
    #[must_use]
    pub fn tool(mut self, definition: impl Into<tool::Definition>) -> Self {
        self.tools.push(definition.into());
        self
    }

    /// Adds extra tool definitions, in order.
    #[must_use]
    pub fn tools<D: Into<tool::Definition>>(
        mut self,
        definitions: impl IntoIterator<Item = D>,
    ) -> Self {
        self.tools.extend(definitions.into_iter().map(Into::into));
        self
    }

    /// The session the factories receive.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session's id.
    pub fn session_id(&self) -> SessionId {
        self.session.session_id()
    }

    /// The loop's id.
    pub fn loop_id(&self) -> LoopId {
        self.session.loop_id()
    }

    /// The extra tool definitions, in order.
    pub fn extra_tools(&self) -> &[tool::Definition] {
        &self.tools
    }
}

impl fmt::Debug for Bindings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bindings")
            .field("session", &self.session)
            .field("tools", &self.tools)
            .finish()
    }
}
