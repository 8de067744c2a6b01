//! [`ToolList`]: the tools a mode offers a model, as a view of a binding's
//! tools.

use crate::bind::BoundTool;
use crate::tool::ToolInfo;

/// The tools a [`ModelRequest`](crate::turn::ModelRequest) offers, in order: a view of the bound
/// mode's tools (no copy is made per request or per binding), or of a slice
/// of [`ToolInfo`]s. Iterate it for `&ToolInfo`s; the
/// `wire` exports take it as it is.
///
/// ```
/// use agent_loop_core::tool::ToolInfo;
/// use agent_loop_core::turn::ToolList;
///
/// let tools = [ToolInfo::without_parameters("a", ""), ToolInfo::without_parameters("b", "")];
/// let list = ToolList::from(&tools[..]);
/// assert_eq!(list.iter().map(|tool| tool.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
/// assert_eq!(list.get(1).map(|tool| tool.name.as_str()), Some("b"));
/// ```
#[derive(Clone, Copy)]
pub struct ToolList<'a> {
    repr: Repr<'a>,
}

#[derive(Clone, Copy)]
enum Repr<'a> {
    Slice(&'a [ToolInfo]),
    /// A mode's tools: `order` indexes `tools`; then `extra`, the turn's
    /// structured-output tool.
    Bound {
        tools: &'a [BoundTool],
        order: &'a [usize],
        extra: Option<&'a ToolInfo>,
    },
}

impl<'a> ToolList<'a> {
    /// The list of a bound mode's tools, then `extra`.
    pub(crate) fn bound(
        tools: &'a [BoundTool],
        order: &'a [usize],
        extra: Option<&'a ToolInfo>,
    ) -> Self {
        Self {
            repr: Repr::Bound {
                tools,
                order,
                extra,
            },
        }
    }

    /// `true` for a binding's list: every info in it (and the turn's
    /// structured-output tool) was checked for JSON depth (at most 128
    /// levels) when it was declared, bound or made; `false` for a caller's
    /// own slice, which a model that serialises the request must check
    /// itself (as the HTTP models do before they build a body).
    pub fn is_checked(&self) -> bool {
        matches!(self.repr, Repr::Bound { .. })
    }

    /// How many tools.
    pub fn len(&self) -> usize {
        match self.repr {
            Repr::Slice(slice) => slice.len(),
            Repr::Bound { order, extra, .. } => order.len() + usize::from(extra.is_some()),
        }
    }

    /// `true` when there is no tool.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tool at `index`, in order.
    pub fn get(&self, index: usize) -> Option<&'a ToolInfo> {
        match self.repr {
            Repr::Slice(slice) => slice.get(index),
            Repr::Bound {
                tools,
                order,
                extra,
            } => match order.get(index) {
                Some(&tool) => tools.get(tool).map(BoundTool::info),
                None if index == order.len() => extra,
                None => None,
            },
        }
    }

    /// The tools, in order.
    pub fn iter(&self) -> ToolListIter<'a> {
        ToolListIter {
            list: *self,
            next: 0,
            end: self.len(),
        }
    }
}

impl Default for ToolList<'_> {
    /// No tools.
    fn default() -> Self {
        Self {
            repr: Repr::Slice(&[]),
        }
    }
}

impl<'a> From<&'a [ToolInfo]> for ToolList<'a> {
    fn from(tools: &'a [ToolInfo]) -> Self {
        Self {
            repr: Repr::Slice(tools),
        }
    }
}

impl<'a> From<&'a Vec<ToolInfo>> for ToolList<'a> {
    fn from(tools: &'a Vec<ToolInfo>) -> Self {
        Self::from(tools.as_slice())
    }
}

impl<'a, const N: usize> From<&'a [ToolInfo; N]> for ToolList<'a> {
    fn from(tools: &'a [ToolInfo; N]) -> Self {
        Self::from(tools.as_slice())
    }
}

impl<'a> IntoIterator for ToolList<'a> {
    type Item = &'a ToolInfo;
    type IntoIter = ToolListIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a> IntoIterator for &ToolList<'a> {
    type Item = &'a ToolInfo;
    type IntoIter = ToolListIter<'a>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for ToolList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|tool| &tool.name))
            .finish()
    }
}

impl PartialEq for ToolList<'_> {
    /// Equal when they hold equal tools in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

/// The tools of a [`ToolList`], in order.
#[derive(Clone)]
pub struct ToolListIter<'a> {
    list: ToolList<'a>,
    next: usize,
    end: usize,
}

impl<'a> Iterator for ToolListIter<'a> {
    type Item = &'a ToolInfo;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let item = self.list.get(self.next);
        self.next += 1;
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl DoubleEndedIterator for ToolListIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        self.end -= 1;
        self.list.get(self.end)
    }
}

impl ExactSizeIterator for ToolListIter<'_> {}

impl std::iter::FusedIterator for ToolListIter<'_> {}
