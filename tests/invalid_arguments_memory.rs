//! Memory for invalid arguments stays proportional to the arguments, not
//! to what an error message could quote: a turn answering a call whose
//! 64 MiB of arguments fail the tool's schema allocates at most twice the
//! arguments (the parsed value, and what the schema checker copies of it)
//! plus 1 MiB on top of what existed before the turn. The error message
//! itself is built bounded: the failing path and keyword, with an excerpt
//! of the value, never the value.
//!
//! A test binary of its own (`[[test]] invalid_arguments_memory`) with one
//! test, so its counting global allocator sees only this turn.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Bindings, Definition, LoopId, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The system allocator, counting the bytes currently allocated and the
/// most ever allocated at once.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Ordering::SeqCst) + bytes;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes, Ordering::SeqCst);
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are
// updated around it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            grew(layout.size());
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(pointer, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ARGUMENTS_BYTES: usize = 64 << 20;
const SLACK_BYTES: usize = 1 << 20;

/// The most memory a turn allocated on top of what existed when it
/// started, answering one call of `arguments` to a tool of `schema`; and
/// the error text the model got.
fn peak_extra_bytes(schema: Value, arguments: String) -> (usize, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let store = tool::Definition::from_fn(
            ToolInfo::new("store", "Stores a note.", schema),
            |_arguments: Value, _context| async move { Ok::<_, BoxError>("stored") },
        );
        let session = Definition::builder()
            .name("memory")
            .tool(store)
            .build()
            .validate()
            .expect("valid")
            .bind(Bindings::new(SessionId::new(), LoopId::new()))
            .await
            .expect("binds");
        let model = ScriptedModel::new([
            ModelResponse::tool_calls([ToolCall::new("call_1", "store", arguments)]),
            ModelResponse::answer("done"),
        ]);
        let mut conversation = vec![Message::user("store this")];
        let cancel = CancellationToken::new();

        let before = CURRENT.load(Ordering::SeqCst);
        PEAK.store(before, Ordering::SeqCst);
        let outcome = session
            .run_turn(&model, &mut conversation, &cancel)
            .await
            .expect("the turn completes");
        let peak = PEAK.load(Ordering::SeqCst);
        assert_eq!(
            outcome.stats.iterations[0].calls[0].error,
            Some(ToolCallErrorKind::InvalidArguments)
        );

        let result = conversation
            .iter()
            .find_map(Message::as_tool_result)
            .expect("the call's result");
        assert!(result.is_error);
        (peak - before, result.text())
    })
}

#[test]
fn invalid_arguments_of_64_mib_cost_at_most_twice_their_size() {
    let long = "y".repeat(ARGUMENTS_BYTES);
    let cases = [
        (
            "a string where an integer is required",
            json!({"type": "object", "properties": {"text": {"type": "integer"}}}),
            format!(r#"{{"text": "{long}"}}"#),
            r#"invalid arguments for `store`: `/text`: "yyyyyyyy"#,
        ),
        (
            "a string over maxLength",
            json!({"type": "object", "properties": {"text": {"type": "string", "maxLength": 8}}}),
            format!(r#"{{"text": "{long}"}}"#),
            r#"invalid arguments for `store`: `/text`: "yyyyyyyy"#,
        ),
        (
            "an unexpected property named by 64 MiB",
            json!({"type": "object", "properties": {"text": {}}, "additionalProperties": false}),
            format!(r#"{{"{long}": 1}}"#),
            "invalid arguments for `store`: arguments: Additional properties are not allowed ('yyyy",
        ),
    ];
    drop(long);
    for (case, schema, arguments, starts) in cases {
        let input = arguments.len();
        let (extra, text) = peak_extra_bytes(schema, arguments);
        println!(
            "{case}: arguments {input} bytes, peak extra {extra} bytes ({:.2}x)",
            extra as f64 / input as f64
        );
        assert!(text.starts_with(starts), "{case}: {text}");
        assert!(text.len() <= 1024, "{case}: {} bytes", text.len());
        assert!(
            extra < 2 * input + SLACK_BYTES,
            "{case}: {extra} bytes allocated for {input} bytes of arguments"
        );
    }
}
