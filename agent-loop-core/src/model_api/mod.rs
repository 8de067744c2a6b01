//! The [`Model`] trait: what a turn asks a language model
//! ([`ModelRequest`]), what the model says of itself
//! ([`ModelDescription`]), and how a request fails ([`ModelError`]). The
//! trait depends on nothing of the turn loop: the HTTP models, the
//! cassettes and the test models implement it from below the loop.

mod error;
mod refusals;

use async_trait::async_trait;

use crate::bind::ToolList;
use crate::conversation::{Message, ModelResponse, Prices, WireFormat};
use crate::event::TurnEvents;
use crate::output::Output;

pub use error::{ModelError, ModelErrorKind};

/// A language model, as the turn runner sees it: given the conversation, the
/// current mode's instructions and tools, it answers or asks for tools, and
/// says why it stopped and how many tokens it used ([`ModelResponse`]).
///
/// Implement it over your provider's client: the `wire` module of
/// `agent-loop-providers` (`agent_loop::wire`) builds the request body's
/// `messages` and `tools` in each provider's format and parses the
/// response body, and its `From<WireError> for ModelError` makes `?` on a
/// parser's error an [`InvalidResponse`](ModelErrorKind::InvalidResponse);
/// the mode's instructions are yours to send as the system prompt, ahead
/// of the conversation. Use
/// [`ScriptedModel`](crate::testing::ScriptedModel) in tests.
///
/// ```
/// use agent_loop_core::conversation::{Message, ModelResponse};
/// use agent_loop_core::tool::BoxError;
/// use agent_loop_core::turn::{Model, ModelError, ModelRequest};
/// use async_trait::async_trait;
///
/// /// A model behind a client of your own; `complete` stands in for it.
/// struct MyModel {
///     complete: fn(&[Message]) -> Result<String, BoxError>,
/// }
///
/// #[async_trait]
/// impl Model for MyModel {
///     async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
///         // The mode's instructions go first, as a system message.
///         let mut conversation: Vec<Message> =
///             request.instructions.map(Message::system).into_iter().collect();
///         conversation.extend_from_slice(request.conversation);
///         // `?` makes your client's error `ModelErrorKind::Other`.
///         let text = (self.complete)(&conversation)?;
///         Ok(ModelResponse::answer(text))
///     }
/// }
/// ```
#[async_trait]
pub trait Model: Send + Sync {
    /// One model request. An `Err` fails the turn with
    /// [`TurnError::Model`](crate::turn::TurnError::Model), which holds it.
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError>;

    /// What this model is, for a wrapper that records it (a
    /// `cassette::Recorder`): its name and wire
    /// format. Never a credential or an endpoint. By default nothing is
    /// known.
    fn description(&self) -> ModelDescription {
        ModelDescription::default()
    }

    /// What its tokens cost ([`Prices`]), when it is known: the HTTP
    /// models of `agent-loop-providers` give their model catalog's prices.
    /// A turn's [`TurnStats::cost`](crate::turn::TurnStats::cost) is its
    /// usage at these prices (or at
    /// [`TurnOptions::prices`](crate::turn::TurnOptions), which win). By
    /// default unknown.
    fn prices(&self) -> Option<Prices> {
        None
    }

    /// The input tokens one request may hold, when it is known: the HTTP
    /// models of `agent-loop-providers` give their model catalog's largest
    /// prompt (or context window). A turn keeps to the smaller of this and
    /// its mode's `context_tokens` budget, compacting as that budget says
    /// (see [`context`](crate::context)). By default unknown: the mode's
    /// budget alone.
    fn context_window(&self) -> Option<u32> {
        None
    }
}

/// A boxed model is a model: `Box<dyn Model>` holds any of them.
#[async_trait]
impl<M: Model + ?Sized> Model for Box<M> {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        (**self).respond(request).await
    }

    fn description(&self) -> ModelDescription {
        (**self).description()
    }

    fn prices(&self) -> Option<Prices> {
        (**self).prices()
    }

    fn context_window(&self) -> Option<u32> {
        (**self).context_window()
    }
}

/// A shared model is a model: one `Arc` can serve a turn and the agents
/// its tools run ([`tool::Definition::agent`](crate::tool::Definition::agent)),
/// or many sessions.
#[async_trait]
impl<M: Model + ?Sized> Model for std::sync::Arc<M> {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        (**self).respond(request).await
    }

    fn description(&self) -> ModelDescription {
        (**self).description()
    }

    fn prices(&self) -> Option<Prices> {
        (**self).prices()
    }

    fn context_window(&self) -> Option<u32> {
        (**self).context_window()
    }
}

/// What a [`Model`] says of itself ([`Model::description`]): the model's
/// name as its provider knows it (`gpt-5.2`, `claude-sonnet-4-5`) and the
/// wire format it speaks, each `None` when unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ModelDescription {
    /// The model's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The format its requests and responses are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<WireFormat>,
}

impl ModelDescription {
    /// A model named `name` that speaks `format`.
    pub fn new(name: impl Into<String>, format: WireFormat) -> Self {
        Self {
            name: Some(name.into()),
            format: Some(format),
        }
    }
}

/// One request to the model. Built by the turn runner; build one yourself
/// with [`ModelRequest::new`] to call a model directly.
///
/// ```
/// use agent_loop_core::conversation::Message;
/// use agent_loop_core::tool::ToolInfo;
/// use agent_loop_core::turn::ModelRequest;
///
/// let conversation = [Message::user("Weather in Paris?")];
/// let tools = [ToolInfo::without_parameters("now", "The time.")];
/// let request = ModelRequest::new(&conversation)
///     .instructions("Be brief.")
///     .tools(&tools[..]);
/// assert_eq!(request.tools.len(), 1);
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The whole conversation so far, oldest first (its system messages
    /// included).
    pub conversation: &'a [Message],
    /// The current mode's instructions, if any: a system prompt that goes
    /// before the conversation's own system messages.
    pub instructions: Option<&'a str>,
    /// The tools the model may call in the current mode, in order.
    pub tools: ToolList<'a>,
    /// The current mode's name; `None` for the base mode.
    pub mode: Option<&'a str>,
    /// The output the final answer's text must be, in
    /// [`OutputMode::Native`](crate::turn::OutputMode::Native) only
    /// (`None` otherwise, and in tool mode, where the output is the tool
    /// [`STRUCTURED_OUTPUT_TOOL_NAME`](crate::tool::STRUCTURED_OUTPUT_TOOL_NAME)
    /// in `tools`). Send [`Output::schema`] as the provider's structured
    /// output setting; a model that cannot do native output may ignore
    /// it, and the runner still checks the answer.
    pub output: Option<&'a Output>,
    /// Where the turn's events go: a streaming model sends
    /// [`TurnEvent::TextDelta`](crate::turn::TurnEvent::TextDelta) and
    /// [`ReasoningDelta`](crate::turn::TurnEvent::ReasoningDelta) here as
    /// they arrive. Sends nowhere unless the turn is watched.
    pub events: &'a TurnEvents,
}

/// Where a request built by hand sends its events: nowhere.
static NO_EVENTS: TurnEvents = TurnEvents::NOWHERE;

impl<'a> ModelRequest<'a> {
    /// A request for `conversation` with no instructions, no tools, the
    /// base mode, no native output, and events sent nowhere.
    pub fn new(conversation: &'a [Message]) -> Self {
        Self {
            conversation,
            instructions: None,
            tools: ToolList::default(),
            mode: None,
            output: None,
            events: &NO_EVENTS,
        }
    }

    /// Sets the instructions (a system prompt).
    #[must_use]
    pub fn instructions(mut self, instructions: &'a str) -> Self {
        self.instructions = Some(instructions);
        self
    }

    /// Sets the tools the model may call.
    #[must_use]
    pub fn tools(mut self, tools: impl Into<ToolList<'a>>) -> Self {
        self.tools = tools.into();
        self
    }

    /// Sets the mode's name.
    #[must_use]
    pub fn mode(mut self, mode: &'a str) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Asks for `output` natively (see [`ModelRequest::output`]).
    #[must_use]
    pub fn output(mut self, output: &'a Output) -> Self {
        self.output = Some(output);
        self
    }

    /// Sends streamed deltas to `events`.
    #[must_use]
    pub fn events(mut self, events: &'a TurnEvents) -> Self {
        self.events = events;
        self
    }
}
