//! `enqueue`: accept a job once, by its business id.

use super::store::{PgQueue, Turn, Tx};
use super::turn;
use super::value::{big, opt_big};
use crate::error::{Error, Result};
use crate::queue::enqueue::{Enqueued, NewJob};

/// A new job is pending from its `not_before` (`$6`, already `now` when none was given); an
/// existing id is left exactly as it is. `ON CONFLICT DO NOTHING` waits for a concurrent
/// insert of the same id to commit or roll back, so two enqueues of one new id store it
/// once: the second finds the first's row and answers as for any existing id. The row is
/// made from the shared turn's row, so the statement takes the turn before it writes, also
/// when it runs on its own (`turn.rs`).
const INSERT: &str = concat!(
    "
    INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                      redrives, enqueued_at, updated_at, not_before, base_ms, cap_ms)
    SELECT $1, $2, 'pending', 0, $3, $6, $4, 0, $5, $5, $6, $7, $8
    FROM pg_advisory_xact_lock_shared(",
    turn::key!(),
    ") AS turn
    ON CONFLICT (id) DO NOTHING"
);

/// Byte for byte, as SPEC 3.2 compares payloads (`bytea` equality).
const SAME_PAYLOAD: &str = "SELECT payload = $2 FROM jobs WHERE id = $1";

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
        job.validate()?;
        // A new id is the common case: the insert alone, as its own transaction. An existing
        // one is looked at in a transaction of its own (its payload never changes).
        let payload = job.payload.as_bytes();
        let (max_attempts, deadline, now) =
            (big("max_attempts", job.max_attempts)?, big("deadline", job.deadline)?, big("now", job.now)?);
        let (not_before, base_ms, cap_ms) = (
            big("not_before", job.not_before.unwrap_or(job.now))?,
            opt_big("base_ms", job.base_ms)?,
            opt_big("cap_ms", job.cap_ms)?,
        );
        let params: [&(dyn postgres::types::ToSql + Sync); 8] =
            [&job.id, &payload, &max_attempts, &deadline, &now, &not_before, &base_ms, &cap_ms];
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
                let result = job.validate().and_then(|()| insert(tx, job));
                if let Err(Error::Postgres(e)) = result {
                    return Err(Error::Postgres(e));
                }
                results.push(result);
            }
            Ok(results)
        })
    }
}

/// The one write of `enqueue` (and of each job of `enqueue_many`) inside a write
/// transaction, once the job is validated.
pub(super) fn insert(tx: &mut Tx<'_>, job: &NewJob<'_>) -> Result<Enqueued> {
    let payload = job.payload.as_bytes();
    let inserted = tx.execute(
        INSERT,
        &[
            &job.id,
            &payload,
            &big("max_attempts", job.max_attempts)?,
            &big("deadline", job.deadline)?,
            &big("now", job.now)?,
            &big("not_before", job.not_before.unwrap_or(job.now))?,
            &opt_big("base_ms", job.base_ms)?,
            &opt_big("cap_ms", job.cap_ms)?,
        ],
    )?;
    if inserted == 1 {
        return Ok(Enqueued::New);
    }
    let same = tx.query_opt(SAME_PAYLOAD, &[&job.id, &payload])?;
    match same.map(|row| row.try_get::<_, bool>(0)).transpose()? {
        Some(true) => Ok(Enqueued::Existing),
        Some(false) => Err(Error::Conflict { id: job.id.to_owned() }),
        None => Err(Error::Corrupt(format!("job {:?} neither inserted nor found", job.id))),
    }
}
