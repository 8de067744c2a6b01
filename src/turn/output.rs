//! Structured output: a turn that ends in a value, through the reserved
//! control tool [`STRUCTURED_OUTPUT_TOOL_NAME`], and the [`TurnOptions`] that
//! ask for it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use crate::json;
use crate::tool::schema::{self, SchemaProblem};
use crate::tool::{STRUCTURED_OUTPUT_TOOL_NAME, ToolInfo, schema_of};
use crate::turn::TurnEvents;

/// How many plain-text answers (in [`OutputMode::Native`], answers that are
/// not valid output) a turn that asks for output answers with an
/// instruction before it fails with
/// [`TurnError::NoOutput`](crate::turn::TurnError::NoOutput).
pub const DEFAULT_OUTPUT_RETRIES: u32 = 2;

/// The instruction a plain-text answer gets while the turn asks for output.
pub const OUTPUT_INSTRUCTION: &str = "Do not answer in text: call the `structured_output` tool with your final answer as its arguments.";

/// The instruction a final answer gets in [`OutputMode::Native`] when its
/// text is not JSON that passes the output's schema.
pub const NATIVE_OUTPUT_INSTRUCTION: &str =
    "Answer with only the JSON value the output schema asks for: no other text, no code fence.";

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
/// use agent_loop::turn::Output;
/// use serde_json::json;
///
/// let labels = Output::from_schema(
///     "labels",
///     "The labels of the ticket.",
///     json!({"type": "array", "items": {"type": "string"}}),
/// )?;
/// assert!(labels.is_wrapped());
/// assert_eq!(labels.info().name, "structured_output");
/// # Ok::<_, agent_loop::turn::OutputError>(())
/// ```
#[derive(Clone)]
pub struct Output {
    name: String,
    info: ToolInfo,
    wrapped: bool,
    validator: Arc<jsonschema::Validator>,
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
                return Err(OutputError { kind, name });
            }
        };
        let tool_description = if description.trim().is_empty() {
            format!("Give your final answer ({name}) by calling this tool; the turn ends with it.")
        } else {
            format!(
                "Give your final answer ({name}) by calling this tool; the turn ends with it. {description}"
            )
        };
        Ok(Self {
            info: ToolInfo::new(STRUCTURED_OUTPUT_TOOL_NAME, tool_description, parameters),
            name,
            wrapped,
            validator,
        })
    }

    /// The output's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool the model is offered: named [`STRUCTURED_OUTPUT_TOOL_NAME`],
    /// its parameters the (wrapped) schema.
    pub fn info(&self) -> &ToolInfo {
        &self.info
    }

    /// `true` when the schema is not an object schema and was wrapped in a
    /// `value` property.
    pub fn is_wrapped(&self) -> bool {
        self.wrapped
    }

    /// The JSON Schema the model's answer must pass: the (wrapped) schema,
    /// as offered in the tool's parameters and, in [`OutputMode::Native`],
    /// sent to the provider.
    pub fn schema(&self) -> &Value {
        &self.info.parameters
    }

    pub(crate) fn validator(&self) -> &Arc<jsonschema::Validator> {
        &self.validator
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
}

/// Why an output schema cannot be used: the [`kind`](OutputError::kind) of
/// an [`OutputError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum OutputErrorKind {
    /// Not a valid JSON Schema (checked against its meta-schema).
    #[error("the schema is not a valid JSON Schema")]
    NotASchema,
    /// Objects and arrays nest deeper than 128 levels.
    #[error("the schema nests deeper than 128 levels")]
    TooDeep,
    /// A valid JSON Schema the validator cannot compile (an unresolvable
    /// `$ref`, say).
    #[error("the schema cannot be compiled (an unresolvable reference?)")]
    DoesNotCompile,
}

/// What to do with the other calls of a batch holding a valid
/// [`STRUCTURED_OUTPUT_TOOL_NAME`] call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MixedBatch {
    /// End the turn at once: the other calls never run and are answered
    /// "not run: the turn has its output". The default.
    #[default]
    EndEarly,
    /// Run every other call of the batch first, then end the turn.
    RunAll,
}

/// How a turn asks the model for its [`Output`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputMode {
    /// Through the control tool [`STRUCTURED_OUTPUT_TOOL_NAME`]: works with
    /// every model that calls tools. The default.
    #[default]
    Tool,
    /// Through the provider's own structured-output setting: the control
    /// tool is not offered, the output is passed to the model in
    /// [`ModelRequest::output`](crate::turn::ModelRequest::output), and the
    /// final answer's text is the output (JSON that passes the schema; a
    /// wrapped schema's answer is `{"value": ...}`). A model that cannot do
    /// native output may ignore it: its answers are then checked the same
    /// way.
    Native,
}

/// Options of one turn, for
/// [`run_turn_with`](crate::Definition::run_turn_with): the output it must
/// end in, and where its events go.
///
/// ```
/// use agent_loop::turn::{MixedBatch, Output, TurnEvents, TurnOptions};
///
/// #[derive(schemars::JsonSchema, serde::Deserialize)]
/// struct Verdict { spam: bool }
///
/// let (events, _receiver) = TurnEvents::channel();
/// let options = TurnOptions::new()
///     .output(Output::typed::<Verdict>()?)
///     .output_retries(1)
///     .mixed_batch(MixedBatch::RunAll)
///     .events(&events);
/// # Ok::<_, agent_loop::turn::OutputError>(())
/// ```
#[derive(Clone, Debug)]
pub struct TurnOptions<'a> {
    pub(crate) output: Option<Output>,
    pub(crate) output_retries: u32,
    pub(crate) mixed_batch: MixedBatch,
    pub(crate) output_mode: OutputMode,
    pub(crate) events: Option<&'a TurnEvents>,
}

impl Default for TurnOptions<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> TurnOptions<'a> {
    /// No output required, no events: what
    /// [`run_turn`](crate::Definition::run_turn) uses.
    pub fn new() -> Self {
        Self {
            output: None,
            output_retries: DEFAULT_OUTPUT_RETRIES,
            mixed_batch: MixedBatch::default(),
            output_mode: OutputMode::default(),
            events: None,
        }
    }

    /// The turn must end in `output`. Replaces an earlier output.
    pub fn output(mut self, output: Output) -> Self {
        self.output = Some(output);
        self
    }

    /// How many plain-text answers get an instruction to call
    /// [`STRUCTURED_OUTPUT_TOOL_NAME`] (in [`OutputMode::Native`]: answers
    /// that are not valid output get [`NATIVE_OUTPUT_INSTRUCTION`]) before
    /// the turn fails
    /// ([`DEFAULT_OUTPUT_RETRIES`] unless set; `0` fails at the first).
    pub fn output_retries(mut self, retries: u32) -> Self {
        self.output_retries = retries;
        self
    }

    /// What to do with the other calls of a batch that holds the output
    /// ([`MixedBatch::EndEarly`] unless set).
    pub fn mixed_batch(mut self, mixed_batch: MixedBatch) -> Self {
        self.mixed_batch = mixed_batch;
        self
    }

    /// How the model is asked for the output ([`OutputMode::Tool`] unless
    /// set).
    pub fn output_mode(mut self, mode: OutputMode) -> Self {
        self.output_mode = mode;
        self
    }

    /// [`OutputMode::Native`] when `native`, else [`OutputMode::Tool`].
    pub fn native_output(self, native: bool) -> Self {
        self.output_mode(if native {
            OutputMode::Native
        } else {
            OutputMode::Tool
        })
    }

    /// Sends the turn's events to `events`.
    pub fn events(mut self, events: &'a TurnEvents) -> Self {
        self.events = Some(events);
        self
    }
}
