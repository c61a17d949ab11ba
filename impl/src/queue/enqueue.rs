//! `enqueue`: accept a job once, by its business id.

use rusqlite::{OptionalExtension, Transaction, params};

use super::store::Queue;
use crate::clock::Clock as _;
use crate::error::{Error, Result};
use crate::input;
use crate::schema;

/// A job to enqueue.
///
/// The three optional fields are contract 1.1's; `..NewJob::default()` leaves them out (and
/// gives an empty id, which `enqueue` refuses, so a literal must name its id).
///
/// ```
/// use retryq::NewJob;
///
/// let job = NewJob { id: "order-7", payload: "{}", max_attempts: 5, deadline: 60_000, now: 0, ..NewJob::default() };
/// assert_eq!(job.not_before, None);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NewJob<'a> {
    /// The business id: 1 … 256 bytes; receivers drop duplicates by it.
    pub id: &'a str,
    /// At most 1 MiB of text.
    pub payload: &'a str,
    /// The attempt budget: 1 … 2^31 − 1.
    pub max_attempts: u64,
    /// No attempt starts at or after this time. Must be after `now`.
    pub deadline: u64,
    /// The caller's clock: the job is due at once (unless scheduled), and `stats` ages it
    /// from here.
    pub now: u64,
    /// A scheduled start: no claim takes the job before it. In `now` … `deadline − 1`;
    /// `None` is `now`. An id already stored keeps its own schedule (SPEC 6.22).
    pub not_before: Option<u64>,
    /// The job's own first retry window in place of the queue's `base_ms`; `None` uses the
    /// queue's setting in effect at each retry (SPEC 6.23).
    pub base_ms: Option<u64>,
    /// The job's own largest retry window in place of the queue's `cap_ms`; `None` as for
    /// `base_ms`.
    pub cap_ms: Option<u64>,
    /// The queue (SPEC 1.6): 1 … 64 bytes, no NUL; `None` is [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE).
    /// An id already stored keeps its own (SPEC 6.28).
    pub queue: Option<&'a str>,
    /// 0 … 9, lower first (SPEC 1.6); `None` is 0. An id already stored keeps its own.
    pub priority: Option<u64>,
    /// What kind of job it is (SPEC 1.1): 0 … 64 bytes, no NUL; `""` (the default) is none.
    /// A re-enqueue of the id compares it with the payload (SPEC 3.2).
    pub kind: &'a str,
}

/// What an `enqueue` takes: a [`NewJob`] with its times given (the contract's operation, the
/// clock never read), or an [`Enqueue`], resolved against the store's clock.
pub trait ToEnqueue {
    /// The job as the contract's enqueue takes it; `now` reads the store's clock, and is
    /// called only by a job whose times are relative to it.
    fn new_job(&self, now: &mut dyn FnMut() -> Result<u64>) -> Result<NewJob<'_>>;
}

impl ToEnqueue for NewJob<'_> {
    fn new_job(&self, _: &mut dyn FnMut() -> Result<u64>) -> Result<NewJob<'_>> {
        Ok(*self)
    }
}

/// What `enqueue` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Enqueued {
    /// A new job, pending from `not_before` (or `now`).
    New,
    /// The id was already there with the same payload: nothing changed, whatever its status
    /// and whatever budget this call asked for.
    Existing,
}

/// A new job is pending from its `not_before` (`?6`, already `now` when none was given); an
/// existing id is left exactly as it is, schedule and backoff included.
const INSERT: &str = "
    INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                      redrives, enqueued_at, updated_at, not_before, base_ms, cap_ms, queue,
                      priority, cancel_requested, kind)
    VALUES (?1, ?2, 'pending', 0, ?3, ?6, ?4, 0, ?5, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11)
    ON CONFLICT (id) DO NOTHING";

/// A pruned id's tombstone: its kind's and payload's digest decides `existing` or `conflict`
/// (SPEC 3.2, 6.29).
const TOMBSTONE_DIGEST: &str = "SELECT digest FROM tombstones WHERE id = ?1";

/// The same job: the same payload and the same kind, byte for byte (SPEC 3.2).
const SAME_PAYLOAD: &str = "SELECT payload = ?2 AND kind = ?3 FROM jobs WHERE id = ?1";

impl NewJob<'_> {
    /// Every check of SPEC 3.2's arguments, in its order: what each store runs before it
    /// looks anything up.
    pub(crate) fn validate(&self) -> Result<()> {
        input::name("id", self.id)?;
        input::payload(self.payload)?;
        input::attempts("max_attempts", self.max_attempts)?;
        input::int("now", self.now)?;
        input::deadline(self.deadline, self.now)?;
        if let Some(at) = self.not_before {
            input::not_before(at, self.now, self.deadline)?;
        }
        if let Some(base_ms) = self.base_ms {
            input::int("base_ms", base_ms)?;
        }
        if let Some(cap_ms) = self.cap_ms {
            input::int("cap_ms", cap_ms)?;
        }
        if let Some(queue) = self.queue {
            input::queue("queue", queue)?;
        }
        if let Some(priority) = self.priority {
            input::priority(priority)?;
        }
        input::kind(self.kind)?;
        Ok(())
    }
}

impl Queue {
    /// Accepts a job: a new id is stored `pending` with `attempts` 0 and `available_at` =
    /// `not_before` (default `now`), with its own `base_ms` and `cap_ms` if given. An existing
    /// id with the same payload changes nothing (not its deadline, not its attempts, not its
    /// schedule or backoff); with a different payload it is [`Error::Conflict`]. Every
    /// argument, `not_before` included, is checked first, also for an existing id.
    ///
    /// ```
    /// use retryq::{Enqueued, ErrorKind, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// let job = NewJob { id: "order-7", payload: "sku=1", max_attempts: 5, deadline: 60_000, now: 0, ..NewJob::default() };
    /// assert_eq!(q.enqueue(&job)?, Enqueued::New);
    /// // Enqueueing again after a lost reply is safe: the same payload changes nothing…
    /// assert_eq!(q.enqueue(&job)?, Enqueued::Existing);
    /// // …and another payload under the same id is a conflict, not an overwrite.
    /// let other = NewJob { payload: "sku=2", ..job };
    /// assert_eq!(q.enqueue(&other).map_err(|e| e.kind()), Err(ErrorKind::Conflict));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    ///
    /// An [`Enqueue`](crate::Enqueue) is resolved against the queue's clock first
    /// ([`Queue::set_clock`]); a `NewJob` never reads it.
    pub fn enqueue(&mut self, job: &(impl ToEnqueue + ?Sized)) -> Result<Enqueued> {
        let clock = std::sync::Arc::clone(&self.sources.clock);
        let job = job.new_job(&mut || crate::clock::store_now(&*self, &*clock))?;
        job.validate()?;
        self.write(|tx| insert(tx, &job))
    }

    /// Enqueues many jobs in one transaction (one commit, one fsync), each with exactly the
    /// rules of [`Queue::enqueue`]. Each job gets its own result; a refused job does not stop
    /// the others. Only a storage failure fails the whole batch, and then none is stored.
    ///
    /// ```
    /// use retryq::{Enqueued, ErrorKind, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// let jobs = [
    ///     NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() },
    ///     NewJob { id: "", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() },
    /// ];
    /// let results = q.enqueue_many(&jobs)?;
    /// assert!(matches!(results[0], Ok(Enqueued::New)));
    /// // The empty id is refused on its own; it does not undo the job beside it.
    /// assert_eq!(results[1].as_ref().map_err(|e| e.kind()), Err(ErrorKind::InvalidInput));
    /// assert_eq!(q.stats(0)?.pending, 1);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
        self.write(|tx| {
            let mut results = Vec::with_capacity(jobs.len());
            for job in jobs {
                let result = job.validate().and_then(|()| insert(tx, job));
                if let Err(Error::Storage(e)) = result {
                    return Err(Error::Storage(e));
                }
                results.push(result);
            }
            Ok(results)
        })
    }
}

/// Enqueues `job` inside the application's own transaction `tx`, on the application's own
/// connection to the queue's database file: the job is stored if and only if `tx` commits,
/// together with whatever else the application wrote in it (the transactional outbox).
///
/// The rules are [`Queue::enqueue`]'s, by the same code: the arguments are checked first
/// ([`Error::InvalidInput`]); a new id is stored `pending` at `now`; an existing id with the
/// same payload is [`Enqueued::Existing`] and changes nothing; with another payload it is
/// [`Error::Conflict`]. The history entry is written by the same trigger, in the same
/// transaction, so a rollback leaves neither the job nor its history. A refusal writes
/// nothing, and `tx` stays usable: the application decides whether to commit the rest.
///
/// The database must have retryq's schema — installed by [`crate::install`] on a file
/// that already has the application's tables, or by one [`Queue::open`] of the file —
/// otherwise this is [`Error::NotRetryq`] (or [`Error::NewerSchema`]).
///
/// It is a free function over a [`Transaction`] rather than a `Queue` method because no
/// `Queue` takes part: the connection, its transaction and its durability are the
/// application's. In particular the commit is only as durable as the connection's
/// `PRAGMA synchronous` makes it (SQLite's default, `FULL`, is what `Queue::open` uses); a
/// job whose commit was lost to a power cut was never enqueued, and neither was the
/// application's row. Begin `tx` as `IMMEDIATE`
/// ([`rusqlite::TransactionBehavior::Immediate`]), as every queue write does: a deferred
/// transaction that read first can fail with `SQLITE_BUSY` when it comes to write.
///
/// An [`Enqueue`](crate::Enqueue) is resolved against this host's clock
/// ([`SystemClock`](crate::SystemClock)): every process on a SQLite file runs on one host.
pub fn enqueue_in(tx: &Transaction<'_>, job: &(impl ToEnqueue + ?Sized)) -> Result<Enqueued> {
    enqueue_in_at(tx, job, &mut || crate::clock::SystemClock.now_ms().map_err(Error::Clock))
}

/// [`enqueue_in`], an [`Enqueue`](crate::Enqueue) resolved at `now`'s reading.
pub(crate) fn enqueue_in_at(
    tx: &Transaction<'_>,
    job: &(impl ToEnqueue + ?Sized),
    now: &mut dyn FnMut() -> Result<u64>,
) -> Result<Enqueued> {
    let job = job.new_job(now)?;
    job.validate()?;
    schema::require(tx)?;
    insert(tx, &job)
}

/// The one write of `enqueue` (and of each job of `enqueue_many`, `enqueue_bulk` and
/// `enqueue_in`) inside a write transaction, once the job is validated.
pub(super) fn insert(tx: &Transaction<'_>, job: &NewJob<'_>) -> Result<Enqueued> {
    let digest: Option<String> =
        tx.prepare_cached(TOMBSTONE_DIGEST)?.query_row([job.id], |r| r.get(0)).optional()?;
    if let Some(digest) = digest {
        return match digest == crate::job::job_digest(job.kind, job.payload) {
            true => Ok(Enqueued::Existing),
            false => Err(Error::Conflict { id: job.id.to_owned() }),
        };
    }
    let inserted = tx.prepare_cached(INSERT)?.execute(params![
        job.id,
        job.payload,
        job.max_attempts,
        job.deadline,
        job.now,
        job.not_before.unwrap_or(job.now),
        job.base_ms,
        job.cap_ms,
        job.queue.unwrap_or(crate::job::DEFAULT_QUEUE),
        job.priority.unwrap_or(0),
        job.kind
    ])?;
    if inserted == 1 {
        return Ok(Enqueued::New);
    }
    let same: Option<bool> = tx
        .prepare_cached(SAME_PAYLOAD)?
        .query_row(params![job.id, job.payload, job.kind], |r| r.get(0))
        .optional()?;
    match same {
        Some(true) => Ok(Enqueued::Existing),
        Some(false) => Err(Error::Conflict { id: job.id.to_owned() }),
        None => Err(Error::Corrupt(format!("job {:?} neither inserted nor found", job.id))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use super::*;
    use crate::Status;

    fn job(id: &'static str, payload: &'static str) -> NewJob<'static> {
        NewJob { id, payload, max_attempts: 3, deadline: 1000, now: 0, ..NewJob::default() }
    }

    #[test]
    fn a_new_job_is_pending_now_with_no_attempts() {
        let mut q = queue();
        let new = NewJob { now: 5, ..job("a", "p") };
        assert_eq!(q.enqueue(&new).expect("enqueue"), Enqueued::New);
        let got = q.get("a").expect("get").expect("stored");
        assert_eq!(
            (got.status, got.attempts, got.available_at, got.enqueued_at),
            (Status::Pending, 0, Some(5), 5)
        );
        assert_eq!((got.max_attempts, got.deadline, got.redrives, got.payload.as_str()), (3, 1000, 0, "p"));
    }

    #[test]
    fn re_enqueue_keeps_the_budget_and_a_different_payload_conflicts() {
        let mut q = queue();
        q.enqueue(&job("a", "p")).expect("enqueue");
        q.claim("w", 10).expect("claim").expect("claimed");
        let before = q.get("a").expect("get");
        let again = NewJob { max_attempts: 9, deadline: 5000, now: 20, ..job("a", "p") };
        assert_eq!(q.enqueue(&again).expect("re-enqueue"), Enqueued::Existing);
        assert_eq!(q.get("a").expect("get"), before);
        let err = q.enqueue(&NewJob { payload: "q", ..again }).unwrap_err();
        assert!(matches!(err, Error::Conflict { .. }), "{err}");
        assert_eq!(q.get("a").expect("get"), before);
    }

    #[test]
    fn invalid_input_comes_before_the_lookup_and_stores_nothing() {
        let mut q = queue();
        q.enqueue(&job("a", "p")).expect("enqueue");
        for (bad, field) in [
            (NewJob { id: "", ..job("b", "p") }, "id"),
            (NewJob { max_attempts: 0, ..job("b", "p") }, "max_attempts"),
            (NewJob { max_attempts: 1 << 31, ..job("b", "p") }, "max_attempts"),
            (NewJob { deadline: 0, ..job("b", "p") }, "deadline"),
            (NewJob { deadline: 7, now: 7, ..job("b", "p") }, "deadline"),
            (NewJob { now: 1 << 53, deadline: 1 << 53, ..job("b", "p") }, "now"),
            // An existing id with a bad argument is invalid_input, not existing or conflict.
            (NewJob { deadline: 0, ..job("a", "other") }, "deadline"),
        ] {
            let err = q.enqueue(&bad).unwrap_err();
            assert!(matches!(&err, Error::InvalidInput { field: f, .. } if *f == field), "{err}");
        }
        let big = "x".repeat(crate::MAX_PAYLOAD_BYTES + 1);
        let err = q.enqueue(&NewJob { payload: &big, ..job("b", "p") }).unwrap_err();
        assert!(matches!(&err, Error::InvalidInput { field: "payload", .. }), "{err}");
        assert_eq!(q.get("b").expect("get"), None);
        assert_eq!(q.stats(0).expect("stats").pending, 1);
    }

    #[test]
    fn a_schedule_and_an_own_backoff_are_stored_and_an_existing_id_keeps_its_own() {
        let mut q = queue();
        let scheduled = NewJob { not_before: Some(40), base_ms: Some(7), ..job("a", "p") };
        assert_eq!(q.enqueue(&scheduled).expect("enqueue"), Enqueued::New);
        let got = q.get("a").expect("get").expect("stored");
        assert_eq!(
            (got.available_at, got.not_before, got.base_ms, got.cap_ms, got.enqueued_at),
            (Some(40), 40, Some(7), None, 0)
        );
        let before = q.get("a").expect("get");
        let other = NewJob { not_before: Some(900), base_ms: None, cap_ms: Some(3), now: 5, ..job("a", "p") };
        assert_eq!(q.enqueue(&other).expect("re-enqueue"), Enqueued::Existing);
        assert_eq!(q.get("a").expect("get"), before, "an existing id keeps its schedule and backoff");
        assert_eq!(q.claim("w", 39).expect("claim"), None, "not before not_before");
        assert!(q.claim("w", 40).expect("claim").is_some());
    }

    #[test]
    fn not_before_is_checked_at_both_ends_even_for_an_existing_id() {
        let mut q = queue();
        q.enqueue(&job("a", "p")).expect("enqueue");
        for (id, not_before) in [("b", 9), ("b", 1000), ("a", 1000), ("b", 1 << 53)] {
            let bad = NewJob { now: 10, not_before: Some(not_before), ..job(id, "p") };
            let err = q.enqueue(&bad).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidInput { field: "not_before", .. }),
                "{id} {not_before}: {err}"
            );
        }
        for (field, bad) in [
            ("base_ms", NewJob { base_ms: Some(1 << 53), ..job("b", "p") }),
            ("cap_ms", NewJob { cap_ms: Some(1 << 53), ..job("b", "p") }),
        ] {
            let err = q.enqueue(&bad).unwrap_err();
            assert!(matches!(&err, Error::InvalidInput { field: f, .. } if *f == field), "{err}");
        }
        assert!(
            q.enqueue(&NewJob { now: 10, not_before: Some(999), ..job("b", "p") }).is_ok(),
            "deadline - 1"
        );
    }

    #[test]
    fn enqueue_many_applies_each_rule_per_job() {
        let mut q = queue();
        q.enqueue(&job("a", "p")).expect("enqueue");
        let results = q
            .enqueue_many(&[
                job("a", "p"),
                job("a", "q"),
                job("b", "p"),
                NewJob { max_attempts: 0, ..job("c", "p") },
            ])
            .expect("batch");
        assert!(matches!(results[0], Ok(Enqueued::Existing)));
        assert!(matches!(results[1], Err(Error::Conflict { .. })));
        assert!(matches!(results[2], Ok(Enqueued::New)));
        assert!(matches!(results[3], Err(Error::InvalidInput { field: "max_attempts", .. })));
        assert_eq!(q.stats(0).expect("stats").pending, 2);
    }
}
