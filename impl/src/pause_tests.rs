//! Scenarios of SPEC 3.16 to 3.18 and 4.15 (pause, resume, run_now), written against
//! [`Backend`] so that the same assertions run on both stores: `queue/pause.rs`'s tests on
//! SQLite, `pg/tests_pause.rs`'s on PostgreSQL. Each asserts the SPEC's answer itself.

use crate::backend::Backend;
use crate::{Completed, Completion, DeadReason, ErrorKind, Job, Lease, NewJob, Outcome, Redrive, Status};

/// A job of `queue` and `priority`, enqueued at `now`, deadline 10 000.
pub(crate) fn job<'a>(id: &'a str, queue: &'a str, now: u64) -> NewJob<'a> {
    NewJob {
        id,
        payload: id,
        max_attempts: 3,
        deadline: 10_000,
        now,
        queue: Some(queue),
        ..NewJob::default()
    }
}

fn enqueue(q: &mut dyn Backend, job: NewJob<'_>) {
    q.enqueue(&job).expect("enqueue");
}

fn get(q: &dyn Backend, id: &str) -> Job {
    q.get(id).expect("get").expect("job")
}

fn kind<T: std::fmt::Debug>(result: crate::Result<T>) -> Result<T, ErrorKind> {
    result.map_err(|e| e.kind())
}

fn claim(q: &mut dyn Backend, queues: &[&str], now: u64) -> Option<String> {
    q.claim_from("w", queues, now).expect("claim").map(|c| c.lease.id)
}

/// 3.16, 3.3.2, 4.15: no claim — single, batch or `run_once` — picks a paused queue's jobs;
/// the other queues it serves go on, and one whose queues are all paused picks nothing.
pub(crate) fn a_paused_queue_is_not_picked(q: &mut dyn Backend) {
    enqueue(q, job("m1", "mail", 0));
    enqueue(q, job("m2", "mail", 0));
    enqueue(q, job("d1", "default", 5));
    q.pause("mail", 1).expect("pause");
    // m1 is the first due of both queues, but its queue is paused.
    assert_eq!(claim(q, &["mail", "default"], 10).as_deref(), Some("d1"));
    assert_eq!(claim(q, &["mail", "default"], 10), None);
    assert_eq!(claim(q, &["mail"], 10), None, "every queue served is paused");
    assert!(q.claim_batch_from("w", &["mail", "default"], 10, 5).expect("batch").is_empty());
    let ran = q
        .run_once_from("w", &["mail"], || 10, |_| Ok::<_, std::convert::Infallible>(Outcome::Ok), 0.0)
        .expect("run_once");
    assert_eq!(ran, crate::Ran::Idle, "run_once claims as a claim does");
    assert_eq!(q.next_due_in(&["mail"]).expect("next_due_in"), None, "nothing to do while paused");
    for id in ["m1", "m2"] {
        let m = get(q, id);
        assert_eq!((m.status, m.attempts, m.available_at), (Status::Pending, 0, Some(0)), "{id} untouched");
    }
    // Another queue's pause does not touch this one: a queue is paused by its name alone.
    q.pause("mai", 2).expect("pause");
    q.resume("mail", 20).expect("resume");
    assert_eq!(q.next_due_in(&["mail"]).expect("next_due_in"), Some(0));
    let batch = q.claim_batch_from("w", &["mail"], 30, 5).expect("batch");
    let ids: Vec<&str> = batch.iter().map(|c| c.id()).collect();
    assert_eq!(ids, ["m1", "m2"], "claimed again after the resume, in claim order");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
}

/// 3.16, 3.17, 6.40: pause and resume are idempotent, a name no job carries may be paused,
/// the first pause's time is kept, and `stats` counts the paused names (3.8).
pub(crate) fn pause_and_resume_are_idempotent_and_counted(q: &mut dyn Backend) {
    assert_eq!(q.paused().expect("paused"), []);
    q.pause("sms", 10).expect("pause");
    q.pause("sms", 20).expect("pause twice");
    q.pause("b-queue", 30).expect("pause");
    q.resume("never-paused", 35).expect("resume of a queue not paused");
    assert_eq!(q.paused().expect("paused"), [("b-queue".to_owned(), 30), ("sms".to_owned(), 10)]);
    enqueue(q, job("s1", "sms", 40));
    assert_eq!(q.stats(50).expect("stats").paused_queues, 2, "names no job carries count");
    assert_eq!(q.stats_of(50, Some("sms")).expect("stats").paused_queues, 1);
    assert_eq!(q.stats_of(50, Some("default")).expect("stats").paused_queues, 0);
    q.resume("sms", 60).expect("resume");
    q.resume("sms", 61).expect("resume twice");
    assert_eq!(q.paused().expect("paused"), [("b-queue".to_owned(), 30)]);
    assert_eq!(q.stats(70).expect("stats").paused_queues, 1);
    assert_eq!(claim(q, &["sms"], 70).as_deref(), Some("s1"));
    // Arguments are checked: a bad name is refused, naming `queue`, and changes nothing.
    for bad in ["", "a\0b", &"q".repeat(65)] {
        assert_eq!(kind(q.pause(bad, 80)), Err(ErrorKind::InvalidInput), "{bad:?}");
        assert_eq!(kind(q.resume(bad, 80)), Err(ErrorKind::InvalidInput), "{bad:?}");
    }
    assert_eq!(kind(q.pause("x", 1 << 53)), Err(ErrorKind::InvalidInput));
    assert_eq!(q.paused().expect("paused"), [("b-queue".to_owned(), 30)]);
}

/// 3.16, 6.39: a paused queue's leases run on (heartbeat, completion), a retry goes back to
/// pending in its queue and waits, claims still reap its jobs due to end, and enqueue,
/// cancel and redrive act on its jobs as on any other.
pub(crate) fn a_paused_queues_jobs_still_end(q: &mut dyn Backend) {
    enqueue(q, job("held", "mail", 0));
    enqueue(q, job("done", "mail", 0));
    enqueue(q, NewJob { deadline: 500, ..job("late", "mail", 0) });
    let held = q.claim_from("w", &["mail"], 10).expect("claim").expect("held");
    let done = q.claim_from("w", &["mail"], 10).expect("claim").expect("done");
    assert_eq!((held.id(), done.id()), ("held", "done"));
    q.pause("mail", 20).expect("pause");
    assert_eq!(q.heartbeat(&held.lease, 30).expect("heartbeat"), 1030, "a lease in flight runs on");
    assert_eq!(
        q.complete(&Completion::new(&done.lease, Outcome::Ok, 40, 0.0)).expect("complete"),
        Completed::Done
    );
    let retry = q.complete(&Completion::new(&held.lease, Outcome::Retryable, 50, 1.0)).expect("complete");
    assert_eq!(retry, Completed::Retry { available_at: 150 });
    assert_eq!(claim(q, &["mail"], 200), None, "the retry waits in its paused queue");
    assert_eq!(get(q, "held").status, Status::Pending);
    // A claim of another queue reaps every queue: `late` reaches its deadline while paused.
    assert_eq!(claim(q, &["default"], 500), None);
    let late = get(q, "late");
    assert_eq!((late.status, late.dead_reason), (Status::Dead, Some(DeadReason::Deadline)));
    enqueue(q, job("new", "mail", 600));
    assert!(q.get("new").expect("get").is_some(), "an enqueue into a paused queue is stored");
    assert_eq!(kind(q.cancel("new", 610)), Ok(crate::Cancelled::Ended));
    q.redrive(&Redrive { id: "late", add_attempts: 1, deadline: 5000, now: 620 }).expect("redrive");
    assert_eq!(claim(q, &["mail"], 700), None);
    q.resume("mail", 800).expect("resume");
    assert_eq!(claim(q, &["mail"], 800).as_deref(), Some("held"), "due since 150");
    assert_eq!(claim(q, &["mail"], 800).as_deref(), Some("late"), "redriven at 620");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
}

/// 3.17: after a resume the jobs are picked as they stand: one whose deadline passed while
/// paused is due to end, not claimable.
pub(crate) fn a_resume_picks_the_jobs_as_they_stand(q: &mut dyn Backend) {
    enqueue(q, NewJob { deadline: 100, ..job("short", "mail", 0) });
    enqueue(q, job("long", "mail", 0));
    q.pause("mail", 0).expect("pause");
    q.resume("mail", 150).expect("resume");
    assert_eq!(claim(q, &["mail"], 150).as_deref(), Some("long"));
    assert_eq!(get(q, "short").dead_reason, Some(DeadReason::Deadline));
}

/// 3.18: the refusals in their order — `invalid_input` before any lookup, then
/// `not_found`, `pruned`, `not_pending` (leased, done, dead), `deadline_passed` — each
/// changing nothing.
pub(crate) fn run_now_refuses_in_order(q: &mut dyn Backend) {
    enqueue(q, job("leased", "default", 0));
    enqueue(q, job("done", "default", 0));
    enqueue(q, job("pruned", "default", 0));
    enqueue(q, NewJob { max_attempts: 1, ..job("dead", "default", 0) });
    enqueue(q, NewJob { deadline: 100, ..job("expiring", "mail", 0) });
    for id in ["leased", "done", "pruned", "dead"] {
        assert_eq!(claim(q, &["default"], 10).as_deref(), Some(id));
    }
    for (id, outcome, now) in
        [("pruned", Outcome::Ok, 20), ("done", Outcome::Ok, 25), ("dead", Outcome::Permanent, 25)]
    {
        let lease = Lease::new("w", id, 1);
        q.complete(&Completion::new(&lease, outcome, now, 0.0)).expect("complete");
    }
    assert_eq!(q.prune(20, 30).expect("prune"), 1);
    assert!(q.get("done").expect("get").is_some() && q.get("pruned").expect("get").is_none());
    let before: Vec<Option<Job>> =
        ["leased", "done", "dead", "expiring"].iter().map(|id| q.get(id).expect("get")).collect();
    let stats = q.stats(200).expect("stats");
    assert_eq!(kind(q.run_now("", 200)), Err(ErrorKind::InvalidInput));
    assert_eq!(kind(q.run_now(&"x".repeat(257), 200)), Err(ErrorKind::InvalidInput));
    assert_eq!(kind(q.run_now("leased", 1 << 53)), Err(ErrorKind::InvalidInput), "arguments first");
    assert_eq!(kind(q.run_now("nobody", 200)), Err(ErrorKind::NotFound));
    assert_eq!(kind(q.run_now("pruned", 200)), Err(ErrorKind::Pruned));
    for id in ["leased", "done", "dead"] {
        assert_eq!(kind(q.run_now(id, 200)), Err(ErrorKind::NotPending), "{id}");
    }
    match q.run_now("leased", 200) {
        Err(crate::Error::NotPending { status, .. }) => assert_eq!(status, Status::Leased),
        other => panic!("{other:?}"),
    }
    // Status before deadline: a leased job at its deadline is not_pending.
    assert_eq!(kind(q.run_now("leased", 10_000)), Err(ErrorKind::NotPending));
    // Pending, but at its deadline: due to end, and only a redrive grants time.
    assert_eq!(kind(q.run_now("expiring", 100)), Err(ErrorKind::DeadlinePassed));
    assert_eq!(kind(q.run_now("expiring", 200)), Err(ErrorKind::DeadlinePassed));
    let after: Vec<Option<Job>> =
        ["leased", "done", "dead", "expiring"].iter().map(|id| q.get(id).expect("get")).collect();
    assert_eq!(before, after, "a refusal changes nothing");
    assert_eq!(q.stats(200).expect("stats"), stats);
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
}

/// 3.18, 6.41, 4.12: run_now brings `available_at` forward to `now` — never later — and
/// changes nothing else; the job made due goes after the due jobs of a smaller priority and
/// after those of its own priority due before it; a paused queue's job made due still
/// waits.
pub(crate) fn run_now_makes_a_job_due_not_first(q: &mut dyn Backend) {
    enqueue(q, NewJob { not_before: Some(5000), ..job("scheduled", "default", 0) });
    enqueue(q, job("due-early", "default", 10));
    enqueue(q, NewJob { priority: Some(1), ..job("urgent-later", "default", 0) });
    enqueue(q, NewJob { priority: Some(0), not_before: Some(900), ..job("p0-later", "default", 0) });
    let before = get(q, "scheduled");
    assert_eq!(q.run_now("scheduled", 100).expect("run_now"), 100);
    let after = get(q, "scheduled");
    assert_eq!(after.available_at, Some(100));
    assert_eq!(
        (after.status, after.attempts, after.max_attempts, after.deadline, after.not_before),
        (before.status, before.attempts, before.max_attempts, before.deadline, before.not_before),
        "nothing else changes; not_before stays the schedule asked for"
    );
    assert_eq!((after.priority, after.queue.as_str(), after.redrives), (0, "default", 0));
    // A job already due keeps its reservation: run_now never makes a job later.
    assert_eq!(q.run_now("due-early", 200).expect("run_now"), 10);
    assert_eq!(get(q, "due-early").available_at, Some(10));
    assert_eq!(q.run_now("p0-later", 300).expect("run_now"), 300);
    // Claim order: priority 0 first — due-early (10), scheduled (100), p0-later (300) — then
    // priority 1.
    let order: Vec<String> = (0..4).filter_map(|_| claim(q, &["default"], 400)).collect();
    assert_eq!(order, ["due-early", "scheduled", "p0-later", "urgent-later"]);
    // In a paused queue, run_now answers, and the job waits for the resume.
    enqueue(q, NewJob { not_before: Some(5000), ..job("parked", "mail", 0) });
    q.pause("mail", 500).expect("pause");
    assert_eq!(q.run_now("parked", 600).expect("run_now"), 600);
    assert_eq!(claim(q, &["mail"], 700), None);
    q.resume("mail", 800).expect("resume");
    assert_eq!(claim(q, &["mail"], 800).as_deref(), Some("parked"), "before its not_before 5000");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
}

/// 3.10, 4.10, 6.40, 3.14, 3.15: a pause is the store's — kept across a restart, untouched
/// by prune and forget.
pub(crate) fn a_pause_is_durable(q: &mut dyn Backend, reopen: &dyn Fn() -> Box<dyn Backend>) {
    enqueue(q, job("m", "mail", 0));
    q.pause("mail", 5).expect("pause");
    q.pause("empty", 6).expect("pause");
    let c = q.claim_from("w", &["default"], 10).expect("claim");
    assert_eq!(c, None);
    let mut q = reopen();
    assert_eq!(q.paused().expect("paused"), [("empty".to_owned(), 6), ("mail".to_owned(), 5)]);
    assert_eq!(claim(&mut *q, &["mail"], 20), None, "a restart keeps the pause");
    enqueue(&mut *q, job("d", "default", 20));
    let c = q.claim_from("w", &["default"], 30).expect("claim").expect("d");
    q.complete(&Completion::new(&c.lease, Outcome::Ok, 40, 0.0)).expect("done");
    assert_eq!(q.prune(40, 50).expect("prune"), 1);
    assert_eq!(q.forget(50, 60).expect("forget"), 1);
    assert_eq!(q.paused().expect("paused").len(), 2, "prune and forget leave the pauses");
    q.resume("mail", 70).expect("resume");
    let mut q = reopen();
    assert_eq!(q.paused().expect("paused"), [("empty".to_owned(), 6)]);
    assert_eq!(claim(&mut *q, &["mail"], 80).as_deref(), Some("m"), "a restart keeps the resume");
}
