//! A definition served as an MCP server (`serve::McpService`), used by this
//! crate's own MCP client over a byte stream and over streamable HTTP on a
//! loopback port, and by the official Python SDK's client: each session
//! gets its own binding, and every call goes through that binding's
//! checks, gates and middlewares, a refused one as an `isError` result.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::conversation::ToolCall;
use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::mcp::{HttpEndpoint, McpServer};
use agent_loop::middleware::{Next, Refusal, ToolInvocation, ToolMiddleware};
use agent_loop::serve::McpService;
use agent_loop::tool::{self, BoxError, CallContext, ToolInfo};

use crate::mcp_in_process::bind;
use agent_loop::{Bindings, Bound, Definition, LoopId, Mode, SessionId, ToolLimits, Validated};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The served definition: `echo` (a required string `text`), `session`
/// (the served binding's session id), `wipe` (a gate asks about every
/// call), `drop_table` (a gate denies every call), `boom` (panics).
fn served() -> Definition<Validated> {
    let echo = tool::Definition::from_fn(
        ToolInfo::new(
            "echo",
            "Says the text back.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments["text"].clone()) },
    );
    let session = tool::Definition::from_fn(
        ToolInfo::without_parameters("session", "The served session's id."),
        |_arguments: Value, context: CallContext| async move {
            Ok::<_, BoxError>(context.session_id().to_string())
        },
    );
    let wipe = tool::Definition::from_fn(
        ToolInfo::without_parameters("wipe", "Wipes the disk."),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("wiped") },
    );
    let drop_table = tool::Definition::from_fn(
        ToolInfo::without_parameters("drop_table", "Drops the table."),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("dropped") },
    );
    let boom = tool::Definition::from_fn(
        ToolInfo::without_parameters("boom", "Panics."),
        |_arguments: Value, _context| async {
            panic!("the boom tool panicked");
            #[allow(unreachable_code)]
            Ok::<_, BoxError>("")
        },
    );
    Definition::builder()
        .name("served")
        .tools([echo, session, wipe, drop_table, boom])
        .tool_gate("wipe", |_call: &GateCall<'_>| {
            GateDecision::ask("wiping needs a person")
        })
        .tool_gate("drop_table", |_call: &GateCall<'_>| {
            GateDecision::deny("tables stay")
        })
        .build()
        .validate()
        .unwrap()
}

const SERVED_TOOLS: [&str; 5] = ["echo", "session", "wipe", "drop_table", "boom"];

/// The checks of this crate's client on a binding of the served tools.
async fn assert_served_through_the_binding(client: &Definition<Bound>) {
    let tools = client.tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(names, SERVED_TOOLS);
    assert_eq!(
        client
            .invoke("echo", json!({"text": "hi"}))
            .await
            .unwrap()
            .text(),
        "hi"
    );
    let refused = |name: &'static str| async move {
        client.invoke(name, json!({})).await.unwrap_err().message
    };
    assert_eq!(
        refused("wipe").await,
        "the tool `wipe` failed: the call to `wipe` was not run: it needs approval (wiping needs a person)"
    );
    assert_eq!(
        refused("drop_table").await,
        "the tool `drop_table` failed: the call to `drop_table` was denied: tables stay"
    );
    assert_eq!(
        refused("boom").await,
        "the tool `boom` failed: the tool `boom` panicked: the boom tool panicked"
    );
}

#[tokio::test]
async fn over_a_byte_stream_a_session_lists_and_calls_through_the_served_binding() {
    let binds = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&binds);
    let service = McpService::new(served()).bindings(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        Bindings::new(SessionId::new(), LoopId::new())
    });
    let client = bind_over_a_stream(service).await.unwrap();
    assert_served_through_the_binding(&client).await;
    assert_eq!(binds.load(Ordering::SeqCst), 1, "one session, one binding");
}

/// Serves `served()` over streamable HTTP on a loopback port: its URL,
/// the shutdown token and the serving task.
async fn http_service(
    service: McpService,
) -> (String, CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let task = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { service.serve_http(listener, shutdown).await }
    });
    (url, shutdown, task)
}

#[tokio::test]
async fn over_streamable_http_each_session_has_a_binding_of_its_own() {
    let bound = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&bound);
    let service = McpService::new(served()).bindings(move || {
        let session_id = SessionId::new();
        seen.lock().unwrap().push(session_id.to_string());
        Bindings::new(session_id, LoopId::new())
    });
    let (url, shutdown, task) = http_service(service).await;
    let server = || McpServer::http("remote", HttpEndpoint::new(url.clone()));
    let (one, two) = tokio::join!(bind(server()), bind(server()));
    assert_served_through_the_binding(&one).await;
    let ids = [
        one.invoke("session", json!({})).await.unwrap().text(),
        two.invoke("session", json!({})).await.unwrap().text(),
    ];
    assert_ne!(ids[0], ids[1]);
    let mut made = bound.lock().unwrap().clone();
    made.sort();
    let mut answered = ids.to_vec();
    answered.sort();
    assert_eq!(
        made, answered,
        "one binding per MCP session, and only those"
    );
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test]
async fn the_python_sdk_client_lists_and_calls_and_sees_refusals_as_is_error_results() {
    let Some(python) = crate::mcp_python_servers::venv_python() else {
        return;
    };
    let binds = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&binds);
    let service = McpService::new(served()).bindings(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        Bindings::new(SessionId::new(), LoopId::new())
    });
    let (url, shutdown, task) = http_service(service).await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/serve_client.py");
    let calls = json!([
        ["echo", {"text": "from Python"}],
        ["echo", {"text": 7}],
        ["wipe", {}],
        ["drop_table", {}],
        ["boom", {}],
        ["missing", {}],
    ]);
    let output = tokio::process::Command::new(python)
        .arg(script)
        .arg(&url)
        .arg(calls.to_string())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let result = |is_error: bool, text: &str| json!({"isError": is_error, "text": text});
    assert_eq!(
        printed,
        json!({
            "tools": SERVED_TOOLS,
            "results": [
                result(false, "from Python"),
                result(true, "invalid arguments for `echo`: `/text`: 7 is not of type \"string\""),
                result(true, "the call to `wipe` was not run: it needs approval (wiping needs a person)"),
                result(true, "the call to `drop_table` was denied: tables stay"),
                result(true, "the tool `boom` panicked: the boom tool panicked"),
                result(true, "unknown tool `missing`; available tools: echo, session, wipe, drop_table, boom"),
            ]
        })
    );
    assert_eq!(binds.load(Ordering::SeqCst), 1, "one session, one binding");
    shutdown.cancel();
    task.await.unwrap();
}

/// Refuses every call of `guarded`.
struct Guard;

#[async_trait::async_trait]
impl ToolMiddleware for Guard {
    async fn handle(
        &self,
        call: ToolInvocation,
        next: Next<'_>,
    ) -> Result<tool::ToolOutput, BoxError> {
        if call.context.tool_name() == "guarded" {
            return Err(Refusal::new("guarded by the middleware").into());
        }
        next.run(call).await
    }
}

/// A definition with a middleware, a result bound and a mode of one tool.
fn served_with_limits() -> Definition<Validated> {
    let long = tool::Definition::from_fn(
        ToolInfo::without_parameters("long", "Writes 1000 bytes."),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("x".repeat(1000)) },
    );
    let guarded = tool::Definition::from_fn(
        ToolInfo::without_parameters("guarded", "Never runs."),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("ran") },
    );
    let echo = tool::Definition::from_fn(
        ToolInfo::without_parameters("echo", "Says hi."),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("hi") },
    );
    Definition::builder()
        .name("limited")
        .tools([&long, &guarded, &echo])
        .middleware(Guard)
        .tool_limits(ToolLimits::new().result_bytes(256))
        .mode(Mode::new("all").tools([&long, &guarded, &echo]))
        .mode(Mode::new("only_echo").tool(&echo))
        .initial_mode("all")
        .build()
        .validate()
        .unwrap()
}

/// A client binding of `service` over a byte stream.
async fn bind_over_a_stream(
    service: McpService,
) -> Result<Definition<Bound>, agent_loop::BindError> {
    Definition::builder()
        .name("client")
        .tool(McpServer::stream_with("remote", move |_session| {
            let (client_end, server_end) = tokio::io::duplex(64 * 1024);
            let service = service.clone();
            tokio::spawn(async move {
                let (reader, writer) = tokio::io::split(server_end);
                service.serve(reader, writer).await
            });
            Ok(client_end)
        }))
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
}

#[tokio::test]
async fn a_served_call_answers_what_the_binding_answers_its_middlewares_and_result_bound_included()
{
    let definition = served_with_limits();
    let local = definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap();
    let client = bind_over_a_stream(McpService::new(definition))
        .await
        .unwrap();
    for name in ["long", "guarded", "echo"] {
        let call = ToolCall::new("call_1", name, "{}");
        let here = local.run_tool_call(&call).await.result;
        let served = client.run_tool_call(&call).await.result;
        // The client's own bound (the default) cuts nothing more: the served
        // text is already within it.
        assert_eq!(
            (served.text(), served.is_error),
            (
                if here.is_error {
                    format!("the tool `{name}` failed: {}", here.text())
                } else {
                    here.text()
                },
                here.is_error
            ),
            "{name}"
        );
    }
    let long = local
        .run_tool_call(&ToolCall::new("call_1", "long", "{}"))
        .await;
    assert!(long.stats.truncated, "the mode's result bound cut it");
}

#[tokio::test]
async fn a_served_mode_offers_its_tools_and_an_unknown_mode_fails_the_session() {
    let client = bind_over_a_stream(McpService::new(served_with_limits()).mode("only_echo"))
        .await
        .unwrap();
    let tools = client.tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    assert_eq!(names, ["echo"]);
    let error = bind_over_a_stream(McpService::new(served_with_limits()).mode("missing"))
        .await
        .unwrap_err();
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    assert!(
        text.contains("no mode named `missing`; modes: all, only_echo"),
        "{text}"
    );
}
