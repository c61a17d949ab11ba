//! The worker runtime as an application calls it: a handler's error retries its job, a panic
//! is recorded and the worker goes on, a stop finishes and records what is in flight, a
//! second stop abandons it — with a closure, and with an async fn on a tokio runtime.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use retryq::{DeadReason, Enqueue, Queue, Status};
use retryq_worker::{Attempt, JobError, Stop, Worker};

fn queue(ids: &[&str], max_attempts: u64) -> Queue {
    let mut queue = Queue::open_in_memory().expect("queue");
    // No backoff: a retry is due at once, so that a test runs until idle in milliseconds.
    queue.set_jitter(Arc::new(|| 0.0));
    for id in ids {
        queue
            .enqueue(&Enqueue::new(*id, format!("payload of {id}")).max_attempts(max_attempts))
            .expect("enqueue");
    }
    queue
}

fn worker() -> Worker {
    Worker::new("test").expect("name").lease(Duration::from_secs(30)).until_idle()
}

#[derive(Debug, thiserror::Error)]
#[error("the receiver said 503")]
struct Unavailable;

fn send(first: bool) -> Result<(), Unavailable> {
    if first { Err(Unavailable) } else { Ok(()) }
}

#[test]
fn a_handlers_error_passed_up_by_question_mark_retries_the_job() {
    let mut queue = queue(&["a"], 3);
    let summary = worker()
        .run(&mut queue, &Stop::new(), |attempt: &Attempt| {
            send(attempt.number() == 1)?;
            Ok(())
        })
        .expect("run");
    assert_eq!((summary.attempts, summary.retried, summary.done), (2, 1, 1));
    let job = queue.get("a").expect("get").expect("job");
    assert_eq!((job.status, job.attempts), (Status::Done, 2));
    let retried = queue.history("a").expect("history");
    assert!(retried.iter().any(|h| h.attempt == 1 && h.to == Status::Pending), "{retried:?}");
}

#[test]
fn permanent_ends_the_job_at_once_and_after_waits_at_least_so_long() {
    let mut queue = queue(&["bad", "busy"], 5);
    let seen = Mutex::new(Vec::new());
    let summary = worker()
        .run(&mut queue, &Stop::new(), |attempt: &Attempt| {
            seen.lock().expect("seen").push((attempt.id().to_owned(), attempt.number()));
            match attempt.id() {
                "bad" => Err(JobError::permanent("422 unprocessable")),
                _ if attempt.number() == 1 => Err(JobError::retry("busy").after(Duration::from_millis(300))),
                _ => Ok(()),
            }
        })
        .expect("run");
    assert_eq!((summary.attempts, summary.dead, summary.done), (3, 1, 1));
    let bad = queue.get("bad").expect("get").expect("job");
    assert_eq!((bad.status, bad.dead_reason, bad.attempts), (Status::Dead, Some(DeadReason::Permanent), 1));
    assert_eq!(bad.last_error.as_deref(), Some("422 unprocessable"));
    let busy = queue.history("busy").expect("history");
    let retried = busy.iter().find(|h| h.to == Status::Pending && h.attempt == 1).expect("retried");
    let claimed = busy.iter().find(|h| h.to == Status::Leased && h.attempt == 2).expect("claimed again");
    assert!(claimed.at >= retried.at + 300, "{busy:?}");
}

#[test]
fn a_panic_is_recorded_as_the_attempts_error_and_the_worker_goes_on() {
    let mut queue = queue(&["boom", "fine"], 1);
    let summary = worker()
        .concurrency(2)
        .run(&mut queue, &Stop::new(), |attempt: &Attempt| {
            assert_ne!(attempt.id(), "boom", "a bug in the handler");
            Ok(())
        })
        .expect("run");
    assert_eq!((summary.attempts, summary.done, summary.dead), (2, 1, 1));
    let boom = queue.get("boom").expect("get").expect("job");
    // Retryable, on a budget of one: exhausted, with the panic's message as its error.
    assert_eq!((boom.status, boom.dead_reason), (Status::Dead, Some(DeadReason::Exhausted)));
    let error = boom.last_error.unwrap_or_default();
    assert!(error.starts_with("the handler panicked: assertion `left != right` failed: a bug"), "{error}");
}

#[test]
fn a_stop_claims_nothing_more_and_records_everything_in_flight() {
    let mut queue = queue(&["a", "b", "c", "d", "e"], 1);
    let stop = Stop::new();
    let started = Barrier::new(3);
    let ran = AtomicUsize::new(0);
    let summary = Worker::new("test")
        .expect("name")
        .concurrency(3)
        .run(&mut queue, &stop, |_: &Attempt| {
            ran.fetch_add(1, Ordering::SeqCst);
            // Three attempts in flight, then the stop, then they finish.
            if started.wait().is_leader() {
                stop.request();
            }
            std::thread::sleep(Duration::from_millis(50));
            Ok(())
        })
        .expect("run");
    assert_eq!(ran.load(Ordering::SeqCst), 3);
    assert_eq!((summary.attempts, summary.done), (3, 3));
    let stats = queue.stats(retryq::now_ms().expect("clock")).expect("stats");
    assert_eq!((stats.done, stats.pending, stats.leased), (3, 2, 0));
}

#[test]
fn an_async_handler_runs_as_a_task_and_its_error_retries_the_job() {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let queue = queue(&["a", "b"], 3);
    let tries = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tries);
    let summary = runtime
        .block_on(worker().concurrency(2).run_async(queue, Stop::new(), move |attempt: Attempt| {
            let tries = Arc::clone(&counted);
            async move {
                tries.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                if attempt.number() == 1 {
                    let parsed: u32 = attempt.payload().parse()?;
                    return Err(JobError::retry(parsed));
                }
                Ok(())
            }
        }))
        .expect("run");
    assert_eq!((summary.attempts, summary.retried, summary.done), (4, 2, 2));
    assert_eq!(tries.load(Ordering::SeqCst), 4);
}

#[test]
fn an_async_handler_is_dropped_at_its_timeout_and_a_second_stop_abandons() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // The timeout: the attempt is cut, retried, and cut again until its budget is spent.
    let queue_a = queue(&["slow"], 2);
    let summary = runtime
        .block_on(worker().timeout(Duration::from_millis(100)).run_async(
            queue_a,
            Stop::new(),
            |_: Attempt| async {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            },
        ))
        .expect("run");
    assert_eq!((summary.attempts, summary.dead), (2, 1));
    // A second stop: the worker returns at once and records nothing of the attempt, whose
    // job keeps its lease, as after a crash.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let mut file = Queue::open(&path).expect("open");
    file.enqueue(&Enqueue::new("stuck", "p")).expect("enqueue");
    let stop = Stop::new();
    let stopper = stop.clone();
    let start = Instant::now();
    let summary = runtime
        .block_on(Worker::new("test").expect("name").run_async(file, stop, move |_: Attempt| {
            let stopper = stopper.clone();
            async move {
                stopper.request();
                stopper.request();
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
        }))
        .expect("run");
    assert!(start.elapsed() < Duration::from_secs(20), "{:?}", start.elapsed());
    assert_eq!((summary.done, summary.retried, summary.dead), (0, 0, 0));
    let job = Queue::open(&path).expect("reopen").get("stuck").expect("get").expect("job");
    assert_eq!((job.status, job.attempts), (Status::Leased, 1));
}

/// Typed payloads: a job enqueued from a value reads back as that value; a payload that is not
/// the JSON the handler expects is a permanent error (no later attempt would read it).
#[test]
fn a_typed_payload_reads_back_and_a_malformed_one_dies_permanent() {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Delivery {
        order: u64,
        to: String,
    }
    let mut queue = queue(&["not-json"], 3);
    let sent = Delivery { order: 7, to: "Ada".into() };
    queue.enqueue(&Enqueue::json("typed", &sent).expect("json").max_attempts(3)).expect("enqueue");
    let read = Mutex::new(Vec::new());
    let summary = worker()
        .run(&mut queue, &Stop::new(), |attempt: &Attempt| {
            let delivery: Delivery = attempt.json()?;
            read.lock().expect("read").push(delivery);
            Ok(())
        })
        .expect("run");
    assert_eq!((summary.attempts, summary.done, summary.dead), (2, 1, 1));
    assert_eq!(read.into_inner().expect("read"), [sent]);
    let bad = queue.get("not-json").expect("get").expect("job");
    assert_eq!((bad.status, bad.dead_reason, bad.attempts), (Status::Dead, Some(DeadReason::Permanent), 1));
    assert!(bad.last_error.as_deref().is_some_and(|e| e.contains("not the JSON expected")), "{bad:?}");
}

/// A payload that names a key twice is refused, whatever the type it is read into: read into
/// a map, serde_json alone keeps the last value (`{"order":7,"order":8}` read as order 8).
#[test]
fn a_payload_naming_a_key_twice_dies_permanent_instead_of_keeping_the_last() {
    let mut queue = queue(&[], 3);
    queue.enqueue(&Enqueue::new("twice", r#"{"order":7,"order":8}"#).max_attempts(3)).expect("enqueue");
    let read = Mutex::new(Vec::new());
    worker()
        .run(&mut queue, &Stop::new(), |attempt: &Attempt| {
            let fields: std::collections::BTreeMap<String, u64> = attempt.json()?;
            read.lock().expect("read").push(fields);
            Ok(())
        })
        .expect("run");
    assert_eq!(read.into_inner().expect("read"), []);
    let job = queue.get("twice").expect("get").expect("job");
    assert_eq!((job.status, job.dead_reason), (Status::Dead, Some(DeadReason::Permanent)));
    assert!(
        job.last_error.as_deref().is_some_and(|e| e.contains(r#"the key "order" appears twice"#)),
        "{job:?}"
    );
}

/// The call a reader writes first: `run(&mut store, …)` on the `Box<dyn Backend>` that
/// `open_backend` returns (no `&mut *store`), a `&mut dyn Backend`, and a `Queue` itself.
#[test]
fn run_takes_the_box_open_backend_returns_a_dyn_backend_and_a_queue() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("jobs.db");
    let mut store = retryq::open_backend(path.to_str().expect("a UTF-8 path")).expect("open");
    let job = |id| retryq::NewJob {
        id,
        payload: "p",
        max_attempts: 3,
        deadline: u64::MAX >> 12,
        now: 0,
        ..Default::default()
    };
    store.enqueue(&job("boxed")).expect("enqueue");
    let summary = worker().run(&mut store, &Stop::new(), |_: &Attempt| Ok(())).expect("run");
    assert_eq!(summary.done, 1);
    store.enqueue(&job("dyn")).expect("enqueue");
    let dynamic: &mut dyn retryq::Backend = &mut *store;
    assert_eq!(worker().run(dynamic, &Stop::new(), |_: &Attempt| Ok(())).expect("run").done, 1);
    let mut queue = queue(&["plain"], 3);
    assert_eq!(worker().run(&mut queue, &Stop::new(), |_: &Attempt| Ok(())).expect("run").done, 1);
    assert_eq!(store.get("boxed").expect("get").map(|j| j.status), Some(Status::Done));
}
