//! [`Outbox`]: the application's own connection to the database its queue lives in — a
//! SQLite file or, with the `postgres` feature, a PostgreSQL database, by the same `--db`
//! text — whose transactions write the application's rows and enqueue jobs together.
//!
//! It is [`crate::install`] and [`crate::enqueue_in`] on a `rusqlite` connection, and
//! [`PgQueue::install`](crate::PgQueue::install) and
//! [`PgQueue::enqueue_in`](crate::PgQueue::enqueue_in) on a `postgres` one, behind one type,
//! so that an application written against it runs on either store by changing the URL. Its
//! SQL is the application's own; placeholders are written as PostgreSQL writes them (`$1`,
//! `$2`, …) and are bound as `?1`, `?2`, … on SQLite. For anything else, the connection
//! itself is at hand ([`Outbox::sqlite`], [`Outbox::postgres`]).

use std::sync::Arc;

use rusqlite::TransactionBehavior;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::queue::enqueue::Enqueued;
use crate::queue::enqueue::ToEnqueue;

/// A value bound to a placeholder of the application's SQL: any type both clients bind
/// (`i32`, `i64`, `f64`, `bool`, `String`, `&str`, `Vec<u8>`, `Option` of them, …).
#[cfg(feature = "postgres")]
pub trait Param: rusqlite::ToSql + postgres::types::ToSql + Sync {}
#[cfg(feature = "postgres")]
impl<T: rusqlite::ToSql + postgres::types::ToSql + Sync> Param for T {}

/// A value bound to a placeholder of the application's SQL: any type the client binds.
#[cfg(not(feature = "postgres"))]
pub trait Param: rusqlite::ToSql + Sync {}
#[cfg(not(feature = "postgres"))]
impl<T: rusqlite::ToSql + Sync> Param for T {}

/// The application's connection to the database that holds its tables and its queue.
///
/// ```
/// use retryq::{Enqueue, Outbox, Queue};
///
/// let dir = tempfile::tempdir()?;
/// let db = dir.path().join("shop.db");
/// let mut shop = Outbox::open(db.to_str().expect("UTF-8"))?;
/// shop.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT NOT NULL)", &[])?;
/// let mut tx = shop.transaction()?;
/// tx.execute("INSERT INTO orders (id, customer) VALUES ($1, $2)", &[&7_i64, &"ada"])?;
/// tx.enqueue(&Enqueue::new("deliver-7", "7"))?;
/// tx.commit()?; // the order and its job, or (dropped, rolled back) neither
/// assert!(Queue::open(&db)?.get("deliver-7")?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Outbox {
    conn: Conn,
    clock: Option<Arc<dyn Clock>>,
}

enum Conn {
    Sqlite(rusqlite::Connection),
    #[cfg(feature = "postgres")]
    Postgres(postgres::Client),
}

/// One transaction of an [`Outbox`]: committed by [`OutboxTransaction::commit`], rolled back
/// when dropped without it.
pub struct OutboxTransaction<'c> {
    tx: Tx<'c>,
    clock: Option<&'c dyn Clock>,
}

enum Tx<'c> {
    Sqlite(rusqlite::Transaction<'c>),
    #[cfg(feature = "postgres")]
    Postgres(postgres::Transaction<'c>),
}

impl Outbox {
    /// Connects to `db` — a `postgres://` URL (or key=value string) with the `postgres`
    /// feature, else the path of a SQLite file, created if missing — and installs the queue's
    /// schema beside the application's tables, as [`crate::install`] and
    /// [`PgQueue::install`](crate::PgQueue::install) do (and with their refusals). A SQLite
    /// connection waits up to 10 s for another's write lock, as a `Queue` does.
    pub fn open(db: &str) -> Result<Outbox> {
        if crate::backend::is_postgres_url(db) {
            #[cfg(feature = "postgres")]
            {
                let (config, tls) = crate::pg::client_config(db)?;
                let mut client = crate::pg::session(&config, &tls)?;
                crate::PgQueue::install(&mut client)?;
                return Ok(Outbox { conn: Conn::Postgres(client), clock: None });
            }
            #[cfg(not(feature = "postgres"))]
            return Err(crate::backend::no_postgres());
        }
        let path = std::path::Path::new(db);
        let checked = crate::file::before_open(path)?;
        let conn = rusqlite::Connection::open(checked.sqlite_path())?;
        crate::file::after_open(path, &checked)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        crate::install(&conn)?;
        Ok(Outbox { conn: Conn::Sqlite(conn), clock: None })
    }

    /// Resolves every [`Enqueue`](crate::Enqueue) on `clock` rather than the store's (this
    /// host's for SQLite, the server's for PostgreSQL): for tests.
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = Some(clock);
    }

    /// Runs one statement of the application's, outside a transaction: how many rows it
    /// wrote.
    pub fn execute(&mut self, sql: &str, params: &[&dyn Param]) -> Result<u64> {
        match &mut self.conn {
            Conn::Sqlite(conn) => sqlite_execute(conn, sql, params),
            #[cfg(feature = "postgres")]
            Conn::Postgres(client) => Ok(client.execute(sql, &postgres_params(params))?),
        }
    }

    /// Begins a transaction (on SQLite `IMMEDIATE`, as every queue write is).
    pub fn transaction(&mut self) -> Result<OutboxTransaction<'_>> {
        let clock = self.clock.as_deref();
        let tx = match &mut self.conn {
            Conn::Sqlite(conn) => Tx::Sqlite(conn.transaction_with_behavior(TransactionBehavior::Immediate)?),
            #[cfg(feature = "postgres")]
            Conn::Postgres(client) => Tx::Postgres(client.transaction()?),
        };
        Ok(OutboxTransaction { tx, clock })
    }

    /// The SQLite connection, if that is the store.
    pub fn sqlite(&mut self) -> Option<&mut rusqlite::Connection> {
        match &mut self.conn {
            Conn::Sqlite(conn) => Some(conn),
            #[cfg(feature = "postgres")]
            Conn::Postgres(_) => None,
        }
    }

    /// The PostgreSQL client, if that is the store (feature `postgres`).
    #[cfg(feature = "postgres")]
    pub fn postgres(&mut self) -> Option<&mut postgres::Client> {
        match &mut self.conn {
            Conn::Postgres(client) => Some(client),
            Conn::Sqlite(_) => None,
        }
    }
}

impl OutboxTransaction<'_> {
    /// Runs one statement of the application's in this transaction: how many rows it wrote.
    pub fn execute(&mut self, sql: &str, params: &[&dyn Param]) -> Result<u64> {
        match &mut self.tx {
            Tx::Sqlite(tx) => sqlite_execute(tx, sql, params),
            #[cfg(feature = "postgres")]
            Tx::Postgres(tx) => Ok(tx.execute(sql, &postgres_params(params))?),
        }
    }

    /// Enqueues `job` in this transaction: stored if and only if it commits
    /// ([`crate::enqueue_in`], [`PgQueue::enqueue_in`](crate::PgQueue::enqueue_in)).
    pub fn enqueue(&mut self, job: &(impl ToEnqueue + ?Sized)) -> Result<Enqueued> {
        match &mut self.tx {
            Tx::Sqlite(tx) => {
                let clock = self.clock.unwrap_or(&crate::clock::SystemClock);
                crate::queue::enqueue::enqueue_in_at(tx, job, &mut || clock.now_ms().map_err(Error::Clock))
            }
            #[cfg(feature = "postgres")]
            Tx::Postgres(tx) => crate::pg::enqueue_in_with(tx, job, self.clock),
        }
    }

    /// Commits the application's rows and the jobs together.
    pub fn commit(self) -> Result<()> {
        match self.tx {
            Tx::Sqlite(tx) => Ok(tx.commit()?),
            #[cfg(feature = "postgres")]
            Tx::Postgres(tx) => Ok(tx.commit()?),
        }
    }

    /// Rolls everything back: no row, no job, no history.
    pub fn rollback(self) -> Result<()> {
        match self.tx {
            Tx::Sqlite(tx) => Ok(tx.rollback()?),
            #[cfg(feature = "postgres")]
            Tx::Postgres(tx) => Ok(tx.rollback()?),
        }
    }
}

/// Runs `sql` on a SQLite connection with its `$N` placeholders bound as `?N`.
fn sqlite_execute(conn: &rusqlite::Connection, sql: &str, params: &[&dyn Param]) -> Result<u64> {
    let sql = numbered(sql);
    let written =
        conn.execute(&sql, rusqlite::params_from_iter(params.iter().map(|p| p as &dyn rusqlite::ToSql)))?;
    Ok(written as u64)
}

#[cfg(feature = "postgres")]
fn postgres_params<'p>(params: &'p [&'p dyn Param]) -> Vec<&'p (dyn postgres::types::ToSql + Sync)> {
    params.iter().map(|p| *p as &(dyn postgres::types::ToSql + Sync)).collect()
}

/// `sql` with each `$N` placeholder written as SQLite's `?N`, outside quotes: SQLite reads
/// `$1` as a named parameter, numbered by its first appearance rather than by its digits.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push('?');
                continue;
            }
            None => {}
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Enqueue, ErrorKind, Queue};

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(numbered("VALUES ($2, $1, '$1', \"$3\", $x)"), "VALUES (?2, ?1, '$1', \"$3\", $x)");
    }

    #[test]
    fn a_rollback_takes_the_row_and_the_job_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("app.db");
        let mut app = Outbox::open(db.to_str().expect("utf-8")).expect("open");
        app.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT)", &[]).expect("table");
        let mut tx = app.transaction().expect("begin");
        tx.execute("INSERT INTO orders (customer, id) VALUES ($2, $1)", &[&1_i64, &"ada"]).expect("row");
        tx.enqueue(&Enqueue::new("a", "1")).expect("job");
        tx.rollback().expect("rollback");
        let mut tx = app.transaction().expect("begin");
        tx.execute("INSERT INTO orders (customer, id) VALUES ($2, $1)", &[&2_i64, &"grace"]).expect("row");
        tx.enqueue(&Enqueue::new("b", "2")).expect("job");
        let err = tx.enqueue(&Enqueue::new("b", "other")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Conflict);
        tx.commit().expect("commit");
        let q = Queue::open(&db).expect("queue");
        assert_eq!(q.get("a").expect("get"), None);
        assert!(q.get("b").expect("get").is_some());
        let conn = app.sqlite().expect("sqlite");
        let customer: String = conn.query_row("SELECT customer FROM orders", [], |r| r.get(0)).expect("row");
        assert_eq!(customer, "grace");
        assert!(q.audit().expect("audit").is_clean());
    }
}
