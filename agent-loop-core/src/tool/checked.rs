//! A tool's info once checked, with its compiled argument validator: made
//! once when the info is fixed at declaration ([`Declared`]), or at bind for
//! tools that report their own info, where bindings that report equal
//! infos share one ([`InfoCache`]).
//!
//! Checking a `parameters` schema (meta-schema check, compilation) costs
//! far more than building a tool, so it is done once per distinct info.
//! Two bindings that see equal infos share one [`CheckedInfo`]; the tools
//! themselves are never shared.

use std::sync::{Arc, Mutex};

use crate::support::lock::lock;
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
    /// `validator` treats a required property with a `default` as
    /// optional: the tool's runner fills defaults in
    /// ([`Definition::fills_defaults`](crate::tool::Definition::fills_defaults)).
    fills_defaults: bool,
}

impl CheckedInfo {
    /// `info` with the `validator` compiled from its parameters elsewhere
    /// (an output schema, checked when declared).
    pub(crate) fn compiled(info: Arc<ToolInfo>, validator: Arc<jsonschema::Validator>) -> Self {
        Self {
            name: info.name.as_str().into(),
            info,
            validator,
            fills_defaults: false,
        }
    }

    /// `info` checked and compiled now; with `fills_defaults`, the
    /// validator treats a required property with a `default` as optional
    /// ([`schema::compile_filling_defaults`]).
    ///
    /// Errors: the first [`SchemaProblem`] of `info.parameters`.
    pub(crate) fn check_for(
        info: Arc<ToolInfo>,
        fills_defaults: bool,
    ) -> Result<Self, SchemaProblem> {
        // Before the schema checker, which recurses per level.
        if schema::info_too_deep(&info) {
            return Err(SchemaProblem::TooDeep);
        }
        let validator = if fills_defaults {
            schema::compile_filling_defaults(&info.parameters)?
        } else {
            schema::compile(&info.parameters)?
        };
        Ok(Self {
            name: info.name.as_str().into(),
            info,
            validator,
            fills_defaults,
        })
    }
}

/// A tool's info fixed at declaration (`from_fn`, `typed_fn`, a one-tool
/// factory's `new`), checked there, once: every binding's tool reports it,
/// and bind takes its checked form as it is.
#[derive(Clone)]
pub(crate) struct Declared {
    info: Arc<ToolInfo>,
    /// The validator relaxes required properties with a `default`
    /// ([`CheckedInfo::check_for`]).
    fills_defaults: bool,
    /// `Ok` when the schema passed; a failure is kept as a marker and
    /// checked again at each bind for its error (a schema error cannot be
    /// cloned, and every bind of a bad declaration fails alike).
    checked: Result<Arc<CheckedInfo>, Refused>,
}

/// Why a declared info was refused when declared.
#[derive(Clone, Copy)]
enum Refused {
    /// Its values nested too deeply and were dropped then.
    TooDeep,
    /// Its schema failed a check; checking it again gives the error.
    Schema,
}

impl Declared {
    /// Takes `info` as declared and checks it. Values of it that nest
    /// deeper than the crate walks (see [`schema::info_too_deep`]) are
    /// dropped at once, without recursion, and remembered as refused: the
    /// definition owns them now, and serde_json's own drop of them,
    /// whenever the definition went, could overflow the stack.
    pub(crate) fn new(mut info: ToolInfo) -> Self {
        if schema::info_too_deep(&info) {
            schema::drop_too_deep(&mut info);
            return Self {
                info: Arc::new(info),
                fills_defaults: false,
                checked: Err(Refused::TooDeep),
            };
        }
        Self::checked_for(Arc::new(info), false)
    }

    /// `info`, checked now with `fills_defaults`.
    fn checked_for(info: Arc<ToolInfo>, fills_defaults: bool) -> Self {
        let checked = CheckedInfo::check_for(Arc::clone(&info), fills_defaults)
            .map(Arc::new)
            .map_err(|_| Refused::Schema);
        Self {
            info,
            fills_defaults,
            checked,
        }
    }

    /// This declaration with its validator made for `fills_defaults`: itself
    /// when it already is, or was refused for its depth; checked again
    /// otherwise.
    pub(crate) fn filling_defaults(&self, fills_defaults: bool) -> Self {
        if fills_defaults == self.fills_defaults || matches!(self.checked, Err(Refused::TooDeep)) {
            return self.clone();
        }
        Self::checked_for(Arc::clone(&self.info), fills_defaults)
    }

    /// The info, shared with the tools built from it.
    pub(crate) fn info(&self) -> &Arc<ToolInfo> {
        &self.info
    }

    /// The checked form, made when declared.
    ///
    /// Errors: the [`SchemaProblem`] the declaration has, at every call.
    pub(crate) fn checked(&self) -> Result<Arc<CheckedInfo>, SchemaProblem> {
        match &self.checked {
            Ok(checked) => Ok(Arc::clone(checked)),
            Err(Refused::TooDeep) => Err(SchemaProblem::TooDeep),
            // Checked again for its error; a schema check is a pure
            // function of the schema, so it fails again.
            Err(Refused::Schema) => {
                CheckedInfo::check_for(Arc::clone(&self.info), self.fills_defaults).map(Arc::new)
            }
        }
    }
}

/// The checked infos the tools of one factory reported: per tool name, the
/// last info checked under that name.
///
/// Only a success is kept: a schema that fails its checks fails them again,
/// with the same error, at every bind. Two first binds racing may both
/// check one info; the first to store it wins and the other takes the
/// stored one, so every binding holds the same checked info.
pub(crate) struct InfoCache {
    /// In the order first seen, which is the order factories usually build
    /// in, so `position` finds most entries at once.
    entries: Mutex<Vec<Arc<CheckedInfo>>>,
}

/// How many names one definition's cache remembers: far more than a tool
/// list a model is given, so only a factory that invents new names at
/// every bind reaches it, and then the newest are not cached.
const MAX_CACHED_NAMES: usize = 1024;

impl InfoCache {
    pub(crate) fn new() -> Self {
        Self {
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The checked form of `info`, which a built tool reported at
    /// `position` in its factory's list: the cached one when it is an
    /// equal info, else checked and compiled now, and cached.
    ///
    /// Errors: the first [`SchemaProblem`] of `info`.
    pub(crate) fn checked(
        &self,
        position: usize,
        info: &ToolInfo,
        fills_defaults: bool,
    ) -> Result<Arc<CheckedInfo>, SchemaProblem> {
        if let Some(cached) = self
            .equal(position, info)
            .filter(|cached| cached.fills_defaults == fills_defaults)
        {
            return Ok(cached);
        }
        // Before the schema checker and the copy below, which recurse per
        // level.
        if schema::info_too_deep(info) {
            return Err(SchemaProblem::TooDeep);
        }
        let checked = Arc::new(CheckedInfo::check_for(
            Arc::new(info.clone()),
            fills_defaults,
        )?);
        let mut entries = lock(&self.entries);
        match entries.iter_mut().find(|entry| entry.name == checked.name) {
            // Another bind checked an equal info meanwhile: share its.
            Some(entry)
                if *entry.info == *checked.info && entry.fills_defaults == fills_defaults =>
            {
                Ok(Arc::clone(entry))
            }
            Some(entry) => {
                *entry = Arc::clone(&checked);
                Ok(checked)
            }
            None => {
                if entries.len() < MAX_CACHED_NAMES {
                    entries.push(Arc::clone(&checked));
                }
                Ok(checked)
            }
        }
    }

    /// The cached checked info equal to `info`, if any.
    fn equal(&self, position: usize, info: &ToolInfo) -> Option<Arc<CheckedInfo>> {
        let entries = lock(&self.entries);
        let named = |entry: &&Arc<CheckedInfo>| *entry.name == *info.name;
        let cached = entries
            .get(position)
            .filter(named)
            .or_else(|| entries.iter().find(named))?;
        // A cached info passed the depth check, so comparing with it
        // recurses no deeper than it nests, however deep `info` is.
        (std::ptr::eq(&*cached.info, info) || *cached.info == *info).then(|| Arc::clone(cached))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn info(parameters: serde_json::Value) -> ToolInfo {
        ToolInfo::new("t", "A tool.", parameters)
    }

    #[test]
    fn a_declared_info_is_checked_once_when_declared() {
        let declared = Declared::new(info(json!({"type": "object"})));
        let first = declared.checked().unwrap();
        let second = declared.checked().unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(
            Arc::ptr_eq(&first.info, declared.info()),
            "no copy of the info"
        );
    }

    #[test]
    fn a_declared_info_with_a_bad_schema_fails_at_every_check() {
        let declared = Declared::new(info(json!({"type": "array"})));
        for _ in 0..2 {
            assert!(matches!(declared.checked(), Err(SchemaProblem::NotObject)));
        }
        let declared = Declared::new(info(json!({"type": "object", "minProperties": "x"})));
        assert!(matches!(
            declared.checked(),
            Err(SchemaProblem::NotASchema(_))
        ));
    }

    #[test]
    fn an_equal_info_reuses_the_checked_one_wherever_it_was_built() {
        let cache = InfoCache::new();
        let first = cache
            .checked(0, &info(json!({"type": "object"})), false)
            .unwrap();
        let second = cache
            .checked(3, &info(json!({"type": "object"})), false)
            .unwrap();
        assert!(Arc::ptr_eq(&first, &second));
    }

    #[test]
    fn a_different_info_is_checked_afresh_and_replaces_the_cached_one() {
        let cache = InfoCache::new();
        let first = cache
            .checked(0, &info(json!({"type": "object"})), false)
            .unwrap();
        let other = info(json!({"type": "object", "required": ["a"]}));
        let second = cache.checked(0, &other, false).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(
            !second.validator.is_valid(&json!({})),
            "the other schema is the one used"
        );
        assert!(Arc::ptr_eq(
            &second,
            &cache.checked(0, &other, false).unwrap()
        ));
        assert_eq!(lock(&cache.entries).len(), 1, "one entry per name");
    }

    #[test]
    fn racing_checks_of_one_info_end_with_one_checked_info() {
        let cache = InfoCache::new();
        let parameters = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let barrier = std::sync::Barrier::new(8);
        let checked: Vec<Arc<CheckedInfo>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(|| {
                        let own = info(parameters.clone());
                        barrier.wait();
                        cache.checked(0, &own, false).unwrap()
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|thread| thread.join().unwrap())
                .collect()
        });
        assert!(checked.iter().all(|c| Arc::ptr_eq(c, &checked[0])));
    }

    #[test]
    fn names_are_cached_apart() {
        let cache = InfoCache::new();
        let a = cache
            .checked(0, &ToolInfo::new("a", "", json!({"type": "object"})), false)
            .unwrap();
        let b = cache
            .checked(1, &ToolInfo::new("b", "", json!({"type": "object"})), false)
            .unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(&*b.name, "b");
        let again = cache
            .checked(0, &ToolInfo::new("b", "", json!({"type": "object"})), false)
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
        for _ in 0..2 {
            assert!(matches!(declared.checked(), Err(SchemaProblem::TooDeep)));
        }
    }

    /// Playwright MCP's `browser_take_screenshot` as it lists it (Zod
    /// output: the defaulted `type` and `scale` are required).
    fn screenshot_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "filename": {"type": "string"},
                "scale": {"default": "css", "enum": ["css", "device"], "type": "string"},
                "type": {"default": "png", "enum": ["png", "jpeg"], "type": "string"}
            },
            "required": ["type", "scale"]
        })
    }

    #[test]
    fn a_tool_that_fills_defaults_is_checked_without_requiring_defaulted_properties() {
        let cache = InfoCache::new();
        let listed = info(screenshot_schema());
        let filled = cache.checked(0, &listed, true).unwrap();
        assert!(filled.validator.is_valid(&json!({})));
        assert!(filled.validator.is_valid(&json!({"scale": "device"})));
        // A property given is still checked, and so is everything else.
        assert!(!filled.validator.is_valid(&json!({"type": "gif"})));
        assert!(!filled.validator.is_valid(&json!({"other": 1})));
        // The model still sees the schema as listed.
        assert_eq!(filled.info.parameters, screenshot_schema());
        // The same info for a tool that does not fill defaults is checked
        // apart, as written.
        let strict = cache.checked(0, &listed, false).unwrap();
        assert!(!Arc::ptr_eq(&filled, &strict));
        assert!(!strict.validator.is_valid(&json!({})));
        assert!(Arc::ptr_eq(
            &strict,
            &cache.checked(0, &listed, false).unwrap()
        ));
    }

    #[test]
    fn defaulted_required_properties_are_relaxed_at_every_level_but_not_in_data() {
        let schema = json!({
            "type": "object",
            "properties": {
                "page": {
                    "type": "object",
                    "properties": {"size": {"type": "integer", "default": 10}, "n": {"type": "integer"}},
                    "required": ["size", "n"]
                },
                "list": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"x": {"default": 0}},
                    "required": ["x"]
                }},
                "example": {"default": {"properties": {"a": {"default": 1}}, "required": ["a"]}}
            },
            "required": ["page"]
        });
        let relaxed = schema::without_defaulted_required(&schema).unwrap();
        assert_eq!(relaxed["required"], json!(["page"]));
        assert_eq!(relaxed["properties"]["page"]["required"], json!(["n"]));
        assert_eq!(
            relaxed["properties"]["list"]["items"]["required"],
            json!([])
        );
        assert_eq!(
            relaxed["properties"]["example"]["default"],
            schema["properties"]["example"]["default"]
        );
        let plain = json!({"type": "object", "properties": {"a": {}}, "required": ["a"]});
        assert_eq!(schema::without_defaulted_required(&plain), None);
    }

    #[test]
    fn a_failure_is_not_kept() {
        let cache = InfoCache::new();
        assert!(matches!(
            cache.checked(0, &info(json!({"type": "array"})), false),
            Err(SchemaProblem::NotObject)
        ));
        assert!(lock(&cache.entries).is_empty());
    }
}
