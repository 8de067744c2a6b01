//! Errors that say where to look and never show the key, on a loopback
//! server: a web page where the API should answer (a base URL without its
//! `/v1`), and error bodies that echo the API key.

use agent_loop::model::{ModelErrorKind, OpenAiModel};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::model_common::*;

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("m")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(FAKE_KEY)
        .backoff(
            std::time::Duration::from_millis(5),
            std::time::Duration::from_millis(10),
        )
}

async fn mount(server: &MockServer, response: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST")).respond_with(response);
    match times {
        Some(times) => mock.up_to_n_times(times).mount(server).await,
        None => mock.mount(server).await,
    }
}

async fn turn(
    model: &OpenAiModel,
) -> Result<agent_loop::turn::TurnOutcome, agent_loop::turn::TurnError> {
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    session
        .run_turn(model, &mut start(), &CancellationToken::new())
        .await
}

#[tokio::test]
async fn a_web_page_answer_names_its_content_type_and_the_base_url() {
    let page = "<!DOCTYPE html><html><body>Welcome to nginx!</body></html>";
    for stream in [false, true] {
        let server = MockServer::start().await;
        mount(
            &server,
            ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"),
            None,
        )
        .await;
        let error = turn(&model(&server).stream(stream))
            .await
            .expect_err("a page is no answer");
        let error = model_error(&error);
        assert_eq!(
            error.kind,
            ModelErrorKind::InvalidResponse,
            "stream {stream}"
        );
        let message = error.message.clone().unwrap_or_default();
        assert!(message.contains("web page"), "{message}");
        assert!(message.contains("text/html"), "{message}");
        assert!(message.contains("`/v1`"), "{message}");
        assert_eq!(error.attempts, 1, "not retried");
    }
}

#[tokio::test]
async fn an_error_body_echoing_the_key_does_not_show_it() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(401).set_body_json(json!({ "error": {
            "message": format!("Incorrect API key provided: {FAKE_KEY}. You can find your API key at https://platform.openai.com/account/api-keys."),
            "type": "invalid_request_error", "code": "invalid_api_key" } })),
        None,
    )
    .await;
    let error = turn(&model(&server)).await.expect_err("refused");
    let text = all_output(&error);
    assert!(!text.contains(FAKE_KEY), "{text}");
    assert!(
        text.contains("Incorrect API key provided: <redacted>."),
        "{text}"
    );
    // A proxy's plain-text page echoing the whole header, too.
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(502)
            .set_body_string(format!("bad gateway; got Authorization: Bearer {FAKE_KEY}")),
        None,
    )
    .await;
    let error = turn(&model(&server).max_retries(0))
        .await
        .expect_err("refused");
    let text = all_output(&error);
    assert!(!text.contains(FAKE_KEY), "{text}");
}
