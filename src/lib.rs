//! agent-loop: declare the tools an LLM agent may use, bind them to one live
//! session, and run the tool loop under hard limits.

pub mod tool;
pub mod turn;
pub mod wire;
