//! A durable agent served on Restate: the approval example's agent (a tool
//! that appends a line to a file, and one that writes a note, which asks
//! before it runs; both write once per call, by the call's idempotency
//! key), each session a Restate virtual object.
//!
//! ```sh
//! cargo run -p agent-loop-restate --example durable -- --port 9080 --file notes.txt
//! OPENAI_MODEL=gpt-4.1-mini OPENAI_API_KEY=... \
//!   cargo run -p agent-loop-restate --example durable --features openai -- --port 9080 --file notes.txt
//! ```
//!
//! Then register it with a Restate server and send turns (see the README's
//! "Durable agents"). The model is a scripted stand-in unless
//! `OPENAI_MODEL` is set and the crate's `openai` feature is on: it asks
//! to append two lines (`append_line`), then to write a note
//! (`write_note`, which waits for a person's decision), then answers; it
//! refuses the message `fail` (a model error).
//! It answers from the conversation alone, so a process that restarts
//! mid-turn answers as the first would have.
//!
//! `DURABLE_MODEL_DELAY_MS` and `DURABLE_TOOL_DELAY_MS` slow the model's
//! answers and the tools, so that a test can kill the process mid-step;
//! `DURABLE_PARALLEL` sets how many calls of a batch run at once;
//! `DURABLE_RUNS_FILE` names a file that gets a line per execution of a
//! call (`session id/tool call id`), for a test to count them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_loop::Definition;
use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::gate::{ApprovalKey, GateCall, GateDecision};
use agent_loop::limits::ToolLimits;
use agent_loop::tool::{self, BoxError, CallContext, ToolInfo};
use agent_loop::turn::{Model, ModelError, ModelRequest};
use agent_loop_restate::DurableAgent;
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

/// The command line: `--port PORT --file FILE`.
struct Args {
    port: u16,
    file: PathBuf,
}

fn args() -> Result<Args, String> {
    let usage = "usage: durable --port PORT --file FILE";
    let (mut port, mut file) = (None, None);
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        match word.as_str() {
            "--port" => {
                let value = words.next().ok_or(usage)?;
                port = Some(
                    value
                        .parse::<u16>()
                        .map_err(|_| format!("not a port: {value}"))?,
                );
            }
            "--file" => file = Some(PathBuf::from(words.next().ok_or(usage)?)),
            _ => return Err(usage.into()),
        }
    }
    Ok(Args {
        port: port.ok_or(usage)?,
        file: file.ok_or(usage)?,
    })
}

fn delay(variable: &str) -> Duration {
    let millis = std::env::var(variable)
        .ok()
        .and_then(|value| value.parse::<u64>().ok())
        .unwrap_or(0);
    Duration::from_millis(millis)
}

/// Notes that the call of `context` ran, once per execution (with no
/// idempotency key), in the file `DURABLE_RUNS_FILE` names, if set: how a
/// test counts the executions the idempotency key hides.
async fn record_run(context: &CallContext) -> Result<(), BoxError> {
    let Some(runs) = std::env::var_os("DURABLE_RUNS_FILE") else {
        return Ok(());
    };
    let run = format!("{}/{}", context.session_id(), context.tool_call_id());
    write_line(Path::new(&runs), &run).await
}

/// Appends `line` and a line end to `file` in one write, and syncs it
/// before the call goes on (a test kills the process at any moment).
async fn write_line(file: &Path, line: &str) -> Result<(), BoxError> {
    let mut opened = tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .await?;
    opened.write_all(format!("{line}\n").as_bytes()).await?;
    opened.sync_all().await?;
    Ok(())
}

/// Appends `line` to `file` once for the call of `context`: the line
/// ends with the call's idempotency key (session id, loop id, tool call
/// id), and a call that finds its key there writes nothing. A call cut by
/// a crash (its line written, its result not yet journaled) runs again,
/// and finds its line.
async fn append_once(file: &PathBuf, line: &str, context: &CallContext) -> Result<(), BoxError> {
    let marker = format!(
        "[{}/{}/{}]",
        context.session_id(),
        context.loop_id(),
        context.tool_call_id()
    );
    let written = tokio::fs::read_to_string(file).await.unwrap_or_default();
    if written.lines().any(|written| written.ends_with(&marker)) {
        return Ok(());
    }
    write_line(file, &format!("{line} {marker}")).await
}

/// The agent's definition: `append_line` and `write_note` (asked about),
/// both writing to `file`; its pending calls are signed.
fn definition(file: PathBuf) -> Result<Definition<agent_loop::Validated>, BoxError> {
    let schema = |field: &str| {
        json!({
            "type": "object",
            "properties": { field: { "type": "string" } },
            "required": [field]
        })
    };
    let appended = file.clone();
    let append_line = tool::Definition::from_fn(
        ToolInfo::new("append_line", "Appends a line to the file.", schema("line")),
        move |arguments: Value, context| {
            let file = appended.clone();
            async move {
                record_run(&context).await?;
                tokio::time::sleep(delay("DURABLE_TOOL_DELAY_MS")).await;
                let line = arguments["line"].as_str().unwrap_or_default();
                append_once(&file, line, &context).await?;
                Ok::<_, BoxError>(json!("appended"))
            }
        },
    );
    let noted = file;
    let write_note = tool::Definition::from_fn(
        ToolInfo::new("write_note", "Writes a note to the file.", schema("text")),
        move |arguments: Value, context| {
            let file = noted.clone();
            async move {
                record_run(&context).await?;
                let text = arguments["text"].as_str().unwrap_or_default();
                append_once(&file, &format!("note: {text}"), &context).await?;
                Ok::<_, BoxError>(json!("written"))
            }
        },
    );
    // The calls of a batch run at once, as many as `DURABLE_PARALLEL` says
    // (the default 8 unless set).
    let mut limits = ToolLimits::new();
    if let Some(parallel) = std::env::var("DURABLE_PARALLEL")
        .ok()
        .and_then(|value| value.parse::<u32>().ok())
    {
        limits = limits.parallel(parallel);
    }
    Ok(Definition::builder()
        .name("durable-notes")
        .tool(append_line)
        .tool(write_note)
        .tool_limits(limits)
        .approval_key(ApprovalKey::new("durable-example-key: set your own secret"))
        .gate(|call: &GateCall<'_>| {
            if call.tool.name == "write_note" {
                GateDecision::ask("writes a note: a person decides")
            } else {
                GateDecision::Allow
            }
        })
        .build()
        .validate()?)
}

/// The scripted stand-in: it answers from the conversation since the last
/// user message alone (no state of its own), so a restarted process
/// answers as the first would have.
struct Script;

#[async_trait]
impl Model for Script {
    async fn respond(&self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        tokio::time::sleep(delay("DURABLE_MODEL_DELAY_MS")).await;
        let conversation = request.conversation;
        let turn_start = conversation
            .iter()
            .rposition(|message| matches!(message, Message::User(_)))
            .unwrap_or(0);
        let text = conversation
            .get(turn_start)
            .map(Message::text)
            .unwrap_or_default();
        let asked = conversation[turn_start..]
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count();
        let turn = conversation
            .iter()
            .filter(|message| matches!(message, Message::User(_)))
            .count();
        if text == "fail" {
            // A request the provider refuses: the turn fails, typed.
            return Err(ModelError::other("the stand-in model refuses `fail`"));
        }
        Ok(match asked {
            0 => ModelResponse::tool_calls([
                ToolCall::new(
                    format!("call_{turn}_1"),
                    "append_line",
                    json!({ "line": format!("first: {text}") }).to_string(),
                ),
                ToolCall::new(
                    format!("call_{turn}_2"),
                    "append_line",
                    json!({ "line": format!("second: {text}") }).to_string(),
                ),
            ]),
            1 => ModelResponse::tool_calls([ToolCall::new(
                format!("call_{turn}_3"),
                "write_note",
                json!({ "text": text }).to_string(),
            )]),
            _ => ModelResponse::answer(format!("Noted: {text}")),
        })
    }
}

/// The model: a real one with the `openai` feature and `OPENAI_MODEL`
/// set (its key and base URL from the environment too), else the script.
fn model() -> Result<Box<dyn Model>, BoxError> {
    #[cfg(feature = "openai")]
    if std::env::var_os("OPENAI_MODEL").is_some() {
        return Ok(Box::new(agent_loop::model::OpenAiModel::from_env()?));
    }
    Ok(Box::new(Script))
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args = match args() {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("{usage}");
            std::process::exit(2);
        }
    };
    let agent = DurableAgent::new(definition(args.file)?, model()?);
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], args.port));
    eprintln!("durable: serving AgentSession and AgentDecision on {address}");
    agent.serve(address).await?;
    Ok(())
}
