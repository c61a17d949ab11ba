//! Retention under steady load (`retryq bench --retention-only`): jobs flow through one
//! SQLite queue — enqueued, claimed and completed `ok` in batches of [`BATCH`], one
//! millisecond of the queue's time apart — once pruning as they go (the worker's
//! `--retain`: `prune_at_most` of at most 1,000 jobs a transaction) and once keeping
//! everything. At each checkpoint the file's size (after a WAL checkpoint) and the median
//! latency of `stats` are taken, so that a reader sees whether either grows with the number
//! of jobs that went through.
//!
//! Time is the queue's own (the jobs' `now`), not the wall clock: a million jobs span 1,000
//! s of queue time whatever the machine's speed, so "retain one minute" keeps the last
//! 60,000 jobs on every machine.

use std::path::Path;
use std::time::Instant;

use retryq::{Completion, NewJob, Outcome, Queue};
use serde::Serialize;

use crate::Config;
use crate::error::BenchError;
use crate::median::median;

/// Jobs per transaction of each kind.
pub const BATCH: usize = 1_000;
/// How long ended jobs are kept when pruning: one minute of queue time.
pub const RETAIN_MS: u64 = 60_000;
/// How long tombstones are kept in the run that forgets: two minutes of queue time.
pub const FORGET_MS: u64 = 120_000;
/// `stats` calls timed at each checkpoint.
const STATS_CALLS: usize = 21;

/// One checkpoint of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Jobs that went through so far.
    pub jobs: u64,
    /// The database file's size, after a WAL checkpoint.
    pub file_bytes: u64,
    /// Median latency of one `stats` call.
    pub stats_us: f64,
    /// Jobs still in the store (done) and tombstones left by prunes.
    pub done: u64,
    /// Tombstones.
    pub pruned: u64,
}

/// Both runs.
#[derive(Clone, Debug, Serialize)]
pub struct Retention {
    /// Ended jobs kept this long (queue time) in the pruning run.
    pub retain_ms: u64,
    /// Tombstones kept this long (queue time) in the run that also forgets.
    pub forget_ms: u64,
    /// Pruning as it goes, tombstones kept for good (the default: no id runs twice).
    pub pruned: Vec<Point>,
    /// Pruning and forgetting as it goes (`work --retain 1m --forget-after 10m`).
    pub forgotten: Vec<Point>,
    /// Keeping everything, as before retention.
    pub kept: Vec<Point>,
}

/// Runs both, `jobs` jobs each (a million; a hundred thousand with `--quick`), with
/// checkpoints at a tenth and at the end.
pub fn run(config: &Config) -> Result<Retention, BenchError> {
    let jobs = if config.quick { 100_000 } else { 1_000_000 };
    let checkpoints = [jobs / 10, jobs];
    let dir = config.scratch_dir()?;
    let started = Instant::now();
    let progress = config.stamped(started);
    progress(&format!("retention: {jobs} jobs, pruning what ended {RETAIN_MS} ms ago"));
    let pruned =
        through(&dir.path().join("pruned.db"), jobs, &checkpoints, Some((RETAIN_MS, None)), &progress)?;
    progress(&format!("retention: {jobs} jobs, pruning, and forgetting what ended {FORGET_MS} ms ago"));
    let forgotten = through(
        &dir.path().join("forgotten.db"),
        jobs,
        &checkpoints,
        Some((RETAIN_MS, Some(FORGET_MS))),
        &progress,
    )?;
    progress(&format!("retention: {jobs} jobs, keeping everything"));
    let kept = through(&dir.path().join("kept.db"), jobs, &checkpoints, None, &progress)?;
    Ok(Retention { retain_ms: RETAIN_MS, forget_ms: FORGET_MS, pruned, forgotten, kept })
}

/// `jobs` jobs through a fresh queue at `path`.
fn through(
    path: &Path,
    jobs: u64,
    checkpoints: &[u64],
    retain: Option<(u64, Option<u64>)>,
    progress: &dyn Fn(&str),
) -> Result<Vec<Point>, BenchError> {
    let mut queue = Queue::open(path)?;
    let payload = r#"{"order":12345,"sku":"A-1"}"#;
    let mut points = Vec::new();
    let mut done = 0u64;
    let mut ids: Vec<String> = Vec::with_capacity(BATCH);
    while done < jobs {
        // One millisecond of queue time per job.
        let now = done + 1;
        ids.clear();
        ids.extend((done..done + BATCH as u64).map(|n| format!("job-{n}")));
        let batch: Vec<NewJob<'_>> = ids
            .iter()
            .map(|id| NewJob {
                id,
                payload,
                max_attempts: 3,
                deadline: now + 3_600_000,
                now,
                ..NewJob::default()
            })
            .collect();
        queue.enqueue_many(&batch)?;
        let claimed = queue.claim_batch("bench", now, BATCH)?;
        let completions: Vec<Completion<'_>> =
            claimed.iter().map(|c| Completion::new(&c.lease, Outcome::Ok, now, 0.0)).collect();
        queue.complete_batch(&completions)?;
        done += BATCH as u64;
        if let Some((retain, forget)) = retain {
            let before = done.saturating_sub(retain);
            while queue.prune_at_most(before, done, BATCH as u64)? >= BATCH as u64 {}
            if let Some(forget) = forget {
                queue.forget(done.saturating_sub(forget), done)?;
            }
        }
        if checkpoints.contains(&done) {
            let point = checkpoint(&mut queue, path, done)?;
            progress(&format!(
                "  {} jobs: {} bytes, stats {:.0} µs ({} kept, {} tombstones)",
                point.jobs, point.file_bytes, point.stats_us, point.done, point.pruned
            ));
            points.push(point);
        }
    }
    Ok(points)
}

fn checkpoint(queue: &mut Queue, path: &Path, jobs: u64) -> Result<Point, BenchError> {
    // The log folded into the file and truncated, from a connection of its own (the queue's
    // is idle between operations): the file's size is then the database's.
    rusqlite::Connection::open(path)?.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    let file_bytes = std::fs::metadata(path)?.len();
    let mut times = Vec::with_capacity(STATS_CALLS);
    let mut last = None;
    for _ in 0..STATS_CALLS {
        let started = Instant::now();
        last = Some(queue.stats(jobs)?);
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    let stats = last.unwrap_or_default();
    Ok(Point { jobs, file_bytes, stats_us: median(&mut times), done: stats.done, pruned: stats.pruned_done })
}

/// The table `retryq bench --retention-only` prints.
pub fn render(r: &Retention) -> String {
    let mut out =
        format!("retention under steady load (ended jobs kept {} ms of queue time):\n", r.retain_ms);
    out.push_str(&format!(
        "{:<10} {:>10} {:>14} {:>12} {:>12}\n",
        "run", "jobs", "file bytes", "stats µs", "tombstones"
    ));
    for (name, points) in [("pruned", &r.pruned), ("forgotten", &r.forgotten), ("kept", &r.kept)] {
        for p in points {
            out.push_str(&format!(
                "{name:<10} {:>10} {:>14} {:>12.0} {:>12}\n",
                p.jobs, p.file_bytes, p.stats_us, p.pruned
            ));
        }
    }
    out
}
