//! BFCL replay: thousands of real tool declarations and ground-truth calls
//! from the Berkeley Function Calling Leaderboard, through the whole
//! library.
//!
//! For each task: the declarations become valid `ToolInfo`s (sanitised
//! names, JSON Schema types; Java and JavaScript parameters as strings
//! holding that language's literal, as BFCL sends them), echo tools are
//! bound to a fresh session, a model answering real OpenAI
//! `chat.completion` bodies asks for the ground-truth calls, and the replay
//! checks that every call ran, passed its schema and reached its tool with
//! the ground-truth arguments. A single-turn task is one batch; a
//! multi-turn task is one conversation with one `run_turn` per user turn,
//! a function withheld until a later turn joining through a mode.
//!
//! ```text
//! cargo run --release -p bfcl                   # embedded: 8 categories, 1,550 tasks
//! cargo run --release -p bfcl -- FILE.json      # any BFCL category file
//! cargo run --release -p bfcl -- --func-doc DIR FILE.json  # multi-turn docs elsewhere
//! cargo run --release -p bfcl -- --json [FILE]  # the report as one JSON object
//! ```
//!
//! With a file, its answers are read from `possible_answer/<same name>`
//! beside it; without one (`irrelevance`) every task must call no tool, but
//! for `relevance` (any call is right) each task is not replayable.
//! Multi-turn function docs are read from `--func-doc DIR` (a folder that
//! must exist; only with a FILE), by default `multi_turn_func_doc/` beside
//! the file. The language of single-turn
//! declarations follows the file name (`simple_java`, `simple_javascript`),
//! as in BFCL. The exit status is 0 when the replay ran (failed tasks are
//! findings, listed in the report), 2 for a usage or I/O error or a file
//! none of whose lines is a task of a known shape.

use bfcl as replay;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: bfcl [--json] [--func-doc DIR] [BFCL_v4_<category>.json]";

#[tokio::main]
async fn main() -> ExitCode {
    let mut json = false;
    let mut path: Option<PathBuf> = None;
    let mut func_doc: Option<PathBuf> = None;
    let mut arguments = std::env::args_os().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.to_str() {
            Some("--json") => json = true,
            Some("--func-doc") => match arguments.next() {
                Some(directory) => func_doc = Some(PathBuf::from(directory)),
                None => {
                    eprintln!("`--func-doc` needs a directory\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
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
        None if func_doc.is_some() => {
            eprintln!(
                "`--func-doc` goes with a category file (the embedded default has its own)\n{USAGE}"
            );
            return ExitCode::from(2);
        }
        None => replay::replay(&replay::embedded()).await,
        Some(path) => match replay::category_file::replay_file(&path, func_doc.as_deref()).await {
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
