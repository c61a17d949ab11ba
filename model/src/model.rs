//! The model: the reference store in a small world of a clock and a few workers.
//!
//! Layer: the world, above the store ([`crate::reference`]) and the second reading
//! ([`crate::rules`]) it runs on every step, below the properties judged on it
//! ([`crate::properties`]) and the checker that searches it. It may not reach up: what a world
//! is and which steps it can take must not depend on what is then asked of it, so the model
//! keeps no list of properties and runs no search. [`crate::stateright_model`] joins the two
//! for stateright, and [`crate::search`] for this crate's checker.
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
//! ([`crate::properties`] explains why that makes liveness checkable). Each setting of
//! [`Bounds::configs`] is an initial world of its own: the doubling one, and a cap below the
//! base where binary64 and exact arithmetic floor differently (SPEC 2.3).
//!
//! The world is hostile ([`Bounds::hostile`]): besides the friendly actions it sends bad
//! arguments of every class ([`crate::invalid`]), completions dated before their claim,
//! `run_once`s whose second clock reading goes back, the current token presented by the wrong
//! worker, holders that crash while their lease stays live, restarts, and reads.
//!
//! Every step is judged twice: by the properties on the world it leads to, and by the
//! transition rules of [`crate::rules`] — the contract read a second time, independently of the
//! store — whose verdict the world carries for one step ([`World::broken`]).
//!
//! Symmetry: job ids are named in the order of their first enqueue (`job-1`, `job-2`, …),
//! which is the only thing that tells two ids apart (claim's tie-break), so permuting ids
//! needs no reduction. Workers are interchangeable: [`World::canonical`] sorts them.

use std::borrow::Cow;
use std::fmt;

use stateright::Representative;

use crate::bug::Bug;
pub use crate::ids::{OTHER_PAYLOAD, PAYLOAD, job_index, job_name, worker_index, worker_name};
use crate::invalid::Invalid;
use crate::reference::{Config, Phase, Store};
use crate::rules::{self, Broken};
use crate::{DeadReason, Failure, Op, Outcome, Reply, Response, RunOutcome};

/// The jitter on which one binary64 multiply and exact arithmetic part at a window of 3
/// (SPEC 2.3): 3 × 0.6666666666666666 is 2 in binary64, 1.99… exactly.
pub const TWO_THIRDS: f64 = 0.6666666666666666;

/// The bounds of the world the checker explores.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    /// How many job ids can be enqueued.
    pub jobs: usize,
    /// How many workers claim and complete.
    pub workers: usize,
    /// The clock runs from 0 to `horizon` milliseconds.
    pub horizon: u64,
    /// The settings of each initial world: the checker explores every one.
    pub configs: Vec<Config>,
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
    /// The SPEC 1.1 shapes the *first* job may also be enqueued with (a schedule, its own
    /// backoff), each with the largest budget and deadline: one job of each shape is enough
    /// to reach their edges, and offering them to every enqueue would multiply the states.
    pub shapes: Vec<Shape>,
    /// Whether the world uses SPEC 1.1's operations and fields (heartbeat, cancel, the
    /// shapes, their bad arguments). Off, it is the contract 1.0 world: what a reading that
    /// does not run them yet can be compared on.
    pub contract_1_1: bool,
    /// Whether the world is hostile: bad arguments of every class, clocks that go back,
    /// completions by the wrong worker, holders that crash, reads.
    pub hostile: bool,
}

/// The doubling settings: base 1, cap 2 give windows 1 and 2, so jitters 0, 0.5, 1 give delays
/// 0, 1, 2 and `now + delay` lands exactly on a deadline in many ways.
pub const DOUBLING: Config = Config { base_ms: 1, cap_ms: 2, lease_ms: 2 };
/// A cap below the base: every window is the cap, 3, where jitter 0.6666666666666666 floors
/// differently in binary64 (2) and in exact arithmetic (1).
pub const CAP_BELOW_BASE: Config = Config { base_ms: 4, cap_ms: 3, lease_ms: 2 };

impl Default for Bounds {
    /// The default check: two jobs, two workers, a clock up to 5, both settings, hostile.
    fn default() -> Self {
        Bounds {
            jobs: 2,
            workers: 2,
            horizon: 5,
            configs: vec![DOUBLING, CAP_BELOW_BASE],
            jitters: vec![0.0, 0.5, 1.0, TWO_THIRDS],
            max_attempts: vec![1, 2],
            deadlines: vec![2, 3],
            redrives: 2,
            add_attempts: 1,
            redrive_deadline: 1,
            shapes: vec![Shape::Scheduled { after: 1 }, Shape::OwnBackoff],
            contract_1_1: true,
            hostile: true,
        }
    }
}

impl Bounds {
    /// Small bounds where every property about one job is decided: one job, two workers, a
    /// clock up to 5. For tests and `retryq verify`. (The examples about two jobs — a tie
    /// broken, a later job due earlier — need [`Bounds::default`].)
    pub fn small() -> Self {
        Bounds { jobs: 1, ..Bounds::default() }
    }

    /// Small bounds that show `bug`: [`Bounds::small`], except that a bug about *another*
    /// job (spilling over to it, or passing it over) needs two jobs, and then one worker and a
    /// clock up to 4 suffice.
    pub fn small_for(bug: Bug) -> Self {
        match bug {
            Bug::CountAttemptOnEveryJob
            | Bug::ClaimTieToNewest
            | Bug::ClaimFirstEnqueued
            | Bug::ClaimOnlyFirstJob => Bounds { jobs: 2, workers: 1, horizon: 4, ..Bounds::default() },
            _ => Bounds::small(),
        }
    }

    /// The `--deep` preset: budgets of 1 and 3, so that a completion computes the delay after
    /// a second attempt (the window doubling, or capped) and a job can be claimed three times.
    pub fn deep() -> Self {
        Bounds { max_attempts: vec![1, 3], ..Bounds::default() }
    }

    /// The most claims any job can see in a store that keeps SPEC 4.1: the largest budget
    /// plus every redrive's. A buggy store can claim forever at one instant (attempts reset,
    /// stolen leases); the boundary stops it one claim past this, where 4.1 already fails.
    pub fn max_claims(&self) -> u64 {
        self.max_attempts.iter().copied().max().unwrap_or(0) + self.redrives * self.add_attempts
    }

    /// The longest lease of any setting.
    fn longest_lease(&self) -> u64 {
        self.configs.iter().map(|c| c.lease_ms).max().unwrap_or(0)
    }

    /// A deadline `after` milliseconds from `now` leaves a whole lease before the horizon.
    fn room_for(&self, now: u64, after: u64) -> bool {
        now + after + self.longest_lease() <= self.horizon
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let configs: Vec<String> = self
            .configs
            .iter()
            .map(|c| format!("base {} cap {} lease {}", c.base_ms, c.cap_ms, c.lease_ms))
            .collect();
        write!(
            f,
            "jobs {}, workers {}, horizon {} ms, settings [{}], jitter {:?}, max_attempts {:?}, \
             deadlines now+{:?}, redrives {} (+{} attempts, deadline now+{}), first-job shapes {:?}, {}",
            self.jobs,
            self.workers,
            self.horizon,
            configs.join("; "),
            self.jitters,
            self.max_attempts,
            self.deadlines,
            self.redrives,
            self.add_attempts,
            self.redrive_deadline,
            self.shapes,
            if self.hostile { "hostile" } else { "friendly" }
        )
    }
}

/// The `retry_delay` operations the hostile world asks for, as (attempt, base_ms, cap_ms,
/// jitter). With budgets of 1 and 2 a completion computes only the delay after attempt 1, so
/// the formula's doubling, its cap after several doublings, saturation and binary64's edges
/// are asked of the store directly. `retry_delay` reads no state, so asking once, from the
/// initial world, asks it everywhere.
pub const DELAY_PROBES: [(u64, u64, u64, f64); 12] = [
    (2, 100, 1000, 0.5),
    (3, 100, 250, 0.5),
    (3, 1, 1000, 1.0),
    (4, 3, 1000, 1.0),
    (64, 1, crate::MAX_INT, 1.0),
    (1_000_000_000_000_000, 100, 1000, 1.0),
    (2, 4, 3, 1.0),
    (5, 0, 1000, 1.0),
    (1, 10, 1000, 0.7),
    (2, 2, 3, TWO_THIRDS),
    // 0.818108110530233188, the binary64 value nearest it (SPEC 6.2).
    (1, crate::MAX_INT, crate::MAX_INT, f64::from_bits(0x3fea_2df1_0f6a_3b05)),
    (2, 100, 0, 1.0),
];

/// A SPEC 1.1 shape of enqueue ([`Bounds::shapes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Scheduled: `not_before` = `now + after` (SPEC 3.2, 4.12).
    Scheduled {
        /// How far after the enqueue's `now` the job first becomes claimable.
        after: u64,
    },
    /// Its own backoff, one setting of the two, chosen so that its retries wait otherwise
    /// than the queue's would (SPEC 6.23): under a cap below the base, its own `cap_ms` of 1
    /// (below the queue's); otherwise its own `base_ms`, twice the queue's.
    OwnBackoff,
}

impl Shape {
    /// The enqueue's `not_before`, `base_ms` and `cap_ms` for this shape at `now`, under the
    /// queue's settings `queue`.
    fn fields(shape: Option<Shape>, now: u64, queue: Config) -> (Option<u64>, Option<u64>, Option<u64>) {
        match shape {
            None => (None, None, None),
            Some(Shape::Scheduled { after }) => (Some(now + after), None, None),
            Some(Shape::OwnBackoff) if queue.cap_ms < queue.base_ms => (None, None, Some(1)),
            Some(Shape::OwnBackoff) => (None, Some(queue.base_ms * 2), None),
        }
    }
}

/// What a worker remembers of the claim it holds: what `claim` answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Held {
    /// The job's index in the world (`job-1` is 0).
    pub job: usize,
    /// The fencing token.
    pub attempt: u64,
    /// When the claim was made: a heartbeat moves `lease_until`, not this.
    pub claimed_at: u64,
    /// The lease's end, as the claim or the latest accepted heartbeat answered.
    pub lease_until: u64,
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

/// Ghost fields of one job: what the world knows of it without asking the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Claims of this job the store answered: `claimed`, `crashed`, `unknown_error`,
    /// `clock_went_backwards` from `run_once`.
    pub claims: u64,
    /// Times its payload went out through a transport (a crashed process may have sent).
    pub sends: u64,
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
}

/// Things the last step did, for the properties about transitions. Cleared at every step, so
/// they cost states only where they happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Events(u32);

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
    /// A retry of a job with its own `cap_ms`, other than the queue's, waited a delay the
    /// queue's settings would not give.
    pub const OWN_CAP_RETRY: Events = Events(1 << 22);
    /// A heartbeat with a stale token (an older attempt, or another worker) was refused.
    pub const STALE_HEARTBEAT_REFUSED: Events = Events(1 << 23);

    /// Whether this set holds `event`.
    pub fn contains(self, event: Events) -> bool {
        self.0 & event.0 != 0
    }

    fn insert(&mut self, event: Events) {
        self.0 |= event.0;
    }
}

/// One state of the world. Two worlds that differ only in what the step into them did
/// (`events`, `broken`) are the same state: equal, with the same hash. The checker judges
/// those fields on every step it takes, before it asks whether the state is new.
#[derive(Clone, Debug)]
pub struct World {
    /// The world's clock: every operation is dated by it.
    pub now: u64,
    /// The store under test (the reference store, or one with a seeded bug).
    pub store: Store,
    /// The settings this world configured, as the world (not the store) knows them.
    pub config: Config,
    /// What each worker holds, by worker index.
    pub workers: Vec<Option<Held>>,
    /// One per job enqueued, by job index.
    pub ghosts: Vec<Ghost>,
    /// What the step into this state did.
    pub events: Events,
    /// The transition rules ([`crate::rules`]) the step into this state broke.
    pub broken: Broken,
}

impl World {
    /// The fields that make the state: everything but what the last step did.
    fn state(&self) -> (u64, &Store, &Config, &[Option<Held>], &[Ghost]) {
        (self.now, &self.store, &self.config, &self.workers, &self.ghosts)
    }
}

impl PartialEq for World {
    fn eq(&self, other: &World) -> bool {
        self.state() == other.state()
    }
}

impl Eq for World {}

impl std::hash::Hash for World {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.state().hash(state);
    }
}

/// One step of the world.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Enqueue the next new id with this budget and a deadline `deadline_in` ms from now, and
    /// (the first job only) a SPEC 1.1 shape.
    Enqueue {
        /// The attempt budget.
        max_attempts: u64,
        /// How far ahead of now the deadline lies.
        deadline_in: u64,
        /// The SPEC 1.1 shape of the enqueue; `None` for a 1.0 enqueue.
        shape: Option<Shape>,
    },
    /// Enqueue job `job` again, with its own or another payload (and another budget and
    /// deadline, which must change nothing).
    Reenqueue {
        /// The job's index.
        job: usize,
        /// Whether the payload is the job's own (a no-op) or another (a conflict).
        same_payload: bool,
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
    /// A worker presents the claim `holder` holds — the current token, the wrong owner.
    CompleteAsOther {
        /// The worker presenting the claim.
        worker: usize,
        /// The worker that holds it.
        holder: usize,
    },
    /// The holder completes `ok` with a clock one millisecond before its claim.
    CompleteEarly {
        /// The worker's index.
        worker: usize,
    },
    /// The holder heartbeats its claim at the current time.
    Heartbeat {
        /// The holder's index.
        worker: usize,
    },
    /// The holder heartbeats dated one millisecond back: before its claim
    /// (`clock_went_backwards`), or before an earlier heartbeat (the lease must not shrink).
    HeartbeatBack {
        /// The holder's index.
        worker: usize,
    },
    /// The holder heartbeats with the attempt before the one it holds: a stale token of the
    /// same worker.
    HeartbeatStale {
        /// The holder's index.
        worker: usize,
    },
    /// A worker heartbeats the claim `holder` holds — the current token, the wrong owner.
    HeartbeatAsOther {
        /// The worker presenting the claim.
        worker: usize,
        /// The worker that holds it.
        holder: usize,
    },
    /// The operator cancels job `job`, whatever its status.
    Cancel {
        /// The job's index.
        job: usize,
    },
    /// A worker holding a claim dies: it forgets the claim, the store keeps the lease.
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
    /// The database is closed and opened again.
    Restart,
    /// An operation with a bad argument of this class.
    Invalid {
        /// The kind of bad argument.
        class: Invalid,
    },
    /// `stats` at the current time.
    Stats,
    /// `get` of job `job`.
    Get {
        /// The job's index.
        job: usize,
    },
    /// `retry_delay` with the arguments of [`DELAY_PROBES`]`[probe]`.
    Delay {
        /// An index into [`DELAY_PROBES`].
        probe: usize,
    },
}

impl fmt::Display for Action {
    /// The action in a few words, naming workers and jobs as traces do (`w1`, `job-1`), not
    /// by their index in the world.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = |worker: usize| worker_name(worker);
        let lower = |name: String| name.to_lowercase();
        match *self {
            Action::Enqueue { max_attempts, deadline_in, shape } => {
                write!(f, "enqueue a new job: max_attempts {max_attempts}, deadline now+{deadline_in}")?;
                match shape {
                    None => Ok(()),
                    Some(Shape::Scheduled { after }) => write!(f, ", not before now+{after}"),
                    Some(Shape::OwnBackoff) => f.write_str(", its own backoff"),
                }
            }
            Action::Reenqueue { job, same_payload } => write!(
                f,
                "enqueue {} again, {} payload",
                job_name(job),
                if same_payload { "same" } else { "another" }
            ),
            Action::Claim { worker } => write!(f, "{} claims", w(worker)),
            Action::Complete { worker, outcome, jitter: None } => {
                write!(f, "{} completes {}", w(worker), lower(format!("{outcome:?}")))
            }
            Action::Complete { worker, outcome, jitter: Some(jitter) } => {
                write!(f, "{} completes {}, jitter {jitter}", w(worker), lower(format!("{outcome:?}")))
            }
            Action::CompleteAsOther { worker, holder } => {
                write!(f, "{} completes {}'s claim", w(worker), w(holder))
            }
            Action::CompleteEarly { worker } => {
                write!(f, "{} completes ok, dated before its claim", w(worker))
            }
            Action::Crash { worker } => write!(f, "{} crashes", w(worker)),
            Action::RunOnce { worker, outcome } => {
                write!(f, "{} run_once, transport {}", w(worker), lower(format!("{outcome:?}")))
            }
            Action::RunOnceClockBack { worker } => write!(f, "{} run_once, clock goes back", w(worker)),
            Action::Tick => f.write_str("tick"),
            Action::Reap => f.write_str("reap"),
            Action::Redrive { job } => write!(f, "redrive {}", job_name(job)),
            Action::Restart => f.write_str("restart"),
            Action::Invalid { class } => write!(f, "bad argument: {class:?}"),
            Action::Stats => f.write_str("stats"),
            Action::Get { job } => write!(f, "get {}", job_name(job)),
            Action::Delay { probe } => write!(f, "retry_delay probe {}", probe + 1),
            Action::Heartbeat { worker } => write!(f, "{} heartbeats", w(worker)),
            Action::HeartbeatBack { worker } => write!(f, "{} heartbeats, clock gone back", w(worker)),
            Action::HeartbeatStale { worker } => write!(f, "{} heartbeats with a stale attempt", w(worker)),
            Action::HeartbeatAsOther { worker, holder } => {
                write!(f, "{} heartbeats {}'s claim", w(worker), w(holder))
            }
            Action::Cancel { job } => write!(f, "cancel {}", job_name(job)),
        }
    }
}

/// The bounded world, checking the store with `bug` (none by default).
#[derive(Clone, Debug, Default)]
pub struct QueueModel {
    /// How far the world may go: jobs, workers, attempts, time.
    pub bounds: Bounds,
    /// A seeded bug the store makes, for checking that the checker finds it.
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

    /// The `config` line that sets `config`: every trace starts with its world's.
    pub fn config_op(config: Config) -> Op {
        Op::Config {
            base_ms: Some(config.base_ms),
            cap_ms: Some(config.cap_ms),
            lease_ms: Some(config.lease_ms),
        }
    }

    /// The operation `action` runs in `world`, if it runs one (a tick does not; a completion
    /// needs a held claim).
    pub fn op(&self, world: &World, action: &Action) -> Option<Op> {
        let now = world.now;
        let held = |worker: usize| world.workers.get(worker).copied().flatten();
        let complete =
            |worker: usize, held: Held, outcome: Outcome, now: u64, jitter: Option<f64>| Op::Complete {
                worker: worker_name(worker),
                id: job_name(held.job),
                attempt: held.attempt,
                outcome,
                now,
                jitter,
            };
        // A heartbeat of `held`'s job by `worker`, with its token `older` attempts back.
        let heartbeat = |worker: usize, held: Held, older: u64, now: u64| {
            let attempt = held.attempt.checked_sub(older).filter(|&a| a >= 1)?;
            Some(Op::Heartbeat { worker: worker_name(worker), id: job_name(held.job), attempt, now })
        };
        Some(match *action {
            Action::Enqueue { max_attempts, deadline_in, shape } => {
                let (not_before, base_ms, cap_ms) = Shape::fields(shape, now, world.config);
                Op::Enqueue {
                    id: job_name(world.ghosts.len()),
                    payload: PAYLOAD.into(),
                    max_attempts,
                    deadline: now + deadline_in,
                    now,
                    not_before,
                    base_ms,
                    cap_ms,
                }
            }
            Action::Reenqueue { job, same_payload } => Op::Enqueue {
                id: job_name(job),
                payload: if same_payload { PAYLOAD } else { OTHER_PAYLOAD }.into(),
                max_attempts: self.bounds.max_attempts.iter().max().map_or(1, |m| m + 1),
                deadline: now + 1,
                now,
                // Another schedule and backoff, which must change nothing either (SPEC 6.22).
                not_before: Some(now),
                base_ms: Some(0),
                cap_ms: None,
            },
            Action::Claim { worker } => Op::Claim { worker: worker_name(worker), now },
            Action::Complete { worker, outcome, jitter } => {
                complete(worker, held(worker)?, outcome, now, jitter)
            }
            Action::CompleteAsOther { worker, holder } => {
                complete(worker, held(holder)?, Outcome::Ok, now, None)
            }
            Action::CompleteEarly { worker } => {
                let held = held(worker)?;
                complete(worker, held, Outcome::Ok, held.claimed_at.checked_sub(1)?, None)
            }
            Action::Heartbeat { worker } => heartbeat(worker, held(worker)?, 0, now)?,
            Action::HeartbeatBack { worker } => heartbeat(worker, held(worker)?, 0, now.checked_sub(1)?)?,
            Action::HeartbeatStale { worker } => heartbeat(worker, held(worker)?, 1, now)?,
            Action::HeartbeatAsOther { worker, holder } => heartbeat(worker, held(holder)?, 0, now)?,
            Action::Cancel { job } => Op::Cancel { id: job_name(job), now },
            Action::Crash { .. } | Action::Tick => return None,
            Action::RunOnce { worker, outcome } => {
                Op::RunOnce { worker: worker_name(worker), now, after: None, outcome, jitter: None }
            }
            Action::RunOnceClockBack { worker } => Op::RunOnce {
                worker: worker_name(worker),
                now,
                after: Some(now.checked_sub(1)?),
                outcome: RunOutcome::Ok,
                jitter: None,
            },
            Action::Reap => Op::Reap { now },
            Action::Redrive { job } => Op::Redrive {
                id: job_name(job),
                now,
                add_attempts: self.bounds.add_attempts,
                deadline: now + self.bounds.redrive_deadline,
            },
            Action::Restart => Op::Restart,
            Action::Invalid { class } => class.op(now, world.ghosts.len()),
            Action::Stats => Op::Stats { now },
            Action::Get { job } => Op::Get { id: job_name(job) },
            Action::Delay { probe } => {
                let (attempt, base_ms, cap_ms, jitter) = *DELAY_PROBES.get(probe)?;
                Op::RetryDelay { attempt, base_ms, cap_ms, jitter }
            }
        })
    }

    /// The step: the next world and, if the action ran an operation, it and its response.
    pub fn step(&self, world: &World, action: &Action) -> Option<(World, Option<(Op, Response)>)> {
        let mut next = world.clone();
        next.events = Events::default();
        next.broken = Broken::NONE;
        match *action {
            Action::Tick => {
                if world.now >= self.bounds.horizon {
                    return None;
                }
                next.now += 1;
                next.forget_expired_leases();
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
        next.broken = rules::judge(&world.store, &op, &response, &next.store, &job_index);
        self.observe(world, action, &op, &response, &mut next);
        next.forget_expired_leases();
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
        if *action == Action::Restart
            && before.store.jobs().iter().any(|j| matches!(j.phase, Phase::Leased { .. }))
        {
            next.events.insert(Events::RESTART_WITH_LEASE);
        }
        match (action, op, response) {
            (
                Action::Enqueue { .. },
                &Op::Enqueue { deadline, now, not_before, .. },
                Response::Ok(Reply::Enqueued),
            ) => {
                next.ghosts.push(Ghost {
                    claims: 0,
                    sends: 0,
                    deadline,
                    redrives: 0,
                    report: HolderReport::Nothing,
                    lease_until: 0,
                    longest_lease: 0,
                    not_before: not_before.unwrap_or(now),
                    cancelled: false,
                });
            }
            (&Action::Cancel { job }, _, Response::Ok(Reply::Cancelled)) => {
                if let Some(ghost) = next.ghosts.get_mut(job) {
                    ghost.cancelled = true;
                }
            }
            (
                Action::Heartbeat { worker }
                | Action::HeartbeatBack { worker }
                | Action::HeartbeatStale { worker }
                | Action::HeartbeatAsOther { worker, .. },
                &Op::Heartbeat { attempt, now, .. },
                response,
            ) => self.heartbeat_seen(before, action, *worker, attempt, now, response, next),
            (
                &Action::Redrive { job },
                &Op::Redrive { deadline, ref id, .. },
                Response::Ok(Reply::Redriven),
            ) => {
                if before.store.job(id).is_some_and(|j| j.phase == Phase::Dead(DeadReason::Deadline)) {
                    next.events.insert(Events::REDRIVE_AFTER_DEADLINE);
                }
                if let Some(ghost) = next.ghosts.get_mut(job) {
                    ghost.deadline = deadline;
                    ghost.redrives += 1;
                    // The operator's say replaces the schedule (SPEC 4.12).
                    ghost.not_before = 0;
                }
            }
            (&Action::Claim { worker }, _, Response::Ok(Reply::Claimed { id, attempt, lease_until })) => {
                if let Some(job) = self.claimed(before, id, *lease_until, next) {
                    next.workers[worker] = Some(Held {
                        job,
                        attempt: *attempt,
                        claimed_at: before.now,
                        lease_until: *lease_until,
                    });
                }
            }
            (Action::RunOnce { .. } | Action::RunOnceClockBack { .. }, _, response) => {
                let claimed = match response {
                    Response::Ok(Reply::Crashed { id, .. }) => Some((id, HolderReport::Crashed)),
                    Response::Err(
                        Failure::UnknownError { id, .. } | Failure::RanClockWentBackwards { id, .. },
                    ) => Some((id, HolderReport::Unknown)),
                    // With a bug the store may answer otherwise; the worker still reported
                    // what its transport said.
                    Response::Ok(Reply::RanDone { id, .. }) => Some((id, HolderReport::Unknown)),
                    _ => None,
                };
                if matches!(response, Response::Err(Failure::RanClockWentBackwards { .. })) {
                    next.events.insert(Events::RUN_ONCE_CLOCK_BACK);
                }
                if let Some((id, report)) = claimed
                    && let Some(job) = self.claimed(before, id, before.now + before.config.lease_ms, next)
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
            (&Action::CompleteAsOther { holder, .. }, _, response) => {
                if let Some(held) = before.workers[holder] {
                    let current = before.ghosts.get(held.job).is_some_and(|g| g.claims == held.attempt);
                    if next.store != before.store {
                        next.events.insert(Events::STALE_CHANGED);
                    }
                    if current && *response == Response::Err(Failure::LeaseLost) {
                        next.events.insert(Events::WRONG_OWNER_REFUSED);
                    }
                }
            }
            (Action::CompleteEarly { .. }, _, Response::Err(Failure::ClockWentBackwards)) => {
                next.events.insert(Events::CLOCK_BACK_REFUSED);
            }
            (Action::Invalid { .. }, _, Response::Err(Failure::InvalidInput { .. })) => {
                let names_missing = op_id(op).is_some_and(|id| before.store.job(id).is_none());
                if names_missing {
                    next.events.insert(Events::INVALID_BEFORE_LOOKUP);
                }
            }
            _ => {}
        }
    }

    /// Bookkeeping for a claim of job `id` the store answered, with a lease until
    /// `lease_until`: returns the job's index.
    fn claimed(&self, before: &World, id: &str, lease_until: u64, next: &mut World) -> Option<usize> {
        let job = job_index(id)?;
        let now = before.now;
        self.claim_events(before, job, next);
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
        let scheduled = before.store.job(id).is_some_and(|j| j.not_before > j.enqueued_at);
        if scheduled && ghost.claims == 0 && ghost.redrives == 0 && now == ghost.not_before {
            next.events.insert(Events::SCHEDULED_ON_TIME);
        }
        ghost.longest_lease = ghost.longest_lease.max(before.config.lease_ms);
        ghost.claims += 1;
        ghost.sends += 1;
        ghost.report = HolderReport::Nothing;
        ghost.lease_until = lease_until;
        Some(job)
    }

    /// The `sometimes` events of a claim that took job `job`: a tie broken, a later job due
    /// earlier taken first. Judged on the jobs claimable at the claim (after its reap), as the
    /// store held them before.
    fn claim_events(&self, before: &World, job: usize, next: &mut World) {
        let due = rules::claimable(before.store.jobs(), before.now);
        let Some(&(taken_at, _)) = due.iter().find(|(_, id)| job_index(id) == Some(job)) else {
            return;
        };
        if due.iter().any(|(at, id)| *at == taken_at && job_index(id) != Some(job)) {
            next.events.insert(Events::TIE_BROKEN);
        }
        if due.iter().any(|(_, id)| job_index(id).is_some_and(|other| other < job)) {
            next.events.insert(Events::EARLIER_DUE_FIRST);
        }
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
        let config = before.config;
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
        ghost.report = HolderReport::Completed(outcome);
        if matches!(response, Response::Ok(_)) {
            ghost.lease_until = 0;
            if held.lease_until <= now {
                next.events.insert(Events::LATE_ACCEPTED);
            }
        }
        let jitter = jitter.unwrap_or(0.0);
        // The job's own settings where it has them (SPEC 6.23), as its enqueue set them.
        let own = before.store.job(&job_name(held.job)).map_or((None, None), |j| (j.base_ms, j.cap_ms));
        let (base_ms, cap_ms) = (own.0.unwrap_or(config.base_ms), own.1.unwrap_or(config.cap_ms));
        let delay = rules::delay(held.attempt, base_ms, cap_ms, jitter);
        if *response == Response::Ok(Reply::Dead { reason: DeadReason::Deadline })
            && outcome == Outcome::Retryable
            && delay > 0
            && now + delay == ghost.deadline
        {
            next.events.insert(Events::EXACT_DEADLINE_DEATH);
        }
        if let Response::Ok(Reply::Retry { .. }) = response {
            if delay != rules::exact_delay(held.attempt, base_ms, cap_ms, jitter) {
                next.events.insert(Events::BINARY64_EDGE);
            }
            if cap_ms < base_ms && delay > 0 {
                next.events.insert(Events::CAP_BELOW_BASE_RETRY);
            }
            let queue_delay = rules::delay(held.attempt, config.base_ms, config.cap_ms, jitter);
            if own.1.is_some_and(|cap| cap != config.cap_ms) && delay != queue_delay {
                next.events.insert(Events::OWN_CAP_RETRY);
            }
        }
    }

    /// Bookkeeping for a heartbeat by `worker` presenting `attempt` at `now`: an accepted one
    /// by the holder of the latest claim extends what the worker and the world know of the
    /// lease; any other that changed the store is a stale token changing it (SPEC 4.5).
    #[allow(clippy::too_many_arguments)]
    fn heartbeat_seen(
        &self,
        before: &World,
        action: &Action,
        worker: usize,
        attempt: u64,
        now: u64,
        response: &Response,
        next: &mut World,
    ) {
        let holder = match *action {
            Action::HeartbeatAsOther { holder, .. } => holder,
            _ => worker,
        };
        let Some(held) = before.workers.get(holder).copied().flatten() else {
            return;
        };
        let Some(ghost) = next.ghosts.get_mut(held.job) else {
            return;
        };
        let current = holder == worker && attempt == held.attempt && attempt == ghost.claims;
        if !current {
            if next.store != before.store {
                next.events.insert(Events::STALE_CHANGED);
            }
            if *response == Response::Err(Failure::LeaseLost) {
                next.events.insert(Events::STALE_HEARTBEAT_REFUSED);
            }
            return;
        }
        match *response {
            Response::Ok(Reply::Extended { lease_until }) => {
                if now + 1 == ghost.deadline {
                    next.events.insert(Events::HEARTBEAT_LAST_INSTANT);
                }
                ghost.longest_lease = ghost.longest_lease.max(before.config.lease_ms);
                if lease_until > next.now {
                    ghost.lease_until = lease_until;
                }
                if let Some(Some(held)) = next.workers.get_mut(worker) {
                    held.lease_until = lease_until;
                }
            }
            Response::Err(Failure::DeadlinePassed) if now == ghost.deadline => {
                next.events.insert(Events::HEARTBEAT_AT_DEADLINE_REFUSED);
            }
            _ => {}
        }
    }

    /// The worlds before anything happened: an empty store configured with each of the
    /// bounds' settings.
    pub fn initial_worlds(&self) -> Vec<World> {
        self.bounds
            .configs
            .iter()
            .map(|&config| {
                let mut store = Store::new().with_bug(self.bug);
                store.step(&QueueModel::config_op(config));
                World {
                    now: 0,
                    store,
                    config,
                    workers: vec![None; self.bounds.workers],
                    ghosts: Vec::new(),
                    events: Events::default(),
                    broken: Broken::NONE,
                }
            })
            .collect()
    }
}

/// The id an operation names, if it names one.
fn op_id(op: &Op) -> Option<&str> {
    match op {
        Op::Enqueue { id, .. }
        | Op::Complete { id, .. }
        | Op::Heartbeat { id, .. }
        | Op::Redrive { id, .. }
        | Op::Cancel { id, .. }
        | Op::Get { id } => Some(id),
        _ => None,
    }
}

impl QueueModel {
    /// Every action possible in `world`, in a fixed order (a path names its steps by their
    /// index in this list).
    pub fn possible_actions(&self, world: &World, actions: &mut Vec<Action>) {
        let b = &self.bounds;
        let now = world.now;
        // A job of a SPEC 1.1 shape is the world's only job: its edges are its own (a claim at
        // its schedule, a retry under its own backoff), and a second job beside it would
        // multiply the states by all their interleavings for nothing new.
        let shaped = world
            .store
            .jobs()
            .first()
            .is_some_and(|j| j.not_before > j.enqueued_at || j.base_ms.is_some() || j.cap_ms.is_some());
        if world.ghosts.len() < b.jobs && !shaped {
            for &max_attempts in &b.max_attempts {
                for &deadline_in in b.deadlines.iter().filter(|&&d| b.room_for(now, d)) {
                    actions.push(Action::Enqueue { max_attempts, deadline_in, shape: None });
                }
            }
            // The largest budget and the nearest deadline: a retry with time left, a smaller
            // subtree than the farthest deadline's.
            let largest = (b.max_attempts.iter().max(), b.deadlines.iter().min());
            if let (true, (Some(&max_attempts), Some(&deadline_in))) = (world.ghosts.is_empty(), largest)
                && b.room_for(now, deadline_in)
            {
                for &shape in b.shapes.iter().filter(|_| b.contract_1_1) {
                    actions.push(Action::Enqueue { max_attempts, deadline_in, shape: Some(shape) });
                }
            }
        }
        for job in 0..world.ghosts.len() {
            actions.push(Action::Reenqueue { job, same_payload: true });
            actions.push(Action::Reenqueue { job, same_payload: false });
        }
        for (worker, held) in world.workers.iter().enumerate() {
            if let Some(held) = held {
                // The holder's heartbeat at its edges only: the last instant before the deadline
                // (where SPEC 4.11's bound is reached) and from the deadline on (refused). One
                // in the middle of a lease extends it like any other and only adds states.
                if b.contract_1_1 && world.ghosts.get(held.job).is_some_and(|g| now + 1 >= g.deadline) {
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
                    actions.push(Action::CompleteEarly { worker });
                    actions.push(Action::Crash { worker });
                    if b.contract_1_1 && now > 0 {
                        actions.push(Action::HeartbeatBack { worker });
                    }
                    if b.contract_1_1 && held.attempt > 1 {
                        actions.push(Action::HeartbeatStale { worker });
                    }
                    for other in (0..world.workers.len()).filter(|&w| w != worker) {
                        actions.push(Action::CompleteAsOther { worker: other, holder: worker });
                        if b.contract_1_1 {
                            actions.push(Action::HeartbeatAsOther { worker: other, holder: worker });
                        }
                    }
                }
            } else {
                actions.push(Action::Claim { worker });
                actions.push(Action::RunOnce { worker, outcome: RunOutcome::Unknown });
                actions.push(Action::RunOnce { worker, outcome: RunOutcome::Crash });
                if b.hostile {
                    actions.push(Action::RunOnceClockBack { worker });
                }
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
        for (job, ghost) in world.ghosts.iter().enumerate().filter(|_| b.contract_1_1) {
            // A cancel of a leased, done or dead job is a refusal and adds no state: offered
            // always. One that applies adds a dead(cancelled) state at every instant and a
            // redrive out of it, so it is offered for the first job only, while it has never
            // been claimed nor redriven (scheduled or not, past its deadline or not).
            let pending =
                world.store.job(&job_name(job)).is_some_and(|j| matches!(j.phase, Phase::Pending { .. }));
            if !pending || (job == 0 && ghost.claims == 0 && ghost.redrives == 0) {
                actions.push(Action::Cancel { job });
            }
        }
        actions.push(Action::Restart);
        if b.hostile {
            // A redrive adding 2^31 − 1 attempts is only bad once the job has been claimed.
            let claimed = world.ghosts.first().is_some_and(|g| g.claims >= 1);
            let classes = Invalid::ALL
                .into_iter()
                .filter(|&c| c != Invalid::RedriveOverflow || claimed)
                .filter(|&c| !c.added_in_1_1() || (now == 0 && b.contract_1_1));
            actions.extend(classes.map(|class| Action::Invalid { class }));
            actions.push(Action::Stats);
            actions.extend((0..world.ghosts.len()).map(|job| Action::Get { job }));
            if now == 0 && world.ghosts.is_empty() {
                actions.extend((0..DELAY_PROBES.len()).map(|probe| Action::Delay { probe }));
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

impl World {
    /// Clears the ghost leases the clock has passed: an expired lease is the store's to
    /// reclaim, and keeping its end would only split states that behave the same.
    fn forget_expired_leases(&mut self) {
        for ghost in &mut self.ghosts {
            if ghost.lease_until <= self.now {
                ghost.lease_until = 0;
            }
        }
    }

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
            config: self.config,
            ghosts: self.ghosts.clone(),
            events: self.events,
            broken: self.broken,
        })
    }
}

impl Representative for World {
    /// [`World::canonical`], for stateright's checkers.
    fn representative(&self) -> World {
        self.canonical().into_owned()
    }
}
