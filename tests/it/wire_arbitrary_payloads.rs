//! The wire properties (`properties::wire`: no parser panics; what parses
//! exports within the rules, reads back and exports the same) on every
//! recorded payload, on recorded payloads with one node replaced, and on
//! JSON trees made of the formats' words. The `wire` fuzz target checks
//! the same on arbitrary bytes.

use proptest::prelude::*;

use crate::arbitrary_json::{RECORDED, WIRE_WORDS, json, mutated_recording};
use crate::properties::wire::check_payload;

#[test]
fn every_recorded_payload_has_the_wire_properties() {
    for (path, payload) in RECORDED.iter() {
        if let Err(problem) = check_payload(payload) {
            panic!("{path}: {problem}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn a_recorded_payload_with_any_node_replaced_has_the_wire_properties(
        payload in mutated_recording()
    ) {
        check_payload(&payload).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn any_json_of_the_formats_words_has_the_wire_properties(payload in json(WIRE_WORDS)) {
        check_payload(&payload).map_err(TestCaseError::fail)?;
    }
}
