//! Properties of `NameRules::sanitize` and `NameRules::check` over arbitrary
//! input, unicode included.

use agent_loop::tool::NameRules;
use proptest::prelude::*;

fn any_rules() -> impl Strategy<Value = NameRules> {
    prop_oneof![
        Just(NameRules::OpenAi),
        Just(NameRules::Portable),
        Just(NameRules::Mcp),
    ]
}

/// Arbitrary strings, plus shapes that hit the interesting edges more often:
/// near-valid names with dots and spaces, and names around the length limits.
fn any_name() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-zA-Z0-9_.\\- ]{0,140}",
        "[a-z0-9_\\-]{60,70}",
        "[a-z0-9_.\\-]{120,135}",
        "[a-zé🦀 .]{0,200}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn sanitized_name_passes_check(rules in any_rules(), name in any_name()) {
        let sanitized = rules.sanitize(&name);
        prop_assert_eq!(rules.check(&sanitized), Ok(()), "{:?} -> {:?}", name, sanitized);
    }

    #[test]
    fn sanitize_is_idempotent(rules in any_rules(), name in any_name()) {
        let once = rules.sanitize(&name);
        prop_assert_eq!(rules.sanitize(&once), once);
    }

    #[test]
    fn valid_name_is_unchanged(rules in any_rules(), name in any_name()) {
        if rules.check(&name).is_ok() {
            prop_assert_eq!(rules.sanitize(&name), name);
        }
    }

    #[test]
    fn sanitized_name_fits_max_len(rules in any_rules(), name in any_name()) {
        let sanitized = rules.sanitize(&name);
        prop_assert!(sanitized.len() <= rules.max_len());
        prop_assert!(!sanitized.is_empty());
    }

    #[test]
    fn short_ascii_names_keep_their_length_in_characters(rules in any_rules(), name in any_name()) {
        // One `_` per replaced character, plus at most the portable prefix.
        let sanitized = rules.sanitize(&name);
        let chars = name.chars().count();
        if name.is_ascii() && chars >= 1 && chars < rules.max_len() {
            let extra = sanitized.len() - chars;
            prop_assert!(extra <= 1, "{:?} -> {:?}", name, sanitized);
        }
    }

    /// Names in another script (MCP servers with Chinese tool names) all
    /// became `____`-like and collided: invalid names with a character
    /// outside ASCII keep apart, barring a 1 in 2³² coincidence.
    #[test]
    fn invalid_names_outside_ascii_stay_distinct(
        rules in any_rules(),
        a in "[一-龥é🦀]{1,8}",
        b in "[一-龥é🦀]{1,8}",
    ) {
        prop_assume!(a != b);
        let (sa, sb) = (rules.sanitize(&a), rules.sanitize(&b));
        prop_assert_ne!(&sa, &sb, "{:?} and {:?}", a, b);
        prop_assert_eq!(rules.check(&sa), Ok(()));
    }

    #[test]
    fn check_agrees_with_the_documented_pattern(rules in any_rules(), name in any_name()) {
        // An independent restatement of the table in the `NameRules` docs.
        let allowed = |c: char| {
            c.is_ascii_alphanumeric() || c == '_' || c == '-' || (rules == NameRules::Mcp && c == '.')
        };
        let first_ok = |c: char| rules != NameRules::Portable || c.is_ascii_alphabetic() || c == '_';
        let len = name.chars().count();
        let expected = len >= 1
            && len <= rules.max_len()
            && name.chars().all(allowed)
            && name.chars().next().is_some_and(first_ok);
        prop_assert_eq!(rules.check(&name).is_ok(), expected, "{:?}", name);
    }
}
