//! A definition served as an MCP server (`serve::McpService`), used by this
//! crate's own MCP client over a byte stream and over streamable HTTP on a
//! loopback port, and by the official Python SDK's client: each session
//! gets its own binding, and every call goes through that binding's
//! checks, gates and middlewares, a refused one as an `isError` result.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::mcp::{HttpEndpoint, McpServer};
use agent_loop::serve::McpService;
use agent_loop::tool::{self, BoxError, CallContext, ToolInfo};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, Validated};
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

/// Binds a definition of one MCP server, `server`.
async fn bind(server: McpServer) -> Definition<Bound> {
    Definition::builder()
        .name("client")
        .tool(server)
        .build()
        .validate()
        .unwrap()
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
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
    let service = McpService::new(served());
    let sessions = Arc::new(AtomicUsize::new(0));
    let started = Arc::clone(&sessions);
    let client = bind(McpServer::stream_with("remote", move |_session| {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        let service = service.clone();
        started.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let (reader, writer) = tokio::io::split(server_end);
            service.serve(reader, writer).await
        });
        Ok(client_end)
    }))
    .await;
    assert_served_through_the_binding(&client).await;
    assert_eq!(sessions.load(Ordering::SeqCst), 1);
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
