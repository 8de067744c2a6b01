//! OpenAI Responses: the request's `tools` and `input` items, and the
//! `response` body.
//!
//! Shapes follow the Responses API reference
//! (<https://platform.openai.com/docs/api-reference/responses>) and its
//! OpenAPI description (`openai/openai-openapi`, `openapi.yaml`: schemas
//! `EasyInputMessage`, `ReasoningItem`, `FunctionToolCall`,
//! `FunctionCallOutputItemParam`, `OutputMessage`, `FunctionTool`,
//! `ResponseUsage`). Unlike Chat Completions, a conversation is a flat list
//! of **items**: messages, and beside them the model's `reasoning` and
//! `function_call` items and the application's `function_call_output`
//! items, each call and its output tied by `call_id`.
//!
//! | conversation | Responses |
//! | --- | --- |
//! | [`Message::System`] | `{"role": "system" \| "developer", "content"}` (the model sends the mode's instructions as `instructions`) |
//! | [`Message::User`] | `{"role": "user", "content": string \| [input_text, input_image, …]}` |
//! | [`Message::Assistant`] | the run of items one response returned, in order: `reasoning`, `message` (role `assistant`, `output_text` parts), `function_call`, server tool items |
//! | [`Message::Tool`] | `{"type": "function_call_output", "call_id", "output": string \| [input_text, input_image, …]}` |
//! | [`ContentPart::Reasoning`] | a `reasoning` item: `summary` texts as its text, `encrypted_content` as [`ReasoningPart::redacted`], the `rs_…` id in its extras |
//! | [`ContentPart::ToolCall`] | a `function_call` item: `call_id` as its id; the `fc_…` item id and `status` in its extras |
//! | [`ContentPart::Provider`] | any other item (`web_search_call`, `code_interpreter_call`, `mcp_call`, `item_reference`, a refusing `message`), or a user part such as `input_file`, verbatim |
//! | [`Extras`] | any other field of an item or a part (`status`, `phase`, `annotations`, `logprobs`, `detail`); the response id (`resp_…`) on the assistant message ([`RESPONSE_ID_KEY`]) |
//!
//! ```
//! use agent_loop_core::conversation::{FinishReason, Message};
//! use agent_loop_providers::wire::responses;
//! use serde_json::json;
//!
//! let response = responses::parse_response(&json!({
//!     "id": "resp_1",
//!     "object": "response",
//!     "status": "completed",
//!     "output": [
//!         { "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA" },
//!         { "type": "function_call", "id": "fc_1", "call_id": "call_1",
//!           "name": "get_weather", "arguments": "{\"city\":\"Paris\"}", "status": "completed" }
//!     ],
//!     "usage": { "input_tokens": 90, "input_tokens_details": { "cached_tokens": 64 },
//!                "output_tokens": 40, "output_tokens_details": { "reasoning_tokens": 30 } }
//! }))?;
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.reasoning_tokens, 30);
//!
//! let conversation = vec![Message::user("Weather in Paris?"), Message::Assistant(response.message)];
//! let exported = responses::export_messages(&conversation);
//! assert_eq!(
//!     serde_json::Value::Array(exported.input),
//!     json!([
//!         { "role": "user", "content": "Weather in Paris?" },
//!         { "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA" },
//!         { "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
//!           "arguments": "{\"city\":\"Paris\"}", "status": "completed" }
//!     ])
//! );
//! assert!(exported.dropped.is_empty());
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Reasoning across tool calls
//!
//! A reasoning model's `reasoning` items must go back in the next request,
//! each right before the item it preceded, or the model loses its chain of
//! thought between tool calls. With `store: false` (what
//! `model::OpenAiResponsesModel` (feature `openai`) sends by default) the server
//! keeps nothing, so the item must carry its `encrypted_content`, which it
//! returns only when asked with `include: ["reasoning.encrypted_content"]`.
//! The API refuses (HTTP 400) a reasoning item without the item that
//! followed it, and a `function_call` or `message` item whose `id` it
//! produced after a reasoning item when that reasoning item is missing.
//! Hence three decisions:
//!
//! - **One response, one message**: the items of one response (or of a run
//!   of such items in an `input`) are one [`Message::Assistant`], whose
//!   parts keep their order, so reasoning stays before its item.
//! - **Item ids only with reasoning**: the `fc_…` and `msg_…` ids are kept
//!   (and written back) only in a message that has a reasoning item; the
//!   API needs them for nothing else, and an id without its reasoning is
//!   refused. The `rs_…` id of a reasoning item is required by the API and
//!   always kept.
//! - **No orphaned reasoning**: an export leaves out a reasoning item that
//!   has no `id`, or that no item of its message follows, and reports it
//!   in [`ExportedInput::dropped`].
//!
//! # Parsing is tolerant
//!
//! [`parse_messages`], [`parse_request`], [`parse_response`] and
//! [`parse_tools`] read `input` as a string or items, items with or
//! without `"type": "message"`, `content` as a string or parts, `arguments`
//! missing or sent as an object, calls without `call_id` (a fresh id is
//! minted, shared with its output), items and parts this crate does not
//! model (kept verbatim as [`ContentPart::Provider`]; in a system or
//! developer message, a part of a type `InputContent` lacks is refused),
//! fields it does not
//! model (kept as [`Extras`]). A payload that does not have the documented
//! shape fails with a [`WireError`](crate::wire::WireError) whose path
//! names the culprit, e.g. `response.output[1]`; a `failed` response is
//! the provider's error ([`WireErrorKind::Provider`](crate::wire::WireErrorKind::Provider)).
//!
//! # Exporting is strict
//!
//! [`export_messages`] and [`export_tools`] write what the API accepts:
//! `strict` on every function tool (the API defaults it to `true`, which
//! changes a schema's meaning), `call_id`s of at most 64 characters
//! (`FunctionCallOutputItemParam.call_id`) and tool names matching
//! `^[a-zA-Z0-9_-]{1,64}$` (mapped when they break it, the same for a call
//! and its output), blank arguments as `{}`, arguments that are not a JSON
//! object as the JSON text of `{"_raw_arguments": "<the text>"}`
//! ([`RAW_ARGUMENTS_KEY`](crate::wire::RAW_ARGUMENTS_KEY), as the other
//! formats; [`parse_messages`] turns it back), `detail` on every
//! `input_image` (required by `InputImageContent`), no blank text, no
//! message left empty, the reasoning rules above; reasoning, provider parts
//! and extras of another format are left out and reported in
//! [`ExportedInput::dropped`], as are images in assistant messages.
//!
//! # What a round trip loses
//!
//! [`export_messages`] then [`parse_messages`] gives back the conversation
//! except: [`ToolResult::is_error`](agent_loop_core::conversation::ToolResult::is_error)
//! (the format has no such field: parsed as `false`); a system message's
//! text parts are joined into one string; the response id of an assistant
//! message (it is no item field); blank text, and what the export leaves
//! out (see above); item ids of `function_call` and `message` items in a
//! message without reasoning (dropped when parsing already); ids and names
//! that break the rules come back mapped. Parsing what this module exports
//! and exporting it again gives the same JSON.
//!
//! [`ContentPart::Provider`]: agent_loop_core::conversation::ContentPart::Provider
//! [`ContentPart::Reasoning`]: agent_loop_core::conversation::ContentPart::Reasoning
//! [`ContentPart::ToolCall`]: agent_loop_core::conversation::ContentPart::ToolCall
//! [`Extras`]: agent_loop_core::conversation::Extras
//! [`Message::Assistant`]: agent_loop_core::conversation::Message::Assistant
//! [`Message::System`]: agent_loop_core::conversation::Message::System
//! [`Message::Tool`]: agent_loop_core::conversation::Message::Tool
//! [`Message::User`]: agent_loop_core::conversation::Message::User
//! [`ReasoningPart::redacted`]: agent_loop_core::conversation::ReasoningPart::redacted

mod messages;
mod request;
mod response;
#[cfg(test)]
mod tests;
mod tools;

pub use messages::{
    ExportedInput, RESPONSE_ID_KEY, export_messages, export_messages_for,
    export_messages_stateless, export_messages_stateless_for, parse_messages,
};
#[cfg(feature = "openai")]
pub(crate) use messages::{InputItem, export_input};
pub use request::parse_request;
pub use response::parse_response;
pub(crate) use response::provider_error;
#[cfg(feature = "openai")]
pub(crate) use response::{RawResponse, read_response};
#[cfg(feature = "openai")]
pub(crate) use tools::ToolsView;
pub use tools::{export_declarations, export_tools, parse_tools};

use agent_loop_core::conversation::WireFormat;

const FORMAT: WireFormat = WireFormat::OpenAiResponses;
