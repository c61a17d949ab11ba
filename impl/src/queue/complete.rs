//! `complete`: record the outcome of an attempt, fenced by the attempt number.

use rusqlite::{OptionalExtension, Transaction, params};

use super::lease::Lease;
use super::store::{Queue, Settings};
use crate::delay::{retry_delay, validate_jitter};
use crate::error::{Error, Result};
use crate::input;
use crate::job::{self, DeadReason, Outcome, Report, Status};

/// Where a completed attempt left its job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Completed {
    /// The attempt succeeded; the job is finished.
    Done,
    /// Pending again, reserved until `available_at`.
    Retry {
        /// The earliest time the next attempt may be claimed.
        available_at: u64,
    },
    /// Finished without success; an operator may redrive it.
    Dead {
        /// Why it ended.
        reason: DeadReason,
    },
}

/// What a completion needs to know of the job it completes. Each store reads it its own
/// way and hands it to [`settle`], so the rule is written once.
pub(crate) struct Held {
    /// The row to write, so that the write needs no second lookup by id.
    pub(crate) seq: i64,
    pub(crate) status: Status,
    pub(crate) owner: Option<String>,
    pub(crate) attempts: u64,
    pub(crate) max_attempts: u64,
    pub(crate) deadline: u64,
    pub(crate) claimed_at: Option<u64>,
    /// The job's own backoff settings, each in place of the queue's where present.
    pub(crate) base_ms: Option<u64>,
    pub(crate) cap_ms: Option<u64>,
}

/// The arguments of one [`Queue::complete`] (and of each item of
/// [`Queue::complete_batch`]): which lease, what its attempt came to, when, and the jitter
/// of the retry delay.
#[derive(Clone, Debug, PartialEq)]
pub struct Completion<'a> {
    /// The lease being completed: the store checks it is still held as named.
    pub lease: &'a Lease,
    /// The attempt's outcome and the notes that go with it.
    pub report: Report,
    /// When the attempt ended: checked against the claim, dates the retry and the history.
    pub now: u64,
    /// Where in its window the retry delay falls, in `[0, 1]`; checked whatever the outcome.
    pub jitter: f64,
}

impl<'a> Completion<'a> {
    /// A completion of `lease` with `report` (an [`Outcome`] alone will do) at `now`.
    pub fn new(lease: &'a Lease, report: impl Into<Report>, now: u64, jitter: f64) -> Completion<'a> {
        Completion { lease, report: report.into(), now, jitter }
    }
}

const HELD: &str = "
    SELECT seq, status, owner, attempts, max_attempts, deadline, claimed_at, base_ms, cap_ms,
           cancel_requested
    FROM jobs WHERE id = ?1";

/// Whether an id that names no job is a pruned one's: its fence fails (SPEC 6.30).
pub(super) const PRUNED: &str = "SELECT 1 FROM tombstones WHERE id = ?1";

// The two writes go by the seq `HELD` read, and are `OR ROLLBACK` for the reason given in
// `claim.rs`: no statement journal for a write that the caller would roll back whole anyway.

const FINISH: &str = "
    UPDATE OR ROLLBACK jobs SET status = ?2, dead_reason = ?3, available_at = NULL, owner = NULL,
                                claimed_at = NULL, updated_at = ?4, last_error = ?5, last_node = ?6,
                                ended_at = ?4, cancel_requested = 0
    WHERE seq = ?1";

const RETRY: &str = "
    UPDATE OR ROLLBACK jobs SET status = 'pending', available_at = ?2, owner = NULL,
                                claimed_at = NULL, updated_at = ?3, last_error = ?4, last_node = ?5
    WHERE seq = ?1";

/// `ok` and `permanent` in one statement: their result does not depend on what the job
/// holds, so the fence — leased to this worker on this very attempt, claimed no later than
/// `now` — goes in the `WHERE`, and no lookup comes first. When it matches nothing, the
/// general path (lookup, checks, write) finds out which refusal it is.
const FINISH_FENCED: &str = "
    UPDATE OR ROLLBACK jobs SET status = ?5, dead_reason = ?6, available_at = NULL, owner = NULL,
                                claimed_at = NULL, updated_at = ?4, last_error = ?7, last_node = ?8,
                                ended_at = ?4, cancel_requested = 0
    WHERE id = ?1 AND status = 'leased' AND owner = ?2 AND attempts = ?3 AND claimed_at <= ?4";

/// Notes on a live lease, fenced like a completion. Names no state column, so it is not a
/// transition (see `schema.rs`).
const NOTE: &str = "
    UPDATE jobs SET last_error = ?4, last_node = ?5
    WHERE id = ?1 AND status = 'leased' AND owner = ?2 AND attempts = ?3";

impl Queue {
    /// Records the outcome of the attempt `c.lease` names, which must still be held.
    ///
    /// `ok` → done; `permanent` → dead(permanent); `retryable` → dead(exhausted) if the
    /// budget is spent, else dead(deadline) if `now + delay` reaches the deadline, else
    /// pending until `now + delay`, where `delay` is [`retry_delay`] of this attempt with
    /// `jitter` and the job's own `base_ms` and `cap_ms` where it has them (else the queue's
    /// settings in effect, each one by one). `jitter` is checked whatever the outcome. In the same transaction the
    /// report's error text and node become the job's `last_error` and `last_node`.
    ///
    /// The report's `retry_after_ms`, the receiver's pushback, is a floor under the retry
    /// delay: for `retryable` the delay is `max(retry_delay(…), retry_after_ms)`, and the
    /// SPEC's rules go on from there unchanged — the budget first (`dead(exhausted)`), then
    /// `now + delay` ≥ `deadline` → `dead(deadline)`, else `pending` until `now + delay`. A
    /// pushback longer than the time left thus ends the job now, as one the deadline would
    /// end anyway; the deadline never moves. For `ok` and `permanent` it is ignored, and
    /// without one every result is the SPEC's `complete`.
    ///
    /// A lease that expired but was neither claimed again nor reaped still counts. Refused
    /// with nothing changed: [`Error::NotFound`]; [`Error::LeaseLost`] unless the job is
    /// leased to the lease's worker on this very attempt; [`Error::ClockWentBackwards`] if
    /// `now` is before the claim.
    ///
    /// ```
    /// use retryq::{Completed, Completion, ErrorKind, NewJob, Outcome, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let first = q.claim("w1", 10)?.expect("due");
    /// // A retryable failure: the retry waits floor(min(cap, base) · jitter) = floor(100 · 0.5) ms.
    /// let retry = q.complete(&Completion::new(&first.lease, Outcome::Retryable, 10, 0.5))?;
    /// assert_eq!(retry, Completed::Retry { available_at: 60 });
    /// let second = q.claim("w1", 60)?.expect("due again");
    /// assert_eq!(q.complete(&Completion::new(&second.lease, Outcome::Ok, 70, 0.5))?, Completed::Done);
    /// // The first attempt's lease is stale: its late answer cannot change the job.
    /// let late = q.complete(&Completion::new(&first.lease, Outcome::Permanent, 80, 0.5));
    /// assert_eq!(late.map_err(|e| e.kind()), Err(ErrorKind::LeaseLost));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn complete(&mut self, c: &Completion<'_>) -> Result<Completed> {
        validate(c)?;
        let settings = self.settings;
        self.write(|tx| record(tx, &settings, c))
    }

    /// Notes an error on a lease still held, without recording an outcome: for an error the
    /// transport could not classify, after which the job waits for its lease to expire. The
    /// note becomes the job's `last_error` (and `last_node`), so an operator sees it if the
    /// job later dies. Nothing else changes; it is not a transition and adds no history.
    ///
    /// [`Error::LeaseLost`] (and no change) unless the lease is still held as named;
    /// [`Error::NotFound`] if there is no such job.
    ///
    /// ```
    /// use retryq::{NewJob, Queue, Status};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let claimed = q.claim("w1", 10)?.expect("due");
    /// q.record_error(&claimed.lease, "connection reset", Some("http://a.example/"))?;
    /// let job = q.get("a")?.expect("stored");
    /// assert_eq!(job.last_error.as_deref(), Some("connection reset"));
    /// // Still leased: the job waits for its lease to run out, as if the worker had died.
    /// assert_eq!(job.status, Status::Leased);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()> {
        validate_lease(lease)?;
        let Lease { worker, id, attempt } = lease;
        let error = job::note(Some(error));
        let node = job::note(node);
        self.write(|tx| {
            let noted = tx.prepare_cached(NOTE)?.execute(params![id, worker, attempt, error, node])?;
            if noted == 1 {
                return Ok(());
            }
            if load(tx, id)?.is_none() {
                return Err(not_held(tx, lease)?);
            }
            Err(lease_lost(lease))
        })
    }
}

/// `complete`'s checks of its own arguments, which come before any lookup.
pub(crate) fn validate(c: &Completion<'_>) -> Result<()> {
    validate_lease(c.lease)?;
    input::int("now", c.now)?;
    validate_jitter(c.jitter)?;
    Ok(())
}

/// The checks of a lease's name (`worker`, `id`, `attempt`) that every call acting on a
/// held lease makes first, so that each refuses the same input with the same message.
pub(crate) fn validate_lease(lease: &Lease) -> Result<()> {
    input::name("worker", &lease.worker)?;
    input::name("id", &lease.id)?;
    input::int("attempt", lease.attempt)?;
    if lease.attempt == 0 {
        return Err(Error::invalid("attempt", "must be at least 1"));
    }
    Ok(())
}

pub(crate) fn lease_lost(lease: &Lease) -> Error {
    Error::LeaseLost { id: lease.id.clone(), worker: lease.worker.clone(), attempt: lease.attempt }
}

/// `complete`'s lookup, fence and write inside the caller's transaction, once validated.
/// A refusal comes before any write.
pub(super) fn record(tx: &Transaction<'_>, settings: &Settings, c: &Completion<'_>) -> Result<Completed> {
    let Completion { lease, report, now, jitter } = c;
    let (id, now) = (&lease.id, *now);
    let (outcome, error, node) =
        (report.outcome, job::note(report.error.as_deref()), job::note(report.node.as_deref()));
    let finished = match outcome {
        Outcome::Ok => Some((Status::Done, None)),
        Outcome::Permanent => Some((Status::Dead, Some(DeadReason::Permanent))),
        Outcome::Retryable => None,
    };
    if let Some((status, reason)) = finished {
        let written = tx.prepare_cached(FINISH_FENCED)?.execute(params![
            id,
            lease.worker,
            lease.attempt,
            now,
            status,
            reason,
            error,
            node
        ])?;
        if written == 1 {
            return Ok(match reason {
                None => Completed::Done,
                Some(reason) => Completed::Dead { reason },
            });
        }
    }
    let Some((held, cancel_requested)) = load(tx, id)? else {
        return Err(not_held(tx, lease)?);
    };
    let holds = held.status == Status::Leased
        && held.owner.as_deref() == Some(lease.worker.as_str())
        && held.attempts == lease.attempt;
    if !holds {
        return Err(lease_lost(lease));
    }
    let claimed_at = held
        .claimed_at
        .ok_or_else(|| Error::Corrupt(format!("job {id:?} is leased without a claim time")))?;
    if now < claimed_at {
        return Err(Error::ClockWentBackwards { now, claimed_at });
    }
    // With a cancel request standing a retry is no more: the attempt ends the job (SPEC 3.4,
    // 3.13). `ok` and `permanent` end it as they always do, through `FINISH_FENCED` above.
    let completed = if cancel_requested && outcome == Outcome::Retryable {
        Completed::Dead { reason: DeadReason::Cancelled }
    } else {
        settle(&held, outcome, report.retry_after_ms, now, settings, *jitter)?
    };
    let seq = held.seq;
    match completed {
        Completed::Done => tx.prepare_cached(FINISH)?.execute(params![
            seq,
            Status::Done,
            None::<DeadReason>,
            now,
            error,
            node
        ])?,
        Completed::Dead { reason } => {
            tx.prepare_cached(FINISH)?.execute(params![seq, Status::Dead, reason, now, error, node])?
        }
        Completed::Retry { available_at } => {
            tx.prepare_cached(RETRY)?.execute(params![seq, available_at, now, error, node])?
        }
    };
    Ok(completed)
}

/// The refusal of a lease on an id that names no job: `lease_lost` for a pruned id, whose
/// job ended (SPEC 6.30), else `not_found`.
pub(super) fn not_held(tx: &Transaction<'_>, lease: &Lease) -> Result<Error> {
    let pruned = tx.prepare_cached(PRUNED)?.exists([&lease.id])?;
    Ok(if pruned { lease_lost(lease) } else { Error::NotFound { id: lease.id.clone() } })
}

/// The job a completion names, and whether a cancel request stands on it.
fn load(tx: &Transaction<'_>, id: &str) -> Result<Option<(Held, bool)>> {
    let held = tx
        .prepare_cached(HELD)?
        .query_row([id], |row| {
            let held = Held {
                seq: row.get(0)?,
                status: row.get(1)?,
                owner: row.get(2)?,
                attempts: row.get(3)?,
                max_attempts: row.get(4)?,
                deadline: row.get(5)?,
                claimed_at: row.get(6)?,
                base_ms: row.get(7)?,
                cap_ms: row.get(8)?,
            };
            Ok((held, row.get(9)?))
        })
        .optional()?;
    Ok(held)
}

/// The SPEC's rule for where an attempt's outcome takes the job. The deadline is never
/// moved: at `now + delay` ≥ `deadline` there is no time left to start another attempt.
/// `floor` (a pushback) raises the delay, never lowers it.
pub(crate) fn settle(
    held: &Held,
    outcome: Outcome,
    floor: Option<u64>,
    now: u64,
    settings: &Settings,
    jitter: f64,
) -> Result<Completed> {
    Ok(match outcome {
        Outcome::Ok => Completed::Done,
        Outcome::Permanent => Completed::Dead { reason: DeadReason::Permanent },
        Outcome::Retryable if held.attempts >= held.max_attempts => {
            Completed::Dead { reason: DeadReason::Exhausted }
        }
        Outcome::Retryable => {
            // The job's own settings where it has them, each absent one the queue's in
            // effect now, chosen one by one (SPEC 6.23).
            let base_ms = held.base_ms.unwrap_or(settings.base_ms);
            let cap_ms = held.cap_ms.unwrap_or(settings.cap_ms);
            let delay = retry_delay(held.attempts, base_ms, cap_ms, jitter)?;
            // A pushback past 2^53 − 1 ends the job just as one at 2^53 − 1 does (the deadline
            // is below it); capped there, now and delay are both below 2^53 and the sum
            // cannot overflow.
            let delay = delay.max(floor.unwrap_or(0).min(input::MAX_INT));
            let available_at = now + delay;
            if available_at >= held.deadline {
                Completed::Dead { reason: DeadReason::Deadline }
            } else {
                Completed::Retry { available_at }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use super::*;
    use crate::{Completion, Lease, Outcome};
    use crate::{Job, NewJob, Queue};

    /// Enqueues `a` at 0 and claims it as `w1` at `at`.
    fn leased(q: &mut Queue, max_attempts: u64, deadline: u64, at: u64) -> u64 {
        q.enqueue(&NewJob { id: "a", payload: "", max_attempts, deadline, now: 0, ..NewJob::default() })
            .expect("enqueue");
        q.claim("w1", at).expect("claim").expect("claimed").attempt()
    }

    fn status(q: &mut Queue) -> (Status, Option<u64>, Option<DeadReason>) {
        let job = q.get("a").expect("get").expect("job");
        (job.status, job.available_at, job.dead_reason)
    }

    #[test]
    fn outcomes_move_the_job() {
        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 0);
        assert_eq!(
            q.complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Ok, 10, 0.0)).expect("complete"),
            Completed::Done
        );
        assert_eq!(status(&mut q), (Status::Done, None, None));

        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 0);
        let done = q
            .complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Permanent, 10, 0.0))
            .expect("complete");
        assert_eq!(done, Completed::Dead { reason: DeadReason::Permanent });
        assert_eq!(status(&mut q), (Status::Dead, None, Some(DeadReason::Permanent)));

        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 0);
        let done = q
            .complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Retryable, 10, 0.5))
            .expect("complete");
        assert_eq!(done, Completed::Retry { available_at: 60 });
        assert_eq!(status(&mut q), (Status::Pending, Some(60), None));
    }

    #[test]
    fn a_jobs_own_backoff_replaces_the_queues_setting_by_setting() {
        // The queue: base 100, cap 250. Jitter 1 gives the whole window.
        let retry_at = |base_ms: Option<u64>, cap_ms: Option<u64>, attempts: u64| {
            let mut q = queue();
            let job = NewJob {
                id: "a",
                payload: "",
                max_attempts: 9,
                deadline: 100_000,
                now: 0,
                base_ms,
                cap_ms,
                ..NewJob::default()
            };
            q.enqueue(&job).expect("enqueue");
            let mut at = 0;
            let mut last = None;
            for _ in 0..attempts {
                let c = q.claim("w1", at).expect("claim").expect("claimed");
                last = Some(
                    q.complete(&Completion::new(&c.lease, Outcome::Retryable, at, 1.0)).expect("complete"),
                );
                if let Some(Completed::Retry { available_at }) = last {
                    at = available_at;
                }
            }
            (last, q)
        };
        let window = |base_ms, cap_ms| {
            let (last, _) = retry_at(base_ms, cap_ms, 1);
            match last {
                Some(Completed::Retry { available_at }) => available_at,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(window(None, None), 100);
        assert_eq!(window(Some(10), None), 10);
        assert_eq!(window(None, Some(40)), 40, "its own cap below the queue's base");
        assert_eq!(window(Some(500), None), 250, "its own base under the queue's cap");
        // Base only: the queue's cap as set at the retry, not at the enqueue.
        let (_, mut q) = retry_at(Some(200), None, 1);
        q.set_settings(Settings { cap_ms: 300, ..q.settings() }).expect("settings");
        let c = q.claim("w1", 200).expect("claim").expect("claimed");
        let next = q.complete(&Completion::new(&c.lease, Outcome::Retryable, 200, 1.0)).expect("complete");
        assert_eq!(next, Completed::Retry { available_at: 500 }, "window min(300, 400)");
    }

    #[test]
    fn now_plus_delay_on_the_deadline_is_dead_one_less_is_a_retry() {
        // attempt 1, base 100, jitter 1 → delay 100.
        let mut q = queue();
        let n = leased(&mut q, 5, 1100, 0);
        let done = q
            .complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Retryable, 1000, 1.0))
            .expect("complete");
        assert_eq!(done, Completed::Dead { reason: DeadReason::Deadline });

        let mut q = queue();
        let n = leased(&mut q, 5, 1101, 0);
        let done = q
            .complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Retryable, 1000, 1.0))
            .expect("complete");
        assert_eq!(done, Completed::Retry { available_at: 1100 });
    }

    #[test]
    fn a_retry_on_the_last_attempt_is_exhausted() {
        let mut q = queue();
        let n = leased(&mut q, 1, 10_000, 0);
        let done = q
            .complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Retryable, 10, 0.0))
            .expect("complete");
        assert_eq!(done, Completed::Dead { reason: DeadReason::Exhausted });
    }

    #[test]
    fn a_stale_completion_after_a_reclaim_changes_nothing() {
        let mut q = queue();
        let first = leased(&mut q, 5, 100_000, 0);
        let second = q.claim("w2", 1000).expect("claim").expect("reclaimed").attempt();
        assert_eq!(second, 2);
        let before = q.get("a").expect("get");
        for (worker, attempt) in [("w1", first), ("w2", first), ("w1", second)] {
            let err = q
                .complete(&Completion::new(&Lease::new(worker, "a", attempt), Outcome::Ok, 1001, 0.0))
                .unwrap_err();
            assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
        }
        assert_eq!(q.get("a").expect("get"), before);
        assert_eq!(
            q.complete(&Completion::new(&Lease::new("w2", "a", second), Outcome::Ok, 1001, 0.0))
                .expect("complete"),
            Completed::Done
        );
        // Completing a finished job is a lost lease too.
        let err =
            q.complete(&Completion::new(&Lease::new("w2", "a", second), Outcome::Ok, 1002, 0.0)).unwrap_err();
        assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    }

    #[test]
    fn a_late_completion_of_an_expired_lease_still_counts() {
        let mut q = queue();
        let n = leased(&mut q, 1, 500, 0);
        // Lease expired at 1000, deadline and budget both gone, nobody reaped or reclaimed.
        assert_eq!(
            q.complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Ok, 5000, 0.0))
                .expect("complete"),
            Completed::Done
        );
    }

    #[test]
    fn the_clock_going_back_before_the_claim_is_refused() {
        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 100);
        let before = q.get("a").expect("get");
        let err = q.complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Ok, 99, 0.0)).unwrap_err();
        assert!(matches!(err, Error::ClockWentBackwards { now: 99, claimed_at: 100 }), "{err}");
        assert_eq!(q.get("a").expect("get"), before);
        assert_eq!(
            q.complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Ok, 100, 0.0)).expect("complete"),
            Completed::Done
        );
    }

    #[test]
    fn a_report_leaves_its_notes_and_the_next_recorded_attempt_replaces_them() {
        let mut q = queue();
        let n = leased(&mut q, 5, 100_000, 0);
        let report = Report::with_error(Outcome::Retryable, "exit 75: busy");
        let done =
            q.complete(&Completion::new(&Lease::new("w1", "a", n), report, 10, 0.0)).expect("complete");
        assert_eq!(done, Completed::Retry { available_at: 10 });
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.last_error.as_deref(), job.last_node), (Some("exit 75: busy"), None));
        // A claim does not touch the notes; the next recorded attempt replaces them.
        let n = q.claim("w1", 10).expect("claim").expect("claimed").attempt();
        assert_eq!(q.get("a").expect("get").expect("job").last_error.as_deref(), Some("exit 75: busy"));
        let report = Report::from(Outcome::Permanent).node("node-2");
        q.complete(&Completion::new(&Lease::new("w1", "a", n), report, 11, 0.0)).expect("complete");
        let job = q.get("a").expect("get").expect("job");
        assert_eq!(
            (job.status, job.last_error, job.last_node.as_deref()),
            (Status::Dead, None, Some("node-2"))
        );
    }

    #[test]
    fn a_long_error_is_cut_and_a_refused_completion_leaves_no_note() {
        let mut q = queue();
        let n = leased(&mut q, 5, 100_000, 0);
        let long = "x".repeat(crate::MAX_NOTE_BYTES + 10);
        let err = q
            .complete(&Completion::new(
                &Lease::new("w2", "a", n),
                Report::with_error(Outcome::Retryable, long.clone()),
                5,
                0.0,
            ))
            .unwrap_err();
        assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
        assert_eq!(q.get("a").expect("get").expect("job").last_error, None);
        q.complete(&Completion::new(
            &Lease::new("w1", "a", n),
            Report::with_error(Outcome::Retryable, long),
            5,
            0.0,
        ))
        .expect("complete");
        let job = q.get("a").expect("get").expect("job");
        assert_eq!(job.last_error.map(|e| e.len()), Some(crate::MAX_NOTE_BYTES));
    }

    #[test]
    fn an_error_noted_on_a_live_lease_is_kept_without_a_transition() {
        let mut q = queue();
        let n = leased(&mut q, 1, 100_000, 0);
        let before = q.get("a").expect("get").expect("job");
        let steps = q.history("a").expect("history").len();
        q.record_error(&Lease::new("w1", "a", n), "exit 3: no such table", None).expect("note");
        let after = q.get("a").expect("get").expect("job");
        assert_eq!(after.last_error.as_deref(), Some("exit 3: no such table"));
        assert_eq!(Job { last_error: None, ..after }, before, "nothing but the note changed");
        assert_eq!(q.history("a").expect("history").len(), steps, "a note is not a transition");
        // The note survives the reap that quarantines the job when the lease expires.
        q.reap(1000).expect("reap");
        let dead = q.get("a").expect("get").expect("job");
        assert_eq!(
            (dead.dead_reason, dead.last_error.as_deref()),
            (Some(DeadReason::Exhausted), Some("exit 3: no such table"))
        );
        // Fenced like a completion.
        let err = q.record_error(&Lease::new("w1", "a", n), "late", None).unwrap_err();
        assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
        let err = q.record_error(&Lease::new("w1", "missing", 1), "x", None).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        let err = q.record_error(&Lease::new("w1", "a", 0), "x", None).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "attempt", .. }), "{err}");
        assert_eq!(
            q.get("a").expect("get").expect("job").last_error.as_deref(),
            Some("exit 3: no such table")
        );
    }

    /// Completes attempt 1 of a fresh job (deadline, budget) claimed at 0 with `report` at
    /// `now`, jitter 1 (base 100, cap 250: the SPEC's delay after attempt 1 is 100).
    fn pushed(max_attempts: u64, deadline: u64, report: &Report, now: u64) -> Completed {
        let mut q = queue();
        let n = leased(&mut q, max_attempts, deadline, 0);
        q.complete(&Completion::new(&Lease::new("w1", "a", n), report.clone(), now, 1.0)).expect("complete")
    }

    #[test]
    fn a_pushback_longer_than_the_delay_is_the_delay() {
        let report = Report::from(Outcome::Retryable).retry_after(5_000);
        assert_eq!(pushed(5, 100_000, &report, 10), Completed::Retry { available_at: 5_010 });
        // Shorter than the SPEC's delay: the SPEC's delay.
        let report = Report::from(Outcome::Retryable).retry_after(40);
        assert_eq!(pushed(5, 100_000, &report, 10), Completed::Retry { available_at: 110 });
    }

    #[test]
    fn a_pushback_reaching_the_deadline_ends_the_job_now() {
        // now + floor on the deadline is dead, one less is a retry: the SPEC's rule.
        let report = Report::from(Outcome::Retryable).retry_after(990);
        assert_eq!(pushed(5, 1_000, &report, 10), Completed::Dead { reason: DeadReason::Deadline });
        assert_eq!(pushed(5, 1_001, &report, 10), Completed::Retry { available_at: 1_000 });
        // Far past every time the queue can hold: no overflow, just the deadline.
        let report = Report::from(Outcome::Retryable).retry_after(u64::MAX);
        assert_eq!(pushed(5, crate::MAX_INT, &report, 10), Completed::Dead { reason: DeadReason::Deadline });
    }

    #[test]
    fn a_pushback_changes_nothing_but_the_delay() {
        let floor = |outcome| Report::from(outcome).retry_after(50_000);
        // The budget comes first, as without one.
        assert_eq!(
            pushed(1, 100_000, &floor(Outcome::Retryable), 10),
            Completed::Dead { reason: DeadReason::Exhausted }
        );
        assert_eq!(pushed(5, 100_000, &floor(Outcome::Ok), 10), Completed::Done);
        assert_eq!(
            pushed(5, 100_000, &floor(Outcome::Permanent), 10),
            Completed::Dead { reason: DeadReason::Permanent }
        );
    }

    #[test]
    fn a_pushback_of_zero_is_no_pushback() {
        // Every outcome, budget, deadline, time and jitter of a small grid: the same result
        // and the same row as the SPEC's `complete` of the bare outcome.
        let outcomes = [Outcome::Ok, Outcome::Retryable, Outcome::Permanent];
        for outcome in outcomes {
            for max_attempts in [1, 2] {
                for deadline in [100, 150, 151, 1_000] {
                    for now in [0, 50, 99, 100, 2_000] {
                        for jitter in [0.0, 0.5, 1.0] {
                            let mut spec = queue();
                            let mut zero = queue();
                            let n = leased(&mut spec, max_attempts, deadline, 0);
                            leased(&mut zero, max_attempts, deadline, 0);
                            let lease = Lease::new("w1", "a", n);
                            let a = spec
                                .complete(&Completion::new(&lease, outcome, now, jitter))
                                .expect("complete");
                            let floor = Report::from(outcome).retry_after(0);
                            let b = zero
                                .complete(&Completion::new(&lease, floor, now, jitter))
                                .expect("complete");
                            assert_eq!(a, b, "{outcome:?} {max_attempts} {deadline} {now} {jitter}");
                            assert_eq!(spec.get("a").expect("get"), zero.get("a").expect("get"));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_pushed_back_retry_passes_the_audit() {
        let mut q = queue();
        let n = leased(&mut q, 5, 100_000, 0);
        let report = Report::with_error(Outcome::Retryable, "HTTP 503").retry_after(30_000);
        assert_eq!(
            q.complete(&Completion::new(&Lease::new("w1", "a", n), report, 10, 0.3)).expect("complete"),
            Completed::Retry { available_at: 30_010 }
        );
        assert_eq!(q.claim("w1", 30_009).expect("claim"), None, "the reservation holds");
        let n = q.claim("w1", 30_010).expect("claim").expect("claimed").attempt();
        q.complete(&Completion::new(&Lease::new("w1", "a", n), Outcome::Ok, 30_020, 0.0)).expect("complete");
        let audit = q.audit().expect("audit");
        assert!(audit.violations.is_empty(), "{:?}", audit.violations);
    }

    #[test]
    fn the_fenced_finish_looks_the_job_up_by_id() {
        let q = queue();
        let plan: Vec<String> = q
            .conn()
            .prepare(&format!("EXPLAIN QUERY PLAN {FINISH_FENCED}"))
            .expect("explain")
            .query_map(
                params!["a", "w", 1, 0, "done", None::<String>, None::<String>, None::<String>],
                |row| row.get::<_, String>(3),
            )
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("rows");
        let plan = plan.join("\n");
        assert!(plan.contains("SEARCH jobs USING INDEX sqlite_autoindex_jobs_1 (id=?)"), "{plan}");
    }

    #[test]
    fn a_refused_ok_or_permanent_is_the_same_refusal_as_a_retryable_one() {
        // The fenced one-statement finish falls back to the checks, in the same order.
        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 100);
        let before = q.get("a").expect("get");
        for outcome in [Outcome::Ok, Outcome::Permanent, Outcome::Retryable] {
            let tries = [
                (Lease::new("w1", "missing", 1), 200),
                (Lease::new("w2", "a", n), 200),
                (Lease::new("w1", "a", n + 1), 200),
                (Lease::new("w1", "a", n), 99),
            ];
            let mut kinds = Vec::new();
            for (lease, now) in &tries {
                kinds.push(q.complete(&Completion::new(lease, outcome, *now, 0.0)).map_err(|e| e.kind()));
            }
            use crate::ErrorKind::*;
            assert_eq!(
                kinds,
                [Err(NotFound), Err(LeaseLost), Err(LeaseLost), Err(ClockWentBackwards)],
                "{outcome:?}"
            );
            assert_eq!(q.get("a").expect("get"), before, "{outcome:?}: a refusal changes nothing");
        }
    }

    #[test]
    fn checks_come_in_spec_order() {
        let mut q = queue();
        let n = leased(&mut q, 5, 10_000, 100);
        // Arguments before the lookup: a bad jitter on a missing job is invalid input.
        let err =
            q.complete(&Completion::new(&Lease::new("w1", "missing", 1), Outcome::Ok, 0, 2.0)).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "jitter", .. }), "{err}");
        let err =
            q.complete(&Completion::new(&Lease::new("w1", "missing", 0), Outcome::Ok, 0, 0.0)).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { field: "attempt", .. }), "{err}");
        let err =
            q.complete(&Completion::new(&Lease::new("w1", "missing", 1), Outcome::Ok, 0, 0.0)).unwrap_err();
        assert!(matches!(err, Error::NotFound { .. }), "{err}");
        // The fence before the clock.
        let err = q.complete(&Completion::new(&Lease::new("w2", "a", n), Outcome::Ok, 0, 0.0)).unwrap_err();
        assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    }
}
