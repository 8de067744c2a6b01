//! The replay's model: real OpenAI `chat.completion` bodies, parsed by the
//! library's wire module as a client of the API would.

use std::collections::VecDeque;
use std::sync::Mutex;

use agent_loop::conversation::ModelResponse;
use agent_loop::tool::BoxError;
use agent_loop::turn::{Model, ModelRequest};
use agent_loop::wire::openai;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::answers::{ExpectedCall, call_id};
use super::{FINAL_ANSWER, lock};

/// A model that answers in the OpenAI Chat Completions wire format: it
/// holds real `chat.completion` response bodies (the ground truth as one
/// batch of `tool_calls`, then a final answer) and hands each to
/// [`openai::parse_response`], as a client of the API would.
pub struct OpenAiReplayModel {
    bodies: Mutex<VecDeque<Value>>,
}

impl OpenAiReplayModel {
    pub(super) fn new(task_id: &str, expected: &[ExpectedCall]) -> Self {
        let mut bodies = VecDeque::with_capacity(2);
        if !expected.is_empty() {
            let tool_calls: Vec<Value> = expected
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    json!({
                        "id": call_id(index),
                        "type": "function",
                        "function": {
                            "name": call.tool_name,
                            // A JSON *string*, as the API sends it.
                            "arguments": Value::Object(call.arguments.clone()).to_string(),
                        }
                    })
                })
                .collect();
            bodies.push_back(completion(
                task_id,
                1,
                json!({ "role": "assistant", "content": null, "tool_calls": tool_calls }),
                "tool_calls",
            ));
        }
        bodies.push_back(completion(
            task_id,
            2,
            json!({ "role": "assistant", "content": FINAL_ANSWER }),
            "stop",
        ));
        Self {
            bodies: Mutex::new(bodies),
        }
    }
}

/// A `chat.completion` body as the API reference shows it. The timestamp
/// and token counts are fixed: the replay must be deterministic.
fn completion(task_id: &str, turn: u32, message: Value, finish_reason: &str) -> Value {
    json!({
        "id": format!("chatcmpl-{task_id}-{turn}"),
        "object": "chat.completion",
        "created": 1_741_570_283,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": { "prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160 },
        "system_fingerprint": "fp_bfcl_replay",
    })
}

#[async_trait]
impl Model for OpenAiReplayModel {
    async fn respond(&self, _request: ModelRequest<'_>) -> Result<ModelResponse, BoxError> {
        let body = lock(&self.bodies)
            .pop_front()
            .ok_or("the replay model has no response left")?;
        Ok(openai::parse_response(&body)?)
    }
}
