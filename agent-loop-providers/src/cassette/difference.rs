//! [`Difference`]: where two JSON values first differ, as a path and the
//! two values there; and the volatile parts of a request (ids minted from
//! a session, which another session mints otherwise) made alike.

use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use agent_loop_core::support::text::json_excerpt;

/// The first place two requests differ: `path` (`conversation[3].content[0].text`:
/// object keys by name, `["a.b"]` for a key that is not a plain name, array
/// items by index) and the value each has there, as JSON (`(absent)` where
/// one has nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Difference {
    /// Where: dotted keys and `[index]`es from the request's top.
    pub path: String,
    /// The recorded value there, as JSON text (cut at 200 bytes).
    pub recorded: String,
    /// The sent value there, as JSON text (cut at 200 bytes).
    pub sent: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: recorded {}, sent {}",
            self.path, self.recorded, self.sent
        )
    }
}

/// How long a value shown in a [`Difference`] may be.
const SHOWN_BYTES: usize = 200;

/// The first difference of `sent` from `recorded`, depth first, object
/// keys in sorted order (serde_json's maps are sorted); `None` when they
/// are equal.
pub(crate) fn first_difference(recorded: &Value, sent: &Value) -> Option<Difference> {
    let mut path = String::new();
    walk(recorded, sent, &mut path)
}

fn walk(recorded: &Value, sent: &Value, path: &mut String) -> Option<Difference> {
    let shown = |value: Option<&Value>| {
        value.map_or_else(
            || "(absent)".to_owned(),
            |value| json_excerpt(value, SHOWN_BYTES),
        )
    };
    let differ = |path: &str, recorded: Option<&Value>, sent: Option<&Value>| Difference {
        path: if path.is_empty() {
            "(top)".to_owned()
        } else {
            path.to_owned()
        },
        recorded: shown(recorded),
        sent: shown(sent),
    };
    match (recorded, sent) {
        (Value::Object(left), Value::Object(right)) => {
            let keys = left
                .keys()
                .chain(right.keys().filter(|key| !left.contains_key(*key)));
            for key in keys {
                let length = path.len();
                let plain = !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if plain {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                } else {
                    path.push_str(&format!("[{}]", Value::String(key.clone())));
                }
                let found = match (left.get(key), right.get(key)) {
                    (Some(a), Some(b)) => walk(a, b, path),
                    (a, b) => Some(differ(path, a, b)),
                };
                path.truncate(length);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::Array(left), Value::Array(right)) => {
            for index in 0..left.len().max(right.len()) {
                let length = path.len();
                path.push_str(&format!("[{index}]"));
                let found = match (left.get(index), right.get(index)) {
                    (Some(a), Some(b)) => walk(a, b, path),
                    (a, b) => Some(differ(path, a, b)),
                };
                path.truncate(length);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (a, b) if a == b => None,
        (a, b) => Some(differ(path, Some(a), Some(b))),
    }
}

/// `value` with every RFC 3339 date-time in its strings replaced by
/// `<time>`, and every UUID, hyphenated or in its simple
/// form of 32 hex digits (the form minted ids take: `call_` and a version
/// 5 UUID of the session), replaced by `<id N>`, N
/// counting distinct UUIDs in order of first appearance: two requests of
/// two sessions that mint alike become equal, and one that uses an id
/// somewhere else still differs.
pub(crate) fn without_volatile(value: &Value) -> Value {
    let mut seen = HashMap::new();
    replace_ids(value, &mut seen)
}

fn replace_ids(value: &Value, seen: &mut HashMap<String, usize>) -> Value {
    match value {
        Value::String(text) => Value::String(replace_uuids(text, seen)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|item| replace_ids(item, seen)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| (key.clone(), replace_ids(item, seen)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` with each UUID (`8-4-4-4-12` hex digits) replaced by its ordinal.
fn replace_uuids(text: &str, seen: &mut HashMap<String, usize>) -> String {
    const SHAPE: [usize; 5] = [8, 4, 4, 4, 12];
    const LENGTH: usize = 36;
    let bytes = text.as_bytes();
    let is_uuid = |start: usize| {
        let Some(candidate) = bytes.get(start..start + LENGTH) else {
            return false;
        };
        let mut at = 0;
        SHAPE.iter().enumerate().all(|(group, &width)| {
            let digits = candidate[at..at + width].iter().all(u8::is_ascii_hexdigit);
            at += width;
            let dash = group == SHAPE.len() - 1 || {
                let is_dash = candidate[at] == b'-';
                at += 1;
                is_dash
            };
            digits && dash
        })
    };
    // The simple form (32 hex digits, as minted tool call ids write it),
    // alone: not part of a longer run of hex digits.
    const SIMPLE: usize = 32;
    let hex = |at: usize| bytes.get(at).is_some_and(u8::is_ascii_hexdigit);
    let is_simple = |start: usize| {
        (start == 0 || !hex(start - 1)) && (start..start + SIMPLE).all(hex) && !hex(start + SIMPLE)
    };
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while index < bytes.len() {
        let found = if is_uuid(index) {
            Some(text[index..index + LENGTH].replace('-', ""))
        } else if is_simple(index) {
            Some(text[index..index + SIMPLE].to_owned())
        } else {
            None
        };
        if let Some(width) = timestamp_at(bytes, index) {
            out.push_str("<time>");
            index += width;
            continue;
        }
        if let Some(id) = found {
            let width = if is_uuid(index) { LENGTH } else { SIMPLE };
            let next = seen.len() + 1;
            let ordinal = *seen.entry(id.to_ascii_lowercase()).or_insert(next);
            out.push_str(&format!("<id {ordinal}>"));
            index += width;
        } else {
            // Advance one whole character.
            let width = text[index..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[index..index + width]);
            index += width;
        }
    }
    out
}

/// The length of an RFC 3339 date-time starting at `start`
/// (`2026-12-03T10:15:00`, then an optional fraction and `Z` or an offset).
fn timestamp_at(bytes: &[u8], start: usize) -> Option<usize> {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let candidate = bytes.get(start..start + SHAPE.len())?;
    let fits = SHAPE
        .iter()
        .zip(candidate)
        .all(|(shape, byte)| match shape {
            b'd' => byte.is_ascii_digit(),
            b'T' => matches!(byte, b'T' | b't' | b' '),
            other => byte == other,
        });
    if !fits || (start > 0 && bytes[start - 1].is_ascii_digit()) {
        return None;
    }
    let mut end = start + SHAPE.len();
    if bytes.get(end) == Some(&b'.') {
        end += 1;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    match bytes.get(end) {
        Some(b'Z' | b'z') => end += 1,
        Some(b'+' | b'-')
            if bytes.get(end + 1..end + 6).is_some_and(|zone| {
                zone[0].is_ascii_digit()
                    && zone[1].is_ascii_digit()
                    && zone[2] == b':'
                    && zone[3].is_ascii_digit()
                    && zone[4].is_ascii_digit()
            }) =>
        {
            end += 6
        }
        _ => {}
    }
    Some(end - start)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_first_difference_is_named_by_its_path_and_both_values() {
        let recorded = json!({"conversation": [{"role": "user", "text": "Hello"}], "tools": []});
        let sent = json!({"conversation": [{"role": "user", "text": "Hellp"}], "tools": []});
        assert_eq!(
            first_difference(&recorded, &sent).unwrap().to_string(),
            r#"conversation[0].text: recorded "Hello", sent "Hellp""#
        );
        let longer = json!({"conversation": [{"role": "user", "text": "Hello"}, 1], "tools": []});
        assert_eq!(
            first_difference(&recorded, &longer).unwrap().to_string(),
            "conversation[1]: recorded (absent), sent 1"
        );
        let extra =
            json!({"conversation": [{"role": "user", "text": "Hello"}], "tools": [], "mode": "x"});
        assert_eq!(
            first_difference(&recorded, &extra).unwrap().to_string(),
            r#"mode: recorded (absent), sent "x""#
        );
        let dotted = json!({"a.b": 1, "c": {"x[0]": 2}});
        let other = json!({"a.b": 1, "c": {"x[0]": 3}});
        assert_eq!(
            first_difference(&dotted, &other).unwrap().to_string(),
            r#"c["x[0]"]: recorded 2, sent 3"#
        );
        assert_eq!(first_difference(&recorded, &recorded.clone()), None);
    }

    #[test]
    fn timestamps_become_one_placeholder() {
        let a = json!("at 2026-12-03T10:15:00.123Z and 2026-12-03T10:15:00+01:00, not 2026-12-03");
        assert_eq!(
            without_volatile(&a),
            json!("at <time> and <time>, not 2026-12-03")
        );
    }

    #[test]
    fn uuids_become_ordinals_in_order_of_first_appearance() {
        let a = json!([
            "call_0b6f3c1e-9d2a-5f4b-8c7d-1e2f3a4b5c6d",
            "x 0B6F3C1E-9D2A-5F4B-8C7D-1E2F3A4B5C6D",
            "ff000000-0000-0000-0000-00000000000f"
        ]);
        assert_eq!(
            without_volatile(&a),
            json!(["call_<id 1>", "x <id 1>", "<id 2>"])
        );
        // Not a UUID: kept as it is, multi-byte text included.
        let b = json!("call_1 0b6f3c1e-9d2a-5f4b-8c7d é");
        assert_eq!(without_volatile(&b), b);
        // The simple form, and the same id hyphenated, are one id; a run of
        // 33 hex digits is none.
        let c = json!([
            "call_0b6f3c1e9d2a5f4b8c7d1e2f3a4b5c6d",
            "0b6f3c1e-9d2a-5f4b-8c7d-1e2f3a4b5c6d",
            "a0b6f3c1e9d2a5f4b8c7d1e2f3a4b5c6d"
        ]);
        assert_eq!(
            without_volatile(&c),
            json!(["call_<id 1>", "<id 1>", "a0b6f3c1e9d2a5f4b8c7d1e2f3a4b5c6d"])
        );
    }
}
