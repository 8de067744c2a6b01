//! [`Target`]: the endpoint an export is for, and the one rule every
//! export and its [`Dropped`](crate::wire::Dropped) report read an
//! [`Origin`] by.

use std::borrow::Cow;

use agent_loop_core::conversation::{
    ContentPart, Extras, Message, Origin, ReasoningPart, WireFormat,
};

/// The endpoint an export is for, beside its format: the provider
/// (endpoint family) and the model the request goes to. Unknown (the
/// default) for either, nothing is left out for it.
///
/// Provider-specific content (reasoning, provider parts, extras) goes to
/// the target only where its [`Origin`] allows, by one rule for every
/// export:
///
/// 1. its format is the export's format;
/// 2. when both name a provider, they name the same one: DeepSeek's
///    `reasoning_content` or OpenRouter's `reasoning_details` mean nothing
///    to another server of the same format, and servers that check message
///    keys (Cerebras) answer HTTP 400 to them;
/// 3. a signed Anthropic `thinking` block (or a `redacted_thinking` one),
///    when both name a model, goes to the same model only: Anthropic
///    binds a signature to the model that wrote it and refuses it on
///    another (`Invalid signature in thinking block`).
///
/// Where either side is unknown, the rule of that side holds: see
/// [`Origin`] for why. The four HTTP models (features `openai`,
/// `anthropic`, `gemini`) export with their own target (the host of their
/// base URL, their model name).
///
/// ```
/// use agent_loop_core::conversation::{AssistantMessage, ContentPart, Message, Origin, ReasoningPart, WireFormat};
/// use agent_loop_providers::wire::{DroppedKind, Target, openai};
///
/// let deepseek = Origin::new(WireFormat::OpenAiChat).with_provider("api.deepseek.com");
/// let mut assistant = AssistantMessage::from_text("4");
/// assistant.content.insert(0, ContentPart::Reasoning(ReasoningPart::new("2+2", deepseek)));
/// let conversation = [Message::user("2+2?"), Message::Assistant(assistant)];
///
/// let to_cerebras = openai::export_messages_for(&conversation, &Target::new().provider("api.cerebras.ai"));
/// assert!(to_cerebras.messages[1].get("reasoning_content").is_none());
/// assert_eq!(to_cerebras.dropped[0].kind, DroppedKind::Reasoning { format: WireFormat::OpenAiChat });
///
/// let to_deepseek = openai::export_messages_for(&conversation, &Target::new().provider("api.deepseek.com"));
/// assert_eq!(to_deepseek.messages[1]["reasoning_content"], "2+2");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Target {
    /// The provider the request goes to, in the terms of
    /// [`Origin::provider`]; `None` when unknown.
    pub provider: Option<String>,
    /// The model the request names; `None` when unknown.
    pub model: Option<String>,
}

impl Target {
    /// A target of unknown provider and model: only the format decides.
    pub fn new() -> Self {
        Self::default()
    }

    /// Going to `provider` (the host, with its port when given, of the
    /// endpoint: `api.deepseek.com`).
    #[must_use]
    pub fn provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Going to `model`.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// `true` when content of `origin`, of the kind `piece`, may go to this
    /// target in `format`: the rule of the type's docs.
    pub(crate) fn takes(&self, format: WireFormat, origin: &Origin, piece: Piece) -> bool {
        let differ = |ours: &Option<String>, theirs: &Option<String>| matches!((ours, theirs), (Some(ours), Some(theirs)) if ours != theirs);
        if origin.format != format || differ(&self.provider, &origin.provider) {
            return false;
        }
        let model_bound =
            piece == Piece::SignedReasoning && format == WireFormat::AnthropicMessages;
        !(model_bound && differ(&self.model, &origin.model))
    }

    /// `true` for DeepSeek's API (`api.deepseek.com`): in thinking mode
    /// (`deepseek-reasoner`, the V4 models, `"thinking": {"type":
    /// "enabled"}`) it answers HTTP 400 `Missing reasoning_content field in
    /// the assistant message at message index N` to an assistant message
    /// without `reasoning_content`, the empty string accepted, and the
    /// messages another model wrote included
    /// (<https://api-docs.deepseek.com/guides/thinking_mode#tool-calls>;
    /// anomalyco/opencode #17523, openai/openai-agents-python #2155). Outside
    /// thinking mode it ignores the field, so the Chat Completions export
    /// writes it on every assistant message to this host whatever the mode.
    /// DeepSeek's models served elsewhere follow that server's rules.
    pub(crate) fn wants_reasoning_on_every_assistant_message(&self) -> bool {
        self.host()
            .is_some_and(|host| host.eq_ignore_ascii_case("api.deepseek.com"))
    }

    /// The [`provider`](Self::provider) without its port: the host the
    /// per-host rules (DeepSeek's, Mistral's, OpenAI's) are keyed by.
    pub(crate) fn host(&self) -> Option<&str> {
        let provider = self.provider.as_deref()?;
        provider.split(':').next()
    }

    /// `true` when nothing but the format can be left out for this target.
    fn is_unknown(&self) -> bool {
        self.provider.is_none() && self.model.is_none()
    }

    /// `true` when `extras` may go to this target in `format`: extras of
    /// no origin, or of one the rule takes.
    pub(crate) fn takes_extras(&self, format: WireFormat, extras: &Extras) -> bool {
        extras
            .origin()
            .is_none_or(|origin| self.takes(format, origin, Piece::Other))
    }

    /// `true` when `reasoning` may go to this target in `format`.
    pub(crate) fn takes_reasoning(&self, format: WireFormat, reasoning: &ReasoningPart) -> bool {
        self.takes(format, &reasoning.origin, Piece::of_reasoning(reasoning))
    }
}

/// What kind of provider-specific content an origin belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Reasoning with a signature or redacted data.
    SignedReasoning,
    /// Other reasoning, a provider part, extras.
    Other,
}

impl Piece {
    fn of_reasoning(reasoning: &ReasoningPart) -> Self {
        if reasoning.signature.is_some() || reasoning.redacted.is_some() {
            Self::SignedReasoning
        } else {
            Self::Other
        }
    }
}

/// `conversation` without the content of `format` that `target` does not
/// take: such reasoning and provider parts removed, such extras emptied.
/// Content of another format stays (each export leaves it out itself), so
/// the export of the result, with the [`report`](crate::wire::dropped::report)
/// of `conversation` itself, is the export for `target`. Borrowed when
/// nothing is left out.
pub(crate) fn for_target<'c>(
    conversation: &'c [Message],
    format: WireFormat,
    target: &Target,
) -> Cow<'c, [Message]> {
    if target.is_unknown() {
        return Cow::Borrowed(conversation);
    }
    let refused_extras = |extras: &Extras| {
        extras.origin().is_some_and(|origin| {
            origin.format == format && !target.takes(format, origin, Piece::Other)
        })
    };
    let refused_part = |part: &ContentPart| refuses_part(target, format, part);
    let any_refused = conversation.iter().any(|message| {
        let (extras, parts) = message.extras_and_content();
        refused_extras(extras)
            || parts
                .iter()
                .any(|part| refused_part(part) || part_extras(part).is_some_and(refused_extras))
    });
    if !any_refused {
        return Cow::Borrowed(conversation);
    }
    let mut kept = conversation.to_vec();
    for message in &mut kept {
        let (extras, parts) = message.extras_and_content_mut();
        if refused_extras(extras) {
            extras.clear();
        }
        let Some(parts) = parts else { continue };
        parts.retain(|part| !refused_part(part));
        for part in parts.iter_mut() {
            if let Some(extras) = part_extras_mut(part)
                && refused_extras(extras)
            {
                extras.clear();
            }
        }
    }
    Cow::Owned(kept)
}

/// `true` when [`for_target`] removes `part` for `target` in `format`:
/// reasoning or a provider part of `format` that the target's rule
/// refuses.
pub(crate) fn refuses_part(target: &Target, format: WireFormat, part: &ContentPart) -> bool {
    match part {
        ContentPart::Reasoning(reasoning) => {
            reasoning.origin.format == format && !target.takes_reasoning(format, reasoning)
        }
        ContentPart::Provider(provider) => {
            provider.origin.format == format
                && !target.takes(format, &provider.origin, Piece::Other)
        }
        _ => false,
    }
}

/// The extras of a part; a provider part has none (its origin is the
/// part's).
pub(crate) fn part_extras(part: &ContentPart) -> Option<&Extras> {
    match part {
        ContentPart::Text(part) => Some(&part.extras),
        ContentPart::Image(part) => Some(&part.extras),
        ContentPart::Reasoning(part) => Some(&part.extras),
        ContentPart::ToolCall(part) => Some(&part.extras),
        ContentPart::Provider(_) => None,
        // A kind of part this crate does not know: no extras it can read,
        // as for a provider part.
        _ => None,
    }
}

fn part_extras_mut(part: &mut ContentPart) -> Option<&mut Extras> {
    match part {
        ContentPart::Text(part) => Some(&mut part.extras),
        ContentPart::Image(part) => Some(&mut part.extras),
        ContentPart::Reasoning(part) => Some(&mut part.extras),
        ContentPart::ToolCall(part) => Some(&mut part.extras),
        ContentPart::Provider(_) => None,
        // As in `part_extras`.
        _ => None,
    }
}
