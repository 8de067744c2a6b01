//! The module layering of the core's docs ("The map" in
//! `agent-loop-core/src/lib.rs`) is true: every `crate::` path in a module
//! of the core names its own module or one of a lower layer, and no module
//! is missing from the table. (Between the crates, Cargo keeps the layers:
//! a crate cannot import one that depends on it.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/agent-loop-core/src");

/// The sources of every published crate of the workspace: the core and
/// its satellites (the facade's `src/` re-exports only).
pub(crate) const CRATE_SOURCES: [&str; 3] = [
    SRC,
    concat!(env!("CARGO_MANIFEST_DIR"), "/agent-loop-providers/src"),
    concat!(env!("CARGO_MANIFEST_DIR"), "/agent-loop-mcp/src"),
];

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

pub(crate) fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable src dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
}

/// The code of a file without comments and without the contents of string
/// and char literals: `//` comments (line and doc) are cut where they start
/// outside a literal, and `/* */` comments are dropped.
pub(crate) fn code(text: &str) -> String {
    let mut code = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        // String contents are dropped (a `{` or `crate::` in a message is
        // not code); the quotes stay.
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    in_string = false;
                    code.push(c);
                }
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                code.push(c);
            }
            // A char literal (`'"'`, `'\''`); a lifetime (`'a`) has no
            // closing quote right after its first character.
            ('\'', Some(&next)) => {
                code.push(c);
                let mut lookahead = chars.clone();
                lookahead.next();
                let literal = next == '\\' || lookahead.peek() == Some(&'\'');
                if literal {
                    let mut escaped = false;
                    for inner in chars.by_ref() {
                        if inner == '\'' && !escaped {
                            code.push(inner);
                            break;
                        }
                        escaped = inner == '\\' && !escaped;
                    }
                }
            }
            ('/', Some('/')) => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        code.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut previous = ' ';
                for skipped in chars.by_ref() {
                    if previous == '*' && skipped == '/' {
                        break;
                    }
                    previous = skipped;
                }
            }
            _ => code.push(c),
        }
    }
    code
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The first segment of each path in a `{…}` group (nested groups
/// included): `{tool::{self, Tool}, bind::Bindings}` gives `tool`, `bind`.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut entry_start = true;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => entry_start = true,
            c if entry_start && !c.is_whitespace() => {
                entry_start = false;
                let head = ident(&group[at..]);
                if !head.is_empty() {
                    heads.push(head);
                }
            }
            _ => {}
        }
    }
    heads
}

/// The top module each path names, from a path's start after `crate::`
/// (or after enough `super::` to reach the crate root).
fn heads_after_root(after: &str) -> Vec<String> {
    match after.strip_prefix('{') {
        Some(group) => group_heads(group),
        None => vec![ident(after)],
    }
}

/// The top modules that `code` reaches through `crate::` paths, and through
/// `super::` chains that climb to the crate root. `depth` is the file's
/// module depth (1 for `src/bind/mod.rs` and `src/limits.rs`, 2 for
/// `src/bind/call.rs`); each inline `mod name { .. }` adds one inside it.
fn crate_paths(code: &str, depth: usize) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut braces = 0usize;
    // The brace depth at which each open inline module started.
    let mut inline_modules: Vec<usize> = Vec::new();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let boundary = at == 0 || {
            let before = bytes[at - 1];
            !(before.is_ascii_alphanumeric() || before == b'_' || before == b'$' || before == b'(')
        };
        if boundary && let Some(after) = rest.strip_prefix("crate::") {
            found.extend(heads_after_root(after));
            at += "crate::".len();
            continue;
        }
        if boundary && rest.starts_with("super::") {
            let mut climbed = 0;
            let mut after = rest;
            while let Some(next) = after.strip_prefix("super::") {
                climbed += 1;
                after = next;
            }
            if climbed >= depth + inline_modules.len() {
                found.extend(heads_after_root(after));
            }
            at += rest.len() - after.len();
            continue;
        }
        if boundary && let Some(after) = rest.strip_prefix("mod ") {
            let name = ident(after);
            let tail = after.trim_start()[name.len()..].trim_start();
            if !name.is_empty() && tail.starts_with('{') {
                inline_modules.push(braces);
            }
        }
        match bytes[at] {
            b'{' => braces += 1,
            b'}' => {
                braces = braces.saturating_sub(1);
                if inline_modules.last() == Some(&braces) {
                    inline_modules.pop();
                }
            }
            _ => {}
        }
        at += rest.chars().next().map_or(1, char::len_utf8);
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
        // `src/limits.rs` and `src/bind/mod.rs` are one level below the
        // root, `src/bind/call.rs` two.
        let mut depth = relative.components().count();
        if relative.ends_with("mod.rs") {
            depth -= 1;
        }
        for target in crate_paths(&code(&text), depth) {
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
fn crate_paths_are_read_from_plain_grouped_nested_and_super_paths() {
    let code = code(concat!(
        "use crate::tool::{self, Tool};\n",
        "use crate::{tool::{self}, bind::Bindings, session};\n",
        "pub(crate) fn f() {} // crate::turn\n",
        "const URL: &str = \"https://x\"; use crate::wire::X;\n",
        "/* crate::mode */ use super::super::definition::Y;\n",
        "use super::sibling::Z;\n",
        "let q = '\"'; let e = '\\''; fn f<'a>(x: &'a str) {} // crate::limits\n",
        "let s = \"{ crate::turn }\"; mod tests { use super::*; use super::super::super::mode::M; }\n",
    ));
    // From a file two levels down (`src/bind/call.rs`), `super::super::`
    // is the crate root; a single `super::` stays in the module.
    assert_eq!(
        crate_paths(&code, 2),
        [
            "tool",
            "tool",
            "bind",
            "session",
            "wire",
            "definition",
            "mode"
        ]
    );
}

/// A validated definition is what `validate` returned, computed once: no
/// module of `definition` hides a cache that a first bind fills (the
/// layout a bind uses is the `Validated` state's own).
#[test]
fn the_definition_module_holds_no_interior_cache() {
    let mut files = Vec::new();
    rust_files(&Path::new(SRC).join("definition"), &mut files);
    assert!(files.len() >= 5, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let code = code(&text);
        for cache in [
            "OnceLock", "OnceCell", "LazyLock", "Mutex", "RwLock", "Cell<",
        ] {
            assert!(!code.contains(cache), "{} uses `{cache}`", file.display());
        }
    }
}
