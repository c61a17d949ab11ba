//! Traces nobody wrote by hand, biased toward the edges where retry queues break.
//!
//! Two independent generators:
//!
//! - [`abstract_trace`], a proptest strategy over *abstract* steps ("complete job 1 as its
//!   lease holder", "claim exactly when job 0's lease expires", "retry so that now + delay
//!   lands one before job 2's deadline"), which [`materialize`] turns into concrete
//!   operations by playing them on the reference model. The edges are reached on purpose,
//!   not by luck: lease expiry exactly at `now`, `now + delay` on the deadline and one
//!   either side, stale fencing tokens after a reclaim, crashes at every point, the clock
//!   going back, re-enqueue with the same and a different payload, redrive, restart, ids
//!   reused, invalid lines mixed in; and SPEC 1.1's: heartbeats by the holder, with a stale
//!   token, by another worker, at the deadline and with the clock back; cancels in every
//!   status; scheduled starts (out of range at both ends too) and a job's own backoff. proptest shrinks the abstract steps, and the
//!   materialized trace shrinks with them.
//! - [`RandomTrace`], a quickcheck `Arbitrary` that draws concrete operations directly from
//!   small domains (a few ids and workers, times in a narrow window, tiny leases) so that
//!   collisions happen by density rather than by design.

use proptest::prelude::*;
use quickcheck::{Arbitrary, Gen};
use retryq_model::reference::{Phase, Store};
use retryq_model::{MAX_INT, Op, Outcome, RunOutcome};

use crate::trace::{Step, Trace};

/// The ids steps pick from: a small pool, so that ids are reused.
pub const IDS: [&str; 5] = ["a", "b", "c", "d", "e"];
/// The workers steps pick from.
pub const WORKERS: [&str; 3] = ["w1", "w2", "w3"];

/// How a step's `now` is chosen, relative to the trace so far.
#[derive(Clone, Debug)]
pub enum When {
    /// The previous step's time.
    Same,
    /// Forward by a little.
    Later(u64),
    /// Back by a little: the clock went backwards.
    Earlier(u64),
    /// Exactly at a lease's expiry, or one before or after: the `job`-th live lease (the
    /// job's own `available_at` if no lease is live; the previous time if it has none).
    Expiry {
        /// Which live lease, wrapping around.
        job: usize,
        /// -1, 0 or +1 ms around the expiry.
        offset: i8,
    },
    /// At a job's deadline, or one either side.
    Deadline {
        /// Which job, by index.
        job: usize,
        /// -1, 0 or +1 ms around the deadline.
        offset: i8,
    },
    /// So that `now + delay` of a retry of the job's current attempt (at the given jitter)
    /// lands on its deadline, or one either side.
    DelayOnDeadline {
        /// Which job, by index.
        job: usize,
        /// An index into [`JITTERS`].
        jitter: usize,
        /// -1, 0 or +1 ms around the deadline.
        offset: i8,
    },
}

/// Which attempt number a completion presents as its fencing token.
#[derive(Clone, Copy, Debug)]
pub enum Token {
    /// The job's current attempt.
    Current,
    /// The one before: what a worker whose lease was taken over still holds.
    Stale,
    /// One too many.
    Ahead,
}

/// Which worker completes.
#[derive(Clone, Copy, Debug)]
pub enum Completer {
    /// The lease's owner (or worker `w1` if the job is not leased).
    Holder,
    /// A worker by index.
    Worker(usize),
}

/// An enqueue's schedule (SPEC 3.2's `not_before`).
#[derive(Clone, Copy, Debug)]
pub enum Schedule {
    /// None given: due at `now`.
    Unscheduled,
    /// `now + d`; at or past the deadline when `d` ≥ the ttl (refused).
    After(u64),
    /// One before `now` (refused), or `now` itself at time 0.
    BeforeNow,
}

/// One abstract step.
#[derive(Clone, Debug)]
pub enum Abstract {
    /// Becomes `config`; an absent setting keeps its value.
    Config {
        /// The first retry's window.
        base_ms: Option<u64>,
        /// The largest retry window.
        cap_ms: Option<u64>,
        /// The lease length.
        lease_ms: Option<u64>,
    },
    /// Becomes `enqueue` of one of a few fixed ids, so that re-enqueues and conflicts happen.
    Enqueue {
        /// Which id, by index.
        job: usize,
        /// A payload other than the id's own: a conflict when the id is stored.
        other_payload: bool,
        /// The attempt budget (out-of-range ones included).
        max_attempts: u64,
        /// How far past `now` the deadline lies.
        ttl: u64,
        /// When.
        now: When,
        /// Its scheduled start.
        schedule: Schedule,
        /// Its own `base_ms`, if any.
        base_ms: Option<u64>,
        /// Its own `cap_ms`, if any.
        cap_ms: Option<u64>,
    },
    /// Becomes `heartbeat`, current or stale, from the holder or another worker.
    Heartbeat {
        /// Who presents the lease.
        by: Completer,
        /// Which job, by index.
        job: usize,
        /// Which attempt number it presents.
        token: Token,
        /// When: at the deadline, or with the clock back, as often as not.
        now: When,
    },
    /// Becomes `cancel`, whatever the job's status.
    Cancel {
        /// Which job, by index.
        job: usize,
        /// When.
        now: When,
    },
    /// Becomes `claim`.
    Claim {
        /// Which worker, by index.
        worker: usize,
        /// When.
        now: When,
    },
    /// Becomes `complete`, current or stale, from the holder or another worker.
    Complete {
        /// Who presents the lease.
        by: Completer,
        /// Which job, by index.
        job: usize,
        /// Which attempt number it presents.
        token: Token,
        /// The outcome reported.
        outcome: Outcome,
        /// When.
        now: When,
        /// An index into [`JITTERS`]; `None` leaves the jitter out.
        jitter: Option<usize>,
    },
    /// Becomes `run_once`.
    RunOnce {
        /// Which worker, by index.
        worker: usize,
        /// When the claim is made.
        now: When,
        /// When the outcome is recorded; `None` for the same time.
        after: Option<When>,
        /// What the transport did.
        outcome: RunOutcome,
        /// An index into [`JITTERS`]; `None` leaves the jitter out.
        jitter: Option<usize>,
    },
    /// Becomes `redrive`.
    Redrive {
        /// Which job, by index.
        job: usize,
        /// When.
        now: When,
        /// Attempts added.
        add_attempts: u64,
        /// How far past `now` the new deadline lies.
        ttl: u64,
    },
    /// Becomes `reap`.
    Reap {
        /// When.
        now: When,
    },
    /// Becomes `get`.
    Get {
        /// Which job, by index.
        job: usize,
    },
    /// Becomes `stats`.
    Stats {
        /// When.
        now: When,
    },
    /// Becomes `retry_delay`, the formula alone.
    RetryDelay {
        /// The attempt that failed.
        attempt: u64,
        /// The first window.
        base_ms: u64,
        /// The largest window.
        cap_ms: u64,
        /// An index into [`JITTERS`].
        jitter: usize,
    },
    /// Becomes `restart`.
    Restart,
    /// A line the replay format must refuse.
    Invalid(usize),
}

/// The jitters steps pick from: the ends, a half, fractions whose binary64 product is not
/// what decimal arithmetic says (0.7), and one out of range.
pub const JITTERS: [f64; 6] = [0.0, 1.0, 0.5, 0.7, 0.25, 1.5];

/// Lines every reading must refuse, each for a different rule of SPEC section 5.
pub const INVALID_LINES: [&str; 10] = [
    r#"{"op":"stats","now":-0}"#,
    r#"{"op":"stats","now":1.0}"#,
    r#"{"op":"claim","worker":"w1","now":1e1}"#,
    r#"{"op":"claim","worker":"w1","now":3,"extra":true}"#,
    r#"{"op":"claim","worker":"w1","worker":"w2","now":3}"#,
    r#"{"op":"enqueue","id":"a","max_attempts":"2","deadline":50,"now":0}"#,
    r#"{"op":"complete","worker":"w1","id":"a","attempt":1,"outcome":"retryable","now":5}"#,
    r#"{"op":"get","id":null}"#,
    r#"{"op":"teleport","now":1}"#,
    "not json at all",
];

fn when() -> impl Strategy<Value = When> {
    let job = 0..IDS.len();
    let offset = -1i8..=1;
    prop_oneof![
        3 => Just(When::Same),
        6 => (0u64..20).prop_map(When::Later),
        1 => (20u64..400).prop_map(When::Later),
        1 => (1u64..10).prop_map(When::Earlier),
        3 => (job.clone(), offset.clone()).prop_map(|(job, offset)| When::Expiry { job, offset }),
        2 => (job.clone(), offset.clone()).prop_map(|(job, offset)| When::Deadline { job, offset }),
        3 => (job, 0..JITTERS.len() - 1, offset)
            .prop_map(|(job, jitter, offset)| When::DelayOnDeadline { job, jitter, offset }),
    ]
}

/// A claim's time: more often than other steps', exactly at (or next to) a lease's expiry.
fn claim_when() -> impl Strategy<Value = When> {
    prop_oneof![2 => when(), 1 => (0..IDS.len(), -1i8..=1).prop_map(|(job, offset)| When::Expiry { job, offset })]
}

/// A completion's time (or a run's second clock reading): more often than other steps', so
/// that a retry's `now + delay` lands on the deadline or one either side.
fn settle_when() -> impl Strategy<Value = When> {
    prop_oneof![
        2 => when(),
        1 => (0..IDS.len(), 0..JITTERS.len() - 1, -1i8..=1)
            .prop_map(|(job, jitter, offset)| When::DelayOnDeadline { job, jitter, offset }),
    ]
}

fn jitter() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![12 => (0..JITTERS.len() - 1).prop_map(Some), 1 => Just(Some(JITTERS.len() - 1)), 1 => Just(None)]
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![1 => Just(Outcome::Ok), 3 => Just(Outcome::Retryable), 1 => Just(Outcome::Permanent)]
}

fn run_outcome() -> impl Strategy<Value = RunOutcome> {
    prop_oneof![
        2 => Just(RunOutcome::Ok),
        4 => Just(RunOutcome::Retryable),
        1 => Just(RunOutcome::Permanent),
        1 => Just(RunOutcome::Unknown),
        2 => Just(RunOutcome::Crash),
    ]
}

fn schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        8 => Just(Schedule::Unscheduled),
        3 => prop_oneof![Just(0u64), Just(1), 2u64..40].prop_map(Schedule::After),
        1 => Just(Schedule::After(600)),
        1 => Just(Schedule::BeforeNow),
    ]
}

/// A job's own `base_ms` or `cap_ms`: mostly none; otherwise the edges (0, a cap below a
/// base) and the windows whose binary64 product with a jitter of 0.7 differs from the exact
/// one (10).
fn own_setting() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![6 => Just(None), 1 => Just(Some(0)), 1 => Just(Some(1)), 2 => Just(Some(10)), 1 => Just(Some(50))]
}

/// A heartbeat's time: the lease-keeping edges (the deadline, one before it, the clock back
/// before the claim) as often as an ordinary time.
fn heartbeat_when() -> impl Strategy<Value = When> {
    prop_oneof![
        2 => when(),
        1 => (0..IDS.len(), -1i8..=0).prop_map(|(job, offset)| When::Deadline { job, offset }),
        1 => (1u64..3).prop_map(When::Earlier),
    ]
}

/// One abstract step, weighted toward the operations that move jobs.
pub fn abstract_step() -> impl Strategy<Value = Abstract> {
    let job = 0..IDS.len();
    let worker = 0..WORKERS.len();
    let small = prop_oneof![Just(0u64), Just(1), Just(10), Just(100)];
    prop_oneof![
        1 => (proptest::option::of(small.clone()), proptest::option::of(small), proptest::option::of(prop_oneof![Just(0u64), Just(1), Just(5), Just(30), Just(100)]))
            .prop_map(|(base_ms, cap_ms, lease_ms)| Abstract::Config { base_ms, cap_ms, lease_ms }),
        6 => (job.clone(), proptest::bool::weighted(0.1), 1u64..5, prop_oneof![Just(0u64), Just(1), 2u64..60, 60u64..600], when(), schedule(), own_setting(), own_setting())
            .prop_map(|(job, other_payload, max_attempts, ttl, now, schedule, base_ms, cap_ms)| Abstract::Enqueue { job, other_payload, max_attempts, ttl, now, schedule, base_ms, cap_ms }),
        2 => (prop_oneof![4 => Just(Completer::Holder), 1 => worker.clone().prop_map(Completer::Worker)], job.clone(),
              prop_oneof![6 => Just(Token::Current), 2 => Just(Token::Stale), 1 => Just(Token::Ahead)], heartbeat_when())
            .prop_map(|(by, job, token, now)| Abstract::Heartbeat { by, job, token, now }),
        1 => (job.clone(), when()).prop_map(|(job, now)| Abstract::Cancel { job, now }),
        4 => (worker.clone(), claim_when()).prop_map(|(worker, now)| Abstract::Claim { worker, now }),
        5 => (prop_oneof![4 => Just(Completer::Holder), 1 => worker.clone().prop_map(Completer::Worker)], job.clone(),
              prop_oneof![6 => Just(Token::Current), 2 => Just(Token::Stale), 1 => Just(Token::Ahead)], outcome(), settle_when(), jitter())
            .prop_map(|(by, job, token, outcome, now, jitter)| Abstract::Complete { by, job, token, outcome, now, jitter }),
        6 => (worker.clone(), claim_when(), proptest::option::weighted(0.4, settle_when()), run_outcome(), jitter())
            .prop_map(|(worker, now, after, outcome, jitter)| Abstract::RunOnce { worker, now, after, outcome, jitter }),
        3 => (job.clone(), when(), prop_oneof![Just(0u64), 1u64..4, Just(2_147_483_647)], prop_oneof![Just(0u64), 1u64..200])
            .prop_map(|(job, now, add_attempts, ttl)| Abstract::Redrive { job, now, add_attempts, ttl }),
        1 => when().prop_map(|now| Abstract::Reap { now }),
        1 => job.prop_map(|job| Abstract::Get { job }),
        1 => when().prop_map(|now| Abstract::Stats { now }),
        1 => (prop_oneof![Just(0u64), 1u64..70, Just(1_000_000_000_000_000)], 0u64..300, 0u64..2000, 0..JITTERS.len())
            .prop_map(|(attempt, base_ms, cap_ms, jitter)| Abstract::RetryDelay { attempt, base_ms, cap_ms, jitter }),
        1 => Just(Abstract::Restart),
        1 => (0..INVALID_LINES.len()).prop_map(Abstract::Invalid),
    ]
}

/// A sequence of abstract steps. Most open with a `config` of short leases and small
/// backoffs, so that leases expire and deadlines come within the few hundred milliseconds a
/// trace spans (SPEC's default lease is 30 s); the rest keep the defaults.
pub fn abstract_trace(max_len: usize) -> impl Strategy<Value = Vec<Abstract>> {
    let opening = prop_oneof![
        4 => (prop_oneof![Just(0u64), Just(1), Just(10)], prop_oneof![Just(0u64), Just(5), Just(40)], prop_oneof![Just(1u64), Just(5), Just(20), Just(60)])
            .prop_map(|(base, cap, lease)| Some(Abstract::Config { base_ms: Some(base), cap_ms: Some(cap), lease_ms: Some(lease) })),
        1 => Just(None),
    ];
    (opening, proptest::collection::vec(abstract_step(), 1..=max_len)).prop_map(|(opening, mut steps)| {
        if let Some(config) = opening {
            steps.insert(0, config);
        }
        steps
    })
}

/// Turns abstract steps into a concrete trace by playing them on the reference model, which
/// knows where every lease and deadline is.
pub fn materialize(steps: &[Abstract]) -> Trace {
    let mut store = Store::new();
    let mut clock = 0u64;
    let mut trace = Trace::default();
    for step in steps {
        let op = match step {
            Abstract::Invalid(i) => {
                trace.steps.push(Step::Invalid(INVALID_LINES[*i % INVALID_LINES.len()].to_owned()));
                continue;
            }
            step => concrete(step, &store, &mut clock),
        };
        store.step(&op);
        trace.steps.push(Step::Op(op));
    }
    trace
}

fn concrete(step: &Abstract, store: &Store, clock: &mut u64) -> Op {
    let mut at = |when: &When| {
        *clock = resolve(when, store, *clock, None);
        *clock
    };
    match step {
        Abstract::Config { base_ms, cap_ms, lease_ms } => {
            Op::Config { base_ms: *base_ms, cap_ms: *cap_ms, lease_ms: *lease_ms }
        }
        Abstract::Enqueue { job, other_payload, max_attempts, ttl, now, schedule, base_ms, cap_ms } => {
            let now = at(now);
            let id = IDS[*job];
            let payload = if *other_payload { format!("other {id}") } else { format!("order {id}") };
            let not_before = match schedule {
                Schedule::Unscheduled => None,
                Schedule::After(d) => Some(now.saturating_add(*d).min(MAX_INT)),
                Schedule::BeforeNow => Some(now.saturating_sub(1)),
            };
            Op::Enqueue {
                priority: None,
                queue: None,
                id: id.into(),
                payload,
                max_attempts: *max_attempts,
                deadline: now.saturating_add(*ttl),
                now,
                not_before,
                base_ms: *base_ms,
                cap_ms: *cap_ms,
            }
        }
        Abstract::Heartbeat { by, job, token, now } => {
            // Heartbeats are about leases: the `job`-th leased job when there is one, so that
            // most are made on a lease rather than refused for lack of one.
            let leased: Vec<&str> = store
                .jobs()
                .iter()
                .filter(|j| matches!(j.phase, Phase::Leased { .. }))
                .map(|j| j.id.as_str())
                .collect();
            let id = if leased.is_empty() { IDS[*job] } else { leased[*job % leased.len()] };
            let (worker, attempt) = presented(store, id, *by, *token);
            // A heartbeat's deadline edges are about the job it keeps.
            let now = resolve(now, store, *clock, Some((id, None)));
            *clock = now;
            Op::Heartbeat { worker, id: id.into(), attempt, now }
        }
        Abstract::Cancel { job, now } => Op::Cancel { id: IDS[*job].into(), now: at(now) },
        Abstract::Claim { worker, now } => {
            Op::Claim { queues: None, worker: WORKERS[*worker].into(), now: at(now) }
        }
        Abstract::Complete { by, job, token, outcome, now, jitter } => {
            let id = IDS[*job];
            let (worker, attempt) = presented(store, id, *by, *token);
            // A completion's deadline edges are about the job it completes.
            let now = resolve(now, store, *clock, Some((id, jitter.map(|j| JITTERS[j]))));
            *clock = now;
            Op::Complete {
                worker,
                id: id.into(),
                attempt,
                outcome: *outcome,
                now,
                jitter: jitter.map(|j| JITTERS[j]),
            }
        }
        Abstract::RunOnce { worker, now, after, outcome, jitter } => {
            let now = at(now);
            // The second clock reading's edges are about the job this run will claim.
            let mut probe = store.clone();
            let claimed = match probe.step(&Op::Claim { queues: None, worker: WORKERS[*worker].into(), now })
            {
                retryq_model::Response::Ok(retryq_model::Reply::Claimed { id, .. }) => Some(id),
                _ => None,
            };
            let focus = claimed.as_deref().map(|id| (id, jitter.map(|j| JITTERS[j])));
            let after = after.as_ref().map(|after| resolve(after, &probe, now, focus));
            Op::RunOnce {
                queues: None,
                worker: WORKERS[*worker].into(),
                now,
                after,
                outcome: *outcome,
                jitter: jitter.map(|j| JITTERS[j]),
            }
        }
        Abstract::Redrive { job, now, add_attempts, ttl } => {
            let now = at(now);
            Op::Redrive {
                id: IDS[*job].into(),
                now,
                add_attempts: *add_attempts,
                deadline: now.saturating_add(*ttl),
            }
        }
        Abstract::Reap { now } => Op::Reap { now: at(now) },
        Abstract::Get { job } => Op::Get { id: IDS[*job].into() },
        Abstract::Stats { now } => Op::Stats { queue: None, now: at(now) },
        Abstract::RetryDelay { attempt, base_ms, cap_ms, jitter } => {
            Op::RetryDelay { attempt: *attempt, base_ms: *base_ms, cap_ms: *cap_ms, jitter: JITTERS[*jitter] }
        }
        Abstract::Restart | Abstract::Invalid(_) => Op::Restart,
    }
}

/// The worker and attempt number a completion or a heartbeat of job `id` presents.
fn presented(store: &Store, id: &str, by: Completer, token: Token) -> (String, u64) {
    let found = store.job(id);
    let attempts = found.map_or(1, |j| j.attempts);
    let worker = match (by, found.map(|j| &j.phase)) {
        (Completer::Holder, Some(Phase::Leased { owner, .. })) => owner.to_string(),
        (Completer::Holder, _) => WORKERS[0].to_owned(),
        (Completer::Worker(w), _) => WORKERS[w].to_owned(),
    };
    let attempt = match token {
        Token::Current => attempts.max(1),
        Token::Stale => attempts.saturating_sub(1),
        Token::Ahead => attempts + 1,
    };
    (worker, attempt)
}

/// When each lease in the model expires, in the jobs' order.
fn live_leases(store: &Store) -> Vec<u64> {
    store
        .jobs()
        .iter()
        .filter_map(|j| match j.phase {
            Phase::Leased { until, .. } => Some(until),
            _ => None,
        })
        .collect()
}

/// The time a [`When`] names, given the model's state and the previous time. `focus`, when
/// given, is the job a deadline edge is about, whatever job the `When` names.
fn resolve(when: &When, store: &Store, previous: u64, focus: Option<(&str, Option<f64>)>) -> u64 {
    let about = |job: usize| store.job(focus.map_or(IDS[job], |(id, _)| id));
    let shift = |t: u64, offset: i8| match offset {
        -1 => t.saturating_sub(1),
        1 => t.saturating_add(1),
        _ => t,
    };
    let time = match *when {
        When::Same => previous,
        When::Later(d) => previous.saturating_add(d),
        When::Earlier(d) => previous.saturating_sub(d),
        When::Expiry { job, offset } => {
            // The `job`-th live lease if there is one (that is what expires), else the job's
            // reservation.
            let leases = live_leases(store);
            match leases.get(job % leases.len().max(1)) {
                Some(&until) => shift(until, offset),
                None => store
                    .job(IDS[job])
                    .and_then(|j| j.phase.available_at())
                    .map_or(previous, |t| shift(t, offset)),
            }
        }
        When::Deadline { job, offset } => match about(job) {
            Some(j) => shift(j.deadline, offset),
            None => previous,
        },
        When::DelayOnDeadline { job, jitter, offset } => match about(job) {
            Some(j) => {
                let config = store.config();
                // The step's own jitter when it has one, so that the edge is exact.
                let jitter =
                    focus.and_then(|(_, j)| j).filter(|j| (0.0..=1.0).contains(j)).unwrap_or(JITTERS[jitter]);
                // The job's own backoff where it has one (SPEC 6.23).
                let delay = retryq_model::delay::retry_delay(
                    j.attempts.max(1),
                    j.base_ms.unwrap_or(config.base_ms),
                    j.cap_ms.unwrap_or(config.cap_ms),
                    jitter,
                );
                shift(j.deadline.saturating_sub(delay), offset)
            }
            None => previous,
        },
    };
    time.min(MAX_INT)
}

/// A trace of concrete operations drawn from small domains (the quickcheck generator).
#[derive(Clone, Debug)]
pub struct RandomTrace(pub Trace);

impl Arbitrary for RandomTrace {
    fn arbitrary(g: &mut Gen) -> Self {
        let len = usize::arbitrary(g) % g.size().max(1) + 1;
        let steps = (0..len).map(|_| random_step(g)).collect();
        RandomTrace(Trace { steps })
    }

    /// Smaller traces: without a run of steps, longest runs first (halves, quarters, … single
    /// steps), so that a failure loses what it does not need quickly.
    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        let steps = self.0.steps.clone();
        let len = steps.len();
        let runs = std::iter::successors(Some(len / 2), |&n| (n > 1).then_some(n / 2)).filter(|&n| n > 0);
        let cuts: Vec<(usize, usize)> = runs
            .flat_map(|n| (0..len.saturating_sub(n - 1)).step_by(n).map(move |start| (start, n)))
            .collect();
        Box::new(cuts.into_iter().map(move |(start, n)| {
            let mut smaller = steps.clone();
            smaller.drain(start..start + n);
            RandomTrace(Trace { steps: smaller })
        }))
    }
}

fn pick<T: Copy>(g: &mut Gen, items: &[T]) -> T {
    *g.choose(items).unwrap_or(&items[0])
}

/// A time in a narrow window, so that leases, reservations and deadlines collide.
fn time(g: &mut Gen) -> u64 {
    u64::from(u8::arbitrary(g) % 64)
}

fn random_step(g: &mut Gen) -> Step {
    let id = pick(g, &IDS).to_owned();
    let worker = pick(g, &WORKERS).to_owned();
    let jitter = if u8::arbitrary(g) % 8 == 0 { None } else { Some(pick(g, &JITTERS)) };
    let op = match u8::arbitrary(g) % 19 {
        0 => Op::Config {
            base_ms: Option::<u8>::arbitrary(g).map(|b| u64::from(b % 16)),
            cap_ms: Option::<u8>::arbitrary(g).map(|c| u64::from(c % 32)),
            lease_ms: Option::<u8>::arbitrary(g).map(|l| u64::from(l % 24)),
        },
        1 | 2 => {
            let now = time(g);
            let deadline = now + u64::from(u8::arbitrary(g) % 48);
            // Scheduled one time in four, within or (now and then) outside now … deadline − 1.
            let not_before = (u8::arbitrary(g) % 4 == 0)
                .then(|| (now + u64::from(u8::arbitrary(g) % 24)).saturating_sub(1));
            let own = |g: &mut Gen| (u8::arbitrary(g) % 4 == 0).then(|| u64::from(u8::arbitrary(g) % 24));
            Op::Enqueue {
                priority: None,
                queue: None,
                id,
                payload: pick(g, &["", "x", "y"]).to_owned(),
                max_attempts: u64::from(u8::arbitrary(g) % 4),
                deadline,
                now,
                not_before,
                base_ms: own(g),
                cap_ms: own(g),
            }
        }
        3..=5 => Op::Claim { queues: None, worker, now: time(g) },
        6..=8 => Op::Complete {
            worker,
            id,
            attempt: u64::from(u8::arbitrary(g) % 5),
            outcome: pick(g, &[Outcome::Ok, Outcome::Retryable, Outcome::Retryable, Outcome::Permanent]),
            now: time(g),
            jitter,
        },
        9..=11 => Op::RunOnce {
            queues: None,
            worker,
            now: time(g),
            after: if bool::arbitrary(g) { None } else { Some(time(g)) },
            outcome: pick(
                g,
                &[
                    RunOutcome::Ok,
                    RunOutcome::Retryable,
                    RunOutcome::Permanent,
                    RunOutcome::Unknown,
                    RunOutcome::Crash,
                ],
            ),
            jitter,
        },
        12 => {
            let now = time(g);
            Op::Redrive {
                id,
                now,
                add_attempts: u64::from(u8::arbitrary(g) % 3),
                deadline: now + u64::from(u8::arbitrary(g) % 40),
            }
        }
        13 => Op::Reap { now: time(g) },
        14 => Op::Restart,
        15 | 16 => Op::Heartbeat { worker, id, attempt: u64::from(u8::arbitrary(g) % 5), now: time(g) },
        17 => Op::Cancel { id, now: time(g) },
        _ => return Step::Invalid(pick(g, &INVALID_LINES).to_owned()),
    };
    Step::Op(op)
}

#[cfg(test)]
mod tests {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use super::*;

    #[test]
    fn materialized_traces_reach_the_edges() {
        // Over four hundred generated traces, every edge the generator aims at is hit.
        let mut runner = TestRunner::deterministic();
        let strategy = abstract_trace(40);
        let (mut expiry_claims, mut deadline_deaths, mut stale, mut crashes) = (0, 0, 0, 0);
        let (mut extended, mut late_heartbeats, mut cancelled, mut not_cancelled) = (0, 0, 0, 0);
        for _ in 0..400 {
            let steps = strategy.new_tree(&mut runner).expect("tree").current();
            let trace = materialize(&steps);
            let mut store = Store::new();
            for step in &trace.steps {
                let Step::Op(op) = step else { continue };
                let leases = live_leases(&store);
                let response = store.step(op);
                let line = response.to_json_line();
                if let Op::Claim { now, .. } | Op::RunOnce { now, .. } = op
                    && leases.contains(now)
                    && line.contains("\"attempt\":")
                {
                    expiry_claims += 1;
                }
                if line.contains("\"reason\":\"deadline\"")
                    && matches!(op, Op::Complete { .. } | Op::RunOnce { .. })
                {
                    deadline_deaths += 1;
                }
                if line.contains("lease_lost") {
                    stale += 1;
                }
                if line.contains("crashed") {
                    crashes += 1;
                }
                extended += usize::from(line.contains("\"extended\""));
                late_heartbeats += usize::from(line.contains("deadline_passed"));
                cancelled += usize::from(line.contains("\"cancelled\""));
                not_cancelled += usize::from(line.contains("\"leased\"") || line.contains("not_cancellable"));
            }
        }
        println!(
            "edges: expiry claims {expiry_claims}, deadline deaths {deadline_deaths}, stale {stale}, crashes {crashes}"
        );
        assert!(expiry_claims > 10, "claims exactly at lease expiry: {expiry_claims}");
        assert!(deadline_deaths > 10, "retries dead by deadline: {deadline_deaths}");
        assert!(stale > 10, "stale completions: {stale}");
        assert!(crashes > 10, "crashes: {crashes}");
        println!(
            "1.1: extended {extended}, late {late_heartbeats}, cancelled {cancelled}, refused {not_cancelled}"
        );
        assert!(extended > 10, "accepted heartbeats: {extended}");
        assert!(late_heartbeats > 3, "heartbeats at or past the deadline: {late_heartbeats}");
        assert!(cancelled > 10, "cancels: {cancelled}");
        assert!(not_cancelled > 10, "refused cancels: {not_cancelled}");
    }
}
