//! `PgQueue`: the queue on a PostgreSQL database (feature `postgres`), with exactly the
//! SQLite queue's semantics — SPEC sections 2 to 4 are the contract of both.
//!
//! The modules mirror `queue/`: `store` holds the connection and the transaction helpers,
//! `schema` recognises and creates the tables, and each other module adds the operations of
//! one kind. What is not SQL — the argument checks, the completion rule ([`settle`]), the
//! redrive budget, the audit's rules — is the SQLite queue's own code, called from here, so
//! the two stores cannot drift apart in what they decide; they differ only in how they read
//! and write rows.
//!
//! Concurrency. Several `PgQueue`s (threads, processes, machines) may share one database.
//! Every write is one READ COMMITTED transaction that locks exactly the rows it is about to
//! change. Claims and reaps take the turn alone and the writes that can make a job due take it
//! shared (`turn.rs`), so that none of those commits while a claim decides; a claim never
//! steps over a row another transaction holds (see `claim.rs` for why); and every fenced
//! operation (complete, heartbeat, note, cancel, redrive) locks a row only when the row passes
//! its checks, deciding a refusal on a plain read instead. A transaction PostgreSQL rolls
//! back for a deadlock or a serialization failure changed nothing, and is run again
//! (`store.rs`).
//!
//! [`settle`]: crate::queue::complete::settle

mod audit;
mod backend;
mod browse;
mod bulk;
mod cancel;
mod claim;
mod complete;
mod connect;
mod ddl;
mod enqueue;
mod heartbeat;
mod inside;
mod inspect;
#[cfg(test)]
mod listen_tests;
mod notes;
#[cfg(any(feature = "tokio-postgres", feature = "sqlx"))]
mod outside;
mod pause;
#[cfg(test)]
mod reap_tests;
mod redrive;
mod retention;
mod schema;
#[cfg(test)]
mod stale_tests;
mod store;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_1_2;
#[cfg(test)]
mod tests_bulk;
#[cfg(test)]
mod tests_notes;
#[cfg(test)]
mod tests_one_row;
#[cfg(test)]
mod tests_pause;
#[cfg(test)]
mod tests_stats;
mod tls;
mod turn;
#[cfg(test)]
mod turn_tests;
mod value;

pub(crate) use inside::enqueue_in_with;
pub use store::PgQueue;
pub(crate) use store::{client_config, session};
