//! A shop's three kinds of jobs commit with the order's row in one transaction of its own
//! connection (rusqlite on SQLite, sqlx on PostgreSQL); one worker runs them all, each with its
//! kind's handler. `cargo run -p retryq-worker --example kinds [SQLITE-FILE | postgres://URL]`.

use retryq::{Enqueue, PgQueue};
use retryq_worker::{Attempt, JobArgs, JobError, Kinds, Stop, Worker, job};
use serde::{Deserialize, Serialize};
use sqlx::Connection as _;

const TABLE: &str = "CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY)";
const ORDER: &str = "INSERT INTO orders VALUES (7) ON CONFLICT DO NOTHING";

#[derive(Serialize, Deserialize)]
struct Charge(u64, u64); // order, cents
#[derive(Serialize, Deserialize)]
struct Ship(u64);
#[derive(Serialize, Deserialize)]
struct Receipt(u64);
impl JobArgs for Charge {
    const KIND: &'static str = "charge";
}
impl JobArgs for Ship {
    const KIND: &'static str = "ship";
}
impl JobArgs for Receipt {
    const KIND: &'static str = "receipt";
}

/// Places order 7 with its three jobs, then runs them all: how many attempts succeeded.
pub fn run(db: &str) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let jobs = [job(&Charge(7, 4200))?, job(&Ship(7))?, job(&Receipt(7))?];
    if db.starts_with("postgres") {
        drop(PgQueue::connect(db)?); // the queue's schema, once
        tokio::runtime::Runtime::new()?.block_on(async {
            let mut conn = sqlx::PgConnection::connect(db).await?;
            sqlx::query(TABLE).execute(&mut conn).await?;
            let mut tx = conn.begin().await?;
            sqlx::query(ORDER).execute(&mut *tx).await?;
            for job in &jobs {
                PgQueue::enqueue_in_sqlx(&mut tx, job).await?;
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(tx.commit().await?)
        })?;
    } else {
        let mut conn = rusqlite::Connection::open(db)?;
        retryq::install(&conn)?;
        conn.execute(TABLE, [])?;
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute(ORDER, [])?;
        jobs.iter().try_for_each(|job: &Enqueue<'_>| retryq::enqueue_in(&tx, job).map(drop))?;
        tx.commit()?;
    }
    let kinds = Kinds::new()
        .handle(|c: Charge, _: &Attempt| if c.1 > 0 { Ok(()) } else { Err(JobError::permanent("free")) })
        .handle(|_: Ship, at: &Attempt| if at.number() > 1 { Ok(()) } else { Err(JobError::retry("busy")) })
        .handle(|_: Receipt, _: &Attempt| Ok(()));
    let mut store = retryq::open_backend(db)?;
    Ok(Worker::new("shop")?.until_idle().run(&mut *store, &Stop::new(), |at| kinds.run(at))?.done)
}

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    println!("{} attempts succeeded", run(&std::env::args().nth(1).unwrap_or_else(|| "shop.db".into()))?);
    Ok(())
}
