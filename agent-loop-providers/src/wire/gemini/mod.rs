//! Gemini's native API: `tools`, request `systemInstruction` and
//! `contents`, and the `GenerateContentResponse`.
//!
//! Shapes follow the Gemini API reference
//! (<https://ai.google.dev/api/generate-content>, `Content`, `Part`,
//! `FunctionCall`, `FunctionResponse`, `FunctionDeclaration`) and the
//! official SDK's types (`google/genai/types.py` in googleapis/python-genai),
//! which a crate user can read to check each rule:
//!
//! - a conversation is `contents`, each `{"role": "user" | "model",
//!   "parts": [...]}`; the system prompt is the request's
//!   `systemInstruction`, never a content;
//! - a part has one data field: `text` (with `"thought": true` for the
//!   model's thought summaries), `inlineData` `{"mimeType", "data"}`,
//!   `fileData`, `functionCall` `{"id"?, "name", "args": {...}}` (`args` a
//!   JSON **object**), `functionResponse` `{"id"?, "name", "response":
//!   {...}, "parts"?}`, `executableCode`, …;
//! - Gemini 3 signs its reasoning with a `thoughtSignature` on the **part**
//!   it belongs to (the first `functionCall` of a turn, a text part), and
//!   refuses a function-calling history that comes back without it
//!   (<https://ai.google.dev/gemini-api/docs/thought-signatures>);
//! - results go back in the next `user` content as `functionResponse`
//!   parts, one per `functionCall` of the model turn, each with the call's
//!   `name` (and its `id` when it had one); `response` is `{"output": ...}`
//!   or `{"error": ...}` ("If "output" and "error" keys are not specified,
//!   then whole "response" is treated as function output",
//!   `FunctionResponse.response`);
//! - tools are `Tool` objects: `{"functionDeclarations": [...]}` for
//!   functions, `{"googleSearch": {}}`, `{"codeExecution": {}}`, … for the
//!   tools Gemini runs itself.
//!
//! | conversation | Gemini |
//! | --- | --- |
//! | [`Message::System`] | a text part of `systemInstruction` ([`ExportedContents::system_instruction`]) |
//! | [`Message::User`] | a `user` content of `text`, `inlineData` and provider parts |
//! | [`Message::Assistant`] | a `model` content of thought, `text`, `functionCall`, `inlineData` and provider parts, in order |
//! | [`Message::Tool`] | a `functionResponse` part of the next `user` content |
//! | [`ContentPart::Reasoning`] | a `text` part with `"thought": true`; its signature is the part's `thoughtSignature` |
//! | [`ContentPart::ToolCall`] | `functionCall`; the part's `thoughtSignature` in the call's [`Extras`] |
//! | [`ContentPart::Image`] | `inlineData` (base64), or `fileData` (`mimeType`, `fileUri`) for an HTTPS URL (not in a tool result) whose path ends in `.png`, `.jpg`/`.jpeg`, `.webp`, `.heic` or `.heif` (the SDK's guess of the required `mimeType`); any other URL is left out and reported |
//! | [`ContentPart::Provider`] | any other part (`fileData`, `executableCode`, `codeExecutionResult`, `inlineData` that is not an image), verbatim |
//!
//! ```
//! use agent_loop_core::conversation::{FinishReason, Message, ToolResult};
//! use agent_loop_providers::wire::gemini;
//! use serde_json::json;
//!
//! let response = gemini::parse_response(&json!({
//!     "candidates": [{
//!         "content": { "role": "model", "parts": [
//!             { "functionCall": { "name": "get_weather", "args": { "city": "Paris" } },
//!               "thoughtSignature": "c2ln" }
//!         ] },
//!         "finishReason": "STOP"
//!     }],
//!     "usageMetadata": { "promptTokenCount": 20, "candidatesTokenCount": 5, "thoughtsTokenCount": 40 }
//! }))?;
//! assert_eq!(response.finish_reason, FinishReason::ToolCalls);
//! assert_eq!(response.usage.output_tokens, 45);
//!
//! let mut call_message = response.message;
//! // No `id` from Gemini: the turn runner mints one, as here.
//! for call in call_message.tool_calls_mut() {
//!     call.id = "call_1".into();
//! }
//! let conversation = vec![
//!     Message::system("Be brief."),
//!     Message::user("Weather in Paris?"),
//!     Message::Assistant(call_message),
//!     Message::Tool(ToolResult::ok("call_1", "Sunny")),
//! ];
//! let exported = gemini::export_contents(&conversation);
//! assert!(exported.dropped.is_empty());
//! assert_eq!(
//!     serde_json::to_value(&exported)?,
//!     json!({
//!         "systemInstruction": { "parts": [{ "text": "Be brief." }] },
//!         "contents": [
//!             { "role": "user", "parts": [{ "text": "Weather in Paris?" }] },
//!             { "role": "model", "parts": [
//!                 { "functionCall": { "id": "call_1", "name": "get_weather", "args": { "city": "Paris" } },
//!                   "thoughtSignature": "c2ln" }
//!             ] },
//!             { "role": "user", "parts": [
//!                 { "functionResponse": { "id": "call_1", "name": "get_weather",
//!                                         "response": { "output": "Sunny" } } }
//!             ] }
//!         ]
//!     })
//! );
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
//!
//! # Parsing is tolerant
//!
//! - **Either key case**: the API reads its proto JSON in camelCase and in
//!   snake_case (`function_call`, `thought_signature`, `inline_data`,
//!   `mime_type`, `system_instruction`, `parameters_json_schema`), and real
//!   clients send both; both are read. Exports write camelCase; unmodelled
//!   fields go back as they came.
//! - **A call without `id`** (Gemini sends none on the Gemini API) parses
//!   with the id `""`: [`parse_response`] leaves it so for the turn runner
//!   to mint one, [`parse_contents`] and [`parse_request`] mint one shared
//!   by the call and the result that answers it (by `id`, else by `name`,
//!   else in order).
//! - **Signatures stay on their part**: a `thoughtSignature` is the
//!   signature of a thought part, and among the [`Extras`] of a text part, an
//!   image or a tool call otherwise, written back on that same part. A
//!   blank non-thought text part that carries a signature or other fields
//!   (Gemini 3 may sign an empty part) is kept whole as a provider part.
//! - **Function declarations** may give `parametersJsonSchema` (a full
//!   JSON Schema) or the older `parameters` (an OpenAPI subset whose types
//!   are upper case: they are lowered).
//! - A part this crate does not model is kept verbatim; fields it does not
//!   model go to [`Extras`]. A payload that does not have the documented
//!   shape fails with a typed [`WireError`](crate::wire::WireError) whose
//!   path names the culprit (`response.candidates[0].content.parts[1]`).
//!
//! # Exporting is strict
//!
//! What [`export_contents`] writes follows what the API refuses:
//!
//! - roles are only `user` and `model`, and no content has empty `parts`;
//! - no blank text part (the API refuses an empty `text`), except a thought
//!   part or a kept provider part that carries a `thoughtSignature`;
//! - every `functionCall` of a model turn is answered in the next `user`
//!   content by one `functionResponse` with its `name`, and its `id` when
//!   the call has one ("Please ensure that the number of function response
//!   parts is equal to the number of function call parts of the function
//!   call turn", the API's 400) — provided the conversation pairs them
//!   (see [`wire`](crate::wire));
//! - every `thoughtSignature` goes back on the part it came with (to the
//!   endpoint it came from: see [`export_contents_for`]), and the
//!   first `functionCall` of a model content that has none (a call made by
//!   another provider, or by Gemini 2.x) gets
//!   `"thoughtSignature": "skip_thought_signature_validator"`, the value
//!   the Gemini API's thought-signature guide gives for histories from
//!   another model: Gemini 3 answers 400 "Function call is missing a
//!   thought_signature in functionCall parts" otherwise. Parsing drops
//!   that value again, so it never reads as the model's;
//! - reasoning, provider parts and extras of another format are left out,
//!   and so are images given by URL (Gemini reads images inline, or from a
//!   file it hosts): [`ExportedContents::dropped`] lists them;
//! - function declarations carry `parametersJsonSchema`; tool call ids are
//!   kept (Gemini documents no pattern for them) unless two calls share
//!   one; tool names that break Gemini's `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`
//!   (`FunctionDeclaration.name`) are mapped to a valid form.
//!
//! # Decisions
//!
//! - **`args` to arguments**: the object is written as compact JSON text
//!   into [`ToolCall::arguments`]; arguments that are not a JSON object go
//!   out as `{"_raw_arguments": "<the text>"}` and come back as that text,
//!   as for Anthropic ([`RAW_ARGUMENTS_KEY`](crate::wire::RAW_ARGUMENTS_KEY)).
//! - **Results**: a [`ToolResult`]'s text parts, joined, are
//!   `response.output` (`response.error` when it failed); its base64 images
//!   are `functionResponse.parts` `inlineData` (Gemini 3's multimodal
//!   function responses). A `response` of another shape (pydantic-ai's
//!   `{"return_value": …}`) parses as a result whose text is the object's
//!   JSON, failed when it has an `error` key, and goes back as it was.
//! - **`fileData`** (a Files API or Cloud Storage URI with its MIME type)
//!   is kept as a provider part, not an image URL: another provider cannot
//!   fetch it.
//! - **Blank text** is joined to its neighbours when parsing (see
//!   [`anthropic`](crate::wire::anthropic)'s module docs): no blank part
//!   remains, so parse → export → parse stays the identity. A blank
//!   thought without signature is dropped.
//!
//! # What a round trip loses
//!
//! [`export_contents`] then [`parse_contents`] gives back the conversation
//! except: arguments JSON is re-serialised compactly and blank arguments
//! come back as `{}`; blank text, blank unsigned thoughts, `"thought":
//! false`, images given by URL and other formats' reasoning, provider parts
//! and extras are not exported; a system message's [`SystemRole`] is not
//! kept; a result's text parts come back as one, before its images; calls
//! without id come back with minted ids. Parsing what this module exports
//! and exporting it again gives the same JSON, but for those calls: the
//! first export writes no `id` for a call that had none, and the second
//! writes the id the parse minted (a turn mints ids before any export, so
//! only a conversation built or parsed by hand has such calls).
//!
//! [`ContentPart::Image`]: agent_loop_core::conversation::ContentPart::Image
//! [`ContentPart::Provider`]: agent_loop_core::conversation::ContentPart::Provider
//! [`ContentPart::Reasoning`]: agent_loop_core::conversation::ContentPart::Reasoning
//! [`ContentPart::ToolCall`]: agent_loop_core::conversation::ContentPart::ToolCall
//! [`Extras`]: agent_loop_core::conversation::Extras
//! [`Message::Assistant`]: agent_loop_core::conversation::Message::Assistant
//! [`Message::System`]: agent_loop_core::conversation::Message::System
//! [`Message::Tool`]: agent_loop_core::conversation::Message::Tool
//! [`Message::User`]: agent_loop_core::conversation::Message::User
//! [`SystemRole`]: agent_loop_core::conversation::SystemRole
//! [`ToolCall::arguments`]: agent_loop_core::conversation::ToolCall::arguments
//! [`ToolResult`]: agent_loop_core::conversation::ToolResult

mod contents;
mod parts;
mod request;
mod response;
#[cfg(test)]
mod tests;
mod tools;

#[cfg(feature = "gemini")]
pub(crate) use contents::export_outgoing;
pub use contents::{ExportedContents, export_contents, export_contents_for, parse_contents};
pub use request::parse_request;
pub use response::parse_response;
pub use tools::{export_declarations, export_tools, parse_tools};

pub(crate) use response::provider_error;

use agent_loop_core::conversation::WireFormat;

const FORMAT: WireFormat = WireFormat::Gemini;
