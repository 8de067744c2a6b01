//! Tools: what the model sees ([`ToolInfo`]) and the names it may use
//! ([`NameRules`]).

mod info;
mod name;

pub use info::ToolInfo;
pub use name::{NameError, NameRules, STRUCTURED_OUTPUT_TOOL_NAME};
