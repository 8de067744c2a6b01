//! [`AnthropicModel`]: Anthropic Messages.

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use super::error::EnvError;
use super::http::{ApiKey, Transport, secret_header};
use super::send::{Body, FieldView, PLACEHOLDER, Provider, StreamAssembler, body_bytes, send};
use super::{EnvEndpoint, Settings, ToolChoice, env_var, inexpressible_output, shared_setters};
use crate::conversation::{Message, ModelResponse, WireFormat};
use crate::support::redact::redact_url;
use crate::turn::{Model, ModelRequest, ToolList};
use crate::turn::{ModelError, ModelErrorKind};
use crate::wire::WireError;
use crate::wire::anthropic::{self, MessageParam, Role, ToolsView};
use crate::wire::decode::{Moving, Unread};
use crate::wire::encode::to_value;
use crate::wire::outgoing::Outgoing;
use crate::wire::stream::StreamDelta;
use crate::wire::stream::anthropic::EventAssembler;

const FORMAT: WireFormat = WireFormat::AnthropicMessages;

/// The official endpoint.
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version sent as `anthropic-version`.
const API_VERSION: &str = "2023-06-01";

/// `max_tokens` unless set: the Messages API requires the field.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The smallest `budget_tokens` the API accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// A model behind Anthropic's Messages API (`POST {base_url}/v1/messages`).
///
/// ```
/// use agent_loop::model::AnthropicModel;
///
/// let model = AnthropicModel::new("claude-sonnet-4-5")
///     .api_key("sk-ant-...")
///     .max_tokens(8192)
///     .thinking_budget(2048);
/// assert!(!format!("{model:?}").contains("sk-ant"));
/// ```
///
/// The body is `model`, `max_tokens` (4096 unless set), `system` (the
/// mode's instructions, then the conversation's own system messages),
/// `messages` (exported by
/// [`wire::anthropic::export_messages`](crate::wire::anthropic::export_messages)),
/// `tools` and `tool_choice` when the mode has tools, and the settings
/// that are set; then the [`extra`](Self::extra) fields. The key goes as
/// `x-api-key`, with `anthropic-version: 2023-06-01`. A request with a
/// native [`output`](ModelRequest::output) adds Anthropic's documented
/// structured-outputs field, `output_config: {"format": {"type":
/// "json_schema", "schema": ...}}`, its schema the subset Anthropic accepts
/// ([`Output::anthropic_schema`](crate::turn::Output::anthropic_schema));
/// an output Anthropic cannot express is refused, unsent, with a
/// [`ModelError`] of kind [`Request`](ModelErrorKind::Request).
#[derive(Clone)]
pub struct AnthropicModel {
    model: String,
    base_url: String,
    /// Where requests go, for the exports and the origins recorded on
    /// answers: made from `base_url` and `model` whenever either is set.
    target: crate::wire::Target,
    api_key: Option<ApiKey>,
    max_tokens: u32,
    thinking_budget: Option<u32>,
    settings: Settings,
    transport: Transport,
}

/// The base URL without userinfo or query (which may hold credentials),
/// the key as `<redacted>`.
impl std::fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("model", &self.model)
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("settings", &self.settings)
            .field("transport", &self.transport)
            .finish()
    }
}

shared_setters!(AnthropicModel);

impl AnthropicModel {
    /// The model `model` (e.g. `claude-sonnet-4-5`) at the official
    /// endpoint, with no key yet: set one with [`api_key`](Self::api_key).
    pub fn new(model: impl Into<String>) -> Self {
        let model = model.into();
        Self {
            target: super::endpoint_target(DEFAULT_BASE_URL, &model),
            model,
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            settings: Settings::default(),
            transport: Transport::new(FORMAT),
        }
    }

    /// A model configured from the environment: `ANTHROPIC_MODEL`
    /// (required), `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` (at least
    /// one of them: a proxy may need no key, the official endpoint does).
    ///
    /// # Errors
    ///
    /// An [`EnvError`] naming what to set.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_lookup(env_var)
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let env = EnvEndpoint::read(lookup, "ANTHROPIC", "ANTHROPIC_API_KEY")?;
        let mut this = Self::new(env.model);
        this.api_key = env.api_key;
        if let Some(base_url) = env.base_url {
            this = this.base_url(base_url);
        }
        Ok(this)
    }

    /// The server's base URL, without `/v1` (default
    /// `https://api.anthropic.com`); requests go to `{base_url}/v1/messages`.
    /// Credentials in it (`https://user:pass@proxy/…`, `?key=…`) are
    /// sent but never shown: tracing fields and `Debug` print it without
    /// userinfo and query.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_owned();
        self.target = super::endpoint_target(&self.base_url, &self.model);
        self
    }

    /// The API key, sent as `x-api-key`.
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The model name sent as `model`.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self.target = super::endpoint_target(&self.base_url, &self.model);
        self
    }

    /// The most tokens the answer may use (`max_tokens`, which the API
    /// requires; 4096 unless set). With a thinking budget, it includes the
    /// thinking.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Extended thinking with this many tokens at most (`thinking:
    /// {"type": "enabled", "budget_tokens"}`).
    ///
    /// The API's rules for extended thinking are checked before anything
    /// is sent; a request that breaks one fails with a [`ModelError`] of
    /// kind [`Request`](ModelErrorKind::Request) naming the rule (nothing
    /// is rewritten behind your back):
    ///
    /// - the budget is at least 1024 tokens,
    /// - and less than [`max_tokens`](Self::max_tokens) (4096 unless set),
    /// - [`temperature`](Self::temperature) is unset or `1.0`,
    /// - [`tool_choice`](Self::tool_choice) does not force tool use
    ///   ([`ToolChoice::Required`] or [`ToolChoice::Tool`]) when the mode
    ///   has tools; `Auto` and `None` are fine.
    ///
    /// [`request_body`](Self::request_body) does not check them: it shows
    /// what would be sent.
    pub fn thinking_budget(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// The request body this model sends for `request`.
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        self.body(request).value()
    }

    /// The bytes this model posts as the body of `request`: what
    /// [`request_body`](Self::request_body) shows, serialised (its keys
    /// maybe in another order), checked as a request is before it is sent;
    /// for logging a request, or checking it in a test, as it goes out.
    ///
    /// # Errors
    ///
    /// The [`ModelError`] of kind
    /// [`Request`](crate::turn::ModelErrorKind::Request) the request would fail
    /// with, unsent: a native output Anthropic's structured outputs cannot
    /// express, a thinking budget the API refuses (see
    /// [`thinking_budget`](Self::thinking_budget)), a value nested deeper than
    /// 128 levels, or, with [`refuse_dropped`](Self::refuse_dropped), a
    /// conversation holding what this format cannot carry (without it, that is
    /// logged as a request logs it).
    ///
    /// ```
    /// use agent_loop::conversation::Message;
    /// use agent_loop::model::AnthropicModel;
    /// use agent_loop::turn::ModelRequest;
    ///
    /// let model = AnthropicModel::new("claude-sonnet-4-5");
    /// let conversation = [Message::user("Weather in Oslo?")];
    /// let request = ModelRequest::new(&conversation).instructions("Be brief.");
    /// let sent: serde_json::Value = serde_json::from_slice(&model.request_body_bytes(&request)?)?;
    /// assert_eq!(sent, model.request_body(&request));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn request_body_bytes(&self, request: &ModelRequest<'_>) -> Result<Vec<u8>, ModelError> {
        body_bytes(self, request)
    }

    fn body<'r>(&'r self, request: &ModelRequest<'r>) -> Body<RequestView<'r>> {
        // The instructions go first as a system message of the model's
        // own, so the export joins them with the conversation's own into
        // `system`; the conversation itself is borrowed, not copied.
        let lead = request.instructions.map(Message::system);
        let outgoing = Outgoing {
            lead: lead.as_ref(),
            rest: request.conversation,
        };
        // A signed `thinking` block goes only to the model that wrote it
        // (see `wire::Target`).
        let exported = anthropic::export_outgoing(outgoing, &self.target);
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("max_tokens".into(), json!(self.max_tokens));
        if let Some(system) = &exported.system {
            body.insert("system".into(), to_value(system));
        }
        // Asked only with thinking on: without it, a tool use without a
        // thinking block is what every request of a tool loop holds.
        let replayable = self.thinking_budget.is_none() || thinking_replayable(&exported.messages);
        body.insert("messages".into(), PLACEHOLDER);
        let mut views = vec![("messages", FieldView::Conversation(exported.messages))];
        if !request.tools.is_empty() {
            body.insert("tools".into(), PLACEHOLDER);
            views.push(("tools", FieldView::Tools(ToolsView(request.tools))));
            let parallel = self.settings.parallel_tool_calls;
            if self.settings.tool_choice.is_some() || parallel.is_some() {
                let choice = self
                    .settings
                    .tool_choice
                    .as_ref()
                    .unwrap_or(&ToolChoice::Auto);
                let mut choice = tool_choice(choice);
                // `none` takes no such field: no calls, none in parallel.
                if let Some(parallel) = parallel
                    && choice["type"] != "none"
                {
                    choice["disable_parallel_tool_use"] = json!(!parallel);
                }
                body.insert("tool_choice".into(), choice);
            }
        }
        if let Some(output) = request.output {
            // Anthropic's structured outputs (GA): the answer's text is
            // JSON that passes the schema. The subset it accepts is sent;
            // the answer is checked against the full schema. (An
            // inexpressible one is refused in `check`: shown here as is.)
            let schema = output.anthropic_schema().unwrap_or(output.schema());
            body.insert(
                "output_config".into(),
                json!({ "format": { "type": "json_schema", "schema": schema } }),
            );
        }
        if let Some(temperature) = self.settings.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if let Some(budget) = self.thinking_budget
            && replayable
        {
            body.insert(
                "thinking".into(),
                json!({ "type": "enabled", "budget_tokens": budget }),
            );
        }
        if self.settings.stream {
            body.insert("stream".into(), json!(true));
        }
        self.settings.merge_extra(&mut body);
        Body::new(body, views, exported.dropped, 0)
    }

    /// Refuses a request that breaks the API's rules for extended
    /// thinking (see [`thinking_budget`](Self::thinking_budget)): Anthropic
    /// answers it 400, and rewriting it would send what the caller did not
    /// ask for.
    fn check_thinking(&self, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        let Some(budget) = self.thinking_budget else {
            return Ok(());
        };
        let refuse = |message: String| {
            Err(ModelError::of_format(FORMAT, ModelErrorKind::Request).with_message(message))
        };
        if budget < MIN_THINKING_BUDGET {
            return refuse(format!(
                "thinking_budget {budget} is below the API's minimum of {MIN_THINKING_BUDGET} tokens"
            ));
        }
        if budget >= self.max_tokens {
            return refuse(format!(
                "thinking_budget {budget} must be less than max_tokens {}",
                self.max_tokens
            ));
        }
        if let Some(temperature) = self.settings.temperature
            && temperature != 1.0
        {
            return refuse(format!(
                "temperature {temperature} is not allowed with extended thinking: leave it unset or set 1.0"
            ));
        }
        if !request.tools.is_empty()
            && matches!(
                self.settings.tool_choice,
                Some(ToolChoice::Required | ToolChoice::Tool(_))
            )
        {
            return refuse(
                "forced tool use (tool_choice Required or Tool) is not allowed with extended thinking: use Auto or None"
                    .to_owned(),
            );
        }
        Ok(())
    }
}

impl Provider for AnthropicModel {
    const FORMAT: WireFormat = FORMAT;
    type Stream = EventAssembler;
    type View<'r> = RequestView<'r>;

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn check(&self, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        if let Some(output) = request.output
            && let Err(problem) = output.anthropic_schema()
        {
            return Err(inexpressible_output(
                FORMAT,
                problem,
                "ask for this output with OutputMode::Tool",
            ));
        }
        self.check_thinking(request)
    }

    fn body<'r>(&'r self, request: &ModelRequest<'r>) -> Body<RequestView<'r>> {
        AnthropicModel::body(self, request)
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = &self.api_key {
            headers.insert("x-api-key", secret_header(FORMAT, key, "")?);
        }
        Ok(headers)
    }

    fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
        anthropic::parse_response(body)
    }

    type Response = anthropic::RawResponse;

    fn read_response(response: anthropic::RawResponse) -> Result<ModelResponse, Unread> {
        anthropic::read_response(Moving, response)
    }
}

impl StreamAssembler for EventAssembler {
    /// `message_stop` ends the stream.
    fn read_event(
        &mut self,
        event: &str,
        data: &str,
    ) -> Result<(Vec<StreamDelta>, bool), WireError> {
        let deltas = self.push(event, data)?;
        Ok((deltas, event == "message_stop"))
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        EventAssembler::finish(self)
    }

    fn is_whole(&self) -> bool {
        EventAssembler::is_whole(self)
    }
}

/// `false` when Anthropic would refuse `messages` with extended thinking
/// on: its rule is that, with thinking enabled, a final `assistant`
/// message holding `tool_use` must start with a `thinking` or
/// `redacted_thinking` block (the API answers 400 "Expected `thinking` or
/// `redacted_thinking`, but found `tool_use`. When `thinking` is enabled,
/// a final `assistant` message must start with a thinking block ...
/// To avoid this requirement, disable `thinking`"; Anthropic's extended
/// thinking guide, "Preserving thinking blocks"). Such history comes from
/// another provider, another model (whose blocks are not sent), or a
/// repair. That request is then sent without `thinking`, as the API
/// itself advises: the tool loop goes on, and thinking comes back with the
/// next request whose final assistant message qualifies (a warning is
/// traced each time).
fn thinking_replayable(messages: &[MessageParam]) -> bool {
    let Some(last) = messages.iter().rev().find(|m| m.role == Role::Assistant) else {
        return true;
    };
    let blocks = &last.content;
    let has_tool_use = blocks.iter().any(|block| block.kind() == Some("tool_use"));
    let starts_thinking = blocks
        .first()
        .is_some_and(|block| matches!(block.kind(), Some("thinking" | "redacted_thinking")));
    if has_tool_use && !starts_thinking {
        tracing::warn!(
            format = %FORMAT,
            "the final assistant message uses tools without a thinking block: sending this request without extended thinking"
        );
        return false;
    }
    true
}

/// The fields of a Messages body written from views of the request: its
/// messages (the typed blocks the export built) and its tools.
pub(crate) type RequestView<'r> = FieldView<Vec<MessageParam>, ToolsView<ToolList<'r>>>;

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({ "type": "auto" }),
        ToolChoice::None => json!({ "type": "none" }),
        ToolChoice::Required => json!({ "type": "any" }),
        ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
    }
}

#[async_trait]
impl Model for AnthropicModel {
    /// The model's name and [`WireFormat::AnthropicMessages`](crate::conversation::WireFormat::AnthropicMessages).
    fn description(&self) -> crate::turn::ModelDescription {
        crate::turn::ModelDescription::new(
            self.model.clone(),
            crate::conversation::WireFormat::AnthropicMessages,
        )
    }

    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let response = send(self, request).await?;
        Ok(super::from_target(response, &self.target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{
        AssistantMessage, ContentPart, Origin, ReasoningPart, ToolCall, ToolResult,
    };

    fn tool_loop(reasoning: Option<ReasoningPart>) -> Vec<Message> {
        let mut assistant =
            AssistantMessage::with_tool_calls(None, vec![ToolCall::new("toolu_1", "f", "{}")]);
        if let Some(reasoning) = reasoning {
            assistant
                .content
                .insert(0, ContentPart::Reasoning(reasoning));
        }
        vec![
            Message::user("go"),
            Message::Assistant(assistant),
            Message::Tool(ToolResult::ok("toolu_1", "done")),
        ]
    }

    fn signed_by(model: &str) -> ReasoningPart {
        ReasoningPart::new(
            "plan",
            Origin::new(FORMAT)
                .with_provider("api.anthropic.com")
                .with_model(model),
        )
        .signed("sig")
    }

    #[test]
    fn a_final_tool_use_without_thinking_is_sent_without_thinking() {
        let model = AnthropicModel::new("claude-sonnet-4-0").thinking_budget(2048);
        let conversation = tool_loop(None);
        let body = model.body(&ModelRequest::new(&conversation));
        assert_eq!(body.value().get("thinking"), None);
        assert_eq!(
            body.value()["messages"][1]["content"][0]["type"],
            "tool_use"
        );
    }

    /// The warnings traced while `run` runs.
    fn warnings(run: impl FnOnce()) -> Vec<String> {
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::layer::SubscriberExt;

        #[derive(Clone, Default)]
        struct Warnings(Arc<Mutex<Vec<String>>>);
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0.push_str(&format!("{value:?}"));
                }
            }
        }
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
            fn on_event(
                &self,
                event: &tracing::Event<'_>,
                _context: tracing_subscriber::layer::Context<'_, S>,
            ) {
                if *event.metadata().level() == tracing::Level::WARN {
                    let mut text = String::new();
                    event.record(&mut Message(&mut text));
                    self.0.lock().unwrap().push(text);
                }
            }
        }
        let warnings = Warnings::default();
        let subscriber = tracing_subscriber::registry().with(warnings.clone());
        tracing::subscriber::with_default(subscriber, run);
        warnings.0.lock().unwrap().clone()
    }

    #[test]
    fn a_tool_loop_without_thinking_warns_only_with_thinking_on() {
        let conversation = tool_loop(None);
        let request = ModelRequest::new(&conversation);
        let off = AnthropicModel::new("claude-sonnet-4-0");
        assert_eq!(warnings(|| drop(off.body(&request))), Vec::<String>::new());
        let on = off.thinking_budget(2048);
        let traced = warnings(|| drop(on.body(&request)));
        assert_eq!(traced.len(), 1, "{traced:?}");
        assert!(
            traced[0].contains("without extended thinking"),
            "{traced:?}"
        );
    }

    #[test]
    fn thinking_of_the_same_model_is_replayed_with_thinking_on() {
        let model = AnthropicModel::new("claude-sonnet-4-0").thinking_budget(2048);
        let conversation = tool_loop(Some(signed_by("claude-sonnet-4-0")));
        let body = model.body(&ModelRequest::new(&conversation));
        assert_eq!(
            body.value()["thinking"],
            json!({ "type": "enabled", "budget_tokens": 2048 })
        );
        assert_eq!(
            body.value()["messages"][1]["content"][0],
            json!({ "type": "thinking", "thinking": "plan", "signature": "sig" })
        );
        assert!(body.dropped.is_empty());
    }

    #[test]
    fn thinking_of_another_model_is_dropped_and_thinking_turned_off_for_that_request() {
        let model = AnthropicModel::new("claude-opus-4-1").thinking_budget(2048);
        let conversation = tool_loop(Some(signed_by("claude-sonnet-4-0")));
        let body = model.body(&ModelRequest::new(&conversation));
        assert_eq!(body.value().get("thinking"), None);
        assert_eq!(
            body.value()["messages"][1]["content"][0]["type"],
            "tool_use"
        );
        assert_eq!(body.dropped.len(), 1);
        assert_eq!(
            body.dropped[0].to_string(),
            "reasoning of Anthropic Messages (from api.anthropic.com, model claude-sonnet-4-0) in message 1, part 0"
        );
    }

    #[test]
    fn the_bytes_sent_are_the_request_body_with_each_key_once() {
        use crate::conversation::{Extras, ImagePart, ProviderPart, TextPart, UserMessage};
        use crate::tool::ToolInfo;
        use crate::wire::decode::testing::repeated_key;

        let extras =
            |fields: Value| Extras::new(FORMAT, fields.as_object().cloned().unwrap_or_default());
        let mut system = crate::conversation::SystemMessage::new("rules");
        system.extras =
            extras(json!({ "cache_control": { "type": "ephemeral" }, "text": "theirs" }));
        let mut cited = TextPart::new("cited");
        cited.extras = extras(json!({ "citations": [{ "url": "u" }], "type": "text" }));
        let mut call = ToolCall::new("toolu_1", "f", r#"{"a":1}"#);
        call.extras = extras(json!({ "caller": "direct", "input": {} }));
        let mut assistant = AssistantMessage::new(vec![
            ContentPart::Reasoning(signed_by("claude-sonnet-4-0")),
            ContentPart::Text(cited),
            ContentPart::ToolCall(call),
            ContentPart::Provider(ProviderPart::new(
                FORMAT,
                json!({ "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {} }),
            )),
        ]);
        assistant.extras = extras(json!({ "stop_sequence": null }));
        let user = UserMessage::new(vec![
            ContentPart::text("look"),
            ContentPart::Image(ImagePart::base64("image/png", "aGk=")),
        ]);
        let conversation = vec![
            Message::System(system),
            Message::User(user),
            Message::Assistant(assistant),
            Message::Tool(ToolResult::error("toolu_1", "")),
        ];
        let mut info = ToolInfo::new("f", "F.", json!({ "type": "object" }));
        info.strict = Some(true);
        info.extras = extras(json!({ "name": "theirs", "cache_control": { "type": "ephemeral" } }));
        let tools = [info];
        let request = ModelRequest::new(&conversation)
            .instructions("Be brief.")
            .tools(&tools);
        let model = AnthropicModel::new("claude-sonnet-4-0").thinking_budget(2048);
        let bytes = model.request_body_bytes(&request).unwrap();
        assert_eq!(repeated_key(&bytes), None);
        let sent: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(sent, model.request_body(&request));
        assert_eq!(sent["tools"], Value::Array(anthropic::export_tools(&tools)));
        assert_eq!(sent["tools"][0]["name"], "f");
        assert_eq!(
            sent["tools"][0]["cache_control"],
            json!({ "type": "ephemeral" })
        );
        let exported = anthropic::export_messages_for(&conversation, &model.target);
        assert_eq!(sent["messages"], Value::Array(exported.messages));
        assert_eq!(sent["messages"][1]["content"][0]["type"], "thinking");
        assert_eq!(
            sent["thinking"],
            json!({ "type": "enabled", "budget_tokens": 2048 })
        );
        // A vendor field still replaces the messages.
        let replaced = model.clone().extra("messages", json!([]));
        let sent: Value =
            serde_json::from_slice(&replaced.request_body_bytes(&request).unwrap()).unwrap();
        assert_eq!(sent["messages"], json!([]));
    }

    #[test]
    fn from_env_names_what_is_missing() {
        let error = AnthropicModel::from_lookup(|_| None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "set ANTHROPIC_MODEL and ANTHROPIC_API_KEY"
        );
        let model = AnthropicModel::from_lookup(|name| match name {
            "ANTHROPIC_MODEL" => Some("claude".into()),
            "ANTHROPIC_API_KEY" => Some("sk-ant-test".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(model.base_url, DEFAULT_BASE_URL);
        assert_eq!(model.max_tokens, DEFAULT_MAX_TOKENS);
    }
}
