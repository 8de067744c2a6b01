//! A turn with arbitrary calls after an arbitrary history, under arbitrary
//! limits; see `properties::turn`. The case is built from the bytes by
//! `arbitrary`.
#![no_main]

use agent_loop_fuzz::check;
use agent_loop_fuzz::properties::turn::{TurnCase, check_turn};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|case: TurnCase| {
    check(check_turn(&case));
});
