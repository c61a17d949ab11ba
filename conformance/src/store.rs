//! SPEC section 5's operations run against a real store: SQLite or PostgreSQL.
//!
//! This is the implementation's side of every comparison: it calls `retryq` through its
//! [`Backend`] trait and translates the answers into the SPEC's results, whichever store
//! keeps the jobs. Checks that belong to the replay format rather than to the queue (a
//! `jitter` is required for `retryable`) are made here, before the queue is called, so that
//! a refused line changes nothing.

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use retryq::{
    Backend, Cancelled, Claimed, Completed, Completion, Enqueued, Error, Lease, Lookup, NewJob, OpenOptions,
    Queue, Ran, Redrive, RunError, Settings,
};
use retryq_model::{
    DeadReason, Failure, JobView, MAX_INT, Op, Outcome, Reply, Response, RunOutcome, StatsView, Status,
    TombstoneView,
};
use tempfile::TempDir;

use crate::{ReplayError, pg};

/// Where the jobs live, which decides what `restart` does.
enum Place {
    /// A fresh SQLite file in a temporary directory, removed when the replay ends.
    Temporary { _dir: TempDir, path: PathBuf, options: OpenOptions },
    /// A SQLite file the caller named; it stays.
    File { path: PathBuf, options: OpenOptions },
    /// SQLite in memory: nothing to reopen, so `restart` keeps the connection.
    Memory,
    /// A PostgreSQL database; `restart` closes the connection and connects again. A database
    /// lent by a run goes back to it when the side is dropped.
    Postgres { url: String, _lent: Option<pg::Lent> },
}

/// A store driven one operation at a time: the implementation's side of a replay.
pub struct Side {
    // Declared first so that it is dropped first: the connection closes before a lent
    // database goes back to its run.
    backend: Box<dyn Backend>,
    place: Place,
}

impl Side {
    /// A fresh SQLite database file in a new temporary directory.
    pub fn temporary() -> Result<Side, ReplayError> {
        let dir = tempfile::Builder::new().prefix("retryq-replay-").tempdir()?;
        let path = dir.path().join("replay.db");
        let options = OpenOptions::default();
        let queue = Queue::open_with(&path, &options)?;
        Ok(Side { backend: Box::new(queue), place: Place::Temporary { _dir: dir, path, options } })
    }

    /// The SQLite database file at `path`, created if missing.
    pub fn file(path: &Path) -> Result<Side, ReplayError> {
        Side::file_with(path, OpenOptions::default())
    }

    /// The SQLite database file at `path`, opened with `options`.
    pub fn file_with(path: &Path, options: OpenOptions) -> Result<Side, ReplayError> {
        let queue = Queue::open_with(path, &options)?;
        Ok(Side { backend: Box::new(queue), place: Place::File { path: path.to_path_buf(), options } })
    }

    /// A fresh in-memory SQLite database: fast, and `restart` does not reopen anything.
    pub fn in_memory() -> Result<Side, ReplayError> {
        Ok(Side { backend: Box::new(Queue::open_in_memory()?), place: Place::Memory })
    }

    /// The PostgreSQL database `url` names; an empty one gets the schema, as a new SQLite
    /// file does.
    pub fn postgres(url: &str) -> Result<Side, ReplayError> {
        Ok(Side { backend: pg::connect(url)?, place: Place::Postgres { url: url.to_owned(), _lent: None } })
    }

    /// An empty PostgreSQL database lent by a run, given back when this side is dropped.
    pub fn lent(lent: pg::Lent) -> Result<Side, ReplayError> {
        let url = lent.url().to_owned();
        Ok(Side { backend: pg::connect(&url)?, place: Place::Postgres { url, _lent: Some(lent) } })
    }

    /// What `--db` names: a `postgres://` or `postgresql://` URL is a PostgreSQL database,
    /// anything else a SQLite file (created if missing).
    pub fn open(db: &Path) -> Result<Side, ReplayError> {
        match db.to_str() {
            Some(url) if pg::is_url(url) => Side::postgres(url),
            _ => Side::file(db),
        }
    }

    /// Which store this is: `sqlite` or `postgres`.
    pub fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// The store underneath, to look at its state between steps.
    pub fn backend(&mut self) -> &mut dyn Backend {
        self.backend.as_mut()
    }

    /// Runs one operation. A refusal is a [`Response`] like any other; only a storage
    /// failure stops the replay.
    pub fn step(&mut self, op: &Op) -> Result<Response, ReplayError> {
        if *op == Op::Restart {
            self.restart()?;
            return Ok(Response::Ok(Reply::Restart));
        }
        answer(self.backend.as_mut(), op)
    }

    /// Closes the database and opens it again, keeping the settings (as `config` promises):
    /// the same SQLite file, or a new connection to the same PostgreSQL database. In memory
    /// there is nothing to reopen.
    fn restart(&mut self) -> Result<(), ReplayError> {
        let settings = self.backend.settings();
        // Close first: the old connection must be gone before the store is opened again.
        let placeholder: Box<dyn Backend> = Box::new(Queue::open_in_memory()?);
        let old = std::mem::replace(&mut self.backend, placeholder);
        let reopened: Box<dyn Backend> = match &self.place {
            Place::Memory => old,
            Place::Temporary { path, options, .. } | Place::File { path, options } => {
                drop(old);
                Box::new(Queue::open_with(path, options)?)
            }
            Place::Postgres { url, .. } => {
                drop(old);
                pg::connect(url)?
            }
        };
        self.backend = reopened;
        self.backend.set_settings(settings)?;
        Ok(())
    }
}

/// SPEC section 5's operation `op` on `store`, answered in the SPEC's words: a refusal is a
/// [`Response`] like any other; only a storage failure, or an answer the SPEC has no word
/// for, is an error. The replay side ([`Side::step`]) and the concurrent runs
/// (`linear::translate`) both call this. `restart` reopens a store, which only the side
/// that knows where it lives can do: here it is [`ReplayError::NoPlace`].
pub fn answer(store: &mut dyn Backend, op: &Op) -> Result<Response, ReplayError> {
    respond(reply(store, op))
}

fn reply(q: &mut dyn Backend, op: &Op) -> Result<Reply, Refusal> {
    Ok(match op {
        Op::Config { base_ms, cap_ms, lease_ms, reap_limit } => {
            let current = q.settings();
            q.set_settings(Settings {
                lease_ms: lease_ms.unwrap_or(current.lease_ms),
                base_ms: base_ms.unwrap_or(current.base_ms),
                cap_ms: cap_ms.unwrap_or(current.cap_ms),
                reap_limit: reap_limit.unwrap_or(current.reap_limit),
            })?;
            Reply::Config
        }
        Op::Enqueue { .. } => enqueued(q.enqueue(&new_job(op).ok_or_else(|| unnamed(op))?)?)?,
        // A claim naming no queues goes through the default queue's shorthand.
        Op::Claim { worker, now, queues: None } => claimed(q.claim(worker, *now)?),
        Op::Claim { worker, now, queues: queues @ Some(_) } => {
            claimed(q.claim_from(worker, &names(queues), *now)?)
        }
        Op::Complete { .. } => {
            let finish = finish(op).ok_or_else(|| unnamed(op))??;
            completed(q.complete(&finish.completion())?)?
        }
        Op::RunOnce { worker, now, after, outcome, jitter, queues } => {
            let jitter = jitter_for(*outcome == RunOutcome::Retryable, *jitter)?;
            let after = after.unwrap_or(*now);
            if after > MAX_INT {
                return Err(refused("after", "is above 2^53-1"));
            }
            run_once(q, worker, &names(queues), *now, after, *outcome, jitter)?
        }
        Op::Heartbeat { worker, id, attempt, now } => {
            Reply::Extended { lease_until: q.heartbeat(&Lease::new(worker, id, *attempt), *now)? }
        }
        Op::Cancel { id, now } => match q.cancel(id, *now)? {
            Cancelled::Ended => Reply::Cancelled,
            Cancelled::Requested => Reply::Cancelling,
            other => return Err(unnamed(other)),
        },
        Op::Prune { before, now } => Reply::Pruned { count: q.prune(*before, *now)? },
        Op::Forget { before, now } => Reply::Forgotten { count: q.forget(*before, *now)? },
        Op::Redrive { id, now, add_attempts, deadline } => {
            q.redrive(&Redrive { id, add_attempts: *add_attempts, deadline: *deadline, now: *now })?;
            Reply::Redriven
        }
        Op::Reap { now } => Reply::Reaped { count: q.reap(*now)? },
        Op::Get { id } => match q.lookup(id)? {
            Some(Lookup::Job(job)) => Reply::Job(job_view(&job)?),
            Some(Lookup::Pruned(tombstone)) => Reply::Tombstone(tombstone_view(&tombstone)?),
            None => return Err(Refusal::Failure(Failure::NotFound)),
        },
        // Of every queue: through the whole store's shorthand.
        Op::Stats { now, queue: None } => Reply::Stats(stats_view(&q.stats(*now)?)),
        Op::Stats { now, queue: Some(queue) } => Reply::Stats(stats_view(&q.stats_of(*now, Some(queue))?)),
        Op::RetryDelay { attempt, base_ms, cap_ms, jitter } => {
            Reply::Delay { delay_ms: retryq::retry_delay(*attempt, *base_ms, *cap_ms, *jitter)? }
        }
        Op::Pause { queue, now } => {
            q.pause(queue, *now)?;
            Reply::Paused
        }
        Op::Resume { queue, now } => {
            q.resume(queue, *now)?;
            Reply::Resumed
        }
        Op::RunNow { id, now } => Reply::Due { available_at: q.run_now(id, *now)? },
        Op::Restart => return Err(Refusal::Fatal(ReplayError::NoPlace)),
    })
}

/// The library's job for SPEC 5.3's `enqueue` `op`; `None` for any other operation.
pub(crate) fn new_job(op: &Op) -> Option<NewJob<'_>> {
    let Op::Enqueue {
        id,
        payload,
        max_attempts,
        deadline,
        now,
        not_before,
        base_ms,
        cap_ms,
        queue,
        priority,
        kind,
    } = op
    else {
        return None;
    };
    Some(NewJob {
        queue: queue.as_deref(),
        priority: *priority,
        id,
        payload,
        max_attempts: *max_attempts,
        deadline: *deadline,
        now: *now,
        not_before: *not_before,
        base_ms: *base_ms,
        cap_ms: *cap_ms,
        kind: kind.as_deref().unwrap_or(""),
    })
}

/// SPEC 5.3's reply to an `enqueue` the queue took.
fn enqueued(enqueued: Enqueued) -> Result<Reply, Refusal> {
    match enqueued {
        Enqueued::New => Ok(Reply::Enqueued),
        Enqueued::Existing => Ok(Reply::Existing),
        other => Err(unnamed(other)),
    }
}

/// SPEC 5.3's reply to a `claim`: the job leased, or nothing due.
pub(crate) fn claimed(claimed: Option<Claimed>) -> Reply {
    match claimed {
        Some(Claimed { lease: Lease { id, attempt, .. }, lease_until, .. }) => {
            Reply::Claimed { id, attempt, lease_until }
        }
        None => Reply::None,
    }
}

/// SPEC 5.3's reply to a `complete` the queue recorded.
fn completed(completed: Completed) -> Result<Reply, Refusal> {
    Ok(match completed {
        Completed::Done => Reply::Done,
        Completed::Retry { available_at } => Reply::Retry { available_at },
        Completed::Dead { reason } => Reply::Dead { reason: reason_of(reason)? },
        other => return Err(unnamed(other)),
    })
}

/// The response to one `enqueue` of a batch ([`Backend::enqueue_many`]), as [`answer`]
/// gives it to a single one.
pub(crate) fn enqueue_response(result: retryq::Result<Enqueued>) -> Result<Response, ReplayError> {
    respond(result.map_err(Refusal::from).and_then(enqueued))
}

/// The response to one `complete` of a batch ([`Backend::complete_batch`]), as [`answer`]
/// gives it to a single one.
pub(crate) fn complete_response(result: retryq::Result<Completed>) -> Result<Response, ReplayError> {
    respond(result.map_err(Refusal::from).and_then(completed))
}

/// The response to a `prune` sent as [`Backend::prune_at_most`], as [`answer`] gives a
/// `prune`'s.
pub(crate) fn pruned_response(result: retryq::Result<u64>) -> Result<Response, ReplayError> {
    respond(result.map_err(Refusal::from).map(|count| Reply::Pruned { count }))
}

/// The response to each `claim` of a batch refused as a whole ([`Backend::claim_batch_from`]
/// checks its arguments once).
pub(crate) fn refusal_response(error: Error) -> Result<Response, ReplayError> {
    respond(Err(Refusal::from(error)))
}

/// A `complete` line's completion, checked as [`answer`] checks it before calling the queue:
/// the lease, the library's outcome, `now` and the jitter, or else the line's own response
/// (a missing or bad jitter: refused, nothing changed); `None` for any other operation.
pub(crate) fn completion_of(op: &Op) -> Option<Result<Finish, Result<Response, ReplayError>>> {
    Some(finish(op)?.map_err(|refusal| respond(Err(refusal))))
}

/// [`completion_of`], the refusal still a [`Refusal`]: what [`reply`] records.
fn finish(op: &Op) -> Option<Result<Finish, Refusal>> {
    let Op::Complete { worker, id, attempt, outcome, now, jitter } = op else { return None };
    Some(jitter_for(*outcome == Outcome::Retryable, *jitter).map(|jitter| Finish {
        lease: Lease::new(worker, id, *attempt),
        outcome: outcome_of(*outcome),
        now: *now,
        jitter,
    }))
}

/// What a [`Completion`] borrows, owned: one `complete` line's, checked.
pub(crate) struct Finish {
    /// The lease presented.
    pub(crate) lease: Lease,
    /// The outcome reported.
    pub(crate) outcome: retryq::Outcome,
    /// The caller's clock.
    pub(crate) now: u64,
    /// The jitter, valid.
    pub(crate) jitter: f64,
}

impl Finish {
    /// The completion this stands for.
    pub(crate) fn completion(&self) -> Completion<'_> {
        Completion::new(&self.lease, self.outcome, self.now, self.jitter)
    }
}

fn respond(reply: Result<Reply, Refusal>) -> Result<Response, ReplayError> {
    match reply {
        Ok(reply) => Ok(Response::Ok(reply)),
        Err(Refusal::Failure(failure)) => Ok(Response::Err(failure)),
        Err(Refusal::Fatal(error)) => Err(error),
    }
}

/// `run_once` with a clock that reads `now` then `after`, and a transport that answers
/// `outcome`. A `crash` is a claim and nothing more: the process died holding the lease.
fn run_once(
    q: &mut dyn Backend,
    worker: &str,
    queues: &[&str],
    now: u64,
    after: u64,
    outcome: RunOutcome,
    jitter: f64,
) -> Result<Reply, Refusal> {
    let Some(classified) = outcome.classified() else {
        if outcome == RunOutcome::Crash {
            return Ok(match q.claim_from(worker, queues, now)? {
                Some(Claimed { lease: Lease { id, attempt, .. }, .. }) => Reply::Crashed { id, attempt },
                None => Reply::None,
            });
        }
        return transport_run(q, worker, queues, now, after, None, jitter);
    };
    transport_run(q, worker, queues, now, after, Some(outcome_of(classified)), jitter)
}

/// The transport's answer: an outcome, or (`None`) an error it could not classify.
fn transport_run(
    q: &mut dyn Backend,
    worker: &str,
    queues: &[&str],
    now: u64,
    after: u64,
    answer: Option<retryq::Outcome>,
    jitter: f64,
) -> Result<Reply, Refusal> {
    let mut readings = [now, after].into_iter();
    let clock = move || readings.next().unwrap_or(after);
    let transport = move |_: &Claimed| answer.ok_or(Unclassified);
    match q.run_once_from(worker, queues, clock, transport, jitter) {
        Ok(Ran::Idle) => Ok(Reply::None),
        Ok(Ran::Done { id, attempt }) => Ok(Reply::RanDone { id, attempt }),
        Ok(Ran::Retry { id, attempt, available_at }) => Ok(Reply::RanRetry { id, attempt, available_at }),
        Ok(Ran::Dead { id, attempt, reason }) => {
            Ok(Reply::RanDead { id, attempt, reason: reason_of(reason)? })
        }
        Ok(other) => Err(unnamed(other)),
        Err(RunError::ClockWentBackwards { id, attempt, .. }) => {
            Err(Refusal::Failure(Failure::RanClockWentBackwards { id, attempt }))
        }
        Err(RunError::Unclassified { id, attempt, .. }) => {
            Err(Refusal::Failure(Failure::UnknownError { id, attempt }))
        }
        Err(RunError::Queue(e)) => Err(e.into()),
        Err(other) => Err(unnamed(other)),
    }
}

/// The transport error a trace's `unknown` outcome stands for.
#[derive(Debug)]
struct Unclassified;

/// The jitter to pass to the queue: required for `retryable`, checked whenever present.
fn jitter_for(retryable: bool, jitter: Option<f64>) -> Result<f64, Refusal> {
    match jitter {
        Some(j) => Ok(retryq::validate_jitter(j)?),
        None if retryable => Err(refused("jitter", "is required for outcome retryable")),
        // Unused by every other outcome; any valid ratio will do.
        None => Ok(0.0),
    }
}

/// Why an operation gave no reply.
enum Refusal {
    /// The SPEC's answer: the operation was refused and changed nothing.
    Failure(Failure),
    /// The replay cannot go on.
    Fatal(ReplayError),
}

fn refused(field: &str, why: &str) -> Refusal {
    Refusal::Failure(Failure::InvalidInput { detail: format!("{field}: {why}") })
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal::Failure(match error {
            Error::InvalidInput { field, reason } => {
                Failure::InvalidInput { detail: format!("{field}: {reason}") }
            }
            Error::Conflict { .. } => Failure::Conflict,
            Error::NotFound { .. } => Failure::NotFound,
            Error::LeaseLost { .. } => Failure::LeaseLost,
            Error::NotDead { .. } => Failure::NotDead,
            Error::ClockWentBackwards { .. } => Failure::ClockWentBackwards,
            Error::DeadlinePassed { .. } => Failure::DeadlinePassed,
            Error::Cancelled { .. } => Failure::Cancelled,
            Error::Pruned { .. } => Failure::Pruned,
            Error::NotCancellable { .. } => Failure::NotCancellable,
            Error::NotPending { .. } => Failure::NotPending,
            fatal => return Refusal::Fatal(ReplayError::Storage(fatal)),
        })
    }
}

impl From<ReplayError> for Refusal {
    fn from(error: ReplayError) -> Self {
        Refusal::Fatal(error)
    }
}

impl From<Infallible> for Refusal {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

/// What SPEC section 5's `get` shows of a stored job: the one place the replay turns the
/// library's [`Job`] into the SPEC's object.
///
/// [`Job`]: retryq::Job
pub fn job_view(job: &retryq::Job) -> Result<JobView, ReplayError> {
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
        queue: job.queue.clone(),
        priority: u64::from(job.priority),
        ended_at: job.ended_at,
        cancel_requested: job.cancel_requested,
        kind: job.kind.clone(),
    })
}

/// What SPEC section 5's `get` shows of a pruned id: its tombstone.
pub fn tombstone_view(t: &retryq::Tombstone) -> Result<TombstoneView, ReplayError> {
    Ok(TombstoneView {
        id: t.id.clone(),
        queue: t.queue.clone(),
        status: status_of(t.status)?,
        dead_reason: t.dead_reason.map(reason_of).transpose()?,
        attempts: t.attempts,
        ended_at: t.ended_at,
    })
}

/// The queues a claim names: the replay's default is the default queue alone (SPEC 5.3).
pub(crate) fn names(queues: &Option<Vec<String>>) -> Vec<&str> {
    match queues {
        Some(queues) => queues.iter().map(String::as_str).collect(),
        None => vec![retryq::DEFAULT_QUEUE],
    }
}

/// What SPEC section 5's `stats` shows of the store, from the library's [`Stats`].
///
/// [`Stats`]: retryq::Stats
pub fn stats_view(s: &retryq::Stats) -> StatsView {
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
        pruned_done: s.pruned_done,
        pruned_dead: s.pruned_dead,
        paused_queues: s.paused_queues,
    }
}

fn outcome_of(outcome: Outcome) -> retryq::Outcome {
    match outcome {
        Outcome::Ok => retryq::Outcome::Ok,
        Outcome::Retryable => retryq::Outcome::Retryable,
        Outcome::Permanent => retryq::Outcome::Permanent,
    }
}

/// The SPEC's word for a status; a status the SPEC does not name stops the replay.
pub fn status_of(status: retryq::Status) -> Result<Status, ReplayError> {
    Ok(match status {
        retryq::Status::Pending => Status::Pending,
        retryq::Status::Leased => Status::Leased,
        retryq::Status::Done => Status::Done,
        retryq::Status::Dead => Status::Dead,
        other => return Err(ReplayError::Unnamed(format!("status {other}"))),
    })
}

/// The SPEC's word for a dead reason; a reason the SPEC does not name stops the replay.
pub fn reason_of(reason: retryq::DeadReason) -> Result<DeadReason, ReplayError> {
    Ok(match reason {
        retryq::DeadReason::Exhausted => DeadReason::Exhausted,
        retryq::DeadReason::Deadline => DeadReason::Deadline,
        retryq::DeadReason::Permanent => DeadReason::Permanent,
        retryq::DeadReason::Cancelled => DeadReason::Cancelled,
        other => return Err(ReplayError::Unnamed(format!("dead reason {other}"))),
    })
}

/// A result of the queue the SPEC has no reply for: the replay stops rather than guess.
fn unnamed(answer: impl std::fmt::Debug) -> Refusal {
    Refusal::Fatal(ReplayError::Unnamed(format!("{answer:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_reopens_the_file_and_keeps_leases_and_settings() {
        let mut side = Side::temporary().expect("temporary database");
        let steps = [
            Op::Config { base_ms: None, cap_ms: None, lease_ms: Some(1000), reap_limit: None },
            Op::Enqueue {
                priority: None,
                queue: None,
                id: "a".into(),
                payload: "p".into(),
                max_attempts: 3,
                deadline: 10_000,
                now: 0,
                not_before: None,
                base_ms: None,
                cap_ms: None,
                kind: None,
            },
            Op::Claim { queues: None, worker: "w1".into(), now: 0 },
            Op::Restart,
            Op::Claim { queues: None, worker: "w2".into(), now: 999 },
            Op::Claim { queues: None, worker: "w2".into(), now: 1000 },
        ];
        let replies: Vec<Response> = steps.iter().map(|op| side.step(op).expect("step")).collect();
        assert_eq!(replies[4], Response::Ok(Reply::None), "the live lease survived the restart");
        assert_eq!(
            replies[5],
            Response::Ok(Reply::Claimed { id: "a".into(), attempt: 2, lease_until: 2000 }),
            "lease_ms survived the restart"
        );
    }

    #[test]
    fn a_missing_jitter_for_retryable_changes_nothing() {
        let mut side = Side::in_memory().expect("memory database");
        side.step(&Op::Enqueue {
            priority: None,
            queue: None,
            id: "a".into(),
            payload: String::new(),
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            not_before: None,
            base_ms: None,
            cap_ms: None,
            kind: None,
        })
        .expect("enqueue");
        let r = side
            .step(&Op::RunOnce {
                queues: None,
                worker: "w".into(),
                now: 0,
                after: None,
                outcome: RunOutcome::Retryable,
                jitter: None,
            })
            .expect("step");
        assert!(
            matches!(r, Response::Err(Failure::InvalidInput { ref detail }) if detail.starts_with("jitter")),
            "{r:?}"
        );
        let job = side.backend().get("a").expect("get").expect("job");
        assert_eq!(job.attempts, 0);
    }
}
