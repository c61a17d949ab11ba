//! A real SQLite queue with one operation rigged, for the worker's tests that must reach a
//! branch on purpose: a refused heartbeat, a group commit that waits. Each test binary uses
//! its part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use retryq::{
    Audit, Backend, Claimed, Completed, Completion, DeadReason, Enqueued, Error, HistoryEntry, Job, JobPage,
    Lease, NewJob, Owner, Queue, Redrive, RedriveDead, Result, Settings, Stats, Status,
};

/// A real queue with one operation rigged: its heartbeats refused with `refusal`, or its
/// group commits held at a [`Gate`] (on this connection and on every [`Backend::another`] it
/// gives, each a connection of its own to the same file). Everything else is the queue's.
pub struct Rigged {
    pub queue: Queue,
    pub refusal: Option<fn(&Lease) -> Error>,
    /// Heartbeats refused so far.
    pub refused: u64,
    /// Where group commits wait, and the file `another` opens again.
    pub gate: Option<(Arc<Gate>, PathBuf)>,
    /// The file `another` opens again as a connection whose group commits panic.
    pub panicking: Option<PathBuf>,
    /// Whether this connection's group commits panic.
    pub commits_panic: bool,
}

impl Rigged {
    /// `queue` with its heartbeats refused with `refusal`.
    pub fn refusing(queue: Queue, refusal: fn(&Lease) -> Error) -> Rigged {
        Rigged { refusal: Some(refusal), ..Rigged::plain(queue) }
    }

    /// The queue at `path` with its group commits held at `gate` until it opens.
    pub fn gated(path: &Path, gate: Arc<Gate>) -> Rigged {
        let queue = Queue::open(path).expect("queue");
        Rigged { gate: Some((gate, path.to_owned())), ..Rigged::plain(queue) }
    }

    /// The queue at `path`, whose second connection ([`Backend::another`]) panics at every
    /// group commit, before it writes anything.
    pub fn panicking_beside(path: &Path) -> Rigged {
        let queue = Queue::open(path).expect("queue");
        Rigged { panicking: Some(path.to_owned()), ..Rigged::plain(queue) }
    }

    /// `queue` with nothing rigged.
    fn plain(queue: Queue) -> Rigged {
        Rigged { queue, refusal: None, refused: 0, gate: None, panicking: None, commits_panic: false }
    }
}

/// A gate the rigged group commits wait at: closed until [`Gate::open`].
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    pub fn open(&self) {
        *self.open.lock().expect("gate") = true;
        self.changed.notify_all();
    }

    pub fn is_open(&self) -> bool {
        *self.open.lock().expect("gate")
    }

    fn pass(&self) {
        let mut open = self.open.lock().expect("gate");
        while !*open {
            open = self.changed.wait(open).expect("gate");
        }
    }
}

impl retryq::ServerTime for Rigged {}

impl Backend for Rigged {
    fn heartbeat(&mut self, lease: &Lease, now: u64) -> Result<u64> {
        match self.refusal {
            Some(refusal) => {
                self.refused += 1;
                Err(refusal(lease))
            }
            None => self.queue.heartbeat(lease, now),
        }
    }
    fn another(&self) -> Result<Option<Box<dyn Backend>>> {
        if let Some(path) = &self.panicking {
            let panics = Rigged { commits_panic: true, ..Rigged::plain(Queue::open(path).expect("queue")) };
            return Ok(Some(Box::new(panics)));
        }
        Ok(self
            .gate
            .as_ref()
            .map(|(gate, path)| Box::new(Rigged::gated(path, Arc::clone(gate))) as Box<dyn Backend>))
    }
    fn kind(&self) -> &'static str {
        "sqlite"
    }
    fn settings(&self) -> Settings {
        self.queue.settings()
    }
    fn set_settings(&mut self, settings: Settings) -> Result<()> {
        self.queue.set_settings(settings)
    }
    fn enqueue(&mut self, job: &NewJob<'_>) -> Result<Enqueued> {
        self.queue.enqueue(job)
    }
    fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
        self.queue.enqueue_many(jobs)
    }
    fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> Result<Option<Claimed>> {
        self.queue.claim_from(worker, queues, now)
    }
    fn claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<Vec<Claimed>> {
        self.queue.claim_batch_from(worker, queues, now, k)
    }
    fn complete(&mut self, completion: &Completion<'_>) -> Result<Completed> {
        self.queue.complete(completion)
    }
    fn complete_batch(&mut self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>> {
        if let Some((gate, _)) = &self.gate {
            gate.pass();
        }
        assert!(!self.commits_panic, "a rigged group commit panics");
        self.queue.complete_batch(completions)
    }
    fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()> {
        self.queue.record_error(lease, error, node)
    }
    fn cancel(&mut self, id: &str, now: u64) -> Result<retryq::Cancelled> {
        self.queue.cancel(id, now)
    }
    fn prune(&mut self, before: u64, now: u64) -> Result<u64> {
        self.queue.prune(before, now)
    }
    fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64> {
        self.queue.prune_at_most(before, now, limit)
    }
    fn forget(&mut self, before: u64, now: u64) -> Result<u64> {
        self.queue.forget(before, now)
    }
    fn pause(&mut self, queue: &str, now: u64) -> Result<()> {
        self.queue.pause(queue, now)
    }
    fn resume(&mut self, queue: &str, now: u64) -> Result<()> {
        self.queue.resume(queue, now)
    }
    fn run_now(&mut self, id: &str, now: u64) -> Result<u64> {
        self.queue.run_now(id, now)
    }
    fn paused(&self) -> Result<Vec<(String, u64)>> {
        self.queue.paused()
    }
    fn lookup(&self, id: &str) -> Result<Option<retryq::Lookup>> {
        self.queue.lookup(id)
    }
    fn redrive(&mut self, redrive: &Redrive<'_>) -> Result<()> {
        self.queue.redrive(redrive)
    }
    fn redrive_dead(&mut self, redrive: &RedriveDead) -> Result<Vec<(String, Result<()>)>> {
        self.queue.redrive_dead(redrive)
    }
    fn reap(&mut self, now: u64) -> Result<u64> {
        self.queue.reap(now)
    }
    fn get(&self, id: &str) -> Result<Option<Job>> {
        self.queue.get(id)
    }
    fn stats_of(&self, now: u64, queue: Option<&str>) -> Result<Stats> {
        self.queue.stats_of(now, queue)
    }
    fn owners(&self, now: u64) -> Result<Vec<Owner>> {
        self.queue.owners(now)
    }
    fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        self.queue.history(id)
    }
    fn dead_jobs(&self, reason: Option<DeadReason>) -> Result<Vec<Job>> {
        self.queue.dead_jobs(reason)
    }
    fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> Result<JobPage> {
        self.queue.list(status, reason, limit)
    }
    fn browse(&self, filter: &retryq::Browse<'_>) -> Result<retryq::BrowsePage> {
        self.queue.browse(filter)
    }
    fn queues(&self) -> Result<Vec<String>> {
        self.queue.queues()
    }
    fn attempts(&self, id: &str) -> Result<Vec<retryq::AttemptRecord>> {
        self.queue.attempts(id)
    }
    fn tallies(&self) -> Result<retryq::Tallies> {
        self.queue.tallies()
    }
    fn next_due(&self) -> Result<Option<u64>> {
        self.queue.next_due()
    }
    fn next_due_in(&self, queues: &[&str]) -> Result<Option<u64>> {
        self.queue.next_due_in(queues)
    }
    fn audit(&self) -> Result<Audit> {
        self.queue.audit()
    }
}
