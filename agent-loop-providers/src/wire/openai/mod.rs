//! OpenAI Chat Completions: the request's `tools` and `messages`, and the
//! `chat.completion` response body.
//!
//! Shapes follow the Chat Completions API reference
//! (<https://platform.openai.com/docs/api-reference/chat>), as every server
//! that speaks the format sends it: OpenAI, DeepSeek, Gemini's
//! OpenAI-compatible endpoint, OpenRouter, vLLM, llama.cpp, Ollama.
//!
//! | conversation | Chat Completions |
//! | --- | --- |
//! | [`Message::System`] | `{"role": "system" \| "developer", "content"}` |
//! | [`Message::User`] | `{"role": "user", "content": string \| [text, image_url, ...]}` |
//! | [`Message::Assistant`] | `{"role": "assistant", "content", "reasoning_content"?, "tool_calls"?}` |
//! | [`Message::Tool`] | `{"role": "tool", "tool_call_id", "content"}` |
//! | [`ContentPart::Reasoning`] | DeepSeek's and vLLM's `reasoning_content` |
//! | [`ContentPart::ToolCall`] | `{"id", "type": "function", "function": {"name", "arguments"}}` |
//! | [`ContentPart::Provider`] | a user part such as `input_audio` or `file`; an assistant content part of another `type` such as Mistral's `thinking`; a tool call of another `type` such as `custom` |
//! | [`Extras`] | any other field of a message, a tool call, a text part, an `image_url` or a tool's `function` |
//!
//! A tool call's `arguments` is the JSON **text** the model wrote; it is
//! kept verbatim in [`ToolCall::arguments`], valid JSON or not (the turn
//! runner answers a bad call with an error result; this module never
//! rejects one).
//!
//! Arguments that are not a JSON object (cut off by the output limit like
//! `{"city": "Par`, or `null`, `[1]`, `42`) are **exported** as the JSON
//! text of `{"_raw_arguments": "<the text>"}`
//! ([`RAW_ARGUMENTS_KEY`], the wrapper
//! the Anthropic export uses too): vLLM and llama.cpp parse every earlier
//! call's arguments and answer every later request with HTTP 400 when one
//! is not an object (vllm#43995, vllm#48922). [`parse_messages`] turns
//! exactly that one-key object back into the raw text, so parse → export →
//! parse stays the identity; [`parse_response`] does not (what the model
//! sends is kept as sent). An object that has exactly the wrapper's shape
//! (one `_raw_arguments` key with a string) is wrapped too, so it cannot be
//! taken for a wrapper: it comes back as the object it was.
//!
//! # Parsing is tolerant
//!
//! [`parse_messages`], [`parse_request`], [`parse_response`] and
//! [`parse_tools`] read what real servers send: `arguments` given as a JSON
//! object (llama.cpp, mlx-lm) or missing (OpenRouter), a tool call without
//! `id` or `type`, `content` as a string or an array of parts, empty or
//! repeated call ids (fresh ids are minted, shared by a call and its
//! result). Fields this crate does not model are kept as [`Extras`] and
//! written back. A payload that does not have the documented shape fails
//! with a [`WireError`] whose path names the culprit, e.g.
//! `response.choices[0].message.tool_calls[1]`.
//!
//! # Exporting is strict
//!
//! [`export_messages`] and [`export_tools`] build what OpenAI accepts: call
//! ids of at most 40 characters and tool names matching
//! `^[a-zA-Z0-9_-]{1,64}$` (ids and names that break these rules are mapped
//! to valid ones, the same for a call and its result), blank arguments
//! written as `{}`, arguments that are not a JSON object wrapped (see
//! above), no blank text, no empty message.
//!
//! # What a round trip loses
//!
//! Parsing then exporting keeps the conversation, and exporting then
//! parsing gives it back, except for what the format cannot say:
//!
//! - [`ToolResult::is_error`]: OpenAI has no field for it. It is not
//!   exported (the runner writes a failure as an error sentence the model
//!   reads); parsing sets it to `false`.
//! - Images in a tool result: a `tool` message holds text only, so they
//!   move to one `user` message after the run of tool messages, each
//!   result's images after the text `Images returned by tool call <id>:`.
//!   Parsed back, that is a [`Message::User`].
//! - Text parts of system, assistant and tool messages are concatenated
//!   into one string, and their own extras are dropped (user text parts
//!   keep theirs). An assistant message holding a content part of another
//!   `type` (kept as a [`ContentPart::Provider`] in its place) is written
//!   with a `content` array instead: each run of text between such parts
//!   as one `{"type": "text", "text"}` part, the provider parts verbatim.
//! - Provider parts of this format go back where they came from by their
//!   shape (the part alone tells nothing else): one whose `type` is
//!   `function` or `custom`, or that has an `id` and an object member named
//!   by its `type`, is a tool call and goes into `tool_calls`; any other is
//!   an assistant content part and goes into `content`. A tool call of an
//!   unknown `type` without `id`, or a content part shaped like a call,
//!   comes back on the other side.
//! - Blank text is never exported, and a message left with nothing is not
//!   written: a blank system message, a user message without parts, an
//!   assistant message without text and tool calls. When parsing, a
//!   whitespace-only user text part is joined to the nearest text part
//!   before it in the message, else prepended to the nearest one after it,
//!   else dropped (its extras with it), so `"A"`, `"\n\n"`, `"B"` reads
//!   `"A\n\n"`, `"B"`, not `"AB"`; the text parts of an assistant message
//!   are joined whole, whitespace included, and a whitespace-only run
//!   between two provider parts is joined the same way. No blank part
//!   remains, so parse → export → parse stays the identity.
//! - Reasoning, provider parts and extras of another [`WireFormat`] are
//!   left out; only the format they came from can read them.
//! - Invalid call ids and names are replaced (see above); blank arguments
//!   become `{}`; arguments that are a JSON object go out as written, others
//!   wrapped and read back unwrapped (a model that itself sent the exact
//!   one-key wrapper object reads back as its inner text).
//! - Dropped when parsing: a tool call's `index` (a streaming position the
//!   order already keeps), `null`-valued message and call fields, and the
//!   response-only `annotations`.
//!
//! To store a conversation without loss, serialise [`Message`] itself.
//!
//! # Example
//!
//! ```
//! use agent_loop_core::conversation::{FinishReason, Message};
//! use agent_loop_providers::wire::openai;
//! use serde_json::json;
//!
//! let response = json!({
//!     "object": "chat.completion",
//!     "choices": [{
//!         "index": 0,
//!         "finish_reason": "tool_calls",
//!         "message": {
//!             "role": "assistant",
//!             "content": null,
//!             "tool_calls": [{
//!                 "id": "call_1",
//!                 "type": "function",
//!                 "function": { "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}" }
//!             }]
//!         }
//!     }],
//!     "usage": { "prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62 }
//! });
//! let response = openai::parse_response(&response)?;
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.input_tokens, 50);
//!
//! let mut conversation = vec![Message::user("Weather in Oslo?")];
//! conversation.push(Message::Assistant(response.message));
//! let body = json!({ "messages": openai::export_messages(&conversation).messages });
//! assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["name"], "get_weather");
//! assert_eq!(openai::parse_messages(&body["messages"])?, conversation);
//! # Ok::<_, agent_loop_providers::wire::WireError>(())
//! ```
//!
//! [`ContentPart::Provider`]: agent_loop_core::conversation::ContentPart::Provider
//! [`ContentPart::Reasoning`]: agent_loop_core::conversation::ContentPart::Reasoning
//! [`ContentPart::ToolCall`]: agent_loop_core::conversation::ContentPart::ToolCall
//! [`Extras`]: agent_loop_core::conversation::Extras
//! [`Message`]: agent_loop_core::conversation::Message
//! [`Message::Assistant`]: agent_loop_core::conversation::Message::Assistant
//! [`Message::System`]: agent_loop_core::conversation::Message::System
//! [`Message::Tool`]: agent_loop_core::conversation::Message::Tool
//! [`Message::User`]: agent_loop_core::conversation::Message::User
//! [`RAW_ARGUMENTS_KEY`]: crate::wire::RAW_ARGUMENTS_KEY
//! [`ToolCall::arguments`]: agent_loop_core::conversation::ToolCall::arguments
//! [`ToolResult::is_error`]: agent_loop_core::conversation::ToolResult::is_error
//! [`WireError`]: crate::wire::WireError
//! [`WireFormat`]: agent_loop_core::conversation::WireFormat

mod export;
mod messages;
mod request;
mod response;
#[cfg(test)]
mod tests;
mod tools;
mod types;

#[cfg(feature = "openai")]
pub(crate) use export::RequestMessages;
pub use export::{ExportedMessages, export_messages, export_messages_for};
pub use messages::parse_messages;
pub use request::parse_request;
pub use response::parse_response;
#[cfg(feature = "openai")]
pub(crate) use response::read_response;
#[cfg(feature = "openai")]
pub(crate) use tools::ToolsView;
pub use tools::{export_declarations, export_tools, parse_tools};
#[cfg(feature = "openai")]
pub(crate) use types::ChatCompletion;
pub(crate) use types::CompletionUsage;

use agent_loop_core::conversation::WireFormat;

const FORMAT: WireFormat = WireFormat::OpenAiChat;
