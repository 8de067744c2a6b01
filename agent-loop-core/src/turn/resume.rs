//! Resuming a paused turn (see [`pause`](crate::turn::pause)): the
//! checks a resume must pass before anything runs, the batch its
//! decisions make, and placing every pending call's result; and the
//! pending calls a paused batch hands back. The turn's steps are in
//! `steps`.

// A turn's error is its end, made once per turn, never on a hot path: it
// is not boxed, so callers match it as `run_turn` returns it.
#![allow(clippy::result_large_err)]

use serde::{Deserialize, Serialize};

use crate::bind::Bound;
use crate::bind::call::{self, Arguments, Finished, Prepared};
use crate::bind::{ToolCallError, ToolCallErrorKind};
use crate::conversation::{Conversation, Message, ToolCall, Usage, repair};
use crate::definition::Definition;
use crate::gate::MacFields;
use crate::limits::ToolLimits;
use crate::turn::agent::AgentHandler;
use crate::turn::context::TurnContext;
use crate::turn::pause::agent_state;
use crate::turn::{
    AgentPause, Budget, CallDecision, Decision, PAUSED_TURN_OLDEST_VERSION, PAUSED_TURN_VERSION,
    PausedTurn, PendingCall, Resume, ResumeError, ResumeErrorKind, TurnError, TurnEvent,
    TurnOptions, TurnStatus,
};

/// What a resume's decisions make of the paused batch: the calls to run
/// (approved, or denied and answered so through the batch), the calls
/// answered from outside, and the agents to go on with. Made again from
/// the resume when a turn is rebuilt, so it holds no state of its own.
pub(super) struct ResumePlan {
    /// The calls of the resume's batch, in decision order.
    pub(super) calls: Vec<ToolCall>,
    /// What each of them is, aligned with `calls`.
    pub(super) prepared: Vec<Prepared<'static>>,
    /// External results, answered without running.
    pub(super) answered: Vec<Finished>,
    /// The agents the approved calls go on with: call id, the agent's
    /// conversation, its resume.
    pub(super) agents: Vec<(String, Vec<Message>, Resume)>,
    /// Every decided call, in the paused turn's order: each is answered
    /// "interrupted" when the resume is cancelled while calls run.
    pub(super) decided: Vec<ToolCall>,
}

impl TurnContext<'_> {
    /// The pending calls of a prepared batch, in call order, each signed
    /// when the definition has an approval key; each is announced.
    pub(super) fn pending(
        &self,
        batch: &[&ToolCall],
        prepared: &[Prepared<'_>],
    ) -> Vec<PendingCall> {
        batch
            .iter()
            .zip(prepared)
            .filter_map(|(call, prepared)| {
                let Prepared::Pending(pending) = prepared else {
                    return None;
                };
                self.events.emit(|| TurnEvent::ToolCallPending {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    reason: pending.reason.clone(),
                });
                let mac = self.approval_key.map(|key| {
                    key.sign(&self.mac_fields(&call.id, &call.name, &pending.arguments, None))
                });
                Some(PendingCall {
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    arguments: pending.arguments.clone(),
                    reason: pending.reason.clone(),
                    external: pending.external,
                    held: pending.held,
                    mac,
                    agent: None,
                })
            })
            .collect()
    }

    /// The pending call of `call`, whose agent paused (`pause`): signed
    /// and announced like a gate's.
    pub(super) fn agent_pending(
        &self,
        call: &ToolCall,
        arguments: serde_json::Value,
        pause: AgentPause,
    ) -> PendingCall {
        let reason = match pause.paused.budget {
            Some(budget) => format!(
                "the agent `{}` paused: the budget `{budget}` of its turn or of a turn above it was reached",
                call.name
            ),
            None => format!(
                "the agent `{}` waits for decisions on {} of its calls",
                call.name,
                pause.paused.pending.len()
            ),
        };
        self.events.emit(|| TurnEvent::ToolCallPending {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            reason: reason.clone(),
        });
        let state = agent_state(&pause);
        let mac = self
            .approval_key
            .map(|key| key.sign(&self.mac_fields(&call.id, &call.name, &arguments, Some(&state))));
        PendingCall {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            arguments,
            reason,
            external: false,
            held: false,
            mac,
            agent: Some(Box::new(pause)),
        }
    }

    /// The calls of `finished` whose agents paused (`parked`, by call id),
    /// taken out of it: each becomes a pending call, unanswered.
    pub(super) fn take_paused_agents(
        &self,
        batch: &[&ToolCall],
        finished: &mut [Option<Finished>],
        parked: Vec<(String, AgentPause)>,
    ) -> Vec<PendingCall> {
        let mut pending = Vec::with_capacity(parked.len());
        for (id, pause) in parked {
            let Some(index) = batch.iter().position(|call| call.id == id) else {
                continue;
            };
            // No result: the call waits for the resume.
            if let Some(slot) = finished.get_mut(index) {
                *slot = None;
            }
            let call = batch[index];
            pending.push(self.agent_pending(call, call_arguments(&call.arguments), pause));
        }
        pending
    }

    /// The status of a turn that pauses with `pending` calls waiting after
    /// the message at `message_index` (or, for a reached `budget`, before
    /// a request), at `counts`; announced.
    pub(super) fn paused(
        &self,
        message_index: usize,
        pending: Vec<PendingCall>,
        counts: Prior,
        budget: Option<Budget>,
        resumed_from: &str,
    ) -> TurnStatus {
        self.events.emit(|| TurnEvent::TurnPaused {
            pending: u32::try_from(pending.len()).unwrap_or(u32::MAX),
        });
        let pause_id = self.pause_id(message_index, &pending, &counts, resumed_from);
        TurnStatus::Paused(Box::new(PausedTurn {
            pause_id,
            version: PAUSED_TURN_VERSION,
            session_id: self.ids.0,
            loop_id: self.ids.1,
            mode: self.table().site().mode_name().map(str::to_owned),
            message_index,
            pending,
            iterations: counts.iterations,
            calls: counts.calls,
            requests: counts.requests,
            usage: counts.usage,
            budget,
        }))
    }

    /// Checks `resume` against the session and `conversation` and makes
    /// the batch its decisions run. `Ok(None)` for a resume of a budget's
    /// pause: nothing to run, the turn goes on with its request. Refused,
    /// with `conversation` unchanged, with a [`ResumeError`] (or the
    /// [`TurnError`] the turn's `repair` would give after the calls ran).
    pub(super) fn plan_resume(
        &self,
        conversation: &Conversation,
        resume: &Resume,
    ) -> Result<Option<ResumePlan>, TurnError> {
        let paused = &resume.paused;
        let calls = self.check_resume(conversation, resume)?;
        // The `repair` that follows the resume must not fail after calls
        // ran: what it refuses (a result out of place) is refused now, on
        // a copy, before anything runs.
        repair(&mut conversation.clone())?;
        if paused.budget.is_some() {
            // Paused before a request: the turn goes on with it.
            return Ok(None);
        }
        let site = self.table().site();
        // Each decision made into what its call gets: run (after its
        // arguments passed the schema), or answered.
        let mut plan = ResumePlan {
            calls: Vec::new(),
            prepared: Vec::new(),
            answered: Vec::new(),
            agents: Vec::new(),
            decided: calls.iter().map(|(call, _, _)| call.clone()).collect(),
        };
        for (call, pending, decision) in &calls {
            let arguments = match &decision.decision {
                // The pending arguments: `check_resume` found them the call's.
                Decision::Approve => Some(pending.arguments.clone()),
                // The call runs again and its agent goes on from its pause
                // (`check_resume` found that it has one).
                Decision::Agent { decisions, limits } => {
                    if let Some(pause) = &pending.agent {
                        plan.agents.push((
                            call.id.clone(),
                            pause.conversation.clone(),
                            agent_resume(pause, decisions, *limits),
                        ));
                    }
                    Some(pending.arguments.clone())
                }
                Decision::ApproveWith { arguments } => Some(arguments.clone()),
                Decision::Deny { reason } => {
                    plan.prepared
                        .push(Prepared::Answered(call::denied(&call.name, reason)));
                    plan.calls.push(call.clone());
                    None
                }
                Decision::Result { text, is_error } => {
                    plan.answered
                        .push(call::external(site, call, text, *is_error));
                    None
                }
            };
            if let Some(arguments) = arguments {
                let prepared = match self
                    .table()
                    .prepare(&call.name, Arguments::Value(arguments))
                {
                    Prepared::Ready(ready) => Prepared::Ready(ready.into_owned()),
                    // Its tool went away while the turn was paused (a
                    // changing definition's new list): the call is answered
                    // so, as a model's call of it would be.
                    Prepared::Answered(error)
                        if error.kind == ToolCallErrorKind::NoLongerOffered =>
                    {
                        Prepared::Answered(error)
                    }
                    Prepared::Answered(error) => {
                        return Err(ResumeError::of_call(
                            ResumeErrorKind::InvalidArguments {
                                message: error.message,
                            },
                            &call.id,
                        )
                        .into());
                    }
                    // `prepare` never gates; kept aligned all the same.
                    Prepared::Pending(pending) => Prepared::Answered(ToolCallError::new(
                        ToolCallErrorKind::NeedsApproval,
                        &call.name,
                        pending.reason,
                    )),
                };
                plan.prepared.push(prepared);
                plan.calls.push(call.clone());
            }
        }
        Ok(Some(plan))
    }

    /// Puts the results of a resume's batch after the paused assistant
    /// message at `message_index`, in call order: those of the calls that
    /// ran before the pause, then `answered`, then `finished`.
    pub(super) fn place_resumed(
        conversation: &mut Conversation,
        message_index: usize,
        answered: Vec<Finished>,
        finished: Vec<Option<Finished>>,
    ) {
        let mut tail = conversation.split_off(message_index.saturating_add(1));
        tail.extend(answered.into_iter().map(|done| Message::Tool(done.result)));
        tail.extend(
            finished
                .into_iter()
                .flatten()
                .map(|done| Message::Tool(done.result)),
        );
        place_results(conversation, message_index, tail);
    }

    /// Answers every decided call of a resume cancelled while its calls
    /// ran "interrupted", as `repair` answers a call whose process died:
    /// some may have run, so the paused turn goes stale and none runs
    /// twice. Nothing else is added.
    pub(super) fn abort_resumed(
        &self,
        conversation: &mut Conversation,
        message_index: usize,
        decided: &[ToolCall],
    ) {
        let site = self.table().site();
        let mut tail = conversation.split_off(message_index.saturating_add(1));
        tail.extend(
            decided
                .iter()
                .map(|call| Message::Tool(call::aborted(site, call).result)),
        );
        place_results(conversation, message_index, tail);
    }

    /// The id of a pause after the message at `message_index` with
    /// `pending` calls at `counts`: the name-based (version 5) UUID, in the
    /// session's namespace, of the loop, that place, the counts and a
    /// digest of the pending calls (an agent that paused again pauses with
    /// other pending state, so with another id), and the id of the pause
    /// the turn was resumed from (a turn that pauses again at once, still
    /// over its budget, pauses with another id).
    fn pause_id(
        &self,
        message_index: usize,
        pending: &[PendingCall],
        counts: &Prior,
        resumed_from: &str,
    ) -> String {
        use sha2::{Digest, Sha256};
        let pending = serde_json::to_vec(pending).unwrap_or_default();
        let digest = Sha256::digest(&pending);
        let name = format!(
            "pause.{}.{resumed_from}.{message_index}.{}.{}.{}",
            self.ids.1.as_uuid().simple(),
            counts.requests,
            counts.calls,
            digest
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>()
        );
        format!(
            "pause_{}",
            uuid::Uuid::new_v5(&self.id_scope, name.as_bytes()).simple()
        )
    }

    /// What a pending call's MAC covers: this session's ids and the call.
    fn mac_fields<'c>(
        &self,
        tool_call_id: &'c str,
        tool_name: &'c str,
        arguments: &'c serde_json::Value,
        agent: Option<&'c str>,
    ) -> MacFields<'c> {
        MacFields {
            session_id: self.ids.0,
            loop_id: self.ids.1,
            tool_call_id,
            tool_name,
            arguments,
            agent,
        }
    }

    /// The pending calls of `resume`, each with its pending entry and its
    /// decision, once every rule of a resume holds (see
    /// [`pause`](crate::turn::pause)).
    fn check_resume<'r>(
        &self,
        conversation: &Conversation,
        resume: &'r Resume,
    ) -> Result<Vec<(ToolCall, &'r PendingCall, &'r CallDecision)>, ResumeError> {
        let paused = &resume.paused;
        if !(PAUSED_TURN_OLDEST_VERSION..=PAUSED_TURN_VERSION).contains(&paused.version) {
            return Err(ResumeError::new(ResumeErrorKind::UnsupportedVersion {
                version: paused.version,
            }));
        }
        if (paused.session_id, paused.loop_id) != self.ids {
            return Err(ResumeError::new(ResumeErrorKind::OtherSession));
        }
        if paused.mode.as_deref() != self.table().site().mode_name() {
            return Err(ResumeError::new(ResumeErrorKind::OtherMode));
        }
        if let Some(limits) = &resume.limits
            && let Err(error) = limits.check()
        {
            return Err(ResumeError::new(ResumeErrorKind::InvalidLimits {
                message: error.to_string(),
            }));
        }
        let stale = || ResumeError::new(ResumeErrorKind::Stale);
        if paused.budget.is_some() {
            // Paused before a request: nothing pending, nothing added since.
            if let Some(decision) = resume.decisions.first() {
                return Err(ResumeError::of_call(
                    ResumeErrorKind::UnknownCall,
                    &decision.tool_call_id,
                ));
            }
            if !paused.pending.is_empty() || conversation.len() != paused.message_index {
                return Err(stale());
            }
            return Ok(Vec::new());
        }
        let calls = match Self::paused_calls(conversation, paused) {
            Ok(calls) => calls,
            // The stored pause says other arguments than the conversation
            // holds: a pause edited after it was made. With MACs, that is
            // a forged decision, and named so, not a stale pause
            // (czpython/druks PR #632).
            Err(Unmatched::Edited(id)) if self.approval_key.is_some() => {
                return Err(ResumeError::of_call(ResumeErrorKind::BadMac, &id));
            }
            Err(_) => return Err(stale()),
        };
        check_decision_ids(paused, &resume.decisions)?;
        let mut decided = Vec::with_capacity(calls.len());
        for (pending, call) in paused.pending.iter().zip(calls) {
            let decision = match resume
                .decisions
                .iter()
                .find(|decision| decision.tool_call_id == pending.tool_call_id)
            {
                Some(decision) => decision,
                // A call held with its batch runs unless decided otherwise:
                // its gates allowed it.
                None if pending.held => &HELD_APPROVAL,
                None => {
                    return Err(ResumeError::of_call(
                        ResumeErrorKind::MissingDecision,
                        &pending.tool_call_id,
                    ));
                }
            };
            let implicit = std::ptr::eq(decision, &HELD_APPROVAL);
            if let Some(key) = self.approval_key.filter(|_| !implicit) {
                let state = pending.agent.as_deref().map(agent_state);
                let fields = self.mac_fields(
                    &pending.tool_call_id,
                    &pending.tool_name,
                    &pending.arguments,
                    state.as_deref(),
                );
                let verified = decision
                    .mac
                    .as_deref()
                    .is_some_and(|mac| key.verify(&fields, mac));
                if !verified {
                    return Err(ResumeError::of_call(
                        ResumeErrorKind::BadMac,
                        &pending.tool_call_id,
                    ));
                }
            }
            match (&decision.decision, pending.agent.as_deref()) {
                // The agent's own binding checks its decisions as its
                // resumed turn would: ids, kinds, MACs, edited arguments.
                (Decision::Agent { decisions, limits }, Some(pause)) => {
                    self.check_agent_resume(
                        pending,
                        pause,
                        agent_resume(pause, decisions, *limits),
                    )?;
                }
                (Decision::Agent { .. }, None)
                | (Decision::Approve | Decision::ApproveWith { .. }, Some(_)) => {
                    return Err(ResumeError::of_call(
                        ResumeErrorKind::WrongDecision,
                        &pending.tool_call_id,
                    ));
                }
                _ => {}
            }
            decided.push((call, pending, decision));
        }
        Ok(decided)
    }

    /// The pending calls of `paused` in `conversation`, in the paused
    /// turn's order, while the conversation still holds them unanswered,
    /// with their arguments, and only their batch's results after them;
    /// [`Unmatched`] when it does not: the paused turn is stale, or its
    /// pending arguments were edited.
    fn paused_calls(
        conversation: &Conversation,
        paused: &PausedTurn,
    ) -> Result<Vec<ToolCall>, Unmatched> {
        let assistant = conversation
            .get(paused.message_index)
            .and_then(Message::as_assistant)
            .ok_or(Unmatched::Stale)?;
        let after = conversation
            .get(paused.message_index + 1..)
            .unwrap_or_default();
        let answered = |id: &str| {
            after.iter().any(
                |message| matches!(message, Message::Tool(result) if result.tool_call_id == id),
            )
        };
        // Only this batch's results follow its message, one per call:
        // nothing ran since.
        let mut seen = std::collections::HashSet::new();
        for message in after {
            let Message::Tool(result) = message else {
                return Err(Unmatched::Stale);
            };
            let answers_a_call = assistant
                .tool_calls()
                .any(|call| call.id == result.tool_call_id);
            if !answers_a_call || !seen.insert(result.tool_call_id.as_str()) {
                return Err(Unmatched::Stale);
            }
        }
        // Each pending call once.
        let mut pending_ids = std::collections::HashSet::new();
        if paused.pending.is_empty()
            || !paused
                .pending
                .iter()
                .all(|pending| pending_ids.insert(pending.tool_call_id.as_str()))
        {
            return Err(Unmatched::Stale);
        }
        let mut calls = Vec::with_capacity(paused.pending.len());
        for pending in &paused.pending {
            let found = assistant
                .tool_calls()
                .find(|call| call.id == pending.tool_call_id && call.name == pending.tool_name);
            let call = found.ok_or(Unmatched::Stale)?;
            if answered(&call.id) {
                return Err(Unmatched::Stale);
            }
            // And the arguments the decision is about are the call's.
            if call_arguments(&call.arguments) != pending.arguments {
                return Err(Unmatched::Edited(call.id.clone()));
            }
            calls.push(call.clone());
        }
        Ok(calls)
    }
}

impl Definition<Bound> {
    /// Checks `resume` against this binding and `conversation` as a resumed
    /// turn would before it runs anything (its agents' decisions too), and
    /// runs nothing.
    pub(super) fn check_resume(
        &self,
        conversation: &Conversation,
        resume: &Resume,
    ) -> Result<(), ResumeError> {
        let options = TurnOptions::builder().build();
        let turn = TurnContext::new(self, &options);
        let decided = turn.check_resume(conversation, resume)?;
        // What the resumed turn's `repair` would refuse, refused now.
        if repair(&mut conversation.to_vec()).is_err() {
            return Err(ResumeError::new(ResumeErrorKind::Stale));
        }
        // And edited arguments against their tool's schema.
        for (call, _, decision) in decided {
            if let Decision::ApproveWith { arguments } = &decision.decision
                && let Prepared::Answered(error) = turn
                    .table()
                    .prepare(&call.name, Arguments::Value(arguments.clone()))
                && error.kind != ToolCallErrorKind::NoLongerOffered
            {
                return Err(ResumeError::of_call(
                    ResumeErrorKind::InvalidArguments {
                        message: error.message,
                    },
                    &call.id,
                ));
            }
        }
        Ok(())
    }
}

impl TurnContext<'_> {
    /// Checks, by the agent's own binding, the decisions for the paused
    /// agent of a call of `tool_name` (MACs, ids, edited arguments, and so
    /// on down its own agents), before anything runs.
    fn check_agent_resume(
        &self,
        pending: &PendingCall,
        pause: &AgentPause,
        resume: Resume,
    ) -> Result<(), ResumeError> {
        // An agent's tool is the one-tool definition `tool::Definition::agent`
        // made, which keeps its handler beside the tool.
        let agent = self
            .table()
            .nested(&pending.tool_name)
            .and_then(|nested| nested.downcast_ref::<AgentHandler>());
        match agent {
            Some(agent) => agent.check_resume(&pending.tool_call_id, pause, &resume),
            // Its tool is gone (a changing definition's new list): the call
            // is answered "no longer offered", and no agent runs.
            None => Ok(()),
        }
    }
}

/// The decision a held call gets when the resume brings none for it: it
/// runs as approved, its gates having allowed it.
static HELD_APPROVAL: CallDecision = CallDecision {
    tool_call_id: String::new(),
    mac: None,
    decision: Decision::Approve,
};

/// Why a paused turn's calls are not the conversation's.
enum Unmatched {
    /// The conversation no longer holds them unanswered.
    Stale,
    /// It holds the call of this id, with other arguments than the pause.
    Edited(String),
}

/// The resume of the paused agent `pause` with `decisions`, under `limits`
/// when given.
fn agent_resume(
    pause: &AgentPause,
    decisions: &[CallDecision],
    limits: Option<ToolLimits>,
) -> Resume {
    let resume = Resume::new(pause.paused.clone(), decisions.iter().cloned());
    match limits {
        Some(limits) => resume.with_limits(limits),
        None => resume,
    }
}

/// Appends `results` (tool messages) after the assistant message at
/// `assistant`, in the order of its calls.
fn place_results(conversation: &mut Conversation, assistant: usize, mut results: Vec<Message>) {
    let call_order: Vec<String> = conversation
        .get(assistant)
        .and_then(Message::as_assistant)
        .map(|message| message.tool_calls().map(|call| call.id.clone()).collect())
        .unwrap_or_default();
    results.sort_by_key(|message| match message {
        Message::Tool(result) => call_order
            .iter()
            .position(|id| *id == result.tool_call_id)
            .unwrap_or(usize::MAX),
        _ => usize::MAX,
    });
    conversation.extend(results);
}

/// A call's arguments text as the schema check read it (blank is `{}`;
/// text that is no JSON is `null`, which no pending call holds).
pub(super) fn call_arguments(text: &str) -> serde_json::Value {
    if text.trim().is_empty() {
        return serde_json::json!({});
    }
    serde_json::from_str(text).unwrap_or(serde_json::Value::Null)
}

/// A turn's counts at a pause: what a resumed turn goes on from.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(super) struct Prior {
    pub(super) iterations: u32,
    pub(super) calls: u32,
    pub(super) requests: u32,
    pub(super) usage: Usage,
}

/// `Err` when a decision names no pending call of `paused`, or a call an
/// earlier decision named.
fn check_decision_ids(paused: &PausedTurn, decisions: &[CallDecision]) -> Result<(), ResumeError> {
    for (index, decision) in decisions.iter().enumerate() {
        let id = decision.tool_call_id.as_str();
        if !paused
            .pending
            .iter()
            .any(|pending| pending.tool_call_id == id)
        {
            return Err(ResumeError::of_call(ResumeErrorKind::UnknownCall, id));
        }
        if decisions[..index]
            .iter()
            .any(|earlier| earlier.tool_call_id == id)
        {
            return Err(ResumeError::of_call(ResumeErrorKind::DuplicateDecision, id));
        }
    }
    Ok(())
}
