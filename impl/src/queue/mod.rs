//! The queue: one SQLite connection, and one function per SPEC operation, each exactly one
//! transaction.
//!
//! The `Queue` and what every operation shares live in `store`; each other module adds the
//! operations of one kind to it. The crate root re-exports each type from the module that
//! defines it, so no module here depends on this one.

pub(crate) mod batch;
pub(crate) mod browse;
pub(crate) mod bulk;
pub(crate) mod busy;
pub(crate) mod cancel;
mod checkpoint;
#[cfg(test)]
mod checkpoint_tests;
pub(crate) mod claim;
pub(crate) mod complete;
pub(crate) mod enqueue;
pub(crate) mod heartbeat;
pub(crate) mod inspect;
pub(crate) mod lease;
pub(crate) mod notes;
pub(crate) mod pace;
pub(crate) mod pause;
pub(crate) mod redrive;
pub(crate) mod retention;
pub(crate) mod run_once;
pub(crate) mod store;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_pause;
