//! The replay format of SPEC section 5, and the harness that runs it.
//!
//! - [`parse`] reads one JSON Lines input line into a [`retryq_model::Op`], strictly: every
//!   way a line can be wrong is `invalid_input` naming the field.
//! - [`store`] runs operations against a real store — SQLite, or PostgreSQL ([`pg`] lends
//!   each trace an empty database) — through `retryq`'s `Backend` trait, and answers in the
//!   SPEC's results. It reads the SPEC through `retryq` only; the model is used here for its
//!   vocabulary (the operation and result types), never for its logic.
//! - [`replay()`] drives a whole trace: lines in, one JSON object out per operation.
//! - [`regress`] finds the saved regression cases (`NAME.jsonl` beside
//!   `NAME.expected.jsonl`) and checks a replay's output against them.
//! - [`batched`] sends a trace's runs of enqueues, claims and completions to the store as
//!   batches, and compares each item with the model's single operation.
//! - [`generate`] makes traces nobody wrote by hand (a proptest strategy and a quickcheck
//!   generator); [`compare`] runs one on both readings, step by step; [`run`] runs many and
//!   shrinks the first divergence; [`crash`] kills a replaying process at random points and
//!   checks the store it leaves; [`overlap`] runs workers through kills and stops and checks,
//!   from their commands' own log, that no two attempts of a job ran at once.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod batched;
pub mod compare;
pub mod crash;
pub mod exhaustive;
pub mod generate;
pub mod linear;
pub mod overlap;
pub mod parse;
pub mod pg;
pub mod regress;
pub mod replay;
pub mod run;
pub mod store;
pub mod trace;

pub use parse::{Line, parse_line};
pub use replay::{ReplayStats, replay};
pub use store::Side;

/// A failure that stops a replay: the trace could not be run, as opposed to an operation
/// being refused (which is an output line like any other).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The database could not be opened or failed under an operation.
    #[error("storage failed: {0}")]
    Storage(#[from] retryq::Error),
    /// The PostgreSQL server refused an administrator's statement of the harness (creating,
    /// emptying or dropping a database of a run), or could not be reached for one.
    #[error("PostgreSQL: {0}")]
    Postgres(#[from] postgres::Error),
    /// The trace or the output could not be read or written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The queue answered with a value the SPEC has no word for (a variant added to the
    /// library after this crate was written): the comparison cannot go on honestly.
    #[error("the queue answered {0}, which the SPEC does not name")]
    Unnamed(String),
    /// `restart` given to [`store::answer`], which holds a store but not where it lives: only
    /// a [`store::Side`] can reopen one.
    #[error("restart reopens a store, which only the replay side that opened it can do")]
    NoPlace,
}
