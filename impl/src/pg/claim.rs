//! `claim`, `claim_batch` and `reap`: quarantine what is out of budget or asked to stop, in
//! every queue, then lease the next due job(s) of the queues a claim serves.
//!
//! # Why claims take turns
//!
//! SPEC 3.3.2 says a claim takes the claimable job of its queues with the smallest
//! `(priority, available_at)` (ties to the first enqueued), and SPEC 3.10 that concurrent
//! operations are linearizable. Claims and
//! reaps therefore run in the turn alone, and every write that can make a job due in it
//! shared: see `turn.rs` for why a claim may not step over rows others hold, and why no such
//! write may commit between a claim's snapshot and its commit.
//!
//! # Why the lease is fenced by the row's version
//!
//! A claim's pick reads the statement's snapshot and chooses the first due row there; its
//! write then waits for a row another transaction holds (a completion, a heartbeat, a note
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
//! The price of taking turns is that claims commit one at a time, and that enqueues, retries,
//! redrives and cancels wait while a claim runs: claims per second are bounded by the server's commit
//! latency, while `ok` completions, heartbeats and notes run beside claims, and
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

use super::ddl::{deadline_rows, due_rows};
use super::store::{PgQueue, Turn, Tx};
use super::value::{big, opt_utf8, uint, utf8};
use crate::error::Result;
use crate::input;
use crate::job::DEFAULT_QUEUE;
use crate::queue::claim::{Claimed, batch_reap_limit};
use crate::queue::lease::Lease;
use crate::queue::store::Settings;

/// Which expired leases [`REAP`] ends `cancelled` at `$1` (SPEC 6.25).
macro_rules! cancelling {
    () => {
        "status = 'leased' AND cancel_requested AND available_at <= $1"
    };
}

/// Which expired leases [`REAP`] ends `exhausted` at `$1`, of those it does not cancel.
macro_rules! exhausted {
    () => {
        "status = 'leased' AND attempts >= max_attempts AND available_at <= $1 AND NOT cancel_requested"
    };
}

/// Which pending jobs and expired leases [`REAP`] ends `deadline` at `$1`, of the rest: the
/// rows of `jobs_open_deadline` ([`deadline_rows`], its mark stated).
macro_rules! late {
    () => {
        concat!(
            deadline_rows!(),
            " AND deadline <= $1
          AND (status = 'pending' OR available_at <= $1)
          AND NOT (status = 'leased' AND attempts >= max_attempts)
          AND NOT cancel_requested"
        )
    };
}

/// The three reaps in one statement (one round trip), over every queue (SPEC 6.27), at most
/// `$2` jobs in all, in SPEC 3.3.1's order (SPEC 6.37): first the expired leases with a
/// cancel request (SPEC 6.25), by expiry, then, of the rest, the expired leases on their last
/// attempt (`exhausted`, even when the deadline has also passed: SPEC 6.4), by expiry, then
/// the pending jobs and expired leases whose deadline has come, by deadline; ties by first
/// enqueue (`seq`). Each rule's pick walks its own index in that order and stops at what the
/// rules before it left of the limit, so a reap costs what it ends. The three sets are
/// disjoint, so no row is written twice. Each write takes its row only in the version its
/// pick saw (`xmin`, as a claim does: see the module's doc): a row another transaction changed
/// meanwhile (a heartbeat, a completion, a note) is not written, and the statement answers
/// how many rows it picked and how many it wrote, so that the caller can run it again on
/// what is committed then. Each write reaches its rows by key (`seq = ANY (ARRAY(…))`): the
/// store's statements are prepared once per connection, and a generic plan joined the late
/// jobs to the whole primary key, from its start to the last seq picked, on every reap that
/// ended one (`every_write_reaches_its_rows_by_key_on_any_plan`).
pub(super) const REAP: &str = concat!(
    "
    WITH cancel_pick AS MATERIALIZED (
        SELECT seq, xmin AS version FROM jobs WHERE ",
    cancelling!(),
    "
        ORDER BY available_at, seq LIMIT $2),
     exhaust_pick AS MATERIALIZED (
        SELECT seq, xmin AS version FROM jobs WHERE ",
    exhausted!(),
    "
        ORDER BY available_at, seq LIMIT $2 - (SELECT count(*) FROM cancel_pick)),
     late_pick AS MATERIALIZED (
        SELECT seq, xmin AS version FROM jobs WHERE ",
    late!(),
    "
        ORDER BY deadline, seq
        LIMIT $2 - (SELECT count(*) FROM cancel_pick) - (SELECT count(*) FROM exhaust_pick)),
     cancelling AS (
        UPDATE jobs j SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                          owner = NULL, claimed_at = NULL, updated_at = $1, ended_at = $1,
                          cancel_requested = false
        FROM cancel_pick p WHERE j.seq = ANY (ARRAY(SELECT seq FROM cancel_pick))
          AND j.seq = p.seq AND j.xmin = p.version
        RETURNING 1),
     exhausted AS (
        UPDATE jobs j SET status = 'dead', dead_reason = 'exhausted', available_at = NULL,
                          owner = NULL, claimed_at = NULL, updated_at = $1, ended_at = $1
        FROM exhaust_pick p WHERE j.seq = ANY (ARRAY(SELECT seq FROM exhaust_pick))
          AND j.seq = p.seq AND j.xmin = p.version
        RETURNING 1),
     late AS (
        UPDATE jobs j SET status = 'dead', dead_reason = 'deadline', available_at = NULL,
                          owner = NULL, claimed_at = NULL, updated_at = $1, ended_at = $1
        FROM late_pick p WHERE j.seq = ANY (ARRAY(SELECT seq FROM late_pick))
          AND j.seq = p.seq AND j.xmin = p.version
        RETURNING 1)
    SELECT (SELECT count(*) FROM cancel_pick) + (SELECT count(*) FROM exhaust_pick)
               + (SELECT count(*) FROM late_pick),
           (SELECT count(*) FROM cancelling) + (SELECT count(*) FROM exhausted)
               + (SELECT count(*) FROM late)"
);

/// Whether [`REAP`] at `$1` has anything to end: its three rules' conditions, each answered
/// by the first entry of the index its pick walks: the first row in the pick's order, so
/// that a generic plan walks that index too (as `EXISTS`, which drops the order, one took a
/// scan of the table, which finds a late job soon when there are many and reads every row
/// when there are none). A claim asks this first and runs the reap only when it is true. On
/// a queue with nothing due to end (the common case) that is one read, where the reap is
/// three updates that write nothing and still run their tables' statement-level triggers,
/// between a savepoint and its release: three round trips. Both are statements of one
/// transaction in the claims' turn, so nothing that makes a job due to end commits between
/// them (`turn.rs`; heartbeats and completions beside it only take jobs out of what is due):
/// what this finds nothing in, the reap would end nothing of.
pub(super) const REAP_DUE: &str = concat!(
    "SELECT (SELECT seq FROM jobs WHERE ",
    cancelling!(),
    " ORDER BY available_at, seq LIMIT 1) IS NOT NULL OR (SELECT seq FROM jobs WHERE ",
    exhausted!(),
    " ORDER BY available_at, seq LIMIT 1) IS NOT NULL OR (SELECT seq FROM jobs WHERE ",
    late!(),
    " ORDER BY deadline, seq LIMIT 1) IS NOT NULL"
);

/// The claimable jobs of the queues `$Q` (a `text[]`) in claim's order — `priority`, then
/// `available_at`, then first enqueue (SPEC 3.3.2) — at most `$N` of them: for each queue
/// and each of the ten priorities, one walk of `jobs_due` ([`due_rows`], its mark stated)
/// from its start, taking the first `$N` rows that are due and in budget (what a reap left;
/// see the module's doc) and have no cancel request; then the best `$N` of those few. So a pick costs ten index seeks per
/// queue served, whatever the number of jobs, and a queue not served is never read, nor a
/// paused one (SPEC 3.3.2, 3.16: one key lookup each in `paused_queues`, in the pick's own
/// statement rather than a round trip before it).
macro_rules! pick {
    ($queues:literal, $limit:literal, $version:literal) => {
        concat!(
            "SELECT c.seq, c.version, p.priority, c.available_at AS due FROM (
                SELECT name FROM unnest(",
            $queues,
            "::text[]) AS u(name)
                WHERE NOT EXISTS (SELECT 1 FROM paused_queues WHERE queue = u.name)) AS q
             CROSS JOIN generate_series(0, 9) AS p(priority)
             CROSS JOIN LATERAL (
                SELECT seq, ",
            $version,
            " AS version, available_at FROM jobs
                WHERE queue = q.name AND priority = p.priority::smallint AND ",
            due_rows!(),
            " AND available_at <= $1
                  AND deadline > $1 AND attempts < max_attempts AND NOT cancel_requested
                ORDER BY available_at, seq LIMIT ",
            $limit,
            ") AS c
             ORDER BY p.priority, c.available_at, c.seq LIMIT ",
            $limit
        )
    };
}

/// Leases the claimable job of the queues `$4` that comes first in claim's order, in one
/// statement (one round trip), once the claim has reaped. The pick takes only rows in budget,
/// before their deadline and without a cancel request (SPEC 3.3.2: a job due to end that the
/// reap left, past its limit, is passed over); the write takes the row only in the version the
/// pick saw (see the module's doc), so it comes back empty when another transaction changed
/// that row meanwhile.
pub(super) const CLAIM: &str = concat!(
    "WITH first AS (",
    pick!("$4", "1", "xmin"),
    "),
     picked AS (
        UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = $2, claimed_at = $1,
                        available_at = $3, updated_at = $1
        WHERE seq = (SELECT seq FROM first) AND xmin = (SELECT version FROM first)
        RETURNING id, attempts, payload, deadline, last_node, kind)
     SELECT id, attempts, payload, deadline, last_node, kind FROM picked"
);

/// The seqs of up to `$2` claimable jobs of the queues `$3` in claim order: what `$2` picks
/// of [`CLAIM`] one after another would take, since a job just leased expires after `now`.
/// With `$2` = 1, whether any job of those queues is claimable, as committed now.
pub(super) const PICK: &str = pick!("$3", "$2", "xmin::text::bigint");

/// Leases the first `$5` claimable jobs of the queues `$4` in one statement: [`PICK`]'s walk,
/// then every picked row written at once, each only in the version the pick saw (so a row
/// another transaction changed meanwhile is not written). One row per job leased, in claim
/// order, each with the number picked last; one row of nulls and that number when none was
/// leased. Fewer leased than picked means a row changed: the caller undoes the statement and
/// picks again. The rows are locked in claim order first (`locked`), as one claim after
/// another would lock them: a completion batch locks its rows in its own order (the order
/// the worker claimed them), so two transactions that want the same rows never wait for each
/// other in a cycle (a fleet of batch workers deadlocked when the update locked them in its
/// join's order). One statement for the batch, not one per job, so that the statement-level
/// tallies run once and the turn is held for one round trip (SPEC 6.26's price, per batch).
/// The rows are reached by key, as [`REAP`]'s are.
pub(super) const LEASE_PICKED: &str = concat!(
    "WITH picked AS MATERIALIZED (",
    pick!("$4", "$5", "xmin"),
    "),
     locked AS MATERIALIZED (
        SELECT j.seq FROM jobs j JOIN picked k ON j.seq = k.seq AND j.xmin = k.version
        WHERE j.seq = ANY (ARRAY(SELECT seq FROM picked))
        ORDER BY k.priority, k.due, k.seq FOR UPDATE OF j),
     leased AS (
        UPDATE jobs j SET status = 'leased', attempts = j.attempts + 1, owner = $2,
                          claimed_at = $1, available_at = $3, updated_at = $1
        FROM picked k WHERE j.seq = ANY (ARRAY(SELECT seq FROM locked))
          AND j.seq = k.seq AND j.xmin = k.version
        RETURNING j.seq, j.id, j.attempts, j.payload, j.deadline, j.last_node, j.kind)
     SELECT l.id, l.attempts, l.payload, l.deadline, l.last_node, l.kind,
            (SELECT count(*) FROM picked)
     FROM (SELECT 1) AS one
     LEFT JOIN (leased l JOIN picked k ON k.seq = l.seq) ON true
     ORDER BY k.priority, k.due, k.seq"
);

/// A batch's leases are undone together when one of its rows changed (see [`lease_picked`]).
const MARK: &str = "SAVEPOINT pick";
const UNDO: &str = "ROLLBACK TO SAVEPOINT pick";
const KEEP: &str = "RELEASE SAVEPOINT pick";

/// The claim's statements, for the rest of its transaction, run on the plan the connection
/// keeps for each. The server plans a prepared statement anew for each of its first five
/// runs, and after them for each run while it judges a plan for the run's parameters cheaper
/// than a generic one; it judged so for [`LEASE_PICKED`] on every run of `retryq bench
/// --latency` (their `LIMIT` and the queues are parameters): about half a millisecond of
/// planning in every claim, inside the claims' turn
/// (`the_claims_pick_is_planned_once_per_connection`). Their generic plans reach every
/// row through an index (`every_write_reaches_its_rows_by_key_on_any_plan`).
macro_rules! generic {
    () => {
        "SET LOCAL plan_cache_mode = force_generic_plan"
    };
}

/// [`generic!`] and [`MARK`] in one round trip.
const MARK_GENERIC: &str = concat!(generic!(), "; SAVEPOINT pick");

impl PgQueue {
    /// [`Queue::claim`](crate::Queue::claim) on PostgreSQL: [`PgQueue::claim_from`] the
    /// default queue alone.
    pub fn claim(&mut self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        self.claim_from(worker, &[DEFAULT_QUEUE], now)
    }

    /// [`Queue::claim_from`](crate::Queue::claim_from) on PostgreSQL: reaps every queue,
    /// then leases the claimable job of `queues` with the smallest `(priority,
    /// available_at, first enqueue)` to `worker` until `now + lease_ms`, in one transaction;
    /// `None` when nothing of `queues` is claimable.
    pub fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> Result<Option<Claimed>> {
        input::name("worker", worker)?;
        input::queues(queues)?;
        input::int("now", now)?;
        let Settings { lease_ms, reap_limit, .. } = self.settings;
        self.write(Turn::Alone, |tx| {
            reap(tx, now, reap_limit)?;
            lease_next(tx, worker, queues, now, lease_ms)
        })
    }

    /// [`Queue::claim_batch`](crate::Queue::claim_batch) on PostgreSQL:
    /// [`PgQueue::claim_batch_from`] the default queue alone.
    pub fn claim_batch(&mut self, worker: &str, now: u64, k: usize) -> Result<Vec<Claimed>> {
        self.claim_batch_from(worker, &[DEFAULT_QUEUE], now, k)
    }

    /// [`Queue::claim_batch_from`](crate::Queue::claim_batch_from) on PostgreSQL: up to `k`
    /// claims from `queues` in one transaction, exactly as `k` single claims at `now` would
    /// answer.
    pub fn claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<Vec<Claimed>> {
        self.reap_and_claim_batch_from(worker, queues, now, k).map(|(_, claimed)| claimed)
    }

    /// [`Queue::reap_and_claim_batch_from`](crate::Queue::reap_and_claim_batch_from) on
    /// PostgreSQL: [`PgQueue::claim_batch_from`], and how many jobs its reap ended, in one
    /// transaction and so one turn.
    pub fn reap_and_claim_batch_from(
        &mut self,
        worker: &str,
        queues: &[&str],
        now: u64,
        k: usize,
    ) -> Result<(u64, Vec<Claimed>)> {
        input::name("worker", worker)?;
        input::queues(queues)?;
        input::int("now", now)?;
        if k == 0 {
            return Ok((0, Vec::new()));
        }
        let lease_ms = self.settings.lease_ms;
        let limit = batch_reap_limit(self.settings.reap_limit, k);
        self.write(Turn::Alone, |tx| {
            // As on SQLite: `k` single claims reap up to `reap_limit` each, in one order, and a
            // job just leased expires after `now`, so one reap of `k` limits is all of theirs.
            let reaped = reap(tx, now, limit)?;
            Ok((reaped, lease_picked(tx, worker, queues, now, lease_ms, k)?))
        })
    }

    /// [`Queue::reap`](crate::Queue::reap) on PostgreSQL: claim's first step alone, over
    /// every queue, at most [`Settings::reap_limit`] jobs; how many moved to `dead`.
    pub fn reap(&mut self, now: u64) -> Result<u64> {
        input::int("now", now)?;
        let limit = self.settings.reap_limit;
        self.write(Turn::Alone, |tx| reap(tx, now, limit))
    }
}

/// Claim's step 1 inside the caller's transaction, in its turn: at most `limit` jobs, in SPEC
/// 3.3.1's order. When a row [`REAP`] picked changed before its write (another transaction
/// held it), what the statement wrote is undone and it runs again on what is committed now:
/// keeping the rest would end a set that was the first `limit` only before the change.
fn reap(tx: &mut Tx<'_>, now: u64, limit: u64) -> Result<u64> {
    let at = big("now", now)?;
    if !tx.query_one(REAP_DUE, &[&at])?.try_get::<_, bool>(0)? {
        return Ok(0);
    }
    // A batch's limit may pass what a bigint holds; no store has that many jobs.
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    loop {
        tx.batch(MARK)?;
        let row = tx.query_one(REAP, &[&at, &limit])?;
        let (picked, reaped): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
        if picked == reaped {
            tx.batch(KEEP)?;
            return uint_of(reaped);
        }
        tx.batch(UNDO)?;
    }
}

fn uint_of(count: i64) -> Result<u64> {
    u64::try_from(count).map_err(|_| crate::error::Error::Corrupt(format!("a reap counted {count} rows")))
}

/// Claim's three steps (reap, pick and lease) inside the caller's transaction, in its turn.
fn lease_next(
    tx: &mut Tx<'_>,
    worker: &str,
    queues: &[&str],
    now: u64,
    lease_ms: u64,
) -> Result<Option<Claimed>> {
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let lease_until = now + lease_ms;
    let (at, until) = (big("now", now)?, big("lease_until", lease_until)?);
    tx.batch(generic!())?;
    loop {
        if let Some(row) = tx.query_opt(CLAIM, &[&at, &worker, &until, &queues])? {
            return claimed(&row, worker, lease_until).map(Some);
        }
        // Empty: nothing is due, or the row chosen changed while this claim waited for it;
        // then pick again among what is committed now.
        if !any_due(tx, at, queues)? {
            return Ok(None);
        }
    }
}

/// Up to `k` claims inside the caller's transaction, once reaped: the due jobs are picked
/// with one walk of the index and leased by the same statement, so that each job's row and
/// history are written as `k` calls of [`lease_next`] would write them. When one of the
/// picked rows changed before its lease (another transaction held it), the leases of that pick
/// are undone and the pick runs again on what is committed now: leasing the rest would lease
/// them in an order that was first only before the change. A pick whose every row was leased
/// is the answer, also when it is short: it took every job claimable at its snapshot, and
/// nothing that makes a job claimable commits while the claim holds its turn (`turn.rs`), so
/// a second look would find none.
fn lease_picked(
    tx: &mut Tx<'_>,
    worker: &str,
    queues: &[&str],
    now: u64,
    lease_ms: u64,
    k: usize,
) -> Result<Vec<Claimed>> {
    let at = big("now", now)?;
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let lease_until = now + lease_ms;
    let until = big("lease_until", lease_until)?;
    let limit = i64::try_from(k).unwrap_or(i64::MAX);
    // A rollback to the savepoint keeps it: one mark serves every pick.
    tx.batch(MARK_GENERIC)?;
    loop {
        let rows = tx.query(LEASE_PICKED, &[&at, &worker, &until, &queues, &limit])?;
        let picked: i64 = rows.first().map(|row| row.try_get(6)).transpose()?.unwrap_or(0);
        let mut leased = Vec::with_capacity(rows.len());
        for row in rows.iter().filter(|row| matches!(row.try_get::<_, Option<&str>>(0), Ok(Some(_)))) {
            leased.push(claimed(row, worker, lease_until)?);
        }
        if i64::try_from(leased.len()).ok() == Some(picked) {
            return Ok(leased);
        }
        tx.batch(UNDO)?;
    }
}

/// Whether any job of `queues` is claimable, as committed now: after a pick came back
/// short, whether to pick again.
fn any_due(tx: &mut Tx<'_>, at: i64, queues: &[&str]) -> Result<bool> {
    Ok(!tx.query(PICK, &[&at, &1_i64, &queues])?.is_empty())
}

/// A row of [`CLAIM`]'s `RETURNING` or of [`LEASE_PICKED`]'s answer.
fn claimed(row: &postgres::Row, worker: &str, lease_until: u64) -> Result<Claimed> {
    Ok(Claimed {
        lease: Lease { worker: worker.to_owned(), id: row.try_get(0)?, attempt: uint(row, 1)? },
        lease_until,
        payload: utf8(row, 2)?,
        deadline: uint(row, 3)?,
        last_node: opt_utf8(row, 4)?,
        kind: row.try_get(5)?,
    })
}
