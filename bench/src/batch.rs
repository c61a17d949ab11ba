//! Batched throughput on a durable file: `k` jobs at a time go through `enqueue_many`,
//! `claim_batch` and `complete_batch` — three commits for `k` jobs — in one process.

use std::path::Path;
use std::time::{Duration, Instant};

use retryq::{Completion, NewJob, Outcome, Queue};

use crate::BenchError;
use crate::throughput::{PAYLOAD, now_ms, remove_db};

/// Jobs per second through a fresh durable file at batch size `k`, over `window`.
pub fn measure(dir: &Path, k: usize, window: Duration, round: usize) -> Result<f64, BenchError> {
    let db = dir.join(format!("batch-{k}-{round}.db"));
    let mut queue = Queue::open(&db)?;
    let ids: Vec<String> = (0..k).map(|i| format!("job-{i:04}")).collect();
    let mut names: Vec<String> = ids.clone();
    let start = Instant::now();
    let mut jobs = 0u64;
    let mut cycle = 0u64;
    while start.elapsed() < window {
        for (name, id) in names.iter_mut().zip(&ids) {
            name.clear();
            name.push_str(id);
            name.push('-');
            name.push_str(&cycle.to_string());
        }
        let now = now_ms()?;
        let new: Vec<NewJob<'_>> = names
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
        cycle += 1;
    }
    let rate = jobs as f64 / start.elapsed().as_secs_f64();
    drop(queue);
    remove_db(&db);
    Ok(rate)
}
