//! Binding: turning a validated definition into one session's live tools.
//!
//! [`Definition<Validated>::bind`](crate::Definition::bind) takes
//! [`Bindings`] (a [`SessionId`], a [`LoopId`], optional extra tools, and
//! data for the factories) and, in the order of DESIGN.md section 6:
//!
//! 1. refuses a nil session id or loop id, before anything runs;
//! 2. checks the extra tool definitions like the definition's own;
//! 3. finds every distinct tool definition (clones are the same definition)
//!    and refuses two different ones with the same definition name or the
//!    same declared tool name, anywhere in the binding;
//! 4. runs each distinct factory once (a definition shared by the base and
//!    modes is built once and its tools shared; a new binding builds anew);
//! 5. checks what was built: the declared names, the name rules, the
//!    description and the JSON Schema of each [`ToolInfo`](crate::tool::ToolInfo),
//!    compiling each schema once for the binding's lifetime.
//!
//! Any failure is a typed [`BindError`] and no binding exists.

mod bindings;
mod bound;
mod build;
pub(crate) mod call;
mod error;
mod ids;

pub use bindings::{Bindings, MissingBinding};
#[doc(hidden)]
pub use bound::Binding;
pub use bound::{BoundMode, ToolHandle, UnknownMode};
pub(crate) use bound::{BoundModeData, BoundTool};
pub(crate) use build::bind;
pub use call::{ToolCallError, ToolCallErrorKind};
pub use error::{BindError, BindErrorKind, FactoryPanic};
pub use ids::{LoopId, SessionId};
