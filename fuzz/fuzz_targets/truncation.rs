//! Tool outputs of any text, JSON, parts or error under any `result_bytes`;
//! see `properties::truncation`. The case is built from the bytes by
//! `arbitrary`.
#![no_main]

use agent_loop_fuzz::check;
use agent_loop_fuzz::properties::truncation::{TruncationCase, check_truncation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|case: TruncationCase| {
    check(check_truncation(&case));
});
