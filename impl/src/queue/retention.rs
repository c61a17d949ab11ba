//! `prune` and `forget`: retention that keeps every promise (SPEC 3.14, 3.15).
//!
//! A prune removes ended jobs with their history and their attempts' records (SPEC 6.36) and
//! leaves a tombstone for each, so that an
//! id enqueued once is still never run again and every id is still counted (`stats`'
//! `pruned_done` and `pruned_dead`). The schema's triggers allow exactly these deletes (see
//! `ddl.rs`): a tombstone only for an ended job of the same id and end, a job row only once
//! its tombstone stands, history and attempts' records only once its job row is gone, a
//! tombstone only with nothing left of its job. The tallies (`tallies`, `tally_buckets`)
//! keep counting what the pruned jobs did: a prune adds to `pruned`, a forget to
//! `forgotten`, and neither takes anything off. A forget removes tombstones, and with them the ids' idempotency.

use rusqlite::{OptionalExtension, Transaction, params};

use super::store::Queue;
use crate::error::{Error, Result};
use crate::input;
use crate::job::job_digest;

/// The ended jobs to prune, the earliest ended first: a walk of `jobs_ended`.
const ENDED: &str = "
    SELECT seq, id, queue, payload, status, dead_reason, attempts, ended_at, kind FROM jobs
    WHERE status IN ('done', 'dead') AND ended_at <= ?1
    ORDER BY ended_at";

const TOMBSTONE: &str = "
    INSERT INTO tombstones (id, queue, digest, status, dead_reason, attempts, ended_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// The job row goes first (its trigger checks the tombstone), then its history and its
/// attempts' records (whose triggers check the row is gone).
const DELETE_JOB: &str = "DELETE FROM jobs WHERE seq = ?1";
const DELETE_HISTORY: &str = "DELETE FROM history WHERE job = ?1";
const DELETE_ATTEMPTS: &str = "DELETE FROM attempts WHERE job = ?1";

/// The `ended_at` of the `?2 + 1`-th earliest ended job at or before `?1`: where a prune of
/// at most `?2` jobs must stop short.
const NTH_ENDED: &str = "
    SELECT ended_at FROM jobs WHERE status IN ('done', 'dead') AND ended_at <= ?1
    ORDER BY ended_at LIMIT 1 OFFSET ?2";

const EARLIEST_ENDED: &str =
    "SELECT min(ended_at) FROM jobs WHERE status IN ('done', 'dead') AND ended_at <= ?1";

const FORGET: &str = "DELETE FROM tombstones WHERE ended_at <= ?1";

impl Queue {
    /// Removes every `done` or `dead` job, of every queue, whose `ended_at` is at or before
    /// `before`, with its history and its attempts' records, and leaves a tombstone for each
    /// (SPEC 3.14); how many. An open job is never pruned, whatever its deadline. After it,
    /// an enqueue of a pruned id is `existing` for the same payload and `conflict` for
    /// another, and the id never runs again; [`lookup`](Queue::lookup) shows the tombstone.
    /// [`Error::InvalidInput`] naming `before` when `before` > `now`.
    ///
    /// ```
    /// use retryq::{Enqueued, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// let job = NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() };
    /// q.enqueue(&job)?;
    /// q.cancel("a", 5)?;
    /// assert_eq!(q.prune(4, 10)?, 0, "ended at 5, after 4");
    /// assert_eq!(q.prune(5, 10)?, 1);
    /// assert_eq!(q.enqueue(&job)?, Enqueued::Existing, "never run again");
    /// assert_eq!(q.stats(10)?.pruned_dead, 1);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn prune(&mut self, before: u64, now: u64) -> Result<u64> {
        input::before(before, now)?;
        self.write(|tx| prune(tx, before))
    }

    /// See [`Backend::prune_at_most`](crate::Backend::prune_at_most): a prune whose
    /// transaction stays short, for a worker that prunes as it goes (`retryq work --retain`).
    pub fn prune_at_most(&mut self, before: u64, now: u64, limit: u64) -> Result<u64> {
        input::before(before, now)?;
        self.write(|tx| {
            let bound = bound(tx, before, limit)?;
            prune(tx, bound)
        })
    }

    /// Gives the pages prunes freed back to the file system (`PRAGMA incremental_vacuum`):
    /// how many pages the file had free before. Freed pages are reused by later writes
    /// anyway, so a store under steady retention stays the same size without this; it
    /// shrinks the file after a large one-off prune. A file created before schema 3 keeps
    /// its free pages inside until a `VACUUM` (its `auto_vacuum` is off).
    pub fn reclaim(&mut self) -> Result<u64> {
        let free: u64 = self.conn.pragma_query_value(None, "freelist_count", |row| row.get(0))?;
        // Each step of the pragma frees one page: step it to its end.
        let mut vacuum = self.conn.prepare("PRAGMA incremental_vacuum")?;
        let mut rows = vacuum.query([])?;
        while rows.next()?.is_some() {}
        Ok(free)
    }

    /// Removes every tombstone whose `ended_at` is at or before `before` (SPEC 3.15); how
    /// many. This ends idempotency for those ids: an enqueue of one stores a new job.
    /// [`Error::InvalidInput`] naming `before` when `before` > `now`.
    pub fn forget(&mut self, before: u64, now: u64) -> Result<u64> {
        input::before(before, now)?;
        self.write(|tx| Ok(tx.prepare_cached(FORGET)?.execute([before])? as u64))
    }
}

/// The largest `b` ≤ `before` whose ended jobs number at most `limit`, or, when the jobs
/// that ended at the earliest instant alone outnumber `limit`, that instant.
pub(super) fn bound(tx: &Transaction<'_>, before: u64, limit: u64) -> Result<u64> {
    let offset = i64::try_from(limit).unwrap_or(i64::MAX);
    let nth: Option<u64> =
        tx.prepare_cached(NTH_ENDED)?.query_row(params![before, offset], |r| r.get(0)).optional()?;
    let Some(nth) = nth else {
        return Ok(before);
    };
    let earliest: Option<u64> = tx.prepare_cached(EARLIEST_ENDED)?.query_row([before], |r| r.get(0))?;
    match earliest {
        Some(earliest) if earliest < nth => Ok(nth - 1),
        Some(earliest) => Ok(earliest),
        None => Err(Error::Corrupt("an ended job was found and then not".into())),
    }
}

/// The prune inside the caller's write transaction.
fn prune(tx: &Transaction<'_>, before: u64) -> Result<u64> {
    struct Ended {
        seq: i64,
        id: String,
        queue: String,
        payload: String,
        status: crate::Status,
        dead_reason: Option<crate::DeadReason>,
        attempts: u64,
        ended_at: u64,
        kind: String,
    }
    let ended: Vec<Ended> = tx
        .prepare_cached(ENDED)?
        .query_map([before], |row| {
            Ok(Ended {
                seq: row.get(0)?,
                id: row.get(1)?,
                queue: row.get(2)?,
                payload: row.get(3)?,
                status: row.get(4)?,
                dead_reason: row.get(5)?,
                attempts: row.get(6)?,
                ended_at: row.get(7)?,
                kind: row.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut tombstone = tx.prepare_cached(TOMBSTONE)?;
    let mut delete_job = tx.prepare_cached(DELETE_JOB)?;
    let mut delete_history = tx.prepare_cached(DELETE_HISTORY)?;
    let mut delete_attempts = tx.prepare_cached(DELETE_ATTEMPTS)?;
    for job in &ended {
        tombstone.execute(params![
            job.id,
            job.queue,
            job_digest(&job.kind, &job.payload),
            job.status,
            job.dead_reason,
            job.attempts,
            job.ended_at
        ])?;
        delete_job.execute([job.seq])?;
        delete_history.execute([&job.id])?;
        delete_attempts.execute([&job.id])?;
    }
    Ok(ended.len() as u64)
}

#[cfg(test)]
mod tests {
    use crate::{NewJob, Queue};

    #[test]
    fn a_prune_then_a_reclaim_shrinks_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let mut q = Queue::open(&path).expect("open");
        let payload = "x".repeat(4000);
        let ids: Vec<String> = (0..500).map(|n| format!("job-{n}")).collect();
        let jobs: Vec<NewJob<'_>> = ids
            .iter()
            .map(|id| NewJob {
                id,
                payload: &payload,
                max_attempts: 1,
                deadline: 1_000,
                now: 0,
                ..NewJob::default()
            })
            .collect();
        q.enqueue_many(&jobs).expect("enqueue");
        for id in &ids {
            q.cancel(id, 1).expect("cancel");
        }
        q.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").expect("checkpoint");
        let full = std::fs::metadata(&path).expect("size").len();
        assert_eq!(q.prune(1, 2).expect("prune"), 500);
        assert!(q.reclaim().expect("reclaim") > 400, "the payloads' pages were freed");
        q.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").expect("checkpoint");
        let after = std::fs::metadata(&path).expect("size").len();
        assert!(after * 4 < full, "{full} bytes before, {after} after");
        assert_eq!(q.stats(2).expect("stats").pruned_dead, 500);
        assert!(q.audit().expect("audit").is_clean());
    }

    #[test]
    fn prune_at_most_stops_at_a_whole_instant() {
        let mut q = Queue::open_in_memory().expect("queue");
        let ids: Vec<String> = (0..5).map(|n| format!("j{n}")).collect();
        for (n, id) in ids.iter().enumerate() {
            q.enqueue(&NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: 100,
                now: 0,
                ..NewJob::default()
            })
            .expect("enqueue");
            // j0 and j1 end at 10, j2 and j3 at 11, j4 at 12.
            q.cancel(id, 10 + n as u64 / 2).expect("cancel");
        }
        // Three would split the jobs that ended at 11: the prune stops at 10.
        assert_eq!(q.prune_at_most(20, 20, 3).expect("prune"), 2);
        // One is fewer than the jobs that ended at the earliest instant: those two go whole.
        assert_eq!(q.prune_at_most(20, 20, 1).expect("prune"), 2);
        assert_eq!(q.prune_at_most(20, 20, 10).expect("prune"), 1);
        assert_eq!(q.prune_at_most(20, 20, 10).expect("prune"), 0);
        let err = q.prune_at_most(21, 20, 10).unwrap_err();
        assert!(err.to_string().contains("before"), "{err}");
    }
}
