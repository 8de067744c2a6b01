//! `validate`: the checks a definition must pass before it can be bound,
//! first failure wins. No factory runs here.

use std::collections::HashSet;

use crate::definition::builder::Recipe;
use crate::definition::layout::Layout;
use crate::definition::{DefinitionError, DefinitionErrorKind};
use crate::tool::name::{ToolNameProblem, check_tool_name};
use crate::tool::{self, NameRules};

impl Recipe {
    /// Checks, in this order: name not blank, without control characters;
    /// base limits; every tool
    /// definition of the base; every mode (name, uniqueness, limits, its
    /// tool definitions); the initial mode. Returns the layout of its
    /// bindings, with the limits it resolved.
    pub(crate) fn validate(&self) -> Result<Layout, DefinitionError> {
        if self.name.trim().is_empty() {
            return Err(DefinitionError::new(
                DefinitionErrorKind::MissingName,
                "name",
                format!("{:?}", self.name),
            ));
        }
        if has_control_characters(&self.name) {
            return Err(DefinitionError::new(
                DefinitionErrorKind::InvalidName,
                "name",
                format!("{:?}", self.name),
            ));
        }
        let base_limits = self.tool_limits.resolve().map_err(|limit| {
            DefinitionError::limit(DefinitionErrorKind::InvalidToolLimits, "tool_limits", limit)
        })?;
        // The base's, then each mode's.
        let mut limits = vec![base_limits];
        for (index, definition) in self.tools.iter().enumerate() {
            check_tool_definition(definition, &format!("tools[{index}]"), self.name_rules)?;
        }
        let mut mode_names = HashSet::new();
        for (index, mode) in self.modes.iter().enumerate() {
            let field = format!("modes[{index}]");
            if let Some(reason) = mode_name_problem(&mode.name) {
                return Err(DefinitionError::new(
                    DefinitionErrorKind::InvalidMode,
                    format!("{field}.name"),
                    format!("{:?}", mode.name),
                )
                .because(reason));
            }
            if !mode_names.insert(mode.name.as_str()) {
                return Err(DefinitionError::new(
                    DefinitionErrorKind::DuplicateMode,
                    format!("{field}.name"),
                    format!("{:?}", mode.name),
                ));
            }
            limits.push(mode.tool_limits.inherit(base_limits).map_err(|limit| {
                DefinitionError::limit(
                    DefinitionErrorKind::InvalidMode,
                    &format!("{field}.tool_limits"),
                    limit,
                )
            })?);
            for (tool_index, definition) in mode.tools.iter().flatten().enumerate() {
                check_tool_definition(
                    definition,
                    &format!("{field}.tools[{tool_index}]"),
                    self.name_rules,
                )?;
            }
        }
        match &self.initial_mode {
            None if !self.modes.is_empty() => {
                return Err(DefinitionError::new(
                    DefinitionErrorKind::MissingInitialMode,
                    "initial_mode",
                    "none",
                ));
            }
            Some(initial) if !mode_names.contains(initial.as_str()) => {
                return Err(DefinitionError::new(
                    DefinitionErrorKind::InvalidInitialMode,
                    "initial_mode",
                    format!("{initial:?}"),
                )
                .because(if self.modes.is_empty() {
                    "no modes are declared".to_owned()
                } else {
                    format!(
                        "declared modes: {}",
                        self.modes
                            .iter()
                            .map(|m| m.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }));
            }
            _ => {}
        }
        Ok(Layout::of(self, &limits, &[]))
    }
}

/// The checks every tool definition gets, the definition's own at validate
/// and the binding's extra ones at bind: a non-blank name, at least one
/// declared tool name, every declared name unique within the definition,
/// valid under `rules` and not reserved.
pub(crate) fn check_tool_definition(
    definition: &tool::Definition,
    field: &str,
    rules: NameRules,
) -> Result<(), DefinitionError> {
    if definition.name().trim().is_empty() {
        return Err(DefinitionError::new(
            DefinitionErrorKind::InvalidTool,
            format!("{field}.name"),
            format!("{:?}", definition.name()),
        )
        .because("a tool definition's name must not be blank"));
    }
    if has_control_characters(definition.name()) {
        return Err(DefinitionError::new(
            DefinitionErrorKind::InvalidTool,
            format!("{field}.name"),
            format!("{:?}", definition.name()),
        )
        .because("a tool definition's name must not hold control characters"));
    }
    if definition.tool_names().is_empty() && !definition.discovers_tools() {
        return Err(DefinitionError::new(
            DefinitionErrorKind::InvalidTool,
            format!("{field}.tool_names"),
            "[]",
        )
        .because("a tool definition must declare at least one tool name"));
    }
    for (index, name) in definition.tool_names().iter().enumerate() {
        let field = format!("{field}.tool_names[{index}]");
        if definition.tool_names()[..index].contains(name) {
            return Err(DefinitionError::new(
                DefinitionErrorKind::InvalidTool,
                field,
                format!("{name:?}"),
            )
            .because("a tool definition declares this tool name twice"));
        }
        match check_tool_name(rules, name) {
            Ok(()) => {}
            Err(ToolNameProblem::Reserved) => {
                return Err(DefinitionError::new(
                    DefinitionErrorKind::ReservedToolName,
                    field,
                    format!("{name:?}"),
                )
                .because("the structured-output tool name is reserved"));
            }
            Err(ToolNameProblem::Invalid(error)) => {
                return Err(DefinitionError::new(
                    DefinitionErrorKind::InvalidTool,
                    field,
                    format!("{name:?}"),
                )
                .because(format!("the tool name breaks `NameRules::{rules:?}`"))
                .caused_by(error));
            }
        }
    }
    Ok(())
}

/// Why a mode name is refused, or `None`: blank; surrounding white space
/// (`review ` and `review` would be two modes that look alike); control
/// characters.
fn mode_name_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("a mode name must not be blank")
    } else if name.trim() != name {
        Some(
            "a mode name must not have surrounding white space (`review ` and `review` would be two modes)",
        )
    } else if has_control_characters(name) {
        Some("a mode name must not hold control characters")
    } else {
        None
    }
}

/// Names appear in one-line errors and log lines: a control character
/// (a line break, an escape sequence) would break or forge them.
fn has_control_characters(name: &str) -> bool {
    name.chars().any(char::is_control)
}
