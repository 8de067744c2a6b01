//! The bytes of a streamed body, made ready for the SSE parser: decoded as
//! UTF-8 the way the SSE specification says (lossily), and cut by an idle
//! timer that any bytes reset, keep-alive comments included.

use std::time::Duration;

use futures::{Stream, StreamExt};

/// Why the body stopped before its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The connection failed.
    #[error("the connection failed")]
    Transport(#[source] reqwest::Error),
    /// No byte arrived within the idle timeout.
    #[error("no data within the timeout")]
    Idle,
}

/// How long a stream whose answer is whole (the model said why it
/// stopped) may go without an event before it is taken as ended: a server
/// that never sends its terminal event (`[DONE]`, `message_stop`) and
/// holds the connection open, keep-alive comments and all, no longer costs
/// the whole timeout, nor the answer.
pub(crate) const WHOLE_GRACE: Duration = Duration::from_secs(2);

/// `bytes`, decoded lossily as UTF-8 (the SSE specification's decoding: an
/// invalid sequence becomes U+FFFD, and the events after it are read; a
/// character split between two chunks is kept whole), ended by
/// [`BodyError::Idle`] when no byte at all arrives within `idle`.
pub(crate) fn event_body<B: AsRef<[u8]>>(
    bytes: impl Stream<Item = Result<B, reqwest::Error>> + Send + Unpin + 'static,
    idle: Duration,
) -> impl Stream<Item = Result<String, BodyError>> + Send + Unpin {
    let state = (bytes, LossyUtf8::default(), false);
    Box::pin(futures::stream::unfold(
        state,
        move |(mut bytes, mut decoder, ended)| async move {
            if ended {
                return None;
            }
            match tokio::time::timeout(idle, bytes.next()).await {
                Ok(Some(Ok(chunk))) => {
                    let text = decoder.decode(chunk.as_ref());
                    Some((Ok(text), (bytes, decoder, false)))
                }
                Ok(Some(Err(error))) => {
                    Some((Err(BodyError::Transport(error)), (bytes, decoder, true)))
                }
                Ok(None) => {
                    let rest = decoder.finish();
                    Some((Ok(rest), (bytes, decoder, true)))
                }
                Err(_) => Some((Err(BodyError::Idle), (bytes, decoder, true))),
            }
        },
    ))
}

/// A UTF-8 decoder over chunks: the bytes of a character split between
/// two chunks wait for the next one; an invalid sequence is U+FFFD.
#[derive(Debug, Default)]
pub(crate) struct LossyUtf8 {
    /// The start of a character the last chunk ended inside (at most 3
    /// bytes).
    pending: Vec<u8>,
}

impl LossyUtf8 {
    /// The text of `chunk`, after what the previous chunk left pending.
    pub(crate) fn decode(&mut self, chunk: &[u8]) -> String {
        let mut input = std::mem::take(&mut self.pending);
        input.extend_from_slice(chunk);
        let mut text = String::with_capacity(input.len());
        let mut rest = input.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    text.push_str(valid);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    // `valid_up_to` bytes are valid UTF-8 by definition.
                    text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(invalid) => {
                            text.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[invalid..];
                        }
                        // The chunk ends inside a character: wait for the
                        // rest of it.
                        None => {
                            self.pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        text
    }

    /// What the body's end leaves: U+FFFD for a character cut off.
    pub(crate) fn finish(&mut self) -> String {
        if std::mem::take(&mut self.pending).is_empty() {
            String::new()
        } else {
            char::REPLACEMENT_CHARACTER.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in(chunks: &[&[u8]]) -> String {
        let mut decoder = LossyUtf8::default();
        let mut text: String = chunks.iter().map(|chunk| decoder.decode(chunk)).collect();
        text.push_str(&decoder.finish());
        text
    }

    #[test]
    fn a_character_split_between_chunks_is_kept_and_invalid_bytes_are_replaced() {
        let oslo = "data: Ø€😀\n\n".as_bytes();
        // Every split point, including inside each multi-byte character.
        for at in 0..=oslo.len() {
            let (head, tail) = oslo.split_at(at);
            assert_eq!(decode_in(&[head, tail]), "data: Ø€😀\n\n", "split at {at}");
        }
        assert_eq!(decode_in(&[b"a\xffb", b"\xc3"]), "a\u{fffd}b\u{fffd}");
        assert_eq!(decode_in(&[b"\xe2\x82", b"x"]), "\u{fffd}x");
        assert_eq!(
            decode_in(&[b"\xed\xa0\x80ok"]),
            "\u{fffd}\u{fffd}\u{fffd}ok"
        );
    }
}
