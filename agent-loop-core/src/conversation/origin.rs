//! [`Origin`]: where a piece of provider-specific content came from.

use serde::{Deserialize, Serialize};

use crate::conversation::WireFormat;

/// Where a piece of provider-specific content came from: the reasoning of
/// a [`ReasoningPart`](crate::conversation::ReasoningPart), the block of a
/// [`ProviderPart`](crate::conversation::ProviderPart), the fields of
/// [`Extras`](crate::conversation::Extras).
///
/// Every export reads it the same way (see
/// `wire::Target`): content goes back only to its
/// [`format`](Self::format); when the origin and the export's target both
/// name a [`provider`](Self::provider), only to that provider; and a signed
/// Anthropic `thinking` (or `redacted_thinking`) block, when both name a
/// [`model`](Self::model), only to that model. What an export leaves out
/// for these reasons it reports as `Dropped`.
///
/// - The parsers of `wire` set the format only: a body
///   alone does not say which endpoint it came from.
/// - The four HTTP models (`OpenAiModel`, `OpenAiResponsesModel`,
///   `AnthropicModel`, `GeminiModel`; features `openai`, `anthropic`,
///   `gemini`) also set the provider and the model of every piece of
///   their answers (streamed or not): `provider` is the host of their base URL with its port when one is
///   given (`api.deepseek.com`, `127.0.0.1:8080`), lower-case, so two
///   local servers on two ports are two providers; `model` is the model
///   name the request named (`claude-sonnet-4-0`), which is what the next
///   request to the same model names again (the response's own `model`
///   field gives the dated id, `claude-sonnet-4-20250514`, which no
///   request names).
/// - A piece recorded without a provider or a model (built by hand,
///   parsed from a body, or stored by version 0.1, whose origin was its
///   format only) is sent to every endpoint of its format: the crate
///   cannot tell, and dropping would break continuing a stored
///   conversation on the provider that wrote it.
///
/// Serialised, its fields sit in the object that holds it (`format`, then
/// `provider` and `model` when known), so what version 0.1 stored (a
/// `format` alone) reads back as an origin without provider and model.
///
/// ```
/// use agent_loop_core::conversation::{Origin, WireFormat};
///
/// let origin = Origin::new(WireFormat::OpenAiChat)
///     .with_provider("api.deepseek.com")
///     .with_model("deepseek-reasoner");
/// assert_eq!(origin.provider.as_deref(), Some("api.deepseek.com"));
/// assert_eq!(Origin::from(WireFormat::OpenAiChat).model, None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Origin {
    /// The wire format it came from, the only one it is sent back to.
    pub format: WireFormat,
    /// The endpoint family that sent it: the host (and port, when given)
    /// of the HTTP model's base URL; `None` when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model that wrote it, as the request named it; `None` when
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Origin {
    /// Content of `format`, from an unknown provider and model.
    pub fn new(format: WireFormat) -> Self {
        Self {
            format,
            provider: None,
            model: None,
        }
    }

    /// With the provider (endpoint family) that sent it.
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// With the model that wrote it.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Fills in the provider and the model where they are unknown; known
    /// ones are kept.
    pub(crate) fn record(&mut self, provider: Option<&str>, model: Option<&str>) {
        if self.provider.is_none() {
            self.provider = provider.map(str::to_owned);
        }
        if self.model.is_none() {
            self.model = model.map(str::to_owned);
        }
    }
}

impl From<WireFormat> for Origin {
    fn from(format: WireFormat) -> Self {
        Self::new(format)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::conversation::{ContentPart, Extras, ReasoningPart, WireFormat};

    #[test]
    fn a_part_stored_by_version_0_1_reads_back_without_provider_and_model() {
        let old = json!({ "type": "reasoning", "text": "plan", "signature": "sig", "format": "anthropic_messages" });
        let ContentPart::Reasoning(part) = serde_json::from_value::<ContentPart>(old).unwrap()
        else {
            panic!("not reasoning");
        };
        assert_eq!(part.origin, Origin::new(WireFormat::AnthropicMessages));
        let old_extras = json!({ "format": "open_ai_chat", "fields": { "k": 1 } });
        let extras: Extras = serde_json::from_value(old_extras).unwrap();
        assert_eq!(extras.origin(), Some(&Origin::new(WireFormat::OpenAiChat)));
    }

    #[test]
    fn provider_and_model_are_stored_beside_the_format_and_read_back() {
        let origin = Origin::new(WireFormat::AnthropicMessages)
            .with_provider("api.anthropic.com")
            .with_model("claude-sonnet-4-0");
        let part = ContentPart::Reasoning(ReasoningPart::new("plan", origin.clone()).signed("sig"));
        let value = serde_json::to_value(&part).unwrap();
        assert_eq!(
            value,
            json!({ "type": "reasoning", "text": "plan", "signature": "sig", "format": "anthropic_messages",
                    "provider": "api.anthropic.com", "model": "claude-sonnet-4-0" })
        );
        assert_eq!(serde_json::from_value::<ContentPart>(value).unwrap(), part);
    }

    use super::Origin;
}
