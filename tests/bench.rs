//! `retryq bench`'s worker processes through the real binary: the throughput benchmark's
//! ready/go protocol with one and two processes on a shared file, for the queue and for the
//! floor, and a worker refusing a spec it cannot read. (The full `retryq bench` runs for
//! minutes and times things; it is not a test. Speed is measured, never asserted.)

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::BIN;

use retryq_bench::Launcher;
use retryq_bench::throughput::{Side, measure, measure_on};

fn launcher() -> Launcher {
    Launcher { program: PathBuf::from(BIN), args: vec!["bench-worker".into()] }
}

#[test]
fn workers_take_jobs_through_for_the_queue_and_the_floor() {
    let dir = tempfile::tempdir().expect("tempdir");
    for side in [Side::Queue, Side::Floor] {
        for processes in [1, 2] {
            let rate = measure(&launcher(), dir.path(), side, processes, Duration::from_millis(300), 0)
                .unwrap_or_else(|e| panic!("{side:?} with {processes} processes: {e}"));
            assert!(rate > 0.0, "{side:?} with {processes} processes took no job through");
        }
    }
    // Each measurement removes its database when done.
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("read_dir").collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_worker_refuses_a_spec_it_cannot_read() {
    let out = Command::new(BIN).args(["bench-worker", "{\"side\":\"sideways\"}"]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("json"), "{stderr}");
}

#[test]
fn workers_take_jobs_through_on_postgres_for_the_queue_and_the_floor() {
    for side in [Side::PgQueue, Side::PgFloor] {
        for processes in [1, 3] {
            let Some(url) = retryq_pgtest::database("bench on postgres") else { return };
            match side {
                Side::PgQueue => drop(retryq::PgQueue::connect(&url).expect("schema")),
                _ => drop(retryq_bench::pg_floor::open(&url).expect("floor table")),
            }
            let rate = measure_on(&launcher(), &url, side, processes, Duration::from_millis(300))
                .unwrap_or_else(|e| panic!("{side:?} with {processes} processes: {e}"));
            assert!(rate > 0.0, "{side:?} with {processes} processes took no job through");
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            let done: i64 = client
                .query_one("SELECT count(*) FROM jobs WHERE status = 'done' AND attempts = 1", &[])
                .expect("count")
                .get(0);
            assert!(done > 0, "{side:?}: jobs went through the database");
        }
    }
}

/// The worker's PostgreSQL rows: every job done on both stores (the measure fails otherwise),
/// and the claims and completions batched — fewer commits per job than the two a job takes
/// one at a time.
#[test]
fn the_worker_on_postgres_runs_every_job_in_batches() {
    let Some(url) = retryq_pgtest::database("bench worker on postgres") else { return };
    let cluster = retryq_pgtest::Cluster::existing(&url);
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = retryq_bench::pg_worker::measure(&cluster, dir.path(), 1, 400, &|_| {}).expect("measure");
    let workers: Vec<usize> = rows.iter().map(|r| r.workers).collect();
    assert_eq!(workers, retryq_bench::pg_worker::WORKERS);
    for row in &rows {
        assert!(row.jobs_per_s > 0.0 && row.floor_jobs_per_s > 0.0 && row.sqlite_jobs_per_s > 0.0, "{row:?}");
        assert!(row.commits_per_job < 2.0, "{row:?}");
    }
}
