//! A job enqueued in the application's own transaction on an async client — `tokio-postgres`
//! (feature `tokio-postgres`) or sqlx (feature `sqlx`) — as [`PgQueue::enqueue_in`] does on
//! the `postgres` client: in a savepoint of that transaction, by the same statements
//! (`enqueue.rs`'s `INSERT`, `TOMBSTONE_DIGEST`, `SAME_PAYLOAD`) read into the same answers
//! (`Row`, `by_tombstone`, `by_payload`). Only the driver's calls differ: [`Statements`].

use super::enqueue::{self, Row, SAME_PAYLOAD, STARTS, TOMBSTONE_DIGEST};
use super::store::PgQueue;
use crate::ddl::{APPLICATION_ID, PG_SCHEMA_VERSION as SCHEMA_VERSION};
use crate::error::{Error, Result};
use crate::queue::enqueue::{Enqueued, NewJob, ToEnqueue};

/// What messages call the application's database, whose URL the queue never saw.
const APP: &str = "the application's database";

/// The server's wall clock at this statement, in whole milliseconds (as `inside.rs` reads it).
const SERVER_NOW: &str = "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8";

/// The schema's mark: retryq's application id and the schema's version.
const META: &str = "SELECT application_id, schema_version FROM retryq_meta";

/// SQLSTATE 42P01: the mark's table does not exist — no retryq schema in the search path.
const UNDEFINED_TABLE: &str = "42P01";

/// One async driver's statements inside the savepoint, each read as `enqueue::insert` reads
/// it: the only code a driver adds.
pub(super) trait Statements {
    /// `META`'s row: the application id and the schema version.
    async fn meta(&mut self) -> Result<Option<(i64, i64)>>;
    /// The server's clock, `SERVER_NOW`.
    async fn server_now(&mut self) -> Result<i64>;
    /// `TOMBSTONE_DIGEST` of `id`.
    async fn digest(&mut self, id: &str) -> Result<Option<String>>;
    /// `INSERT` of `row`: the rows it wrote (1 or 0).
    async fn insert(&mut self, row: &Row<'_>) -> Result<u64>;
    /// `SAME_PAYLOAD` of `row`'s id, payload and kind.
    async fn same(&mut self, row: &Row<'_>) -> Result<Option<bool>>;
}

/// The enqueue, through `statements` (already in a savepoint): the job resolved against the
/// server's clock, checked, the schema's mark read, then `enqueue::insert`'s loop.
async fn enqueue(statements: &mut impl Statements, job: &(impl ToEnqueue + ?Sized)) -> Result<Enqueued> {
    let now = statements.server_now().await?;
    let now = u64::try_from(now).map_err(|_| Error::Corrupt(format!("the server's clock reads {now}")))?;
    let job = job.new_job(&mut || Ok(now))?;
    enqueue::validate(&job)?;
    require_schema(statements.meta().await)?;
    insert(statements, &job).await
}

/// Refuses a database whose current schema is not retryq's, of this version (a `PgQueue`
/// connected once upgrades an older one).
fn require_schema(meta: Result<Option<(i64, i64)>>) -> Result<()> {
    let refuse = |why: String| Error::NotRetryq { path: APP.into(), why };
    let no_schema = "the current schema has no retryq schema: call PgQueue::install on it, or connect a \
                     PgQueue to it once";
    let (application_id, version) = match meta {
        Err(e) if e.sqlstate() == Some(UNDEFINED_TABLE) => return Err(refuse(no_schema.into())),
        Err(e) => return Err(e),
        Ok(None) => return Err(refuse("retryq_meta holds no row".into())),
        Ok(Some(mark)) => mark,
    };
    if application_id != APPLICATION_ID {
        return Err(refuse(format!("retryq_meta holds application id {application_id:#x}")));
    }
    if version > SCHEMA_VERSION {
        return Err(Error::NewerSchema { path: APP.into(), found: version, supported: SCHEMA_VERSION });
    }
    if version < SCHEMA_VERSION {
        return Err(refuse(format!("schema version {version}: connect a PgQueue to it once to upgrade it")));
    }
    Ok(())
}

/// `enqueue::insert`'s loop over an async driver.
async fn insert(statements: &mut impl Statements, job: &NewJob<'_>) -> Result<Enqueued> {
    let row = Row::of(job)?;
    for _ in 0..STARTS {
        if let Some(digest) = statements.digest(job.id).await? {
            return enqueue::by_tombstone(job, &digest);
        }
        if statements.insert(&row).await? == 1 {
            return Ok(Enqueued::New);
        }
        if let Some(answer) = enqueue::by_payload(job, statements.same(&row).await?) {
            return answer;
        }
    }
    Err(enqueue::gave_up(job))
}

#[cfg(feature = "tokio-postgres")]
mod tokio_pg {
    use super::*;

    /// The statements on a `tokio-postgres` savepoint.
    pub(super) struct Tokio<'s, 't>(pub(super) &'s tokio_postgres::Transaction<'t>);

    impl Statements for Tokio<'_, '_> {
        async fn meta(&mut self) -> Result<Option<(i64, i64)>> {
            let row = self.0.query_opt(META, &[]).await?;
            row.map(|r| -> Result<(i64, i64)> { Ok((r.try_get(0)?, r.try_get(1)?)) }).transpose()
        }
        async fn server_now(&mut self) -> Result<i64> {
            Ok(self.0.query_one(SERVER_NOW, &[]).await?.try_get(0)?)
        }
        async fn digest(&mut self, id: &str) -> Result<Option<String>> {
            let row = self.0.query_opt(TOMBSTONE_DIGEST, &[&id]).await?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        }
        async fn insert(&mut self, row: &Row<'_>) -> Result<u64> {
            Ok(self.0.execute(enqueue::INSERT, &row.params()).await?)
        }
        async fn same(&mut self, row: &Row<'_>) -> Result<Option<bool>> {
            let found = self.0.query_opt(SAME_PAYLOAD, &[&row.id, &row.payload, &row.kind]).await?;
            Ok(found.map(|r| r.try_get(0)).transpose()?)
        }
    }
}

#[cfg(feature = "sqlx")]
mod sqlx_pg {
    use sqlx::Row as _;

    use super::*;

    /// The statements on a sqlx connection inside a savepoint.
    pub(super) struct Sqlx<'c>(pub(super) &'c mut sqlx::PgConnection);

    impl Statements for Sqlx<'_> {
        async fn meta(&mut self) -> Result<Option<(i64, i64)>> {
            let row = sqlx::query(META).fetch_optional(&mut *self.0).await?;
            row.map(|r| -> Result<(i64, i64)> { Ok((r.try_get(0)?, r.try_get(1)?)) }).transpose()
        }
        async fn server_now(&mut self) -> Result<i64> {
            Ok(sqlx::query(SERVER_NOW).fetch_one(&mut *self.0).await?.try_get(0)?)
        }
        async fn digest(&mut self, id: &str) -> Result<Option<String>> {
            let row = sqlx::query(TOMBSTONE_DIGEST).bind(id).fetch_optional(&mut *self.0).await?;
            Ok(row.map(|r| r.try_get(0)).transpose()?)
        }
        async fn insert(&mut self, row: &Row<'_>) -> Result<u64> {
            let done = sqlx::query(enqueue::INSERT)
                .bind(row.id)
                .bind(row.payload)
                .bind(row.max_attempts)
                .bind(row.deadline)
                .bind(row.now)
                .bind(row.not_before)
                .bind(row.base_ms)
                .bind(row.cap_ms)
                .bind(row.queue)
                .bind(row.priority)
                .bind(row.kind)
                .execute(&mut *self.0)
                .await?;
            Ok(done.rows_affected())
        }
        async fn same(&mut self, row: &Row<'_>) -> Result<Option<bool>> {
            let found = sqlx::query(SAME_PAYLOAD)
                .bind(row.id)
                .bind(row.payload)
                .bind(row.kind)
                .fetch_optional(&mut *self.0)
                .await?;
            Ok(found.map(|r| r.try_get(0)).transpose()?)
        }
    }
}

impl PgQueue {
    /// [`PgQueue::enqueue_in`] on a `tokio-postgres` transaction (feature `tokio-postgres`):
    /// the job is stored if and only if `tx` commits. The same rules, statements and answers
    /// (enqueued, existing, conflict, refusals); a refusal writes nothing and leaves `tx`
    /// usable (the enqueue runs in a savepoint of it). An [`Enqueue`](crate::Enqueue) is
    /// resolved against the server's clock, read in `tx`.
    ///
    /// The insert takes the claims' turn shared until `tx` ends, as [`PgQueue::enqueue_in`]
    /// says: commit soon after.
    #[cfg(feature = "tokio-postgres")]
    pub async fn enqueue_in_tokio_postgres(
        tx: &mut tokio_postgres::Transaction<'_>,
        job: &(impl ToEnqueue + ?Sized),
    ) -> Result<Enqueued> {
        let savepoint = tx.savepoint("retryq_enqueue_in").await?;
        let answer = enqueue(&mut tokio_pg::Tokio(&savepoint), job).await;
        match answer {
            Ok(_) => savepoint.commit().await?,
            Err(_) => savepoint.rollback().await?,
        }
        answer
    }

    /// [`PgQueue::enqueue_in`] on a sqlx connection inside the application's transaction
    /// (feature `sqlx`; pass `&mut *tx` of a `sqlx::Transaction<'_, Postgres>`): the job is
    /// stored if and only if that transaction commits. The same rules, statements and answers
    /// as [`PgQueue::enqueue_in_tokio_postgres`]; a refusal writes nothing and leaves the
    /// transaction usable (the enqueue runs in a savepoint).
    #[cfg(feature = "sqlx")]
    pub async fn enqueue_in_sqlx(
        conn: &mut sqlx::PgConnection,
        job: &(impl ToEnqueue + ?Sized),
    ) -> Result<Enqueued> {
        use sqlx::Connection as _;
        let mut savepoint = conn.begin().await?;
        let answer = enqueue(&mut sqlx_pg::Sqlx(&mut savepoint), job).await;
        match answer {
            Ok(_) => savepoint.commit().await?,
            Err(_) => savepoint.rollback().await?,
        }
        answer
    }
}
