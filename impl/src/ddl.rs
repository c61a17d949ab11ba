//! What a retryq file holds: the schema's versions and the SQL that creates schema 3.
//!
//! Kept apart from `schema.rs` (recognising and creating a file) and `upgrade.rs` (turning a
//! schema 1 or 2 file into a schema 3 one) because both build from these same statements.

/// `PRAGMA application_id` of every retryq database: "RTRQ" in ASCII.
pub const APPLICATION_ID: i64 = 0x5254_5251;
/// `PRAGMA user_version` this build reads and writes.
pub const SCHEMA_VERSION: i64 = 3;
/// The older schema versions this build upgrades in place: contract 1.0's and 1.1's.
pub(crate) const SCHEMA_1: i64 = 1;
pub(crate) const SCHEMA_2: i64 = 2;

/// The tables, indexes and triggers of schema version 3: [`JOBS_TABLE`], then
/// [`JOBS_OBJECTS`], then [`HISTORY`], [`HISTORY_OBJECTS`] and [`RETENTION`]. They are pieces
/// because the upgrades (`upgrade.rs`) rebuild the jobs table under another name and then
/// recreate what hangs on it, and add to the history table rather than rebuild it.
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
    format!("{RETENTION}{JOBS_TABLE}{JOBS_OBJECTS}{HISTORY}{HISTORY_OBJECTS}")
}

/// The jobs table of schema 3. `not_before`, `base_ms` and `cap_ms` (SPEC 1.1, 3.2) are
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
    queue        TEXT    NOT NULL DEFAULT 'default' CHECK (length(CAST(queue AS BLOB)) BETWEEN 1 AND 64),
    priority     INTEGER NOT NULL DEFAULT 0 CHECK (priority BETWEEN 0 AND 9),
    ended_at     INTEGER,               -- the now of the transition that ended it, once done or dead
    cancel_requested INTEGER NOT NULL DEFAULT 0 CHECK (cancel_requested = 0 OR cancel_requested = 1),
    CHECK (attempts <= max_attempts),
    CHECK ((status IN ('pending', 'leased')) = (available_at IS NOT NULL)),
    CHECK ((status = 'dead') = (dead_reason IS NOT NULL)),
    CHECK ((status = 'leased') = (owner IS NOT NULL AND claimed_at IS NOT NULL)),
    CHECK (status <> 'pending' OR available_at < deadline),
    CHECK (not_before >= enqueued_at),
    CHECK ((status = 'done' OR status = 'dead') = (ended_at IS NOT NULL)),
    CHECK (cancel_requested = 0 OR status = 'leased')
) STRICT;
";

/// The indexes and triggers on the jobs table.
pub(crate) const JOBS_OBJECTS: &str = "
-- claim's pick: for each queue it serves and each priority, the open job with the smallest
-- available_at, ties by seq (the rowid, which every index carries last). A scheduled job is
-- simply pending with a later available_at.
CREATE INDEX jobs_due ON jobs (queue, priority, available_at) WHERE status IN ('pending', 'leased');
-- stats' oldest open job, queue by queue.
CREATE INDEX jobs_open_age ON jobs (queue, enqueued_at) WHERE status IN ('pending', 'leased');
-- stats' expired leases, queue by queue: a walk of the leases alone.
CREATE INDEX jobs_leases ON jobs (queue, available_at) WHERE status = 'leased';
-- reap of a cancel request: expired leases of jobs an operator asked to stop.
CREATE INDEX jobs_cancelling ON jobs (available_at) WHERE status = 'leased' AND cancel_requested = 1;
-- prune: ended jobs by the time they ended.
CREATE INDEX jobs_ended ON jobs (ended_at) WHERE status IN ('done', 'dead');
-- reap by deadline: open jobs whose deadline has come.
CREATE INDEX jobs_open_deadline ON jobs (deadline) WHERE status IN ('pending', 'leased');
-- reap by exhaustion: leases on a job's last attempt, by expiry.
CREATE INDEX jobs_last_lease ON jobs (available_at)
    WHERE status = 'leased' AND attempts >= max_attempts;

CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO counts (queue, status, reason, n)
    VALUES (NEW.queue, NEW.status, coalesce(NEW.dead_reason, ''), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER jobs_count_update AFTER UPDATE OF status, dead_reason ON jobs
WHEN OLD.status IS NOT NEW.status OR OLD.dead_reason IS NOT NEW.dead_reason BEGIN
    UPDATE counts SET n = n - 1
    WHERE queue = OLD.queue AND status = OLD.status AND reason = coalesce(OLD.dead_reason, '');
    INSERT INTO counts (queue, status, reason, n)
    VALUES (NEW.queue, NEW.status, coalesce(NEW.dead_reason, ''), 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
    UPDATE counts SET n = n - 1
    WHERE queue = OLD.queue AND status = OLD.status AND reason = coalesce(OLD.dead_reason, '');
END;
CREATE TRIGGER jobs_history_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at)
    VALUES (NEW.id, NULL, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, NEW.owner, NEW.updated_at);
END;
CREATE TRIGGER jobs_history_update
AFTER UPDATE OF status, attempts, max_attempts, available_at, deadline, dead_reason, redrives,
                owner, claimed_at, updated_at, ended_at, cancel_requested ON jobs BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at, cancel_requested)
    VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, coalesce(NEW.owner, OLD.owner),
            NEW.updated_at, NEW.cancel_requested);
END;
-- Only a prune deletes a job: an ended one, whose tombstone it has just written (SPEC 3.14).
CREATE TRIGGER jobs_never_deleted BEFORE DELETE ON jobs
WHEN NOT (OLD.status IN ('done', 'dead')
          AND EXISTS (SELECT 1 FROM tombstones WHERE id = OLD.id AND ended_at = OLD.ended_at)) BEGIN
    SELECT RAISE(ABORT, 'retryq: a job is deleted only by a prune, once ended, leaving a tombstone (no silent drop)');
END;
CREATE TRIGGER jobs_identity_fixed
BEFORE UPDATE OF seq, id, payload, enqueued_at, not_before, base_ms, cap_ms, queue, priority ON jobs BEGIN
    SELECT RAISE(ABORT, 'retryq: a job''s id, payload, first enqueue, schedule, own backoff, queue and priority never change');
END;
-- An id names a job or a tombstone, never both once a statement is over: a new job under a
-- pruned id is refused (SPEC 3.2), as long as its tombstone stands.
CREATE TRIGGER jobs_not_over_a_tombstone BEFORE INSERT ON jobs
WHEN EXISTS (SELECT 1 FROM tombstones WHERE id = NEW.id) BEGIN
    SELECT RAISE(ABORT, 'retryq: the id is a pruned job''s, kept by its tombstone');
END;
";

/// The history table. Schema 3 adds `cancel_requested` to schema 1's and 2's (the upgrade
/// adds the column, with 0 for every older entry: no older job had a cancel request).
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
    at           INTEGER NOT NULL,      -- the operation's now
    cancel_requested INTEGER NOT NULL DEFAULT 0 -- whether a cancel request stood after it
) STRICT;
";

/// What keeps history append-only: an entry never changes, and goes only with its job, in a
/// prune, after the job row itself (SPEC 3.14).
pub(crate) const HISTORY_OBJECTS: &str = "
CREATE INDEX history_job ON history (job, n);
CREATE TRIGGER history_no_update BEFORE UPDATE ON history BEGIN
    SELECT RAISE(ABORT, 'retryq: history is append-only');
END;
CREATE TRIGGER history_no_delete BEFORE DELETE ON history
WHEN EXISTS (SELECT 1 FROM jobs WHERE id = OLD.job)
     OR NOT EXISTS (SELECT 1 FROM tombstones WHERE id = OLD.job) BEGIN
    SELECT RAISE(ABORT, 'retryq: history is append-only; it goes only with a pruned job');
END;
";

/// Schema 3's additions for contract 1.2: tombstones (SPEC 1.7) and the counts `stats` reads
/// instead of scanning the jobs (kept by the jobs' and tombstones' triggers, in the same
/// transaction as each transition; the audit checks them against the rows).
pub(crate) const RETENTION: &str = "
CREATE TABLE tombstones (
    id          TEXT    PRIMARY KEY,
    queue       TEXT    NOT NULL,
    digest      TEXT    NOT NULL CHECK (length(digest) = 64),   -- SHA-256 of the payload, hex
    status      TEXT    NOT NULL CHECK (status = 'done' OR status = 'dead'),
    dead_reason TEXT    CHECK (dead_reason = 'exhausted' OR dead_reason = 'deadline'
                               OR dead_reason = 'permanent' OR dead_reason = 'cancelled'),
    attempts    INTEGER NOT NULL CHECK (attempts >= 0),
    ended_at    INTEGER NOT NULL,
    CHECK ((status = 'dead') = (dead_reason IS NOT NULL))
) STRICT, WITHOUT ROWID;
-- forget: tombstones by the time their jobs ended.
CREATE INDEX tombstones_ended ON tombstones (ended_at);
CREATE TRIGGER tombstones_never_change BEFORE UPDATE ON tombstones BEGIN
    SELECT RAISE(ABORT, 'retryq: a tombstone never changes');
END;
-- A tombstone is written only by a prune, of an ended job of the same id and end.
CREATE TRIGGER tombstones_of_ended_jobs BEFORE INSERT ON tombstones
WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE id = NEW.id AND status = NEW.status
                 AND ended_at = NEW.ended_at AND attempts = NEW.attempts AND queue = NEW.queue
                 AND dead_reason IS NEW.dead_reason) BEGIN
    SELECT RAISE(ABORT, 'retryq: a tombstone is written only by a prune, of the ended job it stands for');
END;
-- A forget removes a tombstone with nothing left of its job.
CREATE TRIGGER tombstones_forgotten_whole BEFORE DELETE ON tombstones
WHEN EXISTS (SELECT 1 FROM jobs WHERE id = OLD.id)
     OR EXISTS (SELECT 1 FROM history WHERE job = OLD.id) BEGIN
    SELECT RAISE(ABORT, 'retryq: a tombstone goes only once its job and history are gone');
END;
CREATE TRIGGER tombstones_count_insert AFTER INSERT ON tombstones BEGIN
    INSERT INTO counts (queue, status, reason, n) VALUES (NEW.queue, 'pruned_' || NEW.status, '', 1)
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER tombstones_count_delete AFTER DELETE ON tombstones BEGIN
    UPDATE counts SET n = n - 1 WHERE queue = OLD.queue AND status = 'pruned_' || OLD.status AND reason = '';
END;
CREATE TABLE counts (
    queue  TEXT    NOT NULL,
    status TEXT    NOT NULL,   -- pending, leased, done, dead, pruned_done or pruned_dead
    reason TEXT    NOT NULL,   -- the dead reason of dead jobs, '' for the others
    n      INTEGER NOT NULL CHECK (n >= 0),
    PRIMARY KEY (queue, status, reason)
) STRICT, WITHOUT ROWID;
";
