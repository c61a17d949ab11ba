//! What a retryq PostgreSQL database holds, how it is recognised, how it is created.
//!
//! The tables mirror SQLite's schema 4 (`ddl.rs`) column for column and CHECK for CHECK, so
//! that the same bug is refused the same way on either store, with three differences of
//! the medium: `seq` is an identity column (insertion order, claim's tie-break), payloads and
//! notes are `bytea` (`value.rs` says why), and the text columns that hold names compare
//! byte for byte (`COLLATE "C"`), as SQLite's do. The triggers are plpgsql and keep the same
//! promises: `history` written by the database itself on every transition and never
//! changed, a job deleted only by a prune that leaves its tombstone, a job's identity never
//! changed. The SQL is in `pg/ddl.rs`.
//!
//! A schema of an older version (2, retryq 1.1's, to 8) is upgraded to version 9 in place,
//! in the one transaction that finds it, under the creation lock: a second connection waits,
//! then finds version 9. A failure anywhere rolls
//! the whole upgrade back. The counts `stats` reads (from 2) and the notes (from 2 or 3) are
//! filled from the rows, in that transaction, once the rows are in place and before the
//! triggers that keep them exist.
//!
//! Where SQLite marks its files with `application_id` and `user_version`, a PostgreSQL
//! database has a one-row table, `retryq_meta`, holding both. The schema lives in the
//! connection's current schema (the first of its `search_path`), so several queues may
//! share one database in schemas of their own, and a queue may live beside an
//! application's tables in another schema. A current schema that holds anything else is
//! refused and left untouched, never "repaired": a mistyped URL must not turn another
//! program's tables into a queue.

use super::ddl::{
    FILL_COUNTS, INDEXES_8, OBJECTS_3, PAUSED_6, TABLES_4, UPGRADE_2_TO_3, fill_4, kind_7, notes_9,
    objects_4, schema_9, upgrade_4_to_5,
};
use super::store::Tx;
use crate::ddl::{APPLICATION_ID, PG_SCHEMA_VERSION as SCHEMA_VERSION};
use crate::error::{Error, Result};

/// What the current schema turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Nothing there: the queue may be created.
    Empty,
    /// A retryq schema of this version.
    Retryq,
    /// A retryq schema of an older version this build upgrades: 2 to 8.
    Older(i64),
}

/// The older versions a PostgreSQL database may have: retryq 1.1's, and 1.2's before the
/// operators' notes (no release wrote version 1 on PostgreSQL).
const SCHEMA_2: i64 = 2;
const SCHEMA_3: i64 = 3;
/// Contract 1.2's with the operators' notes, before 1.3's bounded reap.
const SCHEMA_4: i64 = 4;
/// Contract 1.3's with the bounded reap, before its paused queues.
const SCHEMA_5: i64 = 5;
/// Contract 1.3's whole, before 1.4's job kinds.
const SCHEMA_6: i64 = 6;
/// Contract 1.4's, before the marks on the indexes of open jobs.
const SCHEMA_7: i64 = 7;
/// Contract 1.4's with the marks, before the notes' path for one row.
const SCHEMA_8: i64 = 8;
/// Every older version this build upgrades.
const OLDER: [i64; 7] = [SCHEMA_2, SCHEMA_3, SCHEMA_4, SCHEMA_5, SCHEMA_6, SCHEMA_7, SCHEMA_8];

/// The current schema, the database's encoding, whether the schema holds `retryq_meta`,
/// how many relations it holds (tables, views, sequences, indexes…), and which of the
/// schema's function names are taken: a schema that has one of them but no `retryq_meta`
/// cannot take the schema.
const LOOK: &str = "
    WITH here AS (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
    SELECT current_schema(),
           current_setting('server_encoding'),
           EXISTS (SELECT 1 FROM pg_catalog.pg_class
                   WHERE relnamespace = (SELECT oid FROM here) AND relname = 'retryq_meta'),
           (SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = (SELECT oid FROM here)),
           (SELECT string_agg(proname, ', ' ORDER BY proname) FROM pg_catalog.pg_proc
            WHERE pronamespace = (SELECT oid FROM here)
              AND proname IN ('retryq_history_insert', 'retryq_history_update', 'retryq_refuse',
                              'retryq_job_delete', 'retryq_job_not_over_a_tombstone',
                              'retryq_history_delete', 'retryq_tombstone_insert',
                              'retryq_tombstone_delete', 'retryq_counts_shard', 'retryq_count',
                              'retryq_attempt_opened', 'retryq_attempt_delete',
                              'retryq_attempt_reported', 'retryq_tally_heartbeat', 'retryq_notes'))";

const META: &str = "SELECT application_id, schema_version FROM retryq_meta";

/// Serialises the creation of the schema across connections: held to the end of the
/// transaction that creates it, so a second connection to an empty database waits, then
/// finds the schema there.
const CREATION_LOCK: &str = "SELECT pg_advisory_xact_lock($1)";

const MARK: &str = "INSERT INTO retryq_meta (application_id, schema_version) VALUES ($1, $2)";

/// The version mark an upgrade leaves, once every step of it has run.
const REMARK: &str = "UPDATE retryq_meta SET schema_version = $1";

/// Makes the current schema a queue inside the caller's write transaction, or refuses it
/// (and the caller's rollback leaves it exactly as it was): an empty schema gets the
/// schema, an older retryq one is upgraded, each under the creation lock and after looking
/// again under it; a retryq one of this version is left as it is.
pub(super) fn prepare(tx: &mut Tx<'_>, name: &str) -> Result<()> {
    settle(tx, name, false)
}

/// [`prepare`] for a schema that holds the application's own tables: the queue is put
/// beside them ([`PgQueue::install`](super::PgQueue::install)), unless one of them bears a
/// name the queue's schema uses.
pub(super) fn install(tx: &mut Tx<'_>, name: &str) -> Result<()> {
    settle(tx, name, true)
}

/// [`upgrade`] of an older retryq schema alone: never creates one (what
/// [`PgQueue::connect_existing`](super::PgQueue::connect_existing) may do to a database it
/// finds older). Whether there was one, of this version when done.
pub(super) fn upgrade_existing(tx: &mut Tx<'_>, name: &str) -> Result<bool> {
    match inspect(tx, name)? {
        Found::Retryq => Ok(true),
        Found::Empty => Ok(false),
        Found::Older(_) => {
            tx.query_one(CREATION_LOCK, &[&APPLICATION_ID])?;
            match inspect(tx, name)? {
                Found::Older(version) => upgrade(tx, version, name).map(|()| true),
                found => Ok(found == Found::Retryq),
            }
        }
    }
}

/// [`prepare`] and [`install`]: `beside` the application's tables or in a schema of its own.
fn settle(tx: &mut Tx<'_>, name: &str, beside: bool) -> Result<()> {
    if inspect_with(tx, name, beside)? == Found::Retryq {
        return Ok(());
    }
    tx.query_one(CREATION_LOCK, &[&APPLICATION_ID])?;
    // READ COMMITTED: this statement sees what the connection that held the lock committed.
    match inspect_with(tx, name, beside)? {
        Found::Empty => {
            tx.batch(&schema_9())?;
            tx.execute(MARK, &[&APPLICATION_ID, &SCHEMA_VERSION])?;
        }
        Found::Older(version) => upgrade(tx, version, name)?,
        Found::Retryq => {}
    }
    Ok(())
}

/// Schema `version` (2 to 8) to this build's, inside the caller's transaction, under the
/// creation lock: every step or none (`ddl.rs` says what each does).
fn upgrade(tx: &mut Tx<'_>, version: i64, name: &str) -> Result<()> {
    if !OLDER.contains(&version) {
        return Err(Error::Corrupt(format!("no upgrade from PostgreSQL schema version {version}")));
    }
    let taken: Option<String> = match version {
        SCHEMA_6 | SCHEMA_7 | SCHEMA_8 => None,
        _ => tx.query_one(PAUSED_TAKEN, &[])?.try_get(0)?,
    };
    if let Some(taken) = taken {
        return Err(Error::NotRetryq {
            path: name.into(),
            why: format!(
                "the schema already has relations named {taken}, which schema 6 adds: rename \
                 them, then connect again"
            ),
        });
    }
    if version == SCHEMA_2 || version == SCHEMA_3 {
        to_4(tx, version, name)?;
    }
    if version < SCHEMA_5 {
        // Four indexes built anew from the open jobs, and the notes' function replaced.
        tx.batch(&upgrade_4_to_5())?;
    }
    if version < SCHEMA_6 {
        // Schema 6: the paused queues, none yet.
        tx.batch(PAUSED_6)?;
    }
    if version < SCHEMA_7 {
        // Schema 7: every job so far has no kind; the tombstones' guard digests the kind too.
        tx.batch(&kind_7())?;
    }
    if version < SCHEMA_8 {
        // Schema 8: the indexes of open jobs built anew, each with its mark.
        tx.batch(INDEXES_8)?;
    }
    // Schema 9: the notes' function, with its path for one row.
    tx.batch(&notes_9())?;
    tx.execute(REMARK, &[&SCHEMA_VERSION])?;
    Ok(())
}

/// Schema 2 or 3 to schema 4, but for the version mark.
fn to_4(tx: &mut Tx<'_>, version: i64, name: &str) -> Result<()> {
    // An application's relation beside the queue that bears a name schema 4 adds: the upgrade
    // would fail on it half-way; the operator hears why, and the rollback leaves it all.
    let taken: Option<String> = tx.query_one(NOTES_TAKEN, &[])?.try_get(0)?;
    if let Some(taken) = taken {
        return Err(Error::NotRetryq {
            path: name.into(),
            why: format!(
                "the schema already has relations named {taken}, which schema {SCHEMA_4} adds: \
                 rename them, then connect again"
            ),
        });
    }
    if version == SCHEMA_2 {
        tx.batch(UPGRADE_2_TO_3)?;
        tx.batch(OBJECTS_3)?;
        tx.batch(FILL_COUNTS)?;
    }
    tx.batch(TABLES_4)?;
    tx.batch(&fill_4())?;
    tx.batch(&objects_4())?;
    Ok(())
}

/// The relations of the current schema that bear a name the queue's schema uses (its
/// tables, their indexes and identity sequences), if any.
const TAKEN: &str = "
    SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_catalog.pg_class
    WHERE relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
      AND relname IN ('retryq_meta', 'retryq_meta_pkey', 'jobs', 'jobs_pkey', 'jobs_id_key',
                      'jobs_seq_seq', 'jobs_due', 'jobs_open_deadline', 'jobs_last_lease',
                      'jobs_cancelling', 'jobs_ended', 'history', 'history_pkey',
                      'history_n_seq', 'history_job', 'tombstones', 'tombstones_pkey',
                      'tombstones_ended', 'jobs_open_age', 'jobs_leases', 'counts',
                      'counts_pkey', 'attempts', 'attempts_pkey', 'tallies', 'tallies_pkey',
                      'tally_buckets', 'tally_buckets_pkey', 'paused_queues', 'paused_queues_pkey')";

/// The relations of the current schema that bear a name schema 6 adds.
const PAUSED_TAKEN: &str = "
    SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_catalog.pg_class
    WHERE relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
      AND relname IN ('paused_queues', 'paused_queues_pkey')";

/// The relations of the current schema that bear a name schema 4 adds.
const NOTES_TAKEN: &str = "
    SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_catalog.pg_class
    WHERE relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
      AND relname IN ('attempts', 'attempts_pkey', 'tallies', 'tallies_pkey', 'tally_buckets',
                      'tally_buckets_pkey')";

/// Decides what the current schema is, reading only.
pub(super) fn inspect(tx: &mut Tx<'_>, name: &str) -> Result<Found> {
    inspect_with(tx, name, false)
}

/// [`inspect`]; with `beside`, a schema holding other relations is `Empty` (the queue may
/// be installed beside them) unless one of them is named like one of the queue's.
fn inspect_with(tx: &mut Tx<'_>, name: &str, beside: bool) -> Result<Found> {
    let refuse = |why: String| Error::NotRetryq { path: name.into(), why };
    let row = tx.query_one(LOOK, &[])?;
    let schema: Option<String> = row.try_get(0)?;
    let encoding: String = row.try_get(1)?;
    let marked: bool = row.try_get(2)?;
    let relations: i64 = row.try_get(3)?;
    let functions: Option<String> = row.try_get(4)?;
    let Some(schema) = schema else {
        return Err(refuse("no schema of the search_path exists to hold the queue".into()));
    };
    if encoding != "UTF8" {
        return Err(refuse(format!("the database's encoding is {encoding}; retryq stores UTF-8 text")));
    }
    if !marked {
        if relations > 0 && !beside {
            return Err(refuse(format!("schema {schema:?} holds {relations} relations of another program")));
        }
        if beside {
            let taken: Option<String> = tx.query_one(TAKEN, &[])?.try_get(0)?;
            if let Some(taken) = taken {
                return Err(refuse(format!("schema {schema:?} already has relations named {taken}")));
            }
        }
        if let Some(functions) = functions {
            return Err(refuse(format!("schema {schema:?} already has functions named {functions}")));
        }
        return Ok(Found::Empty);
    }
    let rows = tx.query(META, &[]).map_err(|e| match &e {
        Error::Postgres(pg) if pg.code().is_some_and(|c| c.code().starts_with("42")) => {
            let why = crate::error::postgres_text(pg);
            refuse(format!("schema {schema:?} has a table retryq_meta that is not retryq's: {why}"))
        }
        _ => e,
    })?;
    let [row] = rows.as_slice() else {
        return Err(refuse(format!("retryq_meta holds {} rows, not one", rows.len())));
    };
    let (application_id, version): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    if application_id != APPLICATION_ID {
        return Err(refuse(format!("retryq_meta holds application id {application_id:#x}")));
    }
    if version > SCHEMA_VERSION {
        return Err(Error::NewerSchema { path: name.into(), found: version, supported: SCHEMA_VERSION });
    }
    if OLDER.contains(&version) {
        return Ok(Found::Older(version));
    }
    if version < SCHEMA_VERSION {
        return Err(refuse(format!("schema version {version}, which no retryq release wrote on PostgreSQL")));
    }
    Ok(Found::Retryq)
}

#[cfg(test)]
mod tests {
    /// The functions `LOOK` names are the ones schema 5 creates (and so the ones schemas 2
    /// to 4 created, which it replaces).
    #[test]
    fn look_names_every_function_the_schema_creates() {
        let ddl = super::schema_9();
        let created: std::collections::BTreeSet<&str> = ddl
            .split("CREATE OR REPLACE FUNCTION ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .collect();
        assert_eq!(created.len(), 15, "{created:?}");
        for name in &created {
            assert!(super::LOOK.contains(&format!("'{name}'")), "{name}");
        }
        assert!(!ddl.contains("CREATE FUNCTION"), "every function is created or replaced");
    }

    /// The relations `TAKEN` names are the ones schema 5 creates.
    #[test]
    fn taken_names_every_relation_the_schema_creates() {
        let ddl = super::schema_9();
        for word in ["CREATE TABLE ", "CREATE INDEX "] {
            for rest in ddl.split(word).skip(1) {
                let name = rest.split_whitespace().next().unwrap_or_default();
                assert!(super::TAKEN.contains(&format!("'{name}'")), "{name}");
            }
        }
    }
}
