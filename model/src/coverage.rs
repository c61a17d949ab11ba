//! Which cells of the contract's table ([`crate::contract`]) a step reached.
//!
//! A step is one operation run on the store: its kind, the status of each job it met (before
//! the step), and what it answered. An operation that names a job meets that job (or an id
//! that is not stored); `claim`, `run_once` and `reap` meet each job their reap moved or left
//! due to end (past `reap_limit`), and `claim` and `run_once` the job they took. Read from the store before and after the step and
//! the answer, never from what the world meant to do, so a step a buggy store takes outside
//! the table is seen as such.
//!
//! Layer: part of the world, above the contract's table and the reference store's data, below
//! the world that records each step's cells. It may not reach up: a cell is what a step is,
//! whoever took it.

use std::sync::OnceLock;

use std::collections::HashMap;

use crate::bounds::OTHER_QUEUE;
use crate::choices::{self, Choice, Cmp, Due, Fence, Lane, NameClass, Scope};
use crate::contract::{self, Answer, ArgCell, Cell, Class, Field, Meets, OpKind};
use crate::ids::{job_index, worker_index};
use crate::reference::{DEFAULT_QUEUE, Job, Phase, Store};
use crate::rules;
use crate::{DeadReason, Failure, Op, Response};

/// The status of `job` at `now`, as the table tells statuses apart.
pub fn meets(job: Option<&Job>, now: u64) -> Meets {
    let Some(job) = job else { return Meets::Missing };
    match job.phase {
        Phase::Pending { .. } if job.attempts == 0 => Meets::Fresh,
        Phase::Pending { .. } => Meets::Waiting,
        Phase::Leased { until, .. } if until <= now && job.cancel_requested => Meets::ExpiredCancelling,
        Phase::Leased { until, .. } if until <= now => Meets::Expired,
        Phase::Leased { .. } if job.cancel_requested => Meets::LiveCancelling,
        Phase::Leased { .. } => Meets::Live,
        Phase::Done => Meets::Done,
        Phase::Dead(reason) => Meets::dead(reason),
    }
}

/// Calls `reached` with each cell the step reached: `op`, run at the world's `now` on `before`,
/// answered `response` and left `after`. Statuses are dated by the operation's own `now`;
/// the world's `now` dates those of operations that carry none (`get`) or one out of range.
pub fn cells(
    before: &Store,
    op: &Op,
    response: &Response,
    after: &Store,
    now: u64,
    reached: &mut impl FnMut(Cell),
) {
    let kind = OpKind::of(op);
    let answer = Answer::of(response);
    // A `now` out of range is no time at all: the job is met as it is at the world's clock.
    let at = op.now().filter(|&at| at <= crate::MAX_INT).unwrap_or(now);
    if let Some(id) = op.id() {
        let met = match before.job(id) {
            None if before.tombstone(id).is_some() => Meets::Tombstone,
            job => meets(job, at),
        };
        reached(Cell { op: kind, meets: met, answer });
        return;
    }
    // A prune meets each job it removed, a forget each tombstone (SPEC 3.14, 3.15).
    if matches!(kind, OpKind::Prune | OpKind::Forget) && answer != Answer::InvalidInput {
        let mut met = false;
        for job in before.jobs().iter().filter(|job| after.job(&job.id).is_none()) {
            reached(Cell { op: kind, meets: meets(Some(job), at), answer });
            met = true;
        }
        for _ in before.tombstones().iter().filter(|t| after.tombstone(&t.id).is_none()) {
            reached(Cell { op: kind, meets: Meets::Tombstone, answer });
            met = true;
        }
        if !met {
            reached(Cell { op: kind, meets: Meets::Nothing, answer });
        }
        return;
    }
    if !kind.reaps() || answer == Answer::InvalidInput {
        reached(Cell { op: kind, meets: Meets::Nothing, answer });
        return;
    }
    let taken = response.taken_id();
    let mut moved = false;
    for job in before.jobs() {
        if Some(&*job.id) == taken || matches!(job.phase, Phase::Done | Phase::Dead(_)) {
            continue;
        }
        let Some(now_dead) = after.job(&job.id).map(|a| &a.phase) else { continue };
        let answer = match now_dead {
            Phase::Dead(DeadReason::Exhausted) => Answer::ReapedExhausted,
            Phase::Dead(DeadReason::Deadline) => Answer::ReapedDeadline,
            Phase::Dead(DeadReason::Cancelled) => Answer::ReapedCancelled,
            // Anything else a reap made of an open job is outside the table.
            Phase::Dead(_) | Phase::Done => Answer::DeadPermanent,
            // A job due to end that the reap left, past its limit (SPEC 6.37).
            Phase::Pending { .. } | Phase::Leased { .. } if rules::due_to_end(job, at) => Answer::LeftDue,
            Phase::Pending { .. } | Phase::Leased { .. } => continue,
        };
        moved = true;
        reached(Cell { op: kind, meets: meets(Some(job), at), answer });
    }
    match taken {
        Some(id) => reached(Cell { op: kind, meets: meets(before.job(id), at), answer }),
        None if kind == OpKind::Reap && moved => {}
        None => reached(Cell { op: kind, meets: Meets::Nothing, answer }),
    }
}

/// Calls `seen` with each relation of [`choices::choices`] the step showed — `op`, run on
/// `before`, answered `response` and left `after` — and with `None` for a relation the rule's
/// order does not allow (a claim that passed over a served job sorting before the one it took,
/// a reap that ended a job after one it left, a refusal out of its order, a prune or forget
/// that removed what its bound keeps or kept what it removes). `first_enqueue` ranks ids by
/// their first enqueue, as the world knows it. Read from the store before and after and the
/// answer, never from what the world meant to do.
pub fn choices(
    before: &Store,
    op: &Op,
    response: &Response,
    after: &Store,
    first_enqueue: &dyn Fn(&str) -> Option<usize>,
    seen: &mut impl FnMut(Option<Choice>),
) {
    if matches!(response, Response::Err(Failure::InvalidInput { .. })) {
        return;
    }
    let rank = |id: &str| first_enqueue(id).unwrap_or(usize::MAX);
    match op {
        Op::Claim { queues, now, .. } | Op::RunOnce { queues, now, .. } => {
            let default = [DEFAULT_QUEUE.to_owned()];
            let queues = queues.as_deref().unwrap_or(&default);
            claim_choices(before, queues, *now, response, &rank, first_enqueue, seen);
            paused_choices(before, queues, *now, response, &rank, first_enqueue, seen);
            reap_choices(before, *now, response, after, &rank, seen);
        }
        Op::Reap { now } => reap_choices(before, *now, response, after, &rank, seen),
        Op::Resume { queue, now } if before.is_paused(queue) => {
            for job in before.jobs().iter().filter(|job| *job.queue == **queue) {
                if let Phase::Pending { available_at } = job.phase
                    && available_at <= *now
                {
                    seen(Some(Choice::Resumed(job.deadline <= *now)));
                }
            }
        }
        &Op::RunNow { ref id, now } => {
            if let Some(job) = before.job(id)
                && let Some(at) = job.phase.available_at()
            {
                let leased = matches!(job.phase, Phase::Leased { .. });
                let past = job.deadline <= now;
                let answer = Answer::of(response);
                let expected = match (leased, past) {
                    (true, _) => Answer::NotPending,
                    (false, true) => Answer::DeadlinePassed,
                    (false, false) => Answer::Due,
                };
                let choice = Choice::RunNow { leased, past, schedule: Cmp::of(at, now) };
                seen((answer == expected).then_some(choice));
            }
        }
        &Op::Prune { before: bound, .. } => {
            for job in before.jobs() {
                let ended = match job.phase {
                    Phase::Done | Phase::Dead(_) => job.ended_at.map(|at| Cmp::of(at, bound)),
                    _ => None,
                };
                let removed = after.job(&job.id).is_none();
                let kept = ended.is_none_or(|c| c == Cmp::Greater);
                seen((removed != kept).then_some(Choice::Prune(ended)));
            }
        }
        &Op::Forget { before: bound, .. } => {
            for tombstone in before.tombstones() {
                let ended = Cmp::of(tombstone.ended_at, bound);
                let removed = after.tombstone(&tombstone.id).is_none();
                seen((removed == (ended != Cmp::Greater)).then_some(Choice::Forget(ended)));
            }
        }
        Op::Stats { queue, .. } => {
            let scope = |of: &str| match queue.as_deref() {
                None => Scope::All,
                Some(q) if q == of => Scope::Same,
                Some(_) => Scope::Other,
            };
            for job in before.jobs() {
                seen(Some(Choice::Stats(scope(&job.queue), false)));
            }
            for tombstone in before.tombstones() {
                seen(Some(Choice::Stats(scope(&tombstone.queue), true)));
            }
        }
        &Op::Heartbeat { ref worker, ref id, attempt, now } => {
            if let Some(job) = before.job(id) {
                let fence = fence(job, worker, attempt, now, true);
                let answer = Answer::of(response);
                seen((answer == fence.heartbeat()).then_some(Choice::Heartbeat(fence)));
            }
        }
        &Op::Complete { ref worker, ref id, attempt, now, .. } => {
            if let Some(job) = before.job(id) {
                let fence = fence(job, worker, attempt, now, false);
                let refused = match response {
                    Response::Err(_) => Some(Answer::of(response)),
                    Response::Ok(_) => None,
                };
                seen((refused == fence.complete()).then_some(Choice::Complete(fence)));
            }
        }
        _ => {}
    }
    names(before, op, seen);
}

/// The conditions a heartbeat (`heartbeat`) or a completion weighs for `job`.
fn fence(job: &Job, worker: &str, attempt: u64, now: u64, heartbeat: bool) -> Fence {
    match &job.phase {
        Phase::Leased { owner, claimed_at, .. } => Fence {
            lost: **owner != *worker || job.attempts != attempt,
            backwards: now < *claimed_at,
            cancelling: heartbeat && job.cancel_requested,
            past: heartbeat && now >= job.deadline,
        },
        _ => Fence { lost: true, backwards: false, cancelling: false, past: false },
    }
}

/// A claim's relations (SPEC 3.3.2): each other job claimable after its reap against the one it
/// took; or, answering `none`, each claimable job (of a queue it does not serve, or else out of
/// order).
fn claim_choices(
    before: &Store,
    queues: &[String],
    now: u64,
    response: &Response,
    rank: &dyn Fn(&str) -> usize,
    first_enqueue: &dyn Fn(&str) -> Option<usize>,
    seen: &mut impl FnMut(Option<Choice>),
) {
    let candidates =
        rules::claimable(before.jobs(), before.paused(), now, before.config().reap_limit, first_enqueue);
    let named = |queue: &str| queues.iter().position(|q| q == queue);
    let Some(taken) = response.taken_id() else {
        for (_, id) in &candidates {
            let served = before.job(id).is_some_and(|job| named(&job.queue).is_some());
            seen((!served).then_some(Choice::NoneServed));
        }
        return;
    };
    let (Some(&(taken_at, _)), Some(t)) = (candidates.iter().find(|(_, id)| id == taken), before.job(taken))
    else {
        // It took a job that was not claimable: the rules' to judge.
        return;
    };
    for (at, id) in candidates.iter().filter(|(_, id)| id != taken) {
        let Some(o) = before.job(id) else { continue };
        let lane = match (named(&o.queue), named(&t.queue)) {
            (None, _) => Lane::NotServed,
            _ if o.queue == t.queue => Lane::Same,
            (Some(p), Some(q)) if p < q => Lane::NamedBefore,
            _ => Lane::NamedAfter,
        };
        let (priority, available_at) = (Cmp::of(o.priority, t.priority), Cmp::of(*at, taken_at));
        let first = Cmp::of(rank(id), rank(taken));
        let order = [priority, available_at, first].into_iter().find(|&c| c != Cmp::Equal);
        let choice = Choice::Claim { lane, priority, available_at, first };
        match (lane, order) {
            (Lane::NotServed, Some(Cmp::Less)) => seen(Some(choice)),
            (Lane::NotServed, _) => {}
            (_, Some(Cmp::Greater)) => seen(Some(choice)),
            _ => seen(None),
        }
    }
}

/// A claim's relations to a paused queue it serves (SPEC 3.3.2, 3.16): each job of it that
/// would be claimable but for the pause and sorts before the job taken (or any, when none was).
fn paused_choices(
    before: &Store,
    queues: &[String],
    now: u64,
    response: &Response,
    rank: &dyn Fn(&str) -> usize,
    first_enqueue: &dyn Fn(&str) -> Option<usize>,
    seen: &mut impl FnMut(Option<Choice>),
) {
    if before.paused().is_empty() {
        return;
    }
    // The candidates were the pauses lifted: what a claim that ignored them would choose among.
    let unpaused = rules::claimable(before.jobs(), &[], now, before.config().reap_limit, first_enqueue);
    let key = |id: &str| before.job(id).map(|job| (job.priority, rank(id)));
    let taken = response.taken_id().and_then(|id| {
        let at = unpaused.iter().find(|(_, i)| i == id)?.0;
        key(id).map(|(priority, rank)| (priority, at, rank))
    });
    for (at, id) in &unpaused {
        let Some(job) = before.job(id) else { continue };
        if !before.is_paused(&job.queue) || !queues.iter().any(|q| **q == *job.queue) {
            continue;
        }
        match (taken, key(id)) {
            (None, _) => seen(Some(Choice::PausedPassed(false))),
            (Some(taken), Some((priority, rank))) if (priority, *at, rank) < taken => {
                seen(Some(Choice::PausedPassed(true)))
            }
            _ => {}
        }
    }
}

/// A reap's relations (SPEC 3.3.1, 6.37): the conditions of each job it ended, and each job it
/// left due to end against each it ended.
fn reap_choices(
    before: &Store,
    now: u64,
    response: &Response,
    after: &Store,
    rank: &dyn Fn(&str) -> usize,
    seen: &mut impl FnMut(Option<Choice>),
) {
    let taken = response.taken_id();
    let open = |phase: &Phase| matches!(phase, Phase::Pending { .. } | Phase::Leased { .. });
    let mut ended: smallvec::SmallVec<[(&Job, u8, u64); 4]> = smallvec::SmallVec::new();
    let mut left: smallvec::SmallVec<[(&Job, u8, u64); 4]> = smallvec::SmallVec::new();
    for job in before.jobs().iter().filter(|job| Some(&*job.id) != taken) {
        let Some((rule, at)) = rules::reap_key(job, now) else { continue };
        let now_ended = after.job(&job.id).is_none_or(|a| !open(&a.phase));
        if now_ended { ended.push((job, rule, at)) } else { left.push((job, rule, at)) }
    }
    for &(job, ..) in &ended {
        if before.is_paused(&job.queue) {
            seen(Some(Choice::PausedReaped(matches!(job.phase, Phase::Leased { .. }))));
        }
        let due = Due {
            leased: matches!(job.phase, Phase::Leased { .. }),
            cancelling: job.cancel_requested,
            exhausted: job.attempts >= job.max_attempts,
            past: job.deadline <= now,
        };
        let answer = match after.job(&job.id).map(|a| &a.phase) {
            Some(Phase::Dead(DeadReason::Cancelled)) => Some(Answer::ReapedCancelled),
            Some(Phase::Dead(DeadReason::Exhausted)) => Some(Answer::ReapedExhausted),
            Some(Phase::Dead(DeadReason::Deadline)) => Some(Answer::ReapedDeadline),
            _ => None,
        };
        seen((answer.is_some() && answer == due.answer()).then_some(Choice::ReapRule(due)));
    }
    for &(l, l_rule, l_at) in &left {
        for &(e, e_rule, e_at) in &ended {
            let rule = Cmp::of(l_rule, e_rule);
            let at = if rule == Cmp::Equal { Cmp::of(l_at, e_at) } else { Cmp::of(l.deadline, e.deadline) };
            let first = Cmp::of(rank(&l.id), rank(&e.id));
            let order = if rule == Cmp::Equal { if at == Cmp::Equal { first } else { at } } else { rule };
            seen((order == Cmp::Greater).then_some(Choice::ReapOrder { rule, at, first }));
        }
    }
}

/// The relations of `op`'s names to the names `store` holds (SPEC 1.6, 5.2): each name field
/// the store compares, against each stored name of its kind equal to it but for its bytes. The
/// world's own names are never such variants of each other, so only other names are looked at.
fn names(store: &Store, op: &Op, seen: &mut impl FnMut(Option<Choice>)) {
    let kind = OpKind::of(op);
    let mut compare = |field: Field, name: &str, stored: &mut dyn Iterator<Item = &str>| {
        for other in stored {
            // The classes are disjoint: a pair two of them fold is a classifier gone wrong.
            let mut classes = NameClass::ALL.into_iter().filter(|class| class.folds(name, other));
            match (classes.next(), classes.next()) {
                (Some(class), None) => seen(Some(Choice::Name(kind, field, class))),
                (Some(_), Some(_)) => seen(None),
                (None, _) => {}
            }
        }
    };
    if let Some(id) = op.id().filter(|id| job_index(id).is_none()) {
        let mut ids = store.jobs().iter().map(|j| &*j.id).chain(store.tombstones().iter().map(|t| &*t.id));
        compare(Field::Id, id, &mut ids);
    }
    let owners = || {
        store.jobs().iter().filter_map(|job| match &job.phase {
            Phase::Leased { owner, .. } => Some(&**owner),
            _ => None,
        })
    };
    let queues = || {
        let jobs = store.jobs().iter().map(|j| &*j.queue);
        jobs.chain(store.tombstones().iter().map(|t| &*t.queue)).chain([DEFAULT_QUEUE])
    };
    let own_queue = |q: &str| q == DEFAULT_QUEUE || q == OTHER_QUEUE;
    match op {
        Op::Complete { worker, .. } | Op::Heartbeat { worker, .. } if worker_index(worker).is_none() => {
            compare(Field::Worker, worker, &mut owners());
        }
        Op::Enqueue { queue: Some(q), .. } | Op::Stats { queue: Some(q), .. } if !own_queue(q) => {
            compare(Field::Queue, q, &mut queues());
        }
        // A pause or resume compares its queue with the paused names too (SPEC 3.16, 3.17).
        Op::Pause { queue: q, .. } | Op::Resume { queue: q, .. } if !own_queue(q) => {
            let mut names = queues().chain(store.paused().iter().map(|(name, _)| &**name));
            compare(Field::Queue, q, &mut names);
        }
        Op::Claim { queues: Some(list), .. } | Op::RunOnce { queues: Some(list), .. } => {
            for q in list.iter().filter(|q| !own_queue(q)) {
                compare(Field::Queues, q, &mut queues());
            }
        }
        _ => {}
    }
}

/// The position of `choice` among the relations of [`choices::choices`], or `None` for one the
/// contract's orders do not allow.
pub fn choice_position(choice: Choice) -> Option<usize> {
    static POSITIONS: OnceLock<HashMap<Choice, usize>> = OnceLock::new();
    POSITIONS
        .get_or_init(|| choices::choices().into_iter().enumerate().map(|(i, c)| (c, i)).collect())
        .get(&choice)
        .copied()
}

/// How many relations [`choices::choices`] lists.
pub fn choices_len() -> usize {
    static LEN: OnceLock<usize> = OnceLock::new();
    *LEN.get_or_init(|| choices::choices().len())
}

/// Records in `reached` the cell of the argument table `op` reaches (after the cells of
/// [`contract::cells`]) when it is an argument probe that `varies` a field: that field's
/// class, if any. The world's own actions and the other fields of a probe put some classes to
/// the store too (a clock at 0, a budget of 1); counting only the field a probe varies proves
/// that the probes derived from the table put every class of every field, one at a time.
/// Every step's answer is checked against its classes: a step whose answer
/// is not the one its classes call for falls outside the table (SPEC 3.1): a value of an
/// invalid class not refused `invalid_input`, or a refusal whose detail names a field whose
/// value is of a valid class (but `add_attempts`, whose sum with the stored attempts is
/// checked apart, 6.5).
pub fn arg_cells(op: &Op, response: &Response, varies: Option<Field>, reached: &mut Reached) {
    let kind = OpKind::of(op);
    let refused = match response {
        Response::Err(Failure::InvalidInput { detail }) => Some(detail.as_str()),
        _ => None,
    };
    for &field in contract::fields(kind) {
        let Some(class) = contract::class_of(op, field) else { continue };
        let named =
            refused.and_then(|d| d.strip_prefix(field.name())).is_some_and(|rest| rest.starts_with(':'));
        if (!class.valid() && refused.is_none()) || (class.valid() && named && field != Field::AddAttempts) {
            reached.outside = true;
        }
        // Looked up only for the field a probe varies: every other step skips the table.
        if varies == Some(field)
            && let Some(position) = arg_position(ArgCell { op: kind, field, class })
        {
            reached.insert_position(table_len() + position);
        }
    }
}

/// How many cells the argument table holds: the relations' positions start after it.
pub fn arg_len() -> usize {
    static LEN: OnceLock<usize> = OnceLock::new();
    *LEN.get_or_init(|| contract::arg_cells().len())
}

/// How many cells the contract's table allows: where the argument table's positions start.
pub fn table_len() -> usize {
    static LEN: OnceLock<usize> = OnceLock::new();
    *LEN.get_or_init(|| contract::cells().len())
}

/// The position of `cell` in [`contract::arg_cells`], or `None` for a class the table does not
/// list for that field.
pub fn arg_position(cell: ArgCell) -> Option<usize> {
    static POSITIONS: OnceLock<Vec<u16>> = OnceLock::new();
    // Field and Class list their variants in declaration order (a test pins it), so their
    // discriminants index the table; an operation's position is looked up.
    let slot = |cell: ArgCell| {
        let op = OpKind::ALL.iter().position(|&o| o == cell.op).unwrap_or(0);
        (op * Field::ALL.len() + cell.field as usize) * Class::ALL.len() + cell.class as usize
    };
    let positions = POSITIONS.get_or_init(|| {
        let mut positions = vec![u16::MAX; OpKind::ALL.len() * Field::ALL.len() * Class::ALL.len()];
        for (i, cell) in contract::arg_cells().into_iter().enumerate() {
            positions[slot(cell)] = i as u16;
        }
        positions
    });
    positions.get(slot(cell)).copied().filter(|&p| p != u16::MAX).map(usize::from)
}

/// The position of each allowed cell in [`contract::cells`], by operation, status and answer;
/// `u16::MAX` for a cell the contract does not allow.
fn positions() -> &'static [u16] {
    static POSITIONS: OnceLock<Vec<u16>> = OnceLock::new();
    POSITIONS.get_or_init(|| {
        let mut positions = vec![u16::MAX; slot_count()];
        for (i, cell) in contract::cells().into_iter().enumerate() {
            positions[slot(cell)] = i as u16;
        }
        positions
    })
}

fn slot_count() -> usize {
    OpKind::ALL.len() * Meets::ALL.len() * Answer::ALL.len()
}

fn slot(cell: Cell) -> usize {
    let op = OpKind::ALL.iter().position(|&o| o == cell.op).unwrap_or(0);
    let meets = Meets::ALL.iter().position(|&m| m == cell.meets).unwrap_or(0);
    let answer = Answer::ALL.iter().position(|&a| a == cell.answer).unwrap_or(0);
    (op * Meets::ALL.len() + meets) * Answer::ALL.len() + answer
}

/// The position of `cell` in [`contract::cells`], or `None` if the contract does not allow it.
pub fn position(cell: Cell) -> Option<usize> {
    positions().get(slot(cell)).copied().filter(|&p| p != u16::MAX).map(usize::from)
}

/// The cells a step reached, as positions in [`contract::cells`], with whether any fell
/// outside the table. Not part of a world's identity: two worlds that differ only here are one
/// state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    cells: [u16; 16],
    len: u8,
    /// A cell the contract does not allow.
    pub outside: bool,
}

impl Reached {
    /// Records `cell`.
    pub fn insert(&mut self, cell: Cell) {
        match position(cell) {
            None => self.outside = true,
            Some(p) => self.insert_position(p),
        }
    }

    /// Records a relation of [`choices::choices`] (after both tables), or `None`: one the
    /// contract's orders do not allow, which falls outside.
    pub fn insert_choice(&mut self, choice: Option<Choice>) {
        match choice.and_then(choice_position) {
            None => self.outside = true,
            Some(p) => self.insert_position(table_len() + arg_len() + p),
        }
    }

    /// Records the cell at `position` (of any table).
    pub fn insert_position(&mut self, position: usize) {
        if let Some(slot) = self.cells.get_mut(usize::from(self.len)) {
            *slot = position as u16;
            self.len += 1;
        }
    }

    /// The positions recorded.
    pub fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        self.cells.iter().take(usize::from(self.len)).map(|&p| usize::from(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Outcome;

    #[test]
    fn every_argument_cell_has_a_position_and_the_orders_are_the_declarations() {
        assert!(Field::ALL.iter().enumerate().all(|(i, &f)| f as usize == i));
        assert!(Class::ALL.iter().enumerate().all(|(i, &c)| c as usize == i));
        for (i, cell) in contract::arg_cells().into_iter().enumerate() {
            assert_eq!(arg_position(cell), Some(i));
        }
        let unlisted = ArgCell { op: OpKind::Restart, field: Field::Id, class: Class::Least };
        assert_eq!(arg_position(unlisted), None);
    }

    #[test]
    fn every_allowed_cell_has_a_position_and_no_other() {
        for (i, cell) in contract::cells().into_iter().enumerate() {
            assert_eq!(position(cell), Some(i));
        }
        let outside = Cell { op: OpKind::Restart, meets: Meets::Fresh, answer: Answer::Job };
        assert_eq!(position(outside), None);
    }

    #[test]
    fn a_complete_meets_the_job_it_names() {
        let mut store = Store::new();
        let enqueue = Op::Enqueue {
            priority: None,
            queue: None,
            id: "a".into(),
            payload: String::new(),
            max_attempts: 2,
            deadline: 10,
            now: 0,
            not_before: None,
            base_ms: None,
            cap_ms: None,
            kind: None,
        };
        store.step(&enqueue);
        let before = store.clone();
        let op = Op::Complete {
            worker: "w".into(),
            id: "a".into(),
            attempt: 1,
            outcome: Outcome::Ok,
            now: 0,
            jitter: None,
        };
        let response = store.step(&op);
        let mut seen = Vec::new();
        cells(&before, &op, &response, &store, 0, &mut |c| seen.push(c));
        assert_eq!(seen, [Cell { op: OpKind::Complete, meets: Meets::Fresh, answer: Answer::LeaseLost }]);
    }
}
