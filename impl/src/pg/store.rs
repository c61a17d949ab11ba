//! The `PgQueue` itself: its connection, how it connects, its settings, and the transaction
//! helpers every operation runs in. The operations live in the sibling modules, one per SPEC
//! operation, as in `queue/`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{CancelToken, Client, Config, IsolationLevel, Portal, Row, Statement, Transaction};
use tokio_postgres_rustls::MakeRustlsConnect;

pub(super) use super::turn::Turn;
use crate::error::{Error, Result};
use crate::queue::store::Settings;

/// A durable retry queue in one PostgreSQL database: the same queue as [`Queue`] on a
/// SQLite file, the same answer to every call (SPEC sections 2 to 4), on a server that
/// many workers on many machines may share.
///
/// Each `PgQueue` holds one connection. Every write is one transaction, committed with
/// `synchronous_commit = on` (a commit that returned is in the server's WAL on disk, as far
/// as the server's `fsync` makes it), and every read is one snapshot; reads take `&self`.
/// A connection that the server dropped is opened again at the start of the next
/// operation: the operation under way when it dropped fails with a transient
/// [`Error::Postgres`], and whether it committed is the server's to say (a claim that did
/// spent an attempt, as a crash would have).
///
/// ```no_run
/// use retryq::{NewJob, PgQueue};
///
/// let mut q = PgQueue::connect("postgres://retryq@localhost/jobs")?;
/// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() })?;
/// let claimed = q.claim("w1", 10)?.expect("due");
/// assert_eq!(claimed.id(), "a");
/// # Ok::<(), retryq::Error>(())
/// ```
///
/// [`Queue`]: crate::Queue
pub struct PgQueue {
    conn: RefCell<Conn>,
    config: Config,
    /// TLS as the URL's `sslmode` asks (`tls.rs`): for every connection, and for cancelling.
    tls: MakeRustlsConnect,
    /// Cancels the statement the current connection runs, from another thread.
    cancel: Arc<Mutex<Option<CancelToken>>>,
    /// The database as messages name it: its URL without the password.
    name: String,
    pub(super) settings: Settings,
    /// The clock and the jitter of the operations that read them (`clocked.rs`).
    pub(crate) sources: crate::clock::Sources,
}

/// The connection and the statements prepared on it, which live and die with it.
struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// An operation failed because the connection was lost; the next one connects again.
    lost: bool,
}

impl Conn {
    fn open(config: &Config, tls: &MakeRustlsConnect, cancel: &Mutex<Option<CancelToken>>) -> Result<Conn> {
        let client = session(config, tls)?;
        *cancel.lock().unwrap_or_else(PoisonError::into_inner) = Some(client.cancel_token());
        Ok(Conn { client, statements: HashMap::new(), lost: false })
    }

    /// One run of `f` in a transaction of its own, in its turn if it writes: committed if it
    /// returns `Ok`, rolled back (when the transaction is dropped) if it returns `Err`.
    fn run<T>(&mut self, kind: Kind, f: &mut impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let (isolation, read_only) = match kind {
            Kind::Write(_) => (IsolationLevel::ReadCommitted, false),
            Kind::Read => (IsolationLevel::RepeatableRead, true),
        };
        let tx = self.client.build_transaction().isolation_level(isolation).read_only(read_only).start()?;
        let mut tx = Tx { tx, statements: &mut self.statements };
        if let Kind::Write(turn) = kind
            && let Some(wait) = turn.statement()
        {
            tx.execute(wait, &[])?;
        }
        let value = f(&mut tx)?;
        tx.commit()?;
        Ok(value)
    }
}

/// What a transaction does, which decides its isolation and its turn.
#[derive(Clone, Copy)]
enum Kind {
    /// READ COMMITTED, in the turn given (`turn.rs`).
    Write(Turn),
    /// REPEATABLE READ, READ ONLY: one snapshot, no turn.
    Read,
}

/// One transaction of an operation, with the connection's prepared statements: each SQL
/// text is prepared once per connection (as SQLite's `prepare_cached`), not on every call.
pub(super) struct Tx<'a> {
    tx: Transaction<'a>,
    statements: &'a mut HashMap<&'static str, Statement>,
}

impl<'a> Tx<'a> {
    /// A transaction of the application's own (a savepoint inside it, say), with statements
    /// prepared for it alone.
    pub(super) fn over(tx: Transaction<'a>, statements: &'a mut HashMap<&'static str, Statement>) -> Tx<'a> {
        Tx { tx, statements }
    }

    fn statement(&mut self, sql: &'static str) -> Result<Statement> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.tx.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// Runs a statement: how many rows it wrote.
    pub(super) fn execute(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let statement = self.statement(sql)?;
        Ok(self.tx.execute(&statement, params)?)
    }

    /// Every row of a query.
    pub(super) fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.tx.query(&statement, params)?)
    }

    /// The one row of a query, if any (more than one is an error).
    pub(super) fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>> {
        let statement = self.statement(sql)?;
        Ok(self.tx.query_opt(&statement, params)?)
    }

    /// The one row of a query that always has one.
    pub(super) fn query_one(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let statement = self.statement(sql)?;
        Ok(self.tx.query_one(&statement, params)?)
    }

    /// A query to be read a few rows at a time ([`Tx::fetch`]), for a read that may be larger
    /// than memory should hold at once (the audit's): several may be open in one transaction
    /// and read in turns, each a portal of the server's.
    pub(super) fn portal(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Portal> {
        let statement = self.statement(sql)?;
        Ok(self.tx.bind(&statement, params)?)
    }

    /// The next rows of `portal`, at most `rows`; empty once it is read to its end.
    pub(super) fn fetch(&mut self, portal: &Portal, rows: i32) -> Result<Vec<Row>> {
        Ok(self.tx.query_portal(portal, rows)?)
    }

    pub(super) fn commit(self) -> Result<()> {
        Ok(self.tx.commit()?)
    }

    /// Statements without parameters or results, several at once, unprepared (the schema's
    /// DDL, a savepoint).
    pub(super) fn batch(&mut self, sql: &str) -> Result<()> {
        Ok(self.tx.batch_execute(sql)?)
    }
}

/// The server's wall clock at this statement (not the transaction's start, `now()`), in
/// whole milliseconds.
const SERVER_NOW: &str = "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8";

impl PgQueue {
    /// How many times in all an operation runs while PostgreSQL rolls it back for a deadlock,
    /// a serialization failure or an insert over a tombstone (`RQ001`) before its error is
    /// returned. Each run changed nothing, so running it again is safe; contention that
    /// outlasts this many is reported.
    pub const RERUNS: usize = 8;
    /// How long any statement waits for a lock — a claim for the claims' turn, a write for a
    /// row — before it fails with SQLSTATE 55P03 (`lock_not_available`): a passing failure,
    /// after which a worker logs who holds the lock and tries again, as after SQLite's busy
    /// timeout. A session's `lock_timeout`.
    pub const LOCK_TIMEOUT: Duration = Duration::from_secs(2);
    /// How long any statement may run before the server cancels it, SQLSTATE 57014
    /// (`query_canceled`), also a passing failure. A session's `statement_timeout`; the
    /// audit, which reads everything, is exempt.
    pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
    /// How long a session may sit inside a transaction without sending a statement before
    /// the server ends the session (SQLSTATE 25P03) and so releases its locks: a worker
    /// stopped (SIGSTOP, a frozen VM, a debugger) while it holds the claims' turn holds up the
    /// other workers' claims this long at most. A session's
    /// `idle_in_transaction_session_timeout`. Its own operations never pause inside a
    /// transaction: each sends its statements back to back.
    pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(5);
    /// TCP keepalives: the first probe after this much silence (unless the URL asks for
    /// sooner), then every [`KEEPALIVE_INTERVAL`](Self::KEEPALIVE_INTERVAL), the connection
    /// given up after three unanswered probes: a server that vanished without closing the
    /// connection (a lost host, a dropped route) is noticed within about 25 s.
    pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
    /// See [`KEEPALIVE_IDLE`](Self::KEEPALIVE_IDLE).
    pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);

    /// A connection to the database `url` names, as it is: [`PgQueue::connect`] and
    /// [`PgQueue::connect_existing`] (`connect.rs`) then look at its schema.
    pub(super) fn open(url: &str) -> Result<PgQueue> {
        let (config, tls) = client_config(url)?;
        let name = describe(&config);
        PgQueue::connected(config, tls, name, Settings::default(), Default::default())
    }

    /// A new connection for `config`, with what its operations read besides.
    fn connected(
        config: Config,
        tls: MakeRustlsConnect,
        name: String,
        settings: Settings,
        sources: crate::clock::Sources,
    ) -> Result<PgQueue> {
        let cancel = Arc::new(Mutex::new(None));
        let conn = Conn::open(&config, &tls, &cancel)?;
        Ok(PgQueue { conn: RefCell::new(conn), config, tls, cancel, name, settings, sources })
    }

    /// Another connection to the same database, as this one is now: its settings, its
    /// session's name, and the clock and jitter its operations read. The schema was looked
    /// at when this one connected.
    pub fn another(&self) -> Result<PgQueue> {
        let (config, tls, name) = (self.config.clone(), self.tls.clone(), self.name.clone());
        PgQueue::connected(config, tls, name, self.settings, self.sources.clone())
    }

    /// Names this connection, and every one opened after it, `identity` in
    /// `pg_stat_activity` (its `application_name`; the server keeps 63 bytes of it).
    pub fn set_identity(&mut self, identity: &str) -> Result<()> {
        self.config.application_name(identity);
        let mut conn = self.conn.borrow_mut();
        if conn.lost || conn.client.is_closed() {
            // Named when the next operation connects again.
            return Ok(());
        }
        conn.client.query_one("SELECT set_config('application_name', $1, false)", &[&identity])?;
        Ok(())
    }

    /// The sessions of this database that hold the claims' turn or block another session,
    /// as `NAME (pid P, STATE for N ms)`: whom a lock timeout waited for.
    pub fn lock_holders(&self) -> Result<Vec<String>> {
        let rows = self.read(|tx| tx.query(HOLDERS, &[]))?;
        rows.iter()
            .map(|row| {
                let (pid, name, state, ms): (i32, String, String, i64) =
                    (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
                Ok(format!("{name} (pid {pid}, {state} for {ms} ms)"))
            })
            .collect()
    }

    /// Cancels, from another thread, the statement this queue's connection runs now.
    pub fn interrupter(&self) -> Arc<dyn crate::interrupt::Interrupt> {
        Arc::new(Interrupter(Arc::clone(&self.cancel), self.tls.clone()))
    }

    /// The server's clock, in Unix milliseconds: one clock for every host that shares the
    /// database, read in a statement of its own. Every host's operations that take their `now`
    /// from here compare leases and deadlines on the same clock, whatever their own clocks
    /// say (see `docs/postgres.md`).
    pub fn server_now(&self) -> Result<u64> {
        // One round trip (autocommit): a worker reads it before every claim.
        let now: i64 = self.alone(SERVER_NOW, &[], Client::query_one)?.try_get(0)?;
        u64::try_from(now)
            .ok()
            .filter(|&now| now <= crate::input::MAX_INT)
            .ok_or_else(|| Error::Corrupt(format!("the server's clock reads {now} ms since 1970")))
    }

    /// The database, as messages name it: its URL without the password.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The lease and backoff parameters later operations use.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Sets the lease and backoff parameters for later operations (refused, and unchanged,
    /// when a field is out of its range: [`Settings::validate`]).
    pub fn set_settings(&mut self, settings: Settings) -> Result<()> {
        settings.validate()?;
        self.settings = settings;
        Ok(())
    }

    /// Runs `f` in one READ COMMITTED write transaction, after taking `turn` (`turn.rs`):
    /// committed if it returns `Ok`, rolled back (so nothing changed) if it returns `Err`.
    /// Each statement sees what was committed when it began, and the rows an operation
    /// writes are locked until it commits; what an operation decides, it decides on rows it
    /// has locked (see the operations' modules). Run again, from the start, when the server
    /// rolled it back for a deadlock or a serialization failure.
    pub(super) fn write<T>(&mut self, turn: Turn, f: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.transaction(Kind::Write(turn), f)
    }

    /// Runs `f` in one REPEATABLE READ, READ ONLY transaction: every statement of it sees the
    /// same snapshot, so a read of several statements (a page and its count, the audit's
    /// rows and history) is of one instant.
    pub(super) fn read<T>(&self, f: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.transaction(Kind::Read, f)
    }

    /// Runs one statement on its own, as its own transaction (autocommit): how many rows it
    /// wrote. For the operations whose common case is one statement — a new job's insert, an
    /// `ok` or `permanent` completion whose fence holds — it saves the round trips of
    /// `BEGIN` and `COMMIT`; what it decides, a single statement decides atomically, on the
    /// rows it locks. A statement that needs a turn takes it itself, before its first row
    /// (`turn.rs`). Run again when the server rolled it back for a deadlock.
    pub(super) fn single(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        self.alone(sql, params, Client::execute)
    }

    /// Runs one prepared statement as its own transaction (autocommit) with `run`, again when
    /// the server rolled it back for a deadlock: [`PgQueue::single`]'s way, for any answer.
    pub(super) fn alone<T, E>(&self, sql: &'static str, params: &[&(dyn ToSql + Sync)], run: E) -> Result<T>
    where
        E: Fn(&mut Client, &Statement, &[&(dyn ToSql + Sync)]) -> std::result::Result<T, postgres::Error>,
    {
        // No operation calls another while it holds the connection, so this never finds it
        // borrowed.
        let mut conn = self.conn.borrow_mut();
        let mut run_no = 0;
        loop {
            run_no += 1;
            if conn.lost || conn.client.is_closed() {
                *conn = Conn::open(&self.config, &self.tls, &self.cancel)?;
            }
            let Conn { client, statements, .. } = &mut *conn;
            let statement = match statements.get(sql) {
                Some(statement) => Ok(statement.clone()),
                None => client.prepare(sql).inspect(|statement| {
                    statements.insert(sql, statement.clone());
                }),
            };
            match statement.and_then(|statement| run(client, &statement, params)) {
                Ok(answer) => return Ok(answer),
                Err(e) if run_no < Self::RERUNS && rolled_back(&e) => continue,
                Err(e) => {
                    if crate::error::connection_lost(&e) {
                        conn.lost = true;
                    }
                    return Err(Error::Postgres(e));
                }
            }
        }
    }

    fn transaction<T>(&self, kind: Kind, mut f: impl FnMut(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        // No operation calls another while it holds the connection, so this never finds it
        // borrowed.
        let mut conn = self.conn.borrow_mut();
        let mut run = 0;
        loop {
            run += 1;
            if conn.lost || conn.client.is_closed() {
                *conn = Conn::open(&self.config, &self.tls, &self.cancel)?;
            }
            match conn.run(kind, &mut f) {
                Err(Error::Postgres(e)) if run < Self::RERUNS && rolled_back(&e) => continue,
                Err(Error::Postgres(e)) if crate::error::connection_lost(&e) => {
                    conn.lost = true;
                    return Err(Error::Postgres(e));
                }
                result => return result,
            }
        }
    }
}

/// A failure after which the server rolled the whole transaction back on its own, so that
/// running it again is safe: a deadlock, a serialization failure, or `RQ001`, an insert
/// that waited for a prune of the same id and found its tombstone once it went on
/// (`ddl.rs`), which a second run answers by that tombstone.
fn rolled_back(e: &postgres::Error) -> bool {
    matches!(e.code(), Some(code) if *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::T_R_SERIALIZATION_FAILURE
        || code.code() == OVER_A_TOMBSTONE)
}

/// The SQLSTATE of the trigger that refuses a job under a pruned id (`ddl.rs`).
const OVER_A_TOMBSTONE: &str = "RQ001";

/// Who holds the turn (`turn.rs`: an advisory lock on one bigint key, which `pg_locks`
/// shows as class 0, object KEY, sub-object 1), blocks any session of this database now, or
/// has held a lock on `jobs` in a transaction open for longer than the lock timeout (a row
/// locked by `SELECT … FOR UPDATE` shows in `pg_locks` only while someone waits for it).
const HOLDERS: &str = concat!(
    "SELECT a.pid, coalesce(nullif(a.application_name, ''), '(unnamed)'), coalesce(a.state, '?'), \
     coalesce(floor(extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, a.query_start)) * 1000), 0)::int8 \
     FROM pg_stat_activity a WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND ( \
     a.pid IN (SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 \
     AND l.objid = ",
    super::turn::key!(),
    " AND l.objsubid = 1) OR a.pid IN (SELECT unnest(pg_blocking_pids(b.pid)) FROM pg_stat_activity b \
     WHERE b.datname = current_database()) OR (a.xact_start < clock_timestamp() - interval '2 s' \
     AND a.pid IN (SELECT l.pid FROM pg_locks l WHERE l.locktype = 'relation' AND l.granted \
     AND l.relation = 'jobs'::regclass))) ORDER BY a.pid"
);

/// The client's configuration and TLS connector for `url`: libpq's TLS words are read here
/// (`tls.rs`), the rest by the client; then the session settings every connection of this
/// crate gets (keepalives, a name).
pub(crate) fn client_config(url: &str) -> Result<(Config, MakeRustlsConnect)> {
    let settings = super::tls::split(url)?;
    let tls = super::tls::connector(&settings)?;
    let mut config: Config = settings.client.parse()?;
    config.keepalives(true).keepalives_interval(PgQueue::KEEPALIVE_INTERVAL).keepalives_retries(3);
    if config.get_keepalives_idle() > PgQueue::KEEPALIVE_IDLE {
        config.keepalives_idle(PgQueue::KEEPALIVE_IDLE);
    }
    if config.get_application_name().is_none() {
        config.application_name("retryq");
    }
    Ok((config, tls))
}

impl PgQueue {
    /// Calls `wake` with the queue whenever a committed statement made one of its jobs pending
    /// (schema 5's `NOTIFY`, `listen.rs`), from a connection and a thread of their own, until
    /// the listener is dropped. A lost connection is opened again (after a second), and
    /// `wake(None)` said then: a notification may have been missed.
    pub fn listen(&self, wake: crate::Wake) -> std::io::Result<crate::Listener> {
        let (config, tls) = (self.config.clone(), self.tls.clone());
        let listening = move || -> Result<Client> {
            let mut client = session(&config, &tls)?;
            let channel: String = client.query_one(super::ddl::CHANNEL, &[])?.try_get(0)?;
            client.batch_execute(&format!("LISTEN \"{channel}\""))?;
            Ok(client)
        };
        let first = listening().map_err(std::io::Error::other)?;
        crate::Listener::spawn("retryq-listen", wake, move |lookout| {
            use postgres::fallible_iterator::FallibleIterator;
            let mut client = Some(first);
            while !lookout.stopped() {
                let Some(open) = client.as_mut() else {
                    std::thread::sleep(Duration::from_secs(1));
                    client = listening().ok();
                    if client.is_some() {
                        lookout.wake(None);
                    }
                    continue;
                };
                let lost = {
                    let mut notes = open.notifications();
                    let mut heard = notes.timeout_iter(crate::listen::LOOK);
                    loop {
                        match heard.next() {
                            Ok(Some(note)) => lookout.wake(Some(note.payload())),
                            Ok(None) => break false,
                            Err(_) => break true,
                        }
                    }
                };
                if lost {
                    client = None;
                }
            }
        })
    }
}

/// A new connection, with the session settings every operation relies on: commits that
/// wait for the WAL, and the timeouts that bound every wait (see [`PgQueue::LOCK_TIMEOUT`]
/// and the constants after it).
pub(crate) fn session(config: &Config, tls: &MakeRustlsConnect) -> Result<Client> {
    let mut client = config.connect(tls.clone())?;
    client.batch_execute(&format!(
        "SET synchronous_commit = on; SET lock_timeout = {}; SET statement_timeout = {}; \
         SET idle_in_transaction_session_timeout = {}",
        PgQueue::LOCK_TIMEOUT.as_millis(),
        PgQueue::STATEMENT_TIMEOUT.as_millis(),
        PgQueue::IDLE_IN_TRANSACTION_TIMEOUT.as_millis()
    ))?;
    Ok(client)
}

/// [`PgQueue::interrupter`]: the cancel token of the connection open now.
struct Interrupter(Arc<Mutex<Option<CancelToken>>>, MakeRustlsConnect);

impl crate::interrupt::Interrupt for Interrupter {
    fn interrupt(&self) {
        let token = self.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(token) = token {
            // A connection of its own, to send the request; a failure leaves the statement
            // to its timeout.
            let _ = token.cancel_query(self.1.clone());
        }
    }
}

/// The URL of `config` without its password, for messages and errors.
fn describe(config: &Config) -> String {
    use postgres::config::Host;
    let user = config.get_user().map(|u| format!("{u}@")).unwrap_or_default();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let host = match host {
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            };
            match config.get_ports().get(i).or(config.get_ports().first()) {
                Some(port) => format!("{host}:{port}"),
                None => host,
            }
        })
        .collect();
    let db = config.get_dbname().unwrap_or_default();
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

#[cfg(test)]
impl PgQueue {
    /// Runs `sql` outside any operation, for tests that look under (or tamper with) the store.
    pub(crate) fn raw(&self, sql: &str) -> Result<()> {
        Ok(self.conn.borrow_mut().client.batch_execute(sql)?)
    }

    /// The rows of `sql`, for tests that look under the store.
    pub(crate) fn raw_query(&self, sql: &str) -> Result<Vec<Row>> {
        Ok(self.conn.borrow_mut().client.query(sql, &[])?)
    }
}
