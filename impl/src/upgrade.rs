//! Schema 1 (contract 1.0), schema 2 (contract 1.1), schema 3 (contract 1.2) and schema 4
//! (1.2 with the operators' notes) to schema 5, in place: first what schema 3 added (for a
//! schema 1 or 2 file), then what schema 4 adds. Schema 5 (contract 1.3) differs from schema 4
//! by claim's index alone, which carries each open job's `deadline` (`ddl.rs`, `JOBS_DUE`): a
//! schema 4 file has that index built anew; an older one gets it with the rebuilt jobs table.
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
//! Schema 4 adds the operators' notes (SPEC 6.36): the attempts' records and the tallies,
//! with their triggers. They are filled from what the store still holds, before their
//! triggers exist (so that the fill is not counted twice and is not refused as a record no
//! claim opened): a record for every claim the history holds, ended by the entry that ended
//! its attempt; and the tallies of every event the history holds, plus what each tombstone
//! still says of its pruned job (its enqueue, its claims, its end, its prune). What the
//! history never recorded — the events of jobs pruned before, a forget, any attempt's error
//! text (schema 3 kept the last one only, in the job's `last_error`, which stays) — is not
//! made up: a filled record has no error text, and the tallies start from what can be
//! counted. One end is not
//! told apart by schema 3's history: a leased job that went dead (exhausted, deadline or
//! cancelled) after its lease expired was either reaped or ended by a late `retryable`
//! report; its record's outcome says `expired or retryable`.
//!
//! Crash safety: every step, the version mark (`user_version`, which lives in the database
//! header, a page like any other) included, runs inside one write transaction, and SQLite
//! commits a transaction atomically — in WAL mode by the commit frame of the log, in rollback
//! mode by the journal. A process killed anywhere before the commit leaves the file at its
//! old schema with every row as it was, and the next read-write open upgrades it again; one
//! killed after the commit leaves schema 5.
//!
//! A read-only open never upgrades (it may not write); it reads the old schema through
//! temporary views in schema 5's shape instead (see [`read_old`]).

use rusqlite::{Connection, Transaction};

use crate::ddl::{
    HISTORY_OBJECTS, JOBS_OBJECTS, JOBS_TABLE, KIND, NOTES_NAMES, NOTES_TABLES, PAUSED, RETENTION, SCHEMA_1,
    SCHEMA_2, SCHEMA_3, SCHEMA_4, SCHEMA_5, SCHEMA_6, SCHEMA_VERSION, TALLIES_7, UPGRADE_4_TO_5,
    notes_objects, notes_triggers,
};
use crate::error::{Error, Result};
use crate::notes::bucket_of;

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

/// Upgrades a schema 1, 2, 3 or 4 database to schema 5 inside the caller's write transaction,
/// which must hold the write lock (`BEGIN IMMEDIATE`): the version is read again under it,
/// so a file another process upgraded meanwhile is left alone. Nothing is committed here; a
/// failure at any step leaves the caller's transaction to roll everything back.
pub(crate) fn to_current(tx: &Transaction<'_>, path: &std::path::Path) -> Result<()> {
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    if ![SCHEMA_1, SCHEMA_2, SCHEMA_3, SCHEMA_4, SCHEMA_5, SCHEMA_6].contains(&version) {
        return Err(Error::NotRetryq {
            path: path.to_path_buf(),
            why: format!("schema version {version} changed under the upgrade to {SCHEMA_VERSION}"),
        });
    }
    if version != SCHEMA_6 {
        paused_not_taken(tx, path, version)?;
    }
    if version != SCHEMA_4 && version != SCHEMA_5 && version != SCHEMA_6 {
        notes_not_taken(tx, path)?;
        if version != SCHEMA_3 {
            // The jobs table is rebuilt, with schema 5's indexes.
            to_3(tx, version)?;
        }
        to_4(tx)?;
    } else {
        // Schema 7's tallies are by kind: the notes' triggers go, to come back with the kinds,
        // and every tally kept so far stays, under kind ''.
        for trigger in notes_triggers() {
            tx.execute_batch(&format!("DROP TRIGGER IF EXISTS {trigger};"))?;
        }
        tx.execute_batch(TALLIES_7)?;
    }
    if version == SCHEMA_3 || version == SCHEMA_4 {
        // Claim's index gains `deadline`: built anew from the open jobs.
        tx.execute_batch(UPGRADE_4_TO_5)?;
    }
    if version != SCHEMA_6 {
        // Schema 6: the paused queues, none yet.
        tx.execute_batch(PAUSED)?;
    }
    // Schema 7: every job so far has no kind; the notes' triggers tally by kind.
    tx.execute_batch(KIND)?;
    tx.execute_batch(&notes_objects())?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(())
}

/// Schema 1 or 2 to schema 3, but for the version mark.
fn to_3(tx: &Transaction<'_>, version: i64) -> Result<()> {
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
    Ok(())
}

/// Refuses a file that already holds an object of a name schema 4 adds (an application's
/// table beside the queue): the upgrade would fail on it half-way, and the operator should
/// hear why, with the file as it was.
fn notes_not_taken(tx: &Transaction<'_>, path: &std::path::Path) -> Result<()> {
    let names: Vec<String> = NOTES_NAMES.iter().map(|name| format!("'{name}'")).collect();
    let taken: Option<String> = tx.query_row(
        &format!("SELECT group_concat(name, ', ') FROM sqlite_schema WHERE name IN ({})", names.join(", ")),
        [],
        |row| row.get(0),
    )?;
    match taken {
        Some(taken) => Err(Error::NotRetryq {
            path: path.to_path_buf(),
            why: format!(
                "the database already has objects named {taken}, which schema {SCHEMA_4} adds: \
                 rename them, then open it again"
            ),
        }),
        None => Ok(()),
    }
}

/// Refuses a file that already holds an object named `paused_queues` (an application's,
/// beside the queue), the table schema 6 adds, with the file as it was.
fn paused_not_taken(tx: &Transaction<'_>, path: &std::path::Path, version: i64) -> Result<()> {
    let taken: bool =
        tx.query_row("SELECT count(*) > 0 FROM sqlite_schema WHERE name = 'paused_queues'", [], |row| {
            row.get(0)
        })?;
    match taken {
        true => Err(Error::NotRetryq {
            path: path.to_path_buf(),
            why: format!(
                "the database already has an object named paused_queues, which schema 6 adds to \
                 schema {version}: rename it, then open it again"
            ),
        }),
        false => Ok(()),
    }
}

/// Schema 3 to schema 4, but for the version mark and the notes' triggers: the notes'
/// tables (in schema 7's shape), filled from the store (see the module's comment), every
/// tally under kind `''`, and the tombstones' guard the triggers replace dropped. The
/// triggers come once the jobs have their kind.
fn to_4(tx: &Transaction<'_>) -> Result<()> {
    tx.execute_batch("DROP TRIGGER IF EXISTS tombstones_forgotten_whole;")?;
    tx.execute_batch(NOTES_TABLES)?;
    tx.execute_batch(&format!(
        "INSERT INTO attempts (job, attempt, worker, claimed_at, ended_at, outcome, error, node) {};
         INSERT INTO tallies (metric, queue, kind, label, n) {};
         INSERT INTO tally_buckets (metric, queue, kind, label, le, n, sum_ms) {};",
        attempts_from_history(),
        tallies_from_store(),
        buckets_from_store()
    ))?;
    Ok(())
}

/// Every entry of the history with what the entry before it (of the same job) left: the
/// attempt, the `available_at` and the cancel request before the transition.
const STEPS: &str = "steps AS (
    SELECT job, n, from_status, to_status, attempt, available_at, deadline, reason, worker, at,
           cancel_requested,
           lag(attempt) OVER w AS was_attempt, lag(available_at) OVER w AS was_available_at,
           lag(cancel_requested) OVER w AS was_requested
    FROM history WINDOW w AS (PARTITION BY job ORDER BY n))";

/// The attempts' records the history tells of, in `attempts`' columns: one per claim (a move
/// to leased that adds an attempt), ended by the entry that took the attempt's job out of
/// `leased` or gave its expired lease to another claim. What ended it is the report's outcome
/// where only a report can have (a retry, `done`, `permanent`; a move to dead before the
/// lease expired, or before the deadline for `deadline`), `lease expired` for a claim that
/// took the expired lease, and `expired or retryable` where a reap and a late `retryable`
/// report leave the same entry.
fn attempts_from_history() -> String {
    format!(
        "WITH {STEPS},
         began AS (
            SELECT job, attempt, worker, at FROM steps
            WHERE to_status = 'leased' AND attempt = was_attempt + 1),
         ended AS (
            SELECT job, was_attempt AS attempt, at, CASE
                WHEN to_status = 'leased' THEN 'lease expired'
                WHEN to_status = 'done' THEN 'ok'
                WHEN to_status = 'pending' THEN 'retryable'
                WHEN reason = 'permanent' THEN 'permanent'
                WHEN at < was_available_at THEN 'retryable'
                WHEN reason = 'deadline' AND at < deadline THEN 'retryable'
                ELSE 'expired or retryable' END AS outcome
            FROM steps
            WHERE from_status = 'leased' AND (to_status <> 'leased' OR attempt = was_attempt + 1))
         SELECT b.job, b.attempt, b.worker, b.at, e.at, e.outcome, NULL, NULL
         FROM began b LEFT JOIN ended e ON e.job = b.job AND e.attempt = b.attempt"
    )
}

/// The counters the store can still count, in `tallies`' columns (under kind `''`: no job
/// had one): every job and tombstone
/// was enqueued once, each claim is one of their attempts, a tombstone's job died once (if
/// dead) and was pruned once; the rest are the history's moves, of the jobs it still holds.
fn tallies_from_store() -> String {
    let moved = |metric: &str, label: &str, when: &str| {
        format!(
            "SELECT '{metric}', j.queue, {label}, 1 FROM steps s JOIN jobs j ON j.id = s.job WHERE {when}"
        )
    };
    format!(
        "WITH {STEPS},
         counted (metric, queue, label, n) AS (
            SELECT 'enqueued', queue, '', 1 FROM jobs
            UNION ALL SELECT 'enqueued', queue, '', 1 FROM tombstones
            UNION ALL SELECT 'claims', queue, '', attempts FROM jobs
            UNION ALL SELECT 'claims', queue, '', attempts FROM tombstones
            UNION ALL SELECT 'deaths', queue, dead_reason, 1 FROM tombstones WHERE status = 'dead'
            UNION ALL SELECT 'pruned', queue, status, 1 FROM tombstones
            UNION ALL {deaths}
            UNION ALL {reaped}
            UNION ALL {redrives}
            UNION ALL {cancelled}
            UNION ALL {requested}
            UNION ALL {heartbeats})
         SELECT metric, queue, '' AS kind, label, sum(n) FROM counted GROUP BY 1, 2, 4 HAVING sum(n) > 0",
        deaths = moved("deaths", "s.reason", "s.from_status IS NOT NULL AND s.to_status = 'dead'"),
        reaped = moved(
            "reaped",
            "s.reason",
            "s.from_status = 'pending' AND s.to_status = 'dead' AND s.reason = 'deadline'"
        ),
        redrives = moved("redrives", "''", "s.from_status = 'dead' AND s.to_status = 'pending'"),
        cancelled = moved(
            "cancels",
            "'pending'",
            "s.from_status = 'pending' AND s.to_status = 'dead' AND s.reason = 'cancelled'"
        ),
        requested = moved(
            "cancels",
            "'request'",
            "s.from_status = 'leased' AND s.to_status = 'leased' AND s.attempt = s.was_attempt
             AND s.cancel_requested = 1 AND s.was_requested = 0"
        ),
        heartbeats = moved(
            "heartbeats",
            "''",
            "s.from_status = 'leased' AND s.to_status = 'leased' AND s.attempt = s.was_attempt
             AND NOT (s.cancel_requested = 1 AND s.was_requested = 0)"
        ),
    )
}

/// The histograms' buckets the store can still fill, in `tally_buckets`' columns: the wait of
/// every claim the history holds, and the duration of every ended attempt's record (which
/// `attempts` must hold already).
fn buckets_from_store() -> String {
    format!(
        "WITH {STEPS},
         observed (metric, queue, label, v) AS (
            SELECT 'claim_wait', j.queue, '', max(s.at - s.was_available_at, 0)
            FROM steps s JOIN jobs j ON j.id = s.job
            WHERE s.to_status = 'leased' AND s.attempt = s.was_attempt + 1
            UNION ALL
            SELECT 'attempt_duration', j.queue, a.outcome, max(a.ended_at - a.claimed_at, 0)
            FROM attempts a JOIN jobs j ON j.id = a.job WHERE a.ended_at IS NOT NULL)
         SELECT metric, queue, '' AS kind, label, {} AS le, count(*),
                CAST(min(total(v), 9223372036854775807) AS INTEGER)
         FROM observed GROUP BY 1, 2, 4, 5",
        bucket_of("v")
    )
}

/// Lets a read-only connection read a schema 1, 2, 3 or 4 file as schema 5 (a schema 4 file
/// as it is, since the two differ by an index alone): temporary views of the same rows in
/// schema 4's shape (for 1 and 2 no tombstone, the counts computed from the
/// rows; for every one the notes computed from the history, as the upgrade fills them).
///
/// Why read rather than refuse: a reader — `retryq get`, `stats`, `audit`, a monitoring
/// job — may have no right to write the file, and upgrading is a write; refusing would leave
/// it blind until someone with that right opened the file. The older schemas hold nothing
/// schema 4 lacks, and what schema 4 adds is either a value every older job has (SPEC 3.9)
/// or computed from the rows by the very queries the upgrade fills its tables with, so the
/// views show exactly what the upgrade will store. A temporary view lives in the
/// connection's private `temp` database and shadows `main`'s object of the same name for
/// every unqualified name, so the queue's reads run unchanged and the file is never written.
pub(crate) fn read_old(conn: &Connection, version: i64) -> Result<()> {
    if version == SCHEMA_6 {
        // Schema 7 differs from 6 by the kind alone, which no job had, and its tallies by
        // kind: what schema 6 tallied is under kind ''.
        conn.execute_batch("CREATE TEMP VIEW jobs AS SELECT *, '' AS kind FROM main.jobs;")?;
        conn.execute_batch(KINDLESS_TALLIES)?;
        return Ok(());
    }
    // No older schema could pause a queue: none is paused.
    conn.execute_batch("CREATE TEMP VIEW paused_queues (queue, paused_at) AS SELECT NULL, NULL WHERE 0;")?;
    if version == SCHEMA_4 || version == SCHEMA_5 {
        // Schema 5 differs from 4 by an index alone: the tables are read as they are, the
        // jobs with no kind.
        conn.execute_batch("CREATE TEMP VIEW jobs AS SELECT *, '' AS kind FROM main.jobs;")?;
        conn.execute_batch(KINDLESS_TALLIES)?;
        return Ok(());
    }
    match version {
        SCHEMA_3 => conn.execute_batch("CREATE TEMP VIEW jobs AS SELECT *, '' AS kind FROM main.jobs;")?,
        _ => read_before_3(conn, version)?,
    }
    conn.execute_batch(&format!(
        "CREATE TEMP VIEW attempts (job, attempt, worker, claimed_at, ended_at, outcome, error, node)
             AS {};
         CREATE TEMP VIEW tallies (metric, queue, kind, label, n) AS {};
         CREATE TEMP VIEW tally_buckets (metric, queue, kind, label, le, n, sum_ms) AS {};",
        attempts_from_history(),
        tallies_from_store(),
        buckets_from_store()
    ))?;
    Ok(())
}

/// A schema 4, 5 or 6 file's tallies in schema 7's shape: every one under kind `''`.
const KINDLESS_TALLIES: &str = "
    CREATE TEMP VIEW tallies AS SELECT metric, queue, '' AS kind, label, n FROM main.tallies;
    CREATE TEMP VIEW tally_buckets AS
        SELECT metric, queue, '' AS kind, label, le, n, sum_ms FROM main.tally_buckets;";

/// [`read_old`]'s views of what schema 3 added, for a schema 1 or 2 file.
fn read_before_3(conn: &Connection, version: i64) -> Result<()> {
    conn.execute_batch(&format!(
        "CREATE TEMP VIEW jobs ({SCHEMA_1_COLUMNS}, {SCHEMA_3_COLUMNS}, kind) AS SELECT *, '' FROM ({});
         CREATE TEMP VIEW history AS SELECT *, 0 AS cancel_requested FROM main.history;
         CREATE TEMP VIEW tombstones (id, queue, digest, status, dead_reason, attempts, ended_at)
             AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0;
         CREATE TEMP VIEW counts (queue, status, reason, n) AS
             SELECT queue, status, coalesce(dead_reason, ''), count(*) FROM temp.jobs GROUP BY 1, 2, 3;",
        old_jobs(version)
    ))?;
    Ok(())
}
