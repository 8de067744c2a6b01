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
//! Blank text is not reported: it carries nothing, and every export leaves
//! it out.

use std::fmt;

use crate::conversation::{ContentPart, Extras, Message, WireFormat};

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
}

/// What an export left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DroppedKind {
    /// Reasoning the target cannot read: of another format (Anthropic's
    /// signed `thinking`, OpenAI Responses' encrypted `reasoning`, Gemini's
    /// `thought` parts), or of the target's format in a form it refuses
    /// (an Anthropic `thinking` block without its signature).
    Reasoning {
        /// The format the reasoning came from.
        format: WireFormat,
    },
    /// A provider part (a block this crate does not model) of another
    /// format, or one the target takes nowhere in that place.
    ProviderPart {
        /// The format the part came from.
        format: WireFormat,
    },
    /// Provider fields ([`Extras`]) of another format, on a message or a
    /// part: Gemini's `thoughtSignature`, Anthropic's `cache_control`,
    /// Responses' item ids.
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

/// What exporting `conversation` to `target` leaves out.
///
/// Reasoning, provider parts and extras of another format are dropped by
/// every export. `takes(place, part)` holds the target's own rules for a
/// part of its format (or of none, like text and images): `false` where
/// its export leaves the part out. Extras of a part that is dropped are
/// not reported again.
pub(crate) fn report(
    conversation: &[Message],
    target: WireFormat,
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
        if let Some(format) = foreign(extras, target) {
            dropped.push(Dropped {
                message: index,
                part: None,
                kind: DroppedKind::Extras { format },
            });
        }
        let Some(place) = place else { continue };
        for (position, part) in parts.iter().enumerate() {
            let at = |kind| Dropped {
                message: index,
                part: Some(position),
                kind,
            };
            let kind = match part {
                ContentPart::Reasoning(reasoning) if reasoning.format != target => {
                    Some(DroppedKind::Reasoning {
                        format: reasoning.format,
                    })
                }
                ContentPart::Provider(provider) if provider.format != target => {
                    Some(DroppedKind::ProviderPart {
                        format: provider.format,
                    })
                }
                _ if !takes(place, part) => Some(match part {
                    ContentPart::Reasoning(reasoning) => DroppedKind::Reasoning {
                        format: reasoning.format,
                    },
                    ContentPart::Provider(provider) => DroppedKind::ProviderPart {
                        format: provider.format,
                    },
                    // Text and tool calls are never dropped; an image is
                    // what is left.
                    _ => DroppedKind::Image,
                }),
                _ => None,
            };
            match kind {
                Some(kind) => dropped.push(at(kind)),
                None => {
                    if let Some(format) = part_extras(part).and_then(|e| foreign(e, target)) {
                        dropped.push(at(DroppedKind::Extras { format }));
                    }
                }
            }
        }
    }
    dropped
}

/// The format of `extras` when they are not empty and not `target`'s.
fn foreign(extras: &Extras, target: WireFormat) -> Option<WireFormat> {
    extras.format().filter(|format| *format != target)
}

fn part_extras(part: &ContentPart) -> Option<&Extras> {
    match part {
        ContentPart::Text(part) => Some(&part.extras),
        ContentPart::Image(part) => Some(&part.extras),
        ContentPart::Reasoning(part) => Some(&part.extras),
        ContentPart::ToolCall(part) => Some(&part.extras),
        ContentPart::Provider(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{AssistantMessage, ImagePart, ReasoningPart, ToolCall};
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
        let dropped = report(&conversation, WireFormat::OpenAiResponses, |place, part| {
            !(place == Place::Assistant && matches!(part, ContentPart::Image(_)))
        });
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
        let own = report(&conversation, WireFormat::AnthropicMessages, |_, _| true);
        assert_eq!(own.len(), 1, "{own:?}");
    }
}
