//! [`Layout`]: what every binding of a validated definition has in common,
//! worked out once: its distinct tool definitions, where each one's tools
//! go, each mode's tools, names, limits and instructions, and the
//! model-facing tool lists.
//!
//! A binding then holds only what is its own: the tools its factories
//! built, with a shared pointer to their checked infos. A binding with
//! extra tools has a layout of its own, since its tool lists differ.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use crate::definition::builder::Recipe;
use crate::limits::ResolvedToolLimits;
use crate::middleware::ToolMiddleware;
use crate::tool::checked::CheckedInfo;
use crate::tool::{self, ToolInfo};

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
    /// The model-facing tool lists of each mode, built from the first
    /// binding's checked infos, for every binding whose tools report the
    /// same ones.
    shared_infos: OnceLock<SharedInfos>,
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

/// Each mode's model-facing tool list, per mode index.
pub(crate) type ModeInfos = Arc<[Box<[ToolInfo]>]>;

struct SharedInfos {
    /// The checked infos the lists were built from, per tool index (kept
    /// alive, so an address match is a real match).
    checked: Box<[Arc<CheckedInfo>]>,
    modes: ModeInfos,
}

impl Recipe {
    /// The layout of a binding without extra tools, worked out on first
    /// use and then shared.
    pub(crate) fn layout(&self) -> &Arc<Layout> {
        self.layout.get_or_init(|| Arc::new(Layout::of(self, &[])))
    }
}

impl Layout {
    /// The layout of `recipe` bound with the extra tool definitions
    /// `extra`: the base tool list is the recipe's tools and then the extra
    /// ones, each mode's its own (or the base's, when it sets none) and
    /// then the extra ones, each without repeats.
    pub(crate) fn of(recipe: &Recipe, extra: &[tool::Definition]) -> Self {
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
                    instructions: &Option<String>| ModeLayout {
            name,
            definitions: list
                .iter()
                .filter_map(|definition| definitions.iter().position(|d| d.same_as(definition)))
                .collect(),
            tool_limits,
            instructions: instructions.clone(),
        };
        // `validate` refused invalid limits, so `merge` reports no error here.
        let (base_limits, _) = recipe.tool_limits.merge(ResolvedToolLimits::default());
        let mut mode_layouts = vec![mode(None, &base, base_limits, &recipe.instructions)];
        for (declared, list) in recipe.modes.iter().zip(&modes) {
            mode_layouts.push(mode(
                Some(declared.name.as_str().into()),
                list,
                declared.tool_limits.merge(base_limits).0,
                &declared.instructions,
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
            shared_infos: OnceLock::new(),
        }
    }

    /// Each mode's model-facing tool list for a binding whose tools are
    /// placed by `table` and whose tool `i` has the checked info
    /// `checked[i]`: the shared lists when the table is the layout's own and
    /// every tool reports the info they were built from (the usual case:
    /// the infos are fixed, or equal to the last ones checked), else lists
    /// of the binding's own.
    pub(crate) fn mode_infos(
        &self,
        table: &Arc<ToolTable>,
        checked: &[&Arc<CheckedInfo>],
    ) -> ModeInfos {
        let shareable = Arc::ptr_eq(table, &self.table);
        if shareable
            && let Some(shared) = self.shared_infos.get()
            && shared.checked.len() == checked.len()
            && shared
                .checked
                .iter()
                .zip(checked)
                .all(|(shared, own)| Arc::ptr_eq(shared, own))
        {
            return Arc::clone(&shared.modes);
        }
        let modes: ModeInfos = table
            .modes
            .iter()
            .map(|mode| {
                mode.tools
                    .iter()
                    .map(|&index| ToolInfo::clone(&checked[index].info))
                    .collect()
            })
            .collect();
        // The first binding's lists are the ones shared; a later binding
        // whose infos differ keeps its own.
        if shareable {
            let _ = self.shared_infos.set(SharedInfos {
                checked: checked.iter().map(|&checked| Arc::clone(checked)).collect(),
                modes: Arc::clone(&modes),
            });
        }
        modes
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
