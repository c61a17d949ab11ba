//! `complete`: record the outcome of an attempt, fenced by the attempt number.

use rusqlite::{OptionalExtension, Transaction, params};

use super::{Queue, Settings};
use crate::delay::{retry_delay, validate_jitter};
use crate::error::{Error, Result};
use crate::input;
use crate::job::{DeadReason, Outcome, Status};

/// Where a completed attempt left its job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completed {
    Done,
    /// Pending again, reserved until `available_at`.
    Retry {
        available_at: u64,
    },
    Dead {
        reason: DeadReason,
    },
}

/// What a completion needs to know of the job it completes.
struct Lease {
    status: Status,
    owner: Option<String>,
    attempts: u64,
    max_attempts: u64,
    deadline: u64,
    claimed_at: Option<u64>,
}

const LEASE: &str = "
    SELECT status, owner, attempts, max_attempts, deadline, claimed_at FROM jobs WHERE id = ?1";

const FINISH: &str = "
    UPDATE jobs SET status = ?2, dead_reason = ?3, available_at = NULL, owner = NULL,
                    claimed_at = NULL, updated_at = ?4
    WHERE id = ?1";

const RETRY: &str = "
    UPDATE jobs SET status = 'pending', available_at = ?2, owner = NULL, claimed_at = NULL,
                    updated_at = ?3
    WHERE id = ?1";

impl Queue {
    /// Records the outcome of attempt `attempt` of job `id`, which `worker` must hold.
    ///
    /// `ok` → done; `permanent` → dead(permanent); `retryable` → dead(exhausted) if the
    /// budget is spent, else dead(deadline) if `now + delay` reaches the deadline, else
    /// pending until `now + delay`, where `delay` is [`retry_delay`] of this attempt with
    /// `jitter`. `jitter` is checked whatever the outcome.
    ///
    /// A lease that expired but was neither claimed again nor reaped still counts. Refused
    /// with nothing changed: [`Error::NotFound`]; [`Error::LeaseLost`] unless the job is
    /// leased to `worker` on this very attempt; [`Error::ClockWentBackwards`] if `now` is
    /// before the claim.
    pub fn complete(
        &mut self,
        worker: &str,
        id: &str,
        attempt: u64,
        outcome: Outcome,
        now: u64,
        jitter: f64,
    ) -> Result<Completed> {
        validate(worker, id, attempt, now, jitter)?;
        let settings = self.settings;
        self.write(|tx| record(tx, &settings, worker, id, attempt, outcome, now, jitter))
    }
}

/// `complete`'s checks of its own arguments, which come before any lookup.
pub(super) fn validate(worker: &str, id: &str, attempt: u64, now: u64, jitter: f64) -> Result<()> {
    input::name("worker", worker)?;
    input::name("id", id)?;
    input::int("attempt", attempt)?;
    if attempt == 0 {
        return Err(Error::invalid("attempt", "must be at least 1"));
    }
    input::int("now", now)?;
    validate_jitter(jitter)?;
    Ok(())
}

/// `complete`'s lookup, fence and write inside the caller's transaction, once validated.
/// A refusal comes before any write.
#[allow(clippy::too_many_arguments)]
pub(super) fn record(
    tx: &Transaction<'_>,
    settings: &Settings,
    worker: &str,
    id: &str,
    attempt: u64,
    outcome: Outcome,
    now: u64,
    jitter: f64,
) -> Result<Completed> {
    let lease = load(tx, id)?.ok_or_else(|| Error::NotFound { id: id.to_owned() })?;
    let holds =
        lease.status == Status::Leased && lease.owner.as_deref() == Some(worker) && lease.attempts == attempt;
    if !holds {
        return Err(Error::LeaseLost { id: id.to_owned(), worker: worker.to_owned(), attempt });
    }
    let claimed_at = lease
        .claimed_at
        .ok_or_else(|| Error::Corrupt(format!("job {id:?} is leased without a claim time")))?;
    if now < claimed_at {
        return Err(Error::ClockWentBackwards { now, claimed_at });
    }
    let completed = settle(&lease, outcome, now, settings, jitter)?;
    match completed {
        Completed::Done => {
            tx.prepare_cached(FINISH)?.execute(params![id, Status::Done, None::<DeadReason>, now])?
        }
        Completed::Dead { reason } => {
            tx.prepare_cached(FINISH)?.execute(params![id, Status::Dead, reason, now])?
        }
        Completed::Retry { available_at } => {
            tx.prepare_cached(RETRY)?.execute(params![id, available_at, now])?
        }
    };
    Ok(completed)
}

fn load(tx: &Transaction<'_>, id: &str) -> Result<Option<Lease>> {
    let lease = tx
        .prepare_cached(LEASE)?
        .query_row([id], |row| {
            Ok(Lease {
                status: row.get(0)?,
                owner: row.get(1)?,
                attempts: row.get(2)?,
                max_attempts: row.get(3)?,
                deadline: row.get(4)?,
                claimed_at: row.get(5)?,
            })
        })
        .optional()?;
    Ok(lease)
}

/// The SPEC's rule for where an attempt's outcome takes the job. The deadline is never
/// moved: at `now + delay` ≥ `deadline` there is no time left to start another attempt.
fn settle(lease: &Lease, outcome: Outcome, now: u64, settings: &Settings, jitter: f64) -> Result<Completed> {
    Ok(match outcome {
        Outcome::Ok => Completed::Done,
        Outcome::Permanent => Completed::Dead { reason: DeadReason::Permanent },
        Outcome::Retryable if lease.attempts >= lease.max_attempts => {
            Completed::Dead { reason: DeadReason::Exhausted }
        }
        Outcome::Retryable => {
            let delay = retry_delay(lease.attempts, settings.base_ms, settings.cap_ms, jitter)?;
            // now and delay are both below 2^53: the sum cannot overflow.
            let available_at = now + delay;
            if available_at >= lease.deadline {
                Completed::Dead { reason: DeadReason::Deadline }
            } else {
                Completed::Retry { available_at }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::queue;
    use super::*;
    use crate::{NewJob, Queue};

    /// Enqueues `a` at 0 and claims it as `w1` at `at`.
    fn leased(q: &mut Queue, max_attempts: u64, deadline: u64, at: u64) -> u64 {
        q.enqueue(&NewJob { id: "a", payload: "", max_attempts, deadline, now: 0 }).expect("enqueue");
        q.claim("w1", at).expect("claim").expect("claimed").attempt
    }

    fn status(q: &mut Queue) -> (Status, Option<u64>, Option<DeadReason>) {
        let job = q.get("a").expect("get").expect("job");
        (job.status, job.available_at, job.dead_reason)
    }

    #[test]
    fn outcomes_move_the_job() {
        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 0);
        assert_eq!(q.complete("w1", "a", n, Outcome::Ok, 10, 0.0).expect("complete"), Completed::Done);
        assert_eq!(status(&mut q), (Status::Done, None, None));

        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 0);
        let done = q.complete("w1", "a", n, Outcome::Permanent, 10, 0.0).expect("complete");
        assert_eq!(done, Completed::Dead { reason: DeadReason::Permanent });
        assert_eq!(status(&mut q), (Status::Dead, None, Some(DeadReason::Permanent)));

        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 0);
        let done = q.complete("w1", "a", n, Outcome::Retryable, 10, 0.5).expect("complete");
        assert_eq!(done, Completed::Retry { available_at: 60 });
        assert_eq!(status(&mut q), (Status::Pending, Some(60), None));
    }

    #[test]
    fn now_plus_delay_on_the_deadline_is_dead_one_less_is_a_retry() {
        // attempt 1, base 100, jitter 1 → delay 100.
        let mut q = queue();
        let n = leased(&mut q, 5, 1100, 0);
        let done = q.complete("w1", "a", n, Outcome::Retryable, 1000, 1.0).expect("complete");
        assert_eq!(done, Completed::Dead { reason: DeadReason::Deadline });

        let mut q = queue();
        let n = leased(&mut q, 5, 1101, 0);
        let done = q.complete("w1", "a", n, Outcome::Retryable, 1000, 1.0).expect("complete");
        assert_eq!(done, Completed::Retry { available_at: 1100 });
    }

    #[test]
    fn a_retry_on_the_last_attempt_is_exhausted() {
        let mut q = queue();
        let n = leased(&mut q, 1, 10_000, 0);
        let done = q.complete("w1", "a", n, Outcome::Retryable, 10, 0.0).expect("complete");
        assert_eq!(done, Completed::Dead { reason: DeadReason::Exhausted });
    }

    #[test]
    fn a_stale_completion_after_a_reclaim_changes_nothing() {
        let mut q = queue();
        let first = leased(&mut q, 5, 100_000, 0);
        let second = q.claim("w2", 1000).expect("claim").expect("reclaimed").attempt;
        assert_eq!(second, 2);
        let before = q.get("a").expect("get");
        for (worker, attempt) in [("w1", first), ("w2", first), ("w1", second)] {
            let err = q.complete(worker, "a", attempt, Outcome::Ok, 1001, 0.0).unwrap_err();
            assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
        }
        assert_eq!(q.get("a").expect("get"), before);
        assert_eq!(q.complete("w2", "a", second, Outcome::Ok, 1001, 0.0).expect("complete"), Completed::Done);
        // Completing a finished job is a lost lease too.
        let err = q.complete("w2", "a", second, Outcome::Ok, 1002, 0.0).unwrap_err();
        assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    }

    #[test]
    fn a_late_completion_of_an_expired_lease_still_counts() {
        let mut q = queue();
        let n = leased(&mut q, 1, 500, 0);
        // Lease expired at 1000, deadline and budget both gone, nobody reaped or reclaimed.
        assert_eq!(q.complete("w1", "a", n, Outcome::Ok, 5000, 0.0).expect("complete"), Completed::Done);
    }

    #[test]
    fn the_clock_going_back_before_the_claim_is_refused() {
        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 100);
        let before = q.get("a").expect("get");
        let err = q.complete("w1", "a", n, Outcome::Ok, 99, 0.0).unwrap_err();
        assert!(matches!(err, Error::ClockWentBackwards { now: 99, claimed_at: 100 }), "{err}");
        assert_eq!(q.get("a").expect("get"), before);
        assert_eq!(q.complete("w1", "a", n, Outcome::Ok, 100, 0.0).expect("complete"), Completed::Done);
    }

    #[test]
    fn checks_come_in_spec_order() {
        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 100);
        // Arguments before the lookup: a bad jitter on a missing job is invalid input.
        let err = q.complete("w1", "missing", 1, Outcome::Ok, 0, 2.0).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "jitter", .. }), "{err}");
        let err = q.complete("w1", "missing", 0, Outcome::Ok, 0, 0.0).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "attempt", .. }), "{err}");
        let err = q.complete("w1", "missing", 1, Outcome::Ok, 0, 0.0).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        // The fence before the clock.
        let err = q.complete("w2", "a", n, Outcome::Ok, 0, 0.0).unwrap_err();
        assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    }
}
