//! The queue's own enqueue → claim → complete loop on PostgreSQL (one claim per transaction,
//! as `retryq bench --postgres-only` runs it), in THREADS connections of one process, with the
//! time each operation took per job: the loop to read the server's log beside, to see where a
//! claim's turn goes.
//!
//! `cargo run --release -p retryq-bench --example claim_cost -- SECONDS THREADS URL`
//!
//! With the database's `log_min_duration_statement = 0` the log has each statement's time;
//! with `session_preload_libraries = 'auto_explain'`, `auto_explain.log_min_duration = 0`,
//! `auto_explain.log_analyze = on` and `auto_explain.log_nested_statements = on`, each
//! trigger's statements too.

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use retryq::{Completion, NewJob, Outcome, PgQueue};
use retryq_core::now_ms;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// Microseconds spent per operation, summed over the connections, and the jobs done.
#[derive(Default)]
struct Spent {
    enqueue: AtomicU64,
    claim: AtomicU64,
    complete: AtomicU64,
    jobs: AtomicU64,
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: claim_cost SECONDS THREADS URL";
    let seconds: u64 = args.next().ok_or(usage)?.parse().map_err(|_| usage)?;
    let threads: usize = args.next().ok_or(usage)?.parse().map_err(|_| usage)?;
    let url = args.next().ok_or(usage)?;
    let (stop, spent) = (Arc::new(AtomicBool::new(false)), Arc::new(Spent::default()));
    let start = Instant::now();
    let loops: Vec<_> = (0..threads)
        .map(|n| {
            let (url, stop, spent) = (url.clone(), Arc::clone(&stop), Arc::clone(&spent));
            thread::spawn(move || cycle(&url, n, &stop, &spent))
        })
        .collect();
    thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for each in loops {
        each.join().map_err(|_| "a connection's loop panicked")??;
    }
    let jobs = spent.jobs.load(Ordering::Relaxed).max(1) as f64;
    let ms = |total: &AtomicU64| total.load(Ordering::Relaxed) as f64 / jobs / 1000.0;
    println!(
        "{threads} connections: {:.0} jobs/s; ms per job, summed over connections: enqueue {:.2}, claim {:.2}, complete {:.2}",
        jobs / start.elapsed().as_secs_f64(),
        ms(&spent.enqueue),
        ms(&spent.claim),
        ms(&spent.complete)
    );
    Ok(())
}

/// One connection's loop until `stop`.
fn cycle(url: &str, n: usize, stop: &AtomicBool, spent: &Spent) -> Result<()> {
    let mut queue = PgQueue::connect(url)?;
    let worker = format!("w{n}");
    let mut made = 0u64;
    let since = |at: Instant| u64::try_from(at.elapsed().as_micros()).unwrap_or(u64::MAX);
    while !stop.load(Ordering::Relaxed) {
        made += 1;
        let id = format!("{n}-{made}-{}", now_ms()?);
        let now = now_ms()?;
        let at = Instant::now();
        let job = NewJob {
            id: &id,
            payload: "{}",
            max_attempts: 5,
            deadline: now + 3_600_000,
            now,
            ..NewJob::default()
        };
        queue.enqueue(&job)?;
        spent.enqueue.fetch_add(since(at), Ordering::Relaxed);
        let at = Instant::now();
        let claimed = queue.claim(&worker, now_ms()?)?;
        spent.claim.fetch_add(since(at), Ordering::Relaxed);
        if let Some(claimed) = claimed {
            let at = Instant::now();
            queue.complete(&Completion::new(&claimed.lease, Outcome::Ok, now_ms()?, 0.0))?;
            spent.complete.fetch_add(since(at), Ordering::Relaxed);
            spent.jobs.fetch_add(1, Ordering::Relaxed);
        }
    }
    Ok(())
}
