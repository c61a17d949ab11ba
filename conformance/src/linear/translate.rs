//! The operations a concurrent run issues, called on any [`Backend`] and answered in the
//! SPEC's words.
//!
//! Only the operations the clients issue are here (no `config`, `restart` or
//! `retry_delay`: settings are fixed before the run, and a restart is not a concurrent
//! event). A refusal is an answer like any other; only a storage failure, or an answer the
//! SPEC has no word for, stops the run.

use std::convert::Infallible;

use retryq::{
    Backend, Claimed, Completed, Completion, Enqueued, Error, ErrorKind, Lease, NewJob, Ran, Redrive,
    RunError,
};
use retryq_model::{
    DeadReason, Failure, JobView, Op, Outcome, Reply, Response, RunOutcome, StatsView, Status,
};

/// Why a call gave no answer the history can record.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    /// The store failed (a connection lost, a lock not had in time, a corrupt row).
    #[error("storage failed: {0}")]
    Storage(#[source] Error),
    /// The store answered with a value the SPEC does not name.
    #[error("the store answered {0}, which the SPEC does not name")]
    Unnamed(String),
    /// The operation is not one a concurrent client issues.
    #[error("{0} is not an operation of a concurrent run")]
    NotConcurrent(String),
}

/// Runs `op` on `store`.
pub fn apply(store: &mut dyn Backend, op: &Op) -> Result<Response, Unanswered> {
    match answer(store, op) {
        Ok(reply) => Ok(Response::Ok(reply)),
        Err(Refused::Failure(failure)) => Ok(Response::Err(failure)),
        Err(Refused::Fatal(why)) => Err(why),
    }
}

/// An answer that is not a reply.
enum Refused {
    /// The SPEC's refusal: recorded.
    Failure(Failure),
    /// No answer at all.
    Fatal(Unanswered),
}

fn answer(store: &mut dyn Backend, op: &Op) -> Result<Reply, Refused> {
    Ok(match op {
        Op::Enqueue { id, payload, max_attempts, deadline, now, not_before, base_ms, cap_ms } => {
            let job = NewJob {
                id,
                payload,
                max_attempts: *max_attempts,
                deadline: *deadline,
                now: *now,
                not_before: *not_before,
                base_ms: *base_ms,
                cap_ms: *cap_ms,
            };
            match store.enqueue(&job)? {
                Enqueued::New => Reply::Enqueued,
                Enqueued::Existing => Reply::Existing,
                other => return Err(unnamed(other)),
            }
        }
        Op::Claim { worker, now } => match store.claim(worker, *now)? {
            Some(Claimed { lease: Lease { id, attempt, .. }, lease_until, .. }) => {
                Reply::Claimed { id, attempt, lease_until }
            }
            None => Reply::None,
        },
        Op::Complete { worker, id, attempt, outcome, now, jitter } => {
            let jitter = jitter_for(*outcome == Outcome::Retryable, *jitter)?;
            let lease = Lease::new(worker, id, *attempt);
            match store.complete(&Completion::new(&lease, outcome_of(*outcome), *now, jitter))? {
                Completed::Done => Reply::Done,
                Completed::Retry { available_at } => Reply::Retry { available_at },
                Completed::Dead { reason } => Reply::Dead { reason: reason_of(reason)? },
                other => return Err(unnamed(other)),
            }
        }
        Op::RunOnce { worker, now, after, outcome, jitter } => {
            let jitter = jitter_for(*outcome == RunOutcome::Retryable, *jitter)?;
            run_once(store, worker, *now, after.unwrap_or(*now), *outcome, jitter)?
        }
        Op::Heartbeat { worker, id, attempt, now } => {
            Reply::Extended { lease_until: store.heartbeat(&Lease::new(worker, id, *attempt), *now)? }
        }
        Op::Cancel { id, now } => {
            store.cancel(id, *now)?;
            Reply::Cancelled
        }
        Op::Redrive { id, now, add_attempts, deadline } => {
            store.redrive(&Redrive { id, add_attempts: *add_attempts, deadline: *deadline, now: *now })?;
            Reply::Redriven
        }
        Op::Reap { now } => Reply::Reaped { count: store.reap(*now)? },
        Op::Get { id } => match store.get(id)? {
            Some(job) => Reply::Job(job_view(&job)?),
            None => return Err(Refused::Failure(Failure::NotFound)),
        },
        Op::Stats { now } => Reply::Stats(stats_view(&store.stats(*now)?)),
        Op::Config { .. } | Op::Restart | Op::RetryDelay { .. } => {
            return Err(Refused::Fatal(Unanswered::NotConcurrent(op.to_json_line())));
        }
    })
}

/// `run_once` with a clock that reads `now`, then `after`, and a transport that answers
/// `outcome`; a `crash` is its claim alone (the process died holding the lease).
fn run_once(
    store: &mut dyn Backend,
    worker: &str,
    now: u64,
    after: u64,
    outcome: RunOutcome,
    jitter: f64,
) -> Result<Reply, Refused> {
    if outcome == RunOutcome::Crash {
        return Ok(match store.claim(worker, now)? {
            Some(Claimed { lease: Lease { id, attempt, .. }, .. }) => Reply::Crashed { id, attempt },
            None => Reply::None,
        });
    }
    let answer = outcome.classified().map(outcome_of);
    let mut readings = [now, after].into_iter();
    let clock = move || readings.next().unwrap_or(after);
    let transport = move |_: &Claimed| answer.ok_or(Unclassified);
    match store.run_once(worker, clock, transport, jitter) {
        Ok(Ran::Idle) => Ok(Reply::None),
        Ok(Ran::Done { id, attempt }) => Ok(Reply::RanDone { id, attempt }),
        Ok(Ran::Retry { id, attempt, available_at }) => Ok(Reply::RanRetry { id, attempt, available_at }),
        Ok(Ran::Dead { id, attempt, reason }) => {
            Ok(Reply::RanDead { id, attempt, reason: reason_of(reason)? })
        }
        Ok(other) => Err(unnamed(other)),
        Err(RunError::ClockWentBackwards { id, attempt, .. }) => {
            Err(Refused::Failure(Failure::RanClockWentBackwards { id, attempt }))
        }
        Err(RunError::Unclassified { id, attempt, .. }) => {
            Err(Refused::Failure(Failure::UnknownError { id, attempt }))
        }
        Err(RunError::Queue(e)) => Err(e.into()),
        Err(other) => Err(unnamed(other)),
    }
}

/// The jitter to pass to the store: the replay format requires one for `retryable` (SPEC
/// 5.2), which the library, taking a plain `f64`, cannot know was left out.
fn jitter_for(retryable: bool, jitter: Option<f64>) -> Result<f64, Refused> {
    match jitter {
        Some(j) => Ok(j),
        None if retryable => Err(Refused::Failure(Failure::InvalidInput {
            detail: "jitter: is required for outcome retryable".into(),
        })),
        // Unused by every other outcome; any valid ratio will do.
        None => Ok(0.0),
    }
}

/// The transport error an `unknown` outcome stands for.
#[derive(Debug)]
struct Unclassified;

impl From<Error> for Refused {
    fn from(error: Error) -> Self {
        Refused::Failure(match error.kind() {
            ErrorKind::InvalidInput => Failure::InvalidInput { detail: error.to_string() },
            ErrorKind::Conflict => Failure::Conflict,
            ErrorKind::NotFound => Failure::NotFound,
            ErrorKind::LeaseLost => Failure::LeaseLost,
            ErrorKind::NotDead => Failure::NotDead,
            ErrorKind::ClockWentBackwards => Failure::ClockWentBackwards,
            ErrorKind::DeadlinePassed => Failure::DeadlinePassed,
            ErrorKind::Leased => Failure::Leased,
            ErrorKind::NotCancellable => Failure::NotCancellable,
            _ => return Refused::Fatal(Unanswered::Storage(error)),
        })
    }
}

impl From<Infallible> for Refused {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

fn job_view(job: &retryq::Job) -> Result<JobView, Refused> {
    Ok(JobView {
        id: job.id.clone(),
        status: status_of(job.status)?,
        attempts: job.attempts,
        max_attempts: job.max_attempts,
        available_at: job.available_at,
        deadline: job.deadline,
        dead_reason: job.dead_reason.map(reason_of).transpose()?,
        redrives: job.redrives,
        not_before: job.not_before,
        base_ms: job.base_ms,
        cap_ms: job.cap_ms,
    })
}

fn stats_view(s: &retryq::Stats) -> StatsView {
    StatsView {
        pending: s.pending,
        leased: s.leased,
        done: s.done,
        dead: s.dead,
        dead_exhausted: s.dead_exhausted,
        dead_deadline: s.dead_deadline,
        dead_permanent: s.dead_permanent,
        dead_cancelled: s.dead_cancelled,
        leased_expired: s.leased_expired,
        oldest_open_age_ms: s.oldest_open_age_ms,
    }
}

fn outcome_of(outcome: Outcome) -> retryq::Outcome {
    match outcome {
        Outcome::Ok => retryq::Outcome::Ok,
        Outcome::Retryable => retryq::Outcome::Retryable,
        Outcome::Permanent => retryq::Outcome::Permanent,
    }
}

fn status_of(status: retryq::Status) -> Result<Status, Refused> {
    Ok(match status {
        retryq::Status::Pending => Status::Pending,
        retryq::Status::Leased => Status::Leased,
        retryq::Status::Done => Status::Done,
        retryq::Status::Dead => Status::Dead,
        other => return Err(unnamed(other)),
    })
}

fn reason_of(reason: retryq::DeadReason) -> Result<DeadReason, Refused> {
    Ok(match reason {
        retryq::DeadReason::Exhausted => DeadReason::Exhausted,
        retryq::DeadReason::Deadline => DeadReason::Deadline,
        retryq::DeadReason::Permanent => DeadReason::Permanent,
        retryq::DeadReason::Cancelled => DeadReason::Cancelled,
        other => return Err(unnamed(other)),
    })
}

fn unnamed(answer: impl std::fmt::Debug) -> Refused {
    Refused::Fatal(Unanswered::Unnamed(format!("{answer:?}")))
}
