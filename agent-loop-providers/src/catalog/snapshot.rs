//! The built-in snapshot: `data/models.json`, embedded in the crate and
//! parsed once, on first use.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::facts::ModelFacts;

/// Provider → model id → facts.
pub(super) type Models = BTreeMap<String, BTreeMap<String, ModelFacts>>;

/// The snapshot scripts/refresh-models writes from models.dev's data.
pub(super) const SNAPSHOT: &str = include_str!("../../data/models.json");

/// The file's shape: its header (`source`, `package`, `license`, `units`)
/// is for a reader and not read here; `models` is one [`ModelFacts`] per
/// model.
#[derive(Deserialize)]
struct Snapshot {
    models: Vec<ModelFacts>,
}

/// The models of a snapshot's JSON, by provider and id.
pub(super) fn parse(json: &str) -> Result<Models, serde_json::Error> {
    let snapshot: Snapshot = serde_json::from_str(json)?;
    let mut models = Models::new();
    for facts in snapshot.models {
        models
            .entry(facts.provider.clone())
            .or_default()
            .insert(facts.id.clone(), facts);
    }
    Ok(models)
}

/// The built-in models, parsed on first use. A snapshot that does not
/// parse (a unit test parses this one, so a released crate never has one)
/// gives no models, with a warning, rather than a panic.
pub(super) fn builtin() -> &'static Models {
    static BUILTIN: OnceLock<Models> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        parse(SNAPSHOT).unwrap_or_else(|error| {
            tracing::warn!(%error, "the model catalog's snapshot does not parse; it is empty");
            Models::new()
        })
    })
}

/// No models: what [`Catalog::empty`](super::Catalog::empty) starts from.
pub(super) static EMPTY: Models = Models::new();
