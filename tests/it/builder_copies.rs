//! Inputs are copied and outputs are fresh (DESIGN.md sections 2 and 7):
//! mutating a vector given to the builder, or one returned by the bound
//! loop, changes nothing.

use crate::common::{Counter, bindings, counted, names};
use agent_loop::{Definition, Limit, Mode, ToolLimits};

#[tokio::test]
async fn mutating_the_vector_given_to_tools_changes_nothing() {
    let counter = Counter::new();
    let mut tools = vec![counted("search", &counter), counted("read", &counter)];
    let builder = Definition::builder().name("agent").tools(&tools);
    tools.clear();
    tools.push(counted("delete", &counter));
    let definition = builder.tools(&tools).build();
    tools.push(counted("format", &counter));
    tools.remove(0);

    let bound = definition
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert_eq!(names(&bound.tools()), ["search", "read", "delete"]);
}

#[tokio::test]
async fn mutating_the_vector_given_to_mode_tools_changes_nothing() {
    let counter = Counter::new();
    let mut tools = vec![counted("read", &counter)];
    let mode = Mode::new("review").tools(&tools);
    tools.push(counted("write", &counter));
    tools.swap(0, 1);
    let bound = Definition::builder()
        .name("agent")
        .mode(mode)
        .initial_mode("review")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert_eq!(names(&bound.tools()), ["read"]);
}

#[tokio::test]
async fn tools_and_modes_append_in_call_order() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .tool(counted("a", &counter))
        .tools([counted("b", &counter), counted("c", &counter)])
        .tool(counted("d", &counter))
        .mode(Mode::new("one"))
        .modes([Mode::new("two"), Mode::new("three")])
        .initial_mode("two")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert_eq!(names(&bound.base_mode().tools), ["a", "b", "c", "d"]);
    let modes: Vec<_> = bound.modes().into_iter().filter_map(|m| m.name).collect();
    assert_eq!(modes, ["one", "two", "three"]);
}

#[tokio::test]
async fn mode_tool_calls_append() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .mode(
            Mode::new("m")
                .tool(counted("a", &counter))
                .tools([counted("b", &counter)])
                .tool(counted("c", &counter)),
        )
        .initial_mode("m")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert_eq!(names(&bound.tools()), ["a", "b", "c"]);
}

#[tokio::test]
async fn mutating_what_tools_returns_changes_nothing() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .tools([counted("search", &counter), counted("read", &counter)])
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let mut tools = bound.tools();
    tools.reverse();
    tools.pop();
    assert_eq!(names(&tools), ["read"]);
    assert_eq!(names(&bound.tools()), ["search", "read"]);
    assert!(bound.tool("search").is_some());
}

#[tokio::test]
async fn mutating_what_modes_returns_changes_nothing() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .mode(
            Mode::new("review")
                .tool(counted("read", &counter))
                .tool_limits(ToolLimits::new().iterations(5))
                .instructions("Read only."),
        )
        .initial_mode("review")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let mut modes = bound.modes();
    modes[1].name = Some("hacked".to_owned());
    modes[1].tools.clear();
    modes[1].tool_limits.iterations = Limit::at_most(1).unwrap();
    modes[1].instructions = None;
    modes.remove(0);

    let again = bound.modes();
    assert_eq!(again.len(), 2);
    let review = bound.mode("review").expect("still named review");
    assert_eq!(names(&review.tools), ["read"]);
    assert_eq!(review.tool_limits.iterations.get(), Some(5));
    assert_eq!(review.instructions.as_deref(), Some("Read only."));
    assert!(bound.mode("hacked").is_none());

    let mut current = bound.current_mode();
    current.tool_limits.calls = Limit::at_most(1).unwrap();
    assert_eq!(bound.current_mode().tool_limits.calls.get(), Some(100));
}

#[tokio::test]
async fn mutating_what_middlewares_returns_changes_nothing() {
    struct Noop;
    #[async_trait::async_trait]
    impl agent_loop::ToolMiddleware for Noop {
        async fn handle(
            &self,
            call: agent_loop::ToolInvocation,
            next: agent_loop::Next<'_>,
        ) -> Result<agent_loop::tool::ToolOutput, agent_loop::tool::BoxError> {
            next.run(call).await
        }
    }
    let bound = Definition::builder()
        .name("agent")
        .middleware(Noop)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let mut middlewares = bound.middlewares();
    middlewares.clear();
    assert_eq!(bound.middlewares().len(), 1);
}

#[tokio::test]
async fn a_validated_definition_is_not_changed_by_binding_it() {
    let counter = Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .build()
        .validate()
        .unwrap();
    let mut first = definition
        .bind(bindings().tool(counted("extra", &counter)))
        .await
        .unwrap();
    first.set_current_mode(None).unwrap();
    let second = definition.bind(bindings()).await.unwrap();
    assert_eq!(names(&first.tools()), ["search", "extra"]);
    assert_eq!(
        names(&second.tools()),
        ["search"],
        "extras belong to one binding"
    );
}
