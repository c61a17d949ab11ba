//! The model: the reference store in a small world of a clock and a few workers.
//!
//! Layer: the world, above the store ([`crate::reference`]), the second reading
//! ([`crate::rules`]) it runs on every step and the table whose cells each step reaches
//! ([`crate::coverage`]); below the probes that judge more steps on it ([`crate::probes`]),
//! the properties judged on it ([`crate::properties`]) and the checker that searches it. It
//! may not reach up: what a world is and which steps it can take must not depend on what is
//! then asked of it, so the model keeps no list of properties and runs no search.
//!
//! A [`World`] is the store, the time, what each worker remembers holding (with the execution
//! of its attempt, which a watchdog ends at the lease's end less a margin), and ghost fields:
//! what the world knows about each job independently of the store (how often it was claimed
//! and by whom, which deadline its caller set, what the holder reported). Every [`Action`]
//! that touches the store is one SPEC section 5 operation, run by [`Store::step`]; so the
//! transitions checked are exactly the oracle's, and a path of actions is a replayable trace
//! ([`crate::trace`]).
//!
//! The world is bounded ([`Bounds`]): scenes of a few job ids, a few workers and a clock that
//! ticks one millisecond at a time up to a horizon, small settings that may change between any
//! two steps, and a handful of choices for jitter, budgets and deadlines. Its actions here are
//! the ones that move it: enqueues (some dated back), claims, completions, heartbeats,
//! crashes, cancels, redrives, switches of settings, ticks and reaps. Everything that cannot
//! move a correct store (reads, refusals, bad arguments of every class, restarts) is a probe,
//! judged on the first world of its class ([`crate::probes`]).
//!
//! Every step is judged three ways: by the properties on the world it leads to, by the
//! transition rules of [`crate::rules`] — the contract read a second time, independently of
//! the store — whose verdict the world carries for one step ([`World::broken`]), and by the
//! contract's table, whose cells it reached ([`World::reached`]).
//!
//! Symmetry: job ids are named in the order of their first enqueue (`jöb-z`, `jöb-y`, …),
//! which is the only thing that tells two ids apart (claim's tie-break), so permuting ids
//! needs no reduction. Workers are interchangeable: [`World::canonical`] sorts them.

use std::borrow::Cow;
use std::fmt;

use smallvec::SmallVec;
use stateright::Representative;

pub use crate::bounds::{
    Bounds, CAP_BELOW_BASE, DELAY_PROBES, DOUBLING, FAR, LARGEST, Lane, OTHER_QUEUE, SHAPES, Scene, Shape,
    TWO_THIRDS, Watchdog,
};
use crate::bug::Bug;
use crate::contract::Field;
use crate::coverage::{self, Reached};
pub use crate::ids::{OTHER_PAYLOAD, PAYLOAD, job_index, job_name, worker_index, worker_name};
use crate::reference::{Config, Job, Phase, Store, Tombstone};
use crate::rules::{self, Broken};
use crate::{DeadReason, Failure, Op, Outcome, Reply, Response, RunOutcome};

/// What a worker remembers of the claim it holds: what `claim` answered, and the execution of
/// its attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Held {
    /// The job's index in the world (`jöb-z` is 0).
    pub job: usize,
    /// The fencing token.
    pub attempt: u64,
    /// When the claim was made: a heartbeat moves `lease_until`, not this.
    pub claimed_at: u64,
    /// The lease's end, as the claim or the latest accepted heartbeat answered.
    pub lease_until: u64,
    /// When the watchdog ends the attempt's execution, on the store's clock: the lease's end
    /// less the margin, on a holder's clock that lags by up to the skew, so at the latest
    /// `lease_until − margin + skew`. Renewed by each accepted heartbeat while it runs. The
    /// execution is live while this is after `now`.
    pub runs_until: u64,
    /// The holder stopped the execution itself, at a heartbeat refused `cancelled` (SPEC
    /// 3.12, 6.20): an end the watchdog did not make.
    pub stopped: bool,
}

impl Held {
    /// Whether the attempt's execution is running at `now`.
    pub fn running(&self, now: u64) -> bool {
        self.runs_until > now
    }
}

/// What the holder of a job's latest claim said about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HolderReport {
    /// Nothing yet (or never claimed).
    Nothing,
    /// Its process died after the claim.
    Crashed,
    /// Its transport failed in a way it did not classify, or its clock went back.
    Unknown,
    /// It completed with this outcome (whatever the store answered).
    Completed(Outcome),
}

/// The ghost holder of a job whose latest claim's lease no longer stands in the store.
pub const NOBODY: u8 = u8::MAX;
/// The ghost holder of a lease claimed by a worker outside the world (a probe's).
pub const OUTSIDER: u8 = u8::MAX - 1;

/// Ghost fields of one job: what the world knows of it without asking the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Claims of this job the store answered: `claimed`, `crashed`, `unknown_error`,
    /// `clock_went_backwards` from `run_once`, and `run_once`'s completions.
    pub claims: u64,
    /// The deadline its caller set: at the enqueue, then at each redrive.
    pub deadline: u64,
    /// Redrives the store accepted.
    pub redrives: u64,
    /// What the holder of the latest claim reported.
    pub report: HolderReport,
    /// The end of the latest claim's lease while it is live and not yet completed, whoever
    /// holds it — a crashed holder included: the store cannot tell a dead process from a slow
    /// one, so its lease must be respected all the same (SPEC 4.5). 0 once expired or
    /// completed (cleared as the clock passes it, so it adds no states of its own).
    pub lease_until: u64,
    /// The largest `lease_ms` in effect at a claim or an accepted heartbeat of this job: the
    /// `L` of SPEC 4.11's bound `deadline − 1 + L`.
    pub longest_lease: u64,
    /// The `not_before` its enqueue asked for (its `now` when none) until its first redrive,
    /// then 0: no claim before it (SPEC 4.12).
    pub not_before: u64,
    /// An operator cancelled it (and the store answered `cancelled`), at some point.
    pub cancelled: bool,
    /// A forget removed its tombstone (SPEC 3.15): the id may be absent from the store, or a
    /// new job.
    pub forgotten: bool,
    /// This job is its id's life after a forget: enqueued anew (SPEC 3.15).
    pub revived: bool,
    /// The worker of the latest claim (its index, or [`OUTSIDER`]) while that claim's lease
    /// stands in the store; [`NOBODY`] otherwise. With `claims`, the token only it may present.
    pub holder: u8,
    /// The settings in effect at its enqueue, while they differ from those in effect now (the
    /// world switched them since): what its retries must no longer use (SPEC 3.11, 6.23).
    pub enqueued_under: Option<Config>,
    /// An operator's `run_now` made it due, at some point (SPEC 3.18).
    pub made_due: bool,
}

/// Things the last step did, for the properties about transitions. Cleared at every step, so
/// they cost states only where they happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Events(u64);

impl Events {
    /// A claim at or after the caller's deadline, or with no budget left.
    pub const LATE_CLAIM: Events = Events(1);
    /// A completion or a heartbeat by anyone but the holder of the latest claim (an old
    /// token, or the current token presented by another worker) changed the store.
    pub const STALE_CHANGED: Events = Events(1 << 1);
    /// An operation refused with an error changed the store.
    pub const REFUSAL_CHANGED: Events = Events(1 << 2);
    /// A retry whose `now + delay` (delay > 0) was exactly the deadline ended dead(deadline).
    pub const EXACT_DEADLINE_DEATH: Events = Events(1 << 3);
    /// A completion with a token older than the job's latest claim was refused `lease_lost`.
    pub const STALE_REJECTED: Events = Events(1 << 4);
    /// The holder completed after its lease had expired, and the store accepted it.
    pub const LATE_ACCEPTED: Events = Events(1 << 5);
    /// A claim took a job whose latest lease was still live.
    pub const LEASE_STOLEN: Events = Events(1 << 6);
    /// A completion dated before its claim was refused `clock_went_backwards`.
    pub const CLOCK_BACK_REFUSED: Events = Events(1 << 7);
    /// `run_once` whose second clock reading went back reported `clock_went_backwards`.
    pub const RUN_ONCE_CLOCK_BACK: Events = Events(1 << 8);
    /// Another worker presenting the holder's current token was refused `lease_lost`.
    pub const WRONG_OWNER_REFUSED: Events = Events(1 << 9);
    /// A job dead by its deadline was redriven.
    pub const REDRIVE_AFTER_DEADLINE: Events = Events(1 << 10);
    /// A retry was scheduled where binary64 and exact arithmetic floor differently.
    pub const BINARY64_EDGE: Events = Events(1 << 11);
    /// A retry with a delay was scheduled under a cap below the base.
    pub const CAP_BELOW_BASE_RETRY: Events = Events(1 << 12);
    /// A restart while a lease was live.
    pub const RESTART_WITH_LEASE: Events = Events(1 << 13);
    /// A bad argument naming a job that does not exist was refused `invalid_input`.
    pub const INVALID_BEFORE_LOOKUP: Events = Events(1 << 14);
    /// A claim chose between jobs due at the same time.
    pub const TIE_BROKEN: Events = Events(1 << 15);
    /// A claim took a job enqueued after another claimable one, because it was due earlier.
    pub const EARLIER_DUE_FIRST: Events = Events(1 << 16);
    /// A job whose holder crashed was claimed again once its lease expired.
    pub const CRASHED_RECLAIMED: Events = Events(1 << 17);
    /// A claim took a job before the `not_before` of its enqueue, with no redrive since.
    pub const EARLY_CLAIM: Events = Events(1 << 18);
    /// A heartbeat was accepted at `deadline − 1`, the last instant it can be.
    pub const HEARTBEAT_LAST_INSTANT: Events = Events(1 << 19);
    /// The holder's heartbeat at exactly the deadline was refused `deadline_passed`.
    pub const HEARTBEAT_AT_DEADLINE_REFUSED: Events = Events(1 << 20);
    /// A scheduled job was first claimed at exactly its `not_before`.
    pub const SCHEDULED_ON_TIME: Events = Events(1 << 21);
    /// A retry of a job with backoff settings of its own waited a delay the queue's settings
    /// would not give.
    pub const OWN_BACKOFF_RETRY: Events = Events(1 << 22);
    /// A heartbeat with a stale token (an older attempt, or another worker) was refused.
    pub const STALE_HEARTBEAT_REFUSED: Events = Events(1 << 23);
    /// A claim broke a tie between two jobs whose `enqueued_at` order is not their order of
    /// first enqueue (one was enqueued dated back).
    pub const BACKDATED_TIE: Events = Events(1 << 24);
    /// A job whose attempt's execution the watchdog ended, its holder still holding it, was
    /// claimed again.
    pub const WATCHDOG_CUT_RECLAIMED: Events = Events(1 << 25);
    /// A retry waited under settings switched since the job's enqueue.
    pub const SWITCHED_SETTINGS_RETRY: Events = Events(1 << 26);
    /// A claim's or a heartbeat's lease ends past 2^53 − 1 (SPEC 6.10).
    pub const LEASE_PAST_MAX_INT: Events = Events(1 << 27);
    /// A claim took a job of priority 0 while one of a lower priority, due no later, waited
    /// (SPEC 3.3.2, 4.8).
    pub const PRIORITY_FIRST: Events = Events(1 << 28);
    /// A claim took a job while passing over a claimable job of a queue it does not serve
    /// (SPEC 3.3.2).
    pub const QUEUE_PASSED_OVER: Events = Events(1 << 29);
    /// A job whose holder was asked to stop ended (SPEC 3.13).
    pub const RUNNING_CANCELLED: Events = Events(1 << 30);
    /// An enqueue of a pruned id was answered `existing` from its tombstone (SPEC 3.14).
    pub const PRUNED_REENQUEUED: Events = Events(1 << 31);
    /// A job with a cancel request was claimed again or went back to pending (SPEC 4.13).
    pub const CANCEL_IGNORED: Events = Events(1 << 32);
    /// A tombstone's id became a job again without a forget (SPEC 4.14).
    pub const TOMBSTONE_REVIVED: Events = Events(1 << 33);
    /// A forgotten id was enqueued anew as a new job (SPEC 3.15).
    pub const FORGOTTEN_ENQUEUED: Events = Events(1 << 34);
    /// A reap (a claim's, `run_once`'s or `reap`'s) ended more jobs than `reap_limit`, or
    /// fewer while it left a job due to end (SPEC 3.3.1, 6.27, 6.37).
    pub const REAP_UNBOUNDED: Events = Events(1 << 35);
    /// A reap ended `reap_limit` jobs and left another due to end (SPEC 6.37).
    pub const REAP_STOPPED_AT_LIMIT: Events = Events(1 << 36);
    /// A claim took a job, passing over one of its queues due to end that its reap left
    /// (SPEC 3.3.2, 6.37).
    pub const PICK_PASSED_DUE: Events = Events(1 << 37);
    /// A prune removed a job that lived again after a forget and was redriven in its new life
    /// (SPEC 3.14, 3.15).
    pub const LIVED_AGAIN: Events = Events(1 << 38);
    /// A claim took a job of a queue the world paused and has not resumed since (SPEC 4.15).
    pub const PAUSED_CLAIMED: Events = Events(1 << 39);
    /// A claim took a job before its `not_before`, made due by a `run_now` (SPEC 4.12: the
    /// operator's say replaces the schedule).
    pub const RUN_NOW_CLAIMED: Events = Events(1 << 40);

    /// Whether this set holds `event`.
    pub fn contains(self, event: Events) -> bool {
        self.0 & event.0 != 0
    }

    fn insert(&mut self, event: Events) {
        self.0 |= event.0;
    }
}

/// The workers' memories, by worker index: inline, so copying a world allocates nothing.
pub type Workers = SmallVec<[Option<Held>; 2]>;
/// The ghost fields, by job index: inline likewise.
pub type Ghosts = SmallVec<[Ghost; 2]>;
/// Job indices in the order of their ids' first enqueues (SPEC 6.1): a forgotten id leaves it,
/// and enqueued anew goes last (3.15).
pub type Order = SmallVec<[u8; 3]>;

/// One state of the world. Two worlds that differ only in what the step into them did
/// (`events`, `broken`, `reached`) are the same state: equal, with the same hash. The checker
/// judges those fields on every step it takes, before it asks whether the state is new.
#[derive(Clone, Debug)]
pub struct World {
    /// The world's clock: every operation is dated by it.
    pub now: u64,
    /// The scene this world belongs to: its index in [`Bounds::scenes`].
    pub scene: u8,
    /// The store under test (the reference store, or one with a seeded bug).
    pub store: Store,
    /// The settings this world configured, as the world (not the store) knows them.
    pub config: Config,
    /// What each worker holds, by worker index.
    pub workers: Workers,
    /// One per job enqueued, by job index.
    pub ghosts: Ghosts,
    /// The order of first enqueues, as the world knows it.
    pub order: Order,
    /// What the step into this state did.
    pub events: Events,
    /// The transition rules ([`crate::rules`]) the step into this state broke.
    pub broken: Broken,
    /// The cells of the contract's table the step into this state reached.
    pub reached: Reached,
    /// Whether the world may prune (its scene's [`Scene::retention`]): only then does a job's
    /// `ended_at` make the state (see [`World::job_keys`]).
    pub prunes: bool,
    /// The queues the world paused and has not resumed since, as it knows them (bit 0 the
    /// default queue, bit 1 [`OTHER_QUEUE`]): what SPEC 4.15 holds the store to.
    pub paused: u8,
}

/// The fields of a world that make its state, but the store's jobs ([`World::job_keys`]).
type StateKey<'a> =
    (u64, u8, Config, &'a [Tombstone], &'a Config, &'a [Option<Held>], &'a [Ghost], &'a [u8], u8);

impl World {
    /// The fields that make the state: everything but what the last step did, and the store
    /// but its jobs (see [`World::job_keys`]).
    fn state(&self) -> StateKey<'_> {
        (
            self.now,
            self.scene,
            self.store.config(),
            self.store.tombstones(),
            &self.config,
            &self.workers,
            &self.ghosts,
            &self.order,
            self.paused,
        )
    }

    /// The names the store holds paused, without the time of each pause: no answer depends
    /// on that time (SPEC 3.16), so two worlds that differ only in it are one state.
    fn paused_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.store.paused().iter().map(|(name, _)| &**name)
    }

    /// Where `id` stands in the order of first enqueues (SPEC 6.1), as the world knows it:
    /// what the rules break claim's and the reap's ties by, independently of the store.
    pub fn first_enqueue(&self, id: &str) -> Option<usize> {
        let job = job_index(id)?;
        self.order.iter().position(|&j| usize::from(j) == job)
    }

    /// Each job as a state, its `ended_at` abstracted: in a world that never prunes, left
    /// out; in one that does, collapsed to `now − 1` when older, since every prune the world
    /// makes from here on has a `before` of at least `now − 1` (the clock only moves on) and
    /// none tells those apart. Only `get` shows the difference, and a world reached with one
    /// value is judged as the one first reached with another (docs/model.md).
    fn job_keys(&self) -> impl Iterator<Item = impl std::hash::Hash + Eq + '_> {
        let floor = if self.prunes { self.now.saturating_sub(1) } else { u64::MAX };
        self.store.jobs().iter().map(move |job| {
            let Job {
                id,
                payload,
                phase,
                attempts,
                max_attempts,
                deadline,
                redrives,
                enqueued_at,
                not_before,
                base_ms,
                cap_ms,
                queue,
                priority,
                ended_at,
                cancel_requested,
                kind,
            } = job;
            (
                (id, payload, phase, attempts, max_attempts, deadline, redrives),
                (enqueued_at, not_before, base_ms, cap_ms, queue, priority),
                (ended_at.map(|at| at.max(floor)), cancel_requested, kind),
            )
        })
    }
}

impl PartialEq for World {
    fn eq(&self, other: &World) -> bool {
        self.state() == other.state()
            && self.store.jobs().len() == other.store.jobs().len()
            && self.job_keys().zip(other.job_keys()).all(|(a, b)| a == b)
            && self.paused_names().eq(other.paused_names())
    }
}

impl Eq for World {}

impl std::hash::Hash for World {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.state().hash(state);
        self.store.jobs().len().hash(state);
        for key in self.job_keys() {
            key.hash(state);
        }
        for name in self.paused_names() {
            name.hash(state);
        }
    }
}

/// When an enqueue of the world is dated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dated {
    /// At the clock.
    Now,
    /// One millisecond before the clock, and scheduled at it: due with a job enqueued at the
    /// clock, with an earlier `enqueued_at` (SPEC 6.1).
    Back,
    /// [`FAR`] before the clock: due since long before any other job.
    Far,
}

/// One step of the world.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Enqueue the next new id with this budget and a deadline `deadline_in` ms after the
    /// enqueue's `now` (the clock's, when dated far back), and (the first job only) a SPEC
    /// 1.1 shape, dated as `dated` says.
    Enqueue {
        /// The attempt budget.
        max_attempts: u64,
        /// How far ahead of the enqueue's `now` the deadline lies.
        deadline_in: u64,
        /// The SPEC 1.1 shape of the enqueue; `None` for a 1.0 enqueue.
        shape: Option<Shape>,
        /// When its `now` is.
        dated: Dated,
        /// Its queue and priority.
        lane: Lane,
    },
    /// An idle worker claims.
    Claim {
        /// The worker's index.
        worker: usize,
    },
    /// A worker completes the claim it holds, whether or not it is still the holder.
    Complete {
        /// The worker's index.
        worker: usize,
        /// The outcome it reports.
        outcome: Outcome,
        /// The jitter draw for a retry; `None` when none can follow.
        jitter: Option<f64>,
    },
    /// The holder heartbeats its claim at the current time, while its attempt runs.
    Heartbeat {
        /// The holder's index.
        worker: usize,
    },
    /// A worker holding a claim dies: it forgets the claim, its attempt's execution ends at
    /// once (its watchdog sees it go), the store keeps the lease.
    Crash {
        /// The worker's index.
        worker: usize,
    },
    /// An idle worker's `run_once` whose transport fails unclassified (`unknown`) or whose
    /// process dies after the claim (`crash`): either way it holds nothing afterwards and the
    /// job stays leased until its lease expires.
    RunOnce {
        /// The worker's index.
        worker: usize,
        /// `unknown` or `crash`.
        outcome: RunOutcome,
    },
    /// An idle worker's `run_once` whose second clock reading is one millisecond before the
    /// first (transport `ok`): `clock_went_backwards`, the claim stands.
    RunOnceClockBack {
        /// The worker's index.
        worker: usize,
    },
    /// The clock advances one millisecond.
    Tick,
    /// `reap` at the current time.
    Reap,
    /// The operator redrives job `job`.
    Redrive {
        /// The job's index.
        job: usize,
    },
    /// The operator cancels job `job` (pending: it ends; leased: its holder is asked to stop).
    Cancel {
        /// The job's index.
        job: usize,
    },
    /// A caller enqueues job `job` again after a forget removed its tombstone (SPEC 3.15): a
    /// new job, with the smallest budget and the nearest deadline.
    Reenqueue {
        /// The job's index.
        job: usize,
    },
    /// The operator prunes the jobs ended `lag` ms before now or earlier (SPEC 3.14): with a
    /// lag of 1, a job that ended just now stays.
    Prune {
        /// How far `before` is behind the clock: 0 or 1.
        lag: u64,
    },
    /// The operator forgets the tombstones of jobs ended `lag` ms before now or earlier
    /// (SPEC 3.15).
    Forget {
        /// How far `before` is behind the clock: 0 or 1.
        lag: u64,
    },
    /// The world changes its settings to another of its scene's.
    Configure {
        /// The settings.
        to: Config,
    },
    /// The operator pauses a queue the world has not paused (SPEC 3.16).
    Pause {
        /// The queue's index: 0 the default queue, 1 [`OTHER_QUEUE`].
        queue: u8,
    },
    /// The operator resumes a queue the world paused (SPEC 3.17).
    Resume {
        /// The queue's index, as in [`Action::Pause`].
        queue: u8,
    },
    /// The operator makes job `job`, pending and not yet due, due now (SPEC 3.18).
    RunNow {
        /// The job's index.
        job: usize,
    },
    /// A probe ([`crate::probes`]): one operation, judged on the first world of its class and
    /// never explored further.
    Probe {
        /// The operation.
        op: Op,
        /// The field an argument probe gives a representative of its class (the others keep
        /// the valid values of [`crate::probes`]' base operation): the only cell of the
        /// argument table the step counts toward. `None` for the other probes.
        varies: Option<Field>,
    },
}

impl fmt::Display for Action {
    /// The action in a few words, naming workers and jobs as traces do (`wé1`, `jöb-z`), not
    /// by their index in the world.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = |worker: usize| worker_name(worker);
        let lower = |name: String| name.to_lowercase();
        match self {
            Action::Enqueue { max_attempts, deadline_in, shape, dated, lane } => {
                write!(f, "enqueue a new job: max_attempts {max_attempts}, deadline now+{deadline_in}")?;
                match lane {
                    Lane::Default => {}
                    Lane::OtherQueue => write!(f, ", queue {OTHER_QUEUE}")?,
                    Lane::Low => f.write_str(", priority 1")?,
                    Lane::OtherLow => write!(f, ", queue {OTHER_QUEUE}, priority 1")?,
                }
                match dated {
                    Dated::Now => {}
                    Dated::Back => f.write_str(", dated 1 ms back, not before now")?,
                    Dated::Far => write!(f, ", dated {FAR} ms back")?,
                }
                match shape {
                    None => Ok(()),
                    Some(Shape::Scheduled { after }) => write!(f, ", not before now+{after}"),
                    Some(Shape::Own { base_ms, cap_ms }) => {
                        write!(f, ", its own base_ms {base_ms:?} and cap_ms {cap_ms:?}")
                    }
                }
            }
            Action::Claim { worker } => write!(f, "{} claims", w(*worker)),
            Action::Complete { worker, outcome, jitter: None } => {
                write!(f, "{} completes {}", w(*worker), lower(format!("{outcome:?}")))
            }
            Action::Complete { worker, outcome, jitter: Some(jitter) } => {
                write!(f, "{} completes {}, jitter {jitter}", w(*worker), lower(format!("{outcome:?}")))
            }
            Action::Crash { worker } => write!(f, "{} crashes", w(*worker)),
            Action::RunOnce { worker, outcome } => {
                write!(f, "{} run_once, transport {}", w(*worker), lower(format!("{outcome:?}")))
            }
            Action::RunOnceClockBack { worker } => write!(f, "{} run_once, clock goes back", w(*worker)),
            Action::Tick => f.write_str("tick"),
            Action::Reap => f.write_str("reap"),
            Action::Redrive { job } => write!(f, "redrive {}", job_name(*job)),
            Action::Heartbeat { worker } => write!(f, "{} heartbeats", w(*worker)),
            Action::Cancel { job } => write!(f, "cancel {}", job_name(*job)),
            Action::Reenqueue { job } => write!(f, "enqueue forgotten {} anew", job_name(*job)),
            Action::Prune { lag } => write!(f, "prune what ended by now-{lag}"),
            Action::Forget { lag } => write!(f, "forget what ended by now-{lag}"),
            Action::Configure { to } => {
                write!(
                    f,
                    "config base {} cap {} lease {} reap limit {}",
                    to.base_ms, to.cap_ms, to.lease_ms, to.reap_limit
                )
            }
            Action::Pause { queue } => write!(f, "pause {}", queue_name(*queue)),
            Action::Resume { queue } => write!(f, "resume {}", queue_name(*queue)),
            Action::RunNow { job } => write!(f, "run_now {}", job_name(*job)),
            Action::Probe { op, .. } => write!(f, "probe {}", op.to_json_line()),
        }
    }
}

/// The bounded world, checking the store with `bug` (none by default).
#[derive(Clone, Debug, Default)]
pub struct QueueModel {
    /// How far the world may go: scenes, jobs, workers, attempts, time.
    pub bounds: Bounds,
    /// A seeded bug the store (or the watchdog) makes, for checking that the checker finds it.
    pub bug: Option<Bug>,
    /// Whether each step leads to the representative of the world it reaches
    /// ([`World::canonical`]) rather than to that world itself: symmetry reduction for a
    /// search that has none of its own (stateright's Explorer, whose checker ignores
    /// stateright's `symmetry` option). The checker of [`crate::checker`] reduces by
    /// fingerprint instead and keeps the worlds it reaches, so its paths name the workers
    /// that acted; both merge exactly the same worlds.
    pub representatives: bool,
}

impl QueueModel {
    /// The model of `bounds` with `bug`, stepping to the worlds themselves.
    pub fn new(bounds: Bounds, bug: Option<Bug>) -> QueueModel {
        QueueModel { bounds, bug, representatives: false }
    }

    /// The same model, stepping to representatives (see [`QueueModel::representatives`]).
    pub fn stepping_to_representatives(self) -> QueueModel {
        QueueModel { representatives: true, ..self }
    }

    /// The scene of `world`.
    pub fn scene(&self, world: &World) -> &Scene {
        let scenes = &self.bounds.scenes;
        scenes.get(usize::from(world.scene)).or(scenes.first()).unwrap_or_else(|| default_scene())
    }

    /// The world `action` leads to from `world`: [`QueueModel::step`]'s, or its representative
    /// if this model steps to representatives.
    pub fn next_world(&self, world: &World, action: &Action) -> Option<World> {
        let (next, _) = self.step(world, action)?;
        if !self.representatives {
            return Some(next);
        }
        let renumbered = match next.canonical() {
            Cow::Owned(representative) => Some(representative),
            Cow::Borrowed(_) => None,
        };
        Some(renumbered.unwrap_or(next))
    }

    /// The queues a worker names in its claims: its scene's ([`Scene::served`]); none (the
    /// default queue) where the scene names none.
    fn queues_of(&self, world: &World, _worker: usize) -> Option<Vec<String>> {
        let served = &self.scene(world).served;
        (!served.is_empty()).then(|| served.iter().map(|&q| q.to_owned()).collect())
    }

    /// The `config` line that sets `config`: every trace starts with its world's.
    pub fn config_op(config: Config) -> Op {
        Op::Config {
            base_ms: Some(config.base_ms),
            cap_ms: Some(config.cap_ms),
            lease_ms: Some(config.lease_ms),
            reap_limit: Some(config.reap_limit),
        }
    }

    /// When the watchdog of an attempt whose lease ends at `lease_until` ends its execution,
    /// on the store's clock: at the lease's end less the margin on the holder's clock, which
    /// lags by up to the skew (with a seeded watchdog bug, otherwise).
    fn watchdog_fires(&self, lease_until: u64) -> u64 {
        let Watchdog { margin, skew } = self.bounds.watchdog;
        match self.bug {
            Some(Bug::NoWatchdog) => u64::MAX,
            Some(Bug::MarginBelowSkew) => (lease_until + skew).saturating_sub(skew.saturating_sub(1)),
            _ => (lease_until + skew).saturating_sub(margin),
        }
    }

    /// The operation `action` runs in `world`, if it runs one (a tick does not; a completion
    /// needs a held claim).
    pub fn op(&self, world: &World, action: &Action) -> Option<Op> {
        let now = world.now;
        let held = |worker: usize| world.workers.get(worker).copied().flatten();
        Some(match action {
            Action::Enqueue { max_attempts, deadline_in, shape, dated, lane } => {
                let (queue, priority) = lane.fields();
                let clock = now;
                // Dated back, it is scheduled at the clock: due with the job enqueued at the
                // clock, first enqueued after it, with an earlier `enqueued_at`. Dated far back,
                // it has been due since then, and its deadline is the clock's.
                let (now, scheduled) = match dated {
                    Dated::Now => (now, None),
                    Dated::Back => (now.checked_sub(1)?, Some(now)),
                    Dated::Far => (now.checked_sub(FAR)?, None),
                };
                let deadline_from = if *dated == Dated::Far { clock } else { now };
                let (not_before, base_ms, cap_ms) = Shape::fields(*shape, now);
                let not_before = scheduled.or(not_before);
                Op::Enqueue {
                    priority,
                    queue,
                    id: job_name(world.ghosts.len()),
                    payload: PAYLOAD.into(),
                    max_attempts: *max_attempts,
                    deadline: deadline_from + deadline_in,
                    now,
                    not_before,
                    base_ms,
                    cap_ms,
                    kind: None,
                }
            }
            Action::Claim { worker } => {
                Op::Claim { queues: self.queues_of(world, *worker), worker: worker_name(*worker), now }
            }
            Action::Complete { worker, outcome, jitter } => {
                let held = held(*worker)?;
                Op::Complete {
                    worker: worker_name(*worker),
                    id: job_name(held.job),
                    attempt: held.attempt,
                    outcome: *outcome,
                    now,
                    jitter: *jitter,
                }
            }
            Action::Heartbeat { worker } => {
                let held = held(*worker)?;
                Op::Heartbeat {
                    worker: worker_name(*worker),
                    id: job_name(held.job),
                    attempt: held.attempt,
                    now,
                }
            }
            Action::Crash { .. } | Action::Tick => return None,
            Action::RunOnce { worker, outcome } => Op::RunOnce {
                queues: self.queues_of(world, *worker),
                worker: worker_name(*worker),
                now,
                after: None,
                outcome: *outcome,
                jitter: None,
            },
            Action::RunOnceClockBack { worker } => Op::RunOnce {
                queues: self.queues_of(world, *worker),
                worker: worker_name(*worker),
                now,
                after: Some(now.checked_sub(1)?),
                outcome: RunOutcome::Ok,
                jitter: None,
            },
            Action::Reap => Op::Reap { now },
            Action::Redrive { job } => Op::Redrive {
                id: job_name(*job),
                now,
                add_attempts: self.bounds.add_attempts,
                deadline: now + self.bounds.redrive_deadline,
            },
            Action::Cancel { job } => Op::Cancel { id: job_name(*job), now },
            Action::Reenqueue { job } => Op::Enqueue {
                priority: None,
                queue: None,
                id: job_name(*job),
                payload: PAYLOAD.into(),
                max_attempts: *self.bounds.budgets(self.scene(world)).iter().min()?,
                deadline: now + *self.bounds.deadlines_in(self.scene(world)).iter().min()?,
                now,
                not_before: None,
                base_ms: None,
                cap_ms: None,
                kind: None,
            },
            Action::Prune { lag } => Op::Prune { before: now.checked_sub(*lag)?, now },
            Action::Forget { lag } => Op::Forget { before: now.checked_sub(*lag)?, now },
            Action::Configure { to } => QueueModel::config_op(*to),
            Action::Pause { queue } => Op::Pause { queue: queue_name(*queue).into(), now },
            Action::Resume { queue } => Op::Resume { queue: queue_name(*queue).into(), now },
            Action::RunNow { job } => Op::RunNow { id: job_name(*job), now },
            Action::Probe { op, .. } => op.clone(),
        })
    }

    /// The step: the next world and, if the action ran an operation, it and its response.
    pub fn step(&self, world: &World, action: &Action) -> Option<(World, Option<(Op, Response)>)> {
        let mut next = world.clone();
        next.events = Events::default();
        next.broken = Broken::NONE;
        next.reached = Reached::default();
        match *action {
            Action::Tick => {
                if world.now >= self.scene(world).end() {
                    return None;
                }
                next.now += 1;
                next.normalize();
                return Some((next, None));
            }
            Action::Crash { worker } => {
                next.workers.get_mut(worker)?.take()?;
                return Some((next, None));
            }
            _ => {}
        }
        let op = self.op(world, action)?;
        let response = next.store.step(&op);
        let first = |id: &str| world.first_enqueue(id);
        next.broken = rules::judge(&world.store, &op, &response, &next.store, &first);
        let mut reached = Reached::default();
        coverage::cells(&world.store, &op, &response, &next.store, world.now, &mut |cell| {
            reached.insert(cell)
        });
        let varies = match action {
            Action::Probe { varies, .. } => *varies,
            _ => None,
        };
        coverage::arg_cells(&op, &response, varies, &mut reached);
        coverage::choices(&world.store, &op, &response, &next.store, &first, &mut |choice| {
            reached.insert_choice(choice)
        });
        next.reached = reached;
        self.observe(world, action, &op, &response, &mut next);
        next.normalize();
        Some((next, Some((op, response))))
    }

    /// Updates the workers' memories and the ghost fields from what the operation answered.
    /// The ghosts follow the operation and its answer, whichever action (or probe) ran it; a
    /// worker's memory follows only its own actions.
    fn observe(&self, before: &World, action: &Action, op: &Op, response: &Response, next: &mut World) {
        // `run_once`'s `unknown_error` and `clock_went_backwards` report on a claim that
        // applied; every other error is a refusal.
        let refused = matches!(response, Response::Err(f) if !matches!(f, Failure::UnknownError { .. } | Failure::RanClockWentBackwards { .. }));
        if refused && next.store != before.store {
            next.events.insert(Events::REFUSAL_CHANGED);
        }
        if matches!(response, Response::Err(Failure::InvalidInput { .. }))
            && op.id().is_some_and(|id| before.store.job(id).is_none())
        {
            next.events.insert(Events::INVALID_BEFORE_LOOKUP);
        }
        if let (&Op::Claim { queues: Some(ref queues), now, .. }, Response::Ok(reply)) = (op, response) {
            self.lane_events(before, queues, now, reply, next);
        }
        if let Some(now) = reaps_at(op, response) {
            reap_events(before, op, now, response, next);
        }
        let ignored = before.store.jobs().iter().filter(|b| b.cancel_requested).any(|b| {
            // Claimed again (a claim counts an attempt), or put back to wait for one.
            next.store
                .job(&b.id)
                .is_some_and(|a| a.attempts != b.attempts || matches!(a.phase, Phase::Pending { .. }))
        });
        if ignored {
            next.events.insert(Events::CANCEL_IGNORED);
        }
        if before.store.tombstones().iter().any(|t| next.store.job(&t.id).is_some()) {
            next.events.insert(Events::TOMBSTONE_REVIVED);
        }
        let stopped = before.store.jobs().iter().any(|b| {
            b.cancel_requested
                && next.store.job(&b.id).is_some_and(|a| matches!(a.phase, Phase::Done | Phase::Dead(_)))
        });
        if stopped {
            next.events.insert(Events::RUNNING_CANCELLED);
        }
        if let (Op::Enqueue { id, .. }, Response::Ok(Reply::Existing)) = (op, response)
            && before.store.tombstone(id).is_some()
        {
            next.events.insert(Events::PRUNED_REENQUEUED);
        }
        match (op, response) {
            (Op::Restart, _)
                if before.store.jobs().iter().any(|j| matches!(j.phase, Phase::Leased { .. })) =>
            {
                next.events.insert(Events::RESTART_WITH_LEASE);
            }
            // An id outside the world's naming (a probe's) has no ghost: nothing follows it.
            (&Op::Enqueue { ref id, deadline, now, not_before, .. }, Response::Ok(Reply::Enqueued))
                if job_index(id).is_some_and(|i| i <= next.ghosts.len()) =>
            {
                let fresh = Ghost {
                    claims: 0,
                    deadline,
                    redrives: 0,
                    report: HolderReport::Nothing,
                    lease_until: 0,
                    longest_lease: 0,
                    not_before: not_before.unwrap_or(now),
                    cancelled: false,
                    forgotten: false,
                    revived: false,
                    holder: NOBODY,
                    enqueued_under: None,
                    made_due: false,
                };
                // A forgotten id enqueued anew is a new job: its ghost starts over (SPEC 3.15),
                // and it goes last in the order of first enqueues.
                let job = job_index(id).unwrap_or(0);
                match next.ghosts.get_mut(job) {
                    Some(ghost) => {
                        if ghost.forgotten {
                            next.events.insert(Events::FORGOTTEN_ENQUEUED);
                        }
                        *ghost = Ghost { revived: ghost.forgotten, ..fresh };
                    }
                    None => next.ghosts.push(fresh),
                }
                next.order.retain(|j| usize::from(*j) != job);
                next.order.push(job as u8);
            }
            (Op::Prune { .. }, Response::Ok(Reply::Pruned { .. })) => {
                let again = before.store.jobs().iter().any(|j| {
                    next.store.job(&j.id).is_none()
                        && job_index(&j.id)
                            .and_then(|i| next.ghosts.get(i))
                            .is_some_and(|g| g.revived && g.redrives > 0)
                });
                if again {
                    next.events.insert(Events::LIVED_AGAIN);
                }
            }
            (Op::Forget { .. }, Response::Ok(Reply::Forgotten { .. })) => {
                for tombstone in before.store.tombstones() {
                    if next.store.tombstone(&tombstone.id).is_none()
                        && let Some(job) = job_index(&tombstone.id)
                        && let Some(ghost) = next.ghosts.get_mut(job)
                    {
                        ghost.forgotten = true;
                        next.order.retain(|j| usize::from(*j) != job);
                    }
                }
            }
            (Op::Pause { queue, .. }, Response::Ok(Reply::Paused)) => next.paused |= queue_bit(queue),
            (Op::Resume { queue, .. }, Response::Ok(Reply::Resumed)) => next.paused &= !queue_bit(queue),
            // The operator's say replaces the schedule (SPEC 4.12).
            (Op::RunNow { id, .. }, Response::Ok(Reply::Due { .. })) => {
                if let Some(ghost) = job_index(id).and_then(|job| next.ghosts.get_mut(job)) {
                    ghost.not_before = 0;
                    ghost.made_due = true;
                }
            }
            (Op::Cancel { id, .. }, Response::Ok(Reply::Cancelled)) => {
                if let Some(ghost) = job_index(id).and_then(|job| next.ghosts.get_mut(job)) {
                    ghost.cancelled = true;
                }
            }
            (&Op::Redrive { ref id, deadline, .. }, Response::Ok(Reply::Redriven)) => {
                if before.store.job(id).is_some_and(|j| j.phase == Phase::Dead(DeadReason::Deadline)) {
                    next.events.insert(Events::REDRIVE_AFTER_DEADLINE);
                }
                if let Some(ghost) = job_index(id).and_then(|job| next.ghosts.get_mut(job)) {
                    ghost.deadline = deadline;
                    ghost.redrives += 1;
                    // The operator's say replaces the schedule (SPEC 4.12).
                    ghost.not_before = 0;
                }
            }
            (Op::Config { .. }, Response::Ok(Reply::Config)) => {
                if let Action::Configure { to } = action {
                    next.config = *to;
                    for ghost in &mut next.ghosts {
                        let under = ghost.enqueued_under.unwrap_or(before.config);
                        ghost.enqueued_under = Some(under).filter(|&under| under != *to);
                    }
                }
            }
            (
                &Op::Claim { queues: _, ref worker, now },
                Response::Ok(Reply::Claimed { id, attempt, lease_until }),
            ) => {
                let job = self.claimed(before, id, worker, now, *lease_until, next);
                if let (Some(job), Action::Claim { worker }) = (job, action)
                    && let Some(slot) = next.workers.get_mut(*worker)
                {
                    *slot = Some(Held {
                        job,
                        attempt: *attempt,
                        claimed_at: before.now,
                        lease_until: *lease_until,
                        runs_until: self.watchdog_fires(*lease_until),
                        stopped: false,
                    });
                }
            }
            (&Op::RunOnce { queues: _, ref worker, now, after, outcome, jitter }, response) => {
                self.ran(before, worker, now, after.unwrap_or(now), outcome, jitter, response, next);
            }
            (&Op::Complete { ref worker, ref id, attempt, outcome, now, jitter }, response) => {
                if let Action::Complete { worker, .. } = action
                    && let Some(slot) = next.workers.get_mut(*worker)
                {
                    *slot = None;
                }
                self.completed(before, worker, id, attempt, outcome, now, jitter, response, next);
            }
            (&Op::Heartbeat { ref worker, ref id, attempt, now }, response) => {
                // A cancel request: the holder stops its attempt at once (SPEC 3.12, 6.20),
                // and reports it later like any other.
                if matches!(response, Response::Err(Failure::Cancelled))
                    && let Action::Heartbeat { worker } = action
                    && let Some(Some(held)) = next.workers.get_mut(*worker)
                    && held.running(before.now)
                {
                    held.runs_until = before.now;
                    held.stopped = true;
                }
                let extended = self.heartbeat_seen(before, worker, id, attempt, now, response, next);
                if let (Some(lease_until), Action::Heartbeat { worker }) = (extended, action)
                    && let Some(Some(held)) = next.workers.get_mut(*worker)
                {
                    held.lease_until = lease_until;
                    if held.running(before.now) && self.bug != Some(Bug::WatchdogNotRenewed) {
                        held.runs_until = self.watchdog_fires(lease_until);
                    }
                }
            }
            _ => {}
        }
    }

    /// Bookkeeping for a claim of job `id` by `worker` at `now` the store answered, with a
    /// lease until `lease_until`: returns the job's index.
    fn claimed(
        &self,
        before: &World,
        id: &str,
        worker: &str,
        now: u64,
        lease_until: u64,
        next: &mut World,
    ) -> Option<usize> {
        let job = job_index(id)?;
        self.claim_events(before, job, now, next);
        // SPEC 4.15: no claim takes a job of a queue paused and not resumed since, by the
        // world's own account of the pauses (not the store's).
        if before.store.job(id).is_some_and(|j| before.paused & queue_bit(&j.queue) != 0) {
            next.events.insert(Events::PAUSED_CLAIMED);
        }
        if lease_until > crate::MAX_INT {
            next.events.insert(Events::LEASE_PAST_MAX_INT);
        }
        if before.workers.iter().flatten().any(|held| held.job == job && !held.running(now)) {
            next.events.insert(Events::WATCHDOG_CUT_RECLAIMED);
        }
        let ghost = next.ghosts.get_mut(job)?;
        let budget = before.store.job(id).map_or(0, |j| j.max_attempts);
        if now >= ghost.deadline || ghost.claims >= budget {
            next.events.insert(Events::LATE_CLAIM);
        }
        if ghost.lease_until > now {
            next.events.insert(Events::LEASE_STOLEN);
        }
        if ghost.report == HolderReport::Crashed {
            next.events.insert(Events::CRASHED_RECLAIMED);
        }
        if now < ghost.not_before {
            next.events.insert(Events::EARLY_CLAIM);
        }
        let scheduled_for = before.store.job(id).map_or(0, |j| j.not_before);
        if ghost.made_due && ghost.redrives == 0 && now < scheduled_for {
            next.events.insert(Events::RUN_NOW_CLAIMED);
        }
        let scheduled = before.store.job(id).is_some_and(|j| j.not_before > j.enqueued_at);
        if scheduled && ghost.claims == 0 && ghost.redrives == 0 && now == ghost.not_before {
            next.events.insert(Events::SCHEDULED_ON_TIME);
        }
        ghost.longest_lease = ghost.longest_lease.max(before.config.lease_ms);
        ghost.claims += 1;
        ghost.report = HolderReport::Nothing;
        ghost.lease_until = lease_until;
        ghost.holder = worker_index(worker).map_or(OUTSIDER, |w| w.min(usize::from(OUTSIDER) - 1) as u8);
        Some(job)
    }

    /// The lanes scene's `sometimes` events of a claim serving `queues` at `now` that took a
    /// job: judged on the jobs claimable at the claim (after its reap), as the store held them
    /// before.
    fn lane_events(&self, before: &World, queues: &[String], now: u64, reply: &Reply, next: &mut World) {
        let Reply::Claimed { id, .. } = reply else { return };
        let Some(taken) = before.store.job(id) else { return };
        let first = |id: &str| before.first_enqueue(id);
        let due = rules::claimable(
            before.store.jobs(),
            before.store.paused(),
            now,
            before.store.config().reap_limit,
            &first,
        );
        let claimable: Vec<&Job> = due.iter().filter_map(|(_, id)| before.store.job(id)).collect();
        let served = |job: &Job| queues.iter().any(|q| **q == *job.queue);
        if claimable.iter().any(|job| !served(job)) {
            next.events.insert(Events::QUEUE_PASSED_OVER);
        }
        if let Some(at) = taken.phase.available_at() {
            let waits = |job: &Job| {
                served(job)
                    && job.priority > taken.priority
                    && job.phase.available_at().is_some_and(|a| a <= at)
            };
            if claimable.iter().any(|job| waits(job)) {
                next.events.insert(Events::PRIORITY_FIRST);
            }
        }
    }

    /// The `sometimes` events of a claim that took job `job`: a tie broken (and one where the
    /// order of `enqueued_at` is not that of first enqueues), a later job due earlier taken
    /// first. Judged on the jobs claimable at the claim (after its reap), as the store held
    /// them before.
    fn claim_events(&self, before: &World, job: usize, now: u64, next: &mut World) {
        let first = |id: &str| before.first_enqueue(id);
        let due = rules::claimable(
            before.store.jobs(),
            before.store.paused(),
            now,
            before.store.config().reap_limit,
            &first,
        );
        let Some(&(taken_at, _)) = due.iter().find(|(_, id)| job_index(id) == Some(job)) else {
            return;
        };
        let enqueued_at = |i: usize| before.store.job(&job_name(i)).map(|j| j.enqueued_at);
        for (at, id) in &due {
            let Some(other) = job_index(id).filter(|&other| other != job) else { continue };
            if *at == taken_at {
                next.events.insert(Events::TIE_BROKEN);
                let (first, second) = (job.min(other), job.max(other));
                if enqueued_at(second) < enqueued_at(first) {
                    next.events.insert(Events::BACKDATED_TIE);
                }
            }
            if other < job {
                next.events.insert(Events::EARLIER_DUE_FIRST);
            }
        }
    }

    /// Bookkeeping for a `run_once` by `worker`, read at `now` then `after`, whose transport
    /// answered `outcome`.
    #[allow(clippy::too_many_arguments)]
    fn ran(
        &self,
        before: &World,
        worker: &str,
        now: u64,
        after: u64,
        outcome: RunOutcome,
        jitter: Option<f64>,
        response: &Response,
        next: &mut World,
    ) {
        let Some(id) = response.taken_id() else { return };
        if matches!(response, Response::Err(Failure::RanClockWentBackwards { .. })) {
            next.events.insert(Events::RUN_ONCE_CLOCK_BACK);
        }
        let lease_until = now + before.config.lease_ms;
        let Some(job) = self.claimed(before, id, worker, now, lease_until, next) else { return };
        let report = match (response, outcome.classified()) {
            (Response::Ok(Reply::Crashed { .. }), _) => HolderReport::Crashed,
            (
                Response::Ok(Reply::RanDone { .. } | Reply::RanRetry { .. } | Reply::RanDead { .. }),
                Some(o),
            ) => HolderReport::Completed(o),
            _ => HolderReport::Unknown,
        };
        if let Some(ghost) = next.ghosts.get_mut(job) {
            ghost.report = report;
        }
        if let (HolderReport::Completed(outcome), Some(ghost)) = (report, next.ghosts.get_mut(job)) {
            ghost.lease_until = 0;
            let reply = match response {
                Response::Ok(Reply::RanRetry { available_at, .. }) => {
                    Reply::Retry { available_at: *available_at }
                }
                Response::Ok(Reply::RanDead { reason, .. }) => Reply::Dead { reason: *reason },
                _ => Reply::Done,
            };
            self.retry_events(
                before,
                job,
                before.store.job(id).map_or(0, |j| j.attempts + 1),
                outcome,
                after,
                jitter,
                &Response::Ok(reply),
                next,
            );
        }
    }

    /// Bookkeeping for a completion by `worker` of `id` with token `attempt`.
    #[allow(clippy::too_many_arguments)]
    fn completed(
        &self,
        before: &World,
        worker: &str,
        id: &str,
        attempt: u64,
        outcome: Outcome,
        now: u64,
        jitter: Option<f64>,
        response: &Response,
        next: &mut World,
    ) {
        let Some(job) = job_index(id) else { return };
        let changed = next.store != before.store;
        let Some(ghost) = next.ghosts.get_mut(job) else { return };
        let presenter = worker_index(worker).map(|w| w as u8);
        let current = ghost.holder != NOBODY && attempt == ghost.claims && presenter == Some(ghost.holder);
        if !current {
            if changed {
                next.events.insert(Events::STALE_CHANGED);
            }
            if *response == Response::Err(Failure::LeaseLost) && ghost.holder != NOBODY {
                if attempt < ghost.claims {
                    next.events.insert(Events::STALE_REJECTED);
                } else if attempt == ghost.claims {
                    next.events.insert(Events::WRONG_OWNER_REFUSED);
                }
            }
            return;
        }
        if *response == Response::Err(Failure::ClockWentBackwards) {
            next.events.insert(Events::CLOCK_BACK_REFUSED);
        }
        ghost.report = HolderReport::Completed(outcome);
        if matches!(response, Response::Ok(_)) {
            ghost.lease_until = 0;
            let late = before
                .store
                .job(id)
                .is_some_and(|j| matches!(j.phase, Phase::Leased { until, .. } if until <= now));
            if late {
                next.events.insert(Events::LATE_ACCEPTED);
            }
            self.retry_events(before, job, attempt, outcome, now, jitter, response, next);
        }
    }

    /// The `sometimes` events of a completion of job `job`'s attempt `attempt` at `now`.
    #[allow(clippy::too_many_arguments)]
    fn retry_events(
        &self,
        before: &World,
        job: usize,
        attempt: u64,
        outcome: Outcome,
        now: u64,
        jitter: Option<f64>,
        response: &Response,
        next: &mut World,
    ) {
        let Some(ghost) = next.ghosts.get(job) else { return };
        let config = before.config;
        let jitter = jitter.unwrap_or(0.0);
        // The job's own settings where it has them (SPEC 6.23), as its enqueue set them.
        let stored = before.store.job(&job_name(job));
        let own = stored.map_or((None, None), |j| (j.base_ms, j.cap_ms));
        let (base_ms, cap_ms) = (own.0.unwrap_or(config.base_ms), own.1.unwrap_or(config.cap_ms));
        let delay = rules::delay(attempt, base_ms, cap_ms, jitter);
        if *response == Response::Ok(Reply::Dead { reason: DeadReason::Deadline })
            && outcome == Outcome::Retryable
            && delay > 0
            && now + delay == ghost.deadline
        {
            next.events.insert(Events::EXACT_DEADLINE_DEATH);
        }
        if let Response::Ok(Reply::Retry { .. }) = response {
            if delay != rules::exact_delay(attempt, base_ms, cap_ms, jitter) {
                next.events.insert(Events::BINARY64_EDGE);
            }
            if cap_ms < base_ms && delay > 0 {
                next.events.insert(Events::CAP_BELOW_BASE_RETRY);
            }
            let queue_delay = rules::delay(attempt, config.base_ms, config.cap_ms, jitter);
            if (own.0.is_some() || own.1.is_some()) && delay != queue_delay {
                next.events.insert(Events::OWN_BACKOFF_RETRY);
            }
            if let Some(then) = ghost.enqueued_under {
                let then_delay = rules::delay(
                    attempt,
                    own.0.unwrap_or(then.base_ms),
                    own.1.unwrap_or(then.cap_ms),
                    jitter,
                );
                if then_delay != delay {
                    next.events.insert(Events::SWITCHED_SETTINGS_RETRY);
                }
            }
        }
    }

    /// Bookkeeping for a heartbeat by `worker` of `id` presenting `attempt` at `now`: an
    /// accepted one by the holder of the latest claim extends what the world knows of the
    /// lease, and returns its new end; any other that changed the store is a stale token
    /// changing it (SPEC 4.5).
    #[allow(clippy::too_many_arguments)]
    fn heartbeat_seen(
        &self,
        before: &World,
        worker: &str,
        id: &str,
        attempt: u64,
        now: u64,
        response: &Response,
        next: &mut World,
    ) -> Option<u64> {
        let job = job_index(id)?;
        let changed = next.store != before.store;
        let ghost = next.ghosts.get_mut(job)?;
        let presenter = worker_index(worker).map(|w| w as u8);
        let current = ghost.holder != NOBODY && attempt == ghost.claims && presenter == Some(ghost.holder);
        if !current {
            if changed {
                next.events.insert(Events::STALE_CHANGED);
            }
            if *response == Response::Err(Failure::LeaseLost) && ghost.holder != NOBODY {
                next.events.insert(Events::STALE_HEARTBEAT_REFUSED);
            }
            return None;
        }
        match *response {
            Response::Ok(Reply::Extended { lease_until }) => {
                if now + 1 == ghost.deadline {
                    next.events.insert(Events::HEARTBEAT_LAST_INSTANT);
                }
                if lease_until > crate::MAX_INT {
                    next.events.insert(Events::LEASE_PAST_MAX_INT);
                }
                ghost.longest_lease = ghost.longest_lease.max(before.config.lease_ms);
                if lease_until > next.now {
                    ghost.lease_until = lease_until;
                }
                Some(lease_until)
            }
            Response::Err(Failure::DeadlinePassed) if now == ghost.deadline => {
                next.events.insert(Events::HEARTBEAT_AT_DEADLINE_REFUSED);
                None
            }
            _ => None,
        }
    }

    /// The worlds before anything happened: for each scene, an empty store configured with
    /// each of its settings.
    pub fn initial_worlds(&self) -> Vec<World> {
        let mut worlds = Vec::new();
        for (s, scene) in self.bounds.scenes.iter().enumerate() {
            for &config in &scene.configs {
                let mut store = Store::new().with_bug(self.bug);
                store.step(&QueueModel::config_op(config));
                worlds.push(World {
                    now: scene.epoch,
                    scene: s as u8,
                    store,
                    config,
                    workers: SmallVec::from_elem(None, scene.workers),
                    ghosts: SmallVec::new(),
                    events: Events::default(),
                    broken: Broken::NONE,
                    reached: Reached::default(),
                    order: Order::new(),
                    prunes: scene.retention,
                    paused: 0,
                });
            }
        }
        worlds
    }

    /// Every action that can move `world`, in a fixed order (a path names its steps by their
    /// index in this list). What cannot move a correct store is a probe ([`crate::probes`]).
    pub fn possible_actions(&self, world: &World, actions: &mut Vec<Action>) {
        let b = &self.bounds;
        let scene = self.scene(world);
        let now = world.now;
        // A job of a SPEC 1.1 shape is the world's only job: its edges are its own (a claim at
        // its schedule, a retry under its own backoff), and a second job beside it would
        // multiply the states by all their interleavings for nothing new.
        let shaped = world
            .store
            .jobs()
            .first()
            .is_some_and(|j| j.not_before > j.enqueued_at || j.base_ms.is_some() || j.cap_ms.is_some());
        if world.ghosts.len() < scene.jobs && !shaped && (!scene.arrive_together || now == scene.epoch) {
            // Dated back only where that puts it before the job enqueued last.
            let backdated = scene.backdate
                && now > scene.epoch
                && world.store.jobs().last().is_some_and(|j| j.enqueued_at == now);
            let far = scene.far_back && world.ghosts.len() == 1 && now >= FAR;
            let datings = [(Dated::Now, true), (Dated::Back, backdated), (Dated::Far, far)];
            for (dated, _) in datings.into_iter().filter(|&(_, allowed)| allowed) {
                // The deadline counts from the enqueue's `now`, but from the clock's far back.
                let from = if dated == Dated::Back { now - 1 } else { now };
                // Each job goes to the lanes its scene lists for it; others to the default.
                let lanes = scene.lanes.get(world.ghosts.len()).map_or(&[Lane::Default][..], Vec::as_slice);
                for &max_attempts in b.budgets(scene) {
                    for &deadline_in in b.deadlines_in(scene).iter().filter(|&&d| scene.room_for(from, d)) {
                        for &lane in lanes {
                            actions.push(Action::Enqueue {
                                max_attempts,
                                deadline_in,
                                shape: None,
                                dated,
                                lane,
                            });
                        }
                    }
                }
            }
            // The largest budget and the nearest deadline: a retry with time left, a smaller
            // subtree than the farthest deadline's.
            let largest = (b.budgets(scene).iter().max(), b.deadlines_in(scene).iter().min());
            if let (true, (Some(&max_attempts), Some(&deadline_in))) = (world.ghosts.is_empty(), largest)
                && scene.room_for(now, deadline_in)
            {
                for &shape in scene.shapes.iter().filter(|_| b.contract_1_1) {
                    actions.push(Action::Enqueue {
                        max_attempts,
                        deadline_in,
                        shape: Some(shape),
                        dated: Dated::Now,
                        lane: Lane::Default,
                    });
                }
            }
        }
        for (worker, held) in world.workers.iter().enumerate() {
            if let Some(held) = held {
                // A heartbeat comes from a running attempt: once the watchdog ended it, the
                // holder only reports what became of it.
                if b.contract_1_1 && held.running(now) {
                    actions.push(Action::Heartbeat { worker });
                }
                actions.push(Action::Complete { worker, outcome: Outcome::Ok, jitter: None });
                actions.push(Action::Complete { worker, outcome: Outcome::Permanent, jitter: None });
                for &jitter in &b.jitters {
                    actions.push(Action::Complete {
                        worker,
                        outcome: Outcome::Retryable,
                        jitter: Some(jitter),
                    });
                }
                if b.hostile {
                    actions.push(Action::Crash { worker });
                }
            } else {
                actions.push(Action::Claim { worker });
                actions.push(Action::RunOnce { worker, outcome: RunOutcome::Unknown });
                actions.push(Action::RunOnce { worker, outcome: RunOutcome::Crash });
                if b.hostile && now > 0 {
                    actions.push(Action::RunOnceClockBack { worker });
                }
            }
        }
        if now < scene.end() {
            actions.push(Action::Tick);
        }
        actions.push(Action::Reap);
        for (job, ghost) in world.ghosts.iter().enumerate() {
            let Some(stored) = world.store.jobs().iter().find(|j| job_index(&j.id) == Some(job)) else {
                continue;
            };
            let dead = matches!(stored.phase, Phase::Dead(_));
            if dead && ghost.redrives < b.redrives_in(scene) && scene.room_for(now, b.redrive_deadline) {
                actions.push(Action::Redrive { job });
            }
            let first_fresh = job == 0 && ghost.claims == 0 && ghost.redrives == 0;
            let pending = matches!(stored.phase, Phase::Pending { .. });
            let running = matches!(stored.phase, Phase::Leased { .. }) && !stored.cancel_requested;
            if b.contract_1_1
                && ((pending && (scene.cancel_any || first_fresh)) || (running && scene.cancel_leased))
            {
                actions.push(Action::Cancel { job });
            }
        }
        if scene.retention {
            // Only where something ended: with a lag of 1, only where something ended just now
            // too, which that prune (or forget) must leave.
            let ended: Vec<u64> = world.store.jobs().iter().filter_map(|j| j.ended_at).collect();
            let buried: Vec<u64> = world.store.tombstones().iter().map(|t| t.ended_at).collect();
            let nearest = b.deadlines_in(scene).iter().min().copied().unwrap_or(0);
            for (job, ghost) in world.ghosts.iter().enumerate() {
                let id = job_name(job);
                let gone = world.store.job(&id).is_none() && world.store.tombstone(&id).is_none();
                if ghost.forgotten && gone && scene.room_for(now, nearest) {
                    actions.push(Action::Reenqueue { job });
                }
            }
            let worth =
                |times: &[u64], lag: u64| if lag == 0 { !times.is_empty() } else { times.contains(&now) };
            for lag in [0, 1].into_iter().filter(|&lag| lag <= now) {
                if worth(&ended, lag) {
                    actions.push(Action::Prune { lag });
                }
                if worth(&buried, lag) {
                    actions.push(Action::Forget { lag });
                }
            }
        }
        if scene.switch {
            for &to in scene.configs.iter().filter(|&&c| c != world.config) {
                actions.push(Action::Configure { to });
            }
        }
        // A pause of a queue not paused, a resume of one paused: a second pause or resume
        // changes nothing (SPEC 3.16, 3.17), and is a probe.
        if scene.pauses {
            for queue in 0..2u8 {
                if world.paused & (1 << queue) == 0 {
                    actions.push(Action::Pause { queue });
                } else {
                    actions.push(Action::Resume { queue });
                }
            }
        }
        // A job waiting made due now; one already due keeps its place, and is a probe.
        if scene.run_now {
            for job in world.store.jobs() {
                if let (Phase::Pending { available_at }, Some(index)) = (&job.phase, job_index(&job.id))
                    && *available_at > now
                    && job.deadline > now
                {
                    actions.push(Action::RunNow { job: index });
                }
            }
        }
    }

    /// Keeps the world finite whatever the store does: no job claimed, and no `attempts`,
    /// more than one past [`Bounds::max_claims`]. A store that keeps SPEC 4.1 never gets there
    /// (the checker counts the states cut, and the tests require none for the SPEC's store).
    pub fn within_bounds(&self, world: &World) -> bool {
        let limit = self.bounds.max_claims() + 1;
        world.ghosts.iter().all(|g| g.claims <= limit)
            && world.store.jobs().iter().all(|j| j.attempts <= limit)
    }
}

/// The name of the world's queue `index`: 0 the default queue, 1 [`OTHER_QUEUE`].
pub fn queue_name(index: u8) -> &'static str {
    if index == 0 { crate::reference::DEFAULT_QUEUE } else { OTHER_QUEUE }
}

/// The bit of [`World::paused`] for the queue called `name`; 0 for a name outside the world's.
pub fn queue_bit(name: &str) -> u8 {
    match name {
        crate::reference::DEFAULT_QUEUE => 1,
        OTHER_QUEUE => 2,
        _ => 0,
    }
}

/// The `now` of an operation that reaps (a claim, `run_once` or `reap` whose arguments held),
/// if `op` is one.
fn reaps_at(op: &Op, response: &Response) -> Option<u64> {
    match (op, response) {
        (_, Response::Err(Failure::InvalidInput { .. })) => None,
        (Op::Claim { now, .. } | Op::RunOnce { now, .. } | Op::Reap { now }, _) => Some(*now),
        _ => None,
    }
}

/// What a reap at `now` did, read from the jobs before and after it (SPEC 3.3.1, 6.27, 6.37):
/// how many jobs it ended — every job open before and ended or gone after, but the one a claim
/// took (which `run_once` may end by its completion) — against the world's `reap_limit`; and
/// whether a job due to end is left.
fn reap_events(before: &World, op: &Op, now: u64, response: &Response, next: &mut World) {
    let taken = response.taken_id();
    let open = |phase: &Phase| matches!(phase, Phase::Pending { .. } | Phase::Leased { .. });
    let ended = before
        .store
        .jobs()
        .iter()
        .filter(|b| open(&b.phase) && Some(&*b.id) != taken)
        .filter(|b| next.store.job(&b.id).is_none_or(|a| !open(&a.phase)))
        .count() as u64;
    let left = next.store.jobs().iter().any(|a| Some(&*a.id) != taken && rules::due_to_end(a, now));
    let limit = before.config.reap_limit;
    if ended > limit || (ended < limit && left) {
        next.events.insert(Events::REAP_UNBOUNDED);
    }
    if ended == limit && left {
        next.events.insert(Events::REAP_STOPPED_AT_LIMIT);
    }
    let served = |queue: &str| match op {
        Op::Claim { queues, .. } | Op::RunOnce { queues, .. } => queues
            .as_ref()
            .map_or(queue == crate::reference::DEFAULT_QUEUE, |qs| qs.iter().any(|q| q == queue)),
        _ => false,
    };
    let passed = next
        .store
        .jobs()
        .iter()
        .any(|a| Some(&*a.id) != taken && rules::due_to_end(a, now) && served(&a.queue));
    if taken.is_some() && passed {
        next.events.insert(Events::PICK_PASSED_DUE);
    }
}

/// Reaps `store` at `now` until a reap ends fewer than the store's `reap_limit`, as a caller who
/// wants every job due to end ended does (SPEC 3.7); at most once more than it has jobs, so
/// that a store whose count never falls cannot hold the search. Returns the reaps run.
pub fn reap_until_short(store: &mut Store, now: u64) -> Vec<(Op, Response)> {
    let mut reaps = Vec::new();
    for _ in 0..=store.jobs().len() {
        let op = Op::Reap { now };
        let response = store.step(&op);
        let short =
            !matches!(response, Response::Ok(Reply::Reaped { count }) if count >= store.config().reap_limit);
        reaps.push((op, response));
        if short {
            break;
        }
    }
    reaps
}

/// A scene for a model whose bounds have none: the main one.
fn default_scene() -> &'static Scene {
    static MAIN: std::sync::OnceLock<Scene> = std::sync::OnceLock::new();
    MAIN.get_or_init(Scene::main)
}

impl World {
    /// Forgets what no longer tells worlds apart: the ghost leases the clock has passed (an
    /// expired lease is the store's to reclaim, and keeping its end would only split states
    /// that behave the same), the holder of a job whose lease no longer stands, and the
    /// settings of the enqueue of a job that is over.
    fn normalize(&mut self) {
        for ghost in &mut self.ghosts {
            if ghost.lease_until <= self.now {
                ghost.lease_until = 0;
            }
        }
        // Per job index: leased, and over (done or dead).
        let mut status = [(false, false); 64];
        for job in self.store.jobs() {
            if let Some(slot) = job_index(&job.id).and_then(|i| status.get_mut(i)) {
                *slot = (
                    matches!(job.phase, Phase::Leased { .. }),
                    matches!(job.phase, Phase::Done | Phase::Dead(_)),
                );
            }
        }
        for (i, ghost) in self.ghosts.iter_mut().enumerate() {
            let (leased, over) = status.get(i).copied().unwrap_or((false, false));
            if !leased {
                ghost.holder = NOBODY;
            }
            // The settings of an enqueue matter to retries only, and a job over has none left.
            if over {
                ghost.enqueued_under = None;
            }
        }
    }

    /// The same world with workers renumbered in a canonical order: sorted by what they hold
    /// and which jobs the store says they own. Workers are interchangeable (nothing in the
    /// SPEC looks at a worker's name except to compare it with a lease's owner), so every
    /// renumbering of a world behaves the same, and two worlds that differ only by one are
    /// one state for the checker. Borrowed when the world already is canonical.
    pub fn canonical(&self) -> Cow<'_, World> {
        let mut owned: SmallVec<[u64; 2]> = SmallVec::from_elem(0, self.workers.len());
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
        let mut order: SmallVec<[usize; 2]> = (0..self.workers.len()).collect();
        order.sort_by_key(|&w| signature(w));
        // order[new] = old: worker `old` becomes worker `new`.
        let mut renamed_to: SmallVec<[usize; 2]> = SmallVec::from_elem(0, order.len());
        for (new, &old) in order.iter().enumerate() {
            renamed_to[old] = new;
        }
        let mut ghosts = self.ghosts.clone();
        for ghost in &mut ghosts {
            if let Some(&new) = renamed_to.get(usize::from(ghost.holder)) {
                ghost.holder = new as u8;
            }
        }
        Cow::Owned(World {
            now: self.now,
            scene: self.scene,
            store: self.store.rename_owners(|owner| {
                worker_index(owner).and_then(|old| renamed_to.get(old)).map(|&new| worker_name(new).into())
            }),
            workers: order.iter().map(|&old| self.workers[old]).collect(),
            config: self.config,
            ghosts,
            order: self.order.clone(),
            events: self.events,
            broken: self.broken,
            reached: self.reached,
            prunes: self.prunes,
            paused: self.paused,
        })
    }
}

impl Representative for World {
    /// [`World::canonical`], for stateright's checkers.
    fn representative(&self) -> World {
        self.canonical().into_owned()
    }
}
