//! [`ToolSet`]: a binding's tools and where each goes, as one value a turn
//! holds for an iteration; and [`Tools`], the binding's current set, which
//! the [`ToolListing`]s of its changing definitions replace between
//! iterations.

use std::collections::HashMap;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;

use crate::bind::checks::{check_built_names, reported_tools};
use crate::bind::{BindError, BindErrorKind, BoundTool, FactoryPanic};
use crate::definition::layout::{Layout, ModeTools, ToolTable};
use crate::support::panic::panic_message;
use crate::tool::checked::InfoCache;
use crate::tool::definition::Source;
use crate::tool::{NameRules, ToolListing};

/// A binding's tools at one moment: every built tool once, in the layout's
/// order, and each mode's. Never changed: a new list makes a new set.
pub(crate) struct ToolSet {
    /// Every built tool, each once, in the layout's order.
    pub(crate) tools: Box<[BoundTool]>,
    /// Where they go: the layout's own (shared) unless a definition
    /// discovered its tools.
    pub(crate) table: Arc<ToolTable>,
    /// Per distinct definition, where its tools are in `tools`: kept only
    /// by a binding whose tools can change (empty otherwise).
    produced: Box<[Range<usize>]>,
    /// Tool names a listing of this binding offered before and its latest
    /// list dropped, with the index of its definition.
    withdrawn: HashMap<String, usize>,
}

impl ToolSet {
    /// The set of a binding whose tools never change.
    pub(crate) fn fixed(tools: Box<[BoundTool]>, table: Arc<ToolTable>) -> Self {
        Self {
            tools,
            table,
            produced: Box::default(),
            withdrawn: HashMap::new(),
        }
    }

    /// The tools of mode `index`.
    pub(crate) fn mode_tools(&self, index: usize) -> &ModeTools {
        &self.table.modes[index]
    }

    /// The definition (an index into the layout's) whose listing offered
    /// `name` earlier in this binding and offers it no more.
    pub(crate) fn withdrawn(&self, name: &str) -> Option<usize> {
        self.withdrawn.get(name).copied()
    }

    /// This set with the tools of definition `definition` replaced by
    /// `built`, checked as at bind against the rest of the binding.
    ///
    /// Errors: [`BindErrorKind::DuplicateToolName`] when another definition
    /// of the binding produces one of the names.
    fn replace(
        &self,
        layout: &Layout,
        definition: usize,
        built: Vec<BoundTool>,
    ) -> Result<Self, BindError> {
        let mut tools = Vec::with_capacity(self.tools.len() + built.len());
        let mut produced = Vec::with_capacity(self.produced.len());
        let mut built = Some(built);
        for (index, range) in self.produced.iter().enumerate() {
            let first = tools.len();
            let replaced = if index == definition {
                built.take()
            } else {
                None
            };
            match replaced {
                Some(new) => tools.extend(new),
                None => tools.extend_from_slice(&self.tools[range.clone()]),
            }
            produced.push(first..tools.len());
        }
        check_built_names(&layout.definitions, &produced, &tools)?;
        let table = table_of(layout, &produced, &tools);
        let mut withdrawn = self.withdrawn.clone();
        for old in &self.tools[self.produced[definition].clone()] {
            withdrawn.insert(old.checked.info.name.clone(), definition);
        }
        for new in &tools[produced[definition].clone()] {
            withdrawn.remove(&new.checked.info.name);
        }
        Ok(Self {
            tools: tools.into_boxed_slice(),
            table: Arc::new(table),
            produced: produced.into_boxed_slice(),
            withdrawn,
        })
    }
}

/// A binding's current [`ToolSet`].
pub(crate) enum Tools {
    /// No definition's tools change: the set bind made, for the binding's
    /// life.
    Fixed(Arc<ToolSet>),
    /// Some do.
    Changing(Box<Changing>),
}

/// The set of a binding with changing definitions, and their listings.
pub(crate) struct Changing {
    current: Mutex<Arc<ToolSet>>,
    listings: Box<[Listed]>,
    /// The binding's name rules, which every new list is checked under.
    name_rules: NameRules,
    /// Held while lists are read and checked: turns that find a change at
    /// once read it once.
    refreshing: tokio::sync::Mutex<()>,
}

/// One changing definition's listing in a binding.
pub(crate) struct Listed {
    /// Index into the layout's definitions.
    pub(crate) definition: usize,
    pub(crate) listing: Arc<dyn ToolListing>,
    /// The listing's version when it was last listed.
    pub(crate) version: AtomicU64,
}

/// What one refresh did to a changing definition's tools, for a turn's
/// events.
pub(crate) enum ListChange {
    /// The definition named `definition` offers `tools` now.
    Changed {
        definition: String,
        tools: Vec<String>,
    },
    /// Its new list failed its checks (or could not be read), and the
    /// binding kept the tools it had: the error's kind, and its text with
    /// its sources'.
    Refused {
        definition: String,
        kind: BindErrorKind,
        message: String,
    },
}

impl Tools {
    /// The set made at bind; `listings` are the changing definitions'.
    pub(crate) fn new(set: ToolSet, listings: Vec<Listed>, name_rules: NameRules) -> Self {
        if listings.is_empty() {
            return Self::Fixed(Arc::new(set));
        }
        Self::Changing(Box::new(Changing {
            current: Mutex::new(Arc::new(set)),
            listings: listings.into_boxed_slice(),
            name_rules,
            refreshing: tokio::sync::Mutex::new(()),
        }))
    }

    /// `true` when a changing definition may replace the tools.
    pub(crate) fn changes(&self) -> bool {
        matches!(self, Self::Changing(_))
    }

    /// `true` when a changing definition's listing moved since it was
    /// listed: [`Tools::refresh`] would list it again. Takes no lock.
    pub(crate) fn moved(&self) -> bool {
        let Self::Changing(changing) = self else {
            return false;
        };
        changing
            .listings
            .iter()
            .any(|listed| listed.listing.version() != listed.version.load(Ordering::Acquire))
    }

    /// The set of a binding whose tools never change, borrowed: a call
    /// of it needs no share of its own.
    pub(crate) fn fixed(&self) -> Option<&ToolSet> {
        match self {
            Self::Fixed(set) => Some(set),
            Self::Changing(_) => None,
        }
    }

    /// The tools now.
    pub(crate) fn current(&self) -> Arc<ToolSet> {
        match self {
            Self::Fixed(set) => Arc::clone(set),
            Self::Changing(changing) => changing.current(),
        }
    }

    /// Lists again every changing definition whose listing's version
    /// moved since it was listed, and makes the lists that pass the checks
    /// of bind current. What changed, in the order of the definitions;
    /// empty (without waiting or allocating) when nothing moved.
    pub(crate) async fn refresh(&self, layout: &Layout) -> Vec<ListChange> {
        let Self::Changing(changing) = self else {
            return Vec::new();
        };
        if !self.moved() {
            return Vec::new();
        }
        let _refreshing = changing.refreshing.lock().await;
        let mut changes = Vec::new();
        for listed in changing.listings.iter() {
            let version = listed.listing.version();
            if version == listed.version.load(Ordering::Acquire) {
                continue;
            }
            let definition = &layout.definitions[listed.definition];
            let Source::Built { infos, .. } = definition.source() else {
                // Only a built definition has a listing.
                continue;
            };
            let change = match changing.relist(layout, listed, infos).await {
                Ok(None) => None,
                Ok(Some(tools)) => {
                    tracing::info!(
                        target: "agent_loop_core::bind",
                        definition = definition.name(),
                        tools = ?tools,
                        "the tools of a changing definition were listed again"
                    );
                    Some(ListChange::Changed {
                        definition: definition.name().to_owned(),
                        tools,
                    })
                }
                Err(error) => {
                    let message = crate::support::text::with_causes(&error);
                    tracing::warn!(
                        target: "agent_loop_core::bind",
                        definition = definition.name(),
                        kind = ?error.kind,
                        "a changing definition's new tool list was refused; its tools stay as they were: {message}"
                    );
                    Some(ListChange::Refused {
                        definition: definition.name().to_owned(),
                        kind: error.kind,
                        message,
                    })
                }
            };
            // The version read before the list: a change announced while
            // it was read moves the version again, and the next refresh
            // reads it. Stored only now, so a refresh dropped while it
            // reads (a cancelled turn) is done again by the next one.
            listed.version.store(version, Ordering::Release);
            changes.extend(change);
        }
        changes
    }
}

impl Changing {
    fn current(&self) -> Arc<ToolSet> {
        match self.current.lock() {
            Ok(current) => Arc::clone(&current),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Reads `listed`'s list, checks it, and makes it current; its tool
    /// names, or `None` when it lists the tools the binding has.
    async fn relist(
        &self,
        layout: &Layout,
        listed: &Listed,
        infos: &InfoCache,
    ) -> Result<Option<Vec<String>>, BindError> {
        let definition = &layout.definitions[listed.definition];
        let name = definition.name();
        let instances = match AssertUnwindSafe(listed.listing.list()).catch_unwind().await {
            Ok(Ok(instances)) => instances,
            Ok(Err(error)) => {
                return Err(BindError::new(
                    BindErrorKind::FactoryFailed,
                    format!("the tools of definition `{name}` could not be listed again"),
                )
                .name(name)
                .source(error));
            }
            Err(panic) => {
                return Err(BindError::new(
                    BindErrorKind::FactoryPanicked,
                    format!("the tools of definition `{name}` could not be listed again"),
                )
                .name(name)
                .source(FactoryPanic {
                    message: panic_message(panic.as_ref()),
                }));
            }
        };
        let built = reported_tools(definition, infos, instances, self.name_rules)?;
        let current = self.current();
        let now = &current.tools[current.produced[listed.definition].clone()];
        // The same infos (equal ones share their checked form): the
        // binding keeps its tools, and nothing changed to report.
        if now.len() == built.len()
            && now
                .iter()
                .zip(&built)
                .all(|(old, new)| Arc::ptr_eq(&old.checked, &new.checked))
        {
            return Ok(None);
        }
        let names = built
            .iter()
            .map(|tool| tool.checked.info.name.clone())
            .collect();
        let next = current.replace(layout, listed.definition, built)?;
        match self.current.lock() {
            Ok(mut current) => *current = Arc::new(next),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(next),
        }
        Ok(Some(names))
    }
}

/// Where a binding's `tools` go when definition `d`'s are
/// `tools[produced[d]]`: the table of the names they were built with.
pub(crate) fn table_of(
    layout: &Layout,
    produced: &[Range<usize>],
    tools: &[BoundTool],
) -> ToolTable {
    let names: Vec<Vec<String>> = produced
        .iter()
        .map(|range| {
            tools[range.clone()]
                .iter()
                .map(|tool| tool.checked.info.name.clone())
                .collect()
        })
        .collect();
    ToolTable::new(layout.definitions.len(), &layout.modes, |definition| {
        &names[definition]
    })
}

/// A set made at bind for a binding whose tools can change: `produced`
/// says where each distinct definition's tools are.
pub(crate) fn changing_set(
    tools: Box<[BoundTool]>,
    table: Arc<ToolTable>,
    produced: Vec<Range<usize>>,
) -> ToolSet {
    ToolSet {
        tools,
        table,
        produced: produced.into_boxed_slice(),
        withdrawn: HashMap::new(),
    }
}
