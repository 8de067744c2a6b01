//! [`HttpModel`]: the surface the four HTTP models share, written once
//! over a provider type ([`Provider`]) that holds what differs: its
//! defaults, its own settings, its body, checks, URL and parser (its own
//! setters are on its alias).

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::body::{Body, StreamAssembler};
use super::error::EnvError;
use super::http::{ApiKey, Transport, secret_header};
use super::{Effort, Settings, ToolChoice, env_var};
use crate::wire::decode::Unread;
use crate::wire::{Target, WireError};
use agent_loop_core::conversation::{ModelResponse, WireFormat};
use agent_loop_core::support::redact::redact_url;
use agent_loop_core::turn::{ModelError, ModelRequest};

/// A model behind a provider's HTTP API: the model name, the server, the
/// key, the settings every provider takes and the transport, over a
/// provider type `P` that holds the provider's own settings. It is used
/// through its aliases, one per provider:
///
/// | model | provider type | API | feature |
/// | --- | --- | --- | --- |
/// | [`OpenAiModel`] | `OpenAiChat` | OpenAI Chat Completions, and every server that speaks it | `openai` |
/// | [`OpenAiResponsesModel`] | `OpenAiResponses` | the OpenAI Responses API | `openai` |
/// | [`AnthropicModel`] | `Anthropic` | Anthropic Messages | `anthropic` |
/// | [`GeminiModel`] | `Gemini` | Gemini's native API (`generateContent`) | `gemini` |
///
/// The methods of every provider (constructors, the server, the key, the
/// settings of every day, the transport, the request body) are written
/// once, here; each alias's page lists them with its own (an output cap,
/// reasoning or thinking settings), and says what its body holds. A
/// method that differs by provider says how in a table.
///
/// Code written over [`Provider`] works with any of them:
///
/// ```
/// use agent_loop_core::conversation::Message;
/// use agent_loop_core::turn::ModelRequest;
/// use agent_loop_providers::model::{HttpModel, Provider};
///
/// /// The body `model` would send for one question.
/// fn body_for<P: Provider>(model: &HttpModel<P>, question: &str) -> serde_json::Value {
///     let conversation = [Message::user(question)];
///     model.request_body(&ModelRequest::new(&conversation))
/// }
/// # #[cfg(feature = "openai")]
/// # assert_eq!(
/// #     body_for(&agent_loop_providers::model::OpenAiModel::new("m"), "Hi")["messages"][0]["content"],
/// #     "Hi"
/// # );
/// ```
///
/// `Debug` prints the model under its alias's name (`OpenAiModel { .. }`),
/// the base URL without userinfo or query (which may hold credentials)
/// and the key as `<redacted>`.
///
// A model whose feature is off is no link target: its name then links to
// the module, whose first lines say which feature brings it.
#[cfg_attr(feature = "openai", doc = "[`OpenAiModel`]: super::OpenAiModel")]
#[cfg_attr(not(feature = "openai"), doc = "[`OpenAiModel`]: super")]
#[cfg_attr(
    feature = "openai",
    doc = "[`OpenAiResponsesModel`]: super::OpenAiResponsesModel"
)]
#[cfg_attr(not(feature = "openai"), doc = "[`OpenAiResponsesModel`]: super")]
#[cfg_attr(
    feature = "anthropic",
    doc = "[`AnthropicModel`]: super::AnthropicModel"
)]
#[cfg_attr(not(feature = "anthropic"), doc = "[`AnthropicModel`]: super")]
#[cfg_attr(feature = "gemini", doc = "[`GeminiModel`]: super::GeminiModel")]
#[cfg_attr(not(feature = "gemini"), doc = "[`GeminiModel`]: super")]
#[derive(Clone)]
pub struct HttpModel<P> {
    pub(super) endpoint: Endpoint,
    pub(super) settings: Settings,
    pub(super) transport: Transport,
    /// The provider's own settings.
    pub(super) provider: P,
}

/// Where a model's requests go: the model name, the server and the key.
#[derive(Clone)]
pub(super) struct Endpoint {
    pub(super) model: String,
    pub(super) base_url: String,
    /// Where requests go, for the exports and the origins recorded on
    /// answers: made from `base_url` and `model` whenever either is set.
    pub(super) target: Target,
    pub(super) api_key: Option<ApiKey>,
}

impl Endpoint {
    fn new(model: String, base_url: String) -> Self {
        Self {
            target: endpoint_target(&base_url, &model),
            model,
            base_url,
            api_key: None,
        }
    }

    fn set_base_url(&mut self, base_url: String) {
        self.base_url = base_url;
        self.target = endpoint_target(&self.base_url, &self.model);
    }

    fn set_model(&mut self, model: String) {
        self.model = model;
        self.target = endpoint_target(&self.base_url, &self.model);
    }
}

/// The export target of a model at `base_url` named `model`: the
/// provider is the URL's host, with its port when the URL gives one
/// (`api.deepseek.com`, `127.0.0.1:8080`), lower-case; unknown when the URL
/// does not parse (the request then fails on it anyway).
pub(super) fn endpoint_target(base_url: &str, model: &str) -> Target {
    let provider = reqwest::Url::parse(base_url).ok().and_then(|url| {
        let host = url.host_str()?.to_ascii_lowercase();
        Some(match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        })
    });
    let mut target = Target::new().model(model);
    target.provider = provider;
    target
}

/// A provider an [`HttpModel`] speaks to: `OpenAiChat`, `OpenAiResponses`
/// (feature `openai`), `Anthropic` (feature `anthropic`) or `Gemini`
/// (feature `gemini`). A bound for code written over any HTTP model (see
/// [`HttpModel`]'s example).
///
/// Sealed: the send path it backs (the body, the checks, the headers, the
/// parser and the stream assembler of one wire format) is this crate's
/// own, so no other type implements it, and a new hook of it is no
/// breaking change. (A provider here is an API's family; the host a
/// request goes to, which `wire::Target::provider` names, is another
/// thing.)
///
/// A type of yours cannot be one:
///
/// ```compile_fail
/// #[derive(Clone, Debug)]
/// struct Mine;
///
/// impl agent_loop_providers::model::Provider for Mine {}
/// ```
// `ProviderApi` is crate-private on purpose: it names crate-private types
// (`Body`, `StreamAssembler`, `Unread`), and being unnameable outside the
// crate is what seals this trait. The bound is what `private_bounds` warns
// about.
#[allow(private_bounds)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a provider of an HTTP model",
    label = "the providers are `OpenAiChat`, `OpenAiResponses` (feature `openai`), `Anthropic` (`anthropic`) and `Gemini` (`gemini`)"
)]
pub trait Provider: ProviderApi + Clone + fmt::Debug + Send + Sync + 'static {}

/// What one provider gives the shared surface and the shared send path:
/// its defaults, its format, endpoint, headers, body, checks, parser and
/// stream assembler.
#[diagnostic::on_unimplemented(
    message = "`Provider` is sealed: `{Self}` cannot be a provider of an HTTP model",
    label = "the providers are `OpenAiChat`, `OpenAiResponses`, `Anthropic` and `Gemini`, this crate's own"
)]
pub(crate) trait ProviderApi: Sized {
    /// The name `Debug` prints for its model: the alias (`OpenAiModel`).
    const DEBUG_NAME: &'static str;

    /// The format of its bodies, answers and errors.
    const FORMAT: WireFormat;

    /// The official endpoint: the base URL of a new model.
    const DEFAULT_BASE_URL: &'static str;

    /// The prefix of the variables `from_env` reads (`OPENAI` for
    /// `OPENAI_MODEL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`).
    const ENV_PREFIX: &'static str;

    /// How an [`EnvError`] names the missing key (or what stands for it).
    const ENV_KEY_HINT: &'static str;

    /// The header the key goes in, lower-case.
    const KEY_HEADER: &'static str;

    /// What precedes the key in [`KEY_HEADER`](Self::KEY_HEADER)
    /// (`"Bearer "`), or nothing.
    const KEY_SCHEME: &'static str = "";

    /// Headers every request carries, before the key's (a version).
    const FIXED_HEADERS: &'static [(&'static str, &'static str)] = &[];

    /// Its streamed answer, read event by event.
    type Stream: StreamAssembler + Send;

    /// A body field a [`Body`] writes from a view of the request (its
    /// conversation, its tools), serialised straight into the bytes sent;
    /// `Value` for a model whose fields are all `Value`s.
    type View<'r>: Serialize
    where
        Self: 'r;

    /// The serde type `parse_response` reads a body into first, which an
    /// answer's bytes are read into straight away.
    type Response: DeserializeOwned;

    /// Its own settings, none set (or at the API's required default).
    fn unset() -> Self;

    /// The model name as sent, from the one given to `new` or `model`.
    fn sent_model(model: String) -> String {
        model
    }

    /// The variables `from_env` reads the key from, the first one set
    /// winning; `None`: `{ENV_PREFIX}_API_KEY` alone.
    const KEY_VARIABLES: Option<&'static [&'static str]> = None;

    /// Writes its own settings into its model's `Debug`, between the key
    /// and the shared settings.
    fn debug_fields(&self, out: &mut fmt::DebugStruct<'_, '_>);

    /// The largest output it asks for: the setting's name as the crate
    /// spells it and its value, when set (checked against the catalog's
    /// largest output of the model).
    fn max_output_tokens(&self) -> Option<(&'static str, u32)> {
        None
    }

    /// Keeps `effort` as its reasoning setting ([`HttpModel::effort`]);
    /// its body sends it in its own form and its `check` refuses what it
    /// cannot send.
    fn set_effort(&mut self, effort: Effort);

    /// Refuses, unsent, a request the provider would refuse; none by
    /// default.
    fn check(_model: &HttpModel<Self>, _request: &ModelRequest<'_>) -> Result<(), ModelError> {
        Ok(())
    }

    /// The request body for `request`, and what its export left out.
    fn body<'r>(model: &'r HttpModel<Self>, request: &ModelRequest<'r>) -> Body<Self::View<'r>>;

    /// The URL requests are posted to.
    fn url(model: &HttpModel<Self>) -> String;

    /// Reads an unstreamed answer: the format's `parse_response`.
    fn parse_response(body: &Value) -> Result<ModelResponse, WireError>;

    /// The rest of `parse_response`, for a body read into
    /// [`Response`](Self::Response) straight from its text: the error
    /// `parse_response` gives too, or [`Unread::Again`] for a part of it
    /// that did not read, which `parse_response` then reports.
    fn read_response(response: Self::Response) -> Result<ModelResponse, Unread>;
}

/// What a model's `from_env` reads: the model name, and a key or a base
/// URL (a local server needs no key; the official endpoint needs no URL).
struct EnvEndpoint {
    model: String,
    api_key: Option<ApiKey>,
    base_url: Option<String>,
}

impl EnvEndpoint {
    /// Reads `{PREFIX}_MODEL`, the key (`{PREFIX}_API_KEY`, or the first
    /// of `key_variables` that is set) and `{PREFIX}_BASE_URL` through
    /// `lookup` (blank counts as unset); `key_hint` is how the error names
    /// the missing key.
    fn read(
        lookup: impl Fn(&str) -> Option<String>,
        prefix: &str,
        key_variables: Option<&[&str]>,
        key_hint: &str,
    ) -> Result<Self, EnvError> {
        let model = lookup(&format!("{prefix}_MODEL"));
        let api_key = match key_variables {
            Some(variables) => variables.iter().find_map(|variable| lookup(variable)),
            None => lookup(&format!("{prefix}_API_KEY")),
        };
        let base_url = lookup(&format!("{prefix}_BASE_URL"));
        let mut variables = Vec::new();
        if model.is_none() {
            variables.push(format!("{prefix}_MODEL"));
        }
        if api_key.is_none() && base_url.is_none() {
            variables.push(key_hint.to_owned());
        }
        match model {
            Some(model) if variables.is_empty() => Ok(Self {
                model,
                api_key: api_key.map(ApiKey::new),
                base_url,
            }),
            _ => Err(EnvError { variables }),
        }
    }
}

impl<P: Provider> HttpModel<P> {
    /// The model `model` at the provider's official endpoint, with no key:
    /// set one with [`api_key`](Self::api_key), or another server with
    /// [`base_url`](Self::base_url).
    ///
    /// | model | e.g. | official endpoint |
    /// | --- | --- | --- |
    /// | `OpenAiModel` | `gpt-4.1`, `deepseek-chat` | `https://api.openai.com/v1` |
    /// | `OpenAiResponsesModel` | `gpt-5`, `gpt-4.1` | `https://api.openai.com/v1` |
    /// | `AnthropicModel` | `claude-sonnet-4-5` | `https://api.anthropic.com` |
    /// | `GeminiModel` | `gemini-2.5-flash` (a `models/` prefix is taken off) | `https://generativelanguage.googleapis.com` |
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            endpoint: Endpoint::new(P::sent_model(model.into()), P::DEFAULT_BASE_URL.to_owned()),
            settings: Settings::default(),
            transport: Transport::new(P::FORMAT),
            provider: P::unset(),
        }
    }

    /// A model configured from the environment: the model name (required),
    /// a key and a base URL, at least one of the two (a local server or a
    /// proxy may need no key; the official endpoint does). A blank
    /// variable counts as unset.
    ///
    /// | model | model name | key | base URL |
    /// | --- | --- | --- | --- |
    /// | `OpenAiModel`, `OpenAiResponsesModel` | `OPENAI_MODEL` | `OPENAI_API_KEY` | `OPENAI_BASE_URL` |
    /// | `AnthropicModel` | `ANTHROPIC_MODEL` | `ANTHROPIC_API_KEY` | `ANTHROPIC_BASE_URL` |
    /// | `GeminiModel` | `GEMINI_MODEL` | `GOOGLE_API_KEY` or `GEMINI_API_KEY` (`GOOGLE_API_KEY` wins when both are set, as in Google's own SDKs) | `GEMINI_BASE_URL` |
    ///
    /// # Errors
    ///
    /// An [`EnvError`] naming what to set (e.g. `set OPENAI_MODEL and
    /// OPENAI_API_KEY (or OPENAI_BASE_URL for a server without keys)`).
    pub fn from_env() -> Result<Self, EnvError> {
        Self::from_lookup(env_var)
    }

    /// [`from_env`](Self::from_env), reading each variable through
    /// `lookup`.
    pub(super) fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, EnvError> {
        let env = EnvEndpoint::read(lookup, P::ENV_PREFIX, P::KEY_VARIABLES, P::ENV_KEY_HINT)?;
        let mut this = Self::new(env.model);
        this.endpoint.api_key = env.api_key;
        if let Some(base_url) = env.base_url {
            this = this.base_url(base_url);
        }
        Ok(this)
    }

    /// The server's base URL (a trailing `/` is taken off):
    ///
    /// | model | base URL (default) | requests go to |
    /// | --- | --- | --- |
    /// | `OpenAiModel` | up to and including `/v1` (`https://api.openai.com/v1`) | `{base_url}/chat/completions` |
    /// | `OpenAiResponsesModel` | up to and including `/v1` (`https://api.openai.com/v1`) | `{base_url}/responses` |
    /// | `AnthropicModel` | without `/v1` (`https://api.anthropic.com`) | `{base_url}/v1/messages` |
    /// | `GeminiModel` | without `/v1beta` (`https://generativelanguage.googleapis.com`) | `{base_url}/v1beta/models/{model}:generateContent`, or `:streamGenerateContent?alt=sse` when [streaming](Self::stream) |
    ///
    /// Credentials in it (`https://user:pass@proxy/…`, `?key=…`) are
    /// sent but never shown: tracing fields and `Debug` print it without
    /// userinfo and query.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.endpoint
            .set_base_url(base_url.into().trim_end_matches('/').to_owned());
        self
    }

    /// The API key. Without one, no key header is sent.
    ///
    /// | model | sent as |
    /// | --- | --- |
    /// | `OpenAiModel`, `OpenAiResponsesModel` | `Authorization: Bearer <key>` |
    /// | `AnthropicModel` | `x-api-key` (every request also carries `anthropic-version: 2023-06-01`) |
    /// | `GeminiModel` | `x-goog-api-key`, never in the URL |
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.endpoint.api_key = Some(key.into());
        self
    }

    /// The model name: sent as `model` (OpenAI, Anthropic), or in the URL
    /// (Gemini, which takes a `models/` prefix off).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.endpoint.set_model(P::sent_model(model.into()));
        self
    }

    /// How much the model reasons before it answers: one [`Effort`] on
    /// every model, sent in the form its provider takes. A level the
    /// provider has no name for is refused before any request, with a
    /// [`ModelError`] of kind [`Request`](agent_loop_core::turn::ModelErrorKind::Request) naming
    /// the setting, the model and what it takes instead.
    ///
    /// | model | sent as | `None` | `Minimal` | `Low` … `High` | `XHigh` | `Max` |
    /// | --- | --- | --- | --- | --- | --- | --- |
    /// | `OpenAiModel` | `reasoning_effort` | `"none"` | `"minimal"` | as named | `"xhigh"` | `"max"` |
    /// | `OpenAiResponsesModel` | `reasoning.effort` | `"none"` | `"minimal"` | as named | `"xhigh"` | `"max"` |
    /// | `AnthropicModel`, adaptive models (Opus and Sonnet 4.6, Opus 4.7 and later, Claude 5) | `thinking: {"type": "adaptive"}`, `output_config.effort` | `thinking: {"type": "disabled"}` | refused | as named | `"xhigh"` | `"max"` |
    /// | `AnthropicModel`, 4.5 and older | `thinking: {"type": "enabled", "budget_tokens"}`, a share of `max_tokens` | `thinking: {"type": "disabled"}` | refused | 1/4, 1/2, 3/4 | 7/8 | 15/16 |
    /// | `GeminiModel`, Gemini 3 and later | `thinkingConfig.thinkingLevel` | refused | `MINIMAL` | `LOW`, `MEDIUM`, `HIGH` | refused | refused |
    /// | `GeminiModel`, Gemini 2.5 | `thinkingConfig.thinkingBudget` | `0` (refused on 2.5 Pro) | refused | 1024, 8192, 24576 | refused | refused |
    ///
    /// Where the levels come from: OpenAI's `ReasoningEffort` (its OpenAPI
    /// description); Anthropic's `OutputConfigParam.effort` and
    /// `ThinkingConfigDisabledParam` (anthropics/anthropic-sdk-python) and
    /// its "Adaptive thinking" and "Effort" guides (see
    /// `AnthropicModel`'s "Thinking and sampling by model"); Gemini's
    /// `ThinkingLevel` (googleapis/python-genai, `MINIMAL` to `HIGH`; Gemini
    /// 3 Pro cannot turn thinking off) and, for Gemini 2.5's budgets, the
    /// mapping of `reasoning_effort` in Google's "OpenAI compatibility"
    /// guide (`low` 1,024, `medium` 8,192, `high` 24,576 tokens, `none` 0;
    /// 2.5 Pro cannot turn thinking off). A Gemini model is read as 2.5
    /// when its name starts `gemini-2.5`; as one without thinking (any
    /// effort refused) when it starts `gemini-1.`, `gemini-2.0` or
    /// `gemma-`; every other one as Gemini 3.
    ///
    /// The setters of one provider's own form stay:
    /// `OpenAiModel::reasoning_effort` is this setting under OpenAI's
    /// name, `AnthropicModel::thinking_budget` replaces it (the last one
    /// set is sent), and `GeminiModel::thinking_budget` and
    /// `thinking_level`, when set, are sent instead of it.
    ///
    /// ```
    /// # #[cfg(all(feature = "openai", feature = "gemini"))] {
    /// use agent_loop_core::conversation::Message;
    /// use agent_loop_core::turn::ModelRequest;
    /// use agent_loop_providers::model::{Effort, GeminiModel, OpenAiResponsesModel};
    /// use serde_json::json;
    ///
    /// let conversation = [Message::user("Plan the trip.")];
    /// let request = ModelRequest::new(&conversation);
    /// let body = OpenAiResponsesModel::new("gpt-5.2").effort(Effort::High).request_body(&request);
    /// assert_eq!(body["reasoning"]["effort"], "high");
    /// let body = GeminiModel::new("gemini-3-flash").effort(Effort::High).request_body(&request);
    /// assert_eq!(body["generationConfig"]["thinkingConfig"], json!({ "thinkingLevel": "HIGH" }));
    /// # }
    /// ```
    pub fn effort(mut self, effort: Effort) -> Self {
        self.provider.set_effort(effort);
        self
    }

    /// The model's facts (its context window, largest output, prices, …),
    /// in place of what the [model catalog](crate::catalog) holds for it:
    /// for a model the catalog does not know (a local server's), or your
    /// own prices.
    ///
    /// What the model reads of them: a request whose output limit
    /// (`max_tokens`, `max_output_tokens`) is above
    /// [`ModelFacts::max_output_tokens`](crate::catalog::ModelFacts::max_output_tokens)
    /// is refused before sending, with a [`ModelError`] of kind
    /// [`Request`](agent_loop_core::turn::ModelErrorKind::Request).
    pub fn facts(mut self, facts: crate::catalog::ModelFacts) -> Self {
        self.settings.facts = Some(Box::new(facts));
        self
    }

    /// The facts this model goes by: those given with
    /// [`facts`](Self::facts), else the built-in catalog's entry for the
    /// model at its endpoint, when the endpoint is the provider's own
    /// (`api.openai.com`, `api.anthropic.com`,
    /// `generativelanguage.googleapis.com`, and DeepSeek's, Mistral's,
    /// xAI's and Groq's for the OpenAI formats) and the catalog holds the
    /// model by its exact id; else `None` (a proxy, a local server, an
    /// unknown model), and nothing is checked against them.
    ///
    /// ```
    /// # #[cfg(feature = "anthropic")] {
    /// use agent_loop_providers::model::AnthropicModel;
    ///
    /// let opus = AnthropicModel::new("claude-opus-4-7");
    /// assert_eq!(opus.catalog_facts().and_then(|facts| facts.context_window), Some(1_000_000));
    /// let local = AnthropicModel::new("claude-opus-4-7").base_url("http://127.0.0.1:8080");
    /// assert!(local.catalog_facts().is_none());
    /// # }
    /// ```
    pub fn catalog_facts(&self) -> Option<&crate::catalog::ModelFacts> {
        if let Some(facts) = &self.settings.facts {
            return Some(facts);
        }
        let host = self.endpoint.target.host()?;
        let provider = super::catalog_checks::catalog_provider(P::FORMAT, host)?;
        crate::catalog::Catalog::builtin_facts(provider, &self.endpoint.model)
    }

    /// The sampling temperature: `temperature` (OpenAI, Anthropic), or
    /// `generationConfig.temperature` (Gemini).
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.settings.temperature = Some(temperature);
        self
    }

    /// Which tool the model must call; sent only when the mode has tools.
    ///
    /// | model | sent as |
    /// | --- | --- |
    /// | `OpenAiModel`, `OpenAiResponsesModel` | `tool_choice`: `"auto"`, `"none"`, `"required"`, or the function |
    /// | `AnthropicModel` | `tool_choice`: `{"type": "auto"}`, `"none"`, `"any"`, or `"tool"` with its name |
    /// | `GeminiModel` | `toolConfig.functionCallingConfig`: `AUTO`, `NONE`, `ANY`, or `ANY` with `allowedFunctionNames` |
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.settings.tool_choice = Some(choice);
        self
    }

    /// Whether the model may ask for several calls at once (OpenAI
    /// `parallel_tool_calls`, Anthropic
    /// `tool_choice.disable_parallel_tool_use`); sent only when the
    /// mode has tools. Unset: the provider's default (allowed). Gemini
    /// has no such setting: for a `GeminiModel` it is not sent.
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.settings.parallel_tool_calls = Some(parallel);
        self
    }

    /// A top-level body field for anything vendor-specific
    /// (`top_p`, `seed`, `metadata`, `service_tier`, …), written
    /// last: it replaces a field this model sets itself, and
    /// `serde_json::Value::Null` removes one (Mistral answers 422
    /// and xAI 400 to the `stream_options` a streamed Chat
    /// Completions request carries: `.extra("stream_options",
    /// Value::Null)`). Repeat for several fields.
    ///
    /// A `value` nested deeper than 128 levels (only code builds
    /// one) is dropped here, without recursion, and every request
    /// of the model then fails with
    /// [`ModelErrorKind::Request`](crate::model::ModelErrorKind::Request)
    /// naming the field, unsent.
    pub fn extra(mut self, field: impl Into<String>, value: Value) -> Self {
        self.settings.set_extra(field.into(), value);
        self
    }

    /// Stream the response (server-sent events): its text and
    /// reasoning go out as
    /// [`TurnEvent::TextDelta`](agent_loop_core::turn::TurnEvent::TextDelta)
    /// and [`ReasoningDelta`](agent_loop_core::turn::TurnEvent::ReasoningDelta)
    /// as they arrive, and the assembled response is what the
    /// unstreamed request returns. Off by default.
    pub fn stream(mut self, stream: bool) -> Self {
        self.settings.stream = stream;
        self
    }

    /// Refuse a request whose conversation holds what this model's
    /// format cannot carry (see [`wire::Dropped`](crate::wire::Dropped):
    /// reasoning, provider parts and extras of another provider's
    /// format, images where the format takes none), with
    /// [`ModelErrorKind::Request`](crate::model::ModelErrorKind::Request)
    /// naming each, unsent. Off by default: the request goes out
    /// without them and one `tracing` warning per request names
    /// what was left out (kinds and places, never content).
    pub fn refuse_dropped(mut self, refuse: bool) -> Self {
        self.settings.refuse_dropped = refuse;
        self
    }

    /// The timeout of each attempt (120 s by default): unstreamed,
    /// until the whole answer is read; streamed, until the headers
    /// and then between two pieces of the body (an event, or a
    /// keep-alive comment such as OpenRouter's `: OPENROUTER
    /// PROCESSING`, so a long-thinking stream is not cut). Once
    /// the stream has said why the model stopped, 2 s without an
    /// event (or this timeout, if shorter) end it with the whole
    /// answer: servers that never send `[DONE]` or `message_stop`
    /// and hold the connection open cost neither the timeout nor
    /// the answer. A timeout before any response
    /// arrived (connecting, the headers, a whole unstreamed
    /// answer) is retried like a connection error, and the retry
    /// has twice the time (at most 8 times this timeout); a stream
    /// that stalls once its events began is not retried.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.transport.timeout = timeout;
        self
    }

    /// Retries after a retryable failure (3 by default; 0 sends
    /// once), a stream's error before its content included: a
    /// request makes at most this many attempts plus one.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.transport.max_retries = retries;
        self
    }

    /// The backoff between retries: from `min` (500 ms by default),
    /// doubling, at most `max` (8 s by default), with jitter. A
    /// server's `Retry-After` replaces it.
    pub fn backoff(mut self, min: Duration, max: Duration) -> Self {
        self.transport.min_backoff = min;
        self.transport.max_backoff = max.max(min);
        self
    }

    /// The request body this model sends for `request`. It shows what
    /// would be sent, unchecked: a request
    /// [`request_body_bytes`](Self::request_body_bytes) refuses still has
    /// a body here.
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        self.body(request).value()
    }

    /// The request body for `request`, and what its export left out.
    pub(super) fn body<'r>(&'r self, request: &ModelRequest<'r>) -> Body<P::View<'r>> {
        P::body(self, request)
    }

    /// The URL requests are posted to.
    pub(super) fn url(&self) -> String {
        P::url(self)
    }

    /// The headers every request carries: the provider's fixed ones, then
    /// the key's.
    pub(super) fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        for (name, value) in P::FIXED_HEADERS {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        if let Some(key) = &self.endpoint.api_key {
            headers.insert(P::KEY_HEADER, secret_header(P::FORMAT, key, P::KEY_SCHEME)?);
        }
        Ok(headers)
    }
}

/// The model under its alias's name: the base URL without userinfo or
/// query (which may hold credentials), the key as `<redacted>`.
impl<P: Provider> fmt::Debug for HttpModel<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct(P::DEBUG_NAME);
        out.field("model", &self.endpoint.model)
            .field("base_url", &redact_url(&self.endpoint.base_url))
            .field("api_key", &self.endpoint.api_key);
        self.provider.debug_fields(&mut out);
        out.field("settings", &self.settings)
            .field("transport", &self.transport)
            .finish()
    }
}

/// The surface every provider shares, over all four from one table: what
/// each one's `Debug` prints, the headers and URL it sends, how it reads
/// its environment, and its model names.
#[cfg(test)]
mod tests {
    use super::*;

    /// One row: a provider's model, made as a user makes it, and what it
    /// must give.
    struct Row<P> {
        model: HttpModel<P>,
        debug_name: &'static str,
        url: &'static str,
        /// The headers sent, with the key `sk-test`.
        headers: &'static [(&'static str, &'static str)],
        /// The environment that configures it, and the model name read.
        env: &'static [(&'static str, &'static str)],
        /// What `from_env` asks for with nothing set.
        env_missing: &'static str,
    }

    fn check<P: Provider>(row: Row<P>) {
        let with_query = row
            .model
            .clone()
            .base_url("https://proxy.local/x?key=SECRET");
        assert!(!format!("{with_query:?}").contains("SECRET"));
        let model = row
            .model
            .base_url("https://user:PASS@proxy.local/x/")
            .api_key("sk-test");
        let shown = format!("{model:?}");
        assert!(
            shown.starts_with(&format!("{} {{ model: ", row.debug_name)),
            "{shown}"
        );
        for secret in ["sk-test", "PASS"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert_eq!(
            model.url(),
            row.url.replace("{base}", "https://user:PASS@proxy.local/x")
        );
        let headers = model.headers().expect("valid headers");
        let sent: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.to_str().unwrap_or("<not text>")))
            .collect();
        assert_eq!(sent, row.headers, "{}", row.debug_name);

        let env = row.env;
        let from_env = HttpModel::<P>::from_lookup(|variable| {
            env.iter()
                .find(|(name, _)| *name == variable)
                .map(|(_, value)| (*value).to_owned())
        })
        .expect("configured");
        assert_eq!(from_env.endpoint.model, "m-1");
        assert_eq!(
            from_env
                .endpoint
                .api_key
                .as_ref()
                .map(ApiKey::expose_secret),
            Some("k-first")
        );
        let missing = HttpModel::<P>::from_lookup(|_| None).expect_err("nothing set");
        assert_eq!(missing.to_string(), row.env_missing);
    }

    #[cfg(feature = "openai")]
    #[test]
    fn openai_chat_and_responses() {
        use super::super::{OpenAiModel, OpenAiResponsesModel};
        let env = &[("OPENAI_MODEL", "m-1"), ("OPENAI_API_KEY", "k-first")];
        let missing =
            "set OPENAI_MODEL and OPENAI_API_KEY (or OPENAI_BASE_URL for a server without keys)";
        let headers = &[("authorization", "Bearer sk-test")];
        check(Row {
            model: OpenAiModel::new("gpt-4.1"),
            debug_name: "OpenAiModel",
            url: "{base}/chat/completions",
            headers,
            env,
            env_missing: missing,
        });
        check(Row {
            model: OpenAiResponsesModel::new("gpt-5"),
            debug_name: "OpenAiResponsesModel",
            url: "{base}/responses",
            headers,
            env,
            env_missing: missing,
        });
    }

    #[cfg(feature = "anthropic")]
    #[test]
    fn anthropic() {
        check(Row {
            model: super::super::AnthropicModel::new("claude-sonnet-4-5"),
            debug_name: "AnthropicModel",
            url: "{base}/v1/messages",
            headers: &[
                ("anthropic-version", "2023-06-01"),
                ("x-api-key", "sk-test"),
            ],
            env: &[("ANTHROPIC_MODEL", "m-1"), ("ANTHROPIC_API_KEY", "k-first")],
            env_missing: "set ANTHROPIC_MODEL and ANTHROPIC_API_KEY",
        });
    }

    #[cfg(feature = "gemini")]
    #[test]
    fn gemini() {
        use super::super::GeminiModel;
        check(Row {
            model: GeminiModel::new("models/gemini-2.5-flash"),
            debug_name: "GeminiModel",
            url: "{base}/v1beta/models/gemini-2.5-flash:generateContent",
            headers: &[("x-goog-api-key", "sk-test")],
            // GOOGLE_API_KEY wins over GEMINI_API_KEY, as in Google's SDKs.
            env: &[
                ("GEMINI_MODEL", "models/m-1"),
                ("GOOGLE_API_KEY", "k-first"),
                ("GEMINI_API_KEY", "k-second"),
            ],
            env_missing: "set GEMINI_MODEL and GEMINI_API_KEY (or GOOGLE_API_KEY)",
        });
        // `model` strips the prefix as `new` does.
        let renamed = GeminiModel::new("x").model("models/gemini-2.5-pro");
        assert_eq!(renamed.endpoint.model, "gemini-2.5-pro");
    }
}
