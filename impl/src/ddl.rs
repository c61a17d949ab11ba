//! What a retryq file holds: the schema's versions and the SQL that creates schema 4.
//!
//! Kept apart from `schema.rs` (recognising and creating a file) and `upgrade.rs` (turning a
//! schema 1, 2 or 3 file into a schema 4 one) because both build from these same statements.

/// `PRAGMA application_id` of every retryq database: "RTRQ" in ASCII.
pub const APPLICATION_ID: i64 = 0x5254_5251;
/// `PRAGMA user_version` this build reads and writes.
pub const SCHEMA_VERSION: i64 = 7;
/// `schema_version` in `retryq_meta` this build reads and writes on PostgreSQL: SQLite's, but
/// for schema 8, which marks the indexes of open jobs (`pg/ddl.rs`) against statistics that
/// saw none (SQLite keeps no statistics: nothing runs `ANALYZE`), and schema 9, whose notes'
/// function runs a statement of one job row apart (its statement-level triggers are
/// PostgreSQL's alone). SQLite's schema stays 7.
pub const PG_SCHEMA_VERSION: i64 = 9;
/// The older schema versions this build upgrades in place: contract 1.0's and 1.1's, and
/// contract 1.2's before the operators' notes of schema 4 (SPEC 6.36).
pub(crate) const SCHEMA_1: i64 = 1;
pub(crate) const SCHEMA_2: i64 = 2;
pub(crate) const SCHEMA_3: i64 = 3;
/// Contract 1.2's schema with the operators' notes, before 1.3's bounded reap: its claim index
/// did not carry `deadline`.
pub(crate) const SCHEMA_4: i64 = 4;
/// Contract 1.3's schema with the bounded reap, before its paused queues.
pub(crate) const SCHEMA_5: i64 = 5;
/// Contract 1.3's schema whole, before 1.4's job kinds.
pub(crate) const SCHEMA_6: i64 = 6;

/// The tables, indexes and triggers of schema version 7: [`RETENTION`], [`JOBS_TABLE`], then
/// [`JOBS_OBJECTS`], then [`HISTORY`] and [`HISTORY_OBJECTS`] — schema 3 — the operators'
/// notes' tables, [`NOTES_TABLES`] — schema 4 and 5 — [`PAUSED`] — schema 6 — [`KIND`], and
/// the notes' triggers, [`notes_objects`], which label the tallies by kind. They are pieces because the upgrades
/// (`upgrade.rs`) rebuild the jobs table under another name and then recreate what hangs on
/// it, add to the history table rather than rebuild it, and fill the notes' tables from the
/// history before their triggers exist.
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
    format!(
        "{RETENTION}{JOBS_TABLE}{JOBS_OBJECTS}{HISTORY}{HISTORY_OBJECTS}{NOTES_TABLES}{PAUSED}{KIND}{}",
        notes_objects()
    )
}

/// Schema 7's job kinds (SPEC 1.1, 6.44): a label of at most 64 bytes, `''` for none — and so
/// for every job of an older schema. Added to the table of schema 3 rather than written into
/// [`JOBS_TABLE`], so that a new file and an upgraded one are built by the same statement; a
/// column with a constant default is added without rewriting a row.
pub(crate) const KIND: &str = "
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT '' CHECK (length(CAST(kind AS BLOB)) <= 64);
CREATE TRIGGER jobs_kind_fixed BEFORE UPDATE OF kind ON jobs BEGIN
    SELECT RAISE(ABORT, 'retryq: a job''s kind never changes');
END;
";

/// Schema 6's paused queues (SPEC 3.16, 6.40): a name and the time of its first pause, for as
/// long as it is paused. A name no job carries may be paused; no trigger of the jobs or the
/// tombstones touches the table, so a prune or a forget never does.
pub(crate) const PAUSED: &str = "
CREATE TABLE paused_queues (
    queue     TEXT    PRIMARY KEY CHECK (length(CAST(queue AS BLOB)) BETWEEN 1 AND 64),
    paused_at INTEGER NOT NULL CHECK (paused_at BETWEEN 0 AND 9007199254740991)
) STRICT, WITHOUT ROWID;
";

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

/// Claim's index (schema 5): for each queue it serves and each priority, the open jobs by
/// `available_at`, ties by `seq` (the rowid), and each entry's `deadline`, so that a pick
/// passes over a job due to end (SPEC 3.3.2, 6.37) without reading its row. A scheduled job
/// is simply pending with a later `available_at`.
macro_rules! jobs_due {
    () => {
        "
CREATE INDEX jobs_due ON jobs (queue, priority, available_at, seq, deadline)
    WHERE status IN ('pending', 'leased');
"
    };
}

/// Schema 4 to schema 5: claim's index carries `deadline`. (An older schema's upgrade rebuilds
/// the jobs table with [`JOBS_OBJECTS`], which has it already.)
pub(crate) const UPGRADE_4_TO_5: &str = concat!("DROP INDEX jobs_due;", jobs_due!());

/// The indexes and triggers on the jobs table.
pub(crate) const JOBS_OBJECTS: &str = concat!(
    jobs_due!(),
    "-- stats' oldest open job, queue by queue.
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
"
);

/// The history table. Schema 3 adds `cancel_requested` to schema 1's and 2's (the upgrade
/// adds the column, with 0 for every older entry: no older job had a cancel request).
pub(crate) const HISTORY: &str = "
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

/// Schema 7's tallies (SPEC 6.36, 6.44): keyed by metric, queue, the jobs' kind (`''` for
/// none, and for every tally of a prune or a forget, which are not about a job's kind) and
/// a last label (`''` for none). A table of its own piece because schema 7 rebuilds an older
/// file's tallies with this very text ([`TALLIES_7`]).
macro_rules! tally_tables {
    () => {
        "
CREATE TABLE tallies (
    metric TEXT    NOT NULL,
    queue  TEXT    NOT NULL,
    kind   TEXT    NOT NULL,          -- the jobs' kind, '' for none
    label  TEXT    NOT NULL,          -- the metric's last label's value, '' for none
    n      INTEGER NOT NULL CHECK (n >= 0),
    PRIMARY KEY (metric, queue, kind, label)
) STRICT, WITHOUT ROWID;
CREATE TABLE tally_buckets (
    metric TEXT    NOT NULL,
    queue  TEXT    NOT NULL,
    kind   TEXT    NOT NULL,
    label  TEXT    NOT NULL,
    le     INTEGER NOT NULL,          -- the bucket's upper bound in ms; 2^63-1 for +Inf
    n      INTEGER NOT NULL CHECK (n >= 0),
    sum_ms INTEGER NOT NULL CHECK (sum_ms >= 0),   -- stops at 2^63-1 rather than overflow
    PRIMARY KEY (metric, queue, kind, label, le)
) STRICT, WITHOUT ROWID;
"
    };
}

/// Schema 4's tables of operators' notes (SPEC 6.36): a record of every attempt, and the
/// tallies that only grow. Not state: no operation reads them.
///
/// `attempts` has one row per claim, written when the claim is: open (no `ended_at`, no
/// `outcome`) while the attempt runs, ended once by whatever ends it. `tallies` holds the
/// counters and `tally_buckets` the histograms' buckets, each bucket with the sum of what
/// fell in it (so one observation is one upsert); both are keyed by metric, queue and a
/// last label (`''` for none), and since schema 7 by the jobs' kind (`tally_tables!`). The
/// words are `notes.rs`'s.
pub(crate) const NOTES_TABLES: &str = concat!(
    "
CREATE TABLE attempts (
    job        TEXT    NOT NULL,
    attempt    INTEGER NOT NULL CHECK (attempt >= 1),
    worker     TEXT    NOT NULL,      -- the lease holder
    claimed_at INTEGER NOT NULL,      -- the claim's now
    ended_at   INTEGER,               -- the now of what ended it; NULL while it runs
    outcome    TEXT    CHECK (outcome = 'ok' OR outcome = 'retryable' OR outcome = 'permanent'
                              OR outcome = 'lease expired' OR outcome = 'expired or retryable'),
    error      TEXT,                  -- its report's or its live lease's note
    node       TEXT,
    CHECK ((ended_at IS NULL) = (outcome IS NULL)),
    PRIMARY KEY (job, attempt)
) STRICT, WITHOUT ROWID;
",
    tally_tables!()
);

/// Schema 4, 5 or 6 to schema 7's tallies, after the notes' triggers are dropped
/// ([`notes_triggers`]) and before they are created again: every tally kept so far is kept
/// under kind `''` (SPEC 6.36: what was never kept is not made up). SQLite cannot change a
/// table's key, so the tables are copied aside, dropped, created as a new file has them and
/// filled back; they hold a few rows per queue, whatever the number of jobs.
pub(crate) const TALLIES_7: &str = concat!(
    "
CREATE TEMP TABLE retryq_tallies_6 AS SELECT metric, queue, label, n FROM main.tallies;
CREATE TEMP TABLE retryq_tally_buckets_6 AS SELECT metric, queue, label, le, n, sum_ms FROM main.tally_buckets;
DROP TABLE main.tallies;
DROP TABLE main.tally_buckets;
",
    tally_tables!(),
    "
INSERT INTO main.tallies (metric, queue, kind, label, n)
    SELECT metric, queue, '', label, n FROM temp.retryq_tallies_6;
INSERT INTO main.tally_buckets (metric, queue, kind, label, le, n, sum_ms)
    SELECT metric, queue, '', label, le, n, sum_ms FROM temp.retryq_tally_buckets_6;
DROP TABLE temp.retryq_tallies_6;
DROP TABLE temp.retryq_tally_buckets_6;
"
);

/// The triggers [`notes_objects`] creates — [`NOTES_NAMES`] but its tables, and the
/// tombstones' guard — which an upgrade to schema 7 drops (the tallies' guards go with their
/// tables) and creates again with the kinds.
pub(crate) fn notes_triggers() -> impl Iterator<Item = &'static str> {
    NOTES_NAMES[3..].iter().copied().chain(["tombstones_forgotten_whole"])
}

/// The names of what schema 4 adds to schema 3 (but the tombstones' guard it replaces): an
/// older file that already has an object of one of these names — an application's, beside
/// the queue — cannot take schema 4, and its upgrade says so (`upgrade.rs`).
pub(crate) const NOTES_NAMES: [&str; 19] = [
    "attempts",
    "tallies",
    "tally_buckets",
    "attempts_of_claims",
    "attempts_ended_never_change",
    "attempts_no_delete",
    "tallies_only_grow",
    "tallies_never_deleted",
    "tally_buckets_only_grow",
    "tally_buckets_never_deleted",
    "jobs_tally_enqueued",
    "jobs_attempt_claimed",
    "jobs_attempt_reported",
    "jobs_tally_moved",
    "jobs_tally_cancel_requested",
    "jobs_tally_heartbeat",
    "attempts_tally_ended",
    "tombstones_tally_pruned",
    "tombstones_tally_forgotten",
];

/// One more of counter `metric` of `queue`, `kind` and `label`, when `when` holds: a
/// statement of a trigger body.
fn tally(metric: &str, queue: &str, kind: &str, label: &str, when: &str) -> String {
    format!(
        "INSERT INTO tallies (metric, queue, kind, label, n) SELECT '{metric}', {queue}, {kind}, {label}, 1 WHERE {when}
    ON CONFLICT DO UPDATE SET n = n + 1;"
    )
}

/// One observation `value` of histogram `metric` of `queue`, `kind` and `label`, from the
/// rows of `from` (an SQL `FROM` list whose columns the expressions may name), into its
/// bucket.
fn observe(metric: &str, queue: &str, kind: &str, label: &str, value: &str, from: &str) -> String {
    let bucket = crate::notes::bucket_of("o.v");
    format!(
        "INSERT INTO tally_buckets (metric, queue, kind, label, le, n, sum_ms)
    SELECT '{metric}', {queue}, {kind}, {label}, {bucket}, 1, o.v FROM (SELECT {value} AS v, * FROM {from}) AS o WHERE true
    ON CONFLICT DO UPDATE SET n = n + 1, sum_ms = min(sum_ms + excluded.sum_ms, 9223372036854775807);"
    )
}

/// What the outcome of a completion is, from the job's new status and reason: the report's
/// outcome (SPEC 3.4), a `retryable` one whatever end it came to.
const REPORTED: &str = "CASE NEW.status WHEN 'done' THEN 'ok' WHEN 'pending' THEN 'retryable'
        ELSE CASE NEW.dead_reason WHEN 'permanent' THEN 'permanent' ELSE 'retryable' END END";

/// The triggers of schema 4's notes, and the tombstones' guard that now also waits for the
/// attempts' records (it replaces schema 3's).
///
/// Every claim opens its attempt's record (the row's `attempts` goes up: nothing else moves
/// it); a claim of an expired lease first ends the record of the attempt it takes the job
/// from, as `lease expired`. A completion is the one transition that names `last_error`
/// (its report's notes): the trigger that sees it runs *before* the row changes, so it ends
/// the record with the report's outcome before any trigger that runs after; what leaves
/// `leased` with its record still open came with no report — a reap of the expired lease —
/// and ends it as `lease expired`. A note on a live lease (`record_error`) names
/// `last_error` too and stays leased: it writes the open record's notes, which is how a
/// reaped attempt keeps the error its holder noted. The tallies are kept in the same
/// statements, each only where its event happened.
pub(crate) fn notes_objects() -> String {
    let open = "job = OLD.id AND attempt = OLD.attempts AND ended_at IS NULL";
    let still_open =
        "EXISTS (SELECT 1 FROM attempts WHERE job = NEW.id AND attempt = NEW.attempts AND ended_at IS NULL)";
    format!(
        "
-- An attempt's record is opened only by the claim that began it.
CREATE TRIGGER attempts_of_claims BEFORE INSERT ON attempts
WHEN NOT EXISTS (SELECT 1 FROM jobs WHERE id = NEW.job AND status = 'leased' AND attempts = NEW.attempt
                 AND owner = NEW.worker AND claimed_at = NEW.claimed_at) BEGIN
    SELECT RAISE(ABORT, 'retryq: an attempt''s record is opened only by the claim that began it');
END;
-- An ended record never changes; an open one only gets its notes and its end.
CREATE TRIGGER attempts_ended_never_change BEFORE UPDATE ON attempts
WHEN OLD.ended_at IS NOT NULL OR NEW.job IS NOT OLD.job OR NEW.attempt IS NOT OLD.attempt
     OR NEW.worker IS NOT OLD.worker OR NEW.claimed_at IS NOT OLD.claimed_at BEGIN
    SELECT RAISE(ABORT, 'retryq: an attempt''s record changes only until the attempt ends');
END;
-- Records go only with their job, in a prune, as its history does.
CREATE TRIGGER attempts_no_delete BEFORE DELETE ON attempts
WHEN EXISTS (SELECT 1 FROM jobs WHERE id = OLD.job)
     OR NOT EXISTS (SELECT 1 FROM tombstones WHERE id = OLD.job) BEGIN
    SELECT RAISE(ABORT, 'retryq: an attempt''s record goes only with a pruned job');
END;
-- A forget removes a tombstone with nothing left of its job.
CREATE TRIGGER tombstones_forgotten_whole BEFORE DELETE ON tombstones
WHEN EXISTS (SELECT 1 FROM jobs WHERE id = OLD.id)
     OR EXISTS (SELECT 1 FROM history WHERE job = OLD.id)
     OR EXISTS (SELECT 1 FROM attempts WHERE job = OLD.id) BEGIN
    SELECT RAISE(ABORT, 'retryq: a tombstone goes only once its job, history and attempts are gone');
END;
-- A tally only grows, and stays.
CREATE TRIGGER tallies_only_grow BEFORE UPDATE ON tallies
WHEN NEW.n < OLD.n OR NEW.metric IS NOT OLD.metric OR NEW.queue IS NOT OLD.queue
     OR NEW.kind IS NOT OLD.kind OR NEW.label IS NOT OLD.label BEGIN
    SELECT RAISE(ABORT, 'retryq: a tally only grows');
END;
CREATE TRIGGER tallies_never_deleted BEFORE DELETE ON tallies BEGIN
    SELECT RAISE(ABORT, 'retryq: a tally only grows');
END;
CREATE TRIGGER tally_buckets_only_grow BEFORE UPDATE ON tally_buckets
WHEN NEW.n < OLD.n OR NEW.sum_ms < OLD.sum_ms OR NEW.metric IS NOT OLD.metric
     OR NEW.queue IS NOT OLD.queue OR NEW.kind IS NOT OLD.kind OR NEW.label IS NOT OLD.label
     OR NEW.le IS NOT OLD.le BEGIN
    SELECT RAISE(ABORT, 'retryq: a tally only grows');
END;
CREATE TRIGGER tally_buckets_never_deleted BEFORE DELETE ON tally_buckets BEGIN
    SELECT RAISE(ABORT, 'retryq: a tally only grows');
END;

CREATE TRIGGER jobs_tally_enqueued AFTER INSERT ON jobs BEGIN
    {enqueued}
END;
-- A claim: the expired lease it takes ends, its attempt begins (SPEC 3.3.3), and the wait
-- from when the job was due is observed.
CREATE TRIGGER jobs_attempt_claimed AFTER UPDATE OF attempts ON jobs
WHEN NEW.attempts > OLD.attempts BEGIN
    UPDATE attempts SET ended_at = NEW.claimed_at, outcome = 'lease expired'
    WHERE OLD.status = 'leased' AND {open};
    INSERT INTO attempts (job, attempt, worker, claimed_at)
    VALUES (NEW.id, NEW.attempts, NEW.owner, NEW.claimed_at);
    {claims}
    {wait}
END;
-- A completion's report, or a note on the live lease, before the row changes.
CREATE TRIGGER jobs_attempt_reported BEFORE UPDATE OF last_error ON jobs
WHEN OLD.status = 'leased' BEGIN
    UPDATE attempts SET error = NEW.last_error, node = NEW.last_node,
                        ended_at = CASE WHEN NEW.status <> 'leased' THEN NEW.updated_at END,
                        outcome = CASE WHEN NEW.status <> 'leased' THEN {REPORTED} END
    WHERE {open};
END;
-- Out of leased with the record still open: no report came, a reap took the expired lease.
-- And the moves the tallies count.
CREATE TRIGGER jobs_tally_moved AFTER UPDATE OF status ON jobs
WHEN OLD.status IS NOT NEW.status BEGIN
    {reaped_lease}
    UPDATE attempts SET ended_at = NEW.updated_at, outcome = 'lease expired'
    WHERE OLD.status = 'leased' AND NEW.status <> 'leased' AND {open};
    {deaths}
    {reaped_pending}
    {redrives}
    {cancelled}
END;
CREATE TRIGGER jobs_tally_cancel_requested AFTER UPDATE OF cancel_requested ON jobs
WHEN NEW.cancel_requested = 1 AND OLD.cancel_requested = 0 BEGIN
    {requested}
END;
CREATE TRIGGER jobs_tally_heartbeat AFTER UPDATE OF available_at ON jobs
WHEN OLD.status = 'leased' AND NEW.status = 'leased' AND NEW.attempts = OLD.attempts BEGIN
    {heartbeats}
END;
CREATE TRIGGER attempts_tally_ended AFTER UPDATE OF ended_at ON attempts
WHEN OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL BEGIN
    {duration}
END;
CREATE TRIGGER tombstones_tally_pruned AFTER INSERT ON tombstones BEGIN
    {pruned}
END;
CREATE TRIGGER tombstones_tally_forgotten AFTER DELETE ON tombstones BEGIN
    {forgotten}
END;
",
        enqueued = tally("enqueued", "NEW.queue", "NEW.kind", "''", "true"),
        claims = tally("claims", "NEW.queue", "NEW.kind", "''", "true"),
        wait = observe(
            "claim_wait",
            "NEW.queue",
            "NEW.kind",
            "''",
            "max(NEW.claimed_at - OLD.available_at, 0)",
            "(SELECT 1)"
        ),
        reaped_lease = tally(
            "reaped",
            "NEW.queue",
            "NEW.kind",
            "coalesce(NEW.dead_reason, '')",
            &format!("OLD.status = 'leased' AND NEW.status = 'dead' AND {still_open}")
        ),
        deaths =
            tally("deaths", "NEW.queue", "NEW.kind", "coalesce(NEW.dead_reason, '')", "NEW.status = 'dead'"),
        reaped_pending = tally(
            "reaped",
            "NEW.queue",
            "NEW.kind",
            "coalesce(NEW.dead_reason, '')",
            "OLD.status = 'pending' AND NEW.dead_reason = 'deadline'"
        ),
        redrives = tally("redrives", "NEW.queue", "NEW.kind", "''", "OLD.status = 'dead'"),
        cancelled = tally(
            "cancels",
            "NEW.queue",
            "NEW.kind",
            "'pending'",
            "OLD.status = 'pending' AND NEW.dead_reason = 'cancelled'"
        ),
        requested = tally("cancels", "NEW.queue", "NEW.kind", "'request'", "true"),
        heartbeats = tally("heartbeats", "NEW.queue", "NEW.kind", "''", "true"),
        duration = observe(
            "attempt_duration",
            "o.queue",
            "o.kind",
            "NEW.outcome",
            "max(NEW.ended_at - NEW.claimed_at, 0)",
            "(SELECT queue, kind FROM jobs WHERE id = NEW.job)"
        ),
        // A tombstone keeps no kind, so neither a prune's tally nor a forget's is by kind.
        pruned = tally("pruned", "NEW.queue", "''", "NEW.status", "true"),
        forgotten = tally("forgotten", "OLD.queue", "''", "''", "true"),
    )
}
