//! `--db`: which store every operating command works on — a SQLite file or a PostgreSQL
//! database — how it is opened for reading or writing, and how a storage failure is told to
//! an operator; and `--clock`: whose clock gives `now`.
//!
//! `--clock` is offered only by the commands whose work takes a time — those that write one
//! (`enqueue`, `work`, `redrive`, `cancel`, `prune`), `stats`, whose expired leases and
//! oldest age are counted at `now`, and `serve`, which does both — and means something only on PostgreSQL: a SQLite
//! database is on this host, and so is its clock. Given with a SQLite database it is ignored
//! with a one-line warning rather than refused, so that one command line (or a unit file's)
//! serves both stores; the flags that read nothing of a time (`get`, `list`, `dead`,
//! `history`, `audit`) do not offer it at all.

use std::path::{Path, PathBuf};

use retryq::{Backend, OpenOptions, PgQueue, Queue};
use rusqlite::ErrorCode;

use super::error::CliError;
use crate::out::noteln;

/// The store every operating command works on.
#[derive(clap::Args, Debug)]
pub struct Db {
    /// The database: a SQLite file, or a PostgreSQL URL (`postgres://user@host/dbname`) or
    /// key=value string (`host=h dbname=d`). A password is shown as `***` wherever --db is.
    #[arg(long, value_name = "PATH|URL", env = "RETRYQ_DB", default_value = "./retryq.db")]
    pub db: String,
    /// SQLite only: how long a write waits for another process's write lock before the
    /// command gives up, exit 75, nothing written (PostgreSQL waits its lock_timeout, 2s).
    #[arg(long, value_name = "DURATION", env = "RETRYQ_BUSY_TIMEOUT", default_value = "10s", value_parser = super::duration::parse_ms)]
    pub busy_timeout: u64,
}

/// `--clock`, for the commands whose work takes a time (see the module's doc).
#[derive(clap::Args, Debug)]
pub struct ClockFlag {
    /// PostgreSQL only (SQLite uses this host's clock): whose clock gives `now`, the
    /// server's (`server`, the default: hosts with skewed clocks then agree on every lease)
    /// or this host's (`local`).
    #[arg(long, value_name = "WHOSE", value_enum)]
    clock: Option<Clock>,
}

/// Whose clock gives an operation's `now`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    // The variants have no doc comments on purpose: clap would list them with their help
    // on lines of their own, and lay out every flag's help that way.
    // The database server's, read when the operation starts (PostgreSQL).
    Server,
    // This host's.
    Local,
}

impl Clock {
    /// The flag's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Clock::Server => "server",
            Clock::Local => "local",
        }
    }
}

/// What `--db` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A SQLite file.
    File(PathBuf),
    /// A PostgreSQL database, by its URL.
    Postgres(String),
}

impl Target {
    /// A `postgres://` or `postgresql://` URL, or a libpq key=value string that starts with
    /// one of libpq's keywords (`host=db.internal dbname=jobs user=retryq`), names a
    /// PostgreSQL database; anything else is a file path.
    pub fn of(db: &str) -> Target {
        if db.starts_with("postgres://") || db.starts_with("postgresql://") || retryq::is_conninfo(db) {
            Target::Postgres(db.to_owned())
        } else {
            Target::File(PathBuf::from(db))
        }
    }
}

impl Db {
    /// What `--db` names.
    pub fn target(&self) -> Target {
        Target::of(&self.db)
    }

    /// The SQLite file, for what only a file has (its size limit, say); `None` on PostgreSQL.
    pub fn file(&self) -> Option<PathBuf> {
        match self.target() {
            Target::File(path) => Some(path),
            Target::Postgres(_) => None,
        }
    }

    /// Opens an existing store for reading only: never creates, never writes.
    pub fn open_read(&self) -> Result<Box<dyn Backend>, CliError> {
        match self.target() {
            Target::File(path) => {
                must_exist(&path, "read-only commands never create one")?;
                let options = OpenOptions {
                    read_only: true,
                    create: false,
                    busy_timeout: self.busy(),
                    ..OpenOptions::default()
                };
                let queue = Queue::open_with(&path, &options).map_err(|e| match e.kind() {
                    retryq::ErrorKind::Storage if read_only_code(&e) => CliError::Database(format!(
                        "{}: cannot read: a database in write-ahead-log mode needs its -wal and -shm files, \
                         and they are missing and cannot be created here (the directory is read-only for this user)",
                        path.display()
                    )),
                    _ => self.explain(e),
                })?;
                Ok(Box::new(queue))
            }
            Target::Postgres(url) => self.connect(&url, false),
        }
    }

    /// Opens the store for writing; creates it (a file and its schema, or the schema in an
    /// empty PostgreSQL database) only if `create`.
    pub fn open_write(&self, create: bool) -> Result<Box<dyn Backend>, CliError> {
        match self.target() {
            Target::File(path) => Ok(Box::new(self.open_file(&path, create)?)),
            Target::Postgres(url) => self.connect(&url, create),
        }
    }

    /// The SQLite queue itself, for writing.
    pub fn open_file(&self, path: &Path, create: bool) -> Result<Queue, CliError> {
        if !create {
            must_exist(path, "`retryq enqueue` creates one")?;
        }
        let options = OpenOptions { create, busy_timeout: self.busy(), ..OpenOptions::default() };
        Queue::open_with(path, &options).map_err(|e| self.explain(e))
    }

    fn busy(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.busy_timeout)
    }

    fn connect(&self, url: &str, create: bool) -> Result<Box<dyn Backend>, CliError> {
        let queue = if create { PgQueue::connect(url) } else { PgQueue::connect_existing(url) };
        Ok(Box::new(queue.map_err(|e| self.explain(e))?))
    }

    /// A store error in an operator's words, naming `--db`.
    pub fn explain(&self, error: retryq::Error) -> CliError {
        match self.target() {
            Target::File(path) => explain(&path, error),
            Target::Postgres(url) => explain_postgres(&url, error),
        }
    }
}

impl ClockFlag {
    /// Whose clock: the server's unless `--clock local`. Said once, on standard error, when
    /// `--clock` was given for a SQLite database, which has no other clock than this host's.
    pub fn whose(&self, db: &Db) -> Clock {
        if let (Some(clock), Some(path)) = (self.clock, db.file()) {
            noteln!(
                "retryq: warning: --clock {} is ignored: it applies to PostgreSQL only, and {} is a \
                 SQLite database, which uses this host's clock",
                clock.as_str(),
                path.display()
            );
        }
        self.clock.unwrap_or(Clock::Server)
    }

    /// The operation's `now`: the server's clock on PostgreSQL unless `--clock local`, this
    /// host's otherwise.
    pub fn now(&self, db: &Db, store: &dyn Backend) -> Result<u64, CliError> {
        now_by(self.whose(db), store).map_err(|e| match e {
            NowError::Store(e) => db.explain(e),
            NowError::Clock(why) => CliError::Other(why),
        })
    }
}

/// Why `now` could not be read: the server's clock, or this host's.
pub enum NowError {
    /// The store failed to give the server's time.
    Store(retryq::Error),
    /// This host's clock is unusable.
    Clock(String),
}

/// `now` by `whose` clock: the server's where the store keeps one (PostgreSQL), else this
/// host's. For a process that reads it many times (`serve`), `whose` is decided once.
pub fn now_by(whose: Clock, store: &dyn Backend) -> Result<u64, NowError> {
    if whose == Clock::Server
        && let Some(now) = store.server_now().map_err(NowError::Store)?
    {
        return Ok(now);
    }
    retryq_worker::now_ms().map_err(|e| NowError::Clock(e.to_string()))
}

/// Whether the file exists; what kind of file it is, the library checks for every command
/// (`retryq::Refusal`).
fn must_exist(path: &Path, hint: &str) -> Result<(), CliError> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(CliError::Database(format!("{}: no such database ({hint})", path.display())))
        }
        Err(e) => Err(CliError::Database(format!("{}: {e}", path.display()))),
    }
}

/// Storage failures say what happened to the file and that nothing was half-written (every
/// operation is one transaction); the queue's own refusals pass through.
pub fn explain(path: &Path, error: retryq::Error) -> CliError {
    let path = path.display();
    let retryq::Error::Storage(e) = &error else {
        return match error {
            retryq::Error::NotRetryq { .. }
            | retryq::Error::NewerSchema { .. }
            | retryq::Error::Refused { .. }
            | retryq::Error::Corrupt(_) => {
                CliError::Database(format!("{error}; the file was left as it was"))
            }
            other => CliError::Queue(other),
        };
    };
    let what = match e.sqlite_error_code() {
        Some(ErrorCode::ReadOnly) => {
            "the database is read-only (the file, its directory or the mount): nothing was written"
        }
        Some(ErrorCode::DiskFull) => "the disk or the database is full: nothing was written",
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "another process held the database's lock for too long: nothing was written"
        }
        Some(ErrorCode::CannotOpen) => "cannot open the database file (no such directory, or no permission)",
        Some(ErrorCode::PermissionDenied) => "permission denied",
        Some(ErrorCode::NotADatabase) => "not a SQLite database; the file was left as it was",
        Some(ErrorCode::DatabaseCorrupt) => "the database file is corrupt",
        Some(ErrorCode::SystemIoFailure) => {
            "an I/O error (the disk may be full or failing): nothing was written"
        }
        _ => return CliError::Database(format!("{path}: {error}")),
    };
    let text = format!("{path}: {what} ({e})");
    if error.is_transient() { CliError::TryLater(text) } else { CliError::Database(text) }
}

/// A PostgreSQL failure naming `--db` (without its password): the server's refusals (no such
/// database, wrong credentials, unreachable) and a database of another program change
/// nothing; the queue's own refusals pass through.
fn explain_postgres(url: &str, error: retryq::Error) -> CliError {
    let shown = retryq::redacted(url);
    match error {
        retryq::Error::Postgres(ref e) => {
            let text = format!("--db {shown}: {}; nothing was written", postgres_reason(e));
            if error.is_transient() { CliError::TryLater(text) } else { CliError::Database(text) }
        }
        retryq::Error::NotRetryq { .. }
        | retryq::Error::NewerSchema { .. }
        | retryq::Error::Refused { .. }
        | retryq::Error::Corrupt(_) => {
            CliError::Database(format!("--db {shown}: {error}; the database was left as it was"))
        }
        other => CliError::Queue(other),
    }
}

/// The server's own message where it sent one (it names what is wrong: the role, the
/// database, the password), else the client's (a refused or lost connection).
fn postgres_reason(e: &retryq::postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}

fn read_only_code(error: &retryq::Error) -> bool {
    matches!(error, retryq::Error::Storage(e) if e.sqlite_error_code() == Some(ErrorCode::ReadOnly))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_postgres_and_anything_else_a_file() {
        assert_eq!(Target::of("postgres://u@h/d"), Target::Postgres("postgres://u@h/d".into()));
        assert_eq!(Target::of("postgresql://h/d"), Target::Postgres("postgresql://h/d".into()));
        assert_eq!(Target::of("./postgres.db"), Target::File("./postgres.db".into()));
    }

    #[test]
    fn a_key_value_string_names_postgres() {
        assert!(matches!(Target::of("host=h dbname=d"), Target::Postgres(_)));
        assert!(matches!(Target::of("dbname = d"), Target::Postgres(_)));
        assert!(matches!(Target::of("weird=name.db"), Target::File(_)));
        assert!(matches!(Target::of("q.db"), Target::File(_)));
    }
}
