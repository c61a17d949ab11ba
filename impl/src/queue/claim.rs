//! `claim` and `reap`: quarantine what is out of budget, then lease the next due job.
//!
//! Both run inside one write transaction. Each statement walks an index that holds only the
//! rows it may touch (see `schema.rs`), so the cost of a claim does not grow with the number
//! of jobs waiting, done or dead.

use rusqlite::{Transaction, params};

use super::lease::Lease;
use super::store::{Queue, Settings};
use crate::error::Result;
use crate::input;

/// A job leased by [`Queue::claim`]: the holder may send it until `lease_until`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claimed {
    /// Who holds which attempt of which job: what the completion must present.
    pub lease: Lease,
    /// `now + lease_ms`: when the lease expires and the job may be claimed again.
    pub lease_until: u64,
    /// What the transport sends.
    pub payload: String,
    /// The job's deadline: an attempt should not run past it.
    pub deadline: u64,
    /// The receiver the job's last recorded attempt reached (its `last_node` note), if any:
    /// a transport that picks among several can send this attempt elsewhere. A job being
    /// claimed has not succeeded, so that attempt did not succeed either.
    pub last_node: Option<String>,
    /// The job's kind (SPEC 1.1), `""` for none: which handler a worker serving many kinds
    /// runs it with.
    pub kind: String,
}

impl Claimed {
    /// The job's id.
    pub fn id(&self) -> &str {
        &self.lease.id
    }

    /// This attempt's number: the job's `attempts` after the claim.
    pub fn attempt(&self) -> u64 {
        self.lease.attempt
    }
}

// Every write here is `UPDATE OR ROLLBACK`: a write that breaks a constraint ends the whole
// transaction, which is what the caller does with any error anyway (`Queue::write` rolls
// back). The default, `OR ABORT`, would undo just the one statement, and for that SQLite
// copies every page a statement is about to change into a statement journal first — for
// each statement that also writes through a trigger, as every transition does (the history
// trigger). That copy was the largest single cost of a claim (see `docs/benchmarks.md`).

/// An expired lease whose holder was asked to stop: it is never claimed again (SPEC 3.3.1
/// rule 1, before the budget and the deadline). The earliest expiry first, ties by first
/// enqueue (SPEC 6.37): a walk of `jobs_cancelling`, whose entries end in the rowid.
macro_rules! due_cancelled {
    () => {
        "FROM jobs WHERE status = 'leased' AND cancel_requested = 1 AND available_at <= ?1
         ORDER BY available_at, seq"
    };
}

/// A lease on the last attempt that expired: the budget is spent (rule 2), in the order of
/// `jobs_last_lease`. Run only once rule 1 found fewer than the limit, so that none of these
/// has a cancel request left.
macro_rules! due_exhausted {
    () => {
        "FROM jobs WHERE status = 'leased' AND attempts >= max_attempts AND available_at <= ?1
         ORDER BY available_at, seq"
    };
}

/// A pending job, or an expired lease, whose deadline has come: no time is left to start
/// (rule 3), the earliest deadline first, in the order of `jobs_open_deadline`. Run only once
/// rules 1 and 2 found fewer than the limit, so that none of these is theirs.
macro_rules! due_deadline {
    () => {
        "FROM jobs WHERE status IN ('pending', 'leased') AND deadline <= ?1
                     AND (status = 'pending' OR available_at <= ?1)
         ORDER BY deadline, seq"
    };
}

/// Rule 1's move, of at most `?2` jobs.
const REAP_CANCELLED: &str = concat!(
    "UPDATE OR ROLLBACK jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                    owner = NULL, claimed_at = NULL, updated_at = ?1, ended_at = ?1,
                    cancel_requested = 0
     WHERE seq IN (SELECT seq ",
    due_cancelled!(),
    " LIMIT ?2)"
);

/// Rule 2's move, of at most `?2` jobs.
const REAP_EXHAUSTED: &str = concat!(
    "UPDATE OR ROLLBACK jobs SET status = 'dead', dead_reason = 'exhausted', available_at = NULL,
                    owner = NULL, claimed_at = NULL, updated_at = ?1, ended_at = ?1
     WHERE seq IN (SELECT seq ",
    due_exhausted!(),
    " LIMIT ?2)"
);

/// Rule 3's move, of at most `?2` jobs.
const REAP_DEADLINE: &str = concat!(
    "UPDATE OR ROLLBACK jobs SET status = 'dead', dead_reason = 'deadline', available_at = NULL,
                    owner = NULL, claimed_at = NULL, updated_at = ?1, ended_at = ?1
     WHERE seq IN (SELECT seq ",
    due_deadline!(),
    " LIMIT ?2)"
);

/// Whether a rule has anything to move: the first entry of the same walk. Nearly every claim
/// finds none, and then the move is not run at all: its `IN` list is a temporary b-tree that
/// SQLite builds and frees even when empty, which cost a claim more than its own walk.
const ANY_CANCELLED: &str = concat!("SELECT 1 ", due_cancelled!(), " LIMIT 1");
const ANY_EXHAUSTED: &str = concat!("SELECT 1 ", due_exhausted!(), " LIMIT 1");
const ANY_DEADLINE: &str = concat!("SELECT 1 ", due_deadline!(), " LIMIT 1");

impl Queue {
    /// Quarantines every job that is due and out of budget, then leases the claimable job
    /// with the smallest `available_at` to `worker` until `now + lease_ms`, spending one
    /// attempt. `None` when nothing is due. One transaction: the attempt is durable before
    /// the caller sends anything.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// let claimed = q.claim("w1", 10)?.expect("a job is due");
    /// assert_eq!((claimed.id(), claimed.attempt()), ("a", 1));
    /// assert_eq!(claimed.lease_until, 10 + q.settings().lease_ms);
    /// // Leased: no other worker gets it until the lease runs out.
    /// assert!(q.claim("w2", 20)?.is_none());
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn claim(&mut self, worker: &str, now: u64) -> Result<Option<Claimed>> {
        self.claim_from(worker, &[crate::DEFAULT_QUEUE], now)
    }

    /// [`claim`](Queue::claim) serving `queues` (SPEC 3.3): the reap covers every queue, the
    /// pick only these.
    pub fn claim_from(&mut self, worker: &str, queues: &[&str], now: u64) -> Result<Option<Claimed>> {
        input::name("worker", worker)?;
        input::queues(queues)?;
        input::int("now", now)?;
        let Settings { lease_ms, reap_limit, .. } = self.settings;
        self.write(|tx| {
            reap(tx, now, reap_limit)?;
            Ok(lease_picked(tx, worker, queues, now, lease_ms, 1)?.pop())
        })
    }

    /// Quarantines the jobs that are due and out of budget or time, or asked to stop (claim's
    /// first step alone, SPEC 3.7) — at most [`Settings::reap_limit`] of them, in SPEC 3.3.1's
    /// order — and returns how many moved to `dead`. A count equal to the limit says more may
    /// be due to end: a caller who wants them all ended reaps again. A lease that has not
    /// expired is never reaped: an attempt started in time may finish.
    ///
    /// ```
    /// use retryq::{DeadReason, NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 100, now: 0, ..NewJob::default() })?;
    /// assert_eq!(q.reap(99)?, 0);
    /// // At its deadline a pending job can never be claimed again: reaping ends it.
    /// assert_eq!(q.reap(100)?, 1);
    /// assert_eq!(q.get("a")?.and_then(|job| job.dead_reason), Some(DeadReason::Deadline));
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn reap(&mut self, now: u64) -> Result<u64> {
        input::int("now", now)?;
        let limit = self.settings.reap_limit;
        self.write(|tx| reap(tx, now, limit))
    }
}

/// Up to `?4` claimable jobs of one queue (`?1`) and one priority (`?2`), in claim order: a
/// walk of `jobs_due` from its start at that queue and priority, stopping at the first job not
/// due or once `?4` are found. A job due to end that the reap left, past its limit, is passed
/// over (SPEC 3.3.2): past its deadline — told by the index's own `deadline` — or, leased, out
/// of budget or asked to stop (a pending job never is). A job just leased expires after `now`
/// and is due no more, so `k` single claims take, queue by queue, what one walk finds.
const PICK: &str = "
    SELECT available_at, seq FROM jobs
    WHERE queue = ?1 AND priority = ?2 AND status IN ('pending', 'leased') AND available_at <= ?3
      AND deadline > ?3 AND (status = 'pending' OR (attempts < max_attempts AND cancel_requested = 0))
    ORDER BY available_at, seq LIMIT ?4";

/// Leases one picked job by its seq.
const LEASE: &str = "
    UPDATE OR ROLLBACK jobs SET status = 'leased', attempts = attempts + 1, owner = ?2,
                                claimed_at = ?1, available_at = ?3, updated_at = ?1
    WHERE seq = ?4
    RETURNING id, attempts, payload, deadline, last_node, kind";

/// Up to `k` claims from `queues` inside the caller's transaction, once reaped: the paused
/// queues left out, the due jobs are picked priority by priority, each priority with one walk of the index per queue
/// (the smallest `(available_at, seq)` over all queues first: SPEC 3.3.2, 6.32), then
/// leased one by one in claim order, so that each job's row and history are written exactly
/// as `k` single claims would write them, in the same order. The cost is at most ten walks
/// per queue served, whatever the number of jobs.
pub(super) fn lease_picked(
    tx: &Transaction<'_>,
    worker: &str,
    queues: &[&str],
    now: u64,
    lease_ms: u64,
    k: usize,
) -> Result<Vec<Claimed>> {
    let limit = i64::try_from(k).unwrap_or(i64::MAX);
    // A paused queue's jobs are not picked (SPEC 3.3.2, 3.16): read in this transaction, one
    // key lookup per queue served, so a pause committed before it is seen by every pick.
    let mut served: Vec<&str> = Vec::with_capacity(queues.len());
    for queue in queues {
        if !super::pause::is_paused(tx, queue)? {
            served.push(queue);
        }
    }
    let mut seqs: Vec<i64> = Vec::new();
    let mut pick = tx.prepare_cached(PICK)?;
    for priority in 0..=input::MAX_PRIORITY {
        let mut due: Vec<(u64, i64)> = Vec::new();
        for queue in &served {
            let rows =
                pick.query_map(params![queue, priority, now, limit], |row| Ok((row.get(0)?, row.get(1)?)))?;
            due.extend(rows.collect::<rusqlite::Result<Vec<(u64, i64)>>>()?);
        }
        due.sort_unstable();
        seqs.extend(due.into_iter().take(k - seqs.len()).map(|(_, seq)| seq));
        if seqs.len() == k {
            break;
        }
    }
    // Both terms are below 2^53, so the sum fits in 64 bits (it may pass 2^53 − 1).
    let lease_until = now + lease_ms;
    let mut lease = tx.prepare_cached(LEASE)?;
    let mut claimed = Vec::with_capacity(seqs.len());
    for seq in seqs {
        claimed.push(lease.query_row(params![now, worker, lease_until, seq], |row| {
            Ok(Claimed {
                lease: Lease { worker: worker.to_owned(), id: row.get(0)?, attempt: row.get(1)? },
                lease_until,
                payload: row.get(2)?,
                deadline: row.get(3)?,
                last_node: row.get(4)?,
                kind: row.get(5)?,
            })
        })?);
    }
    Ok(claimed)
}

/// How many jobs a batch of `k` claims reaps at most: what its `k` single claims would, each
/// `reap_limit` (SPEC 6.17, 6.37).
pub(crate) fn batch_reap_limit(reap_limit: u64, k: usize) -> u64 {
    reap_limit.saturating_mul(u64::try_from(k).unwrap_or(u64::MAX))
}

/// Claim's step 1 inside the caller's transaction: at most `limit` jobs (SPEC 3.3.1, 6.37).
pub(super) fn reap(tx: &Transaction<'_>, now: u64, limit: u64) -> Result<u64> {
    // A cancel request first, then exhaustion: an expired lease whose holder was asked to
    // stop is `cancelled` whatever its budget and deadline, and one on the last attempt is
    // `exhausted` even when its deadline has also passed. Each rule takes what the ones before
    // it left of the limit, so a rule runs only once those before it have ended all theirs.
    let mut reaped = 0;
    for (any, sql) in
        [(ANY_CANCELLED, REAP_CANCELLED), (ANY_EXHAUSTED, REAP_EXHAUSTED), (ANY_DEADLINE, REAP_DEADLINE)]
    {
        let left = limit - reaped;
        if left == 0 {
            break;
        }
        if !tx.prepare_cached(any)?.exists([now])? {
            continue;
        }
        let left = i64::try_from(left).unwrap_or(i64::MAX);
        reaped += tx.prepare_cached(sql)?.execute(params![now, left])? as u64;
    }
    Ok(reaped)
}

#[cfg(test)]
mod tests {
    use super::super::store::tests::queue;
    use crate::{Completion, Lease};
    use crate::{DeadReason, NewJob, Status};

    fn enqueue(q: &mut crate::Queue, id: &str, max_attempts: u64, deadline: u64, now: u64) {
        q.enqueue(&NewJob { id, payload: "", max_attempts, deadline, now, ..NewJob::default() })
            .expect("enqueue");
    }

    #[test]
    fn a_claim_spends_an_attempt_and_leases_until_now_plus_lease() {
        let mut q = queue();
        enqueue(&mut q, "a", 3, 10_000, 0);
        let c = q.claim("w1", 7).expect("claim").expect("claimed");
        assert_eq!((c.id(), c.attempt(), c.lease_until, c.deadline), ("a", 1, 1007, 10_000));
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.status, job.attempts, job.available_at), (Status::Leased, 1, Some(1007)));
        assert_eq!((job.owner.as_deref(), job.claimed_at), (Some("w1"), Some(7)));
        // The lease is live: nobody else gets the job until it expires.
        assert_eq!(q.claim("w2", 1006).expect("claim"), None);
        let again = q.claim("w2", 1007).expect("claim").expect("reclaimed at expiry");
        assert_eq!((again.attempt(), again.lease_until), (2, 2007));
    }

    #[test]
    fn a_claim_carries_the_node_of_the_last_recorded_attempt() {
        let mut q = queue();
        enqueue(&mut q, "a", 3, 10_000, 0);
        let c = q.claim("w1", 0).expect("claim").expect("claimed");
        assert_eq!(c.last_node, None);
        let report = crate::Report::from(crate::Outcome::Retryable).node("http://a.example/");
        q.complete(&Completion::new(&Lease::new("w1", "a", c.attempt()), report, 1, 0.0)).expect("complete");
        let c = q.claim("w1", 1).expect("claim").expect("claimed");
        assert_eq!(c.last_node.as_deref(), Some("http://a.example/"));
    }

    #[test]
    fn claim_order_is_available_at_then_first_enqueue() {
        let mut q = queue();
        enqueue(&mut q, "late", 3, 10_000, 50);
        enqueue(&mut q, "b", 3, 10_000, 10);
        enqueue(&mut q, "a", 3, 10_000, 10);
        let order: Vec<String> =
            (0..3).map(|_| q.claim("w", 100).expect("claim").expect("claimed").lease.id).collect();
        assert_eq!(order, ["b", "a", "late"]);
        assert_eq!(q.claim("w", 100).expect("claim"), None);
    }

    #[test]
    fn nothing_is_due_before_available_at() {
        let mut q = queue();
        enqueue(&mut q, "a", 3, 10_000, 10);
        assert_eq!(q.claim("w", 9).expect("claim"), None);
        assert!(q.claim("w", 10).expect("claim").is_some());
    }

    #[test]
    fn a_crash_on_the_last_attempt_is_reaped_as_exhausted_when_the_lease_expires() {
        let mut q = queue();
        enqueue(&mut q, "a", 1, 100_000, 0);
        q.claim("w1", 0).expect("claim").expect("claimed");
        // The worker dies. Before expiry nothing happens; at expiry the budget is spent.
        assert_eq!(q.reap(999).expect("reap"), 0);
        assert_eq!(q.claim("w2", 1000).expect("claim"), None);
        let job = q.get("a").expect("get").expect("job");
        assert_eq!(
            (job.status, job.dead_reason, job.attempts),
            (Status::Dead, Some(DeadReason::Exhausted), 1)
        );
    }

    #[test]
    fn exhaustion_wins_over_a_passed_deadline() {
        let mut q = queue();
        enqueue(&mut q, "a", 1, 500, 0);
        q.claim("w1", 0).expect("claim");
        assert_eq!(q.reap(5000).expect("reap"), 1);
        assert_eq!(q.get("a").expect("get").expect("job").dead_reason, Some(DeadReason::Exhausted));
    }

    #[test]
    fn a_live_lease_is_not_reaped_past_its_deadline() {
        let mut q = queue();
        enqueue(&mut q, "a", 5, 500, 0);
        q.claim("w1", 499).expect("claim").expect("claimed in time");
        assert_eq!(q.reap(1000).expect("reap"), 0);
        assert_eq!(q.get("a").expect("get").expect("job").status, Status::Leased);
        assert_eq!(q.reap(1499).expect("reap"), 1);
        assert_eq!(q.get("a").expect("get").expect("job").dead_reason, Some(DeadReason::Deadline));
    }

    #[test]
    fn a_pending_job_dies_at_its_deadline_not_before() {
        let mut q = queue();
        enqueue(&mut q, "a", 5, 500, 0);
        enqueue(&mut q, "b", 5, 501, 0);
        assert_eq!(q.reap(499).expect("reap"), 0);
        // At the deadline no attempt may start: claim reaps `a` and leases `b`.
        let c = q.claim("w", 500).expect("claim").expect("claimed");
        assert_eq!(c.id(), "b");
        assert_eq!(q.get("a").expect("get").expect("job").dead_reason, Some(DeadReason::Deadline));
    }

    #[test]
    fn claims_never_exceed_the_budget() {
        let mut q = queue();
        enqueue(&mut q, "a", 2, 1_000_000, 0);
        assert_eq!(q.claim("w", 0).expect("claim").expect("first").attempt(), 1);
        assert_eq!(q.claim("w", 1000).expect("claim").expect("second").attempt(), 2);
        assert_eq!(q.claim("w", 2000).expect("claim"), None);
        let job = q.get("a").expect("get").expect("job");
        assert_eq!((job.attempts, job.dead_reason), (2, Some(DeadReason::Exhausted)));
    }

    #[test]
    fn lease_until_may_pass_2_pow_53() {
        let mut q = queue();
        q.set_settings(crate::Settings {
            lease_ms: crate::MAX_INT,
            base_ms: 1,
            cap_ms: 1,
            ..crate::Settings::default()
        })
        .expect("settings");
        enqueue(&mut q, "a", 2, crate::MAX_INT, 0);
        let c = q.claim("w", crate::MAX_INT - 1).expect("claim").expect("claimed");
        assert_eq!(c.lease_until, 2 * crate::MAX_INT - 1);
        assert_eq!(q.reap(crate::MAX_INT).expect("reap"), 0);
    }

    #[test]
    fn bad_arguments_are_refused_by_name() {
        let mut q = queue();
        let err = q.claim("", 0).unwrap_err();
        assert!(err.to_string().contains("worker"), "{err}");
        let err = q.claim("w", 1 << 53).unwrap_err();
        assert!(err.to_string().contains("now"), "{err}");
        let err = q.reap(1 << 53).unwrap_err();
        assert!(err.to_string().contains("now"), "{err}");
    }

    /// SQLite recompiles a statement whose plan may depend on a bound value (a `LIMIT ?`)
    /// whenever that value is bound anew, and rusqlite's statement cache clears the bindings
    /// of every statement it takes back: without the planner's stability guarantee
    /// (`store.rs`), every claim and every reap recompiled its statements, each write with
    /// every trigger on `jobs` — most of a claim's time.
    #[test]
    fn claims_and_reaps_reuse_their_compiled_statements() {
        use rusqlite::StatementStatus::RePrepare;
        let mut q = queue();
        for i in 0..6 {
            enqueue(&mut q, &format!("claimed-{i}"), 3, 100_000, 0);
        }
        for now in 1..=6 {
            q.claim("w", now).expect("claim").expect("claimed");
        }
        for i in 0..6 {
            enqueue(&mut q, &format!("late-{i}"), 3, 10 + i, 7);
        }
        for now in 10..16 {
            assert_eq!(q.reap(now).expect("reap"), 1);
        }
        for sql in [super::PICK, super::REAP_DEADLINE] {
            let compiled = q.conn.prepare_cached(sql).expect("cached").get_status(RePrepare);
            assert!(compiled <= 1, "recompiled {compiled} times: {sql}");
        }
    }

    #[test]
    fn the_pick_walks_an_index_without_sorting() {
        let q = queue();
        let plan: Vec<String> = q
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::PICK))
            .expect("explain")
            .query_map(rusqlite::params!["default", 0, 0, 100], |row| row.get::<_, String>(3))
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("rows");
        let plan = plan.join("\n");
        assert!(plan.contains("jobs_due"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        let plan: Vec<String> = q
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::LEASE))
            .expect("explain")
            .query_map(rusqlite::params![0, "w", 0, 1], |row| row.get::<_, String>(3))
            .expect("plan")
            .collect::<Result<_, _>>()
            .expect("rows");
        assert!(plan.join("\n").contains("INTEGER PRIMARY KEY"), "{plan:?}");
        for (sql, index) in [
            (super::REAP_CANCELLED, "jobs_cancelling"),
            (super::REAP_EXHAUSTED, "jobs_last_lease"),
            (super::REAP_DEADLINE, "jobs_open_deadline"),
            (super::ANY_CANCELLED, "jobs_cancelling"),
            (super::ANY_EXHAUSTED, "jobs_last_lease"),
            (super::ANY_DEADLINE, "jobs_open_deadline"),
        ] {
            let mut explain = q.conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).expect("explain");
            let bound = rusqlite::params_from_iter([0, 1].into_iter().take(explain.parameter_count()));
            let plan: Vec<String> = explain
                .query_map(bound, |row| row.get::<_, String>(3))
                .expect("plan")
                .collect::<Result<_, _>>()
                .expect("rows");
            eprintln!("{index}: {plan:?}");
            assert!(plan.join("\n").contains(index), "{plan:?}");
            // The walk stops at the limit: the index's order is the reap's (SPEC 6.37).
            assert!(!plan.join("\n").contains("TEMP B-TREE"), "{plan:?}");
        }
    }
}
