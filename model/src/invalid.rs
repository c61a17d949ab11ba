//! The hostile world's bad arguments: one representative operation for each class of invalid
//! input SPEC 3.1 and 5.2 name, each of which must be refused with `invalid_input` before any
//! lookup and change nothing (SPEC 3.1, 4.9).
//!
//! The classes a parsed operation can still carry reach the store; those only the parser sees
//! (malformed JSON, wrong JSON types, unknown fields) are the conformance suite's business.
//! A payload above 1 MiB is left out here: a megabyte copied on every state the checker
//! expands costs far more than it shows, and the replay tests cover it.
//!
//! Layer: part of the world, beside [`crate::model`] and below it: it uses the SPEC's
//! vocabulary and the model's names for jobs and workers ([`crate::ids`]), and the world offers
//! its operations as actions. It may not reach up to the world: a bad argument is bad
//! whatever the world around it holds.

use crate::ids::{PAYLOAD, job_name, worker_name};
use crate::{MAX_INT, Op, Outcome, RunOutcome};

/// The largest budget, 2^31 − 1.
const MAX_BUDGET: u64 = (1 << 31) - 1;

/// One class of invalid argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invalid {
    /// `enqueue` with an empty `id`.
    EmptyId,
    /// `enqueue` of an `id` holding a NUL (SPEC 6.21).
    NulInId,
    /// `claim` by a worker named with 257 bytes.
    LongWorker,
    /// `reap` at `now` = 2^53, one above the largest integer.
    NowTooLarge,
    /// `enqueue` with `max_attempts` 0.
    ZeroBudget,
    /// `enqueue` with `max_attempts` 2^31.
    BudgetTooLarge,
    /// `enqueue` with `deadline` = `now`.
    DeadlineNotAfterNow,
    /// `complete` of the first job with `attempt` 0.
    ZeroAttempt,
    /// `complete` of the first job, attempt 1, `retryable` with jitter 1.5.
    JitterAboveOne,
    /// `complete` of the first job, attempt 1, `retryable` without a jitter.
    JitterMissing,
    /// `run_once` whose jitter is 1.5: refused before it claims anything.
    RunOnceJitterAboveOne,
    /// `config` with `lease_ms` 0 (and other settings, which must not apply either).
    ZeroLease,
    /// `redrive` of the first job with `add_attempts` 0.
    ZeroAddAttempts,
    /// `redrive` of the first job with `deadline` = `now`.
    RedriveDeadlineNotAfterNow,
    /// `redrive` of the first job with `add_attempts` 2^31 − 1: `attempts + add_attempts`
    /// overflows the budget once the job has been claimed (checked after `not_found` and
    /// `not_dead`, SPEC 6.5).
    RedriveOverflow,
    /// `enqueue` of the first job with `not_before` = `deadline`: refused even when the id
    /// exists (SPEC 6.22).
    NotBeforeAtDeadline,
    /// `enqueue` of the next job with `not_before` one millisecond before `now`.
    NotBeforeBeforeNow,
    /// `enqueue` of the first job with its own `cap_ms` of 2^53.
    OwnCapTooLarge,
    /// `heartbeat` of the first job with `attempt` 0.
    HeartbeatZeroAttempt,
    /// `cancel` of the first job at `now` = 2^53.
    CancelNowTooLarge,
}

impl Invalid {
    /// Every class, so that the world can offer each bad argument as a step.
    pub const ALL: [Invalid; 20] = [
        Invalid::EmptyId,
        Invalid::NulInId,
        Invalid::LongWorker,
        Invalid::NowTooLarge,
        Invalid::ZeroBudget,
        Invalid::BudgetTooLarge,
        Invalid::DeadlineNotAfterNow,
        Invalid::ZeroAttempt,
        Invalid::JitterAboveOne,
        Invalid::JitterMissing,
        Invalid::RunOnceJitterAboveOne,
        Invalid::ZeroLease,
        Invalid::ZeroAddAttempts,
        Invalid::RedriveDeadlineNotAfterNow,
        Invalid::RedriveOverflow,
        Invalid::NotBeforeAtDeadline,
        Invalid::NotBeforeBeforeNow,
        Invalid::OwnCapTooLarge,
        Invalid::HeartbeatZeroAttempt,
        Invalid::CancelNowTooLarge,
    ];

    /// The classes of SPEC 1.1's fields and operations. Each is a refusal that adds no state,
    /// but one more successor of every state: the model offers them at `now` 0 only, where
    /// the first job exists or not and has every status.
    pub fn added_in_1_1(self) -> bool {
        matches!(
            self,
            Invalid::NotBeforeAtDeadline
                | Invalid::NotBeforeBeforeNow
                | Invalid::OwnCapTooLarge
                | Invalid::HeartbeatZeroAttempt
                | Invalid::CancelNowTooLarge
        )
    }

    /// The operation, at `now`, in a world where `enqueued` ids exist. It names the first job
    /// whether or not it exists yet, so that "checked before any lookup" is tried both ways.
    pub fn op(self, now: u64, enqueued: usize) -> Op {
        let first = job_name(0);
        let next = job_name(enqueued);
        let shaped = |id: String, max_attempts: u64, deadline: u64, now: u64, shape: [Option<u64>; 3]| {
            let [not_before, base_ms, cap_ms] = shape;
            Op::Enqueue {
                id,
                payload: PAYLOAD.into(),
                max_attempts,
                deadline,
                now,
                not_before,
                base_ms,
                cap_ms,
            }
        };
        let enqueue =
            |id: String, max_attempts: u64, deadline: u64| shaped(id, max_attempts, deadline, now, [None; 3]);
        let complete = |attempt: u64, outcome: Outcome, jitter: Option<f64>| Op::Complete {
            worker: worker_name(0),
            id: first.clone(),
            attempt,
            outcome,
            now,
            jitter,
        };
        let redrive =
            |add_attempts: u64, deadline: u64| Op::Redrive { id: first.clone(), now, add_attempts, deadline };
        match self {
            Invalid::EmptyId => enqueue(String::new(), 1, now + 2),
            Invalid::NulInId => enqueue(format!("{next}\0"), 1, now + 2),
            Invalid::LongWorker => Op::Claim { worker: "w".repeat(257), now },
            Invalid::NowTooLarge => Op::Reap { now: MAX_INT + 1 },
            Invalid::ZeroBudget => enqueue(next, 0, now + 2),
            Invalid::BudgetTooLarge => enqueue(next, MAX_BUDGET + 1, now + 2),
            Invalid::DeadlineNotAfterNow => enqueue(next, 1, now),
            Invalid::ZeroAttempt => complete(0, Outcome::Ok, None),
            Invalid::JitterAboveOne => complete(1, Outcome::Retryable, Some(1.5)),
            Invalid::JitterMissing => complete(1, Outcome::Retryable, None),
            Invalid::RunOnceJitterAboveOne => Op::RunOnce {
                worker: worker_name(0),
                now,
                after: None,
                outcome: RunOutcome::Retryable,
                jitter: Some(1.5),
            },
            Invalid::ZeroLease => Op::Config { base_ms: Some(7), cap_ms: Some(7), lease_ms: Some(0) },
            Invalid::ZeroAddAttempts => redrive(0, now + 2),
            Invalid::RedriveDeadlineNotAfterNow => redrive(1, now),
            Invalid::RedriveOverflow => redrive(MAX_BUDGET, now + 2),
            Invalid::NotBeforeAtDeadline => shaped(first, 1, now + 2, now, [Some(now + 2), None, None]),
            // At `now` 0 there is no earlier millisecond: the line is dated 1 instead.
            Invalid::NotBeforeBeforeNow => {
                let now = now.max(1);
                shaped(next, 1, now + 2, now, [Some(now - 1), None, None])
            }
            Invalid::OwnCapTooLarge => shaped(first, 1, now + 2, now, [None, None, Some(MAX_INT + 1)]),
            Invalid::HeartbeatZeroAttempt => {
                Op::Heartbeat { worker: worker_name(0), id: first, attempt: 0, now }
            }
            Invalid::CancelNowTooLarge => Op::Cancel { id: first, now: MAX_INT + 1 },
        }
    }
}
