//! A real agent against a real model: three harmless tools (the clock,
//! arithmetic, a read-only listing of one directory), streamed text as it
//! arrives, each tool call with its duration, and the final answer on
//! stdout.
//!
//! ```sh
//! # OpenAI's own models, through the Responses API:
//! OPENAI_API_KEY=... OPENAI_MODEL=gpt-5.4 \
//!   cargo run --example chat --features openai -- --responses "What is 17 * 23?"
//! # Any OpenAI-compatible server (vLLM, llama.cpp, Ollama's /v1, OpenRouter, ...):
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=qwen3 \
//!   cargo run --example chat --features openai -- "What is 17 * 23, and what time is it?"
//! # Anthropic:
//! ANTHROPIC_API_KEY=... ANTHROPIC_MODEL=claude-sonnet-4-5 \
//!   cargo run --example chat --features anthropic -- --anthropic "List the files in ."
//! # Gemini's native API:
//! GEMINI_API_KEY=... GEMINI_MODEL=gemini-3-flash-preview \
//!   cargo run --example chat --features gemini -- --gemini "What time is it?"
//! # The listing tool reads the directory given with --dir (default: the current one);
//! # --effort LEVEL (none, minimal, low, medium, high, xhigh, max) sets how
//! # much the model reasons, on any of them.
//! ```
//!
//! Without an endpoint it says what to set and exits with status 2.

use std::process::ExitCode;

#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
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

    /// Which API the model speaks.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub enum Api {
        /// OpenAI Chat Completions, and every compatible server (the default).
        Chat,
        /// OpenAI Responses (`--responses`).
        Responses,
        /// Anthropic Messages (`--anthropic`).
        Anthropic,
        /// Gemini's native API (`--gemini`).
        Gemini,
    }

    /// What the command line asked for.
    pub struct Options {
        pub api: Api,
        pub dir: PathBuf,
        /// `--effort LEVEL`: how much the model reasons, on any API.
        pub effort: Option<agent_loop::model::Effort>,
        pub prompt: String,
    }

    /// An [`Effort`](agent_loop::model::Effort) by the name the providers give it.
    fn effort(name: &str) -> Result<agent_loop::model::Effort, String> {
        use agent_loop::model::Effort;
        Ok(match name {
            "none" => Effort::None,
            "minimal" => Effort::Minimal,
            "low" => Effort::Low,
            "medium" => Effort::Medium,
            "high" => Effort::High,
            "xhigh" => Effort::XHigh,
            "max" => Effort::Max,
            other => {
                return Err(format!(
                    "--effort takes none, minimal, low, medium, high, xhigh or max, not {other:?}"
                ));
            }
        })
    }

    pub fn options(args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut options = Options {
            api: Api::Chat,
            dir: PathBuf::from("."),
            effort: None,
            prompt: String::new(),
        };
        let mut args = args.peekable();
        let mut words = Vec::new();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--responses" => options.api = Api::Responses,
                "--anthropic" => options.api = Api::Anthropic,
                "--gemini" => options.api = Api::Gemini,
                "--dir" => {
                    options.dir = args.next().ok_or("--dir needs a directory")?.into();
                }
                "--effort" => {
                    let level = args.next().ok_or("--effort needs a level")?;
                    options.effort = Some(effort(&level)?);
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

#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[tokio::main]
async fn main() -> ExitCode {
    let options = match agent::options(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(problem) => {
            eprintln!("chat: {problem}");
            return ExitCode::from(2);
        }
    };
    let model: Box<dyn agent_loop::turn::Model> = match model(options.api, options.effort) {
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

/// The model the environment describes, streaming; or what to set, or
/// which feature to build with.
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
fn model(
    api: agent::Api,
    effort: Option<agent_loop::model::Effort>,
) -> Result<Box<dyn agent_loop::turn::Model>, String> {
    use agent::Api;
    use agent_loop::model::{HttpModel, Provider};
    use agent_loop::turn::Model;

    // Streaming, and reasoning as asked: one setting on every model.
    fn boxed<P: Provider>(
        model: HttpModel<P>,
        effort: Option<agent_loop::model::Effort>,
    ) -> Box<dyn Model> {
        let model = model.stream(true);
        match effort {
            Some(effort) => Box::new(model.effort(effort)),
            None => Box::new(model),
        }
    }
    let needs = |feature: &str, flag: &str| {
        format!(
            "{flag}needs the `{feature}` feature: cargo run --example chat --features {feature} -- {flag}\"PROMPT\""
        )
    };
    match api {
        #[cfg(feature = "openai")]
        Api::Chat => agent_loop::model::OpenAiModel::from_env().map(|m| boxed(m, effort)),
        #[cfg(feature = "openai")]
        Api::Responses => {
            agent_loop::model::OpenAiResponsesModel::from_env().map(|m| boxed(m, effort))
        }
        #[cfg(feature = "anthropic")]
        Api::Anthropic => agent_loop::model::AnthropicModel::from_env().map(|m| boxed(m, effort)),
        #[cfg(feature = "gemini")]
        Api::Gemini => agent_loop::model::GeminiModel::from_env().map(|m| boxed(m, effort)),
        #[allow(unreachable_patterns)] // with every feature on
        other => {
            return Err(match other {
                Api::Chat => needs("openai", ""),
                Api::Responses => needs("openai", "--responses "),
                Api::Anthropic => needs("anthropic", "--anthropic "),
                Api::Gemini => needs("gemini", "--gemini "),
            });
        }
    }
    .map_err(|error| error.to_string())
}

#[cfg(not(any(feature = "openai", feature = "anthropic", feature = "gemini")))]
fn main() -> ExitCode {
    eprintln!(
        "chat: this example needs a model feature: cargo run --example chat --features openai -- \"PROMPT\" (or --features openai -- --responses, --features anthropic -- --anthropic, --features gemini -- --gemini)"
    );
    ExitCode::from(2)
}
