//! `retryq enqueue` through the real binary, as a person and as a script use it: an empty
//! payload only when said, a payload piped in as before, a line in words saying what was
//! enqueued beside the JSON result, and many jobs from a file (`--file`, `-` for standard
//! input) in one transaction, a bad line refusing them all.

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

/// `stats --json`'s count of pending jobs.
fn pending(db: &Path) -> u64 {
    let r = retryq(db, &["stats", "--json"], None);
    let stats: serde_json::Value = serde_json::from_str(&r.stdout).expect("stats");
    stats["pending"].as_u64().expect("pending")
}

/// A line of `enqueue --file` for job `n`, its fields varied with `n` as the flags would be.
fn line(n: usize) -> String {
    let id = format!("order-{n}");
    let payload = format!("{{\"sku\":{n}}}");
    let mut job = serde_json::json!({"id": id, "payload": payload, "max_attempts": 1 + n % 5});
    match n % 4 {
        0 => job["ttl"] = "1h".into(),
        1 => job["deadline"] = "2100-01-01T01:00:00+01:00".into(),
        2 => job["deadline"] = 4_102_444_800_000u64.into(),
        _ => job["deadline"] = "4102444800000".into(),
    }
    if n % 10 == 7 {
        job["start_in"] = "10m".into();
        job["backoff_base"] = "2s".into();
        job["backoff_cap"] = "1m".into();
        job["queue"] = "mail".into();
        job["priority"] = 3.into();
    }
    job.to_string()
}

#[test]
fn two_hundred_jobs_from_a_file_in_one_transaction() {
    let (dir, db) = fresh();
    let file = dir.path().join("jobs.jsonl");
    // Blank lines between some jobs are skipped.
    let text: String =
        (0..200).map(|n| if n % 50 == 49 { format!("{}\n\n", line(n)) } else { line(n) + "\n" }).collect();
    std::fs::write(&file, text).expect("file");
    let r = retryq(&db, &["enqueue", "--file", &file.display().to_string()], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let report: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(report.len(), 200, "one line per job:\n{}", r.stdout);
    for (n, said) in report.iter().enumerate() {
        assert_eq!(*said, format!("order-{n}\tenqueued"));
    }
    assert!(r.stderr.contains("200 enqueued, 0 existing"), "{}", r.stderr);
    assert_eq!(pending(&db), 200);
    // One transaction, one `now`: every job was enqueued at the same instant.
    let first = job(&db, "order-0");
    let at = first["not_before"].as_u64().expect("not_before");
    assert_eq!(first["deadline"].as_u64(), Some(at + 3_600_000));
    for n in [1, 2, 3, 199] {
        let job = job(&db, &format!("order-{n}"));
        assert_eq!(job["deadline"].as_u64(), Some(4_102_444_800_000), "order-{n}");
        assert_eq!(job["not_before"].as_u64(), Some(at), "order-{n}");
        assert_eq!(job["max_attempts"].as_u64(), Some(1 + n as u64 % 5), "order-{n}");
    }
    let seventh = job(&db, "order-7");
    assert_eq!(
        (&seventh["queue"], &seventh["priority"], &seventh["base_ms"], &seventh["cap_ms"]),
        (&"mail".into(), &3.into(), &2_000.into(), &60_000.into())
    );
    assert_eq!(seventh["not_before"].as_u64(), Some(at + 600_000));
    // The same file again changes nothing: every line is existing.
    let r = retryq(&db, &["enqueue", "--file", &file.display().to_string()], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.lines().all(|l| l.ends_with("\texisting")) && r.stdout.lines().count() == 200);
    assert_eq!(pending(&db), 200);
}

#[test]
fn a_bad_line_refuses_the_whole_file_and_enqueues_nothing() {
    let (dir, db) = fresh();
    let file = dir.path().join("jobs.jsonl");
    let bad = r#"{"id":"order-2","payload":"p","max_attempts":3,"ttl":"5"}"#;
    std::fs::write(&file, format!("{}\n{}\n{bad}\n{}\n", line(0), line(1), line(3))).expect("file");
    let path = file.display().to_string();
    let r = retryq(&db, &["enqueue", "--file", &path], None);
    assert_eq!((r.code, r.stdout.as_str()), (Some(2), ""), "{}", r.stderr);
    let said = format!("--file: {path} line 3: ttl: \"5\": 5 has no unit; write 5ms, 5s, 5m, 5h or 5d");
    assert!(r.stderr.contains(&said) && r.stderr.contains("nothing was enqueued"), "{}", r.stderr);
    assert!(!db.exists(), "nothing was created");
    // On a database that exists, nothing is enqueued either: not the good lines before it.
    let r = retryq(&db, &enqueue("before", &["--payload", "p"]), None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let past = r#"{"id":"order-2","payload":"p","max_attempts":3,"deadline":"2020-01-01T00:00:00Z"}"#;
    std::fs::write(&file, format!("{}\n{}\n{past}\n", line(0), line(1))).expect("file");
    let r = retryq(&db, &["enqueue", "--file", &path], None);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("line 3: deadline: 1577836800000 (2020-01-01T00:00:00.000Z) is not after now"),
        "{}",
        r.stderr
    );
    assert_eq!(pending(&db), 1, "only the job enqueued before");
    // --file stands for every flag of the one job.
    let r = retryq(&db, &["enqueue", "--file", &path, "--id", "a"], None);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("'--file <FILE>' cannot be used with '--id <ID>'"), "{}", r.stderr);
    let r = retryq(&db, &["enqueue", "--file", &dir.path().join("missing").display().to_string()], None);
    assert!(
        r.code == Some(2) && r.stderr.contains("--file: ") && r.stderr.contains("cannot be read"),
        "{}",
        r.stderr
    );
}

#[test]
fn standard_input_is_read_for_a_dash_and_a_conflict_is_said_by_line() {
    let (_dir, db) = fresh();
    let r = retryq(&db, &enqueue("taken", &["--payload", "first"]), None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let conflict = r#"{"id":"taken","payload":"second","max_attempts":3,"ttl":"1h"}"#;
    let input = format!("{}\n{conflict}\n{}\n", line(0), line(1));
    let r = retryq(&db, &["enqueue", "--file", "-"], Some(input.as_bytes()));
    // The conflict changes nothing for its id and does not stop the others (SPEC 6.17).
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stdout, "order-0\tenqueued\ntaken\tconflict\norder-1\tenqueued\n");
    assert!(
        r.stderr.contains("standard input: 2 enqueued, 0 existing (nothing changed), 1 conflicting"),
        "{}",
        r.stderr
    );
    assert_eq!(job(&db, "taken")["status"], "pending");
    assert_eq!(pending(&db), 3);
    // An empty standard input enqueues nothing, and says so.
    let r = retryq(&db, &["enqueue", "--file", "-"], Some(b"\n\n"));
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--file: standard input holds no job"), "{}", r.stderr);
}
