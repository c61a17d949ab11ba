//! How far the world goes: its scenes, and the values every scene chooses from.
//!
//! A *scene* is a family of initial worlds with its own limits: how many jobs and workers, how
//! long the clock runs and from where, which settings it starts from and may switch between,
//! and which SPEC 1.1 shapes its first job may take. The checker explores every scene's worlds
//! in one search; the union is the world. Dimensions that interact are explored together in one
//! scene, and those that do not (the far end of the integer range, where no lease can expire
//! before the clock does) in scenes of their own, because their product would cost far more
//! states than it shows (docs/model.md says what each scene gives up).
//!
//! Layer: the bottom of the world, above the reference store's settings ([`Config`]) and the
//! seeded bugs (a bug names the small bounds that show it). It may not reach up: a bound says
//! how far the world goes, not what the world is.

use std::fmt;

use crate::MAX_INT;
use crate::bug::Bug;
use crate::reference::Config;

/// The jitter on which one binary64 multiply and exact arithmetic part at a window of 3
/// (SPEC 2.3): 3 × 0.6666666666666666 is 2 in binary64, 1.99… exactly.
pub const TWO_THIRDS: f64 = 0.6666666666666666;

/// The doubling settings: base 1, cap 2 give windows 1 and 2, so jitters 0, 0.5, 1 give delays
/// 0, 1, 2 and `now + delay` lands exactly on a deadline in many ways; and a reap limit of 1,
/// so that two jobs due to end at once take two reaps, and a claim's pick passes over the one
/// its reap left (SPEC 3.3.1, 3.3.2, 6.37).
pub const DOUBLING: Config = Config { base_ms: 1, cap_ms: 2, lease_ms: 2, reap_limit: 1 };
/// A cap below the base: every window is the cap, 3, where jitter 0.6666666666666666 floors
/// differently in binary64 (2) and in exact arithmetic (1); a lease of 1 and a reap limit of 2,
/// so that a switch between the two settings changes every one of the four, and a reap ends
/// fewer jobs than its limit.
pub const CAP_BELOW_BASE: Config = Config { base_ms: 4, cap_ms: 3, lease_ms: 1, reap_limit: 2 };
/// The backlog's settings: the doubling windows, a lease of 1 (so that a job due to end and one
/// still in time fit in a short clock) and a reap limit of 1.
pub const BACKLOG: Config = Config { base_ms: 1, cap_ms: 2, lease_ms: 1, reap_limit: 1 };
/// The largest settings: every window, every lease and the reap limit 2^53 − 1, so that a
/// lease's expiry passes 2^53 − 1 (SPEC 6.10) and a retry's `now + delay` its deadline by far.
pub const LARGEST: Config =
    Config { base_ms: MAX_INT, cap_ms: MAX_INT, lease_ms: MAX_INT, reap_limit: MAX_INT };

/// A SPEC 1.1 shape the first job of a scene may be enqueued with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Scheduled: `not_before` = `now + after` (SPEC 3.2, 4.12).
    Scheduled {
        /// How far after the enqueue's `now` the job first becomes claimable.
        after: u64,
    },
    /// Its own backoff: each setting its own or the queue's (SPEC 3.2, 6.23).
    Own {
        /// Its own `base_ms`, if any.
        base_ms: Option<u64>,
        /// Its own `cap_ms`, if any.
        cap_ms: Option<u64>,
    },
}

/// Where a job goes (SPEC 1.6): a queue, the default one or [`OTHER_QUEUE`], at priority 0 or
/// 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lane {
    /// `"default"`, priority 0: nothing said.
    Default,
    /// `"default"`, priority 1: any job of priority 0 due goes first.
    Low,
    /// Queue [`OTHER_QUEUE`], priority 0.
    OtherQueue,
    /// Queue [`OTHER_QUEUE`], priority 1.
    OtherLow,
}

/// The second queue. Its name has a character with a decomposed form, so that a queue equal to
/// it but for its bytes exists in every class of [`crate::choices::NameClass`].
pub const OTHER_QUEUE: &str = "qé";

/// How far back the choices scene may date an enqueue: so far that a job enqueued then has
/// waited longer than any priority could age by (SPEC 4.8: nothing ages).
pub const FAR: u64 = 1 << 40;

impl Lane {
    /// Every lane.
    pub const ALL: [Lane; 4] = [Lane::Default, Lane::Low, Lane::OtherQueue, Lane::OtherLow];

    /// The enqueue's `queue` and `priority` for this lane: absent for the default one.
    pub fn fields(self) -> (Option<String>, Option<u64>) {
        let other = || Some(OTHER_QUEUE.to_owned());
        match self {
            Lane::Default => (None, None),
            Lane::Low => (None, Some(1)),
            Lane::OtherQueue => (other(), None),
            Lane::OtherLow => (other(), Some(1)),
        }
    }
}

impl Shape {
    /// The enqueue's `not_before`, `base_ms` and `cap_ms` for this shape at `now`.
    pub fn fields(shape: Option<Shape>, now: u64) -> (Option<u64>, Option<u64>, Option<u64>) {
        match shape {
            None => (None, None, None),
            Some(Shape::Scheduled { after }) => (Some(now + after), None, None),
            Some(Shape::Own { base_ms, cap_ms }) => (None, base_ms, cap_ms),
        }
    }
}

/// The shapes of the default scene. Each own backoff is chosen so that, under [`DOUBLING`] or
/// [`CAP_BELOW_BASE`], its first retry waits otherwise than the queue's would, and so that a
/// switch of settings between its enqueue and its retry shows which of the queue's settings it
/// took, and when (6.23): base 5 alone takes the cap in effect (2 or 3); cap 2 alone takes the
/// base in effect (1 or 4: windows 1 and 2); base 3 with cap 2 ignores both.
pub const SHAPES: [Shape; 4] = [
    Shape::Scheduled { after: 1 },
    Shape::Own { base_ms: Some(5), cap_ms: None },
    Shape::Own { base_ms: None, cap_ms: Some(2) },
    Shape::Own { base_ms: Some(3), cap_ms: Some(2) },
];

/// One family of initial worlds and its limits.
#[derive(Clone, Debug, PartialEq)]
pub struct Scene {
    /// What reports call it.
    pub name: &'static str,
    /// How many job ids can be enqueued.
    pub jobs: usize,
    /// How many workers claim and complete.
    pub workers: usize,
    /// The clock runs from `epoch` to `epoch + horizon`.
    pub horizon: u64,
    /// Where the clock starts.
    pub epoch: u64,
    /// The settings of each initial world; with `switch`, the world may `config` any other
    /// of them between two steps.
    pub configs: Vec<Config>,
    /// Whether the settings may change between any two steps.
    pub switch: bool,
    /// The SPEC 1.1 shapes the *first* job may also be enqueued with; such a job is the
    /// scene's only job (a second beside it would multiply the states by their
    /// interleavings for nothing new).
    pub shapes: Vec<Shape>,
    /// Whether a later enqueue may be dated one millisecond before the clock (when the job
    /// before it was enqueued at the clock), so that the order of `enqueued_at` differs from
    /// the order of first enqueues (SPEC 6.1).
    pub backdate: bool,
    /// Whether every pending job may be cancelled, whatever came before (a retry, a redrive);
    /// otherwise only the first job, before its first claim and redrive.
    pub cancel_any: bool,
    /// Whether the operator prunes and forgets (SPEC 3.14, 3.15) at the clock, so that
    /// tombstones meet every operation.
    pub retention: bool,
    /// Whether the operator cancels leased jobs (SPEC 3.13), so that cancel requests meet
    /// every operation.
    pub cancel_leased: bool,
    /// The lanes each job may go to, by job index (a job past the list goes to the default
    /// one).
    pub lanes: Vec<Vec<Lane>>,
    /// The queues every worker names in its claims; none (the default queue, unnamed) if
    /// empty. Other lists are the probes' ([`crate::probes`]).
    pub served: Vec<&'static str>,
    /// Whether the second job may be enqueued dated [`FAR`] back (the clock starting at
    /// [`FAR`]): available long before the first.
    pub far_back: bool,
    /// The budgets an enqueue may ask for here, if not [`Bounds::max_attempts`].
    pub max_attempts: Option<Vec<u64>>,
    /// The deadlines an enqueue may ask for here, if not [`Bounds::deadlines`].
    pub deadlines: Option<Vec<u64>>,
    /// How many times the operator may redrive one job here, if not [`Bounds::redrives`].
    pub redrives: Option<u64>,
    /// Whether jobs are enqueued only while the clock is at its start: they arrive together.
    pub arrive_together: bool,
    /// Whether every deadline leaves a whole lease before the end of the clock, so that at
    /// the end every job must be over (SPEC 4.7, checked at the horizon). Off where leases
    /// outlive the integer range.
    pub liveness: bool,
    /// Whether the operator pauses and resumes both queues (SPEC 3.16, 3.17).
    pub pauses: bool,
    /// Whether the operator makes a job waiting for its schedule or its backoff due now
    /// (SPEC 3.18).
    pub run_now: bool,
}

impl Scene {
    /// The main scene: two jobs, two workers, a clock up to 5 from 0, both small settings,
    /// backdated enqueues. What only one job needs (switched settings, the shapes, cancels of
    /// a job that has run) is the one-job scene's.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn main() -> Scene {
        Scene {
            name: "two jobs",
            jobs: 2,
            workers: 2,
            horizon: 5,
            epoch: 0,
            configs: vec![DOUBLING],
            switch: false,
            shapes: Vec::new(),
            backdate: true,
            cancel_any: false,
            retention: false,
            cancel_leased: false,
            lanes: Vec::new(),
            served: Vec::new(),
            far_back: false,
            max_attempts: None,
            deadlines: None,
            redrives: None,
            arrive_together: false,
            liveness: true,
            pauses: false,
            run_now: false,
        }
    }

    /// One job and everything a job can meet alone: two workers, a clock up to 6, both small
    /// settings switched between any two steps, every shape, cancels in every pending status,
    /// and budgets of 1 and 3, so that a job retries after its second attempt (the window
    /// doubles, or meets the cap) and one that has run is taken and retried again.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn one_job() -> Scene {
        Scene {
            name: "one job",
            jobs: 1,
            horizon: 6,
            configs: vec![DOUBLING, CAP_BELOW_BASE],
            switch: true,
            shapes: SHAPES.to_vec(),
            backdate: false,
            cancel_any: true,
            retention: false,
            max_attempts: Some(vec![1, 3]),
            ..Scene::main()
        }
    }

    /// The scene of `jobs` jobs (one job's, or two jobs'), with `workers` and a clock up to
    /// `horizon`: what `--jobs`, `--workers` and `--horizon` ask for, and the tests' small
    /// bounds.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn sized(jobs: usize, workers: usize, horizon: u64) -> Scene {
        let scene = if jobs == 1 { Scene::one_job() } else { Scene::main() };
        Scene { jobs, workers, horizon, ..scene }
    }

    /// The far end of the integer range (SPEC 3.1, 6.10): one job, two workers, a clock from
    /// 2^53 − 4 to 2^53 − 1, the doubling settings and the largest ones, so that leases and
    /// retries end past 2^53 − 1 and a deadline can be 2^53 − 1 itself. No liveness: its
    /// leases outlive the clock.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn edges() -> Scene {
        Scene {
            name: "range edges",
            jobs: 1,
            workers: 2,
            horizon: 3,
            epoch: MAX_INT - 3,
            configs: vec![DOUBLING, LARGEST],
            switch: true,
            shapes: vec![Shape::Own { base_ms: Some(MAX_INT), cap_ms: Some(MAX_INT) }],
            backdate: false,
            cancel_any: true,
            retention: false,
            cancel_leased: false,
            lanes: Vec::new(),
            served: Vec::new(),
            far_back: false,
            max_attempts: None,
            deadlines: None,
            redrives: None,
            arrive_together: false,
            liveness: false,
            pauses: false,
            run_now: false,
        }
    }

    /// Retention and running cancels (SPEC 3.13–3.15): one job, in the default lane or in the
    /// other queue at priority 1 (which a retry, a cancel and a prune must keep), two workers
    /// serving both queues, a clock up to 5, the doubling settings; the operator prunes and
    /// forgets at the clock (or a millisecond behind it) and cancels leased jobs. A job
    /// forgotten is enqueued anew and lives again: run, redriven, pruned again.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn retention() -> Scene {
        Scene {
            name: "retention",
            jobs: 1,
            configs: vec![DOUBLING],
            backdate: false,
            cancel_any: true,
            retention: true,
            cancel_leased: true,
            lanes: vec![vec![Lane::Default, Lane::OtherLow]],
            served: vec!["default", OTHER_QUEUE],
            ..Scene::main()
        }
    }

    /// A backlog of jobs due to end (SPEC 3.3.1, 3.3.2, 6.37): three jobs arriving together,
    /// one worker, a clock up to 4, a lease of 1 and a reap limit of 1 ([`BACKLOG`]), budget 1,
    /// no redrives, and cancels of leased jobs; so that a reap stops at its limit with jobs of
    /// each rule left, and a claim's pick passes over a job due to end for a third one.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn backlog() -> Scene {
        Scene {
            name: "backlog",
            jobs: 3,
            workers: 1,
            horizon: 4,
            configs: vec![BACKLOG],
            arrive_together: true,
            backdate: false,
            cancel_leased: true,
            max_attempts: Some(vec![1]),
            redrives: Some(0),
            ..Scene::main()
        }
    }

    /// The choices of SPEC 1.6, 3.3.2 and 3.8 ([`crate::choices`]): two jobs, the first at
    /// priority 0 or 1 of the default queue, the second in any lane, at the clock, a
    /// millisecond later or dated [`FAR`] back (so that either is available first, at equal
    /// or other priorities, in the same queue or two); one worker serving both queues (the
    /// probes claim with every other list); a clock up to 4 from [`FAR`], a lease of 1,
    /// budget 1, no redrives. Prunes and forgets are the retention and revival scenes'.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn choices() -> Scene {
        Scene {
            name: "choices",
            workers: 1,
            horizon: 4,
            epoch: FAR,
            configs: vec![BACKLOG],
            backdate: false,
            retention: false,
            lanes: vec![vec![Lane::Default, Lane::Low], Lane::ALL.to_vec()],
            served: vec!["default", OTHER_QUEUE],
            far_back: true,
            max_attempts: Some(vec![1]),
            redrives: Some(0),
            ..Scene::main()
        }
    }

    /// A forgotten id's second life beside another job (SPEC 3.15, 6.1): two jobs, one worker,
    /// a clock up to 3, a lease of 1, budget 1, a deadline 2 ms away, no redrives; prunes and
    /// forgets, so that an id forgotten and enqueued anew after another job goes after it in
    /// the order of first enqueues.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn revival() -> Scene {
        Scene {
            name: "revival",
            workers: 1,
            horizon: 3,
            configs: vec![BACKLOG],
            backdate: false,
            retention: true,
            max_attempts: Some(vec![1]),
            deadlines: Some(vec![2]),
            redrives: Some(0),
            ..Scene::main()
        }
    }

    /// Pauses (SPEC 3.16, 3.17, 4.15, 6.39): two jobs arriving together, the first in the
    /// default queue, the second in [`OTHER_QUEUE`] or the default one; one worker serving
    /// both; a clock up to 4, a lease of 1, budget 1, no redrives; the operator pauses and
    /// resumes either queue between any two steps, so that a claim passes over a paused
    /// queue's job for another queue's, a reap ends a paused queue's job by its deadline or
    /// its budget, and a resume finds a job due, or due to end.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn pauses() -> Scene {
        Scene {
            name: "pauses",
            workers: 1,
            horizon: 4,
            configs: vec![BACKLOG],
            backdate: false,
            lanes: vec![vec![Lane::Default], vec![Lane::OtherQueue, Lane::Default]],
            served: vec!["default", OTHER_QUEUE],
            max_attempts: Some(vec![1]),
            redrives: Some(0),
            arrive_together: true,
            pauses: true,
            ..Scene::main()
        }
    }

    /// `run_now` of a scheduled job (SPEC 3.18, 4.12): one job, scheduled 2 ms after its
    /// enqueue, one worker, a clock up to 4, a lease of 1, budget 1, a deadline 3 ms away; the
    /// operator makes it due before its schedule, and a claim takes it then.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn run_now() -> Scene {
        Scene {
            name: "run_now",
            jobs: 1,
            workers: 1,
            horizon: 4,
            configs: vec![BACKLOG],
            shapes: vec![Shape::Scheduled { after: 2 }],
            backdate: false,
            max_attempts: Some(vec![1]),
            deadlines: Some(vec![3]),
            redrives: Some(0),
            run_now: true,
            ..Scene::main()
        }
    }

    /// The last instant of the clock.
    pub fn end(&self) -> u64 {
        self.epoch + self.horizon
    }

    fn longest_lease(&self) -> u64 {
        self.configs.iter().map(|c| c.lease_ms).max().unwrap_or(0)
    }

    /// Whether a deadline `after` milliseconds from `now` may be set: within the integer range
    /// and, where liveness is checked, leaving a whole lease before the end of the clock.
    pub fn room_for(&self, now: u64, after: u64) -> bool {
        let deadline = now + after;
        deadline <= MAX_INT && (!self.liveness || deadline + self.longest_lease() <= self.end())
    }
}

/// The watchdog beside every attempt's execution (the model of `retryq work`'s): it ends the
/// execution when the lease's end, less `margin`, passes on the holder's own clock, which may
/// lag the store's by up to `skew`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Watchdog {
    /// How long before the lease's end (on its own clock) the watchdog ends the execution.
    pub margin: u64,
    /// How far the holder's clock may lag the store's.
    pub skew: u64,
}

/// The bounds of the world the checker explores.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    /// The scenes: each a family of initial worlds with its own limits.
    pub scenes: Vec<Scene>,
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
    /// The watchdog of every execution.
    pub watchdog: Watchdog,
    /// Whether the world uses SPEC 1.1's operations and fields (heartbeat, cancel, the
    /// shapes, their arguments). Off, it is the contract 1.0 world: what a reading that does
    /// not run them yet can be compared on.
    pub contract_1_1: bool,
    /// Whether the world is hostile: bad arguments of every class, clocks that go back,
    /// completions by the wrong worker, holders that crash, reads.
    pub hostile: bool,
}

impl Default for Bounds {
    /// The default check: two jobs, one job, the range edges; hostile.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    fn default() -> Self {
        Bounds {
            scenes: vec![
                Scene::main(),
                Scene::one_job(),
                Scene::edges(),
                Scene::choices(),
                Scene::retention(),
                Scene::backlog(),
                Scene::revival(),
                Scene::pauses(),
                Scene::run_now(),
            ],
            jitters: vec![0.0, 0.5, 1.0, TWO_THIRDS],
            max_attempts: vec![1, 2],
            deadlines: vec![2, 3],
            redrives: 2,
            add_attempts: 1,
            redrive_deadline: 1,
            watchdog: Watchdog { margin: 1, skew: 1 },
            contract_1_1: true,
            hostile: true,
        }
    }
}

impl Bounds {
    /// One scene ([`Scene::sized`]) with `jobs`, `workers` and a clock up to `horizon`: what
    /// `--jobs`, `--workers` and `--horizon` ask for.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn sized(jobs: usize, workers: usize, horizon: u64) -> Self {
        Bounds { scenes: vec![Scene::sized(jobs, workers, horizon)], ..Bounds::default() }
    }

    /// Small bounds where every property about one job is decided: one job, two workers, a
    /// clock up to 5. For tests and `retryq verify`. (The examples about two jobs — a tie
    /// broken, a later job due earlier — need two.)
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn small() -> Self {
        Bounds::sized(1, 2, 5)
    }

    /// Two jobs, one worker, a clock up to 5 (where an enqueue at 1 leaves room for one dated
    /// back to 0), budget 1 and deadlines 2 ms away: the smallest world where `enqueued_at`
    /// and first enqueue disagree on a tie.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn backdating() -> Self {
        Bounds { max_attempts: vec![1], deadlines: vec![2], ..Bounds::sized(2, 1, 5) }
    }

    /// Small bounds that show `bug`: [`Bounds::small`], except that a bug about *another*
    /// job (spilling over to it, or passing it over, or ordering it) needs two jobs, and then
    /// one worker and a clock up to 4 suffice (5, and an enqueue dated back, for a bug about
    /// `enqueued_at`); and one of the choices, retention, a backlog or the range's edges needs
    /// that scene.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn small_for(bug: Bug) -> Self {
        if bug.needs_backdating() {
            return Bounds::backdating();
        }
        if bug.needs_two_jobs() {
            return Bounds::sized(2, 1, 4);
        }
        if bug.needs_backlog() {
            return Bounds { scenes: vec![Scene::backlog()], ..Bounds::default() };
        }
        if bug.needs_lanes() {
            return Bounds { scenes: vec![Scene::choices()], ..Bounds::default() };
        }
        if bug.needs_revival() {
            return Bounds { scenes: vec![Scene::revival()], ..Bounds::default() };
        }
        if bug.needs_retention() {
            return Bounds { scenes: vec![Scene::retention()], ..Bounds::default() };
        }
        if bug.needs_range_edges() {
            return Bounds { scenes: vec![Scene::edges()], ..Bounds::default() };
        }
        if bug.needs_pauses() {
            return Bounds { scenes: vec![Scene::pauses()], ..Bounds::default() };
        }
        Bounds::small()
    }

    /// The `--deep` preset: budgets of 1 and 3 in every scene, so that with two jobs too a
    /// completion computes the delay after a second attempt and a job is claimed three times.
    #[mutants::skip] // a preset: see .cargo/mutants-model.toml
    pub fn deep() -> Self {
        Bounds { max_attempts: vec![1, 3], ..Bounds::default() }
    }

    /// The most claims any job can see in a store that keeps SPEC 4.1: the largest budget
    /// plus every redrive's. A buggy store can claim forever at one instant (attempts reset,
    /// stolen leases); the boundary stops it one claim past this, where 4.1 already fails.
    pub fn max_claims(&self) -> u64 {
        let scenes = self.scenes.iter().filter_map(|s| s.max_attempts.as_ref()).flatten();
        let largest = self.max_attempts.iter().chain(scenes).copied().max().unwrap_or(0);
        largest + self.redrives * self.add_attempts
    }

    /// How many times the operator may redrive one job in `scene`.
    pub fn redrives_in(&self, scene: &Scene) -> u64 {
        scene.redrives.unwrap_or(self.redrives)
    }

    /// The deadlines an enqueue may ask for in `scene`, as milliseconds after `now`.
    pub fn deadlines_in<'a>(&'a self, scene: &'a Scene) -> &'a [u64] {
        scene.deadlines.as_deref().unwrap_or(&self.deadlines)
    }

    /// The budgets an enqueue may ask for in `scene`.
    pub fn budgets<'a>(&'a self, scene: &'a Scene) -> &'a [u64] {
        scene.max_attempts.as_deref().unwrap_or(&self.max_attempts)
    }
}

impl fmt::Display for Scene {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let configs: Vec<String> = self
            .configs
            .iter()
            .map(|c| {
                format!(
                    "base {} cap {} lease {} reap limit {}",
                    c.base_ms, c.cap_ms, c.lease_ms, c.reap_limit
                )
            })
            .collect();
        write!(
            f,
            "{}: jobs {}, workers {}, clock {}..={}, settings [{}]{}, first-job shapes {}{}{}{}{}{}{}",
            self.name,
            self.jobs,
            self.workers,
            self.epoch,
            self.end(),
            configs.join("; "),
            if self.switch { " switched between steps" } else { "" },
            self.shapes.len(),
            if self.backdate { ", backdated enqueues" } else { "" },
            if self.cancel_any { ", cancels of any pending job" } else { "" },
            if self.retention { ", prunes and forgets" } else { "" },
            if self.cancel_leased { ", cancels of leased jobs" } else { "" },
            match (self.lanes.is_empty(), self.far_back) {
                (true, _) => "",
                (false, false) => ", two queues and two priorities",
                (false, true) => ", two queues and two priorities, enqueues dated far back",
            },
            if self.liveness { "" } else { ", no liveness" },
        )?;
        if self.pauses {
            f.write_str(", pauses and resumes")?;
        }
        if self.run_now {
            f.write_str(", run_now of waiting jobs")?;
        }
        Ok(())
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scenes: Vec<String> = self.scenes.iter().map(Scene::to_string).collect();
        write!(
            f,
            "scenes [{}]; jitter {:?}, max_attempts {:?}, deadlines now+{:?}, redrives {} (+{} attempts, \
             deadline now+{}), watchdog margin {} skew {}, {}",
            scenes.join("; "),
            self.jitters,
            self.max_attempts,
            self.deadlines,
            self.redrives,
            self.add_attempts,
            self.redrive_deadline,
            self.watchdog.margin,
            self.watchdog.skew,
            if self.hostile { "hostile" } else { "friendly" }
        )
    }
}

/// The `retry_delay` operations the hostile world asks for, as (attempt, base_ms, cap_ms,
/// jitter). With budgets of 1 and 2 a completion computes only the delay after attempt 1, so
/// the formula's doubling, its cap after several doublings, saturation and binary64's edges
/// are asked of the store directly. `retry_delay` reads no state, so asking once, from each
/// initial world, asks it everywhere.
pub const DELAY_PROBES: [(u64, u64, u64, f64); 13] = [
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
    // A window where binary64's spacing is 1, so its rounding of the product moves the floor:
    // (2^53 − 2) × 0.75 is exactly halfway between two integers and ties to the even one below.
    (1, crate::MAX_INT - 1, crate::MAX_INT, 0.75),
];
