//! `audit` on PostgreSQL: the rows and the history read in one snapshot, and handed to the
//! SQLite queue's own rules (`audit.rs`), which know nothing of SQL. Words are read as text
//! and parsed there, so an unknown word is a finding, not an error, as on SQLite. Two checks
//! of the tombstones are this store's own: no id names a job and a tombstone at once, and no
//! history is left of a pruned job. The counts `stats` reads are checked against the rows as
//! on SQLite, each the sum of its shards (`ddl.rs`), and so are the attempts' records and the
//! tallies (SPEC 6.36).

use std::collections::VecDeque;

use postgres::{Portal, Row};

use super::store::{PgQueue, Tx};
use crate::audit::notes_sql::{Record, floors, kind_floors};
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

/// The kept tallies for the floors' check, each the sum of its shards and its kinds (a
/// tombstone keeps no kind, so the floors are a queue's).
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
            // Each job with its history and records, the three reads side by side in seq
            // order, a chunk of each at a time: memory holds a chunk, not the store.
            let mut jobs = BySeq::open(tx, JOBS)?;
            let mut history = BySeq::open(tx, HISTORY)?;
            let mut records = BySeq::open(tx, RECORDS)?;
            while let Some(row) = jobs.next(tx)? {
                let seq: i64 = row.try_get(0)?;
                let job = stored(&row)?;
                let mut entries = Vec::new();
                while let Some(row) = history.next_of(tx, seq)? {
                    entries.push(entry(&row)?);
                }
                let mut kept = Vec::new();
                while let Some(row) = records.next_of(tx, seq)? {
                    kept.push(record(&row)?);
                }
                found.job(&job, &entries);
                found.records(&job, &entries, &kept);
            }
            for (read, what) in [(&mut history, "history"), (&mut records, "attempts' records")] {
                if let Some(row) = read.next(tx)? {
                    let seq: i64 = row.try_get(0)?;
                    return Err(Error::Corrupt(format!("{what} of job seq {seq} out of order")));
                }
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
                    None,
                );
            }
            let kind_floors: &'static str = KIND_FLOORS.get_or_init(kind_floors);
            for row in tx.query(kind_floors, &[])? {
                found.tally_short(
                    row.try_get(0)?,
                    row.try_get(1)?,
                    row.try_get(2)?,
                    row.try_get(3)?,
                    row.try_get(4)?,
                    Some(row.try_get(5)?),
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

/// How many rows of each of the audit's reads it holds at once.
const CHUNK: i32 = 1_000;

/// One of the audit's reads, its rows ordered by their job's `seq` (column 0), read a chunk at
/// a time from a portal of its own.
struct BySeq {
    portal: Portal,
    rows: VecDeque<Row>,
    /// The portal is read to its end.
    ended: bool,
}

impl BySeq {
    fn open(tx: &mut Tx<'_>, sql: &'static str) -> Result<BySeq> {
        Ok(BySeq { portal: tx.portal(sql, &[])?, rows: VecDeque::new(), ended: false })
    }

    /// The next row, if any.
    fn next(&mut self, tx: &mut Tx<'_>) -> Result<Option<Row>> {
        if self.rows.is_empty() && !self.ended {
            let rows = tx.fetch(&self.portal, CHUNK)?;
            self.ended = rows.len() < CHUNK as usize;
            self.rows.extend(rows);
        }
        Ok(self.rows.pop_front())
    }

    /// The next row if it is of the job `seq`: every row of an earlier job was taken with it.
    fn next_of(&mut self, tx: &mut Tx<'_>, seq: i64) -> Result<Option<Row>> {
        let Some(row) = self.next(tx)? else { return Ok(None) };
        let of: i64 = row.try_get(0)?;
        if of < seq {
            return Err(Error::Corrupt(format!("a row of job seq {of} out of order")));
        }
        if of > seq {
            self.rows.push_front(row);
            return Ok(None);
        }
        Ok(Some(row))
    }
}

/// The floors' query, made once: the store prepares `'static` statements.
static FLOORS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
/// The floors' query by kind, likewise.
static KIND_FLOORS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

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

#[cfg(test)]
mod tests {
    use super::super::tests::pg_at;
    use crate::{Check, Completion, NewJob, Outcome};

    /// 2,500 jobs, each claimed and done — more than two chunks of each read: the audit reads
    /// every one, and records tampered with on the first, a middle and the last job are found
    /// and named by their own jobs, whichever chunk they came in.
    #[test]
    fn the_audit_reads_chunk_by_chunk_and_names_each_finding_by_its_job() {
        let Some((_, mut q)) = pg_at("the_audit_reads_chunk_by_chunk_and_names_each_finding_by_its_job")
        else {
            return;
        };
        let ids: Vec<String> = (0..2_500).map(|n| format!("j{n}")).collect();
        let jobs: Vec<NewJob<'_>> = ids
            .iter()
            .map(|id| NewJob {
                id,
                payload: "",
                max_attempts: 3,
                deadline: 10_000,
                now: 0,
                ..NewJob::default()
            })
            .collect();
        let mut answers = Vec::new();
        q.enqueue_bulk(&jobs, &mut answers).expect("enqueue");
        let claimed = q.claim_batch("w", 1, 2_500).expect("claim");
        let done: Vec<Completion<'_>> =
            claimed.iter().map(|c| Completion::new(&c.lease, Outcome::Ok, 2, 0.0)).collect();
        assert!(q.complete_batch(&done).expect("complete").iter().all(Result::is_ok));
        let audit = q.audit().expect("audit");
        assert!(audit.is_clean(), "{:?}", audit.violations);
        assert_eq!((audit.jobs, audit.entries), (2_500, 7_500));
        q.raw(
            "DROP TRIGGER attempts_ended_never_change ON attempts;
             UPDATE attempts SET outcome = 'permanent' WHERE job IN ('j0', 'j1234', 'j2499')",
        )
        .expect("tamper");
        // (The tallies of attempts ended `permanent` are short too: a finding of the queue's.)
        let mut named: Vec<String> = q
            .audit()
            .expect("audit")
            .violations
            .into_iter()
            .filter(|v| v.check == Check::AttemptsRecorded)
            .map(|v| v.job)
            .collect();
        named.sort();
        assert_eq!(named, ["j0", "j1234", "j2499"]);
    }
}
