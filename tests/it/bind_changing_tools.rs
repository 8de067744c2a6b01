//! `tool::Definition::changing`: a binding lists a changing definition's
//! tools again before a model request when its listing's version moved,
//! in that binding only; a list that fails (its checks, its reading, a
//! panic) keeps the old tools and is an event.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_loop::bind::{BindErrorKind, ToolCallErrorKind};
use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::gate::{GateCall, GateDecision};
use agent_loop::session::Session;
use agent_loop::tool::{
    self, BoxError, CallContext, ListingFactory, Tool, ToolInfo, ToolListing, ToolOutput,
};
use agent_loop::turn::{CallDecision, Resume, ScriptedModel, TurnEvent, TurnOptions, TurnStatus};
use agent_loop::{Bindings, Bound, Definition, LoopId, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// What the next `list` does.
#[derive(Clone, Copy, PartialEq)]
enum Next {
    List,
    Fail,
    Panic,
    /// Lists after [`SLOW_LIST`], as a server's `tools/list` may take.
    Slow,
}

/// How long a [`Next::Slow`] list takes.
const SLOW_LIST: std::time::Duration = std::time::Duration::from_millis(500);

/// One binding's catalogue: tool names, listed on request.
struct Catalogue {
    names: Mutex<Vec<String>>,
    version: AtomicU64,
    next: Mutex<Next>,
}

impl Catalogue {
    /// Changes the tools (and the version), as a tool of it may.
    fn set(&self, names: &[&str], next: Next) {
        *self.names.lock().unwrap() = names.iter().map(|name| (*name).to_owned()).collect();
        *self.next.lock().unwrap() = next;
        self.version.fetch_add(1, Ordering::AcqRel);
    }
}

/// A tool of the catalogue: answers its name; `grow` adds `added`.
struct Entry {
    info: ToolInfo,
    catalogue: Arc<Catalogue>,
}

#[async_trait::async_trait]
impl Tool for Entry {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn invoke(
        &self,
        _arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        if self.info.name == "grow" {
            self.catalogue.set(&["grow", "first", "added"], Next::List);
        }
        Ok(format!("{} ran", self.info.name).into())
    }
}

struct Listing(Arc<Catalogue>);

#[async_trait::async_trait]
impl ToolListing for Listing {
    fn version(&self) -> u64 {
        self.0.version.load(Ordering::Acquire)
    }

    async fn list(&self) -> Result<Vec<Arc<dyn Tool>>, BoxError> {
        let next = *self.0.next.lock().unwrap();
        match next {
            Next::Fail => return Err("the catalogue is offline".into()),
            Next::Panic => panic!("the catalogue panicked"),
            Next::Slow => tokio::time::sleep(SLOW_LIST).await,
            Next::List => {}
        }
        let names = self.0.names.lock().unwrap().clone();
        Ok(names
            .into_iter()
            .map(|name| {
                let schema = if name == "bad" {
                    json!({"type": "string"})
                } else {
                    json!({"type": "object"})
                };
                Arc::new(Entry {
                    info: ToolInfo::new(name.clone(), format!("The {name} tool."), schema),
                    catalogue: Arc::clone(&self.0),
                }) as Arc<dyn Tool>
            })
            .collect())
    }
}

/// Makes each binding's catalogue, and keeps them for the test.
#[derive(Clone, Default)]
struct Catalogues(Arc<Mutex<Vec<Arc<Catalogue>>>>);

#[async_trait::async_trait]
impl ListingFactory for Catalogues {
    async fn build(&self, _session: &Session) -> Result<Arc<dyn ToolListing>, BoxError> {
        let catalogue = Arc::new(Catalogue {
            names: Mutex::new(vec!["grow".into(), "first".into()]),
            version: AtomicU64::new(0),
            next: Mutex::new(Next::List),
        });
        self.0.lock().unwrap().push(Arc::clone(&catalogue));
        Ok(Arc::new(Listing(catalogue)))
    }
}

/// The catalogue (definition `catalogue`) beside a tool of its own, `own`.
fn definition(catalogues: &Catalogues) -> Definition<agent_loop::Validated> {
    let own = tool::Definition::from_fn(
        ToolInfo::new("own", "The binding's own.", json!({"type": "object"})),
        |_arguments: Value, _context| async { Ok::<_, BoxError>("own ran") },
    );
    Definition::builder()
        .name("agent")
        .tool(own)
        .tool(tool::Definition::changing("catalogue", catalogues.clone()))
        .build()
        .validate()
        .unwrap()
}

async fn bind(definition: &Definition<agent_loop::Validated>) -> Definition<Bound> {
    definition
        .bind(Bindings::new(SessionId::new(), LoopId::new()))
        .await
        .unwrap()
}

/// A turn calling each batch's tools with `{}`: the requests' tool names,
/// the results (text, is_error) and the events.
async fn turn(
    session: &Definition<Bound>,
    batches: &[&[&str]],
) -> (Vec<Vec<String>>, Vec<(String, bool)>, Vec<TurnEvent>) {
    let ran = crate::turn_common::run_batches(session, batches).await;
    (ran.offered, ran.results, ran.events)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

fn tool_names(session: &Definition<Bound>) -> Vec<String> {
    session
        .tools()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect()
}

#[tokio::test]
async fn a_new_list_reaches_the_next_request_of_its_binding_only() {
    let catalogues = Catalogues::default();
    let definition = definition(&catalogues);
    let (session, other) = (bind(&definition).await, bind(&definition).await);
    let before = session.tool("first").unwrap();

    let (offered, results, events) = turn(&session, &[&["grow"], &["added"]]).await;
    assert_eq!(
        offered,
        [
            names(&["own", "grow", "first"]),
            names(&["own", "grow", "first", "added"]),
            names(&["own", "grow", "first", "added"]),
        ]
    );
    assert_eq!(
        results,
        [
            ("grow ran".to_owned(), false),
            ("added ran".to_owned(), false)
        ]
    );
    assert!(events.contains(&TurnEvent::ToolListChanged {
        definition: "catalogue".into(),
        tools: names(&["grow", "first", "added"]),
    }));
    assert_eq!(tool_names(&session), ["own", "grow", "first", "added"]);
    // The other binding of the same definition keeps its own list.
    assert_eq!(tool_names(&other), ["own", "grow", "first"]);
    // A handle taken before the change still reaches its tool.
    assert_eq!(before.invoke(json!({})).await.unwrap().text(), "first ran");
}

#[tokio::test]
async fn a_list_that_fails_its_checks_cannot_be_read_or_panics_keeps_the_old_tools() {
    let catalogues = Catalogues::default();
    let session = bind(&definition(&catalogues)).await;
    let catalogue = Arc::clone(&catalogues.0.lock().unwrap()[0]);
    let cases = [
        (
            &["first", "own"][..],
            Next::List,
            BindErrorKind::DuplicateToolName,
            "bind: duplicate tool name `own` (definitions `own` and `catalogue`)",
        ),
        (
            &["first", "bad"][..],
            Next::List,
            BindErrorKind::InvalidToolInfo,
            "bind: the parameters of tool `bad` must be a JSON Schema with \"type\": \"object\" at the top level, got {\"type\":\"string\"}",
        ),
        (
            &["first", "first"][..],
            Next::List,
            BindErrorKind::InvalidToolInfo,
            "bind: tool definition `catalogue` built two tools named `first`",
        ),
        (
            &["first"][..],
            Next::Fail,
            BindErrorKind::FactoryFailed,
            "bind: the tools of definition `catalogue` could not be listed again: the catalogue is offline",
        ),
        (
            &["first"][..],
            Next::Panic,
            BindErrorKind::FactoryPanicked,
            "bind: the tools of definition `catalogue` could not be listed again: panicked: the catalogue panicked",
        ),
    ];
    for (list, next, kind, message) in cases {
        catalogue.set(list, next);
        let (offered, results, events) = turn(&session, &[&["grow"]]).await;
        let refused: Vec<&TurnEvent> = events
            .iter()
            .filter(|event| matches!(event, TurnEvent::ToolListRefused { .. }))
            .collect();
        assert_eq!(
            refused,
            [&TurnEvent::ToolListRefused {
                definition: "catalogue".into(),
                kind,
                message: message.into(),
            }]
        );
        assert_eq!(offered[0], names(&["own", "grow", "first"]), "{message}");
        assert_eq!(results, [("grow ran".to_owned(), false)]);
        // `grow` listed a good list again: the next turn offers it.
        let (offered, _, _) = turn(&session, &[]).await;
        assert_eq!(offered[0], names(&["own", "grow", "first", "added"]));
        catalogue.set(&["grow", "first"], Next::List);
        let (offered, _, _) = turn(&session, &[]).await;
        assert_eq!(offered[0], names(&["own", "grow", "first"]));
    }
}

#[tokio::test]
async fn a_tool_the_new_list_dropped_is_no_longer_offered() {
    let catalogues = Catalogues::default();
    let session = bind(&definition(&catalogues)).await;
    catalogues.0.lock().unwrap()[0].set(&["grow"], Next::List);
    let (_, results, _) = turn(&session, &[&["first", "missing"]]).await;
    assert_eq!(
        results,
        [
            (
                "tool `first` is no longer offered: `catalogue` changed its tools; available tools: own, grow"
                    .to_owned(),
                true
            ),
            (
                "unknown tool `missing`; available tools: own, grow".to_owned(),
                true
            ),
        ]
    );
    let error = session.invoke("first", json!({})).await.unwrap_err();
    assert_eq!(error.kind, ToolCallErrorKind::NoLongerOffered);
}

#[tokio::test]
async fn approving_a_paused_call_whose_tool_went_away_answers_it_no_longer_offered() {
    let catalogues = Catalogues::default();
    let definition = Definition::builder()
        .name("agent")
        .tool(tool::Definition::changing("catalogue", catalogues.clone()))
        .tool_gate("first", |_call: &GateCall<'_>| {
            GateDecision::ask("a person decides")
        })
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = ScriptedModel::new([
        ModelResponse::tool_calls([ToolCall::new("call_1", "first", "{}")]),
        ModelResponse::answer("done"),
    ]);
    let mut conversation = vec![Message::user("go")];
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let TurnStatus::Paused(paused) = outcome.status else {
        panic!("not paused: {:?}", outcome.status);
    };
    catalogues.0.lock().unwrap()[0].set(&["grow"], Next::List);
    let resume = Resume::new(*paused, [CallDecision::approve("call_1")]);
    let outcome = session
        .run_turn(
            &model,
            &mut conversation,
            TurnOptions::builder().resume(&resume).build(),
        )
        .await
        .unwrap();
    assert_eq!(
        outcome.status,
        TurnStatus::Completed {
            answer: "done".into()
        }
    );
    let answered: Vec<(String, bool)> = conversation
        .iter()
        .filter_map(|message| match message {
            Message::Tool(result) => Some((result.text(), result.is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        answered,
        [(
            "tool `first` is no longer offered: `catalogue` changed its tools; available tools: grow"
                .to_owned(),
            true
        )]
    );
}

/// A request's duration is the model's: listing a changed definition's
/// tools again before it (a server's `tools/list`, here half a second) is
/// not counted in `model_duration` nor in the `ModelResponded` event.
#[tokio::test]
async fn listing_the_tools_again_is_not_counted_as_the_model_request() {
    let catalogues = Catalogues::default();
    let session = bind(&definition(&catalogues)).await;
    // Moved before the turn: its first request lists again, slowly.
    let catalogue = Arc::clone(&catalogues.0.lock().unwrap()[0]);
    catalogue.set(&["grow", "first", "added"], Next::Slow);

    let ran = crate::turn_common::run_batches(&session, &[&["added"]]).await;

    assert_eq!(ran.results, [("added ran".to_owned(), false)]);
    let model_duration = ran.outcome.stats.iterations[0].model_duration;
    // The scripted model answers at once; the list took `SLOW_LIST`.
    assert!(
        model_duration < SLOW_LIST / 2,
        "the request took {model_duration:?}: the tool list's {SLOW_LIST:?} counted as the model's"
    );
    for event in &ran.events {
        if let TurnEvent::ModelResponded { duration, .. } = event {
            assert!(*duration < SLOW_LIST / 2, "{duration:?}");
        }
    }
    assert!(
        ran.outcome.stats.duration >= SLOW_LIST,
        "the turn's own time counts it"
    );
}

/// The catalogue through the one factory trait, `tool::Factory`, as a
/// listing or as a fixed list of what it lists now.
struct AsFactory {
    catalogues: Catalogues,
    listing: bool,
}

#[async_trait::async_trait]
impl tool::Factory for AsFactory {
    async fn tools(&self, session: &Session) -> Result<tool::Tools, BoxError> {
        let listing = self.catalogues.build(session).await?;
        if self.listing {
            Ok(tool::Tools::Listing(listing))
        } else {
            Ok(tool::Tools::Fixed(listing.list().await?))
        }
    }
}

/// A `tool::Factory` returning a listing is a changing definition; one
/// returning a fixed list keeps it whatever the catalogue does. Declared
/// names hold at every new list too: a list with other names is refused
/// (the old tools stay), one with the same names in another order is
/// offered in the declared order.
#[tokio::test]
async fn the_one_factory_trait_builds_a_fixed_list_or_a_listing() {
    let bound = |definition: tool::Definition| async move {
        let definition = Definition::builder()
            .name("agent")
            .tool(definition)
            .build()
            .validate()
            .unwrap();
        bind(&definition).await
    };
    for listing in [true, false] {
        let catalogues = Catalogues::default();
        let factory = AsFactory {
            catalogues: catalogues.clone(),
            listing,
        };
        let session = bound(tool::Definition::discovering("catalogue", factory)).await;
        let (offered, _, _) = turn(&session, &[&["grow"]]).await;
        let after = if listing {
            names(&["grow", "first", "added"])
        } else {
            names(&["grow", "first"])
        };
        assert_eq!(offered, [names(&["grow", "first"]), after], "{listing}");
    }

    let catalogues = Catalogues::default();
    let factory = AsFactory {
        catalogues: catalogues.clone(),
        listing: true,
    };
    let session = bound(tool::Definition::from_factory(
        "catalogue",
        ["first", "grow"],
        factory,
    ))
    .await;
    assert_eq!(
        tool_names(&session),
        ["first", "grow"],
        "the declared order"
    );
    let catalogue = Arc::clone(&catalogues.0.lock().unwrap()[0]);
    catalogue.set(&["grow", "first", "added"], Next::List);
    let (offered, _, events) = turn(&session, &[]).await;
    assert_eq!(offered, [names(&["first", "grow"])]);
    assert!(
        events.iter().any(|event| matches!(
            event,
            TurnEvent::ToolListRefused { kind: BindErrorKind::InvalidToolInfo, message, .. }
                if message.contains("declared [\"first\", \"grow\"]")
        )),
        "{events:?}"
    );
    catalogue.set(&["grow", "first"], Next::List);
    let (offered, _, _) = turn(&session, &[]).await;
    assert_eq!(offered, [names(&["first", "grow"])]);
}
