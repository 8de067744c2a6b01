//! MCP `tools/list` result: export, parse, round trip, on payloads shaped
//! like the specification's examples.

use agent_loop::conversation::WireFormat;
use agent_loop::tool::ToolInfo;
use agent_loop::wire::{WireErrorKind, anthropic, mcp, openai};
use serde_json::json;

fn tools() -> Vec<ToolInfo> {
    vec![
        ToolInfo::new(
            "get_weather",
            "Get current weather information for a location",
            json!({
                "type": "object",
                "properties": {
                    "location": { "type": "string", "description": "City name or zip code" }
                },
                "required": ["location"]
            }),
        ),
        ToolInfo::without_parameters("list_files", "List the files of the workspace."),
    ]
}

#[test]
fn list_tools_result_round_trips_with_cursor() {
    let tools = tools();

    let exported = serde_json::to_value(mcp::export_list_tools_result(
        &tools,
        Some("next-page-cursor".into()),
    ))
    .unwrap();

    assert_eq!(
        exported,
        json!({
            "tools": [
                { "name": "get_weather",
                  "description": "Get current weather information for a location",
                  "inputSchema": tools[0].parameters },
                { "name": "list_files",
                  "description": "List the files of the workspace.",
                  "inputSchema": { "type": "object", "properties": {} } }
            ],
            "nextCursor": "next-page-cursor"
        })
    );
    let parsed = mcp::parse_list_tools_result(&exported).unwrap();
    assert_eq!(parsed.tools, tools);
    assert_eq!(parsed.next_cursor.as_deref(), Some("next-page-cursor"));
}

#[test]
fn last_page_has_no_cursor_field() {
    let exported = serde_json::to_value(mcp::export_list_tools_result(&tools(), None)).unwrap();

    assert!(exported.get("nextCursor").is_none());
    assert_eq!(
        mcp::parse_list_tools_result(&exported).unwrap().next_cursor,
        None
    );
}

#[test]
fn title_annotations_and_output_schema_are_kept_for_mcp_only() {
    let result = json!({
        "tools": [{
            "name": "get_weather_data",
            "title": "Weather Data Retriever",
            "description": "Get current weather data for a location",
            "inputSchema": {
                "type": "object",
                "properties": { "location": { "type": "string" } },
                "required": ["location"]
            },
            "outputSchema": {
                "type": "object",
                "properties": { "temperature": { "type": "number" } },
                "required": ["temperature"]
            },
            "annotations": { "title": "Weather", "readOnlyHint": true, "openWorldHint": true },
            "_meta": { "vendor": "example" }
        }],
        "_meta": {}
    });

    let listed = mcp::parse_list_tools_result(&result).unwrap();

    assert_eq!(listed.tools.len(), 1);
    let tool = &listed.tools[0];
    assert_eq!(tool.name, "get_weather_data");
    assert_eq!(tool.description, "Get current weather data for a location");
    assert_eq!(tool.parameters, result["tools"][0]["inputSchema"]);
    assert_eq!(tool.strict, None);
    // Every other tool field is kept as MCP extras...
    assert_eq!(tool.extras.format(), Some(WireFormat::McpToolsList));
    let mut kept: Vec<&str> = tool.extras.fields().keys().map(String::as_str).collect();
    kept.sort_unstable();
    assert_eq!(kept, ["_meta", "annotations", "outputSchema", "title"]);

    // ...and written back to MCP; the result's own `_meta` is not read.
    let exported =
        serde_json::to_value(mcp::export_list_tools_result(&listed.tools, None)).unwrap();
    assert_eq!(exported, json!({ "tools": result["tools"] }));

    // Other formats never see them.
    let info = std::slice::from_ref(tool);
    assert_eq!(
        serde_json::to_value(openai::export_tools(info)).unwrap(),
        json!([{ "type": "function", "function": {
            "name": "get_weather_data",
            "description": "Get current weather data for a location",
            "parameters": result["tools"][0]["inputSchema"]
        } }])
    );
    assert_eq!(
        serde_json::to_value(anthropic::export_tools(info)).unwrap(),
        json!([{
            "name": "get_weather_data",
            "description": "Get current weather data for a location",
            "input_schema": result["tools"][0]["inputSchema"]
        }])
    );
}

#[test]
fn missing_description_parses_to_empty_and_is_omitted_again() {
    let result = json!({
        "tools": [{ "name": "ping", "inputSchema": { "type": "object" } }]
    });

    let listed = mcp::parse_list_tools_result(&result).unwrap();
    assert_eq!(
        listed.tools,
        vec![ToolInfo::new("ping", "", json!({ "type": "object" }))]
    );

    let exported =
        serde_json::to_value(mcp::export_list_tools_result(&listed.tools, None)).unwrap();
    assert_eq!(exported, result);
}

#[test]
fn tool_without_input_schema_is_a_missing_field() {
    let error = mcp::parse_list_tools_result(&json!({
        "tools": [
            { "name": "ok", "inputSchema": { "type": "object" } },
            { "name": "broken", "description": "No schema." }
        ]
    }))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "inputSchema".into()
        }
    );
    assert_eq!(error.path, "result.tools[1]");
    assert_eq!(error.format, WireFormat::McpToolsList);
    assert_eq!(
        error.to_string(),
        "MCP tools/list: at result.tools[1]: missing field `inputSchema`"
    );
}

#[test]
fn tool_without_name_is_a_missing_field() {
    let error = mcp::parse_list_tools_result(&json!({
        "tools": [{ "inputSchema": { "type": "object" } }]
    }))
    .unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "name".into()
        }
    );
    assert_eq!(error.path, "result.tools[0]");
}

#[test]
fn missing_tools_is_a_missing_field() {
    let error = mcp::parse_list_tools_result(&json!({ "nextCursor": "x" })).unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::MissingField {
            field: "tools".into()
        }
    );
    assert_eq!(error.path, "result");
}

#[test]
fn cursor_that_is_not_a_string_is_a_wrong_type() {
    let error = mcp::parse_list_tools_result(&json!({ "tools": [], "nextCursor": 2 })).unwrap_err();

    assert_eq!(
        &error.kind,
        &WireErrorKind::WrongType {
            field: "nextCursor".into(),
            expected: "a string".into(),
            found: "a number".into()
        }
    );
    assert_eq!(error.path, "result.nextCursor");
}

#[test]
fn payloads_of_the_wrong_shape_never_panic() {
    for payload in [
        json!(null),
        json!([]),
        json!({ "tools": null }),
        json!({ "tools": {} }),
        json!({ "tools": [1] }),
        json!({ "tools": [{ "name": 1, "inputSchema": {} }] }),
        json!({ "tools": [{ "name": "x", "description": false, "inputSchema": {} }] }),
    ] {
        assert!(mcp::parse_list_tools_result(&payload).is_err(), "{payload}");
    }
}
