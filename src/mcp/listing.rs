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
//! It reads only during bind: once the tools are listed it is switched off
//! and costs one atomic load per read. It sees the bytes of a stdio or
//! stream server ([`TapReader`]) and the SSE events of a streamable HTTP
//! server (the binding's HTTP client hands it each event's data). A
//! streamable HTTP server that answers `tools/list` with a JSON body
//! instead of an SSE stream is parsed by the SDK's client before this
//! crate sees it: there the listing is what the SDK kept, and a task-only
//! tool stays offered (its calls then fail with the server's error).

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

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
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            active: AtomicBool::new(true),
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

    /// Switches the tap on again, empty, before another listing (after
    /// `notifications/tools/list_changed`): its tools are read as the
    /// first listing's were.
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

/// `tool` (a listed tool as the SDK kept it, as JSON) with every field of
/// the server's `raw` object that the SDK dropped put back; the SDK's own
/// fields are kept as they are.
pub(crate) fn restore_dropped_fields(tool: &mut Value, raw: Option<&Map<String, Value>>) {
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
