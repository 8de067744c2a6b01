//! Thread-safety and cloning promises (DESIGN.md section 1, issue 2 item 6).

use agent_loop::bind::ToolHandle;
use agent_loop::tool;
use agent_loop::{BindError, Bindings, Bound, Definition, DefinitionError, Validated};
use static_assertions::{assert_impl_all, assert_not_impl_any};

assert_impl_all!(Definition<Validated>: Send, Sync, Clone);
assert_impl_all!(Definition<Bound>: Send, Sync);
assert_not_impl_any!(Definition<Bound>: Clone);
assert_impl_all!(tool::Definition: Send, Sync, Clone);
assert_impl_all!(Bindings: Send, Sync, Clone);
assert_impl_all!(ToolHandle<'static>: Send, Sync);
assert_impl_all!(BindError: std::error::Error, Send, Sync);
assert_impl_all!(DefinitionError: std::error::Error, Send, Sync, Clone);

/// A validated definition can be bound from many tasks at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validated_definition_binds_from_spawned_tasks() {
    let definition = Definition::builder()
        .name("agent")
        .build()
        .validate()
        .unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let definition = definition.clone();
            tokio::spawn(async move {
                let bound = definition
                    .bind(Bindings::new(
                        agent_loop::SessionId::new(),
                        agent_loop::LoopId::new(),
                    ))
                    .await
                    .unwrap();
                bound.session_id()
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for task in tasks {
        sessions.push(task.await.unwrap());
    }
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), 4, "each task bound its own session");
}
