//! [`Definition`]: a named factory of tools, declared once per process and
//! built once per binding.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use crate::session::Session;
use crate::tool::checked::{CheckedInfo, Declared, InfoCache};
use crate::tool::schema::SchemaProblem;
use crate::tool::{BoxError, Tool, ToolInfo};

/// Builds the live tools of one [`Definition`] for one binding.
///
/// Implement it for a factory that needs state of its own; closures go in
/// through [`Definition::new`] and [`Definition::bundle`] instead. A factory
/// runs only inside [`bind`](crate::Definition::bind), once per binding, and
/// may fail: its error becomes
/// [`BindErrorKind::FactoryFailed`](crate::bind::BindErrorKind::FactoryFailed),
/// its panic [`FactoryPanicked`](crate::bind::BindErrorKind::FactoryPanicked).
#[async_trait]
pub trait ToolFactory: Send + Sync + 'static {
    /// Builds the tools for the binding of `session`. The tools must report
    /// exactly the names the definition declared.
    async fn build(&self, session: &Session) -> Result<Vec<Arc<dyn Tool>>, BoxError>;
}

/// A tool definition: a named **factory** that builds live tools for one
/// binding. It is not a tool and has no way to be invoked; only tools reached
/// through a bound definition can be.
///
/// It declares the model-facing names of the tools it produces (by default
/// one, named like the definition; a bundle declares several).
/// [`validate`](crate::Definition::validate) checks the declared names,
/// [`bind`](crate::Definition::bind) checks the names the built tools report.
///
/// Cloning is cheap and keeps identity: a clone is the *same* definition, so
/// using it in the base and in several modes builds it once per binding, and
/// its tools are shared by them. A new binding builds it again: tools are
/// never shared between bindings.
///
/// ```
/// use agent_loop::tool::{self, ToolInfo};
/// use serde_json::{json, Value};
///
/// // A stateless tool from data: a ToolInfo and an async handler.
/// let echo = tool::Definition::from_fn(
///     ToolInfo::new("echo", "Returns its arguments.", json!({"type": "object"})),
///     |arguments: Value, _context| async move { Ok::<_, tool::BoxError>(arguments) },
/// );
/// assert_eq!(echo.name(), "echo");
/// assert_eq!(echo.tool_names(), ["echo"]);
/// ```
#[derive(Clone)]
pub struct Definition {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    tool_names: Vec<String>,
    /// The tool names are known only once the factory ran (see
    /// [`Definition::discovering`]); `tool_names` is then empty.
    discovering: bool,
    factory: Factory,
    /// The checked infos of the tools it builds, shared by every binding.
    checked: InfoCache,
}

/// How a definition builds its tools at bind.
pub(crate) enum Factory {
    /// A factory of the user's: its future runs at bind, concurrently with
    /// the other definitions' factories.
    Async(Box<dyn ToolFactory>),
    /// A [`from_fn`](Definition::from_fn) or
    /// [`typed_fn`](Definition::typed_fn) tool, whose instance holds only
    /// the info and handler its declaration shares: made at once, with no
    /// future to box and join, and no user code that could fail or panic.
    Instant(Box<dyn Fn() -> Arc<dyn Tool> + Send + Sync>),
}

impl Definition {
    /// A definition whose factory builds one tool named `name`.
    ///
    /// The factory receives the binding's [`Session`] (its ids and the
    /// caller's data; cheap to clone) and returns the tool, or an error.
    ///
    /// ```
    /// # use agent_loop::tool::{self, BoxError, CallContext, Tool, ToolInfo, ToolOutput};
    /// # use serde_json::{json, Value};
    /// # struct Clock { info: ToolInfo, session: String }
    /// # #[async_trait::async_trait]
    /// # impl Tool for Clock {
    /// #     fn info(&self) -> &ToolInfo { &self.info }
    /// #     async fn invoke(&self, _: Value, _: &CallContext) -> Result<ToolOutput, BoxError> { Ok(json!(self.session).into()) }
    /// # }
    /// let clock = tool::Definition::new("clock", |session| async move {
    ///     Ok::<_, BoxError>(Clock {
    ///         info: ToolInfo::without_parameters("clock", "The session's clock."),
    ///         session: session.session_id().to_string(),
    ///     })
    /// });
    /// ```
    pub fn new<F, Fut, T, E>(name: impl Into<String>, factory: F) -> Self
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Tool,
        E: Into<BoxError>,
    {
        let name = name.into();
        Self::from_parts(
            name.clone(),
            Some(vec![name]),
            Factory::Async(Box::new(ClosureFactory(move |session| {
                let built = factory(session);
                async move {
                    let tool = built.await.map_err(Into::into)?;
                    Ok(vec![Arc::new(tool) as Arc<dyn Tool>])
                }
            }))),
            None,
        )
    }

    /// A definition of the one tool `build` makes, at once, for each
    /// binding, whose info was fixed at declaration.
    pub(crate) fn instant(
        declared: Declared,
        build: impl Fn() -> Arc<dyn Tool> + Send + Sync + 'static,
    ) -> Self {
        let name = declared.info().name.clone();
        Self::from_parts(
            name.clone(),
            Some(vec![name]),
            Factory::Instant(Box::new(build)),
            Some(declared),
        )
    }

    /// A definition whose factory builds several tools at once (they may
    /// share a connection, a cache, a client), declared by `tool_names`.
    pub fn bundle<F, Fut, E>(
        name: impl Into<String>,
        tool_names: impl IntoIterator<Item = impl Into<String>>,
        factory: F,
    ) -> Self
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Arc<dyn Tool>>, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        Self::from_factory(
            name,
            tool_names,
            ClosureFactory(move |session| {
                let built = factory(session);
                async move { built.await.map_err(Into::into) }
            }),
        )
    }

    /// A definition from a [`ToolFactory`] implementation and the tool names
    /// it declares.
    pub fn from_factory(
        name: impl Into<String>,
        tool_names: impl IntoIterator<Item = impl Into<String>>,
        factory: impl ToolFactory,
    ) -> Self {
        Self::from_parts(
            name.into(),
            Some(tool_names.into_iter().map(Into::into).collect()),
            Factory::Async(Box::new(factory)),
            None,
        )
    }

    /// A definition whose tools are known only when its factory runs: an
    /// MCP server lists its tools when it is connected, at bind, and a
    /// catalogue may depend on the session. It declares no tool names, so
    /// [`validate`](crate::Definition::validate) has none to check and
    /// [`tool_names`](Self::tool_names) is empty.
    ///
    /// At [`bind`](crate::Definition::bind), what it built gets every check
    /// a declared tool gets (name rules, reserved name, JSON Schema), in the
    /// order the factory returned them; a name two of its tools share is
    /// [`InvalidToolInfo`](crate::bind::BindErrorKind::InvalidToolInfo),
    /// and a name another definition also produces is
    /// [`DuplicateToolName`](crate::bind::BindErrorKind::DuplicateToolName)
    /// (checked once every factory ran, every collision listed). Building
    /// no tool is allowed: a server may offer none.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use agent_loop::session::Session;
    /// use agent_loop::tool::{self, BoxError, Tool, ToolFactory};
    ///
    /// /// Tools listed by a catalogue service at bind.
    /// struct Catalogue;
    ///
    /// #[async_trait::async_trait]
    /// impl ToolFactory for Catalogue {
    ///     async fn build(&self, _session: &Session) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
    ///         Ok(Vec::new()) // ask the service here
    ///     }
    /// }
    ///
    /// let catalogue = tool::Definition::discovering("catalogue", Catalogue);
    /// assert!(catalogue.discovers_tools());
    /// assert!(catalogue.tool_names().is_empty());
    /// ```
    pub fn discovering(name: impl Into<String>, factory: impl ToolFactory) -> Self {
        Self::from_parts(name.into(), None, Factory::Async(Box::new(factory)), None)
    }

    /// `tool_names` is `None` for a definition that discovers them.
    fn from_parts(
        name: String,
        tool_names: Option<Vec<String>>,
        factory: Factory,
        declared: Option<Declared>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                checked: InfoCache::new(declared),
                name,
                discovering: tool_names.is_none(),
                tool_names: tool_names.unwrap_or_default(),
                factory,
            }),
        }
    }

    /// The definition's name: unique among the definitions of one binding.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The model-facing names of the tools this definition declares it
    /// produces, in declaration order; empty for a
    /// [`discovering`](Self::discovering) definition.
    pub fn tool_names(&self) -> &[String] {
        &self.inner.tool_names
    }

    /// `true` for a definition whose tool names are known only once its
    /// factory runs ([`discovering`](Self::discovering)).
    pub fn discovers_tools(&self) -> bool {
        self.inner.discovering
    }

    /// `true` when both are the same definition (clones of one another),
    /// which a binding builds once.
    pub fn same_as(&self, other: &Definition) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub(crate) fn factory(&self) -> &Factory {
        &self.inner.factory
    }

    /// The checked form of `info`, which the tool this definition built at
    /// `position` in its list reported: shared with every binding that
    /// reported the same or an equal info under that name, checked and
    /// compiled now otherwise.
    ///
    /// Errors: the first [`SchemaProblem`] of `info.parameters`.
    pub(crate) fn checked_info(
        &self,
        position: usize,
        info: &ToolInfo,
    ) -> Result<Arc<CheckedInfo>, SchemaProblem> {
        self.inner.checked.checked(position, info)
    }
}

impl From<&Definition> for Definition {
    fn from(definition: &Definition) -> Self {
        definition.clone()
    }
}

impl fmt::Debug for Definition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Definition")
            .field("name", &self.inner.name)
            .field("tool_names", &self.inner.tool_names)
            .field("discovering", &self.inner.discovering)
            .finish_non_exhaustive()
    }
}

/// Adapts a closure returning a `'static` future to [`ToolFactory`].
struct ClosureFactory<F>(F);

#[async_trait]
impl<F, Fut> ToolFactory for ClosureFactory<F>
where
    F: Fn(Session) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<Arc<dyn Tool>>, BoxError>> + Send + 'static,
{
    async fn build(&self, session: &Session) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
        (self.0)(session.clone()).await
    }
}
