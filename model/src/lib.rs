//! The reference reading of retryq's SPEC.
//!
//! This crate is the second, independent reading of `SPEC.md`: it never links the SQLite
//! implementation. Its modules form layers, each using only the ones below it (a test,
//! `tests/module_graph.rs`, fails on any import cycle):
//!
//! 1. the SPEC's vocabulary ([`op`], [`response`], [`validate`], [`delay`]): the operations a
//!    trace is made of and the results they give, so that a trace generated here, a
//!    counterexample printed by the model checker and a line read by `retryq replay` are one
//!    and the same thing; beside it, the generic breadth-first [`checker`], which knows
//!    nothing of the queue;
//! 2. the seeded bugs ([`bug`]), plain names the store can be told to make;
//! 3. the reference store ([`reference`](mod@reference)): a pure step function over those operations, the
//!    conformance harness's oracle;
//! 4. the transition rules ([`rules`]): the contract read a second time, never calling the
//!    store;
//! 5. the world ([`ids`], [`invalid`], [`model`]): the store, a clock and a few workers in a
//!    bounded, hostile world, every step judged by the rules;
//! 6. the properties ([`properties`]): SPEC section 4's invariants, the rules one by one, and
//!    the examples that show none holds vacuously; and [`trace`], a path as replay lines;
//! 7. the top, tying them together: which property catches which bug ([`catches`]), the
//!    checker run on the world's properties ([`search`]), and the world as a stateright model
//!    for its own checkers and Explorer ([`stateright_model`]).
//!
//! The oracle (layers 1–3) thus never depends on the checker that hunts its bugs.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
pub mod bounds;
pub mod bug;
pub mod catches;
pub mod checker;
pub mod choices;
pub mod contract;
pub mod coverage;
pub mod delay;
pub mod ids;
pub mod model;
pub mod op;
pub mod probes;
pub mod properties;
pub mod reference;
pub mod response;
pub mod rules;
pub mod search;
pub mod stateright_model;
pub mod trace;
pub mod validate;

pub use bug::Bug;
pub use op::{Op, Outcome, RunOutcome};
pub use reference::{Config, Job, Phase, Store};
pub use response::{DeadReason, Failure, JobView, Reply, Response, StatsView, Status, TombstoneView};

/// The largest integer any field may carry: 2^53 − 1, the largest integer a binary64 number
/// (and so every JSON reader) represents exactly.
pub const MAX_INT: u64 = (1 << 53) - 1;
