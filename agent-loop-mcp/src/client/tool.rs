//! [`McpTool`]: one tool of an MCP server, called with `tools/call` over its
//! binding's [`Link`]; and how a `tools/call` result becomes a
//! [`ToolOutput`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientRequest, ContentBlock, RequestId, ResourceContents,
    ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestHandle, RoleClient};
use serde_json::Value;
use tokio::time::Instant;

use crate::client::connection::Connection;
use crate::client::error::McpCallError;
use crate::client::link::{Link, Offer};
use agent_loop_core::conversation::{ContentPart, ImagePart};
use agent_loop_core::support::redact::RedactedError;
use agent_loop_core::tool::{BoxError, CallContext, Tool, ToolInfo, ToolOutput};

/// How long one call may take: silent, and in all.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallTimeouts {
    /// Without an answer or a progress notification.
    pub(crate) idle: Duration,
    /// In all, progress or not.
    pub(crate) total: Duration,
}

/// One tool of a connected server.
pub(crate) struct McpTool {
    info: ToolInfo,
    /// The server's name for the tool, sent in `tools/call`.
    mcp_name: String,
    link: Arc<Link>,
    timeouts: CallTimeouts,
    /// `annotations.idempotentHint: true`: a call cut by a restart may be
    /// sent again.
    idempotent: bool,
}

/// Why one attempt of a call failed.
enum Failure {
    /// The server is gone; `reached` when the request may have reached it.
    Gone {
        reached: bool,
    },
    Call(McpCallError),
}

impl McpTool {
    pub(crate) fn new(
        info: ToolInfo,
        mcp_name: String,
        link: Arc<Link>,
        timeouts: CallTimeouts,
    ) -> Self {
        let idempotent = info.annotations().idempotent_hint == Some(true);
        Self {
            info,
            mcp_name,
            link,
            timeouts,
            idempotent,
        }
    }

    /// A running server's connection after `gone` was found gone, with
    /// this tool still offered as the call was checked; the call's error
    /// otherwise.
    async fn restarted(
        &self,
        gone: &Arc<Connection>,
        context: &CallContext,
    ) -> Result<Arc<Connection>, McpCallError> {
        let connection = match self.link.restart(gone).await {
            None => return Err(McpCallError::Closed),
            Some(Err(error)) => {
                return Err(McpCallError::RestartFailed {
                    message: error.to_string(),
                });
            }
            Some(Ok(connection)) => connection,
        };
        // A new connection: this restart's, or one another call made.
        context.report_restart(self.link.server_name());
        match self.link.offers(&self.mcp_name, &self.info.parameters) {
            Offer::Same => Ok(connection),
            Offer::Gone => Err(McpCallError::NoLongerOffered),
            Offer::SchemaChanged => Err(McpCallError::SchemaChanged),
        }
    }

    /// The call again, after its first try found the server `gone`
    /// (`reached`: the request may have reached it): on the restarted
    /// server, when it cannot run twice.
    async fn call_again(
        &self,
        gone: &Arc<Connection>,
        params: CallToolRequestParams,
        reached: bool,
        context: &CallContext,
    ) -> Result<ServerResult, McpCallError> {
        let again = self.restarted(gone, context).await?;
        if reached && !self.idempotent {
            return Err(McpCallError::Restarted);
        }
        match self.call_once(&again, params, context).await {
            Ok(result) => Ok(result),
            Err(Failure::Call(error)) => Err(error),
            // Gone twice in one call: the next call restarts it.
            Err(Failure::Gone { .. }) => Err(McpCallError::Closed),
        }
    }

    /// One `tools/call` over `connection`, timed: the idle timeout starts
    /// again with each progress notification of the call (and waits while
    /// the server's elicitation is being answered), up to the total.
    ///
    /// One timer serves both timeouts: it is set to the earlier of the two
    /// deadlines, and when it fires the idle deadline moves to the last
    /// progress notification's time plus the idle timeout (the handler
    /// only notes that time, so a call that reports progress is not woken
    /// for it). A call answered in time, nearly every call, so costs one
    /// timer and no wake-up besides its answer's.
    async fn call_once(
        &self,
        connection: &Connection,
        params: CallToolRequestParams,
        context: &CallContext,
    ) -> Result<ServerResult, Failure> {
        let peer = connection.peer();
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| match error {
                ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                    Failure::Gone { reached: false }
                }
                other => Failure::Call(call_error(other, connection)),
            })?;
        // The answer's channel, awaited as `RequestHandle::await_response`
        // awaits it for a request sent without options (no SDK timeout, no
        // subscription): that future is 2.7 KB, most of it for the
        // options this call does not use, and would be part of every
        // call's.
        let RequestHandle {
            rx: mut answer,
            id,
            progress_token,
            ..
        } = handle;
        // From here every way out but an answer tells the server to stop.
        let mut cancel = CancelOnDrop {
            peer,
            id: Some(id),
            reason: "the call was cancelled",
        };
        let watch = self
            .link
            .state
            .watch(connection.number(), progress_token, context);
        let started = Instant::now();
        let total_deadline = deadline(started, self.timeouts.total);
        let mut idle_deadline = deadline(started, self.timeouts.idle);
        let timer = tokio::time::sleep_until(idle_deadline.min(total_deadline));
        tokio::pin!(timer);
        let answer = loop {
            tokio::select! {
                biased;
                () = context.cancellation().cancelled() => {
                    return Err(Failure::Call(McpCallError::Cancelled));
                }
                answer = &mut answer => break answer,
                () = &mut timer => {
                    let fired = timer.deadline();
                    if let Some(last_progress) = watch.last_progress() {
                        idle_deadline =
                            idle_deadline.max(deadline(last_progress, self.timeouts.idle));
                    }
                    if idle_deadline <= fired {
                        if !self.link.state.is_eliciting() {
                            cancel.reason = "request timeout";
                            return Err(Failure::Call(McpCallError::Timeout {
                                timeout: self.timeouts.idle,
                            }));
                        }
                        // A person is answering the server: the call waits.
                        // A total deadline passed meanwhile fires at the
                        // next poll, after the answer had its chance.
                        idle_deadline = deadline(Instant::now(), self.timeouts.idle);
                    } else if total_deadline <= fired {
                        cancel.reason = "maximum total timeout exceeded";
                        return Err(Failure::Call(McpCallError::TotalTimeout {
                            timeout: self.timeouts.total,
                        }));
                    }
                    timer.as_mut().reset(idle_deadline.min(total_deadline));
                }
            }
        };
        cancel.id = None;
        // A dropped sender: the client's task ended without an answer.
        match answer.unwrap_or(Err(ServiceError::TransportClosed)) {
            Ok(result) => Ok(result),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))
                if connection.is_gone() =>
            {
                Err(Failure::Gone { reached: true })
            }
            Err(error) => Err(Failure::Call(call_error(error, connection))),
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    /// Sends `tools/call`, restarting a server found gone (see
    /// [`RestartPolicy`](crate::client::RestartPolicy)). A call that ends
    /// without its answer (the turn was cancelled, a timeout passed) sends
    /// the server `notifications/cancelled` for the request, so it can
    /// stop the work.
    async fn invoke(
        &self,
        arguments: Value,
        context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        // The call pipeline checked the arguments' depth as the chain's end
        // received them, so serialising them cannot overflow the stack.
        let mut params = CallToolRequestParams::new(self.mcp_name.clone());
        params.arguments = match arguments {
            Value::Object(arguments) => Some(arguments),
            _ => None,
        };
        // A restart's future (starting, initialising and listing a server)
        // is twice a call's: boxed, it is allocated only when a restart
        // happens, and every call's future stays the size of one call.
        let mut connection = self.link.connection();
        if connection.is_gone() {
            connection = Box::pin(self.restarted(&connection, context)).await?;
        }
        let result = match self.call_once(&connection, params.clone(), context).await {
            Ok(result) => result,
            Err(Failure::Call(error)) => return Err(error.into()),
            Err(Failure::Gone { reached }) => {
                Box::pin(self.call_again(&connection, params, reached, context)).await?
            }
        };
        Ok(output_of_answer(result)?)
    }
}

/// `timeout` after `from`; a timeout too long for the clock (a caller's
/// `Duration::MAX`, meaning never) ends in 30 years, as Tokio's own
/// `sleep` does.
fn deadline(from: Instant, timeout: Duration) -> Instant {
    const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);
    from.checked_add(timeout)
        .unwrap_or_else(|| from + FAR_FUTURE)
}

/// Sends `notifications/cancelled` for a request whose answer is no longer
/// awaited, unless disarmed (its `id` taken) first.
struct CancelOnDrop<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
    reason: &'static str,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let notification = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some(self.reason.to_owned()),
        ));
        let peer = self.peer.clone();
        runtime.spawn(async move {
            // A server already gone cannot be told; nothing to do then.
            let _ = peer.send_notification(notification.into()).await;
        });
    }
}

/// The call's error for an SDK error: an answer the connection's HTTP
/// client refused for its size is [`McpCallError::ResultTooLarge`], not a
/// refusal or a closed server (see `mcp::http_client`).
fn call_error(error: ServiceError, connection: &Connection) -> McpCallError {
    match error {
        ServiceError::McpError(error) => match connection.over_limit_bytes(error.data.as_ref()) {
            Some(limit_bytes) => McpCallError::ResultTooLarge { limit_bytes },
            None => McpCallError::Protocol {
                message: error.message.to_string(),
            },
        },
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => McpCallError::Closed,
        ServiceError::Timeout { timeout } => McpCallError::Timeout { timeout },
        other => McpCallError::Client {
            message: RedactedError::new(&other).to_string(),
        },
    }
}

/// The output of a `tools/call` answer as the SDK parsed it: a
/// [`CallToolResult`] is read as it is, its strings moved into the output;
/// any other answer (the SDK reads a result it cannot type as another kind
/// of result, or as a custom one) as its JSON, by [`output_of`]. Both read
/// the result the same way.
fn output_of_answer(answer: ServerResult) -> Result<ToolOutput, McpCallError> {
    match answer {
        ServerResult::CallToolResult(result) => output_of_result(result),
        other => output_of(&json_of(&other)?),
    }
}

/// The JSON of what the SDK parsed, for the readers of JSON.
fn json_of<T: serde::Serialize>(value: &T) -> Result<Value, McpCallError> {
    serde_json::to_value(value).map_err(|error| McpCallError::Client {
        message: error.to_string(),
    })
}

/// [`output_of`] for a result the SDK typed.
fn output_of_result(result: CallToolResult) -> Result<ToolOutput, McpCallError> {
    let mut output = Blocks::new();
    for block in result.content {
        match block {
            ContentBlock::Text(text) => output.text(text.text),
            ContentBlock::Image(image) => output.image(image.mime_type, image.data),
            ContentBlock::Resource(resource) => match resource.resource {
                ResourceContents::TextResourceContents { text, .. } => output.text(text),
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    output.binary_resource(&uri, mime_type.as_deref());
                }
                // Contents of a later SDK: read as their JSON.
                _ => output.block(&json_of(&ContentBlock::Resource(resource))?),
            },
            ContentBlock::ResourceLink(link) => output.resource_link(&link.uri),
            ContentBlock::Audio(audio) => output.audio(&audio.mime_type),
            // A block of a later SDK: read as its JSON.
            other => output.block(&json_of(&other)?),
        }
    }
    output.finish(result.is_error == Some(true), || result.structured_content)
}

/// The media types an image block may have to go out as an image: the ones
/// OpenAI (`image_url`) and Anthropic (`image.source.media_type`: "image/jpeg",
/// "image/png", "image/gif", "image/webp") both take.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// `text` and a result's `structuredContent`, for the model: the text
/// alone when the JSON says nothing the text does not (the specification
/// asks a server to send its serialisation as text too, "for backwards
/// compatibility", and servers such as the reference filesystem server
/// send `{"content": "<the text>"}`), else the text, then a line
/// `structuredContent:` and the JSON, compact. A server's text may be a
/// summary of what the JSON holds (a compiler's "2 errors" above the
/// errors themselves: NousResearch/hermes-agent #101330), and the model
/// needs both.
fn with_structured(mut text: String, structured: &Value) -> String {
    if !adds_to(&text, structured) {
        return text;
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str("structuredContent: ");
    text.push_str(&structured.to_string());
    text
}

/// The most leaves of a `structuredContent` looked for in the text: past
/// it the JSON is sent (unless the text is that JSON), so a large result
/// costs no quadratic search.
const LEAVES_LOOKED_FOR: usize = 256;

/// `true` when `word` is in `text` with no letter, digit, `.` or `_` on
/// either side.
fn has_word(text: &str, word: &str) -> bool {
    let part_of_word = |c: char| c.is_alphanumeric() || c == '.' || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(part_of_word) && !after.is_some_and(part_of_word)
    })
}

/// `true` when `structured` holds a string, a number or a boolean that
/// `text` does not (a number or a boolean as a word of its own: `5` is not
/// in `15`); walked without recursion, since a server's JSON may nest
/// deeply.
fn adds_to(text: &str, structured: &Value) -> bool {
    if serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *structured) {
        return false;
    }
    let mut pending = vec![structured];
    let mut looked = 0;
    while let Some(value) = pending.pop() {
        let leaf = match value {
            Value::Object(object) => {
                pending.extend(object.values());
                continue;
            }
            Value::Array(items) => {
                pending.extend(items);
                continue;
            }
            Value::String(string) if string.is_empty() => continue,
            Value::String(string) => (std::borrow::Cow::Borrowed(string.as_str()), false),
            Value::Number(number) => (std::borrow::Cow::Owned(number.to_string()), true),
            Value::Bool(flag) => (std::borrow::Cow::Owned(flag.to_string()), true),
            Value::Null => continue,
        };
        looked += 1;
        let (leaf, as_word) = leaf;
        let found = if as_word {
            has_word(text, &leaf)
        } else {
            text.contains(leaf.as_ref())
        };
        if looked > LEAVES_LOOKED_FOR || !found {
            return true;
        }
    }
    false
}

/// The output of a `tools/call` result, read as the MCP specification
/// writes it ("Tools" / "Tool Result": `content`, `structuredContent`,
/// `isError`):
///
/// - text blocks are joined with `\n` into one text; a text resource
///   counts as text; image blocks of a type models read (PNG, JPEG, GIF,
///   WebP) become image parts after it, others a line naming them; audio,
///   binary resources and resource links, which no model here reads,
///   become a short line naming them;
/// - no text and no image but `structuredContent`: that JSON; with text
///   (or images), the text followed by the JSON unless the text already
///   says all it holds (see [`with_structured`]);
/// - `isError: true`: [`McpCallError::Tool`] with the text.
pub(crate) fn output_of(result: &Value) -> Result<ToolOutput, McpCallError> {
    let blocks = result["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut output = Blocks::new();
    for block in blocks {
        output.block(block);
    }
    output.finish(result["isError"].as_bool() == Some(true), || {
        result.get("structuredContent").cloned()
    })
}

/// What a result's content blocks make: texts, in order, and images.
struct Blocks {
    /// The texts so far, joined with `\n`: the first one moved in, so a
    /// result of one text block (most results) is neither copied nor
    /// joined.
    text: String,
    /// How many texts `text` joins.
    texts: usize,
    images: Vec<ContentPart>,
}

impl Blocks {
    fn new() -> Self {
        Self {
            text: String::new(),
            texts: 0,
            images: Vec::new(),
        }
    }

    /// The next text: moved in when it is the first.
    fn text<T>(&mut self, text: T)
    where
        T: AsRef<str> + Into<String>,
    {
        if self.texts == 0 {
            self.text = text.into();
        } else {
            self.text.push('\n');
            self.text.push_str(text.as_ref());
        }
        self.texts += 1;
    }

    /// One block, as JSON.
    fn block(&mut self, block: &Value) {
        let field = |name: &str| block[name].as_str().unwrap_or_default();
        match field("type") {
            "text" => self.text(field("text")),
            "image" => self.image(field("mimeType"), field("data")),
            "resource" => {
                let resource = &block["resource"];
                match resource["text"].as_str() {
                    Some(text) => self.text(text),
                    None => self.binary_resource(
                        resource["uri"].as_str().unwrap_or("?"),
                        resource["mimeType"].as_str(),
                    ),
                }
            }
            "resource_link" => self.resource_link(field("uri")),
            "audio" => self.audio(field("mimeType")),
            other => self.text(format!("[content of type `{other}` not shown]")),
        }
    }

    /// An image block: an image part when models read its type, a line
    /// naming it otherwise.
    fn image<T>(&mut self, media_type: T, data: T)
    where
        T: AsRef<str> + Into<String>,
    {
        // Only the media types the providers take as images: an SVG, a
        // BMP or an image without its type in the history makes every
        // later request of the session answer 400.
        if IMAGE_TYPES.contains(&media_type.as_ref()) {
            self.images
                .push(ContentPart::Image(ImagePart::base64(media_type, data)));
            return;
        }
        let media_type = match media_type.as_ref() {
            "" => "no media type",
            media_type => media_type,
        };
        self.text(format!(
            "[image ({media_type}) not shown: models read PNG, JPEG, GIF and WebP images]"
        ));
    }

    fn binary_resource(&mut self, uri: &str, media_type: Option<&str>) {
        self.text(format!(
            "[binary resource {uri} ({}) not shown]",
            media_type.unwrap_or("unknown type"),
        ));
    }

    fn resource_link(&mut self, uri: &str) {
        self.text(format!("[resource link: {uri}]"));
    }

    fn audio(&mut self, media_type: &str) {
        self.text(format!("[audio ({media_type}) not shown]"));
    }

    /// The output: `structured` is taken only when it is the output.
    fn finish(
        self,
        is_error: bool,
        structured: impl FnOnce() -> Option<Value>,
    ) -> Result<ToolOutput, McpCallError> {
        let no_text = self.texts == 0;
        let text = self.text;
        if is_error {
            let text = if text.trim().is_empty() {
                "the tool reported an error without a message".to_owned()
            } else {
                text
            };
            return Err(McpCallError::Tool { text });
        }
        let structured = structured();
        if self.images.is_empty() {
            return Ok(match structured {
                Some(structured) if no_text => ToolOutput::Json(structured),
                Some(structured) => {
                    ToolOutput::Json(Value::String(with_structured(text, &structured)))
                }
                None => ToolOutput::Json(Value::String(text)),
            });
        }
        let text = match &structured {
            Some(structured) => with_structured(text, structured),
            None => text,
        };
        let mut parts = Vec::with_capacity(self.images.len() + 1);
        if !text.is_empty() {
            parts.push(ContentPart::text(text));
        }
        parts.extend(self.images);
        Ok(ToolOutput::Content(parts))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    /// The output of `result` by [`output_of`]; when the SDK types it as a
    /// `tools/call` result, the typed reader must give the same.
    fn read(result: &Value) -> Result<ToolOutput, McpCallError> {
        let from_json = output_of(result);
        if let Ok(typed) = serde_json::from_value::<ServerResult>(result.clone()) {
            assert_eq!(
                format!("{:?}", output_of_answer(typed)),
                format!("{from_json:?}"),
                "{result}"
            );
        }
        from_json
    }

    #[test]
    fn text_blocks_are_joined_and_images_follow() {
        let output = read(&json!({
            "content": [
                {"type": "text", "text": "one"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": "two"}
            ]
        }))
        .unwrap();
        assert_eq!(
            output,
            ToolOutput::Content(vec![
                ContentPart::text("one\ntwo"),
                ContentPart::Image(ImagePart::base64("image/png", "AAAA")),
            ])
        );
    }

    #[test]
    fn structured_content_reaches_the_model_once_with_or_without_text() {
        let output = read(&json!({"content": [], "structuredContent": {"sum": 5}})).unwrap();
        assert_eq!(output, json!({"sum": 5}));
        // With text that already says it (its serialisation, as the
        // specification asks a server to send, or its one value): once.
        let output = read(&json!({
            "content": [{"type": "text", "text": "{\n  \"sum\": 5\n}"}],
            "structuredContent": {"sum": 5}
        }))
        .unwrap();
        assert_eq!(output, json!("{\n  \"sum\": 5\n}"));
        for (text, structured) in [
            ("5", json!({"sum": 5})),
            ("alice's notes", json!({"content": "alice's notes"})),
            ("passed: true", json!({"passed": true, "items": []})),
        ] {
            let output = read(&json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": structured
            }))
            .unwrap();
            assert_eq!(output, json!(text));
        }
        // With a summary, both: the model needs what the summary omits.
        let output = read(&json!({
            "content": [{"type": "text", "text": "Build failed: 2 errors."}],
            "structuredContent": {"errors": ["E0308 at 3:7", "E0425 at 9:1"]}
        }))
        .unwrap();
        assert_eq!(
            output,
            json!(
                "Build failed: 2 errors.\nstructuredContent: {\"errors\":[\"E0308 at 3:7\",\"E0425 at 9:1\"]}"
            )
        );
        // A boolean or a number the text does not say as a word of its
        // own is information.
        for (text, structured) in [
            ("Tests ran.", json!({"passed": false})),
            ("15 files", json!({"count": 5})),
        ] {
            let output = read(&json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": structured
            }))
            .unwrap();
            assert_eq!(
                output,
                json!(format!("{text}\nstructuredContent: {structured}"))
            );
        }
        // And beside images.
        let output = read(&json!({
            "content": [
                {"type": "text", "text": "A plot."},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            ],
            "structuredContent": {"points": 3}
        }))
        .unwrap();
        assert_eq!(
            output,
            ToolOutput::Content(vec![
                ContentPart::text("A plot.\nstructuredContent: {\"points\":3}"),
                ContentPart::Image(ImagePart::base64("image/png", "AAAA")),
            ])
        );
    }

    #[test]
    fn is_error_is_a_tool_error_with_the_server_text() {
        let error = read(&json!({
            "content": [{"type": "text", "text": "Access denied: /etc"}],
            "isError": true
        }))
        .unwrap_err();
        assert_eq!(error.to_string(), "Access denied: /etc");
        let error = read(&json!({"content": [], "isError": true})).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the tool reported an error without a message"
        );
    }

    /// An MCP tool returning an SVG (or a BMP, or an image without its
    /// type) put an image into the history that OpenAI and Anthropic
    /// refuse, and every later request of the session answered 400.
    #[test]
    fn images_of_a_type_models_do_not_read_are_named_not_sent() {
        let output = read(&json!({"content": [
            {"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"},
            {"type": "image", "data": "Qk0=", "mimeType": "image/bmp"},
            {"type": "image", "data": "AAAA"},
            {"type": "image", "data": "AAAA", "mimeType": "image/webp"}
        ]}))
        .unwrap();
        let ToolOutput::Content(parts) = output else {
            panic!("{output:?}");
        };
        assert_eq!(
            parts,
            vec![
                ContentPart::text(
                    "[image (image/svg+xml) not shown: models read PNG, JPEG, GIF and WebP images]\n\
                     [image (image/bmp) not shown: models read PNG, JPEG, GIF and WebP images]\n\
                     [image (no media type) not shown: models read PNG, JPEG, GIF and WebP images]"
                ),
                ContentPart::Image(ImagePart::base64("image/webp", "AAAA")),
            ]
        );
    }

    #[test]
    fn resources_audio_and_links_are_named() {
        let output = read(&json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AA==", "mimeType": "application/octet-stream"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}
        ]}))
        .unwrap();
        assert_eq!(
            output.text(),
            "hello\n[binary resource file:///b.bin (application/octet-stream) not shown]\n[resource link: file:///c]\n[audio (audio/wav) not shown]"
        );
    }

    #[test]
    fn a_timeout_too_long_for_the_clock_ends_in_the_far_future() {
        let now = Instant::now();
        assert_eq!(
            deadline(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
        assert!(deadline(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365 * 29));
    }

    /// A content block of any type the specification names (and one it
    /// does not), with or without the fields that type has.
    fn block() -> impl Strategy<Value = Value> {
        let kind = proptest::sample::select(vec![
            "text",
            "image",
            "audio",
            "resource",
            "resource_link",
            "video",
        ]);
        let media_type = proptest::option::of(proptest::sample::select(vec![
            "image/png",
            "image/svg+xml",
            "audio/wav",
            "",
        ]));
        let text = proptest::option::of("[a-z ]{0,8}");
        let resource = proptest::option::of((
            proptest::option::of("[a-z]{0,4}"),
            proptest::option::of("[A-Z]{0,4}"),
            media_type.clone(),
        ));
        (kind, media_type, text, resource).prop_map(|(kind, media_type, text, resource)| {
            let mut block = json!({"type": kind, "data": "AAAA", "uri": "file:///a", "name": "a"});
            if let Some(media_type) = media_type {
                block["mimeType"] = json!(media_type);
            }
            if let Some(text) = text {
                block["text"] = json!(text);
            }
            if let Some((text, blob, media_type)) = resource {
                let mut resource = json!({"uri": "file:///b"});
                if let Some(text) = text {
                    resource["text"] = json!(text);
                }
                if let Some(blob) = blob {
                    resource["blob"] = json!(blob);
                }
                if let Some(media_type) = media_type {
                    resource["mimeType"] = json!(media_type);
                }
                block["resource"] = resource;
            }
            block
        })
    }

    proptest! {
        /// The typed reader of a `tools/call` answer reads what the JSON
        /// reader reads in the answer's JSON, whatever the blocks.
        #[test]
        fn the_typed_answer_reads_as_its_json(
            blocks in proptest::collection::vec(block(), 0..4),
            is_error in proptest::option::of(any::<bool>()),
            structured in proptest::option::of(proptest::sample::select(vec![
                json!({"sum": 5}), json!(null), json!("text"),
            ])),
        ) {
            let mut result = json!({ "content": blocks });
            if let Some(is_error) = is_error {
                result["isError"] = json!(is_error);
            }
            if let Some(structured) = structured {
                result["structuredContent"] = structured;
            }
            let _ = read(&result);
        }
    }
}
