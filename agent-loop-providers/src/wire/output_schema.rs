//! Native structured-output schemas as each provider accepts them.
//!
//! A provider's structured outputs (constrained decoding) take a subset of
//! JSON Schema, and a schema outside it is refused with HTTP 400 before the
//! model runs: a `schemars` schema of a struct with a `u64` field
//! (`"format": "uint64", "minimum": 0`) is refused by Anthropic, an
//! `Option<T>` field (not in `required`) by OpenAI's strict mode. The
//! functions here turn the full schema into what one provider family is
//! sent; the full schema stays the one the answer is checked against
//! locally (see [`Output`](agent_loop_core::turn::Output)), so a constraint the
//! provider cannot enforce is still enforced, after the answer.
//!
//! The rules, each from the provider's published documentation or its
//! official SDK's own transform:
//!
//! - [`anthropic`]: Anthropic's structured outputs ("JSON Schema
//!   limitations" in the structured outputs guide, and `transform_schema`
//!   in `anthropic-sdk-python`, `src/anthropic/lib/_parse/_transform.py`).
//!   Kept: `type`, `anyOf` (`oneOf` becomes `anyOf`), `allOf`, `enum`,
//!   `const`, `$ref` and local `$defs`/`definitions`, `properties`,
//!   `required`, `items`, `description`, `title`; `format` on strings only
//!   for `date-time`, `time`, `date`, `duration`, `email`, `hostname`,
//!   `uri`, `ipv4`, `ipv6`, `uuid`; `minItems` only `0` or `1`. Every object
//!   gets `additionalProperties: false`. A type list (`["string", "null"]`,
//!   what `schemars` writes for `Option<String>`) becomes an `anyOf` of one
//!   branch per type, each with its own keywords.
//! - [`openai_strict`]: OpenAI's strict mode (`strict: true` of Chat
//!   Completions' `response_format` and the Responses API's `text.format`;
//!   "Supported schemas" in the structured outputs guide, and
//!   `_ensure_strict_json_schema` in `openai-python`,
//!   `src/openai/lib/_pydantic.py`). Every object gets
//!   `additionalProperties: false` and lists every property in `required`;
//!   a property that was optional becomes nullable (`"type": [T, "null"]`,
//!   or an `anyOf` with `{"type": "null"}`). Kept: `type` (lists too),
//!   `anyOf` (`oneOf` becomes `anyOf`; `allOf` is merged into its object,
//!   since strict mode has no `allOf`), `enum`, `const`, `$ref` and
//!   `$defs`/`definitions`, `properties`, `required`, `items`,
//!   `description`, `title`; `pattern`; `format` for `date-time`, `time`,
//!   `date`, `duration`, `email`, `hostname`, `ipv4`, `ipv6`, `uuid`;
//!   `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
//!   `multipleOf`; `minItems`, `maxItems`. `default` goes (every property
//!   is required, so it means nothing, and Azure OpenAI refuses it).
//! - [`gemini`]: Gemini's `responseJsonSchema` (`GenerationConfig.
//!   response_json_schema` in `google/genai/types.py` of
//!   `googleapis/python-genai`: "only the following properties are
//!   supported"). Kept: `$id`, `$defs` (`definitions` at the top is
//!   renamed `$defs`), `$ref`, `$anchor`, `type`, `format`, `title`,
//!   `description`, `enum`, `items`, `prefixItems`, `minItems`,
//!   `maxItems`, `minimum`, `maximum`, `anyOf`, `oneOf`, `properties`,
//!   `additionalProperties`, `required`, `propertyOrdering`. `const`
//!   becomes a one-value `enum`; `allOf` is merged into its object. `format`
//!   is kept for the JSON Schema formats above and Gemini's own `int32`,
//!   `int64`, `float`, `double` (the formats its `Schema` documents), so
//!   `uint64` goes.
//!
//! For every family: a `$ref` with other keywords beside it (`schemars`
//! writes `{"$ref": ..., "description": ...}` for a documented field) is
//! inlined, the keywords beside it winning, because OpenAI refuses such a
//! `$ref` (the SDK inlines it too) and Gemini allows only `$`-keywords beside
//! one; a recursive one keeps only its `$ref`. A keyword that is not kept
//! is not lost to the model either: the dropped keywords of a schema are
//! appended to its `description` as one compact JSON object
//! (`{"format":"uint64","minimum":0}`), as the Anthropic SDK does, so the
//! model may still follow them; `$schema` and `$comment` are dropped
//! silently.
//!
//! What a provider cannot express at all is an [`Inexpressible`] error of
//! [`anthropic`] and [`openai_strict`], naming where it is: an object that
//! must stay open (a map: `additionalProperties` with a schema, or
//! `patternProperties`; an object with no `properties` that does not close
//! itself), and a schema with no `type` those two need (`{}`, `true`: any
//! value). Closing such an object would make the provider answer `{}` every
//! time, which passes many a local check with the data gone; the models
//! refuse the request, unsent, instead (use the tool mode of structured
//! output, or OpenAI's non-strict mode, for such a schema). Gemini takes
//! all of these.

use agent_loop_core::support::json::resolve_local_reference;
use serde_json::{Map, Value, json};

/// A part of an output schema the provider's structured outputs cannot
/// express: returned by [`anthropic`] and [`openai_strict`].
///
/// `Display`: "the schema at `/properties/labels` cannot be sent: a map
/// (`additionalProperties` with a schema) ...". The schema's text is never
/// repeated; `path` is a JSON Pointer into the full schema (`""` is the
/// top).
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("the schema at `{path}` cannot be sent: {reason}")]
#[non_exhaustive]
pub struct Inexpressible {
    /// Where the part is: a JSON Pointer into the full schema (`""` is its
    /// top level, `/properties/tags` a property).
    pub path: String,
    /// What the provider cannot express there.
    pub reason: &'static str,
}

/// The schema Anthropic's structured outputs accept (`output_config:
/// {"format": {"type": "json_schema", "schema": ...}}`), made from the full
/// `schema`; see the [module docs](self) for the rules.
///
/// ```
/// use agent_loop_providers::wire::output_schema;
/// use serde_json::json;
///
/// let sent = output_schema::anthropic(&json!({
///     "type": "object",
///     "properties": {
///         "total_cents": { "type": "integer", "format": "uint64", "minimum": 0 }
///     },
///     "required": ["total_cents"]
/// }))?;
/// assert_eq!(sent, json!({
///     "type": "object",
///     "properties": {
///         "total_cents": {
///             "type": "integer",
///             "description": "{\"format\":\"uint64\",\"minimum\":0}"
///         }
///     },
///     "required": ["total_cents"],
///     "additionalProperties": false
/// }));
/// # Ok::<_, output_schema::Inexpressible>(())
/// ```
///
/// # Errors
///
/// [`Inexpressible`] for the first part Anthropic cannot express (an open
/// object, a schema without a type; see the [module docs](self)).
pub fn anthropic(schema: &Value) -> Result<Value, Inexpressible> {
    Walk::run(Family::Anthropic, schema)
}

/// The schema OpenAI's strict mode accepts (Chat Completions'
/// `response_format.json_schema.schema` and the Responses API's
/// `text.format.schema` with `strict: true`), made from the full `schema`;
/// see the [module docs](self) for the rules. An answer to it holds `null`
/// for the properties that were optional; the local check reads it as if
/// they were absent.
///
/// ```
/// use agent_loop_providers::wire::output_schema;
/// use serde_json::json;
///
/// let sent = output_schema::openai_strict(&json!({
///     "type": "object",
///     "properties": {
///         "number": { "type": "string" },
///         "due": { "type": "string", "format": "date" }
///     },
///     "required": ["number"]
/// }))?;
/// assert_eq!(sent["required"], json!(["due", "number"]));
/// assert_eq!(sent["properties"]["due"], json!({"type": ["string", "null"], "format": "date"}));
/// assert_eq!(sent["additionalProperties"], false);
/// # Ok::<_, output_schema::Inexpressible>(())
/// ```
///
/// # Errors
///
/// [`Inexpressible`] for the first part strict mode cannot express (an
/// open object, a schema without a type; see the [module docs](self)).
pub fn openai_strict(schema: &Value) -> Result<Value, Inexpressible> {
    Walk::run(Family::OpenAiStrict, schema)
}

/// The schema Gemini's `generationConfig.responseJsonSchema` accepts, made
/// from the full `schema`; see the [module docs](self) for the rules.
/// Gemini takes every schema in this form.
///
/// ```
/// use agent_loop_providers::wire::output_schema;
/// use serde_json::json;
///
/// let sent = output_schema::gemini(&json!({
///     "type": "object",
///     "properties": { "kind": { "const": "invoice" } },
///     "required": ["kind"]
/// }));
/// assert_eq!(sent["properties"]["kind"], json!({"enum": ["invoice"]}));
/// ```
pub fn gemini(schema: &Value) -> Value {
    let mut sent = match Walk::run(Family::Gemini, schema) {
        Ok(sent) => sent,
        // The Gemini walk refuses nothing.
        Err(_) => schema.clone(),
    };
    // Gemini documents `$defs` only: definitions at the top move there,
    // and the references to them with them.
    if let Value::Object(top) = &mut sent
        && !top.contains_key("$defs")
        && let Some(definitions) = top.remove("definitions")
    {
        top.insert("$defs".into(), definitions);
        rename_references(&mut sent, "#/definitions/", "#/$defs/");
    }
    sent
}

/// The provider families with a schema subset of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Anthropic,
    OpenAiStrict,
    Gemini,
}

/// Anthropic's supported string formats (the SDK's `SupportedStringFormats`).
const ANTHROPIC_FORMATS: &[&str] = &[
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

/// OpenAI strict mode's supported string formats ("Supported properties").
const OPENAI_FORMATS: &[&str] = &[
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

/// The formats kept for Gemini: the JSON Schema ones above, and the
/// numeric ones Gemini's own `Schema.format` documents.
const GEMINI_FORMATS: &[&str] = &[
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
    "int32",
    "int64",
    "float",
    "double",
];

/// Keywords dropped without a note in the description.
const SILENT: &[&str] = &["$schema", "$comment"];

/// The keywords of a schema that apply to one instance type, for splitting
/// a type list into one branch per type.
fn keyword_applies(keyword: &str, instance_type: &str) -> bool {
    let class = match keyword {
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "propertyNames"
        | "minProperties"
        | "maxProperties"
        | "dependentRequired"
        | "dependentSchemas"
        | "unevaluatedProperties"
        | "propertyOrdering" => "object",
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains"
        | "minContains" | "maxContains" | "unevaluatedItems" => "array",
        "minLength" | "maxLength" | "pattern" | "format" | "contentEncoding"
        | "contentMediaType" => "string",
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => "number",
        _ => return true,
    };
    class == instance_type || (class == "number" && instance_type == "integer")
        // A numeric format (`uint64`) goes with the number it describes.
        || (keyword == "format" && matches!(instance_type, "integer" | "number"))
}

/// The JSON type of a value, as JSON Schema names it.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One transform: the family, the full schema (references resolve in
/// it), the references being inlined (to stop at a cycle), and the first
/// part found inexpressible.
struct Walk<'a> {
    family: Family,
    root: &'a Value,
    inlining: Vec<String>,
    problem: Option<Inexpressible>,
}

/// The deepest level at which a `$ref` is still inlined; below it, it keeps
/// only its `$ref`. Bounds the recursion: the crate's schemas are at most
/// 128 levels deep, and inlining adds a definition's levels.
const INLINE_DEPTH: usize = 128;

impl<'a> Walk<'a> {
    fn run(family: Family, schema: &'a Value) -> Result<Value, Inexpressible> {
        let mut walk = Walk {
            family,
            root: schema,
            inlining: Vec::new(),
            problem: None,
        };
        let sent = walk.node(schema.clone(), "", 0);
        match walk.problem {
            Some(problem) => Err(problem),
            None => Ok(sent),
        }
    }

    fn refuse(&mut self, path: &str, reason: &'static str) {
        if self.problem.is_none() {
            self.problem = Some(Inexpressible {
                path: path.to_owned(),
                reason,
            });
        }
    }

    fn constrained(&self) -> bool {
        self.family != Family::Gemini
    }

    /// The schema `schema` (at `path` of the full schema) as sent.
    fn node(&mut self, schema: Value, path: &str, depth: usize) -> Value {
        let mut map = match schema {
            Value::Object(map) => map,
            Value::Bool(_) if self.constrained() => {
                self.refuse(
                    path,
                    "a boolean schema (any value, or none) has no type the provider can constrain",
                );
                return schema;
            }
            other => return other,
        };
        let mut sent = Map::new();
        let mut dropped = Map::new();
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(definitions)) = map.remove(key) {
                let definitions = definitions
                    .into_iter()
                    .map(|(name, definition)| {
                        let at = format!("{path}/{key}/{}", escape(&name));
                        let definition = self.node(definition, &at, depth + 1);
                        (name, definition)
                    })
                    .collect();
                sent.insert(key.to_owned(), Value::Object(definitions));
            }
        }
        if let Some(reference) = map.get("$ref").and_then(Value::as_str).map(str::to_owned) {
            let beside = map
                .keys()
                .any(|key| key != "$ref" && !SILENT.contains(&key.as_str()));
            if !beside {
                sent.insert("$ref".into(), Value::String(reference));
                return Value::Object(sent);
            }
            let target = resolve_local_reference(self.root, &reference).cloned();
            match target {
                Some(Value::Object(target))
                    if depth < INLINE_DEPTH && !self.inlining.contains(&reference) =>
                {
                    // The keywords beside the `$ref` win over the target's.
                    let mut merged = target;
                    map.remove("$ref");
                    merged.extend(map);
                    self.inlining.push(reference);
                    let inlined = self.node(Value::Object(merged), path, depth + 1);
                    self.inlining.pop();
                    return match inlined {
                        Value::Object(mut inlined) => {
                            inlined.extend(sent);
                            Value::Object(inlined)
                        }
                        other => other,
                    };
                }
                _ => {
                    sent.insert("$ref".into(), Value::String(reference));
                    return Value::Object(sent);
                }
            }
        }
        for key in SILENT {
            map.remove(*key);
        }
        if self.family == Family::Anthropic
            && let Some(Value::Array(types)) = map.get("type")
        {
            let mut unique: Vec<Value> = Vec::new();
            for instance_type in types {
                if !unique.contains(instance_type) {
                    unique.push(instance_type.clone());
                }
            }
            if let [only] = unique.as_slice() {
                map.insert("type".into(), only.clone());
            } else {
                let split = split_types(map, &unique);
                let mut split = self.node(split, path, depth + 1);
                if let Value::Object(split) = &mut split {
                    split.extend(sent);
                }
                return split;
            }
        }
        // Unions.
        if self.family != Family::Gemini
            && !map.contains_key("anyOf")
            && let Some(one_of) = map.remove("oneOf")
        {
            map.insert("anyOf".into(), one_of);
        }
        if self.family != Family::Anthropic
            && let Some(Value::Array(all_of)) = map.remove("allOf")
        {
            self.merge_all_of(&mut map, all_of);
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = map.remove(key) {
                let branches = branches
                    .into_iter()
                    .enumerate()
                    .map(|(index, branch)| {
                        self.node(branch, &format!("{path}/{key}/{index}"), depth + 1)
                    })
                    .collect();
                sent.insert(key.to_owned(), Value::Array(branches));
            }
        }
        // Gemini has no `const`: a one-value `enum` says the same.
        if self.family == Family::Gemini
            && !map.contains_key("enum")
            && let Some(constant) = map.remove("const")
        {
            if constant.is_string() || constant.is_number() {
                map.insert("enum".into(), json!([constant]));
            } else {
                dropped.insert("const".into(), constant);
            }
        }
        // The type the constrained families need, from the values when only
        // they say it.
        if self.constrained()
            && !map.contains_key("type")
            && !sent.contains_key("anyOf")
            && !sent.contains_key("allOf")
        {
            let values: Vec<&Value> = match (map.get("enum"), map.get("const")) {
                (Some(Value::Array(values)), _) => values.iter().collect(),
                (_, Some(constant)) => vec![constant],
                _ => Vec::new(),
            };
            let mut types: Vec<&str> = values.iter().map(|value| type_of(value)).collect();
            types.sort_unstable();
            types.dedup();
            // Keywords of objects only (an `allOf` branch that adds
            // properties) say it is an object.
            if values.is_empty()
                && ["properties", "required", "additionalProperties"]
                    .iter()
                    .any(|key| map.contains_key(*key))
            {
                types.push("object");
            }
            if let [only] = types.as_slice() {
                map.insert("type".into(), json!(only));
            } else {
                self.refuse(
                    path,
                    "a schema without a `type` (any value) cannot be constrained",
                );
            }
        }
        let types: Vec<String> = match map.get("type") {
            Some(Value::String(one)) => vec![one.clone()],
            Some(Value::Array(many)) => many
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        let is = |name: &str| types.iter().any(|t| t == name);
        let object = is("object");
        if object || map.contains_key("properties") {
            self.object(&mut map, &mut sent, &mut dropped, path, depth, object);
        }
        if let Some(items) = map.remove("items") {
            if items.is_object() || items.is_boolean() {
                let items = self.node(items, &format!("{path}/items"), depth + 1);
                sent.insert("items".into(), items);
            } else {
                dropped.insert("items".into(), items);
            }
        }
        if self.family == Family::Gemini
            && let Some(Value::Array(prefix)) = map.remove("prefixItems")
        {
            let prefix = prefix
                .into_iter()
                .enumerate()
                .map(|(index, item)| {
                    self.node(item, &format!("{path}/prefixItems/{index}"), depth + 1)
                })
                .collect();
            sent.insert("prefixItems".into(), Value::Array(prefix));
        }
        for (key, value) in map {
            if self.keeps(&key, &value, &types) {
                sent.insert(key, value);
            } else {
                dropped.insert(key, value);
            }
        }
        if !dropped.is_empty() {
            let note = Value::Object(dropped).to_string();
            let description = match sent.get("description").and_then(Value::as_str) {
                Some(description) if !description.trim().is_empty() => {
                    format!("{description}\n\n{note}")
                }
                _ => note,
            };
            sent.insert("description".into(), Value::String(description));
        }
        Value::Object(sent)
    }

    /// An object's `properties`, `required` and `additionalProperties`.
    fn object(
        &mut self,
        map: &mut Map<String, Value>,
        sent: &mut Map<String, Value>,
        dropped: &mut Map<String, Value>,
        path: &str,
        depth: usize,
        typed_object: bool,
    ) {
        let had_properties = map.contains_key("properties");
        let properties = match map.remove("properties") {
            Some(Value::Object(properties)) => properties,
            Some(other) => {
                dropped.insert("properties".into(), other);
                Map::new()
            }
            None => Map::new(),
        };
        let required: Vec<Value> = match map.remove("required") {
            Some(Value::Array(required)) => required,
            Some(other) => {
                dropped.insert("required".into(), other);
                Vec::new()
            }
            None => Vec::new(),
        };
        let has_properties = !properties.is_empty();
        let mut walked = Map::new();
        for (name, property) in properties {
            let at = format!("{path}/properties/{}", escape(&name));
            let mut property = self.node(property, &at, depth + 1);
            if self.family == Family::OpenAiStrict && !required.iter().any(|r| r == &name) {
                make_nullable(&mut property);
            }
            walked.insert(name, property);
        }
        let required = if self.family == Family::OpenAiStrict {
            walked.keys().cloned().map(Value::String).collect()
        } else {
            required
        };
        if had_properties || (typed_object && self.constrained()) {
            sent.insert("properties".into(), Value::Object(walked));
        }
        if !required.is_empty() {
            sent.insert("required".into(), Value::Array(required));
        }
        let additional = map.remove("additionalProperties");
        let pattern = map.remove("patternProperties");
        if self.family == Family::Gemini {
            if let Some(additional) = additional {
                let additional = if additional.is_object() {
                    self.node(
                        additional,
                        &format!("{path}/additionalProperties"),
                        depth + 1,
                    )
                } else {
                    additional
                };
                sent.insert("additionalProperties".into(), additional);
            }
            if let Some(pattern) = pattern {
                dropped.insert("patternProperties".into(), pattern);
            }
            return;
        }
        if pattern.is_some() {
            self.refuse(
                path,
                "an object with `patternProperties` (a map) cannot be closed",
            );
        }
        match additional {
            Some(Value::Bool(false)) => {}
            Some(Value::Object(schema)) if !schema.is_empty() => self.refuse(
                path,
                "a map (`additionalProperties` with a schema) cannot be closed with `additionalProperties: false`",
            ),
            // Absent, `true` or `{}`: closed when it names its properties.
            _ if !has_properties => self.refuse(
                path,
                "an object without `properties` (any keys) cannot be closed with `additionalProperties: false`",
            ),
            _ => {}
        }
        sent.insert("additionalProperties".into(), Value::Bool(false));
    }

    /// `allOf` merged into the schema holding it: properties joined,
    /// `required` joined, any other keyword kept where the schema has none.
    fn merge_all_of(&mut self, map: &mut Map<String, Value>, all_of: Vec<Value>) {
        for branch in all_of {
            let branch = match branch {
                Value::Object(branch) => match branch.get("$ref").and_then(Value::as_str) {
                    Some(reference) if branch.len() == 1 => {
                        match resolve_local_reference(self.root, reference) {
                            Some(Value::Object(target)) => target.clone(),
                            _ => branch,
                        }
                    }
                    _ => branch,
                },
                _ => continue,
            };
            for (key, value) in branch {
                match (key.as_str(), map.get_mut(&key), value) {
                    ("properties", Some(Value::Object(into)), Value::Object(from)) => {
                        for (name, property) in from {
                            into.entry(name).or_insert(property);
                        }
                    }
                    ("required", Some(Value::Array(into)), Value::Array(from)) => {
                        for name in from {
                            if !into.contains(&name) {
                                into.push(name);
                            }
                        }
                    }
                    (_, Some(_), _) => {}
                    (_, None, value) => {
                        map.insert(key, value);
                    }
                }
            }
        }
    }

    /// Whether `key` (of a schema of `types`) is kept for the family.
    fn keeps(&self, key: &str, value: &Value, types: &[String]) -> bool {
        let is = |name: &str| types.iter().any(|t| t == name);
        let numeric = is("integer") || is("number");
        match self.family {
            Family::Anthropic => match key {
                "type" | "enum" | "const" | "description" | "title" => true,
                "format" => {
                    is("string")
                        && value
                            .as_str()
                            .is_some_and(|format| ANTHROPIC_FORMATS.contains(&format))
                }
                "minItems" => value.as_u64().is_some_and(|count| count <= 1),
                _ => false,
            },
            Family::OpenAiStrict => match key {
                "type" | "enum" | "const" | "description" | "title" => true,
                "pattern" => is("string"),
                "format" => {
                    is("string")
                        && value
                            .as_str()
                            .is_some_and(|format| OPENAI_FORMATS.contains(&format))
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => {
                    numeric
                }
                "minItems" | "maxItems" => is("array"),
                _ => false,
            },
            Family::Gemini => match key {
                "$id" | "$anchor" | "type" | "title" | "description" | "enum" | "minItems"
                | "maxItems" | "minimum" | "maximum" | "propertyOrdering" => true,
                "format" => value
                    .as_str()
                    .is_some_and(|format| GEMINI_FORMATS.contains(&format)),
                _ => false,
            },
        }
    }
}

/// A schema with a type list as an `anyOf` of one branch per type, each
/// with the keywords that apply to it; annotations stay outside.
fn split_types(mut map: Map<String, Value>, types: &[Value]) -> Value {
    map.remove("type");
    let mut outer = Map::new();
    for key in ["description", "title"] {
        if let Some(value) = map.remove(key) {
            outer.insert(key.to_owned(), value);
        }
    }
    let mut branches = Vec::new();
    for instance_type in types {
        let name = instance_type.as_str().unwrap_or_default();
        let mut branch = Map::new();
        branch.insert("type".into(), instance_type.clone());
        for (key, value) in &map {
            match key.as_str() {
                "enum" => {
                    let values: Vec<Value> = value
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|value| {
                            let of = type_of(value);
                            of == name || (of == "integer" && name == "number")
                        })
                        .cloned()
                        .collect();
                    branch.insert(key.clone(), Value::Array(values));
                }
                _ if keyword_applies(key, name) => {
                    branch.insert(key.clone(), value.clone());
                }
                _ => {}
            }
        }
        // A type none of whose listed values exists is left out.
        if branch
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            continue;
        }
        branches.push(Value::Object(branch));
    }
    outer.insert("anyOf".into(), Value::Array(branches));
    Value::Object(outer)
}

/// Lets `schema` also accept `null`, unless it already does.
fn make_nullable(schema: &mut Value) {
    if admits_null(schema) {
        return;
    }
    let Value::Object(map) = schema else {
        return;
    };
    if !map.contains_key("$ref") && !map.contains_key("anyOf") {
        match map.get_mut("type") {
            Some(Value::String(one)) => {
                let one = std::mem::take(one);
                map.insert("type".into(), json!([one, "null"]));
                if let Some(Value::Array(values)) = map.get_mut("enum") {
                    values.push(Value::Null);
                }
                if let Some(constant) = map.remove("const") {
                    map.insert("enum".into(), json!([constant, null]));
                }
                return;
            }
            Some(Value::Array(many)) => {
                many.push(json!("null"));
                if let Some(Value::Array(values)) = map.get_mut("enum") {
                    values.push(Value::Null);
                }
                if let Some(constant) = map.remove("const") {
                    map.insert("enum".into(), json!([constant, null]));
                }
                return;
            }
            _ => {}
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.push(json!({ "type": "null" }));
        return;
    }
    let inner = std::mem::take(schema);
    *schema = json!({ "anyOf": [inner, { "type": "null" }] });
}

/// Whether `schema` accepts `null` at its top (a null type, a null in its
/// enum, or an `anyOf` branch that does).
fn admits_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(one)) if one == "null" => return true,
        Some(Value::Array(many)) if many.iter().any(|t| t == "null") => return true,
        _ => {}
    }
    schema.get("const").is_some_and(Value::is_null)
        || schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.iter().any(Value::is_null))
        || schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(admits_null))
}

/// A property name as a JSON Pointer token (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Every `$ref` in `schema` that starts with `from` made to start with `to`.
fn rename_references(schema: &mut Value, from: &str, to: &str) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(reference) if key == "$ref" => {
                        if let Some(rest) = reference.strip_prefix(from) {
                            *reference = format!("{to}{rest}");
                        }
                    }
                    other => rename_references(other, from, to),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename_references(item, from, to);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `schemars` writes for an invoice with a `u64`, an
    /// `Option<String>`, a documented nested struct, a list of structs, an
    /// enum, an `Option` of a struct and a defaulted list.
    fn invoice() -> Value {
        json!({
            "description": "An invoice.",
            "type": "object",
            "properties": {
                "number": { "type": "string", "description": "Its number." },
                "total_cents": { "type": "integer", "format": "uint64", "minimum": 0 },
                "due": { "type": ["string", "null"], "format": "date" },
                "customer": { "$ref": "#/$defs/Customer", "description": "The customer." },
                "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } },
                "status": { "$ref": "#/$defs/Status" },
                "note": { "anyOf": [{ "$ref": "#/$defs/Customer" }, { "type": "null" }] },
                "tags": { "type": "array", "items": { "type": "string" }, "default": [] }
            },
            "required": ["number", "total_cents", "customer", "lines", "status"],
            "$defs": {
                "Customer": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string" },
                        "id": { "type": "integer", "format": "uint32", "minimum": 0 }
                    },
                    "required": ["name", "id"]
                },
                "Line": {
                    "type": "object",
                    "properties": {
                        "sku": { "type": "string", "minLength": 1 },
                        "quantity": {
                            "type": "integer", "format": "uint16", "minimum": 0, "maximum": 65535
                        }
                    },
                    "required": ["sku", "quantity"]
                },
                "Status": { "type": "string", "enum": ["Open", "Paid"] }
            }
        })
    }

    #[test]
    fn anthropic_drops_numeric_bounds_and_formats_into_descriptions_and_closes_objects() {
        let customer = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "id": { "type": "integer", "description": "{\"format\":\"uint32\",\"minimum\":0}" }
            },
            "required": ["name", "id"],
            "additionalProperties": false
        });
        let mut documented = customer.clone();
        documented["description"] = json!("The customer.");
        assert_eq!(
            anthropic(&invoice()).unwrap(),
            json!({
                "$defs": {
                    "Customer": customer,
                    "Line": {
                        "type": "object",
                        "properties": {
                            "sku": { "type": "string", "description": "{\"minLength\":1}" },
                            "quantity": {
                                "type": "integer",
                                "description": "{\"format\":\"uint16\",\"maximum\":65535,\"minimum\":0}"
                            }
                        },
                        "required": ["sku", "quantity"],
                        "additionalProperties": false
                    },
                    "Status": { "type": "string", "enum": ["Open", "Paid"] }
                },
                "description": "An invoice.",
                "type": "object",
                "properties": {
                    "number": { "type": "string", "description": "Its number." },
                    "total_cents": {
                        "type": "integer",
                        "description": "{\"format\":\"uint64\",\"minimum\":0}"
                    },
                    "due": { "anyOf": [{ "type": "string", "format": "date" }, { "type": "null" }] },
                    "customer": documented,
                    "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } },
                    "status": { "$ref": "#/$defs/Status" },
                    "note": { "anyOf": [{ "$ref": "#/$defs/Customer" }, { "type": "null" }] },
                    "tags": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "{\"default\":[]}"
                    }
                },
                "required": ["number", "total_cents", "customer", "lines", "status"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn openai_strict_requires_every_property_and_makes_the_optional_ones_nullable() {
        let customer = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "id": { "type": "integer", "minimum": 0, "description": "{\"format\":\"uint32\"}" }
            },
            "required": ["id", "name"],
            "additionalProperties": false
        });
        let mut documented = customer.clone();
        documented["description"] = json!("The customer.");
        assert_eq!(
            openai_strict(&invoice()).unwrap(),
            json!({
                "$defs": {
                    "Customer": customer,
                    "Line": {
                        "type": "object",
                        "properties": {
                            "sku": { "type": "string", "description": "{\"minLength\":1}" },
                            "quantity": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": 65535,
                                "description": "{\"format\":\"uint16\"}"
                            }
                        },
                        "required": ["quantity", "sku"],
                        "additionalProperties": false
                    },
                    "Status": { "type": "string", "enum": ["Open", "Paid"] }
                },
                "description": "An invoice.",
                "type": "object",
                "properties": {
                    "number": { "type": "string", "description": "Its number." },
                    "total_cents": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "{\"format\":\"uint64\"}"
                    },
                    "due": { "type": ["string", "null"], "format": "date" },
                    "customer": documented,
                    "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } },
                    "status": { "$ref": "#/$defs/Status" },
                    "note": { "anyOf": [{ "$ref": "#/$defs/Customer" }, { "type": "null" }] },
                    "tags": {
                        "type": ["array", "null"],
                        "items": { "type": "string" },
                        "description": "{\"default\":[]}"
                    }
                },
                "required": [
                    "customer", "due", "lines", "note", "number", "status", "tags", "total_cents"
                ],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn gemini_keeps_bounds_and_open_objects_and_drops_unknown_formats() {
        let customer = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "id": { "type": "integer", "minimum": 0, "description": "{\"format\":\"uint32\"}" }
            },
            "required": ["name", "id"]
        });
        let mut documented = customer.clone();
        documented["description"] = json!("The customer.");
        assert_eq!(
            gemini(&invoice()),
            json!({
                "$defs": {
                    "Customer": customer,
                    "Line": {
                        "type": "object",
                        "properties": {
                            "sku": { "type": "string", "description": "{\"minLength\":1}" },
                            "quantity": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": 65535,
                                "description": "{\"format\":\"uint16\"}"
                            }
                        },
                        "required": ["sku", "quantity"]
                    },
                    "Status": { "type": "string", "enum": ["Open", "Paid"] }
                },
                "description": "An invoice.",
                "type": "object",
                "properties": {
                    "number": { "type": "string", "description": "Its number." },
                    "total_cents": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "{\"format\":\"uint64\"}"
                    },
                    "due": { "type": ["string", "null"], "format": "date" },
                    "customer": documented,
                    "lines": { "type": "array", "items": { "$ref": "#/$defs/Line" } },
                    "status": { "$ref": "#/$defs/Status" },
                    "note": { "anyOf": [{ "$ref": "#/$defs/Customer" }, { "type": "null" }] },
                    "tags": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "{\"default\":[]}"
                    }
                },
                "required": ["number", "total_cents", "customer", "lines", "status"]
            })
        );
    }

    #[test]
    fn anthropic_splits_a_type_list_into_branches_with_their_own_keywords() {
        let schema = json!({
            "type": "object",
            "properties": {
                "size": {
                    "description": "A size or a label.",
                    "type": ["integer", "string", "null"],
                    "minimum": 1,
                    "maxLength": 8,
                    "enum": [1, 2, "big", null]
                }
            }
        });
        assert_eq!(
            anthropic(&schema).unwrap()["properties"]["size"],
            json!({
                "description": "A size or a label.",
                "anyOf": [
                    { "type": "integer", "enum": [1, 2], "description": "{\"minimum\":1}" },
                    { "type": "string", "enum": ["big"], "description": "{\"maxLength\":8}" },
                    { "type": "null", "enum": [null] }
                ]
            })
        );
    }

    #[test]
    fn one_of_is_any_of_for_anthropic_and_openai_and_stays_for_gemini() {
        let schema = json!({
            "type": "object",
            "properties": {
                "kind": { "oneOf": [{ "type": "string", "const": "A" }, { "type": "integer" }] }
            },
            "required": ["kind"]
        });
        let any_of =
            json!({ "anyOf": [{ "type": "string", "const": "A" }, { "type": "integer" }] });
        assert_eq!(anthropic(&schema).unwrap()["properties"]["kind"], any_of);
        assert_eq!(
            openai_strict(&schema).unwrap()["properties"]["kind"],
            any_of
        );
        assert_eq!(
            gemini(&schema)["properties"]["kind"],
            json!({ "oneOf": [{ "type": "string", "enum": ["A"] }, { "type": "integer" }] })
        );
    }

    #[test]
    fn maps_free_form_objects_and_untyped_values_are_inexpressible_but_for_gemini() {
        let cases = [
            (
                json!({ "type": "object", "additionalProperties": { "type": "integer" } }),
                "a map (`additionalProperties` with a schema) cannot be closed with `additionalProperties: false`",
            ),
            (
                json!({ "type": "object" }),
                "an object without `properties` (any keys) cannot be closed with `additionalProperties: false`",
            ),
            (
                json!({ "type": "object", "properties": {"a": {"type": "string"}}, "patternProperties": { "^x": {} } }),
                "an object with `patternProperties` (a map) cannot be closed",
            ),
            (
                json!({ "description": "Anything." }),
                "a schema without a `type` (any value) cannot be constrained",
            ),
            (
                json!(true),
                "a boolean schema (any value, or none) has no type the provider can constrain",
            ),
        ];
        for (inner, reason) in cases {
            let schema = json!({
                "type": "object",
                "properties": { "counts/by~day": inner.clone() },
                "required": ["counts/by~day"]
            });
            let expected = Inexpressible {
                path: "/properties/counts~1by~0day".into(),
                reason,
            };
            assert_eq!(anthropic(&schema), Err(expected.clone()), "{inner}");
            assert_eq!(openai_strict(&schema), Err(expected), "{inner}");
            let for_gemini = if inner.get("patternProperties").is_some() {
                json!({
                    "type": "object",
                    "properties": { "a": { "type": "string" } },
                    "description": "{\"patternProperties\":{\"^x\":{}}}"
                })
            } else {
                inner
            };
            assert_eq!(gemini(&schema)["properties"]["counts/by~day"], for_gemini);
        }
    }

    #[test]
    fn the_error_names_the_place_and_never_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": { "secret_field_name_sk_123": { "type": "object" } }
        });
        let error = anthropic(&schema).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the schema at `/properties/secret_field_name_sk_123` cannot be sent: an object without `properties` (any keys) cannot be closed with `additionalProperties: false`"
        );
    }

    #[test]
    fn openai_nullable_forms_follow_the_optional_property() {
        let schema = json!({
            "type": "object",
            "properties": {
                "status": { "type": "string", "enum": ["Open", "Paid"] },
                "kind": { "const": "invoice" },
                "line": { "$ref": "#/$defs/Line" },
                "either": { "anyOf": [{ "type": "string" }, { "type": "integer" }] },
                "already": { "type": ["integer", "null"] }
            },
            "$defs": { "Line": { "type": "object", "properties": { "sku": { "type": "string" } }, "required": ["sku"] } }
        });
        let sent = openai_strict(&schema).unwrap();
        assert_eq!(
            sent["properties"],
            json!({
                "status": { "type": ["string", "null"], "enum": ["Open", "Paid", null] },
                "kind": { "type": ["string", "null"], "enum": ["invoice", null] },
                "line": { "anyOf": [{ "$ref": "#/$defs/Line" }, { "type": "null" }] },
                "either": { "anyOf": [{ "type": "string" }, { "type": "integer" }, { "type": "null" }] },
                "already": { "type": ["integer", "null"] }
            })
        );
        assert_eq!(
            sent["required"],
            json!(["already", "either", "kind", "line", "status"])
        );
    }

    #[test]
    fn all_of_is_merged_for_openai_and_gemini_and_kept_for_anthropic() {
        let schema = json!({
            "type": "object",
            "allOf": [
                { "$ref": "#/$defs/Base" },
                { "properties": { "extra": { "type": "boolean" } }, "required": ["extra"] }
            ],
            "properties": { "own": { "type": "string" } },
            "required": ["own"],
            "$defs": { "Base": { "type": "object", "properties": { "id": { "type": "integer" } }, "required": ["id"] } }
        });
        let merged = openai_strict(&schema).unwrap();
        assert!(merged.get("allOf").is_none());
        assert_eq!(
            merged["properties"],
            json!({ "own": { "type": "string" }, "id": { "type": "integer" }, "extra": { "type": "boolean" } })
        );
        assert_eq!(merged["required"], json!(["extra", "id", "own"]));
        assert_eq!(gemini(&schema)["required"], json!(["own", "id", "extra"]));
        let kept = anthropic(&schema).unwrap();
        assert_eq!(kept["allOf"][0], json!({ "$ref": "#/$defs/Base" }));
    }

    #[test]
    fn a_recursive_reference_beside_keywords_keeps_only_its_ref() {
        let schema = json!({
            "type": "object",
            "properties": { "root": { "$ref": "#/$defs/Node", "description": "The root." } },
            "required": ["root"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": { "child": { "$ref": "#/$defs/Node", "description": "Below." } },
                    "required": ["child"]
                }
            }
        });
        let sent = openai_strict(&schema).unwrap();
        assert_eq!(sent["properties"]["root"]["description"], "The root.");
        assert_eq!(
            sent["properties"]["root"]["properties"]["child"],
            json!({ "$ref": "#/$defs/Node" })
        );
        assert_eq!(
            sent["$defs"]["Node"]["properties"]["child"]["properties"]["child"],
            json!({ "$ref": "#/$defs/Node" })
        );
    }

    #[test]
    fn anthropic_keeps_min_items_of_zero_or_one_only() {
        let schema = json!({
            "type": "object",
            "properties": {
                "one": { "type": "array", "items": { "type": "string" }, "minItems": 1 },
                "two": { "type": "array", "items": { "type": "string" }, "minItems": 2, "maxItems": 3 }
            }
        });
        let sent = anthropic(&schema).unwrap();
        assert_eq!(sent["properties"]["one"]["minItems"], 1);
        assert_eq!(
            sent["properties"]["two"],
            json!({
                "type": "array",
                "items": { "type": "string" },
                "description": "{\"maxItems\":3,\"minItems\":2}"
            })
        );
    }

    #[test]
    fn gemini_moves_definitions_to_defs_with_their_references() {
        let schema = json!({
            "type": "object",
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": { "line": { "$ref": "#/definitions/Line" } },
            "definitions": { "Line": { "type": "object", "properties": { "sku": { "type": "string" } } } }
        });
        assert_eq!(
            gemini(&schema),
            json!({
                "type": "object",
                "properties": { "line": { "$ref": "#/$defs/Line" } },
                "$defs": { "Line": { "type": "object", "properties": { "sku": { "type": "string" } } } }
            })
        );
    }
}
