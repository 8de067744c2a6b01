//! The provider-neutral conversation: what the user, the model and the tools
//! said, without losing anything a provider needs back on the next request.
//!
//! A [`Conversation`] is a list of [`Message`]s, oldest first:
//!
//! | message | OpenAI Chat Completions | Anthropic Messages |
//! | --- | --- | --- |
//! | [`Message::System`] | a `system` or `developer` message | the top-level `system` field |
//! | [`Message::User`] | a `user` message | a `user` message |
//! | [`Message::Assistant`] | an `assistant` message, its `tool_calls` and `reasoning_content` | an `assistant` message of blocks |
//! | [`Message::Tool`] | a `tool` message | a `tool_result` block of the next `user` message |
//!
//! Messages are made of [`ContentPart`]s: text, images, reasoning (with
//! the signature a provider needs back), tool calls, and opaque provider
//! blocks kept verbatim (Anthropic's `server_tool_use`, for example).
//! Fields a provider sends that this crate does not model (DeepSeek's
//! `reasoning_content` is modelled; Gemini's `extra_content`, Anthropic's
//! `caller` and `cache_control` are not) are kept in [`Extras`]. Each of
//! these provider-specific pieces (reasoning, provider parts, extras)
//! records its [`Origin`]: the [`WireFormat`] it came from, and the
//! provider and model when an HTTP model recorded them; it is written back
//! only where its origin allows (its format; its provider and model when
//! known, see [`Origin`]).
//!
//! Every tool call carries a [`ToolCall::id`] (OpenAI's `tool_call_id`,
//! Anthropic's `tool_use.id`) and must be answered by exactly one
//! [`ToolResult`] with that id: every provider refuses the next request
//! otherwise. The turn runner keeps that invariant for every conversation
//! it returns, and repairs a conversation handed to it with an unanswered
//! call.
//!
//! A [`ModelResponse`] is what one model request returns: the assistant
//! message, its [`FinishReason`] and its token [`Usage`].
//!
//! Serialising a [`Message`] with serde stores it without loss; the
//! `wire` module converts it to and from each provider's
//! format.

mod cost;
mod extras;
pub(crate) mod ids;
mod message;
mod origin;
mod part;
mod repair;
mod response;

pub use cost::{Cost, Prices};
pub use extras::{Extras, WireFormat};
pub use message::{AssistantMessage, Message, SystemMessage, SystemRole, ToolResult, UserMessage};
pub use origin::Origin;
pub use part::{
    ContentPart, ImagePart, ImageSource, ProviderPart, ReasoningPart, TextPart, ToolCall,
};
pub use repair::{ConversationError, ConversationErrorKind, repair};
pub use response::{FinishReason, ModelResponse, Usage};

/// A conversation: messages in order, oldest first.
pub type Conversation = Vec<Message>;

/// The text parts of `parts`, concatenated with no separator: providers split
/// one text into several parts (Anthropic does so around citations), so a
/// separator would change it.
pub(crate) fn text_of(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}
