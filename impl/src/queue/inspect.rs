//! `get`, `stats` and `history`: reading the store, never changing it. Time does not move
//! jobs here: a job past its deadline shows as stored until a claim or a reap sees it.

use rusqlite::{OptionalExtension, params};

use super::store::Queue;
use crate::error::{Error, Result};
use crate::input;
use crate::job::{DeadReason, Job, Lookup, Status, Tombstone};

/// Counts of the store at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Jobs waiting for a claim.
    pub pending: u64,
    /// Jobs under a lease, expired or not.
    pub leased: u64,
    /// Jobs that succeeded.
    pub done: u64,
    /// Jobs that ended without success: the sum of the four reasons below.
    pub dead: u64,
    /// Dead jobs whose attempts ran out.
    pub dead_exhausted: u64,
    /// Dead jobs whose deadline passed.
    pub dead_deadline: u64,
    /// Dead jobs an attempt declared hopeless.
    pub dead_permanent: u64,
    /// Dead jobs an operator cancelled while they were pending.
    pub dead_cancelled: u64,
    /// Leased jobs whose lease has expired: their workers may have died.
    pub leased_expired: u64,
    /// How long the oldest open (pending or leased) job has been in the queue, 0 at least;
    /// `None` when no job is open. A falling pending count is not success: jobs may have
    /// moved to dead.
    pub oldest_open_age_ms: Option<u64>,
    /// Tombstones of jobs that were `done` when pruned (SPEC 3.8, 3.14).
    pub pruned_done: u64,
    /// Tombstones of jobs that were `dead` when pruned.
    pub pruned_dead: u64,
    /// Of the whole store, how many queues are paused (names no job carries included); of
    /// one queue, 1 if it is paused and 0 if not (SPEC 3.8, 3.16).
    pub paused_queues: u64,
}

impl Stats {
    /// Adds a kept count (a row of either store's `counts` table: a status, a dead reason or
    /// `''`, how many) to its field, and the dead ones to `dead`. A status or reason no
    /// version of retryq writes is [`Error::Corrupt`].
    pub(crate) fn count(&mut self, status: &str, reason: &str, n: u64) -> Result<()> {
        let slot = match (status, reason) {
            ("pending", "") => &mut self.pending,
            ("leased", "") => &mut self.leased,
            ("done", "") => &mut self.done,
            ("dead", "exhausted") => &mut self.dead_exhausted,
            ("dead", "deadline") => &mut self.dead_deadline,
            ("dead", "permanent") => &mut self.dead_permanent,
            ("dead", "cancelled") => &mut self.dead_cancelled,
            ("pruned_done", "") => &mut self.pruned_done,
            ("pruned_dead", "") => &mut self.pruned_dead,
            _ => return Err(Error::Corrupt(format!("a count of status {status:?} reason {reason:?}"))),
        };
        *slot += n;
        if status == "dead" {
            self.dead += n;
        }
        Ok(())
    }
}

/// One lease holder: a worker name in the `owner` column of leased jobs, and how many
/// leases it holds. A worker process holds its leases under a name of its own, so this is
/// one line per live (or dead, with expired leases) process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// The name its leases are held under (`jobs.owner`).
    pub worker: String,
    /// Leases it holds, expired or not.
    pub leased: u64,
    /// Of those, leases that expired as of `now`: the holder may have died.
    pub expired: u64,
}

/// One recorded transition of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// `None` for the first enqueue.
    pub from: Option<Status>,
    /// The status it moved to.
    pub to: Status,
    /// The job's attempts after the transition.
    pub attempt: u64,
    /// The attempt budget after the transition (a redrive raises it).
    pub max_attempts: u64,
    /// The deadline after the transition (a redrive moves it).
    pub deadline: u64,
    /// The job's `available_at` after the transition: when a pending job is due or a lease
    /// runs out; `None` once done or dead.
    pub available_at: Option<u64>,
    /// The job's redrives after the transition.
    pub redrives: u64,
    /// Why the job died, for a transition to dead.
    pub reason: Option<DeadReason>,
    /// The lease holder involved, if any.
    pub worker: Option<String>,
    /// The `now` of the operation.
    pub at: u64,
}

const JOB_COLUMNS: &str = "id, payload, status, attempts, max_attempts, available_at, deadline, \
                           dead_reason, redrives, enqueued_at, owner, claimed_at, last_error, last_node, \
                           not_before, base_ms, cap_ms, queue, priority, ended_at, cancel_requested, kind";

const GET: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE id = ?1";

/// The earliest time an open job needs a worker: a pending job's reservation or a lease's
/// expiry. A pending job is due before its deadline (invariant 6), and a lease is reaped no
/// earlier than its expiry, so nothing happens to any job before this time but through a
/// caller. One `min` over the `jobs_due` index per queue with open jobs (as `counts` has
/// them) and priority: each reads one entry.
const NEXT_DUE: &str = "
    SELECT min((SELECT min(available_at) FROM jobs
                WHERE queue = q.queue AND priority = p.value AND status IN ('pending', 'leased')))
    FROM (SELECT DISTINCT queue FROM counts WHERE (status = 'pending' OR status = 'leased') AND n > 0) AS q,
         (SELECT 0 AS value UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3
          UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7
          UNION ALL SELECT 8 UNION ALL SELECT 9) AS p";

/// [`NEXT_DUE`] of one queue (`?1`): ten reads of one index entry each.
const NEXT_DUE_OF: &str = "
    SELECT min((SELECT min(available_at) FROM jobs
                WHERE queue = ?1 AND priority = p.value AND status IN ('pending', 'leased')))
    FROM (SELECT 0 AS value UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3
          UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7
          UNION ALL SELECT 8 UNION ALL SELECT 9) AS p";

/// The counts by status and reason, of one queue (`?1`) or of all: the rows of `counts`, which
/// the triggers keep in the same transaction as every transition, so `stats` reads as many
/// rows as there are queues, statuses and reasons, whatever the number of jobs.
const COUNTS: &str = "
    SELECT status, reason, sum(n) FROM counts WHERE ?1 IS NULL OR queue = ?1 GROUP BY status, reason";

/// Expired leases: per queue the counts show leases in, a range of the `jobs_leases` index
/// (queue, then expiry) up to `?1` — as many entries as there are expired leases, however
/// many leases are held (a walk of every lease grew with the fleet's work in flight).
const LEASED_EXPIRED: &str = "
    SELECT coalesce(sum((SELECT count(*) FROM jobs
                         WHERE queue = q.queue AND status = 'leased' AND available_at <= ?1)), 0)
    FROM (SELECT DISTINCT queue FROM counts
          WHERE status = 'leased' AND n > 0 AND (?2 IS NULL OR queue = ?2)) AS q";

/// The oldest open job's `enqueued_at`: one `min` over `jobs_open_age` per queue with open
/// jobs.
const OLDEST_OPEN: &str = "
    SELECT min((SELECT min(enqueued_at) FROM jobs
                WHERE queue = q.queue AND status IN ('pending', 'leased')))
    FROM (SELECT DISTINCT queue FROM counts
          WHERE (status = 'pending' OR status = 'leased') AND n > 0 AND (?1 IS NULL OR queue = ?1)) AS q";

/// The leased rows, grouped by holder.
const OWNERS: &str = "
    SELECT owner, count(*), count(*) FILTER (WHERE available_at <= ?1)
    FROM jobs
    WHERE status = 'leased'
    GROUP BY owner ORDER BY owner";

const HISTORY: &str = "
    SELECT from_status, to_status, attempt, max_attempts, deadline, available_at, redrives,
           reason, worker, at
    FROM history WHERE job = ?1 ORDER BY n";

pub(super) fn job_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Job> {
    Ok(Job {
        id: row.get(0)?,
        payload: row.get(1)?,
        status: row.get(2)?,
        attempts: row.get(3)?,
        max_attempts: row.get(4)?,
        available_at: row.get(5)?,
        deadline: row.get(6)?,
        dead_reason: row.get(7)?,
        redrives: row.get(8)?,
        enqueued_at: row.get(9)?,
        owner: row.get(10)?,
        claimed_at: row.get(11)?,
        last_error: row.get(12)?,
        last_node: row.get(13)?,
        not_before: row.get(14)?,
        base_ms: row.get(15)?,
        cap_ms: row.get(16)?,
        queue: row.get(17)?,
        priority: row.get(18)?,
        ended_at: row.get(19)?,
        cancel_requested: row.get(20)?,
        kind: row.get(21)?,
    })
}

const TOMBSTONE: &str = "
    SELECT id, queue, digest, status, dead_reason, attempts, ended_at FROM tombstones WHERE id = ?1";

fn tombstone_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Tombstone> {
    Ok(Tombstone {
        id: row.get(0)?,
        queue: row.get(1)?,
        digest: row.get(2)?,
        status: row.get(3)?,
        dead_reason: row.get(4)?,
        attempts: row.get(5)?,
        ended_at: row.get(6)?,
    })
}

impl Queue {
    /// The job with this id, if there is one.
    ///
    /// ```
    /// use retryq::{NewJob, Queue, Status};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// assert_eq!(q.get("a")?, None);
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let job = q.get("a")?.expect("stored");
    /// assert_eq!((job.status, job.attempts, job.available_at), (Status::Pending, 0, Some(0)));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn get(&self, id: &str) -> Result<Option<Job>> {
        input::name("id", id)?;
        self.read(|tx| Ok(tx.prepare_cached(GET)?.query_row([id], job_of).optional()?))
    }

    /// The dead jobs, with `reason` only those dead for it, in the order they were first
    /// enqueued.
    ///
    /// ```
    /// use retryq::{Completion, DeadReason, NewJob, Outcome, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// q.enqueue(&NewJob { id: "b", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let claimed = q.claim("w1", 10)?.expect("due");
    /// q.complete(&Completion::new(&claimed.lease, Outcome::Permanent, 20, 0.5))?;
    /// let dead = q.dead_jobs(None)?;
    /// assert_eq!(dead.len(), 1);
    /// assert_eq!(dead[0].id, "a");
    /// assert!(q.dead_jobs(Some(DeadReason::Exhausted))?.is_empty());
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn dead_jobs(&self, reason: Option<DeadReason>) -> Result<Vec<Job>> {
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE status = 'dead' AND (?1 IS NULL OR dead_reason = ?1) \
             ORDER BY seq"
        );
        self.read(|tx| {
            let mut statement = tx.prepare_cached(&sql)?;
            let jobs = statement.query_map([reason], job_of)?.collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(jobs)
        })
    }

    /// When the next open job needs a worker: the smallest `available_at` of the pending and
    /// leased jobs (a reservation or a lease expiry), which may already have passed. `None`
    /// when no job is pending or leased. Reads only; a worker with nothing due sleeps until
    /// then.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// assert_eq!(q.next_due()?, None);
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 5, ..NewJob::default() })?;
    /// assert_eq!(q.next_due()?, Some(5));
    /// q.claim("w1", 10)?;
    /// // Leased: the next time anything can change is the lease's expiry.
    /// assert_eq!(q.next_due()?, Some(10 + q.settings().lease_ms));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn next_due(&self) -> Result<Option<u64>> {
        self.read(|tx| Ok(tx.prepare_cached(NEXT_DUE)?.query_row([], |row| row.get(0))?))
    }

    /// [`next_due`](Queue::next_due) of the jobs of `queues` alone: when a worker serving
    /// them has something to claim, or a job of theirs to end. A worker sleeps until then
    /// (its claims end the other queues' jobs as they come, SPEC 6.27), so a due job of a
    /// queue it does not serve never wakes it; `None` when none of them has a pending or
    /// leased job.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 5, ..NewJob::default() })?;
    /// q.enqueue(&NewJob { id: "m", payload: "{}", max_attempts: 3, deadline: 60000, now: 1, queue: Some("mail"), ..NewJob::default() })?;
    /// assert_eq!(q.next_due_in(&["default"])?, Some(5));
    /// assert_eq!(q.next_due_in(&["sms"])?, None);
    /// assert_eq!(q.next_due_in(&["sms", "mail"])?, Some(1));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn next_due_in(&self, queues: &[&str]) -> Result<Option<u64>> {
        input::queues(queues)?;
        self.read(|tx| {
            let mut next: Option<u64> = None;
            let mut of = tx.prepare_cached(NEXT_DUE_OF)?;
            for queue in queues {
                // A paused queue has nothing to do until its resume wakes the workers.
                if super::pause::is_paused(tx, queue)? {
                    continue;
                }
                let due: Option<u64> = of.query_row([queue], |row| row.get(0))?;
                next = next.into_iter().chain(due).min();
            }
            Ok(next)
        })
    }

    /// Counts by status and dead reason, expired leases, and the oldest open job's age, as of
    /// `now`.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// q.enqueue(&NewJob { id: "b", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// q.claim("w1", 10)?;
    /// let stats = q.stats(40_000)?;
    /// assert_eq!((stats.pending, stats.leased), (1, 1));
    /// // 40 s later the 30 s lease has run out: its worker may be gone.
    /// assert_eq!(stats.leased_expired, 1);
    /// assert_eq!(stats.oldest_open_age_ms, Some(40_000));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn stats(&self, now: u64) -> Result<Stats> {
        self.stats_of(now, None)
    }

    /// The job or the tombstone `id` names (SPEC 3.9), in one snapshot: `get` of a pruned
    /// id is `None`, as for an id never enqueued; this tells the two apart.
    ///
    /// ```
    /// use retryq::{Lookup, NewJob, Queue, Status};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })?;
    /// q.cancel("a", 10)?;
    /// assert_eq!(q.prune(10, 20)?, 1);
    /// let Some(Lookup::Pruned(tombstone)) = q.lookup("a")? else { panic!("a tombstone") };
    /// assert_eq!((tombstone.status, tombstone.ended_at), (Status::Dead, 10));
    /// assert_eq!(q.get("a")?, None);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn lookup(&self, id: &str) -> Result<Option<Lookup>> {
        input::name("id", id)?;
        self.read(|tx| {
            if let Some(job) = tx.prepare_cached(GET)?.query_row([id], job_of).optional()? {
                return Ok(Some(Lookup::Job(job)));
            }
            let tombstone = tx.prepare_cached(TOMBSTONE)?.query_row([id], tombstone_of).optional()?;
            Ok(tombstone.map(Lookup::Pruned))
        })
    }

    /// [`stats`](Queue::stats) of one queue's jobs and tombstones, or of all (SPEC 3.8). The
    /// counts come from the `counts` table, not from a scan: the same cost at ten million
    /// jobs as at ten.
    pub fn stats_of(&self, now: u64, queue: Option<&str>) -> Result<Stats> {
        input::int("now", now)?;
        if let Some(queue) = queue {
            input::queue("queue", queue)?;
        }
        self.read(|tx| {
            let mut stats = Stats::default();
            let mut counts = tx.prepare_cached(COUNTS)?;
            let mut rows = counts.query(params![queue])?;
            while let Some(row) = rows.next()? {
                let status: String = row.get(0)?;
                let reason: String = row.get(1)?;
                let n: u64 = row.get(2)?;
                stats.count(&status, &reason, n)?;
            }
            stats.leased_expired =
                tx.prepare_cached(LEASED_EXPIRED)?.query_row(params![now, queue], |row| row.get(0))?;
            let oldest: Option<u64> =
                tx.prepare_cached(OLDEST_OPEN)?.query_row(params![queue], |row| row.get(0))?;
            stats.oldest_open_age_ms = oldest.map(|at| now.saturating_sub(at));
            stats.paused_queues =
                tx.prepare_cached(super::pause::PAUSED_COUNT)?.query_row(params![queue], |row| row.get(0))?;
            Ok(stats)
        })
    }

    /// Each worker that holds leases, by name, with how many it holds and how many of those
    /// have expired as of `now`. Reads only.
    pub fn owners(&self, now: u64) -> Result<Vec<Owner>> {
        input::int("now", now)?;
        self.read(|tx| {
            let mut statement = tx.prepare_cached(OWNERS)?;
            let rows = statement.query_map([now], |row| {
                Ok(Owner { worker: row.get(0)?, leased: row.get(1)?, expired: row.get(2)? })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Every recorded transition of the job, oldest first (empty if there is no such job).
    ///
    /// ```
    /// use retryq::{Completion, NewJob, Outcome, Queue, Status};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let claimed = q.claim("w1", 10)?.expect("due");
    /// q.complete(&Completion::new(&claimed.lease, Outcome::Ok, 20, 0.5))?;
    /// let steps: Vec<_> = q.history("a")?.iter().map(|e| (e.from, e.to, e.at)).collect();
    /// assert_eq!(steps, [
    ///     (None, Status::Pending, 0),
    ///     (Some(Status::Pending), Status::Leased, 10),
    ///     (Some(Status::Leased), Status::Done, 20),
    /// ]);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn history(&self, id: &str) -> Result<Vec<HistoryEntry>> {
        input::name("id", id)?;
        self.read(|tx| {
            let mut statement = tx.prepare_cached(HISTORY)?;
            let rows = statement.query_map(params![id], |row| {
                Ok(HistoryEntry {
                    from: row.get(0)?,
                    to: row.get(1)?,
                    attempt: row.get(2)?,
                    max_attempts: row.get(3)?,
                    deadline: row.get(4)?,
                    available_at: row.get(5)?,
                    redrives: row.get(6)?,
                    reason: row.get(7)?,
                    worker: row.get(8)?,
                    at: row.get(9)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

/// One page of [`Queue::list`]: the first jobs in the listing's order, and how many more
/// match past them, so that an operator knows whether the page is the whole story.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobPage {
    /// The jobs on this page, in the listing's order.
    pub jobs: Vec<Job>,
    /// Matching jobs not on the page.
    pub more: u64,
}

/// Pending or leased jobs queue by queue, each in claim's order: `priority`, `available_at`,
/// then first enqueue. The `status IN (…)` term repeats what `status = ?1` says for these two
/// words; it is what lets SQLite walk the partial index `jobs_due` (in `seq` order within a
/// time, as every index carries the rowid last) instead of scanning and sorting.
const LIST_OPEN: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE status IN ('pending', 'leased') AND status = ?1
    ORDER BY queue, priority, available_at, seq LIMIT ?2";

/// Done or dead jobs (dead ones only for `?2`'s reason, if any), the most recently enqueued
/// first. No index orders finished jobs by when they finished (`updated_at` has none, and the
/// schema is not changed for a listing), so this walks the table backwards by `seq`, its
/// rowid, and stops once the page is full: no sort, and a page costs as many rows as lie
/// between the newest job and the page's last one.
const LIST_CLOSED: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE status = ?1 AND (?2 IS NULL OR dead_reason = ?2)
    ORDER BY seq DESC LIMIT ?3";

/// How many jobs of a status there are (dead ones only for `?2`'s reason, if any): the kept
/// counts (`ddl.rs`), a few rows a queue, as `stats` reads them. Counting the jobs themselves
/// cost a pass over every job of the status (a quarter of a second for the done jobs of a
/// store of 10^6, `retryq bench --scale`). A count's `reason` is `''` but for dead jobs, as
/// `dead_reason` is `NULL`, so a reason with another status counts nothing either way.
const COUNT: &str =
    "SELECT coalesce(sum(n), 0) FROM counts WHERE status = ?1 AND (?2 IS NULL OR reason = ?2)";

impl Queue {
    /// Up to `limit` jobs of one status, in the order an operator needs them: pending and
    /// leased jobs as claim would take them (`available_at`, then first enqueue), done and
    /// dead jobs the most recently enqueued first. `reason` keeps only the dead jobs dead for
    /// it; a job of any other status has no reason, so with another status the page is empty.
    /// One read transaction: the page and its count agree.
    pub fn list(&self, status: Status, reason: Option<DeadReason>, limit: u32) -> Result<JobPage> {
        self.read(|tx| {
            let open = matches!(status, Status::Pending | Status::Leased);
            let (jobs, total) = if open && reason.is_some() {
                (Vec::new(), 0)
            } else if open {
                let jobs = tx
                    .prepare_cached(LIST_OPEN)?
                    .query_map(params![status, limit], job_of)?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let count = || tx.prepare_cached(COUNT)?.query_row(params![status, reason], |row| row.get(0));
                let total: u64 = if jobs.len() < limit as usize { jobs.len() as u64 } else { count()? };
                (jobs, total)
            } else {
                let jobs = tx
                    .prepare_cached(LIST_CLOSED)?
                    .query_map(params![status, reason, limit], job_of)?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                let count = || tx.prepare_cached(COUNT)?.query_row(params![status, reason], |row| row.get(0));
                let total: u64 = if jobs.len() < limit as usize { jobs.len() as u64 } else { count()? };
                (jobs, total)
            };
            let more = total.saturating_sub(jobs.len() as u64);
            Ok(JobPage { jobs, more })
        })
    }

    /// Up to `limit` leased jobs, queue by queue, each queue's soonest lease end first: read
    /// along the leases' index ([`LEASES`]), so a page costs `limit` rows however many
    /// pending or finished jobs the store holds (`list` of leased jobs walks every open one).
    pub fn leases(&self, limit: u32) -> Result<Vec<Job>> {
        self.read(|tx| {
            Ok(tx.prepare_cached(LEASES)?.query_map([limit], job_of)?.collect::<rusqlite::Result<_>>()?)
        })
    }
}

/// Leased jobs in `jobs_leases`' order, `?1` of them: the index read in order, no sort (the
/// plan is pinned by `leases_read_the_leases_index_in_order`).
const LEASES: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind
    FROM jobs WHERE status = 'leased'
    ORDER BY queue, available_at LIMIT ?1";

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use super::*;
    use crate::{Completion, Lease, Redrive};
    use crate::{NewJob, Outcome};

    #[test]
    fn stats_count_by_status_and_reason_without_moving_anything() {
        let mut q = queue();
        assert_eq!(q.stats(0).expect("stats"), Stats::default());
        for (id, now) in [("a", 10), ("b", 20), ("c", 30), ("d", 40)] {
            q.enqueue(&NewJob { id, payload: "", max_attempts: 1, deadline: 5000, now, ..NewJob::default() })
                .expect("enqueue");
        }
        let a = q.claim("w", 100).expect("claim").expect("a");
        q.complete(&Completion::new(&Lease::new("w", a.id(), 1), Outcome::Ok, 100, 0.0)).expect("done");
        let b = q.claim("w", 100).expect("claim").expect("b");
        q.complete(&Completion::new(&Lease::new("w", b.id(), 1), Outcome::Permanent, 100, 0.0))
            .expect("dead");
        q.claim("w", 100).expect("claim").expect("c");
        // At 1100 c's lease has expired but nothing reaped it: stats shows it as stored.
        let stats = q.stats(1100).expect("stats");
        let expected = Stats {
            pending: 1,
            leased: 1,
            done: 1,
            dead: 1,
            dead_permanent: 1,
            leased_expired: 1,
            oldest_open_age_ms: Some(1070),
            ..Stats::default()
        };
        assert_eq!(stats, expected);
        assert_eq!(q.stats(1099).expect("stats").leased_expired, 0);
        // The age is 0 at least, even with a clock behind the enqueue.
        assert_eq!(q.stats(0).expect("stats").oldest_open_age_ms, Some(0));
        // Time passing in stats moves nothing.
        assert_eq!(q.stats(1_000_000).expect("stats").dead, 1);
    }

    #[test]
    fn next_due_is_the_earliest_reservation_or_lease_expiry() {
        let mut q = queue();
        assert_eq!(q.next_due().expect("next"), None);
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 3,
            deadline: 5000,
            now: 10,
            ..NewJob::default()
        })
        .expect("enqueue");
        q.enqueue(&NewJob {
            id: "b",
            payload: "",
            max_attempts: 3,
            deadline: 5000,
            now: 20,
            ..NewJob::default()
        })
        .expect("enqueue");
        assert_eq!(q.next_due().expect("next"), Some(10));
        q.claim("w", 30).expect("claim").expect("a");
        // a is leased until 1030; b is due since 20.
        assert_eq!(q.next_due().expect("next"), Some(20));
        let b = q.claim("w", 40).expect("claim").expect("b");
        assert_eq!(q.next_due().expect("next"), Some(1030));
        q.complete(&Completion::new(&b.lease, Outcome::Retryable, 50, 1.0)).expect("retry");
        assert_eq!(q.next_due().expect("next"), Some(150), "b's retry at 50 + 100");
        q.complete(&Completion::new(&Lease::new("w", "a", 1), Outcome::Ok, 60, 0.0)).expect("done");
        q.complete(&Completion::new(&Lease::new("w", "b", 1), Outcome::Ok, 60, 0.0)).unwrap_err();
        let b = q.claim("w", 150).expect("claim").expect("b again");
        q.complete(&Completion::new(&b.lease, Outcome::Permanent, 151, 0.0)).expect("dead");
        assert_eq!(q.next_due().expect("next"), None, "done and dead jobs need nobody");
    }

    #[test]
    fn owners_count_each_holders_leases_live_and_expired() {
        let mut q = queue();
        assert_eq!(q.owners(0).expect("owners"), []);
        for id in ["a", "b", "c", "d"] {
            q.enqueue(&NewJob {
                id,
                payload: "",
                max_attempts: 3,
                deadline: 50_000,
                now: 0,
                ..NewJob::default()
            })
            .expect("enqueue");
        }
        q.claim_batch("w2", 10, 2).expect("claim");
        let c = q.claim("w1", 500).expect("claim").expect("c");
        q.claim("w1", 600).expect("claim").expect("d");
        q.complete(&Completion::new(&c.lease, Outcome::Ok, 700, 0.0)).expect("done");
        // At 1010 w2's leases (until 1010) have expired; w1 holds d until 1600.
        let owner = |worker: &str, leased, expired| Owner { worker: worker.into(), leased, expired };
        assert_eq!(q.owners(1010).expect("owners"), [owner("w1", 1, 0), owner("w2", 2, 2)]);
        assert_eq!(q.owners(1009).expect("owners"), [owner("w1", 1, 0), owner("w2", 2, 0)]);
    }

    #[test]
    fn next_due_reads_one_index_entry() {
        let q = queue();
        let plan: Vec<String> = q
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {NEXT_DUE}"))
            .expect("explain")
            .query_map([], |row| row.get::<_, String>(3))
            .expect("plan")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert!(plan.join("\n").contains("jobs_due"), "{plan:?}");
    }

    #[test]
    fn dead_jobs_are_listed_by_reason_in_enqueue_order() {
        let mut q = queue();
        for id in ["a", "b", "c", "d"] {
            q.enqueue(&NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: 5000,
                now: 0,
                ..NewJob::default()
            })
            .expect("enqueue");
        }
        for outcome in [Outcome::Permanent, Outcome::Ok, Outcome::Permanent] {
            let c = q.claim("w", 1).expect("claim").expect("claimed");
            q.complete(&Completion::new(&c.lease, outcome, 1, 0.0)).expect("complete");
        }
        q.reap(5000).expect("reap");
        let ids = |jobs: Vec<Job>| jobs.into_iter().map(|j| j.id).collect::<Vec<_>>();
        assert_eq!(ids(q.dead_jobs(None).expect("dead")), ["a", "c", "d"]);
        assert_eq!(ids(q.dead_jobs(Some(DeadReason::Permanent)).expect("dead")), ["a", "c"]);
        assert_eq!(ids(q.dead_jobs(Some(DeadReason::Deadline)).expect("dead")), ["d"]);
        assert!(q.dead_jobs(Some(DeadReason::Exhausted)).expect("dead").is_empty());
    }

    #[test]
    fn history_records_every_transition() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 2,
            deadline: 5000,
            now: 1,
            ..NewJob::default()
        })
        .expect("enqueue");
        q.claim("w1", 2).expect("claim").expect("claimed");
        q.complete(&Completion::new(&Lease::new("w1", "a", 1), Outcome::Retryable, 3, 0.0)).expect("retry");
        q.claim("w2", 4).expect("claim").expect("claimed");
        q.reap(1004).expect("reap");
        q.redrive(&Redrive { id: "a", add_attempts: 1, deadline: 6000, now: 1005 }).expect("redrive");
        let steps: Vec<_> = q
            .history("a")
            .expect("history")
            .into_iter()
            .map(|h| (h.from, h.to, h.attempt, h.reason, h.worker, h.at))
            .collect();
        use Status::*;
        assert_eq!(
            steps,
            [
                (None, Pending, 0, None, None, 1),
                (Some(Pending), Leased, 1, None, Some("w1".into()), 2),
                (Some(Leased), Pending, 1, None, Some("w1".into()), 3),
                (Some(Pending), Leased, 2, None, Some("w2".into()), 4),
                (Some(Leased), Dead, 2, Some(DeadReason::Exhausted), Some("w2".into()), 1004),
                (Some(Dead), Pending, 2, None, None, 1005),
            ]
        );
        assert!(q.history("nobody").expect("history").is_empty());
    }

    fn plan(q: &Queue, sql: &str, params: impl rusqlite::Params) -> String {
        let rows: Vec<String> = q
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("explain")
            .query_map(params, |row| row.get::<_, String>(3))
            .expect("plan")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        rows.join("\n")
    }

    #[test]
    fn listing_open_jobs_walks_jobs_due_and_finished_ones_the_rowid_without_sorting() {
        let q = queue();
        let open = plan(&q, LIST_OPEN, params![Status::Pending, 10]);
        assert!(open.contains("jobs_due") && !open.contains("TEMP B-TREE"), "{open}");
        // The page's count reads the kept counts, never the jobs.
        for (status, reason) in
            [(Status::Leased, None), (Status::Done, None), (Status::Dead, Some(DeadReason::Cancelled))]
        {
            let count = plan(&q, COUNT, params![status, reason]);
            assert!(count.contains("counts") && !count.contains("jobs"), "{count}");
        }
        let closed = plan(&q, LIST_CLOSED, params![Status::Dead, DeadReason::Deadline, 10]);
        assert!(!closed.contains("TEMP B-TREE"), "{closed}");
    }

    #[test]
    fn leases_read_the_leases_index_in_order() {
        let mut q = queue();
        // Enqueued b before a; a's last job stays pending. The page is queue by queue, each
        // queue's soonest lease end first, and leaves pending jobs out.
        let mut a1 = None;
        for (n, (id, queue)) in
            [("b1", "b"), ("b2", "b"), ("a1", "a"), ("a2", "a"), ("a3", "a")].iter().enumerate()
        {
            let job = NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: 1_000_000,
                now: 10,
                queue: Some(queue),
                ..NewJob::default()
            };
            q.enqueue(&job).expect("enqueue");
            if *id != "a3" {
                let claimed = q.claim_from("w", &[queue], 100 + n as u64).expect("claim").expect("a job");
                if *id == "a1" {
                    a1 = Some(claimed.lease);
                }
            }
        }
        let ids = |jobs: Vec<Job>| jobs.into_iter().map(|j| j.id).collect::<Vec<_>>();
        assert_eq!(ids(q.leases(10).expect("leases")), ["a1", "a2", "b1", "b2"]);
        assert_eq!(ids(q.leases(3).expect("leases")), ["a1", "a2", "b1"]);
        // A heartbeat moves a1's lease end past a2's: by lease end, not by claim or id.
        q.heartbeat(&a1.expect("a1's lease"), 500).expect("heartbeat");
        assert_eq!(ids(q.leases(10).expect("leases")), ["a2", "a1", "b1", "b2"]);
        let page = plan(&q, LEASES, params![10]);
        assert!(page.contains("jobs_leases") && !page.contains("TEMP B-TREE"), "{page}");
    }

    #[test]
    fn expired_leases_are_counted_from_a_range_of_each_queues_leases() {
        let mut q = queue();
        for (id, queue) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("b2", "b"), ("c1", "c")] {
            q.enqueue(&NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: 1_000_000,
                now: 10,
                queue: Some(queue),
                ..NewJob::default()
            })
            .expect("enqueue");
        }
        // Leases of a, b and a taken at 100, 200 and 300 (each expiring a lease later); c's
        // job stays pending.
        for (at, queue) in [(100, "a"), (200, "b"), (300, "a")] {
            q.claim_from("w", &[queue], at).expect("claim").expect("a job");
        }
        let lease = q.stats(0).expect("stats").leased;
        assert_eq!(lease, 3);
        let expired = |now: u64, queue: Option<&str>| q.stats_of(now, queue).expect("stats").leased_expired;
        let lease_ms = q.settings().lease_ms;
        assert_eq!(expired(100 + lease_ms - 1, None), 0);
        assert_eq!(expired(100 + lease_ms, None), 1);
        assert_eq!(expired(200 + lease_ms, None), 2);
        assert_eq!(expired(300 + lease_ms, None), 3);
        assert_eq!((expired(200 + lease_ms, Some("a")), expired(200 + lease_ms, Some("b"))), (1, 1));
        assert_eq!((expired(300 + lease_ms, Some("a")), expired(300 + lease_ms, Some("b"))), (2, 1));
        assert_eq!(expired(300 + lease_ms, Some("c")), 0);
        let plan = plan(&q, LEASED_EXPIRED, params![1000, Option::<&str>::None]);
        assert!(plan.contains("jobs_leases (queue=? AND available_at<?)"), "{plan}");
    }

    #[test]
    fn a_listing_is_in_claim_order_or_newest_first_and_counts_what_is_left() {
        let mut q = queue();
        for (id, now) in [("late", 50), ("b", 10), ("a", 10), ("c", 20), ("d", 30)] {
            q.enqueue(&NewJob { id, payload: "", max_attempts: 1, deadline: 5000, now, ..NewJob::default() })
                .expect("enqueue");
        }
        let ids = |page: &JobPage| page.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>().join(" ");
        let page = q.list(Status::Pending, None, 3).expect("list");
        assert_eq!((ids(&page).as_str(), page.more), ("b a c", 2));
        let page = q.list(Status::Pending, None, 5).expect("list");
        assert_eq!((ids(&page).as_str(), page.more), ("b a c d late", 0));
        assert_eq!(q.list(Status::Pending, None, 0).expect("list").more, 5);

        // b and a leave for done and dead; c is leased.
        for outcome in [Outcome::Ok, Outcome::Permanent] {
            let c = q.claim("w", 60).expect("claim").expect("claimed");
            q.complete(&Completion::new(&c.lease, outcome, 60, 0.0)).expect("complete");
        }
        q.claim("w", 60).expect("claim").expect("c");
        assert_eq!(ids(&q.list(Status::Leased, None, 10).expect("list")), "c");
        assert_eq!(ids(&q.list(Status::Done, None, 10).expect("list")), "b");
        // At 5000 every open job dies: c's lease was its last attempt, d and late reach their
        // deadline. The dead are listed newest first, and by reason.
        q.reap(5000).expect("reap");
        let page = q.list(Status::Dead, None, 1).expect("list");
        assert_eq!((ids(&page).as_str(), page.more), ("d", 3));
        assert_eq!(ids(&q.list(Status::Dead, None, 10).expect("list")), "d c a late");
        assert_eq!(ids(&q.list(Status::Dead, Some(DeadReason::Permanent), 10).expect("list")), "a");
        assert_eq!(ids(&q.list(Status::Dead, Some(DeadReason::Exhausted), 10).expect("list")), "c");
        let page = q.list(Status::Dead, Some(DeadReason::Deadline), 1).expect("list");
        assert_eq!((ids(&page).as_str(), page.more), ("d", 1));
        // Only a dead job has a reason.
        assert_eq!(q.list(Status::Leased, Some(DeadReason::Deadline), 10).expect("list"), JobPage::default());
    }
}
