//! The SSE transport below the stream assemblers, against a raw TCP server
//! that writes exactly the bytes and pauses a test needs (what a mock
//! server cannot): a byte that is not UTF-8, a character split between two
//! writes, keep-alive comments over time, a stream held open after its
//! answer.

use std::time::Duration;

use agent_loop::model::{AnthropicModel, ModelErrorKind, OpenAiModel};
use agent_loop::turn::TurnOptions;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use crate::model_common::*;

/// What the server does, in order, after the response head.
enum Step {
    /// Writes these bytes as one HTTP chunk.
    Write(Vec<u8>),
    /// Waits.
    Pause(Duration),
    /// Writes a keep-alive comment every `every`, for good.
    KeepAlive { every: Duration },
}

fn event(data: &str) -> Step {
    Step::Write(format!("data: {data}\n\n").into_bytes())
}

/// A server on a loopback port answering every request with a
/// `text/event-stream` body made of `steps` (chunked, held open at the
/// end); returns its base URL.
async fn serve(steps: Vec<Step>) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("bound").port();
    let steps = std::sync::Arc::new(steps);
    let server = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let steps = std::sync::Arc::clone(&steps);
            tokio::spawn(async move {
                let mut buffer = vec![0u8; 65536];
                let _ = socket.read(&mut buffer).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let write = |bytes: &[u8]| {
                    let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
                    frame.extend_from_slice(bytes);
                    frame.extend_from_slice(b"\r\n");
                    frame
                };
                for step in steps.iter() {
                    match step {
                        Step::Write(bytes) => {
                            if socket.write_all(&write(bytes)).await.is_err() {
                                return;
                            }
                        }
                        Step::Pause(pause) => tokio::time::sleep(*pause).await,
                        Step::KeepAlive { every } => loop {
                            tokio::time::sleep(*every).await;
                            if socket.write_all(&write(b": PROCESSING\n\n")).await.is_err() {
                                return;
                            }
                        },
                    }
                }
                // Held open: no end of the body.
                std::future::pending::<()>().await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}"), server)
}

fn chat(base: &str, timeout: Duration) -> OpenAiModel {
    OpenAiModel::new("m")
        .base_url(format!("{base}/v1"))
        .stream(true)
        .timeout(timeout)
        .max_retries(0)
}

fn text_chunk(text: &str) -> String {
    json!({ "choices": [{ "index": 0, "delta": { "content": text } }] }).to_string()
}

const FINISH: &str = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
const USAGE: &str =
    r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#;

async fn answer_of(model: &(impl agent_loop::turn::Model + 'static)) -> Result<String, String> {
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    session
        .run_turn(model, &mut start(), &CancellationToken::new())
        .await
        .map(|outcome| outcome.answer().unwrap_or_default().to_owned())
        .map_err(|error| model_error(&error).to_string())
}

#[tokio::test]
async fn a_byte_that_is_not_utf8_is_a_replacement_character_and_the_stream_goes_on() {
    // "Ø" (C3 98) split between two writes, then a lone 0xFF.
    let split = text_chunk("Ø");
    let at = split.find('Ø').expect("there") + 1;
    let mut invalid = text_chunk("caf#").into_bytes();
    let hash = invalid.iter().position(|&b| b == b'#').expect("there");
    invalid[hash] = 0xFF;
    let mut first = b"data: ".to_vec();
    first.extend_from_slice(&split.as_bytes()[..at]);
    let mut second = split.as_bytes()[at..].to_vec();
    second.extend_from_slice(b"\n\n");
    let mut third = b"data: ".to_vec();
    third.extend_from_slice(&invalid);
    third.extend_from_slice(b"\n\n");
    let (base, server) = serve(vec![
        Step::Write(first),
        Step::Write(second),
        Step::Write(third),
        event(&text_chunk(" ok")),
        event(FINISH),
        event("[DONE]"),
    ])
    .await;
    let answer = answer_of(&chat(&base, Duration::from_secs(5))).await;
    server.abort();
    assert_eq!(answer.as_deref(), Ok("Øcaf\u{fffd} ok"));
}

#[tokio::test]
async fn keep_alive_comments_keep_a_long_thinking_stream_alive() {
    let mut steps = Vec::new();
    // Twelve comments 100 ms apart: 1.2 s of silence in events, four times
    // the 300 ms timeout, but never 300 ms without a byte.
    for _ in 0..12 {
        steps.push(Step::Pause(Duration::from_millis(100)));
        steps.push(Step::Write(b": OPENROUTER PROCESSING\n\n".to_vec()));
    }
    steps.extend([
        event(&text_chunk("Thought it through.")),
        event(FINISH),
        event("[DONE]"),
    ]);
    let (base, server) = serve(steps).await;
    let answer = answer_of(&chat(&base, Duration::from_millis(300))).await;
    server.abort();
    assert_eq!(answer.as_deref(), Ok("Thought it through."));
}

#[tokio::test]
async fn a_whole_answer_without_done_on_a_stream_held_open_is_the_answer() {
    // The finish reason and usage, then keep-alives for good: no [DONE].
    let (base, server) = serve(vec![
        event(&text_chunk("All there.")),
        event(FINISH),
        event(USAGE),
        Step::KeepAlive {
            every: Duration::from_millis(100),
        },
    ])
    .await;
    let model = chat(&base, Duration::from_millis(800));
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    let outcome = session
        .run_turn(&model, &mut start(), TurnOptions::builder().build())
        .await
        .expect("the whole answer, not a timeout");
    server.abort();
    assert_eq!(outcome.answer(), Some("All there."));
    assert_eq!(outcome.stats.usage.input_tokens, 7);
    assert_eq!(outcome.stats.usage.output_tokens, 3);

    // Anthropic's form: `message_delta` with its stop reason, no
    // `message_stop`.
    let events = [
        (
            "message_start",
            json!({ "type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": { "input_tokens": 9, "output_tokens": 1 } } }),
        ),
        (
            "content_block_start",
            json!({ "type": "content_block_start", "index": 0,
                "content_block": { "type": "text", "text": "" } }),
        ),
        (
            "content_block_delta",
            json!({ "type": "content_block_delta", "index": 0,
                "delta": { "type": "text_delta", "text": "Claude too." } }),
        ),
        (
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": 0 }),
        ),
        (
            "message_delta",
            json!({ "type": "message_delta",
                "delta": { "stop_reason": "end_turn", "stop_sequence": null },
                "usage": { "output_tokens": 4 } }),
        ),
    ];
    let mut steps: Vec<Step> = events
        .iter()
        .map(|(name, data)| Step::Write(format!("event: {name}\ndata: {data}\n\n").into_bytes()))
        .collect();
    steps.push(Step::KeepAlive {
        every: Duration::from_millis(100),
    });
    let (base, server) = serve(steps).await;
    let claude = AnthropicModel::new("claude")
        .base_url(base)
        .stream(true)
        .timeout(Duration::from_millis(800))
        .max_retries(0);
    let answer = answer_of(&claude).await;
    server.abort();
    assert_eq!(answer.as_deref(), Ok("Claude too."));
}

#[tokio::test]
async fn a_stream_held_open_before_its_finish_reason_times_out() {
    // No finish reason, then silence (no comments): not whole, a stall.
    let (base, server) = serve(vec![event(&text_chunk("Half"))]).await;
    let model = chat(&base, Duration::from_millis(300));
    let session = session_for(&agent_loop::conversation::ModelResponse::answer("")).await;
    let error = session
        .run_turn(&model, &mut start(), &CancellationToken::new())
        .await
        .expect_err("not whole");
    server.abort();
    assert_eq!(model_error(&error).kind, ModelErrorKind::Timeout);
}
