//! The MCP property (`properties::mcp`): a server answering `tools/list`
//! and `tools/call` with any JSON makes bind fail with a typed error or
//! bind, and every call of a bound tool is answered once (an error result
//! when the server said `isError`). Checked with every recorded tool list
//! and generated ones, against generated call results. The `mcp` fuzz
//! target checks the same on arbitrary bytes.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::arbitrary_json::{RECORDED, json as any_json, word};
use crate::properties::mcp::check_mcp;

const MCP_WORDS: &[&str] = &[
    "content",
    "type",
    "text",
    "image",
    "audio",
    "resource",
    "resource_link",
    "data",
    "mimeType",
    "image/png",
    "uri",
    "file:///a.txt",
    "blob",
    "isError",
    "structuredContent",
    "tools",
    "name",
    "inputSchema",
    "object",
    "properties",
    "description",
    "nextCursor",
    "read_file",
    "a.b",
    "",
];

/// The recorded tool lists small enough to bind in a test case.
fn recorded_list() -> impl Strategy<Value = Value> {
    let lists: Vec<Value> = RECORDED
        .iter()
        .filter(|(path, payload)| path.contains("/mcp/") && payload.to_string().len() < 64 * 1024)
        .map(|(_, payload)| payload.clone())
        .collect();
    proptest::sample::select(lists)
}

/// A `tools/list` result: a recorded one, a generated one with object
/// schemas, or any JSON.
fn list() -> impl Strategy<Value = Value> {
    let tool = (word(MCP_WORDS), any_json(MCP_WORDS)).prop_map(|(name, extra)| {
        json!({ "name": name, "inputSchema": { "type": "object" }, "annotations": extra })
    });
    prop_oneof![
        2 => recorded_list(),
        2 => proptest::collection::vec(tool, 0..4).prop_map(|tools| json!({ "tools": tools })),
        1 => any_json(MCP_WORDS),
    ]
}

/// A `tools/call` result: content blocks of every type, `isError`,
/// `structuredContent`; or any JSON.
fn call() -> impl Strategy<Value = Value> {
    let block = (word(MCP_WORDS), word(MCP_WORDS), word(MCP_WORDS)).prop_map(|(kind, text, mime)| {
        json!({ "type": kind, "text": text, "data": "AAAA", "mimeType": mime, "uri": "file:///a",
                "resource": { "uri": "file:///b", "text": text, "mimeType": mime } })
    });
    let result = (
        proptest::collection::vec(block, 0..4),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any_json(MCP_WORDS)),
    )
        .prop_map(|(content, is_error, structured)| {
            let mut result = json!({ "content": content });
            if let Some(is_error) = is_error {
                result["isError"] = json!(is_error);
            }
            if let Some(structured) = structured {
                result["structuredContent"] = structured;
            }
            result
        });
    prop_oneof![4 => result, 1 => any_json(MCP_WORDS)]
}

proptest! {
    // Each case starts a server and runs a turn: fewer cases.
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn any_server_answers_bind_or_fail_typed_and_every_call_is_answered_once(
        list in list(),
        call in call(),
    ) {
        check_mcp(&list, &call).map_err(TestCaseError::fail)?;
    }
}
