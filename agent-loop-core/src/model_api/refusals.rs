//! What a provider's refusal of a request means, as each provider says it:
//! one table for every provider, read by
//! [`ModelError::exceeds_context_window`](crate::turn::ModelError::exceeds_context_window)
//! and [`ModelError::is_failed_tool_call`](crate::turn::ModelError::is_failed_tool_call). A row matches an error by its
//! `code`, its `type`, or a phrase of its message; a phrase is read only
//! on a refusal (HTTP 400, an error body answered with 200, a stream's
//! error event), so a rate limit whose message sounds alike is not taken
//! for one.

/// What a refusal says of the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Meaning {
    /// The input does not fit the model's context window: a turn that
    /// compacts compacts and asks again.
    ContextWindowFull,
    /// The provider could not read the model's output as a tool call: the
    /// turn tells the model and lets it try again, within its limits.
    FailedToolCall,
}

/// How a provider says it.
#[derive(Clone, Copy, Debug)]
enum Says {
    /// The error's `code`.
    Code(&'static str),
    /// The error's `type`.
    Type(&'static str),
    /// A phrase of the message, lower case, on a refusal only.
    Phrase(&'static str),
}

/// One provider's way of saying one thing.
struct Row {
    /// Who says it: read by the tests, never matched.
    #[cfg_attr(not(test), allow(dead_code))]
    provider: &'static str,
    says: Says,
    means: Meaning,
}

const fn row(provider: &'static str, says: Says, means: Meaning) -> Row {
    Row {
        provider,
        says,
        means,
    }
}

use Meaning::{ContextWindowFull, FailedToolCall};
use Says::{Code, Phrase, Type};

/// Every refusal the crate knows. Sources: OpenAI's error codes
/// (`context_length_exceeded`), Anthropic's and Gemini's documented
/// messages, and the messages of the servers' own bug reports (xAI:
/// cline/cline #3120; LM Studio: lmstudio-bug-tracker #546 and #2205, and
/// llama.cpp's `n_keep` message it relays: anomalyco/opencode #11141;
/// Groq's `tool_use_failed`: pydantic/pydantic-ai PR #2774).
const REFUSALS: &[Row] = &[
    row("OpenAI", Code("context_length_exceeded"), ContextWindowFull),
    // The Responses API's failed answer or stream: its code is the type.
    row(
        "OpenAI Responses",
        Type("context_length_exceeded"),
        ContextWindowFull,
    ),
    row(
        "llama.cpp",
        Type("exceed_context_size_error"),
        ContextWindowFull,
    ),
    row("Anthropic", Phrase("prompt is too long"), ContextWindowFull),
    // "input length and `max_tokens` exceed context limit: …"
    row(
        "Anthropic",
        Phrase("exceed context limit"),
        ContextWindowFull,
    ),
    row(
        "vLLM, DeepSeek",
        Phrase("maximum context length"),
        ContextWindowFull,
    ),
    row(
        "Gemini",
        Phrase("exceeds the maximum number of tokens allowed"),
        ContextWindowFull,
    ),
    row(
        "OpenAI Responses",
        Phrase("exceeds the context window"),
        ContextWindowFull,
    ),
    // "This model's maximum prompt length is 131072 but the request
    // contains 136973 tokens."
    row("xAI", Phrase("maximum prompt length is"), ContextWindowFull),
    // "… However, the model is loaded with context length of only 32768
    // tokens, which is not enough."
    row(
        "LM Studio",
        Phrase("is loaded with context length of only"),
        ContextWindowFull,
    ),
    // "The number of tokens to keep from the initial prompt is greater
    // than the context length"
    row(
        "LM Studio",
        Phrase("tokens to keep from the initial prompt is greater than the context length"),
        ContextWindowFull,
    ),
    // "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)"
    row(
        "LM Studio, llama.cpp",
        Phrase("cannot truncate prompt with n_keep"),
        ContextWindowFull,
    ),
    // HTTP 400 "Failed to call a function. Please adjust your prompt. See
    // 'failed_generation' for more details."
    row("Groq", Code("tool_use_failed"), FailedToolCall),
];

/// What an error says of the request, as its fields say it: its `code`,
/// its `type`, and its `message`, read only when the error is a refusal
/// (`refused`: HTTP 400, an error body answered with 200, a stream's error
/// event). The error's own module decides `refused`, so this table names
/// no error type of its own.
pub(crate) struct Said<'e> {
    pub(crate) refused: bool,
    pub(crate) code: Option<&'e str>,
    pub(crate) error_type: Option<&'e str>,
    pub(crate) message: Option<&'e str>,
}

/// What an error that says `said` means, by the first row that matches.
pub(crate) fn meaning(said: &Said<'_>) -> Option<Meaning> {
    let message = said
        .message
        .filter(|_| said.refused)
        .map(str::to_ascii_lowercase);
    // What a provider names (a code, a type) before what its message
    // says: a refusal's message may quote words another row reads.
    let named = |row: &&Row| match row.says {
        Code(code) => said.code == Some(code),
        Type(error_type) => said.error_type == Some(error_type),
        Phrase(_) => false,
    };
    let said = |row: &&Row| match row.says {
        Phrase(phrase) => message.as_deref().is_some_and(|text| text.contains(phrase)),
        Code(_) | Type(_) => false,
    };
    REFUSALS
        .iter()
        .find(named)
        .or_else(|| REFUSALS.iter().find(said))
        .map(|row| row.means)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row names who says it, and a code wins over a phrase: Groq's
    /// `tool_use_failed` whose message happens to hold words of a full
    /// window is a failed tool call.
    #[test]
    fn every_row_names_its_provider_and_a_code_wins_over_a_phrase() {
        assert!(REFUSALS.iter().all(|row| !row.provider.is_empty()));
        let mut said = Said {
            refused: true,
            code: Some("tool_use_failed"),
            error_type: None,
            message: Some("the call exceeded the maximum context length of the tool"),
        };
        assert_eq!(meaning(&said), Some(Meaning::FailedToolCall));
        said.code = None;
        assert_eq!(meaning(&said), Some(Meaning::ContextWindowFull));
        said.refused = false;
        assert_eq!(meaning(&said), None, "a phrase counts on a refusal only");
    }
}
