//! Every wire parser (OpenAI, Anthropic, Gemini, MCP `tools/list`) on any JSON
//! text; see `properties::wire`. Seeds: the recorded payloads.
#![no_main]

use agent_loop_fuzz::{check, json, properties};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(payload) = json(data) {
        check(properties::wire::check_payload(&payload));
    }
});
