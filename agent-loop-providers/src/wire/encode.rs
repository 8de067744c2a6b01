//! Writing a format's serde types as the `serde_json::Value`s the exports
//! return.

use serde::Serialize;
use serde_json::Value;

/// `item` as a JSON value.
///
/// serde_json's `to_value` fails only for a map whose keys do not
/// serialise as strings, or for a `Serialize` implementation that itself
/// returns an error. The format types this is called with have neither:
/// their fields are strings, numbers, booleans, `Value`s, `Map<String,
/// Value>`s, and vectors and options of such types, all derived. So the
/// error branch is never taken; should a future type take it, a debug
/// build (the test suite, the fuzz targets) fails at once, and a release
/// build writes `null` in its place and logs the error, rather than
/// panicking in the middle of a turn: the provider then refuses the
/// request, which names the problem.
pub(crate) fn to_value<T: Serialize>(item: &T) -> Value {
    match serde_json::to_value(item) {
        Ok(value) => value,
        Err(error) => {
            debug_assert!(false, "a wire type did not serialise: {error}");
            tracing::error!(%error, "a wire type did not serialise; wrote null instead");
            Value::Null
        }
    }
}

/// Each of `items` as a JSON value, in order.
pub(crate) fn to_values<T: Serialize>(items: &[T]) -> Vec<Value> {
    items.iter().map(to_value).collect()
}
