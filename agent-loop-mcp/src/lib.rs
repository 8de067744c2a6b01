//! agent-loop-mcp: [agent-loop] and the Model Context Protocol, with the
//! official Rust SDK (`rmcp`).
//!
//! - `client` (feature `client`): MCP servers as tool factories, one
//!   connection per binding (a child process over stdio, or streamable
//!   HTTP). `agent_loop_mcp::client` with the facade's feature `mcp`.
//! - `server` (feature `server`): a definition's bindings served as an MCP
//!   server, one binding per MCP session, each call through the binding's
//!   checks, gates and middlewares. `agent_loop_mcp::server` with the facade's
//!   feature `mcp-server`.
//!
//! Both read and write MCP's `tools/list` through
//! `agent_loop_providers::wire::mcp`.
//!
//! [agent-loop]: https://docs.rs/agent-loop
//!
//! Decisions: `client` (`mcp.md`), `server` (`mcp-server.md`).

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod server;
