//! The floor: what SQLite itself does for the same three writes per job, with the same
//! durability and no queue logic — no budget, no reaping, no fencing, no history, no checks.
//!
//! A job is inserted, leased by the same kind of pick (the smallest `available_at` among the
//! pending), and marked done, each statement in its own transaction (autocommit), on a WAL
//! file with `synchronous = FULL`. The queue is judged by how close it comes to this.
//!
//! The batched floor ([`Floor::batch`]) runs the same three statements `k` jobs at a time:
//! `k` inserts in one transaction, `k` picks in the next, `k` dones in the last, so that the
//! queue's `enqueue_many`, `claim_batch` and `complete_batch` (three commits for `k` jobs)
//! are judged against SQLite doing the same work under the same three commits.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Statement, Transaction, TransactionBehavior, params};

use crate::BenchError;

const DDL: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,
    payload      TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    attempts     INTEGER NOT NULL,
    available_at INTEGER,
    owner        TEXT
);
CREATE INDEX IF NOT EXISTS jobs_due ON jobs (available_at) WHERE status = 'pending';
";

const INSERT: &str = "
    INSERT INTO jobs (id, payload, status, attempts, available_at) VALUES (?1, ?2, 'pending', 0, ?3)";

const CLAIM: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = ?2, available_at = ?3
    WHERE seq = (SELECT seq FROM jobs WHERE status = 'pending' AND available_at <= ?1
                 ORDER BY available_at, seq LIMIT 1)
    RETURNING id";

const DONE: &str = "UPDATE jobs SET status = 'done', available_at = NULL, owner = NULL WHERE id = ?1";

/// Opens (creating if needed) a floor database: WAL, `synchronous = FULL`, the same busy
/// timeout as the queue.
pub fn open(path: &Path) -> Result<Connection, BenchError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(BenchError::Setup(format!("floor database stayed in journal_mode {mode}")));
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(DDL)?;
    Ok(conn)
}

/// The three prepared statements of one floor worker.
pub struct Floor<'c> {
    conn: &'c Connection,
    insert: Statement<'c>,
    claim: Statement<'c>,
    done: Statement<'c>,
}

impl<'c> Floor<'c> {
    /// Prepares the three statements once, so that the floor times only their execution.
    pub fn new(conn: &'c Connection) -> Result<Floor<'c>, BenchError> {
        Ok(Floor {
            conn,
            insert: conn.prepare(INSERT)?,
            claim: conn.prepare(CLAIM)?,
            done: conn.prepare(DONE)?,
        })
    }

    /// `ids.len()` jobs through, three commits in all: every insert in one transaction,
    /// every pick in the next, every done in the last, each taken as the queue takes its
    /// transactions (`BEGIN IMMEDIATE`). Returns how many were leased and done: fewer than
    /// `ids.len()` only if another process took some.
    pub fn batch(
        &mut self,
        ids: &[String],
        payload: &str,
        worker: &str,
        now: u64,
    ) -> Result<usize, BenchError> {
        let tx = Transaction::new_unchecked(self.conn, TransactionBehavior::Immediate)?;
        for id in ids {
            self.insert.execute(params![id, payload, now])?;
        }
        tx.commit()?;
        let tx = Transaction::new_unchecked(self.conn, TransactionBehavior::Immediate)?;
        let mut leased = Vec::with_capacity(ids.len());
        for _ in ids {
            let pick: Option<String> =
                self.claim.query_row(params![now, worker, now + 30_000], |row| row.get(0)).optional()?;
            match pick {
                Some(id) => leased.push(id),
                None => break,
            }
        }
        tx.commit()?;
        let tx = Transaction::new_unchecked(self.conn, TransactionBehavior::Immediate)?;
        for id in &leased {
            self.done.execute([id])?;
        }
        tx.commit()?;
        Ok(leased.len())
    }

    /// One job through: insert, lease, done — three commits. `false` if the pick found
    /// nothing (another process took the last due job).
    pub fn cycle(&mut self, id: &str, payload: &str, worker: &str, now: u64) -> Result<bool, BenchError> {
        self.insert.execute(params![id, payload, now])?;
        let leased: Option<String> =
            self.claim.query_row(params![now, worker, now + 30_000], |row| row.get(0)).optional()?;
        let Some(leased) = leased else { return Ok(false) };
        self.done.execute([leased])?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_takes_a_job_to_done_durably() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = open(&dir.path().join("floor.db")).expect("open");
        let sync: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0)).expect("pragma");
        assert_eq!(sync, 2, "synchronous = FULL");
        let mut floor = Floor::new(&conn).expect("prepare");
        assert!(floor.cycle("a", "p", "w", 5).expect("cycle"));
        assert!(floor.cycle("b", "p", "w", 6).expect("cycle"));
        let done: i64 = conn
            .query_row("SELECT count(*) FROM jobs WHERE status = 'done' AND attempts = 1", [], |r| r.get(0))
            .expect("count");
        assert_eq!(done, 2);
    }

    #[test]
    fn a_batch_takes_every_job_to_done_in_three_commits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = open(&dir.path().join("floor.db")).expect("open");
        let mut floor = Floor::new(&conn).expect("prepare");
        let ids: Vec<String> = (0..5).map(|i| format!("job-{i}")).collect();
        assert_eq!(floor.batch(&ids, "p", "w", 5).expect("batch"), 5);
        let done: i64 = conn
            .query_row("SELECT count(*) FROM jobs WHERE status = 'done' AND attempts = 1", [], |r| r.get(0))
            .expect("count");
        assert_eq!(done, 5);
        assert!(conn.is_autocommit(), "every transaction of the batch ended");
    }
}
