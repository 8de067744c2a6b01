//! Tool parameters as each provider accepts them, in the bodies the
//! models send (`wire::tool_schema`), held to the providers' rules
//! (`wire_rules`): OpenAI's refusals of an object schema without
//! `properties` and an array schema without `items`, which MCP servers
//! send, are repaired losslessly; Gemini's refusal of a `$ref` beside other
//! keys is repaired by inlining, and what cannot be is refused unsent.

use agent_loop::conversation::Message;
use agent_loop::model::{GeminiModel, ModelErrorKind, OpenAiModel, OpenAiResponsesModel};
use agent_loop::tool::ToolInfo;
use agent_loop::turn::ModelRequest;
use serde_json::{Value, json};

/// An MCP server's tools as they come: one without parameters, one with
/// a list of anything.
fn mcp_tools() -> Vec<ToolInfo> {
    vec![
        ToolInfo::new("get_lists", "Lists the lists.", json!({ "type": "object" })),
        ToolInfo::new(
            "tag",
            "Tags a bookmark.",
            json!({ "type": "object", "properties": { "tags": { "type": "array" } }, "required": ["tags"] }),
        ),
    ]
}

fn sent(bytes: Result<Vec<u8>, agent_loop::model::ModelError>) -> Value {
    serde_json::from_slice(&bytes.expect("the request is sent")).expect("JSON")
}

#[test]
fn openai_bodies_carry_properties_and_items() {
    let conversation = [Message::user("Tag it.")];
    let tools = mcp_tools();
    let request = ModelRequest::new(&conversation).tools(&tools[..]);

    let chat = sent(OpenAiModel::new("gpt-4.1").request_body_bytes(&request));
    let parameters: Vec<&Value> = chat["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| &tool["function"]["parameters"])
        .collect();
    assert_eq!(
        parameters,
        [
            &json!({ "type": "object", "properties": {} }),
            &json!({ "type": "object", "properties": { "tags": { "type": "array", "items": {} } }, "required": ["tags"] }),
        ]
    );
    for (index, parameters) in parameters.iter().enumerate() {
        let violations =
            crate::wire_rules::openai_parameters_violations(parameters, &format!("tools[{index}]"));
        assert!(violations.is_empty(), "{violations:?}");
    }

    let responses = sent(OpenAiResponsesModel::new("gpt-5").request_body_bytes(&request));
    let violations = crate::wire_rules::responses_tool_violations(&responses["tools"]);
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(
        responses["tools"][0]["parameters"],
        json!({ "type": "object", "properties": {} })
    );

    // The rule itself fails on the tools as declared.
    let declared = crate::wire_rules::openai_parameters_violations(&tools[1].parameters, "tag");
    assert_eq!(
        declared,
        ["tag/properties/tags: array schema missing items"]
    );
}

#[test]
fn gemini_bodies_carry_inlined_refs_and_refuse_what_cannot_be() {
    let conversation = [Message::user("Plot it.")];
    let point = ToolInfo::new(
        "plot",
        "Plots a point.",
        json!({
            "type": "object",
            "properties": { "at": { "$ref": "#/$defs/Point", "title": "Where" } },
            "$defs": { "Point": { "type": "object", "properties": { "x": { "type": "number" } } } }
        }),
    );
    let tools = [point.clone()];
    let body = sent(
        GeminiModel::new("gemini-2.5-flash")
            .request_body_bytes(&ModelRequest::new(&conversation).tools(&tools[..])),
    );
    let violations = crate::wire_rules::gemini_tool_violations(&body["tools"]);
    assert!(violations.is_empty(), "{violations:?}");
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["properties"]["at"],
        json!({ "type": "object", "properties": { "x": { "type": "number" } }, "title": "Where" })
    );
    // The rule fails on the tool as declared.
    let declared = json!([{ "functionDeclarations": [{ "name": "plot", "parametersJsonSchema": point.parameters }] }]);
    assert_eq!(
        crate::wire_rules::gemini_tool_violations(&declared).len(),
        1
    );

    let linked_list = ToolInfo::new(
        "walk",
        "Walks a list.",
        json!({
            "type": "object",
            "properties": { "head": { "$ref": "#/$defs/Node", "title": "Head" } },
            "$defs": { "Node": { "type": "object", "properties": { "next": { "$ref": "#/$defs/Node", "title": "Next" } } } }
        }),
    );
    let tools = [linked_list];
    let error = GeminiModel::new("gemini-2.5-flash")
        .request_body_bytes(&ModelRequest::new(&conversation).tools(&tools[..]))
        .expect_err("refused unsent");
    assert_eq!(error.kind, ModelErrorKind::Request);
    assert_eq!(
        error.message.as_deref(),
        Some(
            "the parameters of tool `walk` cannot be sent to Gemini: the schema at `/properties/head/properties/next` cannot be sent: `$ref` \"#/$defs/Node\" refers to itself and has keys beside it, which Gemini refuses; the request was not sent"
        )
    );
}
