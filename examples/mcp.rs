//! Tools from an MCP server: the filesystem server, bound to one directory
//! for one session, listed and read in a turn.
//!
//! ```sh
//! npm ci --prefix tests/mcp-servers          # the pinned servers, once
//! cargo run --example mcp --features mcp -- DIR
//! OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=... \
//!   cargo run --example mcp --features mcp,openai -- DIR   # a real model
//! ```
//!
//! The server is `@modelcontextprotocol/server-filesystem`, installed at
//! its pinned version in `tests/mcp-servers` (or, when that is missing,
//! fetched by `npx` at the same version). Binding the definition starts it
//! with `DIR` as the only directory it may touch; its read-only tools are
//! offered to the model (the others are denied), the turn lists `DIR` and
//! reads its first file, and each tool result is printed. Dropping the
//! binding stops the server.

use std::path::{Path, PathBuf};
use std::time::Instant;

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::mcp::{McpServer, StdioCommand};
use agent_loop::turn::TurnOptions;
use agent_loop::turn::{Model, ScriptedModel, TurnEvent, TurnEvents};
use agent_loop::{Bindings, Definition, LoopId, SessionId, ToolLimits};
use serde_json::json;

/// The filesystem server's version, as pinned in `tests/mcp-servers`.
const FILESYSTEM_SERVER: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

/// The directory of the session: the binding data the server's command
/// reads.
struct Workspace(PathBuf);

/// `node` on the pinned install, or `npx` fetching the same version.
fn server_command(workspace: &Path) -> StdioCommand {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/mcp-servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    let command = if installed.is_file() {
        StdioCommand::new("node").arg(installed)
    } else {
        eprintln!("mcp: tests/mcp-servers is not installed; using npx {FILESYSTEM_SERVER}");
        StdioCommand::new("npx").args(["-y", FILESYSTEM_SERVER])
    };
    command.arg(workspace)
}

/// What a good model does here: list the directory, then read its first
/// file (found now, since a script cannot read the listing).
fn scripted(directory: &Path) -> std::io::Result<ScriptedModel> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    let mut calls = vec![ToolCall::new(
        "call_list",
        "list_directory",
        json!({ "path": directory }).to_string(),
    )];
    if let Some(first) = files.first() {
        calls.push(ToolCall::new(
            "call_read",
            "read_text_file",
            json!({ "path": first, "head": 20 }).to_string(),
        ));
    }
    Ok(ScriptedModel::new([
        ModelResponse::tool_calls(calls),
        ModelResponse::answer("I listed the directory and read its first file."),
    ]))
}

/// A real model when the `openai` feature is on and `OPENAI_MODEL` is
/// set; otherwise the scripted stand-in, saying so.
fn model(directory: &Path) -> Result<Box<dyn Model>, Box<dyn std::error::Error>> {
    #[cfg(feature = "openai")]
    if std::env::var_os("OPENAI_MODEL").is_some() {
        eprintln!("mcp: using OpenAiModel::from_env()");
        return Ok(Box::new(agent_loop::model::OpenAiModel::from_env()?));
    }
    eprintln!("mcp: no real model configured; using a scripted stand-in");
    Ok(Box::new(scripted(directory)?))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(directory) = std::env::args_os().nth(1) else {
        eprintln!("usage: cargo run --example mcp --features mcp -- DIR");
        std::process::exit(2);
    };
    // The server resolves symbolic links; give it the real path.
    let directory = match std::fs::canonicalize(&directory) {
        Ok(directory) => directory,
        Err(error) => {
            eprintln!("mcp: {}: {error}", Path::new(&directory).display());
            std::process::exit(2);
        }
    };

    // Declared once per process: the server is started per binding.
    let files = McpServer::stdio_with("files", |session| {
        Ok(server_command(&session.get::<Workspace>()?.0))
    })
    .allow([
        "list_directory",
        "read_text_file",
        "directory_tree",
        "get_file_info",
        "search_files",
    ]);
    let definition = Definition::builder()
        .name("files-agent")
        .instructions("Answer questions about the files in the user's directory.")
        .tool(files)
        .tool_limits(ToolLimits::new().iterations(5).result_bytes(4096))
        .build()
        .validate()?;

    let started = Instant::now();
    let session = definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()).with(Workspace(directory.clone())))
        .await?;
    println!("bound in {:?}; tools:", started.elapsed());
    for tool in session.tools() {
        let hints = tool.info().annotations();
        println!(
            "  {} (read-only: {})",
            tool.name(),
            hints
                .read_only_hint
                .map_or("unknown".into(), |hint| hint.to_string())
        );
    }

    let model = model(&directory)?;
    let (events, mut received) = TurnEvents::channel();
    let printer = tokio::spawn(async move {
        while let Some(event) = received.recv().await {
            if let TurnEvent::ToolCallFinished {
                tool_name,
                duration,
                error,
                ..
            } = event
            {
                eprintln!("  [{tool_name} finished in {duration:?}, error: {error:?}]");
            }
        }
    });
    let mut conversation = vec![Message::user(format!(
        "List {} and show me the start of its first file.",
        directory.display()
    ))];
    let outcome = session
        .run_turn(
            model.as_ref(),
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await?;
    drop(events);
    let _ = printer.await;
    for result in conversation.iter().filter_map(Message::as_tool_result) {
        println!(
            "\n--- tool result {}{}:\n{}",
            result.tool_call_id,
            if result.is_error { " (error)" } else { "" },
            result.text()
        );
    }
    println!("\nanswer: {}", outcome.answer().unwrap_or("(none)"));
    Ok(())
}
