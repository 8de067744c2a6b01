//! The HTTP models and the model catalog: a model at its provider's own
//! endpoint goes by the catalog's facts, one elsewhere by none unless
//! given; an output limit above the model's largest output is refused
//! typed before any request reaches a loopback server.

use agent_loop::catalog::{Catalog, ModelFacts};
use agent_loop::conversation::Message;
use agent_loop::model::{AnthropicModel, GeminiModel, ModelErrorKind, OpenAiModel};
use agent_loop::turn::{Model, ModelRequest};
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::FAKE_KEY;

#[test]
fn a_model_at_its_providers_endpoint_goes_by_the_catalogs_entry() {
    let builtin = Catalog::builtin();
    let opus = AnthropicModel::new("claude-opus-4-7");
    assert_eq!(
        opus.catalog_facts(),
        builtin.get("anthropic", "claude-opus-4-7")
    );
    assert!(opus.catalog_facts().is_some());
    let gemini = GeminiModel::new("models/gemini-2.5-flash");
    assert_eq!(
        gemini.catalog_facts(),
        builtin.get("google", "gemini-2.5-flash")
    );
    // Another server, or a model the catalog does not hold: none.
    assert!(
        OpenAiModel::new("gpt-5.4")
            .base_url("http://127.0.0.1:9/v1")
            .catalog_facts()
            .is_none()
    );
    assert!(OpenAiModel::new("gpt-unknown-9").catalog_facts().is_none());
    // Facts given in code win.
    let mine = ModelFacts::new("vllm", "qwen3-32b").context_window(32_768);
    let local = OpenAiModel::new("qwen3-32b")
        .base_url("http://127.0.0.1:9/v1")
        .facts(mine.clone());
    assert_eq!(local.catalog_facts(), Some(&mine));
}

#[tokio::test]
async fn an_output_limit_above_the_largest_output_is_refused_before_any_request() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "qwen3-32b",
            "choices": [{ "index": 0, "finish_reason": "stop",
                "message": { "role": "assistant", "content": "Done." } }],
            "usage": { "prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10 }
        })))
        .expect(1)
        .mount(&server)
        .await;
    let local = |max_tokens: u32| {
        OpenAiModel::new("qwen3-32b")
            .base_url(format!("{}/v1", server.uri()))
            .api_key(FAKE_KEY)
            .facts(ModelFacts::new("vllm", "qwen3-32b").max_output_tokens(8192))
            .max_tokens(max_tokens)
    };
    let conversation = [Message::user("Hello")];
    let error = local(8193)
        .respond(ModelRequest::new(&conversation))
        .await
        .expect_err("refused");
    assert_eq!(error.kind, ModelErrorKind::Request);
    assert_eq!(
        error.message.as_deref(),
        Some(
            "max_tokens 8193 is above the largest output of qwen3-32b (8192 tokens, the model \
             catalog's `vllm/qwen3-32b`, from models.dev); the request was not sent"
        )
    );
    local(8192)
        .respond(ModelRequest::new(&conversation))
        .await
        .expect("at the largest output, sent");

    // The built-in entry at the provider's endpoint: refused before any
    // connection is made.
    let opus = AnthropicModel::new("claude-opus-4-7").api_key(FAKE_KEY);
    let largest = opus
        .catalog_facts()
        .and_then(|facts| facts.max_output_tokens)
        .expect("the catalog knows Opus 4.7's largest output");
    // The bytes a request would post, checked as `respond` checks them:
    // no connection even were the check gone.
    let error = opus
        .max_tokens(largest + 1)
        .request_body_bytes(&ModelRequest::new(&conversation))
        .expect_err("refused");
    assert_eq!(error.kind, ModelErrorKind::Request);
    assert!(
        error.to_string().contains(&format!(
            "max_tokens {} is above the largest output of claude-opus-4-7 ({largest} tokens",
            largest + 1
        )),
        "{error}"
    );
}

#[test]
fn a_models_context_window_leaves_room_for_the_answer_it_asks() {
    use agent_loop::turn::Model;
    let builtin = Catalog::builtin();
    // Anthropic's entries give a window and no largest prompt: the window
    // less max_tokens (4096 unless set).
    let window = builtin
        .get("anthropic", "claude-opus-4-7")
        .and_then(|facts| facts.context_window)
        .expect("a window");
    assert_eq!(
        AnthropicModel::new("claude-opus-4-7").context_window(),
        Some(window - 4096)
    );
    assert_eq!(
        AnthropicModel::new("claude-opus-4-7")
            .max_tokens(32_000)
            .context_window(),
        Some(window - 32_000)
    );
    // A largest prompt, where the catalog has one, is the window.
    let gpt = builtin.get("openai", "gpt-5.4").expect("in the catalog");
    if let Some(largest) = gpt.max_input_tokens {
        assert_eq!(OpenAiModel::new("gpt-5.4").context_window(), Some(largest));
    }
    // Behind another server: unknown.
    assert_eq!(
        OpenAiModel::new("gpt-5.4")
            .base_url("http://127.0.0.1:9/v1")
            .context_window(),
        None
    );
}
