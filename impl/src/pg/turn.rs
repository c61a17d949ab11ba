//! The turn: one transaction-scoped advisory lock that claims and reaps take alone and every
//! other write takes shared, so that nothing commits while a claim or a reap decides.
//!
//! # Why claims and reaps take it alone
//!
//! SPEC 3.3.2 says a claim takes the claimable job with the smallest `available_at` (ties to
//! the first enqueued), and SPEC 3.10 that concurrent operations are linearizable: one order,
//! consistent with real time, explains every answer. A claim that stepped over rows other
//! transactions hold (`FOR UPDATE SKIP LOCKED`, what most PostgreSQL queues do) answers
//! before those transactions commit, and the order that would explain it — the holders
//! first — can contradict real time: a claim answers `none`, returns, and a read that starts
//! afterwards still sees the jobs it stepped over pending (the linearizability check finds
//! this in a fifth of its runs; `docs/linearizability.md`). So claims and reaps take turns.
//!
//! # Why every other write takes it shared
//!
//! Under READ COMMITTED a claim or a reap decides on its statement's snapshot and commits a
//! round trip later. A write to another row that committed in between — a redrive that made
//! a job pending past its deadline, an enqueue of a job due first — is one the claim did not
//! see, so the claim must come before it in the order; yet a read that begins after that
//! write returned and before the claim commits sees the write and not the claim, so the claim
//! must come after the read, which comes after the write. No order explains both (the
//! linearizability check found it, about one history in 3,100; `docs/linearizability.md`).
//! So every write holds the turn shared from before it touches a row until it commits: writes
//! still run side by side with each other, and no write commits between a claim's or reap's
//! snapshot and its commit. A claim then takes its place in the order anywhere between its
//! snapshot and its commit, since nothing else changes in between; a read whose snapshot falls
//! there goes before it.
//!
//! Locks are always taken turn first, rows after, so the turn never closes a cycle of waits: a
//! transaction that waits for the turn holds no row, and one that holds the turn shared waits
//! only for rows other shared holders hold. A claim waiting for the turn is served before
//! writes that ask after it (PostgreSQL queues a request behind a conflicting waiter), so
//! a stream of writes cannot starve claims.

use super::store::Tx;
use crate::error::Result;

/// The turn's key: the creation lock's (`APPLICATION_ID`) plus one, so that the two never
/// meet, written out so that the single-statement writes can name it in their SQL (a test
/// pins it to `APPLICATION_ID + 1`).
macro_rules! key {
    () => {
        "1381257810"
    };
}
pub(super) use key;

/// A claim's or a reap's turn, alone; held to the end of the transaction.
const ALONE: &str = concat!("SELECT pg_advisory_xact_lock(", key!(), ")");

/// Any other write's turn, shared with the others; held to the end of the transaction.
const SHARED: &str = concat!("SELECT pg_advisory_xact_lock_shared(", key!(), ")");

/// Which turn a write transaction takes before its first row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Turn {
    /// Claims and reaps: nothing else writes while they decide and commit.
    Alone,
    /// Every other write: side by side with each other, never inside a claim's turn.
    Shared,
}

impl Turn {
    /// Waits for this turn inside `tx`; it is held until `tx` ends.
    pub(super) fn take(self, tx: &mut Tx<'_>) -> Result<()> {
        tx.query_one(
            match self {
                Turn::Alone => ALONE,
                Turn::Shared => SHARED,
            },
            &[],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::thread::{self, JoinHandle};
    use std::time::Duration;

    use super::super::PgQueue;
    use super::super::tests::pg_at;
    use super::{ALONE, SHARED};
    use crate::{Completion, DeadReason, Lease, NewJob, Outcome, Redrive, RedriveDead, Result};

    #[test]
    fn the_turn_is_the_creation_lock_plus_one() {
        assert_eq!(key!().parse::<i64>(), Ok(crate::ddl::APPLICATION_ID + 1));
    }

    /// One operation on its own connection, to run while another transaction holds the turn.
    type Call = Box<dyn FnOnce(&mut PgQueue) -> Result<()> + Send>;

    /// Runs `call` on `q` in a thread while another transaction holds the turn by `held`
    /// (`ALONE`, as a claim between its snapshot and its commit, or `SHARED`, as another
    /// write); commits that transaction once `call` waits for it or has returned. Whether
    /// `call` waited: the server showed it waiting for an advisory lock before the holder
    /// committed. `call` must succeed either way.
    fn waits_for(url: &str, held: &str, mut q: PgQueue, name: &str, call: Call) -> bool {
        let mut holder = postgres::Client::connect(url, postgres::NoTls).expect("holder");
        let mut turn = holder.transaction().expect("begin");
        turn.batch_execute(held).expect("take the turn");
        let running: JoinHandle<Result<()>> = thread::spawn(move || call(&mut q));
        let waiting = "SELECT count(*) FROM pg_stat_activity
                       WHERE datname = current_database() AND wait_event_type = 'Lock'
                         AND wait_event = 'advisory'";
        let waited = loop {
            if turn.query_one(waiting, &[]).expect("waiting").get::<_, i64>(0) > 0 {
                break true;
            }
            if running.is_finished() {
                break false;
            }
            thread::sleep(Duration::from_millis(5));
        };
        turn.commit().expect("commit");
        running.join().expect("the call").unwrap_or_else(|e| panic!("{name}: {e}"));
        waited
    }

    /// A job in each state the writes below need, on a fresh database: `pending`; `done`,
    /// `retry`, `batch`, `note`, `beat` leased to `w` on attempt 1; `dead` and `dead2` dead.
    fn scene(test: &str) -> Option<String> {
        let (url, mut q) = pg_at(test)?;
        let ids = ["pending", "done", "retry", "batch", "note", "beat", "dead", "dead2"];
        for id in ids.iter().rev() {
            let job =
                NewJob { id, payload: "", max_attempts: 1, deadline: 9000, now: 0, ..NewJob::default() };
            q.enqueue(&job).expect("enqueue");
        }
        // Claimed in enqueue order, which is `ids` backwards: all but `pending`.
        for (now, id) in ids.iter().rev().take(ids.len() - 1).enumerate() {
            let claimed = q.claim("w", now as u64).expect("claim").expect("due");
            assert_eq!(claimed.id(), *id);
            if id.starts_with("dead") {
                q.complete(&Completion::new(&claimed.lease, Outcome::Permanent, 10, 0.0)).expect("dead");
            }
        }
        Some(url)
    }

    /// Every write of the store, each on a job of [`scene`], each meant to succeed.
    fn writes() -> Vec<(&'static str, Call)> {
        let lease = |id: &str| Lease::new("w", id, 1);
        let job =
            |id| NewJob { id, payload: "", max_attempts: 3, deadline: 9000, now: 20, ..NewJob::default() };
        let finish = |id: &str, outcome: Outcome| {
            let lease = lease(id);
            move |q: &mut PgQueue| q.complete(&Completion::new(&lease, outcome, 20, 0.0)).map(drop)
        };
        vec![
            ("enqueue", Box::new(move |q: &mut PgQueue| q.enqueue(&job("new")).map(drop))),
            ("enqueue_many", Box::new(move |q: &mut PgQueue| q.enqueue_many(&[job("new2")]).map(drop))),
            ("complete ok", Box::new(finish("done", Outcome::Ok))),
            ("complete retryable", Box::new(finish("retry", Outcome::Retryable))),
            (
                "complete_batch",
                Box::new(move |q: &mut PgQueue| {
                    let lease = lease("batch");
                    let outcome = q.complete_batch(&[Completion::new(&lease, Outcome::Ok, 20, 0.0)])?;
                    outcome.into_iter().try_for_each(|r| r.map(drop))
                }),
            ),
            (
                "record_error",
                Box::new(move |q: &mut PgQueue| q.record_error(&lease("note"), "refused", None)),
            ),
            ("heartbeat", Box::new(move |q: &mut PgQueue| q.heartbeat(&lease("beat"), 20).map(drop))),
            ("cancel", Box::new(|q: &mut PgQueue| q.cancel("pending", 20))),
            (
                "redrive",
                Box::new(|q: &mut PgQueue| {
                    q.redrive(&Redrive { id: "dead", add_attempts: 1, deadline: 9000, now: 20 })
                }),
            ),
            (
                "redrive_dead",
                Box::new(|q: &mut PgQueue| {
                    let all = RedriveDead {
                        reason: Some(DeadReason::Permanent),
                        add_attempts: 1,
                        deadline: 9000,
                        now: 20,
                    };
                    q.redrive_dead(&all)?.into_iter().try_for_each(|(_, r)| r)
                }),
            ),
        ]
    }

    /// The claims' side: claim, a batch of claims, and a reap.
    fn claims() -> Vec<(&'static str, Call)> {
        vec![
            ("claim", Box::new(|q: &mut PgQueue| q.claim("w2", 30).map(drop))),
            ("claim_batch", Box::new(|q: &mut PgQueue| q.claim_batch("w2", 30, 2).map(drop))),
            ("reap", Box::new(|q: &mut PgQueue| q.reap(30).map(drop))),
        ]
    }

    /// No write commits between a claim's snapshot and its commit: with the turn held alone,
    /// every write waits for it.
    #[test]
    fn every_write_waits_while_a_claim_holds_the_turn() {
        let Some(url) = scene("every_write_waits_while_a_claim_holds_the_turn") else { return };
        for (name, call) in writes() {
            let q = PgQueue::connect(&url).expect("connect");
            assert!(waits_for(&url, ALONE, q, name, call), "{name} ran inside a claim's turn");
        }
    }

    /// Writes run side by side: with the turn held shared, no write waits for it.
    #[test]
    fn writes_do_not_wait_for_each_other_s_turn() {
        let Some(url) = scene("writes_do_not_wait_for_each_other_s_turn") else { return };
        for (name, call) in writes() {
            let q = PgQueue::connect(&url).expect("connect");
            assert!(!waits_for(&url, SHARED, q, name, call), "{name} waited for another write");
        }
    }

    /// Claims and reaps wait for the writes in their turn, and for each other.
    #[test]
    fn claims_and_reaps_wait_for_every_other_turn() {
        let Some(url) = scene("claims_and_reaps_wait_for_every_other_turn") else { return };
        for held in [SHARED, ALONE] {
            for (name, call) in claims() {
                let q = PgQueue::connect(&url).expect("connect");
                assert!(waits_for(&url, held, q, name, call), "{name} did not wait for {held}");
            }
        }
    }
}
