//! SPEC sections 2 and 3, read a second time: the transition rules the checker holds every
//! step of the store to.
//!
//! The reference store ([`crate::reference`]) is the model's first reading of the contract;
//! this module is its second, written from the SPEC's text and not from `Store::step`. It never
//! calls the store: it reads the jobs and settings before a step (plain data), works out from
//! the SPEC what the operation must answer and what every job must look like afterwards, and
//! compares that with what the store answered and holds. A disagreement names the rule broken
//! ([`Broken`]); the properties in [`crate::properties`] report each rule on its own.
//!
//! The delay has its own reading too ([`delay`]): the window by doubling until the cap, and
//! "one binary64 multiply, then floor" by exact integer arithmetic on the jitter's mantissa and
//! exponent, rounded once to 53 bits, ties to even — not by multiplying two `f64`s.
//!
//! Claim's tie-break is the order of each id's *first* enqueue (SPEC 6.1), which the caller
//! knows independently of the store (`first_enqueue`), so a store that keeps its jobs in the
//! wrong order is caught rather than trusted.
//!
//! Layer: the second reading, above the reference store, whose plain data (jobs, settings) it
//! reads, and below the world ([`crate::model`]) that asks it to judge each step. It may not
//! reach up: a rule states what the SPEC requires of one step, whoever takes the step.

use std::fmt;

use smallvec::SmallVec;

use crate::reference::{Config, Job, Phase, Store, Text, Tombstone};
use crate::{
    DeadReason, Failure, JobView, Op, Outcome, Reply, Response, RunOutcome, StatsView, Status, TombstoneView,
};

/// The largest integer of any field: 2^53 − 1 (SPEC 3.1).
const MAX_INT: u64 = (1 << 53) - 1;
/// The largest budget: 2^31 − 1 (SPEC 3.2, 3.6).
const MAX_BUDGET: u64 = (1 << 31) - 1;

/// A copy of a store's jobs, inline for a small world.
type Jobs = SmallVec<[Job; 2]>;

/// The queue of a job enqueued without one, and the one a claim naming none serves (SPEC 1.6).
const DEFAULT_QUEUE: &str = "default";
/// What a claim naming no queue serves: [`DEFAULT_QUEUE`] alone, allocated once.
static DEFAULT_QUEUES: std::sync::LazyLock<[String; 1]> =
    std::sync::LazyLock::new(|| [DEFAULT_QUEUE.to_owned()]);

/// The rules a step broke, as a set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Broken(u32);

impl Broken {
    /// No rule broken.
    pub const NONE: Broken = Broken(0);
    /// SPEC 3.1: every argument is checked, before any lookup; a bad one is `invalid_input`.
    pub const ARGUMENTS: Broken = Broken(1);
    /// SPEC 3.2: enqueue.
    pub const ENQUEUE: Broken = Broken(1 << 1);
    /// SPEC 3.3: claim's reap and lease (which job it takes is [`Broken::PROGRESS`]).
    pub const CLAIM: Broken = Broken(1 << 2);
    /// SPEC 4.8: claim takes the claimable job with the smallest `available_at`, ties to the
    /// first enqueue, and answers `none` only when nothing is claimable.
    pub const PROGRESS: Broken = Broken(1 << 3);
    /// SPEC section 2: a retry waits exactly the formula's delay.
    pub const DELAY: Broken = Broken(1 << 4);
    /// SPEC 3.4: complete.
    pub const COMPLETE: Broken = Broken(1 << 5);
    /// SPEC 3.5: run_once.
    pub const RUN_ONCE: Broken = Broken(1 << 6);
    /// SPEC 3.6: redrive.
    pub const REDRIVE: Broken = Broken(1 << 7);
    /// SPEC 3.7: reap.
    pub const REAP: Broken = Broken(1 << 8);
    /// SPEC 3.8 and 3.9: stats and get answer what is stored and change nothing.
    pub const READS: Broken = Broken(1 << 9);
    /// SPEC 3.10 and 4.10: a restart keeps everything.
    pub const RESTART: Broken = Broken(1 << 10);
    /// SPEC 3.11: config.
    pub const CONFIG: Broken = Broken(1 << 11);
    /// SPEC 4.3: a job changes status only by the rules (done only by an `ok` completion,
    /// dead(deadline) only when due at its deadline or when `now + delay` reaches it, out of
    /// `dead` only by a redrive, …).
    pub const LIFECYCLE: Broken = Broken(1 << 12);
    /// SPEC 3.12: heartbeat (the fence, the clock, the deadline, then the `max` extension).
    pub const HEARTBEAT: Broken = Broken(1 << 13);
    /// SPEC 3.13: cancel (pending → dead(cancelled); leased → a cancel request; done, dead and
    /// pruned refused).
    pub const CANCEL: Broken = Broken(1 << 14);
    /// SPEC 3.14 and 3.15: prune and forget.
    pub const RETENTION: Broken = Broken(1 << 15);
    /// SPEC 3.16 and 3.17: pause and resume change the paused queues alone, and a claim picks
    /// no job of a paused queue (4.15; which job it picks instead is [`Broken::PROGRESS`]).
    pub const PAUSE: Broken = Broken(1 << 16);
    /// SPEC 3.18: run_now (refusals in their order; `available_at` to `min(available_at,
    /// now)`, nothing else changed).
    pub const RUN_NOW: Broken = Broken(1 << 17);

    /// Whether `rule` is among those broken.
    pub fn contains(self, rule: Broken) -> bool {
        self.0 & rule.0 != 0
    }

    fn insert(&mut self, rule: Broken) {
        self.0 |= rule.0;
    }
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#07x}", self.0)
    }
}

/// Judges one step: `before` and `after` are the store around `op`, which answered `response`.
/// `first_enqueue` ranks ids by their first enqueue (SPEC 6.1).
pub fn judge(
    before: &Store,
    op: &Op,
    response: &Response,
    after: &Store,
    first_enqueue: &dyn Fn(&str) -> Option<usize>,
) -> Broken {
    let expected = expect(before, op, first_enqueue);
    let mut broken = Broken::NONE;
    let same = expected.response.observable() == response.observable()
        && expected.config == after.config()
        && same_jobs(&expected.jobs, after.jobs())
        && expected.tombstones == after.tombstones()
        && expected.paused == after.paused();
    // SPEC 6.13: the detail of a refusal names the field to blame, when one alone is.
    if let (
        Response::Err(Failure::InvalidInput { detail: field }),
        Response::Err(Failure::InvalidInput { detail }),
    ) = (&expected.response, response)
        && !field.is_empty()
        && !detail.starts_with(field.as_str())
    {
        broken.insert(Broken::ARGUMENTS);
    }
    if !same {
        broken.insert(classify(op, &expected.response, response));
    }
    if !lifecycle_holds(before, op, after) {
        broken.insert(Broken::LIFECYCLE);
    }
    broken
}

/// What the SPEC says a step must give: the answer, the jobs and the settings after it. A
/// refusal for a bad argument carries, as its detail, the prefix the store's detail must start
/// with (the field and a colon, SPEC 6.13), or nothing when several fields are to blame.
struct Expected {
    response: Response,
    jobs: Jobs,
    tombstones: Vec<Tombstone>,
    paused: Vec<(Text, u64)>,
    config: Config,
}

/// The same jobs in the same order. The order of first enqueues is part of the store (SPEC
/// 3.10, 6.1): it decides claim's ties, so a step that reorders the jobs changes the store
/// even where no answer shows it yet (a restart that reloads them by id, say).
fn same_jobs(expected: &[Job], actual: &[Job]) -> bool {
    expected == actual
}

/// Which rule a wrong step broke. A claim (or `run_once`'s) that answers another job than the
/// SPEC's, or one where it takes none, or none where it takes one, broke progress (4.8).
fn classify(op: &Op, expected: &Response, actual: &Response) -> Broken {
    let invalid = |r: &Response| matches!(r, Response::Err(Failure::InvalidInput { .. }));
    if invalid(expected) != invalid(actual) {
        return Broken::ARGUMENTS;
    }
    match op {
        Op::Config { .. } => Broken::CONFIG,
        Op::Enqueue { .. } => Broken::ENQUEUE,
        Op::Claim { .. } | Op::RunOnce { .. } if expected.taken_id() != actual.taken_id() => Broken::PROGRESS,
        Op::Claim { .. } => Broken::CLAIM,
        Op::Complete { .. } | Op::RunOnce { .. } if retried_apart(expected, actual) => Broken::DELAY,
        Op::Complete { .. } => Broken::COMPLETE,
        Op::RunOnce { .. } => Broken::RUN_ONCE,
        Op::Heartbeat { .. } => Broken::HEARTBEAT,
        Op::Redrive { .. } => Broken::REDRIVE,
        Op::Cancel { .. } => Broken::CANCEL,
        Op::Reap { .. } => Broken::REAP,
        Op::Get { .. } | Op::Stats { .. } => Broken::READS,
        Op::Prune { .. } | Op::Forget { .. } => Broken::RETENTION,
        Op::Pause { .. } | Op::Resume { .. } => Broken::PAUSE,
        Op::RunNow { .. } => Broken::RUN_NOW,
        Op::RetryDelay { .. } => Broken::DELAY,
        Op::Restart => Broken::RESTART,
    }
}

/// Both answers schedule a retry, at different times: the delay is wrong.
fn retried_apart(expected: &Response, actual: &Response) -> bool {
    let at = |r: &Response| match r {
        Response::Ok(Reply::Retry { available_at } | Reply::RanRetry { available_at, .. }) => {
            Some(*available_at)
        }
        _ => None,
    };
    matches!((at(expected), at(actual)), (Some(a), Some(b)) if a != b)
}

/// SPEC section 3, operation by operation.
fn expect(before: &Store, op: &Op, first_enqueue: &dyn Fn(&str) -> Option<usize>) -> Expected {
    let mut jobs: Jobs = before.jobs().iter().cloned().collect();
    let mut tombstones = before.tombstones().to_vec();
    let mut paused = before.paused().to_vec();
    let mut config = before.config();
    let bad = bad_fields(op);
    let mut state = State { jobs: &mut jobs, tombstones: &mut tombstones, paused: &mut paused };
    let result = match bad.as_slice() {
        [] => apply(&mut state, &mut config, op, first_enqueue),
        [field] => Err(Failure::InvalidInput { detail: format!("{field}:") }),
        _ => Err(Failure::InvalidInput { detail: String::new() }),
    };
    let response = match result {
        Ok(reply) => Response::Ok(reply),
        Err(failure) => Response::Err(failure),
    };
    Expected { response, jobs, tombstones, paused, config }
}

/// What an operation may change beside the settings: the jobs, the tombstones and the paused
/// queues (SPEC 3.10's store).
struct State<'a> {
    jobs: &'a mut Jobs,
    tombstones: &'a mut Vec<Tombstone>,
    paused: &'a mut Vec<(Text, u64)>,
}

/// SPEC 3.1 and 5.2: the arguments of `op` out of their range, by field name. Checked before
/// anything is looked up; empty when every argument holds.
fn bad_fields(op: &Op) -> SmallVec<[&'static str; 4]> {
    let int = |v: u64| v <= MAX_INT;
    let name = |s: &str| (1..=256).contains(&s.len()) && !s.contains('\0');
    let budget = |v: u64| (1..=MAX_BUDGET).contains(&v);
    let ratio = |j: f64| (0.0..=1.0).contains(&j);
    // A jitter is checked whenever present, and required for `retryable` (SPEC 6.6).
    let jitter = |j: Option<f64>, retryable: bool| j.map_or(!retryable, ratio);
    let attempt = |a: u64| int(a) && a >= 1;
    // SPEC 1.6: a queue name is 1–64 bytes, no NUL; a claim serves 1–64 of them, none twice.
    let queue = |q: &str| (1..=64).contains(&q.len()) && !q.contains('\0');
    let queues = |qs: &[String]| {
        (1..=64).contains(&qs.len())
            && qs.iter().all(|q| queue(q))
            && qs.iter().enumerate().all(|(i, q)| !qs[..i].contains(q))
    };
    let mut bad = SmallVec::new();
    let mut check = |holds: bool, field: &'static str| {
        if !holds {
            bad.push(field);
        }
    };
    match op {
        Op::Config { base_ms, cap_ms, lease_ms, reap_limit } => {
            check(base_ms.is_none_or(int), "base_ms");
            check(cap_ms.is_none_or(int), "cap_ms");
            check(lease_ms.is_none_or(|l| int(l) && l >= 1), "lease_ms");
            check(reap_limit.is_none_or(|l| int(l) && l >= 1), "reap_limit");
        }
        Op::Enqueue {
            queue: q,
            priority,
            id,
            payload,
            max_attempts,
            deadline,
            now,
            not_before,
            base_ms,
            cap_ms,
            kind,
        } => {
            check(q.as_deref().is_none_or(queue), "queue");
            check(priority.is_none_or(|p| p <= 9), "priority");
            check(name(id), "id");
            check(payload.len() <= 1 << 20, "payload");
            check(budget(*max_attempts), "max_attempts");
            check(int(*now), "now");
            check(int(*deadline) && deadline > now, "deadline");
            // SPEC 3.2: a schedule within now … deadline − 1, also for an existing id (6.22).
            check(not_before.is_none_or(|at| int(at) && *now <= at && at < *deadline), "not_before");
            check(base_ms.is_none_or(int), "base_ms");
            check(cap_ms.is_none_or(int), "cap_ms");
            // SPEC 1.1: a kind is 0–64 bytes, no NUL.
            check(kind.as_deref().is_none_or(|k| k.len() <= 64 && !k.contains('\0')), "kind");
        }
        Op::Heartbeat { worker, id, attempt: a, now } => {
            check(name(worker), "worker");
            check(name(id), "id");
            check(attempt(*a), "attempt");
            check(int(*now), "now");
        }
        Op::Cancel { id, now } => {
            check(name(id), "id");
            check(int(*now), "now");
        }
        Op::Claim { queues: qs, worker, now } => {
            check(name(worker), "worker");
            check(int(*now), "now");
            check(qs.as_deref().is_none_or(queues), "queues");
        }
        Op::Complete { worker, id, attempt: a, outcome, now, jitter: j } => {
            check(name(worker), "worker");
            check(name(id), "id");
            check(attempt(*a), "attempt");
            check(int(*now), "now");
            check(jitter(*j, *outcome == Outcome::Retryable), "jitter");
        }
        Op::RunOnce { queues: qs, worker, now, after, outcome, jitter: j } => {
            check(qs.as_deref().is_none_or(queues), "queues");
            check(name(worker), "worker");
            check(int(*now), "now");
            check(after.is_none_or(int), "after");
            check(jitter(*j, *outcome == RunOutcome::Retryable), "jitter");
        }
        Op::Redrive { id, now, add_attempts, deadline } => {
            check(name(id), "id");
            check(int(*now), "now");
            check(budget(*add_attempts), "add_attempts");
            check(int(*deadline) && deadline > now, "deadline");
        }
        Op::Reap { now } => check(int(*now), "now"),
        Op::Stats { queue: q, now } => {
            check(int(*now), "now");
            check(q.as_deref().is_none_or(queue), "queue");
        }
        // SPEC 3.14, 3.15: `before` at most `now`.
        Op::Prune { before, now } | Op::Forget { before, now } => {
            check(int(*now), "now");
            check(int(*before) && before <= now, "before");
        }
        Op::Get { id } => check(name(id), "id"),
        // SPEC 3.16, 3.17: a queue name as in `enqueue`.
        Op::Pause { queue: q, now } | Op::Resume { queue: q, now } => {
            check(queue(q), "queue");
            check(int(*now), "now");
        }
        Op::RunNow { id, now } => {
            check(name(id), "id");
            check(int(*now), "now");
        }
        Op::RetryDelay { attempt: a, base_ms, cap_ms, jitter: j } => {
            check(attempt(*a), "attempt");
            check(int(*base_ms), "base_ms");
            check(int(*cap_ms), "cap_ms");
            check(ratio(*j), "jitter");
        }
        Op::Restart => {}
    }
    bad
}

/// The operation, its arguments already known good.
fn apply(
    state: &mut State<'_>,
    config: &mut Config,
    op: &Op,
    first_enqueue: &dyn Fn(&str) -> Option<usize>,
) -> Result<Reply, Failure> {
    let State { jobs, tombstones, paused } = state;
    let halted = paused.iter().map(|(name, _)| name.to_string()).collect::<Vec<_>>();
    let is_paused = |q: &str| halted.iter().any(|name| name == q);
    let pruned = |id: &str| tombstones.iter().find(|t| *t.id == *id).cloned();
    // An id no job has: a fenced operation's fence fails on a tombstone as on the ended job
    // it was (SPEC 6.30); `redrive` and `cancel` say `pruned` (3.14).
    let lost = |id: &str| if pruned(id).is_some() { Failure::LeaseLost } else { Failure::NotFound };
    let gone = |id: &str| if pruned(id).is_some() { Failure::Pruned } else { Failure::NotFound };
    let default_queues = &DEFAULT_QUEUES[..];
    match op {
        Op::Config { base_ms, cap_ms, lease_ms, reap_limit } => {
            config.base_ms = base_ms.unwrap_or(config.base_ms);
            config.cap_ms = cap_ms.unwrap_or(config.cap_ms);
            config.lease_ms = lease_ms.unwrap_or(config.lease_ms);
            config.reap_limit = reap_limit.unwrap_or(config.reap_limit);
            Ok(Reply::Config)
        }
        Op::Enqueue {
            queue,
            priority,
            id,
            payload,
            max_attempts,
            deadline,
            now,
            not_before,
            base_ms,
            cap_ms,
            kind,
        } => {
            // SPEC 3.2: the same job is the same payload and the same kind.
            let kind = kind.as_deref().unwrap_or("");
            let same = |p: &str, k: &str| p == payload.as_str() && k == kind;
            // SPEC 3.2: a tombstone answers for its id, which never runs again (6.29).
            if let Some(tombstone) = pruned(id) {
                return if same(&tombstone.payload, &tombstone.kind) {
                    Ok(Reply::Existing)
                } else {
                    Err(Failure::Conflict)
                };
            }
            match find(jobs, id) {
                // SPEC 6.22, 6.28: the payload and the kind alone decide; schedule, backoff,
                // queue and priority are ignored.
                Some(job) if same(&job.payload, &job.kind) => Ok(Reply::Existing),
                Some(_) => Err(Failure::Conflict),
                None => {
                    let first_due = not_before.unwrap_or(*now);
                    jobs.push(Job {
                        id: id.as_str().into(),
                        payload: payload.as_str().into(),
                        phase: Phase::Pending { available_at: first_due },
                        attempts: 0,
                        max_attempts: *max_attempts,
                        deadline: *deadline,
                        redrives: 0,
                        enqueued_at: *now,
                        not_before: first_due,
                        base_ms: *base_ms,
                        cap_ms: *cap_ms,
                        queue: queue.as_deref().unwrap_or(DEFAULT_QUEUE).into(),
                        priority: priority.unwrap_or(0),
                        ended_at: None,
                        cancel_requested: false,
                        kind: kind.into(),
                    });
                    Ok(Reply::Enqueued)
                }
            }
        }
        Op::Claim { queues, worker, now } => {
            let queues = queues.as_deref().unwrap_or(default_queues);
            Ok(match claim(jobs, config, worker, queues, &is_paused, *now, first_enqueue) {
                Some((id, attempt, lease_until)) => Reply::Claimed { id, attempt, lease_until },
                None => Reply::None,
            })
        }
        Op::Complete { worker, id, attempt, outcome, now, jitter } => {
            if find(jobs, id).is_none() {
                return Err(lost(id));
            }
            complete(jobs, config, worker, id, *attempt, *outcome, *now, jitter.unwrap_or(0.0))
        }
        Op::RunOnce { queues, worker, now, after, outcome, jitter } => {
            let queues = queues.as_deref().unwrap_or(default_queues);
            let Some((id, attempt, _)) = claim(jobs, config, worker, queues, &is_paused, *now, first_enqueue)
            else {
                return Ok(Reply::None);
            };
            let after = after.unwrap_or(*now);
            // SPEC 3.5 and 6.7: a crash is a claim and nothing else; otherwise the clock check
            // comes first, then the outcome. Both errors report on a claim that applied.
            if *outcome == RunOutcome::Crash {
                return Ok(Reply::Crashed { id, attempt });
            }
            if after < *now {
                return Err(Failure::RanClockWentBackwards { id, attempt });
            }
            let Some(classified) = outcome.classified() else {
                return Err(Failure::UnknownError { id, attempt });
            };
            match complete(jobs, config, worker, &id, attempt, classified, after, jitter.unwrap_or(0.0))? {
                Reply::Done => Ok(Reply::RanDone { id, attempt }),
                Reply::Retry { available_at } => Ok(Reply::RanRetry { id, attempt, available_at }),
                Reply::Dead { reason } => Ok(Reply::RanDead { id, attempt, reason }),
                other => Ok(other),
            }
        }
        Op::Heartbeat { worker, id, attempt, now } => {
            if find(jobs, id).is_none() {
                return Err(lost(id));
            }
            heartbeat(jobs, config.lease_ms, worker, id, *attempt, *now)
        }
        Op::Cancel { id, now } => {
            let Some(job) = find_mut(jobs, id) else { return Err(gone(id)) };
            match job.phase {
                Phase::Pending { .. } => {
                    end(job, Phase::Dead(DeadReason::Cancelled), *now);
                    Ok(Reply::Cancelled)
                }
                // SPEC 3.13, 6.25: a lease, live or expired, gets a request; its holder's
                // report or the lease's end decides.
                Phase::Leased { .. } => {
                    job.cancel_requested = true;
                    Ok(Reply::Cancelling)
                }
                Phase::Done | Phase::Dead(_) => Err(Failure::NotCancellable),
            }
        }
        Op::Redrive { id, now, add_attempts, deadline } => {
            let Some(job) = find_mut(jobs, id) else { return Err(gone(id)) };
            if !matches!(job.phase, Phase::Dead(_)) {
                return Err(Failure::NotDead);
            }
            // SPEC 6.5: the budget's overflow needs the stored attempts, so it comes last.
            let max_attempts = job.attempts + add_attempts;
            if max_attempts > MAX_BUDGET {
                return Err(Failure::InvalidInput { detail: "add_attempts:".into() });
            }
            job.phase = Phase::Pending { available_at: *now };
            job.max_attempts = max_attempts;
            job.deadline = *deadline;
            job.redrives += 1;
            job.ended_at = None;
            Ok(Reply::Redriven)
        }
        Op::Reap { now } => Ok(Reply::Reaped { count: reap(jobs, *now, config.reap_limit, first_enqueue) }),
        Op::Get { id } => match pruned(id) {
            Some(tombstone) => Ok(Reply::Tombstone(tombstone_view(&tombstone))),
            None => find(jobs, id).map(|job| Reply::Job(view(job))).ok_or(Failure::NotFound),
        },
        Op::Stats { queue, now } => {
            let mut counts = stats(jobs, tombstones, queue.as_deref(), *now);
            // SPEC 3.8: every paused name, or whether the one queue counted is paused.
            counts.paused_queues = match queue {
                Some(queue) => u64::from(is_paused(queue)),
                None => halted.len() as u64,
            };
            Ok(Reply::Stats(counts))
        }
        // SPEC 3.16: paused whether or not it was; the first pause's time stays.
        Op::Pause { queue, now } => {
            if !is_paused(queue) {
                paused.push((queue.as_str().into(), *now));
                paused.sort_by(|a, b| a.0.cmp(&b.0));
            }
            Ok(Reply::Paused)
        }
        // SPEC 3.17: not paused, whether or not it was.
        Op::Resume { queue, .. } => {
            paused.retain(|(name, _)| **name != **queue);
            Ok(Reply::Resumed)
        }
        // SPEC 3.18: not found or pruned; not pending; at or past the deadline; then due.
        Op::RunNow { id, now } => {
            let Some(job) = find_mut(jobs, id) else { return Err(gone(id)) };
            let Phase::Pending { available_at } = job.phase else { return Err(Failure::NotPending) };
            if job.deadline <= *now {
                return Err(Failure::DeadlinePassed);
            }
            let due = if *now < available_at { *now } else { available_at };
            job.phase = Phase::Pending { available_at: due };
            Ok(Reply::Due { available_at: due })
        }
        // SPEC 3.14: every ended job at or before `before` leaves the store, and a tombstone.
        Op::Prune { before, .. } => {
            let mut count = 0;
            jobs.retain(|job| {
                let ended = match (job.ended_at, &job.phase) {
                    (Some(at), Phase::Done | Phase::Dead(_)) => at <= *before,
                    _ => false,
                };
                if ended {
                    tombstones.push(Tombstone {
                        id: job.id.clone(),
                        queue: job.queue.clone(),
                        payload: job.payload.clone(),
                        kind: job.kind.clone(),
                        phase: job.phase.clone(),
                        attempts: job.attempts,
                        ended_at: job.ended_at.unwrap_or(0),
                    });
                    count += 1;
                }
                !ended
            });
            Ok(Reply::Pruned { count })
        }
        // SPEC 3.15: the tombstones ended at or before `before` go.
        Op::Forget { before, .. } => {
            let was = tombstones.len();
            tombstones.retain(|t| t.ended_at > *before);
            Ok(Reply::Forgotten { count: (was - tombstones.len()) as u64 })
        }
        Op::RetryDelay { attempt, base_ms, cap_ms, jitter } => {
            Ok(Reply::Delay { delay_ms: delay(*attempt, *base_ms, *cap_ms, *jitter) })
        }
        Op::Restart => Ok(Reply::Restart),
    }
}

fn find<'a>(jobs: &'a [Job], id: &str) -> Option<&'a Job> {
    jobs.iter().find(|job| *job.id == *id)
}

fn find_mut<'a>(jobs: &'a mut [Job], id: &str) -> Option<&'a mut Job> {
    jobs.iter_mut().find(|job| *job.id == *id)
}

/// A job due to end, as the reap orders it: its rule, the time it is ordered by in that rule,
/// its rank in the order of first enqueues, its position in the store, and how it ends.
type DueToEnd = (u8, u64, usize, usize, DeadReason);

/// SPEC 3.3.1 and 3.7: the jobs due to end — due, and out of budget or out of time, or asked
/// to stop — are dead, the first `limit` of them in the reap's order: rule by rule (the
/// request, the budget, the deadline), by lease expiry in the first two and by deadline in the
/// third, ties to the first enqueue (6.37). A live lease is never touched; an expired lease out
/// of budget is `exhausted` even past its deadline (6.4).
fn reap(jobs: &mut [Job], now: u64, limit: u64, first_enqueue: &dyn Fn(&str) -> Option<usize>) -> u64 {
    // Each job due to end: its rule, the time it is ordered by, its first enqueue, where it is.
    let mut due: SmallVec<[DueToEnd; 4]> = SmallVec::new();
    for (i, job) in jobs.iter().enumerate() {
        let Some((rule, at)) = reap_key(job, now) else { continue };
        let reason = match rule {
            1 => DeadReason::Cancelled,
            2 => DeadReason::Exhausted,
            _ => DeadReason::Deadline,
        };
        due.push((rule, at, first_enqueue(&job.id).unwrap_or(usize::MAX), i, reason));
    }
    due.sort_unstable_by_key(|&(rule, at, rank, i, _)| (rule, at, rank, i));
    let mut moved = 0;
    for &(_, _, _, i, reason) in due.iter() {
        if moved == limit {
            break;
        }
        end(&mut jobs[i], Phase::Dead(reason), now);
        moved += 1;
    }
    moved
}

/// A job ends `done` or `dead` at `now`: `ended_at` is set, and a cancel request, which lasts
/// only while the lease does, is gone (SPEC 1.1, 6.33).
fn end(job: &mut Job, phase: Phase, now: u64) {
    job.phase = phase;
    job.ended_at = Some(now);
    job.cancel_requested = false;
}

/// SPEC 3.3: reap, pick (the smallest `available_at`, ties to the first enqueue), claim.
/// Returns the job's id, its new attempt and the lease's end.
fn claim(
    jobs: &mut [Job],
    config: &Config,
    worker: &str,
    queues: &[String],
    paused: &dyn Fn(&str) -> bool,
    now: u64,
    first_enqueue: &dyn Fn(&str) -> Option<usize>,
) -> Option<(String, u64, u64)> {
    // SPEC 3.3: the reap covers every queue; the pick only the claimer's, by priority first.
    reap(jobs, now, config.reap_limit, first_enqueue);
    let rank = |job: &Job| first_enqueue(&job.id).unwrap_or(usize::MAX);
    let mut pick: Option<(u64, u64, usize, usize)> = None;
    for (i, job) in jobs.iter().enumerate() {
        // SPEC 3.3.2, 3.16: of the claimer's queues, those not paused.
        let served = queues.iter().any(|q| *q == *job.queue) && !paused(&job.queue);
        if let Some(at) = due_at(job, now).filter(|_| served && !job.cancel_requested) {
            let key = (job.priority, at, rank(job), i);
            if pick.is_none_or(|best| key < best) {
                pick = Some(key);
            }
        }
    }
    let (_, _, _, i) = pick?;
    let job = &mut jobs[i];
    job.attempts += 1;
    let until = now + config.lease_ms;
    job.phase = Phase::Leased { owner: worker.into(), claimed_at: now, until };
    Some((job.id.to_string(), job.attempts, until))
}

/// SPEC 3.12: the fence and the clock check as in `complete`, then the deadline; the expiry
/// becomes the later of the current one and `now + lease_ms`, in exact 64-bit arithmetic.
fn heartbeat(
    jobs: &mut [Job],
    lease_ms: u64,
    worker: &str,
    id: &str,
    attempt: u64,
    now: u64,
) -> Result<Reply, Failure> {
    let job = find_mut(jobs, id).ok_or(Failure::NotFound)?;
    let deadline = job.deadline;
    let current = job.attempts == attempt;
    let Phase::Leased { owner, claimed_at, until } = &mut job.phase else {
        return Err(Failure::LeaseLost);
    };
    if **owner != *worker || !current {
        return Err(Failure::LeaseLost);
    }
    if now < *claimed_at {
        return Err(Failure::ClockWentBackwards);
    }
    // SPEC 3.12, 6.34: a cancel request stops the attempt before the deadline is looked at.
    if job.cancel_requested {
        return Err(Failure::Cancelled);
    }
    if now >= deadline {
        return Err(Failure::DeadlinePassed);
    }
    let renewed = now + lease_ms;
    if renewed > *until {
        *until = renewed;
    }
    Ok(Reply::Extended { lease_until: *until })
}

/// The backoff settings of a job's retry: each of its own where it has one, else the queue's
/// in effect at the retry (SPEC 2.1, 6.23).
fn settings_for(job: &Job, config: &Config) -> (u64, u64) {
    let base_ms = match job.base_ms {
        Some(own) => own,
        None => config.base_ms,
    };
    let cap_ms = match job.cap_ms {
        Some(own) => own,
        None => config.cap_ms,
    };
    (base_ms, cap_ms)
}

/// SPEC 3.4: the fence, the clock check, then the outcome.
#[allow(clippy::too_many_arguments)]
fn complete(
    jobs: &mut [Job],
    config: &Config,
    worker: &str,
    id: &str,
    attempt: u64,
    outcome: Outcome,
    now: u64,
    jitter: f64,
) -> Result<Reply, Failure> {
    let job = find_mut(jobs, id).ok_or(Failure::NotFound)?;
    let claimed_at = match &job.phase {
        Phase::Leased { owner, claimed_at, .. } if **owner == *worker && job.attempts == attempt => {
            *claimed_at
        }
        _ => return Err(Failure::LeaseLost),
    };
    if now < claimed_at {
        return Err(Failure::ClockWentBackwards);
    }
    let (phase, reply) = match outcome {
        Outcome::Ok => (Phase::Done, Reply::Done),
        Outcome::Permanent => dead(DeadReason::Permanent),
        // SPEC 3.4: under a cancel request a retryable attempt ends the job, cancelled.
        Outcome::Retryable if job.cancel_requested => dead(DeadReason::Cancelled),
        Outcome::Retryable if job.attempts >= job.max_attempts => dead(DeadReason::Exhausted),
        Outcome::Retryable => {
            let (base_ms, cap_ms) = settings_for(job, config);
            let available_at = now + delay(job.attempts, base_ms, cap_ms, jitter);
            if available_at >= job.deadline {
                dead(DeadReason::Deadline)
            } else {
                (Phase::Pending { available_at }, Reply::Retry { available_at })
            }
        }
    };
    match phase {
        Phase::Pending { .. } => {
            job.phase = phase;
            job.cancel_requested = false;
        }
        _ => end(job, phase, now),
    }
    Ok(reply)
}

fn dead(reason: DeadReason) -> (Phase, Reply) {
    (Phase::Dead(reason), Reply::Dead { reason })
}

/// SPEC 3.9: what `get` shows.
fn view(job: &Job) -> JobView {
    let (status, available_at, dead_reason) = match job.phase {
        Phase::Pending { available_at } => (Status::Pending, Some(available_at), None),
        Phase::Leased { until, .. } => (Status::Leased, Some(until), None),
        Phase::Done => (Status::Done, None, None),
        Phase::Dead(reason) => (Status::Dead, None, Some(reason)),
    };
    JobView {
        id: job.id.to_string(),
        status,
        attempts: job.attempts,
        max_attempts: job.max_attempts,
        available_at,
        deadline: job.deadline,
        dead_reason,
        redrives: job.redrives,
        not_before: job.not_before,
        base_ms: job.base_ms,
        cap_ms: job.cap_ms,
        queue: job.queue.to_string(),
        priority: job.priority,
        ended_at: job.ended_at,
        cancel_requested: job.cancel_requested,
        kind: job.kind.to_string(),
    }
}

/// SPEC 3.9: what `get` shows of a tombstone.
fn tombstone_view(t: &Tombstone) -> TombstoneView {
    let (status, dead_reason) = match t.phase {
        Phase::Dead(reason) => (Status::Dead, Some(reason)),
        _ => (Status::Done, None),
    };
    TombstoneView {
        id: t.id.to_string(),
        queue: t.queue.to_string(),
        status,
        dead_reason,
        attempts: t.attempts,
        ended_at: t.ended_at,
    }
}

/// SPEC 3.8: the counts, expired leases, the oldest open job's age (6.8) and the tombstones,
/// of one queue's jobs or of all.
fn stats(all: &[Job], tombstones: &[Tombstone], queue: Option<&str>, now: u64) -> StatsView {
    let of_queue = |q: &str| queue.is_none_or(|queue| queue == q);
    let jobs: Jobs = all.iter().filter(|job| of_queue(&job.queue)).cloned().collect();
    let jobs = &jobs[..];
    let pruned = |done: bool| {
        tombstones.iter().filter(|t| of_queue(&t.queue) && (t.phase == Phase::Done) == done).count() as u64
    };
    let count = |f: &dyn Fn(&Job) -> bool| jobs.iter().filter(|job| f(job)).count() as u64;
    let dead_by = |reason: DeadReason| count(&|job| job.phase == Phase::Dead(reason));
    let open = jobs.iter().filter(|job| matches!(job.phase, Phase::Pending { .. } | Phase::Leased { .. }));
    StatsView {
        pending: count(&|job| matches!(job.phase, Phase::Pending { .. })),
        leased: count(&|job| matches!(job.phase, Phase::Leased { .. })),
        done: count(&|job| job.phase == Phase::Done),
        dead: count(&|job| matches!(job.phase, Phase::Dead(_))),
        dead_exhausted: dead_by(DeadReason::Exhausted),
        dead_deadline: dead_by(DeadReason::Deadline),
        dead_permanent: dead_by(DeadReason::Permanent),
        dead_cancelled: dead_by(DeadReason::Cancelled),
        leased_expired: count(&|job| matches!(job.phase, Phase::Leased { until, .. } if until <= now)),
        oldest_open_age_ms: open.map(|job| job.enqueued_at).min().map(|oldest| now.saturating_sub(oldest)),
        pruned_done: pruned(true),
        pruned_dead: pruned(false),
        // The paused names are the store's, not the jobs': the caller counts them.
        paused_queues: 0,
    }
}

/// SPEC section 2, read independently of the store's `delay.rs`.
///
/// The window doubles from `base_ms` until it reaches the cap (so no doubling ever overflows)
/// and is then capped. The jitter is the binary64 value `mantissa / 2^scale`; the exact product
/// `window × mantissa` (below 2^106) is rounded once to 53 significant bits, ties to even —
/// what one binary64 multiply does — and floored by dropping `scale` bits.
pub fn delay(attempt: u64, base_ms: u64, cap_ms: u64, jitter: f64) -> u64 {
    let cap = u128::from(cap_ms);
    let mut window = u128::from(base_ms);
    let mut doublings = attempt.saturating_sub(1);
    while doublings > 0 && window < cap {
        window *= 2;
        doublings -= 1;
    }
    let window = window.min(cap);
    let (mantissa, scale) = binary64_parts(jitter);
    let product = round_to_binary64(window * u128::from(mantissa));
    if scale >= 128 { 0 } else { (product >> scale) as u64 }
}

/// The delay if the multiply were exact: the floor of window × jitter with the jitter's
/// binary64 value taken exactly. Not the SPEC's (2.3); the model uses it only to recognise
/// the steps where the two part, so that it can show it reaches them.
pub fn exact_delay(attempt: u64, base_ms: u64, cap_ms: u64, jitter: f64) -> u64 {
    let window = delay(attempt, base_ms, cap_ms, 1.0);
    let (mantissa, scale) = binary64_parts(jitter);
    let product = u128::from(window) * u128::from(mantissa);
    if scale >= 128 { 0 } else { (product >> scale) as u64 }
}

/// The jobs a claim at `now` may take once its reap (of at most `limit` jobs) has run, with
/// the time each is due, in the store's order: what a claim chooses among (SPEC 3.3.2). A job
/// of a paused queue is never among them (3.16).
pub fn claimable(
    jobs: &[Job],
    paused: &[(Text, u64)],
    now: u64,
    limit: u64,
    first_enqueue: &dyn Fn(&str) -> Option<usize>,
) -> Vec<(u64, String)> {
    let mut jobs: Jobs = jobs.iter().cloned().collect();
    reap(&mut jobs, now, limit, first_enqueue);
    jobs.iter()
        .filter(|job| !job.cancel_requested && !paused.iter().any(|(name, _)| *name == job.queue))
        .filter_map(|job| due_at(job, now).map(|at| (at, job.id.to_string())))
        .collect()
}

/// Whether `job` is due to end at `now` (SPEC 3.3.1): an expired lease with a cancel request
/// or out of budget, or a pending job or an expired lease at or past its deadline. Only a reap
/// ends it, and no pick takes it, reaped or not (3.3.2).
pub fn due_to_end(job: &Job, now: u64) -> bool {
    reap_key(job, now).is_some()
}

/// Where a job due to end at `now` stands in the reap's order (SPEC 3.3.1): the rule that ends
/// it (1 the request, 2 the budget, 3 the deadline) and the time that rule orders by (the lease's
/// expiry for the first two, the deadline for the third); `None` for a job not due to end.
pub fn reap_key(job: &Job, now: u64) -> Option<(u8, u64)> {
    match job.phase {
        Phase::Leased { until, .. } if until > now => None,
        // SPEC 3.3.1: the operator's request first.
        Phase::Leased { until, .. } if job.cancel_requested => Some((1, until)),
        Phase::Leased { until, .. } if job.attempts >= job.max_attempts => Some((2, until)),
        Phase::Leased { .. } | Phase::Pending { .. } if job.deadline <= now => Some((3, job.deadline)),
        _ => None,
    }
}

/// When a job became claimable, if it is claimable at `now`: a pending job from its
/// `available_at`, a leased one from its lease's expiry; never one due to end (SPEC 3.3.2: a
/// reap that reached its limit leaves some).
fn due_at(job: &Job, now: u64) -> Option<u64> {
    if job.attempts >= job.max_attempts || job.deadline <= now {
        return None;
    }
    match job.phase {
        Phase::Pending { available_at } if available_at <= now => Some(available_at),
        Phase::Leased { until, .. } if until <= now => Some(until),
        _ => None,
    }
}

/// A binary64 value in [0, 1] as `mantissa / 2^scale`.
///
/// Total over every binary64: a value outside [0, 1] (which no accepted operation carries, but
/// a buggy store's step may be judged with) gives its magnitude's parts, a scale of 0 past 2^52.
fn binary64_parts(value: f64) -> (u64, u64) {
    let bits = value.to_bits();
    let biased_exponent = (bits >> 52) & 0x7ff;
    let fraction = bits & ((1 << 52) - 1);
    if biased_exponent == 0 {
        (fraction, 1074)
    } else {
        (fraction | (1 << 52), 1075u64.saturating_sub(biased_exponent))
    }
}

/// `n` rounded to 53 significant bits, ties to even.
fn round_to_binary64(n: u128) -> u128 {
    let width = 128 - n.leading_zeros();
    if width <= 53 {
        return n;
    }
    let dropped = width - 53;
    let kept = n >> dropped;
    let rest = n & ((1 << dropped) - 1);
    let half = 1 << (dropped - 1);
    let kept = if rest > half || (rest == half && kept % 2 == 1) { kept + 1 } else { kept };
    kept << dropped
}

/// SPEC 4.3: each job's status changes only by the mechanisms the SPEC names. Coarser than the
/// rules above and independent of them: it looks only at which operation ran, its times and
/// outcome, and each job's status, budget and deadline before and after.
fn lifecycle_holds(before: &Store, op: &Op, after: &Store) -> bool {
    // Only a prune removes a job, only an ended one, ended at or before its `before`, and
    // leaves its tombstone (SPEC 3.14); only a forget removes a tombstone (3.15).
    let pruned = |b: &Job| match *op {
        Op::Prune { before: at, .. } => {
            matches!(b.phase, Phase::Done | Phase::Dead(_))
                && b.ended_at.is_some_and(|ended| ended <= at)
                && after.tombstones().iter().any(|t| t.id == b.id)
        }
        _ => false,
    };
    let forgotten = |t: &Tombstone| matches!(*op, Op::Forget { before: at, .. } if t.ended_at <= at);
    let jobs = before.jobs().iter().all(|b| match after.jobs().iter().find(|a| a.id == b.id) {
        None => pruned(b),
        Some(a) => a.phase == b.phase || may_become(b, a, op, before.config()),
    });
    let tombstones = before.tombstones().iter().all(|t| after.tombstones().contains(t) || forgotten(t));
    jobs && tombstones
}

/// Whether `op` may take a job from `b` to `a` (whose phase differs).
fn may_become(b: &Job, a: &Job, op: &Op, config: Config) -> bool {
    // What the operation can do: claim at `now`, reap at `now`, complete at a time with an
    // outcome, redrive.
    let (claims, reaps_at, completes) = match *op {
        Op::Claim { now, .. } => (true, Some(now), None),
        Op::Reap { now } => (false, Some(now), None),
        Op::Complete { outcome, now, .. } if matches!(b.phase, Phase::Leased { .. }) => {
            (false, None, Some((outcome, now)))
        }
        Op::RunOnce { now, after, outcome, .. } => {
            (true, Some(now), outcome.classified().map(|o| (o, after.unwrap_or(now))))
        }
        _ => (false, None, None),
    };
    let due = |now: u64| match b.phase {
        Phase::Pending { available_at } => available_at <= now,
        Phase::Leased { until, .. } => until <= now,
        Phase::Done | Phase::Dead(_) => false,
    };
    let claimed = claims && a.attempts == b.attempts + 1;
    let retried = |t: u64| {
        let (base_ms, cap_ms) = settings_for(a, &config);
        let delay = delay(a.attempts, base_ms, cap_ms, op_jitter(op));
        t.checked_add(delay).is_some_and(|at| at >= a.deadline)
    };
    // A heartbeat keeps the lease it extends: the same holder, claim and attempt.
    let heartbeat = matches!(op, Op::Heartbeat { .. })
        && a.attempts == b.attempts
        && matches!((&b.phase, &a.phase), (
            Phase::Leased { owner: o1, claimed_at: c1, .. },
            Phase::Leased { owner: o2, claimed_at: c2, .. },
        ) if o1 == o2 && c1 == c2);
    match a.phase {
        Phase::Leased { .. } => heartbeat || (claimed && reaps_at.is_some_and(due)),
        Phase::Done => matches!(completes, Some((Outcome::Ok, _))),
        Phase::Dead(DeadReason::Permanent) => matches!(completes, Some((Outcome::Permanent, _))),
        Phase::Dead(DeadReason::Exhausted) => {
            let reaped =
                reaps_at.is_some_and(|now| matches!(b.phase, Phase::Leased { until, .. } if until <= now));
            let retried = matches!(completes, Some((Outcome::Retryable, _)));
            (reaped || retried) && a.attempts >= a.max_attempts
        }
        Phase::Dead(DeadReason::Deadline) => {
            let reaped = reaps_at.is_some_and(|now| due(now) && b.deadline <= now);
            let late = matches!(completes, Some((Outcome::Retryable, t)) if retried(t));
            reaped || late
        }
        // SPEC 4.3: a cancel of a pending job, a reap of an expired lease with a cancel
        // request, or a retryable completion under one.
        Phase::Dead(DeadReason::Cancelled) => {
            let cancelled = matches!(op, Op::Cancel { .. }) && matches!(b.phase, Phase::Pending { .. });
            let reaped = b.cancel_requested
                && reaps_at.is_some_and(|now| matches!(b.phase, Phase::Leased { until, .. } if until <= now));
            let stopped = b.cancel_requested && matches!(completes, Some((Outcome::Retryable, _)));
            cancelled || reaped || stopped
        }
        Phase::Pending { available_at } => {
            let redriven = matches!(op, Op::Redrive { .. }) && matches!(b.phase, Phase::Dead(_));
            // SPEC 3.18: a pending job's `available_at` only earlier, and only to `now`.
            let due_now = matches!((op, &b.phase), (
                Op::RunNow { now, .. },
                Phase::Pending { available_at: was },
            ) if available_at < *was && available_at == *now && a.attempts == b.attempts);
            redriven || due_now || matches!(completes, Some((Outcome::Retryable, _)))
        }
    }
}

/// The jitter an operation carries (0 when none: then it is never used).
fn op_jitter(op: &Op) -> f64 {
    match op {
        Op::Complete { jitter, .. } | Op::RunOnce { jitter, .. } => jitter.unwrap_or(0.0),
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_2_examples() {
        assert_eq!(delay(3, 100, 250, 0.5), 125, "the cap applies before jitter");
        assert_eq!(delay(1, 100, 1000, 0.5), 50);
        assert_eq!(delay(2, 100, 1000, 0.5), 100);
        assert_eq!(delay(1_000_000_000_000_000, 100, 1000, 1.0), 1000);
        assert_eq!(delay(u64::MAX, MAX_INT, MAX_INT, 1.0), MAX_INT);
        assert_eq!(delay(7, 0, 1000, 1.0), 0, "base 0");
        assert_eq!(delay(1, 100, 50, 1.0), 50, "cap below base");
        assert_eq!(delay(1, 100, 0, 1.0), 0, "cap 0");
        assert_eq!(delay(1, 100, 1000, 0.0), 0);
        assert_eq!(delay(1, 100, 1000, -0.0), 0);
    }

    /// Where binary64 and exact arithmetic part: the SPEC's one multiply rounds up to the integer.
    #[test]
    fn binary64_rounding_edges() {
        assert_eq!(delay(1, 10, 1000, 0.7), 7, "10 × 0.7 rounds to 7.0 in binary64 (exactly 6.99…)");
        assert_eq!(delay(1, 3, 3, 0.6666666666666666), 2, "3 × fl(2/3) is a tie, to even: 2.0");
        assert_eq!(delay(1, 4, 3, 0.6666666666666666), 2, "cap 3 below base 4");
        // A window of 2^53 − 1: one ulp of jitter moves the delay by one.
        let jitter = f64::from_bits(0x3fea_2df1_0f6a_3b05); // 0.818108110530233188
        assert_eq!(delay(1, MAX_INT, MAX_INT, jitter), 7_368_862_763_465_476);
        assert_eq!(delay(1, MAX_INT, MAX_INT, f64::from_bits(0x3fea_2df1_0f6a_3b04)), 7_368_862_763_465_475);
        assert_eq!(exact_delay(1, 3, 3, 0.6666666666666666), 1, "exact arithmetic floors to 1");
    }

    /// The exact reading agrees with `f64` multiplication (which IEEE 754 rounds correctly) on
    /// many windows and jitters, including windows up to 2^53 − 1 and subnormal jitters.
    #[test]
    fn agrees_with_one_binary64_multiply() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for i in 0..200_000 {
            let window = match i % 4 {
                0 => next() % 1000,
                1 => next() & MAX_INT,
                _ => next() % (1 << (next() % 54)),
            };
            let jitter = match i % 5 {
                0 => f64::from_bits(next() % (1 << 52)),
                1 => (next() % 1001) as f64 / 1000.0,
                _ => (next() >> 11) as f64 / (1u64 << 53) as f64,
            };
            let expected = (window as f64 * jitter).floor() as u64;
            assert_eq!(delay(1, window, window, jitter), expected, "window {window}, jitter {jitter:e}");
        }
    }

    #[test]
    fn rounding_ties_to_even() {
        assert_eq!(round_to_binary64((1 << 54) + 2), 1 << 54, "tie, kept even");
        assert_eq!(round_to_binary64((1 << 54) + 6), (1 << 54) + 8, "tie, rounded up to even");
        assert_eq!(round_to_binary64((1 << 54) + 3), (1 << 54) + 4);
        assert_eq!(round_to_binary64((1 << 53) - 1), (1 << 53) - 1, "fits");
    }
}
