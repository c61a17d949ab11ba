//! Claim cost against queue size: a claim must cost about the same with 1,000 pending jobs
//! as with 1,000,000 (the target is a ratio of at most 2), because claim and reap walk
//! partial indexes that hold only the rows they may touch.
//!
//! Each measured iteration is one `claim`; the job is then put back with an untimed
//! `retryable` completion (jitter 0, so due again at once, behind the others), which keeps
//! the pending count constant. In memory the index walk shows; on a file the fsync of the
//! durable commit dominates.
//!
//! `cargo bench -p retryq --bench claim`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use retryq::{Completion, MAX_ATTEMPTS, MAX_INT, NewJob, Outcome, Queue};

/// Loads `pending` pending jobs, plus `finished` jobs already done or dead around them.
fn load(queue: &mut Queue, pending: usize, finished: usize) {
    const BATCH: usize = 50_000;
    let ids: Vec<String> = (0..pending + finished).map(|i| format!("order-{i:08}")).collect();
    for chunk in ids.chunks(BATCH) {
        let jobs: Vec<NewJob<'_>> = chunk
            .iter()
            .map(|id| NewJob {
                id,
                payload: "{\"sku\":\"snack\",\"qty\":3}",
                max_attempts: MAX_ATTEMPTS,
                deadline: MAX_INT,
                now: 0,
                ..NewJob::default()
            })
            .collect();
        queue.enqueue_many(&jobs).expect("load");
    }
    // Finish the first `finished` jobs: alternately done and dead(permanent).
    for i in 0..finished {
        let claimed = queue.claim("loader", 0).expect("claim").expect("a due job");
        let outcome = if i % 2 == 0 { Outcome::Ok } else { Outcome::Permanent };
        queue.complete(&Completion::new(&claimed.lease, outcome, 0, 0.0)).expect("finish");
    }
}

fn claim_cost(queue: &mut Queue, iters: u64, now: &mut u64) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        *now += 1;
        let start = Instant::now();
        let claimed = queue.claim("bench", *now).expect("claim");
        total += start.elapsed();
        let claimed = black_box(claimed).expect("a due job");
        queue.complete(&Completion::new(&claimed.lease, Outcome::Retryable, *now, 0.0)).expect("put back");
    }
    total
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("claim");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for (pending, finished) in [(1_000, 0), (100_000, 0), (1_000_000, 0), (1_000, 100_000)] {
        let label =
            if finished == 0 { format!("{pending}") } else { format!("{pending}+{finished}_finished") };
        let mut queue = Queue::open_in_memory().expect("memory queue");
        load(&mut queue, pending, finished);
        let mut now = 0;
        group.bench_function(BenchmarkId::new("memory", &label), |b| {
            b.iter_custom(|iters| claim_cost(&mut queue, iters, &mut now))
        });
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for pending in [1_000, 1_000_000] {
        let mut queue = Queue::open(dir.path().join(format!("claim-{pending}.db"))).expect("file queue");
        load(&mut queue, pending, 0);
        let mut now = 0;
        group.bench_function(BenchmarkId::new("file", pending), |b| {
            b.iter_custom(|iters| claim_cost(&mut queue, iters, &mut now))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
