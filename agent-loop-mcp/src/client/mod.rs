//! MCP servers as tool factories (feature `mcp`): each binding gets its own
//! connection to a Model Context Protocol server, and the server's tools
//! become the binding's tools.
//!
//! A server is per session: its working directory, its credentials, its
//! state. So an [`McpServer`] is a tool definition whose factory starts
//! the server (a child process speaking MCP over stdio, or a streamable
//! HTTP session) when a definition is bound, lists its tools and builds
//! one tool per listed tool; the connection lives as long as the binding,
//! and dropping the bound definition shuts the server down (a stdio
//! server's input is closed, then `SIGTERM`, then `SIGKILL` to its process
//! group, and the child is reaped: the shutdown the MCP specification
//! describes).
//!
//! The client is the official Rust SDK, [`rmcp`](https://docs.rs/rmcp).
//!
//! Names: the server's tool name is kept for `tools/call`; the model sees
//! the optional [`prefix`](McpServer::prefix), `_`, and that name, made
//! valid with the server's [`NameRules`](agent_loop_core::tool::NameRules). Two
//! servers whose tools get one model-facing name fail the bind with
//! [`DuplicateToolName`](agent_loop_core::BindErrorKind::DuplicateToolName), every
//! collision listed.
//!
//! Tool lists, as servers mean them:
//!
//! - A tool whose `execution.taskSupport` is `"required"` (MCP
//!   specification 2025-11-25, "Tools" / "Tool") can only run as a task,
//!   which this client does not support (it does not declare the `tasks`
//!   capability): it is left out of the binding with a `tracing` warning
//!   naming the server and the tool, and naming it in an
//!   [`allow`](McpServer::allow) list fails the bind. The SDK's `Tool`
//!   type drops `execution`, so the server's own listing is read beside it
//!   while binding, and every field the SDK dropped is kept in the tool's
//!   extras.
//! - A property both `required` and with a `default` (schemas generated
//!   from Zod, such as Playwright MCP's) may be left out of a call: the
//!   server fills the default in. The local check treats it as optional,
//!   as the official SDK clients, which do not check arguments, never
//!   refuse it; the model sees the schema as listed
//!   ([`tool::Definition::fills_defaults`](agent_loop_core::tool::Definition::fills_defaults)).
//!
//! Calls: the arguments go as the turn checked them against the listed
//! `inputSchema`. The result's text blocks become the tool result's text,
//! its images image parts, its `structuredContent` the JSON output when
//! there is no text, and otherwise a line after the text
//! (`structuredContent: {…}`) unless the text already says what the JSON
//! holds (every string and number of it). `isError: true`, a JSON-RPC error, a dead server, a
//! result over the client's message limit (16 MiB, over streamable HTTP)
//! and the per-call timeout are that call's error result
//! ([`McpCallError`]); cancelling the turn sends the server
//! `notifications/cancelled`.
//!
//! Long sessions: a server found gone is started again
//! ([`RestartPolicy`]); each call's progress re-arms its timeout up to
//! [`McpServer::max_total_timeout`] and reaches the turn's events; a
//! server's elicitations go to [`McpServer::on_elicitation`]'s handler.
//! After `notifications/tools/list_changed` (and after a restart) the
//! binding lists the server's tools again, every page, before its next
//! model request: the new list passes the checks of bind (the allow and
//! deny lists, tasks, names, schemas, no collision with the binding's
//! other tools) and is offered from that request on, in that binding
//! only, or it is refused and the old one kept
//! ([`tool::Definition::changing`](agent_loop_core::tool::Definition::changing) says
//! how, and which events say so). A call of a tool the new list dropped is
//! answered that the tool is no longer offered.
//!
//! Results are bounded: the model sees at most [`DEFAULT_RESULT_BYTES`]
//! (100 000) bytes of one result's text, cut like
//! [`result_bytes`](agent_loop_core::ToolLimits::result_bytes) cuts (head, a marker
//! counting the omitted bytes, tail), and the smaller of that and the
//! mode's `result_bytes` applies; [`McpServer::result_bytes`] sets
//! another bound per server.
//!
//! ```no_run
//! use agent_loop_mcp::client::{McpServer, StdioCommand};
//! use agent_loop_core::{Bindings, Definition, LoopId, SessionId};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let everything = McpServer::stdio(
//!     "everything",
//!     StdioCommand::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]),
//! )
//! .allow(["echo", "get-sum"]);
//! let session = Definition::builder()
//!     .name("demo")
//!     .tool(everything)
//!     .build()
//!     .validate()?
//!     .bind(Bindings::new(SessionId::new(), LoopId::new()))
//!     .await?;
//! let output = session.invoke("echo", serde_json::json!({"message": "hi"})).await?;
//! println!("{}", output.text());
//! # Ok(())
//! # }
//! ```
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/mcp.md")]

mod client_handler;
mod connection;
mod elicitation;
mod error;
mod http_client;
mod link;
mod listing;
mod server;
mod tool;
mod transport;

pub use elicitation::{ElicitationAnswer, ElicitationMode, ElicitationRequest};
pub use error::{McpCallError, McpError, McpErrorKind};
pub use link::RestartPolicy;
pub use server::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_TOTAL_TIMEOUT, DEFAULT_RESULT_BYTES,
    McpServer,
};
pub use transport::{HttpEndpoint, McpStream, StdioCommand};
