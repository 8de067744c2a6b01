//! Tools: declared as factories, built per binding, seen by the model
//! through their [`ToolInfo`].
//!
//! - [`Definition`] (`tool::Definition`): a named factory, declared once per
//!   process. It is not a tool and cannot be invoked.
//! - [`Handler`]: the runtime trait, one method: what a binding runs for a
//!   call, returning a [`ToolOutput`] (JSON, or text and images). A one-tool
//!   factory builds one, its info declared up front; [`Tool`] is a handler
//!   with its info, what a factory of several tools or a listing reports.
//! - [`Factory`]: what builds a definition's tools for one binding, as
//!   [`Tools`]: a fixed list, or a [`ToolListing`] of tools that can change
//!   while the binding lives (an MCP server's). A [`ToolFactory`] (a fixed
//!   list) is a `Factory`; a [`ListingFactory`] (a listing) is adapted by
//!   [`Definition::changing`].
//! - [`ToolInfo`]: what the model sees (name, description, JSON Schema).
//! - [`NameRules`]: which model-facing names a provider accepts, and
//!   [`NameRules::sanitize`] to turn any name into one it accepts.

pub(crate) mod checked;
pub(crate) mod definition;
mod external;
mod factory;
mod function;
pub(crate) mod handler;
mod info;
mod invoke;
mod listing;
pub(crate) mod name;
mod output;
mod progress;
pub(crate) mod schema;

pub use definition::{Definition, NotInvokable, ToolFactory};
pub use factory::{Factory, Tools};
pub use function::schema_of;
pub use handler::Handler;
pub use info::{ToolAnnotations, ToolInfo};
pub(crate) use invoke::TurnLink;
pub use invoke::{BoxError, CallContext, Tool};
pub use listing::{ListingFactory, ToolListing};
pub use name::{NameError, NameRules, STRUCTURED_OUTPUT_TOOL_NAME};
pub use output::ToolOutput;
pub(crate) use progress::CallEvents;
pub use progress::ToolProgress;
