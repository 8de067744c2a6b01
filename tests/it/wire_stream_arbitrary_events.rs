//! The stream properties (`properties::stream`: no panic, the first error
//! sticks, calls start once each in order, the text pieces are the text)
//! on runs of events built from both formats' stream vocabulary, each run
//! fed to both assemblers. The `stream` fuzz target checks the same on
//! arbitrary server-sent event text.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::arbitrary_json::{json as any_json, word};
use crate::properties::stream::{Event, check_stream};

const STREAM_WORDS: &[&str] = &[
    "text",
    "tool_use",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "text_delta",
    "input_json_delta",
    "thinking_delta",
    "signature_delta",
    "citations_delta",
    "assistant",
    "user",
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop",
    "tool_calls",
    "length",
    "function",
    "call_0",
    "toolu_01",
    "get_weather",
    "",
    " ",
    "{",
    "}",
    "{\"city\":",
    "\"Oslo\"}",
];

fn text() -> impl Strategy<Value = String> + Clone {
    word(STREAM_WORDS)
}

fn small_index() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![4 => (0_u64..3).prop_map(Value::from), 1 => Just(Value::Null), 1 => any::<i64>().prop_map(Value::from)]
}

/// A piece of a value: mostly what the format sends there, sometimes any
/// JSON.
fn or_any(
    strategy: impl Strategy<Value = Value> + Clone + 'static,
) -> impl Strategy<Value = Value> + Clone {
    prop_oneof![6 => strategy, 1 => any_json(STREAM_WORDS)]
}

/// An OpenAI `chat.completion.chunk`, `[DONE]`, or a blank keep-alive.
fn openai_event() -> impl Strategy<Value = Event> {
    let call = (small_index(), text(), text(), text()).prop_map(|(index, id, name, arguments)| {
        json!({ "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": arguments } })
    });
    let delta = (
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::option::of(text()),
        proptest::collection::vec(or_any(call), 0..3),
    )
        .prop_map(|(content, reasoning, refusal, calls)| {
            let mut delta = json!({});
            if let Some(content) = content {
                delta["content"] = json!(content);
            }
            if let Some(reasoning) = reasoning {
                delta["reasoning_content"] = json!(reasoning);
            }
            if let Some(refusal) = refusal {
                delta["refusal"] = json!(refusal);
            }
            if !calls.is_empty() {
                delta["tool_calls"] = json!(calls);
            }
            delta
        });
    let chunk = (or_any(delta), proptest::option::of(text()), any::<bool>()).prop_map(
        |(delta, finish, usage)| {
            let mut chunk =
                json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
            if usage {
                chunk["usage"] = json!({ "prompt_tokens": 5, "completion_tokens": 2 });
            }
            chunk.to_string()
        },
    );
    let data = prop_oneof![8 => chunk, 1 => Just("[DONE]".to_owned()), 1 => Just(String::new())];
    let event = prop_oneof![8 => Just(String::new()), 1 => Just("error".to_owned()), 1 => text()];
    (event, data)
}

const MESSAGE_START: &str = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}"#;
const MESSAGE_DELTA: &str =
    r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#;

/// An Anthropic Messages event, its name matching its `type` mostly.
fn anthropic_event() -> impl Strategy<Value = Event> {
    let message_start =
        Just(serde_json::from_str::<Value>(MESSAGE_START).expect("the constant is JSON"));
    let block_start = (small_index(), text(), text(), text()).prop_map(|(index, kind, id, name)| {
        json!({ "type": "content_block_start", "index": index,
                "content_block": { "type": kind, "text": "", "thinking": "", "id": id, "name": name, "input": {} } })
    });
    let block_delta = (small_index(), text(), text()).prop_map(|(index, kind, piece)| {
        json!({ "type": "content_block_delta", "index": index,
                "delta": { "type": kind, "text": piece, "partial_json": piece, "thinking": piece, "signature": piece } })
    });
    let block_stop =
        small_index().prop_map(|index| json!({ "type": "content_block_stop", "index": index }));
    let message_delta = proptest::option::of(text()).prop_map(|stop| {
        json!({ "type": "message_delta", "delta": { "stop_reason": stop }, "usage": { "output_tokens": 7 } })
    });
    let payload = prop_oneof![
        1 => message_start,
        3 => block_start,
        4 => block_delta,
        2 => block_stop,
        1 => message_delta,
        1 => Just(json!({ "type": "message_stop" })),
        1 => Just(json!({ "type": "ping" })),
        1 => Just(json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } })),
        1 => any_json(STREAM_WORDS),
    ];
    (payload, any::<bool>()).prop_map(|(payload, named)| {
        let name = match (&payload["type"], named) {
            (Value::String(kind), true) => kind.clone(),
            _ => String::new(),
        };
        (name, payload.to_string())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_run_of_openai_chunks_has_the_stream_properties(
        events in proptest::collection::vec(openai_event(), 0..12)
    ) {
        check_stream(&events).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn any_run_of_anthropic_events_has_the_stream_properties(
        started in any::<bool>(),
        middle in proptest::collection::vec(anthropic_event(), 0..14),
        stopped in any::<bool>(),
    ) {
        // Most runs start and stop like a stream, so that the events
        // between reach the blocks.
        let mut events = Vec::new();
        if started {
            events.push(("message_start".to_owned(), MESSAGE_START.to_owned()));
        }
        events.extend(middle);
        if stopped {
            events.push(("message_delta".to_owned(), MESSAGE_DELTA.to_owned()));
            events.push(("message_stop".to_owned(), r#"{"type":"message_stop"}"#.to_owned()));
        }
        check_stream(&events).map_err(TestCaseError::fail)?;
    }
}
