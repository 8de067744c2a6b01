//! Native structured output through every HTTP model: the schema each
//! model sends passes its provider's documented rules (`wire_rules`) for a
//! `schemars` struct with a `u64`, `Option`s, nested objects, a list of
//! objects, an enum and a defaulted list; the answer is checked against the
//! full schema; an answer to OpenAI's strict schema with `null`s for the
//! optional fields is the value; and an output a provider cannot express
//! is refused before anything is sent.

use std::collections::BTreeMap;

use agent_loop::conversation::ModelResponse;
use agent_loop::model::{
    AnthropicModel, GeminiModel, ModelErrorKind, OpenAiModel, OpenAiResponsesModel,
};
use agent_loop::turn::{Model, Output, OutputMode, TurnError, TurnOptions};
use agent_loop::wire::output_schema;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;
use crate::wire_rules::{
    anthropic_output_schema_violations, gemini_response_schema_violations,
    openai_strict_schema_violations,
};

/// An order read from text.
#[derive(Clone, Debug, PartialEq, JsonSchema, Deserialize)]
struct Order {
    /// The order's number.
    number: String,
    total_cents: u64,
    due: Option<String>,
    /// Who ordered.
    customer: Customer,
    lines: Vec<Line>,
    status: Status,
    note: Option<Customer>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, JsonSchema, Deserialize)]
struct Customer {
    name: String,
    id: u32,
}

#[derive(Clone, Debug, PartialEq, JsonSchema, Deserialize)]
struct Line {
    sku: String,
    quantity: u16,
}

#[derive(Clone, Debug, PartialEq, JsonSchema, Deserialize)]
enum Status {
    Open,
    Paid,
}

/// The answer every provider gives: every field present.
const ORDER_JSON: &str = r#"{"number":"A-17","total_cents":4200,"due":"2026-01-31","customer":{"name":"Ada","id":7},"lines":[{"sku":"X-1","quantity":2}],"status":"Open","note":null,"tags":["rush"]}"#;

fn order() -> Order {
    Order {
        number: "A-17".into(),
        total_cents: 4200,
        due: Some("2026-01-31".into()),
        customer: Customer {
            name: "Ada".into(),
            id: 7,
        },
        lines: vec![Line {
            sku: "X-1".into(),
            quantity: 2,
        }],
        status: Status::Open,
        note: None,
        tags: vec!["rush".into()],
    }
}

fn anthropic_answer(text: &str) -> Value {
    json!({
        "id": "msg_native", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{ "type": "text", "text": text }],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": { "input_tokens": 10, "output_tokens": 12 }
    })
}

fn chat_answer(text: &str) -> Value {
    json!({
        "id": "chatcmpl-native", "object": "chat.completion", "created": 0, "model": "gpt-4o",
        "choices": [{ "index": 0, "finish_reason": "stop",
                      "message": { "role": "assistant", "content": text, "refusal": null } }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22 }
    })
}

fn responses_answer(text: &str) -> Value {
    json!({
        "id": "resp_native", "object": "response", "status": "completed",
        "output": [{ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{ "type": "output_text", "text": text, "annotations": [] }] }]
    })
}

fn gemini_answer(text: &str) -> Value {
    json!({
        "candidates": [{ "content": { "role": "model", "parts": [{ "text": text }] }, "finishReason": "STOP" }]
    })
}

async fn server_answering(body: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    server
}

/// A native-output turn asking `model` for `output`.
async fn native_turn<M: Model>(model: &M, output: Output) -> Result<Value, TurnError> {
    let session = session_for(&ModelResponse::answer("")).await;
    let options = TurnOptions::builder()
        .output(output)
        .output_mode(OutputMode::Native)
        .build();
    let outcome = session.run_turn(model, &mut start(), options).await?;
    Ok(outcome
        .output()
        .cloned()
        .expect("the turn ends in its output"))
}

fn order_output() -> Output {
    Output::typed::<Order>().expect("a valid schema")
}

fn anthropic(server: &MockServer) -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-5")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
}

fn chat(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("gpt-4o")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
}

fn responses(server: &MockServer) -> OpenAiResponsesModel {
    OpenAiResponsesModel::new("gpt-4o")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
}

fn gemini(server: &MockServer) -> GeminiModel {
    GeminiModel::new("gemini-test")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
}

async fn sent_once(server: &MockServer) -> Value {
    let mut bodies = bodies(server).await;
    assert_eq!(bodies.len(), 1, "one request");
    bodies.remove(0)
}

/// The checks can fail: the full `schemars` schema breaks each provider's
/// rules, in the places the issue names.
#[test]
fn the_full_order_schema_breaks_every_providers_rules() {
    let output = order_output();
    let anthropic = anthropic_output_schema_violations(output.schema());
    assert!(
        anthropic
            .contains(&r#"/properties/total_cents: keyword "minimum" is not supported"#.to_owned())
            && anthropic
                .contains(&r#"/properties/total_cents: format "uint64" on "integer""#.to_owned())
            && anthropic.contains(&": an object without additionalProperties: false".to_owned())
            && anthropic
                .contains(&r#"/properties/due: no single type (["string","null"])"#.to_owned()),
        "{anthropic:#?}"
    );
    let strict = openai_strict_schema_violations(output.schema());
    assert!(
        strict
            .iter()
            .any(|violation| violation.starts_with(": required {")),
        "{strict:#?}"
    );
    assert!(
        strict.contains(&r#"/properties/customer: keywords beside $ref"#.to_owned()),
        "{strict:#?}"
    );
    let gemini = gemini_response_schema_violations(output.schema());
    assert!(
        gemini.contains(&r#"/properties/tags: keyword "default" is not supported"#.to_owned())
            && gemini.contains(&r#"/properties/customer: keywords beside $ref"#.to_owned()),
        "{gemini:#?}"
    );
}

#[tokio::test]
async fn anthropic_is_sent_its_subset_and_the_answer_is_the_order() {
    let server = server_answering(anthropic_answer(ORDER_JSON)).await;
    let value = native_turn(&anthropic(&server), order_output())
        .await
        .unwrap();
    assert_eq!(serde_json::from_value::<Order>(value).unwrap(), order());
    let body = sent_once(&server).await;
    let schema = &body["output_config"]["format"]["schema"];
    let violations = anthropic_output_schema_violations(schema);
    assert!(violations.is_empty(), "{violations:#?}\n{schema:#}");
    assert_eq!(
        schema["properties"]["total_cents"],
        json!({ "type": "integer", "description": "{\"format\":\"uint64\",\"minimum\":0}" })
    );
    assert_eq!(
        *schema,
        output_schema::anthropic(order_output().schema()).unwrap()
    );
}

#[tokio::test]
async fn openai_chat_strict_is_sent_the_strict_form_and_nulls_of_optional_fields_read_as_absent() {
    // Strict mode's answer: every property present, the optional ones null.
    let answer = r#"{"number":"A-17","total_cents":4200,"due":null,"customer":{"name":"Ada","id":7},"lines":[],"status":"Paid","note":null,"tags":null}"#;
    let server = server_answering(chat_answer(answer)).await;
    let value = native_turn(&chat(&server).strict_output(true), order_output())
        .await
        .unwrap();
    assert_eq!(
        value,
        json!({"number":"A-17","total_cents":4200,"customer":{"name":"Ada","id":7},"lines":[],"status":"Paid"}),
        "the nulls of fields that were optional are left out"
    );
    assert_eq!(
        serde_json::from_value::<Order>(value).unwrap(),
        Order {
            due: None,
            lines: vec![],
            status: Status::Paid,
            tags: vec![],
            ..order()
        }
    );
    let body = sent_once(&server).await;
    let format = &body["response_format"]["json_schema"];
    assert_eq!(format["strict"], true);
    let violations = openai_strict_schema_violations(&format["schema"]);
    assert!(
        violations.is_empty(),
        "{violations:#?}\n{:#}",
        format["schema"]
    );
    assert_eq!(
        format["schema"]["properties"]["tags"]["type"],
        json!(["array", "null"])
    );
}

#[tokio::test]
async fn openai_chat_without_strict_is_sent_the_full_schema() {
    let server = server_answering(chat_answer(ORDER_JSON)).await;
    let value = native_turn(&chat(&server), order_output()).await.unwrap();
    assert_eq!(serde_json::from_value::<Order>(value).unwrap(), order());
    let body = sent_once(&server).await;
    assert_eq!(body["response_format"]["json_schema"]["strict"], false);
    assert_eq!(
        body["response_format"]["json_schema"]["schema"],
        *order_output().schema()
    );
}

#[tokio::test]
async fn openai_responses_strict_is_sent_the_strict_form() {
    let server = server_answering(responses_answer(ORDER_JSON)).await;
    let value = native_turn(&responses(&server).strict_output(true), order_output())
        .await
        .unwrap();
    assert_eq!(serde_json::from_value::<Order>(value).unwrap(), order());
    let body = sent_once(&server).await;
    let format = &body["text"]["format"];
    assert_eq!(format["strict"], true);
    let violations = openai_strict_schema_violations(&format["schema"]);
    assert!(
        violations.is_empty(),
        "{violations:#?}\n{:#}",
        format["schema"]
    );
    assert_eq!(
        format["schema"],
        output_schema::openai_strict(order_output().schema()).unwrap()
    );
}

#[tokio::test]
async fn gemini_is_sent_its_subset_and_the_answer_is_the_order() {
    let server = server_answering(gemini_answer(ORDER_JSON)).await;
    let value = native_turn(&gemini(&server), order_output()).await.unwrap();
    assert_eq!(serde_json::from_value::<Order>(value).unwrap(), order());
    let body = sent_once(&server).await;
    let schema = &body["generationConfig"]["responseJsonSchema"];
    let violations = gemini_response_schema_violations(schema);
    assert!(violations.is_empty(), "{violations:#?}\n{schema:#}");
    assert_eq!(
        schema["properties"]["total_cents"],
        json!({ "type": "integer", "minimum": 0, "description": "{\"format\":\"uint64\"}" })
    );
}

/// What a provider's constrained decoding no longer checks (the `u64`'s
/// `minimum: 0` is not sent to Anthropic) the local check still does: a
/// negative total is not the output, and the model is asked again.
#[tokio::test]
async fn a_constraint_not_sent_is_still_checked_locally() {
    let server = MockServer::start().await;
    let negative = ORDER_JSON.replace("4200", "-1");
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_answer(&negative)))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(anthropic_answer(ORDER_JSON)))
        .mount(&server)
        .await;
    let value = native_turn(&anthropic(&server), order_output())
        .await
        .unwrap();
    assert_eq!(serde_json::from_value::<Order>(value).unwrap(), order());
    assert_eq!(bodies(&server).await.len(), 2, "asked again once");
}

/// A map field: Anthropic and OpenAI strict mode cannot express it (closing
/// it would make every answer `{}`), so the request is refused unsent;
/// Gemini and OpenAI's non-strict mode take it.
#[derive(JsonSchema, Deserialize)]
#[allow(dead_code)]
struct Counts {
    by_day: BTreeMap<String, u32>,
}

#[tokio::test]
async fn an_output_the_provider_cannot_express_is_refused_unsent() {
    let output = || Output::typed::<Counts>().expect("a valid schema");
    let expected = "native output: the schema at `/properties/by_day` cannot be sent: a map (`additionalProperties` with a schema) cannot be closed with `additionalProperties: false`; the request was not sent";

    let server = server_answering(anthropic_answer("{}")).await;
    let error = native_turn(&anthropic(&server), output())
        .await
        .unwrap_err();
    let error = model_error(&error);
    assert_eq!(error.kind, ModelErrorKind::Request);
    assert_eq!(
        error.message.as_deref(),
        Some(&*format!(
            "{expected} (ask for this output with OutputMode::Tool)"
        ))
    );
    assert!(bodies(&server).await.is_empty());

    let strict_instead =
        format!("{expected} (set strict_output(false), or ask with OutputMode::Tool)");
    let server = server_answering(chat_answer("{}")).await;
    let error = native_turn(&chat(&server).strict_output(true), output())
        .await
        .unwrap_err();
    assert_eq!(
        model_error(&error).message.as_deref(),
        Some(&*strict_instead)
    );
    let error = native_turn(&responses(&server).strict_output(true), output())
        .await
        .unwrap_err();
    assert_eq!(
        model_error(&error).message.as_deref(),
        Some(&*strict_instead)
    );
    assert!(bodies(&server).await.is_empty());

    let answer = r#"{"by_day":{"mon":3}}"#;
    let server = server_answering(chat_answer(answer)).await;
    assert_eq!(
        native_turn(&chat(&server), output()).await.unwrap(),
        json!({"by_day": {"mon": 3}})
    );
    let server = server_answering(gemini_answer(answer)).await;
    assert_eq!(
        native_turn(&gemini(&server), output()).await.unwrap(),
        json!({"by_day": {"mon": 3}})
    );
    let body = sent_once(&server).await;
    assert_eq!(
        body["generationConfig"]["responseJsonSchema"]["properties"]["by_day"]["additionalProperties"],
        json!({ "type": "integer", "minimum": 0, "description": "{\"format\":\"uint32\"}" })
    );
}

/// A reasoning model on an OpenAI-compatible server (no reasoning parser)
/// answers with its thinking first; another writes prose around one
/// fenced block.
#[tokio::test]
async fn answers_after_a_think_block_or_around_one_fenced_block_are_read() {
    let thinking =
        format!("<think>\nThe order is A-17; 42 dollars is 4200 cents.\n</think>\n\n{ORDER_JSON}");
    let server = server_answering(chat_answer(&thinking)).await;
    let value = native_turn(&chat(&server), order_output()).await.unwrap();
    assert_eq!(serde_json::from_value::<Order>(value).unwrap(), order());

    let prose =
        format!("Here is the order you asked for:\n\n```json\n{ORDER_JSON}\n```\n\nAnything else?");
    let server = server_answering(anthropic_answer(&prose)).await;
    let value = native_turn(&anthropic(&server), order_output())
        .await
        .unwrap();
    assert_eq!(serde_json::from_value::<Order>(value).unwrap(), order());
}
