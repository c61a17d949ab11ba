//! The SQL of a retryq PostgreSQL schema: schema 3 (contract 1.2), which `schema.rs` creates,
//! the statements that upgrade schema 2 (contract 1.1) to it in place, and schema 2 itself,
//! kept verbatim: the upgrade's starting point, which its test builds a database from.
//!
//! Schema 3 mirrors SQLite's schema 3 (`ddl.rs`) rule for rule, with the differences of the
//! medium `schema.rs` lists, and one of design: the counts `stats` reads (SPEC 3.8) are
//! sharded. SQLite keeps one row per queue, status and reason; here that row would be a lock
//! every concurrent completion and claim of the queue waits on until the one before it
//! commits, and completions on PostgreSQL run beside each other and beside claims
//! (`turn.rs`). So `counts` holds up to 16 rows per queue, status and reason, one per shard,
//! and `stats` sums them. A write adds to the shard its transaction owns: the first, counting
//! from its backend's (`pg_backend_pid() % 16`), whose transaction-scoped advisory lock it
//! holds or takes without waiting ([`OBJECTS_3`]'s `retryq_counts_shard`). While no more
//! than 16 transactions write at once, no two of them ever touch the same counter row: a
//! counter never makes a write wait, and so never closes a deadlock. Past 16, a transaction
//! that finds every shard taken writes its backend's anyway, under the rows' own locks, in
//! one statement with its rows in key order: it may wait for the shard's owner, and a
//! deadlock (SQLSTATE 40P01, which needs that owner to wait in turn for a job row the
//! latecomer holds) is possible but transient, and the store runs the transaction again.
//!
//! The counts are kept by statement-level triggers over the statement's transition tables
//! (every changed row old and new): one upsert per statement, whatever number of rows a
//! batch, a reap or a prune moves, of the net change per queue, status and reason (a
//! heartbeat's or a note's is none, and writes nothing). A shard's `n` may fall below zero —
//! a job counted into one shard when enqueued leaves from another when it ends — and only
//! the sum over the shards is the count; the audit checks the sums against the rows.

//! Pieces, so that creating and upgrading build from the same text: [`JOBS_3`] and
//! [`HISTORY_3`] are the two tables as schema 3 creates them (their columns in the order an
//! upgrade's `ADD COLUMN`s leave them), [`OBJECTS_3`] everything schema 3 adds or redefines
//! — indexes, the tombstones, the functions (`CREATE OR REPLACE`) and every trigger — which
//! the upgrade runs after dropping the triggers and the index it replaces.

/// Schema 2's tables, indexes, functions and triggers, as retryq 1.1 created them. Not run
/// by this build but in tests: a database of schema 2 is upgraded ([`UPGRADE_2_TO_3`]).
///
/// The trigger functions pin their `search_path` to the schema they were created in, so
/// that a session with another `search_path` still writes the history beside its jobs.
/// `UPDATE OF` fires, as SQLite's does, whenever a listed column is named in the `SET`,
/// even to its old value: every transition names `updated_at`, and a note names neither a
/// state column nor `updated_at`, so a note is not a transition. PostgreSQL has `TRUNCATE`
/// besides `DELETE`; it is refused as well.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) const SCHEMA_2: &str = r#"
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

/// The version mark's table: one row.
pub(super) const META: &str = "
CREATE TABLE retryq_meta (
    one            boolean PRIMARY KEY DEFAULT true CHECK (one),   -- at most one row
    application_id bigint  NOT NULL,
    schema_version bigint  NOT NULL
);
";

/// Schema 3's jobs table and the indexes schema 2 had already. `queue`, `priority`,
/// `ended_at` and `cancel_requested` (SPEC 1.1, 1.6, 3.13) come last, where an upgrade's
/// `ADD COLUMN` puts them, and their CHECKs are named, so that a created schema and an
/// upgraded one are the same schema (the upgrade's test compares the catalogs).
pub(super) const JOBS_3: &str = r#"
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
    queue        text    COLLATE "C" NOT NULL
                 CONSTRAINT jobs_queue_check CHECK (octet_length(queue) BETWEEN 1 AND 64),
    priority     smallint NOT NULL CONSTRAINT jobs_priority_check CHECK (priority BETWEEN 0 AND 9),
    ended_at     bigint,               -- the now of the transition that made it done or dead
    cancel_requested boolean NOT NULL DEFAULT false,   -- an operator asked the holder to stop
    CHECK (attempts <= max_attempts),
    CHECK ((status IN ('pending', 'leased')) = (available_at IS NOT NULL)),
    CHECK ((status = 'dead') = (dead_reason IS NOT NULL)),
    CHECK ((status = 'leased') = (owner IS NOT NULL AND claimed_at IS NOT NULL)),
    CHECK (status <> 'pending' OR available_at < deadline),
    CHECK (not_before >= enqueued_at),
    CONSTRAINT jobs_ended_check CHECK ((status IN ('done', 'dead')) = (ended_at IS NOT NULL)),
    CONSTRAINT jobs_cancel_check CHECK (NOT cancel_requested OR status = 'leased')
);
-- reap by deadline: open jobs whose deadline has come.
CREATE INDEX jobs_open_deadline ON jobs (deadline) WHERE status IN ('pending', 'leased');
-- reap by exhaustion: leases on a job's last attempt, by expiry.
CREATE INDEX jobs_last_lease ON jobs (available_at)
    WHERE status = 'leased' AND attempts >= max_attempts;
"#;

/// Schema 3's history table: schema 2's and `cancel_requested`, whether a cancel request
/// stood after the transition (false for every entry an upgrade finds: 1.1 had none).
pub(super) const HISTORY_3: &str = r#"
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
    at           bigint  NOT NULL,     -- the operation's now
    cancel_requested boolean NOT NULL DEFAULT false
);
CREATE INDEX history_job ON history (job, n);
"#;

/// What schema 3 adds to, or redefines in, schema 2's tables: the claim's index by queue and
/// priority, the reap's, the prune's and `stats`' indexes, the tombstones (SPEC 1.7), the
/// sharded counts `stats` reads (SPEC 3.8), the functions (created or replaced) and every
/// trigger of the three tables.
///
/// The triggers keep SPEC 1.1's promises in the database: history is written on every
/// transition and goes only with a pruned job; a job is deleted only by a prune, once done
/// or dead, after its tombstone is written; a tombstone is written only of the ended job it
/// stands for, never changes, and goes (a forget) only once its job and history are gone;
/// no job is inserted under an id a tombstone holds. That last check runs after the insert:
/// an insert that waited for a prune deleting the same id's job (`ON CONFLICT` waits for
/// it) sees the prune's tombstone then, and fails with SQLSTATE `RQ001`, which the store
/// runs again (`store.rs`): the second run finds the tombstone and answers by its digest.
/// And the jobs' and tombstones' statements keep the counts, in the same transaction.
pub(super) const OBJECTS_3: &str = r#"
-- claim's pick: for each queue it serves and each priority, the open job with the smallest
-- available_at, ties by seq. A scheduled job is simply pending with a later available_at.
CREATE INDEX jobs_due ON jobs (queue, priority, available_at, seq) WHERE status IN ('pending', 'leased');
-- stats' oldest open job, queue by queue.
CREATE INDEX jobs_open_age ON jobs (queue, enqueued_at) WHERE status IN ('pending', 'leased');
-- stats' expired leases, queue by queue: a walk of the leases alone.
CREATE INDEX jobs_leases ON jobs (queue, available_at) WHERE status = 'leased';
-- reap of a cancel request: expired leases of jobs an operator asked to stop.
CREATE INDEX jobs_cancelling ON jobs (available_at) WHERE status = 'leased' AND cancel_requested;
-- prune: ended jobs by the time they ended.
CREATE INDEX jobs_ended ON jobs (ended_at) WHERE status IN ('done', 'dead');

CREATE TABLE tombstones (
    id          text     COLLATE "C" PRIMARY KEY,
    queue       text     COLLATE "C" NOT NULL CHECK (octet_length(queue) BETWEEN 1 AND 64),
    digest      char(64) NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),   -- SHA-256 of the payload
    status      text     NOT NULL CHECK (status IN ('done', 'dead')),
    dead_reason text     CHECK (dead_reason IN ('exhausted', 'deadline', 'permanent', 'cancelled')),
    attempts    bigint   NOT NULL CHECK (attempts >= 0),
    ended_at    bigint   NOT NULL,
    CHECK ((status = 'dead') = (dead_reason IS NOT NULL))
);
-- forget: tombstones by the time their jobs ended.
CREATE INDEX tombstones_ended ON tombstones (ended_at);

-- What stats counts (SPEC 3.8), by queue, status (a job's, or pruned_done and pruned_dead for
-- the tombstones) and reason (a dead job's, '' for the others), in shards: the count is the
-- sum of a key's shards, each of which may be below zero (see the module's comment).
CREATE TABLE counts (
    queue  text     COLLATE "C" NOT NULL,
    status text     NOT NULL
           CHECK (status IN ('pending', 'leased', 'done', 'dead', 'pruned_done', 'pruned_dead')),
    reason text     NOT NULL,
    shard  smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
    n      bigint   NOT NULL,
    PRIMARY KEY (queue, status, reason, shard)
);

CREATE OR REPLACE FUNCTION retryq_history_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at, cancel_requested)
    VALUES (NEW.id, NULL, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, NEW.owner, NEW.updated_at,
            NEW.cancel_requested);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION retryq_history_update() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO history (job, from_status, to_status, attempt, max_attempts, deadline,
                         available_at, redrives, reason, worker, at, cancel_requested)
    VALUES (NEW.id, OLD.status, NEW.status, NEW.attempts, NEW.max_attempts, NEW.deadline,
            NEW.available_at, NEW.redrives, NEW.dead_reason, coalesce(NEW.owner, OLD.owner),
            NEW.updated_at, NEW.cancel_requested);
    RETURN NULL;
END $$;

-- Refuses the statement with the trigger's first argument as the message.
CREATE OR REPLACE FUNCTION retryq_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'restrict_violation';
END $$;

-- Only a prune deletes a job: an ended one, whose tombstone it has just written (SPEC 3.14).
CREATE OR REPLACE FUNCTION retryq_job_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT (OLD.status IN ('done', 'dead')
            AND EXISTS (SELECT 1 FROM tombstones WHERE id = OLD.id AND ended_at = OLD.ended_at)) THEN
        RAISE EXCEPTION 'retryq: a job is deleted only by a prune, once ended, leaving a tombstone (no silent drop)'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;

-- An id names a job or a tombstone, never both: a new job under a pruned id is refused
-- (SPEC 3.2, 4.14), as long as its tombstone stands.
CREATE OR REPLACE FUNCTION retryq_job_not_over_a_tombstone() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM tombstones WHERE id = NEW.id) THEN
        RAISE EXCEPTION 'retryq: the id % is a pruned job''s, kept by its tombstone', NEW.id
            USING ERRCODE = 'RQ001';
    END IF;
    RETURN NULL;
END $$;

-- History goes only with its job, in a prune: after the job row, once the tombstone stands.
CREATE OR REPLACE FUNCTION retryq_history_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM jobs WHERE id = OLD.job)
       OR NOT EXISTS (SELECT 1 FROM tombstones WHERE id = OLD.job) THEN
        RAISE EXCEPTION 'retryq: history is append-only; it goes only with a pruned job'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;

-- A tombstone is written only by a prune, of the ended job it stands for.
CREATE OR REPLACE FUNCTION retryq_tombstone_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM jobs
                   WHERE id = NEW.id AND status = NEW.status AND ended_at = NEW.ended_at
                     AND attempts = NEW.attempts AND queue = NEW.queue
                     AND dead_reason IS NOT DISTINCT FROM NEW.dead_reason
                     AND encode(sha256(payload), 'hex') = NEW.digest) THEN
        RAISE EXCEPTION 'retryq: a tombstone is written only by a prune, of the ended job it stands for'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;

-- A forget removes a tombstone with nothing left of its job.
CREATE OR REPLACE FUNCTION retryq_tombstone_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM jobs WHERE id = OLD.id)
       OR EXISTS (SELECT 1 FROM history WHERE job = OLD.id) THEN
        RAISE EXCEPTION 'retryq: a tombstone goes only once its job and history are gone'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;

-- The counts' shard this transaction writes: the first of the 16, counting from the
-- backend's own, whose advisory lock (in a key space of this schema's counts table) the
-- transaction holds or takes without waiting; held to its end, so that no other writes the
-- shard meanwhile. When all 16 are taken, the backend's own, unowned.
CREATE OR REPLACE FUNCTION retryq_counts_shard() RETURNS smallint LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
    space integer := ('counts'::regclass::oid::bigint - 2147483648)::integer;
    own integer := pg_backend_pid() % 16;
BEGIN
    FOR i IN 0..15 LOOP
        IF pg_try_advisory_xact_lock(space, (own + i) % 16) THEN
            RETURN (own + i) % 16;
        END IF;
    END LOOP;
    RETURN own;
END $$;

-- Adds a statement's net change per queue, status and reason to the transaction's shard,
-- in one upsert, its rows in key order: the jobs' (their status and dead reason) or the
-- tombstones' (pruned_ and their status). `old_rows` and `new_rows` are the statement's
-- transition tables, whichever of them the firing trigger has. The shard is picked once,
-- and only when something changed.
CREATE OR REPLACE FUNCTION retryq_count() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_TABLE_NAME = 'jobs' AND TG_OP = 'INSERT' THEN
        INSERT INTO counts AS c (queue, status, reason, shard, n)
        SELECT queue, status, coalesce(dead_reason, ''), (SELECT retryq_counts_shard()), count(*)
        FROM new_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (queue, status, reason, shard) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_TABLE_NAME = 'jobs' AND TG_OP = 'UPDATE' THEN
        INSERT INTO counts AS c (queue, status, reason, shard, n)
        SELECT queue, status, reason, (SELECT retryq_counts_shard()), sum(n)
        FROM (SELECT queue, status, coalesce(dead_reason, '') AS reason, 1 AS n FROM new_rows
              UNION ALL
              SELECT queue, status, coalesce(dead_reason, ''), -1 FROM old_rows) AS moves
        GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (queue, status, reason, shard) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_TABLE_NAME = 'jobs' THEN
        INSERT INTO counts AS c (queue, status, reason, shard, n)
        SELECT queue, status, coalesce(dead_reason, ''), (SELECT retryq_counts_shard()), -count(*)
        FROM old_rows GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (queue, status, reason, shard) DO UPDATE SET n = c.n + excluded.n;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO counts AS c (queue, status, reason, shard, n)
        SELECT queue, 'pruned_' || status, '', (SELECT retryq_counts_shard()), count(*)
        FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (queue, status, reason, shard) DO UPDATE SET n = c.n + excluded.n;
    ELSE
        INSERT INTO counts AS c (queue, status, reason, shard, n)
        SELECT queue, 'pruned_' || status, '', (SELECT retryq_counts_shard()), -count(*)
        FROM old_rows GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (queue, status, reason, shard) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_history_insert AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION retryq_history_insert();
CREATE TRIGGER jobs_history_update
    AFTER UPDATE OF status, attempts, max_attempts, available_at, deadline, dead_reason, redrives,
                    owner, claimed_at, updated_at, ended_at, cancel_requested ON jobs
    FOR EACH ROW EXECUTE FUNCTION retryq_history_update();
CREATE TRIGGER jobs_never_deleted BEFORE DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION retryq_job_delete();
CREATE TRIGGER jobs_never_truncated BEFORE TRUNCATE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: jobs are never deleted (no silent drop)');
CREATE TRIGGER jobs_identity_fixed
    BEFORE UPDATE OF seq, id, payload, enqueued_at, not_before, base_ms, cap_ms, queue, priority ON jobs
    FOR EACH ROW EXECUTE FUNCTION
    retryq_refuse('retryq: a job''s id, payload, first enqueue, schedule, own backoff, queue and priority never change');
CREATE TRIGGER jobs_not_over_a_tombstone AFTER INSERT ON jobs
    FOR EACH ROW EXECUTE FUNCTION retryq_job_not_over_a_tombstone();
CREATE TRIGGER history_no_update BEFORE UPDATE ON history
    FOR EACH ROW EXECUTE FUNCTION retryq_refuse('retryq: history is append-only');
CREATE TRIGGER history_no_delete BEFORE DELETE ON history
    FOR EACH ROW EXECUTE FUNCTION retryq_history_delete();
CREATE TRIGGER history_no_truncate BEFORE TRUNCATE ON history
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: history is append-only');
CREATE TRIGGER tombstones_of_ended_jobs BEFORE INSERT ON tombstones
    FOR EACH ROW EXECUTE FUNCTION retryq_tombstone_insert();
CREATE TRIGGER tombstones_never_change BEFORE UPDATE ON tombstones
    FOR EACH ROW EXECUTE FUNCTION retryq_refuse('retryq: a tombstone never changes');
CREATE TRIGGER tombstones_forgotten_whole BEFORE DELETE ON tombstones
    FOR EACH ROW EXECUTE FUNCTION retryq_tombstone_delete();
CREATE TRIGGER tombstones_never_truncated BEFORE TRUNCATE ON tombstones
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: a tombstone goes only by a forget');
-- The counts: one statement's net change each (a trigger with transition tables fires on
-- one event and names no columns, so every UPDATE fires it; one that moves no job between
-- statuses writes nothing).
CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_count();
CREATE TRIGGER jobs_count_update AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_count();
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_count();
CREATE TRIGGER tombstones_count_insert AFTER INSERT ON tombstones REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_count();
CREATE TRIGGER tombstones_count_delete AFTER DELETE ON tombstones REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_count();
"#;

/// Schema 3 whole, in the order it was created.
pub(super) fn schema_3() -> String {
    format!("{META}{JOBS_3}{HISTORY_3}{OBJECTS_3}")
}

/// Schema 2 to schema 3, before [`OBJECTS_3`]: the new columns (an older job is in queue
/// `default` at priority 0, with no cancel request — 1.1 had none — and, once done or dead,
/// `ended_at` = its `updated_at`, the `now` of the transition that ended it), their CHECKs
/// once every row has its value, the history's new column, and the triggers and the claim
/// index that schema 3 redefines dropped. The old triggers are dropped before the fill, so
/// the fill records no history entry: it is not a transition. The defaults `queue` and
/// `priority` take for the `ADD COLUMN` are dropped again: schema 3 has none (every insert
/// names them), as a created schema 3 has none.
pub(super) const UPGRADE_2_TO_3: &str = r#"
DROP TRIGGER jobs_history_insert ON jobs;
DROP TRIGGER jobs_history_update ON jobs;
DROP TRIGGER jobs_never_deleted ON jobs;
DROP TRIGGER jobs_never_truncated ON jobs;
DROP TRIGGER jobs_identity_fixed ON jobs;
DROP TRIGGER history_no_update ON history;
DROP TRIGGER history_no_delete ON history;
DROP TRIGGER history_no_truncate ON history;
DROP INDEX jobs_due;
ALTER TABLE jobs
    ADD COLUMN queue text COLLATE "C" NOT NULL DEFAULT 'default'
        CONSTRAINT jobs_queue_check CHECK (octet_length(queue) BETWEEN 1 AND 64),
    ADD COLUMN priority smallint NOT NULL DEFAULT 0
        CONSTRAINT jobs_priority_check CHECK (priority BETWEEN 0 AND 9),
    ADD COLUMN ended_at bigint,
    ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
ALTER TABLE jobs ALTER COLUMN queue DROP DEFAULT, ALTER COLUMN priority DROP DEFAULT;
UPDATE jobs SET ended_at = updated_at WHERE status IN ('done', 'dead');
ALTER TABLE jobs
    ADD CONSTRAINT jobs_ended_check CHECK ((status IN ('done', 'dead')) = (ended_at IS NOT NULL)),
    ADD CONSTRAINT jobs_cancel_check CHECK (NOT cancel_requested OR status = 'leased');
ALTER TABLE history ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
"#;

/// The counts of an upgraded schema (schema 2 had none), once its rows are in place: after
/// [`UPGRADE_2_TO_3`] and [`OBJECTS_3`], in the same transaction, every job counted into
/// shard 0 (and every tombstone, though an upgrade finds none).
pub(super) const FILL_COUNTS: &str = "
INSERT INTO counts (queue, status, reason, shard, n)
SELECT queue, status, coalesce(dead_reason, ''), 0, count(*) FROM jobs GROUP BY 1, 2, 3
UNION ALL
SELECT queue, 'pruned_' || status, '', 0, count(*) FROM tombstones GROUP BY 1, 2;
";

/// Schema 4 whole, in the order it is created: schema 3 (as retryq created it before the
/// operators' notes: [`schema_3`], which a test upgrades), then the notes' tables and their
/// functions and triggers.
pub(super) fn schema_4() -> String {
    format!("{}{TABLES_4}{}", schema_3(), objects_4())
}

/// Schema 4's tables (SPEC 6.36), as SQLite's (`ddl.rs`, `NOTES_TABLES`) with the tallies
/// sharded like `counts` (see the module's comment): a tally is the sum of its shards, and
/// every shard only grows. Notes are `bytea`, as the jobs' are.
pub(super) const TABLES_4: &str = r#"
CREATE TABLE attempts (
    job        text    COLLATE "C" NOT NULL,
    attempt    bigint  NOT NULL CHECK (attempt >= 1),
    worker     text    COLLATE "C" NOT NULL,   -- the lease holder
    claimed_at bigint  NOT NULL,               -- the claim's now
    ended_at   bigint,                         -- the now of what ended it; NULL while it runs
    outcome    text    CHECK (outcome IN ('ok', 'retryable', 'permanent', 'lease expired',
                                          'expired or retryable')),
    error      bytea,                          -- its report's or its live lease's note
    node       bytea,
    CHECK ((ended_at IS NULL) = (outcome IS NULL)),
    PRIMARY KEY (job, attempt)
);
CREATE TABLE tallies (
    metric text     COLLATE "C" NOT NULL,
    queue  text     COLLATE "C" NOT NULL,
    label  text     COLLATE "C" NOT NULL,      -- the metric's second label's value, '' for none
    shard  smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
    n      bigint   NOT NULL CHECK (n >= 0),
    PRIMARY KEY (metric, queue, label, shard)
);
CREATE TABLE tally_buckets (
    metric text     COLLATE "C" NOT NULL,
    queue  text     COLLATE "C" NOT NULL,
    label  text     COLLATE "C" NOT NULL,
    le     bigint   NOT NULL,                  -- the bucket's upper bound in ms; 2^63-1 for +Inf
    shard  smallint NOT NULL CHECK (shard BETWEEN 0 AND 15),
    n      bigint   NOT NULL CHECK (n >= 0),
    sum_ms bigint   NOT NULL CHECK (sum_ms >= 0),   -- stops at 2^63-1 rather than overflow
    PRIMARY KEY (metric, queue, label, le, shard)
);
"#;

/// Every pair of a statement's old and new job rows: `o` and `n`.
const PAIRS: &str = "old_rows o JOIN new_rows n USING (seq)";

/// Schema 4's functions and triggers: the attempts' records and the tallies, kept by the
/// database in the transaction of every transition (SQLite's `notes_objects` says what each
/// does), and the guards that keep records and tallies what they are.
///
/// Here the work is done a statement at a time where it can be, over the statement's
/// transition tables, as the counts are: a claim's record opened, an expired lease's ended
/// (taken by a claim, or reaped), and every tally of the statement added to the
/// transaction's shard in one upsert per table. Two things cannot be told from the rows
/// alone and are done row by row: whether an update named `last_error` — a completion's
/// report, or a note on the live lease: the one trigger that runs *before* the row changes,
/// so that the record it ends is ended before the statement's triggers look — and whether
/// one named `available_at` on a lease it kept — a heartbeat, which may leave every value as
/// it was. (A statement-level trigger with transition tables names no columns.)
pub(super) fn objects_4() -> String {
    let notes = notes_function(Pairs::Joined, ByKind::No, OneRow::AsAny);
    format!(
        r#"
-- An attempt's record is opened only by the claim that began it: checked once per statement
-- over every record it opened.
CREATE OR REPLACE FUNCTION retryq_attempt_opened() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_rows a
               WHERE NOT EXISTS (SELECT 1 FROM jobs j
                                 WHERE j.id = a.job AND j.status = 'leased' AND j.attempts = a.attempt
                                   AND j.owner = a.worker AND j.claimed_at = a.claimed_at)) THEN
        RAISE EXCEPTION 'retryq: an attempt''s record is opened only by the claim that began it'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NULL;
END $$;

-- Records go only with their job, in a prune, as its history does.
CREATE OR REPLACE FUNCTION retryq_attempt_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM jobs WHERE id = OLD.job)
       OR NOT EXISTS (SELECT 1 FROM tombstones WHERE id = OLD.job) THEN
        RAISE EXCEPTION 'retryq: an attempt''s record goes only with a pruned job'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;

-- A forget removes a tombstone with nothing left of its job: schema 3's function, which now
-- also waits for the attempts' records.
CREATE OR REPLACE FUNCTION retryq_tombstone_delete() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM jobs WHERE id = OLD.id)
       OR EXISTS (SELECT 1 FROM history WHERE job = OLD.id)
       OR EXISTS (SELECT 1 FROM attempts WHERE job = OLD.id) THEN
        RAISE EXCEPTION 'retryq: a tombstone goes only once its job, history and attempts are gone'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN OLD;
END $$;

-- A completion's report, or a note on the live lease, before the row changes: the open
-- record gets its notes and, for a completion, its end and the report's outcome.
CREATE OR REPLACE FUNCTION retryq_attempt_reported() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE attempts SET error = NEW.last_error, node = NEW.last_node,
        ended_at = CASE WHEN NEW.status <> 'leased' THEN NEW.updated_at END,
        outcome = CASE WHEN NEW.status <> 'leased' THEN
                      CASE NEW.status WHEN 'done' THEN 'ok' WHEN 'pending' THEN 'retryable'
                      ELSE CASE NEW.dead_reason WHEN 'permanent' THEN 'permanent' ELSE 'retryable' END END
                  END
    WHERE job = OLD.id AND attempt = OLD.attempts AND ended_at IS NULL;
    RETURN NEW;
END $$;

-- An accepted heartbeat, counted in the transaction's shard.
CREATE OR REPLACE FUNCTION retryq_tally_heartbeat() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO tallies AS t (metric, queue, label, shard, n)
    VALUES ('heartbeats', NEW.queue, '', retryq_counts_shard(), 1)
    ON CONFLICT (metric, queue, label, shard) DO UPDATE SET n = t.n + 1;
    RETURN NULL;
END $$;

{notes}
CREATE TRIGGER attempts_of_claims AFTER INSERT ON attempts REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_attempt_opened();
CREATE TRIGGER attempts_ended_never_change BEFORE UPDATE ON attempts FOR EACH ROW
    WHEN (OLD.ended_at IS NOT NULL OR NEW.job <> OLD.job OR NEW.attempt <> OLD.attempt
          OR NEW.worker <> OLD.worker OR NEW.claimed_at <> OLD.claimed_at)
    EXECUTE FUNCTION retryq_refuse('retryq: an attempt''s record changes only until the attempt ends');
CREATE TRIGGER attempts_no_delete BEFORE DELETE ON attempts
    FOR EACH ROW EXECUTE FUNCTION retryq_attempt_delete();
CREATE TRIGGER attempts_no_truncate BEFORE TRUNCATE ON attempts
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: an attempt''s record goes only with a pruned job');
CREATE TRIGGER tallies_only_grow BEFORE UPDATE ON tallies FOR EACH ROW
    WHEN (NEW.n < OLD.n OR NEW.metric <> OLD.metric OR NEW.queue <> OLD.queue
          OR NEW.label <> OLD.label OR NEW.shard <> OLD.shard)
    EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
CREATE TRIGGER tallies_never_deleted BEFORE DELETE ON tallies
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
CREATE TRIGGER tallies_never_truncated BEFORE TRUNCATE ON tallies
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
CREATE TRIGGER tally_buckets_only_grow BEFORE UPDATE ON tally_buckets FOR EACH ROW
    WHEN (NEW.n < OLD.n OR NEW.sum_ms < OLD.sum_ms OR NEW.metric <> OLD.metric
          OR NEW.queue <> OLD.queue OR NEW.label <> OLD.label OR NEW.le <> OLD.le
          OR NEW.shard <> OLD.shard)
    EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
CREATE TRIGGER tally_buckets_never_deleted BEFORE DELETE ON tally_buckets
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
CREATE TRIGGER tally_buckets_never_truncated BEFORE TRUNCATE ON tally_buckets
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
CREATE TRIGGER jobs_attempt_reported BEFORE UPDATE OF last_error ON jobs FOR EACH ROW
    WHEN (OLD.status = 'leased') EXECUTE FUNCTION retryq_attempt_reported();
CREATE TRIGGER jobs_tally_heartbeat AFTER UPDATE OF available_at ON jobs FOR EACH ROW
    WHEN (OLD.status = 'leased' AND NEW.status = 'leased' AND NEW.attempts = OLD.attempts)
    EXECUTE FUNCTION retryq_tally_heartbeat();
CREATE TRIGGER jobs_notes_insert AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_notes();
CREATE TRIGGER jobs_notes_update AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_notes();
CREATE TRIGGER tombstones_notes_insert AFTER INSERT ON tombstones REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_notes();
CREATE TRIGGER tombstones_notes_delete AFTER DELETE ON tombstones REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION retryq_notes();
"#
    )
}

/// How a statement of `retryq_notes` pairs each old job row with its new one (`o` and `n`),
/// and reads the attempt's record of `o`.
#[derive(Clone, Copy)]
enum Pairs {
    /// Schema 4: a join of the transition tables in every statement, and joins with the
    /// records. The planner has no statistics for a transition table and takes a filtered
    /// one for a row or two: a nested loop over the two tables, quadratic in the rows the
    /// statement moved (a reap of 10,000 jobs ran 7 s here, one of 20,000 past 30 s).
    Joined,
    /// Schema 5: the pairs joined once per statement, unfiltered (so a hash or merge join,
    /// linear), and each record read by its key (an index lookup, whatever the number of
    /// records).
    Materialized,
}

/// Schema 5's wake-up: each queue in which the statement made a job pending (an enqueue, a
/// retry, a redrive) is told to the workers that listen on the schema's channel, at the
/// commit (`NOTIFY`, sent once per queue and transaction), so that an idle worker claims at
/// once instead of at its next look. The channel is the schema's: `retryq_` and its oid
/// ([`CHANNEL`]).
const WAKE: &str = "
        PERFORM pg_notify('retryq_' || current_schema()::regnamespace::oid, q.queue)
        FROM (SELECT DISTINCT queue FROM new_rows WHERE status = 'pending') AS q;";

/// The channel a worker listens on: the one [`WAKE`] notifies, for the connection's schema.
pub(super) const CHANNEL: &str = "SELECT 'retryq_' || current_schema()::regnamespace::oid";

/// Whether the tallies are by kind: schema 7's are (SPEC 6.44), an older schema's not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ByKind {
    /// Schema 4 to 6: tallies by metric, queue and label.
    No,
    /// Schema 7: by metric, queue, the jobs' kind and label; a prune's and a forget's under
    /// kind `''` (a tombstone keeps none).
    Yes,
}

/// Whether a statement that moved one job row takes a path of its own in `retryq_notes`.
#[derive(Clone, Copy)]
enum OneRow {
    /// Schema 4 to 8: it runs the statements written for any number of rows, each over the
    /// transition tables: for a claim, four statements of up to seven branches each, 0.55 ms
    /// of the claim's 1.1 ms statement, in the turn (`claim_cost`, docs/benchmarks.md).
    AsAny,
    /// Schema 9: its old and new rows are read once, and only what its change needs runs:
    /// for a claim, its record opened and two upserts of one row each; for a heartbeat or a
    /// note, nothing but the wake-up. The same records and tallies as [`OneRow::AsAny`]
    /// (`tests_one_row.rs` runs both).
    Apart,
}

/// [`OneRow::Apart`]'s variables: the job's rows before and after the statement, and the
/// attempt's record that the statement ended (its outcome and duration), if it ended one.
const ONE_ROW_VARIABLES: &str = "DECLARE
    old_job jobs;
    new_job jobs;
    ended boolean;
    ended_outcome text;
    ended_ms bigint;
";

/// Whether the statement moved one job row: [`OneRow::Apart`]'s test, one count of a
/// transition table that holds the statement's rows already.
const ONE: &str = "(SELECT count(*) FROM new_rows) = 1";

/// An enqueue of one job: its tally, and its queue's wake-up if it is due to be claimed.
fn one_enqueue(kc: &str) -> String {
    let nk = if kc.is_empty() { "" } else { ", new_job.kind" };
    format!(
        r#"
        IF {ONE} THEN
            SELECT * INTO new_job FROM new_rows;
            INSERT INTO tallies AS t (metric, queue{kc}, label, shard, n)
            VALUES ('enqueued', new_job.queue{nk}, '', retryq_counts_shard(), 1)
            ON CONFLICT (metric, queue{kc}, label, shard) DO UPDATE SET n = t.n + excluded.n;
            IF new_job.status = 'pending' THEN
                PERFORM pg_notify('retryq_' || current_schema()::regnamespace::oid, new_job.queue);
            END IF;
            RETURN NULL;
        END IF;"#
    )
}

/// One job's transition: what the statements for any number of rows below do, for that
/// row, written with its values. Every tallied event changes the job's status, its
/// attempts or its cancel request, so a heartbeat or a note skips straight to the wake-up.
/// The tallies of one row are upserted in one statement, in the key order the statement
/// for many rows keeps (metric, then label), and its buckets in that order too
/// (`attempt_duration` before `claim_wait`): a transaction past the sixteen shards waits for
/// rows in one order.
fn one_transition(kc: &str, bucket: &str) -> String {
    let nk = if kc.is_empty() { "" } else { ", new_job.kind" };
    let upsert_bucket = |metric: &str, label: &str, value: &str| {
        format!(
            "INSERT INTO tally_buckets AS t (metric, queue{kc}, label, le, shard, n, sum_ms)
                SELECT '{metric}', new_job.queue{nk}, {label}, {bucket}, retryq_counts_shard(), 1, e.v
                FROM (SELECT {value} AS v) AS e
                ON CONFLICT (metric, queue{kc}, label, le, shard) DO UPDATE
                SET n = t.n + excluded.n,
                    sum_ms = CASE WHEN t.sum_ms > 9223372036854775807 - excluded.sum_ms THEN 9223372036854775807
                                  ELSE t.sum_ms + excluded.sum_ms END;"
        )
    };
    let duration = upsert_bucket("attempt_duration", "ended_outcome", "ended_ms");
    let wait = upsert_bucket("claim_wait", "''", "GREATEST(new_job.claimed_at - old_job.available_at, 0)");
    format!(
        r#"
        IF {ONE} THEN
            SELECT * INTO old_job FROM old_rows;
            SELECT * INTO new_job FROM new_rows;
            IF new_job.status <> old_job.status OR new_job.attempts <> old_job.attempts
               OR new_job.cancel_requested <> old_job.cancel_requested THEN
                ended := old_job.status = 'leased'
                         AND (new_job.status <> 'leased' OR new_job.attempts > old_job.attempts);
                IF ended THEN
                    UPDATE attempts a
                    SET ended_at = CASE WHEN new_job.attempts > old_job.attempts THEN new_job.claimed_at
                                        ELSE new_job.updated_at END,
                        outcome = 'lease expired'
                    WHERE a.job = old_job.id AND a.attempt = old_job.attempts AND a.ended_at IS NULL;
                    SELECT a.outcome, GREATEST(a.ended_at - a.claimed_at, 0) INTO ended_outcome, ended_ms
                    FROM attempts a WHERE a.job = old_job.id AND a.attempt = old_job.attempts;
                    ended := FOUND;
                END IF;
                IF new_job.attempts > old_job.attempts THEN
                    INSERT INTO attempts (job, attempt, worker, claimed_at)
                    VALUES (new_job.id, new_job.attempts, new_job.owner, new_job.claimed_at);
                END IF;
                INSERT INTO tallies AS t (metric, queue{kc}, label, shard, n)
                SELECT e.metric, new_job.queue{nk}, e.label, (SELECT retryq_counts_shard()), 1
                FROM (VALUES
                    ('cancels', 'pending', old_job.status = 'pending' AND new_job.status = 'dead'
                                           AND new_job.dead_reason = 'cancelled'),
                    ('cancels', 'request', new_job.cancel_requested AND NOT old_job.cancel_requested),
                    ('claims', '', new_job.attempts > old_job.attempts),
                    ('deaths', new_job.dead_reason, new_job.status = 'dead' AND old_job.status <> 'dead'),
                    ('reaped', new_job.dead_reason, old_job.status = 'pending' AND new_job.status = 'dead'
                                                    AND new_job.dead_reason = 'deadline'),
                    ('reaped', new_job.dead_reason, old_job.status = 'leased' AND new_job.status = 'dead'
                                                    AND ended AND ended_outcome = 'lease expired'),
                    ('redrives', '', old_job.status = 'dead' AND new_job.status = 'pending'))
                    AS e (metric, label, happened)
                WHERE e.happened ORDER BY e.metric, e.label
                ON CONFLICT (metric, queue{kc}, label, shard) DO UPDATE SET n = t.n + excluded.n;
                IF ended THEN
                    {duration}
                END IF;
                IF new_job.attempts > old_job.attempts THEN
                    {wait}
                END IF;
            END IF;
            IF new_job.status = 'pending' THEN
                PERFORM pg_notify('retryq_' || current_schema()::regnamespace::oid, new_job.queue);
            END IF;
            RETURN NULL;
        END IF;"#
    )
}

/// The function that keeps a statement's records and tallies, in `pairs`' shape, by kind
/// or not, and with a path of its own for one row or not.
fn notes_function(pairs: Pairs, by_kind: ByKind, one_row: OneRow) -> String {
    let bucket = crate::notes::bucket_of("e.v");
    // The kind's column, its value in a pair's row, in the tallied events and for a
    // tombstone's tally; and the positions the statements group by.
    let (kc, nk, ek, none) = match by_kind {
        ByKind::No => ("", "", "", ""),
        ByKind::Yes => (", kind", ", n.kind", ", e.kind", ", ''"),
    };
    let (enqueued, counted, observed, pruned) = match by_kind {
        ByKind::No => ("2", "1, 2, 3", "1, 2, 3, 4", "2, 3"),
        ByKind::Yes => ("2, 3", "1, 2, 3, 4", "1, 2, 3, 4, 5", "2, 4"),
    };
    let forgotten = "2";
    let (with, pairs, expiry, expired, record, wake) = match pairs {
        Pairs::Joined => (
            "",
            PAIRS,
            "\n            JOIN attempts a ON a.job = o.id AND a.attempt = o.attempts",
            "a.outcome = 'lease expired'",
            "JOIN attempts a ON a.job = o.id AND a.attempt = o.attempts",
            "",
        ),
        Pairs::Materialized => (
            "WITH pairs AS MATERIALIZED (SELECT o, n FROM old_rows o JOIN new_rows n USING (seq))\n        ",
            "pairs, LATERAL (SELECT (pairs.o).*) o, LATERAL (SELECT (pairs.n).*) n",
            "",
            "(SELECT a.outcome FROM attempts a WHERE a.job = o.id AND a.attempt = o.attempts) = 'lease expired'",
            "CROSS JOIN LATERAL (SELECT a.outcome, a.ended_at, a.claimed_at FROM attempts a
                                WHERE a.job = o.id AND a.attempt = o.attempts) a",
            WAKE,
        ),
    };
    let (declare, one_enqueue, one_transition) = match one_row {
        OneRow::AsAny => (String::new(), String::new(), String::new()),
        OneRow::Apart => (ONE_ROW_VARIABLES.to_string(), one_enqueue(kc), one_transition(kc, &bucket)),
    };
    format!(
        r#"-- A statement's records and tallies: of the jobs' (an insert, an update) or of the
-- tombstones' (a prune's insert, a forget's delete), from its transition tables.
CREATE OR REPLACE FUNCTION retryq_notes() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
{declare}BEGIN
    IF TG_TABLE_NAME = 'jobs' AND TG_OP = 'INSERT' THEN{one_enqueue}
        INSERT INTO tallies AS t (metric, queue{kc}, label, shard, n)
        SELECT 'enqueued', queue{kc}, '', (SELECT retryq_counts_shard()), count(*)
        FROM new_rows GROUP BY {enqueued} ORDER BY {enqueued}
        ON CONFLICT (metric, queue{kc}, label, shard) DO UPDATE SET n = t.n + excluded.n;{wake}
    ELSIF TG_TABLE_NAME = 'jobs' THEN{one_transition}
        -- An expired lease that a claim took, or that left leased with its record still open
        -- (no report came: a reap), ends as `lease expired`; a claim opens its attempt's.
        {with}UPDATE attempts a
        SET ended_at = CASE WHEN n.attempts > o.attempts THEN n.claimed_at ELSE n.updated_at END,
            outcome = 'lease expired'
        FROM {pairs}
        WHERE o.status = 'leased' AND (n.status <> 'leased' OR n.attempts > o.attempts)
          AND a.job = o.id AND a.attempt = o.attempts AND a.ended_at IS NULL;
        INSERT INTO attempts (job, attempt, worker, claimed_at)
        {with}SELECT n.id, n.attempts, n.owner, n.claimed_at FROM {pairs}
        WHERE n.attempts > o.attempts ORDER BY n.id;
        INSERT INTO tallies AS t (metric, queue{kc}, label, shard, n)
        {with}SELECT e.metric, e.queue{ek}, e.label, (SELECT retryq_counts_shard()), count(*) FROM (
            SELECT 'claims' AS metric, n.queue{nk}, '' AS label FROM {pairs} WHERE n.attempts > o.attempts
            UNION ALL
            SELECT 'deaths', n.queue{nk}, n.dead_reason FROM {pairs}
            WHERE n.status = 'dead' AND o.status <> 'dead'
            UNION ALL
            SELECT 'reaped', n.queue{nk}, n.dead_reason FROM {pairs}
            WHERE o.status = 'pending' AND n.status = 'dead' AND n.dead_reason = 'deadline'
            UNION ALL
            SELECT 'reaped', n.queue{nk}, n.dead_reason FROM {pairs}{expiry}
            WHERE o.status = 'leased' AND n.status = 'dead' AND {expired}
            UNION ALL
            SELECT 'redrives', n.queue{nk}, '' FROM {pairs} WHERE o.status = 'dead' AND n.status = 'pending'
            UNION ALL
            SELECT 'cancels', n.queue{nk}, 'pending' FROM {pairs}
            WHERE o.status = 'pending' AND n.status = 'dead' AND n.dead_reason = 'cancelled'
            UNION ALL
            SELECT 'cancels', n.queue{nk}, 'request' FROM {pairs}
            WHERE n.cancel_requested AND NOT o.cancel_requested) AS e
        GROUP BY {counted} ORDER BY {counted}
        ON CONFLICT (metric, queue{kc}, label, shard) DO UPDATE SET n = t.n + excluded.n;
        INSERT INTO tally_buckets AS t (metric, queue{kc}, label, le, shard, n, sum_ms)
        {with}SELECT e.metric, e.queue{ek}, e.label, {bucket}, (SELECT retryq_counts_shard()), count(*),
               LEAST(sum(e.v), 9223372036854775807)::bigint
        FROM (
            SELECT 'claim_wait' AS metric, n.queue{nk}, '' AS label,
                   GREATEST(n.claimed_at - o.available_at, 0) AS v
            FROM {pairs} WHERE n.attempts > o.attempts
            UNION ALL
            SELECT 'attempt_duration', n.queue{nk}, a.outcome, GREATEST(a.ended_at - a.claimed_at, 0)
            FROM {pairs} {record}
            WHERE o.status = 'leased' AND (n.status <> 'leased' OR n.attempts > o.attempts)) AS e
        GROUP BY {observed} ORDER BY {observed}
        ON CONFLICT (metric, queue{kc}, label, le, shard) DO UPDATE
        SET n = t.n + excluded.n,
            sum_ms = CASE WHEN t.sum_ms > 9223372036854775807 - excluded.sum_ms THEN 9223372036854775807
                          ELSE t.sum_ms + excluded.sum_ms END;{wake}
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO tallies AS t (metric, queue{kc}, label, shard, n)
        SELECT 'pruned', queue{none}, status, (SELECT retryq_counts_shard()), count(*)
        FROM new_rows GROUP BY {pruned} ORDER BY {pruned}
        ON CONFLICT (metric, queue{kc}, label, shard) DO UPDATE SET n = t.n + excluded.n;
    ELSE
        INSERT INTO tallies AS t (metric, queue{kc}, label, shard, n)
        SELECT 'forgotten', queue{none}, '', (SELECT retryq_counts_shard()), count(*)
        FROM old_rows GROUP BY {forgotten} ORDER BY {forgotten}
        ON CONFLICT (metric, queue{kc}, label, shard) DO UPDATE SET n = t.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;
"#
    )
}

/// Schema 5 whole: schema 4 ([`schema_4`], which a test upgrades), then what schema 5 changes.
pub(super) fn schema_5() -> String {
    format!("{}{}", schema_4(), upgrade_4_to_5())
}

/// Schema 6 whole: schema 5, then its paused queues.
pub(super) fn schema_6() -> String {
    format!("{}{PAUSED_6}", schema_5())
}

/// Schema 7 whole: schema 6, then its job kinds.
pub(super) fn schema_7() -> String {
    format!("{}{}", schema_6(), kind_7())
}

/// Schema 8 whole: schema 7, then its four open-job indexes marked.
pub(super) fn schema_8() -> String {
    format!("{}{INDEXES_8}", schema_7())
}

/// Schema 7's and 8's notes' function: by kind, every statement run as one of any number of
/// rows.
pub(super) fn notes_7() -> String {
    notes_function(Pairs::Materialized, ByKind::Yes, OneRow::AsAny)
}

/// Schema 9 whole: schema 8, then its notes' function with a path of its own for one row.
pub(super) fn schema_9() -> String {
    format!("{}{}", schema_8(), notes_9())
}

/// Schema 8 to schema 9: `retryq_notes` replaced by one that runs a statement that moved
/// one job row apart ([`OneRow::Apart`]): the same records and tallies, fewer statements in
/// a claim's turn. No row changes.
pub(super) fn notes_9() -> String {
    notes_function(Pairs::Materialized, ByKind::Yes, OneRow::Apart)
}

/// The rows of `jobs_due`, claim's index: open jobs. `priority BETWEEN 0 AND 9` is the
/// index's mark, true of every row (the table's check) and stated by no statement but the
/// ones meant to walk it: see [`INDEXES_8`].
macro_rules! due_rows {
    () => {
        "status IN ('pending', 'leased') AND priority BETWEEN 0 AND 9"
    };
}
pub(super) use due_rows;

/// The rows of `jobs_open_deadline`, the reap by deadline's index: open jobs whose deadline
/// a `now` may reach (SPEC's times are below 2^53). The bound on `deadline` is its mark.
macro_rules! deadline_rows {
    () => {
        "status IN ('pending', 'leased') AND deadline <= 9007199254740991"
    };
}
pub(super) use deadline_rows;

/// The rows of `jobs_open_age`, `stats`' index of the oldest open job: open jobs.
/// `enqueued_at <= not_before` (the table's check) is its mark.
macro_rules! age_rows {
    () => {
        "status IN ('pending', 'leased') AND enqueued_at <= not_before"
    };
}
pub(super) use age_rows;

/// The rows of `jobs_leases`, `stats`' index of expired leases: leased jobs. `owner IS NOT
/// NULL` (every lease has its holder: the table's check) is its mark.
macro_rules! lease_rows {
    () => {
        "status = 'leased' AND owner IS NOT NULL"
    };
}
pub(super) use lease_rows;

/// Schema 7 to schema 8: the four indexes of open jobs, each marked by a condition of its
/// own. The planner chooses an index by the statistics `ANALYZE` last took, and a store is
/// analyzed when it is idle as often as when it is busy: statistics that saw no open job
/// make every index of open jobs look empty, and any of them serves any query whose rows
/// are open jobs, so the planner took whichever it costed lowest: after an outage, with a
/// backlog of expired leases among many ended jobs, a claim's check for jobs to reap walked
/// every open job in `jobs_open_age` three times and its pick ten times. A mark is true of
/// every row the index is meant to hold, and no statement states it but the ones that walk
/// that index, so no other statement can use it whatever the statistics say
/// (`no_statement_can_read_another_statements_index`,
/// `each_statement_walks_its_own_index_on_statistics_that_saw_no_open_job`). The other
/// partial indexes are each implied by their own statements alone already.
pub(super) const INDEXES_8: &str = concat!(
    "
DROP INDEX jobs_due, jobs_open_age, jobs_leases, jobs_open_deadline;
CREATE INDEX jobs_due ON jobs (queue, priority, available_at, seq, deadline) WHERE ",
    due_rows!(),
    ";
CREATE INDEX jobs_open_age ON jobs (queue, enqueued_at) WHERE ",
    age_rows!(),
    ";
CREATE INDEX jobs_leases ON jobs (queue, available_at) WHERE ",
    lease_rows!(),
    ";
CREATE INDEX jobs_open_deadline ON jobs (deadline, seq) WHERE ",
    deadline_rows!(),
    ";
"
);

/// The digest a tombstone keeps of a job (SPEC 6.29), of the columns `kind` and `payload`:
/// SHA-256 of the payload alone when the kind is `''` (every tombstone of schema 6 and
/// before), else of the kind's UTF-8 bytes, a NUL byte and the payload. `crate::job_digest`
/// is the same in Rust; a test holds the two together.
macro_rules! job_digest {
    () => {
        "encode(sha256(CASE WHEN kind = '' THEN payload \
                            ELSE convert_to(kind, 'UTF8') || '\\x00'::bytea || payload END), 'hex')"
    };
}
pub(super) use job_digest;

/// Schema 6 to schema 7 (contract 1.4): a job's kind (SPEC 1.1, 6.44), `''` for every job
/// already there — a new column with a constant default, which PostgreSQL adds without
/// rewriting the table — a guard that keeps it what the first enqueue set (as SQLite's),
/// the tombstones' guard, which now digests the kind with the payload, and the tallies by
/// kind ([`TALLIES_7`]).
pub(super) fn kind_7() -> String {
    format!(
        r#"
ALTER TABLE jobs ADD COLUMN kind text COLLATE "C" NOT NULL DEFAULT ''
    CONSTRAINT jobs_kind_check CHECK (octet_length(kind) <= 64);
CREATE TRIGGER jobs_kind_fixed BEFORE UPDATE OF kind ON jobs FOR EACH ROW
    WHEN (NEW.kind IS DISTINCT FROM OLD.kind)
    EXECUTE FUNCTION retryq_refuse('retryq: a job''s kind never changes');
{TALLIES_7}{}

-- A tombstone is written only by a prune, of the ended job it stands for.
CREATE OR REPLACE FUNCTION retryq_tombstone_insert() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM jobs
                   WHERE id = NEW.id AND status = NEW.status AND ended_at = NEW.ended_at
                     AND attempts = NEW.attempts AND queue = NEW.queue
                     AND dead_reason IS NOT DISTINCT FROM NEW.dead_reason
                     AND {} = NEW.digest) THEN
        RAISE EXCEPTION 'retryq: a tombstone is written only by a prune, of the ended job it stands for'
            USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END $$;
"#,
        notes_7(),
        job_digest!()
    )
}

/// Schema 7's tallies (SPEC 6.36, 6.44), by the jobs' kind: a column in each tally's key,
/// `''` for every tally kept before (what was not kept by kind is not made up) — added
/// without rewriting a row, its default dropped then so that no insert can leave it out —
/// the keys rebuilt over the tallies alone (a few rows per queue and shard, whatever the
/// number of jobs), the guards that keep a tally's key and the heartbeat's count with it.
/// The statements' function, by kind, follows (`notes_function`).
const TALLIES_7: &str = r#"
ALTER TABLE tallies ADD COLUMN kind text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE tallies ALTER COLUMN kind DROP DEFAULT;
ALTER TABLE tallies DROP CONSTRAINT tallies_pkey,
    ADD CONSTRAINT tallies_pkey PRIMARY KEY (metric, queue, kind, label, shard);
ALTER TABLE tally_buckets ADD COLUMN kind text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE tally_buckets ALTER COLUMN kind DROP DEFAULT;
ALTER TABLE tally_buckets DROP CONSTRAINT tally_buckets_pkey,
    ADD CONSTRAINT tally_buckets_pkey PRIMARY KEY (metric, queue, kind, label, le, shard);
DROP TRIGGER tallies_only_grow ON tallies;
CREATE TRIGGER tallies_only_grow BEFORE UPDATE ON tallies FOR EACH ROW
    WHEN (NEW.n < OLD.n OR NEW.metric <> OLD.metric OR NEW.queue <> OLD.queue
          OR NEW.kind <> OLD.kind OR NEW.label <> OLD.label OR NEW.shard <> OLD.shard)
    EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
DROP TRIGGER tally_buckets_only_grow ON tally_buckets;
CREATE TRIGGER tally_buckets_only_grow BEFORE UPDATE ON tally_buckets FOR EACH ROW
    WHEN (NEW.n < OLD.n OR NEW.sum_ms < OLD.sum_ms OR NEW.metric <> OLD.metric
          OR NEW.queue <> OLD.queue OR NEW.kind <> OLD.kind OR NEW.label <> OLD.label
          OR NEW.le <> OLD.le OR NEW.shard <> OLD.shard)
    EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');

-- An accepted heartbeat, counted in the transaction's shard, by the job's kind.
CREATE OR REPLACE FUNCTION retryq_tally_heartbeat() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO tallies AS t (metric, queue, kind, label, shard, n)
    VALUES ('heartbeats', NEW.queue, NEW.kind, '', retryq_counts_shard(), 1)
    ON CONFLICT (metric, queue, kind, label, shard) DO UPDATE SET n = t.n + 1;
    RETURN NULL;
END $$;
"#;

/// Schema 5 to schema 6 (contract 1.3): the paused queues (SPEC 3.16, 6.40), a name and the
/// time of its first pause, for as long as it is paused. No trigger touches the table: a
/// prune or a forget never does.
pub(super) const PAUSED_6: &str = r#"
CREATE TABLE paused_queues (
    queue     text   COLLATE "C" PRIMARY KEY CHECK (octet_length(queue) BETWEEN 1 AND 64),
    paused_at bigint NOT NULL CHECK (paused_at BETWEEN 0 AND 9007199254740991)
);
"#;

/// Schema 4 to schema 5 (contract 1.3): the reaps' indexes end in `seq`, so that a reap of at
/// most `reap_limit` jobs walks each in SPEC 3.3.1's order (ties by first enqueue) and stops;
/// claim's index carries `deadline`, so that a pick passes over a job due to end without
/// reading its row (SPEC 3.3.2, 6.37); and the notes' function pairs a statement's rows once,
/// linearly ([`Pairs::Materialized`]).
pub(super) fn upgrade_4_to_5() -> String {
    format!("{INDEXES_5}{}", notes_function(Pairs::Materialized, ByKind::No, OneRow::AsAny))
}

/// The four indexes schema 5 redefines.
const INDEXES_5: &str = "
DROP INDEX jobs_due, jobs_cancelling, jobs_open_deadline, jobs_last_lease;
-- claim's pick: for each queue it serves and each priority, the open jobs by available_at,
-- ties by seq, with each one's deadline.
CREATE INDEX jobs_due ON jobs (queue, priority, available_at, seq, deadline)
    WHERE status IN ('pending', 'leased');
-- reap of a cancel request (rule 1): expired leases of jobs an operator asked to stop.
CREATE INDEX jobs_cancelling ON jobs (available_at, seq) WHERE status = 'leased' AND cancel_requested;
-- reap by deadline (rule 3): open jobs whose deadline has come.
CREATE INDEX jobs_open_deadline ON jobs (deadline, seq) WHERE status IN ('pending', 'leased');
-- reap by exhaustion (rule 2): leases on a job's last attempt, by expiry.
CREATE INDEX jobs_last_lease ON jobs (available_at, seq)
    WHERE status = 'leased' AND attempts >= max_attempts;
";

/// Schema 3 to schema 4, after [`TABLES_4`] and before [`objects_4`] (whose triggers would
/// count the fill twice and refuse its records): the notes filled from what the store still
/// holds, as SQLite's upgrade fills them (`upgrade.rs` says what each query takes from where),
/// every tally into shard 0.
pub(super) fn fill_4() -> String {
    let steps = "steps AS (
        SELECT job, n, from_status, to_status, attempt, available_at, deadline, reason, worker, at,
               cancel_requested,
               lag(attempt) OVER w AS was_attempt, lag(available_at) OVER w AS was_available_at,
               lag(cancel_requested) OVER w AS was_requested
        FROM history WINDOW w AS (PARTITION BY job ORDER BY n))";
    let moved = |metric: &str, label: &str, when: &str| {
        format!(
            "SELECT '{metric}', j.queue, {label}, 1 FROM steps s JOIN jobs j ON j.id = s.job WHERE {when}"
        )
    };
    let bucket = crate::notes::bucket_of("v");
    format!(
        "
INSERT INTO attempts (job, attempt, worker, claimed_at, ended_at, outcome)
WITH {steps},
began AS (
    SELECT job, attempt, worker, at FROM steps WHERE to_status = 'leased' AND attempt = was_attempt + 1),
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
SELECT b.job, b.attempt, b.worker, b.at, e.at, e.outcome
FROM began b LEFT JOIN ended e ON e.job = b.job AND e.attempt = b.attempt;

INSERT INTO tallies (metric, queue, label, shard, n)
WITH {steps},
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
SELECT metric, queue, label, 0, sum(n) FROM counted GROUP BY 1, 2, 3 HAVING sum(n) > 0;

INSERT INTO tally_buckets (metric, queue, label, le, shard, n, sum_ms)
WITH {steps},
observed (metric, queue, label, v) AS (
    SELECT 'claim_wait', j.queue, '', GREATEST(s.at - s.was_available_at, 0)
    FROM steps s JOIN jobs j ON j.id = s.job
    WHERE s.to_status = 'leased' AND s.attempt = s.was_attempt + 1
    UNION ALL
    SELECT 'attempt_duration', j.queue, a.outcome, GREATEST(a.ended_at - a.claimed_at, 0)
    FROM attempts a JOIN jobs j ON j.id = a.job WHERE a.ended_at IS NOT NULL)
SELECT metric, queue, label, {bucket}, 0, count(*), LEAST(sum(v), 9223372036854775807)::bigint
FROM observed GROUP BY 1, 2, 3, 4;
",
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
             AND s.cancel_requested AND NOT s.was_requested"
        ),
        heartbeats = moved(
            "heartbeats",
            "''",
            "s.from_status = 'leased' AND s.to_status = 'leased' AND s.attempt = s.was_attempt
             AND NOT (s.cancel_requested AND NOT s.was_requested)"
        ),
    )
}
