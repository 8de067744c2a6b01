//! [`Factory`]: the one trait the tools of a definition are built by for
//! one binding, returning [`Tools`]: a fixed list, or a listing that can
//! change while the binding lives. [`ToolFactory`] (a fixed list) is a
//! `Factory` as it is; a [`ListingFactory`] goes in through
//! [`Definition::changing`](crate::tool::Definition::changing).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::session::Session;
use crate::tool::{BoxError, ListingFactory, Tool, ToolFactory, ToolListing};

/// Builds the tools of one [`Definition`](crate::tool::Definition) for one
/// binding: a fixed list, or a [`ToolListing`] the binding lists at bind
/// and again whenever its version moves.
///
/// It runs only inside [`bind`](crate::Definition::bind), once per
/// binding; its error becomes
/// [`FactoryFailed`](crate::bind::BindErrorKind::FactoryFailed), its panic
/// [`FactoryPanicked`](crate::bind::BindErrorKind::FactoryPanicked). Every
/// [`ToolFactory`] is a `Factory` (of a fixed list), so a factory written
/// against it goes where a `Factory` does; a [`ListingFactory`] is adapted
/// by [`Definition::changing`](crate::tool::Definition::changing).
///
/// ```
/// use std::sync::Arc;
/// use agent_loop_core::session::Session;
/// use agent_loop_core::tool::{self, BoxError, Factory, Tools};
///
/// /// A plugin directory: listed once, or watched when the session asks.
/// struct Plugins;
///
/// #[async_trait::async_trait]
/// impl Factory for Plugins {
///     async fn tools(&self, _session: &Session) -> Result<Tools, BoxError> {
///         Ok(Tools::Fixed(Vec::new())) // read the directory here
///     }
/// }
///
/// let plugins = tool::Definition::discovering("plugins", Plugins);
/// assert!(plugins.discovers_tools());
/// ```
#[async_trait]
pub trait Factory: Send + Sync + 'static {
    /// The tools of the binding of `session`: each reports its own
    /// [`ToolInfo`](crate::tool::ToolInfo), checked at bind (and at each
    /// new list of a listing) like a declared one's.
    ///
    /// Errors: anything; the bind fails with
    /// [`FactoryFailed`](crate::bind::BindErrorKind::FactoryFailed).
    async fn tools(&self, session: &Session) -> Result<Tools, BoxError>;
}

/// What a [`Factory`] built for one binding.
#[non_exhaustive]
pub enum Tools {
    /// These tools, for the binding's whole life.
    Fixed(Vec<Arc<dyn Tool>>),
    /// Tools the binding lists now and again whenever the listing's
    /// [`version`](ToolListing::version) moves (see [`ToolListing`]).
    Listing(Arc<dyn ToolListing>),
}

impl From<Vec<Arc<dyn Tool>>> for Tools {
    fn from(tools: Vec<Arc<dyn Tool>>) -> Self {
        Tools::Fixed(tools)
    }
}

impl From<Arc<dyn ToolListing>> for Tools {
    fn from(listing: Arc<dyn ToolListing>) -> Self {
        Tools::Listing(listing)
    }
}

/// Prints the fixed tools' names, or that it is a listing.
impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tools::Fixed(tools) => f
                .debug_tuple("Fixed")
                .field(
                    &tools
                        .iter()
                        .map(|tool| &tool.info().name)
                        .collect::<Vec<_>>(),
                )
                .finish(),
            Tools::Listing(_) => f.write_str("Listing(..)"),
        }
    }
}

/// A factory of a fixed list is a factory.
#[async_trait]
impl<F: ToolFactory> Factory for F {
    async fn tools(&self, session: &Session) -> Result<Tools, BoxError> {
        self.build(session).await.map(Tools::Fixed)
    }
}

/// A [`ListingFactory`] as a [`Factory`]: its listing is the tools.
pub(crate) struct Listed<F>(pub(crate) F);

#[async_trait]
impl<F: ListingFactory> Factory for Listed<F> {
    async fn tools(&self, session: &Session) -> Result<Tools, BoxError> {
        self.0.build(session).await.map(Tools::Listing)
    }
}
