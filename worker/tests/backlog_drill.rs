//! The outage drill (SPEC 6.37): a backlog of jobs past their deadline — enqueued together,
//! one deadline for all, as an import before a weekend without workers leaves them — then
//! workers started. A worker of another queue runs its fresh job in its first round, its
//! claims ending at most a limit or two of the backlog first (before SPEC 1.3 its first claim
//! ended the whole backlog in one transaction: on PostgreSQL one past the statement timeout,
//! tried again for ever); then a worker of the backlog's queue ends it a limit at a time. On
//! both stores, at a size CI can afford; `retryq bench --scale` runs the full sizes.

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use retryq::{Backend, DeadReason, NewJob, PgQueue, Queue, Status};
use retryq_worker::{Attempt, Stop, Worker};

/// The backlog, and how long the drill lets the workers take before it calls them stuck.
const BACKLOG: usize = 20_000;
const STUCK: Duration = Duration::from_secs(120);

/// `BACKLOG` jobs of `default`, enqueued ten minutes ago with a deadline five minutes ago,
/// and one of `fresh` now, due for an hour.
fn fill(store: &mut dyn Backend) {
    let now = retryq_worker::now_ms().expect("clock");
    let ids: Vec<String> = (0..BACKLOG).map(|i| format!("late-{i:05}")).collect();
    let late: Vec<NewJob<'_>> = ids
        .iter()
        .map(|id| NewJob {
            id,
            payload: "{}",
            max_attempts: 5,
            deadline: now - 300_000,
            now: now - 600_000,
            ..NewJob::default()
        })
        .collect();
    for chunk in late.chunks(5_000) {
        for answer in store.enqueue_many(chunk).expect("enqueue the backlog") {
            answer.expect("enqueued");
        }
    }
    let fresh = NewJob {
        id: "fresh-1",
        payload: "{}",
        max_attempts: 3,
        deadline: now + 3_600_000,
        now,
        queue: Some("fresh"),
        ..NewJob::default()
    };
    store.enqueue(&fresh).expect("enqueue the fresh job");
}

/// Runs `worker` on `store` until it is idle, or until [`STUCK`] (then the drill fails).
fn until_idle(worker: Worker, store: &mut dyn Backend, handler: impl Fn(&Attempt) + Send + Sync) -> Duration {
    let started = Instant::now();
    let stop = Stop::new();
    let stopper = stop.clone();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let timer = thread::spawn(move || {
        if finished.recv_timeout(STUCK).is_err() {
            stopper.request();
        }
    });
    worker
        .run(store, &stop, |attempt: &Attempt| {
            handler(attempt);
            Ok(())
        })
        .expect("run");
    let took = started.elapsed();
    let _ = done.send(());
    timer.join().expect("timer");
    assert!(took < STUCK, "the worker was still busy after {STUCK:?}");
    took
}

/// A worker of `queues`, 16 attempts at a time, until idle.
fn worker(name: &str, queues: &[&str]) -> Worker {
    let mut config = Worker::new(name).expect("name").config().clone();
    config.queues = queues.iter().map(|q| (*q).to_owned()).collect();
    config.until_idle = true;
    Worker::with_config(config).expect("config").concurrency(16)
}

/// The drill on a store opened three times: by the fresh job's worker, by the backlog's, and
/// by a reader that looks while the first one runs.
fn drill(
    fresh_store: &mut dyn Backend,
    backlog_store: &mut dyn Backend,
    reader: Box<dyn Backend>,
    store: &str,
) {
    // The worker's limit is the default; a worker whose claim ended the whole backlog (as
    // before SPEC 1.3) fails below.
    assert_eq!(fresh_store.settings().reap_limit, retryq::DEFAULT_REAP_LIMIT);
    let limit = retryq::DEFAULT_REAP_LIMIT;
    let reader = Mutex::new(reader);
    // (pending, dead) of the backlog's queue when the fresh job ran.
    let seen = Mutex::new(None);
    let took = until_idle(worker("fresh", &["fresh"]), fresh_store, |attempt| {
        assert_eq!(attempt.id(), "fresh-1");
        let now = retryq_worker::now_ms().expect("clock");
        let stats = reader.lock().expect("reader").stats_of(now, Some("default")).expect("stats");
        *seen.lock().expect("seen") = Some((stats.pending, stats.dead));
    });
    let (pending, dead) = seen.into_inner().expect("seen").expect("the fresh job ran");
    eprintln!(
        "{store}: the fresh job ran within {took:?} of its worker's start, {dead} of the backlog ended"
    );
    // Its reap and its batch's each ended at most one limit: its claim did not wait for the
    // whole backlog to be ended.
    assert!(dead <= 2 * limit, "{store}: {dead} of the backlog ended before the fresh job ran");
    assert_eq!(pending + dead, BACKLOG as u64, "{store}");

    let took = until_idle(worker("backlog", &["default"]), backlog_store, |attempt| {
        panic!("{} is past its deadline", attempt.id())
    });
    eprintln!("{store}: the backlog of {BACKLOG} ended within {took:?} of its worker's start");
    let stats = backlog_store.stats_of(retryq_worker::now_ms().expect("clock"), None).expect("stats");
    assert_eq!((stats.pending, stats.leased, stats.done), (0, 0, 1), "{store}");
    assert_eq!(stats.dead_deadline, BACKLOG as u64, "{store}");
    let job = backlog_store.get("late-00000").expect("get").expect("job");
    assert_eq!((job.status, job.dead_reason, job.attempts), (Status::Dead, Some(DeadReason::Deadline), 0));
    let audit = backlog_store.audit().expect("audit");
    assert!(audit.is_clean(), "{store}: {:#?}", audit.violations);
}

#[test]
fn a_backlog_past_its_deadline_on_sqlite_stops_no_claim() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let mut first = Queue::open(&path).expect("open");
    fill(&mut first);
    let mut second = Queue::open(&path).expect("open");
    drill(&mut first, &mut second, Box::new(Queue::open(&path).expect("open")), "sqlite");
}

#[test]
fn a_backlog_past_its_deadline_on_postgres_stops_no_claim() {
    let Some(url) = retryq_pgtest::database("a_backlog_past_its_deadline") else { return };
    let connect = || PgQueue::connect(&url).expect("connect");
    let mut first = connect();
    fill(&mut first);
    let mut second = connect();
    drill(&mut first, &mut second, Box::new(connect()), "postgres");
}
