//! Tests of contract 1.2 on the PostgreSQL store: queues and priorities, cancel requests,
//! `ended_at`, prune, forget and the tombstones, the schema's new triggers and audit
//! checks, and the upgrade of a schema 2 database. PostgreSQL only: each asserts the SPEC's
//! answer itself (the SQLite store's 1.2 is written apart; `tests.rs` compares the two).

use super::PgQueue;
use super::ddl::SCHEMA_2;
use super::tests::pg_at;
use crate::{
    Cancelled, Completed, Completion, DeadReason, Enqueued, Error, ErrorKind, Lease, Lookup, NewJob, Outcome,
    Redrive, RedriveDead, Status, payload_digest,
};

fn pg(test: &str) -> Option<PgQueue> {
    pg_at(test).map(|(_, q)| q)
}

fn job<'a>(id: &'a str, queue: &'a str, priority: u64, now: u64) -> NewJob<'a> {
    NewJob {
        id,
        payload: id,
        max_attempts: 3,
        deadline: 10_000,
        now,
        queue: Some(queue),
        priority: Some(priority),
        ..NewJob::default()
    }
}

fn enqueue(q: &mut PgQueue, job: NewJob<'_>) {
    assert_eq!(q.enqueue(&job).expect("enqueue"), Enqueued::New, "{}", job.id);
}

fn ids(claims: &[crate::Claimed]) -> Vec<&str> {
    claims.iter().map(|c| c.id()).collect()
}

fn kind<T: std::fmt::Debug>(result: crate::Result<T>) -> Result<T, ErrorKind> {
    result.map_err(|e| e.kind())
}

#[test]
fn a_claim_takes_its_queues_by_priority_then_available_at_then_first_enqueue() {
    let Some(mut q) = pg("a_claim_takes_its_queues_by_priority") else { return };
    enqueue(&mut q, job("d-p1", "default", 1, 0));
    enqueue(&mut q, job("b-p0-late", "b", 0, 20));
    enqueue(&mut q, job("c-p0", "c", 0, 0));
    enqueue(&mut q, job("b-p0", "b", 0, 10));
    enqueue(&mut q, job("d-p0", "default", 0, 10));
    enqueue(&mut q, NewJob { queue: None, priority: None, ..job("plain", "x", 0, 10) });
    let got = q.get("plain").expect("get").expect("job");
    assert_eq!((got.queue.as_str(), got.priority), ("default", 0), "the defaults");
    // Queue c is not served: its job, the earliest of all, is passed over.
    let order: Vec<String> = (0..5)
        .map(|_| q.claim_from("w", &["b", "default"], 100).expect("claim").expect("claimed").lease.id)
        .collect();
    assert_eq!(
        order,
        ["b-p0", "d-p0", "plain", "b-p0-late", "d-p1"],
        "priority, available_at, first enqueue"
    );
    assert_eq!(
        q.claim_from("w", &["default", "b"], 100).expect("claim"),
        None,
        "the order of names plays no part"
    );
    assert_eq!(q.claim_from("w", &["c"], 100).expect("claim").expect("c").id(), "c-p0");
    // Batches answer as single claims one after another.
    for (id, queue, priority) in [("x2", "x", 2), ("y0", "y", 0), ("x0", "x", 0), ("y9", "y", 9)] {
        enqueue(&mut q, job(id, queue, priority, 200));
    }
    let batch = q.claim_batch_from("w", &["x", "y"], 200, 3).expect("batch");
    assert_eq!(ids(&batch), ["y0", "x0", "x2"]);
    assert_eq!(ids(&q.claim_batch_from("w", &["y"], 200, 5).expect("batch")), ["y9"]);
    // Arguments first: bad queues are invalid_input, naming `queues`.
    let cases: [&[&str]; 4] = [&[], &["a", "a"], &[""], &["a\0"]];
    for queues in cases {
        assert!(matches!(q.claim_from("w", queues, 0), Err(Error::InvalidInput { field: "queues", .. })));
        assert!(matches!(
            q.claim_batch_from("w", queues, 0, 1),
            Err(Error::InvalidInput { field: "queues", .. })
        ));
    }
    let long = "q".repeat(65);
    assert!(matches!(
        q.claim_from("w", &[long.as_str()], 0),
        Err(Error::InvalidInput { field: "queues", .. })
    ));
    let many: Vec<String> = (0..65).map(|i| format!("q{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(matches!(q.claim_from("w", &many, 0), Err(Error::InvalidInput { field: "queues", .. })));
    assert!(q.claim_from("w", &many[..64], 0).is_ok(), "64 queues are allowed");
    assert!(q.audit().expect("audit").is_clean());
}

#[test]
fn the_queue_and_priority_are_set_once_and_checked_first() {
    let Some(mut q) = pg("the_queue_and_priority_are_set_once") else { return };
    enqueue(&mut q, job("a", "first", 4, 0));
    let before = q.get("a").expect("get");
    assert_eq!(q.enqueue(&job("a", "second", 0, 5)).expect("again"), Enqueued::Existing);
    assert_eq!(q.get("a").expect("get"), before, "a re-enqueue moves nothing (6.28)");
    let bad = |q: &mut PgQueue, j: NewJob<'_>| match q.enqueue(&j) {
        Err(Error::InvalidInput { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(bad(&mut q, job("a", "first", 10, 0)), "priority", "checked also for an existing id");
    assert_eq!(bad(&mut q, job("a", "", 0, 0)), "queue");
    assert_eq!(bad(&mut q, job("new", &"q".repeat(65), 0, 0)), "queue");
    assert!(q.enqueue(&job("new", &"é".repeat(32), 9, 0)).is_ok(), "64 bytes, priority 9");
    assert!(q.get("new").expect("get").is_some());
    // A retry and a redrive keep them.
    let c = q.claim_from("w", &["first"], 1).expect("claim").expect("a");
    q.complete(&Completion::new(&c.lease, Outcome::Retryable, 2, 0.0)).expect("retry");
    let c = q.claim_from("w", &["first"], 2).expect("claim").expect("a");
    q.complete(&Completion::new(&c.lease, Outcome::Permanent, 3, 0.0)).expect("dead");
    q.redrive(&Redrive { id: "a", add_attempts: 1, deadline: 9000, now: 4 }).expect("redrive");
    let got = q.get("a").expect("get").expect("job");
    assert_eq!((got.queue.as_str(), got.priority, got.ended_at), ("first", 4, None));
    // Stats per queue.
    let stats = q.stats_of(10, Some("first")).expect("stats");
    assert_eq!((stats.pending, stats.leased, stats.done, stats.dead), (1, 0, 0, 0));
    let stats = q.stats_of(10, Some("nobody")).expect("stats");
    assert_eq!((stats.pending, stats.oldest_open_age_ms), (0, None));
    assert_eq!(q.stats(10).expect("stats").pending, 2);
    assert!(matches!(q.stats_of(10, Some("")), Err(Error::InvalidInput { field: "queue", .. })));
}

#[test]
fn a_claim_reaps_every_queue() {
    let Some(mut q) = pg("a_claim_reaps_every_queue") else { return };
    enqueue(&mut q, NewJob { deadline: 50, ..job("unserved", "nobody", 0, 0) });
    enqueue(&mut q, job("served", "default", 0, 0));
    let c = q.claim("w", 60).expect("claim").expect("served");
    assert_eq!(c.id(), "served");
    let got = q.get("unserved").expect("get").expect("job");
    assert_eq!(
        (got.status, got.dead_reason, got.ended_at),
        (Status::Dead, Some(DeadReason::Deadline), Some(60))
    );
}

/// SPEC 3.13, 3.12, 3.4, 3.3.1 and 6.34: a request on a leased job, its refusals and ends.
#[test]
fn a_cancel_request_stops_the_holder_and_ends_the_job() {
    let Some(mut q) = pg("a_cancel_request_stops_the_holder") else { return };
    let mut ids = Vec::new();
    for id in ["ok", "perm", "retry", "beat", "expired", "spent", "late"] {
        ids.push(id);
        let max_attempts = if id == "spent" { 1 } else { 5 };
        let deadline = if id == "late" { 1500 } else { 10_000 };
        q.enqueue(&NewJob { max_attempts, deadline, ..job(id, "default", 0, 0) }).expect("enqueue");
    }
    let mut leases = std::collections::HashMap::new();
    for _ in &ids {
        let c = q.claim("w", 100).expect("claim").expect("claimed");
        leases.insert(c.lease.id.clone(), c.lease);
    }
    for id in &ids {
        assert_eq!(q.cancel(id, 200).expect("cancel"), Cancelled::Requested, "{id}");
    }
    let got = q.get("ok").expect("get").expect("job");
    assert_eq!(
        (got.status, got.cancel_requested, got.available_at, got.attempts),
        (Status::Leased, true, Some(1100), 1)
    );
    // The holder's heartbeat: the fence and the clock first, then the request (6.34), even
    // past the deadline.
    let beat = &leases["beat"];
    assert_eq!(kind(q.heartbeat(&Lease::new("other", "beat", 1), 300)), Err(ErrorKind::LeaseLost));
    assert_eq!(kind(q.heartbeat(beat, 99)), Err(ErrorKind::ClockWentBackwards));
    assert_eq!(kind(q.heartbeat(beat, 300)), Err(ErrorKind::Cancelled));
    assert_eq!(kind(q.heartbeat(&leases["late"], 1600)), Err(ErrorKind::Cancelled), "before deadline_passed");
    assert_eq!(
        q.get("beat").expect("get").expect("job").available_at,
        Some(1100),
        "a refusal changes nothing"
    );
    // Completions decide the end.
    let done = |q: &mut PgQueue, id: &str, outcome, jitter| {
        q.complete(&Completion::new(&leases[id], outcome, 300, jitter)).expect("complete")
    };
    assert_eq!(done(&mut q, "ok", Outcome::Ok, 0.0), Completed::Done);
    assert_eq!(
        done(&mut q, "perm", Outcome::Permanent, 0.0),
        Completed::Dead { reason: DeadReason::Permanent }
    );
    let no_jitter =
        Completion { jitter: f64::NAN, ..Completion::new(&leases["retry"], Outcome::Retryable, 300, 0.0) };
    assert_eq!(kind(q.complete(&no_jitter)), Err(ErrorKind::InvalidInput), "the jitter is still checked");
    assert_eq!(
        done(&mut q, "retry", Outcome::Retryable, 0.5),
        Completed::Dead { reason: DeadReason::Cancelled }
    );
    for (id, status, reason) in [
        ("ok", Status::Done, None),
        ("perm", Status::Dead, Some(DeadReason::Permanent)),
        ("retry", Status::Dead, Some(DeadReason::Cancelled)),
    ] {
        let got = q.get(id).expect("get").expect("job");
        assert_eq!(
            (got.status, got.dead_reason, got.ended_at, got.cancel_requested),
            (status, reason, Some(300), false),
            "{id}"
        );
    }
    // Expired leases with a request are reaped cancelled, before exhausted and deadline, and
    // never claimed again.
    assert_eq!(q.claim("w2", 1099).expect("claim"), None, "nothing expired yet");
    assert_eq!(q.reap(1099).expect("reap"), 0);
    assert_eq!(q.claim("w2", 1600).expect("claim"), None, "expired, asked to stop: reaped, not claimed");
    for id in ["beat", "expired", "spent", "late"] {
        let got = q.get(id).expect("get").expect("job");
        assert_eq!(
            (got.status, got.dead_reason, got.ended_at, got.cancel_requested, got.attempts),
            (Status::Dead, Some(DeadReason::Cancelled), Some(1600), false, 1),
            "{id}"
        );
    }
    assert_eq!(q.stats(1600).expect("stats").dead_cancelled, 5);
    // A pending cancel ends it at once; a dead one is not cancellable.
    enqueue(&mut q, job("pending", "default", 0, 0));
    assert_eq!(q.cancel("pending", 1700).expect("cancel"), Cancelled::Ended);
    assert_eq!(q.get("pending").expect("get").expect("job").ended_at, Some(1700));
    assert_eq!(kind(q.cancel("pending", 1800)), Err(ErrorKind::NotCancellable));
    assert_eq!(kind(q.cancel("ok", 1800)), Err(ErrorKind::NotCancellable));
    // A redriven cancelled job has no request.
    q.redrive(&Redrive { id: "expired", add_attempts: 1, deadline: 9000, now: 1800 }).expect("redrive");
    let got = q.get("expired").expect("get").expect("job");
    assert_eq!((got.status, got.cancel_requested, got.ended_at), (Status::Pending, false, None));
    assert_eq!(q.claim("w3", 1800).expect("claim").expect("again").id(), "expired");
}

/// A claim batch never takes a job with a request: not even one the batch's reap saw as
/// unexpired when its pick began.
#[test]
fn a_cancel_request_is_never_claimed_by_a_batch() {
    let Some(mut q) = pg("a_cancel_request_is_never_claimed_by_a_batch") else { return };
    enqueue(&mut q, job("a", "default", 0, 0));
    enqueue(&mut q, job("b", "default", 0, 0));
    q.claim_batch("w", 0, 2).expect("batch");
    q.cancel("a", 10).expect("cancel");
    let batch = q.claim_batch("w2", 1000, 5).expect("batch");
    assert_eq!(ids(&batch), ["b"], "a is reaped cancelled; b reclaimed");
    assert_eq!(q.get("a").expect("get").expect("job").dead_reason, Some(DeadReason::Cancelled));
}

/// `ended_at` is the `now` of every transition to done or dead (SPEC 1.1, 4.3).
#[test]
fn every_end_stamps_ended_at() {
    let Some(mut q) = pg("every_end_stamps_ended_at") else { return };
    let one = |id| NewJob { max_attempts: 1, deadline: 5000, ..job(id, "default", 0, 0) };
    for id in ["done", "exhausted", "reaped-exhausted", "reaped-late", "deadline"] {
        q.enqueue(&one(id)).expect("enqueue");
    }
    q.enqueue(&NewJob { deadline: 150, max_attempts: 3, ..job("late", "default", 0, 0) }).expect("late");
    let c = q.claim("w", 0).expect("claim").expect("done");
    q.complete(&Completion::new(&c.lease, Outcome::Ok, 11, 0.0)).expect("ok");
    let c = q.claim("w", 0).expect("claim").expect("exhausted");
    q.complete(&Completion::new(&c.lease, Outcome::Retryable, 12, 0.0)).expect("retryable");
    q.claim("w", 0).expect("claim").expect("reaped-exhausted");
    let c = q.claim("w", 100).expect("claim").expect("reaped-late");
    assert_eq!(c.id(), "reaped-late");
    let c = q.claim("w", 100).expect("claim").expect("deadline");
    assert_eq!(c.id(), "deadline");
    assert_eq!(q.reap(1000).expect("reap"), 2, "reaped-exhausted expired at 1000, late passed 150");
    let c = q.claim("w", 0).expect("nothing").map(|c| c.lease);
    assert_eq!(c, None);
    let got = |q: &PgQueue, id| {
        let j = q.get(id).expect("get").expect("job");
        (j.dead_reason, j.ended_at)
    };
    assert_eq!(got(&q, "done"), (None, Some(11)));
    assert_eq!(got(&q, "exhausted"), (Some(DeadReason::Exhausted), Some(12)));
    assert_eq!(got(&q, "reaped-exhausted"), (Some(DeadReason::Exhausted), Some(1000)));
    assert_eq!(got(&q, "late"), (Some(DeadReason::Deadline), Some(1000)));
    assert_eq!(q.get("reaped-late").expect("get").expect("job").ended_at, None, "still leased");
}

/// SPEC 3.14, 3.15, 6.29–6.31, 6.35: prune and forget, every operation on a pruned id.
#[test]
fn prune_leaves_tombstones_and_forget_frees_their_ids() {
    let Some(mut q) = pg("prune_leaves_tombstones_and_forget_frees_their_ids") else { return };
    let payload = "nul \0, é";
    enqueue(&mut q, NewJob { payload, ..job("done", "a", 0, 0) });
    enqueue(&mut q, job("dead", "b", 0, 0));
    enqueue(&mut q, job("later", "a", 0, 0));
    enqueue(&mut q, NewJob { deadline: 20, ..job("overdue", "a", 0, 0) });
    enqueue(&mut q, job("open", "a", 0, 0));
    let c = q.claim_from("w", &["a"], 10).expect("claim").expect("done");
    let done_lease = c.lease.clone();
    q.complete(&Completion::new(&c.lease, Outcome::Ok, 10, 0.0)).expect("done");
    assert_eq!(q.cancel("dead", 10).expect("cancel"), Cancelled::Ended);
    let c = q.claim_from("w", &["a"], 11).expect("claim").expect("later");
    q.complete(&Completion::new(&c.lease, Outcome::Ok, 11, 0.0)).expect("done");
    // Arguments: before ≤ now.
    assert!(matches!(q.prune(11, 10), Err(Error::InvalidInput { field: "before", .. })));
    assert!(matches!(q.forget(11, 10), Err(Error::InvalidInput { field: "before", .. })));
    assert!(matches!(q.prune_at_most(11, 10, 5), Err(Error::InvalidInput { field: "before", .. })));
    assert_eq!(q.prune(9, 100).expect("prune"), 0, "nothing ended by 9");
    // The bound is included; "later" ended at 11; "overdue" is past its deadline but open.
    assert_eq!(q.prune(10, 100).expect("prune"), 2);
    assert_eq!(q.get("overdue").expect("get").expect("job").status, Status::Pending);
    assert_eq!(q.get("done").expect("get"), None, "get is job-only");
    assert_eq!(
        q.lookup("done").expect("lookup"),
        Some(Lookup::Pruned(crate::Tombstone {
            id: "done".into(),
            queue: "a".into(),
            digest: payload_digest(payload),
            status: Status::Done,
            dead_reason: None,
            attempts: 1,
            ended_at: 10,
        }))
    );
    let Some(Lookup::Pruned(dead)) = q.lookup("dead").expect("lookup") else { panic!("a tombstone") };
    assert_eq!(
        (dead.status, dead.dead_reason, dead.attempts, dead.queue.as_str()),
        (Status::Dead, Some(DeadReason::Cancelled), 0, "b")
    );
    assert!(matches!(q.lookup("later").expect("lookup"), Some(Lookup::Job(j)) if j.id == "later"));
    assert_eq!(q.lookup("never").expect("lookup"), None);
    assert!(q.history("done").expect("history").is_empty(), "pruned with its history");
    // Every operation on a pruned id.
    assert_eq!(q.enqueue(&NewJob { payload, ..job("done", "z", 5, 200) }).expect("same"), Enqueued::Existing);
    assert_eq!(kind(q.enqueue(&job("done", "a", 0, 200))), Err(ErrorKind::Conflict));
    let many = q.enqueue_many(&[job("dead", "b", 0, 200)]).expect("many");
    assert!(matches!(many.as_slice(), [Ok(Enqueued::Existing)]), "{many:?}");
    assert_eq!(q.get("done").expect("get"), None, "an enqueue never runs a pruned id again");
    assert_eq!(
        kind(q.redrive(&Redrive { id: "dead", add_attempts: 1, deadline: 900, now: 200 })),
        Err(ErrorKind::Pruned)
    );
    assert_eq!(kind(q.cancel("done", 200)), Err(ErrorKind::Pruned));
    assert_eq!(
        kind(q.complete(&Completion::new(&done_lease, Outcome::Ok, 200, 0.0))),
        Err(ErrorKind::LeaseLost)
    );
    assert_eq!(
        kind(q.complete(&Completion::new(&done_lease, Outcome::Retryable, 200, 0.0))),
        Err(ErrorKind::LeaseLost)
    );
    assert_eq!(kind(q.heartbeat(&done_lease, 200)), Err(ErrorKind::LeaseLost));
    assert_eq!(kind(q.record_error(&done_lease, "x", None)), Err(ErrorKind::LeaseLost));
    assert_eq!(kind(q.heartbeat(&Lease::new("w", "never", 1), 200)), Err(ErrorKind::NotFound));
    let all = q
        .redrive_dead(&RedriveDead { reason: None, add_attempts: 1, deadline: 900, now: 200 })
        .expect("redrive");
    assert!(all.is_empty(), "a tombstone is no dead job: {all:?}");
    let stats = q.stats(200).expect("stats");
    assert_eq!(
        (stats.done, stats.dead, stats.pruned_done, stats.pruned_dead, stats.pending),
        (1, 0, 1, 1, 2)
    );
    let stats = q.stats_of(200, Some("b")).expect("stats");
    assert_eq!((stats.pruned_done, stats.pruned_dead, stats.dead), (0, 1, 0));
    enqueue(&mut q, job("tie", "a", 0, 200));
    // Forget: the bound included, every queue; then the id is new.
    assert_eq!(q.forget(9, 200).expect("forget"), 0);
    assert_eq!(q.forget(10, 200).expect("forget"), 2);
    assert_eq!(q.forget(10, 200).expect("forget"), 0);
    assert_eq!(q.lookup("done").expect("lookup"), None);
    assert_eq!(kind(q.cancel("done", 200)), Err(ErrorKind::NotFound));
    assert_eq!(kind(q.heartbeat(&done_lease, 200)), Err(ErrorKind::NotFound));
    assert_eq!(
        kind(q.redrive(&Redrive { id: "dead", add_attempts: 1, deadline: 900, now: 200 })),
        Err(ErrorKind::NotFound)
    );
    enqueue(&mut q, job("done", "a", 0, 200));
    let got = q.get("done").expect("get").expect("job");
    assert_eq!((got.attempts, got.redrives, got.enqueued_at, got.payload.as_str()), (0, 0, 200, "done"));
    // Its place in the order of first enqueues is after every id enqueued before it: "tie",
    // due at 200 as it is, was enqueued before it.
    let order: Vec<String> =
        (0..3).map(|_| q.claim_from("w", &["a"], 200).expect("claim").expect("claimed").lease.id).collect();
    assert_eq!(order, ["open", "tie", "done"]);
    assert_eq!(q.get("overdue").expect("get").expect("job").dead_reason, Some(DeadReason::Deadline));
    assert!(q.audit().expect("audit").is_clean(), "{:#?}", q.audit().expect("audit").violations);
}

/// `prune_at_most`: the largest bound whose jobs fit the limit, or the earliest instant's.
#[test]
fn prune_at_most_prunes_the_earliest_ended_whole_instants() {
    let Some(mut q) = pg("prune_at_most_prunes_the_earliest_ended_whole_instants") else { return };
    // Ends: 10, 10, 10, 20, 30.
    for (id, end) in [("a", 10), ("b", 10), ("c", 10), ("d", 20), ("e", 30)] {
        enqueue(&mut q, job(id, "default", 0, 0));
        q.cancel(id, end).expect("cancel");
    }
    enqueue(&mut q, job("open", "default", 0, 0));
    assert_eq!(
        q.prune_at_most(30, 40, 2).expect("prune"),
        3,
        "the earliest instant alone outnumbers 2: all of it"
    );
    assert_eq!(q.stats(40).expect("stats").pruned_dead, 3);
    assert_eq!(q.prune_at_most(30, 40, 0).expect("prune"), 1, "limit 0: still the earliest instant");
    assert_eq!(q.lookup("d").expect("lookup").map(|l| matches!(l, Lookup::Pruned(_))), Some(true));
    assert_eq!(q.prune_at_most(25, 40, 5).expect("prune"), 0, "e ended after 25");
    assert_eq!(q.prune_at_most(30, 40, 5).expect("prune"), 1);
    assert_eq!(q.prune_at_most(40, 40, 5).expect("prune"), 0, "none left; open is never pruned");
    // With room for two of three instants: the largest bound that fits.
    for (id, end) in [("f", 50), ("g", 60), ("h", 60), ("i", 70)] {
        enqueue(&mut q, job(id, "default", 0, 0));
        q.cancel(id, end).expect("cancel");
    }
    assert_eq!(q.prune_at_most(70, 80, 2).expect("prune"), 1, "f alone: f, g and h are three");
    assert_eq!(q.prune_at_most(70, 80, 3).expect("prune"), 3, "g, h and i");
    assert!(q.audit().expect("audit").is_clean());
}

/// The triggers: a tombstone never changes, a job goes only by a prune, a pruned id takes no
/// job, history goes only with a pruned job, a tombstone only with nothing left of it.
#[test]
fn the_schema_refuses_what_prune_and_forget_never_do() {
    let Some(mut q) = pg("the_schema_refuses_what_prune_and_forget_never_do") else { return };
    enqueue(&mut q, job("gone", "default", 0, 0));
    q.cancel("gone", 5).expect("cancel");
    enqueue(&mut q, job("ended", "default", 0, 0));
    q.cancel("ended", 6).expect("cancel");
    enqueue(&mut q, job("open", "default", 0, 0));
    assert_eq!(q.prune(5, 10).expect("prune"), 1);
    for sql in [
        "UPDATE tombstones SET attempts = 7",
        "TRUNCATE tombstones",
        "DELETE FROM jobs WHERE id = 'ended'",
        "DELETE FROM jobs WHERE id = 'open'",
        "DELETE FROM history WHERE job = 'open'",
        "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                           enqueued_at, updated_at, not_before, queue, priority)
         VALUES ('gone', '', 'pending', 0, 1, 0, 100, 0, 0, 0, 0, 'default', 0)",
        "INSERT INTO tombstones VALUES ('open', 'default', repeat('0', 64), 'done', NULL, 0, 1)",
        "INSERT INTO tombstones SELECT 'ended', 'default', repeat('0', 64), 'dead', 'cancelled', 0, 6",
        "UPDATE jobs SET queue = 'other' WHERE id = 'open'",
        "UPDATE jobs SET priority = 1 WHERE id = 'open'",
        "UPDATE jobs SET cancel_requested = true WHERE id = 'open'",
        "UPDATE jobs SET ended_at = 3 WHERE id = 'open'",
        "UPDATE jobs SET priority = 10 WHERE id = 'open'",
    ] {
        let err = q.raw(sql).err().unwrap_or_else(|| panic!("{sql} was allowed"));
        assert_eq!(err.kind(), ErrorKind::Storage, "{sql}: {err}");
    }
    // A tombstone whose history is back cannot be forgotten.
    q.raw(
        "INSERT INTO history (job, to_status, attempt, max_attempts, deadline, redrives, at)
         VALUES ('gone', 'pending', 0, 1, 100, 0, 0)",
    )
    .expect("history is written by inserts");
    assert_eq!(kind(q.forget(10, 10)), Err(ErrorKind::Storage));
    assert_eq!(q.lookup("gone").expect("lookup").map(|l| matches!(l, Lookup::Pruned(_))), Some(true));
}

/// The audit's own checks of the tombstones: an id with a job and a tombstone, history left
/// of a pruned job.
#[test]
fn the_audit_finds_a_tombstone_beside_a_job_and_history_left_behind() {
    let Some(mut q) = pg("the_audit_finds_a_tombstone_beside_a_job") else { return };
    for id in ["a", "b"] {
        enqueue(&mut q, job(id, "default", 0, 0));
        q.cancel(id, 5).expect("cancel");
    }
    q.prune(5, 10).expect("prune");
    assert!(q.audit().expect("audit").is_clean());
    q.raw(
        "ALTER TABLE jobs DISABLE TRIGGER jobs_not_over_a_tombstone;
         INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                           enqueued_at, updated_at, not_before, queue, priority)
         VALUES ('a', '', 'pending', 0, 1, 0, 100, 0, 0, 0, 0, 'default', 0);
         INSERT INTO history (job, to_status, attempt, max_attempts, deadline, redrives, at)
         VALUES ('b', 'pending', 0, 1, 100, 0, 0);",
    )
    .expect("tamper");
    let audit = q.audit().expect("audit");
    let found =
        |job: &str, what: &str| audit.violations.iter().any(|v| v.job == job && v.what.contains(what));
    assert!(found("a", "names a pending job and the tombstone of a dead one"), "{:#?}", audit.violations);
    assert!(found("b", "history entries left of a pruned job"), "{:#?}", audit.violations);
    assert!(!found("b", "no longer in the store"), "reported once: {:#?}", audit.violations);
}

/// The catalog of the current schema, in words: columns, constraints, indexes, triggers and
/// the functions' sources, each sorted.
pub(super) fn catalog(q: &PgQueue) -> Vec<String> {
    let sql = r#"
        SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
               || coalesce(' collate ' || co.collname, '') || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
               || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') || ' #' || a.attnum
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        LEFT JOIN pg_collation co ON co.oid = a.attcollation AND co.collname <> 'default'
        WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
          AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace = current_schema()::regnamespace
        UNION ALL
        SELECT 'index ' || replace(pg_get_indexdef(indexrelid), current_schema() || '.', '')
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relnamespace = current_schema()::regnamespace
        UNION ALL
        SELECT 'trigger ' || replace(pg_get_triggerdef(t.oid), current_schema() || '.', '')
        FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
        UNION ALL
        SELECT 'function ' || proname || ' ' || prosrc || ' pins search_path ' || (proconfig IS NOT NULL)
        FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
        ORDER BY 1"#;
    q.raw_query(sql).expect("catalog").iter().map(|row| row.get(0)).collect()
}

/// A schema 2 database (retryq 1.1's DDL, kept verbatim) with jobs in every status is
/// upgraded in place by the first connect: schema 4's catalog exactly, the jobs as they
/// were with SPEC 3.9's values for what schema 2 lacked, its history kept, the attempts'
/// records and the tallies filled from it, audit clean, and every operation of 1.2 working
/// on it.
#[test]
fn a_schema_2_database_is_upgraded_in_place() {
    let Some((url, fresh)) = pg_at("a_schema_2_database_is_upgraded_in_place") else { return };
    let want = catalog(&fresh);
    drop(fresh);
    // Not "old": the catalog strips the schema's name and a dot, and `old.` is in the triggers.
    let (old, mut client) = super::tests::older_schema(&url, "two", SCHEMA_2, 2);
    // Rows as retryq 1.1 wrote them: pending, leased, done, dead; the triggers record each.
    client
        .batch_execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline, redrives,
                               enqueued_at, updated_at, not_before)
             VALUES ('p', 'p', 'pending', 0, 3, 5, 9000, 0, 5, 5, 5),
                    ('l', 'l', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0),
                    ('d', 'd', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0),
                    ('x', 'x', 'pending', 0, 3, 0, 9000, 0, 0, 0, 0);
             UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w', claimed_at = 10,
                             available_at = 1010, updated_at = 10 WHERE id IN ('l', 'd');
             UPDATE jobs SET status = 'done', available_at = NULL, owner = NULL, claimed_at = NULL,
                             updated_at = 20 WHERE id = 'd';
             UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL,
                             updated_at = 30 WHERE id = 'x';",
        )
        .expect("rows");
    let history_before: i64 = client.query_one("SELECT count(*) FROM history", &[]).expect("count").get(0);
    let mut q = PgQueue::connect(&old).expect("upgraded");
    assert_eq!(catalog(&q), want, "an upgraded schema is a created one");
    let version: i64 = q.raw_query("SELECT schema_version FROM retryq_meta").expect("meta")[0].get(0);
    assert_eq!(version, crate::PG_SCHEMA_VERSION);
    let history_after: i64 = q.raw_query("SELECT count(*) FROM history").expect("count")[0].get(0);
    assert_eq!(history_after, history_before, "the upgrade is not a transition");
    for (id, status, ended_at) in [
        ("p", Status::Pending, None),
        ("l", Status::Leased, None),
        ("d", Status::Done, Some(20)),
        ("x", Status::Dead, Some(30)),
    ] {
        let got = q.get(id).expect("get").expect("job");
        assert_eq!(
            (got.status, got.queue.as_str(), got.priority, got.ended_at, got.cancel_requested),
            (status, "default", 0, ended_at, false),
            "{id}"
        );
    }
    assert!(q.audit().expect("audit").is_clean(), "{:#?}", q.audit().expect("audit").violations);
    // The notes, filled from the history: d's one attempt, l's still open (no record yet).
    let records = q.attempts("d").expect("attempts");
    assert_eq!(
        records.iter().map(|r| (r.attempt, r.claimed_at, r.ended_at, r.outcome.as_str())).collect::<Vec<_>>(),
        [(1, 10, 20, "ok")]
    );
    assert_eq!(q.attempts("l").expect("attempts"), []);
    let tally = |q: &PgQueue, metric: &str| -> u64 {
        q.tallies().expect("tallies").counters.iter().filter(|t| t.metric == metric).map(|t| t.value).sum()
    };
    assert_eq!(
        ["retryq_enqueued_total", "retryq_claims_total", "retryq_deaths_total", "retryq_cancels_total"]
            .map(|m| tally(&q, m)),
        [4, 2, 1, 1]
    );
    // 1.2 on the upgraded store.
    assert_eq!(q.cancel("l", 40).expect("cancel"), Cancelled::Requested);
    assert_eq!(q.prune(25, 50).expect("prune"), 1, "d ended at 20; x at 30");
    assert_eq!(q.attempts("d").expect("attempts"), [], "gone with the pruned job");
    assert_eq!((tally(&q, "retryq_cancels_total"), tally(&q, "retryq_pruned_total")), (2, 1));
    assert_eq!(
        q.enqueue(&NewJob { payload: "d", ..job("d", "z", 0, 50) }).expect("enqueue"),
        Enqueued::Existing
    );
    assert_eq!(q.claim("w2", 50).expect("claim").expect("p").id(), "p");
    let c = PgQueue::connect(&old).expect("connect again");
    assert_eq!(catalog(&c), want, "found at version 5, left as it is");
    // A second schema 2 database: connect_existing upgrades it too, and only one of several
    // connects at once does.
    let (old2, _client) = super::tests::older_schema(&url, "two_b", SCHEMA_2, 2);
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let url = old2.clone();
            std::thread::spawn(move || {
                let q = if i % 2 == 0 { PgQueue::connect(&url) } else { PgQueue::connect_existing(&url) };
                q.map(|q| catalog(&q))
            })
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().expect("thread").expect("upgraded once"), want);
    }
}

/// Contract 1.4 on PostgreSQL: the kind is compared with the payload, and the tombstone's
/// digest, computed in SQL, is `job_digest`'s: the payload's alone without a kind.
#[test]
fn a_kind_is_compared_and_digested_as_the_sqlite_store_does() {
    let Some(mut q) = pg("a_kind_is_compared_and_digested_as_the_sqlite_store_does") else { return };
    let mail = NewJob { kind: "mail", ..job("m", "default", 0, 0) };
    enqueue(&mut q, mail);
    enqueue(&mut q, job("p", "default", 0, 0));
    assert_eq!(kind(q.enqueue(&NewJob { kind: "sms", ..mail })), Err(ErrorKind::Conflict));
    assert_eq!(kind(q.enqueue(&NewJob { kind: "", ..mail })), Err(ErrorKind::Conflict));
    assert_eq!(kind(q.enqueue(&NewJob { kind: "k\0", ..mail })), Err(ErrorKind::InvalidInput));
    assert_eq!(kind(q.enqueue(&mail)), Ok(Enqueued::Existing));
    for _ in 0..2 {
        let claimed = q.claim("w", 1).expect("claim").expect("a job");
        assert_eq!(claimed.kind, if claimed.id() == "m" { "mail" } else { "" });
        q.complete(&Completion::new(&claimed.lease, Outcome::Ok, 2, 0.5)).expect("done");
    }
    assert_eq!(q.prune(2, 3).expect("prune"), 2);
    let digest = |id| match q.lookup(id).expect("lookup") {
        Some(Lookup::Pruned(t)) => t.digest,
        other => panic!("{id}: {other:?}"),
    };
    assert_eq!(digest("m"), crate::job_digest("mail", "m"));
    assert_eq!(digest("p"), payload_digest("p"), "no kind: the payload's digest, as before 1.4");
    assert_eq!(kind(q.enqueue(&mail)), Ok(Enqueued::Existing));
    assert_eq!(kind(q.enqueue(&NewJob { kind: "sms", ..mail })), Err(ErrorKind::Conflict));
}
