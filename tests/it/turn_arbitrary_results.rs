//! The truncation property (`properties::truncation`): whatever a tool
//! returns and whatever the `result_bytes` limit, the model reads the
//! output when it fits, else its head, a marker with the exact count of
//! bytes left out, and its tail, within the limit; images pass whole; an
//! error is one line of at most `ERROR_TEXT_BYTES`. The `truncation` fuzz
//! target checks the same on arbitrary bytes.

use proptest::prelude::*;

use crate::properties::truncation::*;

/// Text around the limits: short, long, multi-byte at every cut, control
/// characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\PC{200,700}",
        ("[aé€😀\n\t]{1,4}", 1_usize..400).prop_map(|(unit, times)| unit.repeat(times)),
    ]
}

fn tool_return() -> impl Strategy<Value = ToolReturn> {
    prop_oneof![
        3 => text().prop_map(ToolReturn::Text),
        1 => any::<f64>().prop_map(ToolReturn::Number),
        2 => proptest::collection::vec(proptest::option::of("[A-Za-z0-9+/]{0,12}"), 0..5)
            .prop_map(ToolReturn::Parts),
        2 => text().prop_map(ToolReturn::Error),
    ]
}

fn case() -> impl Strategy<Value = TruncationCase> {
    (
        proptest::collection::vec(tool_return(), 0..MAX_OUTPUTS),
        proptest::option::weighted(0.8, prop_oneof![0_u16..64, any::<u16>()]),
    )
        .prop_map(|(outputs, extra_bytes)| TruncationCase {
            outputs,
            extra_bytes,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_output_is_shown_whole_or_cut_to_head_marker_tail_within_the_limit(case in case()) {
        check_truncation(&case).map_err(TestCaseError::fail)?;
    }
}
