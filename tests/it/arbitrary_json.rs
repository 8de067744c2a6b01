//! proptest strategies for JSON shaped like what the properties read:
//! trees whose keys and strings come from a vocabulary (so that generated
//! payloads reach past the first shape check), and recorded payloads with
//! one node replaced.
#![allow(dead_code)] // each module uses a subset

use std::path::Path;
use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// A string from `words`, a short identifier-like one, or any string.
pub fn word(words: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    prop_oneof![
        6 => proptest::sample::select(words).prop_map(str::to_owned),
        1 => "[a-z_]{0,8}",
        1 => any::<String>(),
    ]
}

/// A JSON leaf; strings from `words`.
pub fn leaf(words: &'static [&'static str]) -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => prop_oneof![Just(0_i64), Just(1), Just(-1), any::<i64>()].prop_map(Value::from),
        1 => any::<f64>().prop_map(|n| Number::from_f64(n).map_or(Value::Null, Value::Number)),
        3 => word(words).prop_map(Value::String),
    ]
}

/// A JSON tree at most 5 levels deep; keys and strings from `words`.
pub fn json(words: &'static [&'static str]) -> impl Strategy<Value = Value> + Clone {
    leaf(words).prop_recursive(5, 48, 6, move |inner| {
        prop_oneof![
            1 => proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            3 => proptest::collection::vec((word(words), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The words of the provider formats, MCP and JSON Schema.
pub const WIRE_WORDS: &[&str] = &[
    "messages",
    "tools",
    "role",
    "content",
    "text",
    "type",
    "id",
    "name",
    "arguments",
    "function",
    "tool_calls",
    "tool_call_id",
    "tool_use",
    "tool_result",
    "tool_use_id",
    "input",
    "is_error",
    "user",
    "assistant",
    "system",
    "developer",
    "tool",
    "thinking",
    "signature",
    "redacted_thinking",
    "data",
    "image",
    "image_url",
    "url",
    "source",
    "base64",
    "media_type",
    "choices",
    "message",
    "index",
    "finish_reason",
    "stop",
    "length",
    "usage",
    "prompt_tokens",
    "completion_tokens",
    "input_tokens",
    "output_tokens",
    "reasoning_content",
    "refusal",
    "parameters",
    "input_schema",
    "description",
    "strict",
    "object",
    "string",
    "properties",
    "required",
    "stop_reason",
    "end_turn",
    "max_tokens",
    "inputSchema",
    "nextCursor",
    "title",
    "annotations",
    "server_tool_use",
    "web_search_tool_result",
    "citations",
    "custom",
    "memory_20250818",
    "call_0",
    "toolu_01",
    "{}",
    "{\"a\": 1}",
    "",
    " ",
    "\n",
];

/// The recorded JSON payloads of every folder of `tests/fixtures/wire-real/`
/// (the `.sse` streams are not JSON), with their paths.
pub static RECORDED: LazyLock<Vec<(String, Value)>> = LazyLock::new(|| {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/wire-real");
    let mut payloads = Vec::new();
    // Every folder, read from the disk rather than named here: a kind of
    // recording added later is checked without a change to this list.
    let mut folders: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|error| panic!("{}: {error}", root.display()))
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let mut paths: Vec<_> = std::fs::read_dir(&folder)
            .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
            .map(|entry| entry.expect("a readable directory entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            let value = serde_json::from_str(&text)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            payloads.push((path.display().to_string(), value));
        }
    }
    assert!(payloads.len() > 50, "the recordings are missing");
    payloads
});

/// `value` with the node that `steps` leads to replaced by `replacement`:
/// each step picks a child (modulo the number of children) and descends;
/// the walk stops at a leaf or when the steps run out.
pub fn replace_node(mut value: Value, steps: &[usize], replacement: Value) -> Value {
    let mut node = &mut value;
    for &step in steps {
        let children = match node {
            Value::Array(items) => items.len(),
            Value::Object(fields) => fields.len(),
            _ => 0,
        };
        if children == 0 {
            break;
        }
        node = match node {
            Value::Array(items) => &mut items[step % children],
            Value::Object(fields) => fields
                .values_mut()
                .nth(step % children)
                .expect("a child within the count"),
            _ => unreachable!("a leaf has no children"),
        };
    }
    *node = replacement;
    value
}

/// A recorded payload with one node (at any depth, the root included)
/// replaced by a generated one.
pub fn mutated_recording() -> impl Strategy<Value = Value> {
    (
        0..RECORDED.len(),
        proptest::collection::vec(any::<usize>(), 0..8),
        json(WIRE_WORDS),
    )
        .prop_map(|(index, steps, replacement)| {
            replace_node(RECORDED[index].1.clone(), &steps, replacement)
        })
}

/// The `(event, data)` pairs of an SSE body as the SSE specification reads
/// them: lines end in LF, CR LF or CR; `:` lines are comments; one space
/// after the field's colon is dropped; a blank line dispatches.
pub fn sse_events(text: &str) -> Vec<(String, String)> {
    let mut events = Vec::new();
    let (mut name, mut data) = (String::new(), Vec::<String>::new());
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    for line in text.split('\n') {
        if line.is_empty() {
            if !data.is_empty() {
                events.push((std::mem::take(&mut name), data.join("\n")));
                data.clear();
            }
            name.clear();
        } else if let Some(value) = line.strip_prefix("event:") {
            name = value.strip_prefix(' ').unwrap_or(value).to_owned();
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
        }
    }
    // A body that ends without a blank line dispatches nothing more: the
    // specification drops an unterminated event.
    events
}

/// An SSE event as [`sse_events`] reads it: its name and its data.
pub type SseEvent = (String, String);

/// The recorded streams: every `.sse` body of `tests/fixtures/wire-real/`
/// and of `fuzz/seeds/stream/`, read as SSE events, with their paths.
pub static RECORDED_STREAMS: LazyLock<Vec<(String, Vec<SseEvent>)>> = LazyLock::new(|| {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders: Vec<_> = std::fs::read_dir(root.join("tests/fixtures/wire-real"))
        .expect("the recordings")
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.is_dir())
        .collect();
    folders.push(root.join("fuzz/seeds/stream"));
    let mut streams = Vec::new();
    for folder in folders {
        let mut paths: Vec<_> = std::fs::read_dir(&folder)
            .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
            .map(|entry| entry.expect("a readable directory entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
            .collect();
        paths.sort();
        for path in paths {
            let bytes =
                std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            // Decoded as the transport decodes: lossily (U+FFFD).
            let events = sse_events(&String::from_utf8_lossy(&bytes));
            streams.push((path.display().to_string(), events));
        }
    }
    streams
});
