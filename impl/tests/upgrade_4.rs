//! The upgrade of a schema 4 file (contract 1.2 with the operators' notes) to schema 5 (1.3),
//! on a copy of `tests/fixtures/schema-4.db`, which schema 4 code wrote (see
//! `tests/fixtures/README.md`): a read-only open reads it as it is and writes nothing; a
//! read-write one rebuilds claim's index and keeps every job, entry, tombstone, record and
//! tally; the schema is then a new file's.

use std::path::{Path, PathBuf};

use retryq::rusqlite::{Connection, OpenFlags};
use retryq::{OpenOptions, Queue, SCHEMA_VERSION};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/schema-4.db");

fn copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("schema-4.db");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    (dir, path)
}

fn read(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn user_version(path: &Path) -> i64 {
    read(path).pragma_query_value(None, "user_version", |row| row.get(0)).expect("user_version")
}

/// Every id the file names, a job's or a tombstone's.
fn ids(path: &Path) -> Vec<String> {
    read(path)
        .prepare("SELECT id FROM jobs UNION SELECT id FROM tombstones ORDER BY 1")
        .expect("prepare")
        .query_map([], |row| row.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("ids")
}

/// The schema's objects, each by type, name and SQL.
fn objects(path: &Path) -> Vec<(String, String, Option<String>)> {
    read(path)
        .prepare(
            "SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
        )
        .expect("prepare")
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// What a queue shows of every id: the job or tombstone, its history and its records; the
/// tallies; the counts at 2000.
fn shown(q: &Queue, ids: &[String]) -> String {
    let mut shown = String::new();
    for id in ids {
        let lookup = q.lookup(id).expect("lookup");
        let history = q.history(id).expect("history");
        let records = q.attempts(id).expect("attempts");
        shown.push_str(&format!("{id}: {lookup:?}\n{history:?}\n{records:?}\n"));
    }
    shown.push_str(&format!("{:?}\n{:?}\n", q.tallies().expect("tallies"), q.stats(2000).expect("stats")));
    shown
}

#[test]
fn the_fixture_is_schema_4() {
    assert_eq!(user_version(Path::new(FIXTURE)), 4);
}

#[test]
fn an_upgrade_rebuilds_the_claim_index_and_keeps_everything() {
    let (dir, path) = copy();
    let ids = ids(&path);
    assert_eq!(ids.len(), 15, "the fixture's jobs and its tombstone: {ids:?}");
    let bytes = std::fs::read(&path).expect("read");
    let read_only = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
    let before = Queue::open_with(&path, &read_only).expect("read schema 4");
    let was = shown(&before, &ids);
    assert!(before.audit().expect("audit").is_clean());
    drop(before);
    assert_eq!(user_version(&path), 4, "a read-only open writes nothing");
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "byte for byte");

    let q = Queue::open(&path).expect("open upgrades");
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert_eq!(shown(&q, &ids), was, "everything as schema 4 showed it");
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    drop(q);

    let fresh = dir.path().join("fresh.db");
    drop(Queue::open(&fresh).expect("create"));
    assert_eq!(objects(&path), objects(&fresh), "an upgraded schema is a created one");
    let due: String = read(&path)
        .query_row("SELECT sql FROM sqlite_schema WHERE name = 'jobs_due'", [], |row| row.get(0))
        .expect("jobs_due");
    assert!(due.contains("available_at, seq, deadline"), "{due}");
}
