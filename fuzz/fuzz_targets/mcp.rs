//! An MCP server answering `tools/list` and `tools/call` with any JSON;
//! see `properties::mcp`. The input is JSON `{"list": <tools/list result>,
//! "call": <tools/call result>}`. Seeds: the recorded MCP tool lists, each
//! with a few call results.
#![no_main]

use agent_loop_fuzz::{check, json, properties};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(input) = json(data) {
        check(properties::mcp::check_mcp(&input["list"], &input["call"]));
    }
});
