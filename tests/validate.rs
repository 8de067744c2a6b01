//! `validate` (DESIGN.md section 5): each rule refused with the right kind,
//! field and value, first failure wins, and no factory runs.

mod common;

use agent_loop::tool::{NameError, STRUCTURED_OUTPUT_TOOL_NAME};
use agent_loop::{
    Defined, Definition, DefinitionError, DefinitionErrorKind, Mode, ToolLimits, ToolLimitsConfig,
};
use common::{Counter, counted};

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

#[test]
fn negative_limit_from_config_is_invalid_tool_limits() {
    let config: ToolLimitsConfig =
        serde_json::from_str(r#"{"iterations": 3, "calls": -1}"#).unwrap();
    let error = ToolLimits::try_from(config).unwrap_err();
    assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits);
    assert_eq!(error.field, "tool_limits.calls");
    assert_eq!(error.value, "-1");
    assert_one_line(&error);
}

#[test]
fn valid_config_converts_and_validates() {
    let config: ToolLimitsConfig =
        serde_json::from_str(r#"{"iterations": "unlimited", "parallel": 2, "result_bytes": 256}"#)
            .unwrap();
    let limits = ToolLimits::try_from(config).unwrap();
    assert_eq!(limits.iterations, ToolLimits::UNLIMITED);
    assert_eq!(limits.parallel, 2);
    assert_eq!(limits.result_bytes, 256);
    Definition::builder()
        .name("agent")
        .tool_limits(limits)
        .build()
        .validate()
        .expect("converted limits are valid for the base");
}

#[test]
fn result_bytes_255_in_base_is_invalid_tool_limits() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .tool_limits(ToolLimits {
                result_bytes: 255,
                ..Default::default()
            })
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits);
    assert_eq!(error.field, "tool_limits.result_bytes");
    assert_eq!(error.value, "255");
    assert_one_line(&error);
}

#[test]
fn result_bytes_256_is_accepted() {
    Definition::builder()
        .name("agent")
        .tool_limits(ToolLimits {
            result_bytes: ToolLimits::MIN_RESULT_BYTES,
            ..Default::default()
        })
        .build()
        .validate()
        .expect("256 is the smallest valid result_bytes");
}

#[test]
fn result_bytes_255_in_mode_is_invalid_mode() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .mode(Mode::new("short").tool_limits(ToolLimits {
                result_bytes: 255,
                ..Default::default()
            }))
            .initial_mode("short")
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    assert_eq!(error.field, "modes[0].tool_limits.result_bytes");
    assert_eq!(error.value, "255");
    assert_one_line(&error);
}

#[test]
fn unlimited_parallel_in_base_is_invalid_tool_limits() {
    let error = refused(
        Definition::builder()
            .name("agent")
            .tool_limits(ToolLimits {
                parallel: ToolLimits::UNLIMITED,
                ..Default::default()
            })
            .build(),
    );
    assert_eq!(error.kind, DefinitionErrorKind::InvalidToolLimits);
    assert_eq!(error.field, "tool_limits.parallel");
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
            .tool_limits(ToolLimits {
                result_bytes: 1,
                ..Default::default()
            })
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
fn negative_limit_from_config_in_a_mode_is_invalid_mode() {
    let config: ToolLimitsConfig = serde_json::from_str(r#"{"iterations": -4}"#).unwrap();
    let error = config.for_mode("review").unwrap_err();
    assert_eq!(error.kind, DefinitionErrorKind::InvalidMode);
    assert_eq!(error.field, r#"modes["review"].tool_limits.iterations"#);
    assert_eq!(error.value, "-4");
    assert_one_line(&error);

    let config: ToolLimitsConfig =
        serde_json::from_str(r#"{"iterations": 5, "result_bytes": "unlimited"}"#).unwrap();
    let limits = config.for_mode("review").unwrap();
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
