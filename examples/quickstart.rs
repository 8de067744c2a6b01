//! Quickstart: two real tools over a directory given by the binding, two
//! modes, a logging middleware, then one whole turn driven by a scripted
//! model.
//!
//! ```text
//! cargo run --example quickstart            # over this repository
//! cargo run --example quickstart -- ./src   # over another directory
//! ```

mod workspace;

use std::path::PathBuf;

use agent_loop::conversation::{AssistantMessage, Message, ModelResponse, ToolCall};
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{BoxError, ToolOutput};
use agent_loop::turn::{ScriptedModel, TurnStatus};
use agent_loop::{Bindings, LoopId, SessionId};
use agent_loop::{Definition, Mode, ToolLimits};
use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Logs every tool call: before, after, and how it ended.
struct Logging;

#[async_trait]
impl ToolMiddleware for Logging {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        let context = call.context.clone();
        println!(
            "    [log] -> {} {} (call id {:?}, mode {:?})",
            context.tool_name(),
            call.arguments,
            context.tool_call_id(),
            context.mode().unwrap_or("base")
        );
        let output = next.run(call).await;
        match &output {
            Ok(value) => println!(
                "    [log] <- {} ok, {} bytes",
                context.tool_name(),
                value.text().len()
            ),
            Err(error) => println!("    [log] <- {} error: {error}", context.tool_name()),
        }
        output
    }

    fn name(&self) -> &str {
        "logging"
    }
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    // Declared once per process: factories, not instances. Each tool's
    // info is declared here and its schema compiled once; the factory makes
    // the tool's handler for each session.
    let (list_files, read_file) = (workspace::list_files(), workspace::read_file());

    let definition = Definition::builder()
        .name("repo-explorer")
        .tools([&list_files, &read_file])
        .middleware(Logging)
        .tool_limits(ToolLimits::new().parallel(4).result_bytes(1024))
        .mode(
            Mode::new("explore")
                .instructions("Look around the repository and summarise it.")
                .tool_limits(ToolLimits::new().iterations(6)),
        )
        .mode(
            Mode::new("skim")
                .tool(&list_files)
                .instructions("List, never read.")
                .tool_limits(ToolLimits::new().iterations(1).calls(3)),
        )
        .initial_mode("explore")
        .build()
        .validate()?;

    // Per session: fresh tools, bound to this session's workspace.
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let session = definition
        .bind(
            Bindings::new(SessionId::new(), LoopId::new())
                .with(workspace::Workspace { root: root.clone() }),
        )
        .await?;

    println!("bound `{}` over {}", session.name(), root.display());
    println!(
        "session {} loop {}",
        session.session_id(),
        session.loop_id()
    );
    for mode in session.modes() {
        let limits = mode.tool_limits;
        let tools: Vec<&str> = mode.tools.iter().map(|t| t.name()).collect();
        println!(
            "  mode {:<8} tools {:?}  iterations {} calls {} parallel {} result_bytes {}",
            mode.name.as_deref().unwrap_or("(base)"),
            tools,
            limits.iterations,
            limits.calls,
            limits.parallel,
            limits
                .result_bytes
                .map_or("off".to_owned(), |b| b.to_string()),
        );
    }

    println!("\ninvoking tools directly (through the middleware chain):");
    let listing = session.invoke("list_files", json!({})).await?;
    println!("  list_files -> {}", listing.text());
    let cargo_toml = session
        .invoke(
            "read_file",
            json!({ "path": "Cargo.toml", "max_bytes": 60 }),
        )
        .await?;
    println!("  read_file Cargo.toml -> {cargo_toml:?}");
    match session
        .invoke("read_file", json!({ "path": "../../etc/passwd" }))
        .await
    {
        Ok(_) => return Err("a path leaving the workspace was read".into()),
        // The tool itself refuses the path: a tool error (kind ToolFailed),
        // not a middleware's refusal.
        Err(error) => println!("  read_file ../../etc/passwd -> {:?}: {error}", error.kind),
    }

    // One whole turn, with a scripted model standing in for a provider.
    println!("\nrunning a turn with a scripted model:");
    let model = ScriptedModel::new([
        ModelResponse::new(AssistantMessage::with_tool_calls(
            Some("Let me look at the manifest, the readme and the sources at once.".into()),
            vec![
                ToolCall::new(
                    "call_1",
                    "read_file",
                    r#"{"path": "Cargo.toml", "max_bytes": 200}"#,
                ),
                ToolCall::new(
                    "call_2",
                    "read_file",
                    r#"{"path": "README.md", "max_bytes": 300}"#,
                ),
                ToolCall::new("call_3", "list_files", r#"{"directory": "src"}"#),
            ],
        )),
        ModelResponse::tool_calls([ToolCall::new(
            "call_4",
            "grep_files",
            r#"{"pattern": "Tool"}"#,
        )]),
        ModelResponse::tool_calls([ToolCall::new(
            "call_5",
            "list_files",
            r#"{"directory": "examples"}"#,
        )]),
        ModelResponse::answer("agent-loop is a Rust crate; its sources live in src/."),
    ]);
    let mut conversation = vec![Message::user("What is in this repository?")];
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await?;

    for (number, iteration) in outcome.stats.iterations.iter().enumerate() {
        println!(
            "  iteration {} ({} calls, model {:?}, batch {:?}):",
            number + 1,
            iteration.calls.len(),
            iteration.model_duration,
            iteration.batch_duration
        );
        for call in &iteration.calls {
            println!(
                "    {} {:<10} {:>9?}  {} bytes{}{}",
                call.tool_call_id,
                call.tool_name,
                call.duration,
                call.result_bytes,
                if call.truncated {
                    " (cut for the model)"
                } else {
                    ""
                },
                call.error
                    .map_or(String::new(), |kind| format!("  error: {kind:?}")),
            );
        }
    }
    for message in outcome.messages(&conversation) {
        if let Message::Tool(result) = message
            && result.is_error
        {
            println!(
                "  the model was told ({}): {}",
                result.tool_call_id,
                result.text()
            );
        }
    }
    match &outcome.status {
        TurnStatus::Completed { answer } => println!("  final answer: {answer}"),
        TurnStatus::Output { value } => println!("  output: {value}"),
        TurnStatus::Interrupted => println!("  interrupted"),
        // `TurnStatus` may gain statuses (a paused turn, say).
        other => println!("  ended: {other:?}"),
    }
    println!(
        "  {} iterations, {} calls, {:?} in all; the conversation now has {} messages",
        outcome.stats.iteration_count(),
        outcome.stats.call_count(),
        outcome.stats.duration,
        conversation.len()
    );
    Ok(())
}
