//! Tests of the queue as a whole, over several operations: a leaf module, so that the
//! operations' own modules can share `store::tests::queue` without a cycle.

use rusqlite::{FileControl, MAIN_DB};

use super::enqueue::NewJob;
use super::store::Queue;
use crate::error::Error;

/// A full disk, simulated with `PRAGMA max_page_count` (a per-connection cap on the
/// file's size): the operation that does not fit is refused as a storage error, nothing
/// of it is stored, and everything committed before stays whole and audits clean.
#[test]
fn a_full_database_refuses_a_write_and_keeps_what_was_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("full.db");
    let mut q = Queue::open(&path).expect("open");
    let pages: u64 = q.conn.pragma_query_value(None, "page_count", |r| r.get(0)).expect("page_count");
    q.conn.pragma_update(None, "max_page_count", pages + 40).expect("max_page_count");
    let payload = "x".repeat(20_000);
    let mut stored = 0;
    let err = loop {
        let id = format!("job-{stored}");
        let job = NewJob {
            id: &id,
            payload: &payload,
            max_attempts: 3,
            deadline: 10_000,
            now: 0,
            ..NewJob::default()
        };
        match q.enqueue(&job) {
            Ok(_) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 1000, "the page cap never bit");
    };
    let Error::Storage(e) = &err else { panic!("{err:?}") };
    assert_eq!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DiskFull), "{err}");
    assert!(err.is_transient(), "a full disk may pass: the worker waits it out");
    assert!(stored > 0, "some jobs fit before the cap");
    assert_eq!(q.get(&format!("job-{stored}")).expect("get"), None, "the refused job is not half there");
    assert_eq!(q.stats(0).expect("stats").pending, stored);
    drop(q);
    let q = Queue::open(&path).expect("reopen");
    assert_eq!(q.stats(0).expect("stats").pending, stored);
    let audit = q.audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert_eq!(audit.entries, stored, "one history entry per stored job, none for the refused one");
}

#[test]
fn in_memory_queues_are_private_and_may_grow_past_a_gibibyte() {
    let mut a = Queue::open_in_memory().expect("memory queue");
    let b = Queue::open_in_memory().expect("memory queue");
    a.enqueue(&NewJob { id: "x", payload: "", max_attempts: 1, deadline: 9, now: 0, ..NewJob::default() })
        .expect("enqueue");
    assert!(a.get("x").expect("get").is_some());
    assert_eq!(b.get("x").expect("get"), None, "each in-memory queue is its own database");
    let mut limit: i64 = -1;
    // A negative limit only reads the current one.
    a.conn.file_control(Some(MAIN_DB), FileControl::SizeLimit(&mut limit)).expect("file control");
    assert_eq!(limit, i64::MAX);
}
