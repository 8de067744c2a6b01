//! agent-loop: declare the tools an LLM agent may use, bind them to one live
//! session, and run the tool loop under hard limits.
//!
//! # The map
//!
//! This crate is a facade: the crates of the workspace, under one set of
//! paths and features. Each stands above the ones it uses, and Cargo keeps
//! it so (a crate cannot import one above it):
//!
//! | crate | modules here | what | feature |
//! | --- | --- | --- | --- |
//! | `agent-loop-core` | [`conversation`], [`session`], [`tool`], [`limits`], [`middleware`], [`gate`], [`context`], [`mode`], [`definition`], [`bind`], [`turn`], [`testing`] | the tool loop: tools declared as factories, a [`Definition`] built, validated and bound to one session, the turn a driver steps under hard limits, the [`Model`](turn::Model) trait. No HTTP client, no MCP SDK | always |
//! | `agent-loop-providers` | [`wire`], [`cassette`], [`catalog`], `model` | each provider's JSON to and from the conversation; the HTTP models (`OpenAiModel`, `OpenAiResponsesModel`, `AnthropicModel`, `GeminiModel`); a model's traffic recorded and replayed; each known model's limits, prices and capabilities (models.dev's) | `model`: `openai`, `anthropic`, `gemini` |
//! | `agent-loop-mcp` | `mcp`, `serve` | MCP servers as tool factories, one connection per binding; a binding served as an MCP server | `mcp`, `mcp-server` |
//! | `agent-loop-restate` | (its own crate) | durable turns on Restate: a crash resumes the turn, an approval waits for days | |
//!
//! Inside the core, the modules stand in layers too (the table on
//! `agent-loop-core`'s page, kept true by a test): data flows one way,
//! builder → validate → bind → turn.
//!
//! # Example
//!
//! A loop's life in order: a tool, the definition that declares it, the
//! binding to one session, a turn, and the two ways a turn reports
//! trouble: to the model (a call's error result, and the turn goes on) and
//! to you (a typed [`TurnError`](turn::TurnError) to match).
//!
//! ```
//! use agent_loop::conversation::{Message, ModelResponse, ToolCall};
//! use agent_loop::testing::ScriptedModel;
//! use agent_loop::tool::{self, BoxError, ToolInfo};
//! use agent_loop::turn::{ExceededLimit, TurnError};
//! use agent_loop::{Bindings, Definition, LoopId, SessionId, ToolLimits};
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
//! **Providers.** The model here is a script
//! ([`ScriptedModel`](testing::ScriptedModel)). A real one is an HTTP
//! client of the `model` module (features `openai`, `anthropic`,
//! `gemini`), or any [`Model`](turn::Model) you write; the [`wire`] module
//! reads and writes each provider's JSON for it. Tools can also come from
//! MCP servers (`mcp`, feature `mcp`), and a binding can be served as one
//! (`serve`, feature `mcp-server`).
//!
//! # Decisions
//!
//! Choices this crate made where the providers leave it open, and why,
//! are pages in each crate's `docs/` folder, each shown under "Decisions"
//! on the page of the module it is about (`model`, `mcp` and `serve` are
//! documented with their features):
//!
//! - [`limits`] (`limits.md`): two limit types, `u32` setters, set once or last wins.
//! - [`definition`] (`tools-and-binding.md`): factories, tool output, what `bind` reuses.
//! - [`middleware`] (`tool-calls.md`): one call pipeline, and who failed.
//! - [`turn`] (`turn.md`): final answers, what counts, tool call ids, options, outcome.
//! - [`turn`] (`structured-output.md`): a tool call by default, native output per turn.
//! - [`turn`] (`errors.md`): one error pattern, JSON nested at most 128 levels.
//! - [`turn::pause`] (`pauses-and-agents.md`): a pause ends a turn, an agent runs under a call.
//! - [`context`] (`compaction.md`): a compaction is checked, not trusted.
//! - [`wire`] (`providers.md`): what goes back to which provider, blank text, usage, origins.
//! - `model` (`http-models.md`): retries and timeouts, Claude's thinking forms.
//! - `mcp` (`mcp.md`): one server per binding, tool lists and result size.
//! - `serve` (`mcp-server.md`): one binding per MCP session.
//! - This page (`workspace.md`, below): the crates and where each thing went.
//!
//! How a turn runs, in full (`run-turn.md`), is on [`Definition::run_turn`].
//!
#![doc = include_str!("../docs/workspace.md")]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(inline)]
pub use agent_loop_core::{
    BindError, BindErrorKind, Bindings, Bound, Defined, Definition, DefinitionError,
    DefinitionErrorKind, Limit, LoopId, Mode, Next, ResolvedToolLimits,
    STRUCTURED_OUTPUT_TOOL_NAME, Session, SessionId, TooDeep, Tool, ToolInfo, ToolInvocation,
    ToolLimits, ToolMiddleware, Validated,
};
// Inlined, as axum shows axum-core's items: the facade's page lists the
// modules and items themselves, not a line naming the crate they are from.
#[doc(inline)]
pub use agent_loop_core::{
    bind, context, conversation, definition, gate, limits, middleware, mode, session, testing,
    tool, turn,
};
#[doc(inline)]
pub use agent_loop_providers::{cassette, catalog, wire};

#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "openai", feature = "anthropic", feature = "gemini")))
)]
#[doc(inline)]
pub use agent_loop_providers::model;

#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
#[doc(inline)]
pub use agent_loop_mcp::client as mcp;

#[cfg(feature = "mcp-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-server")))]
#[doc(inline)]
pub use agent_loop_mcp::server as serve;

// The README's example is compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
