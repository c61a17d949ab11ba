//! `run_once` on an [`AsyncQueue`]: claim on the queue's thread, await the send on the
//! runtime, record on the queue's thread.

use std::future::Future;

use super::AsyncQueue;
use crate::error::{Result, RunError};
use crate::input;
use crate::job::Report;
use crate::queue::claim::Claimed;
use crate::queue::complete::Completion;
use crate::queue::run_once::{self as queue, Ran};

impl AsyncQueue {
    /// [`Queue::run_once`](crate::Queue::run_once) with an async transport: claims the next
    /// due job for `worker` (one transaction, committed before anything is sent), awaits
    /// `transport` on the caller's task, and records what it answered with `jitter` (a second
    /// transaction). Same rules, same two transactions, same results and errors as the sync
    /// `run_once`: `clock` is read before the claim and after the send, the outcome is
    /// recorded at the second reading, and a clock that went back or an error the transport
    /// did not classify leaves the attempt spent and the job leased until its lease expires.
    ///
    /// The transport is given the [`Claimed`] job by value — a future that outlives a borrow
    /// of its argument cannot be named in a closure's type — so it can move the payload into
    /// a request. Something like:
    ///
    /// ```
    /// # async fn example(queue: retryq::AsyncQueue) -> Result<(), Box<dyn std::error::Error>> {
    /// use retryq::{Claimed, Outcome};
    ///
    /// let send = |job: Claimed| async move {
    ///     // POST job.payload somewhere, and classify the answer.
    ///     Ok::<_, std::io::Error>(if job.payload.is_empty() { Outcome::Permanent } else { Outcome::Ok })
    /// };
    /// let ran = queue.run_once("worker-1", || 1_000, send, 0.5).await?;
    /// # let _ = ran;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// If this future is dropped while the transport runs, nothing is recorded: the attempt
    /// stays spent and the job leased until its lease expires, as if the process had died.
    pub async fn run_once<R, E, F, Fut>(
        &self,
        worker: &str,
        mut clock: impl FnMut() -> u64,
        transport: F,
        jitter: f64,
    ) -> Result<Ran, RunError<E>>
    where
        R: Into<Report>,
        F: FnOnce(Claimed) -> Fut,
        Fut: Future<Output = std::result::Result<R, E>>,
    {
        queue::check_args(worker, jitter)?;
        let before = input::int("clock", clock())?;
        let Some(claimed) = self.claim(worker, before).await? else {
            return Ok(Ran::Idle);
        };
        let lease = claimed.lease.clone();
        let sent = transport(claimed).await;
        let after = input::int("clock", clock())?;
        let report = queue::reported(&lease, before, after, sent)?;
        let completed = self.complete(&Completion { lease: &lease, report, now: after, jitter }).await?;
        Ok(queue::ran(lease, completed))
    }
}
