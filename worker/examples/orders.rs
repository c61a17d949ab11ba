//! A shop: each order's row and its delivery job commit together in one transaction of the
//! application's own connection, and async handlers deliver them with a worker runtime —
//! leases renewed while a delivery runs, a scheduled start, a job with its own backoff, and
//! an order cancelled before delivery. No loop, no clock and no jitter are written here.
//!
//! `cargo run -p retryq-worker --example orders [DB]`: DB is a SQLite file (by default one
//! in a temporary directory) or a `postgres://` URL; nothing else changes.

// ANCHOR: readme
use std::time::Duration;

use retryq::{Enqueue, Outbox, Status};
use retryq_worker::{Attempt, JobError, Stop, Worker};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Places four orders, cancels one, delivers the rest; each delivery job's final status.
pub fn run(db: &str) -> Result<Vec<(String, Status)>, BoxError> {
    let mut shop = Outbox::open(db)?;
    shop.execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, cents BIGINT NOT NULL)", &[])?;
    let orders = [("o-1", 4200_i64), ("o-2", 1999), ("o-3", 500), ("o-4", 750)];
    for (id, cents) in orders {
        let mut tx = shop.transaction()?;
        tx.execute("INSERT INTO orders (id, cents) VALUES ($1, $2)", &[&id, &cents])?;
        let job = match id {
            "o-2" => Enqueue::new(format!("deliver-{id}"), id).start_in(Duration::from_millis(300)),
            "o-3" => Enqueue::new(format!("deliver-{id}"), id)
                .backoff(Duration::from_millis(50), Duration::from_secs(1)),
            _ => Enqueue::new(format!("deliver-{id}"), id),
        };
        tx.enqueue(&job.max_attempts(3).ttl(Duration::from_secs(60)))?;
        tx.commit()?;
    }
    let mut store = retryq::open_backend(db)?;
    store.cancel_now("deliver-o-4")?; // the customer changed their mind
    let worker = Worker::new("deliveries")?.concurrency(4).lease(Duration::from_millis(600)).until_idle();
    tokio::runtime::Runtime::new()?.block_on(worker.run_async(store, Stop::new(), deliver))?;
    let store = retryq::open_backend(db)?;
    let mut done = Vec::new();
    for (id, _) in orders {
        let job = store.get(&format!("deliver-{id}"))?.ok_or("a delivery job is missing")?;
        done.push((job.id, job.status));
    }
    Ok(done)
}

/// One delivery: o-3's carrier fails the first time; o-1's takes longer than the lease.
async fn deliver(attempt: Attempt) -> Result<(), JobError> {
    match (attempt.payload(), attempt.number()) {
        ("o-3", 1) => return Err(JobError::retry("carrier busy")),
        ("o-1", _) => tokio::time::sleep(Duration::from_millis(1000)).await,
        _ => {}
    }
    Ok(())
}
// ANCHOR_END: readme

fn main() -> Result<(), BoxError> {
    let dir = tempfile::tempdir()?;
    let db = std::env::args().nth(1).unwrap_or_else(|| dir.path().join("shop.db").display().to_string());
    for (id, status) in run(&db)? {
        println!("{id}: {status}");
    }
    Ok(())
}
