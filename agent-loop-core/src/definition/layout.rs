//! [`Layout`]: what every binding of a validated definition has in common,
//! worked out once, by [`validate`](crate::Definition::validate): its
//! distinct tool definitions and their collisions, where each one's tools
//! go, and each mode's tools, name, resolved limits and instructions.
//!
//! A binding then holds only what is its own: the tools its factories
//! built, with a shared pointer to their checked infos. A binding with
//! extra tools has a layout of its own, since its tool lists differ, made
//! from the validated one.

use std::collections::HashMap;
use std::sync::Arc;

use crate::definition::builder::Recipe;
use crate::gate::{ApprovalKey, Gate, Gates};
use crate::limits::ResolvedToolLimits;
use crate::middleware::ToolMiddleware;
use crate::tool;

/// The shape of a binding of one definition (and its extra tools, if any).
pub(crate) struct Layout {
    /// Every distinct tool definition (clones are one), in order of first
    /// appearance: the base's, then each mode's.
    pub(crate) definitions: Vec<tool::Definition>,
    /// Definitions that share a definition name or a declared tool name.
    pub(crate) collisions: Collisions,
    /// The base mode first, then the named modes in declared order.
    pub(crate) modes: Vec<ModeLayout>,
    /// Where each tool goes, from the declared tool names.
    pub(crate) table: Arc<ToolTable>,
    /// Index into `modes` of the mode a new binding starts in.
    pub(crate) initial: usize,
    /// First = outermost.
    pub(crate) middlewares: Arc<[Arc<dyn ToolMiddleware>]>,
    /// Signs pending calls, when set.
    pub(crate) approval_key: Option<ApprovalKey>,
}

/// One mode of a layout.
pub(crate) struct ModeLayout {
    /// `None` for the base mode.
    pub(crate) name: Option<Arc<str>>,
    /// Indices into [`Layout::definitions`] of its tool definitions, in
    /// order.
    pub(crate) definitions: Vec<usize>,
    pub(crate) tool_limits: ResolvedToolLimits,
    pub(crate) instructions: Option<String>,
    /// Asked in order about every call a model makes in this mode.
    pub(crate) gates: Arc<[Arc<dyn Gate>]>,
    /// Asked instead of `gates` about the calls of the tools named.
    pub(crate) tool_gates: HashMap<String, Arc<[Arc<dyn Gate>]>>,
}

/// Where a binding's tools go: the tools of each definition follow one
/// another, in definition order and each definition's name order.
pub(crate) struct ToolTable {
    /// Per tool index, the index of the definition that builds it.
    pub(crate) tool_definition: Vec<usize>,
    /// Per mode, its tools.
    pub(crate) modes: Vec<ModeTools>,
}

/// The tools of one mode.
pub(crate) struct ModeTools {
    /// Indices into a binding's tool list, in order.
    pub(crate) tools: Vec<usize>,
    /// Tool name → index into a binding's tool list. Hashed with
    /// foldhash, not SipHash: every call looks its tool up here, the keys
    /// are the declared names (a model's text only probes them), and
    /// foldhash's per-map random seed still spreads them.
    pub(crate) by_name: HashMap<String, usize, foldhash::fast::RandomState>,
}

impl ToolTable {
    /// The table of `layout_modes` when definition `d` has the tools named
    /// `names(d)`, in that order. From the declared names, it holds for
    /// every binding: bind refuses a tool whose name is not declared and
    /// puts each in its declared place.
    pub(crate) fn new<'n>(
        definitions: usize,
        layout_modes: &[ModeLayout],
        names: impl Fn(usize) -> &'n [String],
    ) -> Self {
        let mut first_tool = Vec::with_capacity(definitions);
        let mut tool_definition = Vec::new();
        for definition in 0..definitions {
            first_tool.push(tool_definition.len());
            tool_definition.extend(names(definition).iter().map(|_| definition));
        }
        let modes = layout_modes
            .iter()
            .map(|mode| {
                let mut tools = Vec::new();
                let mut by_name = HashMap::default();
                for &definition in &mode.definitions {
                    for (offset, tool_name) in names(definition).iter().enumerate() {
                        let index = first_tool[definition] + offset;
                        tools.push(index);
                        by_name.insert(tool_name.clone(), index);
                    }
                }
                ModeTools { tools, by_name }
            })
            .collect();
        Self {
            tool_definition,
            modes,
        }
    }
}

/// Definitions sharing a name, each as `(name, first, second)` with
/// indices into [`Layout::definitions`]. Definition names are checked
/// first: when two share one, tool names are not looked at.
pub(crate) enum Collisions {
    None,
    DefinitionNames(Vec<(String, usize, usize)>),
    ToolNames(Vec<(String, usize, usize)>),
}

impl Layout {
    /// The layout of `recipe` bound with the extra tool definitions
    /// `extra`, its modes' limits resolved already (`limits[0]` the base's,
    /// then each mode's, in declared order): the base tool list is the
    /// recipe's tools and then the extra ones, each mode's its own (or the
    /// base's, when it sets none) and then the extra ones, each without
    /// repeats.
    pub(crate) fn of(
        recipe: &Recipe,
        limits: &[ResolvedToolLimits],
        extra: &[tool::Definition],
    ) -> Self {
        let list = |own: &[tool::Definition]| {
            let mut list: Vec<tool::Definition> = Vec::new();
            for definition in own.iter().chain(extra) {
                if !list.iter().any(|d| d.same_as(definition)) {
                    list.push(definition.clone());
                }
            }
            list
        };
        let base = list(&recipe.tools);
        let modes: Vec<Vec<tool::Definition>> = recipe
            .modes
            .iter()
            .map(|mode| list(mode.tools.as_deref().unwrap_or(&recipe.tools)))
            .collect();
        let mut definitions: Vec<tool::Definition> = Vec::new();
        for definition in base.iter().chain(modes.iter().flatten()) {
            if !definitions.iter().any(|d| d.same_as(definition)) {
                definitions.push(definition.clone());
            }
        }
        let collisions = collisions(&definitions);

        let mode = |name: Option<Arc<str>>,
                    list: &[tool::Definition],
                    tool_limits,
                    instructions: &Option<String>,
                    gates: &Gates,
                    tool_gates| ModeLayout {
            name,
            definitions: list
                .iter()
                .filter_map(|definition| definitions.iter().position(|d| d.same_as(definition)))
                .collect(),
            tool_limits,
            instructions: instructions.clone(),
            gates: gates.0.iter().cloned().collect(),
            tool_gates,
        };
        // `validate` resolved one per mode, the base's first.
        let limit = |index: usize| limits[index];
        let mut mode_layouts = vec![mode(
            None,
            &base,
            limit(0),
            &recipe.instructions,
            &recipe.gates,
            Gates::per_tool(&recipe.gates, None),
        )];
        for (index, (declared, list)) in recipe.modes.iter().zip(&modes).enumerate() {
            mode_layouts.push(mode(
                Some(declared.name.as_str().into()),
                list,
                limit(index + 1),
                &declared.instructions,
                declared.gates.as_ref().unwrap_or(&recipe.gates),
                Gates::per_tool(&recipe.gates, Some(&declared.tool_gates)),
            ));
        }
        let initial = recipe
            .initial_mode
            .as_deref()
            .and_then(|initial| {
                mode_layouts
                    .iter()
                    .position(|mode| mode.name.as_deref() == Some(initial))
            })
            .unwrap_or(0);
        let table = ToolTable::new(definitions.len(), &mode_layouts, |definition| {
            definitions[definition].tool_names()
        });
        Self {
            table: Arc::new(table),
            definitions,
            collisions,
            modes: mode_layouts,
            initial,
            middlewares: recipe.middlewares.iter().cloned().collect(),
            approval_key: recipe.approval_key.clone(),
        }
    }

    /// The layout of a binding of the same recipe with the extra tool
    /// definitions `extra`: this one's limits, the recipe's tools and
    /// modes, and the extra tools.
    pub(crate) fn with_extra(&self, recipe: &Recipe, extra: &[tool::Definition]) -> Self {
        let limits: Vec<ResolvedToolLimits> =
            self.modes.iter().map(|mode| mode.tool_limits).collect();
        Self::of(recipe, &limits, extra)
    }
}

/// Every collision among `definitions`: definition names first, and only
/// when there is none, declared tool names. Every pair is listed: with
/// three definitions named alike, each of them must be renamed but one.
fn collisions(definitions: &[tool::Definition]) -> Collisions {
    let mut duplicates = Vec::new();
    // Definition names first: a name that is both a definition and a tool
    // name (two `from_fn("search", ..)`) is a duplicate definition.
    for (position, definition) in definitions.iter().enumerate() {
        for (earlier, _) in definitions[..position]
            .iter()
            .enumerate()
            .filter(|(_, d)| d.name() == definition.name())
        {
            duplicates.push((definition.name().to_owned(), earlier, position));
        }
    }
    if !duplicates.is_empty() {
        return Collisions::DefinitionNames(duplicates);
    }
    let mut tool_owners: HashMap<&str, Vec<usize>> = HashMap::new();
    for (position, definition) in definitions.iter().enumerate() {
        for name in definition.tool_names() {
            // Validation refused a name declared twice by one definition,
            // so an owner here is always another one.
            let owners = tool_owners.entry(name).or_default();
            for &owner in owners.iter() {
                duplicates.push((name.clone(), owner, position));
            }
            owners.push(position);
        }
    }
    if duplicates.is_empty() {
        Collisions::None
    } else {
        Collisions::ToolNames(duplicates)
    }
}
