//! A binding's link to its MCP server: the connection its tools call
//! through, replaced by a new one when the server is gone ([`RestartPolicy`]),
//! and the server's tools as last listed, which a call checks its tool
//! against after a restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use serde_json::Value;

use crate::client::McpServer;
use crate::client::client_handler::ClientState;
use crate::client::connection::Connection;
use crate::client::error::McpError;
use agent_loop_core::session::Session;
use agent_loop_core::tool::ToolInfo;

/// How a binding starts its MCP server again when a call finds it gone: a
/// stdio server whose process exited, a connection that closed. (An HTTP
/// session the server expired, answered `404 Not Found` for its
/// `Mcp-Session-Id`, is re-initialised by the client itself, with the same
/// headers, before this applies.)
///
/// Each restart makes up to [`attempts`](Self::attempts) tries to start,
/// initialise and list the server again, each within the server's
/// [`connect_timeout`](McpServer::connect_timeout), waiting between tries
/// from `min_delay`, doubled each time, to at most `max_delay` (with
/// jitter). The default: 3 tries, from 200 ms up to 5 s. The new listing
/// passes the checks of bind (the allow list, tasks); a tool it no longer
/// lists, or lists with another `inputSchema`, answers its calls with
/// [`McpCallError::NoLongerOffered`](crate::client::McpCallError::NoLongerOffered)
/// or [`McpCallError::SchemaChanged`](crate::client::McpCallError::SchemaChanged).
///
/// The call that found the server gone is sent again on the new
/// connection only when it cannot have run twice: it never reached the
/// server (the server was found gone before it was sent), or its tool says
/// it is idempotent (`annotations.idempotentHint: true`). Otherwise its
/// result is [`McpCallError::Restarted`](crate::client::McpCallError::Restarted)
/// and the next call uses the new server.
///
/// ```
/// use std::time::Duration;
/// use agent_loop_mcp::client::{McpServer, RestartPolicy, StdioCommand};
///
/// let server = McpServer::stdio("files", StdioCommand::new("fs-server"))
///     .restart_policy(RestartPolicy::default().attempts(5).delays(Duration::from_millis(50), Duration::from_secs(2)));
/// let fragile = McpServer::stdio("once", StdioCommand::new("one-shot")).restart_policy(RestartPolicy::never());
/// # let _ = (server, fragile);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    attempts: u32,
    min_delay: Duration,
    max_delay: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            min_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(5),
        }
    }
}

impl RestartPolicy {
    /// No restart: a server that is gone stays gone, and every later call
    /// is [`McpCallError::Closed`](crate::client::McpCallError::Closed).
    pub fn never() -> Self {
        Self {
            attempts: 0,
            ..Self::default()
        }
    }

    /// Tries per restart (0: [`never`](Self::never)).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts;
        self
    }

    /// The wait before the second try, and the most any wait grows to.
    pub fn delays(mut self, min_delay: Duration, max_delay: Duration) -> Self {
        self.min_delay = min_delay;
        self.max_delay = max_delay.max(min_delay);
        self
    }
}

/// The current connection of one binding's server, and how to make the
/// next one.
pub(crate) struct Link {
    server: Arc<McpServer>,
    session: Session,
    pub(crate) state: Arc<ClientState>,
    current: Mutex<Arc<Connection>>,
    /// Held while a restart runs: calls that find the server gone at once
    /// restart it once.
    restarting: tokio::sync::Mutex<()>,
    /// The `inputSchema` of each tool the server last listed (after the
    /// allow and deny lists), by the server's name.
    offered: Mutex<HashMap<String, Value>>,
    /// Set when the binding is dropped: the server is stopped and never
    /// started again, whatever still holds the binding's tools.
    closed: AtomicBool,
}

/// Whether a call's tool is still what the server offers.
pub(crate) enum Offer {
    Same,
    Gone,
    SchemaChanged,
}

impl Link {
    pub(crate) fn new(
        server: Arc<McpServer>,
        session: Session,
        state: Arc<ClientState>,
        connection: Arc<Connection>,
        listed: &[ToolInfo],
    ) -> Self {
        Self {
            server,
            session,
            state,
            current: Mutex::new(connection),
            restarting: tokio::sync::Mutex::new(()),
            offered: Mutex::new(offered(listed)),
            closed: AtomicBool::new(false),
        }
    }

    /// Stops the server for good: its binding is gone. A tool handle or a
    /// call that outlived the binding finds the server closed.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.connection().close();
    }

    /// The connection calls go through now.
    pub(crate) fn connection(&self) -> Arc<Connection> {
        match self.current.lock() {
            Ok(current) => Arc::clone(&current),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The server's name.
    pub(crate) fn server_name(&self) -> &str {
        self.server.name()
    }

    /// The server's definition.
    pub(crate) fn server(&self) -> &McpServer {
        &self.server
    }

    /// The server's tools as just listed (after the allow and deny lists):
    /// what a call cut by a restart checks its tool against.
    pub(crate) fn offer(&self, kept: &[ToolInfo]) {
        if let Ok(mut offered_now) = self.offered.lock() {
            *offered_now = offered(kept);
        }
    }

    /// Whether the server still offers its tool `mcp_name` with the
    /// `input_schema` the binding checked the call against.
    pub(crate) fn offers(&self, mcp_name: &str, input_schema: &Value) -> Offer {
        let Ok(offered) = self.offered.lock() else {
            return Offer::Same;
        };
        match offered.get(mcp_name) {
            None => Offer::Gone,
            Some(schema) if schema != input_schema => Offer::SchemaChanged,
            Some(_) => Offer::Same,
        }
    }

    /// A connection to a running server, after `gone` was found gone:
    /// the one another call made meanwhile, or a new one made by the
    /// [`RestartPolicy`]. `None` when restarts are off.
    pub(crate) async fn restart(
        &self,
        gone: &Arc<Connection>,
    ) -> Option<Result<Arc<Connection>, McpError>> {
        let policy = self.server.restart;
        if policy.attempts == 0 || self.closed.load(Ordering::Acquire) {
            return None;
        }
        let _restarting = self.restarting.lock().await;
        let current = self.connection();
        if !Arc::ptr_eq(&current, gone) {
            return Some(Ok(current));
        }
        let backoff = ExponentialBuilder::default()
            .with_min_delay(policy.min_delay)
            .with_max_delay(policy.max_delay)
            .with_max_times(policy.attempts.saturating_sub(1) as usize)
            .with_jitter();
        let old_pid = gone.pid();
        let started = (|| async {
            let (connection, infos) = self.server.connect(&self.session, &self.state).await?;
            let kept = self.server.select(infos)?;
            Ok::<_, McpError>((connection, kept))
        })
        .retry(backoff)
        .notify(|error: &McpError, wait: Duration| {
            tracing::warn!(
                target: "agent_loop_mcp::client",
                server = %self.server.name(),
                "restarting the MCP server failed ({error}); trying again in {} s",
                wait.as_secs_f64()
            );
        })
        .await;
        Some(match started {
            Ok((connection, _)) if self.closed.load(Ordering::Acquire) => {
                // The binding went away while the server started.
                connection.close();
                return None;
            }
            Ok((connection, kept)) => {
                tracing::warn!(
                    target: "agent_loop_mcp::client",
                    server = %self.server.name(),
                    old_pid = ?old_pid,
                    new_pid = ?connection.pid(),
                    "the MCP server was gone and was restarted"
                );
                self.offer(&kept);
                if let Ok(mut current) = self.current.lock() {
                    *current = Arc::clone(&connection);
                }
                // The new server's tools may differ: the binding lists
                // them again before its next model request.
                self.state.tools_changed();
                Ok(connection)
            }
            Err(error) => {
                tracing::error!(
                    target: "agent_loop_mcp::client",
                    server = %self.server.name(),
                    attempts = policy.attempts,
                    "the MCP server was gone and could not be restarted: {error}"
                );
                Err(error)
            }
        })
    }
}

/// The `inputSchema` of each listed tool, by the server's name.
fn offered(listed: &[ToolInfo]) -> HashMap<String, Value> {
    listed
        .iter()
        .map(|info| (info.name.clone(), info.parameters.clone()))
        .collect()
}
