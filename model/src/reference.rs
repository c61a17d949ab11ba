//! The reference store: SPEC sections 1–3 and 5 as a plain state machine.
//!
//! [`Store::step`] takes one [`Op`] and returns its [`Response`], exactly as a replay line
//! would: argument checks first (so a bad argument is `invalid_input` even for a missing job),
//! then the operation, which either fully applies or changes nothing. There is no I/O, no clock
//! and no randomness: the same operations always give the same responses, which is what lets
//! the conformance harness use this store as its oracle and the model checker explore it.
//!
//! Jobs are kept in a `Vec` in the order of their first enqueue, which is claim's tie-break.
//! A job's [`Phase`] carries the fields that exist only in that status: `available_at` for
//! pending, the owner, claim time and lease expiry for leased, the reason for dead. What a job
//! keeps whatever its status — its schedule (`not_before`) and its own backoff settings — are
//! fields of [`Job`].
//!
//! Layer: the reference store, above the SPEC's vocabulary ([`crate::op`],
//! [`crate::response`], [`crate::validate`], [`crate::delay`]) and the seeded bugs it consults
//! ([`crate::bug`]). It may not reach up to the rules, the world, the properties or the
//! checker: it is the conformance harness's oracle, and an oracle that depended on the checker
//! hunting its bugs would be judged by itself.

use crate::bug::Bug;
use crate::delay::retry_delay;
use crate::validate;
use crate::{
    DeadReason, Failure, JobView, Op, Outcome, Reply, Response, RunOutcome, StatsView, Status, TombstoneView,
};

/// A name or payload as stored. Short text is kept inline, so copying a store (as the model
/// checker does for every state) allocates nothing and shares no counter between threads.
pub type Text = smol_str::SmolStr;

/// The settings of SPEC section 5's `config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// The first retry's window.
    pub base_ms: u64,
    /// The largest retry window.
    pub cap_ms: u64,
    /// How long a claim leases its job.
    pub lease_ms: u64,
    /// The most jobs one claim, `run_once` or `reap` ends (SPEC 3.3.1, 6.37).
    pub reap_limit: u64,
}

impl Default for Config {
    /// SPEC section 5's defaults: base 100, cap 1000, lease 30000, reap limit 1000.
    fn default() -> Self {
        Config { base_ms: 100, cap_ms: 1000, lease_ms: 30_000, reap_limit: 1000 }
    }
}

/// Where a job is in its life (SPEC section 1), with the fields that exist only there.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Waiting until `available_at`.
    Pending {
        /// When it becomes claimable.
        available_at: u64,
    },
    /// Claimed by `owner` at `claimed_at`, until `until` (the job's `available_at`).
    Leased {
        /// The worker holding the lease.
        owner: Text,
        /// When it was claimed: a completion dated before it is refused.
        claimed_at: u64,
        /// When the lease runs out.
        until: u64,
    },
    /// Finished by an `ok` outcome.
    Done,
    /// Ended without success, for this reason.
    Dead(DeadReason),
}

impl Phase {
    /// The status `get` shows for this phase.
    pub fn status(&self) -> Status {
        match self {
            Phase::Pending { .. } => Status::Pending,
            Phase::Leased { .. } => Status::Leased,
            Phase::Done => Status::Done,
            Phase::Dead(_) => Status::Dead,
        }
    }

    /// `available_at`: null when done or dead.
    pub fn available_at(&self) -> Option<u64> {
        match *self {
            Phase::Pending { available_at } => Some(available_at),
            Phase::Leased { until, .. } => Some(until),
            Phase::Done | Phase::Dead(_) => None,
        }
    }

    /// Leased with a lease that has expired at `now` (`available_at` ≤ `now`).
    fn expired_lease(&self, now: u64) -> bool {
        matches!(*self, Phase::Leased { until, .. } if until <= now)
    }
}

/// What a reap makes of a job due to end: dead, or with a seeded bug, pending again or gone.
#[derive(Clone, Copy, Debug)]
enum End {
    Dead(DeadReason),
    Pending,
    Dropped,
}

/// Where a job due to end at `now` stands in the reap's order (SPEC 3.3.1): the rule that ends
/// it, the time it is ordered by within that rule (lease expiry for rules 1 and 2, the deadline
/// for rule 3), and its position in the order of first enqueues, which breaks ties.
type ReapKey = (u8, u64, usize);

/// One stored job.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Job {
    /// The job's name.
    pub id: Text,
    /// What the transport sends.
    pub payload: Text,
    /// Where it is in its life.
    pub phase: Phase,
    /// Claims so far; never rolls back.
    pub attempts: u64,
    /// The attempt budget.
    pub max_attempts: u64,
    /// The time budget.
    pub deadline: u64,
    /// How often an operator redrove it.
    pub redrives: u64,
    /// When it was first enqueued: the claim order's tie-break and `stats`' age.
    pub enqueued_at: u64,
    /// The first `available_at`: the enqueue's `not_before`, or its `now` (SPEC 3.2).
    pub not_before: u64,
    /// The job's own `base_ms`, if it was enqueued with one: it replaces the queue's in
    /// every retry of this job (SPEC 3.4, 6.23).
    pub base_ms: Option<u64>,
    /// The job's own `cap_ms`, likewise.
    pub cap_ms: Option<u64>,
    /// Its queue (SPEC 1.6).
    pub queue: Text,
    /// Its priority, 0 … 9, lower first (SPEC 1.6).
    pub priority: u64,
    /// When it ended `done` or `dead`; `None` while open (SPEC 1.1).
    pub ended_at: Option<u64>,
    /// An operator asked the holder of its lease to stop (SPEC 3.13); only while leased.
    pub cancel_requested: bool,
    /// Its kind, `""` for none (SPEC 1.1): compared with the payload by a re-enqueue.
    pub kind: Text,
}

/// What a prune leaves of an ended job (SPEC 1.7). The model keeps the payload itself where
/// the stores keep its SHA-256: the same answers, but for a collision of SHA-256.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tombstone {
    /// The pruned job's id.
    pub id: Text,
    /// Its queue.
    pub queue: Text,
    /// Its payload, compared by a later enqueue of the id.
    pub payload: Text,
    /// Its kind, compared with the payload (SPEC 6.29: the digest covers both).
    pub kind: Text,
    /// Its final phase: `Done` or `Dead`.
    pub phase: Phase,
    /// Its claims.
    pub attempts: u64,
    /// When it ended.
    pub ended_at: u64,
}

impl Tombstone {
    /// What `get` shows.
    pub fn view(&self) -> TombstoneView {
        TombstoneView {
            id: self.id.to_string(),
            queue: self.queue.to_string(),
            status: self.phase.status(),
            dead_reason: match self.phase {
                Phase::Dead(reason) => Some(reason),
                _ => None,
            },
            attempts: self.attempts,
            ended_at: self.ended_at,
        }
    }
}

impl Job {
    /// What `get` shows.
    pub fn view(&self) -> JobView {
        JobView {
            id: self.id.to_string(),
            status: self.phase.status(),
            attempts: self.attempts,
            max_attempts: self.max_attempts,
            available_at: self.phase.available_at(),
            deadline: self.deadline,
            dead_reason: match self.phase {
                Phase::Dead(reason) => Some(reason),
                _ => None,
            },
            redrives: self.redrives,
            not_before: self.not_before,
            base_ms: self.base_ms,
            cap_ms: self.cap_ms,
            queue: self.queue.to_string(),
            priority: self.priority,
            ended_at: self.ended_at,
            cancel_requested: self.cancel_requested,
            kind: self.kind.to_string(),
        }
    }

    /// The settings this job's retries use: its own where it has them, each one by one, else
    /// the queue's in effect now (SPEC 6.23).
    fn backoff(&self, queue: Config) -> (u64, u64) {
        (self.base_ms.unwrap_or(queue.base_ms), self.cap_ms.unwrap_or(queue.cap_ms))
    }
}

/// The jobs of a store, in insertion order: inline up to two, so that the model checker copies
/// a small world's store without allocating.
type Jobs = smallvec::SmallVec<[Job; 2]>;

/// The store: settings and jobs in insertion order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Store {
    config: Config,
    jobs: Jobs,
    /// Tombstones of pruned jobs, in the order they were pruned (SPEC 1.7).
    tombstones: Vec<Tombstone>,
    /// The paused queues, ordered by name, each with the time of its first pause (SPEC 3.16).
    paused: Vec<(Text, u64)>,
    /// Every id ever enqueued, in the order of its first enqueue: kept only by a store with
    /// the seeded bug `forgotten-takes-old-place`, whose forget leaves it.
    ever: Vec<Text>,
    bug: Option<Bug>,
}

impl Store {
    /// An empty store with SPEC's default settings.
    pub fn new() -> Store {
        Store::default()
    }

    /// The same store, making one seeded bug from now on.
    pub fn with_bug(self, bug: Option<Bug>) -> Store {
        Store { bug, ..self }
    }

    /// The settings operations use now.
    pub fn config(&self) -> Config {
        self.config
    }

    /// The jobs, in the order of their first enqueue.
    pub fn jobs(&self) -> &[Job] {
        &self.jobs
    }

    /// The job called `id`, if stored.
    pub fn job(&self, id: &str) -> Option<&Job> {
        self.jobs.iter().find(|job| &*job.id == id)
    }

    /// The tombstones, in the order they were pruned.
    pub fn tombstones(&self) -> &[Tombstone] {
        &self.tombstones
    }

    /// The paused queues, ordered by name, each with the time it was paused (SPEC 3.16).
    pub fn paused(&self) -> &[(Text, u64)] {
        &self.paused
    }

    /// Whether `queue` is paused (compared byte for byte, as every queue name is).
    pub fn is_paused(&self, queue: &str) -> bool {
        self.paused.iter().any(|(name, _)| **name == *queue)
    }

    /// The tombstone of `id`, if it was pruned and not forgotten.
    pub fn tombstone(&self, id: &str) -> Option<&Tombstone> {
        self.tombstones.iter().find(|t| &*t.id == id)
    }

    /// The same store with each lease's owner renamed by `rename` (kept where it gives
    /// `None`): how the model checker renumbers interchangeable workers.
    pub fn rename_owners(&self, rename: impl Fn(&str) -> Option<Text>) -> Store {
        let mut store = self.clone();
        for job in &mut store.jobs {
            if let Phase::Leased { owner, .. } = &mut job.phase
                && let Some(renamed) = rename(owner)
            {
                *owner = renamed;
            }
        }
        store
    }

    /// An `id` or `worker` checked (SPEC 3.1, 6.21).
    fn name(&self, field: &str, value: &str) -> Result<(), Failure> {
        if self.bug(Bug::LongNameRefused) {
            seeded::shorter_name(field, value)?;
        }
        if self.bug(Bug::WorkerRefusalNamesId) {
            return validate::name("id", value);
        }
        validate::name(field, value)
    }

    /// A completion's jitter checked (SPEC 6.6: whatever the outcome, when present).
    fn jitter(&self, jitter: Option<f64>, retryable: bool) -> Result<f64, Failure> {
        if self.bug(Bug::JitterCheckedOnlyOnRetry) && !retryable {
            return Ok(0.0);
        }
        validate::jitter(jitter, retryable)
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.jobs.iter().position(|job| &*job.id == id)
    }

    fn bug(&self, bug: Bug) -> bool {
        self.bug == Some(bug)
    }

    /// `op` run with the jobs named in `over` set aside, as if the store had none of them,
    /// then put back where they were: a claim or a reap that passes over them. Not a step of
    /// the contract (SPEC 3.10 has none): the linearizability check's mode for the proposed
    /// claims that step over (`docs/postgres.md`, "A proposed contract: claims that step
    /// over") places a claim with jobs that overlapping calls touch set aside. With `over`
    /// empty it is [`Store::step`].
    pub fn step_passing_over(&mut self, op: &Op, over: &[&str]) -> Response {
        if over.is_empty() {
            return self.step(op);
        }
        let mut aside = Vec::new();
        let mut kept = Jobs::new();
        for (at, job) in std::mem::take(&mut self.jobs).into_iter().enumerate() {
            if over.contains(&&*job.id) {
                aside.push((at, job));
            } else {
                kept.push(job);
            }
        }
        self.jobs = kept;
        let response = self.step(op);
        // A claim or a reap adds and removes no job, so each goes back to its own place.
        for (at, job) in aside {
            let at = at.min(self.jobs.len());
            self.jobs.insert(at, job);
        }
        response
    }

    /// Runs one operation of SPEC section 5.
    pub fn step(&mut self, op: &Op) -> Response {
        let response = self.apply(op);
        // Refusals change nothing; `run_once`'s two reports follow a claim whose reap did.
        self.stamp(op, &response);
        response
    }

    /// What every transition records (SPEC 1.1): a job that ended `done` or `dead` gets its
    /// `ended_at` (a `run_once`'s job the second reading, every other the operation's `now`);
    /// an open job has none; a cancel request lasts only while the lease does (6.33). Only
    /// `stamp` writes `ended_at`, so an ended job without one has just ended.
    fn stamp(&mut self, op: &Op, response: &Response) {
        let now = op.now().unwrap_or(0);
        let ran = match (op, response) {
            (
                Op::RunOnce { after, .. },
                Response::Ok(
                    Reply::RanDone { id, .. } | Reply::RanRetry { id, .. } | Reply::RanDead { id, .. },
                ),
            ) => Some((id.as_str(), after.unwrap_or(now))),
            _ => None,
        };
        for job in &mut self.jobs {
            match job.phase {
                Phase::Done | Phase::Dead(_) if job.ended_at.is_none() => {
                    job.ended_at = Some(match ran {
                        Some((id, at)) if id == &*job.id => at,
                        _ => now,
                    });
                }
                Phase::Pending { .. } | Phase::Leased { .. } => job.ended_at = None,
                _ => {}
            }
            if !matches!(job.phase, Phase::Leased { .. }) {
                job.cancel_requested = false;
            }
        }
    }

    fn apply(&mut self, op: &Op) -> Response {
        let result = match op {
            Op::Config { base_ms, cap_ms, lease_ms, reap_limit } => {
                self.configure(*base_ms, *cap_ms, *lease_ms, *reap_limit)
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
            } => self.enqueue(
                id,
                payload,
                *max_attempts,
                *deadline,
                *now,
                Schedule {
                    not_before: *not_before,
                    base_ms: *base_ms,
                    cap_ms: *cap_ms,
                    queue: queue.as_deref(),
                    priority: *priority,
                    kind: kind.as_deref().unwrap_or(""),
                },
            ),
            Op::Claim { queues, worker, now } => self.claim(worker, queues.as_deref(), *now),
            Op::Complete { worker, id, attempt, outcome, now, jitter } => {
                self.complete(worker, id, *attempt, *outcome, *now, *jitter)
            }
            Op::RunOnce { queues, worker, now, after, outcome, jitter } => {
                self.run_once(worker, queues.as_deref(), *now, *after, *outcome, *jitter)
            }
            Op::Heartbeat { worker, id, attempt, now } => self.heartbeat(worker, id, *attempt, *now),
            Op::Redrive { id, now, add_attempts, deadline } => {
                self.redrive(id, *now, *add_attempts, *deadline)
            }
            Op::Cancel { id, now } => self.cancel(id, *now),
            Op::Reap { now } => validate::int("now", *now).map(|now| Reply::Reaped { count: self.reap(now) }),
            Op::Get { id } => self.get(id),
            Op::Stats { queue, now } => self.stats_op(*now, queue.as_deref()),
            Op::Prune { before, now } => self.prune(*before, *now),
            Op::Forget { before, now } => self.forget(*before, *now),
            Op::Pause { queue, now } => self.pause(queue, *now),
            Op::Resume { queue, now } => self.resume(queue, *now),
            Op::RunNow { id, now } => self.run_now(id, *now),
            Op::RetryDelay { attempt, base_ms, cap_ms, jitter } => {
                delay_op(*attempt, *base_ms, *cap_ms, *jitter, self.bug)
            }
            Op::Restart => Ok(self.restart()),
        };
        match result {
            Ok(reply) => Response::Ok(reply),
            Err(failure) => Response::Err(failure),
        }
    }

    /// `config`: each omitted setting keeps its value.
    fn configure(
        &mut self,
        base_ms: Option<u64>,
        cap_ms: Option<u64>,
        lease_ms: Option<u64>,
        reap_limit: Option<u64>,
    ) -> Result<Reply, Failure> {
        let base_ms = base_ms.map(|v| validate::int("base_ms", v)).transpose()?;
        let cap_ms = cap_ms.map(|v| validate::int("cap_ms", v)).transpose()?;
        let lease_ms = lease_ms.map(validate::lease_ms).transpose()?;
        let reap_limit = reap_limit.map(validate::reap_limit).transpose()?;
        if self.bug(Bug::ConfigOmittedResets) {
            self.config = Config::default();
        }
        let c = &mut self.config;
        *c = Config {
            base_ms: base_ms.unwrap_or(c.base_ms),
            cap_ms: cap_ms.unwrap_or(c.cap_ms),
            lease_ms: lease_ms.unwrap_or(c.lease_ms),
            reap_limit: reap_limit.unwrap_or(c.reap_limit),
        };
        Ok(Reply::Config)
    }

    /// `enqueue`: a new id is stored pending, at its `not_before`; an existing id changes
    /// nothing, whatever schedule and backoff it is sent with (SPEC 6.22).
    fn enqueue(
        &mut self,
        id: &str,
        payload: &str,
        max_attempts: u64,
        deadline: u64,
        now: u64,
        schedule: Schedule,
    ) -> Result<Reply, Failure> {
        self.name("id", id)?;
        validate::payload(payload)?;
        validate::budget("max_attempts", max_attempts)?;
        validate::int("now", now)?;
        if self.bug(Bug::DeadlineAtNowAccepted) {
            seeded::deadline_at_now(deadline, now)?;
        } else {
            validate::deadline(deadline, now)?;
        }
        let not_before = match schedule.not_before {
            Some(at) if self.bug(Bug::NotBeforeNowRefused) => {
                seeded::not_before_after_now(at, now, deadline)?
            }
            Some(at) => validate::not_before(at, now, deadline)?,
            None => now,
        };
        let base_ms = validate::own_setting("base_ms", schedule.base_ms)?;
        let cap_ms = validate::own_setting("cap_ms", schedule.cap_ms)?;
        let queue = schedule.queue.unwrap_or(DEFAULT_QUEUE);
        validate::queue("queue", queue)?;
        let priority = validate::priority(schedule.priority.unwrap_or(0))?;
        let kind = schedule.kind;
        validate::kind(kind)?;
        // The same job: the same payload and the same kind (SPEC 3.2); with the seeded bug,
        // the payload alone.
        let ignore_kind = self.bug(Bug::KindIgnored);
        let same = |p: &Text, k: &Text| **p == *payload && (ignore_kind || **k == *kind);
        // A pruned id is never run again: its tombstone answers for it (SPEC 3.2, 6.29).
        if let Some(tombstone) = self.tombstone(id)
            && !self.bug(Bug::EnqueueRevivesPruned)
        {
            return match same(&tombstone.payload, &tombstone.kind) {
                true => Ok(Reply::Existing),
                false => Err(Failure::Conflict),
            };
        }
        if let Some(i) = self.position(id) {
            if !same(&self.jobs[i].payload, &self.jobs[i].kind) {
                if self.bug(Bug::ConflictOverwritesPayload) {
                    self.jobs[i].payload = payload.into();
                }
                return Err(Failure::Conflict);
            }
            if self.bug(Bug::ReenqueueResetsBudget) {
                seeded::reset_attempts(&mut self.jobs[i]);
            }
            if self.bug(Bug::ExistingReschedules) {
                seeded::reschedule(&mut self.jobs[i], schedule.not_before);
            }
            if self.bug(Bug::ExistingTakesNewBudget) {
                self.jobs[i].max_attempts = max_attempts;
            }
            return Ok(Reply::Existing);
        }
        let job = Job {
            id: id.into(),
            payload: payload.into(),
            phase: Phase::Pending { available_at: not_before },
            attempts: 0,
            max_attempts,
            deadline,
            redrives: 0,
            enqueued_at: now,
            not_before,
            base_ms,
            cap_ms,
            queue: queue.into(),
            priority,
            ended_at: None,
            cancel_requested: false,
            kind: kind.into(),
        };
        if self.bug(Bug::ForgottenTakesOldPlace) {
            let at = seeded::old_place(&mut self.ever, &self.jobs, id);
            self.jobs.insert(at, job);
        } else {
            self.jobs.push(job);
        }
        Ok(Reply::Enqueued)
    }

    /// `claim`: reap (every queue), pick (among `queues`), claim — one transaction.
    fn claim(&mut self, worker: &str, queues: Option<&[String]>, now: u64) -> Result<Reply, Failure> {
        self.name("worker", worker)?;
        validate::int("now", now)?;
        // The default queue alone, when the claim names none: valid, and not allocated anew.
        let queues = match queues {
            Some(queues) => {
                validate::queues(queues)?;
                queues
            }
            None => &DEFAULT_QUEUES[..],
        };
        if self.bug(Bug::ClaimReapsOnlyExhausted) {
            seeded::reap_exhausted(&mut self.jobs, now);
        } else {
            self.reap(now);
        }
        let Some(i) = self.pick(queues, now) else {
            return Ok(Reply::None);
        };
        let lease_ms = self.config.lease_ms;
        let bug = self.bug;
        let job = &mut self.jobs[i];
        job.attempts += 1;
        // A 64-bit sum: both terms are at most 2^53 − 1, so it cannot overflow.
        let until =
            if bug == Some(Bug::ShortLease) { seeded::short_lease(now, lease_ms) } else { now + lease_ms };
        job.phase = Phase::Leased { owner: worker.into(), claimed_at: now, until };
        Ok(Reply::Claimed { id: job.id.to_string(), attempt: job.attempts, lease_until: until })
    }

    /// Claim step 2: among the claimable jobs of `queues` — due, and not due to end, which a
    /// reap that reached its limit leaves (SPEC 3.3.2) — the one with the smallest
    /// `(priority, available_at)`, ties to the first enqueued (the lowest position, as
    /// `min_by_key` keeps the first of equal keys).
    fn pick(&self, queues: &[String], now: u64) -> Option<usize> {
        let served = |job: &Job| {
            self.bug(Bug::ClaimIgnoresQueues)
                || queues.iter().any(|q| **q == *job.queue)
                || (self.bug(Bug::QueueNameFolded) && queues.iter().any(|q| seeded::folded(q, &job.queue)))
        };
        // A store of contract 1.2 whose reap leaves a job due to end claims it: its pick
        // trusted the reap (`pick-takes-due-to-end`, and the 1.2 bugs that show it so).
        let trusts_reap = matches!(
            self.bug,
            Some(Bug::PickTakesDueToEnd | Bug::RetryPastMaxAttempts | Bug::ClaimReapsOnlyExhausted)
        );
        let in_time = |job: &Job| (job.attempts < job.max_attempts && job.deadline > now) || trusts_reap;
        let claimable = |job: &Job| {
            served(job)
                && (!self.is_paused(&job.queue) || self.bug(Bug::ClaimIgnoresPause))
                && (!job.cancel_requested || self.bug(Bug::ReclaimCancelling))
                && in_time(job)
                && match job.phase {
                    Phase::Pending { .. } if self.bug(Bug::ScheduledClaimableEarly) => {
                        seeded::unscheduled(job, now)
                    }
                    Phase::Pending { available_at } => available_at <= now,
                    Phase::Leased { until, .. } => match self.bug {
                        Some(Bug::IgnoreExpiredLease) => false,
                        Some(Bug::StealLiveLease) => true,
                        _ => until <= now,
                    },
                    Phase::Done | Phase::Dead(_) => false,
                }
        };
        let candidates = self.jobs.iter().enumerate().filter(|(_, job)| claimable(job));
        match self.bug {
            Some(Bug::ClaimTieToNewest) => seeded::tie_to_newest(candidates),
            Some(Bug::ClaimFirstEnqueued) => candidates.map(|(i, _)| i).next(),
            Some(Bug::ClaimOnlyFirstJob) => seeded::only_first(candidates),
            Some(Bug::ClaimTieById) => {
                candidates.min_by_key(|(_, job)| (job.phase.available_at(), job.id.clone())).map(|(i, _)| i)
            }
            Some(Bug::ClaimTieByEnqueuedAt) => {
                candidates.min_by_key(|(_, job)| (job.phase.available_at(), job.enqueued_at)).map(|(i, _)| i)
            }
            Some(Bug::ClaimQueuesInTurn) => seeded::queues_in_turn(candidates, queues),
            Some(Bug::ClaimHeadsByDueTime) => seeded::heads_by_due_time(candidates),
            Some(Bug::ClaimTieByQueueOrder) => candidates
                .min_by_key(|(_, job)| {
                    let named = queues.iter().position(|q| **q == *job.queue);
                    (job.priority, job.phase.available_at(), named)
                })
                .map(|(i, _)| i),
            Some(Bug::PriorityAges) => candidates
                .min_by_key(|(_, job)| (seeded::aged(job, now), job.phase.available_at()))
                .map(|(i, _)| i),
            Some(Bug::PriorityInverted) => candidates
                .min_by_key(|(_, job)| (std::cmp::Reverse(job.priority), job.phase.available_at()))
                .map(|(i, _)| i),
            _ => candidates.min_by_key(|(_, job)| (job.priority, job.phase.available_at())).map(|(i, _)| i),
        }
    }

    /// Claim step 1, and `reap`: of the jobs due to end at `now`, the first `reap_limit` in
    /// the reap's order become dead (SPEC 3.3.1, 6.37). Returns how many. A lease that has not
    /// expired is never reaped: an attempt started in time may finish.
    fn reap(&mut self, now: u64) -> u64 {
        let mut due: smallvec::SmallVec<[(ReapKey, End); 4]> = self
            .jobs
            .iter()
            .enumerate()
            .filter(|(_, job)| !(self.bug(Bug::ReapSkipsPaused) && self.is_paused(&job.queue)))
            .filter_map(|(i, job)| {
                let found = match self.bug {
                    Some(bug) if bug.bends_reap() => seeded::reaped(bug, job, now),
                    _ => self.due_to_end(job, now).map(|(rule, at, reason)| (rule, at, End::Dead(reason))),
                };
                found.map(|(rule, at, end)| ((rule, at, i), end))
            })
            .collect();
        match self.bug {
            Some(Bug::ReapInEnqueueOrder) => due.sort_unstable_by_key(|&((_, _, i), _)| i),
            Some(Bug::ReapByDeadlineAlone) => {
                due.sort_unstable_by_key(|&((_, _, i), _)| (self.jobs[i].deadline, i));
            }
            _ => due.sort_unstable_by_key(|&(key, _)| key),
        }
        let limit = match self.bug {
            Some(Bug::ReapIgnoresLimit) => u64::MAX,
            Some(Bug::ReapLimitOffByOne) => self.config.reap_limit.saturating_sub(1),
            _ => self.config.reap_limit,
        };
        let mut count = 0;
        let mut dropped = smallvec::SmallVec::<[usize; 2]>::new();
        for &((_, _, i), end) in due.iter().take(usize::try_from(limit).unwrap_or(usize::MAX)) {
            match end {
                End::Dead(reason) => self.jobs[i].phase = Phase::Dead(reason),
                End::Pending => {
                    self.jobs[i].phase = Phase::Pending { available_at: now };
                    continue;
                }
                End::Dropped => dropped.push(i),
            }
            count += 1;
        }
        dropped.sort_unstable();
        for &i in dropped.iter().rev() {
            self.jobs.remove(i);
        }
        if self.bug(Bug::ReapCountSaysLimit) && count > 0 && count < limit {
            return limit;
        }
        count
    }

    /// The jobs due to end at `now` (SPEC 3.3.1), which a reap at `now` would end (up to its
    /// limit): in the linearizability check's mode for claims that step over, what a reap
    /// overlapping a claim may hold while the claim passes over it.
    pub fn due_to_end_at(&self, now: u64) -> Vec<&str> {
        self.jobs.iter().filter(|job| self.due_to_end(job, now).is_some()).map(|job| &*job.id).collect()
    }

    /// Whether `job` is due to end at `now` (SPEC 3.3.1), and if so by which rule, the time it
    /// is ordered by in that rule, and the reason it ends with: an expired lease with a cancel
    /// request (rule 1), an expired lease out of budget (rule 2), a pending job or an expired
    /// lease past its deadline (rule 3).
    fn due_to_end(&self, job: &Job, now: u64) -> Option<(u8, u64, DeadReason)> {
        let asked = job.cancel_requested && !self.bug(Bug::ReclaimCancelling);
        match job.phase {
            Phase::Leased { until, .. } if until > now => None,
            // An operator's request ends an expired lease first (SPEC 3.3.1, 6.25).
            Phase::Leased { until, .. } if asked => Some((1, until, DeadReason::Cancelled)),
            Phase::Leased { until, .. } if job.attempts >= job.max_attempts => {
                Some((2, until, DeadReason::Exhausted))
            }
            Phase::Leased { .. } | Phase::Pending { .. } if job.deadline <= now => {
                Some((3, job.deadline, DeadReason::Deadline))
            }
            _ => None,
        }
    }

    /// `complete`: the fencing checks, then the outcome.
    fn complete(
        &mut self,
        worker: &str,
        id: &str,
        attempt: u64,
        outcome: Outcome,
        now: u64,
        jitter: Option<f64>,
    ) -> Result<Reply, Failure> {
        if self.bug(Bug::LookupBeforeValidation) {
            self.position(id).ok_or(Failure::NotFound)?;
        }
        self.name("worker", worker)?;
        self.name("id", id)?;
        validate::attempt(attempt)?;
        validate::int("now", now)?;
        let jitter = self.jitter(jitter, outcome == Outcome::Retryable)?;
        let i = self.position(id).ok_or(self.missing(id))?;
        let job = &self.jobs[i];
        let Phase::Leased { ref owner, claimed_at, .. } = job.phase else {
            return Err(Failure::LeaseLost);
        };
        let owned = **owner == *worker || self.bug(Bug::FenceIgnoresOwner);
        let fenced = self.bug(Bug::AcceptStaleCompletion) || (owned && job.attempts == attempt);
        if !fenced {
            return Err(Failure::LeaseLost);
        }
        if now < claimed_at && !self.bug(Bug::CompleteSkipsClockCheck) {
            return Err(Failure::ClockWentBackwards);
        }
        Ok(self.apply_outcome(i, outcome, now, jitter))
    }

    /// The outcome of a completion that passed its checks. A lease that expired but was
    /// neither claimed again nor reaped still counts, even past the deadline or the budget.
    fn apply_outcome(&mut self, i: usize, outcome: Outcome, now: u64, jitter: f64) -> Reply {
        let bug = self.bug;
        let job = &mut self.jobs[i];
        let (base_ms, cap_ms) = match bug {
            Some(Bug::RetryIgnoresOwnBackoff) => (self.config.base_ms, self.config.cap_ms),
            Some(Bug::OwnBackoffAllOrNothing) => seeded::all_or_nothing(job, self.config),
            _ => job.backoff(self.config),
        };
        let reply = match outcome {
            Outcome::Ok => {
                job.phase = Phase::Done;
                Reply::Done
            }
            Outcome::Retryable if job.cancel_requested && bug == Some(Bug::StoppedAttemptDone) => {
                job.phase = Phase::Done;
                Reply::Done
            }
            // A cancel request: no retry, whatever the budget and the deadline (SPEC 3.4).
            Outcome::Retryable if job.cancel_requested && bug != Some(Bug::CancelledRetried) => {
                job.phase = Phase::Dead(DeadReason::Cancelled);
                Reply::Dead { reason: DeadReason::Cancelled }
            }
            Outcome::Permanent => {
                job.phase = Phase::Dead(DeadReason::Permanent);
                Reply::Dead { reason: DeadReason::Permanent }
            }
            Outcome::Retryable if job.attempts >= job.max_attempts => {
                job.phase = Phase::Dead(DeadReason::Exhausted);
                Reply::Dead { reason: DeadReason::Exhausted }
            }
            Outcome::Retryable => {
                let delay = match bug {
                    Some(seeded) if seeded.bends_delay() => {
                        seeded::delay(seeded, job.attempts, base_ms, cap_ms, jitter)
                    }
                    _ => retry_delay(job.attempts, base_ms, cap_ms, jitter),
                };
                let available_at = now + delay;
                // At `deadline` itself there is no time left to start an attempt.
                let too_late = match bug {
                    Some(Bug::RetryAtDeadline) => seeded::past_deadline(available_at, job.deadline),
                    _ => available_at >= job.deadline,
                };
                if too_late {
                    job.phase = Phase::Dead(DeadReason::Deadline);
                    Reply::Dead { reason: DeadReason::Deadline }
                } else {
                    job.phase = Phase::Pending { available_at };
                    if bug == Some(Bug::RetryDropsPriority) {
                        job.priority = 0;
                    }
                    if bug == Some(Bug::ExtendDeadlineOnRetry) {
                        seeded::extend_deadline(job, delay);
                    }
                    Reply::Retry { available_at }
                }
            }
        };
        if self.bug(Bug::CountAttemptOnEveryJob) && matches!(reply, Reply::Retry { .. }) {
            seeded::count_on_others(&mut self.jobs, i);
        }
        reply
    }

    /// `run_once` with a clock that reads `now` then `after`, and a transport that answers
    /// `outcome`.
    fn run_once(
        &mut self,
        worker: &str,
        queues: Option<&[String]>,
        now: u64,
        after: Option<u64>,
        outcome: RunOutcome,
        jitter: Option<f64>,
    ) -> Result<Reply, Failure> {
        self.name("worker", worker)?;
        validate::int("now", now)?;
        let after = validate::int("after", after.unwrap_or(now))?;
        let jitter = self.jitter(jitter, outcome == RunOutcome::Retryable)?;
        let Reply::Claimed { id, attempt, .. } = self.claim(worker, queues, now)? else {
            return Ok(Reply::None);
        };
        // A dead process never read the clock again: `after` does not matter.
        if outcome == RunOutcome::Crash {
            if self.bug(Bug::RollbackAttemptOnCrash)
                && let Some(i) = self.position(&id)
            {
                seeded::give_back(&mut self.jobs[i]);
            }
            return Ok(Reply::Crashed { id, attempt });
        }
        if after < now && !self.bug(Bug::RunOnceIgnoresBackwardsClock) {
            return Err(Failure::RanClockWentBackwards { id, attempt });
        }
        let classified = match outcome.classified() {
            Some(classified) => classified,
            None if self.bug(Bug::UnknownErrorAsSuccess) => Outcome::Ok,
            None => return Err(Failure::UnknownError { id, attempt }),
        };
        // The claim just made is ours, so the completion passes its checks.
        let at = if self.bug(Bug::RunOnceCompletesAtFirstReading) { now } else { after };
        match self.complete(worker, &id, attempt, classified, at, Some(jitter))? {
            Reply::Done => Ok(Reply::RanDone { id, attempt }),
            Reply::Retry { available_at } => Ok(Reply::RanRetry { id, attempt, available_at }),
            Reply::Dead { reason } => Ok(Reply::RanDead { id, attempt, reason }),
            other => Ok(other),
        }
    }

    /// `heartbeat`: the holder keeps its lease. The same fence and clock check as `complete`,
    /// then the deadline: accepted only strictly before it, so a lease never ends later than
    /// `deadline − 1 + lease_ms` (SPEC 3.12, 4.11). The expiry never shrinks.
    fn heartbeat(&mut self, worker: &str, id: &str, attempt: u64, now: u64) -> Result<Reply, Failure> {
        self.name("worker", worker)?;
        self.name("id", id)?;
        validate::attempt(attempt)?;
        validate::int("now", now)?;
        let i = self.position(id).ok_or(self.missing(id))?;
        let (lease_ms, bug) = (self.config.lease_ms, self.bug);
        let job = &mut self.jobs[i];
        let Phase::Leased { ref owner, claimed_at, until } = job.phase else {
            return Err(Failure::LeaseLost);
        };
        if bug == Some(Bug::HeartbeatRefusesExpired) && until <= now {
            return Err(Failure::LeaseLost);
        }
        let current = job.attempts == attempt || bug == Some(Bug::HeartbeatIgnoresAttempt);
        if **owner != *worker || !current {
            return Err(Failure::LeaseLost);
        }
        if now < claimed_at {
            return Err(Failure::ClockWentBackwards);
        }
        if job.cancel_requested {
            return Err(Failure::Cancelled);
        }
        if now >= job.deadline && bug != Some(Bug::HeartbeatPastDeadline) {
            return Err(Failure::DeadlinePassed);
        }
        // A 64-bit sum of two values at most 2^53 − 1, like a claim's (SPEC 6.10).
        let lease_ms = if bug == Some(Bug::HeartbeatLeaseAtClaim) { until - claimed_at } else { lease_ms };
        let extended = match bug {
            Some(Bug::HeartbeatShrinksLease) => now + lease_ms,
            Some(Bug::HeartbeatExpiryCapped) => until.max(now + lease_ms).min(crate::MAX_INT),
            _ => until.max(now + lease_ms),
        };
        if let Phase::Leased { until, .. } = &mut job.phase {
            *until = extended;
        }
        Ok(Reply::Extended { lease_until: extended })
    }

    /// `cancel`: a pending job becomes dead(cancelled), whatever its deadline and schedule; a
    /// leased one gets a cancel request, and its holder's report or its lease's end decides
    /// (SPEC 3.13, 6.25).
    fn cancel(&mut self, id: &str, now: u64) -> Result<Reply, Failure> {
        self.name("id", id)?;
        validate::int("now", now)?;
        let i = self.position(id).ok_or(self.pruned_or_missing(id))?;
        let bug = self.bug;
        let job = &mut self.jobs[i];
        match job.phase {
            Phase::Pending { .. } if bug == Some(Bug::CancelFreshOnly) && job.attempts > 0 => {
                return Err(Failure::NotCancellable);
            }
            Phase::Pending { .. } => {}
            Phase::Leased { .. } if bug == Some(Bug::CancelLeasedJob) => {}
            Phase::Leased { .. } => {
                job.cancel_requested = true;
                return Ok(Reply::Cancelling);
            }
            Phase::Done | Phase::Dead(_) => return Err(Failure::NotCancellable),
        }
        job.phase = Phase::Dead(DeadReason::Cancelled);
        if bug == Some(Bug::CancelResetsAttempts) {
            seeded::reset_attempts(job);
        }
        Ok(Reply::Cancelled)
    }

    /// `redrive`: the operator's way out of `dead`.
    fn redrive(&mut self, id: &str, now: u64, add_attempts: u64, deadline: u64) -> Result<Reply, Failure> {
        self.name("id", id)?;
        validate::int("now", now)?;
        validate::budget("add_attempts", add_attempts)?;
        validate::deadline(deadline, now)?;
        let i = self.position(id).ok_or(self.pruned_or_missing(id))?;
        let bug = self.bug;
        let job = &mut self.jobs[i];
        if !matches!(job.phase, Phase::Dead(_)) && bug != Some(Bug::RedriveLiveJob) {
            return Err(Failure::NotDead);
        }
        let max_attempts = job.attempts + add_attempts;
        let largest = bug == Some(Bug::RedriveRefusesLargestBudget) && max_attempts == validate::MAX_ATTEMPTS;
        if validate::budget("add_attempts", max_attempts).is_err() || largest {
            let detail = "add_attempts: attempts + add_attempts is above 2^31-1".into();
            return Err(Failure::InvalidInput { detail });
        }
        job.phase = Phase::Pending { available_at: now };
        job.max_attempts = max_attempts;
        job.deadline = deadline;
        job.redrives += 1;
        if bug == Some(Bug::RedriveMovesNotBefore) {
            job.not_before = now;
        }
        Ok(Reply::Redriven)
    }

    /// `pause`: the queue's jobs are not picked until it is resumed; a second pause keeps the
    /// first one's time (SPEC 3.16, 6.40).
    fn pause(&mut self, queue: &str, now: u64) -> Result<Reply, Failure> {
        validate::queue("queue", queue)?;
        validate::int("now", now)?;
        if let Err(at) = self.paused.binary_search_by(|(name, _)| (**name).cmp(queue)) {
            self.paused.insert(at, (queue.into(), now));
        }
        Ok(Reply::Paused)
    }

    /// `resume`: the queue is not paused, whether or not it was (SPEC 3.17).
    fn resume(&mut self, queue: &str, now: u64) -> Result<Reply, Failure> {
        validate::queue("queue", queue)?;
        validate::int("now", now)?;
        if self.bug(Bug::ResumeResumesAll) {
            self.paused.clear();
        }
        self.paused.retain(|(name, _)| **name != *queue);
        Ok(Reply::Resumed)
    }

    /// `run_now`: a pending job in time is due at `min(available_at, now)`; nothing else of
    /// it changes (SPEC 3.18, 6.41).
    fn run_now(&mut self, id: &str, now: u64) -> Result<Reply, Failure> {
        self.name("id", id)?;
        validate::int("now", now)?;
        let i = self.position(id).ok_or(self.pruned_or_missing(id))?;
        let bug = self.bug;
        let job = &mut self.jobs[i];
        if bug == Some(Bug::RunNowTakesLeased) && job.phase.expired_lease(now) {
            job.phase = Phase::Pending { available_at: now };
        }
        let Phase::Pending { available_at } = &mut job.phase else {
            return Err(Failure::NotPending);
        };
        if job.deadline <= now && bug != Some(Bug::RunNowPastDeadline) {
            return Err(Failure::DeadlinePassed);
        }
        let was = *available_at;
        *available_at = if bug == Some(Bug::RunNowMakesLater) { now } else { was.min(now) };
        let due = *available_at;
        match bug {
            Some(Bug::RunNowMovesDeadline) => job.deadline -= was - due,
            Some(Bug::RunNowGivesAttempt) => job.max_attempts += 1,
            _ => {}
        }
        Ok(Reply::Due { available_at: due })
    }

    /// `restart`: the database closed and opened again. What comes back is what was written:
    /// the settings and every job, leases included (SPEC section 3.10). The store is rebuilt
    /// from that image, so that a store which kept anything only in memory would show it.
    fn restart(&mut self) -> Reply {
        let (config, jobs, tombstones) =
            (self.config, std::mem::take(&mut self.jobs), std::mem::take(&mut self.tombstones));
        let paused = std::mem::take(&mut self.paused);
        // `pause-lost-on-restart` kept them in the process only.
        let paused = if self.bug(Bug::PauseLostOnRestart) { Vec::new() } else { paused };
        // The ids table of `forgotten-takes-old-place` is stored too.
        let ever = std::mem::take(&mut self.ever);
        *self = Store { config, jobs, tombstones, paused, ever, bug: self.bug };
        match self.bug {
            Some(Bug::RestartForgetsConfig) => self.config = Config::default(),
            Some(Bug::RestartReleasesLeases) => seeded::release_leases(&mut self.jobs),
            Some(Bug::RestartSortsById) => self.jobs.sort_by(|a, b| a.id.cmp(&b.id)),
            _ => {}
        }
        Reply::Restart
    }

    fn get(&self, id: &str) -> Result<Reply, Failure> {
        self.name("id", id)?;
        if let Some(tombstone) = self.tombstone(id) {
            return Ok(Reply::Tombstone(tombstone.view()));
        }
        self.job(id).map(|job| Reply::Job(job.view())).ok_or(Failure::NotFound)
    }

    /// The refusal of a fenced operation for an id no job has: `lease_lost` for a pruned
    /// one, as for the ended job it was (SPEC 6.30), else `not_found`.
    fn missing(&self, id: &str) -> Failure {
        if self.tombstone(id).is_some() { Failure::LeaseLost } else { Failure::NotFound }
    }

    /// The refusal of `redrive`, `cancel` or `run_now` for an id no job has (SPEC 3.14).
    fn pruned_or_missing(&self, id: &str) -> Failure {
        if self.tombstone(id).is_some() { Failure::Pruned } else { Failure::NotFound }
    }

    /// `stats` as an operation: its arguments checked, then the counts.
    fn stats_op(&self, now: u64, queue: Option<&str>) -> Result<Reply, Failure> {
        let now = validate::int("now", now)?;
        if let Some(queue) = queue {
            validate::queue("queue", queue)?;
        }
        Ok(Reply::Stats(self.stats_of(now, queue)))
    }

    /// `prune`: every ended job at or before `before` leaves a tombstone (SPEC 3.14).
    fn prune(&mut self, before: u64, now: u64) -> Result<Reply, Failure> {
        validate::int("now", now)?;
        let before = validate::before(before, now)?;
        let bug = self.bug;
        let mut count = if bug == Some(Bug::PruneOpenPastDeadline) {
            seeded::drop_open_past_deadline(&mut self.jobs, before)
        } else {
            0
        };
        let mut kept = Jobs::new();
        for job in std::mem::take(&mut self.jobs) {
            let ended = |at: u64| at <= before || bug == Some(Bug::PruneIgnoresBefore);
            match (job.ended_at, &job.phase) {
                (Some(ended_at), Phase::Done | Phase::Dead(_)) if ended(ended_at) => {
                    let payload =
                        if bug == Some(Bug::TombstoneOtherDigest) { Text::default() } else { job.payload };
                    if bug != Some(Bug::PruneWithoutTombstone) {
                        let queue = if bug == Some(Bug::TombstoneDefaultQueue) {
                            DEFAULT_QUEUE.into()
                        } else {
                            job.queue
                        };
                        self.tombstones.push(Tombstone {
                            id: job.id,
                            queue,
                            payload,
                            kind: job.kind,
                            phase: job.phase,
                            attempts: job.attempts,
                            ended_at,
                        });
                    }
                    count += 1;
                }
                _ => kept.push(job),
            }
        }
        self.jobs = kept;
        Ok(Reply::Pruned { count })
    }

    /// `forget`: tombstones of jobs ended at or before `before` go; their ids are free again
    /// (SPEC 3.15).
    fn forget(&mut self, before: u64, now: u64) -> Result<Reply, Failure> {
        validate::int("now", now)?;
        let before = validate::before(before, now)?;
        let was = self.tombstones.len();
        let all = self.bug(Bug::ForgetIgnoresBefore);
        self.tombstones.retain(|t| t.ended_at > before && !all);
        Ok(Reply::Forgotten { count: (was - self.tombstones.len()) as u64 })
    }

    /// `stats`: counts by status and reason, expired leases, the oldest open job's age, and
    /// the tombstones — of `queue`'s jobs, or of all.
    pub fn stats_of(&self, now: u64, queue: Option<&str>) -> StatsView {
        let mut s = StatsView::default();
        let mut oldest: Option<u64> = None;
        let counted = |q: &Text| queue.is_none_or(|queue| **q == *queue);
        let tombstones = if self.bug(Bug::StatsForgetsPruned) { &[][..] } else { &self.tombstones[..] };
        for tombstone in tombstones.iter().filter(|t| counted(&t.queue)) {
            match tombstone.phase {
                Phase::Done => s.pruned_done += 1,
                _ => s.pruned_dead += 1,
            }
        }
        for job in self.jobs.iter().filter(|job| counted(&job.queue)) {
            match job.phase {
                Phase::Pending { .. } => s.pending += 1,
                Phase::Leased { until, .. } => {
                    s.leased += 1;
                    let expired = if self.bug(Bug::StatsStrictExpiry) {
                        seeded::strictly_before(until, now)
                    } else {
                        until <= now
                    };
                    if expired {
                        s.leased_expired += 1;
                    }
                }
                Phase::Done => s.done += 1,
                Phase::Dead(reason) => {
                    s.dead += 1;
                    match reason {
                        DeadReason::Exhausted => s.dead_exhausted += 1,
                        DeadReason::Deadline => s.dead_deadline += 1,
                        DeadReason::Permanent => s.dead_permanent += 1,
                        DeadReason::Cancelled => s.dead_cancelled += 1,
                    }
                }
            }
            if matches!(job.phase, Phase::Pending { .. } | Phase::Leased { .. }) {
                oldest = Some(match oldest {
                    Some(first) if self.bug(Bug::StatsOldestByFirstJob) => first,
                    Some(o) => o.min(job.enqueued_at),
                    None => job.enqueued_at,
                });
            }
        }
        s.oldest_open_age_ms = oldest.map(|enqueued_at| now.saturating_sub(enqueued_at));
        s.paused_queues = match queue {
            Some(queue) => u64::from(self.is_paused(queue)),
            None if self.bug(Bug::StatsPausedCountsJobs) => {
                let carried = |name: &Text| self.jobs.iter().any(|job| job.queue == *name);
                self.paused.iter().filter(|(name, _)| carried(name)).count() as u64
            }
            None => self.paused.len() as u64,
        };
        s
    }
}

/// The queue of a job enqueued without one, and served by a claim that names none (SPEC 1.6).
pub const DEFAULT_QUEUE: &str = "default";

/// What a claim naming no queue serves: [`DEFAULT_QUEUE`] alone.
static DEFAULT_QUEUES: std::sync::LazyLock<[String; 1]> =
    std::sync::LazyLock::new(|| [DEFAULT_QUEUE.to_owned()]);

/// An enqueue's optional arguments: the schedule, the job's own backoff, its queue and
/// priority.
#[derive(Clone, Copy, Debug, Default)]
struct Schedule<'a> {
    not_before: Option<u64>,
    base_ms: Option<u64>,
    cap_ms: Option<u64>,
    queue: Option<&'a str>,
    priority: Option<u64>,
    kind: &'a str,
}

/// `retry_delay` as an operation: its arguments checked, then SPEC section 2.
fn delay_op(
    attempt: u64,
    base_ms: u64,
    cap_ms: u64,
    jitter: f64,
    bug: Option<Bug>,
) -> Result<Reply, Failure> {
    validate::attempt(attempt)?;
    validate::int("base_ms", base_ms)?;
    validate::int("cap_ms", cap_ms)?;
    validate::ratio(jitter)?;
    let delay_ms = match bug {
        // A store whose formula is wrong answers `retry_delay` with it too.
        Some(seeded) if seeded.bends_delay() => seeded::delay(seeded, attempt, base_ms, cap_ms, jitter),
        _ => retry_delay(attempt, base_ms, cap_ms, jitter),
    };
    Ok(Reply::Delay { delay_ms })
}

impl Bug {
    /// The seeded bugs that change the delay formula.
    fn bends_delay(self) -> bool {
        matches!(self, Bug::RoundDelay | Bug::ExactProductDelay | Bug::JitterBeforeCap | Bug::DelayTiesUp)
    }

    /// The seeded bugs of contract 1.2 that change how the reap treats a job (its order and
    /// limit are 1.3's, below).
    fn bends_reap(self) -> bool {
        matches!(
            self,
            Bug::IgnoreExpiredLease
                | Bug::RetryPastMaxAttempts
                | Bug::DropExpiredLease
                | Bug::ReapDeadlineFirst
                | Bug::ReapLiveLease
                | Bug::ReapAMillisecondEarly
        )
    }
}

/// The seeded bugs' deviations, kept out of the store's own functions so that mutation testing
/// of the store (which leaves this module out) mutates only what the SPEC's store runs.
mod seeded {
    use super::{Config, End, Job, Jobs, Phase, Text};
    use crate::{Bug, DeadReason, Failure, validate};

    /// Open jobs whose deadline is at or before `before` removed, with no tombstone, and
    /// counted as pruned (`prune-open-past-deadline`).
    pub fn drop_open_past_deadline(jobs: &mut Jobs, before: u64) -> u64 {
        let was = jobs.len();
        jobs.retain(|job| job.ended_at.is_some() || job.deadline > before);
        (was - jobs.len()) as u64
    }

    /// `deadline >= now` accepted (`deadline-at-now-accepted`).
    pub fn deadline_at_now(deadline: u64, now: u64) -> Result<u64, Failure> {
        validate::int("deadline", deadline)?;
        if deadline >= now {
            Ok(deadline)
        } else {
            Err(Failure::InvalidInput { detail: "deadline: before now".into() })
        }
    }

    /// A lease one millisecond short (`short-lease`).
    pub fn short_lease(now: u64, lease_ms: u64) -> u64 {
        (now + lease_ms).saturating_sub(1)
    }

    /// The smallest `available_at`, ties to the job enqueued last (`claim-tie-to-newest`).
    pub fn tie_to_newest<'a>(candidates: impl Iterator<Item = (usize, &'a Job)>) -> Option<usize> {
        candidates.max_by_key(|(i, job)| (std::cmp::Reverse(job.phase.available_at()), *i)).map(|(i, _)| i)
    }

    /// The best due job of the first queue named that has one (`claim-queues-in-turn`).
    pub fn queues_in_turn<'a>(
        candidates: impl Iterator<Item = (usize, &'a Job)>,
        queues: &[String],
    ) -> Option<usize> {
        let candidates: Vec<_> = candidates.collect();
        queues.iter().find_map(|queue| {
            let own = candidates.iter().filter(|(_, job)| *job.queue == **queue);
            own.min_by_key(|(_, job)| (job.priority, job.phase.available_at())).map(|(i, _)| *i)
        })
    }

    /// Each queue's best due job, then the one of those due first, ties to the first
    /// enqueued (`claim-heads-by-due-time`).
    pub fn heads_by_due_time<'a>(candidates: impl Iterator<Item = (usize, &'a Job)>) -> Option<usize> {
        let candidates: Vec<_> = candidates.collect();
        let head = |queue: &str| {
            let own = candidates.iter().filter(|(_, job)| *job.queue == *queue);
            own.min_by_key(|(_, job)| (job.priority, job.phase.available_at())).map(|(i, _)| *i)
        };
        let heads = candidates.iter().filter(|(i, job)| head(&job.queue) == Some(*i));
        heads.min_by_key(|(_, job)| job.phase.available_at()).map(|(i, _)| *i)
    }

    /// Where a new job called `id` goes among `jobs` (`forgotten-takes-old-place`): an id
    /// enqueued before goes back before every job first enqueued after it, as `ever` (every id
    /// ever enqueued, in order) remembers them; a new one goes last, and is remembered.
    pub fn old_place(ever: &mut Vec<Text>, jobs: &[Job], id: &str) -> usize {
        let seq = |id: &str| ever.iter().position(|e| **e == *id);
        match seq(id) {
            Some(old) => {
                jobs.iter().position(|job| seq(&job.id).is_some_and(|p| p > old)).unwrap_or(jobs.len())
            }
            None => {
                ever.push(id.into());
                jobs.len()
            }
        }
    }

    /// Two queue names equal without regard to case (`queue-name-folded`).
    pub fn folded(a: &str, b: &str) -> bool {
        a.to_lowercase() == b.to_lowercase()
    }

    /// A job's priority aged by the time it has been due, one for each 2^30 ms
    /// (`priority-ages`).
    pub fn aged(job: &Job, now: u64) -> u64 {
        job.priority.saturating_sub(now.saturating_sub(job.phase.available_at().unwrap_or(now)) >> 30)
    }

    /// Only the first job ever enqueued is looked at (`claim-only-first-job`).
    pub fn only_first<'a>(mut candidates: impl Iterator<Item = (usize, &'a Job)>) -> Option<usize> {
        candidates.next().filter(|(i, _)| *i == 0).map(|(i, _)| i)
    }

    /// What a reap with one of contract 1.2's reap bugs makes of `job` at `now`, with the rule
    /// and time it is ordered by (SPEC 3.3.1's order and limit still apply).
    pub fn reaped(bug: Bug, job: &Job, now: u64) -> Option<(u8, u64, End)> {
        let expired = job.phase.expired_lease(now) && bug != Bug::IgnoreExpiredLease;
        let live = matches!(job.phase, Phase::Leased { .. }) && !job.phase.expired_lease(now);
        let pending = matches!(job.phase, Phase::Pending { .. });
        let until = job.phase.available_at().unwrap_or(0);
        let past = |early: u64| job.deadline <= now.saturating_add(early);
        if bug == Bug::DropExpiredLease && expired {
            return Some((2, until, End::Dropped));
        }
        let deadline_first = match bug {
            Bug::ReapDeadlineFirst => expired || pending,
            Bug::ReapLiveLease => live,
            _ => false,
        };
        if deadline_first && past(0) {
            return Some((3, job.deadline, End::Dead(DeadReason::Deadline)));
        }
        if expired && job.cancel_requested {
            return Some((1, until, End::Dead(DeadReason::Cancelled)));
        }
        if expired && job.attempts >= job.max_attempts {
            return Some(match bug {
                Bug::RetryPastMaxAttempts if past(0) => (2, until, End::Dead(DeadReason::Deadline)),
                Bug::RetryPastMaxAttempts => (2, until, End::Pending),
                _ => (2, until, End::Dead(DeadReason::Exhausted)),
            });
        }
        let early = u64::from(bug == Bug::ReapAMillisecondEarly);
        ((expired || pending) && past(early)).then_some((3, job.deadline, End::Dead(DeadReason::Deadline)))
    }

    /// The delay with one of the formula bugs.
    pub fn delay(bug: Bug, attempt: u64, base_ms: u64, cap_ms: u64, jitter: f64) -> u64 {
        let window = crate::delay::window(attempt, base_ms, cap_ms);
        match bug {
            Bug::RoundDelay => (window as f64 * jitter).round() as u64,
            Bug::JitterBeforeCap => {
                let doubled = u128::from(base_ms) << attempt.saturating_sub(1).min(64);
                ((doubled as f64 * jitter).floor() as u64).min(cap_ms)
            }
            // Exact: the binary64 jitter is m * 2^e; floor(window * m / 2^-e) in integers;
            // with ties up, first rounded to 53 bits, halfway cases upwards.
            _ => {
                let bits = jitter.to_bits();
                let (mantissa, exponent) =
                    ((bits & ((1 << 52) - 1)) | (1 << 52), ((bits >> 52) & 0x7ff) as i32);
                if exponent == 0 {
                    return 0;
                }
                let shift = (1075 - exponent) as u32;
                let mut product = u128::from(window) * u128::from(mantissa);
                let width = 128 - product.leading_zeros();
                if bug == Bug::DelayTiesUp && width > 53 {
                    let dropped = width - 53;
                    product = ((product + (1 << (dropped - 1))) >> dropped) << dropped;
                }
                if shift >= 128 { 0 } else { (product >> shift) as u64 }
            }
        }
    }

    /// Every lease back to pending at its expiry (`restart-releases-leases`).
    pub fn release_leases(jobs: &mut [Job]) {
        for job in jobs {
            if let Phase::Leased { until, .. } = job.phase {
                job.phase = Phase::Pending { available_at: until };
            }
        }
    }

    /// Re-enqueueing resets the budget (`reenqueue-resets-budget`).
    pub fn reset_attempts(job: &mut Job) {
        job.attempts = 0;
    }

    /// `>` where the SPEC says `>=` (`retry-at-deadline`).
    pub fn past_deadline(available_at: u64, deadline: u64) -> bool {
        available_at > deadline
    }

    /// The deadline moved back by the delay (`extend-deadline-on-retry`).
    pub fn extend_deadline(job: &mut Job, delay: u64) {
        job.deadline += delay;
    }

    /// Every other job's attempts incremented (`count-attempt-on-every-job`).
    pub fn count_on_others(jobs: &mut [Job], i: usize) {
        for (j, other) in jobs.iter_mut().enumerate() {
            if j != i {
                other.attempts += 1;
            }
        }
    }

    /// The attempt given back (`rollback-attempt-on-crash`).
    pub fn give_back(job: &mut Job) {
        job.attempts -= 1;
    }

    /// A pending job claimable at `now`, or at any time before its first claim
    /// (`scheduled-claimable-early`): the schedule ignored.
    pub fn unscheduled(job: &Job, now: u64) -> bool {
        let Phase::Pending { available_at } = job.phase else { return false };
        available_at <= now || (job.attempts == 0 && job.redrives == 0)
    }

    /// Only the expired leases out of budget die (`claim-reaps-only-exhausted`): a job past its
    /// deadline stays claimable.
    pub fn reap_exhausted(jobs: &mut [Job], now: u64) {
        for job in jobs {
            if job.phase.expired_lease(now) && job.attempts >= job.max_attempts {
                job.phase = Phase::Dead(DeadReason::Exhausted);
            }
        }
    }

    /// `not_before` must be after `now`, not at it (`not-before-now-refused`).
    pub fn not_before_after_now(at: u64, now: u64, deadline: u64) -> Result<u64, Failure> {
        if at == now {
            return Err(Failure::InvalidInput { detail: "not_before: must be after now".into() });
        }
        validate::not_before(at, now, deadline)
    }

    /// Names of 256 bytes refused (`long-name-refused`).
    pub fn shorter_name(field: &str, value: &str) -> Result<(), Failure> {
        if value.len() >= 256 {
            return Err(Failure::InvalidInput { detail: format!("{field}: too long") });
        }
        Ok(())
    }

    /// An existing job rescheduled by a re-enqueue's `not_before` (`existing-reschedules`).
    pub fn reschedule(job: &mut Job, not_before: Option<u64>) {
        if let (Some(at), Phase::Pending { available_at }) = (not_before, &mut job.phase) {
            *available_at = at;
        }
    }

    /// The job's own settings only when it has both (`own-backoff-all-or-nothing`).
    pub fn all_or_nothing(job: &Job, queue: Config) -> (u64, u64) {
        match (job.base_ms, job.cap_ms) {
            (Some(base_ms), Some(cap_ms)) => (base_ms, cap_ms),
            _ => (queue.base_ms, queue.cap_ms),
        }
    }

    /// `<` where the SPEC says `<=` (`stats-strict-expiry`).
    pub fn strictly_before(until: u64, now: u64) -> bool {
        until < now
    }
}
