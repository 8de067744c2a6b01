//! [`AnthropicModel`]: Anthropic Messages.

use serde_json::{Map, Value, json};

use super::body::{Body, FieldView, PLACEHOLDER, StreamAssembler};
use super::error::HttpModelError;
use super::http_model::{HttpModel, Provider, ProviderApi};
use super::{Effort, ToolChoice, inexpressible_output};
use crate::wire::WireError;
use crate::wire::anthropic::{self, MessageParam, Role, ToolsView};
use crate::wire::decode::{Moving, Unread};
use crate::wire::encode::to_value;
use crate::wire::outgoing::Outgoing;
use crate::wire::output_schema;
use crate::wire::stream::StreamDelta;
use crate::wire::stream::anthropic::EventAssembler;
use agent_loop_core::conversation::{Message, ModelResponse, WireFormat};
use agent_loop_core::turn::{ModelError, ModelErrorKind};
use agent_loop_core::turn::{ModelRequest, ToolList};

mod families;

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
/// use agent_loop_providers::model::AnthropicModel;
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
/// that are set; then the [`extra`](AnthropicModel::extra) fields. The
/// key goes as `x-api-key`, with `anthropic-version: 2023-06-01`. A request with a
/// native [`output`](ModelRequest::output) adds Anthropic's documented
/// structured-outputs field, `output_config: {"format": {"type":
/// "json_schema", "schema": ...}}`, its schema the subset Anthropic accepts
/// ([`output_schema::anthropic`](crate::wire::output_schema::anthropic));
/// an output Anthropic cannot express is refused, unsent, with a
/// [`ModelError`] of kind [`Request`](ModelErrorKind::Request).
///
/// # Effort on Claude
///
/// [`effort`](HttpModel::effort) sets how much Claude thinks, as an
/// [`Effort`] level, sent in the form the model takes (see
/// [Thinking and sampling by model](AnthropicModel#thinking-and-sampling-by-model)).
/// It replaces a [`thinking_budget`](AnthropicModel::thinking_budget) set before
/// it: one thinking setting, the last one set. `Effort::None` turns
/// thinking off (`thinking: {"type": "disabled"}`,
/// `ThinkingConfigDisabledParam`); `Effort::Minimal` has no Claude level
/// and is refused.
///
/// ```
/// use agent_loop_core::conversation::Message;
/// use agent_loop_providers::model::{AnthropicModel, Effort};
/// use agent_loop_core::turn::ModelRequest;
/// use serde_json::json;
///
/// let conversation = [Message::user("Plan the migration.")];
/// let request = ModelRequest::new(&conversation);
///
/// // Claude 5, Opus 4.7 and later, Opus and Sonnet 4.6: adaptive.
/// let body = AnthropicModel::new("claude-opus-4-7")
///     .effort(Effort::High)
///     .request_body(&request);
/// assert_eq!(body["thinking"], json!({ "type": "adaptive" }));
/// assert_eq!(body["output_config"], json!({ "effort": "high" }));
///
/// // 4.5 and older: a budget, three quarters of max_tokens for High.
/// let body = AnthropicModel::new("claude-sonnet-4-5")
///     .effort(Effort::High)
///     .request_body(&request);
/// assert_eq!(body["thinking"], json!({ "type": "enabled", "budget_tokens": 3072 }));
/// assert_eq!(body.get("output_config"), None);
/// ```
///
/// **The adaptive form** goes to every model that takes it (and to a
/// model the table does not name): `thinking: {"type": "adaptive"}`
/// and `output_config: {"effort": "<level>"}`, no `budget_tokens`
/// (`ThinkingConfigAdaptiveParam` and `OutputConfigParam` of
/// anthropics/anthropic-sdk-python,
/// `src/anthropic/types/thinking_config_adaptive_param.py` and
/// `src/anthropic/types/output_config_param.py`; a native
/// [`output`](ModelRequest::output)'s `format` goes into the same
/// `output_config`). Claude decides per request whether and how much
/// to think (Anthropic's "Adaptive thinking" guide). The API answers
/// 400 to a [`temperature`](AnthropicModel::temperature) other than `1.0` in
/// this mode ("`temperature` may only be set to 1 when thinking is
/// enabled or in adaptive mode"), so that is refused before sending;
/// forced tool use is allowed (Anthropic's "Thinking in tool and
/// multi-turn workflows": "adaptive thinking supports forced tool
/// use"; the recorded `ant_opus46_effort_tool` request, adaptive with
/// `tool_choice: {"type": "any"}`, was answered). Claude may skip
/// thinking before a tool call (that recording's answer is a
/// `tool_use` alone), so a history whose last tool use has no
/// thinking block is sent with `thinking` on, unlike with a budget.
///
/// **The budget form** goes to the models that take only it (4.5 and
/// older answer the adaptive form 400): `thinking: {"type":
/// "enabled", "budget_tokens"}` with a share of
/// [`max_tokens`](AnthropicModel::max_tokens), at least 1024 tokens, and no
/// `output_config.effort` (of these models only Opus 4.5 takes one,
/// Anthropic's "Effort" guide says, so one form serves them all):
///
/// | effort | `budget_tokens` | with `max_tokens` 4096 (the default) | with `max_tokens` 16000 |
/// | --- | --- | --- | --- |
/// | `Low` | 1/4 of `max_tokens` | 1024 | 4000 |
/// | `Medium` | 1/2 | 2048 | 8000 |
/// | `High` | 3/4 | 3072 | 12000 |
/// | `XHigh` | 7/8 | 3584 | 14000 |
/// | `Max` | 15/16 | 3840 | 15000 |
///
/// So `effort` works on every model, and a budget is always within
/// the API's rules (at least 1024, less than `max_tokens`) when
/// `max_tokens` is above 1024; at 1024 or below no budget fits and the
/// request is refused, naming the setting. The other rules of
/// [`thinking_budget`](AnthropicModel::thinking_budget) (temperature, forced
/// tool use) hold as for any budget.
///
/// Every refusal is a [`ModelError`] of kind
/// [`Request`](ModelErrorKind::Request), before anything is sent.
///
/// # Thinking and sampling by model
///
/// Claude models differ in the thinking they take and in whether they take
/// sampling settings. The crate keeps its own table, keyed by family and
/// version as the model id names them (`claude-opus-4-7`,
/// `claude-sonnet-5`, `claude-fable-5-1`, `claude-3-7-sonnet-20250219`;
/// a cloud's or a proxy's prefix such as `anthropic.` or `anthropic/`, a
/// dotted `4.7`, an `@date` or `:0` suffix are read through):
///
/// | models | thinking they take | `temperature` other than 1.0 (and `top_p`, `top_k`) | source |
/// | --- | --- | --- | --- |
/// | Claude 5: `claude-{opus,sonnet,haiku,fable,mythos}-5`, and `-5-1`, `-5-5`, … | adaptive only ([`effort`](HttpModel::effort)); [`thinking_budget`](AnthropicModel::thinking_budget) is refused | refused | Anthropic's "Adaptive thinking" guide; the migration guide (Sonnet 5: "sampling parameters removed") |
/// | Opus 4.7 and later 4.x: `claude-opus-4-7`, `claude-opus-4-8` | adaptive only; `thinking_budget` is refused | refused | Anthropic's "Extended thinking" guide ("Claude 4.7 and later models do not support it"); the migration guide (Opus 4.7) |
/// | Opus 4.6, Sonnet 4.6 | both; `effort` goes adaptive, `thinking_budget` as a budget (deprecated) | sent | Anthropic's "Adaptive thinking" guide |
/// | 4.5 and older: `claude-{opus,sonnet,haiku}-4-5`, `-4-1`, `-4-0`, `-4`, `claude-3-7-sonnet` | the budget only; `effort` goes as a budget | sent | Anthropic's "Adaptive thinking" guide ("older models … require `thinking.type: \"enabled\"` with `budget_tokens`") |
/// | Claude 3 before Sonnet 3.7: `claude-3-5-*`, `claude-3-opus`, `claude-3-haiku`, … | none: `effort` (but `Effort::None`, sent as nothing) and `thinking_budget` are refused | sent | Anthropic's "Extended thinking" guide (its supported models begin with Claude Sonnet 3.7) |
/// | any other (`claude-mythos-preview`, a later generation, a proxy's own name) | unknown: `effort` goes adaptive, `thinking_budget` as a budget | sent | none: nothing is refused on guesswork |
///
/// The pages: <https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking>,
/// <https://platform.claude.com/docs/en/build-with-claude/extended-thinking>,
/// <https://platform.claude.com/docs/en/build-with-claude/effort> and
/// <https://platform.claude.com/docs/en/about-claude/models/migration-guide>;
/// the 400s are reported in docker/docker-agent #3381,
/// UKGovernmentBEIS/inspect_ai #3722, anomalyco/models.dev #3961 and
/// anomalyco/models.dev #1468. What a row refuses is refused before
/// anything is sent, with a [`ModelError`] of kind
/// [`Request`](ModelErrorKind::Request) whose message names the setting,
/// the model and what it takes instead:
///
/// ```
/// use agent_loop_core::conversation::Message;
/// use agent_loop_providers::model::{AnthropicModel, ModelErrorKind};
///
/// let conversation = [Message::user("Hello")];
/// let request = agent_loop_core::turn::ModelRequest::new(&conversation);
/// let error = AnthropicModel::new("claude-opus-4-7")
///     .temperature(0.2)
///     .request_body_bytes(&request)
///     .unwrap_err();
/// assert_eq!(error.kind, ModelErrorKind::Request);
/// assert!(error.to_string().contains("claude-opus-4-7 takes no sampling setting but the default, not temperature 0.2"));
/// ```
///
/// `top_p` and `top_k` have no setter here: set with
/// [`extra`](AnthropicModel::extra), a vendor field is sent as given
/// (whatever the model), and such a model answers 400 itself. Opus 4.7 has been
/// recorded returning a thinking block with empty text and only its
/// signature (`tests/fixtures/wire-real/anthropic-adaptive/`); such a
/// block goes back with its signature like any other.
pub type AnthropicModel = HttpModel<Anthropic>;

/// Anthropic's Messages API as an [`HttpModel`] speaks it: the provider
/// of [`AnthropicModel`], holding that model's own settings (see
/// [`max_tokens`](AnthropicModel::max_tokens),
/// [`thinking_budget`](AnthropicModel::thinking_budget) and
/// [`effort`](HttpModel::effort)). Made with the model:
/// [`AnthropicModel::new`].
#[derive(Clone, Debug)]
pub struct Anthropic {
    max_tokens: u32,
    /// [`thinking_budget`](AnthropicModel::thinking_budget) or
    /// [`effort`](HttpModel::effort), whichever was set last.
    thinking: Option<Thinking>,
}

/// The settings of the Messages API alone.
impl HttpModel<Anthropic> {
    /// The most tokens the answer may use (`max_tokens`, which the API
    /// requires; 4096 unless set). With thinking on, it includes the
    /// thinking.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.provider.max_tokens = max_tokens;
        self
    }

    /// Extended thinking with this many tokens at most (`thinking:
    /// {"type": "enabled", "budget_tokens"}`, the budget form). It replaces
    /// an [`effort`](Self::effort) set before it: one thinking setting,
    /// the last one set.
    ///
    /// The API's rules for extended thinking are checked before anything
    /// is sent; a request that breaks one fails with a [`ModelError`] of
    /// kind [`Request`](ModelErrorKind::Request) naming the rule (nothing
    /// is rewritten behind your back):
    ///
    /// - the model takes the budget form: Claude 5 and Opus 4.7 and later
    ///   answer it 400 and take [`effort`](Self::effort) instead (see
    ///   [Thinking and sampling by model](AnthropicModel#thinking-and-sampling-by-model));
    ///   Opus 4.6 and Sonnet 4.6 take it, deprecated,
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
        self.provider.thinking = Some(Thinking::Budget(budget_tokens));
        self
    }

    /// The thinking this model sends: its setting in the form the model
    /// takes (see [`effort`](Self::effort)).
    fn sent_thinking(&self) -> Option<SentThinking> {
        Some(match self.provider.thinking? {
            Thinking::Budget(budget) => SentThinking::Budget(budget),
            // A model without extended thinking answers any `thinking`
            // 400: off is what it is anyway.
            Thinking::Effort(Effort::None)
                if families::row(&self.endpoint.model)
                    .is_some_and(|row| row.forms == families::Forms::None) =>
            {
                return None;
            }
            Thinking::Effort(Effort::None) => SentThinking::Disabled,
            // No Claude level: refused by `check_settings`, sent as nothing.
            Thinking::Effort(Effort::Minimal) => return None,
            Thinking::Effort(effort) if families::takes_adaptive(&self.endpoint.model) => {
                SentThinking::Adaptive(effort)
            }
            Thinking::Effort(effort) => {
                SentThinking::Budget(families::effort_budget(effort, self.provider.max_tokens))
            }
        })
    }

    /// Refuses a request the API answers 400 for its settings: a thinking
    /// form or a sampling setting the model does not take (see
    /// [Thinking and sampling by model](AnthropicModel#thinking-and-sampling-by-model)),
    /// or one that breaks the rules of thinking (see
    /// [`thinking_budget`](Self::thinking_budget) and
    /// [`effort`](Self::effort)). Rewriting it would send what the caller
    /// did not ask for.
    fn check_settings(&self, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        let refuse = |message: String| {
            Err(ModelError::of_format(FORMAT, ModelErrorKind::Request).with_message(message))
        };
        let model = &self.endpoint.model;
        let row = families::row(model);
        if self.provider.thinking == Some(Thinking::Effort(Effort::Minimal)) {
            return refuse(format!(
                "{model} takes effort Low, Medium, High, XHigh or Max (Anthropic's \
                 output_config.effort levels), or None to turn thinking off, not Effort::Minimal; \
                 set Effort::Low"
            ));
        }
        if let (Some(row), Some(Thinking::Budget(budget))) = (row, self.provider.thinking)
            && row.forms == families::Forms::Adaptive
        {
            return refuse(format!(
                "{model} takes adaptive thinking only, not thinking_budget {budget}: the API answers a \
                 budget (thinking type \"enabled\") with 400 on it ({}); set effort(Effort::…) instead",
                row.source
            ));
        }
        if let (Some(row), Some(thinking)) = (row, self.provider.thinking)
            && row.forms == families::Forms::None
            && thinking != Thinking::Effort(Effort::None)
        {
            let setting = match thinking {
                Thinking::Budget(budget) => format!("thinking_budget {budget}"),
                Thinking::Effort(effort) => format!("effort(Effort::{effort:?})"),
            };
            return refuse(format!(
                "{model} takes no extended thinking, not {setting}: the API answers any thinking \
                 setting with 400 on it ({}); leave thinking unset, or use Claude Sonnet 3.7 or later",
                row.source
            ));
        }
        // Unset is the default, and so is 1.0 (the API's documented one).
        let temperature = self.settings.temperature.filter(|&t| t != 1.0);
        if let (Some(row), Some(temperature)) = (row, temperature)
            && row.refuses_sampling
        {
            return refuse(format!(
                "{model} takes no sampling setting but the default, not temperature {temperature}: \
                 the API answers temperature, top_p or top_k set otherwise with 400 on it ({}); \
                 leave temperature unset (or 1.0) and steer the model with effort",
                row.source
            ));
        }
        let budget = match (self.provider.thinking, self.sent_thinking()) {
            (_, None | Some(SentThinking::Disabled)) => return Ok(()),
            (_, Some(SentThinking::Adaptive(effort))) => {
                // "`temperature` may only be set to 1 when thinking is
                // enabled or in adaptive mode" (the API's 400).
                return match temperature {
                    Some(temperature) => refuse(format!(
                        "temperature {temperature} is not allowed with adaptive thinking \
                         (effort(Effort::{effort:?})): leave it unset or set 1.0"
                    )),
                    None => Ok(()),
                };
            }
            (Some(Thinking::Effort(effort)), Some(SentThinking::Budget(budget))) => {
                if self.provider.max_tokens <= MIN_THINKING_BUDGET {
                    return refuse(format!(
                        "effort(Effort::{effort:?}) goes to {model} as a thinking budget, at least \
                         {MIN_THINKING_BUDGET} tokens and less than max_tokens {}: set max_tokens \
                         above {MIN_THINKING_BUDGET}",
                        self.provider.max_tokens
                    ));
                }
                budget
            }
            (_, Some(SentThinking::Budget(budget))) => budget,
        };
        if budget < MIN_THINKING_BUDGET {
            return refuse(format!(
                "thinking_budget {budget} is below the API's minimum of {MIN_THINKING_BUDGET} tokens"
            ));
        }
        if budget >= self.provider.max_tokens {
            return refuse(format!(
                "thinking_budget {budget} must be less than max_tokens {}",
                self.provider.max_tokens
            ));
        }
        if let Some(temperature) = temperature {
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

/// How much Claude thinks, as the caller set it: the last of
/// [`AnthropicModel::thinking_budget`] and [`HttpModel::effort`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Thinking {
    Budget(u32),
    Effort(Effort),
}

/// A [`Thinking`] in the form the model takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SentThinking {
    /// `thinking: {"type": "disabled"}`: [`Effort::None`].
    Disabled,
    /// `thinking: {"type": "enabled", "budget_tokens"}`.
    Budget(u32),
    /// `thinking: {"type": "adaptive"}`, `output_config.effort`.
    Adaptive(Effort),
}

impl Provider for Anthropic {}

impl ProviderApi for Anthropic {
    const DEBUG_NAME: &'static str = "AnthropicModel";
    const FORMAT: WireFormat = FORMAT;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const ENV_PREFIX: &'static str = "ANTHROPIC";
    const ENV_KEY_HINT: &'static str = "ANTHROPIC_API_KEY";
    const KEY_HEADER: &'static str = "x-api-key";
    const FIXED_HEADERS: &'static [(&'static str, &'static str)] =
        &[("anthropic-version", API_VERSION)];
    type Stream = EventAssembler;
    type View<'r> = RequestView<'r>;
    type Response = anthropic::RawResponse;

    fn unset() -> Self {
        Self {
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking: None,
        }
    }

    fn debug_fields(&self, out: &mut std::fmt::DebugStruct<'_, '_>) {
        out.field("max_tokens", &self.max_tokens)
            .field("thinking", &self.thinking);
    }

    fn max_output_tokens(&self) -> Option<(&'static str, u32)> {
        Some(("max_tokens", self.max_tokens))
    }

    fn set_effort(&mut self, effort: Effort) {
        self.thinking = Some(Thinking::Effort(effort));
    }

    fn check(model: &AnthropicModel, request: &ModelRequest<'_>) -> Result<(), ModelError> {
        if let Some(output) = request.output
            && let Err(problem) = output_schema::anthropic(output.schema())
        {
            return Err(inexpressible_output(
                FORMAT,
                &problem,
                "ask for this output with OutputMode::Tool",
            ));
        }
        model.check_settings(request)
    }

    fn body<'r>(model: &'r AnthropicModel, request: &ModelRequest<'r>) -> Body<RequestView<'r>> {
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
        let exported = anthropic::export_outgoing(outgoing, &model.endpoint.target);
        let mut body = Map::new();
        body.insert("model".into(), json!(model.endpoint.model));
        body.insert("max_tokens".into(), json!(model.provider.max_tokens));
        if let Some(system) = &exported.system {
            body.insert("system".into(), to_value(system));
        }
        let sent = model.sent_thinking();
        // Asked only with a budget: without thinking, a tool use without a
        // thinking block is what every request of a tool loop holds, and
        // in adaptive mode Claude itself may skip thinking before a tool
        // call (see `effort`).
        let replayable = !matches!(sent, Some(SentThinking::Budget(_)))
            || thinking_replayable(&exported.messages);
        body.insert("messages".into(), PLACEHOLDER);
        let mut views = vec![("messages", FieldView::Conversation(exported.messages))];
        if !request.tools.is_empty() {
            body.insert("tools".into(), PLACEHOLDER);
            views.push(("tools", FieldView::Tools(ToolsView(request.tools))));
            let parallel = model.settings.parallel_tool_calls;
            if model.settings.tool_choice.is_some() || parallel.is_some() {
                let choice = model
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
        let mut output_config = Map::new();
        if let Some(output) = request.output {
            // Anthropic's structured outputs (GA): the answer's text is
            // JSON that passes the schema. The subset it accepts is sent;
            // the answer is checked against the full schema. (An
            // inexpressible one is refused in `check`: shown here as is.)
            let sent = output_schema::anthropic(output.schema()).ok();
            let schema = sent.as_ref().unwrap_or(output.schema());
            output_config.insert(
                "format".into(),
                json!({ "type": "json_schema", "schema": schema }),
            );
        }
        if let Some(SentThinking::Adaptive(effort)) = sent {
            output_config.insert("effort".into(), json!(effort.as_str()));
        }
        if !output_config.is_empty() {
            body.insert("output_config".into(), Value::Object(output_config));
        }
        if let Some(temperature) = model.settings.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        match sent {
            Some(SentThinking::Budget(budget)) if replayable => {
                body.insert(
                    "thinking".into(),
                    json!({ "type": "enabled", "budget_tokens": budget }),
                );
            }
            Some(SentThinking::Adaptive(_)) => {
                body.insert("thinking".into(), json!({ "type": "adaptive" }));
            }
            Some(SentThinking::Disabled) => {
                body.insert("thinking".into(), json!({ "type": "disabled" }));
            }
            _ => {}
        }
        if model.settings.stream {
            body.insert("stream".into(), json!(true));
        }
        model.settings.merge_extra(&mut body);
        Body::new(body, views, exported.dropped, 0)
    }

    fn url(model: &AnthropicModel) -> String {
        format!("{}/v1/messages", model.endpoint.base_url)
    }

    fn parse_response(body: &Value) -> Result<ModelResponse, WireError> {
        anthropic::parse_response(body)
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use agent_loop_core::conversation::{
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
        use crate::wire::decode::testing::repeated_key;
        use agent_loop_core::conversation::{
            Extras, ImagePart, ProviderPart, TextPart, UserMessage,
        };
        use agent_loop_core::tool::ToolInfo;

        let extras =
            |fields: Value| Extras::new(FORMAT, fields.as_object().cloned().unwrap_or_default());
        let mut system = agent_loop_core::conversation::SystemMessage::new("rules");
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
        let exported = anthropic::export_messages_for(&conversation, &model.endpoint.target);
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
    fn effort_goes_in_the_form_the_model_takes() {
        let conversation = [Message::user("go")];
        let request = ModelRequest::new(&conversation);
        for model in [
            "claude-opus-4-7",
            "claude-sonnet-5",
            "claude-opus-4-6",
            "claude",
        ] {
            let body = AnthropicModel::new(model)
                .effort(Effort::XHigh)
                .request_body(&request);
            assert_eq!(body["thinking"], json!({ "type": "adaptive" }), "{model}");
            assert_eq!(
                body["output_config"],
                json!({ "effort": "xhigh" }),
                "{model}"
            );
        }
        let body = AnthropicModel::new("claude-haiku-4-5")
            .max_tokens(16_000)
            .effort(Effort::Low)
            .request_body(&request);
        assert_eq!(
            body["thinking"],
            json!({ "type": "enabled", "budget_tokens": 4000 })
        );
        assert_eq!(body.get("output_config"), None);
    }

    #[test]
    fn the_last_thinking_setting_decides() {
        let conversation = [Message::user("go")];
        let request = ModelRequest::new(&conversation);
        let model = AnthropicModel::new("claude-opus-4-6");
        let budget = model
            .clone()
            .effort(Effort::Max)
            .thinking_budget(2048)
            .request_body(&request);
        assert_eq!(
            budget["thinking"],
            json!({ "type": "enabled", "budget_tokens": 2048 })
        );
        assert_eq!(budget.get("output_config"), None);
        let effort = model
            .thinking_budget(2048)
            .effort(Effort::Max)
            .request_body(&request);
        assert_eq!(effort["thinking"], json!({ "type": "adaptive" }));
        assert_eq!(effort["output_config"], json!({ "effort": "max" }));
    }

    #[test]
    fn effort_and_a_native_output_share_output_config() {
        let output = agent_loop_core::turn::Output::from_schema(
            "n",
            "A number.",
            json!({
                "type": "object",
                "properties": { "n": { "type": "integer" } },
                "required": ["n"],
                "additionalProperties": false
            }),
        )
        .unwrap();
        let conversation = [Message::user("go")];
        let request = ModelRequest::new(&conversation).output(&output);
        let model = AnthropicModel::new("claude-sonnet-5").effort(Effort::Medium);
        let body = model.request_body(&request);
        assert_eq!(body["output_config"]["effort"], "medium");
        assert_eq!(body["output_config"]["format"]["type"], "json_schema");
        let sent: Value =
            serde_json::from_slice(&model.request_body_bytes(&request).unwrap()).unwrap();
        assert_eq!(sent, body);
    }

    #[test]
    fn adaptive_thinking_stays_on_when_the_last_tool_use_has_no_thinking() {
        // In adaptive mode Claude may call a tool without thinking first,
        // so such a history is what the API itself answers with.
        let conversation = tool_loop(None);
        let request = ModelRequest::new(&conversation);
        let model = AnthropicModel::new("claude-opus-4-6").effort(Effort::High);
        assert_eq!(
            warnings(|| drop(model.body(&request))),
            Vec::<String>::new()
        );
        let body = model.request_body(&request);
        assert_eq!(body["thinking"], json!({ "type": "adaptive" }));
        // The budget form goes without `thinking` for that request.
        let budget = AnthropicModel::new("claude-sonnet-4-5").effort(Effort::High);
        assert_eq!(budget.request_body(&request).get("thinking"), None);
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
        assert_eq!(model.endpoint.base_url, DEFAULT_BASE_URL);
        assert_eq!(model.provider.max_tokens, DEFAULT_MAX_TOKENS);
    }
}
