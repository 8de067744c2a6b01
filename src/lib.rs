//! agent-loop: declare the tools an LLM agent may use, bind them to one live
//! session, and run the tool loop under hard limits.

pub mod bind;
pub mod definition;
pub mod limits;
pub mod middleware;
pub mod mode;
pub mod tool;
pub mod turn;
pub mod wire;

pub use bind::{BindError, BindErrorKind, Bindings, LoopId, SessionId};
pub use definition::{Bound, Defined, Definition, DefinitionError, DefinitionErrorKind, Validated};
pub use limits::{LimitValue, ToolLimits, ToolLimitsConfig};
pub use middleware::{Next, ToolInvocation, ToolMiddleware};
pub use mode::Mode;
pub use tool::{STRUCTURED_OUTPUT_TOOL_NAME, Tool, ToolInfo};
