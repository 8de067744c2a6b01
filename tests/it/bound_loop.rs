//! The bound loop (DESIGN.md section 7): modes, the current mode, and
//! invoking one tool by name.

use std::error::Error as _;

use crate::common::{Counter, bindings, counted, names};
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::middleware::{Next, Refusal, ToolFailed, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{self, BoxError, ToolInfo, ToolOutput};
use agent_loop::{Bound, Definition, Mode};
use async_trait::async_trait;
use serde_json::{Value, json};

async fn bound_with_modes() -> Definition<Bound> {
    let counter = Counter::new();
    Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .instructions("Base instructions.")
        .mode(
            Mode::new("review")
                .tool(counted("read", &counter))
                .instructions("Read only."),
        )
        .mode(Mode::new("write").tool(counted("edit", &counter)))
        .mode(Mode::new("inherit"))
        .initial_mode("write")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap()
}

#[tokio::test]
async fn modes_lists_base_first_then_declared_order() {
    let bound = bound_with_modes().await;
    let modes: Vec<Option<String>> = bound.modes().into_iter().map(|m| m.name).collect();
    assert_eq!(
        modes,
        [
            None,
            Some("review".to_owned()),
            Some("write".to_owned()),
            Some("inherit".to_owned())
        ]
    );
}

#[tokio::test]
async fn mode_by_name_has_its_tools_and_instructions() {
    let bound = bound_with_modes().await;
    let review = bound.mode("review").expect("declared");
    assert_eq!(review.name.as_deref(), Some("review"));
    assert_eq!(names(&review.tools), ["read"]);
    assert_eq!(review.instructions.as_deref(), Some("Read only."));
    assert_eq!(
        bound.base_mode().instructions.as_deref(),
        Some("Base instructions.")
    );
    assert!(bound.mode("nope").is_none());
}

#[tokio::test]
async fn mode_without_tools_inherits_base_tools() {
    let bound = bound_with_modes().await;
    let inherit = bound.mode("inherit").unwrap();
    assert_eq!(names(&inherit.tools), ["search"]);
    assert!(inherit.tools[0].same_instance(&bound.base_mode().tools[0]));
}

#[tokio::test]
async fn initial_mode_is_current_after_bind() {
    let bound = bound_with_modes().await;
    assert_eq!(bound.current_mode().name.as_deref(), Some("write"));
    assert_eq!(names(&bound.tools()), ["edit"]);
}

#[tokio::test]
async fn without_modes_the_base_mode_is_current() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert_eq!(bound.current_mode().name, None);
    assert_eq!(bound.modes().len(), 1);
    assert_eq!(names(&bound.tools()), ["search"]);
}

#[tokio::test]
async fn set_current_mode_switches_tools() {
    let mut bound = bound_with_modes().await;
    bound.set_current_mode(Some("review")).unwrap();
    assert_eq!(bound.current_mode().name.as_deref(), Some("review"));
    assert_eq!(names(&bound.tools()), ["read"]);
    assert!(bound.tool("read").is_some());
    assert!(bound.tool("edit").is_none());
    bound.set_current_mode(None).unwrap();
    assert_eq!(bound.current_mode().name, None);
    assert_eq!(names(&bound.tools()), ["search"]);
}

#[tokio::test]
async fn unknown_mode_is_an_error_and_leaves_the_current_mode() {
    let mut bound = bound_with_modes().await;
    let error = bound.set_current_mode(Some("reveiw")).unwrap_err();
    assert_eq!(error.name, "reveiw");
    assert!(error.available.contains("review"), "{error}");
    assert_eq!(bound.current_mode().name.as_deref(), Some("write"));
    assert_eq!(names(&bound.tools()), ["edit"]);
}

#[tokio::test]
async fn invoke_runs_the_named_tool_of_the_current_mode() {
    let bound = bound_with_modes().await;
    let output = bound.invoke("edit", json!({"path": "a.rs"})).await.unwrap();
    assert_eq!(
        output,
        json!({"tool": "edit", "arguments": {"path": "a.rs"}})
    );
}

#[tokio::test]
async fn invoking_a_tool_of_another_mode_is_unknown_tool() {
    let bound = bound_with_modes().await;
    let error = bound.invoke("read", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::UnknownTool);
    assert_eq!(error.tool_name, "read");
    assert!(
        error.message.contains("edit"),
        "the message lists the available tools: {}",
        error.message
    );
    let error = bound.invoke("nothing", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::UnknownTool);
}

#[tokio::test]
async fn a_handle_runs_in_the_mode_it_was_taken_from() {
    // One tool in every mode, answering the mode its call context names.
    let mode_of_call = tool::Definition::from_fn(
        ToolInfo::without_parameters("mode_of_call", "The call's mode."),
        |_arguments: Value, context| async move { Ok::<_, BoxError>(json!(context.mode())) },
    );
    let bound = Definition::builder()
        .name("agent")
        .tool(&mode_of_call)
        .mode(Mode::new("review"))
        .mode(Mode::new("write"))
        .initial_mode("write")
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let review = bound.mode("review").unwrap().tools;
    assert_eq!(review[0].invoke(json!({})).await.unwrap(), json!("review"));
    let base = bound.base_mode().tools;
    assert_eq!(base[0].invoke(json!({})).await.unwrap(), json!(null));
    // The current mode's handles and `invoke` by name run in the current mode.
    assert_eq!(
        bound.tools()[0].invoke(json!({})).await.unwrap(),
        json!("write")
    );
    assert_eq!(
        bound
            .tool("mode_of_call")
            .unwrap()
            .invoke(json!({}))
            .await
            .unwrap(),
        json!("write")
    );
    assert_eq!(
        bound.invoke("mode_of_call", json!({})).await.unwrap(),
        json!("write")
    );
}

fn weather() -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::new(
            "weather",
            "Weather for a city.",
            json!({
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
                "required": ["city"]
            }),
        ),
        |arguments: Value, _context| async move {
            Ok::<_, BoxError>(json!(format!(
                "sunny in {}",
                arguments["city"].as_str().unwrap_or("?")
            )))
        },
    )
}

async fn bound_one(definition: tool::Definition) -> Definition<Bound> {
    Definition::builder()
        .name("agent")
        .tool(definition)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap()
}

#[tokio::test]
async fn arguments_failing_the_schema_are_invalid_arguments_naming_the_field() {
    let bound = bound_one(weather()).await;
    let error = bound
        .invoke("weather", json!({"city": "Paris", "days": "three"}))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::InvalidArguments);
    assert!(error.message.contains("days"), "{}", error.message);

    let error = bound
        .invoke("weather", json!({"days": 2}))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::InvalidArguments);
    assert!(error.message.contains("city"), "{}", error.message);

    assert_eq!(
        bound
            .invoke("weather", json!({"city": "Paris"}))
            .await
            .unwrap(),
        json!("sunny in Paris")
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_refused() {
    let bound = bound_one(weather()).await;
    for arguments in [json!(null), json!([1]), json!("city")] {
        let error = bound
            .invoke("weather", arguments.clone())
            .await
            .unwrap_err();
        assert_eq!(
            error.kind,
            ToolCallErrorKind::ArgumentsNotObject,
            "{arguments}"
        );
    }
}

#[derive(Debug, thiserror::Error)]
#[error("disk full")]
struct DiskFull;

#[tokio::test]
async fn tool_error_is_tool_failed_with_its_source() {
    let bound = bound_one(tool::Definition::from_fn(
        ToolInfo::without_parameters("save", "Saves."),
        |_arguments: Value, _context| async { Err::<Value, _>(DiskFull) },
    ))
    .await;
    let error = bound.invoke("save", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::ToolFailed);
    assert!(error.message.contains("disk full"), "{}", error.message);
    assert!(
        error
            .source()
            .and_then(|s| s.downcast_ref::<DiskFull>())
            .is_some()
    );
}

#[tokio::test]
async fn panicking_tool_is_tool_panicked() {
    let bound = bound_one(tool::Definition::from_fn(
        ToolInfo::without_parameters("crash", "Crashes."),
        |_arguments: Value, _context| async {
            if true {
                panic!("tool exploded");
            }
            Ok::<Value, BoxError>(Value::Null)
        },
    ))
    .await;
    let error = bound.invoke("crash", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::ToolPanicked);
    assert!(error.message.contains("tool exploded"), "{}", error.message);
    // The binding is still usable after the panic.
    let again = bound.invoke("crash", json!({})).await.unwrap_err();
    assert_eq!(again.kind, ToolCallErrorKind::ToolPanicked);
}

struct Explodes;

#[async_trait]
impl ToolMiddleware for Explodes {
    async fn handle(&self, _call: ToolInvocation, _next: Next<'_>) -> Result<ToolOutput, BoxError> {
        panic!("middleware exploded")
    }
}

#[tokio::test]
async fn panicking_middleware_is_middleware_panicked() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .middleware(Explodes)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let error = bound.invoke("search", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::MiddlewarePanicked);
    assert!(
        error.message.contains("middleware exploded"),
        "{}",
        error.message
    );
    let handle = bound.tool("search").unwrap();
    let error = handle.invoke(json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::MiddlewarePanicked);
}

#[tokio::test]
async fn tools_see_the_session_loop_mode_and_tool_name() {
    let definition = tool::Definition::from_fn(
        ToolInfo::without_parameters("whoami", "Says who calls."),
        |_arguments: Value, context| async move {
            Ok::<_, BoxError>(json!({
                "session": context.session_id().to_string(),
                "loop": context.loop_id().to_string(),
                "mode": context.mode(),
                "tool": context.tool_name(),
                "tool_call_id": context.tool_call_id(),
                "description": context.tool_info().description,
            }))
        },
    );
    let b = bindings();
    let (session, loop_id) = (b.session_id(), b.loop_id());
    let bound = Definition::builder()
        .name("agent")
        .tool(definition)
        .mode(Mode::new("quiet"))
        .initial_mode("quiet")
        .build()
        .validate()
        .unwrap()
        .bind(b)
        .await
        .unwrap();
    let output = bound.invoke("whoami", json!({})).await.unwrap();
    assert_eq!(
        output,
        json!({
            "session": session.to_string(),
            "loop": loop_id.to_string(),
            "mode": "quiet",
            "tool": "whoami",
            "tool_call_id": "",
            "description": "Says who calls.",
        })
    );
}

/// Refuses every call without running the tool.
struct RefuseWrites;

#[async_trait]
impl ToolMiddleware for RefuseWrites {
    async fn handle(&self, _call: ToolInvocation, _next: Next<'_>) -> Result<ToolOutput, BoxError> {
        Err(Refusal::new("writes are disabled in this session").into())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the audit log is unreachable")]
struct AuditLogDown;

/// Fails every call with an error of its own.
struct Audit;

#[async_trait]
impl ToolMiddleware for Audit {
    async fn handle(&self, _call: ToolInvocation, _next: Next<'_>) -> Result<ToolOutput, BoxError> {
        Err(AuditLogDown.into())
    }
}

#[derive(Debug, thiserror::Error)]
#[error("the policy layer stopped the call")]
struct PolicyLayer(#[source] BoxError);

/// Wraps whatever the inner chain returns in an error of its own.
struct Wrapping;

#[async_trait]
impl ToolMiddleware for Wrapping {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        next.run(call)
            .await
            .map_err(|inner| PolicyLayer(inner).into())
    }
}

/// Passes every call and every error through unchanged.
struct PassThrough;

#[async_trait]
impl ToolMiddleware for PassThrough {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        next.run(call).await
    }
}

/// `save`, which fails with [`DiskFull`], behind `middleware`.
async fn save_behind(middleware: impl ToolMiddleware) -> Definition<Bound> {
    Definition::builder()
        .name("agent")
        .tool(tool::Definition::from_fn(
            ToolInfo::without_parameters("save", "Saves."),
            |_arguments: Value, _context| async { Err::<Value, _>(DiskFull) },
        ))
        .middleware(middleware)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap()
}

/// The error of `save` through `Definition::invoke` and through its
/// `ToolHandle`, which must agree on the kind and the message.
async fn both_invokes(bound: &Definition<Bound>) -> agent_loop::bind::ToolCallError {
    let by_name = bound.invoke("save", json!({})).await.unwrap_err();
    let by_handle = bound
        .tool("save")
        .unwrap()
        .invoke(json!({}))
        .await
        .unwrap_err();
    assert_eq!(by_name.kind, by_handle.kind);
    assert_eq!(by_name.message, by_handle.message);
    assert_eq!(by_name.tool_name, "save");
    by_name
}

#[tokio::test]
async fn invoke_reports_a_middleware_refusal_as_refused_with_the_refusal_as_source() {
    let error = both_invokes(&save_behind(RefuseWrites).await).await;
    assert_eq!(error.kind, ToolCallErrorKind::Refused);
    // The model reads why; the operator's line leaves the cause to
    // `source()`, so a reporter prints it once.
    assert_eq!(
        error.message,
        "the call to `save` was refused: writes are disabled in this session"
    );
    assert_eq!(error.to_string(), "the call to `save` was refused");
    assert_eq!(
        error.source().and_then(|s| s.downcast_ref::<Refusal>()),
        Some(&Refusal::new("writes are disabled in this session"))
    );
}

#[tokio::test]
async fn a_refusal_wrapped_by_an_outer_middleware_is_still_refused() {
    let bound = Definition::builder()
        .name("tools")
        .tool(tool::Definition::from_fn(
            ToolInfo::without_parameters("save", "Saves."),
            |_arguments: Value, _context| async { Ok::<_, BoxError>(json!("saved")) },
        ))
        .middleware(Wrapping)
        .middleware(RefuseWrites)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let error = both_invokes(&bound).await;
    assert_eq!(error.kind, ToolCallErrorKind::Refused);
    // The model reads why; the operator's line leaves the cause to
    // `source()`, so a reporter prints it once.
    assert_eq!(
        error.message,
        "the call to `save` was refused: writes are disabled in this session"
    );
    assert_eq!(error.to_string(), "the call to `save` was refused");
    assert!(
        error
            .source()
            .is_some_and(|s| s.downcast_ref::<PolicyLayer>().is_some())
    );
}

#[tokio::test]
async fn invoke_reports_a_middleware_error_as_middleware_failed_with_it_as_source() {
    let error = both_invokes(&save_behind(Audit).await).await;
    assert_eq!(error.kind, ToolCallErrorKind::MiddlewareFailed);
    assert_eq!(
        error.message,
        "the call to `save` failed in a middleware: the audit log is unreachable"
    );
    assert_eq!(
        error.to_string(),
        "the call to `save` failed in a middleware"
    );
    assert!(
        error
            .source()
            .is_some_and(|s| s.downcast_ref::<AuditLogDown>().is_some())
    );
}

#[tokio::test]
async fn invoke_keeps_a_tool_error_through_a_pass_through_middleware_as_tool_failed() {
    let error = both_invokes(&save_behind(PassThrough).await).await;
    assert_eq!(error.kind, ToolCallErrorKind::ToolFailed);
    assert_eq!(error.message, "the tool `save` failed: disk full");
    assert_eq!(error.to_string(), "the tool `save` failed");
    assert!(
        error
            .source()
            .is_some_and(|s| s.downcast_ref::<DiskFull>().is_some()),
        "the source is the tool's own error"
    );
}

/// Checks that the error it gets from below is the tool's, wrapped in
/// `ToolFailed`, and passes it up.
struct ExpectsToolFailed;

#[async_trait]
impl ToolMiddleware for ExpectsToolFailed {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        let error = next.run(call).await.unwrap_err();
        let failed = error
            .downcast_ref::<ToolFailed>()
            .expect("a tool error reaches a middleware as ToolFailed");
        assert_eq!(failed.tool_name, "save");
        assert!(failed.source().is_some_and(|s| s.is::<DiskFull>()));
        Err(error)
    }
}

#[tokio::test]
async fn a_middleware_sees_a_tool_error_as_tool_failed_with_the_tool_error_as_source() {
    let error = both_invokes(&save_behind(ExpectsToolFailed).await).await;
    assert_eq!(error.kind, ToolCallErrorKind::ToolFailed);
}

#[tokio::test]
async fn each_direct_invocation_has_its_own_cancellation_token() {
    // The tool cancels the token it is given and says whether it was
    // already cancelled: a token shared between direct invocations would
    // arrive cancelled the second time.
    let definition = tool::Definition::from_fn(
        ToolInfo::without_parameters("cancel_me", "Cancels its own token."),
        |_arguments: Value, context| async move {
            let token = context.cancellation();
            let was_cancelled = token.is_cancelled();
            token.cancel();
            Ok::<_, BoxError>(json!({
                "was_cancelled": was_cancelled,
                "now_cancelled": context.cancellation().is_cancelled(),
            }))
        },
    );
    let bound = Definition::builder()
        .name("agent")
        .tool(definition)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    for _ in 0..2 {
        let output = bound.invoke("cancel_me", json!({})).await.unwrap();
        assert_eq!(
            output,
            json!({"was_cancelled": false, "now_cancelled": true})
        );
    }
}
