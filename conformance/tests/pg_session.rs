//! What the PostgreSQL store does as a [`Backend`] beyond the SPEC's operations, through the
//! trait a worker calls: its name and kind, its settings and clock, the server's clock, the
//! session's name in `pg_stat_activity`, whom a lock waits for, a statement cancelled from
//! another thread, a connection the server ended (or a failure that says so) followed by a
//! new session, and the reruns of what the server rolls back.
//! No trace reaches these; they are here so that the store's mutation scope
//! (`.cargo/mutants-pg.toml`) has tests that notice them broken.
//!
//! Each test gets a database from `retryq_pgtest` (a throwaway cluster, or `RETRYQ_PG_URL`);
//! where PostgreSQL is not installed it says so loudly and returns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use retryq::{Backend, ManualClock, NewJob, PgQueue, Queue, ServerTime, Settings};

/// A fresh database's URL and an administrator's connection to it.
fn database(test: &str) -> Option<(String, retryq::postgres::Client)> {
    let url = retryq_pgtest::database(test)?;
    let admin = retryq::postgres::Client::connect(&url, retryq::postgres::NoTls).expect("admin");
    Some((url, admin))
}

/// A job due at once, with a budget no test here spends.
fn job(id: &str) -> NewJob<'_> {
    NewJob { id, payload: "p", max_attempts: 3, deadline: 60_000, now: 0, ..NewJob::default() }
}

/// The sessions of this database named `name` in `pg_stat_activity`.
fn sessions_named(admin: &mut retryq::postgres::Client, name: &str) -> Vec<i32> {
    admin
        .query(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
            &[&name],
        )
        .expect("pg_stat_activity")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// Both stores keep what they were given: their kind, settings (a refused one changes
/// nothing) and clock.
fn keeps_what_it_was_given(q: &mut dyn Backend, kind: &str) {
    assert_eq!(q.kind(), kind);
    let settings = Settings { lease_ms: 7, base_ms: 11, cap_ms: 13, reap_limit: 17 };
    q.set_settings(settings).expect("in range");
    assert_eq!(q.settings(), settings);
    q.set_settings(Settings { lease_ms: 0, ..settings }).expect_err("a lease of 0 ms");
    q.set_settings(Settings { reap_limit: 0, ..settings }).expect_err("a reap limit of 0");
    q.set_settings(Settings { reap_limit: 1 << 53, ..settings }).expect_err("a reap limit past 2^53 - 1");
    assert_eq!(q.settings(), settings, "a refused setting changes nothing");
    assert_eq!(q.clock().now_ms().expect("the store's clock") / 1000, retryq::now_ms().expect("now") / 1000);
}

#[test]
fn each_store_keeps_its_kind_settings_and_clock() {
    keeps_what_it_was_given(&mut Queue::open_in_memory().expect("memory store"), "sqlite");
    let Some((url, _)) = database("pg kind and settings") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    keeps_what_it_was_given(&mut q, "postgres");
    q.set_clock(Arc::new(ManualClock::new(5)));
    assert_eq!(Backend::clock(&q).now_ms().expect("the clock set"), 5);
}

#[test]
fn postgres_names_its_database_without_the_password() {
    let Some((url, _)) = database("pg name") else { return };
    // A server that trusts this host never asks for the password: one is added to be left out.
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (user, at) = rest.split_once('@').expect("pgtest's URLs name a user");
    let (url, password) = match user.split_once(':') {
        Some((_, password)) => (url.clone(), password.to_owned()),
        None => (format!("{scheme}://{user}:s3cret-pw@{at}"), "s3cret-pw".to_owned()),
    };
    let q = PgQueue::connect(&url).expect("connect");
    let db = url.rsplit('/').next().expect("a database");
    let name = q.name();
    assert!(name.starts_with(&format!("postgres://{}@", user.split(':').next().unwrap_or(user))), "{name}");
    assert!(name.ends_with(&format!("/{db}")) && !name.contains(&password), "{name}");
}

/// Every host that shares the database reads one clock: the server's. SQLite has none.
#[test]
fn postgres_reads_the_servers_clock() {
    assert_eq!(ServerTime::server_now(&Queue::open_in_memory().expect("memory store")).expect("none"), None);
    let Some((url, _)) = database("pg server clock") else { return };
    let q = PgQueue::connect(&url).expect("connect");
    let before = retryq::now_ms().expect("now");
    let server = ServerTime::server_now(&q).expect("the server's clock").expect("a server has one");
    let after = retryq::now_ms().expect("now");
    // The server runs on this host: its clock is this host's, to within the round trip.
    assert!(before.saturating_sub(1000) <= server && server <= after + 1000, "{before} {server} {after}");
}

/// `set_identity` names the session (and any it opens later) for an operator; and
/// `lock_holders` names who holds a lock on the queue's table past the lock timeout.
#[test]
fn postgres_names_its_session_and_whom_a_lock_waits_for() {
    let Some((url, mut admin)) = database("pg identity and holders") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    Backend::set_identity(&mut q, "conformance-worker").expect("named");
    assert_eq!(sessions_named(&mut admin, "conformance-worker").len(), 1);
    assert_eq!(Backend::lock_holders(&q).expect("holders"), Vec::<String>::new(), "nobody holds a lock");

    let mut holder = retryq::postgres::Client::connect(
        &format!("{url}?application_name=conformance-holder"),
        retryq::postgres::NoTls,
    )
    .expect("holder");
    let mut tx = holder.transaction().expect("begin");
    tx.query("SELECT id FROM jobs", &[]).expect("a lock on the table");
    // Past the lock timeout (2 s), a transaction holding a lock on `jobs` is named.
    std::thread::sleep(Duration::from_millis(2_500));
    let holders = Backend::lock_holders(&q).expect("holders");
    assert_eq!(holders.len(), 1, "{holders:?}");
    assert!(holders[0].starts_with("conformance-holder (pid "), "{holders:?}");
    tx.rollback().expect("rollback");
}

/// A statement waiting on a lock is cancelled by the store's interrupter from another thread
/// (SQLSTATE 57014), long before its lock timeout (55P03, 2 s).
#[test]
fn postgres_cancels_a_waiting_statement_from_another_thread() {
    let Some((url, mut admin)) = database("pg interrupter") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    let job = job("a");
    Backend::enqueue(&mut q, &job).expect("enqueue");
    Backend::set_identity(&mut q, "conformance-interrupted").expect("named");
    let session = sessions_named(&mut admin, "conformance-interrupted");
    let interrupter = Backend::interrupter(&q).expect("PostgreSQL's statements can be cancelled");
    let mut tx = admin.transaction().expect("begin");
    tx.batch_execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE").expect("every reader waits");
    let start = Instant::now();
    let cancel = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        interrupter.interrupt();
    });
    let err = Backend::get(&q, "a").expect_err("the read waited, then was cancelled");
    cancel.join().expect("the interrupting thread");
    assert_eq!(err.sqlstate(), Some("57014"), "{err} after {:?}", start.elapsed());
    tx.rollback().expect("rollback");
    assert!(read_after_a_cancel(&q, "a").expect("the next read").is_some());
    // A cancelled statement costs the transaction, not the connection.
    assert_eq!(sessions_named(&mut admin, "conformance-interrupted"), session);

    // So too a write of one statement, a new job's insert, which is never run again.
    let interrupter = Backend::interrupter(&q).expect("PostgreSQL's statements can be cancelled");
    let mut tx = admin.transaction().expect("begin");
    tx.batch_execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE").expect("every writer waits");
    let cancel = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        interrupter.interrupt();
    });
    let b = NewJob { id: "b", ..job };
    let err = Backend::enqueue(&mut q, &b).expect_err("the insert waited, then was cancelled");
    cancel.join().expect("the interrupting thread");
    assert_eq!(err.sqlstate(), Some("57014"), "{err}");
    tx.rollback().expect("rollback");
    assert_eq!(read_after_a_cancel(&q, "b").expect("read"), None, "cancelled, so not inserted");
    assert_eq!(sessions_named(&mut admin, "conformance-interrupted"), session);
}

/// `get`, run a second time if a cancel cancelled it: the postmaster signals the backend a
/// cancel request names twice (its pid, then its process group), so on a loaded machine the
/// second signal can land on the statement after the one it cancelled. A passing failure
/// (the worker runs again whatever 57014 fails); a third cancel is a failure of the test.
fn read_after_a_cancel(q: &PgQueue, id: &str) -> retryq::Result<Option<retryq::Job>> {
    match Backend::get(q, id) {
        Err(e) if e.sqlstate() == Some("57014") => Backend::get(q, id),
        read => read,
    }
}

/// The server ends the session (an administrator, a failover): the operation that finds out
/// fails at most, as a passing failure, and the next opens a new connection with the same
/// name — after a one-statement write (a new job's insert) as after a transaction (a read).
#[test]
fn postgres_opens_a_connection_the_server_ended_again() {
    let Some((url, mut admin)) = database("pg reconnect") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    Backend::set_identity(&mut q, "conformance-reconnect").expect("named");
    let mut end_the_session = || {
        let pids = sessions_named(&mut admin, "conformance-reconnect");
        assert_eq!(pids.len(), 1, "{pids:?}");
        admin.execute("SELECT pg_terminate_backend($1)", &[&pids[0]]).expect("terminate");
        pids[0]
    };
    let job = job("a");
    let ended = end_the_session();
    if let Err(e) = Backend::enqueue(&mut q, &job) {
        assert!(e.is_transient(), "the write that found the session ended: {e}");
    }
    Backend::enqueue(&mut q, &job).expect("the next write connects again");
    let ended_again = end_the_session();
    assert_ne!(ended, ended_again, "a new session");
    if let Err(e) = Backend::get(&q, "a") {
        assert!(e.is_transient(), "the read that found the session ended: {e}");
    }
    assert!(Backend::get(&q, "a").expect("the next read connects again").is_some());
    let now = sessions_named(&mut admin, "conformance-reconnect");
    assert!(now.len() == 1 && now[0] != ended_again, "a new session, with the same name: {now:?}");
}

/// The audit reads every job and history entry, alike on both stores.
fn audited(q: &mut dyn Backend) -> (u64, u64, bool) {
    use retryq::{Completion, Outcome, Report};
    for id in ["a", "b"] {
        let job = job(id);
        Backend::enqueue(q, &job).expect("enqueue");
    }
    let claimed = q.claim("w", 1).expect("claim").expect("a job is due");
    q.complete(&Completion::new(&claimed.lease, Report::from(Outcome::Ok), 2, 0.0)).expect("complete");
    let audit = q.audit().expect("audit");
    (audit.jobs, audit.entries, audit.is_clean())
}

#[test]
fn the_audit_reads_the_same_jobs_and_history_on_both_stores() {
    let on_sqlite = audited(&mut Queue::open_in_memory().expect("memory store"));
    assert_eq!(on_sqlite, (2, 4, true), "two enqueues, a claim and a completion");
    let Some((url, _)) = database("pg audit") else { return };
    assert_eq!(audited(&mut PgQueue::connect(&url).expect("connect")), on_sqlite);
}

/// An enqueue under the id of a job a prune is deleting waits for the prune, then answers by
/// the tombstone (SPEC 3.2): the insert's `RQ001` is run again, never returned — for the
/// single enqueue (one statement) and for a batch (a transaction).
#[test]
fn an_enqueue_racing_a_prune_answers_by_the_tombstone() {
    use retryq::{Enqueued, ErrorKind};
    for batch in [false, true] {
        let Some((url, mut admin)) = database("pg enqueue racing a prune") else { return };
        let mut q = PgQueue::connect(&url).expect("connect");
        let job = job("a");
        Backend::enqueue(&mut q, &job).expect("enqueue");
        Backend::cancel(&mut q, "a", 5).expect("cancelled, so ended");
        let mut prune = admin.transaction().expect("begin");
        prune
            .batch_execute(
                "INSERT INTO tombstones SELECT id, queue, encode(sha256(payload), 'hex'), status, dead_reason,
                                               attempts, ended_at FROM jobs WHERE id = 'a';
                 DELETE FROM jobs WHERE id = 'a';
                 DELETE FROM history WHERE job = 'a';",
            )
            .expect("a prune under way");
        let racing = std::thread::spawn(move || {
            let again = NewJob { now: 10, ..job };
            let other = NewJob { payload: "other", ..again };
            let answers = if batch {
                let answers = Backend::enqueue_many(&mut q, &[again, other]).map_err(|e| e.to_string());
                answers.map(|each| each.into_iter().map(|a| a.map_err(|e| e.kind())).collect::<Vec<_>>())
            } else {
                let same = Backend::enqueue(&mut q, &again).map_err(|e| e.kind());
                Ok(vec![same, Backend::enqueue(&mut q, &other).map_err(|e| e.kind())])
            };
            (answers, q)
        });
        let waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
        while prune.query_one(waiting, &[]).expect("waiting").get::<_, i64>(0) == 0 {
            assert!(!racing.is_finished(), "the enqueue did not wait for the prune");
            std::thread::sleep(Duration::from_millis(5));
        }
        prune.commit().expect("commit");
        let (answers, q) = racing.join().expect("enqueue");
        assert_eq!(answers, Ok(vec![Ok(Enqueued::Existing), Err(ErrorKind::Conflict)]), "batch: {batch}");
        assert_eq!(Backend::get(&q, "a").expect("get"), None);
    }
}

/// An operation the server rolls back every time (here a trigger's deadlock, SQLSTATE 40P01)
/// runs [`PgQueue::RERUNS`] times in all, then returns the server's error — for an insert of
/// one statement and for a batch's transaction alike; the session stays usable. Past 100
/// runs the trigger fails otherwise, so that a rerun that never stops fails the test rather
/// than hanging it.
#[test]
fn what_the_server_rolls_back_every_time_runs_reruns_times_then_fails() {
    let Some((url, mut admin)) = database("pg reruns") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    admin
        .batch_execute(
            "CREATE SEQUENCE runs;
             CREATE FUNCTION doomed() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF nextval('runs') > 100 THEN RAISE EXCEPTION 'run past 100'; END IF;
                 RAISE EXCEPTION 'a deadlock, every time' USING ERRCODE = '40P01';
             END $$;
             CREATE TRIGGER doomed BEFORE INSERT ON jobs FOR EACH ROW
                 WHEN (NEW.id LIKE 'doomed%') EXECUTE FUNCTION doomed();",
        )
        .expect("the trigger");
    let runs = |admin: &mut retryq::postgres::Client| -> i64 {
        admin.query_one("SELECT last_value FROM runs", &[]).expect("runs").get(0)
    };
    let reruns = i64::try_from(PgQueue::RERUNS).expect("a few");
    let err = Backend::enqueue(&mut q, &job("doomed-1")).expect_err("rolled back every time");
    assert_eq!((err.sqlstate(), runs(&mut admin)), (Some("40P01"), reruns), "one statement: {err}");
    let err = Backend::enqueue_many(&mut q, &[job("doomed-2")]).expect_err("rolled back every time");
    assert_eq!((err.sqlstate(), runs(&mut admin)), (Some("40P01"), 2 * reruns), "a transaction: {err}");
    Backend::enqueue(&mut q, &job("a")).expect("the session goes on");
    assert!(Backend::get(&q, "a").expect("get").is_some());
}

/// A failure that says the connection is gone (SQLSTATE class 08, here raised by a trigger
/// while the socket stays open) is never followed by another statement on that session: the
/// next operation opens a new one — after an insert of one statement and after a batch's
/// transaction alike.
#[test]
fn a_session_that_failed_as_lost_is_replaced_by_the_next_operation() {
    let Some((url, mut admin)) = database("pg lost session") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    admin
        .batch_execute(
            "CREATE TABLE inserted_by (id text PRIMARY KEY, pid int NOT NULL);
             CREATE FUNCTION lose() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.id LIKE 'lose%' THEN
                     RAISE EXCEPTION 'the connection is gone' USING ERRCODE = '08006';
                 END IF;
                 INSERT INTO inserted_by VALUES (NEW.id, pg_backend_pid());
                 RETURN NEW;
             END $$;
             CREATE TRIGGER lose BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION lose();",
        )
        .expect("the trigger");
    let pid = |admin: &mut retryq::postgres::Client, id: &str| -> i32 {
        admin.query_one("SELECT pid FROM inserted_by WHERE id = $1", &[&id]).expect("inserted").get(0)
    };
    Backend::enqueue(&mut q, &job("a")).expect("enqueue");
    let err = Backend::enqueue(&mut q, &job("lose-1")).expect_err("lost");
    assert_eq!(err.sqlstate(), Some("08006"), "{err}");
    Backend::enqueue(&mut q, &job("b")).expect("enqueue on a new session");
    assert_ne!(pid(&mut admin, "a"), pid(&mut admin, "b"), "one statement: the lost session went on");
    Backend::enqueue_many(&mut q, &[job("c")]).expect("a batch");
    let err = Backend::enqueue_many(&mut q, &[job("lose-2")]).expect_err("lost");
    assert_eq!(err.sqlstate(), Some("08006"), "{err}");
    Backend::enqueue_many(&mut q, &[job("d")]).expect("a batch on a new session");
    assert_ne!(pid(&mut admin, "c"), pid(&mut admin, "d"), "a transaction: the lost session went on");
}

/// `url` with the connection's `search_path` set to `schema`: the queue then lives there.
fn in_schema(url: &str, schema: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}options=-c%20search_path%3D{schema}")
}

/// What a schema holds: its relations and functions, to see that a refusal changed nothing.
fn contents(admin: &mut retryq::postgres::Client, schema: &str) -> (i64, i64) {
    let row = admin
        .query_one(
            "SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = $1::text::regnamespace),
                    (SELECT count(*) FROM pg_proc WHERE pronamespace = $1::text::regnamespace)",
            &[&schema],
        )
        .expect("contents");
    (row.get(0), row.get(1))
}

/// A database, or a schema, that is not a queue of this version is refused by `connect`
/// (and by the outbox's install beside the application's tables), naming why, and left
/// exactly as it was.
#[test]
fn postgres_refuses_what_is_not_its_queue_and_leaves_it_as_it_was() {
    use retryq::{Error, Outbox};
    let Some((url, mut admin)) = database("pg refusals") else { return };
    let refused = |admin: &mut retryq::postgres::Client, schema: &str, setup: &str, why: &str| {
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}; SET search_path = {schema}; {setup}"))
            .expect("setup");
        let before = contents(admin, schema);
        let err =
            PgQueue::connect(&in_schema(&url, schema)).err().unwrap_or_else(|| panic!("{schema}: connected"));
        assert!(matches!(&err, Error::NotRetryq { why: w, .. } if w.contains(why)), "{schema}: {err}");
        assert_eq!(contents(admin, schema), before, "{schema}: left as it was");
    };
    refused(&mut admin, "app", "CREATE TABLE orders (id int)", "1 relations of another program");
    refused(
        &mut admin,
        "fns",
        "CREATE FUNCTION retryq_count() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        "already has functions named retryq_count",
    );
    refused(
        &mut admin,
        "meta",
        "CREATE TABLE retryq_meta (x int)",
        "a table retryq_meta that is not retryq's: SQLSTATE 42703: column \"application_id\" does not exist",
    );
    let marked = |id: i64, version: i64| {
        format!(
            "CREATE TABLE retryq_meta (application_id int8, schema_version int8);
             INSERT INTO retryq_meta VALUES ({id}, {version})"
        )
    };
    let (id, newer) = (retryq::APPLICATION_ID, retryq::PG_SCHEMA_VERSION + 1);
    refused(
        &mut admin,
        "two_rows",
        &format!("{}, ({id}, 4)", marked(id, 4)),
        "retryq_meta holds 2 rows, not one",
    );
    refused(&mut admin, "other_app", &marked(7, 4), "application id 0x7");
    refused(&mut admin, "never", &marked(id, 1), "schema version 1, which no retryq release wrote");
    admin
        .batch_execute(&format!("CREATE SCHEMA newer; SET search_path = newer; {}", marked(id, newer)))
        .expect("newer");
    let err = PgQueue::connect(&in_schema(&url, "newer")).err().expect("refused");
    assert!(matches!(err, Error::NewerSchema { found, .. } if found == newer), "{err}");
    // A mark that cannot be read is the server's failure, not a foreign table.
    admin
        .batch_execute(
            "CREATE SCHEMA unreadable; SET search_path = unreadable;
             CREATE VIEW retryq_meta AS SELECT 1 / 0 AS application_id, 4 AS schema_version",
        )
        .expect("unreadable");
    let err = PgQueue::connect(&in_schema(&url, "unreadable")).err().expect("refused");
    assert_eq!(err.sqlstate(), Some("22012"), "{err}");
    let err = PgQueue::connect(&in_schema(&url, "nowhere")).err().expect("refused");
    assert!(
        matches!(&err, Error::NotRetryq { why, .. } if why.contains("no schema of the search_path")),
        "{err}"
    );

    // Beside the application's tables, one named like one of the queue's.
    admin
        .batch_execute("CREATE SCHEMA shop; SET search_path = shop; CREATE TABLE history (n int)")
        .expect("shop");
    let err = Outbox::open(&in_schema(&url, "shop")).err().expect("refused");
    assert!(matches!(&err, Error::NotRetryq { why, .. } if why.contains("relations named history")), "{err}");
    assert_eq!(contents(&mut admin, "shop"), (1, 0));

    // A database that does not store UTF-8.
    let ascii = format!("{}_ascii", url.rsplit('/').next().expect("a database"));
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {ascii} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
        ))
        .expect("an SQL_ASCII database");
    let at = url.rfind('/').expect("a database");
    let err = PgQueue::connect(&format!("{}/{ascii}", &url[..at])).err().expect("refused");
    assert!(matches!(&err, Error::NotRetryq { why, .. } if why.contains("encoding is SQL_ASCII")), "{err}");
}
