//! `get`, `stats`, `owners`, `history`, `dead_jobs`, `list` and `next_due`: reading the
//! store, never changing it, each in one snapshot. Time does not move jobs here.

use postgres::Row;

use super::ddl::{age_rows, due_rows, lease_rows};
use super::store::PgQueue;
use super::value::{big, opt_uint, opt_utf8, opt_word, uint, utf8, word};
use crate::error::{Error, Result};
use crate::input;
use crate::job::{DeadReason, Job, Lookup, Status, Tombstone};
use crate::queue::inspect::{HistoryEntry, JobPage, Owner, Stats};

const GET: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE id = $1";

const DEAD: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE status = 'dead' AND ($1::text IS NULL OR dead_reason = $1)
    ORDER BY seq";

/// The earliest time an open job needs a worker (see `queue/inspect.rs`): the queues with
/// open jobs found by skipping through `jobs_due` (one seek per queue), then one `min` per
/// queue and priority, each the first entry of its part of the index.
pub(super) const NEXT_DUE: &str = concat!(
    "
    WITH RECURSIVE queues (name) AS (
        (SELECT queue FROM jobs WHERE ",
    due_rows!(),
    " ORDER BY queue LIMIT 1)
        UNION ALL
        SELECT (SELECT queue FROM jobs WHERE ",
    due_rows!(),
    " AND queue > q.name
                ORDER BY queue LIMIT 1)
        FROM queues q WHERE q.name IS NOT NULL)
    SELECT min((SELECT min(available_at) FROM jobs
                WHERE queue = q.name AND priority = p.priority::smallint AND ",
    due_rows!(),
    "))
    FROM queues q CROSS JOIN generate_series(0, 9) AS p(priority)
    WHERE q.name IS NOT NULL"
);

/// [`NEXT_DUE`] of the queues `$1` (a `text[]`): one `min` per queue and priority.
pub(super) const NEXT_DUE_IN: &str = concat!(
    "
    SELECT min((SELECT min(available_at) FROM jobs
                WHERE queue = q.name AND priority = p.priority::smallint AND ",
    due_rows!(),
    "))
    FROM unnest($1::text[]) AS q(name) CROSS JOIN generate_series(0, 9) AS p(priority)
    WHERE NOT EXISTS (SELECT 1 FROM paused_queues WHERE queue = q.name)"
);

/// The kept counts (`ddl.rs`) of one queue (`$1`) or of all, summed over their shards: the
/// jobs' by status and reason and the tombstones' (`pruned_done`, `pruned_dead`), SPEC 3.8.
/// A few rows per queue, however many jobs.
pub(super) const COUNTS: &str = "
    SELECT status, reason, sum(n)::bigint FROM counts
    WHERE $1::text IS NULL OR queue = $1
    GROUP BY status, reason";

/// The expired leases (per queue the counts show leases in, a range of `jobs_leases` — queue,
/// then expiry — up to `$1`: as many entries as leases expired, however many are held) and
/// the oldest open job's `enqueued_at` (one `min` over `jobs_open_age` per queue the counts
/// show open jobs in), of one queue (`$2`) or of all, as of `$1`.
pub(super) const LEASES_AND_AGE: &str = concat!(
    "
    SELECT (SELECT coalesce(sum((SELECT count(*) FROM jobs
                                 WHERE queue = l.queue AND ",
    lease_rows!(),
    " AND available_at <= $1)), 0)::bigint
            FROM (SELECT queue FROM counts
                  WHERE status = 'leased' AND ($2::text IS NULL OR queue = $2)
                  GROUP BY queue HAVING sum(n) > 0) AS l),
           (SELECT min((SELECT min(enqueued_at) FROM jobs WHERE queue = q.queue AND ",
    age_rows!(),
    "))
            FROM (SELECT queue FROM counts
                  WHERE status IN ('pending', 'leased') AND ($2::text IS NULL OR queue = $2)
                  GROUP BY queue HAVING sum(n) > 0) AS q)"
);

/// A pruned id's tombstone.
const TOMBSTONE: &str = "
    SELECT id, queue, digest, status, dead_reason, attempts, ended_at FROM tombstones WHERE id = $1";

/// The leased rows, grouped by holder, in byte order of the name as SQLite sorts it.
pub(super) const OWNERS: &str = concat!(
    r#"
    SELECT owner, count(*), count(*) FILTER (WHERE available_at <= $1)
    FROM jobs
    WHERE "#,
    lease_rows!(),
    r#"
    GROUP BY owner ORDER BY owner COLLATE "C""#
);

const HISTORY: &str = "
    SELECT from_status, to_status, attempt, max_attempts, deadline, available_at, redrives,
           reason, worker, at
    FROM history WHERE job = $1 ORDER BY n";

/// Pending or leased jobs queue by queue, each in claim's order: `priority`, `available_at`,
/// then first enqueue — `jobs_due`'s order, as SQLite lists them.
pub(super) const LIST_OPEN: &str = concat!(
    "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE ",
    due_rows!(),
    " AND status = $1
    ORDER BY queue, priority, available_at, seq LIMIT $2"
);

/// Leased jobs in `jobs_leases`' order, `$1` of them (as SQLite's `leases`).
pub(super) const LEASES: &str = concat!(
    "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE ",
    lease_rows!(),
    "
    ORDER BY queue, available_at LIMIT $1"
);

/// Done or dead jobs (dead ones only for `$2`'s reason, if any), the most recently enqueued
/// first: the primary key walked backwards.
const LIST_CLOSED: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE status = $1 AND ($2::text IS NULL OR dead_reason = $2)
    ORDER BY seq DESC LIMIT $3";

/// How many jobs of a status there are (dead ones only for `$2`'s reason, if any): the kept
/// counts (`ddl.rs`) summed over their shards, as `stats` reads them, not a pass over every
/// job of the status. A count's `reason` is `''` but for dead jobs, as `dead_reason` is
/// `NULL`, so a reason with another status counts nothing either way.
pub(super) const COUNT: &str = "
    SELECT coalesce(sum(n), 0)::bigint FROM counts
    WHERE status = $1 AND ($2::text IS NULL OR reason = $2)";

/// A row of the job queries' 22 columns.
pub(super) fn job_of(row: &Row) -> Result<Job> {
    Ok(Job {
        id: row.try_get(0)?,
        payload: utf8(row, 1)?,
        status: word(row, 2)?,
        attempts: uint(row, 3)?,
        max_attempts: uint(row, 4)?,
        available_at: opt_uint(row, 5)?,
        deadline: uint(row, 6)?,
        dead_reason: opt_word(row, 7)?,
        redrives: uint(row, 8)?,
        enqueued_at: uint(row, 9)?,
        owner: row.try_get(10)?,
        claimed_at: opt_uint(row, 11)?,
        last_error: opt_utf8(row, 12)?,
        last_node: opt_utf8(row, 13)?,
        not_before: uint(row, 14)?,
        base_ms: opt_uint(row, 15)?,
        cap_ms: opt_uint(row, 16)?,
        queue: row.try_get(17)?,
        priority: small(row, 18)?,
        ended_at: opt_uint(row, 19)?,
        cancel_requested: row.try_get(20)?,
        kind: row.try_get(21)?,
    })
}

/// A `smallint` column that holds a priority.
fn small(row: &Row, i: usize) -> Result<u8> {
    let value: i16 = row.try_get(i)?;
    u8::try_from(value).map_err(|_| Error::Corrupt(format!("a priority of {value}")))
}

/// A row of [`TOMBSTONE`].
fn tombstone_of(row: &Row) -> Result<Tombstone> {
    Ok(Tombstone {
        id: row.try_get(0)?,
        queue: row.try_get(1)?,
        digest: row.try_get(2)?,
        status: word(row, 3)?,
        dead_reason: opt_word(row, 4)?,
        attempts: uint(row, 5)?,
        ended_at: uint(row, 6)?,
    })
}

fn jobs_of(rows: &[Row]) -> Result<Vec<Job>> {
    rows.iter().map(job_of).collect()
}

impl PgQueue {
    /// [`Queue::get`](crate::Queue::get) on PostgreSQL: the job with this id, if any (`None`
    /// for a pruned id, as for an unknown one: see [`PgQueue::lookup`]).
    pub fn get(&self, id: &str) -> Result<Option<Job>> {
        input::name("id", id)?;
        self.read(|tx| tx.query_opt(GET, &[&id])?.as_ref().map(job_of).transpose())
    }

    /// [`Queue::lookup`](crate::Queue::lookup) on PostgreSQL: the job or the tombstone `id`
    /// names (SPEC 3.9), in one snapshot.
    pub fn lookup(&self, id: &str) -> Result<Option<Lookup>> {
        input::name("id", id)?;
        self.read(|tx| {
            if let Some(row) = tx.query_opt(GET, &[&id])? {
                return Ok(Some(Lookup::Job(job_of(&row)?)));
            }
            tx.query_opt(TOMBSTONE, &[&id])?
                .as_ref()
                .map(|row| tombstone_of(row).map(Lookup::Pruned))
                .transpose()
        })
    }

    /// [`Queue::dead_jobs`](crate::Queue::dead_jobs) on PostgreSQL: the dead jobs (of one
    /// reason), in enqueue order.
    pub fn dead_jobs(&self, reason: Option<DeadReason>) -> Result<Vec<Job>> {
        let reason = reason.map(DeadReason::as_str);
        self.read(|tx| jobs_of(&tx.query(DEAD, &[&reason])?))
    }

    /// [`Queue::next_due`](crate::Queue::next_due) on PostgreSQL: the smallest
    /// `available_at` of the pending and leased jobs.
    pub fn next_due(&self) -> Result<Option<u64>> {
        self.read(|tx| opt_uint(&tx.query_one(NEXT_DUE, &[])?, 0))
    }

    /// [`Queue::next_due_in`](crate::Queue::next_due_in) on PostgreSQL: the smallest
    /// `available_at` of the pending and leased jobs of `queues`.
    pub fn next_due_in(&self, queues: &[&str]) -> Result<Option<u64>> {
        input::queues(queues)?;
        self.read(|tx| opt_uint(&tx.query_one(NEXT_DUE_IN, &[&queues])?, 0))
    }

    /// [`Queue::stats`](crate::Queue::stats) on PostgreSQL: [`PgQueue::stats_of`] every
    /// queue.
    pub fn stats(&self, now: u64) -> Result<Stats> {
        self.stats_of(now, None)
    }

    /// [`Queue::stats_of`](crate::Queue::stats_of) on PostgreSQL: counts by status and
    /// reason, expired leases, the oldest open job's age as of `now`, and the tombstones by
    /// final status, of one queue or of all (SPEC 3.8), in one snapshot: the counts from the
    /// `counts` table, the rest from the indexes of the leases and the open jobs, never a
    /// scan of the jobs.
    pub fn stats_of(&self, now: u64, queue: Option<&str>) -> Result<Stats> {
        input::int("now", now)?;
        if let Some(queue) = queue {
            input::queue("queue", queue)?;
        }
        let at = big("now", now)?;
        self.read(|tx| {
            let mut stats = Stats::default();
            for row in tx.query(COUNTS, &[&queue])? {
                let (status, reason): (String, String) = (row.try_get(0)?, row.try_get(1)?);
                let n = uint(&row, 2)?;
                stats.count(&status, &reason, n)?;
            }
            let row = tx.query_one(LEASES_AND_AGE, &[&at, &queue])?;
            stats.leased_expired = uint(&row, 0)?;
            stats.oldest_open_age_ms = opt_uint(&row, 1)?.map(|at| now.saturating_sub(at));
            stats.paused_queues = uint(&tx.query_one(super::pause::PAUSED_COUNT, &[&queue])?, 0)?;
            Ok(stats)
        })
    }

    /// [`Queue::owners`](crate::Queue::owners) on PostgreSQL: each lease holder, with how many
    /// leases it holds and how many of those expired as of `now`.
    pub fn owners(&self, now: u64) -> Result<Vec<Owner>> {
        input::int("now", now)?;
        let at = big("now", now)?;
        self.read(|tx| {
            let rows = tx.query(OWNERS, &[&at])?;
            rows.iter()
                .map(|row| {
                    Ok(Owner { worker: row.try_get(0)?, leased: uint(row, 1)?, expired: uint(row, 2)? })
                })
                .collect()
        })
    }

    /// [`Queue::history`](crate::Queue::history) on PostgreSQL: every recorded transition of
    /// the job, oldest first.
    pub fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        input::name("id", id)?;
        self.read(|tx| {
            let rows = tx.query(HISTORY, &[&id])?;
            rows.iter()
                .map(|row| {
                    Ok(HistoryEntry {
                        from: opt_word(row, 0)?,
                        to: word(row, 1)?,
                        attempt: uint(row, 2)?,
                        max_attempts: uint(row, 3)?,
                        deadline: uint(row, 4)?,
                        available_at: opt_uint(row, 5)?,
                        redrives: uint(row, 6)?,
                        reason: opt_word(row, 7)?,
                        worker: row.try_get(8)?,
                        at: uint(row, 9)?,
                    })
                })
                .collect()
        })
    }

    /// [`Queue::leases`](crate::Queue::leases) on PostgreSQL: up to `limit` leased jobs along
    /// the leases' index.
    pub fn leases(&self, limit: u32) -> Result<Vec<Job>> {
        self.read(|tx| jobs_of(&tx.query(LEASES, &[&i64::from(limit)])?))
    }

    /// [`Queue::list`](crate::Queue::list) on PostgreSQL: up to `limit` jobs of one status in
    /// an operator's order, and how many more match; the page and its count of one snapshot.
    pub fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> Result<JobPage> {
        let word = status.as_str();
        let reason_word = reason.map(DeadReason::as_str);
        let limit_big = i64::from(limit);
        self.read(|tx| {
            let open = matches!(status, Status::Pending | Status::Leased);
            let (jobs, total) = if open && reason.is_some() {
                (Vec::new(), 0)
            } else if open {
                let jobs = jobs_of(&tx.query(LIST_OPEN, &[&word, &limit_big])?)?;
                // A full page may have more behind it; a short one is all there is.
                let total = if jobs.len() == limit as usize {
                    uint(&tx.query_one(COUNT, &[&word, &reason_word])?, 0)?
                } else {
                    jobs.len() as u64
                };
                (jobs, total)
            } else {
                let jobs = jobs_of(&tx.query(LIST_CLOSED, &[&word, &reason_word, &limit_big])?)?;
                let total = if jobs.len() == limit as usize {
                    uint(&tx.query_one(COUNT, &[&word, &reason_word])?, 0)?
                } else {
                    jobs.len() as u64
                };
                (jobs, total)
            };
            let more = total.saturating_sub(jobs.len() as u64);
            Ok(JobPage { jobs, more })
        })
    }
}
