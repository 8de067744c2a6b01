//! Long sessions: how many tokens a request holds ([`TokenEstimator`]),
//! and compaction that makes a conversation shorter without breaking it
//! ([`Compactor`], [`compact`]).
//!
//! # Counting
//!
//! A [`TokenEstimator`] counts a request's conversation, instructions and
//! tools before it is sent, for the format it goes in (content only another
//! format reads is not counted), with a [`Tokenizer`]: bytes / 4
//! ([`BytesPerToken`]) unless the feature `tiktoken` gives OpenAI's
//! formats `o200k_base` (`O200kBase`), or
//! yours. In a turn the estimate is corrected by what the provider
//! reported: the last response's [`Usage::input_tokens`] is the true size
//! of that request, so the next request is estimated as that plus the
//! estimate of what changed since (the turn's model request, its batch and
//! their results). The error of the estimator then only touches the new
//! messages.
//!
//! # Compacting in a turn
//!
//! A mode's [`ToolLimits::context_tokens`](crate::ToolLimits::context_tokens)
//! is the most input tokens one request may hold, and
//! [`compact_at`](crate::ToolLimits::compact_at) (80 percent unless set)
//! the share of it at which the turn compacts before its next request. The
//! compactor is [`TurnOptions`](crate::turn::TurnOptions)'s `compactor`,
//! [`ElideToolResults`] unless set; it is asked to bring the request to
//! half of `context_tokens` (or to `compact_at`, when that is lower), so
//! that a compaction buys room for several iterations. A request still
//! over `context_tokens` afterwards is not sent: the turn fails with
//! [`Budget::ContextTokens`](crate::turn::Budget::ContextTokens) (or
//! pauses, with [`BudgetPolicy::Pause`](crate::turn::BudgetPolicy::Pause)).
//!
//! When the provider itself says the window is full (the finish reason
//! [`ContextWindowExceeded`](crate::conversation::FinishReason::ContextWindowExceeded),
//! or a model error that
//! [`exceeds_context_window`](crate::turn::ModelError::exceeds_context_window))
//! and the turn has a compactor or a context budget, it compacts once, to
//! half of its estimate, and sends the request again; a second refusal
//! fails the turn with
//! [`TurnError::ContextWindowExceeded`](crate::turn::TurnError::ContextWindowExceeded).
//!
//! Each compaction is a [`TurnEvent::Compacted`](crate::turn::TurnEvent::Compacted)
//! and a [`Compaction`] in [`TurnOutcome::compactions`](crate::turn::TurnOutcome::compactions),
//! with the replaced messages; the outcome's indices
//! ([`appended`](crate::turn::TurnOutcome::appended)) refer to the
//! compacted conversation. A compaction refused under `context_tokens`
//! is a [`TurnEvent::CompactionRefused`](crate::turn::TurnEvent::CompactionRefused)
//! and the turn goes on with its history as it was; one refused over it,
//! or when the window is full, fails the turn with
//! [`TurnError::Compaction`](crate::turn::TurnError::Compaction).
//!
//! # What a compaction may not break
//!
//! Whatever a compactor returns is checked before it replaces anything
//! ([`compact`]): the rules of every export (each call answered once,
//! right after its message; signed thinking kept with its calls; no empty
//! message; system messages first and unchanged) and the messages that
//! must stay (a paused turn's pending calls, what the model has not seen).
//!
//! [`Usage::input_tokens`]: crate::conversation::Usage::input_tokens
//!
//! # Decisions
//!
#![doc = include_str!("../../docs/compaction.md")]

mod check;
mod compaction;
mod elide;
mod estimate;

pub use check::{CompactionError, CompactionErrorKind};
pub(crate) use compaction::compact_within;
pub use compaction::{Compaction, CompactionRequest, Compactor, Replacement, compact, editable};
pub use elide::{ELIDED_MARKER, ElideToolResults};
#[cfg(feature = "tiktoken")]
pub use estimate::O200kBase;
pub use estimate::{BytesPerToken, IMAGE_TOKENS, MESSAGE_TOKENS, TokenEstimator, Tokenizer};
