//! The turn: the conversation and the tool loop.

pub mod conversation;

pub use conversation::{Conversation, Message, ToolCall, ToolResult};
