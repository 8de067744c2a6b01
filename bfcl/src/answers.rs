//! BFCL ground truth: `possible_answer` lines turned into the calls the
//! replay model asks for and the arguments each tool must receive.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::call_string;
use super::literal::literal;
use super::normalize::{Declarations, Language};

/// Ground truth by task id. A malformed line is counted and skipped: its
/// task then fails with [`Reason::NoGroundTruth`].
pub(super) fn read_answers(text: &str, malformed: &mut usize) -> HashMap<String, Value> {
    let mut answers = HashMap::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let parsed: Option<(String, Value)> =
            serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|mut value| {
                    let id = value.get("id")?.as_str()?.to_owned();
                    Some((id, value.get_mut("ground_truth")?.take()))
                });
        match parsed {
            Some((id, ground_truth)) => {
                answers.insert(id, ground_truth);
            }
            None => *malformed += 1,
        }
    }
    answers
}

/// One call the ground truth asks for.
#[derive(Debug)]
pub(super) struct ExpectedCall {
    /// The tool call id the replay model gives it.
    pub(super) id: String,
    /// Model-facing (sanitised) tool name.
    pub(super) tool_name: String,
    /// The first accepted value of each parameter that may not be omitted.
    pub(super) arguments: Map<String, Value>,
}

/// The calls of a ground truth, with model-facing names and the first
/// accepted value of each parameter ([`first_accepted`]). A parameter whose accepted values
/// include `""` may be omitted, so it is (the call then also shows that
/// omission is accepted by the schema). A parameter with no accepted value
/// at all (`[]`, a data bug seen in `live_simple`) is left out too.
/// Java and JavaScript values become the literal strings a model sends
/// ([`literal`]).
pub(super) fn expected_calls(
    ground_truth: &Value,
    declared: &Declarations,
    language: Language,
) -> Result<Vec<ExpectedCall>, String> {
    let model_names = &declared.model_names;
    let calls = ground_truth
        .as_array()
        .ok_or("`ground_truth` is not a list")?;
    let mut expected = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let call = call
            .as_object()
            .filter(|call| call.len() == 1)
            .ok_or_else(|| format!("call {index} is not `{{tool: {{param: [values]}}}}`"))?;
        let Some((original, parameters)) = call.iter().next() else {
            continue;
        };
        let tool_name = model_names.get(original).ok_or_else(|| {
            format!("call {index} is to `{original}`, which the task does not declare")
        })?;
        let parameters = parameters
            .as_object()
            .ok_or_else(|| format!("call {index}: parameters of `{original}` are not an object"))?;
        if let Some((name, _)) = parameters.iter().find(|(_, accepted)| !accepted.is_array()) {
            return Err(format!(
                "call {index}: accepted values of `{original}.{name}` are not a list"
            ));
        }
        let mut arguments = first_accepted_of_each(parameters);
        if let Some(declared) = declared.literal_parameters.get(tool_name) {
            for (name, value) in &mut arguments {
                *value = Value::String(literal(value, declared.get(name), language));
            }
        }
        expected.push(ExpectedCall {
            id: call_id(None, index),
            tool_name: tool_name.clone(),
            arguments,
        });
    }
    Ok(expected)
}

/// `{param: [accepted values]}` → `{param: first accepted value}`, leaving
/// out parameters whose accepted values include `""` or are empty.
fn first_accepted_of_each(parameters: &Map<String, Value>) -> Map<String, Value> {
    let mut arguments = Map::new();
    for (name, accepted) in parameters {
        let Some(accepted) = accepted.as_array() else {
            continue;
        };
        if accepted.iter().any(|value| value == "") {
            continue;
        }
        if let Some(first) = accepted.first() {
            arguments.insert(name.clone(), first_accepted(first));
        }
    }
    arguments
}

/// One accepted value, with the accepted values nested in it resolved.
///
/// BFCL writes a dict-typed value the way it writes a call's parameters:
/// `{"email": ["a@b.c"], "name": ["John"]}`, each field a list of accepted
/// values, at any depth and inside lists (`[[{"field": ["age"]}]]`). Taken
/// literally, the tool would get lists where the schema wants strings (and
/// 9 embedded tasks failed so). So an object whose values are all lists is
/// such a map and gets the first accepted value of each field; any other
/// object is a literal (one answer in `live_multiple` writes
/// `{"lateral": 10.5, "longitudinal": 50}` so).
fn first_accepted(value: &Value) -> Value {
    match value {
        Value::Object(map) if !map.is_empty() && map.values().all(Value::is_array) => {
            Value::Object(first_accepted_of_each(map))
        }
        Value::Array(items) => Value::Array(items.iter().map(first_accepted).collect()),
        other => other.clone(),
    }
}

/// The tool call id of the `index`-th call of a single-turn batch, or of
/// a turn of a multi-turn conversation (ids must differ across the turns
/// of one conversation: a reused id would be given a fresh one).
pub(super) fn call_id(turn: Option<usize>, index: usize) -> String {
    match turn {
        None => format!("call_bfcl_{index}"),
        Some(turn) => format!("call_bfcl_t{turn}_{index}"),
    }
}

/// The calls of one multi-turn turn from its Python call strings
/// ([`call_string`]): names must be declared (original → model-facing in
/// `model_names`), positional arguments take the declared parameters in
/// order (`parameter_order`, by original name).
///
/// Errors, as text for the task's failure: the string that cannot be
/// parsed and why ([`TurnCallError::Unparseable`]), or a call that does
/// not fit the declarations ([`TurnCallError::DoesNotFit`]).
pub(super) fn turn_calls(
    turn: usize,
    call_strings: &Value,
    model_names: &HashMap<String, String>,
    parameter_order: &HashMap<String, Vec<String>>,
) -> Result<Vec<ExpectedCall>, TurnCallError> {
    let call_strings = call_strings.as_array().ok_or_else(|| {
        TurnCallError::DoesNotFit(format!("turn {turn}: not a list of call strings"))
    })?;
    let mut expected = Vec::with_capacity(call_strings.len());
    for (index, text) in call_strings.iter().enumerate() {
        let Some(text) = text.as_str() else {
            return Err(TurnCallError::DoesNotFit(format!(
                "turn {turn}, call {index}: {text} is not a string"
            )));
        };
        let call = call_string::parse(text).map_err(|error| {
            TurnCallError::Unparseable(format!(
                "turn {turn}, call {index} `{}`: {error}",
                quoted(text, error.position)
            ))
        })?;
        let does_not_fit =
            |why: String| TurnCallError::DoesNotFit(format!("turn {turn}, call {index}: {why}"));
        let tool_name = model_names.get(&call.name).ok_or_else(|| {
            does_not_fit(format!(
                "`{}` is not among the task's functions (those of its classes, \
                 less `excluded_function`)",
                call.name
            ))
        })?;
        let no_parameters = Vec::new();
        let parameters = parameter_order.get(&call.name).unwrap_or(&no_parameters);
        let arguments = call.arguments(parameters).map_err(does_not_fit)?;
        expected.push(ExpectedCall {
            id: call_id(Some(turn), index),
            tool_name: tool_name.clone(),
            arguments,
        });
    }
    Ok(expected)
}

/// How many bytes of a call string a failure quotes on each side of the
/// problem. Real call strings reach 6,839 bytes (a long message in
/// `multi_turn_long_context`) and a hostile one can be any size, so a
/// longer string is quoted around the byte the parser names, and the
/// report line stays readable.
const QUOTED_CALL_BYTES: usize = 120;

/// `text` whole when it is short, else the part around byte `at` with
/// `…` where it is cut and the whole length said.
fn quoted(text: &str, at: usize) -> String {
    if text.len() <= 2 * QUOTED_CALL_BYTES {
        return text.to_owned();
    }
    let mut start = at.saturating_sub(QUOTED_CALL_BYTES).min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = at.saturating_add(QUOTED_CALL_BYTES).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    format!(
        "{}{}{} ({} bytes)",
        if start > 0 { "…" } else { "" },
        &text[start..end],
        if end < text.len() { "…" } else { "" },
        text.len()
    )
}

/// Why a multi-turn turn's ground truth gives no calls.
#[derive(Debug)]
pub(super) enum TurnCallError {
    /// A call string is not a Python call with literal arguments.
    Unparseable(String),
    /// A call names an undeclared function, or its arguments do not bind.
    DoesNotFit(String),
}

/// JSON equality where numbers compare by value: `5` equals `5.0`.
///
/// JSON itself does not tell `5` from `5.0`, and a provider's model may
/// write either; serde_json keeps them apart (`Value::from(5) !=
/// Value::from(5.0)`). The replay sends the ground truth's own text, so
/// strict equality would hold today; comparing by value keeps the check
/// about *arguments*, not number formatting, should the arguments ever be
/// re-encoded on the way (a middleware, another wire format).
pub fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => {
            match (left.as_i64(), right.as_i64(), left.as_u64(), right.as_u64()) {
                (Some(left), Some(right), _, _) => left == right,
                (_, _, Some(left), Some(right)) => left == right,
                _ => left.as_f64() == right.as_f64(),
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len() && left.iter().zip(right).all(|(l, r)| json_equal(l, r))
        }
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .all(|(key, l)| right.get(key).is_some_and(|r| json_equal(l, r)))
        }
        (left, right) => left == right,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_call_string_is_quoted_around_the_problem_on_char_boundaries() {
        assert_eq!(quoted("cd(folder=x)", 10), "cd(folder=x)");
        // 3-byte characters around one `a` (byte 150): 120 bytes from 150
        // or 151 falls inside a character on one side, and the cut widens
        // to its edge (bytes 30 and 271).
        let text = format!("{}a{}", "☕".repeat(50), "☕".repeat(50));
        let middle = format!("…{}a{}… (301 bytes)", "☕".repeat(40), "☕".repeat(40));
        assert_eq!(quoted(&text, 150), middle);
        assert_eq!(quoted(&text, 151), middle);
        assert_eq!(
            quoted(&text, 0),
            format!("{}… (301 bytes)", "☕".repeat(40))
        );
        assert_eq!(
            quoted(&text, 301),
            format!("…{} (301 bytes)", "☕".repeat(40))
        );
    }
}
