//! The contract's tables as data: SPEC 5.3's operations, the status of the job each one meets,
//! the answers each may give there (refusals included), and the argument classes of SPEC 3.1
//! and 5.2.
//!
//! The world derives what it tries from these tables rather than from a list written operation
//! by operation: every operation of [`OpKind::ALL`], every field of [`fields`] with a
//! representative of every class of [`classes`], against a job in every [`Meets`]. The checker
//! then proves what the world reached: each [`Cell`] the table allows is a `sometimes`
//! property of its own (`retryq check --coverage` prints them), and a step whose cell the table
//! does not allow is a violation. An operation added here without world actions leaves its
//! cells unreached, and the check fails.
//!
//! Layer: the SPEC's vocabulary, beside [`crate::op`] and [`crate::response`], whose types it
//! classifies. It may not reach up: the table says what the contract allows whoever takes the
//! step, the store included.

use crate::{DeadReason, Failure, Op, Outcome, Reply, Response, RunOutcome};

/// SPEC 5.3's operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// `config`.
    Config,
    /// `enqueue`.
    Enqueue,
    /// `claim`.
    Claim,
    /// `complete`.
    Complete,
    /// `run_once`.
    RunOnce,
    /// `heartbeat`.
    Heartbeat,
    /// `redrive`.
    Redrive,
    /// `cancel`.
    Cancel,
    /// `reap`.
    Reap,
    /// `prune` (SPEC 3.14).
    Prune,
    /// `forget` (SPEC 3.15).
    Forget,
    /// `get`.
    Get,
    /// `pause` (SPEC 3.16).
    Pause,
    /// `resume` (SPEC 3.17).
    Resume,
    /// `run_now` (SPEC 3.18).
    RunNow,
    /// `stats`.
    Stats,
    /// `retry_delay`.
    RetryDelay,
    /// `restart`.
    Restart,
}

impl OpKind {
    /// Every operation of SPEC 5.3, in its order.
    pub const ALL: [OpKind; 18] = [
        OpKind::Config,
        OpKind::Enqueue,
        OpKind::Claim,
        OpKind::Complete,
        OpKind::RunOnce,
        OpKind::Heartbeat,
        OpKind::Redrive,
        OpKind::Cancel,
        OpKind::Reap,
        OpKind::Prune,
        OpKind::Forget,
        OpKind::Get,
        OpKind::Pause,
        OpKind::Resume,
        OpKind::RunNow,
        OpKind::Stats,
        OpKind::RetryDelay,
        OpKind::Restart,
    ];

    /// The operation's kind.
    pub fn of(op: &Op) -> OpKind {
        match op {
            Op::Config { .. } => OpKind::Config,
            Op::Enqueue { .. } => OpKind::Enqueue,
            Op::Claim { .. } => OpKind::Claim,
            Op::Complete { .. } => OpKind::Complete,
            Op::RunOnce { .. } => OpKind::RunOnce,
            Op::Heartbeat { .. } => OpKind::Heartbeat,
            Op::Redrive { .. } => OpKind::Redrive,
            Op::Cancel { .. } => OpKind::Cancel,
            Op::Reap { .. } => OpKind::Reap,
            Op::Prune { .. } => OpKind::Prune,
            Op::Forget { .. } => OpKind::Forget,
            Op::Get { .. } => OpKind::Get,
            Op::Pause { .. } => OpKind::Pause,
            Op::Resume { .. } => OpKind::Resume,
            Op::RunNow { .. } => OpKind::RunNow,
            Op::Stats { .. } => OpKind::Stats,
            Op::RetryDelay { .. } => OpKind::RetryDelay,
            Op::Restart => OpKind::Restart,
        }
    }

    /// The name a trace line gives it.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Config => "config",
            OpKind::Enqueue => "enqueue",
            OpKind::Claim => "claim",
            OpKind::Complete => "complete",
            OpKind::RunOnce => "run_once",
            OpKind::Heartbeat => "heartbeat",
            OpKind::Redrive => "redrive",
            OpKind::Cancel => "cancel",
            OpKind::Reap => "reap",
            OpKind::Prune => "prune",
            OpKind::Forget => "forget",
            OpKind::Get => "get",
            OpKind::Pause => "pause",
            OpKind::Resume => "resume",
            OpKind::RunNow => "run_now",
            OpKind::Stats => "stats",
            OpKind::RetryDelay => "retry_delay",
            OpKind::Restart => "restart",
        }
    }

    /// Whether the operation names a job by its `id`: it meets that job, or none
    /// ([`Meets::Missing`]).
    pub fn names_a_job(self) -> bool {
        matches!(
            self,
            OpKind::Enqueue
                | OpKind::Complete
                | OpKind::Heartbeat
                | OpKind::Redrive
                | OpKind::Cancel
                | OpKind::RunNow
                | OpKind::Get
        )
    }

    /// Whether the operation reaps (SPEC 3.3.1, 3.7) and may take a job: it meets the jobs it
    /// moves and the one it takes.
    pub fn reaps(self) -> bool {
        matches!(self, OpKind::Claim | OpKind::RunOnce | OpKind::Reap)
    }
}

/// The status of the job an operation meets (SPEC 1.4), as fine as the contract's rules tell
/// them apart: a pending job that never ran and one waiting after an attempt (a retry, or a
/// redrive), a live lease and an expired one, and each reason of `dead`. An operation that
/// names a job meets it as it was before the step; `claim` and `run_once` meet the job they
/// take and each job their reap moves; `reap` each job it moves; the others meet none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Meets {
    /// The operation meets no job (it names none, or takes none).
    Nothing,
    /// It names an id that is not stored.
    Missing,
    /// Pending, never claimed (`attempts` 0): just enqueued, scheduled, or cancelled before
    /// any claim and redriven.
    Fresh,
    /// Pending after at least one attempt: waiting for a retry, or redriven.
    Waiting,
    /// Leased, the lease not expired at the operation's `now`.
    Live,
    /// Leased, the lease expired at the operation's `now` (`available_at` ≤ `now`).
    Expired,
    /// Leased, the lease not expired, with a cancel request (SPEC 3.13).
    LiveCancelling,
    /// Leased, the lease expired, with a cancel request: no claim takes it, a reap ends it.
    ExpiredCancelling,
    /// Done.
    Done,
    /// Dead, `exhausted`.
    Exhausted,
    /// Dead, `deadline`.
    Deadline,
    /// Dead, `permanent`.
    Permanent,
    /// Dead, `cancelled`.
    Cancelled,
    /// An id no job has but a tombstone (SPEC 1.7): pruned, not forgotten.
    Tombstone,
}

impl Meets {
    /// Every status, in report order.
    pub const ALL: [Meets; 14] = [
        Meets::Nothing,
        Meets::Missing,
        Meets::Fresh,
        Meets::Waiting,
        Meets::Live,
        Meets::Expired,
        Meets::LiveCancelling,
        Meets::ExpiredCancelling,
        Meets::Done,
        Meets::Exhausted,
        Meets::Deadline,
        Meets::Permanent,
        Meets::Cancelled,
        Meets::Tombstone,
    ];

    /// The status of a dead job with this reason.
    pub fn dead(reason: DeadReason) -> Meets {
        match reason {
            DeadReason::Exhausted => Meets::Exhausted,
            DeadReason::Deadline => Meets::Deadline,
            DeadReason::Permanent => Meets::Permanent,
            DeadReason::Cancelled => Meets::Cancelled,
        }
    }

    /// How a report names it.
    pub fn name(self) -> &'static str {
        match self {
            Meets::Nothing => "-",
            Meets::Missing => "missing",
            Meets::Fresh => "pending, never claimed",
            Meets::Waiting => "pending after an attempt",
            Meets::Live => "leased, live",
            Meets::Expired => "leased, expired",
            Meets::LiveCancelling => "leased, live, cancel requested",
            Meets::ExpiredCancelling => "leased, expired, cancel requested",
            Meets::Done => "done",
            Meets::Exhausted => "dead(exhausted)",
            Meets::Deadline => "dead(deadline)",
            Meets::Permanent => "dead(permanent)",
            Meets::Cancelled => "dead(cancelled)",
            Meets::Tombstone => "pruned",
        }
    }

    fn pending(self) -> bool {
        matches!(self, Meets::Fresh | Meets::Waiting)
    }

    fn leased(self) -> bool {
        matches!(self, Meets::Live | Meets::Expired | Meets::LiveCancelling | Meets::ExpiredCancelling)
    }

    fn cancelling(self) -> bool {
        matches!(self, Meets::LiveCancelling | Meets::ExpiredCancelling)
    }

    fn ended(self) -> bool {
        self == Meets::Done || self.is_dead()
    }

    fn is_dead(self) -> bool {
        matches!(self, Meets::Exhausted | Meets::Deadline | Meets::Permanent | Meets::Cancelled)
    }
}

/// An answer of SPEC 5.3, as the table tells them apart: each `ok` and each `error`, a `dead`
/// by its reason, and what a reap did to the job it met.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    /// `{"ok":"config"}`.
    Config,
    /// `{"ok":"enqueued"}`.
    Enqueued,
    /// `{"ok":"existing"}`.
    Existing,
    /// `{"ok":"claimed",…}`: the job met was taken.
    Claimed,
    /// `{"ok":"none"}`.
    Nothing,
    /// `{"ok":"done"}`.
    Done,
    /// `{"ok":"retry",…}`.
    Retry,
    /// `{"ok":"dead","reason":"exhausted"}`.
    DeadExhausted,
    /// `{"ok":"dead","reason":"deadline"}`.
    DeadDeadline,
    /// `{"ok":"dead","reason":"permanent"}`.
    DeadPermanent,
    /// `{"ok":"dead","reason":"cancelled"}`: a `retryable` completion under a cancel request.
    DeadCancelled,
    /// `{"ok":"crashed",…}`.
    Crashed,
    /// `{"ok":"extended",…}`.
    Extended,
    /// `{"ok":"redriven"}`.
    Redriven,
    /// `{"ok":"cancelled"}`.
    Cancelled,
    /// `{"ok":"cancelling"}`: a leased job's cancel request (SPEC 3.13).
    Cancelling,
    /// `{"ok":"reaped",…}` of a reap that moved nothing.
    Reaped,
    /// The reap of `claim`, `run_once` or `reap` moved the job met to dead(exhausted).
    ReapedExhausted,
    /// The reap moved the job met to dead(deadline).
    ReapedDeadline,
    /// The reap moved the job met, an expired lease with a cancel request, to dead(cancelled).
    ReapedCancelled,
    /// The reap reached its `reap_limit` and left the job met, due to end, as it was (SPEC
    /// 3.3.1, 6.37); a claim's pick passed over it (3.3.2).
    LeftDue,
    /// `{"ok":"pruned","count"}`: of a prune that removed nothing, or the job met removed.
    Pruned,
    /// `{"ok":"forgotten","count"}`: of a forget that removed nothing, or the tombstone met
    /// removed.
    Forgotten,
    /// `{"ok":"job",…}`.
    Job,
    /// `{"ok":"pruned","id",…}`: `get` of a tombstone.
    TombstoneView,
    /// `{"ok":"stats",…}`.
    Stats,
    /// `{"ok":"delay",…}`.
    Delay,
    /// `{"ok":"paused"}` (SPEC 3.16).
    Paused,
    /// `{"ok":"resumed"}` (SPEC 3.17).
    Resumed,
    /// `{"ok":"due","available_at"}`: `run_now` of a pending job in time (SPEC 3.18).
    Due,
    /// `{"ok":"restart"}`.
    Restart,
    /// `{"error":"invalid_input",…}`.
    InvalidInput,
    /// `{"error":"conflict"}`.
    Conflict,
    /// `{"error":"not_found"}`.
    NotFound,
    /// `{"error":"lease_lost"}`.
    LeaseLost,
    /// `{"error":"clock_went_backwards"}` (of `complete`, `heartbeat`, or `run_once`'s report).
    ClockWentBackwards,
    /// `{"error":"unknown_error",…}`.
    UnknownError,
    /// `{"error":"deadline_passed"}`.
    DeadlinePassed,
    /// `{"error":"not_dead"}`.
    NotDead,
    /// `{"error":"not_cancellable"}`.
    NotCancellable,
    /// `{"error":"cancelled"}`: a heartbeat under a cancel request.
    CancelledError,
    /// `{"error":"pruned"}`: `redrive`, `cancel` or `run_now` of a tombstone's id.
    PrunedError,
    /// `{"error":"not_pending"}`: `run_now` of a leased, done or dead job (SPEC 3.18).
    NotPending,
}

impl Answer {
    /// Every answer, in report order.
    pub const ALL: [Answer; 43] = [
        Answer::Config,
        Answer::Enqueued,
        Answer::Existing,
        Answer::Claimed,
        Answer::Nothing,
        Answer::Done,
        Answer::Retry,
        Answer::DeadExhausted,
        Answer::DeadDeadline,
        Answer::DeadPermanent,
        Answer::DeadCancelled,
        Answer::Crashed,
        Answer::Extended,
        Answer::Redriven,
        Answer::Cancelled,
        Answer::Cancelling,
        Answer::Reaped,
        Answer::ReapedExhausted,
        Answer::ReapedDeadline,
        Answer::ReapedCancelled,
        Answer::LeftDue,
        Answer::Pruned,
        Answer::Forgotten,
        Answer::Job,
        Answer::TombstoneView,
        Answer::Stats,
        Answer::Delay,
        Answer::Paused,
        Answer::Resumed,
        Answer::Due,
        Answer::Restart,
        Answer::InvalidInput,
        Answer::Conflict,
        Answer::NotFound,
        Answer::LeaseLost,
        Answer::ClockWentBackwards,
        Answer::UnknownError,
        Answer::DeadlinePassed,
        Answer::NotDead,
        Answer::NotCancellable,
        Answer::CancelledError,
        Answer::PrunedError,
        Answer::NotPending,
    ];

    /// The answer a response gives (a reap's moves are told by the caller, who sees the
    /// jobs).
    pub fn of(response: &Response) -> Answer {
        match response {
            Response::Ok(reply) => match reply {
                Reply::Config => Answer::Config,
                Reply::Enqueued => Answer::Enqueued,
                Reply::Existing => Answer::Existing,
                Reply::Claimed { .. } => Answer::Claimed,
                Reply::None => Answer::Nothing,
                Reply::Done | Reply::RanDone { .. } => Answer::Done,
                Reply::Retry { .. } | Reply::RanRetry { .. } => Answer::Retry,
                Reply::Dead { reason } | Reply::RanDead { reason, .. } => match reason {
                    DeadReason::Exhausted => Answer::DeadExhausted,
                    DeadReason::Deadline => Answer::DeadDeadline,
                    DeadReason::Permanent => Answer::DeadPermanent,
                    DeadReason::Cancelled => Answer::DeadCancelled,
                },
                Reply::Crashed { .. } => Answer::Crashed,
                Reply::Extended { .. } => Answer::Extended,
                Reply::Redriven => Answer::Redriven,
                Reply::Cancelled => Answer::Cancelled,
                Reply::Cancelling => Answer::Cancelling,
                Reply::Reaped { .. } => Answer::Reaped,
                Reply::Pruned { .. } => Answer::Pruned,
                Reply::Forgotten { .. } => Answer::Forgotten,
                Reply::Job(_) => Answer::Job,
                Reply::Tombstone(_) => Answer::TombstoneView,
                Reply::Stats(_) => Answer::Stats,
                Reply::Delay { .. } => Answer::Delay,
                Reply::Paused => Answer::Paused,
                Reply::Resumed => Answer::Resumed,
                Reply::Due { .. } => Answer::Due,
                Reply::Restart => Answer::Restart,
            },
            Response::Err(failure) => match failure {
                Failure::InvalidInput { .. } => Answer::InvalidInput,
                Failure::Conflict => Answer::Conflict,
                Failure::NotFound => Answer::NotFound,
                Failure::LeaseLost => Answer::LeaseLost,
                Failure::NotDead => Answer::NotDead,
                Failure::ClockWentBackwards | Failure::RanClockWentBackwards { .. } => {
                    Answer::ClockWentBackwards
                }
                Failure::DeadlinePassed => Answer::DeadlinePassed,
                Failure::NotCancellable => Answer::NotCancellable,
                Failure::Cancelled => Answer::CancelledError,
                Failure::Pruned => Answer::PrunedError,
                Failure::NotPending => Answer::NotPending,
                Failure::UnknownError { .. } => Answer::UnknownError,
            },
        }
    }

    /// The answer as a report names it.
    pub fn name(self) -> &'static str {
        match self {
            Answer::Config => "config",
            Answer::Enqueued => "enqueued",
            Answer::Existing => "existing",
            Answer::Claimed => "claimed",
            Answer::Nothing => "none",
            Answer::Done => "done",
            Answer::Retry => "retry",
            Answer::DeadExhausted => "dead(exhausted)",
            Answer::DeadDeadline => "dead(deadline)",
            Answer::DeadPermanent => "dead(permanent)",
            Answer::DeadCancelled => "dead(cancelled)",
            Answer::Crashed => "crashed",
            Answer::Extended => "extended",
            Answer::Redriven => "redriven",
            Answer::Cancelled => "cancelled",
            Answer::Cancelling => "cancelling",
            Answer::Reaped => "reaped 0",
            Answer::ReapedExhausted => "reaped: dead(exhausted)",
            Answer::ReapedDeadline => "reaped: dead(deadline)",
            Answer::ReapedCancelled => "reaped: dead(cancelled)",
            Answer::LeftDue => "left due to end: past reap_limit",
            Answer::Pruned => "pruned",
            Answer::Forgotten => "forgotten",
            Answer::Job => "job",
            Answer::TombstoneView => "pruned (tombstone)",
            Answer::Stats => "stats",
            Answer::Delay => "delay",
            Answer::Paused => "paused",
            Answer::Resumed => "resumed",
            Answer::Due => "due",
            Answer::Restart => "restart",
            Answer::InvalidInput => "invalid_input",
            Answer::Conflict => "conflict",
            Answer::NotFound => "not_found",
            Answer::LeaseLost => "lease_lost",
            Answer::ClockWentBackwards => "clock_went_backwards",
            Answer::UnknownError => "unknown_error",
            Answer::DeadlinePassed => "deadline_passed",
            Answer::NotDead => "not_dead",
            Answer::NotCancellable => "not_cancellable",
            Answer::CancelledError => "error cancelled",
            Answer::PrunedError => "error pruned",
            Answer::NotPending => "not_pending",
        }
    }
}

/// Whether the contract allows `op`, meeting a job in status `meets`, to give `answer`:
/// SPEC 3.2–3.15 and 5.3, read as a table. Bad arguments are `invalid_input` whatever the job
/// (3.1: checked before any lookup), so every status an operation can meet allows it.
pub fn allows(op: OpKind, meets: Meets, answer: Answer) -> bool {
    use Answer as A;
    use Meets as M;
    let named = meets != M::Nothing;
    // Statuses a claim can take (3.3.2): never a lease with a cancel request (4.13).
    let takeable = meets.pending() || meets == M::Expired;
    // And those its reap can move (3.3.1), the request first.
    // A job due to end that a reap at its limit left (3.3.1, 6.37): any status it can move.
    let reaped = match answer {
        A::ReapedCancelled => meets == M::ExpiredCancelling,
        A::ReapedExhausted => meets == M::Expired,
        A::ReapedDeadline => takeable,
        A::LeftDue => takeable || meets == M::ExpiredCancelling,
        _ => false,
    };
    match op {
        OpKind::Config | OpKind::Stats | OpKind::RetryDelay => {
            !named
                && matches!(
                    (op, answer),
                    (_, A::InvalidInput)
                        | (OpKind::Config, A::Config)
                        | (OpKind::Stats, A::Stats)
                        | (OpKind::RetryDelay, A::Delay)
                )
        }
        OpKind::Restart => !named && answer == A::Restart,
        // SPEC 3.16, 3.17: refused only for their arguments; they meet no job.
        OpKind::Pause | OpKind::Resume => {
            !named
                && matches!(
                    (op, answer),
                    (_, A::InvalidInput) | (OpKind::Pause, A::Paused) | (OpKind::Resume, A::Resumed)
                )
        }
        OpKind::Reap => reaped || (!named && matches!(answer, A::Reaped | A::InvalidInput)),
        // A prune meets each job it removes, only ever an ended one (3.14); a forget each
        // tombstone (3.15).
        OpKind::Prune => {
            (meets.ended() && answer == A::Pruned)
                || (!named && matches!(answer, A::Pruned | A::InvalidInput))
        }
        OpKind::Forget => {
            (meets == M::Tombstone && answer == A::Forgotten)
                || (!named && matches!(answer, A::Forgotten | A::InvalidInput))
        }
        OpKind::Claim => {
            reaped
                || (takeable && answer == A::Claimed)
                || (!named && matches!(answer, A::Nothing | A::InvalidInput))
        }
        OpKind::RunOnce => {
            // The job run was just claimed: no cancel request can stand on it yet.
            let ran = matches!(
                answer,
                A::Done
                    | A::Retry
                    | A::DeadExhausted
                    | A::DeadDeadline
                    | A::DeadPermanent
                    | A::Crashed
                    | A::UnknownError
                    | A::ClockWentBackwards
            );
            reaped || (takeable && ran) || (!named && matches!(answer, A::Nothing | A::InvalidInput))
        }
        _ if meets == M::Nothing => false,
        // Every operation that names a job: a bad argument whatever the job (`get` has no
        // argument but the id, and a bad id names no stored job), `not_found` for a missing
        // one (enqueue stores it instead).
        _ if answer == A::InvalidInput => op != OpKind::Get || meets == M::Missing,
        OpKind::Enqueue => match meets {
            M::Missing => answer == A::Enqueued,
            // A tombstone answers as the job it was: its id is never run again (3.2).
            _ => matches!(answer, A::Existing | A::Conflict),
        },
        _ if meets == M::Missing => answer == A::NotFound,
        OpKind::Get if meets == M::Tombstone => answer == A::TombstoneView,
        OpKind::Get => answer == A::Job,
        OpKind::Complete => {
            let applied = if meets.cancelling() {
                // A cancel request: `ok` is done, `permanent` dead(permanent), `retryable`
                // dead(cancelled) (3.4).
                matches!(answer, A::Done | A::DeadPermanent | A::DeadCancelled)
            } else {
                matches!(answer, A::Done | A::Retry | A::DeadExhausted | A::DeadDeadline | A::DeadPermanent)
            };
            // Dated before the claim, a lease cannot have expired yet: `clock_went_backwards`
            // meets a live one. A tombstone's fence fails as its ended job's did (6.30).
            answer == A::LeaseLost
                || (meets.leased() && applied)
                || (matches!(meets, M::Live | M::LiveCancelling) && answer == A::ClockWentBackwards)
        }
        OpKind::Heartbeat => {
            let answered = if meets.cancelling() {
                answer == A::CancelledError
            } else {
                matches!(answer, A::Extended | A::DeadlinePassed)
            };
            answer == A::LeaseLost
                || (meets.leased() && answered)
                || (matches!(meets, M::Live | M::LiveCancelling) && answer == A::ClockWentBackwards)
        }
        OpKind::Redrive => match answer {
            A::PrunedError => meets == M::Tombstone,
            A::Redriven => meets.is_dead(),
            A::NotDead => !meets.is_dead() && meets != M::Tombstone,
            _ => false,
        },
        OpKind::Cancel => match answer {
            A::PrunedError => meets == M::Tombstone,
            A::Cancelled => meets.pending(),
            A::Cancelling => meets.leased(),
            A::NotCancellable => meets.ended(),
            _ => false,
        },
        // SPEC 3.18: a pending job is made due, or refused at or past its deadline; any other
        // status is not pending.
        OpKind::RunNow => match answer {
            A::PrunedError => meets == M::Tombstone,
            A::Due | A::DeadlinePassed => meets.pending(),
            A::NotPending => meets.leased() || meets.ended(),
            _ => false,
        },
    }
}

/// One cell of the table: an operation meeting a job in a status and giving an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    /// The operation.
    pub op: OpKind,
    /// The status of the job it met.
    pub meets: Meets,
    /// What it answered.
    pub answer: Answer,
}

impl Cell {
    /// Whether the contract allows this cell.
    pub fn allowed(self) -> bool {
        allows(self.op, self.meets, self.answer)
    }
}

/// Every cell the contract allows, in table order: operations as SPEC 5.3 lists them, then
/// statuses, then answers.
pub fn cells() -> Vec<Cell> {
    let mut cells = Vec::new();
    for op in OpKind::ALL {
        for meets in Meets::ALL {
            for answer in Answer::ALL {
                let cell = Cell { op, meets, answer };
                if cell.allowed() {
                    cells.push(cell);
                }
            }
        }
    }
    cells
}

/// The cells reached only at `--deep` (budgets of 1 and 3): none so far. A cell named here
/// must be reached there, and `retryq check` fails at the default bounds on any other cell it
/// does not reach.
pub const DEEP_ONLY: &[Cell] = &[];

/// A field of an operation, as SPEC 5.2 names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// `id`: a name.
    Id,
    /// `worker`: a name.
    Worker,
    /// `payload`: text of at most 1 MiB.
    Payload,
    /// `max_attempts`: a budget.
    MaxAttempts,
    /// `add_attempts`: a budget, and with the stored attempts at most 2^31 − 1 (6.5).
    AddAttempts,
    /// `deadline`: after `now`.
    Deadline,
    /// `now`.
    Now,
    /// `after`, `run_once`'s second reading: any time; before `now` is a report, not a
    /// refusal.
    After,
    /// `not_before`: within `now` … `deadline − 1` (3.2).
    NotBefore,
    /// `base_ms`, in `config`, `enqueue` and `retry_delay`.
    BaseMs,
    /// `cap_ms`, likewise.
    CapMs,
    /// `lease_ms`: at least 1.
    LeaseMs,
    /// `reap_limit`: at least 1 (3.11).
    ReapLimit,
    /// `attempt`: at least 1.
    Attempt,
    /// `jitter`: a binary64 in [0, 1], checked when present, required for `retryable` (6.6).
    Jitter,
    /// `queue`: a queue name, 1–64 bytes without NUL (1.6), in `enqueue` and `stats`.
    Queue,
    /// `queues`: 1–64 queue names, none twice (3.3), in `claim` and `run_once`.
    Queues,
    /// `priority`: 0 … 9 (1.6).
    Priority,
    /// `before`: at most `now` (3.14, 3.15).
    Before,
    /// `kind`: 0–64 bytes without NUL (1.1), in `enqueue`.
    Kind,
}

impl Field {
    /// Every field, in the order the argument table lists them.
    pub const ALL: [Field; 20] = [
        Field::Id,
        Field::Worker,
        Field::Payload,
        Field::MaxAttempts,
        Field::AddAttempts,
        Field::Deadline,
        Field::Now,
        Field::After,
        Field::NotBefore,
        Field::BaseMs,
        Field::CapMs,
        Field::LeaseMs,
        Field::ReapLimit,
        Field::Attempt,
        Field::Jitter,
        Field::Queue,
        Field::Queues,
        Field::Priority,
        Field::Before,
        Field::Kind,
    ];

    /// The name a detail starts with (SPEC 6.13).
    pub fn name(self) -> &'static str {
        match self {
            Field::Id => "id",
            Field::Worker => "worker",
            Field::Payload => "payload",
            Field::MaxAttempts => "max_attempts",
            Field::AddAttempts => "add_attempts",
            Field::Deadline => "deadline",
            Field::Now => "now",
            Field::After => "after",
            Field::NotBefore => "not_before",
            Field::BaseMs => "base_ms",
            Field::CapMs => "cap_ms",
            Field::LeaseMs => "lease_ms",
            Field::ReapLimit => "reap_limit",
            Field::Attempt => "attempt",
            Field::Jitter => "jitter",
            Field::Queue => "queue",
            Field::Queues => "queues",
            Field::Priority => "priority",
            Field::Before => "before",
            Field::Kind => "kind",
        }
    }
}

/// The fields of each operation (SPEC 5.3), every one of which the world varies class by
/// class. `outcome` is not among them: its values are the world's own choices, not a range.
pub fn fields(op: OpKind) -> &'static [Field] {
    use Field::*;
    match op {
        OpKind::Config => &[BaseMs, CapMs, LeaseMs, ReapLimit],
        OpKind::Enqueue => {
            &[Id, Payload, MaxAttempts, Deadline, Now, NotBefore, BaseMs, CapMs, Queue, Priority, Kind]
        }
        OpKind::Claim => &[Worker, Now, Queues],
        OpKind::Complete => &[Worker, Id, Attempt, Now, Jitter],
        OpKind::RunOnce => &[Worker, Now, After, Jitter, Queues],
        OpKind::Heartbeat => &[Worker, Id, Attempt, Now],
        OpKind::Redrive => &[Id, Now, AddAttempts, Deadline],
        OpKind::Cancel | OpKind::RunNow => &[Id, Now],
        OpKind::Pause | OpKind::Resume => &[Queue, Now],
        OpKind::Reap => &[Now],
        OpKind::Stats => &[Now, Queue],
        OpKind::Prune | OpKind::Forget => &[Before, Now],
        OpKind::Get => &[Id],
        OpKind::RetryDelay => &[Attempt, BaseMs, CapMs, Jitter],
        OpKind::Restart => &[],
    }
}

/// A class of values of a field: the valid values at the edges of its range, and each way of
/// being invalid SPEC 3.1, 5.2 and 6.21 name. [`classes`] says which apply to which field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Valid: the smallest value (1 byte for a name, empty text, 0 or 1 for an integer, the
    /// earliest time allowed, jitter 0).
    Least,
    /// Valid: the largest value (256 bytes, 1 MiB, 2^53 − 1, 2^31 − 1, the latest time
    /// allowed, jitter 1).
    Most,
    /// Valid, and unusual: a name of 256 bytes made of multi-byte characters and a control
    /// character; a jitter of −0; a time after `now` for `after`.
    Odd,
    /// Valid only where absent: the field left out (an optional field), so that its default
    /// applies.
    Absent,
    /// Invalid: one below the range (an empty name; 0 where at least 1 is required; a time
    /// before `now` where one at or after it is required; a negative jitter).
    Below,
    /// Invalid: one above the range (257 bytes, 1 MiB + 1, 2^53, 2^31, a deadline-bound time
    /// at the deadline, jitter 1.0000000000000002).
    Above,
    /// Invalid: a name holding NUL (6.21), a jitter that is NaN.
    Forbidden,
    /// Invalid: a required field missing (a `retryable` completion without its jitter).
    Missing,
}

impl Class {
    /// Every class, in the order the argument table lists them.
    pub const ALL: [Class; 8] = [
        Class::Least,
        Class::Most,
        Class::Odd,
        Class::Absent,
        Class::Below,
        Class::Above,
        Class::Forbidden,
        Class::Missing,
    ];

    /// Whether a value of this class is a valid argument.
    pub fn valid(self) -> bool {
        matches!(self, Class::Least | Class::Most | Class::Odd | Class::Absent)
    }

    /// How a report names it.
    pub fn name(self) -> &'static str {
        match self {
            Class::Least => "least",
            Class::Most => "most",
            Class::Odd => "odd",
            Class::Absent => "absent",
            Class::Below => "below",
            Class::Above => "above",
            Class::Forbidden => "forbidden",
            Class::Missing => "missing",
        }
    }
}

/// The classes of `field` in `op`: every one the contract distinguishes.
pub fn classes(op: OpKind, field: Field) -> &'static [Class] {
    use Class::*;
    match field {
        Field::Id | Field::Worker => &[Least, Most, Odd, Below, Above, Forbidden],
        Field::Payload => &[Least, Most, Above],
        Field::MaxAttempts | Field::AddAttempts => &[Least, Most, Below, Above],
        Field::Deadline => &[Least, Most, Below, Above],
        Field::Now => &[Least, Most, Above],
        Field::After => &[Least, Most, Odd, Absent, Above],
        Field::NotBefore => &[Least, Most, Absent, Below, Above],
        Field::BaseMs | Field::CapMs if op == OpKind::RetryDelay => &[Least, Most, Above],
        Field::BaseMs | Field::CapMs => &[Least, Most, Absent, Above],
        Field::LeaseMs | Field::ReapLimit => &[Least, Most, Absent, Below, Above],
        Field::Attempt => &[Least, Most, Below, Above],
        Field::Jitter if op == OpKind::RetryDelay => &[Least, Most, Odd, Below, Above, Forbidden],
        Field::Jitter => &[Least, Most, Odd, Below, Above, Forbidden, Missing],
        // 1 byte, 64, 64 of multi-byte and control characters, left out, empty, 65, NUL.
        Field::Queue if matches!(op, OpKind::Pause | OpKind::Resume) => {
            &[Least, Most, Odd, Below, Above, Forbidden]
        }
        Field::Queue => &[Least, Most, Odd, Absent, Below, Above, Forbidden],
        // One name, 64 names, a name given twice (forbidden), left out, none, 65 names.
        Field::Queues => &[Least, Most, Absent, Below, Above, Forbidden],
        Field::Priority => &[Least, Most, Absent, Above],
        // 0, `now` itself, past `now` (or past 2^53 − 1).
        Field::Before => &[Least, Most, Above],
        // Empty, 64 bytes, 64 of multi-byte and control characters, left out, 65, NUL. Against
        // an existing job (which has none), every valid kind but the empty one is a conflict.
        Field::Kind => &[Least, Most, Odd, Absent, Above, Forbidden],
    }
}

/// A cell of the argument table (SPEC 3.1, 5.2, 6.21): an operation judged with a value of one
/// class in one of its fields. Every one is reached, the way every cell of [`cells`] is: the
/// model proves that each class of each field of each operation was put to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgCell {
    /// The operation.
    pub op: OpKind,
    /// The field.
    pub field: Field,
    /// The class of its value.
    pub class: Class,
}

/// Every cell of the argument table, by operation, field and class.
pub fn arg_cells() -> Vec<ArgCell> {
    let mut cells = Vec::new();
    for op in OpKind::ALL {
        for &field in fields(op) {
            for &class in classes(op, field) {
                cells.push(ArgCell { op, field, class });
            }
        }
    }
    cells
}

/// The largest budget, 2^31 − 1 (SPEC 3.2).
const MAX_BUDGET: u64 = (1 << 31) - 1;
/// The largest payload, 1 MiB (SPEC 3.2).
const MAX_PAYLOAD: usize = 1 << 20;

/// The class of `field`'s value in `op`, if it falls in one (most values are in none: an
/// ordinary name, a time in the middle of the range). Read from SPEC 3.1, 5.2 and 6.21 by
/// itself, not from the probes that put the classes to the store, so that a probe whose value
/// missed its class leaves that cell unreached.
pub fn class_of(op: &Op, field: Field) -> Option<Class> {
    use Class::*;
    let time = |v: u64, least: u64, most: u64| match v {
        v if v > crate::MAX_INT => Some(Above),
        v if v == least => Some(Least),
        v if v == most => Some(Most),
        _ => None,
    };
    let optional = |v: Option<u64>, least: u64| v.map_or(Some(Absent), |v| time(v, least, crate::MAX_INT));
    match (op, field) {
        (Op::Enqueue { id, .. } | Op::Complete { id, .. } | Op::Heartbeat { id, .. }, Field::Id)
        | (Op::Redrive { id, .. } | Op::Cancel { id, .. } | Op::Get { id }, Field::Id)
        | (Op::RunNow { id, .. }, Field::Id)
        | (
            Op::Claim { worker: id, .. }
            | Op::Complete { worker: id, .. }
            | Op::RunOnce { worker: id, .. }
            | Op::Heartbeat { worker: id, .. },
            Field::Worker,
        ) => name_class(id),
        (Op::Enqueue { payload, .. }, Field::Payload) => match payload.len() {
            0 => Some(Least),
            MAX_PAYLOAD => Some(Most),
            n if n > MAX_PAYLOAD => Some(Above),
            _ => None,
        },
        (Op::Enqueue { max_attempts: v, .. }, Field::MaxAttempts)
        | (Op::Redrive { add_attempts: v, .. }, Field::AddAttempts) => match *v {
            0 => Some(Below),
            1 => Some(Least),
            MAX_BUDGET => Some(Most),
            v if v > MAX_BUDGET => Some(Above),
            _ => None,
        },
        (Op::Enqueue { deadline, now, .. } | Op::Redrive { deadline, now, .. }, Field::Deadline) => {
            match *deadline {
                d if d > crate::MAX_INT => Some(Above),
                d if d <= *now => Some(Below),
                crate::MAX_INT => Some(Most),
                d if d == now + 1 => Some(Least),
                _ => None,
            }
        }
        // A deadline must come after `now`: the latest `now` of an enqueue or a redrive is
        // one before the end of the range.
        (Op::Enqueue { now, .. } | Op::Redrive { now, .. }, Field::Now) => time(*now, 0, crate::MAX_INT - 1),
        (_, Field::Now) => time(op.now()?, 0, crate::MAX_INT),
        (Op::RunOnce { after, now, .. }, Field::After) => match *after {
            None => Some(Absent),
            Some(a) => time(a, 0, crate::MAX_INT).or((a > *now).then_some(Odd)),
        },
        (Op::Enqueue { not_before, now, deadline, .. }, Field::NotBefore) => match *not_before {
            None => Some(Absent),
            Some(at) if at < *now => Some(Below),
            Some(at) if at >= *deadline => Some(Above),
            Some(at) if at == *now => Some(Least),
            Some(at) if at + 1 == *deadline => Some(Most),
            Some(_) => None,
        },
        (Op::Enqueue { base_ms: v, .. } | Op::Config { base_ms: v, .. }, Field::BaseMs)
        | (Op::Enqueue { cap_ms: v, .. } | Op::Config { cap_ms: v, .. }, Field::CapMs) => optional(*v, 0),
        (Op::RetryDelay { base_ms: v, .. }, Field::BaseMs)
        | (Op::RetryDelay { cap_ms: v, .. }, Field::CapMs) => time(*v, 0, crate::MAX_INT),
        (Op::Config { lease_ms: Some(0), .. }, Field::LeaseMs)
        | (Op::Config { reap_limit: Some(0), .. }, Field::ReapLimit) => Some(Below),
        (Op::Config { lease_ms, .. }, Field::LeaseMs) => optional(*lease_ms, 1),
        (Op::Config { reap_limit, .. }, Field::ReapLimit) => optional(*reap_limit, 1),
        (
            Op::Complete { attempt, .. } | Op::Heartbeat { attempt, .. } | Op::RetryDelay { attempt, .. },
            Field::Attempt,
        ) => match *attempt {
            0 => Some(Below),
            a => time(a, 1, crate::MAX_INT),
        },
        // Required only for a `retryable` outcome (6.6): elsewhere an absent jitter is no class.
        (Op::Complete { jitter: None, outcome, .. }, Field::Jitter) => {
            (*outcome == Outcome::Retryable).then_some(Missing)
        }
        (Op::RunOnce { jitter: None, outcome, .. }, Field::Jitter) => {
            (*outcome == RunOutcome::Retryable).then_some(Missing)
        }
        (Op::Complete { jitter: Some(j), .. } | Op::RunOnce { jitter: Some(j), .. }, Field::Jitter) => {
            jitter_class(*j)
        }
        (Op::RetryDelay { jitter, .. }, Field::Jitter) => jitter_class(*jitter),
        (Op::Enqueue { queue, .. } | Op::Stats { queue, .. }, Field::Queue) => {
            queue.as_deref().map_or(Some(Absent), queue_class)
        }
        (Op::Pause { queue, .. } | Op::Resume { queue, .. }, Field::Queue) => queue_class(queue),
        (Op::Claim { queues, .. } | Op::RunOnce { queues, .. }, Field::Queues) => match queues.as_deref() {
            None => Some(Absent),
            Some([]) => Some(Below),
            Some(names) if names.len() > MAX_QUEUES => Some(Above),
            Some(names) if names.iter().enumerate().any(|(i, n)| names[..i].contains(n)) => Some(Forbidden),
            Some([_]) => Some(Least),
            Some(names) if names.len() == MAX_QUEUES => Some(Most),
            Some(_) => None,
        },
        (Op::Enqueue { priority, .. }, Field::Priority) => {
            match priority.map(|p| (p, p.cmp(&MAX_PRIORITY))) {
                None => Some(Absent),
                Some((0, _)) => Some(Least),
                Some((_, std::cmp::Ordering::Equal)) => Some(Most),
                Some((_, std::cmp::Ordering::Greater)) => Some(Above),
                Some(_) => None,
            }
        }
        (Op::Enqueue { kind, .. }, Field::Kind) => kind.as_deref().map_or(Some(Absent), kind_class),
        (Op::Prune { before, now } | Op::Forget { before, now }, Field::Before) => match *before {
            b if b > *now || b > crate::MAX_INT => Some(Above),
            0 => Some(Least),
            b if b == *now => Some(Most),
            _ => None,
        },
        _ => None,
    }
}

/// The most queues a claim serves, and the largest priority (SPEC 1.6, 3.3).
const MAX_QUEUES: usize = 64;
const MAX_PRIORITY: u64 = 9;

/// The class of a queue name: empty, holding NUL, past 64 bytes, 64 bytes with a multi-byte
/// or control character, 64 bytes, one byte.
fn queue_class(name: &str) -> Option<Class> {
    match name.len() {
        0 => Some(Class::Below),
        _ if name.contains('\0') => Some(Class::Forbidden),
        n if n > 64 => Some(Class::Above),
        64 if name.chars().any(|c| !c.is_ascii() || c.is_control()) => Some(Class::Odd),
        64 => Some(Class::Most),
        1 => Some(Class::Least),
        _ => None,
    }
}

/// The class of a kind: holding NUL, past 64 bytes, 64 bytes with a multi-byte or control
/// character, 64 bytes, empty.
fn kind_class(kind: &str) -> Option<Class> {
    match kind.len() {
        _ if kind.contains('\0') => Some(Class::Forbidden),
        n if n > 64 => Some(Class::Above),
        64 if kind.chars().any(|c| !c.is_ascii() || c.is_control()) => Some(Class::Odd),
        64 => Some(Class::Most),
        0 => Some(Class::Least),
        _ => None,
    }
}

/// The class of a name (`id`, `worker`): empty, holding NUL, past 256 bytes, 256 bytes with
/// a multi-byte or control character, 256 bytes, one byte.
fn name_class(name: &str) -> Option<Class> {
    match name.len() {
        0 => Some(Class::Below),
        _ if name.contains('\0') => Some(Class::Forbidden),
        n if n > 256 => Some(Class::Above),
        256 if name.chars().any(|c| !c.is_ascii() || c.is_control()) => Some(Class::Odd),
        256 => Some(Class::Most),
        1 => Some(Class::Least),
        _ => None,
    }
}

/// The class of a jitter: NaN, above 1, below 0, −0, 0, 1.
fn jitter_class(jitter: f64) -> Option<Class> {
    Some(match jitter {
        j if j.is_nan() => Class::Forbidden,
        j if j > 1.0 => Class::Above,
        j if j < 0.0 => Class::Below,
        j if j == 0.0 && j.is_sign_negative() => Class::Odd,
        0.0 => Class::Least,
        1.0 => Class::Most,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_cells_and_every_named_status_a_refusal_or_an_answer() {
        let cells = cells();
        for op in OpKind::ALL {
            assert!(cells.iter().any(|c| c.op == op), "{op:?} has no cell");
            if op.names_a_job() {
                for meets in Meets::ALL.into_iter().filter(|&m| m != Meets::Nothing) {
                    assert!(
                        cells
                            .iter()
                            .any(|c| c.op == op && c.meets == meets && c.answer != Answer::InvalidInput),
                        "{op:?} meeting {meets:?} has no answer"
                    );
                }
            }
        }
    }

    /// A few cells read straight from the SPEC's text, allowed or not.
    #[test]
    fn the_table_reads_as_the_spec() {
        let allowed = |op, meets, answer| allows(op, meets, answer);
        // 3.13, 6.25: a leased job, live or expired, gets a request; done and dead are not
        // cancellable; a tombstone is `pruned`.
        assert!(allowed(OpKind::Cancel, Meets::Expired, Answer::Cancelling));
        assert!(allowed(OpKind::Cancel, Meets::Tombstone, Answer::PrunedError));
        assert!(!allowed(OpKind::Cancel, Meets::Tombstone, Answer::NotFound));
        // 3.12, 3.4 under a request: the heartbeat is refused, a retryable report cancels.
        assert!(allowed(OpKind::Heartbeat, Meets::LiveCancelling, Answer::CancelledError));
        assert!(!allowed(OpKind::Heartbeat, Meets::LiveCancelling, Answer::Extended));
        assert!(allowed(OpKind::Complete, Meets::ExpiredCancelling, Answer::DeadCancelled));
        assert!(!allowed(OpKind::Complete, Meets::LiveCancelling, Answer::Retry));
        assert!(!allowed(OpKind::Claim, Meets::ExpiredCancelling, Answer::Claimed));
        assert!(allowed(OpKind::Reap, Meets::ExpiredCancelling, Answer::ReapedCancelled));
        // 3.14: a prune meets only ended jobs; a pruned id's fence fails as lease_lost.
        assert!(allowed(OpKind::Prune, Meets::Done, Answer::Pruned));
        assert!(!allowed(OpKind::Prune, Meets::Waiting, Answer::Pruned));
        assert!(allowed(OpKind::Complete, Meets::Tombstone, Answer::LeaseLost));
        assert!(allowed(OpKind::Get, Meets::Tombstone, Answer::TombstoneView));
        assert!(allowed(OpKind::Cancel, Meets::Waiting, Answer::Cancelled));
        assert!(!allowed(OpKind::Cancel, Meets::Live, Answer::Cancelled));
        assert!(allowed(OpKind::Cancel, Meets::Cancelled, Answer::NotCancellable));
        // 3.3.1: a pending job is never reaped as exhausted; an expired lease may be.
        assert!(!allowed(OpKind::Reap, Meets::Fresh, Answer::ReapedExhausted));
        assert!(allowed(OpKind::Claim, Meets::Expired, Answer::ReapedExhausted));
        assert!(!allowed(OpKind::Reap, Meets::Live, Answer::ReapedDeadline));
        // 6.37: a reap at its limit leaves jobs due to end as they are, never a live lease.
        assert!(allowed(OpKind::Claim, Meets::Fresh, Answer::LeftDue));
        assert!(allowed(OpKind::Reap, Meets::ExpiredCancelling, Answer::LeftDue));
        assert!(!allowed(OpKind::Reap, Meets::Live, Answer::LeftDue));
        assert!(!allowed(OpKind::Prune, Meets::Fresh, Answer::LeftDue));
        // 3.4: only a lease is completed; anything else is `lease_lost`.
        assert!(allowed(OpKind::Complete, Meets::Expired, Answer::Done));
        assert!(!allowed(OpKind::Complete, Meets::Waiting, Answer::Done));
        assert!(allowed(OpKind::Complete, Meets::Done, Answer::LeaseLost));
        assert!(allowed(OpKind::Complete, Meets::Missing, Answer::NotFound));
        // 3.6: only `dead` is redriven.
        assert!(allowed(OpKind::Redrive, Meets::Cancelled, Answer::Redriven));
        assert!(!allowed(OpKind::Redrive, Meets::Done, Answer::Redriven));
        // 3.1: a bad argument whatever the job.
        assert!(allowed(OpKind::Heartbeat, Meets::Missing, Answer::InvalidInput));
        assert!(!allowed(OpKind::Restart, Meets::Nothing, Answer::InvalidInput));
        assert!(!allowed(OpKind::Enqueue, Meets::Missing, Answer::Existing));
        // 3.18: only a pending job is made due; a tombstone is `pruned`.
        assert!(allowed(OpKind::RunNow, Meets::Waiting, Answer::Due));
        assert!(allowed(OpKind::RunNow, Meets::Fresh, Answer::DeadlinePassed));
        assert!(!allowed(OpKind::RunNow, Meets::Expired, Answer::Due));
        assert!(allowed(OpKind::RunNow, Meets::Expired, Answer::NotPending));
        assert!(allowed(OpKind::RunNow, Meets::Tombstone, Answer::PrunedError));
        assert!(!allowed(OpKind::RunNow, Meets::Done, Answer::DeadlinePassed));
        // 3.16, 3.17: refused only for their arguments.
        assert!(allowed(OpKind::Pause, Meets::Nothing, Answer::Paused));
        assert!(!allowed(OpKind::Resume, Meets::Nothing, Answer::Paused));
    }
}
