//! The approval gate: a policy that looks at each tool call a model asks
//! for, after its arguments passed the tool's schema and before the
//! middleware chain, and allows it or denies it with a reason the model
//! reads.
//!
//! Gates are set on the definition
//! ([`DefinitionBuilder::gate`](crate::definition::DefinitionBuilder::gate))
//! and replaced per mode ([`Mode::gate`](crate::Mode::gate)) and per
//! tool ([`DefinitionBuilder::tool_gate`](crate::definition::DefinitionBuilder::tool_gate),
//! [`Mode::tool_gate`](crate::Mode::tool_gate): a tool's own gates are
//! asked instead of the mode's about its calls; a mode's for a tool
//! replace the base's for it); several
//! gates are asked in the order they were added, and the first that does
//! not allow decides. A gate sees the tool's [`ToolInfo`] (its MCP
//! [`annotations`](ToolInfo::annotations) such as `destructiveHint`
//! among them), the call's id and validated arguments, the session and
//! the mode, so one gate can hold a per-tool policy.
//!
//! Every call a model makes goes through the gate: the calls of a turn and
//! [`Definition::run_tool_call`](crate::Definition::run_tool_call). A
//! direct [`invoke`](crate::Definition::invoke) from code does not: the
//! code that calls it has decided already. The turn's `structured_output`
//! call is the turn's answer, not an action, and is not gated.
//!
//! A call a gate **asks** about does not run yet: the other calls of its
//! batch run, and the turn ends paused
//! ([`TurnStatus::Paused`](crate::turn::TurnStatus::Paused)) with a
//! [`PausedTurn`](crate::turn::PausedTurn) naming the pending calls; a
//! resume with a person's decisions goes on
//! ([`TurnOptionsBuilder::resume`](crate::turn::TurnOptionsBuilder::resume)).
//! With an [`ApprovalKey`] on the definition, each pending call carries a
//! MAC (HMAC-SHA256, the `hmac` and `sha2` crates) over the session and
//! loop ids, the call id, the tool name and the arguments, and a resume
//! verifies it: a decision that came back through an untrusted client
//! cannot approve another call, the call with other pending arguments, or
//! a call of another session. The MAC binds a decision to its call, not
//! what the decision says: an edit
//! ([`Decision::ApproveWith`](crate::turn::Decision::ApproveWith)) or an
//! external result is the application's to authorise, and the
//! [`PausedTurn`](crate::turn::PausedTurn) (its counts above all) is to
//! be kept on the server.
//!
//! A denied call does not run; the model reads
//! ``the call to `delete_file` was denied: <reason>`` as its error result
//! ([`ToolCallErrorKind::Denied`](crate::bind::ToolCallErrorKind::Denied)),
//! and the turn goes on. A gate that panics denies the call (the gate
//! fails closed:
//! [`ToolCallErrorKind::GatePanicked`](crate::bind::ToolCallErrorKind::GatePanicked)).
//!
//! ```
//! use agent_loop_core::gate::{GateCall, GateDecision};
//! use agent_loop_core::tool::{self, BoxError, ToolInfo};
//! use agent_loop_core::Definition;
//!
//! let delete = tool::Definition::from_fn(
//!     ToolInfo::without_parameters("delete_all", "Deletes every file."),
//!     |_arguments: serde_json::Value, _context| async { Ok::<_, BoxError>("deleted") },
//! );
//! let definition = Definition::builder()
//!     .name("careful")
//!     .tool(delete)
//!     .gate(|call: &GateCall<'_>| {
//!         if call.tool.name.starts_with("delete") {
//!             GateDecision::deny("deleting needs a person's yes")
//!         } else {
//!             GateDecision::Allow
//!         }
//!     })
//!     .build()
//!     .validate()?;
//! # Ok::<_, agent_loop_core::DefinitionError>(())
//! ```

use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::session::{LoopId, SessionId};
use crate::support::lock::lock;
use crate::support::panic::panic_message;
use crate::tool::{BoxError, ToolInfo};

/// A policy on tool calls: see the [module docs](self). Implemented for
/// every `Fn(&GateCall<'_>) -> GateDecision` that is `Send + Sync +
/// 'static`.
///
/// `decide` runs on the turn's task before the call's own task starts,
/// once per call: keep it quick and free of blocking I/O (look a decision
/// up, do not wait for one).
pub trait Gate: Send + Sync + 'static {
    /// What becomes of `call`.
    fn decide(&self, call: &GateCall<'_>) -> GateDecision;
}

impl<F> Gate for F
where
    F: Fn(&GateCall<'_>) -> GateDecision + Send + Sync + 'static,
{
    fn decide(&self, call: &GateCall<'_>) -> GateDecision {
        self(call)
    }
}

/// A tool call as a [`Gate`] sees it.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct GateCall<'a> {
    /// The tool called, as the model sees it.
    pub tool: &'a ToolInfo,
    /// The call's tool call id (as the turn keeps it: a minted one for an
    /// empty or reused provider id).
    pub tool_call_id: &'a str,
    /// The arguments, a JSON object that passed the tool's schema.
    pub arguments: &'a Value,
    /// The session the call belongs to.
    pub session_id: SessionId,
    /// The loop of that session.
    pub loop_id: LoopId,
    /// The mode the call runs in; `None` for the base mode.
    pub mode: Option<&'a str>,
}

/// What a [`Gate`] says of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GateDecision {
    /// The call runs (through the middleware chain).
    Allow,
    /// The call does not run: the model reads ``the call to `NAME` was
    /// denied: REASON`` as its error result.
    Deny {
        /// Why, in words for the model (cleaned of control characters and
        /// bounded, as every error text).
        reason: String,
    },
    /// The call waits for a person's decision: in a turn, the turn pauses
    /// once the batch's other calls ran. Outside a turn
    /// ([`run_tool_call`](crate::Definition::run_tool_call)) there is
    /// nothing to pause, and the call is answered as not run
    /// ([`ToolCallErrorKind::NeedsApproval`](crate::bind::ToolCallErrorKind::NeedsApproval)).
    Ask {
        /// Why it needs a decision, for the person deciding (kept in the
        /// [`PendingCall`](crate::turn::PendingCall)).
        reason: String,
    },
}

impl GateDecision {
    /// [`Deny`](Self::Deny) with `reason`.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny {
            reason: reason.into(),
        }
    }

    /// [`Ask`](Self::Ask) with `reason`.
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::Ask {
            reason: reason.into(),
        }
    }
}

/// The secret that signs pending calls
/// ([`DefinitionBuilder::approval_key`](crate::definition::DefinitionBuilder::approval_key)):
/// use 32 random bytes, kept on the server. Its `Debug` shows no byte of
/// it.
#[derive(Clone)]
pub struct ApprovalKey(Arc<[u8]>);

impl ApprovalKey {
    /// A key of `bytes`. HMAC takes any length, but a short or guessable
    /// key lets anyone compute MACs: use 32 random bytes (the strength of
    /// SHA-256), kept out of the client.
    pub fn new(bytes: impl AsRef<[u8]>) -> Self {
        Self(bytes.as_ref().into())
    }

    /// The MAC of one pending call, as lower-case hex (64 digits).
    pub(crate) fn sign(&self, fields: &MacFields<'_>) -> String {
        let bytes = self.mac(fields).finalize().into_bytes();
        bytes
            .iter()
            .fold(String::with_capacity(64), |mut hex, byte| {
                use std::fmt::Write as _;
                let _ = write!(hex, "{byte:02x}");
                hex
            })
    }

    /// `true` when `mac` (hex) is the MAC of `fields`, compared in
    /// constant time.
    pub(crate) fn verify(&self, fields: &MacFields<'_>, mac: &str) -> bool {
        let Some(bytes) = from_hex(mac) else {
            return false;
        };
        self.mac(fields).verify_slice(&bytes).is_ok()
    }

    fn mac(&self, fields: &MacFields<'_>) -> Hmac<Sha256> {
        // `new_from_slice` takes a key of any length.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        let arguments = fields.arguments.to_string();
        let session = fields.session_id.to_string();
        let loop_id = fields.loop_id.to_string();
        // Each field with its length first, so no two calls write the
        // same bytes.
        for field in [
            "agent-loop pending call v1",
            &session,
            &loop_id,
            fields.tool_call_id,
            fields.tool_name,
            &arguments,
        ]
        .into_iter()
        // Only a paused agent's call has this field: every other MAC is
        // what it was.
        .chain(fields.agent)
        {
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field.as_bytes());
        }
        mac
    }
}

impl fmt::Debug for ApprovalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalKey(..)")
    }
}

/// What a pending call's MAC covers.
pub(crate) struct MacFields<'a> {
    pub(crate) session_id: SessionId,
    pub(crate) loop_id: LoopId,
    pub(crate) tool_call_id: &'a str,
    pub(crate) tool_name: &'a str,
    pub(crate) arguments: &'a Value,
    /// For a call whose agent paused: the agent's pause as JSON, so that
    /// what the agent goes on from is the server's, not a client's edit.
    pub(crate) agent: Option<&'a str>,
}

/// The bytes of hex `text` (digits only: no sign, no prefix).
fn from_hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .chars()
        .map(|c| c.to_digit(16))
        .collect::<Option<_>>()?;
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::try_from(pair[0] * 16 + pair[1]).ok())
        .collect()
}

/// The gates of one mode, in the order they are asked, and the gates of
/// single tools by tool name (each tool's replace the mode's for its
/// calls).
#[derive(Clone, Default)]
pub(crate) struct Gates(
    pub(crate) Vec<Arc<dyn Gate>>,
    pub(crate) Vec<(String, Arc<dyn Gate>)>,
);

impl fmt::Debug for Gates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Gates({}, {} for single tools)",
            self.0.len(),
            self.1.len()
        )
    }
}

impl Gates {
    /// The gates of each tool that has its own: `base`'s, then these
    /// (a tool named here takes only these).
    pub(crate) fn per_tool(
        base: &Gates,
        own: Option<&Gates>,
    ) -> std::collections::HashMap<String, Arc<[Arc<dyn Gate>]>> {
        let group = |gates: &[(String, Arc<dyn Gate>)]| {
            let mut grouped: std::collections::HashMap<String, Vec<Arc<dyn Gate>>> =
                std::collections::HashMap::new();
            for (name, gate) in gates {
                grouped
                    .entry(name.clone())
                    .or_default()
                    .push(Arc::clone(gate));
            }
            grouped
        };
        let mut gates = group(&base.1);
        if let Some(own) = own {
            gates.extend(group(&own.1));
        }
        gates
            .into_iter()
            .map(|(name, list)| (name, list.into()))
            .collect()
    }
}

/// Why the gates stopped a call.
pub(crate) enum Stopped {
    /// A gate denied it, for this reason.
    Denied(String),
    /// A gate asks for a decision, for this reason.
    Asked(String),
    /// A gate panicked, with this message.
    Panicked(String),
}

/// Asks `gates` about `call`, in order; the first that does not allow
/// decides. A panic is contained and stops the call.
pub(crate) fn ask(gates: &[Arc<dyn Gate>], call: &GateCall<'_>) -> Result<(), Stopped> {
    for gate in gates {
        match catch_unwind(AssertUnwindSafe(|| gate.decide(call))) {
            Ok(GateDecision::Allow) => {}
            Ok(GateDecision::Deny { reason }) => return Err(Stopped::Denied(reason)),
            Ok(GateDecision::Ask { reason }) => return Err(Stopped::Asked(reason)),
            Err(panic) => return Err(Stopped::Panicked(panic_message(panic.as_ref()))),
        }
    }
    Ok(())
}

/// Where a resume claims the pause it goes on from, so that a stored pause
/// is resumed at most once, whoever resumes it: a paused turn carries a
/// [`pause_id`](crate::turn::PausedTurn::pause_id), and a resume claims it
/// after its decisions were checked and before any call runs. Only the
/// first claim of an id succeeds; a resume whose claim fails is refused
/// ([`ResumeErrorKind::Claimed`](crate::turn::ResumeErrorKind::Claimed))
/// and runs nothing. Public reports of the race this closes: two replicas
/// that load one stored pause and both resume it run the approved call
/// twice, unless the store itself takes the pause "in one atomic step".
///
/// The default is [`InMemoryPauseClaims`], one per binding: within one
/// binding a pause is resumed once. For replicas (several processes, or
/// several bindings of one session), give every resume one store
/// ([`TurnOptionsBuilder::claims`](crate::turn::TurnOptionsBuilder::claims))
/// backed by what they share; with SQL, one statement claims an id
/// atomically:
///
/// ```sql
/// -- CREATE TABLE pause_claims (pause_id TEXT PRIMARY KEY);
/// INSERT INTO pause_claims (pause_id) VALUES ($1) ON CONFLICT DO NOTHING;
/// -- claimed when it inserted one row
/// ```
#[async_trait]
pub trait PauseClaims: Send + Sync {
    /// Claims `pause_id`, atomically: `Ok(true)` the first time it is
    /// claimed, `Ok(false)` ever after. An error (the store could not be
    /// reached) refuses the resume as well: it is not known to be the
    /// first.
    async fn claim(&self, pause_id: &str) -> Result<bool, BoxError>;
}

impl fmt::Debug for dyn PauseClaims + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PauseClaims")
    }
}

/// Pause ids claimed in this process's memory: the default
/// [`PauseClaims`] of a binding, and enough for one process that shares
/// one value between the bindings that may resume the same pause.
///
/// ```
/// use agent_loop_core::gate::{InMemoryPauseClaims, PauseClaims};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let claims = InMemoryPauseClaims::new();
/// assert!(claims.claim("pause_1").await?);
/// assert!(!claims.claim("pause_1").await?);
/// # Ok::<_, agent_loop_core::tool::BoxError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct InMemoryPauseClaims {
    claimed: Mutex<HashSet<String>>,
}

impl InMemoryPauseClaims {
    /// No pause claimed yet.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait]
impl PauseClaims for InMemoryPauseClaims {
    async fn claim(&self, pause_id: &str) -> Result<bool, BoxError> {
        Ok(lock(&self.claimed).insert(pause_id.to_owned()))
    }
}
