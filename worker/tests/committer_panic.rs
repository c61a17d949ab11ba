//! A group commit that panics on the committer (`committer.rs`) must not leave the store
//! thread waiting for its answer: the worker commits on its own connection from then on, the
//! panicked batch first, and every job still ends `done`. The store here is a real queue
//! whose second connection panics at every group commit.

mod rigged;

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use retryq::{NewJob, Queue, Status};
use retryq_worker::{Attempt, Stop, Worker, now_ms};

use rigged::Rigged;

/// Long past any pause of a loaded machine: the test fails only after waiting this long.
const BOUND: Duration = Duration::from_secs(60);

#[test]
fn a_commit_that_panics_on_the_committer_is_committed_on_the_store_thread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let now = now_ms().expect("clock");
    let mut queue = Queue::open(&path).expect("queue");
    let ids = ["a", "b", "c"];
    for id in ids {
        let job =
            NewJob { id, payload: "", max_attempts: 1, deadline: now + 600_000, now, ..NewJob::default() };
        queue.enqueue(&job).expect("enqueue");
    }
    let mut store = Rigged::panicking_beside(&path);
    let (ran_tx, ran) = mpsc::channel();
    // On a thread of its own, so that a worker stuck waiting for the committer fails the
    // test at the bound instead of holding it for ever.
    thread::spawn(move || {
        let worker = Worker::new("panicking").expect("name").concurrency(1).until_idle();
        let summary = worker.run(&mut store, &Stop::new(), |_: &Attempt| Ok(()));
        let _ = ran_tx.send(summary.map_err(|e| e.to_string()));
    });
    let summary = ran
        .recv_timeout(BOUND)
        .unwrap_or_else(|_| {
            panic!("the worker was still running after {BOUND:?}: it waits for the committer")
        })
        .expect("run");
    assert_eq!((summary.attempts, summary.done, summary.unrecorded), (3, 3, 0), "{summary:?}");
    for id in ids {
        assert_eq!(queue.get(id).expect("get").expect("job").status, Status::Done, "{id}");
    }
}
