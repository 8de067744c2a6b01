//! Tools that return content parts (`ToolOutput::Content`: text and images,
//! as a screenshot tool or an MCP server does): the parts reach the tool
//! result through the middleware chain, and `result_bytes` cuts their text
//! only.

use std::sync::{Arc, Mutex};

use crate::turn_common::*;
use agent_loop::conversation::{ContentPart, ImagePart};
use agent_loop::middleware::{Next, ToolInvocation, ToolMiddleware};
use agent_loop::tool::{self, BoxError, ToolInfo, ToolOutput};
use agent_loop::turn::ScriptedModel;
use agent_loop::{Definition, ToolLimits};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// `screenshot`: a caption of `len` bytes, a PNG, then a second caption.
fn screenshot_tool() -> tool::Definition {
    tool::Definition::from_fn(
        ToolInfo::new(
            "screenshot",
            "A screenshot with captions.",
            json!({"type": "object", "properties": {"len": {"type": "integer"}}, "required": ["len"]}),
        ),
        |arguments: Value, _context| async move {
            let len = arguments["len"].as_u64().unwrap_or(0) as usize;
            Ok::<_, BoxError>(ToolOutput::Content(vec![
                ContentPart::text("x".repeat(len)),
                ContentPart::Image(ImagePart::base64("image/png", PNG)),
                ContentPart::text("END"),
            ]))
        },
    )
}

/// Records how many images each output it sees holds.
struct CountImages(Arc<Mutex<Vec<usize>>>);

#[async_trait::async_trait]
impl ToolMiddleware for CountImages {
    async fn handle(&self, call: ToolInvocation, next: Next<'_>) -> Result<ToolOutput, BoxError> {
        let output = next.run(call).await?;
        self.0.lock().unwrap().push(output.images().count());
        Ok(output)
    }
}

#[tokio::test]
async fn image_parts_pass_through_middlewares_into_the_tool_result() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let definition = Definition::builder()
        .name("content")
        .tool(screenshot_tool())
        .middleware(CountImages(Arc::clone(&seen)))
        .build()
        .validate()
        .unwrap();
    let session = bind(&definition).await;
    let model = ScriptedModel::new([
        batch([call("shot", "screenshot", r#"{"len": 5}"#)]),
        answer("done"),
    ]);
    let mut conversation = user_says("look");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    let result = result_for(&conversation, "shot");
    assert!(!result.is_error);
    assert_eq!(
        result.content,
        [
            ContentPart::text("xxxxx"),
            ContentPart::Image(ImagePart::base64("image/png", PNG)),
            ContentPart::text("END"),
        ]
    );
    assert_eq!(*seen.lock().unwrap(), [1]);
    // The statistics count the text bytes.
    assert_eq!(outcome.stats.iterations[0].calls[0].result_bytes, 8);
}

#[tokio::test]
async fn result_bytes_cuts_the_text_of_content_parts_and_keeps_the_image() {
    let session = bind_tools([screenshot_tool()], ToolLimits::new().result_bytes(256)).await;
    let model = ScriptedModel::new([
        batch([
            call("long", "screenshot", r#"{"len": 5000}"#),
            call("short", "screenshot", r#"{"len": 10}"#),
        ]),
        answer("done"),
    ]);
    let mut conversation = user_says("look");
    let outcome = session
        .run_turn(&model, &mut conversation, &CancellationToken::new())
        .await
        .unwrap();

    let long = result_for(&conversation, "long");
    let [ContentPart::Text(text), ContentPart::Image(image)] = long.content.as_slice() else {
        panic!("one cut text part, then the image: {:?}", long.content);
    };
    assert!(text.text.len() <= 256, "{}", text.text.len());
    assert!(text.text.starts_with("xxx") && text.text.ends_with("END"));
    assert!(text.text.contains("bytes omitted"));
    assert_eq!(*image, ImagePart::base64("image/png", PNG));
    // Under the limit, the parts are untouched.
    assert_eq!(result_for(&conversation, "short").content.len(), 3);
    let stats = &outcome.stats.iterations[0].calls;
    assert_eq!((stats[0].result_bytes, stats[0].truncated), (5003, true));
    assert_eq!((stats[1].result_bytes, stats[1].truncated), (13, false));
}

#[tokio::test]
async fn invoke_returns_the_content_parts() {
    let session = bind_tools([screenshot_tool()], ToolLimits::default()).await;
    let output = session
        .invoke("screenshot", json!({"len": 2}))
        .await
        .unwrap();
    assert_eq!(output.text(), "xxEND");
    assert_eq!(output.images().count(), 1);
    assert_eq!(output.as_json(), None);
}
