//! `testing::SchemaModel` and `testing::generate`: arguments made from a
//! tool's schema pass that schema (checked again with `jsonschema`) for
//! every tool schema of the recorded real traffic, and for random schemas;
//! a keyword the generator cannot honour is reported, not skipped; a tool
//! that refuses what its schema admits is found.

use std::path::Path;

use agent_loop::ToolLimits;
use agent_loop::conversation::Message;
use agent_loop::testing::{SchemaModel, generate};
use agent_loop::tool::{self, BoxError, ToolInfo};

use crate::turn_common::bind_tools;
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Every tool parameter schema in the recorded traffic: the values of
/// `parameters`, `input_schema` and `inputSchema` that are JSON Schema
/// objects (`"type": "object"`; Gemini's upper-case OpenAPI types are
/// another dialect).
fn recorded_schemas() -> Vec<(String, Value)> {
    fn walk(value: &Value, file: &str, found: &mut Vec<(String, Value)>) {
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    if matches!(key.as_str(), "parameters" | "input_schema" | "inputSchema")
                        && item.get("type") == Some(&json!("object"))
                    {
                        found.push((file.to_owned(), item.clone()));
                    }
                    walk(item, file, found);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, file, found)),
            _ => {}
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wire-real");
    let mut found = Vec::new();
    for folder in std::fs::read_dir(&root).unwrap() {
        let folder = folder.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&folder).unwrap() {
            let file = file.unwrap().path();
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            if let Ok(value) = serde_json::from_str::<Value>(&text) {
                walk(&value, &file.display().to_string(), &mut found);
            }
        }
    }
    found
}

/// `None` when the value generated for `schema` passes it, or the
/// generator named a keyword it does not support there (a `pattern`, ...);
/// the validation errors otherwise: a value the generator got wrong. The
/// generator names those too (`...: invalid`), which must match.
fn unexplained_failure(schema: &Value, seed: u64) -> Option<String> {
    let generated = generate(schema, seed);
    let validator = match jsonschema::validator_for(schema) {
        Ok(validator) => validator,
        Err(error) => return Some(format!("{schema} does not compile: {error}")),
    };
    let errors: Vec<String> = validator
        .iter_errors(&generated.value)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    let invalid = generated
        .unsatisfied
        .iter()
        .filter(|note| note.ends_with(": invalid"))
        .count();
    if errors.is_empty() != (invalid == 0) {
        return Some(format!(
            "{} for {schema}: errors {errors:?} but notes {:?}",
            generated.value, generated.unsatisfied
        ));
    }
    let unsupported = generated.unsatisfied.len() - invalid;
    (!errors.is_empty() && unsupported == 0)
        .then(|| format!("{} for {}: {errors:?}", generated.value, schema))
}

#[test]
fn arguments_for_every_recorded_tool_schema_pass_it_or_say_why_not() {
    let schemas = recorded_schemas();
    assert!(schemas.len() >= 100, "{} schemas", schemas.len());
    let mut unsatisfied = 0;
    for (file, schema) in &schemas {
        for seed in 0..4 {
            if let Some(failure) = unexplained_failure(schema, seed) {
                panic!("{file}: {failure}");
            }
            unsatisfied += usize::from(!generate(schema, seed).unsatisfied.is_empty());
        }
    }
    // Most recorded schemas are plain: a few name a pattern.
    assert!(
        unsatisfied < schemas.len(),
        "{unsatisfied} of {}",
        schemas.len() * 4
    );
}

#[test]
fn the_same_seed_makes_the_same_arguments_and_another_seed_others() {
    let schema = json!({"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}
    }, "required": ["city", "days"]});
    assert_eq!(generate(&schema, 3), generate(&schema, 3));
    let values: std::collections::HashSet<String> = (0..8)
        .map(|seed| generate(&schema, seed).value.to_string())
        .collect();
    assert!(values.len() > 1, "{values:?}");
}

#[test]
fn a_range_no_integer_fits_is_reported_and_so_is_the_value_that_fails_it() {
    let generated = generate(
        &json!({"type": "integer", "minimum": 1.2, "maximum": 1.8}),
        0,
    );
    assert_eq!(
        generated.unsatisfied,
        ["/: maximum", "/maximum: invalid"],
        "{:?}",
        generated.value
    );
}

#[test]
fn keywords_it_cannot_honour_are_named_with_their_path() {
    let schema = json!({"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "when": {"type": "string", "format": "duration"}
    }, "required": ["code", "when"]});
    assert_eq!(
        generate(&schema, 1).unsatisfied,
        [
            "/properties/code: pattern",
            "/properties/when: format duration",
            "/properties/code/pattern: invalid"
        ]
    );
}

/// A random JSON Schema of the shapes tool parameters take.
fn schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        (0u64..5, 5u64..20)
            .prop_map(|(min, max)| json!({"type": "string", "minLength": min, "maxLength": max})),
        Just(json!({"type": "string", "format": "date-time"})),
        Just(json!({"type": "string", "format": "email"})),
        (-50i64..50, 0i64..100).prop_map(
            |(min, span)| json!({"type": "integer", "minimum": min, "maximum": min + span})
        ),
        (0i64..10)
            .prop_map(|min| json!({"type": "integer", "exclusiveMinimum": min, "multipleOf": 3})),
        Just(json!({"type": "number", "minimum": 0.5, "exclusiveMaximum": 2.5})),
        Just(json!({"type": "boolean"})),
        Just(json!({"enum": ["a", "b", 3]})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 1}]})),
        // Bounds that combine: the larger lower one holds.
        Just(json!({"type": "integer", "minimum": 10, "exclusiveMinimum": 0, "maximum": 12})),
        Just(json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.1})),
        Just(json!({"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.1})),
        Just(json!({"type": "integer", "minimum": 1.2, "maximum": 7.8})),
        Just(json!({"type": "string", "maxLength": 0})),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            (
                proptest::collection::btree_map("[a-d]{1,3}", inner.clone(), 0..4),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(properties, all_required, closed)| {
                    let required: Vec<&String> = if all_required {
                        properties.keys().collect()
                    } else {
                        properties.keys().take(1).collect()
                    };
                    json!({"type": "object", "properties": properties, "required": required,
                           "additionalProperties": !closed})
                }),
            (inner.clone(), 0u64..3, 3u64..6).prop_map(|(items, min, max)| {
                json!({"type": "array", "items": items, "minItems": min, "maxItems": max})
            }),
            proptest::collection::vec(inner, 1..3).prop_map(|parts| {
                let parts: Vec<Value> = parts
                    .into_iter()
                    .enumerate()
                    .map(|(i, part)| json!({"type": "object", "properties": {format!("p{i}"): part}, "required": [format!("p{i}")]}))
                    .collect();
                json!({"allOf": parts})
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arguments_for_any_schema_of_supported_keywords_pass_it(schema in schema(), seed in any::<u64>()) {
        prop_assert_eq!(unexplained_failure(&schema, seed), None);
        // Every keyword here is supported: nothing may be noted at all.
        let generated = generate(&schema, seed);
        prop_assert!(generated.unsatisfied.is_empty(), "{} for {}: {:?}", generated.value, schema, generated.unsatisfied);
    }
}

fn weather(refuse_after_days: i64) -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::new(
            "weather",
            "The forecast.",
            json!({"type": "object", "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 7}
            }, "required": ["city", "days"]}),
        ),
        move |arguments: Value, _context| async move {
            let days = arguments["days"].as_i64().unwrap_or(0);
            if days > refuse_after_days {
                return Err(BoxError::from(format!(
                    "only {refuse_after_days} days, not {days}"
                )));
            }
            Ok(format!("{days} days of sun"))
        },
    )
}

/// One turn of a `SchemaModel` (seed 11) over a binding of `tool`: the
/// model, for its report, and the conversation.
async fn exercise(tool: tool::Definition) -> (SchemaModel, Vec<Message>) {
    let session = bind_tools([tool], ToolLimits::new()).await;
    let model = SchemaModel::new(11);
    let mut conversation = vec![Message::user("Try every tool.")];
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    (model, conversation)
}

#[tokio::test]
async fn a_tool_refusing_what_its_schema_admits_is_reported_with_its_error() {
    let (model, conversation) = exercise(weather(0)).await;
    let report = model.report();
    assert_eq!(report.len(), 1);
    let days = report[0].arguments["days"].as_i64().unwrap();
    assert!((1..=7).contains(&days), "{:?}", report[0].arguments);
    assert_eq!(
        report[0].refused(),
        Some(format!("the tool `weather` failed: only 0 days, not {days}").as_str())
    );
    // The final answer says so, one line per call.
    assert_eq!(
        conversation.last().map(Message::text),
        Some(format!(
            "weather: error: the tool `weather` failed: only 0 days, not {days}"
        ))
    );

    // A tool that takes every admitted value is not reported.
    let (model, conversation) = exercise(weather(7)).await;
    assert_eq!(model.report()[0].refused(), None);
    assert_eq!(
        conversation.last().map(Message::text).as_deref(),
        Some("weather: ok")
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema, Debug)]
#[allow(dead_code)]
struct Forecast {
    city: String,
    days: u8,
    sunny: bool,
}

#[tokio::test]
async fn structured_output_gets_a_value_of_the_output_schema_in_both_modes() {
    use agent_loop::turn::{Output, OutputMode, TurnOptions};
    let session = bind_tools([weather(7)], ToolLimits::new()).await;
    for mode in [OutputMode::Tool, OutputMode::Native] {
        let model = SchemaModel::new(5);
        let mut conversation = vec![Message::user("Forecast?")];
        let output = Output::typed::<Forecast>().unwrap();
        let options = TurnOptions::builder()
            .output(output)
            .output_mode(mode)
            .build();
        let outcome = session
            .run_turn(&model, &mut conversation, options)
            .await
            .unwrap_or_else(|error| panic!("{mode:?}: {error}"));
        let forecast = outcome.output_as::<Forecast>().transpose().unwrap();
        assert!(forecast.is_some(), "{mode:?}: {:?}", outcome.status);
        // The tool was exercised first, in both modes.
        assert_eq!(model.report().len(), 1, "{mode:?}");
    }
}
