//! The session a binding serves: its [`SessionId`] and [`LoopId`], and the
//! data the caller supplies for its tool factories ([`Session`]).
//!
//! This is the bottom layer of the crate: tool factories receive a
//! [`Session`], and [`Bindings`](crate::bind::Bindings) wrap one with the
//! binding's extra tools.

mod data;
mod ids;

pub use data::{MissingBinding, Session};
pub use ids::{LoopId, SessionId};
