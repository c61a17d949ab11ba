//! `browse`: an operator's listing of jobs by any mix of status, dead reason, queue, id prefix
//! and age, newest first, a page at a time. What a dashboard's job list reads; `list` stays
//! the command line's (claim's order for open jobs).
//!
//! Paging is by keyset, not by offset: a page ends with the position of its last job, and the
//! next page starts after it, so a page costs the same wherever it is and jobs enqueued
//! meanwhile never shift a page under an operator.

use rusqlite::{ToSql, params, params_from_iter};

use super::inspect::job_of;
use super::store::Queue;
use crate::error::Result;
use crate::input;
use crate::job::{DeadReason, Job, Status};

/// What [`Queue::browse`] keeps, and where its page starts. Every filter left `None` keeps
/// every job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Browse<'a> {
    /// Only jobs of this status.
    pub status: Option<Status>,
    /// Only dead jobs dead for this reason.
    pub reason: Option<DeadReason>,
    /// Only jobs of this queue.
    pub queue: Option<&'a str>,
    /// Only jobs whose id starts with these bytes.
    pub id_prefix: Option<&'a str>,
    /// Only jobs first enqueued at or before this time (Unix milliseconds): the older ones.
    pub enqueued_by: Option<u64>,
    /// Where the page starts: a [`BrowsePage::next`] of the page before, `None` for the first.
    pub after: Option<u64>,
    /// The most jobs on the page (at least 1).
    pub limit: u32,
}

/// One page of [`Queue::browse`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BrowsePage {
    /// The jobs, the most recently enqueued first.
    pub jobs: Vec<Job>,
    /// Where the next page starts (pass it as [`Browse::after`]), or `None` when this page is
    /// the last.
    pub next: Option<u64>,
}

/// Walks the table backwards by `seq`, the rowid (first enqueue order), from the page's start,
/// and stops once the page (and one more, to know whether a next page exists) is full: no
/// sort, and a page costs as many rows as lie between its start and its last match. The id
/// prefix compares bytes (`substr` of a BLOB cast), as ids are compared everywhere else.
const BROWSE: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind, seq
    FROM jobs
    WHERE seq < ?1
      AND (?2 IS NULL OR status = ?2)
      AND (?3 IS NULL OR dead_reason = ?3)
      AND (?4 IS NULL OR queue = ?4)
      AND (?5 IS NULL OR substr(CAST(id AS BLOB), 1, length(CAST(?5 AS BLOB))) = CAST(?5 AS BLOB))
      AND (?6 IS NULL OR enqueued_at <= ?6)
    ORDER BY seq DESC LIMIT ?7";

/// How many ids start with a prefix, counted up to `?3` along the id index's range of them
/// (`?1` ≤ id < `?2`, byte order): a few index entries, however large the table.
const PREFIX_MATCHES: &str = "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE id >= ?1 AND id < ?2 LIMIT ?3)";

/// The jobs whose ids start with a prefix, read from the id index's range of them (`?5` ≤ id
/// < `?8`) and sorted by `seq`: run when [`PREFIX_MATCHES`] found at most [`PREFIX_SORT`] of
/// them, so the sort is bounded, where the walk of [`BROWSE`] would pass over every job
/// enqueued since the matches (an operator's search for one order among millions).
const BROWSE_BY_ID: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind, seq
    FROM jobs INDEXED BY sqlite_autoindex_jobs_1
    WHERE id >= ?5 AND id < ?8
      AND seq < ?1
      AND (?2 IS NULL OR status = ?2)
      AND (?3 IS NULL OR dead_reason = ?3)
      AND (?4 IS NULL OR queue = ?4)
      AND (?6 IS NULL OR enqueued_at <= ?6)
    ORDER BY seq DESC LIMIT ?7";

/// The most matches of a prefix that [`BROWSE_BY_ID`] sorts; past it, matches are common
/// enough that the walk of [`BROWSE`] meets a page of them soon.
const PREFIX_SORT: i64 = 1000;

/// The least string greater than every string that starts with `prefix` (byte order, which
/// for UTF-8 is the order of code points): `prefix` with its last character the next one.
/// `None` when every character is the last there is (no such string).
pub(crate) fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            c => char::from_u32(u32::from(c) + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The queues that hold a job or a tombstone, by name: what the counts hold, not a scan.
pub(crate) const QUEUES: &str = "SELECT queue FROM counts GROUP BY queue HAVING sum(n) > 0 ORDER BY queue";

impl Queue {
    /// The queues that hold a job or a tombstone, in byte order of their names.
    pub fn queues(&self) -> Result<Vec<String>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(QUEUES)?
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?)
        })
    }

    /// Up to `filter.limit` jobs that match every filter of `filter`, the most recently
    /// enqueued first, from `filter.after` on; one read transaction.
    pub fn browse(&self, filter: &Browse<'_>) -> Result<BrowsePage> {
        check(filter)?;
        let start = filter.after.map_or(i64::MAX, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let enqueued_by = filter.enqueued_by.map(|at| i64::try_from(at).unwrap_or(i64::MAX));
        let limit = i64::from(filter.limit) + 1;
        let end = filter.id_prefix.and_then(prefix_end);
        self.read(|tx| {
            // The id index's range when the prefix has few matches ([`BROWSE_BY_ID`] takes its
            // end as `?8`), the walk otherwise.
            let mut by_id = None;
            if let (Some(prefix), Some(end)) = (filter.id_prefix, end.as_deref()) {
                let matches: i64 = tx
                    .prepare_cached(PREFIX_MATCHES)?
                    .query_row(params![prefix, end, PREFIX_SORT + 1], |row| row.get(0))?;
                if matches <= PREFIX_SORT {
                    by_id = Some(end);
                }
            }
            let args: [&dyn ToSql; 7] = [
                &start,
                &filter.status,
                &filter.reason,
                &filter.queue,
                &filter.id_prefix,
                &enqueued_by,
                &limit,
            ];
            let end_arg = by_id.as_ref().map(|end| end as &dyn ToSql);
            let mut rows = tx
                .prepare_cached(if by_id.is_some() { BROWSE_BY_ID } else { BROWSE })?
                .query_map(params_from_iter(args.into_iter().chain(end_arg)), |row| {
                    Ok((job_of(row)?, row.get::<_, i64>(22)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(page(&mut rows, filter.limit))
        })
    }
}

/// The filter's own checks, shared by both stores: a page holds at least one job, and the
/// names are names.
pub(crate) fn check(filter: &Browse<'_>) -> Result<()> {
    if filter.limit == 0 {
        return Err(crate::Error::invalid("limit", "a page holds at least 1 job"));
    }
    if let Some(queue) = filter.queue {
        input::queue("queue", queue)?;
    }
    if let Some(prefix) = filter.id_prefix {
        input::name("id_prefix", prefix)?;
    }
    Ok(())
}

/// The page out of up to `limit + 1` rows (the last one only tells that a next page exists),
/// each a job and its `seq`.
pub(crate) fn page(rows: &mut Vec<(Job, i64)>, limit: u32) -> BrowsePage {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = if more { rows.last().and_then(|(_, seq)| u64::try_from(*seq).ok()) } else { None };
    BrowsePage { jobs: rows.drain(..).map(|(job, _)| job).collect(), next }
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use super::*;
    use crate::{Completion, Lease, NewJob, Outcome};

    fn ids(page: &BrowsePage) -> Vec<&str> {
        page.jobs.iter().map(|job| job.id.as_str()).collect()
    }

    fn store() -> Queue {
        let mut q = queue();
        for (id, queue_name, now) in
            [("a-1", "default", 10), ("a-2", "mail", 20), ("b-1", "default", 30), ("b-2", "mail", 40)]
        {
            let job = NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: 5000,
                now,
                queue: Some(queue_name),
                ..NewJob::default()
            };
            q.enqueue(&job).expect("enqueue");
        }
        let claimed = q.claim("w", 100).expect("claim").expect("a-1");
        q.complete(&Completion::new(&Lease::new("w", claimed.id(), 1), Outcome::Permanent, 100, 0.0))
            .expect("dead");
        q
    }

    #[test]
    fn every_filter_keeps_only_its_jobs_newest_first() {
        let q = store();
        let all = Browse { limit: 10, ..Browse::default() };
        assert_eq!(ids(&q.browse(&all).expect("all")), ["b-2", "b-1", "a-2", "a-1"]);
        let dead = Browse { status: Some(Status::Dead), ..all.clone() };
        assert_eq!(ids(&q.browse(&dead).expect("dead")), ["a-1"]);
        let permanent = Browse { reason: Some(DeadReason::Permanent), ..all.clone() };
        assert_eq!(ids(&q.browse(&permanent).expect("permanent")), ["a-1"]);
        let exhausted = Browse { reason: Some(DeadReason::Exhausted), ..all.clone() };
        assert!(q.browse(&exhausted).expect("exhausted").jobs.is_empty());
        let mail = Browse { queue: Some("mail"), ..all.clone() };
        assert_eq!(ids(&q.browse(&mail).expect("mail")), ["b-2", "a-2"]);
        let prefix = Browse { id_prefix: Some("b-"), ..all.clone() };
        assert_eq!(ids(&q.browse(&prefix).expect("prefix")), ["b-2", "b-1"]);
        let old = Browse { enqueued_by: Some(20), ..all.clone() };
        assert_eq!(ids(&q.browse(&old).expect("old")), ["a-2", "a-1"]);
        let pending_mail =
            Browse { status: Some(Status::Pending), queue: Some("mail"), id_prefix: Some("a"), ..all };
        assert_eq!(ids(&q.browse(&pending_mail).expect("mixed")), ["a-2"]);
    }

    #[test]
    fn pages_follow_each_other_without_gaps_or_repeats() {
        let q = store();
        let first = q.browse(&Browse { limit: 3, ..Browse::default() }).expect("first");
        assert_eq!(ids(&first), ["b-2", "b-1", "a-2"]);
        let second = q.browse(&Browse { limit: 3, after: first.next, ..Browse::default() }).expect("second");
        assert_eq!(ids(&second), ["a-1"]);
        assert_eq!(second.next, None);
        // A full last page has no next page.
        let exact = q.browse(&Browse { limit: 4, ..Browse::default() }).expect("exact");
        assert_eq!((exact.jobs.len(), exact.next), (4, None));
    }

    /// Ids `x-0000` … and `y-…` enqueued interleaved, so that a prefix's matches are spread
    /// along `seq`; every other job of `x-` dead.
    fn spread(n: usize) -> Queue {
        let mut q = queue();
        for i in 0..n {
            for id in [format!("x-{i:04}"), format!("y-{i:04}")] {
                let job = NewJob {
                    id: &id,
                    payload: "",
                    max_attempts: 1,
                    deadline: 5000,
                    now: 10,
                    ..NewJob::default()
                };
                q.enqueue(&job).expect("enqueue");
            }
        }
        q
    }

    /// Every page of `filter`, followed to the end.
    fn all_pages(q: &Queue, filter: &Browse<'_>) -> Vec<String> {
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = q.browse(&Browse { after, ..filter.clone() }).expect("page");
            seen.extend(page.jobs.iter().map(|job| job.id.clone()));
            match page.next {
                Some(next) => after = Some(next),
                None => return seen,
            }
        }
    }

    #[test]
    fn a_prefix_pages_the_same_by_the_id_index_and_by_the_walk() {
        let n = 1_200;
        let q = spread(n);
        let newest_first = |keep: &dyn Fn(&str) -> bool| -> Vec<String> {
            (0..n).rev().map(|i| format!("x-{i:04}")).filter(|id| keep(id)).collect()
        };
        // 100 matches: read from the id index's range and sorted.
        let few = Browse { id_prefix: Some("x-00"), limit: 7, ..Browse::default() };
        assert_eq!(all_pages(&q, &few), newest_first(&|id| id.starts_with("x-00")));
        // 1,200 matches, past PREFIX_SORT: the walk.
        let many = Browse { id_prefix: Some("x-"), limit: 50, ..Browse::default() };
        assert_eq!(all_pages(&q, &many), newest_first(&|_| true));
        // One match, and none; a prefix that is a whole id and more.
        let one = Browse { id_prefix: Some("x-0999"), limit: 5, ..Browse::default() };
        assert_eq!(ids(&q.browse(&one).expect("one")), ["x-0999"]);
        let none = Browse { id_prefix: Some("x-09999"), limit: 5, ..Browse::default() };
        assert!(q.browse(&none).expect("none").jobs.is_empty());
        let after_y = Browse { id_prefix: Some("y-"), limit: 5, ..Browse::default() };
        assert_eq!(ids(&q.browse(&after_y).expect("y")), ["y-1199", "y-1198", "y-1197", "y-1196", "y-1195"]);
        // The other filters still apply on the index's path.
        let pending =
            Browse { id_prefix: Some("x-00"), status: Some(Status::Dead), limit: 5, ..Browse::default() };
        assert!(q.browse(&pending).expect("dead").jobs.is_empty());
    }

    #[test]
    fn a_prefix_ends_before_the_next_character() {
        assert_eq!(prefix_end("b-").as_deref(), Some("b."));
        assert_eq!(prefix_end("é").as_deref(), Some("ê"));
        assert_eq!(prefix_end("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{10FFFF}\u{10FFFF}"), None);
        // Byte order is code point order: every id with the prefix sorts below the end.
        for id in ["b-", "b-\u{10FFFF}", "b-zz"] {
            assert!(id.as_bytes() < "b.".as_bytes());
        }
    }

    #[test]
    fn a_prefix_is_read_from_a_range_of_the_id_index() {
        let q = spread(3);
        let plan = |sql: &str| -> String {
            q.read(|tx| {
                let mut stmt = tx.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
                let rows =
                    stmt.query_map(rusqlite::params_from_iter(nulls), |row| row.get::<_, String>(3))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?.join("\n"))
            })
            .expect("plan")
        };
        let by_id = plan(BROWSE_BY_ID);
        assert!(by_id.contains("USING INDEX sqlite_autoindex_jobs_1 (id>? AND id<?)"), "{by_id}");
        let matches = plan(PREFIX_MATCHES);
        assert!(
            matches.contains("USING COVERING INDEX sqlite_autoindex_jobs_1 (id>? AND id<?)"),
            "{matches}"
        );
    }

    #[test]
    fn the_queues_are_those_with_jobs() {
        assert_eq!(queue().queues().expect("none"), Vec::<String>::new());
        assert_eq!(store().queues().expect("two"), ["default", "mail"]);
    }

    #[test]
    fn a_bad_filter_is_refused_by_name() {
        let q = store();
        let zero = q.browse(&Browse::default()).expect_err("limit 0");
        assert!(zero.to_string().contains("limit"), "{zero}");
        let nul = q.browse(&Browse { queue: Some("a\0b"), limit: 1, ..Browse::default() }).expect_err("NUL");
        assert!(nul.to_string().contains("queue"), "{nul}");
    }
}
