//! [`Outgoing`]: the messages a model's request sends, borrowed.
//!
//! Every request of a turn sends the whole conversation again, and a long
//! session's conversation runs to megabytes. A model puts a system message
//! of its own first (the mode's instructions), so the messages it sends are
//! not the caller's slice; copying that slice behind the new message would
//! copy every text of the conversation on every request. An [`Outgoing`]
//! is the two pieces side by side instead, both borrowed, and the exports
//! read it in order.

use agent_loop_core::conversation::Message;

/// The messages of a request, in order: the model's own system message
/// ([`lead`](Self::lead)), then the caller's conversation from some index
/// on ([`rest`](Self::rest)). Nothing is copied: an export reads both where
/// they are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outgoing<'a> {
    /// The model's own message, first: a system message without extras
    /// (the mode's instructions, merged with the conversation's leading
    /// system messages by the OpenAI model). It has no parts, so nothing
    /// of it is ever dropped, and no call ids.
    pub(crate) lead: Option<&'a Message>,
    /// The caller's conversation from the first message the lead does not
    /// stand for.
    pub(crate) rest: &'a [Message],
}

impl<'a> Outgoing<'a> {
    /// A whole conversation, as the public exports take it: no message of
    /// a model's own.
    pub(crate) fn whole(conversation: &'a [Message]) -> Self {
        Self {
            lead: None,
            rest: conversation,
        }
    }

    /// Every message, the lead first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'a Message> + use<'a> {
        self.lead.into_iter().chain(self.rest)
    }

    /// How many messages [`iter`](Self::iter) gives.
    pub(crate) fn len(&self) -> usize {
        usize::from(self.lead.is_some()) + self.rest.len()
    }
}
