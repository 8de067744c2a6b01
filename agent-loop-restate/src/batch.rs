//! The calls of a batch, run together and journaled one by one.
//!
//! The Rust SDK runs one journaled action at a time: a `ctx.run` must be
//! awaited before the next context call (restate-sdk's
//! `ContextSideEffects::run`, "Always immediately await journaled
//! actions"; two awaited at once trip its `must_lock!`). So the calls do
//! not run inside the `ctx.run` closures: the first closure that runs
//! (rather than being read back from the journal) starts its call and
//! every later one of the batch on tasks, at most `parallel` at once, in
//! call order, and each closure then waits for its own call's result. The
//! results are journaled in call order. Journal entries are written in
//! order, so when call `i` is not in the journal, no later call is: the
//! calls started are exactly those the journal lacks, and one that ended
//! before a crash but was not yet journaled runs again, like a call cut by
//! the crash (its context's idempotency key is the same).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_loop_core::turn::CallResult;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::{JoinHandle, JoinSet};

/// A call of the batch, not yet started ([`TurnSteps::call`](agent_loop_core::turn::TurnSteps::call)).
pub(crate) type Call = Pin<Box<dyn Future<Output = CallResult> + Send + 'static>>;

/// The batch's calls: not started until a closure asks for one.
pub(crate) struct Launch {
    state: Mutex<State>,
}

enum State {
    Waiting {
        calls: Vec<Call>,
        parallel: usize,
    },
    Started {
        /// Starts the calls and owns their tasks: aborting it aborts them.
        launcher: JoinHandle<()>,
        results: Vec<Option<oneshot::Receiver<CallResult>>>,
    },
}

/// A call's task ended without a result: it was aborted (the invocation
/// attempt it belongs to is gone), or asked for twice.
#[derive(Debug, thiserror::Error)]
#[error("tool call {index} of the batch has no result in this attempt")]
pub(crate) struct NoResult {
    index: usize,
}

impl Launch {
    /// The batch of `calls`, at most `parallel` (at least 1) at once.
    pub(crate) fn new(calls: Vec<Call>, parallel: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::Waiting {
                calls,
                parallel: parallel.max(1),
            }),
        })
    }

    /// Call `index`'s result: on the first ask, the calls from `index` on
    /// start (the ones before it are in the journal and are dropped
    /// unpolled, which runs nothing).
    pub(crate) async fn result(&self, index: usize) -> Result<CallResult, NoResult> {
        let receiver = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if let State::Waiting { calls, parallel } = &mut *state {
                *state = start(std::mem::take(calls), index, *parallel);
            }
            match &mut *state {
                State::Started { results, .. } => results.get_mut(index).and_then(Option::take),
                State::Waiting { .. } => None,
            }
        };
        match receiver {
            Some(receiver) => receiver.await.map_err(|_| NoResult { index }),
            None => Err(NoResult { index }),
        }
    }
}

impl Drop for Launch {
    /// The invocation attempt is over (its handler ended or was dropped):
    /// its calls that still run are aborted, so a retried attempt never
    /// runs beside them.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let State::Started { launcher, .. } = state {
            launcher.abort();
        }
    }
}

/// Starts `calls[from..]`, each on a task of its own when one of
/// `parallel` slots is free, in call order.
fn start(calls: Vec<Call>, from: usize, parallel: usize) -> State {
    let mut results = Vec::with_capacity(calls.len());
    let mut queued = Vec::with_capacity(calls.len().saturating_sub(from));
    for (index, call) in calls.into_iter().enumerate() {
        if index < from {
            results.push(None);
            continue;
        }
        let (sender, receiver) = oneshot::channel();
        results.push(Some(receiver));
        queued.push((call, sender));
    }
    let launcher = tokio::spawn(async move {
        let slots = Arc::new(Semaphore::new(parallel.min(Semaphore::MAX_PERMITS)));
        // Dropped with the launcher: aborting it aborts the calls.
        let mut running = JoinSet::new();
        // One waiter at a time takes the slots, so calls start in order.
        for (call, sender) in queued {
            let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                break;
            };
            running.spawn(async move {
                let result = call.await;
                drop(slot);
                // The receiver is gone only when its attempt is.
                let _ = sender.send(result);
            });
        }
        while let Some(ended) = running.join_next().await {
            // A call's own panic is its error result already: this is the
            // crate's, and the call's closure reports it as no result.
            if let Err(error) = ended
                && error.is_panic()
            {
                tracing::error!("a tool call's task panicked: {error}");
            }
        }
    });
    State::Started { launcher, results }
}

/// The batch's wall time from its calls' journaled durations: the calls
/// start in order, each in the first of `parallel` slots to be free (as
/// [`Launch`] runs them). The same on a replay, which measures nothing.
pub(crate) fn batch_time(durations: &[Duration], parallel: usize) -> Duration {
    let mut free = vec![Duration::ZERO; parallel.clamp(1, durations.len().max(1))];
    for duration in durations {
        if let Some(slot) = free.iter_mut().min() {
            *slot += *duration;
        }
    }
    free.into_iter().max().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    #[test]
    fn a_batch_takes_its_longest_lane() {
        let calls = [ms(30), ms(10), ms(20), ms(5)];
        // All at once: the longest call.
        assert_eq!(batch_time(&calls, 8), ms(30));
        // One at a time: their sum.
        assert_eq!(batch_time(&calls, 1), ms(65));
        // Two slots: 30 | 10, 20 (at 10), 5 (at 30, the first free): 30,35.
        assert_eq!(batch_time(&calls, 2), ms(35));
        assert_eq!(batch_time(&[], 8), Duration::ZERO);
    }

    /// A call that records whether it was polled and whether it was dropped
    /// before it ended.
    fn watched(polled: &Arc<AtomicUsize>, dropped: &Arc<AtomicUsize>, wait: Duration) -> Call {
        struct OnDrop(Arc<AtomicUsize>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let (polled, guard) = (Arc::clone(polled), OnDrop(Arc::clone(dropped)));
        Box::pin(async move {
            polled.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(wait).await;
            std::mem::forget(guard);
            serde_json::from_str::<CallResult>("{}").expect("a call that waits")
        })
    }

    #[tokio::test]
    async fn the_calls_the_journal_holds_never_run() {
        let polled: Vec<_> = (0..4).map(|_| Arc::new(AtomicUsize::new(0))).collect();
        let dropped = Arc::new(AtomicUsize::new(0));
        let calls = polled
            .iter()
            .map(|polled| watched(polled, &dropped, ms(1)))
            .collect();
        let launch = Launch::new(calls, 8);
        // Calls 0 and 1 came back from the journal: the first to run is 2.
        assert!(launch.result(2).await.is_ok());
        assert!(launch.result(3).await.is_ok());
        let runs: Vec<_> = polled
            .iter()
            .map(|polled| polled.load(Ordering::SeqCst))
            .collect();
        assert_eq!(runs, [0, 0, 1, 1]);
        // Asked for again (a retried closure in one attempt): no second run.
        assert!(launch.result(2).await.is_err());
        assert_eq!(polled[2].load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_dropped_launch_stops_its_calls() {
        let polled: Vec<_> = (0..2).map(|_| Arc::new(AtomicUsize::new(0))).collect();
        let dropped = Arc::new(AtomicUsize::new(0));
        let calls = polled
            .iter()
            .map(|polled| watched(polled, &dropped, Duration::from_secs(3600)))
            .collect();
        let launch = Launch::new(calls, 1);
        // The first call starts; the attempt ends before it does.
        let _ = tokio::time::timeout(ms(50), launch.result(0)).await;
        assert_eq!(polled[0].load(Ordering::SeqCst), 1);
        drop(launch);
        for _ in 0..100 {
            if dropped.load(Ordering::SeqCst) == 2 {
                break;
            }
            tokio::time::sleep(ms(10)).await;
        }
        // Both calls are gone: the running one aborted, the queued one never
        // started.
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
        assert_eq!(polled[1].load(Ordering::SeqCst), 0);
    }
}
