//! Which OpenAI models take function tools on Chat Completions: the
//! crate's own table, keyed by model family and version, each row citing
//! where it comes from.
//!
//! A model id is read as OpenAI spells them, `gpt-{major}[.{minor}]` and
//! anything after a `-` (`gpt-5.4-mini`, `gpt-5.6-terra`,
//! `gpt-6-sol-2026-09-01`), behind a proxy's prefix up to the last `/`
//! (`openai/gpt-5.6`). A model no row names (another family, a fine-tune's
//! `ft:` id, a version before the table's) takes tools as it always did:
//! nothing is refused on guesswork.
//!
//! The rules hold on OpenAI's own endpoints: `api.openai.com`, and Azure
//! OpenAI (`*.openai.azure.com`, `*.cognitiveservices.azure.com`), whose
//! models answer alike, though only where the request names the model by
//! its id (an Azure deployment named otherwise is not recognised). A proxy
//! or a compatible server answers for itself. Versions the reports do not
//! name (`gpt-5.7`, `gpt-6.1`) are not refused: a later model may change
//! the rule again.

use crate::model::Effort;

/// When a model takes function tools on `/v1/chat/completions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChatTools {
    /// With `reasoning_effort` unset or `"none"`; with any other level the
    /// API answers 400 ("Function tools with reasoning_effort are not
    /// supported for gpt-5.4 in /v1/chat/completions. Please use
    /// /v1/responses instead.").
    UnlessReasoning,
    /// Only with `reasoning_effort` set to `"none"`: the model reasons by
    /// default, so a request without the field is answered 400 too ("To
    /// use function tools, use /v1/responses or set reasoning_effort to
    /// 'none'.").
    OnlyWithoutReasoning,
}

/// One row: the rule and where it comes from.
#[derive(Debug)]
pub(super) struct Row {
    pub(super) rule: ChatTools,
    pub(super) source: &'static str,
}

const GPT_5_4: Row = Row {
    rule: ChatTools::UnlessReasoning,
    source: "OpenAI's 400 for gpt-5.4 and gpt-5.5 (pipecat-ai/pipecat #4043, \
             openai/openai-openapi #541, dotnet/extensions #7407)",
};

const GPT_5_6: Row = Row {
    rule: ChatTools::OnlyWithoutReasoning,
    source: "OpenAI's 400 for gpt-5.6 and gpt-6 with the model's default reasoning \
             (BerriAI/litellm PR #34569, danny-avila/LibreChat #14231, onyx-dot-app/onyx #15008)",
};

/// The row of `model`, when the table names it.
pub(super) fn row(model: &str) -> Option<&'static Row> {
    let id = model.rsplit('/').next().unwrap_or(model);
    let version = id.strip_prefix("gpt-")?;
    let version = version.split('-').next().unwrap_or(version);
    let (major, minor) = match version.split_once('.') {
        Some((major, minor)) => (major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?),
        None => (version.parse::<u32>().ok()?, 0),
    };
    // Only the versions the reports name: a later one may change again.
    match (major, minor) {
        (5, 4 | 5) => Some(&GPT_5_4),
        (5, 6) | (6, 0) => Some(&GPT_5_6),
        _ => None,
    }
}

/// `true` when `host` (a base URL's host, without its port) is one of
/// OpenAI's own endpoints, where the table holds.
pub(super) fn is_openai_host(host: &str) -> bool {
    host == "api.openai.com"
        || host.ends_with(".openai.azure.com")
        || host.ends_with(".cognitiveservices.azure.com")
}

/// Why `model` refuses function tools with `effort` on Chat Completions,
/// or `None` when it takes them.
pub(super) fn refusal(model: &str, effort: Option<Effort>) -> Option<String> {
    let row = row(model)?;
    let refused = match row.rule {
        ChatTools::UnlessReasoning => !matches!(effort, None | Some(Effort::None)),
        ChatTools::OnlyWithoutReasoning => effort != Some(Effort::None),
    };
    if !refused {
        return None;
    }
    let effort = match effort {
        Some(effort) => format!("reasoning_effort \"{}\"", effort.as_str()),
        None => "its default reasoning".to_owned(),
    };
    Some(format!(
        "{model} takes no function tools on Chat Completions with {effort}: the API answers \
         400 ({}); use OpenAiResponsesModel, or set effort(Effort::None)",
        row.source
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_through_suffixes_and_prefixes() {
        for model in [
            "gpt-5.4",
            "gpt-5.4-mini",
            "gpt-5.5-2026-04-23",
            "openai/gpt-5.5",
        ] {
            assert_eq!(
                row(model).map(|row| row.rule),
                Some(ChatTools::UnlessReasoning),
                "{model}"
            );
        }
        for model in ["gpt-5.6", "gpt-5.6-terra", "gpt-6-sol", "azure/gpt-6-astra"] {
            assert_eq!(
                row(model).map(|row| row.rule),
                Some(ChatTools::OnlyWithoutReasoning),
                "{model}"
            );
        }
        for model in [
            "gpt-5",
            "gpt-5.2",
            "gpt-4.1",
            "gpt-4o-mini",
            "o3",
            "ft:gpt-5.6:acme",
            "gpt-x",
            "gpt-5.7",
            "gpt-5.10",
            "gpt-6.1",
            "gpt-7",
            "chatgpt-4o-latest",
        ] {
            assert!(row(model).is_none(), "{model}");
        }
    }

    #[test]
    fn the_rules_refuse_what_the_api_answers_400() {
        assert!(refusal("gpt-5.4", None).is_none());
        assert!(refusal("gpt-5.4", Some(Effort::None)).is_none());
        assert!(refusal("gpt-5.4", Some(Effort::Low)).is_some());
        assert!(refusal("gpt-5.6-sol", Some(Effort::None)).is_none());
        assert_eq!(
            refusal("gpt-5.6-sol", None)
                .as_deref()
                .map(|text| text.split(':').next()),
            Some(Some(
                "gpt-5.6-sol takes no function tools on Chat Completions with its default reasoning"
            ))
        );
        assert!(refusal("gpt-6-sol", Some(Effort::High)).is_some());
        assert!(refusal("gpt-4.1", Some(Effort::High)).is_none());
        assert!(is_openai_host("api.openai.com"));
        assert!(is_openai_host("acme.openai.azure.com"));
        assert!(!is_openai_host("openrouter.ai"));
        assert!(!is_openai_host("127.0.0.1"));
    }
}
