//! Properties of `truncate_middle` and `clean_error_text`: bounded, valid
//! UTF-8, exact omitted counts, deterministic.

use std::borrow::Cow;

use agent_loop::turn::{
    ERROR_TEXT_BYTES, MIN_RESULT_BYTES, clean_error_text, omitted_bytes, truncate_middle,
};
use proptest::prelude::*;

/// Random text: arbitrary strings, plus long strings of multi-byte
/// characters so cuts land inside 2-, 3- and 4-byte sequences.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(any::<char>(), 0..3_000).prop_map(String::from_iter),
        prop::collection::vec(
            prop::sample::select(vec!['a', 'é', '€', '🦀', '\n', ' ']),
            0..10_000
        )
        .prop_map(String::from_iter),
        prop::collection::vec(prop::sample::select(vec!['a', 'b', '\n']), 0..10_000)
            .prop_map(String::from_iter),
    ]
}

fn any_limit() -> impl Strategy<Value = usize> {
    prop_oneof![
        MIN_RESULT_BYTES..MIN_RESULT_BYTES + 64,
        MIN_RESULT_BYTES..2_000,
        MIN_RESULT_BYTES..12_000,
    ]
}

/// Head, omitted count and tail of a cut text, found through the documented
/// marker.
fn split(cut: &str) -> Option<(&str, usize, &str)> {
    let omitted = omitted_bytes(cut)?;
    let marker = format!("\n[… {omitted} bytes omitted …]\n");
    let start = cut.find(&marker)?;
    Some((&cut[..start], omitted, &cut[start + marker.len()..]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn output_never_exceeds_the_limit(text in any_text(), limit in any_limit()) {
        prop_assert!(truncate_middle(&text, limit).len() <= limit);
    }

    #[test]
    fn text_that_fits_is_unchanged(text in any_text(), limit in any_limit()) {
        if text.len() <= limit {
            prop_assert!(matches!(truncate_middle(&text, limit), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn cut_text_is_head_marker_tail_with_exact_count(text in any_text(), limit in any_limit()) {
        let cut = truncate_middle(&text, limit);
        if text.len() > limit {
            let (head, omitted, tail) = split(&cut).expect("a cut text has a marker");
            // Slicing `text` at these lengths panics unless they are character
            // boundaries: the cuts kept UTF-8 intact.
            prop_assert_eq!(&text[..head.len()], head);
            prop_assert_eq!(&text[text.len() - tail.len()..], tail);
            prop_assert_eq!(omitted, text.len() - head.len() - tail.len());
            prop_assert!(omitted > 0);
            // About half each: the head gets the rounded-up half of the
            // budget, less up to 3 bytes at a character boundary, which the
            // tail may take; the tail loses up to 3 bytes at its own.
            prop_assert!(head.len().abs_diff(tail.len()) <= 6, "head {} tail {}", head.len(), tail.len());
        }
    }

    #[test]
    fn cut_is_deterministic(text in any_text(), limit in any_limit()) {
        prop_assert_eq!(truncate_middle(&text, limit), truncate_middle(&text, limit));
    }

    #[test]
    fn cut_wastes_at_most_a_few_bytes(text in any_text(), limit in any_limit()) {
        // Up to 3 bytes each at two character boundaries, plus reserved
        // count digits the real count did not need.
        let cut = truncate_middle(&text, limit);
        if text.len() > limit {
            let unused_digits = text.len().to_string().len()
                - omitted_bytes(&cut).unwrap().to_string().len();
            prop_assert!(cut.len() + 6 + unused_digits >= limit, "{} of {}", cut.len(), limit);
        }
    }

    #[test]
    fn any_limit_at_all_is_respected(text in any_text(), limit in 0usize..400) {
        // Below MIN_RESULT_BYTES too: never longer, always a prefix or a cut.
        let cut = truncate_middle(&text, limit);
        prop_assert!(cut.len() <= limit);
        if split(&cut).is_none() && text.len() > limit {
            prop_assert!(text.starts_with(cut.as_ref()));
        }
    }

    #[test]
    fn error_text_has_no_control_characters_and_fits(text in any_text(), limit in any_limit()) {
        let cleaned = clean_error_text(&text, limit);
        prop_assert!(cleaned.len() <= limit);
        prop_assert!(!cleaned.chars().any(char::is_control), "{:?}", cleaned);
        prop_assert!(!cleaned.contains("  "));
        prop_assert_eq!(cleaned.trim(), cleaned.as_str());
    }

    #[test]
    fn error_text_at_default_bound_fits(text in any_text()) {
        let cleaned = clean_error_text(&text, ERROR_TEXT_BYTES);
        prop_assert!(cleaned.len() <= ERROR_TEXT_BYTES);
        prop_assert!(!cleaned.chars().any(char::is_control));
    }

    #[test]
    fn error_text_with_tiny_limits_fits(text in any_text(), limit in 0usize..64) {
        let cleaned = clean_error_text(&text, limit);
        prop_assert!(cleaned.len() <= limit);
        prop_assert!(!cleaned.chars().any(char::is_control));
    }
}
