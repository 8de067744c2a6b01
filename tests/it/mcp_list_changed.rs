//! A server's `notifications/tools/list_changed`, against an `rmcp` server
//! in this process: the binding lists the tools again before its next
//! model request, offers the new list if it passes the checks of bind,
//! answers a call of a dropped tool "no longer offered", and keeps the old
//! list (with an event) when the new one fails.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_loop::bind::{BindErrorKind, ToolCallErrorKind};
use agent_loop::mcp::McpServer;
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::TurnEvent;

use crate::turn_common::{Ran, run_batches};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::json;

/// A server whose tools its own tools change: `add_extra` adds `extra`,
/// `remove_greet` removes `greet`, `add_local` adds a tool named like the
/// binding's own `local`, `add_bad_schema` one whose schema is no schema.
/// Each change is announced with `notifications/tools/list_changed`.
#[derive(Clone)]
struct ChangingServer {
    tools: Arc<Mutex<Vec<Tool>>>,
}

fn tool(name: &str, schema: serde_json::Value) -> Tool {
    serde_json::from_value(json!({"name": name, "description": name, "inputSchema": schema}))
        .unwrap()
}

impl ServerHandler for ChangingServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools.lock().unwrap().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let object = json!({"type": "object"});
        let change = match request.name.as_ref() {
            "add_extra" => Some(tool("extra", object)),
            "add_local" => Some(tool("local", object)),
            "add_bad_schema" => Some(tool(
                "bad",
                json!({"type": "object", "properties": {"a": {"type": "nonsense"}}}),
            )),
            "remove_greet" => None,
            name => {
                let text = format!("{name} ran");
                return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
            }
        };
        {
            let mut tools = self.tools.lock().unwrap();
            match change {
                Some(added) => tools.push(added),
                None => tools.retain(|tool| tool.name != "greet"),
            }
        }
        context.peer.notify_tool_list_changed().await.unwrap();
        // The client reads the notification before this answer; a moment
        // more lets its handler count it before the turn goes on.
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok(CallToolResult::success(vec![ContentBlock::text("changed")]).into())
    }
}

/// A binding of the changing server (as definition `changing`) beside a
/// tool of its own, `local`.
async fn bind() -> Definition<Bound> {
    let object = json!({"type": "object"});
    let server = McpServer::stream_with("changing", move |_session| {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let handler = ChangingServer {
            tools: Arc::new(Mutex::new(
                [
                    "greet",
                    "add_extra",
                    "remove_greet",
                    "add_local",
                    "add_bad_schema",
                ]
                .into_iter()
                .map(|name| tool(name, json!({"type": "object"})))
                .collect(),
            )),
        };
        tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        Ok(client_end)
    });
    let local = tool::Definition::from_fn(
        ToolInfo::new("local", "A tool of the binding's own.", object),
        |_arguments: serde_json::Value, _context| async { Ok::<_, BoxError>("local ran") },
    );
    Definition::builder()
        .name("agent")
        .tool(local)
        .tool(server)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test]
async fn an_added_tool_is_offered_in_the_next_request_and_a_removed_one_is_no_longer_offered() {
    let session = bind().await;
    let Ran {
        outcome,
        offered,
        results,
        events,
        ..
    } = run_batches(
        &session,
        &[&["add_extra"], &["extra", "remove_greet"], &["greet"]],
    )
    .await;
    let at_bind = [
        "local",
        "greet",
        "add_extra",
        "remove_greet",
        "add_local",
        "add_bad_schema",
    ];
    let with_extra = [&at_bind[..], &["extra"]].concat();
    let without_greet: Vec<&str> = with_extra
        .iter()
        .copied()
        .filter(|name| *name != "greet")
        .collect();
    assert_eq!(
        offered,
        [
            names(&at_bind),
            names(&with_extra),
            names(&without_greet),
            names(&without_greet)
        ]
    );
    assert_eq!(
        results,
        [
            ("changed".to_owned(), false),
            ("extra ran".to_owned(), false),
            ("changed".to_owned(), false),
            (
                "tool `greet` is no longer offered: `changing` changed its tools; available tools: \
                 local, add_extra, remove_greet, add_local, add_bad_schema, extra"
                    .to_owned(),
                true
            ),
        ]
    );
    let last_call = outcome.stats.iterations[2].calls[0].error;
    assert_eq!(last_call, Some(ToolCallErrorKind::NoLongerOffered));
    let changes: Vec<&TurnEvent> = events
        .iter()
        .filter(|event| matches!(event, TurnEvent::ToolListChanged { .. }))
        .collect();
    assert_eq!(
        changes,
        [
            &TurnEvent::ToolListChanged {
                definition: "changing".into(),
                tools: names(&with_extra[1..]),
            },
            &TurnEvent::ToolListChanged {
                definition: "changing".into(),
                tools: names(&without_greet[1..]),
            },
        ]
    );
    // Each change came before the request that offered it.
    let position = |wanted: &TurnEvent| events.iter().position(|event| event == wanted);
    assert!(
        position(changes[0]) < position(&TurnEvent::ModelRequestStarted { iteration: 2 }),
        "{events:?}"
    );
    // The binding keeps the new list after the turn.
    let tools = session.tools();
    let now: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(now, without_greet);
}

#[tokio::test]
async fn a_new_list_that_fails_the_checks_is_refused_and_the_old_one_is_kept() {
    let session = bind().await;
    let Ran {
        offered,
        results,
        events,
        ..
    } = run_batches(&session, &[&["add_local"], &["add_bad_schema"], &["greet"]]).await;
    let at_bind = names(&[
        "local",
        "greet",
        "add_extra",
        "remove_greet",
        "add_local",
        "add_bad_schema",
    ]);
    assert_eq!(
        offered,
        vec![at_bind.clone(); 4],
        "every request the old list"
    );
    assert_eq!(results.last(), Some(&("greet ran".to_owned(), false)));
    let refused: Vec<(String, BindErrorKind, String)> = events
        .into_iter()
        .filter_map(|event| match event {
            TurnEvent::ToolListRefused {
                definition,
                kind,
                message,
            } => Some((definition, kind, message)),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(
        (refused[0].0.as_str(), refused[0].1),
        ("changing", BindErrorKind::DuplicateToolName)
    );
    assert_eq!(
        refused[0].2,
        "bind: duplicate tool name `local` (definitions `local` and `changing`)"
    );
    // The second list still has the colliding `local`, and a schema that
    // is none: each tool's own checks come first, as at bind.
    assert_eq!(refused[1].1, BindErrorKind::InvalidToolInfo);
    assert!(
        refused[1]
            .2
            .starts_with("bind: the parameters of tool `bad` are not a valid JSON Schema: "),
        "{}",
        refused[1].2
    );
    let tools = session.tools();
    let now: Vec<String> = tools.iter().map(|tool| tool.name().to_owned()).collect();
    assert_eq!(now, at_bind);
}
