//! The providers' documented rules for a request's `messages`, written as
//! checks on exported JSON: what OpenAI Chat Completions and Anthropic
//! Messages answer with HTTP 400 when broken.
//!
//! - Tool call ids: OpenAI at most 40 characters ("string too long.
//!   Expected a string with maximum length 40"); Anthropic
//!   `^[a-zA-Z0-9_-]+$` (`tool_use.id` in the Messages API reference).
//! - Tool names in calls: `^[a-zA-Z0-9_-]{1,64}$` for both.
//! - No empty or whitespace-only text; no assistant message without content
//!   (Anthropic: "all messages must have non-empty content"; OpenAI:
//!   content is required unless `tool_calls` is given).
//! - Every tool result answers a call of the assistant message right
//!   before it, and every call has exactly one result.
//! - Anthropic: an assistant message holding thinking blocks starts with
//!   one; with thinking on, the rules of [`anthropic_thinking_violations`];
//!   no `system` role inside `messages`; `tool_use` ids unique in the
//!   request ("`tool_use` ids must be unique"); an error `tool_result` has
//!   content, and text only ("content cannot be empty if `is_error` is
//!   true", "all content must be type 'text' if 'is_error' is true").
//! - OpenAI-compatible servers (vLLM, llama.cpp) parse every earlier
//!   call's `arguments` as JSON and answer 400 when it is not an object.
//! - OpenAI Responses (`openai/openai-openapi`, `openapi.yaml`): every
//!   `function_call` answered by exactly one later `function_call_output`
//!   with its `call_id` (1 to 64 characters,
//!   `FunctionCallOutputItemParam.call_id`), call ids unique; a `reasoning`
//!   item has its `id` and `summary` (`ReasoningItem.required`) and is
//!   immediately followed by the item it preceded (a call or an assistant
//!   message: the API answers 400 "reasoning item … without its required
//!   following item"); a `function_call` or `message` item carries an `id`
//!   only in a run of items that holds its reasoning (400 "provided without
//!   its required 'reasoning' item"); `input_image` has `detail`
//!   (`InputImageContent.required`); no blank text; nothing of another
//!   format (a `tool` role, `tool_calls`, `text`/`image_url`/`tool_use`/
//!   `thinking` items or parts).
//! - Gemini (`Content`, `Part`, `FunctionCall`, `FunctionResponse` in
//!   `google/genai/types.py` of googleapis/python-genai, and the API's
//!   400s): roles only `user` and `model` ("Content.role: Must be either
//!   'user' or 'model'"); no content without parts ("contents.parts must
//!   not be empty"); no blank text part but one carrying a
//!   `thoughtSignature`; the first `functionCall` of a model content with
//!   a `thoughtSignature` (Gemini 3: "Function call is missing a
//!   thought_signature in functionCall parts"; the documented stand-in
//!   `skip_thought_signature_validator` counts); every `functionCall` of a model turn answered in
//!   the next `user` content by one `functionResponse` with its `name`,
//!   and its `id` exactly when the call had one ("Please ensure that the
//!   number of function response parts is equal to the number of function
//!   call parts of the function call turn"); `args` and `response`
//!   objects; function names `^[a-zA-Z_][a-zA-Z0-9_.:-]{0,127}$`
//!   (`FunctionDeclaration.name`); no part of another format (a `type`
//!   field, say: Gemini parts are keyed by their data field) and camelCase
//!   keys; function declarations with a `parametersJsonSchema` object.
//! - Native structured-output schemas (what each provider refuses with 400
//!   before the model runs):
//!   - Anthropic `output_config.format.schema` (the structured outputs
//!     guide's "JSON Schema limitations", and `transform_schema` of
//!     `anthropic-sdk-python`): only `type` (one type, not a list),
//!     `anyOf`, `allOf`, `enum`, `const`, `$ref`/`$defs`/`definitions`,
//!     `properties`, `required`, `additionalProperties`, `items`,
//!     `description`, `title`, `format` (strings: `date-time`, `time`,
//!     `date`, `duration`, `email`, `hostname`, `uri`, `ipv4`, `ipv6`,
//!     `uuid`) and `minItems` 0 or 1 ("For 'integer' type, property
//!     'minimum' is not supported"); every object `additionalProperties:
//!     false`; a `$ref` alone; every schema typed.
//!   - OpenAI strict mode (`response_format.json_schema` and Responses
//!     `text.format` with `strict: true`; "Supported schemas" of the
//!     structured outputs guide, `_ensure_strict_json_schema` of
//!     `openai-python`): an object at the root; every object
//!     `additionalProperties: false` and every property in `required`;
//!     only `type`, `anyOf`, `enum`, `const`, `$ref`/`$defs`/`definitions`,
//!     `properties`, `required`, `additionalProperties`, `items`,
//!     `description`, `title`, `pattern`, `format` (`date-time`, `time`,
//!     `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`),
//!     `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//!     `multipleOf`, `minItems`, `maxItems`; a `$ref` alone.
//!   - Gemini `generationConfig.responseJsonSchema`
//!     (`GenerationConfig.response_json_schema` of `google/genai/types.py`):
//!     only `$id`, `$defs`, `$ref`, `$anchor`, `type`, `format`, `title`,
//!     `description`, `enum`, `items`, `prefixItems`, `minItems`,
//!     `maxItems`, `minimum`, `maximum`, `anyOf`, `oneOf`, `properties`,
//!     `additionalProperties`, `required`, `propertyOrdering`; beside a
//!     `$ref` only `$` keywords.

use std::collections::HashSet;

use agent_loop::conversation::Message;
use agent_loop::wire::{anthropic, gemini, openai, responses};
use serde_json::{Value, json};

fn name_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn anthropic_id_ok(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// The violations of OpenAI's rules in exported `messages`; empty when it
/// would be accepted.
pub fn openai_violations(messages: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    let Some(messages) = messages.as_array() else {
        return vec!["messages is not an array".into()];
    };
    // Ids of the last assistant message's calls still waiting for a result.
    let mut open: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let at = format!("messages[{index}]");
        let role = message["role"].as_str().unwrap_or("");
        if role != "tool" && !open.is_empty() {
            violations.push(format!("{at}: calls {open:?} have no result before it"));
            open.clear();
        }
        match role {
            "system" | "developer" | "user" => match &message["content"] {
                Value::String(text) if blank(text) => {
                    violations.push(format!("{at}: blank {role} content"))
                }
                Value::String(_) => {}
                Value::Array(parts) if parts.is_empty() => {
                    violations.push(format!("{at}: empty {role} content"))
                }
                Value::Array(parts) => {
                    for part in parts {
                        if part["type"] == "text" && blank(part["text"].as_str().unwrap_or("")) {
                            violations.push(format!("{at}: blank text part"));
                        }
                    }
                }
                other => violations.push(format!("{at}: {role} content is {other}")),
            },
            "assistant" => {
                let calls = message["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                match &message["content"] {
                    Value::Null if calls.is_empty() => {
                        violations.push(format!("{at}: assistant without content or tool calls"))
                    }
                    Value::Null => {}
                    Value::String(text) if blank(text) => {
                        violations.push(format!("{at}: blank assistant content"))
                    }
                    Value::String(_) => {}
                    other => violations.push(format!("{at}: assistant content is {other}")),
                }
                if message.get("tool_calls").is_some() && calls.is_empty() {
                    violations.push(format!("{at}: empty tool_calls"));
                }
                let mut ids = HashSet::new();
                for call in &calls {
                    let id = call["id"].as_str().unwrap_or("");
                    if !(1..=40).contains(&id.chars().count()) {
                        violations.push(format!(
                            "{at}: tool call id {id:?} is not 1 to 40 characters"
                        ));
                    }
                    if !ids.insert(id.to_owned()) {
                        violations.push(format!("{at}: tool call id {id:?} twice"));
                    }
                    if call["type"] == "function" {
                        let name = call["function"]["name"].as_str().unwrap_or("");
                        if !name_ok(name) {
                            violations.push(format!("{at}: tool name {name:?}"));
                        }
                        match call["function"]["arguments"].as_str() {
                            None => violations.push(format!("{at}: arguments are not a string")),
                            Some(text) => {
                                if !serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object())
                                {
                                    violations.push(format!(
                                        "{at}: arguments {text:?} are not a JSON object"
                                    ));
                                }
                            }
                        }
                    }
                    open.push(id.to_owned());
                }
            }
            "tool" => {
                let id = message["tool_call_id"].as_str().unwrap_or("");
                match open.iter().position(|open_id| open_id == id) {
                    Some(position) => {
                        open.remove(position);
                    }
                    None => {
                        violations.push(format!("{at}: tool result {id:?} answers no open call"))
                    }
                }
                if !message["content"].is_string() && !message["content"].is_array() {
                    violations.push(format!("{at}: tool content is {}", message["content"]));
                }
            }
            other => violations.push(format!("{at}: unknown role {other:?}")),
        }
    }
    if !open.is_empty() {
        violations.push(format!("calls {open:?} have no result"));
    }
    violations
}

/// The violations of Anthropic's rules in exported `messages`.
pub fn anthropic_violations(messages: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    let Some(messages) = messages.as_array() else {
        return vec!["messages is not an array".into()];
    };
    let mut open: Vec<String> = Vec::new();
    let mut all_ids: HashSet<String> = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        let at = format!("messages[{index}]");
        let role = message["role"].as_str().unwrap_or("");
        let blocks: Vec<Value> = match &message["content"] {
            Value::String(text) => {
                if blank(text) {
                    violations.push(format!("{at}: blank content"));
                }
                Vec::new()
            }
            Value::Array(blocks) => {
                if blocks.is_empty() {
                    violations.push(format!("{at}: empty content"));
                }
                blocks.clone()
            }
            other => {
                violations.push(format!("{at}: content is {other}"));
                Vec::new()
            }
        };
        for block in &blocks {
            if block["type"] == "text" && blank(block["text"].as_str().unwrap_or("")) {
                violations.push(format!("{at}: blank text block"));
            }
        }
        match role {
            "assistant" => {
                if !open.is_empty() {
                    violations.push(format!("{at}: calls {open:?} have no result before it"));
                    open.clear();
                }
                let thinking = |block: &Value| {
                    block["type"] == "thinking" || block["type"] == "redacted_thinking"
                };
                if blocks.iter().any(thinking) && !blocks.first().is_some_and(thinking) {
                    violations.push(format!("{at}: thinking blocks do not come first"));
                }
                for block in blocks.iter().filter(|b| b["type"] == "tool_use") {
                    let id = block["id"].as_str().unwrap_or("");
                    if !anthropic_id_ok(id) {
                        violations.push(format!("{at}: tool_use id {id:?}"));
                    }
                    if !all_ids.insert(id.to_owned()) {
                        violations.push(format!("{at}: tool_use id {id:?} is not unique"));
                    }
                    let name = block["name"].as_str().unwrap_or("");
                    if !name_ok(name) {
                        violations.push(format!("{at}: tool name {name:?}"));
                    }
                    if !block["input"].is_object() {
                        violations.push(format!("{at}: input is not an object"));
                    }
                    open.push(id.to_owned());
                }
            }
            "user" => {
                let mut results_done = false;
                for block in &blocks {
                    if block["type"] == "tool_result" {
                        if block["is_error"] == true {
                            let content = &block["content"];
                            let empty = match content {
                                Value::String(text) => blank(text),
                                Value::Array(parts) => parts.is_empty(),
                                _ => true,
                            };
                            if empty {
                                violations.push(format!("{at}: error tool_result without content"));
                            }
                            if content
                                .as_array()
                                .is_some_and(|parts| parts.iter().any(|p| p["type"] != "text"))
                            {
                                violations.push(format!(
                                    "{at}: error tool_result holds non-text content"
                                ));
                            }
                        }
                        if results_done {
                            violations.push(format!("{at}: tool_result after other blocks"));
                        }
                        let id = block["tool_use_id"].as_str().unwrap_or("");
                        match open.iter().position(|open_id| open_id == id) {
                            Some(position) => {
                                open.remove(position);
                            }
                            None => violations.push(format!(
                                "{at}: tool_result {id:?} answers no tool_use of the message before"
                            )),
                        }
                    } else {
                        results_done = true;
                    }
                }
                if !open.is_empty() {
                    violations.push(format!("{at}: calls {open:?} have no result"));
                    open.clear();
                }
            }
            other => violations.push(format!("{at}: role {other:?} inside messages")),
        }
    }
    if !open.is_empty() {
        violations.push(format!("calls {open:?} have no result"));
    }
    violations
}

/// Anthropic's rules for a request's `thinking` and `output_config.effort`
/// (the SDK's `ThinkingConfigParam`, `ThinkingConfigEnabledParam`,
/// `ThinkingConfigAdaptiveParam` and `OutputConfigParam`,
/// anthropics/anthropic-sdk-python `src/anthropic/types/`, and the API's
/// 400s):
///
/// - `thinking.type` is `enabled`, `adaptive` or `disabled`;
/// - `output_config.effort`, when given, is `low`, `medium`, `high`,
///   `xhigh` or `max`;
/// - adaptive thinking takes no `budget_tokens` ("thinking.adaptive.
///   budget_tokens: Extra inputs are not permitted") and a `temperature`
///   unset or 1 ("`temperature` may only be set to 1 when thinking is
///   enabled or in adaptive mode"); it allows forced tool use (Anthropic's
///   "Thinking in tool and multi-turn workflows");
/// - extended thinking (`"type": "enabled"`), from the extended thinking
///   guide and the API's 400s: `budget_tokens` at least 1024 and below
///   `max_tokens`; `temperature` unset or 1; `tool_choice` neither `any`
///   nor `tool` (the guide: with thinking, tool use supports only `auto`
///   and `none`); and the final assistant message, when it holds
///   `tool_use`, starts with a `thinking` or `redacted_thinking` block
///   ("Expected `thinking` or `redacted_thinking`, but found `tool_use`.
///   When `thinking` is enabled, a final `assistant` message must start
///   with a thinking block"; "Preserving thinking blocks").
///
/// Empty without thinking and effort.
pub fn anthropic_thinking_violations(body: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    if let Some(effort) = body["output_config"].get("effort")
        && !matches!(
            effort.as_str(),
            Some("low" | "medium" | "high" | "xhigh" | "max")
        )
    {
        violations.push(format!("output_config.effort {effort} is no effort level"));
    }
    let thinking = &body["thinking"];
    let temperature_not_one = body
        .get("temperature")
        .is_some_and(|t| t.as_f64() != Some(1.0));
    match thinking["type"].as_str() {
        None if thinking.is_null() => return violations,
        Some("disabled") => return violations,
        Some("adaptive") => {
            if thinking.get("budget_tokens").is_some() {
                violations.push("thinking: adaptive with budget_tokens".into());
            }
            if temperature_not_one {
                violations.push(format!(
                    "thinking: temperature {} in adaptive mode",
                    body["temperature"]
                ));
            }
            return violations;
        }
        Some("enabled") => {}
        _ => {
            violations.push(format!(
                "thinking: type {} is no thinking type",
                thinking["type"]
            ));
            return violations;
        }
    }
    let budget = body["thinking"]["budget_tokens"].as_u64().unwrap_or(0);
    let max_tokens = body["max_tokens"].as_u64().unwrap_or(0);
    if budget < 1024 {
        violations.push(format!("thinking: budget_tokens {budget} below 1024"));
    }
    if budget >= max_tokens {
        violations.push(format!(
            "thinking: budget_tokens {budget} not below max_tokens {max_tokens}"
        ));
    }
    if temperature_not_one {
        violations.push(format!("thinking: temperature {}", body["temperature"]));
    }
    if matches!(body["tool_choice"]["type"].as_str(), Some("any" | "tool")) {
        violations.push("thinking: forced tool use".into());
    }
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if let Some((index, last)) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, message)| message["role"] == "assistant")
    {
        let blocks = last["content"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let uses_tools = blocks.iter().any(|block| block["type"] == "tool_use");
        let starts_thinking = blocks.first().is_some_and(|block| {
            block["type"] == "thinking" || block["type"] == "redacted_thinking"
        });
        if uses_tools && !starts_thinking {
            violations.push(format!(
                "messages[{index}]: the final assistant message uses tools without starting with thinking"
            ));
        }
    }
    violations
}

/// Exports `conversation` to every format and returns every violation,
/// prefixed with the format.
pub fn export_violations(conversation: &[Message]) -> Vec<String> {
    let openai =
        serde_json::to_value(openai::export_messages(conversation).messages).unwrap_or(Value::Null);
    let anthropic = serde_json::to_value(anthropic::export_messages(conversation).messages)
        .unwrap_or(Value::Null);
    let responses = Value::Array(responses::export_messages(conversation).input);
    let gemini = Value::Array(gemini::export_contents(conversation).contents);
    openai_violations(&openai)
        .into_iter()
        .map(|v| format!("OpenAI: {v}"))
        .chain(
            anthropic_violations(&anthropic)
                .into_iter()
                .map(|v| format!("Anthropic: {v}")),
        )
        .chain(
            responses_violations(&responses)
                .into_iter()
                .map(|v| format!("Responses: {v}")),
        )
        .chain(
            gemini_violations(&gemini)
                .into_iter()
                .map(|v| format!("Gemini: {v}")),
        )
        .collect()
}

/// Where an item of a Responses `input` stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// A user, system or developer message, or a call's output.
    Application,
    /// Reasoning, a call, an assistant message, a server tool's item.
    Model,
}

fn side(item: &Value) -> Side {
    match (item["type"].as_str(), item["role"].as_str()) {
        (None | Some("message"), Some("assistant")) => Side::Model,
        (None | Some("message"), Some(_)) | (Some("function_call_output"), _) => Side::Application,
        _ => Side::Model,
    }
}

/// The violations of a `store: false` request's `input` beyond
/// [`responses_violations`]: every reasoning item carries its
/// `encrypted_content` (nothing is stored, so OpenAI answers 400 "Item with
/// id 'rs_…' not found. Items are not persisted when `store` is set to
/// false" to a bare id).
pub fn responses_stateless_violations(input: &Value) -> Vec<String> {
    input
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .filter(|(_, item)| item["type"] == "reasoning" && !item["encrypted_content"].is_string())
        .map(|(index, _)| format!("input[{index}]: reasoning without encrypted_content, stateless"))
        .collect()
}

/// The violations of the Responses API's rules in an exported `input`;
/// empty when it would be accepted.
pub fn responses_violations(input: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    let Some(items) = input.as_array() else {
        return vec!["input is not an array".into()];
    };
    let mut calls: Vec<String> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    // The run of model items so far holds a reasoning item.
    let mut run_has_reasoning = false;
    for (index, item) in items.iter().enumerate() {
        let at = format!("input[{index}]");
        if side(item) == Side::Application {
            run_has_reasoning = false;
        }
        let kind = item["type"].as_str();
        let parts_ok = |parts: &Value, allowed: &[&str], violations: &mut Vec<String>| match parts {
            Value::String(text) if blank(text) => {
                violations.push(format!("{at}: blank content"));
            }
            Value::String(_) => {}
            Value::Array(parts) if parts.is_empty() => {
                violations.push(format!("{at}: empty content"));
            }
            Value::Array(parts) => {
                for part in parts {
                    let kind = part["type"].as_str().unwrap_or("");
                    if !allowed.contains(&kind) {
                        violations.push(format!("{at}: a `{kind}` part here"));
                    }
                    if kind.ends_with("_text") && blank(part["text"].as_str().unwrap_or("")) {
                        violations.push(format!("{at}: blank {kind}"));
                    }
                    if kind == "input_image" && !part["detail"].is_string() {
                        violations.push(format!("{at}: input_image without detail"));
                    }
                }
            }
            other => violations.push(format!("{at}: content is {other}")),
        };
        match (kind, item["role"].as_str()) {
            (None | Some("message"), Some(role)) => match role {
                "user" | "system" | "developer" => parts_ok(
                    &item["content"],
                    &["input_text", "input_image", "input_file", "input_audio"],
                    &mut violations,
                ),
                "assistant" => {
                    parts_ok(
                        &item["content"],
                        &["output_text", "refusal"],
                        &mut violations,
                    );
                    if item.get("id").is_some() && !run_has_reasoning {
                        violations.push(format!("{at}: a message id without its reasoning"));
                    }
                    // Parts make it an `OutputMessage` (an input message's
                    // parts are input parts), whose `id` and `status` the
                    // published schema requires; spec-validating servers
                    // (vLLM) refuse it without (openai/codex #12669).
                    if item["content"].is_array()
                        && (!item["id"].is_string() || !item["status"].is_string())
                    {
                        violations.push(format!(
                            "{at}: assistant parts without the id and status an output message requires"
                        ));
                    }
                }
                other => violations.push(format!("{at}: role `{other}`")),
            },
            (Some("reasoning"), _) => {
                run_has_reasoning = true;
                if !item["id"].is_string() {
                    violations.push(format!("{at}: reasoning without id"));
                }
                if !item["summary"].is_array() {
                    violations.push(format!("{at}: reasoning without summary"));
                }
                match items.get(index + 1) {
                    Some(next) if side(next) == Side::Model && next["type"] != "reasoning" => {}
                    _ => violations.push(format!("{at}: reasoning not followed by its item")),
                }
            }
            (Some("function_call"), _) => {
                let id = item["call_id"].as_str().unwrap_or("");
                if !(1..=64).contains(&id.chars().count()) {
                    violations.push(format!("{at}: call_id {id:?}"));
                }
                if calls.iter().any(|call| call == id) {
                    violations.push(format!("{at}: call_id {id:?} repeats"));
                }
                calls.push(id.to_owned());
                if !name_ok(item["name"].as_str().unwrap_or("")) {
                    violations.push(format!("{at}: tool name {}", item["name"]));
                }
                let arguments = item["arguments"].as_str().unwrap_or("");
                if !serde_json::from_str::<Value>(arguments).is_ok_and(|value| value.is_object()) {
                    violations.push(format!("{at}: arguments {arguments:?} are not an object"));
                }
                if item.get("id").is_some() && !run_has_reasoning {
                    violations.push(format!("{at}: an fc id without its reasoning"));
                }
            }
            (Some("function_call_output"), _) => {
                let id = item["call_id"].as_str().unwrap_or("");
                if !calls.iter().any(|call| call == id) {
                    violations.push(format!("{at}: output {id:?} answers no earlier call"));
                }
                if answered.iter().any(|done| done == id) {
                    violations.push(format!("{at}: a second output for {id:?}"));
                }
                answered.push(id.to_owned());
                match &item["output"] {
                    Value::String(_) => {}
                    parts @ Value::Array(_) => parts_ok(
                        parts,
                        &["input_text", "input_image", "input_file"],
                        &mut violations,
                    ),
                    other => violations.push(format!("{at}: output is {other}")),
                }
            }
            (Some("function" | "tool_use" | "tool_result" | "text" | "thinking"), _) => {
                violations.push(format!("{at}: an item of another format"));
            }
            _ if item.get("tool_calls").is_some() => {
                violations.push(format!("{at}: Chat Completions `tool_calls`"));
            }
            _ => {}
        }
    }
    for call in &calls {
        if !answered.contains(call) {
            violations.push(format!("call {call:?} has no output"));
        }
    }
    violations
}

/// The violations of the Responses rules for a `tools` array: every
/// function tool has a valid name, `parameters` and `strict`.
pub fn responses_tool_violations(tools: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    for (index, tool) in tools.as_array().into_iter().flatten().enumerate() {
        if tool["type"] != "function" {
            continue;
        }
        if !tool["strict"].is_boolean() {
            violations.push(format!("tools[{index}]: no strict"));
        }
        if !name_ok(tool["name"].as_str().unwrap_or("")) {
            violations.push(format!("tools[{index}]: name {}", tool["name"]));
        }
        if tool.get("parameters").is_none() {
            violations.push(format!("tools[{index}]: no parameters"));
        }
        violations.extend(openai_parameters_violations(
            &tool["parameters"],
            &format!("tools[{index}].parameters"),
        ));
    }
    violations
}

/// OpenAI's refusals of a function's `parameters`, as it answers them
/// ("In context=(), object schema missing properties", "array schema
/// missing items"): an object schema without `properties`, an array
/// schema without `items`.
pub fn openai_parameters_violations(parameters: &Value, at: &str) -> Vec<String> {
    let mut nodes = Vec::new();
    schema_nodes(parameters, String::new(), &mut nodes);
    let mut violations = Vec::new();
    for (pointer, node) in nodes {
        let Some(map) = node.as_object() else {
            continue;
        };
        let typed = |kind: &str| {
            map.get("type") == Some(&json!(kind))
                || field(map, "type")
                    .as_array()
                    .is_some_and(|types| types.contains(&json!(kind)))
        };
        if typed("object") && !map.contains_key("properties") {
            violations.push(format!("{at}{pointer}: object schema missing properties"));
        }
        if typed("array") && !map.contains_key("items") && !map.contains_key("prefixItems") {
            violations.push(format!("{at}{pointer}: array schema missing items"));
        }
    }
    violations
}

fn gemini_name_ok(name: &str) -> bool {
    name.len() <= 128
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// The part fields of Gemini's `Part`, camelCase.
const GEMINI_PART_FIELDS: &[&str] = &[
    "text",
    "thought",
    "thoughtSignature",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
    "videoMetadata",
    "partMetadata",
    "mediaResolution",
];

/// Gemini's rules on a request's `contents` (see the module docs).
pub fn gemini_violations(contents: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    let Some(contents) = contents.as_array() else {
        return vec!["contents is not an array".into()];
    };
    let mut ids = HashSet::new();
    // The calls of the model turn before: (id, name).
    let mut open: Vec<(Option<String>, String)> = Vec::new();
    for (index, content) in contents.iter().enumerate() {
        let role = content["role"].as_str().unwrap_or_default();
        if role != "user" && role != "model" {
            violations.push(format!("contents[{index}]: role {role:?}"));
        }
        let parts = content["parts"].as_array().cloned().unwrap_or_default();
        if parts.is_empty() {
            violations.push(format!("contents[{index}]: no parts"));
        }
        let mut answered: Vec<(Option<String>, String)> = Vec::new();
        for (position, part) in parts.iter().enumerate() {
            let at = format!("contents[{index}].parts[{position}]");
            let Some(fields) = part.as_object() else {
                violations.push(format!("{at}: not an object"));
                continue;
            };
            for key in fields.keys() {
                if !GEMINI_PART_FIELDS.contains(&key.as_str()) {
                    violations.push(format!("{at}: field {key:?} is no Gemini part field"));
                }
            }
            if let Some(text) = part.get("text") {
                match text.as_str() {
                    Some(text) if blank(text) && part.get("thoughtSignature").is_none() => {
                        violations.push(format!("{at}: blank text"));
                    }
                    Some(_) => {}
                    None => violations.push(format!("{at}: text is not a string")),
                }
            }
            if let Some(signature) = part.get("thoughtSignature")
                && !signature.is_string()
            {
                violations.push(format!("{at}: thoughtSignature is not a string"));
            }
            if let Some(call) = part.get("functionCall") {
                if role != "model" {
                    violations.push(format!("{at}: functionCall outside a model turn"));
                }
                // Gemini 3: "Function call is missing a thought_signature
                // in functionCall parts" for the first call of a model
                // turn without one.
                let first_call = parts[..position]
                    .iter()
                    .all(|before| before.get("functionCall").is_none());
                if first_call && !part["thoughtSignature"].is_string() {
                    violations.push(format!("{at}: the first call has no thoughtSignature"));
                }
                let name = call["name"].as_str().unwrap_or_default();
                if !gemini_name_ok(name) {
                    violations.push(format!("{at}: call name {name:?}"));
                }
                if !call["args"].is_object() {
                    violations.push(format!("{at}: args is not an object"));
                }
                let id = call
                    .get("id")
                    .map(|id| id.as_str().unwrap_or_default().to_owned());
                if let Some(id) = &id
                    && (id.is_empty() || !ids.insert(id.clone()))
                {
                    violations.push(format!("{at}: call id {id:?} empty or repeated"));
                }
                open.push((id, name.to_owned()));
            }
            if let Some(response) = part.get("functionResponse") {
                if role != "user" {
                    violations.push(format!("{at}: functionResponse outside a user turn"));
                }
                if !response["response"].is_object() {
                    violations.push(format!("{at}: response is not an object"));
                }
                let name = response["name"].as_str().unwrap_or_default().to_owned();
                let id = response
                    .get("id")
                    .map(|id| id.as_str().unwrap_or_default().to_owned());
                answered.push((id, name));
            }
        }
        if role == "model" {
            if !answered.is_empty() {
                violations.push(format!("contents[{index}]: results in a model turn"));
            }
            continue;
        }
        // A user content: it answers every call of the model turn before,
        // or none of it when there were none.
        if open.is_empty() {
            if !answered.is_empty() {
                violations.push(format!("contents[{index}]: results that answer no call"));
            }
        } else {
            if answered.len() != open.len() {
                violations.push(format!(
                    "contents[{index}]: {} results for {} calls",
                    answered.len(),
                    open.len()
                ));
            }
            for (id, name) in &answered {
                let position = match id {
                    Some(id) => open
                        .iter()
                        .position(|(call, _)| call.as_deref() == Some(id)),
                    None => open
                        .iter()
                        .position(|(call, call_name)| call.is_none() && call_name == name),
                };
                match position {
                    Some(position) => {
                        let (_, call_name) = open.remove(position);
                        if call_name != *name {
                            violations.push(format!(
                                "contents[{index}]: result {id:?} named {name:?}, its call {call_name:?}"
                            ));
                        }
                    }
                    None => violations.push(format!(
                        "contents[{index}]: result {id:?} ({name}) answers no call of the turn"
                    )),
                }
            }
            open.clear();
        }
    }
    if !open.is_empty() {
        // The last model turn's calls are answered by the next request.
        let last_is_model = contents
            .last()
            .is_some_and(|content| content["role"] == "model");
        if !last_is_model {
            violations.push(format!("calls {open:?} have no result"));
        }
    }
    violations
}

/// Gemini's rules on a request's `tools`: function declarations with a
/// valid name and a `parametersJsonSchema` object.
pub fn gemini_tool_violations(tools: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    for (index, tool) in tools
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        for (position, declaration) in tool["functionDeclarations"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let at = format!("tools[{index}].functionDeclarations[{position}]");
            if !gemini_name_ok(declaration["name"].as_str().unwrap_or_default()) {
                violations.push(format!("{at}: name"));
            }
            if !declaration["parametersJsonSchema"].is_object() {
                violations.push(format!("{at}: no parametersJsonSchema object"));
            }
            if declaration.get("parameters").is_some() {
                violations.push(format!("{at}: both parameters and parametersJsonSchema"));
            }
            // "If a schema node has Schema.ref set, then only description
            // and default can be set alongside it."
            let mut nodes = Vec::new();
            schema_nodes(
                &declaration["parametersJsonSchema"],
                String::new(),
                &mut nodes,
            );
            for (pointer, node) in nodes {
                if let Some(map) = node.as_object()
                    && map.contains_key("$ref")
                    && map
                        .keys()
                        .any(|key| !matches!(key.as_str(), "$ref" | "description" | "default"))
                {
                    violations.push(format!(
                        "{at}.parametersJsonSchema{pointer}: `$ref` beside other keys"
                    ));
                }
            }
        }
    }
    violations
}

/// A keyword of a schema, `null` when absent.
fn field<'a>(map: &'a serde_json::Map<String, Value>, key: &str) -> &'a Value {
    map.get(key).unwrap_or(&Value::Null)
}

/// The sub-schemas of `schema` with their JSON Pointers: every schema a
/// keyword holds (`properties`, `items`, unions, definitions, an
/// `additionalProperties` schema, `prefixItems`).
fn schema_nodes<'a>(schema: &'a Value, at: String, nodes: &mut Vec<(String, &'a Value)>) {
    nodes.push((at.clone(), schema));
    let Some(map) = schema.as_object() else {
        return;
    };
    for key in ["properties", "$defs", "definitions"] {
        if let Some(children) = map.get(key).and_then(Value::as_object) {
            for (name, child) in children {
                schema_nodes(child, format!("{at}/{key}/{name}"), nodes);
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(children) = map.get(key).and_then(Value::as_array) {
            for (index, child) in children.iter().enumerate() {
                schema_nodes(child, format!("{at}/{key}/{index}"), nodes);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get(key).filter(|child| child.is_object()) {
            schema_nodes(child, format!("{at}/{key}"), nodes);
        }
    }
}

fn keywords_outside(
    map: &serde_json::Map<String, Value>,
    allowed: &[&str],
    at: &str,
    violations: &mut Vec<String>,
) {
    for key in map.keys() {
        if !allowed.contains(&key.as_str()) {
            violations.push(format!("{at}: keyword {key:?} is not supported"));
        }
    }
}

fn is_object_schema(map: &serde_json::Map<String, Value>) -> bool {
    map.get("type") == Some(&json!("object"))
        || field(map, "type")
            .as_array()
            .is_some_and(|types| types.contains(&json!("object")))
        || map.contains_key("properties")
}

const ANTHROPIC_SCHEMA_KEYWORDS: &[&str] = &[
    "type",
    "anyOf",
    "allOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "definitions",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "description",
    "title",
    "format",
    "minItems",
];

/// Anthropic's rules on a structured-output schema (see the module docs).
pub fn anthropic_output_schema_violations(schema: &Value) -> Vec<String> {
    const FORMATS: &[&str] = &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "uri",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    let mut violations = Vec::new();
    let mut nodes = Vec::new();
    schema_nodes(schema, String::new(), &mut nodes);
    for (at, node) in nodes {
        let Some(map) = node.as_object() else {
            violations.push(format!("{at}: a boolean schema"));
            continue;
        };
        keywords_outside(map, ANTHROPIC_SCHEMA_KEYWORDS, &at, &mut violations);
        if map.contains_key("$ref") {
            if map.keys().any(|key| key != "$ref" && key != "$defs") {
                violations.push(format!("{at}: keywords beside $ref"));
            }
            continue;
        }
        if !field(map, "type").is_string()
            && !map.contains_key("anyOf")
            && !map.contains_key("allOf")
        {
            violations.push(format!("{at}: no single type ({})", field(map, "type")));
        }
        if let Some(format) = map.get("format")
            && (field(map, "type") != "string" || !FORMATS.contains(&format.as_str().unwrap_or("")))
        {
            violations.push(format!("{at}: format {format} on {}", field(map, "type")));
        }
        if let Some(count) = map.get("minItems")
            && count != 0
            && count != 1
        {
            violations.push(format!("{at}: minItems {count}"));
        }
        if is_object_schema(map) && map.get("additionalProperties") != Some(&json!(false)) {
            violations.push(format!(
                "{at}: an object without additionalProperties: false"
            ));
        }
    }
    violations
}

const OPENAI_STRICT_KEYWORDS: &[&str] = &[
    "type",
    "anyOf",
    "enum",
    "const",
    "$ref",
    "$defs",
    "definitions",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// OpenAI strict mode's rules on a structured-output schema (see the module
/// docs).
pub fn openai_strict_schema_violations(schema: &Value) -> Vec<String> {
    const FORMATS: &[&str] = &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    let mut violations = Vec::new();
    if schema["type"] != "object" || schema.get("anyOf").is_some() {
        violations.push("the root is not an object schema".to_owned());
    }
    let mut nodes = Vec::new();
    schema_nodes(schema, String::new(), &mut nodes);
    for (at, node) in nodes {
        let Some(map) = node.as_object() else {
            violations.push(format!("{at}: a boolean schema"));
            continue;
        };
        keywords_outside(map, OPENAI_STRICT_KEYWORDS, &at, &mut violations);
        if map.contains_key("$ref") {
            if map.keys().any(|key| key != "$ref" && key != "$defs") {
                violations.push(format!("{at}: keywords beside $ref"));
            }
            continue;
        }
        if !map.contains_key("type") && !map.contains_key("anyOf") {
            violations.push(format!("{at}: no type"));
        }
        if let Some(format) = map.get("format")
            && !FORMATS.contains(&format.as_str().unwrap_or(""))
        {
            violations.push(format!("{at}: format {format}"));
        }
        if is_object_schema(map) {
            if map.get("additionalProperties") != Some(&json!(false)) {
                violations.push(format!(
                    "{at}: an object without additionalProperties: false"
                ));
            }
            let properties: HashSet<&str> = field(map, "properties")
                .as_object()
                .into_iter()
                .flat_map(|properties| properties.keys().map(String::as_str))
                .collect();
            let required: HashSet<&str> = field(map, "required")
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if properties != required {
                violations.push(format!(
                    "{at}: required {required:?} is not every property {properties:?}"
                ));
            }
        }
    }
    violations
}

const GEMINI_SCHEMA_KEYWORDS: &[&str] = &[
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

/// Gemini's rules on a `responseJsonSchema` (see the module docs).
pub fn gemini_response_schema_violations(schema: &Value) -> Vec<String> {
    let mut violations = Vec::new();
    let mut nodes = Vec::new();
    schema_nodes(schema, String::new(), &mut nodes);
    for (at, node) in nodes {
        let Some(map) = node.as_object() else {
            continue;
        };
        keywords_outside(map, GEMINI_SCHEMA_KEYWORDS, &at, &mut violations);
        if map.contains_key("$ref") && map.keys().any(|key| !key.starts_with('$')) {
            violations.push(format!("{at}: keywords beside $ref"));
        }
        if let Some(values) = map.get("enum").and_then(Value::as_array)
            && values
                .iter()
                .any(|value| !value.is_string() && !value.is_number())
        {
            violations.push(format!("{at}: enum of other than strings and numbers"));
        }
    }
    violations
}
