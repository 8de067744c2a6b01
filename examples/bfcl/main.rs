//! BFCL replay: thousands of real tool declarations and ground-truth calls
//! from the Berkeley Function Calling Leaderboard, through the whole
//! library.
//!
//! For each task: the declarations become valid `ToolInfo`s (sanitised
//! names, JSON Schema types), echo tools are bound to a fresh session, a
//! model answering real OpenAI `chat.completion` bodies asks for the
//! ground-truth calls as one batch, and the replay checks that every call
//! ran, passed its schema and reached its tool with the ground-truth
//! arguments.
//!
//! ```text
//! cargo run --release --example bfcl                   # embedded: 4 categories, 1,000 tasks
//! cargo run --release --example bfcl -- FILE.json      # any BFCL category file
//! cargo run --release --example bfcl -- --json [FILE]  # the report as one JSON object
//! ```
//!
//! With a file, its answers are read from `possible_answer/<same name>`
//! beside it; without one (`irrelevance`) every task must call no tool.
//! The exit status is 0 when the replay ran (failed tasks are findings,
//! listed in the report), 2 for a usage or I/O error.

// `#[path]` makes `replay.rs` a directory owner, as when the test includes
// it, so its own `mod normalize;` resolves the same way in both crates.
#[path = "replay.rs"]
mod replay;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use replay::{Category, Report};

const USAGE: &str = "usage: bfcl [--json] [BFCL_v4_<category>.json]";

#[tokio::main]
async fn main() -> ExitCode {
    let mut json = false;
    let mut path: Option<PathBuf> = None;
    for argument in std::env::args_os().skip(1) {
        match argument.to_str() {
            Some("--json") => json = true,
            Some("-h" | "--help") => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            Some(flag) if flag.starts_with("--") => {
                eprintln!("unknown option `{flag}`\n{USAGE}");
                return ExitCode::from(2);
            }
            _ if path.is_some() => {
                eprintln!("one category file at a time\n{USAGE}");
                return ExitCode::from(2);
            }
            _ => path = Some(PathBuf::from(argument)),
        }
    }

    let report = match path {
        None => replay::replay(&replay::embedded()).await,
        Some(path) => match replay_file(&path).await {
            Ok(report) => report,
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::from(2);
            }
        },
    };
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(text) => println!("{text}"),
            Err(error) => {
                eprintln!("cannot serialise the report: {error}");
                return ExitCode::from(2);
            }
        }
    } else {
        print!("{}", replay::render_text(&report));
    }
    ExitCode::SUCCESS
}

/// Replays one category file, with its answers when they are beside it.
async fn replay_file(path: &Path) -> Result<Report, String> {
    let tasks = std::fs::read_to_string(path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let answers_path = path
        .parent()
        .zip(path.file_name())
        .map(|(directory, name)| directory.join("possible_answer").join(name));
    let answers = match answers_path {
        Some(answers_path) if answers_path.is_file() => Some(
            std::fs::read_to_string(&answers_path)
                .map_err(|error| format!("cannot read {}: {error}", answers_path.display()))?,
        ),
        _ => None,
    };
    let name = path
        .file_stem()
        .map(|stem| {
            stem.to_string_lossy()
                .trim_start_matches("BFCL_v4_")
                .to_owned()
        })
        .unwrap_or_else(|| path.display().to_string());
    Ok(replay::replay(&[Category {
        name,
        tasks: &tasks,
        answers: answers.as_deref(),
    }])
    .await)
}
