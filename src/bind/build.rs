//! The `bind` algorithm: check the ids, check the
//! extra tools, find the distinct definitions and their collisions, run each
//! distinct factory once, check what they built, assemble the modes. All or
//! nothing.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::join_all;

use crate::bind::{
    BindError, BindErrorKind, Binding, Bindings, Bound, BoundModeData, BoundTool, Duplicate,
    FactoryPanic,
};
use crate::definition::builder::Recipe;
use crate::definition::validate::check_tool_definition;
use crate::definition::{Definition, Validated};
use crate::limits::ResolvedToolLimits;
use crate::panic::panic_message;
use crate::text::truncate_end;
use crate::tool::name::{ToolNameProblem, check_tool_name};
use crate::tool::schema::{MAX_SCHEMA_DEPTH, SchemaProblem};
use crate::tool::{self, NameRules, Tool};

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
        if definition.discovers_tools() {
            check_discovered_names(definition, &checked)?;
        } else {
            check_produced_names(definition, &checked)?;
            // The model sees the declared order, not whatever order the
            // factory built in (a bundle over a map need not be stable).
            // The names match the declared ones exactly, so each has a
            // position.
            checked.sort_by_key(|tool| {
                definition
                    .tool_names()
                    .iter()
                    .position(|name| *name == tool.info.name)
            });
        }
        produced.push((tools.len()..tools.len() + checked.len()).collect());
        tools.extend(checked);
    }

    // Declared names were checked before any factory ran; names discovered
    // by a factory can only be checked now.
    check_built_names(&distinct, &produced, &tools)?;

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
    /// definition name, then that no two share a declared tool name.
    /// Every collision of the first kind found is reported at once.
    fn distinct_definitions(&self) -> Result<Vec<tool::Definition>, BindError> {
        let mut distinct: Vec<tool::Definition> = Vec::new();
        for definition in self.base.iter().chain(self.modes.iter().flatten()) {
            if !distinct.iter().any(|d| d.same_as(definition)) {
                distinct.push(definition.clone());
            }
        }
        // Definition names first: a name that is both a definition and a
        // tool name (two `from_fn("search", ..)`) is a duplicate definition.
        // Every pair is listed: with three definitions named alike, each
        // of them must be renamed but one.
        let mut duplicates = Vec::new();
        for (position, definition) in distinct.iter().enumerate() {
            for earlier in distinct[..position]
                .iter()
                .filter(|d| d.name() == definition.name())
            {
                duplicates.push(duplicate(definition.name(), earlier, definition));
            }
        }
        if !duplicates.is_empty() {
            return Err(duplicates_error(
                BindErrorKind::DuplicateDefinitionName,
                duplicates,
            ));
        }
        let mut tool_owners: HashMap<&str, Vec<usize>> = HashMap::new();
        for (position, definition) in distinct.iter().enumerate() {
            for name in definition.tool_names() {
                // Validation refused a name declared twice by one
                // definition, so an owner here is always another one.
                let owners = tool_owners.entry(name).or_default();
                for &owner in owners.iter() {
                    duplicates.push(duplicate(name, &distinct[owner], definition));
                }
                owners.push(position);
            }
        }
        if !duplicates.is_empty() {
            return Err(duplicates_error(
                BindErrorKind::DuplicateToolName,
                duplicates,
            ));
        }
        Ok(distinct)
    }
}

fn duplicate(name: &str, first: &tool::Definition, second: &tool::Definition) -> Duplicate {
    Duplicate {
        name: name.to_owned(),
        definitions: [first.name().to_owned(), second.name().to_owned()],
        tool_names: [first.tool_names().to_vec(), second.tool_names().to_vec()],
    }
}

/// After every factory ran: no two definitions built tools of one name.
/// Only a [`discovering`](tool::Definition::discovering) definition can
/// collide here (declared names were checked before), but every pair is
/// listed, each with the names its definitions built.
fn check_built_names(
    distinct: &[tool::Definition],
    produced: &[Vec<usize>],
    tools: &[BoundTool],
) -> Result<(), BindError> {
    let built_names = |position: usize| -> Vec<String> {
        produced[position]
            .iter()
            .map(|&index| tools[index].info.name.clone())
            .collect()
    };
    let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut duplicates = Vec::new();
    for (position, indices) in produced.iter().enumerate() {
        for &index in indices {
            let name = tools[index].info.name.as_str();
            let earlier = owners.entry(name).or_default();
            for &owner in earlier.iter() {
                duplicates.push(Duplicate {
                    name: name.to_owned(),
                    definitions: [
                        distinct[owner].name().to_owned(),
                        distinct[position].name().to_owned(),
                    ],
                    tool_names: [built_names(owner), built_names(position)],
                });
            }
            earlier.push(position);
        }
    }
    if duplicates.is_empty() {
        Ok(())
    } else {
        Err(duplicates_error(
            BindErrorKind::DuplicateToolName,
            duplicates,
        ))
    }
}

/// A discovering definition's tools must not share a name: the model could
/// not tell them apart.
fn check_discovered_names(
    definition: &tool::Definition,
    built: &[BoundTool],
) -> Result<(), BindError> {
    for (index, tool) in built.iter().enumerate() {
        if built[..index].iter().any(|t| t.info.name == tool.info.name) {
            return Err(BindError::new(
                BindErrorKind::InvalidToolInfo,
                format!(
                    "tool definition `{}` built two tools named `{}`",
                    definition.name(),
                    tool.info.name
                ),
            )
            .name(tool.info.name.clone())
            .index(index));
        }
    }
    Ok(())
}

/// One error listing every duplicate; `name` is the first's.
fn duplicates_error(kind: BindErrorKind, duplicates: Vec<Duplicate>) -> BindError {
    let describe = |duplicate: &Duplicate| match kind {
        BindErrorKind::DuplicateDefinitionName => format!(
            "two different tool definitions are named `{}` (declaring {:?} and {:?})",
            duplicate.name, duplicate.tool_names[0], duplicate.tool_names[1]
        ),
        _ => format!(
            "duplicate tool name `{}` (definitions `{}` and `{}`)",
            duplicate.name, duplicate.definitions[0], duplicate.definitions[1]
        ),
    };
    let detail = duplicates
        .iter()
        .map(describe)
        .collect::<Vec<_>>()
        .join("; ");
    BindError::new(kind, detail)
        .name(duplicates[0].name.clone())
        .with_duplicates(duplicates)
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

/// Checks one built tool's `ToolInfo` and gets its compiled argument
/// schema: compiled once per binding, or once for every binding when the
/// definition's schema is fixed at declaration.
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
    match check_tool_name(rules, &info.name) {
        Ok(()) => {}
        Err(ToolNameProblem::Reserved) => {
            return Err(invalid(format!(
                "tool `{}` of definition `{}` uses the reserved structured-output name",
                info.name,
                definition.name()
            )));
        }
        Err(ToolNameProblem::Invalid(error)) => {
            return Err(invalid(format!(
                "tool name {:?} breaks `NameRules::{rules:?}`",
                info.name
            ))
            .source(error));
        }
    }
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
    let validator =
        definition
            .argument_validator(&info.parameters)
            .map_err(|problem| match problem {
                SchemaProblem::NotObject => invalid(format!(
                    "the parameters of tool `{}` must be a JSON Schema with \"type\": \"object\" at the top level, got {}",
                    info.name,
                    truncate_end(&info.parameters.to_string(), 80)
                )),
                SchemaProblem::TooDeep => invalid(format!(
                    "the parameters of tool `{}` nest deeper than {MAX_SCHEMA_DEPTH} levels",
                    info.name
                )),
                SchemaProblem::NotASchema(error) => invalid(format!(
                    "the parameters of tool `{}` are not a valid JSON Schema",
                    info.name
                ))
                .source(error),
                SchemaProblem::DoesNotCompile(error) => invalid(format!(
                    "the parameters of tool `{}` do not compile",
                    info.name
                ))
                .source(error),
            })?;
    Ok(BoundTool {
        info: Arc::new(info.clone()),
        tool,
        validator,
        definition_name: definition.name().into(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::session::{LoopId, SessionId};
    use crate::tool::{BoxError, ToolInfo};

    async fn bind_n(tool: &tool::Definition, n: usize) -> Vec<Definition<Bound>> {
        let definition = Definition::builder()
            .name("agent")
            .tool(tool)
            .build()
            .validate()
            .unwrap();
        let mut bound = Vec::new();
        for _ in 0..n {
            bound.push(
                definition
                    .bind(Bindings::new(SessionId::new(), LoopId::new()))
                    .await
                    .unwrap(),
            );
        }
        bound
    }

    fn validators(bound: &[Definition<Bound>]) -> Vec<Arc<jsonschema::Validator>> {
        bound
            .iter()
            .map(|b| Arc::clone(&b.binding().tools[0].validator))
            .collect()
    }

    fn parameters() -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}}})
    }

    #[tokio::test]
    async fn from_fn_schema_is_compiled_once_across_bindings() {
        let add = tool::Definition::from_fn(
            ToolInfo::new("add", "Adds.", parameters()),
            |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
        );
        let bound = bind_n(&add, 4).await;
        let validators = validators(&bound);
        assert!(
            validators.iter().all(|v| Arc::ptr_eq(v, &validators[0])),
            "one compiled validator shared by all 4 bindings"
        );
        // The tools themselves are still built per binding.
        assert!(!bound[0].tools()[0].same_instance(&bound[1].tools()[0]));
    }

    #[tokio::test]
    async fn typed_fn_schema_is_compiled_once_across_bindings() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Arguments {
            #[allow(dead_code)]
            a: i64,
        }
        let typed = tool::Definition::typed_fn("typed", "Typed.", |_: Arguments, _context| async {
            Ok::<_, BoxError>("ok")
        });
        let validators = validators(&bind_n(&typed, 3).await);
        assert!(validators.iter().all(|v| Arc::ptr_eq(v, &validators[0])));
    }

    #[tokio::test]
    async fn factory_tool_schema_is_compiled_per_binding() {
        // A factory's tool reports its info only once built, so each
        // binding compiles the schema it reports.
        struct Echo(ToolInfo);
        #[async_trait::async_trait]
        impl Tool for Echo {
            fn info(&self) -> &ToolInfo {
                &self.0
            }
            async fn invoke(
                &self,
                arguments: Value,
                _context: &tool::CallContext,
            ) -> Result<tool::ToolOutput, BoxError> {
                Ok(arguments.into())
            }
        }
        let echo = tool::Definition::new("echo", |_session| async {
            Ok::<_, BoxError>(Echo(ToolInfo::new("echo", "Echoes.", parameters())))
        });
        let validators = validators(&bind_n(&echo, 2).await);
        assert!(!Arc::ptr_eq(&validators[0], &validators[1]));
    }
}
