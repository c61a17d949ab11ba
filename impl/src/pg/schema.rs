//! What a retryq PostgreSQL database holds, how it is recognised, how it is created.
//!
//! The tables mirror SQLite's schema 2 (`ddl.rs`) column for column and CHECK for CHECK, so
//! that the same bug is refused the same way on either store, with three differences of
//! the medium: `seq` is an identity column (insertion order, claim's tie-break), payloads and
//! notes are `bytea` (`value.rs` says why), and the text columns that hold names compare
//! byte for byte (`COLLATE "C"`), as SQLite's do. The triggers are plpgsql and keep the same
//! promises: `history` written by the database itself on every transition and never
//! changed, jobs never deleted, a job's identity never changed.
//!
//! Where SQLite marks its files with `application_id` and `user_version`, a PostgreSQL
//! database has a one-row table, `retryq_meta`, holding both. The schema lives in the
//! connection's current schema (the first of its `search_path`), so several queues may
//! share one database in schemas of their own, and a queue may live beside an
//! application's tables in another schema. A current schema that holds anything else is
//! refused and left untouched, never "repaired": a mistyped URL must not turn another
//! program's tables into a queue.

use super::store::Tx;
use crate::ddl::{APPLICATION_ID, SCHEMA_VERSION};
use crate::error::{Error, Result};

/// What the current schema turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Nothing there: the queue may be created.
    Empty,
    /// A retryq schema of this version.
    Retryq,
}

/// The tables, indexes, functions and triggers of the schema, and its mark. Run once, in the
/// transaction that found the schema empty under the creation lock.
///
/// The trigger functions pin their `search_path` to the schema they were created in, so
/// that a session with another `search_path` still writes the history beside its jobs.
/// `UPDATE OF` fires, as SQLite's does, whenever a listed column is named in the `SET`,
/// even to its old value: every transition names `updated_at`, and a note names neither a
/// state column nor `updated_at`, so a note is not a transition. PostgreSQL has `TRUNCATE`
/// besides `DELETE`; it is refused as well.
const DDL: &str = r#"
CREATE TABLE retryq_meta (
    one            boolean PRIMARY KEY DEFAULT true CHECK (one),   -- at most one row
    application_id bigint  NOT NULL,
    schema_version bigint  NOT NULL
);

CREATE TABLE jobs (
    seq          bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,   -- claim's tie-break
    id           text    COLLATE "C" NOT NULL UNIQUE,
    payload      bytea   NOT NULL,
    status       text    NOT NULL CHECK (status IN ('pending', 'leased', 'done', 'dead')),
    attempts     bigint  NOT NULL CHECK (attempts >= 0),
    max_attempts bigint  NOT NULL CHECK (max_attempts BETWEEN 1 AND 2147483647),
    available_at bigint,               -- reservation (pending) or lease expiry (leased)
    deadline     bigint  NOT NULL,
    dead_reason  text    CHECK (dead_reason IN ('exhausted', 'deadline', 'permanent', 'cancelled')),
    redrives     bigint  NOT NULL CHECK (redrives >= 0),
    enqueued_at  bigint  NOT NULL,
    owner        text    COLLATE "C",  -- the lease holder, while leased
    claimed_at   bigint,               -- when the current lease began, while leased
    updated_at   bigint  NOT NULL,     -- the `now` of the last transition
    last_error   bytea,                -- what the last recorded attempt's transport said
    last_node    bytea,                -- which receiver the last recorded attempt reached
    not_before   bigint  NOT NULL CHECK (not_before BETWEEN 0 AND 9007199254740991),
    base_ms      bigint  CHECK (base_ms BETWEEN 0 AND 9007199254740991),
    cap_ms       bigint  CHECK (cap_ms BETWEEN 0 AND 9007199254740991),
    CHECK (attempts <= max_attempts),
    CHECK ((status IN ('pending', 'leased')) = (available_at IS NOT NULL)),
    CHECK ((status = 'dead') = (dead_reason IS NOT NULL)),
    CHECK ((status = 'leased') = (owner IS NOT NULL AND claimed_at IS NOT NULL)),
    CHECK (status <> 'pending' OR available_at < deadline),
    CHECK (not_before >= enqueued_at)
);
-- claim's pick: the open job with the smallest available_at, ties by seq.
CREATE INDEX jobs_due ON jobs (available_at, seq) WHERE status IN ('pending', 'leased');
-- reap by deadline: open jobs whose deadline has come.
CREATE INDEX jobs_open_deadline ON jobs (deadline) WHERE status IN ('pending', 'leased');
-- reap by exhaustion: leases on a job's last attempt, by expiry.
CREATE INDEX jobs_last_lease ON jobs (available_at)
    WHERE status = 'leased' AND attempts >= max_attempts;

CREATE TABLE history (
    n            bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          text    COLLATE "C" NOT NULL,
    from_status  text,                 -- NULL for the first enqueue
    to_status    text    NOT NULL,
    attempt      bigint  NOT NULL,     -- the job's attempts after the transition
    max_attempts bigint  NOT NULL,
    deadline     bigint  NOT NULL,
    available_at bigint,
    redrives     bigint  NOT NULL,
    reason       text,                 -- the dead_reason, for a move to dead
    worker       text    COLLATE "C",  -- the lease holder involved, if any
    at           bigint  NOT NULL      -- the operation's now
);
CREATE INDEX history_job ON history (job, n);

CREATE FUNCTION retryq_history_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at)
    VALUES (NEW.id, NULL, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, NEW.owner, NEW.updated_at);
    RETURN NULL;
END $$;

CREATE FUNCTION retryq_history_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at)
    VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, coalesce(NEW.owner, OLD.owner),
            NEW.updated_at);
    RETURN NULL;
END $$;

-- Refuses the statement with the trigger's first argument as the message.
CREATE FUNCTION retryq_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER jobs_history_insert AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION retryq_history_insert();
CREATE TRIGGER jobs_history_update
    AFTER UPDATE OF status, attempts, max_attempts, available_at, deadline, dead_reason, redrives,
                    owner, claimed_at, updated_at ON jobs
    FOR EACH ROW EXECUTE FUNCTION retryq_history_update();
CREATE TRIGGER jobs_never_deleted BEFORE DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION retryq_refuse('retryq: jobs are never deleted (no silent drop)');
CREATE TRIGGER jobs_never_truncated BEFORE TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: jobs are never deleted (no silent drop)');
CREATE TRIGGER jobs_identity_fixed
    BEFORE UPDATE OF seq, id, payload, enqueued_at, not_before, base_ms, cap_ms ON jobs
    FOR EACH ROW EXECUTE FUNCTION
    retryq_refuse('retryq: a job''s id, payload, first enqueue, schedule and own backoff never change');
CREATE TRIGGER history_no_update BEFORE UPDATE ON history
    FOR EACH ROW EXECUTE FUNCTION retryq_refuse('retryq: history is append-only');
CREATE TRIGGER history_no_delete BEFORE DELETE ON history
    FOR EACH ROW EXECUTE FUNCTION retryq_refuse('retryq: history is append-only');
CREATE TRIGGER history_no_truncate BEFORE TRUNCATE ON history
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: history is append-only');
"#;

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
              AND proname IN ('retryq_history_insert', 'retryq_history_update', 'retryq_refuse'))";

const META: &str = "SELECT application_id, schema_version FROM retryq_meta";

/// Serialises the creation of the schema across connections: held to the end of the
/// transaction that creates it, so a second connection to an empty database waits, then
/// finds the schema there.
const CREATION_LOCK: &str = "SELECT pg_advisory_xact_lock($1)";

const MARK: &str = "INSERT INTO retryq_meta (application_id, schema_version) VALUES ($1, $2)";

/// Makes the current schema a queue inside the caller's write transaction, or refuses it
/// (and the caller's rollback leaves it exactly as it was): an empty schema gets the
/// schema, under the creation lock and after looking again under it; a retryq one of this
/// version is left as it is.
pub(super) fn prepare(tx: &mut Tx<'_>, name: &str) -> Result<()> {
    if inspect(tx, name)? == Found::Retryq {
        return Ok(());
    }
    tx.query_one(CREATION_LOCK, &[&APPLICATION_ID])?;
    // READ COMMITTED: this statement sees what the connection that held the lock committed.
    if inspect(tx, name)? == Found::Empty {
        tx.batch(DDL)?;
        tx.execute(MARK, &[&APPLICATION_ID, &SCHEMA_VERSION])?;
    }
    Ok(())
}

/// [`prepare`] for a schema that holds the application's own tables: the queue is put
/// beside them ([`PgQueue::install`](super::PgQueue::install)), unless one of them bears a
/// name the queue's schema uses.
pub(super) fn install(tx: &mut Tx<'_>, name: &str) -> Result<()> {
    if inspect_with(tx, name, true)? == Found::Retryq {
        return Ok(());
    }
    tx.query_one(CREATION_LOCK, &[&APPLICATION_ID])?;
    if inspect_with(tx, name, true)? == Found::Empty {
        tx.batch(DDL)?;
        tx.execute(MARK, &[&APPLICATION_ID, &SCHEMA_VERSION])?;
    }
    Ok(())
}

/// The relations of the current schema that bear a name the queue's schema uses (its
/// tables, their indexes and identity sequences), if any.
const TAKEN: &str = "
    SELECT string_agg(relname, ', ' ORDER BY relname) FROM pg_catalog.pg_class
    WHERE relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
      AND relname IN ('retryq_meta', 'retryq_meta_pkey', 'jobs', 'jobs_pkey', 'jobs_id_key',
                      'jobs_seq_seq', 'jobs_due', 'jobs_open_deadline', 'jobs_last_lease',
                      'history', 'history_pkey', 'history_n_seq', 'history_job')";

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
            refuse(format!("schema {schema:?} has a table retryq_meta that is not retryq's: {pg}"))
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
    if version < SCHEMA_VERSION {
        return Err(refuse(format!("schema version {version}, which no retryq release wrote on PostgreSQL")));
    }
    Ok(Found::Retryq)
}

#[cfg(test)]
mod tests {
    /// The functions `LOOK` names are the ones `DDL` creates.
    #[test]
    fn look_names_every_function_the_schema_creates() {
        let created: Vec<&str> =
            super::DDL.split("CREATE FUNCTION ").skip(1).filter_map(|rest| rest.split('(').next()).collect();
        assert_eq!(created.len(), 3, "{created:?}");
        for name in &created {
            assert!(super::LOOK.contains(&format!("'{name}'")), "{name}");
        }
    }
}
