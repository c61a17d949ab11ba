//! `Backend`: the contract's operations, whatever store keeps the jobs.
//!
//! Two stores implement it — [`Queue`] on a SQLite file and, with the `postgres` feature,
//! `PgQueue` on a PostgreSQL database — and both give the same answer to the same call: the
//! replay harness, the worker and the command line are written against this trait, and
//! conformance runs the same traces through either. A caller who knows its store may keep
//! using the concrete type; every method here is that type's own method of the same name,
//! documented there.
//!
//! The trait is object safe (`Box<dyn Backend>` is what `open` returns for a `--db` that may
//! name either store), so `run_once`, generic over its transport, is a method of
//! `dyn Backend` rather than of the trait.

use std::sync::Arc;

use crate::clock::{Clock, Jitter, ServerClock, ServerTime, UniformJitter};
use crate::interrupt::Interrupt;
use crate::listen::{Listener, Wake};

use crate::audit::Audit;
use crate::error::{Result, RunError};
use crate::job::{DEFAULT_QUEUE, DeadReason, Job, Lookup, Report, Status};
use crate::notes::{AttemptRecord, Tallies};
use crate::queue::browse::{Browse, BrowsePage};
use crate::queue::cancel::Cancelled;
use crate::queue::claim::Claimed;
use crate::queue::complete::{Completed, Completion};
use crate::queue::enqueue::{Enqueued, NewJob};
use crate::queue::inspect::{HistoryEntry, JobPage, Owner, Stats};
use crate::queue::lease::Lease;
use crate::queue::redrive::{Redrive, RedriveDead};
use crate::queue::run_once::{Ran, run_with};
use crate::queue::store::{Queue, Settings};

/// A durable store of jobs that keeps SPEC sections 2 to 4. Every write is one transaction
/// (or, for the `_batch`/`_many` calls, one for the whole batch); every read sees one
/// snapshot.
pub trait Backend: Send + ServerTime {
    /// Which store this is, for messages: `sqlite` or `postgres`.
    fn kind(&self) -> &'static str;
    /// The lease and backoff parameters later operations use.
    fn settings(&self) -> Settings;
    /// Sets the lease and backoff parameters for later operations.
    fn set_settings(&mut self, settings: Settings) -> Result<()>;
    /// SPEC 3.2: stores a new job, or answers `Existing` for the same id and payload.
    fn enqueue(&mut self, job: &NewJob<'_>) -> Result<Enqueued>;
    /// Several enqueues in one transaction, each answered on its own.
    fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>>;
    /// A bulk import: `jobs` enqueued in their order, each answered as
    /// [`enqueue`](Backend::enqueue) would answer it, in as many short transactions as it
    /// takes for none to hold up the store's other writers (on SQLite the write lock, on
    /// PostgreSQL the claims' turn) more than a few milliseconds — [`Queue::enqueue_bulk`]
    /// and `PgQueue::enqueue_bulk` say how. Each answer is pushed onto `answers` once its
    /// transaction has committed, so after an error `answers` holds exactly the jobs written:
    /// the first of `jobs`, and none after them. Enqueuing the same jobs again is safe: every
    /// one written answers `Existing`.
    ///
    /// A store without its own writes them through
    /// [`enqueue_many`](Backend::enqueue_many), 100 at a time.
    fn enqueue_bulk(&mut self, jobs: &[NewJob<'_>], answers: &mut Vec<Result<Enqueued>>) -> Result<()> {
        for batch in jobs.chunks(BULK_BATCH) {
            answers.extend(self.enqueue_many(batch)?);
        }
        Ok(())
    }
    /// SPEC 3.3: reaps every queue, then leases to `worker` the next due job of `queues`.
    fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> Result<Option<Claimed>>;
    /// Up to `k` claims from `queues` in one transaction, exactly as `k` single claims would
    /// answer.
    fn claim_batch_from(&mut self, worker: &str, queues: &[&str], now: u64, k: usize)
    -> Result<Vec<Claimed>>;
    /// [`claim_batch_from`](Backend::claim_batch_from), and how many jobs its reap ended
    /// (a worker counts and logs them), in the same one transaction on both stores. This
    /// default reaps in a transaction of its own first; a store that can say what its claim
    /// reaped answers in one, so that a worker takes one turn per claim, not two (SPEC 6.26).
    fn reap_and_claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<(u64, Vec<Claimed>)> {
        let reaped = self.reap(now)?;
        Ok((reaped, self.claim_batch_from(worker, queues, now, k)?))
    }
    /// [`claim_from`](Backend::claim_from) the default queue alone.
    fn claim(&mut self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        self.claim_from(worker, &[DEFAULT_QUEUE], now)
    }
    /// [`claim_batch_from`](Backend::claim_batch_from) the default queue alone.
    fn claim_batch(&mut self, worker: &str, now: u64, k: usize) -> Result<Vec<Claimed>> {
        self.claim_batch_from(worker, &[DEFAULT_QUEUE], now, k)
    }
    /// SPEC 3.4: records the outcome of a held attempt.
    fn complete(&mut self, completion: &Completion<'_>) -> Result<Completed>;
    /// Several completions in one transaction, each answered on its own.
    fn complete_batch(&mut self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>>;
    /// Notes an unclassified error on a held lease; not a transition.
    fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()>;
    /// SPEC 3.12: the holder keeps its lease; the new expiry.
    fn heartbeat(&mut self, lease: &Lease, now: u64) -> Result<u64>;
    /// SPEC 3.13: a pending job becomes dead(cancelled); a leased one gets a cancel request.
    fn cancel(&mut self, id: &str, now: u64) -> Result<Cancelled>;
    /// SPEC 3.14: every done or dead job with `ended_at` ≤ `before` leaves a tombstone; how
    /// many.
    fn prune(&mut self, before: u64, now: u64) -> Result<u64>;
    /// A prune of at most about `limit` jobs in one transaction, the earliest ended first:
    /// exactly `prune(b, now)` for the largest `b` ≤ `before` whose jobs number at most
    /// `limit` — or, when the jobs that ended at the earliest instant alone outnumber
    /// `limit`, those jobs. How many were pruned; 0 when none is left to prune.
    fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64>;
    /// SPEC 3.15: every tombstone with `ended_at` ≤ `before` is removed; how many.
    fn forget(&mut self, before: u64, now: u64) -> Result<u64>;
    /// Gives space that prunes freed back to the file system where the store can (SQLite's
    /// `incremental_vacuum`: [`Queue::reclaim`]); how many pages were free. PostgreSQL's
    /// autovacuum does this by itself: there, nothing (0).
    fn reclaim(&mut self) -> Result<u64> {
        Ok(0)
    }
    /// SPEC 3.16: idempotent; `now` is kept as the pause's time (a second pause keeps the
    /// first).
    fn pause(&mut self, queue: &str, now: u64) -> Result<()>;
    /// SPEC 3.17: idempotent.
    fn resume(&mut self, queue: &str, now: u64) -> Result<()>;
    /// SPEC 3.18: the job's new `available_at`; refusals are [`Error::NotFound`],
    /// [`Error::Pruned`], [`Error::NotPending`], [`Error::DeadlinePassed`], in that order.
    ///
    /// [`Error::NotFound`]: crate::Error::NotFound
    /// [`Error::Pruned`]: crate::Error::Pruned
    /// [`Error::NotPending`]: crate::Error::NotPending
    /// [`Error::DeadlinePassed`]: crate::Error::DeadlinePassed
    fn run_now(&mut self, id: &str, now: u64) -> Result<u64>;
    /// The paused queues and the time each was paused, ordered by name (operators' view).
    fn paused(&self) -> Result<Vec<(String, u64)>>;
    /// SPEC 3.6: a dead job gets a new budget.
    fn redrive(&mut self, redrive: &Redrive<'_>) -> Result<()>;
    /// Every dead job (of one reason) redriven, each answered on its own.
    fn redrive_dead(&mut self, redrive: &RedriveDead) -> Result<Vec<(String, Result<()>)>>;
    /// SPEC 3.5: quarantines every due job that is out of budget; how many.
    fn reap(&mut self, now: u64) -> Result<u64>;
    /// SPEC 3.9: the job with this id (`None` for a pruned id as for an unknown one).
    fn get(&self, id: &str) -> Result<Option<Job>>;
    /// SPEC 3.9: the job or the tombstone with this id, read in one snapshot.
    fn lookup(&self, id: &str) -> Result<Option<Lookup>>;
    /// SPEC 3.8: counts of the store at `now`, of one queue or of all.
    fn stats_of(&self, now: u64, queue: Option<&str>) -> Result<Stats>;
    /// SPEC 3.8: counts of the whole store at `now`.
    fn stats(&self, now: u64) -> Result<Stats> {
        self.stats_of(now, None)
    }
    /// The lease holders and their leases at `now`.
    fn owners(&self, now: u64) -> Result<Vec<Owner>>;
    /// Every recorded transition of one job, oldest first.
    fn history(&self, id: &str) -> Result<Vec<HistoryEntry>>;
    /// The dead jobs (of one reason), in enqueue order.
    fn dead_jobs(&self, reason: Option<DeadReason>) -> Result<Vec<Job>>;
    /// Up to `limit` jobs of one status, in an operator's order.
    fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> Result<JobPage>;
    /// Up to `limit` leased jobs, queue by queue, the soonest lease end first, read along the
    /// leases' index: a page of them costs `limit` rows whatever else the store holds. By
    /// default (a store without that index) the leased page of [`list`](Backend::list).
    fn leases(&self, limit: u32) -> Result<Vec<Job>> {
        Ok(self.list(Status::Leased, None, limit)?.jobs)
    }
    /// A page of the jobs that match every filter of `filter`, the most recently enqueued
    /// first: a dashboard's listing.
    fn browse(&self, filter: &Browse<'_>) -> Result<BrowsePage>;
    /// The queues that hold a job or a tombstone, in byte order of their names.
    fn queues(&self) -> Result<Vec<String>>;
    /// The records of a job's ended attempts, oldest first (SPEC 6.36); empty for an unknown
    /// or pruned id.
    fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>>;
    /// Every tally the store keeps, read in one snapshot (SPEC 6.36).
    fn tallies(&self) -> Result<Tallies>;
    /// The smallest `available_at` of the open jobs.
    fn next_due(&self) -> Result<Option<u64>>;
    /// The smallest `available_at` of the open jobs of `queues`: when a worker serving them
    /// has something to do.
    fn next_due_in(&self, queues: &[&str]) -> Result<Option<u64>>;
    /// SPEC section 4's invariants checked on every row and every recorded transition.
    fn audit(&self) -> Result<Audit>;
    /// Names this session after `identity` (a worker's lease-holding name) where the store
    /// shows its sessions to an operator: PostgreSQL's `application_name`, in
    /// `pg_stat_activity`, cut to its 63 bytes. Nothing for a store without sessions.
    fn set_identity(&mut self, identity: &str) -> Result<()> {
        let _ = identity;
        Ok(())
    }
    /// After a lock or statement timeout: who holds the locks this store's operations wait
    /// for (on PostgreSQL, the sessions holding the claims' turn or blocking another
    /// session of this database, each by its `application_name`, process id, state and how
    /// long its transaction has been open). Empty for a store without sessions.
    fn lock_holders(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// A handle another thread may use to cancel the statement this store is running (a
    /// worker asked to stop must not wait out a statement's timeout). `None` for a store
    /// whose statements do not wait on others (SQLite's wait is its busy timeout).
    fn interrupter(&self) -> Option<Arc<dyn Interrupt>> {
        None
    }
    /// The clock this store's clock-reading operations use (`dyn Backend`'s
    /// [`now`](crate::Backend#method.now), `enqueue` of an [`Enqueue`](crate::Enqueue), a
    /// worker runtime's claims). The default, for a store that keeps none, is a fresh
    /// [`ServerClock`].
    fn clock(&self) -> Arc<dyn Clock> {
        Arc::new(ServerClock::new())
    }
    /// The jitter source a worker draws each retry's jitter from. The default, for a store
    /// that keeps none, is [`UniformJitter`].
    fn jitter(&self) -> Arc<dyn Jitter> {
        Arc::new(UniformJitter)
    }
    /// Calls `wake` from a thread of its own whenever a job may have become due — with the
    /// job's queue where the store can tell — until the returned [`Listener`] is dropped
    /// (`listen.rs` says how each store knows). `None` where the store cannot tell: a worker
    /// then looks by its schedule alone, as it does after a wake-up lost.
    fn listen(&self, wake: Wake) -> std::io::Result<Option<Listener>> {
        let _ = wake;
        Ok(None)
    }
    /// The file this store is on, for a SQLite one (`:memory:` for an in-memory one); `None`
    /// for a server's database.
    fn path(&self) -> Option<&std::path::Path> {
        None
    }
    /// A second connection to the same store, with this one's settings, clock and jitter,
    /// for work that may run beside this connection's: a worker commits its outcomes on it
    /// while it claims on this one. `None` where a second connection would only wait for the
    /// first — SQLite, whose writers take turns on one file.
    fn another(&self) -> Result<Option<Box<dyn Backend>>> {
        Ok(None)
    }
}

/// A store borrowed mutably, whatever holds it: a store itself (`&mut queue`), the
/// `Box<dyn Backend>` [`open_backend`] returns (`&mut store`), or a `&mut dyn Backend`.
/// What a worker takes, so that a caller never writes `&mut *store`.
pub trait BackendMut {
    /// The store, as a trait object.
    fn backend_mut(&mut self) -> &mut dyn Backend;
}

impl<B: Backend> BackendMut for B {
    fn backend_mut(&mut self) -> &mut dyn Backend {
        self
    }
}

impl BackendMut for dyn Backend + '_ {
    fn backend_mut(&mut self) -> &mut dyn Backend {
        self
    }
}

impl BackendMut for Box<dyn Backend + '_> {
    fn backend_mut(&mut self) -> &mut dyn Backend {
        &mut **self
    }
}

/// How many jobs [`Backend::enqueue_bulk`]'s default writes in one transaction.
const BULK_BATCH: usize = 100;

/// Opens the store `db` names: a `postgres://` or `postgresql://` URL is a PostgreSQL
/// database ([`PgQueue::connect`](crate::PgQueue::connect), feature `postgres`), anything
/// else the SQLite file at that path ([`Queue::open`]). What a `--db` option hands over.
///
/// A PostgreSQL URL in a build without the `postgres` feature is refused
/// ([`Error::NotRetryq`](crate::Error::NotRetryq)) rather than taken for a file name.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("jobs.db");
/// let store = retryq::open_backend(path.to_str().expect("a UTF-8 path"))?;
/// assert_eq!(store.kind(), "sqlite");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_backend(db: &str) -> Result<Box<dyn Backend>> {
    if !is_postgres_url(db) {
        return Ok(Box::new(Queue::open(db)?));
    }
    #[cfg(feature = "postgres")]
    return Ok(Box::new(crate::pg::PgQueue::connect(db)?));
    #[cfg(not(feature = "postgres"))]
    return Err(no_postgres());
}

/// The refusal of a PostgreSQL URL by a build without the `postgres` feature.
#[cfg(not(feature = "postgres"))]
pub(crate) fn no_postgres() -> crate::Error {
    crate::Error::NotRetryq {
        path: "postgres://…".into(),
        why: "a PostgreSQL URL, and this build of retryq has no PostgreSQL support (feature `postgres`)"
            .into(),
    }
}

/// Whether `db` is a PostgreSQL URL: its scheme, in any case, is `postgres` or `postgresql`.
pub(crate) fn is_postgres_url(db: &str) -> bool {
    let scheme = |prefix: &str| db.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix));
    scheme("postgres://") || scheme("postgresql://")
}

impl dyn Backend + '_ {
    /// `run_once` on any store: claim, send, record — see [`Queue::run_once`], which is this
    /// same code on a SQLite queue.
    pub fn run_once<R: Into<Report>, E>(
        &mut self,
        worker: &str,
        clock: impl FnMut() -> u64,
        transport: impl FnOnce(&Claimed) -> std::result::Result<R, E>,
        jitter: f64,
    ) -> Result<Ran, RunError<E>> {
        self.run_once_from(worker, &[DEFAULT_QUEUE], clock, transport, jitter)
    }

    /// `run_once` serving `queues` (SPEC 3.5): its claim is [`Backend::claim_from`] them.
    pub fn run_once_from<R: Into<Report>, E>(
        &mut self,
        worker: &str,
        queues: &[&str],
        clock: impl FnMut() -> u64,
        transport: impl FnOnce(&Claimed) -> std::result::Result<R, E>,
        jitter: f64,
    ) -> Result<Ran, RunError<E>> {
        let claim = |store: &mut Self, worker: &str, now: u64| store.claim_from(worker, queues, now);
        let complete = |store: &mut Self, c: &Completion<'_>| store.complete(c);
        run_with(self, claim, complete, worker, clock, transport, jitter)
    }
}

/// Each method is the SQLite queue's own (the inherent method wins over the trait's, so
/// these calls do not recurse).
/// A store behind `dyn`, as a worker runtime takes it.
impl From<Queue> for Box<dyn Backend> {
    fn from(queue: Queue) -> Self {
        Box::new(queue)
    }
}

#[cfg(feature = "postgres")]
impl From<crate::pg::PgQueue> for Box<dyn Backend> {
    fn from(queue: crate::pg::PgQueue) -> Self {
        Box::new(queue)
    }
}

/// SQLite has no server: its callers use their host's clock.
impl ServerTime for Queue {}

impl Backend for Queue {
    fn kind(&self) -> &'static str {
        "sqlite"
    }
    fn path(&self) -> Option<&std::path::Path> {
        Some(Queue::path(self))
    }
    fn listen(&self, wake: Wake) -> std::io::Result<Option<Listener>> {
        Queue::listen(self, wake)
    }
    fn settings(&self) -> Settings {
        Queue::settings(self)
    }
    fn set_settings(&mut self, settings: Settings) -> Result<()> {
        Queue::set_settings(self, settings)
    }
    fn enqueue(&mut self, job: &NewJob<'_>) -> Result<Enqueued> {
        Queue::enqueue(self, job)
    }
    fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
        Queue::enqueue_many(self, jobs)
    }
    fn enqueue_bulk(&mut self, jobs: &[NewJob<'_>], answers: &mut Vec<Result<Enqueued>>) -> Result<()> {
        Queue::enqueue_bulk(self, jobs, answers)
    }
    fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> Result<Option<Claimed>> {
        Queue::claim_from(self, worker, queues, now)
    }
    fn claim(&mut self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        Queue::claim(self, worker, now)
    }
    fn claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<Vec<Claimed>> {
        Queue::claim_batch_from(self, worker, queues, now, k)
    }
    fn reap_and_claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<(u64, Vec<Claimed>)> {
        Queue::reap_and_claim_batch_from(self, worker, queues, now, k)
    }
    fn complete(&mut self, completion: &Completion<'_>) -> Result<Completed> {
        Queue::complete(self, completion)
    }
    fn complete_batch(&mut self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>> {
        Queue::complete_batch(self, completions)
    }
    fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()> {
        Queue::record_error(self, lease, error, node)
    }
    fn heartbeat(&mut self, lease: &Lease, now: u64) -> Result<u64> {
        Queue::heartbeat(self, lease, now)
    }
    fn cancel(&mut self, id: &str, now: u64) -> Result<Cancelled> {
        Queue::cancel(self, id, now)
    }
    fn prune(&mut self, before: u64, now: u64) -> Result<u64> {
        Queue::prune(self, before, now)
    }
    fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64> {
        Queue::prune_at_most(self, before, now, limit)
    }
    fn forget(&mut self, before: u64, now: u64) -> Result<u64> {
        Queue::forget(self, before, now)
    }
    fn reclaim(&mut self) -> Result<u64> {
        Queue::reclaim(self)
    }
    fn pause(&mut self, queue: &str, now: u64) -> Result<()> {
        Queue::pause(self, queue, now)
    }
    fn resume(&mut self, queue: &str, now: u64) -> Result<()> {
        Queue::resume(self, queue, now)
    }
    fn run_now(&mut self, id: &str, now: u64) -> Result<u64> {
        Queue::run_now(self, id, now)
    }
    fn paused(&self) -> Result<Vec<(String, u64)>> {
        Queue::paused(self)
    }
    fn redrive(&mut self, redrive: &Redrive<'_>) -> Result<()> {
        Queue::redrive(self, redrive)
    }
    fn redrive_dead(&mut self, redrive: &RedriveDead) -> Result<Vec<(String, Result<()>)>> {
        Queue::redrive_dead(self, redrive)
    }
    fn reap(&mut self, now: u64) -> Result<u64> {
        Queue::reap(self, now)
    }
    fn get(&self, id: &str) -> Result<Option<Job>> {
        Queue::get(self, id)
    }
    fn lookup(&self, id: &str) -> Result<Option<Lookup>> {
        Queue::lookup(self, id)
    }
    fn stats(&self, now: u64) -> Result<Stats> {
        Queue::stats(self, now)
    }
    fn stats_of(&self, now: u64, queue: Option<&str>) -> Result<Stats> {
        Queue::stats_of(self, now, queue)
    }
    fn owners(&self, now: u64) -> Result<Vec<Owner>> {
        Queue::owners(self, now)
    }
    fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        Queue::history(self, id)
    }
    fn dead_jobs(&self, reason: Option<DeadReason>) -> Result<Vec<Job>> {
        Queue::dead_jobs(self, reason)
    }
    fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> Result<JobPage> {
        Queue::list(self, status, reason, limit)
    }
    fn leases(&self, limit: u32) -> Result<Vec<Job>> {
        Queue::leases(self, limit)
    }
    fn browse(&self, filter: &Browse<'_>) -> Result<BrowsePage> {
        Queue::browse(self, filter)
    }
    fn queues(&self) -> Result<Vec<String>> {
        Queue::queues(self)
    }
    fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>> {
        Queue::attempts(self, id)
    }
    fn tallies(&self) -> Result<Tallies> {
        Queue::tallies(self)
    }
    fn next_due(&self) -> Result<Option<u64>> {
        Queue::next_due(self)
    }
    fn next_due_in(&self, queues: &[&str]) -> Result<Option<u64>> {
        Queue::next_due_in(self, queues)
    }
    fn audit(&self) -> Result<Audit> {
        Queue::audit(self)
    }
    fn clock(&self) -> Arc<dyn Clock> {
        Queue::clock(self)
    }
    fn jitter(&self) -> Arc<dyn Jitter> {
        Queue::jitter(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Outcome;

    /// The trait object answers as the queue does, `run_once` included.
    #[test]
    fn a_queue_behind_the_trait_is_the_same_queue() {
        let mut store: Box<dyn Backend> = Box::new(Queue::open_in_memory().expect("memory queue"));
        assert_eq!(store.kind(), "sqlite");
        let job =
            NewJob { id: "a", payload: "{}", max_attempts: 2, deadline: 60_000, now: 0, ..NewJob::default() };
        assert_eq!(store.enqueue(&job).expect("enqueue"), Enqueued::New);
        let send = |_: &Claimed| Ok::<_, std::convert::Infallible>(Outcome::Ok);
        let ran = store.run_once("w1", || 10, send, 0.5).expect("run");
        assert_eq!(ran, Ran::Done { id: "a".into(), attempt: 1 });
        assert_eq!(store.get("a").expect("get").map(|j| j.status), Some(Status::Done));
        assert!(store.audit().expect("audit").is_clean());
    }

    #[test]
    fn a_url_names_postgres_and_anything_else_a_file() {
        for url in ["postgres://u@h/db", "postgresql://h/db", "POSTGRES://h/db", "PostgreSQL://h"] {
            assert!(is_postgres_url(url), "{url}");
        }
        for path in ["jobs.db", "/var/lib/postgres/jobs.db", "postgres:/x", "postgres", "", "é"] {
            assert!(!is_postgres_url(path), "{path}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let store = open_backend(path.to_str().expect("utf-8")).expect("open");
        assert_eq!(store.kind(), "sqlite");
    }

    #[test]
    fn a_postgres_url_is_a_postgres_store() {
        let Some(url) = retryq_pgtest::database("backend::a_postgres_url_is_a_postgres_store") else {
            return;
        };
        let store = open_backend(&url).expect("connect");
        assert_eq!(store.kind(), "postgres");
        assert_eq!(store.next_due().expect("next_due"), None);
    }
}
