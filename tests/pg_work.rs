//! `retryq work --db postgres://…`: the worker on a PostgreSQL database — the schema made in
//! an empty database, jobs run until idle on the server's clock (or this host's, with
//! `--clock local`), heartbeats across a lease, and a `--db` that cannot be used refused
//! naming `--db`, with exit 1 and nothing changed.

mod common;

use std::process::{Command, Output, Stdio};

use common::{BIN, now_ms, stderr, stdout};
use retryq::{NewJob, PgQueue, Status};

/// `retryq work` on `db` with `args` after the common ones, until idle.
fn work(db: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["work", "--db", db, "--worker", "w", "--until-idle"])
        .args(args)
        .env_remove("RETRYQ_DB")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .output()
        .expect("retryq runs")
}

/// The names of the tables in `url`'s `public` schema.
fn tables(url: &str) -> Vec<String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1", &[])
        .expect("tables")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[test]
fn a_worker_makes_the_schema_and_runs_every_job_on_the_servers_clock() {
    let Some(url) = retryq_pgtest::database("a_worker_makes_the_schema_and_runs_every_job") else { return };
    // An empty database, idle at once: the schema is there afterwards, as a new file would be.
    let out = work(&url, &["--exec", "true"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tables(&url).contains(&"jobs".to_owned()), "{:?}", tables(&url));
    assert!(
        stderr(&out).contains("store=\"postgres\"") || stderr(&out).contains("store=postgres"),
        "{}",
        stderr(&out)
    );

    let mut q = PgQueue::connect_existing(&url).expect("connect");
    let now = now_ms();
    for (id, payload) in [("ok", "0"), ("again", "75"), ("never", "65")] {
        q.enqueue(&NewJob { id, payload, max_attempts: 2, deadline: now + 60_000, now, ..NewJob::default() })
            .expect("enqueue");
    }
    // Exit status from the payload; an attempt of 1.2 s under a lease of 600 ms lives on
    // heartbeats. "again" is retryable twice: dead, exhausted.
    let handler = r#"code=$(cat); [ "$RETRYQ_JOB_ID" = ok ] && sleep 1.2; exit "$code""#;
    let out =
        work(&url, &["--exec", handler, "--lease", "600ms", "--backoff-base", "10ms", "--concurrency", "3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let get = |id: &str| q.get(id).expect("get").expect("kept");
    assert_eq!(get("ok").status, Status::Done);
    assert_eq!((get("ok").attempts, get("again").attempts, get("never").attempts), (1, 2, 1));
    assert_eq!(get("again").dead_reason, Some(retryq::DeadReason::Exhausted));
    assert_eq!(get("never").dead_reason, Some(retryq::DeadReason::Permanent));
    // Renewed while it ran: the history has a heartbeat (leased → leased, same attempt).
    let history = q.history("ok").expect("history");
    assert!(
        history
            .windows(2)
            .any(|w| w[0].to == Status::Leased && w[1].to == Status::Leased && w[0].attempt == w[1].attempt),
        "{history:#?}"
    );
    // Stamped by the server's clock: every transition of the run is within a minute of it.
    let server = q.server_now().expect("server clock");
    assert!(history.iter().all(|h| h.at.abs_diff(server) < 60_000), "{history:#?} vs {server}");
    assert!(err.contains("outcome=\"done\"") || err.contains("outcome=done"), "{err}");
    let audit = Command::new(BIN).args(["audit", "--db", &url]).output().expect("audit");
    assert!(stdout(&audit).contains("audit: clean"), "{}", stdout(&audit));
}

#[test]
fn the_local_clock_is_taken_when_asked_for() {
    let Some(url) = retryq_pgtest::database("the_local_clock_is_taken_when_asked_for") else { return };
    let mut q = PgQueue::connect(&url).expect("connect");
    let now = now_ms();
    q.enqueue(&NewJob {
        id: "a",
        payload: "x",
        max_attempts: 1,
        deadline: now + 60_000,
        now,
        ..NewJob::default()
    })
    .expect("enqueue");
    let out = work(&url, &["--exec", "cat >/dev/null", "--clock", "local"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(q.get("a").expect("get").expect("kept").status, Status::Done);
    // On PostgreSQL whose clock is a choice, and the log says which was made.
    let log = stderr(&out);
    assert!(log.contains("opened the store") && log.contains("clock=\"local\""), "{log}");
    assert!(!log.contains("warning: --clock"), "{log}");
}

#[test]
fn a_db_that_cannot_be_used_is_refused_naming_db_and_nothing_changes() {
    let Some(url) = retryq_pgtest::database("a_db_that_cannot_be_used_is_refused") else { return };
    // A port nothing listens on: bind one and let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let unreachable = format!("postgres://retryq:s3cret@127.0.0.1:{port}/jobs");
    let no_such_database = format!("{url}_missing");
    let no_such_role = url.replacen("postgres://postgres@", "postgres://nobody:s3cret@", 1);
    let bad_port = url.replacen("127.0.0.1:", "127.0.0.1:notaport", 1);
    for bad in [unreachable.as_str(), &no_such_database, &no_such_role, &bad_port, "postgres://[::1"] {
        let out = work(bad, &["--exec", "true"]);
        let err = stderr(&out);
        // A refused connection may pass (75, SPEC 6.43); the others will not by themselves (1).
        let status = if bad == unreachable { 75 } else { 1 };
        assert_eq!(out.status.code(), Some(status), "{bad}: {err}");
        assert!(err.contains("--db"), "{bad}: {err}");
        assert!(!err.contains("s3cret"), "the password stays out of messages: {err}");
        assert!(!err.contains("worker started"), "{bad}: {err}");
    }
    // The database the wrong role was refused on is still empty; the missing one was not made.
    assert!(tables(&url).is_empty(), "{:?}", tables(&url));
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let missing: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_database WHERE datname = $1",
            &[&no_such_database.rsplit('/').next()],
        )
        .expect("count")
        .get(0);
    assert_eq!(missing, 0);
}
