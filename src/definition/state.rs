//! The lifecycle states of a loop [`Definition`](crate::Definition), as its
//! type parameter: [`Defined`] → [`Validated`] →
//! [`Bound`](crate::bind::Bound).
//!
//! The trait is sealed: no state can be added outside this crate. Each
//! state has its own methods (`impl Definition<Validated> { fn bind }`,
//! `impl Definition<Bound> { fn tools, fn run_turn, .. }`), so calling one
//! in the wrong state does not compile, and the compiler names the state
//! that has it.

pub(crate) mod sealed {
    /// Only this crate's states implement it.
    pub trait Sealed {}
}

/// A lifecycle state of a loop definition: what the definition holds beyond
/// its recipe. Sealed.
pub trait State: sealed::Sealed + Send + Sync + 'static {}

/// Built, nothing checked beyond types. Call
/// [`validate`](crate::Definition::validate) next.
#[derive(Clone, Copy, Debug)]
pub struct Defined {
    _private: (),
}

/// Checked by [`validate`](crate::Definition::validate); cheap to clone,
/// `Send + Sync`, and can be bound many times, once per session.
#[derive(Clone, Copy, Debug)]
pub struct Validated {
    _private: (),
}

impl Defined {
    pub(crate) const STATE: Self = Self { _private: () };
}

impl Validated {
    pub(crate) const STATE: Self = Self { _private: () };
}

impl sealed::Sealed for Defined {}
impl sealed::Sealed for Validated {}
impl State for Defined {}
impl State for Validated {}
