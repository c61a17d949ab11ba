//! A worker whose store gives a second connection (`Backend::another`; PostgreSQL's does)
//! commits its outcomes there, beside its claims (`committer.rs`): while one group commit
//! waits on the store, the next job is claimed and run. The store here is a real queue whose
//! group commits wait at a gate on every connection, so that a worker committing between
//! its claims would wait there with its next job unclaimed.

mod rigged;

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use retryq::{NewJob, Queue, Status};
use retryq_worker::{Attempt, Stop, Worker, now_ms};

use rigged::{Gate, Rigged};

/// Long past any pause of a loaded machine: the test fails only after waiting this long.
const BOUND: Duration = Duration::from_secs(60);

#[test]
fn the_next_job_runs_while_the_last_outcome_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let now = now_ms().expect("clock");
    let mut queue = Queue::open(&path).expect("queue");
    for id in ["a", "b"] {
        let job =
            NewJob { id, payload: "", max_attempts: 1, deadline: now + 600_000, now, ..NewJob::default() };
        queue.enqueue(&job).expect("enqueue");
    }
    let gate = Arc::new(Gate::default());
    let mut store = Rigged::gated(&path, Arc::clone(&gate));
    let worker = Worker::new("beside").expect("name").concurrency(1).until_idle();
    let (stop, ran) = (Stop::new(), Mutex::new(Vec::new()));
    let summary = thread::scope(|scope| {
        let (gate, stop, ran) = (&gate, &stop, &ran);
        // Whatever happens, the gate opens at the bound, so that the test ends.
        scope.spawn(move || {
            if !stop.sleep(BOUND) {
                gate.open();
            }
        });
        let summary = worker
            .run(&mut store, stop, |attempt: &Attempt| {
                // With one slot, the second job is claimed only once the first one's outcome
                // was handed on: it runs while that commit is still held at the gate, which it
                // then opens.
                ran.lock().expect("ran").push((attempt.id().to_owned(), gate.is_open()));
                if attempt.id() == "b" {
                    gate.open();
                }
                Ok(())
            })
            .expect("run");
        stop.request();
        summary
    });
    gate.open();
    let ran = ran.into_inner().expect("ran");
    assert_eq!(
        ran,
        [("a".to_owned(), false), ("b".to_owned(), false)],
        "b ran while a's group commit waited at the gate (else it ran only after the gate opened, at {BOUND:?})"
    );
    assert_eq!((summary.attempts, summary.done), (2, 2), "{summary:?}");
    for id in ["a", "b"] {
        assert_eq!(queue.get(id).expect("get").expect("job").status, Status::Done, "{id}");
    }
}
