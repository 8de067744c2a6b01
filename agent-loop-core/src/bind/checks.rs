//! The checks of what a binding's factories built, at bind and when a
//! changing definition lists its tools again: each tool's name and
//! schema, the names a definition declared, and no name built twice.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use crate::bind::{BindError, BindErrorKind, BoundTool, Duplicate};
use crate::support::json::TooDeep;
use crate::support::text::json_excerpt;
use crate::tool::checked::{Declared, InfoCache};
use crate::tool::definition::BuiltTool;
use crate::tool::handler::OfTool;
use crate::tool::name::{ToolNameProblem, check_tool_name};
use crate::tool::schema::SchemaProblem;
use crate::tool::{self, NameRules, Tool, ToolInfo};

pub(crate) fn duplicate(
    name: &str,
    first: &tool::Definition,
    second: &tool::Definition,
) -> Duplicate {
    Duplicate {
        name: name.to_owned(),
        definitions: [first.name().to_owned(), second.name().to_owned()],
        tool_names: [first.tool_names().to_vec(), second.tool_names().to_vec()],
    }
}

/// The duplicates `(name, first, second)` the layout found among
/// `definitions`, each with both definitions' declared names.
pub(crate) fn layout_duplicates(
    definitions: &[tool::Definition],
    found: &[(String, usize, usize)],
) -> Vec<Duplicate> {
    found
        .iter()
        .map(|(name, first, second)| duplicate(name, &definitions[*first], &definitions[*second]))
        .collect()
}

/// After every factory ran (and when a changing definition's tools are
/// listed again): no two definitions built tools of one name.
/// Only a [`discovering`](tool::Definition::discovering) definition can
/// collide here (declared names were checked before), but every pair is
/// listed, each with the names its definitions built.
pub(crate) fn check_built_names(
    distinct: &[tool::Definition],
    produced: &[Range<usize>],
    tools: &[BoundTool],
) -> Result<(), BindError> {
    let built_names = |position: usize| -> Vec<String> {
        tools[produced[position].clone()]
            .iter()
            .map(|tool| tool.checked.info.name.clone())
            .collect()
    };
    let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut duplicates = Vec::new();
    for (position, indices) in produced.iter().enumerate() {
        for tool in &tools[indices.clone()] {
            let name = &*tool.checked.name;
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
pub(crate) fn check_discovered_names(
    definition: &tool::Definition,
    built: &[BoundTool],
) -> Result<(), BindError> {
    for (index, tool) in built.iter().enumerate() {
        if built[..index]
            .iter()
            .any(|t| t.checked.name == tool.checked.name)
        {
            return Err(BindError::new(
                BindErrorKind::InvalidToolInfo,
                format!(
                    "tool definition `{}` built two tools named `{}`",
                    definition.name(),
                    tool.checked.name
                ),
            )
            .name(&*tool.checked.name)
            .index(index));
        }
    }
    Ok(())
}

/// The tools a definition's factory (or listing) built, each checked
/// ([`reported_tool`]), with the names it may build ([`check_names`]).
pub(crate) fn reported_tools(
    definition: &tool::Definition,
    infos: &InfoCache,
    instances: Vec<Arc<dyn Tool>>,
    rules: NameRules,
) -> Result<Vec<BoundTool>, BindError> {
    let mut built = instances
        .into_iter()
        .enumerate()
        .map(|(index, instance)| reported_tool(definition, infos, index, instance, rules))
        .collect::<Result<Vec<_>, _>>()?;
    check_names(definition, &mut built)?;
    Ok(built)
}

/// What `definition` built, by name: for a discovering definition, no two
/// tools of one name; for one that declares its names, exactly those,
/// put in the declared order.
pub(crate) fn check_names(
    definition: &tool::Definition,
    built: &mut [BoundTool],
) -> Result<(), BindError> {
    if definition.discovers_tools() {
        return check_discovered_names(definition, built);
    }
    let in_declared_order = built.len() == definition.tool_names().len()
        && built
            .iter()
            .zip(definition.tool_names())
            .all(|(tool, name)| *tool.checked.name == **name);
    if !in_declared_order {
        check_produced_names(definition, built)?;
        // The model sees the declared order, not whatever order the
        // factory built in (a bundle over a map need not be stable), and
        // the layout places each tool by its declared position. The names
        // match the declared ones exactly, so each has a position.
        built.sort_by_key(|tool| {
            definition
                .tool_names()
                .iter()
                .position(|name| **name == *tool.checked.name)
        });
    }
    Ok(())
}

/// One error listing every duplicate; `name` is the first's.
pub(crate) fn duplicates_error(kind: BindErrorKind, duplicates: Vec<Duplicate>) -> BindError {
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
pub(crate) fn check_produced_names(
    definition: &tool::Definition,
    built: &[BoundTool],
) -> Result<(), BindError> {
    let mut built: Vec<&str> = built.iter().map(|t| &*t.checked.name).collect();
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

/// A tool whose info was declared: its name was checked with the
/// definition's, and its schema when declared, so only a schema problem of
/// the declaration is left to report.
pub(crate) fn declared_tool(
    definition: &tool::Definition,
    declared: &Declared,
    BuiltTool { handler, nested }: BuiltTool,
) -> Result<BoundTool, BindError> {
    let info = declared.info();
    warn_if_undescribed(definition, info);
    let checked = declared
        .checked()
        .map_err(|problem| schema_error(info, 0, problem))?;
    Ok(BoundTool {
        checked,
        handler,
        facts: definition.facts(),
        nested,
    })
}

/// Checks one built tool's reported `ToolInfo` and gets its checked form
/// with the compiled argument schema: shared with earlier bindings that
/// reported an equal info, checked and compiled now otherwise.
pub(crate) fn reported_tool(
    definition: &tool::Definition,
    infos: &InfoCache,
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
    warn_if_undescribed(definition, info);
    let facts = definition.facts();
    let checked = infos
        .checked(index, info, facts.fills_defaults)
        .map_err(|problem| schema_error(info, index, problem))?;
    Ok(BoundTool {
        checked,
        handler: Arc::new(OfTool(tool)),
        facts,
        nested: None,
    })
}

pub(crate) fn warn_if_undescribed(definition: &tool::Definition, info: &ToolInfo) {
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
}

/// The bind error of a tool whose `parameters` (or extras) cannot be used.
pub(crate) fn schema_error(info: &ToolInfo, index: usize, problem: SchemaProblem) -> BindError {
    let invalid = |detail: String| {
        BindError::new(BindErrorKind::InvalidToolInfo, detail)
            .name(info.name.clone())
            .index(index)
    };
    match problem {
        SchemaProblem::NotObject => invalid(format!(
            "the parameters of tool `{}` must be a JSON Schema with \"type\": \"object\" at the top level, got {}",
            info.name,
            json_excerpt(&info.parameters, 80)
        )),
        SchemaProblem::TooDeep => invalid(format!(
            "the parameters or extras of tool `{}` cannot be used",
            info.name
        ))
        .source(TooDeep::new()),
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
    }
}
