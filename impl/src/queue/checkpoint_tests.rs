//! `checkpoint.rs`'s rule pinned: two writers taking turns keep the log short, a reader of an
//! old snapshot defers the next try, and the connection's own busy timeout comes back.

use std::sync::atomic::Ordering;

use rusqlite::Connection;

use super::checkpoint::{FRAMES, WAIT};
use crate::{Completion, NewJob, Outcome, Queue};

fn enqueue(q: &mut Queue, id: &str) {
    q.enqueue(&NewJob { id, payload: "{}", max_attempts: 3, deadline: 1 << 40, now: 0, ..NewJob::default() })
        .expect("enqueue");
}

fn frames(q: &Queue) -> i32 {
    q.log.as_ref().expect("a file's queue watches its log").frames.load(Ordering::Relaxed)
}

/// Two writers on two connections, each taking jobs through as fast as it can: the lock
/// goes back and forth at every commit. With SQLite's own checkpoint the log hardly ever
/// started over: it grew to 85 MB here.
#[test]
fn two_writers_taking_turns_keep_the_log_short() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("turns.db");
    drop(Queue::open(&path).expect("create"));
    // Open through the end, so that the last writer's close leaves the log for a look.
    let keeper = Connection::open(&path).expect("keeper");
    keeper.query_row("SELECT count(*) FROM jobs", [], |_| Ok(())).expect("read");
    let workers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut q = Queue::open(&path).expect("open");
                for i in 0..600 {
                    enqueue(&mut q, &format!("{name}-{i}"));
                    if let Some(job) = q.claim(name, 1).expect("claim") {
                        q.complete(&Completion::new(&job.lease, Outcome::Ok, 1, 0.0)).expect("complete");
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker");
    }
    let wal = std::fs::metadata(path.with_extension("db-wal")).expect("the log").len();
    // 3,600 commits of about 10 frames of 4 KiB each: about 150 MB if the log never
    // started over; a log that starts over once it holds 1,000 frames stays near 4 MB.
    assert!(wal < 16 << 20, "the log grew to {wal} bytes");
}

/// A reader of an older snapshot keeps the log from starting over: the checkpoint waits
/// for it at most once per 1,000 frames written, and once it is gone the log starts over.
#[test]
fn a_reader_of_an_old_snapshot_defers_the_next_try_and_its_end_lets_the_log_start_over() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("reader.db");
    let mut q = Queue::open(&path).expect("open");
    enqueue(&mut q, "first");
    let reader = Connection::open(&path).expect("reader");
    reader.execute_batch("BEGIN; SELECT count(*) FROM jobs;").expect("snapshot");
    let mut i = 0;
    while frames(&q) < FRAMES {
        enqueue(&mut q, &format!("held-{i}"));
        i += 1;
    }
    let tried_at = frames(&q);
    let next_at = q.log.as_ref().expect("log").next_at;
    assert!(
        next_at >= tried_at + FRAMES,
        "the next try waits for the log to grow: {next_at} after {tried_at}"
    );
    reader.execute_batch("COMMIT").expect("reader done");
    let mut restarted = false;
    for j in 0..400 {
        enqueue(&mut q, &format!("free-{j}"));
        if frames(&q) < tried_at {
            restarted = true;
            break;
        }
    }
    assert!(restarted, "the log started over once the reader was gone");
}

/// The checkpoint's own short wait is the connection's only for the checkpoint: a write
/// after it still waits the full busy timeout for another process's lock.
#[test]
fn after_a_checkpoint_a_write_waits_the_connections_own_busy_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("wait.db");
    let mut q = Queue::open(&path).expect("open");
    // Until a checkpoint ran and the log started over: about 110 enqueues of 9 frames.
    let mut last = 0;
    let restarted = (0..1000).any(|i| {
        enqueue(&mut q, &format!("j-{i}"));
        let now = frames(&q);
        let fell = now < last;
        last = now;
        fell
    });
    assert!(restarted, "no checkpoint started the log over in 1,000 enqueues");
    let holder = Connection::open(&path).expect("holder");
    holder.execute_batch("BEGIN IMMEDIATE").expect("hold the lock");
    let release = std::thread::spawn(move || {
        std::thread::sleep(WAIT * 4);
        holder.execute_batch("COMMIT").expect("release");
    });
    enqueue(&mut q, "after");
    release.join().expect("holder");
}
