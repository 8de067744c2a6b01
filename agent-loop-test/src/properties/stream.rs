//! Streams: every assembler (Chat Completions, Messages, Responses,
//! Gemini) fed any run of server-sent events.
//!
//! - Nothing panics; a bad event is a `WireError`.
//! - The first error sticks: every later `push` returns it, and `finish`.
//! - A tool call starts at most once, and an assembled response holds it
//!   as a call (its name may grow, never change its start).
//! - The text pieces are the assembled text: equal once white space is
//!   left out (blank text is dropped from the response, as
//!   `parse_response` drops it). Not for Responses, whose last event
//!   carries the whole response: that response is the answer, whatever
//!   pieces came before it.

use agent_loop::conversation::ModelResponse;
use agent_loop::wire::WireError;
use agent_loop::wire::stream::StreamDelta;
use agent_loop::wire::stream::anthropic::EventAssembler;
use agent_loop::wire::stream::gemini::ChunkAssembler as GeminiAssembler;
use agent_loop::wire::stream::openai::ChunkAssembler;
use agent_loop::wire::stream::responses::EventAssembler as ResponsesAssembler;

use super::ensure;

/// An SSE event: its name (`""` when the server sent none) and its data.
pub type Event = (String, String);

/// What the two assemblers have in common.
trait Assembler: Default {
    const NAME: &'static str;
    /// The response is built from the pieces (not given whole at the end).
    const FROM_PIECES: bool = true;
    fn push(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError>;
    fn finish(self) -> Result<ModelResponse, WireError>;
}

impl Assembler for ChunkAssembler {
    const NAME: &'static str = "OpenAI";

    fn push(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        // The transport names an unnamed event `message`, the SSE default.
        let event = if event.is_empty() { "message" } else { event };
        self.push_event(event, data)
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        ChunkAssembler::finish(self)
    }
}

impl Assembler for EventAssembler {
    const NAME: &'static str = "Anthropic";

    fn push(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        let event = if event.is_empty() { "message" } else { event };
        EventAssembler::push(self, event, data)
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        EventAssembler::finish(self)
    }
}

impl Assembler for ResponsesAssembler {
    const NAME: &'static str = "Responses";
    const FROM_PIECES: bool = false;

    fn push(&mut self, event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        let event = if event.is_empty() { "message" } else { event };
        ResponsesAssembler::push(self, event, data)
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        ResponsesAssembler::finish(self)
    }
}

impl Assembler for GeminiAssembler {
    const NAME: &'static str = "Gemini";

    fn push(&mut self, _event: &str, data: &str) -> Result<Vec<StreamDelta>, WireError> {
        GeminiAssembler::push(self, data)
    }

    fn finish(self) -> Result<ModelResponse, WireError> {
        GeminiAssembler::finish(self)
    }
}

/// Every assembler on `events`.
pub fn check_stream(events: &[Event]) -> Result<(), String> {
    check::<ChunkAssembler>(events)?;
    check::<EventAssembler>(events)?;
    check::<ResponsesAssembler>(events)?;
    check::<GeminiAssembler>(events)
}

fn check<A: Assembler>(events: &[Event]) -> Result<(), String> {
    let name = A::NAME;
    let mut assembler = A::default();
    let mut failed: Option<WireError> = None;
    let mut deltas = Vec::new();
    for (at, (event, data)) in events.iter().enumerate() {
        let pushed = assembler.push(event, data);
        match (&failed, pushed) {
            (None, Ok(more)) => deltas.extend(more),
            (None, Err(error)) => failed = Some(error),
            (Some(first), pushed) => ensure(pushed.as_ref() == Err(first), || {
                format!("{name}: event {at} after the error {first} gave {pushed:?}")
            })?,
        }
    }
    let finished = assembler.finish();
    if let Some(first) = &failed {
        return ensure(finished.as_ref() == Err(first), || {
            format!("{name}: finish after the error {first} gave {finished:?}")
        });
    }

    let started: Vec<usize> = deltas
        .iter()
        .filter_map(|delta| match delta {
            StreamDelta::ToolCallStarted { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    let mut distinct = started.clone();
    distinct.sort_unstable();
    distinct.dedup();
    ensure(distinct.len() == started.len(), || {
        format!("{name}: a tool call started twice: {started:?}")
    })?;
    let Ok(response) = finished else {
        return Ok(());
    };
    if !A::FROM_PIECES {
        return Ok(());
    }
    let names: Vec<&str> = response
        .message
        .tool_calls()
        .map(|call| call.name.as_str())
        .collect();
    ensure(started.len() <= names.len(), || {
        format!("{name}: calls {started:?} started, {names:?} assembled")
    })?;
    for delta in &deltas {
        if let StreamDelta::ToolCallStarted { name: started, .. } = delta {
            // Later name pieces may extend the name, never change its start.
            ensure(
                names.iter().any(|name| name.starts_with(started.as_str())),
                || format!("{name}: the call {started:?} started, and {names:?} were assembled"),
            )?;
        }
    }
    let refused = deltas
        .iter()
        .any(|delta| matches!(delta, StreamDelta::Refusal(_)));
    if !refused {
        let pieces: String = deltas
            .iter()
            .filter_map(|delta| match delta {
                StreamDelta::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let text = response.message.text();
        ensure(
            without_white_space(&pieces) == without_white_space(&text),
            || format!("{name}: text pieces {pieces:?} assembled into {text:?}"),
        )?;
    }
    Ok(())
}

fn without_white_space(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}
