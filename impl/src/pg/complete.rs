//! `complete`, `complete_batch` and `record_error`: record the outcome of an attempt, or a
//! note on it, fenced by the attempt number.
//!
//! Each decides on a row it has locked: the fence (leased, to this worker, on this attempt,
//! claimed no later than `now`) is in the `WHERE` of the statement that locks the row, so a
//! row is locked only when the call will write it. A call the fence refuses reads the row
//! plainly to say why; if that read finds the fence holding after all, the row changed
//! between the two statements (a claim committed in between), and the call starts over on
//! the row as it now is.
//!
//! The fence names no status: a row has an owner and a claim time exactly when it is leased
//! (the table's check), so `owner = $2` with `claimed_at` set says leased. Named, `status =
//! 'leased'` let the planner answer the lookup by walking every lease in `jobs_leases`
//! instead of the id's index, wherever its statistics saw few leases: a walk that grows
//! with the leases a backlog leaves (`every_write_reaches_its_rows_by_key_on_any_plan`).
//!
//! A retryable outcome can make the job due again, so a completion that may be retryable
//! takes the turn shared; `ok` and `permanent` only take the job out of what is due, and run
//! beside claims (`turn.rs`).

use std::collections::{HashMap, HashSet};

use super::store::{PgQueue, Turn, Tx};
use super::turn;
use super::value::{big, opt_uint, uint, word};
use crate::error::{Error, ErrorKind, Result};
use crate::job::{self, DeadReason, Outcome, Status};
use crate::queue::complete::{Completed, Completion, Held, lease_lost, settle, validate, validate_lease};
use crate::queue::lease::Lease;
use crate::queue::store::Settings;

/// How many times a fenced call starts over when the row changed between its two reads. A
/// row changes under it only when a concurrent claim leases it to the very worker and
/// attempt the call names; more than this in a row is not contention but a bug.
const STARTS: usize = 4;

/// `ok` and `permanent` in one statement: their result does not depend on what the job
/// holds — a cancel request included (SPEC 3.4) — so the whole fence goes in the `WHERE` and
/// no lookup comes first. They only take a job out of what is due, so they take no claims'
/// turn; they end it, so they take the retention's key shared, before the row (`turn.rs`).
/// The job ends at `now`, and its cancel request, if any, with the lease.
pub(super) const FINISH_FENCED: &str = concat!(
    "
    UPDATE jobs SET status = $5, dead_reason = $6, available_at = NULL, owner = NULL,
                    claimed_at = NULL, updated_at = $4, last_error = $7, last_node = $8,
                    ended_at = $4, cancel_requested = false
    FROM pg_advisory_xact_lock_shared(",
    turn::retention_key!(),
    ") AS retention
    WHERE id = $1 AND owner = $2 AND attempts = $3 AND claimed_at <= $4"
);

/// [`FINISH_ALL`]'s text, with `$every` added to its update's `WHERE`.
macro_rules! finish_all {
    ($every:literal) => {
        concat!(
            "
    WITH c AS MATERIALIZED (
        SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[],
                             $6::text[], $7::bytea[], $8::bytea[])
                      WITH ORDINALITY AS c(id, worker, attempt, at, status, reason, error, node, n)),
     locked AS MATERIALIZED (
        SELECT j.seq FROM jobs j JOIN c ON j.id = c.id COLLATE \"C\"
        WHERE j.id = ANY ($1::text[] COLLATE \"C\") AND j.owner = c.worker COLLATE \"C\"
          AND j.attempts = c.attempt AND j.claimed_at <= c.at
        ORDER BY c.n FOR UPDATE OF j)
    UPDATE jobs j SET status = c.status, dead_reason = c.reason, available_at = NULL,
                      owner = NULL, claimed_at = NULL, updated_at = c.at, last_error = c.error,
                      last_node = c.node, ended_at = c.at, cancel_requested = false
    FROM pg_advisory_xact_lock_shared(",
            turn::retention_key!(),
            ") AS retention, c
    WHERE j.seq = ANY (ARRAY(SELECT seq FROM locked)) AND j.id = c.id COLLATE \"C\"",
            $every,
            "
    RETURNING j.id"
        )
    };
}

/// [`FINISH_FENCED`] for many completions at once, each row `$1[i]`… fenced as that
/// statement fences it: the ids it wrote. A batch's `ok` and `permanent` outcomes are one
/// statement, not one each, so that the statement-level tallies run once per batch.
///
/// The rows are locked first in the batch's order (`locked`), as one completion after another
/// would lock them, so that a claim batch locking the same rows in claim order never waits
/// in a cycle with it (the order the update's join takes is no order at all); a row locked
/// stays as the fence saw it, so the update names only its key. The rows are reached by key
/// (the batch's ids, then the locked seqs), never by a walk of every lease: the fence names
/// no status, since a row has an owner exactly when it is leased (the table's check), and
/// `status = 'leased'` let the planner walk the `jobs_leases` index wherever its statistics
/// saw few leases (`every_write_reaches_its_rows_by_key_on_any_plan`).
pub(super) const FINISH_ALL: &str = finish_all!("");

/// [`FINISH_ALL`] as its own transaction (autocommit), all or nothing: it writes the rows
/// only when every one of the batch's fences holds (each row locked, as that statement locks
/// them), else none, so that a batch never commits in two parts. The common case of a
/// worker's batch — every outcome `ok` or `permanent`, every lease still held — is then one
/// round trip where a transaction is four (`BEGIN`, the turn, the statement, `COMMIT`); it
/// takes its turn itself, in its `FROM`, as [`FINISH_FENCED`] does alone.
pub(super) const FINISH_EVERY: &str =
    finish_all!(" AND (SELECT count(*) FROM locked) = cardinality($1::text[])");

/// What `retryable` needs of the job, locked, when the fence holds.
pub(super) const HELD_FENCED: &str = "
    SELECT seq, status, owner, attempts, max_attempts, deadline, claimed_at, base_ms, cap_ms,
           cancel_requested
    FROM jobs
    WHERE id = $1 AND owner = $2 AND attempts = $3 AND claimed_at <= $4
    FOR UPDATE";

/// The same columns, unlocked: why a fence did not hold.
const HELD: &str = "
    SELECT seq, status, owner, attempts, max_attempts, deadline, claimed_at, base_ms, cap_ms,
           cancel_requested
    FROM jobs WHERE id = $1";

/// Whether an id that names no job is a pruned one's: its fence fails (SPEC 6.30).
pub(super) const PRUNED: &str = "SELECT EXISTS (SELECT 1 FROM tombstones WHERE id = $1)";

const FINISH: &str = "
    UPDATE jobs SET status = $2, dead_reason = $3, available_at = NULL, owner = NULL,
                    claimed_at = NULL, updated_at = $4, last_error = $5, last_node = $6,
                    ended_at = $4, cancel_requested = false
    WHERE seq = $1";

/// A retry: only without a cancel request, so there is none to clear.
const RETRY: &str = "
    UPDATE jobs SET status = 'pending', available_at = $2, owner = NULL, claimed_at = NULL,
                    updated_at = $3, last_error = $4, last_node = $5
    WHERE seq = $1";

/// Notes on a live lease, fenced like a completion. Names no state column and not
/// `updated_at`, so it is not a transition.
pub(super) const NOTE: &str = "
    UPDATE jobs SET last_error = $4, last_node = $5
    WHERE id = $1 AND owner = $2 AND attempts = $3 AND claimed_at IS NOT NULL";

impl PgQueue {
    /// [`Queue::complete`](crate::Queue::complete) on PostgreSQL: records the outcome of the
    /// attempt the lease names, which must still be held; the same rules, the same
    /// refusals in the same order.
    pub fn complete(&mut self, c: &Completion<'_>) -> Result<Completed> {
        validate(c)?;
        // `ok` and `permanent` whose fence holds — the common case — are one fenced statement,
        // run as its own transaction; anything else (a retry, a refusal to explain) goes
        // the whole way in one transaction, which tries the fenced statement first again.
        let finished = match c.report.outcome {
            Outcome::Ok => Some((Status::Done, None)),
            Outcome::Permanent => Some((Status::Dead, Some(DeadReason::Permanent))),
            Outcome::Retryable => None,
        };
        if let Some((status, reason)) = finished {
            let lease = c.lease;
            let error = job::note(c.report.error.as_deref()).map(str::as_bytes);
            let node = job::note(c.report.node.as_deref()).map(str::as_bytes);
            let (attempt, at) = (big("attempt", lease.attempt)?, big("now", c.now)?);
            let reason_word = reason.map(DeadReason::as_str);
            let params: [&(dyn postgres::types::ToSql + Sync); 8] =
                [&lease.id, &lease.worker, &attempt, &at, &status.as_str(), &reason_word, &error, &node];
            if self.single(FINISH_FENCED, &params)? == 1 {
                return Ok(match reason {
                    None => Completed::Done,
                    Some(reason) => Completed::Dead { reason },
                });
            }
        }
        let settings = self.settings;
        self.write(turn(std::slice::from_ref(c)), |tx| record(tx, &settings, c))
    }

    /// [`Queue::complete_batch`](crate::Queue::complete_batch) on PostgreSQL: one
    /// transaction, each completion answered on its own; a storage failure fails the batch.
    pub fn complete_batch(&mut self, completions: &[Completion<'_>]) -> Result<Vec<Result<Completed>>> {
        if completions.is_empty() {
            return Ok(Vec::new());
        }
        // Every outcome `ok` or `permanent`, of jobs named once, valid — a worker's common
        // batch — is one statement, its own transaction, that writes all or none; anything
        // else, or a fence that did not hold, goes the whole way in one transaction.
        let picked = finishing(completions);
        let finish = Finish::of(completions, &picked)?;
        if picked.len() == completions.len()
            && self.alone(FINISH_EVERY, &finish.params(), postgres::Client::query)?.len() == picked.len()
        {
            return Ok(picked.into_iter().map(|(_, completed)| Ok(completed)).collect());
        }
        let settings = self.settings;
        self.write(turn(completions), |tx| {
            let finished = finish_all(tx, completions, &picked, &finish)?;
            let mut results = Vec::with_capacity(completions.len());
            for (c, finished) in completions.iter().zip(finished) {
                let result = match finished {
                    Some(completed) => Ok(completed),
                    None => validate(c).and_then(|()| record(tx, &settings, c)),
                };
                match result {
                    Err(e) if e.kind() == ErrorKind::Storage => return Err(e),
                    result => results.push(result),
                }
            }
            Ok(results)
        })
    }

    /// [`Queue::record_error`](crate::Queue::record_error) on PostgreSQL: a note on a lease
    /// still held, not a transition.
    pub fn record_error(&mut self, lease: &Lease, error: &str, node: Option<&str>) -> Result<()> {
        validate_lease(lease)?;
        let error = job::note(Some(error)).map(str::as_bytes);
        let node = job::note(node).map(str::as_bytes);
        let attempt = big("attempt", lease.attempt)?;
        self.write(Turn::Beside, |tx| {
            for _ in 0..STARTS {
                if tx.execute(NOTE, &[&lease.id, &lease.worker, &attempt, &error, &node])? == 1 {
                    return Ok(());
                }
                let Some((held, _)) = load(tx, &lease.id)? else {
                    return Err(not_held(tx, lease)?);
                };
                if !holds(&held, lease) {
                    return Err(lease_lost(lease));
                }
            }
            Err(changed(&lease.id))
        })
    }
}

/// The turn of a transaction recording `completions`: shared when one may be a retry, which
/// can make its job due again; else the retention's key, since each may end its job
/// (`turn.rs`).
fn turn(completions: &[Completion<'_>]) -> Turn {
    if completions.iter().any(|c| c.report.outcome == Outcome::Retryable) {
        Turn::Shared
    } else {
        Turn::Ending
    }
}

/// The batch's `ok` and `permanent` completions that one statement may write: valid, and of
/// a job the batch names once. Each with its index in the batch and its answer if written.
fn finishing(completions: &[Completion<'_>]) -> Vec<(usize, Completed)> {
    let mut named: HashMap<&str, usize> = HashMap::new();
    for c in completions {
        *named.entry(c.lease.id.as_str()).or_default() += 1;
    }
    let mut picked = Vec::new();
    for (i, c) in completions.iter().enumerate() {
        let completed = match c.report.outcome {
            Outcome::Ok => Completed::Done,
            Outcome::Permanent => Completed::Dead { reason: DeadReason::Permanent },
            Outcome::Retryable => continue,
        };
        if named.get(c.lease.id.as_str()) == Some(&1) && validate(c).is_ok() {
            picked.push((i, completed));
        }
    }
    picked
}

/// [`FINISH_ALL`]'s or [`FINISH_EVERY`]'s parameters for the completions `picked`.
struct Finish<'a> {
    ids: Vec<&'a str>,
    workers: Vec<&'a str>,
    attempts: Vec<i64>,
    ats: Vec<i64>,
    statuses: Vec<&'static str>,
    reasons: Vec<Option<&'static str>>,
    errors: Vec<Option<&'a [u8]>>,
    nodes: Vec<Option<&'a [u8]>>,
}

impl<'a> Finish<'a> {
    fn of(completions: &'a [Completion<'_>], picked: &[(usize, Completed)]) -> Result<Finish<'a>> {
        let n = picked.len();
        let mut f = Finish {
            ids: Vec::with_capacity(n),
            workers: Vec::with_capacity(n),
            attempts: Vec::with_capacity(n),
            ats: Vec::with_capacity(n),
            statuses: Vec::with_capacity(n),
            reasons: Vec::with_capacity(n),
            errors: Vec::with_capacity(n),
            nodes: Vec::with_capacity(n),
        };
        for &(i, completed) in picked {
            let c = &completions[i];
            let (status, reason) = match completed {
                Completed::Dead { reason } => (Status::Dead.as_str(), Some(reason.as_str())),
                _ => (Status::Done.as_str(), None),
            };
            f.ids.push(c.lease.id.as_str());
            f.workers.push(c.lease.worker.as_str());
            f.attempts.push(big("attempt", c.lease.attempt)?);
            f.ats.push(big("now", c.now)?);
            f.statuses.push(status);
            f.reasons.push(reason);
            f.errors.push(job::note(c.report.error.as_deref()).map(str::as_bytes));
            f.nodes.push(job::note(c.report.node.as_deref()).map(str::as_bytes));
        }
        Ok(f)
    }

    fn params(&self) -> [&(dyn postgres::types::ToSql + Sync); 8] {
        [
            &self.ids,
            &self.workers,
            &self.attempts,
            &self.ats,
            &self.statuses,
            &self.reasons,
            &self.errors,
            &self.nodes,
        ]
    }
}

/// The batch's valid `ok` and `permanent` completions whose fence holds (`picked`, of
/// [`finishing`], with their parameters `finish`), written by one [`FINISH_ALL`]: for each
/// completion, its answer when it was one of them. A job named twice in the batch is left to
/// [`record`], one completion after the other, as is everything else (a retry, a refusal to
/// explain): their jobs are other rows, so writing these first answers as the batch's order
/// would.
fn finish_all(
    tx: &mut Tx<'_>,
    completions: &[Completion<'_>],
    picked: &[(usize, Completed)],
    finish: &Finish<'_>,
) -> Result<Vec<Option<Completed>>> {
    let mut answers = vec![None; completions.len()];
    if picked.is_empty() {
        return Ok(answers);
    }
    let written: HashSet<String> = tx
        .query(FINISH_ALL, &finish.params())?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<std::result::Result<_, _>>()?;
    for &(i, completed) in picked {
        if written.contains(completions[i].lease.id.as_str()) {
            answers[i] = Some(completed);
        }
    }
    Ok(answers)
}

/// `complete`'s fence, lookup and write inside the caller's transaction, once validated. A
/// refusal comes before any write, and locks nothing.
fn record(tx: &mut Tx<'_>, settings: &Settings, c: &Completion<'_>) -> Result<Completed> {
    let Completion { lease, report, now, jitter } = c;
    let (id, now) = (&lease.id, *now);
    let error = job::note(report.error.as_deref()).map(str::as_bytes);
    let node = job::note(report.node.as_deref()).map(str::as_bytes);
    let (attempt, at) = (big("attempt", lease.attempt)?, big("now", now)?);
    for _ in 0..STARTS {
        let finished = match report.outcome {
            Outcome::Ok => Some((Status::Done, None)),
            Outcome::Permanent => Some((Status::Dead, Some(DeadReason::Permanent))),
            Outcome::Retryable => None,
        };
        if let Some((status, reason)) = finished {
            let reason_word = reason.map(DeadReason::as_str);
            let written = tx.execute(
                FINISH_FENCED,
                &[&id, &lease.worker, &attempt, &at, &status.as_str(), &reason_word, &error, &node],
            )?;
            if written == 1 {
                return Ok(match reason {
                    None => Completed::Done,
                    Some(reason) => Completed::Dead { reason },
                });
            }
        } else if let Some(row) = tx.query_opt(HELD_FENCED, &[&id, &lease.worker, &attempt, &at])? {
            let (held, cancel_requested) = held(&row)?;
            // With a cancel request standing a retry is no more: the attempt ends the job,
            // whatever its budget and deadline, and no delay is computed (SPEC 3.4, 6.25).
            let completed = if cancel_requested {
                Completed::Dead { reason: DeadReason::Cancelled }
            } else {
                settle(&held, report.outcome, report.retry_after_ms, now, settings, *jitter)?
            };
            write(tx, held.seq, completed, at, error, node)?;
            return Ok(completed);
        }
        // The fence did not hold: say why, in SPEC 3.4's order.
        let Some((held, _)) = load(tx, id)? else {
            return Err(not_held(tx, lease)?);
        };
        if !holds(&held, lease) {
            return Err(lease_lost(lease));
        }
        let claimed_at = held
            .claimed_at
            .ok_or_else(|| Error::Corrupt(format!("job {id:?} is leased without a claim time")))?;
        if now < claimed_at {
            return Err(Error::ClockWentBackwards { now, claimed_at });
        }
    }
    Err(changed(id))
}

/// The write of a settled completion, by the seq locked.
fn write(
    tx: &mut Tx<'_>,
    seq: i64,
    completed: Completed,
    at: i64,
    error: Option<&[u8]>,
    node: Option<&[u8]>,
) -> Result<()> {
    match completed {
        Completed::Done => {
            tx.execute(FINISH, &[&seq, &Status::Done.as_str(), &None::<&str>, &at, &error, &node])?
        }
        Completed::Dead { reason } => {
            tx.execute(FINISH, &[&seq, &Status::Dead.as_str(), &Some(reason.as_str()), &at, &error, &node])?
        }
        Completed::Retry { available_at } => {
            tx.execute(RETRY, &[&seq, &big("available_at", available_at)?, &at, &error, &node])?
        }
    };
    Ok(())
}

/// Whether the job is leased to the lease's worker on its attempt: the fence.
fn holds(held: &Held, lease: &Lease) -> bool {
    held.status == Status::Leased
        && held.owner.as_deref() == Some(lease.worker.as_str())
        && held.attempts == lease.attempt
}

/// Neither applied nor refused after every start: the row kept changing under the call.
fn changed(id: &str) -> Error {
    Error::Corrupt(format!("job {id:?} changed under a fenced call {STARTS} times"))
}

/// The refusal of a lease on an id that names no job: `lease_lost` for a pruned id, whose
/// job ended (SPEC 6.30), else `not_found`.
pub(super) fn not_held(tx: &mut Tx<'_>, lease: &Lease) -> Result<Error> {
    let pruned: bool = tx.query_one(PRUNED, &[&lease.id])?.try_get(0)?;
    Ok(if pruned { lease_lost(lease) } else { Error::NotFound { id: lease.id.clone() } })
}

/// The job a completion names, and whether a cancel request stands on it.
fn load(tx: &mut Tx<'_>, id: &str) -> Result<Option<(Held, bool)>> {
    tx.query_opt(HELD, &[&id])?.map(|row| held(&row)).transpose()
}

/// A row of [`HELD`] or [`HELD_FENCED`], and its cancel request.
fn held(row: &postgres::Row) -> Result<(Held, bool)> {
    let held = Held {
        seq: row.try_get(0)?,
        status: word(row, 1)?,
        owner: row.try_get(2)?,
        attempts: uint(row, 3)?,
        max_attempts: uint(row, 4)?,
        deadline: uint(row, 5)?,
        claimed_at: opt_uint(row, 6)?,
        base_ms: opt_uint(row, 7)?,
        cap_ms: opt_uint(row, 8)?,
    };
    Ok((held, row.try_get(9)?))
}
