//! MCP results: a server that answers `tools/list` and `tools/call` with
//! any JSON. Bind either fails with a typed error naming the server or
//! binds the listed tools; a turn calling every bound tool answers each
//! call once, and as an error result when the server said `isError`.
//!
//! The server is played here, over `tokio::io::duplex`: it answers
//! `initialize` properly and every later request with the case's JSON as
//! the `result` member, the way a buggy or hostile server could.

use std::time::Duration;

use agent_loop::conversation::ToolCall;
use agent_loop::mcp::McpServer;
use agent_loop::tool::NameRules;
use agent_loop::{BindErrorKind, Bindings, Definition, LoopId, SessionId};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::{block_on, ensure, run_one_batch};

/// Most tools a case calls.
pub const MAX_CALLS: usize = 8;

/// Binds a server whose `tools/list` result is `list` and whose every
/// `tools/call` result is `call`, and calls each bound tool once.
pub fn check_mcp(list: &Value, call: &Value) -> Result<(), String> {
    let failed = call["isError"] == Value::Bool(true);
    let (list, call) = (list.clone(), call.clone());
    let server = McpServer::stream_with("fuzz", move |_session| {
        let (client, server) = tokio::io::duplex(1 << 16);
        tokio::spawn(serve(server, list.clone(), call.clone()));
        Ok(client)
    })
    // The conversation is checked against all three providers' rules, so
    // the names are made to fit all three (a listed `0` becomes `_0`: Gemini
    // refuses a function name that starts with a digit).
    .name_rules(NameRules::Portable)
    // A case whose answers the client cannot read fails by the timeout:
    // keep it short, the server answers at once or never.
    .connect_timeout(Duration::from_secs(2))
    .call_timeout(Duration::from_secs(2));
    block_on(async {
        let definition = Definition::builder()
            .name("properties-mcp")
            .tool(server.into_definition())
            .build()
            .validate()
            .map_err(|error| format!("the case's definition is refused: {error}"))?;
        let session = match definition
            .bind(Bindings::new(SessionId::new(), LoopId::new()))
            .await
        {
            Ok(session) => session,
            Err(error) => {
                return ensure(
                    matches!(
                        error.kind,
                        BindErrorKind::FactoryFailed
                            | BindErrorKind::InvalidToolInfo
                            | BindErrorKind::DuplicateToolName
                    ),
                    || format!("bind failed with {:?}: {error}", error.kind),
                );
            }
        };
        let calls: Vec<ToolCall> = session
            .tools()
            .iter()
            .take(MAX_CALLS)
            .enumerate()
            .map(|(i, tool)| ToolCall::new(format!("call_{i}"), tool.name(), "{}"))
            .collect();
        let called = calls.len();
        if called == 0 {
            return Ok(());
        }
        let conversation = run_one_batch(&session, calls).await?;
        super::turn::check_conversation(&conversation)?;
        let results = crate::turn_common::tool_results(&conversation);
        ensure(results.len() == called, || {
            format!("{} results for {called} calls", results.len())
        })?;
        ensure(
            !failed || results.iter().all(|result| result.is_error),
            || format!("a result the server marked `isError` is not an error: {results:?}"),
        )
    })
}

/// The server's side: `initialize` answered properly, every other request
/// with `result`, notifications ignored; ends when the client closes.
async fn serve(stream: DuplexStream, list: Value, call: Value) {
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id") else {
            continue;
        };
        let result = match request["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "fuzz", "version": "0" }
            }),
            Some("tools/list") => list.clone(),
            Some("tools/call") => call.clone(),
            _ => json!({}),
        };
        let mut answer = json!({ "jsonrpc": "2.0", "id": id, "result": result }).to_string();
        answer.push('\n');
        if write.write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}
