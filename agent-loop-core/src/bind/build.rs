//! The `bind` algorithm: check the ids, check the
//! extra tools, find the distinct definitions and their collisions, run each
//! distinct factory once, check what they built, assemble the modes. All or
//! nothing.

use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use futures::FutureExt;
use futures::future::join_all;

use crate::bind::checks::{
    check_built_names, check_names, declared_tool, duplicates_error, layout_duplicates,
    reported_tool,
};
use crate::bind::tool_set::{Listed, ToolSet, Tools, changing_set, table_of};
use crate::bind::{BindError, BindErrorKind, Binding, Bindings, Bound, FactoryPanic};
use crate::definition::builder::Recipe;
use crate::definition::layout::{Collisions, Layout};
use crate::definition::validate::check_tool_definition;
use crate::definition::{Definition, Validated};
use crate::session::Session;
use crate::support::panic::panic_message;
use crate::tool::checked::{Declared, InfoCache};
use crate::tool::definition::{Build, BuiltTool, Source};
use crate::tool::{self, BoxError, Tool, ToolListing};

impl Definition<Validated> {
    /// Binds the definition to one session: builds every tool for it and
    /// checks what was built (see the [`bind`](crate::bind) module for the
    /// order of the checks). The definition itself is untouched and can be
    /// bound again, concurrently, for other sessions.
    ///
    /// Errors: [`BindError`]; nothing of the binding exists then.
    pub async fn bind(&self, bindings: Bindings) -> Result<Definition<Bound>, BindError> {
        let binding = bind(&self.recipe, &self.state.layout, bindings).await?;
        Ok(Definition {
            recipe: Arc::clone(&self.recipe),
            state: Bound { binding },
        })
    }
}

/// The most futures `futures::future::join_all` joins without allocating a
/// task for each.
const JOINED_AT_ONCE: usize = 30;

/// The tools one factory built: one whose info was declared, or any number
/// that report their own infos (a factory of the user's returns a `Vec`).
/// With each, where its checked infos come from.
enum Built<'d> {
    Declared(&'d Declared, BuiltTool),
    /// Tools reporting their own infos; a changing definition's with its
    /// listing, at the version listed.
    Reported(
        &'d InfoCache,
        Vec<Arc<dyn Tool>>,
        Option<(Arc<dyn ToolListing>, u64)>,
    ),
}

/// Runs the factory of `definition` for `session`.
async fn build<'d>(
    definition: &'d tool::Definition,
    session: &Session,
) -> Result<Built<'d>, BoxError> {
    match definition.source() {
        Source::Declared { declared, build } => match &**build {
            Build::Instant(build) => Ok(Built::Declared(
                declared,
                BuiltTool {
                    handler: build(),
                    nested: None,
                },
            )),
            Build::Session(factory) => {
                let built = factory.build(session.clone()).await?;
                Ok(Built::Declared(declared, built))
            }
        },
        Source::Built { factory, infos } => match factory.tools(session).await? {
            tool::Tools::Fixed(tools) => Ok(Built::Reported(infos, tools, None)),
            tool::Tools::Listing(listing) => {
                // Before the list: a change announced while it is read is
                // read again at the first refresh.
                let version = listing.version();
                let tools = listing.list().await?;
                Ok(Built::Reported(infos, tools, Some((listing, version))))
            }
        },
    }
}

/// Binds `recipe`, whose validated layout is `validated`, to one session.
async fn bind(
    recipe: &Recipe,
    validated: &Arc<Layout>,
    bindings: Bindings,
) -> Result<Binding, BindError> {
    if bindings.session_id().is_nil() {
        return Err(BindError::new(
            BindErrorKind::InvalidSessionId,
            "the session id is the nil UUID; use `SessionId::new()`",
        ));
    }
    if bindings.loop_id().is_nil() {
        return Err(BindError::new(
            BindErrorKind::InvalidLoopId,
            "the loop id is the nil UUID; use `LoopId::new()`",
        ));
    }
    for (index, definition) in bindings.extra_tools().iter().enumerate() {
        check_tool_definition(
            definition,
            &format!("bindings.tools[{index}]"),
            recipe.name_rules,
        )
        .map_err(|error| {
            BindError::new(
                BindErrorKind::InvalidDefinition,
                format!("extra tool definition `{}` is invalid", definition.name()),
            )
            .name(definition.name())
            .index(index)
            .source(error)
        })?;
    }

    // Without extra tools, every binding has the validated layout.
    let layout = if bindings.extra_tools().is_empty() {
        Arc::clone(validated)
    } else {
        Arc::new(validated.with_extra(recipe, bindings.extra_tools()))
    };
    match &layout.collisions {
        Collisions::None => {}
        Collisions::DefinitionNames(found) => {
            return Err(duplicates_error(
                BindErrorKind::DuplicateDefinitionName,
                layout_duplicates(&layout.definitions, found),
            ));
        }
        Collisions::ToolNames(found) => {
            return Err(duplicates_error(
                BindErrorKind::DuplicateToolName,
                layout_duplicates(&layout.definitions, found),
            ));
        }
    }
    let distinct = &layout.definitions;

    // Every distinct factory runs once, all of them concurrently; the first
    // failure in declaration order is reported, whatever finished first.
    // `build` is called inside the async block, so a factory that panics
    // while creating its future (a hand-written `ToolFactory`) is caught
    // like one that panics while running. A `from_fn` tool is made at once,
    // with no future of its own to box.
    //
    // `join_all` of more than 30 futures switches to a `FuturesOrdered`,
    // which allocates a task per future; groups of at most 30, all joined
    // at once, keep every factory concurrent without those allocations.
    let session = bindings.session();
    let built: Vec<_> = join_all(distinct.chunks(JOINED_AT_ONCE).map(|group| {
        join_all(
            group
                .iter()
                .map(|definition| AssertUnwindSafe(build(definition, session)).catch_unwind()),
        )
    }))
    .await
    .into_iter()
    .flatten()
    .collect();

    let mut tools = Vec::with_capacity(layout.table.tool_definition.len());
    // Per definition, where its tools are in `tools`.
    let mut produced: Vec<Range<usize>> = Vec::with_capacity(distinct.len());
    let mut listings = Vec::new();
    for (index, (definition, outcome)) in distinct.iter().zip(built).enumerate() {
        let built = match outcome {
            Ok(Ok(built)) => built,
            Ok(Err(error)) => {
                return Err(BindError::new(
                    BindErrorKind::FactoryFailed,
                    format!(
                        "the factory of tool definition `{}` failed",
                        definition.name()
                    ),
                )
                .name(definition.name())
                .source(error));
            }
            Err(panic) => {
                return Err(BindError::new(
                    BindErrorKind::FactoryPanicked,
                    format!(
                        "the factory of tool definition `{}` panicked",
                        definition.name()
                    ),
                )
                .name(definition.name())
                .source(FactoryPanic {
                    message: panic_message(panic.as_ref()),
                }));
            }
        };
        // Each tool's own checks first, so a bad name is reported as such
        // rather than as a mismatch with the declared names.
        let first = tools.len();
        match built {
            Built::Declared(declared, instance) => {
                tools.push(declared_tool(definition, declared, instance)?);
            }
            Built::Reported(infos, instances, listing) => {
                for (position, instance) in instances.into_iter().enumerate() {
                    tools.push(reported_tool(
                        definition,
                        infos,
                        position,
                        instance,
                        recipe.name_rules,
                    )?);
                }
                if let Some((listing, version)) = listing {
                    listings.push(Listed {
                        definition: index,
                        listing,
                        version: AtomicU64::new(version),
                    });
                }
            }
        }
        check_names(definition, &mut tools[first..])?;
        produced.push(first..tools.len());
    }
    // Without a discovering definition, the built names are the declared
    // ones, which were checked for collisions before any factory ran, and
    // the layout's table places them. Names a factory discovered can only
    // be checked now, and placed by a table of this binding's own.
    let table = if distinct.iter().any(tool::Definition::discovers_tools) {
        check_built_names(distinct, &produced, &tools)?;
        Arc::new(table_of(&layout, &produced, &tools))
    } else {
        Arc::clone(&layout.table)
    };
    let set = if listings.is_empty() {
        ToolSet::fixed(tools.into_boxed_slice(), table)
    } else {
        changing_set(tools.into_boxed_slice(), table, produced)
    };
    Ok(Binding {
        session_id: bindings.session_id(),
        loop_id: bindings.loop_id(),
        current: layout.initial,
        layout,
        tools: Tools::new(set, listings, recipe.name_rules),
        claims: crate::gate::InMemoryPauseClaims::new(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::session::{LoopId, SessionId};
    use crate::tool::{BoxError, ToolInfo};

    async fn bind_n(tool: &tool::Definition, n: usize) -> Vec<Definition<Bound>> {
        let definition = Definition::builder()
            .name("agent")
            .tool(tool)
            .build()
            .validate()
            .unwrap();
        let mut bound = Vec::new();
        for _ in 0..n {
            bound.push(
                definition
                    .bind(Bindings::new(SessionId::new(), LoopId::new()))
                    .await
                    .unwrap(),
            );
        }
        bound
    }

    fn validators(bound: &[Definition<Bound>]) -> Vec<Arc<jsonschema::Validator>> {
        bound
            .iter()
            .map(|b| Arc::clone(&b.binding().tools.current().tools[0].checked.validator))
            .collect()
    }

    fn parameters() -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}}})
    }

    #[tokio::test]
    async fn from_fn_schema_is_compiled_once_across_bindings() {
        let add = tool::Definition::from_fn(
            ToolInfo::new("add", "Adds.", parameters()),
            |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
        );
        let bound = bind_n(&add, 4).await;
        let validators = validators(&bound);
        assert!(
            validators.iter().all(|v| Arc::ptr_eq(v, &validators[0])),
            "one compiled validator shared by all 4 bindings"
        );
        // The tools themselves are still built per binding.
        assert!(!bound[0].tools()[0].same_instance(&bound[1].tools()[0]));
    }

    #[tokio::test]
    async fn typed_fn_schema_is_compiled_once_across_bindings() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Arguments {
            #[allow(dead_code)]
            a: i64,
        }
        let typed = tool::Definition::typed_fn("typed", "Typed.", |_: Arguments, _context| async {
            Ok::<_, BoxError>("ok")
        });
        let validators = validators(&bind_n(&typed, 3).await);
        assert!(validators.iter().all(|v| Arc::ptr_eq(v, &validators[0])));
    }

    /// A tool a factory builds with an info of its own.
    struct Echo(ToolInfo);

    #[async_trait::async_trait]
    impl Tool for Echo {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        async fn invoke(
            &self,
            arguments: Value,
            _context: &tool::CallContext,
        ) -> Result<tool::ToolOutput, BoxError> {
            Ok(arguments.into())
        }
    }

    #[tokio::test]
    async fn factory_tool_with_an_equal_info_shares_the_checked_one() {
        // Each binding's tool reports an info of its own; equal ones are
        // checked once and the bindings share the result, the info the
        // model sees included.
        let echo = tool::Definition::bundle("echo", ["echo"], |_session| async {
            Ok::<_, BoxError>(vec![
                Arc::new(Echo(ToolInfo::new("echo", "Echoes.", parameters()))) as Arc<dyn Tool>,
            ])
        });
        let bound = bind_n(&echo, 3).await;
        let validators = validators(&bound);
        assert!(validators.iter().all(|v| Arc::ptr_eq(v, &validators[0])));
        assert!(std::ptr::eq(
            bound[0].tools()[0].info(),
            bound[2].tools()[0].info()
        ));
        assert!(!bound[0].tools()[0].same_instance(&bound[1].tools()[0]));
    }

    #[tokio::test]
    async fn factory_tool_with_a_different_info_is_checked_for_its_binding() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let echo = tool::Definition::bundle("echo", ["echo"], move |_session| {
            let n = calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                let parameters = json!({"type": "object", "required": [format!("a{n}")]});
                Ok::<_, BoxError>(vec![Arc::new(Echo(ToolInfo::new(
                    "echo",
                    format!("Echo {n}."),
                    parameters,
                ))) as Arc<dyn Tool>])
            }
        });
        let bound = bind_n(&echo, 2).await;
        let validators = validators(&bound);
        assert!(!Arc::ptr_eq(&validators[0], &validators[1]));
        assert!(validators[0].is_valid(&json!({"a0": 1})));
        assert!(!validators[1].is_valid(&json!({"a0": 1})), "its own schema");
        assert_eq!(bound[1].tools()[0].info().description, "Echo 1.");
        assert_eq!(
            bound[1].current_mode().tools[0].info().description,
            "Echo 1."
        );
        assert_eq!(bound[0].tools()[0].info().description, "Echo 0.");
    }
}
