//! Serves the quickstart's tools (`list_files`, `read_file` over a
//! directory) as an MCP server: each MCP session gets its own binding, and
//! every call goes through the binding's checks, its gate and its
//! middleware, as a turn's call would. Reading anything under `.git` needs
//! a person's approval, which an MCP client cannot give: such a call is an
//! `isError` result saying so.
//!
//! ```text
//! cargo run --example serve --features mcp-server                     # stdio, over this repository
//! cargo run --example serve --features mcp-server -- ./src            # stdio, over another directory
//! cargo run --example serve --features mcp-server -- --http 8080      # streamable HTTP on 127.0.0.1:8080/mcp
//! ```
//!
//! Logs go to stderr: over stdio, stdout carries the protocol.

mod workspace;

use std::path::{Component, Path, PathBuf};

use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::serve::McpService;
use agent_loop::tool::BoxError;
use agent_loop::{Bindings, Definition, LoopId, SessionId};
use tokio_util::sync::CancellationToken;

/// Reading under `.git` waits for a person.
fn ask_about_git(call: &GateCall<'_>) -> GateDecision {
    let path = Path::new(call.arguments["path"].as_str().unwrap_or_default());
    // By components: `./.git/HEAD` and `.//.git/HEAD` are under `.git`,
    // `.gitignore` is not.
    if path
        .components()
        .any(|part| part == Component::Normal(".git".as_ref()))
    {
        GateDecision::ask("reading the repository's own metadata needs a person's approval")
    } else {
        GateDecision::Allow
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut arguments = std::env::args().skip(1);
    let (mut port, mut root) = (None, None);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--http" => {
                let value = arguments.next().ok_or("--http needs a PORT")?;
                port = Some(
                    value
                        .parse::<u16>()
                        .map_err(|_| format!("not a port: {value}"))?,
                );
            }
            _ => root = Some(PathBuf::from(argument)),
        }
    }
    let root = root.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let definition = Definition::builder()
        .name("repo-explorer")
        .tools([workspace::list_files(), workspace::read_file()])
        .tool_gate("read_file", ask_about_git)
        .build()
        .validate()?;
    let service = McpService::new(definition).bindings(move || {
        Bindings::new(SessionId::new(), LoopId::new())
            .with(workspace::Workspace { root: root.clone() })
    });
    match port {
        None => {
            eprintln!("serving `repo-explorer` over stdio");
            service.serve_stdio().await?;
        }
        Some(port) => {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            eprintln!(
                "serving `repo-explorer` at http://{}/mcp",
                listener.local_addr()?
            );
            let shutdown = CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
            });
            service.serve_http(listener, shutdown).await;
        }
    }
    Ok(())
}
