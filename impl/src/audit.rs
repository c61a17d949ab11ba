//! `audit`: reads the store and its history and checks SPEC section 4's invariants 1 to 6,
//! 11 to 14, on every job as it stands and on every transition the history recorded, and
//! the tombstones and kept counts against the rows.
//!
//! The schema's CHECK constraints and triggers already refuse most lies at write time; the
//! audit is the second look, for a file that was written by another build, edited by hand,
//! or restored from a backup. It trusts nothing it reads: words are parsed, not assumed, and
//! every finding is a [`Violation`] rather than an error, so that one bad row does not hide
//! the others.
//!
//! Reading a transition. History keeps, for each job, the state after every insert and
//! every update of a state column, with the operation's `now` (`at`) and the lease holder.
//! Between two consecutive entries exactly one operation ran, so its kind follows from the
//! pair of statuses (and, for two of them, the attempt or the reason), and each kind has its
//! rule (SPEC section 3):
//!
//! | from → to | operation | what must hold |
//! |---|---|---|
//! | — → pending | enqueue | attempts 0, redrives 0, `at` ≤ `available_at` = the row's `not_before` < deadline |
//! | pending/leased → leased | claim | attempts + 1; before it attempts < max_attempts; `at` < deadline; due (`available_at` ≤ `at`: for a lease, expired); before the first redrive, `at` ≥ `not_before` (4.12) |
//! | leased → leased, attempts kept | heartbeat | the same holder; `at` < deadline; the expiry never shrinks (4.11); no cancel request before it (4.13) |
//! | leased → leased, a cancel request made | cancel | the lease, its holder and the attempt kept |
//! | leased → pending | retryable | attempts kept; `at` ≤ `available_at` < deadline |
//! | leased → done | ok | attempts kept |
//! | leased → dead | completion or reap | attempts kept; `exhausted` only with attempts = max_attempts; `deadline` by a reap only once the lease expired and the deadline came — or by a completion; `cancelled` only with a cancel request standing (4.13) |
//! | pending → dead | reap | reason `deadline`, deadline ≤ `at`, attempts kept |
//! | pending → dead(cancelled) | cancel | attempts kept |
//! | dead → pending | redrive | redrives + 1, attempts kept, `available_at` = `at` < new deadline, max_attempts > attempts |
//! | pending → pending | run_now | `available_at` = `at`, earlier than before, before the deadline |
//!
//! Any other pair — leaving `done`, leaving `dead` but by a redrive, `pending → done` —
//! breaks invariant 3. Outside a redrive, `deadline`, `max_attempts` and
//! `redrives` never change.
//!
//! The checks are tables of rules, one per thing a rule looks at — any state ([`STATE`]), the
//! row ([`ROW`]), the enqueue ([`ENQUEUE`]), a transition ([`TRANSITION`]), the whole history
//! against the row ([`HISTORY`]) — each rule a [`Check`] and a function that says what broke
//! it; one loop applies a table. Statuses and reasons are read as the typed [`Status`] and
//! [`DeadReason`]; a word neither type knows is itself a finding.
//!
//! The checks know nothing of SQL: a store reads its rows into [`Stored`] and [`Entry`] and
//! hands each job to [`Audit::job`] (and each vanished job's history to [`Audit::orphan`]),
//! and its attempts' records to [`Audit::records`] (`audit/notes.rs`, which also checks the
//! tallies). The SQLite reads live here, next to the queue they read; PostgreSQL's in
//! `pg/audit.rs`.

use std::fmt;

use rusqlite::types::{FromSql, FromSqlResult, ValueRef};
use rusqlite::{Row, Transaction};

use crate::error::Result;
use crate::input::MAX_ATTEMPTS;
use crate::job::{DeadReason, Status};
use crate::queue::store::Queue;

mod notes;
pub(crate) mod notes_sql;

/// Which promise a [`Violation`] breaks: SPEC section 4's invariants 1 to 6 and 11 to 14, the
/// kept counts, and the history being a faithful record of the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Check {
    /// 1. `attempts` counts claims: never down, moved only by a claim, at most `max_attempts`.
    AttemptsCountClaims,
    /// 2. A deadline changes only in a redrive, which increments `redrives`.
    DeadlineOnlyByRedrive,
    /// 3. No silent drop: every job stays, in one known status, `dead` with a reason, and
    ///    leaves `pending`/`leased` only by the rules.
    NoSilentDrop,
    /// 4. A claim happens strictly before the deadline and only with attempts to spare.
    ClaimWithinBudget,
    /// 5. At most one unexpired lease: no claim of a job while its lease is live.
    OneLiveLease,
    /// 6. A pending job has `available_at` < `deadline`.
    PendingBeforeDeadline,
    /// 11. A lease ends by its deadline plus one lease: heartbeats only strictly before the
    ///     deadline, and they never shorten a lease.
    LeaseEndsByDeadline,
    /// 12. A scheduled job waits: no claim before its `not_before` until its first redrive.
    ScheduledJobWaits,
    /// The history is complete and agrees with the job's row.
    HistoryMatchesRow,
    /// 13. A cancel request stops the job: it stands only on a leased job, and only a
    ///     request lets a leased job end `dead(cancelled)`.
    CancelStopsTheJob,
    /// 14. A pruned id never runs again: a tombstone has no job row and no history left.
    PrunedStaysPruned,
    /// The counts `stats` reads agree with the rows they count.
    CountsMatchRows,
    /// Every attempt the history records has its record (SPEC 6.36), begun and ended as the
    /// history says, and no record stands for an attempt no claim began.
    AttemptsRecorded,
    /// The tallies (SPEC 6.36) count at least what the store still holds: every job and
    /// tombstone enqueued, every attempt claimed, every dead one's death, every prune.
    TalliesCoverStore,
}

impl Check {
    /// The invariant's number in SPEC section 4, if it is one of them.
    pub fn invariant(self) -> Option<u8> {
        Some(match self {
            Check::AttemptsCountClaims => 1,
            Check::DeadlineOnlyByRedrive => 2,
            Check::NoSilentDrop => 3,
            Check::ClaimWithinBudget => 4,
            Check::OneLiveLease => 5,
            Check::PendingBeforeDeadline => 6,
            Check::LeaseEndsByDeadline => 11,
            Check::ScheduledJobWaits => 12,
            Check::CancelStopsTheJob => 13,
            Check::PrunedStaysPruned => 14,
            Check::HistoryMatchesRow
            | Check::CountsMatchRows
            | Check::AttemptsRecorded
            | Check::TalliesCoverStore => return None,
        })
    }

    /// A short name, as `audit` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Check::AttemptsCountClaims => "attempts count claims",
            Check::DeadlineOnlyByRedrive => "deadline moves only by redrive",
            Check::NoSilentDrop => "no silent drop",
            Check::ClaimWithinBudget => "claims within budget",
            Check::OneLiveLease => "one live lease",
            Check::PendingBeforeDeadline => "pending before deadline",
            Check::LeaseEndsByDeadline => "a lease ends by its deadline plus one lease",
            Check::ScheduledJobWaits => "a scheduled job waits",
            Check::HistoryMatchesRow => "history matches row",
            Check::CancelStopsTheJob => "a cancel request stops the job",
            Check::PrunedStaysPruned => "a pruned id never runs again",
            Check::CountsMatchRows => "counts match rows",
            Check::AttemptsRecorded => "attempts' records match history",
            Check::TalliesCoverStore => "tallies cover the store",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.invariant() {
            Some(n) => write!(f, "invariant {n} ({})", self.name()),
            None => f.write_str(self.name()),
        }
    }
}

/// One broken promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which promise.
    pub check: Check,
    /// The job it is about.
    pub job: String,
    /// The history entry (its `n`) it is about; `None` for the job's row as it stands.
    pub entry: Option<i64>,
    /// What was found, in words.
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.entry {
            Some(n) => write!(f, "job {:?} history #{n}: {}: {}", self.job, self.check, self.what),
            None => write!(f, "job {:?}: {}: {}", self.job, self.check, self.what),
        }
    }
}

/// What an audit read and found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Audit {
    /// Jobs read.
    pub jobs: u64,
    /// History entries read.
    pub entries: u64,
    /// Tombstones read.
    pub tombstones: u64,
    /// Every broken promise found; empty for a sound database.
    pub violations: Vec<Violation>,
}

impl Audit {
    /// No violation found.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}

/// A word column (a status, a reason) as read: the typed word, or, when the type cannot read
/// it, what the column held instead. An unreadable word is a finding, never an error that
/// would stop the audit: the audit reads files it cannot trust.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Word<T> {
    Known(T),
    Unknown(String),
}

impl<T: FromSql> FromSql for Word<T> {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        Ok(match T::column_result(value) {
            Ok(word) => Word::Known(word),
            Err(_) => Word::Unknown(held(value)),
        })
    }
}

impl<T: std::str::FromStr> Word<T> {
    /// A word read as text: the typed word, or the text itself when the type does not know
    /// it (a store whose column holds only text).
    #[cfg(feature = "postgres")]
    pub(crate) fn parsed(raw: String) -> Word<T> {
        match raw.parse() {
            Ok(word) => Word::Known(word),
            Err(_) => Word::Unknown(raw),
        }
    }
}

/// What a column held, in words, for a finding.
fn held(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(r) => r.to_string(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => format!("a blob of {} bytes", b.len()),
    }
}

impl<T: Copy + PartialEq> Word<T> {
    /// Whether this is `word`; an unreadable word is no word.
    fn is(&self, word: T) -> bool {
        matches!(self, Word::Known(w) if *w == word)
    }

    fn known(&self) -> Option<T> {
        match self {
            Word::Known(w) => Some(*w),
            Word::Unknown(_) => None,
        }
    }
}

impl<T: fmt::Display> fmt::Display for Word<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Word::Known(w) => w.fmt(f),
            Word::Unknown(raw) => f.write_str(raw),
        }
    }
}

/// Quoted, as a column's text: findings show `"pending"` and `"frozen"` alike.
impl<T: fmt::Display> fmt::Debug for Word<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

/// A job's state as a row or a history entry holds it, read without trusting it.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub(crate) status: Word<Status>,
    pub(crate) attempts: i64,
    pub(crate) max_attempts: i64,
    pub(crate) available_at: Option<i64>,
    pub(crate) deadline: i64,
    pub(crate) reason: Option<Word<DeadReason>>,
    pub(crate) redrives: i64,
    /// The row's owner, or the entry's lease holder.
    pub(crate) worker: Option<String>,
    /// Whether a cancel request stood (SPEC 3.13).
    pub(crate) cancel_requested: bool,
}

impl State {
    fn is(&self, status: Status) -> bool {
        self.status.is(status)
    }

    /// `pending` or `leased`: a job that still holds an `available_at`.
    fn open(&self) -> bool {
        self.is(Status::Pending) || self.is(Status::Leased)
    }
}

/// A job's row: its state, when its current lease began, and its schedule.
pub(crate) struct Stored {
    pub(crate) id: String,
    pub(crate) state: State,
    pub(crate) claimed_at: Option<i64>,
    /// The first `available_at` the enqueue gave it.
    pub(crate) not_before: i64,
    /// When it became done or dead; `None` while open.
    pub(crate) ended_at: Option<i64>,
}

/// One history entry.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) n: i64,
    /// `None` for an insert: the enqueue, or a second insert of the same id.
    pub(crate) from: Option<Word<Status>>,
    pub(crate) at: i64,
    pub(crate) state: State,
}

impl Entry {
    /// The enqueue's entry: an insert that left the job pending.
    fn is_enqueue(&self) -> bool {
        self.from.is_none() && self.state.is(Status::Pending)
    }
}

/// The operation a recorded transition was, read from its pair of statuses (the table at the
/// top of this file). A pair no operation makes has no `Move`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    /// pending/leased → leased, one more attempt.
    Claim,
    /// leased → leased, the attempt kept: a heartbeat.
    Extend,
    /// leased → leased, the attempt and the lease kept, a cancel request made.
    Request,
    /// leased → pending.
    Retry,
    /// leased → done.
    Done,
    /// leased → dead: a completion, or a reap of an expired lease.
    Close,
    /// pending → dead, but for a cancel.
    Reap,
    /// pending → dead(cancelled).
    Cancel,
    /// dead → pending.
    Redrive,
    /// pending → pending: an operator's run_now (SPEC 3.18).
    RunNow,
}

impl Move {
    /// The move from `prev` (of status `from`) to `cur` (of status `to`). Two pairs of
    /// statuses are two operations each: leased → leased is a heartbeat when the attempt is
    /// kept (a claim always adds one), and pending → dead is a cancel when the reason says so.
    fn of(from: Status, to: Status, prev: &State, cur: &State) -> Option<Move> {
        use Status::{Dead, Done, Leased, Pending};
        let cancelled = cur.reason.as_ref().is_some_and(|r| r.is(DeadReason::Cancelled));
        Some(match (from, to) {
            (Leased, Leased)
                if prev.attempts == cur.attempts && !prev.cancel_requested && cur.cancel_requested =>
            {
                Move::Request
            }
            (Leased, Leased) if prev.attempts == cur.attempts => Move::Extend,
            (Pending | Leased, Leased) => Move::Claim,
            (Leased, Pending) => Move::Retry,
            (Leased, Done) => Move::Done,
            (Leased, Dead) => Move::Close,
            (Pending, Dead) if cancelled => Move::Cancel,
            (Pending, Dead) => Move::Reap,
            (Dead, Pending) => Move::Redrive,
            (Pending, Pending) => Move::RunNow,
            _ => return None,
        })
    }
}

/// Two consecutive entries of one job, the second an update (it has a `from`).
struct Step<'a> {
    prev: &'a Entry,
    cur: &'a Entry,
    from: &'a Word<Status>,
    /// `None` when either status is unreadable or the pair is no operation's.
    kind: Option<Move>,
}

impl<'a> Step<'a> {
    /// The step from `prev` to `cur`, unless `cur` is an insert (and so no transition).
    fn new(prev: &'a Entry, cur: &'a Entry) -> Option<Step<'a>> {
        let from = cur.from.as_ref()?;
        let kind = match (from.known(), cur.state.status.known()) {
            (Some(from), Some(to)) => Move::of(from, to, &prev.state, &cur.state),
            _ => None,
        };
        Some(Step { prev, cur, from, kind })
    }

    fn p(&self) -> &State {
        &self.prev.state
    }

    fn c(&self) -> &State {
        &self.cur.state
    }

    fn is(&self, kind: Move) -> bool {
        self.kind == Some(kind)
    }
}

/// A job's row and everything its history recorded.
struct Recorded<'a> {
    row: &'a State,
    /// The row's `not_before`.
    not_before: i64,
    /// The row's `ended_at`.
    ended_at: Option<i64>,
    entries: &'a [Entry],
}

impl Recorded<'_> {
    /// The claims recorded, as consecutive pairs of entries: every move to leased but a
    /// heartbeat's.
    fn claims(&self) -> impl Iterator<Item = &Entry> {
        self.entries.windows(2).filter_map(|pair| {
            let step = Step::new(&pair[0], &pair[1])?;
            step.is(Move::Claim).then_some(&pair[1])
        })
    }
}

/// One promise and how it is broken: the function says what was found in the subject it is
/// given, or `None` if the promise holds. `F` is that function's type.
type Rule<F> = (Check, F);

/// A rule's function on a subject that owns its data.
type Judge<T> = fn(&T) -> Option<String>;
/// A rule's function on a [`Step`], of any lifetime (a `Judge<Step<'_>>` would fix one).
type JudgeStep = fn(&Step<'_>) -> Option<String>;
/// A rule's function on a [`Recorded`], of any lifetime.
type JudgeRecorded = fn(&Recorded<'_>) -> Option<String>;

/// What must hold of any state, stored or recorded.
const STATE: &[Rule<Judge<State>>] = &[
    (Check::NoSilentDrop, |s| match &s.status {
        Word::Unknown(raw) => Some(format!("unknown status {raw:?}")),
        Word::Known(_) => None,
    }),
    (Check::AttemptsCountClaims, |s| {
        (s.attempts < 0).then(|| format!("attempts {} is negative", s.attempts))
    }),
    (Check::AttemptsCountClaims, |s| {
        (s.attempts > s.max_attempts)
            .then(|| format!("attempts {} exceed max_attempts {}", s.attempts, s.max_attempts))
    }),
    (Check::ClaimWithinBudget, |s| {
        (s.max_attempts < 1 || s.max_attempts > MAX_ATTEMPTS as i64)
            .then(|| format!("max_attempts {} outside 1 … 2^31-1", s.max_attempts))
    }),
    // Dead exactly when it has a reason, and the reason one of the three.
    (Check::NoSilentDrop, |s| match (&s.reason, s.is(Status::Dead)) {
        (None, true) => Some("dead without a reason".into()),
        (Some(Word::Unknown(raw)), true) => Some(format!("dead for an unknown reason {raw:?}")),
        (Some(r), false) => Some(format!("{} with a dead reason {r:?}", s.status)),
        (None, false) | (Some(Word::Known(_)), true) => None,
    }),
    (Check::NoSilentDrop, |s| match (s.open(), s.available_at) {
        (true, None) => Some(format!("{} open without an available_at", s.status)),
        (false, Some(_)) => Some(format!("{} closed with an available_at", s.status)),
        _ => None,
    }),
    (Check::PendingBeforeDeadline, |s| match s.available_at {
        Some(at) if s.is(Status::Pending) && at >= s.deadline => {
            Some(format!("pending with available_at {at} not before the deadline {}", s.deadline))
        }
        _ => None,
    }),
];

/// What must hold of a job's row beyond its state.
const ROW: &[Rule<Judge<Stored>>] = &[(Check::NoSilentDrop, |r| {
    (r.state.is(Status::Leased) && (r.state.worker.is_none() || r.claimed_at.is_none()))
        .then(|| "leased without a lease holder and claim time".into())
})];

/// What must hold of a job's first history entry: its enqueue.
const ENQUEUE: &[Rule<Judge<Entry>>] = &[
    (Check::HistoryMatchesRow, |e| {
        let from = e.from.as_ref().map_or_else(|| "nothing".to_owned(), ToString::to_string);
        (!e.is_enqueue()).then(|| format!("first entry is {from} → {}, not the enqueue", e.state.status))
    }),
    (Check::AttemptsCountClaims, |e| {
        (e.is_enqueue() && (e.state.attempts != 0 || e.state.redrives != 0))
            .then(|| format!("enqueued with attempts {} and redrives {}", e.state.attempts, e.state.redrives))
    }),
    (Check::NoSilentDrop, |e| {
        (e.is_enqueue() && e.state.available_at.is_none_or(|at| at < e.at))
            .then(|| format!("enqueued at {} with available_at {:?}", e.at, e.state.available_at))
    }),
];

/// What must hold of every recorded transition (SPEC section 3, by operation).
const TRANSITION: &[Rule<JudgeStep>] = &[
    (Check::HistoryMatchesRow, |s| {
        (*s.from != s.p().status)
            .then(|| format!("from {}, but the previous entry left the job {}", s.from, s.p().status))
    }),
    // Invariant 1: attempts move only by one, only in a claim.
    (Check::AttemptsCountClaims, |s| {
        let claim = s.is(Move::Claim);
        let expected = if claim { s.p().attempts + 1 } else { s.p().attempts };
        let by = if claim { "a claim" } else { "no claim" };
        (s.c().attempts != expected).then(|| {
            format!(
                "attempts {} → {} by {by} ({} → {})",
                s.p().attempts,
                s.c().attempts,
                s.from,
                s.c().status
            )
        })
    }),
    // Invariant 2 and the budget: only a redrive moves the deadline, redrives, max_attempts.
    (Check::DeadlineOnlyByRedrive, |s| only_by_redrive(s, "deadline", |x| x.deadline)),
    (Check::DeadlineOnlyByRedrive, |s| only_by_redrive(s, "redrives", |x| x.redrives)),
    (Check::ClaimWithinBudget, |s| only_by_redrive(s, "max_attempts", |x| x.max_attempts)),
    // Invariant 3: every move is some operation's.
    (Check::NoSilentDrop, |s| {
        s.kind.is_none().then(|| format!("{} → {} is no operation's move", s.from, s.c().status))
    }),
    // Claims: invariant 4, invariant 5, and due at all.
    (Check::ClaimWithinBudget, |s| {
        (s.is(Move::Claim) && s.p().attempts >= s.p().max_attempts).then(|| {
            format!("claimed with {} of {} attempts already spent", s.p().attempts, s.p().max_attempts)
        })
    }),
    (Check::ClaimWithinBudget, |s| {
        (s.is(Move::Claim) && s.cur.at >= s.p().deadline)
            .then(|| format!("claimed at {}, not before the deadline {}", s.cur.at, s.p().deadline))
    }),
    (Check::OneLiveLease, |s| {
        let live = not_yet_due(s).filter(|_| s.p().is(Status::Leased))?;
        Some(format!(
            "claimed by {:?} at {} while {:?}'s lease ran until {live}",
            s.c().worker,
            s.cur.at,
            s.p().worker
        ))
    }),
    (Check::NoSilentDrop, |s| {
        let due = not_yet_due(s).filter(|_| !s.p().is(Status::Leased))?;
        Some(format!("claimed at {} before it was due at {due}", s.cur.at))
    }),
    (Check::OneLiveLease, |s| {
        (s.is(Move::Claim) && s.c().worker.is_none()).then(|| "a lease without a holder".into())
    }),
    (Check::OneLiveLease, |s| {
        (s.is(Move::Claim) && s.c().available_at.is_none_or(|until| until <= s.cur.at))
            .then(|| format!("a lease until {:?}, not after the claim at {}", s.c().available_at, s.cur.at))
    }),
    // A retry reserves a time not before its completion.
    (Check::NoSilentDrop, |s| {
        (s.is(Move::Retry) && s.c().available_at.is_some_and(|a| a < s.cur.at)).then(|| {
            format!("retry reserved for {:?}, before the completion at {}", s.c().available_at, s.cur.at)
        })
    }),
    // `exhausted` only once every attempt is spent.
    (Check::NoSilentDrop, |s| {
        let c = s.c();
        let early =
            c.reason.as_ref().is_some_and(|r| r.is(DeadReason::Exhausted)) && c.attempts < c.max_attempts;
        (s.is(Move::Close) && early)
            .then(|| format!("dead as exhausted with {} of {} attempts spent", c.attempts, c.max_attempts))
    }),
    // A pending job dies only by a reap at its deadline.
    (Check::NoSilentDrop, |s| {
        let c = s.c();
        let by_reap = c.reason.as_ref().is_some_and(|r| r.is(DeadReason::Deadline)) && s.cur.at >= c.deadline;
        (s.is(Move::Reap) && !by_reap).then(|| {
            let reason = c.reason.as_ref().map_or_else(|| "no reason".to_owned(), |r| format!("{r:?}"));
            format!(
                "pending → dead ({reason}) at {}, deadline {}: only a reap at the deadline does that",
                s.cur.at, c.deadline
            )
        })
    }),
    // Redrives: one more, a deadline after it, due at once, attempts added.
    (Check::DeadlineOnlyByRedrive, |s| {
        (s.is(Move::Redrive) && s.c().redrives != s.p().redrives + 1)
            .then(|| format!("redrive took redrives {} → {}, not + 1", s.p().redrives, s.c().redrives))
    }),
    (Check::DeadlineOnlyByRedrive, |s| {
        (s.is(Move::Redrive) && s.c().deadline <= s.cur.at)
            .then(|| format!("redriven at {} with a deadline {} not after it", s.cur.at, s.c().deadline))
    }),
    (Check::NoSilentDrop, |s| {
        (s.is(Move::Redrive) && s.c().available_at != Some(s.cur.at))
            .then(|| format!("redriven at {} with available_at {:?}", s.cur.at, s.c().available_at))
    }),
    // run_now: due at its own time, earlier than before, and before the deadline (SPEC 3.18).
    (Check::NoSilentDrop, |s| {
        let (before, after) = (s.p().available_at, s.c().available_at);
        let brought_forward = after == Some(s.cur.at) && before.is_some_and(|b| b > s.cur.at);
        (s.is(Move::RunNow) && (!brought_forward || s.cur.at >= s.c().deadline)).then(|| {
            format!(
                "run_now at {} moved available_at {before:?} → {after:?}, deadline {}",
                s.cur.at,
                s.c().deadline
            )
        })
    }),
    // Heartbeats: the holder's own, strictly before the deadline, never shortening the lease.
    (Check::OneLiveLease, |s| {
        (s.is(Move::Extend) && s.c().worker != s.p().worker)
            .then(|| format!("{:?} extended the lease {:?} holds", s.c().worker, s.p().worker))
    }),
    (Check::LeaseEndsByDeadline, |s| {
        (s.is(Move::Extend) && s.cur.at >= s.c().deadline)
            .then(|| format!("a lease extended at {}, not before the deadline {}", s.cur.at, s.c().deadline))
    }),
    (Check::LeaseEndsByDeadline, |s| {
        let (before, after) = (s.p().available_at, s.c().available_at);
        (s.is(Move::Extend) && after < before)
            .then(|| format!("a heartbeat at {} shortened the lease from {before:?} to {after:?}", s.cur.at))
    }),
    // A leased job ends cancelled only once asked to stop (SPEC 3.13).
    (Check::CancelStopsTheJob, |s| {
        let cancelled = s.c().reason.as_ref().is_some_and(|r| r.is(DeadReason::Cancelled));
        (s.is(Move::Close) && cancelled && !s.p().cancel_requested)
            .then(|| format!("a leased job cancelled at {} with no cancel request", s.cur.at))
    }),
    // A request stands only on a leased job, and only a request makes one; it changes
    // nothing else of the lease.
    (Check::CancelStopsTheJob, |s| {
        (s.c().cancel_requested && !s.c().is(Status::Leased))
            .then(|| format!("a cancel request on a {} job", s.c().status))
    }),
    (Check::CancelStopsTheJob, |s| {
        (s.is(Move::Request) && (s.c().available_at != s.p().available_at || s.c().worker != s.p().worker))
            .then(|| "a cancel request moved the lease".into())
    }),
    (Check::CancelStopsTheJob, |s| {
        (s.p().cancel_requested && s.is(Move::Extend))
            .then(|| format!("a lease extended at {} after a cancel request", s.cur.at))
    }),
    (Check::CancelStopsTheJob, |s| {
        (s.p().cancel_requested && s.is(Move::Retry))
            .then(|| format!("a retry at {} after a cancel request", s.cur.at))
    }),
    (Check::ClaimWithinBudget, |s| {
        (s.is(Move::Redrive) && s.c().max_attempts <= s.c().attempts).then(|| {
            format!(
                "redriven with max_attempts {} for {} spent: no attempt added",
                s.c().max_attempts,
                s.c().attempts
            )
        })
    }),
];

/// What must hold between a job's row and its whole history.
const HISTORY: &[Rule<JudgeRecorded>] = &[
    (Check::HistoryMatchesRow, |h| {
        h.entries.is_empty().then(|| "no recorded history (not even its enqueue)".into())
    }),
    (Check::AttemptsCountClaims, |h| {
        let claims = h.claims().count() as i64;
        (!h.entries.is_empty() && h.row.attempts != claims)
            .then(|| format!("attempts {} but {claims} claims recorded", h.row.attempts))
    }),
    (Check::HistoryMatchesRow, |h| {
        let first = h.entries.first().filter(|e| e.is_enqueue())?;
        (first.state.available_at != Some(h.not_before)).then(|| {
            format!(
                "enqueued with available_at {:?}, but the row's not_before is {}",
                first.state.available_at, h.not_before
            )
        })
    }),
    // Invariant 12: until the first redrive or run_now (the operator's say replaces the
    // schedule), no claim before `not_before`.
    (Check::ScheduledJobWaits, |h| {
        let first_redrive = h
            .entries
            .windows(2)
            .find(|pair| {
                Step::new(&pair[0], &pair[1]).is_some_and(|s| s.is(Move::Redrive) || s.is(Move::RunNow))
            })
            .map_or(i64::MAX, |pair| pair[1].n);
        let early = h.claims().find(|e| e.n < first_redrive && e.at < h.not_before)?;
        Some(format!("claimed at {} (#{}), before its not_before {}", early.at, early.n, h.not_before))
    }),
    // A job ended when its last transition ended it: `ended_at` is that entry's time.
    (Check::HistoryMatchesRow, |h| {
        let last = h.entries.last()?;
        let ended = !h.row.open();
        let expected = ended.then_some(last.at);
        (h.ended_at != expected).then(|| {
            format!(
                "ended_at {:?}, but the job {} at {}",
                h.ended_at,
                if ended { "ended" } else { "is open; last moved" },
                last.at
            )
        })
    }),
    (Check::HistoryMatchesRow, |h| {
        let last = h.entries.last()?;
        let differ: Vec<String> =
            SAME_AS_LAST_ENTRY.iter().filter_map(|field| field(h.row, &last.state)).collect();
        (!differ.is_empty()).then(|| {
            format!("the row differs from its last history entry #{}: {}", last.n, differ.join(", "))
        })
    }),
];

/// The columns a row and its last history entry must agree on, each compared the same way.
/// (`ended_at` is checked apart: `HISTORY`'s last rule.)
const SAME_AS_LAST_ENTRY: &[fn(&State, &State) -> Option<String>] = &[
    |r, l| differ("status", &r.status, &l.status),
    |r, l| differ("attempts", r.attempts, l.attempts),
    |r, l| differ("max_attempts", r.max_attempts, l.max_attempts),
    |r, l| differ("available_at", r.available_at, l.available_at),
    |r, l| differ("deadline", r.deadline, l.deadline),
    |r, l| differ("dead_reason", &r.reason, &l.reason),
    |r, l| differ("redrives", r.redrives, l.redrives),
    |r, l| differ("cancel_requested", r.cancel_requested, l.cancel_requested),
    // The owner is the row's only while it is leased; a finished job keeps no holder.
    |r, l| if r.is(Status::Leased) { differ("owner", &r.worker, &l.worker) } else { None },
];

/// `field` as the row holds it against the last entry, if they differ.
fn differ<T: PartialEq + fmt::Debug>(field: &str, row: T, last: T) -> Option<String> {
    (row != last).then(|| format!("{field} {row:?} vs {last:?}"))
}

/// A column that only a redrive may change, changed by another move.
fn only_by_redrive(s: &Step<'_>, field: &str, value: fn(&State) -> i64) -> Option<String> {
    let (before, after) = (value(s.p()), value(s.c()));
    (!s.is(Move::Redrive) && before != after)
        .then(|| format!("{field} {before} → {after} without a redrive ({} → {})", s.from, s.c().status))
}

/// A claim of a job whose `available_at` (a reservation, or a lease's expiry) had not come:
/// that time.
fn not_yet_due(s: &Step<'_>) -> Option<i64> {
    s.p().available_at.filter(|&due| s.is(Move::Claim) && due > s.cur.at)
}

const JOBS: &str = "
    SELECT id, status, attempts, max_attempts, available_at, deadline, dead_reason, redrives,
           owner, claimed_at, not_before, ended_at, cancel_requested, seq
    FROM jobs ORDER BY seq";

/// A row of [`JOBS`].
fn stored(row: &Row<'_>) -> rusqlite::Result<Stored> {
    Ok(Stored {
        id: row.get(0)?,
        state: State {
            status: row.get(1)?,
            attempts: row.get(2)?,
            max_attempts: row.get(3)?,
            available_at: row.get(4)?,
            deadline: row.get(5)?,
            reason: row.get(6)?,
            redrives: row.get(7)?,
            worker: row.get(8)?,
            cancel_requested: row.get(12)?,
        },
        claimed_at: row.get(9)?,
        not_before: row.get(10)?,
        ended_at: row.get(11)?,
    })
}

const HISTORY_OF: &str = "
    SELECT n, from_status, to_status, attempt, max_attempts, deadline, available_at, redrives,
           reason, worker, at, cancel_requested
    FROM history WHERE job = ?1 ORDER BY n";

/// A row of [`HISTORY_OF`].
fn entry(row: &Row<'_>) -> rusqlite::Result<Entry> {
    Ok(Entry {
        n: row.get(0)?,
        from: row.get(1)?,
        at: row.get(10)?,
        state: State {
            status: row.get(2)?,
            attempts: row.get(3)?,
            max_attempts: row.get(4)?,
            deadline: row.get(5)?,
            available_at: row.get(6)?,
            redrives: row.get(7)?,
            reason: row.get(8)?,
            worker: row.get(9)?,
            cancel_requested: row.get(11)?,
        },
    })
}

/// History of ids no row holds: a job that vanished.
const ORPHANS: &str = "
    SELECT job, min(n), count(*) FROM history WHERE job NOT IN (SELECT id FROM jobs) GROUP BY job";

impl Queue {
    /// Checks SPEC section 4's invariants 1 to 6 and 11 to 14 on every job's row and on every recorded
    /// transition, in one read snapshot. Changes nothing, and so borrows the queue shared.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// q.claim("w1", 10)?;
    /// let audit = q.audit()?;
    /// assert!(audit.is_clean(), "{:?}", audit.violations);
    /// assert_eq!((audit.jobs, audit.entries), (1, 2));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn audit(&self) -> Result<Audit> {
        self.read(audit)
    }
}

/// Reads every job with its history and its attempts' records. The history is looked up job
/// by job (an index lookup each); the records are read in one pass beside the jobs, both in
/// `seq` order ([`notes_sql::RECORDS`]), because before an upgrade `attempts` is a view over
/// the whole history (`upgrade::read_old`) that SQLite computes afresh for every statement it
/// runs: looked up job by job, the audit of a schema 3 file cost the square of its size.
fn audit(tx: &Transaction<'_>) -> Result<Audit> {
    let mut found = Audit::default();
    let mut jobs = tx.prepare(JOBS)?;
    let mut history = tx.prepare(HISTORY_OF)?;
    let mut records = tx.prepare(notes_sql::RECORDS)?;
    let mut records = records.query([])?;
    let mut next_record = records.next()?.map(notes_sql::record_of_seq).transpose()?;
    let mut rows = jobs.query([])?;
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(13)?;
        let row = stored(row)?;
        let entries = history.query_map([&row.id], entry)?.collect::<rusqlite::Result<Vec<_>>>()?;
        found.job(&row, &entries);
        let mut kept = Vec::new();
        while let Some((of, record)) = next_record.take_if(|(of, _)| *of <= seq) {
            // A record of a job before this one was that job's: both are read in seq order.
            if of == seq {
                kept.push(record);
            }
            next_record = records.next()?.map(notes_sql::record_of_seq).transpose()?;
        }
        found.records(&row, &entries, &kept);
    }
    let mut left = tx.prepare(notes_sql::RECORDS_LEFT)?;
    let mut rows = left.query([])?;
    while let Some(row) = rows.next()? {
        found.records_left(row.get(0)?, row.get(1)?, row.get(2)?);
    }
    let mut floors = tx.prepare(&notes_sql::floors(notes_sql::KEPT))?;
    let mut rows = floors.query([])?;
    while let Some(row) = rows.next()? {
        found.tally_short(row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, None);
    }
    let mut floors = tx.prepare(&notes_sql::kind_floors())?;
    let mut rows = floors.query([])?;
    while let Some(row) = rows.next()? {
        found.tally_short(row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, Some(row.get(5)?));
    }
    let mut orphans = tx.prepare(ORPHANS)?;
    let mut rows = orphans.query([])?;
    while let Some(row) = rows.next()? {
        found.orphan(row.get(0)?, row.get(1)?, row.get(2)?);
    }
    found.tombstones = tx.query_row(TOMBSTONES, [], |row| row.get(0))?;
    let mut shared = tx.prepare(TOMBSTONES_WITH_A_JOB)?;
    let mut rows = shared.query([])?;
    while let Some(row) = rows.next()? {
        found.tombstone_with_a_job(row.get(0)?);
    }
    let mut counts = tx.prepare(COUNTS_AGAINST_ROWS)?;
    let mut rows = counts.query([])?;
    while let Some(row) = rows.next()? {
        found.count_differs(row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?);
    }
    Ok(found)
}

const TOMBSTONES: &str = "SELECT count(*) FROM tombstones";

/// Tombstones whose id a job row also holds: a pruned id that could run again.
const TOMBSTONES_WITH_A_JOB: &str = "SELECT id FROM tombstones WHERE id IN (SELECT id FROM jobs) ORDER BY id";

/// Every (queue, status, reason) whose kept count differs from the rows: the kept counts
/// against the jobs and tombstones counted afresh, both ways.
const COUNTS_AGAINST_ROWS: &str = "
    WITH fresh (queue, status, reason, n) AS (
        SELECT queue, status, coalesce(dead_reason, ''), count(*) FROM jobs GROUP BY 1, 2, 3
        UNION ALL
        SELECT queue, 'pruned_' || status, '', count(*) FROM tombstones GROUP BY 1, 2),
    kept (queue, status, reason, n) AS (SELECT queue, status, reason, n FROM counts WHERE n <> 0)
    SELECT coalesce(f.queue, k.queue), coalesce(f.status, k.status), coalesce(f.reason, k.reason),
           coalesce(k.n, 0), coalesce(f.n, 0)
    FROM fresh f FULL JOIN kept k USING (queue, status, reason)
    WHERE coalesce(k.n, 0) <> coalesce(f.n, 0)";

impl Audit {
    /// Counts one job and its history, and checks every rule on them: what a store calls for
    /// each row it read, with that job's history entries in the order they were recorded.
    pub(crate) fn job(&mut self, row: &Stored, entries: &[Entry]) {
        self.jobs += 1;
        self.entries += entries.len() as u64;
        Findings { id: &row.id, violations: &mut self.violations }.job(row, entries);
    }

    /// Reports a tombstone whose id a job row also holds.
    pub(crate) fn tombstone_with_a_job(&mut self, id: String) {
        self.violations.push(Violation {
            check: Check::PrunedStaysPruned,
            job: id,
            entry: None,
            what: "a tombstone and a job row hold the same id".into(),
        });
    }

    /// Reports a kept count (`stats`') that differs from the rows it counts.
    pub(crate) fn count_differs(
        &mut self,
        queue: String,
        status: String,
        reason: String,
        kept: i64,
        rows: i64,
    ) {
        let of = if reason.is_empty() { status } else { format!("{status}({reason})") };
        self.violations.push(Violation {
            check: Check::CountsMatchRows,
            job: queue.clone(),
            entry: None,
            what: format!("queue {queue:?} counts {kept} {of} but holds {rows}"),
        });
    }

    /// Counts `count` history entries of a job no row holds (the first of them `first`), and
    /// reports the job as dropped.
    pub(crate) fn orphan(&mut self, id: String, first: i64, count: i64) {
        self.entries += count.max(0) as u64;
        self.violations.push(Violation {
            check: Check::NoSilentDrop,
            job: id,
            entry: Some(first),
            what: format!("{count} history entries for a job that is no longer in the store"),
        });
    }
}

/// The findings about one job.
struct Findings<'a> {
    id: &'a str,
    violations: &'a mut Vec<Violation>,
}

impl Findings<'_> {
    /// Every table's rules on the row, then on the history, in the order an operator reads a
    /// job: as it stands, its enqueue, each recorded state, each transition, the whole.
    fn job(&mut self, row: &Stored, entries: &[Entry]) {
        self.apply(STATE, None, |broken| broken(&row.state));
        self.apply(ROW, None, |broken| broken(row));
        if let Some(first) = entries.first() {
            self.apply(ENQUEUE, Some(first.n), |broken| broken(first));
        }
        for e in entries {
            self.apply(STATE, Some(e.n), |broken| broken(&e.state));
        }
        for pair in entries.windows(2) {
            let (prev, cur) = (&pair[0], &pair[1]);
            match Step::new(prev, cur) {
                Some(step) => self.apply(TRANSITION, Some(cur.n), |broken| broken(&step)),
                None => self.flag(
                    Check::NoSilentDrop,
                    Some(cur.n),
                    "enqueued again: a second insert of the same id".into(),
                ),
            }
        }
        let recorded =
            Recorded { row: &row.state, not_before: row.not_before, ended_at: row.ended_at, entries };
        self.apply(HISTORY, None, |broken| broken(&recorded));
    }

    /// The one loop: each rule of a table judged on its subject (`judge` hands the subject to
    /// the rule's function), every broken one flagged.
    fn apply<F>(&mut self, rules: &[Rule<F>], entry: Option<i64>, judge: impl Fn(&F) -> Option<String>) {
        for (check, broken) in rules {
            if let Some(what) = judge(broken) {
                self.flag(*check, entry, what);
            }
        }
    }

    fn flag(&mut self, check: Check, entry: Option<i64>, what: String) {
        self.violations.push(Violation { check, job: self.id.to_owned(), entry, what });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Completion, Lease, NewJob, OpenOptions, Outcome, Redrive, Settings};

    /// A copy of `tests/fixtures/schema-3.db` (a file schema 3 code wrote) with `n` more jobs,
    /// their history written by schema 3's own triggers: all enqueued, half of them claimed,
    /// a quarter done.
    fn schema_3_with(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/schema-3.db");
        let path = dir.join(format!("schema-3-{n}.db"));
        std::fs::copy(fixture, &path).expect("copy the fixture");
        let mut conn = rusqlite::Connection::open(&path).expect("open");
        let tx = conn.transaction().expect("begin");
        for i in 0..n {
            tx.execute(
                "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                                   redrives, enqueued_at, updated_at, not_before)
                 VALUES (?1, 'p', 'pending', 0, 3, 0, 100000, 0, 0, 0, 0)",
                [format!("more-{i}")],
            )
            .expect("enqueue");
        }
        tx.execute_batch(
            "UPDATE jobs SET status = 'leased', attempts = 1, available_at = 1010, owner = 'w1',
                             claimed_at = 10, updated_at = 10
             WHERE id LIKE 'more-%' AND seq % 2 = 0;
             UPDATE jobs SET status = 'done', available_at = NULL, owner = NULL, claimed_at = NULL,
                             updated_at = 11, ended_at = 11
             WHERE id LIKE 'more-%' AND status = 'leased' AND seq % 4 = 0;",
        )
        .expect("claims and completions");
        tx.commit().expect("commit");
        path
    }

    /// The audit of a file of `n` jobs more than the fixture, read as it is (before its
    /// upgrade, its attempts' records a view over its history): clean, and the thousands of
    /// SQLite's virtual machine steps it took.
    fn audit_steps(n: usize) -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = schema_3_with(dir.path(), n);
        let read = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        let mut q = Queue::open_with(&path, &read).expect("read schema 3");
        let steps = std::sync::Arc::new(AtomicU64::new(0));
        let counted = std::sync::Arc::clone(&steps);
        q.conn_mut()
            .progress_handler(
                1000,
                Some(move || {
                    counted.fetch_add(1, Ordering::Relaxed);
                    false
                }),
            )
            .expect("handler");
        let audit = q.audit().expect("audit");
        assert!(audit.is_clean(), "{:#?}", audit.violations);
        assert_eq!(audit.jobs, n as u64 + 14, "the fixture's jobs and these");
        steps.load(Ordering::Relaxed)
    }

    /// Twice the jobs, about twice the work: the records are read in one pass, not looked up
    /// in a view of the whole history job by job (which made it four times the work).
    #[test]
    fn the_audit_of_a_file_before_its_upgrade_is_linear_in_its_size() {
        let (small, large) = (audit_steps(400), audit_steps(800));
        assert!(large * 10 < small * 25, "{small} thousand steps for 400 jobs, {large} for 800");
    }

    /// On a file of this schema the records are read beside the jobs, in the order of both
    /// keys: no sort, an index lookup each.
    #[test]
    fn the_records_are_read_by_their_key_without_sorting() {
        let q = Queue::open_in_memory().expect("memory queue");
        let plan: Vec<String> = q
            .conn()
            .prepare(&format!("EXPLAIN QUERY PLAN {}", notes_sql::RECORDS))
            .expect("explain")
            .query_map([], |row| row.get::<_, String>(3))
            .expect("plan")
            .collect::<std::result::Result<_, _>>()
            .expect("rows");
        let plan = plan.join("\n");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        assert!(plan.contains("SEARCH a USING PRIMARY KEY"), "{plan}");
    }

    /// A queue where every kind of transition happened: enqueue, claims, a retry, done,
    /// dead by each reason, a reap of a pending job, a crash reclaimed after its lease, a
    /// redrive, and an operator's note.
    pub(super) fn busy() -> Queue {
        let mut q = Queue::open_in_memory().expect("memory queue");
        q.set_settings(Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, ..Settings::default() })
            .expect("settings");
        // Two kinds in the one queue: the tallies count each apart (SPEC 6.44).
        for (id, max_attempts, kind) in
            [("ok", 3, ""), ("perm", 3, "mail"), ("exh", 1, ""), ("crash", 3, "mail")]
        {
            q.enqueue(&NewJob {
                id,
                payload: "",
                max_attempts,
                deadline: 10_000,
                now: 0,
                kind,
                ..NewJob::default()
            })
            .expect("enqueue");
        }
        let run = |q: &mut Queue, now: u64, outcome: Outcome| {
            let c = q.claim("w1", now).expect("claim").expect("claimed");
            q.complete(&Completion::new(&c.lease, outcome, now + 1, 0.5)).expect("complete");
        };
        run(&mut q, 0, Outcome::Retryable); // ok: retry at 1 + 50
        run(&mut q, 1, Outcome::Permanent); // perm
        run(&mut q, 2, Outcome::Retryable); // exh: exhausted
        let c = q.claim("w3", 10).expect("claim").expect("claimed");
        assert_eq!(c.id(), "crash");
        q.record_error(&Lease::new("w3", "crash", c.attempt()), "exit 3", None).expect("note"); // then w3 dies
        let c = q.claim("w2", 60).expect("claim").expect("claimed");
        assert_eq!(c.id(), "ok");
        q.complete(&Completion::new(&Lease::new("w2", "ok", c.attempt()), Outcome::Ok, 61, 0.0))
            .expect("done");
        q.enqueue(&NewJob {
            id: "late",
            payload: "",
            max_attempts: 3,
            deadline: 300,
            now: 100,
            ..NewJob::default()
        })
        .expect("enqueue");
        assert_eq!(q.reap(300).expect("reap"), 1, "late: dead(deadline) while pending");
        let again = q.claim("w4", 1010).expect("claim").expect("reclaimed at expiry");
        assert_eq!((again.id(), again.attempt()), ("crash", 2));
        q.complete(&Completion::new(&Lease::new("w4", "crash", 2), Outcome::Ok, 1011, 0.0)).expect("done");
        q.redrive(&Redrive { id: "perm", add_attempts: 2, deadline: 20_000, now: 1400 }).expect("redrive");
        q
    }

    pub(super) fn tamper(q: &Queue, sql: &str) {
        q.conn().execute_batch(sql).expect("tamper");
    }

    #[test]
    fn a_store_written_by_the_rules_is_clean() {
        let q = busy();
        let audit = q.audit().expect("audit");
        assert_eq!(audit.violations, [], "{:#?}", audit.violations);
        assert_eq!(audit.jobs, 5);
        assert_eq!(
            audit.entries,
            q.conn().query_row("SELECT count(*) FROM history", [], |r| r.get::<_, u64>(0)).expect("count")
        );
    }

    /// A queue where contract 1.1's moves happened: a heartbeat, a cancel (then redriven to
    /// done), and a scheduled job claimed at its `not_before`.
    fn busy_1_1() -> Queue {
        let mut q = Queue::open_in_memory().expect("memory queue");
        q.set_settings(Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, ..Settings::default() })
            .expect("settings");
        let job = NewJob { payload: "", max_attempts: 3, deadline: 5000, now: 0, ..NewJob::default() };
        q.enqueue(&NewJob { id: "beat", ..job }).expect("enqueue");
        q.enqueue(&NewJob { id: "sched", not_before: Some(3000), deadline: 9000, ..job }).expect("enqueue");
        q.enqueue(&NewJob { id: "gone", ..job }).expect("enqueue");
        let c = q.claim("w1", 10).expect("claim").expect("claimed");
        assert_eq!(c.id(), "beat");
        assert_eq!(q.heartbeat(&c.lease, 500).expect("heartbeat"), 1500);
        q.cancel("gone", 600).expect("cancel");
        q.complete(&Completion::new(&c.lease, Outcome::Ok, 700, 0.0)).expect("done");
        assert_eq!(q.claim("w2", 2999).expect("claim"), None, "sched waits for its not_before");
        let c = q.claim("w2", 3000).expect("claim").expect("claimed");
        assert_eq!(c.id(), "sched");
        q.redrive(&Redrive { id: "gone", add_attempts: 1, deadline: 9000, now: 3500 }).expect("redrive");
        let c = q.claim("w3", 3600).expect("claim").expect("claimed");
        assert_eq!(c.id(), "gone");
        q.complete(&Completion::new(&c.lease, Outcome::Ok, 3700, 0.0)).expect("done");
        q
    }

    #[test]
    fn a_store_with_heartbeats_cancels_and_schedules_is_clean() {
        let q = busy_1_1();
        let audit = q.audit().expect("audit");
        assert_eq!(audit.violations, [], "{:#?}", audit.violations);
        assert_eq!(audit.jobs, 3);
    }

    /// Each 1.1 rule, made to fire by one tampering of [`busy_1_1`].
    #[test]
    fn every_1_1_rule_can_fire() {
        let extension = "job = 'beat' AND from_status = 'leased' AND to_status = 'leased'";
        let sched_claim = "job = 'sched' AND to_status = 'leased'";
        let cancel = "job = 'gone' AND reason = 'cancelled'";
        let cases: Vec<(String, Check, &str, &str)> = vec![
            (
                format!("{RAW_HISTORY} UPDATE history SET worker = 'w9' WHERE {extension}"),
                Check::OneLiveLease,
                "beat",
                "extended the lease",
            ),
            (
                format!("{RAW_HISTORY} UPDATE history SET at = 5000 WHERE {extension}"),
                Check::LeaseEndsByDeadline,
                "beat",
                "not before the deadline 5000",
            ),
            (
                format!("{RAW_HISTORY} UPDATE history SET available_at = 1005 WHERE {extension}"),
                Check::LeaseEndsByDeadline,
                "beat",
                "shortened the lease from Some(1010) to Some(1005)",
            ),
            (
                format!("{RAW_HISTORY} UPDATE history SET from_status = 'leased' WHERE {cancel}"),
                Check::CancelStopsTheJob,
                "gone",
                "with no cancel request",
            ),
            (
                format!("{RAW_HISTORY} UPDATE history SET at = 2999 WHERE {sched_claim}"),
                Check::ScheduledJobWaits,
                "sched",
                "before its not_before 3000",
            ),
            (
                "DROP TRIGGER jobs_identity_fixed; UPDATE jobs SET not_before = 2000 WHERE id = 'sched'"
                    .into(),
                Check::HistoryMatchesRow,
                "sched",
                "the row's not_before is 2000",
            ),
        ];
        for (sql, check, job, what) in cases {
            let q = busy_1_1();
            tamper(&q, &sql);
            let found = q.audit().expect("audit").violations;
            assert!(
                found.iter().any(|v| v.check == check && v.job == job && v.what.contains(what)),
                "{sql}: expected {check} on {job} saying {what:?}, found {found:#?}"
            );
        }
    }

    #[test]
    fn an_empty_store_is_clean() {
        let q = Queue::open_in_memory().expect("memory queue");
        assert_eq!(q.audit().expect("audit"), Audit::default());
    }

    /// Each tampering breaks one promise, and the audit names it.
    #[test]
    fn every_check_can_fail() {
        // Rows are edited without the triggers or the CHECK constraints that would refuse
        // the edit or record it (history, an attempt's record), as a hand edit or another
        // program would.
        let raw = "DROP TRIGGER jobs_history_update; DROP TRIGGER jobs_attempt_claimed;
                   PRAGMA ignore_check_constraints = ON;";
        // `perm` was redriven at 1400: pending, attempts 1 of 3, deadline 20000.
        let entry = |from: &str, to: &str, attempt: u64, until: u64, worker: &str, at: u64| {
            format!(
                "INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                                      available_at, redrives, reason, worker, at)
                 VALUES ('perm', '{from}', '{to}', {attempt}, 3, 20000, {until}, 1, NULL, '{worker}', {at});"
            )
        };
        let claim_live =
            entry("pending", "leased", 2, 2500, "w1", 1500) + &entry("leased", "leased", 3, 2600, "w9", 1600);
        let claim_spent = entry("pending", "leased", 2, 2500, "w1", 1500)
            + &entry("leased", "leased", 3, 3600, "w2", 2600)
            + &entry("leased", "leased", 4, 4700, "w3", 3700);
        let cases: &[(&str, String, Check, &str)] = &[
            (
                "attempts moved without a claim",
                format!("{raw} UPDATE jobs SET attempts = 2 WHERE id = 'perm'"),
                Check::AttemptsCountClaims,
                "perm",
            ),
            (
                "attempts above the budget",
                format!("{raw} UPDATE jobs SET attempts = 9 WHERE id = 'exh'"),
                Check::AttemptsCountClaims,
                "exh",
            ),
            (
                "deadline moved in place",
                format!("{raw} UPDATE jobs SET deadline = 99999 WHERE id = 'ok'"),
                Check::HistoryMatchesRow,
                "ok",
            ),
            (
                "deadline moved by a recorded non-redrive",
                "UPDATE jobs SET deadline = 99999, updated_at = 1500 WHERE id = 'ok'".into(),
                Check::DeadlineOnlyByRedrive,
                "ok",
            ),
            (
                "dead without a reason",
                format!("{raw} UPDATE jobs SET dead_reason = NULL WHERE id = 'exh'"),
                Check::NoSilentDrop,
                "exh",
            ),
            (
                "done brought back",
                "UPDATE jobs SET status = 'pending', available_at = 5000, updated_at = 1500, ended_at = NULL WHERE id = 'ok'"
                    .into(),
                Check::NoSilentDrop,
                "ok",
            ),
            (
                "a job deleted",
                "DROP TRIGGER jobs_never_deleted; DELETE FROM jobs WHERE id = 'late'".into(),
                Check::NoSilentDrop,
                "late",
            ),
            ("claimed with no attempt left", claim_spent, Check::ClaimWithinBudget, "perm"),
            (
                "claimed at the deadline",
                entry("pending", "leased", 2, 21000, "w1", 20000),
                Check::ClaimWithinBudget,
                "perm",
            ),
            ("claimed while a lease was live", claim_live, Check::OneLiveLease, "perm"),
            (
                "pending past its deadline",
                format!("{raw} UPDATE jobs SET available_at = 20000 WHERE id = 'perm'"),
                Check::PendingBeforeDeadline,
                "perm",
            ),
            (
                "history lost",
                "DROP TRIGGER history_no_delete; DELETE FROM history WHERE job = 'ok' AND to_status = 'done'"
                    .into(),
                Check::HistoryMatchesRow,
                "ok",
            ),
        ];
        for (what, sql, check, job) in cases {
            let q = busy();
            tamper(&q, sql);
            let audit = q.audit().expect("audit");
            assert!(
                audit.violations.iter().any(|v| v.check == *check && v.job == *job),
                "{what}: expected {check} on {job}, found {:#?}",
                audit.violations
            );
        }
    }

    #[test]
    fn violations_print_the_invariant_and_the_entry() {
        let q = busy();
        tamper(&q, "UPDATE jobs SET deadline = 99999, updated_at = 1500 WHERE id = 'ok'");
        let audit = q.audit().expect("audit");
        let printed: Vec<String> = audit.violations.iter().map(ToString::to_string).collect();
        assert!(
            printed.iter().any(|p| p.starts_with("job \"ok\" history #") && p.contains("invariant 2")),
            "{printed:#?}"
        );
    }

    /// Rows edited without the triggers or the CHECK constraints that would refuse the edit
    /// or record it (history, an attempt's record).
    const RAW: &str = "DROP TRIGGER jobs_history_update; DROP TRIGGER jobs_attempt_claimed;
                       PRAGMA ignore_check_constraints = ON;";
    /// History edited in place, as a hand edit would.
    const RAW_HISTORY: &str = "DROP TRIGGER history_no_update; DROP TRIGGER history_no_delete;";

    /// The violations of the busy store after `sql`.
    fn after(sql: &str) -> Vec<Violation> {
        let q = busy();
        tamper(&q, sql);
        q.audit().expect("an audit reports, it does not fail").violations
    }

    /// `sql` makes the audit flag `check` on `job`, in words containing `what`.
    fn fires(sql: &str, check: Check, job: &str, what: &str) {
        let found = after(sql);
        assert!(
            found.iter().any(|v| v.check == check && v.job == job && v.what.contains(what)),
            "expected {check} on {job} saying {what:?}, found {found:#?}"
        );
    }

    /// A claim of `perm` (redriven at 1400: pending, attempts 1 of 3, deadline 20000,
    /// redrives 1) recorded by hand.
    fn claim_of_perm(attempt: u64, until: u64, worker: &str, at: u64) -> String {
        format!(
            "INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                                  available_at, redrives, reason, worker, at)
             VALUES ('perm', 'pending', 'leased', {attempt}, 3, 20000, {until}, 1, NULL, {worker}, {at});"
        )
    }

    #[test]
    fn attempts_count_claims_fires() {
        fires(
            &format!("{RAW} UPDATE jobs SET attempts = 2 WHERE id = 'perm'"),
            Check::AttemptsCountClaims,
            "perm",
            "attempts 2 but 1 claims recorded",
        );
    }

    #[test]
    fn deadline_only_by_redrive_fires() {
        fires(
            "UPDATE jobs SET deadline = 99999, updated_at = 1500 WHERE id = 'ok'",
            Check::DeadlineOnlyByRedrive,
            "ok",
            "deadline 10000 → 99999 without a redrive (done → done)",
        );
    }

    #[test]
    fn no_silent_drop_fires() {
        fires(
            "DROP TRIGGER jobs_never_deleted; DELETE FROM jobs WHERE id = 'late'",
            Check::NoSilentDrop,
            "late",
            "no longer in the store",
        );
    }

    #[test]
    fn claim_within_budget_fires() {
        fires(
            &claim_of_perm(2, 21000, "'w1'", 20000),
            Check::ClaimWithinBudget,
            "perm",
            "not before the deadline",
        );
    }

    #[test]
    fn one_live_lease_fires() {
        let live = claim_of_perm(2, 2500, "'w1'", 1500)
            + "INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                                    available_at, redrives, reason, worker, at)
               VALUES ('perm', 'leased', 'leased', 3, 3, 20000, 2600, 1, NULL, 'w9', 1600);";
        fires(&live, Check::OneLiveLease, "perm", "lease ran until 2500");
    }

    #[test]
    fn pending_before_deadline_fires() {
        fires(
            &format!("{RAW} UPDATE jobs SET available_at = 20000 WHERE id = 'perm'"),
            Check::PendingBeforeDeadline,
            "perm",
            "not before the deadline 20000",
        );
    }

    #[test]
    fn history_matches_row_fires() {
        fires(
            &format!("{RAW} UPDATE jobs SET deadline = 99999 WHERE id = 'ok'"),
            Check::HistoryMatchesRow,
            "ok",
            "deadline 99999 vs 10000",
        );
    }

    /// Each rule of each table, made to fire by one tampering. A rule no case reaches would be
    /// dead code, or a promise the audit no longer checks.
    #[test]
    fn every_rule_can_fire() {
        let history_of = |job: &str, filter: &str, set: &str| {
            format!("{RAW_HISTORY} UPDATE history SET {set} WHERE job = '{job}' AND {filter}")
        };
        let first = "n = (SELECT min(n) FROM history WHERE job = 'late')";
        let redrive = "from_status = 'dead' AND to_status = 'pending'";
        let cases: Vec<(String, Check, &str, &str)> = vec![
            // 1.2: the end, cancel requests, tombstones, the kept counts.
            (
                format!("{RAW} UPDATE jobs SET ended_at = 5 WHERE id = 'ok'"),
                Check::HistoryMatchesRow,
                "ok",
                "ended_at Some(5), but the job ended",
            ),
            (
                format!("{RAW} UPDATE jobs SET ended_at = 5 WHERE id = 'perm'"),
                Check::HistoryMatchesRow,
                "perm",
                "ended_at Some(5), but the job is open",
            ),
            (
                history_of("ok", "to_status = 'done'", "cancel_requested = 1"),
                Check::CancelStopsTheJob,
                "ok",
                "a cancel request on a done job",
            ),
            (
                "INSERT INTO tombstones SELECT id, queue, printf('%064d', 0), status, dead_reason, attempts, ended_at
                 FROM jobs WHERE id = 'ok'"
                    .into(),
                Check::PrunedStaysPruned,
                "ok",
                "a tombstone and a job row hold the same id",
            ),
            (
                "UPDATE counts SET n = n + 1 WHERE status = 'done'".into(),
                Check::CountsMatchRows,
                "default",
                "done but holds",
            ),
            // Every state.
            (
                format!("{RAW} UPDATE jobs SET status = 'frozen' WHERE id = 'ok'"),
                Check::NoSilentDrop,
                "ok",
                "unknown status \"frozen\"",
            ),
            (
                format!("{RAW} UPDATE jobs SET attempts = -1 WHERE id = 'ok'"),
                Check::AttemptsCountClaims,
                "ok",
                "attempts -1 is negative",
            ),
            (
                format!("{RAW} UPDATE jobs SET attempts = 9 WHERE id = 'exh'"),
                Check::AttemptsCountClaims,
                "exh",
                "exceed max_attempts 1",
            ),
            (
                format!("{RAW} UPDATE jobs SET max_attempts = 0 WHERE id = 'late'"),
                Check::ClaimWithinBudget,
                "late",
                "max_attempts 0 outside",
            ),
            (
                format!("{RAW} UPDATE jobs SET dead_reason = NULL WHERE id = 'exh'"),
                Check::NoSilentDrop,
                "exh",
                "dead without a reason",
            ),
            (
                format!("{RAW} UPDATE jobs SET dead_reason = 'tired' WHERE id = 'exh'"),
                Check::NoSilentDrop,
                "exh",
                "dead for an unknown reason \"tired\"",
            ),
            (
                format!("{RAW} UPDATE jobs SET dead_reason = 'permanent' WHERE id = 'ok'"),
                Check::NoSilentDrop,
                "ok",
                "done with a dead reason \"permanent\"",
            ),
            (
                format!("{RAW} UPDATE jobs SET available_at = NULL WHERE id = 'perm'"),
                Check::NoSilentDrop,
                "perm",
                "pending open without an available_at",
            ),
            (
                format!("{RAW} UPDATE jobs SET available_at = 5 WHERE id = 'ok'"),
                Check::NoSilentDrop,
                "ok",
                "done closed with an available_at",
            ),
            (
                format!("{RAW} UPDATE jobs SET available_at = 20000 WHERE id = 'perm'"),
                Check::PendingBeforeDeadline,
                "perm",
                "pending with available_at 20000",
            ),
            // The row.
            (
                format!("{RAW} UPDATE jobs SET status = 'leased', available_at = 3000 WHERE id = 'perm'"),
                Check::NoSilentDrop,
                "perm",
                "leased without a lease holder",
            ),
            // The enqueue.
            (
                format!("{RAW_HISTORY} DELETE FROM history WHERE {first}"),
                Check::HistoryMatchesRow,
                "late",
                "first entry is pending → dead, not the enqueue",
            ),
            (
                history_of("late", first, "attempt = 1"),
                Check::AttemptsCountClaims,
                "late",
                "enqueued with attempts 1 and redrives 0",
            ),
            (
                history_of("late", first, "available_at = 7"),
                Check::NoSilentDrop,
                "late",
                "enqueued at 100 with available_at Some(7)",
            ),
            // Every transition.
            (
                history_of("ok", "to_status = 'done'", "from_status = 'pending'"),
                Check::HistoryMatchesRow,
                "ok",
                "from pending, but the previous entry left the job leased",
            ),
            (
                // The history records it; the attempt's record would refuse it (no claim
                // began attempt 2), so that trigger is gone, as in a file another build wrote.
                "DROP TRIGGER jobs_attempt_claimed;
                 UPDATE jobs SET attempts = 2, updated_at = 1500 WHERE id = 'perm'"
                    .into(),
                Check::AttemptsCountClaims,
                "perm",
                "attempts 1 → 2 by no claim (pending → pending)",
            ),
            (
                "UPDATE jobs SET deadline = 99999, updated_at = 1500 WHERE id = 'ok'".into(),
                Check::DeadlineOnlyByRedrive,
                "ok",
                "deadline 10000 → 99999 without a redrive",
            ),
            (
                "UPDATE jobs SET redrives = 4, updated_at = 1500 WHERE id = 'ok'".into(),
                Check::DeadlineOnlyByRedrive,
                "ok",
                "redrives 0 → 4 without a redrive",
            ),
            (
                "UPDATE jobs SET max_attempts = 9, updated_at = 1500 WHERE id = 'ok'".into(),
                Check::ClaimWithinBudget,
                "ok",
                "max_attempts 3 → 9 without a redrive",
            ),
            (
                "UPDATE jobs SET status = 'pending', available_at = 5000, updated_at = 1500, ended_at = NULL WHERE id = 'ok'"
                    .into(),
                Check::NoSilentDrop,
                "ok",
                "done → pending is no operation's move",
            ),
            (
                claim_of_perm(2, 2500, "'w1'", 1500)
                    + "INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                                            available_at, redrives, reason, worker, at)
                       VALUES ('perm', 'leased', 'leased', 3, 3, 20000, 3600, 1, NULL, 'w2', 2600),
                              ('perm', 'leased', 'leased', 4, 3, 20000, 4700, 1, NULL, 'w3', 3700);",
                Check::ClaimWithinBudget,
                "perm",
                "claimed with 3 of 3 attempts already spent",
            ),
            (
                claim_of_perm(2, 21000, "'w1'", 20000),
                Check::ClaimWithinBudget,
                "perm",
                "claimed at 20000, not before the deadline 20000",
            ),
            (
                claim_of_perm(2, 2500, "'w1'", 1500)
                    + "INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                                            available_at, redrives, reason, worker, at)
                       VALUES ('perm', 'leased', 'leased', 3, 3, 20000, 2600, 1, NULL, 'w9', 1600);",
                Check::OneLiveLease,
                "perm",
                "claimed by Some(\"w9\") at 1600 while Some(\"w1\")'s lease ran until 2500",
            ),
            (
                claim_of_perm(2, 2350, "'w1'", 1350),
                Check::NoSilentDrop,
                "perm",
                "claimed at 1350 before it was due at 1400",
            ),
            (claim_of_perm(2, 2500, "NULL", 1500), Check::OneLiveLease, "perm", "a lease without a holder"),
            (
                claim_of_perm(2, 1500, "'w1'", 1500),
                Check::OneLiveLease,
                "perm",
                "a lease until Some(1500), not after the claim at 1500",
            ),
            (
                history_of("ok", "from_status = 'leased' AND to_status = 'pending'", "available_at = 0"),
                Check::NoSilentDrop,
                "ok",
                "retry reserved for Some(0), before the completion at 1",
            ),
            (
                history_of("perm", "to_status = 'dead'", "reason = 'exhausted'"),
                Check::NoSilentDrop,
                "perm",
                "dead as exhausted with 1 of 3 attempts spent",
            ),
            (
                history_of("late", "to_status = 'dead'", "reason = 'permanent'"),
                Check::NoSilentDrop,
                "late",
                "pending → dead (\"permanent\") at 300",
            ),
            (
                history_of("perm", redrive, "redrives = 3"),
                Check::DeadlineOnlyByRedrive,
                "perm",
                "redrive took redrives 0 → 3, not + 1",
            ),
            (
                history_of("perm", redrive, "deadline = 1400"),
                Check::DeadlineOnlyByRedrive,
                "perm",
                "redriven at 1400 with a deadline 1400 not after it",
            ),
            (
                history_of("perm", redrive, "available_at = 1500"),
                Check::NoSilentDrop,
                "perm",
                "redriven at 1400 with available_at Some(1500)",
            ),
            (
                history_of("perm", redrive, "max_attempts = 1"),
                Check::ClaimWithinBudget,
                "perm",
                "redriven with max_attempts 1 for 1 spent",
            ),
            (
                "INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                                      available_at, redrives, reason, worker, at)
                 VALUES ('ok', NULL, 'pending', 0, 3, 10000, 2000, 0, NULL, NULL, 2000)"
                    .into(),
                Check::NoSilentDrop,
                "ok",
                "enqueued again",
            ),
            // The whole history against the row.
            (
                "DROP TRIGGER jobs_never_deleted; DELETE FROM jobs WHERE id = 'late'".into(),
                Check::NoSilentDrop,
                "late",
                "2 history entries for a job that is no longer in the store",
            ),
            (
                format!("{RAW_HISTORY} DELETE FROM history WHERE job = 'ok'"),
                Check::HistoryMatchesRow,
                "ok",
                "no recorded history",
            ),
            (
                format!("{RAW} UPDATE jobs SET attempts = 2 WHERE id = 'perm'"),
                Check::AttemptsCountClaims,
                "perm",
                "attempts 2 but 1 claims recorded",
            ),
            (
                format!("{RAW} UPDATE jobs SET status = 'dead' WHERE id = 'ok'"),
                Check::HistoryMatchesRow,
                "ok",
                "status \"dead\" vs \"done\"",
            ),
            (
                claim_of_perm(2, 2500, "'w1'", 1500)
                    + RAW
                    + "UPDATE jobs SET status = 'leased', attempts = 2, available_at = 2500, owner = 'w9',
                                       claimed_at = 1500
                       WHERE id = 'perm'",
                Check::HistoryMatchesRow,
                "perm",
                "owner Some(\"w9\") vs Some(\"w1\")",
            ),
        ];
        for (sql, check, job, what) in &cases {
            fires(sql, *check, job, what);
        }
    }

    /// A word the types cannot read, in a row or in the history, is reported like any other
    /// broken promise: the audit still reads every other job.
    #[test]
    fn an_unreadable_word_is_a_violation_not_an_error() {
        let sql = format!(
            "{RAW} UPDATE jobs SET status = 'frozen', available_at = NULL WHERE id = 'perm';
             INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                                  available_at, redrives, reason, worker, at)
             VALUES ('perm', 'pending', 'frozen', 1, 3, 20000, NULL, 1, NULL, NULL, 1500),
                    ('exh', 'dead', 'dead', 1, 1, 10000, NULL, 0, 'bored', NULL, 1500);"
        );
        let found = after(&sql);
        let on = |job: &str, entry: bool, what: &str| {
            found.iter().any(|v| v.job == job && v.entry.is_some() == entry && v.what.contains(what))
        };
        assert!(on("perm", false, "unknown status \"frozen\""), "{found:#?}");
        assert!(on("perm", true, "unknown status \"frozen\""), "{found:#?}");
        assert!(on("perm", true, "pending → frozen is no operation's move"), "{found:#?}");
        assert!(on("exh", true, "dead for an unknown reason \"bored\""), "{found:#?}");
        // The others were read too: `ok`, `late` and `crash` are as the rules left them.
        assert!(found.iter().all(|v| v.job == "perm" || v.job == "exh"), "{found:#?}");
    }
}
