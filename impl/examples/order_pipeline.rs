//! An order pipeline: each order's row and its delivery job commit in one transaction of the
//! application's own connection (`retryq::enqueue_in`), so that there is never an order
//! without its delivery, nor a delivery of an order that was rolled back. A worker then
//! works the deliveries off with `run_once`, on a queue opened on the same file.
//!
//! `cargo run -p retryq --example order_pipeline`

use std::error::Error;
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use retryq::rusqlite::{Connection, TransactionBehavior, params};
use retryq::{Claimed, NewJob, Outcome, Queue, Ran, Report, RunError};

fn main() -> Result<(), Box<dyn Error>> {
    run(&mut io::stdout())
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

/// The whole example, printing to `out`.
pub fn run(out: &mut impl Write) -> Result<(), Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("shop.db");
    let mut conn = open_shop(&path)?;
    for order in &ORDERS {
        match place_order(&mut conn, order, now_ms()) {
            Ok(()) => writeln!(out, "order {} placed", order.id)?,
            Err(e) => writeln!(out, "order {} refused: {e}", order.id)?,
        }
    }

    // The worker: its own connection, as it would be in another process.
    let mut queue = Queue::open(&path)?;
    queue.set_settings(retryq::Settings {
        lease_ms: 5_000,
        base_ms: 10,
        cap_ms: 50,
        ..retryq::Settings::default()
    })?;
    let courier = Courier::default();
    loop {
        match deliver_due(&mut queue, &courier)? {
            Ran::Idle => match queue.next_due()? {
                None => break,
                Some(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            },
            Ran::Done { id, attempt } => writeln!(out, "{id}: delivered on attempt {attempt}")?,
            Ran::Retry { id, attempt, .. } => writeln!(out, "{id}: attempt {attempt} failed, will retry")?,
            other => writeln!(out, "{other:?}")?,
        }
    }

    for order in &ORDERS {
        let rows: i64 =
            conn.query_row("SELECT count(*) FROM orders WHERE id = ?1", [order.id], |r| r.get(0))?;
        let job = queue.get(&delivery_id(order.id))?;
        let delivery = match &job {
            Some(job) => format!("delivery {} after {} attempt(s)", job.status, job.attempts),
            None => "no delivery job".to_owned(),
        };
        writeln!(out, "order {} ({}): {} row(s), {delivery}", order.id, order.customer, rows)?;
    }
    Ok(())
}

/// The shop's own database: its `orders` table, and retryq's schema next to it.
fn open_shop(path: &Path) -> Result<Connection, Box<dyn Error>> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS orders (
             id INTEGER PRIMARY KEY, customer TEXT NOT NULL, total_cents INTEGER NOT NULL)",
    )?;
    retryq::install(&conn)?;
    Ok(conn)
}

/// The delivery job's id: one delivery per order, whoever enqueues it and however often.
fn delivery_id(order: i64) -> String {
    format!("deliver-order-{order}")
}

/// Places an order: its row and its delivery job commit together, or neither does.
fn place_order(conn: &mut Connection, order: &Order, now: u64) -> Result<(), Box<dyn Error>> {
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

/// One claim, one send, one record: the worker's unit of work.
fn deliver_due(queue: &mut Queue, courier: &Courier) -> Result<Ran, RunError<io::Error>> {
    queue.run_once("courier-1", now_ms, |job: &Claimed| courier.send(&job.payload), jitter())
}

/// The courier's API, simulated: it is busy the first time it is asked about each even
/// order, and takes every other request.
#[derive(Default)]
struct Courier {
    asked: std::cell::RefCell<std::collections::HashSet<String>>,
}

impl Courier {
    fn send(&self, order: &str) -> Result<Report, io::Error> {
        let first_time = self.asked.borrow_mut().insert(order.to_owned());
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
