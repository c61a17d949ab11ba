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
//! change: claims and reaps take turns on one lock and a claim waits for a due row another
//! transaction holds rather than stepping over it (see `claim.rs` for why), and every fenced
//! operation (complete, heartbeat, note, cancel,
//! redrive) locks a row only when the row passes its checks, deciding a refusal on a plain
//! read instead, so that a refused call never makes a claim wait. A transaction
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
    let class = |class: &str| e.code().is_some_and(|code| code.code().starts_with(class));
    connection_lost(e) || class("40") || class("53")
}

/// Whether the connection is gone after `e`: closed, broken on the socket, or ended by the
/// server (class 08, or an administrator's or a crash's shutdown, 57P01 to 57P03). The
/// client may not have noticed yet when the error arrives, so a `PgQueue` takes this as its
/// cue to connect again before its next operation.
pub(crate) fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    if let Some(code) = e.code() {
        let code = code.code();
        return code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03");
    }
    // No SQLSTATE: the client's own failure; an I/O error on the socket is a lost connection.
    std::error::Error::source(e).is_some_and(|source| source.is::<std::io::Error>())
}
