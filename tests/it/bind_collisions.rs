//! Identity and collisions at bind (DESIGN.md section 6.3): the same
//! definition is built once per binding and shared; different definitions
//! may not share a definition name or a tool name anywhere in the binding.

use crate::common::{Counter, bindings, counted, counted_bundle, names};
use agent_loop::{
    BindError, BindErrorKind, Bindings, Definition, DefinitionErrorKind, LoopId, Mode, SessionId,
    Validated,
};

async fn bind_err(definition: Definition<Validated>) -> BindError {
    definition
        .bind(bindings())
        .await
        .expect_err("bind should refuse this definition")
}

#[tokio::test]
async fn same_definition_in_base_twice_and_two_modes_builds_once() {
    let counter = Counter::new();
    let search = counted("search", &counter);
    let definition = Definition::builder()
        .name("agent")
        .tool(&search)
        .tool(&search)
        .mode(Mode::new("a").tool(&search))
        .mode(Mode::new("b").tools([&search]))
        .initial_mode("a")
        .build()
        .validate()
        .unwrap();
    let bound = definition.bind(bindings()).await.unwrap();
    assert_eq!(counter.get(), 1, "one factory call for one definition");

    let base = bound.base_mode().tools;
    assert_eq!(names(&base), ["search"], "listed once in the base");
    let in_a = bound.mode("a").unwrap().tools;
    let in_b = bound.mode("b").unwrap().tools;
    assert!(base[0].same_instance(&in_a[0]));
    assert!(base[0].same_instance(&in_b[0]));
    assert!(in_a[0].same_instance(&in_b[0]));

    let again = definition.bind(bindings()).await.unwrap();
    assert_eq!(counter.get(), 2, "a new binding builds again");
    let other = again.base_mode().tools;
    assert!(
        !base[0].same_instance(&other[0]),
        "instances are never shared between bindings"
    );
}

/// A tool that answers the session id its factory was given.
fn whoami() -> agent_loop::tool::Definition {
    use agent_loop::tool::{BoxError, ToolInfo};
    crate::common::tool_factory("whoami", |session| async move {
        let session_id = session.session_id().to_string();
        Ok::<_, BoxError>(crate::common::FnTool::new(
            ToolInfo::without_parameters("whoami", "The session of this binding."),
            move || serde_json::json!(session_id),
        ))
    })
}

#[tokio::test]
async fn concurrent_bindings_each_build_their_own_instances() {
    let definition = Definition::builder()
        .name("agent")
        .tool(whoami())
        .build()
        .validate()
        .unwrap();
    let (first_id, second_id) = (SessionId::new(), SessionId::new());
    let shared = definition.clone();
    let (first, second) = tokio::join!(
        shared.bind(Bindings::new(first_id, LoopId::new())),
        definition.bind(Bindings::new(second_id, LoopId::new()))
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert!(!first.tools()[0].same_instance(&second.tools()[0]));
    // Each binding's tool was built for that binding's session.
    let asked = |bound: Definition<agent_loop::Bound>| async move {
        bound.invoke("whoami", serde_json::json!({})).await.unwrap()
    };
    assert_eq!(asked(first).await, serde_json::json!(first_id.to_string()));
    assert_eq!(
        asked(second).await,
        serde_json::json!(second_id.to_string())
    );
}

#[tokio::test]
async fn two_different_definitions_named_alike_is_duplicate_definition_name() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted_bundle("web", &["web_search"], &counter))
            .tool(counted_bundle("web", &["web_fetch"], &counter))
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateDefinitionName);
    assert_eq!(error.name.as_deref(), Some("web"));
    assert!(!error.to_string().contains('\n'));
    assert_eq!(
        counter.get(),
        0,
        "collisions are found before any factory runs"
    );
}

#[tokio::test]
async fn definitions_named_alike_in_different_modes_is_duplicate_definition_name() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("a").tool(counted_bundle("web", &["web_search"], &counter)))
            .mode(Mode::new("b").tool(counted_bundle("web", &["web_fetch"], &counter)))
            .initial_mode("a")
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateDefinitionName);
    assert_eq!(error.name.as_deref(), Some("web"));
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn two_definitions_producing_search_is_duplicate_tool_name() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted_bundle("web", &["search"], &counter))
            .tool(counted_bundle("docs", &["search", "read"], &counter))
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    assert_eq!(error.name.as_deref(), Some("search"));
    let text = error.to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(
        text.contains("search") && text.contains("web") && text.contains("docs"),
        "the message names the tool and both definitions: {text}"
    );
    assert_eq!(
        counter.get(),
        0,
        "collisions are found before any factory runs"
    );
}

#[tokio::test]
async fn two_definitions_producing_search_in_different_modes_only_is_duplicate_tool_name() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted("read", &counter))
            .mode(Mode::new("web").tool(counted_bundle("web", &["search"], &counter)))
            .mode(Mode::new("docs").tool(counted_bundle("docs", &["search"], &counter)))
            .initial_mode("web")
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    assert_eq!(error.name.as_deref(), Some("search"));
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn extra_tool_producing_a_base_tool_name_is_duplicate_tool_name() {
    let counter = Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .build()
        .validate()
        .unwrap();
    let error = definition
        .bind(bindings().tool(counted_bundle("session_search", &["search"], &counter)))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    assert_eq!(error.name.as_deref(), Some("search"));
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn extra_tool_named_like_a_base_tool_is_duplicate_definition_name() {
    // The everyday case: both are `from_fn("search", ..)`, so the definition
    // names clash too; definition names are checked first, so that is the
    // one reported.
    let counter = Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .build()
        .validate()
        .unwrap();
    let error = definition
        .bind(bindings().tool(counted("search", &counter)))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::DuplicateDefinitionName);
    assert_eq!(error.name.as_deref(), Some("search"));
    assert_eq!(
        duplicates(&error),
        [(
            "search",
            ["search", "search"],
            [vec!["search"], vec!["search"]]
        )]
    );
    assert_eq!(
        error.to_string(),
        r#"bind: two different tool definitions are named `search` (declaring ["search"] and ["search"])"#
    );
    assert_eq!(counter.get(), 0);
}

/// One `Duplicate` as plain values: name, both definition names, both
/// declared tool name lists.
type DuplicateValues<'a> = (&'a str, [&'a str; 2], [Vec<&'a str>; 2]);

/// `error.duplicates` as plain values.
fn duplicates(error: &BindError) -> Vec<DuplicateValues<'_>> {
    error
        .duplicates
        .iter()
        .map(|duplicate| {
            (
                duplicate.name.as_str(),
                [
                    duplicate.definitions[0].as_str(),
                    duplicate.definitions[1].as_str(),
                ],
                [
                    duplicate.tool_names[0].iter().map(String::as_str).collect(),
                    duplicate.tool_names[1].iter().map(String::as_str).collect(),
                ],
            )
        })
        .collect()
}

#[tokio::test]
async fn every_duplicate_tool_name_is_listed_in_one_error() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted_bundle("web", &["search", "fetch"], &counter))
            .tool(counted_bundle("docs", &["search", "read"], &counter))
            .mode(Mode::new("files").tool(counted_bundle("files", &["read", "fetch"], &counter)))
            .initial_mode("files")
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    assert_eq!(error.name.as_deref(), Some("search"), "the first duplicate");
    assert_eq!(
        duplicates(&error),
        [
            (
                "search",
                ["web", "docs"],
                [vec!["search", "fetch"], vec!["search", "read"]]
            ),
            (
                "read",
                ["docs", "files"],
                [vec!["search", "read"], vec!["read", "fetch"]]
            ),
            (
                "fetch",
                ["web", "files"],
                [vec!["search", "fetch"], vec!["read", "fetch"]]
            ),
        ]
    );
    assert_eq!(
        error.to_string(),
        "bind: duplicate tool name `search` (definitions `web` and `docs`); \
         duplicate tool name `read` (definitions `docs` and `files`); \
         duplicate tool name `fetch` (definitions `web` and `files`)"
    );
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn every_duplicate_definition_name_is_listed_before_any_tool_name() {
    // `a` is declared by `web` and by the second `fs` too, but duplicate
    // definition names are the kind reported: they are checked first.
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted_bundle("web", &["a"], &counter))
            .tool(counted_bundle("web", &["b"], &counter))
            .tool(counted_bundle("fs", &["c"], &counter))
            .tool(counted_bundle("fs", &["a"], &counter))
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateDefinitionName);
    assert_eq!(error.name.as_deref(), Some("web"));
    assert_eq!(
        duplicates(&error),
        [
            ("web", ["web", "web"], [vec!["a"], vec!["b"]]),
            ("fs", ["fs", "fs"], [vec!["c"], vec!["a"]]),
        ]
    );
    assert_eq!(
        error.to_string(),
        r#"bind: two different tool definitions are named `web` (declaring ["a"] and ["b"]); two different tool definitions are named `fs` (declaring ["c"] and ["a"])"#
    );
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn extra_tool_producing_a_mode_tool_name_is_duplicate_tool_name() {
    let counter = Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .mode(Mode::new("review").tool(counted("read", &counter)))
        .initial_mode("review")
        .build()
        .validate()
        .unwrap();
    let error = definition
        .bind(bindings().tool(counted_bundle("session_read", &["read"], &counter)))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    assert_eq!(error.name.as_deref(), Some("read"));
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn extra_tool_that_is_a_base_definition_is_built_once_without_collision() {
    let counter = Counter::new();
    let search = counted("search", &counter);
    let definition = Definition::builder()
        .name("agent")
        .tool(&search)
        .build()
        .validate()
        .unwrap();
    let bound = definition.bind(bindings().tool(&search)).await.unwrap();
    assert_eq!(counter.get(), 1);
    assert_eq!(names(&bound.tools()), ["search"]);
}

#[test]
fn a_definition_declaring_a_name_twice_is_refused_by_validate() {
    let counter = Counter::new();
    let error = Definition::builder()
        .name("agent")
        .tool(counted_bundle("files", &["read", "read"], &counter))
        .build()
        .validate()
        .unwrap_err();
    assert_eq!(error.kind, DefinitionErrorKind::InvalidTool);
    assert_eq!(error.field, "tools[0].tool_names[1]");
    assert_eq!(error.value, "\"read\"");
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn an_extra_tool_declaring_a_name_twice_is_an_invalid_definition_at_bind() {
    let counter = Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .build()
        .validate()
        .unwrap();
    let error = definition
        .bind(bindings().tool(counted_bundle("files", &["read", "read"], &counter)))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidDefinition);
    assert_eq!(error.name.as_deref(), Some("files"));
    assert_eq!(error.index, Some(0));
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn three_definitions_declaring_one_name_are_listed_as_every_pair() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted_bundle("web", &["search"], &counter))
            .tool(counted_bundle("docs", &["search"], &counter))
            .tool(counted_bundle("code", &["search"], &counter))
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    let pairs: Vec<_> = duplicates(&error)
        .into_iter()
        .map(|(name, definitions, _)| (name, definitions))
        .collect();
    assert_eq!(
        pairs,
        [
            ("search", ["web", "docs"]),
            ("search", ["web", "code"]),
            ("search", ["docs", "code"]),
        ]
    );
    assert_eq!(counter.get(), 0);
}

#[tokio::test]
async fn three_definitions_named_alike_are_listed_as_every_pair() {
    let counter = Counter::new();
    let error = bind_err(
        Definition::builder()
            .name("agent")
            .tool(counted_bundle("web", &["a"], &counter))
            .tool(counted_bundle("web", &["b"], &counter))
            .tool(counted_bundle("web", &["c"], &counter))
            .build()
            .validate()
            .unwrap(),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::DuplicateDefinitionName);
    assert_eq!(
        duplicates(&error),
        [
            ("web", ["web", "web"], [vec!["a"], vec!["b"]]),
            ("web", ["web", "web"], [vec!["a"], vec!["c"]]),
            ("web", ["web", "web"], [vec!["b"], vec!["c"]]),
        ]
    );
}
