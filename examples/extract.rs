//! Structured output: turn a paragraph into a typed struct.
//!
//! ```sh
//! cargo run --example extract                       # a scripted stand-in model
//! OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=... \
//!   cargo run --example extract --features openai   # a real model
//! ```
//!
//! The turn is asked for an [`Output`] of type `Meeting`: the model is
//! offered the `structured_output` tool with the struct's JSON Schema, and
//! the turn ends when it calls that tool with arguments that pass it.

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::turn::{Model, Output, ScriptedModel, TurnOptions};
use agent_loop::{Bindings, Definition, LoopId, SessionId};
use schemars::JsonSchema;
use serde::Deserialize;

/// A meeting read from free text.
#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // printed with Debug
struct Meeting {
    /// What the meeting is about, in a few words.
    topic: String,
    /// The day, as written in the text (e.g. "Tuesday").
    day: String,
    /// The start time, 24-hour `HH:MM`.
    start: String,
    /// Everyone who will attend, by first name.
    attendees: Vec<String>,
    /// Where it takes place, if the text says.
    room: Option<String>,
}

const PARAGRAPH: &str = "Hi all — let's meet on Tuesday at 2:30pm in the Lovelace room to \
go over the Q3 budget. Priya and Tom from finance will join, and Ana will take notes.";

/// What a good model answers: the stand-in's script.
fn scripted() -> ScriptedModel {
    ScriptedModel::new([ModelResponse::tool_calls([ToolCall::new(
        "call_1",
        agent_loop::STRUCTURED_OUTPUT_TOOL_NAME,
        r#"{"topic": "Q3 budget", "day": "Tuesday", "start": "14:30",
            "attendees": ["Priya", "Tom", "Ana"], "room": "Lovelace"}"#,
    )])])
}

/// A real model when the `openai` feature is on and `OPENAI_MODEL` is
/// set; otherwise the scripted stand-in, saying so.
fn model() -> Result<Box<dyn Model>, Box<dyn std::error::Error>> {
    #[cfg(feature = "openai")]
    if std::env::var_os("OPENAI_MODEL").is_some() {
        eprintln!("extract: using OpenAiModel::from_env()");
        return Ok(Box::new(agent_loop::model::OpenAiModel::from_env()?));
    }
    eprintln!(
        "extract: no real model configured (build with --features openai and set OPENAI_MODEL, \
         OPENAI_API_KEY or OPENAI_BASE_URL); using a scripted stand-in"
    );
    Ok(Box::new(scripted()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let session = Definition::builder()
        .name("extract")
        .build()
        .validate()?
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await?;
    let model = model()?;
    let mut conversation = vec![
        Message::system("Extract the meeting the user's message describes."),
        Message::user(PARAGRAPH),
    ];
    let options = TurnOptions::builder()
        .output(Output::typed::<Meeting>()?)
        .build();
    let outcome = session
        .run_turn(model.as_ref(), &mut conversation, options)
        .await?;
    let meeting: Meeting = outcome
        .output_as()
        .ok_or("the turn ended without its output")??;
    println!("{meeting:#?}");
    eprintln!(
        "extract: {} iterations, {} calls",
        outcome.stats.iteration_count(),
        outcome.stats.call_count()
    );
    Ok(())
}
