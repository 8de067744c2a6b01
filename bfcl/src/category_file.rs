//! One BFCL category file from disk: its answers and function docs found
//! where BFCL's own data keeps them, for `main.rs`'s `bfcl FILE`.

use std::collections::BTreeMap;
use std::path::Path;

use super::func_doc::CLASS_FILES;
use super::{Category, Report, Shape};

/// Replays one category file, with its answers when they are beside it
/// and the multi-turn function docs found in `func_doc` (default:
/// `multi_turn_func_doc/` beside the file).
///
/// Errors: a file that cannot be read; a `func_doc` that is not a
/// directory; a file none of whose lines is a task of a known shape (an
/// empty file, a possible-answer file given by mistake, another
/// benchmark's file): that is not a category file, and a report of N
/// failed lines would bury the reason.
pub async fn replay_file(path: &Path, func_doc: Option<&Path>) -> Result<Report, String> {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read {}: {error}", path.display()))
    };
    let tasks = read(path)?;
    let directory = path.parent().unwrap_or(Path::new("."));
    let answers_path = path
        .file_name()
        .map(|name| directory.join("possible_answer").join(name));
    let answers = match answers_path {
        Some(answers_path) if answers_path.is_file() => Some(read(&answers_path)?),
        _ => None,
    };
    // A folder given by hand must be there (a typo would otherwise fail
    // every multi-turn task); the default one may be absent (single-turn
    // files have none), and a task that needs it names where it looked.
    if let Some(func_doc) = func_doc
        && !func_doc.is_dir()
    {
        return Err(format!(
            "--func-doc {}: not a directory",
            func_doc.display()
        ));
    }
    let func_doc =
        func_doc.map_or_else(|| directory.join("multi_turn_func_doc"), Path::to_path_buf);
    let func_doc_dir = if func_doc.is_dir() {
        func_doc.display().to_string()
    } else {
        format!("{}, which does not exist", func_doc.display())
    };
    let mut func_docs = BTreeMap::new();
    for (_, file) in CLASS_FILES {
        let file_path = func_doc.join(file);
        if file_path.is_file() {
            func_docs.insert((*file).to_owned(), read(&file_path)?);
        }
    }
    let name = path
        .file_stem()
        .map(|stem| {
            stem.to_string_lossy()
                .trim_start_matches("BFCL_v4_")
                .to_owned()
        })
        .unwrap_or_else(|| path.display().to_string());
    let category = Category {
        func_docs: func_docs
            .iter()
            .map(|(file, text)| (file.clone(), text.as_str()))
            .collect(),
        func_doc_dir: Some(func_doc_dir),
        ..Category::new(name, &tasks, answers.as_deref())
    };
    let report = super::replay(&[category]).await;
    let known = report
        .categories
        .iter()
        .flat_map(|category| category.shapes.keys())
        .any(|shape| *shape != Shape::Unknown);
    if !known {
        let first = report
            .failures
            .first()
            .map(|failure| {
                format!(
                    " (first line: {}: {})",
                    failure.reason.label(),
                    failure.detail
                )
            })
            .unwrap_or_default();
        return Err(format!(
            "{}: not a BFCL category file: no line is a task with a `function` array \
             (single-turn) or `involved_classes` (multi-turn){first}",
            path.display()
        ));
    }
    Ok(report)
}
