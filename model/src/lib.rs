//! The reference reading of retryq's SPEC.
//!
//! This crate is the second, independent reading of `SPEC.md`: it never links the SQLite
//! implementation. It holds the vocabulary of SPEC section 5 (the operations a trace is made
//! of and the results they give), so that a trace generated here, a counterexample printed by
//! the model checker and a line read by `retryq replay` are one and the same thing.

pub mod op;
pub mod response;

pub use op::{Op, Outcome, RunOutcome};
pub use response::{DeadReason, Failure, JobView, Reply, Response, StatsView, Status};

/// The largest integer any field may carry: 2^53 − 1, the largest integer a binary64 number
/// (and so every JSON reader) represents exactly.
pub const MAX_INT: u64 = (1 << 53) - 1;
