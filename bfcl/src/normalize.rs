//! BFCL tool declarations → valid [`ToolInfo`]s.
//!
//! BFCL declarations are JSON-Schema-like but not JSON Schema, and their
//! names are often dotted. What the data really holds (surveyed over the
//! Python categories of `bfcl-eval` 2026.3.23: 6,353 declarations; then its
//! Java, JavaScript and multi-turn ones) and what is done with it:
//!
//! | quirk | seen | done here |
//! | --- | --- | --- |
//! | name outside `^[a-zA-Z0-9_-]{1,64}$` (`spotify.play`) | 1,495 names | [`NameRules::sanitize`], original kept for the answer |
//! | `"type": "dict"` | every top level, and nested | `"object"` |
//! | `"type": "float"` | ~1,000 | `"number"` |
//! | `"type": "tuple"` (with `items`) | 11 | `"array"` |
//! | `"type": "any"` | 13 | `type` removed: no constraint |
//! | other type names of BFCL's table (`long`, `HashMap`, `Boolean`, ...) | 0 in Python files (a Java file under another name has them) | their JSON Schema type, through one table ([`TYPE_NAMES`]) |
//! | Java and JavaScript parameters (`simple_java`: 258, `simple_javascript`: 135) | every top-level parameter | `"string"` with the language type in the description, as BFCL sends them ([`literal_parameter`]) |
//! | `"optional": true / "True" / "yes" / ["field"] / []` | 54 | removed: not JSON Schema, and BFCL's own checker reads only `required` (one declaration lists a field in both; `required` wins) |
//! | `required` naming a field absent from `properties` | 3 (one object) | kept: valid JSON Schema (the key must be there), and the answers do give it |
//! | `"type": "dict"` without `properties` | 11 | `{"type": "object"}`: any object |
//! | `default` of another type than the field (`"None"` for an integer), a `default` on the top-level object | common / 2 | kept: `default` is an annotation, never validated |
//! | `enum` of item values on an array (`"type": "array", "enum": ["a", "b"]`) | 21 | moved to `items` (see `enum_fixes`) |
//! | `enum` none of whose values has the field's type (`boolean` with `["True", "False"]`, `integer` with `["1", "2"]`) | 55 | kept, counted |
//! | `items` given as a type name (`"items": "string"`) | 0 | handled anyway (`{"type": "string"}`), cheap and named in the brief |
//!
//! Descriptions (but for the language notes BFCL adds to Java and
//! JavaScript ones), `enum`, `default`, `format`, bounds are kept as they are.
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
    /// Java and JavaScript only: model-facing tool name → its parameters as
    /// BFCL declared them (name → BFCL schema), to write the ground truth
    /// as the literals the model sends ([`super::literal`]).
    pub literal_parameters: HashMap<String, Map<String, Value>>,
}

/// The language a category's declarations are written for. BFCL tells it
/// by the category name, as its harness does (`is_java`, `is_js`):
/// `javascript` in the name is JavaScript, else `java` is Java, else
/// Python.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    /// Python 3 (every category but two).
    Python,
    /// Java 8 (`simple_java`).
    Java,
    /// JavaScript (`simple_javascript`).
    JavaScript,
}

impl Language {
    /// The language of the category named `category`.
    pub fn of_category(category: &str) -> Self {
        if category.contains("javascript") {
            Language::JavaScript
        } else if category.contains("java") {
            Language::Java
        } else {
            Language::Python
        }
    }

    /// The language's name, as BFCL's descriptions write it.
    pub fn label(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Java => "Java",
            Language::JavaScript => "JavaScript",
        }
    }

    /// The sentence BFCL's harness appends to each function description.
    fn hint(self) -> &'static str {
        match self {
            Language::Python => " Note that the provided function is in Python 3 syntax.",
            Language::Java => " Note that the provided function is in Java 8 SDK syntax.",
            Language::JavaScript => " Note that the provided function is in JavaScript syntax.",
        }
    }
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
///
/// For [`Language::Java`] and [`Language::JavaScript`], every top-level
/// parameter becomes a string, as BFCL's harness sends it: the model writes
/// that language's literal (`42L`, `new int[]{1, 2}`), and the description
/// names the language type (see [`literal_parameter`]). Python
/// descriptions are kept as they are (the embedded counts were measured so).
pub fn declarations(
    functions: &[Value],
    language: Language,
    rules: NameRules,
    rewrites: &mut Rewrites,
) -> Result<Declarations, DeclarationError> {
    let mut literal_parameters = HashMap::new();
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
        let mut description = match function.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(_) => return Err(malformed("`description` is not a string")),
        };
        let parameters = match function.get("parameters") {
            // No parameters: a function without arguments, as OpenAI reads it.
            None | Some(Value::Null) => serde_json::json!({ "type": "object", "properties": {} }),
            Some(Value::Object(parameters)) if language != Language::Python => {
                description.push_str(language.hint());
                let declared = match parameters.get("properties") {
                    Some(Value::Object(properties)) => properties.clone(),
                    None => Map::new(),
                    Some(_) => return Err(malformed("`parameters.properties` is not an object")),
                };
                // The parameters become strings first; the rest of the
                // schema then goes through the usual rules.
                let mut literal = parameters.clone();
                literal.insert(
                    "properties".into(),
                    declared
                        .iter()
                        .map(|(name, bfcl)| {
                            (name.clone(), literal_parameter(bfcl, language, rewrites))
                        })
                        .collect(),
                );
                literal_parameters.insert(rules.sanitize(original), declared);
                Value::Object(object_schema(&literal, rewrites))
            }
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
        literal_parameters,
    })
}

/// One top-level Java or JavaScript parameter as BFCL's harness sends it
/// (`bfcl-eval`, `utils.py`, `_func_doc_language_specific_pre_processing`,
/// reimplemented): `"type": "string"`, and the description says which
/// language type the string holds, with the element type of a list and
/// the entry schema of a JavaScript dict (whose `items`, `properties` and
/// `required` then go: they describe the value, not the string). Other
/// keywords (`default`, `enum`) are kept verbatim.
pub fn literal_parameter(bfcl: &Value, language: Language, rewrites: &mut Rewrites) -> Value {
    let Value::Object(map) = bfcl else {
        // Not a schema object: left for `bind` to refuse.
        return bfcl.clone();
    };
    let kind = map.get("type").and_then(Value::as_str).unwrap_or("any");
    let language_name = language.label();
    let mut description = map
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if kind == "any" {
        description.push_str(&format!(
            " This parameter can be of any type of {language_name} object in string representation."
        ));
    } else {
        description.push_str(&format!(
            " This is {language_name} {kind} type parameter in string representation."
        ));
    }
    let is_list = match language {
        Language::JavaScript => kind == "array",
        _ => matches!(kind, "Array" | "ArrayList"),
    };
    if is_list
        && let Some(item) = map
            .get("items")
            .and_then(|items| items.get("type"))
            .and_then(Value::as_str)
    {
        description.push_str(&format!(
            " The list elements are of type {item}; they are not in string representation."
        ));
    }
    if language == Language::JavaScript
        && kind == "dict"
        && let Some(properties) = map.get("properties")
    {
        description.push_str(&format!(
            " The dictionary entries have the following schema; they are not in string representation. {properties}"
        ));
    }
    let mut out: Map<String, Value> = map
        .iter()
        .filter(|(key, _)| !matches!(key.as_str(), "type" | "items" | "properties" | "required"))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    out.insert("type".into(), Value::String("string".into()));
    out.insert("description".into(), Value::String(description));
    count(
        rewrites,
        match language {
            Language::JavaScript => "JavaScript parameter → string literal",
            _ => "Java parameter → string literal",
        },
    );
    Value::Object(out)
}

/// One BFCL schema as JSON Schema (see the module docs for each rule).
/// Recurses into every keyword whose value is a schema or holds schemas.
pub fn schema(value: &Value, rewrites: &mut Rewrites) -> Value {
    match value {
        Value::Object(map) => Value::Object(object_schema(map, rewrites)),
        // `true`/`false` are valid schemas; anything else is left for the
        // JSON Schema check at bind to refuse with its reason.
        other => other.clone(),
    }
}

/// [`schema`] of a schema object.
fn object_schema(map: &Map<String, Value>, rewrites: &mut Rewrites) -> Map<String, Value> {
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
    out
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

/// BFCL's type names → JSON Schema types, one row per name: `(BFCL name,
/// JSON Schema type or `None` for no constraint, rewrite label)`.
///
/// Reimplemented from the table BFCL's harness (`bfcl-eval`, Apache-2.0,
/// `constants/type_mappings.py`, `GORILLA_TO_OPENAPI`) uses to send its
/// declarations to OpenAPI-style function calling, plus the names its
/// Java and JavaScript checkers know besides (`Boolean`, `Set`). One
/// difference: BFCL maps `any` to `string`, but the Python ground truth of
/// `any` parameters holds numbers and lists as well, so here `any` is no
/// constraint. JSON Schema's own names (`integer`, `number`, `string`,
/// `boolean`, `array`, `object`, `null`) pass unchanged; any other name
/// is kept for `bind` to refuse.
///
/// Java and JavaScript parameters become strings first
/// ([`literal_parameter`]), so of their declarations only the top-level
/// `dict` meets this table.
const TYPE_NAMES: &[(&str, Option<&str>, &str)] = &[
    // Python, as BFCL writes it.
    ("dict", Some("object"), "dict → object"),
    ("float", Some("number"), "float → number"),
    ("tuple", Some("array"), "tuple → array"),
    ("list", Some("array"), "list → array"),
    ("bool", Some("boolean"), "bool → boolean"),
    ("any", None, "any → no type"),
    // Java.
    ("byte", Some("integer"), "byte → integer"),
    ("short", Some("integer"), "short → integer"),
    ("long", Some("integer"), "long → integer"),
    ("double", Some("number"), "double → number"),
    ("char", Some("string"), "char → string"),
    ("String", Some("string"), "String → string"),
    ("Array", Some("array"), "Array → array"),
    ("ArrayList", Some("array"), "ArrayList → array"),
    ("Queue", Some("array"), "Queue → array"),
    ("Stack", Some("array"), "Stack → array"),
    ("Set", Some("array"), "Set → array"),
    ("HashMap", Some("object"), "HashMap → object"),
    ("Hashtable", Some("object"), "Hashtable → object"),
    ("Any", None, "Any → no type"),
    // JavaScript.
    ("Boolean", Some("boolean"), "Boolean → boolean"),
    ("Bigint", Some("integer"), "Bigint → integer"),
];

/// One type name through [`TYPE_NAMES`]; `None` when there is no constraint.
fn type_name(name: &str, rewrites: &mut Rewrites) -> Option<String> {
    match TYPE_NAMES.iter().find(|(bfcl, _, _)| *bfcl == name) {
        Some((_, mapped, rewrite)) => {
            count(rewrites, rewrite);
            mapped.map(str::to_owned)
        }
        None => Some(name.to_owned()),
    }
}

fn count(rewrites: &mut Rewrites, rewrite: &'static str) {
    *rewrites.entry(rewrite).or_default() += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `agent_loop::testing::generate` on every declaration of every
    /// embedded category, as the replay normalises them: each value passes
    /// its schema, or the generator names a keyword it does not support
    /// there (it checks its own value, and names each keyword that value
    /// fails `...: invalid`: never without a reason).
    #[test]
    fn generated_arguments_pass_every_normalised_bfcl_schema_or_say_why() {
        let mut checked = 0;
        for category in super::super::embedded() {
            let language = Language::of_category(&category.name);
            for line in category
                .tasks
                .lines()
                .filter(|line| !line.trim().is_empty())
            {
                let Ok(task) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                let Some(Value::Array(functions)) = task.get("function") else {
                    continue;
                };
                let Ok(declared) =
                    declarations(functions, language, NameRules::OpenAi, &mut Rewrites::new())
                else {
                    continue;
                };
                for info in &declared.infos {
                    for seed in 0..2 {
                        let generated = agent_loop::testing::generate(&info.parameters, seed);
                        let wrong = generated
                            .unsatisfied
                            .iter()
                            .filter(|note| note.ends_with(": invalid"))
                            .count();
                        assert!(
                            wrong == 0 || wrong < generated.unsatisfied.len(),
                            "{}: {} for {}: {:?}",
                            category.name,
                            generated.value,
                            info.parameters,
                            generated.unsatisfied
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 2000, "{checked} schemas checked");
    }

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
        let error = declarations(
            &functions,
            Language::Python,
            NameRules::OpenAi,
            &mut Rewrites::new(),
        )
        .unwrap_err();
        assert_eq!(
            error,
            DeclarationError::NameCollision("`a.b` and `a_b` both become `a_b`".into())
        );
    }

    #[test]
    fn java_and_javascript_parameters_become_described_strings() {
        let mut rewrites = Rewrites::new();
        let functions = [json!({
            "name": "Sorter.sort",
            "description": "Sorts.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "ids": { "type": "ArrayList", "description": "Ids.", "items": { "type": "long" } },
                    "table": { "type": "HashMap", "description": "Map." },
                    "target": { "type": "any", "description": "Anything." }
                },
                "required": ["ids"]
            }
        })];
        let declared =
            declarations(&functions, Language::Java, NameRules::OpenAi, &mut rewrites).unwrap();
        assert_eq!(
            declared.infos[0].description,
            "Sorts. Note that the provided function is in Java 8 SDK syntax."
        );
        assert_eq!(
            declared.infos[0].parameters,
            json!({
                "type": "object",
                "properties": {
                    "ids": { "type": "string", "description": "Ids. This is Java ArrayList type parameter in string representation. The list elements are of type long; they are not in string representation." },
                    "table": { "type": "string", "description": "Map. This is Java HashMap type parameter in string representation." },
                    "target": { "type": "string", "description": "Anything. This parameter can be of any type of Java object in string representation." }
                },
                "required": ["ids"]
            })
        );
        assert_eq!(rewrites["Java parameter → string literal"], 3);
        assert_eq!(rewrites["dict → object"], 1);
        assert!(declared.literal_parameters["Sorter_sort"].contains_key("ids"));

        let dict = literal_parameter(
            &json!({ "type": "dict", "description": "Cfg.", "properties": { "a": { "type": "String" } }, "default": {} }),
            Language::JavaScript,
            &mut rewrites,
        );
        assert_eq!(
            dict,
            json!({ "type": "string", "default": {}, "description": "Cfg. This is JavaScript dict type parameter in string representation. The dictionary entries have the following schema; they are not in string representation. {\"a\":{\"type\":\"String\"}}" })
        );
    }

    #[test]
    fn every_type_name_of_the_table_maps_once() {
        for (name, mapped, _) in TYPE_NAMES {
            let mut rewrites = Rewrites::new();
            let out = schema(&json!({ "type": name }), &mut rewrites);
            assert_eq!(out.get("type").and_then(Value::as_str), *mapped, "{name}");
            assert_eq!(rewrites.values().sum::<usize>(), 1, "{name}");
        }
        let mut rewrites = Rewrites::new();
        assert_eq!(
            schema(&json!({ "type": "integr" }), &mut rewrites),
            json!({ "type": "integr" })
        );
        assert!(rewrites.is_empty());
    }
}
