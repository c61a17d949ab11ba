//! `run_once`: the unit of work — claim, send, record — with no sleeping and no daemon.

use super::claim::Claimed;
use super::complete::{Completed, Completion};
use super::lease::Lease;
use super::store::Queue;
use crate::delay::validate_jitter;
use crate::error::{Result, RunError};
use crate::input;
use crate::job::{DeadReason, Report};

/// What one [`Queue::run_once`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ran {
    /// Nothing was due.
    Idle,
    /// The attempt succeeded; the job is finished.
    Done {
        /// The job run.
        id: String,
        /// The attempt that succeeded.
        attempt: u64,
    },
    /// The attempt failed and the job is reserved for another at `available_at`.
    Retry {
        /// The job run.
        id: String,
        /// The attempt that failed.
        attempt: u64,
        /// When the next attempt may be claimed.
        available_at: u64,
    },
    /// The job ended without success.
    Dead {
        /// The job run.
        id: String,
        /// The attempt that ended it.
        attempt: u64,
        /// Why it ended.
        reason: DeadReason,
    },
}

impl Queue {
    /// Claims the next due job for `worker`, sends it through `transport`, and records
    /// what the transport answered with `jitter`: an [`Outcome`](crate::Outcome) or a whole
    /// [`Report`] with notes and a pushback (see [`Queue::complete`]).
    ///
    /// `clock` is read twice: before the claim (`t0`) and after the send (`t1`); the outcome
    /// is recorded at `t1`. If `t1 < t0` the result is not recorded
    /// ([`RunError::ClockWentBackwards`]). An error the transport did not classify comes back
    /// untouched as [`RunError::Unclassified`]. In both cases the attempt stays spent and the
    /// job stays leased until its lease expires — as it would had the process died.
    ///
    /// ```
    /// use retryq::{NewJob, Outcome, Queue, Ran, RunError};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let send = |_: &retryq::Claimed| Ok::<_, std::io::Error>(Outcome::Retryable);
    /// let ran = q.run_once("w1", || 10, send, 0.5)?;
    /// assert_eq!(ran, Ran::Retry { id: "a".into(), attempt: 1, available_at: 60 });
    /// // An error the transport cannot classify comes back as it was; the attempt stays spent.
    /// let fail = |_: &retryq::Claimed| Err::<Outcome, _>("socket closed");
    /// let err = q.run_once("w1", || 60, fail, 0.5).expect_err("unclassified");
    /// assert!(matches!(err, RunError::Unclassified { attempt: 2, error: "socket closed", .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_once<R: Into<Report>, E>(
        &mut self,
        worker: &str,
        clock: impl FnMut() -> u64,
        transport: impl FnOnce(&Claimed) -> std::result::Result<R, E>,
        jitter: f64,
    ) -> Result<Ran, RunError<E>> {
        run_with(self, Queue::claim, Queue::complete, worker, clock, transport, jitter)
    }

    /// [`run_once`](Queue::run_once) serving `queues` (SPEC 3.5): its claim is
    /// [`Queue::claim_from`] them.
    pub fn run_once_from<R: Into<Report>, E>(
        &mut self,
        worker: &str,
        queues: &[&str],
        clock: impl FnMut() -> u64,
        transport: impl FnOnce(&Claimed) -> std::result::Result<R, E>,
        jitter: f64,
    ) -> Result<Ran, RunError<E>> {
        let claim = |q: &mut Queue, worker: &str, now: u64| q.claim_from(worker, queues, now);
        run_with(self, claim, Queue::complete, worker, clock, transport, jitter)
    }
}

/// `run_once` on any store, given its claim and its completion: the one body behind
/// [`Queue::run_once`] and `dyn Backend`'s.
pub(crate) fn run_with<S: ?Sized, R: Into<Report>, E>(
    store: &mut S,
    claim: impl FnOnce(&mut S, &str, u64) -> Result<Option<Claimed>>,
    complete: impl FnOnce(&mut S, &Completion<'_>) -> Result<Completed>,
    worker: &str,
    mut clock: impl FnMut() -> u64,
    transport: impl FnOnce(&Claimed) -> std::result::Result<R, E>,
    jitter: f64,
) -> Result<Ran, RunError<E>> {
    check_args(worker, jitter)?;
    let before = input::int("clock", clock())?;
    let Some(claimed) = claim(store, worker, before)? else {
        return Ok(Ran::Idle);
    };
    let sent = transport(&claimed);
    let after = input::int("clock", clock())?;
    let lease = claimed.lease;
    let report = reported(&lease, before, after, sent)?;
    let completed = complete(store, &Completion { lease: &lease, report, now: after, jitter })?;
    Ok(ran(lease, completed))
}

/// `run_once`'s checks before the claim: the worker's name and the jitter.
pub(crate) fn check_args(worker: &str, jitter: f64) -> Result<()> {
    input::name("worker", worker)?;
    validate_jitter(jitter)?;
    Ok(())
}

/// What `run_once` records of a send, once the clock has been read on both sides of it: the
/// clock's check comes first, then the transport's own unclassified error. Shared by the
/// sync and the async `run_once`, so that both decide alike.
pub(crate) fn reported<R: Into<Report>, E>(
    lease: &Lease,
    before: u64,
    after: u64,
    sent: std::result::Result<R, E>,
) -> Result<Report, RunError<E>> {
    if after < before {
        let Lease { id, attempt, .. } = lease.clone();
        return Err(RunError::ClockWentBackwards { id, attempt, before, after });
    }
    match sent {
        Ok(report) => Ok(report.into()),
        Err(error) => {
            let Lease { id, attempt, .. } = lease.clone();
            Err(RunError::Unclassified { id, attempt, error })
        }
    }
}

/// What a recorded attempt comes to, named by its lease.
pub(crate) fn ran(lease: Lease, completed: Completed) -> Ran {
    let Lease { id, attempt, .. } = lease;
    match completed {
        Completed::Done => Ran::Done { id, attempt },
        Completed::Retry { available_at } => Ran::Retry { id, attempt, available_at },
        Completed::Dead { reason } => Ran::Dead { id, attempt, reason },
    }
}

#[cfg(test)]
mod tests {
    use crate::Outcome;
    use std::cell::Cell;
    use std::convert::Infallible;

    use super::super::store::tests::queue;
    use super::*;
    use crate::{Error, NewJob, Status};

    fn clock(times: &[u64]) -> impl FnMut() -> u64 + '_ {
        let i = Cell::new(0);
        move || {
            let t = times[i.get()];
            i.set(i.get() + 1);
            t
        }
    }

    fn ok(outcome: Outcome) -> impl FnOnce(&Claimed) -> std::result::Result<Outcome, Infallible> {
        move |_| Ok(outcome)
    }

    #[test]
    fn the_spec_worked_trace() {
        // config base 100, cap 250, lease 1000; deadline 700, five attempts.
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "order-7",
            payload: "",
            max_attempts: 5,
            deadline: 700,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        for (attempt, now, available_at) in [(1, 0, 50), (2, 50, 150), (3, 150, 275)] {
            let ran = q.run_once("w1", clock(&[now, now]), ok(Outcome::Retryable), 0.5).expect("run");
            assert_eq!(ran, Ran::Retry { id: "order-7".into(), attempt, available_at });
        }
        // A crash after the fourth claim: the attempt is spent, the lease stays.
        let crashed = q.claim("w1", 275).expect("claim").expect("claimed");
        assert_eq!(crashed.attempt(), 4);
        assert_eq!(q.claim("w2", 1274).expect("claim"), None);
        assert_eq!(q.claim("w2", 1275).expect("claim"), None);
        let job = q.get("order-7").expect("get").expect("job");
        assert_eq!(
            (job.status, job.attempts, job.dead_reason),
            (Status::Dead, 4, Some(DeadReason::Deadline))
        );
    }

    #[test]
    fn idle_when_nothing_is_due() {
        let mut q = queue();
        let ran = q.run_once("w", clock(&[0, 0]), ok(Outcome::Ok), 0.0).expect("run");
        assert_eq!(ran, Ran::Idle);
    }

    #[test]
    fn an_unclassified_error_is_returned_and_the_job_stays_leased() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "p",
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        let err = q
            .run_once(
                "w",
                clock(&[5, 6]),
                |c: &Claimed| Err::<Outcome, _>(format!("boom {}", c.payload)),
                0.0,
            )
            .unwrap_err();
        let RunError::Unclassified { id, attempt, error } = err else { panic!("{err:?}") };
        assert_eq!((id.as_str(), attempt, error.as_str()), ("a", 1, "boom p"));
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.status, job.attempts, job.available_at), (Status::Leased, 1, Some(1005)));
    }

    #[test]
    fn the_clock_going_back_leaves_the_attempt_spent_and_the_job_leased() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        let err = q.run_once("w", clock(&[10, 9]), ok(Outcome::Ok), 0.0).unwrap_err();
        assert!(
            matches!(err, RunError::ClockWentBackwards { attempt: 1, before: 10, after: 9, .. }),
            "{err:?}"
        );
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.status, job.attempts), (Status::Leased, 1));
    }

    #[test]
    fn the_clock_check_comes_before_the_outcome() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        let err = q.run_once("w", clock(&[10, 9]), |_| Err::<Outcome, _>("unknown"), 0.0).unwrap_err();
        assert!(matches!(err, RunError::ClockWentBackwards { .. }), "{err:?}");
    }

    #[test]
    fn the_outcome_is_recorded_at_the_second_reading() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        let ran = q.run_once("w", clock(&[10, 400]), ok(Outcome::Retryable), 1.0).expect("run");
        assert_eq!(ran, Ran::Retry { id: "a".into(), attempt: 1, available_at: 500 });
    }

    #[test]
    fn a_report_is_recorded_with_its_outcome() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "p",
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        let transport = |c: &Claimed| {
            Ok::<_, Infallible>(Report::with_error(Outcome::Permanent, format!("exit 65: bad {}", c.payload)))
        };
        let ran = q.run_once("w", clock(&[1, 2]), transport, 0.0).expect("run");
        assert_eq!(ran, Ran::Dead { id: "a".into(), attempt: 1, reason: DeadReason::Permanent });
        assert_eq!(q.get("a").expect("get").expect("job").last_error.as_deref(), Some("exit 65: bad p"));
    }

    #[test]
    fn a_bad_jitter_or_worker_is_refused_before_the_claim() {
        let mut q = queue();
        q.enqueue(&NewJob {
            id: "a",
            payload: "",
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
        let err = q.run_once("w", clock(&[0, 0]), ok(Outcome::Ok), 1.5).unwrap_err();
        assert!(matches!(err, RunError::Queue(Error::InvalidInput { field: "jitter", .. })), "{err:?}");
        let err = q.run_once("", clock(&[0, 0]), ok(Outcome::Ok), 0.5).unwrap_err();
        assert!(matches!(err, RunError::Queue(Error::InvalidInput { field: "worker", .. })), "{err:?}");
        assert_eq!(q.get("a").expect("get").expect("job").attempts, 0);
    }
}
