//! The library's operations one job at a time and in batches: enqueue, claim and complete
//! (three transactions), and `enqueue_many`, `claim_batch` and `complete_batch` at k = 10
//! and 100 (three transactions for k jobs), in memory and on a durable file (WAL,
//! `synchronous = FULL`). Criterion reports jobs per second.
//!
//! `cargo bench -p retryq --bench ops` (`retryq bench` measures the same against the floor
//! of bare SQLite statements, with worker processes.)

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use retryq::{Completion, NewJob, Outcome, Queue};

const PAYLOAD: &str = r#"{"order":"order-7","sku":"snack","qty":3}"#;

/// Takes `k` fresh jobs through the queue: one by one when `k` is 1, else in batches.
fn jobs(queue: &mut Queue, next: &mut u64, k: usize) {
    let ids: Vec<String> = (0..k)
        .map(|_| {
            *next += 1;
            format!("job-{next:09}")
        })
        .collect();
    let now = *next;
    if k == 1 {
        let job = NewJob {
            id: &ids[0],
            payload: PAYLOAD,
            max_attempts: 5,
            deadline: now + 1_000_000,
            now,
            ..NewJob::default()
        };
        queue.enqueue(&job).expect("enqueue");
        let claimed = queue.claim("w", now).expect("claim").expect("a due job");
        queue.complete(&Completion::new(&claimed.lease, Outcome::Ok, now, 0.0)).expect("complete");
        return;
    }
    let new: Vec<NewJob<'_>> = ids
        .iter()
        .map(|id| NewJob {
            id,
            payload: PAYLOAD,
            max_attempts: 5,
            deadline: now + 1_000_000,
            now,
            ..NewJob::default()
        })
        .collect();
    queue.enqueue_many(&new).expect("enqueue_many");
    let claimed = queue.claim_batch("w", now, k).expect("claim_batch");
    assert_eq!(claimed.len(), k);
    let completions: Vec<Completion<'_>> =
        claimed.iter().map(|c| Completion::new(&c.lease, Outcome::Ok, now, 0.0)).collect();
    queue.complete_batch(&completions).expect("complete_batch");
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (place, durable) in [("memory", false), ("file", true)] {
        let mut group = c.benchmark_group(format!("jobs_{place}"));
        group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
        for k in [1usize, 10, 100] {
            let mut queue = if durable {
                Queue::open(dir.path().join(format!("ops-{k}.db"))).expect("file queue")
            } else {
                Queue::open_in_memory().expect("memory queue")
            };
            let mut next = 0;
            group.throughput(Throughput::Elements(k as u64));
            group.bench_function(BenchmarkId::new("k", k), |b| b.iter(|| jobs(&mut queue, &mut next, k)));
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
