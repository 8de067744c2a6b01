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
    compile_checking(parameters, parameters)
}

/// Checks `parameters` and compiles the validator of a call whose runner
/// fills in defaults (see [`Definition::fills_defaults`](crate::tool::Definition::fills_defaults)):
/// the same schema, except that a property that has a `default` is not
/// required (see [`without_defaulted_required`]).
///
/// Errors: the first [`SchemaProblem`] of `parameters` as given.
pub(crate) fn compile_filling_defaults(
    parameters: &Value,
) -> Result<Arc<jsonschema::Validator>, SchemaProblem> {
    // The walk below recurses per level: the depth check comes first.
    check_shape(parameters)?;
    match without_defaulted_required(parameters) {
        Some(relaxed) => compile_checking(parameters, &relaxed),
        None => compile(parameters),
    }
}

/// The checks before the schema checker: an object schema, not too deep.
fn check_shape(parameters: &Value) -> Result<(), SchemaProblem> {
    if parameters.get("type") != Some(&Value::String("object".into())) {
        return Err(SchemaProblem::NotObject);
    }
    // Before the schema checker, which recurses per level.
    if json::too_deep(parameters) {
        return Err(SchemaProblem::TooDeep);
    }
    Ok(())
}

/// Checks `parameters` (the schema the model sees) and compiles
/// `enforced`, which is `parameters` or a relaxed copy of it.
fn compile_checking(
    parameters: &Value,
    enforced: &Value,
) -> Result<Arc<jsonschema::Validator>, SchemaProblem> {
    check_shape(parameters)?;
    jsonschema::meta::validate(parameters)
        .map_err(|error| SchemaProblem::NotASchema(error.to_owned()))?;
    let validator = jsonschema::validator_for(enforced)
        .map_err(|error| SchemaProblem::DoesNotCompile(error.to_owned()))?;
    Ok(Arc::new(validator))
}

/// Keywords whose values are data, not schemas: a `default` or an `enum`
/// value shaped like a schema is left as it is.
const DATA_KEYWORDS: [&str; 4] = ["default", "const", "enum", "examples"];

/// `schema` with every property that has a `default` taken out of its
/// object's `required` list, at every level (nested objects, array items,
/// `anyOf` branches, `$defs`); `None` when no property is both required and
/// defaulted, so the schema is used as it is.
///
/// Why: schemas generated from Zod (the MCP TypeScript SDK's servers, such
/// as Playwright MCP's `browser_take_screenshot` with `"required": ["type",
/// "scale"]` and a `default` on each) list a defaulted property as
/// required, because Zod's parsed *output* always has it; the server parses
/// the call with Zod, which fills the default in. A client that checked
/// `required` literally would refuse a call the server accepts. The
/// official MCP clients send the arguments unchecked (TypeScript SDK
/// `Client.callTool` and Python SDK `ClientSession.call_tool` validate only
/// a result's `structuredContent` against the `outputSchema`), so this
/// keeps the check's value (types, enums, other required properties) and
/// drops only the one rule those servers do not mean.
///
/// The walk recurses once per level; callers pass schemas that passed the
/// depth check.
pub(crate) fn without_defaulted_required(schema: &Value) -> Option<Value> {
    let mut relaxed = schema.clone();
    relax(&mut relaxed).then_some(relaxed)
}

/// Relaxes `value` in place; `true` when it changed anything.
fn relax(value: &mut Value) -> bool {
    match value {
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| relax(item) | changed),
        Value::Object(object) => {
            let defaulted: Vec<String> = match (object.get("required"), object.get("properties")) {
                (Some(Value::Array(required)), Some(Value::Object(properties))) => required
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|name| {
                        properties
                            .get(*name)
                            .and_then(Value::as_object)
                            .is_some_and(|property| property.contains_key("default"))
                    })
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            };
            let mut changed = false;
            if !defaulted.is_empty()
                && let Some(Value::Array(required)) = object.get_mut("required")
            {
                required.retain(|name| {
                    name.as_str()
                        .is_none_or(|name| !defaulted.iter().any(|d| d == name))
                });
                changed = true;
            }
            for (key, child) in object.iter_mut() {
                if !DATA_KEYWORDS.contains(&key.as_str()) {
                    changed |= relax(child);
                }
            }
            changed
        }
        _ => false,
    }
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
