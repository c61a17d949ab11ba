//! The database schema: what a retryq file holds, how it is recognised, how it is created.
//!
//! A retryq database is a SQLite file whose `application_id` is [`APPLICATION_ID`] and whose
//! `user_version` is the schema version. Any other file is refused, never "repaired": a
//! file that is not SQLite, another program's database, or one written by a newer retryq.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode, Transaction, TransactionBehavior};

use crate::ddl::{
    APPLICATION_ID, SCHEMA_1, SCHEMA_2, SCHEMA_3, SCHEMA_4, SCHEMA_5, SCHEMA_6, SCHEMA_VERSION, ddl,
};
use crate::error::{Error, Result};
use crate::upgrade;

/// What an opened file turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// An empty database: a new or zero-length file, or a fresh in-memory one.
    Empty,
    /// A retryq database of this schema version.
    Retryq,
    /// A retryq database of an older schema, 1 (contract 1.0), 2 (contract 1.1) or 3
    /// (contract 1.2 without the operators' notes): a read-write open upgrades it in place, a
    /// read-only one reads it as it is (`upgrade.rs`).
    Older(i64),
}

/// Decides what the file is, reading only: a refused file is left exactly as it was.
pub(crate) fn inspect(conn: &Connection, path: &Path) -> Result<Found> {
    let refuse = |why: String| Error::NotRetryq { path: path.to_path_buf(), why };
    let application_id: i64 =
        conn.pragma_query_value(None, "application_id", |row| row.get(0)).map_err(|e| {
            match e.sqlite_error_code() {
                Some(ErrorCode::NotADatabase) => refuse("the file is not a SQLite database".into()),
                _ => Error::Storage(e),
            }
        })?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if application_id == 0 && version == 0 {
        let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
        if objects == 0 {
            return Ok(Found::Empty);
        }
        return Err(refuse(format!("a SQLite database with {objects} objects of another program")));
    }
    if application_id != APPLICATION_ID {
        return Err(refuse(format!("a SQLite database with application_id {application_id:#x}")));
    }
    if version > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version == SCHEMA_1
        || version == SCHEMA_2
        || version == SCHEMA_3
        || version == SCHEMA_4
        || version == SCHEMA_5
        || version == SCHEMA_6
    {
        return Ok(Found::Older(version));
    }
    if version < SCHEMA_VERSION {
        return Err(refuse(format!("schema version {version}, which no retryq release wrote")));
    }
    Ok(Found::Retryq)
}

/// Creates the schema in one transaction. Two processes may race to create the same new
/// file: whoever takes the write lock second finds the schema there and leaves it alone.
pub(crate) fn create(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if inspect(&tx, path)? == Found::Empty {
        write(&tx)?;
    }
    tx.commit()?;
    Ok(())
}

/// Upgrades a schema 1, 2 or 3 file to schema 4 in one write transaction (`upgrade.rs`): committed
/// whole, or not at all.
pub(crate) fn upgrade(conn: &mut Connection, path: &Path) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    upgrade::to_current(&tx, path)?;
    tx.commit()?;
    Ok(())
}

/// The names of the schema's own objects (tables, indexes, triggers) that a database
/// already has: one that has any cannot take the schema.
const TAKEN: &str = "
    SELECT group_concat(name, ', ') FROM sqlite_schema
    WHERE name IN ('jobs', 'jobs_due', 'jobs_open_deadline', 'jobs_last_lease', 'history',
                   'history_job', 'jobs_history_insert', 'jobs_history_update',
                   'jobs_never_deleted', 'jobs_identity_fixed', 'history_no_update',
                   'history_no_delete', 'jobs_open_age', 'jobs_leases', 'jobs_cancelling',
                   'jobs_ended', 'jobs_count_insert', 'jobs_count_update', 'jobs_count_delete',
                   'jobs_not_over_a_tombstone', 'tombstones', 'tombstones_ended',
                   'tombstones_never_change', 'tombstones_of_ended_jobs',
                   'tombstones_forgotten_whole', 'tombstones_count_insert',
                   'tombstones_count_delete', 'counts', 'attempts', 'tallies', 'tally_buckets',
                   'attempts_of_claims', 'attempts_ended_never_change', 'attempts_no_delete',
                   'tallies_only_grow', 'tallies_never_deleted', 'tally_buckets_only_grow',
                   'tally_buckets_never_deleted', 'jobs_tally_enqueued', 'jobs_attempt_claimed',
                   'jobs_attempt_reported', 'jobs_tally_moved', 'jobs_tally_cancel_requested',
                   'jobs_tally_heartbeat', 'attempts_tally_ended', 'tombstones_tally_pruned',
                   'tombstones_tally_forgotten', 'paused_queues', 'jobs_kind_fixed')";

/// Installs retryq's schema into the database of the application's own connection, next to
/// the application's tables, so that [`enqueue_in`](crate::enqueue_in) can enqueue jobs in
/// the application's transactions and [`Queue::open`](crate::Queue::open) opens the file.
///
/// [`Queue::open`](crate::Queue::open) refuses a database that holds anything of another
/// program, so that a mistyped path never turns someone else's file into a queue; installing
/// next to an application's tables is the application's deliberate act on its own
/// connection. It is refused ([`Error::NotRetryq`], nothing written) only where the two
/// cannot share the file: the application uses `PRAGMA application_id` or
/// `PRAGMA user_version` itself (retryq recognises its files by both), or it already has a
/// table, index or trigger of one of the schema's names (`jobs`, `history`, …). A file that
/// has the schema already is left as it is; one of a newer schema is
/// [`Error::NewerSchema`].
///
/// A file on disk is switched to write-ahead logging first, as `Queue::open` does (it stays
/// so: the journal mode is the file's). The connection must not be inside a transaction.
pub fn install(conn: &Connection) -> Result<()> {
    let path = path_of(conn);
    // Checked before the journal mode changes, so that a refusal leaves the file as it was.
    if !needs_schema(conn, &path)? {
        if let Found::Older(_) = inspect(conn, &path)? {
            let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
            upgrade::to_current(&tx, &path)?;
            tx.commit()?;
        }
        return Ok(());
    }
    if conn.path().is_some_and(|p| !p.is_empty()) {
        set_wal(conn)?;
    }
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    // Again under the write lock: another connection may have installed it meanwhile.
    if needs_schema(&tx, &path)? {
        write(&tx)?;
    }
    tx.commit()?;
    Ok(())
}

/// Whether [`install`] has the schema to write (`false`: the file has it already, checked
/// as an open checks it), or [`Error::NotRetryq`] if the file cannot take it.
fn needs_schema(conn: &Connection, path: &Path) -> Result<bool> {
    let refuse = |why: String| Error::NotRetryq { path: path.to_path_buf(), why };
    let application_id: i64 = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if application_id == APPLICATION_ID {
        // Ours already: the same checks as any open (a newer or an unknown version); a
        // schema 1 is upgraded by `install`'s caller-visible step, not written afresh.
        inspect(conn, path)?;
        return Ok(false);
    }
    if application_id != 0 || version != 0 {
        return Err(refuse(format!(
            "application_id {application_id:#x} and user_version {version} are set: the \
             application uses them, and retryq recognises its schema by both"
        )));
    }
    let taken: Option<String> = conn.query_row(TAKEN, [], |row| row.get(0))?;
    match taken {
        Some(taken) => Err(refuse(format!("the database already has objects named {taken}"))),
        None => Ok(true),
    }
}

/// Refuses a connection whose database has no retryq schema (or a newer one), before a job
/// is written through it: [`crate::enqueue_in`]'s check of a file no `Queue` opened.
pub(crate) fn require(conn: &Connection) -> Result<()> {
    let application_id: i64 = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if application_id == 0 && version == 0 {
        return Err(Error::NotRetryq {
            path: path_of(conn),
            why: "the database has no retryq schema: call retryq::install on it, or open it once \
                  with Queue::open"
                .into(),
        });
    }
    if application_id == APPLICATION_ID && version == SCHEMA_VERSION {
        return Ok(());
    }
    // Another program's marks, or another version of the schema: refused as an open is.
    // An older schema is refused too: the upgrade rebuilds the jobs table, which is not a step to
    // take inside the application's transaction.
    match inspect(conn, &path_of(conn))? {
        Found::Older(version) => Err(Error::NotRetryq {
            path: path_of(conn),
            why: format!(
                "schema version {version} must be upgraded first: call retryq::install on it, or open \
                  it once with Queue::open"
            ),
        }),
        _ => Ok(()),
    }
}

/// The file a connection is on, for error messages (`:memory:` when it has none).
fn path_of(conn: &Connection) -> PathBuf {
    match conn.path() {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(":memory:"),
    }
}

/// Writes the schema and its marks inside the caller's write transaction.
fn write(tx: &Transaction<'_>) -> Result<()> {
    tx.execute_batch(&ddl())?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(())
}

/// Lets `incremental_vacuum` give the pages a prune frees back to the file system (see
/// `Queue::reclaim`). Settable only before the file's first page is written, so before the
/// switch to write-ahead logging and the schema: for a new, empty file.
pub(crate) fn set_auto_vacuum(conn: &Connection) -> Result<()> {
    conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    Ok(())
}

/// Switches the file to write-ahead logging (persistent: done once per file).
pub(crate) fn set_wal(conn: &Connection) -> Result<()> {
    let mode: String = conn.pragma_query_value(None, "journal_mode", |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::Corrupt(format!("journal_mode stayed {mode:?} instead of WAL")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_created_schema_is_recognised() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        let path = Path::new(":memory:");
        assert_eq!(inspect(&conn, path).expect("inspect"), Found::Empty);
        create(&mut conn, path).expect("create");
        assert_eq!(inspect(&conn, path).expect("inspect"), Found::Retryq);
        // Creating again is a no-op, not an error.
        create(&mut conn, path).expect("create twice");
    }

    #[test]
    fn a_new_file_reclaims_pages_incrementally() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("q.db");
        let mut conn = Connection::open(&path).expect("open");
        set_auto_vacuum(&conn).expect("auto_vacuum");
        set_wal(&conn).expect("wal");
        create(&mut conn, &path).expect("create");
        let mode: i64 = conn.pragma_query_value(None, "auto_vacuum", |row| row.get(0)).expect("auto_vacuum");
        assert_eq!(mode, 2, "INCREMENTAL");
    }

    #[test]
    fn install_names_every_object_the_schema_creates() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        create(&mut conn, Path::new(":memory:")).expect("create");
        let mut created: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
            .expect("names")
            .query_map([], |row| row.get(0))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("names");
        let taken: String = conn.query_row(TAKEN, [], |row| row.get(0)).expect("taken");
        let mut named: Vec<&str> = taken.split(", ").collect();
        created.sort();
        named.sort_unstable();
        assert_eq!(created, named, "TAKEN must list every object of DDL");
    }

    /// `NOTES_NAMES` are what schema 4 adds to schema 3, but the guard it replaces: what an
    /// upgrade refuses to find already taken.
    #[test]
    fn the_notes_names_are_what_schema_4_adds() {
        let names = |ddl: &str| -> Vec<String> {
            let conn = Connection::open_in_memory().expect("memory database");
            conn.execute_batch(ddl).expect("ddl");
            let mut names: Vec<String> = conn
                .prepare("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'")
                .expect("names")
                .query_map([], |row| row.get(0))
                .expect("rows")
                .collect::<rusqlite::Result<_>>()
                .expect("names");
            names.sort();
            names
        };
        use crate::ddl::{HISTORY, HISTORY_OBJECTS, JOBS_OBJECTS, JOBS_TABLE, NOTES_NAMES, RETENTION};
        let three = format!("{RETENTION}{JOBS_TABLE}{JOBS_OBJECTS}{HISTORY}{HISTORY_OBJECTS}");
        let mut added: Vec<String> =
            names(&ddl()).into_iter().filter(|n| !names(&three).contains(n)).collect();
        added.retain(|n| n != "tombstones_forgotten_whole" && n != "paused_queues" && n != "jobs_kind_fixed");
        let mut want: Vec<String> = NOTES_NAMES.iter().map(|n| (*n).to_owned()).collect();
        want.sort();
        assert_eq!(added, want);
    }

    #[test]
    fn install_goes_next_to_the_applications_tables_and_nowhere_it_cannot() {
        let path = Path::new(":memory:");
        let conn = Connection::open_in_memory().expect("memory database");
        conn.execute_batch("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)").expect("app");
        assert!(matches!(inspect(&conn, path), Err(Error::NotRetryq { .. })), "create would refuse it");
        install(&conn).expect("install");
        assert_eq!(inspect(&conn, path).expect("inspect"), Found::Retryq);
        install(&conn).expect("installing twice is a no-op");

        let clash = Connection::open_in_memory().expect("memory database");
        clash.execute_batch("CREATE TABLE history (at INTEGER)").expect("app");
        let err = install(&clash).unwrap_err();
        assert!(err.to_string().contains("objects named history"), "{err}");

        let versioned = Connection::open_in_memory().expect("memory database");
        versioned.pragma_update(None, "user_version", 3).expect("app's own version");
        let err = install(&versioned).unwrap_err();
        assert!(err.to_string().contains("user_version 3"), "{err}");
        let objects: i64 =
            versioned.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0)).expect("count");
        assert_eq!(objects, 0, "a refused install writes nothing");
    }

    #[test]
    fn history_is_append_only_and_jobs_are_never_deleted() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        create(&mut conn, Path::new(":memory:")).expect("create");
        conn.execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                               redrives, enqueued_at, updated_at, not_before)
             VALUES ('a', '', 'pending', 0, 1, 0, 10, 0, 0, 0, 0)",
            [],
        )
        .expect("insert");
        let rows: i64 = conn.query_row("SELECT count(*) FROM history", [], |r| r.get(0)).expect("count");
        assert_eq!(rows, 1);
        assert!(conn.execute("DELETE FROM history", []).is_err());
        assert!(conn.execute("UPDATE history SET at = 5", []).is_err());
        assert!(conn.execute("DELETE FROM jobs", []).is_err());
        assert!(conn.execute("UPDATE jobs SET payload = 'x'", []).is_err());
        assert!(conn.execute("UPDATE jobs SET kind = 'mail'", []).is_err());
    }

    /// The notes' guards (SPEC 6.36): a record is opened only by a claim, changes only until
    /// its attempt ends, and goes only with a pruned job; a tally only grows, and stays.
    #[test]
    fn records_and_tallies_refuse_what_no_transition_writes() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        create(&mut conn, Path::new(":memory:")).expect("create");
        conn.execute_batch(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                               redrives, enqueued_at, updated_at, not_before)
             VALUES ('a', '', 'pending', 0, 5, 0, 10, 0, 0, 0, 0);
             UPDATE jobs SET status = 'leased', attempts = 1, owner = 'w', claimed_at = 1,
                             available_at = 5, updated_at = 1;
             UPDATE jobs SET status = 'pending', available_at = 8, owner = NULL, claimed_at = NULL,
                             updated_at = 3, last_error = 'e', last_node = NULL;",
        )
        .expect("a claim and a retry");
        let refused = |sql: &str| {
            let err = conn.execute_batch(sql).expect_err(sql);
            assert!(err.to_string().contains("retryq: "), "{sql}: {err}");
        };
        refused("INSERT INTO attempts (job, attempt, worker, claimed_at) VALUES ('a', 2, 'w', 4)");
        refused("INSERT INTO attempts (job, attempt, worker, claimed_at) VALUES ('b', 1, 'w', 4)");
        refused("UPDATE attempts SET error = 'x'");
        refused("UPDATE attempts SET outcome = 'ok'");
        refused("DELETE FROM attempts");
        refused("UPDATE tallies SET n = n - 1 WHERE metric = 'claims'");
        refused("DELETE FROM tallies");
        refused("UPDATE tally_buckets SET sum_ms = 0");
        refused("DELETE FROM tally_buckets");
        let record: (i64, String, Option<i64>, Option<String>, Option<String>) = conn
            .query_row("SELECT attempt, worker, ended_at, outcome, error FROM attempts", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .expect("the one record");
        assert_eq!(record, (1, "w".into(), Some(3), Some("retryable".into()), Some("e".into())));
        let tally: i64 = conn
            .query_row("SELECT n FROM tallies WHERE metric = 'claims' AND queue = 'default'", [], |r| {
                r.get(0)
            })
            .expect("claims");
        assert_eq!(tally, 1);
        // A prune that left the records behind keeps the tombstone from a forget.
        conn.execute_batch(
            "UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL, updated_at = 4,
                             ended_at = 4;
             INSERT INTO tombstones SELECT id, queue, printf('%064d', 0), status, dead_reason, attempts, ended_at
             FROM jobs;
             DELETE FROM jobs; DELETE FROM history;",
        )
        .expect("a prune that forgot the records");
        refused("DELETE FROM tombstones");
        conn.execute_batch("DELETE FROM attempts; DELETE FROM tombstones")
            .expect("records, then the tombstone");
    }

    #[test]
    fn writing_a_job_builds_no_temporary_btree() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        create(&mut conn, Path::new(":memory:")).expect("create");
        for sql in [
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                               redrives, enqueued_at, updated_at, not_before)
             VALUES ('a', '', 'pending', 0, 1, 0, 10, 0, 0, 0, 0)",
            "UPDATE jobs SET status = 'dead', dead_reason = 'permanent', available_at = NULL
             WHERE seq = 1",
        ] {
            let opcodes: Vec<String> = conn
                .prepare(&format!("EXPLAIN {sql}"))
                .expect("explain")
                .query_map([], |row| row.get(1))
                .expect("opcodes")
                .collect::<Result<_, _>>()
                .expect("rows");
            assert!(!opcodes.iter().any(|op| op == "OpenEphemeral"), "{sql}: {opcodes:?}");
        }
    }

    #[test]
    fn every_state_column_is_recorded_and_operator_notes_are_not() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        create(&mut conn, Path::new(":memory:")).expect("create");
        conn.execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                               redrives, enqueued_at, updated_at, not_before)
             VALUES ('a', '', 'pending', 0, 5, 0, 10, 0, 0, 0, 0)",
            [],
        )
        .expect("insert");
        let count = |conn: &Connection| -> i64 {
            conn.query_row("SELECT count(*) FROM history", [], |r| r.get(0)).expect("count")
        };
        conn.execute("UPDATE jobs SET last_error = 'exit 3', last_node = 'n1'", []).expect("note");
        assert_eq!(count(&conn), 1, "a note is not a transition");
        // Every column a transition may write is recorded, even when its value stays.
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('jobs')")
            .expect("columns")
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("names");
        let frozen = [
            "seq",
            "id",
            "payload",
            "enqueued_at",
            "not_before",
            "base_ms",
            "cap_ms",
            "queue",
            "priority",
            "kind",
        ];
        let notes = ["last_error", "last_node"];
        let mut expected = 1;
        for column in columns.iter().filter(|c| !frozen.contains(&c.as_str()) && !notes.contains(&c.as_str()))
        {
            conn.execute(&format!("UPDATE jobs SET {column} = {column}"), []).expect(column);
            expected += 1;
            assert_eq!(count(&conn), expected, "an update of {column} was not recorded");
        }
        assert_eq!(expected, 1 + 12, "the state columns changed: review jobs_history_update");
    }

    #[test]
    fn checks_refuse_rows_that_break_invariants() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        create(&mut conn, Path::new(":memory:")).expect("create");
        let insert = |status: &str, attempts: i64, available_at: Option<i64>, reason: Option<&str>| {
            conn.execute(
                "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at,
                                   deadline, dead_reason, redrives, enqueued_at, updated_at,
                                   not_before)
                 VALUES (hex(randomblob(8)), '', ?1, ?2, 3, ?3, 10, ?4, 0, 0, 0, 0)",
                rusqlite::params![status, attempts, available_at, reason],
            )
        };
        assert!(insert("pending", 0, Some(9), None).is_ok());
        assert!(insert("pending", 0, Some(10), None).is_err(), "invariant 6: available_at < deadline");
        assert!(insert("pending", 4, Some(0), None).is_err(), "attempts above max_attempts");
        assert!(insert("dead", 1, None, None).is_err(), "dead without a reason");
        assert!(insert("done", 1, Some(3), None).is_err(), "done with a reservation");
        assert!(insert("leased", 1, Some(3), None).is_err(), "leased without an owner");
        assert!(insert("waiting", 0, Some(0), None).is_err(), "unknown status");
        let ended = |status: &str, reason: Option<&str>, ended_at: Option<i64>, cancel: i64| {
            conn.execute(
                "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at,
                                   deadline, dead_reason, redrives, enqueued_at, updated_at,
                                   not_before, ended_at, cancel_requested)
                 VALUES (hex(randomblob(8)), '', ?1, 1, 3, NULL, 10, ?2, 0, 0, 0, 0, ?3, ?4)",
                rusqlite::params![status, reason, ended_at, cancel],
            )
        };
        assert!(ended("done", None, Some(5), 0).is_ok());
        assert!(ended("done", None, None, 0).is_err(), "ended without ended_at");
        assert!(ended("dead", Some("permanent"), Some(5), 1).is_err(), "a cancel request on a dead job");
    }

    #[test]
    fn checks_refuse_schedules_and_backoffs_out_of_range_and_never_let_them_change() {
        let mut conn = Connection::open_in_memory().expect("memory database");
        create(&mut conn, Path::new(":memory:")).expect("create");
        let insert = |enqueued_at: i64, not_before: i64, base_ms: Option<i64>, cap_ms: Option<i64>| {
            conn.execute(
                "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at,
                                   deadline, redrives, enqueued_at, updated_at, not_before,
                                   base_ms, cap_ms)
                 VALUES (hex(randomblob(8)), '', 'pending', 0, 3, ?2, 100, 0, ?1, ?1, ?2, ?3, ?4)",
                rusqlite::params![enqueued_at, not_before, base_ms, cap_ms],
            )
        };
        let max = crate::MAX_INT as i64;
        assert!(insert(5, 5, None, None).is_ok());
        assert!(insert(5, 9, Some(0), Some(max)).is_ok());
        assert!(insert(5, 4, None, None).is_err(), "a schedule before the enqueue");
        assert!(insert(5, 9, Some(max + 1), None).is_err(), "base_ms above 2^53-1");
        assert!(insert(5, 9, None, Some(-1)).is_err(), "a negative cap_ms");
        for column in ["not_before", "base_ms", "cap_ms", "kind"] {
            let err = conn.execute(&format!("UPDATE jobs SET {column} = 7"), []).unwrap_err();
            assert!(err.to_string().contains("never change"), "{column}: {err}");
        }
        let cancelled = conn.execute(
            "UPDATE jobs SET status = 'dead', dead_reason = 'cancelled', available_at = NULL, ended_at = 0",
            [],
        );
        assert!(cancelled.is_ok(), "cancelled is a dead reason: {cancelled:?}");
    }
}
