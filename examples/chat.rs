//! A real agent against a real model: three harmless tools (the clock,
//! arithmetic, a read-only listing of one directory), streamed text as it
//! arrives, each tool call with its duration, and the final answer on
//! stdout.
//!
//! ```sh
//! # Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama's /v1, OpenRouter, ...):
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3 \
//!   cargo run --example chat --features openai -- "What is 17 * 23, and what time is it?"
//! # Anthropic:
//! ANTHROPIC_API_KEY=... ANTHROPIC_MODEL=claude-sonnet-4-5 \
//!   cargo run --example chat --features anthropic -- --anthropic "List the files in ."
//! # The listing tool reads the directory given with --dir (default: the current one).
//! ```
//!
//! Without an endpoint it says what to set and exits with status 2.

use std::process::ExitCode;

#[cfg(any(feature = "openai", feature = "anthropic"))]
mod agent {
    use std::path::PathBuf;
    use std::process::ExitCode;
    use std::sync::Arc;
    use std::time::{SystemTime, UNIX_EPOCH};

    use agent_loop::conversation::Message;
    use agent_loop::tool::{self, BoxError};
    use agent_loop::turn::TurnOptions;
    use agent_loop::turn::{Model, TurnEvent, TurnEvents, TurnStatus};
    use agent_loop::{Bindings, Definition, LoopId, SessionId, ToolLimits};
    use schemars::JsonSchema;
    use serde::Deserialize;

    /// Arguments of `calculate`.
    #[derive(Deserialize, JsonSchema)]
    struct Calculate {
        /// The left operand.
        a: f64,
        /// One of `+`, `-`, `*`, `/`.
        op: String,
        /// The right operand.
        b: f64,
    }

    /// Arguments of `now`: none.
    #[derive(Deserialize, JsonSchema)]
    struct Now {}

    /// Arguments of `list_files`: none; it lists the directory it was given.
    #[derive(Deserialize, JsonSchema)]
    struct ListFiles {}

    /// What the command line asked for.
    pub struct Options {
        pub anthropic: bool,
        pub dir: PathBuf,
        pub prompt: String,
    }

    pub fn options(args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut options = Options {
            anthropic: false,
            dir: PathBuf::from("."),
            prompt: String::new(),
        };
        let mut args = args.peekable();
        let mut words = Vec::new();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--anthropic" => options.anthropic = true,
                "--dir" => {
                    options.dir = args.next().ok_or("--dir needs a directory")?.into();
                }
                _ => words.push(arg),
            }
        }
        options.prompt = words.join(" ");
        if options.prompt.trim().is_empty() {
            return Err("give a prompt, e.g. \"What is 17 * 23?\"".into());
        }
        Ok(options)
    }

    fn tools(dir: PathBuf) -> Vec<tool::Definition> {
        let now = tool::Definition::typed_fn(
            "now",
            "The current time, as seconds since the Unix epoch (UTC).",
            |_: Now, _context| async {
                let seconds = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
                Ok::<_, BoxError>(seconds)
            },
        );
        let calculate = tool::Definition::typed_fn(
            "calculate",
            "Applies +, -, * or / to two numbers.",
            |Calculate { a, op, b }, _context| async move {
                let value = match op.as_str() {
                    "+" => a + b,
                    "-" => a - b,
                    "*" => a * b,
                    "/" if b != 0.0 => a / b,
                    "/" => return Err::<f64, BoxError>("division by zero".into()),
                    other => return Err(format!("unknown operator {other:?}").into()),
                };
                Ok(value)
            },
        );
        let dir = Arc::new(dir);
        let list_files = tool::Definition::typed_fn(
            "list_files",
            "Lists the names of the files and directories in the working directory.",
            move |_: ListFiles, _context| {
                let dir = Arc::clone(&dir);
                async move {
                    let mut names = Vec::new();
                    for entry in std::fs::read_dir(dir.as_path())? {
                        names.push(entry?.file_name().to_string_lossy().into_owned());
                    }
                    names.sort();
                    Ok::<_, BoxError>(names)
                }
            },
        );
        vec![now, calculate, list_files]
    }

    pub async fn run(options: Options, model: &dyn Model) -> Result<ExitCode, BoxError> {
        let session = Definition::builder()
            .name("chat")
            .tools(tools(options.dir))
            .instructions("Use the tools when they help. Answer briefly.")
            .tool_limits(ToolLimits::new().iterations(8))
            .build()
            .validate()?
            .bind(Bindings::new(SessionId::new(), LoopId::new()))
            .await?;

        // Progress goes to stderr as it happens; the answer to stdout.
        let (events, mut received) = TurnEvents::channel();
        let printer = tokio::spawn(async move {
            while let Some(event) = received.recv().await {
                match event {
                    TurnEvent::TextDelta { text } => eprint!("{text}"),
                    TurnEvent::ToolCallStarted { tool_name, .. } => {
                        eprintln!("\n[tool] {tool_name} ...")
                    }
                    TurnEvent::ToolCallFinished {
                        tool_name,
                        duration,
                        error,
                        ..
                    } => match error {
                        None => eprintln!("[tool] {tool_name} done in {duration:?}"),
                        Some(kind) => {
                            eprintln!("[tool] {tool_name} failed ({kind:?}) in {duration:?}")
                        }
                    },
                    _ => {}
                }
            }
        });
        let mut conversation = vec![Message::user(options.prompt)];
        let outcome = session
            .run_turn(
                model,
                &mut conversation,
                TurnOptions::builder().events(&events).build(),
            )
            .await;
        drop(events);
        printer.await?;
        let outcome = outcome?;
        eprintln!();
        match outcome.status {
            TurnStatus::Completed { answer } => {
                println!("{answer}");
                eprintln!(
                    "[{} iterations, {} tool calls, {} input and {} output tokens]",
                    outcome.stats.iteration_count(),
                    outcome.stats.call_count(),
                    outcome.stats.usage.input_tokens,
                    outcome.stats.usage.output_tokens,
                );
                Ok(ExitCode::SUCCESS)
            }
            _ => Ok(ExitCode::FAILURE),
        }
    }
}

#[cfg(any(feature = "openai", feature = "anthropic"))]
#[tokio::main]
async fn main() -> ExitCode {
    let options = match agent::options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(problem) => {
            eprintln!("chat: {problem}");
            return ExitCode::from(2);
        }
    };
    let model: Box<dyn agent_loop::turn::Model> = match model(options.anthropic) {
        Ok(model) => model,
        Err(problem) => {
            eprintln!("chat: {problem}");
            return ExitCode::from(2);
        }
    };
    match agent::run(options, model.as_ref()).await {
        Ok(code) => code,
        Err(error) => {
            // The error and its causes; a key never appears in them.
            let mut message = error.to_string();
            let mut cause = error.source();
            while let Some(inner) = cause {
                message.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            eprintln!("chat: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The model the environment describes, streaming.
#[cfg(any(feature = "openai", feature = "anthropic"))]
fn model(anthropic: bool) -> Result<Box<dyn agent_loop::turn::Model>, String> {
    if anthropic {
        #[cfg(feature = "anthropic")]
        return agent_loop::model::AnthropicModel::from_env()
            .map(|model| Box::new(model.stream(true)) as Box<dyn agent_loop::turn::Model>)
            .map_err(|error| error.to_string());
        #[cfg(not(feature = "anthropic"))]
        return Err("--anthropic needs the `anthropic` feature: cargo run --example chat --features anthropic -- --anthropic \"PROMPT\"".into());
    }
    #[cfg(feature = "openai")]
    return agent_loop::model::OpenAiModel::from_env()
        .map(|model| Box::new(model.stream(true)) as Box<dyn agent_loop::turn::Model>)
        .map_err(|error| error.to_string());
    #[cfg(not(feature = "openai"))]
    Err("without --anthropic the example needs the `openai` feature: cargo run --example chat --features openai -- \"PROMPT\"".into())
}

#[cfg(not(any(feature = "openai", feature = "anthropic")))]
fn main() -> ExitCode {
    eprintln!(
        "chat: this example needs a model feature: cargo run --example chat --features openai -- \"PROMPT\" (or --features anthropic -- --anthropic \"PROMPT\")"
    );
    ExitCode::from(2)
}
