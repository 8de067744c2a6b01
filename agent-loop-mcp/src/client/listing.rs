//! The `tools/list` results as the server wrote them, read beside the SDK
//! while a binding lists its tools.
//!
//! The SDK (`rmcp`) parses every listed tool into its own `Tool` type and
//! drops the fields that type does not have. One of them matters: since
//! `rmcp` 3 implements the tasks extension of a later draft, its `Tool` has
//! no `execution`, so `execution.taskSupport` (MCP specification
//! 2025-11-25, "Tools" / "Tool") never reaches this crate through it, and a
//! tool that can only run as a task could not be told apart. A
//! [`ListingTap`] reads the server's messages as they pass to the SDK, keeps
//! each listed tool's raw object, and the factory puts back the fields the
//! SDK dropped (`execution` and any field of a later specification), so the
//! tool's extras are the server's whole listing.
//!
//! It reads only while the tools are listed (switched on before
//! `tools/list`, off after the last page); the rest of the time it costs
//! one atomic load per read. It sees the bytes of a stdio or
//! stream server ([`TapReader`]) and the SSE events of a streamable HTTP
//! server (the binding's HTTP client hands it each event's data). A
//! streamable HTTP server that answers `tools/list` with a JSON body
//! instead of an SSE stream is parsed by the SDK's client before this
//! crate sees it: there the listing is what the SDK kept, and a task-only
//! tool stays offered (its calls then fail with the server's error).

use std::collections::{HashMap, HashSet};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use rmcp::model::Tool;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, ReadBuf};

/// The longest message line the tap reads: the SDK's own limit for one
/// stdio message (`rmcp`'s `DEFAULT_MAX_LINE_LENGTH`, 16 MiB), so it keeps
/// no more than the SDK does; a longer line is skipped.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The raw tools of the `tools/list` results read so far, by name.
pub(crate) struct ListingTap {
    active: AtomicBool,
    tools: Mutex<HashMap<String, Map<String, Value>>>,
}

/// A JSON-RPC message whose result lists tools; any other fails to parse
/// and is ignored.
#[derive(Deserialize)]
struct Listing {
    result: ListedPage,
}

#[derive(Deserialize)]
struct ListedPage {
    tools: Vec<Map<String, Value>>,
}

impl ListingTap {
    /// A tap switched off: [`start`](Self::start) switches it on before
    /// the server is asked to list its tools.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            active: AtomicBool::new(false),
            tools: Mutex::new(HashMap::new()),
        })
    }

    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Reads one message (a line, or an SSE event's data): the tools of a
    /// `tools/list` result are kept.
    pub(crate) fn read_line(&self, line: &[u8]) {
        let Ok(listing) = serde_json::from_slice::<Listing>(line) else {
            return;
        };
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        for tool in listing.result.tools {
            if let Some(Value::String(name)) = tool.get("name") {
                tools.insert(name.clone(), tool);
            }
        }
    }

    /// Switches the tap on, empty, before a listing (at bind, and after
    /// `notifications/tools/list_changed`).
    pub(crate) fn start(&self) {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.active.store(true, Ordering::Relaxed);
    }

    /// Switches the tap off and gives the raw tools read, by name.
    pub(crate) fn finish(&self) -> HashMap<String, Map<String, Value>> {
        self.active.store(false, Ordering::Relaxed);
        std::mem::take(&mut *self.tools.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The JSON the wire module reads of the tools the SDK listed: each tool
/// as the SDK kept it, with every field of the server's own object in
/// `raw` (by name) that the SDK dropped put back.
///
/// A tool's schemas are most of its JSON, and the server's object holds
/// them already, parsed from the same text the SDK parsed: a tool whose
/// schemas there equal the SDK's is written from that object, its fields
/// the SDK keeps overwritten with the SDK's, so only the SDK's small
/// fields are written out and the schemas are neither copied nor dropped.
/// Otherwise (no object of the server's, a name listed twice, schemas that
/// differ) the SDK's whole tool is written out and the dropped fields
/// copied in; both ways give the same JSON.
pub(crate) fn listed_tools_json(
    listed: Vec<Tool>,
    mut raw: HashMap<String, Map<String, Value>>,
) -> Result<Vec<Value>, serde_json::Error> {
    // Two tools of one name have one object in `raw`: it cannot stand in
    // for both.
    let mut names = HashSet::with_capacity(listed.len());
    let unique = listed.iter().all(|tool| names.insert(tool.name.as_ref()));
    drop(names);
    listed
        .into_iter()
        .map(|tool| {
            let own = match unique {
                true => raw.remove(tool.name.as_ref()),
                false => raw.get(tool.name.as_ref()).cloned(),
            };
            match own {
                Some(own) if same_schemas(&tool, &own) => written_over(own, tool),
                own => {
                    let mut json = serde_json::to_value(&tool)?;
                    restore_dropped_fields(&mut json, own.as_ref());
                    Ok(json)
                }
            }
        })
        .collect()
}

/// Whether the server's object `own` holds the schemas the SDK kept of
/// `tool` (the output schema: when the SDK kept one).
fn same_schemas(tool: &Tool, own: &Map<String, Value>) -> bool {
    let same = |key: &str, schema: &Map<String, Value>| matches!(own.get(key), Some(Value::Object(object)) if object == schema);
    same("inputSchema", &tool.input_schema)
        && tool
            .output_schema
            .as_ref()
            .is_none_or(|schema| same("outputSchema", schema))
}

/// The server's object `own`, whose schemas equal `tool`'s, with the other
/// fields the SDK kept of `tool` written over it.
fn written_over(mut own: Map<String, Value>, mut tool: Tool) -> Result<Value, serde_json::Error> {
    // `own` has them: the SDK's copies are not written out. An empty input
    // schema is still written (the SDK always writes one) and skipped.
    tool.input_schema = Arc::default();
    tool.output_schema = None;
    // Nor are the texts `own` has as the SDK read them (a description is
    // often the longest text of a tool after its schemas).
    let own_text = |key: &str| own.get(key).and_then(Value::as_str);
    if tool.description.is_some() && tool.description.as_deref() == own_text("description") {
        tool.description = None;
    }
    if tool.title.is_some() && tool.title.as_deref() == own_text("title") {
        tool.title = None;
    }
    if let Value::Object(kept) = serde_json::to_value(&tool)? {
        for (key, value) in kept {
            if key != "inputSchema" {
                own.insert(key, value);
            }
        }
    }
    Ok(Value::Object(own))
}

/// `tool` (a listed tool as the SDK kept it, as JSON) with every field of
/// the server's `raw` object that the SDK dropped put back; the SDK's own
/// fields are kept as they are.
fn restore_dropped_fields(tool: &mut Value, raw: Option<&Map<String, Value>>) {
    let (Value::Object(tool), Some(raw)) = (tool, raw) else {
        return;
    };
    for (key, value) in raw {
        if !tool.contains_key(key) {
            tool.insert(key.clone(), value.clone());
        }
    }
}

/// A reader that passes every byte on unchanged and, while its tap is
/// active, hands each complete line to it.
pub(crate) struct TapReader<R> {
    inner: R,
    tap: Arc<ListingTap>,
    line: Vec<u8>,
    /// The current line grew past [`MAX_LINE_BYTES`]: skipped to its end.
    skipping: bool,
}

impl<R> TapReader<R> {
    pub(crate) fn new(inner: R, tap: Arc<ListingTap>) -> Self {
        Self {
            inner,
            tap,
            line: Vec::new(),
            skipping: false,
        }
    }

    fn observe(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (piece, ends_line) = match bytes.iter().position(|&byte| byte == b'\n') {
                Some(end) => (&bytes[..end], true),
                None => (bytes, false),
            };
            if !self.skipping {
                if self.line.len() + piece.len() > MAX_LINE_BYTES {
                    self.skipping = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(piece);
                }
            }
            if ends_line {
                if !self.skipping {
                    self.tap.read_line(&self.line);
                }
                self.line.clear();
                self.skipping = false;
                bytes = &bytes[piece.len() + 1..];
            } else {
                bytes = &[];
            }
        }
        if !self.tap.is_active() {
            // Switched off: the buffer is not needed any more.
            self.line = Vec::new();
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for TapReader<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buffer.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(context, buffer);
        if matches!(polled, Poll::Ready(Ok(()))) && this.tap.is_active() {
            let read = buffer.filled()[before..].to_vec();
            this.observe(&read);
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn the_tools_of_a_listing_are_read_whatever_the_read_sizes_and_the_bytes_pass_unchanged()
    {
        let listing = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}
        ]}});
        let text = format!(
            "{}\n{}\n{}\n",
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}),
            listing,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}})
        );
        let tap = ListingTap::new();
        tap.start();
        // Seven bytes at a time: lines end in the middle of reads.
        let (mut writer, reader) = tokio::io::duplex(7);
        let bytes = text.clone().into_bytes();
        let writing = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            writer.write_all(&bytes).await.unwrap();
        });
        let mut read = String::new();
        TapReader::new(reader, Arc::clone(&tap))
            .read_to_string(&mut read)
            .await
            .unwrap();
        writing.await.unwrap();
        assert_eq!(read, text);
        let tools = tap.finish();
        assert_eq!(tools.len(), 1);
        assert_eq!(
            tools["research"]["execution"],
            json!({"taskSupport": "required"})
        );
        assert!(!tap.is_active());
    }

    /// The JSON of `listed` the way it was made before the server's
    /// objects stood in: the SDK's whole tools written out, the dropped
    /// fields copied in.
    fn written_out(listed: &[Tool], raw: &HashMap<String, Map<String, Value>>) -> Vec<Value> {
        listed
            .iter()
            .map(|tool| {
                let mut json = serde_json::to_value(tool).unwrap();
                restore_dropped_fields(&mut json, raw.get(tool.name.as_ref()));
                json
            })
            .collect()
    }

    /// `tools` as the SDK and the tap read them, and the JSON both ways.
    fn both_ways(tools: &Value, raw_tools: &Value) -> (Vec<Value>, Vec<Value>) {
        let listed: Vec<Tool> = serde_json::from_value(tools.clone()).unwrap();
        let raw: HashMap<String, Map<String, Value>> = raw_tools
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| {
                (
                    tool["name"].as_str().unwrap().to_owned(),
                    tool.as_object().unwrap().clone(),
                )
            })
            .collect();
        let before = written_out(&listed, &raw);
        (listed_tools_json(listed, raw).unwrap(), before)
    }

    #[test]
    fn the_recorded_listings_read_as_the_sdk_and_the_server_wrote_them() {
        let folder = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/wire-real/mcp"
        );
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            let listed: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let (json, before) = both_ways(&listed["tools"], &listed["tools"]);
            assert_eq!(json, before, "{path:?}");
        }
    }

    #[test]
    fn the_sdk_keeps_its_fields_and_the_server_object_only_stands_in_when_it_matches() {
        let tools = json!([
            {"name": "a", "title": null, "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true, "later": 1},
             "execution": {"taskSupport": "optional"}},
            {"name": "b", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
            {"name": "c", "inputSchema": {"type": "object"}}
        ]);
        // The server's own `c` is another one (a stale answer, say): the
        // SDK's schema is kept.
        let mut raw_tools = tools.clone();
        raw_tools[2]["inputSchema"] = json!({"type": "object", "properties": {}});
        let (json, before) = both_ways(&tools, &raw_tools);
        assert_eq!(json, before);
        assert_eq!(json[0]["annotations"], json!({"readOnlyHint": true}));
        assert_eq!(json[0]["execution"], json!({"taskSupport": "optional"}));
        assert_eq!(json[0]["title"], Value::Null);
        assert_eq!(json[2]["inputSchema"], json!({"type": "object"}));
        // A name listed twice: each tool is the SDK's.
        let twice = json!([
            {"name": "a", "inputSchema": {"type": "object"}},
            {"name": "a", "inputSchema": {"type": "object", "required": []}}
        ]);
        let (json, before) = both_ways(&twice, &twice);
        assert_eq!(json, before);
        assert_ne!(json[0], json[1]);
    }

    #[test]
    fn only_fields_the_sdk_dropped_are_put_back() {
        let mut kept = json!({"name": "t", "description": "the SDK's"});
        let raw =
            json!({"name": "t", "description": "raw", "execution": {"taskSupport": "optional"}});
        restore_dropped_fields(&mut kept, raw.as_object());
        assert_eq!(
            kept,
            json!({"name": "t", "description": "the SDK's", "execution": {"taskSupport": "optional"}})
        );
    }
}
