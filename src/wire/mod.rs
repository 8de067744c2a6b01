//! Provider wire formats: [`ToolInfo`](crate::tool::ToolInfo) and the
//! [`Message`](crate::turn::Message) conversation to and from the JSON that
//! OpenAI Chat Completions ([`openai`]), Anthropic Messages ([`anthropic`])
//! and MCP `tools/list` ([`mcp`]) use.
//!
//! Each format module has serde types that mirror the provider's API
//! reference, `export_*` functions that build them (serialise the result
//! with `serde_json` into the request body) and `parse_*` functions that
//! read a `serde_json::Value` back into the provider-neutral types. Parsing
//! walks the JSON itself rather than relying on serde's derived errors, so a
//! bad payload fails with a [`WireError`] whose [`kind`](WireError::kind) can
//! be matched and whose [`path`](WireError::path) names the culprit
//! (`response.choices[0].message.tool_calls[1]`). Nothing here panics on
//! input.
//!
//! Tool call arguments are kept as the raw text the model wrote
//! ([`ToolCall::arguments`](crate::turn::ToolCall::arguments)), valid JSON or
//! not: the turn loop tells the model about bad arguments per call, so the
//! wire layer must not reject them. What each format cannot carry is listed
//! in its module docs (OpenAI has no `is_error`; Anthropic needs `input` to
//! be an object).
//!
//! ```
//! use agent_loop::tool::ToolInfo;
//! use agent_loop::turn::{Message, ToolCall};
//! use agent_loop::wire::openai;
//! use serde_json::json;
//!
//! // Tools go into the request body...
//! let weather = ToolInfo::new(
//!     "get_weather",
//!     "Current weather for a city.",
//!     json!({ "type": "object", "properties": { "city": { "type": "string" } } }),
//! );
//! let request = json!({
//!     "model": "gpt-4o",
//!     "messages": openai::export_messages(&[Message::user("Weather in Paris?")]),
//!     "tools": openai::export_tools(&[weather]),
//! });
//! assert_eq!(request["tools"][0]["function"]["name"], "get_weather");
//!
//! // ...and the response comes back as an assistant message with tool calls.
//! let body: serde_json::Value = serde_json::from_str(r#"{
//!     "id": "chatcmpl-123", "object": "chat.completion", "created": 1741570283,
//!     "model": "gpt-4o-2024-08-06",
//!     "choices": [{
//!         "index": 0,
//!         "message": {
//!             "role": "assistant", "content": null,
//!             "tool_calls": [{
//!                 "id": "call_abc", "type": "function",
//!                 "function": { "name": "get_weather", "arguments": "{\"city\":\"Paris\"}" }
//!             }]
//!         },
//!         "finish_reason": "tool_calls"
//!     }]
//! }"#)?;
//! let message = openai::parse_response(&body)?;
//! assert_eq!(
//!     message,
//!     Message::tool_calls(None, vec![ToolCall::new("call_abc", "get_weather", r#"{"city":"Paris"}"#)]),
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod anthropic;
mod error;
mod json;
pub mod mcp;
pub mod openai;

pub use error::{WireError, WireErrorKind, WireFormat};
