//! A SQLite file of an older schema at scale: what an operator upgrading a store that has been
//! working for weeks has on disk, for timing `audit` before the upgrade (read-only, through
//! the views an older schema is read by), the upgrade itself, and `audit` after it.
//!
//! No code of this build writes schema 3, so the file starts as a copy of the fixture schema
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
}
