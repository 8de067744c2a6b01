//! Per-turn tool limits: how many iterations, how many tool calls, how many
//! calls at once, how many bytes of each tool result the model sees, and
//! the turn's budgets of model requests and tokens.
//!
//! Two types, two jobs:
//!
//! - [`ToolLimits`] is what a user writes, in Rust or in a config file: an
//!   *override* where every field is optional. An unset field takes the
//!   default in the base limits and inherits the base in a
//!   [`Mode`](crate::mode::Mode), so a mode that sets only `iterations`
//!   changes iterations only. `ToolLimits::default()` is "all unset".
//! - [`ResolvedToolLimits`] is what a bound mode and the turn runner use:
//!   every field has a value, typed so that no invalid value can be held.
//!   `ResolvedToolLimits::default()` is the default limits:
//!
//! | field | unit | default | allowed |
//! | --- | --- | ---: | --- |
//! | `iterations` | model responses that ask for tools, per turn | 25 | ≥ 1, or unlimited |
//! | `calls` | tool calls per turn, all batches together | 100 | ≥ 1, or unlimited |
//! | `parallel` | tool calls running at once, per batch | 8 | ≥ 1 (never unlimited) |
//! | `result_bytes` | model-visible bytes of the text of one tool result (images pass whole) | off (unlimited) | ≥ 256, or unlimited |
//! | `call_timeout_ms` | milliseconds one tool call may run before it is stopped and answered with an error the model reads; a tool's own ([`tool::Definition::timeout`](crate::tool::Definition::timeout)) wins | off (unlimited) | ≥ 1, or unlimited |
//! | `requests` | model requests per turn | off (unlimited) | ≥ 1, or unlimited |
//! | `input_tokens` | input tokens per turn, all requests together, as the provider reported them ([`Usage::input_tokens`]) | off (unlimited) | ≥ 1, or unlimited |
//! | `output_tokens` | output tokens per turn, as reported ([`Usage::output_tokens`]) | off (unlimited) | ≥ 1, or unlimited |
//! | `total_tokens` | input and output tokens per turn, as reported ([`Usage::total_tokens`]) | off (unlimited) | ≥ 1, or unlimited |
//! | `cost_microdollars` | what the turn's tokens cost, in millionths of a US dollar, at the model's [`Prices`] ([`Prices::cost`] of the turn's usage; `500000` is $0.50) | off (unlimited) | ≥ 1, or unlimited (so at most $4,294.967295 a turn) |
//! | `context_tokens` | input tokens one request may hold: the context window the turn keeps to, estimated ([`context`](crate::context)); never more than the model's own window ([`Model::context_window`](crate::turn::Model::context_window)) | off (unlimited): the model's window when it is known | ≥ 1, or unlimited |
//! | `compact_at` | percent of `context_tokens` at which the turn compacts the conversation before its next request | 80 | 1 to 100 |
//!
//! The five budgets are checked before each model request: a budget is
//! reached when what the turn used so far is at or over it, and the turn
//! then fails with [`TurnError::Budget`](crate::turn::TurnError::Budget)
//! before sending. The request that crosses a token budget is not cut
//! short (its size is only known once it answered), so a turn can end
//! above a token or cost budget by at most one response; `requests` is
//! exact. A cost budget needs the turn's prices
//! ([`TurnOptions::prices`](crate::turn::TurnOptions), or the model's own,
//! which `run_turn` reads): a turn without them fails with
//! [`TurnError::Unpriced`](crate::turn::TurnError::Unpriced) before its
//! first request.
//!
//! `context_tokens` is checked before each request too, against the
//! request's estimated size (see [`context`](crate::context) for how it is
//! counted): at `compact_at` percent of it the turn compacts the
//! conversation first, and a request still over it after compacting is not
//! sent ([`Budget::ContextTokens`](crate::turn::Budget::ContextTokens)).
//!
//! [`Usage::input_tokens`]: crate::conversation::Usage::input_tokens
//! [`Usage::output_tokens`]: crate::conversation::Usage::output_tokens
//! [`Usage::total_tokens`]: crate::conversation::Usage::total_tokens
//! [`Prices`]: crate::conversation::Prices
//! [`Prices::cost`]: crate::conversation::Prices::cost
//!
//! ```
//! use agent_loop_core::limits::{Limit, ResolvedToolLimits, ToolLimits};
//!
//! let base = ToolLimits::new().iterations(3).parallel(2).resolve()?;
//! let mode = ToolLimits::new().calls(Limit::Unlimited).inherit(base)?;
//! assert_eq!(mode.iterations.get(), Some(3));
//! assert_eq!(mode.calls, Limit::Unlimited);
//! assert_eq!(mode.parallel.get(), 2);
//! assert_eq!(ToolLimits::default().resolve()?, ResolvedToolLimits::default());
//! # Ok::<_, agent_loop_core::limits::InvalidLimit>(())
//! ```
//!
//! # Config files
//!
//! [`ToolLimits`] reads one serde form, a map whose fields are all optional:
//!
//! ```json
//! {"iterations": 25, "calls": "unlimited", "parallel": 4, "result_bytes": 4096,
//!  "requests": 30, "total_tokens": 200000}
//! ```
//!
//! A count is a whole number of at least 1 (at least 256 for
//! `result_bytes`), or the word `"unlimited"` (not for `parallel`). Zero,
//! negative numbers, numbers above `u32::MAX`, other words, unknown keys,
//! and arrays are refused with an [`InvalidLimit`] message; wrap the
//! deserializer in [`serde_path_to_error`](https://docs.rs/serde_path_to_error)
//! to learn the path of the refused field:
//!
//! ```
//! use agent_loop_core::ToolLimits;
//!
//! let json = r#"{"iterations": 5, "parallel": 0}"#;
//! let error = serde_path_to_error::deserialize::<_, ToolLimits>(
//!     &mut serde_json::Deserializer::from_str(json),
//! )
//! .unwrap_err();
//! assert_eq!(error.path().to_string(), "parallel");
//! ```
//!
//! # Unlimited turns
//!
//! With unlimited iterations or calls a turn still ends when the model
//! gives a final answer, on cancellation, or on an error; a caller that lets
//! a model loop without limit must bound the turn another way (a timeout on
//! the turn, or cancelling its token).
//!
//! # Decisions
//!
#![doc = include_str!("../docs/limits.md")]

use std::fmt;
use std::num::NonZeroU32;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// A limit on a count per turn: at most a positive number, or unlimited.
///
/// Zero is not a limit (a turn allowed zero iterations could never call a
/// tool), so the count is a [`NonZeroU32`]. In [`ToolLimits`] setters a
/// plain `u32` is accepted too, and `0` is refused by
/// [`Definition::validate`](crate::Definition::validate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// At most this many.
    AtMost(NonZeroU32),
    /// No limit.
    Unlimited,
}

impl Limit {
    /// `Some(Limit::AtMost(count))`, or `None` when `count` is `0`. A
    /// `const fn`, so a constant can be checked when it compiles:
    /// `const { Limit::at_most(5).unwrap() }`.
    #[must_use]
    pub const fn at_most(count: u32) -> Option<Limit> {
        match NonZeroU32::new(count) {
            Some(count) => Some(Limit::AtMost(count)),
            None => None,
        }
    }

    /// The maximum, `None` when unlimited.
    #[must_use]
    pub const fn get(self) -> Option<u32> {
        match self {
            Limit::AtMost(count) => Some(count.get()),
            Limit::Unlimited => None,
        }
    }

    /// `true` when `count` is within the limit (always for
    /// [`Unlimited`](Limit::Unlimited)).
    #[must_use]
    pub const fn allows(self, count: u32) -> bool {
        match self {
            Limit::AtMost(max) => count <= max.get(),
            Limit::Unlimited => true,
        }
    }
}

impl From<NonZeroU32> for Limit {
    fn from(count: NonZeroU32) -> Self {
        Limit::AtMost(count)
    }
}

/// `25`, or `unlimited`.
impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::AtMost(count) => write!(f, "{count}"),
            Limit::Unlimited => f.write_str(UNLIMITED),
        }
    }
}

/// A `result_bytes` limit: at least [`ResultBytes::MIN`] (256) bytes, so
/// the truncation marker (about 30 bytes) leaves most of the room to the
/// result itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResultBytes(NonZeroU32);

impl ResultBytes {
    /// The smallest limit, 256 bytes.
    pub const MIN: ResultBytes = ResultBytes(NonZeroU32::new(256).unwrap());

    /// `Some` when `bytes` is at least [`MIN`](Self::MIN), else `None`.
    #[must_use]
    pub const fn new(bytes: u32) -> Option<ResultBytes> {
        match NonZeroU32::new(bytes) {
            Some(bytes) if bytes.get() >= Self::MIN.0.get() => Some(ResultBytes(bytes)),
            _ => None,
        }
    }

    /// The limit in bytes.
    #[must_use]
    pub const fn get(self) -> u32 {
        self.0.get()
    }
}

impl fmt::Display for ResultBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The value a count setter of [`ToolLimits`] accepts: a `u32` (`0` is
/// refused later by [`Definition::validate`](crate::Definition::validate),
/// so literals stay short), a [`NonZeroU32`], or a [`Limit`]
/// (`Limit::Unlimited`). Sealed: implemented for these three types only.
pub trait IntoLimit: sealed::Sealed {}

impl IntoLimit for u32 {}
impl IntoLimit for NonZeroU32 {}
impl IntoLimit for Limit {}

mod sealed {
    use std::num::NonZeroU32;

    /// One field as written, before it is checked.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Written {
        Count(u32),
        Unlimited,
    }

    pub trait Sealed {
        fn into_written(self) -> Written;
    }

    impl Sealed for u32 {
        fn into_written(self) -> Written {
            Written::Count(self)
        }
    }

    impl Sealed for NonZeroU32 {
        fn into_written(self) -> Written {
            Written::Count(self.get())
        }
    }

    impl Sealed for super::Limit {
        fn into_written(self) -> Written {
            match self {
                super::Limit::AtMost(count) => Written::Count(count.get()),
                super::Limit::Unlimited => Written::Unlimited,
            }
        }
    }
}

use sealed::Written;

/// Tool limit overrides for one turn, as a user writes them: every field is
/// optional. See the [module docs](self) for the fields, their units and
/// defaults.
///
/// An unset field takes the default in the base limits
/// ([`DefinitionBuilder::tool_limits`](crate::definition::DefinitionBuilder::tool_limits))
/// and inherits the base in a [`Mode`](crate::mode::Mode).
/// `ToolLimits::default()` and [`ToolLimits::new()`] are all unset.
///
/// Setters take a plain `u32` so the common spelling stays short; a value
/// that cannot be a limit (`0`, or `result_bytes` from 1 to 255) is
/// refused by [`Definition::validate`](crate::Definition::validate) as
/// [`DefinitionErrorKind::InvalidToolLimits`](crate::DefinitionErrorKind::InvalidToolLimits)
/// for the base and [`InvalidMode`](crate::DefinitionErrorKind::InvalidMode)
/// for a mode, with the field path (`modes[1].tool_limits.parallel`) and an
/// [`InvalidLimit`] as its source. [`check`](Self::check) runs the same
/// check earlier. `parallel` takes a count only, so it cannot be written
/// unlimited.
///
/// ```
/// use agent_loop_core::limits::{Limit, ToolLimits};
///
/// let limits = ToolLimits::new().iterations(5).calls(Limit::Unlimited).parallel(4);
/// let resolved = limits.resolve()?;
/// assert_eq!((resolved.iterations.get(), resolved.calls.get()), (Some(5), None));
/// assert!(ToolLimits::new().parallel(0).check().is_err());
/// # Ok::<_, agent_loop_core::limits::InvalidLimit>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ToolLimits {
    iterations: Option<Written>,
    calls: Option<Written>,
    parallel: Option<u32>,
    result_bytes: Option<Written>,
    call_timeout_ms: Option<Written>,
    requests: Option<Written>,
    input_tokens: Option<Written>,
    output_tokens: Option<Written>,
    total_tokens: Option<Written>,
    cost_microdollars: Option<Written>,
    context_tokens: Option<Written>,
    compact_at: Option<u32>,
}

impl ToolLimits {
    /// All fields unset, like `ToolLimits::default()`.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            iterations: None,
            calls: None,
            parallel: None,
            result_bytes: None,
            call_timeout_ms: None,
            requests: None,
            input_tokens: None,
            output_tokens: None,
            total_tokens: None,
            cost_microdollars: None,
            context_tokens: None,
            compact_at: None,
        }
    }

    /// Sets the iteration limit: model responses that ask for tools, per
    /// turn. Each batch of tool calls counts one iteration; a final answer
    /// counts none. A count (at least 1) or [`Limit::Unlimited`].
    #[must_use]
    pub fn iterations(mut self, limit: impl IntoLimit) -> Self {
        self.iterations = Some(limit.into_written());
        self
    }

    /// Sets the call limit: tool calls per turn, all batches together. A
    /// count (at least 1) or [`Limit::Unlimited`].
    #[must_use]
    pub fn calls(mut self, limit: impl IntoLimit) -> Self {
        self.calls = Some(limit.into_written());
        self
    }

    /// Sets how many tool calls of one batch run at once: a count of at
    /// least 1, never unlimited (tools share the process's resources).
    #[must_use]
    pub fn parallel(mut self, count: u32) -> Self {
        self.parallel = Some(count);
        self
    }

    /// Sets the bytes of one tool result's text the model sees: at least
    /// 256 ([`ResultBytes::MIN`]); longer text is cut to head + marker +
    /// tail (the text parts of a content result together, into one part).
    /// [`Limit::Unlimited`] turns cutting off (so a mode can turn off a
    /// base limit).
    ///
    /// Images are not counted and pass whole: a model is billed for an
    /// image by its size in pixels, not its bytes, and cutting one would
    /// leave no image at all. A tool (or a middleware) that may return
    /// large images should scale them down itself.
    #[must_use]
    pub fn result_bytes(mut self, limit: impl IntoLimit) -> Self {
        self.result_bytes = Some(limit.into_written());
        self
    }

    /// Sets how long one tool call may run, in milliseconds (`30_000` is
    /// 30 s): a call still running then is stopped (its future dropped,
    /// which cancels it) and answered with an error the model reads, ``the
    /// call to `search` timed out after 30 s``, of kind
    /// [`TimedOut`](crate::bind::ToolCallErrorKind::TimedOut); the turn goes
    /// on. A tool's own timeout
    /// ([`tool::Definition::timeout`](crate::tool::Definition::timeout))
    /// wins over this one. A count (at least 1) or [`Limit::Unlimited`];
    /// unlimited unless set.
    #[must_use]
    pub fn call_timeout_ms(mut self, limit: impl IntoLimit) -> Self {
        self.call_timeout_ms = Some(limit.into_written());
        self
    }

    /// Sets the request budget: model requests per turn (a request retried
    /// inside a model counts once). A count (at least 1) or
    /// [`Limit::Unlimited`]; unlimited unless set. See the [module
    /// docs](self) for when budgets are checked.
    #[must_use]
    pub fn requests(mut self, limit: impl IntoLimit) -> Self {
        self.requests = Some(limit.into_written());
        self
    }

    /// Sets the input-token budget: input tokens of the turn's requests
    /// together, as the provider reported them. A count (at least 1) or
    /// [`Limit::Unlimited`]; unlimited unless set.
    #[must_use]
    pub fn input_tokens(mut self, limit: impl IntoLimit) -> Self {
        self.input_tokens = Some(limit.into_written());
        self
    }

    /// Sets the output-token budget: output tokens of the turn's
    /// responses together (reasoning included), as reported. A count (at
    /// least 1) or [`Limit::Unlimited`]; unlimited unless set.
    #[must_use]
    pub fn output_tokens(mut self, limit: impl IntoLimit) -> Self {
        self.output_tokens = Some(limit.into_written());
        self
    }

    /// Sets the total-token budget: input and output tokens of the turn
    /// together, as reported. A count (at least 1) or
    /// [`Limit::Unlimited`]; unlimited unless set.
    #[must_use]
    pub fn total_tokens(mut self, limit: impl IntoLimit) -> Self {
        self.total_tokens = Some(limit.into_written());
        self
    }

    /// Sets the cost budget: what the turn's tokens cost together, in
    /// millionths of a US dollar (`500_000` is $0.50), priced at the
    /// turn's [`Prices`](crate::conversation::Prices)
    /// ([`TurnOptions::prices`](crate::turn::TurnOptions), else the
    /// model's own). An agent's tokens count toward the turns above it at
    /// their prices. A count (at least 1) or [`Limit::Unlimited`];
    /// unlimited unless set. A turn with this budget and no prices fails
    /// with [`TurnError::Unpriced`](crate::turn::TurnError::Unpriced)
    /// before its first request.
    #[must_use]
    pub fn cost_microdollars(mut self, limit: impl IntoLimit) -> Self {
        self.cost_microdollars = Some(limit.into_written());
        self
    }

    /// Sets the context budget: the input tokens one model request may
    /// hold, as [`context::TokenEstimator`](crate::context::TokenEstimator)
    /// estimates them (corrected by the input tokens the provider reported
    /// for the turn's last request). Set it below the model's context
    /// window, leaving room for the answer. A count (at least 1) or
    /// [`Limit::Unlimited`]; unlimited unless set, and then the turn
    /// compacts only when the provider says its window is full.
    #[must_use]
    pub fn context_tokens(mut self, limit: impl IntoLimit) -> Self {
        self.context_tokens = Some(limit.into_written());
        self
    }

    /// Sets at what share of `context_tokens` the turn compacts before its
    /// next request: a percent from 1 to 100; 80 unless set.
    #[must_use]
    pub fn compact_at(mut self, percent: u32) -> Self {
        self.compact_at = Some(percent);
        self
    }

    /// `true` when no field is set.
    #[must_use]
    pub fn is_unset(&self) -> bool {
        *self == Self::new()
    }

    /// Checks every set field, in the order iterations, calls, parallel,
    /// result_bytes, call_timeout_ms, requests, input_tokens, output_tokens, total_tokens,
    /// cost_microdollars, context_tokens, compact_at.
    ///
    /// Errors: the first [`InvalidLimit`]: a count of `0`
    /// ([`InvalidLimitKind::Zero`]), `result_bytes` from 1 to 255
    /// ([`InvalidLimitKind::TooFewResultBytes`]), `compact_at` outside 1 to
    /// 100 ([`InvalidLimitKind::NotAPercent`]).
    pub fn check(&self) -> Result<(), InvalidLimit> {
        self.merge(ResolvedToolLimits::DEFAULT)
            .1
            .map_or(Ok(()), Err)
    }

    /// Resolves base limits: every unset field takes its default (25
    /// iterations, 100 calls, 8 in parallel, results not cut, no budgets).
    ///
    /// Errors: as [`check`](Self::check).
    pub fn resolve(&self) -> Result<ResolvedToolLimits, InvalidLimit> {
        self.inherit(ResolvedToolLimits::DEFAULT)
    }

    /// Resolves a mode's limits: every unset field takes its value from
    /// `base`.
    ///
    /// Errors: as [`check`](Self::check).
    pub fn inherit(&self, base: ResolvedToolLimits) -> Result<ResolvedToolLimits, InvalidLimit> {
        match self.merge(base) {
            (resolved, None) => Ok(resolved),
            (_, Some(error)) => Err(error),
        }
    }

    /// The resolved limits, and the first invalid field if any (an invalid
    /// field keeps the inherited value).
    pub(crate) fn merge(
        &self,
        base: ResolvedToolLimits,
    ) -> (ResolvedToolLimits, Option<InvalidLimit>) {
        fn keep<T>(
            first: &mut Option<InvalidLimit>,
            checked: Result<T, InvalidLimit>,
            inherited: T,
        ) -> T {
            checked.unwrap_or_else(|error| {
                first.get_or_insert(error);
                inherited
            })
        }
        let mut first = None;
        let first = &mut first;
        let resolved = ResolvedToolLimits {
            iterations: match self.iterations {
                Some(written) => keep(
                    first,
                    count_limit(Field::Iterations, written),
                    base.iterations,
                ),
                None => base.iterations,
            },
            calls: match self.calls {
                Some(written) => keep(first, count_limit(Field::Calls, written), base.calls),
                None => base.calls,
            },
            parallel: match self.parallel {
                Some(count) => keep(
                    first,
                    NonZeroU32::new(count).ok_or_else(|| {
                        InvalidLimit::new(InvalidLimitKind::Zero, Field::Parallel, 0)
                    }),
                    base.parallel,
                ),
                None => base.parallel,
            },
            result_bytes: match self.result_bytes {
                Some(written) => keep(first, result_bytes_limit(written), base.result_bytes),
                None => base.result_bytes,
            },
            call_timeout_ms: match self.call_timeout_ms {
                Some(written) => keep(
                    first,
                    count_limit(Field::CallTimeoutMs, written),
                    base.call_timeout_ms,
                ),
                None => base.call_timeout_ms,
            },
            requests: match self.requests {
                Some(written) => keep(first, count_limit(Field::Requests, written), base.requests),
                None => base.requests,
            },
            input_tokens: match self.input_tokens {
                Some(written) => keep(
                    first,
                    count_limit(Field::InputTokens, written),
                    base.input_tokens,
                ),
                None => base.input_tokens,
            },
            output_tokens: match self.output_tokens {
                Some(written) => keep(
                    first,
                    count_limit(Field::OutputTokens, written),
                    base.output_tokens,
                ),
                None => base.output_tokens,
            },
            total_tokens: match self.total_tokens {
                Some(written) => keep(
                    first,
                    count_limit(Field::TotalTokens, written),
                    base.total_tokens,
                ),
                None => base.total_tokens,
            },
            cost_microdollars: match self.cost_microdollars {
                Some(written) => keep(
                    first,
                    count_limit(Field::CostMicrodollars, written),
                    base.cost_microdollars,
                ),
                None => base.cost_microdollars,
            },
            context_tokens: match self.context_tokens {
                Some(written) => keep(
                    first,
                    count_limit(Field::ContextTokens, written),
                    base.context_tokens,
                ),
                None => base.context_tokens,
            },
            compact_at: match self.compact_at {
                Some(percent) => keep(first, Percent::checked(percent), base.compact_at),
                None => base.compact_at,
            },
        };
        (resolved, first.take())
    }
}

fn count_limit(field: Field, written: Written) -> Result<Limit, InvalidLimit> {
    match written {
        Written::Count(count) => {
            Limit::at_most(count).ok_or_else(|| InvalidLimit::new(InvalidLimitKind::Zero, field, 0))
        }
        Written::Unlimited => Ok(Limit::Unlimited),
    }
}

/// A `result_bytes` value as a setter takes it (a count of at least 256,
/// or [`Limit::Unlimited`]: `None`), checked as
/// [`ToolLimits::result_bytes`] is: for bounds set outside `ToolLimits`
/// (an MCP server's).
///
/// Errors: [`InvalidLimitKind::TooFewResultBytes`] for 0 to 255.
pub fn checked_result_bytes(limit: impl IntoLimit) -> Result<Option<ResultBytes>, InvalidLimit> {
    result_bytes_limit(limit.into_written())
}

fn result_bytes_limit(written: Written) -> Result<Option<ResultBytes>, InvalidLimit> {
    match written {
        Written::Count(bytes) => ResultBytes::new(bytes).map(Some).ok_or_else(|| {
            InvalidLimit::new(
                InvalidLimitKind::TooFewResultBytes,
                Field::ResultBytes,
                bytes,
            )
        }),
        Written::Unlimited => Ok(None),
    }
}

/// Tool limits with every field resolved: what a bound mode holds
/// ([`BoundMode::tool_limits`](crate::bind::BoundMode::tool_limits)) and
/// what a turn enforces. `default()` gives the default limits: 25
/// iterations, 100 calls, 8 in parallel, results not cut, no budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ResolvedToolLimits {
    /// Model responses that ask for tools, per turn. Each batch of tool
    /// calls counts one iteration; a final answer counts none.
    pub iterations: Limit,
    /// Tool calls per turn, all batches together.
    pub calls: Limit,
    /// Tool calls running at once within one batch.
    pub parallel: NonZeroU32,
    /// Bytes of one tool result's text the model sees; longer text is cut
    /// to head + marker + tail, and images pass whole (see
    /// [`ToolLimits::result_bytes`]). `None`: results are not cut.
    pub result_bytes: Option<ResultBytes>,
    /// Milliseconds one tool call may run (see
    /// [`ToolLimits::call_timeout_ms`]).
    pub call_timeout_ms: Limit,
    /// Model requests per turn.
    pub requests: Limit,
    /// Input tokens per turn, as the providers reported them.
    pub input_tokens: Limit,
    /// Output tokens per turn, as reported.
    pub output_tokens: Limit,
    /// Input and output tokens per turn, as reported.
    pub total_tokens: Limit,
    /// What the turn's tokens cost, in millionths of a US dollar (see
    /// [`ToolLimits::cost_microdollars`]).
    pub cost_microdollars: Limit,
    /// Input tokens one request may hold, estimated (see
    /// [`ToolLimits::context_tokens`]).
    pub context_tokens: Limit,
    /// The share of `context_tokens` at which the turn compacts before its
    /// next request.
    pub compact_at: Percent,
}

/// A percent from 1 to 100: [`ResolvedToolLimits::compact_at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Percent(u8);

impl Percent {
    /// 80 percent: [`ResolvedToolLimits::compact_at`]'s default.
    pub const DEFAULT_COMPACT_AT: Percent = Percent(80);

    /// `percent` when it is from 1 to 100.
    pub const fn new(percent: u32) -> Option<Self> {
        if percent >= 1 && percent <= 100 {
            Some(Self(percent as u8))
        } else {
            None
        }
    }

    /// The percent, from 1 to 100.
    pub const fn get(self) -> u8 {
        self.0
    }

    /// `percent` of `count`, rounded down.
    pub const fn of(self, count: u64) -> u64 {
        // At most u64::MAX / 100 * 100 + a remainder: no overflow.
        count / 100 * self.0 as u64 + count % 100 * self.0 as u64 / 100
    }

    fn checked(percent: u32) -> Result<Self, InvalidLimit> {
        Self::new(percent).ok_or_else(|| {
            InvalidLimit::new(InvalidLimitKind::NotAPercent, Field::CompactAt, percent)
        })
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

impl ResolvedToolLimits {
    const DEFAULT: ResolvedToolLimits = ResolvedToolLimits {
        iterations: Limit::AtMost(NonZeroU32::new(25).unwrap()),
        calls: Limit::AtMost(NonZeroU32::new(100).unwrap()),
        parallel: NonZeroU32::new(8).unwrap(),
        result_bytes: None,
        call_timeout_ms: Limit::Unlimited,
        requests: Limit::Unlimited,
        input_tokens: Limit::Unlimited,
        output_tokens: Limit::Unlimited,
        total_tokens: Limit::Unlimited,
        cost_microdollars: Limit::Unlimited,
        context_tokens: Limit::Unlimited,
        compact_at: Percent::DEFAULT_COMPACT_AT,
    };
}

/// 25 iterations, 100 calls, 8 in parallel, results not cut, no budgets:
/// enough for a long agentic task, small enough to stop a model that
/// loops.
impl Default for ResolvedToolLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What rule a limit value broke. See [`InvalidLimit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidLimitKind {
    /// `0`: a limit is at least 1 (write `"unlimited"` for no limit).
    Zero,
    /// A negative number (config files only).
    Negative,
    /// A number above `u32::MAX` (config files only).
    TooLarge,
    /// A word other than `"unlimited"`, or a value of the wrong type (config
    /// files only).
    NotALimit,
    /// `parallel` written `"unlimited"`: it needs a count (config files
    /// only; the Rust setter takes a count).
    UnlimitedParallel,
    /// `result_bytes` below 256 (but not `"unlimited"`).
    TooFewResultBytes,
    /// `compact_at` outside 1 to 100, or written `"unlimited"`.
    NotAPercent,
}

/// A limit value that cannot be valid: which field, what was written, and
/// the rule it broke. [`Definition::validate`](crate::Definition::validate)
/// reports it as the source of a
/// [`DefinitionError`](crate::DefinitionError); reading a config file
/// reports its text as the deserializer's error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid `{field}` limit {value}: {}", self.kind.rule(self.field))]
#[non_exhaustive]
pub struct InvalidLimit {
    /// The rule broken.
    pub kind: InvalidLimitKind,
    /// The field: `iterations`, `calls`, `parallel`, `result_bytes`,
    /// `call_timeout_ms`, `requests`, `input_tokens`, `output_tokens`, `total_tokens`,
    /// `cost_microdollars`, `context_tokens` or `compact_at`.
    pub field: &'static str,
    /// What was written, as text (`0`, `-3`, `"lots"`).
    pub value: String,
}

impl InvalidLimit {
    fn new(kind: InvalidLimitKind, field: Field, value: impl fmt::Display) -> Self {
        Self {
            kind,
            field: field.name(),
            value: value.to_string(),
        }
    }
}

impl InvalidLimitKind {
    fn rule(self, field: &str) -> &'static str {
        match self {
            Self::Zero | Self::Negative if field == "parallel" => "at least 1 call runs at a time",
            Self::Zero | Self::Negative if field == "result_bytes" => {
                "write at least 256 bytes, or \"unlimited\" to never cut results"
            }
            Self::Zero | Self::Negative => {
                "a limit is at least 1; write \"unlimited\" for no limit"
            }
            Self::TooLarge => "a limit is at most 4294967295; write \"unlimited\" for no limit",
            Self::NotALimit if field == "parallel" => "write a whole number of at least 1",
            Self::NotALimit => "write a whole number of at least 1, or \"unlimited\"",
            Self::UnlimitedParallel => {
                "parallel cannot be unlimited: write how many calls may run at once"
            }
            Self::NotAPercent => "compact_at is a percent of context_tokens, from 1 to 100",
            Self::TooFewResultBytes => {
                "result_bytes is at least 256 (room for the truncation marker and the result), or \"unlimited\" to never cut results"
            }
        }
    }
}

const UNLIMITED: &str = "unlimited";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Iterations,
    Calls,
    Parallel,
    ResultBytes,
    CallTimeoutMs,
    Requests,
    InputTokens,
    OutputTokens,
    TotalTokens,
    CostMicrodollars,
    ContextTokens,
    CompactAt,
}

impl Field {
    /// In the order of the variants.
    const NAMES: &'static [&'static str] = &[
        "iterations",
        "calls",
        "parallel",
        "result_bytes",
        "call_timeout_ms",
        "requests",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "cost_microdollars",
        "context_tokens",
        "compact_at",
    ];
    const ALL: [Field; 12] = [
        Field::Iterations,
        Field::Calls,
        Field::Parallel,
        Field::ResultBytes,
        Field::CallTimeoutMs,
        Field::Requests,
        Field::InputTokens,
        Field::OutputTokens,
        Field::TotalTokens,
        Field::CostMicrodollars,
        Field::ContextTokens,
        Field::CompactAt,
    ];

    fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// The config form: a map with the set fields only.
impl Serialize for ToolLimits {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = [
            (Field::Iterations, self.iterations),
            (Field::Calls, self.calls),
            (Field::Parallel, self.parallel.map(Written::Count)),
            (Field::ResultBytes, self.result_bytes),
            (Field::CallTimeoutMs, self.call_timeout_ms),
            (Field::Requests, self.requests),
            (Field::InputTokens, self.input_tokens),
            (Field::OutputTokens, self.output_tokens),
            (Field::TotalTokens, self.total_tokens),
            (Field::CostMicrodollars, self.cost_microdollars),
            (Field::ContextTokens, self.context_tokens),
            (Field::CompactAt, self.compact_at.map(Written::Count)),
        ];
        let mut map = serializer.serialize_map(None)?;
        for (field, written) in fields {
            match written {
                Some(Written::Count(count)) => map.serialize_entry(field.name(), &count)?,
                Some(Written::Unlimited) => map.serialize_entry(field.name(), UNLIMITED)?,
                None => {}
            }
        }
        map.end()
    }
}

/// Reads the config form: a map (never an array) of optional fields, each a
/// valid count or `"unlimited"`. Every refused value is an error inside its
/// field, so `serde_path_to_error` reports the field's path.
impl<'de> Deserialize<'de> for ToolLimits {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(LimitsVisitor)
    }
}

struct LimitsVisitor;

impl<'de> Visitor<'de> for LimitsVisitor {
    type Value = ToolLimits;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of tool limits such as {\"iterations\": 25, \"calls\": \"unlimited\"}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolLimits, A::Error> {
        let mut limits = ToolLimits::new();
        while let Some(key) = map.next_key::<FieldKey>()? {
            let field = key.0;
            let duplicate = match field {
                Field::Iterations => limits.iterations.is_some(),
                Field::Calls => limits.calls.is_some(),
                Field::Parallel => limits.parallel.is_some(),
                Field::ResultBytes => limits.result_bytes.is_some(),
                Field::CallTimeoutMs => limits.call_timeout_ms.is_some(),
                Field::Requests => limits.requests.is_some(),
                Field::InputTokens => limits.input_tokens.is_some(),
                Field::OutputTokens => limits.output_tokens.is_some(),
                Field::TotalTokens => limits.total_tokens.is_some(),
                Field::CostMicrodollars => limits.cost_microdollars.is_some(),
                Field::ContextTokens => limits.context_tokens.is_some(),
                Field::CompactAt => limits.compact_at.is_some(),
            };
            let written = map.next_value_seed(FieldSeed { field, duplicate })?;
            match (field, written) {
                (Field::Iterations, written) => limits.iterations = Some(written),
                (Field::Calls, written) => limits.calls = Some(written),
                (Field::Parallel, Written::Count(count)) => limits.parallel = Some(count),
                // `FieldValue` refuses "unlimited" for parallel.
                (Field::Parallel, Written::Unlimited) => {}
                (Field::ResultBytes, written) => limits.result_bytes = Some(written),
                (Field::CallTimeoutMs, written) => limits.call_timeout_ms = Some(written),
                (Field::Requests, written) => limits.requests = Some(written),
                (Field::InputTokens, written) => limits.input_tokens = Some(written),
                (Field::OutputTokens, written) => limits.output_tokens = Some(written),
                (Field::TotalTokens, written) => limits.total_tokens = Some(written),
                (Field::CostMicrodollars, written) => limits.cost_microdollars = Some(written),
                (Field::ContextTokens, written) => limits.context_tokens = Some(written),
                (Field::CompactAt, Written::Count(percent)) => limits.compact_at = Some(percent),
                // `FieldValue` refuses "unlimited" for compact_at.
                (Field::CompactAt, Written::Unlimited) => {}
            }
        }
        Ok(limits)
    }
}

struct FieldKey(Field);

impl<'de> Deserialize<'de> for FieldKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = FieldKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool limit name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<FieldKey, E> {
                match Field::ALL.into_iter().find(|field| field.name() == key) {
                    Some(field) => Ok(FieldKey(field)),
                    None => Err(E::unknown_field(key, Field::NAMES)),
                }
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// One field's value, checked where it is read so the error carries its
/// path (a second value of a field too).
struct FieldSeed {
    field: Field,
    duplicate: bool,
}

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Written;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Written, D::Error> {
        let written = deserializer.deserialize_any(FieldValue(self.field))?;
        if self.duplicate {
            return Err(de::Error::duplicate_field(self.field.name()));
        }
        Ok(written)
    }
}

struct FieldValue(Field);

impl FieldValue {
    fn refuse<E: de::Error>(&self, kind: InvalidLimitKind, value: impl fmt::Display) -> E {
        E::custom(InvalidLimit::new(kind, self.0, value))
    }
}

impl Visitor<'_> for FieldValue {
    type Value = Written;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Field::Parallel => f.write_str("a whole number of at least 1"),
            Field::CompactAt => f.write_str("a percent from 1 to 100"),
            _ => f.write_str("a whole number of at least 1, or \"unlimited\""),
        }
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Written, E> {
        let count =
            u32::try_from(value).map_err(|_| self.refuse(InvalidLimitKind::TooLarge, value))?;
        let written = Written::Count(count);
        // Refused here rather than at validate, so the path points at it.
        let checked = match self.0 {
            Field::Parallel => count_limit(self.0, written).map(|_| ()),
            Field::ResultBytes => result_bytes_limit(written).map(|_| ()),
            Field::CompactAt => Percent::checked(count).map(|_| ()),
            _ => count_limit(self.0, written).map(|_| ()),
        };
        checked.map_err(E::custom)?;
        Ok(written)
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Written, E> {
        match u64::try_from(value) {
            Ok(value) => self.visit_u64(value),
            Err(_) => Err(self.refuse(InvalidLimitKind::Negative, value)),
        }
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Written, E> {
        // `{:?}` keeps the fraction (`25.0`), so the message does not read
        // as if 25 itself were refused.
        Err(self.refuse(InvalidLimitKind::NotALimit, format!("{value:?}")))
    }

    fn visit_str<E: de::Error>(self, word: &str) -> Result<Written, E> {
        match word {
            UNLIMITED if self.0 == Field::Parallel => {
                Err(self.refuse(InvalidLimitKind::UnlimitedParallel, format!("{word:?}")))
            }
            UNLIMITED if self.0 == Field::CompactAt => {
                Err(self.refuse(InvalidLimitKind::NotAPercent, format!("{word:?}")))
            }
            UNLIMITED => Ok(Written::Unlimited),
            _ => Err(self.refuse(InvalidLimitKind::NotALimit, format!("{word:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(json: &str) -> Result<ToolLimits, (String, String)> {
        serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(json))
            .map_err(|error| (error.path().to_string(), error.inner().to_string()))
    }

    fn count(n: u32) -> Limit {
        Limit::at_most(n).unwrap()
    }

    #[test]
    fn unset_limits_resolve_to_25_100_8_uncut() {
        let resolved = ToolLimits::default().resolve().unwrap();
        assert_eq!(resolved, ResolvedToolLimits::default());
        assert_eq!(
            (resolved.iterations, resolved.calls, resolved.parallel.get()),
            (count(25), count(100), 8)
        );
        assert_eq!(resolved.result_bytes, None);
    }

    #[test]
    fn mode_overrides_only_the_fields_it_sets() {
        let base = ToolLimits::new()
            .iterations(3)
            .parallel(2)
            .resolve()
            .unwrap();
        let mode = ToolLimits::new().calls(7).inherit(base).unwrap();
        assert_eq!(
            (mode.iterations, mode.calls, mode.parallel.get()),
            (count(3), count(7), 2)
        );
    }

    #[test]
    fn a_mode_can_turn_off_the_base_result_limit() {
        let base = ToolLimits::new().result_bytes(1024).resolve().unwrap();
        assert_eq!(base.result_bytes.map(ResultBytes::get), Some(1024));
        let mode = ToolLimits::new()
            .result_bytes(Limit::Unlimited)
            .inherit(base)
            .unwrap();
        assert_eq!(mode.result_bytes, None);
    }

    #[test]
    fn zero_and_small_result_bytes_are_refused_with_their_field() {
        for (limits, kind, field, value) in [
            (
                ToolLimits::new().iterations(0),
                InvalidLimitKind::Zero,
                "iterations",
                "0",
            ),
            (
                ToolLimits::new().calls(0),
                InvalidLimitKind::Zero,
                "calls",
                "0",
            ),
            (
                ToolLimits::new().parallel(0),
                InvalidLimitKind::Zero,
                "parallel",
                "0",
            ),
            (
                ToolLimits::new().result_bytes(255),
                InvalidLimitKind::TooFewResultBytes,
                "result_bytes",
                "255",
            ),
            (
                ToolLimits::new().result_bytes(0),
                InvalidLimitKind::TooFewResultBytes,
                "result_bytes",
                "0",
            ),
        ] {
            let error = limits.check().unwrap_err();
            assert_eq!(
                (error.kind, error.field, error.value.as_str()),
                (kind, field, value)
            );
            assert_eq!(limits.resolve().unwrap_err(), error);
        }
        assert!(ToolLimits::new().result_bytes(256).check().is_ok());
    }

    #[test]
    fn the_first_invalid_field_is_reported() {
        let error = ToolLimits::new()
            .parallel(0)
            .iterations(0)
            .check()
            .unwrap_err();
        assert_eq!(error.field, "iterations");
    }

    #[test]
    fn config_form_reads_counts_and_unlimited() {
        let limits = read(
            r#"{"iterations": 25, "calls": "unlimited", "parallel": 4, "result_bytes": 4096}"#,
        )
        .unwrap();
        assert_eq!(
            limits,
            ToolLimits::new()
                .iterations(25)
                .calls(Limit::Unlimited)
                .parallel(4)
                .result_bytes(4096)
        );
        assert_eq!(read("{}").unwrap(), ToolLimits::new());
        assert_eq!(
            read(r#"{"result_bytes": "unlimited"}"#).unwrap(),
            ToolLimits::new().result_bytes(Limit::Unlimited)
        );
    }

    #[test]
    fn config_form_refuses_bad_values_with_the_field_path() {
        for (json, path, message) in [
            (r#"{"calls": -5}"#, "calls", "invalid `calls` limit -5"),
            (
                r#"{"iterations": 0}"#,
                "iterations",
                "invalid `iterations` limit 0",
            ),
            (
                r#"{"parallel": 0}"#,
                "parallel",
                "invalid `parallel` limit 0",
            ),
            (
                r#"{"parallel": 4294967296}"#,
                "parallel",
                "invalid `parallel` limit 4294967296",
            ),
            (
                r#"{"iterations": "lots"}"#,
                "iterations",
                r#"invalid `iterations` limit "lots""#,
            ),
            (
                r#"{"parallel": "unlimited"}"#,
                "parallel",
                r#"invalid `parallel` limit "unlimited": parallel cannot be unlimited"#,
            ),
            (
                r#"{"result_bytes": 255}"#,
                "result_bytes",
                "invalid `result_bytes` limit 255",
            ),
            (
                r#"{"result_bytes": 1}"#,
                "result_bytes",
                "invalid `result_bytes` limit 1",
            ),
            (r#"{"calls": 2.5}"#, "calls", "invalid `calls` limit 2.5"),
            (r#"{"calls": null}"#, "calls", "invalid type: null"),
            (r#"{"calls": [3]}"#, "calls", "invalid type: sequence"),
            (r#"{"turns": 3}"#, "turns", "unknown field `turns`"),
            (
                r#"{"calls": 3, "calls": 4}"#,
                "calls",
                "duplicate field `calls`",
            ),
            (
                "[3]",
                ".",
                "invalid type: sequence, expected a map of tool limits",
            ),
            (
                "3",
                ".",
                "invalid type: integer `3`, expected a map of tool limits",
            ),
        ] {
            let (got_path, got_message) = read(json).unwrap_err();
            assert_eq!(got_path, path, "{json}");
            assert!(got_message.starts_with(message), "{json}: {got_message}");
        }
    }

    #[test]
    fn nested_config_reports_the_full_path() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Config {
            tool_limits: ToolLimits,
        }
        let json = r#"{"tool_limits": {"iterations": 5, "parallel": "unlimited"}}"#;
        let error = serde_path_to_error::deserialize::<_, Config>(
            &mut serde_json::Deserializer::from_str(json),
        )
        .unwrap_err();
        assert_eq!(error.path().to_string(), "tool_limits.parallel");
    }

    #[test]
    fn limit_counts_and_displays() {
        assert_eq!(Limit::at_most(0), None);
        assert!(count(3).allows(3) && !count(3).allows(4));
        assert!(Limit::Unlimited.allows(u32::MAX));
        assert_eq!(
            (count(3).to_string(), Limit::Unlimited.to_string()),
            ("3".into(), "unlimited".into())
        );
        assert_eq!(ResultBytes::new(255), None);
        assert_eq!(ResultBytes::new(256), Some(ResultBytes::MIN));
    }

    fn written() -> impl Strategy<Value = Option<Written>> {
        prop_oneof![
            Just(None),
            Just(Some(Written::Unlimited)),
            (0..600_u32).prop_map(|n| Some(Written::Count(n))),
            any::<u32>().prop_map(|n| Some(Written::Count(n))),
        ]
    }

    fn limits() -> impl Strategy<Value = ToolLimits> {
        (
            (
                written(),
                written(),
                prop::option::of(any::<u32>()),
                written(),
            ),
            (written(), written(), written(), written()),
            (
                written(),
                written(),
                written(),
                prop::option::of(0u32..=120),
            ),
        )
            .prop_map(
                |(
                    (iterations, calls, parallel, result_bytes),
                    (requests, input_tokens, output_tokens, total_tokens),
                    (call_timeout_ms, cost_microdollars, context_tokens, compact_at),
                )| ToolLimits {
                    iterations,
                    calls,
                    parallel,
                    result_bytes,
                    call_timeout_ms,
                    requests,
                    input_tokens,
                    output_tokens,
                    total_tokens,
                    cost_microdollars,
                    context_tokens,
                    compact_at,
                },
            )
    }

    fn valid(written: Option<Written>, min: u32) -> bool {
        !matches!(written, Some(Written::Count(n)) if n < min)
    }

    proptest! {
        // A set valid field always wins, an unset one inherits, and an
        // invalid one is refused with its own name.
        #[test]
        fn resolution_keeps_set_fields_and_fills_the_rest(base in limits(), mode in limits()) {
            let Ok(resolved_base) = base.resolve() else { return Ok(()) };
            let all_valid = valid(mode.iterations, 1)
                && valid(mode.calls, 1)
                && valid(mode.parallel.map(Written::Count), 1)
                && valid(mode.result_bytes, 256)
                && [mode.call_timeout_ms, mode.requests, mode.input_tokens, mode.output_tokens, mode.total_tokens, mode.cost_microdollars, mode.context_tokens]
                    .into_iter()
                    .all(|budget| valid(budget, 1))
                && mode.compact_at.is_none_or(|percent| (1..=100).contains(&percent));
            match mode.inherit(resolved_base) {
                Ok(resolved) => {
                    prop_assert!(all_valid);
                    let expect_count = |own: Option<Written>, inherited: Limit| match own {
                        None => inherited,
                        Some(Written::Unlimited) => Limit::Unlimited,
                        Some(Written::Count(n)) => count(n),
                    };
                    prop_assert_eq!(resolved.iterations, expect_count(mode.iterations, resolved_base.iterations));
                    prop_assert_eq!(resolved.calls, expect_count(mode.calls, resolved_base.calls));
                    prop_assert_eq!(resolved.parallel.get(), mode.parallel.unwrap_or(resolved_base.parallel.get()));
                    let bytes = match mode.result_bytes {
                        None => resolved_base.result_bytes,
                        Some(Written::Unlimited) => None,
                        Some(Written::Count(n)) => ResultBytes::new(n),
                    };
                    prop_assert_eq!(resolved.result_bytes, bytes);
                    prop_assert_eq!(resolved.requests, expect_count(mode.requests, resolved_base.requests));
                    prop_assert_eq!(resolved.input_tokens, expect_count(mode.input_tokens, resolved_base.input_tokens));
                    prop_assert_eq!(resolved.output_tokens, expect_count(mode.output_tokens, resolved_base.output_tokens));
                    prop_assert_eq!(resolved.total_tokens, expect_count(mode.total_tokens, resolved_base.total_tokens));
                    prop_assert_eq!(resolved.call_timeout_ms, expect_count(mode.call_timeout_ms, resolved_base.call_timeout_ms));
                    prop_assert_eq!(resolved.cost_microdollars, expect_count(mode.cost_microdollars, resolved_base.cost_microdollars));
                    prop_assert_eq!(resolved.context_tokens, expect_count(mode.context_tokens, resolved_base.context_tokens));
                    prop_assert_eq!(
                        resolved.compact_at,
                        mode.compact_at.and_then(Percent::new).unwrap_or(resolved_base.compact_at)
                    );
                }
                Err(error) => {
                    prop_assert!(!all_valid);
                    prop_assert!(Field::NAMES.contains(&error.field));
                }
            }
        }

        // Whatever the config form writes reads back the same, and a
        // serialized valid override stays valid.
        #[test]
        fn config_form_round_trips(limits in limits()) {
            let json = serde_json::to_string(&limits).unwrap();
            match read(&json) {
                Ok(read_back) => {
                    prop_assert_eq!(read_back, limits);
                    prop_assert!(limits.check().is_ok());
                }
                Err((path, _)) => {
                    let error = limits.check().unwrap_err();
                    prop_assert_eq!(path, error.field);
                }
            }
        }
    }
}
