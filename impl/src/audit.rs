//! `audit`: reads the store and its history and checks SPEC section 4's invariants 1 to 6,
//! on every job as it stands and on every transition the history recorded.
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
//! pair of statuses, and each kind has its rule (SPEC section 3):
//!
//! | from → to | operation | what must hold |
//! |---|---|---|
//! | — → pending | enqueue | attempts 0, redrives 0, `available_at` = `at` < deadline |
//! | pending/leased → leased | claim | attempts + 1; before it attempts < max_attempts; `at` < deadline; due (`available_at` ≤ `at`: for a lease, expired) |
//! | leased → pending | retryable | attempts kept; `at` ≤ `available_at` < deadline |
//! | leased → done | ok | attempts kept |
//! | leased → dead | completion or reap | attempts kept; `exhausted` only with attempts = max_attempts; `deadline` by a reap only once the lease expired and the deadline came — or by a completion |
//! | pending → dead | reap | reason `deadline`, deadline ≤ `at`, attempts kept |
//! | dead → pending | redrive | redrives + 1, attempts kept, `available_at` = `at` < new deadline, max_attempts > attempts |
//!
//! Any other pair — leaving `done`, leaving `dead` but by a redrive, `pending → pending`,
//! `pending → done` — breaks invariant 3. Outside a redrive, `deadline`, `max_attempts` and
//! `redrives` never change.

use std::fmt;

use rusqlite::{Row, Transaction};

use crate::error::Result;
use crate::input::MAX_ATTEMPTS;
use crate::queue::Queue;

/// Which promise a [`Violation`] breaks: SPEC section 4's invariants 1 to 6, and the history
/// being a faithful record of the rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    /// The history is complete and agrees with the job's row.
    HistoryMatchesRow,
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
            Check::HistoryMatchesRow => return None,
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
            Check::HistoryMatchesRow => "history matches row",
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
    pub violations: Vec<Violation>,
}

impl Audit {
    /// No violation found.
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}

/// A job's state as a row or a history entry holds it, read without trusting it.
#[derive(Clone, Debug)]
struct State {
    status: String,
    attempts: i64,
    max_attempts: i64,
    available_at: Option<i64>,
    deadline: i64,
    reason: Option<String>,
    redrives: i64,
    /// The row's owner, or the entry's lease holder.
    worker: Option<String>,
}

/// One history entry.
#[derive(Clone, Debug)]
struct Entry {
    n: i64,
    from: Option<String>,
    at: i64,
    state: State,
}

const JOBS: &str = "
    SELECT id, status, attempts, max_attempts, available_at, deadline, dead_reason, redrives,
           owner, claimed_at
    FROM jobs ORDER BY seq";

const HISTORY: &str = "
    SELECT n, from_status, to_status, attempt, max_attempts, deadline, available_at, redrives,
           reason, worker, at
    FROM history WHERE job = ?1 ORDER BY n";

/// History of ids no row holds: a job that vanished.
const ORPHANS: &str = "
    SELECT job, min(n), count(*) FROM history WHERE job NOT IN (SELECT id FROM jobs) GROUP BY job";

const STATUSES: [&str; 4] = ["pending", "leased", "done", "dead"];
const REASONS: [&str; 3] = ["exhausted", "deadline", "permanent"];

impl Queue {
    /// Checks SPEC section 4's invariants 1 to 6 on every job's row and on every recorded
    /// transition, in one read snapshot. Changes nothing.
    pub fn audit(&mut self) -> Result<Audit> {
        self.read(audit)
    }
}

fn audit(tx: &Transaction<'_>) -> Result<Audit> {
    let mut found = Audit::default();
    let mut jobs = tx.prepare(JOBS)?;
    let mut history = tx.prepare(HISTORY)?;
    let mut rows = jobs.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let state = state_of_row(row)?;
        let claimed_at: Option<i64> = row.get(9)?;
        let entries = history
            .query_map([&id], |r| {
                Ok(Entry {
                    n: r.get(0)?,
                    from: r.get(1)?,
                    at: r.get(10)?,
                    state: State {
                        status: r.get(2)?,
                        attempts: r.get(3)?,
                        max_attempts: r.get(4)?,
                        deadline: r.get(5)?,
                        available_at: r.get(6)?,
                        redrives: r.get(7)?,
                        reason: r.get(8)?,
                        worker: r.get(9)?,
                    },
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        found.jobs += 1;
        found.entries += entries.len() as u64;
        let mut job = Job { id: &id, violations: &mut found.violations };
        job.row(&state, claimed_at);
        job.history(&entries, &state);
    }
    let mut orphans = tx.prepare(ORPHANS)?;
    let mut rows = orphans.query([])?;
    while let Some(row) = rows.next()? {
        let (id, n, count): (String, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
        found.entries += count as u64;
        found.violations.push(Violation {
            check: Check::NoSilentDrop,
            job: id,
            entry: Some(n),
            what: format!("{count} history entries for a job that is no longer in the store"),
        });
    }
    Ok(found)
}

fn state_of_row(row: &Row<'_>) -> rusqlite::Result<State> {
    Ok(State {
        status: row.get(1)?,
        attempts: row.get(2)?,
        max_attempts: row.get(3)?,
        available_at: row.get(4)?,
        deadline: row.get(5)?,
        reason: row.get(6)?,
        redrives: row.get(7)?,
        worker: row.get(8)?,
    })
}

/// The findings about one job.
struct Job<'a> {
    id: &'a str,
    violations: &'a mut Vec<Violation>,
}

impl Job<'_> {
    fn flag(&mut self, check: Check, entry: Option<i64>, what: String) {
        self.violations.push(Violation { check, job: self.id.to_owned(), entry, what });
    }

    /// The job's row as it stands.
    fn row(&mut self, row: &State, claimed_at: Option<i64>) {
        self.state(row, None);
        if row.status == "leased" && (row.worker.is_none() || claimed_at.is_none()) {
            self.flag(Check::NoSilentDrop, None, "leased without a lease holder and claim time".into());
        }
    }

    /// What must hold of any state, stored or recorded.
    fn state(&mut self, s: &State, entry: Option<i64>) {
        if !STATUSES.contains(&s.status.as_str()) {
            self.flag(Check::NoSilentDrop, entry, format!("unknown status {:?}", s.status));
        }
        if s.attempts < 0 {
            self.flag(Check::AttemptsCountClaims, entry, format!("attempts {} is negative", s.attempts));
        }
        if s.attempts > s.max_attempts {
            self.flag(
                Check::AttemptsCountClaims,
                entry,
                format!("attempts {} exceed max_attempts {}", s.attempts, s.max_attempts),
            );
        }
        if s.max_attempts < 1 || s.max_attempts > MAX_ATTEMPTS as i64 {
            self.flag(
                Check::ClaimWithinBudget,
                entry,
                format!("max_attempts {} outside 1 … 2^31-1", s.max_attempts),
            );
        }
        let dead = s.status == "dead";
        match (&s.reason, dead) {
            (None, true) => self.flag(Check::NoSilentDrop, entry, "dead without a reason".into()),
            (Some(r), true) if !REASONS.contains(&r.as_str()) => {
                self.flag(Check::NoSilentDrop, entry, format!("dead for an unknown reason {r:?}"))
            }
            (Some(r), false) => {
                self.flag(Check::NoSilentDrop, entry, format!("{} with a dead reason {r:?}", s.status))
            }
            _ => {}
        }
        let open = s.status == "pending" || s.status == "leased";
        if open != s.available_at.is_some() {
            let what = if open { "open without an available_at" } else { "closed with an available_at" };
            self.flag(Check::NoSilentDrop, entry, format!("{} {what}", s.status));
        }
        if s.status == "pending"
            && let Some(at) = s.available_at
            && at >= s.deadline
        {
            self.flag(
                Check::PendingBeforeDeadline,
                entry,
                format!("pending with available_at {at} not before the deadline {}", s.deadline),
            );
        }
    }

    /// Every recorded transition, and the last one against the row.
    fn history(&mut self, entries: &[Entry], row: &State) {
        let Some(first) = entries.first() else {
            self.flag(Check::HistoryMatchesRow, None, "no recorded history (not even its enqueue)".into());
            return;
        };
        self.enqueue(first);
        for entry in entries {
            self.state(&entry.state, Some(entry.n));
        }
        for pair in entries.windows(2) {
            self.transition(&pair[0], &pair[1]);
        }
        let claims = entries.iter().filter(|e| e.state.status == "leased").count() as i64;
        if row.attempts != claims {
            self.flag(
                Check::AttemptsCountClaims,
                None,
                format!("attempts {} but {claims} claims recorded", row.attempts),
            );
        }
        if let Some(last) = entries.last() {
            self.matches(row, last);
        }
    }

    fn enqueue(&mut self, e: &Entry) {
        let s = &e.state;
        let n = Some(e.n);
        if e.from.is_some() || s.status != "pending" {
            let from = e.from.as_deref().unwrap_or("nothing");
            self.flag(
                Check::HistoryMatchesRow,
                n,
                format!("first entry is {from} → {}, not the enqueue", s.status),
            );
            return;
        }
        if s.attempts != 0 || s.redrives != 0 {
            self.flag(
                Check::AttemptsCountClaims,
                n,
                format!("enqueued with attempts {} and redrives {}", s.attempts, s.redrives),
            );
        }
        if s.available_at != Some(e.at) {
            self.flag(
                Check::NoSilentDrop,
                n,
                format!("enqueued at {} with available_at {:?}", e.at, s.available_at),
            );
        }
    }

    fn transition(&mut self, prev: &Entry, cur: &Entry) {
        let (p, c, n) = (&prev.state, &cur.state, Some(cur.n));
        let Some(from) = cur.from.as_deref() else {
            self.flag(Check::NoSilentDrop, n, "enqueued again: a second insert of the same id".into());
            return;
        };
        if from != p.status {
            self.flag(
                Check::HistoryMatchesRow,
                n,
                format!("from {from}, but the previous entry left the job {}", p.status),
            );
        }
        let redrive = from == "dead" && c.status == "pending";
        let claim = (from == "pending" || from == "leased") && c.status == "leased";
        // Invariant 1: attempts move only by one, only in a claim.
        let expected = if claim { p.attempts + 1 } else { p.attempts };
        if c.attempts != expected {
            let what = if claim { "a claim" } else { "no claim" };
            self.flag(
                Check::AttemptsCountClaims,
                n,
                format!("attempts {} → {} by {what} ({from} → {})", p.attempts, c.attempts, c.status),
            );
        }
        // Invariant 2 and the budget: only a redrive moves the deadline, max_attempts, redrives.
        if redrive {
            self.redrive(cur, p);
        } else {
            if c.deadline != p.deadline {
                self.flag(
                    Check::DeadlineOnlyByRedrive,
                    n,
                    format!(
                        "deadline {} → {} without a redrive ({from} → {})",
                        p.deadline, c.deadline, c.status
                    ),
                );
            }
            if c.redrives != p.redrives {
                self.flag(
                    Check::DeadlineOnlyByRedrive,
                    n,
                    format!(
                        "redrives {} → {} without a redrive ({from} → {})",
                        p.redrives, c.redrives, c.status
                    ),
                );
            }
            if c.max_attempts != p.max_attempts {
                self.flag(
                    Check::ClaimWithinBudget,
                    n,
                    format!("max_attempts {} → {} without a redrive", p.max_attempts, c.max_attempts),
                );
            }
        }
        match (from, c.status.as_str()) {
            ("pending" | "leased", "leased") => self.claim(prev, cur),
            ("leased", "pending") => {
                if c.available_at.is_some_and(|a| a < cur.at) {
                    self.flag(
                        Check::NoSilentDrop,
                        n,
                        format!(
                            "retry reserved for {:?}, before the completion at {}",
                            c.available_at, cur.at
                        ),
                    );
                }
            }
            ("leased", "done") => {}
            ("leased", "dead") => {
                if c.reason.as_deref() == Some("exhausted") && c.attempts < c.max_attempts {
                    self.flag(
                        Check::NoSilentDrop,
                        n,
                        format!("dead as exhausted with {} of {} attempts spent", c.attempts, c.max_attempts),
                    );
                }
            }
            ("pending", "dead") => {
                if c.reason.as_deref() != Some("deadline") || cur.at < c.deadline {
                    self.flag(
                        Check::NoSilentDrop,
                        n,
                        format!(
                            "pending → dead ({:?}) at {}, deadline {}: only a reap at the deadline does that",
                            c.reason, cur.at, c.deadline
                        ),
                    );
                }
            }
            ("dead", "pending") => {}
            (from, to) => self.flag(Check::NoSilentDrop, n, format!("{from} → {to} is no operation's move")),
        }
    }

    /// A claim: invariants 4 and 5, and due at all.
    fn claim(&mut self, prev: &Entry, cur: &Entry) {
        let (p, c, n) = (&prev.state, &cur.state, Some(cur.n));
        if p.attempts >= p.max_attempts {
            self.flag(
                Check::ClaimWithinBudget,
                n,
                format!("claimed with {} of {} attempts already spent", p.attempts, p.max_attempts),
            );
        }
        if cur.at >= p.deadline {
            self.flag(
                Check::ClaimWithinBudget,
                n,
                format!("claimed at {}, not before the deadline {}", cur.at, p.deadline),
            );
        }
        if let Some(due) = p.available_at
            && due > cur.at
        {
            if p.status == "leased" {
                self.flag(
                    Check::OneLiveLease,
                    n,
                    format!(
                        "claimed by {:?} at {} while {:?}'s lease ran until {due}",
                        c.worker, cur.at, p.worker
                    ),
                );
            } else {
                self.flag(
                    Check::NoSilentDrop,
                    n,
                    format!("claimed at {} before it was due at {due}", cur.at),
                );
            }
        }
        if c.worker.is_none() {
            self.flag(Check::OneLiveLease, n, "a lease without a holder".into());
        }
        if c.available_at.is_none_or(|until| until <= cur.at) {
            self.flag(
                Check::OneLiveLease,
                n,
                format!("a lease until {:?}, not after the claim at {}", c.available_at, cur.at),
            );
        }
    }

    fn redrive(&mut self, cur: &Entry, p: &State) {
        let (c, n) = (&cur.state, Some(cur.n));
        if c.redrives != p.redrives + 1 {
            self.flag(
                Check::DeadlineOnlyByRedrive,
                n,
                format!("redrive took redrives {} → {}, not + 1", p.redrives, c.redrives),
            );
        }
        if c.deadline <= cur.at {
            self.flag(
                Check::DeadlineOnlyByRedrive,
                n,
                format!("redriven at {} with a deadline {} not after it", cur.at, c.deadline),
            );
        }
        if c.available_at != Some(cur.at) {
            self.flag(
                Check::NoSilentDrop,
                n,
                format!("redriven at {} with available_at {:?}", cur.at, c.available_at),
            );
        }
        if c.max_attempts <= c.attempts {
            self.flag(
                Check::ClaimWithinBudget,
                n,
                format!(
                    "redriven with max_attempts {} for {} spent: no attempt added",
                    c.max_attempts, c.attempts
                ),
            );
        }
    }

    /// The row agrees with the last recorded state.
    fn matches(&mut self, row: &State, last: &Entry) {
        let l = &last.state;
        let mut differ = Vec::new();
        if row.status != l.status {
            differ.push(format!("status {} vs {}", row.status, l.status));
        }
        if row.attempts != l.attempts {
            differ.push(format!("attempts {} vs {}", row.attempts, l.attempts));
        }
        if row.max_attempts != l.max_attempts {
            differ.push(format!("max_attempts {} vs {}", row.max_attempts, l.max_attempts));
        }
        if row.available_at != l.available_at {
            differ.push(format!("available_at {:?} vs {:?}", row.available_at, l.available_at));
        }
        if row.deadline != l.deadline {
            differ.push(format!("deadline {} vs {}", row.deadline, l.deadline));
        }
        if row.reason != l.reason {
            differ.push(format!("dead_reason {:?} vs {:?}", row.reason, l.reason));
        }
        if row.redrives != l.redrives {
            differ.push(format!("redrives {} vs {}", row.redrives, l.redrives));
        }
        if row.status == "leased" && row.worker != l.worker {
            differ.push(format!("owner {:?} vs {:?}", row.worker, l.worker));
        }
        if !differ.is_empty() {
            self.flag(
                Check::HistoryMatchesRow,
                None,
                format!("the row differs from its last history entry #{}: {}", last.n, differ.join(", ")),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Completion, Lease, NewJob, Outcome, Redrive, Settings};

    /// A queue where every kind of transition happened: enqueue, claims, a retry, done,
    /// dead by each reason, a reap of a pending job, a crash reclaimed after its lease, a
    /// redrive, and an operator's note.
    fn busy() -> Queue {
        let mut q = Queue::open_in_memory().expect("memory queue");
        q.set_settings(Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250 }).expect("settings");
        for (id, max_attempts) in [("ok", 3), ("perm", 3), ("exh", 1), ("crash", 3)] {
            q.enqueue(&NewJob { id, payload: "", max_attempts, deadline: 10_000, now: 0 }).expect("enqueue");
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
        q.enqueue(&NewJob { id: "late", payload: "", max_attempts: 3, deadline: 300, now: 100 })
            .expect("enqueue");
        assert_eq!(q.reap(300).expect("reap"), 1, "late: dead(deadline) while pending");
        let again = q.claim("w4", 1010).expect("claim").expect("reclaimed at expiry");
        assert_eq!((again.id(), again.attempt()), ("crash", 2));
        q.complete(&Completion::new(&Lease::new("w4", "crash", 2), Outcome::Ok, 1011, 0.0)).expect("done");
        q.redrive(&Redrive { id: "perm", add_attempts: 2, deadline: 20_000, now: 1400 }).expect("redrive");
        q
    }

    fn tamper(q: &Queue, sql: &str) {
        q.conn().execute_batch(sql).expect("tamper");
    }

    #[test]
    fn a_store_written_by_the_rules_is_clean() {
        let mut q = busy();
        let audit = q.audit().expect("audit");
        assert_eq!(audit.violations, [], "{:#?}", audit.violations);
        assert_eq!(audit.jobs, 5);
        assert_eq!(
            audit.entries,
            q.conn().query_row("SELECT count(*) FROM history", [], |r| r.get::<_, u64>(0)).expect("count")
        );
    }

    #[test]
    fn an_empty_store_is_clean() {
        let mut q = Queue::open_in_memory().expect("memory queue");
        assert_eq!(q.audit().expect("audit"), Audit::default());
    }

    /// Each tampering breaks one promise, and the audit names it.
    #[test]
    fn every_check_can_fail() {
        // Rows are edited without the triggers or the CHECK constraints that would refuse
        // the edit, as a hand edit or another program would.
        let raw = "DROP TRIGGER jobs_history_update; PRAGMA ignore_check_constraints = ON;";
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
                "UPDATE jobs SET status = 'pending', available_at = 5000, updated_at = 1500 WHERE id = 'ok'"
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
            let mut q = busy();
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
        let mut q = busy();
        tamper(&q, "UPDATE jobs SET deadline = 99999, updated_at = 1500 WHERE id = 'ok'");
        let audit = q.audit().expect("audit");
        let printed: Vec<String> = audit.violations.iter().map(ToString::to_string).collect();
        assert!(
            printed.iter().any(|p| p.starts_with("job \"ok\" history #") && p.contains("invariant 2")),
            "{printed:#?}"
        );
    }
}
