//! Every stream assembler (OpenAI Chat Completions and Responses,
//! Anthropic, Gemini) on any server-sent event text, framed by the SSE
//! parser the models use (`eventsource-stream`), up to its first
//! error as the transport stops there; see `properties::stream`. Seeds:
//! the recorded responses as streams (`fuzz/seeds/stream/`).
#![no_main]

use std::convert::Infallible;

use agent_loop_fuzz::{check, properties};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let body = futures::stream::iter([Ok::<_, Infallible>(data.to_vec())]);
    let events: Vec<(String, String)> = futures::executor::block_on(
        body.eventsource()
            .take_while(|event| std::future::ready(event.is_ok()))
            .filter_map(|event| std::future::ready(event.ok()))
            .map(|event| (event.event, event.data))
            .collect(),
    );
    check(properties::stream::check_stream(&events));
});
