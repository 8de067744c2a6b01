//! agent-loop-core: the tool loop of [agent-loop] and nothing around it.
//! Declare the tools an LLM agent may use, bind them to one live session,
//! and run the tool loop under hard limits, against any [`Model`](turn::Model).
//!
//! Most users depend on the `agent-loop` crate, which re-exports this one
//! with the provider formats, the HTTP models, cassettes and MCP
//! (`agent-loop-providers`, `agent-loop-mcp`) under the same paths. This
//! crate has no HTTP client, no MCP SDK and no HTTP server: what a turn
//! needs of a model is the [`Model`](turn::Model) trait, and the turn itself
//! is a state machine a driver steps ([`turn::TurnSteps`]), so a durable
//! runtime can journal it.
//!
//! [agent-loop]: https://docs.rs/agent-loop
//!
//! # The map
//!
//! Data flows one way: builder → validate → bind → turn. The modules stand
//! in layers, and a module uses only modules of lower layers (a test reads
//! every `crate::` path in `src/` and keeps this table true; Cargo keeps
//! the satellites above the core):
//!
//! | layer | module | concept |
//! | ---: | --- | --- |
//! | 0 | [`conversation`] | the provider-neutral [`Message`](conversation::Message)s, tool calls and results, and [`ModelResponse`](conversation::ModelResponse) |
//! | 0 | [`session`] | a session's [`SessionId`], [`LoopId`] and the caller's data ([`Session`]) |
//! | 1 | [`support`] | helpers the satellite crates share with the core, one file each: bounding model-facing text, panic messages, JSON type names and nesting depth ([`TooDeep`]), credentials kept out of URLs shown, a fixed hash, the ids minted where a provider sent none; and the core's own (a future run until a cancellation token fires, a mutex locked through poisoning) |
//! | 2 | [`tool`] | tool definitions (factories), the [`Tool`] trait, [`ToolInfo`], name rules |
//! | 3 | [`limits`] | per-turn [`ToolLimits`] and their resolution |
//! | 3 | [`middleware`] | [`ToolMiddleware`]s around every tool execution |
//! | 3 | [`gate`] | the approval [`Gate`](gate::Gate) that allows or denies each call a model makes |
//! | 3 | [`context`] | a request's tokens estimated ([`TokenEstimator`](context::TokenEstimator)), and [`Compactor`](context::Compactor)s whose replacement is checked |
//! | 4 | [`mode`] | named [`Mode`]s with their own tools, limits and instructions |
//! | 5 | [`definition`] | the loop [`Definition<S>`](Definition), its builder, its states and `validate` |
//! | 6 | [`bind`] | [`Bindings`], `bind`, [`BindError`], and the bound loop's tools and modes |
//! | 7 | `event` | what a turn tells its watchers ([`TurnEvent`](turn::TurnEvent)s, sent through [`TurnEvents`](turn::TurnEvents)) |
//! | 7 | `output` | the structured [`Output`](turn::Output) a turn must end in |
//! | 8 | `model_api` | the [`Model`](turn::Model) trait: what a turn asks a language model ([`ModelRequest`](turn::ModelRequest)) and how that fails ([`ModelError`](turn::ModelError)) |
//! | 9 | [`testing`] | models for tests: [`ScriptedModel`](testing::ScriptedModel) replays fixed responses, [`SchemaModel`](testing::SchemaModel) calls every offered tool with arguments made from its JSON Schema |
//! | 9 | `summarize` | the compactor that asks a model for a summary ([`Summarize`](turn::Summarize)) |
//! | 10 | [`turn`] | the turn: a state machine a driver steps, and `run_turn`, its in-process driver |
//!
//! # Example
//!
//! A loop's life in order: a tool, the definition that declares it, the
//! binding to one session, a turn, and the two ways a turn reports
//! trouble: to the model (a call's error result, and the turn goes on) and
//! to you (a typed [`TurnError`](turn::TurnError) to match).
//!
//! ```
//! use agent_loop_core::conversation::{Message, ModelResponse, ToolCall};
//! use agent_loop_core::testing::ScriptedModel;
//! use agent_loop_core::tool::{self, BoxError, ToolInfo};
//! use agent_loop_core::turn::{ExceededLimit, TurnError};
//! use agent_loop_core::{Bindings, Definition, LoopId, SessionId, ToolLimits};
//! use serde_json::{json, Value};
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // 1. A tool: a ToolInfo (name, description, the JSON Schema of its
//! //    arguments) and an async handler.
//! let add = tool::Definition::from_fn(
//!     ToolInfo::new(
//!         "add",
//!         "Adds two integers.",
//!         json!({
//!             "type": "object",
//!             "properties": { "a": { "type": "integer" }, "b": { "type": "integer" } },
//!             "required": ["a", "b"]
//!         }),
//!     ),
//!     |arguments: Value, _context| async move {
//!         Ok::<_, BoxError>(json!(arguments["a"].as_i64().unwrap_or(0) + arguments["b"].as_i64().unwrap_or(0)))
//!     },
//! );
//!
//! // 2. The definition: the loop's name, tools and limits, checked once.
//! let definition = Definition::builder()
//!     .name("calculator")
//!     .tool(&add)
//!     .tool_limits(ToolLimits::new().iterations(3))
//!     .build()
//!     .validate()?;
//!
//! // 3. Bind: the tools built for one session.
//! let session = definition.bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
//!
//! // 4. A turn: the model asks for tools until it answers.
//! let model = ScriptedModel::new([
//!     ModelResponse::tool_calls([
//!         ToolCall::new("call_1", "add", r#"{"a": 2, "b": 3}"#),
//!         ToolCall::new("call_2", "multiply", r#"{"a": 2, "b": 3}"#), // not a tool
//!         ToolCall::new("call_3", "add", r#"{"a": "two"}"#),          // fails the schema
//!     ]),
//!     ModelResponse::answer("2 + 3 = 5"),
//! ]);
//! let cancellation = CancellationToken::new();
//! let mut conversation = vec![Message::user("What is 2 + 3?")];
//! let outcome = session.run_turn(&model, &mut conversation, &cancellation).await?;
//! assert_eq!(outcome.answer(), Some("2 + 3 = 5"));
//!
//! // 5. Errors. A call that fails is an error result the model reads, and
//! //    the turn goes on.
//! let results: Vec<_> = conversation
//!     .iter()
//!     .filter_map(Message::as_tool_result)
//!     .map(|result| (result.text(), result.is_error))
//!     .collect();
//! assert_eq!(results[0], ("5".to_owned(), false));
//! assert!(results[1].0.starts_with("unknown tool `multiply`; available tools: add"));
//! assert!(results[2].1);
//!
//! // What stops a turn is a typed error for you: a model that keeps
//! // calling tools runs into `iterations`, and its fourth batch never runs.
//! let looping = ScriptedModel::new((1..=4).map(|n| {
//!     ModelResponse::tool_calls([ToolCall::new(format!("call_{n}"), "add", r#"{"a": 1, "b": 1}"#)])
//! }));
//! let mut conversation = vec![Message::user("Count with me.")];
//! match session.run_turn(&looping, &mut conversation, &cancellation).await {
//!     Err(TurnError::ToolLimit(limit)) => assert_eq!(limit.kind, ExceededLimit::Iterations),
//!     other => panic!("expected the iteration limit, got {other:?}"),
//! }
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Decisions
//!
//! Choices this crate made where the providers leave it open, and why,
//! are pages in the crate's `docs/` folder, each shown under "Decisions"
//! on the page of the module it is about:
//!
//! - [`limits`] (`limits.md`): two limit types, `u32` setters, set once or last wins.
//! - [`definition`] (`tools-and-binding.md`): factories, tool output, what `bind` reuses.
//! - [`middleware`] (`tool-calls.md`): one call pipeline, and who failed.
//! - [`turn`] (`turn.md`): final answers, what counts, tool call ids, options, outcome.
//! - [`turn`] (`structured-output.md`): a tool call by default, native output per turn.
//! - [`turn`] (`errors.md`): one error pattern, JSON nested at most 128 levels.
//! - [`turn::pause`] (`pauses-and-agents.md`): a pause ends a turn, an agent runs under a call.
//! - [`context`] (`compaction.md`): a compaction is checked, not trusted.
//!
//! How a turn runs, in full (`run-turn.md`), is on [`Definition::run_turn`].

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod bind;
pub mod context;
pub mod conversation;
pub mod definition;
mod event;
pub mod gate;
pub mod limits;
pub mod middleware;
pub mod mode;
mod model_api;
mod output;
pub mod session;
mod summarize;
pub mod support;
pub mod testing;
pub mod tool;
pub mod turn;

pub use bind::{BindError, BindErrorKind, Bindings, Bound};
pub use definition::{Defined, Definition, DefinitionError, DefinitionErrorKind, Validated};
pub use limits::{Limit, ResolvedToolLimits, ToolLimits};
pub use middleware::{Next, ToolInvocation, ToolMiddleware};
pub use mode::Mode;
pub use session::{LoopId, Session, SessionId};
pub use support::json::TooDeep;
pub use tool::{STRUCTURED_OUTPUT_TOOL_NAME, Tool, ToolInfo};
