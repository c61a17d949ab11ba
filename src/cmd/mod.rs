//! One module per subcommand. Each exposes `Args` (its clap flags) and
//! `run(Args) -> Result<ExitCode, CliError>`.
//!
//! Exit statuses, for every command: 0 success; 1 the operation was refused or failed (a
//! conflict, a missing job, an unusable database, audit violations); 2 a flag is wrong (the
//! message names it). `retryq work` adds 128 + N for a second signal N.

pub mod audit;
pub mod bench;
pub mod cancel;
pub mod check;
pub mod conform;
pub mod dead;
pub mod duration;
pub mod enqueue;
pub mod error;
pub mod explore;
pub mod get;
pub mod history;
pub mod list;
pub mod redrive;
pub mod replay;
pub mod serve_demo;
pub mod simulate;
pub mod stats;
pub mod trampoline;
pub mod usage;
pub mod verify;
pub mod view;
pub mod work;

use std::path::{Path, PathBuf};

use retryq::{MAX_ID_BYTES, MAX_INT, OpenOptions, Queue};
use rusqlite::ErrorCode;

use crate::out::outln;

pub use error::CliError;

/// `tests/traces` under the working directory, or else under this checkout: where the
/// regression cases live.
pub fn default_traces() -> PathBuf {
    let here = PathBuf::from("tests/traces");
    if here.is_dir() { here } else { Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces") }
}

/// The database file every operating command works on.
#[derive(clap::Args, Debug)]
pub struct Db {
    /// The database file.
    #[arg(long, value_name = "PATH", env = "RETRYQ_DB", default_value = "./retryq.db")]
    pub db: PathBuf,
}

impl Db {
    /// Opens an existing database for reading only: never creates, never writes.
    pub fn open_read(&self) -> Result<Queue, CliError> {
        self.must_exist("read-only commands never create one")?;
        let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        Queue::open_with(&self.db, &options).map_err(|e| match e.kind() {
            retryq::ErrorKind::Storage if read_only_code(&e) => CliError::Database(format!(
                "{}: cannot read: a database in write-ahead-log mode needs its -wal and -shm files, \
                 and they are missing and cannot be created here (the directory is read-only for this user)",
                self.db.display()
            )),
            _ => self.explain(e),
        })
    }

    /// Opens the database for writing; creates it (file and schema) only if `create`.
    pub fn open_write(&self, create: bool) -> Result<Queue, CliError> {
        if !create {
            self.must_exist("`retryq enqueue` creates one")?;
        }
        let options = OpenOptions { create, ..OpenOptions::default() };
        Queue::open_with(&self.db, &options).map_err(|e| self.explain(e))
    }

    /// Whether the file exists; what kind of file it is, the library checks for every
    /// command (`retryq::Refusal`).
    fn must_exist(&self, hint: &str) -> Result<(), CliError> {
        match std::fs::metadata(&self.db) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Err(CliError::Database(format!("{}: no such database ({hint})", self.db.display())))
            }
            Err(e) => Err(CliError::Database(format!("{}: {e}", self.db.display()))),
        }
    }

    /// A queue error in an operator's words, naming the file.
    pub fn explain(&self, error: retryq::Error) -> CliError {
        explain(&self.db, error)
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
    CliError::Database(format!("{path}: {what} ({e})"))
}

fn read_only_code(error: &retryq::Error) -> bool {
    matches!(error, retryq::Error::Storage(e) if e.sqlite_error_code() == Some(ErrorCode::ReadOnly))
}

/// An id or worker name flag: 1 to 256 bytes.
pub fn name(value: &str) -> Result<String, String> {
    match value.len() {
        0 => Err("must not be empty".into()),
        n if n > MAX_ID_BYTES => Err(format!("is {n} bytes; at most {MAX_ID_BYTES} allowed")),
        _ => Ok(value.to_owned()),
    }
}

/// The system clock, or a clear error.
pub fn now() -> Result<u64, CliError> {
    retryq_worker::now_ms().map_err(|e| CliError::Other(e.to_string()))
}

/// `--deadline UNIX_MS` or `--ttl DURATION`: exactly one.
#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct Deadline {
    /// The new deadline, in Unix milliseconds: no attempt starts at or after it.
    #[arg(long, value_name = "UNIX_MS", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_INT))]
    deadline: Option<u64>,
    /// The deadline as a duration from now: 90s, 1h, 1h30m, 7d, or a bare number of
    /// milliseconds.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = duration::positive)]
    ttl: Option<u64>,
}

impl Deadline {
    /// The deadline in Unix milliseconds, which must be after `now`.
    pub fn at(&self, now: u64) -> Result<u64, CliError> {
        match (self.deadline, self.ttl) {
            (Some(deadline), _) if deadline <= now => Err(CliError::flag(
                "--deadline",
                format!("{deadline} is not after now ({now} ms since 1970)"),
            )),
            (Some(deadline), _) => Ok(deadline),
            (None, Some(ttl)) => match now.checked_add(ttl) {
                Some(deadline) if deadline <= MAX_INT => Ok(deadline),
                _ => Err(CliError::flag("--ttl", format!("{ttl} ms from now passes 2^53-1"))),
            },
            (None, None) => Err(CliError::Usage("one of --deadline and --ttl is required".into())),
        }
    }
}

/// Prints one JSON value as a line.
pub fn print_json(value: &impl serde::Serialize) -> Result<(), CliError> {
    let line = serde_json::to_string(value).map_err(|e| CliError::Other(e.to_string()))?;
    outln!("{line}")
}
