//! What an HTTP model reads of itself in the [model catalog](crate::catalog):
//! which catalog provider its endpoint is, and the checks of a request
//! against the model's facts.

use agent_loop_core::conversation::WireFormat;
use agent_loop_core::turn::{ModelError, ModelErrorKind};

use super::error::HttpModelError;
use crate::catalog::ModelFacts;

/// The catalog provider of an endpoint: its official `host` (without its
/// port), by format; `None` for any other server (a proxy, a local server,
/// a cloud), whose models the catalog cannot tell apart from the maker's.
pub(super) fn catalog_provider(format: WireFormat, host: &str) -> Option<&'static str> {
    Some(match (format, host) {
        (WireFormat::OpenAiChat | WireFormat::OpenAiResponses, "api.openai.com") => "openai",
        (WireFormat::OpenAiChat, "api.deepseek.com") => "deepseek",
        (WireFormat::OpenAiChat, "api.mistral.ai") => "mistral",
        (WireFormat::OpenAiChat | WireFormat::OpenAiResponses, "api.x.ai") => "xai",
        (WireFormat::OpenAiChat | WireFormat::OpenAiResponses, "api.groq.com") => "groq",
        (WireFormat::AnthropicMessages, "api.anthropic.com") => "anthropic",
        (WireFormat::Gemini, "generativelanguage.googleapis.com") => "google",
        _ => return None,
    })
}

/// Refuses an output limit above the model's largest output: the API
/// answers it 400 (OpenAI "max_tokens is too large", Anthropic
/// "max_tokens: … > …, which is the maximum allowed number of output
/// tokens", Gemini's `INVALID_ARGUMENT`).
pub(super) fn check_output_limit(
    format: WireFormat,
    facts: &ModelFacts,
    setting: &str,
    max_tokens: u32,
) -> Result<(), ModelError> {
    match facts.max_output_tokens {
        Some(largest) if max_tokens > largest => Err(ModelError::of_format(
            format,
            ModelErrorKind::Request,
        )
        .with_message(format!(
            "{setting} {max_tokens} is above the largest output of {} ({largest} tokens, the \
             model catalog's `{}/{}`, from models.dev); the request was not sent",
            facts.id, facts.provider, facts.id
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_providers_own_host_is_its_catalog_provider() {
        let cases = [
            (WireFormat::OpenAiChat, "api.openai.com", Some("openai")),
            (
                WireFormat::OpenAiResponses,
                "api.openai.com",
                Some("openai"),
            ),
            (WireFormat::OpenAiChat, "api.deepseek.com", Some("deepseek")),
            (
                WireFormat::AnthropicMessages,
                "api.anthropic.com",
                Some("anthropic"),
            ),
            (
                WireFormat::Gemini,
                "generativelanguage.googleapis.com",
                Some("google"),
            ),
            (WireFormat::AnthropicMessages, "api.openai.com", None),
            (WireFormat::OpenAiChat, "openrouter.ai", None),
            (WireFormat::OpenAiChat, "127.0.0.1", None),
        ];
        for (format, host, provider) in cases {
            assert_eq!(
                catalog_provider(format, host),
                provider,
                "{format:?} {host}"
            );
        }
    }

    #[test]
    fn an_output_limit_above_the_largest_is_refused_naming_the_entry() {
        let facts = ModelFacts::new("acme", "m1").max_output_tokens(8192);
        assert!(check_output_limit(WireFormat::OpenAiChat, &facts, "max_tokens", 8192).is_ok());
        let error = check_output_limit(WireFormat::OpenAiChat, &facts, "max_tokens", 8193)
            .expect_err("above");
        assert_eq!(error.kind, ModelErrorKind::Request);
        assert_eq!(
            error.message.as_deref(),
            Some(
                "max_tokens 8193 is above the largest output of m1 (8192 tokens, the model \
                 catalog's `acme/m1`, from models.dev); the request was not sent"
            )
        );
        // Unknown largest output: nothing to check.
        let unknown = ModelFacts::new("acme", "m2");
        assert!(check_output_limit(WireFormat::Gemini, &unknown, "max_tokens", u32::MAX).is_ok());
    }
}
