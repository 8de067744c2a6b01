//! A tool with any name and any schema, bound and invoked; see
//! `properties::bind`. The input is JSON `{"name", "schema", "arguments":
//! [...]}` (any other JSON is the schema of a tool named `tool`). Seeds:
//! every tool of the recorded MCP tool lists.
#![no_main]

use agent_loop_fuzz::{check, json, properties};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some(input) = json(data) else {
        return;
    };
    let (name, schema, arguments) = match input.get("schema") {
        Some(schema) => (
            input["name"].as_str().unwrap_or("tool"),
            schema,
            input["arguments"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]),
        ),
        None => ("tool", &input, &[] as &[Value]),
    };
    check(properties::bind::check_bind(name, schema, arguments));
});
