//! A request's `tools`: [`ToolInfo`]s exported as `functionDeclarations`,
//! declarations parsed.

use serde_json::{Map, Value, json};

use super::FORMAT;
use super::parts::{array, missing, object, own_extras, take, wrong_type};
use crate::wire::declaration::{ProviderTool, ToolDeclaration};
use crate::wire::decode::check_depth;
use crate::wire::error::{WireError, WireErrorKind};
use crate::wire::tool_schema;
use agent_loop_core::conversation::Extras;
use agent_loop_core::tool::ToolInfo;

/// The declaration fields this crate models, in both key cases.
const DECLARATION_FIELDS: &[&str] = &[
    "name",
    "description",
    "parameters",
    "parametersJsonSchema",
    "parameters_json_schema",
];

/// One `FunctionDeclaration`: `{"name", "description"?,
/// "parametersJsonSchema", …}`.
fn export_declaration(info: &ToolInfo) -> Value {
    let mut declaration = Map::new();
    declaration.insert("name".into(), Value::String(info.name.clone()));
    if !info.description.is_empty() {
        declaration.insert(
            "description".into(),
            Value::String(info.description.clone()),
        );
    }
    // As Gemini accepts them (`wire::tool_schema::gemini`); what cannot
    // be repaired goes as declared, and `GeminiModel` refuses it unsent.
    let parameters = match tool_schema::gemini(&info.parameters) {
        Ok(parameters) => parameters.into_owned(),
        Err(_) => info.parameters.clone(),
    };
    declaration.insert("parametersJsonSchema".into(), parameters);
    declaration.extend(own_extras(&info.extras, DECLARATION_FIELDS));
    Value::Object(declaration)
}

/// `{"functionDeclarations": [...]}` for `declarations`.
fn function_tool(declarations: Vec<Value>) -> Value {
    json!({ "functionDeclarations": declarations })
}

/// The request's `tools` array for these tools: one `Tool` object
/// `{"functionDeclarations": [...]}` holding every tool in order, each one
/// `{"name", "description"?, "parametersJsonSchema", …}` as the Gemini API
/// reference documents `FunctionDeclaration`
/// (<https://ai.google.dev/api/caching#FunctionDeclaration>).
/// `parametersJsonSchema` takes a full JSON Schema (the older `parameters`
/// takes only an OpenAPI subset); an empty description is left out; extras
/// are written only when they came from Gemini; `strict` has no Gemini
/// field and is not sent. No tools → an empty array.
///
/// ```
/// use agent_loop_core::tool::ToolInfo;
/// use agent_loop_providers::wire::gemini;
///
/// let tools = gemini::export_tools(&[ToolInfo::without_parameters("now", "The time.")]);
/// assert_eq!(tools[0]["functionDeclarations"][0]["name"], "now");
/// assert_eq!(tools[0]["functionDeclarations"][0]["parametersJsonSchema"]["type"], "object");
/// ```
pub fn export_tools<'t>(tools: impl IntoIterator<Item = &'t ToolInfo>) -> Vec<Value> {
    let declarations: Vec<Value> = tools.into_iter().map(export_declaration).collect();
    if declarations.is_empty() {
        return Vec::new();
    }
    vec![function_tool(declarations)]
}

/// The request's `tools` array for parsed declarations, in their order:
/// each run of [`ToolDeclaration::Function`]s as one `functionDeclarations`
/// object ([`export_tools`]'s), each Gemini [`ToolDeclaration::Provider`]
/// verbatim where it stood. So a request's tools come back as they came:
/// [`parse_tools`] of the result gives `tools` again, built-in tools
/// (`googleSearch`, `codeExecution`, ...) in their places.
///
/// # Errors
///
/// [`WireErrorKind::ProviderTool`] at `tools[i]` (its index among the
/// declarations) for a provider tool of another format: only its own
/// provider knows what it is.
pub fn export_declarations(tools: &[ToolDeclaration]) -> Result<Vec<Value>, WireError> {
    let mut exported = Vec::new();
    // The declarations of the run of function tools being read.
    let mut functions = Vec::new();
    for (index, tool) in tools.iter().enumerate() {
        match tool {
            ToolDeclaration::Function(info) => functions.push(export_declaration(info)),
            ToolDeclaration::Provider(tool) if tool.format == FORMAT => {
                if !functions.is_empty() {
                    exported.push(function_tool(std::mem::take(&mut functions)));
                }
                exported.push(tool.value.clone());
            }
            ToolDeclaration::Provider(tool) => {
                return Err(WireError::new(
                    FORMAT,
                    format!("tools[{index}]"),
                    WireErrorKind::ProviderTool {
                        name: tool.name.clone(),
                        tool_type: tool.tool_type.clone(),
                        format: tool.format,
                    },
                ));
            }
        }
    }
    if !functions.is_empty() {
        exported.push(function_tool(functions));
    }
    Ok(exported)
}

/// Parses a request's `tools` array (`Tool` objects).
///
/// Each element of a `Tool`'s `functionDeclarations` (or
/// `function_declarations`) is a [`ToolDeclaration::Function`]: its
/// `parametersJsonSchema` becomes [`ToolInfo::parameters`] as given; the
/// older `parameters` (an OpenAPI subset, `"type": "OBJECT"`) is read with
/// its upper-case `type`s written in JSON Schema's lower case; neither →
/// `{"type": "object", "properties": {}}`; a missing or `null`
/// `description` becomes `""`; its other fields (`behavior`, `response`,
/// `responseJsonSchema`) go to the [`ToolInfo::extras`]. Every other field
/// of a `Tool` (`googleSearch`, `codeExecution`, `urlContext`,
/// `fileSearch`, …) is a tool Gemini runs itself, kept as a
/// [`ToolDeclaration::Provider`] `{"<field>": …}` named after the field.
///
/// # Errors
///
/// [`WireErrorKind::WrongType`] when `tools` or `functionDeclarations` is
/// not an array, a tool or declaration not an object, or a `name` or
/// `description` not a string; [`WireErrorKind::MissingField`] for a
/// declaration without `name`. The path is
/// `tools[i].functionDeclarations[j]`.
pub fn parse_tools(tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    check_depth(FORMAT, "tools", tools)?;
    parse_tools_at("tools", tools)
}

/// [`parse_tools`] with error paths rooted at `root`.
pub(super) fn parse_tools_at(root: &str, tools: &Value) -> Result<Vec<ToolDeclaration>, WireError> {
    let Value::Array(items) = tools else {
        return Err(wrong_type(root, root, "an array", tools));
    };
    let mut declarations = Vec::new();
    for (index, tool) in items.iter().enumerate() {
        let path = format!("{root}[{index}]");
        let mut fields = object(&path, "tool", tool)?.clone();
        if let Some(functions) = take(&mut fields, "functionDeclarations", "function_declarations")
        {
            for (position, declaration) in array(&path, "functionDeclarations", &functions)?
                .iter()
                .enumerate()
            {
                let path = format!("{path}.functionDeclarations[{position}]");
                declarations.push(ToolDeclaration::Function(parse_declaration(
                    &path,
                    declaration,
                )?));
            }
        }
        for (key, value) in fields {
            let mut tool = Map::new();
            tool.insert(key.clone(), value);
            declarations.push(ToolDeclaration::Provider(ProviderTool {
                format: FORMAT,
                name: key.clone(),
                tool_type: key,
                value: Value::Object(tool),
            }));
        }
    }
    Ok(declarations)
}

fn parse_declaration(path: &str, value: &Value) -> Result<ToolInfo, WireError> {
    let mut fields = object(path, "functionDeclaration", value)?.clone();
    let name = match fields.remove("name") {
        Some(Value::String(name)) => name,
        None | Some(Value::Null) => return Err(missing(path, "name")),
        Some(other) => return Err(wrong_type(path, "name", "a string", &other)),
    };
    let description = match fields.remove("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(description)) => description,
        Some(other) => return Err(wrong_type(path, "description", "a string", &other)),
    };
    let json_schema = take(
        &mut fields,
        "parametersJsonSchema",
        "parameters_json_schema",
    )
    .filter(|schema| !schema.is_null());
    let openapi = fields
        .remove("parameters")
        .filter(|schema| !schema.is_null());
    let parameters = match (json_schema, openapi) {
        // Both given (the API refuses that): the JSON Schema wins.
        (Some(schema), _) => schema,
        (None, Some(mut schema)) => {
            lower_case_types(&mut schema);
            schema
        }
        (None, None) => json!({ "type": "object", "properties": {} }),
    };
    let mut info = ToolInfo::new(name, description, parameters);
    info.extras = Extras::new(FORMAT, fields);
    Ok(info)
}

/// OpenAPI `Schema` types (`STRING`, `OBJECT`, …, as `types.py` `Type`
/// spells them) in JSON Schema's lower case, through `properties`, `items`
/// and `anyOf`.
fn lower_case_types(schema: &mut Value) {
    let Value::Object(node) = schema else { return };
    if let Some(Value::String(kind)) = node.get_mut("type")
        && matches!(
            kind.as_str(),
            "STRING" | "NUMBER" | "INTEGER" | "BOOLEAN" | "ARRAY" | "OBJECT" | "NULL"
        )
    {
        *kind = kind.to_ascii_lowercase();
    }
    if let Some(Value::Object(properties)) = node.get_mut("properties") {
        properties.values_mut().for_each(lower_case_types);
    }
    if let Some(items) = node.get_mut("items") {
        lower_case_types(items);
    }
    for key in ["anyOf", "any_of"] {
        if let Some(Value::Array(options)) = node.get_mut(key) {
            options.iter_mut().for_each(lower_case_types);
        }
    }
}
