//! agent-loop: declare the tools an LLM agent may use, bind them to one live
//! session, and run the tool loop under hard limits.
//!
//! # The map
//!
//! Data flows one way: builder → validate → bind → turn. The modules stand
//! in layers, and a module uses only modules of lower layers (a test reads
//! every `crate::` path in `src/` and keeps this table true):
//!
//! | layer | module | concept |
//! | ---: | --- | --- |
//! | 0 | [`conversation`] | the provider-neutral [`Message`](conversation::Message)s, tool calls and results, and [`ModelResponse`](conversation::ModelResponse) |
//! | 0 | [`session`] | a session's [`SessionId`], [`LoopId`] and the caller's data ([`Session`]) |
//! | 0 | `support` | crate-private helpers, one file each: bounding model-facing text, a future run until a cancellation token fires, a mutex locked through poisoning, panic messages, JSON type names and nesting depth ([`TooDeep`]), credentials kept out of URLs shown |
//! | 1 | [`tool`] | tool definitions (factories), the [`Tool`] trait, [`ToolInfo`], name rules |
//! | 2 | [`limits`] | per-turn [`ToolLimits`] and their resolution |
//! | 2 | [`middleware`] | [`ToolMiddleware`]s around every tool execution |
//! | 2 | [`gate`] | the approval [`Gate`](gate::Gate) that allows or denies each call a model makes |
//! | 2 | [`wire`] | OpenAI, Anthropic and MCP formats |
//! | 2 | [`context`] | a request's tokens estimated ([`TokenEstimator`](context::TokenEstimator)), and [`Compactor`](context::Compactor)s whose replacement is checked against every export's rules |
//! | 3 | [`mode`] | named [`Mode`]s with their own tools, limits and instructions |
//! | 3 | `mcp` | MCP servers as tool factories, one connection per binding (feature `mcp`) |
//! | 4 | [`definition`] | the loop [`Definition<S>`](Definition), its builder, its states and `validate` |
//! | 5 | [`bind`] | [`Bindings`], `bind`, [`BindError`], and the bound loop's tools and modes |
//! | 6 | `serve` | a definition's bindings served as an MCP server, one per MCP session (feature `mcp-server`) |
//! | 6 | `event` | what a turn tells its watchers ([`TurnEvent`](turn::TurnEvent)s, sent through [`TurnEvents`](turn::TurnEvents)) |
//! | 6 | `output` | the structured [`Output`](turn::Output) a turn must end in |
//! | 7 | `model_api` | the [`Model`](turn::Model) trait: what a turn asks a language model ([`ModelRequest`](turn::ModelRequest)) and how that fails ([`ModelError`](turn::ModelError)) |
//! | 8 | [`testing`] | models for tests: [`ScriptedModel`](testing::ScriptedModel) replays fixed responses, [`SchemaModel`](testing::SchemaModel) calls every offered tool with arguments made from its JSON Schema |
//! | 8 | `summarize` | the compactor that asks a model for a summary ([`Summarize`](turn::Summarize)) |
//! | 9 | [`turn`] | the turn: a state machine a driver steps, and `run_turn`, its in-process driver |
//! | 10 | [`cassette`] | a model's traffic recorded once ([`Recorder`](cassette::Recorder)) and replayed offline ([`Replayer`](cassette::Replayer)), compared by meaning |
//! | 10 | `model` | real models over HTTP: `OpenAiModel` (feature `openai`), `AnthropicModel` (feature `anthropic`) |
//!
//! # Example
//!
//! ```
//! use agent_loop::{Bindings, LoopId, SessionId};
//! use agent_loop::tool::{self, BoxError, ToolInfo};
//! use agent_loop::conversation::{Message, ModelResponse, ToolCall};
//! use agent_loop::turn::ScriptedModel;
//! use agent_loop::{Definition, ToolLimits};
//! use serde_json::{json, Value};
//! use tokio_util::sync::CancellationToken;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! // A tool from data: a ToolInfo and an async handler.
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
//! let definition = Definition::builder()
//!     .name("calculator")
//!     .tool(&add)
//!     .tool_limits(ToolLimits::new().iterations(3))
//!     .build()
//!     .validate()?;
//! let session = definition.bind(Bindings::new(SessionId::new(), LoopId::new())).await?;
//!
//! let model = ScriptedModel::new([
//!     ModelResponse::tool_calls([
//!         ToolCall::new("call_1", "add", r#"{"a": 2, "b": 3}"#),
//!         ToolCall::new("call_2", "multiply", r#"{"a": 2, "b": 3}"#), // not a tool
//!         ToolCall::new("call_3", "add", r#"{"a": "two"}"#),          // fails the schema
//!     ]),
//!     ModelResponse::answer("2 + 3 = 5"),
//! ]);
//! let mut conversation = vec![Message::user("What is 2 + 3?")];
//! let outcome = session.run_turn(&model, &mut conversation, &CancellationToken::new()).await?;
//!
//! assert_eq!(outcome.answer(), Some("2 + 3 = 5"));
//! let results: Vec<_> = conversation
//!     .iter()
//!     .filter_map(Message::as_tool_result)
//!     .map(|result| (result.text(), result.is_error))
//!     .collect();
//! assert_eq!(results[0], ("5".to_owned(), false));
//! assert!(results[1].0.starts_with("unknown tool `multiply`; available tools: add"));
//! assert!(results[2].1);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Decisions
//!
//! Choices this crate made where the providers leave it open, and why:
//!
//! - **Limits: an override and a resolved value are two types.**
//!   [`ToolLimits`] (what a user writes, every field optional, `default()`
//!   all unset) resolves to [`ResolvedToolLimits`] (what a bound mode and a
//!   turn use, `default()` 25/100/8, results not cut). A count is a
//!   [`Limit`]: at most a positive number, or unlimited; `parallel` is a
//!   count only; `result_bytes` is unlimited (off, which lets a mode turn
//!   off a base limit) or a [`limits::ResultBytes`] of at least 256.
//! - **Limit setters take a plain `u32`** (`ToolLimits::new().iterations(5)`):
//!   a `NonZeroU32` argument would make every literal a `NonZeroU32::new(5).unwrap()`,
//!   and a panic on `0` would crash a server on a bad flag. `0` (and
//!   `result_bytes` 1–255) is refused by [`Definition::validate`] with the
//!   field path (`modes[1].tool_limits.parallel`) and a
//!   [`limits::InvalidLimit`] as source, the same check a config file gets.
//!   Config files use one serde form (`{"calls": "unlimited", "parallel":
//!   4}`) that refuses bad values, unknown keys and arrays where they are
//!   read, so `serde_path_to_error` names the field.
//! - **Set once on the definition builder, last wins on a [`Mode`].** The
//!   builder is a one-shot chain whose type already tracks the required
//!   name, so a second `.tool_limits(..)` there is a compile error. A
//!   `Mode` is a value kept in `Vec`s and passed to `.modes(..)`, which
//!   needs one type whatever was set on it, so its setters replace an
//!   earlier value, like `std::process::Command`'s; the docs of each
//!   setter say so.
//! - **Factories receive the [`Session`]**, not the whole [`Bindings`]:
//!   its ids and the caller's data, cheap to clone so a closure's future can
//!   own what it reads. The binding's extra tool definitions are no
//!   factory's business, and leaving them out keeps `tool` below `bind`.
//! - **Distinct factories of one binding run concurrently**; the first
//!   failure in declaration order is reported. Declared names are checked
//!   for collisions before any factory runs, built names after (a
//!   discovering definition, such as an MCP server, names its tools only
//!   when built). A collision error lists every colliding pair, each with
//!   both definitions, so one failed start shows all the renaming to do.
//! - **Tool handles borrow the binding** ([`bind::ToolHandle`]): they expose
//!   the [`ToolInfo`] and invocation through the middleware chain, never the
//!   `Arc<dyn Tool>`, so a tool cannot escape its session.
//! - **Tool output is JSON or content parts** ([`tool::ToolOutput`]): a
//!   JSON string is shown to the model as its text, any other value as
//!   compact JSON; content parts (text and images, from a screenshot tool
//!   or an MCP server) become the result's parts, so an image reaches the
//!   model without a detour through base64 text. `From<Value>` keeps a JSON
//!   tool a one-liner (`Ok(json!(..).into())`, and `from_fn` handlers
//!   return any `Into<ToolOutput>`). `result_bytes` counts and cuts text
//!   only: an image is sent whole or not at all. Tool errors are any
//!   [`tool::BoxError`]; the model sees their `Display`, cleaned of control
//!   characters and of invisible format characters (bidi controls,
//!   zero-width characters, the byte-order mark: Unicode General_Category
//!   `Cf`, read with the `unicode-general-category` crate) and bounded to
//!   [`turn::ERROR_TEXT_BYTES`]; so is every error sentence the crate
//!   writes for the model (an unknown tool's name, invalid arguments).
//!   Tool results that succeed are the tool's data and are not cleaned.
//! - **A response with no tool calls is a final answer** (its text, or
//!   empty); the whole assistant message is appended, reasoning included.
//! - **Cut-off calls count**: the calls of a response cut off by the output
//!   limit do not run, but count against `calls` and the batch counts one
//!   iteration, since the model spent them.
//! - **A conversation is checked before the first request**: an unanswered
//!   call gets an "interrupted" error result (after its assistant
//!   message's other results); a result that answers no call of the
//!   assistant message right before it, or a second result, is a typed
//!   error and nothing changes.
//! - **Reasoning, provider parts and extras go back only to their own
//!   format**: a signature is meaningless to another provider, and a field
//!   one provider defines is an unknown field (HTTP 400) to the other.
//! - **Empty and whitespace-only text is dropped** when parsing and when
//!   exporting: no provider accepts it back, and dropping it on both sides
//!   keeps parse → export → parse the identity.
//! - **Usage counts are `0` when not reported**, and `input_tokens` counts
//!   cached input too, for both providers, so sums compare.
//! - **Calls that never ran count**: an unknown tool or bad arguments still
//!   count against `calls`, since the model spent them.
//! - **Middlewares run only for calls that reach a tool**: a call refused
//!   for an unknown name or bad arguments never enters the chain, and
//!   arguments a middleware rewrites are not validated again.
//! - **A panicking model fails the turn** as a model error; a panicking tool
//!   or middleware becomes that call's error result.
//! - **Empty or reused tool call ids get a fresh id**: a call whose id is
//!   empty or already used in the conversation gets a new unique one
//!   (`call_` and 32 hex digits), shared with its result, and its batch
//!   runs, so no id ever has two results (Gemini's OpenAI-compatible
//!   endpoint sends `""` for every call, some local servers reuse
//!   `call_0`).
//! - **A blank tool description is allowed**: OpenAI and Anthropic both
//!   accept it and real tool lists have it; bind logs a `tracing` warning,
//!   since a model calls an undescribed tool less reliably.
//! - **`validate` returns what `bind` uses** ([`Validated`] holds it):
//!   each mode's resolved limits, its tools and where every tool goes,
//!   worked out once. No bind resolves or lays out anything again, and
//!   nothing fills at the first bind but the checked infos of tools that
//!   report their own (a bundle, an MCP server), which racing binds end up
//!   sharing; so bindings made at once hold exactly what bindings made one
//!   after another hold.
//! - **A one-tool definition declares its info** ([`tool::Definition::new`],
//!   `from_fn`, `typed_fn`): the name is given once, and the schema is
//!   checked and compiled when the definition is made, so bind only
//!   builds the tool (for `new`, the factory makes a [`tool::Handler`]
//!   per session). Tools that report their own infos (a bundle, an MCP
//!   server) are checked at bind.
//! - **Bindings share what does not change**: a tool's checked info and
//!   compiled schema are shared by every binding that reports that info
//!   (the declared one; an equal one, for a factory's tools: two first
//!   binds checking one at once end with the first one stored), and so
//!   are the modes. The tools a model is offered are a view over the
//!   binding's tools ([`turn::ToolList`]), never a copy. A binding holds
//!   its tools and a few pointers, so a binding of a `from_fn` definition
//!   costs about what its tools cost. Tools are never shared between
//!   bindings.
//! - **One call pipeline.** A turn's calls and direct calls
//!   ([`Definition::invoke`], [`bind::ToolHandle::invoke`],
//!   [`Definition::run_tool_call`]) go through the same steps, in the
//!   order the [`bind`] module lists, so they refuse the same things the
//!   same way; the turn runner only decides when a ready call may start. A
//!   direct call's output is checked for depth too
//!   ([`bind::ToolCallErrorKind::OutputTooDeep`]): a value that deep
//!   would overflow the stack of whoever drops it.
//! - **Options of a turn: one argument, set once each.**
//!   [`Definition::run_turn`] takes `impl Into<`[`turn::TurnOptions`]`>`:
//!   a `&CancellationToken` is the short form, and
//!   [`turn::TurnOptions::builder`] sets the rest. The builder is derived
//!   with `typed-builder`, which makes a second call of a setter a compile
//!   error ("Repeated field"): a turn's options are a plain record with a
//!   default for every field, which is what that crate serves. The loop
//!   definition's builder stays hand-written: its compiler messages ("call
//!   `.name(..)` before `.build()`") name the fix, which typed-builder's
//!   generic ones do not, and it appends tools, middlewares and modes. A
//!   [`Mode`] and the HTTP models and MCP servers keep plain setters: they
//!   are values kept in `Vec`s or configured after construction
//!   (`from_env()` then `.temperature(..)`), which a typed builder's
//!   changing type would get in the way of.
//! - **A turn's outcome points at what it appended** ([`turn::TurnOutcome::appended`],
//!   [`turn::TurnOutcome::messages`]) instead of holding a copy: the
//!   conversation already holds those messages, and copying every tool
//!   result of every turn is work no caller asked for.
//! - **JSON nests at most 128 levels wherever the crate walks it.**
//!   serde_json parses no JSON text nested 128 levels or more, so only a
//!   value built in code is ever refused. serde_json clones, compares,
//!   serialises and drops a `Value` recursively, at a few hundred bytes of
//!   stack per level in release builds and over a kilobyte in debug
//!   builds: a value 10,000 levels deep overflows a 2 MiB thread stack, an
//!   abort nothing can contain. So the depth is checked, without
//!   recursion, where a value enters the crate or crosses into code that
//!   may walk it, and a deeper value is refused with one cause,
//!   [`TooDeep`], in the refusal's `source()` (its page lists each
//!   refusal): a tool's info where it is declared or reported, a message
//!   where a turn gets it (from the caller or the model), arguments from
//!   code where a call starts and each time a middleware hands them on (a
//!   rewrite may deepen them; so no tool, an MCP server's included, checks
//!   again), a tool's output where the tool returns it and where the chain
//!   does, a payload where a `wire` parser gets it, an output schema where
//!   it is made, and a request a caller hands a model directly. A call
//!   through no middleware walks its arguments and its output once each.
//!   A value the crate took ownership of and refuses (a `from_fn` info, an
//!   output schema, a model's `extra` value, `invoke`'s arguments, a
//!   tool's output, a model's response) is dropped without recursion. A
//!   value the crate does not own stays the caller's, and so does its
//!   drop: a `Value` you built 10,000 levels deep costs serde_json's
//!   recursive drop wherever you drop it, and a tool a factory built is
//!   dropped by bind when bind refuses it, its info with it (keep such a
//!   value in an `Arc` you drop yourself, or take it apart iteratively).
//!   The `wire` exports copy what a conversation or a `ToolInfo` holds as
//!   it is: what a binding or a turn passes them has been checked.
//! - **One error pattern.** Every error type derives `thiserror::Error`
//!   ([`DefinitionError`], which is `Clone`, shares its source through a
//!   pointer that dereferences to the rule's own error, so the source
//!   still downcasts to it). An operator-facing `Display` is one line a
//!   user can act on and does not repeat its cause: the cause is
//!   `source()`, and an error reporter (anyhow, eyre) prints the chain. A
//!   [`bind::ToolCallError`] also carries the sentence the model reads in
//!   its `message`, cause included. An error is a `#[non_exhaustive]` struct with public
//!   fields: `kind`, a `#[non_exhaustive]` enum to match on, when it has
//!   several causes ([`BindError`], [`DefinitionError`],
//!   [`bind::ToolCallError`], [`wire::WireError`],
//!   [`conversation::ConversationError`], [`turn::ToolLimitError`]); then
//!   the fields that name the culprit (tool, definition, mode, field path,
//!   index); the underlying error is a private field reached only through
//!   `source()`. An error whose causes carry different typed data
//!   ([`turn::TurnError`], [`tool::NameError`]) is a `#[non_exhaustive]`
//!   enum instead, its variants being its kind. A rule broken in many
//!   places is one error that is the cause of each ([`TooDeep`]). No
//!   error implements `Error` by hand and no message prints its source:
//!   `tests/it/error_pattern.rs` reads the sources to hold that, and
//!   checks on real errors that none prints a cause of its chain.
//! - **Middleware errors say who failed.** The chain's end wraps a tool's
//!   error in [`middleware::ToolFailed`] (a panic in
//!   [`middleware::ToolPanicked`]), so a tool's failure stays
//!   `ToolFailed` through pass-through middlewares; a middleware's
//!   [`middleware::Refusal`] makes the call `Refused` (the model reads that
//!   the call was refused and why, not that the tool broke), and any other
//!   error of a middleware makes it `MiddlewareFailed`.
//! - **HTTP models** (features `openai`, `anthropic`; the default build
//!   has no HTTP stack). Retried: 408, 409, 429, 500, 502, 503, 504, 529
//!   and refused or broken connections, 3 times by default, after an
//!   exponential backoff with jitter (500 ms doubling to 8 s) or the
//!   server's `retry-after-ms`/`Retry-After`, capped at 60 s. A timeout
//!   (120 s per attempt by default; streamed, until the headers and then
//!   between two events) that happened before any response arrived (while
//!   connecting or waiting for the headers, or anywhere in an unstreamed
//!   attempt) is retried like a connection error, as the official SDKs
//!   do: nothing reached the turn yet, and one slow attempt (a cold
//!   replica, a lost packet) should not fail it. A stream that stalls or
//!   breaks once its events began is not retried, since its text already
//!   reached the turn's events. Unset settings are not sent, so each server keeps its own
//!   default; vendor fields set with `extra` are written last and replace
//!   a field the model sets. OpenAI's output cap goes as
//!   `max_completion_tokens` (reasoning models refuse `max_tokens`), or as
//!   `max_tokens` with `.max_tokens_field(MaxTokensField::MaxTokens)` for
//!   servers that read only that (DeepSeek);
//!   Anthropic's `max_tokens` is 4096 unless set. `from_env` also needs
//!   the model name (`OPENAI_MODEL`, `ANTHROPIC_MODEL`), and a key unless
//!   a base URL is given (local servers need none). A streamed refusal is
//!   sent as text deltas: it is the model's words, and the assembled
//!   response makes it the text.
//! - **The structured-output name** ([`STRUCTURED_OUTPUT_TOOL_NAME`]) is
//!   `structured_output`.
//! - **Structured output is a tool call** ([`turn::Output`],
//!   [`Definition::run_turn`] with [`turn::TurnOptions`]): it works with every model that calls
//!   tools. The control tool is offered after the mode's tools. An object
//!   schema goes as it is; any other is wrapped in a required `value`
//!   property (its `$defs` moved up so references resolve) and unwrapped
//!   in the outcome. The schema is checked when declared with the tool
//!   schema checks, and an [`turn::OutputError`] names the output, never
//!   the schema. A valid call ends the turn with [`turn::TurnStatus::Output`]
//!   and gets the ok result `output received; the turn is over`; invalid
//!   arguments get the same error a user tool's would (the failing path).
//!   A text answer is kept and followed by the user message
//!   [`turn::OUTPUT_INSTRUCTION`], counted as an iteration with no calls
//!   (so `iterations` bounds it), at most
//!   [`turn::DEFAULT_OUTPUT_RETRIES`] times unless set; the next text fails
//!   the turn with [`turn::TurnError::NoOutput`] (the text stays in the
//!   conversation). In a batch, output calls are checked first, in order:
//!   the first valid one is the output, later valid ones are answered
//!   "not run" ([`bind::ToolCallErrorKind::NotRun`]); the other calls are
//!   answered "not run" without running ([`turn::MixedBatch::EndEarly`],
//!   default: the model asked to end, and running side effects it will
//!   never see the results of is worse) or run with it
//!   ([`turn::MixedBatch::RunAll`]). The output call counts against
//!   `calls` and runs through the middleware chain, with its events and
//!   `execute_tool` span, so a policy or audit middleware sees every call;
//!   what the chain returns is the output (a middleware may rewrite it; it
//!   is not checked again, like rewritten arguments), and a refusal is an
//!   error result after which the turn goes on (the batch's other calls
//!   stay answered "not run"). A response cut off by the output limit ends
//!   nothing: its output call is answered like any cut-off call.
//! - **MCP servers are per binding** (feature `mcp`, `mcp::McpServer`):
//!   each bind starts its own server, since a server's directory,
//!   credentials and state are a session's; shared servers leak one
//!   session into another. Its tools are known only once it listed them,
//!   so it is a discovering definition and its names are checked after the
//!   factories ran. The model-facing name is `prefix_` + the server's name
//!   made valid (`McpServer::name_rules`, OpenAI/Anthropic by default),
//!   `tools/call` gets the server's own; two of one server's tools that
//!   become one name fail the bind, naming both. An allow list naming a
//!   tool the server lacks fails the bind (a typo would bind less without
//!   a word); a server left with no tools is allowed. Start, initialise
//!   and list share one timeout (30 s: a cold `npx` downloads first); a
//!   call has its own (60 s, the MCP TypeScript SDK's default), after
//!   which it is an error result and the server is sent
//!   `notifications/cancelled`, as it is for a call of a cancelled turn.
//!   Results: text blocks joined with `\n`, images as image parts,
//!   `structuredContent` only when there is no text (the text is what the
//!   server wrote for models), audio and binary resources named, not
//!   sent. A stdio server gets a safe environment (`PATH`, `HOME`, ...,
//!   not the caller's API keys) unless `inherit_env`, runs in its own
//!   process group, and is shut down as the MCP specification says: input
//!   closed, 0.5 s, `SIGTERM`, 0.5 s, `SIGKILL` to the group (so `npx`'s
//!   child goes too), then reaped; without a Tokio runtime at drop it is
//!   killed and reaped at once. Over HTTPS, rustls needs a process-wide
//!   crypto provider: ring is installed when none is. Its tools may
//!   change while the binding lives (`notifications/tools/list_changed`,
//!   a restart): it is a changing definition
//!   ([`tool::Definition::changing`]), listed again before a model request
//!   and checked as at bind, in that binding only, never while a batch
//!   runs; a list that fails keeps the old one.
//! - **A binding can be served** (feature `mcp-server`, `serve::McpService`):
//!   one binding per MCP session, every `tools/call` through the same
//!   pipeline as a turn's call; what a turn would pause for is an
//!   `isError` result, since an MCP client cannot be paused. Only the
//!   protocol revisions with sessions (up to 2025-11-25) are offered.
//! - **Native structured output is opt-in per turn**
//!   ([`turn::OutputMode::Native`], set with `TurnOptions::builder().output_mode(..)`);
//!   tool mode stays the default because it works with every model. In
//!   native mode the control tool is not offered and the output goes to
//!   the model in [`turn::ModelRequest::output`] (`None` in tool mode); a
//!   model that cannot do native output may ignore it, since the runner
//!   checks the answer either way. The final answer's text, trimmed and
//!   with one surrounding code fence removed, must parse as JSON and pass
//!   the (wrapped) schema, so the provider sees the same object schema as
//!   the tool's parameters and a wrapped answer is unwrapped the same way.
//!   Any other answer stays in the conversation and is followed by
//!   [`turn::NATIVE_OUTPUT_INSTRUCTION`] (not [`turn::OUTPUT_INSTRUCTION`],
//!   which names a tool that is not offered), with the same count and cap,
//!   then [`turn::TurnError::NoOutput`]. Tool calls run as in any turn; a
//!   call to the reserved name is an unknown tool. `OpenAiModel` sends
//!   `response_format` `json_schema` with the output's name made valid
//!   (`^[a-zA-Z0-9_-]{1,64}$`: other characters become `_`, cut to 64) and
//!   `strict: false` unless `OpenAiModel::strict_output` is set:
//!   OpenAI's strict mode rejects schemas with optional properties or
//!   without `additionalProperties: false`, which `schemars` produces, so
//!   strict by default would fail common types. `AnthropicModel` sends the
//!   documented (GA) `output_config.format` `json_schema` form.
//! - **Native output schemas.** A provider is sent the subset of JSON
//!   Schema its structured outputs accept (`wire::output_schema`, rules
//!   from each provider's documentation and official SDK); the answer is
//!   checked against the full schema, so a constraint the provider cannot
//!   enforce is still enforced locally. A dropped keyword goes into the
//!   schema's description. An answer's `null` for a property the full
//!   schema does not require reads as absent (OpenAI strict mode makes
//!   every property required). What cannot be expressed without changing
//!   the meaning (a map, an object with any keys) is refused before
//!   sending rather than closed, because closing it makes the provider
//!   answer `{}`; Gemini and OpenAI's non-strict mode take such schemas.
//! - **Where content came from.** Provider-specific content records its
//!   [`conversation::Origin`] (format; provider, the base URL's
//!   host\[:port\]; model, the model name the request sent, since
//!   providers answer with dated names no request uses). One rule
//!   ([`wire::Target`]) decides what every export writes and reports: the
//!   same format; the same provider when both are known; for signed
//!   Anthropic thinking, the same model when both are known. Unknown on
//!   either side means sent, so stored 0.1 conversations keep working.
//!   With Anthropic thinking on, a final tool-use assistant message
//!   without a leading thinking block (history from another provider or
//!   model, or a repaired one) is sent without `thinking` for that
//!   request, as the API's own error advises, rather than refused; a
//!   warning is traced. With adaptive thinking (`AnthropicModel::effort`)
//!   it stays on: Claude itself may call a tool without thinking first.
//! - **Claude's thinking forms.** `AnthropicModel::effort` works on every
//!   Claude model: the adaptive form where the model takes it (and where
//!   the crate's table does not name the model: every Claude model since
//!   Opus 4.6 takes it), a budget of a documented share of `max_tokens` where
//!   only the budget form is taken (4.5 and older), rather than a refusal
//!   there. What the table says a model answers 400 to (a budget on
//!   Claude 5 and Opus 4.7+, a non-default `temperature`) is refused
//!   before sending; a model it does not name is refused nothing, since
//!   that would be guesswork.
//! - **MCP tool lists and result size** (feature `mcp`). A tool that can
//!   only run as a task (`execution.taskSupport: "required"`, MCP
//!   2025-11-25) is left out of the binding with a warning, because this
//!   client does not support tasks; rmcp drops `execution`, so the
//!   server's own listing is read beside it while binding. MCP servers
//!   fill in defaults themselves, so a required property with a `default`
//!   is optional in the local check (the official TypeScript and Python
//!   clients never refuse such a call); the model still sees the schema as
//!   listed. MCP results are cut to 100 000 bytes by default, and the
//!   smaller of that and `result_bytes` applies.
//! - **Who mints tool call ids.** A response is parsed as the provider
//!   sent it (an empty id stays `""`, missing arguments stay `""`), so a
//!   recording replays to the same value. The turn runner mints the ids it
//!   needs, deterministically: the version 5 UUID of the call's place
//!   (message index, call position) in the session id's namespace, so the
//!   same turn run again (a replay, a resumed turn) mints the same ids and
//!   another session other ones. A history must pair results with calls,
//!   so its parser mints there, deterministically too. An export changes
//!   only what the target refuses (an invalid id, blank arguments), and
//!   what it wrote parses and exports to itself again (see [`wire`]).
//! - **A pause is a turn's end, and a resume is a turn.** A gate that asks
//!   ends the turn with [`TurnStatus::Paused`](turn::TurnStatus::Paused)
//!   rather than waiting inside it: a person may answer in an hour, from
//!   another process, and nothing should be held open meanwhile. The
//!   state is the conversation plus a small [`PausedTurn`](turn::PausedTurn),
//!   both JSON. A resume checks everything before it runs anything,
//!   answers each pending call once, and goes on with the paused counts,
//!   so limits are per turn, not per resume; a cancelled resume answers
//!   its calls "interrupted" rather than leave a call that may have run to
//!   run again. Gates append like middlewares; a mode's replace the
//!   base's like its tools; a tool's replace the mode's for its calls. A
//!   gate that panics denies: an approval policy fails closed.
//! - **A compaction is checked, not trusted** ([`context`]): whatever a
//!   [`Compactor`](context::Compactor) returns replaces one range of the
//!   conversation, and the result must keep what every export keeps (each
//!   call answered once right after its message, a batch whole with its
//!   signed thinking, no empty message, system messages first) and what
//!   the turn must keep (pending calls, the batch and the message the
//!   model has not seen), or it is refused and the history stays. The
//!   built-in default elides old tool results rather than summarising:
//!   it costs no request and changes no one's words. The turn compacts to
//!   half the window, not just under the threshold, so one compaction buys
//!   room for several iterations. Estimates are bytes / 4 (or
//!   `o200k_base`) corrected by the provider's reported input tokens,
//!   since Anthropic and Gemini publish no tokenizer.
//! - **An agent called as a tool is a turn under the call**
//!   ([`tool::Definition::agent`]): it shares the caller's token budgets
//!   and `calls` (counted as they are spent, so parallel agents of one
//!   batch see each other), its cancellation token and its events (nested
//!   under the call's id); `iterations` and `requests` stay each turn's
//!   own, since they bound a model's looping, not its cost. A pause of the
//!   agent is a pause of the caller, its state carried in the pending
//!   call, because a person's decision can only come from outside.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod bind;
pub mod cassette;
pub mod context;
pub mod conversation;
pub mod definition;
mod event;
pub mod gate;
pub mod limits;
#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
pub mod mcp;
pub mod middleware;
pub mod mode;
#[cfg(any(feature = "openai", feature = "anthropic", feature = "gemini"))]
#[cfg_attr(
    docsrs,
    doc(cfg(any(feature = "openai", feature = "anthropic", feature = "gemini")))
)]
pub mod model;
mod model_api;
mod output;
#[cfg(feature = "mcp-server")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp-server")))]
pub mod serve;
pub mod session;
mod summarize;
mod support;
pub mod testing;
pub mod tool;
pub mod turn;
pub mod wire;

pub use bind::{BindError, BindErrorKind, Bindings, Bound};
pub use definition::{Defined, Definition, DefinitionError, DefinitionErrorKind, Validated};
pub use limits::{Limit, ResolvedToolLimits, ToolLimits};
pub use middleware::{Next, ToolInvocation, ToolMiddleware};
pub use mode::Mode;
pub use session::{LoopId, Session, SessionId};
pub use support::json::TooDeep;
pub use tool::{STRUCTURED_OUTPUT_TOOL_NAME, Tool, ToolInfo};

// The README's example is compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
