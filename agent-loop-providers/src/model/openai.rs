//! [`OpenAiModel`]: OpenAI Chat Completions, and every server that speaks
//! it.

use serde_json::{Map, Value, json};

use super::body::{Body, FieldView, PLACEHOLDER, StreamAssembler};
use super::error::HttpModelError;
use super::http_model::{HttpModel, Provider, ProviderApi};
use super::{Effort, ToolChoice, inexpressible_output};

mod families;
use crate::wire::WireError;
use crate::wire::decode::Unread;
use crate::wire::openai::{self, RequestMessages, ToolsView};
use crate::wire::output_schema;
use crate::wire::stream::StreamDelta;
use crate::wire::stream::openai::ChunkAssembler;
use agent_loop_core::conversation::{Message, ModelResponse, SystemMessage, WireFormat};
use agent_loop_core::turn::{ModelError, ModelErrorKind};
use agent_loop_core::turn::{ModelRequest, ToolList};

const FORMAT: WireFormat = WireFormat::OpenAiChat;

/// The official endpoint.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The reasoning level of OpenAI's models: [`Effort`], which every HTTP
/// model takes ([`HttpModel::effort`]); this name is kept for the
/// setters [`OpenAiModel::reasoning_effort`] and
/// `OpenAiResponsesModel::reasoning_effort`.
pub type ReasoningEffort = Effort;

/// Which body field carries the output cap set with
/// [`OpenAiModel::max_tokens`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_completion_tokens` (the default): what OpenAI documents, and
    /// what its reasoning models require (they refuse `max_tokens`).
    #[default]
    MaxCompletionTokens,
    /// `max_tokens`: for servers that read only the older field (DeepSeek
    /// documents `max_tokens`; some other OpenAI-compatible servers ignore
    /// `max_completion_tokens`).
    MaxTokens,
}

impl MaxTokensField {
    fn as_str(self) -> &'static str {
        match self {
            Self::MaxCompletionTokens => "max_completion_tokens",
            Self::MaxTokens => "max_tokens",
        }
    }
}

/// A model behind OpenAI's Chat Completions API (`POST
/// {base_url}/chat/completions`): OpenAI itself, or any OpenAI-compatible
/// server (vLLM, llama.cpp server, Ollama's `/v1`, OpenRouter, DeepSeek,
/// Gemini's OpenAI-compatible endpoint).
///
/// ```
/// use agent_loop_providers::model::{OpenAiModel, ToolChoice};
///
/// // A local server that needs no key.
/// let local = OpenAiModel::new("qwen3:8b").base_url("http://localhost:11434/v1");
/// // OpenAI, with the settings of every day.
/// let openai = OpenAiModel::new("gpt-4.1")
///     .api_key("sk-...")
///     .temperature(0.2)
///     .max_tokens(1024)
///     .tool_choice(ToolChoice::Auto)
///     .extra("seed", 7.into());
/// assert!(!format!("{openai:?}").contains("sk-"));
/// ```
///
/// The body is `model`, `messages` (the mode's instructions as a first
/// `system` message, then the conversation, exported by
/// [`wire::openai::export_messages`](crate::wire::openai::export_messages)),
/// `tools`, `tool_choice` and `parallel_tool_calls` when the mode has
/// tools, and the settings that are set; then the [`extra`](OpenAiModel::extra)
/// fields. The key goes as `Authorization: Bearer`. A request with a native
/// [`output`](ModelRequest::output) adds `response_format: {"type":
/// "json_schema", "json_schema": {"name", "schema", "strict"}}`: the name is
/// the output's, its characters outside `[a-zA-Z0-9_-]` replaced by `_`
/// and cut to 64; `strict` is [`strict_output`](OpenAiModel::strict_output).
pub type OpenAiModel = HttpModel<OpenAiChat>;

/// OpenAI's Chat Completions API as an [`HttpModel`] speaks it: the
/// provider of [`OpenAiModel`], holding that model's own settings (see
/// [`max_tokens`](OpenAiModel::max_tokens),
/// [`max_tokens_field`](OpenAiModel::max_tokens_field),
/// [`reasoning_effort`](OpenAiModel::reasoning_effort) and
/// [`strict_output`](OpenAiModel::strict_output)). Made with the model:
/// [`OpenAiModel::new`].
#[derive(Clone, Debug)]
pub struct OpenAiChat {
    max_tokens: Option<u32>,
    max_tokens_field: MaxTokensField,
    reasoning_effort: Option<Effort>,
    strict_output: bool,
}

/// The settings of Chat Completions alone.
impl HttpModel<OpenAiChat> {
    /// The most tokens the answer may use, sent as
    /// `max_completion_tokens` (which OpenAI's reasoning models require
    /// instead of the older `max_tokens`); for a server that reads only
    /// `max_tokens`, see [`max_tokens_field`](Self::max_tokens_field).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.provider.max_tokens = Some(max_tokens);
        self
    }

    /// The body field that carries [`max_tokens`](Self::max_tokens):
    /// [`MaxTokensField::MaxCompletionTokens`] by default, or
    /// [`MaxTokensField::MaxTokens`] for a server that reads only
    /// `max_tokens` (DeepSeek documents `max_tokens`). Only one of the two
    /// is sent.
    ///
    /// ```
    /// use agent_loop_providers::model::{MaxTokensField, OpenAiModel};
    ///
    /// let deepseek = OpenAiModel::new("deepseek-chat")
    ///     .base_url("https://api.deepseek.com/v1")
    ///     .max_tokens(1024)
    ///     .max_tokens_field(MaxTokensField::MaxTokens);
    /// # let _ = deepseek;
    /// ```
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.provider.max_tokens_field = field;
        self
    }

    /// How hard a reasoning model thinks (`reasoning_effort`): the same
    /// setting as [`effort`](HttpModel::effort), under OpenAI's name.
    pub fn reasoning_effort(self, effort: ReasoningEffort) -> Self {
        self.effort(effort)
    }

    /// The `strict` flag of a native output's `response_format` (`false`
    /// unless set). OpenAI's strict mode constrains the answer to the
    /// schema, but takes only schemas whose every property is required and
    /// whose objects all have `"additionalProperties": false`: with it set,
    /// the schema sent is
    /// [`output_schema::openai_strict`](crate::wire::output_schema::openai_strict)
    /// (optional properties required and nullable, unsupported keywords
    /// moved into descriptions), and an output strict mode cannot express
    /// (a map, a free-form object) is refused, unsent, with a
    /// [`ModelError`] of kind [`Request`](agent_loop_core::turn::ModelErrorKind::Request). Without
    /// it, the full schema is sent. The runner checks the answer against
    /// the full schema either way.
    pub fn strict_output(mut self, strict: bool) -> Self {
        self.provider.strict_output = strict;
        self
    }
}

impl Provider for OpenAiChat {}

impl ProviderApi for OpenAiChat {
    const DEBUG_NAME: &'static str = "OpenAiModel";
    const FORMAT: WireFormat = FORMAT;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const ENV_PREFIX: &'static str = "OPENAI";
    const ENV_KEY_HINT: &'static str =
        "OPENAI_API_KEY (or OPENAI_BASE_URL for a server without keys)";
    const KEY_HEADER: &'static str = "authorization";
    const KEY_SCHEME: &'static str = "Bearer ";
    type Stream = ChunkAssembler;
    type View<'r> = RequestView<'r>;
    type Response = openai::ChatCompletion;

    fn unset() -> Self {
        Self {
            max_tokens: None,
            max_tokens_field: MaxTokensField::default(),
            reasoning_effort: None,
            strict_output: false,
        }
    }

    fn debug_fields(&self, out: &mut std::fmt::DebugStruct<'_, '_>) {
        out.field("max_tokens", &self.max_tokens)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("strict_output", &self.strict_output);
    }

    fn max_output_tokens(&self) -> Option<(&'static str, u32)> {
        self.max_tokens.map(|tokens| ("max_tokens", tokens))
    }

    fn set_effort(&mut self, effort: Effort) {
        self.reasoning_effort = Some(effort);
    }

    fn check(model: &OpenAiModel, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        if !request.tools.is_empty()
            && model
                .endpoint
                .target
                .host()
                .is_some_and(families::is_openai_host)
            && let Some(refusal) =
                families::refusal(&model.endpoint.model, model.provider.reasoning_effort)
        {
            return Err(ModelError::of_format(FORMAT, ModelErrorKind::Request)
                .with_message(format!("{refusal}; the request was not sent")));
        }
        let strict = request
            .output
            .filter(|_| model.provider.strict_output)
            .map(|output| output_schema::openai_strict(output.schema()));
        match strict {
            Some(Err(problem)) => Err(inexpressible_output(
                FORMAT,
                &problem,
                "set strict_output(false), or ask with OutputMode::Tool",
            )),
            _ => Ok(()),
        }
    }

    fn body<'r>(model: &'r OpenAiModel, request: &ModelRequest<'r>) -> Body<RequestView<'r>> {
        let (lead, rest, merged) = leading_system_merged(request);
        // DeepSeek's `reasoning_content` and other provider fields go back
        // only to the provider that wrote them (see `wire::Target`).
        let messages = RequestMessages::new(lead, rest, &model.endpoint.target);
        let dropped = messages.dropped();
        let mut body = Map::new();
        body.insert("model".into(), json!(model.endpoint.model));
        body.insert("messages".into(), PLACEHOLDER);
        let mut views = vec![("messages", FieldView::Conversation(messages))];
        if !request.tools.is_empty() {
            body.insert("tools".into(), PLACEHOLDER);
            views.push(("tools", FieldView::Tools(ToolsView(request.tools))));
            if let Some(choice) = &model.settings.tool_choice {
                body.insert("tool_choice".into(), tool_choice(choice));
            }
            if let Some(parallel) = model.settings.parallel_tool_calls {
                body.insert("parallel_tool_calls".into(), json!(parallel));
            }
        }
        if let Some(output) = request.output {
            // Strict mode takes its own subset (an inexpressible schema is
            // refused in `check`: shown here as is).
            let strict = model
                .provider
                .strict_output
                .then(|| output_schema::openai_strict(output.schema()).ok())
                .flatten();
            let schema = strict.as_ref().unwrap_or(output.schema());
            body.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": response_format_name(output.name()),
                        "schema": schema,
                        "strict": model.provider.strict_output,
                    },
                }),
            );
        }
        if let Some(temperature) = model.settings.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_tokens) = model.provider.max_tokens {
            body.insert(
                model.provider.max_tokens_field.as_str().into(),
                json!(max_tokens),
            );
        }
        if let Some(effort) = model.provider.reasoning_effort {
            body.insert("reasoning_effort".into(), json!(effort.as_str()));
        }
        if model.settings.stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({ "include_usage": true }));
        }
        model.settings.merge_extra(&mut body);
        Body::new(body, views, dropped, merged)
    }

    fn url(model: &OpenAiModel) -> String {
        format!("{}/chat/completions", model.endpoint.base_url)
    }

    fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
        openai::parse_response(body)
    }

    fn read_response(response: openai::ChatCompletion) -> Result<ModelResponse, Unread> {
        openai::read_response(response).map_err(Unread::Wire)
    }
}

/// The fields of a Chat Completions body written from views of the
/// request: its messages and its tools.
pub(crate) type RequestView<'r> = FieldView<RequestMessages<'r>, ToolsView<ToolList<'r>>>;

impl StreamAssembler for ChunkAssembler {
    /// The event name goes along: an `error` event is the provider's error
    /// whatever its data looks like. `[DONE]` ends the stream.
    fn read_event(
        &mut self,
        event: &str,
        data: &str,
    ) -> Result<(Vec<StreamDelta>, bool), WireError> {
        let deltas = self.push_event(event, data)?;
        Ok((deltas, data.trim() == "[DONE]"))
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        ChunkAssembler::finish(self)
    }

    fn is_whole(&self) -> bool {
        ChunkAssembler::is_whole(self)
    }
}

/// The messages a request sends: one system message first, holding the
/// mode's instructions and the conversation's own leading system messages
/// (their non-blank texts joined by a blank line, the role of the first
/// one of the conversation's, else `system`), then the rest of the
/// conversation, borrowed; and how many of the conversation's messages the
/// first one stands for. Chat templates of Qwen on vLLM and llama.cpp
/// refuse any system message but one at the start. A system message with
/// provider fields is not merged (they belong to it), and a system message
/// after the first message of another role stays where it is: moving it
/// would change what the model reads when; OpenAI and most servers take it
/// there.
fn leading_system_merged<'r>(
    request: &ModelRequest<'r>,
) -> (Option<Message>, &'r [Message], usize) {
    let conversation = request.conversation;
    let leading = conversation
        .iter()
        .take_while(
            |message| matches!(message, Message::System(system) if system.extras.is_empty()),
        )
        .count();
    if usize::from(request.instructions.is_some()) + leading < 2 {
        return (request.instructions.map(Message::system), conversation, 0);
    }
    let systems = conversation[..leading]
        .iter()
        .filter_map(|message| match message {
            Message::System(system) => Some(system),
            _ => None,
        });
    let text = request
        .instructions
        .into_iter()
        .chain(systems.clone().map(|system| system.text.as_str()))
        .filter(|text| !text.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut merged = SystemMessage::new(text);
    if let Some(first) = systems.clone().next() {
        merged.system_role = first.system_role;
    }
    (
        Some(Message::System(merged)),
        &conversation[leading..],
        leading,
    )
}

/// A `response_format` name OpenAI takes (`^[a-zA-Z0-9_-]{1,64}$`): other
/// characters become `_`, cut to 64; `output` when empty.
fn response_format_name(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "output".into()
    } else {
        name
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Target;
    use agent_loop_core::conversation::{
        AssistantMessage, ContentPart, Origin, ReasoningPart, ToolCall, ToolResult, WireFormat,
    };

    /// DeepSeek's reasoning, recorded as the DeepSeek model records it,
    /// then a tool call and its result.
    fn deepseek_history() -> Vec<Message> {
        let origin = Origin::new(FORMAT)
            .with_provider("api.deepseek.com")
            .with_model("deepseek-reasoner");
        let mut assistant =
            AssistantMessage::with_tool_calls(None, vec![ToolCall::new("call_1", "f", "{}")]);
        assistant.content.insert(
            0,
            ContentPart::Reasoning(ReasoningPart::new("plan", origin)),
        );
        vec![
            Message::user("go"),
            Message::Assistant(assistant),
            Message::Tool(ToolResult::ok("call_1", "done")),
        ]
    }

    #[test]
    fn reasoning_content_goes_back_to_its_own_provider_only() {
        let conversation = deepseek_history();
        let request = ModelRequest::new(&conversation);
        let cerebras = OpenAiModel::new("llama").base_url("https://api.cerebras.ai/v1");
        let body = cerebras.body(&request);
        assert_eq!(
            body.value()["messages"][1],
            serde_json::json!({ "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "f", "arguments": "{}" } }
            ] })
        );
        assert_eq!(body.dropped.len(), 1);
        assert_eq!(
            body.dropped[0].to_string(),
            "reasoning of OpenAI Chat Completions (from api.deepseek.com, model deepseek-reasoner) in message 1, part 0"
        );
        let deepseek =
            OpenAiModel::new("deepseek-reasoner").base_url("https://API.deepseek.com/v1");
        let body = deepseek.body(&request);
        assert_eq!(body.value()["messages"][1]["reasoning_content"], "plan");
        assert!(body.dropped.is_empty());
    }

    #[test]
    fn to_deepseek_every_assistant_message_carries_reasoning_content_empty_when_it_has_none() {
        // DeepSeek's own message with reasoning, then one another model
        // wrote (Anthropic's signed thinking, which goes nowhere else), then
        // one of no reasoning at all, then a plain answer.
        let mut conversation = deepseek_history();
        let claude = Origin::new(WireFormat::AnthropicMessages).with_model("claude-sonnet-4-5");
        let mut thought =
            AssistantMessage::with_tool_calls(None, vec![ToolCall::new("call_2", "f", "{}")]);
        thought.content.insert(
            0,
            ContentPart::Reasoning(ReasoningPart::new("signed", claude).signed("sig")),
        );
        conversation.push(Message::Assistant(thought));
        conversation.push(Message::Tool(ToolResult::ok("call_2", "done")));
        conversation.push(Message::tool_calls(
            None,
            vec![ToolCall::new("call_3", "f", "{}")],
        ));
        conversation.push(Message::Tool(ToolResult::ok("call_3", "done")));
        conversation.push(Message::assistant("All done."));
        conversation.push(Message::user("Again?"));
        let request = ModelRequest::new(&conversation);
        let reasoning_of = |model: &OpenAiModel| -> Vec<Option<Value>> {
            let body = model.body(&request);
            body.value()["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|message| message["role"] == "assistant")
                .map(|message| message.get("reasoning_content").cloned())
                .collect()
        };
        let deepseek = OpenAiModel::new("deepseek-v4-pro").base_url("https://api.deepseek.com");
        assert_eq!(
            reasoning_of(&deepseek),
            [
                Some(json!("plan")),
                Some(json!("")),
                Some(json!("")),
                Some(json!(""))
            ]
        );
        // Another server of the format gets none: not even DeepSeek's own
        // (strict servers refuse keys they do not know).
        let vllm = OpenAiModel::new("deepseek-v4-pro").base_url("http://localhost:8000/v1");
        assert_eq!(reasoning_of(&vllm), [None, None, None, None]);
    }

    /// The bytes a request posts, read back.
    fn sent(model: &OpenAiModel, request: &ModelRequest<'_>) -> Value {
        serde_json::from_slice(&model.request_body_bytes(request).unwrap()).unwrap()
    }

    #[test]
    fn the_bytes_sent_are_the_request_body_and_a_vendor_field_still_replaces_the_messages() {
        let conversation = deepseek_history();
        let request = ModelRequest::new(&conversation).instructions("Be brief.");
        let model = OpenAiModel::new("m");
        assert_eq!(sent(&model, &request), model.request_body(&request));
        assert_eq!(
            sent(&model, &request)["messages"][0]["content"],
            "Be brief."
        );

        let messages = json!([{ "role": "user", "content": "mine" }]);
        let replaced = OpenAiModel::new("m").extra("messages", messages.clone());
        assert_eq!(sent(&replaced, &request)["messages"], messages);
        assert_eq!(sent(&replaced, &request), replaced.request_body(&request));

        let removed = OpenAiModel::new("m").extra("messages", Value::Null);
        assert_eq!(sent(&removed, &request).get("messages"), None);
        assert_eq!(removed.request_body(&request).get("messages"), None);
    }

    #[test]
    fn a_provider_field_repeating_a_written_one_goes_once_in_its_place() {
        // Hand-built extras may hold a field the message writes itself:
        // theirs is sent, as when the body was a `Value` (the later key
        // won), and the key only once.
        let mut system = SystemMessage::new("rules");
        let fields = [("content", json!("theirs")), ("name", json!("n"))];
        system.extras = agent_loop_core::conversation::Extras::new(
            FORMAT,
            fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        );
        let image = agent_loop_core::conversation::ImagePart::base64("image/png", "aGk=");
        let user = agent_loop_core::conversation::UserMessage::new(vec![
            ContentPart::text("look"),
            ContentPart::Image(image),
        ]);
        let conversation = vec![Message::System(system), Message::User(user)];
        let bytes = OpenAiModel::new("m")
            .request_body_bytes(&ModelRequest::new(&conversation))
            .unwrap();

        /// A derived struct refuses a repeated field.
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct System {
            role: String,
            content: String,
            name: String,
        }
        #[derive(serde::Deserialize)]
        struct Sent {
            messages: (System, Value),
        }
        let Sent {
            messages: (system, user),
        } = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            (system.role, system.content, system.name),
            ("system".into(), "theirs".into(), "n".into())
        );
        assert_eq!(
            user["content"][1]["image_url"]["url"],
            "data:image/png;base64,aGk="
        );
    }

    #[test]
    fn the_tools_sent_are_the_exported_tools_and_a_repeated_field_goes_once() {
        let mut info = agent_loop_core::tool::ToolInfo::new(
            "search",
            "Searches.",
            json!({ "type": "object", "properties": { "q": { "type": "string" } } }),
        );
        info.strict = Some(true);
        let plain = info.clone();
        let fields = [("name", json!("theirs")), ("cache", json!({ "ttl": 5 }))];
        info.extras = agent_loop_core::conversation::Extras::new(
            FORMAT,
            fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        );
        let tools = [plain, info];
        let conversation = [Message::user("go")];
        let request = ModelRequest::new(&conversation).tools(&tools);
        let model = OpenAiModel::new("m");
        let bytes = model.request_body_bytes(&request).unwrap();
        let sent: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(sent, model.request_body(&request));
        assert_eq!(sent["tools"], Value::Array(openai::export_tools(&tools)));
        assert_eq!(
            sent["tools"][0],
            json!({ "type": "function", "function": {
                "name": "search", "description": "Searches.", "strict": true,
                "parameters": { "type": "object", "properties": { "q": { "type": "string" } } },
            } })
        );
        assert_eq!(sent["tools"][1]["function"]["name"], "theirs");
        assert_eq!(sent["tools"][1]["function"]["cache"], json!({ "ttl": 5 }));

        /// A derived struct refuses a repeated field.
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Function {
            name: String,
            description: String,
            parameters: Value,
            strict: bool,
            cache: Value,
        }
        #[derive(serde::Deserialize)]
        struct Tool {
            function: Function,
        }
        #[derive(serde::Deserialize)]
        struct Sent {
            tools: (Value, Tool),
        }
        let sent: Sent = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(sent.tools.1.function.name, "theirs");

        // A vendor field still replaces the tools.
        let replaced = OpenAiModel::new("m").extra("tools", json!([]));
        let bytes = replaced.request_body_bytes(&request).unwrap();
        let sent: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(sent["tools"], json!([]));
    }

    #[test]
    fn the_provider_is_the_base_urls_host_and_port() {
        let target = super::super::http_model::endpoint_target("http://127.0.0.1:8080/v1", "m");
        assert_eq!(target.provider.as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(target.model.as_deref(), Some("m"));
        assert_eq!(
            super::super::http_model::endpoint_target("not a url", "m").provider,
            None
        );
        // Set with the base URL and the model, whichever comes last.
        let model = OpenAiModel::new("a")
            .base_url("https://API.deepseek.com/v1")
            .model("b");
        assert_eq!(
            model.endpoint.target,
            Target::new().provider("api.deepseek.com").model("b")
        );
        assert_eq!(
            OpenAiModel::new("m").endpoint.target,
            Target::new().provider("api.openai.com").model("m")
        );
    }

    #[test]
    fn from_env_names_what_is_missing() {
        let error = OpenAiModel::from_lookup(|_| None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "set OPENAI_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL for a server without keys)"
        );
        let local = OpenAiModel::from_lookup(|name| match name {
            "OPENAI_MODEL" => Some("m".into()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:8080/v1/".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(local.endpoint.base_url, "http://127.0.0.1:8080/v1");
        assert!(local.endpoint.api_key.is_none());
    }
}
