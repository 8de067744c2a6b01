//! [`GeminiModel`]: Gemini's native API (`generateContent`).

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use super::error::EnvError;
use super::http::{ApiKey, Transport, secret_header};
use super::send::{Body, Provider, StreamAssembler, body_bytes, send};
use super::{EnvEndpoint, Settings, ToolChoice, env_var, shared_setters};
use crate::wire::WireError;
use crate::wire::decode::Unread;
use crate::wire::gemini;
use crate::wire::outgoing::Outgoing;
use crate::wire::output_schema;
use crate::wire::stream::StreamDelta;
use crate::wire::stream::gemini::ChunkAssembler;
use agent_loop_core::conversation::{Message, ModelResponse, WireFormat};
use agent_loop_core::support::redact::redact_url;
use agent_loop_core::turn::ModelError;
use agent_loop_core::turn::{Model, ModelRequest};

const FORMAT: WireFormat = WireFormat::Gemini;

/// The official endpoint (Google AI Studio's Gemini API).
const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// How much a Gemini 3 model thinks: `thinkingConfig.thinkingLevel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThinkingLevel {
    /// `"MINIMAL"`.
    Minimal,
    /// `"LOW"`.
    Low,
    /// `"MEDIUM"`.
    Medium,
    /// `"HIGH"`.
    High,
}

impl ThinkingLevel {
    fn as_str(self) -> &'static str {
        match self {
            Self::Minimal => "MINIMAL",
            Self::Low => "LOW",
            Self::Medium => "MEDIUM",
            Self::High => "HIGH",
        }
    }
}

/// A model behind Gemini's native API (`POST
/// {base_url}/v1beta/models/{model}:generateContent`, or
/// `:streamGenerateContent?alt=sse` when [streaming](Self::stream)).
///
/// ```
/// use agent_loop_providers::model::{GeminiModel, ThinkingLevel};
///
/// let model = GeminiModel::new("gemini-3-flash-preview")
///     .api_key("AIza...")
///     .thinking_level(ThinkingLevel::Low)
///     .include_thoughts(true)
///     .max_tokens(2048);
/// assert!(!format!("{model:?}").contains("AIza"));
/// ```
///
/// The body is `contents` (exported by
/// [`wire::gemini::export_contents`](crate::wire::gemini::export_contents):
/// every `thoughtSignature` goes back on its part), `systemInstruction`
/// (the mode's instructions, then the conversation's own system messages),
/// `tools` (`functionDeclarations` with `parametersJsonSchema`) and
/// `toolConfig.functionCallingConfig` when the mode has tools and a
/// [`tool_choice`](Self::tool_choice) is set (`AUTO`, `NONE`, `ANY`, or
/// `ANY` with `allowedFunctionNames` for one tool), and `generationConfig`
/// with the settings that are set (`temperature`, `maxOutputTokens`,
/// `thinkingConfig`); then the [`extra`](Self::extra) fields. The key goes
/// in the `x-goog-api-key` header, never in the URL. A request with a
/// native [`output`](ModelRequest::output) adds Gemini's structured output,
/// `generationConfig.responseMimeType: "application/json"` and
/// `responseJsonSchema`: the subset of JSON Schema Gemini documents
/// ([`output_schema::gemini`](crate::wire::output_schema::gemini)). Gemini has no setting for
/// parallel calls: [`parallel_tool_calls`](Self::parallel_tool_calls) is
/// not sent.
#[derive(Clone)]
pub struct GeminiModel {
    model: String,
    base_url: String,
    /// Where requests go, for the exports and the origins recorded on
    /// answers: made from `base_url` and `model` whenever either is set.
    target: crate::wire::Target,
    api_key: Option<ApiKey>,
    max_tokens: Option<u32>,
    thinking_budget: Option<i32>,
    thinking_level: Option<ThinkingLevel>,
    include_thoughts: Option<bool>,
    settings: Settings,
    transport: Transport,
}

/// The base URL without userinfo or query, the key as `<redacted>`.
impl std::fmt::Debug for GeminiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiModel")
            .field("model", &self.model)
            .field("base_url", &redact_url(&self.base_url))
            .field("api_key", &self.api_key)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("thinking_level", &self.thinking_level)
            .field("include_thoughts", &self.include_thoughts)
            .field("settings", &self.settings)
            .field("transport", &self.transport)
            .finish()
    }
}

shared_setters!(GeminiModel);

impl GeminiModel {
    /// The model `model` (e.g. `gemini-2.5-flash`; a `models/` prefix is
    /// taken off) at the official endpoint, with no key yet: set one with
    /// [`api_key`](Self::api_key).
    pub fn new(model: impl Into<String>) -> Self {
        let model = strip_models_prefix(model.into());
        Self {
            target: super::endpoint_target(DEFAULT_BASE_URL, &model),
            model,
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            max_tokens: None,
            thinking_budget: None,
            thinking_level: None,
            include_thoughts: None,
            settings: Settings::default(),
            transport: Transport::new(FORMAT),
        }
    }

    /// A model configured from the environment: `GEMINI_MODEL` (required),
    /// a key in `GOOGLE_API_KEY` or `GEMINI_API_KEY` (`GOOGLE_API_KEY`
    /// wins when both are set, as in Google's own SDKs), and
    /// `GEMINI_BASE_URL` (default
    /// `https://generativelanguage.googleapis.com`); a key or a base URL
    /// (a proxy may need no key) must be set.
    ///
    /// # Errors
    ///
    /// An [`EnvError`] naming what to set.
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_lookup(env_var)
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let env = EnvEndpoint::read(
            |name| match name {
                "GEMINI_API_KEY" => lookup("GOOGLE_API_KEY").or_else(|| lookup("GEMINI_API_KEY")),
                name => lookup(name),
            },
            "GEMINI",
            "GEMINI_API_KEY (or GOOGLE_API_KEY)",
        )?;
        let mut this = Self::new(env.model);
        this.api_key = env.api_key;
        if let Some(base_url) = env.base_url {
            this = this.base_url(base_url);
        }
        Ok(this)
    }

    /// The server's base URL, without `/v1beta` (default
    /// `https://generativelanguage.googleapis.com`); requests go to
    /// `{base_url}/v1beta/models/{model}:generateContent`. Credentials in it
    /// are sent but never shown: tracing fields and `Debug` print it without
    /// userinfo and query.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim_end_matches('/').to_owned();
        self.target = super::endpoint_target(&self.base_url, &self.model);
        self
    }

    /// The API key, sent as `x-goog-api-key`.
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The model name in the URL (a `models/` prefix is taken off).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = strip_models_prefix(model.into());
        self.target = super::endpoint_target(&self.base_url, &self.model);
        self
    }

    /// The most tokens the answer may use
    /// (`generationConfig.maxOutputTokens`).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// The thinking budget in tokens (`thinkingConfig.thinkingBudget`,
    /// Gemini 2.5): `0` turns thinking off, `-1` lets the model decide; the
    /// allowed range depends on the model.
    pub fn thinking_budget(mut self, budget_tokens: i32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// How much the model thinks (`thinkingConfig.thinkingLevel`, Gemini
    /// 3). Gemini refuses a request with both a level and a budget.
    pub fn thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = Some(level);
        self
    }

    /// Whether the answer includes thought summaries
    /// (`thinkingConfig.includeThoughts`): they arrive as reasoning parts
    /// (and, streamed, as
    /// [`TurnEvent::ReasoningDelta`](agent_loop_core::turn::TurnEvent::ReasoningDelta)s).
    pub fn include_thoughts(mut self, include: bool) -> Self {
        self.include_thoughts = Some(include);
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
    /// [`Request`](agent_loop_core::turn::ModelErrorKind::Request) the request would fail
    /// with, unsent: a value nested deeper than 128 levels, or, with
    /// [`refuse_dropped`](Self::refuse_dropped), a conversation holding what
    /// this format cannot carry (without it, that is logged as a request logs
    /// it).
    ///
    /// ```
    /// use agent_loop_core::conversation::Message;
    /// use agent_loop_providers::model::GeminiModel;
    /// use agent_loop_core::turn::ModelRequest;
    ///
    /// let model = GeminiModel::new("gemini-2.5-flash");
    /// let conversation = [Message::user("Weather in Oslo?")];
    /// let request = ModelRequest::new(&conversation).instructions("Be brief.");
    /// let sent: serde_json::Value = serde_json::from_slice(&model.request_body_bytes(&request)?)?;
    /// assert_eq!(sent, model.request_body(&request));
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn request_body_bytes(&self, request: &ModelRequest<'_>) -> Result<Vec<u8>, ModelError> {
        body_bytes(self, request)
    }

    fn body(&self, request: &ModelRequest<'_>) -> Body<Value> {
        // The instructions go first as a system message of the model's
        // own, joined with the conversation's own into
        // `systemInstruction`; the conversation itself is borrowed, not
        // copied.
        let lead = request.instructions.map(Message::system);
        let outgoing = Outgoing {
            lead: lead.as_ref(),
            rest: request.conversation,
        };
        // Thought signatures and provider parts go back only to the
        // endpoint and model they came from (see `wire::Target`).
        let exported = gemini::export_outgoing(outgoing, &self.target);
        let mut body = Map::new();
        body.insert("contents".into(), Value::Array(exported.contents));
        if let Some(system) = exported.system_instruction {
            body.insert("systemInstruction".into(), system);
        }
        if !request.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(gemini::export_tools(request.tools)),
            );
            if let Some(choice) = &self.settings.tool_choice {
                body.insert(
                    "toolConfig".into(),
                    json!({ "functionCallingConfig": function_calling_config(choice) }),
                );
            }
        }
        let mut generation = Map::new();
        if let Some(temperature) = self.settings.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_tokens) = self.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max_tokens));
        }
        let mut thinking = Map::new();
        if let Some(budget) = self.thinking_budget {
            thinking.insert("thinkingBudget".into(), json!(budget));
        }
        if let Some(level) = self.thinking_level {
            thinking.insert("thinkingLevel".into(), json!(level.as_str()));
        }
        if let Some(include) = self.include_thoughts {
            thinking.insert("includeThoughts".into(), json!(include));
        }
        if !thinking.is_empty() {
            generation.insert("thinkingConfig".into(), Value::Object(thinking));
        }
        if let Some(output) = request.output {
            generation.insert("responseMimeType".into(), json!("application/json"));
            // The subset Gemini documents; the answer is checked against
            // the full schema.
            generation.insert(
                "responseJsonSchema".into(),
                output_schema::gemini(output.schema()),
            );
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        self.settings.merge_extra(&mut body);
        Body::new(body, Vec::new(), exported.dropped, 0)
    }
}

fn strip_models_prefix(model: String) -> String {
    match model.strip_prefix("models/") {
        Some(rest) => rest.to_owned(),
        None => model,
    }
}

fn function_calling_config(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({ "mode": "AUTO" }),
        ToolChoice::None => json!({ "mode": "NONE" }),
        ToolChoice::Required => json!({ "mode": "ANY" }),
        ToolChoice::Tool(name) => json!({ "mode": "ANY", "allowedFunctionNames": [name] }),
    }
}

impl Provider for GeminiModel {
    const FORMAT: WireFormat = FORMAT;
    type Stream = ChunkAssembler;
    type View<'r> = Value;

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn body(&self, request: &ModelRequest<'_>) -> Body<Value> {
        GeminiModel::body(self, request)
    }

    fn url(&self) -> String {
        if self.settings.stream {
            format!(
                "{}/v1beta/models/{}:streamGenerateContent?alt=sse",
                self.base_url, self.model
            )
        } else {
            format!(
                "{}/v1beta/models/{}:generateContent",
                self.base_url, self.model
            )
        }
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert("x-goog-api-key", secret_header(FORMAT, key, "")?);
        }
        Ok(headers)
    }

    fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
        gemini::parse_response(body)
    }

    type Response = Value;

    fn read_response(body: Value) -> Result<ModelResponse, Unread> {
        Self::parse_response(&body).map_err(Unread::Wire)
    }
}

impl StreamAssembler for ChunkAssembler {
    /// Gemini's stream has no end marker: it ends with the body.
    fn read_event(
        &mut self,
        _event: &str,
        data: &str,
    ) -> Result<(Vec<StreamDelta>, bool), WireError> {
        Ok((self.push(data)?, false))
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        ChunkAssembler::finish(self)
    }

    fn is_whole(&self) -> bool {
        ChunkAssembler::is_whole(self)
    }
}

#[async_trait]
impl Model for GeminiModel {
    /// The model's name and [`WireFormat::Gemini`](agent_loop_core::conversation::WireFormat::Gemini).
    fn description(&self) -> agent_loop_core::turn::ModelDescription {
        agent_loop_core::turn::ModelDescription::new(
            self.model.clone(),
            agent_loop_core::conversation::WireFormat::Gemini,
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

    #[test]
    fn from_env_names_what_is_missing() {
        let error = GeminiModel::from_lookup(|_| None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "set GEMINI_MODEL and GEMINI_API_KEY (or GOOGLE_API_KEY)"
        );
        let model = GeminiModel::from_lookup(|name| match name {
            "GEMINI_MODEL" => Some("models/gemini-2.5-flash".into()),
            "GOOGLE_API_KEY" => Some("google-key".into()),
            "GEMINI_API_KEY" => Some("gemini-key".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(model.base_url, DEFAULT_BASE_URL);
        assert_eq!(model.model, "gemini-2.5-flash");
        assert_eq!(model.api_key.unwrap().expose_secret(), "google-key");
        let proxy = GeminiModel::from_lookup(|name| match name {
            "GEMINI_MODEL" => Some("m".into()),
            "GEMINI_BASE_URL" => Some("http://127.0.0.1:9/".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            proxy.url(),
            "http://127.0.0.1:9/v1beta/models/m:generateContent"
        );
        assert_eq!(
            proxy.stream(true).url(),
            "http://127.0.0.1:9/v1beta/models/m:streamGenerateContent?alt=sse"
        );
    }
}
