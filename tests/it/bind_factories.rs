//! Running the factories at bind: failures and panics become typed errors,
//! and what they built must match what they declared.

use std::error::Error as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::{Counter, EchoTool, bindings, counted, counted_with_info};
use agent_loop::bind::FactoryPanic;
use agent_loop::tool::{self, BoxError, Tool, ToolInfo};
use agent_loop::{BindError, BindErrorKind, Definition, Mode, Validated};

fn one_tool(definition: tool::Definition) -> Definition<Validated> {
    Definition::builder()
        .name("agent")
        .tool(definition)
        .build()
        .validate()
        .expect("the declared names are valid")
}

async fn bind_err(definition: Definition<Validated>) -> BindError {
    definition
        .bind(bindings())
        .await
        .expect_err("bind should refuse this definition")
}

#[derive(Debug, thiserror::Error)]
#[error("the index is offline")]
struct IndexOffline;

#[tokio::test]
async fn failing_factory_is_factory_failed_with_its_error_as_source() {
    let error = bind_err(one_tool(crate::common::tool_factory(
        "search",
        |_bindings| async { Err::<EchoTool, _>(IndexOffline) },
    )))
    .await;
    assert_eq!(error.kind, BindErrorKind::FactoryFailed);
    assert_eq!(error.name.as_deref(), Some("search"));
    let source = error.source().expect("the factory's error is the source");
    assert!(
        source.downcast_ref::<IndexOffline>().is_some(),
        "{source:?}"
    );
    assert!(!error.to_string().contains('\n'));
    assert_eq!(
        error.to_string(),
        "bind: the factory of tool definition `search` failed"
    );
    // The cause is left to `source()`, for an error reporter to print.
    assert_eq!(format!("{error:#}"), error.to_string());
}

#[tokio::test]
async fn missing_binding_data_fails_the_factory() {
    struct Workspace;
    let error = bind_err(one_tool(crate::common::tool_factory(
        "read",
        |bindings| async move {
            bindings.get::<Workspace>()?;
            Ok::<_, BoxError>(EchoTool::named("read"))
        },
    )))
    .await;
    assert_eq!(error.kind, BindErrorKind::FactoryFailed);
    assert!(
        error
            .source()
            .and_then(|s| s.downcast_ref::<agent_loop::session::MissingBinding>())
            .is_some()
    );
}

#[tokio::test]
async fn panicking_factory_future_is_factory_panicked() {
    let error = bind_err(one_tool(crate::common::tool_factory(
        "search",
        |_bindings| async {
            if true {
                panic!("index corrupted");
            }
            Ok::<_, BoxError>(EchoTool::named("search"))
        },
    )))
    .await;
    assert_eq!(error.kind, BindErrorKind::FactoryPanicked);
    assert_eq!(error.name.as_deref(), Some("search"));
    let panic = error
        .source()
        .and_then(|s| s.downcast_ref::<FactoryPanic>())
        .expect("the source holds the panic");
    assert_eq!(panic.message, "index corrupted");
}

#[tokio::test]
async fn factory_panicking_before_its_future_is_factory_panicked() {
    fn build(_session: agent_loop::Session) -> std::future::Ready<Result<EchoTool, BoxError>> {
        panic!("no future at all")
    }
    let error = bind_err(one_tool(crate::common::tool_factory("search", build))).await;
    assert_eq!(error.kind, BindErrorKind::FactoryPanicked);
}

#[tokio::test]
async fn failed_bind_leaves_the_definition_bindable_again() {
    let counter = Counter::new();
    let attempts = Arc::new(AtomicUsize::new(0));
    let flaky = {
        let attempts = Arc::clone(&attempts);
        crate::common::tool_factory("flaky", move |_bindings| {
            let first = attempts.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                if first {
                    Err::<EchoTool, BoxError>("not yet".into())
                } else {
                    Ok(EchoTool::named("flaky"))
                }
            }
        })
    };
    let definition = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .tool(&flaky)
        .build()
        .validate()
        .unwrap();
    let error = definition.bind(bindings()).await.unwrap_err();
    assert_eq!(error.kind, BindErrorKind::FactoryFailed);
    assert_eq!(error.name.as_deref(), Some("flaky"));

    let bound = definition
        .bind(bindings())
        .await
        .expect("second bind works");
    assert_eq!(crate::common::names(&bound.tools()), ["search", "flaky"]);
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn factory_building_no_tool_is_invalid_tool_info() {
    let error = bind_err(one_tool(tool::Definition::bundle(
        "files",
        ["read"],
        |_bindings| async { Ok::<Vec<Arc<dyn Tool>>, BoxError>(Vec::new()) },
    )))
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("files"));
    assert!(error.to_string().contains("no tool"), "{error}");
}

#[tokio::test]
async fn built_names_differing_from_declared_is_invalid_tool_info() {
    let error = bind_err(one_tool(tool::Definition::bundle(
        "files",
        ["read", "write"],
        |_bindings| async {
            Ok::<Vec<Arc<dyn Tool>>, BoxError>(vec![
                Arc::new(EchoTool::named("read")),
                Arc::new(EchoTool::named("delete")),
            ])
        },
    )))
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("files"));
    let text = error.to_string();
    assert!(text.contains("write") && text.contains("delete"), "{text}");
}

#[tokio::test]
async fn fewer_built_tools_than_declared_is_invalid_tool_info() {
    let error = bind_err(one_tool(tool::Definition::bundle(
        "files",
        ["read", "write"],
        |_bindings| async {
            Ok::<Vec<Arc<dyn Tool>>, BoxError>(vec![Arc::new(EchoTool::named("read"))])
        },
    )))
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
}

#[tokio::test]
async fn built_name_other_than_the_single_declared_name_is_invalid_tool_info() {
    let counter = Counter::new();
    let error = bind_err(one_tool(counted_with_info(
        "search",
        &counter,
        ToolInfo::without_parameters("find", "Finds things."),
    )))
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(counter.get(), 1);
}

#[tokio::test]
async fn bundle_builds_all_its_tools_once() {
    let counter = Counter::new();
    let bound = one_tool(crate::common::counted_bundle(
        "files",
        &["read", "write"],
        &counter,
    ))
    .bind(bindings())
    .await
    .unwrap();
    assert_eq!(counter.get(), 1);
    let tools = bound.tools();
    assert_eq!(crate::common::names(&tools), ["read", "write"]);
    assert!(tools.iter().all(|t| t.definition_name() == "files"));
}

#[tokio::test]
async fn factories_receive_the_binding() {
    #[derive(Debug)]
    struct Root(&'static str);
    let definition = one_tool(crate::common::tool_factory("root", |bindings| async move {
        let root = bindings.get::<Root>()?.0;
        Ok::<_, BoxError>(EchoTool::with_info(ToolInfo::without_parameters(
            "root",
            format!("Root is {root}; session {}", bindings.session_id()),
        )))
    }));
    let b = bindings().with(Root("/srv/repo"));
    let session = b.session_id();
    let bound = definition.bind(b).await.unwrap();
    let tools = bound.tools();
    let description = &tools[0].info().description;
    assert!(description.contains("/srv/repo"), "{description}");
    assert!(description.contains(&session.to_string()), "{description}");
}

#[tokio::test]
async fn mode_factory_failure_fails_the_whole_bind() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted("search", &counter))
            .mode(
                Mode::new("broken").tool(crate::common::tool_factory("broken", |_b| async {
                    Err::<EchoTool, BoxError>("down".into())
                })),
            )
            .initial_mode("broken")
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::FactoryFailed);
    assert_eq!(error.name.as_deref(), Some("broken"));
}

/// A `ToolFactory` written by hand (not with `#[async_trait]`) that panics
/// while creating its future, before there is anything to poll.
struct PanicsBeforeItsFuture;

impl tool::ToolFactory for PanicsBeforeItsFuture {
    fn build<'a, 'b, 'f>(
        &'a self,
        _session: &'b agent_loop::Session,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Vec<Arc<dyn Tool>>, BoxError>> + Send + 'f>,
    >
    where
        'a: 'f,
        'b: 'f,
        Self: 'f,
    {
        panic!("no future at all")
    }
}

#[tokio::test]
async fn hand_written_factory_panicking_before_its_future_is_factory_panicked() {
    let definition = tool::Definition::from_factory("search", ["search"], PanicsBeforeItsFuture);
    let bound = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
        one_tool(definition).bind(bindings()),
    ))
    .await
    .expect("the factory's panic must not escape bind");
    let error = bound.expect_err("a panicking factory refuses the binding");
    assert_eq!(error.kind, BindErrorKind::FactoryPanicked);
    let panic = error
        .source()
        .and_then(|source| source.downcast_ref::<FactoryPanic>())
        .expect("the source is the panic");
    assert_eq!(panic.message, "no future at all");
}

#[tokio::test]
async fn bundle_tools_are_listed_in_declared_order_whatever_order_they_are_built_in() {
    // A bundle over an MCP server or a HashMap builds in no fixed order; the
    // model-facing list must not change from one binding to the next.
    let bundle = tool::Definition::bundle("files", ["list", "read", "write"], |_bindings| async {
        Ok::<_, BoxError>(vec![
            Arc::new(EchoTool::named("write")) as Arc<dyn Tool>,
            Arc::new(EchoTool::named("list")),
            Arc::new(EchoTool::named("read")),
        ])
    });
    let bound = one_tool(bundle).bind(bindings()).await.unwrap();
    assert_eq!(
        crate::common::names(&bound.tools()),
        ["list", "read", "write"]
    );
}

#[tokio::test]
async fn every_factory_of_a_large_binding_runs_concurrently() {
    // Each factory waits until all of them have started: the bind finishes
    // only if none waits for another to finish first, however many there
    // are (more than one group of `join_all`'s).
    const FACTORIES: usize = 75;
    let all_started = Arc::new(tokio::sync::Barrier::new(FACTORIES));
    let definitions: Vec<tool::Definition> = (0..FACTORIES)
        .map(|i| {
            let all_started = Arc::clone(&all_started);
            crate::common::tool_factory(format!("tool_{i}"), move |_session| {
                let all_started = Arc::clone(&all_started);
                async move {
                    all_started.wait().await;
                    Ok::<_, BoxError>(EchoTool::named(&format!("tool_{i}")))
                }
            })
        })
        .collect();
    let definition = Definition::builder()
        .name("agent")
        .tools(definitions)
        .build()
        .validate()
        .expect("valid");
    let bound = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        definition.bind(bindings()),
    )
    .await
    .expect("no factory waits for another")
    .expect("binds");
    let tools = bound.tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    let expected: Vec<String> = (0..FACTORIES).map(|i| format!("tool_{i}")).collect();
    assert_eq!(names, expected, "in declared order");
}

/// A [`tool::Handler`] that answers the root its session gave it.
struct Rooted {
    root: String,
}

#[async_trait::async_trait]
impl tool::Handler for Rooted {
    async fn invoke(
        &self,
        _arguments: serde_json::Value,
        _context: &tool::CallContext,
    ) -> Result<tool::ToolOutput, BoxError> {
        Ok(serde_json::json!(self.root).into())
    }
}

#[derive(Clone)]
struct Root(&'static str);

/// A one-tool definition whose info is declared up front and whose handler
/// reads the session's [`Root`].
fn rooted(parameters: serde_json::Value) -> tool::Definition {
    tool::Definition::new(
        ToolInfo::new("root", "The session's root.", parameters),
        |session| async move {
            Ok::<_, BoxError>(Rooted {
                root: session.get::<Root>()?.0.to_owned(),
            })
        },
    )
}

#[tokio::test]
async fn a_one_tool_factory_makes_a_handler_per_session_with_the_declared_info() {
    let definition = one_tool(rooted(serde_json::json!({"type": "object"})));
    let first = definition.bind(bindings().with(Root("/a"))).await.unwrap();
    let second = definition.bind(bindings().with(Root("/b"))).await.unwrap();
    assert_eq!(
        first.invoke("root", serde_json::json!({})).await.unwrap(),
        serde_json::json!("/a")
    );
    assert_eq!(
        second.invoke("root", serde_json::json!({})).await.unwrap(),
        serde_json::json!("/b")
    );
    let (a, b) = (first.tools()[0].clone(), second.tools()[0].clone());
    assert!(!a.same_instance(&b), "a handler per binding");
    assert!(
        std::ptr::eq(a.info(), b.info()),
        "one declared info, checked once, shared"
    );
    assert_eq!(a.definition_name(), "root");
}

#[tokio::test]
async fn a_one_tool_factory_with_a_bad_schema_fails_every_bind() {
    let definition = one_tool(rooted(serde_json::json!({"type": "array"})));
    for _ in 0..2 {
        let error = definition
            .bind(bindings().with(Root("/a")))
            .await
            .unwrap_err();
        assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
        assert_eq!(error.name.as_deref(), Some("root"));
    }
}

#[tokio::test]
async fn a_one_tool_factory_failing_or_panicking_is_a_bind_error() {
    let error = bind_err(one_tool(rooted(serde_json::json!({"type": "object"})))).await;
    assert_eq!(error.kind, BindErrorKind::FactoryFailed, "no Root given");
    assert!(error.source().unwrap().to_string().contains("Root"));
    let panicking = tool::Definition::new(
        ToolInfo::without_parameters("boom", "Never built."),
        |_session| async {
            if true {
                panic!("no handler today");
            }
            Ok::<_, BoxError>(Rooted {
                root: String::new(),
            })
        },
    );
    crate::turn_common::quiet_expected_panics();
    let error = bind_err(one_tool(panicking)).await;
    assert_eq!(error.kind, BindErrorKind::FactoryPanicked);
    assert_eq!(error.name.as_deref(), Some("boom"));
}
