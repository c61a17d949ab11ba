//! Contract 1.1 through the binary: `enqueue`'s schedule and own backoff, `cancel`, the
//! cancelled jobs in `dead`, `list` and `stats`, and a schema 1 file read, audited and then
//! upgraded by the commands an operator runs.

mod common;

use std::path::Path;

use common::{Ran, command, fresh, ran};
use retryq::{OpenOptions, Queue};
use retryq_conformance::store::job_view;
use retryq_model::{Reply, Response};

fn retryq(db: &Path, args: &[&str]) -> Ran {
    ran(command(db, args).output().expect("run retryq"))
}

fn read_only(db: &Path) -> Queue {
    Queue::open_with(db, &OpenOptions { read_only: true, create: false, ..OpenOptions::default() })
        .expect("open")
}

#[test]
fn enqueue_stores_a_schedule_and_an_own_backoff_and_get_shows_the_specs_view() {
    let (_dir, db) = fresh("retryq-cli11-");
    let r = retryq(
        &db,
        &[
            "enqueue",
            "--id",
            "a",
            "--payload",
            "p",
            "--max-attempts",
            "3",
            "--ttl",
            "1h",
            "--start-in",
            "10m",
            "--backoff-base",
            "2s",
            "--backoff-cap",
            "1m",
        ],
    );
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"enqueued\"}\n"), "{}", r.stderr);
    assert!(r.stderr.contains("no attempt before"), "{}", r.stderr);
    let job = read_only(&db).get("a").expect("get").expect("a");
    assert_eq!(job.not_before - job.enqueued_at, 600_000);
    assert_eq!((job.available_at, job.base_ms, job.cap_ms), (Some(job.not_before), Some(2000), Some(60_000)));
    let r = retryq(&db, &["get", "a"]);
    assert_eq!(
        r.stdout,
        format!("{}\n", Response::Ok(Reply::Job(job_view(&job).expect("view"))).to_json_line())
    );
    assert!(r.stdout.contains(",\"base_ms\":2000,\"cap_ms\":60000,\"queue\":\"default\""), "{}", r.stdout);
    let r = retryq(&db, &["get", "--human", "a"]);
    assert!(r.stdout.contains("not before") && r.stdout.contains("backoff cap   60000 ms"), "{}", r.stdout);

    // An absolute schedule in the past is refused by its flag, exit 2, nothing stored.
    let r = retryq(
        &db,
        &[
            "enqueue",
            "--id",
            "b",
            "--payload",
            "p",
            "--max-attempts",
            "3",
            "--ttl",
            "1h",
            "--not-before",
            "5",
        ],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--not-before"), "{}", r.stderr);
    let r = retryq(
        &db,
        &["enqueue", "--id", "b", "--payload", "p", "--max-attempts", "3", "--ttl", "1h", "--start-in", "2h"],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--start-in") && r.stderr.contains("deadline"), "{}", r.stderr);
    assert_eq!(read_only(&db).get("b").expect("get"), None);
}

#[test]
fn cancel_answers_for_each_status_and_cancelled_jobs_are_listed_and_counted() {
    let (_dir, db) = fresh("retryq-cli11-");
    for id in ["a", "b"] {
        let r = retryq(&db, &["enqueue", "--id", id, "--payload", "p", "--max-attempts", "3", "--ttl", "1h"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let now = retryq_worker::now_ms().expect("clock");
    Queue::open(&db).expect("open").claim("w1", now).expect("claim").expect("a is due");

    // A running job is asked to stop (contract 1.2): it stays leased, with the request.
    let r = retryq(&db, &["cancel", "a"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"cancelling\"}\n"), "{}", r.stderr);
    assert!(r.stderr.contains("asked to stop"), "{}", r.stderr);
    let r = retryq(&db, &["get", "a"]);
    assert!(
        r.stdout.contains("\"status\":\"leased\"") && r.stdout.contains("\"cancel_requested\":true"),
        "{}",
        r.stdout
    );
    let r = retryq(&db, &["cancel", "b"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"cancelled\"}\n"), "{}", r.stderr);
    let r = retryq(&db, &["cancel", "b"]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (Some(1), "{\"error\":\"not_cancellable\",\"status\":\"dead\"}\n"),
        "{}",
        r.stderr
    );
    let r = retryq(&db, &["cancel", "nobody"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), "{\"error\":\"not_found\"}\n"));
    let r = retryq(&db, &["cancel", ""]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);

    let r = retryq(&db, &["dead", "--reason", "cancelled", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.starts_with("{\"id\":\"b\",\"status\":\"dead\""), "{}", r.stdout);
    assert!(r.stdout.contains("\"dead_reason\":\"cancelled\""), "{}", r.stdout);
    assert_eq!(r.stdout.lines().count(), 1);
    let r = retryq(&db, &["list", "--reason", "cancelled"]);
    assert!(r.stdout.lines().any(|l| l.starts_with("b ") && l.contains("cancelled")), "{}", r.stdout);
    let r = retryq(&db, &["stats", "--json"]);
    assert!(r.stdout.contains("\"dead_permanent\":0,\"dead_cancelled\":1,"), "{}", r.stdout);
    // A cancelled job is redriven like any dead job.
    let r = retryq(
        &db,
        &["redrive", "--all-dead", "--reason", "cancelled", "--add-attempts", "1", "--ttl", "1h"],
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (Some(0), "{\"ok\":\"redriven\",\"id\":\"b\"}\n"),
        "{}",
        r.stderr
    );
    let r = retryq(&db, &["audit"]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
}

/// `tests/fixtures/schema-1.out`'s `get` lines, as schema 1 code printed them, by id.
fn schema_1_gets() -> Vec<(String, String)> {
    let out =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema-1.out"))
            .expect("fixture output");
    out.lines()
        .filter(|l| l.starts_with("{\"ok\":\"job\""))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            (v["id"].as_str().expect("id").to_owned(), l.to_owned())
        })
        .collect()
}

#[test]
fn a_schema_1_file_is_read_audited_then_upgraded_by_a_write() {
    let (dir, _) = fresh("retryq-cli11-");
    let db = dir.path().join("schema-1.db");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/schema-1.db"), &db)
        .expect("copy");
    let enqueued_at: std::collections::HashMap<&str, u64> = [
        ("done-1", 0),
        ("permanent-2", 1),
        ("exhausted-3", 2),
        ("deadline-4", 3),
        ("retried-5", 4),
        ("leased-6", 5),
        ("redriven-7", 6),
    ]
    .into();
    let check_gets = |when: &str| {
        for (id, old) in schema_1_gets() {
            let r = retryq(&db, &["get", &id]);
            assert_eq!(r.code, Some(0), "{when}: {}", r.stderr);
            // Schema 1's line, plus the fields contracts 1.1 and 1.2 added: not_before is the
            // enqueue's now, no own backoff, the default queue and priority, no cancel
            // request, and an end (its last transition's now) only for an ended job.
            let expected = format!(
                "{},\"not_before\":{},\"base_ms\":null,\"cap_ms\":null,\"queue\":\"default\",\"priority\":0,\"ended_at\":",
                old.trim_end_matches('}'),
                enqueued_at[id.as_str()]
            );
            let rest =
                r.stdout.strip_prefix(&expected).unwrap_or_else(|| panic!("{when}: {id}: {}", r.stdout));
            let (ended_at, tail) = rest.split_once(',').expect("ended_at, then cancel_requested");
            assert_eq!(tail, "\"cancel_requested\":false}\n", "{when}: {id}");
            let open = old.contains("\"status\":\"pending\"") || old.contains("\"status\":\"leased\"");
            assert_eq!(ended_at == "null", open, "{when}: {id}: ended_at {ended_at}");
        }
    };
    // Read-only commands read schema 1 as it is.
    check_gets("before the upgrade");
    let r = retryq(&db, &["audit"]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    // The first write upgrades the file; everything reads the same afterwards.
    let r = retryq(&db, &["cancel", "nobody"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), "{\"error\":\"not_found\"}\n"), "{}", r.stderr);
    let conn = retryq::rusqlite::Connection::open(&db).expect("raw");
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
    assert_eq!(version, retryq::SCHEMA_VERSION);
    check_gets("after the upgrade");
    let r = retryq(&db, &["audit"]);
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let r = retryq(&db, &["cancel", "retried-5"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"cancelled\"}\n"), "{}", r.stderr);
}
