//! One `tracing` span per turn, per iteration and per tool call, named and
//! attributed after the OpenTelemetry GenAI conventions (DESIGN.md
//! section 10).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agent_loop::Definition;
use agent_loop::conversation::{Message, ModelResponse, ToolCall};
use agent_loop::tool::{self, BoxError, ToolInfo};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Bindings, LoopId, SessionId};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::{Context, Layer};

/// A span as recorded: its name, its fields, and its parent's name.
#[derive(Clone, Debug)]
struct RecordedSpan {
    name: &'static str,
    fields: BTreeMap<String, String>,
    parent: Option<&'static str>,
}

/// Records every new span.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<RecordedSpan>>>);

struct FieldVisitor<'a>(&'a mut BTreeMap<String, String>);

impl Visit for FieldVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S> Layer<S> for Recorder
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attributes.record(&mut FieldVisitor(&mut fields));
        let parent = context
            .span(id)
            .and_then(|span| span.parent())
            .map(|parent| parent.name());
        self.0.lock().unwrap().push(RecordedSpan {
            name: attributes.metadata().name(),
            fields,
            parent,
        });
    }
}

/// Runs one turn of a definition named `name` with an `echo` tool, bound
/// in session `session_id`, on a model answering `script`.
async fn run_echo_turn<const N: usize>(
    name: &str,
    session_id: SessionId,
    script: [ModelResponse; N],
) {
    let echo = tool::Definition::from_fn(
        ToolInfo::new("echo", "Echoes.", json!({"type": "object"})),
        |arguments: Value, _context| async move { Ok::<_, BoxError>(arguments) },
    );
    let definition = Definition::builder()
        .name(name)
        .tool(&echo)
        .build()
        .validate()
        .unwrap();
    let bound = definition
        .bind(Bindings::new(session_id, LoopId::new()))
        .await
        .unwrap();
    let model = ScriptedModel::new(script);
    let mut conversation = vec![Message::user("hi")];
    bound
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
}

#[test]
fn a_turn_emits_turn_iteration_and_execute_tool_spans() {
    let recorder = Recorder::default();
    crate::common::with_tracing_layer(recorder.clone(), async {
        let session_id = SessionId::new();
        run_echo_turn(
            "traced",
            session_id,
            [
                ModelResponse::tool_calls([
                    ToolCall::new("call_a", "echo", "{}"),
                    ToolCall::new("call_b", "echo", "{}"),
                ]),
                ModelResponse::answer("done"),
            ],
        )
        .await;

        let spans = recorder.0.lock().unwrap().clone();
        let turns: Vec<_> = spans.iter().filter(|s| s.name == "invoke_agent").collect();
        assert_eq!(turns.len(), 1, "{spans:#?}");
        assert_eq!(turns[0].fields["gen_ai.operation.name"], "invoke_agent");
        assert_eq!(turns[0].fields["gen_ai.agent.name"], "traced");
        assert_eq!(
            turns[0].fields["gen_ai.conversation.id"],
            session_id.to_string()
        );

        let iterations: Vec<_> = spans.iter().filter(|s| s.name == "iteration").collect();
        assert_eq!(iterations.len(), 1, "{spans:#?}");
        assert_eq!(iterations[0].parent, Some("invoke_agent"));

        let calls: Vec<_> = spans.iter().filter(|s| s.name == "execute_tool").collect();
        assert_eq!(calls.len(), 2, "{spans:#?}");
        let mut ids: Vec<&str> = calls
            .iter()
            .map(|s| s.fields["gen_ai.tool.call.id"].as_str())
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, ["call_a", "call_b"]);
        for call in calls {
            assert_eq!(call.fields["gen_ai.operation.name"], "execute_tool");
            assert_eq!(call.fields["gen_ai.tool.name"], "echo");
            assert_eq!(call.parent, Some("iteration"));
        }
    });
}

/// A batch with one call runs it on the turn's own task, not a task of
/// its own: its `execute_tool` span is still the iteration's child, under
/// the turn's, one iteration span per batch.
#[test]
fn a_one_call_batch_runs_its_call_under_the_iteration_span() {
    let recorder = Recorder::default();
    crate::common::with_tracing_layer(recorder.clone(), async {
        run_echo_turn(
            "traced-one",
            SessionId::new(),
            [
                ModelResponse::tool_calls([ToolCall::new("call_a", "echo", "{}")]),
                ModelResponse::tool_calls([ToolCall::new("call_b", "echo", "{}")]),
                ModelResponse::answer("done"),
            ],
        )
        .await;

        let spans = recorder.0.lock().unwrap().clone();
        let iterations: Vec<_> = spans.iter().filter(|s| s.name == "iteration").collect();
        assert_eq!(iterations.len(), 2, "{spans:#?}");
        assert!(
            iterations.iter().all(|s| s.parent == Some("invoke_agent")),
            "{spans:#?}"
        );
        let calls: Vec<_> = spans.iter().filter(|s| s.name == "execute_tool").collect();
        assert_eq!(calls.len(), 2, "{spans:#?}");
        for call in calls {
            assert_eq!(call.parent, Some("iteration"), "{spans:#?}");
        }
    });
}
