//! [`ServedSession`]: one MCP session of an [`McpService`]: its binding,
//! made at `initialize`, and the SDK's server handler answering
//! `tools/list` and `tools/call` from it.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use crate::server::McpService;
use agent_loop_core::bind::Bound;
use agent_loop_core::conversation::{ContentPart, ImageSource, ToolCall, ToolResult};
use agent_loop_core::definition::Definition;
use agent_loop_providers::wire;

/// One MCP session: the service it belongs to and, once initialised, its
/// binding.
pub(crate) struct ServedSession {
    service: Arc<McpService>,
    bound: OnceCell<Definition<Bound>>,
}

impl ServedSession {
    pub(crate) fn new(service: Arc<McpService>) -> Self {
        Self {
            service,
            bound: OnceCell::new(),
        }
    }

    /// The session's binding, made now if the client's `initialize` has
    /// not made it yet.
    async fn binding(&self) -> Result<&Definition<Bound>, ErrorData> {
        self.bound
            .get_or_try_init(|| async {
                let service = &self.service;
                let mut bound = service
                    .definition
                    .bind((service.bindings)())
                    .await
                    .map_err(|error| {
                        tracing::warn!(
                            target: "agent_loop_mcp::server",
                            definition = service.definition.name(),
                            "an MCP session's binding failed: {error}"
                        );
                        ErrorData::internal_error(error.to_string(), None)
                    })?;
                if let Some(mode) = &service.mode {
                    bound
                        .set_current_mode(Some(mode))
                        .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
                }
                let names: Vec<String> = bound
                    .tools()
                    .iter()
                    .map(|tool| tool.name().to_owned())
                    .collect();
                for warning in long_names(&service.name, &names) {
                    tracing::warn!(target: "agent_loop_mcp::server", "{warning}");
                }
                Ok(bound)
            })
            .await
    }
}

/// The longest tool name Claude's clients take (the Messages API's
/// `^[a-zA-Z0-9_-]{1,64}$`).
const CLAUDE_NAME_LIMIT: usize = 64;

/// The longest server name and tool name together that Cursor shows: it
/// drops a tool over it, silently (ComposioHQ/composio #2788,
/// sparfenyuk/mcp-proxy #45).
const CURSOR_NAME_LIMIT: usize = 60;

/// What a client may do to the tools served under `server` (the
/// `serverInfo` name, which a client often takes as the server's name):
/// one sentence per tool whose name is over a limit a known client keeps.
fn long_names(server: &str, names: &[String]) -> Vec<String> {
    let mut warnings = Vec::new();
    for name in names {
        let length = name.chars().count();
        if length > CLAUDE_NAME_LIMIT {
            warnings.push(format!(
                "served tool `{name}` has {length} characters: Claude's clients take at most {CLAUDE_NAME_LIMIT}"
            ));
        } else if server.chars().count() + length > CURSOR_NAME_LIMIT {
            warnings.push(format!(
                "served tool `{name}` and the server name `{server}` have {} characters together: Cursor drops a tool over {CURSOR_NAME_LIMIT}",
                server.chars().count() + length
            ));
        }
    }
    warnings
}

impl ServerHandler for ServedSession {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(self.service.name.clone(), self.service.version.clone()),
        )
    }

    /// The revisions with an `initialize` handshake and sessions, up to
    /// 2025-11-25: a binding is one session's. (Under 2026-07-28, which
    /// has no sessions, every request would get a binding of its own.)
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        // The version first: a client this server cannot speak with starts
        // nothing. Then the binding, the session's: made before the
        // session is answered, so a binding that fails fails `initialize`.
        let answer = self.negotiate_initialize(&request)?;
        self.binding().await?;
        context.peer.set_peer_info(request);
        Ok(answer)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let bound = self.binding().await?;
        bound.refresh_tools().await;
        let tools = bound.tools();
        let mut listed =
            wire::mcp::export_list_tools_result(tools.iter().map(|tool| tool.info()), None);
        if let Some(Value::Array(tools)) = listed.get_mut("tools") {
            for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
                // A served call answers text and images, never
                // `structuredContent`, and never runs as a task: a client
                // told otherwise refuses the answer (the Python SDK fails
                // every call of a tool with an `outputSchema` whose result
                // has no structured content).
                tool.remove("outputSchema");
                tool.remove("execution");
            }
        }
        // Through the SDK's constructor, which marks the result complete
        // (`resultType`, which protocol version 2026-07-28 requires).
        let tools = serde_json::from_value(listed["tools"].take())
            .map_err(|error| ErrorData::internal_error(format!("`tools/list`: {error}"), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let bound = self.binding().await?;
        bound.refresh_tools().await;
        let id = match serde_json::to_value(&context.id) {
            Ok(Value::String(id)) => id,
            Ok(other) => other.to_string(),
            Err(_) => String::new(),
        };
        let arguments = Value::Object(request.arguments.unwrap_or_default()).to_string();
        let call = ToolCall::new(format!("mcp-{id}"), request.name.as_ref(), arguments);
        let outcome = tokio::select! {
            biased;
            // The client cancelled the request: the SDK sends no answer.
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
            outcome = bound.run_tool_call(&call) => outcome,
        };
        let content = serde_json::from_value(content(&outcome.result))
            .map_err(|error| ErrorData::internal_error(format!("`tools/call`: {error}"), None))?;
        // The SDK's constructors mark the result complete (`resultType`).
        Ok(if outcome.result.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }
}

/// The `content` of the `tools/call` result of `result`: text as `text`
/// content, inline images as `image`, images by URL as `resource_link`
/// (MCP has no image by URL).
fn content(result: &ToolResult) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => Some(json!({"type": "text", "text": text.text})),
            ContentPart::Image(image) => match &image.source {
                ImageSource::Base64 { media_type, data } => {
                    Some(json!({"type": "image", "data": data, "mimeType": media_type}))
                }
                ImageSource::Url { url } => {
                    Some(json!({"type": "resource_link", "uri": url, "name": "image"}))
                }
                // A source of a later core this server cannot write as MCP
                // content: left out, as a part a result cannot hold.
                _ => None,
            },
            // A tool result holds text and images only.
            _ => None,
        })
        .collect();
    Value::Array(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name over Claude's 64 characters, and one that fits it but not
    /// Cursor's 60 with the server's name, are each warned about once;
    /// names at the limits are not.
    #[test]
    fn names_over_a_clients_limit_are_warned_about() {
        let (claude, cursor) = ("a".repeat(65), "b".repeat(56));
        let names = [
            "read".to_owned(),
            claude.clone(),
            cursor.clone(),
            "c".repeat(55),
            "d".repeat(64).chars().take(55).collect(),
        ];
        assert_eq!(
            long_names("files", &names),
            [
                format!(
                    "served tool `{claude}` has 65 characters: Claude's clients take at most 64"
                ),
                format!(
                    "served tool `{cursor}` and the server name `files` have 61 characters together: Cursor drops a tool over 60"
                ),
            ]
        );
    }
}
