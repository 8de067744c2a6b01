//! The turn: the conversation and the tool loop.

pub mod conversation;
mod truncate;

pub use conversation::{Conversation, Message, ToolCall, ToolResult};
pub use truncate::{
    ERROR_TEXT_BYTES, MIN_RESULT_BYTES, clean_error_text, omitted_bytes, truncate_middle,
};
