//! The upgrade of a schema 1 file (contract 1.0's) to the current schema, on a copy of
//! `tests/fixtures/schema-1.db`, which schema 1 code wrote (see `tests/fixtures/README.md`).

use std::path::{Path, PathBuf};

use retryq::rusqlite::{Connection, params};
use retryq::{DeadReason, ErrorKind, Lease, OpenOptions, Outcome, Queue, SCHEMA_VERSION, Status};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/schema-1.db");

/// The ids of the fixture's jobs, in enqueue order.
const IDS: [&str; 7] =
    ["done-1", "permanent-2", "exhausted-3", "deadline-4", "retried-5", "leased-6", "redriven-7"];

/// A copy of the fixture in a fresh directory.
fn copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("schema-1.db");
    std::fs::copy(FIXTURE, &path).expect("copy the fixture");
    (dir, path)
}

fn user_version(path: &Path) -> i64 {
    let conn = Connection::open(path).expect("raw connection");
    conn.pragma_query_value(None, "user_version", |row| row.get(0)).expect("user_version")
}

/// Every column schema 1's jobs have, and every history entry, as text: what the upgrade
/// must keep.
fn contents(path: &Path) -> (Vec<String>, Vec<String>) {
    let conn = Connection::open(path).expect("raw connection");
    let rows = |sql: &str| -> Vec<String> {
        let mut statement = conn.prepare(sql).expect("prepare");
        let columns = statement.column_count();
        statement
            .query_map([], |row| {
                let values: Vec<String> = (0..columns)
                    .map(|i| row.get::<_, retryq::rusqlite::types::Value>(i).map(|v| format!("{v:?}")))
                    .collect::<Result<_, _>>()?;
                Ok(values.join("|"))
            })
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    let jobs = rows(
        "SELECT seq, id, payload, status, attempts, max_attempts, available_at, deadline, dead_reason,
                redrives, enqueued_at, owner, claimed_at, updated_at, last_error, last_node
         FROM jobs ORDER BY seq",
    );
    // Schema 1's history columns: schema 3 adds `cancel_requested` after them.
    let history = rows(
        "SELECT n, job, from_status, to_status, attempt, max_attempts, deadline, available_at, redrives,
                reason, worker, at
         FROM history ORDER BY n",
    );
    (jobs, history)
}

#[test]
fn the_fixture_is_schema_1() {
    assert_eq!(user_version(Path::new(FIXTURE)), 1);
}

#[test]
fn an_upgrade_keeps_every_job_and_history_entry_and_the_file_then_works() {
    let (_dir, path) = copy();
    let (jobs, history) = contents(&path);
    assert_eq!(jobs.len(), IDS.len());
    let before: Vec<retryq::Job> = {
        let read = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
        let q = Queue::open_with(&path, &read).expect("read schema 1");
        IDS.iter().map(|id| q.get(id).expect("get").expect("job")).collect()
    };

    let mut q = Queue::open(&path).expect("open upgrades");
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert_eq!(contents(&path), (jobs, history), "every job and history entry is kept as it was");
    for (id, old) in IDS.iter().zip(&before) {
        let job = q.get(id).expect("get").expect("job");
        assert_eq!(&job, old, "{id}");
        assert_eq!((job.not_before, job.base_ms, job.cap_ms), (job.enqueued_at, None, None), "{id}");
    }
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert_eq!(audit.jobs, 7);

    // The upgraded file works: the live lease is heartbeaten and completed, a pending job
    // claimed and completed, another cancelled, a redrive of the cancelled one.
    q.set_settings(retryq::Settings {
        lease_ms: 1000,
        base_ms: 100,
        cap_ms: 250,
        ..retryq::Settings::default()
    })
    .expect("settings");
    let held = Lease::new("w2", "leased-6", 1);
    assert_eq!(q.heartbeat(&held, 500).expect("heartbeat"), 1500);
    q.complete(&retryq::Completion::new(&held, Outcome::Ok, 600, 0.0)).expect("complete");
    q.cancel("retried-5", 610).expect("cancel");
    assert_eq!(q.stats(610).expect("stats").dead_cancelled, 1);
    let c = q.claim("w1", 620).expect("claim").expect("redriven-7 is due");
    assert_eq!(c.id(), "redriven-7");
    q.complete(&retryq::Completion::new(&c.lease, Outcome::Ok, 630, 0.0)).expect("complete");
    assert_eq!(q.cancel("done-1", 640).map_err(|e| e.kind()), Err(ErrorKind::NotCancellable));
    let dead = q.get("retried-5").expect("get").expect("job");
    assert_eq!((dead.status, dead.dead_reason), (Status::Dead, Some(DeadReason::Cancelled)));
    assert!(q.audit().expect("audit").is_clean());
    drop(q);
    // A second open finds schema 2 and changes nothing.
    let (jobs, history) = contents(&path);
    drop(Queue::open(&path).expect("reopen"));
    assert_eq!(contents(&path), (jobs, history));
}

#[test]
fn a_read_only_open_reads_schema_1_and_writes_nothing() {
    let (_dir, path) = copy();
    let bytes = std::fs::read(&path).expect("read");
    let read = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
    let q = Queue::open_with(&path, &read).expect("read schema 1");
    let job = q.get("leased-6").expect("get").expect("job");
    assert_eq!((job.status, job.available_at, job.not_before), (Status::Leased, Some(1013), 5));
    assert_eq!(q.stats(20).expect("stats").dead_cancelled, 0);
    assert!(q.audit().expect("audit").is_clean());
    drop(q);
    assert_eq!(user_version(&path), 1);
    assert_eq!(std::fs::read(&path).expect("read"), bytes, "the file is byte for byte as it was");
}

#[test]
fn an_upgrade_that_fails_midway_leaves_schema_1_intact() {
    let (_dir, path) = copy();
    // A row the rebuilt table refuses (a `not_before` copied from a negative `enqueued_at`)
    // makes the copy fail after the new table was created: the transaction must undo it.
    Connection::open(&path)
        .expect("raw connection")
        .execute(
            "INSERT INTO jobs (id, payload, status, attempts, max_attempts, available_at, deadline,
                               redrives, enqueued_at, updated_at)
             VALUES (?1, '', 'pending', 0, 1, 0, 10, 0, -1, 0)",
            params!["bad"],
        )
        .expect("tamper");
    let before = contents(&path);
    let err = Queue::open(&path).err().expect("the upgrade fails");
    assert_eq!(err.kind(), ErrorKind::Storage, "{err}");
    assert_eq!(user_version(&path), 1);
    assert_eq!(contents(&path), before);
    let conn = Connection::open(&path).expect("raw connection");
    let leftovers: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema WHERE name = 'jobs_upgrade'", [], |r| r.get(0))
        .expect("count");
    assert_eq!(leftovers, 0, "no half-built table is left behind");
    let triggers: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'", [], |r| r.get(0))
        .expect("count");
    assert_eq!(triggers, 6, "schema 1's triggers are all there");
}
