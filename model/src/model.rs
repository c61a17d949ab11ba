//! The model: the reference store in a small world of a clock and a few workers, as a
//! stateright [`Model`].
//!
//! A [`World`] is the store, the time, what each worker remembers holding, and ghost fields:
//! what the world knows about each job independently of the store (how often it was claimed,
//! which deadline its caller set, what the holder reported). Every [`Action`] that touches the
//! store is one SPEC section 5 operation, run by [`Store::step`]; so the transitions checked
//! are exactly the oracle's, and a path of actions is a replayable trace ([`crate::trace`]).
//!
//! The world is bounded ([`Bounds`]): a few job ids, a few workers, a clock that ticks one
//! millisecond at a time up to a horizon, small settings, and a handful of choices for jitter,
//! budgets and deadlines. Deadlines are chosen so that `now + delay` can land exactly on one
//! (base 1, cap 2, jitter {0, 0.5, 1} give delays 0, 1 and 2), and every deadline leaves a
//! whole lease before the horizon, so that at the horizon every job must be over
//! ([`crate::properties`] explains why that makes liveness checkable).
//!
//! Symmetry: job ids are named in the order of their first enqueue (`job-1`, `job-2`, …),
//! which is the only thing that tells two ids apart (claim's tie-break), so permuting ids
//! needs no reduction. Workers are interchangeable: [`World::canonical`] sorts them.

use std::borrow::Cow;
use std::fmt;

use stateright::{Model, Property, Representative};

use crate::bug::Bug;
use crate::checker::{self, Options};
use crate::delay::retry_delay;
use crate::properties::{self, Kind};
use crate::reference::{Phase, Store};
use crate::{DeadReason, Failure, Op, Outcome, Reply, Response, RunOutcome};

/// The bounds of the world the checker explores.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    /// How many job ids can be enqueued.
    pub jobs: usize,
    /// How many workers claim and complete.
    pub workers: usize,
    /// The clock runs from 0 to `horizon` milliseconds.
    pub horizon: u64,
    pub lease_ms: u64,
    pub base_ms: u64,
    pub cap_ms: u64,
    /// The jitters a `retryable` completion may carry.
    pub jitters: Vec<f64>,
    /// The budgets an enqueue may ask for.
    pub max_attempts: Vec<u64>,
    /// The deadlines an enqueue may ask for, as milliseconds after `now`.
    pub deadlines: Vec<u64>,
    /// How many times the operator may redrive one job.
    pub redrives: u64,
    /// A redrive's `add_attempts`.
    pub add_attempts: u64,
    /// A redrive's deadline, as milliseconds after `now`.
    pub redrive_deadline: u64,
}

impl Default for Bounds {
    /// The default check: two jobs, two workers, a clock up to 6.
    fn default() -> Self {
        Bounds {
            jobs: 2,
            workers: 2,
            horizon: 6,
            lease_ms: 2,
            base_ms: 1,
            cap_ms: 2,
            jitters: vec![0.0, 0.5, 1.0],
            max_attempts: vec![1, 2],
            deadlines: vec![2, 3],
            redrives: 1,
            add_attempts: 1,
            redrive_deadline: 2,
        }
    }
}

impl Bounds {
    /// Small bounds where every property is decided (every example found): one job, two
    /// workers, a clock up to 5. For tests and `retryq verify`.
    pub fn small() -> Self {
        Bounds { jobs: 1, horizon: 5, ..Bounds::default() }
    }

    /// Small bounds that show `bug`: [`Bounds::small`], except that a bug spilling over to
    /// *another* job needs two jobs (and then one worker and a clock up to 4 suffice).
    pub fn small_for(bug: Bug) -> Self {
        match bug {
            Bug::CountAttemptOnEveryJob => Bounds { jobs: 2, workers: 1, horizon: 4, ..Bounds::default() },
            _ => Bounds::small(),
        }
    }

    /// The `--deep` preset: three workers and a longer clock.
    pub fn deep() -> Self {
        Bounds { workers: 3, horizon: 8, ..Bounds::default() }
    }

    /// The most claims any job can see in a store that keeps SPEC 4.1: the largest budget
    /// plus every redrive's. A buggy store can claim forever at one instant (attempts reset,
    /// stolen leases); the boundary stops it one claim past this, where 4.1 already fails.
    pub fn max_claims(&self) -> u64 {
        self.max_attempts.iter().copied().max().unwrap_or(0) + self.redrives * self.add_attempts
    }

    /// A deadline `after` milliseconds from `now` leaves a whole lease before the horizon.
    fn room_for(&self, now: u64, after: u64) -> bool {
        now + after + self.lease_ms <= self.horizon
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "jobs {}, workers {}, horizon {} ms, lease {} ms, base {} ms, cap {} ms, jitter {:?}, \
             max_attempts {:?}, deadlines now+{:?}, redrives {} (+{} attempts, deadline now+{})",
            self.jobs,
            self.workers,
            self.horizon,
            self.lease_ms,
            self.base_ms,
            self.cap_ms,
            self.jitters,
            self.max_attempts,
            self.deadlines,
            self.redrives,
            self.add_attempts,
            self.redrive_deadline
        )
    }
}

/// The payload every job is enqueued with; a re-enqueue with [`OTHER_PAYLOAD`] conflicts.
pub const PAYLOAD: &str = "p";
pub const OTHER_PAYLOAD: &str = "q";

/// The id of the `index`-th job enqueued (0-based): `job-1`, `job-2`, …
pub fn job_name(index: usize) -> String {
    format!("job-{}", index + 1)
}

/// The index of a job named by [`job_name`].
pub fn job_index(name: &str) -> Option<usize> {
    name.strip_prefix("job-")?.parse::<usize>().ok()?.checked_sub(1)
}

/// The name of worker `index` (0-based): `w1`, `w2`, …
pub fn worker_name(index: usize) -> String {
    format!("w{}", index + 1)
}

/// The index of a worker named by [`worker_name`].
pub fn worker_index(name: &str) -> Option<usize> {
    name.strip_prefix('w')?.parse::<usize>().ok()?.checked_sub(1)
}

/// What a worker remembers of the claim it holds: what `claim` answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Held {
    pub job: usize,
    /// The fencing token.
    pub attempt: u64,
    pub lease_until: u64,
}

/// What the holder of a job's latest claim said about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Report {
    /// Nothing yet (or never claimed).
    Nothing,
    /// Its process died after the claim.
    Crashed,
    /// Its transport failed in a way it did not classify.
    Unknown,
    /// It completed with this outcome (whatever the store answered).
    Completed(Outcome),
}

/// Ghost fields of one job: what the world knows of it without asking the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Claims of this job the store answered: `claimed`, `crashed`, `unknown_error`.
    pub claims: u64,
    /// Times its payload went out through a transport (a crashed process may have sent).
    pub sends: u64,
    /// The deadline its caller set: at the enqueue, then at each redrive.
    pub deadline: u64,
    /// Redrives the store accepted.
    pub redrives: u64,
    /// What the holder of the latest claim reported.
    pub report: Report,
}

/// Things the last step did, for the properties about transitions. Cleared at every step, so
/// they cost states only where they happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Events(u8);

impl Events {
    /// A claim at or after the caller's deadline, or with no budget left.
    pub const LATE_CLAIM: Events = Events(1);
    /// A completion with a stale fencing token changed the store.
    pub const STALE_CHANGED: Events = Events(1 << 1);
    /// An operation refused with an error changed the store.
    pub const REFUSAL_CHANGED: Events = Events(1 << 2);
    /// A retry whose `now + delay` (delay > 0) was exactly the deadline ended dead(deadline).
    pub const EXACT_DEADLINE_DEATH: Events = Events(1 << 3);
    /// A completion with a token older than the job's latest claim was refused `lease_lost`.
    pub const STALE_REJECTED: Events = Events(1 << 4);
    /// The holder completed after its lease had expired, and the store accepted it.
    pub const LATE_ACCEPTED: Events = Events(1 << 5);

    pub fn contains(self, event: Events) -> bool {
        self.0 & event.0 != 0
    }

    fn insert(&mut self, event: Events) {
        self.0 |= event.0;
    }
}

/// One state of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    pub now: u64,
    pub store: Store,
    /// What each worker holds, by worker index.
    pub workers: Vec<Option<Held>>,
    /// One per job enqueued, by job index.
    pub ghosts: Vec<Ghost>,
    /// What the step into this state did.
    pub events: Events,
}

/// One step of the world.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Enqueue the next new id with this budget and a deadline `deadline_in` ms from now.
    Enqueue {
        max_attempts: u64,
        deadline_in: u64,
    },
    /// Enqueue job `job` again, with its own or another payload (and another budget and
    /// deadline, which must change nothing).
    Reenqueue {
        job: usize,
        same_payload: bool,
    },
    /// An idle worker claims.
    Claim {
        worker: usize,
    },
    /// A worker completes the claim it holds, whether or not it is still the holder.
    Complete {
        worker: usize,
        outcome: Outcome,
        jitter: Option<f64>,
    },
    /// An idle worker's `run_once` whose transport fails unclassified (`unknown`) or whose
    /// process dies after the claim (`crash`): either way it holds nothing afterwards and the
    /// job stays leased until its lease expires. A process that dies later, while holding a
    /// claim, is the same to the store (which cannot tell when a process died): its lease
    /// stays and its memory is never used, exactly as here; so this one action covers it.
    RunOnce {
        worker: usize,
        outcome: RunOutcome,
    },
    /// The clock advances one millisecond.
    Tick,
    Reap,
    /// The operator redrives job `job`.
    Redrive {
        job: usize,
    },
    /// The database is closed and opened again.
    Restart,
}

/// The bounded world, checking the store with `bug` (none by default).
#[derive(Clone, Debug, Default)]
pub struct QueueModel {
    pub bounds: Bounds,
    pub bug: Option<Bug>,
}

impl QueueModel {
    pub fn new(bounds: Bounds, bug: Option<Bug>) -> QueueModel {
        QueueModel { bounds, bug }
    }

    /// The `config` line every trace starts with.
    pub fn config_op(&self) -> Op {
        Op::Config {
            base_ms: Some(self.bounds.base_ms),
            cap_ms: Some(self.bounds.cap_ms),
            lease_ms: Some(self.bounds.lease_ms),
        }
    }

    /// The operation `action` runs in `world`, if it runs one (a tick does not; a completion
    /// needs a held claim).
    pub fn op(&self, world: &World, action: &Action) -> Option<Op> {
        let now = world.now;
        Some(match *action {
            Action::Enqueue { max_attempts, deadline_in } => Op::Enqueue {
                id: job_name(world.ghosts.len()),
                payload: PAYLOAD.into(),
                max_attempts,
                deadline: now + deadline_in,
                now,
            },
            Action::Reenqueue { job, same_payload } => Op::Enqueue {
                id: job_name(job),
                payload: if same_payload { PAYLOAD } else { OTHER_PAYLOAD }.into(),
                max_attempts: self.bounds.max_attempts.iter().max().map_or(1, |m| m + 1),
                deadline: now + 1,
                now,
            },
            Action::Claim { worker } => Op::Claim { worker: worker_name(worker), now },
            Action::Complete { worker, outcome, jitter } => {
                let held = world.workers.get(worker).copied().flatten()?;
                Op::Complete {
                    worker: worker_name(worker),
                    id: job_name(held.job),
                    attempt: held.attempt,
                    outcome,
                    now,
                    jitter,
                }
            }
            Action::RunOnce { worker, outcome } => {
                Op::RunOnce { worker: worker_name(worker), now, after: None, outcome, jitter: None }
            }
            Action::Tick => return None,
            Action::Reap => Op::Reap { now },
            Action::Redrive { job } => Op::Redrive {
                id: job_name(job),
                now,
                add_attempts: self.bounds.add_attempts,
                deadline: now + self.bounds.redrive_deadline,
            },
            Action::Restart => Op::Restart,
        })
    }

    /// The step: the next world and, if the action ran an operation, it and its response.
    pub fn step(&self, world: &World, action: &Action) -> Option<(World, Option<(Op, Response)>)> {
        let mut next = world.clone();
        next.events = Events::default();
        if *action == Action::Tick {
            if world.now >= self.bounds.horizon {
                return None;
            }
            next.now += 1;
            return Some((next, None));
        }
        let op = self.op(world, action)?;
        let response = next.store.step(&op);
        self.observe(world, action, &op, &response, &mut next);
        Some((next, Some((op, response))))
    }

    /// Updates the workers' memories and the ghost fields from what the operation answered.
    fn observe(&self, before: &World, action: &Action, op: &Op, response: &Response, next: &mut World) {
        // `run_once`'s `unknown_error` and `clock_went_backwards` report on a claim that
        // applied; every other error is a refusal.
        let refused = matches!(response, Response::Err(f) if !matches!(f, Failure::UnknownError { .. } | Failure::RanClockWentBackwards { .. }));
        if refused && next.store != before.store {
            next.events.insert(Events::REFUSAL_CHANGED);
        }
        match (action, op, response) {
            (Action::Enqueue { .. }, &Op::Enqueue { deadline, .. }, Response::Ok(Reply::Enqueued)) => {
                next.ghosts.push(Ghost {
                    claims: 0,
                    sends: 0,
                    deadline,
                    redrives: 0,
                    report: Report::Nothing,
                });
            }
            (&Action::Redrive { job }, &Op::Redrive { deadline, .. }, Response::Ok(Reply::Redriven)) => {
                if let Some(ghost) = next.ghosts.get_mut(job) {
                    ghost.deadline = deadline;
                    ghost.redrives += 1;
                }
            }
            (&Action::Claim { worker }, _, Response::Ok(Reply::Claimed { id, attempt, lease_until })) => {
                if let Some(job) = self.claimed(before, id, next) {
                    next.workers[worker] = Some(Held { job, attempt: *attempt, lease_until: *lease_until });
                }
            }
            (Action::RunOnce { .. }, _, response) => {
                let claimed = match response {
                    Response::Ok(Reply::Crashed { id, .. }) => Some((id, Report::Crashed)),
                    Response::Err(Failure::UnknownError { id, .. }) => Some((id, Report::Unknown)),
                    // With a bug the store may answer otherwise; the worker still reported
                    // what its transport said.
                    Response::Ok(Reply::RanDone { id, .. }) => Some((id, Report::Unknown)),
                    _ => None,
                };
                if let Some((id, report)) = claimed
                    && let Some(job) = self.claimed(before, id, next)
                {
                    next.ghosts[job].report = report;
                }
            }
            (&Action::Complete { worker, outcome, jitter }, _, response) => {
                if let Some(held) = before.workers[worker] {
                    next.workers[worker] = None;
                    self.completed(before, held, outcome, jitter, response, next);
                }
            }
            _ => {}
        }
    }

    /// Bookkeeping for a claim of job `id` the store answered: returns the job's index.
    fn claimed(&self, before: &World, id: &str, next: &mut World) -> Option<usize> {
        let job = job_index(id)?;
        let ghost = next.ghosts.get_mut(job)?;
        let budget = before.store.job(id).map_or(0, |j| j.max_attempts);
        if before.now >= ghost.deadline || ghost.claims >= budget {
            next.events.insert(Events::LATE_CLAIM);
        }
        ghost.claims += 1;
        ghost.sends += 1;
        ghost.report = Report::Nothing;
        Some(job)
    }

    /// Bookkeeping for a completion by a worker that held `held`.
    fn completed(
        &self,
        before: &World,
        held: Held,
        outcome: Outcome,
        jitter: Option<f64>,
        response: &Response,
        next: &mut World,
    ) {
        let now = before.now;
        let Some(ghost) = next.ghosts.get_mut(held.job) else {
            return;
        };
        let changed = next.store != before.store;
        if held.attempt != ghost.claims {
            // A stale token: a later claim of this job exists.
            if changed {
                next.events.insert(Events::STALE_CHANGED);
            }
            if *response == Response::Err(Failure::LeaseLost) {
                next.events.insert(Events::STALE_REJECTED);
            }
            return;
        }
        ghost.report = Report::Completed(outcome);
        if matches!(response, Response::Ok(_)) && held.lease_until <= now {
            next.events.insert(Events::LATE_ACCEPTED);
        }
        let config = before.store.config();
        let delay = retry_delay(held.attempt, config.base_ms, config.cap_ms, jitter.unwrap_or(0.0));
        if *response == Response::Ok(Reply::Dead { reason: DeadReason::Deadline })
            && outcome == Outcome::Retryable
            && delay > 0
            && now + delay == ghost.deadline
        {
            next.events.insert(Events::EXACT_DEADLINE_DEATH);
        }
    }

    /// Checks every property of [`properties::all`] on every reachable world, with `threads`
    /// threads, reducing by worker symmetry if `symmetry`.
    pub fn check(&self, threads: usize, symmetry: bool) -> checker::Report<World, Action> {
        let symmetry = if symmetry { Some(World::canonical as fn(&World) -> Cow<'_, World>) } else { None };
        checker::check(self, &properties::all(), &Options { threads, symmetry })
    }

    /// The world before anything happened: an empty store configured by [`Self::config_op`].
    pub fn initial(&self) -> World {
        let mut store = Store::new().with_bug(self.bug);
        store.step(&self.config_op());
        World {
            now: 0,
            store,
            workers: vec![None; self.bounds.workers],
            ghosts: Vec::new(),
            events: Events::default(),
        }
    }
}

impl Model for QueueModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![self.initial()]
    }

    fn actions(&self, world: &World, actions: &mut Vec<Action>) {
        let b = &self.bounds;
        let now = world.now;
        if world.ghosts.len() < b.jobs {
            for &max_attempts in &b.max_attempts {
                for &deadline_in in b.deadlines.iter().filter(|&&d| b.room_for(now, d)) {
                    actions.push(Action::Enqueue { max_attempts, deadline_in });
                }
            }
        }
        for job in 0..world.ghosts.len() {
            actions.push(Action::Reenqueue { job, same_payload: true });
            actions.push(Action::Reenqueue { job, same_payload: false });
        }
        for (worker, held) in world.workers.iter().enumerate() {
            if held.is_some() {
                actions.push(Action::Complete { worker, outcome: Outcome::Ok, jitter: None });
                actions.push(Action::Complete { worker, outcome: Outcome::Permanent, jitter: None });
                for &jitter in &b.jitters {
                    actions.push(Action::Complete {
                        worker,
                        outcome: Outcome::Retryable,
                        jitter: Some(jitter),
                    });
                }
            } else {
                actions.push(Action::Claim { worker });
                actions.push(Action::RunOnce { worker, outcome: RunOutcome::Unknown });
                actions.push(Action::RunOnce { worker, outcome: RunOutcome::Crash });
            }
        }
        if now < b.horizon {
            actions.push(Action::Tick);
        }
        actions.push(Action::Reap);
        for (job, ghost) in world.ghosts.iter().enumerate() {
            if ghost.redrives < b.redrives && b.room_for(now, b.redrive_deadline) {
                actions.push(Action::Redrive { job });
            }
        }
        actions.push(Action::Restart);
    }

    fn next_state(&self, world: &World, action: Action) -> Option<World> {
        self.step(world, &action).map(|(next, _)| next)
    }

    /// Keeps the world finite whatever the store does: no job claimed, and no `attempts`,
    /// more than one past [`Bounds::max_claims`]. A store that keeps SPEC 4.1 never gets there
    /// (the checker counts the states cut, and the tests require none for the SPEC's store).
    fn within_boundary(&self, world: &World) -> bool {
        let limit = self.bounds.max_claims() + 1;
        world.ghosts.iter().all(|g| g.claims <= limit)
            && world.store.jobs().iter().all(|j| j.attempts <= limit)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all()
            .into_iter()
            .map(|p| match p.kind {
                Kind::Always | Kind::Liveness => Property::always(p.name, p.holds),
                Kind::Sometimes => Property::sometimes(p.name, p.holds),
            })
            .collect()
    }
}

impl World {
    /// The same world with workers renumbered in a canonical order: sorted by what they hold
    /// and which jobs the store says they own. Workers are interchangeable (nothing in the
    /// SPEC looks at a worker's name except to compare it with a lease's owner), so every
    /// renumbering of a world behaves the same, and two worlds that differ only by one are
    /// one state for the checker. Borrowed when the world already is canonical.
    pub fn canonical(&self) -> Cow<'_, World> {
        let mut owned = vec![0u64; self.workers.len()];
        for (i, job) in self.store.jobs().iter().enumerate() {
            if let Phase::Leased { owner, .. } = &job.phase
                && let Some(mask) = worker_index(owner).and_then(|w| owned.get_mut(w))
            {
                *mask |= 1 << i.min(63);
            }
        }
        let signature = |w: usize| (self.workers[w], owned[w]);
        if (1..self.workers.len()).all(|w| signature(w - 1) <= signature(w)) {
            return Cow::Borrowed(self);
        }
        let mut order: Vec<usize> = (0..self.workers.len()).collect();
        order.sort_by_key(|&w| signature(w));
        // order[new] = old: worker `old` becomes worker `new`.
        let mut renamed_to = vec![0; order.len()];
        for (new, &old) in order.iter().enumerate() {
            renamed_to[old] = new;
        }
        Cow::Owned(World {
            now: self.now,
            store: self.store.rename_owners(|owner| {
                worker_index(owner).and_then(|old| renamed_to.get(old)).map(|&new| worker_name(new).into())
            }),
            workers: order.iter().map(|&old| self.workers[old]).collect(),
            ghosts: self.ghosts.clone(),
            events: self.events,
        })
    }
}

impl Representative for World {
    /// [`World::canonical`], for stateright's checkers.
    fn representative(&self) -> World {
        self.canonical().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for i in 0..12 {
            assert_eq!(job_index(&job_name(i)), Some(i));
            assert_eq!(worker_index(&worker_name(i)), Some(i));
        }
        assert_eq!(job_index("job-0"), None);
        assert_eq!(worker_index("x1"), None);
    }
}
