//! What a binding's MCP server does while the binding lives, against an
//! `rmcp` server in this process (over `tokio::io::duplex`, a fresh server
//! each time the binding opens the stream): progress that re-arms the call
//! timeout and reaches the turn's events, elicitations answered by the
//! handler, and a server that goes away and is started again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::mcp::{
    ElicitationAnswer, ElicitationMode, ElicitationRequest, McpCallError, McpServer, RestartPolicy,
};
use agent_loop::tool::ToolProgress;
use agent_loop::turn::{ScriptedModel, TurnEvent, TurnEvents, TurnOptions};
use agent_loop::{Bindings, Definition, LoopId, SessionId};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, ContentBlock,
    ElicitRequest, ErrorData, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, ServerRequest, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::json;

/// One opened server: its number (1 for the first the binding opened),
/// and how it ends.
#[derive(Clone)]
struct LifeServer {
    generation: u32,
    /// Aborts this server's task: the server "exits".
    exit: Arc<Mutex<Option<tokio::task::AbortHandle>>>,
    /// What the client answered to each elicitation, as JSON.
    answers: Arc<Mutex<Vec<serde_json::Value>>>,
}

fn tool(name: &'static str, schema: serde_json::Value) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
}

impl ServerHandler for LifeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let progress = json!({"type": "object", "properties": {
            "steps": {"type": "integer"},
            "interval_ms": {"type": "integer"},
            "silent_after": {"type": "integer"}
        }});
        let mut idempotent = tool("exit_idempotent", json!({"type": "object"}));
        idempotent.annotations = serde_json::from_value(json!({"idempotentHint": true})).ok();
        Ok(ListToolsResult::with_all_items(vec![
            tool("progress", progress),
            tool("ask", json!({"type": "object"})),
            tool("generation", json!({"type": "object"})),
            tool("exit", json!({"type": "object"})),
            idempotent,
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let number = |name: &str| arguments.get(name).and_then(|v| v.as_i64()).unwrap_or(-1);
        let text = match request.name.as_ref() {
            "progress" => {
                let (steps, interval) = (number("steps"), number("interval_ms") as u64);
                let silent_after = number("silent_after");
                let token = context.meta.get_progress_token().expect("a progress token");
                for step in 1..=steps {
                    tokio::time::sleep(Duration::from_millis(interval)).await;
                    if silent_after >= 0 && step > silent_after {
                        continue;
                    }
                    let mut param = ProgressNotificationParam::new(token.clone(), step as f64);
                    param.total = Some(steps as f64);
                    param.message = Some(format!("step {step}"));
                    let _ = context.peer.notify_progress(param).await;
                }
                format!("finished {steps}")
            }
            "ask" => {
                let params = serde_json::from_value(json!({
                    "mode": "form",
                    "message": "Which environment?",
                    "requestedSchema": {"type": "object", "properties": {
                        "environment": {"type": "string"}
                    }, "required": ["environment"]}
                }))
                .unwrap();
                let answer = context
                    .peer
                    .send_request(ServerRequest::ElicitRequest(ElicitRequest::new(params)))
                    .await;
                let answer = match answer {
                    Ok(ClientResult::ElicitResult(result)) => serde_json::to_value(result).unwrap(),
                    other => json!(format!("{other:?}")),
                };
                self.answers.lock().unwrap().push(answer.clone());
                answer.to_string()
            }
            "generation" => self.generation.to_string(),
            "exit" | "exit_idempotent" => {
                // The idempotent tool answers on a server opened after the
                // first: the retry after the restart gets an answer.
                if request.name == "exit_idempotent" && self.generation > 1 {
                    format!("answered by server {}", self.generation)
                } else {
                    if let Some(handle) = self.exit.lock().unwrap().take() {
                        handle.abort();
                    }
                    std::future::pending::<()>().await;
                    unreachable!()
                }
            }
            other => format!("unknown {other}"),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// A server definition whose binding opens a fresh in-process server each
/// time it opens the stream (at bind, and at each restart); also the
/// count of opened servers and the elicitation answers they got.
fn life_server() -> (
    McpServer,
    Arc<AtomicU32>,
    Arc<Mutex<Vec<serde_json::Value>>>,
) {
    let opened = Arc::new(AtomicU32::new(0));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let (counter, seen) = (Arc::clone(&opened), Arc::clone(&answers));
    let server = McpServer::stream_with("life", move |_session| {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let exit = Arc::new(Mutex::new(None));
        let handler = LifeServer {
            generation: counter.fetch_add(1, Ordering::SeqCst) + 1,
            exit: Arc::clone(&exit),
            answers: Arc::clone(&seen),
        };
        let task = tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        *exit.lock().unwrap() = Some(task.abort_handle());
        Ok(client_end)
    });
    (server, opened, answers)
}

async fn bind(server: McpServer) -> Definition<agent_loop::Bound> {
    Definition::builder()
        .name("life")
        .tool(server)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap()
}

/// Runs one turn calling `tool` with `arguments`; its tool result's text
/// and every event.
pub(crate) async fn turn_calling(
    session: &Definition<agent_loop::Bound>,
    tool: &str,
    arguments: serde_json::Value,
) -> (String, Vec<TurnEvent>) {
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new("call_1", tool, arguments.to_string())]),
        ModelResponse::answer("done"),
    ]);
    let (events, mut received) = TurnEvents::channel();
    let mut conversation = vec![Message::user("go")];
    session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().events(&events).build(),
        )
        .await
        .unwrap();
    let result = conversation
        .iter()
        .find_map(|message| match message {
            Message::Tool(result) => Some(result.text()),
            _ => None,
        })
        .expect("a tool result");
    let mut all = Vec::new();
    while let Ok(event) = received.try_recv() {
        all.push(event);
    }
    (result, all)
}

#[tokio::test]
async fn progress_every_300_ms_for_3_s_outlasts_a_1_s_call_timeout_and_reaches_the_events() {
    let (server, _, _) = life_server();
    let session = bind(server.call_timeout(Duration::from_secs(1))).await;
    let (result, events) = turn_calling(
        &session,
        "progress",
        json!({"steps": 10, "interval_ms": 300}),
    )
    .await;
    assert_eq!(result, "finished 10");
    let progress: Vec<ToolProgress> = events
        .into_iter()
        .filter_map(|event| match event {
            TurnEvent::ToolCallProgress {
                tool_call_id,
                tool_name,
                progress,
            } => {
                assert_eq!(
                    (tool_call_id.as_str(), tool_name.as_str()),
                    ("call_1", "progress")
                );
                Some(progress)
            }
            _ => None,
        })
        .collect();
    let expected: Vec<ToolProgress> = (1..=10)
        .map(|step| {
            ToolProgress::new(f64::from(step))
                .total(10.0)
                .message(format!("step {step}"))
        })
        .collect();
    assert_eq!(progress, expected);
}

#[tokio::test]
async fn a_call_that_goes_silent_is_cut_by_the_call_timeout() {
    let (server, _, _) = life_server();
    let session = bind(server.call_timeout(Duration::from_secs(1))).await;
    let started = std::time::Instant::now();
    let error = session
        .invoke(
            "progress",
            json!({"steps": 20, "interval_ms": 300, "silent_after": 2}),
        )
        .await
        .unwrap_err();
    assert_eq!(
        error.message,
        "the tool `progress` failed: the MCP server did not answer within 1 s"
    );
    // Two reports (0.6 s), then 1 s of silence: cut well before the 6 s
    // the job takes.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn progress_extends_a_call_only_up_to_the_total_timeout() {
    let (server, _, _) = life_server();
    let session = bind(
        server
            .call_timeout(Duration::from_secs(1))
            .max_total_timeout(Duration::from_millis(1500)),
    )
    .await;
    let error = session
        .invoke("progress", json!({"steps": 20, "interval_ms": 300}))
        .await
        .unwrap_err();
    let source = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<McpCallError>())
        .expect("the typed call error");
    assert!(
        matches!(source, McpCallError::TotalTimeout { timeout } if *timeout == Duration::from_millis(1500)),
        "{source:?}"
    );
}

#[tokio::test]
async fn an_elicitation_reaches_the_handler_and_its_answer_reaches_the_server() {
    let (server, _, answers) = life_server();
    let asked: Arc<Mutex<Vec<ElicitationRequest>>> = Arc::default();
    let seen = Arc::clone(&asked);
    let server = server.on_elicitation(move |request| {
        seen.lock().unwrap().push(request);
        async {
            let mut content = serde_json::Map::new();
            content.insert("environment".into(), json!("staging"));
            ElicitationAnswer::Accept(content)
        }
    });
    let session = bind(server).await;
    let output = session.invoke("ask", json!({})).await.unwrap();
    let expected = json!({"action": "accept", "content": {"environment": "staging"}});
    assert_eq!(output.text(), expected.to_string());
    assert_eq!(*answers.lock().unwrap(), vec![expected]);
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].server, "life");
    assert_eq!(asked[0].message, "Which environment?");
    assert_eq!(
        asked[0].mode,
        ElicitationMode::Form {
            requested_schema: json!({"type": "object", "properties": {
                "environment": {"type": "string"}
            }, "required": ["environment"]})
        }
    );
}

#[tokio::test]
async fn without_a_handler_an_elicitation_is_declined() {
    let (server, _, answers) = life_server();
    let session = bind(server).await;
    let output = session.invoke("ask", json!({})).await.unwrap();
    assert_eq!(output.text(), json!({"action": "decline"}).to_string());
    assert_eq!(*answers.lock().unwrap(), vec![json!({"action": "decline"})]);
}

#[tokio::test]
async fn an_elicitation_being_answered_holds_the_call_timeout() {
    let (server, _, _) = life_server();
    let server = server
        .call_timeout(Duration::from_millis(300))
        .on_elicitation(|_request| async {
            // A person takes a while: longer than the call timeout.
            tokio::time::sleep(Duration::from_millis(1200)).await;
            ElicitationAnswer::Cancel
        });
    let session = bind(server).await;
    let output = session.invoke("ask", json!({})).await.unwrap();
    assert_eq!(output.text(), json!({"action": "cancel"}).to_string());
}

#[tokio::test]
async fn a_server_gone_mid_call_is_restarted_and_the_call_says_so() {
    let (server, opened, _) = life_server();
    let session = bind(server).await;
    assert_eq!(
        session.invoke("generation", json!({})).await.unwrap(),
        json!("1")
    );
    let (result, events) = turn_calling(&session, "exit", json!({})).await;
    assert_eq!(
        result,
        "the tool `exit` failed: the MCP server stopped during the call and was restarted; \
         the call was not sent again, as the tool is not marked idempotent, so it may or may \
         not have taken effect"
    );
    assert!(
        events.contains(&TurnEvent::ToolServerRestarted {
            tool_call_id: "call_1".into(),
            tool_name: "exit".into(),
            server: "life".into(),
        }),
        "{events:?}"
    );
    // The same binding's next call reaches the new server.
    assert_eq!(
        session.invoke("generation", json!({})).await.unwrap(),
        json!("2")
    );
    assert_eq!(opened.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_idempotent_call_cut_by_a_restart_is_sent_again() {
    let (server, opened, _) = life_server();
    let session = bind(server).await;
    let output = session.invoke("exit_idempotent", json!({})).await.unwrap();
    assert_eq!(output, json!("answered by server 2"));
    assert_eq!(opened.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn with_restarts_off_a_server_gone_stays_gone() {
    let (server, opened, _) = life_server();
    let session = bind(server.restart_policy(RestartPolicy::never())).await;
    let error = session.invoke("exit", json!({})).await.unwrap_err();
    assert_eq!(
        error.message,
        "the tool `exit` failed: the MCP server is not running (its connection closed)"
    );
    let again = session.invoke("generation", json!({})).await.unwrap_err();
    assert!(again.message.contains("not running"), "{}", again.message);
    assert_eq!(opened.load(Ordering::SeqCst), 1);
}
