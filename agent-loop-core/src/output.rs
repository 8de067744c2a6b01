//! The structured output a turn must end in ([`Output`]): a JSON Schema
//! the model's final answer must pass, offered as the reserved control
//! tool or as the provider's own structured-output setting, and
//! [`OutputError`] for a schema that cannot be used.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use crate::bind::BoundTool;
use crate::support::json::{self, TooDeep};
use crate::tool::checked::CheckedInfo;
use crate::tool::schema::{self, SchemaProblem};
use crate::tool::{
    BoxError, CallContext, Handler, STRUCTURED_OUTPUT_TOOL_NAME, ToolInfo, ToolOutput, schema_of,
};

/// The output a turn must end in: a JSON Schema the model's final answer
/// must pass, offered to the model as the tool
/// [`STRUCTURED_OUTPUT_TOOL_NAME`].
///
/// An object schema (`"type": "object"` at the top) is offered as it is.
/// Any other schema (a string, an array, an enum, a `oneOf`) is wrapped in
/// `{"type": "object", "properties": {"value": <schema>}, "required":
/// ["value"]}`, since providers take only object arguments, and the turn's
/// value is unwrapped again (the `value` property). `$defs` and
/// `definitions` move to the wrapper, so `#/$defs/..` references still
/// resolve.
///
/// ```
/// use agent_loop_core::turn::Output;
/// use serde_json::json;
///
/// let labels = Output::from_schema(
///     "labels",
///     "The labels of the ticket.",
///     json!({"type": "array", "items": {"type": "string"}}),
/// )?;
/// assert!(labels.is_wrapped());
/// assert_eq!(labels.info().name, "structured_output");
/// # Ok::<_, agent_loop_core::turn::OutputError>(())
/// ```
#[derive(Clone)]
pub struct Output {
    name: String,
    wrapped: bool,
    /// The control tool: its checked info holds the tool's info and the
    /// compiled schema, and a turn in tool mode offers it as it is.
    pub(crate) control: BoundTool,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output")
            .field("name", &self.name)
            .field("wrapped", &self.wrapped)
            .finish_non_exhaustive()
    }
}

impl Output {
    /// The output of type `T`, its schema from
    /// [`tool::schema_of`](crate::tool::schema_of) and its description from
    /// the type's doc comment (or a generic sentence). Read the value with
    /// [`TurnOutcome::output_as`](crate::turn::TurnOutcome::output_as).
    ///
    /// Errors: as [`from_schema`](Self::from_schema).
    pub fn typed<T: JsonSchema>() -> Result<Self, OutputError> {
        let schema = schema_of::<T>();
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("The final answer, as a {}.", T::schema_name()));
        Self::from_schema(T::schema_name(), description, schema)
    }

    /// An output declared from data: a `name` (the output's, used in the
    /// tool's description; the tool itself is always named
    /// [`STRUCTURED_OUTPUT_TOOL_NAME`]), a `description` of what to give,
    /// and a JSON Schema.
    ///
    /// Errors: [`OutputError`] when `schema` is not a valid JSON Schema,
    /// nests deeper than 128 levels, or cannot be compiled. The error never
    /// repeats the schema's text, which may hold secrets.
    pub fn from_schema(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
    ) -> Result<Self, OutputError> {
        let name = name.into();
        let description = description.into();
        let is_object = schema.get("type") == Some(&Value::String("object".into()));
        let (parameters, wrapped) = if is_object {
            (schema, false)
        } else {
            (wrap(schema), true)
        };
        let validator = match schema::compile(&parameters) {
            Ok(validator) => validator,
            Err(problem) => {
                let kind = match problem {
                    SchemaProblem::NotObject | SchemaProblem::NotASchema(_) => {
                        OutputErrorKind::NotASchema
                    }
                    SchemaProblem::TooDeep => {
                        // Taken by value: dropped here without recursion.
                        json::drop_deep(parameters);
                        OutputErrorKind::TooDeep
                    }
                    SchemaProblem::DoesNotCompile(_) => OutputErrorKind::DoesNotCompile,
                };
                let source = (kind == OutputErrorKind::TooDeep).then(TooDeep::new);
                return Err(OutputError { kind, name, source });
            }
        };
        let tool_description = if description.trim().is_empty() {
            format!("Give your final answer ({name}) by calling this tool; the turn ends with it.")
        } else {
            format!(
                "Give your final answer ({name}) by calling this tool; the turn ends with it. {description}"
            )
        };
        let info = Arc::new(ToolInfo::new(
            STRUCTURED_OUTPUT_TOOL_NAME,
            tool_description,
            parameters,
        ));
        let control = BoundTool::new(
            Arc::new(ControlHandler),
            Arc::new(CheckedInfo::compiled(info, validator)),
        );
        Ok(Self {
            name,
            wrapped,
            control,
        })
    }

    /// The output's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool the model is offered: named [`STRUCTURED_OUTPUT_TOOL_NAME`],
    /// its parameters the (wrapped) schema.
    pub fn info(&self) -> &ToolInfo {
        self.control.info()
    }

    /// `true` when the schema is not an object schema and was wrapped in a
    /// `value` property.
    pub fn is_wrapped(&self) -> bool {
        self.wrapped
    }

    /// The JSON Schema the model's answer must pass: the full (wrapped)
    /// schema, as offered in the tool's parameters, and the one every
    /// answer is checked against. In [`OutputMode::Native`](crate::turn::OutputMode::Native) a provider is
    /// sent the subset it accepts instead, which the provider's format makes
    /// from this one (`agent_loop::wire::output_schema`: `anthropic`,
    /// `openai_strict`, `gemini`); OpenAI's non-strict mode and other
    /// servers get this one.
    pub fn schema(&self) -> &Value {
        &self.info().parameters
    }

    /// The output a native-mode answer holds: the JSON in its text (see
    /// [`json_in_answer`]) passing the schema, unwrapped; `None` when it is
    /// not valid output. A value that fails only because it holds `null`
    /// for properties the schema does not require (what OpenAI's strict
    /// mode answers for them) passes with those properties left out.
    pub(crate) fn value_in_answer(&self, text: &str) -> Option<Value> {
        let mut value: Value = json_in_answer(text)?;
        let validator = self.control.validator();
        if !validator.is_valid(&value) {
            without_optional_nulls(&mut value, self.schema());
            if !validator.is_valid(&value) {
                return None;
            }
        }
        Some(self.unwrap_value(value))
    }

    /// The turn's value from the control call's (checked) arguments.
    pub(crate) fn unwrap_value(&self, mut arguments: Value) -> Value {
        if self.wrapped {
            arguments
                .get_mut("value")
                .map(Value::take)
                .unwrap_or(Value::Null)
        } else {
            arguments
        }
    }
}

/// `value` with the `null`s removed of every object property the full
/// `schema` does not require: how an answer to an
/// OpenAI strict-mode schema (every property required, the optional ones
/// nullable) reads against the full schema, where such a property was
/// left out. References (`#/...`) are followed within `schema`; a
/// recursive one is followed as deep as the value goes.
fn without_optional_nulls(value: &mut Value, schema: &Value) {
    strip_nulls(value, schema, schema, 0);
}

/// The most levels of the value [`without_optional_nulls`] walks: the
/// crate refuses values deeper than 128 levels, and a reference cycle
/// could otherwise walk the same level again and again.
const STRIP_DEPTH: usize = 256;

fn strip_nulls(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    if depth > STRIP_DEPTH {
        return;
    }
    let Value::Object(rules) = schema else {
        return;
    };
    if let Some(target) = rules
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| json::resolve_local_reference(root, reference))
    {
        strip_nulls(value, target, root, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for branch in rules
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            strip_nulls(value, branch, root, depth + 1);
        }
    }
    match value {
        Value::Object(fields) => {
            let Some(properties) = rules.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required = |name: &str| {
                rules
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|required| required.iter().any(|r| r == name))
            };
            fields.retain(|name, field| {
                !(field.is_null() && properties.contains_key(name) && !required(name))
            });
            for (name, field) in fields.iter_mut() {
                if let Some(property) = properties.get(name) {
                    strip_nulls(field, property, root, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = rules.get("items") {
                for element in items {
                    strip_nulls(element, item, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The JSON value of a native-mode answer's text, as models write it:
///
/// - the text itself, trimmed;
/// - after a reasoning block: `<think>…</think>` at the start (reasoning
///   models served without a reasoning parser, DeepSeek-R1 and Qwen3 on
///   vLLM, SGLang or llama.cpp), or the text after the first `</think>`
///   when the opening tag was part of the prompt;
/// - the text is one code fence (its first line a language tag, if any);
/// - or prose around exactly one fenced block tagged `json` or untagged.
///
/// Anything else is `None`: no JSON, two fenced blocks (which one would be
/// a guess), an unclosed `<think>`, a block in another language.
fn json_in_answer(text: &str) -> Option<Value> {
    let mut text = text.trim();
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    if let Some(reasoning) = text.strip_prefix("<think>") {
        let (_, after) = reasoning.split_once("</think>")?;
        text = after.trim();
    } else if let Some((_, after)) = text.split_once("</think>") {
        text = after.trim();
    }
    if let Some(fenced) = text.strip_prefix("```").and_then(|t| t.strip_suffix("```")) {
        // The fence's first line is its language tag (`json`), if any.
        let body = fenced.split_once('\n').map_or(fenced, |(_, body)| body);
        if let Ok(value) = serde_json::from_str(body.trim()) {
            return Some(value);
        }
    }
    if let Ok(value) = serde_json::from_str(text) {
        return Some(value);
    }
    serde_json::from_str(&one_fenced_block(text)?).ok()
}

/// The body of the only fenced block (lines from an opening ```` ``` ````
/// line to a closing one) in `text`, when it is tagged `json` or not
/// tagged; `None` when there is no such block or more than one block.
fn one_fenced_block(text: &str) -> Option<String> {
    let mut blocks: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut open: Option<(&str, Vec<&str>)> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        match open.take() {
            None => {
                if let Some(tag) = trimmed.strip_prefix("```") {
                    open = Some((tag.trim(), Vec::new()));
                }
            }
            Some((tag, mut body)) => {
                if trimmed == "```" {
                    blocks.push((tag, body));
                } else {
                    body.push(line);
                    open = Some((tag, body));
                }
            }
        }
    }
    if open.is_some() {
        return None;
    }
    match blocks.as_slice() {
        [(tag, body)] if tag.is_empty() || tag.eq_ignore_ascii_case("json") => {
            Some(body.join("\n"))
        }
        _ => None,
    }
}

/// The control tool's handler: its output is its (checked) arguments.
struct ControlHandler;

#[async_trait]
impl Handler for ControlHandler {
    async fn invoke(
        &self,
        arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Ok(arguments.into())
    }
}

/// Wraps a non-object schema in an object with one required `value`
/// property; definitions and the meta-schema move to the top level.
fn wrap(schema: Value) -> Value {
    let mut outer = Map::new();
    let inner = match schema {
        Value::Object(mut map) => {
            for key in ["$defs", "definitions", "$schema"] {
                if let Some(moved) = map.remove(key) {
                    outer.insert(key.to_owned(), moved);
                }
            }
            Value::Object(map)
        }
        other => other,
    };
    outer.insert("type".into(), json!("object"));
    // Moved, not `json!`-ed: `json!` would serialise (copy) the schema,
    // which recurses once per level of it.
    let properties = Map::from_iter([("value".to_owned(), inner)]);
    outer.insert("properties".into(), Value::Object(properties));
    outer.insert("required".into(), json!(["value"]));
    Value::Object(outer)
}

/// An output schema that cannot be used: returned by [`Output::typed`] and
/// [`Output::from_schema`]. Its `Display` names the output but never
/// repeats the schema.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("output `{name}`: {kind}")]
#[non_exhaustive]
pub struct OutputError {
    /// What is wrong.
    pub kind: OutputErrorKind,
    /// The output's name.
    pub name: String,
    /// The depth rule, for [`OutputErrorKind::TooDeep`].
    source: Option<TooDeep>,
}

/// Why an output schema cannot be used: the [`kind`](OutputError::kind) of
/// an [`OutputError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum OutputErrorKind {
    /// Not a valid JSON Schema (checked against its meta-schema).
    #[error("the schema is not a valid JSON Schema")]
    NotASchema,
    /// Objects and arrays nest deeper than 128 levels; the source is a
    /// [`TooDeep`].
    #[error("the schema cannot be used")]
    TooDeep,
    /// A valid JSON Schema the validator cannot compile (an unresolvable
    /// `$ref`, say).
    #[error("the schema cannot be compiled (an unresolvable reference?)")]
    DoesNotCompile,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_read_after_a_think_block_and_from_one_fenced_block_after_prose() {
        let cases = [
            (r#"{"a": 1}"#, json!({"a": 1})),
            ("  [1, 2]\n", json!([1, 2])),
            ("```json\n{\"a\": 1}\n```", json!({"a": 1})),
            ("```\n{\"a\": 1}\n```", json!({"a": 1})),
            (
                "<think>\nThe total is $42, so 4200 cents.\n</think>\n\n{\"total_cents\": 4200}",
                json!({"total_cents": 4200}),
            ),
            (
                // Served without the opening tag (it was in the prompt).
                "The user wants the total.\n</think>\n{\"total_cents\": 4200}",
                json!({"total_cents": 4200}),
            ),
            (
                "<think>Check the {braces}.</think>```json\n{\"a\": [1]}\n```",
                json!({"a": [1]}),
            ),
            (
                "Here is the invoice you asked for:\n\n```json\n{\n  \"number\": \"A-17\"\n}\n```\n\nLet me know if anything is missing.",
                json!({"number": "A-17"}),
            ),
            (
                "<think>ok</think>\nSure:\n```JSON\n{\"b\": true}\n```",
                json!({"b": true}),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(json_in_answer(text), Some(expected), "{text:?}");
        }
    }

    #[test]
    fn malformed_answers_are_still_refused() {
        let cases = [
            "It is invoice A-17, for $42.",
            "<think>I will answer {\"a\": 1}",
            "<think>done</think> It is A-17.",
            "Either:\n```json\n{\"a\": 1}\n```\nor:\n```json\n{\"a\": 2}\n```",
            "In Python:\n```python\n{\"a\": 1}\n```",
            "Here:\n```json\n{\"a\": 1}\n",
            "Here:\n```json\n{\"a\": 1,}\n```",
            "{\"a\": 1} and some more text",
        ];
        for text in cases {
            assert_eq!(json_in_answer(text), None, "{text:?}");
        }
    }

    #[test]
    fn nulls_of_optional_properties_go_and_required_ones_stay() {
        let schema = json!({
            "type": "object",
            "properties": {
                "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } },
                "customer": { "type": "string" },
                "note": { "type": "string" }
            },
            "required": ["customer"],
            "$defs": {
                "Line": {
                    "type": "object",
                    "properties": { "sku": { "type": "string" }, "note": { "type": "string" } },
                    "required": ["sku"]
                }
            }
        });
        let mut value = json!({
            "customer": null,
            "note": null,
            "unknown": null,
            "lines": [{ "sku": "X", "note": null }, { "sku": null }]
        });
        without_optional_nulls(&mut value, &schema);
        assert_eq!(
            value,
            json!({ "customer": null, "unknown": null, "lines": [{ "sku": "X" }, { "sku": null }] })
        );
    }
}
