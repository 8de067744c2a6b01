//! What a turn cost: a two-request turn (a tool call, then the answer) on
//! each HTTP model against a loopback server that reports usage in the
//! provider's own fields, priced at the model catalog's prices for a real
//! model of that provider. `TurnStats::cost` equals the sum computed by
//! hand from the raw fields as each provider bills them:
//!
//! - OpenAI (Chat Completions, Responses): `prompt_tokens` /
//!   `input_tokens` hold the cached ones (`cached_tokens`), billed at the
//!   cache price; `completion_tokens` / `output_tokens` hold the reasoning
//!   tokens, billed as output.
//! - Anthropic: `input_tokens` holds neither cache reads nor writes
//!   (`cache_read_input_tokens`, `cache_creation_input_tokens`), each
//!   billed at its own price.
//! - Gemini: `promptTokenCount` holds `cachedContentTokenCount`; thoughts
//!   (`thoughtsTokenCount`) are billed as output beside
//!   `candidatesTokenCount`.

use agent_loop::catalog::{Catalog, ModelFacts};
use agent_loop::conversation::{Cost, Message, Prices};
use agent_loop::model::{
    AnthropicModel, GeminiModel, HttpModel, OpenAiModel, OpenAiResponsesModel, Provider,
};
use agent_loop::turn::TurnOptions;
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::{FAKE_KEY, echo};

/// The catalog's entry for `provider`/`id`.
fn facts(provider: &str, id: &str) -> ModelFacts {
    Catalog::builtin()
        .get(provider, id)
        .cloned()
        .unwrap_or_else(|| panic!("the catalog holds {provider}/{id}"))
}

/// `tokens` at `per_million` dollars, in picodollars.
fn at(tokens: u64, per_million: f64) -> u64 {
    tokens * (per_million * 1e6).round() as u64
}

/// Runs a turn of one `lookup` call then an answer, the server answering
/// `first` then `second`; returns the turn's cost.
async fn turn_cost<P: Provider>(
    model: impl Fn(&MockServer) -> HttpModel<P>,
    first: Value,
    second: Value,
) -> Option<Cost> {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(first))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(second))
        .mount(&server)
        .await;
    let session = agent_loop::Definition::builder()
        .name("priced")
        .tool(echo("lookup"))
        .build()
        .validate()
        .expect("valid")
        .bind(agent_loop::Bindings::new(
            agent_loop::SessionId::new(),
            agent_loop::LoopId::new(),
        ))
        .await
        .expect("binds");
    let mut conversation = vec![Message::user("Look it up.")];
    let outcome = session
        .run_turn(&model(&server), &mut conversation, TurnOptions::default())
        .await
        .expect("the turn completes");
    assert_eq!(server.received_requests().await.map(|r| r.len()), Some(2));
    outcome.stats.cost
}

#[tokio::test]
async fn openai_chat_completions() {
    let facts = facts("openai", "gpt-5.4");
    let prices = facts.prices.expect("priced");
    let usage = |prompt: u64, cached: u64, completion: u64, reasoning: u64| {
        json!({ "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": { "cached_tokens": cached },
            "completion_tokens_details": { "reasoning_tokens": reasoning } })
    };
    let first = json!({ "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-5.4",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": { "role": "assistant", "content": null,
            "tool_calls": [{ "id": "call_1", "type": "function", "function": { "name": "lookup", "arguments": "{}" } }] } }],
        "usage": usage(1200, 1024, 300, 200) });
    let second = json!({ "id": "c2", "object": "chat.completion", "created": 0, "model": "gpt-5.4",
        "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": "Found." } }],
        "usage": usage(1500, 1152, 40, 0) });
    let cost = turn_cost(
        |server| {
            OpenAiModel::new("gpt-5.4")
                .base_url(format!("{}/v1", server.uri()))
                .api_key(FAKE_KEY)
                .facts(facts.clone())
        },
        first,
        second,
    )
    .await;
    let cache_read = prices.cache_read.expect("a cache price");
    let expected = at(1200 - 1024, prices.input)
        + at(1024, cache_read)
        + at(300, prices.output)
        + at(1500 - 1152, prices.input)
        + at(1152, cache_read)
        + at(40, prices.output);
    assert_eq!(cost, Some(Cost::from_picodollars(expected)));
}

#[tokio::test]
async fn openai_responses() {
    let facts = facts("openai", "gpt-5.4");
    let prices = facts.prices.expect("priced");
    let usage = |input: u64, cached: u64, output: u64, reasoning: u64| {
        json!({ "input_tokens": input, "output_tokens": output, "total_tokens": input + output,
            "input_tokens_details": { "cached_tokens": cached },
            "output_tokens_details": { "reasoning_tokens": reasoning } })
    };
    let first = json!({ "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5.4",
        "output": [{ "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": "{}", "status": "completed" }],
        "usage": usage(900, 512, 250, 180) });
    let second = json!({ "id": "resp_2", "object": "response", "status": "completed", "model": "gpt-5.4",
        "output": [{ "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": "Found.", "annotations": [] }] }],
        "usage": usage(1000, 896, 30, 0) });
    let cost = turn_cost(
        |server| {
            OpenAiResponsesModel::new("gpt-5.4")
                .base_url(format!("{}/v1", server.uri()))
                .api_key(FAKE_KEY)
                .facts(facts.clone())
        },
        first,
        second,
    )
    .await;
    let cache_read = prices.cache_read.expect("a cache price");
    let expected = at(900 - 512, prices.input)
        + at(512, cache_read)
        + at(250, prices.output)
        + at(1000 - 896, prices.input)
        + at(896, cache_read)
        + at(30, prices.output);
    assert_eq!(cost, Some(Cost::from_picodollars(expected)));
}

#[tokio::test]
async fn anthropic_messages() {
    let facts = facts("anthropic", "claude-sonnet-4-5");
    let prices = facts.prices.expect("priced");
    let usage = |input: u64, read: u64, write: u64, output: u64| {
        json!({ "input_tokens": input, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write, "output_tokens": output })
    };
    let first = json!({ "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{ "type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {} }],
        "stop_reason": "tool_use", "usage": usage(40, 0, 2000, 120) });
    let second = json!({ "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{ "type": "text", "text": "Found." }],
        "stop_reason": "end_turn", "usage": usage(60, 2000, 0, 15) });
    let cost = turn_cost(
        |server| {
            AnthropicModel::new("claude-sonnet-4-5")
                .base_url(server.uri())
                .api_key(FAKE_KEY)
                .facts(facts.clone())
        },
        first,
        second,
    )
    .await;
    let (read, write) = (
        prices.cache_read.expect("a read price"),
        prices.cache_write.expect("a write price"),
    );
    let expected = at(40, prices.input)
        + at(2000, write)
        + at(120, prices.output)
        + at(60, prices.input)
        + at(2000, read)
        + at(15, prices.output);
    assert_eq!(cost, Some(Cost::from_picodollars(expected)));
}

#[tokio::test]
async fn gemini() {
    let facts = facts("google", "gemini-2.5-flash");
    let prices = facts.prices.expect("priced");
    let usage = |prompt: u64, cached: u64, candidates: u64, thoughts: u64| {
        json!({ "promptTokenCount": prompt, "cachedContentTokenCount": cached,
            "candidatesTokenCount": candidates, "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + candidates + thoughts })
    };
    let first = json!({ "candidates": [{ "content": { "role": "model", "parts": [
            { "functionCall": { "name": "lookup", "args": {} } }] }, "finishReason": "STOP" }],
        "usageMetadata": usage(800, 0, 20, 300) });
    let second = json!({ "candidates": [{ "content": { "role": "model", "parts": [{ "text": "Found." }] },
            "finishReason": "STOP" }],
        "usageMetadata": usage(1100, 768, 10, 0) });
    let cost = turn_cost(
        |server| {
            GeminiModel::new("gemini-2.5-flash")
                .base_url(server.uri())
                .api_key(FAKE_KEY)
                .facts(facts.clone())
        },
        first,
        second,
    )
    .await;
    let cache_read = prices.cache_read.expect("a cache price");
    let expected = at(800, prices.input)
        + at(20 + 300, prices.output)
        + at(1100 - 768, prices.input)
        + at(768, cache_read)
        + at(10, prices.output);
    assert_eq!(cost, Some(Cost::from_picodollars(expected)));
}

#[tokio::test]
async fn a_model_without_prices_costs_unknown_and_options_prices_win() {
    let first = json!({ "id": "c1", "object": "chat.completion", "created": 0, "model": "local",
        "choices": [{ "index": 0, "finish_reason": "stop", "message": { "role": "assistant", "content": "Hi." } }],
        "usage": { "prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500 } });
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(first))
        .mount(&server)
        .await;
    let model = OpenAiModel::new("local")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY);
    let session = agent_loop::Definition::builder()
        .name("unpriced")
        .build()
        .validate()
        .expect("valid")
        .bind(agent_loop::Bindings::new(
            agent_loop::SessionId::new(),
            agent_loop::LoopId::new(),
        ))
        .await
        .expect("binds");
    let mut conversation = vec![Message::user("Hello")];
    let outcome = session
        .run_turn(&model, &mut conversation, TurnOptions::default())
        .await
        .expect("answered");
    assert_eq!(
        outcome.stats.cost, None,
        "a local server's model has no prices"
    );
    let mut conversation = vec![Message::user("Hello")];
    let options = TurnOptions::builder().prices(Prices::new(1.0, 2.0)).build();
    let outcome = session
        .run_turn(&model, &mut conversation, options)
        .await
        .expect("answered");
    // 1,000 × $1 + 500 × $2 per million.
    assert_eq!(outcome.stats.cost.map(Cost::usd), Some(0.002));
}
