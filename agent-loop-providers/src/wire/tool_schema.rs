//! Tool parameters as each provider accepts them. A tool's `parameters`
//! are sent as declared (an MCP server's `inputSchema`, a `schemars`
//! schema), but providers accept less than JSON Schema does:
//!
//! - [`openai`]: OpenAI (Chat Completions and Responses) refuses an object
//!   schema without `properties` ("Invalid schema for function 'x': In
//!   context=(), object schema missing properties") and an array schema
//!   without `items` ("array schema missing items"), which MCP servers send
//!   for a tool without parameters or a list of anything
//!   (karakeep-app/karakeep #1831, bnb-chain/bnbchain-mcp #68). Both are
//!   added empty (`"properties": {}`, `"items": {}`), which means what the
//!   schema meant: the repair is lossless.
//! - [`gemini`]: Gemini's `parametersJsonSchema` refuses a `$ref` with
//!   sibling keys other than `description` and `default` ("Schema.ref
//!   'X' was set alongside unsupported fields", anomalyco/opencode
//!   #12295). A local reference (`#/$defs/X`, `#/definitions/X`) is
//!   inlined, its definition merged with the siblings; one that cannot be
//!   inlined without loss (it is not local, it refers to itself, or a
//!   sibling says otherwise than the definition) is a [`SchemaRefusal`],
//!   which the model returns, typed and unsent, at the first request.
//!
//! The schema the local argument check uses stays the declared one.

use std::borrow::Cow;

use serde_json::{Map, Value};

use agent_loop_core::support::json::resolve_local_reference;

/// The keywords whose values are schemas, one each.
const SCHEMA_KEYWORDS: [&str; 8] = [
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
];

/// The keywords whose values are arrays of schemas.
const SCHEMA_LIST_KEYWORDS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];

/// The keywords whose values map names to schemas.
const SCHEMA_MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Where a subschema stands in its schema: under a keyword, at an index
/// of a keyword's list, or under a name of a keyword's map. Made without
/// allocating: the `*_needs` walks run on every request.
#[derive(Clone, Copy)]
enum Step<'s> {
    Keyword(&'static str),
    Item(&'static str, usize),
    Entry(&'static str, &'s str),
}

impl Step<'_> {
    /// The JSON Pointer of the step (RFC 6901), e.g. `/properties/a~1b`.
    fn pointer(self) -> String {
        match self {
            Step::Keyword(keyword) => format!("/{keyword}"),
            Step::Item(keyword, index) => format!("/{keyword}/{index}"),
            Step::Entry(keyword, name) => format!("/{keyword}/{}", pointer_escape(name)),
        }
    }

    /// The subschema of `schema` at this step.
    fn get_mut(self, schema: &mut Map<String, Value>) -> Option<&mut Value> {
        match self {
            Step::Keyword(keyword) => schema.get_mut(keyword),
            Step::Item(keyword, index) => schema.get_mut(keyword)?.get_mut(index),
            Step::Entry(keyword, name) => schema.get_mut(keyword)?.get_mut(name),
        }
    }
}

/// The subschemas of `schema`, each with its step.
fn subschemas(schema: &Map<String, Value>) -> impl Iterator<Item = (Step<'_>, &Value)> {
    let single = SCHEMA_KEYWORDS.into_iter().filter_map(move |keyword| {
        let value = schema.get(keyword).filter(|value| value.is_object())?;
        Some((Step::Keyword(keyword), value))
    });
    let lists = SCHEMA_LIST_KEYWORDS.into_iter().flat_map(move |keyword| {
        let items = schema.get(keyword).and_then(Value::as_array);
        items
            .into_iter()
            .flatten()
            .enumerate()
            .map(move |(index, item)| (Step::Item(keyword, index), item))
    });
    let maps = SCHEMA_MAP_KEYWORDS.into_iter().flat_map(move |keyword| {
        let entries = schema.get(keyword).and_then(Value::as_object);
        entries
            .into_iter()
            .flatten()
            .map(move |(name, value)| (Step::Entry(keyword, name.as_str()), value))
    });
    single.chain(lists).chain(maps)
}

/// `name` escaped as a JSON Pointer reference token (RFC 6901).
fn pointer_escape(name: &str) -> Cow<'_, str> {
    if name.contains(['~', '/']) {
        Cow::Owned(name.replace('~', "~0").replace('/', "~1"))
    } else {
        Cow::Borrowed(name)
    }
}

/// `true` when `schema` says its instances are of `kind` (`"type": kind`,
/// or a type list holding it).
fn has_type(schema: &Map<String, Value>, kind: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(single)) => single == kind,
        Some(Value::Array(types)) => types.iter().any(|each| each == kind),
        _ => false,
    }
}

/// `true` when `schema` or a subschema is an object schema without
/// `properties` or an array schema without `items`.
fn openai_needs(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    (has_type(map, "object") && !map.contains_key("properties"))
        || (has_type(map, "array")
            && !map.contains_key("items")
            && !map.contains_key("prefixItems"))
        || subschemas(map).any(|(_, sub)| openai_needs(sub))
}

/// Adds the missing `properties` and `items` in place.
fn openai_repair(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if has_type(map, "object") && !map.contains_key("properties") {
        map.insert("properties".into(), Value::Object(Map::new()));
    }
    if has_type(map, "array") && !map.contains_key("items") && !map.contains_key("prefixItems") {
        map.insert("items".into(), Value::Object(Map::new()));
    }
    for keyword in SCHEMA_KEYWORDS {
        if let Some(sub) = map.get_mut(keyword) {
            openai_repair(sub);
        }
    }
    for keyword in SCHEMA_LIST_KEYWORDS {
        if let Some(Value::Array(items)) = map.get_mut(keyword) {
            items.iter_mut().for_each(openai_repair);
        }
    }
    for keyword in SCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(subs)) = map.get_mut(keyword) {
            subs.values_mut().for_each(openai_repair);
        }
    }
}

/// `parameters` as OpenAI (Chat Completions and Responses) accepts them:
/// every object schema with `properties`, every array schema with `items`
/// (added empty where missing). Borrowed when nothing is missing, which
/// is nearly always. (The schema nests at most 128 levels: bind checks.)
///
/// ```
/// use agent_loop_providers::wire::tool_schema;
/// use serde_json::json;
///
/// let declared = json!({"type": "object"});
/// let sent = tool_schema::openai(&declared);
/// assert_eq!(*sent, json!({"type": "object", "properties": {}}));
/// ```
pub fn openai(parameters: &Value) -> Cow<'_, Value> {
    if !openai_needs(parameters) {
        return Cow::Borrowed(parameters);
    }
    let mut repaired = parameters.clone();
    openai_repair(&mut repaired);
    Cow::Owned(repaired)
}

/// A tool's parameters a provider would refuse and that cannot be
/// repaired without changing what they mean: where, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the schema at `{path}` cannot be sent: {reason}")]
#[non_exhaustive]
pub struct SchemaRefusal {
    /// The JSON Pointer, in the declared `parameters`, of the schema (`""`
    /// for the top).
    pub path: String,
    /// Why, in a sentence.
    pub reason: String,
}

/// The most definitions inlined into one another along one path, and in
/// all: bounds on the depth and the size a server's schema may make the
/// request reach (shared references are copied at each use).
const MAX_INLINED: usize = 16;
const MAX_INLININGS: usize = 256;

/// Keywords that annotate a schema and assert nothing: beside a `$ref`,
/// they win over the definition's own.
const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// The keys Gemini accepts beside `$ref`.
fn gemini_takes_beside_ref(key: &str) -> bool {
    matches!(key, "$ref" | "description" | "default")
}

/// `true` when `schema` or a subschema has a `$ref` with keys Gemini
/// refuses beside it.
fn gemini_needs(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    (map.contains_key("$ref") && map.keys().any(|key| !gemini_takes_beside_ref(key)))
        || subschemas(map).any(|(_, sub)| gemini_needs(sub))
}

/// The references being inlined above a schema, and how many were
/// inlined in all.
#[derive(Default)]
struct Inlining {
    stack: Vec<String>,
    total: usize,
}

/// `schema` (at `path` in `root`) with each `$ref` Gemini would refuse
/// inlined.
fn gemini_repair(
    root: &Value,
    schema: &Value,
    path: &str,
    expanding: &mut Inlining,
) -> Result<Value, SchemaRefusal> {
    let Value::Object(map) = schema else {
        return Ok(schema.clone());
    };
    let refusal = |reason: String| SchemaRefusal {
        path: path.to_owned(),
        reason,
    };
    if let Some(Value::String(reference)) = map.get("$ref")
        && map.keys().any(|key| !gemini_takes_beside_ref(key))
    {
        if expanding.stack.contains(reference) {
            return Err(refusal(format!(
                "`$ref` {reference:?} refers to itself and has keys beside it, which Gemini refuses"
            )));
        }
        let Some(Value::Object(definition)) = resolve_local_reference(root, reference) else {
            return Err(refusal(format!(
                "`$ref` {reference:?} is not a local definition and has keys beside it, which Gemini refuses"
            )));
        };
        if expanding.stack.len() >= MAX_INLINED || expanding.total >= MAX_INLININGS {
            return Err(refusal(format!(
                "inlining `$ref` {reference:?} would copy more definitions than a request should hold ({MAX_INLINED} deep, {MAX_INLININGS} in all)"
            )));
        }
        expanding.total += 1;
        let mut merged = definition.clone();
        for (key, value) in map.iter().filter(|(key, _)| *key != "$ref") {
            match merged.get(key) {
                // An annotation beside the reference says what it means
                // here: it wins over the definition's (pydantic gives
                // every definition a `title`).
                Some(_) if ANNOTATIONS.contains(&key.as_str()) => {
                    merged.insert(key.clone(), value.clone());
                }
                Some(theirs) if theirs != value => {
                    return Err(refusal(format!(
                        "`{key}` beside `$ref` {reference:?} says otherwise than the definition"
                    )));
                }
                _ => {
                    merged.insert(key.clone(), value.clone());
                }
            }
        }
        expanding.stack.push(reference.clone());
        let inlined = gemini_repair(root, &Value::Object(merged), path, expanding);
        expanding.stack.pop();
        return inlined;
    }
    let mut repaired = map.clone();
    for (step, sub) in subschemas(map) {
        if !gemini_needs(sub) {
            continue;
        }
        let fixed = gemini_repair(root, sub, &format!("{path}{}", step.pointer()), expanding)?;
        if let Some(slot) = step.get_mut(&mut repaired) {
            *slot = fixed;
        }
    }
    Ok(Value::Object(repaired))
}

/// `parameters` as Gemini's `parametersJsonSchema` accepts them: each
/// `$ref` with keys beside it other than `description` and `default`
/// inlined from its local definition and merged with them. Borrowed when
/// none has, which is nearly always.
///
/// # Errors
///
/// A [`SchemaRefusal`] for a `$ref` that cannot be inlined without loss:
/// not local, referring to itself, or beside a key that says otherwise
/// than its definition.
///
/// ```
/// use agent_loop_providers::wire::tool_schema;
/// use serde_json::json;
///
/// let parameters = json!({
///     "type": "object",
///     "properties": { "at": { "$ref": "#/$defs/Point", "title": "Where" } },
///     "$defs": { "Point": { "type": "object", "properties": { "x": { "type": "number" } } } }
/// });
/// let sent = tool_schema::gemini(&parameters)?;
/// assert_eq!(sent["properties"]["at"]["title"], "Where");
/// assert_eq!(sent["properties"]["at"]["properties"]["x"]["type"], "number");
/// # Ok::<_, tool_schema::SchemaRefusal>(())
/// ```
pub fn gemini(parameters: &Value) -> Result<Cow<'_, Value>, SchemaRefusal> {
    if !gemini_needs(parameters) {
        return Ok(Cow::Borrowed(parameters));
    }
    let repaired = gemini_repair(parameters, parameters, "", &mut Inlining::default())?;
    // Inlining nests definitions: the result keeps to the depth bind
    // allowed the declared schema.
    if agent_loop_core::support::json::too_deep(&repaired) {
        return Err(SchemaRefusal {
            path: String::new(),
            reason: "inlining its references nests the schema too deeply".into(),
        });
    }
    Ok(Cow::Owned(repaired))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Missing `properties` and `items` are added at every depth where a
    /// schema sits (properties, items, unions, definitions); a schema
    /// that has them is borrowed, unchanged.
    #[test]
    fn openai_gets_properties_and_items_where_they_are_missing() {
        let declared = json!({
            "type": "object",
            "properties": {
                "tags": { "type": "array" },
                "meta": { "type": ["object", "null"] },
                "pick": { "anyOf": [{ "type": "array", "prefixItems": [{ "type": "string" }] }, { "$ref": "#/$defs/Any" }] }
            },
            "$defs": { "Any": { "type": "object", "description": "anything" } }
        });
        assert_eq!(
            *openai(&declared),
            json!({
                "type": "object",
                "properties": {
                    "tags": { "type": "array", "items": {} },
                    "meta": { "type": ["object", "null"], "properties": {} },
                    "pick": { "anyOf": [{ "type": "array", "prefixItems": [{ "type": "string" }] }, { "$ref": "#/$defs/Any" }] }
                },
                "$defs": { "Any": { "type": "object", "description": "anything", "properties": {} } }
            })
        );
        let fine = json!({ "type": "object", "properties": { "a": { "type": "array", "items": { "type": "integer" } } } });
        assert!(matches!(openai(&fine), Cow::Borrowed(_)));
    }

    /// A `$ref` with keys beside it is inlined and merged; a bare one, or
    /// one beside `description` and `default`, stays; what cannot be
    /// inlined without loss is refused with its place.
    #[test]
    fn gemini_gets_refs_inlined_or_a_refusal() {
        let declared = json!({
            "type": "object",
            "properties": {
                "a": { "$ref": "#/$defs/Point", "title": "A", "description": "first" },
                "b": { "$ref": "#/$defs/Point", "description": "second" }
            },
            "$defs": { "Point": { "type": "object", "properties": { "x": { "type": "number" } } } }
        });
        let sent = gemini(&declared).unwrap();
        assert_eq!(
            sent["properties"]["a"],
            json!({ "type": "object", "properties": { "x": { "type": "number" } }, "title": "A", "description": "first" })
        );
        assert_eq!(sent["properties"]["b"], declared["properties"]["b"]);
        assert_eq!(sent["$defs"], declared["$defs"]);
        // pydantic: every definition has a `title`; the one beside the
        // reference wins.
        let pydantic = json!({
            "properties": { "at": { "$ref": "#/$defs/P", "title": "At" } },
            "$defs": { "P": { "title": "P", "type": "object", "properties": {} } }
        });
        assert_eq!(
            gemini(&pydantic).unwrap()["properties"]["at"],
            json!({ "title": "At", "type": "object", "properties": {} })
        );
        let plain = json!({ "type": "object", "properties": { "b": { "$ref": "#/$defs/P" } }, "$defs": { "P": {} } });
        assert!(matches!(gemini(&plain), Ok(Cow::Borrowed(_))));

        for (schema, path, starts) in [
            (
                json!({ "properties": { "n": { "$ref": "#/$defs/Node", "title": "N" } },
                        "$defs": { "Node": { "type": "object", "properties": { "next": { "$ref": "#/$defs/Node", "title": "Next" } } } } }),
                "/properties/n/properties/next",
                "`$ref` \"#/$defs/Node\" refers to itself",
            ),
            (
                json!({ "properties": { "r": { "$ref": "https://example.com/s.json", "title": "R" } } }),
                "/properties/r",
                "`$ref` \"https://example.com/s.json\" is not a local definition",
            ),
            (
                json!({ "properties": { "c": { "$ref": "#/$defs/C", "type": "string" } }, "$defs": { "C": { "type": "integer" } } }),
                "/properties/c",
                "`type` beside `$ref` \"#/$defs/C\" says otherwise",
            ),
        ] {
            let refusal = gemini(&schema).unwrap_err();
            assert_eq!(refusal.path, path, "{schema}");
            assert!(refusal.reason.starts_with(starts), "{}", refusal.reason);
        }
    }
}
