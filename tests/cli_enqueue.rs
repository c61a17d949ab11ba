//! `retryq enqueue` through the real binary, as a person and as a script use it: an empty
//! payload only when said, a payload piped in as before, and a line in words saying what was
//! enqueued beside the JSON result.

mod common;

use common::{Ran, command, ran};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, UNIX_EPOCH};

/// `retryq ARGS` with `input` on standard input (`None`: standard input is /dev/null).
fn retryq(db: &Path, args: &[&str], input: Option<&[u8]>) -> Ran {
    let mut child = command(db, args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn retryq");
    if let Some(input) = input {
        let mut stdin = child.stdin.take().expect("stdin");
        // A command that does not read its input may be gone before it is written.
        if let Err(e) = stdin.write_all(input) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
        }
    }
    ran(child.wait_with_output().expect("wait"))
}

fn fresh() -> (tempfile::TempDir, PathBuf) {
    common::fresh("retryq-enqueue-")
}

fn job(db: &Path, id: &str) -> serde_json::Value {
    let r = retryq(db, &["get", id], None);
    serde_json::from_str(&r.stdout).expect("json")
}

const ENQUEUE: [&str; 5] = ["enqueue", "--max-attempts", "3", "--ttl", "1h"];

fn enqueue<'a>(id: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    [&ENQUEUE[..], &["--id", id], more].concat()
}

#[test]
fn an_empty_standard_input_is_refused_and_an_empty_payload_must_be_said() {
    let (dir, db) = fresh();
    for input in [None, Some(&b""[..])] {
        let r = retryq(&db, &enqueue("a", &[]), input);
        assert_eq!((r.code, r.stdout.as_str()), (Some(2), ""), "{input:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("--payload: standard input was empty: nothing was enqueued")
                && r.stderr.contains("--payload ''")
                && r.stderr.contains("--empty-payload"),
            "{}",
            r.stderr
        );
    }
    assert!(!db.exists(), "nothing was created: {:?}", std::fs::read_dir(dir.path()).map(|d| d.count()));

    // Said either way, it is enqueued, and standard input is not read.
    for (id, said) in [("b", &["--payload", ""][..]), ("c", &["--empty-payload"][..])] {
        let r = retryq(&db, &enqueue(id, said), Some(b"ignored"));
        assert_eq!(
            (r.code, r.stdout.as_str()),
            (Some(0), "{\"ok\":\"enqueued\"}\n"),
            "{said:?}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(&format!("enqueued \"{id}\": 0 bytes of payload")), "{}", r.stderr);
        assert_eq!(job(&db, id)["status"], "pending");
    }
    let r = retryq(&db, &enqueue("d", &["--payload", "x", "--empty-payload"]), None);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--empty-payload"), "{}", r.stderr);
}

#[test]
fn a_piped_payload_works_as_before_and_enqueue_says_what_it_enqueued() {
    let (_dir, db) = fresh();
    let r = retryq(&db, &enqueue("order-7", &[]), Some("{\"sku\":42}\n".as_bytes()));
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"enqueued\"}\n"), "{}", r.stderr);
    // The deadline `get` shows, in UTC to the millisecond.
    let deadline = job(&db, "order-7")["deadline"].as_u64().expect("deadline");
    let utc = humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(deadline)).to_string();
    assert!(utc.ends_with('Z'), "{utc}");
    let said = format!("enqueued \"order-7\": 11 bytes of payload, up to 3 attempts, deadline {utc} (in 1h");
    assert!(r.stderr.starts_with(&said), "expected {said:?} in {:?}", r.stderr);

    // The same again, another payload: said in words too, with the SPEC's result unchanged.
    let r = retryq(&db, &enqueue("order-7", &[]), Some("{\"sku\":42}\n".as_bytes()));
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"existing\"}\n"));
    assert!(
        r.stderr.contains("\"order-7\" was already enqueued with this payload: nothing changed"),
        "{}",
        r.stderr
    );
    let r = retryq(&db, &enqueue("order-7", &["--payload", "other"]), None);
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), "{\"error\":\"conflict\"}\n"));
    assert!(r.stderr.contains("\"order-7\" was already enqueued with another payload"), "{}", r.stderr);

    // One attempt, one byte: no plural. An id's control characters are escaped.
    let r = retryq(
        &db,
        &["enqueue", "--id", "x\x1b[2J", "--payload", "p", "--max-attempts", "1", "--ttl", "90s"],
        None,
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("enqueued \"x\\x1b[2J\": 1 byte of payload, up to 1 attempt, deadline "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.trim_end().ends_with("(in 1m 30s)"), "{}", r.stderr);
}
