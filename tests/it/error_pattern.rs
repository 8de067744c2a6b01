//! The one error pattern the crate docs state ("One error pattern" in
//! `src/lib.rs`) holds: every error type is derived with `thiserror` and is
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
use crate::layers::{SRC, code, rust_files};

/// The public types of `src/` that are errors: those deriving
/// `thiserror::Error` or named `…Error`, with the attributes above them.
fn error_types() -> Vec<(String, String, String)> {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
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
                    .strip_prefix(SRC)
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
        assert!(
            attributes.contains("thiserror::Error"),
            "{file}: `{name}` is not derived with thiserror::Error"
        );
        assert!(
            attributes.contains("#[non_exhaustive]"),
            "{file}: `{name}` is not #[non_exhaustive]"
        );
    }
    // The one depth error is among them.
    assert!(errors.iter().any(|(_, name, _)| name == "TooDeep"));
}

#[test]
fn no_error_is_written_by_hand_and_no_message_names_its_source() {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable source");
        let code = code(&text);
        for needle in ["impl std::error::Error for", "impl Error for"] {
            assert!(
                !code.contains(needle),
                "{}: `{needle}`: derive thiserror::Error instead",
                file.display()
            );
        }
        // `code` drops string contents, so read the messages from the text.
        for line in text.lines().filter(|line| line.contains("#[error(")) {
            assert!(
                !line.contains("{source") && !line.contains(".source"),
                "{}: a message prints its source, which `source()` already returns: {line}",
                file.display()
            );
        }
    }
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
