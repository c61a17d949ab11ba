//! The `Queue` itself: its connection, how it is opened, its settings, and the two
//! transaction helpers every operation runs in. The operations live in the sibling modules,
//! one per SPEC operation, and all build on this one; nothing here knows of them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, FileControl, MAIN_DB, OpenFlags, Transaction, TransactionBehavior};

use super::checkpoint::Log;
use super::pace::Pace;
use crate::clock::Sources;
use crate::error::{Error, Result};
use crate::file;
use crate::input;
use crate::schema::{self, Found};
use crate::upgrade;

/// How hard a commit waits for the disk. The default is [`Synchronous::Full`]: a commit that
/// returned survives a power cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Synchronous {
    /// `PRAGMA synchronous = FULL`: every commit is on the disk before it returns.
    #[default]
    Full,
    /// `PRAGMA synchronous = NORMAL`: in WAL mode, commits since the last checkpoint may be
    /// lost on a power cut or OS crash (not on a process crash). Faster; an explicit choice.
    Normal,
}

/// How to open a database file.
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// How hard a commit waits for the disk (see [`Synchronous`]).
    pub synchronous: Synchronous,
    /// How long a write waits for another process's write lock before giving up.
    pub busy_timeout: Duration,
    /// Create the file (and the schema) if it does not exist.
    pub create: bool,
    /// Open for reading only: never creates, never writes, refuses an empty file. A file of
    /// schema 1 is read as it is (a read-write open upgrades it to schema 2 in place).
    pub read_only: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(10),
            create: true,
            read_only: false,
        }
    }
}

/// The timing parameters of claims and retries: SPEC section 5's `config`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// A claim leases the job until `now + lease_ms`. At least 1.
    pub lease_ms: u64,
    /// The first retry's window (SPEC section 2).
    pub base_ms: u64,
    /// The largest window.
    pub cap_ms: u64,
    /// The most jobs one claim or one reap ends (SPEC 3.3.1, 6.37), so that a backlog of
    /// jobs due to end is ended in bounded transactions. At least 1.
    pub reap_limit: u64,
}

/// [`Settings::reap_limit`]'s default (SPEC 3.11).
pub const DEFAULT_REAP_LIMIT: u64 = 1000;

impl Default for Settings {
    fn default() -> Self {
        Settings { lease_ms: 30_000, base_ms: 100, cap_ms: 1000, reap_limit: DEFAULT_REAP_LIMIT }
    }
}

impl Settings {
    /// Checks every field's range, naming the first that is out of it.
    pub fn validate(&self) -> Result<()> {
        input::int("lease_ms", self.lease_ms)?;
        if self.lease_ms == 0 {
            return Err(Error::invalid("lease_ms", "must be at least 1"));
        }
        input::int("base_ms", self.base_ms)?;
        input::int("cap_ms", self.cap_ms)?;
        input::int("reap_limit", self.reap_limit)?;
        if self.reap_limit == 0 {
            return Err(Error::invalid("reap_limit", "must be at least 1"));
        }
        Ok(())
    }
}

/// A durable retry queue in one SQLite database.
///
/// Several processes may open the same file: every write takes SQLite's write lock up front
/// (`BEGIN IMMEDIATE`) and waits up to the busy timeout for it.
pub struct Queue {
    pub(super) conn: Connection,
    path: PathBuf,
    pub(super) settings: Settings,
    /// The clock and the jitter of the operations that read them (`clocked.rs`).
    pub(crate) sources: Sources,
    /// What a bulk import has seen of the other writers (`pace.rs`).
    pub(super) pace: Pace,
    /// The write-ahead log this connection checkpoints (`checkpoint.rs`); `None` in memory
    /// and when opened for reading only.
    pub(super) log: Option<Log>,
    /// How long a write waits for another process's write lock.
    busy_timeout: Duration,
}

impl Queue {
    /// Opens (or creates) the database at `path` with the default durability.
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("jobs.db");
    /// let mut q = Queue::open(&path)?;
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// drop(q);
    /// // The job outlives the queue that stored it: a commit is on the disk when it returns.
    /// let q = Queue::open(&path)?;
    /// assert!(q.get("a")?.is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Queue> {
        Queue::open_with(path, &OpenOptions::default())
    }

    /// Opens the database at `path`.
    ///
    /// A file of schema 1 (written by contract 1.0's retryq) is upgraded to schema 2 in one
    /// transaction, every job and history entry kept, unless the open is read-only. A file
    /// that is not a retryq database, or one of a newer schema, is refused and left
    /// untouched; so is a path SQLite must not open as a database (anything but a regular
    /// file, a file with several names, a mount point of its own: see [`crate::Refusal`]).
    /// `path` is always a path, never a SQLite URI or `:memory:`.
    ///
    /// ```
    /// use retryq::{OpenOptions, Queue};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("jobs.db");
    /// // Reading only never creates: a missing file is refused rather than made empty.
    /// let read_only = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
    /// assert!(Queue::open_with(&path, &read_only).is_err());
    /// Queue::open(&path)?;
    /// let q = Queue::open_with(&path, &read_only)?;
    /// assert_eq!(q.stats(0)?.pending, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Queue> {
        let path = path.as_ref();
        let checked = file::before_open(path)?;
        let flags = if options.read_only {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } else if options.create {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(checked.sqlite_path(), flags)?;
        file::after_open(path, &checked)?;
        Queue::prepare(conn, path.to_path_buf(), options, true)
    }

    /// A fresh queue in memory, for tests: nothing survives dropping it.
    ///
    /// It is a private database of SQLite's `memdb` VFS rather than `:memory:`. Both keep
    /// everything in RAM; but a `:memory:` database keeps every page in its page cache, and
    /// each commit then walks that cache, so a claim costs twice as much at 1,000,000 jobs
    /// as at 1,000. Under `memdb` the pages live in one buffer behind an ordinary bounded
    /// cache, and a claim costs the same at any size (see `docs/benchmarks.md`).
    ///
    /// ```
    /// use retryq::{NewJob, Queue};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// assert_eq!(q.path(), std::path::Path::new(":memory:"));
    /// q.enqueue(&NewJob { id: "a", payload: "{}", max_attempts: 3, deadline: 60000, now: 0, ..NewJob::default() })?;
    /// assert_eq!(q.stats(0)?.pending, 1);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn open_in_memory() -> Result<Queue> {
        // rusqlite's default flags read URIs; no leading '/': the database is private to this
        // connection.
        let conn = Connection::open("file:retryq?vfs=memdb")?;
        lift_memdb_size_limit(&conn)?;
        Queue::prepare(conn, PathBuf::from(":memory:"), &OpenOptions::default(), false)
    }

    fn prepare(mut conn: Connection, path: PathBuf, options: &OpenOptions, on_disk: bool) -> Result<Queue> {
        super::busy::wait_for_locks(&mut conn, options.busy_timeout)?;
        match schema::inspect(&conn, &path)? {
            Found::Empty => {
                if options.read_only {
                    return Err(Error::NotRetryq { path, why: "the database is empty".into() });
                }
                schema::set_auto_vacuum(&conn)?;
                if on_disk {
                    schema::set_wal(&conn)?;
                }
                schema::create(&mut conn, &path)?;
            }
            Found::Older(version) if options.read_only => upgrade::read_old(&conn, version)?,
            Found::Older(_) => {
                if on_disk {
                    schema::set_wal(&conn)?;
                }
                schema::upgrade(&mut conn, &path)?;
            }
            Found::Retryq => {
                if on_disk && !options.read_only {
                    schema::set_wal(&conn)?;
                }
            }
        }
        let synchronous = match options.synchronous {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        };
        conn.pragma_update(None, "synchronous", synchronous)?;
        conn.set_prepared_statement_cache_capacity(32);
        // The planner's stability guarantee: a plan never depends on a bound value. Without
        // it SQLite marks a statement with a `LIMIT ?` to be compiled again whenever that
        // value is bound anew, and rusqlite's cache clears the bindings of each statement it
        // takes back — so every claim recompiled its statements, each write on `jobs` with all
        // of the table's triggers (docs/benchmarks.md). No plan of ours reads a bound value:
        // each is pinned by a test.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        let log = if on_disk && !options.read_only { Some(Log::watch(&mut conn)?) } else { None };
        Ok(Queue {
            conn,
            path,
            settings: Settings::default(),
            sources: Sources::default(),
            pace: Pace::default(),
            log,
            busy_timeout: options.busy_timeout,
        })
    }

    /// Calls `wake` whenever another commit may have made a job due, until the listener is
    /// dropped: on Linux by inotify on the file's directory (`listen.rs`); `None` for a queue
    /// in memory, which no other process writes, and off Linux.
    pub fn listen(&self, wake: crate::Wake) -> std::io::Result<Option<crate::Listener>> {
        if self.path == Path::new(":memory:") {
            return Ok(None);
        }
        crate::listen::sqlite(&self.path, wake)
    }

    /// The file this queue is on (`:memory:` for an in-memory one).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lease and backoff parameters later operations use.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Sets the lease and backoff parameters for later operations.
    ///
    /// ```
    /// use retryq::{Queue, Settings};
    ///
    /// let mut q = Queue::open_in_memory()?;
    /// q.set_settings(Settings { lease_ms: 5_000, base_ms: 200, cap_ms: 10_000, ..Settings::default() })?;
    /// assert_eq!(q.settings().lease_ms, 5_000);
    /// // A lease of 0 ms would expire as it is granted: refused, and the settings stay.
    /// assert!(q.set_settings(Settings { lease_ms: 0, ..q.settings() }).is_err());
    /// assert_eq!(q.settings().base_ms, 200);
    /// # Ok::<(), retryq::Error>(())
    /// ```
    pub fn set_settings(&mut self, settings: Settings) -> Result<()> {
        settings.validate()?;
        self.settings = settings;
        Ok(())
    }

    /// Runs `f` in one write transaction: committed if it returns `Ok`, rolled back (so
    /// nothing changed) if it returns `Err`.
    pub(super) fn write<T>(&mut self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = f(&tx)?;
        tx.commit()?;
        if let Some(log) = &mut self.log {
            log.after_commit(&mut self.conn, self.busy_timeout);
        }
        Ok(value)
    }

    /// Runs `f` in one read transaction, so that it sees a single snapshot even when it runs
    /// several statements.
    ///
    /// `unchecked_transaction` is what lets a read take `&self`: the connection is owned by
    /// this `Queue`, which is not `Sync`, and every transaction it opens ends before its method
    /// returns, so no transaction can be open here already. The transaction is deferred: it
    /// takes no write lock.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let tx = self.conn.unchecked_transaction()?;
        let value = f(&tx)?;
        tx.finish()?;
        Ok(value)
    }
}

/// A `memdb` database refuses to grow past 1 GiB unless told otherwise; an in-memory queue
/// may grow as far as RAM allows, as a `:memory:` one does.
fn lift_memdb_size_limit(conn: &Connection) -> Result<()> {
    let mut limit: i64 = i64::MAX;
    conn.file_control(Some(MAIN_DB), FileControl::SizeLimit(&mut limit))?;
    Ok(())
}

#[cfg(test)]
impl Queue {
    /// The connection itself, for tests that look under (or tamper with) the store.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// The connection, for tests that install a hook on it.
    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A queue in memory with the SPEC's worked-trace settings.
    pub(crate) fn queue() -> Queue {
        let mut q = Queue::open_in_memory().expect("memory queue");
        q.set_settings(Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, ..Settings::default() })
            .expect("settings");
        q
    }

    #[test]
    fn a_file_queue_is_durable_by_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path().join("q.db")).expect("open");
        let pragma = |name: &str| -> String {
            q.conn
                .pragma_query_value(None, name, |row| row.get::<_, rusqlite::types::Value>(0))
                .map(|v| format!("{v:?}"))
                .expect("pragma")
        };
        assert_eq!(pragma("journal_mode"), "Text(\"wal\")");
        assert_eq!(pragma("synchronous"), "Integer(2)", "synchronous=FULL");
        let normal = OpenOptions { synchronous: Synchronous::Normal, ..OpenOptions::default() };
        let q = Queue::open_with(dir.path().join("q.db"), &normal).expect("open");
        let sync: i64 = q.conn.pragma_query_value(None, "synchronous", |row| row.get(0)).expect("pragma");
        assert_eq!(sync, 1, "synchronous=NORMAL only when asked for");
    }

    #[test]
    fn settings_are_validated() {
        let mut q = queue();
        let err = q.set_settings(Settings { lease_ms: 0, ..Settings::default() }).unwrap_err();
        assert!(err.to_string().contains("lease_ms"), "{err}");
        let err = q.set_settings(Settings { cap_ms: 1 << 53, ..Settings::default() }).unwrap_err();
        assert!(err.to_string().contains("cap_ms"), "{err}");
        assert_eq!(
            q.settings(),
            Settings { lease_ms: 1000, base_ms: 100, cap_ms: 250, ..Settings::default() }
        );
    }
}
