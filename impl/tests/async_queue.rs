//! `AsyncQueue`: every operation through the queue's thread, many tasks on one handle,
//! `run_once` over an async transport with the sync `run_once`'s results and history, and
//! the thread's end.

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use retryq::{
    AsyncQueue, Claimed, Completed, Completion, DeadReason, Enqueued, Error, ErrorKind, Lease, NewJob,
    OpenOptions, Outcome, Queue, Ran, Redrive, Report, RunError, Settings, Status,
};

/// The SPEC's worked-trace settings: lease 1000, base 100, cap 250.
const SETTINGS: Settings =
    Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, reap_limit: retryq::DEFAULT_REAP_LIMIT };

fn job<'a>(id: &'a str, payload: &'a str) -> NewJob<'a> {
    NewJob { id, payload, max_attempts: 3, deadline: 10_000, now: 0, ..NewJob::default() }
}

async fn open(path: &Path) -> AsyncQueue {
    let queue = AsyncQueue::open(path).await.expect("open");
    queue.set_settings(SETTINGS).await.expect("settings");
    queue
}

#[tokio::test]
async fn every_operation_answers_as_the_sync_queue_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let q = open(&path).await;
    assert_eq!(q.path(), Some(path.as_path()));
    every_operation(&q).await;
}

/// The same operations on PostgreSQL, by URL: the same answers. (The database is made before
/// the runtime starts: the synchronous client may not run on a runtime's thread.)
#[test]
fn every_operation_answers_the_same_on_postgresql() {
    let Some(url) = retryq_pgtest::database("AsyncQueue on PostgreSQL") else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let q = AsyncQueue::connect(&url).await.expect("connect");
        assert_eq!(q.path(), None);
        assert_eq!(q.call(|store| store.kind()).await.expect("kind"), "postgres");
        q.set_settings(SETTINGS).await.expect("settings");
        every_operation(&q).await;
    });
}

/// Every operation once, and what each must answer, on a queue with [`SETTINGS`].
async fn every_operation(q: &AsyncQueue) {
    assert_eq!(q.settings().await.expect("settings"), SETTINGS);

    assert_eq!(q.enqueue(&job("a", "p")).await.expect("enqueue"), Enqueued::New);
    assert_eq!(q.enqueue(&job("a", "p")).await.expect("again"), Enqueued::Existing);
    let err = q.enqueue(&job("a", "other")).await.unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    let err = q.enqueue(&NewJob { max_attempts: 0, ..job("z", "p") }).await.unwrap_err();
    assert!(matches!(err, Error::InvalidInput { field: "max_attempts", .. }), "{err}");
    let many = q.enqueue_many(&[job("b", "p"), job("c", "p"), job("a", "x")]).await.expect("many");
    assert!(matches!(many[..], [Ok(Enqueued::New), Ok(Enqueued::New), Err(Error::Conflict { .. })]));

    let a = q.claim("w", 10).await.expect("claim").expect("claimed");
    assert_eq!((a.id(), a.attempt(), a.lease_until), ("a", 1, 1010));
    let batch = q.claim_batch("w", 20, 5).await.expect("batch");
    assert_eq!(batch.iter().map(Claimed::id).collect::<Vec<_>>(), ["b", "c"]);
    assert_eq!(q.claim("w", 20).await.expect("claim"), None);

    q.record_error(&a.lease, "timeout", Some("n1")).await.expect("note");
    let completed =
        q.complete(&Completion::new(&a.lease, Outcome::Retryable, 30, 0.5)).await.expect("complete");
    assert_eq!(completed, Completed::Retry { available_at: 80 });
    let err = q.complete(&Completion::new(&a.lease, Outcome::Ok, 30, 0.5)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost);
    let results = q
        .complete_batch(&[
            Completion::new(&batch[0].lease, Outcome::Ok, 40, 0.0),
            Completion::new(&batch[1].lease, Outcome::Permanent, 40, 0.0),
            Completion::new(&Lease::new("w", "missing", 1), Outcome::Ok, 40, 0.0),
        ])
        .await
        .expect("batch");
    assert!(matches!(
        results[..],
        [
            Ok(Completed::Done),
            Ok(Completed::Dead { reason: DeadReason::Permanent }),
            Err(Error::NotFound { .. })
        ]
    ));

    let got = q.get("a").await.expect("get").expect("job");
    assert_eq!((got.status, got.attempts, got.available_at), (Status::Pending, 1, Some(80)));
    assert_eq!(q.get("nope").await.expect("get"), None);
    assert_eq!(q.history("a").await.expect("history").len(), 3, "enqueue, claim, retry");
    assert_eq!(q.next_due().await.expect("next due"), Some(80));

    q.redrive(&Redrive { id: "c", add_attempts: 2, deadline: 20_000, now: 50 }).await.expect("redrive");
    let err = q.redrive(&Redrive { id: "b", add_attempts: 2, deadline: 20_000, now: 50 }).await.unwrap_err();
    assert!(matches!(err, Error::NotDead { .. }), "{err}");

    let short = NewJob { deadline: 100, ..job("short", "p") };
    q.enqueue(&short).await.expect("enqueue");
    assert_eq!(q.reap(100).await.expect("reap"), 1);

    let stats = q.stats(100).await.expect("stats");
    assert_eq!((stats.pending, stats.leased, stats.done, stats.dead), (2, 0, 1, 1));
    let audit = q.call(|q| q.audit()).await.expect("call").expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
}

#[tokio::test]
async fn opening_refuses_what_queue_open_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "not a database\n".repeat(300)).expect("write");
    let err = AsyncQueue::open(&path).await.unwrap_err();
    assert!(matches!(err, Error::NotRetryq { .. }), "{err}");
    let options = OpenOptions { create: false, ..OpenOptions::default() };
    let err = AsyncQueue::open_with(dir.path().join("missing.db"), &options).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Storage, "{err}");
    let memory = AsyncQueue::open_in_memory().await.expect("memory");
    assert_eq!(memory.enqueue(&job("a", "p")).await.expect("enqueue"), Enqueued::New);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_tasks_share_one_handle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let q = open(&dir.path().join("q.db")).await;
    let producers: Vec<_> = (0..20)
        .map(|t| {
            let q = q.clone();
            tokio::spawn(async move {
                for i in 0..10 {
                    let id = format!("t{t}-{i}");
                    q.enqueue(&job(&id, "p")).await.expect("enqueue");
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.expect("producer");
    }
    let sent = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let (q, sent) = (q.clone(), Arc::clone(&sent));
            tokio::spawn(async move {
                let worker = format!("w{w}");
                loop {
                    let sent = Arc::clone(&sent);
                    let transport = move |_: Claimed| async move {
                        tokio::task::yield_now().await;
                        sent.fetch_add(1, Ordering::Relaxed);
                        Ok::<_, Infallible>(Outcome::Ok)
                    };
                    match q.run_once(&worker, || 1, transport, 0.5).await.expect("run") {
                        Ran::Idle => break,
                        Ran::Done { .. } => {}
                        other => panic!("{other:?}"),
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("worker");
    }
    assert_eq!(sent.load(Ordering::Relaxed), 200, "every job sent exactly once");
    let stats = q.stats(1).await.expect("stats");
    assert_eq!((stats.done, stats.pending, stats.leased), (200, 0, 0));
    let audit = q.call(|q| q.audit()).await.expect("call").expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
}

/// One step of a scenario: what the transport answers, and the two clock readings.
#[derive(Clone)]
enum Answer {
    Report(Report),
    Unclassified(&'static str),
}

/// The same scenario on a sync `Queue` and on an `AsyncQueue`: the same results, the same
/// jobs, the same history (so the same transactions, each recording the same transitions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_once_over_an_async_transport_matches_the_sync_run_once() {
    let steps: Vec<(Answer, u64, u64)> = vec![
        (Answer::Report(Outcome::Ok.into()), 0, 5),
        (Answer::Report(Report::with_error(Outcome::Retryable, "503").node("n1")), 10, 20),
        (Answer::Report(Report::from(Outcome::Retryable).retry_after(400)), 30, 40),
        (Answer::Report(Outcome::Ok.into()), 45, 44),
        (Answer::Unclassified("connection reset"), 70, 80),
        (Answer::Report(Report::with_error(Outcome::Permanent, "400 bad payload")), 470, 480),
        (Answer::Report(Outcome::Retryable.into()), 1500, 1510),
        (Answer::Report(Outcome::Ok.into()), 20_000, 20_001),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sync = Queue::open(dir.path().join("sync.db")).expect("open");
    sync.set_settings(SETTINGS).expect("settings");
    let q = open(&dir.path().join("async.db")).await;
    let jobs = [
        NewJob { id: "a", payload: "1", max_attempts: 5, deadline: 10_000, now: 0, ..NewJob::default() },
        NewJob { id: "b", payload: "2", max_attempts: 2, deadline: 10_000, now: 0, ..NewJob::default() },
        NewJob { id: "c", payload: "3", max_attempts: 4, deadline: 10_000, now: 0, ..NewJob::default() },
        NewJob { id: "d", payload: "4", max_attempts: 3, deadline: 10_000, now: 0, ..NewJob::default() },
    ];
    sync.enqueue_many(&jobs).expect("enqueue");
    q.enqueue_many(&jobs).await.expect("enqueue");

    let mut seen = Vec::new();
    for (answer, before, after) in steps {
        let readings = [before, after];
        let sync_ran = {
            let mut i = 0;
            let clock = || {
                i += 1;
                readings[i - 1]
            };
            let answer = answer.clone();
            sync.run_once(
                "w",
                clock,
                |_: &Claimed| match answer {
                    Answer::Report(r) => Ok(r),
                    Answer::Unclassified(e) => Err(e),
                },
                0.5,
            )
        };
        let mut i = 0;
        let clock = || {
            i += 1;
            readings[i - 1]
        };
        let transport = |claimed: Claimed| async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            assert!(!claimed.payload.is_empty());
            match answer {
                Answer::Report(r) => Ok(r),
                Answer::Unclassified(e) => Err(e),
            }
        };
        let async_ran = q.run_once("w", clock, transport, 0.5).await;
        let describe = |r: &Result<Ran, RunError<&str>>| match r {
            Ok(ran) => format!("{ran:?}"),
            Err(RunError::Unclassified { id, attempt, error }) => {
                format!("unclassified {id} {attempt} {error}")
            }
            Err(RunError::ClockWentBackwards { id, attempt, before, after }) => {
                format!("clock {id} {attempt} {before} {after}")
            }
            Err(e) => format!("queue {e}"),
        };
        assert_eq!(describe(&async_ran), describe(&sync_ran));
        seen.push(describe(&async_ran));
    }
    // The scenario went through every kind of result.
    for expected in ["Done", "Retry", "Dead", "unclassified", "clock", "Idle"] {
        assert!(seen.iter().any(|s| s.starts_with(expected)), "{expected} missing from {seen:#?}");
    }
    for id in ["a", "b", "c", "d"] {
        assert_eq!(q.get(id).await.expect("get"), sync.get(id).expect("get"), "{id}");
        assert_eq!(q.history(id).await.expect("history"), sync.history(id).expect("history"), "{id}");
    }
}

#[tokio::test]
async fn run_once_refuses_bad_arguments_before_the_claim() {
    let q = AsyncQueue::open_in_memory().await.expect("memory");
    q.enqueue(&job("a", "p")).await.expect("enqueue");
    let send = |_: Claimed| async { Ok::<_, Infallible>(Outcome::Ok) };
    let err = q.run_once("w", || 0, send, 1.5).await.unwrap_err();
    assert!(matches!(err, RunError::Queue(Error::InvalidInput { field: "jitter", .. })), "{err:?}");
    let err = q.run_once("", || 0, send, 0.5).await.unwrap_err();
    assert!(matches!(err, RunError::Queue(Error::InvalidInput { field: "worker", .. })), "{err:?}");
    assert_eq!(q.get("a").await.expect("get").expect("job").attempts, 0);
}

/// The busy timeout is spent on the queue's thread: while another connection holds the
/// write lock, an enqueue waits, and a single-threaded runtime goes on running other tasks.
#[tokio::test(flavor = "current_thread")]
async fn a_locked_file_never_blocks_the_runtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let q = open(&path).await;
    let other = retryq::rusqlite::Connection::open(&path).expect("second connection");
    other.execute_batch("BEGIN IMMEDIATE").expect("hold the write lock");
    let waiting = tokio::spawn({
        let q = q.clone();
        async move { q.enqueue(&job("a", "p")).await }
    });
    let mut ticks = 0;
    while ticks < 20 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        ticks += 1;
    }
    assert!(!waiting.is_finished(), "the enqueue waits for the lock");
    other.execute_batch("COMMIT").expect("release the lock");
    assert_eq!(waiting.await.expect("task").expect("enqueue"), Enqueued::New);
}

/// A closed queue answers every call, on every clone, with `Error::Closed`.
#[tokio::test]
async fn a_closed_queue_refuses_every_call() {
    let q = AsyncQueue::open_in_memory().await.expect("memory");
    let clone = q.clone();
    q.enqueue(&job("a", "p")).await.expect("enqueue");
    q.close().await.expect("close");
    assert!(matches!(clone.get("a").await, Err(Error::Closed)));
    assert!(matches!(clone.enqueue(&job("b", "p")).await, Err(Error::Closed)));
    let send = |_: Claimed| async { Ok::<_, Infallible>(Outcome::Ok) };
    assert!(matches!(clone.run_once("w", || 0, send, 0.5).await, Err(RunError::Queue(Error::Closed))));
    assert!(matches!(q.close().await, Err(Error::Closed)), "closing twice");
    assert_eq!(Error::Closed.kind(), ErrorKind::Storage);
}

/// A request that panics stops the thread; the callers get `Closed`, not a panic.
#[tokio::test]
async fn a_panicking_call_closes_the_queue() {
    let q = AsyncQueue::open_in_memory().await.expect("memory");
    let err = q.call(|_| -> u8 { panic!("a bug in a call") }).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "{err}");
    assert!(matches!(q.stats(0).await, Err(Error::Closed)));
}

/// The thread and its connection live as long as some handle does: when the last one is
/// dropped the connection closes, and SQLite, closing the file's last connection,
/// checkpoints and removes the write-ahead log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_ends_the_thread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let wal = dir.path().join("q.db-wal");
    let q = open(&path).await;
    q.enqueue(&job("a", "p")).await.expect("enqueue");
    let clone = q.clone();
    drop(q);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(wal.exists(), "a clone keeps the queue open");
    assert!(clone.get("a").await.expect("get").is_some());
    drop(clone);
    let mut waited = 0;
    while wal.exists() {
        assert!(waited < 5000, "the queue's thread did not close the database");
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 10;
    }
    let reopened = Queue::open(&path).expect("reopen");
    assert_eq!(reopened.get("a").expect("get").expect("job").status, Status::Pending);
}

#[tokio::test]
async fn a_queue_opened_synchronously_moves_to_its_own_thread() {
    let mut queue = Queue::open_in_memory().expect("memory");
    queue.set_settings(SETTINGS).expect("settings");
    queue.enqueue(&job("a", "p")).expect("enqueue");
    let q = AsyncQueue::from_queue(queue).expect("thread");
    assert_eq!(q.settings().await.expect("settings"), SETTINGS);
    assert!(q.get("a").await.expect("get").is_some());
}
