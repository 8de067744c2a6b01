//! Being rewritten on the lossless conversation.
