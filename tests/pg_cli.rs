//! `retryq replay` and `retryq conform` with `--db postgres://…`, through the real binary:
//! every saved regression trace prints on PostgreSQL exactly what it prints on SQLite, a
//! database that cannot be used is refused naming `--db`, a small `conform` run agrees
//! everywhere, and a killed replay or an immediately stopped server leaves the state before
//! or after the running operation, never a mixture.
//!
//! Each test gets its server from `retryq_pgtest` (a throwaway cluster this process starts, or
//! `RETRYQ_PG_URL`); where PostgreSQL is not installed it says so loudly and returns.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::BIN;
use retryq_conformance::crash::{Target, kill_runs_on};
use retryq_conformance::pg::{Databases, Fresh};
use retryq_conformance::regress::{self, Verdict};

fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/traces")
}

/// Runs the binary with `args`, `stdin` on its standard input: exit code, stdout, stderr.
fn retryq(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn retryq");
    // A process that refuses its arguments may exit before reading: a broken pipe is fine.
    if let Err(e) = child.stdin.take().expect("stdin").write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// The tables of a database, to see that a refused one was left alone.
fn tables(url: &str) -> Vec<String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let rows = client
        .query(
            "SELECT schemaname || '.' || tablename FROM pg_tables \
             WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
            &[],
        )
        .expect("tables");
    rows.iter().map(|row| row.get(0)).collect()
}

/// `url` with its user (and password) replaced by `userinfo`.
fn with_user(url: &str, userinfo: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{userinfo}@{host}")
}

#[test]
fn every_regression_trace_prints_on_postgres_what_it_prints_on_sqlite() {
    let cases = regress::discover(&traces_dir()).expect("discover");
    assert!(cases.len() >= 10, "only {} cases", cases.len());
    for case in cases {
        let Some(url) = retryq_pgtest::database("replay --db postgres://") else { return };
        let trace = case.trace.to_str().expect("utf-8 path");
        let (code, on_postgres, stderr) = retryq(&["replay", trace, "--db", &url], "");
        assert_eq!(code, 0, "{}: {stderr}", case.name);
        let (code, on_sqlite, stderr) = retryq(&["replay", trace], "");
        assert_eq!(code, 0, "{}: {stderr}", case.name);
        assert_eq!(on_postgres, on_sqlite, "{}", case.name);
        let expected = std::fs::read_to_string(&case.expected).expect("expected file");
        let lines: Vec<String> = on_postgres.lines().map(str::to_owned).collect();
        if let Verdict::Mismatch { line, expected, actual } = regress::compare(&expected, &lines) {
            panic!("{}: line {line}\n expected {expected}\n actual   {actual}", case.name);
        }
    }
}

#[test]
fn a_postgres_database_outlives_the_process_and_keeps_the_lease() {
    let Some(url) = retryq_pgtest::database("replay --db postgres:// twice") else { return };
    let first = "{\"op\":\"config\",\"lease_ms\":1000}\n\
                 {\"op\":\"enqueue\",\"id\":\"a\",\"max_attempts\":2,\"deadline\":99999,\"now\":0}\n\
                 {\"op\":\"claim\",\"worker\":\"w1\",\"now\":0}\n";
    let (code, stdout, stderr) = retryq(&["replay", "--db", &url, "-"], first);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout.lines().nth(2),
        Some("{\"ok\":\"claimed\",\"id\":\"a\",\"attempt\":1,\"lease_until\":1000}")
    );
    // A second process with the default lease: the first lease still holds until 1000.
    let second = "{\"op\":\"claim\",\"worker\":\"w2\",\"now\":999}\n{\"op\":\"claim\",\"worker\":\"w2\",\"now\":1000}\n";
    let (code, stdout, stderr) = retryq(&["replay", "--db", &url, "-"], second);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout,
        "{\"ok\":\"none\"}\n{\"ok\":\"claimed\",\"id\":\"a\",\"attempt\":2,\"lease_until\":31000}\n"
    );
}

#[test]
fn a_database_that_cannot_be_used_is_refused_naming_db() {
    let Some(url) = retryq_pgtest::database("replay --db refusals") else { return };
    let unusable = [
        // Nothing listens on port 1.
        "postgres://postgres:secret@127.0.0.1:1/retryq".to_owned(),
        // Not a URL the client can read.
        "postgresql://[not-a-host/retryq".to_owned(),
        // A user the server does not know.
        with_user(&url, "nobody_here:secret"),
    ];
    for db in &unusable {
        let (code, stdout, stderr) = retryq(&["replay", "--db", db, "-"], "{\"op\":\"stats\",\"now\":0}\n");
        assert_eq!((code, stdout.as_str()), (1, ""), "{db}: {stderr}");
        assert!(stderr.contains("--db"), "{db}: {stderr}");
        assert!(!stderr.contains("secret"), "the password is shown: {stderr}");
        let (code, _, stderr) = retryq(&["conform", "--cases", "3", "--db", db], "");
        assert_eq!(code, 1, "{db}: {stderr}");
        assert!(stderr.contains("--db") && !stderr.contains("secret"), "{db}: {stderr}");
    }
    // Another program's database: refused, and left as it was.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute("CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders VALUES (7)")
        .expect("app");
    let before = tables(&url);
    let (code, stdout, stderr) = retryq(&["replay", "--db", &url, "-"], "{\"op\":\"stats\",\"now\":0}\n");
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert!(stderr.contains("--db"), "{stderr}");
    assert_eq!(tables(&url), before, "the refused database changed");
    // `conform --db` takes only a server's URL.
    let (code, _, stderr) = retryq(&["conform", "--db", "/tmp/q.db"], "");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--db"), "{stderr}");
}

#[test]
fn a_small_conform_run_on_postgres_agrees_and_leaves_no_database_behind() {
    let Some(url) = retryq_pgtest::database("conform --db postgres://") else { return };
    let traces = traces_dir();
    let args = [
        "conform",
        "--db",
        &url,
        "--cases",
        "45",
        "--seed",
        "42",
        "--depth",
        "2",
        "--crash",
        "4",
        "--regressions",
        traces.to_str().expect("utf-8 path"),
    ];
    let (code, stdout, stderr) = retryq(&args, "");
    assert_eq!(code, 0, "{stdout}{stderr}");
    for line in
        ["postgres storage", "regressions ", "generated ", "exhaustive ", "crash ", "conform: no mismatch"]
    {
        assert!(stdout.contains(line), "no {line:?} in\n{stdout}");
    }
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let left: i64 = client
        .query_one("SELECT count(*) FROM pg_database WHERE datname LIKE 'retryq_conform_%'", &[])
        .expect("count")
        .get(0);
    assert_eq!(left, 0, "the run's databases were not dropped");
}

#[test]
fn a_killed_replay_leaves_the_state_before_or_after_the_running_operation() {
    let Some(url) = retryq_pgtest::database("kill a replay on postgres") else { return };
    let databases = Databases::new(&url, Fresh::Reset).expect("server");
    let tally = kill_runs_on(Path::new(BIN), &Target::Postgres(databases), 16, 3, &|| {}).expect("runs");
    assert!(tally.problem.is_none(), "{}", tally.problem.unwrap_or_default());
    assert_eq!(tally.runs, 16);
    assert!(tally.mid_trace > 0, "no kill landed mid-trace: {tally:?}");
}

#[test]
fn an_immediate_server_stop_leaves_the_state_before_or_after_the_running_operation() {
    let cluster = match retryq_pgtest::Cluster::start(false) {
        Ok(cluster) => cluster,
        Err(retryq_pgtest::Unavailable::NotInstalled) => {
            // The same loud skip (or failure under CI) as every other PostgreSQL test.
            let _ = retryq_pgtest::database("stop the server mid-replay");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let admin = cluster.create_database().expect("database");
    let databases = Databases::new(&admin, Fresh::Reset).expect("server");
    let stop = || cluster.stop_immediate();
    let start = || cluster.restart();
    let target = Target::PostgresServer { databases, stop: &stop, start: &start };
    let tally = kill_runs_on(Path::new(BIN), &target, 6, 5, &|| {}).expect("runs");
    assert!(tally.problem.is_none(), "{}", tally.problem.unwrap_or_default());
    assert_eq!(tally.runs, 6);
    assert!(tally.mid_trace > 0, "no stop landed mid-trace: {tally:?}");
}
