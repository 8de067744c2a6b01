//! The module layering of the crate docs ("The map" in `src/lib.rs`) is
//! true: every `crate::` path in a module of `src/` names its own module or
//! one of a lower layer, and no module is missing from the table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Module name → layer, read from the table in the crate docs.
fn layer_table() -> BTreeMap<String, u32> {
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("src/lib.rs");
    let mut layers = BTreeMap::new();
    for line in lib.lines() {
        let Some(row) = line.strip_prefix("//! |") else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(layer) = cells.first().and_then(|cell| cell.parse::<u32>().ok()) else {
            continue;
        };
        let modules = cells.get(1).copied().unwrap_or("");
        for name in modules.split('`').skip(1).step_by(2) {
            layers.insert(name.to_owned(), layer);
        }
    }
    assert!(
        layers.len() >= 10,
        "the layer table was not found: {layers:?}"
    );
    layers
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// The code of a file without comments (line comments, doc comments and
/// string-free block comments are enough for this crate's sources).
fn code(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let line = match line.find("//") {
            // `//` inside a string literal (a URL) is rare in `crate::` lines;
            // cutting there only drops text after it.
            Some(at) => &line[..at],
            None => line,
        };
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The first module of every `crate::` path in `code`, including each
/// entry of a `crate::{a::X, b}` group.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        // `pub(crate)` and `$crate::` are not paths into this crate's modules.
        let before = &rest[..at];
        let is_path = !before.ends_with('(') && !before.ends_with('$');
        if is_path {
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for entry in group[..end].split(',') {
                    let name: String = entry
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        found.push(name);
                    }
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.push(name);
            }
        }
        rest = after;
    }
    found
}

#[test]
fn every_crate_path_goes_to_the_own_module_or_a_lower_layer() {
    let layers = layer_table();
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut violations = Vec::new();
    for file in files {
        let relative = file.strip_prefix(SRC).expect("under src");
        let first = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default();
        let module = first.trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        let Some(&own) = layers.get(module) else {
            violations.push(format!(
                "src/{}: module `{module}` is not in the layer table",
                relative.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("readable source");
        for target in crate_paths(&code(&text)) {
            if target == module {
                continue;
            }
            match layers.get(&target) {
                Some(&layer) if layer < own => {}
                Some(&layer) => violations.push(format!(
                    "src/{}: `{module}` (layer {own}) uses `crate::{target}` (layer {layer})",
                    relative.display()
                )),
                None => violations.push(format!(
                    "src/{}: `crate::{target}` is not a module of the table (use the module path, not a crate-root re-export)",
                    relative.display()
                )),
            }
        }
    }
    assert!(violations.is_empty(), "{violations:#?}");
}

#[test]
fn crate_paths_are_read_from_plain_and_grouped_uses() {
    let code = code(
        "use crate::tool::{self, Tool};\nuse crate::{bind::Bindings, session};\npub(crate) fn f() {} // crate::turn\n",
    );
    assert_eq!(crate_paths(&code), ["tool", "bind", "session"]);
}
