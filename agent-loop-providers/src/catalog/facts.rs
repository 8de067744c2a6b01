//! What the catalog knows of one model: [`ModelFacts`], its [`Prices`] and
//! its [`Status`], in models.dev's terms and units.

use serde::{Deserialize, Serialize};

/// What the catalog knows of one model of one provider: its limits in
/// tokens, its prices, and whether it reasons, calls tools and takes a
/// temperature.
///
/// Each field is the models.dev field of the same meaning (named in its
/// docs); models.dev's schema is `packages/core/src/schema.ts` of
/// anomalyco/models.dev. In the built-in snapshot a limit models.dev
/// gives as `0` (its "no limit applies", as for image models) is `None`.
///
/// The serde form is one line of the snapshot: the fields by these names,
/// a `None` left out.
///
/// An entry made in code starts from [`ModelFacts::new`] (every
/// capability `false`, every limit and price unknown) and sets what is
/// known; to change one fact of a built-in entry, clone it and set that
/// fact:
///
/// ```
/// use agent_loop_providers::catalog::{Catalog, ModelFacts, Prices};
///
/// let local = ModelFacts::new("vllm", "qwen3-32b")
///     .context_window(32_768)
///     .max_output_tokens(8_192)
///     .tool_call(true)
///     .reasoning(true)
///     .temperature(true)
///     .prices(Prices::new(0.0, 0.0));
/// assert_eq!(local.name, "qwen3-32b");
///
/// let catalog = Catalog::builtin();
/// let discounted = catalog
///     .get("openai", "gpt-5.4")
///     .map(|facts| facts.clone().prices(Prices::new(2.0, 12.0).cache_read(0.2)));
/// assert_eq!(discounted.and_then(|facts| facts.max_input_tokens), Some(922_000));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ModelFacts {
    /// The provider, as models.dev names it: `openai`, `anthropic`,
    /// `google` (the Gemini API), `amazon-bedrock`, … (the list is on
    /// [`Catalog::FIRST_PARTY`](super::Catalog::FIRST_PARTY) and in the
    /// module docs), or any name given in code.
    pub provider: String,
    /// The model id as the provider's API takes it (`claude-opus-4-7`,
    /// `gpt-5.4`, `anthropic.claude-opus-4-7` on Bedrock).
    pub id: String,
    /// The model's display name (models.dev's `name`: `Claude Opus 4.7`).
    pub name: String,
    /// models.dev's `family`, a grouping of its own (`claude-opus`,
    /// `gpt-mini`, `gemini-pro`); `None` where it gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The context window in tokens, prompt and output together
    /// (models.dev's `limit.context`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u32>,
    /// The largest prompt in tokens, where the provider caps it below the
    /// context window (models.dev's `limit.input`: 922,000 of GPT-5.4's
    /// 1,050,000); `None` where the prompt may take the whole window less
    /// the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u32>,
    /// The largest output of one response in tokens, reasoning included
    /// (models.dev's `limit.output`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// The prices per million tokens (models.dev's `cost`); `None` where
    /// it gives none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
    /// Whether the model reasons (thinks) before it answers (models.dev's
    /// `reasoning`).
    pub reasoning: bool,
    /// Whether the model takes tools (models.dev's `tool_call`).
    pub tool_call: bool,
    /// Whether the model takes a `temperature` (models.dev's
    /// `temperature`; `false` for GPT-5.4 and Claude Opus 4.7, whose APIs
    /// refuse one).
    pub temperature: bool,
    /// The release date as models.dev writes it: `YYYY-MM-DD`, or
    /// `YYYY-MM` where only the month is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_date: Option<String>,
    /// models.dev's `status`: `None` for a model in general availability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

impl ModelFacts {
    /// An entry for `id` of `provider`, named `id`, that knows nothing
    /// else yet: no limits, no prices, and `false` for reasoning, tool
    /// calls and temperature. Set what is known with the methods of the
    /// same names as the fields.
    pub fn new(provider: impl Into<String>, id: impl Into<String>) -> Self {
        let id = id.into();
        Self {
            provider: provider.into(),
            name: id.clone(),
            id,
            family: None,
            context_window: None,
            max_input_tokens: None,
            max_output_tokens: None,
            prices: None,
            reasoning: false,
            tool_call: false,
            temperature: false,
            release_date: None,
            status: None,
        }
    }

    /// The display name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The family (models.dev's grouping).
    #[must_use]
    pub fn family(mut self, family: impl Into<String>) -> Self {
        self.family = Some(family.into());
        self
    }

    /// The context window, in tokens.
    #[must_use]
    pub fn context_window(mut self, tokens: u32) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// The largest prompt, in tokens, where it is below the context window.
    #[must_use]
    pub fn max_input_tokens(mut self, tokens: u32) -> Self {
        self.max_input_tokens = Some(tokens);
        self
    }

    /// The largest output of one response, in tokens.
    #[must_use]
    pub fn max_output_tokens(mut self, tokens: u32) -> Self {
        self.max_output_tokens = Some(tokens);
        self
    }

    /// The prices per million tokens.
    #[must_use]
    pub fn prices(mut self, prices: Prices) -> Self {
        self.prices = Some(prices);
        self
    }

    /// Whether the model reasons.
    #[must_use]
    pub fn reasoning(mut self, reasoning: bool) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// Whether the model takes tools.
    #[must_use]
    pub fn tool_call(mut self, tool_call: bool) -> Self {
        self.tool_call = tool_call;
        self
    }

    /// Whether the model takes a temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: bool) -> Self {
        self.temperature = temperature;
        self
    }

    /// The release date, `YYYY-MM-DD` or `YYYY-MM`.
    #[must_use]
    pub fn release_date(mut self, date: impl Into<String>) -> Self {
        self.release_date = Some(date.into());
        self
    }

    /// The status (a model in general availability has none).
    #[must_use]
    pub fn status(mut self, status: Status) -> Self {
        self.status = Some(status);
        self
    }
}

pub use agent_loop_core::conversation::Prices;

/// Where a model is in its life, as models.dev's `status` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Status {
    /// An early preview (`alpha`).
    Alpha,
    /// A preview (`beta`).
    Beta,
    /// Deprecated: retired, or to be (`deprecated`).
    Deprecated,
}
