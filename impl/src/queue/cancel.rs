//! `cancel`: an operator takes a pending job off the queue, or asks the attempt in flight to
//! stop (SPEC 3.13).
//!
//! A leased job, its lease live or expired, is not ended by the cancel: it gets a request,
//! which its holder's next heartbeat is refused with; the attempt's report or the next reap
//! ends it (SPEC 6.25). The request gives no attempt back and moves no deadline.

use rusqlite::{OptionalExtension, Transaction, params};

use super::store::Queue;
use crate::error::{Error, Result};
use crate::input;
use crate::job::Status;

/// What a `cancel` did (SPEC 3.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancelled {
    /// A pending job is now `dead(cancelled)`: `{"ok":"cancelled"}`.
    Ended,
    /// A leased job has a cancel request (or had one already): its holder's next heartbeat is
    /// refused, and it ends `dead(cancelled)` unless the attempt's report ends it first:
    /// `{"ok":"cancelling"}`.
    Requested,
}

/// A pending job becomes dead(cancelled), whatever its deadline and its schedule: time moves
/// jobs to dead only in a claim or a reap (SPEC 3.1), so a pending job past its deadline is
/// still pending, and cancellable.
const CANCEL: &str = "
    UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                    updated_at = ?2, ended_at = ?2
    WHERE id = ?1 AND status = 'pending'";

/// A leased job gets the request, once: a second cancel changes nothing (no history entry).
/// The history records it as a `leased → leased` entry with `cancel_requested` set, dated
/// `now` (`updated_at`); status, attempt, lease and deadline stay as they are.
const REQUEST: &str = "
    UPDATE jobs SET cancel_requested = 1, updated_at = ?2
    WHERE id = ?1 AND status = 'leased' AND cancel_requested = 0";

/// Why a cancel did not apply.
const STATUS: &str = "SELECT status FROM jobs WHERE id = ?1";

impl Queue {
    /// Cancels the pending job `id`: it becomes dead with reason
    /// [`DeadReason::Cancelled`](crate::DeadReason::Cancelled), and a redrive can bring it
    /// back like any dead job.
    ///
    /// A leased job, its lease live or expired, gets a cancel request instead
    /// ([`Cancelled::Requested`]): its holder's next heartbeat is refused
    /// ([`Error::Cancelled`]), a `retryable` report ends it `dead(cancelled)` (`ok` and
    /// `permanent` end it as always), and once its lease expires the next reap ends it
    /// `dead(cancelled)` (SPEC 3.13).
    ///
    /// Refused with nothing changed: [`Error::InvalidInput`]; [`Error::NotFound`];
    /// [`Error::Pruned`] for a pruned id; [`Error::NotCancellable`] for a done or dead job.
    ///
    /// ```
    /// use retryq::{Cancelled, DeadReason, ErrorKind, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// let job = NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() };
    /// q.enqueue(&job)?;
    /// q.enqueue(&NewJob { id: "b", ..job })?;
    /// q.claim("w1", 10)?;
    /// // `a` is leased: its holder is asked to stop. `b` is pending: it is taken off the queue.
    /// assert_eq!(q.cancel("a", 20)?, Cancelled::Requested);
    /// assert_eq!(q.cancel("b", 20)?, Cancelled::Ended);
    /// assert_eq!(q.get("b")?.and_then(|job| job.dead_reason), Some(DeadReason::Cancelled));
    /// assert_eq!(q.cancel("b", 30).map_err(|e| e.kind()), Err(ErrorKind::NotCancellable));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn cancel(&mut self, id: &str, now: u64) -> Result<Cancelled> {
        input::name("id", id)?;
        input::int("now", now)?;
        self.write(|tx| cancel(tx, id, now))
    }
}

/// The cancel inside the caller's transaction, once validated. A refusal writes nothing.
pub(super) fn cancel(tx: &Transaction<'_>, id: &str, now: u64) -> Result<Cancelled> {
    if tx.prepare_cached(CANCEL)?.execute(params![id, now])? == 1 {
        return Ok(Cancelled::Ended);
    }
    let status: Option<Status> = tx.prepare_cached(STATUS)?.query_row([id], |row| row.get(0)).optional()?;
    match status {
        None if tx.prepare_cached(super::complete::PRUNED)?.exists([id])? => {
            Err(Error::Pruned { id: id.to_owned() })
        }
        None => Err(Error::NotFound { id: id.to_owned() }),
        Some(Status::Leased) => {
            tx.prepare_cached(REQUEST)?.execute(params![id, now])?;
            Ok(Cancelled::Requested)
        }
        Some(status @ (Status::Done | Status::Dead)) => {
            Err(Error::NotCancellable { id: id.to_owned(), status })
        }
        Some(status) => Err(Error::Corrupt(format!("job {id:?} is {status} and a cancel did not apply"))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use crate::{Cancelled, Completion, DeadReason, ErrorKind, NewJob, Outcome, Redrive, Status};

    fn enqueue(q: &mut crate::Queue, id: &str, not_before: Option<u64>) {
        let job = NewJob {
            id,
            payload: "",
            max_attempts: 3,
            deadline: 500,
            now: 0,
            not_before,
            ..NewJob::default()
        };
        q.enqueue(&job).expect("enqueue");
    }

    #[test]
    fn each_status_gets_its_answer() {
        let mut q = queue();
        for id in ["first", "leased", "done", "expired"] {
            enqueue(&mut q, id, None);
        }
        enqueue(&mut q, "scheduled", Some(400));
        let c = q.claim("w1", 0).expect("claim").expect("claimed");
        assert_eq!(c.id(), "first");
        q.complete(&Completion::new(&c.lease, Outcome::Ok, 1, 0.0)).expect("done");
        let c = q.claim("w1", 1).expect("claim").expect("claimed");
        assert_eq!(c.id(), "leased");
        let c = q.claim("w1", 2).expect("claim").expect("claimed");
        assert_eq!(c.id(), "done");
        q.complete(&Completion::new(&c.lease, Outcome::Ok, 3, 0.0)).expect("done");
        let c = q.claim("w1", 3).expect("claim").expect("claimed");
        assert_eq!(c.id(), "expired");
        let kind = |q: &mut crate::Queue, id: &str, now: u64| q.cancel(id, now).map_err(|e| e.kind());
        // A live lease and an expired one that nobody took: each gets a request, twice the
        // same answer; status, attempts and lease stay.
        let before = q.get("leased").expect("get").expect("job");
        assert_eq!(kind(&mut q, "leased", 10), Ok(Cancelled::Requested));
        assert_eq!(kind(&mut q, "leased", 11), Ok(Cancelled::Requested));
        let after = q.get("leased").expect("get").expect("job");
        assert_eq!(
            (after.status, after.attempts, after.available_at),
            (before.status, before.attempts, before.available_at)
        );
        assert!(after.cancel_requested && !before.cancel_requested);
        assert_eq!(
            q.history("leased").expect("history").len(),
            3,
            "one entry for the request, none for its repeat"
        );
        assert_eq!(kind(&mut q, "expired", 2000), Ok(Cancelled::Requested));
        assert_eq!(kind(&mut q, "done", 10), Err(ErrorKind::NotCancellable));
        assert_eq!(kind(&mut q, "first", 10), Err(ErrorKind::NotCancellable));
        assert_eq!(kind(&mut q, "nope", 10), Err(ErrorKind::NotFound));
        assert_eq!(kind(&mut q, "", 10), Err(ErrorKind::InvalidInput));
        // Scheduled and past its deadline: still pending (only claim and reap move it), so
        // cancellable.
        assert_eq!(kind(&mut q, "scheduled", 900), Ok(Cancelled::Ended));
        let job = q.get("scheduled").expect("get").expect("job");
        assert_eq!(
            (job.status, job.dead_reason, job.available_at),
            (Status::Dead, Some(DeadReason::Cancelled), None)
        );
        assert_eq!(kind(&mut q, "scheduled", 900), Err(ErrorKind::NotCancellable));
        assert_eq!(q.stats(900).expect("stats").dead_cancelled, 1);
    }

    #[test]
    fn a_cancelled_job_is_redriven_like_any_dead_job() {
        let mut q = queue();
        enqueue(&mut q, "a", Some(100));
        q.cancel("a", 10).expect("cancel");
        let dead = q.dead_jobs(Some(DeadReason::Cancelled)).expect("dead");
        assert_eq!(dead.len(), 1);
        q.redrive(&Redrive { id: "a", add_attempts: 1, deadline: 900, now: 20 }).expect("redrive");
        // The operator's say replaces the schedule: due at the redrive's now.
        let c = q.claim("w1", 20).expect("claim").expect("claimed");
        q.complete(&Completion::new(&c.lease, Outcome::Ok, 21, 0.0)).expect("done");
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.status, job.redrives, job.not_before), (Status::Done, 1, 100));
        assert!(q.audit().expect("audit").is_clean());
    }
}
