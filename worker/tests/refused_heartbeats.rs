//! Every refusal of a heartbeat stops the attempt and records nothing (SPEC 3.12): not only
//! `lease_lost` (another holder claimed the job; `work.rs`'s own tests), but also
//! `deadline_passed` and `not_found`, which a worker meets when its clock and the store's
//! disagree or the job was removed under it. The store here is a real queue whose
//! heartbeats answer with the refusal under test, so each branch is reached on purpose.

mod rigged;

use std::path::Path;
use std::time::Duration;

use retryq::{DeadReason, Enqueued, Error, Lease, NewJob, Queue, Settings, Status};
use retryq_worker::{Config, Exec, Stop, Summary, now_ms, work};

use rigged::Rigged;

/// One job of one attempt under a 600 ms lease (a heartbeat every 200 ms), whose command
/// would write `marker` after 2 s; the heartbeats refused with `refusal`.
fn run(dir: &Path, refusal: fn(&Lease) -> Error) -> (Summary, Rigged) {
    let mut queue = Queue::open(dir.join("q.db")).expect("queue");
    let now = now_ms().expect("clock");
    let job =
        NewJob { id: "a", payload: "p", max_attempts: 1, deadline: now + 60_000, now, ..NewJob::default() };
    assert_eq!(queue.enqueue(&job).expect("enqueue"), Enqueued::New);
    let mut store = Rigged::refusing(queue, refusal);
    let config = Config {
        settings: Settings { lease_ms: 600, base_ms: 0, cap_ms: 0, ..Settings::default() },
        timeout: Duration::from_secs(10),
        until_idle: true,
        max_sleep: Duration::from_millis(50),
        ..Config::new("w1")
    };
    let mut exec = Exec::new(format!("sleep 2; echo ran > {}", dir.join("marker").display()));
    let summary = work(&mut store, &config, &mut exec, &Stop::new()).expect("work");
    (summary, store)
}

/// The attempt was stopped at its first refused heartbeat and nothing of it was recorded:
/// the job went on to be reaped when its lease ran out, as after a crash.
fn stopped_and_unrecorded(dir: &Path, summary: &Summary, store: &Rigged) {
    assert_eq!(
        (summary.attempts, summary.abandoned, summary.done, summary.dead),
        (1, 1, 0, 0),
        "{summary:?}"
    );
    assert_eq!(store.refused, 1, "the first refusal stops the attempt: no heartbeat after it");
    let a = store.queue.get("a").expect("get").expect("a");
    assert_eq!((a.status, a.attempts, a.dead_reason), (Status::Dead, 1, Some(DeadReason::Exhausted)));
    assert_eq!(a.last_error, None, "no outcome of the attempt recorded");
    let moves: Vec<(Option<Status>, Status)> =
        store.queue.history("a").expect("history").iter().map(|h| (h.from, h.to)).collect();
    assert_eq!(
        moves,
        [
            (None, Status::Pending),
            (Some(Status::Pending), Status::Leased),
            (Some(Status::Leased), Status::Dead)
        ],
        "enqueue, claim, reap"
    );
    // The command was killed: it never reaches the line that would have written the marker.
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(!dir.join("marker").exists(), "the command ran on after its heartbeat was refused");
}

#[test]
fn a_heartbeat_refused_for_the_deadline_stops_the_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (summary, store) = run(dir.path(), |lease| Error::DeadlinePassed { id: lease.id.clone() });
    stopped_and_unrecorded(dir.path(), &summary, &store);
}

#[test]
fn a_heartbeat_refused_for_a_cancel_request_stops_the_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (summary, store) = run(dir.path(), |lease| Error::Cancelled { id: lease.id.clone() });
    stopped_and_unrecorded(dir.path(), &summary, &store);
}

#[test]
fn a_heartbeat_refused_for_a_missing_job_stops_the_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (summary, store) = run(dir.path(), |lease| Error::NotFound { id: lease.id.clone() });
    stopped_and_unrecorded(dir.path(), &summary, &store);
}
