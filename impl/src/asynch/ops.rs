//! The queue's operations on an [`AsyncQueue`]: each copies its arguments, runs the
//! [`Queue`](crate::Queue) method of the same name on the queue's thread, and awaits its
//! answer. No rule is restated here.

use super::AsyncQueue;
use crate::error::Result;
use crate::job::{Job, Report};
use crate::queue::claim::Claimed;
use crate::queue::complete::{Completed, Completion};
use crate::queue::enqueue::{Enqueued, NewJob};
use crate::queue::inspect::{HistoryEntry, Stats};
use crate::queue::lease::Lease;
use crate::queue::redrive::Redrive;
use crate::queue::store::Settings;

/// A [`NewJob`]'s fields, owned, to cross to the queue's thread.
struct OwnedJob {
    id: String,
    payload: String,
    max_attempts: u64,
    deadline: u64,
    now: u64,
    not_before: Option<u64>,
    base_ms: Option<u64>,
    cap_ms: Option<u64>,
    queue: Option<String>,
    priority: Option<u64>,
    kind: String,
}

impl OwnedJob {
    fn of(job: &NewJob<'_>) -> OwnedJob {
        let NewJob {
            id,
            payload,
            max_attempts,
            deadline,
            now,
            not_before,
            base_ms,
            cap_ms,
            queue,
            priority,
            kind,
        } = *job;
        OwnedJob {
            id: id.to_owned(),
            payload: payload.to_owned(),
            max_attempts,
            deadline,
            now,
            not_before,
            base_ms,
            cap_ms,
            queue: queue.map(str::to_owned),
            priority,
            kind: kind.to_owned(),
        }
    }

    fn job(&self) -> NewJob<'_> {
        let OwnedJob {
            id,
            payload,
            max_attempts,
            deadline,
            now,
            not_before,
            base_ms,
            cap_ms,
            queue,
            priority,
            kind,
        } = self;
        NewJob {
            id,
            payload,
            max_attempts: *max_attempts,
            deadline: *deadline,
            now: *now,
            not_before: *not_before,
            base_ms: *base_ms,
            cap_ms: *cap_ms,
            queue: queue.as_deref(),
            priority: *priority,
            kind,
        }
    }
}

/// A [`Completion`]'s fields, owned, to cross to the queue's thread.
struct OwnedCompletion {
    lease: Lease,
    report: Report,
    now: u64,
    jitter: f64,
}

impl OwnedCompletion {
    fn of(c: &Completion<'_>) -> OwnedCompletion {
        OwnedCompletion { lease: c.lease.clone(), report: c.report.clone(), now: c.now, jitter: c.jitter }
    }

    fn completion(&self) -> Completion<'_> {
        Completion { lease: &self.lease, report: self.report.clone(), now: self.now, jitter: self.jitter }
    }
}

impl AsyncQueue {
    /// [`Queue::enqueue`](crate::Queue::enqueue).
    pub async fn enqueue(&self, job: &NewJob<'_>) -> Result<Enqueued> {
        let job = OwnedJob::of(job);
        self.run(move |q| q.enqueue(&job.job())).await
    }

    /// [`Queue::enqueue_many`](crate::Queue::enqueue_many): one transaction, one result per
    /// job.
    pub async fn enqueue_many(&self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
        let jobs: Vec<OwnedJob> = jobs.iter().map(OwnedJob::of).collect();
        self.run(move |q| q.enqueue_many(&jobs.iter().map(OwnedJob::job).collect::<Vec<_>>())).await
    }

    /// [`Queue::claim`](crate::Queue::claim): committed before it returns, so the attempt is
    /// spent even if this future is dropped.
    pub async fn claim(&self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        let worker = worker.to_owned();
        self.run(move |q| q.claim(&worker, now)).await
    }

    /// [`Queue::claim_batch`](crate::Queue::claim_batch): up to `k` claims, one transaction.
    pub async fn claim_batch(&self, worker: &str, now: u64, k: usize) -> Result<Vec<Claimed>> {
        let worker = worker.to_owned();
        self.run(move |q| q.claim_batch(&worker, now, k)).await
    }

    /// [`Queue::complete`](crate::Queue::complete).
    pub async fn complete(&self, c: &Completion<'_>) -> Result<Completed> {
        let c = OwnedCompletion::of(c);
        self.run(move |q| q.complete(&c.completion())).await
    }

    /// [`Queue::complete_batch`](crate::Queue::complete_batch): one transaction, one result
    /// per completion.
    pub async fn complete_batch(&self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>> {
        let completions: Vec<OwnedCompletion> = completions.iter().map(OwnedCompletion::of).collect();
        self.run(move |q| {
            q.complete_batch(&completions.iter().map(OwnedCompletion::completion).collect::<Vec<_>>())
        })
        .await
    }

    /// [`Queue::record_error`](crate::Queue::record_error).
    pub async fn record_error(&self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()> {
        let (lease, error, node) = (lease.clone(), error.to_owned(), node.map(str::to_owned));
        self.run(move |q| q.record_error(&lease, &error, node.as_deref())).await
    }

    /// [`Queue::heartbeat`](crate::Queue::heartbeat): the lease's new expiry.
    pub async fn heartbeat(&self, lease: &Lease, now: u64) -> Result<u64> {
        let lease = lease.clone();
        self.run(move |q| q.heartbeat(&lease, now)).await
    }

    /// [`Queue::cancel`](crate::Queue::cancel).
    pub async fn cancel(&self, id: &str, now: u64) -> Result<crate::Cancelled> {
        let id = id.to_owned();
        self.run(move |q| q.cancel(&id, now)).await
    }

    /// [`Queue::reap`](crate::Queue::reap).
    pub async fn reap(&self, now: u64) -> Result<u64> {
        self.run(move |q| q.reap(now)).await
    }

    /// [`Queue::redrive`](crate::Queue::redrive).
    pub async fn redrive(&self, r: &Redrive<'_>) -> Result<()> {
        let Redrive { id, add_attempts, deadline, now } = *r;
        let id = id.to_owned();
        self.run(move |q| q.redrive(&Redrive { id: &id, add_attempts, deadline, now })).await
    }

    /// [`Queue::get`](crate::Queue::get).
    pub async fn get(&self, id: &str) -> Result<Option<Job>> {
        let id = id.to_owned();
        self.run(move |q| q.get(&id)).await
    }

    /// [`Queue::history`](crate::Queue::history).
    pub async fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        let id = id.to_owned();
        self.run(move |q| q.history(&id)).await
    }

    /// [`Queue::attempts`](crate::Queue::attempts).
    pub async fn attempts(&self, id: &str) -> Result<Vec<crate::AttemptRecord>> {
        let id = id.to_owned();
        self.run(move |q| q.attempts(&id)).await
    }

    /// [`Queue::tallies`](crate::Queue::tallies).
    pub async fn tallies(&self) -> Result<crate::Tallies> {
        self.run(|q| q.tallies()).await
    }

    /// [`Queue::stats`](crate::Queue::stats).
    pub async fn stats(&self, now: u64) -> Result<Stats> {
        self.run(move |q| q.stats(now)).await
    }

    /// [`Queue::next_due`](crate::Queue::next_due): when a worker with nothing due should
    /// look again.
    pub async fn next_due(&self) -> Result<Option<u64>> {
        self.run(|q| q.next_due()).await
    }

    /// [`Queue::next_due_in`](crate::Queue::next_due_in): when a worker serving `queues`
    /// with nothing due should look again.
    pub async fn next_due_in(&self, queues: Vec<String>) -> Result<Option<u64>> {
        self.run(move |q| q.next_due_in(&queues.iter().map(String::as_str).collect::<Vec<_>>())).await
    }

    /// [`Queue::set_settings`](crate::Queue::set_settings), for every clone of this handle.
    pub async fn set_settings(&self, settings: Settings) -> Result<()> {
        self.run(move |q| q.set_settings(settings)).await
    }

    /// [`Queue::settings`](crate::Queue::settings).
    pub async fn settings(&self) -> Result<Settings> {
        self.call(|q| q.settings()).await
    }
}
