//! External tools: declared by their [`ToolInfo`] alone, their calls never
//! run in this process (a tool of the browser UI, a job run elsewhere).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::tool::checked::Declared;
use crate::tool::definition::Build;
use crate::tool::{BoxError, CallContext, Definition, Tool, ToolInfo, ToolOutput};

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
        let declared = Declared::new(info);
        let info = Arc::clone(declared.info());
        Definition::declared_with(
            declared,
            Build::Instant(Box::new(move || {
                Arc::new(ExternalTool {
                    info: Arc::clone(&info),
                })
            })),
            true,
        )
    }
}

struct ExternalTool {
    info: Arc<ToolInfo>,
}

#[async_trait]
impl Tool for ExternalTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    async fn invoke(
        &self,
        _arguments: Value,
        _context: &CallContext,
    ) -> Result<ToolOutput, BoxError> {
        Err(format!(
            "`{}` is an external tool: its calls run outside this process",
            self.info.name
        )
        .into())
    }
}
