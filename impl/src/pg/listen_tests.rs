//! Wake-ups (`listen.rs`): a listener hears of every commit that made a job pending — an
//! enqueue, a bulk import, a retry, a redrive — with its queue on PostgreSQL, and of another
//! connection's commits on SQLite; and it stops when dropped.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use super::tests::pg_at;
use crate::{Backend, Completion, NewJob, Outcome, Queue, Redrive};

/// Longer than any wake-up takes: a liveness bound, not a measure (`retryq bench` measures).
const HEARD: Duration = Duration::from_secs(10);

fn listening(store: &dyn Backend) -> (crate::Listener, Receiver<Option<String>>) {
    let (tx, rx) = channel();
    let wake: crate::Wake = Arc::new(move |queue: Option<&str>| {
        let _ = tx.send(queue.map(str::to_owned));
    });
    (store.listen(wake).expect("listen").expect("a listener"), rx)
}

fn job<'a>(id: &'a str, queue: &'a str) -> NewJob<'a> {
    NewJob {
        id,
        payload: "",
        max_attempts: 2,
        deadline: 90_000,
        now: 0,
        queue: Some(queue),
        ..NewJob::default()
    }
}

/// The queues heard until nothing more comes for a moment, sorted and without repeats.
fn heard(rx: &Receiver<Option<String>>) -> Vec<Option<String>> {
    let mut heard = vec![rx.recv_timeout(HEARD).expect("a wake-up")];
    while let Ok(more) = rx.recv_timeout(Duration::from_millis(300)) {
        heard.push(more);
    }
    heard.sort();
    heard.dedup();
    heard
}

#[test]
fn a_postgres_listener_hears_every_commit_that_makes_a_job_pending_with_its_queue() {
    let Some((url, mut q)) = pg_at("a_postgres_listener_hears_every_commit") else { return };
    let (listener, rx) = listening(&q);
    let mut other = super::PgQueue::connect(&url).expect("another connection");
    other.enqueue(&job("a", "mail")).expect("enqueue");
    assert_eq!(heard(&rx), [Some("mail".to_owned())]);
    let jobs = [job("b", "sms"), job("c", "mail"), job("d", "sms")];
    let mut answers = Vec::new();
    other.enqueue_bulk(&jobs, &mut answers).expect("bulk");
    assert_eq!(heard(&rx), [Some("mail".to_owned()), Some("sms".to_owned())]);
    // A claim makes nothing pending: nothing is heard of it.
    let claimed = q.claim_from("w", &["mail"], 1).expect("claim").expect("a");
    assert_eq!(rx.recv_timeout(Duration::from_millis(500)), Err(RecvTimeoutError::Timeout));
    // A retry makes it pending again; a permanent end, then a redrive, again.
    let lease = claimed.lease.clone();
    q.complete(&Completion::new(&lease, Outcome::Retryable, 2, 0.0)).expect("retry");
    assert_eq!(heard(&rx), [Some("mail".to_owned())]);
    let again = q.claim_from("w", &["mail"], 3).expect("claim").expect("again");
    q.complete(&Completion::new(&again.lease, Outcome::Permanent, 4, 0.0)).expect("permanent");
    assert_eq!(rx.recv_timeout(Duration::from_millis(500)), Err(RecvTimeoutError::Timeout));
    q.redrive(&Redrive { id: again.id(), add_attempts: 1, deadline: 90_000, now: 5 }).expect("redrive");
    assert_eq!(heard(&rx), [Some("mail".to_owned())]);
    drop(listener);
    // Dropped, it listens no more: its thread ended and its sender with it.
    other.enqueue(&job("e", "mail")).expect("enqueue");
    assert_eq!(rx.recv_timeout(Duration::from_millis(500)), Err(RecvTimeoutError::Disconnected));
}

#[test]
fn a_sqlite_listener_hears_another_connections_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let q = Queue::open(&path).expect("open");
    let (listener, rx) = listening(&q);
    let mut other = Queue::open(&path).expect("another connection");
    other.enqueue(&job("a", "mail")).expect("enqueue");
    assert_eq!(heard(&rx), [None], "SQLite cannot tell the queue");
    // Another file in the directory wakes nobody.
    std::fs::write(dir.path().join("other.txt"), "x").expect("write");
    assert_eq!(rx.recv_timeout(Duration::from_millis(500)), Err(RecvTimeoutError::Timeout));
    drop(listener);
    other.enqueue(&job("b", "mail")).expect("enqueue");
    assert_eq!(rx.recv_timeout(Duration::from_millis(500)), Err(RecvTimeoutError::Disconnected));
    assert!(Queue::open_in_memory().expect("memory").listen(Arc::new(|_| {})).expect("listen").is_none());
}
