//! `retryq enqueue` through the real binary, as a person and as a script use it: an empty
//! payload only when said, a payload piped in as before, a line in words saying what was
//! enqueued beside the JSON result, and many jobs from a file (`--file`, `-` for standard
//! input): an import, stopped at the block of a bad line, which says what it wrote.

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
fn two_hundred_jobs_from_a_file_answered_line_by_line() {
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
    // One block, one `now`: every job was enqueued at the same instant.
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
fn a_bad_line_of_a_file_of_one_block_enqueues_nothing() {
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
    // A key given twice is refused by line and field (JSON would keep the last, `d4`).
    let twice = r#"{"id":"d3","id":"d4","payload":"p","max_attempts":3,"ttl":"1h"}"#;
    std::fs::write(&file, format!("{}\n{twice}\n", line(0))).expect("file");
    let r = retryq(&db, &["enqueue", "--file", &path], None);
    assert_eq!((r.code, r.stdout.as_str()), (Some(2), ""), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("--file: {path} line 2: id: given twice")), "{}", r.stderr);
    assert_eq!(pending(&db), 1, "neither d3 nor d4, nor the line before");
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

/// A file of 25,000 lines with a bad one at line 22,222: the two blocks before its own
/// (10,000 lines each) are enqueued, each line answered, and nothing after line 20,000 is;
/// corrected, the same file enqueues the rest, the lines written before answering existing.
#[test]
fn a_bad_line_after_the_first_block_stops_the_import_there_and_says_what_was_written() {
    let (dir, db) = fresh();
    let file = dir.path().join("jobs.jsonl");
    let path = file.display().to_string();
    let bad =
        r#"{"id":"order-22221","payload":"p","max_attempts":3,"ttl":"1h","queue":"mail","queue":"sms"}"#;
    let lines = |bad_line: Option<&str>| -> String {
        (0..25_000).map(|n| if n == 22_221 { bad_line.map_or_else(|| line(n), str::to_owned) } else { line(n) } + "\n").collect()
    };
    std::fs::write(&file, lines(Some(bad))).expect("file");
    let r = retryq(&db, &["enqueue", "--file", &path], None);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    let report: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(report.len(), 20_000, "one line per job written");
    assert_eq!((report[0], report[19_999]), ("order-0\tenqueued", "order-19999\tenqueued"));
    assert!(r.stderr.contains("20000 enqueued, 0 existing"), "{}", r.stderr);
    let said = format!(
        "--file: {path} line 22222: queue: given twice: each field once a line (JSON would keep the last \
         without a word); lines 1 to 20000 were enqueued (each answered on standard output), nothing after \
         line 20000 was: run the same file again to enqueue the rest (a line enqueued already answers \
         existing)"
    );
    assert!(r.stderr.contains(&said), "{}", r.stderr);
    assert_eq!(pending(&db), 20_000);
    assert_eq!(job(&db, "order-19999")["status"], "pending");
    assert_eq!(job(&db, "order-20000")["error"], "not_found");

    std::fs::write(&file, lines(None)).expect("file");
    let r = retryq(&db, &["enqueue", "--file", &path], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("5000 enqueued, 20000 existing"), "{}", r.stderr);
    let report: Vec<&str> = r.stdout.lines().collect();
    assert_eq!((report[19_999], report[20_000]), ("order-19999\texisting", "order-20000\tenqueued"));
    assert_eq!(pending(&db), 25_000);
    let audit = retryq(&db, &["audit"], None);
    assert!(audit.stdout.contains("audit: clean"), "{}", audit.stdout);
}

/// A line longer than any job needs is refused by its number once that much is read: an
/// endless one (`/dev/zero`) is refused at line 1, in bounded memory.
#[test]
fn an_endless_line_is_refused_without_reading_it_whole() {
    let (_dir, db) = fresh();
    let r = retryq(&db, &["enqueue", "--file", "/dev/zero"], None);
    assert_eq!((r.code, r.stdout.as_str()), (Some(2), ""), "{}", r.stderr);
    assert!(
        r.stderr.contains("--file: /dev/zero line 1: is longer than 6356992 bytes, more than any job needs; nothing was enqueued"),
        "{}",
        r.stderr
    );
    assert!(!db.exists(), "nothing was created");
}

#[test]
fn standard_input_is_read_for_a_dash_and_a_conflict_is_said_by_line() {
    let (_dir, db) = fresh();
    let r = retryq(&db, &enqueue("taken", &["--payload", "first"]), None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let conflict = r#"{"id":"taken","payload":"second","max_attempts":3,"ttl":"1h"}"#;
    // An id given twice in the file with two payloads: the second is the store's conflict.
    let again = r#"{"id":"order-0","payload":"other","max_attempts":3,"ttl":"1h"}"#;
    let input = format!("{}\n{conflict}\n{}\n{again}\n", line(0), line(1));
    let r = retryq(&db, &["enqueue", "--file", "-"], Some(input.as_bytes()));
    // The conflict changes nothing for its id and does not stop the others (SPEC 6.17).
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stdout, "order-0\tenqueued\ntaken\tconflict\norder-1\tenqueued\norder-0\tconflict\n");
    assert!(
        r.stderr.contains("standard input: 2 enqueued, 0 existing (nothing changed), 2 conflicting"),
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

/// A storage failure part-way (a trigger refuses the insert of `order-15000`): the lines of
/// the transactions that committed are answered and said enqueued, none after them is stored,
/// exit 1; once the failure is gone, the same file enqueues the rest.
#[test]
fn a_failure_part_way_says_which_lines_were_enqueued() {
    let (dir, db) = fresh();
    let file = dir.path().join("jobs.jsonl");
    let path = file.display().to_string();
    std::fs::write(&file, (0..20_000).map(|n| line(n) + "\n").collect::<String>()).expect("file");
    assert_eq!(retryq(&db, &enqueue("first", &["--payload", "p"]), None).code, Some(0));
    let conn = retryq::rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch(
        "CREATE TRIGGER fail BEFORE INSERT ON jobs WHEN NEW.id = 'order-15000'
         BEGIN SELECT RAISE(ABORT, 'the disk is full'); END",
    )
    .expect("trigger");
    let r = retryq(&db, &["enqueue", "--file", &path], None);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let written = r.stdout.lines().count();
    assert!((10_000..15_000).contains(&written), "{written} answered: {}", r.stderr);
    assert!(r.stdout.lines().enumerate().all(|(n, said)| said == format!("order-{n}\tenqueued")));
    let said = format!(
        "the disk is full; lines 1 to {written} were enqueued (each answered on standard output), \
         nothing after line {written} was"
    );
    assert!(r.stderr.contains(&said), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("{written} enqueued, 0 existing")), "{}", r.stderr);
    assert_eq!(pending(&db), written as u64 + 1);
    assert_eq!(job(&db, &format!("order-{written}"))["error"], "not_found");
    conn.execute_batch("DROP TRIGGER fail").expect("drop");
    let r = retryq(&db, &["enqueue", "--file", &path], None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let counts = format!("{} enqueued, {written} existing", 20_000 - written);
    assert!(r.stderr.contains(&counts), "{}", r.stderr);
    assert_eq!(pending(&db), 20_001);
}

#[test]
fn a_kind_is_enqueued_shown_and_compared_and_a_bad_one_refused() {
    let (_dir, db) = fresh();
    let r = retryq(&db, &enqueue("a", &["--payload", "p", "--kind", "mail"]), None);
    assert_eq!((r.code, r.stdout.trim()), (Some(0), r#"{"ok":"enqueued"}"#), "{}", r.stderr);
    assert_eq!(job(&db, "a")["kind"], "mail");
    let r = retryq(&db, &enqueue("a", &["--payload", "p", "--kind", "sms"]), None);
    assert_eq!((r.code, r.stdout.trim()), (Some(1), r#"{"error":"conflict"}"#), "another kind: {}", r.stderr);
    let r = retryq(&db, &enqueue("b", &["--payload", "p"]), None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(job(&db, "b").get("kind").is_none(), "no kind, no field: 1.3's answer");
    let long = "k".repeat(65);
    let r = retryq(&db, &enqueue("c", &["--payload", "p", "--kind", &long]), None);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("--kind") && r.stderr.contains("65 bytes"), "{}", r.stderr);
    let r = retryq(&db, &["list", "--status", "pending"], None);
    assert!(r.stdout.lines().next().is_some_and(|head| head.contains("kind")), "{}", r.stdout);
    assert!(r.stdout.lines().any(|l| l.starts_with('a') && l.contains("mail")), "{}", r.stdout);
}
