//! Thread-safety and cloning promises (DESIGN.md section 1, issue 2 item 6).

use agent_loop::bind::ToolHandle;
use agent_loop::tool;
use agent_loop::{
    BindError, Bindings, Bound, Definition, DefinitionError, LoopId, SessionId, Validated,
};
use static_assertions::{assert_impl_all, assert_not_impl_any};

assert_impl_all!(Definition<Validated>: Send, Sync, Clone);
assert_impl_all!(Definition<Bound>: Send, Sync);
assert_not_impl_any!(Definition<Bound>: Clone);
assert_impl_all!(tool::Definition: Send, Sync, Clone);
assert_impl_all!(Bindings: Send, Sync, Clone);
assert_impl_all!(ToolHandle<'static>: Send, Sync);
assert_impl_all!(BindError: std::error::Error, Send, Sync);
assert_impl_all!(DefinitionError: std::error::Error, Send, Sync, Clone);
// A driver of a turn's steps may run on any thread of a multi-thread
// runtime, and store what the steps give it.
assert_impl_all!(agent_loop::turn::TurnSteps<'static>: Send);
assert_impl_all!(agent_loop::turn::TurnState: Send, Sync, Clone);
assert_impl_all!(agent_loop::turn::BatchResults: Send, Sync, Clone);

/// A validated definition can be bound from many tasks at once, each
/// binding with the ids its task gave and tools built for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validated_definition_binds_from_spawned_tasks() {
    let counter = crate::common::Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .tool(crate::common::counted("search", &counter))
        .build()
        .validate()
        .unwrap();
    let given: Vec<(SessionId, LoopId)> =
        (0..4).map(|_| (SessionId::new(), LoopId::new())).collect();
    let tasks: Vec<_> = given
        .iter()
        .map(|&(session_id, loop_id)| {
            let definition = definition.clone();
            tokio::spawn(async move {
                let bound = definition
                    .bind(Bindings::new(session_id, loop_id))
                    .await
                    .unwrap();
                (bound.session_id(), bound.loop_id())
            })
        })
        .collect();
    let mut bound = Vec::new();
    for task in tasks {
        bound.push(task.await.unwrap());
    }
    assert_eq!(bound, given, "each task's binding has the ids it was given");
    assert_eq!(counter.get(), 4, "each binding built its own tools");
}

/// A direct call's future is `Send` and borrows only the binding: it runs
/// on a spawned task that owns the binding through an `Arc`, and a
/// handle's call outlives the handle it was made from.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_calls_run_on_spawned_tasks_and_outlive_their_handle() {
    let definition = Definition::builder()
        .name("agent")
        .tool(crate::turn_common::echo_tool("echo"))
        .build()
        .validate()
        .unwrap();
    let bound = std::sync::Arc::new(
        definition
            .bind(Bindings::new(SessionId::new(), LoopId::new()))
            .await
            .unwrap(),
    );
    let by_name = {
        let bound = std::sync::Arc::clone(&bound);
        tokio::spawn(async move { bound.invoke("echo", serde_json::json!({"text": "a"})).await })
    };
    let by_handle = {
        let bound = std::sync::Arc::clone(&bound);
        tokio::spawn(async move {
            let call = {
                let handle = bound.tool("echo").unwrap();
                handle.invoke(serde_json::json!({"text": "b"}))
            };
            call.await
        })
    };
    let json = |output: tool::ToolOutput| output.into_json();
    assert_eq!(
        json(by_name.await.unwrap().unwrap()),
        serde_json::json!({"text": "a"})
    );
    assert_eq!(
        json(by_handle.await.unwrap().unwrap()),
        serde_json::json!({"text": "b"})
    );
}
