//! `redrive`: the operator's way out of `dead`, with a new budget.

use rusqlite::{OptionalExtension, Transaction, params};

use super::store::Queue;
use crate::error::{Error, Result};
use crate::input::{self, MAX_ATTEMPTS};
use crate::job::{DeadReason, Status};

const LOOKUP: &str = "SELECT status, attempts FROM jobs WHERE id = ?1";

const DEAD: &str =
    "SELECT id FROM jobs WHERE status = 'dead' AND (?1 IS NULL OR dead_reason = ?1) ORDER BY seq";

const REDRIVE: &str = "
    UPDATE jobs SET status = 'pending', available_at = ?2, max_attempts = ?3, deadline = ?4,
                    dead_reason = NULL, redrives = redrives + 1, updated_at = ?2, ended_at = NULL
    WHERE id = ?1";

/// The arguments of [`Queue::redrive`]: which dead job, and its new budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Redrive<'a> {
    /// The dead job.
    pub id: &'a str,
    /// How many attempts the job gets on top of those it has spent.
    pub add_attempts: u64,
    /// The new deadline, after `now`.
    pub deadline: u64,
    /// The operator's clock: the job is due at once.
    pub now: u64,
}

/// The arguments of [`Queue::redrive_dead`]: which dead jobs, and the budget each gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedriveDead {
    /// Only the jobs dead for this reason; every dead job with `None`.
    pub reason: Option<DeadReason>,
    /// How many attempts each job gets on top of those it has spent.
    pub add_attempts: u64,
    /// The new deadline of every job, after `now`.
    pub deadline: u64,
    /// The operator's clock: each job is due at once.
    pub now: u64,
}

/// The budget a redrive grants, once its arguments are checked.
#[derive(Clone, Copy)]
pub(crate) struct Budget {
    pub(crate) add_attempts: u64,
    pub(crate) deadline: u64,
    pub(crate) now: u64,
}

impl Budget {
    /// Checks the budget's arguments, which come before any lookup.
    pub(crate) fn checked(add_attempts: u64, deadline: u64, now: u64) -> Result<Budget> {
        input::int("now", now)?;
        input::attempts("add_attempts", add_attempts)?;
        input::deadline(deadline, now)?;
        Ok(Budget { add_attempts, deadline, now })
    }

    /// The new `max_attempts` of a dead job that spent `attempts`: SPEC 3.6's last check,
    /// after the lookup, refuses a budget past 2^31 − 1 (6.5).
    pub(crate) fn max_attempts(&self, attempts: u64) -> Result<u64> {
        let max_attempts = attempts + self.add_attempts;
        if max_attempts > MAX_ATTEMPTS {
            return Err(Error::invalid(
                "add_attempts",
                format!("{attempts} spent + {} added is above 2^31-1", self.add_attempts),
            ));
        }
        Ok(max_attempts)
    }
}

impl Queue {
    /// Gives a dead job a new budget: pending from `now`, `add_attempts` more attempts than
    /// it has spent, and a new `deadline`. Nothing else changes: `attempts` is not reset and
    /// the first enqueue time (claim's tie-break, the age in stats) stays.
    ///
    /// [`Error::NotDead`] unless the job is dead; [`Error::InvalidInput`] if the new budget
    /// would pass 2^31 − 1.
    ///
    /// ```
    /// use retryq::{Completion, DeadReason, NewJob, Outcome, Queue, Redrive, Status};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 1, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let claimed = q.claim("w1", 10)?.expect("due");
    /// q.complete(&Completion::new(&claimed.lease, Outcome::Retryable, 20, 0.5))?;
    /// assert_eq!(q.get("a")?.and_then(|job| job.dead_reason), Some(DeadReason::Exhausted));
    /// // Only an operator grants a new budget: two more attempts, a new deadline.
    /// q.redrive(&Redrive { id: "a", add_attempts: 2, deadline: 90_000, now: 30 })?;
    /// let job = q.get("a")?.expect("stored");
    /// assert_eq!((job.status, job.attempts, job.max_attempts, job.redrives), (Status::Pending, 1, 3, 1));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn redrive(&mut self, r: &Redrive<'_>) -> Result<()> {
        input::name("id", r.id)?;
        let budget = Budget::checked(r.add_attempts, r.deadline, r.now)?;
        self.write(|tx| redrive(tx, r.id, budget))
    }

    /// Redrives every dead job (with `reason`, only those dead for it) in one transaction,
    /// each by the rules of [`Queue::redrive`]: all of them or, on a storage failure, none.
    /// Returns each job's id and result, in the order the jobs were first enqueued; a job
    /// whose new budget would pass 2^31 − 1 is refused and stays dead without stopping the
    /// others.
    ///
    /// ```
    /// use retryq::{Completion, DeadReason, NewJob, Outcome, Queue, RedriveDead};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 1, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// q.enqueue(&NewJob { id: "b", payload: "{}", max_attempts: 1, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let a = q.claim("w1", 10)?.expect("due");
    /// q.complete(&Completion::new(&a.lease, Outcome::Permanent, 20, 0.5))?;
    /// let b = q.claim("w1", 20)?.expect("due");
    /// q.complete(&Completion::new(&b.lease, Outcome::Retryable, 30, 0.5))?;
    /// // After fixing what made "a" fail for good, redrive only the permanent failures.
    /// let fix = RedriveDead { reason: Some(DeadReason::Permanent), add_attempts: 1, deadline: 90_000, now: 40 };
    /// let redriven = q.redrive_dead(&fix)?;
    /// assert_eq!(redriven.len(), 1);
    /// assert_eq!(redriven[0].0, "a");
    /// assert!(redriven[0].1.is_ok());
    /// assert_eq!(q.dead_jobs(None)?.len(), 1);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn redrive_dead(&mut self, r: &RedriveDead) -> Result<Vec<(String, Result<()>)>> {
        let budget = Budget::checked(r.add_attempts, r.deadline, r.now)?;
        self.write(|tx| {
            let mut dead = tx.prepare_cached(DEAD)?;
            let ids =
                dead.query_map([r.reason], |row| row.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
            let mut results = Vec::with_capacity(ids.len());
            for id in ids {
                let result = redrive(tx, &id, budget);
                if let Err(Error::Storage(e)) = result {
                    return Err(Error::Storage(e));
                }
                results.push((id, result));
            }
            Ok(results)
        })
    }
}

/// One job's redrive inside a write transaction; the arguments are already checked.
fn redrive(tx: &Transaction<'_>, id: &str, budget: Budget) -> Result<()> {
    let found: Option<(Status, u64)> =
        tx.prepare_cached(LOOKUP)?.query_row([id], |row| Ok((row.get(0)?, row.get(1)?))).optional()?;
    let Some((status, attempts)) = found else {
        // A pruned id's job is gone, with nothing left to redrive (SPEC 3.14, 6.30).
        let pruned = tx.prepare_cached(super::complete::PRUNED)?.exists([id])?;
        return Err(if pruned {
            Error::Pruned { id: id.to_owned() }
        } else {
            Error::NotFound { id: id.to_owned() }
        });
    };
    if status != Status::Dead {
        return Err(Error::NotDead { id: id.to_owned(), status });
    }
    let max_attempts = budget.max_attempts(attempts)?;
    tx.prepare_cached(REDRIVE)?.execute(params![id, budget.now, max_attempts, budget.deadline])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use super::*;
    use crate::{Completion, Lease, Redrive, RedriveDead};
    use crate::{DeadReason, NewJob, Outcome};

    #[test]
    fn a_redrive_grants_a_new_budget_and_keeps_the_spent_attempts() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 1,
            deadline: 500,
            now: 3,
            ..NewJob::default()
        })
        .expect("enqueue");
        let c = q.claim("w", 3).expect("claim").expect("claimed");
        q.complete(&Completion::new(&Lease::new("w", "a", c.attempt()), Outcome::Retryable, 10, 0.0))
            .expect("complete");
        let dead = q.get("a").expect("get").expect("job");
        assert_eq!((dead.status, dead.dead_reason), (Status::Dead, Some(DeadReason::Exhausted)));

        q.redrive(&Redrive { id: "a", add_attempts: 2, deadline: 9000, now: 600 }).expect("redrive");
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.status, job.attempts, job.max_attempts), (Status::Pending, 1, 3));
        assert_eq!((job.available_at, job.deadline, job.dead_reason), (Some(600), 9000, None));
        assert_eq!((job.redrives, job.enqueued_at), (1, 3));
        let c = q.claim("w", 600).expect("claim").expect("claimed");
        assert_eq!(c.attempt(), 2);
        q.complete(&Completion::new(&Lease::new("w", "a", 2), Outcome::Ok, 601, 0.0)).expect("complete");
        assert_eq!(q.get("a").expect("get").expect("job").status, Status::Done);
    }

    #[test]
    fn redrive_dead_takes_every_dead_job_or_those_of_one_reason() {
        let mut q = queue();
        for id in ["a", "b", "c", "d"] {
            q.enqueue(&NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: 500,
                now: 0,
                ..NewJob::default()
            })
            .expect("enqueue");
        }
        for outcome in [Outcome::Permanent, Outcome::Retryable] {
            let c = q.claim("w", 1).expect("claim").expect("claimed");
            q.complete(&Completion::new(&c.lease, outcome, 1, 0.0)).expect("complete");
        }
        // a permanent, b exhausted, c and d still pending.
        let err = q
            .redrive_dead(&RedriveDead { reason: None, add_attempts: 1, deadline: 10, now: 10 })
            .unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "deadline", .. }), "{err}");
        let only = q
            .redrive_dead(&RedriveDead {
                reason: Some(DeadReason::Permanent),
                add_attempts: 2,
                deadline: 900,
                now: 10,
            })
            .expect("redrive");
        assert_eq!(only.iter().map(|(id, r)| (id.as_str(), r.is_ok())).collect::<Vec<_>>(), [("a", true)]);
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.status, job.max_attempts, job.deadline, job.redrives), (Status::Pending, 3, 900, 1));
        q.reap(500).expect("reap");
        let all = q
            .redrive_dead(&RedriveDead { reason: None, add_attempts: 1, deadline: 900, now: 600 })
            .expect("redrive");
        assert_eq!(all.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["b", "c", "d"]);
        assert_eq!(q.stats(600).expect("stats").pending, 4);
        assert!(
            q.redrive_dead(&RedriveDead { reason: None, add_attempts: 1, deadline: 900, now: 600 })
                .expect("redrive")
                .is_empty(),
            "nothing left dead"
        );
    }

    #[test]
    fn redrive_dead_refuses_one_job_without_stopping_the_others() {
        let mut q = queue();
        for id in ["a", "b"] {
            q.enqueue(&NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: 500,
                now: 0,
                ..NewJob::default()
            })
            .expect("enqueue");
        }
        q.reap(500).expect("reap");
        // a gets the largest budget, spends one attempt, and dies again.
        q.redrive(&Redrive { id: "a", add_attempts: MAX_ATTEMPTS, deadline: 900, now: 500 })
            .expect("redrive");
        let c = q.claim("w", 500).expect("claim").expect("a");
        q.complete(&Completion::new(&c.lease, Outcome::Permanent, 500, 0.0)).expect("complete");
        let results = q
            .redrive_dead(&RedriveDead { reason: None, add_attempts: MAX_ATTEMPTS, deadline: 900, now: 600 })
            .expect("redrive");
        assert!(
            matches!(&results[0], (id, Err(Error::InvalidInput { field: "add_attempts", .. })) if id == "a")
        );
        assert!(matches!(&results[1], (id, Ok(())) if id == "b"));
        assert_eq!(q.get("a").expect("get").expect("job").status, Status::Dead);
        assert_eq!(q.get("b").expect("get").expect("job").status, Status::Pending);
    }

    #[test]
    fn only_dead_jobs_are_redriven() {
        let mut q = queue();
        let err = q.redrive(&Redrive { id: "a", add_attempts: 1, deadline: 10, now: 0 }).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 1,
            deadline: 500,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        let err = q.redrive(&Redrive { id: "a", add_attempts: 1, deadline: 10, now: 0 }).unwrap_err();
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
            let err = q
                .redrive(&Redrive { id: "missing", add_attempts: args.1, deadline: args.2, now: args.0 })
                .unwrap_err();
            assert!(matches!(&err, Error::InvalidInput { field: f, .. } if *f == field), "{err}");
        }
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 1,
            deadline: 500,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        q.reap(500).expect("reap");
        // attempts is 0: 0 + (2^31 − 1) is the largest budget allowed.
        q.redrive(&Redrive { id: "a", add_attempts: MAX_ATTEMPTS, deadline: 600, now: 500 })
            .expect("largest budget");
        let c = q.claim("w", 500).expect("claim").expect("claimed");
        q.complete(&Completion::new(&Lease::new("w", "a", c.attempt()), Outcome::Permanent, 500, 0.0))
            .expect("complete");
        let before = q.get("a").expect("get");
        let err =
            q.redrive(&Redrive { id: "a", add_attempts: MAX_ATTEMPTS, deadline: 600, now: 501 }).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "add_attempts", .. }), "{err}");
        assert_eq!(q.get("a").expect("get"), before);
    }
}
