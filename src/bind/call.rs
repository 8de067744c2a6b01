//! One tool call against a binding: find the tool, read and check the
//! arguments, run the middleware chain. Shared by direct invocation and the
//! turn runner, so both refuse the same things the same way.

use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde_json::Value;

use crate::bind::{Binding, BoundTool, ToolCallError, ToolCallErrorKind};
use crate::conversation::ContentPart;
use crate::json::{self, MAX_DEPTH};
use crate::middleware::{
    ChainOutcome, Refusal, ToolFailed, ToolInvocation, ToolMiddleware, ToolPanicked, run_chain,
    run_tool,
};
use crate::panic::panic_message;
use crate::text::{Bounded, json_excerpt};
use crate::tool::{BoxError, CallContext, Tool, ToolOutput};

/// The index in `binding.tools` of the tool named `name` in mode `mode`.
pub(crate) fn lookup(binding: &Binding, mode: usize, name: &str) -> Result<usize, ToolCallError> {
    match binding.mode_tools(mode).by_name.get(name) {
        Some(&index) => Ok(index),
        None => {
            let available: Vec<&str> = binding.infos[mode]
                .iter()
                .map(|info| info.name.as_str())
                .collect();
            let available = if available.is_empty() {
                "none".to_owned()
            } else {
                available.join(", ")
            };
            Err(ToolCallError::new(
                ToolCallErrorKind::UnknownTool,
                name,
                format!("unknown tool `{name}`; available tools: {available}"),
            ))
        }
    }
}

/// Reads the model's arguments text: empty (or white space) counts as `{}`,
/// as providers send for tools without parameters; anything else must be a
/// JSON object.
pub(crate) fn parse_arguments(tool_name: &str, text: &str) -> Result<Value, ToolCallError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    let value: Value = serde_json::from_str(text).map_err(|error| {
        ToolCallError::new(
            ToolCallErrorKind::ArgumentsNotJson,
            tool_name,
            format!(
                "the arguments of `{tool_name}` are not valid JSON ({error}); send a JSON object"
            ),
        )
    })?;
    if !value.is_object() {
        return Err(not_object(tool_name, &value));
    }
    Ok(value)
}

fn not_object(tool_name: &str, value: &Value) -> ToolCallError {
    let got = json::type_name(value);
    ToolCallError::new(
        ToolCallErrorKind::ArgumentsNotObject,
        tool_name,
        format!("the arguments of `{tool_name}` must be a JSON object, got {got}"),
    )
}

/// `arguments` when they nest at most [`MAX_DEPTH`] levels; otherwise
/// [`ToolCallErrorKind::ArgumentsTooDeep`], and the arguments are dropped
/// without recursion. Arguments a model sends are parsed from JSON text,
/// which cannot nest deeper; a value built in code can, and the schema
/// check, the middlewares and the tool would all recurse into it.
pub(crate) fn refuse_too_deep(tool_name: &str, arguments: Value) -> Result<Value, ToolCallError> {
    json::within_depth(arguments).ok_or_else(|| {
        ToolCallError::new(
            ToolCallErrorKind::ArgumentsTooDeep,
            tool_name,
            format!("the arguments of `{tool_name}` nest deeper than {MAX_DEPTH} levels"),
        )
    })
}

/// `output` when every JSON value it holds nests at most [`MAX_DEPTH`]
/// levels; otherwise [`ToolCallErrorKind::OutputTooDeep`], and the output
/// is dropped without recursion. Turning an output into the model's text
/// (and copying or exporting the result) walks every value it holds.
pub(crate) fn refuse_deep_output(
    tool_name: &str,
    output: ToolOutput,
) -> Result<ToolOutput, ToolCallError> {
    let too_deep = match &output {
        ToolOutput::Json(value) => json::too_deep(value),
        ToolOutput::Content(parts) => parts
            .iter()
            .flat_map(ContentPart::json_values)
            .any(json::too_deep),
    };
    if !too_deep {
        return Ok(output);
    }
    match output {
        ToolOutput::Json(value) => json::drop_deep(value),
        ToolOutput::Content(parts) => parts
            .into_iter()
            .flat_map(ContentPart::into_json_values)
            .for_each(json::drop_deep),
    }
    Err(ToolCallError::new(
        ToolCallErrorKind::OutputTooDeep,
        tool_name,
        format!(
            "the output of `{tool_name}` nests deeper than {MAX_DEPTH} levels and cannot be shown"
        ),
    ))
}

/// How many schema violations one error message lists at most.
const MAX_LISTED_VIOLATIONS: usize = 3;

/// Checks `arguments` against the tool's compiled schema; the message names
/// each failing field (as a JSON pointer) and why.
pub(crate) fn check_arguments(tool: &BoundTool, arguments: &Value) -> Result<(), ToolCallError> {
    check_against(&tool.checked.name, &tool.checked.validator, arguments)
}

/// Checks `arguments` of the tool `name` against `validator`; the message
/// names each failing field (as a JSON pointer) and why.
pub(crate) fn check_against(
    name: &str,
    validator: &jsonschema::Validator,
    arguments: &Value,
) -> Result<(), ToolCallError> {
    if !arguments.is_object() {
        return Err(not_object(name, arguments));
    }
    // The quick yes/no first: most calls are valid, and only an invalid
    // one needs the walk that names every failing field.
    if validator.is_valid(arguments) {
        return Ok(());
    }
    let mut errors = validator.iter_errors(arguments);
    let violations: Vec<String> = errors
        .by_ref()
        .take(MAX_LISTED_VIOLATIONS)
        .map(|error| describe_violation(&error))
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    // Whether there are more, without describing them.
    let more = if errors.next().is_some() { "; ..." } else { "" };
    Err(ToolCallError::new(
        ToolCallErrorKind::InvalidArguments,
        name,
        format!(
            "invalid arguments for `{name}`: {}{more}",
            violations.join("; ")
        ),
    ))
}

/// Bytes of a violation's path (a JSON pointer into the arguments) that a
/// message quotes.
const PATH_BYTES: usize = 128;
/// Bytes of a violation's reason that a message quotes.
const REASON_BYTES: usize = 256;
/// Bytes of the failing value quoted inside the reason.
const VALUE_BYTES: usize = 48;

/// One violation as the model reads it: where (`arguments`, or the JSON
/// pointer of the failing field), then jsonschema's sentence for the
/// failing keyword with a short excerpt of the value in place of the
/// value (`` `/city`: 42 is not of type "string" ``).
///
/// Each piece is written into a bounded buffer that stops the writer once
/// full, so a 64 MB value, key or list of unexpected keys costs a few
/// hundred bytes here, not a copy of itself.
fn describe_violation(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let field = if path.is_empty() {
        "arguments".to_owned()
    } else {
        let mut field = Bounded::new(PATH_BYTES);
        let _ = field.write_str(path);
        format!("`{}`", field.finish())
    };
    let value = json_excerpt(error.instance(), VALUE_BYTES);
    let mut reason = Bounded::new(REASON_BYTES);
    // A full buffer stops the writer with an error: what fitted is kept.
    let _ = write!(reason, "{}", error.masked_with(value));
    format!("{field}: {}", reason.finish())
}

/// Invokes the tool named `name` of mode `mode` directly (no model, no
/// tool call id): the lookup, the checks and the run, in one future.
pub(crate) async fn invoke_named(
    binding: &Binding,
    mode: usize,
    name: &str,
    arguments: Value,
) -> Result<ToolOutput, ToolCallError> {
    let index = lookup(binding, mode, name)?;
    let (tool, arguments, context) = prepare_direct(binding, mode, index, arguments)?;
    let name = &binding.tools[index].checked.name;
    execute(tool, name, &binding.layout.middlewares, arguments, context).await
}

/// Invokes the tool at `index` of `binding.tools` directly, in mode
/// `mode`: the checks and the run, in one future.
pub(crate) async fn invoke_at(
    binding: &Binding,
    mode: usize,
    index: usize,
    arguments: Value,
) -> Result<ToolOutput, ToolCallError> {
    let (tool, arguments, context) = prepare_direct(binding, mode, index, arguments)?;
    let name = &binding.tools[index].checked.name;
    execute(tool, name, &binding.layout.middlewares, arguments, context).await
}

/// What a direct invocation runs: the tool at `index`, its checked
/// arguments and its context. Plain code, not a future of its own: the
/// invocation's future then holds no nested future for it.
fn prepare_direct(
    binding: &Binding,
    mode: usize,
    index: usize,
    arguments: Value,
) -> Result<(&dyn Tool, Value, CallContext), ToolCallError> {
    let tool = &binding.tools[index];
    let arguments = refuse_too_deep(&tool.checked.name, arguments)?;
    check_arguments(tool, &arguments)?;
    let context = binding.context(mode, Arc::clone(&tool.checked), String::new(), None);
    Ok((tool.tool.as_ref(), arguments, context))
}

/// Runs checked arguments through the middleware chain to `tool`, named
/// `name`.
///
/// Without middlewares the tool runs under its own panic boundary only:
/// no middleware can panic, so the chain's second boundary, its
/// [`Next`](crate::middleware::Next) and its wrapping of the tool's error
/// in [`ToolFailed`] would be work with nothing to show for it. The
/// resulting [`ToolCallError`] is the same either way.
pub(crate) async fn execute(
    tool: &dyn Tool,
    name: &str,
    middlewares: &[Arc<dyn ToolMiddleware>],
    arguments: Value,
    context: CallContext,
) -> Result<ToolOutput, ToolCallError> {
    if middlewares.is_empty() {
        return match run_tool(tool, arguments, &context).await {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(source)) => Err(tool_failed(name, source)),
            Err(panic) => {
                let message = panic_message(panic.as_ref());
                // A payload whose `Drop` panics must not escape either: the
                // chain's outer boundary would have caught it.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(panic)));
                Err(ToolCallError::new(
                    ToolCallErrorKind::ToolPanicked,
                    name,
                    format!("the tool `{name}` panicked: {message}"),
                ))
            }
        };
    }
    match run_chain(tool, middlewares, ToolInvocation { arguments, context }).await {
        ChainOutcome::Output(output) => Ok(output),
        ChainOutcome::Failed(error) => Err(failed(name, error)),
        ChainOutcome::MiddlewarePanicked(message) => Err(ToolCallError::new(
            ToolCallErrorKind::MiddlewarePanicked,
            name,
            format!("the call to `{name}` failed: a middleware panicked: {message}"),
        )),
    }
}

/// The tool `name` returned `source`.
fn tool_failed(name: &str, source: BoxError) -> ToolCallError {
    ToolCallError::new(
        ToolCallErrorKind::ToolFailed,
        name,
        format!("the tool `{name}` failed: {source}"),
    )
    .caused_by(source)
}

/// Labels the chain's error by who returned it: the tool (wrapped by the
/// chain's end in [`ToolFailed`] or [`ToolPanicked`]), a middleware
/// refusing the call ([`Refusal`]), or a middleware failing.
fn failed(name: &str, error: BoxError) -> ToolCallError {
    let error = match error.downcast::<ToolFailed>() {
        Ok(failed) => return tool_failed(name, failed.into_source()),
        Err(error) => error,
    };
    if let Some(panic) = error.downcast_ref::<ToolPanicked>() {
        return ToolCallError::new(
            ToolCallErrorKind::ToolPanicked,
            name,
            format!("the tool `{name}` panicked: {}", panic.message),
        );
    }
    // A refusal counts wherever it is in the chain: an outer middleware
    // may wrap an inner one's refusal in an error of its own.
    if let Some(reason) = refusal_reason(error.as_ref()) {
        return ToolCallError::new(
            ToolCallErrorKind::Refused,
            name,
            format!("the call to `{name}` was refused: {reason}"),
        )
        .caused_by(error);
    }
    ToolCallError::new(
        ToolCallErrorKind::MiddlewareFailed,
        name,
        format!("the call to `{name}` failed in a middleware: {error}"),
    )
    .caused_by(error)
}

/// The reason of the first [`Refusal`] in `error`'s source chain.
fn refusal_reason(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut cause = Some(error);
    while let Some(current) = cause {
        if let Some(refusal) = current.downcast_ref::<Refusal>() {
            return Some(refusal.reason.clone());
        }
        cause = current.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(schema: Value, arguments: Value) -> String {
        let validator = jsonschema::validator_for(&schema).unwrap();
        check_against("t", &validator, &arguments)
            .unwrap_err()
            .message
    }

    #[test]
    fn a_violation_names_the_path_the_keyword_and_a_short_value() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "integer"}}});
        assert_eq!(
            message(schema.clone(), json!({"text": "short"})),
            r#"invalid arguments for `t`: `/text`: "short" is not of type "integer""#
        );
        let long = "y".repeat(10_000);
        assert_eq!(
            message(schema, json!({ "text": long })),
            format!(
                r#"invalid arguments for `t`: `/text`: "{}... is not of type "integer""#,
                "y".repeat(VALUE_BYTES - 4)
            )
        );
    }

    #[test]
    fn long_paths_and_reasons_are_cut_where_they_are_written() {
        let key = "k".repeat(10_000);
        let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        let text = message(schema, json!({ key.clone(): "x" }));
        assert_eq!(
            text,
            format!(
                r#"invalid arguments for `t`: `/{}...`: "x" is not of type "integer""#,
                "k".repeat(PATH_BYTES - 4)
            )
        );
        let schema = json!({"type": "object", "properties": {}, "additionalProperties": false});
        let text = message(schema, json!({ key: 1 }));
        assert!(
            text.starts_with(
                "invalid arguments for `t`: arguments: Additional properties are not allowed ('kkk"
            ),
            "{text}"
        );
        assert!(text.ends_with("kkk..."), "{text}");
        assert_eq!(
            text.len(),
            "invalid arguments for `t`: arguments: ".len() + REASON_BYTES
        );
    }

    #[test]
    fn more_than_three_violations_end_with_an_ellipsis() {
        let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        let text = message(schema, json!({"a": "x", "b": "x", "c": "x", "d": "x"}));
        assert_eq!(text.matches("is not of type").count(), 3);
        assert!(text.ends_with("; ..."), "{text}");
    }
}
