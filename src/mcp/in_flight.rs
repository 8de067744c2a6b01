//! The calls of one binding waiting for their answers: where each call's
//! progress goes, and the binding's one timer, which wakes a call when its
//! timeout may have passed.
//!
//! A Tokio timer per call is registered with the runtime's timer wheel,
//! and when the wheel was empty the registering thread also wakes the
//! thread parked on the runtime's driver (a system call, and a thread
//! woken for nothing): measured, about 2 µs of a 40 µs call to a server
//! in the same process. A binding's calls all have its server's timeouts,
//! so one task per binding sleeps until the earliest call is due, or for
//! a call timeout when none is, and wakes the calls whose time came. A
//! call answered in time, nearly every call, touches no timer, only this
//! table; and since the task wakes at least once per call timeout (of a
//! second or more), a new call is never due before it wakes, so starting
//! a call wakes nothing either.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Poll, Waker};
use std::time::Duration;

use rmcp::model::ProgressToken;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::tool::CallContext;

/// The shortest the timer sleeps with no call due: a server with a call
/// timeout of milliseconds does not make an idle binding wake that often
/// (its calls then wake the timer when they start).
const MIN_PERIOD: Duration = Duration::from_secs(1);

/// One binding's calls in flight, and its timer.
pub(crate) struct InFlight {
    calls: Mutex<Calls>,
    /// Wakes the timer before its alarm: a call is due earlier.
    early: Arc<Notify>,
    /// How long the timer sleeps with no call due earlier.
    period: Duration,
    /// The timer task runs (started with the first call).
    started: AtomicBool,
}

struct Calls {
    /// By the progress token each call's request carried. Hashed with
    /// foldhash, not SipHash: every call adds and removes its token, which
    /// this client mints (a server's notification only looks one up), and
    /// foldhash's per-map random seed still spreads them.
    by_token: HashMap<ProgressToken, Call, foldhash::fast::RandomState>,
    /// When the timer wakes next.
    alarm: Instant,
}

/// A call in flight.
struct Call {
    /// For its progress events.
    context: CallContext,
    /// When the server last reported the call's progress, which the call
    /// reads when it is due (a progress notification does not wake it).
    last_progress: Option<Instant>,
    /// When the call looks at its timeouts next.
    due: Instant,
    /// The timer found `due` passed; the call has not looked yet.
    rung: bool,
    waker: Option<Waker>,
}

impl InFlight {
    /// A binding's table; `call_timeout` is its server's, the longest a
    /// call can be due after it starts or last looked.
    pub(crate) fn new(call_timeout: Duration) -> Arc<Self> {
        let period = call_timeout.max(MIN_PERIOD);
        Arc::new(Self {
            calls: Mutex::new(Calls {
                by_token: HashMap::default(),
                alarm: deadline(Instant::now(), period),
            }),
            early: Arc::new(Notify::new()),
            period,
            started: AtomicBool::new(false),
        })
    }

    fn calls(&self) -> MutexGuard<'_, Calls> {
        // Nothing panics while holding it; a poisoned table is still whole.
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts routing the progress of `token` to `context`, and timing the
    /// call: it is due at `due`. The returned route ends both when
    /// dropped; the call takes its place in the table when it first waits
    /// ([`Route::due`]), with the waker that wait brings.
    pub(crate) fn enter<'a>(
        self: &'a Arc<Self>,
        token: ProgressToken,
        context: &'a CallContext,
        due: Instant,
    ) -> Route<'a> {
        Route {
            in_flight: self,
            token,
            context,
            first_due: due,
            entered: AtomicBool::new(false),
        }
    }

    /// Notes a progress notification for `token` now: the call's context,
    /// for the event, unless no call waits on it (a late notification of
    /// a call that ended).
    pub(crate) fn progress(&self, token: &ProgressToken) -> Option<CallContext> {
        let mut calls = self.calls();
        let call = calls.by_token.get_mut(token)?;
        call.last_progress = Some(Instant::now());
        Some(call.context.clone())
    }

    /// Starts the timer task unless it runs: at a call's first wait (until
    /// then nothing needed timing), and again if the runtime it ran on
    /// was shut down while the binding lives on (a binding can outlive a
    /// runtime: a restart starts its server on the caller's). The task
    /// holds the table weakly, and ends with it.
    fn keep_timing(self: &Arc<Self>) {
        if !self.started.load(Ordering::Acquire) && !self.started.swap(true, Ordering::AcqRel) {
            tokio::spawn(keep_time(TimerTask(Arc::downgrade(self))));
        }
    }

    /// The timer's round: wakes every call due by now, and says when to
    /// wake next.
    fn ring(&self) -> Instant {
        let now = Instant::now();
        let mut alarm = deadline(now, self.period);
        let mut calls = self.calls();
        for call in calls.by_token.values_mut().filter(|call| !call.rung) {
            if call.due <= now {
                call.rung = true;
                // Waking only schedules the call; it looks once this lock
                // is released.
                if let Some(waker) = call.waker.take() {
                    waker.wake();
                }
            } else {
                alarm = alarm.min(call.due);
            }
        }
        calls.alarm = alarm;
        alarm
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // The timer wakes, finds the table gone and ends.
        self.early.notify_one();
    }
}

/// The timer task of a binding: until its table is dropped, wakes the
/// calls that are due.
async fn keep_time(task: TimerTask) {
    let Some(early) = task
        .0
        .upgrade()
        .map(|in_flight| Arc::clone(&in_flight.early))
    else {
        return;
    };
    loop {
        // Not held while sleeping: the table goes with its binding.
        let Some(alarm) = task.0.upgrade().map(|in_flight| in_flight.ring()) else {
            return;
        };
        tokio::select! {
            () = tokio::time::sleep_until(alarm) => {}
            () = early.notified() => {}
        }
    }
}

/// The timer task's hold on its table. Dropped with the task: when that is
/// because its runtime shut down while the binding lives on, the waiting
/// calls are woken, and the first to look starts the timer again on its
/// own runtime.
struct TimerTask(Weak<InFlight>);

impl Drop for TimerTask {
    fn drop(&mut self) {
        let Some(in_flight) = self.0.upgrade() else {
            return;
        };
        in_flight.started.store(false, Ordering::Release);
        for call in in_flight.calls().by_token.values_mut() {
            if let Some(waker) = call.waker.take() {
                waker.wake();
            }
        }
    }
}

/// `timeout` after `from`; a timeout too long for the clock (a caller's
/// `Duration::MAX`, meaning never) ends in 30 years, as Tokio's own
/// `sleep` does.
pub(crate) fn deadline(from: Instant, timeout: Duration) -> Instant {
    const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);
    from.checked_add(timeout)
        .unwrap_or_else(|| from + FAR_FUTURE)
}

/// A call's place in the table, removed when dropped, however the call
/// ends.
pub(crate) struct Route<'a> {
    in_flight: &'a Arc<InFlight>,
    token: ProgressToken,
    context: &'a CallContext,
    /// When the call is due, until it took its place.
    first_due: Instant,
    /// The call took its place (at its first wait).
    entered: AtomicBool,
}

impl Route<'_> {
    /// When the server last reported the call's progress; `None` before
    /// its first report.
    pub(crate) fn last_progress(&self) -> Option<Instant> {
        self.in_flight
            .calls()
            .by_token
            .get(&self.token)?
            .last_progress
    }

    /// Ready once the timer found the call due.
    pub(crate) fn due(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(|context| {
            self.in_flight.keep_timing();
            let mut calls = self.in_flight.calls();
            if !self.entered.swap(true, Ordering::Relaxed) {
                calls.by_token.insert(
                    self.token.clone(),
                    Call {
                        context: self.context.clone(),
                        last_progress: None,
                        due: self.first_due,
                        rung: false,
                        waker: Some(context.waker().clone()),
                    },
                );
                let early = self.first_due < calls.alarm;
                drop(calls);
                if early {
                    self.in_flight.early.notify_one();
                }
                return Poll::Pending;
            }
            let Some(call) = calls.by_token.get_mut(&self.token) else {
                return Poll::Pending;
            };
            if call.rung {
                return Poll::Ready(());
            }
            match &call.waker {
                Some(waker) if waker.will_wake(context.waker()) => {}
                _ => call.waker = Some(context.waker().clone()),
            }
            Poll::Pending
        })
    }

    /// The call is due again at `due`.
    pub(crate) fn set_due(&self, due: Instant) {
        let mut calls = self.in_flight.calls();
        let early = due < calls.alarm;
        if let Some(call) = calls.by_token.get_mut(&self.token) {
            call.due = due;
            call.rung = false;
        }
        drop(calls);
        if early {
            self.in_flight.early.notify_one();
        }
    }
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        if *self.entered.get_mut() {
            self.in_flight.calls().by_token.remove(&self.token);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::session::{LoopId, SessionId};
    use crate::tool::ToolInfo;
    use crate::tool::checked::CheckedInfo;

    fn context() -> CallContext {
        let info = Arc::new(ToolInfo::without_parameters("probe", ""));
        let validator = Arc::new(jsonschema::validator_for(&json!({})).unwrap());
        let checked = Arc::new(CheckedInfo::compiled(info, validator));
        CallContext::new(
            (SessionId::new(), LoopId::new()),
            None,
            checked,
            String::new(),
            None,
        )
    }

    #[tokio::test]
    async fn a_call_is_woken_when_due_and_again_after_it_moved_its_time() {
        let in_flight = InFlight::new(Duration::from_secs(60));
        let context = context();
        let token = ProgressToken(rmcp::model::NumberOrString::Number(7));
        let started = Instant::now();
        // Due before the timer would wake by itself: the call wakes it.
        let route = in_flight.enter(token.clone(), &context, started + Duration::from_millis(50));
        tokio::time::timeout(Duration::from_secs(5), route.due())
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(50));
        // Progress is noted for the call, and reaches its context.
        assert!(route.last_progress().is_none());
        assert!(in_flight.progress(&token).is_some());
        assert!(route.last_progress().is_some());
        let again = Instant::now();
        route.set_due(again + Duration::from_millis(50));
        tokio::time::timeout(Duration::from_secs(5), route.due())
            .await
            .unwrap();
        assert!(again.elapsed() >= Duration::from_millis(50));
        drop(route);
        // A call that ended is no longer routed.
        assert!(in_flight.progress(&token).is_none());
    }

    fn token(number: i64) -> ProgressToken {
        ProgressToken(rmcp::model::NumberOrString::Number(number))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A binding can outlive the runtime of its first call (a restart
    /// starts its server on the caller's): its calls are still timed.
    #[test]
    fn calls_are_timed_after_the_runtime_that_ran_the_timer_shut_down() {
        let in_flight = InFlight::new(Duration::from_secs(60));
        let context = context();
        let first = runtime();
        first.block_on(async {
            let route =
                in_flight.enter(token(1), &context, Instant::now() + Duration::from_secs(60));
            let waited = tokio::time::timeout(Duration::from_millis(10), route.due()).await;
            assert!(waited.is_err());
        });
        drop(first);
        runtime().block_on(async {
            let route = in_flight.enter(
                token(2),
                &context,
                Instant::now() + Duration::from_millis(50),
            );
            tokio::time::timeout(Duration::from_secs(5), route.due())
                .await
                .unwrap();
        });
        // A call waiting while that runtime shuts down is woken, and starts
        // the timer on its own.
        let first = runtime();
        first.block_on(async {
            let route =
                in_flight.enter(token(3), &context, Instant::now() + Duration::from_secs(60));
            let _ = tokio::time::timeout(Duration::from_millis(10), route.due()).await;
        });
        let shutdown = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(first);
        });
        runtime().block_on(async {
            let route = in_flight.enter(
                token(4),
                &context,
                Instant::now() + Duration::from_millis(300),
            );
            tokio::time::timeout(Duration::from_secs(5), route.due())
                .await
                .unwrap();
        });
        shutdown.join().unwrap();
    }

    #[tokio::test]
    async fn a_call_not_due_is_not_woken() {
        let in_flight = InFlight::new(Duration::from_secs(60));
        let context = context();
        let token = ProgressToken(rmcp::model::NumberOrString::Number(1));
        let route = in_flight.enter(token, &context, Instant::now() + Duration::from_secs(60));
        let waited = tokio::time::timeout(Duration::from_millis(200), route.due()).await;
        assert!(waited.is_err());
    }

    #[test]
    fn a_timeout_too_long_for_the_clock_ends_in_the_far_future() {
        let now = Instant::now();
        assert_eq!(
            deadline(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
        assert!(deadline(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365 * 29));
    }
}
