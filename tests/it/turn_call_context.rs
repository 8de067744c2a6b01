//! The per-call context (DESIGN.md section 8): middlewares and tools see
//! the session id, loop id, mode name, tool name, tool call id and the
//! tool's info.

use std::sync::{Arc, Mutex};

use crate::turn_common::*;
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::tool::CallContext;
use agent_loop::turn::ScriptedModel;
use agent_loop::{Definition, Mode, tool};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What one observer saw of a call: (session, loop, mode, tool, call id,
/// the tool info's description).
type Seen = (String, String, Option<String>, String, String, String);

fn seen(context: &CallContext) -> Seen {
    (
        context.session_id().to_string(),
        context.loop_id().to_string(),
        context.mode().map(str::to_owned),
        context.tool_name().to_owned(),
        context.tool_call_id().to_owned(),
        context.tool_info().description.clone(),
    )
}

struct RecordContext(Arc<Mutex<Vec<Seen>>>);

#[async_trait::async_trait]
impl ToolMiddleware for RecordContext {
    async fn handle(
        &self,
        call: ToolInvocation,
        next: Next<'_>,
    ) -> Result<tool::ToolOutput, tool::BoxError> {
        self.0.lock().unwrap().push(seen(&call.context));
        next.run(call).await
    }
}

fn recording_tool(name: &str, log: Arc<Mutex<Vec<Seen>>>) -> tool::Definition {
    tool::Definition::from_fn(
        tool::ToolInfo::without_parameters(name, "Records its context."),
        move |_arguments: Value, context: CallContext| {
            let log = Arc::clone(&log);
            async move {
                log.lock().unwrap().push(seen(&context));
                Ok::<_, tool::BoxError>(Value::Null)
            }
        },
    )
}

#[tokio::test]
async fn middleware_and_tool_see_the_session_mode_and_tool_call_id() {
    let by_middleware = Arc::new(Mutex::new(Vec::new()));
    let by_tool = Arc::new(Mutex::new(Vec::new()));
    let definition = Definition::builder()
        .name("context")
        .tool(recording_tool("lookup", Arc::clone(&by_tool)))
        .middleware(RecordContext(Arc::clone(&by_middleware)))
        .mode(Mode::new("research"))
        .initial_mode("research")
        .build()
        .validate()
        .unwrap();
    let mut session = bind(&definition).await;
    let (session_id, loop_id) = (
        session.session_id().to_string(),
        session.loop_id().to_string(),
    );
    let cancel = CancellationToken::new();

    let model = ScriptedModel::new([batch([call("call_7", "lookup", "{}")]), answer("ok")]);
    session
        .run_turn(&model, &mut user_says("look"), &cancel)
        .await
        .unwrap();
    session.set_current_mode(None).unwrap();
    let model = ScriptedModel::new([batch([call("call_8", "lookup", "")]), answer("ok")]);
    session
        .run_turn(&model, &mut user_says("look again"), &cancel)
        .await
        .unwrap();

    let expected: Vec<Seen> = vec![
        (
            session_id.clone(),
            loop_id.clone(),
            Some("research".into()),
            "lookup".into(),
            "call_7".into(),
            "Records its context.".into(),
        ),
        (
            session_id,
            loop_id,
            None,
            "lookup".into(),
            "call_8".into(),
            "Records its context.".into(),
        ),
    ];
    assert_eq!(*by_middleware.lock().unwrap(), expected);
    assert_eq!(*by_tool.lock().unwrap(), expected);
}
