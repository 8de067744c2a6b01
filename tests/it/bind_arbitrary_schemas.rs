//! The bind property (`properties::bind`): a tool with any name and any
//! schema is refused with a typed error (its name at validate, its schema
//! at bind) or binds, and a bound tool checks any arguments without
//! panicking. Checked on every schema of the recorded MCP tool lists and on
//! schemas made of JSON Schema's words. The `bind` fuzz target checks the
//! same on arbitrary bytes.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::arbitrary_json::{RECORDED, json as any_json, word};
use crate::properties::bind::check_bind;

const SCHEMA_WORDS: &[&str] = &[
    "type",
    "object",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "null",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "pattern",
    "format",
    "uri",
    "date-time",
    "email",
    "$ref",
    "#",
    "#/$defs/a",
    "#/properties/a",
    "$defs",
    "definitions",
    "a",
    "b",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "additionalProperties",
    "patternProperties",
    "minLength",
    "maxLength",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "default",
    "description",
    "title",
    "$schema",
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2020-12/schema",
    "$id",
    "$anchor",
    "dependentRequired",
    "contentEncoding",
    "[a-z]+",
    "(",
    "\\d{2,}",
];

/// A schema: mostly `"type": "object"` with generated members, so that
/// most cases get past the first check.
fn schema() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => any_json(SCHEMA_WORDS).prop_map(|members| {
            let mut schema = json!({ "type": "object" });
            if let Value::Object(members) = members {
                for (key, value) in members {
                    if key != "type" {
                        schema[key] = value;
                    }
                }
            }
            schema
        }),
        1 => any_json(SCHEMA_WORDS),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just("tool".to_owned()),
        1 => word(SCHEMA_WORDS),
        1 => Just("structured_output".to_owned()),
    ]
}

#[test]
fn every_recorded_mcp_schema_binds_or_is_refused_with_a_typed_error() {
    let mut checked = 0;
    for (path, payload) in RECORDED.iter() {
        for tool in payload["tools"].as_array().into_iter().flatten() {
            let name = tool["name"].as_str().unwrap_or("tool");
            if let Err(problem) = check_bind(name, &tool["inputSchema"], &[json!({}), json!([])]) {
                panic!("{path}: {name}: {problem}");
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} recorded schemas");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_schema_binds_or_is_refused_with_a_typed_error(
        name in name(),
        schema in schema(),
        arguments in proptest::collection::vec(any_json(SCHEMA_WORDS), 0..4),
    ) {
        check_bind(&name, &schema, &arguments).map_err(TestCaseError::fail)?;
    }
}
