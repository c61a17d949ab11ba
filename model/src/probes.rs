//! The probes: operations that cannot move a correct store, or whose consequences the world
//! need not follow, judged on the first world of each class the search meets and never
//! explored further ([`crate::checker::Probed`]).
//!
//! Three sets, each with its own classes of worlds:
//!
//! - **The store** (one class per scene, clock and store): every read (`stats`, `get` of each
//!   job and of a missing id), `restart`, a re-enqueue of each job with its own payload (and
//!   another budget, deadline, schedule and backoff, which must change nothing: 6.22) and with
//!   another, `cancel` and `redrive` of each job whatever its status (and a redrive at the
//!   edge of the budget's range, and one past it: 6.5), the fence of each job tried every way
//!   (the holder's token, the one before and after it, the current token from another worker,
//!   dated before the claim, a heartbeat dated back), `run_once` whose transport answers each
//!   outcome and whose second reading is the first, one or two milliseconds later, and
//!   `config` with each setting omitted (which must keep it) or changed alone. What a probe
//!   does depends on the store and the clock only, so judging it once per store and clock
//!   judges it in every world that holds them.
//! - **The arguments** (one class per scene, settings, statuses of the jobs, whether a
//!   tombstone is kept and whether a job is outside the default queue): the fence, a
//!   cancel and a redrive of a missing id, `config` with each setting omitted (which must keep
//!   it) or changed alone; and every operation of the
//!   contract's table ([`contract::OpKind::ALL`]), every one of its fields, with a
//!   representative of every class of that field ([`contract::classes`]: the valid values at
//!   the edges of its range, and each way of being invalid), against the first job and against
//!   a missing id. Derived from the table, not written operation by operation: an operation
//!   added to the table is probed here by the same code.
//! - **The formula** (one class: judged once): [`DELAY_PROBES`], `retry_delay` at the
//!   formula's doubling, caps, saturation and binary64's edges.
//!
//! Layer: part of the world, above it ([`crate::model`]) and the contract's table
//! ([`crate::contract`]); below the search that asks for the probes. It may not reach up: a
//! probe is an operation a world can run, whoever judges it.

use std::hash::Hash;

use crate::choices::{self, NameClass};
use crate::contract::{self, Class, Field, OpKind};
use crate::coverage;
use crate::ids::{OTHER_PAYLOAD, PAYLOAD, job_name, worker_name};
use crate::model::{Action, DELAY_PROBES, OTHER_QUEUE, QueueModel, World};
use crate::reference::{Config, DEFAULT_QUEUE, Phase};
use crate::{MAX_INT, Op, Outcome, RunOutcome};

/// The largest budget, 2^31 − 1.
const MAX_BUDGET: u64 = (1 << 31) - 1;

/// The probe sets, in the order the checker numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    /// Reads, refusals, fences, `run_once`'s outcomes and readings, partial settings.
    Store,
    /// Every operation's every field, a representative of each class.
    Arguments,
    /// `retry_delay` at the formula's edges.
    Formula,
}

impl Set {
    /// Every set.
    pub const ALL: [Set; 3] = [Set::Store, Set::Arguments, Set::Formula];
}

/// A 64-bit hash with fixed keys: the same class for the same value on every run.
fn class_of<T: Hash>(value: &T) -> u64 {
    ahash::RandomState::with_seeds(0x7072_6f62_6573, 0x5245_5452_5951, 0x0063_6c61_7373, 0x6b65_7973)
        .hash_one(value)
}

impl QueueModel {
    /// The class of `world` for probe set `set`.
    pub fn probe_class(&self, set: Set, world: &World) -> u64 {
        match set {
            Set::Store => class_of(&(world.scene, world.now, &world.store)),
            Set::Arguments => {
                let statuses: Vec<_> =
                    world.store.jobs().iter().map(|job| coverage::meets(Some(job), world.now)).collect();
                let tombstone = !world.store.tombstones().is_empty();
                // A job outside the default queue: the queue names equal to its but for their
                // bytes ([`name_probes`]) are made of it.
                let elsewhere = world.store.jobs().iter().any(|job| *job.queue != *DEFAULT_QUEUE);
                class_of(&(world.scene, world.store.config(), statuses, tombstone, elsewhere))
            }
            Set::Formula => 0,
        }
    }

    /// Appends the probes of `set` at `world`.
    pub fn probe_actions(&self, set: Set, world: &World, actions: &mut Vec<Action>) {
        if !self.bounds.hostile {
            return;
        }
        let mut ops = Vec::new();
        match set {
            Set::Store => self.store_probes(world, &mut ops),
            Set::Arguments => {
                if self.bounds.contract_1_1 {
                    settings_probes(world, &mut ops);
                    let mut varied = Vec::new();
                    argument_probes(world, &mut varied);
                    name_probes(world, &mut ops);
                    refusal_probes(world, &mut ops);
                    actions.extend(ops.drain(..).map(|op| Action::Probe { op, varies: None }));
                    actions.extend(
                        varied.into_iter().map(|(op, field)| Action::Probe { op, varies: Some(field) }),
                    );
                }
            }
            Set::Formula => ops.extend(DELAY_PROBES.iter().map(|&(attempt, base_ms, cap_ms, jitter)| {
                Op::RetryDelay { attempt, base_ms, cap_ms, jitter }
            })),
        }
        actions.extend(ops.into_iter().map(|op| Action::Probe { op, varies: None }));
    }

    fn store_probes(&self, world: &World, ops: &mut Vec<Op>) {
        let now = world.now;
        let store = &world.store;
        let later = |by: u64| (now + by).min(MAX_INT);
        let missing = job_name(store.jobs().len());
        ops.push(Op::Restart);
        ops.push(Op::Stats { queue: None, now });
        ops.push(Op::Get { id: missing.clone() });
        for job in store.jobs() {
            let id = job.id.to_string();
            ops.push(Op::Get { id: id.clone() });
            // SPEC 6.22: the same payload changes nothing, whatever else it says.
            ops.push(Op::Enqueue {
                priority: None,
                queue: None,
                id: id.clone(),
                payload: job.payload.to_string(),
                max_attempts: (job.max_attempts + 1).min(MAX_BUDGET),
                deadline: later(1),
                now,
                not_before: Some(now),
                base_ms: Some(0),
                cap_ms: Some(7),
                kind: None,
            });
            if !self.bounds.contract_1_1 {
                continue;
            }
            // A conflict, and a redrive at and past the budget's edge, are argument probes
            // (the first job's payload and `add_attempts` varied by class).
            ops.push(Op::Cancel { id: id.clone(), now });
            ops.push(Op::Redrive { id: id.clone(), now, add_attempts: 1, deadline: later(1) });
            fence_probes(&id, job.attempts, &job.phase, now, ops);
            run_now_probes(&id, job, now, ops);
        }
        ops.push(Op::RunNow { id: missing.clone(), now });
        // A second pause or resume changes nothing, a restart keeps the pauses (SPEC 3.16,
        // 3.17, 4.10): where the world pauses.
        if self.scene(world).pauses {
            for queue in [DEFAULT_QUEUE, OTHER_QUEUE] {
                ops.push(Op::Pause { queue: queue.into(), now });
                ops.push(Op::Resume { queue: queue.into(), now });
            }
        }
        // A tombstone's id, every way an operation can name it (SPEC 3.14): it answers as the
        // ended job it was, is never run again, and is shown as pruned.
        for tombstone in store.tombstones() {
            let id = tombstone.id.to_string();
            ops.push(Op::Get { id: id.clone() });
            // Its own payload, another payload, and its own payload under another kind: the
            // digest covers the kind too (SPEC 6.29).
            let own = tombstone.payload.to_string();
            let other_kind = format!("{}k", tombstone.kind);
            for (payload, kind) in
                [(own.clone(), None), (OTHER_PAYLOAD.to_string(), None), (own, Some(other_kind))]
            {
                ops.push(Op::Enqueue {
                    kind,
                    id: id.clone(),
                    payload,
                    max_attempts: 1,
                    deadline: later(1),
                    now,
                    not_before: None,
                    base_ms: None,
                    cap_ms: None,
                    queue: None,
                    priority: None,
                });
            }
            ops.push(Op::Cancel { id: id.clone(), now });
            ops.push(Op::Redrive { id: id.clone(), now, add_attempts: 1, deadline: later(1) });
            ops.push(Op::RunNow { id: id.clone(), now });
            fence_probes(&id, tombstone.attempts, &tombstone.phase, now, ops);
        }
        // run_once's second reading the first, or later: each outcome the transport can
        // classify (ok and permanent at the first only: a later one changes nothing they do).
        // A crash or an unclassified error with the second reading back or ahead: a crash
        // ignores it, the clock check comes before `unknown` (SPEC 6.7).
        let earlier = now.checked_sub(1);
        let readings = [
            (RunOutcome::Ok, None, None),
            (RunOutcome::Permanent, None, None),
            (RunOutcome::Retryable, Some(0.5), None),
            (RunOutcome::Retryable, Some(0.5), Some(later(1))),
            (RunOutcome::Retryable, Some(1.0), Some(later(1))),
            (RunOutcome::Retryable, Some(1.0), Some(later(2))),
            (RunOutcome::Crash, None, earlier.or(Some(later(1)))),
            (RunOutcome::Unknown, None, earlier.or(Some(later(1)))),
            (RunOutcome::Unknown, None, Some(later(1))),
        ];
        for (outcome, jitter, after) in readings {
            ops.push(Op::RunOnce { queues: None, worker: worker_name(0), now, after, outcome, jitter });
        }
        if !self.scene(world).lanes.is_empty() {
            lane_probes(world, ops);
        }
    }
}

/// Where jobs go to several queues: a claim naming every list of those queues (each alone,
/// and each order of two: SPEC 3.3.2, 6.32 — the order plays no part), and `stats` of each
/// queue (3.8), so that every relation of [`crate::choices::Choice::Claim`] and
/// [`crate::choices::Choice::Stats`] the store holds is put to it.
fn lane_probes(world: &World, ops: &mut Vec<Op>) {
    let store = &world.store;
    let mut queues: Vec<&str> = vec![DEFAULT_QUEUE];
    for queue in store.jobs().iter().map(|j| &*j.queue).chain(store.tombstones().iter().map(|t| &*t.queue)) {
        if !queues.contains(&queue) {
            queues.push(queue);
        }
    }
    let now = world.now;
    let mut lists: Vec<Vec<String>> = queues.iter().map(|&q| vec![q.to_owned()]).collect();
    for &a in &queues {
        for &b in queues.iter().filter(|&&b| b != a) {
            lists.push(vec![a.to_owned(), b.to_owned()]);
        }
    }
    for list in lists {
        ops.push(Op::Claim { queues: Some(list), worker: worker_name(0), now });
    }
    for queue in queues {
        ops.push(Op::Stats { queue: Some(queue.to_owned()), now });
    }
}

/// What depends only on the settings: `config` with each setting omitted (which must keep its
/// value), given alone at its value, and changed alone. (A missing id's fence, cancel and
/// redrive are argument probes.)
fn settings_probes(world: &World, ops: &mut Vec<Op>) {
    let Config { base_ms, cap_ms, lease_ms, reap_limit } = world.store.config();
    let other = |v: u64| if v < MAX_INT { v + 1 } else { v - 1 };
    let config = |base_ms, cap_ms, lease_ms, reap_limit| Op::Config { base_ms, cap_ms, lease_ms, reap_limit };
    ops.push(config(None, None, None, None));
    ops.push(config(Some(base_ms), None, None, None));
    ops.push(config(None, Some(cap_ms), None, None));
    ops.push(config(None, None, Some(lease_ms), None));
    ops.push(config(None, None, None, Some(reap_limit)));
    ops.push(config(Some(other(base_ms)), None, None, None));
    ops.push(config(None, Some(other(cap_ms)), None, None));
    ops.push(config(None, None, Some(other(lease_ms)), None));
    ops.push(config(None, None, None, Some(other(reap_limit))));
}

/// The fence of job `id`, tried every way: for a lease, each outcome from its holder, then the
/// token before and after the holder's, the holder's token from another worker, and a
/// completion and a heartbeat dated before the claim; a heartbeat by the holder now, and one
/// dated back (after the claim: the lease must not shrink). For any other status, the holder's
/// last token, which must be `lease_lost` (or `not_found`).
fn fence_probes(id: &str, attempts: u64, phase: &Phase, now: u64, ops: &mut Vec<Op>) {
    let complete = |worker: &str, attempt: u64, outcome: Outcome, now: u64, jitter: Option<f64>| {
        Op::Complete { worker: worker.into(), id: id.into(), attempt, outcome, now, jitter }
    };
    let heartbeat = |worker: &str, attempt: u64, now: u64| Op::Heartbeat {
        worker: worker.into(),
        id: id.into(),
        attempt,
        now,
    };
    let Phase::Leased { owner, claimed_at, .. } = phase else {
        let attempt = attempts.max(1);
        ops.push(complete(&worker_name(0), attempt, Outcome::Ok, now, None));
        ops.push(heartbeat(&worker_name(0), attempt, now));
        return;
    };
    let first = worker_name(0);
    let other = if **owner == *first { worker_name(1) } else { first };
    let a = attempts;
    ops.push(complete(owner, a, Outcome::Ok, now, None));
    ops.push(complete(owner, a, Outcome::Permanent, now, None));
    ops.push(complete(owner, a, Outcome::Retryable, now, Some(0.5)));
    ops.push(heartbeat(owner, a, now));
    let mut tokens = vec![(owner.to_string(), a + 1), (other, a)];
    if a >= 2 {
        tokens.push((owner.to_string(), a - 1));
    }
    for (worker, attempt) in tokens {
        ops.push(complete(&worker, attempt, Outcome::Ok, now, None));
        ops.push(heartbeat(&worker, attempt, now));
    }
    if let Some(before_claim) = claimed_at.checked_sub(1) {
        ops.push(complete(owner, a, Outcome::Ok, before_claim, None));
        ops.push(heartbeat(owner, a, before_claim));
    }
    if now > *claimed_at {
        ops.push(heartbeat(owner, a, now - 1));
    }
}

/// `run_now` of job `id` at the clock, and at its deadline where the job is open: with the
/// world's states, every relation of [`crate::choices::Choice::RunNow`] (SPEC 3.18, 6.41). A
/// `run_now` carries the operator's clock, which need not be the world's.
fn run_now_probes(id: &str, job: &crate::reference::Job, now: u64, ops: &mut Vec<Op>) {
    ops.push(Op::RunNow { id: id.into(), now });
    if job.phase.available_at().is_some() && job.deadline != now && job.deadline <= MAX_INT {
        ops.push(Op::RunNow { id: id.into(), now: job.deadline });
    }
}

/// A name of 256 bytes of UTF-8: 127 two-byte characters and two control characters (SPEC
/// 6.21: every character but NUL is allowed).
fn odd_name() -> String {
    let mut name = "é".repeat(127);
    name.push_str("\u{7}\n");
    name
}

/// The argument probes: every operation, every field, every class, against the first job
/// (if any) and a missing id; each with the field it varies.
fn argument_probes(world: &World, ops: &mut Vec<(Op, Field)>) {
    let store = &world.store;
    let missing = job_name(store.jobs().len());
    let mut targets = vec![missing];
    if let Some(first) = store.jobs().first() {
        targets.push(first.id.to_string());
    }
    // A tombstone's id too: bad arguments come before its lookup as before any other.
    if let Some(first) = store.tombstones().first() {
        targets.push(first.id.to_string());
    }
    for kind in OpKind::ALL {
        for &field in contract::fields(kind) {
            for &class in contract::classes(kind, field) {
                for target in targets.iter().take(if kind.names_a_job() { targets.len() } else { 1 }) {
                    let base = base_op(kind, world, target);
                    if let Some(op) = varied(base.clone(), field, class, world.now) {
                        ops.push((op, field));
                    }
                    // SPEC 6.6: a present jitter is checked whatever the outcome.
                    if field == Field::Jitter
                        && class != Class::Missing
                        && let Some(op) = varied(with_outcome_ok(base), field, class, world.now)
                    {
                        ops.push((op, field));
                    }
                }
            }
        }
    }
}

/// Names equal but for their bytes (SPEC 1.6, 5.2), derived from the contract: every operation,
/// every name field the store compares ([`choices::compares_name`]), every class of
/// [`NameClass`], made of the first job's id, its holder's name and the first queue a job is
/// in that has a name of that class. Each must answer as a name the store does not hold: a
/// missing id, another worker, another queue.
fn name_probes(world: &World, ops: &mut Vec<Op>) {
    let Some(job) = world.store.jobs().first() else { return };
    let queues: Vec<&str> = world.store.jobs().iter().map(|j| &*j.queue).collect();
    let holder = match &job.phase {
        Phase::Leased { owner, .. } => Some(owner.to_string()),
        _ => None,
    };
    for kind in OpKind::ALL {
        for &field in contract::fields(kind).iter().filter(|&&f| choices::compares_name(kind, f)) {
            let base = base_op(kind, world, &job.id);
            let base = match (base, &holder) {
                (Op::Complete { id, attempt, now, .. }, Some(h)) => {
                    Op::Complete { worker: h.clone(), id, attempt, outcome: Outcome::Ok, now, jitter: None }
                }
                (Op::Heartbeat { id, attempt, now, .. }, Some(h)) => {
                    Op::Heartbeat { worker: h.clone(), id, attempt, now }
                }
                (base, _) => base,
            };
            for class in NameClass::ALL {
                let queue = queues.iter().find(|q| class.of(q).is_some()).unwrap_or(&queues[0]);
                if let Some(op) = named(base.clone(), field, class, queue) {
                    ops.push(op);
                }
            }
        }
    }
}

/// `op` with its `field` made a name of `class` equal but for its bytes to the one it holds
/// there (to `queue`, the job's, for a queue field).
fn named(mut op: Op, field: Field, class: NameClass, queue: &str) -> Option<Op> {
    match (&mut op, field) {
        (Op::Enqueue { id, .. } | Op::Complete { id, .. } | Op::Heartbeat { id, .. }, Field::Id)
        | (Op::Redrive { id, .. } | Op::Cancel { id, .. } | Op::Get { id }, Field::Id)
        | (Op::RunNow { id, .. }, Field::Id)
        | (Op::Complete { worker: id, .. } | Op::Heartbeat { worker: id, .. }, Field::Worker) => {
            *id = class.of(id)?;
        }
        (Op::Pause { queue: q, .. } | Op::Resume { queue: q, .. }, Field::Queue) => {
            *q = class.of(queue)?;
        }
        (Op::Enqueue { queue: q, .. } | Op::Stats { queue: q, .. }, Field::Queue) => {
            *q = Some(class.of(queue)?);
        }
        (Op::Claim { queues, .. } | Op::RunOnce { queues, .. }, Field::Queues) => {
            *queues = Some(vec![class.of(queue)?]);
        }
        _ => return None,
    }
    Some(op)
}

/// The fence of the first job, if leased, with every combination of the conditions its
/// refusals weigh (SPEC 3.4, 3.12, 6.34): the holder or another worker, the current attempt or
/// the next, at the clock, before the claim or at the deadline. Whatever else holds, a
/// refusal comes in the contract's order ([`choices::Fence`]).
fn refusal_probes(world: &World, ops: &mut Vec<Op>) {
    let Some(job) = world.store.jobs().first() else { return };
    let Phase::Leased { owner, claimed_at, .. } = &job.phase else { return };
    let other = if **owner == *worker_name(0) { worker_name(1) } else { worker_name(0) };
    let mut times = vec![world.now, job.deadline.max(world.now)];
    times.extend(claimed_at.checked_sub(1));
    for worker in [owner.to_string(), other] {
        for attempt in [job.attempts, job.attempts + 1] {
            for &now in &times {
                let id = job.id.to_string();
                ops.push(Op::Heartbeat { worker: worker.clone(), id: id.clone(), attempt, now });
                ops.push(Op::Complete {
                    worker: worker.clone(),
                    id,
                    attempt,
                    outcome: Outcome::Ok,
                    now,
                    jitter: None,
                });
            }
        }
    }
}

/// The same completion or `run_once` with outcome `ok`.
fn with_outcome_ok(op: Op) -> Op {
    match op {
        Op::Complete { worker, id, attempt, now, jitter, .. } => {
            Op::Complete { worker, id, attempt, outcome: Outcome::Ok, now, jitter }
        }
        Op::RunOnce { worker, now, after, jitter, .. } => {
            Op::RunOnce { queues: None, worker, now, after, outcome: RunOutcome::Ok, jitter }
        }
        other => other,
    }
}

/// A valid operation of `kind` at `world`, naming `target` where it names a job: what each
/// argument probe varies one field of.
fn base_op(kind: OpKind, world: &World, target: &str) -> Op {
    let now = world.now;
    let deadline = (now + 2).min(MAX_INT);
    let attempt = world.store.job(target).map_or(1, |job| job.attempts.max(1));
    let worker = worker_name(0);
    match kind {
        OpKind::Config => QueueModel::config_op(world.store.config()),
        OpKind::Enqueue => Op::Enqueue {
            priority: None,
            queue: None,
            id: target.into(),
            payload: PAYLOAD.into(),
            max_attempts: 1,
            deadline,
            now,
            not_before: None,
            base_ms: None,
            cap_ms: None,
            kind: None,
        },
        OpKind::Claim => Op::Claim { queues: None, worker, now },
        OpKind::Complete => Op::Complete {
            worker,
            id: target.into(),
            attempt,
            outcome: Outcome::Retryable,
            now,
            jitter: Some(0.5),
        },
        OpKind::RunOnce => Op::RunOnce {
            queues: None,
            worker,
            now,
            after: None,
            outcome: RunOutcome::Retryable,
            jitter: Some(0.5),
        },
        OpKind::Heartbeat => Op::Heartbeat { worker, id: target.into(), attempt, now },
        OpKind::Redrive => Op::Redrive { id: target.into(), now, add_attempts: 1, deadline },
        OpKind::Cancel => Op::Cancel { id: target.into(), now },
        OpKind::Reap => Op::Reap { now },
        OpKind::Prune => Op::Prune { before: now, now },
        OpKind::Forget => Op::Forget { before: now, now },
        OpKind::Get => Op::Get { id: target.into() },
        OpKind::Pause => Op::Pause { queue: DEFAULT_QUEUE.into(), now },
        OpKind::Resume => Op::Resume { queue: DEFAULT_QUEUE.into(), now },
        OpKind::RunNow => Op::RunNow { id: target.into(), now },
        OpKind::Stats => Op::Stats { queue: None, now },
        OpKind::RetryDelay => Op::RetryDelay { attempt: 1, base_ms: 1, cap_ms: 2, jitter: 0.5 },
        OpKind::Restart => Op::Restart,
    }
}

/// A representative of `class` for a name field: `target` made one of that class.
fn name_of(class: Class, target: &str) -> Option<String> {
    Some(match class {
        Class::Least => "a".into(),
        Class::Most => "k".repeat(256),
        Class::Odd => odd_name(),
        Class::Below => String::new(),
        Class::Above => "k".repeat(257),
        Class::Forbidden => format!("{target}\0"),
        Class::Absent | Class::Missing => return None,
    })
}

/// `op` with `field` set to a representative of `class` at `now` (and, where the field bounds
/// others, those kept valid: a `now` at the top of the range moves the deadline with it).
/// `None` where the class has no representative here (a time before 0).
fn varied(mut op: Op, field: Field, class: Class, now: u64) -> Option<Op> {
    use Class::*;
    let int = |class: Class, least: u64, most: u64| -> Option<Option<u64>> {
        Some(match class {
            Least => Some(least),
            Most => Some(most),
            Absent => None,
            Above => Some(MAX_INT + 1),
            Below | Odd | Forbidden | Missing => return None,
        })
    };
    let budget = |class: Class| -> Option<u64> {
        Some(match class {
            Least => 1,
            Most => MAX_BUDGET,
            Below => 0,
            Above => MAX_BUDGET + 1,
            _ => return None,
        })
    };
    let jitter = |class: Class| -> Option<Option<f64>> {
        Some(match class {
            Least => Some(0.0),
            Most => Some(1.0),
            Odd => Some(-0.0),
            Below => Some(-f64::MIN_POSITIVE),
            Above => Some(f64::from_bits(1.0f64.to_bits() + 1)),
            Forbidden => Some(f64::NAN),
            Missing => None,
            Absent => return None,
        })
    };
    let deadline_of = |class: Class, now: u64| -> Option<u64> {
        Some(match class {
            Least => now + 1,
            Most => MAX_INT,
            Below => now,
            Above => MAX_INT + 1,
            _ => return None,
        })
    };
    match (&mut op, field) {
        (Op::Enqueue { id, .. } | Op::Complete { id, .. } | Op::Heartbeat { id, .. }, Field::Id)
        | (Op::Redrive { id, .. } | Op::Cancel { id, .. } | Op::Get { id }, Field::Id)
        | (Op::RunNow { id, .. }, Field::Id) => {
            *id = name_of(class, id)?;
        }
        (
            Op::Claim { worker, .. }
            | Op::Complete { worker, .. }
            | Op::RunOnce { worker, .. }
            | Op::Heartbeat { worker, .. },
            Field::Worker,
        ) => *worker = name_of(class, worker)?,
        (Op::Enqueue { payload, .. }, Field::Payload) => {
            *payload = match class {
                Least => String::new(),
                Most => "p".repeat(1 << 20),
                Above => "p".repeat((1 << 20) + 1),
                _ => return None,
            }
        }
        (Op::Enqueue { max_attempts, .. }, Field::MaxAttempts) => *max_attempts = budget(class)?,
        (Op::Redrive { add_attempts, .. }, Field::AddAttempts) => *add_attempts = budget(class)?,
        (Op::Enqueue { deadline, now, .. } | Op::Redrive { deadline, now, .. }, Field::Deadline) => {
            *deadline = deadline_of(class, *now)?;
        }
        (Op::Enqueue { deadline, now: at, .. } | Op::Redrive { deadline, now: at, .. }, Field::Now) => {
            // The deadline stays valid: after the new `now` where one can be.
            *at = match class {
                Least => 0,
                Most => MAX_INT - 1,
                Above => MAX_INT + 1,
                _ => return None,
            };
            *deadline = (*deadline).max((*at + 1).min(MAX_INT));
        }
        (
            Op::Claim { now: at, .. }
            | Op::Complete { now: at, .. }
            | Op::RunOnce { now: at, .. }
            | Op::Heartbeat { now: at, .. }
            | Op::Cancel { now: at, .. }
            | Op::RunNow { now: at, .. }
            | Op::Pause { now: at, .. }
            | Op::Resume { now: at, .. }
            | Op::Reap { now: at }
            | Op::Stats { queue: _, now: at },
            Field::Now,
        ) => *at = int(class, 0, MAX_INT)?.unwrap_or(now),
        (Op::RunOnce { after, now: at, .. }, Field::After) => {
            *after = match class {
                Odd => Some(*at + 1),
                _ => int(class, 0, MAX_INT)?,
            }
        }
        (Op::Enqueue { not_before, now: at, deadline, .. }, Field::NotBefore) => {
            *not_before = match class {
                Least => Some(*at),
                Most => Some(deadline.checked_sub(1)?),
                Absent => None,
                Below => Some(at.checked_sub(1)?),
                Above => Some(*deadline),
                _ => return None,
            }
        }
        (Op::Enqueue { base_ms, .. } | Op::Config { base_ms, .. }, Field::BaseMs) => {
            *base_ms = int(class, 0, MAX_INT)?;
        }
        (Op::Enqueue { cap_ms, .. } | Op::Config { cap_ms, .. }, Field::CapMs) => {
            *cap_ms = int(class, 0, MAX_INT)?
        }
        (Op::Config { lease_ms: setting, .. }, Field::LeaseMs)
        | (Op::Config { reap_limit: setting, .. }, Field::ReapLimit) => {
            *setting = match class {
                Below => Some(0),
                _ => int(class, 1, MAX_INT)?,
            }
        }
        (Op::Complete { attempt, .. } | Op::Heartbeat { attempt, .. }, Field::Attempt)
        | (Op::RetryDelay { attempt, .. }, Field::Attempt) => {
            *attempt = match class {
                Below => 0,
                _ => int(class, 1, MAX_INT)??,
            }
        }
        (Op::RetryDelay { base_ms, .. }, Field::BaseMs) => *base_ms = int(class, 0, MAX_INT)??,
        (Op::RetryDelay { cap_ms, .. }, Field::CapMs) => *cap_ms = int(class, 0, MAX_INT)??,
        (Op::RetryDelay { jitter: j, .. }, Field::Jitter) => *j = jitter(class)??,
        (Op::Complete { jitter: j, .. } | Op::RunOnce { jitter: j, .. }, Field::Jitter) => {
            *j = jitter(class)?
        }
        (Op::Enqueue { queue, .. } | Op::Stats { queue, .. }, Field::Queue) => {
            *queue = match class {
                Least => Some("q".into()),
                Most => Some("q".repeat(64)),
                // 31 two-byte characters and two control characters: 64 bytes.
                Odd => Some(format!("{}\u{7}\n", "é".repeat(31))),
                Absent => None,
                Below => Some(String::new()),
                Above => Some("q".repeat(65)),
                Forbidden => Some("q\0".into()),
                Missing => return None,
            }
        }
        (Op::Pause { queue, .. } | Op::Resume { queue, .. }, Field::Queue) => {
            *queue = match class {
                Least => "q".into(),
                Most => "q".repeat(64),
                Odd => format!("{}\u{7}\n", "é".repeat(31)),
                Below => String::new(),
                Above => "q".repeat(65),
                Forbidden => "q\0".into(),
                Absent | Missing => return None,
            }
        }
        (Op::Claim { queues, .. } | Op::RunOnce { queues, .. }, Field::Queues) => {
            let names = |n: usize| (0..n).map(|i| format!("q{i}")).collect::<Vec<_>>();
            *queues = match class {
                Least => Some(names(1)),
                Most => Some(names(64)),
                Absent => None,
                Below => Some(Vec::new()),
                Above => Some(names(65)),
                Forbidden => Some(vec!["default".into(), "default".into()]),
                Odd | Missing => return None,
            }
        }
        (Op::Enqueue { kind, .. }, Field::Kind) => {
            *kind = match class {
                Least => Some(String::new()),
                Most => Some("k".repeat(64)),
                Odd => Some(format!("{}\u{7}\n", "é".repeat(31))),
                Absent => None,
                Above => Some("k".repeat(65)),
                Forbidden => Some("k\0".into()),
                _ => return None,
            }
        }
        (Op::Enqueue { priority, .. }, Field::Priority) => {
            *priority = match class {
                Least => Some(0),
                Most => Some(9),
                Absent => None,
                Above => Some(10),
                _ => return None,
            }
        }
        (Op::Prune { before, now: at } | Op::Forget { before, now: at }, Field::Now) => {
            // `before` stays valid: at most the new `now` where it can be.
            *at = int(class, 0, MAX_INT)?.unwrap_or(now);
            *before = (*before).min(*at);
        }
        (Op::Prune { before, now: at } | Op::Forget { before, now: at }, Field::Before) => {
            *before = match class {
                Least => 0,
                Most => *at,
                Above => at.checked_add(1)?,
                _ => return None,
            }
        }
        _ => return None,
    }
    Some(op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Bounds;

    /// Every field of every operation of the table has a representative of each of its classes
    /// somewhere: the table and the probes cannot drift apart.
    #[test]
    fn every_class_of_every_field_has_a_representative() {
        let model = QueueModel::new(Bounds::small(), None);
        let world = model.initial_worlds().remove(0);
        for kind in OpKind::ALL {
            for &field in contract::fields(kind) {
                for &class in contract::classes(kind, field) {
                    let made = [1, 5].into_iter().any(|now| {
                        let world = World { now, ..world.clone() };
                        varied(base_op(kind, &world, &job_name(0)), field, class, now).is_some()
                    });
                    assert!(made, "{kind:?} {field:?} {class:?} has no representative");
                }
            }
        }
    }

    #[test]
    fn an_odd_name_is_the_longest_allowed() {
        assert_eq!(odd_name().len(), 256);
        assert!(crate::validate::name("id", &odd_name()).is_ok());
    }
}
