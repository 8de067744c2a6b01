//! Builder methods append what they are given, in call order, and keep
//! the definitions' identity (DESIGN.md sections 2 and 7).
//!
//! That a caller changing its own collection afterwards changes nothing,
//! and that changing what `tools()`, `modes()` or `middlewares()` returned
//! changes nothing in the binding, needs no test: the builder only borrows
//! a collection for the call (`.tools(&tools)`) and the bound loop returns
//! owned `Vec`s, so the compiler already refuses any code through which
//! such a change could reach a definition or a binding.

use crate::common::{Counter, bindings, counted, names};
use agent_loop::{Definition, Mode};

#[tokio::test]
async fn tools_given_by_reference_are_the_same_definitions_in_call_order() {
    // `.tools(&vec)` clones each definition, and a clone is the same
    // definition: given to the base and to a mode, each is built once and
    // its one instance is in both.
    let counter = Counter::new();
    let tools = vec![counted("search", &counter), counted("read", &counter)];
    let bound = Definition::builder()
        .name("agent")
        .tools(&tools)
        .tools(&tools[..1])
        .mode(Mode::new("review").tools(tools.iter().rev()))
        .initial_mode("review")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let base = bound.base_mode().tools;
    let review = bound.mode("review").unwrap().tools;
    assert_eq!(names(&base), ["search", "read"], "a repeat is listed once");
    assert_eq!(names(&review), ["read", "search"]);
    assert_eq!(counter.get(), 2, "each definition built once");
    assert!(base[0].same_instance(&review[1]));
    assert!(base[1].same_instance(&review[0]));
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

#[test]
fn the_two_definitions_print_apart() {
    let echo = agent_loop::tool::Definition::from_fn(
        agent_loop::tool::ToolInfo::without_parameters("echo", "Echoes."),
        |arguments: serde_json::Value, _context| async move {
            Ok::<_, agent_loop::tool::BoxError>(arguments)
        },
    );
    let defined = agent_loop::Definition::builder()
        .name("agent")
        .tool(&echo)
        .build();
    let printed = format!("{defined:?}");
    assert!(
        printed.starts_with(
            r#"Definition<Defined> { name: "agent", tools: [tool::Definition { name: "echo""#
        ),
        "{printed}"
    );
    let validated = format!("{:?}", defined.validate().expect("valid"));
    assert!(
        validated.starts_with("Definition<Validated> {"),
        "{validated}"
    );
}
