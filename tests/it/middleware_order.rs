//! The middleware chain: the first registered is the outermost, for direct
//! invocation by name and through a tool handle alike.

use std::sync::{Arc, Mutex};

use crate::common::bindings;
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{self, BoxError, ToolInfo, ToolOutput};
use agent_loop::{Bound, Definition};
use async_trait::async_trait;
use serde_json::{Value, json};

type Log = Arc<Mutex<Vec<String>>>;

/// Records `<label> before` and `<label> after` around the rest of the chain.
struct Record {
    label: &'static str,
    log: Log,
}

#[async_trait]
impl ToolMiddleware for Record {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{} before", self.label));
        let output = next.run(call).await;
        self.log
            .lock()
            .unwrap()
            .push(format!("{} after", self.label));
        output
    }

    fn name(&self) -> &str {
        self.label
    }
}

/// Adds `"tagged": true` to the arguments.
struct Tag;

#[async_trait]
impl ToolMiddleware for Tag {
    async fn handle(
        &self,
        mut call: ToolInvocation,
        next: Next<'_>,
    ) -> Result<ToolOutput, BoxError> {
        call.arguments["tagged"] = json!(true);
        next.run(call).await
    }
}

/// Answers without calling the tool.
struct ShortCircuit;

#[async_trait]
impl ToolMiddleware for ShortCircuit {
    async fn handle(&self, _call: ToolInvocation, _next: Next<'_>) -> Result<ToolOutput, BoxError> {
        Ok(json!("cached").into())
    }
}

fn recording_tool(log: &Log) -> tool::Definition {
    let log = Arc::clone(log);
    tool::Definition::from_fn(
        ToolInfo::without_parameters("work", "Does the work."),
        move |arguments: Value, _context| {
            log.lock().unwrap().push("tool".to_owned());
            async move { Ok::<_, BoxError>(arguments) }
        },
    )
}

async fn bound(log: &Log) -> Definition<Bound> {
    Definition::builder()
        .name("agent")
        .tool(recording_tool(log))
        .middleware(Record {
            label: "outer",
            log: Arc::clone(log),
        })
        .middleware(Record {
            label: "inner",
            log: Arc::clone(log),
        })
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap()
}

const EXPECTED: [&str; 5] = [
    "outer before",
    "inner before",
    "tool",
    "inner after",
    "outer after",
];

#[tokio::test]
async fn first_registered_middleware_is_outermost_via_invoke() {
    let log = Log::default();
    let bound = bound(&log).await;
    bound.invoke("work", json!({"n": 1})).await.unwrap();
    assert_eq!(*log.lock().unwrap(), EXPECTED);
}

#[tokio::test]
async fn first_registered_middleware_is_outermost_via_tool_handle() {
    let log = Log::default();
    let bound = bound(&log).await;
    let handle = bound.tool("work").expect("the tool is in the current mode");
    handle.invoke(json!({})).await.unwrap();
    assert_eq!(*log.lock().unwrap(), EXPECTED);
    log.lock().unwrap().clear();
    bound.tools()[0].invoke(json!({})).await.unwrap();
    assert_eq!(*log.lock().unwrap(), EXPECTED);
}

#[tokio::test]
async fn middlewares_are_listed_outermost_first() {
    let log = Log::default();
    let bound = bound(&log).await;
    let listed: Vec<String> = bound
        .middlewares()
        .iter()
        .map(|m| m.name().to_owned())
        .collect();
    assert_eq!(listed, ["outer", "inner"]);
}

#[tokio::test]
async fn middlewares_appends_after_middleware() {
    let log = Log::default();
    let shared: Vec<Arc<dyn ToolMiddleware>> = vec![Arc::new(Record {
        label: "inner",
        log: Arc::clone(&log),
    })];
    let bound = Definition::builder()
        .name("agent")
        .tool(recording_tool(&log))
        .middleware(Record {
            label: "outer",
            log: Arc::clone(&log),
        })
        .middlewares(shared)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    bound.invoke("work", json!({})).await.unwrap();
    assert_eq!(*log.lock().unwrap(), EXPECTED);
}

#[tokio::test]
async fn middleware_may_rewrite_arguments() {
    let log = Log::default();
    let bound = Definition::builder()
        .name("agent")
        .tool(recording_tool(&log))
        .middleware(Tag)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let output = bound.invoke("work", json!({"n": 1})).await.unwrap();
    assert_eq!(output, json!({"n": 1, "tagged": true}));
}

#[tokio::test]
async fn middleware_may_short_circuit_the_tool() {
    let log = Log::default();
    let bound = Definition::builder()
        .name("agent")
        .tool(recording_tool(&log))
        .middleware(Record {
            label: "outer",
            log: Arc::clone(&log),
        })
        .middleware(ShortCircuit)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let output = bound.invoke("work", json!({})).await.unwrap();
    assert_eq!(output, json!("cached"));
    assert_eq!(*log.lock().unwrap(), ["outer before", "outer after"]);
}
