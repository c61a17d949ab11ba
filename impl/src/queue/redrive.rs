//! `redrive`: the operator's way out of `dead`, with a new budget.

use rusqlite::{OptionalExtension, params};

use super::Queue;
use crate::error::{Error, Result};
use crate::input::{self, MAX_ATTEMPTS};
use crate::job::Status;

const LOOKUP: &str = "SELECT status, attempts FROM jobs WHERE id = ?1";

const REDRIVE: &str = "
    UPDATE jobs SET status = 'pending', available_at = ?2, max_attempts = ?3, deadline = ?4,
                    dead_reason = NULL, redrives = redrives + 1, updated_at = ?2
    WHERE id = ?1";

impl Queue {
    /// Gives a dead job a new budget: pending from `now`, `add_attempts` more attempts than
    /// it has spent, and a new `deadline`. Nothing else changes: `attempts` is not reset and
    /// the first enqueue time (claim's tie-break, the age in stats) stays.
    ///
    /// [`Error::NotDead`] unless the job is dead; [`Error::InvalidInput`] if the new budget
    /// would pass 2^31 − 1.
    pub fn redrive(&mut self, id: &str, now: u64, add_attempts: u64, deadline: u64) -> Result<()> {
        input::name("id", id)?;
        input::int("now", now)?;
        input::attempts("add_attempts", add_attempts)?;
        input::deadline(deadline, now)?;
        self.write(|tx| {
            let found: Option<(Status, u64)> = tx
                .prepare_cached(LOOKUP)?
                .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            let (status, attempts) = found.ok_or_else(|| Error::NotFound { id: id.to_owned() })?;
            if status != Status::Dead {
                return Err(Error::NotDead { id: id.to_owned(), status });
            }
            let max_attempts = attempts + add_attempts;
            if max_attempts > MAX_ATTEMPTS {
                return Err(Error::invalid(
                    "add_attempts",
                    format!("{attempts} spent + {add_attempts} added is above 2^31-1"),
                ));
            }
            tx.prepare_cached(REDRIVE)?.execute(params![id, now, max_attempts, deadline])?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::queue;
    use super::*;
    use crate::{DeadReason, NewJob, Outcome};

    #[test]
    fn a_redrive_grants_a_new_budget_and_keeps_the_spent_attempts() {
        let mut q = queue();
        q.enqueue(&NewJob { id: "a", payload: "", max_attempts: 1, deadline: 500, now: 3 }).expect("enqueue");
        let c = q.claim("w", 3).expect("claim").expect("claimed");
        q.complete("w", "a", c.attempt, Outcome::Retryable, 10, 0.0).expect("complete");
        let dead = q.get("a").expect("get").expect("job");
        assert_eq!((dead.status, dead.dead_reason), (Status::Dead, Some(DeadReason::Exhausted)));

        q.redrive("a", 600, 2, 9000).expect("redrive");
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.status, job.attempts, job.max_attempts), (Status::Pending, 1, 3));
        assert_eq!((job.available_at, job.deadline, job.dead_reason), (Some(600), 9000, None));
        assert_eq!((job.redrives, job.enqueued_at), (1, 3));
        let c = q.claim("w", 600).expect("claim").expect("claimed");
        assert_eq!(c.attempt, 2);
        q.complete("w", "a", 2, Outcome::Ok, 601, 0.0).expect("complete");
        assert_eq!(q.get("a").expect("get").expect("job").status, Status::Done);
    }

    #[test]
    fn only_dead_jobs_are_redriven() {
        let mut q = queue();
        let err = q.redrive("a", 0, 1, 10).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        q.enqueue(&NewJob { id: "a", payload: "", max_attempts: 1, deadline: 500, now: 0 }).expect("enqueue");
        let err = q.redrive("a", 0, 1, 10).unwrap_err();
        assert!(matches!(err, Error::NotDead { status: Status::Pending, .. }), "{err}");
    }

    #[test]
    fn arguments_are_checked_before_the_lookup_and_the_budget_is_capped() {
        let mut q = queue();
        for (args, field) in [
            ((0, 0, 10), "add_attempts"),
            ((0, MAX_ATTEMPTS + 1, 10), "add_attempts"),
            ((10, 1, 10), "deadline"),
            ((1 << 53, 1, 10), "now"),
        ] {
            let err = q.redrive("missing", args.0, args.1, args.2).unwrap_err();
            assert!(matches!(&err, Error::InvalidInput { field: f, .. } if *f == field), "{err}");
        }
        q.enqueue(&NewJob { id: "a", payload: "", max_attempts: 1, deadline: 500, now: 0 }).expect("enqueue");
        q.reap(500).expect("reap");
        // attempts is 0: 0 + (2^31 − 1) is the largest budget allowed.
        q.redrive("a", 500, MAX_ATTEMPTS, 600).expect("largest budget");
        let c = q.claim("w", 500).expect("claim").expect("claimed");
        q.complete("w", "a", c.attempt, Outcome::Permanent, 500, 0.0).expect("complete");
        let before = q.get("a").expect("get");
        let err = q.redrive("a", 501, MAX_ATTEMPTS, 600).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "add_attempts", .. }), "{err}");
        assert_eq!(q.get("a").expect("get"), before);
    }
}
