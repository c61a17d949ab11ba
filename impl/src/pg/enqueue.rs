//! `enqueue`: accept a job once, by its business id — or, for a pruned id, answer by its
//! tombstone's digest (SPEC 3.2, 6.29).

use super::store::{PgQueue, Turn, Tx};
use super::turn;
use super::value::{big, opt_big};
use crate::error::{Error, Result};
use crate::input;
use crate::job::{DEFAULT_QUEUE, job_digest};
use crate::queue::enqueue::{Enqueued, NewJob};

/// How many times an enqueue looks again when the id's job was pruned between its insert
/// and its read (see [`insert`]).
pub(super) const STARTS: usize = 4;

/// A new job is pending from its `not_before` (`$6`, already `now` when none was given), in
/// its queue (`$9`) at its priority (`$10`); an existing id is left exactly as it is, and so
/// is a pruned one (no row: its tombstone answers). `ON CONFLICT DO NOTHING` waits for a
/// concurrent insert of the same id to commit or roll back, so two enqueues of one new id
/// store it once: the second finds the first's row and answers as for any existing id. The
/// row is made from the shared turn's row, so the statement takes the turn before it writes,
/// also when it runs on its own (`turn.rs`).
pub(super) const INSERT: &str = concat!(
    "
    INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                      redrives, enqueued_at, updated_at, not_before, base_ms, cap_ms, queue,
                      priority, cancel_requested, kind)
    SELECT $1, $2, 'pending', 0, $3, $6, $4, 0, $5, $5, $6, $7, $8, $9, $10, false, $11
    FROM pg_advisory_xact_lock_shared(",
    turn::key!(),
    ") AS turn
    WHERE NOT EXISTS (SELECT 1 FROM tombstones WHERE id = $1)
    ON CONFLICT (id) DO NOTHING"
);

/// A pruned id's tombstone: its kind's and payload's digest decides `existing` or `conflict`.
pub(super) const TOMBSTONE_DIGEST: &str = "SELECT digest FROM tombstones WHERE id = $1";

/// Byte for byte, as SPEC 3.2 compares payloads and kinds (`bytea` equality, and `text` in
/// the "C" collation).
pub(super) const SAME_PAYLOAD: &str = "SELECT payload = $2 AND kind = $3 FROM jobs WHERE id = $1";

impl PgQueue {
    /// [`Queue::enqueue`](crate::Queue::enqueue) on PostgreSQL: a new id is stored
    /// `pending`, an existing one with the same payload is [`Enqueued::Existing`] and
    /// changes nothing, one with another payload is [`Error::Conflict`]; every argument is
    /// checked first.
    ///
    /// An [`Enqueue`](crate::Enqueue) is resolved against the queue's clock first (by
    /// default the server's).
    pub fn enqueue(&mut self, job: &(impl crate::queue::enqueue::ToEnqueue + ?Sized)) -> Result<Enqueued> {
        let clock = std::sync::Arc::clone(&self.sources.clock);
        let job = &job.new_job(&mut || crate::clock::store_now(&*self, &*clock))?;
        validate(job)?;
        // A new id is the common case: the insert alone, as its own transaction. An existing
        // or pruned one is looked at in a transaction of its own (its payload, and its
        // tombstone's digest, never change).
        let row = Row::of(job)?;
        let params = row.params();
        if self.single(INSERT, &params)? == 1 {
            return Ok(Enqueued::New);
        }
        self.write(Turn::Shared, |tx| insert(tx, job))
    }

    /// [`Queue::enqueue_many`](crate::Queue::enqueue_many) on PostgreSQL: one transaction,
    /// each job answered on its own; only a storage failure fails the whole batch.
    pub fn enqueue_many(&mut self, jobs: &[NewJob<'_>]) -> Result<Vec<Result<Enqueued>>> {
        self.write(Turn::Shared, |tx| {
            let mut results = Vec::with_capacity(jobs.len());
            for job in jobs {
                let result = validate(job).and_then(|()| insert(tx, job));
                if let Err(Error::Postgres(e)) = result {
                    return Err(Error::Postgres(e));
                }
                results.push(result);
            }
            Ok(results)
        })
    }
}

/// Every argument of `job` checked (SPEC 3.1), its queue and priority with the rest.
pub(super) fn validate(job: &NewJob<'_>) -> Result<()> {
    job.validate()?;
    if let Some(queue) = job.queue {
        input::queue("queue", queue)?;
    }
    if let Some(priority) = job.priority {
        input::priority(priority)?;
    }
    Ok(())
}

/// The queue and the priority a new job of `job` gets: the given ones, else the defaults
/// (SPEC 1.6).
pub(super) fn place<'a>(job: &NewJob<'a>) -> Result<(&'a str, i16)> {
    let priority = input::priority(job.priority.unwrap_or(0))?;
    Ok((job.queue.unwrap_or(DEFAULT_QUEUE), i16::from(priority)))
}

/// The one write of `enqueue` (and of each job of `enqueue_many` and `enqueue_in`, and of a
/// bulk import's job whose id changed hands: `bulk.rs`) inside a write transaction, once the
/// job is validated. A pruned id answers by its tombstone; a job pruned between the insert
/// (which found it) and the read (which did not) is looked at again, and then its tombstone
/// answers.
pub(super) fn insert(tx: &mut Tx<'_>, job: &NewJob<'_>) -> Result<Enqueued> {
    let row = Row::of(job)?;
    for _ in 0..STARTS {
        if let Some(found) = tx.query_opt(TOMBSTONE_DIGEST, &[&job.id])? {
            return by_tombstone(job, &found.try_get::<_, String>(0)?);
        }
        if tx.execute(INSERT, &row.params())? == 1 {
            return Ok(Enqueued::New);
        }
        let same = tx.query_opt(SAME_PAYLOAD, &[&job.id, &row.payload, &row.kind])?;
        if let Some(answer) = by_payload(job, same.map(|found| found.try_get::<_, bool>(0)).transpose()?) {
            return answer;
        }
    }
    Err(gave_up(job))
}

/// `INSERT`'s eleven parameters, `$1` … `$11` in its order, as PostgreSQL types: what every
/// driver binds (the `postgres` client here, `tokio-postgres` and sqlx in `outside.rs`).
pub(super) struct Row<'a> {
    pub(super) id: &'a str,
    pub(super) payload: &'a [u8],
    pub(super) max_attempts: i64,
    pub(super) deadline: i64,
    pub(super) now: i64,
    pub(super) not_before: i64,
    pub(super) base_ms: Option<i64>,
    pub(super) cap_ms: Option<i64>,
    pub(super) queue: &'a str,
    pub(super) priority: i16,
    pub(super) kind: &'a str,
}

impl<'a> Row<'a> {
    /// The row of a validated `job`.
    pub(super) fn of(job: &NewJob<'a>) -> Result<Row<'a>> {
        let (queue, priority) = place(job)?;
        Ok(Row {
            id: job.id,
            payload: job.payload.as_bytes(),
            max_attempts: big("max_attempts", job.max_attempts)?,
            deadline: big("deadline", job.deadline)?,
            now: big("now", job.now)?,
            not_before: big("not_before", job.not_before.unwrap_or(job.now))?,
            base_ms: opt_big("base_ms", job.base_ms)?,
            cap_ms: opt_big("cap_ms", job.cap_ms)?,
            queue,
            priority,
            kind: job.kind,
        })
    }

    /// The parameters for the `postgres` and `tokio-postgres` clients.
    pub(super) fn params(&self) -> [&(dyn postgres::types::ToSql + Sync); 11] {
        [
            &self.id,
            &self.payload,
            &self.max_attempts,
            &self.deadline,
            &self.now,
            &self.not_before,
            &self.base_ms,
            &self.cap_ms,
            &self.queue,
            &self.priority,
            &self.kind,
        ]
    }
}

/// The answer to an enqueue of a pruned id, by its tombstone's `digest` (SPEC 6.29).
pub(super) fn by_tombstone(job: &NewJob<'_>, digest: &str) -> Result<Enqueued> {
    match digest == job_digest(job.kind, job.payload) {
        true => Ok(Enqueued::Existing),
        false => Err(Error::Conflict { id: job.id.to_owned() }),
    }
}

/// The answer to an enqueue whose insert found the id taken, by `SAME_PAYLOAD`'s row; `None`
/// when the job was pruned since the insert looked, and the enqueue looks again.
pub(super) fn by_payload(job: &NewJob<'_>, same: Option<bool>) -> Option<Result<Enqueued>> {
    match same? {
        true => Some(Ok(Enqueued::Existing)),
        false => Some(Err(Error::Conflict { id: job.id.to_owned() })),
    }
}

/// An id neither inserted nor found [`STARTS`] times: pruned and enqueued again under every
/// look, which a store at rest never does.
pub(super) fn gave_up(job: &NewJob<'_>) -> Error {
    Error::Corrupt(format!("job {:?} neither inserted nor found {STARTS} times", job.id))
}
