//! The `bind` algorithm of DESIGN.md section 6: check the ids, check the
//! extra tools, find the distinct definitions and their collisions, run each
//! distinct factory once, check what they built, assemble the modes. All or
//! nothing.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::join_all;
use serde_json::Value;

use crate::bind::{
    BindError, BindErrorKind, Binding, Bindings, Bound, BoundModeData, BoundTool, FactoryPanic,
};
use crate::definition::builder::Recipe;
use crate::definition::validate::check_tool_definition;
use crate::definition::{Definition, Validated};
use crate::limits::ResolvedToolLimits;
use crate::panic::panic_message;
use crate::tool::{self, NameRules, STRUCTURED_OUTPUT_TOOL_NAME, Tool};

impl Definition<Validated> {
    /// Binds the definition to one session: builds every tool for it and
    /// checks what was built (see the [`bind`](crate::bind) module for the
    /// order of the checks). The definition itself is untouched and can be
    /// bound again, concurrently, for other sessions.
    ///
    /// Errors: [`BindError`]; nothing of the binding exists then.
    pub async fn bind(&self, bindings: Bindings) -> Result<Definition<Bound>, BindError> {
        let binding = bind(&self.recipe, bindings).await?;
        Ok(Definition {
            recipe: Arc::clone(&self.recipe),
            state: Bound { binding },
        })
    }
}

/// Binds `recipe` to one session.
async fn bind(recipe: &Recipe, bindings: Bindings) -> Result<Binding, BindError> {
    if bindings.session_id().is_nil() {
        return Err(BindError::new(
            BindErrorKind::InvalidSessionId,
            "the session id is the nil UUID; use `SessionId::new()`",
        ));
    }
    if bindings.loop_id().is_nil() {
        return Err(BindError::new(
            BindErrorKind::InvalidLoopId,
            "the loop id is the nil UUID; use `LoopId::new()`",
        ));
    }
    for (index, definition) in bindings.extra_tools().iter().enumerate() {
        check_tool_definition(
            definition,
            &format!("bindings.tools[{index}]"),
            recipe.name_rules,
        )
        .map_err(|error| {
            BindError::new(
                BindErrorKind::InvalidDefinition,
                format!("extra tool definition `{}` is invalid", definition.name()),
            )
            .name(definition.name())
            .index(index)
            .source(error)
        })?;
    }

    let lists = ToolLists::of(recipe, &bindings);
    let distinct = lists.distinct_definitions()?;

    // Every distinct factory runs once, all of them concurrently; the first
    // failure in declaration order is reported, whatever finished first.
    // `build` is called inside the async block, so a factory that panics
    // while creating its future (a hand-written `ToolFactory`) is caught
    // like one that panics while running.
    let bindings = &bindings;
    let built = join_all(distinct.iter().map(|definition| {
        AssertUnwindSafe(async move { definition.factory().build(bindings.session()).await })
            .catch_unwind()
    }))
    .await;

    let mut tools = Vec::new();
    // Definition index (in `distinct`) → indices of its tools in `tools`.
    let mut produced: Vec<Vec<usize>> = Vec::with_capacity(distinct.len());
    for (definition, outcome) in distinct.iter().zip(built) {
        let instances = match outcome {
            Ok(Ok(instances)) => instances,
            Ok(Err(error)) => {
                return Err(BindError::new(
                    BindErrorKind::FactoryFailed,
                    format!(
                        "the factory of tool definition `{}` failed",
                        definition.name()
                    ),
                )
                .name(definition.name())
                .source(error));
            }
            Err(panic) => {
                return Err(BindError::new(
                    BindErrorKind::FactoryPanicked,
                    format!(
                        "the factory of tool definition `{}` panicked",
                        definition.name()
                    ),
                )
                .name(definition.name())
                .source(FactoryPanic {
                    message: panic_message(panic.as_ref()),
                }));
            }
        };
        // Each tool's own checks first, so a bad name is reported as such
        // rather than as a mismatch with the declared names.
        let mut checked = instances
            .into_iter()
            .enumerate()
            .map(|(index, instance)| bound_tool(definition, index, instance, recipe.name_rules))
            .collect::<Result<Vec<_>, _>>()?;
        check_produced_names(definition, &checked)?;
        // The model sees the declared order, not whatever order the factory
        // built in (a bundle over a map or a server need not be stable).
        // The names match the declared ones exactly, so each has a position.
        checked.sort_by_key(|tool| {
            definition
                .tool_names()
                .iter()
                .position(|name| *name == tool.info.name)
        });
        produced.push((tools.len()..tools.len() + checked.len()).collect());
        tools.extend(checked);
    }

    let tool_indices = |definitions: &[tool::Definition]| -> Vec<usize> {
        definitions
            .iter()
            .filter_map(|definition| distinct.iter().position(|d| d.same_as(definition)))
            .flat_map(|position| produced[position].iter().copied())
            .collect()
    };
    // `validate` refused invalid limits, so `merge` reports no error here.
    let (base_limits, _) = recipe.tool_limits.merge(ResolvedToolLimits::default());
    let mut modes = vec![BoundModeData::new(
        None,
        tool_indices(&lists.base),
        base_limits,
        recipe.instructions.clone(),
        &tools,
    )];
    for (mode, list) in recipe.modes.iter().zip(&lists.modes) {
        modes.push(BoundModeData::new(
            Some(mode.name.as_str().into()),
            tool_indices(list),
            mode.tool_limits.merge(base_limits).0,
            mode.instructions.clone(),
            &tools,
        ));
    }
    let current = match &recipe.initial_mode {
        Some(initial) => modes
            .iter()
            .position(|mode| mode.name.as_deref() == Some(initial.as_str()))
            .unwrap_or(0),
        None => 0,
    };
    Ok(Binding {
        session_id: bindings.session_id(),
        loop_id: bindings.loop_id(),
        tools,
        modes,
        current,
        middlewares: recipe.middlewares.iter().cloned().collect(),
    })
}

/// The tool definitions of the base mode and of each named mode, extra tools
/// included, each list without repeats.
struct ToolLists {
    base: Vec<tool::Definition>,
    modes: Vec<Vec<tool::Definition>>,
}

impl ToolLists {
    fn of(recipe: &Recipe, bindings: &Bindings) -> Self {
        let list = |own: &[tool::Definition]| {
            let mut list: Vec<tool::Definition> = Vec::new();
            for definition in own.iter().chain(bindings.extra_tools()) {
                if !list.iter().any(|d| d.same_as(definition)) {
                    list.push(definition.clone());
                }
            }
            list
        };
        Self {
            base: list(&recipe.tools),
            modes: recipe
                .modes
                .iter()
                .map(|mode| list(mode.tools.as_deref().unwrap_or(&recipe.tools)))
                .collect(),
        }
    }

    /// Every distinct definition (by identity) in the binding, in order of
    /// first appearance, after checking that no two of them share a
    /// definition name or a declared tool name.
    fn distinct_definitions(&self) -> Result<Vec<tool::Definition>, BindError> {
        let mut distinct: Vec<tool::Definition> = Vec::new();
        let mut tool_owner: HashMap<&str, usize> = HashMap::new();
        for definition in self.base.iter().chain(self.modes.iter().flatten()) {
            if distinct.iter().any(|d| d.same_as(definition)) {
                continue;
            }
            if let Some(other) = distinct.iter().find(|d| d.name() == definition.name()) {
                // Same definition name *and* a shared tool name (two
                // `from_fn("search", ..)`): the model-facing clash is what
                // the user must fix, so it is the one reported.
                if let Some(name) = definition
                    .tool_names()
                    .iter()
                    .find(|name| other.tool_names().contains(name))
                {
                    return Err(duplicate_tool_name(name, other, definition));
                }
                return Err(BindError::new(
                    BindErrorKind::DuplicateDefinitionName,
                    format!(
                        "two different tool definitions are named `{}` (declaring {:?} and {:?})",
                        definition.name(),
                        other.tool_names(),
                        definition.tool_names()
                    ),
                )
                .name(definition.name()));
            }
            distinct.push(definition.clone());
        }
        for (position, definition) in distinct.iter().enumerate() {
            for name in definition.tool_names() {
                // Validation refused a name declared twice by one
                // definition, so an owner here is always another one.
                if let Some(&owner) = tool_owner.get(name.as_str()) {
                    return Err(duplicate_tool_name(name, &distinct[owner], definition));
                }
                tool_owner.insert(name, position);
            }
        }
        Ok(distinct)
    }
}

fn duplicate_tool_name(
    name: &str,
    first: &tool::Definition,
    second: &tool::Definition,
) -> BindError {
    let owners = if first.name() == second.name() {
        format!("two different definitions named `{}`", first.name())
    } else {
        format!("definitions `{}` and `{}`", first.name(), second.name())
    };
    BindError::new(
        BindErrorKind::DuplicateToolName,
        format!("duplicate tool name `{name}` ({owners})"),
    )
    .name(name)
}

/// The built tools must report exactly the declared names, each once.
fn check_produced_names(
    definition: &tool::Definition,
    built: &[BoundTool],
) -> Result<(), BindError> {
    let mut built: Vec<&str> = built.iter().map(|t| t.info.name.as_str()).collect();
    let mut declared: Vec<&str> = definition.tool_names().iter().map(String::as_str).collect();
    built.sort_unstable();
    declared.sort_unstable();
    if built == declared {
        return Ok(());
    }
    let detail = if built.is_empty() {
        format!(
            "the factory of tool definition `{}` built no tool",
            definition.name()
        )
    } else {
        format!(
            "tool definition `{}` declared {declared:?} but its factory built {built:?}",
            definition.name()
        )
    };
    Err(BindError::new(BindErrorKind::InvalidToolInfo, detail).name(definition.name()))
}

/// Checks one built tool's `ToolInfo` and compiles its argument schema, once
/// per binding.
fn bound_tool(
    definition: &tool::Definition,
    index: usize,
    tool: Arc<dyn Tool>,
    rules: NameRules,
) -> Result<BoundTool, BindError> {
    let info = tool.info();
    let invalid = |detail: String| {
        BindError::new(BindErrorKind::InvalidToolInfo, detail)
            .name(info.name.clone())
            .index(index)
    };
    if info.name == STRUCTURED_OUTPUT_TOOL_NAME {
        return Err(invalid(format!(
            "tool `{}` of definition `{}` uses the reserved structured-output name",
            info.name,
            definition.name()
        )));
    }
    rules
        .check(&info.name)
        .map_err(|error| invalid(format!("tool name {:?} is invalid: {error}", info.name)))?;
    if info.description.trim().is_empty() {
        // Both providers accept it, and real tool lists have it (pydantic-ai
        // sends "" for a tool without a docstring); a model just calls an
        // undescribed tool less reliably.
        tracing::warn!(
            tool = %info.name,
            definition = definition.name(),
            "tool has a blank description"
        );
    }
    if info.parameters.get("type") != Some(&Value::String("object".into())) {
        return Err(invalid(format!(
            "the parameters of tool `{}` must be a JSON Schema with \"type\": \"object\" at the top level, got {}",
            info.name,
            shorten(&info.parameters)
        )));
    }
    if nesting_exceeds(&info.parameters, MAX_SCHEMA_DEPTH) {
        return Err(invalid(format!(
            "the parameters of tool `{}` nest deeper than {MAX_SCHEMA_DEPTH} levels",
            info.name
        )));
    }
    jsonschema::meta::validate(&info.parameters).map_err(|error| {
        invalid(format!(
            "the parameters of tool `{}` are not a valid JSON Schema: {error}",
            info.name
        ))
        .source(error.to_owned())
    })?;
    let validator = jsonschema::validator_for(&info.parameters).map_err(|error| {
        invalid(format!(
            "the parameters of tool `{}` do not compile: {error}",
            info.name
        ))
        .source(error.to_owned())
    })?;
    Ok(BoundTool {
        info: info.clone(),
        tool,
        validator: Arc::new(validator),
        definition_name: definition.name().into(),
    })
}

/// How deeply a tool's `parameters` may nest (objects and arrays). The
/// schema checker recurses per level, so a schema built in code thousands
/// of levels deep would overflow the stack; 128 is serde_json's own parsing
/// limit, so no schema read from JSON text is refused by it.
const MAX_SCHEMA_DEPTH: usize = 128;

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

/// A value for an error message: compact JSON, at most 80 bytes.
fn shorten(value: &Value) -> String {
    let mut text = value.to_string();
    if text.len() > 80 {
        let mut end = 77;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
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
