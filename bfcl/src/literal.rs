//! Java and JavaScript ground truth as the literals a model sends.
//!
//! BFCL's harness offers every Java or JavaScript parameter as a string
//! ([`super::normalize::literal_parameter`]): a model writes `42L`, `true`
//! or `new ArrayList<>(Arrays.asList(101, 202))`, and BFCL's checker parses
//! that back (`bfcl-eval`, `eval_checker/ast_eval/type_convertor/`) and
//! compares it with the ground truth, which holds the typed values (`42`,
//! `true`, `[101, 202]`). The replay model must send what such a model
//! sends, so this writes each ground-truth value as the literal BFCL's
//! converters read back to that value:
//!
//! | declared type | value | literal |
//! | --- | --- | --- |
//! | any, when the value is a string (a variable name, an expression) | `mapController` | `mapController` (as is) |
//! | Java `boolean`, JavaScript `Boolean` | `true` | `true` |
//! | Java `integer`/`byte`/`short`, JavaScript `integer` | `3` | `3` |
//! | Java `long` | `42` | `42L` |
//! | Java `float` | `1.5` | `1.5f` |
//! | Java `double`, JavaScript `float` | `0.5` | `0.5` |
//! | JavaScript `Bigint` | `7` | `7n` |
//! | Java `Array` of `integer` | `[2, 7]` | `new int[]{2, 7}` |
//! | Java `ArrayList` | `[101, 202]` | `new ArrayList<>(Arrays.asList(101L, 202L))` (items `long`) |
//! | Java `HashMap`/`Hashtable` | `{"limit": 50}` | `new HashMap<String, Object>() {{ put("limit", 50); }}` |
//! | JavaScript `array`, `dict` | `["a"]`, `{"a": 1}` | JSON text, which is a JavaScript literal |
//!
//! Strings inside a collection are quoted (JSON's escapes are Java's and
//! JavaScript's too).

use serde_json::{Map, Value};

use super::normalize::Language;

/// `value`, declared in BFCL as `declared` (the parameter's own BFCL
/// schema), as the `language` literal a model sends for it.
pub fn literal(value: &Value, declared: Option<&Value>, language: Language) -> String {
    let kind = declared
        .and_then(|declared| declared.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("any");
    let item_kind = declared
        .and_then(|declared| declared.get("items"))
        .and_then(|items| items.get("type"))
        .and_then(Value::as_str);
    if let Value::String(text) = value {
        // BFCL's converters give back a string unchanged when it is not a
        // literal of the declared type: that is how variable names pass.
        return text.clone();
    }
    match language {
        Language::Java => java(value, Some(kind), item_kind),
        Language::JavaScript => match (kind, value) {
            ("Bigint", Value::Number(number)) => format!("{number}n"),
            _ => value.to_string(),
        },
        Language::Python => value.to_string(),
    }
}

/// A Java literal of `value`; `kind` is the declared type when known.
fn java(value: &Value, kind: Option<&str>, item_kind: Option<&str>) -> String {
    match (value, kind) {
        (Value::Null, _) => "null".into(),
        (Value::Bool(flag), _) => flag.to_string(),
        (Value::String(text), _) => Value::String(text.clone()).to_string(),
        (Value::Number(number), Some("long")) => format!("{number}L"),
        (Value::Number(number), Some("float")) => format!("{number}f"),
        (Value::Number(number), Some("double")) if number.is_i64() || number.is_u64() => {
            format!("{number}.0")
        }
        (Value::Number(number), _) => number.to_string(),
        (Value::Array(items), Some("ArrayList")) => {
            if items.is_empty() {
                "new ArrayList<>()".into()
            } else {
                format!(
                    "new ArrayList<>(Arrays.asList({}))",
                    java_items(items, item_kind)
                )
            }
        }
        (Value::Array(items), _) => {
            let element = match item_kind {
                Some("integer") => "int",
                Some(
                    kind @ ("long" | "double" | "float" | "boolean" | "char" | "byte" | "short"),
                ) => kind,
                Some("String") => "String",
                _ => "Object",
            };
            format!("new {element}[]{{{}}}", java_items(items, item_kind))
        }
        (Value::Object(map), _) => java_map(map),
    }
}

fn java_items(items: &[Value], item_kind: Option<&str>) -> String {
    items
        .iter()
        .map(|item| java(item, item_kind, None))
        .collect::<Vec<_>>()
        .join(", ")
}

fn java_map(map: &Map<String, Value>) -> String {
    if map.is_empty() {
        return "new HashMap<>()".into();
    }
    let puts: String = map
        .iter()
        .map(|(key, value)| {
            format!(
                "put({}, {}); ",
                Value::String(key.clone()),
                java(value, None, None)
            )
        })
        .collect();
    format!("new HashMap<String, Object>() {{{{ {puts}}}}}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn java_literal(value: Value, declared: Value) -> String {
        literal(&value, Some(&declared), Language::Java)
    }

    #[test]
    fn java_literals_follow_the_declared_type() {
        assert_eq!(
            java_literal(json!("mapController"), json!({"type": "any"})),
            "mapController"
        );
        assert_eq!(
            java_literal(json!(true), json!({"type": "boolean"})),
            "true"
        );
        assert_eq!(java_literal(json!(42), json!({"type": "long"})), "42L");
        assert_eq!(java_literal(json!(1.5), json!({"type": "float"})), "1.5f");
        assert_eq!(java_literal(json!(2), json!({"type": "double"})), "2.0");
        assert_eq!(
            java_literal(
                json!([2, 7]),
                json!({"type": "Array", "items": {"type": "integer"}})
            ),
            "new int[]{2, 7}"
        );
        assert_eq!(
            java_literal(
                json!([101, 202]),
                json!({"type": "ArrayList", "items": {"type": "long"}})
            ),
            "new ArrayList<>(Arrays.asList(101L, 202L))"
        );
        assert_eq!(
            java_literal(
                json!(["a\"b"]),
                json!({"type": "Array", "items": {"type": "String"}})
            ),
            r#"new String[]{"a\"b"}"#
        );
        assert_eq!(
            java_literal(
                json!({"limit": 50, "schemaFilter": "public"}),
                json!({"type": "HashMap"})
            ),
            r#"new HashMap<String, Object>() {{ put("limit", 50); put("schemaFilter", "public"); }}"#
        );
        assert_eq!(
            java_literal(json!({}), json!({"type": "HashMap"})),
            "new HashMap<>()"
        );
    }

    #[test]
    fn javascript_literals_are_json_text_or_bigint() {
        let js =
            |value: Value, declared: Value| literal(&value, Some(&declared), Language::JavaScript);
        assert_eq!(
            js(json!(["completed", "failed"]), json!({"type": "array"})),
            r#"["completed","failed"]"#
        );
        assert_eq!(
            js(json!({"nm": "BarChart"}), json!({"type": "dict"})),
            r#"{"nm":"BarChart"}"#
        );
        assert_eq!(js(json!(7), json!({"type": "Bigint"})), "7n");
        assert_eq!(js(json!(4.0), json!({"type": "float"})), "4.0");
        assert_eq!(
            js(json!("myItemList"), json!({"type": "array"})),
            "myItemList"
        );
    }
}
