//! Helpers shared by the integration tests: a tool with a configurable
//! `ToolInfo`, tool definitions whose factory calls are counted, and fresh
//! bindings.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::tool::{self, BoxError, CallContext, Tool, ToolInfo, ToolOutput};
use agent_loop::{Bindings, LoopId, SessionId};
use async_trait::async_trait;
use serde_json::{Value, json};

/// A tool that answers `{"tool": <name>, "arguments": <arguments>}`, with
/// whatever `ToolInfo` the test gives it.
pub struct EchoTool {
    pub info: ToolInfo,
}

impl EchoTool {
    /// An echo tool with a valid info: `name`, a description, an object
    /// schema without properties.
    pub fn named(name: &str) -> Self {
        Self {
            info: ToolInfo::without_parameters(name, format!("Echoes the arguments of {name}.")),
        }
    }

    pub fn with_info(info: ToolInfo) -> Self {
        Self { info }
    }
}

#[async_trait]
impl Tool for EchoTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn invoke(
        &self,
        arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Ok(json!({ "tool": self.info.name, "arguments": arguments }).into())
    }
}

/// A tool with the `ToolInfo` the test gives it that answers what `answer`
/// returns, whatever the arguments: for a tool that reports what its
/// factory saw.
pub struct FnTool<F> {
    info: ToolInfo,
    answer: F,
}

impl<F: Fn() -> Value + Send + Sync + 'static> FnTool<F> {
    pub fn new(info: ToolInfo, answer: F) -> Self {
        Self { info, answer }
    }
}

#[async_trait]
impl<F: Fn() -> Value + Send + Sync + 'static> Tool for FnTool<F> {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn invoke(
        &self,
        _arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Ok((self.answer)().into())
    }
}

/// A definition named `name`, declaring the one tool name `name`, whose
/// factory builds a [`Tool`] that reports its own info (checked at bind,
/// and which may differ from what was declared): a one-tool
/// [`bundle`](tool::Definition::bundle).
pub fn tool_factory<F, Fut, T, E>(name: impl Into<String>, factory: F) -> tool::Definition
where
    F: Fn(agent_loop::Session) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<T, E>> + Send + 'static,
    T: Tool,
    E: Into<BoxError> + 'static,
{
    let name = name.into();
    tool::Definition::bundle(name.clone(), [name], move |session| {
        let built = factory(session);
        async move {
            let tool = built.await.map_err(Into::into)?;
            Ok::<_, BoxError>(vec![Arc::new(tool) as Arc<dyn Tool>])
        }
    })
}

/// Counts factory calls across bindings.
#[derive(Clone, Default)]
pub struct Counter(Arc<AtomicUsize>);

impl Counter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn bump(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A definition named `name` whose factory builds one valid [`EchoTool`]
/// named `name` and counts each call in `counter`.
pub fn counted(name: &str, counter: &Counter) -> tool::Definition {
    counted_with_info(
        name,
        counter,
        ToolInfo::without_parameters(name, "A counted tool."),
    )
}

/// A definition named `name`, declaring the tool name `name`, whose factory
/// builds an [`EchoTool`] reporting `info` (which may differ from what was
/// declared) and counts each call in `counter`.
pub fn counted_with_info(name: &str, counter: &Counter, info: ToolInfo) -> tool::Definition {
    let counter = counter.clone();
    tool_factory(name, move |_bindings| {
        counter.bump();
        let tool = EchoTool::with_info(info.clone());
        async move { Ok::<_, BoxError>(tool) }
    })
}

/// A definition named `definition_name` declaring `tool_names`, whose factory
/// builds one valid [`EchoTool`] per declared name and counts each call.
pub fn counted_bundle(
    definition_name: &str,
    tool_names: &[&str],
    counter: &Counter,
) -> tool::Definition {
    let counter = counter.clone();
    let names: Vec<String> = tool_names.iter().map(|&n| n.to_owned()).collect();
    let declared = names.clone();
    tool::Definition::bundle(definition_name, declared, move |_bindings| {
        counter.bump();
        let tools: Vec<Arc<dyn Tool>> = names
            .iter()
            .map(|name| Arc::new(EchoTool::named(name)) as Arc<dyn Tool>)
            .collect();
        async move { Ok::<_, BoxError>(tools) }
    })
}

/// Bindings with fresh, valid ids and nothing else.
pub fn bindings() -> Bindings {
    Bindings::new(SessionId::new(), LoopId::new())
}

/// The model-facing names of some tool handles, in order.
pub fn names(tools: &[agent_loop::bind::ToolHandle<'_>]) -> Vec<String> {
    tools.iter().map(|tool| tool.name().to_owned()).collect()
}

/// Registers, once for the whole test binary, a subscriber that enables
/// nothing and asks again at every use (`Interest::sometimes`).
///
/// While one thread-scoped subscriber is all there is, tracing computes
/// the interest of a callsite first hit on another thread from *that*
/// thread's default alone (nobody there: "never") and caches it for every
/// thread, so a test's own subscriber would miss the span for good (seen
/// in CI: a turn's spans missing while another test ran its first turn).
/// With this one registered too, interest is asked of every subscriber,
/// and a "sometimes" keeps each thread asking its own.
fn keep_interest_open() {
    use tracing::span::{Attributes, Id, Record};
    use tracing::subscriber::Interest;
    use tracing::{Event, Metadata};

    struct AskEveryTime;

    impl tracing::Subscriber for AskEveryTime {
        fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
            Interest::sometimes()
        }
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            false
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &Event<'_>) {}
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    static KEEPER: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    KEEPER.get_or_init(|| tracing::Dispatch::new(AskEveryTime));
}

/// Runs `body` on a current-thread runtime with `layer` as this thread's
/// tracing subscriber: every task stays on this thread, where the layer
/// sees what it records.
pub fn with_tracing_layer<L, F>(layer: L, body: F) -> F::Output
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
    F: std::future::Future,
{
    use tracing_subscriber::layer::SubscriberExt;

    keep_interest_open();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
    // Other tests run on other threads meanwhile: one of them may register
    // a callsite while this subscriber is being set, and tracing then
    // caches "nobody is interested" for it (seen in CI, a span missing).
    // Rebuilding the cache now, with this subscriber known, makes every
    // callsite ask it again.
    tracing::callsite::rebuild_interest_cache();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime")
        .block_on(body)
}
