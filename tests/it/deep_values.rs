//! JSON values nested deeper than 128 levels (serde_json parses no JSON
//! text that deep, so only code builds them) are refused with a typed error wherever
//! the crate would walk them, before it recurses: at bind, in arguments, in
//! tool results, in wire parsing, in a turn's conversation and in a model's
//! request. Each value here is 10,000 levels deep: serde_json's clone,
//! serialisation or drop of it would overflow a test thread's 2 MiB stack
//! and abort the whole test binary, so each test passing shows that no
//! path recursed into it. What a test owns itself it drops with
//! [`drop_deep`], as the crate docs tell a caller to.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_loop::bind::ToolCallErrorKind;
use agent_loop::conversation::{
    AssistantMessage, ContentPart, Extras, Message, ModelResponse, ProviderPart, WireFormat,
};
use agent_loop::tool::{self, BoxError, ToolInfo, ToolOutput};
use agent_loop::turn::{Output, OutputErrorKind, ScriptedModel, TurnError};
use agent_loop::wire::{self, WireErrorKind};
use agent_loop::{BindError, BindErrorKind, Definition, TooDeep, ToolLimits};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::bindings;
use crate::turn_common::{batch, bind_tools, call, result_for, user_says};

const DEEP: usize = 10_000;

/// `levels` arrays nested in one another, built without recursion
/// (`json!([inner])` would serialise `inner`, which recurses).
fn nested(levels: usize) -> Value {
    (1..levels).fold(json!([]), |inner, _| Value::Array(vec![inner]))
}

/// An object of `entries`, built without serialising them.
fn object<'a>(entries: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
    Value::Object(Map::from_iter(
        entries
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value)),
    ))
}

/// Drops `value` without recursion: empties each container onto a heap
/// stack before dropping it (serde_json's own drop recurses per level).
fn drop_deep(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, child)| child)),
            _ => {}
        }
    }
}

/// `true` when a [`TooDeep`] is `error` or in its `source()` chain: the
/// one cause every depth refusal carries.
fn caused_by_too_deep(error: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(error), |error| error.source()).any(|error| {
        error
            .downcast_ref::<TooDeep>()
            .is_some_and(|rule| rule.limit == 128 && TooDeep::LIMIT == 128)
    })
}

/// An object schema whose one property's `default` nests `levels` deep.
fn schema_with_deep_default(levels: usize) -> Value {
    let property = object([("default", nested(levels))]);
    object([
        ("type", json!("object")),
        ("properties", object([("a", property)])),
    ])
}

/// Validates and binds a definition of `tool`, which bind must refuse.
async fn bind_error(tool: tool::Definition) -> BindError {
    Definition::builder()
        .name("agent")
        .tool(tool)
        .build()
        .validate()
        .expect("validate does not read schemas")
        .bind(bindings())
        .await
        .expect_err("bind refuses it")
}

#[tokio::test]
async fn parameters_built_10000_levels_deep_are_refused_at_bind() {
    // The issue's case: `validate` passes (it never looks at schemas), and
    // bind refuses with a typed error instead of aborting.
    let deep = tool::Definition::from_fn(
        ToolInfo::new("deep", "Deep.", schema_with_deep_default(DEEP)),
        |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
    );
    let definition = Definition::builder()
        .name("agent")
        .tool(&deep)
        .build()
        .validate()
        .expect("validate does not read schemas");
    for _ in 0..2 {
        let error = definition.bind(bindings()).await.unwrap_err();
        assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
        assert_eq!(error.name.as_deref(), Some("deep"));
        assert_eq!(
            error.to_string(),
            "bind: the parameters or extras of tool `deep` cannot be used"
        );
        assert!(caused_by_too_deep(&error));
    }
    // The definition owns the value; dropping it must not recurse either.
    drop(definition);
    drop(deep);
}

#[tokio::test]
async fn extras_built_10000_levels_deep_are_refused_at_bind() {
    let mut info = ToolInfo::without_parameters("deep", "Deep.");
    info.extras = Extras::new(
        WireFormat::McpToolsList,
        Map::from_iter([("annotations".to_owned(), nested(DEEP))]),
    );
    let deep = tool::Definition::from_fn(info, |arguments: Value, _context| async move {
        Ok::<_, BoxError>(arguments)
    });
    let error = bind_error(deep).await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert!(error.to_string().ends_with("cannot be used"));
    assert!(caused_by_too_deep(&error));
}

/// A tool whose info the test keeps, so that the test, not the crate,
/// drops the deep value.
struct SharedInfoTool(Arc<ToolInfo>);

#[async_trait::async_trait]
impl tool::Tool for SharedInfoTool {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    async fn invoke(
        &self,
        _arguments: Value,
        _context: &tool::CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Ok(json!("never").into())
    }
}

#[tokio::test]
async fn a_factory_tool_with_parameters_10000_levels_deep_is_refused_at_bind() {
    // The tool is the caller's value: bind refuses it and drops its own
    // handle; the info's last owner (here the test) drops the deep value.
    let info = Arc::new(ToolInfo::new(
        "deep",
        "Deep.",
        schema_with_deep_default(DEEP),
    ));
    let shared = Arc::clone(&info);
    let definition = crate::common::tool_factory("deep", move |_session| {
        let tool = SharedInfoTool(Arc::clone(&shared));
        async move { Ok::<_, BoxError>(tool) }
    });
    let error = bind_error(definition).await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.index, Some(0));
    let info = Arc::try_unwrap(info).expect("bind kept no copy of the info");
    drop_deep(info.parameters);
}

#[tokio::test]
async fn arguments_built_10000_levels_deep_are_refused_before_the_tool_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&runs);
    let echo = tool::Definition::from_fn(
        ToolInfo::new(
            "echo",
            "Echoes.",
            // A recursive schema: its checker follows the value's depth.
            json!({"type": "object", "additionalProperties": {"$ref": "#/$defs/any"},
                   "$defs": {"any": {"type": ["array", "object", "number"],
                                     "items": {"$ref": "#/$defs/any"}}}}),
        ),
        move |arguments: Value, _context| {
            seen.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, BoxError>(arguments) }
        },
    );
    let bound = bind_tools([echo], ToolLimits::new()).await;
    let error = bound
        .invoke("echo", object([("a", nested(DEEP))]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::ArgumentsTooDeep);
    assert_eq!(
        error.message,
        "the arguments of `echo` nest deeper than 128 levels"
    );
    assert_eq!(error.to_string(), "the arguments of `echo` were refused");
    assert!(caused_by_too_deep(&error));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool did not run");
    // Arguments for a tool that does not exist are dropped without
    // recursion too: a recursive drop would abort this test binary.
    let error = bound
        .invoke("no_such_tool", object([("a", nested(DEEP))]))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::UnknownTool);
    // 127 levels under the object: 128 in all, as deep as JSON text goes.
    let output = bound
        .invoke("echo", json!({ "a": nested(127) }))
        .await
        .unwrap();
    assert_eq!(output, json!({ "a": nested(127) }));
}

#[tokio::test]
async fn a_tool_result_10000_levels_deep_becomes_an_error_result() {
    let deep_json = tool::Definition::from_fn(
        ToolInfo::without_parameters("deep_json", "Deep JSON."),
        |_arguments: Value, _context| async move { Ok::<_, BoxError>(nested(DEEP)) },
    );
    let deep_block = tool::Definition::from_fn(
        ToolInfo::without_parameters("deep_block", "A deep provider block."),
        |_arguments: Value, _context| async move {
            Ok::<_, BoxError>(vec![
                ContentPart::text("see the block"),
                ContentPart::Provider(ProviderPart::new(
                    WireFormat::AnthropicMessages,
                    nested(DEEP),
                )),
            ])
        },
    );
    let session = bind_tools([deep_json, deep_block], ToolLimits::new()).await;
    let model = ScriptedModel::new([
        batch([
            call("c1", "deep_json", "{}"),
            call("c2", "deep_block", "{}"),
        ]),
        ModelResponse::answer("done"),
    ]);
    let mut conversation = user_says("go");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .expect("the turn goes on");
    assert_eq!(outcome.answer(), Some("done"));
    for (id, name) in [("c1", "deep_json"), ("c2", "deep_block")] {
        let result = result_for(&conversation, id);
        assert!(result.is_error);
        assert_eq!(
            result.text(),
            format!("the output of `{name}` nests deeper than 128 levels and cannot be shown")
        );
    }
    let errors: Vec<_> = outcome.stats.iterations[0]
        .calls
        .iter()
        .map(|call| call.error)
        .collect();
    assert_eq!(
        errors,
        [
            Some(ToolCallErrorKind::OutputTooDeep),
            Some(ToolCallErrorKind::OutputTooDeep)
        ]
    );
    // A direct call refuses it the same way, with the rule as its cause.
    let error = session.invoke("deep_json", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::OutputTooDeep);
    assert_eq!(
        error.to_string(),
        "the output of `deep_json` cannot be shown"
    );
    assert!(caused_by_too_deep(&error));
}

/// Rewrites every call's arguments into a value 10,000 levels deep.
struct Deepen;

#[async_trait::async_trait]
impl agent_loop::ToolMiddleware for Deepen {
    async fn handle(
        &self,
        mut call: agent_loop::ToolInvocation,
        next: agent_loop::Next<'_>,
    ) -> Result<ToolOutput, BoxError> {
        call.arguments = object([("a", nested(DEEP))]);
        next.run(call).await
    }
}

/// Counts the calls that reach it and whether the output it got was `Ok`.
#[derive(Clone, Default)]
struct Watch {
    reached: Arc<AtomicUsize>,
    saw_output: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl agent_loop::ToolMiddleware for Watch {
    async fn handle(
        &self,
        call: agent_loop::ToolInvocation,
        next: agent_loop::Next<'_>,
    ) -> Result<ToolOutput, BoxError> {
        self.reached.fetch_add(1, Ordering::SeqCst);
        let output = next.run(call).await;
        if output.is_ok() {
            self.saw_output.fetch_add(1, Ordering::SeqCst);
        }
        output
    }
}

#[tokio::test]
async fn a_tool_output_10000_levels_deep_reaches_no_middleware() {
    let watch = Watch::default();
    let deep_json = tool::Definition::from_fn(
        ToolInfo::without_parameters("deep_json", "Deep JSON."),
        |_arguments: Value, _context| async move { Ok::<_, BoxError>(nested(DEEP)) },
    );
    let session = Definition::builder()
        .name("agent")
        .tool(deep_json)
        .middleware(watch.clone())
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let error = session.invoke("deep_json", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::OutputTooDeep);
    assert!(caused_by_too_deep(&error));
    assert_eq!(watch.reached.load(Ordering::SeqCst), 1);
    assert_eq!(
        watch.saw_output.load(Ordering::SeqCst),
        0,
        "the middleware got the refusal, not the output"
    );
}

#[tokio::test]
async fn arguments_a_middleware_rewrote_10000_levels_deep_never_reach_the_tool() {
    let runs = Arc::new(AtomicUsize::new(0));
    let seen = runs.clone();
    let echo = tool::Definition::from_fn(
        ToolInfo::without_parameters("echo", "Echo."),
        move |arguments: Value, _context| {
            seen.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, BoxError>(arguments) }
        },
    );
    let inner = Watch::default();
    let session = Definition::builder()
        .name("agent")
        .tool(echo)
        .middleware(Deepen)
        .middleware(inner.clone())
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    let error = session.invoke("echo", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::ArgumentsTooDeep);
    assert_eq!(error.to_string(), "the arguments of `echo` were refused");
    assert!(caused_by_too_deep(&error));
    // In a turn, the model reads the same refusal as an error result.
    let model = ScriptedModel::new([
        batch([call("c1", "echo", "{}")]),
        ModelResponse::answer("ok"),
    ]);
    let mut conversation = user_says("go");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let result = result_for(&conversation, "c1");
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "the arguments of `echo` nest deeper than 128 levels"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool never ran");
    assert_eq!(
        inner.reached.load(Ordering::SeqCst),
        0,
        "nor did the middleware inside the one that rewrote them"
    );
}

#[test]
fn an_mcp_tools_list_result_10000_levels_deep_is_a_wire_error() {
    let tool = object([("name", json!("t")), ("inputSchema", nested(DEEP))]);
    let result = object([("tools", Value::Array(vec![tool]))]);
    let error = wire::mcp::parse_list_tools_result(&result).unwrap_err();
    assert_eq!(error.kind, WireErrorKind::TooDeep);
    assert_eq!(error.path, "result");
    assert_eq!(
        error.to_string(),
        "MCP tools/list: at result: the payload cannot be read"
    );
    assert!(caused_by_too_deep(&error));
    drop_deep(result);
}

#[test]
fn every_wire_parser_refuses_a_value_10000_levels_deep() {
    let deep = object([("a", nested(DEEP))]);
    let outcomes = [
        ("response", wire::openai::parse_response(&deep).err()),
        ("messages", wire::openai::parse_messages(&deep).err()),
        ("request", wire::openai::parse_request(&deep).err()),
        ("tools", wire::openai::parse_tools(&deep).err()),
        ("response", wire::anthropic::parse_response(&deep).err()),
        ("messages", wire::anthropic::parse_messages(&deep).err()),
        ("request", wire::anthropic::parse_request(&deep).err()),
        ("tools", wire::anthropic::parse_tools(&deep).err()),
    ];
    for (root, error) in outcomes {
        let error = error.expect("refused");
        assert_eq!(error.kind, WireErrorKind::TooDeep);
        assert_eq!(error.path, root);
        assert!(caused_by_too_deep(&error));
    }
    drop_deep(deep);
    // As deep as JSON text goes (127 levels) still parses: a tool_use
    // input of 124 levels under the response's three.
    let text = format!(
        r#"{{"type": "message", "role": "assistant", "content": [{{"type": "tool_use", "id": "t", "name": "f", "input": {{"a": {}}}}}]}}"#,
        nested(123)
    );
    let body: Value = serde_json::from_str(&text).expect("127 levels of JSON text parse");
    let response = wire::anthropic::parse_response(&body).unwrap();
    assert_eq!(
        response.message.tool_calls().next().unwrap().arguments,
        json!({"a": nested(123)}).to_string()
    );
}

#[tokio::test]
async fn a_conversation_holding_a_value_10000_levels_deep_is_refused_before_the_model() {
    let session = bind_tools([], ToolLimits::new()).await;
    let model = ScriptedModel::new([ModelResponse::answer("never")]);
    let mut conversation = vec![
        Message::user("hello"),
        Message::Assistant(AssistantMessage::new(vec![ContentPart::Provider(
            ProviderPart::new(WireFormat::AnthropicMessages, nested(DEEP)),
        )])),
    ];
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(error, TurnError::TooDeep { index: 1, .. }),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "turn: messages[1] cannot be sent");
    assert!(caused_by_too_deep(&error));
    assert_eq!(model.remaining(), 1, "the model was not asked");
    assert_eq!(conversation.len(), 2, "the conversation is unchanged");
    if let Some(Message::Assistant(mut message)) = conversation.pop()
        && let Some(ContentPart::Provider(part)) = message.content.pop()
    {
        drop_deep(part.value);
    }
}

#[tokio::test]
async fn a_model_response_holding_a_value_10000_levels_deep_fails_the_turn() {
    let session = bind_tools([], ToolLimits::new()).await;
    let model = ScriptedModel::new([ModelResponse::new(AssistantMessage::new(vec![
        ContentPart::text("hi"),
        ContentPart::Provider(ProviderPart::new(WireFormat::OpenAiChat, nested(DEEP))),
    ]))]);
    let mut conversation = user_says("hello");
    let error = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap_err();
    let TurnError::Model { source, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        source.message.as_deref(),
        Some("the model's response cannot be kept")
    );
    assert!(caused_by_too_deep(&error));
    assert_eq!(
        source.kind,
        agent_loop::turn::ModelErrorKind::InvalidResponse
    );
    assert_eq!(conversation, user_says("hello"), "nothing appended");
}

#[test]
fn an_output_schema_10000_levels_deep_is_refused() {
    for schema in [
        schema_with_deep_default(DEEP),
        // Not an object: wrapped, then refused.
        object([("type", json!("array")), ("default", nested(DEEP))]),
    ] {
        let error = Output::from_schema("deep", "Deep.", schema).unwrap_err();
        assert_eq!(error.kind, OutputErrorKind::TooDeep);
        assert!(caused_by_too_deep(&error));
    }
}

#[cfg(feature = "openai")]
#[tokio::test]
async fn a_model_request_holding_a_value_10000_levels_deep_is_not_sent() {
    use agent_loop::model::{ModelErrorKind, OpenAiModel};

    // Nothing listens there: the request must be refused before sending.
    let model = OpenAiModel::new("gpt-test")
        .base_url("http://127.0.0.1:9")
        .extra("metadata", nested(DEEP));
    let session = bind_tools([], ToolLimits::new()).await;
    let error = session
        .run_turn(&model, &mut user_says("hello"), &CancellationToken::new())
        .await
        .unwrap_err();
    let TurnError::Model { source, .. } = error else {
        panic!("{error:?}");
    };
    let error = source;
    assert_eq!(error.kind, ModelErrorKind::Request);
    assert_eq!(error.attempts, 0, "nothing was sent");
    assert_eq!(
        error.message.as_deref(),
        Some("the vendor field `metadata` cannot be sent: the request was not sent")
    );
    assert!(caused_by_too_deep(&error));
    // The model dropped the deep value when it was set: dropping the model
    // recurses no deeper than a shallow one.
    drop(model);
}

#[cfg(feature = "openai")]
#[tokio::test]
async fn a_direct_request_listing_a_tool_10000_levels_deep_is_not_sent() {
    use agent_loop::model::{ModelErrorKind, OpenAiModel};
    use agent_loop::turn::{Model, ModelRequest};

    // Nothing listens there: the request must be refused before sending.
    let model = OpenAiModel::new("gpt-test").base_url("http://127.0.0.1:9");
    let mut tools = [ToolInfo::new(
        "deep",
        "Deep.",
        schema_with_deep_default(DEEP),
    )];
    let conversation = user_says("hello");
    let error = model
        .respond(ModelRequest::new(&conversation).tools(&tools))
        .await
        .unwrap_err();
    assert_eq!(error.kind, ModelErrorKind::Request);
    assert_eq!(error.attempts, 0, "nothing was sent");
    assert_eq!(
        error.message.as_deref(),
        Some("a value in the conversation or a tool cannot be sent: the request was not sent")
    );
    assert!(caused_by_too_deep(&error));
    drop_deep(std::mem::take(&mut tools[0].parameters));
}
