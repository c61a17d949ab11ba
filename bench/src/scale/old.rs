//! Stores of an older schema at scale: what an operator upgrading a store that has been
//! working for weeks has on disk, for timing `audit` before the upgrade (read-only, through
//! the views an older schema is read by), the upgrade itself, and `audit` after it.
//!
//! **Schema 4** differs from schema 7 by indexes (and on PostgreSQL by the notes' trigger
//! function, whose replacement costs the same whatever the store holds), by schema 6's
//! table of paused queues and by schema 7's kind column: on SQLite claim's index did not carry `deadline`; on PostgreSQL
//! neither did it, and the reaps' three indexes did not end in `seq`. So a measured store of
//! this build is put back to schema 4 by [`sqlite_to_4`] or [`pg_to_4`] — those indexes
//! dropped and built as schema 4 defined them, the paused queues' table and the kind dropped, the version
//! marked 4 — and the upgrade a read-write open then runs rebuilds them, as it
//! would on a store schema 4's code wrote (on SQLite byte for byte that store; on PostgreSQL
//! one whose notes' function is already schema 5's).
//!
//! **Schema 3**: no code of this build writes it, so the file starts as a copy of the fixture schema
//! 3 code wrote (`tests/fixtures/schema-3.db`: its tables, indexes and triggers, and the
//! fifteen jobs of its own), and the jobs of a [`Mix`] are added by the same statements
//! schema 3's queue ran — an enqueue's insert, a claim's lease, a completion's finish — one
//! row at a time inside one transaction per chunk, so that schema 3's own triggers write
//! the history and the counts. Schema 3 never changes, so neither do these statements. The
//! lives are simpler than the current-schema fill's: every ended job is claimed once and ends
//! `done`, `dead(permanent)` or `dead(deadline)` (the jobs to be cancelled stay pending), the
//! open ones are pending, scheduled, overdue later or leased, as in the mix; nothing is
//! pruned.

use std::path::Path;

use rusqlite::{Connection, params};

use super::fill::{FILLER, PERMANENT, RETRYABLE};
use super::mix::{Fate, LEASE_MS, Mix};
use crate::BenchError;

/// The fixture, as schema 3 code wrote it.
const SCHEMA_3_FIXTURE: &[u8] = include_bytes!("../../../tests/fixtures/schema-3.db");

/// The jobs the fixture holds (its pruned and forgotten ones aside).
pub const FIXTURE_JOBS: u64 = 14;

/// An enqueue (schema 3's insert, with the mix's schedule, queue and priority).
const ENQUEUE: &str = "
    INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                      redrives, enqueued_at, updated_at, not_before, queue, priority, cancel_requested)
    VALUES (?1, ?2, 'pending', 0, ?3, ?4, ?5, 0, ?6, ?6, ?4, ?7, ?8, 0)";

/// A claim's lease.
const LEASE: &str = "
    UPDATE jobs SET status = 'leased', attempts = attempts + 1, owner = ?2, claimed_at = ?3,
                    available_at = ?4, updated_at = ?3
    WHERE id = ?1";

/// A completion that ends the job.
const FINISH: &str = "
    UPDATE jobs SET status = ?2, dead_reason = ?3, available_at = NULL, owner = NULL,
                    claimed_at = NULL, updated_at = ?4, last_error = ?5, last_node = NULL,
                    ended_at = ?4, cancel_requested = 0
    WHERE id = ?1";

/// Writes a schema 3 file at `path` holding the fixture's jobs and `mix`'s.
pub fn write(path: &Path, mix: &Mix, progress: &dyn Fn(&str)) -> Result<(), BenchError> {
    std::fs::write(path, SCHEMA_3_FIXTURE)?;
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version != 3 {
        return Err(BenchError::Setup(format!("the schema 3 fixture says user_version {version}")));
    }
    let chunks = mix.chunks();
    let mut told = 0;
    for c in 0..chunks {
        let tx = conn.transaction()?;
        {
            let mut enqueue = tx.prepare_cached(ENQUEUE)?;
            let mut lease = tx.prepare_cached(LEASE)?;
            let mut finish = tx.prepare_cached(FINISH)?;
            let range = mix.chunk(c);
            let planned: Vec<_> = range.clone().map(|i| mix.job(i)).collect();
            for p in &planned {
                enqueue.execute(params![
                    Mix::id(p.i),
                    Mix::payload(p.i),
                    p.max_attempts,
                    p.not_before,
                    p.deadline,
                    p.enqueued_at,
                    p.queue,
                    p.priority
                ])?;
            }
            let claimed_at = mix.first_claim(range.start);
            for p in planned.iter().filter(|p| p.fate.claimed_first()) {
                lease.execute(params![Mix::id(p.i), FILLER, claimed_at, claimed_at + mix.window()])?;
            }
            for p in planned.iter().filter(|p| p.fate.claimed_first()) {
                let (status, reason, error) = match p.fate {
                    Fate::Permanent | Fate::Exhausted => ("dead", Some("permanent"), Some(PERMANENT)),
                    Fate::Deadline => ("dead", Some("deadline"), Some(RETRYABLE)),
                    _ => ("done", None, None),
                };
                finish.execute(params![Mix::id(p.i), status, reason, mix.first_report(p.i), error])?;
            }
            let leased_at = mix.fill_end();
            for p in planned.iter().filter(|p| p.fate == Fate::Leased) {
                lease.execute(params![Mix::id(p.i), FILLER, leased_at, leased_at + LEASE_MS])?;
            }
        }
        tx.commit()?;
        let tenth = (c + 1) * 10 / chunks;
        if tenth > told {
            told = tenth;
            progress(&format!("  schema 3 file: {} of {} jobs", mix.chunk(c).end, mix.n));
        }
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// The schema 7 objects a SQLite store is put back from before its tallies and the jobs'
/// `kind` go: schema 6's table of paused queues, the kind's guard, and the notes' triggers,
/// which read the kind. The tallies are set aside summed over the kinds, as schema 4 kept
/// them (by metric, queue and label alone), and their tables dropped.
const SQLITE_FROM_7: &str = "
    DROP TABLE paused_queues;
    DROP TRIGGER jobs_kind_fixed;
    CREATE TEMP TABLE tallies_4 AS SELECT metric, queue, label, sum(n) AS n FROM tallies GROUP BY 1, 2, 3;
    CREATE TEMP TABLE tally_buckets_4 AS
        SELECT metric, queue, label, le, sum(n) AS n, sum(sum_ms) AS sum_ms FROM tally_buckets GROUP BY 1, 2, 3, 4;
    DROP TABLE tallies;
    DROP TABLE tally_buckets;";

/// Once schema 4's tally tables stand again: their rows back, no kind, schema 4's claim index
/// (schema 5 rebuilds it with `deadline` at its end), the version mark.
const SQLITE_TO_4: &str = "
    INSERT INTO tallies (metric, queue, label, n) SELECT metric, queue, label, n FROM temp.tallies_4;
    INSERT INTO tally_buckets (metric, queue, label, le, n, sum_ms)
        SELECT metric, queue, label, le, n, sum_ms FROM temp.tally_buckets_4;
    DROP TABLE temp.tallies_4;
    DROP TABLE temp.tally_buckets_4;
    ALTER TABLE jobs DROP COLUMN kind;
    DROP INDEX jobs_due;
    CREATE INDEX jobs_due ON jobs (queue, priority, available_at) WHERE status IN ('pending', 'leased');
    PRAGMA user_version = 4;";

/// The fixture, as schema 4 code wrote it: the text of its notes' tables and triggers, which
/// schema 7 changed (the tallies by kind), is put back from it, byte for byte.
const SCHEMA_4_FIXTURE: &[u8] = include_bytes!("../../../tests/fixtures/schema-4.db");

/// Schema 4's notes' tables and triggers, by the fixture's text: the tables, then the
/// triggers (those whose text names the tallies, the attempts or a tombstone's forget).
const NOTES_4: &str = "SELECT name, type, sql FROM sqlite_schema
    WHERE name IN ('tallies', 'tally_buckets')
       OR (type = 'trigger' AND (tbl_name IN ('attempts', 'tallies', 'tally_buckets')
           OR name IN ('jobs_tally_enqueued', 'jobs_attempt_claimed', 'jobs_attempt_reported', 'jobs_tally_moved',
                       'jobs_tally_cancel_requested', 'jobs_tally_heartbeat', 'tombstones_tally_pruned',
                       'tombstones_tally_forgotten', 'tombstones_forgotten_whole')))
    ORDER BY type = 'trigger', name";

/// Schema 4's notes' objects (see [`NOTES_4`]): each one's name, type and SQL.
fn notes_4() -> Result<Vec<(String, String, String)>, BenchError> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("schema-4.db");
    std::fs::write(&path, SCHEMA_4_FIXTURE)?;
    let conn = Connection::open(&path)?;
    let mut statement = conn.prepare(NOTES_4)?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Schema 4's claim index and reaps' indexes on PostgreSQL, which schema 5 rebuilds (claim's
/// with `deadline`, the reaps' ending in `seq`), no table of paused queues (schema 6's), no
/// kind (schema 7's, whose upgrade also puts back the tombstones' guard and the notes'
/// functions by kind): the tallies summed over the kinds under schema 4's keys and guards,
/// and its version mark.
const PG_4: &str = "
    DROP TABLE paused_queues;
    DROP TRIGGER jobs_kind_fixed ON jobs;
    ALTER TABLE jobs DROP COLUMN kind;
    CREATE TEMP TABLE tallies_4 AS SELECT metric, queue, label, shard, sum(n)::bigint AS n FROM tallies GROUP BY 1, 2, 3, 4;
    CREATE TEMP TABLE tally_buckets_4 AS
        SELECT metric, queue, label, le, shard, sum(n)::bigint AS n, sum(sum_ms)::bigint AS sum_ms
        FROM tally_buckets GROUP BY 1, 2, 3, 4, 5;
    ALTER TABLE tallies DISABLE TRIGGER tallies_never_deleted;
    ALTER TABLE tally_buckets DISABLE TRIGGER tally_buckets_never_deleted;
    DELETE FROM tallies;
    DELETE FROM tally_buckets;
    ALTER TABLE tallies ENABLE TRIGGER tallies_never_deleted;
    ALTER TABLE tally_buckets ENABLE TRIGGER tally_buckets_never_deleted;
    DROP TRIGGER tallies_only_grow ON tallies;
    DROP TRIGGER tally_buckets_only_grow ON tally_buckets;
    ALTER TABLE tallies DROP CONSTRAINT tallies_pkey, DROP COLUMN kind,
        ADD CONSTRAINT tallies_pkey PRIMARY KEY (metric, queue, label, shard);
    ALTER TABLE tally_buckets DROP CONSTRAINT tally_buckets_pkey, DROP COLUMN kind,
        ADD CONSTRAINT tally_buckets_pkey PRIMARY KEY (metric, queue, label, le, shard);
    INSERT INTO tallies (metric, queue, label, shard, n) SELECT metric, queue, label, shard, n FROM tallies_4;
    INSERT INTO tally_buckets (metric, queue, label, le, shard, n, sum_ms)
        SELECT metric, queue, label, le, shard, n, sum_ms FROM tally_buckets_4;
    DROP TABLE tallies_4, tally_buckets_4;
    CREATE TRIGGER tallies_only_grow BEFORE UPDATE ON tallies FOR EACH ROW
        WHEN (NEW.n < OLD.n OR NEW.metric <> OLD.metric OR NEW.queue <> OLD.queue
              OR NEW.label <> OLD.label OR NEW.shard <> OLD.shard)
        EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
    CREATE TRIGGER tally_buckets_only_grow BEFORE UPDATE ON tally_buckets FOR EACH ROW
        WHEN (NEW.n < OLD.n OR NEW.sum_ms < OLD.sum_ms OR NEW.metric <> OLD.metric
              OR NEW.queue <> OLD.queue OR NEW.label <> OLD.label OR NEW.le <> OLD.le
              OR NEW.shard <> OLD.shard)
        EXECUTE FUNCTION retryq_refuse('retryq: a tally only grows');
    DROP INDEX jobs_due, jobs_cancelling, jobs_open_deadline, jobs_last_lease;
    CREATE INDEX jobs_due ON jobs (queue, priority, available_at, seq) WHERE status IN ('pending', 'leased');
    CREATE INDEX jobs_cancelling ON jobs (available_at) WHERE status = 'leased' AND cancel_requested;
    CREATE INDEX jobs_open_deadline ON jobs (deadline) WHERE status IN ('pending', 'leased');
    CREATE INDEX jobs_last_lease ON jobs (available_at) WHERE status = 'leased' AND attempts >= max_attempts;
    UPDATE retryq_meta SET schema_version = 4;";

/// The jobs table's rows, which the upgrade's index builds read.
const JOBS: &str = "SELECT count(*) FROM jobs";

/// Puts the current schema's file at `path` back to schema 4 (see the module's doc); its jobs.
pub fn sqlite_to_4(path: &Path) -> Result<u64, BenchError> {
    let notes = notes_4()?;
    let mut conn = Connection::open(path)?;
    let tx = conn.transaction()?;
    // The notes' triggers read the kind; the tallies' own guards go with their tables.
    for (name, _, _) in notes.iter().filter(|(name, kind, _)| kind == "trigger" && !name.starts_with("tall"))
    {
        tx.execute_batch(&format!("DROP TRIGGER {name}"))?;
    }
    tx.execute_batch(SQLITE_FROM_7)?;
    for (_, _, sql) in notes.iter().filter(|(_, kind, _)| kind == "table") {
        tx.execute_batch(sql)?;
    }
    tx.execute_batch(SQLITE_TO_4)?;
    for (_, _, sql) in notes.iter().filter(|(_, kind, _)| kind == "trigger") {
        tx.execute_batch(sql)?;
    }
    let jobs: i64 = tx.query_row(JOBS, [], |row| row.get(0))?;
    tx.commit()?;
    Ok(u64::try_from(jobs).unwrap_or(0))
}

/// Puts the current schema's database at `url` back to schema 4 (see the module's doc); its jobs.
pub fn pg_to_4(url: &str) -> Result<u64, BenchError> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    let mut tx = client.transaction()?;
    tx.batch_execute(PG_4)?;
    let jobs: i64 = tx.query_one(JOBS, &[])?.get(0);
    tx.commit()?;
    Ok(u64::try_from(jobs).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use retryq::{Backend, OpenOptions, Queue};

    #[test]
    fn the_older_file_audits_clean_before_and_after_its_upgrade() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        let mix = Mix::new(2_000, 1_800_000_000_000);
        write(&path, &mix, &|_| {}).expect("write");
        let options = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        let before = Queue::open_with(&path, &options).expect("read-only open");
        let audit = Backend::audit(&before).expect("audit");
        assert!(audit.is_clean(), "{:?}", &audit.violations[..audit.violations.len().min(5)]);
        // The fixture's jobs beside the mix's.
        assert_eq!(audit.jobs, 2_000 + FIXTURE_JOBS);
        drop(before);
        let conn = Connection::open(&path).expect("open");
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
        assert_eq!(version, 3, "a read-only open leaves the schema as it was");
        drop(conn);
        let upgraded = Queue::open(&path).expect("upgrade");
        let audit = Backend::audit(&upgraded).expect("audit");
        assert!(audit.is_clean(), "{:?}", &audit.violations[..audit.violations.len().min(5)]);
        let stats = upgraded.stats(mix.fill_end()).expect("stats");
        assert!(stats.leased >= mix.expected().leased, "{stats:?}");
    }

    /// The schema objects of a SQLite file: each one's SQL, by name.
    fn schema_of(path: &Path) -> Vec<(String, String)> {
        let conn = Connection::open(path).expect("open");
        let mut stmt = conn
            .prepare("SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name")
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).expect("query").map(|r| r.expect("row")).collect()
    }

    /// A store put back to schema 4 has schema 4's objects exactly — the fixture's, which
    /// schema 4's code wrote — and a read-write open upgrades it to schema 5's again, its jobs
    /// as they were.
    #[test]
    fn a_store_put_back_to_schema_4_is_schema_4s_and_upgrades_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.db");
        let mix = Mix::new(1_000, 1_800_000_000_000);
        let mut store = Queue::open(&path).expect("open");
        super::super::fill::fill(&mut store, &mix, &|_| {}).expect("fill");
        drop(store);
        let current = schema_of(&path);
        let jobs = sqlite_to_4(&path).expect("to 4");
        assert_eq!(jobs, 1_000 - mix.expected().pruned_done - mix.expected().pruned_dead);
        let fixture = dir.path().join("schema-4.db");
        std::fs::write(&fixture, include_bytes!("../../../tests/fixtures/schema-4.db")).expect("fixture");
        assert_eq!(schema_of(&path), schema_of(&fixture));
        let version = |path: &Path| -> i64 {
            Connection::open(path)
                .expect("open")
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .expect("version")
        };
        assert_eq!(version(&path), 4);
        let upgraded = Queue::open(&path).expect("upgrade");
        assert_eq!(version(&path), retryq::SCHEMA_VERSION);
        assert_eq!(schema_of(&path), current);
        let audit = Backend::audit(&upgraded).expect("audit");
        assert!(audit.is_clean(), "{:?}", &audit.violations[..audit.violations.len().min(5)]);
        assert_eq!(audit.jobs, jobs);
    }

    /// On PostgreSQL: put back to schema 4, its four indexes are schema 4's and it is marked
    /// so; a connect upgrades it, and the indexes are schema 5's again.
    #[test]
    fn a_postgres_store_put_back_to_schema_4_upgrades_again() {
        let Some(url) = retryq_pgtest::database("scale: a store put back to schema 4") else { return };
        let mix = Mix::new(1_000, 1_800_000_000_000);
        super::super::pg_fill::fill(&url, &mix, &|_| {}).expect("fill");
        let indexes = || -> Vec<(String, String)> {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            client
                .query(
                    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs' ORDER BY indexname",
                    &[],
                )
                .expect("indexes")
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect()
        };
        let version = || -> i64 {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            client.query_one("SELECT schema_version FROM retryq_meta", &[]).expect("meta").get(0)
        };
        let current = indexes();
        let jobs = pg_to_4(&url).expect("to 4");
        assert_eq!(jobs, 1_000 - mix.expected().pruned_done - mix.expected().pruned_dead);
        assert_eq!(version(), 4);
        let old = indexes();
        let deadline = old.iter().find(|(name, _)| name == "jobs_open_deadline").expect("index");
        assert!(!deadline.1.contains("seq"), "{deadline:?}");
        assert_ne!(old, current);
        let store = retryq::PgQueue::connect(&url).expect("upgrade");
        assert_eq!(version(), retryq::PG_SCHEMA_VERSION);
        assert_eq!(indexes(), current);
        let audit = Backend::audit(&store).expect("audit");
        assert!(audit.is_clean(), "{:?}", &audit.violations[..audit.violations.len().min(5)]);
    }
}
