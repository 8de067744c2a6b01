//! Helpers of the HTTP model tests: recorded responses, echo tools named
//! after the calls, a session that runs them, and a loopback server.
#![allow(dead_code)] // each feature uses a different subset

use std::collections::BTreeSet;
use std::path::Path;

use agent_loop::conversation::{Message, ModelResponse};
use agent_loop::tool::{self, BoxError, NameRules, ToolInfo};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId};
use serde_json::{Value, json};

/// A key no output may ever show.
pub const FAKE_KEY: &str = "sk-test-FAKE-KEY-0123456789abcdef";

/// The mode instructions every session here has.
pub const INSTRUCTIONS: &str = "You are a careful test assistant.";

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wire-real");

/// The recorded JSON file at `relative` under [`FIXTURES`]
/// (`anthropic/ant_thinking.response.json`).
pub fn fixture(relative: &str) -> Value {
    let path = format!("{FIXTURES}/{relative}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The recorded `*.response.json` files of `format`, sorted.
pub fn responses(format: &str) -> Vec<(String, Value)> {
    let mut found: Vec<(String, Value)> = std::fs::read_dir(Path::new(FIXTURES).join(format))
        .expect("fixture dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.to_string_lossy().ends_with(".response.json"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&text).expect("JSON fixture"))
        })
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!found.is_empty(), "no {format} responses");
    found
}

/// A tool that accepts any object and answers with its name and arguments.
pub fn echo(name: &str) -> tool::Definition {
    let info = ToolInfo::new(name, "", json!({ "type": "object" }));
    let name = name.to_owned();
    tool::Definition::from_fn(info, move |arguments: Value, _context| {
        let name = name.clone();
        async move { Ok::<_, BoxError>(json!({ "tool": name, "arguments": arguments })) }
    })
}

/// A session with an echo tool for every function call of `response` (at
/// least one tool, so requests carry `tools`) and [`INSTRUCTIONS`].
pub async fn session_for(response: &ModelResponse) -> Definition<Bound> {
    let mut names: BTreeSet<String> = response
        .message
        .tool_calls()
        .map(|call| call.name.clone())
        .filter(|name| NameRules::default().check(name).is_ok())
        .collect();
    names.insert("echo".to_owned());
    let tools: Vec<tool::Definition> = names.iter().map(|name| echo(name)).collect();
    Definition::builder()
        .name("http-test")
        .tools(tools)
        .instructions(INSTRUCTIONS)
        .build()
        .validate()
        .expect("valid")
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .expect("binds")
}

/// The conversation a turn starts from.
pub fn start() -> Vec<Message> {
    vec![Message::user("Please use the tools.")]
}

/// The JSON bodies the server received, in order.
pub async fn bodies(server: &wiremock::MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("recording on")
        .iter()
        .map(|request| serde_json::from_slice(&request.body).expect("a JSON body"))
        .collect()
}

/// Every text a value shows: `Display`, alternate `Debug`, and the
/// `Display` of each source.
pub fn all_output(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = format!("{error}\n{error:?}\n{error:#?}\n");
    let mut source = error.source();
    while let Some(next) = source {
        text.push_str(&format!("{next}\n{next:?}\n"));
        source = next.source();
    }
    text
}

/// The `ModelError` a failed turn carries.
pub fn model_error(error: &agent_loop::turn::TurnError) -> &agent_loop::model::ModelError {
    let agent_loop::turn::TurnError::Model { source, .. } = error else {
        panic!("not a model error: {error:?}");
    };
    source
}

/// The typed output of the native structured-output tests.
#[derive(Debug, PartialEq, schemars::JsonSchema, serde::Deserialize)]
pub struct Invoice {
    pub number: String,
    pub total_cents: u64,
}

/// The [`Invoice`] the native tests' responses hold, as JSON text.
pub const INVOICE_JSON: &str = r#"{"number":"A-17","total_cents":4200}"#;

/// Runs one native-output turn for [`Invoice`] against `model`.
pub async fn native_invoice_turn<M: agent_loop::turn::Model>(model: &M) -> Invoice {
    let session = session_for(&ModelResponse::answer("")).await;
    let options = agent_loop::turn::TurnOptions::builder()
        .output(agent_loop::turn::Output::typed::<Invoice>().expect("a valid schema"))
        .output_mode(agent_loop::turn::OutputMode::Native)
        .build();
    let outcome = session
        .run_turn(model, &mut start(), options)
        .await
        .expect("the turn ends in its output");
    outcome
        .output_as::<Invoice>()
        .expect("an output")
        .expect("an invoice")
}

/// A request body of a native-output turn: the output is no tool.
pub fn assert_no_control_tool(body: &Value) {
    let tools = body["tools"].as_array().expect("the echo tool is offered");
    assert!(
        !body
            .to_string()
            .contains(agent_loop::STRUCTURED_OUTPUT_TOOL_NAME),
        "no structured_output tool: {tools:?}"
    );
}
