//! One reasoning setting on every model (`HttpModel::effort`): each
//! format's body carries it in the form its provider documents, checked
//! on the bytes a request posts; a level a provider has no name for, and
//! function tools on Chat Completions where OpenAI's newer models refuse
//! them, are refused typed before any request reaches a loopback server.

use agent_loop::conversation::Message;
use agent_loop::model::{
    AnthropicModel, Effort, GeminiModel, ModelErrorKind, OpenAiModel, OpenAiResponsesModel,
    ThinkingLevel,
};
use agent_loop::turn::{Model, ModelError, ModelRequest};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::FAKE_KEY;

/// The bytes `model` posts for a one-message request, read back.
fn sent(model: &dyn BodyOf, tools: bool) -> Value {
    let conversation = [Message::user("Plan the trip.")];
    let infos = [agent_loop::tool::ToolInfo::new(
        "lookup",
        "Looks a place up.",
        json!({ "type": "object", "properties": { "place": { "type": "string" } } }),
    )];
    let request = ModelRequest::new(&conversation);
    let request = if tools {
        request.tools(&infos)
    } else {
        request
    };
    model.bytes(&request)
}

/// The bytes a model posts, whatever its provider.
trait BodyOf {
    fn bytes(&self, request: &ModelRequest<'_>) -> Value;
}

impl<P: agent_loop::model::Provider> BodyOf for agent_loop::model::HttpModel<P> {
    fn bytes(&self, request: &ModelRequest<'_>) -> Value {
        serde_json::from_slice(&self.request_body_bytes(request).expect("a body")).expect("JSON")
    }
}

#[test]
fn openai_chat_and_responses_send_every_level_as_named() {
    for (effort, named) in [
        (Effort::None, "none"),
        (Effort::Minimal, "minimal"),
        (Effort::Low, "low"),
        (Effort::Medium, "medium"),
        (Effort::High, "high"),
        (Effort::XHigh, "xhigh"),
        (Effort::Max, "max"),
    ] {
        let chat = sent(&OpenAiModel::new("gpt-5.2").effort(effort), false);
        assert_eq!(chat["reasoning_effort"], named);
        let responses = sent(&OpenAiResponsesModel::new("gpt-5.2").effort(effort), false);
        assert_eq!(responses["reasoning"]["effort"], named);
        assert!(responses.get("reasoning_effort").is_none());
    }
    // OpenAI's own name for the setting is the same setting.
    let chat = sent(
        &OpenAiModel::new("gpt-5.2")
            .effort(Effort::High)
            .reasoning_effort(Effort::Low),
        false,
    );
    assert_eq!(chat["reasoning_effort"], "low");
}

#[test]
fn anthropic_sends_adaptive_thinking_where_the_model_takes_it_and_a_budget_elsewhere() {
    for model in ["claude-opus-4-7", "claude-sonnet-5", "claude-opus-5-1"] {
        let body = sent(&AnthropicModel::new(model).effort(Effort::High), true);
        assert_eq!(body["thinking"], json!({ "type": "adaptive" }), "{model}");
        assert_eq!(
            body["output_config"],
            json!({ "effort": "high" }),
            "{model}"
        );
        assert!(!body.to_string().contains("budget_tokens"), "{model}");
        let violations = crate::wire_rules::anthropic_thinking_violations(&body);
        assert!(violations.is_empty(), "{model}: {violations:?}");
    }
    let body = sent(
        &AnthropicModel::new("claude-sonnet-4-5").effort(Effort::High),
        true,
    );
    assert_eq!(
        body["thinking"],
        json!({ "type": "enabled", "budget_tokens": 3072 })
    );
    assert!(body.get("output_config").is_none());
    assert!(crate::wire_rules::anthropic_thinking_violations(&body).is_empty());
    // None turns thinking off (`ThinkingConfigDisabledParam`), on any
    // model that has thinking; one without it gets nothing.
    let body = sent(
        &AnthropicModel::new("claude-opus-4-7").effort(Effort::None),
        true,
    );
    assert_eq!(body["thinking"], json!({ "type": "disabled" }));
    assert!(body.get("output_config").is_none());
    let body = sent(
        &AnthropicModel::new("claude-3-5-haiku-20241022").effort(Effort::None),
        true,
    );
    assert!(body.get("thinking").is_none());
}

#[test]
fn gemini_sends_a_level_to_gemini_3_and_a_budget_to_gemini_2_5() {
    for (effort, level) in [
        (Effort::Minimal, "MINIMAL"),
        (Effort::Low, "LOW"),
        (Effort::Medium, "MEDIUM"),
        (Effort::High, "HIGH"),
    ] {
        let body = sent(&GeminiModel::new("gemini-3-flash").effort(effort), false);
        assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({ "thinkingLevel": level })
        );
    }
    for (effort, budget) in [
        (Effort::None, 0),
        (Effort::Low, 1024),
        (Effort::Medium, 8192),
        (Effort::High, 24576),
    ] {
        let body = sent(&GeminiModel::new("gemini-2.5-flash").effort(effort), false);
        assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({ "thinkingBudget": budget })
        );
    }
    // Gemini's own setters win: Gemini refuses a level and a budget
    // together, so the effort is not added to either.
    let body = sent(
        &GeminiModel::new("gemini-3-flash")
            .effort(Effort::High)
            .thinking_level(ThinkingLevel::Low),
        false,
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({ "thinkingLevel": "LOW" })
    );
}

/// A loopback server that answers nothing: any request reaching it fails
/// the test when it is dropped.
async fn untouched() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    server
}

async fn refusal(model: &dyn Model) -> ModelError {
    let conversation = [Message::user("Plan the trip.")];
    let infos = [agent_loop::tool::ToolInfo::without_parameters(
        "now",
        "The time.",
    )];
    let request = ModelRequest::new(&conversation).tools(&infos);
    let error = model.respond(request).await.expect_err("refused");
    assert_eq!(error.kind, ModelErrorKind::Request, "{error}");
    error
}

#[tokio::test]
async fn a_level_the_provider_has_no_name_for_is_refused_before_any_request() {
    let server = untouched().await;
    let anthropic = AnthropicModel::new("claude-opus-4-7")
        .base_url(server.uri())
        .api_key(FAKE_KEY)
        .effort(Effort::Minimal);
    let error = refusal(&anthropic).await;
    assert!(
        error.to_string().contains(
            "claude-opus-4-7 takes effort Low, Medium, High, XHigh or Max (Anthropic's output_config.effort levels), or None to turn thinking off, not Effort::Minimal"
        ),
        "{error}"
    );
    let gemini = |model: &str, effort| {
        GeminiModel::new(model)
            .base_url(server.uri())
            .api_key(FAKE_KEY)
            .effort(effort)
    };
    let error = refusal(&gemini("gemini-3-pro", Effort::None)).await;
    assert!(
        error.to_string().contains("effort: gemini-3-pro cannot turn thinking off: Gemini 3's least thinking level is MINIMAL"),
        "{error}"
    );
    let error = refusal(&gemini("gemini-3-flash", Effort::Max)).await;
    assert!(
        error
            .to_string()
            .contains("gemini-3-flash takes thinking levels MINIMAL to HIGH, not Effort::Max"),
        "{error}"
    );
    let error = refusal(&gemini("gemini-2.0-flash", Effort::Low)).await;
    assert!(
        error
            .to_string()
            .contains("gemini-2.0-flash takes no thinking setting (thinking came with Gemini 2.5), not Effort::Low"),
        "{error}"
    );
    let error = refusal(&gemini("gemini-2.5-pro", Effort::None)).await;
    assert!(
        error
            .to_string()
            .contains("gemini-2.5-pro cannot turn thinking off"),
        "{error}"
    );
    let error = refusal(&gemini("gemini-2.5-flash", Effort::XHigh)).await;
    assert!(
        error.to_string().contains("gemini-2.5-flash takes a thinking budget, which effort None, Low, Medium and High map to (0, 1024, 8192, 24576 tokens), not Effort::XHigh"),
        "{error}"
    );
}

#[tokio::test]
async fn function_tools_on_chat_completions_are_refused_where_openai_refuses_them() {
    // OpenAI's own endpoint: the refusal comes before any connection.
    let openai = |model: &str| OpenAiModel::new(model).api_key(FAKE_KEY).max_retries(0);
    let error = refusal(&openai("gpt-5.6-terra")).await;
    assert!(
        error.to_string().contains(
            "gpt-5.6-terra takes no function tools on Chat Completions with its default reasoning"
        ),
        "{error}"
    );
    let error = refusal(&openai("gpt-5.4").effort(Effort::Low)).await;
    assert!(
        error.to_string().contains(
            "gpt-5.4 takes no function tools on Chat Completions with reasoning_effort \"low\""
        ),
        "{error}"
    );
    let error = refusal(&openai("gpt-6-sol").effort(Effort::High)).await;
    assert!(
        error
            .to_string()
            .contains("use OpenAiResponsesModel, or set effort(Effort::None)"),
        "{error}"
    );

    // What OpenAI takes goes, on OpenAI's own endpoint (the bytes a
    // request would post, checked as `respond` checks them): gpt-5.6 with
    // effort None, gpt-5.4 without effort, a version the table does not
    // name; and gpt-5.6 with reasoning on another server, which answers
    // for itself.
    let conversation = [Message::user("Plan the trip.")];
    let infos = [agent_loop::tool::ToolInfo::without_parameters(
        "now",
        "The time.",
    )];
    let request = ModelRequest::new(&conversation).tools(&infos);
    for model in [
        openai("gpt-5.6-terra").effort(Effort::None),
        openai("gpt-5.4"),
        openai("gpt-5.7").effort(Effort::High),
        openai("gpt-5.6-terra")
            .base_url("http://127.0.0.1:9/v1")
            .effort(Effort::High),
    ] {
        let body = model.request_body_bytes(&request).expect("not refused");
        let body: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(body["tools"][0]["function"]["name"], "now");
    }
    assert!(
        openai("gpt-5.6-terra")
            .request_body_bytes(&request)
            .is_err()
    );
}
