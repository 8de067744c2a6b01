//! Binding: turning a validated definition into one session's live tools.
//!
//! [`Definition<Validated>::bind`](crate::Definition::bind) takes
//! [`Bindings`] (a [`Session`](crate::session::Session): its ids and data
//! for the factories; and optional extra tools) and, in this order:
//!
//! 1. refuses a nil session id or loop id, before anything runs;
//! 2. checks the extra tool definitions like the definition's own;
//! 3. finds every distinct tool definition (clones are the same definition)
//!    and refuses two different ones with the same definition name, then two
//!    with the same declared tool name, anywhere in the binding, listing
//!    every collision in one error;
//! 4. runs each distinct factory once (a definition shared by the base and
//!    modes is built once and its tools shared; a new binding builds anew);
//! 5. checks what was built: the declared names, the name rules and the
//!    JSON Schema of each [`ToolInfo`](crate::tool::ToolInfo); then, since a
//!    [`discovering`](crate::tool::Definition::discovering) definition (an
//!    MCP server) names its tools only now, that no two definitions built
//!    one name, listing every collision. A schema is checked and compiled
//!    once per distinct info, not per binding: a
//!    [`from_fn`](crate::tool::Definition::from_fn) or
//!    [`typed_fn`](crate::tool::Definition::typed_fn) tool's on the first
//!    bind, and a factory's tool's (a server's included) again only when
//!    its info differs from the last one checked under that name.
//!
//! What does not change between bindings (the modes, their tool lists,
//! names, limits and instructions, the middlewares, the checked infos and
//! the model-facing tool lists) is shared by every binding of a definition;
//! a binding holds its own tools and little else.
//!
//! Any failure is a typed [`BindError`] and no binding exists. A bound
//! definition is a `Definition<`[`Bound`]`>`: its methods (tools, modes,
//! invocation) are here, and the turn runner's in [`turn`](crate::turn).
//!
//! Every tool call of a binding, a turn's or a direct one, goes through one
//! pipeline, in this order: the lookup in the call's mode, the arguments
//! (read, an object, passing the tool's schema), the call's context, the
//! middleware chain down to the tool and back, who failed, the output
//! check, and the model-facing finish (error text cleaned and bounded, the
//! mode's `result_bytes`). A turn only decides when each call may start.

mod bindings;
mod bound;
mod build;
pub(crate) mod call;
mod call_error;
mod checks;
mod error;
mod outcome;
mod tool_list;
pub(crate) mod tool_set;

pub use bindings::Bindings;
pub(crate) use bound::Binding;
pub(crate) use bound::BoundTool;
pub use bound::{Bound, BoundMode, ToolHandle, UnknownMode};
pub use call_error::{ToolCallError, ToolCallErrorKind};
pub use error::{BindError, BindErrorKind, Duplicate, FactoryPanic};
pub use outcome::{CallOutcome, CallStats};
pub use tool_list::{ToolList, ToolListIter};
