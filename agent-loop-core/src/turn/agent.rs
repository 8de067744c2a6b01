//! Agents as tools: a loop definition offered as one tool of another
//! ([`tool::Definition::agent`]), its turn run inside the call under the
//! calling turn's cancellation, budgets and events.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::bind::{BindError, Bindings, Bound};
use crate::conversation::{FinishReason, Message};
use crate::definition::{Definition, Validated};
use crate::session::{LoopId, Session};
use crate::support::lock::lock;
use crate::tool::{self, BoxError, CallContext, Handler, ToolInfo, ToolOutput};
use crate::turn::nesting::{Parent, TurnShare};
use crate::turn::pause::agent_state;
use crate::turn::{
    AgentPause, Model, Output, Resume, ResumeError, ResumeErrorKind, TurnEvents, TurnOptions,
    TurnStatus,
};

/// An agent: a validated loop definition and the model its turns ask,
/// offered as a tool with [`tool::Definition::agent`].
///
/// ```
/// use agent_loop_core::turn::{Agent, ScriptedModel};
/// use agent_loop_core::Definition;
///
/// let researcher = Definition::builder().name("researcher").build().validate()?;
/// let agent = Agent::new(researcher, ScriptedModel::new([]));
/// # let _ = agent;
/// # Ok::<_, agent_loop_core::DefinitionError>(())
/// ```
pub struct Agent {
    definition: Definition<Validated>,
    model: Arc<dyn Model>,
    output: Option<Output>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("definition", &self.definition.name())
            .field("model", &self.model.description())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// The agent `definition`, whose turns ask `model`.
    pub fn new(definition: Definition<Validated>, model: impl Model + 'static) -> Self {
        Self {
            definition,
            model: Arc::new(model),
            output: None,
        }
    }

    /// Its turns end in `output` ([`TurnOptionsBuilder::output`](crate::turn::TurnOptionsBuilder::output)),
    /// which becomes the call's result as JSON.
    #[must_use]
    pub fn output(mut self, output: Output) -> Self {
        self.output = Some(output);
        self
    }

    /// This agent offered as one tool, `name`, described to the model as
    /// `description`: the same as
    /// [`tool::Definition::agent(name, description, self)`](tool::Definition::agent),
    /// whose docs say what a call of it does.
    ///
    /// ```
    /// use agent_loop_core::turn::{Agent, ScriptedModel};
    /// use agent_loop_core::Definition;
    ///
    /// let researcher = Definition::builder().name("researcher").build().validate()?;
    /// let research = Agent::new(researcher, ScriptedModel::new([]))
    ///     .tool("research", "Researches a question and answers it.");
    /// let lead = Definition::builder().name("lead").tool(research).build().validate()?;
    /// # let _ = lead;
    /// # Ok::<_, agent_loop_core::DefinitionError>(())
    /// ```
    pub fn tool(self, name: impl Into<String>, description: impl Into<String>) -> tool::Definition {
        tool::Definition::agent(name, description, self)
    }
}

/// What a call of an agent is given: the task, as a model writes it.
fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "What the agent is to do: the whole task, with everything it needs to know, since it sees nothing else of this conversation."
            }
        },
        "required": ["task"]
    })
}

impl tool::Definition {
    /// A definition of one tool, `name`, that runs `agent`: each call's
    /// `task` (the one parameter, a string) is the user message of a new
    /// turn of the agent's own binding, and the turn's final answer (or
    /// its structured output, as JSON) is the call's result.
    ///
    /// Binding it binds the agent's definition, once per binding of the
    /// definition that offers it, with the same session id and data and
    /// its own loop id (the name-based UUID of the binding's loop id and
    /// `name`): its tools are built for that session like any tool.
    ///
    /// In a turn, the agent's turn runs under the call:
    ///
    /// - with the turn's cancellation token, so cancelling the turn stops
    ///   the agent's requests and tools;
    /// - its events arrive as [`TurnEvent::Nested`](crate::turn::TurnEvent::Nested)
    ///   under the call's id (nested once more per level);
    /// - its usage is added to the calling turn's
    ///   ([`TurnStats::usage`](crate::turn::TurnStats::usage)), and its
    ///   tool calls to the calling turn's `calls`, once the batch is done;
    /// - the calling turn's token budgets (`input_tokens`,
    ///   `output_tokens`, `total_tokens`) and its `calls` limit bind the
    ///   agent too, counted with what the calling turn (and every turn
    ///   above it) spent, as it spends: an agent that would pass them
    ///   fails, and the call's error result says why. The agent's own
    ///   limits hold as well; `iterations` and `requests` are each turn's
    ///   own.
    /// - a call of the agent that waits for a decision (a gate asks, an
    ///   external tool) pauses the calling turn: see
    ///   [`pause`](crate::turn::pause#agents-that-pause).
    ///
    /// Called directly (an `invoke`, an MCP client of a served binding),
    /// the agent runs under its own limits only, and a pause is an error
    /// (nobody can resume it).
    ///
    /// The agent's answer is the call's result; one its output limit cut
    /// ([`FinishReason::Length`]) ends with the line `[the agent's answer
    /// was cut off by its output limit]`, so the lead sees it is partial.
    ///
    /// Errors, as the call's error result: `task` missing (the schema
    /// check refuses it first), the agent's turn failing (its
    /// [`TurnError`](crate::turn::TurnError)), or interrupted. A bind of
    /// the agent's definition that fails fails the bind
    /// ([`BindErrorKind::FactoryFailed`](crate::BindErrorKind::FactoryFailed)).
    ///
    /// ```
    /// use agent_loop_core::conversation::{Message, ModelResponse, ToolCall};
    /// use agent_loop_core::turn::{Agent, ScriptedModel};
    /// use agent_loop_core::{Bindings, Definition, LoopId, SessionId, tool};
    /// use tokio_util::sync::CancellationToken;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let researcher = Definition::builder().name("researcher").build().validate()?;
    /// let answers = ScriptedModel::new([ModelResponse::answer("Paris.")]);
    /// let research = tool::Definition::agent(
    ///     "research",
    ///     "Researches a question and answers it.",
    ///     Agent::new(researcher, answers),
    /// );
    /// let lead = Definition::builder().name("lead").tool(research).build().validate()?;
    /// let session = lead.bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
    /// let model = ScriptedModel::new([
    ///     ModelResponse::tool_calls([ToolCall::new("call_1", "research", r#"{"task": "Capital of France?"}"#)]),
    ///     ModelResponse::answer("It is Paris."),
    /// ]);
    /// let mut conversation = vec![Message::user("Capital of France?")];
    /// session.run_turn(&model, &mut conversation, &CancellationToken::new()).await?;
    /// assert_eq!(conversation[2].text(), "Paris.");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn agent(name: impl Into<String>, description: impl Into<String>, agent: Agent) -> Self {
        let name = name.into();
        let info = ToolInfo::new(name.clone(), description, parameters());
        let agent = Arc::new(agent);
        tool::Definition::nested(info, move |session: Session| {
            let agent = Arc::clone(&agent);
            let loop_id = LoopId::from_uuid(uuid::Uuid::new_v5(
                &session.loop_id().as_uuid(),
                name.as_bytes(),
            ));
            async move {
                let binding = agent
                    .definition
                    .bind(Bindings::for_session(session.for_loop(loop_id)))
                    .await?;
                Ok::<_, BindError>(AgentHandler {
                    binding,
                    agent,
                    paused: Mutex::default(),
                })
            }
        })
    }
}

/// An agent bound for one binding of the definition that offers it.
pub(super) struct AgentHandler {
    binding: Definition<Bound>,
    agent: Arc<Agent>,
    /// The digest of the last pause of each call whose agent is paused: a
    /// resume of an older pause of that call (a client's retry of a pause
    /// since resumed) is stale, so no approved call of it runs twice.
    paused: Mutex<HashMap<String, [u8; 32]>>,
}

/// The digest of an agent's pause, as its call's MAC covers it.
fn digest(pause: &AgentPause) -> [u8; 32] {
    Sha256::digest(agent_state(pause).as_bytes()).into()
}

impl AgentHandler {
    /// Checks the resume `resume` of the agent's paused turn `pause` for
    /// the call `tool_call_id` as its turn would, running nothing.
    ///
    /// Errors: [`ResumeErrorKind::Stale`] for a pause of that call older
    /// than its last (known to this binding), and whatever the agent's
    /// turn refuses.
    pub(super) fn check_resume(
        &self,
        tool_call_id: &str,
        pause: &AgentPause,
        resume: &Resume,
    ) -> Result<(), ResumeError> {
        let last = lock(&self.paused).get(tool_call_id).copied();
        if last.is_some_and(|last| last != digest(pause)) {
            return Err(ResumeError::of_call(ResumeErrorKind::Stale, tool_call_id));
        }
        self.binding.check_resume(&pause.conversation, resume)
    }
}

#[async_trait]
impl Handler for AgentHandler {
    async fn invoke(
        &self,
        arguments: Value,
        context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        let share: Option<Arc<TurnShare>> = context
            .turn_share()
            .and_then(|share| share.downcast::<TurnShare>().ok());
        let events = share.as_ref().map_or_else(TurnEvents::default, |share| {
            TurnEvents::nested(&share.events, context.tool_call_id(), context.tool_name())
        });
        let resuming = share
            .as_ref()
            .and_then(|share| share.take_resuming(context.tool_call_id()));
        let (mut conversation, resume) = match resuming {
            Some((conversation, resume)) => (conversation, Some(resume)),
            None => {
                let task = arguments
                    .get("task")
                    .and_then(Value::as_str)
                    .ok_or("`task` must be a string")?;
                (vec![Message::user(task)], None)
            }
        };
        let mut options = TurnOptions::builder()
            .cancellation(context.cancellation())
            .events(&events)
            .build();
        options.output = self.agent.output.clone();
        options.resume = resume.as_ref();
        if let Some(share) = &share {
            // A budget of a turn above is reached in the agent as there.
            options.budget_policy = share.budget_policy;
        }
        options.parent = share.clone().map(|share| Parent {
            share,
            call: context.tool_call_id().to_owned(),
        });
        let outcome = self
            .binding
            .run_turn(&*self.agent.model, &mut conversation, options)
            .await?;
        if !matches!(outcome.status, TurnStatus::Paused(_)) {
            // The call is answered: no pause of it is left to resume.
            lock(&self.paused).remove(context.tool_call_id());
        }
        match outcome.status {
            // An answer the agent's output limit cut is handed on as one
            // the lead can see is cut (DataDog/integrations-core PR
            // #23795): it may ask again, or for less.
            TurnStatus::Completed { answer }
                if outcome.finish_reason == Some(FinishReason::Length) =>
            {
                Ok(
                    format!("{answer}\n[the agent's answer was cut off by its output limit]")
                        .into(),
                )
            }
            TurnStatus::Completed { answer } => Ok(answer.into()),
            TurnStatus::Output { value } => Ok(value.into()),
            TurnStatus::Interrupted => Err("the agent's turn was interrupted".into()),
            TurnStatus::Paused(paused) => match share {
                Some(share) => {
                    let pause = AgentPause {
                        paused: *paused,
                        conversation,
                    };
                    lock(&self.paused).insert(context.tool_call_id().to_owned(), digest(&pause));
                    share.park(context.tool_call_id(), pause);
                    // Never read: the call waits for a resume, unanswered.
                    Ok("the agent paused for a decision".into())
                }
                None => Err(
                    "the agent paused for a decision, which a direct call cannot wait for".into(),
                ),
            },
        }
    }
}
