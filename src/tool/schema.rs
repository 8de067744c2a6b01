//! A tool's argument schema: the checks its `parameters` must pass, and the
//! compiled validator every call's arguments are checked against.
//!
//! The checks live here, in one place, for every kind of tool definition;
//! [`checked`](super::checked) keeps their results so that bindings share
//! them.

use std::sync::Arc;

use serde_json::Value;

/// How deeply a tool's `parameters` may nest (objects and arrays). The
/// schema checker recurses per level, so a schema built in code thousands
/// of levels deep would overflow the stack; 128 is serde_json's own parsing
/// limit, so no schema read from JSON text is refused by it.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 128;

/// Why a tool's `parameters` cannot be used, in the order they are checked.
#[derive(Debug)]
pub(crate) enum SchemaProblem {
    /// The top level is not `"type": "object"`: OpenAI, Anthropic and MCP
    /// all require an object schema for a tool's arguments.
    NotObject,
    /// Objects and arrays nest deeper than [`MAX_SCHEMA_DEPTH`].
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
    if nesting_exceeds(parameters, MAX_SCHEMA_DEPTH) {
        return Err(SchemaProblem::TooDeep);
    }
    jsonschema::meta::validate(parameters)
        .map_err(|error| SchemaProblem::NotASchema(error.to_owned()))?;
    let validator = jsonschema::validator_for(parameters)
        .map_err(|error| SchemaProblem::DoesNotCompile(error.to_owned()))?;
    Ok(Arc::new(validator))
}

/// `true` when `value` nests objects or arrays more than `limit` levels
/// deep. Stops descending at the limit, so it never recurses deeper itself.
fn nesting_exceeds(value: &Value, limit: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Object(map) => Box::new(map.values()),
        Value::Array(items) => Box::new(items.iter()),
        _ => return false,
    };
    limit == 0
        || children
            .into_iter()
            .any(|child| nesting_exceeds(child, limit - 1))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `levels` objects nested in one another.
    fn nested(levels: usize) -> Value {
        (1..levels).fold(json!({}), |inner, _| json!({ "a": inner }))
    }

    #[test]
    fn nesting_is_counted_in_container_levels() {
        assert!(!nesting_exceeds(&json!("leaf"), 0));
        assert!(nesting_exceeds(&json!({}), 0));
        assert!(!nesting_exceeds(&nested(128), 128));
        assert!(nesting_exceeds(&nested(129), 128));
        assert!(nesting_exceeds(&json!([[[1]]]), 2));
        assert!(!nesting_exceeds(&json!([[[1]]]), 3));
    }
}
