//! The lifecycle states of a loop [`Definition`](crate::Definition), as its
//! type parameter: [`Defined`] → [`Validated`] →
//! [`Bound`](crate::bind::Bound).
//!
//! The trait is sealed: no state can be added outside this crate. Each
//! state has its own methods (`impl Definition<Validated> { fn bind }`,
//! `impl Definition<Bound> { fn tools, fn run_turn, .. }`), so calling one
//! in the wrong state does not compile, and the compiler names the state
//! that has it.

use std::fmt;
use std::sync::Arc;

use crate::definition::layout::Layout;

pub(crate) mod sealed {
    /// Only this crate's states implement it.
    pub trait Sealed {}
}

/// A lifecycle state of a loop definition: what the definition holds beyond
/// its recipe (nothing when [`Defined`], the validated layout when
/// [`Validated`], a session's tools when [`Bound`](crate::bind::Bound)).
/// Sealed.
pub trait State: sealed::Sealed + Send + Sync + 'static {}

/// Built, nothing checked beyond types. Call
/// [`validate`](crate::Definition::validate) next.
#[derive(Clone, Copy, Debug)]
pub struct Defined {
    _private: (),
}

/// Checked by [`validate`](crate::Definition::validate), and holding what
/// it worked out for bind: each mode's resolved limits, its tools, and where
/// every tool goes. Cheap to clone (shared), `Send + Sync`, and can be
/// bound many times, once per session; bind computes none of it again.
#[derive(Clone)]
pub struct Validated {
    pub(crate) layout: Arc<Layout>,
}

impl fmt::Debug for Validated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Validated").finish_non_exhaustive()
    }
}

impl Defined {
    pub(crate) const STATE: Self = Self { _private: () };
}

impl sealed::Sealed for Defined {}
impl sealed::Sealed for Validated {}
impl State for Defined {}
impl State for Validated {}
