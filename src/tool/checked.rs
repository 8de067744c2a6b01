//! A tool's info once checked, with its compiled argument validator, and
//! the per-definition cache that lets every binding share them.
//!
//! Checking a `parameters` schema (meta-schema check, compilation) costs
//! far more than building a tool, so it is done once per distinct info:
//! a [`Definition::from_fn`](crate::tool::Definition::from_fn) or
//! [`typed_fn`](crate::tool::Definition::typed_fn) tool reports the very
//! info it was declared with (the same allocation, found by address); a
//! tool another factory builds reports an info of its own, which is reused
//! when it equals the last one checked for that name and checked afresh
//! otherwise. Two bindings that see equal infos share one [`CheckedInfo`];
//! the tools themselves are never shared.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::tool::ToolInfo;
use crate::tool::schema::{self, SchemaProblem};

/// A [`ToolInfo`] whose schema passed the checks, with its compiled
/// validator. Immutable, shared by every binding that reports this info.
pub(crate) struct CheckedInfo {
    /// The info, as the model sees it.
    pub(crate) info: Arc<ToolInfo>,
    /// `info.name`, shared by every call's context.
    pub(crate) name: Arc<str>,
    /// The compiled `info.parameters`.
    pub(crate) validator: Arc<jsonschema::Validator>,
}

/// The checked infos of one tool definition: one slot per declared tool
/// name, holding the last info checked under that name.
///
/// Only a success is kept: a schema that fails its checks fails them again,
/// with the same error, at every bind. Two first binds racing may each
/// check; the slot keeps one, and both bindings are correct.
pub(crate) struct InfoCache {
    /// The info fixed at declaration, when there is one: the tool reports a
    /// reference to it, so it is recognised by address.
    declared: Option<Arc<ToolInfo>>,
    slots: Box<[Mutex<Option<Arc<CheckedInfo>>>]>,
}

impl InfoCache {
    /// A cache for `tool_names` slots; `declared` is the one tool's info
    /// when it is fixed at declaration.
    pub(crate) fn new(tool_names: usize, declared: Option<Arc<ToolInfo>>) -> Self {
        Self {
            declared,
            slots: (0..tool_names).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// The checked form of `info`, which a built tool reported and which is
    /// declared at position `slot` (`None` for a name not declared): the
    /// cached one when it is the same info or an equal one, else checked
    /// and compiled now, and cached.
    ///
    /// Errors: the first [`SchemaProblem`] of `info.parameters`.
    pub(crate) fn checked(
        &self,
        slot: Option<usize>,
        info: &ToolInfo,
    ) -> Result<Arc<CheckedInfo>, SchemaProblem> {
        let slot = slot.and_then(|slot| self.slots.get(slot));
        if let Some(cached) = slot.and_then(|slot| lock(slot).clone())
            && (std::ptr::eq(&*cached.info, info) || *cached.info == *info)
        {
            return Ok(cached);
        }
        let validator = schema::compile(&info.parameters)?;
        let info = match &self.declared {
            Some(declared) if std::ptr::eq(&**declared, info) => Arc::clone(declared),
            _ => Arc::new(info.clone()),
        };
        let checked = Arc::new(CheckedInfo {
            name: info.name.as_str().into(),
            info,
            validator,
        });
        if let Some(slot) = slot {
            *lock(slot) = Some(Arc::clone(&checked));
        }
        Ok(checked)
    }
}

/// Locks a slot, recovering from poisoning: nothing panics while holding
/// it, and its value is a plain `Option` either way.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info(parameters: serde_json::Value) -> ToolInfo {
        ToolInfo::new("t", "A tool.", parameters)
    }

    #[test]
    fn the_declared_info_is_checked_once_and_shared() {
        let declared = Arc::new(info(json!({"type": "object"})));
        let cache = InfoCache::new(1, Some(Arc::clone(&declared)));
        let first = cache.checked(Some(0), &declared).unwrap();
        let second = cache.checked(Some(0), &declared).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(Arc::ptr_eq(&first.info, &declared), "no copy of the info");
    }

    #[test]
    fn an_equal_info_reuses_the_checked_one() {
        let cache = InfoCache::new(1, None);
        let first = cache
            .checked(Some(0), &info(json!({"type": "object"})))
            .unwrap();
        let second = cache
            .checked(Some(0), &info(json!({"type": "object"})))
            .unwrap();
        assert!(Arc::ptr_eq(&first, &second));
    }

    #[test]
    fn a_different_info_is_checked_afresh_and_replaces_the_cached_one() {
        let cache = InfoCache::new(1, None);
        let first = cache
            .checked(Some(0), &info(json!({"type": "object"})))
            .unwrap();
        let other = info(json!({"type": "object", "required": ["a"]}));
        let second = cache.checked(Some(0), &other).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(
            !second.validator.is_valid(&json!({})),
            "the other schema is the one used"
        );
        assert!(Arc::ptr_eq(
            &second,
            &cache.checked(Some(0), &other).unwrap()
        ));
    }

    #[test]
    fn a_failure_is_not_kept() {
        let cache = InfoCache::new(1, None);
        assert!(matches!(
            cache.checked(Some(0), &info(json!({"type": "array"}))),
            Err(SchemaProblem::NotObject)
        ));
        assert!(lock(&cache.slots[0]).is_none());
    }

    #[test]
    fn an_undeclared_name_is_checked_but_not_cached() {
        let cache = InfoCache::new(1, None);
        let first = cache
            .checked(None, &info(json!({"type": "object"})))
            .unwrap();
        let second = cache
            .checked(None, &info(json!({"type": "object"})))
            .unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
    }
}
