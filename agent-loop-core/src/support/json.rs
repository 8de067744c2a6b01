//! Small JSON helpers shared by binding (argument checks), the turn runner
//! and the wire formats: naming a value's type, bounding how deeply a value
//! nests, and dropping a value that nests too deeply.
//!
//! serde_json walks a [`Value`] recursively when it clones, compares,
//! serialises, deserialises or drops it: one stack frame (a few hundred
//! bytes in release builds, over a kilobyte in debug builds) per level.
//! JSON text cannot nest as deep as [`TooDeep::LIMIT`] (serde_json's parser
//! refuses 128 levels), but code can build a value of any depth, and a value
//! nested 10,000 levels overflows a thread's 2 MiB stack in any of those
//! walks, which aborts the process. So every value this crate walks that a
//! caller, a model or a server controls is checked here first, without
//! recursion, and a value this crate owns and refuses is dropped here,
//! without recursion.

use serde_json::Value;

/// How many objects and arrays a JSON value this crate walks may nest:
/// 128. serde_json parses JSON text of at most 127 levels, so no value read
/// from text is ever refused for its depth.
pub(crate) const MAX_DEPTH: usize = 128;

/// A JSON value nested deeper than [`TooDeep::LIMIT`] (128) levels of
/// objects and arrays: the one cause of every refusal of a value built in
/// code for its depth, found in the refusal's `source()` chain.
///
/// serde_json parses no JSON text nested 128 levels or more (such text is
/// refused as text that does not parse: `ArgumentsNotJson`, a response
/// that is not JSON), so only a value built in code is refused with this
/// error; serde_json would clone, compare,
/// serialise and drop it recursively, and a value 10,000 levels deep
/// overflows a thread's stack, an abort nothing can contain. Where it is
/// the cause (each checked where a value enters the crate):
///
/// | value | refused as |
/// | --- | --- |
/// | a tool's `parameters` or extras | [`BindErrorKind::InvalidToolInfo`](crate::BindErrorKind::InvalidToolInfo) |
/// | arguments from code, and as each middleware hands them on | [`ToolCallErrorKind::ArgumentsTooDeep`](crate::bind::ToolCallErrorKind::ArgumentsTooDeep) |
/// | a tool's output, as the tool or a middleware returned it | [`ToolCallErrorKind::OutputTooDeep`](crate::bind::ToolCallErrorKind::OutputTooDeep) |
/// | a message handed to a turn | [`TurnError::TooDeep`](crate::turn::TurnError::TooDeep) |
/// | a response a [`Model`](crate::turn::Model) returned | [`TurnError::Model`](crate::turn::TurnError::Model), kind `InvalidResponse` |
/// | an output schema | [`OutputErrorKind::TooDeep`](crate::turn::OutputErrorKind::TooDeep) |
/// | a value handed to a `wire` parser | `WireErrorKind::TooDeep` |
/// | a model request or a model's `extra` field | `ModelErrorKind::Request` (features `openai`, `anthropic`) |
///
/// ```
/// use std::error::Error as _;
/// use agent_loop_core::TooDeep;
/// use agent_loop_core::turn::Output;
/// use serde_json::{Value, json};
///
/// // A schema of 200 arrays in one another: deeper than the crate walks.
/// let deep = (0..200).fold(json!(1), |inner, _| Value::Array(vec![inner]));
/// let error = Output::from_schema("deep", "", deep).unwrap_err();
/// let rule = error.source().and_then(|cause| cause.downcast_ref::<TooDeep>());
/// assert_eq!(rule.map(|rule| rule.limit), Some(TooDeep::LIMIT));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("a JSON value nests deeper than {limit} levels of objects and arrays")]
#[non_exhaustive]
pub struct TooDeep {
    /// How many levels a value may nest: [`TooDeep::LIMIT`].
    pub limit: usize,
}

impl Default for TooDeep {
    /// [`TooDeep::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl TooDeep {
    /// How many objects and arrays a JSON value the crate walks may nest:
    /// 128 (`{}` and `[]` are one level, `{"a": []}` two).
    pub const LIMIT: usize = MAX_DEPTH;

    /// The error of a value deeper than [`TooDeep::LIMIT`] levels.
    pub const fn new() -> Self {
        Self { limit: MAX_DEPTH }
    }
}

/// The value a local JSON Schema reference points at in `root`: `#` is
/// `root` itself, `#/$defs/Line` the JSON Pointer (RFC 6901) after the
/// `#`; `None` for a reference that is not local (no leading `#`) or
/// points at nothing. The schema walks of the core (native output, the
/// schema-driven test model) and of the formats' output schemas follow
/// `$ref` with it.
pub fn resolve_local_reference<'v>(root: &'v Value, reference: &str) -> Option<&'v Value> {
    // An empty pointer is `root` itself (`Value::pointer("")`).
    root.pointer(reference.strip_prefix('#')?)
}

/// `true` when a tool call's arguments text says "no arguments": blank
/// (empty or white space), as OpenAI and Anthropic send for a tool
/// without parameters, or the JSON literal `null`, as Groq and other
/// OpenAI-compatible servers send for one (langchain-ai/langchain PR
/// #33896). Such a call runs with `{}`, and the formats export its
/// arguments as `{}`.
///
/// ```
/// use agent_loop_core::support::json::no_arguments;
///
/// assert!(no_arguments(""));
/// assert!(no_arguments(" null\n"));
/// assert!(!no_arguments("{}"));
/// assert!(!no_arguments("nul"));
/// ```
pub fn no_arguments(text: &str) -> bool {
    let text = text.trim();
    text.is_empty() || text == "null"
}

/// The JSON type of a value, as error messages say it: `null`, `a boolean`,
/// `a number`, `a string`, `an array`, `an object`.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The children of one object or array, as the walks below visit them.
enum Children<'a> {
    Array(std::slice::Iter<'a, Value>),
    Object(serde_json::map::Iter<'a>),
}

impl<'a> Children<'a> {
    /// The children of `value`; `None` for a scalar.
    fn of(value: &'a Value) -> Option<Self> {
        match value {
            Value::Array(items) => Some(Self::Array(items.iter())),
            Value::Object(map) => Some(Self::Object(map.iter())),
            _ => None,
        }
    }
}

/// `true` when `value` nests objects and arrays more than [`TooDeep::LIMIT`]
/// levels deep (`{}` and `[]` are one level, `{"a": []}` two).
///
/// The walk keeps its own stack of at most `MAX_DEPTH` iterators on the
/// heap and stops at the first container past the limit, so it never
/// recurses and never costs more than the value's size in time. A value
/// with no container below its top level (most tool arguments) needs no
/// stack, so checking it allocates nothing.
pub fn too_deep(value: &Value) -> bool {
    nests_deeper_than(value, MAX_DEPTH)
}

/// [`too_deep`] with any limit.
pub(crate) fn nests_deeper_than(value: &Value, limit: usize) -> bool {
    let Some(mut current) = Children::of(value) else {
        return false;
    };
    if limit == 0 {
        return true;
    }
    // Most tool arguments and outputs: one container of scalars, told
    // apart without the walk's machinery (checked on every call, and on
    // every hop of a middleware chain).
    let flat = match value {
        Value::Array(items) => !items.iter().any(is_container),
        Value::Object(map) => !map.values().any(is_container),
        _ => true,
    };
    if flat {
        return false;
    }
    // The containers above `current` whose children are not all visited;
    // `current` is at depth `open.len() + 1`.
    let mut open = Vec::new();
    loop {
        let next = match &mut current {
            Children::Array(items) => items.next(),
            Children::Object(entries) => entries.next().map(|(_, value)| value),
        };
        match next {
            Some(child) => {
                if let Some(grandchildren) = Children::of(child) {
                    if open.len() + 1 == limit {
                        return true;
                    }
                    open.push(std::mem::replace(&mut current, grandchildren));
                }
            }
            None => match open.pop() {
                Some(parent) => current = parent,
                None => return false,
            },
        }
    }
}

/// `value` when it nests at most [`TooDeep::LIMIT`] levels; otherwise `None`,
/// and `value` is dropped by `drop_deep`: what every owner of a value a
/// caller, a model or a server built does before keeping it.
pub fn within_depth(value: Value) -> Option<Value> {
    if too_deep(&value) {
        drop_deep(value);
        None
    } else {
        Some(value)
    }
}

/// Drops `value` without recursion: the children of every object and array
/// are moved to a heap stack before their parent is dropped, so a value of
/// any depth is freed in constant stack. For values this crate took
/// ownership of and refuses as [`too_deep`]; a shallow value is cheaper to
/// drop as usual.
pub(crate) fn drop_deep(value: Value) {
    let mut pending = vec![value];
    while let Some(mut value) = pending.pop() {
        match &mut value {
            Value::Array(items) => pending.extend(items.drain(..).filter(is_container)),
            Value::Object(map) => pending.extend(
                std::mem::take(map)
                    .into_iter()
                    .map(|(_, child)| child)
                    .filter(is_container),
            ),
            _ => {}
        }
        // `value` is empty or a scalar here: dropping it recurses no further.
    }
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `levels` objects nested in one another, built without recursion
    /// (`json!` would serialise `inner`, which recurses).
    fn nested(levels: usize) -> Value {
        (1..levels).fold(json!({}), |inner, _| {
            Value::Object(serde_json::Map::from_iter([("a".to_owned(), inner)]))
        })
    }

    #[test]
    fn depth_is_counted_in_container_levels() {
        assert!(!nests_deeper_than(&json!("leaf"), 0));
        assert!(nests_deeper_than(&json!({}), 0));
        assert!(!nests_deeper_than(&json!({}), 1));
        assert!(!too_deep(&nested(128)));
        assert!(too_deep(&nested(129)));
        assert!(nests_deeper_than(&json!([[[1]]]), 2));
        assert!(!nests_deeper_than(&json!([[[1]]]), 3));
        // The deep branch is found wherever it is among shallow siblings.
        assert!(nests_deeper_than(&json!([1, {"a": [2]}, [[[]]]]), 3));
        assert!(!nests_deeper_than(&json!([1, {"a": [2]}, [[]]]), 3));
    }

    #[test]
    fn depth_check_and_drop_take_no_stack_per_level() {
        // A thread with a 64 KiB stack: serde_json's own drop of this
        // value would need megabytes.
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(|| {
                let deep = nested(100_000);
                assert!(too_deep(&deep));
                drop_deep(deep);
                let wide_and_deep = Value::Array(vec![
                    nested(50_000),
                    Value::Array(vec![json!(1), json!(2), nested(50_000)]),
                ]);
                drop_deep(wide_and_deep);
            })
            .expect("a thread")
            .join()
            .expect("no overflow");
    }
}
