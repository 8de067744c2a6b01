//! [`OpenAiResponsesModel`]: the OpenAI Responses API, for OpenAI's own
//! models.

use serde_json::{Map, Value, json};

use super::Effort;
use super::body::{Body, FieldView, PLACEHOLDER, StreamAssembler};
use super::http_model::{HttpModel, Provider, ProviderApi};
use super::openai::ReasoningEffort;
use super::{ToolChoice, inexpressible_output};
use crate::wire::decode::{Moving, Unread};
use crate::wire::output_schema;
use crate::wire::responses::{self, InputItem, RESPONSE_ID_KEY, ToolsView};
use crate::wire::stream::StreamDelta;
use crate::wire::stream::responses::EventAssembler;
use crate::wire::{Target, WireError};
use agent_loop_core::conversation::{Message, ModelResponse, WireFormat};
use agent_loop_core::turn::{ModelError, ModelRequest, ToolList};

const FORMAT: WireFormat = WireFormat::OpenAiResponses;

/// The official endpoint.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// What `include` asks for so that a stateless request gets its reasoning
/// back.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// How much of its reasoning a model summarises: `reasoning.summary`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningSummary {
    /// `"auto"`: the most detailed summary the model offers.
    Auto,
    /// `"concise"`.
    Concise,
    /// `"detailed"`.
    Detailed,
}

impl ReasoningSummary {
    fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Concise => "concise",
            Self::Detailed => "detailed",
        }
    }
}

/// A model behind OpenAI's Responses API (`POST {base_url}/responses`):
/// the API OpenAI's reasoning models need for tools (since gpt-5.4, Chat
/// Completions answers 400 to function tools with reasoning), and the only
/// one that returns their reasoning, so that it carries across tool calls.
/// For OpenAI-compatible servers, use [`OpenAiModel`](crate::model::OpenAiModel).
///
/// ```
/// use agent_loop_providers::model::{OpenAiResponsesModel, ReasoningEffort, ReasoningSummary};
///
/// let model = OpenAiResponsesModel::new("gpt-5")
///     .api_key("sk-...")
///     .reasoning_effort(ReasoningEffort::Low)
///     .reasoning_summary(ReasoningSummary::Auto)
///     .max_output_tokens(4096);
/// assert!(!format!("{model:?}").contains("sk-"));
/// ```
///
/// **Stateless by default.** Each request sends `store: false` and the
/// whole conversation as `input` (exported by
/// [`wire::responses::export_messages`](crate::wire::responses::export_messages)),
/// so nothing is kept on OpenAI's side. Reasoning models then need their
/// reasoning back encrypted: for a model named `gpt-5…`, `o1…`, `o3…`,
/// `o4…` or `codex…` (after an `openai/` prefix) the body asks for it with
/// `include: ["reasoning.encrypted_content"]`, and the reasoning items
/// come back in the next request right before the calls they led to.
/// Models without reasoning (gpt-4o, gpt-4.1) answer 400 "Encrypted content
/// is not supported with this model" to that `include`, so it is off for
/// them;
/// [`include_encrypted_reasoning`](OpenAiResponsesModel::include_encrypted_reasoning)
/// decides it for any other name.
///
/// **Chained, on request.** With
/// [`previous_response_id`](OpenAiResponsesModel::previous_response_id),
/// requests send `store: true`, and once the conversation holds an answer of this API,
/// `previous_response_id` (the id kept in that assistant message's extras,
/// [`RESPONSE_ID_KEY`]) and only the messages after it.
///
/// The body is `model`, `instructions` (the mode's instructions), `input`,
/// `store`, `include` when on, `tools` (each with `strict`, see
/// [`wire::responses::export_tools`](crate::wire::responses::export_tools)),
/// `tool_choice` and `parallel_tool_calls` when the mode has tools,
/// `temperature`, `max_output_tokens`, `reasoning: {effort, summary}` when
/// set, `stream: true` when streaming, then the
/// [`extra`](OpenAiResponsesModel::extra) fields. A request with a native [`output`](ModelRequest::output) adds
/// `text: {"format": {"type": "json_schema", "name", "schema", "strict"}}`
/// (the name's characters outside `[a-zA-Z0-9_-]` replaced by `_`, cut to
/// 64; `strict` is [`strict_output`](OpenAiResponsesModel::strict_output)).
/// The key goes as `Authorization: Bearer`.
pub type OpenAiResponsesModel = HttpModel<OpenAiResponses>;

/// OpenAI's Responses API as an [`HttpModel`] speaks it: the provider of
/// [`OpenAiResponsesModel`], holding that model's own settings (see
/// [`max_output_tokens`](OpenAiResponsesModel::max_output_tokens),
/// [`reasoning_effort`](OpenAiResponsesModel::reasoning_effort),
/// [`reasoning_summary`](OpenAiResponsesModel::reasoning_summary),
/// [`include_encrypted_reasoning`](OpenAiResponsesModel::include_encrypted_reasoning),
/// [`previous_response_id`](OpenAiResponsesModel::previous_response_id)
/// and [`strict_output`](OpenAiResponsesModel::strict_output)). Made with
/// the model: [`OpenAiResponsesModel::new`].
#[derive(Clone, Debug)]
pub struct OpenAiResponses {
    max_output_tokens: Option<u32>,
    reasoning_effort: Option<Effort>,
    reasoning_summary: Option<ReasoningSummary>,
    include_encrypted_reasoning: Option<bool>,
    previous_response_id: bool,
    strict_output: bool,
}

/// The settings of the Responses API alone.
impl HttpModel<OpenAiResponses> {
    /// The most tokens the answer may use, reasoning included
    /// (`max_output_tokens`). A response cut off by it has
    /// [`FinishReason::Length`](agent_loop_core::conversation::FinishReason::Length).
    pub fn max_output_tokens(mut self, max_output_tokens: u32) -> Self {
        self.provider.max_output_tokens = Some(max_output_tokens);
        self
    }

    /// How hard a reasoning model thinks (`reasoning.effort`): the same
    /// setting as [`effort`](HttpModel::effort), under OpenAI's name.
    pub fn reasoning_effort(self, effort: ReasoningEffort) -> Self {
        self.effort(effort)
    }

    /// Ask for a summary of the reasoning (`reasoning.summary`): it
    /// streams as [`TurnEvent::ReasoningDelta`](agent_loop_core::turn::TurnEvent::ReasoningDelta)s
    /// and is the text of the reasoning parts.
    pub fn reasoning_summary(mut self, summary: ReasoningSummary) -> Self {
        self.provider.reasoning_summary = Some(summary);
        self
    }

    /// Whether requests send `include: ["reasoning.encrypted_content"]`.
    /// Unset, it is sent for reasoning models only (see the type's docs).
    pub fn include_encrypted_reasoning(mut self, include: bool) -> Self {
        self.provider.include_encrypted_reasoning = Some(include);
        self
    }

    /// Chain requests with `previous_response_id` (off by default): sends
    /// `store: true`, and once the conversation holds an answer of this
    /// API, its response id and only the messages after it. The responses
    /// then live on OpenAI's side (30 days by default).
    pub fn previous_response_id(mut self, chain: bool) -> Self {
        self.provider.previous_response_id = chain;
        self
    }

    /// The `strict` flag of a native output's `text.format` (`false`
    /// unless set): strict mode takes only schemas whose every property is
    /// required and whose objects have `"additionalProperties": false`, so
    /// with it set the schema sent is
    /// [`output_schema::openai_strict`](crate::wire::output_schema::openai_strict),
    /// and an output strict mode cannot express is refused, unsent, with a
    /// [`ModelError`] of kind [`Request`](agent_loop_core::turn::ModelErrorKind::Request). Without
    /// it, the full schema is sent. The answer is checked against the full
    /// schema either way.
    pub fn strict_output(mut self, strict: bool) -> Self {
        self.provider.strict_output = strict;
        self
    }

    /// Whether `include` asks for encrypted reasoning.
    fn includes_encrypted_reasoning(&self) -> bool {
        self.provider
            .include_encrypted_reasoning
            .unwrap_or_else(|| is_reasoning_model(&self.endpoint.model))
    }
}

/// The fields of a Responses body written from views of the request: its
/// input items and its tools.
pub(crate) type RequestView<'r> = FieldView<Vec<InputItem<'r>>, ToolsView<ToolList<'r>>>;

/// `true` for OpenAI's reasoning models by name: `gpt-5…`, `o1…`, `o3…`,
/// `o4…`, `codex…`, with or without an `openai/` prefix (OpenRouter).
fn is_reasoning_model(model: &str) -> bool {
    let name = model.strip_prefix("openai/").unwrap_or(model);
    let o_series = name
        .strip_prefix('o')
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_digit());
    // `gpt-5-chat-latest` is a chat model without reasoning: OpenAI
    // answers 400 "Encrypted content is not supported with this model" to
    // the include (pydantic-ai#3326).
    let chat = name.contains("-chat");
    (name.starts_with("gpt-5") || name.starts_with("codex") || o_series) && !chat
}

/// The index and response id of the last assistant message that holds
/// one and whose extras `target` takes (of this endpoint, or of no known
/// one).
fn last_response_id<'c>(conversation: &'c [Message], target: &Target) -> Option<(usize, &'c str)> {
    conversation
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, message)| {
            let extras = &message.as_assistant()?.extras;
            // A response of another endpoint is not on this one's server.
            if !target.takes_extras(FORMAT, extras) {
                return None;
            }
            let id = extras.fields_for(FORMAT)?.get(RESPONSE_ID_KEY)?.as_str()?;
            Some((index, id))
        })
}

/// A `text.format` name OpenAI takes (`^[a-zA-Z0-9_-]{1,64}$`): other
/// characters become `_`, cut to 64; `output` when empty.
fn format_name(name: &str) -> String {
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
        ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
    }
}

impl Provider for OpenAiResponses {}

impl ProviderApi for OpenAiResponses {
    const DEBUG_NAME: &'static str = "OpenAiResponsesModel";
    const FORMAT: WireFormat = FORMAT;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const ENV_PREFIX: &'static str = "OPENAI";
    const ENV_KEY_HINT: &'static str =
        "OPENAI_API_KEY (or OPENAI_BASE_URL for a server without keys)";
    const KEY_HEADER: &'static str = "authorization";
    const KEY_SCHEME: &'static str = "Bearer ";
    type Stream = EventAssembler;
    type View<'r> = RequestView<'r>;
    type Response = responses::RawResponse;

    fn unset() -> Self {
        Self {
            max_output_tokens: None,
            reasoning_effort: None,
            reasoning_summary: None,
            include_encrypted_reasoning: None,
            previous_response_id: false,
            strict_output: false,
        }
    }

    fn debug_fields(&self, out: &mut std::fmt::DebugStruct<'_, '_>) {
        out.field("max_output_tokens", &self.max_output_tokens)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("reasoning_summary", &self.reasoning_summary)
            .field(
                "include_encrypted_reasoning",
                &self.include_encrypted_reasoning,
            )
            .field("previous_response_id", &self.previous_response_id)
            .field("strict_output", &self.strict_output);
    }

    fn max_output_tokens(&self) -> Option<(&'static str, u32)> {
        self.max_output_tokens
            .map(|tokens| ("max_output_tokens", tokens))
    }

    fn set_effort(&mut self, effort: Effort) {
        self.reasoning_effort = Some(effort);
    }

    fn check(model: &OpenAiResponsesModel, request: &ModelRequest<'_>) -> Result<(), ModelError> {
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

    fn body<'r>(
        model: &'r OpenAiResponsesModel,
        request: &ModelRequest<'r>,
    ) -> Body<RequestView<'r>> {
        let mut body = Map::new();
        body.insert("model".into(), json!(model.endpoint.model));
        if let Some(instructions) = request.instructions {
            body.insert("instructions".into(), json!(instructions));
        }
        let mut conversation: &[Message] = request.conversation;
        // Encrypted reasoning, provider items and response ids go back
        // only to the endpoint they came from (see `wire::Target`).
        // With `previous_response_id`, the messages up to the response
        // named are on the server: only those after it are sent.
        let mut skipped = 0;
        if model.provider.previous_response_id
            && let Some((index, id)) = last_response_id(conversation, &model.endpoint.target)
        {
            body.insert("previous_response_id".into(), json!(id));
            skipped = index + 1;
            conversation = &conversation[skipped..];
        }
        // Stateless (`store: false`), nothing the server could look up
        // by id goes out: reasoning without its encrypted content is left
        // out (and reported), as are its items' ids.
        // With `previous_response_id` the request is stored (see `store`
        // below); without, stateless.
        let (input, dropped) = responses::export_input(
            conversation,
            !model.provider.previous_response_id,
            &model.endpoint.target,
        );
        body.insert("input".into(), PLACEHOLDER);
        let mut views = vec![("input", FieldView::Conversation(input))];
        body.insert("store".into(), json!(model.provider.previous_response_id));
        if model.includes_encrypted_reasoning() {
            body.insert("include".into(), json!([ENCRYPTED_REASONING]));
        }
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
                "text".into(),
                json!({
                    "format": {
                        "type": "json_schema",
                        "name": format_name(output.name()),
                        "schema": schema,
                        "strict": model.provider.strict_output,
                    },
                }),
            );
        }
        if let Some(temperature) = model.settings.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_output_tokens) = model.provider.max_output_tokens {
            body.insert("max_output_tokens".into(), json!(max_output_tokens));
        }
        if model.provider.reasoning_effort.is_some() || model.provider.reasoning_summary.is_some() {
            let mut reasoning = Map::new();
            if let Some(effort) = model.provider.reasoning_effort {
                reasoning.insert("effort".into(), json!(effort.as_str()));
            }
            if let Some(summary) = model.provider.reasoning_summary {
                reasoning.insert("summary".into(), json!(summary.as_str()));
            }
            body.insert("reasoning".into(), Value::Object(reasoning));
        }
        if model.settings.stream {
            body.insert("stream".into(), json!(true));
        }
        model.settings.merge_extra(&mut body);
        Body::new(body, views, dropped, skipped)
    }

    fn url(model: &OpenAiResponsesModel) -> String {
        format!("{}/responses", model.endpoint.base_url)
    }

    fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
        responses::parse_response(body)
    }

    fn read_response(response: responses::RawResponse) -> Result<ModelResponse, Unread> {
        responses::read_response(Moving, response)
    }
}

impl StreamAssembler for EventAssembler {
    /// The stream ends with `response.completed` or `response.incomplete`.
    fn read_event(
        &mut self,
        event: &str,
        data: &str,
    ) -> Result<(Vec<StreamDelta>, bool), WireError> {
        let deltas = self.push(event, data)?;
        Ok((deltas, self.is_done()))
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        EventAssembler::finish(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_sent_are_the_request_body_with_each_key_once() {
        use crate::wire::decode::testing::repeated_key;
        use agent_loop_core::conversation::{
            AssistantMessage, ContentPart, Extras, ReasoningPart, ToolCall, ToolResult,
        };
        use agent_loop_core::tool::ToolInfo;

        let extras =
            |fields: Value| Extras::new(FORMAT, fields.as_object().cloned().unwrap_or_default());
        let mut user =
            agent_loop_core::conversation::UserMessage::new(vec![ContentPart::text("go")]);
        user.extras = extras(json!({ "role": "theirs", "name": "n" }));
        let mut call = ToolCall::new("call_1", "f", r#"{"a":1}"#);
        call.extras = extras(json!({ "id": "fc_1", "status": "completed", "name": "theirs" }));
        let mut reasoning = ReasoningPart::new("plan", FORMAT);
        reasoning.redacted = Some("enc".into());
        reasoning.extras = extras(json!({ "id": "rs_1" }));
        let assistant = AssistantMessage::new(vec![
            ContentPart::Reasoning(reasoning),
            ContentPart::ToolCall(call.clone()),
        ]);
        let mut result = ToolResult::ok("call_1", "done");
        result.extras = extras(json!({ "output": "theirs", "status": "completed" }));
        let conversation = vec![
            Message::User(user),
            Message::Assistant(assistant),
            Message::Tool(result),
            Message::Assistant(AssistantMessage::new(vec![ContentPart::ToolCall(call)])),
        ];
        let mut info = ToolInfo::new("f", "", json!({ "type": "object" }));
        info.extras = extras(json!({ "strict": true, "defer_loading": true }));
        let tools = [info];
        let request = ModelRequest::new(&conversation)
            .instructions("Be brief.")
            .tools(&tools);
        for model in [
            OpenAiResponsesModel::new("gpt-4o"),
            OpenAiResponsesModel::new("gpt-4o").previous_response_id(true),
        ] {
            let bytes = model.request_body_bytes(&request).unwrap();
            assert_eq!(repeated_key(&bytes), None);
            let sent: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(sent, model.request_body(&request));
            assert_eq!(sent["tools"], Value::Array(responses::export_tools(&tools)));
            assert_eq!(sent["tools"][0]["strict"], false);
            assert_eq!(
                sent["input"][0],
                json!({ "role": "user", "content": "go", "name": "n" })
            );
            // With the reasoning item the call keeps its id; alone, not.
            assert_eq!(sent["input"][2]["id"], "fc_1");
            assert_eq!(sent["input"][3]["output"], "done");
            assert_eq!(sent["input"][4].get("id"), None);
        }
    }

    #[test]
    fn from_env_names_what_is_missing() {
        let error = OpenAiResponsesModel::from_lookup(|_| None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "set OPENAI_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL for a server without keys)"
        );
        let error = OpenAiResponsesModel::from_lookup(|name| {
            (name == "OPENAI_API_KEY").then(|| "sk-1".to_owned())
        })
        .unwrap_err();
        assert_eq!(error.variables, ["OPENAI_MODEL"]);
        let model = OpenAiResponsesModel::from_lookup(|name| match name {
            "OPENAI_MODEL" => Some("gpt-5".into()),
            "OPENAI_API_KEY" => Some("sk-secret".into()),
            "OPENAI_BASE_URL" => Some("https://user:pw@proxy.example/v1/?key=k".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            model.endpoint.base_url,
            "https://user:pw@proxy.example/v1/?key=k"
        );
        let shown = format!("{model:?}");
        for secret in ["sk-secret", "pw", "key=k"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn reasoning_models_are_told_by_name() {
        for name in [
            "gpt-5",
            "gpt-5.5",
            "o3-mini",
            "o4-mini",
            "o1",
            "openai/gpt-5-mini",
        ] {
            assert!(is_reasoning_model(name), "{name}");
        }
        for name in [
            "gpt-4o",
            "gpt-4.1",
            "omni-moderation",
            "openai/gpt-4o-mini",
            "gpt-5-chat-latest",
            "openai/gpt-5-chat",
        ] {
            assert!(!is_reasoning_model(name), "{name}");
        }
        let forced = OpenAiResponsesModel::new("gpt-4o").include_encrypted_reasoning(true);
        assert!(forced.includes_encrypted_reasoning());
    }
}
