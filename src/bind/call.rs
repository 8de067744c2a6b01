//! One tool call against a binding: find the tool, read and check the
//! arguments, run the middleware chain. Shared by direct invocation and the
//! turn runner, so both refuse the same things the same way.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::bind::{Binding, BoundTool};
use crate::middleware::{ChainOutcome, ToolInvocation, ToolMiddleware, run_chain};
use crate::tool::{BoxError, CallContext, Tool};

/// Why a tool call produced no output. In a turn
/// each becomes a model-facing error result and the turn goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolCallErrorKind {
    /// No tool of that name in the current mode (a tool of another mode is
    /// unknown too).
    UnknownTool,
    /// The arguments text is not JSON (e.g. truncated).
    ArgumentsNotJson,
    /// The arguments are JSON but not an object (`null`, `[1]`, `"x"`).
    ArgumentsNotObject,
    /// The arguments fail the tool's JSON Schema.
    InvalidArguments,
    /// The tool (or a middleware) returned an error; the source is it.
    ToolFailed,
    /// The tool panicked.
    ToolPanicked,
    /// A middleware panicked.
    MiddlewarePanicked,
    /// The response that asked for the call was cut off by the output token
    /// limit (finish reason `length` / `max_tokens`), so the call did not
    /// run: its arguments may be incomplete.
    CutOff,
}

/// A tool call that produced no output.
///
/// `message` is the short sentence the model is shown (the turn runner
/// cleans it of control characters and bounds it); `source()` gives the
/// tool's own error for `ToolFailed`.
#[derive(Debug)]
pub struct ToolCallError {
    /// What went wrong.
    pub kind: ToolCallErrorKind,
    /// The tool name the call asked for.
    pub tool_name: String,
    /// The model-facing sentence.
    pub message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl ToolCallError {
    pub(crate) fn new(kind: ToolCallErrorKind, tool_name: &str, message: String) -> Self {
        Self {
            kind,
            tool_name: tool_name.to_owned(),
            message,
            source: None,
        }
    }
}

impl fmt::Display for ToolCallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolCallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}

/// The tool named `name` in mode `mode`.
pub(crate) fn lookup<'b>(
    binding: &'b Binding,
    mode: usize,
    name: &str,
) -> Result<&'b BoundTool, ToolCallError> {
    let data = &binding.modes[mode];
    match data.by_name.get(name) {
        Some(&index) => Ok(&binding.tools[index]),
        None => {
            let available: Vec<&str> = data.infos.iter().map(|info| info.name.as_str()).collect();
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
    let got = crate::json::type_name(value);
    ToolCallError::new(
        ToolCallErrorKind::ArgumentsNotObject,
        tool_name,
        format!("the arguments of `{tool_name}` must be a JSON object, got {got}"),
    )
}

/// How many schema violations one error message lists at most.
const MAX_LISTED_VIOLATIONS: usize = 3;

/// Checks `arguments` against the tool's compiled schema; the message names
/// each failing field (as a JSON pointer) and why.
pub(crate) fn check_arguments(tool: &BoundTool, arguments: &Value) -> Result<(), ToolCallError> {
    let name = tool.info.name.as_str();
    if !arguments.is_object() {
        return Err(not_object(name, arguments));
    }
    let violations: Vec<String> = tool
        .validator
        .iter_errors(arguments)
        .take(MAX_LISTED_VIOLATIONS + 1)
        .map(|error| {
            let path = error.instance_path().to_string();
            let field = if path.is_empty() {
                "arguments".to_owned()
            } else {
                format!("`{path}`")
            };
            format!("{field}: {error}")
        })
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    let more = if violations.len() > MAX_LISTED_VIOLATIONS {
        "; ..."
    } else {
        ""
    };
    Err(ToolCallError::new(
        ToolCallErrorKind::InvalidArguments,
        name,
        format!(
            "invalid arguments for `{name}`: {}{more}",
            violations[..violations.len().min(MAX_LISTED_VIOLATIONS)].join("; ")
        ),
    ))
}

/// Runs checked arguments through the middleware chain to the tool.
pub(crate) async fn execute(
    tool: &dyn Tool,
    middlewares: &[Arc<dyn ToolMiddleware>],
    arguments: Value,
    context: CallContext,
) -> Result<Value, ToolCallError> {
    let name = context.tool_name.clone();
    match run_chain(tool, middlewares, ToolInvocation { arguments, context }).await {
        ChainOutcome::Output(output) => Ok(output),
        ChainOutcome::Failed(error) => Err(failed(&name, error)),
        ChainOutcome::MiddlewarePanicked(message) => Err(ToolCallError::new(
            ToolCallErrorKind::MiddlewarePanicked,
            &name,
            format!("the call to `{name}` failed: a middleware panicked: {message}"),
        )),
    }
}

fn failed(name: &str, error: BoxError) -> ToolCallError {
    if let Some(panic) = error.downcast_ref::<crate::middleware::ToolPanicked>() {
        return ToolCallError::new(
            ToolCallErrorKind::ToolPanicked,
            name,
            format!("the tool `{name}` panicked: {}", panic.message),
        );
    }
    let mut error_out = ToolCallError::new(
        ToolCallErrorKind::ToolFailed,
        name,
        format!("the tool `{name}` failed: {error}"),
    );
    error_out.source = Some(Arc::from(error));
    error_out
}
