//! The stream properties (`properties::stream`: no panic, the first error
//! sticks, calls start once each in order, the text pieces are the text)
//! on every recorded stream and each of its prefixes (a stream cut
//! anywhere), and on runs of events built from each format's stream
//! vocabulary (Chat Completions, Messages, Responses), each run fed to
//! every assembler. The `stream` fuzz target checks the same on arbitrary
//! server-sent event text.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::arbitrary_json::{RECORDED_STREAMS, json as any_json, word};
use crate::properties::stream::{Event, check_stream};

#[test]
fn every_recorded_stream_and_each_prefix_has_the_stream_properties() {
    // Every kind of recording is read: a folder renamed away would
    // otherwise pass unseen.
    for kind in [
        "openai-stream",
        "anthropic-stream",
        "openai-responses",
        "gemini",
    ] {
        assert!(
            RECORDED_STREAMS
                .iter()
                .any(|(path, _)| path.contains(&format!("/{kind}/"))),
            "no {kind} stream"
        );
    }
    for (path, events) in RECORDED_STREAMS.iter() {
        assert!(!events.is_empty(), "{path}: no events");
        for end in 0..=events.len() {
            if let Err(problem) = check_stream(&events[..end]) {
                panic!("{path}, the first {end} events: {problem}");
            }
        }
    }
}

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

const RESPONSES_EVENTS: &[&str] = &[
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.output_text.delta",
    "response.refusal.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.code_interpreter_call_code.delta",
    "response.failed",
    "error",
];

const RESPONSES_ITEMS: &[&str] = &[
    r#"{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":""}"#,
    r#"{"type":"message","id":"msg_1","role":"assistant","status":"in_progress","content":[]}"#,
    r#"{"type":"reasoning","id":"rs_1","summary":[]}"#,
    r#"{"type":"web_search_call","id":"ws_1","status":"in_progress"}"#,
];

/// One Responses event: a name of its vocabulary, with an item, indexes
/// and a delta, or any JSON.
fn responses_event() -> impl Strategy<Value = Event> {
    let shaped = (
        proptest::sample::select(RESPONSES_EVENTS),
        0u64..3,
        0u64..2,
        proptest::sample::select(RESPONSES_ITEMS),
        word(STREAM_WORDS),
    )
        .prop_map(|(event, output_index, part_index, item, delta)| {
            let item: Value = serde_json::from_str(item).unwrap_or(Value::Null);
            let data = json!({
                "type": event, "output_index": output_index, "content_index": part_index,
                "summary_index": part_index, "item": item, "delta": delta,
                "part": { "type": "output_text", "text": "" },
                "code": "rate_limit", "message": delta,
            });
            (event.to_owned(), data.to_string())
        });
    prop_oneof![
        8 => shaped,
        1 => (proptest::sample::select(RESPONSES_EVENTS), any_json(STREAM_WORDS))
            .prop_map(|(event, data)| (event.to_owned(), data.to_string())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_run_of_responses_events_has_the_stream_properties(
        middle in proptest::collection::vec(responses_event(), 0..14),
        ended in any::<bool>(),
        with_output in any::<bool>(),
    ) {
        let mut events = middle;
        if ended {
            let output = if with_output {
                json!([{ "type": "function_call", "call_id": "call_9", "name": "f", "arguments": "{}" }])
            } else {
                json!([])
            };
            let response = json!({ "object": "response", "status": "completed", "output": output });
            events.push((
                "response.completed".to_owned(),
                json!({ "type": "response.completed", "response": response }).to_string(),
            ));
        }
        check_stream(&events).map_err(TestCaseError::fail)?;
    }
}
