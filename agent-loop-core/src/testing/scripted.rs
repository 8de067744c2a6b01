//! [`ScriptedModel`]: a model that replays fixed responses, for tests and
//! examples.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::conversation::{Message, ModelResponse};
use crate::model_api::{Model, ModelError, ModelRequest};
use crate::support::lock::lock;

/// A model that replays a fixed list of responses, one per request, and
/// records what it was asked. For tests and examples.
///
/// When the script runs out, the request fails with [`ScriptExhausted`].
///
/// ```
/// use agent_loop_core::conversation::{ModelResponse, ToolCall};
/// use agent_loop_core::turn::ScriptedModel;
///
/// let model = ScriptedModel::new([
///     ModelResponse::tool_calls([ToolCall::new("call_1", "list_files", "{}")]),
///     ModelResponse::answer("There are 3 files."),
/// ]);
/// assert_eq!(model.remaining(), 2);
/// ```
#[derive(Debug, Default)]
pub struct ScriptedModel {
    script: Mutex<VecDeque<ModelResponse>>,
    requests: Mutex<Vec<RecordedRequest>>,
}

/// What a [`ScriptedModel`] was asked, for assertions.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedRequest {
    /// The conversation as sent.
    pub conversation: Vec<Message>,
    /// The names of the tools offered, in order.
    pub tool_names: Vec<String>,
    /// The mode's name; `None` for the base mode.
    pub mode: Option<String>,
    /// The mode's instructions.
    pub instructions: Option<String>,
    /// The name of the native output asked for
    /// ([`ModelRequest::output`]), if any.
    pub native_output: Option<String>,
}

impl ScriptedModel {
    /// A model that answers with `responses`, in order.
    pub fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self {
            script: Mutex::new(responses.into_iter().collect()),
            requests: Mutex::default(),
        }
    }

    /// Responses not yet given.
    pub fn remaining(&self) -> usize {
        lock(&self.script).len()
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).clone()
    }
}

#[async_trait]
impl Model for ScriptedModel {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        lock(&self.requests).push(RecordedRequest {
            conversation: request.conversation.to_vec(),
            tool_names: request.tools.iter().map(|tool| tool.name.clone()).collect(),
            mode: request.mode.map(str::to_owned),
            instructions: request.instructions.map(str::to_owned),
            native_output: request.output.map(|output| output.name().to_owned()),
        });
        let next = lock(&self.script).pop_front();
        next.ok_or_else(|| ModelError::other(ScriptExhausted))
    }
}

/// A [`ScriptedModel`] was asked more often than its script allows: the
/// error its [`respond`](Model::respond) returns then, and so the source of
/// [`TurnError::Model`](crate::turn::TurnError::Model).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the scripted model has no response left")]
#[non_exhaustive]
pub struct ScriptExhausted;
