//! Pickup by wake-up (`retryq::Backend::listen`): an idle worker whose next look is a minute
//! away runs a job another connection enqueues within seconds — woken by the store, not by
//! its schedule — and a scheduled one at its start, on both stores. How many milliseconds it
//! takes is `retryq bench`'s to measure; here a worker that waited for its next look would
//! miss the bound by most of a minute.

use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use retryq::{Backend, NewJob, PgQueue, Queue};
use retryq_worker::{Attempt, Stop, Worker};

/// The idle worker's longest sleep, and the bound a woken one keeps far below it.
const MAX_SLEEP: Duration = Duration::from_secs(60);
const WOKEN: Duration = Duration::from_secs(15);

/// Runs an idle worker on `store` while `other` enqueues, 500 ms after it starts, a job due
/// now and one due two seconds later; how long after its enqueue each ran.
fn pickup(store: &mut dyn Backend, mut other: Box<dyn Backend>) -> Vec<(String, Duration)> {
    let stop = Stop::new();
    let ran = Mutex::new(Vec::new());
    let enqueued = Mutex::new(None::<Instant>);
    let mut config = Worker::new("picker").expect("name").config().clone();
    config.max_sleep = MAX_SLEEP;
    let worker = Worker::with_config(config).expect("config");
    thread::scope(|scope| {
        let (stop, enqueued) = (&stop, &enqueued);
        scope.spawn(move || {
            thread::sleep(Duration::from_millis(500));
            let now = retryq_worker::now_ms().expect("clock");
            let job = |id, not_before| NewJob {
                id,
                payload: "",
                max_attempts: 1,
                deadline: now + 3_600_000,
                now,
                not_before,
                ..NewJob::default()
            };
            *enqueued.lock().expect("enqueued") = Some(Instant::now());
            other.enqueue(&job("now", None)).expect("enqueue");
            other.enqueue(&job("later", Some(now + 2_000))).expect("enqueue");
            // Whatever happens, the worker is stopped at the bound.
            if !stop.sleep(WOKEN) {
                stop.request();
            }
        });
        worker
            .run(store, stop, |attempt: &Attempt| {
                let at = enqueued.lock().expect("enqueued").expect("enqueued before it ran");
                let mut ran = ran.lock().expect("ran");
                ran.push((attempt.id().to_owned(), at.elapsed()));
                if ran.len() == 2 {
                    stop.request();
                }
                Ok(())
            })
            .expect("run");
    });
    ran.into_inner().expect("ran")
}

fn check(ran: &[(String, Duration)], store: &str) {
    let ids: Vec<&str> = ran.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["now", "later"], "{store}: both jobs ran before {WOKEN:?} ({ran:?})");
    assert!(ran[1].1 >= Duration::from_secs(2), "{store}: the scheduled job waited for its start: {ran:?}");
    eprintln!("{store}: picked up after {:?}; the scheduled job {:?} after its enqueue", ran[0].1, ran[1].1);
}

#[test]
fn an_idle_sqlite_worker_is_woken_by_another_processs_enqueue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let mut store = Queue::open(&path).expect("open");
    let other = Box::new(Queue::open(&path).expect("open"));
    check(&pickup(&mut store, other), "sqlite");
}

#[test]
fn an_idle_postgres_worker_is_woken_by_another_connections_enqueue() {
    let Some(url) = retryq_pgtest::database("an_idle_postgres_worker_is_woken") else { return };
    let mut store = PgQueue::connect(&url).expect("connect");
    let other = Box::new(PgQueue::connect(&url).expect("connect"));
    check(&pickup(&mut store, other), "postgres");
}
