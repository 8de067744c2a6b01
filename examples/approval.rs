//! A human in the loop: an agent whose file writes wait for a person's yes.
//!
//! ```sh
//! cargo run --example approval -- DIR                     # asks on the terminal
//! cargo run --example approval -- DIR --state turn.json   # pauses: writes the turn, exits
//! cargo run --example approval -- DIR --state turn.json --approve CALL_ID
//! cargo run --example approval -- DIR --state turn.json --deny CALL_ID "not there"
//! OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=... \
//!   cargo run --example approval --features openai -- DIR  # a real model
//! ```
//!
//! The gate asks about every `write_file` call. Asked on the terminal, the
//! turn pauses and resumes in this process. With `--state FILE`, the first
//! run stores the paused turn and the conversation in FILE (JSON) and
//! exits with status 3; a later run, another process, reads them back and
//! resumes with the decision given. The scripted stand-in model asks to
//! write `DIR/note.txt`, then answers.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::{
    CallDecision, Model, PausedTurn, Resume, ScriptedModel, TurnOptions, TurnOutcome, TurnStatus,
};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What `--state FILE` holds between the two runs.
#[derive(Serialize, Deserialize)]
struct Stored {
    session_id: SessionId,
    loop_id: LoopId,
    conversation: Vec<Message>,
    paused: PausedTurn,
}

/// The command line.
struct Args {
    dir: PathBuf,
    state: Option<PathBuf>,
    /// One per pending call, given with `--approve` and `--deny`.
    decisions: Vec<CallDecision>,
}

fn args() -> Result<Args, String> {
    let usage = "usage: approval DIR [--state FILE [--approve CALL_ID | --deny CALL_ID REASON]...]";
    let mut words = std::env::args().skip(1);
    let dir = PathBuf::from(words.next().ok_or(usage)?);
    let (mut state, mut decisions) = (None, Vec::new());
    while let Some(word) = words.next() {
        match word.as_str() {
            "--state" => state = Some(PathBuf::from(words.next().ok_or(usage)?)),
            "--approve" => decisions.push(CallDecision::approve(words.next().ok_or(usage)?)),
            "--deny" => {
                let id = words.next().ok_or(usage)?;
                decisions.push(CallDecision::deny(id, words.next().ok_or(usage)?));
            }
            _ => return Err(usage.into()),
        }
    }
    // Decisions resume a stored turn: without one there is nothing to resume.
    if state.is_none() && !decisions.is_empty() {
        return Err(format!("--approve and --deny need --state\n{usage}"));
    }
    Ok(Args {
        dir,
        state,
        decisions,
    })
}

/// `name` when it is one plain file name (no folder, no drive, no `..`,
/// no stream suffix), so the write stays in the directory.
fn plain_file_name(name: &str) -> Option<&str> {
    let mut components = Path::new(name).components();
    let one_normal = matches!(components.next(), Some(std::path::Component::Normal(_)))
        && components.next().is_none();
    let plain = one_normal && !name.starts_with('.') && !name.contains([':', '/', '\\']);
    plain.then_some(name)
}

/// `write_file {path, text}` under `dir`; the gate asks about each call.
fn definition(
    dir: &Path,
) -> Result<Definition<agent_loop::Validated>, agent_loop::DefinitionError> {
    let root = dir.to_owned();
    let write = tool::Definition::from_fn(
        ToolInfo::new(
            "write_file",
            "Writes text to a file of the working directory.",
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "A file name, no folders." },
                    "text": { "type": "string" }
                },
                "required": ["path", "text"]
            }),
        ),
        move |arguments: Value, _context| {
            let root = root.clone();
            async move {
                let asked = arguments["path"].as_str().unwrap_or_default();
                let Some(name) = plain_file_name(asked) else {
                    return Err::<String, BoxError>(
                        format!("`{asked}` is not a plain file name").into(),
                    );
                };
                let text = arguments["text"].as_str().unwrap_or_default();
                tokio::fs::write(root.join(name), text).await?;
                Ok(format!("wrote {} bytes to {name}", text.len()))
            }
        },
    );
    Definition::builder()
        .name("writer")
        .instructions("Write what the user asks into files with `write_file`.")
        .tool(write)
        .gate(|call: &GateCall<'_>| match call.tool.name.as_str() {
            "write_file" => GateDecision::ask(format!("writes {}", call.arguments["path"])),
            _ => GateDecision::Allow,
        })
        .build()
        .validate()
}

/// A real model when the `openai` feature is on and `OPENAI_MODEL` is
/// set; otherwise the scripted stand-in (`resumed`: only its answer is
/// left).
fn model(resumed: bool) -> Result<Box<dyn Model>, Box<dyn std::error::Error>> {
    #[cfg(feature = "openai")]
    if std::env::var_os("OPENAI_MODEL").is_some() {
        return Ok(Box::new(agent_loop::model::OpenAiModel::from_env()?));
    }
    let write = ModelResponse::tool_calls([ToolCall::new(
        "call_1",
        "write_file",
        r#"{"path": "note.txt", "text": "hello from the agent\n"}"#,
    )]);
    let answer = ModelResponse::answer("Done.");
    Ok(Box::new(if resumed {
        ScriptedModel::new([answer])
    } else {
        ScriptedModel::new([write, answer])
    }))
}

/// Asks on the terminal about each pending call.
fn ask(paused: &PausedTurn) -> Result<Vec<CallDecision>, std::io::Error> {
    let mut decisions = Vec::new();
    for pending in &paused.pending {
        print!(
            "{} {} ({}): allow? [y/N] ",
            pending.tool_name, pending.arguments, pending.reason
        );
        std::io::stdout().flush()?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        decisions.push(if line.trim().eq_ignore_ascii_case("y") {
            CallDecision::approve(&pending.tool_call_id)
        } else {
            CallDecision::deny(&pending.tool_call_id, "the user said no")
        });
    }
    Ok(decisions)
}

async fn resume(
    session: &Definition<Bound>,
    model: &dyn Model,
    conversation: &mut Vec<Message>,
    paused: PausedTurn,
    decisions: Vec<CallDecision>,
) -> Result<TurnOutcome, agent_loop::turn::TurnError> {
    let resume = Resume::new(paused, decisions);
    session
        .run_turn(
            model,
            conversation,
            TurnOptions::builder().resume(&resume).build(),
        )
        .await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = match args() {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    if !args.dir.is_dir() {
        eprintln!("{}: not a directory", args.dir.display());
        std::process::exit(2);
    }
    let definition = definition(&args.dir)?;

    // A later run: read the paused turn back and resume it.
    let stored_turn = args.state.as_ref().filter(|_| !args.decisions.is_empty());
    let (session, model, mut conversation, mut outcome) = match stored_turn {
        Some(state) => {
            let stored: Stored = serde_json::from_str(&std::fs::read_to_string(state)?)?;
            let session = definition
                .bind(Bindings::new(stored.session_id, stored.loop_id))
                .await?;
            let mut conversation = stored.conversation;
            let model = model(true)?;
            let outcome = resume(
                &session,
                &*model,
                &mut conversation,
                stored.paused,
                args.decisions,
            )
            .await?;
            std::fs::remove_file(state)?;
            (session, model, conversation, outcome)
        }
        None => {
            let session = definition
                .bind(Bindings::new(SessionId::new(), LoopId::new()))
                .await?;
            let model = model(false)?;
            let mut conversation = vec![Message::user("Write a short hello note to note.txt.")];
            let outcome = session
                .run_turn(
                    &*model,
                    &mut conversation,
                    &tokio_util::sync::CancellationToken::new(),
                )
                .await?;
            (session, model, conversation, outcome)
        }
    };
    while let TurnStatus::Paused(paused) = outcome.status {
        if let Some(state) = &args.state {
            for pending in &paused.pending {
                println!(
                    "pending: {} {} {}",
                    pending.tool_call_id, pending.tool_name, pending.arguments
                );
            }
            let stored = Stored {
                session_id: session.session_id(),
                loop_id: session.loop_id(),
                conversation,
                paused: *paused,
            };
            std::fs::write(state, serde_json::to_string_pretty(&stored)?)?;
            println!(
                "paused: the turn is in {}; run again with --approve or --deny",
                state.display()
            );
            std::process::exit(3);
        }
        let decisions = ask(&paused)?;
        outcome = resume(&session, &*model, &mut conversation, *paused, decisions).await?;
    }
    finish(&outcome, &conversation)
}

/// Prints the answer and what each call returned.
fn finish(
    outcome: &TurnOutcome,
    conversation: &[Message],
) -> Result<(), Box<dyn std::error::Error>> {
    for message in conversation {
        if let Message::Tool(result) = message {
            println!("{}: {}", result.tool_call_id, result.text());
        }
    }
    println!("{}", outcome.answer().unwrap_or("(no answer)"));
    Ok(())
}
