//! Typed tools (DESIGN.md section 3, issue 3 item 9): the arguments type
//! gives the schema and the parsing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::turn_common::*;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::ToolResult;
use agent_loop::turn::ScriptedModel;
use agent_loop::{ToolLimits, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Arguments of `forecast`.
#[derive(Deserialize, JsonSchema)]
struct Forecast {
    /// City name, e.g. "Paris".
    city: String,
    /// Days ahead, 1 if left out.
    days: Option<u8>,
}

fn forecast_tool(invocations: Arc<AtomicUsize>) -> tool::Definition {
    tool::Definition::typed_fn(
        "forecast",
        "The forecast for a city.",
        move |arguments: Forecast, _context| {
            let invocations = Arc::clone(&invocations);
            async move {
                invocations.fetch_add(1, Ordering::SeqCst);
                let days = arguments.days.unwrap_or(1);
                Ok::<_, tool::BoxError>(format!("{}: sunny for {days} days", arguments.city))
            }
        },
    )
}

#[tokio::test]
async fn a_typed_tool_gets_its_schema_from_the_arguments_type() {
    let session = bind_tools([forecast_tool(Arc::default())], ToolLimits::default()).await;
    let info = session.tool("forecast").expect("bound").info().clone();

    assert_eq!(info.parameters["type"], "object");
    assert_eq!(info.parameters["required"], json!(["city"]));
    assert_eq!(info.parameters["properties"]["city"]["type"], "string");
    assert!(info.parameters["properties"]["days"].is_object());
    assert!(info.parameters.get("$schema").is_none());
    assert_eq!(info.description, "The forecast for a city.");
}

#[tokio::test]
async fn a_typed_tool_receives_parsed_arguments() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [forecast_tool(Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "forecast", r#"{"city": "Paris", "days": 3}"#),
            call("c2", "forecast", r#"{"city": "Oslo"}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("forecast");

    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    // The handler's String output is shown as text, not as a JSON string.
    assert_eq!(
        *result_for(&conversation, "c1"),
        ToolResult::ok("c1", "Paris: sunny for 3 days")
    );
    assert_eq!(
        *result_for(&conversation, "c2"),
        ToolResult::ok("c2", "Oslo: sunny for 1 days")
    );
    assert_eq!(invocations.load(Ordering::SeqCst), 2);
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn a_typed_tool_refuses_a_wrong_type_naming_the_field() {
    let invocations = Arc::new(AtomicUsize::new(0));
    let session = bind_tools(
        [forecast_tool(Arc::clone(&invocations))],
        ToolLimits::default(),
    )
    .await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "forecast", r#"{"city": 75001}"#),
            call("c2", "forecast", r#"{"city": "Rome", "days": 300}"#),
            call("c3", "forecast", r#"{"days": 2}"#),
            call("c4", "forecast", r#"{"city": "Rome"}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("forecast");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    let wrong_type = result_for(&conversation, "c1");
    assert!(wrong_type.is_error);
    assert!(wrong_type.text().contains("/city"), "{}", wrong_type.text());
    // `u8` gives the schema a maximum of 255.
    let out_of_range = result_for(&conversation, "c2");
    assert!(out_of_range.is_error);
    assert!(
        out_of_range.text().contains("/days"),
        "{}",
        out_of_range.text()
    );
    let missing = result_for(&conversation, "c3");
    assert!(missing.is_error);
    assert!(missing.text().contains("\"city\""), "{}", missing.text());
    assert!(!result_for(&conversation, "c4").is_error);
    assert_eq!(
        invocations.load(Ordering::SeqCst),
        1,
        "only the valid call ran"
    );
    let kinds: Vec<_> = outcome.stats.iterations[0]
        .calls
        .iter()
        .map(|c| c.error)
        .collect();
    assert_eq!(
        kinds,
        [
            Some(ToolCallErrorKind::InvalidArguments),
            Some(ToolCallErrorKind::InvalidArguments),
            Some(ToolCallErrorKind::InvalidArguments),
            None
        ]
    );
    assert_every_call_answered(&conversation);
}
