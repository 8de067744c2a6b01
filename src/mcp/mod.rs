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
//! valid with the server's [`NameRules`](crate::tool::NameRules). Two
//! servers whose tools get one model-facing name fail the bind with
//! [`DuplicateToolName`](crate::BindErrorKind::DuplicateToolName), every
//! collision listed.
//!
//! Calls: the arguments go as the turn checked them against the listed
//! `inputSchema`. The result's text blocks become the tool result's text,
//! its images image parts, its `structuredContent` the JSON output when
//! there is no text. `isError: true`, a JSON-RPC error, a dead server and
//! the per-call timeout are that call's error result ([`McpCallError`]);
//! cancelling the turn sends the server `notifications/cancelled`.
//!
//! ```no_run
//! use agent_loop::mcp::{McpServer, StdioCommand};
//! use agent_loop::{Bindings, Definition, LoopId, SessionId};
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

mod connection;
mod error;
mod listing;
mod server;
mod tool;
mod transport;

pub use error::{McpCallError, McpError, McpErrorKind};
pub use server::{DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_RESULT_BYTES, McpServer};
pub use transport::{HttpEndpoint, McpStream, StdioCommand};
