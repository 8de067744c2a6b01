//! [`GeminiModel`]: Gemini's native API (`generateContent`).

use serde_json::{Map, Value, json};

use super::body::{Body, StreamAssembler};
use super::http_model::{HttpModel, Provider, ProviderApi};
use super::{Effort, ToolChoice};
use crate::wire::WireError;
use crate::wire::decode::Unread;
use crate::wire::gemini;
use crate::wire::outgoing::Outgoing;
use crate::wire::output_schema;
use crate::wire::stream::StreamDelta;
use crate::wire::stream::gemini::ChunkAssembler;
use crate::wire::tool_schema;
use agent_loop_core::conversation::{Message, ModelResponse, WireFormat};
use agent_loop_core::turn::{ModelError, ModelErrorKind, ModelRequest};

use super::error::HttpModelError;

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
/// `:streamGenerateContent?alt=sse` when [streaming](GeminiModel::stream)).
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
/// [`tool_choice`](GeminiModel::tool_choice) is set (`AUTO`, `NONE`, `ANY`, or
/// `ANY` with `allowedFunctionNames` for one tool), and `generationConfig`
/// with the settings that are set (`temperature`, `maxOutputTokens`,
/// `thinkingConfig`); then the [`extra`](GeminiModel::extra) fields. The
/// key goes in the `x-goog-api-key` header, never in the URL. A request with a
/// native [`output`](ModelRequest::output) adds Gemini's structured output,
/// `generationConfig.responseMimeType: "application/json"` and
/// `responseJsonSchema`: the subset of JSON Schema Gemini documents
/// ([`output_schema::gemini`](crate::wire::output_schema::gemini)). Gemini has no setting for
/// parallel calls: [`parallel_tool_calls`](GeminiModel::parallel_tool_calls) is
/// not sent.
pub type GeminiModel = HttpModel<Gemini>;

/// Gemini's native API as an [`HttpModel`] speaks it: the provider of
/// [`GeminiModel`], holding that model's own settings (see
/// [`max_tokens`](GeminiModel::max_tokens),
/// [`thinking_budget`](GeminiModel::thinking_budget),
/// [`thinking_level`](GeminiModel::thinking_level) and
/// [`include_thoughts`](GeminiModel::include_thoughts)). Made with the
/// model: [`GeminiModel::new`].
#[derive(Clone, Debug)]
pub struct Gemini {
    max_tokens: Option<u32>,
    effort: Option<Effort>,
    thinking_budget: Option<i32>,
    thinking_level: Option<ThinkingLevel>,
    include_thoughts: Option<bool>,
}

/// The settings of Gemini alone.
impl HttpModel<Gemini> {
    /// The most tokens the answer may use
    /// (`generationConfig.maxOutputTokens`).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.provider.max_tokens = Some(max_tokens);
        self
    }

    /// The thinking budget in tokens (`thinkingConfig.thinkingBudget`,
    /// Gemini 2.5): `0` turns thinking off, `-1` lets the model decide; the
    /// allowed range depends on the model.
    pub fn thinking_budget(mut self, budget_tokens: i32) -> Self {
        self.provider.thinking_budget = Some(budget_tokens);
        self
    }

    /// How much the model thinks (`thinkingConfig.thinkingLevel`, Gemini
    /// 3). Gemini refuses a request with both a level and a budget.
    pub fn thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.provider.thinking_level = Some(level);
        self
    }

    /// Whether the answer includes thought summaries
    /// (`thinkingConfig.includeThoughts`): they arrive as reasoning parts
    /// (and, streamed, as
    /// [`TurnEvent::ReasoningDelta`](agent_loop_core::turn::TurnEvent::ReasoningDelta)s).
    pub fn include_thoughts(mut self, include: bool) -> Self {
        self.provider.include_thoughts = Some(include);
        self
    }
}

/// [`Effort`] as `model` takes it: the `thinkingConfig` field and its
/// value, or why the model takes no such level (the table of
/// [`HttpModel::effort`]).
fn effort_thinking(model: &str, effort: Effort) -> Result<(&'static str, Value), String> {
    let without_thinking = ["gemini-1.", "gemini-2.0", "gemma-"]
        .iter()
        .any(|prefix| model.starts_with(prefix));
    if without_thinking {
        // Gemini 1.5 and 2.0 and the Gemma models take no thinkingConfig.
        return Err(format!(
            "{model} takes no thinking setting (thinking came with Gemini 2.5), not \
             Effort::{effort:?}; leave effort unset"
        ));
    }
    if model.starts_with("gemini-2.5") {
        // The budgets of `reasoning_effort` in Google's "OpenAI
        // compatibility" guide.
        return match effort {
            Effort::None if model.contains("pro") => Err(format!(
                "{model} cannot turn thinking off (its least budget is 128 tokens); set Effort::Low"
            )),
            Effort::None => Ok(("thinkingBudget", json!(0))),
            Effort::Low => Ok(("thinkingBudget", json!(1024))),
            Effort::Medium => Ok(("thinkingBudget", json!(8192))),
            Effort::High => Ok(("thinkingBudget", json!(24576))),
            other => Err(format!(
                "{model} takes a thinking budget, which effort None, Low, Medium and High map to (0, 1024, 8192, 24576 tokens), not Effort::{other:?}; set one of those or thinking_budget"
            )),
        };
    }
    let level = match effort {
        Effort::Minimal => ThinkingLevel::Minimal,
        Effort::Low => ThinkingLevel::Low,
        Effort::Medium => ThinkingLevel::Medium,
        Effort::High => ThinkingLevel::High,
        Effort::None => {
            return Err(format!(
                "{model} cannot turn thinking off: Gemini 3's least thinking level is MINIMAL; set Effort::Minimal"
            ));
        }
        other => {
            return Err(format!(
                "{model} takes thinking levels MINIMAL to HIGH, not Effort::{other:?}; set Effort::High"
            ));
        }
    };
    Ok(("thinkingLevel", json!(level.as_str())))
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

impl Gemini {
    /// The [`Effort`] sent to `model`, when it is set and neither a
    /// thinking budget nor a level is (which win over it).
    fn sent_effort(&self, model: &str) -> Option<Result<(&'static str, Value), String>> {
        if self.thinking_budget.is_some() || self.thinking_level.is_some() {
            return None;
        }
        Some(effort_thinking(model, self.effort?))
    }
}

impl Provider for Gemini {}

impl ProviderApi for Gemini {
    const DEBUG_NAME: &'static str = "GeminiModel";
    const FORMAT: WireFormat = FORMAT;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const ENV_PREFIX: &'static str = "GEMINI";
    const ENV_KEY_HINT: &'static str = "GEMINI_API_KEY (or GOOGLE_API_KEY)";
    const KEY_HEADER: &'static str = "x-goog-api-key";
    type Stream = ChunkAssembler;
    type View<'r> = Value;
    type Response = Value;

    fn unset() -> Self {
        Self {
            max_tokens: None,
            effort: None,
            thinking_budget: None,
            thinking_level: None,
            include_thoughts: None,
        }
    }

    /// A `models/` prefix is taken off: Google's `ListModels` names models
    /// `models/gemini-2.5-flash`, and the URL puts `models/` in itself.
    fn sent_model(model: String) -> String {
        strip_models_prefix(model)
    }

    /// The key is read from `GOOGLE_API_KEY`, else `GEMINI_API_KEY`: the
    /// order of Google's own SDKs.
    const KEY_VARIABLES: Option<&'static [&'static str]> =
        Some(&["GOOGLE_API_KEY", "GEMINI_API_KEY"]);

    fn debug_fields(&self, out: &mut std::fmt::DebugStruct<'_, '_>) {
        out.field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("thinking_level", &self.thinking_level)
            .field("include_thoughts", &self.include_thoughts)
            .field("effort", &self.effort);
    }

    fn max_output_tokens(&self) -> Option<(&'static str, u32)> {
        self.max_tokens.map(|tokens| ("max_tokens", tokens))
    }

    fn set_effort(&mut self, effort: Effort) {
        self.effort = Some(effort);
    }

    /// A tool's parameters Gemini would refuse and that cannot be repaired
    /// without loss ([`tool_schema::gemini`]) are refused unsent.
    fn check(model: &GeminiModel, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        if let Some(Err(refusal)) = model.provider.sent_effort(&model.endpoint.model) {
            return Err(ModelError::of_format(FORMAT, ModelErrorKind::Request)
                .with_message(format!("effort: {refusal}; the request was not sent")));
        }
        for info in request.tools.iter() {
            if let Err(refusal) = tool_schema::gemini(&info.parameters) {
                return Err(ModelError::of_format(FORMAT, ModelErrorKind::Request)
                    .with_message(format!(
                        "the parameters of tool `{}` cannot be sent to Gemini: {refusal}; the request was not sent",
                        info.name
                    ))
                    .with_source(refusal));
            }
        }
        Ok(())
    }

    fn body(model: &GeminiModel, request: &ModelRequest<'_>) -> Body<Value> {
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
        let exported = gemini::export_outgoing(outgoing, &model.endpoint.target);
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
            if let Some(choice) = &model.settings.tool_choice {
                body.insert(
                    "toolConfig".into(),
                    json!({ "functionCallingConfig": function_calling_config(choice) }),
                );
            }
        }
        let mut generation = Map::new();
        if let Some(temperature) = model.settings.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_tokens) = model.provider.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max_tokens));
        }
        let mut thinking = Map::new();
        if let Some(budget) = model.provider.thinking_budget {
            thinking.insert("thinkingBudget".into(), json!(budget));
        }
        if let Some(level) = model.provider.thinking_level {
            thinking.insert("thinkingLevel".into(), json!(level.as_str()));
        }
        if let Some(Ok((field, value))) = model.provider.sent_effort(&model.endpoint.model) {
            thinking.insert(field.into(), value);
        }
        if let Some(include) = model.provider.include_thoughts {
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
        model.settings.merge_extra(&mut body);
        Body::new(body, Vec::new(), exported.dropped, 0)
    }

    fn url(model: &GeminiModel) -> String {
        let (base_url, name) = (&model.endpoint.base_url, &model.endpoint.model);
        if model.settings.stream {
            format!("{base_url}/v1beta/models/{name}:streamGenerateContent?alt=sse")
        } else {
            format!("{base_url}/v1beta/models/{name}:generateContent")
        }
    }

    fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
        gemini::parse_response(body)
    }

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
        assert_eq!(model.endpoint.base_url, DEFAULT_BASE_URL);
        assert_eq!(model.endpoint.model, "gemini-2.5-flash");
        assert_eq!(
            model.endpoint.api_key.unwrap().expose_secret(),
            "google-key"
        );
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
