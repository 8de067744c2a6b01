//! Definitions that discover their tools when their factory runs
//! (`tool::Definition::discovering`, what an MCP server is): nothing is
//! declared, what is built gets every check, and a name two definitions
//! produce is a duplicate listed with every other collision, after which
//! every built tool is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::{EchoTool, bindings, counted_bundle, names};
use agent_loop::session::Session;
use agent_loop::tool::{self, BoxError, CallContext, Tool, ToolFactory, ToolInfo, ToolOutput};
use agent_loop::{BindErrorKind, Definition};
use serde_json::Value;

/// A tool that counts, in a shared counter, the instances still alive.
struct Alive {
    info: ToolInfo,
    alive: Arc<AtomicUsize>,
}

impl Drop for Alive {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl Tool for Alive {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    async fn invoke(&self, _: Value, _: &CallContext) -> Result<ToolOutput, BoxError> {
        Ok(self.info.name.as_str().into())
    }
}

/// A factory that builds tools of the given names, found "at bind".
struct Listed {
    names: Vec<&'static str>,
    alive: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl ToolFactory for Listed {
    async fn build(&self, _session: &Session) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
        Ok(self
            .names
            .iter()
            .map(|name| {
                self.alive.fetch_add(1, Ordering::SeqCst);
                Arc::new(Alive {
                    info: ToolInfo::without_parameters(*name, "Found at bind."),
                    alive: Arc::clone(&self.alive),
                }) as Arc<dyn Tool>
            })
            .collect())
    }
}

fn listed(name: &str, names: &[&'static str], alive: &Arc<AtomicUsize>) -> tool::Definition {
    tool::Definition::discovering(
        name,
        Listed {
            names: names.to_vec(),
            alive: Arc::clone(alive),
        },
    )
}

#[tokio::test]
async fn a_discovering_definition_validates_and_binds_its_tools_in_built_order() {
    let alive = Arc::new(AtomicUsize::new(0));
    let definition = Definition::builder()
        .name("agent")
        .tool(listed("server", &["zeta", "alpha"], &alive))
        .build()
        .validate()
        .unwrap();
    let bound = definition.bind(bindings()).await.unwrap();
    assert_eq!(names(&bound.tools()), ["zeta", "alpha"]);
    assert_eq!(bound.tools()[0].definition_name(), "server");
    assert_eq!(
        bound.invoke("alpha", serde_json::json!({})).await.unwrap(),
        serde_json::json!("alpha")
    );
    drop(bound);
    assert_eq!(
        alive.load(Ordering::SeqCst),
        0,
        "the tools die with the binding"
    );
}

#[tokio::test]
async fn a_discovering_definition_may_build_no_tool() {
    let alive = Arc::new(AtomicUsize::new(0));
    let bound = Definition::builder()
        .name("agent")
        .tool(listed("empty", &[], &alive))
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert!(bound.tools().is_empty());
}

#[tokio::test]
async fn discovered_names_colliding_are_all_listed_and_every_built_tool_is_dropped() {
    let alive = Arc::new(AtomicUsize::new(0));
    let counter = crate::common::Counter::new();
    let error = Definition::builder()
        .name("agent")
        .tool(counted_bundle("local", &["read", "write"], &counter))
        .tool(listed("fs", &["read", "list"], &alive))
        .tool(listed("git", &["list", "read", "log"], &alive))
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    let pairs: Vec<(&str, [&str; 2])> = error
        .duplicates
        .iter()
        .map(|d| {
            (
                d.name.as_str(),
                [d.definitions[0].as_str(), d.definitions[1].as_str()],
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            ("read", ["local", "fs"]),
            ("list", ["fs", "git"]),
            ("read", ["local", "git"]),
            ("read", ["fs", "git"]),
        ]
    );
    // A discovering definition's entry names what it built.
    assert_eq!(error.duplicates[1].tool_names[1], ["list", "read", "log"]);
    assert_eq!(
        error.to_string(),
        "bind: duplicate tool name `read` (definitions `local` and `fs`); \
         duplicate tool name `list` (definitions `fs` and `git`); \
         duplicate tool name `read` (definitions `local` and `git`); \
         duplicate tool name `read` (definitions `fs` and `git`)"
    );
    assert_eq!(
        alive.load(Ordering::SeqCst),
        0,
        "no built tool outlives the error"
    );
}

#[tokio::test]
async fn a_discovering_definition_building_one_name_twice_is_invalid_tool_info() {
    let alive = Arc::new(AtomicUsize::new(0));
    let error = Definition::builder()
        .name("agent")
        .tool(listed("fs", &["read", "list", "read"], &alive))
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("read"));
    assert_eq!(error.index, Some(2));
    assert!(
        error
            .to_string()
            .contains("`fs` built two tools named `read`")
    );
}

#[tokio::test]
async fn a_discovered_tool_gets_the_name_checks() {
    let error = Definition::builder()
        .name("agent")
        .tool(tool::Definition::discovering(
            "server",
            Listed {
                names: vec!["spotify.play"],
                alive: Arc::new(AtomicUsize::new(0)),
            },
        ))
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("spotify.play"));
    // An echo tool is still an ordinary declared tool next to it.
    let _ = EchoTool::named("unused");
}
