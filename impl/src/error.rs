//! The ways an operation can refuse or fail. Every refusal changes nothing.

use std::path::PathBuf;

use crate::job::Status;
use crate::refusal::Refusal;

/// The result of a queue operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a queue operation did not apply. Each variant but [`Error::Storage`] is a decision
/// the queue made on purpose, and left the database exactly as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument was out of its range or of the wrong shape. Arguments are checked before
    /// any lookup, so this comes first even when the job does not exist.
    #[error("invalid input: {field}: {reason}")]
    InvalidInput {
        /// The argument, by its SPEC name.
        field: &'static str,
        /// What was wrong with it.
        reason: String,
    },
    /// `enqueue` of an existing id with a different payload.
    #[error("conflict: job {id:?} already exists with a different payload")]
    Conflict {
        /// The job already stored.
        id: String,
    },
    /// No job has this id.
    #[error("not found: no job {id:?}")]
    NotFound {
        /// The job asked for.
        id: String,
    },
    /// The caller does not hold the lease it names: the job is not leased, is leased to
    /// another worker, or is on another attempt (the attempt is the fencing token).
    #[error("lease lost: job {id:?} attempt {attempt} is not leased to {worker:?}")]
    LeaseLost {
        /// The job named.
        id: String,
        /// The worker that claimed to hold it.
        worker: String,
        /// The attempt it named.
        attempt: u64,
    },
    /// `redrive` of a job that is not `dead`.
    #[error("not dead: job {id:?} is {status}")]
    NotDead {
        /// The job named.
        id: String,
        /// Where it is instead.
        status: Status,
    },
    /// `now` is before the time the lease was claimed at.
    #[error("clock went backwards: now {now} is before the claim at {claimed_at}")]
    ClockWentBackwards {
        /// The completion's time.
        now: u64,
        /// The claim's time.
        claimed_at: u64,
    },
    /// `heartbeat` at or after the job's deadline: no lease is extended past the time an
    /// attempt may start, so a lease ends by `deadline − 1 + lease_ms` (SPEC 3.12, 4.11).
    #[error("deadline passed: job {id:?} cannot be heartbeaten at or after its deadline")]
    DeadlinePassed {
        /// The job named.
        id: String,
    },
    /// `heartbeat` of a job an operator asked to stop (SPEC 3.12, 3.13): the holder stops
    /// its attempt and reports; the job ends `dead(cancelled)` unless that report ends it.
    #[error("cancelled: job {id:?} has a cancel request; stop the attempt")]
    Cancelled {
        /// The job named.
        id: String,
    },
    /// `redrive` or `cancel` of a pruned id: only its tombstone is left (SPEC 3.14, 6.30).
    #[error("pruned: job {id:?} was pruned; only its tombstone is left")]
    Pruned {
        /// The id named.
        id: String,
    },
    /// `cancel` of a job that is already `done` or `dead`: there is nothing left to stop.
    #[error("not cancellable: job {id:?} is {status}")]
    NotCancellable {
        /// The job named.
        id: String,
        /// Where it is instead.
        status: Status,
    },
    /// `run_now` of a job that is not `pending` (SPEC 3.18): a leased job's attempt is
    /// running; a done or dead one has ended (a redrive brings a dead one back).
    #[error("not pending: job {id:?} is {status}")]
    NotPending {
        /// The job named.
        id: String,
        /// Where it is instead.
        status: Status,
    },
    /// The file is not a retryq database (another program's SQLite file, or not SQLite at
    /// all). It was not changed.
    #[error("{}: not a retryq database: {why}", path.display())]
    NotRetryq {
        /// The file.
        path: PathBuf,
        /// What gave it away.
        why: String,
    },
    /// The file was written by a newer retryq. It was not changed.
    #[error("{}: schema version {found} is newer than this build of retryq supports ({supported})", path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The schema version in the file.
        found: i64,
        /// The newest this build reads.
        supported: i64,
    },
    /// The path is not one retryq opens as a database: not a regular file, a file with
    /// several names, a mount point of its own (see [`Refusal`]). Nothing was opened.
    #[error("{}: {why}", path.display())]
    Refused {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        why: Refusal,
    },
    /// A row holds a value no version of retryq writes.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// SQLite failed: the disk, the file, or a lock.
    #[error("storage: {0}")]
    Storage(#[from] rusqlite::Error),
    /// PostgreSQL failed (feature `postgres`): the connection, the server, or a constraint the
    /// schema enforces. Like [`Error::Storage`], of kind [`ErrorKind::Storage`].
    #[cfg(feature = "postgres")]
    #[error("storage: {}", postgres_text(.0))]
    Postgres(#[from] postgres::Error),
    /// sqlx failed (feature `sqlx`), in an enqueue in the application's transaction
    /// ([`PgQueue::enqueue_in_sqlx`](crate::PgQueue::enqueue_in_sqlx)). Of kind
    /// [`ErrorKind::Storage`].
    #[cfg(feature = "sqlx")]
    #[error("storage: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// The thread that owns the queue of an `AsyncQueue` (feature `tokio`) is gone: the
    /// queue was closed, its thread could not be started, or it stopped on a panic. The
    /// operation was not run; no later one will be.
    #[error("the queue is closed")]
    Closed,
    /// The clock the store was opened with cannot be read as the queue's time (before 1970,
    /// past 2^53 − 1 ms): the operation that needed `now` was not run.
    #[error("the clock: {0}")]
    Clock(#[from] retryq_core::ClockError),
}

/// The kind of an [`Error`], as SPEC section 5 names it (`invalid_input`, `conflict`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`Error::InvalidInput`]: `invalid_input`.
    InvalidInput,
    /// [`Error::Conflict`]: `conflict`.
    Conflict,
    /// [`Error::NotFound`]: `not_found`.
    NotFound,
    /// [`Error::LeaseLost`]: `lease_lost`.
    LeaseLost,
    /// [`Error::NotDead`]: `not_dead`.
    NotDead,
    /// [`Error::ClockWentBackwards`]: `clock_went_backwards`.
    ClockWentBackwards,
    /// [`Error::DeadlinePassed`]: `deadline_passed`.
    DeadlinePassed,
    /// [`Error::Cancelled`]: `cancelled`.
    Cancelled,
    /// [`Error::Pruned`]: `pruned`.
    Pruned,
    /// [`Error::NotCancellable`]: `not_cancellable`.
    NotCancellable,
    /// [`Error::NotPending`]: `not_pending`.
    NotPending,
    /// Everything the SPEC has no code for: a storage failure, a file not opened, a corrupt row.
    Storage,
}

impl ErrorKind {
    /// The code SPEC section 5 prints for this kind.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::Conflict => "conflict",
            ErrorKind::NotFound => "not_found",
            ErrorKind::LeaseLost => "lease_lost",
            ErrorKind::NotDead => "not_dead",
            ErrorKind::ClockWentBackwards => "clock_went_backwards",
            ErrorKind::DeadlinePassed => "deadline_passed",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Pruned => "pruned",
            ErrorKind::NotCancellable => "not_cancellable",
            ErrorKind::NotPending => "not_pending",
            ErrorKind::Storage => "storage",
        }
    }
}

impl Error {
    /// What kind of refusal this is.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::NotFound { .. } => ErrorKind::NotFound,
            Error::LeaseLost { .. } => ErrorKind::LeaseLost,
            Error::NotDead { .. } => ErrorKind::NotDead,
            Error::ClockWentBackwards { .. } => ErrorKind::ClockWentBackwards,
            Error::DeadlinePassed { .. } => ErrorKind::DeadlinePassed,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::Pruned { .. } => ErrorKind::Pruned,
            Error::NotCancellable { .. } => ErrorKind::NotCancellable,
            Error::NotPending { .. } => ErrorKind::NotPending,
            Error::NotRetryq { .. }
            | Error::NewerSchema { .. }
            | Error::Refused { .. }
            | Error::Corrupt(_)
            | Error::Storage(_)
            | Error::Closed
            | Error::Clock(_) => ErrorKind::Storage,
            #[cfg(feature = "postgres")]
            Error::Postgres(_) => ErrorKind::Storage,
            #[cfg(feature = "sqlx")]
            Error::Sqlx(_) => ErrorKind::Storage,
        }
    }

    /// A storage failure that may pass by itself, and changed nothing: another process held
    /// the write lock for longer than the busy timeout, or the disk (or the database's size
    /// limit) is full; on PostgreSQL, the connection or the server went away (a `PgQueue`
    /// connects again on its next operation), the server is short of a resource, or the
    /// transaction was rolled back by a deadlock or a serialization failure. The same
    /// operation may be tried again later.
    pub fn is_transient(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseLocked, DiskFull};
        match self {
            Error::Storage(e) => {
                matches!(e.sqlite_error_code(), Some(DatabaseBusy | DatabaseLocked | DiskFull))
            }
            #[cfg(feature = "postgres")]
            Error::Postgres(e) => postgres_transient(e),
            _ => false,
        }
    }

    /// The server's SQLSTATE for a PostgreSQL error it sent (`55P03` for a lock timeout,
    /// say); `None` for every other error.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            #[cfg(feature = "postgres")]
            Error::Postgres(e) => e.code().map(|code| code.code()),
            #[cfg(feature = "sqlx")]
            Error::Sqlx(e) => match e.as_database_error()?.code()? {
                std::borrow::Cow::Borrowed(code) => Some(code),
                std::borrow::Cow::Owned(_) => None,
            },
            _ => None,
        }
    }

    /// Whether this is a wait cut short: on PostgreSQL a lock timeout (55P03), a statement
    /// timeout or cancel (57014), or a session ended for idling in a transaction (25P03). A
    /// passing failure ([`Error::is_transient`]): nothing was committed.
    pub fn is_timeout(&self) -> bool {
        matches!(self.sqlstate(), Some("55P03" | "57014" | "25P03"))
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidInput { field, reason: reason.into() }
    }
}

/// The shared delay formula's refusal is the queue's `invalid_input`, field and reason
/// unchanged, so the codes and messages the command line and the replay traces print stay
/// what they were before the formula moved to `retryq-core`.
impl From<retryq_core::DelayError> for Error {
    fn from(e: retryq_core::DelayError) -> Error {
        Error::invalid(e.field(), e.reason())
    }
}

/// Why [`Queue::run_once`](crate::Queue::run_once) did not record an outcome.
///
/// In every case but [`RunError::Queue`] before the claim, an attempt was spent and the job
/// stays leased until its lease expires.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError<E> {
    /// The queue refused or failed (before the claim, or when recording the outcome).
    #[error(transparent)]
    Queue(#[from] Error),
    /// The clock read after sending was earlier than the one read before the claim. The
    /// result is not recorded; the job stays leased.
    #[error("clock went backwards during job {id:?} attempt {attempt}: {after} < {before}")]
    ClockWentBackwards {
        /// The job.
        id: String,
        /// The attempt left open.
        attempt: u64,
        /// The clock at the claim.
        before: u64,
        /// The clock after sending.
        after: u64,
    },
    /// The transport failed in a way it did not classify. Returned untouched; the job stays
    /// leased until its lease expires.
    #[error("job {id:?} attempt {attempt}: unclassified transport error")]
    Unclassified {
        /// The job.
        id: String,
        /// The attempt left open.
        attempt: u64,
        /// The transport's own error.
        #[source]
        error: E,
    },
}

#[cfg(feature = "postgres")]
/// Whether a PostgreSQL failure may pass by itself and changed nothing (see
/// [`Error::is_transient`]): the connection is gone (a `PgQueue`
/// connects again on its next operation), the server refused a connection or ran short of
/// a resource, or it rolled the transaction back (class 40: a deadlock, a serialization
/// failure).
fn postgres_transient(e: &postgres::Error) -> bool {
    let class = |class: &str| e.code().is_some_and(|code| code.code().starts_with(class));
    connection_lost(e)
        || class("40")
        || class("53")
        // lock_timeout, statement_timeout (or a cancel), idle_in_transaction_session_timeout:
        // the statement or the session was ended for waiting too long; nothing was committed.
        || e.code().is_some_and(|code| matches!(code.code(), "55P03" | "57014" | "25P03"))
}

/// A PostgreSQL error in words: the server's SQLSTATE and message (and detail) where the
/// server sent them — the client's own text is only "db error" — else the client's text and
/// its cause.
#[cfg(feature = "postgres")]
pub(crate) fn postgres_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("SQLSTATE {}: {}", db.code().code(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(" (");
                text.push_str(detail);
                text.push(')');
            }
            text
        }
        None => match std::error::Error::source(e) {
            Some(source) if !e.to_string().contains(&source.to_string()) => format!("{e}: {source}"),
            _ => e.to_string(),
        },
    }
}

/// Whether the connection is gone after `e`: closed, broken on the socket, or ended by the
/// server (class 08, or an administrator's or a crash's shutdown, 57P01 to 57P03). The
/// client may not have noticed yet when the error arrives, so a `PgQueue` takes this as its
/// cue to connect again before its next operation.
#[cfg(feature = "postgres")]
pub(crate) fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let code = code.code();
        // 25P03: the server ended the session for idling inside a transaction.
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "25P03");
    }
    // No SQLSTATE: the client's own failure; an I/O error on the socket is a lost connection.
    std::error::Error::source(e).is_some_and(|source| source.is::<std::io::Error>())
}
