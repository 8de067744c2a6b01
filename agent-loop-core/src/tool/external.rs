//! External tools: declared by their [`ToolInfo`] alone, their calls never
//! run in this process (a tool of the browser UI, a job run elsewhere).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::tool::checked::Declared;
use crate::tool::definition::Build;
use crate::tool::{BoxError, CallContext, Definition, Handler, ToolInfo, ToolOutput};

impl Definition {
    /// A definition of one external tool: the model is offered `info`, and
    /// each call of it (its arguments checked against the schema as any
    /// call's) pauses the turn, pending, with no gate asked
    /// ([`PendingCall::external`](crate::turn::PendingCall::external)).
    /// Its result comes from outside, with the resume's
    /// [`CallDecision::result`](crate::turn::CallDecision::result); a
    /// denial answers it too. Run in this process (a direct `invoke`, an
    /// approval), it fails with an error saying it is external; through
    /// `run_tool_call`, outside a turn, it is answered as not run
    /// ([`NeedsApproval`](crate::bind::ToolCallErrorKind::NeedsApproval)).
    ///
    /// ```
    /// use agent_loop_core::tool::{self, ToolInfo};
    ///
    /// let pick = tool::Definition::external(ToolInfo::without_parameters(
    ///     "pick_file",
    ///     "Lets the user pick a file in the browser.",
    /// ));
    /// assert_eq!(pick.name(), "pick_file");
    /// ```
    pub fn external(info: ToolInfo) -> Self {
        let name: Arc<str> = info.name.as_str().into();
        Definition::declared_with(
            Declared::new(info),
            Build::Instant(Box::new(move || {
                Arc::new(External {
                    name: Arc::clone(&name),
                })
            })),
            true,
        )
    }
}

/// An external tool's handler: a call that reaches it (a direct invoke,
/// an approval) fails, saying where such calls run.
struct External {
    name: Arc<str>,
}

#[async_trait]
impl Handler for External {
    async fn invoke(
        &self,
        _arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Err(format!(
            "`{}` is an external tool: its calls run outside this process",
            self.name
        )
        .into())
    }
}
