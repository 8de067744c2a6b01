//! Multi-turn function docs: a task names the classes it involves
//! (`involved_classes`), and each class's declarations live in one JSON
//! Lines file of a `multi_turn_func_doc/` folder.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// BFCL's class → function-doc file table, reimplemented from
/// `bfcl-eval` (Apache-2.0), `constants/executable_backend_config.py`,
/// `MULTI_TURN_FUNC_DOC_FILE_MAPPING`.
pub const CLASS_FILES: &[(&str, &str)] = &[
    ("GorillaFileSystem", "gorilla_file_system.json"),
    ("MathAPI", "math_api.json"),
    ("MessageAPI", "message_api.json"),
    ("TwitterAPI", "posting_api.json"),
    ("TicketAPI", "ticket_api.json"),
    ("TradingBot", "trading_bot.json"),
    ("TravelAPI", "travel_booking.json"),
    ("VehicleControlAPI", "vehicle_control.json"),
    ("WebSearchAPI", "web_search.json"),
    ("MemoryAPI_kv", "memory_kv.json"),
    ("MemoryAPI_vector", "memory_vector.json"),
    ("MemoryAPI_rec_sum", "memory_rec_sum.json"),
];

/// The function-doc file of `class`, if BFCL's table has it.
pub fn file_of(class: &str) -> Option<&'static str> {
    CLASS_FILES
        .iter()
        .find(|(name, _)| *name == class)
        .map(|(_, file)| *file)
}

/// One declaration of a function-doc file.
#[derive(Clone, Debug)]
pub struct FuncDoc {
    /// The function's name (`cd`).
    pub name: String,
    /// The declaration as written (`{name, description, parameters,
    /// response}`), for [`super::normalize::declarations`].
    pub declaration: Value,
    /// Its parameters in declaration order, which positional arguments of
    /// the ground truth's call strings follow (the docs are generated from
    /// the Python signatures). `serde_json::Map` sorts its keys, so the
    /// order is read from the text itself.
    pub parameter_order: Vec<String>,
}

/// The declarations of one function-doc file, in order.
///
/// Errors: the first line that is not a `{name, parameters?}` JSON object,
/// with its line number.
pub fn read(text: &str) -> Result<Vec<FuncDoc>, String> {
    let mut docs = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |error: serde_json::Error| format!("line {}: {error}", number + 1);
        let declaration: Value = serde_json::from_str(line).map_err(bad)?;
        let shape: Shape = serde_json::from_str(line).map_err(bad)?;
        docs.push(FuncDoc {
            name: shape.name,
            declaration,
            parameter_order: shape
                .parameters
                .and_then(|parameters| parameters.properties)
                .map(|order| order.0)
                .unwrap_or_default(),
        });
    }
    Ok(docs)
}

/// The function docs of one folder, read once per category.
#[derive(Debug, Default)]
pub struct Library {
    /// File name → its declarations, or why they cannot be read.
    files: HashMap<String, Result<Vec<FuncDoc>, String>>,
    /// Where the files were looked for, when they come from a folder (see
    /// [`super::Category::func_doc_dir`]).
    pub folder: Option<String>,
}

impl Library {
    /// The declarations of `file`, or why they cannot be read; `None` when
    /// there is no such file.
    pub fn get(&self, file: &str) -> Option<&Result<Vec<FuncDoc>, String>> {
        self.files.get(file)
    }
}

/// Reads every file of `files` (file name → text), found in `folder`.
pub fn library<'a>(
    files: impl IntoIterator<Item = (&'a String, &'a &'a str)>,
    folder: Option<String>,
) -> Library {
    Library {
        files: files
            .into_iter()
            .map(|(name, text)| (name.clone(), read(text)))
            .collect(),
        folder,
    }
}

#[derive(Deserialize)]
struct Shape {
    name: String,
    #[serde(default)]
    parameters: Option<ParametersShape>,
}

#[derive(Deserialize)]
struct ParametersShape {
    #[serde(default)]
    properties: Option<KeyOrder>,
}

/// The keys of a JSON object, in the order written; values are skipped.
struct KeyOrder(Vec<String>);

impl<'de> Deserialize<'de> for KeyOrder {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = KeyOrder;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an object of parameter schemas")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KeyOrder, A::Error> {
                let mut keys = Vec::new();
                while let Some((key, IgnoredAny)) = map.next_entry::<String, IgnoredAny>()? {
                    keys.push(key);
                }
                Ok(KeyOrder(keys))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_order_is_the_written_order() {
        let docs = read(
            r#"{"name": "mv", "parameters": {"type": "dict", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}}

{"name": "pwd", "description": "no parameters"}"#,
        )
        .unwrap();
        assert_eq!(docs[0].parameter_order, ["source", "destination"]);
        assert_eq!(docs[1].name, "pwd");
        assert!(docs[1].parameter_order.is_empty());
        assert_eq!(
            read("{\"name\": 3}").unwrap_err().split(':').next(),
            Some("line 1")
        );
        assert_eq!(file_of("TwitterAPI"), Some("posting_api.json"));
        assert_eq!(file_of("Nope"), None);
    }
}
