//! [`ElideToolResults`]: the built-in compactor that shortens the oldest
//! tool results.

use async_trait::async_trait;

use crate::context::{CompactionRequest, Compactor, Replacement};
use crate::conversation::{ContentPart, Message, ToolResult};
use crate::support::text::floor_char_boundary;
use crate::tool::BoxError;

/// How an elided result begins: a compactor run again leaves it alone.
pub const ELIDED_MARKER: &str = "[tool result elided to save context:";

/// Shortens the oldest tool results, oldest first, until the conversation
/// reaches the target: each keeps its first [`keep_bytes`](Self::keep_bytes)
/// bytes of text (0 by default) after a line saying what was elided
/// (`[tool result elided to save context: 48213 bytes and 1 image
/// removed]`; a part that is neither text nor an image, a provider's
/// block, is named `other part`). Every call keeps its one result, so the conversation's
/// pairs hold; a result already elided, or not estimated larger than
/// what would replace it, is left alone. The results of the last
/// [`keep_recent`](Self::keep_recent) batches stay whole.
///
/// Its name is `elide_tool_results`.
#[derive(Clone, Debug, Default)]
pub struct ElideToolResults {
    keep_bytes: usize,
    keep_recent: usize,
}

impl ElideToolResults {
    /// Results cut to the marker alone; every batch before the protected
    /// tail may be shortened.
    pub const fn new() -> Self {
        Self {
            keep_bytes: 0,
            keep_recent: 0,
        }
    }

    /// Keeps the first `bytes` bytes of each shortened result's text (cut
    /// at a character boundary), so the model still sees what it was.
    #[must_use]
    pub fn keep_bytes(mut self, bytes: usize) -> Self {
        self.keep_bytes = bytes;
        self
    }

    /// Leaves whole the results of the last `batches` batches before the
    /// protected tail.
    #[must_use]
    pub fn keep_recent(mut self, batches: usize) -> Self {
        self.keep_recent = batches;
        self
    }

    /// The result shortened, or `None` when shortening would not make it
    /// smaller.
    fn elide(&self, result: &ToolResult) -> Option<ToolResult> {
        let text = result.text();
        if text.starts_with(ELIDED_MARKER) {
            return None;
        }
        let count = |image: bool| {
            result
                .content
                .iter()
                .filter(|part| match part {
                    ContentPart::Text(_) => false,
                    ContentPart::Image(_) => image,
                    _ => !image,
                })
                .count()
        };
        let kept = &text[..floor_char_boundary(&text, self.keep_bytes.min(text.len()))];
        let removed = text.len() - kept.len();
        // Images, and other parts (a provider's block), are named apart.
        let images = match count(true) {
            0 => String::new(),
            1 => " and 1 image".to_owned(),
            n => format!(" and {n} images"),
        };
        let others = match count(false) {
            0 => String::new(),
            1 => " and 1 other part".to_owned(),
            n => format!(" and {n} other parts"),
        };
        let marker = format!("{ELIDED_MARKER} {removed} bytes{images}{others} removed]");
        let elided = if kept.is_empty() {
            marker
        } else {
            format!("{marker}\n{kept}")
        };
        if images.is_empty() && others.is_empty() && elided.len() >= text.len() {
            return None;
        }
        let mut shortened = result.clone();
        shortened.content = vec![ContentPart::text(elided)];
        Some(shortened)
    }
}

#[async_trait]
impl Compactor for ElideToolResults {
    fn name(&self) -> &str {
        "elide_tool_results"
    }

    async fn compact(
        &self,
        request: CompactionRequest<'_>,
    ) -> Result<Option<Replacement>, BoxError> {
        let CompactionRequest {
            conversation,
            editable,
            mut tokens,
            target_tokens,
            estimator,
        } = request;
        // The batches that stay whole: the last `keep_recent` before the tail.
        let mut end = editable.end;
        let mut batches = 0;
        while batches < self.keep_recent && end > editable.start {
            end -= 1;
            if conversation[end]
                .as_assistant()
                .is_some_and(|a| a.has_tool_calls())
            {
                batches += 1;
            }
        }
        let mut changed: Vec<(usize, Message)> = Vec::new();
        for (index, message) in conversation
            .iter()
            .enumerate()
            .take(end)
            .skip(editable.start)
        {
            if tokens <= target_tokens {
                break;
            }
            let Message::Tool(result) = message else {
                continue;
            };
            let Some(shortened) = self.elide(result) else {
                continue;
            };
            let shortened = Message::Tool(shortened);
            let (was, now) = (estimator.message(message), estimator.message(&shortened));
            // Fewer bytes may be as many tokens: such a result stays.
            if now >= was {
                continue;
            }
            tokens = tokens.saturating_sub(was) + now;
            changed.push((index, shortened));
        }
        let (Some((first, _)), Some((last, _))) = (changed.first(), changed.last()) else {
            return Ok(None);
        };
        let range = *first..last + 1;
        let mut messages = conversation[range.clone()].to_vec();
        for (index, shortened) in changed {
            messages[index - range.start] = shortened;
        }
        Ok(Some(Replacement::new(range, messages)))
    }
}
