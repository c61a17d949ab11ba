//! Schema 1 (contract 1.0) and schema 2 (contract 1.1) to schema 3 (contract 1.2), in place.
//!
//! Schema 2 added three columns to the jobs table (`not_before`, `base_ms`, `cap_ms`) and
//! let `dead_reason` be `cancelled`; schema 3 adds four more (`queue`, `priority`,
//! `ended_at`, `cancel_requested`), with CHECK constraints, a column to the history table,
//! and two tables: `tombstones` and `counts`. SQLite cannot add a CHECK to an existing
//! table, so the jobs table is rebuilt as its documentation prescribes: create the new table
//! under another name, copy every row, drop the old one, rename the new one, recreate the
//! indexes and triggers. The history table is not rebuilt: its entries are never touched;
//! it gains `cancel_requested` (0 for every older entry: no older job had a cancel request),
//! and its triggers are recreated as schema 3 has them. The jobs table's own triggers go with
//! the old table and come back on the new one after the copy, so the copy records no history
//! entry and counts nothing twice: it is not a transition. `counts` is then filled from the
//! copied rows.
//!
//! What the older schemas lack has the value SPEC 3.9 gives every older job: `not_before`
//! is the enqueue's `now` (1.0), the queue is `default` and the priority 0, no cancel
//! request stands (1.1 had none: a cancel of a leased job was refused), and a done or dead
//! job's `ended_at` is its `updated_at`, the `now` of its last transition, which is the one
//! that ended it.
//!
//! Crash safety: every step, the version mark (`user_version`, which lives in the database
//! header, a page like any other) included, runs inside one write transaction, and SQLite
//! commits a transaction atomically — in WAL mode by the commit frame of the log, in rollback
//! mode by the journal. A process killed anywhere before the commit leaves the file at its
//! old schema with every row as it was, and the next read-write open upgrades it again; one
//! killed after the commit leaves schema 3.
//!
//! A read-only open never upgrades (it may not write); it reads the old schema through
//! temporary views in schema 3's shape instead (see [`read_old`]).

use rusqlite::{Connection, Transaction};

use crate::ddl::{HISTORY_OBJECTS, JOBS_OBJECTS, JOBS_TABLE, RETENTION, SCHEMA_1, SCHEMA_2, SCHEMA_VERSION};
use crate::error::{Error, Result};

/// Every column schema 1's jobs table has, in its order; later schemas have them too.
const SCHEMA_1_COLUMNS: &str = "seq, id, payload, status, attempts, max_attempts, available_at, \
                                deadline, dead_reason, redrives, enqueued_at, owner, claimed_at, \
                                updated_at, last_error, last_node";

/// What schema 3's added columns hold for an older job (SPEC 3.9).
const ADDED: &str = "'default', 0, CASE WHEN status IN ('done', 'dead') THEN updated_at END, 0";

/// The jobs of an older schema, in schema 3's columns, in order of first enqueue.
fn old_jobs(version: i64) -> String {
    let schema_2 =
        if version == SCHEMA_1 { "enqueued_at, NULL, NULL" } else { "not_before, base_ms, cap_ms" };
    format!("SELECT {SCHEMA_1_COLUMNS}, {schema_2}, {ADDED} FROM main.jobs")
}

const SCHEMA_3_COLUMNS: &str = "not_before, base_ms, cap_ms, queue, priority, ended_at, cancel_requested";

/// After the copy: the old table (with its indexes and triggers) goes, the new one takes its
/// name. Dropping a table fires none of its triggers; no job is lost, the copy holds every
/// one.
const SWAP: &str = "DROP TABLE jobs; ALTER TABLE jobs_upgrade RENAME TO jobs;";

/// The history table's additions, and its triggers and index dropped to be recreated.
const HISTORY_UPGRADE: &str = "
    ALTER TABLE history ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
    DROP TRIGGER history_no_update;
    DROP TRIGGER history_no_delete;
    DROP INDEX history_job;";

/// The counts of the copied jobs: what the triggers would have counted, had they run.
const FILL_COUNTS: &str = "
    INSERT INTO counts (queue, status, reason, n)
    SELECT queue, status, coalesce(dead_reason, ''), count(*) FROM jobs GROUP BY 1, 2, 3";

const COUNT: &str = "SELECT count(*) FROM jobs";

/// Upgrades a schema 1 or 2 database to schema 3 inside the caller's write transaction,
/// which must hold the write lock (`BEGIN IMMEDIATE`): the version is read again under it,
/// so a file another process upgraded meanwhile is left alone. Nothing is committed here; a
/// failure at any step leaves the caller's transaction to roll everything back.
pub(crate) fn to_current(tx: &Transaction<'_>, path: &std::path::Path) -> Result<()> {
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    if version != SCHEMA_1 && version != SCHEMA_2 {
        return Err(Error::NotRetryq {
            path: path.to_path_buf(),
            why: format!("schema version {version} changed under the upgrade to {SCHEMA_VERSION}"),
        });
    }
    let before: i64 = tx.query_row(COUNT, [], |row| row.get(0))?;
    tx.execute_batch(&JOBS_TABLE.replacen("CREATE TABLE jobs (", "CREATE TABLE jobs_upgrade (", 1))?;
    let copy = format!(
        "INSERT INTO jobs_upgrade ({SCHEMA_1_COLUMNS}, {SCHEMA_3_COLUMNS}) {} ORDER BY seq",
        old_jobs(version)
    );
    let copied = tx.execute(&copy, [])? as i64;
    if copied != before {
        return Err(Error::Corrupt(format!("the upgrade copied {copied} of {before} jobs")));
    }
    tx.execute_batch(SWAP)?;
    tx.execute_batch(RETENTION)?;
    tx.execute_batch(JOBS_OBJECTS)?;
    tx.execute_batch(FILL_COUNTS)?;
    tx.execute_batch(HISTORY_UPGRADE)?;
    tx.execute_batch(HISTORY_OBJECTS)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(())
}

/// Lets a read-only connection read a schema 1 or 2 file as schema 3: temporary views of
/// the same rows in schema 3's shape (no tombstone, the counts computed from the rows).
///
/// Why read rather than refuse: a reader — `retryq get`, `stats`, `audit`, a monitoring
/// job — may have no right to write the file, and upgrading is a write; refusing would leave
/// it blind until someone with that right opened the file. The older schemas hold nothing
/// schema 3 lacks, and what schema 3 adds has a value every older job has (SPEC 3.9), so
/// the views show exactly what the upgrade will store. A temporary view lives in the
/// connection's private `temp` database and shadows `main`'s object of the same name for
/// every unqualified name, so the queue's reads run unchanged and the file is never written.
pub(crate) fn read_old(conn: &Connection, version: i64) -> Result<()> {
    conn.execute_batch(&format!(
        "CREATE TEMP VIEW jobs ({SCHEMA_1_COLUMNS}, {SCHEMA_3_COLUMNS}) AS {};
         CREATE TEMP VIEW history AS SELECT *, 0 AS cancel_requested FROM main.history;
         CREATE TEMP VIEW tombstones (id, queue, digest, status, dead_reason, attempts, ended_at)
             AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0;
         CREATE TEMP VIEW counts (queue, status, reason, n) AS
             SELECT queue, status, coalesce(dead_reason, ''), count(*) FROM temp.jobs GROUP BY 1, 2, 3;",
        old_jobs(version)
    ))?;
    Ok(())
}
