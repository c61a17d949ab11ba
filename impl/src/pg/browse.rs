//! [`Queue::browse`](crate::Queue::browse) on PostgreSQL: the same filters, order and keyset
//! paging (see `queue/browse.rs`).

use super::inspect::job_of;
use super::store::PgQueue;
use super::value::{big, opt_big};
use crate::error::Result;
use crate::job::{DeadReason, Status};
use crate::queue::browse::{Browse, BrowsePage, QUEUES, check, page};

/// Backwards by `seq` (the primary key's order: first enqueue) from the page's start, one more
/// row than the page to know whether a next one exists. `starts_with` compares characters,
/// which for a UTF-8 prefix is comparing its bytes.
const BROWSE: &str = "
    SELECT id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
           redrives, enqueued_at, owner, claimed_at, last_error, last_node, not_before, base_ms,
           cap_ms, queue, priority, ended_at, cancel_requested, kind, seq
    FROM jobs
    WHERE seq < $1
      AND ($2::text IS NULL OR status = $2)
      AND ($3::text IS NULL OR dead_reason = $3)
      AND ($4::text IS NULL OR queue = $4)
      AND ($5::text IS NULL OR starts_with(id, $5))
      AND ($6::bigint IS NULL OR enqueued_at <= $6)
    ORDER BY seq DESC LIMIT $7";

impl PgQueue {
    /// [`Queue::queues`](crate::Queue::queues) on PostgreSQL.
    pub fn queues(&self) -> Result<Vec<String>> {
        self.read(|tx| {
            Ok(tx
                .query(QUEUES, &[])?
                .iter()
                .map(|row| row.try_get(0))
                .collect::<std::result::Result<_, _>>()?)
        })
    }

    /// [`Queue::browse`](crate::Queue::browse) on PostgreSQL.
    pub fn browse(&self, filter: &Browse<'_>) -> Result<BrowsePage> {
        check(filter)?;
        let start = filter.after.map_or(i64::MAX, |seq| i64::try_from(seq).unwrap_or(i64::MAX));
        let status = filter.status.map(Status::as_str);
        let reason = filter.reason.map(DeadReason::as_str);
        let enqueued_by = opt_big("enqueued_by", filter.enqueued_by)?;
        let limit = big("limit", u64::from(filter.limit) + 1)?;
        self.read(|tx| {
            let rows = tx.query(
                BROWSE,
                &[&start, &status, &reason, &filter.queue, &filter.id_prefix, &enqueued_by, &limit],
            )?;
            let mut jobs = rows
                .iter()
                .map(|row| Ok((job_of(row)?, row.try_get::<_, i64>(22)?)))
                .collect::<Result<Vec<_>>>()?;
            Ok(page(&mut jobs, filter.limit))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::pg_at;
    use crate::{Backend, Browse, Completion, Lease, NewJob, Outcome, Queue, Status};

    /// The same jobs in either store.
    fn fill(q: &mut dyn Backend) {
        for (id, queue, now) in
            [("a-1", "default", 10), ("a-2", "mail", 20), ("b-1", "default", 30), ("b-2", "mail", 40)]
        {
            let job = NewJob {
                id,
                payload: id,
                max_attempts: 1,
                deadline: 5000,
                now,
                queue: Some(queue),
                ..NewJob::default()
            };
            q.enqueue(&job).expect("enqueue");
        }
        let claimed = q.claim("w", 100).expect("claim").expect("a-1");
        q.complete(&Completion::new(&Lease::new("w", claimed.id(), 1), Outcome::Permanent, 100, 0.0))
            .expect("dead");
    }

    fn ids(q: &dyn Backend, filter: &Browse<'_>) -> (Vec<String>, bool) {
        let page = q.browse(filter).expect("browse");
        (page.jobs.into_iter().map(|job| job.id).collect(), page.next.is_some())
    }

    /// Every filter, and paging, answer on PostgreSQL what they answer on SQLite.
    #[test]
    fn browse_and_queues_answer_as_on_sqlite() {
        let Some((_, mut pg)) = pg_at("browse_and_queues_answer_as_on_sqlite") else { return };
        let mut sqlite = Queue::open_in_memory().expect("sqlite");
        fill(&mut pg);
        fill(&mut sqlite);
        let all = Browse { limit: 10, ..Browse::default() };
        let filters = [
            all.clone(),
            Browse { status: Some(Status::Dead), ..all.clone() },
            Browse { status: Some(Status::Pending), queue: Some("mail"), ..all.clone() },
            Browse { id_prefix: Some("b-"), ..all.clone() },
            Browse { enqueued_by: Some(20), ..all.clone() },
            Browse { limit: 3, ..all.clone() },
        ];
        for filter in &filters {
            assert_eq!(ids(&pg, filter), ids(&sqlite, filter), "{filter:?}");
        }
        let first = pg.browse(&Browse { limit: 3, ..all.clone() }).expect("first");
        let second = pg.browse(&Browse { limit: 3, after: first.next, ..all }).expect("second");
        assert_eq!(second.jobs.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), ["a-1"]);
        assert_eq!(pg.queues().expect("queues"), sqlite.queues().expect("queues"));
        assert_eq!(pg.queues().expect("queues"), ["default", "mail"]);
    }
}
