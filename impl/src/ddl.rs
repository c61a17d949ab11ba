//! What a retryq file holds: the schema's versions and the SQL that creates schema 2.
//!
//! Kept apart from `schema.rs` (recognising and creating a file) and `upgrade.rs` (turning a
//! schema 1 file into a schema 2 one) because both build from these same statements.

/// `PRAGMA application_id` of every retryq database: "RTRQ" in ASCII.
pub const APPLICATION_ID: i64 = 0x5254_5251;
/// `PRAGMA user_version` this build reads and writes.
pub const SCHEMA_VERSION: i64 = 2;
/// The one older schema version this build upgrades in place (contract 1.0's).
pub(crate) const SCHEMA_1: i64 = 1;

/// The tables, indexes and triggers of schema version 2: [`JOBS_TABLE`], then
/// [`JOBS_OBJECTS`], then [`HISTORY`]. They are three pieces because the upgrade from schema 1
/// (`upgrade.rs`) rebuilds the jobs table under another name and then recreates what hangs
/// on it, leaving the history table (and its own triggers) as they are.
///
/// The CHECK constraints restate SPEC invariants the queue code already keeps, so that a bug
/// turns into a refused write instead of a stored lie. They spell word lists as `=` … `OR`
/// rather than `IN (…)`: SQLite evaluates an `IN` list of three or more constants through a
/// temporary B-tree that it builds and drops again in every statement that writes a job.
/// The triggers keep `history` append-only and complete: every insert of a job, and every
/// update that names one of its state columns, is a transition, and the trigger, not the
/// caller, records it. Only `last_error` and `last_node` — notes for operators, not state —
/// are left out, so that noting an unclassified error on a live lease is not mistaken for a
/// transition. A heartbeat's new lease expiry is recorded too, as a `leased → leased` entry
/// with the attempt unchanged (a claim always adds one), so that every change of a lease's
/// expiry is explained in the history.
pub(crate) fn ddl() -> String {
    format!("{JOBS_TABLE}{JOBS_OBJECTS}{HISTORY}")
}

/// The jobs table of schema 2. `not_before`, `base_ms` and `cap_ms` (SPEC 1.1, 3.2) are
/// written once, by the enqueue, and never change: `jobs_identity_fixed` refuses an update.
/// `not_before` is at or after `enqueued_at` (SPEC 3.2: `now ≤ not_before`); it need not be
/// before the deadline, since a redrive may move the deadline below a schedule it replaced.
pub(crate) const JOBS_TABLE: &str = "
CREATE TABLE jobs (
    seq          INTEGER PRIMARY KEY,   -- insertion order: claim's tie-break
    id           TEXT    NOT NULL UNIQUE,
    payload      TEXT    NOT NULL,
    status       TEXT    NOT NULL
                 CHECK (status = 'pending' OR status = 'leased' OR status = 'done' OR status = 'dead'),
    attempts     INTEGER NOT NULL CHECK (attempts >= 0),
    max_attempts INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 2147483647),
    available_at INTEGER,               -- reservation (pending) or lease expiry (leased)
    deadline     INTEGER NOT NULL,
    dead_reason  TEXT    CHECK (dead_reason = 'exhausted' OR dead_reason = 'deadline'
                                OR dead_reason = 'permanent' OR dead_reason = 'cancelled'),
    redrives     INTEGER NOT NULL CHECK (redrives >= 0),
    enqueued_at  INTEGER NOT NULL,
    owner        TEXT,                  -- the lease holder, while leased
    claimed_at   INTEGER,               -- when the current lease began, while leased
    updated_at   INTEGER NOT NULL,      -- the `now` of the last transition
    last_error   TEXT,                  -- what the last recorded attempt's transport said went wrong
    last_node    TEXT,                  -- which receiver the last recorded attempt reached, if several
    not_before   INTEGER NOT NULL       -- the first available_at: the enqueue's not_before or now
                 CHECK (not_before BETWEEN 0 AND 9007199254740991),
    base_ms      INTEGER CHECK (base_ms BETWEEN 0 AND 9007199254740991),  -- the job's own, if any
    cap_ms       INTEGER CHECK (cap_ms BETWEEN 0 AND 9007199254740991),   -- the job's own, if any
    CHECK (attempts <= max_attempts),
    CHECK ((status IN ('pending', 'leased')) = (available_at IS NOT NULL)),
    CHECK ((status = 'dead') = (dead_reason IS NOT NULL)),
    CHECK ((status = 'leased') = (owner IS NOT NULL AND claimed_at IS NOT NULL)),
    CHECK (status <> 'pending' OR available_at < deadline),
    CHECK (not_before >= enqueued_at)
) STRICT;
";

/// The indexes and triggers on the jobs table.
pub(crate) const JOBS_OBJECTS: &str = "
-- claim's pick: the open job with the smallest available_at, ties by seq (the rowid, which
-- every index carries last). A scheduled job is simply pending with a later available_at.
CREATE INDEX jobs_due ON jobs (available_at) WHERE status IN ('pending', 'leased');
-- reap by deadline: open jobs whose deadline has come.
CREATE INDEX jobs_open_deadline ON jobs (deadline) WHERE status IN ('pending', 'leased');
-- reap by exhaustion: leases on a job's last attempt, by expiry.
CREATE INDEX jobs_last_lease ON jobs (available_at)
    WHERE status = 'leased' AND attempts >= max_attempts;

CREATE TRIGGER jobs_history_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at)
    VALUES (NEW.id, NULL, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, NEW.owner, NEW.updated_at);
END;
CREATE TRIGGER jobs_history_update
AFTER UPDATE OF status, attempts, max_attempts, available_at, deadline, dead_reason, redrives,
                owner, claimed_at, updated_at ON jobs BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at)
    VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, coalesce(NEW.owner, OLD.owner),
            NEW.updated_at);
END;
CREATE TRIGGER jobs_never_deleted BEFORE DELETE ON jobs BEGIN
    SELECT RAISE(ABORT, 'retryq: jobs are never deleted (no silent drop)');
END;
CREATE TRIGGER jobs_identity_fixed
BEFORE UPDATE OF seq, id, payload, enqueued_at, not_before, base_ms, cap_ms ON jobs BEGIN
    SELECT RAISE(ABORT, 'retryq: a job''s id, payload, first enqueue, schedule and own backoff never change');
END;
";

/// The history table and what keeps it append-only. Schema 2 keeps schema 1's unchanged.
const HISTORY: &str = "
CREATE TABLE history (
    n            INTEGER PRIMARY KEY,
    job          TEXT    NOT NULL,
    from_status  TEXT,                  -- NULL for the first enqueue
    to_status    TEXT    NOT NULL,
    attempt      INTEGER NOT NULL,      -- the job's attempts after the transition
    max_attempts INTEGER NOT NULL,
    deadline     INTEGER NOT NULL,
    available_at INTEGER,
    redrives     INTEGER NOT NULL,
    reason       TEXT,                  -- the dead_reason, for a move to dead
    worker       TEXT,                  -- the lease holder involved, if any
    at           INTEGER NOT NULL       -- the operation's now
) STRICT;
CREATE INDEX history_job ON history (job, n);
CREATE TRIGGER history_no_update BEFORE UPDATE ON history BEGIN
    SELECT RAISE(ABORT, 'retryq: history is append-only');
END;
CREATE TRIGGER history_no_delete BEFORE DELETE ON history BEGIN
    SELECT RAISE(ABORT, 'retryq: history is append-only');
END;
";
