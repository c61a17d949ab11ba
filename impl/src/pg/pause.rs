//! `pause`, `resume` and `run_now` on PostgreSQL (SPEC 3.16 to 3.18), as `queue/pause.rs` does
//! them on SQLite: a pause is a row of `paused_queues`, which every claim's pick reads
//! (`claim.rs`).
//!
//! All three take the claims' turn shared (`turn.rs`, SPEC 6.26): a resume and a run_now can
//! make a job due, and a pause can make one not claimable, so none of them commits while a
//! claim decides — a claim sees a pause or a resume either wholly before it or wholly after.

use super::store::{PgQueue, Turn, Tx};
use super::value::{big, uint, word};
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;

/// Pausing twice is pausing once: the first pause's time is kept (SPEC 3.16).
const PAUSE: &str =
    "INSERT INTO paused_queues (queue, paused_at) VALUES ($1, $2) ON CONFLICT (queue) DO NOTHING";

/// Resuming a queue that is not paused changes nothing (SPEC 3.17).
const RESUME: &str = "DELETE FROM paused_queues WHERE queue = $1";

/// A resume wakes the workers that listen on the schema's channel, at its commit, as an
/// enqueue into the queue does (`ddl.rs`'s `WAKE`).
const WAKE: &str = "SELECT pg_notify('retryq_' || current_schema()::regnamespace::oid, $1)";

/// The paused queues, by name in byte order.
const PAUSED: &str = r#"SELECT queue, paused_at FROM paused_queues ORDER BY queue COLLATE "C""#;

/// How many queues are paused, of all or of one (`$1`).
pub(super) const PAUSED_COUNT: &str =
    "SELECT count(*) FROM paused_queues WHERE $1::text IS NULL OR queue = $1";

/// A pending job before its deadline whose `available_at` is after `now` becomes due at
/// `now`; a job already due is left as it is (SPEC 6.41). The notes' trigger wakes the
/// workers of its queue, as for any job made pending. Pending is said as
/// [`CANCEL`](super::cancel::CANCEL) says it, so that the row is reached by its id.
pub(super) const RUN_NOW: &str = "
    UPDATE jobs SET available_at = $2, updated_at = $2
    WHERE id = $1 AND (owner IS NULL OR claimed_at IS NULL) AND deadline > $2 AND available_at > $2";

/// Why a run_now wrote nothing: the job as it stands, or whether the id is a pruned one's.
const STANDING: &str = "
    SELECT j.status, j.available_at, j.deadline, EXISTS (SELECT 1 FROM tombstones WHERE id = $1)
    FROM (SELECT 1) AS one LEFT JOIN jobs j ON j.id = $1";

impl PgQueue {
    /// [`Queue::pause`](crate::Queue::pause) on PostgreSQL.
    pub fn pause(&mut self, queue: &str, now: u64) -> Result<()> {
        input::queue("queue", queue)?;
        input::int("now", now)?;
        let at = big("now", now)?;
        self.write(Turn::Shared, |tx| {
            tx.execute(PAUSE, &[&queue, &at])?;
            Ok(())
        })
    }

    /// [`Queue::resume`](crate::Queue::resume) on PostgreSQL; the queue's idle workers are
    /// woken at its commit.
    pub fn resume(&mut self, queue: &str, now: u64) -> Result<()> {
        input::queue("queue", queue)?;
        input::int("now", now)?;
        self.write(Turn::Shared, |tx| {
            if tx.execute(RESUME, &[&queue])? == 1 {
                tx.query_one(WAKE, &[&queue])?;
            }
            Ok(())
        })
    }

    /// [`Queue::run_now`](crate::Queue::run_now) on PostgreSQL: the same answers and
    /// refusals, in the same order.
    pub fn run_now(&mut self, id: &str, now: u64) -> Result<u64> {
        input::name("id", id)?;
        input::int("now", now)?;
        let at = big("now", now)?;
        self.write(Turn::Shared, |tx| run_now(tx, id, now, at))
    }

    /// [`Queue::paused`](crate::Queue::paused) on PostgreSQL.
    pub fn paused(&self) -> Result<Vec<(String, u64)>> {
        self.read(|tx| {
            tx.query(PAUSED, &[])?.iter().map(|row| Ok((row.try_get(0)?, uint(row, 1)?))).collect()
        })
    }
}

/// How many times a run_now starts over when the row changed between its two reads (see
/// `cancel.rs`).
const STARTS: usize = 4;

/// The run_now inside the caller's transaction, once validated. A refusal writes nothing.
fn run_now(tx: &mut Tx<'_>, id: &str, now: u64, at: i64) -> Result<u64> {
    for _ in 0..STARTS {
        if tx.execute(RUN_NOW, &[&id, &at])? == 1 {
            return Ok(now);
        }
        let row = tx.query_one(STANDING, &[&id])?;
        let status: Option<String> = row.try_get(0)?;
        if status.is_none() {
            let pruned: bool = row.try_get(3)?;
            return Err(match pruned {
                true => Error::Pruned { id: id.to_owned() },
                false => Error::NotFound { id: id.to_owned() },
            });
        }
        let deadline = uint(&row, 2)?;
        match word(&row, 0)? {
            status @ (Status::Leased | Status::Done | Status::Dead) => {
                return Err(Error::NotPending { id: id.to_owned(), status });
            }
            Status::Pending if deadline <= now => return Err(Error::DeadlinePassed { id: id.to_owned() }),
            // Due already, at or before `now`: it keeps its place (SPEC 6.41).
            Status::Pending => match uint(&row, 1)? {
                available_at if available_at <= now => return Ok(available_at),
                // Made pending again, later, since the update read it (a retry): start over.
                _ => {}
            },
        }
    }
    Err(Error::Corrupt(format!("job {id:?} changed under a run_now {STARTS} times")))
}
