//! [`ToolListing`]: the tools of one binding's discovering definition that
//! can change while the binding lives (an MCP server's, announced by
//! `notifications/tools/list_changed`), and [`ListingFactory`], which makes
//! one per binding.

use std::sync::Arc;

use async_trait::async_trait;

use crate::session::Session;
use crate::tool::{BoxError, Tool};

/// The tools one binding gets from a definition made with
/// [`Definition::changing`](crate::tool::Definition::changing), listed at
/// bind and listed again whenever [`version`](Self::version) moves.
///
/// The binding asks for [`list`](Self::list) at bind, and then before each
/// model request of a turn (between iterations, never while a batch runs)
/// when `version` is not the one it last listed at. Each new list passes
/// the checks of bind: tool names ([`NameRules`](crate::tool::NameRules),
/// the reserved structured-output name, no two alike), schemas, and no
/// name another definition of the binding produces. A list that passes
/// replaces the definition's tools in that binding only, and the request
/// offers it; one that fails, or a `list` that fails, leaves the old tools
/// in place and is reported: a
/// [`TurnEvent::ToolListRefused`](crate::turn::TurnEvent::ToolListRefused)
/// and a `tracing` warning (target `agent_loop_core::bind`).
#[async_trait]
pub trait ToolListing: Send + Sync + 'static {
    /// A number that changes whenever the tools may have changed (a count
    /// of change notifications). Called before every model request of a
    /// turn, so it must be cheap: an atomic load.
    fn version(&self) -> u64;

    /// The tools now, in the order the model should see them.
    ///
    /// Errors: anything; the binding keeps the tools it has and reports
    /// the error (at bind: the bind fails with
    /// [`FactoryFailed`](crate::bind::BindErrorKind::FactoryFailed)).
    async fn list(&self) -> Result<Vec<Arc<dyn Tool>>, BoxError>;
}

/// Makes the [`ToolListing`] of one binding: a
/// [`Definition::changing`](crate::tool::Definition::changing)'s factory.
/// It runs only inside [`bind`](crate::Definition::bind), once per binding;
/// its error becomes
/// [`FactoryFailed`](crate::bind::BindErrorKind::FactoryFailed), its panic
/// [`FactoryPanicked`](crate::bind::BindErrorKind::FactoryPanicked).
#[async_trait]
pub trait ListingFactory: Send + Sync + 'static {
    /// The listing of the binding of `session`.
    async fn build(&self, session: &Session) -> Result<Arc<dyn ToolListing>, BoxError>;
}
