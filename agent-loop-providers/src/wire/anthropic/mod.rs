//! Anthropic Messages: `tools`, request `system` and `messages`, and the
//! `message` response.
//!
//! Shapes follow the Messages API reference
//! (<https://docs.anthropic.com/en/api/messages>) and its tool-use and
//! extended-thinking guides:
//!
//! - a custom tool is `{"name", "description"?, "input_schema", "strict"?}`
//!   plus fields this crate keeps as [`Extras`] (`cache_control`,
//!   `defer_loading`, `allowed_callers`, …); a tool with another `type`
//!   (`memory_20250818`, `web_search_20250305`, `bash_20250124`) is defined
//!   by Anthropic and kept verbatim as a [`ProviderTool`];
//! - the system prompt is the request's top-level `system`, a string or text
//!   blocks, never a message;
//! - the model calls tools with `tool_use` blocks
//!   `{"type": "tool_use", "id", "name", "input": {...}}` whose `input` is a
//!   JSON **object**, not text;
//! - results go back in the next **user** message as `tool_result` blocks
//!   `{"type": "tool_result", "tool_use_id", "content"?, "is_error"?}`,
//!   before any other block of that message;
//! - extended thinking comes as `thinking` blocks (with a `signature` the
//!   API checks when they are sent back) and `redacted_thinking` blocks,
//!   which must come first in the assistant message.
//!
//! | conversation | Anthropic |
//! | --- | --- |
//! | [`Message::System`] | the top-level `system` ([`ExportedMessages::system`]) |
//! | [`Message::User`] | a `user` message of `text`, `image` and provider blocks |
//! | [`Message::Assistant`] | an `assistant` message of `thinking`, `text`, `tool_use` and provider blocks, in order |
//! | [`Message::Tool`] | a `tool_result` block of the next `user` message |
//! | [`ContentPart::Reasoning`] | `thinking` / `redacted_thinking` |
//! | [`ContentPart::Provider`] | any other block (`server_tool_use`, `web_search_tool_result`, `document`, …), verbatim |
//!
//! ```
//! use agent_loop_core::conversation::{FinishReason, Message};
//! use agent_loop_providers::wire::anthropic;
//! use serde_json::json;
//!
//! let response = anthropic::parse_response(&json!({
//!     "type": "message",
//!     "role": "assistant",
//!     "content": [
//!         { "type": "thinking", "thinking": "Weather needs a lookup.", "signature": "c2ln" },
//!         { "type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": { "city": "Paris" } }
//!     ],
//!     "stop_reason": "tool_use",
//!     "usage": { "input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 12 }
//! }))?;
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.input_tokens, 120);
//!
//! let conversation = vec![
//!     Message::system("Be brief."),
//!     Message::user("Weather in Paris?"),
//!     Message::Assistant(response.message),
//! ];
//! let exported = anthropic::export_messages(&conversation);
//! assert_eq!(
//!     serde_json::to_value(&exported)?,
//!     json!({
//!         "system": "Be brief.",
//!         "messages": [
//!             { "role": "user", "content": [{ "type": "text", "text": "Weather in Paris?" }] },
//!             { "role": "assistant", "content": [
//!                 { "type": "thinking", "thinking": "Weather needs a lookup.", "signature": "c2ln" },
//!                 { "type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": { "city": "Paris" } }
//!             ] }
//!         ]
//!     })
//! );
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Decisions
//!
//! - **`input` to arguments**: the object is written as compact JSON text
//!   (serde_json's key order) into [`ToolCall::arguments`].
//! - **Arguments to `input`**: blank arguments (empty or whitespace) are
//!   exported as `{}`, as they ran. Arguments that are not a JSON object
//!   (invalid JSON, an array, `null`: possible when the conversation came
//!   from another provider or the output was cut off) cannot be an `input`,
//!   yet the runner has already answered such a call with an error result
//!   and the conversation must go on, so export does not fail: they become
//!   `{"_raw_arguments": "<the text>"}` ([`RAW_ARGUMENTS_KEY`](super::RAW_ARGUMENTS_KEY)), which shows
//!   the model what it sent next to the error it got, and
//!   [`parse_messages`] turns exactly that one-key object back into the raw
//!   text ([`parse_response`] does not: what the model sends is kept as
//!   sent). A real input of exactly that shape (one `_raw_arguments` key
//!   with a string: a tool may have such a parameter) is wrapped as well,
//!   `{"_raw_arguments": "{\"_raw_arguments\":\"y\"}"}`, so it comes back as
//!   the object it was, not as the string inside it.
//! - **Ids and names**: exported `tool_use` ids and `tool_result`
//!   `tool_use_id`s that break Anthropic's `^[a-zA-Z0-9_-]+$` (Kimi's
//!   `functions.write_todos:0`) are mapped to valid ones, the same for a
//!   call and its result; a recorded tool name that breaks
//!   `^[a-zA-Z0-9_-]{1,64}$` (a hallucinated `multi_tool_use.parallel`) is
//!   exported in a valid form. The model's text is never changed.
//! - **Blank text** (empty or whitespace-only) is never exported: the API
//!   refuses empty text blocks. When parsing a user or assistant message (or
//!   a `tool_result`), a whitespace-only text block is not dropped but
//!   joined to its neighbours, so that a cited answer the API splits into
//!   `"A"`, `"\n\n"`, `"B"` reads `"A\n\nB"`, not `"AB"`: it is appended
//!   to the nearest text part before it in the same message (`"A\n\n"`,
//!   `"B"`), else prepended to the nearest one after it, else dropped (its
//!   own extras are dropped). No blank part remains, so parse → export →
//!   parse stays the identity. A message left with nothing (an assistant
//!   message of blank text only, say) is dropped.
//! - **Thinking first**: the API wants an assistant message's thinking
//!   blocks before its other blocks. When a message has thinking blocks but
//!   does not start with one (it was built by hand, or came through another
//!   format), they are moved to the front in their order; a message that
//!   starts with one keeps its order (interleaved thinking). A `thinking`
//!   part without a signature is not exported (the API would refuse it).
//! - **Error results are text**: an error `tool_result` (`is_error:
//!   true`) is exported with its text parts only; its images and provider
//!   blocks (a failed MCP tool's screenshot, say) are **lost**, since the
//!   API answers 400 "all content must be type 'text' if 'is_error' is
//!   true". One left with no content once blank text is dropped is
//!   exported with the text `The tool call failed.`: the API answers 400
//!   "content cannot be empty if `is_error` is true". A result that did
//!   not fail keeps its images and may go out without content.
//! - **Tool results** of consecutive [`Message::Tool`]s go into one `user`
//!   message, and a [`Message::User`] right after them joins that message
//!   after the `tool_result` blocks. A tool result after user text starts a
//!   new `user` message, since `tool_result` blocks must come first.
//!
//! - **Error paths** name the culprit from the value each parser reads:
//!   `messages[3].content[1]` for [`parse_messages`], `tools[2]` for
//!   [`parse_tools`], `response.content[0]` for [`parse_response`]; for
//!   [`parse_request`] they are rooted at `request`
//!   (`request.messages[3].content[1]`, `request.system[0]`,
//!   `request.tools[2]`), as the OpenAI module's are.
//!
//! # What a round trip loses
//!
//! [`export_messages`] then [`parse_messages`] gives back the conversation
//! except: arguments JSON is re-serialised compactly (whitespace and key
//! order may change) and blank arguments come back as `{}`; blank text,
//! unsigned thinking, images in assistant messages and other formats'
//! reasoning, provider parts and extras are not exported; a system
//! message's [`SystemRole`] is not kept (Anthropic has one kind of system
//! prompt); an error result loses its images and provider blocks, and one
//! without content comes back with the text `The tool call failed.`; ids and names that break Anthropic's rules come
//! back mapped. Parsing what this module exports
//! and exporting it again gives the same JSON.
//!
//! [`ContentPart::Provider`]: agent_loop_core::conversation::ContentPart::Provider
//! [`ContentPart::Reasoning`]: agent_loop_core::conversation::ContentPart::Reasoning
//! [`Extras`]: agent_loop_core::conversation::Extras
//! [`Message::Assistant`]: agent_loop_core::conversation::Message::Assistant
//! [`Message::System`]: agent_loop_core::conversation::Message::System
//! [`Message::Tool`]: agent_loop_core::conversation::Message::Tool
//! [`Message::User`]: agent_loop_core::conversation::Message::User
//! [`ProviderTool`]: crate::wire::ProviderTool
//! [`SystemRole`]: agent_loop_core::conversation::SystemRole
//! [`ToolCall::arguments`]: agent_loop_core::conversation::ToolCall::arguments

mod messages;
mod request;
mod response;
#[cfg(test)]
mod tests;
mod tools;
mod types;

#[cfg(feature = "anthropic")]
pub(crate) use messages::export_outgoing;
pub use messages::{ExportedMessages, export_messages, export_messages_for, parse_messages};
pub use request::parse_request;
pub use response::parse_response;
#[cfg(feature = "anthropic")]
pub(crate) use response::{RawResponse, read_response};
#[cfg(feature = "anthropic")]
pub(crate) use tools::ToolsView;
pub use tools::{export_declarations, export_tools, parse_tools};
#[cfg(feature = "anthropic")]
pub(crate) use types::{MessageParam, Role};

use agent_loop_core::conversation::WireFormat;

const FORMAT: WireFormat = WireFormat::AnthropicMessages;
