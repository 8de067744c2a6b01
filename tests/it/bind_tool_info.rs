//! What the factories built is checked at bind (DESIGN.md section 3):
//! name rule, reserved name, parameters schema (a blank description is
//! allowed). Extra tools get the definition checks before any factory runs.

use std::error::Error as _;
use std::sync::Arc;

use crate::common::{Counter, EchoTool, bindings, counted, counted_with_info};
use agent_loop::tool::{self, BoxError, NameRules, STRUCTURED_OUTPUT_TOOL_NAME, Tool, ToolInfo};
use agent_loop::{BindError, BindErrorKind, Definition, DefinitionError, DefinitionErrorKind};
use serde_json::{Value, json};

/// Binds a definition declaring `declared` whose factory builds a tool
/// reporting `info`.
async fn bind_built(declared: &str, info: ToolInfo) -> BindError {
    let counter = Counter::new();
    let error = Definition::builder()
        .name("agent")
        .tool(counted_with_info(declared, &counter, info))
        .build()
        .validate()
        .expect("the declared name is valid")
        .bind(bindings())
        .await
        .expect_err("bind should refuse what the factory built");
    assert_eq!(counter.get(), 1, "the factory ran once");
    assert!(!error.to_string().contains('\n'), "one line: {error}");
    error
}

fn info(name: &str, description: &str, parameters: Value) -> ToolInfo {
    ToolInfo::new(name, description, parameters)
}

#[tokio::test]
async fn built_dotted_name_is_invalid_tool_info() {
    let error = bind_built(
        "spotify_play",
        ToolInfo::without_parameters("spotify.play", "Plays a song."),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("spotify.play"));
    assert_eq!(error.index, Some(0));
    // One line that does not repeat its cause; the rule broken is the source.
    assert_eq!(
        error.to_string(),
        r#"bind: tool name "spotify.play" breaks `NameRules::OpenAi`"#
    );
    assert!(error.source().is_some_and(|source| {
        source
            .downcast_ref::<agent_loop::tool::NameError>()
            .is_some()
    }));
}

#[tokio::test]
async fn built_name_of_65_characters_is_invalid_tool_info() {
    let long = "a".repeat(65);
    let error = bind_built("search", ToolInfo::without_parameters(&long, "Searches.")).await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some(long.as_str()));
}

#[tokio::test]
async fn built_name_with_a_trailing_space_is_invalid_not_trimmed() {
    let error = bind_built(
        "search",
        ToolInfo::without_parameters("search ", "Searches."),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("search "));
}

#[tokio::test]
async fn built_reserved_name_is_invalid_tool_info() {
    let error = bind_built(
        "answer",
        ToolInfo::without_parameters(STRUCTURED_OUTPUT_TOOL_NAME, "Gives the answer."),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some(STRUCTURED_OUTPUT_TOOL_NAME));
}

#[tokio::test]
async fn a_blank_description_binds_and_the_tool_is_callable() {
    // OpenAI and Anthropic both accept a blank description, and real tool
    // lists have them (pydantic-ai sends "" for a tool without a
    // docstring): bind only logs a warning.
    for description in ["", "  \n"] {
        let counter = Counter::new();
        let bound = Definition::builder()
            .name("agent")
            .tool(counted_with_info(
                "search",
                &counter,
                info("search", description, json!({"type": "object"})),
            ))
            .build()
            .validate()
            .expect("the declared name is valid")
            .bind(bindings())
            .await
            .unwrap_or_else(|error| panic!("{description:?} binds: {error}"));
        assert_eq!(counter.get(), 1, "the factory ran once");
        assert_eq!(bound.tools()[0].name(), "search");
        assert_eq!(
            bound.tools()[0].info().description,
            description,
            "the description is kept as it is"
        );
        let output = bound
            .invoke("search", json!({"q": "rust"}))
            .await
            .expect("the tool is callable");
        assert_eq!(
            output,
            json!({"tool": "search", "arguments": {"q": "rust"}}),
            "{description:?}"
        );
    }
}

#[tokio::test]
async fn array_parameters_are_invalid_tool_info() {
    let error = bind_built(
        "search",
        info("search", "Searches.", json!({"type": "array"})),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert!(error.to_string().contains("object"), "{error}");
}

#[tokio::test]
async fn parameters_without_a_top_level_type_are_invalid_tool_info() {
    for parameters in [json!({}), json!(null), json!({"properties": {}})] {
        let error = bind_built("search", info("search", "Searches.", parameters.clone())).await;
        assert_eq!(error.kind, BindErrorKind::InvalidToolInfo, "{parameters}");
    }
}

#[tokio::test]
async fn parameters_that_are_not_a_valid_schema_are_invalid_tool_info() {
    let error = bind_built(
        "search",
        info(
            "search",
            "Searches.",
            json!({"type": "object", "properties": {"a": {"type": "nope"}}}),
        ),
    )
    .await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("search"));
    let source = error.source().expect("the schema error is the source");
    assert!(
        source
            .downcast_ref::<jsonschema::ValidationError<'static>>()
            .is_some(),
        "{source:?}"
    );
}

#[tokio::test]
async fn the_index_is_the_position_in_what_the_factory_built() {
    let bundle = tool::Definition::bundle("files", ["read", "write"], |_bindings| async {
        Ok::<Vec<Arc<dyn Tool>>, BoxError>(vec![
            Arc::new(EchoTool::named("read")),
            // Array parameters: invalid (a blank description no longer is).
            Arc::new(EchoTool::with_info(ToolInfo::new(
                "write",
                "Writes.",
                json!({"type": "array"}),
            ))),
        ])
    });
    let error = Definition::builder()
        .name("agent")
        .tool(bundle)
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some("write"));
    assert_eq!(error.index, Some(1));
}

#[tokio::test]
async fn valid_tool_info_binds() {
    let counter = Counter::new();
    let parameters = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"]
    });
    let bound = Definition::builder()
        .name("agent")
        .tool(counted_with_info(
            "weather",
            &counter,
            info("weather", "Weather for a city.", parameters.clone()),
        ))
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .unwrap();
    assert_eq!(bound.tools()[0].info().parameters, parameters);
}

#[tokio::test]
async fn mcp_name_rules_accept_a_dotted_name() {
    let counter = Counter::new();
    let bound = Definition::builder()
        .name("agent")
        .name_rules(NameRules::Mcp)
        .tool(counted("spotify.play", &counter))
        .build()
        .validate()
        .expect("dots are valid under the MCP profile")
        .bind(bindings())
        .await
        .expect("and at bind");
    assert_eq!(bound.tools()[0].name(), "spotify.play");
}

#[tokio::test]
async fn reserved_extra_tool_is_invalid_definition_before_any_factory() {
    let counter = Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .build()
        .validate()
        .unwrap();
    let error = definition
        .bind(
            bindings()
                .tool(counted("notes", &counter))
                .tool(counted(STRUCTURED_OUTPUT_TOOL_NAME, &counter)),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidDefinition);
    assert_eq!(error.name.as_deref(), Some(STRUCTURED_OUTPUT_TOOL_NAME));
    assert_eq!(error.index, Some(1), "the extra tool's position");
    let cause = error
        .source()
        .and_then(|source| source.downcast_ref::<DefinitionError>())
        .expect("the source is the DefinitionError");
    assert_eq!(cause.kind, DefinitionErrorKind::ReservedToolName);
    assert_eq!(cause.field, "bindings.tools[1].tool_names[0]");
    assert_eq!(
        counter.get(),
        0,
        "extra tools are checked before any factory runs"
    );
}

#[tokio::test]
async fn extra_tool_with_an_invalid_declared_name_is_invalid_definition() {
    let counter = Counter::new();
    let definition = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .build()
        .validate()
        .unwrap();
    let error = definition
        .bind(bindings().tool(counted("spotify.play", &counter)))
        .await
        .unwrap_err();
    assert_eq!(error.kind, BindErrorKind::InvalidDefinition);
    let cause = error
        .source()
        .and_then(|source| source.downcast_ref::<DefinitionError>())
        .expect("the source is the DefinitionError");
    assert_eq!(cause.kind, DefinitionErrorKind::InvalidTool);
    assert_eq!(counter.get(), 0);
}

/// A parameters schema `levels` objects deep: `{"type": "object",
/// "properties": {"a": {"type": "object", "properties": {"a": ...}}}}`.
fn deep_object_schema(levels: usize) -> Value {
    (1..levels).fold(
        json!({"type": "object"}),
        |inner, _| json!({"type": "object", "properties": {"a": inner}}),
    )
}

#[tokio::test]
async fn a_schema_built_hundreds_of_levels_deep_is_refused_before_the_schema_checker() {
    // 500 schema levels are 1000 JSON levels (each adds `properties`): deep
    // enough that the schema checker overflowed the stack on it, shallow
    // enough for serde_json to clone and drop in a test thread.
    let error = bind_built("deep", info("deep", "Deep.", deep_object_schema(500))).await;
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(
        error.to_string(),
        "bind: the parameters or extras of tool `deep` cannot be used"
    );
    let rule = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<agent_loop::TooDeep>())
        .expect("the depth rule is the cause");
    assert_eq!(rule.limit, 128);
}

#[tokio::test]
async fn a_schema_as_deep_as_json_text_allows_binds_and_checks_the_deepest_field() {
    // 63 schema levels are 126 JSON levels, under serde_json's parse limit
    // (127): the deepest schema a model provider could send in text.
    let schema = deep_object_schema(63);
    let text = schema.to_string();
    let parsed: Value = serde_json::from_str(&text).expect("serde_json parses it");
    let bound = Definition::builder()
        .name("agent")
        .tool(counted_with_info(
            "deep",
            &Counter::new(),
            info("deep", "Deep.", parsed),
        ))
        .build()
        .validate()
        .unwrap()
        .bind(bindings())
        .await
        .expect("binds");
    // Arguments 62 objects deep, the deepest one a number where the schema
    // wants an object: refused, naming the path down to it.
    let arguments = |leaf: Value| (0..62).fold(leaf, |inner, _| json!({ "a": inner }));
    let error = bound.invoke("deep", arguments(json!(1))).await.unwrap_err();
    assert_eq!(
        error.kind,
        agent_loop::bind::ToolCallErrorKind::InvalidArguments
    );
    assert_eq!(
        error.message,
        format!(
            "invalid arguments for `deep`: `{}`: 1 is not of type \"object\"",
            "/a".repeat(62)
        )
    );
    let output = bound.invoke("deep", arguments(json!({}))).await.unwrap();
    assert_eq!(
        output,
        json!({"tool": "deep", "arguments": arguments(json!({}))}),
        "valid arguments reach the tool whole"
    );
}

#[tokio::test]
async fn built_reserved_name_in_a_mode_or_an_extra_tool_is_invalid_tool_info() {
    // The declared names are valid; what the factories build is not. The
    // built-name check covers mode-only tools and extra tools too.
    let reserved =
        || ToolInfo::without_parameters(STRUCTURED_OUTPUT_TOOL_NAME, "Gives the answer.");

    let counter = Counter::new();
    let error = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .mode(agent_loop::Mode::new("answer").tool(counted_with_info(
            "answer",
            &counter,
            reserved(),
        )))
        .initial_mode("answer")
        .build()
        .validate()
        .expect("the declared names are valid")
        .bind(bindings())
        .await
        .expect_err("a mode tool built under the reserved name is refused");
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some(STRUCTURED_OUTPUT_TOOL_NAME));

    let counter = Counter::new();
    let error = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .build()
        .validate()
        .unwrap()
        .bind(bindings().tool(counted_with_info("answer", &counter, reserved())))
        .await
        .expect_err("an extra tool built under the reserved name is refused");
    assert_eq!(error.kind, BindErrorKind::InvalidToolInfo);
    assert_eq!(error.name.as_deref(), Some(STRUCTURED_OUTPUT_TOOL_NAME));
}
