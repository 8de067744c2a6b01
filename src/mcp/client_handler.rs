//! What an MCP server may ask of this client while a binding lives, and
//! where it goes: progress to the call it belongs to, elicitations to the
//! handler set on the [`McpServer`](crate::mcp::McpServer), and
//! `notifications/tools/list_changed` to a count the binding's listing
//! reads before each model request. One [`ClientState`] per binding, kept
//! across restarts of its server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use tokio::time::Instant;

use crate::mcp::elicitation::{
    ElicitationAnswer, ElicitationHandler, ElicitationMode, ElicitationRequest,
};
use crate::tool::{CallContext, ToolProgress};

/// One binding's side of its server's requests and notifications.
pub(crate) struct ClientState {
    /// The [`McpServer`](crate::mcp::McpServer)'s name.
    server: String,
    elicitation: Option<ElicitationHandler>,
    /// The calls waiting for an answer, by the progress token their
    /// request carried. Hashed with foldhash, not SipHash: every call
    /// adds and removes its token, which this client mints (a server's
    /// notification only looks one up), and foldhash's per-map random seed
    /// still spreads them.
    calls: Mutex<HashMap<ProgressToken, Watched, foldhash::fast::RandomState>>,
    /// Elicitations being answered now: while one is, no call times out
    /// (a person is answering, and the call waits for that).
    eliciting: AtomicUsize,
    /// `notifications/tools/list_changed` received, and restarts: each
    /// may have changed the tools.
    list_changes: AtomicU64,
}

/// A call in flight: its context, for its progress events, and when the
/// server last reported its progress, which the call reads when its
/// timeout comes (a progress notification does not wake the call: most
/// calls end before their timeout, and then nobody needs to know).
struct Watched {
    context: CallContext,
    last_progress: Option<Instant>,
}

impl ClientState {
    pub(crate) fn new(server: &str, elicitation: Option<ElicitationHandler>) -> Arc<Self> {
        Arc::new(Self {
            server: server.to_owned(),
            elicitation,
            calls: Mutex::new(HashMap::default()),
            eliciting: AtomicUsize::new(0),
            list_changes: AtomicU64::new(0),
        })
    }

    /// How many times the server's tools may have changed.
    pub(crate) fn list_changes(&self) -> u64 {
        self.list_changes.load(Ordering::Acquire)
    }

    /// The server's tools may have changed: the binding lists them again
    /// before its next model request.
    pub(crate) fn tools_changed(&self) {
        self.list_changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Starts routing the progress of `token` to `context`; the returned
    /// guard stops it when dropped, and says when the call's progress was
    /// last reported ([`WatchGuard::last_progress`]).
    pub(crate) fn watch(&self, token: ProgressToken, context: &CallContext) -> WatchGuard<'_> {
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(
                token.clone(),
                Watched {
                    context: context.clone(),
                    last_progress: None,
                },
            );
        }
        WatchGuard { state: self, token }
    }

    /// `true` while an elicitation is being answered.
    pub(crate) fn is_eliciting(&self) -> bool {
        self.eliciting.load(Ordering::Acquire) > 0
    }

    /// The client's `initialize` parameters: this crate's name and version,
    /// and the form elicitation capability when a handler is set (without
    /// one, no capability is declared, and a server that asks anyway is
    /// told the user declined).
    fn config(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicitation.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("agent-loop", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// Removes a call's route when the call ends, however it ends.
pub(crate) struct WatchGuard<'a> {
    state: &'a ClientState,
    token: ProgressToken,
}

impl WatchGuard<'_> {
    /// When the server last reported the call's progress; `None` before
    /// its first report.
    pub(crate) fn last_progress(&self) -> Option<Instant> {
        let calls = self.state.calls.lock().ok()?;
        calls.get(&self.token)?.last_progress
    }
}

impl Drop for WatchGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.state.calls.lock() {
            calls.remove(&self.token);
        }
    }
}

/// Counts an elicitation being answered while it lives.
struct Eliciting<'a>(&'a AtomicUsize);

impl<'a> Eliciting<'a> {
    fn start(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl Drop for Eliciting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The SDK's client handler of one connection.
#[derive(Clone)]
pub(crate) struct Client(pub(crate) Arc<ClientState>);

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.0.config()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Noted for the call: its idle timeout counts from here now. A
        // token no call of this binding waits on (a late notification of a
        // call that ended) is dropped.
        let context = self.0.calls.lock().ok().and_then(|mut calls| {
            let watched = calls.get_mut(&params.progress_token)?;
            watched.last_progress = Some(Instant::now());
            Some(watched.context.clone())
        });
        let Some(context) = context else {
            return;
        };
        let mut progress = ToolProgress::new(params.progress);
        progress.total = params.total;
        progress.message = params.message;
        context.report_progress(progress);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(
            target: "agent_loop::mcp",
            server = %self.0.server,
            "the server's tools changed (`notifications/tools/list_changed`); listing them again before the next model request"
        );
        self.0.tools_changed();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let Some(handler) = &self.0.elicitation else {
            tracing::info!(
                target: "agent_loop::mcp",
                server = %self.0.server,
                "the server asked for input (`elicitation/create`) and no handler is set: declined"
            );
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let (message, mode) = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => (
                message,
                ElicitationMode::Form {
                    requested_schema: serde_json::to_value(&requested_schema).unwrap_or_default(),
                },
            ),
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => (
                message,
                ElicitationMode::Url {
                    url,
                    elicitation_id,
                },
            ),
            // A mode of a later specification: nobody can answer it.
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        let _answering = Eliciting::start(&self.0.eliciting);
        let answer = handler
            .answer(ElicitationRequest {
                server: self.0.server.clone(),
                message,
                mode,
            })
            .await;
        Ok(match answer {
            ElicitationAnswer::Accept(content) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = Some(serde_json::Value::Object(content));
                result
            }
            ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}
