//! What the audit of the operators' notes reads (`notes.rs` judges it): an attempt's record
//! as a row holds it, and the queries of SQLite's records and of either store's tallies'
//! floors. Kept apart from the rules so that the audit's reads (`audit.rs`, `pg/audit.rs`)
//! and its rules depend on it, not on each other.

/// One attempt's record as read, trusting nothing but the column types.
#[derive(Clone, Debug)]
pub(crate) struct Record {
    pub(crate) attempt: i64,
    pub(crate) worker: Option<String>,
    pub(crate) claimed_at: i64,
    pub(crate) ended_at: Option<i64>,
    pub(crate) outcome: Option<String>,
    /// The lengths in bytes of its error text and node.
    pub(crate) error_bytes: i64,
    pub(crate) node_bytes: i64,
}

/// Every record of a job the store holds, in SQLite, by its job's `seq` and in order of
/// attempt: one pass, however many jobs (the audit reads the jobs in `seq` order beside it).
pub(crate) const RECORDS: &str = "
    SELECT a.attempt, a.worker, a.claimed_at, a.ended_at, a.outcome,
           coalesce(length(CAST(a.error AS BLOB)), 0), coalesce(length(CAST(a.node AS BLOB)), 0), j.seq
    FROM attempts a JOIN jobs j ON j.id = a.job
    ORDER BY j.seq, a.attempt";

/// A row of [`RECORDS`]: its job's `seq` and the record.
pub(crate) fn record_of_seq(row: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, Record)> {
    let record = Record {
        attempt: row.get(0)?,
        worker: row.get(1)?,
        claimed_at: row.get(2)?,
        ended_at: row.get(3)?,
        outcome: row.get(4)?,
        error_bytes: row.get(5)?,
        node_bytes: row.get(6)?,
    };
    Ok((row.get(7)?, record))
}

/// Records of ids no job row holds, and whether a tombstone holds the id.
pub(crate) const RECORDS_LEFT: &str = "
    SELECT job, count(*), EXISTS (SELECT 1 FROM tombstones WHERE id = a.job) FROM attempts a
    WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = a.job) GROUP BY job ORDER BY job";

/// The floors of the tallies (`notes.rs` says why each holds), of one store: `{kept}` is the
/// query of the kept tallies (metric, queue, label, n), with `attempt_duration`'s counts
/// named `attempts_ended` and `claim_wait`'s `claims_observed`. Every (metric, queue, label)
/// whose kept tally is below its floor.
pub(crate) fn floors(kept: &str) -> String {
    format!(
        "WITH floor (metric, queue, label, n) AS (
            SELECT 'enqueued', queue, '', count(*)
            FROM (SELECT queue FROM jobs UNION ALL SELECT queue FROM tombstones) AS e GROUP BY 2
            UNION ALL
            SELECT 'claims', queue, '', sum(attempts)
            FROM (SELECT queue, attempts FROM jobs UNION ALL SELECT queue, attempts FROM tombstones) AS c
            GROUP BY 2
            UNION ALL
            SELECT 'deaths', queue, dead_reason, count(*)
            FROM (SELECT queue, dead_reason FROM jobs WHERE status = 'dead'
                  UNION ALL SELECT queue, dead_reason FROM tombstones WHERE status = 'dead') AS d
            GROUP BY 2, 3
            UNION ALL
            SELECT 'redrives', queue, '', sum(redrives) FROM jobs GROUP BY 2
            UNION ALL
            SELECT 'cancels', queue, 'request', count(*) FROM jobs WHERE cancel_requested GROUP BY 2
            UNION ALL
            SELECT 'pruned', queue, status, count(*) FROM tombstones GROUP BY 2, 3
            UNION ALL
            SELECT 'claims_observed', j.queue, '', count(*) FROM attempts a JOIN jobs j ON j.id = a.job
            GROUP BY 2
            UNION ALL
            SELECT 'attempts_ended', j.queue, a.outcome, count(*) FROM attempts a JOIN jobs j ON j.id = a.job
            WHERE a.ended_at IS NOT NULL GROUP BY 2, 3),
         kept (metric, queue, label, n) AS ({kept})
         SELECT f.metric, f.queue, f.label, CAST(coalesce(k.n, 0) AS BIGINT), CAST(f.n AS BIGINT)
         FROM floor f LEFT JOIN kept k ON k.metric = f.metric AND k.queue = f.queue AND k.label = f.label
         WHERE coalesce(k.n, 0) < f.n
         ORDER BY 1, 2, 3"
    )
}

/// The floors of the tallies by kind (SPEC 6.44), of one store: what its jobs alone hold —
/// a tombstone keeps no kind, so a pruned job's counts are not in these floors, only in the
/// queue's of [`floors`] — against [`KEPT_BY_KIND`]. Every (metric, queue, label, kind) whose
/// kept tally is below its floor, with the kind last.
pub(crate) fn kind_floors() -> String {
    format!(
        "WITH floor (metric, queue, kind, label, n) AS (
            SELECT 'enqueued', queue, kind, '', count(*) FROM jobs GROUP BY 2, 3
            UNION ALL
            SELECT 'claims', queue, kind, '', sum(attempts) FROM jobs GROUP BY 2, 3
            UNION ALL
            SELECT 'deaths', queue, kind, dead_reason, count(*) FROM jobs WHERE status = 'dead' GROUP BY 2, 3, 4
            UNION ALL
            SELECT 'redrives', queue, kind, '', sum(redrives) FROM jobs GROUP BY 2, 3
            UNION ALL
            SELECT 'cancels', queue, kind, 'request', count(*) FROM jobs WHERE cancel_requested GROUP BY 2, 3
            UNION ALL
            SELECT 'claims_observed', j.queue, j.kind, '', count(*) FROM attempts a JOIN jobs j ON j.id = a.job
            GROUP BY 2, 3
            UNION ALL
            SELECT 'attempts_ended', j.queue, j.kind, a.outcome, count(*) FROM attempts a JOIN jobs j ON j.id = a.job
            WHERE a.ended_at IS NOT NULL GROUP BY 2, 3, 4),
         kept (metric, queue, kind, label, n) AS ({KEPT_BY_KIND})
         SELECT f.metric, f.queue, f.label, CAST(coalesce(k.n, 0) AS BIGINT), CAST(f.n AS BIGINT), f.kind
         FROM floor f LEFT JOIN kept k
              ON k.metric = f.metric AND k.queue = f.queue AND k.kind = f.kind AND k.label = f.label
         WHERE coalesce(k.n, 0) < f.n
         ORDER BY 1, 2, 6, 3"
    )
}

/// Either store's kept tallies by kind, for [`kind_floors`], each the sum of its shards on
/// PostgreSQL.
const KEPT_BY_KIND: &str = "
    SELECT metric, queue, kind, label, sum(n) FROM tallies GROUP BY 1, 2, 3, 4
    UNION ALL
    SELECT CASE metric WHEN 'attempt_duration' THEN 'attempts_ended' ELSE 'claims_observed' END,
           queue, kind, label, sum(n)
    FROM tally_buckets GROUP BY 1, 2, 3, 4";

/// SQLite's kept tallies, for [`floors`], summed over the kinds: a tombstone keeps no kind,
/// so the floors are a queue's (a kind's share of them cannot be told once its jobs are
/// pruned).
pub(crate) const KEPT: &str = "
    SELECT metric, queue, label, sum(n) FROM tallies GROUP BY 1, 2, 3
    UNION ALL
    SELECT CASE metric WHEN 'attempt_duration' THEN 'attempts_ended' ELSE 'claims_observed' END,
           queue, label, sum(n)
    FROM tally_buckets GROUP BY 1, 2, 3";
