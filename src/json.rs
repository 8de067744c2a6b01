//! Small JSON helpers shared by binding (argument checks) and the wire
//! formats (payload checks), so both name a value's type the same way.

use serde_json::Value;

/// The JSON type of a value, as error messages say it: `null`, `a boolean`,
/// `a number`, `a string`, `an array`, `an object`.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
