//! A tool's info once checked, with its compiled argument validator, and
//! the per-definition cache that lets every binding share them.
//!
//! Checking a `parameters` schema (meta-schema check, compilation) costs
//! far more than building a tool, so it is done once per distinct info:
//! a [`Definition::from_fn`](crate::tool::Definition::from_fn) or
//! [`typed_fn`](crate::tool::Definition::typed_fn) tool reports the very
//! info it was declared with (the same allocation, found by address); a
//! tool another factory builds reports an info of its own, which is reused
//! when it equals the last one checked under its name and checked afresh
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

/// The checked infos of one tool definition: per tool name, the last info
/// checked under that name.
///
/// Only a success is kept: a schema that fails its checks fails them again,
/// with the same error, at every bind. Two first binds racing may each
/// check; the cache keeps one, and both bindings are correct.
pub(crate) struct InfoCache {
    /// The info fixed at declaration, when there is one: the tool reports a
    /// reference to it, so it is recognised by address.
    declared: Option<Declared>,
    /// In the order first seen, which is the order factories usually build
    /// in, so `position` finds most entries at once.
    entries: Mutex<Vec<Arc<CheckedInfo>>>,
}

/// A tool's info fixed at declaration
/// ([`from_fn`](crate::tool::Definition::from_fn)), which its tools report
/// by reference.
pub(crate) struct Declared {
    info: Arc<ToolInfo>,
    /// The info nested too deeply when declared: its deep values were
    /// dropped then (see [`Declared::new`]), and every bind refuses it.
    too_deep: bool,
}

impl Declared {
    /// Takes `info` as declared. Values of it that nest deeper than the
    /// crate walks (see [`schema::info_too_deep`]) are dropped at once,
    /// without recursion, and remembered as refused: the definition owns
    /// them now, and serde_json's own drop of them, whenever the
    /// definition went, could overflow the stack.
    pub(crate) fn new(mut info: ToolInfo) -> Self {
        let too_deep = schema::info_too_deep(&info);
        if too_deep {
            schema::drop_too_deep(&mut info);
        }
        Self {
            info: Arc::new(info),
            too_deep,
        }
    }

    /// The info, shared with the tools built from it.
    pub(crate) fn info(&self) -> &Arc<ToolInfo> {
        &self.info
    }
}

/// How many names one definition's cache remembers: far more than a tool
/// list a model is given, so only a factory that invents new names at
/// every bind reaches it, and then the newest are not cached.
const MAX_CACHED_NAMES: usize = 1024;

impl InfoCache {
    /// A cache; `declared` is the one tool's info when it is fixed at
    /// declaration.
    pub(crate) fn new(declared: Option<Declared>) -> Self {
        Self {
            declared,
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The checked form of `info`, which a built tool reported at
    /// `position` in its factory's list: the cached one when it is the same
    /// info or an equal one, else checked and compiled now, and cached.
    ///
    /// Errors: the first [`SchemaProblem`] of `info.parameters`.
    pub(crate) fn checked(
        &self,
        position: usize,
        info: &ToolInfo,
    ) -> Result<Arc<CheckedInfo>, SchemaProblem> {
        let cached = {
            let entries = lock(&self.entries);
            let named = |entry: &&Arc<CheckedInfo>| *entry.name == *info.name;
            entries
                .get(position)
                .filter(named)
                .or_else(|| entries.iter().find(named))
                .cloned()
        };
        // A cached info passed the depth check, so comparing with it
        // recurses no deeper than it nests, however deep `info` is.
        if let Some(cached) = cached
            && (std::ptr::eq(&*cached.info, info) || *cached.info == *info)
        {
            return Ok(cached);
        }
        let declared = self
            .declared
            .as_ref()
            .filter(|declared| std::ptr::eq(&*declared.info, info));
        // Before the schema checker and the copy below, which recurse per
        // level.
        if declared.is_some_and(|declared| declared.too_deep) || schema::info_too_deep(info) {
            return Err(SchemaProblem::TooDeep);
        }
        let validator = schema::compile(&info.parameters)?;
        let info = match declared {
            Some(declared) => Arc::clone(&declared.info),
            None => Arc::new(info.clone()),
        };
        let checked = Arc::new(CheckedInfo {
            name: info.name.as_str().into(),
            info,
            validator,
        });
        let mut entries = lock(&self.entries);
        if let Some(entry) = entries.iter_mut().find(|entry| entry.name == checked.name) {
            *entry = Arc::clone(&checked);
        } else if entries.len() < MAX_CACHED_NAMES {
            entries.push(Arc::clone(&checked));
        }
        Ok(checked)
    }
}

/// Locks the cache, recovering from poisoning: nothing panics while
/// holding it, and its entries are complete values either way.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn info(parameters: serde_json::Value) -> ToolInfo {
        ToolInfo::new("t", "A tool.", parameters)
    }

    #[test]
    fn the_declared_info_is_checked_once_and_shared() {
        let declared = Declared::new(info(json!({"type": "object"})));
        let declared_info = Arc::clone(declared.info());
        let cache = InfoCache::new(Some(declared));
        let declared = declared_info;
        let first = cache.checked(0, &declared).unwrap();
        let second = cache.checked(0, &declared).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(Arc::ptr_eq(&first.info, &declared), "no copy of the info");
    }

    #[test]
    fn an_equal_info_reuses_the_checked_one_wherever_it_was_built() {
        let cache = InfoCache::new(None);
        let first = cache.checked(0, &info(json!({"type": "object"}))).unwrap();
        let second = cache.checked(3, &info(json!({"type": "object"}))).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
    }

    #[test]
    fn a_different_info_is_checked_afresh_and_replaces_the_cached_one() {
        let cache = InfoCache::new(None);
        let first = cache.checked(0, &info(json!({"type": "object"}))).unwrap();
        let other = info(json!({"type": "object", "required": ["a"]}));
        let second = cache.checked(0, &other).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(
            !second.validator.is_valid(&json!({})),
            "the other schema is the one used"
        );
        assert!(Arc::ptr_eq(&second, &cache.checked(0, &other).unwrap()));
        assert_eq!(lock(&cache.entries).len(), 1, "one entry per name");
    }

    #[test]
    fn names_are_cached_apart() {
        let cache = InfoCache::new(None);
        let a = cache
            .checked(0, &ToolInfo::new("a", "", json!({"type": "object"})))
            .unwrap();
        let b = cache
            .checked(1, &ToolInfo::new("b", "", json!({"type": "object"})))
            .unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(&*b.name, "b");
        let again = cache
            .checked(0, &ToolInfo::new("b", "", json!({"type": "object"})))
            .unwrap();
        assert!(Arc::ptr_eq(&b, &again), "found by name in another position");
    }

    #[test]
    fn a_declared_info_too_deep_is_emptied_at_once_and_refused_at_every_check() {
        let deep = (0..200).fold(json!({}), |inner, _| json!({ "a": inner }));
        let declared = Declared::new(info(json!({"type": "object", "properties": deep})));
        assert_eq!(
            declared.info().parameters,
            Value::Null,
            "dropped when declared"
        );
        let declared_info = Arc::clone(declared.info());
        let cache = InfoCache::new(Some(declared));
        for _ in 0..2 {
            assert!(matches!(
                cache.checked(0, &declared_info),
                Err(SchemaProblem::TooDeep)
            ));
        }
        // An equal info built elsewhere is a different one, checked as such.
        assert!(matches!(
            cache.checked(0, &info(Value::Null)),
            Err(SchemaProblem::NotObject)
        ));
    }

    #[test]
    fn a_failure_is_not_kept() {
        let cache = InfoCache::new(None);
        assert!(matches!(
            cache.checked(0, &info(json!({"type": "array"}))),
            Err(SchemaProblem::NotObject)
        ));
        assert!(lock(&cache.entries).is_empty());
    }
}
