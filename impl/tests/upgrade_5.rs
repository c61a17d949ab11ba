//! The upgrade of a schema 5 file (contract 1.3 before its pauses) to the current one: a read-only
//! open reads it with no queue paused and writes nothing; a read-write one adds the empty
//! table of paused queues and keeps every job; a file whose application already has an
//! object of that name is refused, untouched.

mod kindless;

use std::path::Path;

use retryq::rusqlite::Connection;
use retryq::{Error, NewJob, OpenOptions, Queue, SCHEMA_VERSION};

/// A schema 5 file: this build's schema without the paused queues and the kinds, marked 5,
/// with one job.
fn schema_5(path: &Path) {
    let mut q = Queue::open(path).expect("open");
    q.enqueue(&NewJob {
        id: "a",
        payload: "p",
        max_attempts: 3,
        deadline: 9000,
        now: 0,
        ..NewJob::default()
    })
    .expect("enqueue");
    drop(q);
    let conn = Connection::open(path).expect("raw");
    kindless::tallies(&conn);
    conn.execute_batch(
        "DROP TABLE paused_queues; DROP TRIGGER jobs_kind_fixed; ALTER TABLE jobs DROP COLUMN kind;
         PRAGMA user_version = 5;",
    )
    .expect("schema 5");
}

fn user_version(path: &Path) -> i64 {
    Connection::open(path)
        .expect("raw")
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version")
}

#[test]
fn a_schema_5_file_is_read_as_it_is_then_upgraded_by_a_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    schema_5(&path);
    assert_eq!(SCHEMA_VERSION, 7);
    let ro =
        Queue::open_with(&path, &OpenOptions { read_only: true, create: false, ..OpenOptions::default() })
            .expect("read-only open");
    assert_eq!(ro.paused().expect("paused"), []);
    assert_eq!(ro.stats(10).expect("stats").paused_queues, 0);
    assert_eq!(ro.stats(10).expect("stats").pending, 1);
    drop(ro);
    assert_eq!(user_version(&path), 5, "a read-only open writes nothing");
    let mut q = Queue::open(&path).expect("open");
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert_eq!(q.paused().expect("paused"), []);
    q.pause("default", 5).expect("pause");
    assert_eq!(q.claim("w", 10).expect("claim"), None);
    q.resume("default", 20).expect("resume");
    assert_eq!(q.claim("w", 30).expect("claim").expect("a").id(), "a");
    assert!(q.audit().expect("audit").is_clean());
}

#[test]
fn an_applications_paused_queues_table_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    schema_5(&path);
    Connection::open(&path).expect("raw").execute_batch("CREATE TABLE paused_queues (x)").expect("app table");
    let err = Queue::open(&path).err().expect("refused");
    assert!(matches!(&err, Error::NotRetryq { why, .. } if why.contains("paused_queues")), "{err}");
    assert_eq!(user_version(&path), 5);
}
