//! The one error pattern the crate docs state ("One error pattern" in
//! `agent-loop-core/docs/errors.md`) holds: every error type is derived with `thiserror` and is
//! `#[non_exhaustive]`, none implements `Error` by hand, no message names
//! its source, and the errors a user meets print their cause once, in
//! `source()`, never in their own `Display`.

use std::error::Error;
use std::path::Path;

use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::{Message, ToolResult};
use agent_loop::middleware::{Next, Refusal, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{self, BoxError, ToolInfo, ToolOutput};
use agent_loop::turn::{Output, ScriptedModel};
use agent_loop::{Definition, TooDeep};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{bindings, tool_factory};
use crate::layers::{CRATE_SOURCES, code, rust_files};

/// The public types of the crates' sources that are errors: those deriving
/// `thiserror::Error` or named `…Error`, with the attributes above them.
fn error_types() -> Vec<(String, String, String)> {
    let mut files = Vec::new();
    for src in CRATE_SOURCES {
        rust_files(Path::new(src), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let Some(rest) = line
                .trim_start()
                .strip_prefix("pub struct ")
                .or_else(|| line.trim_start().strip_prefix("pub enum "))
            else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // The attributes and doc lines right above the item.
            let attributes: Vec<&str> = lines[..at]
                .iter()
                .rev()
                // Up to the blank line or the closing brace before it.
                .take_while(|line| {
                    let line = line.trim();
                    !line.is_empty() && !line.starts_with('}')
                })
                .copied()
                .collect();
            let attributes = attributes.join("\n");
            if attributes.contains("thiserror::Error") || name.ends_with("Error") {
                let path = file
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                found.push((path, name, attributes));
            }
        }
    }
    found
}

#[test]
fn every_public_error_is_derived_with_thiserror_and_non_exhaustive() {
    let errors = error_types();
    assert!(
        errors.len() >= 20,
        "the scan found too few errors: {errors:?}"
    );
    for (file, name, attributes) in &errors {
        let attribute_lines: Vec<&str> = attributes
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with("#["))
            .collect();
        assert!(
            attribute_lines
                .iter()
                .any(|line| line.starts_with("#[derive(") && line.contains("thiserror::Error")),
            "{file}: `{name}` is not derived with thiserror::Error"
        );
        assert!(
            attribute_lines.contains(&"#[non_exhaustive]"),
            "{file}: `{name}` is not #[non_exhaustive]"
        );
    }
    // The scan reads what it should: the errors every user meets are found.
    for name in [
        "BindError",
        "DefinitionError",
        "ToolCallError",
        "TurnError",
        "ModelError",
        "WireError",
        "OutputError",
        "ConversationError",
        "TooDeep",
    ] {
        assert!(
            errors.iter().any(|(_, found, _)| found == name),
            "the scan missed `{name}`: {errors:?}"
        );
    }
}

/// The trait of every `impl … for …` in `code`, its path as written
/// (`std::error::Error`, `fmt::Display`), whitespace folded.
fn implemented_traits(code: &str) -> Vec<String> {
    let folded = code.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut traits = Vec::new();
    for (at, _) in folded.match_indices("impl") {
        let before_ok =
            at == 0 || !folded[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let rest = &folded[at + "impl".len()..];
        if !before_ok || !rest.starts_with([' ', '<']) {
            continue;
        }
        // Skip the impl's generics, `<…>` with nesting.
        let mut depth = 0usize;
        let mut start = 0;
        for (index, c) in rest.char_indices() {
            match c {
                '<' => depth += 1,
                '>' => depth = depth.saturating_sub(1),
                _ if depth == 0 && !c.is_whitespace() => {
                    start = index;
                    break;
                }
                _ => {}
            }
        }
        let head = &rest[start..];
        let Some(end) = head.find(['{', ';']) else {
            continue;
        };
        if let Some((trait_path, _)) = head[..end].split_once(" for ") {
            traits.push(trait_path.trim().to_owned());
        }
    }
    traits
}

/// Every `#[error(…)]` attribute of `text`, whole when it spans lines.
fn error_attributes(text: &str) -> Vec<String> {
    let mut attributes = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[error(") {
        let mut depth = 0usize;
        let mut end = rest.len();
        for (index, c) in rest[at + 1..].char_indices() {
            match c {
                '[' | '(' => depth += 1,
                ']' | ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + 1 + index + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        attributes.push(rest[at..end].to_owned());
        rest = &rest[end..];
    }
    attributes
}

#[test]
fn no_error_is_written_by_hand_and_no_message_names_its_source() {
    let mut files = Vec::new();
    for src in CRATE_SOURCES {
        rust_files(Path::new(src), &mut files);
    }
    let mut messages = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        for trait_path in implemented_traits(&code(&text)) {
            let last = trait_path.rsplit("::").next().unwrap_or(&trait_path);
            // serde's `de::Error` is a constructor trait, not an error.
            let serde = trait_path.starts_with("de::") || trait_path.starts_with("serde::");
            assert!(
                last != "Error" || serde,
                "{}: `impl {trait_path} for`: derive thiserror::Error instead",
                file.display()
            );
        }
        // `code` drops string contents, so read the messages from the text.
        for attribute in error_attributes(&text) {
            messages += 1;
            assert!(
                !attribute.contains("{source") && !attribute.contains(".source"),
                "{}: a message prints its source, which `source()` already returns: {attribute}",
                file.display()
            );
        }
    }
    assert!(messages > 50, "the scan found {messages} #[error] messages");
}

#[test]
fn the_scans_find_what_they_look_for() {
    assert_eq!(
        implemented_traits("impl<T: Clone> std::error::Error\n for Wrapper<T> {}"),
        ["std::error::Error"]
    );
    assert_eq!(
        implemented_traits("impl fmt::Display for A { } impl B { } impl de::Error for C { }"),
        ["fmt::Display", "de::Error"]
    );
    assert_eq!(
        error_attributes("#[error(\n    \"a {source}\",\n    .kind\n)]\nstruct A;"),
        ["#[error(\n    \"a {source}\",\n    .kind\n)]"]
    );
}

/// Refuses `guarded`, fails for `audited`, passes every other call on.
struct Policy;

#[async_trait::async_trait]
impl ToolMiddleware for Policy {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        match call.context.tool_name() {
            "guarded" => Err(Refusal::new("not in this session").into()),
            "audited" => Err("the audit log is down".into()),
            _ => next.run(call).await,
        }
    }
}

fn failing(name: &str) -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::without_parameters(name, "Fails."),
        |_arguments: Value, _context| async move {
            Err::<ToolOutput, BoxError>("the disk is full".into())
        },
    )
}

fn deep() -> Value {
    (0..200).fold(json!(1), |inner, _| json!([inner]))
}

/// `error`'s Display holds none of its causes' lines.
fn cause_printed_once(error: &(dyn Error + 'static)) {
    let line = error.to_string();
    let mut cause = error.source();
    assert!(cause.is_some(), "`{line}` has no source to check");
    while let Some(current) = cause {
        let cause_line = current.to_string();
        assert!(
            !line.contains(&cause_line),
            "`{line}` repeats its cause `{cause_line}`"
        );
        cause = current.source();
    }
}

#[tokio::test]
async fn errors_with_a_cause_print_it_once() {
    let session = Definition::builder()
        .name("agent")
        .tools([failing("broken"), failing("guarded"), failing("audited")])
        .middleware(Policy)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let mut checked = Vec::new();
    for (name, arguments, kind) in [
        ("broken", json!({}), ToolCallErrorKind::ToolFailed),
        ("guarded", json!({}), ToolCallErrorKind::Refused),
        ("audited", json!({}), ToolCallErrorKind::MiddlewareFailed),
        (
            "broken",
            json!({ "a": deep() }),
            ToolCallErrorKind::ArgumentsTooDeep,
        ),
    ] {
        let error = session.invoke(name, arguments).await.unwrap_err();
        assert_eq!(error.kind, kind);
        cause_printed_once(&error);
        checked.push(error.kind);
    }

    // A factory's error, at bind.
    let factory = tool_factory("flaky", |_session| async {
        Err::<crate::common::EchoTool, BoxError>("the registry is unreachable".into())
    });
    let error = Definition::builder()
        .name("agent")
        .tool(factory)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap_err();
    cause_printed_once(&error);

    // A conversation a turn refuses, and the model's error of a turn.
    let model = ScriptedModel::new([]);
    let mut orphan = vec![
        Message::user("hi"),
        Message::tool_result(ToolResult::ok("call_9", "stray")),
    ];
    let error = session
        .run_turn(&model, &mut orphan, &CancellationToken::new())
        .await
        .unwrap_err();
    cause_printed_once(&error);
    let error = session
        .run_turn(
            &model,
            &mut vec![Message::user("hi")],
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    cause_printed_once(&error);

    // The depth refusals outside a call.
    let wrapped = json!({ "a": deep() });
    cause_printed_once(&agent_loop::wire::openai::parse_tools(&wrapped).unwrap_err());
    cause_printed_once(&Output::from_schema("deep", "", wrapped).unwrap_err());
    assert_eq!(TooDeep::LIMIT, 128);
    assert_eq!(checked.len(), 4);
}
