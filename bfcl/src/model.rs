//! The replay's model: real OpenAI `chat.completion` bodies, parsed by the
//! library's wire module as a client of the API would.

use std::collections::VecDeque;
use std::sync::Mutex;

use agent_loop::conversation::ModelResponse;
use agent_loop::turn::{Model, ModelRequest};
use agent_loop::wire::openai;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::answers::ExpectedCall;
use super::{FINAL_ANSWER, lock};

/// A model that answers in the OpenAI Chat Completions wire format: it
/// holds real `chat.completion` response bodies (the ground-truth calls,
/// then a final answer) and hands each to [`openai::parse_response`], as a
/// client of the API would.
pub struct OpenAiReplayModel {
    bodies: Mutex<VecDeque<Value>>,
    /// Tools that must not be offered yet (a multi-turn task's functions
    /// withheld until a later turn): a request offering one fails.
    not_yet_offered: Vec<String>,
}

/// How the replay model hands out the ground-truth calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Batching {
    /// All calls in one response (a single-turn answer is one batch).
    OneBatch,
    /// One call per response, in order (a multi-turn turn's calls depend
    /// on each other: `cd`, then `ls` there).
    OneCallPerResponse,
}

impl OpenAiReplayModel {
    /// Responses for `expected` (`label` names the response ids), then
    /// the final answer.
    pub(super) fn new(label: &str, expected: &[ExpectedCall], batching: Batching) -> Self {
        let batches: Vec<&[ExpectedCall]> = match batching {
            _ if expected.is_empty() => Vec::new(),
            Batching::OneBatch => vec![expected],
            Batching::OneCallPerResponse => expected.chunks(1).collect(),
        };
        let mut bodies = VecDeque::with_capacity(batches.len() + 1);
        for (number, batch) in batches.iter().enumerate() {
            let tool_calls: Vec<Value> = batch
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
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
                label,
                number + 1,
                json!({ "role": "assistant", "content": null, "tool_calls": tool_calls }),
                "tool_calls",
            ));
        }
        bodies.push_back(completion(
            label,
            batches.len() + 1,
            json!({ "role": "assistant", "content": FINAL_ANSWER }),
            "stop",
        ));
        Self {
            bodies: Mutex::new(bodies),
            not_yet_offered: Vec::new(),
        }
    }

    /// Fails any request that offers one of `names` (model-facing).
    pub(super) fn not_yet_offered(mut self, names: Vec<String>) -> Self {
        self.not_yet_offered = names;
        self
    }
}

/// A `chat.completion` body as the API reference shows it. The timestamp
/// and token counts are fixed: the replay must be deterministic.
fn completion(label: &str, number: usize, message: Value, finish_reason: &str) -> Value {
    json!({
        "id": format!("chatcmpl-{label}-{number}"),
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
    async fn respond(
        &self,
        request: ModelRequest<'_>,
    ) -> Result<ModelResponse, agent_loop::turn::ModelError> {
        if let Some(early) = request
            .tools
            .iter()
            .find(|tool| self.not_yet_offered.contains(&tool.name))
        {
            return Err(format!(
                "`{}` is offered before the turn that adds it (mode {:?})",
                early.name, request.mode
            )
            .into());
        }
        let body = lock(&self.bodies)
            .pop_front()
            .ok_or("the replay model has no response left")?;
        Ok(openai::parse_response(&body)?)
    }
}
