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
//!   status; scheduled starts (out of range at both ends too) and a job's own backoff; and
//!   SPEC 1.2's: a second queue on enqueues and in claims' lists (the other queue alone, and
//!   both), priorities 0 and 1 (and 10, out of range), stats of a queue, cancels of leased
//!   jobs followed by their holder's heartbeat, completion or expiry, prunes at a job's
//!   `ended_at` and one either side (and at a deadline no reap has acted on yet), every
//!   operation on a pruned id, forgets at a tombstone's `ended_at` and one either side, and
//!   enqueues of the forgotten ids; and choices of claim the contract makes that the rest
//!   meet only by luck (a priority 1 due far longer than a 0, a forgotten id enqueued anew
//!   beside a new one, a tie across queues, a retry of a priority 1, a queue named equal to
//!   the second but for its bytes). proptest shrinks the abstract steps, and the
//!   materialized trace shrinks with them.
//! - [`RandomTrace`], a quickcheck `Arbitrary` that draws concrete operations directly from
//!   small domains (a few ids and workers, times in a narrow window, tiny leases) so that
//!   collisions happen by density rather than by design.

use proptest::prelude::*;
use quickcheck::{Arbitrary, Gen};
use retryq_model::choices::NameClass;
use retryq_model::reference::{Phase, Store};
use retryq_model::{MAX_INT, Op, Outcome, Reply, Response, RunOutcome};

use crate::trace::{Step, Trace};

/// The ids steps pick from: a small pool, so that ids are reused.
pub const IDS: [&str; 5] = ["a", "b", "c", "d", "e"];
/// The workers steps pick from.
pub const WORKERS: [&str; 3] = ["w1", "w2", "w3"];
/// The queues enqueues name (SPEC 1.6): the default one, named, and a second one.
pub const QUEUES: [&str; 2] = ["default", "q1"];
/// The lists claims and runs serve (SPEC 3.3): the other queue alone, both (in either order),
/// the default one named, and two refused (a name twice, none).
pub const SERVED: [&[&str]; 6] =
    [&["q1"], &["default", "q1"], &["q1", "default"], &["default"], &["q1", "q1"], &[]];
/// The queues `stats` counts (SPEC 3.8): both, and one no job or tombstone carries.
pub const COUNTED: [&str; 3] = ["default", "q1", "q9"];

/// Which job an operation names.
#[derive(Clone, Copy, Debug)]
pub enum Pick {
    /// One of [`IDS`], by index.
    Any(usize),
    /// The `n`-th leased job (wrapping around); [`IDS`]`[n]` if none is leased.
    Leased(usize),
    /// The `n`-th leased job with a cancel request; else as [`Pick::Leased`].
    Cancelling(usize),
    /// The `n`-th tombstone's id (SPEC 3.14); [`IDS`]`[n]` if there is none.
    Pruned(usize),
    /// The `n`-th id a forget removed that names nothing yet (SPEC 3.15); else [`IDS`]`[n]`.
    Forgotten(usize),
}

/// A prune's or a forget's `before`, relative to what the store holds and to `now`.
#[derive(Clone, Copy, Debug)]
pub enum Bound {
    /// At the `job`-th ended job's `ended_at` (a forget: the `job`-th tombstone's), or one
    /// either side; `now` moves up to it if it is earlier.
    Ended {
        /// Which one, wrapping around.
        job: usize,
        /// -1, 0 or +1 ms around its `ended_at`.
        offset: i8,
    },
    /// At the `job`-th open job's deadline or one past it, `now` moved there: a job past its
    /// deadline that no reap has ended yet.
    OpenDeadline {
        /// Which one, wrapping around.
        job: usize,
        /// 0 or +1 ms past the deadline.
        offset: i8,
    },
    /// `now` itself.
    Now,
    /// This much before `now`.
    Ago(u64),
    /// One after `now`: refused.
    Future,
}

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
    /// At the `rank`-th of the deadlines still ahead of the open jobs (0 the nearest; the
    /// farthest if there are fewer): the time jumps past `rank` + 1 deadlines at once, so that
    /// as many jobs are due to end together (those whose leases expired), the later ones not —
    /// a backlog for reaps of `reap_limit` to end in pieces, with jobs beside it that a claim
    /// can still take (SPEC 6.37).
    Backlog {
        /// Which deadline ahead, counted from the nearest.
        rank: usize,
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

/// What follows a cancel request on a leased job (SPEC 3.13): the holder learning of it,
/// reporting its attempt, or its lease running out.
#[derive(Clone, Copy, Debug)]
pub enum Stop {
    /// The holder's heartbeat with its current token, a little later: refused `cancelled`.
    Heartbeat(u64),
    /// The holder's completion with its current token, a little later.
    Complete {
        /// The outcome reported: `retryable` ends the job dead(cancelled).
        outcome: Outcome,
        /// How much later.
        later: u64,
        /// An index into [`JITTERS`].
        jitter: usize,
    },
    /// A claim by a worker, by index, when the lease runs out (or one before, or after).
    Expiry {
        /// Which worker.
        worker: usize,
        /// -1, 0 or +1 ms around the expiry.
        offset: i8,
    },
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
        /// The most jobs one reap ends (SPEC 3.11, 6.37).
        reap_limit: Option<u64>,
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
        /// Its queue, by index into [`QUEUES`]; `None` leaves it out.
        queue: Option<usize>,
        /// Its priority (out-of-range ones included); `None` leaves it out.
        priority: Option<u64>,
        /// Which id, when not `job`: a pruned or a forgotten one.
        pick: Option<Pick>,
    },
    /// Becomes `heartbeat`, current or stale, from the holder or another worker.
    Heartbeat {
        /// Who presents the lease.
        by: Completer,
        /// Which job: mostly a leased one.
        job: Pick,
        /// Which attempt number it presents.
        token: Token,
        /// When: at the deadline, or with the clock back, as often as not.
        now: When,
    },
    /// Becomes `cancel`, whatever the job's status, and, when it leaves a cancel request
    /// on a leased job, what its holder does next.
    Cancel {
        /// Which job: any, a leased one, a pruned one.
        job: Pick,
        /// When.
        now: When,
        /// A second operation right after a cancel request, if any.
        then: Option<Stop>,
    },
    /// Becomes `claim`.
    Claim {
        /// Which worker, by index.
        worker: usize,
        /// When.
        now: When,
        /// The queues served, by index into [`SERVED`]; `None` leaves them out.
        queues: Option<usize>,
    },
    /// Becomes `complete`, current or stale, from the holder or another worker.
    Complete {
        /// Who presents the lease.
        by: Completer,
        /// Which job: any, a leased one (one asked to stop first), a pruned one.
        job: Pick,
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
        /// The queues served, by index into [`SERVED`]; `None` leaves them out.
        queues: Option<usize>,
    },
    /// Becomes `redrive`.
    Redrive {
        /// Which job: any, or a pruned one.
        job: Pick,
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
        /// Which job: any, or a pruned one.
        job: Pick,
    },
    /// Becomes `stats`.
    Stats {
        /// When.
        now: When,
        /// The queue counted, by index into [`COUNTED`]; `None` for every queue.
        queue: Option<usize>,
    },
    /// Becomes `prune`.
    Prune {
        /// Its `before`.
        before: Bound,
        /// When (moved up to `before` where the bound is a job's time).
        now: When,
    },
    /// Becomes `forget`.
    Forget {
        /// Its `before`.
        before: Bound,
        /// When (moved up to `before` where the bound is a tombstone's time).
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
    /// Becomes `pause` of a queue (SPEC 3.16), by index into [`COUNTED`]: one jobs go to, or
    /// one no job carries.
    Pause {
        /// Which queue.
        queue: usize,
        /// When.
        now: When,
    },
    /// Becomes `resume` of a queue (SPEC 3.17), by index into [`COUNTED`].
    Resume {
        /// Which queue.
        queue: usize,
        /// When.
        now: When,
    },
    /// Becomes `run_now` (SPEC 3.18): of any job, mostly one waiting, at a time near its
    /// reservation or its deadline.
    RunNow {
        /// Which job.
        job: Pick,
        /// When.
        now: When,
    },
    /// Becomes `count` enqueues in a row at the previous time, from the `first`-th id on
    /// (wrapping around), deadlines `ttl` ahead: equal, one apart in the order of enqueue, or
    /// one apart against it — jobs that come due to end together, for a reap of `reap_limit`
    /// to end in pieces in its stated order (SPEC 3.3.1, 6.37).
    Burst {
        /// The first id, by index.
        first: usize,
        /// How many enqueues.
        count: usize,
        /// How far past the previous time the first deadline lies.
        ttl: u64,
        /// 0: equal deadlines; 1: one apart, later for later enqueues; 2: earlier for later ones.
        order: u8,
    },
    /// A claim's choice the contract makes and the other steps meet only by luck
    /// ([`retryq_model::choices`]), put together at the previous time from the ids free then:
    /// 0, a job of priority 1 of the second queue due [`FAR`] ms longer than one of priority
    /// 0 of the first (priority across queues, and nothing ages: SPEC 3.3.2, 4.8); 1, a new id, then an id a forget freed, enqueued anew beside it (the new
    /// one goes first, 3.15); 2, a tie between two queues, the later job's named first in
    /// the claim's list (6.32); 3, a heartbeat under a lease_ms switched since the claim
    /// (3.12); 4, a retry of a job of priority 1 (which keeps it), read back.
    Choice {
        /// Which choice.
        kind: u8,
        /// The first free id to look at, by index.
        first: usize,
    },
    /// A line the replay format must refuse.
    Invalid(usize),
}

/// How long before a claim [`Abstract::Choice`] makes a job due: longer than any store that
/// ages priority would let a priority 1 wait.
pub const FAR: u64 = 1 << 40;

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

/// A claim's time: more often than other steps', exactly at (or next to) a lease's expiry,
/// or where a backlog of jobs is due to end.
fn claim_when() -> impl Strategy<Value = When> {
    prop_oneof![
        3 => when(),
        2 => (0..IDS.len(), -1i8..=1).prop_map(|(job, offset)| When::Expiry { job, offset }),
        1 => (1..IDS.len()).prop_map(|rank| When::Backlog { rank }),
    ]
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

/// A job's queue: mostly none given (the default one), often the second one.
fn queue() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![10 => Just(None), 1 => Just(Some(0)), 2 => Just(Some(1))]
}

/// A job's priority: mostly none given (0), often 1, now and then 0 named or 10 (refused).
fn priority() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![8 => Just(None), 3 => Just(Some(1)), 1 => Just(Some(0)), 1 => Just(Some(10))]
}

/// The queues a claim or a run serves: mostly none given (the default one), often the
/// second one alone or both, now and then a refused list.
fn served() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![
        8 => Just(None),
        1 => Just(Some(0)),
        5 => (1usize..3).prop_map(Some),
        1 => Just(Some(3)),
        1 => (4usize..SERVED.len()).prop_map(Some),
        1 => (SERVED.len()..SERVED.len() + NameClass::ALL.len()).prop_map(Some),
    ]
}

/// Which job an enqueue names besides its own index: mostly that one, now and then a pruned
/// or a forgotten id.
fn enqueue_pick() -> impl Strategy<Value = Option<Pick>> {
    let job = 0..IDS.len();
    prop_oneof![
        20 => Just(None),
        2 => job.clone().prop_map(|n| Some(Pick::Pruned(n))),
        1 => job.prop_map(|n| Some(Pick::Forgotten(n))),
    ]
}

/// A prune's or a forget's `before`: a job's end and one either side most often, a deadline
/// no reap has acted on, `now`, a little before it, and one after it (refused).
fn bound() -> impl Strategy<Value = Bound> {
    let job = 0..IDS.len();
    prop_oneof![
        6 => (job.clone(), -1i8..=1).prop_map(|(job, offset)| Bound::Ended { job, offset }),
        1 => (job, 0i8..=1).prop_map(|(job, offset)| Bound::OpenDeadline { job, offset }),
        2 => Just(Bound::Now),
        1 => (1u64..40).prop_map(Bound::Ago),
        1 => Just(Bound::Future),
    ]
}

/// A reap limit (SPEC 3.11, 6.37): 1 and 2 most often, so that reaps stop at their limit with
/// the few jobs a trace holds; the default's 1000 now and then, and 0 (refused).
fn reap_limit() -> impl Strategy<Value = u64> {
    prop_oneof![4 => Just(1u64), 3 => Just(2), 1 => Just(1000), 1 => Just(0)]
}

/// What a holder does after a cancel request: most often its completion, any outcome.
fn stop() -> impl Strategy<Value = Stop> {
    prop_oneof![
        1 => (0u64..3).prop_map(Stop::Heartbeat),
        3 => (outcome(), 0u64..3, 0..JITTERS.len() - 1).prop_map(|(outcome, later, jitter)| Stop::Complete { outcome, later, jitter }),
        1 => (0..WORKERS.len(), -1i8..=1).prop_map(|(worker, offset)| Stop::Expiry { worker, offset }),
    ]
}

/// One abstract step, weighted toward the operations that move jobs.
pub fn abstract_step() -> impl Strategy<Value = Abstract> {
    let job = 0..IDS.len();
    let worker = 0..WORKERS.len();
    let small = prop_oneof![Just(0u64), Just(1), Just(10), Just(100)];
    let any = job.clone().prop_map(Pick::Any);
    let leased = job.clone().prop_map(Pick::Leased);
    let cancelling = job.clone().prop_map(Pick::Cancelling);
    let pruned = job.clone().prop_map(Pick::Pruned);
    let enqueue = (
        (
            job.clone(),
            proptest::bool::weighted(0.1),
            1u64..5,
            prop_oneof![Just(0u64), Just(1), 2u64..60, 60u64..600],
            when(),
        ),
        (schedule(), own_setting(), own_setting(), queue(), priority(), enqueue_pick()),
    )
        .prop_map(
            |(
                (job, other_payload, max_attempts, ttl, now),
                (schedule, base_ms, cap_ms, queue, priority, pick),
            )| {
                Abstract::Enqueue {
                    job,
                    other_payload,
                    max_attempts,
                    ttl,
                    now,
                    schedule,
                    base_ms,
                    cap_ms,
                    queue,
                    priority,
                    pick,
                }
            },
        );
    prop_oneof![
        1 => (proptest::option::of(small.clone()), proptest::option::of(small), proptest::option::of(prop_oneof![Just(0u64), Just(1), Just(5), Just(30), Just(100)]), proptest::option::of(reap_limit()))
            .prop_map(|(base_ms, cap_ms, lease_ms, reap_limit)| Abstract::Config { base_ms, cap_ms, lease_ms, reap_limit }),
        6 => enqueue,
        2 => (prop_oneof![4 => Just(Completer::Holder), 1 => worker.clone().prop_map(Completer::Worker)],
              prop_oneof![12 => leased.clone(), 3 => cancelling.clone(), 1 => pruned.clone()],
              prop_oneof![6 => Just(Token::Current), 2 => Just(Token::Stale), 1 => Just(Token::Ahead)], heartbeat_when())
            .prop_map(|(by, job, token, now)| Abstract::Heartbeat { by, job, token, now }),
        2 => (prop_oneof![1 => any.clone(), 4 => leased, 1 => pruned.clone()], when(), proptest::option::weighted(0.7, stop()))
            .prop_map(|(job, now, then)| Abstract::Cancel { job, now, then }),
        4 => (worker.clone(), claim_when(), served()).prop_map(|(worker, now, queues)| Abstract::Claim { worker, now, queues }),
        5 => (prop_oneof![4 => Just(Completer::Holder), 1 => worker.clone().prop_map(Completer::Worker)],
              prop_oneof![12 => any.clone(), 3 => cancelling, 1 => pruned.clone()],
              prop_oneof![6 => Just(Token::Current), 2 => Just(Token::Stale), 1 => Just(Token::Ahead)], outcome(), settle_when(), jitter())
            .prop_map(|(by, job, token, outcome, now, jitter)| Abstract::Complete { by, job, token, outcome, now, jitter }),
        6 => (worker.clone(), claim_when(), proptest::option::weighted(0.4, settle_when()), run_outcome(), jitter(), served())
            .prop_map(|(worker, now, after, outcome, jitter, queues)| Abstract::RunOnce { worker, now, after, outcome, jitter, queues }),
        3 => (prop_oneof![6 => any.clone(), 1 => pruned.clone()], when(), prop_oneof![Just(0u64), 1u64..4, Just(2_147_483_647)], prop_oneof![Just(0u64), 1u64..200])
            .prop_map(|(job, now, add_attempts, ttl)| Abstract::Redrive { job, now, add_attempts, ttl }),
        1 => when().prop_map(|now| Abstract::Reap { now }),
        1 => prop_oneof![2 => any, 1 => pruned].prop_map(|job| Abstract::Get { job }),
        1 => (when(), prop_oneof![2 => Just(None), 1 => (0..COUNTED.len()).prop_map(Some)]).prop_map(|(now, queue)| Abstract::Stats { now, queue }),
        2 => (bound(), when()).prop_map(|(before, now)| Abstract::Prune { before, now }),
        1 => (bound(), when()).prop_map(|(before, now)| Abstract::Forget { before, now }),
        1 => (prop_oneof![Just(0u64), 1u64..70, Just(1_000_000_000_000_000)], 0u64..300, 0u64..2000, 0..JITTERS.len())
            .prop_map(|(attempt, base_ms, cap_ms, jitter)| Abstract::RetryDelay { attempt, base_ms, cap_ms, jitter }),
        1 => Just(Abstract::Restart),
        1 => (0..COUNTED.len(), when()).prop_map(|(queue, now)| Abstract::Pause { queue, now }),
        1 => (0..COUNTED.len(), when()).prop_map(|(queue, now)| Abstract::Resume { queue, now }),
        2 => (prop_oneof![6 => job.clone().prop_map(Pick::Any), 1 => job.clone().prop_map(Pick::Pruned)], when())
            .prop_map(|(job, now)| Abstract::RunNow { job, now }),
        1 => (0..INVALID_LINES.len()).prop_map(Abstract::Invalid),
        1 => burst_step(),
        2 => (0u8..5, 0..IDS.len()).prop_map(|(kind, first)| Abstract::Choice { kind, first }),
    ]
}

/// An [`Abstract::Burst`] of two to four enqueues.
pub fn burst_step() -> impl Strategy<Value = Abstract> {
    (0..IDS.len(), 2usize..=4, 1u64..30, 0u8..3).prop_map(|(first, count, ttl, order)| Abstract::Burst {
        first,
        count,
        ttl,
        order,
    })
}

/// A sequence of abstract steps. Most open with a `config` of short leases and small
/// backoffs, so that leases expire and deadlines come within the few hundred milliseconds a
/// trace spans (SPEC's default lease is 30 s); the rest keep the defaults.
pub fn abstract_trace(max_len: usize) -> impl Strategy<Value = Vec<Abstract>> {
    let opening = prop_oneof![
        4 => (prop_oneof![Just(0u64), Just(1), Just(10)], prop_oneof![Just(0u64), Just(5), Just(40)], prop_oneof![Just(1u64), Just(5), Just(20), Just(60)], prop_oneof![3 => Just(None), 4 => (1u64..=2).prop_map(Some)])
            .prop_map(|(base, cap, lease, reap_limit)| Some(Abstract::Config { base_ms: Some(base), cap_ms: Some(cap), lease_ms: Some(lease), reap_limit })),
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
    // The ids forgets removed: the model keeps nothing of them, so they are remembered here.
    let mut forgotten: Vec<String> = Vec::new();
    let mut trace = Trace::default();
    for step in steps {
        let op = match step {
            Abstract::Invalid(i) => {
                trace.steps.push(Step::Invalid(INVALID_LINES[*i % INVALID_LINES.len()].to_owned()));
                continue;
            }
            &Abstract::Burst { first, count, ttl, order } => {
                for op in burst(first, count, ttl, order, clock) {
                    store.step(&op);
                    trace.steps.push(Step::Op(op));
                }
                continue;
            }
            &Abstract::Choice { kind, first } => {
                for op in choice(kind, first, &store, &mut clock, &forgotten) {
                    store.step(&op);
                    trace.steps.push(Step::Op(op));
                }
                continue;
            }
            step => concrete(step, &store, &mut clock, &forgotten),
        };
        let tombstones: Vec<String> = store.tombstones().iter().map(|t| t.id.to_string()).collect();
        store.step(&op);
        for id in tombstones {
            if store.tombstone(&id).is_none() && !forgotten.contains(&id) {
                forgotten.push(id);
            }
        }
        let then = match (step, &op) {
            (Abstract::Cancel { then: Some(stop), .. }, Op::Cancel { id, .. }) => {
                stopped(*stop, id, &store, &mut clock)
            }
            _ => None,
        };
        trace.steps.push(Step::Op(op));
        if let Some(op) = then {
            store.step(&op);
            trace.steps.push(Step::Op(op));
        }
    }
    trace
}

/// The steps of an [`Abstract::Choice`], played on a copy of the model to follow them: none
/// where the ids it needs are not free.
fn choice(kind: u8, first: usize, store: &Store, clock: &mut u64, forgotten: &[String]) -> Vec<Op> {
    let free = |id: &&str| store.job(id).is_none() && store.tombstone(id).is_none();
    let mut fresh = (0..IDS.len()).map(|i| IDS[(first + i) % IDS.len()]).filter(free);
    let enqueue =
        |id: &str, queue: Option<&str>, priority: Option<u64>, now: u64, deadline: u64| Op::Enqueue {
            priority,
            queue: queue.map(str::to_owned),
            id: id.to_owned(),
            payload: format!("order {id}"),
            max_attempts: 2,
            deadline: deadline.min(MAX_INT),
            now,
            not_before: None,
            base_ms: Some(1),
            cap_ms: Some(1),
            kind: None,
        };
    let mut local = store.clone();
    let mut ops = Vec::new();
    let mut run = |op: Op| {
        let response = local.step(&op);
        ops.push(op);
        response
    };
    let now = *clock;
    let claim = |queues: Option<&[&str]>, now: u64| Op::Claim {
        queues: queues.map(|list| list.iter().map(|q| (*q).to_owned()).collect()),
        worker: WORKERS[0].into(),
        now,
    };
    match kind {
        // Priority across queues and across a wait far longer than any aging would allow
        // (SPEC 3.3.2, 4.8): the priority 1 of the second queue due first.
        0 => {
            let (Some(low), Some(high)) = (fresh.next(), fresh.next()) else { return ops };
            *clock = (now + FAR).min(MAX_INT - 10);
            run(enqueue(low, Some(QUEUES[1]), Some(1), now, *clock + 10));
            run(enqueue(high, None, None, *clock, *clock + 10));
            run(claim(Some(&[QUEUES[0], QUEUES[1]]), *clock));
        }
        // A forgotten id enqueued anew beside a new one, at the same time: the new one goes
        // first (SPEC 3.15).
        1 => {
            let revived = forgotten.iter().map(String::as_str).find(|id| free(id));
            let (Some(revived), Some(new)) = (revived, fresh.find(|id| !forgotten.iter().any(|f| f == id)))
            else {
                return ops;
            };
            run(enqueue(new, None, None, now, now + 10));
            run(enqueue(revived, None, None, now, now + 10));
            run(claim(None, now));
        }
        // A tie of two queues, the later-enqueued job's named first (SPEC 6.32).
        2 => {
            let (Some(a), Some(b)) = (fresh.next(), fresh.next()) else { return ops };
            run(enqueue(a, Some(QUEUES[1]), None, now, now + 10));
            run(enqueue(b, None, None, now, now + 10));
            run(claim(Some(&[QUEUES[0], QUEUES[1]]), now));
        }
        // A heartbeat under a lease_ms switched since the claim extends by the new one (SPEC
        // 3.12): claimed under 5 ms, beaten under 60, then the lease_ms put back as it was.
        3 => {
            let Some(id) = fresh.next() else { return ops };
            let before = store.config();
            let lease = |lease_ms: u64| Op::Config {
                base_ms: None,
                cap_ms: None,
                lease_ms: Some(lease_ms),
                reap_limit: None,
            };
            run(enqueue(id, None, None, now, now + 100));
            run(lease(5));
            let claimed = run(claim(None, now));
            run(lease(60));
            if let Response::Ok(Reply::Claimed { id: taken, attempt, .. }) = claimed {
                run(Op::Heartbeat { worker: WORKERS[0].into(), id: taken, attempt, now: now + 1 });
            }
            run(lease(before.lease_ms));
            *clock = now + 1;
        }
        // A retry of a job of priority 1 keeps it (SPEC 1.6, 3.4): the second queue alone.
        _ => {
            let Some(id) = fresh.next() else { return ops };
            run(enqueue(id, Some(QUEUES[1]), Some(1), now, now + 10));
            let claimed = run(claim(Some(&[QUEUES[1]]), now));
            if let Response::Ok(Reply::Claimed { id: taken, attempt, .. }) = claimed
                && taken == id
            {
                run(Op::Complete {
                    worker: WORKERS[0].into(),
                    id: id.to_owned(),
                    attempt,
                    outcome: Outcome::Retryable,
                    now,
                    jitter: Some(1.0),
                });
                run(Op::Get { id: id.to_owned() });
            }
        }
    }
    ops
}

/// The enqueues of an [`Abstract::Burst`] at `now`.
fn burst(first: usize, count: usize, ttl: u64, order: u8, now: u64) -> Vec<Op> {
    (0..count)
        .map(|i| {
            let apart = match order {
                0 => 0,
                1 => i,
                _ => count - 1 - i,
            } as u64;
            let id = IDS[(first + i) % IDS.len()];
            Op::Enqueue {
                id: id.to_owned(),
                // The id's own payload, as [`Abstract::Enqueue`] sends it: an id stored already
                // is `existing`.
                payload: format!("order {id}"),
                max_attempts: 2,
                deadline: (now + ttl + apart).min(MAX_INT),
                now,
                not_before: None,
                base_ms: None,
                cap_ms: None,
                queue: None,
                priority: None,
                kind: None,
            }
        })
        .collect()
}

/// What the holder of `id` does after a cancel request ([`Stop`]), if `id` is a leased job
/// with a request standing.
fn stopped(stop: Stop, id: &str, store: &Store, clock: &mut u64) -> Option<Op> {
    let job = store.job(id).filter(|j| j.cancel_requested)?;
    let Phase::Leased { owner, until, .. } = &job.phase else { return None };
    let (worker, attempt) = (owner.to_string(), job.attempts);
    let op = match stop {
        Stop::Heartbeat(later) => {
            *clock = clock.saturating_add(later).min(MAX_INT);
            Op::Heartbeat { worker, id: id.into(), attempt, now: *clock }
        }
        Stop::Complete { outcome, later, jitter } => {
            *clock = clock.saturating_add(later).min(MAX_INT);
            Op::Complete {
                worker,
                id: id.into(),
                attempt,
                outcome,
                now: *clock,
                jitter: Some(JITTERS[jitter]),
            }
        }
        Stop::Expiry { worker, offset } => {
            *clock = match offset {
                -1 => until.saturating_sub(1),
                1 => until.saturating_add(1),
                _ => *until,
            }
            .min(MAX_INT);
            Op::Claim { queues: None, worker: WORKERS[worker].into(), now: *clock }
        }
    };
    Some(op)
}

/// The id a [`Pick`] names in the model's state.
fn picked(pick: Pick, store: &Store, forgotten: &[String]) -> String {
    let nth = |ids: Vec<&str>, n: usize| (!ids.is_empty()).then(|| ids[n % ids.len()].to_owned());
    let leased = |n: usize| {
        nth(
            store
                .jobs()
                .iter()
                .filter(|j| matches!(j.phase, Phase::Leased { .. }))
                .map(|j| j.id.as_str())
                .collect(),
            n,
        )
    };
    let found = match pick {
        Pick::Any(n) => Some(IDS[n % IDS.len()].to_owned()),
        Pick::Leased(n) => leased(n),
        Pick::Cancelling(n) => nth(
            store
                .jobs()
                .iter()
                .filter(|j| j.cancel_requested && matches!(j.phase, Phase::Leased { .. }))
                .map(|j| j.id.as_str())
                .collect(),
            n,
        )
        .or_else(|| leased(n)),
        Pick::Pruned(n) => nth(store.tombstones().iter().map(|t| t.id.as_str()).collect(), n),
        Pick::Forgotten(n) => nth(
            forgotten
                .iter()
                .filter(|id| store.job(id).is_none() && store.tombstone(id).is_none())
                .map(String::as_str)
                .collect(),
            n,
        ),
    };
    let n = match pick {
        Pick::Any(n) | Pick::Leased(n) | Pick::Cancelling(n) | Pick::Pruned(n) | Pick::Forgotten(n) => n,
    };
    found.unwrap_or_else(|| IDS[n % IDS.len()].to_owned())
}

/// The queue list [`SERVED`]`[i]`, if one is given; past [`SERVED`], the second queue's
/// name in a class equal to it but for its bytes ([`NameClass`]: another case, a compatibility
/// form, a trailing space), which serves no job of it (SPEC 1.6).
fn served_list(queues: Option<usize>) -> Option<Vec<String>> {
    queues.map(|i| match SERVED.get(i) {
        Some(list) => list.iter().map(|q| (*q).to_owned()).collect(),
        None => {
            let class = NameClass::ALL[(i - SERVED.len()) % NameClass::ALL.len()];
            vec![class.of(QUEUES[1]).unwrap_or_else(|| QUEUES[1].to_uppercase())]
        }
    })
}

/// A prune's or a forget's `before` and `now`: `now` as [`When`] says, moved up to a bound
/// that lies after it (except [`Bound::Future`], whose point is to lie after it). The clock
/// of the steps after it stays where [`When`] put it.
fn bounded(bound: Bound, ended: &[u64], open: &[u64], now: u64) -> (u64, u64) {
    let shift = |t: u64, offset: i8| match offset {
        -1 => t.saturating_sub(1),
        1 => t.saturating_add(1),
        _ => t,
    };
    let nth = |times: &[u64], n: usize| (!times.is_empty()).then(|| times[n % times.len()]);
    let before = match bound {
        Bound::Ended { job, offset } => nth(ended, job).map(|t| shift(t, offset)),
        Bound::OpenDeadline { job, offset } => nth(open, job).map(|t| shift(t, offset)),
        Bound::Now => Some(now),
        Bound::Ago(d) => Some(now.saturating_sub(d)),
        Bound::Future => return (now.saturating_add(1), now),
    };
    let before = before.unwrap_or(now).min(MAX_INT);
    (before, now.max(before))
}

fn concrete(step: &Abstract, store: &Store, clock: &mut u64, forgotten: &[String]) -> Op {
    let mut at = |when: &When| {
        *clock = resolve(when, store, *clock, None);
        *clock
    };
    match step {
        Abstract::Config { base_ms, cap_ms, lease_ms, reap_limit } => {
            Op::Config { base_ms: *base_ms, cap_ms: *cap_ms, lease_ms: *lease_ms, reap_limit: *reap_limit }
        }
        Abstract::Enqueue {
            job,
            other_payload,
            max_attempts,
            ttl,
            now,
            schedule,
            base_ms,
            cap_ms,
            queue,
            priority,
            pick,
        } => {
            let now = at(now);
            let id = match pick {
                Some(pick) => picked(*pick, store, forgotten),
                None => IDS[*job].to_owned(),
            };
            let payload = if *other_payload { format!("other {id}") } else { format!("order {id}") };
            let not_before = match schedule {
                Schedule::Unscheduled => None,
                Schedule::After(d) => Some(now.saturating_add(*d).min(MAX_INT)),
                Schedule::BeforeNow => Some(now.saturating_sub(1)),
            };
            Op::Enqueue {
                priority: *priority,
                queue: queue.map(|q| QUEUES[q % QUEUES.len()].to_owned()),
                id,
                payload,
                max_attempts: *max_attempts,
                deadline: now.saturating_add(*ttl),
                now,
                not_before,
                base_ms: *base_ms,
                cap_ms: *cap_ms,
                kind: None,
            }
        }
        Abstract::Heartbeat { by, job, token, now } => {
            // Heartbeats are about leases: mostly a leased job when there is one, so that
            // most are made on a lease rather than refused for lack of one.
            let id = picked(*job, store, forgotten);
            let (worker, attempt) = presented(store, &id, *by, *token);
            // A heartbeat's deadline edges are about the job it keeps.
            let now = resolve(now, store, *clock, Some((&id, None)));
            *clock = now;
            Op::Heartbeat { worker, id, attempt, now }
        }
        Abstract::Cancel { job, now, .. } => Op::Cancel { id: picked(*job, store, forgotten), now: at(now) },
        Abstract::Pause { queue, now } => {
            Op::Pause { queue: COUNTED[*queue % COUNTED.len()].into(), now: at(now) }
        }
        Abstract::Resume { queue, now } => {
            Op::Resume { queue: COUNTED[*queue % COUNTED.len()].into(), now: at(now) }
        }
        Abstract::RunNow { job, now } => {
            let id = picked(*job, store, forgotten);
            // Its deadline edges are about the job it makes due.
            let now = resolve(now, store, *clock, Some((&id, None)));
            *clock = now;
            Op::RunNow { id, now }
        }
        Abstract::Claim { worker, now, queues } => {
            Op::Claim { queues: served_list(*queues), worker: WORKERS[*worker].into(), now: at(now) }
        }
        Abstract::Complete { by, job, token, outcome, now, jitter } => {
            let id = picked(*job, store, forgotten);
            let (worker, attempt) = presented(store, &id, *by, *token);
            // A completion's deadline edges are about the job it completes.
            let now = resolve(now, store, *clock, Some((&id, jitter.map(|j| JITTERS[j]))));
            *clock = now;
            Op::Complete { worker, id, attempt, outcome: *outcome, now, jitter: jitter.map(|j| JITTERS[j]) }
        }
        Abstract::RunOnce { worker, now, after, outcome, jitter, queues } => {
            let now = at(now);
            let queues = served_list(*queues);
            // The second clock reading's edges are about the job this run will claim.
            let mut probe = store.clone();
            let claim = Op::Claim { queues: queues.clone(), worker: WORKERS[*worker].into(), now };
            let claimed = match probe.step(&claim) {
                retryq_model::Response::Ok(retryq_model::Reply::Claimed { id, .. }) => Some(id),
                _ => None,
            };
            let focus = claimed.as_deref().map(|id| (id, jitter.map(|j| JITTERS[j])));
            let after = after.as_ref().map(|after| resolve(after, &probe, now, focus));
            Op::RunOnce {
                queues,
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
                id: picked(*job, store, forgotten),
                now,
                add_attempts: *add_attempts,
                deadline: now.saturating_add(*ttl),
            }
        }
        Abstract::Reap { now } => Op::Reap { now: at(now) },
        Abstract::Get { job } => Op::Get { id: picked(*job, store, forgotten) },
        Abstract::Stats { now, queue } => {
            Op::Stats { queue: queue.map(|q| COUNTED[q % COUNTED.len()].to_owned()), now: at(now) }
        }
        Abstract::Prune { before, now } => {
            let ended: Vec<u64> = store.jobs().iter().filter_map(|j| j.ended_at).collect();
            let open: Vec<u64> = store
                .jobs()
                .iter()
                .filter(|j| matches!(j.phase, Phase::Pending { .. } | Phase::Leased { .. }))
                .map(|j| j.deadline)
                .collect();
            // A bound past the clock moves this step's `now` only: the steps after it go on
            // from the clock as it was, so that a prune at a deadline kills no job.
            let (before, now) = bounded(*before, &ended, &open, at(now));
            Op::Prune { before, now }
        }
        Abstract::Forget { before, now } => {
            let ended: Vec<u64> = store.tombstones().iter().map(|t| t.ended_at).collect();
            let (before, now) = bounded(*before, &ended, &[], at(now));
            Op::Forget { before, now }
        }
        Abstract::RetryDelay { attempt, base_ms, cap_ms, jitter } => {
            Op::RetryDelay { attempt: *attempt, base_ms: *base_ms, cap_ms: *cap_ms, jitter: JITTERS[*jitter] }
        }
        // An invalid line and a burst are [`materialize`]'s own: no one operation says them.
        Abstract::Restart | Abstract::Invalid(_) | Abstract::Burst { .. } | Abstract::Choice { .. } => {
            Op::Restart
        }
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
        When::Backlog { rank } => {
            let mut ahead: Vec<u64> = store
                .jobs()
                .iter()
                .filter(|j| matches!(j.phase, Phase::Pending { .. } | Phase::Leased { .. }))
                .map(|j| j.deadline)
                .filter(|&deadline| deadline > previous)
                .collect();
            ahead.sort_unstable();
            ahead.get(rank.min(ahead.len().saturating_sub(1))).copied().unwrap_or(previous)
        }
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
    let op = match u8::arbitrary(g) % 27 {
        0 => Op::Config {
            base_ms: Option::<u8>::arbitrary(g).map(|b| u64::from(b % 16)),
            cap_ms: Option::<u8>::arbitrary(g).map(|c| u64::from(c % 32)),
            lease_ms: Option::<u8>::arbitrary(g).map(|l| u64::from(l % 24)),
            // 0 (refused), 1, 2 or 3 most often: a window of a few jobs due to end at once.
            reap_limit: Option::<u8>::arbitrary(g).map(|l| u64::from(l % 4)),
        },
        1 | 2 => {
            let now = time(g);
            let deadline = now + u64::from(u8::arbitrary(g) % 48);
            // Scheduled one time in four, within or (now and then) outside now … deadline − 1.
            let not_before = (u8::arbitrary(g) % 4 == 0)
                .then(|| (now + u64::from(u8::arbitrary(g) % 24)).saturating_sub(1));
            let own = |g: &mut Gen| (u8::arbitrary(g) % 4 == 0).then(|| u64::from(u8::arbitrary(g) % 24));
            // A queue named one time in two, the second one most often; a priority one time
            // in three, 10 (refused) now and then.
            let queue = match u8::arbitrary(g) % 6 {
                0..=2 => None,
                3 => Some(QUEUES[0].to_owned()),
                _ => Some(QUEUES[1].to_owned()),
            };
            let priority = match u8::arbitrary(g) % 12 {
                0..=7 => None,
                8 => Some(0),
                9 | 10 => Some(1),
                _ => Some(10),
            };
            // A payload, now and then under a kind (contract 1.4): "x" as a "mail" job is
            // another job than "x" alone, and a re-enqueue of one as the other a conflict.
            // Drawn as the payload alone was, so that the rest of the draw is unchanged.
            let (payload, kind) = pick(g, &[("", None), ("x", None), ("y", None), ("x", Some("mail"))]);
            Op::Enqueue {
                priority,
                queue,
                id,
                payload: payload.to_owned(),
                max_attempts: u64::from(u8::arbitrary(g) % 4),
                deadline,
                now,
                not_before,
                base_ms: own(g),
                cap_ms: own(g),
                kind: kind.map(str::to_owned),
            }
        }
        3..=5 => Op::Claim { queues: served_by(g), worker, now: time(g) },
        6..=8 => Op::Complete {
            worker,
            id,
            attempt: u64::from(u8::arbitrary(g) % 5),
            outcome: pick(g, &[Outcome::Ok, Outcome::Retryable, Outcome::Retryable, Outcome::Permanent]),
            now: time(g),
            jitter,
        },
        9..=11 => Op::RunOnce {
            queues: served_by(g),
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
        17 | 18 => Op::Cancel { id, now: time(g) },
        19 => Op::Stats { queue: bool::arbitrary(g).then(|| pick(g, &COUNTED).to_owned()), now: time(g) },
        20 | 21 => {
            let (before, now) = retention(g);
            Op::Prune { before, now }
        }
        22 => {
            let (before, now) = retention(g);
            Op::Forget { before, now }
        }
        23 => Op::Pause { queue: pick(g, &COUNTED).to_owned(), now: time(g) },
        24 => Op::Resume { queue: pick(g, &COUNTED).to_owned(), now: time(g) },
        25 => Op::RunNow { id, now: time(g) },
        _ => return Step::Invalid(pick(g, &INVALID_LINES).to_owned()),
    };
    Step::Op(op)
}

/// A claim's or a run's queues: none given one time in two, else one of [`SERVED`].
fn served_by(g: &mut Gen) -> Option<Vec<String>> {
    (u8::arbitrary(g) % 2 == 0).then(|| pick(g, &SERVED).iter().map(|q| (*q).to_owned()).collect())
}

/// A prune's or a forget's `before` and `now`: `before` at most a little before `now`, so
/// that jobs ended on either side of it; now and then one after it (refused).
fn retention(g: &mut Gen) -> (u64, u64) {
    let now = time(g);
    match u8::arbitrary(g) % 10 {
        0 => (now + 1, now),
        1 => (now, now),
        _ => (now.saturating_sub(u64::from(u8::arbitrary(g) % 24)), now),
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use super::*;

    #[test]
    fn materialized_traces_reach_the_edges() {
        // Over eight hundred generated traces, every edge the generator aims at is hit.
        let mut runner = TestRunner::deterministic();
        let strategy = abstract_trace(40);
        let (mut expiry_claims, mut deadline_deaths, mut stale, mut crashes) = (0, 0, 0, 0);
        let (mut extended, mut late_heartbeats, mut cancelled, mut not_cancelled) = (0, 0, 0, 0);
        let (mut other_queue, mut by_priority, mut cancelling, mut refused_beats) = (0, 0, 0, 0);
        let (mut stopped, mut pruned, mut kept_open, mut pruned_answers) = (0, 0, 0, 0);
        let (mut forgotten, mut revived, mut refused_bounds) = (0, 0, 0);
        let (mut stopped_at_limit, mut passed_over) = (0, 0);
        for _ in 0..800 {
            let steps = strategy.new_tree(&mut runner).expect("tree").current();
            let trace = materialize(&steps);
            let mut store = Store::new();
            let mut gone = Vec::new();
            for step in &trace.steps {
                let Step::Op(op) = step else { continue };
                let leases = live_leases(&store);
                let before = store.clone();
                let response = store.step(op);
                let line = response.to_json_line();
                match op {
                    // A claim that served the second queue and took one of its jobs.
                    Op::Claim { queues: Some(queues), .. } | Op::RunOnce { queues: Some(queues), .. }
                        if queues.iter().any(|q| q == "q1") && line.contains("\"attempt\":") =>
                    {
                        other_queue += 1;
                    }
                    _ => {}
                }
                if let Op::Claim { .. } = op
                    && let retryq_model::Response::Ok(retryq_model::Reply::Claimed { id, .. }) = &response
                    && before.job(id).is_some_and(|j| j.priority == 0)
                    && before.jobs().iter().any(|j| j.priority > 0 && matches!(j.phase, Phase::Pending { available_at } if available_at <= op.now().unwrap_or(0)))
                {
                    by_priority += 1;
                }
                cancelling += usize::from(line.contains("\"cancelling\""));
                refused_beats +=
                    usize::from(matches!(op, Op::Heartbeat { .. }) && line.contains("\"cancelled\""));
                if let Op::Complete { id, outcome: Outcome::Retryable, .. } = op
                    && before.job(id).is_some_and(|j| j.cancel_requested)
                    && line.contains("\"cancelled\"")
                {
                    stopped += 1;
                }
                if let Op::Prune { before: bound, .. } = op {
                    pruned += usize::from(store.tombstones().len() > before.tombstones().len());
                    kept_open += usize::from(
                        before.jobs().iter().any(|j| j.ended_at.is_none() && j.deadline <= *bound),
                    );
                }
                if op.id().is_some_and(|id| before.tombstone(id).is_some()) && !matches!(op, Op::Get { .. }) {
                    pruned_answers += 1;
                }
                if let Op::Forget { .. } = op {
                    forgotten += usize::from(store.tombstones().len() < before.tombstones().len());
                    gone.extend(
                        before
                            .tombstones()
                            .iter()
                            .filter(|t| store.tombstone(&t.id).is_none())
                            .map(|t| t.id.clone()),
                    );
                }
                if let Op::Enqueue { id, .. } = op
                    && line.contains("enqueued")
                    && gone.iter().any(|g| g == id)
                {
                    revived += 1;
                    gone.retain(|g| g != id);
                }
                if let Op::Prune { before: b, now } | Op::Forget { before: b, now } = op {
                    refused_bounds += usize::from(b > now);
                }
                // SPEC 6.37: a reap that stopped at its limit, leaving a job due to end; a
                // claim that took a job past one.
                if let Op::Claim { now, .. } | Op::RunOnce { now, .. } | Op::Reap { now } = op
                    && !line.contains("invalid_input")
                    && store.jobs().iter().any(|j| retryq_model::rules::due_to_end(j, *now))
                {
                    stopped_at_limit += 1;
                    passed_over += usize::from(line.contains("\"attempt\":"));
                }
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
        println!(
            "1.1: extended {extended}, late {late_heartbeats}, cancelled {cancelled}, refused {not_cancelled}"
        );
        println!(
            "1.2: other queue {other_queue}, by priority {by_priority}, cancelling {cancelling}, refused beats {refused_beats}, stopped {stopped}"
        );
        println!(
            "1.2: pruned {pruned}, kept open {kept_open}, on pruned ids {pruned_answers}, forgotten {forgotten}, revived {revived}, refused bounds {refused_bounds}"
        );
        println!(
            "1.3: reaps stopped at their limit {stopped_at_limit}, picks past a job due to end {passed_over}"
        );
        assert!(stopped_at_limit > 10, "reaps that left a job due to end: {stopped_at_limit}");
        assert!(passed_over > 3, "claims that passed over a job due to end: {passed_over}");
        assert!(expiry_claims > 10, "claims exactly at lease expiry: {expiry_claims}");
        assert!(deadline_deaths > 10, "retries dead by deadline: {deadline_deaths}");
        assert!(stale > 10, "stale completions: {stale}");
        assert!(crashes > 10, "crashes: {crashes}");
        assert!(extended > 10, "accepted heartbeats: {extended}");
        assert!(late_heartbeats > 3, "heartbeats at or past the deadline: {late_heartbeats}");
        assert!(cancelled > 10, "cancels: {cancelled}");
        assert!(not_cancelled > 10, "refused cancels: {not_cancelled}");
        assert!(other_queue > 10, "claims of the second queue: {other_queue}");
        assert!(by_priority > 3, "claims passing over a due job of a larger priority: {by_priority}");
        assert!(cancelling > 10, "cancel requests: {cancelling}");
        assert!(refused_beats > 3, "heartbeats refused cancelled: {refused_beats}");
        assert!(stopped > 3, "retryable completions ending dead(cancelled): {stopped}");
        assert!(pruned > 10, "prunes that pruned: {pruned}");
        assert!(kept_open > 3, "prunes by an open job's passed deadline: {kept_open}");
        assert!(pruned_answers > 10, "operations on pruned ids: {pruned_answers}");
        assert!(forgotten > 3, "forgets that forgot: {forgotten}");
        assert!(revived > 0, "forgotten ids enqueued anew: {revived}");
        assert!(refused_bounds > 3, "prunes and forgets refused their before: {refused_bounds}");
    }
}
