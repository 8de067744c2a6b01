//! `validate` (DESIGN.md section 5): each rule refused with the right kind,
//! field and value, first failure wins, and no factory runs.

use agent_loop::tool::{NameError, STRUCTURED_OUTPUT_TOOL_NAME};
use std::error::Error as _;

use crate::common::{Counter, counted};
use agent_loop::limits::{InvalidLimit, InvalidLimitKind};
use agent_loop::{
    Defined, Definition, DefinitionError, DefinitionErrorKind, Limit, Mode, ToolLimits,
};

fn refused(definition: Definition<Defined>) -> DefinitionError {
    definition
        .validate()
        .expect_err("validate should refuse this definition")
}

fn assert_one_line(error: &DefinitionError) {
    let text = error.to_string();
    assert!(!text.contains('\n'), "Display is one line: {text:?}");
    assert!(
        text.contains(&error.field),
        "Display names the field: {text:?}"
    );
}

#[test]
fn blank_name_is_missing_name() {
    let error = refused(Definition::builder().name("  ").build());
    assert_eq!(error.kind, DefinitionErrorKind::MissingName);
    assert_eq!(error.field, "name");
    assert_eq!(error.value, r#""  ""#);
    assert_one_line(&error);
}

#[test]
fn empty_name_is_missing_name() {
    let error = refused(Definition::builder().name("").build());
    assert_eq!(error.kind, DefinitionErrorKind::MissingName);
}

/// A config file as an application would write it: base limits and modes.
#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct Config {
    #[serde(default)]
    tool_limits: ToolLimits,
    #[serde(default)]
    modes: Vec<ModeConfig>,
}

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct ModeConfig {
    name: String,
    #[serde(default)]
    tool_limits: ToolLimits,
}

/// The config's refusal: the path of the refused field and the message.
fn config_refused(json: &str) -> (String, String) {
    let error = serde_path_to_error::deserialize::<_, Config>(
        &mut serde_json::Deserializer::from_str(json),
    )
    .expect_err("the config should be refused");
    (error.path().to_string(), error.inner().to_string())
}

fn invalid_limit(error: &DefinitionError) -> &InvalidLimit {
    error
        .source()
        .and_then(|source| source.downcast_ref::<InvalidLimit>())
        .expect("a limit error has the InvalidLimit as its source")
}

#[test]
fn negative_limit_from_config_is_refused_with_its_path() {
    let (path, message) = config_refused(r#"{"tool_limits": {"iterations": 3, "calls": -1}}"#);
    assert_eq!(path, "tool_limits.calls");
    assert!(message.starts_with("invalid `calls` limit -1"), "{message}");
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn zero_limit_from_config_is_refused_with_its_path() {
    let (path, message) = config_refused(r#"{"tool_limits": {"parallel": 0}}"#);
    assert_eq!(path, "tool_limits.parallel");
    assert!(
        message.starts_with("invalid `parallel` limit 0"),
        "{message}"
    );
}

#[test]
fn valid_config_reads_and_validates() {
    let config: Config = serde_json::from_str(
        r#"{"tool_limits": {"iterations": "unlimited", "parallel": 2, "result_bytes": 256}}"#,
    )
    .unwrap();
    let limits = config.tool_limits;
    assert_eq!(
        limits,
        ToolLimits::new()
            .iterations(Limit::Unlimited)
            .parallel(2)
            .result_bytes(256)
    );
    Definition::builder()
        .name("agent")
        .tool_limits(limits)
        .build()
        .validate()
        .expect("limits read from a config are valid for the base");
}

#[test]
fn result_bytes_255_in_base_is_invalid_tool_limits() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .tool_limits(ToolLimits::new().result_bytes(255))
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits);
    assert_eq!(error.field, "tool_limits.result_bytes");
    assert_eq!(error.value, "255");
    assert_eq!(
        invalid_limit(&error).kind,
        InvalidLimitKind::TooFewResultBytes
    );
    assert_one_line(&error);
}

#[test]
fn result_bytes_256_is_accepted() {
    Definition::builder()
        .name("agent")
        .tool_limits(ToolLimits::new().result_bytes(256))
        .build()
        .validate()
        .expect("256 is the smallest valid result_bytes");
}

#[test]
fn result_bytes_255_in_mode_is_invalid_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("short").tool_limits(ToolLimits::new().result_bytes(255)))
            .initial_mode("short")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    assert_eq!(error.field, "modes[0].tool_limits.result_bytes");
    assert_eq!(error.value, "255");
    assert_one_line(&error);
}

#[test]
fn zero_parallel_in_base_is_invalid_tool_limits() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .tool_limits(ToolLimits::new().parallel(0))
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits);
    assert_eq!(error.field, "tool_limits.parallel");
    assert_eq!(error.value, "0");
    let limit = invalid_limit(&error);
    assert_eq!(
        (limit.kind, limit.field),
        (InvalidLimitKind::Zero, "parallel")
    );
    assert_one_line(&error);
}

#[test]
fn zero_parallel_in_the_second_mode_is_invalid_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .modes([
                Mode::new("plan"),
                Mode::new("act").tool_limits(ToolLimits::new().parallel(0)),
            ])
            .initial_mode("plan")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    assert_eq!(error.field, "modes[1].tool_limits.parallel");
    assert_eq!(invalid_limit(&error).kind, InvalidLimitKind::Zero);
    assert_one_line(&error);
}

#[test]
fn zero_iterations_and_calls_are_invalid_tool_limits() {
    for (limits, field) in [
        (ToolLimits::new().iterations(0), "tool_limits.iterations"),
        (ToolLimits::new().calls(0), "tool_limits.calls"),
    ] {
        let error = refused(
            Definition::builder()
                .name("agent")
                .tool_limits(limits)
                .build(),
        );
        assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits);
        assert_eq!(error.field, field);
        assert_eq!(error.value, "0");
    }
}

#[test]
fn unlimited_parallel_from_config_is_refused_with_its_path() {
    // In Rust, `parallel` takes a count only (see ui-tests/parallel_unlimited.rs).
    let (path, message) = config_refused(r#"{"tool_limits": {"parallel": "unlimited"}}"#);
    assert_eq!(path, "tool_limits.parallel");
    assert!(
        message.contains("parallel cannot be unlimited"),
        "{message}"
    );
}

#[test]
fn duplicate_mode_is_refused() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("review"))
            .mode(Mode::new("write"))
            .mode(Mode::new("review"))
            .initial_mode("review")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::DuplicateMode);
    assert_eq!(error.field, "modes[2].name");
    assert_eq!(error.value, r#""review""#);
    assert_one_line(&error);
}

#[test]
fn blank_mode_name_is_invalid_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new(" "))
            .initial_mode(" ")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    assert_eq!(error.field, "modes[0].name");
}

#[test]
fn modes_without_initial_mode_is_missing_initial_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("review"))
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::MissingInitialMode);
    assert_eq!(error.field, "initial_mode");
    assert_one_line(&error);
}

#[test]
fn unknown_initial_mode_is_invalid_initial_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("review"))
            .initial_mode("reveiw")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidInitialMode);
    assert_eq!(error.field, "initial_mode");
    assert_eq!(error.value, r#""reveiw""#);
    assert!(
        error.to_string().contains("review"),
        "the message lists the declared modes: {error}"
    );
    assert_one_line(&error);
}

#[test]
fn initial_mode_without_modes_is_invalid_initial_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .initial_mode("review")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidInitialMode);
}

#[test]
fn reserved_name_declared_in_base_is_reserved_tool_name() {
    let counter = Counter::new();
    let error = refused(
        Definition::builder()
            .name("agent")
            .tool(counted("search", &counter))
            .tool(counted(STRUCTURED_OUTPUT_TOOL_NAME, &counter))
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::ReservedToolName);
    assert_eq!(error.field, "tools[1].tool_names[0]");
    assert_eq!(error.value, format!("{STRUCTURED_OUTPUT_TOOL_NAME:?}"));
    assert_one_line(&error);
    assert_eq!(counter.get(), 0, "validation never runs a factory");
}

#[test]
fn reserved_name_declared_in_mode_is_reserved_tool_name() {
    let counter = Counter::new();
    let error = refused(
        Definition::builder()
            .name("agent")
            .tool(counted("search", &counter))
            .mode(Mode::new("answer").tool(counted(STRUCTURED_OUTPUT_TOOL_NAME, &counter)))
            .initial_mode("answer")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::ReservedToolName);
    assert_eq!(error.field, "modes[0].tools[0].tool_names[0]");
    assert_eq!(counter.get(), 0, "validation never runs a factory");
}

#[test]
fn reserved_name_check_is_exact() {
    let counter = Counter::new();
    let near = format!("{STRUCTURED_OUTPUT_TOOL_NAME}_v2");
    Definition::builder()
        .name("agent")
        .tool(counted(&near, &counter))
        .build()
        .validate()
        .expect("only the exact reserved name is refused");
}

#[test]
fn blank_tool_definition_name_is_invalid_tool() {
    let counter = Counter::new();
    let error = refused(
        Definition::builder()
            .name("agent")
            .tool(counted(" ", &counter))
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidTool);
    assert_eq!(error.field, "tools[0].name");
}

#[test]
fn declared_name_breaking_the_name_rule_is_invalid_tool() {
    let counter = Counter::new();
    for bad in ["spotify.play", "search ", &"a".repeat(65)] {
        let error = refused(
            Definition::builder()
                .name("agent")
                .tool(counted(bad, &counter))
                .build(),
        );
        assert_eq!(error.kind, DefinitionErrorKind::InvalidTool, "{bad:?}");
        assert_eq!(error.field, "tools[0].tool_names[0]", "{bad:?}");
        assert_eq!(error.value, format!("{bad:?}"));
        assert!(
            error.reason.is_some(),
            "the broken rule is given for {bad:?}"
        );
        assert!(
            std::error::Error::source(&error)
                .is_some_and(|source| source.downcast_ref::<NameError>().is_some()),
            "the name error is the source for {bad:?}"
        );
        assert_one_line(&error);
    }
    assert_eq!(counter.get(), 0);
}

#[test]
fn declared_name_of_64_characters_is_valid() {
    let counter = Counter::new();
    Definition::builder()
        .name("agent")
        .tool(counted(&"a".repeat(64), &counter))
        .build()
        .validate()
        .expect("64 characters is within the rule");
}

#[test]
fn first_failure_wins() {
    // Blank name, bad limits and a reserved tool: the name is checked first.
    let counter = Counter::new();
    let error = refused(
        Definition::builder()
            .name("")
            .tool(counted(STRUCTURED_OUTPUT_TOOL_NAME, &counter))
            .tool_limits(ToolLimits::new().result_bytes(1))
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::MissingName);
}

#[test]
fn valid_definition_runs_no_factory() {
    let counter = Counter::new();
    let validated = Definition::builder()
        .name("agent")
        .tool(counted("search", &counter))
        .mode(Mode::new("review").tool(counted("read", &counter)))
        .initial_mode("review")
        .build()
        .validate()
        .expect("valid");
    assert_eq!(validated.name(), "agent");
    assert_eq!(counter.get(), 0, "validation never runs a factory");
}

#[test]
fn control_characters_in_names_are_refused_so_errors_stay_one_line() {
    let error = refused(Definition::builder().name("agent\nbase").build());
    assert_eq!(error.kind, DefinitionErrorKind::InvalidName);
    assert_eq!(error.value, r#""agent\nbase""#);
    assert_one_line(&error);

    let error = refused(
        Definition::builder()
            .name("agent")
            .tool(counted("search\u{1b}[2J", &Counter::new()))
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidTool);
    assert_eq!(error.field, "tools[0].name");
    assert_one_line(&error);

    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("re\rview"))
            .initial_mode("re\rview")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    assert_eq!(error.field, "modes[0].name");
    assert_one_line(&error);
}

#[test]
fn negative_limit_from_config_in_a_mode_is_refused_with_its_path() {
    let (path, message) = config_refused(
        r#"{"modes": [{"name": "plan"}, {"name": "review", "tool_limits": {"iterations": -4}}]}"#,
    );
    assert_eq!(path, "modes[1].tool_limits.iterations");
    assert!(
        message.starts_with("invalid `iterations` limit -4"),
        "{message}"
    );

    let config: Config = serde_json::from_str(
        r#"{"modes": [{"name": "review", "tool_limits": {"iterations": 5, "result_bytes": "unlimited"}}]}"#,
    )
    .unwrap();
    let limits = config.modes[0].tool_limits;
    let definition = Definition::builder()
        .name("agent")
        .mode(Mode::new("review").tool_limits(limits))
        .initial_mode("review")
        .build();
    assert!(definition.validate().is_ok());
}

#[test]
fn a_mode_name_with_surrounding_white_space_is_invalid_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("review "))
            .initial_mode("review ")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    assert_eq!(error.field, "modes[0].name");
    assert_eq!(error.value, r#""review ""#);
    assert_one_line(&error);
}
