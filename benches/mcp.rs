//! What agent-loop's MCP client costs over the official SDK's (`rmcp`)
//! used directly, as ratios measured in the same run:
//!
//! | benchmark | agent-loop | baseline |
//! | --- | --- | --- |
//! | `mcp_call_vs_rmcp` | one `tools/call` through a binding's MCP tool (`McpServer::stream_with` over `tokio::io::duplex`, `bound.invoke`) to an rmcp server in this process | the same call with rmcp's client (`call_tool`) over a duplex to a server of the same kind, its text read from the result |
//! | `mcp_bind_vs_rmcp` | binding a definition with one stdio MCP server (`McpServer::stdio`) | rmcp's client starting the same server process (`tokio::process`, its pipes as the transport), initialising and listing its tools |
//!
//! The server is a small rmcp server built into this bench: it lists the
//! 14 tools of `@modelcontextprotocol/server-filesystem` exactly as that
//! server listed them (`tests/fixtures/wire-real/mcp/mcp_server_filesystem.json`,
//! see `SOURCES.md` there), and answers `read_text_file` as that server
//! does, with the text as a text block and as `structuredContent`
//! (`{"content": …}`, its declared `outputSchema`); the file's text is a
//! fixed sentence of ours. For the stdio server the bench binary runs
//! itself again with `AGENT_LOOP_MCP_BENCH_SERVER` set, which makes its
//! `main` serve MCP over stdin and stdout: a Rust process, so no
//! interpreter's start-up swamps the ratio.
//!
//! A bind is timed up to the bound definition (the baseline: up to the
//! listed tools); each side's bindings (clients and processes) are held
//! until its timing ended, so their shutdown is not timed. The baseline's
//! process gets the caller's environment and stderr; agent-loop gives its
//! server a small environment and reads its stderr (what it reports when
//! a start fails).
//!
//! `cargo bench --bench mcp` prints the medians and ratios at the end,
//! then each ratio (the median of the per-sample ratios) as a line
//! `ratio <name> <value>` for scripts; under `cargo test --all-targets`
//! both sides are checked once and each benchmark runs once, as a smoke
//! test, and no ratio is printed. With `AGENT_LOOP_BENCH_PROFILE` set (see
//! [`PROFILE`]) it runs one side of one row for a profiler instead.

use agent_loop_test::compare;

use std::process::Stdio;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use agent_loop::mcp::{McpServer, StdioCommand};
use agent_loop::tool::ToolOutput;
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId, Validated};
use compare::{Row, record, runtime};
use criterion::{Criterion, criterion_group};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Set in the child process: serve MCP over stdin and stdout.
const SERVE: &str = "AGENT_LOOP_MCP_BENCH_SERVER";

/// The tool every call goes to, and its arguments.
const TOOL: &str = "read_text_file";
const PATH: &str = "/srv/project/NOTES.md";

/// What `read_text_file` answers: the file's text.
const FILE_TEXT: &str = "Release notes: the turn runner keeps each call's result in call order.\n";

/// `tools/list` of `@modelcontextprotocol/server-filesystem`, as recorded.
static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    let listing: Value = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wire-real/mcp/mcp_server_filesystem.json"
    )))
    .expect("the recorded listing");
    serde_json::from_value(listing["tools"].clone()).expect("tools")
});

/// The filesystem server's listing and its `read_text_file`.
#[derive(Clone)]
struct FilesServer;

impl ServerHandler for FilesServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(TOOLS.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let path = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("path"))
            .and_then(Value::as_str);
        if request.name != TOOL || path != Some(PATH) {
            return Ok(CallToolResult::error(vec![ContentBlock::text("no such file")]).into());
        }
        // As server-filesystem answers: the text, and the same as its
        // `outputSchema` says.
        let mut result = CallToolResult::success(vec![ContentBlock::text(FILE_TEXT)]);
        result.structured_content = Some(json!({ "content": FILE_TEXT }));
        Ok(result.into())
    }
}

/// The child process's `main`: serve until the client closes stdin.
fn serve_stdio() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        if let Ok(running) = FilesServer.serve(rmcp::transport::stdio()).await {
            let _ = running.waiting().await;
        }
    });
}

/// A server in this process, over a fresh duplex: the client's end.
fn in_process() -> tokio::io::DuplexStream {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = FilesServer.serve(server_end).await {
            let _ = running.waiting().await;
        }
    });
    client_end
}

fn arguments() -> Value {
    json!({ "path": PATH })
}

/// A definition of one MCP server named `files`.
fn definition(server: McpServer) -> Definition<Validated> {
    Definition::builder()
        .name("mcp")
        .tool(server)
        .build()
        .validate()
        .expect("valid")
}

async fn bind(definition: Definition<Validated>) -> Definition<Bound> {
    definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .expect("binds")
}

/// The text of an agent-loop tool output.
fn output_text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Json(Value::String(text)) => text.clone(),
        other => panic!("a text output, not {other:?}"),
    }
}

/// The baseline's call: `tools/call` with rmcp's client, the text blocks
/// of the result joined.
async fn rmcp_call(client: &RunningService<RoleClient, ()>, arguments: Value) -> String {
    let Value::Object(arguments) = arguments else {
        panic!("an object");
    };
    let result = client
        .call_tool(CallToolRequestParams::new(TOOL).with_arguments(arguments))
        .await
        .expect("called");
    assert_ne!(result.is_error, Some(true));
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    texts.join("\n")
}

/// The command that runs this binary as the stdio server.
fn server_program() -> std::path::PathBuf {
    std::env::current_exe().expect("this bench's path")
}

/// What the baseline holds of a started server: the client, the process
/// (killed when dropped) and the listed tools.
type Started = (
    RunningService<RoleClient, ()>,
    tokio::process::Child,
    Vec<Tool>,
);

/// The baseline's bind: start the server, initialise, list its tools.
async fn rmcp_start() -> Started {
    let mut child = tokio::process::Command::new(server_program())
        .env(SERVE, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let stdout = child.stdout.take().expect("stdout");
    let stdin = child.stdin.take().expect("stdin");
    let client = ().serve((stdout, stdin)).await.expect("initialised");
    let tools = client.list_all_tools().await.expect("listed");
    (client, child, tools)
}

/// Both sides of `mcp_call_vs_rmcp`, connected to their in-process
/// servers and checked: they call the same tool and read the same text.
async fn connected() -> (Definition<Bound>, RunningService<RoleClient, ()>) {
    let bound = bind(definition(McpServer::stream_with("files", |_session| {
        Ok(in_process())
    })))
    .await;
    let client = ().serve(in_process()).await.expect("initialised");
    let output = bound.invoke(TOOL, arguments()).await.expect("called");
    assert_eq!(output_text(&output), FILE_TEXT);
    assert_eq!(rmcp_call(&client, arguments()).await, FILE_TEXT);
    (bound, client)
}

/// The definition `mcp_bind_vs_rmcp` binds, checked: both sides start the
/// server and see its 14 tools.
async fn stdio_definition() -> Definition<Validated> {
    let command = StdioCommand::new(server_program()).env(SERVE, "1");
    let definition = definition(McpServer::stdio("files", command));
    let bound = bind(definition.clone()).await;
    let tools = bound.tools();
    let names: Vec<&str> = tools.iter().map(|tool| tool.name()).collect();
    let listed: Vec<&str> = TOOLS.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, listed);
    let output = bound.invoke(TOOL, arguments()).await.expect("called");
    assert_eq!(output_text(&output), FILE_TEXT);
    let (client, _child, tools) = rmcp_start().await;
    assert_eq!(tools, *TOOLS);
    assert_eq!(rmcp_call(&client, arguments()).await, FILE_TEXT);
    definition
}

fn calls(c: &mut Criterion) {
    let runtime = runtime();
    let (bound, client) = runtime.block_on(connected());
    let mut group = c.benchmark_group("mcp");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    let (bound, client) = (&bound, &client);
    compare!(
        group,
        runtime,
        "mcp_call_vs_rmcp",
        arguments,
        |arguments| rmcp_call(client, arguments),
        |arguments| async move {
            let output = bound.invoke(TOOL, arguments).await.expect("called");
            output_text(&output)
        }
    );
    group.finish();
}

fn binds(c: &mut Criterion) {
    let runtime = runtime();
    let definition = runtime.block_on(stdio_definition());
    let mut group = c.benchmark_group("mcp");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(8));
    let definition = &definition;
    // As `compare!`, but each side's bindings are held until its timing
    // ended: what is timed is the start, not the shutdown.
    group.bench_function("mcp_bind_vs_rmcp", |bencher| {
        bencher.iter_custom(|iterations| {
            runtime.block_on(async {
                let mut started = Vec::with_capacity(iterations as usize);
                let start = Instant::now();
                for _ in 0..iterations {
                    started.push(rmcp_start().await);
                }
                let baseline = start.elapsed();
                drop(started);
                // The killed processes are reaped before the other side.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let mut bound = Vec::with_capacity(iterations as usize);
                let start = Instant::now();
                for _ in 0..iterations {
                    bound.push(bind(definition.clone()).await);
                }
                let measured = start.elapsed();
                drop(bound);
                tokio::time::sleep(Duration::from_millis(20)).await;
                record("mcp_bind_vs_rmcp", iterations, baseline, measured);
                measured
            })
        });
    });
    group.finish();
}

criterion_group!(benches, calls, binds);

const COMPARISONS: &[Row] = &[
    Row {
        benchmark: "mcp_call_vs_rmcp",
        ratio: "mcp_call_vs_rmcp",
        measured: "one tools/call through a bound MCP tool",
        baseline: "rmcp client call_tool",
    },
    Row {
        benchmark: "mcp_bind_vs_rmcp",
        ratio: "mcp_bind_vs_rmcp",
        measured: "bind one stdio MCP server (14 tools)",
        baseline: "rmcp: spawn, initialize, list tools",
    },
];

/// Set to `<row> <side> <times>` (say `mcp_call_vs_rmcp library 1000`;
/// the side `library` or `baseline`): the bench runs that side of that row
/// so many times after the setup and the checks, and nothing else, for a
/// profiler (`valgrind --tool=callgrind`: the counts of 0 times are the
/// setup's, to subtract; a bind's server process is not counted, and
/// every binding is held to the end).
const PROFILE: &str = "AGENT_LOOP_BENCH_PROFILE";

fn profile(spec: &str) {
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let [row, side, times] = parts[..] else {
        panic!("{PROFILE}: `<row> <library|baseline> <times>`, not {spec:?}");
    };
    let times: usize = times.parse().expect("a count");
    let library = match side {
        "library" => true,
        "baseline" => false,
        other => panic!("{PROFILE}: no side {other:?}"),
    };
    runtime().block_on(async {
        match row {
            "mcp_call_vs_rmcp" => {
                let (bound, client) = connected().await;
                for _ in 0..times {
                    let text = if library {
                        output_text(&bound.invoke(TOOL, arguments()).await.expect("called"))
                    } else {
                        rmcp_call(&client, arguments()).await
                    };
                    std::hint::black_box(text);
                }
            }
            "mcp_bind_vs_rmcp" => {
                let definition = stdio_definition().await;
                let mut bound = Vec::new();
                let mut started = Vec::new();
                for _ in 0..times {
                    if library {
                        bound.push(bind(definition.clone()).await);
                    } else {
                        started.push(rmcp_start().await);
                    }
                }
            }
            other => panic!("{PROFILE}: no row {other:?}"),
        }
    });
}

fn main() {
    if std::env::var_os(SERVE).is_some() {
        return serve_stdio();
    }
    if let Ok(spec) = std::env::var(PROFILE) {
        return profile(&spec);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    compare::report(COMPARISONS);
}
