//! Tools: what the model sees ([`ToolInfo`]) and the names it may use.

mod info;

pub use info::ToolInfo;
