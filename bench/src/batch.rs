//! Batched throughput on a durable file: `k` jobs at a time go through `enqueue_many`,
//! `claim_batch` and `complete_batch` — three commits for `k` jobs — in one process; and,
//! beside it, the batched floor: SQLite's own insert, pick and done statements `k` at a time
//! under the same three commits (see `floor.rs`).
//!
//! Once a commit's fsync is shared by `k` jobs, what each job costs in CPU decides the
//! throughput: [`versus_floor`] pairs the two round by round, so that their ratio says how
//! much of that CPU is the queue's own (its fencing, its reaping, its history).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use retryq::{Completion, NewJob, Outcome, Queue};
use serde::Serialize;

use crate::error::BenchError;
use crate::floor;
use crate::median::median;
use crate::throughput::{PAYLOAD, now_ms, remove_db};

/// The batch size [`versus_floor`] compares at: where the fsync is shared a hundredfold.
pub const VERSUS_FLOOR_K: usize = 100;

/// The queue's batches against the batched floor at one batch size, measured back to back
/// in every round.
#[derive(Clone, Debug, Serialize)]
pub struct BatchVersusFloor {
    /// Jobs per call (and per transaction on the floor).
    pub k: usize,
    /// The queue's median jobs per second (`enqueue_many`, `claim_batch`, `complete_batch`).
    pub queue_jobs_per_s: f64,
    /// The batched floor's median jobs per second.
    pub floor_jobs_per_s: f64,
    /// Median over rounds of queue / floor, each round's pair measured back to back.
    pub ratio: f64,
    /// Every round's figures, in order: what the medians were taken over.
    pub queue_rounds: Vec<f64>,
    /// See `queue_rounds`.
    pub floor_rounds: Vec<f64>,
    /// Rounds each median is over.
    pub rounds: usize,
    /// Seconds of each timed window.
    pub window_s: f64,
}

/// Jobs per second through a fresh durable file at batch size `k`, over `window`.
pub fn measure(dir: &Path, k: usize, window: Duration, round: usize) -> Result<f64, BenchError> {
    let db = dir.join(format!("batch-{k}-{round}.db"));
    let mut queue = Queue::open(&db)?;
    let mut names = Names::new(k);
    let start = Instant::now();
    let mut jobs = 0u64;
    while start.elapsed() < window {
        names.next_cycle();
        let now = now_ms()?;
        let new: Vec<NewJob<'_>> = names
            .names
            .iter()
            .map(|id| NewJob {
                id,
                payload: PAYLOAD,
                max_attempts: 5,
                deadline: now + 3_600_000,
                now,
                ..NewJob::default()
            })
            .collect();
        for result in queue.enqueue_many(&new)? {
            result?;
        }
        let now = now_ms()?;
        let claimed = queue.claim_batch("w1", now, k)?;
        let now = now_ms()?.max(now);
        let completions: Vec<Completion<'_>> =
            claimed.iter().map(|c| Completion::new(&c.lease, Outcome::Ok, now, 0.0)).collect();
        for result in queue.complete_batch(&completions)? {
            result?;
        }
        jobs += claimed.len() as u64;
    }
    let rate = jobs as f64 / start.elapsed().as_secs_f64();
    drop(queue);
    remove_db(&db);
    Ok(rate)
}

/// Jobs per second of the batched floor through a fresh durable file at batch size `k`,
/// over `window`: the same ids, payload and clock as [`measure`].
pub fn measure_floor(dir: &Path, k: usize, window: Duration, round: usize) -> Result<f64, BenchError> {
    let db = dir.join(format!("batch-floor-{k}-{round}.db"));
    let conn = floor::open(&db)?;
    let mut bare = floor::Floor::new(&conn)?;
    let mut names = Names::new(k);
    let start = Instant::now();
    let mut jobs = 0u64;
    while start.elapsed() < window {
        names.next_cycle();
        let now = now_ms()?;
        jobs += bare.batch(&names.names, PAYLOAD, "w1", now)? as u64;
    }
    let rate = jobs as f64 / start.elapsed().as_secs_f64();
    drop(bare);
    drop(conn);
    remove_db(&db);
    Ok(rate)
}

/// The queue's batches and the batched floor at k = [`VERSUS_FLOOR_K`], in a fresh
/// temporary directory (under `dir` if given), round by round with the order flipped every
/// round, so that each ratio pairs runs that saw the machine in the same state. As many
/// rounds of as long a window as the rest of `retryq bench`: five of 3 s, or three of 0.6 s
/// when `quick`.
pub fn versus_floor(
    dir: Option<&PathBuf>,
    quick: bool,
    progress: &dyn Fn(&str),
) -> Result<BatchVersusFloor, BenchError> {
    let dir = match dir {
        Some(dir) => tempfile::Builder::new().prefix("retryq-bench-").tempdir_in(dir)?,
        None => tempfile::Builder::new().prefix("retryq-bench-").tempdir()?,
    };
    let (rounds, window) =
        if quick { (3, Duration::from_millis(600)) } else { (5, Duration::from_millis(3000)) };
    let k = VERSUS_FLOOR_K;
    let (mut queue, mut bare, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        progress(&format!("batches against the batched floor, k = {k}: round {}/{rounds}", round + 1));
        let (q, f) = if round % 2 == 0 {
            let q = measure(dir.path(), k, window, round)?;
            (q, measure_floor(dir.path(), k, window, round)?)
        } else {
            let f = measure_floor(dir.path(), k, window, round)?;
            (measure(dir.path(), k, window, round)?, f)
        };
        queue.push(q);
        bare.push(f);
        ratios.push(q / f);
    }
    Ok(BatchVersusFloor {
        k,
        queue_rounds: queue.clone(),
        floor_rounds: bare.clone(),
        queue_jobs_per_s: median(&mut queue),
        floor_jobs_per_s: median(&mut bare),
        ratio: median(&mut ratios),
        rounds,
        window_s: window.as_secs_f64(),
    })
}

/// The ids of one batch, `job-NNNN-CYCLE`, rewritten in place every cycle so that both
/// sides spend the same on naming their jobs.
struct Names {
    stems: Vec<String>,
    names: Vec<String>,
    cycle: u64,
}

impl Names {
    fn new(k: usize) -> Names {
        let stems: Vec<String> = (0..k).map(|i| format!("job-{i:04}")).collect();
        Names { names: stems.clone(), stems, cycle: 0 }
    }

    fn next_cycle(&mut self) {
        let cycle = self.cycle.to_string();
        for (name, stem) in self.names.iter_mut().zip(&self.stems) {
            name.clear();
            name.push_str(stem);
            name.push('-');
            name.push_str(&cycle);
        }
        self.cycle += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_take_jobs_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let window = Duration::from_millis(50);
        assert!(measure(dir.path(), 10, window, 0).expect("queue") > 0.0);
        assert!(measure_floor(dir.path(), 10, window, 0).expect("floor") > 0.0);
    }

    #[test]
    fn names_are_new_every_cycle() {
        let mut names = Names::new(2);
        names.next_cycle();
        assert_eq!(names.names, ["job-0000-0", "job-0001-0"]);
        names.next_cycle();
        assert_eq!(names.names, ["job-0000-1", "job-0001-1"]);
    }
}
