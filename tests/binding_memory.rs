//! What a binding holds does not depend on how it was made: 8 bindings made
//! at once from a fresh `Validated` (their factories all running before
//! any of them checks what it built) hold, each of them and each binding
//! made after them, exactly the bytes that bindings made one after another
//! hold. A binding's bytes are what dropping it frees: everything it
//! shares with others (checked infos, compiled schemas, the layout) stays.
//!
//! Before the validated definition carried its layout, racing first binds
//! each checked a factory's infos, the cache kept one, and every later
//! binding failed the check that lets it share and held a copy of its
//! tool lists for good (77.6 KB instead of 39.1 KB for 20 tools).
//!
//! A test binary of its own (`[[test]] binding_memory`), so its counting
//! global allocator sees only these bindings.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_loop::tool::{self, BoxError, CallContext, Tool, ToolInfo, ToolOutput};
use agent_loop::{Bindings, Bound, Definition, LoopId, Mode, SessionId, Validated};
use async_trait::async_trait;
use serde_json::{Value, json};

/// The system allocator, counting the bytes each thread frees: a drop on
/// the test's thread is measured alone, whatever the runtime's worker
/// threads free meanwhile (a finished task's memory, say).
struct CountingFrees;

thread_local! {
    static FREED: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to `System` unchanged; only a
// thread-local counter (const-initialised, so it never allocates) is
// updated.
unsafe impl GlobalAlloc for CountingFrees {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(pointer, layout) };
        // A thread being torn down has no counter left: nothing to count.
        let _ = FREED.try_with(|freed| freed.set(freed.get() + layout.size()));
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's pointer, layout and size.
        unsafe { System.realloc(pointer, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingFrees = CountingFrees;

fn freed() -> usize {
    FREED.with(Cell::get)
}

const TOOLS: usize = 20;
const AT_ONCE: usize = 8;

fn parameters(i: usize) -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": format!("City of tool {i}.")},
            "days": {"type": "integer", "minimum": 1, "maximum": 14}
        },
        "required": ["city"]
    })
}

/// A tool a factory builds per session, with an info of its own.
struct Forecast(ToolInfo);

#[async_trait]
impl Tool for Forecast {
    fn info(&self) -> &ToolInfo {
        &self.0
    }

    async fn invoke(&self, arguments: Value, _: &CallContext) -> Result<ToolOutput, BoxError> {
        Ok(arguments.into())
    }
}

/// While set, each factory waits until the factories of its tool in all
/// 8 racing binds have run, so that every one of them checks what it built
/// at about the same time.
struct Race {
    on: AtomicBool,
    barriers: Vec<tokio::sync::Barrier>,
}

/// A fresh definition of 20 tools used by the base and 2 modes: `from_fn`
/// tools, or factory tools that report their own infos and meet at
/// `race`'s barriers while it is on.
fn definition(factories: bool, race: &Arc<Race>) -> Definition<Validated> {
    let tools: Vec<tool::Definition> = (0..TOOLS)
        .map(|i| {
            let name = format!("forecast_{i}");
            if !factories {
                return tool::Definition::from_fn(
                    ToolInfo::new(&name, "A forecast.", parameters(i)),
                    |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
                );
            }
            let race = Arc::clone(race);
            let tool_name = name.clone();
            tool::Definition::bundle(name, [tool_name.clone()], move |_session| {
                let race = Arc::clone(&race);
                let info = ToolInfo::new(&tool_name, "A forecast.", parameters(i));
                async move {
                    if race.on.load(Ordering::SeqCst) {
                        race.barriers[i].wait().await;
                    }
                    Ok::<_, BoxError>(vec![Arc::new(Forecast(info)) as Arc<dyn Tool>])
                }
            })
        })
        .collect();
    Definition::builder()
        .name("memory")
        .tools(&tools)
        .modes([Mode::new("a").tools(&tools[..10]), Mode::new("b")])
        .initial_mode("a")
        .build()
        .validate()
        .expect("a valid definition")
}

fn race(on: bool) -> Arc<Race> {
    Arc::new(Race {
        on: AtomicBool::new(on),
        barriers: (0..TOOLS)
            .map(|_| tokio::sync::Barrier::new(AT_ONCE))
            .collect(),
    })
}

fn bindings() -> Bindings {
    Bindings::new(SessionId::new(), LoopId::new())
}

/// The bytes dropping each binding frees, in order.
fn held(bound: Vec<Definition<Bound>>) -> Vec<usize> {
    bound
        .into_iter()
        .map(|binding| {
            let before = freed();
            drop(binding);
            freed() - before
        })
        .collect()
}

async fn made_one_after_another(factories: bool) -> Vec<usize> {
    let definition = definition(factories, &race(false));
    let mut bound = Vec::new();
    for _ in 0..AT_ONCE * 2 {
        bound.push(definition.bind(bindings()).await.expect("bound"));
    }
    held(bound)
}

async fn made_at_once_then_later(factories: bool) -> Vec<usize> {
    let race = race(true);
    let definition = definition(factories, &race);
    let tasks: Vec<_> = (0..AT_ONCE)
        .map(|_| {
            let definition = definition.clone();
            tokio::spawn(async move { definition.bind(bindings()).await })
        })
        .collect();
    let mut bound = Vec::new();
    for task in tasks {
        bound.push(task.await.expect("no panic").expect("bound"));
    }
    race.on.store(false, Ordering::SeqCst);
    for _ in 0..AT_ONCE {
        bound.push(definition.bind(bindings()).await.expect("bound"));
    }
    held(bound)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bindings_made_at_once_hold_what_bindings_made_one_by_one_hold() {
    for factories in [false, true] {
        let sequential = made_one_after_another(factories).await;
        assert!(
            sequential.iter().all(|&bytes| bytes == sequential[0]),
            "{sequential:?}"
        );
        let racing = made_at_once_then_later(factories).await;
        assert_eq!(
            racing,
            vec![sequential[0]; AT_ONCE * 2],
            "factories: {factories}; one by one each held {} bytes",
            sequential[0]
        );
    }
}
