//! Extra tools from the bindings join the base and every mode; modes that
//! never set tools inherit the base's, `Mode::no_tools` keeps only extras.

use crate::common::{Counter, bindings, counted, names};
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::{Bound, Definition, Mode};
use serde_json::json;

async fn bound(counter: &Counter, extra: &Counter) -> Definition<Bound> {
    Definition::builder()
        .name("agent")
        .tool(counted("search", counter))
        .tool(counted("read", counter))
        .mode(Mode::new("review").tool(counted("diff", counter)))
        .mode(Mode::new("inherit"))
        .mode(Mode::new("locked").no_tools())
        .initial_mode("review")
        .build()
        .validate()
        .unwrap()
        .bind(
            bindings()
                .tool(counted("notes", extra))
                .tool(counted("ask_user", extra)),
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn extra_tools_appear_in_base_and_every_mode_after_own_tools() {
    let (counter, extra) = (Counter::new(), Counter::new());
    let bound = bound(&counter, &extra).await;
    assert_eq!(
        names(&bound.base_mode().tools),
        ["search", "read", "notes", "ask_user"]
    );
    assert_eq!(
        names(&bound.mode("review").unwrap().tools),
        ["diff", "notes", "ask_user"]
    );
    assert_eq!(
        names(&bound.mode("inherit").unwrap().tools),
        ["search", "read", "notes", "ask_user"]
    );
    assert_eq!(extra.get(), 2, "each extra tool built once for all modes");
    assert_eq!(counter.get(), 3);
}

#[tokio::test]
async fn mode_with_no_tools_has_only_the_extra_tools() {
    let (counter, extra) = (Counter::new(), Counter::new());
    let mut bound = bound(&counter, &extra).await;
    let locked = bound.mode("locked").unwrap();
    assert_eq!(names(&locked.tools), ["notes", "ask_user"]);
    let notes_in_base = bound.base_mode().tools[2].clone();
    assert!(locked.tools[0].same_instance(&notes_in_base));
    bound.set_current_mode(Some("locked")).unwrap();
    assert_eq!(
        bound.invoke("notes", json!({})).await.unwrap(),
        json!({"tool": "notes", "arguments": {}}),
        "the extra tool itself ran"
    );
    let refused = bound.invoke("search", json!({})).await.unwrap_err();
    assert_eq!(refused.kind, ToolCallErrorKind::UnknownTool);
    assert_eq!(refused.tool_name, "search");
    assert_eq!(
        refused.message,
        "unknown tool `search`; available tools: notes, ask_user"
    );
}

#[tokio::test]
async fn mode_with_no_tools_and_no_extras_is_empty() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .mode(Mode::new("locked").no_tools())
        .mode(Mode::new("empty_list").tools(Vec::<agent_loop::tool::Definition>::new()))
        .initial_mode("locked")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert!(bound.tools().is_empty());
    assert!(
        bound.mode("empty_list").unwrap().tools.is_empty(),
        "an explicitly empty list is not 'inherit'"
    );
    assert_eq!(names(&bound.base_mode().tools), ["search"]);
}
