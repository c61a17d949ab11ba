//! Connecting: a `PgQueue` on a database that is a queue, made one (`connect`) or found one
//! (`connect_existing`). Kept apart from `store.rs`, which the schema's own statements run
//! through, so that the schema and the store do not depend on each other.

use super::schema;
use super::store::PgQueue;
use crate::error::{Error, Result};

impl PgQueue {
    /// Connects to the database `url` names (`postgres://user:password@host:port/dbname`,
    /// or any form the `postgres` crate reads; TLS by libpq's `sslmode` and `sslrootcert`,
    /// `prefer` by default: docs/postgres.md) and makes it a queue: an empty
    /// database gets the schema, in one transaction; one that has it is used as it is.
    ///
    /// Refused, with nothing changed: [`Error::NotRetryq`] for a database whose schema (the
    /// first of its `search_path`) holds tables of another program, or whose encoding is not
    /// UTF-8; [`Error::NewerSchema`] for one written by a newer retryq. Several processes
    /// may connect to one empty database at once: one creates the schema, the others find
    /// it. The session's `synchronous_commit` is `on`, whatever the server's default: a
    /// commit that returned survives a server crash.
    pub fn connect(url: &str) -> Result<PgQueue> {
        let mut queue = PgQueue::open(url)?;
        let name = queue.name().to_owned();
        queue.write(super::store::Turn::Beside, |tx| schema::prepare(tx, &name))?;
        Ok(queue)
    }

    /// Connects to a database that is already a queue, for reading or operating on it:
    /// never creates the schema. An empty database is refused ([`Error::NotRetryq`]) and left
    /// empty, as a missing file is by the SQLite queue's read-only open. One of an older
    /// retryq (schema 2, retryq 1.1) is upgraded in place, in one transaction, as
    /// [`PgQueue::connect`] does: every operation of this build needs schema 3.
    pub fn connect_existing(url: &str) -> Result<PgQueue> {
        let mut queue = PgQueue::open(url)?;
        let name = queue.name().to_owned();
        let mut found = queue.read(|tx| schema::inspect(tx, &name))?;
        if let schema::Found::Older(_) = found
            && queue.write(super::store::Turn::Beside, |tx| schema::upgrade_existing(tx, &name))?
        {
            found = schema::Found::Retryq;
        }
        if found != schema::Found::Retryq {
            return Err(Error::NotRetryq {
                path: name.into(),
                why: "the database has no retryq schema (only `retryq enqueue` and `retryq work` create one)"
                    .into(),
            });
        }
        Ok(queue)
    }
}
