//! Schema 1 (contract 1.0) to schema 2 (contract 1.1), in place.
//!
//! Schema 2 adds three columns to the jobs table (`not_before`, `base_ms`, `cap_ms`), with
//! CHECK constraints, and lets `dead_reason` be `cancelled`. SQLite cannot add a CHECK to an
//! existing table, so the upgrade is the table rebuild its documentation prescribes: create
//! the new table under another name, copy every row, drop the old one, rename the new one,
//! recreate the indexes and triggers. The history table is not rebuilt: schema 2 keeps it
//! as schema 1 had it, so its entries, and the triggers that keep it append-only
//! (`history_no_update`, `history_no_delete`, which hang on the history table), are never
//! touched. The jobs table's own triggers go with the old table and come back on the new one
//! after the copy, so the copy records no history entry: it is not a transition.
//!
//! Crash safety: every step, the version mark (`user_version`, which lives in the database
//! header, a page like any other) included, runs inside one write transaction, and SQLite
//! commits a transaction atomically — in WAL mode by the commit frame of the log, in rollback
//! mode by the journal. A process killed anywhere before the commit leaves the file at
//! schema 1 with every row as it was (the next open rolls the half-written transaction back
//! or ignores the uncommitted log frames) and the next read-write open upgrades it again;
//! one killed after the commit leaves schema 2. There is no instant at which the file holds
//! both tables, or a schema 2 mark over schema 1's table.
//!
//! A read-only open never upgrades (it may not write); it reads schema 1 through a temporary
//! view in schema 2's shape instead (see [`read_schema_1`]).

use rusqlite::{Connection, Transaction};

use crate::ddl::{JOBS_OBJECTS, JOBS_TABLE, SCHEMA_1, SCHEMA_VERSION};
use crate::error::{Error, Result};

/// Every column schema 1's jobs table has, in its order; schema 2 has them too.
const SCHEMA_1_COLUMNS: &str = "seq, id, payload, status, attempts, max_attempts, available_at, \
                                deadline, dead_reason, redrives, enqueued_at, owner, claimed_at, \
                                updated_at, last_error, last_node";

/// The copy of every job into the rebuilt table. `not_before` is the enqueue's `now` (SPEC
/// 3.9: the job's first `available_at` when it was enqueued without one, which every 1.0
/// job was); no 1.0 job has its own backoff.
fn copy() -> String {
    format!(
        "INSERT INTO jobs_upgrade ({SCHEMA_1_COLUMNS}, not_before, base_ms, cap_ms)
         SELECT {SCHEMA_1_COLUMNS}, enqueued_at, NULL, NULL FROM jobs ORDER BY seq"
    )
}

/// After the copy: the old table (with its indexes and triggers) goes, the new one takes its
/// name. Dropping a table fires none of its triggers, so `jobs_never_deleted` does not stop
/// it; no job is lost, the copy holds every one.
const SWAP: &str = "DROP TABLE jobs; ALTER TABLE jobs_upgrade RENAME TO jobs;";

const COUNT: &str = "SELECT count(*) FROM jobs";

/// Upgrades a schema 1 database to schema 2 inside the caller's write transaction, which
/// must hold the write lock (`BEGIN IMMEDIATE`): the version is read again under it, so a
/// file another process upgraded meanwhile is left alone. Nothing is committed here; a
/// failure at any step leaves the caller's transaction to roll everything back.
pub(crate) fn from_schema_1(tx: &Transaction<'_>, path: &std::path::Path) -> Result<()> {
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    if version != SCHEMA_1 {
        return Err(Error::NotRetryq {
            path: path.to_path_buf(),
            why: format!("schema version {version} changed under the upgrade to {SCHEMA_VERSION}"),
        });
    }
    let before: i64 = tx.query_row(COUNT, [], |row| row.get(0))?;
    tx.execute_batch(&JOBS_TABLE.replacen("CREATE TABLE jobs (", "CREATE TABLE jobs_upgrade (", 1))?;
    let copied = tx.execute(&copy(), [])? as i64;
    if copied != before {
        return Err(Error::Corrupt(format!("the upgrade copied {copied} of {before} jobs")));
    }
    tx.execute_batch(SWAP)?;
    tx.execute_batch(JOBS_OBJECTS)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(())
}

/// Schema 1's jobs as schema 2 shows them: the same rows, `not_before` = `enqueued_at`, no
/// own backoff. A temporary view lives in the connection's private `temp` database and
/// shadows `main.jobs` for every unqualified name, so the queue's reads run unchanged and the
/// file is never written.
const SCHEMA_1_AS_2: &str = "
    CREATE TEMP VIEW jobs AS
    SELECT seq, id, payload, status, attempts, max_attempts, available_at, deadline,
           dead_reason, redrives, enqueued_at, owner, claimed_at, updated_at, last_error,
           last_node, enqueued_at AS not_before, NULL AS base_ms, NULL AS cap_ms
    FROM main.jobs";

/// Lets a read-only connection read a schema 1 file as schema 2.
///
/// Why read rather than refuse: a reader — `retryq get`, `stats`, `audit`, a monitoring
/// job — may have no right to write the file, and upgrading is a write; refusing would leave
/// it blind until someone with that right opened the file. Schema 1 holds nothing schema 2
/// lacks, and what schema 2 adds has a value every 1.0 job has (SPEC 3.9), so the view shows
/// exactly what the upgrade will store.
pub(crate) fn read_schema_1(conn: &Connection) -> Result<()> {
    conn.execute_batch(SCHEMA_1_AS_2)?;
    Ok(())
}
