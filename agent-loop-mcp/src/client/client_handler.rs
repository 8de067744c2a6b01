//! What an MCP server may ask of this client while a binding lives, and
//! where it goes: progress to the call it belongs to, elicitations to the
//! handler set on the [`McpServer`](crate::client::McpServer), and
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

use crate::client::elicitation::{
    ElicitationAnswer, ElicitationHandler, ElicitationMode, ElicitationRequest,
};
use agent_loop_core::tool::{CallContext, ToolProgress};

/// One binding's side of its server's requests and notifications.
pub(crate) struct ClientState {
    /// The [`McpServer`](crate::client::McpServer)'s name.
    server: String,
    elicitation: Option<ElicitationHandler>,
    /// The calls waiting for an answer, by the connection they were sent
    /// on ([`Client::connection`]) and the progress token their request
    /// carried: the SDK counts tokens per connection from 0, and a call
    /// on a connection a restart replaced can still wait while the new
    /// connection's calls reuse its token. Hashed with foldhash, not
    /// SipHash: every call adds and removes its key, which this client
    /// mints (a server's notification only looks one up), and foldhash's
    /// per-map random seed still spreads them.
    calls: Mutex<HashMap<(u64, ProgressToken), Watched, foldhash::fast::RandomState>>,
    /// The connections made so far, which numbers each.
    connections: AtomicU64,
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
            connections: AtomicU64::new(0),
            eliciting: AtomicUsize::new(0),
            list_changes: AtomicU64::new(0),
        })
    }

    /// The handler of a new connection to the server, numbered apart from
    /// every earlier one of this binding.
    pub(crate) fn client(self: &Arc<Self>) -> Client {
        Client {
            state: Arc::clone(self),
            connection: self.connections.fetch_add(1, Ordering::Relaxed),
        }
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

    /// Starts routing the progress of `token`, of a call sent on the
    /// connection numbered `connection`, to `context`; the returned guard
    /// stops it when dropped, and says when the call's progress was last
    /// reported ([`WatchGuard::last_progress`]).
    pub(crate) fn watch(
        &self,
        connection: u64,
        token: ProgressToken,
        context: &CallContext,
    ) -> WatchGuard<'_> {
        let key = (connection, token);
        if let Ok(mut calls) = self.calls.lock() {
            calls.insert(
                key.clone(),
                Watched {
                    context: context.clone(),
                    last_progress: None,
                },
            );
        }
        WatchGuard { state: self, key }
    }

    /// Notes a progress notification for `token` on the connection
    /// numbered `connection` now, and gives its call's context; `None`
    /// when no call waits on it (a late notification of a call that
    /// ended).
    fn note_progress(&self, connection: u64, token: ProgressToken) -> Option<CallContext> {
        let mut calls = self.calls.lock().ok()?;
        let watched = calls.get_mut(&(connection, token))?;
        watched.last_progress = Some(Instant::now());
        Some(watched.context.clone())
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
    key: (u64, ProgressToken),
}

impl WatchGuard<'_> {
    /// When the server last reported the call's progress; `None` before
    /// its first report.
    pub(crate) fn last_progress(&self) -> Option<Instant> {
        let calls = self.state.calls.lock().ok()?;
        calls.get(&self.key)?.last_progress
    }
}

impl Drop for WatchGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut calls) = self.state.calls.lock() {
            calls.remove(&self.key);
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

/// The SDK's client handler of one connection, made by
/// [`ClientState::client`].
#[derive(Clone)]
pub(crate) struct Client {
    state: Arc<ClientState>,
    /// This connection's number among the binding's connections.
    pub(crate) connection: u64,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        self.state.config()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        // Noted for the call: its idle timeout counts from here now. A
        // token no call waits on on this connection (a late notification
        // of a call that ended) is dropped.
        let Some(context) = self
            .state
            .note_progress(self.connection, params.progress_token)
        else {
            return;
        };
        let mut progress = ToolProgress::new(params.progress);
        progress.total = params.total;
        progress.message = params.message;
        context.report_progress(progress);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(
            target: "agent_loop_mcp::client",
            server = %self.state.server,
            "the server's tools changed (`notifications/tools/list_changed`); listing them again before the next model request"
        );
        self.state.tools_changed();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let Some(handler) = &self.state.elicitation else {
            tracing::info!(
                target: "agent_loop_mcp::client",
                server = %self.state.server,
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
        let _answering = Eliciting::start(&self.state.eliciting);
        let answer = handler
            .answer(ElicitationRequest {
                server: self.state.server.clone(),
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

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;
    use agent_loop_core::session::{LoopId, SessionId};
    use agent_loop_core::tool::{self, BoxError, ToolInfo};
    use agent_loop_core::{Bindings, Definition};

    /// The context of a real call: a tool that keeps the context it was
    /// called with, bound and invoked once.
    fn a_call_context() -> CallContext {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let keep = Arc::clone(&seen);
        let probe = tool::Definition::from_fn(
            ToolInfo::without_parameters("probe", "A tool."),
            move |_arguments: serde_json::Value, context: CallContext| {
                let keep = Arc::clone(&keep);
                async move {
                    *keep.lock().expect("not poisoned") = Some(context);
                    Ok::<_, BoxError>(serde_json::Value::Null)
                }
            },
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let definition = Definition::builder()
                .name("probe")
                .tool(&probe)
                .build()
                .validate()
                .expect("a valid definition");
            let bound = definition
                .bind(Bindings::new(SessionId::new(), LoopId::new()))
                .await
                .expect("bound");
            bound
                .invoke("probe", serde_json::json!({}))
                .await
                .expect("the probe ran");
        });
        let context = seen.lock().expect("not poisoned").take();
        context.expect("the probe kept its context")
    }

    /// The SDK numbers progress tokens per connection from 0, and a call
    /// on a connection a restart replaced can still wait: the same token
    /// on the new connection is another call, whose route the old call's
    /// end must not remove, and whose progress is its own.
    #[test]
    fn a_token_reused_on_a_new_connection_is_another_calls_route() {
        let state = ClientState::new("server", None);
        let (old, new) = (state.client(), state.client());
        assert_ne!(old.connection, new.connection);
        let context = a_call_context();
        let token = ProgressToken(NumberOrString::Number(1));
        let on_old = state.watch(old.connection, token.clone(), &context);
        let on_new = state.watch(new.connection, token.clone(), &context);

        assert!(state.note_progress(new.connection, token.clone()).is_some());
        assert!(on_new.last_progress().is_some());
        assert!(
            on_old.last_progress().is_none(),
            "the old call saw no progress"
        );

        drop(on_old);
        assert!(
            on_new.last_progress().is_some(),
            "the old call's end left the new call's route"
        );
        drop(on_new);
        assert!(
            state.note_progress(new.connection, token).is_none(),
            "no route is left"
        );
    }
}
