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

use crate::contract::{self, Answer, ArgCell, Cell, Class, Field, Meets, OpKind};
use crate::reference::{Job, Phase, Store};
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
    cells: [u16; 8],
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

    /// Records the cell at `position` (of either table).
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
