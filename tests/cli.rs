//! The operating commands, through the real binary: what they print, how they refuse a
//! wrong flag (exit 2, naming it), and what they do to a database that is missing, foreign,
//! corrupt, read-only or full (a clear error, the file left as it was).

mod common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{BIN, Ran, command, db_commands, files, fresh, ran};
use retryq::{OpenOptions, Queue};
use retryq_conformance::store::{job_view, stats_view};
use retryq_model::{Reply, Response};

fn retryq(db: &Path, args: &[&str]) -> Ran {
    ran(command(db, args).output().expect("run retryq"))
}

fn retryq_stdin(db: &Path, args: &[&str], input: &[u8]) -> Ran {
    let mut child = command(db, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input).expect("write stdin");
    drop(stdin);
    ran(child.wait_with_output().expect("wait"))
}

#[test]
fn enqueue_get_and_stats_print_the_spec_objects() {
    let (_dir, db) = fresh("retryq-cli-");
    let r = retryq(&db, &["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "3", "--ttl", "1m"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"enqueued\"}\n"), "{}", r.stderr);
    // The payload from standard input; the same again is `existing`; another is a conflict.
    let r = retryq_stdin(
        &db,
        &["enqueue", "--id", "b", "--max-attempts", "2", "--ttl", "1m"],
        "héllo\n".as_bytes(),
    );
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"enqueued\"}\n"), "{}", r.stderr);
    let r = retryq_stdin(
        &db,
        &["enqueue", "--id", "b", "--max-attempts", "9", "--ttl", "1ms"],
        "héllo\n".as_bytes(),
    );
    assert_eq!((r.code, r.stdout.as_str()), (Some(0), "{\"ok\":\"existing\"}\n"), "{}", r.stderr);
    let r =
        retryq(&db, &["enqueue", "--id", "b", "--payload", "other", "--max-attempts", "2", "--ttl", "1m"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), "{\"error\":\"conflict\"}\n"), "{}", r.stderr);

    // get and stats --json print exactly what the SPEC's get and stats print.
    let q = Queue::open_with(&db, &OpenOptions { read_only: true, create: false, ..OpenOptions::default() })
        .expect("open");
    let b = q.get("b").expect("get").expect("b");
    assert_eq!(b.payload, "héllo\n", "the payload came through standard input untouched");
    assert_eq!(b.max_attempts, 2, "existing changed nothing");
    let r = retryq(&db, &["get", "b"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        r.stdout,
        format!("{}\n", Response::Ok(Reply::Job(job_view(&b).expect("a job the SPEC names"))).to_json_line())
    );
    assert!(
        r.stdout.starts_with("{\"ok\":\"job\",\"id\":\"b\",\"status\":\"pending\",\"attempts\":0,"),
        "{}",
        r.stdout
    );
    let r = retryq(&db, &["get", "nobody"]);
    assert_eq!((r.code, r.stdout.as_str()), (Some(1), "{\"error\":\"not_found\"}\n"));

    let r = retryq(&db, &["stats", "--json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let printed: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let mut expected =
        serde_json::to_value(Response::Ok(Reply::Stats(stats_view(&q.stats(0).expect("stats")))))
            .expect("json");
    // The age depends on the instant; everything else must match.
    let age = printed["oldest_open_age_ms"].as_u64().expect("an open job has an age");
    assert!(age < 60_000, "{age}");
    expected["oldest_open_age_ms"] = printed["oldest_open_age_ms"].clone();
    assert_eq!(printed, expected);
    let keys: Vec<&str> = printed.as_object().expect("object").keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 14, "{keys:?}");

    let r = retryq(&db, &["stats", "--prometheus"]);
    assert!(r.stdout.contains("retryq_jobs{status=\"pending\"} 2\n"), "{}", r.stdout);
    let r = retryq(&db, &["stats"]);
    assert!(r.stdout.starts_with("pending         2\n"), "{}", r.stdout);
}

#[test]
fn work_dead_history_redrive_and_audit() {
    let (dir, db) = fresh("retryq-cli-");
    for (id, payload) in [("good", "ok"), ("bad", "reject"), ("flaky", "retry")] {
        let r =
            retryq(&db, &["enqueue", "--id", id, "--payload", payload, "--max-attempts", "2", "--ttl", "1m"]);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    }
    let handler = dir.path().join("handler.sh");
    fs::write(
        &handler,
        "case $(cat) in ok) exit 0;; reject) echo \"no such customer\" >&2; exit 65;; *) echo busy >&2; exit 75;; esac\n",
    )
    .expect("handler");
    let exec = format!("sh {}", handler.display());
    let args = ["work", "--worker", "w1", "--exec", &exec, "--lease", "2s", "--timeout", "1s"];
    let r = retryq(
        &db,
        &[&args[..], &["--backoff-base", "10ms", "--backoff-cap", "10ms", "--until-idle"]].concat(),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // One log line per attempt: good#1, bad#1, flaky#1, flaky#2.
    let attempts: Vec<&str> = r.stderr.lines().filter(|l| l.contains(" attempt ")).collect();
    assert_eq!(attempts.len(), 4, "{}", r.stderr);
    assert!(
        attempts.iter().any(|l| l.contains("job=flaky attempt=1 outcome=\"retry\" next_at=")),
        "{}",
        r.stderr
    );

    let r = retryq(&db, &["dead"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", r.stdout);
    assert!(
        lines[1].starts_with("bad ")
            && lines[1].contains("permanent")
            && lines[1].ends_with(": no such customer"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("flaky ") && lines[2].contains("exhausted") && lines[2].contains("2/2"),
        "{}",
        lines[2]
    );
    let r = retryq(&db, &["dead", "--reason", "permanent", "--json"]);
    let bad: serde_json::Value = serde_json::from_str(r.stdout.trim()).expect("json");
    assert_eq!(bad["id"], "bad");
    assert!(bad["last_error"].as_str().expect("text").starts_with("exit 65 (permanent)"), "{bad}");

    let r = retryq(&db, &["history", "flaky"]);
    // Each transition a line; under each that ended an attempt, its record, indented.
    let (records, steps): (Vec<&str>, Vec<&str>) = r.stdout.lines().partition(|l| l.starts_with("    "));
    assert_eq!(steps.len(), 5, "enqueue, claim, retry, claim, dead:\n{}", r.stdout);
    assert!(steps[4].contains("leased -> dead") && steps[4].contains("reason exhausted"), "{}", steps[4]);
    assert_eq!(records.len(), 2, "the two attempts, under the retry and the death:\n{}", r.stdout);
    for (n, record) in records.iter().enumerate() {
        let said = format!("    attempt {} by w1.", n + 1);
        assert!(record.starts_with(&said) && record.contains(": retryable  error: exit 75"), "{record}");
    }
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[3].starts_with("    attempt 1 ") && lines[6].starts_with("    attempt 2 "), "{}", r.stdout);
    let r = retryq(&db, &["history", "nobody"]);
    assert_eq!(r.code, Some(1));

    // Redrive one, then the rest by reason; a job that is not dead is refused by name.
    let r = retryq(&db, &["redrive", "--id", "good", "--add-attempts", "1", "--ttl", "1m"]);
    assert_eq!((r.code, r.stdout.trim()), (Some(1), r#"{"error":"not_dead","id":"good","status":"done"}"#));
    let r = retryq(&db, &["redrive", "--id", "bad", "--add-attempts", "2", "--ttl", "1m"]);
    assert_eq!((r.code, r.stdout.trim()), (Some(0), r#"{"ok":"redriven","id":"bad"}"#), "{}", r.stderr);
    let r = retryq(
        &db,
        &["redrive", "--all-dead", "--reason", "exhausted", "--add-attempts", "1", "--ttl", "1m"],
    );
    assert_eq!((r.code, r.stdout.trim()), (Some(0), r#"{"ok":"redriven","id":"flaky"}"#), "{}", r.stderr);
    let job: serde_json::Value = serde_json::from_str(&retryq(&db, &["get", "flaky"]).stdout).expect("json");
    assert_eq!(
        (
            job["status"].as_str(),
            job["attempts"].as_u64(),
            job["max_attempts"].as_u64(),
            job["redrives"].as_u64()
        ),
        (Some("pending"), Some(2), Some(3), Some(1))
    );

    let r = retryq(&db, &["audit"]);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (Some(0), "audit: clean (3 jobs, 13 history entries)\n"),
        "{}",
        r.stderr
    );
}

#[test]
fn audit_prints_each_violation_and_exits_1() {
    let (_dir, db) = fresh("retryq-cli-");
    retryq(&db, &["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "2", "--ttl", "1m"]);
    // A hand edit that skips the history (and the attempts' records): the row no longer
    // matches what was recorded.
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute_batch(
        "DROP TRIGGER jobs_history_update; DROP TRIGGER jobs_attempt_claimed;
         UPDATE jobs SET deadline = deadline + 1, attempts = 1",
    )
    .expect("tamper");
    drop(conn);
    let r = retryq(&db, &["audit"]);
    assert_eq!(r.code, Some(1), "{}", r.stdout);
    assert!(
        r.stdout.contains("job \"a\": invariant 1 (attempts count claims): attempts 1 but 0 claims recorded"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("history matches row"), "{}", r.stdout);
    assert!(r.stdout.ends_with("violations (1 jobs, 1 history entries)\n"), "{}", r.stdout);
}

#[test]
fn every_flag_is_validated_by_name_with_exit_2() {
    let (_dir, db) = fresh("retryq-cli-");
    let long = "x".repeat(257);
    let enqueue = ["enqueue", "--id", "a", "--payload", "p"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        ([&enqueue[..], &["--max-attempts", "0", "--ttl", "1s"]].concat(), "--max-attempts"),
        ([&enqueue[..], &["--max-attempts", "2147483648", "--ttl", "1s"]].concat(), "--max-attempts"),
        ([&enqueue[..], &["--max-attempts", "-1", "--ttl", "1s"]].concat(), "--max-attempts"),
        ([&enqueue[..], &["--max-attempts", "many", "--ttl", "1s"]].concat(), "--max-attempts"),
        (vec!["enqueue", "--id", "a", "--payload", "p", "--ttl", "1s"], "--max-attempts"),
        ([&enqueue[..], &["--max-attempts", "1", "--ttl", "0"]].concat(), "--ttl"),
        ([&enqueue[..], &["--max-attempts", "1", "--ttl", "9007199254740992ms"]].concat(), "--ttl"),
        ([&enqueue[..], &["--max-attempts", "1", "--ttl", "9007199254740000ms"]].concat(), "--ttl"),
        ([&enqueue[..], &["--max-attempts", "1", "--deadline", "1000"]].concat(), "--deadline"),
        ([&enqueue[..], &["--max-attempts", "1", "--deadline", "1", "--ttl", "5ms"]].concat(), "--deadline"),
        ([&enqueue[..], &["--max-attempts", "1"]].concat(), "--deadline"),
        (vec!["enqueue", "--id", "", "--payload", "p", "--max-attempts", "1", "--ttl", "9ms"], "--id"),
        (vec!["enqueue", "--id", &long, "--payload", "p", "--max-attempts", "1", "--ttl", "9ms"], "--id"),
        (vec!["work", "--worker", "w", "--exec", "true", "--lease", "0"], "--lease"),
        (vec!["work", "--worker", "w", "--exec", "true", "--lease", "299ms"], "--lease"),
        (vec!["work", "--worker", "w", "--exec", "true", "--lease", "200ms", "--timeout", "5s"], "--lease"),
        (vec!["work", "--worker", "w", "--exec", "true", "--timeout", "0"], "--timeout"),
        (vec!["work", "--worker", "w", "--exec", "true", "--backoff-base", "-5"], "--backoff-base"),
        (
            vec!["work", "--worker", "w", "--exec", "true", "--backoff-cap", "9007199254740992ms"],
            "--backoff-cap",
        ),
        (vec!["work", "--worker", "", "--exec", "true"], "--worker"),
        (vec!["work", "--worker", "w", "--exec", " "], "--exec"),
        (vec!["work", "--exec", "true"], "--worker"),
        (vec!["redrive", "--id", "a", "--add-attempts", "0", "--ttl", "9ms"], "--add-attempts"),
        (vec!["redrive", "--add-attempts", "1", "--ttl", "9ms"], "--id"),
        (vec!["redrive", "--id", "a", "--all-dead", "--add-attempts", "1", "--ttl", "9ms"], "--all-dead"),
        (
            vec!["redrive", "--id", "a", "--reason", "permanent", "--add-attempts", "1", "--ttl", "9ms"],
            "--reason",
        ),
        (
            vec!["redrive", "--all-dead", "--reason", "tired", "--add-attempts", "1", "--ttl", "9ms"],
            "--reason",
        ),
        (vec!["dead", "--reason", "tired"], "--reason"),
        (vec!["stats", "--json", "--prometheus"], "--prometheus"),
        (vec!["get", ""], "ID"),
    ];
    for (args, flag) in cases {
        let r = retryq(&db, &args);
        assert_eq!(r.code, Some(2), "{args:?}: {}{}", r.stdout, r.stderr);
        // Named in the message itself, not only in the usage line clap adds after it.
        let message = r.stderr.split("Usage:").next().unwrap_or_default();
        assert!(message.contains(flag), "{args:?} should name {flag}: {}", r.stderr);
    }
    // The payload: at most 1 MiB, UTF-8, and never read from a terminal by accident.
    let args = ["enqueue", "--id", "a", "--max-attempts", "1", "--ttl", "9s"];
    let r = retryq_stdin(&db, &args, &vec![b'x'; retryq::MAX_PAYLOAD_BYTES + 1]);
    assert!(
        r.code == Some(2) && r.stderr.contains("--payload") && r.stderr.contains("1 MiB"),
        "{}",
        r.stderr
    );
    let r = retryq_stdin(&db, &args, b"\xff\xfe");
    assert!(
        r.code == Some(2) && r.stderr.contains("--payload") && r.stderr.contains("UTF-8"),
        "{}",
        r.stderr
    );
    let r = retryq_stdin(&db, &args, &vec![b'x'; retryq::MAX_PAYLOAD_BYTES]);
    assert_eq!(r.code, Some(0), "exactly 1 MiB is allowed: {}", r.stderr);
    // Nothing refused was stored.
    let r = retryq(&db, &["stats", "--json"]);
    assert!(r.stdout.contains("\"pending\":1,"), "{}", r.stdout);
}

#[test]
fn read_only_commands_never_create_a_database() {
    let (dir, db) = fresh("retryq-cli-");
    for args in [vec!["get", "a"], vec!["stats"], vec!["dead"], vec!["history", "a"], vec!["audit"]] {
        let r = retryq(&db, &args);
        assert_eq!(r.code, Some(1), "{args:?}");
        assert!(r.stderr.contains("no such database") && r.stderr.contains("q.db"), "{args:?}: {}", r.stderr);
    }
    let r = retryq(&db, &["redrive", "--all-dead", "--add-attempts", "1", "--ttl", "9s"]);
    assert!(r.code == Some(1) && r.stderr.contains("no such database"), "{}", r.stderr);
    assert!(files(dir.path()).is_empty(), "{:?}", files(dir.path()));
    // A directory where the file should be.
    fs::create_dir(&db).expect("dir");
    let r = retryq(&db, &["stats"]);
    assert!(r.code == Some(1) && r.stderr.contains("is a directory"), "{}", r.stderr);
}

/// Every command on a file that is not a usable retryq database: exit 1, a message that
/// says what the file is, and the file byte for byte as it was, with nothing beside it.
#[test]
fn foreign_text_corrupt_and_newer_files_are_refused_and_left_as_they_were() {
    let (dir, _) = fresh("retryq-cli-");
    let foreign = dir.path().join("foreign.db");
    let conn = rusqlite::Connection::open(&foreign).expect("foreign");
    conn.execute_batch(
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total INTEGER); INSERT INTO invoices VALUES (1, 99);",
    )
    .expect("foreign schema");
    drop(conn);
    let text = dir.path().join("notes.txt");
    fs::write(&text, "these are not the jobs you are looking for\n".repeat(200)).expect("text");
    let newer = dir.path().join("newer.db");
    retryq(&newer, &["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "1", "--ttl", "1m"]);
    rusqlite::Connection::open(&newer)
        .expect("newer")
        .pragma_update(None, "user_version", retryq::SCHEMA_VERSION + 1)
        .expect("version");
    let corrupt = dir.path().join("corrupt.db");
    for n in 0..40 {
        let id = format!("job-{n}");
        retryq(
            &corrupt,
            &["enqueue", "--id", &id, "--payload", &"p".repeat(3000), "--max-attempts", "1", "--ttl", "1m"],
        );
    }
    let mut bytes = fs::read(&corrupt).expect("read");
    let len = bytes.len();
    bytes.truncate(len / 2);
    fs::write(&corrupt, &bytes).expect("truncate");

    let commands = db_commands();
    let newer_schema =
        format!("schema version {} is newer than this build of retryq supports", retryq::SCHEMA_VERSION + 1);
    let cases = [
        (&foreign, "not a retryq database: a SQLite database with 1 objects of another program"),
        (&text, "not a retryq database: the file is not a SQLite database"),
        (&newer, newer_schema.as_str()),
        (&corrupt, "the database file is corrupt"),
    ];
    for (path, message) in cases {
        let before = fs::read(path).expect("read");
        let around = files(dir.path());
        for args in &commands {
            let r = retryq(path, args);
            assert_eq!(r.code, Some(1), "{} {args:?}: {}{}", path.display(), r.stdout, r.stderr);
            assert!(r.stderr.contains(message), "{} {args:?}: {}", path.display(), r.stderr);
            assert!(fs::read(path).expect("read") == before, "{} {args:?} changed the file", path.display());
        }
        let mut now = files(dir.path());
        now.retain(|f| !(f.ends_with("-wal") || f.ends_with("-shm")) || around.contains(f));
        assert_eq!(now, around);
    }
}

/// As root, file permissions do not stop a write, so the commands run as `nobody`; as
/// anyone else, as themselves.
fn as_other_user(command: &mut Command, dir: &Path) -> bool {
    let me = fs::metadata(dir).expect("meta").uid();
    if me == 0 {
        command.uid(65534).gid(65534);
        return true;
    }
    false
}

fn user_command(dir: &Path, db: &Path, args: &[&str]) -> Ran {
    // A copy of the binary inside the test's directory, which that user can reach.
    let bin = dir.join("retryq");
    if !bin.exists() {
        fs::copy(BIN, &bin).expect("copy binary");
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let mut command = Command::new(&bin);
    command.args(args).env("RETRYQ_DB", db).env_remove("RUST_LOG").stdin(Stdio::null());
    as_other_user(&mut command, dir);
    ran(command.output().expect("run"))
}

#[test]
fn a_read_only_file_is_a_clear_error_and_stays_as_it_was() {
    let (dir, db) = fresh("retryq-cli-");
    retryq(&db, &["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "1", "--ttl", "10m"]);
    // chmod 444 on the file; the directory stays writable (for the reader's -wal and -shm).
    fs::set_permissions(&db, fs::Permissions::from_mode(0o444)).expect("chmod 444");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).expect("chmod dir");
    let before = fs::read(&db).expect("read");
    let r = user_command(
        dir.path(),
        &db,
        &["enqueue", "--id", "b", "--payload", "p", "--max-attempts", "1", "--ttl", "9s"],
    );
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("the database is read-only") && r.stderr.contains("nothing was written"),
        "{}",
        r.stderr
    );
    let r = user_command(dir.path(), &db, &["work", "--worker", "w", "--exec", "true", "--until-idle"]);
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("the database is read-only"), "{}", r.stderr);
    // Reading still works.
    let r = user_command(dir.path(), &db, &["get", "a"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(fs::read(&db).expect("read") == before, "the read-only file changed");
    // In a directory the user cannot write either, a reader cannot make SQLite's -wal and
    // -shm companions: a clear error too.
    for f in files(dir.path()).iter().filter(|f| f.ends_with("-wal") || f.ends_with("-shm")) {
        fs::remove_file(dir.path().join(f)).expect("remove");
    }
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod dir");
    let r = user_command(dir.path(), &db, &["stats"]);
    if fs::metadata(dir.path()).expect("meta").uid() == 0 {
        assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
        assert!(r.stderr.contains("cannot read") && r.stderr.contains("-shm"), "{}", r.stderr);
    }
    assert!(fs::read(&db).expect("read") == before, "the read-only file changed");
}

/// A full disk, simulated by a file size limit (`ulimit -f`): a write past it fails as a
/// full disk does (EFBIG instead of ENOSPC), which SQLite reports as an I/O error.
#[test]
fn a_full_disk_is_a_clear_error_with_nothing_half_written() {
    let (dir, db) = fresh("retryq-cli-");
    retryq(&db, &["enqueue", "--id", "a", "--payload", "p", "--max-attempts", "1", "--ttl", "10m"]);
    let before = fs::read(&db).expect("read");
    let big = dir.path().join("big");
    fs::write(&big, "x".repeat(600_000)).expect("big payload");
    // 200 blocks of 512 bytes: the database fits, the 600 kB payload's log does not.
    let script = format!(
        "ulimit -f 200 && trap '' XFSZ && exec {BIN} enqueue --id big --max-attempts 1 --ttl 10m < {}",
        big.display()
    );
    let r = ran(Command::new("sh").arg("-c").arg(&script).env("RETRYQ_DB", &db).output().expect("sh"));
    assert_eq!(r.code, Some(1), "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("nothing was written"), "{}", r.stderr);
    assert!(fs::read(&db).expect("read") == before, "the database changed");
    let r = retryq(&db, &["get", "big"]);
    assert_eq!(r.stdout.trim(), r#"{"error":"not_found"}"#);
    let r = retryq(&db, &["audit"]);
    assert_eq!(r.code, Some(0), "{}", r.stdout);
    // Room again: the same enqueue goes through.
    let r = retryq_stdin(
        &db,
        &["enqueue", "--id", "big", "--max-attempts", "1", "--ttl", "10m"],
        &fs::read(&big).expect("big"),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}
