//! A turn's calls and direct calls go through one pipeline: for the same
//! call, `run_tool_call` gives the result and statistics a turn appends
//! (all but the wall time), for success, a cut to `result_bytes`, and every
//! kind of failure a call can have outside a turn's batch rules; and
//! `invoke` fails with the same kind.

use std::time::Duration;

use agent_loop::bind::{CallStats, ToolCallErrorKind};
use agent_loop::conversation::{Message, ToolCall, ToolResult};
use agent_loop::middleware::{Next, Refusal, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{self, BoxError, ToolInfo, ToolOutput};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Bound, Definition, ToolLimits};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::turn_common::{answer, batch, bind, quiet_expected_panics};

/// Refuses `guarded`, fails for `broken_middleware`, panics for
/// `panicking_middleware`, passes every other call on.
struct Policy;

#[async_trait::async_trait]
impl ToolMiddleware for Policy {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        match call.context.tool_name() {
            "guarded" => Err(Refusal::new("not in this session").into()),
            "broken_middleware" => Err("the audit log is down".into()),
            "panicking_middleware" => panic!("the policy middleware broke"),
            _ => next.run(call).await,
        }
    }
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"]
    })
}

/// A tool named `name` taking `{"city"}` that answers what `answer` gives.
fn tool(name: &str, answer: fn(Value) -> Result<ToolOutput, BoxError>) -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::new(name, "A test tool.", schema()),
        move |arguments: Value, _context| async move { answer(arguments) },
    )
}

fn deep() -> Value {
    (0..200).fold(json!(1), |inner, _| json!([inner]))
}

async fn session() -> Definition<Bound> {
    let pass = |arguments: Value| Ok(arguments["city"].clone().into());
    let definition = Definition::builder()
        .name("pipeline")
        .tools([
            tool("weather", pass),
            tool("long", |_| Ok(json!("x".repeat(5_000)).into())),
            tool("failing", |_| Err("the weather service is down".into())),
            tool("panicking", |_| panic!("the tool broke")),
            tool("deep", |_| Ok(deep().into())),
            tool("guarded", pass),
            tool("broken_middleware", pass),
            tool("panicking_middleware", pass),
        ])
        .middleware(Policy)
        .tool_limits(ToolLimits::new().result_bytes(256))
        .build()
        .validate()
        .expect("valid");
    bind(&definition).await
}

/// Every case: the call and the kind it must end with.
fn cases() -> Vec<(ToolCall, Option<ToolCallErrorKind>)> {
    let city = r#"{"city": "Paris"}"#;
    [
        ("weather", city, None),
        ("long", city, None),
        ("nope", city, Some(ToolCallErrorKind::UnknownTool)),
        (
            "weather",
            r#"{"city": "#,
            Some(ToolCallErrorKind::ArgumentsNotJson),
        ),
        (
            "weather",
            "[1]",
            Some(ToolCallErrorKind::ArgumentsNotObject),
        ),
        (
            "weather",
            r#"{"city": 7}"#,
            Some(ToolCallErrorKind::InvalidArguments),
        ),
        ("failing", city, Some(ToolCallErrorKind::ToolFailed)),
        ("panicking", city, Some(ToolCallErrorKind::ToolPanicked)),
        ("deep", city, Some(ToolCallErrorKind::OutputTooDeep)),
        ("guarded", city, Some(ToolCallErrorKind::Refused)),
        (
            "broken_middleware",
            city,
            Some(ToolCallErrorKind::MiddlewareFailed),
        ),
        (
            "panicking_middleware",
            city,
            Some(ToolCallErrorKind::MiddlewarePanicked),
        ),
    ]
    .into_iter()
    .enumerate()
    .map(|(index, (name, arguments, kind))| {
        (
            ToolCall::new(format!("call_{index}"), name, arguments),
            kind,
        )
    })
    .collect()
}

/// The result and statistics a turn gives `call`, its wall time zeroed.
async fn in_a_turn(session: &Definition<Bound>, call: &ToolCall) -> (ToolResult, CallStats) {
    let model = ScriptedModel::new([batch([call.clone()]), answer("done")]);
    let mut conversation = vec![Message::user("go")];
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn completes");
    let result = conversation
        .iter()
        .find_map(Message::as_tool_result)
        .expect("the call's result")
        .clone();
    let mut stats = outcome.stats.iterations[0].calls[0].clone();
    stats.duration = Duration::ZERO;
    (result, stats)
}

#[tokio::test]
async fn a_direct_call_gives_what_a_turn_gives_for_every_kind() {
    quiet_expected_panics();
    let session = session().await;
    for (call, kind) in cases() {
        let (result, stats) = in_a_turn(&session, &call).await;
        let direct = session.run_tool_call(&call).await;
        let mut direct_stats = direct.stats.clone();
        direct_stats.duration = Duration::ZERO;
        assert_eq!(direct.result, result, "{call:?}");
        assert_eq!(direct_stats, stats, "{call:?}");
        assert_eq!(stats.error, kind, "{call:?}: {}", result.text());
        assert_eq!(result.is_error, kind.is_some());
        assert!(
            result.text().len() <= 256,
            "{call:?} is cut to result_bytes"
        );
    }
}

#[tokio::test]
async fn invoke_fails_with_the_kind_a_call_has() {
    quiet_expected_panics();
    let session = session().await;
    for (call, kind) in cases() {
        // `invoke` takes a value: text that is no JSON object has no
        // counterpart.
        let Ok(arguments) = serde_json::from_str::<Value>(&call.arguments) else {
            continue;
        };
        let invoked = session.invoke(&call.name, arguments).await;
        assert_eq!(
            invoked.as_ref().err().map(|error| error.kind),
            kind,
            "{call:?}"
        );
        if let Ok(output) = invoked {
            // The raw output: a turn cuts it for the model, invoke does not.
            let turn = session.run_tool_call(&call).await;
            assert!(output.text().len() >= turn.result.text().len());
            assert_eq!(turn.stats.result_bytes, output.text().len());
        }
    }
    let error = session
        .invoke("weather", json!({"city": deep()}))
        .await
        .expect_err("too deep");
    assert_eq!(error.kind, ToolCallErrorKind::ArgumentsTooDeep);
}

/// `screenshot`'s schema marks a defaulted property `required`, as Zod's
/// do; the tool returns the arguments it received.
fn screenshot_info(name: &str) -> ToolInfo {
    ToolInfo::new(
        name,
        "Takes a screenshot.",
        json!({
            "type": "object",
            "properties": {
                "format": {"type": "string", "enum": ["png", "jpeg"], "default": "png"}
            },
            "required": ["format"]
        }),
    )
}

/// A call leaving out a required property with a `default` is refused
/// unless the definition declares that what runs its calls fills defaults
/// in (`tool::Definition::fills_defaults`, read at bind): for a one-tool
/// definition and for a bundle alike. The arguments reach the tool as
/// sent, a given value is still checked, and the model still sees the
/// schema as declared.
#[tokio::test]
async fn a_definition_that_fills_defaults_lets_a_defaulted_required_property_be_left_out() {
    let one = |name: &str| {
        tool::Definition::from_fn(screenshot_info(name), |arguments: Value, _| async move {
            Ok::<_, BoxError>(arguments)
        })
    };
    let bundle = |name: &'static str| {
        tool::Definition::bundle("bundle", [name], move |_session| async move {
            let tool: std::sync::Arc<dyn tool::Tool> =
                std::sync::Arc::new(Returns(screenshot_info(name)));
            Ok::<_, BoxError>(vec![tool])
        })
    };
    let strict = bound([one("one"), bundle("many")]).await;
    for name in ["one", "many"] {
        let error = strict.invoke(name, json!({})).await.unwrap_err();
        assert_eq!(error.kind, ToolCallErrorKind::InvalidArguments, "{name}");
    }

    let filling = bound([
        one("one").fills_defaults(true),
        bundle("many").fills_defaults(true),
    ])
    .await;
    for name in ["one", "many"] {
        let output = filling.invoke(name, json!({})).await.unwrap();
        assert_eq!(output, ToolOutput::Json(json!({})), "{name}");
        let error = filling
            .invoke(name, json!({"format": "gif"}))
            .await
            .unwrap_err();
        assert_eq!(error.kind, ToolCallErrorKind::InvalidArguments, "{name}");
        assert_eq!(
            filling.tool(name).unwrap().info().parameters["required"],
            json!(["format"])
        );
    }

    // Declared back to `false`, the schema is exact again.
    let again = bound([one("one").fills_defaults(true).fills_defaults(false)]).await;
    let error = again.invoke("one", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::InvalidArguments);
}

/// An external tool stays external through a later declaration: outside a
/// turn its call is answered as needing a decision, not run.
#[tokio::test]
async fn an_external_tool_declared_to_fill_defaults_is_still_external() {
    let external = tool::Definition::external(screenshot_info("pick")).fills_defaults(true);
    let session = bound([external]).await;
    let call = ToolCall::new("call_1", "pick", "{}");
    let outcome = session.run_tool_call(&call).await;
    assert_eq!(outcome.stats.error, Some(ToolCallErrorKind::NeedsApproval));
    assert!(outcome.result.is_error);
}

/// A tool of the user's that returns its arguments.
struct Returns(ToolInfo);

#[async_trait::async_trait]
impl tool::Tool for Returns {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    async fn invoke(
        &self,
        arguments: Value,
        _context: &tool::CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Ok(arguments.into())
    }
}

async fn bound(tools: impl IntoIterator<Item = tool::Definition>) -> Definition<Bound> {
    let definition = Definition::builder()
        .name("defaults")
        .tools(tools)
        .build()
        .validate()
        .unwrap();
    bind(&definition).await
}

/// `"arguments": "null"`, as Groq and other OpenAI-compatible servers send
/// for a tool without parameters, runs as `{}`, as blank arguments do;
/// for a tool with required parameters it is the schema that refuses it,
/// not the arguments' type.
#[tokio::test]
async fn null_arguments_run_as_no_arguments() {
    let clock = tool::Definition::from_fn(
        ToolInfo::without_parameters("clock", "The time."),
        |arguments: Value, _| async move { Ok::<_, BoxError>(arguments) },
    );
    let session = bound([clock, one_with_city()]).await;
    for text in ["null", " null\n"] {
        let outcome = session
            .run_tool_call(&ToolCall::new("call_1", "clock", text))
            .await;
        assert_eq!(outcome.stats.error, None, "{text:?}");
        assert_eq!(outcome.result.text(), "{}", "{text:?}");
    }
    let outcome = session
        .run_tool_call(&ToolCall::new("call_2", "weather", "null"))
        .await;
    assert_eq!(
        outcome.stats.error,
        Some(ToolCallErrorKind::InvalidArguments)
    );
}

fn one_with_city() -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::new("weather", "The weather.", schema()),
        |arguments: Value, _| async move { Ok::<_, BoxError>(arguments) },
    )
}
