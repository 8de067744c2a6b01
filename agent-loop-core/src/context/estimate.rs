//! [`TokenEstimator`]: how many input tokens a request holds, before it is
//! sent.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;

use crate::conversation::{ContentPart, Message, WireFormat};
use crate::tool::ToolInfo;

/// Tokens counted for each message beside its content: the role and the
/// delimiters a chat template wraps it in (OpenAI's cookbook counts 3 per
/// message plus 3 to prime the answer; 4 leaves room for a name).
pub const MESSAGE_TOKENS: u64 = 4;

/// Tokens counted for each image: what Anthropic bills an image of about
/// 1.15 megapixels (width × height / 750, its documented formula, for the
/// largest image it takes without scaling down). OpenAI bills a high-detail
/// 1024 × 1024 image 765 tokens and Gemini 258 per 768 × 768 tile, so this
/// errs high for them. An image's bytes are never counted as text.
pub const IMAGE_TOKENS: u64 = 1_600;

/// Counts the tokens of a text. Implement it over a provider's tokenizer
/// to make [`TokenEstimator`] exact for text; [`BytesPerToken`] is the
/// default.
pub trait Tokenizer: Send + Sync + fmt::Debug {
    /// The tokens of `text`.
    fn count(&self, text: &str) -> u64;
}

/// A token for every `n` bytes of UTF-8, rounded up: 4 by default, OpenAI's
/// rule of thumb for English ("one token generally corresponds to ~4
/// characters of text", its tokenizer page). Code and text in other
/// scripts hold more tokens per byte, which the correction by reported
/// usage (see [`context`](crate::context)) makes up for within a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BytesPerToken(NonZeroU32);

impl BytesPerToken {
    /// A token for every `bytes` bytes; `None` for `0`.
    pub fn new(bytes: u32) -> Option<Self> {
        NonZeroU32::new(bytes).map(Self)
    }
}

impl Default for BytesPerToken {
    fn default() -> Self {
        Self(NonZeroU32::MIN.saturating_add(3))
    }
}

impl Tokenizer for BytesPerToken {
    fn count(&self, text: &str) -> u64 {
        (text.len() as u64).div_ceil(u64::from(self.0.get()))
    }
}

/// OpenAI's `o200k_base` encoding (GPT-4o, GPT-4.1, GPT-5, the o-series),
/// from the `tiktoken-rs` crate, whose encodings ship inside it (feature
/// `tiktoken`). Exact for text, but counted without the special tokens
/// of a chat template (see [`MESSAGE_TOKENS`]).
#[cfg(feature = "tiktoken")]
#[cfg_attr(docsrs, doc(cfg(feature = "tiktoken")))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct O200kBase;

#[cfg(feature = "tiktoken")]
impl Tokenizer for O200kBase {
    fn count(&self, text: &str) -> u64 {
        tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len() as u64
    }
}

/// Estimates the input tokens of a request: its conversation, its
/// instructions and its tools, as one format would send them.
///
/// A message counts [`MESSAGE_TOKENS`] plus its content: text, a tool
/// call's name and arguments, a result's text, through the
/// [`Tokenizer`]; [`IMAGE_TOKENS`] per image; reasoning, a provider's
/// own part and encrypted reasoning only when the format is theirs (an
/// export to another format leaves them out), the encrypted bytes at
/// [`BytesPerToken`]'s rate (they are no text). A tool counts its name,
/// description and the JSON text of its parameters.
///
/// [`TokenEstimator::new`] counts with [`BytesPerToken`] for any format;
/// [`TokenEstimator::for_format`] picks `o200k_base` for OpenAI's two
/// formats when the feature `tiktoken` is on. Estimates differ from what a
/// provider bills by its chat template and its own tokenizer (Anthropic
/// and Gemini publish none): a turn corrects them by the input tokens the
/// provider reports (see [`context`](crate::context)).
///
/// ```
/// use agent_loop_core::context::TokenEstimator;
/// use agent_loop_core::conversation::Message;
///
/// let estimator = TokenEstimator::new();
/// // 4 for the message, 12 bytes / 4 for its text.
/// assert_eq!(estimator.message(&Message::user("Hello there!")), 4 + 3);
/// ```
#[derive(Clone, Debug)]
pub struct TokenEstimator {
    tokenizer: Arc<dyn Tokenizer>,
    format: Option<WireFormat>,
}

impl Default for TokenEstimator {
    fn default() -> Self {
        Self::new()
    }
}

impl TokenEstimator {
    /// Counts with [`BytesPerToken`] (4 bytes a token), as if every
    /// provider's content were sent.
    pub fn new() -> Self {
        Self {
            tokenizer: Arc::new(BytesPerToken::default()),
            format: None,
        }
    }

    /// Counts for `format` (`None`: unknown, everything counts): content of
    /// other formats is left out as an export leaves it out, and with the
    /// feature `tiktoken` OpenAI's formats count text with
    /// `O200kBase`.
    pub fn for_format(format: Option<WireFormat>) -> Self {
        let tokenizer: Arc<dyn Tokenizer> = match format {
            #[cfg(feature = "tiktoken")]
            Some(WireFormat::OpenAiChat | WireFormat::OpenAiResponses) => Arc::new(O200kBase),
            _ => Arc::new(BytesPerToken::default()),
        };
        Self { tokenizer, format }
    }

    /// Counts text with `tokenizer`.
    #[must_use]
    pub fn with_tokenizer(mut self, tokenizer: Arc<dyn Tokenizer>) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// The format it counts for; `None` when unknown.
    pub fn format(&self) -> Option<WireFormat> {
        self.format
    }

    /// The tokens of `text`.
    pub fn text(&self, text: &str) -> u64 {
        self.tokenizer.count(text)
    }

    /// The tokens of one message, [`MESSAGE_TOKENS`] included.
    pub fn message(&self, message: &Message) -> u64 {
        let content = match message {
            Message::System(system) => self.text(&system.text),
            Message::User(user) => self.parts(&user.content),
            Message::Assistant(assistant) => self.parts(&assistant.content),
            Message::Tool(result) => self.parts(&result.content) + self.text(&result.tool_call_id),
        };
        MESSAGE_TOKENS + content
    }

    /// The tokens of `messages` together.
    pub fn messages(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|message| self.message(message)).sum()
    }

    /// The tokens of one tool's declaration: name, description and the
    /// JSON text of its parameters.
    pub fn tool(&self, tool: &ToolInfo) -> u64 {
        MESSAGE_TOKENS
            + self.text(&tool.name)
            + self.text(&tool.description)
            + self.text(&tool.parameters.to_string())
    }

    /// The tokens of a whole request: `instructions` (a system prompt),
    /// the conversation and the tools.
    pub fn request<'t>(
        &self,
        conversation: &[Message],
        instructions: Option<&str>,
        tools: impl IntoIterator<Item = &'t ToolInfo>,
    ) -> u64 {
        let instructions = instructions.map_or(0, |text| MESSAGE_TOKENS + self.text(text));
        let tools: u64 = tools.into_iter().map(|tool| self.tool(tool)).sum();
        instructions + self.messages(conversation) + tools
    }

    fn parts(&self, parts: &[ContentPart]) -> u64 {
        parts.iter().map(|part| self.part(part)).sum()
    }

    fn part(&self, part: &ContentPart) -> u64 {
        let sent = |format: WireFormat| self.format.is_none_or(|target| target == format);
        match part {
            ContentPart::Text(text) => self.text(&text.text),
            ContentPart::Image(_) => IMAGE_TOKENS,
            ContentPart::ToolCall(call) => {
                MESSAGE_TOKENS
                    + self.text(&call.id)
                    + self.text(&call.name)
                    + self.text(&call.arguments)
            }
            ContentPart::Reasoning(reasoning) if sent(reasoning.origin.format) => {
                // Encrypted reasoning: Anthropic's `redacted_thinking`,
                // Responses' `encrypted_content` (kept in the extras).
                let bytes = BytesPerToken::default();
                let redacted = reasoning
                    .redacted
                    .as_deref()
                    .map_or(0, |data| bytes.count(data));
                let extras = if reasoning.extras.is_empty() {
                    0
                } else {
                    serde_json::to_string(reasoning.extras.fields())
                        .map_or(0, |json| bytes.count(&json))
                };
                self.text(&reasoning.text) + redacted + extras
            }
            ContentPart::Provider(provider) if sent(provider.origin.format) => {
                self.text(&provider.value.to_string())
            }
            _ => 0,
        }
    }
}

#[cfg(all(test, feature = "tiktoken"))]
mod tests {
    use super::*;

    #[test]
    fn o200k_base_counts_tokens_as_openai_does() {
        // `o200k_base` splits these into "Hello" "," " world" "!" and
        // "hello" " world".
        assert_eq!(O200kBase.count("Hello, world!"), 4);
        assert_eq!(O200kBase.count("hello world"), 2);
        assert_eq!(O200kBase.count(""), 0);
    }

    #[test]
    fn openai_formats_count_with_o200k_base_and_the_others_by_bytes() {
        let message = Message::user("hello world");
        let openai = TokenEstimator::for_format(Some(WireFormat::OpenAiChat));
        let responses = TokenEstimator::for_format(Some(WireFormat::OpenAiResponses));
        let anthropic = TokenEstimator::for_format(Some(WireFormat::AnthropicMessages));
        assert_eq!(openai.message(&message), MESSAGE_TOKENS + 2);
        assert_eq!(responses.message(&message), MESSAGE_TOKENS + 2);
        // 11 bytes at 4 a token.
        assert_eq!(anthropic.message(&message), MESSAGE_TOKENS + 3);
    }
}
