//! `claim`, `claim_batch` and `reap`: quarantine what is out of budget, then lease the next
//! due job(s).
//!
//! # Why claims take turns
//!
//! SPEC 3.3.2 says a claim takes the claimable job with the smallest `available_at` (ties to
//! the first enqueued), and SPEC 3.10 that concurrent operations are linearizable. Claims and
//! reaps therefore run in the turn alone, and every write that can make a job due in it
//! shared: see `turn.rs` for why a claim may not step over rows others hold, and why no such
//! write may commit between a claim's snapshot and its commit.
//!
//! # Why the lease is fenced by the row's version
//!
//! A claim's pick reads the statement's snapshot and chooses the first due row there; its
//! write then waits for a row another transaction holds (a completion, a heartbeat, a cancel
//! of that job) instead of stepping over it. Once that transaction commits, the row may still
//! be due and yet no longer first: a heartbeat moved its expiry past another job's
//! `available_at`, or a retry's backoff did. Leasing it then mixes two instants — the other
//! transaction's write, which the claim overwrites and so must follow, and a choice made
//! before it — and no order explains the answers (the linearizability check caught exactly
//! this: a heartbeat answered `extended` while the claim that overwrote it took the job the
//! heartbeat had pushed behind another). So the write takes the row only in the version the
//! pick chose (`xmin`, the transaction that wrote that version, unchanged): then nothing
//! touched it between the snapshot and the lock, the choice is the snapshot's, and the claim
//! takes its place in the order at its snapshot. A row that changed is not leased; the pick
//! runs again on what is committed now. The writes that hold a row a claim may want are
//! the ones that run beside claims, without the turn (`turn.rs`).
//!
//! The price of taking turns is that claims commit one at a time, and that enqueues, retries
//! and redrives wait while a claim runs: claims per second are bounded by the server's commit
//! latency, while `ok` completions, heartbeats, notes and cancels run beside claims, and
//! every write beside the others (each locks only its own rows). A worker claims for all its
//! free slots in one transaction (`claim_batch`), so a process running many attempts at once
//! pays one turn for many jobs. `docs/postgres.md` has the figures.
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

use super::store::{PgQueue, Turn, Tx};
use super::value::{big, opt_utf8, uint, utf8};
use crate::error::Result;
use crate::input;
use crate::queue::claim::Claimed;
use crate::queue::lease::Lease;

/// Both reaps in one statement (each a CTE; one round trip): a lease on the last attempt
/// that expired is `exhausted` — first, even when its deadline has also passed (SPEC 6.4),
/// which is why `late` leaves such rows to it — and a pending job, or an expired lease,
/// whose deadline has come is `deadline`. The two sets are disjoint, so no row is written
/// twice by the statement. A row another transaction holds is waited for, then looked at
/// again as it committed.
macro_rules! reaps {
    () => {
        "exhausted AS (
            UPDATE jobs SET status = 'dead', dead_reason = 'exhausted', available_at = NULL,
                            owner = NULL, claimed_at = NULL, updated_at = $1
            WHERE status = 'leased' AND attempts >= max_attempts AND available_at <= $1
            RETURNING 1),
         late AS (
            UPDATE jobs SET status = 'dead', dead_reason = 'deadline', available_at = NULL,
                            owner = NULL, claimed_at = NULL, updated_at = $1
            WHERE status IN ('pending', 'leased') AND deadline <= $1
              AND (status = 'pending' OR available_at <= $1)
              AND NOT (status = 'leased' AND attempts >= max_attempts)
            RETURNING 1)"
    };
}

/// Claim's step 1 alone: how many jobs the reaps moved to `dead`.
const REAP: &str =
    concat!("WITH ", reaps!(), " SELECT (SELECT count(*) FROM exhausted) + (SELECT count(*) FROM late)");

/// Reaps, and leases the due job with the smallest `available_at`, ties to the first
/// enqueued, in one statement (one round trip). The pick sees the statement's snapshot, from
/// before the reaps, but takes only rows in budget, which no reap touches; the write takes the
/// row only in the version the pick saw (see the module's doc), so it comes back empty when
/// another transaction changed that row meanwhile.
pub(super) const CLAIM: &str = concat!(
    "WITH ",
    reaps!(),
    ",
     first AS (
        SELECT seq, xmin AS version FROM jobs
        WHERE status IN ('pending', 'leased') AND available_at <= $1
          AND deadline > $1 AND attempts < max_attempts
        ORDER BY available_at, seq LIMIT 1),
     picked AS (
        UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, claimed_at = $1,
                        available_at = $3, updated_at = $1
        WHERE seq = (SELECT seq FROM first) AND xmin = (SELECT version FROM first)
        RETURNING id, attempts, payload, deadline, last_node)
     SELECT id, attempts, payload, deadline, last_node FROM picked"
);

/// The seqs of up to `$2` due jobs in claim order, with the version of each row the pick saw
/// (`xmin`, as a number, to hand back to [`LEASE`]): what `$2` picks of [`CLAIM`] one after
/// another would take, since a job just leased expires after `now`.
pub(super) const PICK: &str = "
    SELECT seq, xmin::text::bigint FROM jobs
    WHERE status IN ('pending', 'leased') AND available_at <= $1
      AND deadline > $1 AND attempts < max_attempts
    ORDER BY available_at, seq LIMIT $2";

/// Whether any job is due and in budget, as committed now: after a pick came back short,
/// whether to pick again.
const ANY_DUE: &str = "
    SELECT EXISTS (SELECT 1 FROM jobs
                   WHERE status IN ('pending', 'leased') AND available_at <= $1
                     AND deadline > $1 AND attempts < max_attempts)";

/// Leases one picked job, [`CLAIM`]'s write by seq: only in the version [`PICK`] saw, so no
/// row when another transaction changed it meanwhile.
const LEASE: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, claimed_at = $1,
                    available_at = $3, updated_at = $1
    WHERE seq = $4 AND xmin::text::bigint = $5
    RETURNING id, attempts, payload, deadline, last_node";

/// A batch's leases are undone together when one of its rows changed (see [`lease_picked`]).
const MARK: &str = "SAVEPOINT pick";
const UNDO: &str = "ROLLBACK TO SAVEPOINT pick";
const KEEP: &str = "RELEASE SAVEPOINT pick";

impl PgQueue {
    /// [`Queue::claim`](crate::Queue::claim) on PostgreSQL: reaps, then leases the claimable
    /// job with the smallest `available_at` to `worker` until `now + lease_ms`, in one
    /// transaction; `None` when nothing is due.
    pub fn claim(&mut self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        input::name("worker", worker)?;
        input::int("now", now)?;
        let lease_ms = self.settings.lease_ms;
        self.write(Turn::Alone, |tx| lease_next(tx, worker, now, lease_ms))
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
        self.write(Turn::Alone, |tx| {
            // As on SQLite: a job just leased expires after `now`, so one reap is all of them.
            reap(tx, now)?;
            lease_picked(tx, worker, now, lease_ms, k)
        })
    }

    /// [`Queue::reap`](crate::Queue::reap) on PostgreSQL: claim's first step alone; how many
    /// jobs moved to `dead`.
    pub fn reap(&mut self, now: u64) -> Result<u64> {
        input::int("now", now)?;
        self.write(Turn::Alone, |tx| reap(tx, now))
    }
}

/// Claim's step 1 inside the caller's transaction, in its turn. Exhaustion first: an expired
/// lease on the last attempt is `exhausted` even when its deadline has also passed (SPEC 6.4).
fn reap(tx: &mut Tx<'_>, now: u64) -> Result<u64> {
    let reaped: i64 = tx.query_one(REAP, &[&big("now", now)?])?.try_get(0)?;
    uint_of(reaped)
}

fn uint_of(count: i64) -> Result<u64> {
    u64::try_from(count).map_err(|_| crate::error::Error::Corrupt(format!("a reap counted {count} rows")))
}

/// Claim's three steps (reap, pick and lease) inside the caller's transaction, in its turn.
fn lease_next(tx: &mut Tx<'_>, worker: &str, now: u64, lease_ms: u64) -> Result<Option<Claimed>> {
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let lease_until = now + lease_ms;
    let (at, until) = (big("now", now)?, big("lease_until", lease_until)?);
    loop {
        if let Some(row) = tx.query_opt(CLAIM, &[&at, &worker, &until])? {
            return claimed(&row, worker, lease_until).map(Some);
        }
        // Empty: nothing is due, or the row chosen changed while this claim waited for it;
        // then pick again among what is committed now.
        if !any_due(tx, at)? {
            return Ok(None);
        }
    }
}

/// Up to `k` claims inside the caller's transaction, once reaped: the due jobs are picked
/// with one walk of the index, then leased one by one in claim order, so that each job's row
/// and history are written exactly as `k` calls of [`lease_next`] would. When one of the
/// picked rows changed before its lease (another transaction held it), the leases of that pick
/// are undone and the pick runs again on what is committed now: leasing the rest would lease
/// them in an order that was first only before the change. A pick that came back short is
/// repeated for the rest while anything is due.
fn lease_picked(tx: &mut Tx<'_>, worker: &str, now: u64, lease_ms: u64, k: usize) -> Result<Vec<Claimed>> {
    let at = big("now", now)?;
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let lease_until = now + lease_ms;
    let until = big("lease_until", lease_until)?;
    let mut leased = Vec::with_capacity(k.min(1024));
    'pick: while leased.len() < k {
        let want = k - leased.len();
        let limit = i64::try_from(want).unwrap_or(i64::MAX);
        tx.batch(MARK)?;
        let picks = tx.query(PICK, &[&at, &limit])?;
        let short = picks.len() < want;
        let mut fresh = Vec::with_capacity(picks.len());
        for pick in picks {
            let (seq, version): (i64, i64) = (pick.try_get(0)?, pick.try_get(1)?);
            match tx.query_opt(LEASE, &[&at, &worker, &until, &seq, &version])? {
                Some(row) => fresh.push(claimed(&row, worker, lease_until)?),
                None => {
                    tx.batch(UNDO)?;
                    continue 'pick;
                }
            }
        }
        tx.batch(KEEP)?;
        leased.append(&mut fresh);
        // Every job leased here expires after `now`, so a new pick never takes it again.
        if short && !any_due(tx, at)? {
            break;
        }
    }
    Ok(leased)
}

fn any_due(tx: &mut Tx<'_>, at: i64) -> Result<bool> {
    Ok(tx.query_one(ANY_DUE, &[&at])?.try_get(0)?)
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
