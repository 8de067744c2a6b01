//! Running one batch of prepared calls in this process: at most
//! `parallel` at once, each on a task of its own (or, for a batch with one
//! call to run, on the turn's own task), until they all end or the turn is
//! cancelled. What a driver brings back to the turn afterwards is a
//! [`BatchResults`](crate::turn::BatchResults).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::bind::call::{self, Finished, Prepared, Ready};
use crate::conversation::ToolCall;
use crate::support::cancel::until_cancelled;
use crate::support::panic::{Contained, drop_payload};
use crate::turn::context::TurnContext;

/// One call of a batch as a future of its own, holding its own share of
/// everything it uses (see [`TurnContext::owned_call`]): `None` when the
/// turn's token fired first, `Some(None)` for a call that waits for a
/// decision.
pub(super) type OwnedCall =
    Pin<Box<dyn Future<Output = Option<Option<Finished>>> + Send + 'static>>;

impl TurnContext<'_> {
    /// The call `call`, prepared as `prepared`, as a future that owns its
    /// share of the tool, the call site, the turn's token and events: what
    /// a driver that journals each call hands to its engine, which may
    /// hold it beyond the turn's borrows. Like a call of
    /// [`run_batch`](Self::run_batch): its events, its panics contained
    /// (an aborted call's result); a call not to run is answered at once.
    pub(super) fn owned_call(&self, call: &ToolCall, prepared: Prepared<'static>) -> OwnedCall {
        let owned = self.table().owned_site();
        let events = self.events.clone();
        let ready = match prepared {
            Prepared::Ready(ready) => ready,
            Prepared::Answered(error) => {
                let done = call::unrun(owned.site(), call, error);
                self.finished(&done.stats);
                return Box::pin(std::future::ready(Some(Some(done))));
            }
            // Waits for a decision: no result.
            Prepared::Pending(_) => return Box::pin(std::future::ready(Some(None))),
        };
        let token = self.cancellation.clone();
        let link = self.turn_link();
        let share = std::sync::Arc::clone(&self.share);
        let (tool_call_id, tool_name) = (call.id.clone(), call.name.clone());
        let aborted_call = call.clone();
        Box::pin(async move {
            let started = |id: &str, name: &str| events.call_started(id, name);
            let run = Contained::new(ready.call(
                owned.site(),
                tool_call_id,
                tool_name,
                Some(link),
                started,
            ));
            let done = match token.run_until_cancelled(run).await {
                None => return None,
                Some(Ok(done)) => done,
                // Died outside the contained tool and middleware code.
                Some(Err(panic)) => {
                    drop_payload(Some(panic));
                    call::aborted(owned.site(), &aborted_call)
                }
            };
            if !share.is_parked(&done.stats.tool_call_id) {
                events.call_finished(&done.stats);
            }
            Some(Some(done))
        })
    }
    /// Runs the ready calls of one batch and answers the others; `None`
    /// when cancelled while calls ran (every call is then dropped, so no
    /// tool of this batch runs after this returns).
    ///
    /// A batch with one call to run runs it on the turn's own task: there
    /// is nothing to run beside it, and handing it to another task (and on
    /// a multi-thread runtime, to another thread) would cost more than most
    /// tools do. More calls each get a task of their own, at most
    /// `parallel` at once.
    pub(super) async fn run_batch(
        &self,
        batch: &[&ToolCall],
        prepared: Vec<Prepared<'_>>,
        cut_off: bool,
    ) -> Option<Vec<Option<Finished>>> {
        let site = self.table().site();
        let mut ready = 0;
        let mut slots: Vec<Slot<'_>> = prepared
            .into_iter()
            .zip(batch)
            .map(|(prepared, call)| match prepared {
                Prepared::Ready(call) => {
                    ready += 1;
                    Slot::Ready(call)
                }
                Prepared::Answered(error) => {
                    let done = call::unrun(site, call, error);
                    self.finished(&done.stats);
                    Slot::Done(done)
                }
                // It waits for a resume: it gets no result here.
                Prepared::Pending(_) => Slot::Waiting,
            })
            .collect();
        // A cut-off batch runs nothing and is answered whatever happens
        // next; any other batch is not committed once the turn is
        // cancelled.
        let finished = (cut_off && ready == 0)
            || if ready == 1 {
                self.run_inline(batch, &mut slots).await
            } else {
                self.run_tasks(batch, &mut slots).await
            };
        if !finished {
            return None;
        }
        let results = slots
            .into_iter()
            .zip(batch)
            .map(|(slot, call)| match slot {
                Slot::Waiting => None,
                Slot::Done(done) => Some(done),
                // Its call died outside the contained tool and middleware
                // code; it still gets its one result.
                Slot::Ready(_) | Slot::Taken => {
                    let aborted = call::aborted(site, call);
                    // It may have sent `ToolCallStarted`: every started
                    // call gets its finished event.
                    self.finished(&aborted.stats);
                    Some(aborted)
                }
            })
            .collect();
        Some(results)
    }

    /// Puts a call's answer in its slot, with its finished event (unless
    /// its agent paused: such a call is pending, not finished).
    fn settle(&self, slots: &mut [Slot<'_>], index: usize, done: Finished) {
        if !self.share().is_parked(&done.stats.tool_call_id) {
            self.finished(&done.stats);
        }
        slots[index] = Slot::Done(done);
    }

    /// Runs the batch's one ready call here, until it ends or the turn is
    /// cancelled (`false`: the call's future is dropped). A panic outside
    /// the call's contained tool and middleware code leaves its slot
    /// empty, as a task's would.
    async fn run_inline(&self, batch: &[&ToolCall], slots: &mut [Slot<'_>]) -> bool {
        let Some((index, ready)) = slots
            .iter_mut()
            .enumerate()
            .find_map(|(index, slot)| slot.take_ready().map(|ready| (index, ready)))
        else {
            return true;
        };
        let call = batch[index];
        let started = |id: &str, name: &str| self.events.call_started(id, name);
        // Contained as a task of its own is (a panic outside the tool's and
        // the middlewares' own boundaries, also while the call is dropped
        // mid-flight, leaves its slot empty).
        let run = Contained::new(ready.call(
            self.table().site(),
            call.id.clone(),
            call.name.clone(),
            Some(self.turn_link()),
            started,
        ));
        match until_cancelled(self.cancellation, run).await {
            None => false,
            // The token fired as the call ended (a tool that stops the
            // turn): the batch is not committed, as with calls on tasks.
            Some(_) if self.cancellation.is_cancelled() => false,
            Some(Ok(done)) => {
                self.settle(slots, index, done);
                true
            }
            Some(Err(panic)) => {
                drop_payload(Some(panic));
                true
            }
        }
    }

    /// Runs the batch's ready calls on tasks of their own, at most
    /// `parallel` at once, until they all end or the turn is cancelled
    /// (`false`: every task is aborted and awaited).
    async fn run_tasks(&self, batch: &[&ToolCall], slots: &mut [Slot<'_>]) -> bool {
        let limits = self.table().site().limits();
        let permits =
            (limits.parallel.get() as usize).clamp(1, batch.len().clamp(1, Semaphore::MAX_PERMITS));
        let semaphore = Arc::new(Semaphore::new(permits));
        let mut tasks = JoinSet::new();
        // Gates the queued calls. Declared after `tasks`, so when this future
        // is dropped mid-batch the guard cancels it *before* the JoinSet
        // aborts its tasks: a queued call woken by the slot a dying call
        // releases sees the gate closed and never starts.
        // Shared behind an `Arc`: cloning a token takes its lock, an `Arc`
        // does not.
        let gate = Arc::new(self.cancellation.child_token());
        let _close_gate_on_drop = CancellationToken::clone(&gate).drop_guard();
        // Every call's context shares the turn's token and events (one lock
        // here, an `Arc` per call).
        let turn_link = self.turn_link();
        let ready = slots
            .iter_mut()
            .enumerate()
            .filter_map(|(index, slot)| slot.take_ready().map(|ready| (index, ready)));
        for (index, ready) in ready {
            let call = batch[index];
            // Its own share of the tool: the task may outlive the borrow
            // (it is aborted, not awaited, when cancelled).
            let ready = ready.into_owned();
            let owned = self.table().owned_site();
            let semaphore = Arc::clone(&semaphore);
            let gate = Arc::clone(&gate);
            let link = Arc::clone(&turn_link);
            let events = self.events.clone();
            let (tool_call_id, tool_name) = (call.id.clone(), call.name.clone());
            tasks.spawn(
                async move {
                    // A free slot is taken at once; waiting for one ends at
                    // cancellation. Either way a call never starts after the
                    // turn is cancelled.
                    let _permit = match Arc::clone(&semaphore).try_acquire_owned() {
                        Ok(permit) => permit,
                        Err(_) => tokio::select! {
                            biased;
                            () = gate.cancelled() => return None,
                            permit = semaphore.acquire_owned() => permit.ok()?,
                        },
                    };
                    if gate.is_cancelled() {
                        return None;
                    }
                    let started = |id: &str, name: &str| events.call_started(id, name);
                    let done = ready
                        .call(owned.site(), tool_call_id, tool_name, Some(link), started)
                        .await;
                    Some((index, done))
                }
                // Under the iteration's span: the call's own span is its child.
                .in_current_span(),
            );
        }
        let finished = tokio::select! {
            biased;
            () = self.cancellation.cancelled() => false,
            () = async {
                while let Some(joined) = tasks.join_next().await {
                    if let Ok(Some((index, done))) = joined {
                        self.settle(slots, index, done);
                    }
                }
            } => true,
        };
        if !finished {
            tasks.shutdown().await;
        }
        finished
    }
}

/// Where one call of a batch stands while the batch runs.
pub(super) enum Slot<'a> {
    /// Waiting for a resume: no result here.
    Waiting,
    /// To run.
    Ready(Ready<'a>),
    /// Handed to its run; it puts its answer back, unless it died outside
    /// the contained tool and middleware code.
    Taken,
    /// Answered.
    Done(Finished),
}

impl<'a> Slot<'a> {
    /// The call to run, if this slot holds one; the slot is then
    /// [`Slot::Taken`].
    fn take_ready(&mut self) -> Option<Ready<'a>> {
        match std::mem::replace(self, Slot::Taken) {
            Slot::Ready(ready) => Some(ready),
            other => {
                *self = other;
                None
            }
        }
    }
}
