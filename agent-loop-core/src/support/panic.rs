//! Caught panics: a panicking tool, middleware, factory or model becomes
//! an error that names the panic's message ([`panic_message`]), and a
//! future is run and dropped under panic boundaries (`Contained`).

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The message of a caught panic payload (`catch_unwind`'s `Err`, a
/// `JoinError`'s panic): the `&str` or `String` it holds, else `"non-string
/// panic payload"`.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// A caught panic's payload.
pub(crate) type Panic = Box<dyn Any + Send>;

pin_project_lite::pin_project! {
    /// A future polled under a panic boundary and dropped under another:
    /// once it ends (a panic while dropping it wins over its output, as
    /// one while polling would), and when it is dropped mid-flight (a
    /// cancelled call: nobody reads its outcome, and a panicking `Drop`
    /// must not take the dropper down). `catch_unwind` alone would drop
    /// the future after its boundary.
    pub(crate) struct Contained<F> {
        // `None` once it ended and was dropped.
        #[pin]
        future: Option<F>,
    }

    impl<F> PinnedDrop for Contained<F> {
        fn drop(this: Pin<&mut Self>) {
            drop_contained(this.project().future);
        }
    }
}

impl<F> Contained<F> {
    /// `future`, contained.
    pub(crate) fn new(future: F) -> Self {
        Self {
            future: Some(future),
        }
    }
}

impl<F: Future> Future for Contained<F> {
    type Output = Result<F::Output, Panic>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.project().future;
        let Some(future) = slot.as_mut().as_pin_mut() else {
            // Polled after it ended: the caller's bug, answered as a panic
            // would be, without one.
            return Poll::Ready(Err(Box::new(
                "a contained future was polled after it ended",
            )));
        };
        let outcome = match catch_unwind(AssertUnwindSafe(|| future.poll(context))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(output)) => Ok(output),
            Err(panic) => Err(panic),
        };
        match catch_unwind(AssertUnwindSafe(|| slot.set(None))) {
            Ok(()) => Poll::Ready(outcome),
            Err(panic) => {
                drop_payload(outcome.err());
                Poll::Ready(Err(panic))
            }
        }
    }
}

/// Drops what `slot` holds under a boundary, and a panic's payload under
/// another.
fn drop_contained<F>(slot: Pin<&mut Option<F>>) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| {
        let mut slot = slot;
        slot.set(None);
    })) {
        drop_payload(Some(panic));
    }
}

/// Drops a caught panic's payload, whose own `Drop` may panic, under a
/// boundary.
pub(crate) fn drop_payload(payload: Option<Panic>) {
    if let Some(payload) = payload {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    }
}
