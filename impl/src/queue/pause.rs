//! `pause`, `resume` and `run_now`: an operator stops a queue's jobs from starting, lets them
//! start again, or has one pending job run at once (SPEC 3.16 to 3.18).
//!
//! A pause is a row of `paused_queues` (schema 6), kept by the store and not by a worker, so
//! that every worker of every host stops picking the queue at once and a restart keeps it
//! (SPEC 6.40). The claim reads the row in its own transaction ([`is_paused`]); nothing else
//! looks at it, so a paused queue's leases, completions, reaps and deadlines go on (6.39).

use rusqlite::{OptionalExtension, Transaction, params};

use super::store::Queue;
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;

/// Pausing twice is pausing once: the first pause's time is kept (SPEC 3.16).
const PAUSE: &str = "INSERT INTO paused_queues (queue, paused_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING";

/// Resuming a queue that is not paused changes nothing (SPEC 3.17).
const RESUME: &str = "DELETE FROM paused_queues WHERE queue = ?1";

/// Whether one queue is paused: a lookup of the table's primary key.
pub(super) const IS_PAUSED: &str = "SELECT 1 FROM paused_queues WHERE queue = ?1";

/// The paused queues, by name (byte order: the table's key is its order).
const PAUSED: &str = "SELECT queue, paused_at FROM paused_queues ORDER BY queue";

/// How many queues are paused, of all or of one (`?1`): as many rows as operators paused.
pub(super) const PAUSED_COUNT: &str = "SELECT count(*) FROM paused_queues WHERE ?1 IS NULL OR queue = ?1";

/// A pending job before its deadline whose `available_at` is after `now` becomes due at
/// `now`; a job already due is left as it is (SPEC 6.41), and so writes no history entry.
const RUN_NOW: &str = "
    UPDATE jobs SET available_at = ?2, updated_at = ?2
    WHERE id = ?1 AND status = 'pending' AND deadline > ?2 AND available_at > ?2";

/// Why a run_now wrote nothing: the job as it stands.
const STANDING: &str = "SELECT status, available_at, deadline FROM jobs WHERE id = ?1";

impl Queue {
    /// Pauses `queue` (SPEC 3.16): no claim picks its jobs until it is resumed. Idempotent,
    /// for a name no job carries too; a second pause keeps the first one's time. Nothing else
    /// changes: its leases run on, and claims still reap its jobs that are due to end.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })?;
    /// q.pause("default", 5)?;
    /// assert!(q.claim("w1", 10)?.is_none());
    /// q.resume("default", 20)?;
    /// assert_eq!(q.claim("w1", 30)?.expect("due again").id(), "a");
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn pause(&mut self, queue: &str, now: u64) -> Result<()> {
        input::queue("queue", queue)?;
        input::int("now", now)?;
        self.write(|tx| {
            tx.prepare_cached(PAUSE)?.execute(params![queue, now])?;
            Ok(())
        })
    }

    /// Resumes `queue` (SPEC 3.17): its jobs are picked again, as they stand. Idempotent.
    pub fn resume(&mut self, queue: &str, now: u64) -> Result<()> {
        input::queue("queue", queue)?;
        input::int("now", now)?;
        self.write(|tx| {
            tx.prepare_cached(RESUME)?.execute([queue])?;
            Ok(())
        })
    }

    /// Makes the pending job `id` due at `now` (SPEC 3.18): its `available_at` becomes
    /// `min(available_at, now)`, which is returned. Nothing else of the job changes: not its
    /// attempts, deadline, priority, queue or `not_before`.
    ///
    /// Refused with nothing changed, in this order: [`Error::InvalidInput`];
    /// [`Error::NotFound`]; [`Error::Pruned`] for a pruned id; [`Error::NotPending`] for a
    /// leased, done or dead job; [`Error::DeadlinePassed`] for a pending job at or past its
    /// deadline (only a redrive grants time).
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, not_before: Some(50_000), ..NewJob::default() })?;
    /// assert!(q.claim("w1", 10)?.is_none());
    /// assert_eq!(q.run_now("a", 20)?, 20);
    /// assert_eq!(q.claim("w1", 30)?.expect("due").id(), "a");
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn run_now(&mut self, id: &str, now: u64) -> Result<u64> {
        input::name("id", id)?;
        input::int("now", now)?;
        self.write(|tx| run_now(tx, id, now))
    }

    /// The paused queues and the time each was paused, by name: an operator's view.
    pub fn paused(&self) -> Result<Vec<(String, u64)>> {
        self.read(|tx| {
            let mut statement = tx.prepare_cached(PAUSED)?;
            let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

/// Whether `queue` is paused, inside the caller's transaction (a claim's: SPEC 3.3.2).
pub(super) fn is_paused(tx: &Transaction<'_>, queue: &str) -> Result<bool> {
    Ok(tx.prepare_cached(IS_PAUSED)?.exists([queue])?)
}

/// The run_now inside the caller's transaction, once validated. A refusal writes nothing.
fn run_now(tx: &Transaction<'_>, id: &str, now: u64) -> Result<u64> {
    if tx.prepare_cached(RUN_NOW)?.execute(params![id, now])? == 1 {
        return Ok(now);
    }
    let standing: Option<(Status, Option<u64>, u64)> = tx
        .prepare_cached(STANDING)?
        .query_row([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    match standing {
        None if tx.prepare_cached(super::complete::PRUNED)?.exists([id])? => {
            Err(Error::Pruned { id: id.to_owned() })
        }
        None => Err(Error::NotFound { id: id.to_owned() }),
        Some((status @ (Status::Leased | Status::Done | Status::Dead), ..)) => {
            Err(Error::NotPending { id: id.to_owned(), status })
        }
        Some((Status::Pending, _, deadline)) if deadline <= now => {
            Err(Error::DeadlinePassed { id: id.to_owned() })
        }
        // Due already, at or before `now`: it keeps its place (SPEC 6.41).
        Some((Status::Pending, Some(available_at), _)) if available_at <= now => Ok(available_at),
        Some((status, ..)) => {
            Err(Error::Corrupt(format!("job {id:?} is {status} and a run_now did not apply")))
        }
    }
}
