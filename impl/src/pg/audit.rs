//! `audit` on PostgreSQL: the rows and the history read in one snapshot, and handed to the
//! SQLite queue's own rules (`audit.rs`), which know nothing of SQL. Words are read as text
//! and parsed there, so an unknown word is a finding, not an error, as on SQLite. Two checks
//! of the tombstones are this store's own: no id names a job and a tombstone at once, and no
//! history is left of a pruned job. The counts `stats` reads are checked against the rows as
//! on SQLite, each the sum of its shards (`ddl.rs`), and so are the attempts' records and the
//! tallies (SPEC 6.36).

use std::collections::HashMap;

use postgres::Row;

use super::store::PgQueue;
use crate::audit::notes_sql::{Record, floors};
use crate::audit::{Audit, Check, Entry, State, Stored, Violation, Word};
use crate::error::{Error, Result};

/// Every job, in insertion order, with the seq that pairs it with its history.
const JOBS: &str = "
    SELECT seq, id, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, owner, claimed_at, not_before, ended_at, cancel_requested
    FROM jobs ORDER BY seq";

/// Every history entry of a job the store holds, job by job in insertion order, each job's
/// entries as recorded: one pass, however many jobs.
const HISTORY: &str = "
    SELECT j.seq, h.n, h.from_status, h.to_status, h.attempt, h.max_attempts, h.deadline,
           h.available_at, h.redrives, h.reason, h.worker, h.at, h.cancel_requested
    FROM history h JOIN jobs j ON j.id = h.job
    ORDER BY j.seq, h.n";

/// History of ids no row holds and no tombstone keeps: a job that vanished.
const ORPHANS: &str = "
    SELECT job, min(n), count(*) FROM history h
    WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = h.job)
      AND NOT EXISTS (SELECT 1 FROM tombstones WHERE id = h.job)
    GROUP BY job ORDER BY min(n)";

/// Ids that name a job and a tombstone at once: a pruned id that runs again, or a tombstone
/// written of a job that was not deleted (SPEC 1.1, 4.3, 4.14).
const BOTH: &str = "
    SELECT t.id, t.status, j.status FROM tombstones t JOIN jobs j ON j.id = t.id ORDER BY j.seq";

/// History left of a pruned job: a prune deletes it with the job (SPEC 3.14). Ids that are
/// also a job's are [`BOTH`]'s finding, and their history is the job's.
const LEFT_OVER: &str = "
    SELECT h.job, min(h.n), count(*) FROM history h JOIN tombstones t ON t.id = h.job
    WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = h.job)
    GROUP BY h.job ORDER BY min(h.n)";

/// Every (queue, status, reason) whose kept count — the sum of its shards — differs from the
/// rows: the kept counts against the jobs and tombstones counted afresh, both ways (SQLite's
/// `COUNTS_AGAINST_ROWS`, over the shards).
pub(super) const COUNTS_AGAINST_ROWS: &str = "
    WITH fresh (queue, status, reason, n) AS (
        SELECT queue, status, coalesce(dead_reason, ''), count(*) FROM jobs GROUP BY 1, 2, 3
        UNION ALL
        SELECT queue, 'pruned_' || status, '', count(*) FROM tombstones GROUP BY 1, 2),
    kept (queue, status, reason, n) AS (
        SELECT queue, status, reason, sum(n)::bigint FROM counts GROUP BY 1, 2, 3 HAVING sum(n) <> 0)
    SELECT queue, status, reason, coalesce(k.n, 0), coalesce(f.n, 0)
    FROM fresh f FULL JOIN kept k USING (queue, status, reason)
    WHERE coalesce(k.n, 0) <> coalesce(f.n, 0)
    ORDER BY 1, 2, 3";

/// Every attempt's record of a job the store holds, by the job's seq.
const RECORDS: &str = "
    SELECT j.seq, a.attempt, a.worker, a.claimed_at, a.ended_at, a.outcome,
           coalesce(octet_length(a.error), 0), coalesce(octet_length(a.node), 0)
    FROM attempts a JOIN jobs j ON j.id = a.job
    ORDER BY j.seq, a.attempt";

/// Records of ids no job row holds, and whether a tombstone holds the id.
const RECORDS_LEFT: &str = "
    SELECT job, count(*), EXISTS (SELECT 1 FROM tombstones WHERE id = a.job) FROM attempts a
    WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = a.job) GROUP BY job ORDER BY job";

/// The kept tallies for the floors' check, each the sum of its shards.
const KEPT: &str = "
    SELECT metric, queue, label, sum(n) FROM tallies GROUP BY 1, 2, 3
    UNION ALL
    SELECT CASE metric WHEN 'attempt_duration' THEN 'attempts_ended' ELSE 'claims_observed' END,
           queue, label, sum(n)
    FROM tally_buckets GROUP BY 1, 2, 3";

impl PgQueue {
    /// [`Queue::audit`](crate::Queue::audit) on PostgreSQL: SPEC section 4's invariants
    /// checked on every job's row and every recorded transition, in one snapshot, by the
    /// same rules.
    pub fn audit(&self) -> Result<Audit> {
        self.read(|tx| {
            // Every row and every entry, in one snapshot: as long as it takes, not the
            // session's statement timeout (PgQueue::STATEMENT_TIMEOUT).
            tx.batch("SET LOCAL statement_timeout = 0")?;
            let mut found = Audit::default();
            let jobs: Vec<(i64, Stored)> = tx
                .query(JOBS, &[])?
                .iter()
                .map(|row| Ok((row.try_get(0)?, stored(row)?)))
                .collect::<Result<_>>()?;
            let mut records: HashMap<i64, Vec<Record>> = HashMap::new();
            for row in tx.query(RECORDS, &[])? {
                records.entry(row.try_get(0)?).or_default().push(record(&row)?);
            }
            let mut check = |found: &mut Audit, seq: i64, job: &Stored, entries: &[Entry]| {
                found.job(job, entries);
                found.records(job, entries, records.remove(&seq).as_deref().unwrap_or_default());
            };
            let mut next = 0;
            let mut entries = Vec::new();
            tx.each(HISTORY, &[], |row| {
                let seq: i64 = row.try_get(0)?;
                loop {
                    let Some((at, job)) = jobs.get(next) else {
                        return Err(Error::Corrupt(format!("history of job seq {seq} out of order")));
                    };
                    if *at == seq {
                        break;
                    }
                    check(&mut found, *at, job, &entries);
                    entries.clear();
                    next += 1;
                }
                entries.push(entry(&row)?);
                Ok(())
            })?;
            for (seq, job) in jobs.get(next..).unwrap_or_default() {
                check(&mut found, *seq, job, &entries);
                entries.clear();
            }
            for row in tx.query(RECORDS_LEFT, &[])? {
                found.records_left(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            }
            let floors: &'static str = FLOORS.get_or_init(|| floors(KEPT));
            for row in tx.query(floors, &[])? {
                found.tally_short(
                    row.try_get(0)?,
                    row.try_get(1)?,
                    row.try_get(2)?,
                    row.try_get(3)?,
                    row.try_get(4)?,
                );
            }
            for row in tx.query(ORPHANS, &[])? {
                found.orphan(row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            }
            let tombstones: i64 = tx.query_one("SELECT count(*) FROM tombstones", &[])?.try_get(0)?;
            found.tombstones = tombstones.max(0) as u64;
            for row in tx.query(BOTH, &[])? {
                let (id, pruned, status): (String, String, String) =
                    (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                found.violations.push(Violation {
                    check: Check::PrunedStaysPruned,
                    job: id,
                    entry: None,
                    what: format!("the id names a {status} job and the tombstone of a {pruned} one"),
                });
            }
            for row in tx.query(LEFT_OVER, &[])? {
                let (id, first, count): (String, i64, i64) =
                    (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                found.entries += count.max(0) as u64;
                found.violations.push(Violation {
                    check: Check::PrunedStaysPruned,
                    job: id,
                    entry: Some(first),
                    what: format!("{count} history entries left of a pruned job, whose tombstone stands"),
                });
            }
            for row in tx.query(COUNTS_AGAINST_ROWS, &[])? {
                found.count_differs(
                    row.try_get(0)?,
                    row.try_get(1)?,
                    row.try_get(2)?,
                    row.try_get(3)?,
                    row.try_get(4)?,
                );
            }
            Ok(found)
        })
    }
}

/// The floors' query, made once: the store prepares `'static` statements.
static FLOORS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// A row of [`RECORDS`].
fn record(row: &Row) -> Result<Record> {
    Ok(Record {
        attempt: row.try_get(1)?,
        worker: row.try_get(2)?,
        claimed_at: row.try_get(3)?,
        ended_at: row.try_get(4)?,
        outcome: row.try_get(5)?,
        error_bytes: i64::from(row.try_get::<_, i32>(6)?),
        node_bytes: i64::from(row.try_get::<_, i32>(7)?),
    })
}

/// A row of [`JOBS`], trusting nothing but the column types.
fn stored(row: &Row) -> Result<Stored> {
    Ok(Stored {
        id: row.try_get(1)?,
        state: State {
            status: Word::parsed(row.try_get(2)?),
            attempts: row.try_get(3)?,
            max_attempts: row.try_get(4)?,
            available_at: row.try_get(5)?,
            deadline: row.try_get(6)?,
            reason: row.try_get::<_, Option<String>>(7)?.map(Word::parsed),
            redrives: row.try_get(8)?,
            worker: row.try_get(9)?,
            cancel_requested: row.try_get(13)?,
        },
        claimed_at: row.try_get(10)?,
        not_before: row.try_get(11)?,
        ended_at: row.try_get(12)?,
    })
}

/// A row of [`HISTORY`].
fn entry(row: &Row) -> Result<Entry> {
    Ok(Entry {
        n: row.try_get(1)?,
        from: row.try_get::<_, Option<String>>(2)?.map(Word::parsed),
        at: row.try_get(11)?,
        state: State {
            status: Word::parsed(row.try_get(3)?),
            attempts: row.try_get(4)?,
            max_attempts: row.try_get(5)?,
            deadline: row.try_get(6)?,
            available_at: row.try_get(7)?,
            redrives: row.try_get(8)?,
            reason: row.try_get::<_, Option<String>>(9)?.map(Word::parsed),
            worker: row.try_get(10)?,
            cancel_requested: row.try_get(12)?,
        },
    })
}
