//! `attempts` and `tallies` on PostgreSQL: the operators' notes schema 4 keeps (SPEC 6.36),
//! read. The tallies are sharded (`ddl.rs`): each is the sum of its shards, summed here in
//! one statement of the read's snapshot; then `notes.rs` names and shapes them as SQLite's.

use super::store::PgQueue;
use super::value::{opt_utf8, uint};
use crate::error::Result;
use crate::input;
use crate::notes::{AttemptRecord, BucketRow, CounterRow, Tallies, assemble};

/// A job's ended attempts, oldest first.
const ATTEMPTS: &str = "
    SELECT attempt, claimed_at, ended_at, outcome, error, node, worker FROM attempts
    WHERE job = $1 AND ended_at IS NOT NULL ORDER BY attempt";

/// The counters, each summed over its shards.
const COUNTERS: &str = "
    SELECT metric, queue, kind, label, sum(n)::bigint FROM tallies GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4";

/// The buckets, each summed over its shards (a sum stops at 2^63 − 1, as a shard's does).
const BUCKETS: &str = "
    SELECT metric, queue, kind, label, le, sum(n)::bigint, LEAST(sum(sum_ms), 9223372036854775807)::bigint
    FROM tally_buckets GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5";

impl PgQueue {
    /// [`Queue::attempts`](crate::Queue::attempts) on PostgreSQL: the records of the job's
    /// ended attempts, oldest first.
    pub fn attempts(&self, id: &str) -> Result<Vec<AttemptRecord>> {
        input::name("id", id)?;
        self.read(|tx| {
            tx.query(ATTEMPTS, &[&id])?
                .iter()
                .map(|row| {
                    let outcome: String = row.try_get(3)?;
                    Ok(AttemptRecord {
                        attempt: uint(row, 0)?,
                        claimed_at: uint(row, 1)?,
                        ended_at: uint(row, 2)?,
                        outcome,
                        error: opt_utf8(row, 4)?,
                        node: opt_utf8(row, 5)?,
                        worker: Some(row.try_get(6)?),
                    })
                })
                .collect()
        })
    }

    /// [`Queue::tallies`](crate::Queue::tallies) on PostgreSQL: every tally, each the sum of
    /// its shards, read in one snapshot.
    pub fn tallies(&self) -> Result<Tallies> {
        self.read(|tx| {
            let counters = tx
                .query(COUNTERS, &[])?
                .iter()
                .map(|row| {
                    Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?, uint(row, 4)?))
                })
                .collect::<Result<Vec<CounterRow>>>()?;
            let buckets = tx
                .query(BUCKETS, &[])?
                .iter()
                .map(|row| {
                    Ok((
                        row.try_get(0)?,
                        row.try_get(1)?,
                        row.try_get(2)?,
                        row.try_get(3)?,
                        row.try_get(4)?,
                        uint(row, 5)?,
                        uint(row, 6)?,
                    ))
                })
                .collect::<Result<Vec<BucketRow>>>()?;
            assemble(counters, buckets)
        })
    }
}
