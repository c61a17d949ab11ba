//! retryq: a durable retry queue on SQLite.
//!
//! Retrying is not a button that erases failure. Every job carries a budget — how many
//! attempts (`max_attempts`) and until when (`deadline`) — and that budget lives in the
//! database, so it survives restarts and crashes:
//!
//! - `attempts` counts claims and never rolls back: a claim is durable before anything is
//!   sent, so a process that dies after claiming has spent that attempt;
//! - a deadline never moves: only an operator's [`Queue::redrive`] grants a new budget;
//! - nothing is silently dropped: every job ends `done` or `dead` with a [`DeadReason`];
//! - backoff is a stored reservation (`available_at`), never a sleep holding a lock.
//!
//! Time is never read behind the caller's back: every operation takes `now` (integer
//! milliseconds on one shared base) from the caller, and [`Queue::run_once`] takes a clock.
//!
//! ```
//! use retryq::{Claimed, NewJob, Outcome, Queue, Ran};
//!
//! let mut queue = Queue::open_in_memory()?;
//! queue.enqueue(&NewJob { id: "order-7", payload: "{}", max_attempts: 5, deadline: 700, now: 0, ..NewJob::default() })?;
//! let send = |_: &Claimed| Ok::<_, std::io::Error>(Outcome::Ok);
//! let ran = queue.run_once("w1", || 10, send, 0.5)?;
//! assert_eq!(ran, Ran::Done { id: "order-7".into(), attempt: 1 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Which entry point
//!
//! All of them are the same queue on the same file, with the same rules; they differ in who
//! holds the connection and who waits for it.
//!
//! - [`Queue`]: synchronous, one connection, each call one transaction that returns when it
//!   has committed. For worker threads and processes, command-line tools, tests: any code
//!   that may block.
//! - `AsyncQueue` (feature `tokio`): the same operations for async code. The `Queue` lives on
//!   a thread of its own and each call awaits its answer, so neither a commit's fsync nor
//!   the busy timeout stalls a runtime thread; `run_once` takes a transport that returns a
//!   future. Clone one handle for every task: SQLite takes one writer at a time anyway.
//! - [`enqueue_in`] (after [`install`]): when a job must commit, or roll back, together with
//!   the application's own rows in the same SQLite file — an order and its delivery, never
//!   one without the other. The application's connection and transaction do the writing;
//!   any of the others works the jobs off.
//! - The `retryq work` command (the `retryq-cli` package): when the transport is a command
//!   or an HTTP endpoint, a ready worker — signals, timeouts, sleeping until the next due
//!   job, the HTTP status table and pushback — instead of a `run_once` loop of your own.
//!
//! `PgQueue` (feature `postgres`) is the same queue on a PostgreSQL database rather than a
//! file, for workers on several machines: the same operations, the same answers, each one
//! transaction. [`Backend`] is the trait both stores implement, and [`open_backend`] opens
//! whichever a `postgres://` URL or a file path names.
//!
//! The project's `docs/library.md` says more, and `impl/examples/` has one program of each.
//!
//! The semantics are those of the project's `SPEC.md`; this crate is one of its two readings
//! (the other, the model, never shares code with it).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(feature = "tokio")]
mod asynch;
mod audit;
mod backend;
mod clock;
mod clocked;
mod ddl;
mod delay;
mod enqueue_job;
mod error;
mod file;
mod input;
mod interrupt;
mod job;
#[cfg(feature = "serde")]
pub mod json;
mod listen;
mod notes;
mod outbox;
#[cfg(test)]
mod pause_tests;
#[cfg(feature = "postgres")]
mod pg;
mod queue;
mod redact;
mod refusal;
mod schema;
mod upgrade;

#[cfg(feature = "tokio")]
pub use asynch::AsyncQueue;
pub use audit::{Audit, Check, Violation};
pub use backend::{Backend, BackendMut, open_backend};
pub use clock::{
    Clock, ClockError, JUMP_MS, Jitter, ManualClock, ServerClock, ServerTime, SystemClock, UniformJitter,
    now_ms,
};
pub use ddl::{APPLICATION_ID, PG_SCHEMA_VERSION, SCHEMA_VERSION};
pub use delay::{retry_delay, validate_jitter};
pub use enqueue_job::Enqueue;
pub use error::{Error, ErrorKind, Result, RunError};
pub use input::{
    MAX_ATTEMPTS, MAX_ID_BYTES, MAX_INT, MAX_KIND_BYTES, MAX_PAYLOAD_BYTES, MAX_PRIORITY, MAX_QUEUE_BYTES,
    MAX_QUEUES,
};
pub use interrupt::Interrupt;
pub use job::{
    DEFAULT_QUEUE, DeadReason, Job, Lookup, MAX_NOTE_BYTES, Outcome, Report, Status, Tombstone, UnknownWord,
    job_digest, payload_digest,
};
pub use listen::{Listener, Wake};
pub use notes::{AttemptRecord, Histogram, Tallies, Tally};
pub use outbox::{Outbox, OutboxTransaction, Param};
#[cfg(feature = "postgres")]
pub use pg::PgQueue;
/// The `postgres` client this crate is built on (feature `postgres`): the type inside
/// [`Error::Postgres`].
#[cfg(feature = "postgres")]
pub use postgres;
pub use queue::browse::{Browse, BrowsePage};
pub use queue::cancel::Cancelled;
pub use queue::claim::Claimed;
pub use queue::complete::{Completed, Completion};
pub use queue::enqueue::{Enqueued, NewJob, ToEnqueue, enqueue_in};
pub use queue::inspect::{HistoryEntry, JobPage, Owner, Stats};
pub use queue::lease::Lease;
pub use queue::redrive::{Redrive, RedriveDead};
pub use queue::run_once::Ran;
pub use queue::store::{DEFAULT_REAP_LIMIT, OpenOptions, Queue, Settings, Synchronous};
pub use redact::{is_conninfo, redacted};
pub use refusal::{FileKind, Refusal};
/// The `rusqlite` this crate is built on: open the application's connection with it, so that
/// the [`rusqlite::Transaction`] given to [`enqueue_in`] is of the same version.
pub use rusqlite;
pub use schema::install;
/// The sqlx this crate's [`PgQueue::enqueue_in_sqlx`] takes a connection of (feature `sqlx`).
#[cfg(feature = "sqlx")]
pub use sqlx;
/// The `tokio-postgres` this crate's [`PgQueue::enqueue_in_tokio_postgres`] takes a
/// transaction of (feature `tokio-postgres`).
#[cfg(feature = "tokio-postgres")]
pub use tokio_postgres;
