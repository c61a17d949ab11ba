//! The retryq worker: the runtime that works a queue off, safely, next to others on the same
//! store (a SQLite file, or a PostgreSQL database that workers on many hosts share).
//!
//! An application hands a handler to a [`Worker`] — a closure ([`Worker::run`]) or an async
//! fn on its own tokio runtime (`Worker::run_async`, feature `tokio`) — and the worker claims,
//! runs, renews and records; an error means retry ([`JobError`]), a panic is recorded, and a
//! [`Stop`] ends it gracefully. The `retryq work` binary runs the same engine
//! ([`work_in_slots`]) with a command or a URL as the handler.
//!
//! The queue ([`retryq::Queue::run_once`]) is one claim, one send, one record, with no
//! sleeping and no clock of its own. This crate adds what a process needs around it:
//!
//! - [`work`]: the loop — the system clock (or any [`Clock`], [`work_with_clock`]), a
//!   jitter per attempt from the store ([`retryq::Backend::jitter`]: uniform by default),
//!   each attempt bounded by a timeout, by the job's
//!   deadline and by its lease on both the monotonic and the wall clock ([`Window`]), its
//!   lease renewed every third of it while it runs (heartbeats: an attempt may outlast its
//!   lease, and one whose renewal is refused is stopped and not recorded), a
//!   sleep (never a spin) when nothing is due, one log line per attempt, written once its
//!   outcome is committed; it stops when its database file is deleted or replaced under it
//!   ([`DbFile`], [`Config::db_file`]); it waits out a store that is away (a PostgreSQL
//!   server restarting) with a capped backoff, and on PostgreSQL reads the server's clock
//!   ([`ServerClock`]). [`work_in_slots`] runs several attempts at once, one per transport, with
//!   claims in batches and outcomes that arrive together committed together (group commit);
//! - [`Periodic`]: jobs a worker enqueues once per period, an interval's or a cron
//!   pattern's, under ids every worker computes alike ([`Config::periodic`]);
//! - [`process_name`]: the name a process holds its leases under, unique to it;
//! - [`Transport`]: how an attempt is sent, and two transports: [`Exec`], which runs a shell
//!   command per attempt and reads the outcome from its exit status (through a
//!   [`Trampoline`], beside a watchdog that ends it with its lease however the worker fares:
//!   killed, stopped or frozen), and `Http` (feature `http`), which
//!   POSTs the payload to one of several URLs and reads the outcome from a status table and
//!   the receiver's pushback, with the control crate's node avoidance and retry budget;
//! - [`Stop`]: SIGTERM and SIGINT — the first claims nothing more and lets the attempts
//!   under way finish and be recorded, the second ends the process at once; and SIGXFSZ,
//!   caught so that a write past the file size limit fails instead of killing the worker
//!   ([`catch_file_size_signal`]).
//!
//! What the loop does with an error it cannot classify is the SPEC's rule for `unknown`:
//! nothing. The job keeps its lease until it expires, and another claim (this worker's or
//! another's) spends a new attempt on it; the error text is noted for the operator.
//!
//! A transport of your own is one method: [`Transport`] shows one, driven by [`work`] over
//! an in-memory queue; [`work`] shows the loop refusing a lease too short to renew.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod cgroup;
mod clock;
mod code_list;
mod committer;
mod config;
mod dbfile;
mod descendants;
mod exec;
mod exit_table;
mod fsize;
mod handler;
mod held;
#[cfg(feature = "http")]
pub mod http;
mod identity;
#[cfg(feature = "serde")]
mod kinds;
mod outage;
mod outcome;
mod periodic;
mod runtime;
mod slot;
mod stop;
mod store;
mod trampoline;
mod transport;
mod watched;
mod window;
mod work;

pub use cgroup::{Cgroup, OFF_VAR as EXEC_CGROUP_VAR};
pub use clock::{Clock, ClockError, STEP_FILE_VAR, ServerClock, SteppedClock, SystemClock, local_ms, now_ms};
pub use config::{Config, ConfigError, KILL_GRACE, MIN_LEASE, PRUNE_BATCH, PRUNE_EVERY};
pub use dbfile::{DbFile, DbFileError};
pub use exec::{EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, EXIT_PERMANENT, EXIT_RETRYABLE, Exec, GRACE, SHELL};
pub use exit_table::{ExitClass, ExitError, ExitTable};
pub use fsize::{catch_file_size_signal, describe_limit, file_size_limit, file_size_limit_hit};
pub use handler::{Attempt, JobError};
#[cfg(feature = "http")]
pub use http::{Http, HttpError, HttpOptions, StatusTable};
pub use identity::process_name;
#[cfg(all(feature = "serde", feature = "tokio"))]
pub use kinds::AsyncKinds;
#[cfg(feature = "serde")]
pub use kinds::{JobArgs, Kinds, Options, derived_id, job};
pub use outcome::{Summary, WorkError};
pub use periodic::{DEFAULT_MAX_ATTEMPTS, Every, MAX_NAME_BYTES, Period, Periodic, PeriodicError};
pub use runtime::Worker;
pub use stop::Stop;
pub use trampoline::{
    EXIT_NOT_STARTED, PROTOCOL as WATCHDOG_PROTOCOL, Trampoline, bounce, run as run_watchdog,
};
pub use transport::{Transport, Unclassified};
pub use window::{Cut, LeaseEnds, POLL, Window};
pub use work::{work, work_in_slots, work_with_clock};

/// The README's library snippet, compiled as a doctest with its imports exactly as a reader
/// copies it (`tests/readme.rs` checks that it is a region of `examples/orders.rs`).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
