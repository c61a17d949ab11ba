//! `prune`, `prune_at_most` and `forget`: an operator's retention (SPEC 3.14, 3.15, 6.35).
//!
//! A prune is four statements in one transaction, each a step the schema's triggers allow
//! only after the one before it (`ddl.rs`): the ended jobs are locked and their tombstones
//! written (a tombstone only of an ended job of the same id, end, queue, attempts and payload
//! digest), then the jobs deleted (a job only once done or dead, with its tombstone
//! standing), then their history and their attempts' records (only of an id that has a
//! tombstone and no job). The tallies stay: a prune adds to them, as a forget does. Locking
//! first keeps a concurrent redrive from taking a job out of `dead` between its tombstone
//! and its delete: the redrive waits, then finds no job and answers `pruned`.
//!
//! Neither prune nor forget touches an open job, so neither can make a job due or change
//! what a reap does: neither takes the claims' turn (SPEC 6.26). Both take the retention's
//! key alone first, which every write that ends a job holds shared, so that the ended jobs
//! they decide on are those committed when they commit (`turn.rs`, "Why prune and forget take a turn of their own").

use super::ddl::job_digest;
use super::store::{PgQueue, Turn, Tx};
use super::value::big;
use crate::error::{Error, Result};
use crate::input;

/// Every done or dead job, of every queue, ended at or before `$1`, locked, and its
/// tombstone written: the ids, in the order of first enqueue.
const ENTOMB: &str = concat!(
    r#"
    WITH ended AS (
        SELECT id, queue, payload, kind, status, dead_reason, attempts, ended_at, seq FROM jobs
        WHERE status IN ('done', 'dead') AND ended_at <= $1
        ORDER BY seq
        FOR UPDATE)
    INSERT INTO tombstones (id, queue, digest, status, dead_reason, attempts, ended_at)
    SELECT id, queue, "#,
    job_digest!(),
    r#", status, dead_reason, attempts, ended_at
    FROM ended ORDER BY seq
    RETURNING id"#
);

/// The jobs just entombed.
const DELETE_JOBS: &str = "DELETE FROM jobs WHERE id = ANY($1)";

/// Their history, once the jobs are gone.
const DELETE_HISTORY: &str = "DELETE FROM history WHERE job = ANY($1)";

/// Their attempts' records, likewise.
const DELETE_ATTEMPTS: &str = "DELETE FROM attempts WHERE job = ANY($1)";

/// The `ended_at` of the job at place `$2` (from 0) among the ended jobs with `ended_at` ≤
/// `$1`, in order of `ended_at`: one walk of `jobs_ended`, `$2` entries long.
const NTH_ENDED: &str = "
    SELECT ended_at FROM jobs WHERE status IN ('done', 'dead') AND ended_at <= $1
    ORDER BY ended_at OFFSET $2 LIMIT 1";

/// The earliest end among the ended jobs.
const FIRST_ENDED: &str = "SELECT min(ended_at) FROM jobs WHERE status IN ('done', 'dead')";

/// Every tombstone of a job that ended at or before `$1`.
const FORGET: &str = "DELETE FROM tombstones WHERE ended_at <= $1";

impl PgQueue {
    /// [`Queue::prune`](crate::Queue::prune) on PostgreSQL: every done or dead job, of every
    /// queue, with `ended_at` ≤ `before` leaves a tombstone and goes with its history and its
    /// attempts' records, in one transaction; how many. Refused only for its arguments (`before` ≤ `now`).
    pub fn prune(&mut self, before: u64, now: u64) -> Result<u64> {
        let before = big("before", input::before(before, now)?)?;
        self.write(Turn::Retention, |tx| prune(tx, before))
    }

    /// [`Backend::prune_at_most`](crate::Backend::prune_at_most) on PostgreSQL: exactly
    /// `prune(b, now)` for the largest `b` ≤ `before` whose jobs number at most `limit` — or,
    /// when the jobs that ended at the earliest instant alone outnumber `limit`, those jobs —
    /// in one transaction; how many.
    pub fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64> {
        let before = big("before", input::before(before, now)?)?;
        let offset = i64::try_from(limit).unwrap_or(i64::MAX);
        self.write(Turn::Retention, |tx| {
            let Some(row) = tx.query_opt(NTH_ENDED, &[&before, &offset])? else {
                // No more than `limit` jobs ended by `before`: all of them.
                return prune(tx, before);
            };
            // The job past the limit ended at `past`: every one that ended before it, unless
            // they are none, and then those of the earliest instant, all of them.
            let past: i64 = row.try_get(0)?;
            let first: Option<i64> = tx.query_one(FIRST_ENDED, &[])?.try_get(0)?;
            let bound = match first {
                Some(first) if first < past => past - 1,
                _ => past,
            };
            prune(tx, bound)
        })
    }

    /// [`Queue::forget`](crate::Queue::forget) on PostgreSQL: every tombstone with
    /// `ended_at` ≤ `before` is removed; how many. Refused only for its arguments.
    pub fn forget(&mut self, before: u64, now: u64) -> Result<u64> {
        let before = big("before", input::before(before, now)?)?;
        self.write(Turn::Retention, |tx| tx.execute(FORGET, &[&before]))
    }
}

/// The prune inside the caller's transaction: the steps, in the order the triggers allow
/// them.
fn prune(tx: &mut Tx<'_>, before: i64) -> Result<u64> {
    let ids: Vec<String> =
        tx.query(ENTOMB, &[&before])?.iter().map(|row| row.try_get(0)).collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Ok(0);
    }
    let deleted = tx.execute(DELETE_JOBS, &[&ids])?;
    if deleted != ids.len() as u64 {
        return Err(Error::Corrupt(format!("a prune entombed {} jobs and deleted {deleted}", ids.len())));
    }
    tx.execute(DELETE_HISTORY, &[&ids])?;
    tx.execute(DELETE_ATTEMPTS, &[&ids])?;
    Ok(deleted)
}
