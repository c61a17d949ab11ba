//! The queue inside the application's own PostgreSQL database: its schema installed beside
//! the application's tables, and a job enqueued in the application's own transaction (the
//! transactional outbox) — what `retryq::install` and `retryq::enqueue_in` are on a SQLite
//! file, by the same insert as [`PgQueue::enqueue`].

use std::collections::HashMap;

use super::schema::{self, Found};
use super::store::{PgQueue, Tx};
use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::queue::enqueue::Enqueued;
use crate::queue::enqueue::ToEnqueue;

/// What messages call the application's database, whose URL the queue never saw.
const APP: &str = "the application's database";

/// The server's wall clock at this statement, in whole milliseconds (as `PgQueue::server_now`).
const SERVER_NOW: &str = "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8";

impl PgQueue {
    /// Installs the queue's schema in the current schema (the first of the `search_path`) of
    /// `client`'s database, beside the application's own tables, in one transaction; a schema
    /// that has it already is left as it is. Afterwards [`PgQueue::connect`] on the same
    /// database and schema uses it, and [`PgQueue::enqueue_in`] writes jobs through the
    /// application's transactions.
    ///
    /// Refused, nothing written ([`Error::NotRetryq`]): a schema with a table, index or
    /// sequence named like one of the queue's (`jobs`, `history`, `retryq_meta`, …) or with
    /// functions of its names; [`Error::NewerSchema`] for a newer retryq's.
    pub fn install(client: &mut postgres::Client) -> Result<()> {
        let mut statements = HashMap::new();
        let mut tx = Tx::over(client.transaction()?, &mut statements);
        schema::install(&mut tx, APP)?;
        tx.commit()
    }

    /// Enqueues `job` inside the application's own transaction `tx`, on the application's
    /// own connection: stored if and only if `tx` commits, with whatever else the
    /// application wrote in it. The rules are [`PgQueue::enqueue`]'s, by the same insert; an
    /// [`Enqueue`](crate::Enqueue) is resolved against the server's clock, read in `tx`.
    ///
    /// It runs in a savepoint of `tx`: a refusal ([`Error::InvalidInput`],
    /// [`Error::Conflict`], [`Error::NotRetryq`] for a database without the schema — see
    /// [`PgQueue::install`]) writes nothing and leaves `tx` usable.
    ///
    /// The insert takes the claims' turn shared (see `turn.rs`), and holds it until `tx`
    /// ends: workers' claims wait for the application's commit (each at most
    /// [`PgQueue::LOCK_TIMEOUT`], then a passing failure they retry). Commit soon after.
    pub fn enqueue_in(
        tx: &mut postgres::Transaction<'_>,
        job: &(impl ToEnqueue + ?Sized),
    ) -> Result<Enqueued> {
        enqueue_in_with(tx, job, None)
    }
}

/// [`PgQueue::enqueue_in`], with `clock` in place of the server's when given.
pub(crate) fn enqueue_in_with(
    tx: &mut postgres::Transaction<'_>,
    job: &(impl ToEnqueue + ?Sized),
    clock: Option<&dyn Clock>,
) -> Result<Enqueued> {
    let mut statements = HashMap::new();
    let mut inner = Tx::over(tx.savepoint("retryq_enqueue_in")?, &mut statements);
    let mut now = || -> Result<u64> {
        match clock {
            Some(clock) => clock.now_ms().map_err(Error::Clock),
            None => {
                let now: i64 = inner.query_one(SERVER_NOW, &[])?.try_get(0)?;
                u64::try_from(now).map_err(|_| Error::Corrupt(format!("the server's clock reads {now}")))
            }
        }
    };
    let job = job.new_job(&mut now)?;
    super::enqueue::validate(&job)?;
    if schema::inspect(&mut inner, APP)? != Found::Retryq {
        return Err(Error::NotRetryq {
            path: APP.into(),
            why: "the current schema has no retryq schema: call PgQueue::install on it, or connect a \
                  PgQueue to it once"
                .into(),
        });
    }
    let enqueued = super::enqueue::insert(&mut inner, &job)?;
    // Released: the job is the application's transaction's to commit or roll back.
    inner.commit()?;
    Ok(enqueued)
}
