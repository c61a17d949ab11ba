//! The operating commands on PostgreSQL: `--db postgres://…` (or `RETRYQ_DB`) works for
//! every one of them as for a file, and a wrong URL, wrong credentials, an empty database
//! for a reader and a database of another program are refused naming `--db`, changing
//! nothing.

mod common;

use std::process::{Command, Output, Stdio};

use common::{BIN, stderr, stdout};

/// The binary with `args` on the database at `url`.
fn on(url: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RETRYQ_DB", url)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("retryq runs")
}

fn ok(url: &str, args: &[&str]) -> String {
    let out = on(url, args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

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
fn every_operating_command_works_on_postgres() {
    let Some(url) = retryq_pgtest::database("pg_operating every command") else { return };
    let enqueue = |id: &str| {
        ok(&url, &["enqueue", "--id", id, "--payload", "{}", "--max-attempts", "3", "--ttl", "1h"])
    };
    assert!(enqueue("a").contains("enqueued"), "an empty database gets the schema on the first enqueue");
    enqueue("b");
    assert!(enqueue("a").contains("existing"));
    let got: serde_json::Value = serde_json::from_str(&ok(&url, &["get", "a"])).expect("json");
    assert_eq!(got["status"], "pending", "{got}");
    assert_eq!(got["attempts"], 0);
    ok(&url, &["cancel", "b"]);
    let stats: serde_json::Value = serde_json::from_str(&ok(&url, &["stats", "--json"])).expect("json");
    assert_eq!((stats["pending"].as_u64(), stats["dead_cancelled"].as_u64()), (Some(1), Some(1)), "{stats}");
    assert!(ok(&url, &["dead"]).contains('b'));
    assert!(ok(&url, &["list", "--status", "pending"]).contains('a'));
    ok(&url, &["redrive", "--id", "b", "--add-attempts", "1", "--ttl", "1h"]);
    let history = ok(&url, &["history", "b", "--json"]);
    assert_eq!(history.lines().count(), 3, "enqueued, cancelled, redriven: {history}");
    assert!(history.contains("cancelled"), "{history}");
    assert!(ok(&url, &["audit"]).contains("clean"));
    // The host's clock instead of the server's: the same answers on one machine.
    assert!(ok(&url, &["stats", "--clock", "local"]).contains("pending"));
}

#[test]
fn a_reader_leaves_an_empty_database_empty() {
    let Some(url) = retryq_pgtest::database("pg_operating empty database") else { return };
    for args in [vec!["get", "a"], vec!["stats"], vec!["audit"], vec!["cancel", "a"]] {
        let out = on(&url, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("--db") && err.contains("no retryq schema"), "{args:?}: {err}");
    }
    assert!(tables(&url).is_empty(), "nothing was created");
}

#[test]
fn a_database_of_another_program_is_refused_and_left_alone() {
    let Some(url) = retryq_pgtest::database("pg_operating foreign database") else { return };
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client.batch_execute("CREATE TABLE orders (id int); INSERT INTO orders VALUES (7)").expect("theirs");
    let out = on(&url, &["enqueue", "--id", "a", "--payload", "{}", "--max-attempts", "1", "--ttl", "1h"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("--db") && err.contains("another program"), "{err}");
    assert_eq!(tables(&url), ["orders"]);
}

#[test]
fn wrong_urls_and_credentials_name_db_and_hide_the_password() {
    let Some(url) = retryq_pgtest::database("pg_operating wrong urls") else { return };
    // A port nothing listens on: bind one and let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let unreachable = format!("postgres://retryq:s3cret@127.0.0.1:{port}/jobs");
    let no_such_database = format!("{}_missing", url);
    let no_such_role = url.replacen("postgres://postgres@", "postgres://nobody:s3cret@", 1);
    for bad in [unreachable.as_str(), &no_such_database, &no_such_role, "postgres://[::1"] {
        let out = on(bad, &["stats"]);
        // A server that refuses connections may come back (exit 75, EX_TEMPFAIL); a wrong
        // database, role or URL will not (exit 1).
        let expected = if bad == unreachable { 75 } else { 1 };
        assert_eq!(out.status.code(), Some(expected), "{bad}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("--db"), "{bad}: {err}");
        assert!(!err.contains("s3cret"), "the password stays out of messages: {err}");
    }
}

/// A password given in any form the PostgreSQL client reads — a URL's `user:pw@`, a URL's
/// `?password=`, a key=value string's `password=` — never appears in an error message or in
/// the worker's log; `***` stands in for it. (No server is needed: the port refuses.)
#[test]
fn a_password_in_any_form_is_never_printed() {
    let forms = [
        ("postgres://u:s3cretA@127.0.0.1:1/d", "s3cretA"),
        ("postgres://u@127.0.0.1:1/d?password=s3cretB&sslmode=disable", "s3cretB"),
        ("postgresql://127.0.0.1:1/d?user=u&password=s3cretC", "s3cretC"),
        ("host=127.0.0.1 port=1 user=u password=s3cretD dbname=d", "s3cretD"),
        ("host=127.0.0.1 port=1 user=u password='s3cret E' dbname=d", "s3cret E"),
    ];
    for (db, password) in forms {
        for args in
            [vec!["stats"], vec!["get", "a"], vec!["work", "--worker", "w", "--exec", "true", "--until-idle"]]
        {
            let out = Command::new(BIN)
                .args(&args)
                .env("RETRYQ_DB", db)
                .env("RUST_LOG", "info")
                .stdin(Stdio::null())
                .output()
                .expect("retryq runs");
            let (text_out, text_err) = (stdout(&out), stderr(&out));
            // A refused connection may pass: EX_TEMPFAIL (SPEC 6.43).
            assert_eq!(out.status.code(), Some(75), "{args:?} on {db}: {text_err}");
            assert!(
                !text_out.contains(password) && !text_err.contains(password),
                "{args:?} printed the password of {db}: {text_err}"
            );
            assert!(text_err.contains("--db"), "{args:?} on {db}: {text_err}");
        }
    }
}
