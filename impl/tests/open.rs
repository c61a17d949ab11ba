//! Opening files: a retryq database is recognised, anything else is refused and left exactly
//! as it was.

use retryq::{Error, NewJob, OpenOptions, Queue, SCHEMA_VERSION};

fn file_bytes(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).expect("read file")
}

#[test]
fn a_new_file_becomes_a_retryq_database_and_reopens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    {
        let mut q = Queue::open(&path).expect("create");
        q.enqueue(&NewJob {
            id: "a",
            payload: "p",
            max_attempts: 1,
            deadline: 10,
            now: 0,
            ..NewJob::default()
        })
        .expect("enqueue");
    }
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    let (app, version, mode): (i64, i64, String) = conn
        .query_row("SELECT (SELECT application_id FROM pragma_application_id), (SELECT user_version FROM pragma_user_version), (SELECT journal_mode FROM pragma_journal_mode)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("pragmas");
    assert_eq!((app, version, mode.as_str()), (retryq::APPLICATION_ID, SCHEMA_VERSION, "wal"));
    drop(conn);
    let q = Queue::open(&path).expect("reopen");
    assert_eq!(q.get("a").expect("get").expect("job").payload, "p");
}

#[test]
fn a_text_file_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "grocery list\n".repeat(500)).expect("write");
    let before = file_bytes(&path);
    let err = Queue::open(&path).err().expect("refused");
    assert!(matches!(err, Error::NotRetryq { .. }), "{err}");
    assert!(err.to_string().contains("not a SQLite database"), "{err}");
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn another_programs_database_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.execute_batch("CREATE TABLE orders (id TEXT); INSERT INTO orders VALUES ('x');").expect("create");
    drop(conn);
    let before = file_bytes(&path);
    let err = Queue::open(&path).err().expect("refused");
    assert!(matches!(err, Error::NotRetryq { .. }), "{err}");
    assert_eq!(file_bytes(&path), before);
    assert!(!dir.path().join("other.db-wal").exists());

    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.pragma_update(None, "application_id", 0x1234).expect("pragma");
    drop(conn);
    let before = file_bytes(&path);
    let err = Queue::open(&path).err().expect("refused");
    assert!(err.to_string().contains("application_id 0x1234"), "{err}");
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn a_newer_schema_is_refused_and_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    drop(Queue::open(&path).expect("create"));
    let conn = rusqlite::Connection::open(&path).expect("sqlite");
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).expect("pragma");
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").expect("checkpoint");
    drop(conn);
    let before = file_bytes(&path);
    let err = Queue::open(&path).err().expect("refused");
    assert!(matches!(err, Error::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1), "{err}");
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn read_only_never_creates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("missing.db");
    let options = OpenOptions { read_only: true, ..OpenOptions::default() };
    assert!(Queue::open_with(&path, &options).is_err());
    assert!(!path.exists());
    let no_create = OpenOptions { create: false, ..OpenOptions::default() };
    assert!(Queue::open_with(&path, &no_create).is_err());
    assert!(!path.exists());
    // An empty file is not a database to read.
    std::fs::write(&path, b"").expect("write");
    let err = Queue::open_with(&path, &options).err().expect("refused");
    assert!(err.to_string().contains("empty"), "{err}");
    assert_eq!(file_bytes(&path), b"");
}

#[test]
fn two_connections_share_one_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("q.db");
    let mut a = Queue::open(&path).expect("open a");
    let mut b = Queue::open(&path).expect("open b");
    a.enqueue(&NewJob {
        id: "x",
        payload: "",
        max_attempts: 2,
        deadline: 99_999,
        now: 0,
        ..NewJob::default()
    })
    .expect("enqueue");
    let claimed = b.claim("w", 0).expect("claim").expect("b sees a's job");
    assert_eq!(claimed.id(), "x");
    assert_eq!(a.claim("w2", 1).expect("claim"), None, "the lease is held across connections");
}
