//! `result_bytes` in a turn (DESIGN.md section 8.5): the model sees at most
//! the limit, with a marker counting the omitted bytes; middlewares and
//! statistics see the full result. (Property tests of the cutting itself
//! live with `truncate`.)

use std::sync::{Arc, Mutex};

use crate::turn_common::*;
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Definition, ToolLimits, tool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// `big`: returns `HEAD`, filler, `TAIL`, `len` bytes in all.
fn big_tool() -> tool::Definition {
    tool::Definition::from_fn(
        tool::ToolInfo::new(
            "big",
            "Returns a long text.",
            json!({
                "type": "object",
                "properties": { "len": { "type": "integer", "minimum": 8 } },
                "required": ["len"]
            }),
        ),
        |arguments: Value, _context| async move {
            let len = arguments["len"].as_u64().unwrap() as usize;
            Ok::<_, tool::BoxError>(json!(big_text(len)))
        },
    )
}

fn big_text(len: usize) -> String {
    let filler: String = (0..len - 8)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    format!("HEAD{filler}TAIL")
}

/// Records the length of every successful output string it sees.
struct RecordLengths(Arc<Mutex<Vec<usize>>>);

#[async_trait::async_trait]
impl ToolMiddleware for RecordLengths {
    async fn handle(
        &self,
        call: ToolInvocation,
        next: Next<'_>,
    ) -> Result<tool::ToolOutput, tool::BoxError> {
        let output = next.run(call).await;
        if let Ok(tool::ToolOutput::Json(Value::String(text))) = &output {
            self.0.lock().unwrap().push(text.len());
        }
        output
    }
}

#[tokio::test]
async fn a_long_result_is_cut_for_the_model_but_whole_for_middlewares_and_stats() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let definition = Definition::builder()
        .name("result-bytes")
        .tool(big_tool())
        .middleware(RecordLengths(Arc::clone(&seen)))
        .tool_limits(ToolLimits::new().result_bytes(256))
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = ScriptedModel::new([
        batch([
            call("long", "big", r#"{"len": 10000}"#),
            call("short", "big", r#"{"len": 100}"#),
            call("edge", "big", r#"{"len": 256}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("read it all");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    let long = result_for(&conversation, "long");
    assert!(!long.is_error);
    let long_text = long.text();
    assert!(long_text.len() <= 256, "{}", long_text.len());
    let original = big_text(10_000);
    // The documented marker: `\n[… N bytes omitted …]\n`.
    let omitted: usize = long_text
        .split_once("\n[… ")
        .and_then(|(_, rest)| rest.split_once(" bytes omitted …]\n"))
        .and_then(|(count, _)| count.parse().ok())
        .expect("a marker");
    let marker = format!("\n[… {omitted} bytes omitted …]\n");
    let (head, tail) = long_text.split_once(&marker).expect("head + marker + tail");
    assert!(head.starts_with("HEAD") && original.starts_with(head));
    assert!(tail.ends_with("TAIL") && original.ends_with(tail));
    assert_eq!(omitted, 10_000 - head.len() - tail.len());

    assert_eq!(result_for(&conversation, "short").text(), big_text(100));
    assert_eq!(result_for(&conversation, "edge").text(), big_text(256));
    // The model's next request saw the cut text.
    let second = &model.requests()[1].conversation;
    assert_eq!(tool_results(second)[0].text(), long.text());

    let stats = &outcome.stats.iterations[0].calls;
    assert_eq!(
        stats
            .iter()
            .map(|s| (s.result_bytes, s.truncated))
            .collect::<Vec<_>>(),
        [(10_000, true), (100, false), (256, false)]
    );
    let mut lengths = seen.lock().unwrap().clone();
    lengths.sort_unstable();
    assert_eq!(
        lengths,
        [100, 256, 10_000],
        "the middleware saw full outputs"
    );
    assert_every_call_answered(&conversation);
}

#[tokio::test]
async fn without_result_bytes_a_long_result_is_shown_whole() {
    let session = bind_tools([big_tool()], ToolLimits::default()).await;
    let model = ScriptedModel::new([
        batch([call("long", "big", r#"{"len": 10000}"#)]),
        answer("done"),
    ]);
    let mut conversation = user_says("read it all");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    assert_eq!(result_for(&conversation, "long").text(), big_text(10_000));
    assert!(!outcome.stats.iterations[0].calls[0].truncated);
}

/// Found by the `truncation` fuzz target: an error text of more than
/// `result_bytes` (but at most `ERROR_TEXT_BYTES`) was cut again as a
/// result, with the result's marker on lines of its own.
#[tokio::test]
async fn an_error_longer_than_result_bytes_is_cut_on_one_line_within_the_limit() {
    let failing = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("fail", "Fails with a long message."),
        |_arguments: Value, _context| async move {
            Err::<Value, _>(format!("START {} END", "word ".repeat(100)))
        },
    );
    let definition = Definition::builder()
        .name("result-bytes")
        .tool(failing)
        .tool_limits(ToolLimits::new().result_bytes(256))
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = ScriptedModel::new([batch([call("e", "fail", "{}")]), answer("done")]);
    let mut conversation = user_says("go");

    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    let result = result_for(&conversation, "e");
    let text = result.text();
    assert!(result.is_error);
    assert!(text.len() <= 256, "{} bytes: {text}", text.len());
    assert!(has_no_control_characters(&text), "{text:?}");
    assert!(
        text.starts_with("the tool `fail` failed: START word"),
        "{text}"
    );
    assert!(text.ends_with("word END"), "{text}");
    assert!(text.contains(" bytes omitted …] "), "{text}");
    let stats = &outcome.stats.iterations[0].calls[0];
    assert!(
        !stats.truncated,
        "the error text is bounded, not cut as a result"
    );
}

/// A definition's own bound (`tool::Definition::result_bytes`), read at
/// bind: the smaller of it and the mode's applies, to that definition's
/// tools only; a direct invocation returns the whole result.
#[tokio::test]
async fn a_definitions_own_result_bytes_cuts_its_tools_only_and_the_smaller_bound_wins() {
    let base = big_tool();
    // Declared before another fact: the bound is kept through it.
    let bounded = base
        .clone()
        .result_bytes(std::num::NonZeroU32::new(300).unwrap())
        .fills_defaults(true);
    assert!(
        !bounded.same_as(&base),
        "a declaration makes a new definition"
    );
    let other = tool::Definition::from_fn(
        tool::ToolInfo::without_parameters("other", "Returns a long text."),
        |_: Value, _context| async move { Ok::<_, tool::BoxError>(json!(big_text(1_000))) },
    );

    // The mode's limit is larger: the definition's 300 applies to `big`,
    // and `other` is shown whole.
    let session = bind_tools([bounded.clone(), other.clone()], ToolLimits::default()).await;
    let model = ScriptedModel::new([
        batch([
            call("long", "big", r#"{"len": 10000}"#),
            call("fits", "big", r#"{"len": 300}"#),
            call("other", "other", "{}"),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("read it all");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let long = result_for(&conversation, "long").text();
    assert!(long.len() <= 300 && long.len() > 256, "{}", long.len());
    assert!(long.starts_with("HEAD") && long.ends_with("TAIL"), "{long}");
    assert!(long.contains(" bytes omitted …]"), "{long}");
    assert_eq!(result_for(&conversation, "fits").text(), big_text(300));
    assert_eq!(result_for(&conversation, "other").text(), big_text(1_000));
    let truncated: Vec<bool> = outcome.stats.iterations[0]
        .calls
        .iter()
        .map(|s| s.truncated)
        .collect();
    assert_eq!(truncated, [true, false, false]);
    let direct = session.invoke("big", json!({"len": 10_000})).await.unwrap();
    assert_eq!(direct, tool::ToolOutput::Json(json!(big_text(10_000))));

    // The mode's limit is smaller: it wins.
    let session = bind_tools([bounded], ToolLimits::new().result_bytes(256)).await;
    let model = ScriptedModel::new([
        batch([call("long", "big", r#"{"len": 10000}"#)]),
        answer("done"),
    ]);
    let mut conversation = user_says("read it");
    session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();
    let long = result_for(&conversation, "long").text();
    assert!(long.len() <= 256, "{}", long.len());
}
