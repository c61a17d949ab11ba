//! `claim`, `claim_batch` and `reap`: quarantine what is out of budget, then lease the next
//! due job(s).
//!
//! # Why `SKIP LOCKED` keeps claim's order
//!
//! SPEC 3.3.2 says a claim takes the claimable job with the smallest `available_at` (ties to
//! the first enqueued). Concurrent claims that all waited for the head of the queue would run
//! one at a time; with `FOR UPDATE SKIP LOCKED` each takes the first due row that no other
//! transaction holds, so `n` workers claim `n` jobs at once. A row is skipped only while
//! another transaction holds its lock, and every write here locks only the rows it is about
//! to change (see `pg/mod.rs`): a refused completion, heartbeat, cancel or redrive decides on
//! a plain read and locks nothing. So a skipped row is one that, at that instant, a
//! concurrent transaction is
//!
//! - claiming or reaping (it leaves the claimable set, or is leased with a later expiry),
//! - completing or heartbeating on a fence that held (done, dead, a retry reserved from that
//!   operation's `now`, or a lease extended from it), or cancelling (dead);
//!
//! and in every one of these cases the serial order in which that transaction comes first
//! and this claim second gives exactly this claim's answer — as long as the callers' clocks
//! agree, which is what SPEC 1.3's one shared time base is for. Two cases leave the skipped
//! row claimable: a note on an expired lease (`record_error`, which is no transition) and a
//! transaction that rolls back (a failure, a lost connection). There this claim takes the
//! next due job and the skipped one stays claimable, for the very next claim: it is delayed
//! by the length of one transaction, never lost, never claimed twice, and every invariant of
//! SPEC section 4 holds. Without `SKIP LOCKED`, a claim that waited for a row which the
//! holder then took out of the claimable set would find *no* row (READ COMMITTED rechecks
//! the locked row, and `LIMIT 1` has then nothing left), answering `none` while jobs are
//! due — the worse failure.
//!
//! # Why the pick repeats the budget
//!
//! Under READ COMMITTED each statement sees what was committed when it began, so a claim's
//! reap and its pick see two instants. A row may become due and out of budget between them
//! (another connection enqueues with an earlier `now` a job whose deadline this claim's
//! `now` has passed; another claim leases a last attempt whose lease this `now` has passed).
//! The pick therefore takes only rows with `deadline > now` and `attempts < max_attempts`:
//! what the reap left is in budget already, so on one connection this filters nothing and
//! the answer is SQLite's, and across connections nothing out of budget is ever claimed
//! (SPEC 4.4); such a row waits for the next reap.

use super::store::{PgQueue, Tx};
use super::value::{big, opt_utf8, uint, utf8};
use crate::error::Result;
use crate::input;
use crate::queue::claim::Claimed;
use crate::queue::lease::Lease;

/// A lease on the last attempt that expired: the budget is spent. A row another transaction
/// holds is waited for, then looked at again as it committed.
const REAP_EXHAUSTED: &str = "
    UPDATE jobs SET status = 'dead', dead_reason = 'exhausted', available_at = NULL,
                    owner = NULL, claimed_at = NULL, updated_at = $1
    WHERE status = 'leased' AND attempts >= max_attempts AND available_at <= $1";

/// A pending job, or an expired lease, whose deadline has come: no time is left to start.
const REAP_DEADLINE: &str = "
    UPDATE jobs SET status = 'dead', dead_reason = 'deadline', available_at = NULL,
                    owner = NULL, claimed_at = NULL, updated_at = $1
    WHERE status IN ('pending', 'leased') AND deadline <= $1
      AND (status = 'pending' OR available_at <= $1)";

/// Leases the due job with the smallest `available_at`, ties to the first enqueued, that no
/// other transaction holds (see the module's doc for the order and the budget terms).
const CLAIM: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, claimed_at = $1,
                    available_at = $3, updated_at = $1
    WHERE seq = (SELECT seq FROM jobs
                 WHERE status IN ('pending', 'leased') AND available_at <= $1
                   AND deadline > $1 AND attempts < max_attempts
                 ORDER BY available_at, seq LIMIT 1
                 FOR UPDATE SKIP LOCKED)
    RETURNING id, attempts, payload, deadline, last_node";

/// The seqs of up to `$2` due jobs in claim order, locked: what `$2` picks of [`CLAIM`] one
/// after another would take, since a job just leased expires after `now`.
const PICK: &str = "
    SELECT seq FROM jobs
    WHERE status IN ('pending', 'leased') AND available_at <= $1
      AND deadline > $1 AND attempts < max_attempts
    ORDER BY available_at, seq LIMIT $2
    FOR UPDATE SKIP LOCKED";

/// Leases one picked (and locked) job: [`CLAIM`]'s write, by seq.
const LEASE: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, claimed_at = $1,
                    available_at = $3, updated_at = $1
    WHERE seq = $4
    RETURNING id, attempts, payload, deadline, last_node";

impl PgQueue {
    /// [`Queue::claim`](crate::Queue::claim) on PostgreSQL: reaps, then leases the claimable
    /// job with the smallest `available_at` to `worker` until `now + lease_ms`, in one
    /// transaction; `None` when nothing is due.
    pub fn claim(&mut self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        input::name("worker", worker)?;
        input::int("now", now)?;
        let lease_ms = self.settings.lease_ms;
        self.write(|tx| {
            reap(tx, now)?;
            lease_next(tx, worker, now, lease_ms)
        })
    }

    /// [`Queue::claim_batch`](crate::Queue::claim_batch) on PostgreSQL: up to `k` claims in
    /// one transaction, exactly as `k` single claims at `now` would answer.
    pub fn claim_batch(&mut self, worker: &str, now: u64, k: usize) -> Result<Vec<Claimed>> {
        input::name("worker", worker)?;
        input::int("now", now)?;
        if k == 0 {
            return Ok(Vec::new());
        }
        let lease_ms = self.settings.lease_ms;
        self.write(|tx| {
            // As on SQLite: a job just leased expires after `now`, so one reap is all of them.
            reap(tx, now)?;
            lease_picked(tx, worker, now, lease_ms, k)
        })
    }

    /// [`Queue::reap`](crate::Queue::reap) on PostgreSQL: claim's first step alone; how many
    /// jobs moved to `dead`.
    pub fn reap(&mut self, now: u64) -> Result<u64> {
        input::int("now", now)?;
        self.write(|tx| reap(tx, now))
    }
}

/// Claim's step 1 inside the caller's transaction. Exhaustion first: an expired lease on the
/// last attempt is `exhausted` even when its deadline has also passed (SPEC 6.4).
fn reap(tx: &mut Tx<'_>, now: u64) -> Result<u64> {
    let now = big("now", now)?;
    let exhausted = tx.execute(REAP_EXHAUSTED, &[&now])?;
    let late = tx.execute(REAP_DEADLINE, &[&now])?;
    Ok(exhausted + late)
}

/// Claim's steps 2 and 3 (pick and lease) inside the caller's transaction, once reaped.
fn lease_next(tx: &mut Tx<'_>, worker: &str, now: u64, lease_ms: u64) -> Result<Option<Claimed>> {
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let lease_until = now + lease_ms;
    let row = tx.query_opt(CLAIM, &[&big("now", now)?, &worker, &big("lease_until", lease_until)?])?;
    row.map(|row| claimed(&row, worker, lease_until)).transpose()
}

/// Up to `k` claims inside the caller's transaction, once reaped: the due jobs are picked
/// and locked with one walk of the index, then leased one by one in claim order, so that
/// each job's row and history are written exactly as `k` calls of [`lease_next`] would.
fn lease_picked(tx: &mut Tx<'_>, worker: &str, now: u64, lease_ms: u64, k: usize) -> Result<Vec<Claimed>> {
    let limit = i64::try_from(k).unwrap_or(i64::MAX);
    let at = big("now", now)?;
    let seqs = tx.query(PICK, &[&at, &limit])?;
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let lease_until = now + lease_ms;
    let until = big("lease_until", lease_until)?;
    let mut leased = Vec::with_capacity(seqs.len());
    for seq in seqs {
        let seq: i64 = seq.try_get(0)?;
        let row = tx.query_one(LEASE, &[&at, &worker, &until, &seq])?;
        leased.push(claimed(&row, worker, lease_until)?);
    }
    Ok(leased)
}

/// A row of [`CLAIM`]'s or [`LEASE`]'s `RETURNING`.
fn claimed(row: &postgres::Row, worker: &str, lease_until: u64) -> Result<Claimed> {
    Ok(Claimed {
        lease: Lease { worker: worker.to_owned(), id: row.try_get(0)?, attempt: uint(row, 1)? },
        lease_until,
        payload: utf8(row, 2)?,
        deadline: uint(row, 3)?,
        last_node: opt_utf8(row, 4)?,
    })
}
