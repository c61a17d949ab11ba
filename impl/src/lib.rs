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
//! queue.enqueue(&NewJob { id: "order-7", payload: "{}", max_attempts: 5, deadline: 700, now: 0 })?;
//! let send = |_: &Claimed| Ok::<_, std::io::Error>(Outcome::Ok);
//! let ran = queue.run_once("w1", || 10, send, 0.5)?;
//! assert_eq!(ran, Ran::Done { id: "order-7".into(), attempt: 1 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The semantics are those of the project's `SPEC.md`; this crate is one of its two readings
//! (the other, the model, never shares code with it).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod audit;
mod delay;
mod error;
mod file;
mod input;
mod job;
mod queue;
mod refusal;
mod schema;

pub use audit::{Audit, Check, Violation};
pub use delay::{retry_delay, validate_jitter};
pub use error::{Error, ErrorKind, Result, RunError};
pub use input::{MAX_ATTEMPTS, MAX_ID_BYTES, MAX_INT, MAX_PAYLOAD_BYTES};
pub use job::{DeadReason, Job, MAX_NOTE_BYTES, Outcome, Report, Status, UnknownWord};
pub use queue::claim::Claimed;
pub use queue::complete::{Completed, Completion};
pub use queue::enqueue::{Enqueued, NewJob};
pub use queue::inspect::{HistoryEntry, Stats};
pub use queue::lease::Lease;
pub use queue::redrive::{Redrive, RedriveDead};
pub use queue::run_once::Ran;
pub use queue::store::{OpenOptions, Queue, Settings, Synchronous};
pub use refusal::{FileKind, Refusal};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
