//! The reference reading of retryq's SPEC.
//!
//! This crate is the second, independent reading of `SPEC.md`: it never links the SQLite
//! implementation. It holds
//!
//! - the vocabulary of SPEC section 5 ([`op`], [`response`]): the operations a trace is made of
//!   and the results they give, so that a trace generated here, a counterexample printed by the
//!   model checker and a line read by `retryq replay` are one and the same thing;
//! - the reference store ([`reference`]): a pure step function over those operations, the
//!   conformance harness's oracle;
//! - the model ([`model`]): the store, a clock and a few workers in a bounded, hostile world
//!   ([`invalid`] holds its bad arguments) that [`checker`] explores exhaustively against SPEC
//!   section 4's invariants and the transition rules of sections 2 and 3 ([`properties`]),
//!   with seeded bugs ([`bug`]) to show each property can fail;
//! - the transition rules ([`rules`]): the contract read a second time, never calling the
//!   store, judging every step the checker takes.

pub mod bug;
pub mod checker;
pub mod delay;
pub mod invalid;
pub mod model;
pub mod op;
pub mod properties;
pub mod reference;
pub mod response;
pub mod rules;
pub mod trace;
pub mod validate;

pub use bug::Bug;
pub use op::{Op, Outcome, RunOutcome};
pub use reference::{Config, Job, Phase, Store};
pub use response::{DeadReason, Failure, JobView, Reply, Response, StatsView, Status};

/// The largest integer any field may carry: 2^53 − 1, the largest integer a binary64 number
/// (and so every JSON reader) represents exactly.
pub const MAX_INT: u64 = (1 << 53) - 1;
