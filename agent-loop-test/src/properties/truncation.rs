//! Truncation: whatever a tool returns (any text, any JSON, text and image
//! parts, an error with any message), under any `result_bytes`, the result
//! the model reads is the output when it fits, and otherwise its head, a
//! marker counting the bytes left out, and its tail, within the limit;
//! images pass whole; an error result is one line of at most
//! `ERROR_TEXT_BYTES`.

use agent_loop::conversation::{ContentPart, ImagePart, ToolCall};
use agent_loop::tool::{self, BoxError, ToolInfo, ToolOutput};
use agent_loop::turn::ERROR_TEXT_BYTES;
use agent_loop::{Definition, Limit, ToolLimits};
use serde_json::{Value, json};

use super::{bind, block_on, ensure, run_one_batch};

/// Most outputs a case runs (one call each, in one batch).
pub const MAX_OUTPUTS: usize = 8;

/// One case: what the tool returns for each call, and the limit.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TruncationCase {
    pub outputs: Vec<ToolReturn>,
    /// `result_bytes`: `None` is unlimited; a number is 256 more than it,
    /// the least a definition may set.
    pub extra_bytes: Option<u16>,
}

/// What the tool returns for one call.
#[derive(Clone, Debug)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum ToolReturn {
    /// A JSON string: the model reads the text.
    Text(String),
    /// A JSON number: the model reads its compact JSON.
    Number(f64),
    /// Content parts: text (`None`) or an image (`Some(data)`).
    Parts(Vec<Option<String>>),
    /// An error with this message.
    Error(String),
}

impl ToolReturn {
    fn output(&self) -> Result<ToolOutput, BoxError> {
        match self {
            ToolReturn::Text(text) => Ok(json!(text).into()),
            ToolReturn::Number(number) => Ok(json!(number).into()),
            ToolReturn::Parts(parts) => Ok(ToolOutput::Content(parts.iter().map(part).collect())),
            ToolReturn::Error(message) => Err(message.clone().into()),
        }
    }
}

/// `None` is a text part of 300 `x`s (longer than the least limit),
/// `Some(data)` an image.
fn part(part: &Option<String>) -> ContentPart {
    match part {
        None => ContentPart::text("x".repeat(300)),
        Some(data) => ContentPart::Image(ImagePart::base64("image/png", data.clone())),
    }
}

/// Runs one batch calling the tool once per output, and checks each result
/// against the output it stands for.
pub fn check_truncation(case: &TruncationCase) -> Result<(), String> {
    let outputs: Vec<ToolReturn> = case.outputs.iter().take(MAX_OUTPUTS).cloned().collect();
    let limit = case.extra_bytes.map(|extra| 256 + usize::from(extra));
    let returns = outputs.clone();
    let emit = tool::Definition::from_fn(
        ToolInfo::new(
            "emit",
            "Returns output number `i`.",
            json!({ "type": "object", "properties": { "i": { "type": "integer" } } }),
        ),
        move |arguments: Value, _context| {
            let i = arguments["i"].as_u64().unwrap_or(0) as usize;
            let output = returns.get(i).map(ToolReturn::output);
            async move { output.unwrap_or_else(|| Err("no such output".into())) }
        },
    );
    let result_bytes = match limit {
        Some(bytes) => Limit::at_most(bytes as u32).unwrap_or(Limit::Unlimited),
        None => Limit::Unlimited,
    };
    let calls: Vec<ToolCall> = (0..outputs.len())
        .map(|i| ToolCall::new(format!("call_{i}"), "emit", json!({ "i": i }).to_string()))
        .collect();
    let conversation = block_on(async {
        let session = bind(
            Definition::builder()
                .name("properties-truncation")
                .tool(emit)
                .tool_limits(ToolLimits::new().result_bytes(result_bytes))
                .build(),
        )
        .await?;
        run_one_batch(&session, calls).await
    })?;
    let results = crate::turn_common::tool_results(&conversation);
    ensure(results.len() == outputs.len(), || {
        format!("{} results for {} calls", results.len(), outputs.len())
    })?;
    for (output, result) in outputs.iter().zip(results) {
        let shown = result.text();
        if let ToolReturn::Error(_) = output {
            ensure(result.is_error, || format!("an error became ok: {shown:?}"))?;
            ensure(
                shown.len() <= ERROR_TEXT_BYTES.min(limit.unwrap_or(usize::MAX)),
                || format!("an error result of {} bytes: {shown:?}", shown.len()),
            )?;
            ensure(!shown.chars().any(char::is_control), || {
                format!("an error result with control characters: {shown:?}")
            })?;
            continue;
        }
        ensure(!result.is_error, || {
            format!("{output:?} became the error {shown:?}")
        })?;
        let (original, images) = match output.output() {
            Ok(ToolOutput::Content(parts)) if !parts.is_empty() => {
                let text: String = parts.iter().filter_map(text_of).collect();
                let images: Vec<&ContentPart> = parts
                    .iter()
                    .filter(|part| text_of(part).is_none())
                    .collect();
                (text, images.into_iter().cloned().collect())
            }
            Ok(other) => (other.text(), Vec::new()),
            Err(_) => unreachable!("errors are checked above"),
        };
        let shown_images: Vec<ContentPart> = result
            .content
            .iter()
            .filter(|part| text_of(part).is_none())
            .cloned()
            .collect();
        ensure(shown_images == images, || {
            format!("the images of {output:?} became {shown_images:?}")
        })?;
        match limit {
            Some(limit) if original.len() > limit => {
                ensure(shown.len() <= limit, || {
                    format!(
                        "{} bytes cut to {} for a limit of {limit}",
                        original.len(),
                        shown.len()
                    )
                })?;
                ensure(is_head_marker_tail(&original, &shown), || {
                    format!("{shown:?} is not a head, a marker and a tail of {original:?}")
                })?;
            }
            _ => ensure(shown == original, || {
                format!("{original:?} fits and was shown as {shown:?}")
            })?,
        }
    }
    Ok(())
}

fn text_of(part: &ContentPart) -> Option<&str> {
    match part {
        ContentPart::Text(text) => Some(&text.text),
        _ => None,
    }
}

/// Whether `shown` is a head of `original`, the marker
/// `\n[… N bytes omitted …]\n` and a tail, with N the bytes between them.
fn is_head_marker_tail(original: &str, shown: &str) -> bool {
    const OPEN: &str = "\n[… ";
    const CLOSE: &str = " bytes omitted …]\n";
    shown.match_indices(OPEN).any(|(at, _)| {
        let head = &shown[..at];
        let rest = &shown[at + OPEN.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let Ok(omitted) = rest[..digits].parse::<usize>() else {
            return false;
        };
        let Some(tail) = rest[digits..].strip_prefix(CLOSE) else {
            return false;
        };
        original.starts_with(head)
            && original.ends_with(tail)
            && head.len() + omitted + tail.len() == original.len()
    })
}
