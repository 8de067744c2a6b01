//! [`ContentPart`]: one piece of a message.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::{Extras, Origin};

/// One piece of a message, in the order the provider gave it.
///
/// Which parts a message may hold:
///
/// | part | system | user | assistant | tool result |
/// | --- | --- | --- | --- | --- |
/// | [`Text`](ContentPart::Text) | – | yes | yes | yes |
/// | [`Image`](ContentPart::Image) | – | yes | – | yes |
/// | [`Reasoning`](ContentPart::Reasoning) | – | – | yes | – |
/// | [`ToolCall`](ContentPart::ToolCall) | – | – | yes | – |
/// | [`Provider`](ContentPart::Provider) | – | yes | yes | yes |
///
/// A system message is text only ([`SystemMessage`](crate::conversation::SystemMessage)).
/// Exporters leave out a part a role cannot carry in the target format.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Text.
    Text(TextPart),
    /// An image, by URL or inline.
    Image(ImagePart),
    /// The model's reasoning (Anthropic `thinking` / `redacted_thinking`,
    /// DeepSeek's `reasoning_content`), sent back only to the format it came
    /// from.
    Reasoning(ReasoningPart),
    /// A tool call the model asked for.
    ToolCall(ToolCall),
    /// A provider block this crate does not model, kept verbatim and sent
    /// back only to the format it came from (Anthropic `server_tool_use`,
    /// `web_search_tool_result`, `document`; OpenAI `input_audio`, `file`).
    Provider(ProviderPart),
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextPart::new(text))
    }

    /// Every JSON value the part holds, the values the crate copies and
    /// serialises: its extras' values, or a provider part's block.
    pub(crate) fn json_values(&self) -> impl Iterator<Item = &Value> {
        let (extras, block) = match self {
            Self::Text(part) => (Some(&part.extras), None),
            Self::Image(part) => (Some(&part.extras), None),
            Self::Reasoning(part) => (Some(&part.extras), None),
            Self::ToolCall(part) => (Some(&part.extras), None),
            Self::Provider(part) => (None, Some(&part.value)),
        };
        extras
            .into_iter()
            .flat_map(|extras| extras.fields().values())
            .chain(block)
    }

    /// The JSON values of [`json_values`](Self::json_values), taken out of
    /// the part.
    pub(crate) fn into_json_values(self) -> Vec<Value> {
        let extras = match self {
            Self::Text(part) => part.extras,
            Self::Image(part) => part.extras,
            Self::Reasoning(part) => part.extras,
            Self::ToolCall(part) => part.extras,
            Self::Provider(part) => return vec![part.value],
        };
        extras.into_values().collect()
    }
}

/// A text part: `{"type": "text", "text"}` in both providers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Provider fields of the part (Anthropic `citations`, `cache_control`).
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

impl TextPart {
    /// A text part without extras.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            extras: Extras::default(),
        }
    }
}

/// An image: OpenAI `image_url`, Anthropic `image`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImagePart {
    /// Where the image is.
    pub source: ImageSource,
    /// Provider fields of the part (OpenAI `detail`, Anthropic
    /// `cache_control`).
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

impl ImagePart {
    /// An image at a URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self {
            source: ImageSource::Url { url: url.into() },
            extras: Extras::default(),
        }
    }

    /// An inline image: base64 `data` of type `media_type` (`image/png`,
    /// `image/jpeg`, `image/gif`, `image/webp`).
    pub fn base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self {
            source: ImageSource::Base64 {
                media_type: media_type.into(),
                data: data.into(),
            },
            extras: Extras::default(),
        }
    }
}

/// Where an image is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImageSource {
    /// An `http(s)` URL the provider fetches.
    Url {
        /// The URL.
        url: String,
    },
    /// Inline data. OpenAI receives it as a `data:` URL, Anthropic as a
    /// `base64` source; a `data:` URL parsed from OpenAI becomes this.
    Base64 {
        /// The MIME type, e.g. `image/png`.
        media_type: String,
        /// The image bytes, base64-encoded.
        data: String,
    },
}

/// The model's reasoning. Providers that reason across tool calls need it
/// back unchanged: Anthropic refuses a follow-up under extended thinking
/// without the signed `thinking` block, DeepSeek without
/// `reasoning_content`. It is exported only where its
/// [`origin`](Self::origin) allows: its format, its provider when known,
/// and for a signed Anthropic block its model when known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReasoningPart {
    /// The reasoning text (empty for redacted reasoning).
    pub text: String,
    /// The provider's signature over it (Anthropic `thinking.signature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Encrypted reasoning the provider withheld (Anthropic
    /// `redacted_thinking.data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redacted: Option<String>,
    /// Where it came from (format, provider, model), which decides where
    /// it is sent back. Serialised as the part's own `format`, `provider`
    /// and `model` fields.
    #[serde(flatten)]
    pub origin: Origin,
    /// Other provider fields of the part.
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

impl ReasoningPart {
    /// Reasoning `text` from `origin` (a [`WireFormat`](crate::conversation::WireFormat)
    /// alone converts into one), without a signature.
    pub fn new(text: impl Into<String>, origin: impl Into<Origin>) -> Self {
        Self {
            text: text.into(),
            signature: None,
            redacted: None,
            origin: origin.into(),
            extras: Extras::default(),
        }
    }

    /// With the provider's `signature` over it.
    #[must_use]
    pub fn signed(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }
}

/// One tool call requested by the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool call id (OpenAI `call_…`, Anthropic `toolu_…`); its result
    /// carries the same id. The turn runner replaces an empty id, or one the
    /// conversation already uses, with a fresh unique one before the call
    /// runs (Gemini's OpenAI-compatible endpoint sends `""` for every call).
    pub id: String,
    /// The model-facing tool name the model asked for. It may name no tool
    /// at all: models hallucinate.
    pub name: String,
    /// The arguments exactly as the model sent them: JSON text that is meant
    /// to be an object, but may be truncated, `null`, an array or blank
    /// (blank or `null` counts as `{}`). Kept as text so nothing the model sent is
    /// lost.
    pub arguments: String,
    /// Provider fields of the call (Gemini `extra_content`, Anthropic
    /// `caller`).
    #[serde(default, skip_serializing_if = "Extras::skip")]
    pub extras: Extras,
}

impl ToolCall {
    /// A tool call from its id, tool name and raw JSON arguments text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            extras: Extras::default(),
        }
    }
}

/// A provider block this crate does not model, kept verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProviderPart {
    /// Where it came from (format, provider, model), which decides where
    /// it is sent back. Serialised as the part's own `format`, `provider`
    /// and `model` fields.
    #[serde(flatten)]
    pub origin: Origin,
    /// The block as the provider sent it.
    pub value: Value,
}

impl ProviderPart {
    /// The block `value` from `origin` (a [`WireFormat`](crate::conversation::WireFormat)
    /// alone converts into one), kept as it is.
    pub fn new(origin: impl Into<Origin>, value: Value) -> Self {
        Self {
            origin: origin.into(),
            value,
        }
    }
}
