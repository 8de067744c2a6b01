//! Bind with arbitrary schemas: a tool with any name and any `parameters`
//! is refused by `validate` (its name) or `bind` (its schema) with a typed
//! error naming it, or binds; a bound tool checks any arguments without
//! panicking and hands those it accepts to the tool unchanged.

use agent_loop::STRUCTURED_OUTPUT_TOOL_NAME;
use agent_loop::bind::ToolCallErrorKind;
use agent_loop::tool::{self, BoxError, NameRules, ToolInfo, ToolOutput};
use agent_loop::{BindErrorKind, Bindings, Definition, DefinitionErrorKind, LoopId, SessionId};
use serde_json::Value;

use super::{block_on, ensure};

/// Declares a tool `name` with `schema` as its parameters (a tool that
/// returns its arguments), validates and binds it, twice (the second bind
/// reuses the first one's checked schema), and invokes it with each of
/// `arguments`.
pub fn check_bind(name: &str, schema: &Value, arguments: &[Value]) -> Result<(), String> {
    let echo = tool::Definition::from_fn(
        ToolInfo::new(name, "Returns its arguments.", schema.clone()),
        |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
    );
    let name_ok = NameRules::default().check(name).is_ok() && name != STRUCTURED_OUTPUT_TOOL_NAME;
    let definition = match Definition::builder()
        .name("properties-bind")
        .tool(echo)
        .build()
        .validate()
    {
        Ok(definition) => definition,
        Err(error) => {
            return ensure(
                !name_ok
                    && matches!(
                        error.kind,
                        DefinitionErrorKind::InvalidTool | DefinitionErrorKind::ReservedToolName
                    ),
                || format!("validate refused the tool {name:?}: {error}"),
            );
        }
    };
    ensure(name_ok, || {
        format!("validate accepted the tool name {name:?}")
    })?;
    let bind = || definition.bind(Bindings::new(SessionId::new(), LoopId::new()));
    let (first, second) = block_on(async { (bind().await, bind().await) });
    let session = match (first, second) {
        (Ok(session), Ok(_)) => session,
        (Err(first), Err(second)) => {
            ensure(first.kind == BindErrorKind::InvalidToolInfo, || {
                format!("bind failed with another kind than InvalidToolInfo: {first}")
            })?;
            return ensure(first.to_string() == second.to_string(), || {
                format!("a second bind failed otherwise: {first} / {second}")
            });
        }
        (first, second) => {
            return Err(format!(
                "two binds of one definition differ: {:?} / {:?}",
                first.err(),
                second.err()
            ));
        }
    };
    ensure(schema.get("type") == Some(&Value::from("object")), || {
        format!("a schema whose `type` is not \"object\" bound: {schema}")
    })?;
    let bound = session
        .tool(name)
        .ok_or_else(|| format!("the bound session has no tool {name:?}"))?;
    ensure(&bound.info().parameters == schema, || {
        "the bound tool's parameters differ from the declared ones".to_owned()
    })?;
    for arguments in arguments {
        let invoked = block_on(session.invoke(name, arguments.clone()));
        match invoked {
            Ok(output) => ensure(
                arguments.is_object() && output == ToolOutput::Json(arguments.clone()),
                || format!("arguments {arguments} reached the tool as {output:?}"),
            )?,
            Err(error) => ensure(
                match error.kind {
                    ToolCallErrorKind::ArgumentsNotObject => !arguments.is_object(),
                    ToolCallErrorKind::InvalidArguments => arguments.is_object(),
                    _ => false,
                },
                || {
                    format!(
                        "arguments {arguments} were refused as {:?}: {error}",
                        error.kind
                    )
                },
            )?,
        }
    }
    Ok(())
}
