//! Whitespace-only text parts, joined to their neighbours when parsing.

use agent_loop_core::conversation::ContentPart;

/// `true` for text that is empty or white space only: no provider accepts
/// it as a text block.
pub(crate) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// The parts of one parsed message with each whitespace-only text part
/// joined to a neighbour instead of dropped, so the text reads as sent
/// (Anthropic splits a cited answer into blocks such as `"A"`, `"\n\n"`,
/// `"B"`): it is appended to the nearest text part before it in the
/// message, else prepended to the nearest one after it, else (the message
/// has no other text) dropped, as is an empty one. The blank part's own
/// extras are dropped. No blank text part remains, so export, which never
/// sends one, sends the same text, and parse → export → parse stays the
/// identity.
pub(crate) fn join_blank_text(parts: Vec<ContentPart>) -> Vec<ContentPart> {
    let mut joined: Vec<ContentPart> = Vec::with_capacity(parts.len());
    // Blank text seen before any text part: for the next text part.
    let mut leading = String::new();
    for part in parts {
        match part {
            ContentPart::Text(blank) if is_blank(&blank.text) => {
                let previous = joined.iter_mut().rev().find_map(|part| match part {
                    ContentPart::Text(text) => Some(text),
                    _ => None,
                });
                match previous {
                    Some(previous) => previous.text.push_str(&blank.text),
                    None => leading.push_str(&blank.text),
                }
            }
            ContentPart::Text(mut text) => {
                if !leading.is_empty() {
                    text.text.insert_str(0, &std::mem::take(&mut leading));
                }
                joined.push(ContentPart::Text(text));
            }
            part => joined.push(part),
        }
    }
    joined
}
