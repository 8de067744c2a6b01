//! Which request shapes a Claude model takes: the crate's own table, keyed
//! by model family and version, each row citing the page it comes from.
//!
//! A model id is read as Anthropic spells them: `claude-{family}-{major}`
//! with an optional `-{minor}` (`claude-opus-4-7`, `claude-sonnet-5`,
//! `claude-fable-5-1`), or, for the Claude 3 generation,
//! `claude-{major}[-{minor}]-{family}` (`claude-3-7-sonnet-20250219`). A
//! trailing date (`-20250929`) or alias (`-latest`) is no version. The id
//! may carry what a cloud or a proxy adds around it: a prefix up to
//! `claude-` (`anthropic.claude-opus-4-7`, `anthropic/claude-opus-4.7`, with
//! the version dotted), a Vertex `@date` or a Bedrock `:0`. The model ids
//! themselves are those of anthropics/anthropic-sdk-python's `Model`
//! (`src/anthropic/types/model.py`).
//!
//! A model no row names (another family, an alias without a version such
//! as `claude-mythos-preview`, a version after the table's, a proxy's own
//! name) is unknown: nothing is refused for it, since that would be
//! guesswork, and [`Effort`] is sent to it in the adaptive form, the one
//! every Claude model since 4.6 takes.

use crate::model::Effort;

/// A Claude model family, as the model id names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    Opus,
    Sonnet,
    Haiku,
    Fable,
    Mythos,
}

impl Family {
    fn named(token: &str) -> Option<Self> {
        Some(match token {
            "opus" => Self::Opus,
            "sonnet" => Self::Sonnet,
            "haiku" => Self::Haiku,
            "fable" => Self::Fable,
            "mythos" => Self::Mythos,
            _ => return None,
        })
    }
}

/// The thinking forms a model takes: `thinking: {"type": "enabled",
/// "budget_tokens"}` (the budget form) and `thinking: {"type":
/// "adaptive"}` with `output_config.effort` (the adaptive form); the
/// shapes are `ThinkingConfigEnabledParam`, `ThinkingConfigAdaptiveParam`
/// and `OutputConfigParam` of anthropics/anthropic-sdk-python
/// (`src/anthropic/types/thinking_config_enabled_param.py`,
/// `thinking_config_adaptive_param.py`, `output_config_param.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Forms {
    /// The budget form only: the API answers the adaptive one 400.
    Budget,
    /// Both; the budget form is deprecated.
    Both,
    /// The adaptive form only: the API answers the budget one 400
    /// (`"thinking.type.enabled" is not supported for this model. Use
    /// "thinking.type.adaptive" and "output_config.effort" to control
    /// thinking behavior.`).
    Adaptive,
    /// No extended thinking at all (Claude 3 before Sonnet 3.7): the API
    /// answers any `thinking` 400.
    None,
}

/// One row of [`TABLE`]: the models of `families` from version `from` up
/// to (not including) `before`.
#[derive(Debug)]
pub(super) struct Row {
    families: &'static [Family],
    from: (u32, u32),
    before: (u32, u32),
    /// The thinking forms these models take.
    pub(super) forms: Forms,
    /// Whether they answer 400 to `temperature`, `top_p` or `top_k` set
    /// to anything but the default.
    pub(super) refuses_sampling: bool,
    /// Where the row comes from, named in the errors it causes.
    pub(super) source: &'static str,
}

/// Claude 5, Opus 4.7 and later: adaptive only, no sampling settings.
const ADAPTIVE_ONLY: &str = "Anthropic's \"Adaptive thinking\" and \"Extended thinking\" guides, and the migration guide's \"sampling parameters removed\"";

/// The crate's table of Claude models. The sources:
///
/// - Anthropic's "Adaptive thinking" guide
///   (<https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking>):
///   adaptive thinking on Opus 4.6 and Sonnet 4.6, where the budget form
///   is deprecated but accepted, on Opus 4.7 and 4.8 and on Sonnet 5, and
///   the only thinking mode on Fable 5 and Mythos 5; "older models
///   (Sonnet 4.5, Opus 4.5, etc.) do not support adaptive thinking and
///   require `thinking.type: "enabled"` with `budget_tokens`".
/// - Anthropic's "Extended thinking" guide
///   (<https://platform.claude.com/docs/en/build-with-claude/extended-thinking>):
///   "Claude 4.7 and later models do not support it and reject requests
///   that use it, returning a 400 error".
/// - Anthropic's migration guide
///   (<https://platform.claude.com/docs/en/about-claude/models/migration-guide>):
///   on Opus 4.7, and again on Sonnet 5, "setting `temperature`, `top_p`,
///   or `top_k` to any non-default value returns a 400 error".
/// - Public reports of those 400s: docker/docker-agent #3381 (adaptive
///   thinking sent for an effort to Haiku 4.5, which has none, answered
///   400; the fix sends a token budget there), UKGovernmentBEIS/inspect_ai
///   #3722, anomalyco/models.dev #3961, and anomalyco/models.dev #1468
///   (Opus 4.7 answers 400 to non-default `temperature`, `top_p`,
///   `top_k`). The Claude 5 ids are those of the SDK's `Model` and of
///   anomalyco/models.dev's `providers/anthropic/models/` (`claude-opus-5`,
///   `claude-sonnet-5`, `claude-fable-5`, `claude-mythos-5`,
///   `claude-opus-5-5`, `claude-sonnet-5-5`).
pub(super) const TABLE: &[Row] = &[
    Row {
        families: &[
            Family::Opus,
            Family::Sonnet,
            Family::Haiku,
            Family::Fable,
            Family::Mythos,
        ],
        from: (5, 0),
        before: (6, 0),
        forms: Forms::Adaptive,
        refuses_sampling: true,
        source: ADAPTIVE_ONLY,
    },
    Row {
        families: &[Family::Opus],
        from: (4, 7),
        before: (5, 0),
        forms: Forms::Adaptive,
        refuses_sampling: true,
        source: ADAPTIVE_ONLY,
    },
    Row {
        families: &[Family::Opus, Family::Sonnet],
        from: (4, 6),
        before: (4, 7),
        forms: Forms::Both,
        refuses_sampling: false,
        source: "Anthropic's \"Adaptive thinking\" guide",
    },
    Row {
        families: &[Family::Opus, Family::Sonnet, Family::Haiku],
        from: (3, 7),
        before: (4, 6),
        forms: Forms::Budget,
        refuses_sampling: false,
        source: "Anthropic's \"Adaptive thinking\" guide (older models require the budget form)",
    },
    Row {
        families: &[Family::Opus, Family::Sonnet, Family::Haiku],
        from: (3, 0),
        before: (3, 7),
        forms: Forms::None,
        refuses_sampling: false,
        source: "Anthropic's \"Extended thinking\" guide (its supported models begin with Claude Sonnet 3.7)",
    },
];

/// The row of `model`, `None` for a model the table does not name.
pub(super) fn row(model: &str) -> Option<&'static Row> {
    let (family, version) = family_version(model)?;
    TABLE
        .iter()
        .find(|row| row.families.contains(&family) && row.from <= version && version < row.before)
}

/// Whether `model` is sent [`Effort`] in the adaptive form: every model
/// but those that take the budget form only (unknown ones included).
pub(super) fn takes_adaptive(model: &str) -> bool {
    row(model).is_none_or(|row| !matches!(row.forms, Forms::Budget | Forms::None))
}

/// The family and `(major, minor)` version a model id names; see the
/// module docs.
fn family_version(model: &str) -> Option<(Family, (u32, u32))> {
    const CLAUDE: &str = "claude-";
    let lower = model.to_ascii_lowercase();
    let start = lower.rfind(CLAUDE)? + CLAUDE.len();
    let id = lower[start..].split(['@', ':']).next().unwrap_or_default();
    let tokens: Vec<&str> = id.split('-').collect();
    let first = tokens.first().copied().unwrap_or_default();
    if let Some(family) = Family::named(first) {
        let (major, dotted) = version(tokens.get(1)?)?;
        let minor = dotted.or_else(|| tokens.get(2).and_then(|token| small(token)));
        return Some((family, (major, minor.unwrap_or(0))));
    }
    // The Claude 3 order: the version first, then the family.
    let (major, dotted) = version(first)?;
    let (minor, at) = match dotted.map(|minor| (minor, 1)) {
        Some(found) => found,
        None => match tokens.get(1).and_then(|token| small(token)) {
            Some(minor) => (minor, 2),
            None => (0, 1),
        },
    };
    Some((Family::named(tokens.get(at)?)?, (major, minor)))
}

/// `4` or `4.7` (a dotted version, as proxies write it).
fn version(token: &str) -> Option<(u32, Option<u32>)> {
    match token.split_once('.') {
        Some((major, minor)) => Some((small(major)?, Some(small(minor)?))),
        None => Some((small(token)?, None)),
    }
}

/// A version number: one or two digits (a date has eight).
fn small(token: &str) -> Option<u32> {
    let digits = (1..=2).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| token.parse().ok()).flatten()
}

/// The `budget_tokens` that [`Effort`] is sent as to a model that takes
/// the budget form only: a share of `max_tokens` (which counts the
/// thinking and the answer), at least the API's minimum of 1024 tokens.
///
/// | effort | share of `max_tokens` | with the default `max_tokens` 4096 |
/// | --- | --- | --- |
/// | `Low` | 1/4 | 1024 |
/// | `Medium` | 1/2 | 2048 |
/// | `High` | 3/4 | 3072 |
/// | `XHigh` | 7/8 | 3584 |
/// | `Max` | 15/16 | 3840 |
///
/// Each is less than `max_tokens` whenever `max_tokens` is above 1024;
/// at 1024 or below no budget fits, and the request is refused.
pub(super) fn effort_budget(effort: Effort, max_tokens: u32) -> u32 {
    let (numerator, denominator) = match effort {
        // `None` is sent as thinking turned off and `Minimal` refused:
        // neither is a budget.
        Effort::None | Effort::Minimal | Effort::Low => (1, 4),
        Effort::Medium => (1, 2),
        Effort::High => (3, 4),
        Effort::XHigh => (7, 8),
        Effort::Max => (15, 16),
    };
    let share = u64::from(max_tokens) * numerator / denominator;
    // The share is below `max_tokens`, a u32.
    let share = u32::try_from(share).unwrap_or(max_tokens);
    share.max(super::MIN_THINKING_BUDGET)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forms(model: &str) -> Option<(Forms, bool)> {
        row(model).map(|row| (row.forms, row.refuses_sampling))
    }

    #[test]
    fn model_ids_read_as_family_and_version() {
        for (model, expected) in [
            ("claude-opus-4-7", Some((Family::Opus, (4, 7)))),
            ("claude-sonnet-4-5", Some((Family::Sonnet, (4, 5)))),
            ("claude-sonnet-4-5-20250929", Some((Family::Sonnet, (4, 5)))),
            ("claude-sonnet-4-20250514", Some((Family::Sonnet, (4, 0)))),
            ("claude-opus-4-1-20250805", Some((Family::Opus, (4, 1)))),
            ("claude-haiku-4-5-20251001", Some((Family::Haiku, (4, 5)))),
            ("claude-sonnet-5", Some((Family::Sonnet, (5, 0)))),
            ("claude-fable-5-1", Some((Family::Fable, (5, 1)))),
            ("claude-opus-5-5", Some((Family::Opus, (5, 5)))),
            ("claude-3-7-sonnet-20250219", Some((Family::Sonnet, (3, 7)))),
            ("claude-3-5-haiku-latest", Some((Family::Haiku, (3, 5)))),
            ("claude-3-opus-20240229", Some((Family::Opus, (3, 0)))),
            ("claude-5-sonnet", Some((Family::Sonnet, (5, 0)))),
            ("anthropic.claude-opus-4-6-v1", Some((Family::Opus, (4, 6)))),
            (
                "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                Some((Family::Sonnet, (4, 5))),
            ),
            ("anthropic/claude-opus-4.7", Some((Family::Opus, (4, 7)))),
            ("claude-opus-4-5@20251101", Some((Family::Opus, (4, 5)))),
            ("Claude-Opus-4-7", Some((Family::Opus, (4, 7)))),
            ("claude-mythos-preview", None),
            ("claude-2.1", None),
            ("claude-instant-1.2", None),
            ("claude", None),
            ("gpt-5", None),
            ("", None),
        ] {
            assert_eq!(family_version(model), expected, "{model}");
        }
    }

    #[test]
    fn the_table_says_which_forms_each_model_takes() {
        let adaptive_only = Some((Forms::Adaptive, true));
        for model in [
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-opus-5",
            "claude-sonnet-5",
            "claude-fable-5",
            "claude-mythos-5",
            "claude-fable-5-1",
            "claude-opus-5-5",
        ] {
            assert_eq!(forms(model), adaptive_only, "{model}");
        }
        for model in ["claude-opus-4-6", "claude-sonnet-4-6"] {
            assert_eq!(forms(model), Some((Forms::Both, false)), "{model}");
        }
        for model in [
            "claude-sonnet-4-5",
            "claude-opus-4-5",
            "claude-haiku-4-5",
            "claude-opus-4-1",
            "claude-sonnet-4-0",
            "claude-3-7-sonnet-latest",
        ] {
            assert_eq!(forms(model), Some((Forms::Budget, false)), "{model}");
        }
        // Claude 3 before Sonnet 3.7 has no extended thinking.
        for model in [
            "claude-3-5-haiku-latest",
            "claude-3-5-sonnet-20241022",
            "claude-3-opus-20240229",
            "claude-3-haiku-20240307",
        ] {
            assert_eq!(forms(model), Some((Forms::None, false)), "{model}");
            assert!(!takes_adaptive(model), "{model}");
        }
        // Unknown: no row, so nothing refused, and effort goes adaptive.
        for model in [
            "claude",
            "claude-mythos-preview",
            "claude-sonnet-4-7",
            "claude-haiku-4-6",
            "claude-opus-6",
            "my-proxy-model",
        ] {
            assert_eq!(forms(model), None, "{model}");
            assert!(takes_adaptive(model), "{model}");
        }
        assert!(!takes_adaptive("claude-sonnet-4-5"));
        assert!(takes_adaptive("claude-sonnet-4-6"));
    }

    #[test]
    fn an_effort_budget_keeps_the_budget_rules() {
        let levels = [
            Effort::Low,
            Effort::Medium,
            Effort::High,
            Effort::XHigh,
            Effort::Max,
        ];
        let at_default: Vec<u32> = levels.iter().map(|&e| effort_budget(e, 4096)).collect();
        assert_eq!(at_default, [1024, 2048, 3072, 3584, 3840]);
        for max_tokens in [1025, 1100, 2048, 4096, 8000, 64_000, u32::MAX] {
            let mut last = 0;
            for effort in levels {
                let budget = effort_budget(effort, max_tokens);
                assert!(
                    budget >= 1024 && budget < max_tokens,
                    "{effort:?} {max_tokens}"
                );
                assert!(budget >= last, "{effort:?} {max_tokens}");
                last = budget;
            }
        }
    }
}
