//! `attempts` and `tallies`: the operators' notes schema 4 keeps (SPEC 6.36), read.
//!
//! Both are written by the schema's triggers, never by the operations (`ddl.rs`); reading
//! them changes nothing and costs no more with more jobs: a job's records are one walk of
//! its key, the tallies a few rows per queue.

use rusqlite::params;

use super::store::Queue;
use crate::error::Result;
use crate::input;
use crate::notes::{AttemptRecord, BucketRow, CounterRow, Tallies, assemble};

/// A job's ended attempts, oldest first; the attempt under way (no end yet) is not one.
const ATTEMPTS: &str = "
    SELECT attempt, claimed_at, ended_at, outcome, error, node, worker FROM attempts
    WHERE job = ?1 AND ended_at IS NOT NULL ORDER BY attempt";

const COUNTERS: &str = "SELECT metric, queue, kind, label, n FROM tallies";

const BUCKETS: &str = "SELECT metric, queue, kind, label, le, n, sum_ms FROM tally_buckets";

impl Queue {
    /// The records of the job's ended attempts, oldest first: when each was claimed and
    /// ended, by whom, what ended it (`ok`, `retryable`, `permanent` — the holder's report —
    /// or `lease expired`), and its error text and node (its report's, or its last note on
    /// the live lease). Empty for an unknown or pruned id, and for a job whose only attempt
    /// is still under way. Notes, not state (SPEC 6.36): the store writes them with each
    /// transition, and a prune removes them with the job.
    ///
    /// ```
    /// use retryq::{Completion, NewJob, Outcome, Queue, Report};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })?;
    /// let first = q.claim("w1", 10)?.expect("due");
    /// let report = Report::with_error(Outcome::Retryable, "HTTP 503");
    /// q.complete(&Completion::new(&first.lease, report, 25, 0.0))?;
    /// let second = q.claim("w2", 30)?.expect("due again");
    /// q.complete(&Completion::new(&second.lease, Outcome::Ok, 31, 0.0))?;
    /// let records = q.attempts("a")?;
    /// assert_eq!(records.len(), 2);
    /// assert_eq!((records[0].outcome.as_str(), records[0].error.as_deref()), ("retryable", Some("HTTP 503")));
    /// assert_eq!((records[0].claimed_at, records[0].ended_at), (10, 25));
    /// assert_eq!((records[1].outcome.as_str(), records[1].worker.as_deref()), ("ok", Some("w2")));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>> {
        input::name("id", id)?;
        self.read(|tx| {
            let mut statement = tx.prepare_cached(ATTEMPTS)?;
            let rows = statement.query_map(params![id], |row| {
                Ok(AttemptRecord {
                    attempt: row.get(0)?,
                    claimed_at: row.get(1)?,
                    ended_at: row.get(2)?,
                    outcome: row.get(3)?,
                    error: row.get(4)?,
                    node: row.get(5)?,
                    worker: row.get(6)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Every tally the store keeps, read in one snapshot: counters of what happened (jobs
    /// enqueued, claims, attempts ended by outcome, deaths and reaps by reason, redrives,
    /// cancels, heartbeats, prunes, forgets), by queue and (but for prunes and forgets) the
    /// jobs' kind, and the histograms of how long a due
    /// job waited for its claim and how long each attempt ran. They only grow — a prune or a
    /// forget takes nothing off — and survive restarts; reading them costs the same at a
    /// million jobs as at one.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })?;
    /// q.claim("w1", 40)?;
    /// let tallies = q.tallies()?;
    /// let claims = tallies.counters.iter().find(|t| t.metric == "retryq_claims_total").expect("counted");
    /// assert_eq!(claims.labels, [("queue".to_owned(), "default".to_owned()), ("kind".to_owned(), String::new())]);
    /// assert_eq!(claims.value, 1);
    /// let wait = tallies.histograms.iter().find(|h| h.metric == "retryq_claim_wait_milliseconds").expect("observed");
    /// assert_eq!((wait.count, wait.sum_ms), (1, 40));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn tallies(&self) -> Result<Tallies> {
        self.read(|tx| {
            let counters = tx
                .prepare_cached(COUNTERS)?
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?)))?
                .collect::<rusqlite::Result<Vec<CounterRow>>>()?;
            let buckets = tx
                .prepare_cached(BUCKETS)?
                .query_map([], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        row.get(5)?,
                        row.get(6)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<BucketRow>>>()?;
            assemble(counters, buckets)
        })
    }
}
