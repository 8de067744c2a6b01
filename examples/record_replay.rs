//! Records a turn against a model served on a loopback port (an
//! OpenAI-compatible stand-in answering a tool call, then an answer), then
//! stops the server and replays the turn from the cassette alone.
//!
//! ```text
//! cargo run --example record_replay --features openai            # cassette in a temporary file
//! cargo run --example record_replay --features openai -- FILE    # cassette kept in FILE
//! ```

use agent_loop::cassette::{Cassette, Recorder, Replayer, Strictness};
use agent_loop::conversation::Message;
use agent_loop::model::OpenAiModel;
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::{Bindings, Definition, LoopId, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A Chat Completions response of `message`.
fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-example", "object": "chat.completion", "created": 0, "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    })
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let cassette_path = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("record-replay-{}.json", SessionId::new()))
        });
    let clock = tool::Definition::from_fn(
        ToolInfo::without_parameters("now", "The time."),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("12:00") },
    );
    let definition = Definition::builder()
        .name("clock")
        .tool(clock)
        .build()
        .validate()?;
    let session_id = SessionId::new();

    // The "provider": a tool call, then the answer.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": "now", "arguments": "{}"}
            }]}),
            "tool_calls",
        )))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": "It is 12:00."}),
            "stop",
        )))
        .mount(&server)
        .await;
    let model = OpenAiModel::new("gpt-4o")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("sk-example-not-recorded");

    let recorder = Recorder::new(model, &cassette_path);
    let session = definition
        .bind(Bindings::new(session_id, LoopId::new()))
        .await?;
    let mut recorded = vec![Message::user("What time is it?")];
    session
        .run_turn(&recorder, &mut recorded, &CancellationToken::new())
        .await?;
    println!(
        "recorded {} exchanges to {}",
        recorder.cassette().exchanges.len(),
        cassette_path.display()
    );
    drop(server);

    // Offline: the cassette alone answers.
    let replayer = Replayer::new(Cassette::load(&cassette_path)?, Strictness::Exact);
    let session = definition
        .bind(Bindings::new(session_id, LoopId::new()))
        .await?;
    let mut replayed = vec![Message::user("What time is it?")];
    session
        .run_turn(&replayer, &mut replayed, &CancellationToken::new())
        .await?;
    if replayed != recorded {
        return Err("the replayed conversation differs from the recorded one".into());
    }
    println!(
        "replayed offline: {}",
        replayed.last().map(Message::text).unwrap_or_default()
    );
    if std::env::args().nth(1).is_none() {
        std::fs::remove_file(&cassette_path)?;
    }
    Ok(())
}
