//! An `rmcp` server in this process, reached over `tokio::io::duplex` with
//! `McpServer::stream_with`: tools with text, image and error results, a
//! JSON-RPC error, a listing over two pages, a slow tool whose cancellation
//! the server observes, and a server that goes away in the middle of a
//! call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_loop::conversation::{ContentPart, ImagePart, Message, ModelResponse, ToolCall};
use agent_loop::mcp::{HttpEndpoint, McpCallError, McpError, McpErrorKind, McpServer};
use agent_loop::middleware::{Next, Refusal, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{BoxError, ToolOutput};
use agent_loop::turn::ScriptedModel;
use agent_loop::{BindError, BindErrorKind, Bindings, Definition, LoopId, SessionId};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    ContentBlock, ErrorData, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// What the test sees of the server.
#[derive(Clone)]
struct Probe {
    /// Signalled when `slow` starts.
    slow_started: Arc<Notify>,
    /// Every `notifications/cancelled` the server receives.
    cancelled: mpsc::UnboundedSender<CancelledNotificationParam>,
    /// Aborts the server's task (the server "exits").
    exit: Arc<Mutex<Option<tokio::task::AbortHandle>>>,
}

#[derive(Clone)]
struct TestServer(Probe);

fn object_schema(properties: serde_json::Value) -> Arc<serde_json::Map<String, serde_json::Value>> {
    match json!({"type": "object", "properties": properties}) {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => unreachable!(),
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool = |name: &'static str, description: &'static str| {
            Tool::new(name, description, object_schema(json!({})))
        };
        // Two pages: the client must follow `nextCursor`.
        let second_page = request.and_then(|r| r.cursor).as_deref() == Some("page-2");
        if second_page {
            return Ok(ListToolsResult::with_all_items(vec![
                tool("slow", "Waits until cancelled."),
                tool("exit", "The server goes away mid-call."),
                tool("dotted.name", "A name the model may not use as it is."),
                tool("dotted_name", "The name `dotted.name` becomes."),
                tool("tenant", "The x-tenant header of the request."),
                screenshot_tool(),
                Tool::new(
                    "huge",
                    "A text of `bytes` bytes.",
                    object_schema(json!({"bytes": {"type": "integer"}})),
                ),
            ]));
        }
        let greet: Tool = serde_json::from_value(json!({
            "name": "greet",
            "title": "Greeter",
            "description": "Greets someone.",
            "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}},
            "annotations": {"readOnlyHint": true, "destructiveHint": false}
        }))
        .unwrap();
        let mut first = ListToolsResult::with_all_items(vec![
            greet,
            tool("picture", "A caption and a picture."),
            tool("fail", "Fails as a tool."),
            tool("broken", "Answers with a JSON-RPC error."),
        ]);
        first.next_cursor = Some("page-2".into());
        Ok(first)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "greet" => CallToolResult::success(vec![
                ContentBlock::text("Hello,"),
                ContentBlock::text(arguments["who"].as_str().unwrap_or("nobody").to_owned()),
            ]),
            "picture" => CallToolResult::success(vec![
                ContentBlock::text("a red dot"),
                ContentBlock::image(PNG, "image/png"),
            ]),
            "fail" => CallToolResult::error(vec![ContentBlock::text("disk quota exceeded")]),
            "broken" => return Err(ErrorData::internal_error("the database is down", None)),
            "slow" => {
                self.0.slow_started.notify_one();
                context.ct.cancelled().await;
                return Err(ErrorData::internal_error("cancelled", None));
            }
            "exit" => {
                if let Some(handle) = self.0.exit.lock().unwrap().take() {
                    handle.abort();
                }
                std::future::pending::<()>().await;
                unreachable!()
            }
            // The arguments exactly as the server got them.
            "browser_take_screenshot" => CallToolResult::success(vec![ContentBlock::text(
                serde_json::Value::Object(arguments).to_string(),
            )]),
            "huge" => CallToolResult::success(vec![ContentBlock::text(huge_text(
                arguments["bytes"].as_u64().unwrap_or(0) as usize,
            ))]),
            // Over HTTP: the request's `x-tenant` header, as the server got it.
            "tenant" => {
                let tenant = context
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|parts| parts.headers.get("x-tenant"))
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or("none")
                    .to_owned();
                CallToolResult::success(vec![ContentBlock::text(tenant)])
            }
            other => CallToolResult::success(vec![ContentBlock::text(format!("called {other}"))]),
        };
        Ok(result.into())
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        let _ = self.0.cancelled.send(notification);
    }
}

/// Playwright MCP's `browser_take_screenshot` as it lists it: generated
/// from Zod, so its defaulted `type` and `scale` are `required`.
fn screenshot_tool() -> Tool {
    serde_json::from_value(json!({
        "name": "browser_take_screenshot",
        "description": "Take a screenshot of the current page.",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "filename": {"description": "File name to save the screenshot to.", "type": "string"},
                "fullPage": {"description": "Full scrollable page.", "type": "boolean"},
                "scale": {"default": "css", "description": "Image resolution scale.", "enum": ["css", "device"], "type": "string"},
                "type": {"default": "png", "description": "Image format for the screenshot. Default is png.", "enum": ["png", "jpeg"], "type": "string"}
            },
            "required": ["type", "scale"]
        }
    }))
    .unwrap()
}

/// `HEAD`, then `a` to `z` over and over, then `TAIL`: `bytes` bytes (at
/// least 8).
fn huge_text(bytes: usize) -> String {
    let filler: String = (0..bytes.saturating_sub(8))
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    format!("HEAD{filler}TAIL")
}

/// A server definition whose every binding starts a fresh in-process
/// server; the receiver gets the cancellations the servers receive.
fn in_process_server() -> (
    McpServer,
    Probe,
    mpsc::UnboundedReceiver<CancelledNotificationParam>,
) {
    in_process_server_named("local")
}

fn in_process_server_named(
    name: &str,
) -> (
    McpServer,
    Probe,
    mpsc::UnboundedReceiver<CancelledNotificationParam>,
) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let probe = Probe {
        slow_started: Arc::new(Notify::new()),
        cancelled: sender,
        exit: Arc::new(Mutex::new(None)),
    };
    let shared = probe.clone();
    let server = McpServer::stream_with(name, move |_session| {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let handler = TestServer(shared.clone());
        let task = tokio::spawn(async move {
            if let Ok(running) = handler.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        *shared.exit.lock().unwrap() = Some(task.abort_handle());
        Ok(client_end)
    })
    // `dotted_name` collides with `dotted.name` once sanitised; one test
    // lifts this.
    .deny(["dotted_name"]);
    (server, probe, receiver)
}

/// Binds a definition holding only `server`; the bind must fail.
pub(crate) async fn bind_error(server: McpServer) -> BindError {
    Definition::builder()
        .name("mcp")
        .tool(server)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap_err()
}

/// The [`McpError`] a failed bind carries as its source.
pub(crate) fn mcp_error(error: &BindError) -> &McpError {
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<McpError>())
        .expect("an McpError source")
}

/// The message of the cause (`source()`) of a bind's [`McpError`].
pub(crate) fn cause(error: &McpError) -> String {
    std::error::Error::source(error)
        .map(ToString::to_string)
        .unwrap_or_default()
}

/// Binds a definition holding only `server`; the bind must succeed.
pub(crate) async fn bind(server: McpServer) -> Definition<agent_loop::Bound> {
    Definition::builder()
        .name("mcp")
        .tool(server)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap()
}

#[tokio::test]
async fn every_page_of_tools_binds_with_sanitised_names_and_the_title_kept() {
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(server.prefix("local")).await;
    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(
        names,
        [
            "local_greet",
            "local_picture",
            "local_fail",
            "local_broken",
            "local_slow",
            "local_exit",
            "local_dotted_name",
            "local_tenant",
            "local_browser_take_screenshot",
            "local_huge"
        ]
    );
    let greet = session.tool("local_greet").unwrap();
    assert_eq!(greet.definition_name(), "local");
    assert_eq!(greet.info().annotations().title.as_deref(), Some("Greeter"));
    // The server's name is what `tools/call` gets.
    let output = session
        .invoke("local_dotted_name", json!({}))
        .await
        .unwrap();
    assert_eq!(output, json!("called dotted.name"));
}

#[tokio::test]
async fn text_image_and_error_results_reach_the_conversation() {
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(server).await;
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([
            ToolCall::new("c1", "greet", r#"{"who": "Ada"}"#),
            ToolCall::new("c2", "picture", "{}"),
            ToolCall::new("c3", "fail", "{}"),
            ToolCall::new("c4", "broken", "{}"),
        ]),
        ModelResponse::answer("done"),
    ]);
    let mut conversation = vec![Message::user("go")];
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let results: Vec<_> = conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .collect();
    assert_eq!(results[0].text(), "Hello,\nAda");
    assert!(!results[0].is_error);
    assert_eq!(
        results[1].content,
        [
            ContentPart::text("a red dot"),
            ContentPart::Image(ImagePart::base64("image/png", PNG)),
        ]
    );
    assert!(results[2].is_error);
    assert_eq!(
        results[2].text(),
        "the tool `fail` failed: disk quota exceeded"
    );
    assert!(results[3].is_error);
    assert_eq!(
        results[3].text(),
        "the tool `broken` failed: the MCP server refused the call: the database is down"
    );
}

#[tokio::test]
async fn cancelling_the_turn_sends_notifications_cancelled_for_the_call_in_flight() {
    let (server, probe, mut cancelled) = in_process_server();
    let session = bind(server).await;
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new("c1", "slow", "{}")]),
        ModelResponse::answer("never"),
    ]);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        probe.slow_started.notified().await;
        canceller.cancel();
    });
    let mut conversation = vec![Message::user("go")];
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        session.run_turn(&model, &mut conversation, &cancel),
    )
    .await
    .expect("the turn ends promptly");
    assert_eq!(
        outcome.unwrap().status,
        agent_loop::turn::TurnStatus::Interrupted
    );
    let notification = tokio::time::timeout(Duration::from_secs(5), cancelled.recv())
        .await
        .expect("the server was told")
        .unwrap();
    assert!(notification.request_id.is_some());
    // The connection still works after a cancelled call.
    assert_eq!(
        session
            .invoke("greet", json!({"who": "again"}))
            .await
            .unwrap(),
        json!("Hello,\nagain")
    );
}

#[tokio::test]
async fn the_per_call_timeout_is_an_error_result_and_cancels_the_request() {
    let (server, _probe, mut cancelled) = in_process_server();
    let session = bind(server.call_timeout(Duration::from_millis(200))).await;
    let error = session.invoke("slow", json!({})).await.unwrap_err();
    assert_eq!(error.kind, agent_loop::bind::ToolCallErrorKind::ToolFailed);
    assert_eq!(
        error.message,
        "the tool `slow` failed: the MCP server did not answer within 0.2 s"
    );
    tokio::time::timeout(Duration::from_secs(5), cancelled.recv())
        .await
        .expect("the server was told")
        .unwrap();
}

#[tokio::test]
async fn with_restarts_off_a_server_exiting_mid_call_is_an_error_result_for_that_call_and_the_next()
{
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(server.restart_policy(agent_loop::mcp::RestartPolicy::never())).await;
    let error = tokio::time::timeout(Duration::from_secs(10), session.invoke("exit", json!({})))
        .await
        .expect("no hang")
        .unwrap_err();
    assert_eq!(
        error.message,
        "the tool `exit` failed: the MCP server is not running (its connection closed)"
    );
    let source = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<McpCallError>())
        .expect("the typed call error is the source");
    assert!(matches!(source, McpCallError::Closed));
    let again = tokio::time::timeout(Duration::from_secs(10), session.invoke("greet", json!({})))
        .await
        .expect("no hang")
        .unwrap_err();
    assert!(again.message.contains("not running"), "{}", again.message);
}

#[tokio::test]
async fn allow_and_deny_lists_select_tools_and_an_unknown_allowed_name_fails_the_bind() {
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(
        server
            .clone()
            .allow(["greet", "fail", "slow"])
            .deny(["fail"]),
    )
    .await;
    let tools = session.tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(names, ["greet", "slow"]);

    let error = bind_error(server.allow(["greet", "gret"])).await;
    assert_eq!(error.kind, BindErrorKind::FactoryFailed);
    assert_eq!(error.name.as_deref(), Some("local"));
    let source = mcp_error(&error);
    assert_eq!(source.kind, McpErrorKind::UnknownAllowedTool);
    assert!(source.to_string().starts_with(
        "MCP server `local`: the allow list names tools the server does not list: gret; it lists: "
    ));
}

#[tokio::test]
async fn two_servers_with_one_tool_name_are_a_duplicate_listing_every_collision() {
    let (first, _p1, _c1) = in_process_server();
    let (second, _p2, _c2) = in_process_server_named("other");
    let error = Definition::builder()
        .name("mcp")
        .tool(first.allow(["greet", "fail"]))
        .tool(second.allow(["greet", "fail", "slow"]))
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::DuplicateToolName);
    assert_eq!(
        error.to_string(),
        "bind: duplicate tool name `greet` (definitions `local` and `other`); \
         duplicate tool name `fail` (definitions `local` and `other`)"
    );
}

#[tokio::test]
async fn a_server_that_never_initialises_is_a_timeout_bind_error() {
    let silent = McpServer::stream_with("silent", |_session| {
        let (client_end, server_end) = tokio::io::duplex(1024);
        // Keep the other end open and say nothing.
        tokio::spawn(async move {
            let _held = server_end;
            std::future::pending::<()>().await;
        });
        Ok(client_end)
    })
    .connect_timeout(Duration::from_millis(300));
    let error = bind_error(silent).await;
    assert_eq!(error.kind, BindErrorKind::FactoryFailed);
    assert_eq!(error.name.as_deref(), Some("silent"));
    let source = mcp_error(&error);
    assert_eq!(source.kind, McpErrorKind::Timeout);
    assert_eq!(
        source.to_string(),
        "MCP server `silent`: not started, initialised and listed within 0.3 s"
    );
}

/// Refuses every tool whose annotations do not say it is read-only.
struct ReadOnlyOnly;

#[async_trait::async_trait]
impl ToolMiddleware for ReadOnlyOnly {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        if call.context.tool_info().annotations().read_only_hint != Some(true) {
            return Err(Refusal::new("only read-only tools may run in review").into());
        }
        next.run(call).await
    }
}

#[tokio::test]
async fn a_middleware_reads_the_annotations_of_the_tool_called() {
    let (server, _probe, _cancelled) = in_process_server();
    let session = Definition::builder()
        .name("mcp")
        .tool(server)
        .middleware(ReadOnlyOnly)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    let greet = session.tool("greet").unwrap();
    assert_eq!(greet.info().annotations().destructive_hint, Some(false));
    assert_eq!(
        session
            .invoke("greet", json!({"who": "Ada"}))
            .await
            .unwrap(),
        json!("Hello,\nAda")
    );
    let error = session.invoke("fail", json!({})).await.unwrap_err();
    assert_eq!(error.kind, agent_loop::bind::ToolCallErrorKind::Refused);
}

/// Serves `TestServer` over streamable HTTP on a loopback port, answering
/// with SSE streams; returns its URL.
async fn http_server() -> String {
    http_server_answering(false).await
}

/// Serves `TestServer` over streamable HTTP on a loopback port, answering
/// with JSON bodies (`json_response`) or SSE streams; returns its URL.
async fn http_server_answering(json_response: bool) -> String {
    http_server_with_sessions(json_response).await.0
}

/// As [`http_server_answering`], with the server's sessions, which a test
/// may expire.
async fn http_server_with_sessions(
    json_response: bool,
) -> (
    String,
    Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
) {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let sessions = Arc::new(LocalSessionManager::default());

    let (sender, _receiver) = mpsc::unbounded_channel();
    let probe = Probe {
        slow_started: Arc::new(Notify::new()),
        cancelled: sender,
        exit: Arc::new(Mutex::new(None)),
    };
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(TestServer(probe.clone())),
        Arc::clone(&sessions),
        {
            let mut config = StreamableHttpServerConfig::default();
            config.json_response = json_response;
            config
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = Arc::clone(&service);
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |request| {
                    let service = Arc::clone(&service);
                    async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    (format!("http://{address}/mcp"), sessions)
}

#[tokio::test]
async fn an_http_session_the_server_expired_is_initialised_again_with_the_same_headers() {
    let (url, sessions) = http_server_with_sessions(false).await;
    let server = McpServer::http_with("remote", move |session| {
        Ok(HttpEndpoint::new(url.clone()).header("x-tenant", session.session_id().to_string()))
    })
    .allow(["greet", "tenant"]);
    let definition = Definition::builder()
        .name("mcp")
        .tool(server)
        .build()
        .validate()
        .unwrap();
    let session_id = SessionId::new();
    let bound = definition
        .bind(Bindings::new(session_id, LoopId::new()))
        .await
        .unwrap();
    let ids = || async {
        sessions
            .sessions
            .read()
            .await
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    let first = ids().await;
    assert_eq!(first.len(), 1);
    // The server forgets the session, as rmcp-based servers do after five
    // idle minutes: the client's next request gets 404 for its id.
    let expired: Vec<_> = sessions.sessions.write().await.drain().collect();
    for (_, handle) in expired {
        let _ = handle.close().await;
    }
    assert_eq!(
        bound.invoke("tenant", json!({})).await.unwrap(),
        json!(session_id.to_string()),
        "the new session got the same headers"
    );
    let second = ids().await;
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second, first, "a new session, initialised again");
    assert_eq!(
        bound
            .invoke("greet", json!({"who": "again"}))
            .await
            .unwrap(),
        json!("Hello,\nagain")
    );
}

#[tokio::test]
async fn a_streamable_http_server_binds_per_session_with_its_headers() {
    let url = http_server().await;
    let server = McpServer::http_with("remote", move |session| {
        Ok(HttpEndpoint::new(url.clone()).header("x-tenant", session.session_id().to_string()))
    })
    .allow(["greet", "picture", "tenant"]);
    let definition = Definition::builder()
        .name("mcp")
        .tool(server)
        .build()
        .validate()
        .unwrap();
    let (first, second) = (SessionId::new(), SessionId::new());
    let bind = |session_id| definition.bind(Bindings::new(session_id, LoopId::new()));
    let (one, two) = tokio::join!(bind(first), bind(second));
    let (one, two) = (one.unwrap(), two.unwrap());
    assert_eq!(
        one.invoke("greet", json!({"who": "HTTP"})).await.unwrap(),
        json!("Hello,\nHTTP")
    );
    assert_eq!(
        one.invoke("picture", json!({}))
            .await
            .unwrap()
            .images()
            .count(),
        1
    );
    // Each binding sent its own headers.
    assert_eq!(
        one.invoke("tenant", json!({})).await.unwrap(),
        json!(first.to_string())
    );
    assert_eq!(
        two.invoke("tenant", json!({})).await.unwrap(),
        json!(second.to_string())
    );
}

#[tokio::test]
async fn an_http_server_that_refuses_the_connection_is_an_initialize_bind_error() {
    // A port nothing listens on: bound, then released.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let error = bind_error(
        McpServer::http("remote", HttpEndpoint::new(url)).connect_timeout(Duration::from_secs(5)),
    )
    .await;
    let source = mcp_error(&error);
    assert_eq!(source.kind, McpErrorKind::Initialize, "{source}");
}

#[tokio::test]
async fn two_tools_of_one_server_sanitised_to_one_name_fail_the_bind_naming_both() {
    let (server, _probe, _cancelled) = in_process_server();
    let error = bind_error(server.deny(Vec::<String>::new())).await;
    assert_eq!(error.kind, BindErrorKind::FactoryFailed);
    let source = mcp_error(&error);
    assert_eq!(source.kind, McpErrorKind::NameCollision);
    assert_eq!(
        source.to_string(),
        "MCP server `local`: the server's tools `dotted.name` and `dotted_name` both become `dotted_name`; deny one of them"
    );
}

/// Every event's fields, formatted, for the secrets test.
#[derive(Clone, Default)]
struct EventText(Arc<Mutex<String>>);

impl tracing::field::Visit for EventText {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let mut text = self.0.lock().unwrap();
        text.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for EventText {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        event.record(&mut self.clone());
    }
}

/// Header and environment values, and a URL's userinfo and query, are
/// credentials: they appear in no `Debug` of the declarations, in no bind
/// error (`Display`, `Debug` with its sources) and in no tracing event of
/// a bind and a call.
#[test]
fn header_environment_and_url_credentials_never_show_in_debug_errors_or_tracing() {
    const HEADER: &str = "Bearer sk-header-0123456789";
    const ENV: &str = "ghp_env_0123456789";
    const URL_TOKEN: &str = "tok-url-0123456789";
    let events = EventText::default();
    let mut seen = Vec::new();
    crate::common::with_tracing_layer(events.clone(), async {
        let command = agent_loop::mcp::StdioCommand::new("sh")
            .args(["-c", "exit 3"])
            .env("GITHUB_TOKEN", ENV);
        let url = format!("{}?token={URL_TOKEN}", http_server().await);
        let endpoint = HttpEndpoint::new(url).header("Authorization", HEADER);
        seen.push(format!("{command:?} {endpoint:?}"));
        let stdio = McpServer::stdio("local", command);
        let http = McpServer::http("remote", endpoint);
        seen.push(format!("{stdio:?} {http:?}"));

        let error = bind_error(stdio).await;
        assert_eq!(mcp_error(&error).kind, McpErrorKind::Initialize);
        seen.push(format!("{error} {error:?}"));

        let session = bind(http.allow(["greet"])).await;
        assert_eq!(
            session.invoke("greet", json!({"who": "x"})).await.unwrap(),
            json!("Hello,\nx")
        );
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let refused = format!("http://user:{URL_TOKEN}@{address}/mcp?token={URL_TOKEN}");
        let error = bind_error(McpServer::http(
            "remote",
            HttpEndpoint::new(refused).header("Authorization", HEADER),
        ))
        .await;
        let source = mcp_error(&error);
        assert_eq!(source.kind, McpErrorKind::Initialize);
        // The SDK's error is still there to debug with, its URL redacted.
        let cause = std::error::Error::source(source).unwrap().to_string();
        assert!(cause.contains(&format!("http://{address}/mcp")), "{cause}");
        seen.push(format!("{error} {error:?} {cause}"));
    });
    // The URL's token is in no `Debug` and no error of ours. (The SDK's
    // own events, target `rmcp`, may quote the request URL whole: the
    // HttpEndpoint docs say so.)
    for text in &seen {
        assert!(!text.contains("tok-url"), "{text}");
    }
    let traced = events.0.lock().unwrap().clone();
    assert!(traced.contains("connected to 127.0.0.1"), "{traced}");
    seen.push(traced);
    for text in &seen {
        assert!(
            !text.contains("sk-header") && !text.contains("ghp_env"),
            "{text}"
        );
    }
    // The names are still there to debug with.
    assert!(seen[0].contains("GITHUB_TOKEN") && seen[0].contains("Authorization"));
}

/// The binding data the command needs is missing: a `Configuration` bind
/// error whose source is the command function's own error.
#[tokio::test]
async fn a_command_that_cannot_be_computed_is_a_configuration_bind_error() {
    struct Workspace(std::path::PathBuf);
    let server = McpServer::stdio_with("files", |session| {
        let workspace = session.get::<Workspace>()?;
        Ok(agent_loop::mcp::StdioCommand::new("true").arg(&workspace.0))
    });
    let error = bind_error(server).await;
    assert_eq!(error.name.as_deref(), Some("files"));
    let source = mcp_error(&error);
    assert_eq!(source.kind, McpErrorKind::Configuration);
    assert!(cause(source).contains("Workspace"), "{}", cause(source));
}

/// Zod-generated schemas (Playwright MCP's) mark a defaulted property
/// `required`; the server fills the default in. The call without it passes
/// the check and reaches the server with exactly the arguments given; the
/// model still sees the schema as listed, and a wrong value is still refused.
#[tokio::test]
async fn a_required_property_with_a_default_may_be_left_out_and_reaches_the_server_unchanged() {
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(server).await;
    let screenshot = session.tool("browser_take_screenshot").unwrap();
    assert_eq!(
        screenshot.info().parameters["required"],
        json!(["type", "scale"])
    );
    assert_eq!(
        session
            .invoke("browser_take_screenshot", json!({}))
            .await
            .unwrap(),
        json!("{}")
    );
    assert_eq!(
        session
            .invoke("browser_take_screenshot", json!({"scale": "device"}))
            .await
            .unwrap(),
        json!(r#"{"scale":"device"}"#)
    );
    let error = session
        .invoke("browser_take_screenshot", json!({"type": "gif"}))
        .await
        .unwrap_err();
    assert_eq!(
        error.kind,
        agent_loop::bind::ToolCallErrorKind::InvalidArguments
    );
}

/// The text of the one tool result of a turn that calls `huge` for
/// `bytes` bytes.
async fn huge_result(session: &Definition<agent_loop::Bound>, bytes: usize) -> String {
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new(
            "big",
            "huge",
            json!({"bytes": bytes}).to_string(),
        )]),
        ModelResponse::answer("done"),
    ]);
    let mut conversation = vec![Message::user("go")];
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let results: Vec<_> = conversation
        .iter()
        .filter_map(Message::as_tool_result)
        .collect();
    assert_eq!(results.len(), 1);
    assert!(!results[0].is_error);
    results[0].text()
}

/// The text cut to `limit` bytes the way `result_bytes` cuts: for ASCII
/// text of `len` bytes with a 6-digit omitted count, the marker is 32
/// bytes and head and tail share the rest.
fn cut(text: &str, limit: usize) -> String {
    let kept = limit - 32;
    let (head, tail) = (kept.div_ceil(2), kept / 2);
    format!(
        "{}\n[… {} bytes omitted …]\n{}",
        &text[..head],
        text.len() - head - tail,
        &text[text.len() - tail..]
    )
}

/// One MCP result of 300 000 bytes no longer goes into the next request
/// whole: the model sees it cut to `DEFAULT_RESULT_BYTES` (100 000), by
/// the same cut as `result_bytes`; a smaller mode limit wins; the server's
/// setting can lift the bound.
#[tokio::test]
async fn an_oversized_mcp_result_is_cut_to_the_default_bound_and_the_smaller_limit_wins() {
    assert_eq!(agent_loop::mcp::DEFAULT_RESULT_BYTES.get(), 100_000);
    let text = huge_text(300_000);
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(server).await;
    let seen = huge_result(&session, 300_000).await;
    assert_eq!(seen.len(), 100_000);
    assert_eq!(seen, cut(&text, 100_000));
    assert_eq!(&seen[49_984..50_016], "\n[… 200032 bytes omitted …]\n");
    // A result within the bound is whole.
    assert_eq!(huge_result(&session, 99_000).await, huge_text(99_000));

    // The mode's smaller `result_bytes` applies.
    let (server, _probe, _cancelled) = in_process_server();
    let session = Definition::builder()
        .name("mcp")
        .tool(server)
        .tool_limits(agent_loop::ToolLimits::new().result_bytes(4096))
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    assert_eq!(huge_result(&session, 300_000).await, cut(&text, 4096));

    // The server's own, smaller or off.
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(server.result_bytes(1000)).await;
    assert_eq!(huge_result(&session, 300_000).await, cut(&text, 1000));
    let (server, _probe, _cancelled) = in_process_server();
    let session = bind(server.result_bytes(agent_loop::limits::Limit::Unlimited)).await;
    assert_eq!(huge_result(&session, 300_000).await, text);
}

#[tokio::test]
async fn a_result_bound_below_256_bytes_fails_the_bind_as_configuration() {
    let (server, _probe, _cancelled) = in_process_server();
    let error = bind_error(server.result_bytes(100)).await;
    let source = mcp_error(&error);
    assert_eq!(source.kind, McpErrorKind::Configuration);
    assert_eq!(
        source.to_string(),
        "MCP server `local`: the result bound set with `result_bytes` is not a valid bound"
    );
    assert_eq!(
        cause(source),
        "invalid `result_bytes` limit 100: result_bytes is at least 256 (room for the truncation marker and the result), or \"unlimited\" to never cut results"
    );
}

/// Over streamable HTTP, a result above the SDK's message limit (16 MiB
/// for one SSE event or one JSON body) used to read "the MCP server is not
/// running" although the server was alive: the call now says that the
/// result was over the limit, with the limit in bytes, and the next call
/// goes through. Both ways a server answers: an SSE stream and a JSON body.
#[tokio::test]
async fn an_http_result_over_the_message_limit_says_so_and_the_next_call_works() {
    for json_response in [false, true] {
        let url = http_server_answering(json_response).await;
        let session =
            bind(McpServer::http("remote", HttpEndpoint::new(url)).allow(["huge", "greet"])).await;
        let error = session
            .invoke("huge", json!({"bytes": 17 << 20}))
            .await
            .unwrap_err();
        assert_eq!(
            error.message,
            "the tool `huge` failed: the MCP server's result was over the client's limit of 16777216 bytes per message and was not read (the server is still running): ask for less",
            "json_response: {json_response}"
        );
        let source = std::error::Error::source(&error)
            .and_then(|source| source.downcast_ref::<McpCallError>());
        assert!(
            matches!(
                source,
                Some(McpCallError::ResultTooLarge {
                    limit_bytes: 16_777_216
                })
            ),
            "{source:?}"
        );
        assert_eq!(
            session
                .invoke("greet", json!({"who": "again"}))
                .await
                .unwrap(),
            json!("Hello,\nagain"),
            "json_response: {json_response}"
        );
        // Just below the limit still arrives (cut for the model to the
        // default result bound, whole for a direct call).
        let output = session
            .invoke("huge", json!({"bytes": 16_776_192}))
            .await
            .unwrap();
        assert_eq!(output.text().len(), 16_776_192);
    }
}
