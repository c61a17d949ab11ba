//! An idle worker is idle (issue: a worker serving `default` while a job of a queue it does
//! not serve was due claimed without pause): with nothing due in the queues it serves, it
//! sleeps until their next due time, at most `max_sleep` — whatever other queues hold — and
//! `until_idle` means its own queues. On both stores; on PostgreSQL the server's own count of
//! this database's transactions bounds what the worker ran.

use std::thread;
use std::time::{Duration, Instant};

use retryq::{Backend, Enqueue, NewJob, PgQueue, Queue};
use retryq_worker::{Attempt, Stop, Summary, Worker};

/// How long the idle worker runs, and its longest sleep.
const RUN: Duration = Duration::from_secs(10);
const MAX_SLEEP: Duration = Duration::from_secs(1);

/// A job of queue `sms`, due from 0 until far away, that no worker here serves; and, with
/// `own`, one of `default` scheduled in a minute.
fn fill(store: &mut dyn Backend, now: u64, own: bool) {
    let sms = NewJob {
        id: "sms-1",
        payload: "",
        max_attempts: 3,
        deadline: now + 3_600_000,
        now,
        queue: Some("sms"),
        ..NewJob::default()
    };
    store.enqueue(&sms).expect("enqueue sms");
    if own {
        let later = NewJob {
            id: "later",
            payload: "",
            max_attempts: 3,
            deadline: now + 3_600_000,
            now,
            not_before: Some(now + 60_000),
            ..NewJob::default()
        };
        store.enqueue(&later).expect("enqueue default");
    }
}

/// Runs a worker of `default` for [`RUN`] (stopped from another thread), its handler never
/// called; its summary.
fn run_idle(store: &mut dyn Backend) -> Summary {
    let stop = Stop::new();
    let stopper = stop.clone();
    let timer = thread::spawn(move || {
        thread::sleep(RUN);
        stopper.request();
    });
    let worker = Worker::new("idle").expect("name");
    let worker = Worker::with_config({
        let mut config = worker.config().clone();
        config.max_sleep = MAX_SLEEP;
        config
    })
    .expect("config");
    let summary = worker
        .run(store, &stop, |attempt: &Attempt| {
            panic!("nothing of `default` is due, yet {} ran", attempt.id())
        })
        .expect("run");
    timer.join().expect("timer");
    summary
}

/// A round a second at most, and one to start with: a worker that loops on the other
/// queue's due job runs thousands.
fn assert_idle(summary: &Summary, store: &str) {
    let most = RUN.as_secs() / MAX_SLEEP.as_secs() + 2;
    assert!(
        summary.rounds <= most,
        "{store}: {} rounds of claiming in {RUN:?}, at most {most} expected",
        summary.rounds
    );
    assert_eq!(summary.attempts, 0, "{store}");
}

#[test]
fn an_idle_worker_on_sqlite_sleeps_beside_a_due_job_of_another_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut queue = Queue::open(dir.path().join("q.db")).expect("open");
    fill(&mut queue, retryq_worker::now_ms().expect("clock"), true);
    let summary = run_idle(&mut queue);
    assert_idle(&summary, "sqlite");
}

#[test]
fn an_idle_worker_on_postgres_sleeps_beside_a_due_job_of_another_queue() {
    let Some(url) = retryq_pgtest::database("an_idle_worker_on_postgres_sleeps") else { return };
    let mut store = PgQueue::connect(&url).expect("connect");
    fill(&mut store, retryq_worker::now_ms().expect("clock"), true);
    let mut counter = retryq::postgres::Client::connect(&url, retryq::postgres::NoTls).expect("counter");
    let transactions = |c: &mut retryq::postgres::Client| -> i64 {
        // The statistics of ended transactions reach the view within a second (PostgreSQL 15
        // flushes them at most once a second); this reading's own transaction is one more.
        c.query_one(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()",
            &[],
        )
        .expect("stats")
        .get(0)
    };
    thread::sleep(Duration::from_millis(1500));
    let before = transactions(&mut counter);
    let summary = run_idle(&mut store);
    thread::sleep(Duration::from_millis(1500));
    let ran = transactions(&mut counter) - before;
    assert_idle(&summary, "postgres");
    // Each round is a few transactions (the clock, a reap, a claim, the next due time), and
    // the worker reads the server's clock and starts and stops once: tens, not thousands.
    assert!(ran <= 150, "{ran} transactions on the database in {RUN:?}");
}

#[test]
fn until_idle_means_the_queues_served() {
    let started = Instant::now();
    let mut queue = Queue::open_in_memory().expect("queue");
    fill(&mut queue, retryq_worker::now_ms().expect("clock"), false);
    queue.enqueue(&Enqueue::new("now", "")).expect("enqueue");
    let worker = Worker::new("until-idle").expect("name").until_idle();
    // A worker that waited for every queue would wait for `sms-1` for good: stopped after
    // [`RUN`], it fails the assertion below instead of hanging the test.
    let stop = Stop::new();
    let stopper = stop.clone();
    thread::spawn(move || {
        thread::sleep(RUN);
        stopper.request();
    });
    let summary = worker.run(&mut queue, &stop, |_: &Attempt| Ok(())).expect("run");
    // It ran its own job and returned, though `sms-1` stays pending.
    assert_eq!((summary.attempts, summary.done), (1, 1));
    assert!(started.elapsed() < RUN, "it returned once `default` was idle");
    assert_eq!(queue.stats_of(0, Some("sms")).expect("stats").pending, 1);
}
