//! The worker on PostgreSQL: `work_in_slots` with [`SLOTS`] no-op attempts in flight per
//! worker, 1, 2, 4 and 8 workers on one database, against the server's floor for the same two
//! writes per job and beside the same workers on one SQLite file.
//!
//! Claims take turns on PostgreSQL (SPEC 6.26), so the single-claim loop of `postgres.rs`
//! is bounded by one commit per claim. A worker with free slots claims for all of them in
//! one transaction (`claim_batch`) and records the outcomes that are ready together
//! (`complete_batch`), so one turn and one commit serve many jobs. This section measures
//! what that buys.
//!
//! Every job is enqueued before the clock starts; each worker is a thread with its own
//! connection (its own server process), and runs until nothing is due or in flight. The
//! floor is two bare autocommit statements per job on pre-inserted rows — the pick with
//! `FOR UPDATE SKIP LOCKED`, then the `done` — in as many threads as there are worker slots
//! in all, at the same `synchronous_commit`: no batching, no history, no checks.

use std::thread;
use std::time::Instant;

use retryq::{Backend, OpenOptions, PgQueue, Queue};
use retryq_pgtest::Cluster;
use retryq_worker::{Stop, SystemClock, work_in_slots};

use crate::report::PgWorkerRow;
use crate::{BenchError, median, pg_floor, worker};

/// Attempts in flight per worker.
pub const SLOTS: usize = 16;
/// Worker counts measured.
pub const WORKERS: [usize; 4] = [1, 2, 4, 8];
/// Jobs per run (fewer with `--quick`).
pub const JOBS: usize = 3_000;

/// Opens one worker's own connection to the store under test.
type Open<'a> = &'a (dyn Fn() -> Result<Box<dyn Backend>, BenchError> + Sync);

/// Measures every row: `rounds` of each, the sides alternating which goes first.
pub fn measure(
    cluster: &Cluster,
    dir: &std::path::Path,
    rounds: usize,
    jobs: usize,
    progress: &dyn Fn(&str),
) -> Result<Vec<PgWorkerRow>, BenchError> {
    let mut rows = Vec::new();
    for &workers in &WORKERS {
        let (mut queue, mut floor, mut ratios, mut sqlite, mut commits) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds {
            progress(&format!(
                "round {}/{rounds}: the worker on PostgreSQL, {workers} × {SLOTS} in flight",
                round + 1
            ));
            let url = cluster.create_database().map_err(BenchError::Setup)?;
            let open = || Ok(Box::new(PgQueue::connect(&url)?) as Box<dyn Backend>);
            let (rate, writes) = run_workers(&open, workers, jobs)?;
            cluster.drop_database(&url).map_err(BenchError::Setup)?;
            let url = cluster.create_database().map_err(BenchError::Setup)?;
            let bare = floor_rate(&url, workers * SLOTS, jobs)?;
            cluster.drop_database(&url).map_err(BenchError::Setup)?;
            let path = dir.join(format!("pg-worker-sqlite-{workers}-{round}.db"));
            let open = || {
                let options = OpenOptions::default();
                Ok(Box::new(Queue::open_with(&path, &options)?) as Box<dyn Backend>)
            };
            let (on_sqlite, _) = run_workers(&open, workers, jobs)?;
            let _ = std::fs::remove_file(&path);
            queue.push(rate);
            floor.push(bare);
            ratios.push(rate / bare);
            sqlite.push(on_sqlite);
            commits.push(writes as f64 / jobs as f64);
        }
        rows.push(PgWorkerRow {
            workers,
            slots: SLOTS,
            jobs,
            jobs_per_s: median(&mut queue),
            floor_jobs_per_s: median(&mut floor),
            ratio: median(&mut ratios),
            commits_per_job: median(&mut commits),
            sqlite_jobs_per_s: median(&mut sqlite),
            rounds_jobs_per_s: queue,
        });
    }
    Ok(rows)
}

/// Enqueues `jobs` through the first connection, then runs `workers` workers of [`SLOTS`]
/// slots each until idle: jobs per second from their start, and the transactions that wrote.
fn run_workers(open: Open<'_>, workers: usize, jobs: usize) -> Result<(f64, u64), BenchError> {
    let mut first = open()?;
    worker::fill(&mut *first, jobs)?;
    drop(first);
    let start = Instant::now();
    let summaries = thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                scope.spawn(move || -> Result<retryq_worker::Summary, BenchError> {
                    let mut store = open()?;
                    let config = worker::config(format!("bench-{w}"));
                    work_in_slots(
                        &mut *store,
                        &config,
                        &mut [worker::Noop; SLOTS],
                        &Stop::new(),
                        &SystemClock,
                    )
                    .map_err(|e| BenchError::Setup(format!("the worker loop: {e}")))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(BenchError::Setup("a worker thread panicked".into()))))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    let done: u64 = summaries.iter().map(|s| s.done).sum();
    if done != jobs as u64 {
        return Err(BenchError::Setup(format!("{done} of {jobs} jobs done: the run is not comparable")));
    }
    Ok((jobs as f64 / elapsed, summaries.iter().map(|s| s.writes).sum()))
}

/// The floor: `jobs` rows inserted first, then `threads` threads each lease and finish rows
/// one statement at a time until none is left; jobs per second.
fn floor_rate(url: &str, threads: usize, jobs: usize) -> Result<f64, BenchError> {
    let mut client = pg_floor::open(url)?;
    pg_floor::fill(&mut client, jobs)?;
    drop(client);
    let start = Instant::now();
    let taken = thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || -> Result<u64, BenchError> {
                    let mut floor = pg_floor::Floor::new(pg_floor::open(url)?)?;
                    let worker = format!("floor-{t}");
                    let mut taken = 0;
                    while floor.take(&worker, 1)? {
                        taken += 1;
                    }
                    Ok(taken)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(BenchError::Setup("a floor thread panicked".into()))))
            .sum::<Result<u64, _>>()
    })?;
    let elapsed = start.elapsed().as_secs_f64();
    if taken != jobs as u64 {
        return Err(BenchError::Setup(format!("the floor took {taken} of {jobs} rows")));
    }
    Ok(jobs as f64 / elapsed)
}
