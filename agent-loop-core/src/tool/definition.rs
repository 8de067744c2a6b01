//! [`Definition`]: a named factory of tools, declared once per process and
//! built once per binding.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;

use crate::session::Session;
use crate::tool::checked::{Declared, InfoCache};
use crate::tool::factory::Listed;
use crate::tool::{BoxError, Factory, Handler, ListingFactory, Tool, ToolInfo};

/// Builds the live tools of one [`Definition`] for one binding.
///
/// Implement it for a factory of several tools that needs state of its own;
/// closures go in through [`Definition::bundle`] instead, and a one-tool
/// factory through [`Definition::new`]. A factory
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
/// It declares the model-facing names of the tools it produces (one, named
/// after its [`ToolInfo`], for [`new`](Self::new), [`from_fn`](Self::from_fn)
/// and [`typed_fn`](Self::typed_fn); several for a [`bundle`](Self::bundle)).
/// [`validate`](crate::Definition::validate) checks the declared names,
/// [`bind`](crate::Definition::bind) checks the names the built tools report.
/// A one-tool definition's info is fixed and its schema checked and
/// compiled when it is declared, so bind only builds its tool.
///
/// Cloning is cheap and keeps identity: a clone is the *same* definition, so
/// using it in the base and in several modes builds it once per binding, and
/// its tools are shared by them. A new binding builds it again: tools are
/// never shared between bindings.
///
/// ```
/// use agent_loop_core::tool::{self, ToolInfo};
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
    source: Source,
    /// How bind runs every tool the factory builds.
    facts: Facts,
}

/// What a definition declares about running each tool it builds, read at
/// bind into the binding's entry of each tool: no call asks a tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// What runs a call fills in the `default` of a property left out
    /// ([`Definition::fills_defaults`]).
    pub(crate) fills_defaults: bool,
    /// The tools' own bound on a result's text
    /// ([`Definition::result_bytes`]).
    pub(crate) result_bytes: Option<NonZeroU32>,
    /// Calls never run in this process ([`Definition::external`]).
    pub(crate) external: bool,
    /// How long one call may run ([`Definition::timeout`]).
    pub(crate) timeout: Option<std::time::Duration>,
}

/// How a definition builds its tools at bind, and where their checked
/// infos come from.
pub(crate) enum Source {
    /// One tool whose info was fixed and checked at declaration: bind
    /// builds the tool and takes the checked info as it is.
    Declared {
        /// The info and its checked form.
        declared: Declared,
        /// How the tool is made; shared by the definitions
        /// [`Definition::fills_defaults`] and [`Definition::result_bytes`]
        /// derive from this one.
        build: Arc<Build>,
    },
    /// Tools a [`Factory`] builds, reporting their own infos (a bundle,
    /// an MCP server), as a fixed list or a listing: each is checked at
    /// bind (and at each new list), and bindings that report equal infos
    /// share the checked one.
    Built {
        /// The user's factory: its future runs at bind, concurrently with
        /// the other definitions' factories.
        factory: Arc<dyn Factory>,
        /// The infos checked so far, by tool name.
        infos: InfoCache,
    },
}

/// How a [`Source::Declared`] tool is made for one binding.
pub(crate) enum Build {
    /// A [`from_fn`](Definition::from_fn) or
    /// [`typed_fn`](Definition::typed_fn) tool, whose instance holds only
    /// the info and handler its declaration shares: made at once, with no
    /// future to box and join, and no user code that could fail or panic.
    Instant(Box<dyn Fn() -> Arc<dyn Handler> + Send + Sync>),
    /// A [`new`](Definition::new) tool: the user's factory makes its
    /// [`Handler`] for the binding's session.
    Session(Box<dyn SessionFactory>),
}

/// What a one-tool factory made for one binding.
pub(crate) struct BuiltTool {
    /// What runs the tool's calls.
    pub(crate) handler: Arc<dyn Handler>,
    /// What the crate keeps beside it, typed: an agent's handler, which a
    /// resume of its paused turn checks (`tool::Definition::agent`);
    /// `None` for every other tool.
    pub(crate) nested: Option<Arc<dyn Any + Send + Sync>>,
}

/// The boxed future of a one-tool factory.
pub(crate) type BuildFuture = Pin<Box<dyn Future<Output = Result<BuiltTool, BoxError>> + Send>>;

/// A one-tool factory, as [`Build::Session`] holds it.
pub(crate) trait SessionFactory: Send + Sync + 'static {
    /// The handler for the binding of `session`.
    fn build(&self, session: Session) -> BuildFuture;
}

impl<F, Fut, H, E> SessionFactory for F
where
    F: Fn(Session) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<H, E>> + Send + 'static,
    H: Handler,
    E: Into<BoxError>,
{
    fn build(&self, session: Session) -> BuildFuture {
        let built = self(session);
        Box::pin(async move {
            let handler = built.await.map_err(Into::into)?;
            Ok(BuiltTool {
                handler: Arc::new(handler),
                nested: None,
            })
        })
    }
}

impl Definition {
    /// A definition of one tool whose info is declared here and whose
    /// [`Handler`] the factory makes for each binding: from the binding's
    /// [`Session`] (its ids and the caller's data, cheap to clone), e.g. a
    /// workspace root or a database pool the session's calls use.
    ///
    /// The definition and its tool are both named `info.name`. The info is
    /// checked and its schema compiled here, once, and shared by every
    /// binding; a schema that fails the checks fails every bind with
    /// [`InvalidToolInfo`](crate::bind::BindErrorKind::InvalidToolInfo). A
    /// factory error is
    /// [`FactoryFailed`](crate::bind::BindErrorKind::FactoryFailed), a panic
    /// [`FactoryPanicked`](crate::bind::BindErrorKind::FactoryPanicked).
    ///
    /// ```
    /// use agent_loop_core::tool::{self, BoxError, CallContext, Handler, ToolInfo, ToolOutput};
    /// use serde_json::{json, Value};
    ///
    /// /// The session's clock.
    /// struct Clock { session: String }
    ///
    /// #[async_trait::async_trait]
    /// impl Handler for Clock {
    ///     async fn invoke(&self, _: Value, _: &CallContext) -> Result<ToolOutput, BoxError> {
    ///         Ok(json!(self.session).into())
    ///     }
    /// }
    ///
    /// let clock = tool::Definition::new(
    ///     ToolInfo::without_parameters("clock", "The session's clock."),
    ///     |session| async move {
    ///         Ok::<_, BoxError>(Clock { session: session.session_id().to_string() })
    ///     },
    /// );
    /// assert_eq!(clock.tool_names(), ["clock"]);
    /// ```
    pub fn new<F, Fut, H, E>(info: ToolInfo, factory: F) -> Self
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<H, E>> + Send + 'static,
        H: Handler,
        E: Into<BoxError>,
    {
        Self::declared(Declared::new(info), Build::Session(Box::new(factory)))
    }

    /// A definition of one tool whose handler the crate keeps beside the
    /// tool, typed, for the checks of a resume: an agent's.
    pub(crate) fn nested<F, Fut, H, E>(info: ToolInfo, factory: F) -> Self
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<H, E>> + Send + 'static,
        H: Handler,
        E: Into<BoxError>,
    {
        Self::declared(
            Declared::new(info),
            Build::Session(Box::new(Nested(factory))),
        )
    }

    /// A definition of the one tool `build` makes for each binding, whose
    /// info was fixed and checked at declaration.
    pub(crate) fn declared(declared: Declared, build: Build) -> Self {
        Self::declared_with(declared, build, false)
    }

    /// [`declared`](Self::declared), with whether its calls run elsewhere.
    pub(crate) fn declared_with(declared: Declared, build: Build, external: bool) -> Self {
        let name = declared.info().name.clone();
        Self {
            inner: Arc::new(Inner {
                tool_names: vec![name.clone()],
                name,
                discovering: false,
                source: Source::Declared {
                    declared,
                    build: Arc::new(build),
                },
                facts: Facts {
                    external,
                    ..Facts::default()
                },
            }),
        }
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

    /// A definition from a [`Factory`] (a [`ToolFactory`] is one) and the
    /// tool names it declares. The tools it builds must report exactly
    /// these names, at bind and, for a listing, at each new list (a list
    /// that does not is refused, and the binding keeps the tools it has).
    pub fn from_factory(
        name: impl Into<String>,
        tool_names: impl IntoIterator<Item = impl Into<String>>,
        factory: impl Factory,
    ) -> Self {
        Self::reported(
            name.into(),
            Some(tool_names.into_iter().map(Into::into).collect()),
            Arc::new(factory),
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
    /// use agent_loop_core::session::Session;
    /// use agent_loop_core::tool::{self, BoxError, Tool, ToolFactory};
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
    pub fn discovering(name: impl Into<String>, factory: impl Factory) -> Self {
        Self::reported(name.into(), None, Arc::new(factory))
    }

    /// A [`discovering`](Self::discovering) definition whose tools can
    /// change while a binding lives: its factory makes a
    /// [`ToolListing`](crate::tool::ToolListing) per binding, which the
    /// binding lists at bind (with the checks of `discovering`) and lists
    /// again before a model request whenever its
    /// [`version`](crate::tool::ToolListing::version) moved. An MCP server
    /// is one (`mcp::McpServer`, feature `mcp`, re-lists on
    /// `notifications/tools/list_changed`).
    ///
    /// A new list is checked as at bind, in that binding alone. One that
    /// passes is offered from the next model request on; a call of a tool
    /// it dropped is an error result saying the tool is no longer offered
    /// ([`ToolCallErrorKind::NoLongerOffered`](crate::bind::ToolCallErrorKind::NoLongerOffered)).
    /// One that fails leaves the binding's tools as they were and is
    /// reported ([`TurnEvent::ToolListRefused`](crate::turn::TurnEvent::ToolListRefused)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use agent_loop_core::session::Session;
    /// use agent_loop_core::tool::{self, BoxError, ListingFactory, Tool, ToolListing};
    ///
    /// /// Tools a plugin directory holds, listed again when it changes.
    /// struct Plugins { changes: Arc<AtomicU64> }
    ///
    /// #[async_trait::async_trait]
    /// impl ToolListing for Plugins {
    ///     fn version(&self) -> u64 {
    ///         self.changes.load(Ordering::Acquire)
    ///     }
    ///     async fn list(&self) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
    ///         Ok(Vec::new()) // read the directory here
    ///     }
    /// }
    ///
    /// struct PluginDirectory;
    ///
    /// #[async_trait::async_trait]
    /// impl ListingFactory for PluginDirectory {
    ///     async fn build(&self, _session: &Session) -> Result<Arc<dyn ToolListing>, BoxError> {
    ///         Ok(Arc::new(Plugins { changes: Arc::default() }))
    ///     }
    /// }
    ///
    /// let plugins = tool::Definition::changing("plugins", PluginDirectory);
    /// assert!(plugins.discovers_tools());
    /// ```
    pub fn changing(name: impl Into<String>, factory: impl ListingFactory) -> Self {
        Self::reported(name.into(), None, Arc::new(Listed(factory)))
    }

    /// A definition whose tools report their own infos; `tool_names` is
    /// `None` for a definition that discovers them.
    fn reported(name: String, tool_names: Option<Vec<String>>, factory: Arc<dyn Factory>) -> Self {
        Self {
            inner: Arc::new(Inner {
                name,
                discovering: tool_names.is_none(),
                tool_names: tool_names.unwrap_or_default(),
                source: Source::Built {
                    factory,
                    infos: InfoCache::new(),
                },
                facts: Facts::default(),
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

    pub(crate) fn source(&self) -> &Source {
        &self.inner.source
    }

    /// What the definition declares about running its tools.
    pub(crate) fn facts(&self) -> Facts {
        self.inner.facts
    }

    /// Declares that what runs the calls of this definition's tools fills
    /// in the `default` of a property the arguments leave out, so the
    /// local argument check treats a property that is both `required` and
    /// has a `default` as optional. The schema the model sees
    /// ([`ToolInfo::parameters`]) is not changed; a property given is
    /// still checked against its schema.
    ///
    /// Default `false`: a tool of this process gets exactly the arguments
    /// the schema allows. An MCP server's definition says `true` (schemas
    /// generated from Zod mark a defaulted property `required`, and the
    /// server applies the default when it parses the call).
    ///
    /// Returns a new definition (not [`same_as`](Self::same_as) this one)
    /// sharing its factory: declare it before you use the definition. A
    /// one-tool definition's schema is compiled again here, once.
    ///
    /// ```
    /// use agent_loop_core::tool::{self, ToolInfo};
    /// use serde_json::{json, Value};
    ///
    /// let info = ToolInfo::new("screenshot", "Takes a screenshot.", json!({
    ///     "type": "object",
    ///     "properties": { "format": { "type": "string", "default": "png" } },
    ///     "required": ["format"]
    /// }));
    /// // Forwards to a service that applies the default itself.
    /// let screenshot = tool::Definition::from_fn(info, |arguments: Value, _| async move {
    ///     Ok::<_, tool::BoxError>(arguments)
    /// })
    /// .fills_defaults(true);
    /// assert_eq!(screenshot.tool_names(), ["screenshot"]);
    /// ```
    #[must_use]
    pub fn fills_defaults(self, fills_defaults: bool) -> Self {
        let facts = Facts {
            fills_defaults,
            ..self.inner.facts
        };
        self.with_facts(facts)
    }

    /// Declares this definition's own bound, in bytes of UTF-8, on the
    /// text of one result of any of its tools that the model sees; the
    /// smaller of it and the mode's
    /// [`result_bytes`](crate::ToolLimits::result_bytes) applies, with the
    /// same cut (head, a marker counting the omitted bytes, tail; images
    /// pass whole). Middlewares and
    /// [`Definition::invoke`](crate::Definition::invoke) see the whole
    /// result, as with `result_bytes`.
    ///
    /// A value below 256 bytes counts as 256, the smallest `result_bytes`
    /// ([`ResultBytes::MIN`](crate::limits::ResultBytes::MIN)), which
    /// leaves room for the marker.
    ///
    /// Default: none, only the mode's limit applies. An MCP server's
    /// definition has one by default (`mcp::DEFAULT_RESULT_BYTES`, feature
    /// `mcp`), since a server's result size is not the caller's to choose.
    ///
    /// Returns a new definition (not [`same_as`](Self::same_as) this one)
    /// sharing its factory: declare it before you use the definition.
    ///
    /// ```
    /// use std::num::NonZeroU32;
    /// use agent_loop_core::tool::{self, ToolInfo};
    /// use serde_json::Value;
    ///
    /// let search = tool::Definition::from_fn(
    ///     ToolInfo::without_parameters("search", "Searches the web."),
    ///     |_: Value, _| async move { Ok::<_, tool::BoxError>("…") },
    /// )
    /// .result_bytes(NonZeroU32::new(4096).expect("not zero"));
    /// assert_eq!(search.name(), "search");
    /// ```
    #[must_use]
    pub fn result_bytes(self, bytes: NonZeroU32) -> Self {
        let facts = Facts {
            result_bytes: Some(bytes),
            ..self.inner.facts
        };
        self.with_facts(facts)
    }

    /// How long one call of these tools may run: a call still running
    /// then is stopped (its future dropped, which cancels it) and answered
    /// with an error the model reads, ``the call to `build` timed out after
    /// 600 s``, and the turn goes on. It wins over the mode's
    /// [`call_timeout_ms`](crate::ToolLimits::call_timeout_ms), longer or
    /// shorter: the tool's author knows how long it takes. A zero timeout
    /// stops every call at once.
    ///
    /// Default: none, only the mode's timeout applies.
    ///
    /// Returns a new definition (not [`same_as`](Self::same_as) this one)
    /// sharing its factory: declare it before you use the definition.
    ///
    /// ```
    /// use std::time::Duration;
    /// use agent_loop_core::tool::{self, ToolInfo};
    /// use serde_json::Value;
    ///
    /// let build = tool::Definition::from_fn(
    ///     ToolInfo::without_parameters("build", "Builds the project."),
    ///     |_: Value, _| async move { Ok::<_, tool::BoxError>("built") },
    /// )
    /// .timeout(Duration::from_secs(600));
    /// assert_eq!(build.name(), "build");
    /// ```
    #[must_use]
    pub fn timeout(self, timeout: std::time::Duration) -> Self {
        let facts = Facts {
            timeout: Some(timeout),
            ..self.inner.facts
        };
        self.with_facts(facts)
    }

    /// A definition like this one, sharing its factory, with `facts`.
    fn with_facts(self, facts: Facts) -> Self {
        let inner = &self.inner;
        let source = match &inner.source {
            Source::Declared { declared, build } => Source::Declared {
                declared: declared.filling_defaults(facts.fills_defaults),
                build: Arc::clone(build),
            },
            // A cache of its own: the one of this definition belongs to it
            // (its checked infos are shared by its bindings alone).
            Source::Built { factory, .. } => Source::Built {
                factory: Arc::clone(factory),
                infos: InfoCache::new(),
            },
        };
        Self {
            inner: Arc::new(Inner {
                name: inner.name.clone(),
                tool_names: inner.tool_names.clone(),
                discovering: inner.discovering,
                source,
                facts,
            }),
        }
    }
}

/// No type implements it, and none can (it is sealed): what makes
/// [`Definition::invoke`] a compile error that says why. You never name
/// it; the compiler does, in that error's message.
#[diagnostic::on_unimplemented(
    message = "a tool definition is a factory, not a tool: it cannot be invoked",
    label = "bind the loop definition, then invoke the bound tool: `bound.invoke(name, arguments)`",
    note = "`tool::Definition` builds the tools of each binding; only a bound definition (`Definition<Bound>`) has tools to invoke"
)]
pub trait NotInvokable: sealed::Sealed {
    /// Never called: no value of an implementing type exists.
    fn unreachable(self) -> std::convert::Infallible;
}

mod sealed {
    pub trait Sealed {}
}

impl Definition {
    /// Does not compile: a tool definition is a factory. Bind the loop
    /// definition and invoke through the bound one
    /// ([`Definition::invoke`](crate::Definition::invoke)). It exists so
    /// the compiler says so (its argument must be a [`NotInvokable`],
    /// which nothing is).
    pub fn invoke<A: NotInvokable>(&self, arguments: A) -> std::convert::Infallible {
        arguments.unreachable()
    }
}

impl From<&Definition> for Definition {
    fn from(definition: &Definition) -> Self {
        definition.clone()
    }
}

/// Prints as `tool::Definition { name: .., tool_names: [..], .. }`, so it
/// never reads as the loop's [`Definition`](crate::Definition).
impl fmt::Debug for Definition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("tool::Definition")
            .field("name", &self.inner.name)
            .field("tool_names", &self.inner.tool_names)
            .field("discovering", &self.inner.discovering)
            .finish_non_exhaustive()
    }
}

/// A one-tool factory whose handler is kept beside its tool
/// ([`Definition::nested`]).
struct Nested<F>(F);

impl<F, Fut, H, E> SessionFactory for Nested<F>
where
    F: Fn(Session) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<H, E>> + Send + 'static,
    H: Handler,
    E: Into<BoxError>,
{
    fn build(&self, session: Session) -> BuildFuture {
        let built = (self.0)(session);
        Box::pin(async move {
            let handler = Arc::new(built.await.map_err(Into::into)?);
            let kept = Arc::clone(&handler) as Arc<dyn Any + Send + Sync>;
            Ok(BuiltTool {
                handler,
                nested: Some(kept),
            })
        })
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
