//! The order pipeline of `order_pipeline.rs` in async code: each order's row and its
//! delivery job still commit together in one transaction of the application's connection
//! (`retryq::enqueue_in`), and two worker tasks work the deliveries off through one
//! `AsyncQueue` with an async transport.
//!
//! The application's connection is a plain blocking `rusqlite` one, so its transactions run
//! under `spawn_blocking`; the queue's operations run on the `AsyncQueue`'s own thread. No
//! runtime thread waits for the disk or for a lock.
//!
//! `cargo run -p retryq --features tokio --example order_pipeline_async`

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retryq::rusqlite::{Connection, TransactionBehavior, params};
use retryq::{AsyncQueue, Claimed, NewJob, Outcome, Ran, Report, Settings};

/// Errors that may cross between tasks.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let lines = run().await?;
    let mut out = io::stdout();
    for line in lines {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// An order as the shop takes it.
pub struct Order {
    pub id: i64,
    pub customer: &'static str,
    pub total_cents: i64,
}

/// The orders the example places: the third is refused by the shop after its delivery job
/// was written in the same transaction, which the rollback then takes back.
pub const ORDERS: [Order; 3] = [
    Order { id: 1, customer: "ada", total_cents: 4_200 },
    Order { id: 2, customer: "grace", total_cents: 1_999 },
    Order { id: 3, customer: "edsger", total_cents: 0 },
];

/// The whole example: what it has to say, in a stable order.
pub async fn run() -> Result<Vec<String>, BoxError> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("shop.db");
    let mut lines = Vec::new();

    // The application's transactions: blocking work, off the runtime's threads.
    let placed = tokio::task::spawn_blocking({
        let path = path.clone();
        move || place_orders(&path)
    })
    .await??;
    lines.extend(placed);

    // The workers: one queue thread, any number of tasks.
    let queue = AsyncQueue::open(&path).await?;
    queue.set_settings(Settings { lease_ms: 5_000, base_ms: 10, cap_ms: 50, ..Settings::default() }).await?;
    let courier = Courier::default();
    let workers: Vec<_> = ["courier-1", "courier-2"]
        .into_iter()
        .map(|worker| tokio::spawn(work(queue.clone(), courier.clone(), worker)))
        .collect();
    let mut delivered = Vec::new();
    for worker in workers {
        delivered.extend(worker.await??);
    }
    delivered.sort();
    lines.extend(delivered);

    let rows = tokio::task::spawn_blocking(move || order_rows(&path)).await??;
    for (order, rows) in ORDERS.iter().zip(rows) {
        let delivery = match queue.get(&delivery_id(order.id)).await? {
            Some(job) => format!("delivery {} after {} attempt(s)", job.status, job.attempts),
            None => "no delivery job".to_owned(),
        };
        lines.push(format!("order {} ({}): {rows} row(s), {delivery}", order.id, order.customer));
    }
    Ok(lines)
}

/// Places every order in its own transaction of the shop's connection.
fn place_orders(path: &Path) -> Result<Vec<String>, BoxError> {
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS orders (
             id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total_cents INTEGER NOT NULL)",
    )?;
    retryq::install(&conn)?;
    let mut lines = Vec::new();
    for order in &ORDERS {
        match place_order(&mut conn, order, now_ms()) {
            Ok(()) => lines.push(format!("order {} placed", order.id)),
            Err(e) => lines.push(format!("order {} refused: {e}", order.id)),
        }
    }
    Ok(lines)
}

/// Places an order: its row and its delivery job commit together, or neither does.
fn place_order(conn: &mut Connection, order: &Order, now: u64) -> Result<(), BoxError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute(
        "INSERT INTO orders (id, customer, total_cents) VALUES (?1, ?2, ?3)",
        params![order.id, order.customer, order.total_cents],
    )?;
    let (id, payload) = (delivery_id(order.id), order.id.to_string());
    let job = NewJob {
        id: &id,
        payload: &payload,
        max_attempts: 5,
        deadline: now + 60_000,
        now,
        ..NewJob::default()
    };
    retryq::enqueue_in(&tx, &job)?;
    if order.total_cents <= 0 {
        return Err("an order must cost something".into()); // dropping `tx` rolls both back
    }
    tx.commit()?;
    Ok(())
}

/// One worker task: `run_once` until no job is open, sleeping while nothing is due.
async fn work(queue: AsyncQueue, courier: Courier, worker: &'static str) -> Result<Vec<String>, BoxError> {
    let mut lines = Vec::new();
    loop {
        let courier = courier.clone();
        let send = move |job: Claimed| async move { courier.send(&job.payload).await };
        match queue.run_once(worker, now_ms, send, jitter()).await? {
            Ran::Idle => match queue.next_due().await? {
                None => return Ok(lines),
                Some(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            Ran::Done { id, attempt } => lines.push(format!("{id}: delivered on attempt {attempt}")),
            Ran::Retry { id, attempt, .. } => {
                lines.push(format!("{id}: attempt {attempt} failed, will retry"))
            }
            other => lines.push(format!("{other:?}")),
        }
    }
}

/// How many rows of `orders` each of [`ORDERS`] has.
fn order_rows(path: &PathBuf) -> Result<Vec<i64>, BoxError> {
    let conn = Connection::open(path)?;
    let mut count = conn.prepare("SELECT count(*) FROM orders WHERE id = ?1")?;
    let mut rows = Vec::new();
    for order in &ORDERS {
        rows.push(count.query_row([order.id], |r| r.get(0))?);
    }
    Ok(rows)
}

/// The delivery job's id: one delivery per order, whoever enqueues it and however often.
fn delivery_id(order: i64) -> String {
    format!("deliver-order-{order}")
}

/// The courier's API, simulated: a request takes a moment, and the courier is busy the first
/// time it is asked about each even order.
#[derive(Clone, Default)]
struct Courier {
    asked: Arc<Mutex<HashSet<String>>>,
}

impl Courier {
    async fn send(&self, order: &str) -> Result<Report, io::Error> {
        tokio::time::sleep(Duration::from_millis(2)).await;
        let first_time = self
            .asked
            .lock()
            .map_err(|_| io::Error::other("courier state poisoned"))?
            .insert(order.to_owned());
        let even = order.parse::<i64>().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))? % 2 == 0;
        Ok(if first_time && even {
            Report::with_error(Outcome::Retryable, "courier busy")
        } else {
            Report::from(Outcome::Ok)
        })
    }
}

/// Milliseconds since the Unix epoch: the queue's times are whatever base the caller
/// chooses, as long as every call uses the same one.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A fresh random number in [0, 1), from the standard library's randomly keyed hasher: the
/// jitter spreads the retries of many workers over their backoff window.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    (random >> 11) as f64 / (1u64 << 53) as f64
}
