//! The audit of the operators' notes (SPEC 6.36): the attempts' records against the history,
//! and the tallies against what the store still holds.
//!
//! Records. The history tells of every attempt of a job in the store: the claim that began
//! it (its `at` and lease holder) and the entry that ended it — a move out of `leased`, or a
//! claim that took the expired lease. The schema keeps a record of each (the upgrade filled
//! those of older attempts from the same history), so the records are exactly those
//! attempts: the same claim time and holder, ended at the same `at`, open only while the
//! attempt is, with an outcome the ending move allows — `ok` for done, `retryable` for a
//! retry, `permanent` for dead(permanent), `lease expired` for a claim of the expired lease;
//! a move to dead for another reason is a `retryable` report, or, only where a reap could
//! have made it (the lease had expired; for `deadline`, the deadline had come; for
//! `cancelled`, a request stood), `lease expired` or the upgrade's `expired or retryable`.
//! A record of a job no longer in the store is left over, as history would be.
//!
//! Tallies. They only grow and count from the upgrade on, plus what the upgrade could count;
//! the store still holds evidence of part of what they count, so each is at least that:
//! every job and tombstone was enqueued once and claimed `attempts` times, every dead one
//! (job or tombstone) died, every tombstone was pruned, every redrive of a job is in its
//! `redrives`, every standing cancel request was made, every record was a claim, every ended
//! record an attempt ended with its outcome. A forget or a prune only ever leaves a tally
//! above these floors, never below: a tally under its floor lost a count. The floors hold for
//! each queue (the tallies summed over the kinds) and, of the jobs alone, for each kind in it
//! (SPEC 6.44): a tombstone keeps no kind, so what pruned jobs hold counts only in the
//! queue's; a count tallied under another kind falls short of its own kind's floor.

use super::notes_sql::Record;
use super::{Audit, Check, Entry, Findings, Move, Step, Stored, Violation};
use crate::job::{DeadReason, MAX_NOTE_BYTES, Status};

/// An attempt as the history tells of it.
struct Told {
    attempt: i64,
    /// The claim's entry.
    n: i64,
    claimed_at: i64,
    worker: Option<String>,
    /// The entry that ended it, when, and the outcomes its move allows.
    end: Option<(i64, i64, &'static [&'static str])>,
}

const LAPSED: &[&str] = &["retryable", "lease expired", "expired or retryable"];

/// The outcomes the move `step` allows the attempt it ends (`step` leaves `leased`, or
/// claims an expired lease).
fn allowed(step: &Step<'_>) -> &'static [&'static str] {
    let (p, c, at) = (step.p(), step.c(), step.cur.at);
    let reason = c.reason.as_ref().and_then(|r| r.known());
    match step.kind {
        Some(Move::Claim) => &["lease expired"],
        Some(Move::Retry) => &["retryable"],
        Some(Move::Done) => &["ok"],
        Some(Move::Close) if reason == Some(DeadReason::Permanent) => &["permanent"],
        Some(Move::Close) => {
            let expired = p.available_at.is_some_and(|until| until <= at);
            let due = reason != Some(DeadReason::Deadline) || at >= c.deadline;
            let asked = reason != Some(DeadReason::Cancelled) || p.cancel_requested;
            if expired && due && asked { LAPSED } else { &["retryable"] }
        }
        _ => &[],
    }
}

/// Every attempt the history tells of, in the order they began.
fn told(entries: &[Entry]) -> Vec<Told> {
    let mut attempts: Vec<Told> = Vec::new();
    for pair in entries.windows(2) {
        let Some(step) = Step::new(&pair[0], &pair[1]) else { continue };
        let ends = matches!(step.kind, Some(Move::Claim | Move::Retry | Move::Done | Move::Close))
            && step.p().is(Status::Leased);
        if ends {
            let ended = step.p().attempts;
            if let Some(told) = attempts.iter_mut().rev().find(|t| t.attempt == ended && t.end.is_none()) {
                told.end = Some((step.cur.n, step.cur.at, allowed(&step)));
            }
        }
        if step.is(Move::Claim) {
            let c = step.c();
            attempts.push(Told {
                attempt: c.attempts,
                n: step.cur.n,
                claimed_at: step.cur.at,
                worker: c.worker.clone(),
                end: None,
            });
        }
    }
    attempts
}

impl Findings<'_> {
    /// A job's records against the attempts its history tells of.
    fn records(&mut self, entries: &[Entry], records: &[Record]) {
        let told = told(entries);
        for t in &told {
            let k = t.attempt;
            let Some(r) = records.iter().find(|r| r.attempt == k) else {
                self.flag(Check::AttemptsRecorded, Some(t.n), format!("attempt {k} has no record"));
                continue;
            };
            if (r.claimed_at, &r.worker) != (t.claimed_at, &t.worker) {
                self.flag(
                    Check::AttemptsRecorded,
                    Some(t.n),
                    format!(
                        "attempt {k}'s record says claimed at {} by {:?}, the history at {} by {:?}",
                        r.claimed_at, r.worker, t.claimed_at, t.worker
                    ),
                );
            }
            let what = match (t.end, r.ended_at, r.outcome.as_deref()) {
                (None, None, None) => None,
                (None, Some(at), _) => {
                    Some(format!("attempt {k}'s record ended at {at}, but the attempt runs"))
                }
                (Some((_, at, _)), None, _) => {
                    Some(format!("attempt {k}'s record is open, but the attempt ended at {at}"))
                }
                (Some((_, at, allowed)), Some(ended), Some(outcome)) => {
                    if ended != at {
                        Some(format!("attempt {k}'s record ended at {ended}, the history at {at}"))
                    } else if !allowed.contains(&outcome) {
                        Some(format!("attempt {k} ended as {outcome:?}, where its end allows {allowed:?}"))
                    } else {
                        None
                    }
                }
                (_, ended, outcome) => {
                    Some(format!("attempt {k}'s record ended at {ended:?} with the outcome {outcome:?}"))
                }
            };
            if let Some(what) = what {
                let entry = t.end.map_or(t.n, |(n, ..)| n);
                self.flag(Check::AttemptsRecorded, Some(entry), what);
            }
        }
        for r in records {
            if !told.iter().any(|t| t.attempt == r.attempt) {
                self.flag(
                    Check::AttemptsRecorded,
                    None,
                    format!("a record of attempt {}, which no recorded claim began", r.attempt),
                );
            }
            let long = [("error", r.error_bytes), ("node", r.node_bytes)];
            for (note, bytes) in long.into_iter().filter(|(_, bytes)| *bytes > MAX_NOTE_BYTES as i64) {
                self.flag(
                    Check::AttemptsRecorded,
                    None,
                    format!("attempt {}'s {note} holds {bytes} bytes, over {MAX_NOTE_BYTES}", r.attempt),
                );
            }
        }
    }
}

impl Audit {
    /// Checks a job's attempts' records against its history: what a store calls for each job
    /// it read, after [`Audit::job`], with the job's records in any order.
    pub(crate) fn records(&mut self, row: &Stored, entries: &[Entry], records: &[Record]) {
        Findings { id: &row.id, violations: &mut self.violations }.records(entries, records);
    }

    /// Reports `count` records of a job no row holds: left of a pruned one when `pruned`.
    pub(crate) fn records_left(&mut self, id: String, count: i64, pruned: bool) {
        let (check, of) = if pruned {
            (Check::PrunedStaysPruned, "a pruned job, whose tombstone stands")
        } else {
            (Check::AttemptsRecorded, "a job that is not in the store")
        };
        self.violations.push(Violation {
            check,
            job: id,
            entry: None,
            what: format!("{count} attempts' records left of {of}"),
        });
    }

    /// Reports a tally below what the store still holds of what it counts: a queue's, or
    /// (with `kind`) a kind's in it.
    pub(crate) fn tally_short(
        &mut self,
        metric: String,
        queue: String,
        label: Option<String>,
        kept: i64,
        floor: i64,
        kind: Option<String>,
    ) {
        let of = match label.as_deref() {
            Some("") => metric,
            Some(label) => format!("{metric}({label})"),
            None => format!("{metric}(NULL)"),
        };
        let of = match kind {
            Some(kind) => format!("{of} of kind {kind:?}"),
            None => of,
        };
        self.violations.push(Violation {
            check: Check::TalliesCoverStore,
            job: queue.clone(),
            entry: None,
            what: format!("queue {queue:?} tallies {kept} {of}, but the store holds {floor}"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{busy, tamper};
    use crate::{Check, Violation};

    /// The busy store's records: `crash` was noted by w3, reaped by w4's claim at 1010, then
    /// done; `ok` retried, then done; `exh` exhausted by its report.
    #[test]
    fn the_busy_store_records_every_attempt() {
        let q = busy();
        let records = |id: &str| -> Vec<(u64, String, u64, u64, String, Option<String>)> {
            q.attempts(id)
                .expect("attempts")
                .into_iter()
                .map(|r| (r.attempt, r.worker.expect("holder"), r.claimed_at, r.ended_at, r.outcome, r.error))
                .collect()
        };
        let r = |a: u64, w: &str, c: u64, e: u64, o: &str, err: Option<&str>| {
            (a, w.to_owned(), c, e, o.to_owned(), err.map(str::to_owned))
        };
        assert_eq!(
            records("crash"),
            [r(1, "w3", 10, 1010, "lease expired", Some("exit 3")), r(2, "w4", 1010, 1011, "ok", None)]
        );
        assert_eq!(records("ok"), [r(1, "w1", 0, 1, "retryable", None), r(2, "w2", 60, 61, "ok", None)]);
        assert_eq!(records("exh"), [r(1, "w1", 2, 3, "retryable", None)]);
        assert_eq!(records("late"), []);
        assert!(q.audit().expect("audit").is_clean());
    }

    /// Each tampering with the records or the tallies, made without the guards that would
    /// refuse it, is found, and named.
    #[test]
    fn a_planted_record_or_a_lost_count_is_found() {
        let open_records = "DROP TRIGGER attempts_ended_never_change;";
        let cases: [(&str, String, Check, &str, &str); 12] = [
            (
                "a record of a job that is not in the store",
                "DROP TRIGGER attempts_of_claims;
                 INSERT INTO attempts (job, attempt, worker, claimed_at) VALUES ('ghost', 1, 'w1', 5)"
                    .into(),
                Check::AttemptsRecorded,
                "ghost",
                "1 attempts' records left of a job that is not in the store",
            ),
            (
                "a record of an attempt no claim began",
                "DROP TRIGGER attempts_of_claims;
                 INSERT INTO attempts (job, attempt, worker, claimed_at, ended_at, outcome)
                 VALUES ('ok', 9, 'w1', 5, 6, 'ok')"
                    .into(),
                Check::AttemptsRecorded,
                "ok",
                "a record of attempt 9, which no recorded claim began",
            ),
            (
                "a lost record",
                "DROP TRIGGER attempts_no_delete; DELETE FROM attempts WHERE job = 'crash' AND attempt = 1"
                    .into(),
                Check::AttemptsRecorded,
                "crash",
                "attempt 1 has no record",
            ),
            (
                "a reaped attempt said to have succeeded",
                format!(
                    "{open_records} UPDATE attempts SET outcome = 'ok' WHERE job = 'crash' AND attempt = 1"
                ),
                Check::AttemptsRecorded,
                "crash",
                "attempt 1 ended as \"ok\", where its end allows [\"lease expired\"]",
            ),
            (
                "a report said to have been a reap",
                format!("{open_records} UPDATE attempts SET outcome = 'lease expired' WHERE job = 'perm'"),
                Check::AttemptsRecorded,
                "perm",
                "attempt 1 ended as \"lease expired\", where its end allows [\"permanent\"]",
            ),
            (
                "an end moved",
                format!("{open_records} UPDATE attempts SET ended_at = 7 WHERE job = 'exh'"),
                Check::AttemptsRecorded,
                "exh",
                "attempt 1's record ended at 7, the history at 3",
            ),
            (
                "an ended attempt open again",
                format!(
                    "{open_records} UPDATE attempts SET ended_at = NULL, outcome = NULL WHERE job = 'exh'"
                ),
                Check::AttemptsRecorded,
                "exh",
                "attempt 1's record is open, but the attempt ended at 3",
            ),
            (
                "another holder",
                format!("{open_records} UPDATE attempts SET worker = 'w9' WHERE job = 'exh'"),
                Check::AttemptsRecorded,
                "exh",
                "attempt 1's record says claimed at 2 by Some(\"w9\"), the history at 2 by Some(\"w1\")",
            ),
            (
                "a note past its bound",
                format!(
                    "{open_records} UPDATE attempts SET error = printf('%.*c', 5000, 'x') WHERE job = 'exh'"
                ),
                Check::AttemptsRecorded,
                "exh",
                "attempt 1's error holds 5000 bytes, over 4096",
            ),
            (
                "a claim of a kind not counted",
                "DROP TRIGGER tallies_only_grow;
                 UPDATE tallies SET n = n - 1 WHERE metric = 'claims' AND kind = 'mail'"
                    .into(),
                Check::TalliesCoverStore,
                "default",
                "queue \"default\" tallies 5 claims, but the store holds 6",
            ),
            (
                "a kind's claim counted under another kind",
                "DROP TRIGGER tallies_only_grow;
                 UPDATE tallies SET n = n - 1 WHERE metric = 'claims' AND kind = 'mail';
                 UPDATE tallies SET n = n + 1 WHERE metric = 'claims' AND kind = ''"
                    .into(),
                Check::TalliesCoverStore,
                "default",
                "queue \"default\" tallies 2 claims of kind \"mail\", but the store holds 3",
            ),
            (
                "an ended attempt not counted",
                "DROP TRIGGER tally_buckets_never_deleted;
                 DELETE FROM tally_buckets WHERE metric = 'attempt_duration' AND label = 'lease expired'"
                    .into(),
                Check::TalliesCoverStore,
                "default",
                "queue \"default\" tallies 0 attempts_ended(lease expired), but the store holds 1",
            ),
        ];
        for (what, sql, check, job, said) in cases {
            let q = busy();
            assert!(q.audit().expect("audit").is_clean(), "{what}: clean before");
            tamper(&q, &sql);
            let found: Vec<Violation> = q.audit().expect("audit").violations;
            assert!(
                found.iter().any(|v| v.check == check && v.job == job && v.what == said),
                "{what}: expected {check} on {job} saying {said:?}, found {found:#?}"
            );
        }
    }

    /// A prune that left a job's records behind: the id is a tombstone's, and its records
    /// say the pruned job could still be read as running.
    #[test]
    fn records_left_of_a_pruned_job_are_found() {
        let q = busy();
        tamper(
            &q,
            "DROP TRIGGER tombstones_of_ended_jobs; DROP TRIGGER jobs_never_deleted;
             DROP TRIGGER history_no_delete;
             INSERT INTO tombstones SELECT id, queue, printf('%064d', 0), status, dead_reason, attempts, ended_at
             FROM jobs WHERE id = 'crash';
             DELETE FROM jobs WHERE id = 'crash'; DELETE FROM history WHERE job = 'crash';",
        );
        let found = q.audit().expect("audit").violations;
        let left = Violation {
            check: Check::PrunedStaysPruned,
            job: "crash".into(),
            entry: None,
            what: "2 attempts' records left of a pruned job, whose tombstone stands".into(),
        };
        assert!(found.contains(&left), "{found:#?}");
    }
}
