//! BFCL tool declarations → valid [`ToolInfo`]s.
//!
//! BFCL declarations are JSON-Schema-like but not JSON Schema, and their
//! names are often dotted. What the data really holds (surveyed over every
//! category in `shared/data/bfcl/`: 6,353 declarations) and what is done
//! with it:
//!
//! | quirk | seen | done here |
//! | --- | --- | --- |
//! | name outside `^[a-zA-Z0-9_-]{1,64}$` (`spotify.play`) | 1,495 names | [`NameRules::sanitize`], original kept for the answer |
//! | `"type": "dict"` | every top level, and nested | `"object"` |
//! | `"type": "float"` | ~1,000 | `"number"` |
//! | `"type": "tuple"` (with `items`) | 11 | `"array"` |
//! | `"type": "any"` | 13 | `type` removed: no constraint |
//! | `"optional": true / "True" / "yes" / ["field"] / []` | 54 | removed: not JSON Schema, and BFCL's own checker reads only `required` (one declaration lists a field in both; `required` wins) |
//! | `required` naming a field absent from `properties` | 3 (one object) | kept: valid JSON Schema (the key must be there), and the answers do give it |
//! | `"type": "dict"` without `properties` | 11 | `{"type": "object"}`: any object |
//! | `default` of another type than the field (`"None"` for an integer), a `default` on the top-level object | common / 2 | kept: `default` is an annotation, never validated |
//! | `enum` of item values on an array (`"type": "array", "enum": ["a", "b"]`) | 21 | moved to `items` (see `enum_fixes`) |
//! | `enum` none of whose values has the field's type (`boolean` with `["True", "False"]`, `integer` with `["1", "2"]`) | 55 | kept, counted |
//! | `items` given as a type name (`"items": "string"`) | 0 | handled anyway (`{"type": "string"}`), cheap and named in the brief |
//!
//! Descriptions, `enum`, `default`, `format`, bounds are kept as they are.
//! `enum` and `default` values are copied verbatim, never rewritten: a
//! default that happens to contain `"type": "dict"` is data, not schema.
//! A type name this module does not know is kept too: `bind` then refuses
//! the schema with a typed error, which the report counts by kind.

use std::collections::{BTreeMap, HashMap};

use agent_loop::tool::{NameRules, ToolInfo};
use serde_json::{Map, Value};

/// How often each rewrite was applied, by a short name (`dict→object`):
/// the report shows what the data needed.
pub type Rewrites = BTreeMap<&'static str, usize>;

/// The declarations of one task, as tools the model can be offered.
#[derive(Debug)]
pub struct Declarations {
    /// One valid-looking `ToolInfo` per declaration, in order. `bind` still
    /// has the last word on validity.
    pub infos: Vec<ToolInfo>,
    /// Original BFCL name → model-facing name, for reading the answers.
    pub model_names: HashMap<String, String>,
    /// How many names `sanitize` had to change.
    pub names_sanitised: usize,
}

/// Why a task's declarations cannot be turned into tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclarationError {
    /// Not the `{name, description, parameters}` shape.
    Malformed(String),
    /// Two declarations of one task end up with the same model-facing name,
    /// either because sanitising made them meet (`a.b`, `a_b`) or because
    /// the task declares one name twice. Offering both would make the
    /// model's call ambiguous, so the task is refused.
    NameCollision(String),
}

/// Turns the `function` array of one task into [`ToolInfo`]s, counting the
/// schema rewrites in `rewrites`.
pub fn declarations(
    functions: &[Value],
    rules: NameRules,
    rewrites: &mut Rewrites,
) -> Result<Declarations, DeclarationError> {
    let mut infos = Vec::with_capacity(functions.len());
    let mut model_names = HashMap::new();
    // Model-facing name → the original that took it first.
    let mut taken: HashMap<String, String> = HashMap::new();
    let mut names_sanitised = 0;
    for (index, function) in functions.iter().enumerate() {
        let malformed =
            |what: &str| DeclarationError::Malformed(format!("function[{index}]: {what}"));
        let Some(original) = function.get("name").and_then(Value::as_str) else {
            return Err(malformed("`name` is missing or not a string"));
        };
        let description = match function.get("description") {
            None | Some(Value::Null) => "",
            Some(Value::String(text)) => text.as_str(),
            Some(_) => return Err(malformed("`description` is not a string")),
        };
        let parameters = match function.get("parameters") {
            // No parameters: a function without arguments, as OpenAI reads it.
            None | Some(Value::Null) => serde_json::json!({ "type": "object", "properties": {} }),
            Some(parameters @ Value::Object(_)) => schema(parameters, rewrites),
            Some(_) => return Err(malformed("`parameters` is not an object")),
        };
        let model_name = rules.sanitize(original);
        if model_name != original {
            names_sanitised += 1;
        }
        if let Some(first) = taken.get(&model_name) {
            return Err(DeclarationError::NameCollision(if first == original {
                format!("`{original}` is declared twice")
            } else {
                format!("`{first}` and `{original}` both become `{model_name}`")
            }));
        }
        taken.insert(model_name.clone(), original.to_owned());
        model_names.insert(original.to_owned(), model_name.clone());
        infos.push(ToolInfo::new(model_name, description, parameters));
    }
    Ok(Declarations {
        infos,
        model_names,
        names_sanitised,
    })
}

/// One BFCL schema as JSON Schema (see the module docs for each rule).
/// Recurses into every keyword whose value is a schema or holds schemas.
pub fn schema(value: &Value, rewrites: &mut Rewrites) -> Value {
    let Value::Object(map) = value else {
        // `true`/`false` are valid schemas; anything else is left for the
        // JSON Schema check at bind to refuse with its reason.
        return value.clone();
    };
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        match key.as_str() {
            "type" => {
                if let Some(kind) = schema_type(value, rewrites) {
                    out.insert(key.clone(), kind);
                }
            }
            "optional" => count(rewrites, "optional removed"),
            // Keywords whose value maps names to schemas.
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                out.insert(key.clone(), schema_map(value, rewrites));
            }
            "items" => match value {
                Value::String(_) => {
                    count(rewrites, "items type name → schema");
                    let mut item = Map::new();
                    if let Some(kind) = schema_type(value, rewrites) {
                        item.insert("type".into(), kind);
                    }
                    out.insert(key.clone(), Value::Object(item));
                }
                // The draft-04 tuple form; 2020-12 calls it `prefixItems`.
                Value::Array(items) => {
                    count(rewrites, "items array → prefixItems");
                    let items = items.iter().map(|item| schema(item, rewrites)).collect();
                    out.insert("prefixItems".into(), Value::Array(items));
                }
                _ => {
                    out.insert(key.clone(), schema(value, rewrites));
                }
            },
            // Keywords whose value is one schema.
            "additionalProperties"
            | "additionalItems"
            | "contains"
            | "not"
            | "if"
            | "then"
            | "else"
            | "propertyNames" => {
                out.insert(key.clone(), schema(value, rewrites));
            }
            // Keywords whose value is a list of schemas.
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                let rewritten = match value {
                    Value::Array(list) => {
                        Value::Array(list.iter().map(|item| schema(item, rewrites)).collect())
                    }
                    other => other.clone(),
                };
                out.insert(key.clone(), rewritten);
            }
            // Everything else (description, enum, default, format, bounds,
            // required) is kept verbatim.
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    enum_fixes(&mut out, rewrites);
    if let (Some(Value::Array(required)), Some(Value::Object(properties))) =
        (out.get("required"), out.get("properties"))
    {
        let absent = required
            .iter()
            .filter(|name| {
                name.as_str()
                    .is_some_and(|name| !properties.contains_key(name))
            })
            .count();
        if absent > 0 {
            *rewrites
                .entry("required without property (kept)")
                .or_default() += absent;
        }
    } else if out.contains_key("required") && !out.contains_key("properties") {
        count(rewrites, "required without property (kept)");
    }
    Value::Object(out)
}

/// `enum` that its own `type` contradicts.
///
/// On an array of strings, BFCL sometimes puts the allowed *item* values
/// on the array (`{"type": "array", "items": {"type": "string"}, "enum":
/// ["temperature", ...]}`: 21 fields in `live_*`). No array is ever equal
/// to a string, so as written no call can pass; the intent is plain, and
/// the enum moves to `items`. Scalar fields whose enum values all have
/// another type (`"type": "boolean", "enum": ["True", "False"]`: 55 in
/// `live_multiple`) are counted but kept: which of the two was meant is
/// not plain, and BFCL's own checker reads the type.
fn enum_fixes(schema: &mut Map<String, Value>, rewrites: &mut Rewrites) {
    let Some(Value::Array(values)) = schema.get("enum") else {
        return;
    };
    let kind = schema.get("type").and_then(Value::as_str);
    if kind == Some("array") && values.iter().all(|value| !value.is_array()) {
        if let Some(Value::Object(items)) = schema.get("items")
            && !items.contains_key("enum")
            && let Some(values) = schema.remove("enum")
            && let Some(Value::Object(items)) = schema.get_mut("items")
        {
            items.insert("enum".into(), values);
            count(rewrites, "enum on array → items.enum");
        }
        return;
    }
    let fits = |value: &Value| match kind {
        Some("boolean") => value.is_boolean(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("string") => value.is_string(),
        _ => true,
    };
    if !values.is_empty() && !values.iter().any(fits) {
        count(rewrites, "enum contradicts type (kept)");
    }
}

/// Each value of a name → schema map, rewritten.
fn schema_map(value: &Value, rewrites: &mut Rewrites) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(name, item)| (name.clone(), schema(item, rewrites)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The JSON Schema `type` for a BFCL one; `None` when there is no
/// constraint (`any`, alone or in a list).
fn schema_type(kind: &Value, rewrites: &mut Rewrites) -> Option<Value> {
    match kind {
        Value::String(name) => type_name(name, rewrites).map(Value::String),
        Value::Array(names) => {
            let mut mapped = Vec::with_capacity(names.len());
            for name in names {
                match name {
                    Value::String(name) => mapped.push(Value::String(type_name(name, rewrites)?)),
                    other => mapped.push(other.clone()),
                }
            }
            Some(Value::Array(mapped))
        }
        other => Some(other.clone()),
    }
}

/// One type name: Python's names as BFCL writes them, to JSON Schema's.
fn type_name(name: &str, rewrites: &mut Rewrites) -> Option<String> {
    let (mapped, rewrite) = match name {
        "dict" => ("object", "dict → object"),
        "float" => ("number", "float → number"),
        "tuple" => ("array", "tuple → array"),
        "any" => {
            count(rewrites, "any → no type");
            return None;
        }
        other => return Some(other.to_owned()),
    };
    count(rewrites, rewrite);
    Some(mapped.to_owned())
}

fn count(rewrites: &mut Rewrites, rewrite: &'static str) {
    *rewrites.entry(rewrite).or_default() += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bfcl_types_become_json_schema_types_recursively() {
        let mut rewrites = Rewrites::new();
        let rewritten = schema(
            &json!({
                "type": "dict",
                "properties": {
                    "type": { "type": "float", "default": { "type": "dict" } },
                    "point": { "type": "tuple", "items": { "type": "float" } },
                    "anything": { "type": "any", "description": "kept" },
                    "names": { "type": "array", "items": "string" },
                    "flag": { "type": "boolean", "optional": "True" }
                },
                "required": ["type"]
            }),
            &mut rewrites,
        );
        assert_eq!(
            rewritten,
            json!({
                "type": "object",
                "properties": {
                    "type": { "type": "number", "default": { "type": "dict" } },
                    "point": { "type": "array", "items": { "type": "number" } },
                    "anything": { "description": "kept" },
                    "names": { "type": "array", "items": { "type": "string" } },
                    "flag": { "type": "boolean" }
                },
                "required": ["type"]
            })
        );
        assert_eq!(rewrites["float → number"], 2);
        assert_eq!(rewrites["optional removed"], 1);
    }

    #[test]
    fn sanitising_collision_is_refused() {
        let functions = [
            json!({ "name": "a.b", "description": "x", "parameters": { "type": "dict", "properties": {} } }),
            json!({ "name": "a_b", "description": "y", "parameters": { "type": "dict", "properties": {} } }),
        ];
        let error = declarations(&functions, NameRules::OpenAi, &mut Rewrites::new()).unwrap_err();
        assert_eq!(
            error,
            DeclarationError::NameCollision("`a.b` and `a_b` both become `a_b`".into())
        );
    }
}
