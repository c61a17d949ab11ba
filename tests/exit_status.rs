//! Exit statuses a script can act on, through the real binary and real causes: a failure that
//! may pass (another process holds SQLite's write lock past `--busy-timeout`; a PostgreSQL
//! row lock outlasts the session's `lock_timeout`; nothing listens on the server's port)
//! exits 75 (`EX_TEMPFAIL`) and says nothing was written, and the same command succeeds once
//! the cause is gone; a refusal or a conflict exits 1; a wrong flag exits 2.

mod common;

use std::path::Path;

use common::{Ran, command, ran};

fn retryq(db: &Path, args: &[&str]) -> Ran {
    ran(command(db, args).output().expect("run retryq"))
}

/// `retryq ARGS --db URL`.
fn on(url: &str, args: &[&str]) -> Ran {
    ran(std::process::Command::new(common::BIN)
        .args(args)
        .args(["--db", url])
        .env_remove("RETRYQ_DB")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run retryq"))
}

#[test]
fn a_held_sqlite_write_lock_exits_75_and_writes_nothing_then_the_same_command_succeeds() {
    let (_dir, db) = common::fresh("retryq-exit-");
    let db_text = db.to_str().expect("utf-8 path");
    let r = retryq(&db, &["enqueue", "--id", "a", "--payload", "x", "--max-attempts", "3", "--ttl", "1h"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);

    // Another process (this one) holds the write lock.
    let holder = rusqlite::Connection::open(&db).expect("open");
    holder.execute_batch("BEGIN IMMEDIATE").expect("take the write lock");
    for args in [
        &[
            "enqueue",
            "--id",
            "b",
            "--payload",
            "y",
            "--max-attempts",
            "3",
            "--ttl",
            "1h",
            "--busy-timeout",
            "100ms",
        ][..],
        &["cancel", "a", "--busy-timeout", "100ms"],
    ] {
        let r = retryq(&db, args);
        assert_eq!(r.code, Some(75), "{args:?} under a held lock: {}", r.stderr);
        assert!(r.stderr.contains("nothing was written"), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(db_text), "names the database: {}", r.stderr);
    }
    // The environment's variable works as the flag does.
    let r =
        ran(command(&db, &["enqueue", "--id", "b", "--payload", "y", "--max-attempts", "3", "--ttl", "1h"])
            .env("RETRYQ_BUSY_TIMEOUT", "100ms")
            .output()
            .expect("run"));
    assert_eq!(r.code, Some(75), "{}", r.stderr);
    holder.execute_batch("ROLLBACK").expect("release");
    drop(holder);

    // Nothing was written: `b` is not there, `a` is still pending.
    let r = retryq(&db, &["get", "b"]);
    assert_eq!(r.code, Some(1), "b was not enqueued: {}{}", r.stdout, r.stderr);
    let r = retryq(&db, &["get", "a"]);
    assert!(r.stdout.contains("\"pending\""), "{}", r.stdout);

    // The same commands, run again, succeed.
    let r = retryq(
        &db,
        &[
            "enqueue",
            "--id",
            "b",
            "--payload",
            "y",
            "--max-attempts",
            "3",
            "--ttl",
            "1h",
            "--busy-timeout",
            "100ms",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);

    // A refusal and a conflict are 1; a wrong flag is 2.
    let r =
        retryq(&db, &["enqueue", "--id", "b", "--payload", "other", "--max-attempts", "3", "--ttl", "1h"]);
    assert_eq!(r.code, Some(1), "conflict: {}", r.stderr);
    let r = retryq(&db, &["redrive", "--id", "b", "--ttl", "1h", "--add-attempts", "1"]);
    assert_eq!(r.code, Some(1), "not dead: {}", r.stderr);
    let r = retryq(
        &db,
        &[
            "enqueue",
            "--id",
            "c",
            "--payload",
            "z",
            "--max-attempts",
            "3",
            "--ttl",
            "1h",
            "--busy-timeout",
            "soon",
        ],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--busy-timeout"), "{}", r.stderr);
}

#[test]
fn a_postgres_row_lock_past_lock_timeout_and_a_refused_connection_exit_75() {
    let Some(url) = retryq_pgtest::database("exit_status row lock") else { return };
    let r = on(&url, &["enqueue", "--id", "a", "--payload", "x", "--max-attempts", "3", "--ttl", "1h"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);

    let mut holder = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let mut tx = holder.transaction().expect("begin");
    tx.query("SELECT id FROM jobs WHERE id = 'a' FOR UPDATE", &[]).expect("lock the row");
    let r = on(&url, &["cancel", "a"]);
    assert_eq!(r.code, Some(75), "cancel under a row lock: {}", r.stderr);
    assert!(r.stderr.contains("55P03") && r.stderr.contains("nothing was written"), "{}", r.stderr);
    tx.rollback().expect("release");

    let r = on(&url, &["get", "a"]);
    assert!(r.stdout.contains("\"pending\""), "nothing was written: {}", r.stdout);
    let r = on(&url, &["cancel", "a"]);
    assert_eq!(r.code, Some(0), "the same command, the lock gone: {}", r.stderr);
    let r = on(&url, &["enqueue", "--id", "a", "--payload", "other", "--max-attempts", "3", "--ttl", "1h"]);
    assert_eq!(r.code, Some(1), "conflict: {}", r.stderr);

    // Nothing listens on the port: the server may come back.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let down = format!("postgres://postgres@127.0.0.1:{port}/jobs");
    let r = on(&down, &["enqueue", "--id", "b", "--payload", "y", "--max-attempts", "3", "--ttl", "1h"]);
    assert_eq!(r.code, Some(75), "connection refused: {}", r.stderr);
    assert!(r.stderr.contains("nothing was written"), "{}", r.stderr);
}
