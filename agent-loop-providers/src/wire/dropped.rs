//! [`Dropped`]: what an export could not carry to its target format.
//!
//! A conversation begun on one provider can go on on another (a fallback,
//! a cheaper model for one step). Every export then leaves out what the
//! target cannot read: reasoning, provider parts and extras of another
//! format (a signed Anthropic `thinking` block means nothing to Gemini,
//! and OpenAI answers 400 to encrypted reasoning it did not write), and
//! images where the target takes none. Each export reports those, beside
//! the body, so that a caller can log them or refuse to switch.
//!
//! Whether provider-specific content goes to the target is read from its
//! [`Origin`] by the one rule of [`Target`]: the same rule decides what the
//! export writes and what this report lists, for every format. So
//! reasoning of the right format but another provider (DeepSeek's
//! `reasoning_content` sent to Cerebras) or a signed Anthropic `thinking`
//! block of another model is reported here too.
//!
//! Blank text is not reported: it carries nothing, and every export leaves
//! it out.

use std::fmt;

use crate::wire::target::{Piece, Target, part_extras};
use agent_loop_core::conversation::{ContentPart, Extras, Message, Origin, WireFormat};

/// One thing an export left out.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Dropped {
    /// The index of its message in the exported conversation (before any
    /// instructions a model puts first).
    pub message: usize,
    /// The index of its part in the message's content; `None` for the
    /// message's own extras.
    pub part: Option<usize>,
    /// What it was.
    pub kind: DroppedKind,
    /// Where it came from (its format, and the provider and model when
    /// recorded); `None` for an image, which has no provider.
    pub origin: Option<Origin>,
}

/// What an export left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DroppedKind {
    /// Reasoning the target cannot read: of another format (Anthropic's
    /// signed `thinking`, OpenAI Responses' encrypted `reasoning`, Gemini's
    /// `thought` parts), of another provider of the target's format
    /// (DeepSeek's `reasoning_content` sent elsewhere), of another model
    /// (a signed Anthropic block), or of the target's format in a form it
    /// refuses (an Anthropic `thinking` block without its signature).
    Reasoning {
        /// The format the reasoning came from.
        format: WireFormat,
    },
    /// A provider part (a block this crate does not model) of another
    /// format or provider, or one the target takes nowhere in that place.
    ProviderPart {
        /// The format the part came from.
        format: WireFormat,
    },
    /// Provider fields ([`Extras`]) of another format or provider, on a
    /// message or a part: Gemini's `thoughtSignature`, Anthropic's
    /// `cache_control`, Responses' item ids, OpenRouter's
    /// `reasoning_details`.
    Extras {
        /// The format the fields came from.
        format: WireFormat,
    },
    /// An image where the target takes none (in an assistant message, or in
    /// an Anthropic error result).
    Image,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            DroppedKind::Reasoning { format } => write!(f, "reasoning of {format}")?,
            DroppedKind::ProviderPart { format } => write!(f, "a provider part of {format}")?,
            DroppedKind::Extras { format } => write!(f, "provider fields of {format}")?,
            DroppedKind::Image => f.write_str("an image")?,
        }
        if let Some(origin) = &self.origin {
            match (&origin.provider, &origin.model) {
                (Some(provider), Some(model)) => write!(f, " (from {provider}, model {model})")?,
                (Some(provider), None) => write!(f, " (from {provider})")?,
                (None, Some(model)) => write!(f, " (model {model})")?,
                (None, None) => {}
            }
        }
        write!(f, " in message {}", self.message)?;
        if let Some(part) = self.part {
            write!(f, ", part {part}")?;
        }
        Ok(())
    }
}

/// Where a part sits, for a target's own rules on what it takes there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    User,
    Assistant,
    ToolResult {
        /// The result reports a failure.
        is_error: bool,
    },
}

/// What exporting `conversation` to `target` in `format` leaves out.
///
/// Reasoning, provider parts and extras that [`Target::takes`] refuses
/// (another format, another provider, another model for signed Anthropic
/// reasoning) are dropped by every export. `takes(place, part)` holds the
/// format's own rules for a part it may carry (or of no format, like text
/// and images): `false` where its export leaves the part out. Extras of a
/// part that is dropped are not reported again.
pub(crate) fn report(
    conversation: &[Message],
    format: WireFormat,
    target: &Target,
    takes: impl Fn(Place, &ContentPart) -> bool,
) -> Vec<Dropped> {
    let mut dropped = Vec::new();
    for (index, message) in conversation.iter().enumerate() {
        let (extras, parts, place): (&Extras, &[ContentPart], Option<Place>) = match message {
            Message::System(system) => (&system.extras, &[], None),
            Message::User(user) => (&user.extras, &user.content, Some(Place::User)),
            Message::Assistant(assistant) => (
                &assistant.extras,
                &assistant.content,
                Some(Place::Assistant),
            ),
            Message::Tool(result) => (
                &result.extras,
                &result.content,
                Some(Place::ToolResult {
                    is_error: result.is_error,
                }),
            ),
        };
        if let Some(origin) = refused(extras, format, target) {
            dropped.push(Dropped {
                message: index,
                part: None,
                kind: DroppedKind::Extras {
                    format: origin.format,
                },
                origin: Some(origin.clone()),
            });
        }
        let Some(place) = place else { continue };
        for (position, part) in parts.iter().enumerate() {
            let at = |kind, origin: Option<&Origin>| Dropped {
                message: index,
                part: Some(position),
                kind,
                origin: origin.cloned(),
            };
            let item = match part {
                ContentPart::Reasoning(reasoning) if !target.takes_reasoning(format, reasoning) => {
                    Some((
                        DroppedKind::Reasoning {
                            format: reasoning.origin.format,
                        },
                        Some(&reasoning.origin),
                    ))
                }
                ContentPart::Provider(provider)
                    if !target.takes(format, &provider.origin, Piece::Other) =>
                {
                    Some((
                        DroppedKind::ProviderPart {
                            format: provider.origin.format,
                        },
                        Some(&provider.origin),
                    ))
                }
                _ if !takes(place, part) => Some(match part {
                    ContentPart::Reasoning(reasoning) => (
                        DroppedKind::Reasoning {
                            format: reasoning.origin.format,
                        },
                        Some(&reasoning.origin),
                    ),
                    ContentPart::Provider(provider) => (
                        DroppedKind::ProviderPart {
                            format: provider.origin.format,
                        },
                        Some(&provider.origin),
                    ),
                    // Text and tool calls are never dropped; an image is
                    // what is left.
                    _ => (DroppedKind::Image, None),
                }),
                _ => None,
            };
            match item {
                Some((kind, origin)) => dropped.push(at(kind, origin)),
                None => {
                    if let Some(origin) = part_extras(part).and_then(|e| refused(e, format, target))
                    {
                        let kind = DroppedKind::Extras {
                            format: origin.format,
                        };
                        dropped.push(at(kind, Some(origin)));
                    }
                }
            }
        }
    }
    dropped
}

/// The origin of `extras` when they are not empty and `target` does not
/// take them in `format`.
fn refused<'e>(extras: &'e Extras, format: WireFormat, target: &Target) -> Option<&'e Origin> {
    extras
        .origin()
        .filter(|origin| !target.takes(format, origin, Piece::Other))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_loop_core::conversation::{AssistantMessage, ImagePart, ReasoningPart, ToolCall};
    use serde_json::{Map, json};

    fn extras(format: WireFormat) -> Extras {
        let mut fields = Map::new();
        fields.insert("k".into(), json!(1));
        Extras::new(format, fields)
    }

    #[test]
    fn reports_other_formats_and_what_the_target_refuses() {
        let mut call = ToolCall::new("call_1", "f", "{}");
        call.extras = extras(WireFormat::Gemini);
        let mut assistant = AssistantMessage::with_tool_calls(None, vec![call]);
        assistant.content.insert(
            0,
            ContentPart::Reasoning(
                ReasoningPart::new("plan", WireFormat::AnthropicMessages).signed("sig"),
            ),
        );
        assistant
            .content
            .push(ContentPart::Image(ImagePart::url("https://x/y.png")));
        let conversation = vec![Message::user("go"), Message::Assistant(assistant)];
        let dropped = report(
            &conversation,
            WireFormat::OpenAiResponses,
            &Target::new(),
            |place, part| !(place == Place::Assistant && matches!(part, ContentPart::Image(_))),
        );
        let kinds: Vec<_> = dropped
            .iter()
            .map(|d| (d.message, d.part, d.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                (
                    1,
                    Some(0),
                    DroppedKind::Reasoning {
                        format: WireFormat::AnthropicMessages
                    }
                ),
                (
                    1,
                    Some(1),
                    DroppedKind::Extras {
                        format: WireFormat::Gemini
                    }
                ),
                (1, Some(2), DroppedKind::Image),
            ]
        );
        assert_eq!(
            dropped[0].to_string(),
            "reasoning of Anthropic Messages in message 1, part 0"
        );
        // Exported to its own format, the reasoning is kept.
        let own = report(
            &conversation,
            WireFormat::AnthropicMessages,
            &Target::new(),
            |_, _| true,
        );
        assert_eq!(own.len(), 1, "{own:?}");
    }
}
