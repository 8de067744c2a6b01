//! Wire payloads: every parser of every format on any JSON value, and what
//! holds for whatever parses.
//!
//! - No parser panics; a payload without the documented shape is a
//!   `WireError`.
//! - A parsed conversation, once [`repair`](conversation::repair)ed,
//!   exports within both providers' rules (but for provider parts, which
//!   go back verbatim to their own format); each format's parser reads
//!   back what that format's export wrote; and a second export is the
//!   first one again (export → parse → export is the identity).
//! - Parsed tool declarations export to their own format and read back
//!   equal.
//! - A parsed MCP `tools/list` result exports and reads back equal
//!   (parsing is lossless).

use agent_loop::conversation::{self, ContentPart, Message, ModelResponse};
use agent_loop::wire::{
    ParsedRequest, ToolDeclaration, WireError, anthropic, gemini, mcp, openai, responses,
};
use serde_json::{Value, json};

use super::ensure;

/// The provider formats, each with its parsers and its export into a
/// request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenAi,
    Anthropic,
    Responses,
    Gemini,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::OpenAi,
        Format::Anthropic,
        Format::Responses,
        Format::Gemini,
    ];

    /// The conversation's name for this format.
    pub fn wire_format(self) -> conversation::WireFormat {
        match self {
            Self::OpenAi => conversation::WireFormat::OpenAiChat,
            Self::Anthropic => conversation::WireFormat::AnthropicMessages,
            Self::Responses => conversation::WireFormat::OpenAiResponses,
            Self::Gemini => conversation::WireFormat::Gemini,
        }
    }

    pub fn parse_request(self, body: &Value) -> Result<ParsedRequest, WireError> {
        match self {
            Self::OpenAi => openai::parse_request(body),
            Self::Anthropic => anthropic::parse_request(body),
            Self::Responses => responses::parse_request(body),
            Self::Gemini => gemini::parse_request(body),
        }
    }

    pub fn parse_response(self, body: &Value) -> Result<ModelResponse, WireError> {
        match self {
            Self::OpenAi => openai::parse_response(body),
            Self::Anthropic => anthropic::parse_response(body),
            Self::Responses => responses::parse_response(body),
            Self::Gemini => gemini::parse_response(body),
        }
    }

    pub fn parse_messages(self, messages: &Value) -> Result<Vec<Message>, WireError> {
        match self {
            Self::OpenAi => openai::parse_messages(messages),
            Self::Anthropic => anthropic::parse_messages(messages),
            Self::Responses => responses::parse_messages(messages),
            Self::Gemini => gemini::parse_contents(messages),
        }
    }

    pub fn parse_tools(self, tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
        match self {
            Self::OpenAi => openai::parse_tools(tools),
            Self::Anthropic => anthropic::parse_tools(tools),
            Self::Responses => responses::parse_tools(tools),
            Self::Gemini => gemini::parse_tools(tools),
        }
    }

    /// `tools` as this format's `tools` array.
    ///
    /// Errors: a provider tool of the other format.
    pub fn export_tools(self, tools: &[ToolDeclaration]) -> Result<Value, WireError> {
        match self {
            Self::OpenAi => openai::export_declarations(tools),
            Self::Anthropic => anthropic::export_declarations(tools),
            Self::Responses => responses::export_declarations(tools),
            Self::Gemini => gemini::export_declarations(tools),
        }
        .map(Value::Array)
    }

    /// A request body holding `conversation` (Anthropic's system prompt in
    /// `system`, Gemini's in `systemInstruction`) and, when there are any,
    /// `tools`.
    ///
    /// Errors: those of [`export_tools`](Self::export_tools).
    pub fn export_request(
        self,
        conversation: &[Message],
        tools: &[ToolDeclaration],
    ) -> Result<Value, WireError> {
        let mut body = match self {
            Self::OpenAi => json!({ "messages": openai::export_messages(conversation).messages }),
            Self::Anthropic => {
                let exported = anthropic::export_messages(conversation);
                let mut body = json!({ "messages": exported.messages });
                if let Some(system) = exported.system {
                    body["system"] = json!(system);
                }
                body
            }
            Self::Responses => json!({ "input": responses::export_messages(conversation).input }),
            Self::Gemini => {
                let exported = gemini::export_contents(conversation);
                let mut body = json!({ "contents": exported.contents });
                if let Some(system) = exported.system_instruction {
                    body["systemInstruction"] = system;
                }
                body
            }
        };
        if !tools.is_empty() {
            body["tools"] = self.export_tools(tools)?;
        }
        Ok(body)
    }
}

/// Every parser of every format on `payload`, and on its `messages` and
/// `tools` members (so that a request reaches the message and tool parsers
/// whole); each result that parses is checked.
pub fn check_payload(payload: &Value) -> Result<(), String> {
    for format in Format::ALL {
        if let Ok(request) = format.parse_request(payload) {
            check_conversation(format, request.conversation)?;
            check_tools(format, &request.tools)?;
        }
        for messages in [
            payload,
            &payload["messages"],
            &payload["input"],
            &payload["contents"],
        ] {
            if let Ok(conversation) = format.parse_messages(messages) {
                check_conversation(format, conversation)?;
            }
        }
        for tools in [payload, &payload["tools"]] {
            if let Ok(tools) = format.parse_tools(tools) {
                check_tools(format, &tools)?;
            }
        }
        if let Ok(response) = format.parse_response(payload) {
            let conversation = vec![Message::user("Go."), Message::Assistant(response.message)];
            check_conversation(format, conversation)?;
        }
    }
    if let Ok(listed) = mcp::parse_list_tools_result(payload) {
        let exported = json!(mcp::export_list_tools_result(
            &listed.tools,
            listed.next_cursor.clone()
        ));
        let again = mcp::parse_list_tools_result(&exported)
            .map_err(|error| format!("MCP: the export does not parse: {error}"))?;
        ensure(again == listed, || {
            format!("MCP: parse → export → parse changed {listed:?} into {again:?}")
        })?;
    }
    Ok(())
}

/// A conversation parsed from `format`: repaired, it exports within both
/// providers' rules, and every export reads back and exports the same.
fn check_conversation(format: Format, mut conversation: Vec<Message>) -> Result<(), String> {
    if conversation::repair(&mut conversation).is_err() {
        // A result out of place: refused with a typed error, as documented.
        return Ok(());
    }
    let violations = crate::wire_rules::export_violations(&without_provider_parts(&conversation));
    ensure(violations.is_empty(), || {
        format!("{format:?}: the repaired conversation exports breaking the rules: {violations:?}")
    })?;
    for target in Format::ALL {
        let exported = export(target, &conversation)?;
        let parsed = target.parse_request(&exported).map_err(|error| {
            format!("{format:?} → {target:?}: the export does not parse: {error}\n{exported}")
        })?;
        let again = export(target, &parsed.conversation)?;
        ensure(again == exported, || {
            format!(
                "{format:?} → {target:?}: export → parse → export changed\n{exported}\ninto\n{again}"
            )
        })?;
    }
    Ok(())
}

/// `conversation` without its provider parts: those go back verbatim to
/// the format they came from, whatever its rules (parsing keeps what a
/// server sent, and only that server knows whether it takes it back).
fn without_provider_parts(conversation: &[Message]) -> Vec<Message> {
    let keep = |parts: &mut Vec<ContentPart>| {
        parts.retain(|part| !matches!(part, ContentPart::Provider(_)));
    };
    let mut conversation = conversation.to_vec();
    for message in &mut conversation {
        match message {
            Message::User(user) => keep(&mut user.content),
            Message::Assistant(assistant) => keep(&mut assistant.content),
            Message::Tool(result) => keep(&mut result.content),
            _ => {}
        }
    }
    conversation
}

fn export(format: Format, conversation: &[Message]) -> Result<Value, String> {
    format.export_request(conversation, &[]).map_err(|error| {
        format!("{format:?}: a conversation without tools fails to export: {error}")
    })
}

/// Tool declarations parsed from `format` export to it and read back equal.
fn check_tools(format: Format, tools: &[ToolDeclaration]) -> Result<(), String> {
    let exported = format
        .export_tools(tools)
        .map_err(|error| format!("{format:?}: its own tools do not export: {error}"))?;
    let again = format
        .parse_tools(&exported)
        .map_err(|error| format!("{format:?}: the exported tools do not parse: {error}"))?;
    ensure(again == tools, || {
        format!("{format:?}: tools changed in parse → export → parse: {tools:?} into {again:?}")
    })
}
