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
//! change: a claim takes its job with `FOR UPDATE SKIP LOCKED` (see `claim.rs` for why
//! that keeps claim's order), and every fenced operation (complete, heartbeat, note, cancel,
//! redrive) locks a row only when the row passes its checks, deciding a refusal on a plain
//! read instead, so that a refused call never makes a claim step over a job. A transaction
//! PostgreSQL rolls back for a deadlock or a serialization failure changed nothing, and is
//! run again (`store.rs`).
//!
//! [`settle`]: crate::queue::complete::settle

mod audit;
mod backend;
mod cancel;
mod claim;
mod complete;
mod enqueue;
mod heartbeat;
mod inspect;
mod redrive;
mod schema;
mod store;
#[cfg(test)]
mod tests;
mod value;

pub use store::PgQueue;

/// Whether a PostgreSQL failure may pass by itself and changed nothing (see
/// [`Error::is_transient`](crate::Error::is_transient)): the connection is gone (a `PgQueue`
/// connects again on its next operation), the server refused a connection or ran short of
/// a resource, or it rolled the transaction back (class 40: a deadlock, a serialization
/// failure).
pub(crate) fn transient(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let code = code.code();
        return code.starts_with("08")
            || code.starts_with("40")
            || code.starts_with("53")
            || code.starts_with("57P0");
    }
    // No SQLSTATE: the client's own failure; an I/O error on the socket is a lost connection.
    std::error::Error::source(e).is_some_and(|source| source.is::<std::io::Error>())
}
