//! Durable agents on [Restate](https://restate.dev): an agent-loop turn
//! that survives a crash at any point, approvals that wait for days
//! without holding a process, and sessions spread over many processes.
//!
//! A [`DurableAgent`] (a validated loop definition, its model, and how
//! each session is bound) is served as two Restate virtual objects:
//!
//! - **`AgentSession`**, keyed by session: its `turn` handler (exclusive:
//!   the turns of one session queue, never interleave; different
//!   sessions run in parallel on any number of service processes) runs a
//!   turn on the session's conversation, kept in the object's state. The
//!   turn is driven step by step
//!   ([`TurnSteps`](agent_loop_core::turn::TurnSteps)): each model request and
//!   each tool call is a journaled step (`ctx.run`), so after a crash the
//!   invocation resumes on any live process, journaled requests and calls
//!   come back from the journal and are not run again, and the turn ends
//!   exactly as an uncrashed one would. A call cut by the crash (started,
//!   no journaled result) runs again: its
//!   [`CallContext`](agent_loop_core::tool::CallContext) holds the session id,
//!   loop id and tool call id, the idempotency key a tool passes to the
//!   system it changes. Its shared handlers `conversation`, `pending` and
//!   `outcome` read the session while a turn runs or waits.
//! - **`AgentDecision`**, keyed by `{session}:{pause id}:{tool call id}`:
//!   one per pending call of a paused turn. Its `decide` handler takes a
//!   person's [`CallDecision`]; the first
//!   decision for a call wakes the turn, a second one is refused (HTTP
//!   409). A turn that pauses waits on one Restate awakeable per pending
//!   call: the invocation suspends, no process holds it, and it resumes
//!   (on any process of the deployment) once every pending call has its
//!   decision. Limits and budgets count across the wait as in one process.
//!
//! The calls of a batch run concurrently, at most `parallel` at once as
//! in `run_turn`, and are journaled one by one in call order (the Rust SDK
//! journals one action at a time): a call that ended before a crash but
//! was not yet journaled runs again, like a call the crash cut.
//!
//! A turn is a virtual object's handler, not a Restate workflow: a
//! workflow's durable promises would let a decision be a promise of its
//! own, but a workflow runs once per key, while a session runs many turns
//! over one conversation that only one of them may change at a time, which
//! is what a virtual object's exclusive handler gives. Awakeables, resolved
//! through the `AgentDecision` objects, stand in for the promises.
//!
//! A suspended invocation resumes on the deployment that started it. For a
//! pause that waits for days across a deploy, register the new version as
//! a new deployment and keep the old one serving until its invocations
//! finish: Restate sends new invocations to the new deployment and keeps
//! the paused ones on the old (its "versioning" of deployments).
//!
//! Not journaled, so to be the same in every process of a deployment
//! (else a replay goes another way than the first run did, and Restate
//! refuses a journal that does not match, and retries): the definition,
//! its gates and each session's bindings; the tools a changing definition
//! lists again (each process lists its own servers); and a compaction (a
//! turn replayed from its journal compacts again: `ElideToolResults`, the
//! default, asks no model and compacts the same way, but a summarising
//! compactor gives another summary: do not use one here).

mod batch;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use agent_loop_core::conversation::Message;
use agent_loop_core::tool::ToolInfo;
use agent_loop_core::turn::{
    CallDecision, CallResult, Model, ModelRequest, Output, PausedTurn, PendingCall, Resume, Step,
    TurnError, TurnOptions, TurnOutcome, TurnStats, TurnStatus,
};
use agent_loop_core::{Bindings, Definition, LoopId, SessionId, Validated};
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};

use crate::batch::Launch;

/// The object state key of a session's conversation.
const CONVERSATION: &str = "conversation";
/// The object state key of a session's paused turn, while it waits.
const PENDING: &str = "pending";
/// The object state key of a session's last turn's report.
const OUTCOME: &str = "outcome";
/// The object state key of a decision object's awakeable.
const AWAKEABLE: &str = "awakeable";
/// The object state key of a decision object's decision, once taken.
const DECIDED: &str = "decided";
/// The object state key of a decision object's pending call.
const CALL: &str = "call";

/// What a paused turn tells a call's `AgentDecision` object: the awakeable
/// it waits on, and the pending call.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Registration {
    awakeable: String,
    call: PendingCall,
}

/// How each session is bound: the [`Bindings`] of a session id and the
/// agent's loop id.
pub type BindingsFn = dyn Fn(SessionId, LoopId) -> Bindings + Send + Sync;

/// An agent served durably: a validated loop definition, the model its
/// turns ask, and how each session is bound. Serve it with
/// [`serve`](Self::serve), or hand [`endpoint`](Self::endpoint) to the
/// SDK's `HttpServer` yourself (with a listener of [`listen`]).
///
/// ```no_run
/// use agent_loop_core::Definition;
/// use agent_loop_core::turn::ScriptedModel;
/// use agent_loop_restate::DurableAgent;
///
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// let definition = Definition::builder().name("support").build().validate()?;
/// let agent = DurableAgent::new(definition, ScriptedModel::new([]));
/// agent.serve("127.0.0.1:9080".parse()?).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct DurableAgent {
    definition: Definition<Validated>,
    model: Arc<dyn Model>,
    bindings: Arc<BindingsFn>,
    loop_id: LoopId,
    output: Option<Output>,
}

impl std::fmt::Debug for DurableAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableAgent")
            .field("definition", &self.definition.name())
            .finish_non_exhaustive()
    }
}

impl DurableAgent {
    /// The agent `definition`, whose turns ask `model`; each session is
    /// bound with plain [`Bindings::new`] until [`bindings`](Self::bindings)
    /// says otherwise. Its loop id is the name-based UUID of the
    /// definition's name, the same in every process.
    pub fn new(definition: Definition<Validated>, model: impl Model + 'static) -> Self {
        let loop_id = LoopId::from_uuid(uuid_v5(definition.name()));
        Self {
            definition,
            model: Arc::new(model),
            bindings: Arc::new(Bindings::new),
            loop_id,
            output: None,
        }
    }

    /// Binds each session with `bindings` (its session id and the agent's
    /// loop id in, the [`Bindings`] with the session's data out).
    #[must_use]
    pub fn bindings(
        mut self,
        bindings: impl Fn(SessionId, LoopId) -> Bindings + Send + Sync + 'static,
    ) -> Self {
        self.bindings = Arc::new(bindings);
        self
    }

    /// Its turns end in `output`
    /// ([`TurnOptionsBuilder::output`](agent_loop_core::turn::TurnOptionsBuilder::output)).
    #[must_use]
    pub fn output(mut self, output: Output) -> Self {
        self.output = Some(output);
        self
    }

    /// The Restate endpoint serving this agent's two virtual objects,
    /// `AgentSession` and `AgentDecision` (see the [crate docs](crate)):
    /// hand it to `restate_sdk::http_server::HttpServer`, serving a
    /// listener of [`listen`] (or call [`serve`](Self::serve)).
    pub fn endpoint(&self) -> restate_sdk::endpoint::Endpoint {
        Endpoint::builder()
            .bind(AgentSession {
                agent: Arc::new(self.clone()),
            })
            .bind(AgentDecision)
            .build()
    }

    /// Serves [`endpoint`](Self::endpoint) on `address` over HTTP/2, with
    /// the listener of [`listen`] (each journaled step's answer sent at
    /// once), until the process gets Ctrl-C (as
    /// `restate_sdk::http_server::HttpServer::serve`).
    ///
    /// # Errors
    /// The address cannot be bound (in use, not this machine's).
    pub async fn serve(&self, address: SocketAddr) -> std::io::Result<()> {
        let listener = listen(address)?;
        HttpServer::new(self.endpoint()).serve(listener).await;
        Ok(())
    }
}

/// A TCP listener on `address` whose connections send each write at once
/// (`TCP_NODELAY`, which Linux and the BSDs copy from a listener to the
/// connections it accepts), for `restate_sdk::http_server::HttpServer::serve`.
///
/// The SDK's own `listen_and_serve` leaves Nagle's algorithm on: a
/// journaled step whose closure waits (a tool call that does I/O, a model
/// request) then sends its completion only once the server acknowledged
/// the step's start, which a delayed acknowledgement holds back up to
/// 40 ms on Linux. Measured with `benches/journal.rs` on loopback, in a debug
/// build: a turn of three model requests and three tool calls took about
/// 100 ms served by `listen_and_serve` and about 20 ms served here (a
/// hand-written handler whose closures never wait: 58 ms and 13 ms).
///
/// # Errors
/// The address cannot be bound (in use, not this machine's), or the
/// system refuses the socket options.
pub fn listen(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if address.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // A restarted service binds its port again at once (on Windows the
    // option would let another process take a bound port: Unix only).
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.set_nodelay(true)?;
    socket.bind(address)?;
    socket.listen(1024)
}

/// The session id of an object key: the key itself when it is a UUID, or
/// the name-based UUID of the key.
/// Only the canonical form (lower-case, hyphenated) is taken as the UUID,
/// so two keys never name one session.
pub fn session_id(key: &str) -> SessionId {
    match key.parse::<uuid::Uuid>() {
        Ok(uuid) if !uuid.is_nil() && uuid.hyphenated().to_string() == key => {
            SessionId::from_uuid(uuid)
        }
        _ => SessionId::from_uuid(uuid_v5(key)),
    }
}

/// The name-based (version 5) UUID of `name` in this crate's namespace.
fn uuid_v5(name: &str) -> uuid::Uuid {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6167_656e_742d_6c6f_6f70_2d72_6573_7461);
    uuid::Uuid::new_v5(&NAMESPACE, name.as_bytes())
}

/// What the `turn` handler takes: the user's message.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TurnRequest {
    /// The user message the turn answers.
    pub message: String,
}

/// What a session's turn ended with: the `turn` handler's answer, and the
/// `outcome` handler's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnReport {
    /// `completed`, `output`, `interrupted` or `failed`.
    pub status: String,
    /// The final answer (completed), or the structured output as JSON
    /// text (output).
    pub answer: Option<String>,
    /// The error of a failed turn: its line and its sources'.
    pub error: Option<String>,
    /// The turn's statistics, since its last pause (durations are the
    /// journaled ones: the model's answers' and the calls' own).
    pub stats: TurnStats,
}

/// A paused turn waiting for decisions: the `pending` handler's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingDecisions {
    /// The paused turn (its pending calls, each with its MAC when the
    /// definition has an approval key).
    pub paused: PausedTurn,
    /// For each pending call, in order: the key of its `AgentDecision`
    /// object, where its decision goes.
    pub decision_keys: Vec<String>,
}

/// A Restate virtual object keyed by session: see the [crate docs](crate).
struct AgentSession {
    agent: Arc<DurableAgent>,
}

#[restate_sdk::object(name = "AgentSession")]
impl AgentSession {
    /// Runs one turn of the session on `request.message`.
    #[handler]
    async fn turn(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<TurnRequest>,
    ) -> Result<Json<TurnReport>, HandlerError> {
        let inner = &*self.agent;
        let session_id = session_id(ctx.key());
        let mut conversation: Vec<Message> = ctx
            .get::<Json<Vec<Message>>>(CONVERSATION)
            .await?
            .map(Json::into_inner)
            .unwrap_or_default();
        conversation.push(Message::user(request.into_inner().message));
        // Bound per invocation: its tools are built for this process.
        let session = inner
            .definition
            .bind((inner.bindings)(session_id, inner.loop_id))
            .await
            // Retried: a tool's server may be down for a moment.
            .map_err(|error| HandlerError::from(format!("bind: {error}")))?;
        let mut resume: Option<Resume> = None;
        let result = loop {
            let stored_resume = resume.take();
            let options = match (&stored_resume, inner.output.clone()) {
                (None, None) => TurnOptions::builder().build(),
                (None, Some(output)) => TurnOptions::builder().output(output).build(),
                (Some(resume), None) => TurnOptions::builder().resume(resume).build(),
                (Some(resume), Some(output)) => {
                    TurnOptions::builder().resume(resume).output(output).build()
                }
            };
            // As `run_turn` runs a turn: the model's prices and window.
            let options = options.for_model(&*inner.model);
            let result = drive(&ctx, inner, &session, &mut conversation, &options).await?;
            let paused = match result {
                Ok(outcome) => match outcome.status {
                    TurnStatus::Paused(paused) => paused,
                    _ => break Ok(outcome),
                },
                Err(error) => break Err(error),
            };
            resume = Some(wait_for_decisions(&ctx, &conversation, *paused).await?);
        };
        ctx.clear(PENDING);
        ctx.set(CONVERSATION, Json(conversation));
        let report = report(result);
        ctx.set(OUTCOME, Json(report.clone()));
        Ok(Json(report))
    }

    /// The session's conversation, as the last turn left it (or as the
    /// paused turn left it while it waits).
    #[handler]
    async fn conversation(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Vec<Message>>, HandlerError> {
        Ok(ctx
            .get::<Json<Vec<Message>>>(CONVERSATION)
            .await?
            .unwrap_or_default())
    }

    /// The paused turn waiting for decisions, if any.
    #[handler]
    async fn pending(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Option<PendingDecisions>>, HandlerError> {
        Ok(Json(
            ctx.get::<Json<PendingDecisions>>(PENDING)
                .await?
                .map(Json::into_inner),
        ))
    }

    /// What the session's last turn ended with, if it ended.
    #[handler]
    async fn outcome(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Option<TurnReport>>, HandlerError> {
        Ok(Json(
            ctx.get::<Json<TurnReport>>(OUTCOME)
                .await?
                .map(Json::into_inner),
        ))
    }
}

/// Steps one turn (or one resume) to its end, each model request and each
/// tool call a journaled step of `ctx`'s invocation.
async fn drive(
    ctx: &ObjectContext<'_>,
    inner: &DurableAgent,
    session: &Definition<agent_loop_core::Bound>,
    conversation: &mut Vec<Message>,
    options: &TurnOptions<'_>,
) -> Result<Result<TurnOutcome, TurnError>, HandlerError> {
    let mut steps = session.turn_steps(conversation, options);
    loop {
        match steps.next() {
            Step::Refresh => steps.refresh().await,
            Step::Claim => steps.claim().await,
            Step::Compact => steps.compact(inner.model.description().format).await,
            Step::Request => {
                let request = OwnedRequest::of(&steps.request());
                let model = Arc::clone(&inner.model);
                // A failed request is journaled as the turn's answer, as
                // `run_turn` takes it (the HTTP models retried what may be
                // retried already): the turn fails typed, or compacts when
                // the context window is full, and is not retried forever.
                let Json((answer, nanos)) = ctx
                    .run(move || async move {
                        let started = Instant::now();
                        let answer = match model.respond(request.request()).await {
                            Ok(response) => JournaledAnswer::Response(response),
                            Err(error) => JournaledAnswer::Failed {
                                failed: JournaledModelError::of(&error),
                            },
                        };
                        let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        Ok(Json((answer, nanos)))
                    })
                    .name("model request")
                    .await?;
                let answer = match answer {
                    JournaledAnswer::Response(response) => Ok(response),
                    JournaledAnswer::Failed { failed } => Err(failed.into_error()),
                };
                steps.respond(answer, std::time::Duration::from_nanos(nanos));
            }
            Step::Batch => {
                let ids: Vec<String> = steps
                    .batch_calls()
                    .iter()
                    .map(|call| call.id.clone())
                    .collect();
                let parallel = steps.limits().parallel.get() as usize;
                let calls = (0..ids.len())
                    .map(|index| Box::pin(steps.call(index)) as batch::Call)
                    .collect();
                let launch = Launch::new(calls, parallel);
                let mut results = Vec::with_capacity(ids.len());
                for (index, id) in ids.iter().enumerate() {
                    let launch = Arc::clone(&launch);
                    let Json(result): Json<CallResult> = ctx
                        .run(move || async move {
                            let result = launch.result(index).await.map_err(HandlerError::from)?;
                            Ok(Json(result))
                        })
                        .name(format!("tool call {id}"))
                        .await?;
                    results.push(result);
                }
                // From the journaled calls' own durations: the same on a
                // replay.
                let durations: Vec<_> = results.iter().map(CallResult::duration).collect();
                let took = batch::batch_time(&durations, parallel);
                let results = steps.batch_results(results, took);
                steps.commit(results);
            }
            Step::Done => break,
            _ => return Err(TerminalError::new("a turn step this driver does not know").into()),
        }
    }
    Ok(steps.finish())
}

/// A model request's answer as the journal keeps it: the response as it
/// is (no wrapper: it is most of the journal's bytes), or the error.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum JournaledAnswer {
    Response(agent_loop_core::conversation::ModelResponse),
    Failed { failed: JournaledModelError },
}

/// A failed model request as the journal keeps it: its one line, and
/// what the turn decides by (whether the provider said the context window
/// is full, or refused the model's tool call, with what it quoted).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct JournaledModelError {
    message: String,
    context_window: bool,
    /// The provider refused the model's output as a tool call
    /// ([`ModelError::is_failed_tool_call`](agent_loop_core::turn::ModelError::is_failed_tool_call)):
    /// its message and the output it quoted. Absent in journals written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failed_tool_call: Option<JournaledFailedToolCall>,
}

/// What the turn shows the model of a failed tool call.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct JournaledFailedToolCall {
    message: Option<String>,
    failed_generation: Option<String>,
}

impl JournaledModelError {
    fn of(error: &agent_loop_core::turn::ModelError) -> Self {
        Self {
            message: with_causes(error),
            context_window: error.exceeds_context_window(),
            failed_tool_call: error
                .is_failed_tool_call()
                .then(|| JournaledFailedToolCall {
                    message: error.message.clone(),
                    failed_generation: error.failed_generation.clone(),
                }),
        }
    }

    fn into_error(self) -> agent_loop_core::turn::ModelError {
        let mut error = agent_loop_core::turn::ModelError::other(self.message);
        if self.context_window {
            // The code `exceeds_context_window` reads.
            error.code = Some("context_length_exceeded".into());
        }
        if let Some(failed) = self.failed_tool_call {
            // The code `is_failed_tool_call` reads.
            error.code = Some("tool_use_failed".into());
            error.message = failed.message;
            error.failed_generation = failed.failed_generation;
        }
        error
    }
}

/// A model request that owns its parts, so a journaled step can send it.
struct OwnedRequest {
    conversation: Vec<Message>,
    instructions: Option<String>,
    tools: Vec<ToolInfo>,
    mode: Option<String>,
    output: Option<Output>,
}

impl OwnedRequest {
    fn of(request: &ModelRequest<'_>) -> Self {
        Self {
            conversation: request.conversation.to_vec(),
            instructions: request.instructions.map(str::to_owned),
            tools: request.tools.iter().cloned().collect(),
            mode: request.mode.map(str::to_owned),
            output: request.output.cloned(),
        }
    }

    fn request(&self) -> ModelRequest<'_> {
        let mut request = ModelRequest::new(&self.conversation).tools(&self.tools[..]);
        if let Some(instructions) = &self.instructions {
            request = request.instructions(instructions);
        }
        if let Some(mode) = &self.mode {
            request = request.mode(mode);
        }
        if let Some(output) = &self.output {
            request = request.output(output);
        }
        request
    }
}

/// Waits, suspended, for a decision on each pending call of `paused`: one
/// awakeable per call, registered with the call's `AgentDecision` object.
/// The resume they make.
async fn wait_for_decisions(
    ctx: &ObjectContext<'_>,
    conversation: &[Message],
    paused: PausedTurn,
) -> Result<Resume, HandlerError> {
    let keys: Vec<String> = paused
        .pending
        .iter()
        .map(|pending| format!("{}:{}:{}", ctx.key(), paused.pause_id, pending.tool_call_id))
        .collect();
    ctx.set(CONVERSATION, Json(conversation.to_vec()));
    ctx.set(
        PENDING,
        Json(PendingDecisions {
            paused: paused.clone(),
            decision_keys: keys.clone(),
        }),
    );
    let mut waits = Vec::with_capacity(keys.len());
    for (key, call) in keys.iter().zip(&paused.pending) {
        let (awakeable, decided) = ctx.awakeable::<Json<CallDecision>>();
        ctx.object_client::<AgentDecisionClient>(key.clone())
            .register(Json(Registration {
                awakeable,
                call: call.clone(),
            }))
            .send();
        waits.push(decided);
    }
    let mut decisions = Vec::with_capacity(waits.len());
    for decided in waits {
        decisions.push(decided.await?.into_inner());
    }
    ctx.clear(PENDING);
    Ok(Resume::new(paused, decisions))
}

/// The report of a turn's end.
fn report(result: Result<TurnOutcome, TurnError>) -> TurnReport {
    match result {
        Ok(outcome) => {
            let (status, answer) = match &outcome.status {
                TurnStatus::Completed { answer } => ("completed", Some(answer.clone())),
                TurnStatus::Output { value } => ("output", Some(value.to_string())),
                TurnStatus::Interrupted => ("interrupted", None),
                _ => ("other", None),
            };
            TurnReport {
                status: status.into(),
                answer,
                error: None,
                stats: outcome.stats,
            }
        }
        Err(error) => TurnReport {
            status: "failed".into(),
            answer: None,
            error: Some(with_causes(&error)),
            stats: TurnStats::default(),
        },
    }
}

/// `error`'s line and its sources', `: ` between them.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A Restate virtual object keyed by `{session}:{pause id}:{tool call
/// id}`: where the decision for one pending call goes, taken once.
struct AgentDecision;

#[restate_sdk::object(name = "AgentDecision")]
impl AgentDecision {
    /// The paused turn waits on `registration.awakeable` for the decision
    /// on `registration.call`.
    #[handler]
    async fn register(
        &self,
        ctx: ObjectContext<'_>,
        registration: Json<Registration>,
    ) -> Result<(), HandlerError> {
        let Registration { awakeable, call } = registration.into_inner();
        ctx.set(AWAKEABLE, awakeable);
        ctx.set(CALL, Json(call));
        Ok(())
    }

    /// Whether a paused turn waits for this call's decision (and none was
    /// taken yet).
    #[handler]
    async fn waiting(&self, ctx: SharedObjectContext<'_>) -> Result<bool, HandlerError> {
        let decided = ctx.get::<bool>(DECIDED).await?.unwrap_or(false);
        Ok(!decided && ctx.get::<String>(AWAKEABLE).await?.is_some())
    }

    /// Takes a person's decision for this call and wakes the paused turn
    /// with it. Refused with HTTP 409 when the call was decided already,
    /// and 404 when no turn waits for it (yet).
    #[handler]
    async fn decide(
        &self,
        ctx: ObjectContext<'_>,
        decision: Json<CallDecision>,
    ) -> Result<(), HandlerError> {
        if ctx.get::<bool>(DECIDED).await?.unwrap_or(false) {
            return Err(TerminalError::new_with_code(409, "this call was decided already").into());
        }
        let Some(awakeable) = ctx.get::<String>(AWAKEABLE).await? else {
            return Err(
                TerminalError::new_with_code(404, "no paused turn waits for this call").into(),
            );
        };
        // What the turn's resume would refuse is refused here, before the
        // call's one decision is taken: another call's id, a MAC that is
        // not the pending call's.
        if let Some(Json(call)) = ctx.get::<Json<PendingCall>>(CALL).await? {
            if decision.0.tool_call_id != call.tool_call_id {
                let message = format!(
                    "this decision is for `{}`, not `{}`",
                    decision.0.tool_call_id, call.tool_call_id
                );
                return Err(TerminalError::new_with_code(400, message).into());
            }
            if call.mac.is_some() && decision.0.mac != call.mac {
                let message = "the decision's MAC is not the pending call's";
                return Err(TerminalError::new_with_code(400, message).into());
            }
        }
        ctx.resolve_awakeable(&awakeable, decision);
        ctx.set(DECIDED, true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The connections `listen` accepts send at once: the option is
    /// copied from the listener (the platform's rule this relies on).
    #[tokio::test]
    async fn accepted_connections_send_at_once() {
        let listener = super::listen("127.0.0.1:0".parse().expect("an address")).expect("binds");
        let address = listener.local_addr().expect("bound");
        let (client, accepted) =
            tokio::join!(tokio::net::TcpStream::connect(address), listener.accept());
        let _client = client.expect("connects");
        let (stream, _) = accepted.expect("accepts");
        assert!(stream.nodelay().expect("reads the option"));
    }

    /// A failed tool call survives the journal: rebuilt from it, the error
    /// is still one (so a replayed turn asks again as the first run did),
    /// with the provider's message and the output it quoted; a journal
    /// written before the field was kept reads as no failed tool call.
    #[test]
    fn a_journaled_failed_tool_call_is_one_when_read_back() {
        use agent_loop_core::turn::{ModelError, ModelErrorKind};
        let mut error = ModelError::new(ModelErrorKind::Http { status: 400 });
        error.code = Some("tool_use_failed".into());
        error.message = Some("Failed to call a function.".into());
        error.failed_generation = Some("<function=f{}".into());
        let journaled = super::JournaledModelError::of(&error);
        let json = serde_json::to_string(&journaled).expect("serialises");
        let back: super::JournaledModelError = serde_json::from_str(&json).expect("reads");
        let rebuilt = back.into_error();
        assert!(rebuilt.is_failed_tool_call());
        assert_eq!(
            rebuilt.message.as_deref(),
            Some("Failed to call a function.")
        );
        assert_eq!(rebuilt.failed_generation.as_deref(), Some("<function=f{}"));

        let old: super::JournaledModelError =
            serde_json::from_str(r#"{"message":"m","context_window":false}"#).expect("reads");
        assert!(!old.into_error().is_failed_tool_call());
    }
}
