//! Long sessions, the counting side: what `TokenEstimator` counts for each
//! part of a request (exact values), the `context_tokens` and `compact_at`
//! limits as configuration, `Percent`, and which provider errors say the
//! context window is full (`ModelError::exceeds_context_window`), as built
//! and as each HTTP model parses them on a loopback server.

use std::sync::Arc;

use agent_loop::ToolLimits;
use agent_loop::context::{BytesPerToken, IMAGE_TOKENS, MESSAGE_TOKENS, TokenEstimator, Tokenizer};
use agent_loop::conversation::{
    AssistantMessage, ContentPart, ImagePart, Message, Origin, ProviderPart, ReasoningPart,
    ToolCall, ToolResult, WireFormat,
};
use agent_loop::limits::{InvalidLimitKind, Limit, Percent};
use agent_loop::tool::ToolInfo;
use agent_loop::turn::{ModelError, ModelErrorKind};
use serde_json::json;

/// `ceil(bytes / 4)`, spelled out so each expected value below reads as
/// the sum it is.
const fn quarter(bytes: u64) -> u64 {
    bytes.div_ceil(4)
}

#[test]
fn a_user_message_counts_its_overhead_and_a_token_per_four_bytes_rounded_up() {
    let estimator = TokenEstimator::new();
    let text = "Summarise the build log, please.";
    assert_eq!(text.len(), 32);
    assert_eq!(estimator.message(&Message::user(text)), MESSAGE_TOKENS + 8);
    assert_eq!(MESSAGE_TOKENS, 4);
    // 33 bytes round up to 9 tokens.
    assert_eq!(estimator.message(&Message::user(format!("{text}!"))), 4 + 9);
    // A system message is its text.
    assert_eq!(estimator.message(&Message::system("Be brief.")), 4 + 3);
    // Multi-byte text counts bytes, not characters: 6 × "é" is 12 bytes.
    assert_eq!(estimator.text("éééééé"), 3);
    assert_eq!(estimator.text(""), 0);
}

#[test]
fn a_tool_call_counts_a_message_a_call_and_its_id_name_and_arguments() {
    let estimator = TokenEstimator::new();
    let arguments = r#"{"path":"src/main.rs"}"#;
    assert_eq!(arguments.len(), 22);
    let message = Message::tool_calls(None, vec![ToolCall::new("call_1", "read_file", arguments)]);
    // The message, the call, "call_1" (6), "read_file" (9), the arguments (22).
    let expected = MESSAGE_TOKENS + MESSAGE_TOKENS + quarter(6) + quarter(9) + quarter(22);
    assert_eq!(expected, 19);
    assert_eq!(estimator.message(&message), expected);
    // Text beside the calls counts too: "Reading it." is 11 bytes.
    let with_text = Message::tool_calls(
        Some("Reading it.".into()),
        vec![
            ToolCall::new("call_1", "read_file", arguments),
            ToolCall::new("call_2", "read_file", arguments),
        ],
    );
    assert_eq!(
        estimator.message(&with_text),
        4 + quarter(11) + 2 * (4 + quarter(6) + quarter(9) + quarter(22))
    );
}

#[test]
fn a_result_counts_its_text_its_call_id_and_a_fixed_price_per_image() {
    let estimator = TokenEstimator::new();
    let result = Message::Tool(ToolResult::with_content(
        "call_1",
        vec![
            ContentPart::text("Screenshot of the report."),
            ContentPart::Image(ImagePart::base64("image/png", "iVBORw0KGgo=".repeat(1_000))),
        ],
        false,
    ));
    // The message, 25 bytes of text, the image (never its 12,000 bytes of
    // base64), "call_1".
    assert_eq!(IMAGE_TOKENS, 1_600);
    assert_eq!(
        estimator.message(&result),
        4 + quarter(25) + 1_600 + quarter(6)
    );
    assert_eq!(estimator.message(&result), 1_613);
    // Two images by URL in a user message.
    let user = Message::User(agent_loop::conversation::UserMessage::new(vec![
        ContentPart::Image(ImagePart::url("https://example.com/a.png")),
        ContentPart::Image(ImagePart::url("https://example.com/b.png")),
    ]));
    assert_eq!(estimator.message(&user), 4 + 2 * 1_600);
    // An error result is counted as any other.
    let error = Message::Tool(ToolResult::error("call_7", "error: no such file"));
    assert_eq!(estimator.message(&error), 4 + quarter(19) + quarter(6));
}

/// An assistant message with signed Anthropic thinking (26 bytes of text)
/// before its answer (11 bytes).
fn thinking_answer() -> Message {
    let thinking = ReasoningPart::new(
        "Plan: read the file first.",
        Origin::new(WireFormat::AnthropicMessages),
    )
    .signed("EqQBCkYIBxgCKkBsignature".repeat(20));
    Message::Assistant(AssistantMessage::new(vec![
        ContentPart::Reasoning(thinking),
        ContentPart::text("Reading it."),
    ]))
}

#[test]
fn reasoning_counts_only_for_the_format_that_is_sent_it() {
    let message = thinking_answer();
    // Unknown format: everything counts (the signature never does: the
    // provider does not bill it as input text).
    assert_eq!(
        TokenEstimator::new().message(&message),
        4 + quarter(26) + quarter(11)
    );
    let anthropic = TokenEstimator::for_format(Some(WireFormat::AnthropicMessages));
    assert_eq!(anthropic.format(), Some(WireFormat::AnthropicMessages));
    assert_eq!(anthropic.message(&message), 4 + 7 + 3);
    // Chat Completions, Responses and Gemini leave Anthropic thinking out,
    // as their exports do. (OpenAI's formats count text with o200k_base
    // under the feature `tiktoken`, hence `text`.)
    for format in [WireFormat::OpenAiChat, WireFormat::OpenAiResponses] {
        let other = TokenEstimator::for_format(Some(format));
        assert_eq!(
            other.message(&message),
            MESSAGE_TOKENS + other.text("Reading it."),
            "{format}"
        );
    }
    let gemini = TokenEstimator::for_format(Some(WireFormat::Gemini));
    assert_eq!(gemini.message(&message), 4 + 3);
}

#[test]
fn redacted_reasoning_extras_and_provider_blocks_count_for_their_format_only() {
    let mut redacted = ReasoningPart::new("", WireFormat::AnthropicMessages);
    redacted.redacted = Some("x".repeat(400));
    let block = ProviderPart::new(
        WireFormat::AnthropicMessages,
        json!({ "type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search" }),
    );
    let block_bytes = block.value.to_string().len() as u64;
    let message = Message::Assistant(AssistantMessage::new(vec![
        ContentPart::Reasoning(redacted),
        ContentPart::Provider(block),
        ContentPart::text("Found it."),
    ]));
    let anthropic = TokenEstimator::for_format(Some(WireFormat::AnthropicMessages));
    assert_eq!(
        anthropic.message(&message),
        4 + 100 + quarter(block_bytes) + quarter(9)
    );
    let gemini = TokenEstimator::for_format(Some(WireFormat::Gemini));
    assert_eq!(gemini.message(&message), 4 + quarter(9));
}

#[test]
fn a_tool_declaration_counts_its_name_description_and_schema_text() {
    let estimator = TokenEstimator::new();
    let schema = json!({ "type": "object" });
    assert_eq!(schema.to_string(), r#"{"type":"object"}"#);
    let tool = ToolInfo::new("read_file", "Reads a file.", schema);
    let tool_tokens = 4 + quarter(9) + quarter(13) + quarter(17);
    assert_eq!(tool_tokens, 16);
    assert_eq!(estimator.tool(&tool), tool_tokens);
    // A whole request: instructions ("Be brief.", 9 bytes), the
    // conversation, the tools.
    let conversation = [Message::user("Summarise the build log, please.")];
    assert_eq!(
        estimator.request(&conversation, Some("Be brief."), [&tool, &tool]),
        (4 + 3) + (4 + 8) + 2 * 16
    );
    assert_eq!(estimator.request(&[], None, []), 0);
}

/// Counts words, to show a tokenizer of one's own is used for text.
#[derive(Debug)]
struct Words;

impl Tokenizer for Words {
    fn count(&self, text: &str) -> u64 {
        text.split_whitespace().count() as u64
    }
}

#[test]
fn a_tokenizer_of_ones_own_counts_the_text_and_bytes_per_token_is_configurable() {
    let estimator = TokenEstimator::new().with_tokenizer(Arc::new(Words));
    assert_eq!(
        estimator.message(&Message::user("Summarise the build log, please.")),
        4 + 5
    );
    assert_eq!(BytesPerToken::new(0), None);
    let bytes = BytesPerToken::new(1).expect("one byte a token");
    assert_eq!(bytes.count("twelve bytes"), 12);
    assert_eq!(BytesPerToken::default().count("twelve bytes"), 3);
    assert_eq!(BytesPerToken::default(), BytesPerToken::new(4).unwrap());
}

// ---------------------------------------------------------------------
// The limits.

fn read(json: &str) -> Result<ToolLimits, (String, String)> {
    serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(json))
        .map_err(|error| (error.path().to_string(), error.inner().to_string()))
}

#[test]
fn context_tokens_and_compact_at_read_resolve_and_write_back_unchanged() {
    let json = r#"{"context_tokens":1000,"compact_at":50}"#;
    let limits = read(r#"{"context_tokens": 1000, "compact_at": 50}"#).expect("valid");
    assert_eq!(
        limits,
        ToolLimits::new().context_tokens(1_000).compact_at(50)
    );
    let resolved = limits.resolve().expect("valid");
    assert_eq!(resolved.context_tokens, Limit::at_most(1_000).unwrap());
    assert_eq!(resolved.compact_at, Percent::new(50).unwrap());
    assert_eq!(serde_json::to_string(&limits).unwrap(), json);
    assert_eq!(read(json).unwrap(), limits);
    // Unset: unlimited, and 80 percent.
    let unset = ToolLimits::new().resolve().unwrap();
    assert_eq!(unset.context_tokens, Limit::Unlimited);
    assert_eq!(unset.compact_at, Percent::DEFAULT_COMPACT_AT);
    assert_eq!(unset.compact_at.get(), 80);
    // "unlimited" context tokens are written back as such.
    let unlimited = read(r#"{"context_tokens":"unlimited"}"#).unwrap();
    assert_eq!(
        unlimited,
        ToolLimits::new().context_tokens(Limit::Unlimited)
    );
    assert_eq!(
        serde_json::to_string(&unlimited).unwrap(),
        r#"{"context_tokens":"unlimited"}"#
    );
}

#[test]
fn compact_at_outside_1_to_100_or_unlimited_is_refused_at_its_path() {
    let rule = "compact_at is a percent of context_tokens, from 1 to 100";
    for (value, shown) in [
        ("0", "0"),
        ("101", "101"),
        (r#""unlimited""#, r#""unlimited""#),
    ] {
        let (path, message) = read(&format!(
            r#"{{"context_tokens": 1000, "compact_at": {value}}}"#
        ))
        .expect_err("not a percent");
        assert_eq!(path, "compact_at", "{value}");
        // serde_json adds where: " at line 1 column N".
        assert_eq!(
            message.split(" at line 1 column").next(),
            Some(format!("invalid `compact_at` limit {shown}: {rule}").as_str()),
            "{value}"
        );
    }
    // A negative or a fraction is refused there too.
    let (path, _) = read(r#"{"compact_at": -5}"#).unwrap_err();
    assert_eq!(path, "compact_at");
    let (path, _) = read(r#"{"compact_at": 50.5}"#).unwrap_err();
    assert_eq!(path, "compact_at");
    // Built in code, `check` and `resolve` refuse it.
    for percent in [0, 101, 1_000] {
        let error = ToolLimits::new().compact_at(percent).check().unwrap_err();
        assert_eq!(
            (error.kind, error.field, error.value.as_str()),
            (
                InvalidLimitKind::NotAPercent,
                "compact_at",
                percent.to_string().as_str()
            )
        );
    }
    assert!(ToolLimits::new().compact_at(1).check().is_ok());
    assert!(ToolLimits::new().compact_at(100).check().is_ok());
    // context_tokens is a count: 0 is refused.
    let (path, message) = read(r#"{"context_tokens": 0}"#).unwrap_err();
    assert_eq!(path, "context_tokens");
    assert!(
        message.starts_with("invalid `context_tokens` limit 0"),
        "{message}"
    );
}

#[test]
fn a_mode_inherits_the_context_budget_and_overrides_compact_at() {
    let base = ToolLimits::new()
        .context_tokens(8_000)
        .compact_at(60)
        .resolve()
        .unwrap();
    let mode = ToolLimits::new().compact_at(90).inherit(base).unwrap();
    assert_eq!(mode.context_tokens, Limit::at_most(8_000).unwrap());
    assert_eq!(mode.compact_at.get(), 90);
    let off = ToolLimits::new()
        .context_tokens(Limit::Unlimited)
        .inherit(base)
        .unwrap();
    assert_eq!(
        (off.context_tokens, off.compact_at.get()),
        (Limit::Unlimited, 60)
    );
}

#[test]
fn a_percent_of_a_count_rounds_down_and_never_overflows() {
    let percent = |p| Percent::new(p).unwrap();
    assert_eq!(percent(80).of(10_000), 8_000);
    assert_eq!(percent(50).of(1_000), 500);
    assert_eq!(percent(50).of(199), 99);
    assert_eq!(percent(1).of(99), 0);
    assert_eq!(percent(33).of(1_000_001), 330_000);
    assert_eq!(percent(100).of(u64::MAX), u64::MAX);
    assert_eq!(
        percent(99).of(u64::MAX),
        u64::MAX / 100 * 99 + 15 * 99 / 100
    );
    assert_eq!(percent(7).of(0), 0);
    assert_eq!(Percent::new(0), None);
    assert_eq!(Percent::new(101), None);
    assert_eq!(percent(80), Percent::DEFAULT_COMPACT_AT);
    assert_eq!(percent(80).to_string(), "80%");
}

// ---------------------------------------------------------------------
// Which errors say the window is full.

fn error(
    kind: ModelErrorKind,
    error_type: Option<&str>,
    message: Option<&str>,
    code: Option<&str>,
) -> ModelError {
    let mut error = ModelError::new(kind);
    error.error_type = error_type.map(str::to_owned);
    error.message = message.map(str::to_owned);
    error.code = code.map(str::to_owned);
    error
}

const HTTP_400: ModelErrorKind = ModelErrorKind::Http { status: 400 };

pub const OPENAI_MESSAGE: &str = "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.";
pub const ANTHROPIC_MESSAGE: &str = "prompt is too long: 208310 tokens > 200000 maximum";
pub const GEMINI_MESSAGE: &str =
    "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).";
pub const RESPONSES_MESSAGE: &str =
    "Your input exceeds the context window of this model. Please adjust your input and try again.";

#[test]
fn each_providers_context_window_error_is_recognised() {
    let full = [
        (
            "OpenAI",
            error(
                HTTP_400,
                Some("invalid_request_error"),
                Some(OPENAI_MESSAGE),
                Some("context_length_exceeded"),
            ),
        ),
        (
            "OpenAI, the code alone",
            error(
                HTTP_400,
                None,
                Some("too long"),
                Some("context_length_exceeded"),
            ),
        ),
        (
            "Responses, a failed stream (its code is the type there)",
            error(
                ModelErrorKind::Stream,
                Some("context_length_exceeded"),
                Some("the input is too long"),
                None,
            ),
        ),
        (
            "Responses, a failed stream's message",
            error(
                ModelErrorKind::Stream,
                Some("error"),
                Some(RESPONSES_MESSAGE),
                None,
            ),
        ),
        (
            "Anthropic",
            error(
                HTTP_400,
                Some("invalid_request_error"),
                Some(ANTHROPIC_MESSAGE),
                None,
            ),
        ),
        (
            "Anthropic, input and max_tokens",
            error(
                HTTP_400,
                Some("invalid_request_error"),
                Some(
                    "input length and `max_tokens` exceed context limit: 197000 + 21333 > 200000, decrease input length or `max_tokens` and try again",
                ),
                None,
            ),
        ),
        (
            "Gemini",
            error(
                HTTP_400,
                Some("INVALID_ARGUMENT"),
                Some(GEMINI_MESSAGE),
                Some("400"),
            ),
        ),
        (
            "vLLM",
            error(
                HTTP_400,
                Some("BadRequestError"),
                Some(
                    "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
                ),
                Some("400"),
            ),
        ),
        (
            "llama.cpp",
            error(
                HTTP_400,
                Some("exceed_context_size_error"),
                Some("the request exceeds the available context size, try increasing it"),
                Some("400"),
            ),
        ),
        (
            "an error body answered with 200",
            error(
                ModelErrorKind::InvalidResponse,
                Some("invalid_request_error"),
                Some(ANTHROPIC_MESSAGE),
                None,
            ),
        ),
    ];
    for (name, error) in full {
        assert!(error.exceeds_context_window(), "{name}: {error}");
    }
}

#[test]
fn rate_limits_and_other_refusals_are_not_a_full_window() {
    let not_full = [
        (
            "a rate limit on tokens per minute",
            error(
                ModelErrorKind::Http { status: 429 },
                Some("tokens"),
                Some(
                    "Request too large for gpt-4o in organization org-1 on tokens per min (TPM): Limit 30000, Requested 50000.",
                ),
                Some("rate_limit_exceeded"),
            ),
        ),
        (
            "a 429 whose message sounds like one",
            error(
                ModelErrorKind::Http { status: 429 },
                None,
                Some(ANTHROPIC_MESSAGE),
                None,
            ),
        ),
        (
            "an unrelated 400",
            error(
                HTTP_400,
                Some("invalid_request_error"),
                Some(
                    "Invalid 'messages[2].tool_calls': empty array. Expected an array with minimum length 1.",
                ),
                Some("empty_array"),
            ),
        ),
        (
            "Anthropic's request too large (bytes, 413)",
            error(
                ModelErrorKind::Http { status: 413 },
                Some("request_too_large"),
                Some("Request exceeds the maximum allowed number of bytes."),
                None,
            ),
        ),
        (
            "a model of one's own",
            error(ModelErrorKind::Other, None, Some(ANTHROPIC_MESSAGE), None),
        ),
        ("nothing known", error(HTTP_400, None, None, None)),
    ];
    for (name, error) in not_full {
        assert!(!error.exceeds_context_window(), "{name}: {error}");
    }
}

/// The four HTTP models, answered with each provider's context-window
/// error on a loopback server: the error they return fills what
/// `exceeds_context_window` reads.
#[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
mod http {
    use std::time::Duration;

    use agent_loop::conversation::Message;
    use agent_loop::model::{AnthropicModel, GeminiModel, OpenAiModel, OpenAiResponsesModel};
    use agent_loop::turn::{Model, ModelError, ModelErrorKind, ModelRequest};
    use serde_json::{Value, json};
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;
    use crate::model_common::FAKE_KEY;

    async fn answered(response: ResponseTemplate) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(response)
            .mount(&server)
            .await;
        server
    }

    async fn refused(model: &dyn Model) -> ModelError {
        let conversation = [Message::user("A very long question.")];
        model
            .respond(ModelRequest::new(&conversation))
            .await
            .expect_err("the server refuses it")
    }

    fn parsed(error: &ModelError) -> (ModelErrorKind, Option<&str>, Option<&str>, Option<&str>) {
        (
            error.kind.clone(),
            error.error_type.as_deref(),
            error.message.as_deref(),
            error.code.as_deref(),
        )
    }

    pub fn openai_body() -> Value {
        json!({ "error": {
            "message": OPENAI_MESSAGE,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded"
        } })
    }

    #[tokio::test]
    async fn chat_completions_reads_the_code() {
        let server = answered(ResponseTemplate::new(400).set_body_json(openai_body())).await;
        let model = OpenAiModel::new("gpt-4o")
            .base_url(format!("{}/v1", server.uri()))
            .api_key(FAKE_KEY);
        let error = refused(&model).await;
        assert_eq!(
            parsed(&error),
            (
                HTTP_400,
                Some("invalid_request_error"),
                Some(OPENAI_MESSAGE),
                Some("context_length_exceeded")
            )
        );
        assert!(error.exceeds_context_window(), "{error}");
        assert_eq!(error.attempts, 1, "a full window is not retried");
    }

    #[tokio::test]
    async fn anthropic_reads_the_message_of_a_400() {
        let body = json!({ "type": "error", "error": {
            "type": "invalid_request_error", "message": ANTHROPIC_MESSAGE } });
        let server = answered(ResponseTemplate::new(400).set_body_json(body)).await;
        let model = AnthropicModel::new("claude-sonnet-4-5")
            .base_url(server.uri())
            .api_key(FAKE_KEY);
        let error = refused(&model).await;
        assert_eq!(
            parsed(&error),
            (
                HTTP_400,
                Some("invalid_request_error"),
                Some(ANTHROPIC_MESSAGE),
                None
            )
        );
        assert!(error.exceeds_context_window(), "{error}");
    }

    #[tokio::test]
    async fn gemini_reads_the_message_of_a_400() {
        let body = json!({ "error": {
            "code": 400, "message": GEMINI_MESSAGE, "status": "INVALID_ARGUMENT" } });
        let server = answered(ResponseTemplate::new(400).set_body_json(body)).await;
        let model = GeminiModel::new("gemini-test")
            .base_url(server.uri())
            .api_key(FAKE_KEY)
            .backoff(Duration::from_millis(1), Duration::from_millis(5));
        let error = refused(&model).await;
        assert_eq!(
            parsed(&error),
            (
                HTTP_400,
                Some("INVALID_ARGUMENT"),
                Some(GEMINI_MESSAGE),
                Some("400")
            )
        );
        assert!(error.exceeds_context_window(), "{error}");
    }

    fn responses_model(server: &MockServer) -> OpenAiResponsesModel {
        OpenAiResponsesModel::new("gpt-5")
            .base_url(format!("{}/v1", server.uri()))
            .api_key(FAKE_KEY)
            .backoff(Duration::from_millis(1), Duration::from_millis(5))
    }

    #[tokio::test]
    async fn responses_reads_the_code_of_a_400() {
        let server = answered(ResponseTemplate::new(400).set_body_json(openai_body())).await;
        let error = refused(&responses_model(&server)).await;
        assert_eq!(
            parsed(&error),
            (
                HTTP_400,
                Some("invalid_request_error"),
                Some(OPENAI_MESSAGE),
                Some("context_length_exceeded")
            )
        );
        assert!(error.exceeds_context_window(), "{error}");
    }

    /// The Responses API's failed response, whole (HTTP 200, `status:
    /// failed`) and streamed (`response.failed`): its error's code says it.
    fn failed_response() -> Value {
        json!({
            "id": "resp_1", "object": "response", "status": "failed", "output": [],
            "error": { "code": "context_length_exceeded", "message": "The input is too long for this model." }
        })
    }

    #[tokio::test]
    async fn responses_reads_the_code_of_a_failed_response() {
        let server = answered(ResponseTemplate::new(200).set_body_json(failed_response())).await;
        let error = refused(&responses_model(&server)).await;
        assert_eq!(error.kind, ModelErrorKind::InvalidResponse, "{error}");
        assert!(error.exceeds_context_window(), "{error:?}");
    }

    #[tokio::test]
    async fn responses_reads_the_code_of_a_failed_stream() {
        let events = format!(
            "event: response.created\ndata: {}\n\nevent: response.failed\ndata: {}\n\n",
            json!({ "type": "response.created", "response": { "id": "resp_1", "object": "response", "status": "in_progress", "output": [] } }),
            json!({ "type": "response.failed", "response": failed_response() }),
        );
        let server =
            answered(ResponseTemplate::new(200).set_body_raw(events, "text/event-stream")).await;
        let error = refused(&responses_model(&server).stream(true)).await;
        assert_eq!(error.kind, ModelErrorKind::Stream, "{error}");
        assert!(error.exceeds_context_window(), "{error:?}");
        // And with the message OpenAI sends: the phrase says it too.
        let mut failed = failed_response();
        failed["error"]["message"] = json!(RESPONSES_MESSAGE);
        failed["error"]["code"] = json!(null);
        let events = format!(
            "event: response.failed\ndata: {}\n\n",
            json!({ "type": "response.failed", "response": failed }),
        );
        let server =
            answered(ResponseTemplate::new(200).set_body_raw(events, "text/event-stream")).await;
        let error = refused(&responses_model(&server).stream(true)).await;
        assert!(error.exceeds_context_window(), "{error:?}");
    }

    #[tokio::test]
    async fn a_rate_limit_is_no_full_window() {
        let body = json!({ "error": {
            "message": "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 5000.",
            "type": "tokens", "code": "rate_limit_exceeded" } });
        let server = answered(ResponseTemplate::new(429).set_body_json(body)).await;
        let model = OpenAiModel::new("gpt-4o")
            .base_url(format!("{}/v1", server.uri()))
            .api_key(FAKE_KEY)
            .max_retries(0);
        let error = refused(&model).await;
        assert_eq!(error.status(), Some(429));
        assert!(!error.exceeds_context_window(), "{error}");
    }
}

#[test]
fn a_failed_responses_answer_parsed_by_a_model_of_ones_own_is_a_full_window() {
    // `?` on the wire parser's error, as the `Model` docs show.
    let failed = json!({
        "id": "resp_1", "object": "response", "status": "failed", "output": [],
        "error": { "code": "context_length_exceeded", "message": "The input is too long." }
    });
    let wire = agent_loop::wire::responses::parse_response(&failed).unwrap_err();
    let error = ModelError::from(wire);
    assert_eq!(error.kind, ModelErrorKind::InvalidResponse);
    // The provider's own error is the model error's type and message (the
    // conversion is the format's; the core reads no wire error).
    assert_eq!(
        (error.error_type.as_deref(), error.message.as_deref()),
        (
            Some("context_length_exceeded"),
            Some("The input is too long.")
        )
    );
    assert!(error.exceeds_context_window(), "{error:?}");
    // Another failure is not.
    let other = json!({
        "id": "resp_1", "object": "response", "status": "failed", "output": [],
        "error": { "code": "server_error", "message": "boom" }
    });
    let error = ModelError::from(agent_loop::wire::responses::parse_response(&other).unwrap_err());
    assert!(!error.exceeds_context_window(), "{error:?}");
}
