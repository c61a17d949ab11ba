//! Concurrent histories checked for linearizability against the reference store.
//!
//! Replaying one trace at a time (the rest of this crate) shows that each operation answers
//! as SPEC section 3 says when operations come one after another. Section 3.10 promises more:
//! several processes may share one store, and "their operations take effect one at a time,
//! each as one transaction". That is a claim about concurrency, and only a concurrent run can
//! test it. This module runs it and judges it:
//!
//! - [`run()`] starts N clients, each on its own connection to one shared store, each issuing
//!   SPEC operations with times it picks itself ([`workload`]), and records every call with a
//!   logical timestamp taken just before it was invoked and just after it returned
//!   ([`history`]);
//! - [`check()`] decides whether that history is linearizable: whether some total order of the
//!   calls, consistent with real time (a call that returned before another was invoked comes
//!   first), replayed on [`retryq_model::Store`], gives exactly the recorded answers. It is
//!   the Wing–Gong search with memoisation ([`search`]); `run_once` takes two steps, its claim
//!   and its completion, since SPEC 3.5 makes it two transactions ([`steps`]);
//! - when no order exists, [`Violation`] says why as briefly as it can ([`explain`]): the calls
//!   that change nothing are dropped while the rest still has no order, and the longest order
//!   found is shown with what the model answered, at its end, for every call that could have
//!   come next.
//!
//! [`simulate`] makes histories with the reference store itself, whose order is known: the
//! checker's own test.
//!
//! The store is reached only through [`retryq::Backend`] ([`translate`]), so the same run
//! checks the SQLite queue and any other store.

pub mod explain;
pub mod history;
pub mod run;
pub mod search;
pub mod simulate;
pub mod steps;
pub mod translate;
pub mod workload;

pub use explain::{Explanation, Violation, check};
pub use history::{Call, Clock, History};
pub use run::{Connect, RunFailed, run};
pub use search::{Checker, LinearOrder, Miss, Step};
pub use steps::Part;
pub use workload::{Clocks, Workload};
