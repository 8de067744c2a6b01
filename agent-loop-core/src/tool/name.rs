//! Tool names: the rules a model-facing tool name must satisfy, and a helper
//! that turns an arbitrary name into a valid one.
//!
//! Providers refuse a request whose tool names break their pattern (OpenAI
//! and Anthropic answer a dotted name with HTTP 400), so a name is checked
//! once, before any request is made, against the [`NameRules`] its definition
//! carries. [`NameRules::sanitize`] derives a valid name from a foreign one
//! (an MCP tool `spotify.play`, a human label) so the caller can keep the
//! original for display and send the sanitized one to the model.

use crate::support::hash::fnv1a_64;

/// The reserved name of the structured-output control tool.
///
/// The turn runner offers a tool of this name to the model when a turn asks
/// for structured output, so no user tool may use it: validation refuses it
/// among declared names and binding refuses it among built and extra tool
/// names. The comparison is exact (case-sensitive, no trimming):
/// `Structured_Output` is an ordinary name.
///
/// [`NameRules::check`] does not refuse it (the control tool itself must pass
/// every rule); the reserved-name check is a separate step.
pub const STRUCTURED_OUTPUT_TOOL_NAME: &str = "structured_output";

/// Which pattern a model-facing tool name must match.
///
/// A definition carries one `NameRules` value; the check runs on the final
/// model-facing name. Every rule counts length in characters; every
/// character a rule allows is ASCII, so for a valid name characters and
/// bytes are the same count.
///
/// | rule | characters | first character | length |
/// | --- | --- | --- | --- |
/// | [`OpenAi`](Self::OpenAi) (default) | `a-z A-Z 0-9 _ -` | any of those | 1 to 64 |
/// | [`Portable`](Self::Portable) | `a-z A-Z 0-9 _ -` | `a-z A-Z _` | 1 to 64 |
/// | [`Mcp`](Self::Mcp) | `a-z A-Z 0-9 _ - .` | any of those | 1 to 128 |
///
/// ```
/// use agent_loop_core::tool::{NameError, NameRules};
///
/// assert!(NameRules::OpenAi.check("get_weather").is_ok());
/// assert_eq!(
///     NameRules::OpenAi.check("spotify.play"),
///     Err(NameError::InvalidCharacter { character: '.', position: 7 }),
/// );
/// assert!(NameRules::Mcp.check("spotify.play").is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NameRules {
    /// `^[a-zA-Z0-9_-]{1,64}$`: the pattern of OpenAI function names ("a-z,
    /// A-Z, 0-9, or contain underscores and dashes, with a maximum length of
    /// 64") and Anthropic tool names (the same regular expression). A dotted
    /// name gets HTTP 400 from both. The default.
    #[default]
    OpenAi,
    /// The OpenAI/Anthropic pattern plus the Gemini/Vertex AI rule that a
    /// function name starts with a letter or `_`: `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`.
    /// A name that passes it is accepted by all three providers.
    Portable,
    /// The MCP tool name format (specification 2025-11-25, "Tool names"):
    /// 1 to 128 of `A-Za-z0-9_.-`. For names an MCP server publishes; most
    /// model APIs refuse the dot, so sanitize such names with
    /// [`OpenAi`](Self::OpenAi) or [`Portable`](Self::Portable) before they
    /// reach a model.
    Mcp,
}

/// Why a name fails its [`NameRules`]: returned by [`NameRules::check`],
/// and the source of a [`DefinitionError`](crate::DefinitionError) for a
/// declared tool name that breaks the definition's rules. Positions and
/// lengths count characters (`char`s), not bytes.
///
/// Its causes carry different data, so the error is an enum whose variants
/// are its kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is the empty string.
    #[error("tool name is empty")]
    Empty,
    /// The name has more characters than the rule allows.
    #[error("tool name is {len} characters long (at most {max} allowed)")]
    TooLong {
        /// Length of the name, in characters.
        len: usize,
        /// The rule's maximum, in characters ([`NameRules::max_len`]).
        max: usize,
    },
    /// A character the rule never allows, anywhere in the name (white space
    /// included: names are not trimmed). The first such character is
    /// reported.
    // The allowed set named here covers every rule: only MCP allows `.`.
    #[error(
        "character `{}` at position {position} is not allowed (allowed: a-z A-Z 0-9 _ -, and `.` in MCP names)",
        .character.escape_debug()
    )]
    InvalidCharacter {
        /// The offending character.
        character: char,
        /// Its index in the name, counted in characters from 0.
        position: usize,
    },
    /// The first character is allowed elsewhere in a name but not at the
    /// start ([`NameRules::Portable`]: a digit or `-`).
    #[error(
        "first character `{}` is not allowed (a portable name starts with a-z A-Z or _)",
        .character.escape_debug()
    )]
    InvalidFirstCharacter {
        /// The offending first character.
        character: char,
    },
}

/// Characters of the hash suffix [`NameRules::sanitize`] appends to a cut
/// name: `_` and 8 hex digits.
const HASH_SUFFIX_LEN: usize = 9;

impl NameRules {
    /// The longest valid name under this rule, in characters (64, or 128 for
    /// [`Mcp`](Self::Mcp)). Valid names are ASCII, so this is also their
    /// longest length in bytes.
    pub fn max_len(self) -> usize {
        match self {
            NameRules::OpenAi | NameRules::Portable => 64,
            NameRules::Mcp => 128,
        }
    }

    /// Whether `character` may appear somewhere in a name.
    fn allows(self, character: char) -> bool {
        match self {
            NameRules::OpenAi | NameRules::Portable => {
                character.is_ascii_alphanumeric() || character == '_' || character == '-'
            }
            NameRules::Mcp => {
                character.is_ascii_alphanumeric() || matches!(character, '_' | '-' | '.')
            }
        }
    }

    /// Whether `character`, already allowed somewhere, may start a name.
    fn allows_first(self, character: char) -> bool {
        match self {
            NameRules::Portable => character.is_ascii_alphabetic() || character == '_',
            NameRules::OpenAi | NameRules::Mcp => true,
        }
    }

    /// `Ok(())` if `name` satisfies this rule.
    ///
    /// The name is taken as it is: surrounding white space is an invalid
    /// character, never trimmed, because the provider would refuse it too.
    ///
    /// # Errors
    ///
    /// Checked in this order, the first failure is returned:
    /// [`NameError::Empty`] for `""`; [`NameError::TooLong`] for more than
    /// [`max_len`](Self::max_len) characters; [`NameError::InvalidCharacter`]
    /// for the first character outside the rule's set;
    /// [`NameError::InvalidFirstCharacter`] for a [`Portable`](Self::Portable)
    /// name starting with a digit or `-`.
    ///
    /// The reserved [`STRUCTURED_OUTPUT_TOOL_NAME`] passes every rule; refusing
    /// it is the caller's separate check.
    pub fn check(self, name: &str) -> Result<(), NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        // Names are nearly always ASCII, where bytes are characters: a byte
        // loop is several times cheaper than decoding, and bind checks
        // every tool's name each time.
        let ascii = name.is_ascii();
        let len = if ascii {
            name.len()
        } else {
            name.chars().count()
        };
        if len > self.max_len() {
            return Err(NameError::TooLong {
                len,
                max: self.max_len(),
            });
        }
        let invalid = if ascii {
            name.bytes()
                .map(char::from)
                .enumerate()
                .find(|&(_, c)| !self.allows(c))
        } else {
            name.chars().enumerate().find(|&(_, c)| !self.allows(c))
        };
        if let Some((position, character)) = invalid {
            return Err(NameError::InvalidCharacter {
                character,
                position,
            });
        }
        match name.chars().next() {
            Some(first) if !self.allows_first(first) => {
                Err(NameError::InvalidFirstCharacter { character: first })
            }
            _ => Ok(()),
        }
    }

    /// Turns an arbitrary name into one that passes [`check`](Self::check).
    ///
    /// A name that already passes is returned unchanged, so `sanitize` is
    /// idempotent. Otherwise, in this order:
    ///
    /// 1. every character the rule does not allow becomes `_`, one `_` per
    ///    character (`my tool!` → `my_tool_`);
    /// 2. for [`Portable`](Self::Portable), a name whose first character is
    ///    not a letter or `_` gets a `_` prefix (`1st` → `_1st`);
    /// 3. the empty name becomes `_`;
    /// 4. a name longer than [`max_len`](Self::max_len) keeps its first
    ///    `max_len - 9` characters and gets `_` plus 8 lowercase hex digits
    ///    appended, exactly `max_len` in all. The digits are the upper 32 bits
    ///    of the 64-bit FNV-1a hash of the *original* name's UTF-8 bytes, so
    ///    two long names that share their first 55 (MCP: 119) characters
    ///    still get different names, barring a 1 in 2³² coincidence;
    /// 5. a name with a character outside ASCII (`天气`, `über`) gets the
    ///    same `_` and 8 hex digits appended (after a cut to `max_len - 9`
    ///    when longer): step 1 leaves little of a name in another script
    ///    (`天气` and `查询` would both be `__`, and the whole bind would fail
    ///    on the collision), and the hash keeps such names apart.
    ///
    /// The result is deterministic: the same input gives the same output on
    /// every run, platform and version of this crate (FNV-1a is fixed, unlike
    /// `std`'s hasher).
    ///
    /// Distinct short names can still meet: `a.b`, `a b` and `a_b` all become
    /// `a_b`. Detecting that collision is the caller's job (binding refuses
    /// duplicate tool names). The result may also be the reserved
    /// [`STRUCTURED_OUTPUT_TOOL_NAME`] (from `structured.output`), which
    /// binding refuses.
    ///
    /// ```
    /// use agent_loop_core::tool::NameRules;
    ///
    /// assert_eq!(NameRules::OpenAi.sanitize("spotify.play"), "spotify_play");
    /// assert_eq!(NameRules::OpenAi.sanitize("  my tool! "), "__my_tool__");
    /// assert_eq!(NameRules::Portable.sanitize("3d-render"), "_3d-render");
    /// assert_eq!(NameRules::Mcp.sanitize("spotify.play"), "spotify.play");
    /// assert_eq!(NameRules::OpenAi.sanitize(""), "_");
    ///
    /// // Another script: what is left, `_` and a hash of the original.
    /// let weather = NameRules::OpenAi.sanitize("天气");
    /// let search = NameRules::OpenAi.sanitize("查询");
    /// assert!(weather.starts_with("___") && weather.len() == 11);
    /// assert_ne!(weather, search);
    ///
    /// // Too long: a prefix, `_` and a hash of the whole original name.
    /// let long = NameRules::OpenAi.sanitize(&"a".repeat(200));
    /// assert_eq!(long.len(), 64);
    /// assert!(long.starts_with(&"a".repeat(55)));
    /// assert!(NameRules::OpenAi.check(&long).is_ok());
    /// ```
    pub fn sanitize(self, name: &str) -> String {
        if self.check(name).is_ok() {
            return name.to_owned();
        }
        let mut sanitized: String = name
            .chars()
            .map(|c| if self.allows(c) { c } else { '_' })
            .collect();
        match sanitized.chars().next() {
            None => sanitized.push('_'),
            Some(first) if !self.allows_first(first) => sanitized.insert(0, '_'),
            Some(_) => {}
        }
        // Only ASCII is left, so byte lengths and indices are character ones.
        let max_len = self.max_len();
        // A name in another script is mostly `_` by now (`天气` and `查询`
        // both `__`): the hash keeps such names apart.
        let lost_script = !name.is_ascii();
        if sanitized.len() > max_len || lost_script {
            sanitized.truncate(max_len - HASH_SUFFIX_LEN);
            let hash = fnv1a_64(name.as_bytes());
            // The upper half: FNV-1a mixes high bits best (its low bit is
            // only the parity of the input's low bits).
            sanitized.push_str(&format!("_{:08x}", hash >> 32));
        }
        debug_assert!(self.check(&sanitized).is_ok(), "{sanitized:?}");
        sanitized
    }
}

/// Why a model-facing tool name is refused: it is reserved, or it breaks
/// the definition's [`NameRules`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ToolNameProblem {
    /// The name is [`STRUCTURED_OUTPUT_TOOL_NAME`].
    Reserved,
    /// The name breaks the rule.
    Invalid(NameError),
}

/// The one check of a model-facing tool name, wherever one is checked
/// (declared names at validation, extra tools and built tools at bind):
/// first the reserved name, compared exactly, then `rules` (the provider's
/// documented pattern: OpenAI and Anthropic `^[a-zA-Z0-9_-]{1,64}$`,
/// Gemini's letter-or-`_` first character, or the MCP specification's tool
/// name format).
///
/// The reserved name comes first because it passes every rule: the turn
/// runner offers a tool of that name for structured output, so a user tool
/// of that name would be ambiguous to the model, whatever the provider.
pub(crate) fn check_tool_name(rules: NameRules, name: &str) -> Result<(), ToolNameProblem> {
    if name == STRUCTURED_OUTPUT_TOOL_NAME {
        return Err(ToolNameProblem::Reserved);
    }
    rules.check(name).map_err(ToolNameProblem::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_RULES: [NameRules; 3] = [NameRules::OpenAi, NameRules::Portable, NameRules::Mcp];

    fn invalid_character(character: char, position: usize) -> Result<(), NameError> {
        Err(NameError::InvalidCharacter {
            character,
            position,
        })
    }

    #[test]
    fn default_rule_is_openai() {
        assert_eq!(NameRules::default(), NameRules::OpenAi);
    }

    #[test]
    fn openai_accepts_letters_digits_underscore_dash_up_to_64() {
        let rules = NameRules::OpenAi;
        for name in [
            "get_weather",
            "a-b",
            "A",
            "_",
            "-",
            "9lives",
            "x".repeat(64).as_str(),
        ] {
            assert_eq!(rules.check(name), Ok(()), "{name:?}");
        }
    }

    #[test]
    fn openai_refuses_65_characters() {
        assert_eq!(
            NameRules::OpenAi.check(&"x".repeat(65)),
            Err(NameError::TooLong { len: 65, max: 64 })
        );
    }

    #[test]
    fn openai_refuses_dot_space_unicode_and_empty() {
        let rules = NameRules::OpenAi;
        assert_eq!(rules.check("spotify.play"), invalid_character('.', 7));
        assert_eq!(rules.check("trailing "), invalid_character(' ', 8));
        assert_eq!(rules.check(" leading"), invalid_character(' ', 0));
        assert_eq!(rules.check("über"), invalid_character('ü', 0));
        assert_eq!(rules.check("tab\there"), invalid_character('\t', 3));
        assert_eq!(rules.check(""), Err(NameError::Empty));
    }

    #[test]
    fn too_long_counts_characters_not_bytes() {
        // 65 two-byte characters: 130 bytes, but reported as 65 characters.
        assert_eq!(
            NameRules::OpenAi.check(&"é".repeat(65)),
            Err(NameError::TooLong { len: 65, max: 64 })
        );
        // The crab is 4 bytes but one character: the position counts characters.
        assert_eq!(NameRules::OpenAi.check("ab🦀"), invalid_character('🦀', 2));
    }

    #[test]
    fn portable_refuses_leading_digit_or_dash() {
        let rules = NameRules::Portable;
        assert_eq!(
            rules.check("1abc"),
            Err(NameError::InvalidFirstCharacter { character: '1' })
        );
        assert_eq!(
            rules.check("-x"),
            Err(NameError::InvalidFirstCharacter { character: '-' })
        );
        // A character not allowed anywhere is reported as such, even first.
        assert_eq!(rules.check(".x"), invalid_character('.', 0));
    }

    #[test]
    fn portable_accepts_letter_or_underscore_first() {
        let rules = NameRules::Portable;
        for name in ["abc", "_1", "Z-9", "x".repeat(64).as_str()] {
            assert_eq!(rules.check(name), Ok(()), "{name:?}");
        }
        assert_eq!(
            rules.check(&"x".repeat(65)),
            Err(NameError::TooLong { len: 65, max: 64 })
        );
    }

    #[test]
    fn mcp_accepts_dots_and_128_characters() {
        let rules = NameRules::Mcp;
        assert_eq!(rules.check("spotify.play"), Ok(()));
        assert_eq!(rules.check("admin.tools.list"), Ok(()));
        assert_eq!(rules.check(&"x".repeat(128)), Ok(()));
    }

    #[test]
    fn mcp_refuses_129_characters_slash_and_space() {
        let rules = NameRules::Mcp;
        assert_eq!(
            rules.check(&"x".repeat(129)),
            Err(NameError::TooLong { len: 129, max: 128 })
        );
        assert_eq!(rules.check("user/update"), invalid_character('/', 4));
        assert_eq!(rules.check("a b"), invalid_character(' ', 1));
        assert_eq!(rules.check(""), Err(NameError::Empty));
    }

    #[test]
    fn reserved_name_passes_every_rule() {
        for rules in ALL_RULES {
            assert_eq!(rules.check(STRUCTURED_OUTPUT_TOOL_NAME), Ok(()));
        }
    }

    #[test]
    fn tool_name_check_refuses_the_reserved_name_before_the_rules() {
        for rules in ALL_RULES {
            assert_eq!(
                check_tool_name(rules, STRUCTURED_OUTPUT_TOOL_NAME),
                Err(ToolNameProblem::Reserved)
            );
            assert_eq!(check_tool_name(rules, "Structured_Output"), Ok(()));
        }
        assert_eq!(
            check_tool_name(NameRules::OpenAi, "spotify.play"),
            Err(ToolNameProblem::Invalid(NameError::InvalidCharacter {
                character: '.',
                position: 7
            }))
        );
    }

    #[test]
    fn sanitize_replaces_each_disallowed_character_with_underscore() {
        assert_eq!(NameRules::OpenAi.sanitize("spotify.play"), "spotify_play");
        assert_eq!(NameRules::OpenAi.sanitize("  my tool! "), "__my_tool__");
        // Outside ASCII, the hash of the original name follows.
        assert_eq!(
            NameRules::OpenAi.sanitize("über-tool"),
            "_ber-tool_5fe1007d"
        );
        assert_eq!(NameRules::OpenAi.sanitize("🦀crab"), "_crab_fa0b55e5");
        assert_eq!(NameRules::OpenAi.sanitize("天气"), "___b2ac4fec");
        assert_eq!(NameRules::OpenAi.sanitize("查询"), "___0737accc");
        assert_eq!(NameRules::Mcp.sanitize("a/b.c"), "a_b.c");
    }

    #[test]
    fn sanitize_prefixes_portable_names_that_start_badly() {
        assert_eq!(NameRules::Portable.sanitize("1abc"), "_1abc");
        assert_eq!(NameRules::Portable.sanitize("-x"), "_-x");
        // `.` becomes `_`, which may start a portable name: no extra prefix.
        assert_eq!(NameRules::Portable.sanitize(".x"), "_x");
        // Only Portable restricts the first character.
        assert_eq!(NameRules::OpenAi.sanitize("1.abc"), "1_abc");
    }

    #[test]
    fn sanitize_turns_empty_into_underscore() {
        for rules in ALL_RULES {
            assert_eq!(rules.sanitize(""), "_");
        }
    }

    #[test]
    fn sanitize_cuts_long_names_to_prefix_and_hash() {
        // `6ee14c8c`: the upper 32 bits of FNV-1a 64 of 200 `x`, computed
        // outside this crate (a reference implementation that gives
        // 0xaf63dc4c8601ec8c for "a" and 0x85944171f73967e8 for "foobar",
        // the published test vectors).
        let original = "x".repeat(200);
        assert_eq!(
            NameRules::OpenAi.sanitize(&original),
            format!("{}_6ee14c8c", "x".repeat(55))
        );
        assert_eq!(
            NameRules::Mcp.sanitize(&original),
            format!("{}_6ee14c8c", "x".repeat(119))
        );
    }

    #[test]
    fn sanitize_keeps_long_names_with_a_common_prefix_apart() {
        let prefix = "tool_".repeat(20);
        let first = NameRules::OpenAi.sanitize(&format!("{prefix}first"));
        let second = NameRules::OpenAi.sanitize(&format!("{prefix}second"));
        assert_ne!(first, second);
        assert_eq!(first[..55], second[..55]);
    }

    #[test]
    fn sanitize_hash_depends_on_the_original_not_the_replaced_name() {
        // Same after character replacement, different originals.
        let dotted = NameRules::OpenAi.sanitize(&format!("a.{}", "b".repeat(100)));
        let underscored = NameRules::OpenAi.sanitize(&format!("a {}", "b".repeat(100)));
        assert_ne!(dotted, underscored);
    }

    #[test]
    fn sanitize_cuts_a_portable_name_after_its_prefix() {
        let sanitized = NameRules::Portable.sanitize(&"1".repeat(64));
        assert_eq!(sanitized.len(), 64);
        assert!(sanitized.starts_with(&format!("_{}", "1".repeat(54))));
        assert_eq!(NameRules::Portable.check(&sanitized), Ok(()));
    }

    #[test]
    fn sanitize_leaves_valid_names_alone() {
        assert_eq!(NameRules::OpenAi.sanitize("get_weather"), "get_weather");
        let exactly_max = "y".repeat(64);
        assert_eq!(NameRules::OpenAi.sanitize(&exactly_max), exactly_max);
    }

    #[test]
    fn errors_display_on_one_line() {
        let errors = [
            NameError::Empty,
            NameError::TooLong { len: 65, max: 64 },
            NameError::InvalidCharacter {
                character: '\n',
                position: 3,
            },
            NameError::InvalidFirstCharacter { character: '1' },
        ];
        for error in errors {
            let text = error.to_string();
            assert!(!text.contains('\n'), "{text:?}");
        }
        assert_eq!(
            NameError::InvalidCharacter {
                character: '.',
                position: 7
            }
            .to_string(),
            "character `.` at position 7 is not allowed (allowed: a-z A-Z 0-9 _ -, and `.` in MCP names)"
        );
        assert_eq!(
            NameError::InvalidCharacter {
                character: '\n',
                position: 3
            }
            .to_string(),
            "character `\\n` at position 3 is not allowed (allowed: a-z A-Z 0-9 _ -, and `.` in MCP names)"
        );
    }

    /// `check` as it was written before its ASCII fast path: characters
    /// decoded and counted one by one.
    fn check_by_characters(rules: NameRules, name: &str) -> Result<(), NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        let len = name.chars().count();
        if len > rules.max_len() {
            return Err(NameError::TooLong {
                len,
                max: rules.max_len(),
            });
        }
        if let Some((position, character)) =
            name.chars().enumerate().find(|&(_, c)| !rules.allows(c))
        {
            return invalid_character(character, position);
        }
        match name.chars().next() {
            Some(first) if !rules.allows_first(first) => {
                Err(NameError::InvalidFirstCharacter { character: first })
            }
            _ => Ok(()),
        }
    }

    proptest::proptest! {
        /// The byte loop for ASCII names gives the same answer, the same
        /// length and the same position as decoding characters, on names
        /// near the length limits, ASCII or not.
        #[test]
        fn the_ascii_fast_path_agrees_with_decoding_characters(
            name in "[a-zA-Z0-9_.\\- ]{0,130}|[a-z_.é😀-]{0,130}",
        ) {
            for rules in ALL_RULES {
                proptest::prop_assert_eq!(rules.check(&name), check_by_characters(rules, &name));
            }
        }
    }
}
