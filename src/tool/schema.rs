//! A tool's argument schema: the checks its `parameters` must pass, and the
//! compiled validator every call's arguments are checked against.
//!
//! The checks live here, in one place, for every kind of tool definition;
//! [`checked`](super::checked) keeps their results so that bindings share
//! them.

use std::sync::Arc;

use serde_json::Value;

use crate::support::json;
use crate::tool::ToolInfo;

/// Why a tool's `parameters` cannot be used, in the order they are checked.
#[derive(Debug)]
pub(crate) enum SchemaProblem {
    /// The top level is not `"type": "object"`: OpenAI, Anthropic and MCP
    /// all require an object schema for a tool's arguments.
    NotObject,
    /// Objects and arrays nest deeper than [`json::MAX_DEPTH`] levels, in
    /// the parameters or in a value of the extras.
    TooDeep,
    /// Not a valid JSON Schema (checked against its meta-schema).
    NotASchema(jsonschema::ValidationError<'static>),
    /// A valid JSON Schema that the validator cannot compile (an
    /// unresolvable `$ref`, say).
    DoesNotCompile(jsonschema::ValidationError<'static>),
}

/// Checks `parameters` and compiles them into a validator.
///
/// Errors: the first [`SchemaProblem`] found.
pub(crate) fn compile(parameters: &Value) -> Result<Arc<jsonschema::Validator>, SchemaProblem> {
    if parameters.get("type") != Some(&Value::String("object".into())) {
        return Err(SchemaProblem::NotObject);
    }
    // Before the schema checker, which recurses per level.
    if json::too_deep(parameters) {
        return Err(SchemaProblem::TooDeep);
    }
    jsonschema::meta::validate(parameters)
        .map_err(|error| SchemaProblem::NotASchema(error.to_owned()))?;
    let validator = jsonschema::validator_for(parameters)
        .map_err(|error| SchemaProblem::DoesNotCompile(error.to_owned()))?;
    Ok(Arc::new(validator))
}

/// `true` when the parameters or a value of the extras of `info` nest
/// deeper than [`json::MAX_DEPTH`] levels: everything of a `ToolInfo` that
/// is compared, copied or serialised.
pub(crate) fn info_too_deep(info: &ToolInfo) -> bool {
    json::too_deep(&info.parameters) || info.extras.fields().values().any(json::too_deep)
}

/// Takes the values of `info` that nest too deeply out and drops them
/// without recursion (see [`json::drop_deep`]): the parameters become
/// `null` and the extras empty.
pub(crate) fn drop_too_deep(info: &mut ToolInfo) {
    json::drop_deep(std::mem::take(&mut info.parameters));
    std::mem::take(&mut info.extras)
        .into_values()
        .for_each(json::drop_deep);
}
