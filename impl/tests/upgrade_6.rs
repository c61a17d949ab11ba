//! The upgrade of a schema 6 file (contract 1.3, before kinds) to schema 7: a read-only open
//! reads every job with no kind and writes nothing; a read-write one adds the column, keeps
//! every job, and a tombstone written before kinds still answers its own payload `existing`;
//! the tallies kept before are kept under kind `""`, and those after are by kind.

mod kindless;

use std::path::Path;

use retryq::rusqlite::Connection;
use retryq::{
    Completion, Enqueue, Enqueued, Error, NewJob, OpenOptions, Outcome, Queue, SCHEMA_VERSION, Tallies,
};

/// A counter's value by its labels, if the store keeps it.
fn counter(t: &Tallies, metric: &str, labels: &[(&str, &str)]) -> Option<u64> {
    let labels: Vec<(String, String)> =
        labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    t.counters.iter().find(|c| c.metric == metric && c.labels == labels).map(|c| c.value)
}

/// A schema 6 file: this build's schema without the kinds, marked 6, with an open job and a
/// pruned one.
fn schema_6(path: &Path) {
    let mut q = Queue::open(path).expect("open");
    let job = |id| NewJob { id, payload: "p", max_attempts: 3, deadline: 9000, now: 0, ..NewJob::default() };
    q.enqueue(&job("a")).expect("enqueue a");
    q.enqueue(&job("b")).expect("enqueue b");
    let claimed = q.claim("w", 1).expect("claim").expect("a");
    q.complete(&Completion::new(&claimed.lease, Outcome::Ok, 2, 0.5)).expect("done");
    assert_eq!(q.prune(2, 3).expect("prune"), 1);
    drop(q);
    let conn = Connection::open(path).expect("raw");
    kindless::tallies(&conn);
    conn.execute_batch(
        "DROP TRIGGER jobs_kind_fixed; ALTER TABLE jobs DROP COLUMN kind; PRAGMA user_version = 6;",
    )
    .expect("schema 6");
}

fn user_version(path: &Path) -> i64 {
    Connection::open(path)
        .expect("raw")
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("v")
}

#[test]
fn a_schema_6_file_is_read_without_kinds_then_upgraded_by_a_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    schema_6(&path);
    assert_eq!(SCHEMA_VERSION, 7);
    let ro =
        Queue::open_with(&path, &OpenOptions { read_only: true, create: false, ..OpenOptions::default() })
            .expect("read-only open");
    assert_eq!(ro.get("b").expect("get").expect("b").kind, "");
    // Schema 6's tallies read as kind "": two enqueues, one claim, one prune.
    let kept = ro.tallies().expect("tallies");
    let default = [("queue", "default"), ("kind", "")];
    assert_eq!(counter(&kept, "retryq_enqueued_total", &default), Some(2));
    assert_eq!(counter(&kept, "retryq_claims_total", &default), Some(1));
    let ok = [("queue", "default"), ("kind", ""), ("outcome", "ok")];
    assert_eq!(counter(&kept, "retryq_attempts_ended_total", &ok), Some(1));
    assert_eq!(counter(&kept, "retryq_pruned_total", &[("queue", "default"), ("status", "done")]), Some(1));
    drop(ro);
    assert_eq!(user_version(&path), 6, "a read-only open writes nothing");
    let mut q = Queue::open(&path).expect("open");
    assert_eq!(user_version(&path), SCHEMA_VERSION);
    assert_eq!(q.tallies().expect("tallies"), kept, "the upgrade keeps every tally, under kind \"\"");
    // The digest as every schema before 7 wrote it: SHA-256 of the payload (`printf p | sha256sum`).
    let digest: String = Connection::open(&path)
        .expect("raw")
        .query_row("SELECT digest FROM tombstones WHERE id = 'a'", [], |row| row.get(0))
        .expect("tombstone");
    assert_eq!(digest, "148de9c5a7a44d19e56cd9ae1a554bf67847afb0c58f6e12fa29ac7ddfca9940");
    assert_eq!(q.get("b").expect("get").expect("b").kind, "");
    // The tombstone of schema 6 digests the payload alone: its own payload without a kind is
    // existing, under a kind a conflict.
    assert_eq!(q.enqueue(&Enqueue::new("a", "p")).expect("same"), Enqueued::Existing);
    let err = q.enqueue(&Enqueue::new("a", "p").kind("mail")).unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    let c = NewJob {
        id: "c",
        payload: "p",
        max_attempts: 3,
        deadline: 9000,
        now: 5,
        kind: "mail",
        ..NewJob::default()
    };
    q.enqueue(&c).expect("a new job with a kind");
    assert_eq!(q.claim("w", 10).expect("claim").expect("b").kind, "");
    assert_eq!(q.claim("w", 10).expect("claim").expect("c").kind, "mail");
    // The old counts go on under "", the new kind counts apart.
    let t = q.tallies().expect("tallies");
    assert_eq!(counter(&t, "retryq_enqueued_total", &default), Some(2));
    assert_eq!(counter(&t, "retryq_claims_total", &default), Some(2));
    let mail = [("queue", "default"), ("kind", "mail")];
    assert_eq!(counter(&t, "retryq_enqueued_total", &mail), Some(1));
    assert_eq!(counter(&t, "retryq_claims_total", &mail), Some(1));
    assert!(q.audit().expect("audit").is_clean());
}
