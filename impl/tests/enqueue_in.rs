//! `enqueue_in`: a job enqueued in the application's own transaction, on the application's
//! own connection, lives or dies with that transaction; and the queue's schema shares the
//! file with the application's tables.

use std::path::Path;

use retryq::rusqlite::{Connection, Transaction, TransactionBehavior, params};
use retryq::{Enqueued, Error, ErrorKind, NewJob, OpenOptions, Outcome, Queue, Ran, Status};

const ORDERS: &str = "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL)";

fn job(id: &str) -> NewJob<'_> {
    NewJob { id, payload: "{\"order\":1}", max_attempts: 3, deadline: 10_000, now: 0, ..NewJob::default() }
}

/// The application's connection to a file that has both its `orders` table and the queue.
fn app_database(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("app connection");
    conn.busy_timeout(std::time::Duration::from_secs(5)).expect("busy timeout");
    conn.execute_batch(ORDERS).expect("app table");
    retryq::install(&conn).expect("install");
    conn
}

fn immediate(conn: &mut Connection) -> Transaction<'_> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate).expect("begin")
}

fn orders(conn: &Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM orders", [], |r| r.get(0)).expect("count")
}

fn history_entries(conn: &Connection) -> i64 {
    conn.query_row("SELECT count(*) FROM history", [], |r| r.get(0)).expect("count")
}

#[test]
fn a_rollback_leaves_no_job_and_no_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.db");
    let mut conn = app_database(&path);
    let tx = immediate(&mut conn);
    tx.execute("INSERT INTO orders (id, customer) VALUES (1, 'ada')", []).expect("order");
    assert_eq!(retryq::enqueue_in(&tx, &job("order-1")).expect("enqueue"), Enqueued::New);
    tx.rollback().expect("rollback");
    assert_eq!((orders(&conn), history_entries(&conn)), (0, 0));
    let queue = Queue::open(&path).expect("open");
    assert_eq!(queue.get("order-1").expect("get"), None);
    assert_eq!(queue.stats(0).expect("stats").pending, 0);
    // Dropping the transaction without a commit is a rollback too.
    let tx = immediate(&mut conn);
    retryq::enqueue_in(&tx, &job("order-2")).expect("enqueue");
    drop(tx);
    assert_eq!(queue.get("order-2").expect("get"), None);
    assert_eq!(history_entries(&conn), 0);
}

#[test]
fn a_commit_shows_the_row_and_the_job_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.db");
    let mut conn = app_database(&path);
    let mut queue = Queue::open(&path).expect("open");
    let tx = immediate(&mut conn);
    tx.execute("INSERT INTO orders (id, customer) VALUES (1, 'ada')", []).expect("order");
    retryq::enqueue_in(&tx, &job("order-1")).expect("enqueue");
    // Another connection (here the queue's own) sees neither before the commit …
    assert_eq!(queue.get("order-1").expect("get"), None);
    let observer = Connection::open(&path).expect("observer");
    assert_eq!(orders(&observer), 0);
    tx.commit().expect("commit");
    // … and both after it.
    assert_eq!(orders(&observer), 1);
    let stored = queue.get("order-1").expect("get").expect("job");
    assert_eq!((stored.status, stored.attempts, stored.available_at), (Status::Pending, 0, Some(0)));
    assert_eq!(queue.history("order-1").expect("history").len(), 1);
    // And a worker takes it like any other job.
    let ran = queue.run_once("w", || 1, |_: &retryq::Claimed| Ok::<_, Error>(Outcome::Ok), 0.5).expect("run");
    assert_eq!(ran, Ran::Done { id: "order-1".into(), attempt: 1 });
}

#[test]
fn the_rules_are_enqueues_and_a_refusal_leaves_the_transaction_usable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.db");
    let mut conn = app_database(&path);
    let tx = immediate(&mut conn);
    assert_eq!(retryq::enqueue_in(&tx, &job("a")).expect("new"), Enqueued::New);
    let again = NewJob { max_attempts: 9, deadline: 50_000, now: 5, ..job("a") };
    assert_eq!(retryq::enqueue_in(&tx, &again).expect("same payload"), Enqueued::Existing);
    let err = retryq::enqueue_in(&tx, &NewJob { payload: "other", ..job("a") }).unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    // Validation comes first: an existing id with a bad argument is invalid_input.
    let err = retryq::enqueue_in(&tx, &NewJob { deadline: 0, payload: "other", ..job("a") }).unwrap_err();
    assert!(matches!(err, Error::InvalidInput { field: "deadline", .. }), "{err}");
    tx.execute("INSERT INTO orders (id, customer) VALUES (1, 'ada')", []).expect("still usable");
    tx.commit().expect("commit");
    let queue = Queue::open(&path).expect("open");
    let stored = queue.get("a").expect("get").expect("job");
    assert_eq!((stored.max_attempts, stored.deadline, stored.payload.as_str()), (3, 10_000, "{\"order\":1}"));
    assert_eq!(queue.history("a").expect("history").len(), 1, "existing and refusals add nothing");
}

#[test]
fn a_file_without_the_schema_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.db");
    let mut conn = Connection::open(&path).expect("app connection");
    conn.execute_batch(ORDERS).expect("app table");
    let tx = immediate(&mut conn);
    let err = retryq::enqueue_in(&tx, &job("a")).unwrap_err();
    assert!(matches!(err, Error::NotRetryq { .. }), "{err}");
    assert!(err.to_string().contains("retryq::install"), "the refusal says what to do: {err}");
    drop(tx);
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0)).expect("count");
    assert_eq!(tables, 1, "only the application's table");

    let newer = dir.path().join("newer.db");
    drop(Queue::open(&newer).expect("create"));
    let mut conn = Connection::open(&newer).expect("app connection");
    conn.pragma_update(None, "user_version", retryq::SCHEMA_VERSION + 1).expect("a later schema");
    let tx = immediate(&mut conn);
    let newer = retryq::enqueue_in(&tx, &job("a"));
    assert!(matches!(newer, Err(Error::NewerSchema { found, .. }) if found == retryq::SCHEMA_VERSION + 1));
    drop(tx);

    let mut empty = Connection::open_in_memory().expect("memory");
    let tx = immediate(&mut empty);
    assert_eq!(retryq::enqueue_in(&tx, &job("a")).unwrap_err().kind(), ErrorKind::Storage);
}

#[test]
fn the_application_may_create_its_tables_before_the_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.db");
    {
        let conn = Connection::open(&path).expect("app connection");
        conn.execute_batch(ORDERS).expect("app table");
        conn.execute("INSERT INTO orders (id, customer) VALUES (1, 'ada')", []).expect("order");
        // Queue::open never takes over a database with tables it does not know …
        assert!(matches!(Queue::open(&path), Err(Error::NotRetryq { .. })));
        // … the application installs the schema, deliberately, on its own connection.
        retryq::install(&conn).expect("install");
        let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).expect("mode");
        assert_eq!(mode, "wal", "the file is switched to WAL as Queue::open would");
    }
    shared_file_works(&path);
}

#[test]
fn the_application_may_create_its_tables_after_the_queue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.db");
    drop(Queue::open(&path).expect("create"));
    {
        let conn = Connection::open(&path).expect("app connection");
        conn.execute_batch(ORDERS).expect("app table");
        conn.execute("INSERT INTO orders (id, customer) VALUES (1, 'ada')", []).expect("order");
        retryq::install(&conn).expect("installing on a retryq file is a no-op");
    }
    shared_file_works(&path);
}

/// Both orders end in the same place: the file opens as a queue (read-only too, as the
/// operator's commands open it), jobs go in through the application's transactions and
/// through the queue, and the audit (`retryq audit`'s) is clean.
fn shared_file_works(path: &Path) {
    let mut conn = Connection::open(path).expect("app connection");
    let tx = immediate(&mut conn);
    tx.execute("INSERT INTO orders (id, customer) VALUES (2, 'grace')", []).expect("order");
    retryq::enqueue_in(&tx, &job("order-2")).expect("enqueue in");
    tx.commit().expect("commit");
    let mut queue = Queue::open(path).expect("open");
    queue.enqueue(&job("direct")).expect("enqueue");
    assert_eq!(queue.stats(0).expect("stats").pending, 2);
    assert_eq!(orders(&conn), 2, "the application's rows are untouched");
    let read_only = OpenOptions { read_only: true, create: false, ..OpenOptions::default() };
    let audit = Queue::open_with(path, &read_only).expect("read-only open").audit().expect("audit");
    assert!(audit.is_clean(), "{:#?}", audit.violations);
    assert_eq!((audit.jobs, audit.entries), (2, 2));
}

#[test]
fn the_applications_commit_is_as_durable_as_its_connection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conn = app_database(&dir.path().join("app.db"));
    let synchronous: i64 = conn.pragma_query_value(None, "synchronous", |r| r.get(0)).expect("pragma");
    assert_eq!(synchronous, 2, "SQLite's default, FULL, as Queue::open sets it: the documented premise");
}

#[test]
fn install_refuses_a_file_that_cannot_take_the_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("app.db");
    let conn = Connection::open(&path).expect("app connection");
    conn.pragma_update(None, "user_version", 7).expect("the application's own version");
    conn.execute_batch(ORDERS).expect("app table");
    let err = retryq::install(&conn).unwrap_err();
    assert!(matches!(err, Error::NotRetryq { .. }), "{err}");
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0)).expect("count");
    assert_eq!(objects, 1, "nothing installed");
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0)).expect("mode");
    assert_eq!(mode, "delete", "not even the journal mode changed");
    conn.execute("INSERT INTO orders (id, customer) VALUES (?1, ?2)", params![1, "ada"])
        .expect("app goes on");
}

/// The same on PostgreSQL: `PgQueue::install` puts the queue beside the application's own
/// tables (and refuses a schema where one of them is named like the queue's), and a job
/// enqueued in the application's transaction commits or rolls back with its row.
#[test]
fn on_postgres_a_job_lives_or_dies_with_the_applications_transaction() {
    let Some(url) =
        retryq_pgtest::database("on_postgres_a_job_lives_or_dies_with_the_applications_transaction")
    else {
        return;
    };
    let mut client = retryq::postgres::Client::connect(&url, retryq::postgres::NoTls).expect("connect");
    client
        .batch_execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT NOT NULL)")
        .expect("table");
    retryq::PgQueue::install(&mut client).expect("installed beside the orders table");
    retryq::PgQueue::install(&mut client).expect("a second install finds it");
    let enqueue = |tx: &mut retryq::postgres::Transaction<'_>, id: &str, order: i64, payload: &str| {
        tx.execute("INSERT INTO orders (id, customer) VALUES ($1, 'ada')", &[&order]).expect("row");
        retryq::PgQueue::enqueue_in(tx, &retryq::Enqueue::new(id, payload))
    };
    let mut tx = client.transaction().expect("begin");
    assert_eq!(enqueue(&mut tx, "a", 1, "p").expect("job"), Enqueued::New);
    tx.rollback().expect("rollback");
    let mut tx = client.transaction().expect("begin");
    assert_eq!(enqueue(&mut tx, "b", 2, "p").expect("job"), Enqueued::New);
    // A refusal leaves the application's transaction usable: the savepoint is rolled back.
    let err = retryq::PgQueue::enqueue_in(&mut tx, &retryq::Enqueue::new("b", "other")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    tx.execute("INSERT INTO orders (id, customer) VALUES (3, 'grace')", &[]).expect("still usable");
    tx.commit().expect("commit");
    let queue = retryq::PgQueue::connect(&url).expect("queue");
    assert_eq!(queue.get("a").expect("get"), None);
    let b = queue.get("b").expect("get").expect("b committed with its row");
    // Resolved on the server's clock: the defaults, five attempts within the hour.
    assert_eq!((b.max_attempts, b.deadline - b.enqueued_at), (5, 3_600_000));
    let orders: i64 = client.query_one("SELECT count(*) FROM orders", &[]).expect("count").get(0);
    assert_eq!(orders, 2);
    assert!(queue.audit().expect("audit").is_clean());

    // A schema with a table named like one of the queue's is refused, and left as it was.
    let Some(other) = retryq_pgtest::database("on_postgres_install_refuses_a_taken_name") else { return };
    let mut client = retryq::postgres::Client::connect(&other, retryq::postgres::NoTls).expect("connect");
    client.batch_execute("CREATE TABLE history (n INT)").expect("table");
    let err = retryq::PgQueue::install(&mut client).unwrap_err();
    assert!(err.to_string().contains("history"), "{err}");
    let tables: i64 = client
        .query_one("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()", &[])
        .expect("count")
        .get(0);
    assert_eq!(tables, 1);
}
