//! Tests of the turn (`turn.rs`): who waits for it, held from a second connection as a claim
//! holds it (alone) or as a write that makes a job due holds it (shared).

use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::PgQueue;
use super::tests::pg_at;
use super::turn::{ALONE, ENDING, RETAIN, SHARED};
use crate::{Completion, DeadReason, Lease, NewJob, Outcome, Redrive, RedriveDead, Result};

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
/// `retry`, `batch`, `batch2`, `note`, `beat`, `asked` leased to `w` on attempt 1; `dead` and
/// `dead2` dead.
fn scene(test: &str) -> Option<String> {
    let (url, mut q) = pg_at(test)?;
    let ids = ["pending", "done", "retry", "batch", "batch2", "note", "beat", "asked", "dead", "dead2"];
    for id in ids.iter().rev() {
        let job = NewJob { id, payload: "", max_attempts: 1, deadline: 9000, now: 0, ..NewJob::default() };
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

fn lease(id: &str) -> Lease {
    Lease::new("w", id, 1)
}

/// A completion of `id`'s lease, as a call.
fn finish(id: &str, outcome: Outcome) -> Call {
    let lease = lease(id);
    Box::new(move |q: &mut PgQueue| q.complete(&Completion::new(&lease, outcome, 20, 0.0)).map(drop))
}

/// A batch of one completion of `id`'s lease, as a call.
fn finish_batch(id: &str, outcome: Outcome) -> Call {
    let lease = lease(id);
    Box::new(move |q: &mut PgQueue| {
        let answers = q.complete_batch(&[Completion::new(&lease, outcome, 20, 0.0)])?;
        answers.into_iter().try_for_each(|r| r.map(drop))
    })
}

/// The writes of [`scene`]'s jobs that can make a job due, or due sooner, or change what a
/// reap does to one (a cancel: SPEC 6.26).
fn making_due() -> Vec<(&'static str, Call)> {
    let job = |id| NewJob { id, payload: "", max_attempts: 3, deadline: 9000, now: 20, ..NewJob::default() };
    let redrive_all =
        RedriveDead { reason: Some(DeadReason::Permanent), add_attempts: 1, deadline: 9000, now: 20 };
    vec![
        ("enqueue", Box::new(move |q: &mut PgQueue| q.enqueue(&job("new")).map(drop))),
        ("enqueue_many", Box::new(move |q: &mut PgQueue| q.enqueue_many(&[job("new2")]).map(drop))),
        (
            "enqueue_bulk",
            Box::new(move |q: &mut PgQueue| {
                let mut answers = Vec::new();
                q.enqueue_bulk(&[job("new3"), job("new4")], &mut answers)?;
                answers.into_iter().try_for_each(|r| r.map(drop))
            }),
        ),
        ("complete retryable", finish("retry", Outcome::Retryable)),
        ("complete_batch with a retryable", finish_batch("batch2", Outcome::Retryable)),
        (
            "redrive",
            Box::new(|q: &mut PgQueue| {
                q.redrive(&Redrive { id: "dead", add_attempts: 1, deadline: 9000, now: 20 })
            }),
        ),
        ("cancel", Box::new(|q: &mut PgQueue| q.cancel("pending", 20).map(drop))),
        ("cancel of a leased job", Box::new(|q: &mut PgQueue| q.cancel("asked", 20).map(drop))),
        (
            "redrive_dead",
            Box::new(move |q: &mut PgQueue| {
                q.redrive_dead(&redrive_all)?.into_iter().try_for_each(|(_, r)| r)
            }),
        ),
    ]
}

/// The writes of [`scene`]'s jobs that can only take a job out of what is due, or make it
/// due later.
fn taking_out() -> Vec<(&'static str, Call)> {
    vec![
        ("complete ok", finish("done", Outcome::Ok)),
        ("complete_batch of ok", finish_batch("batch", Outcome::Ok)),
        ("record_error", Box::new(|q: &mut PgQueue| q.record_error(&lease("note"), "refused", None))),
        ("heartbeat", Box::new(|q: &mut PgQueue| q.heartbeat(&lease("beat"), 20).map(drop))),
    ]
}

/// Prune and forget (of nothing: [`scene`]'s jobs ended at 10).
fn retention() -> Vec<(&'static str, Call)> {
    vec![
        ("prune", Box::new(|q: &mut PgQueue| q.prune(5, 20).map(drop))),
        ("prune_at_most", Box::new(|q: &mut PgQueue| q.prune_at_most(5, 20, 10).map(drop))),
        ("forget", Box::new(|q: &mut PgQueue| q.forget(5, 20).map(drop))),
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

/// No write that can make a job due commits between a claim's snapshot and its commit:
/// with the turn held alone, each waits for it; the writes that only take jobs out run
/// beside the claim.
#[test]
fn writes_that_make_jobs_due_wait_while_a_claim_holds_the_turn() {
    let Some(url) = scene("writes_that_make_jobs_due_wait_while_a_claim_holds_the_turn") else { return };
    for (name, call) in making_due() {
        let q = PgQueue::connect(&url).expect("connect");
        assert!(waits_for(&url, ALONE, q, name, call), "{name} ran inside a claim's turn");
    }
    for (name, call) in taking_out() {
        let q = PgQueue::connect(&url).expect("connect");
        assert!(!waits_for(&url, ALONE, q, name, call), "{name} waited for a claim's turn");
    }
}

/// Writes run side by side: with the turn held shared, no write waits for it.
#[test]
fn writes_do_not_wait_for_each_other_s_turn() {
    let Some(url) = scene("writes_do_not_wait_for_each_other_s_turn") else { return };
    for (name, call) in making_due().into_iter().chain(taking_out()) {
        let q = PgQueue::connect(&url).expect("connect");
        assert!(!waits_for(&url, SHARED, q, name, call), "{name} waited for another write");
    }
}

/// Claims and reaps wait for the writes that make jobs due, and for each other; prune and
/// forget wait for both, which may end jobs.
#[test]
fn claims_and_reaps_wait_for_every_other_turn() {
    let Some(url) = scene("claims_and_reaps_wait_for_every_other_turn") else { return };
    for held in [SHARED, ALONE] {
        for (name, call) in claims().into_iter().chain(retention()) {
            let q = PgQueue::connect(&url).expect("connect");
            assert!(waits_for(&url, held, q, name, call), "{name} did not wait for {held}");
        }
    }
}

/// Prune and forget wait for every write that can end a job or take one out of its end,
/// and each such write waits for a prune in progress: what a prune decides is what is
/// committed when it commits (`turn.rs`). Enqueues, heartbeats and notes run beside it.
#[test]
fn the_retention_and_the_writes_that_end_jobs_wait_for_each_other() {
    let Some(url) = scene("the_retention_and_the_writes_that_end_jobs_wait_for_each_other") else { return };
    for (name, call) in retention() {
        let q = PgQueue::connect(&url).expect("connect");
        assert!(waits_for(&url, ENDING, q, name, call), "{name} ran beside a write that ends a job");
    }
    let beside = ["enqueue", "record_error", "heartbeat"];
    for (name, call) in making_due().into_iter().chain(taking_out()).chain(claims()).chain(retention()) {
        let q = PgQueue::connect(&url).expect("connect");
        let waited = waits_for(&url, RETAIN, q, name, call);
        assert_eq!(waited, !beside.contains(&name), "{name}: waited for a prune in progress: {waited}");
    }
}
