//! [`until_cancelled`]: a future run until a cancellation token fires,
//! the token first.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Runs `future` until it ends (`Some` of its output) or `token` fires
/// (`None`; `future` is dropped). The token comes first: it is checked
/// before every poll of `future`, so a future that ends *because* the
/// token fired (a tool that watches it) still counts as cancelled.
///
/// Unlike a `select!` biased to the token, the token's waiter is only
/// registered once `future` is pending: a future that is ready at once
/// (a scripted model, an instant tool) costs one check of the token, not
/// a registration and removal under its lock. And unlike an `async fn`,
/// it holds `future` once, in place.
pub(crate) fn until_cancelled<F: Future>(
    token: &CancellationToken,
    future: F,
) -> UntilCancelled<'_, F> {
    UntilCancelled {
        token,
        future,
        cancelled: token.cancelled(),
    }
}

pin_project_lite::pin_project! {
    /// The future [`until_cancelled`] returns.
    pub(crate) struct UntilCancelled<'a, F> {
        token: &'a CancellationToken,
        #[pin]
        future: F,
        #[pin]
        cancelled: WaitForCancellationFuture<'a>,
    }
}

impl<F: Future> Future for UntilCancelled<'_, F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if this.token.is_cancelled() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(output) = this.future.poll(context) {
            return Poll::Ready(Some(output));
        }
        // Registered after the poll: a token that fired meanwhile is seen
        // here, since `cancelled` checks the token before it waits.
        match this.cancelled.poll(context) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::Waker;

    use super::*;

    #[test]
    fn a_ready_future_ends_with_its_output() {
        let token = CancellationToken::new();
        let mut run = pin!(until_cancelled(&token, async { 7 }));
        let poll = run.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert_eq!(poll, Poll::Ready(Some(7)));
    }

    #[test]
    fn a_fired_token_wins_over_a_ready_future() {
        let token = CancellationToken::new();
        token.cancel();
        let mut run = pin!(until_cancelled(&token, async { 7 }));
        let poll = run.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        assert_eq!(poll, Poll::Ready(None));
    }

    #[tokio::test]
    async fn a_pending_future_is_dropped_when_the_token_fires() {
        let token = CancellationToken::new();
        let (dropped, was_dropped) = tokio::sync::oneshot::channel::<()>();
        let pending = async move {
            let _dropped = dropped;
            std::future::pending::<()>().await
        };
        let canceller = token.clone();
        tokio::spawn(async move { canceller.cancel() });
        assert_eq!(until_cancelled(&token, pending).await, None);
        // The sender was dropped with the future.
        assert!(was_dropped.await.is_err());
    }

    #[tokio::test]
    async fn a_future_that_ends_because_the_token_fired_counts_as_cancelled() {
        let token = CancellationToken::new();
        let watched = token.clone();
        let watching = async move { watched.cancelled().await };
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            canceller.cancel()
        });
        assert_eq!(until_cancelled(&token, watching).await, None);
    }
}
