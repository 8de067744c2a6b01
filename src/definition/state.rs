//! The lifecycle states of a loop [`Definition`](crate::Definition), as
//! zero-sized type parameters: `Defined` → `Validated` → `Bound`.
//!
//! The traits are sealed: no state can be added outside this crate, and the
//! compiler explains a misuse in words (`#[diagnostic::on_unimplemented]`).

use crate::bind::Binding;

mod sealed {
    pub trait Sealed {}
}

/// A lifecycle state of a loop definition. Sealed.
pub trait State: sealed::Sealed + Send + Sync + 'static {
    /// What the definition holds in this state beyond its recipe.
    #[doc(hidden)]
    type Data: Send + Sync;
}

/// Built, nothing checked beyond types. Call
/// [`validate`](crate::Definition::validate) next.
#[derive(Debug)]
pub struct Defined {
    _private: (),
}

/// Checked by [`validate`](crate::Definition::validate); cheap to clone,
/// `Send + Sync`, and can be bound many times, once per session.
#[derive(Debug)]
pub struct Validated {
    _private: (),
}

/// Bound to one session by [`bind`](crate::Definition::bind): holds the live
/// tools. Not `Clone`: a binding is one session's.
#[derive(Debug)]
pub struct Bound {
    _private: (),
}

impl sealed::Sealed for Defined {}
impl sealed::Sealed for Validated {}
impl sealed::Sealed for Bound {}

impl State for Defined {
    type Data = ();
}
impl State for Validated {
    type Data = ();
}
impl State for Bound {
    type Data = Binding;
}

/// States that can be bound: only [`Validated`].
#[diagnostic::on_unimplemented(
    message = "a `Definition<{Self}>` cannot be bound: call `.validate()` before `.bind(..)`",
    label = "this definition is not validated",
    note = "the lifecycle is `Definition::builder()...build()` → `.validate()?` → `.bind(bindings).await?`"
)]
pub trait Bindable: State {}
impl Bindable for Validated {}

/// States that hold live tools: only [`Bound`].
#[diagnostic::on_unimplemented(
    message = "a `Definition<{Self}>` has no tools or modes yet: bind it first",
    label = "this definition is not bound to a session",
    note = "tools, modes, middlewares and turns exist only on the `Definition<Bound>` that `.bind(bindings).await?` returns"
)]
pub trait IsBound: State<Data = Binding> {}
impl IsBound for Bound {}
